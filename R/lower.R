# Lowering: the DAG of greta array nodes becomes the IR, a plain list that the
# Rcpp boundary turns into a lockstep::Program (src/rcpp_engine.cpp).

# Every node reachable from `roots`, by id, each visited once (depth first):
# next_of(node, key) gives the nodes to go on to from it (NULLs are skipped).
# The walks of model(), calculate() and simulation differ only in next_of.
walk_nodes <- function(roots, next_of) {
  seen <- new.env(parent = emptyenv())
  found <- list()
  stack <- roots
  while (length(stack) > 0) {
    node <- stack[[length(stack)]]
    stack[[length(stack)]] <- NULL
    key <- as.character(node$id)
    if (!is.null(seen[[key]])) next
    seen[[key]] <- TRUE
    found[[key]] <- node
    for (other in next_of(node, key)) if (!is.null(other)) stack[[length(stack) + 1L]] <- other
  }
  found
}

# Every node connected to the roots, through parents, children and the links
# between a distribution and its target, less the operations and data that
# nothing uses (prune_unused).
collect_dag <- function(roots) {
  found <- walk_nodes(roots, function(node, key) {
    c(node$parents, node$children, list(node$distribution, node$target))
  })
  prune_unused(found, roots)
}

# Keeps the variables, the distributions, the roots and everything they are
# computed from; drops operations and data that none of these depends on, which
# would otherwise be computed, and differentiated, for nothing. Such nodes are
# reached through the children of used ones: e.g. bernoulli(ilogit(eta)) is
# computed from eta directly (its logit form), which leaves the ilogit()
# node as an unused child of eta.
prune_unused <- function(nodes, roots) {
  live <- new.env(parent = emptyenv())
  keep <- Filter(function(n) n$type %in% c("variable", "distribution"), nodes)
  stack <- c(roots, unname(keep))
  while (length(stack) > 0) {
    node <- stack[[length(stack)]]
    stack[[length(stack)]] <- NULL
    key <- as.character(node$id)
    if (!is.null(live[[key]])) next
    live[[key]] <- TRUE
    for (input in node_inputs(node)) stack[[length(stack) + 1L]] <- input
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
  nodes <- nodes[order(vapply(nodes, function(n) n$id, integer(1)))]
  done <- new.env(parent = emptyenv())
  ordered <- list()
  visit <- function(node) {
    key <- as.character(node$id)
    if (!is.null(done[[key]])) return(invisible())
    done[[key]] <- TRUE
    if (!key %in% leaves) for (input in node_inputs(node)) visit(input)
    ordered[[length(ordered) + 1L]] <<- node
  }
  for (node in nodes) visit(node)
  ordered
}

transform_of <- function(lower, upper) {
  if (is.finite(lower) && is.finite(upper)) return("interval")
  if (is.finite(lower)) return("lower")
  if (is.finite(upper)) return("upper")
  "none"
}

# Returns list(ir, ids, variables): ids maps node id (character) to its 0-based
# IR index; variables describes each variable's slice of the free state.
# `fixed` (calculate()) maps node ids to values: those nodes are lowered as
# data holding them, whatever they are. Nodes whose ids are in `sampled`
# (calculate(nsim =)) are lowered as parameters without a transform, whatever
# they are: their values, drawn or given per draw, are the free state.
lower_dag <- function(nodes, fixed = list(), sampled = character()) {
  ordered <- topological_order(nodes, c(names(fixed), sampled))
  ids <- list()
  ir_nodes <- vector("list", length(ordered))
  terms <- integer()
  variables <- list()
  offset <- 0
  for (k in seq_along(ordered)) {
    node <- ordered[[k]]
    key <- as.character(node$id)
    ids[[key]] <- k - 1L
    type <- if (!is.null(fixed[[key]])) "fixed" else if (key %in% sampled) "sampled" else node$type
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
        variables[[key]] <- list(offset = offset, size = size, dim = node$dim,
                                 lower = -Inf, upper = Inf, ir = k - 1L)
        offset <- offset + size
        list(op = "param", dim = node$dim, offset = offset - size, transform = "none",
             lower = -Inf, upper = Inf)
      },
      variable = {
        size <- prod(node$dim)
        variables[[key]] <- list(offset = offset, size = size, dim = node$dim,
                                 lower = node$lower, upper = node$upper, ir = k - 1L)
        entry <- list(op = "param", dim = node$dim, offset = offset,
                      transform = transform_of(node$lower, node$upper),
                      lower = node$lower, upper = node$upper)
        offset <- offset + size
        entry
      },
      operation = list(op = node$op, dim = node$dim, inputs = inputs, index = node$index),
      distribution = {
        terms <- c(terms, k - 1L)
        list(op = "density", dim = c(1L, 1L), inputs = inputs, family = node$family,
             trunc_lower = node$truncation[1], trunc_upper = node$truncation[2])
      }
    )
    if (type != "distribution") ir$inputs <- inputs
    ir_nodes[[k]] <- ir
  }
  list(ir = list(nodes = ir_nodes, terms = terms, n_free = offset), ids = ids,
       variables = variables)
}
