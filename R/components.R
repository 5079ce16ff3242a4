# The component distributions of mixture() and joint() (R/mixture.R,
# R/joint.R): univariate distributions made by normal(), poisson(), ... and not
# yet used, taken apart into what a compound distribution needs (family,
# truncation, parameters, support), and detached from the model graph, as
# greta strips the components' own variables: a component contributes through
# the compound's density only, never as a variable or term of its own.

# `dots` the arguments, `what` the compound ("mixture", "joint"). Returns a
# list with one entry per component: dist (its distribution node), family,
# params (parameter nodes), lower, upper (its support, truncation included),
# dim, discrete.
component_distributions <- function(dots, what) {
  if (length(dots) < 2L) {
    stop(what, "() must be passed at least two distributions", call. = FALSE)
  }
  components <- lapply(seq_along(dots), function(k) component_of(dots[[k]], k, what))
  refuse_mixed_components(vapply(components, `[[`, logical(1), "discrete"), what)
  components
}

# Components that are some discrete, some continuous (`discrete` one flag
# each) cannot be compounded: they have no common support.
refuse_mixed_components <- function(discrete, what) {
  if (any(discrete) && !all(discrete)) {
    stop("cannot construct a ", what, "() from a combination of discrete (",
         paste0("argument ", which(discrete), collapse = ", "), ") and continuous (",
         paste0("argument ", which(!discrete), collapse = ", "), ") distributions",
         call. = FALSE)
  }
}

# Components whose dimensions (`dims`, one each) differ, where they must be
# the same, are refused naming each argument's.
refuse_unequal_dims <- function(dims, what) {
  if (length(unique(dims)) > 1L) {
    stop("the component distributions of ", what, "() must have the same dimensions, but ",
         "have ", paste(vapply(seq_along(dims), function(k) {
           sprintf("%s (argument %d)", paste(dims[[k]], collapse = " x "), k)
         }, ""), collapse = ", "), call. = FALSE)
  }
}

# Called by mixture() and joint() once all their checks have passed, so that a
# failed call leaves its arguments as they were.
detach_components <- function(components) {
  for (component in components) detach_component(component$dist)
}

component_of <- function(x, k, what) {
  bad <- function(why) {
    stop("argument ", k, " of ", what, "() ", why, call. = FALSE)
  }
  if (!is.greta_array(x) || is.null(get_node(x)$distribution)) {
    bad("must be a distribution such as normal(0, 1), but is not a greta array with one")
  }
  variable <- get_node(x)
  dist <- variable$distribution
  if (isTRUE(dist$multivariate) || variable$type != "variable") {
    bad(paste0("must be a univariate distribution (such as normal() or poisson()), not ",
               dist$family, "()"))
  }
  if (used_elsewhere(variable)) {
    bad("has already been used elsewhere; create a new one, e.g. normal(0, 1)")
  }
  list(dist = dist, family = dist$family, label = dist$label, params = dist$parents,
       param_names = dist$param_names, truncation = dist$truncation,
       lower = variable$lower, upper = variable$upper, dim = variable$dim,
       discrete = isTRUE(dist$discrete))
}

# Whether the greta array of a distribution (its target `variable`) has
# already been used: in another expression, given to data, or taken into a
# compound. A distribution can be used once.
used_elsewhere <- function(variable) {
  dist <- variable$distribution
  !identical(dist$target, variable) || length(variable$children) > 0 || isTRUE(variable$assigned)
}

# The component's distribution leaves its parameters' children (through which
# model() would find it, and its variable, as a term and a free variable) and
# its variable is marked used.
detach_component <- function(dist) {
  unlink_from_parameters(dist)
  dist$target$assigned <- TRUE
  invisible()
}

# Takes a distribution out of its parameters' children, through which model()
# would find it (and its variable, as a free variable or a term).
unlink_from_parameters <- function(dist) {
  for (param in dist$parents) {
    param$children <- Filter(function(child) !identical(child, dist), param$children)
  }
  invisible()
}

# The components' parameters as one named list of greta arrays (the compound's
# parameters, in order: component 1's, then 2's, ...), and `spec`, what the
# density and the R-side draws need of each component beyond its parameters.
component_parameters <- function(components) {
  params <- list()
  spec <- vector("list", length(components))
  for (k in seq_along(components)) {
    comp <- components[[k]]
    names <- paste0(comp$param_names, "_", k)
    for (j in seq_along(comp$params)) {
      params[[names[j]]] <- as_greta_array_from_node(comp$params[[j]])
    }
    spec[[k]] <- list(family = comp$family, label = comp$label, names = names,
                      truncation = comp$truncation, dist = comp$dist)
  }
  list(params = params, spec = spec)
}

# A component's log density at each element of `y` (a greta array), with its
# parameters from `p` (the compound's named parameters): the engine's logpdf
# op, the component's own family and truncation.
component_log_density <- function(y, p, component) {
  params <- lapply(p[component$names], get_node)
  new_operation("logpdf", c(list(get_node(y)), unname(params)), dim(y),
                family = component$family, truncation = component$truncation)
}

# In R (draws): one draw's parameters of a component, each a vector of `n`
# values (a scalar repeated), and its draws.
component_values <- function(p, component, n) {
  lapply(p[component$names], function(v) rep_len(as.numeric(v), n))
}
component_draws_r <- function(p, component, n) {
  draw_family(component$family, n, component_values(p, component, n),
              component$truncation[1], component$truncation[2])
}

# Data given a compound distribution: the values each component sees lie in
# its support (checked as for the component on its own, so a count beyond a
# binomial's size is refused rather than giving a component a zero density).
check_component_data <- function(values, component) {
  check_data_support(values, component$dist)
}
