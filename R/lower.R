# Lowering: the DAG of greta array nodes becomes the IR, a plain list that the
# Rcpp boundary turns into a lockstep::Program (src/rcpp_engine.cpp).

# Every node reachable from `roots`, by id, each visited once (depth first):
# next_of(node, key) gives the nodes to go on to from it (NULLs are skipped).
# The walks of model(), calculate() and simulation differ only in next_of.
# Returns the nodes as a list named by id.
#
# Linear in the size of the DAG (a model of 10^4 operations lowers in well
# under a second; bench/lowering.R): nodes seen are marked in a hashed
# environment, and the stack and the result are lists grown by doubling with
# an explicit top, since R copies a whole list to drop its last element or to
# add an element by name.
walk_nodes <- function(roots, next_of) {
  seen <- new.env(hash = TRUE, parent = emptyenv())
  stack <- unname(roots)
  top <- length(stack)
  found <- vector("list", 16L)
  n_found <- 0L
  # (the stack and the result are inlined here, not a node_stack(): this loop
  # is the hot path of model(), and a closure call per push costs a third)
  while (top > 0L) {
    node <- stack[[top]]
    top <- top - 1L
    key <- as.character(node$id)
    if (!is.null(seen[[key]])) next
    seen[[key]] <- TRUE
    n_found <- n_found + 1L
    if (n_found > length(found)) length(found) <- 2L * n_found
    found[[n_found]] <- node
    following <- next_of(node, key)
    if (top + length(following) > length(stack)) length(stack) <- 2L * (top + length(following))
    for (other in following) {
      if (!is.null(other)) {
        top <- top + 1L
        stack[[top]] <- other
      }
    }
  }
  nodes <- found[seq_len(n_found)]
  names(nodes) <- vapply(nodes, function(n) as.character(n$id), character(1))
  nodes
}

# A stack of nodes (a list grown by doubling, with an explicit top): push(),
# pop() and items() (those on it, bottom first), each O(1) amortised.
node_stack <- function(initial = list()) {
  self <- new.env(parent = emptyenv())
  items <- initial
  length(items) <- max(16L, 2L * length(initial))
  self$size <- length(initial)
  self$push <- function(node) {
    if (self$size == length(items)) length(items) <<- 2L * length(items)
    self$size <- self$size + 1L
    items[[self$size]] <<- node
  }
  self$pop <- function() {
    node <- items[[self$size]]
    items[self$size] <<- list(NULL)
    self$size <- self$size - 1L
    node
  }
  self$items <- function() items[seq_len(self$size)]
  self
}

# Every node connected to the roots, through parents, children and the links
# between a distribution and its target, less the operations and data that
# nothing uses (prune_unused).
collect_dag <- function(roots) prune_unused(walk_nodes(roots, dag_neighbours), roots)

# The nodes a model's graph connects to `node`: its parents, its children, its
# distribution and (a distribution's) target.
dag_neighbours <- function(node, key) {
  c(node$parents, node$children, list(node$distribution, node$target))
}

# Keeps the variables, the distributions, the roots and everything they are
# computed from; drops operations and data that none of these depends on, which
# would otherwise be computed, and differentiated, for nothing. Such nodes are
# reached through the children of used ones: e.g. bernoulli(ilogit(eta)) is
# computed from eta directly (its logit form), which leaves the ilogit()
# node as an unused child of eta.
prune_unused <- function(nodes, roots) {
  live <- new.env(hash = TRUE, parent = emptyenv())
  keep <- Filter(function(n) n$type %in% c("variable", "distribution"), nodes)
  stack <- c(unname(roots), unname(keep))
  top <- length(stack)
  while (top > 0L) {
    node <- stack[[top]]
    top <- top - 1L
    key <- as.character(node$id)
    if (!is.null(live[[key]])) next
    live[[key]] <- TRUE
    inputs <- node_inputs(node)
    if (top + length(inputs) > length(stack)) length(stack) <- 2L * (top + length(inputs))
    for (input in inputs) {
      top <- top + 1L
      stack[[top]] <- input
    }
  }
  nodes[vapply(nodes, function(n) !is.null(live[[as.character(n$id)]]), logical(1))]
}

# The nodes an IR node is computed from: a distribution's target comes first,
# then its parameters.
node_inputs <- function(node) {
  if (node$type == "distribution") c(list(node$target), node$parents) else node$parents
}

# Topological order (inputs before the nodes that use them); ties in creation
# order, so that a model lowers the same way every time. The inputs of nodes
# named in `leaves` (by id) are not visited: those nodes are lowered as leaves.
topological_order <- function(nodes, leaves = character()) {
  nodes <- nodes[order(vapply(nodes, function(n) n$id, numeric(1)))]
  done <- new.env(hash = TRUE, parent = emptyenv())
  is_leaf <- new.env(hash = TRUE, parent = emptyenv())
  for (key in leaves) is_leaf[[key]] <- TRUE
  ordered <- node_stack()
  # (inputs have smaller ids than the nodes computed from them, so visiting in
  # id order keeps this recursion shallow)
  visit <- function(node) {
    key <- as.character(node$id)
    if (!is.null(done[[key]])) return(invisible())
    done[[key]] <- TRUE
    if (is.null(is_leaf[[key]])) for (input in node_inputs(node)) visit(input)
    ordered$push(node)
  }
  for (node in nodes) visit(node)
  ordered$items()
}

transform_of <- function(lower, upper) {
  if (is.finite(lower) && is.finite(upper)) return("interval")
  if (is.finite(lower)) return("lower")
  if (is.finite(upper)) return("upper")
  "none"
}

# Returns list(ir, ids, variables): ids maps node id (character) to its 0-based
# IR index (a hashed environment: `ids[[key]]`, O(1) per node); variables
# describes each variable's slice of the free state.
# `fixed` (calculate()) maps node ids to values: those nodes are lowered as
# data holding them, whatever they are. Nodes whose ids are in `sampled`
# (calculate(nsim =)) are lowered as parameters without a transform, whatever
# they are: their values, drawn or given per draw, are the free state.
lower_dag <- function(nodes, fixed = list(), sampled = character()) {
  ordered <- topological_order(nodes, c(names(fixed), sampled))
  ids <- new.env(hash = TRUE, parent = emptyenv())
  ir_nodes <- vector("list", length(ordered))
  terms <- integer()
  # variables by id, in IR order: filled by position and named at the end (a
  # list grown by name is copied at every new name)
  variables <- vector("list", length(ordered))
  variable_keys <- character(length(ordered))
  n_variables <- 0L
  is_sampled <- new.env(hash = TRUE, parent = emptyenv())
  for (key in sampled) is_sampled[[key]] <- TRUE
  offset <- 0
  for (k in seq_along(ordered)) {
    node <- ordered[[k]]
    key <- as.character(node$id)
    ids[[key]] <- k - 1L
    type <- if (!is.null(fixed[[key]])) {
      "fixed"
    } else if (!is.null(is_sampled[[key]])) {
      "sampled"
    } else {
      node$type
    }
    inputs <- if (type %in% c("fixed", "sampled")) {
      integer()
    } else {
      vapply(node_inputs(node), function(n) ids[[as.character(n$id)]], integer(1))
    }
    ir <- switch(type,
      fixed = list(op = "data", dim = node$dim, values = as.numeric(fixed[[key]])),
      data = list(op = "data", dim = node$dim, values = node$value),
      sampled = {
        size <- prod(node$dim)
        n_variables <- n_variables + 1L
        variable_keys[n_variables] <- key
        variables[[n_variables]] <- list(offset = offset, size = size, dim = node$dim,
                                         lower = -Inf, upper = Inf, ir = k - 1L)
        offset <- offset + size
        list(op = "param", dim = node$dim, offset = offset - size, transform = "none",
             lower = -Inf, upper = Inf)
      },
      variable = {
        size <- prod(node$dim)
        n_variables <- n_variables + 1L
        variable_keys[n_variables] <- key
        variables[[n_variables]] <- list(offset = offset, size = size, dim = node$dim,
                                         lower = node$lower, upper = node$upper, ir = k - 1L)
        entry <- list(op = "param", dim = node$dim, offset = offset,
                      transform = transform_of(node$lower, node$upper),
                      lower = node$lower, upper = node$upper)
        offset <- offset + size
        entry
      },
      operation = {
        entry <- list(op = node$op, dim = node$dim, inputs = inputs, index = node$index)
        if (!is.null(node$family)) {
          # logpdf: a family's log density per element (mixture(), joint())
          entry$family <- node$family
          entry$trunc_lower <- node$truncation[1]
          entry$trunc_upper <- node$truncation[2]
        }
        entry
      },
      distribution = {
        terms <- c(terms, k - 1L)
        list(op = "density", dim = c(1L, 1L), inputs = inputs, family = node$family,
             trunc_lower = node$truncation[1], trunc_upper = node$truncation[2])
      }
    )
    if (type != "distribution") ir$inputs <- inputs
    ir_nodes[[k]] <- ir
  }
  variables <- variables[seq_len(n_variables)]
  if (n_variables > 0L) names(variables) <- variable_keys[seq_len(n_variables)]
  list(ir = list(nodes = ir_nodes, terms = terms, n_free = offset), ids = ids,
       variables = variables)
}
