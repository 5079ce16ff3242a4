# Shared helpers for lockstep's tests.
#
# The reference for every log density is written here in plain R, from R's d*
# and p* functions and an independent R version of the transforms of
# variable(), so that a test never checks lockstep against itself.

# -- free states ---------------------------------------------------------------

# The constrained value of a free (unconstrained) value z and the log |dx/dz|
# that the model's log density gains from the change of variable, as described
# in ?variable: lower only, x = lower + exp(z); upper only, x = upper - exp(z);
# both, x = lower + (upper - lower) * ilogit(z).
constrain <- function(z, lower = -Inf, upper = Inf) {
  if (is.finite(lower) && is.finite(upper)) {
    list(value = lower + (upper - lower) * stats::plogis(z),
         log_jacobian = log(upper - lower) + stats::plogis(z, log.p = TRUE) +
           stats::plogis(-z, log.p = TRUE))
  } else if (is.finite(lower)) {
    list(value = lower + exp(z), log_jacobian = z)
  } else if (is.finite(upper)) {
    list(value = upper - exp(z), log_jacobian = z)
  } else {
    list(value = z, log_jacobian = 0 * z)
  }
}

# The inverse of constrain(), written independently of lockstep:::to_free().
unconstrain <- function(x, lower = -Inf, upper = Inf) {
  if (is.finite(lower) && is.finite(upper)) {
    stats::qlogis((x - lower) / (upper - lower))
  } else if (is.finite(lower)) {
    log(x - lower)
  } else if (is.finite(upper)) {
    log(upper - x)
  } else {
    x
  }
}

# Random free states, one row per chain.
random_free <- function(model, chains, sd = 1) {
  matrix(stats::rnorm(chains * model$n_free, sd = sd), chains, model$n_free)
}

# The engine's log density (and gradient) at free states, one row per chain.
engine_density <- function(model, free, gradient = TRUE,
                           backend = getOption("lockstep.backend", "cpu"),
                           tile_kernel = getOption("lockstep.tile_kernel", FALSE), ...) {
  lockstep:::model_log_density(model, free, gradient = gradient,
                               compute_options = compute(backend, tile_kernel, ...))
}

# Compute options on a given backend (cpu or emulated), with the tile kernel
# or not (the emulated backend's run of the GPU's tile kernel); `...` goes to
# cpu_only().
compute <- function(backend = getOption("lockstep.backend", "cpu"),
                    tile_kernel = getOption("lockstep.tile_kernel", FALSE), ...) {
  old <- options(lockstep.backend = backend, lockstep.tile_kernel = tile_kernel)
  on.exit(options(old))
  cpu_only(...)
}

# Values of the greta arrays given to model(), computed by the engine at free
# states: a matrix with a row per state and the arrays' elements (column-major)
# side by side, in the order they were given to model().
traced_values <- function(model, free, backend = getOption("lockstep.backend", "cpu")) {
  ids <- vapply(model$traced, function(t) as.integer(t$ir), integer(1))
  lockstep:::ls_engine_values(lockstep:::model_engine(model), free, ids, compute(backend))
}

# Checks a model's log density against `expected`, a function of one free
# state (a numeric vector) returning the log density computed in R, at random
# free states for each number of chains in `chains`, all chains in one engine
# call (or at the given `free` states). Returns the free states of the last
# call, invisibly.
expect_density_matches <- function(model, expected, chains = c(1, 3), sd = 1,
                                   tolerance = 1e-9, free = NULL) {
  if (!is.null(free)) chains <- nrow(free)
  for (n_chains in chains) {
    states <- if (is.null(free)) random_free(model, n_chains, sd) else free
    got <- engine_density(model, states, gradient = FALSE)$log_density
    want <- apply(states, 1, expected)
    expect_length(got, nrow(states))
    expect_true(all(is.finite(got)))
    expect_equal(got, want, tolerance = tolerance)
  }
  invisible(states)
}

# Central finite differences of the engine's log density at free states (one
# row per chain), in the coordinates `columns` (all of them by default; the
# result has one column per coordinate of `columns`). Each chain's log density
# depends only on its own row, so one engine call perturbs coordinate j of
# every chain at once.
finite_difference_gradient <- function(model, free, eps = 1e-6, columns = seq_len(ncol(free))) {
  grad <- matrix(0, nrow(free), length(columns))
  for (k in seq_along(columns)) {
    j <- columns[k]
    up <- free
    down <- free
    h <- eps * pmax(1, abs(free[, j]))
    up[, j] <- up[, j] + h
    down[, j] <- down[, j] - h
    f_up <- engine_density(model, up, gradient = FALSE)$log_density
    f_down <- engine_density(model, down, gradient = FALSE)$log_density
    grad[, k] <- (f_up - f_down) / (2 * h)
  }
  grad
}

# The engine's gradient against central finite differences, at random free
# states for 1 and 3 chains (or at `free`). Central differences with h = 1e-6
# are accurate to about 1e-8 relative for smooth densities; a wrong gradient
# term is off by O(1).
expect_gradient_matches <- function(model, chains = c(1, 3), sd = 1, free = NULL,
                                    tolerance = 1e-5) {
  if (!is.null(free)) chains <- nrow(free)
  for (n_chains in chains) {
    states <- if (is.null(free)) random_free(model, n_chains, sd) else free
    analytic <- engine_density(model, states, gradient = TRUE)$gradient
    numeric <- finite_difference_gradient(model, states)
    expect_equal(dim(analytic), dim(states))
    expect_true(all(is.finite(analytic)))
    # absolute error, scaled by the size of the gradient
    scale <- max(1, max(abs(numeric)))
    expect_lt(max(abs(analytic - numeric)) / scale, tolerance)
  }
}

# -- operations ----------------------------------------------------------------

# Operations on greta arrays (test_operations.R, test_arrays.R): each used
# inside a model and compared with the same computation done by R on the
# constrained values: the engine's values of the result, the model's log
# density (data ~ normal(f(params), 1) plus the log Jacobians of the
# parameters) and its gradient.

# `f` is applied both to greta arrays and to R matrices (lockstep's `%*%`,
# ilogit() and indexing fall back to R's for R values). `inputs` is a named
# list: list(dim, lower, upper) for a variable, or an R value passed to `f` as
# is (so that R numbers mixed with greta arrays are covered too).
check_operation <- function(f, inputs, chains = c(1, 3), sd = 0.8, tolerance = 1e-9) {
  args <- list()
  variables <- list()
  for (name in names(inputs)) {
    input <- inputs[[name]]
    if (is.list(input)) {
      lower <- if (is.null(input$lower)) -Inf else input$lower
      upper <- if (is.null(input$upper)) Inf else input$upper
      args[[name]] <- variable(lower = lower, upper = upper, dim = input$dim)
      variables[[name]] <- list(dim = dim(args[[name]]), lower = lower, upper = upper)
    } else {
      args[[name]] <- input
    }
  }
  out <- do.call(f, args)
  expect_s3_class(out, "greta_array")
  y_values <- array(stats::rnorm(length(out)), dim = dim(out))
  y <- as_data(y_values)
  distribution(y) <- normal(out, 1)
  m <- model(out)

  r_values <- function(z) {
    values <- inputs
    log_jacobian <- 0
    start <- 0
    for (name in names(variables)) {
      v <- variables[[name]]
      n <- prod(v$dim)
      tr <- constrain(z[start + seq_len(n)], v$lower, v$upper)
      start <- start + n
      # R does not broadcast 1 x 1 arrays, so scalars are plain numbers
      values[[name]] <- if (n == 1) tr$value else array(tr$value, dim = v$dim)
      log_jacobian <- log_jacobian + sum(tr$log_jacobian)
    }
    list(out = do.call(f, values), log_jacobian = log_jacobian)
  }
  # the result has R's dimensions (greta never drops them below two, so an R
  # result without dimensions is a column vector)
  r_out <- r_values(rep(0, m$n_free))$out
  expect_equal(length(out), length(r_out))
  if (is.matrix(r_out)) expect_equal(dim(out), dim(r_out))

  expected <- function(z) {
    r <- r_values(z)
    sum(stats::dnorm(y_values, as.numeric(r$out), 1, log = TRUE)) + r$log_jacobian
  }
  for (n_chains in chains) {
    free <- random_free(m, n_chains, sd)
    got <- traced_values(m, free)
    want <- t(apply(free, 1, function(z) as.numeric(r_values(z)$out)))
    if (length(out) == 1) want <- t(want)
    expect_equal(unname(got), unname(want), tolerance = tolerance)
    expect_density_matches(m, expected, free = free, tolerance = tolerance)
    expect_gradient_matches(m, free = free)
  }
  invisible(m)
}

vec <- function(n, lower = -Inf, upper = Inf) list(dim = c(n, 1), lower = lower, upper = upper)
mat <- function(r, c, lower = -Inf, upper = Inf) list(dim = c(r, c), lower = lower, upper = upper)
scalar <- function(lower = -Inf, upper = Inf) list(dim = NULL, lower = lower, upper = upper)

# The engine's values of a greta array computed from data alone (calculate()
# runs them through the engine).
engine_values <- function(out) {
  as.numeric(calculate(out)[[1]])
}

# -- distributions -------------------------------------------------------------

# R's log densities, with lockstep's (R's) parameter names and orders.
r_log_density <- list(
  normal = function(x, mean, sd) stats::dnorm(x, mean, sd, log = TRUE),
  cauchy = function(x, location, scale) stats::dcauchy(x, location, scale, log = TRUE),
  student = function(x, df, mu, sigma) stats::dt((x - mu) / sigma, df, log = TRUE) - log(sigma),
  exponential = function(x, rate) stats::dexp(x, rate, log = TRUE),
  bernoulli = function(x, prob) stats::dbinom(x, 1, prob, log = TRUE)
)

# R's CDFs, for truncation.
r_cdf <- list(
  normal = function(q, mean, sd) stats::pnorm(q, mean, sd),
  cauchy = function(q, location, scale) stats::pcauchy(q, location, scale),
  student = function(q, df, mu, sigma) stats::pt((q - mu) / sigma, df),
  exponential = function(q, rate) stats::pexp(q, rate)
)

# Bounds that make each parameter valid when it is a variable.
parameter_bounds <- list(
  mean = c(-Inf, Inf), location = c(-Inf, Inf), mu = c(-Inf, Inf),
  sd = c(0, Inf), scale = c(0, Inf), sigma = c(0, Inf), df = c(0, Inf), rate = c(0, Inf),
  prob = c(0, 1)
)

# greta's compare_distribution, for a distribution used as a likelihood:
# `distribution(x) <- family(params...)` with x data. Parameters named in
# `as_variable` become variables (flat priors, bounded to their valid range)
# whose free values are drawn around the given parameter values, one set per
# chain; the others are data. The engine's log density must equal the sum of
# R's log density over x plus the log Jacobians of the parameters' transforms,
# for 1 and 3 chains; the gradient must match finite differences.
compare_distribution <- function(family, x, params, as_variable = character(),
                                 truncation = NULL, chains = c(1, 3), tolerance = 1e-9,
                                 check_gradient = TRUE) {
  fun <- get(family, envir = asNamespace("lockstep"))
  greta_params <- params
  if (!is.null(truncation)) greta_params$truncation <- truncation
  variables <- list()
  for (name in as_variable) {
    bounds <- parameter_bounds[[name]]
    value <- as.matrix(params[[name]])
    variables[[name]] <- variable(lower = bounds[1], upper = bounds[2], dim = dim(value))
    greta_params[[name]] <- variables[[name]]
  }
  x_data <- as_data(x)
  distribution(x_data) <- do.call(fun, greta_params)
  # with every parameter data, the model still needs something to sample: a
  # standard normal variable, whose density the expected one adds (model()
  # refuses a flat variable in a graph of its own: it would be improper)
  if (length(variables) == 0) variables$dummy <- normal(0, 1)
  m <- do.call(model, c(list(x = x_data), variables))
  # free-state layout: variables in creation order, i.e. the order of as_variable
  sizes <- vapply(as_variable, function(name) length(params[[name]]), numeric(1))
  expected <- function(z) {
    values <- params
    total <- 0
    start <- 0
    for (name in as_variable) {
      bounds <- parameter_bounds[[name]]
      zi <- z[start + seq_len(sizes[[name]])]
      start <- start + sizes[[name]]
      tr <- constrain(zi, bounds[1], bounds[2])
      values[[name]] <- tr$value
      total <- total + sum(tr$log_jacobian)
    }
    values <- lapply(values, as.numeric)
    if (length(as_variable) == 0) total <- dnorm(z[1], log = TRUE)  # the dummy's
    total <- total + sum(do.call(r_log_density[[family]], c(list(as.numeric(x)), values)))
    if (!is.null(truncation)) {
      mass <- do.call(r_cdf[[family]], c(list(truncation[2]), values)) -
        do.call(r_cdf[[family]], c(list(truncation[1]), values))
      total <- total - sum(rep_len(log(mass), length(x)))
    }
    total
  }
  centre <- unlist(lapply(as_variable, function(name) {
    bounds <- parameter_bounds[[name]]
    unconstrain(as.numeric(params[[name]]), bounds[1], bounds[2])
  }))
  if (length(as_variable) == 0) centre <- 0  # the dummy variable
  for (n_chains in chains) {
    free <- matrix(rep(centre, each = n_chains), n_chains) +
      matrix(stats::rnorm(n_chains * length(centre), sd = 0.3), n_chains)
    expect_density_matches(m, expected, free = free, tolerance = tolerance)
    if (check_gradient) expect_gradient_matches(m, free = free)
  }
  invisible(m)
}

# The same for a distribution used as a prior: `v <- family(params..., dim,
# truncation)` with data parameters. The engine's log density must be R's log
# density of the constrained values, renormalised by F(upper) - F(lower) when
# truncated, plus the log Jacobian of the variable's bounds (the truncation,
# intersected with the family's support).
compare_prior <- function(family, params, dim = 4, truncation = NULL, support = c(-Inf, Inf),
                          chains = c(1, 3), tolerance = 1e-9, sd = 1) {
  fun <- get(family, envir = asNamespace("lockstep"))
  args <- c(params, list(dim = dim))
  if (!is.null(truncation)) args$truncation <- truncation
  v <- do.call(fun, args)
  m <- model(v)
  trunc <- if (is.null(truncation)) support else truncation
  lower <- max(trunc[1], support[1])
  upper <- min(trunc[2], support[2])
  n <- prod(dim)
  expected <- function(z) {
    tr <- constrain(z, lower, upper)
    lp <- sum(do.call(r_log_density[[family]], c(list(tr$value), params)))
    if (is.finite(trunc[1]) || is.finite(trunc[2])) {
      mass <- do.call(r_cdf[[family]], c(list(trunc[2]), params)) -
        do.call(r_cdf[[family]], c(list(trunc[1]), params))
      lp <- lp - n * log(mass)
    }
    lp + sum(tr$log_jacobian)
  }
  for (n_chains in chains) {
    free <- random_free(m, n_chains, sd)
    expect_density_matches(m, expected, free = free, tolerance = tolerance)
    expect_gradient_matches(m, free = free)
  }
  invisible(m)
}

# -- posteriordb references ----------------------------------------------------

# The project's shared/ folder (holding posteriordb/): LOCKSTEP_SHARED if set,
# else a `shared` folder beside the test directory, the working directory or
# any folder above them (a checkout at /work/main has /work/shared; a CI clone
# has ../shared). NULL when there is none.
find_shared <- function() {
  env <- Sys.getenv("LOCKSTEP_SHARED")
  if (nzchar(env)) {
    for (candidate in c(env, file.path(env, "shared"))) {
      if (dir.exists(file.path(candidate, "posteriordb"))) return(normalizePath(candidate))
    }
  }
  starts <- c(tryCatch(testthat::test_path(), error = function(e) NULL), getwd())
  for (start in unique(normalizePath(starts, mustWork = FALSE))) {
    dir <- start
    repeat {
      candidate <- file.path(dir, "shared")
      if (dir.exists(file.path(candidate, "posteriordb"))) return(normalizePath(candidate))
      parent <- dirname(dir)
      if (identical(parent, dir)) break
      dir <- parent
    }
  }
  NULL
}

# The posteriordb reference folder of a posterior; an error, not a skip, when
# the shared folder cannot be found, so a missing reference never passes.
posteriordb_dir <- function(posterior) {
  shared <- find_shared()
  if (is.null(shared)) {
    stop("cannot find the shared/posteriordb reference posteriors: set the environment ",
         "variable LOCKSTEP_SHARED to the folder that holds posteriordb/ (tests looked ",
         "upwards from ", normalizePath(testthat::test_path(), mustWork = FALSE), " and ",
         getwd(), ")", call. = FALSE)
  }
  dir <- file.path(shared, "posteriordb", posterior)
  if (!dir.exists(dir)) stop("no posteriordb reference for ", posterior, " in ", shared,
                             call. = FALSE)
  dir
}

read_json_file <- function(path) {
  if (requireNamespace("jsonlite", quietly = TRUE)) return(jsonlite::fromJSON(path))
  # a fallback for the flat reference files: "name": [numbers or strings]
  text <- paste(readLines(path, warn = FALSE), collapse = "")
  fields <- regmatches(text, gregexpr('"[A-Za-z_]+"\\s*:\\s*\\[[^]]*\\]', text))[[1]]
  out <- list()
  for (field in fields) {
    name <- sub('^"([A-Za-z_]+)".*', "\\1", field)
    body <- sub("^[^[]*\\[(.*)\\]$", "\\1", field)
    items <- trimws(strsplit(body, ",")[[1]])
    out[[name]] <- if (all(grepl('^".*"$', items))) gsub('"', "", items) else as.numeric(items)
  }
  out
}

# z-scores of lockstep's posterior means and second moments against a
# posteriordb reference: z = (mean_lockstep - mean_ref) / sqrt(mcse_lockstep^2
# + mcse_ref^2), with mcse_lockstep = sd / sqrt(effective sample size) over the
# pooled chains. `name_map` maps reference names to lockstep's column names.
posteriordb_z <- function(draws, posterior, name_map = function(x) x) {
  dir <- posteriordb_dir(posterior)
  ref_mean <- read_json_file(file.path(dir, "reference_mean.json"))
  ref_sq <- read_json_file(file.path(dir, "reference_mean_squared.json"))
  columns <- name_map(ref_mean$names)
  pooled <- as.matrix(coda::mcmc.list(lapply(draws, coda::as.mcmc)))
  missing <- setdiff(columns, colnames(pooled))
  if (length(missing)) stop("draws lack columns ", paste(missing, collapse = ", "), call. = FALSE)
  moment_z <- function(values, ref_value, ref_mcse) {
    chains <- lapply(draws, function(d) coda::mcmc(values(as.matrix(d)[, columns, drop = FALSE])))
    ess <- coda::effectiveSize(coda::mcmc.list(chains))
    all_values <- values(pooled[, columns, drop = FALSE])
    est <- colMeans(all_values)
    mcse <- apply(all_values, 2, stats::sd) / sqrt(ess)
    (est - ref_value) / sqrt(mcse^2 + ref_mcse^2)
  }
  data.frame(
    name = columns,
    z_mean = moment_z(function(x) x, ref_mean$mean_value, ref_mean$mcse_mean),
    z_mean_squared = moment_z(function(x) x^2, ref_sq$mean_squared_value, ref_sq$mcse_mean),
    row.names = NULL
  )
}

# -- models used by several files ----------------------------------------------

eight_schools_data <- list(
  y = c(28, 8, -3, 7, -1, 1, 18, 12),
  sigma = c(15, 10, 16, 11, 9, 11, 10, 18)
)

# The seed's hierarchical logistic regression (a random intercept and random
# slopes per group, non-centred, as bench/hlogit_model.R writes it) on data
# `x` (rows x k), each row's group `g` (1 to `groups`) and 0/1 outcomes `y`,
# with the global intercept's prior sd `alpha_sd`; traces the global
# parameters, and the group intercepts `alpha_g` too with `trace_alpha_g`.
# (tests/gpu sources this file too.)
hierarchical_logit_model <- function(x, g, y, groups, alpha_sd = 1.5, precision = "double",
                                     trace_alpha_g = FALSE) {
  k <- ncol(x)
  alpha <- normal(0, alpha_sd)
  beta <- normal(0, 1, dim = k)
  sigma_alpha <- normal(0, 1, truncation = c(0, Inf))
  sigma_gamma <- normal(0, 0.5, dim = k, truncation = c(0, Inf))
  z_alpha <- normal(0, 1, dim = groups)
  z_gamma <- normal(0, 1, dim = c(groups, k))
  alpha_g <- sigma_alpha * z_alpha
  gamma <- sweep(z_gamma, 2, sigma_gamma, "*")
  xd <- as_data(x)
  eta <- alpha + alpha_g[g] + xd %*% beta + rowSums(xd * gamma[g, ])
  distribution(y) <- bernoulli(ilogit(eta))
  if (trace_alpha_g) {
    model(alpha, beta, sigma_alpha, sigma_gamma, alpha_g, precision = precision)
  } else {
    model(alpha, beta, sigma_alpha, sigma_gamma, precision = precision)
  }
}

# hierarchical_logit_model() on 30 groups of 6 rows, 2 covariates and coin
# flips, simulated after set.seed(seed): small enough for the emulated
# backend's devices, each of which owns groups.
small_grouped_logit <- function(seed) {
  set.seed(seed)
  G <- 30
  K <- 2
  g <- rep(seq_len(G), each = 6)
  X <- matrix(rnorm(length(g) * K), length(g), K)
  y <- stats::rbinom(length(g), 1, 0.5)
  hierarchical_logit_model(X, g, y, G)
}

# Eight schools, non-centred, as posteriordb writes it.
eight_schools_model <- function() {
  mu <- normal(0, 5)
  tau <- cauchy(0, 5, truncation = c(0, Inf))
  theta_tilde <- normal(0, 1, dim = 8)
  theta <- mu + tau * theta_tilde
  distribution(eight_schools_data$y) <- normal(theta, eight_schools_data$sigma)
  model(mu, tau, theta)
}

# Its log density on the free scale, by hand: free state (mu, log tau,
# theta_tilde[1:8]); half-Cauchy(0, 5) is 2 * dcauchy on tau > 0, and tau =
# exp(z) adds log |d tau / dz| = z.
eight_schools_log_density <- function(z) {
  mu <- z[1]
  tau <- exp(z[2])
  theta_tilde <- z[3:10]
  theta <- mu + tau * theta_tilde
  stats::dnorm(mu, 0, 5, log = TRUE) +
    stats::dcauchy(tau, 0, 5, log = TRUE) + log(2) + z[2] +
    sum(stats::dnorm(theta_tilde, 0, 1, log = TRUE)) +
    sum(stats::dnorm(eight_schools_data$y, theta, eight_schools_data$sigma, log = TRUE))
}

# Its gradient, by hand, to check the engine's gradient without finite
# differences.
eight_schools_gradient <- function(z) {
  mu <- z[1]
  tau <- exp(z[2])
  tt <- z[3:10]
  y <- eight_schools_data$y
  s <- eight_schools_data$sigma
  r <- (y - mu - tau * tt) / s^2  # d loglik / d theta
  d_mu <- -mu / 25 + sum(r)
  d_tau <- -2 * tau / (25 + tau^2) + sum(r * tt)
  d_z2 <- d_tau * tau + 1
  d_tt <- -tt + r * tau
  c(d_mu, d_z2, d_tt)
}

# Shared by the tests of constrained variables and multivariate distributions.

# mcmc() without progress output; its warning about a few divergent transitions
# (in the tails of these flat models) is not what these tests are about
sample_quietly <- function(...) {
  withCallingHandlers(mcmc(..., verbose = FALSE), warning = function(w) {
    if (grepl("divergent", conditionMessage(w))) invokeRestart("muffleWarning")
  })
}

# Draws of a scalar quantity pooled over chains and thinned to roughly
# independent draws, for a KS test. (Rejected proposals repeat a draw, so a few
# ties remain; ks.test's warning about them is expected.)
independent_draws <- function(draws, name) {
  ess <- coda::effectiveSize(draws[, name])
  pooled <- as.numeric(as.matrix(draws[, name]))
  step <- max(1, ceiling(length(pooled) / ess))
  # thin each chain, so neighbours in the pooled vector are `step` iterations apart
  unlist(lapply(draws, function(chain) {
    x <- as.numeric(chain[, name])
    x[seq(1, length(x), by = step)]
  }))
}

# |mean - exact| within 5 Monte Carlo standard errors
expect_mc_mean <- function(x, exact, sd) {
  expect_lt(max(abs(colMeans(x) - exact) / (sd / sqrt(nrow(x)))), 5)
}

# |a - b| <= tol elementwise: Monte Carlo estimates against exact values
expect_near <- function(a, b, tol) expect_lt(max(abs(as.numeric(a) - as.numeric(b))), tol)

# log |det| of the Jacobian of `coords(f(y))` in y, by central differences
numeric_log_jacobian <- function(f, coords, y, h = 1e-6) {
  J <- vapply(seq_along(y), function(j) {
    up <- y
    down <- y
    up[j] <- up[j] + h
    down[j] <- down[j] - h
    (coords(f(up)) - coords(f(down))) / (2 * h)
  }, numeric(length(y)))
  as.numeric(determinant(matrix(J, length(y)), logarithm = TRUE)$modulus)
}

# LKJ normalising constant (Lewandowski, Kurowicka and Joe 2009)
ref_lkj_log_c <- function(eta, K) {
  k <- seq_len(K - 1)
  b <- eta + (K - k - 1) / 2
  sum((2 * eta - 2 + K - k) * (K - k) * log(2) + (K - k) * lbeta(b, b))
}
ref_dlkj <- function(Omega, eta) {
  (eta - 1) * as.numeric(determinant(Omega)$modulus) - ref_lkj_log_c(eta, nrow(Omega))
}
# Wishart, as stats::rWishart() draws it (mean df * Sigma)
ref_dwishart <- function(W, df, Sigma) {
  K <- nrow(W)
  ld <- function(A) as.numeric(determinant(A)$modulus)
  (df - K - 1) / 2 * ld(W) - sum(diag(solve(Sigma, W))) / 2 - df * K / 2 * log(2) -
    df / 2 * ld(Sigma) - (K * (K - 1) / 4 * log(pi) + sum(lgamma(df / 2 + (1 - seq_len(K)) / 2)))
}

# -- progress updates replaced ----------------------------------------------------

# Evaluates `code` with lockstep's progress_update() (called between a run's
# chunks) replaced by `f`, restoring it afterwards.
with_progress_update <- function(f, code) {
  ns <- asNamespace("lockstep")
  original <- get("progress_update", envir = ns)
  unlockBinding("progress_update", ns)
  assign("progress_update", f, envir = ns)
  on.exit({
    assign("progress_update", original, envir = ns)
    lockBinding("progress_update", ns)
  })
  code
}

# A progress_update() that interrupts sampling, as Esc or RStudio's stop
# button would, at its first update of sampling at or past `at` iterations
# (chunks are sized by their time, so wherever that is); `$at` records where.
sampling_interrupter <- function(at) {
  state <- new.env()
  state$at <- NA
  state$update <- function(bar, done, ...) {
    if (bar$name == "sampling" && done >= at && is.na(state$at)) {
      state$at <- done
      signalCondition(structure(class = c("interrupt", "condition"),
                                list(message = "interrupt", call = NULL)))
    }
    invisible(NULL)
  }
  state
}
