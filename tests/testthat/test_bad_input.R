# Bad models and bad input fail early with messages that name the problem, and
# the engine's errors reach R as R errors rather than crashes.

test_that("parameters of incompatible dimensions are refused", {
  expect_error(normal(variable(dim = 3), variable(dim = 2)),
               "parameters of normal\\(\\) have incompatible dimensions.*`mean` is 3 x 1.*`sd` is 2 x 1")
  expect_error(student(1, variable(dim = 3), variable(dim = c(3, 2))),
               "parameters of student\\(\\) have incompatible dimensions")
  expect_error(normal(variable(dim = 3), 1, dim = 4),
               "dimensions of `mean` of normal\\(\\) \\(3 x 1\\) do not match `dim` \\(4 x 1\\)")
})

test_that("a distribution whose dimensions differ from its data is refused", {
  theta <- variable(dim = 3)
  y <- rnorm(5)
  expect_error(distribution(y) <- normal(theta, 1),
               "different dimensions.*must have dimension 5 x 1 or 1 x 1, but has dimension 3 x 1")
  z <- matrix(0, 2, 3)
  expect_error(distribution(z) <- normal(0, 1, dim = c(3, 2)), "different dimensions")
})

test_that("non-conformable matrix products are refused", {
  expect_error(variable(dim = c(2, 2)) %*% variable(dim = c(3, 1)),
               "non-conformable greta arrays in `%\\*%`: 2 x 2 and 3 x 1")
  expect_error(matrix(1, 2, 2) %*% variable(dim = 3), "non-conformable")
})

test_that("data must be numeric and finite", {
  expect_error(as_data("a"), "must be numeric or logical.*not character")
  expect_error(as_data(list()), "must be numeric or logical.*not list")
  expect_error(as_data(list(1, 2)), "must be numeric or logical")
  expect_error(as_data(factor(c("a", "b"))), "must be numeric or logical")
  expect_error(as_data(data.frame(a = 1:2, b = c("x", "y"))), "non-numeric columns \\(b\\)")
  expect_error(as_data(numeric(0)), "has no elements")
  expect_error(as_data(c(1, NA, 3)), "missing values")
  expect_error(as_data(c(1, NaN)), "missing values")
  expect_error(as_data(c(1, Inf)), "infinite values")
  expect_error(as_data(matrix(c(1, -Inf), 1)), "infinite values")
  # the argument is named in the message
  bad_values <- c(2, NA)
  expect_error(as_data(bad_values), "`bad_values` contains missing values")
  # as data on the left of distribution(), and as parameters
  y <- c(0.5, NA)
  expect_error(distribution(y) <- normal(0, 1),
               "in `distribution\\(y\\) <-`, `y` contains missing values")
  y <- c("a", "b")
  expect_error(distribution(y) <- normal(0, 1), "in `distribution\\(y\\) <-`, `y` must be numeric")
  expect_error(normal(c(0, Inf), 1), "`mean` contains infinite values")
  # an operand of an operator as the user wrote it, not R's internal e1 and e2
  # (issue 38)
  x <- normal(0, 1)
  weights <- c(1, NA)
  expect_error(x + weights, "^`weights` contains missing values \\(NA\\)")
  expect_error(c(NA, 2) * x, "^`c\\(NA, 2\\)` contains missing values")
  expect_error(x > weights, "^`weights` contains missing values")
  expect_error(x %*% matrix(c(1, NA), 1), "^`matrix\\(c\\(1, NA\\), 1\\)` contains missing values")
  expect_error(x - c(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, NA),
               "^`c\\(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, \\.\\.\\.` contains missing")
  expect_error(normal(0, "a"), "`sd` must be numeric or logical")
  # data frames of numbers are fine
  expect_equal(dim(as_data(data.frame(a = 1:3, b = c(0.5, 1, 2)))), c(3L, 2L))
  expect_equal(dim(as_data(c(TRUE, FALSE))), c(2L, 1L))
})

test_that("a variable or operation cannot become data", {
  expect_error(as_data(variable()), "cannot convert a greta array of type 'variable' to data")
  expect_error(as_data(variable() + 1), "type 'operation'")
  x <- as_data(1:3)
  expect_identical(as_data(x), x)
})

test_that("bad bounds of variables are refused", {
  expect_error(variable(lower = 1, upper = 0), "`lower` must be less than `upper`")
  expect_error(variable(lower = 1, upper = 1), "`lower` must be less than `upper`")
  expect_error(variable(lower = "a"), "`lower` must be a number, or one number per element")
  expect_error(variable(lower = NA), "`lower` must be a number, or one number per element")
  expect_error(variable(upper = numeric()), "`upper` must be a number, or one number per element")
  expect_error(variable(upper = as_data(1)), "`upper` must be R numbers, not a greta array")
  # bounds per element (greta's rules)
  expect_error(variable(lower = 0:2, upper = 1:2),
               "`lower` and `upper` have incompatible dimensions: 3 x 1 and 2 x 1")
  expect_error(variable(lower = c(0, 2), upper = c(1, 2)),
               "for every element, but element 2 has lower = 2 and upper = 2")
  expect_error(variable(lower = c(0, 1), dim = 3),
               "`lower` has 2 values, but `dim` \\(3 x 1\\) has 3 elements")
  expect_equal(dim(variable(upper = c(1, 2))), c(2L, 1L))
  expect_equal(dim(variable(lower = matrix(0:5, 2))), c(2L, 3L))
  expect_equal(dim(variable(lower = c(0, 1), upper = 5, dim = c(1, 2))), c(1L, 2L))
  expect_error(variable(dim = 0), "`dim` must be a vector of positive whole numbers")
  expect_error(variable(dim = 1.5), "`dim` must be a vector of positive whole numbers")
  expect_error(normal(0, 1, dim = -2), "`dim` must be a vector of positive whole numbers")
})

test_that("bad truncations are refused", {
  expect_error(normal(0, 1, truncation = c(1, 0)), "`truncation` of normal\\(\\) must have lower < upper")
  expect_error(cauchy(0, 1, truncation = c(2, 2)), "must have lower < upper")
  expect_error(normal(0, 1, truncation = 1), "`truncation` of normal\\(\\) must be a vector of two numbers")
  expect_error(normal(0, 1, truncation = c(0, NA)), "must be a vector of two numbers")
  expect_error(exponential(1, truncation = c(-1, Inf)),
               "`truncation` of exponential\\(\\) must lie within its support")
})

test_that("constant parameters out of their range are refused", {
  expect_error(normal(0, -1), "`sd` of normal\\(\\) must be positive")
  expect_error(normal(0, 0), "`sd` of normal\\(\\) must be positive")
  expect_error(cauchy(0, c(1, -2)), "`scale` of cauchy\\(\\) must be positive")
  expect_error(student(-1, 0, 1), "`df` of student\\(\\) must be positive")
  expect_error(student(3, 0, -1), "`sigma` of student\\(\\) must be positive")
  expect_error(exponential(-0.5), "`rate` of exponential\\(\\) must be positive")
  expect_error(bernoulli(1.5), "`prob` of bernoulli\\(\\) must be between 0 and 1")
})

test_that("bernoulli data must be 0 or 1", {
  y <- c(0, 1, 2)
  expect_error(distribution(y) <- bernoulli(0.5), "must be 0 or 1")
  y <- c(0, 0.5)
  expect_error(distribution(y) <- bernoulli(0.5), "must be 0 or 1")
})

test_that("data outside a distribution's support is refused", {
  y <- c(1, -1)
  expect_error(distribution(y) <- exponential(1),
               "outside the support of exponential\\(\\) \\(\\[0, Inf\\)\\)")
  y <- c(0.5, 3)
  expect_error(distribution(y) <- normal(0, 1, truncation = c(0, 2)),
               "outside the support of normal\\(\\) \\(\\[0, 2\\]\\)")
  # counts are whole numbers from 0 (issue 38: it said "(0, Inf)")
  y <- c(-1, 2)
  expect_error(distribution(y) <- poisson(1),
               "outside the support of poisson\\(\\) \\(0, 1, 2, \\.\\.\\.\\)", fixed = FALSE)
  expect_equal(lockstep:::format_support(c(0, 10), TRUE), "0, 1, ..., 10")
  expect_equal(lockstep:::format_support(c(0, 1), TRUE), "0, 1")
  expect_equal(lockstep:::format_support(c(-Inf, Inf), FALSE), "(-Inf, Inf)")
})

test_that("bernoulli() works with its default arguments", {
  # bernoulli() takes no truncation: it must not refuse its own default bounds
  expect_s3_class(bernoulli(0.5), "greta_array")
  p <- variable(lower = 0, upper = 1)
  y <- c(0, 1, 1)
  expect_silent(distribution(y) <- bernoulli(p))
  expect_s3_class(model(p), "greta_model")
})

test_that("distributions can only be assigned to data", {
  v <- variable()
  expect_error(distribution(v) <- normal(0, 1), "distributions can only be assigned to data")
  w <- variable() * 2
  expect_error(distribution(w) <- normal(0, 1), "type 'operation'")
  y <- c(1, 2)
  expect_error(distribution(y) <- 3, "must be a distribution such as normal")
  expect_error(distribution(y) <- variable(), "must be a distribution")
})

# A replacement function sees its left-hand side only as R's `*tmp*`, so the
# messages name the argument's role instead.
test_that("errors from distribution<- name the left-hand side, not R's `*tmp*`", {
  v <- variable()
  msg <- tryCatch(distribution(v) <- normal(0, 1), error = conditionMessage)
  expect_match(msg, "can only be assigned to data")
  expect_no_match(msg, "*tmp*", fixed = TRUE)
  expect_match(msg, "left-hand side of `distribution(y) <-`", fixed = TRUE)
  y <- as_data(1)
  distribution(y) <- normal(0, 1)
  msg <- tryCatch(distribution(y) <- normal(0, 1), error = conditionMessage)
  expect_match(msg, "already has a distribution")
  expect_no_match(msg, "*tmp*", fixed = TRUE)
})

test_that("a distribution cannot be used twice, nor data given two distributions", {
  y <- as_data(c(1, 2))
  z <- as_data(c(3, 4))
  d <- normal(0, 1)
  distribution(y) <- d
  expect_error(distribution(z) <- d)
  expect_error(distribution(y) <- normal(0, 1), "already has a distribution")
  # a prior that is used in the model cannot also be a likelihood
  mu <- normal(0, 1)
  mean <- mu * 2
  expect_error(distribution(z) <- mu, "already been used elsewhere")
})

test_that("reusing a distribution says that it has already been used", {
  # the message for a distribution that was already assigned to other data
  # should say so, not that the right-hand side is not a distribution
  y <- as_data(c(1, 2))
  z <- as_data(c(3, 4))
  d <- normal(0, 1)
  distribution(y) <- d
  expect_error(distribution(z) <- d, "already been used elsewhere")
})

test_that("model() refuses models it cannot sample", {
  expect_error(model(variable()), "none of the greta arrays in the model are associated with a probability density")
  expect_error(model(variable() * 3), "probability density")
  expect_error(model(1), "the arguments of model\\(\\) must be greta arrays, but argument 1 is a numeric")
  mu <- normal(0, 1)
  expect_error(model(mu, "a"), "argument 2 is a character")
  # with no arguments, the calling environment's greta arrays: here none
  expect_error(local({
    y <- as_data(1)
    model()
  }), "given no greta arrays and found none \\(other than data\\)")
  expect_error(model(mu, mu), "distinct names")
  # disjoint graphs: one with variables needs a density (it would be
  # improper), one of data alone only adds a constant
  a <- uniform(0, 1)
  b <- normal(a, 2)
  cc <- variable()
  expect_error(model(a, b, cc),
               "2 disjoint graphs, and the one of `cc` has variables but no probability density")
  e <- cc * 2
  expect_error(model(a, cc, e), "the one of `cc`, `e` has variables")
  d <- as_data(c(0.1, -0.4, 0.3))
  distribution(d) <- normal(0, 1)
  expect_s3_class(model(a, d), "greta_model")
  expect_s3_class(model(a, b), "greta_model")
  expect_error(model(mu, precision = "quad"), "should be one of")
  # data with a distribution but nothing to sample
  y <- as_data(c(0.1, 0.2))
  distribution(y) <- normal(0, 1)
  expect_error(model(y), "no variables")
})

test_that("model() refuses a discrete variable", {
  p <- bernoulli(0.5)
  y <- c(0.2, 1.3)
  distribution(y) <- normal(p, 1)
  expect_error(model(p), "discrete variable \\(bernoulli\\(\\)\\)")
})

test_that("a C++ exception reaches R as an R error", {
  m <- eight_schools_model()
  engine <- lockstep:::model_engine(m)
  expect_error(lockstep:::ls_engine_log_density(engine, matrix(0, 2, 3), TRUE, compute("cpu")),
               "the state has 3 columns but the model has 10 free parameters")
  expect_error(lockstep:::model_log_density(m, matrix(0, 1, 11)), "11 columns")
  expect_error(lockstep:::ls_engine_log_density(engine, matrix(0, 1, 10), TRUE, compute("tpu")),
               "unknown backend 'tpu'")
  expect_error(lockstep:::ls_engine_values(engine, matrix(0, 1, 10), 999L, compute("cpu")),
               "node id out of range")
  # a malformed IR is refused by the engine's checks
  ir <- m$ir
  ir$nodes[[1]]$op <- "no_such_op"
  expect_error(lockstep:::ls_engine_new(ir), "unknown op 'no_such_op'")
  ir <- m$ir
  ir$n_free <- 3
  expect_error(lockstep:::ls_engine_new(ir), "slice outside the free state")
  # and the engine still works afterwards
  expect_true(is.finite(lockstep:::model_log_density(m, rep(0, 10))$log_density))
})

test_that("a refused distribution() leaves nothing behind in the model", {
  # the user corrects the data and runs the line again: the refused
  # distribution must not stay attached to its parameters
  mu <- variable()
  y <- c(0, 1, 1, 0.5)
  expect_error(distribution(y) <- bernoulli(ilogit(mu)), "must be 0 or 1")
  y <- c(0, 1, 1, 0)
  distribution(y) <- bernoulli(ilogit(mu))
  m <- model(mu)
  expect_equal(m$n_free, 1)
  expect_equal(length(m$likelihood), 1)
  nu <- variable()
  z <- c(-1, 2, 3)
  expect_error(distribution(z) <- lognormal(nu, 1), "support|positive|range")
  z <- c(1, 2, 3)
  distribution(z) <- lognormal(nu, 1)
  m <- model(nu)
  expect_equal(m$n_free, 1)
  # the log density is the one likelihood's (and nu's flat prior)
  free <- matrix(0.3, 1, 1)
  expect_equal(lockstep:::model_log_density(m, free, gradient = FALSE)$log_density,
               sum(dlnorm(z, 0.3, 1, log = TRUE)), tolerance = 1e-12)
  # a distribution of the wrong dimensions, and one given to a variable, too
  w <- variable()
  d <- c(1, 2)
  expect_error(distribution(d) <- normal(rep(w, 3), 1), "different dimensions")
  expect_error(distribution(w) <- normal(nu, 1), "only be assigned to data")
  expect_equal(model(nu)$n_free, 1)
})

test_that("counts too large for R's integers are refused by name", {
  m <- eight_schools_model()
  expect_error(mcmc(m, n_samples = 1e10, verbose = FALSE), "`n_samples` must be at most 2147483647")
  expect_error(mcmc(m, warmup = 3e9, verbose = FALSE), "`warmup` must be at most")
})

test_that("more threads than cores are not used, with a warning as greta gives", {
  cores <- parallel::detectCores(logical = TRUE)
  skip_if(is.na(cores))
  expect_warning(co <- cpu_only(threads = cores + 3),
                 paste0(cores + 3, " threads were requested, but only ", cores))
  expect_equal(co$threads, cores)
  expect_silent(co <- cpu_only(threads = 1))
  expect_equal(co$threads, 1L)
})

test_that("a saved and reloaded model rebuilds its engine, with a message", {
  set.seed(601)
  m <- eight_schools_model()
  free <- random_free(m, 3)
  before <- lockstep:::model_log_density(m, free)
  path <- tempfile(fileext = ".rds")
  on.exit(unlink(path), add = TRUE)
  saveRDS(m, path)
  reloaded <- readRDS(path)
  expect_true(lockstep:::ls_pointer_is_null(reloaded$engine$pointer))
  expect_message(after <- lockstep:::model_log_density(reloaded, free), "rebuilding the lockstep engine")
  expect_equal(after, before, tolerance = 1e-14)
  # rebuilt once: no second message
  expect_silent(lockstep:::model_log_density(reloaded, free))
  # and it samples
  expect_s3_class(mcmc(reloaded, n_samples = 10, warmup = 10, chains = 2, verbose = FALSE),
                  "greta_mcmc_list")
})

test_that("greta arrays saved in one R session and built on in another make a model", {
  # Node ids are unique across sessions: a new session counting from 1 again
  # gave its new nodes the ids of reloaded ones, and model() failed ("a
  # density term cannot be an input").
  path <- tempfile(fileext = ".rds")
  script <- tempfile(fileext = ".R")
  on.exit(unlink(c(path, script)), add = TRUE)
  writeLines(c(
    "suppressMessages(library(lockstep))",
    "x <- c(0.3, -1.2, 0.8, 2.1)",
    "mu <- normal(0, 1)",
    "sigma <- lognormal(0, 1)",
    "distribution(x) <- normal(mu, sigma)",
    "m <- model(mu, sigma)",
    sprintf("saveRDS(list(m = m, mu = mu, sigma = sigma, x = x), '%s')", path)
  ), script)
  status <- system2(file.path(R.home("bin"), "Rscript"), script,
                    env = paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep)),
                    stdout = FALSE, stderr = FALSE)
  expect_equal(status, 0)
  saved <- readRDS(path)
  # new greta arrays in this session, joined to the saved ones
  y <- c(1.1, 0.4)
  distribution(y) <- normal(saved$mu, 1)
  m <- model(saved$mu, saved$sigma)
  expect_equal(m$n_free, 2)
  expect_equal(length(m$likelihood), 2)
  free <- matrix(0.2, 1, 2)  # mu = 0.2, log sigma = 0.2, whichever comes first
  want <- dnorm(0.2, 0, 1, log = TRUE) + dlnorm(exp(0.2), 0, 1, log = TRUE) + 0.2 +
    sum(dnorm(saved$x, 0.2, exp(0.2), log = TRUE)) + sum(dnorm(y, 0.2, 1, log = TRUE))
  expect_equal(lockstep:::model_log_density(m, free, gradient = FALSE)$log_density, want,
               tolerance = 1e-12)
  # the saved model itself still rebuilds and computes its own density
  old <- suppressMessages(lockstep:::model_log_density(saved$m, free, gradient = FALSE))
  expect_equal(old$log_density, want - sum(dnorm(y, 0.2, 1, log = TRUE)), tolerance = 1e-12)
})

test_that("calling the engine with a null or wrong pointer is an R error, not a crash", {
  m <- eight_schools_model()
  path <- tempfile(fileext = ".rds")
  on.exit(unlink(path), add = TRUE)
  saveRDS(m$engine$pointer, path)
  dead <- readRDS(path)
  expect_true(lockstep:::ls_pointer_is_null(dead))
  expect_error(lockstep:::ls_engine_log_density(dead, matrix(0, 1, 10), TRUE, compute("cpu")),
               "engine is no longer available")
  expect_error(lockstep:::ls_engine_values(dead, matrix(0, 1, 10), 0L, compute("cpu")),
               "no longer available")
  expect_error(lockstep:::ls_engine_log_density(NULL, matrix(0, 1, 10), TRUE, compute("cpu")),
               "expected an external pointer to a lockstep engine")
  expect_error(lockstep:::ls_engine_log_density(list(), matrix(0, 1, 10), TRUE, compute("cpu")),
               "pointer")
  expect_error(lockstep:::ls_sampler_run(dead, 1L, FALSE, 1L, 0L, integer(0), FALSE, TRUE),
               "sampler is no longer available")
  expect_true(lockstep:::ls_pointer_is_null(NULL))
  expect_false(lockstep:::ls_pointer_is_null(lockstep:::model_engine(m)))
})

test_that("the workflow's arguments are checked, with messages that name them", {
  set.seed(77)
  y <- rnorm(12)
  beta <- normal(0, 1, dim = 2)
  sigma <- exponential(1)
  distribution(y) <- normal(beta[1] + beta[2], sigma)
  m <- model(beta, sigma)
  # a matrix of the wrong shape, though of the right length
  expect_error(mcmc(m, initial_values = initials(beta = matrix(0.1, 1, 2)), n_samples = 10,
                    warmup = 10, verbose = FALSE),
               "initial values for `beta` have dimension 1 x 2, but `beta` has 2 x 1")
  expect_error(calculate(beta * 2, values = list(beta = matrix(1, 1, 2))),
               "value given for `beta` has dimension 1 x 2, but `beta` has 2 x 1")
  expect_equal(dim(calculate(beta * 2, values = list(beta = c(1, 2)))[[1]]), c(2L, 1L))
  expect_error(mcmc(m, one_by_one = "yes", verbose = FALSE), "`one_by_one` must be TRUE or FALSE")
  # diag_sd of the wrong length: the model's count of free parameters
  expect_error(mcmc(m, sampler = hmc(diag_sd = c(1, 2)), n_samples = 10, warmup = 10,
                    chains = 2, verbose = FALSE),
               "diag_sd has 2 values; it must have one value, one per free parameter \\(3\\), or one per chain and free parameter \\(2 x 3\\)")
  # draws indexed with [ lose the model: calculate() says so
  d <- mcmc(m, n_samples = 10, warmup = 10, chains = 2, verbose = FALSE)
  expect_error(calculate(sigma * 2, values = d[, "sigma"]), "an mcmc.list without its model")
  # a sampler prints the start of warmup's metric, not an internal flag
  out <- capture.output(print(nuts()))
  expect_true(any(grepl("diag_sd = from the gradient", out)))
  expect_false(any(grepl("diag_sd_from_gradient", out)))
  expect_true(any(grepl("diag_sd = 1", capture.output(print(nuts(diag_sd = 1))))))
})

test_that("distribution(y) <- twice on the same R numbers warns: a second likelihood R cannot see (issue 38)", {
  set.seed(383)
  y <- rnorm(10)
  mu <- normal(0, 1)
  s <- lognormal(0, 1)
  expect_no_warning(distribution(y) <- normal(mu, s))
  expect_warning(distribution(y) <- normal(mu, s),
                 "these data already have a distribution from an earlier `distribution\\(y\\) <-`")
  # the model holds both likelihoods: that is what the warning is about
  m <- model(mu, s)
  lp <- function(free) lockstep:::model_log_density(m, matrix(free, 1), gradient = FALSE)$log_density
  free <- c(0.3, log(1.5))
  one <- sum(dnorm(y, 0.3, 1.5, log = TRUE))
  priors <- dnorm(0.3, log = TRUE) + dlnorm(1.5, 0, 1, log = TRUE) + log(1.5)
  expect_equal(lp(free), 2 * one + priors, tolerance = 1e-10)
  # a script run again (new variables) and other data: no warning
  mu <- normal(0, 1)
  s <- lognormal(0, 1)
  expect_no_warning(distribution(y) <- normal(mu, s))
  z <- y + 1
  expect_no_warning(distribution(z) <- normal(mu, s))
  # another model of the same data, with other variables too
  p <- normal(0, 1)
  expect_no_warning(distribution(y) <- normal(mu + p, s))
  # a greta array keeps its distribution and refuses a second one
  w <- as_data(rnorm(5))
  distribution(w) <- normal(mu, 1)
  expect_error(distribution(w) <- normal(mu, 1), "already has a distribution")
})
