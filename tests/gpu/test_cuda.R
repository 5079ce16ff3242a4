# CUDA backend against R: every unary and binary op of ops.def, computed by the
# CUDA kernels (ls_cuda_elementwise) and by R, on random inputs and edge values.
#
# Run by hand where a GPU exists, from the repository root, with lockstep
# installed (built where configure found nvcc):
#   Rscript tests/gpu/test_cuda.R
# Exits non-zero when a test fails. On a machine without a device the CUDA
# tests are skipped, and the skips are reported.

if (!identical(Sys.getenv("TESTTHAT"), "true")) {
  # Run as a script: run this file under testthat and turn the result into an
  # exit status.
  args <- commandArgs(trailingOnly = FALSE)
  self <- sub("^--file=", "", grep("^--file=", args, value = TRUE))
  if (length(self) != 1L) self <- "tests/gpu/test_cuda.R"
  results <- as.data.frame(testthat::test_file(self, reporter = "summary"))
  bad <- results$failed > 0 | results$error
  cat(sprintf("\n%d passed, %d failed, %d skipped\n",
              sum(!bad & !results$skipped), sum(bad), sum(results$skipped & !bad)))
  quit(save = "no", status = if (any(bad)) 1L else 0L)
}

library(testthat)
library(lockstep)

cuda_elementwise <- get("ls_cuda_elementwise", envir = asNamespace("lockstep"))

# The op table, read from the installed headers so that an op added to ops.def
# without an R reference below fails here.
ops_table <- function() {
  path <- system.file("include", "lockstep", "ops.def", package = "lockstep")
  lines <- grep("^LS_OP\\(", readLines(path), value = TRUE)
  fields <- regmatches(lines, regexec("^LS_OP\\(([a-z0-9_]+), *(-?[0-9]+), *([a-z_]+)[,)]", lines))
  data.frame(
    name = vapply(fields, `[`, "", 2L),
    family = vapply(fields, `[`, "", 4L),
    stringsAsFactors = FALSE
  )
}

# R's own function for each op (base R and stats), and a tolerance for each:
# the CUDA kernels run the same LS_HD code as the CPU (math/unary.hpp,
# math/binary.hpp), whose results differ from glibc's and R's in the last
# bits for the special functions and the trigonometry of large arguments.
unary_reference <- list(
  neg = function(x) -x, exp = exp, log = log, log1p = log1p, sqrt = sqrt,
  ilogit = stats::plogis, abs = abs, sign = sign, ceiling = ceiling, floor = floor,
  round = round, trunc = trunc, expm1 = expm1, log10 = log10, log2 = log2,
  cos = cos, sin = sin, tan = tan, acos = acos, asin = asin, atan = atan,
  cosh = cosh, sinh = sinh, tanh = tanh, acosh = acosh, asinh = asinh, atanh = atanh,
  cospi = cospi, sinpi = sinpi, tanpi = tanpi,
  lgamma = lgamma, digamma = digamma, trigamma = trigamma,
  iprobit = stats::pnorm, icloglog = function(x) -expm1(-exp(x)), icauchit = stats::pcauchy,
  log1pe = function(x) pmax(x, 0) + log1p(exp(-abs(x)))
)
special <- c("tan", "tanpi", "lgamma", "digamma", "trigamma", "acosh", "asinh", "atanh",
             "iprobit", "icauchit", "cos", "sin", "cospi", "sinpi")

binary_reference <- list(
  add = `+`, sub = `-`, mul = `*`, div = `/`, pow = `^`, mod = `%%`, idiv = `%/%`,
  atan2 = atan2, log_add_exp = function(a, b) pmax(a, b) + log1p(exp(-abs(a - b))),
  greater = function(a, b) as.numeric(a > b), greater_equal = function(a, b) as.numeric(a >= b),
  equal = function(a, b) as.numeric(a == b)
)

# Where R's value is finite the GPU's equals it to `tolerance`; where R's is
# not (NaN, +-Inf: log(-1), digamma(-2), exp(800)) the GPU's is not finite
# either.
expect_op_matches <- function(got, want, tolerance, label) {
  finite <- is.finite(want)
  expect_equal(got[finite], want[finite], tolerance = tolerance, label = label)
  expect_true(all(!is.finite(got[!finite])), label = paste(label, "where R's is not finite"))
}

skip_without_device <- function() {
  info <- backend_info()
  if (!isTRUE(info$cuda_built)) skip("lockstep was built without CUDA")
  if (nrow(info$devices) == 0L) skip("no CUDA device is visible")
}

# NA is left out: GPUs return a canonical NaN, not R's NA payload.
edge <- c(0, -0, 1, -1, 0.5, -0.5, 1e-300, -1e-300, 1e300, -1e300, 30, -30,
          700, -700, 800, -800, Inf, -Inf, NaN)

test_that("backend_info describes the build", {
  info <- backend_info()
  expect_s3_class(info, "lockstep_backend_info")
  expect_type(info$cuda_built, "logical")
  expect_named(info$devices, c("id", "name", "compute_capability", "memory_gb",
                               "multiprocessors"))
  expect_output(print(info), "^lockstep [0-9.]+ backends: cpu \\(always\\), cuda: ")
})

test_that("every unary and binary op has an R reference here", {
  ops <- ops_table()
  expect_true(nrow(ops) > 0)
  expect_setequal(ops$name[ops$family == "unary"], names(unary_reference))
  expect_setequal(ops$name[ops$family == "binary"], names(binary_reference))
})

test_that("unary ops on the GPU match R", {
  skip_without_device()
  set.seed(1)
  x <- c(stats::rnorm(5000, sd = 3), stats::runif(1000, 0, 100), edge)
  for (op in names(unary_reference)) {
    expected <- suppressWarnings(unary_reference[[op]](x))
    expect_op_matches(cuda_elementwise(op, x), expected,
                      if (op %in% special) 1e-10 else 1e-13, op)
  }
})

test_that("binary ops on the GPU match R", {
  skip_without_device()
  set.seed(2)
  n <- 5000
  a <- c(stats::rnorm(n, sd = 10), edge, edge)
  b <- c(stats::rnorm(n, sd = 10), edge, rev(edge))
  for (op in names(binary_reference)) {
    expected <- suppressWarnings(binary_reference[[op]](a, b))
    # (where R's value is NA, a comparison with NaN, the GPU's is NaN: not finite)
    expect_op_matches(cuda_elementwise(op, a, b), expected, 1e-13, op)
  }
})

test_that("long vectors use every block and lane of the launch", {
  skip_without_device()
  n <- 256 * 65536 + 12345 # more elements than one lane per element covers
  x <- seq_len(n) / n
  expect_equal(cuda_elementwise("neg", x), -x)
  expect_equal(cuda_elementwise("mul", x, x), x * x)
  expect_identical(cuda_elementwise("exp", numeric(0)), numeric(0))
})

test_that("without a device the kernels fail clearly", {
  info <- backend_info()
  if (!isTRUE(info$cuda_built)) {
    expect_error(cuda_elementwise("exp", 1), "built without CUDA")
  } else if (nrow(info$devices) == 0L) {
    expect_error(cuda_elementwise("exp", 1), "no CUDA device is visible")
  } else {
    skip("a CUDA device is visible")
  }
})

test_that("bad calls fail clearly", {
  # Checked before any device is touched, so this runs on any build.
  expect_error(cuda_elementwise("exp", 1, 2), "unary")
  expect_error(cuda_elementwise("add", 1), "binary")
  expect_error(cuda_elementwise("add", 1:3 + 0, 1:2 + 0), "same length")
  expect_error(cuda_elementwise("sum", 1), "not an elementwise")
  expect_error(cuda_elementwise("no_such_op", 1), "unknown op")
})
