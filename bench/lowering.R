# Issue 5's lowering benchmark: how long R takes to build, lower and evaluate
# a model of many greta-array operations.
#
# greta's model() is quadratic in the number of operations a loop creates
# (greta issues #112 and #211: an AR(1) process written as a loop over
# `x[t] <- rho * x[t - 1] + eps[t]` took minutes at a few thousand steps).
# Issue 5 asks that a model of 10^4 operations be built and lowered by
# lockstep in under a second. Two loops are timed, each at about 10^3, 3x10^3
# and 10^4 operations (an operation: a node of the model's IR that is computed
# from others, i.e. not data, a variable or a density):
#
#   arith   x <- x + mu and x <- x * 0.999 alternately, on a vector variable
#           and a scalar one (one operation per statement)
#   ar1     the AR(1) loop of greta's issues on a vector of zeros():
#           x[t] <- rho * x[t - 1] + eps[t] (six operations per step: two
#           element gathers, the product, the sum, and the concat and gather
#           of the replacement)
#
# For each it prints the time to run the R loop (building greta arrays),
# model() (walking, checking and lowering the DAG, and building the engine)
# and the first log density and gradient of one chain
# (lockstep:::model_log_density), each the median of `--reps` runs.
#
#   Rscript bench/lowering.R [--reps 3] [--sizes 1e3,3e3,1e4]
#
# Needs an installed lockstep (see bench/README.md).

suppressPackageStartupMessages(library(lockstep))

args <- commandArgs(trailingOnly = TRUE)
arg_value <- function(name, default) {
  k <- match(paste0("--", name), args)
  if (is.na(k)) default else args[[k + 1L]]
}
reps <- as.integer(arg_value("reps", "3"))
sizes <- as.numeric(strsplit(arg_value("sizes", "1e3,3e3,1e4"), ",")[[1]])

# The loops: each returns the greta arrays that model() traces, with a
# likelihood attached, after creating about `n_ops` operations.
build_arith <- function(n_ops) {
  x <- variable(dim = 5)
  mu <- variable()
  acc <- x
  for (i in seq_len(n_ops)) {
    acc <- if (i %% 2 == 1) acc + mu else acc * 0.999
  }
  y <- as_data(c(0.1, -0.3, 0.5, 0.2, 0))
  distribution(y) <- normal(acc, 1)
  list(x = x, mu = mu)
}

build_ar1 <- function(n_ops) {
  steps <- max(2L, round(n_ops / 6))
  rho <- variable(lower = -1, upper = 1)
  eps <- variable(dim = steps)
  x <- zeros(steps)
  x[1] <- eps[1]
  for (t in 2:steps) x[t] <- rho * x[t - 1] + eps[t]
  y <- as_data(sin(seq_len(steps)))
  distribution(y) <- normal(x, 1)
  list(rho = rho, eps = eps)
}

count_operations <- function(m) {
  ops <- vapply(m$ir$nodes, function(n) n$op, character(1))
  sum(!ops %in% c("data", "param", "density"))
}

time_one <- function(build, n_ops) {
  t_build <- system.time(arrays <- build(n_ops))[["elapsed"]]
  t_model <- system.time(m <- do.call(model, arrays))[["elapsed"]]
  free <- matrix(stats::rnorm(m$n_free, sd = 0.1), 1)
  t_density <- system.time(
    d <- lockstep:::model_log_density(m, free, gradient = TRUE)
  )[["elapsed"]]
  stopifnot(is.finite(d$log_density), all(is.finite(d$gradient)))
  c(ops = count_operations(m), nodes = length(m$ir$nodes), build = t_build, model = t_model,
    density = t_density)
}

rows <- list()
for (loop in c("arith", "ar1")) {
  build <- get(paste0("build_", loop))
  for (n in sizes) {
    runs <- vapply(seq_len(reps), function(r) { gc(); time_one(build, n) }, numeric(5))
    med <- apply(runs, 1, stats::median)
    rows[[length(rows) + 1L]] <- data.frame(
      loop = loop, operations = med[["ops"]], ir_nodes = med[["nodes"]],
      build_s = round(med[["build"]], 3), model_s = round(med[["model"]], 3),
      first_density_s = round(med[["density"]], 3)
    )
  }
}
result <- do.call(rbind, rows)
cat(sprintf("lockstep %s, R %s, %d reps (medians), %s\n",
            utils::packageVersion("lockstep"), getRversion(), reps, Sys.time()))
print(result, row.names = FALSE)
invisible(result)
