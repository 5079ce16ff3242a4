# What greta's own tests and bug reports expect of a greta user's script, run
# with lockstep (issue 52): each case is greta's snippet and greta's result.

test_that("model() and simulate() skip a caller's missing and unforced arguments", {
  # greta's bug report: model() inside a function forced every object there
  build <- function(y, offset) {
    mu <- normal(0, 1)
    distribution(y) <- normal(mu, 1)
    model(mu)
  }
  fit <- function(y, offset) build(y, offset)
  m <- fit(rnorm(3))
  expect_s3_class(m, "greta_model")
  expect_equal(m$n_free, 1)
  # model() with no arguments takes the caller's greta arrays, and none of the
  # arguments it has not used (evaluating `side` would fail the test)
  build_all <- function(y, side = stop("an unused argument was evaluated")) {
    mu <- normal(0, 1)
    distribution(y) <- normal(mu, 1)
    model()
  }
  expect_s3_class(build_all(c(0.5, 1)), "greta_model")
  # an argument that has been used is still seen: its greta array is found
  given <- function(mu) {
    distribution(y2) <- normal(mu, 1)
    force(mu)
    model()
  }
  y2 <- as_data(c(0.1, 0.2))
  expect_equal(given(normal(0, 1))$n_free, 1)
  # greta's report: simulate() in a function forced its unused `seed`
  sim <- function(n, seed) {
    mu <- normal(0, 1)
    simulate(model(mu), nsim = n)
  }
  out <- sim(5)
  expect_length(out$mu, 5)
})

test_that("run lengths that are not whole are cut to their whole part, as greta's", {
  mu <- normal(0, 1)
  m <- model(mu)
  d <- mcmc(m, n_samples = 20.7, warmup = 10.5, chains = 2, verbose = FALSE)
  expect_identical(coda::niter(d), 20L)
  more <- extra_samples(d, 10.5, verbose = FALSE)
  expect_identical(coda::niter(more), 30L)
  expect_identical(opt(m, max_iterations = 3.9)$iterations <= 3L, TRUE)
  # a count of something else must still be whole
  expect_error(mcmc(m, chains = 2.5, verbose = FALSE), "`chains` must be a whole number")
  expect_error(mcmc(m, n_samples = -1.5, verbose = FALSE), "`n_samples` must be a whole number")
})

test_that("mixture() of multivariate normals: greta's example, density and draws", {
  w <- uniform(0, 1, dim = 2)
  x <- mixture(multivariate_normal(t(c(3, -3)), diag(2), n_realisations = 10),
               multivariate_normal(t(c(-3, 3)), diag(2), n_realisations = 10),
               weights = w)
  expect_identical(dim(x), c(10L, 2L))
  m <- model(x)
  expect_equal(m$n_free, 22)  # x's 20, and w's 2

  # the log density of data given the mixture: each row's log sum_k w_k p_k
  set.seed(52)
  y <- matrix(rnorm(12), 6, 2)
  mu1 <- normal(0, 1, dim = c(1, 2)); mu2 <- normal(0, 1, dim = c(1, 2))
  S <- matrix(c(1, 0.3, 0.3, 2), 2)
  weights <- c(0.3, 0.9)
  distribution(y) <- mixture(multivariate_normal(mu1, S, n_realisations = 6),
                             multivariate_normal(mu2, diag(2), n_realisations = 6),
                             weights = weights)
  mm <- model(mu1, mu2)
  at <- c(0.4, -0.2, -1, 0.5)  # mu1, then mu2
  dmvn <- function(y, mu, S) {
    z <- sweep(y, 2, mu)
    -0.5 * rowSums((z %*% solve(S)) * z) - 0.5 * log(det(2 * pi * S))
  }
  w <- weights / sum(weights)
  rows <- log(w[1] * exp(dmvn(y, at[1:2], S)) + w[2] * exp(dmvn(y, at[3:4], diag(2))))
  prior <- sum(dnorm(at, 0, 1, log = TRUE))
  expect_equal(lockstep:::model_log_density(mm, matrix(at, 1), gradient = FALSE)$log_density,
               sum(rows) + prior, tolerance = 1e-10)
  expect_gradient_matches(mm, chains = c(1, 3))
  # and log_lik() counts one observation per row
  draws <- mcmc(mm, n_samples = 20, warmup = 20, chains = 2, verbose = FALSE)
  ll <- log_lik(draws)
  expect_identical(dim(ll), c(40L, 6L))

  # draws: each row from one component, picked by the weights
  set.seed(3)
  sims <- calculate(mixture(multivariate_normal(t(c(30, -30)), diag(2), n_realisations = 400),
                            multivariate_normal(t(c(-30, 30)), diag(2), n_realisations = 400),
                            weights = c(1, 3)), nsim = 1)[[1]][1, , ]
  first <- sims[, 1] > 0
  expect_true(all(sims[first, 2] < 0) && all(sims[!first, 2] > 0))
  expect_lt(abs(mean(first) - 0.25), 0.08)  # 4 sd of a share of 400

  # what a multivariate mixture refuses
  expect_error(mixture(multivariate_normal(t(c(0, 0)), diag(2)), normal(0, 1), weights = c(1, 1)),
               "cannot mix multivariate and univariate")
  expect_error(mixture(multivariate_normal(t(c(0, 0)), diag(2)), dirichlet(t(c(1, 1))),
                       weights = c(1, 1)), "must be of one family")
  expect_error(mixture(multivariate_normal(t(c(0, 0)), diag(2), n_realisations = 2),
                       multivariate_normal(t(c(0, 0)), diag(2), n_realisations = 3),
                       weights = c(1, 1)), "same dimensions")
})

test_that("optimisers' and samplers' defaults are greta's, or ?samplers says why not", {
  # greta 0.5's defaults (its R/optimisers.R and R/samplers.R)
  greta_defaults <- list(
    gradient_descent = list(learning_rate = 0.01, momentum = 0, nesterov = FALSE),
    adadelta = list(learning_rate = 0.001, rho = 1, epsilon = 1e-08),
    adagrad = list(learning_rate = 0.8, initial_accumulator_value = 0.1, epsilon = 1e-08),
    adam = list(learning_rate = 0.1, beta_1 = 0.9, beta_2 = 0.999, amsgrad = FALSE,
                epsilon = 1e-08),
    adamax = list(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07),
    nadam = list(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07),
    rms_prop = list(learning_rate = 0.1, rho = 0.9, momentum = 0, epsilon = 1e-10,
                    centered = FALSE),
    ftrl = list(learning_rate = 1, learning_rate_power = -0.5, initial_accumulator_value = 0.1),
    hmc = list(Lmin = 5, Lmax = 10, epsilon = 0.1),
    slice = list(max_doublings = 5)
  )
  for (name in names(greta_defaults)) {
    f <- formals(get(name, envir = asNamespace("lockstep")))
    for (arg in names(greta_defaults[[name]])) {
      expect_identical(eval(f[[arg]]), greta_defaults[[name]][[arg]], label = paste0(name, "(", arg, ")"))
    }
  }
  # where lockstep's defaults differ on purpose, its help says so
  differs <- function(topic, pattern) {
    text <- paste(capture.output(tools::Rd2txt(utils:::.getHelpFile(help(topic, package = "lockstep")),
                                              options = list(underline_titles = FALSE))),
                  collapse = " ")
    grepl(pattern, gsub("\\s+", " ", text))
  }
  expect_identical(eval(formals(rwmh)$epsilon), 1)
  expect_identical(eval(formals(hmc)$diag_sd), "gradient")
  expect_true(differs("samplers", "greta's default"))
  # adamax() and nadam() at greta's learning rate move each parameter by at
  # most about 0.001 an iteration, so 200 iterations cannot reach an optimum 2
  # away (greta's test of them in 200 iterations); at 0.1 they do
  x <- c(2.1, 1.9, 2.05)
  z <- variable(dim = 3)
  distribution(x) <- normal(z, 0.1)
  m <- model(z)
  slow <- opt(m, optimiser = adamax(), max_iterations = 200, initial_values = initials(z = rep(0, 3)))
  expect_true(all(abs(slow$par$z) <= 200 * 0.001 * 1.01))
  fast <- opt(m, optimiser = adamax(learning_rate = 0.1), max_iterations = 200,
              initial_values = initials(z = rep(0, 3)))
  expect_lt(max(abs(fast$par$z - x)), 1e-2)
})

test_that("as.matrix(), outer(), zero-extent indexing, c() and chol2inv() as greta's", {
  m <- matrix(1:4, 2)
  expect_identical(as.matrix(as_data(m)), matrix(as.numeric(1:4), 2))
  expect_identical(as.matrix(as_data(1:3)), matrix(as.numeric(1:3), ncol = 1))
  expect_true(is.greta_array(as.matrix(variable(dim = c(2, 2, 2)))))
  expect_identical(dim(outer(as_data(m), array(1:3, c(3, 1)))), dim(outer(m, array(1:3, c(3, 1)))))
  arr <- array(1:8, c(2, 2, 2))
  z <- as_data(arr)[-1:-2, , , drop = FALSE]
  expect_identical(dim(z), dim(arr[-1:-2, , , drop = FALSE]))
  expect_error(variable(dim = c(2, 2))[-1:-2, , drop = FALSE], "at least one element, except of data")
  f <- function(x) x
  l <- c(as_data(1), f)
  expect_type(l, "list")
  expect_length(l, 2)
  expect_true(is.greta_array(l[[1]]))
  expect_identical(l[[2]], f)
  U <- as_data(chol(matrix(c(2, 0.5, 0.5, 1), 2)))
  expect_warning(a <- chol2inv(U, LINPACK = TRUE), "`LINPACK` of chol2inv\\(\\) is ignored")
  expect_warning(chol2inv(U, size = 1), "`size` of chol2inv\\(\\) is ignored")
  expect_equal(calculate(a)[[1]], chol2inv(chol(matrix(c(2, 0.5, 0.5, 1), 2))), ignore_attr = TRUE)
})

test_that("gpu_only() without a GPU runs on the CPU, as greta's does", {
  info <- backend_info()
  skip_if(isTRUE(info$cuda_built) && nrow(info$devices) > 0, "a GPU is visible here")
  expect_warning(co <- gpu_only(), "running on the CPU instead")
  expect_identical(co$backend, "cpu")
  mu <- normal(0, 1)
  expect_length(calculate(mu, nsim = 4, compute_options = co)[[1]], 4)
})

test_that("a misspelt argument of calculate() is named, and nsim is suggested", {
  x <- normal(0, 1, dim = 3)
  expect_error(calculate(x, nsims = 5), "no argument `nsims`: did you mean `nsim`\\?")
  expect_error(calculate(x, valeus = list()), "did you mean `values`")
  expect_error(calculate(x, zzzzzzzzzz = 1), "its arguments are greta arrays, then `values`")
  expect_error(calculate(x), "give `nsim` to simulate it from the priors")
  expect_identical(dim(calculate(x, nsim = 5)$x), c(5L, 3L, 1L))
})

test_that("sd(), var() and scale() of greta arrays are R's", {
  set.seed(9)
  v <- rnorm(7)
  M <- matrix(rnorm(12), 4)
  M2 <- matrix(rnorm(8), 4)
  values <- calculate(sd(as_data(v)), var(as_data(v)), var(as_data(M)), var(as_data(M), M2),
                      scale(as_data(M)), scale(as_data(M), center = FALSE),
                      scale(as_data(M), center = c(1, 2, 3), scale = FALSE),
                      scale(as_data(v)))
  expect_equal(values[[1]], sd(v), ignore_attr = TRUE)
  expect_equal(values[[2]], var(v), ignore_attr = TRUE)
  expect_equal(values[[3]], var(M), ignore_attr = TRUE)
  expect_equal(values[[4]], var(M, M2), ignore_attr = TRUE)
  expect_equal(values[[5]], scale(M), ignore_attr = TRUE)
  expect_equal(values[[6]], scale(M, center = FALSE), ignore_attr = TRUE)
  expect_equal(values[[7]], scale(M, center = c(1, 2, 3), scale = FALSE), ignore_attr = TRUE)
  expect_equal(values[[8]], scale(v), ignore_attr = TRUE)
  # R values still go to R's functions
  expect_identical(sd(v), stats::sd(v))
  expect_identical(var(M, M2), stats::var(M, M2))
  # values, densities and gradients against R's, for 1 and 3 chains
  check_operation(function(x) sd(x), list(x = vec(5)))
  check_operation(function(x) var(x), list(x = mat(5, 2)))
  check_operation(function(x, y) var(x, y), list(x = mat(4, 2), y = mat(4, 3)))
  check_operation(function(x) scale(x), list(x = mat(5, 3)))
  check_operation(function(x) scale(x, center = FALSE), list(x = mat(4, 2)))
  expect_error(sd(as_data(1)), "at least 2 elements")
  expect_error(scale(as_data(M), center = 1:2), "3 finite numbers")
})

test_that("tapply() over a list of factors gives base R's table", {
  f1 <- factor(c("a", "b", "a", "c", "b"))
  f2 <- c("u", "u", "v", "v", "v")
  v <- c(1, 2, 4, 8, 16)
  full <- calculate(tapply(as_data(v), list(f1, f2), "sum", default = 0))[[1]]
  expect_identical(dim(full), c(3L, 2L))
  expect_equal(full, tapply(v, list(f1, f2), sum, default = 0), ignore_attr = TRUE)
  means <- calculate(tapply(as_data(v), data.frame(f1, f2), mean, default = -1))[[1]]
  expect_equal(means, tapply(v, list(f1, f2), mean, default = -1), ignore_attr = TRUE)
  expect_error(tapply(as_data(v), list(f1, f2), "sum"), "have no elements: give tapply\\(\\) a number")
  complete <- list(c(1, 1, 2, 2, 2), c(1, 2, 1, 2, 2))
  expect_equal(calculate(tapply(as_data(v), complete, "max"))[[1]],
               tapply(v, complete, max), ignore_attr = TRUE)
})

test_that("print() of draws says the warmup, as greta 0.6's does", {
  d <- mcmc(model(normal(0, 1)), n_samples = 10, warmup = 15, chains = 1, verbose = FALSE)
  out <- capture.output(print(d))
  expect_true(any(grepl("^\\* Warmup = 15$", out)))
})

test_that("numerical failure: no finite start is refused, a diverging optimiser warns", {
  # greta samples from such a start and reports the bad draws; lockstep
  # refuses before sampling, saying what to do (vignette("coming-from-greta"))
  x <- variable()
  y <- c(1, 2, 3)
  distribution(y) <- poisson(-exp(x))
  m <- model(x)
  expect_error(mcmc(m, n_samples = 10, warmup = 10, chains = 2, verbose = FALSE),
               "could not find initial values .* in 50 random starts .* give `initial_values`")
  expect_error(opt(m), "could not find initial values")
  # greta's test: gradient_descent() diverges from these; greta errors, lockstep
  # warns and returns the last point where the density was finite
  sd <- c(0.506878940621391, 0.923730184091255, 0.920889702159911, 0.505555843701586,
          0.0164170106872916)
  obs <- c(2.02058743665058, 2.03576151926688, 2.05396624437729, 1.76648340291467,
           1.95296190632083)
  z <- variable(dim = 5)
  distribution(obs) <- normal(z, sd)
  m2 <- model(z)
  expect_warning(o <- opt(m2, optimiser = gradient_descent()),
                 "not finite at the next point .* Try a smaller learning rate")
  expect_true(all(is.finite(o$par$z)))
  expect_true(is.finite(o$value))
  expect_identical(o$convergence, 2)
})

test_that("calculate() of a variable the draws do not have says that nsim simulates it", {
  mu <- normal(0, 1)
  d <- mcmc(model(mu), n_samples = 10, warmup = 10, chains = 1, verbose = FALSE)
  nu <- normal(0, 1)
  expect_error(calculate(mu + nu, values = d), "give `nsim` to simulate it from its prior")
  sims <- calculate(mu + nu, values = d, nsim = 7)[[1]]
  expect_identical(dim(sims), c(7L, 1L, 1L))
})
