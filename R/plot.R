#' Plot a model's graph
#'
#' `plot()` of a [model()] draws its graph, as greta's does: the data, the
#' variables, the operations computed from them and the distributions, with an
#' arrow from each node to the nodes computed from it and a dashed arrow from
#' each distribution to the greta array it is the distribution of. The greta
#' arrays given to [model()], and those with a name where [model()] was
#' called, are labelled with their names; the others with what they are
#' (`data`, `variable`, the operation by greta's name for it, such as
#' `multiply`, `matrix multiply` or `extract`, or the distribution). The
#' arrows into a distribution are labelled with the parameters they are
#' (`mean`, `sd`). Layers run from the top (data and constants) down, each
#' node below every node it is computed from; labels sit beside their nodes.
#'
#' greta draws its graph with the DiagrammeR package (not in Debian); lockstep
#' draws it with base graphics, in the current device, and returns the graph as
#' two data frames.
#'
#' A model of more than 1000 nodes is not drawn (an error says so): it would
#' not be readable, and [model()] does not spend the time recording its graph.
#'
#' @param x a `greta_model`
#' @param y ignored
#' @param ... ignored
#' @return invisibly, a list of `nodes` (a data frame with `id`, `type`,
#'   `label`, `layer`, `x` and `y`) and `edges` (`from`, `to`, `kind`:
#'   `"input"` or `"distribution"`, and `label`: the parameter's name, or
#'   `""`)
#' @examples
#' y <- c(0.3, -0.2, 1.1)
#' mu <- normal(0, 1)
#' sigma <- exponential(1)
#' distribution(y) <- normal(mu, sigma)
#' m <- model(mu, sigma)
#' plot(m)
#' @export
plot.greta_model <- function(x, y, ...) {
  graph <- x$graph
  if (is.null(graph)) {
    stop("this model has no graph to plot: it was made by an older version of lockstep; ",
         "make it again with model()", call. = FALSE)
  }
  if (!is.null(graph$too_many)) {
    stop("this model has ", graph$too_many, " nodes, too many to draw readably: plot() ",
         "draws models of up to ", plot_node_limit, " nodes", call. = FALSE)
  }
  nodes <- graph$nodes
  edges <- graph$edges
  nodes$layer <- graph_layers(nodes$id, edges)
  nodes$x <- layer_positions(nodes$id, nodes$layer, edges)
  nodes$y <- graph_heights(nodes$layer)
  graph$nodes <- nodes
  style <- node_style()
  n_layers <- base::max(nodes$layer) + 1L
  old <- graphics::par(mar = c(0.5, 0.5, 0.5, 0.5))
  on.exit(graphics::par(old))
  graphics::plot.new()
  graphics::plot.window(xlim = c(0, 1), ylim = c(-0.08, 1.04))
  from <- match(edges$from, nodes$id)
  to <- match(edges$to, nodes$id)
  if (length(from)) {
    # arrows end short of the node they point to
    dx <- nodes$x[to] - nodes$x[from]
    dy <- nodes$y[to] - nodes$y[from]
    len <- sqrt(dx^2 + dy^2)
    len[len == 0] <- 1
    gap <- 0.035
    graphics::arrows(nodes$x[from], nodes$y[from], nodes$x[to] - gap * dx / len,
                     nodes$y[to] - gap * dy / len, length = 0.07,
                     lty = ifelse(edges$kind == "distribution", 2, 1), col = "grey40")
  }
  s <- style[nodes$type, ]
  graphics::points(nodes$x, nodes$y, pch = s$pch, bg = s$fill, col = "grey20",
                   cex = ifelse(nodes$type == "operation", 2, 3))
  # Node labels to the right of their nodes, where the node's own arrows (which
  # leave downwards) do not run; a distribution's parameters label their
  # edges halfway along. Both on white, drawn after the arrows, so that an
  # arrow passing by never runs through one.
  labelled <- which(nzchar(edges$label))
  if (length(labelled)) {
    f <- from[labelled]
    t <- to[labelled]
    boxed_text((nodes$x[t] + nodes$x[f]) / 2, (nodes$y[t] + nodes$y[f]) / 2,
               edges$label[labelled], cex = 0.6, col = "grey30")
  }
  offset <- ifelse(nodes$type == "operation", 0.012, 0.018)
  boxed_text(nodes$x + offset, nodes$y, nodes$label, cex = 0.75, adj = 0)
  present <- intersect(rownames(style), nodes$type)
  graphics::legend("bottom", legend = present, pch = style[present, "pch"],
                   pt.bg = style[present, "fill"], col = "grey20", horiz = TRUE, bty = "n",
                   cex = 0.8, pt.cex = 1.5)
  invisible(graph)
}

# Text on a white box its size, so that lines behind it do not cross it.
# `adj`: 0.5 centred on x, 0 starting at x.
boxed_text <- function(x, y, labels, cex, col = "black", adj = 0.5) {
  w <- graphics::strwidth(labels, cex = cex)
  h <- graphics::strheight("Mg", cex = cex)
  left <- x - adj * w
  graphics::rect(left - 0.003, y - h / 2 - 0.003, left + w + 0.003, y + h / 2 + 0.003,
                 col = "white", border = NA)
  graphics::text(left, y, labels, cex = cex, col = col, adj = c(0, 0.5))
}

# Each node type's symbol and colour in plot.greta_model (greta's purples).
node_style <- function() {
  data.frame(pch = c(22, 21, 21, 23),
             fill = c("#D3D3D3", "#E0D2EE", "#F4F0F9", "#B797D7"),
             row.names = c("data", "variable", "operation", "distribution"),
             stringsAsFactors = FALSE)
}

# The most nodes model() records a graph for: a larger one would not be
# readable drawn, and recording it would cost model() time (13 us a node;
# issue 5's 10^4 operations lower in well under a second).
plot_node_limit <- 1000L

# The graph of a model's nodes (those model() collected, before multivariate
# distributions are expanded into operations), as plain data frames that a
# saved model keeps: nodes with their type and label, and edges; plot() lays
# them out. The Jacobian terms of constrained variables, which the user did
# not write, are left out. `roots` are the traced nodes, named `names`;
# `visible` names other nodes by id (the greta arrays where model() was
# called); the rest are labelled by what they are, operations by greta's
# names for them. Edges into a distribution carry its parameters' names. Past
# plot_node_limit nodes, only their number.
model_graph <- function(nodes, roots, names, visible = character()) {
  if (length(nodes) > plot_node_limit) return(list(too_many = length(nodes)))
  nodes <- Filter(function(n) !(n$type == "distribution" && is_log_jacobian(n)), nodes)
  ids <- vapply(nodes, function(n) n$id, numeric(1))
  # whether an id is one of the graph's, by lookup in a hashed environment (a
  # search of ids per node took 13 s for 30,000 nodes; ids are large numbers,
  # unique across sessions, so not indices of a vector)
  in_graph <- list2env(stats::setNames(as.list(rep(TRUE, length(ids))), as.character(ids)),
                       hash = TRUE, parent = emptyenv())
  shown <- function(id) {
    vapply(as.character(id), function(k) !is.null(in_graph[[k]]), logical(1), USE.NAMES = FALSE)
  }
  keep <- function(list_of_nodes) {
    found <- vapply(list_of_nodes, function(n) n$id, numeric(1))
    found[shown(found)]
  }
  # per node, its incoming edges (lists joined once: appending edge by edge
  # is quadratic in a model of 10^4 operations)
  per_node <- lapply(nodes, function(n) {
    parents <- vapply(n$parents, function(p) p$id, numeric(1))
    showing <- shown(parents)
    inputs <- parents[showing]
    label <- if (n$type == "distribution" && length(n$param_names) == length(parents)) {
      n$param_names[showing]
    } else {
      rep("", length(inputs))
    }
    e <- list(from = inputs, to = rep(n$id, length(inputs)), kind = rep("input", length(inputs)),
              label = label)
    if (n$type == "distribution" && !is.null(n$target) && shown(n$target$id)) {
      e <- list(from = c(e$from, n$id), to = c(e$to, n$target$id),
                kind = c(e$kind, "distribution"), label = c(e$label, ""))
    }
    e
  })
  from <- as.numeric(unlist(lapply(per_node, `[[`, "from")))
  to <- as.numeric(unlist(lapply(per_node, `[[`, "to")))
  kind <- as.character(unlist(lapply(per_node, `[[`, "kind")))
  label <- as.character(unlist(lapply(per_node, `[[`, "label")))
  edges <- data.frame(from = from, to = to, kind = kind, label = label, stringsAsFactors = FALSE)
  labels <- vapply(nodes, function(n) {
    switch(n$type,
           data = if (length(n$value) == 1) format(signif(n$value, 3)) else
             paste0("data (", paste(n$dim, collapse = " x "), ")"),
           variable = "variable",
           operation = greta_operation_name(as.character(n$op)[1]),
           distribution = as.character(if (is.null(n$label)) n$family else n$label)[1])
  }, character(1))
  seen_as <- visible[as.character(ids)]
  labels[!is.na(seen_as)] <- seen_as[!is.na(seen_as)]
  root_ids <- vapply(roots, function(n) n$id, numeric(1))
  named <- match(ids, root_ids)
  labels[!is.na(named)] <- names[named[!is.na(named)]]
  list(nodes = data.frame(id = ids, type = vapply(nodes, function(n) n$type, character(1)),
                          label = unname(labels), stringsAsFactors = FALSE),
       edges = edges)
}

# greta's names for operations (its op() names: add, multiply, ...) where
# the engine's differ; other operations by the function the user called.
greta_operation_name <- function(op) {
  names <- c(add = "add", sub = "subtract", neg = "minus", mul = "multiply", div = "divide",
             pow = "power", mod = "modulo", idiv = "integer divide",
             matmul = "matrix multiply", gather = "extract", gather_rows = "extract",
             rowsum = "rowSums", colsum = "colSums", sum = "sum", concat = "c",
             transpose = "transpose", greater = "compare", greater_equal = "compare",
             equal = "compare")
  if (op %in% names(names)) names[[op]] else op
}

# Each node's layer: one below the lowest of the nodes with an edge to it, in
# topological order (Kahn's; the graph is acyclic: a distribution's
# parameters never depend on its target); then a node with no incoming edge
# (data, a constant) moves down to just above the first node it feeds.
graph_layers <- function(ids, edges) {
  n <- length(ids)
  from <- match(edges$from, ids)
  to <- match(edges$to, ids)
  waiting <- tabulate(to, n)
  out <- split(to, factor(from, levels = seq_len(n)))
  layer <- integer(n)
  queue <- integer(n)
  tail <- 0L
  for (k in which(waiting == 0L)) {
    tail <- tail + 1L
    queue[tail] <- k
  }
  head <- 0L
  while (head < tail) {
    head <- head + 1L
    k <- queue[head]
    for (j in out[[k]]) {
      if (layer[k] + 1L > layer[j]) layer[j] <- layer[k] + 1L
      waiting[j] <- waiting[j] - 1L
      if (waiting[j] == 0L) {
        tail <- tail + 1L
        queue[tail] <- j
      }
    }
  }
  for (k in which(tabulate(to, n) == 0L)) {
    if (length(out[[k]])) layer[k] <- base::min(layer[out[[k]]]) - 1L
  }
  layer
}

# x positions in (0, 1) within each layer, layer by layer from the top, each
# node placed by the mean x of the nodes with edges to it (fewer crossings);
# then once more, nodes without such edges placed by the nodes they feed.
layer_positions <- function(ids, layer, edges) {
  n <- length(ids)
  from <- match(edges$from, ids)
  to <- match(edges$to, ids)
  preds <- split(from, factor(to, levels = seq_len(n)))
  succs <- split(to, factor(from, levels = seq_len(n)))
  x <- seq_len(n) / (n + 1)
  for (pass in 1:2) {
    for (members in split(seq_len(n), layer)) {  # layers in increasing order
      centre <- vapply(members, function(k) {
        p <- preds[[k]]
        if (length(p)) return(mean(x[p]))
        if (pass == 2L && length(succs[[k]])) return(mean(x[succs[[k]]]))
        x[k]
      }, numeric(1))
      members <- members[order(centre, members)]
      x[members] <- seq_along(members) / (length(members) + 1)
    }
  }
  x
}

graph_heights <- function(layer) {
  n <- base::max(layer) + 1L
  if (n == 1L) return(rep(0.5, length(layer)))
  1 - layer / (n - 1) * 0.9 - 0.05
}
