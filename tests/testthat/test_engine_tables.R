# The engine's tables (ops.def, distributions.def, installed with the package
# under include/lockstep) are the single source of its ops and families: R must
# reach every op and know every family, so that an op or family added to a
# table without its R side fails here.

# The rows of one of the engine's tables: a data frame of its columns.
engine_table <- function(file, macro, columns) {
  path <- system.file("include", "lockstep", file, package = "lockstep")
  expect_true(nzchar(path), info = paste(file, "is installed"))
  rows <- grep(paste0("^", macro, "\\("), readLines(path), value = TRUE)
  fields <- strsplit(sub("\\)\\s*$", "", sub(paste0("^", macro, "\\("), "", rows)), ",\\s*")
  expect_true(all(lengths(fields) == length(columns)), info = file)
  table <- as.data.frame(do.call(rbind, fields), stringsAsFactors = FALSE)
  names(table) <- columns
  table
}

# The ops of the IR that R lowers the given greta arrays to (every node the
# arrays depend on), as model() lowers them: multivariate distributions and
# mixtures expanded into terms of ops.
lowered_ops <- function(...) {
  roots <- lapply(list(...), lockstep:::get_node)
  nodes <- lockstep:::collect_dag(roots)
  if (lockstep:::expand_multivariate(nodes)) nodes <- lockstep:::collect_dag(roots)
  nodes <- Filter(Negate(lockstep:::is_multivariate), nodes)
  vapply(lockstep:::lower_dag(nodes)$ir$nodes, function(n) n$op, character(1))
}

test_that("ops.def and distributions.def are read from the installed headers", {
  ops <- engine_table("ops.def", "LS_OP", c("name", "arity", "family", "alignment"))
  expect_gt(nrow(ops), 70)
  expect_true(all(ops$alignment %in% c("rows", "global")))
  expect_true(all(c("greater", "greater_equal", "equal") %in% ops$name[ops$alignment == "rows"]))
  families <- engine_table("distributions.def", "LS_DIST",
                           c("name", "n_params", "continuous", "tile"))
  expect_gt(nrow(families), 25)
  expect_true(all(families$tile %in% c("true", "false")))
})

test_that("every unary and binary op of ops.def is reached from R's own map of it", {
  ops <- engine_table("ops.def", "LS_OP", c("name", "arity", "family", "alignment"))
  x <- variable(dim = c(2, 3))
  # unary: R's Math functions of the same name, the link functions, unary minus
  unary_map <- c(setdiff(lockstep:::math_functions, lockstep:::cumulative_functions),
                 lockstep:::link_functions)
  for (op in ops$name[ops$family == "unary"]) {
    if (op == "neg") {
      expect_identical(lockstep:::get_node(-x)$op, "neg")
      next
    }
    expect_true(op %in% unary_map, info = paste("unary op", op, "has no R function"))
    if (!op %in% unary_map) next
    y <- do.call(op, list(x), envir = asNamespace("lockstep"))
    expect_identical(lockstep:::get_node(y)$op, op, info = op)
  }
  # binary: R's arithmetic operators, comparisons, atan2() and mixture()'s
  # log_add_exp
  binary_calls <- list(
    greater = function(a, b) a > b, greater_equal = function(a, b) a >= b,
    equal = function(a, b) a == b, atan2 = function(a, b) atan2(a, b),
    log_add_exp = function(a, b) lockstep:::log_add_exp(a, b)
  )
  for (symbol in names(lockstep:::arithmetic_operators)) {
    op <- lockstep:::arithmetic_operators[[symbol]]
    binary_calls[[op]] <- local({
      s <- symbol
      function(a, b) get(s, envir = baseenv())(a, b)
    })
  }
  binary_ops <- ops$name[ops$family == "binary"]
  expect_setequal(names(binary_calls), binary_ops)
  for (op in intersect(binary_ops, names(binary_calls))) {
    y <- binary_calls[[op]](x, variable(dim = c(2, 3)))
    expect_identical(lockstep:::get_node(y)$op, op, info = op)
  }
})

test_that("every other op of ops.def is what some R function lowers to", {
  ops <- engine_table("ops.def", "LS_OP", c("name", "arity", "family", "alignment"))
  x <- variable(dim = c(3, 2))
  m <- variable(dim = c(3, 3))
  v <- variable(dim = 3)
  y <- as_data(c(1, 2, 3))
  distribution(y) <- mixture(normal(v, 1), normal(0, 2), weights = c(0.5, 0.5))
  reached <- unique(c(
    lowered_ops(sum(x), rowSums(x), colSums(x), m %*% v, t(x), x[1:2], x[c(1, 3), ]),
    lowered_ops(max(x), min(x), prod(x), cumsum(x), cumprod(x), cummax(x), cummin(x)),
    lowered_ops(c(x, v), chol(m), chol2inv(m), solve(m, v), backsolve(m, v),
                forwardsolve(m, v), eigen(m)$values),
    lowered_ops(tapply(v, c(1, 1, 2), "sum"), tapply(v, c(1, 1, 2), "max"),
                tapply(v, c(1, 1, 2), "min"), tapply(v, c(1, 1, 2), "prod")),
    # data, parameters, a likelihood's density and a mixture's logpdf
    lowered_ops(y, v)
  ))
  # rowdot_rows is the planner's fusion of rowSums(X * b[g, ]) (and of an
  # added X %*% beta): no R function lowers to it; the Catch2 tests of the
  # planner cover it
  planner_only <- "rowdot_rows"
  others <- setdiff(ops$name[!ops$family %in% c("unary", "binary")], planner_only)
  for (op in others) expect_true(op %in% reached, info = paste("op", op, "is not reached from R"))
  expect_true(all(setdiff(reached, c("neg", ops$name[ops$family %in% c("unary", "binary")])) %in%
                    ops$name))
})

test_that("R can draw from every family of distributions.def", {
  families <- engine_table("distributions.def", "LS_DIST",
                           c("name", "n_params", "continuous", "tile"))
  # terms that are not distributions: a constrained variable's log Jacobian and
  # the multivariate densities R builds from ops
  internal <- c("log_jacobian", "target")
  r_families <- lockstep:::r_families
  expect_setequal(names(r_families), setdiff(families$name, internal))
  for (k in seq_len(nrow(families))) {
    name <- families$name[k]
    if (name %in% internal || is.null(r_families[[name]])) next
    entry <- r_families[[name]]
    expect_true("r" %in% names(entry), info = name)
    # (log densities are the engine's alone: log_lik() traces its logpdf op)
    expect_false("d" %in% names(entry), info = name)
    # continuous families are truncatable: their distribution and quantile
    # functions serve inverse-CDF draws between the bounds
    if (families$continuous[k] == "true") {
      expect_true(all(c("p", "q") %in% names(entry)), info = name)
    } else {
      expect_false(any(c("p", "q") %in% names(entry)), info = name)
    }
  }
})
