# mcmc(): posteriors against a posteriordb reference and exact answers within
# Monte Carlo error, and the object it returns.

# -- posteriors ----------------------------------------------------------------

test_that("eight schools (non-centred) matches the posteriordb reference, with nuts, hmc and chees", {
  for (sampler in list(nuts(), hmc(), chees())) {
    set.seed(501)
    m <- eight_schools_model()
    # a divergence or two in 4000 draws is usual for this posterior
    draws <- suppressWarnings(mcmc(m, sampler = sampler, n_samples = 1000, warmup = 1000,
                                   chains = 4, verbose = FALSE))
    # posteriordb names theta[1]..theta[8]; lockstep names theta[1,1]..theta[8,1]
    z <- posteriordb_z(draws, "eight_schools-eight_schools_noncentered",
                       name_map = function(x) sub("^theta\\[([0-9]+)\\]$", "theta[\\1,1]", x))
    expect_setequal(z$name, c("mu", "tau", sprintf("theta[%d,1]", 1:8)))
    expect_true(all(is.finite(z$z_mean)))
    expect_true(all(is.finite(z$z_mean_squared)))
    for (k in seq_len(nrow(z))) {
      expect_lt(abs(z$z_mean[k]), 4, label = sprintf("|z| of the mean of %s", z$name[k]))
      expect_lt(abs(z$z_mean_squared[k]), 4,
                label = sprintf("|z| of the second moment of %s", z$name[k]))
    }
  }
})

test_that("a conjugate normal mean has the exact posterior", {
  set.seed(502)
  sigma <- 2
  m0 <- 1
  s0 <- 3
  y <- rnorm(20, 2.5, sigma)
  mu <- normal(m0, s0)
  distribution(y) <- normal(mu, sigma)
  m <- model(mu)
  draws <- mcmc(m, n_samples = 1000, warmup = 1000, chains = 4, verbose = FALSE)

  precision <- 1 / s0^2 + length(y) / sigma^2
  post_mean <- (m0 / s0^2 + sum(y) / sigma^2) / precision
  post_sd <- sqrt(1 / precision)

  x <- as.numeric(as.matrix(draws[, "mu"]))
  ess <- coda::effectiveSize(draws[, "mu"])
  expect_gt(ess, 500)
  mcse <- sd(x) / sqrt(ess)
  expect_lt(abs(mean(x) - post_mean) / mcse, 4)
  # the sd of the draws, to within about 5 standard errors
  expect_equal(sd(x), post_sd, tolerance = 0.075)
  ks <- suppressWarnings(ks.test(independent_draws(draws, "mu"), "pnorm", post_mean, post_sd))
  expect_gt(ks$p.value, 0.001)
})

test_that("an exponential rate with a flat prior on (0, Inf) has its gamma posterior", {
  # a flat prior on the constrained scale: the sampler must include the log
  # Jacobian of rate = exp(z) for this to be Gamma(n + 1, sum(y))
  set.seed(503)
  y <- rexp(15, 0.5)
  rate <- variable(lower = 0)
  distribution(y) <- exponential(rate)
  m <- model(rate)
  draws <- mcmc(m, n_samples = 1000, warmup = 1000, chains = 4, verbose = FALSE)
  shape <- length(y) + 1
  total <- sum(y)
  x <- as.numeric(as.matrix(draws[, "rate"]))
  mcse <- sd(x) / sqrt(coda::effectiveSize(draws[, "rate"]))
  expect_lt(abs(mean(x) - shape / total) / mcse, 4)
  expect_equal(sd(x), sqrt(shape) / total, tolerance = 0.075)
  ks <- suppressWarnings(ks.test(independent_draws(draws, "rate"), "pgamma", shape, total))
  expect_gt(ks$p.value, 0.001)
})

test_that("a truncated normal prior is sampled correctly", {
  set.seed(504)
  v <- normal(0.5, 1, truncation = c(-1, 2))
  m <- model(v)
  draws <- mcmc(m, n_samples = 1000, warmup = 1000, chains = 4, verbose = FALSE)
  x <- as.numeric(as.matrix(draws))
  expect_true(all(x > -1 & x < 2))
  ptrunc <- function(q) (pnorm(q, 0.5, 1) - pnorm(-1, 0.5, 1)) / (pnorm(2, 0.5, 1) - pnorm(-1, 0.5, 1))
  ks <- suppressWarnings(ks.test(independent_draws(draws, "v"), ptrunc))
  expect_gt(ks$p.value, 0.001)
})

# -- the returned object -------------------------------------------------------

test_that("mcmc() returns a greta_mcmc_list of coda mcmc objects, one per chain", {
  set.seed(505)
  m <- eight_schools_model()
  # (the centred eight schools may diverge now and then: not this test's subject)
  draws <- suppressWarnings(mcmc(m, n_samples = 200, warmup = 200, chains = 3, verbose = FALSE))
  expect_s3_class(draws, "greta_mcmc_list")
  expect_s3_class(draws, "mcmc.list")
  expect_equal(class(draws), c("greta_mcmc_list", "mcmc.list"))
  expect_equal(coda::nchain(draws), 3)
  expect_length(draws, 3)
  names <- c("mu", "tau", sprintf("theta[%d,1]", 1:8))
  for (chain in draws) {
    expect_s3_class(chain, "mcmc")
    expect_equal(colnames(chain), names)
    expect_equal(dim(chain), c(200L, 10L))
    expect_true(all(is.finite(chain)))
    expect_true(all(chain[, "tau"] > 0))
  }
  expect_equal(coda::varnames(draws), names)
  expect_equal(coda::niter(draws), 200)
  # chains start differently and move
  firsts <- sapply(draws, function(chain) chain[1, "mu"])
  expect_length(unique(firsts), 3)
  expect_gt(sd(as.numeric(draws[[1]][, "mu"])), 0)
  # theta is computed from the draws of mu, tau and theta_tilde: check it
  # against the raw free-state draws
  raw <- attr(draws, "model_info")$raw_draws
  expect_equal(dim(raw[[1]]), c(200L, 10L))
  expect_equal(unname(draws[[2]][, "mu"]), unname(raw[[2]][, 1]))
  expect_equal(unname(draws[[2]][, "tau"]), unname(exp(raw[[2]][, 2])))
  free <- unname(as.matrix(raw[[2]]))
  expect_equal(unname(as.matrix(draws[[2]])[, 3:10]), free[, 1] + exp(free[, 2]) * free[, 3:10])
})

test_that("coda's diagnostics, summary() and print() work on the draws", {
  set.seed(506)
  m <- eight_schools_model()
  draws <- suppressWarnings(mcmc(m, n_samples = 500, warmup = 500, chains = 4, verbose = FALSE))
  rhat <- coda::gelman.diag(draws, multivariate = FALSE)
  expect_equal(rownames(rhat$psrf), coda::varnames(draws))
  expect_true(all(rhat$psrf[, 1] < 1.1))
  ess <- coda::effectiveSize(draws)
  expect_length(ess, 10)
  expect_true(all(ess > 100))
  s <- summary(draws)
  expect_s3_class(s, "summary.mcmc")
  expect_equal(rownames(s$statistics), coda::varnames(draws))
  expect_equal(s$statistics[, "Mean"], colMeans(as.matrix(draws)))
  expect_output(print(draws), "theta\\[8,1\\]")
  expect_output(print(draws), "MCMC draws from lockstep")
  # the draws alone: not what lockstep keeps with them (every iteration's
  # sampler diagnostics, the run)
  printed <- capture.output(returned <- print(draws))
  expect_false(any(grepl("sampler_params|model_info|accept_stat__", printed)))
  expect_identical(returned, draws)
})

test_that("thin keeps every thin-th draw", {
  set.seed(507)
  m <- eight_schools_model()
  draws <- suppressWarnings(mcmc(m, n_samples = 100, thin = 5, warmup = 50, chains = 2,
                                 verbose = FALSE))
  expect_equal(coda::niter(draws), 20)
  expect_equal(nrow(draws[[1]]), 20)
  expect_equal(coda::thin(draws), 5)
  # numbered from the first iteration after warmup, as greta numbers them
  expect_equal(start(draws), 5)
  expect_equal(end(draws), 100)
  # a thin that does not divide n_samples
  draws <- suppressWarnings(mcmc(m, n_samples = 10, thin = 3, warmup = 10, chains = 2,
                                 verbose = FALSE))
  expect_equal(coda::niter(draws), 3)
  # fewer iterations than thin would keep no draw: refused before sampling
  expect_error(mcmc(m, n_samples = 4, thin = 5, verbose = FALSE),
               "`n_samples` \\(4\\) must be at least `thin` \\(5\\)")
  expect_error(mcmc(m, n_samples = 0, verbose = FALSE), "`n_samples` \\(0\\) must be at least")
  expect_error(extra_samples(draws, n_samples = 2, thin = 3, verbose = FALSE),
               "must be at least `thin`")
})

test_that("set.seed() repeats a run exactly, and another seed differs", {
  m <- eight_schools_model()
  run <- function(seed) {
    set.seed(seed)
    # (short runs diverge now and then: the warning is expected)
    suppressWarnings(mcmc(m, n_samples = 50, warmup = 50, chains = 2, verbose = FALSE))
  }
  a <- run(508)
  b <- run(508)
  c <- run(509)
  expect_identical(as.matrix(a), as.matrix(b))
  expect_false(isTRUE(all.equal(as.matrix(a), as.matrix(c))))
})

test_that("set.seed() repeats a run on 2 threads: a dense multivariate normal (issue 37)", {
  # Chain groups on two threads run different nodes at the same time; the
  # linear algebra's workspace (chol()'s gradient, the solves') was laid out
  # by each node's own size, so one group's chol() could write where the
  # other's solve was working, now and then. Five repeats differed in three.
  set.seed(9)
  s <- lognormal(0, 1)
  mu <- normal(0, 1)
  y <- t(rnorm(150))
  distribution(y) <- multivariate_normal(t(rep(1, 150) * mu), diag(150) * s + 0.5)
  m <- model(mu, s)
  run <- function() {
    set.seed(3)
    as.matrix(mcmc(m, warmup = 0, n_samples = 200, chains = 2, verbose = FALSE,
                   compute_options = cpu_only(threads = 2)))
  }
  first <- run()
  expect_gt(length(unique(first[, "mu"])), 20)  # it moved
  for (k in 1:4) expect_identical(run(), first)
  # every sampler, with a short warmup (its adaptation too)
  for (sampler in list(hmc(), chees(), rwmh(), slice())) {
    run_with <- function() {
      set.seed(4)
      as.matrix(mcmc(m, sampler = sampler, warmup = 20, n_samples = 40, chains = 2,
                     verbose = FALSE, compute_options = cpu_only(threads = 2)))
    }
    first <- suppressWarnings(run_with())
    for (k in 1:4) expect_identical(suppressWarnings(run_with()), first, info = sampler$name)
  }
})

test_that("one chain works", {
  set.seed(510)
  m <- eight_schools_model()
  draws <- suppressWarnings(mcmc(m, n_samples = 30, warmup = 30, chains = 1, verbose = FALSE))
  expect_s3_class(draws, "greta_mcmc_list")
  expect_equal(coda::nchain(draws), 1)
  expect_equal(dim(draws[[1]]), c(30L, 10L))
})

test_that("initials() sets the starting values of chains", {
  set.seed(511)
  mu <- normal(0, 1)
  tau <- cauchy(0, 5, truncation = c(0, Inf))
  y <- rnorm(5)
  distribution(y) <- normal(mu, tau)
  m <- model(mu, tau)
  # tiny steps and no warmup: the one draw stays next to the start
  still <- hmc(Lmin = 1, Lmax = 1, epsilon = 1e-4)
  expect_message(
    draws <- mcmc(m, sampler = still, warmup = 0, n_samples = 1, chains = 2, verbose = FALSE,
                  initial_values = initials(mu = 40, tau = 100)),
    "only one set of initial values"
  )
  for (chain in draws) {
    expect_equal(as.numeric(chain[1, "mu"]), 40, tolerance = 1e-3)
    expect_equal(as.numeric(chain[1, "tau"]), 100, tolerance = 1e-3)
  }
  # one set per chain; variables left out start at random
  draws <- mcmc(m, sampler = still, warmup = 0, n_samples = 1, chains = 2, verbose = FALSE,
                initial_values = list(initials(mu = 30), initials(mu = -30)))
  expect_equal(as.numeric(draws[[1]][1, "mu"]), 30, tolerance = 1e-3)
  expect_equal(as.numeric(draws[[2]][1, "mu"]), -30, tolerance = 1e-3)
  # and a normal run from far away still finds the posterior
  expect_message(
    draws <- mcmc(m, warmup = 300, n_samples = 100, chains = 2, verbose = FALSE,
                  initial_values = initials(mu = 40, tau = 100)),
    "only one set of initial values"
  )
  expect_lt(abs(mean(as.matrix(draws)[, "mu"]) - mean(y)), 3)
})

test_that("initials() and initial_values are checked", {
  mu <- normal(0, 1)
  tau <- cauchy(0, 5, truncation = c(0, Inf))
  y <- c(0.1, -0.3)
  distribution(y) <- normal(mu, tau)
  m <- model(mu, tau)
  not_a_greta_array <- 3
  expect_error(initials(1), "must be named")
  expect_error(initials(mu = NA), "`mu` must be finite numbers")
  expect_error(initials(mu = "a"), "`mu` must be finite numbers")
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = initials(tau = -1)),
               "outside the range of values it can take: element 1 is -1, not above its lower bound 0")
  # a value on a bound has no free-scale value: refused, as greta does
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = initials(tau = 0)),
               "element 1 is 0, not above its lower bound 0")
  # per-element bounds: the first value outside is named, and the count given
  p <- variable(lower = c(0, 1, 2), upper = c(1, 2, 3))
  y2 <- c(0.1, -0.3)
  distribution(y2) <- normal(mu + sum(p), tau)
  m_p <- model(mu, tau, p)
  expect_error(mcmc(m_p, chains = 1, verbose = FALSE, initial_values = initials(p = c(0.5, 2, 3))),
               "element 2 is 2, not below its upper bound 2 \\(2 values are outside\\)")
  expect_error(mcmc(m_p, chains = 1, n_samples = 1, warmup = 1, verbose = FALSE,
                    initial_values = initials(p = c(0.5, 1.5, 2.5))), NA)
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = initials(mu = 1:3)),
               "have 3 elements, but `mu` has 1")
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = initials(nothing_here = 1)),
               "not a greta array")
  expect_error(mcmc(m, chains = 1, verbose = FALSE,
                    initial_values = initials(not_a_greta_array = 1)),
               "not a greta array")
  expect_error(mcmc(m, chains = 3, verbose = FALSE,
                    initial_values = list(initials(mu = 1), initials(mu = 2))),
               "2 sets of initial values, but there are 3 chains")
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = list(mu = 1)),
               "initials object")
  expect_output(print(initials(mu = 1)), "initials object with values")
  expect_output(print(initials()), "empty greta initials object")
})

test_that("bad arguments to mcmc() and hmc() are refused clearly", {
  m <- eight_schools_model()
  expect_error(mcmc(m, n_samples = -1, verbose = FALSE), "`n_samples` must be a whole number")
  expect_error(mcmc(m, n_samples = NA, verbose = FALSE), "`n_samples` must be a whole number")
  expect_error(mcmc(m, thin = 1.5, verbose = FALSE), "`thin` must be a whole number")
  expect_error(mcmc(m, chains = 0, verbose = FALSE), "`chains` must be a whole number of at least 1")
  expect_error(mcmc(m, warmup = -5, verbose = FALSE), "`warmup` must be a whole number")
  expect_error(mcmc(m, thin = 0, verbose = FALSE), "`thin` must be a whole number of at least 1")
  expect_error(mcmc(m, sampler = "nuts", verbose = FALSE), "`sampler` must be a sampler")
  expect_error(mcmc(1), "`model` must be a greta_model")
  expect_error(mcmc(normal(0, 1)), "`model` must be a greta_model")
  expect_error(mcmc(m, verbose = "yes"), "`verbose` must be TRUE or FALSE")
  expect_error(hmc(Lmin = 5, Lmax = 2), "`Lmax` must be at least `Lmin`")
  expect_error(hmc(Lmin = 0), "`Lmin` must be a whole number")
  expect_error(hmc(epsilon = -0.1), "`epsilon` must be a single positive number")
  expect_error(hmc(diag_sd = c(1, -1)), "`diag_sd` must be positive")
  expect_s3_class(hmc(), "sampler")
  expect_output(print(hmc(Lmin = 3)), "Lmin = 3")
})

test_that("draws of matrices and arrays are named and ordered as greta names them", {
  set.seed(512)
  means <- matrix(c(-10, -5, 0, 5, 10, 15), 2, 3)
  a <- normal(means, 0.5)
  b <- normal(array(1:8, c(2, 2, 2)) * 3, 0.5)
  m <- model(alpha = a, b)
  draws <- mcmc(m, n_samples = 500, warmup = 500, chains = 2, verbose = FALSE)
  expect_equal(coda::varnames(draws),
               c("alpha[1,1]", "alpha[2,1]", "alpha[1,2]", "alpha[2,2]", "alpha[1,3]",
                 "alpha[2,3]", "b[1,1,1]", "b[2,1,1]", "b[1,2,1]", "b[2,2,1]", "b[1,1,2]",
                 "b[2,1,2]", "b[1,2,2]", "b[2,2,2]"))
  # each column's mean is its own element's prior mean (posterior sd 0.5)
  expect_lt(max(abs(colMeans(as.matrix(draws)) - c(as.numeric(means), 1:8 * 3))), 0.2)
})

test_that("traced values do not depend on the trace batch size", {
  m <- eight_schools_model()
  set.seed(513)
  # (runs this short diverge now and then: the warning is expected)
  small <- suppressWarnings(mcmc(m, n_samples = 20, warmup = 10, chains = 3, verbose = FALSE,
                                 trace_batch_size = 3))
  set.seed(513)
  default <- suppressWarnings(mcmc(m, n_samples = 20, warmup = 10, chains = 3, verbose = FALSE))
  expect_identical(as.matrix(small), as.matrix(default))
  expect_error(mcmc(m, trace_batch_size = 0, verbose = FALSE), "`trace_batch_size`")
})

test_that("the emulated backend samples the same chains as the CPU backend", {
  # the same seed gives the same random numbers on every backend, and the
  # backends agree to rounding, so short runs should give (nearly) the same draws
  # (with the diagonal metric: metric = "auto" is that on the GPU backends, a
  # dense metric's vector work staying in host memory)
  m <- eight_schools_model()
  set.seed(514)
  diagonal <- nuts(metric = "diagonal")
  cpu <- suppressWarnings(mcmc(m, sampler = diagonal, n_samples = 20, warmup = 20, chains = 2,
                               verbose = FALSE))
  old <- options(lockstep.backend = "emulated")
  on.exit(options(old), add = TRUE)
  set.seed(514)
  emulated <- suppressWarnings(mcmc(m, sampler = diagonal, n_samples = 20, warmup = 20,
                                    chains = 2, verbose = FALSE))
  # and metric = "auto" there is the diagonal metric
  set.seed(514)
  auto <- suppressWarnings(mcmc(m, n_samples = 20, warmup = 20, chains = 2, verbose = FALSE))
  expect_identical(as.matrix(auto), as.matrix(emulated))
  expect_null(attr(auto, "model_info")$run$metric_factor)
  expect_equal(as.matrix(emulated), as.matrix(cpu), tolerance = 1e-6)
})

test_that("thinning is consistent across progress-bar chunks", {
  set.seed(515)
  m <- eight_schools_model()
  draws <- suppressWarnings(mcmc(m, n_samples = 120, thin = 7, warmup = 30, chains = 2,
                                 pb_update = 50, verbose = FALSE))
  expect_equal(coda::niter(draws), 17)  # iterations 7, 14, ..., 119
  expect_equal(start(draws), 7)
  expect_equal(end(draws), 119)
})

test_that("initial values can only be given for variables", {
  m <- eight_schools_model()
  # theta, mu, ... of eight_schools_model() live in its own frame: a name that
  # is not a greta array here is refused
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = initials(theta = 1)),
               "not a greta array")
  mu <- normal(0, 1)  # a variable, but of another model
  expect_error(mcmc(m, chains = 1, verbose = FALSE, initial_values = initials(mu = 1)),
               "not a variable of this model")
})

test_that("verbose progress goes to stderr, not stdout", {
  set.seed(516)
  m <- eight_schools_model()
  path <- tempfile()
  con <- file(path, open = "wt")
  sink(con, type = "message")
  out <- tryCatch(
    capture.output(draws <- suppressWarnings(mcmc(m, n_samples = 20, warmup = 20, chains = 2,
                                                  verbose = TRUE, pb_update = 10))),
    finally = {
      sink(type = "message")
      close(con)
    }
  )
  progress <- paste(readLines(path, warn = FALSE), collapse = "\n")
  unlink(path)
  expect_length(out, 0)
  expect_match(progress, "warmup")
  expect_match(progress, "sampling")
  expect_match(progress, "20/20")
  expect_s3_class(draws, "greta_mcmc_list")
})

# -- nuts and its diagnostics ----------------------------------------------------

test_that("nuts is the default sampler and reports rstan's sampler diagnostics", {
  set.seed(520)
  m <- eight_schools_model()
  draws <- suppressWarnings(mcmc(m, n_samples = 200, warmup = 300, chains = 3, verbose = FALSE))
  params <- get_sampler_params(draws)
  expect_length(params, 3)
  for (p in params) {
    expect_true(is.matrix(p) && is.numeric(p))  # rstan's shape
    expect_equal(colnames(p), c("accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__",
                                "divergent__", "energy__"))
    expect_equal(nrow(p), 200)
    expect_true(all(p[, "accept_stat__"] >= 0 & p[, "accept_stat__"] <= 1))
    expect_true(all(p[, "treedepth__"] >= 1 & p[, "treedepth__"] <= 10))
    expect_true(all(p[, "n_leapfrog__"] >= 2^(p[, "treedepth__"] - 1)))
    expect_true(all(p[, "n_leapfrog__"] < 2^(p[, "treedepth__"] + 1)))
    expect_true(all(p[, "divergent__"] %in% c(0, 1)))
    expect_true(all(is.finite(p[, "energy__"])))
    expect_equal(length(unique(p[, "stepsize__"])), 1)  # fixed after warmup
  }
  # warmup tuned the step size towards adapt_delta = 0.8
  accept <- mean(unlist(lapply(params, function(p) p[, "accept_stat__"])))
  expect_gt(accept, 0.6)
  expect_error(get_sampler_params(list()), "greta_mcmc_list")
  expect_error(get_sampler_params(draws, inc_warmup = NA), "`inc_warmup`")
})

test_that("sampler warnings name the chains the problems came from and each sampler's own remedy", {
  # kept draws' diagnostics, rows iteration-major with chains within: here 3
  # chains, chain 3 divergent in every draw, chain 1 once
  d <- data.frame(divergent__ = c(1, 0, 1, 0, 0, 1, 0, 0, 1), treedepth__ = 10,
                  n_leapfrog__ = 1023)
  expect_warning(lockstep:::warn_sampler_problems(d["divergent__"], nuts(), 3),
                 "4 of 9 kept draws \\(all chains\\) came from divergent transitions \\(chain 3: 3; chain 1: 1\\)")
  expect_warning(lockstep:::warn_sampler_problems(d["divergent__"], nuts(adapt_delta = 0.95), 3),
                 "nuts\\(adapt_delta = 0.99\\), now 0.95")
  expect_warning(lockstep:::warn_sampler_problems(d["divergent__"], nuts(adapt_delta = 0.99), 3),
                 "a longer warmup \\(the step size is already at adapt_delta = 0.99\\)")
  expect_warning(lockstep:::warn_sampler_problems(d["divergent__"], chees(), 3),
                 "than chees\\(\\) can")
  # one chain: no chain named
  expect_warning(lockstep:::warn_sampler_problems(d[1:3, "divergent__", drop = FALSE], hmc(), 1),
                 "2 of 3 kept draws \\(all chains\\) came from divergent transitions; consider")
  expect_warning(lockstep:::warn_sampler_problems(transform(d, divergent__ = 0), nuts(), 3),
                 "hit the maximum tree depth of 10 \\(chain 1: 3; chain 2: 3; chain 3: 3\\)")
})

test_that("a chain stuck where the shared step size is too large for it is named, with what to do (issue 37)", {
  # a funnel, chain 4 started deep in its neck: every one of its proposals
  # diverges at the step size the others move with
  set.seed(5)
  s <- lognormal(0, 1)
  z <- normal(0, s, dim = 10)
  m <- model(s, z)
  inits <- c(rep(list(initials(s = 1, z = rep(0.1, 10))), 3),
             list(initials(s = 1e-4, z = rep(0, 10))))
  warned <- character()
  d <- withCallingHandlers(
    mcmc(m, sampler = hmc(epsilon = 0.3, Lmin = 5, Lmax = 5), warmup = 0, n_samples = 100,
         chains = 4, verbose = FALSE, initial_values = inits),
    warning = function(w) {
      warned <<- c(warned, conditionMessage(w))
      invokeRestart("muffleWarning")
    })
  accept <- vapply(get_sampler_params(d), function(p) mean(p[, "accept_stat__"]), numeric(1))
  expect_lt(accept[4], 0.05)
  expect_true(all(accept[1:3] > 0.2))
  stuck <- grep("barely moved", warned, value = TRUE)
  expect_length(stuck, 1)
  expect_match(stuck, "^chain 4 barely moved: mean acceptance 0.00 against 0.[0-9]+ for the other chains")
  expect_match(stuck, "nuts\\(adapt_delta = 0.95\\)")
  expect_match(grep("divergent", warned, value = TRUE), "\\(chain 4: 100")
  # healthy chains: no such warning (the unit test of the rule)
  d_ok <- data.frame(accept_stat__ = rep(c(0.9, 0.8, 0.6, 0.85), 25), divergent__ = 0)
  expect_no_warning(lockstep:::warn_stuck_chains(d_ok, nuts(), 4))
  d_bad <- transform(d_ok, accept_stat__ = rep(c(0.9, 0.1, 0.85, 0.2), 25))
  expect_warning(lockstep:::warn_stuck_chains(d_bad, nuts(), 4),
                 "^chains 2, 4 barely moved: mean acceptance 0.10, 0.20 against 0.88")
  # nuts() without split steps is pointed to them; with them, not again
  expect_warning(lockstep:::warn_stuck_chains(d_bad, nuts(), 4),
                 "consider split steps \\(nuts\\(max_energy_error = 2\\)\\), a smaller step size")
  expect_warning(lockstep:::warn_stuck_chains(d_bad, nuts(max_energy_error = 2), 4),
                 "consider a smaller step size")
  expect_warning(lockstep:::warn_stuck_chains(d_bad, hmc(), 4), "consider nuts\\(adapt_delta = 0.95\\)")
  expect_no_warning(lockstep:::warn_stuck_chains(d_bad, rwmh(), 4))  # rwmh() accepts as it does
  expect_no_warning(lockstep:::warn_stuck_chains(d_bad[c(1, 5), ], nuts(), 1))
})

test_that("nuts warns about divergences and maximum tree depth hits", {
  set.seed(521)
  x <- normal(0, 0.01)
  m <- model(x)
  # no warmup and a step a thousand times too large: every transition diverges
  expect_warning(mcmc(m, sampler = nuts(epsilon = 10), n_samples = 10, warmup = 0, chains = 2,
                      verbose = FALSE),
                 "20 of 20 kept draws .* divergent transitions \\(chain 1: 10; chain 2: 10\\); consider a smaller step size \\(nuts\\(adapt_delta = 0.95\\), now 0.8\\)")
  # hmc() has no adapt_delta: the warning says which sampler can take a smaller step
  expect_warning(mcmc(m, sampler = hmc(epsilon = 10), n_samples = 10, warmup = 0, chains = 1,
                      verbose = FALSE),
                 "10 of 10 kept draws \\(all chains\\) came from divergent transitions; consider nuts\\(adapt_delta = 0.95\\), which adapts a smaller step size than hmc\\(\\) can")
  # a step far too small for a wide posterior: every tree reaches depth 2
  y <- normal(0, 100)
  expect_warning(mcmc(model(y), sampler = nuts(max_treedepth = 2, epsilon = 1e-3), n_samples = 10,
                      warmup = 0, chains = 2, verbose = FALSE),
                 "hit the maximum tree depth of 2")
  # chees(): trajectories held to one leapfrog step
  expect_warning(mcmc(model(y), sampler = chees(max_leapfrog = 1), n_samples = 20, warmup = 50,
                      chains = 4, verbose = FALSE),
                 "80 of 80 kept draws \\(all chains\\) reached chees\\(\\)'s limit of 1 leapfrog")
  # and no such warning where it has room
  set.seed(522)
  z <- normal(0, 1)
  expect_no_warning(mcmc(model(z), sampler = chees(), n_samples = 50, warmup = 100, chains = 4,
                         verbose = FALSE))
})

test_that("nuts() checks its arguments", {
  expect_s3_class(nuts(), "sampler")
  expect_output(print(nuts()), "max_treedepth = 10, adapt_delta = 0.8")
  expect_error(nuts(max_treedepth = 0), "`max_treedepth`")
  expect_error(nuts(max_treedepth = 31), "at most 30")
  expect_error(nuts(max_treedepth = 2.5), "`max_treedepth`")
  expect_error(nuts(adapt_delta = 1), "`adapt_delta`")
  expect_error(nuts(adapt_delta = c(0.8, 0.9)), "`adapt_delta`")
  expect_error(nuts(epsilon = -1), "`epsilon`")
  expect_error(nuts(diag_sd = 0), "`diag_sd`")
  expect_error(nuts(adapt_step_size = "each"), "`adapt_step_size` must be \"shared\" or \"per_chain\"")
  expect_error(hmc(adapt_step_size = NA), "`adapt_step_size`")
  expect_error(nuts(warmup_rescue = NA), "`warmup_rescue` must be TRUE or FALSE")
  expect_error(chees(warmup_rescue = "yes"), "`warmup_rescue` must be TRUE or FALSE")
  for (bad in list(0, -1, NA, NaN, "1", c(1, 2))) {
    expect_error(nuts(max_energy_error = bad), "`max_energy_error` must be a single positive number")
  }
})

test_that("nuts(max_energy_error =) splits steps (WALNUTS) and samples a funnel's neck (issue 49)", {
  expect_identical(nuts(max_energy_error = 2)$parameters$max_energy_error, 2)
  # a funnel: log(s) ~ N(0, 1) exactly, z's scale s; its neck (s near 0)
  # needs far smaller steps than its mouth
  s <- lognormal(0, 1)
  z <- normal(0, s, dim = 6)
  m <- model(s, z)
  run <- function(sampler) {
    set.seed(4912)
    suppressWarnings(mcmc(m, sampler = sampler, warmup = 500, n_samples = 1500, chains = 4,
                          verbose = FALSE))
  }
  d <- run(nuts(max_energy_error = 0.5))
  log_s <- log(as.matrix(d)[, "s"])
  n_eff <- length(log_s) / 20
  expect_lt(abs(mean(log_s)), 5 / sqrt(n_eff))
  expect_lt(abs(var(log_s) - 1), 5 * sqrt(2 / n_eff))
  # the neck: P(log s < -1.5) = 0.0668
  expect_lt(abs(mean(log_s < -1.5) - pnorm(-1.5)), 5 * sqrt(0.0668 * 0.933 / n_eff))
  # split steps were taken and are counted as leapfrog steps: some iterations
  # took more than NUTS's most for their tree depth
  more <- vapply(get_sampler_params(d), function(p) {
    sum(p[, "n_leapfrog__"] > 2^(p[, "treedepth__"] + 1) - 1)
  }, numeric(1))
  expect_gt(sum(more), 0)
  # with no step to split, the draws are plain NUTS's
  expect_identical(as.matrix(run(nuts(max_energy_error = 1e300))), as.matrix(run(nuts())))
})

test_that("warmup moves a stuck chain to a healthy chain's state, records it and says so (issue 49)", {
  # the one-line message, from a table of moves as the sampler reports them
  now <- data.frame(iteration = c(100L, 100L, 150L), chain = c(2L, 4L, 3L),
                    moved_to = c(1L, 3L, NA), accept = c(0.01, 0.2, 0), lag = c(0, 3, 0))
  expect_message(lockstep:::report_rescues(now, now[1:2, ], TRUE),
                 "^warmup iteration 150: chain 3 stuck too, with no healthy chain to move to: going on \\(mean acceptance 0.00")
  expect_message(lockstep:::report_rescues(now[1:2, ], NULL, TRUE),
                 "^warmup iteration 100: chains 2, 4 moved to the state of chains 1, 3 \\(mean acceptance 0.01, 0.20 in the last window\\)")
  expect_silent(lockstep:::report_rescues(now, now, TRUE))
  expect_silent(lockstep:::report_rescues(now, NULL, FALSE))
  # a funnel, chain 4 started deep in its neck, where the one step size the
  # chains share (adapt_step_size = "shared") is far too large for it: its
  # acceptance over the first window is far below the others'. (With its own
  # step size, the default, it adapts and comes out by itself.)
  s <- lognormal(0, 1)
  z <- normal(0, s, dim = 10)
  m <- model(s, z)
  inits <- c(rep(list(initials(s = 1, z = rep(0.1, 10))), 3),
             list(initials(s = 1e-5, z = rep(0, 10))))
  run <- function(...) {
    set.seed(49)
    suppressWarnings(mcmc(m, sampler = hmc(epsilon = 0.5, Lmin = 5, Lmax = 5,
                                           adapt_step_size = "shared", ...), warmup = 150,
                          n_samples = 50, chains = 4, verbose = FALSE, initial_values = inits))
  }
  d <- run()
  moved <- attr(d, "model_info")$warmup_rescues
  expect_s3_class(moved, "data.frame")
  expect_named(moved, c("iteration", "chain", "moved_to", "accept", "lag"))
  expect_true(4L %in% moved$chain)
  expect_true(all(moved$iteration == 100L))  # the one window's end of a 150-iteration warmup
  expect_true(all(moved$moved_to %in% 1:3))
  # then it samples as the others do
  accept <- vapply(get_sampler_params(d), function(p) mean(p[, "accept_stat__"]), numeric(1))
  expect_gt(accept[4], 0.3)
  # without the rescue it stays stuck, and nothing is recorded
  kept <- run(warmup_rescue = FALSE)
  expect_equal(nrow(attr(kept, "model_info")$warmup_rescues), 0)
  accept_kept <- vapply(get_sampler_params(kept), function(p) mean(p[, "accept_stat__"]), numeric(1))
  expect_lt(accept_kept[4], 0.3)
  # verbose says it in one line
  msgs <- character()
  withCallingHandlers({
    set.seed(49)
    capture.output(suppressWarnings(mcmc(m, sampler = hmc(epsilon = 0.5, Lmin = 5, Lmax = 5,
                                                          adapt_step_size = "shared"),
                                         warmup = 150, n_samples = 10, chains = 4,
                                         initial_values = inits)), type = "message")
  }, message = function(msg) {
    msgs <<- c(msgs, conditionMessage(msg))
    invokeRestart("muffleMessage")
  })
  expect_length(grep("^warmup iteration 100: chain", msgs), 1)
  # extra_samples() keeps the table of its run's warmup
  more <- suppressWarnings(extra_samples(d, n_samples = 10, verbose = FALSE))
  expect_identical(attr(more, "model_info")$warmup_rescues, moved)
})

test_that("adapt_step_size = \"per_chain\": each chain adapts its own step size; shared is the default (issue 49)", {
  expect_identical(nuts()$parameters$adapt_step_size, "shared")
  expect_identical(hmc()$parameters$adapt_step_size, "shared")
  expect_output(print(nuts(adapt_step_size = "per_chain")), "adapt_step_size = per_chain")
  # a funnel, whose chains' step sizes differ as their regions do
  s <- lognormal(0, 1)
  z <- normal(0, s, dim = 5)
  m <- model(s, z)
  set.seed(5301)
  d <- suppressWarnings(mcmc(m, sampler = nuts(adapt_step_size = "per_chain"), n_samples = 100,
                             warmup = 200, chains = 4, verbose = FALSE))
  eps <- vapply(get_sampler_params(d), function(p) {
    expect_length(unique(p[, "stepsize__"]), 1)  # fixed after warmup
    p[1, "stepsize__"]
  }, numeric(1))
  expect_length(unique(eps), 4)
  expect_equal(attr(d, "model_info")$run$epsilon, unname(eps))
  # in warmup each chain's changes on its own
  w <- get_sampler_params(d, inc_warmup = TRUE)
  expect_false(isTRUE(all.equal(w[[1]][150:200, "stepsize__"], w[[2]][150:200, "stepsize__"])))
  # extra_samples() goes on at each chain's own, also with the sampler gone
  more <- suppressWarnings(extra_samples(d, n_samples = 20, verbose = FALSE))
  expect_equal(vapply(get_sampler_params(more), function(p) p[120, "stepsize__"], numeric(1)), eps)
  path <- tempfile(fileext = ".rds")
  saveRDS(d, path)
  more2 <- suppressWarnings(suppressMessages(extra_samples(readRDS(path), n_samples = 20,
                                                           verbose = FALSE)))
  expect_equal(vapply(get_sampler_params(more2), function(p) p[120, "stepsize__"], numeric(1)), eps)
  # shared (the default): one step size for every chain
  set.seed(5302)
  d1 <- suppressWarnings(mcmc(m, n_samples = 50, warmup = 100, chains = 3, verbose = FALSE))
  shared <- unique(unlist(lapply(get_sampler_params(d1, inc_warmup = TRUE),
                                 function(p) p[, "stepsize__"][c(1, 50, 150)])))
  expect_length(shared, 3)
  expect_length(unique(attr(d1, "model_info")$run$epsilon), 1)
})

test_that("adapt_metric = \"per_chain\" samples a normal model correctly; pooled stays the default", {
  # the default is pooled, in every sampler that adapts diag_sd
  expect_identical(nuts()$parameters$adapt_metric, "pooled")
  expect_identical(hmc()$parameters$adapt_metric, "pooled")
  expect_identical(chees()$parameters$adapt_metric, "pooled")
  expect_identical(rwmh()$parameters$adapt_metric, "pooled")
  expect_identical(slice()$parameters$adapt_metric, "pooled")
  expect_identical(nuts(adapt_metric = "per_chain")$parameters$adapt_metric, "per_chain")
  expect_output(print(hmc(adapt_metric = "per_chain")), "adapt_metric = per_chain")
  for (bad in list("per-chain", NA_character_, 1, c("pooled", "pooled"), character(0))) {
    expect_error(nuts(adapt_metric = bad), "`adapt_metric` must be \"pooled\" or \"per_chain\"")
  }
  expect_error(hmc(adapt_metric = "dense"), "`adapt_metric`")
  expect_error(chees(adapt_metric = "chain"), "`adapt_metric`")

  # two independent normals with different scales: means and variances within
  # Monte Carlo error, and one tuned diag_sd per chain (a chains x 2 matrix)
  set.seed(540)
  a <- normal(1, 0.5)
  b <- normal(-2, 3)
  m <- model(a, b)
  draws <- mcmc(m, sampler = nuts(adapt_metric = "per_chain"), n_samples = 1000, warmup = 500,
                chains = 3, verbose = FALSE)
  for (v in list(c("a", 1, 0.5), c("b", -2, 3))) {
    x <- as.numeric(as.matrix(draws[, v[1]]))
    ess <- coda::effectiveSize(draws[, v[1]])
    mu <- as.numeric(v[2])
    s <- as.numeric(v[3])
    expect_gt(ess, 300)
    expect_lt(abs(mean(x) - mu) / (s / sqrt(ess)), 4, label = paste("z of the mean of", v[1]))
    # the variance's standard error is about s^2 sqrt(2 / ess)
    expect_lt(abs(var(x) / s^2 - 1) / sqrt(2 / ess), 4, label = paste("z of the variance of", v[1]))
  }
  tuned <- attr(draws, "model_info")$run$diag_sd
  expect_equal(dim(tuned), c(3L, 2L))
  # each chain's metric is near the posterior sds (free parameters a, b)
  expect_true(all(abs(log(tuned[, 1] / 0.5)) < log(2)))
  expect_true(all(abs(log(tuned[, 2] / 3)) < log(2)))
  # extra_samples() restarts every chain with its own row
  more <- extra_samples(draws, n_samples = 50, verbose = FALSE)
  expect_equal(coda::niter(more), 1050)
  expect_equal(attr(more, "model_info")$run$diag_sd, tuned)

  # pooled (the default) tunes one diag_sd for all chains, and a run with
  # adapt_metric = "pooled" is the default run draw for draw
  set.seed(541)
  default <- mcmc(m, n_samples = 50, warmup = 100, chains = 2, verbose = FALSE)
  set.seed(541)
  pooled <- mcmc(m, sampler = nuts(adapt_metric = "pooled"), n_samples = 50, warmup = 100,
                 chains = 2, verbose = FALSE)
  expect_identical(as.matrix(default), as.matrix(pooled))
  expect_null(dim(attr(default, "model_info")$run$diag_sd))
  expect_length(attr(default, "model_info")$run$diag_sd, 2)
})

test_that("warmup starts from a diagonal metric scaled to the gradient unless diag_sd is given", {
  expect_true(nuts()$parameters$diag_sd_from_gradient)
  expect_true(hmc()$parameters$diag_sd_from_gradient)
  expect_true(chees()$parameters$diag_sd_from_gradient)
  expect_false(nuts(diag_sd = 1)$parameters$diag_sd_from_gradient)
  expect_false(hmc(diag_sd = c(1, 2))$parameters$diag_sd_from_gradient)
  # the usage shows the real default (issue 38: it showed diag_sd = 1)
  for (f in list(nuts, hmc, chees)) expect_identical(formals(f)$diag_sd, "gradient")
  expect_true(nuts(diag_sd = "gradient")$parameters$diag_sd_from_gradient)
  expect_identical(nuts()$parameters$diag_sd, 1)
  expect_error(nuts(diag_sd = "unit"), "`diag_sd` must be \"gradient\" \\(the default\\) or positive numbers")
  expect_error(chees(diag_sd = -1), "`diag_sd` must be positive numbers")

  # a mean known to 0.01 beside a standard normal: from the unit metric the
  # step size must fit the narrow one until the first window (100 iterations
  # in), with trajectories of about 100 steps; from the gradient's scales they
  # are a few steps long from the start
  set.seed(542)
  y <- rnorm(10000, 3, 1)
  a <- normal(0, 1)
  b <- normal(0, 10)
  distribution(y) <- normal(b, 1)
  m <- model(a, b)
  first_steps <- function(sampler) {
    set.seed(543)
    draws <- mcmc(m, sampler = sampler, n_samples = 400, warmup = 300, chains = 4,
                  verbose = FALSE)
    p <- get_sampler_params(draws, inc_warmup = TRUE)
    list(draws = draws, steps = mean(vapply(p, function(q) mean(q[1:75, "n_leapfrog__"]), 0)))
  }
  from_gradient <- first_steps(nuts(metric = "diagonal"))
  from_unit <- first_steps(nuts(metric = "diagonal", diag_sd = 1))
  expect_gt(from_unit$steps, 4 * from_gradient$steps)
  # and the posterior is still sampled correctly: a ~ N(0, 1), b ~ N(ybar, 1 / 100)
  s <- 1 / sqrt(10000 + 1 / 100)
  mu_b <- sum(y) * s^2
  # (the variance's z with the effective size of the squared deviations:
  # NUTS's draws of a Gaussian are anticorrelated in the mean, so the mean's
  # effective size overstates the variance's)
  for (v in list(list("a", 0, 1), list("b", mu_b, s))) {
    x <- as.matrix(from_gradient$draws[, v[[1]]])
    ess <- coda::effectiveSize(coda::mcmc(x))
    ess_sq <- coda::effectiveSize(coda::mcmc((x - v[[2]])^2))
    expect_lt(abs(mean(x) - v[[2]]) / (v[[3]] / sqrt(ess)), 4, label = paste("z of the mean of", v[[1]]))
    expect_lt(abs(mean((x - v[[2]])^2) / v[[3]]^2 - 1) / sqrt(2 / ess_sq), 4,
              label = paste("z of the variance of", v[[1]]))
  }
})

# -- continuing and recovering runs ---------------------------------------------

test_that("extra_samples() continues the chains without warmup and keeps the earlier draws", {
  set.seed(530)
  x <- normal(1, 2)
  m <- model(x)
  draws <- mcmc(m, n_samples = 300, warmup = 300, chains = 2, verbose = FALSE)
  more <- extra_samples(draws, n_samples = 200, verbose = FALSE)
  expect_s3_class(more, "greta_mcmc_list")
  expect_equal(coda::nchain(more), 2)
  expect_equal(coda::niter(more), 500)
  expect_equal(start(more), start(draws))
  # numbered as greta numbers them: from 1 after warmup, going on from there
  expect_equal(start(draws), 1)
  expect_equal(end(more), 500)
  # the earlier draws come first, unchanged
  expect_equal(as.matrix(more[[1]])[1:300, , drop = FALSE], as.matrix(draws[[1]]))
  expect_equal(nrow(get_sampler_params(more)[[2]]), 500)
  # the new draws come from the tuned sampler: the same fixed step size
  params <- get_sampler_params(more)[[1]]
  expect_equal(length(unique(params[, "stepsize__"])), 1)
  # and sample the right posterior
  new <- unlist(lapply(more, function(ch) as.numeric(ch[301:500, "x"])))
  expect_lt(abs(mean(new) - 1), 4 * 2 / sqrt(100))
  expect_error(extra_samples(draws, thin = 2, verbose = FALSE), "thin = 1")
  expect_error(extra_samples(list()), "greta_mcmc_list")
  # thinned draws continue with their own thinning
  thinned <- mcmc(m, n_samples = 40, thin = 4, warmup = 50, chains = 2, verbose = FALSE)
  thinned2 <- extra_samples(thinned, n_samples = 20, thin = 4, verbose = FALSE)
  expect_equal(coda::niter(thinned2), 15)
  expect_equal(coda::thin(thinned2), 4)
})

test_that("print() of draws shows a few, as greta's does, not every draw", {
  set.seed(532)
  x <- normal(0, 1, dim = c(30, 2))
  draws <- mcmc(model(x), n_samples = 50, warmup = 20, chains = 2, verbose = FALSE)
  out <- capture.output(returned <- print(draws))
  expect_identical(returned, draws)
  expect_lt(length(out), 25)
  expect_true(any(grepl("MCMC draws from lockstep", out)))
  expect_true(any(grepl("Iterations = 50", out)))
  expect_true(any(grepl("Chains = 2", out)))
  expect_true(any(grepl("Chain 1 \\(iterations 1...5\\)", out)))
  expect_true(any(grepl("45 more draws", out)))
  expect_true(any(grepl("50 more variables: x\\[11,1\\]", out)))
  # the first rows and columns of chain 1
  shown <- utils::read.table(text = out[grep("^ *x\\[1,1\\]", out) + 0:5], header = TRUE,
                             check.names = FALSE)
  expect_equal(unname(as.matrix(shown))[, 1:3], unname(as.matrix(draws[[1]])[1:5, 1:3]),
               tolerance = 1e-6)
  more <- capture.output(print(draws, n = 8, variables = 60))
  expect_true(any(grepl("42 more draws", more)))
  expect_false(any(grepl("more variables", more)))
  expect_error(print(draws, n = -1), "`n` must be a whole number")
})

test_that("extra_samples() restarts from the last draws when the sampler is gone", {
  set.seed(531)
  x <- normal(-3, 0.5)
  m <- model(x)
  draws <- mcmc(m, n_samples = 100, warmup = 200, chains = 2, verbose = FALSE)
  path <- tempfile(fileext = ".rds")
  saveRDS(draws, path)
  reloaded <- readRDS(path)  # the sampler's external pointer is now NULL
  more <- suppressMessages(extra_samples(reloaded, n_samples = 300, verbose = FALSE))
  expect_equal(coda::niter(more), 400)
  new <- unlist(lapply(more, function(ch) as.numeric(ch[101:400, "x"])))
  expect_lt(abs(mean(new) + 3), 4 * 0.5 / sqrt(60))
  # other compute options also give a new sampler
  more2 <- extra_samples(draws, n_samples = 10, verbose = FALSE,
                         compute_options = cpu_only(threads = 2))
  expect_equal(coda::niter(more2), 110)
})

test_that("raw draws over getOption(\"lockstep.max_raw_draws_mb\") are not kept: the same draws, extra_samples() goes on, calculate() says why", {
  mu <- normal(0, 5)
  tau <- cauchy(0, 5, truncation = c(0, Inf))
  z <- normal(0, 1, dim = 8)
  theta <- mu + tau * z
  distribution(eight_schools_data$y) <- normal(theta, eight_schools_data$sigma)
  m <- model(mu, tau)
  run <- function() {
    set.seed(77)
    suppressWarnings(mcmc(m, n_samples = 60, warmup = 60, chains = 2, verbose = FALSE))
  }
  kept <- run()
  raw <- attr(kept, "model_info")$raw_draws
  expect_equal(dim(raw[[2]]), c(60L, 10L))
  expect_equal(unname(kept[[2]][, "tau"]), unname(exp(raw[[2]][, 2])))
  old <- options(lockstep.max_raw_draws_mb = 0)
  on.exit(options(old), add = TRUE)
  dropped <- run()
  # the same chains, the same draws of the targets, without the free states
  expect_identical(lapply(dropped, unclass), lapply(kept, unclass))
  expect_null(attr(dropped, "model_info")$raw_draws)
  set.seed(77)
  msgs <- capture.output(invisible(suppressWarnings(mcmc(m, n_samples = 60, warmup = 60, chains = 2))),
                         type = "message")
  expect_true(any(grepl("not keeping the raw draws", msgs)))
  expect_error(calculate(theta, values = dropped),
               "`values` holds no raw draws.*lockstep.max_raw_draws_mb")
  expect_error(log_lik(dropped), "`draws` holds no raw draws")
  # extra_samples() goes on from the sampler in memory as with raw draws
  # (the option, still 0, now drops them from both) ...
  more_kept <- extra_samples(kept, n_samples = 30, verbose = FALSE)
  more_dropped <- extra_samples(dropped, n_samples = 30, verbose = FALSE)
  expect_equal(coda::niter(more_dropped), 90)
  expect_identical(lapply(more_dropped, unclass), lapply(more_kept, unclass))
  expect_null(attr(more_kept, "model_info")$raw_draws)
  # ... and from each chain's last draw once the sampler is gone
  path <- tempfile(fileext = ".rds")
  saveRDS(dropped, path)
  restarted <- suppressMessages(extra_samples(readRDS(path), n_samples = 30, verbose = FALSE))
  expect_equal(coda::niter(restarted), 90)
  expect_equal(as.matrix(restarted[[1]])[1:60, ], as.matrix(dropped[[1]]))
  # raw draws kept go on being kept while they fit, and calculate() reads them
  options(lockstep.max_raw_draws_mb = 1024)
  kept <- run()
  more <- extra_samples(kept, n_samples = 30, verbose = FALSE)
  raw <- attr(more, "model_info")$raw_draws
  expect_equal(dim(raw[[1]]), c(90L, 10L))
  expect_equal(unname(as.matrix(more[[1]])[1:60, ]), unname(as.matrix(kept[[1]])))
  expect_equal(unname(more[[1]][, "mu"]), unname(raw[[1]][, 1]))
  th <- calculate(theta, values = more)
  free <- unname(as.matrix(raw[[1]]))
  expect_equal(unname(as.matrix(th[[1]])), free[, 1] + exp(free[, 2]) * free[, 3:10])
  options(lockstep.max_raw_draws_mb = "lots")
  expect_error(mcmc(m, n_samples = 10, warmup = 10, verbose = FALSE),
               "option `lockstep.max_raw_draws_mb` must be a number of megabytes")
})

test_that("extra_samples() goes on where the run was made, unless told otherwise", {
  set.seed(533)
  x <- normal(0, 1, dim = 2)
  m <- model(x)
  emulated <- compute("emulated", threads = 1)
  draws <- mcmc(m, n_samples = 20, warmup = 20, chains = 2, verbose = FALSE,
                compute_options = emulated)
  same <- function(draws) attr(draws, "model_info")$run$options
  # by default on the run's own backend, with the run's own sampler
  handle <- attr(draws, "model_info")$run$handle
  more <- extra_samples(draws, n_samples = 10, verbose = FALSE)
  expect_identical(same(more), emulated)
  expect_identical(attr(more, "model_info")$run$handle, handle)
  # n_cores changes the threads and keeps the rest of the run's options
  threads <- extra_samples(more, n_samples = 10, n_cores = 2, verbose = FALSE)
  expect_identical(same(threads)$backend, "emulated")
  expect_identical(same(threads)$threads, 2L)
  # compute_options moves the chains
  moved <- extra_samples(more, n_samples = 10, verbose = FALSE,
                         compute_options = cpu_only(threads = 1))
  expect_identical(same(moved)$backend, "cpu")
  expect_equal(coda::niter(moved), 40)
})

test_that("stashed_samples() is NULL after a finished run and holds an interrupted run's draws", {
  set.seed(532)
  x <- normal(0, 1)
  m <- model(x)
  draws <- mcmc(m, n_samples = 50, warmup = 50, chains = 2, verbose = FALSE)
  expect_null(stashed_samples())
  # an interrupt during sampling, from progress_update(), replaced for the
  # test, in an interactive session (which returns the draws)
  old <- options(lockstep.interactive = TRUE)
  on.exit(options(old))
  interrupt <- sampling_interrupter(20)
  out <- with_progress_update(interrupt$update, suppressWarnings(suppressMessages(
    mcmc(m, n_samples = 100, warmup = 10, chains = 2, pb_update = 10, verbose = FALSE))))
  interrupted_at <- interrupt$at
  stashed <- stashed_samples()
  expect_s3_class(stashed, "greta_mcmc_list")
  expect_equal(as.matrix(stashed), as.matrix(out))
  expect_equal(coda::niter(stashed), interrupted_at)  # every draw made before the interrupt
  expect_lt(interrupted_at, 100)
})

test_that("extra_samples() twice on the same draws continues those draws both times", {
  set.seed(534)
  x <- normal(0, 1)
  m <- model(x)
  d <- mcmc(m, n_samples = 30, warmup = 30, chains = 2, verbose = FALSE)
  e1 <- extra_samples(d, 20, verbose = FALSE)
  e1b <- extra_samples(e1, 20, verbose = FALSE)
  e2 <- extra_samples(d, 20, verbose = FALSE)
  expect_equal(coda::niter(e2), 50)
  expect_equal(as.matrix(e2[[1]])[1:30, ], as.matrix(d[[1]])[, 1])
  # e2's new draws are not e1's continuation (the sampler had gone on past d)
  expect_false(isTRUE(all.equal(as.matrix(e2[[1]])[31:50, ], as.matrix(e1b[[1]])[51:70, ])))
  # and continuing the newest draws goes on with the sampler in memory
  expect_equal(coda::niter(extra_samples(e1b, 10, verbose = FALSE)), 80)
})

test_that("extra_samples()' progress counts its own bad proposals, not the run's before", {
  set.seed(535)
  x <- normal(0, 1)
  m <- model(x)
  # a step size far too large and no warmup: most proposals diverge
  d <- suppressWarnings(mcmc(m, sampler = hmc(epsilon = 40, Lmin = 3, Lmax = 3),
                             n_samples = 20, warmup = 0, chains = 2, verbose = FALSE))
  expect_gt(sum(do.call(rbind, get_sampler_params(d))[, "divergent__"]), 5)
  seen <- numeric()
  e <- with_progress_update(function(bar, done, bad, ...) {
    seen <<- c(seen, bad)
    invisible(NULL)
  }, suppressWarnings(extra_samples(d, 10, verbose = FALSE)))
  new_bad <- sum(do.call(rbind, get_sampler_params(e))[-(1:40), "divergent__"])
  expect_equal(max(seen), new_bad)
})

test_that("stashed_samples() after an interrupted extra_samples() holds the earlier draws too", {
  set.seed(536)
  x <- normal(0, 1)
  m <- model(x)
  d <- mcmc(m, n_samples = 50, warmup = 20, chains = 2, verbose = FALSE)
  old <- options(lockstep.interactive = TRUE)
  on.exit(options(old))
  interrupt <- sampling_interrupter(20)
  said <- character()
  out <- with_progress_update(interrupt$update, withCallingHandlers(
    suppressWarnings(extra_samples(d, 100, pb_update = 10, verbose = FALSE)),
    message = function(e) {
      said <<- c(said, conditionMessage(e))
      invokeRestart("muffleMessage")
    }))
  interrupted_at <- interrupt$at
  stashed <- stashed_samples()
  expect_equal(coda::niter(out), 50 + interrupted_at)
  expect_true(any(grepl(paste("returning the", 50 + interrupted_at, "draws per chain"), said)))
  expect_equal(as.matrix(stashed), as.matrix(out))
  expect_equal(start(stashed), 1)
})

test_that("summary() of draws too short to diagnose gives NA diagnostics", {
  x <- normal(0, 1)
  m <- model(x)
  d <- mcmc(m, n_samples = 2, warmup = 10, chains = 2, verbose = FALSE)
  s <- summary(d)
  expect_true(is.na(s$diagnostics$rhat))
  expect_true(is.na(rhat(d)))
  expect_error(rhat(matrix(1:6, 3, 2)), "at least 4 rows")
})

test_that("an interrupt ends the iteration under way at its next leapfrog step", {
  skip_on_os("windows")  # the test sends SIGINT, as Ctrl-C does
  # One iteration of this run takes seconds uncut: a step far too small for
  # the posterior's scale (sd 30) and a gradient too weak to turn the
  # momentum, so every tree grows to 2^14 - 1 leapfrog steps of a gradient
  # over 10^5 rows; the run's first chunk is that one iteration.
  set.seed(534)
  y <- rnorm(1e5)
  mu <- normal(0, 1e4)
  distribution(y) <- normal(mu, 1e4)
  m <- model(mu)
  sampler <- nuts(epsilon = 1e-3, max_treedepth = 14)
  options <- cpu_only(threads = 1)
  start <- initials(mu = 1.5)
  quiet <- function(x) suppressWarnings(suppressMessages(x))  # maximum tree depth, one init
  iteration <- system.time(
    one <- quiet(mcmc(m, sampler = sampler, n_samples = 1, warmup = 0, chains = 2,
                initial_values = start, verbose = FALSE, compute_options = options))
  )[["elapsed"]]
  expect_equal(unname(get_sampler_params(one)[[1]][, "n_leapfrog__"]), 2^14 - 1)
  # Ctrl-C half a second into a run of 10 such iterations, at the console
  old <- options(lockstep.interactive = TRUE)
  on.exit(options(old))
  delay <- min(0.5, iteration / 4)
  system(sprintf("(sleep %.3f; kill -INT %d)", delay, Sys.getpid()), wait = FALSE)
  started <- proc.time()[["elapsed"]]
  out <- quiet(
    mcmc(m, sampler = sampler, n_samples = 10, warmup = 0, chains = 2,
         initial_values = start, verbose = FALSE, compute_options = options)
  )
  took <- proc.time()[["elapsed"]] - started
  # it stopped at once, with the cut iteration's draw kept (a valid draw)
  expect_lt(took, delay + iteration / 2)
  expect_s3_class(out, "greta_mcmc_list")
  expect_equal(coda::niter(out), 1)
  expect_lt(get_sampler_params(out)[[1]][, "n_leapfrog__"], 2^14 - 1)
  expect_equal(as.matrix(stashed_samples()), as.matrix(out))
})

test_that("window() keeps a greta_mcmc_list and its diagnostics aligned", {
  set.seed(533)
  x <- normal(0, 1)
  draws <- mcmc(model(x), n_samples = 100, warmup = 200, chains = 2, verbose = FALSE)
  w <- window(draws, start = 41, thin = 2)
  expect_s3_class(w, "greta_mcmc_list")
  expect_equal(coda::niter(w), 30)
  # iterations 41, 43, ..., 99 of 1..100, as greta numbers them
  expect_equal(as.numeric(w[[1]][, "x"]), as.numeric(draws[[1]][seq(41, 99, by = 2), "x"]))
  expect_equal(nrow(get_sampler_params(w)[[1]]), 30)
  expect_equal(coda::niter(attr(w, "model_info")$raw_draws), 30)
  expect_error(extra_samples(w, verbose = FALSE), "cannot continue")
})

# -- greta's other samplers -------------------------------------------------------

test_that("rwmh(), slice() and chees() sample a conjugate normal posterior", {
  set.seed(540)
  sigma <- 2
  y <- rnorm(20, 2.5, sigma)
  mu <- normal(1, 3)
  tau <- exponential(1)  # a second, bounded parameter (its posterior is its prior)
  distribution(y) <- normal(mu, sigma)
  m <- model(mu, tau)
  precision <- 1 / 9 + length(y) / sigma^2
  post_mean <- (1 / 9 + sum(y) / sigma^2) / precision
  post_sd <- sqrt(1 / precision)
  for (sampler in list(rwmh(), rwmh(proposal = "uniform"), slice(), chees())) {
    label <- class(sampler)[1]
    # a rare divergence of the step-size search is not this test's subject
    draws <- suppressWarnings(mcmc(m, sampler = sampler, n_samples = 2000, warmup = 1000,
                                   chains = 4, verbose = FALSE))
    x <- as.numeric(as.matrix(draws[, "mu"]))
    ess <- coda::effectiveSize(draws[, "mu"])
    expect_gt(ess, 200, label = label)
    expect_lt(abs(mean(x) - post_mean) / (sd(x) / sqrt(ess)), 4, label = label)
    expect_equal(sd(x), post_sd, tolerance = 0.1, label = label)
    t <- as.numeric(as.matrix(draws[, "tau"]))
    ess_t <- coda::effectiveSize(draws[, "tau"])
    expect_lt(abs(mean(t) - 1) / (sd(t) / sqrt(ess_t)), 4, label = label)
    # none builds a tree (chees()'s warmup makes NUTS transitions, whose
    # depths once stayed in its sampling iterations' diagnostics)
    depths <- unlist(lapply(get_sampler_params(draws), function(p) p[, "treedepth__"]))
    expect_true(all(depths == 0), label = paste(label, "tree depths"))
  }
  expect_error(rwmh(proposal = "cauchy"), "`proposal` must be \"normal\" or \"uniform\"")
  expect_error(slice(max_doublings = -1), "`max_doublings`")
  expect_output(print(slice()), "max_doublings = 5")
  expect_error(chees(max_leapfrog = 0), "`max_leapfrog`")
})

test_that("a small model runs on one thread unless the threads are chosen: the same draws as threads = 1", {
  op <- options(lockstep.threads = NULL)
  on.exit(options(op))
  auto <- cpu_only()
  expect_true(auto$threads_auto)
  expect_false(cpu_only(threads = 2)$threads_auto)
  if (auto$threads > 1) expect_output(print(auto), "up to")
  mu <- normal(0, 1)
  y <- c(0.3, -0.2, 1.1)
  distribution(y) <- normal(mu, 1)
  m <- model(mu)
  run <- function(co) {
    set.seed(71)
    mcmc(m, n_samples = 60, warmup = 40, chains = 2, verbose = FALSE, compute_options = co)
  }
  # cpu_only() left at its default, asking for two threads: the model's few
  # values per gradient run on one thread, so the draws are those of threads = 1
  two_auto <- cpu_only(threads = NULL)
  two_auto$threads <- 2L
  expect_identical(as.matrix(run(two_auto)), as.matrix(run(cpu_only(threads = 1))))
})

test_that("nuts and hmc on a small model step their chains in groups, one per thread, with the draws of one thread", {
  # Each thread builds its own chains' trees through an executor of its own
  # (sampler/chain_groups.hpp); every chain's arithmetic is what it would be
  # in lockstep, so the draws do not depend on the threads.
  set.seed(72)
  x <- rnorm(40)
  y <- 0.5 + 1.5 * x + rnorm(40, sd = 0.7)
  a <- normal(0, 5)
  b <- normal(0, 5)
  s <- normal(0, 2, truncation = c(0, Inf))
  distribution(y) <- normal(a + b * x, s)
  m <- model(a, b, s)
  run <- function(co, sampler = nuts(), chains = 3) {
    set.seed(73)
    mcmc(m, sampler = sampler, n_samples = 150, warmup = 150, thin = 2, chains = chains,
         verbose = FALSE, compute_options = co)
  }
  groups <- function(draws) attr(attr(draws, "model_info")$run$handle, "chain_groups")
  one <- run(cpu_only(threads = 1))
  two <- run(cpu_only(threads = 2))
  expect_equal(groups(one), 1)
  expect_equal(groups(two), 2)
  expect_equal(groups(run(cpu_only(threads = 2), chains = 1)), 1)  # at most one group per chain
  expect_identical(as.matrix(two), as.matrix(one))
  expect_identical(attr(two, "sampler_params"), attr(one, "sampler_params"))
  expect_equal(coda::niter(two), 75)
  # the draws are the posterior's: least squares is close to it with flat-ish priors
  fit <- stats::lm(y ~ x)
  expect_lt(abs(mean(as.matrix(two)[, "b"]) - stats::coef(fit)[["x"]]),
            5 * summary(fit)$coefficients["x", "Std. Error"] / sqrt(100))
  # hmc() too: every group draws the same number of steps each iteration
  hmc_one <- run(cpu_only(threads = 1), sampler = hmc(Lmin = 3, Lmax = 8))
  hmc_two <- run(cpu_only(threads = 2), sampler = hmc(Lmin = 3, Lmax = 8))
  expect_equal(groups(hmc_two), 2)
  expect_identical(as.matrix(hmc_two), as.matrix(hmc_one))
  expect_identical(attr(hmc_two, "sampler_params"), attr(hmc_one, "sampler_params"))
  expect_gt(length(unique(as.matrix(hmc_two)[, "a"])), 20)  # it moved
  # one chain, chees(), and sharded rows stay in lockstep
  expect_equal(groups(run(cpu_only(threads = 2), chains = 1)), 1)
  expect_equal(groups(run(cpu_only(threads = 2), sampler = chees())), 1)
  expect_equal(groups(run(cpu_only(threads = 2, devices = 2))), 1)
  # extra_samples() goes on with the same sampler, in groups
  more <- function(draws, threads) {
    extra_samples(draws, n_samples = 20, thin = 2, verbose = FALSE,
                  compute_options = cpu_only(threads = threads))
  }
  more_two <- more(two, 2)
  expect_equal(coda::niter(more_two), 85)
  expect_identical(as.matrix(more_two), as.matrix(more(one, 1)))
})

test_that("cpu_only(devices = 2) on a hierarchical model: each device owns its groups, and the first 20 NUTS iterations equal one device's", {
  # The seed model (a hierarchical logistic regression, non-centred) at a
  # small size. With two virtual devices each one's rows are whole groups,
  # so only the global parameters' adjoints and per-chain sums cross between
  # them (observation_stage.cpp); that changes the order of some sums, so the
  # draws agree to rounding, not bitwise.
  set.seed(35)
  G <- 200
  K <- 3
  g <- rep(seq_len(G), times = rep(c(5, 10, 15), length.out = G))
  N <- length(g)
  X <- matrix(rnorm(N * K), N, K)
  eta_true <- 0.3 + rnorm(G, 0, 0.8)[g] + drop(X %*% c(0.5, -0.4, 0.2))
  y <- stats::rbinom(N, 1, stats::plogis(eta_true))
  m <- hierarchical_logit_model(X, g, y, G, trace_alpha_g = TRUE)
  expect_equal(m$n_free, 1 + K + 1 + K + G + G * K)
  run <- function(co) {
    set.seed(36)
    d <- mcmc(m, sampler = nuts(metric = "diagonal"), warmup = 10, n_samples = 10, chains = 2,
              verbose = FALSE, compute_options = co)
    list(traced = as.matrix(d), raw = do.call(rbind, lapply(attr(d, "model_info")$raw_draws, as.matrix)),
         params = attr(d, "sampler_params"),
         exchanged = lockstep:::ls_sampler_exchanged(attr(d, "model_info")$run$handle))
  }
  one <- run(cpu_only(threads = 1))
  two <- run(cpu_only(threads = 2, devices = 2))
  # what crosses the devices per all-reduce (one a gradient): at most issue
  # 35's bound, each chain's (globals + 8) doubles, whatever the rows and groups
  expect_equal(unname(one$exchanged), c(0, 0))
  expect_gt(two$exchanged[["calls"]], 20)
  expect_lte(two$exchanged[["bytes"]] / two$exchanged[["calls"]], 2 * (2 * K + 2 + 8) * 8)
  expect_equal(dim(two$raw), c(20, m$n_free))
  expect_gt(length(unique(one$raw[, 1])), 5)  # it moved
  expect_lt(max(abs(two$raw - one$raw) / pmax(1, abs(one$raw))), 1e-8)
  expect_lt(max(abs(two$traced - one$traced) / pmax(1, abs(one$traced))), 1e-8)
  tree <- function(r) unlist(lapply(r$params, function(p) p[, "treedepth__"]))
  expect_identical(tree(two), tree(one))
})

test_that("devices that own their groups as GPUs do (the emulated backend's): each holds its groups' part of the sampler's vectors, and the draws are one device's", {
  # options(lockstep.backend = "emulated") stands in for GPUs: with two
  # devices, each holds the global parameters and its own groups' local ones
  # and runs the kernels on them (device_shards.hpp), the sampler adding the
  # devices' per-chain sums. The emulated backend's sums follow its lanes,
  # whose order changes with the rows a device holds, so the draws agree up
  # to rounding grown through warmup.
  set.seed(37)
  G <- 40
  K <- 2
  # (rows in no order of their groups: the devices take them in the order the
  # executors run them, sorted by group)
  g <- sample(rep(seq_len(G), times = rep(c(3, 6, 9), length.out = G)))
  N <- length(g)
  X <- matrix(rnorm(N * K), N, K)
  y <- stats::rbinom(N, 1, stats::plogis(0.3 + rnorm(G, 0, 0.8)[g] + drop(X %*% c(0.5, -0.4))))
  m <- hierarchical_logit_model(X, g, y, G, trace_alpha_g = TRUE)
  old <- options(lockstep.backend = "emulated")
  on.exit(options(old))
  run <- function(devices) {
    set.seed(38)
    d <- mcmc(m, sampler = nuts(metric = "diagonal"), warmup = 10, n_samples = 10, chains = 2,
              verbose = FALSE, compute_options = cpu_only(threads = 1, devices = devices))
    handle <- attr(d, "model_info")$run$handle
    list(traced = as.matrix(d),
         raw = do.call(rbind, lapply(attr(d, "model_info")$raw_draws, as.matrix)),
         params = attr(d, "sampler_params"), groups = attr(handle, "device_groups"),
         exchanged = lockstep:::ls_sampler_exchanged(handle))
  }
  one <- run(1)
  two <- run(2)
  expect_null(one$groups)
  expect_equal(unname(one$exchanged), c(0, 0))  # one device sends nothing
  # two devices, whole groups each, every group once
  expect_equal(dim(two$groups), c(2, 2))
  expect_equal(two$groups[1, 1], 1)
  expect_equal(two$groups[2, 1], two$groups[1, 2] + 1)
  expect_equal(two$groups[2, 2], G)
  # per gradient of 2 chains the second device sends at most each chain's log
  # density and the 2 K + 2 global coordinates' gradient: 112 bytes, for any
  # number of rows and groups
  per_gradient <- unname(two$exchanged["bytes"] / two$exchanged["calls"])  # (a call a gradient)
  expect_gt(two$exchanged[["calls"]], 20)
  expect_lte(per_gradient, 2 * (1 + 2 * K + 2) * 8)
  expect_gt(per_gradient, 2 * (1 + 2 * K + 2) * 8 * 0.9)
  expect_gt(length(unique(one$raw[, 1])), 5)  # it moved
  expect_lt(max(abs(two$raw - one$raw) / pmax(1, abs(one$raw))), 1e-6)
  expect_lt(max(abs(two$traced - one$traced) / pmax(1, abs(one$traced))), 1e-6)
  tree <- function(r) unlist(lapply(r$params, function(p) p[, "treedepth__"]))
  expect_identical(tree(two), tree(one))
  # rwmh(), slice() and a dense metric run over the devices' groups too, the
  # state on the host
  for (s in list(rwmh(), slice(), nuts(metric = "dense"))) {
    fit <- function(devices) {
      set.seed(39)
      suppressWarnings(mcmc(m, sampler = s, warmup = 30, n_samples = 5, chains = 2, verbose = FALSE,
           compute_options = cpu_only(threads = 1, devices = devices)))
    }
    d1 <- fit(1)
    d2 <- fit(2)
    expect_false(is.null(attr(attr(d2, "model_info")$run$handle, "device_groups")))
    a1 <- as.matrix(d1)
    expect_true(all(is.finite(as.matrix(d2))))
    # (a dense metric's warmup windows amplify the devices' reassociated sums
    # beyond a useful bound in 30 iterations: Catch2's device shards test
    # compares its draws)
    if (s$name != "nuts") expect_lt(max(abs(as.matrix(d2) - a1) / pmax(1, abs(a1))), 1e-6,
                                    label = s$name)
  }
})

# A regression on an uncentred predictor, its data simulated with `seed`: the
# intercept and slope are correlated at about -0.999, which a diagonal metric
# cannot undo. Returns the model and the least-squares fit of its data.
uncentred_regression <- function(seed) {
  set.seed(seed)
  x <- seq(1950, 2010, length.out = 40)
  y <- 2 + 0.01 * (x - 1980) + rnorm(40, sd = 0.3)
  a <- normal(0, 100)
  b <- normal(0, 1)
  s <- normal(0, 2, truncation = c(0, Inf))
  distribution(y) <- normal(a + b * x, s)
  list(model = model(a, b, s), fit = stats::lm(y ~ x))
}

test_that("metric = \"dense\" learns the posterior's covariance: short trajectories on a correlated posterior", {
  regression <- uncentred_regression(91)
  m <- regression$model
  fit <- regression$fit
  run <- function(sampler, threads = 1) {
    set.seed(92)
    mcmc(m, sampler = sampler, n_samples = 500, warmup = 500, chains = 4, verbose = FALSE,
         compute_options = cpu_only(threads = threads))
  }
  steps <- function(draws) {
    mean(unlist(lapply(get_sampler_params(draws), function(p) p[, "n_leapfrog__"])))
  }
  dense <- run(nuts(metric = "dense"))
  diagonal <- suppressWarnings(run(nuts(metric = "diagonal")))  # of its tree depth
  expect_lt(steps(dense) * 5, steps(diagonal))
  expect_lt(steps(dense), 8)
  # the draws are the posterior's: within Monte Carlo error of least squares
  draws <- as.matrix(dense)
  n_eff <- nrow(draws) / 10
  se <- summary(fit)$coefficients[, "Std. Error"]
  expect_lt(abs(mean(draws[, "b"]) - stats::coef(fit)[["x"]]), 5 * se[["x"]] / sqrt(n_eff) + 0.1 * se[["x"]])
  expect_lt(abs(stats::sd(draws[, "b"]) / se[["x"]] - 1), 0.2)
  expect_lt(abs(stats::cor(draws[, "a"], draws[, "b"]) - stats::cov2cor(stats::vcov(fit))[1, 2]), 0.002)
  # the tuned factor goes with the run: extra_samples() goes on with it
  factor <- attr(dense, "model_info")$run$metric_factor
  expect_equal(dim(factor), c(3L, 3L, 1L))
  more <- extra_samples(dense, n_samples = 50, verbose = FALSE)
  expect_equal(coda::niter(more), 550)
  expect_lt(steps(more), 8)
  # per chain: one factor per chain
  per_chain <- run(nuts(metric = "dense", adapt_metric = "per_chain"))
  expect_equal(dim(attr(per_chain, "model_info")$run$metric_factor), c(3L, 3L, 4L))
  expect_lt(steps(per_chain), 8)
  # hmc() and chees() take it too (on an easier posterior: they do not reach
  # this one's typical set from random initial values in a short warmup,
  # with either metric)
  z <- normal(0, 1, dim = 2)
  w <- as_data(c(0.3, -0.2))
  distribution(w) <- normal(z[1] + c(1, 1.1) * z[2], 0.2)
  m2 <- model(z)
  for (smp in list(hmc(Lmin = 3, Lmax = 6, metric = "dense"), chees(metric = "dense"))) {
    set.seed(93)
    d <- mcmc(m2, sampler = smp, n_samples = 500, warmup = 500, verbose = FALSE)
    expect_equal(dim(attr(d, "model_info")$run$metric_factor), c(2L, 2L, 1L))
    # the posterior of z: Gaussian, from the normal equations
    A <- cbind(1, c(1, 1.1))
    P <- diag(2) + crossprod(A) / 0.04
    mu <- solve(P, crossprod(A, c(0.3, -0.2)) / 0.04)
    draws <- as.matrix(d)
    expect_lt(max(abs(colMeans(draws) - mu) / sqrt(diag(solve(P)))), 0.5)
  }
  # on two threads it steps in two chain groups, with the draws of one thread
  two <- run(nuts(metric = "dense"), threads = 2)
  expect_equal(attr(attr(two, "model_info")$run$handle, "chain_groups"), 2)
  expect_identical(as.matrix(two), as.matrix(dense))
  expect_error(nuts(metric = "full"), "`metric` must be \"auto\" or \"diagonal\" or \"dense\"")
  big <- normal(0, 1, dim = 2001)
  expect_error(mcmc(model(big), sampler = nuts(metric = "dense"), n_samples = 1, warmup = 1,
                    chains = 1, verbose = FALSE),
               "a dense metric is for models with at most 2000 free parameters")
  expect_error(hmc(metric = "dense", diag_sd = 2), "`diag_sd` cannot be set with metric = \"dense\"")
})

test_that("metric = \"dense\" on a hierarchical model too large for a whole one covers its global parameters", {
  # 2,408 free parameters: the 8 global ones (alpha, beta, sigma_alpha,
  # sigma_gamma) get a dense factor, the 2,400 group-level ones a diagonal
  set.seed(41)
  G <- 600
  K <- 3
  g <- rep(seq_len(G), each = 6)
  N <- length(g)
  X <- matrix(rnorm(N * K), N, K)
  X[, 2] <- X[, 2] + 3  # an uncentred predictor: beta[2] correlates with alpha
  y <- stats::rbinom(N, 1, stats::plogis(0.3 + rnorm(G, 0, 0.5)[g] + drop(X %*% c(0.5, -0.4, 0.2))))
  m <- hierarchical_logit_model(X, g, y, G)
  expect_gt(m$n_free, 2000)
  run <- function(metric) {
    set.seed(42)
    mcmc(m, sampler = nuts(metric = metric), warmup = 300, n_samples = 200, chains = 2,
         verbose = FALSE, compute_options = cpu_only(threads = 1))
  }
  dense <- run("dense")
  info <- attr(dense, "model_info")$run
  expect_equal(dim(info$metric_factor), c(8L, 8L, 1L))
  covered <- attr(info$metric_factor, "coordinates")
  expect_length(covered, 8)
  expect_true(all(covered >= 1 & covered <= m$n_free))
  expect_length(info$diag_sd, m$n_free)
  expect_true(all(info$diag_sd > 0))
  expect_match(summary(dense)$sampler, "metric dense over the 8 global parameters, diagonal over the rest")
  # the learnt factor holds the correlation of the intercept with the
  # uncentred predictor's slope
  f <- t(info$metric_factor[, , 1])  # the lower factor
  s <- f %*% t(f)
  r <- s / sqrt(outer(diag(s), diag(s)))
  expect_lt(min(r[upper.tri(r)]), -0.5)
  # the posterior of the global parameters is the diagonal metric's, within
  # Monte Carlo error
  diagonal <- run("diagonal")
  a <- as.matrix(dense)
  b <- as.matrix(diagonal)
  se <- sqrt(apply(a, 2, stats::var) / 40 + apply(b, 2, stats::var) / 40)
  expect_lt(max(abs(colMeans(a) - colMeans(b)) / se), 5)
  # extra_samples() goes on with the same metric over the same coordinates
  more <- extra_samples(dense, n_samples = 20, verbose = FALSE)
  expect_equal(coda::niter(more), 220)
  expect_identical(attr(attr(more, "model_info")$run$metric_factor, "coordinates"), covered)
})

test_that("metric = \"auto\" (the default) learns a dense metric where correlations call for it, else a diagonal one", {
  expect_identical(nuts()$parameters$metric, "auto")
  expect_identical(hmc()$parameters$metric, "auto")
  expect_identical(chees()$parameters$metric, "auto")
  run <- function(m, sampler = nuts(), threads = 1, chains = 4) {
    set.seed(95)
    mcmc(m, sampler = sampler, n_samples = 300, warmup = 500, chains = chains, verbose = FALSE,
         compute_options = cpu_only(threads = threads))
  }
  steps <- function(draws) {
    mean(unlist(lapply(get_sampler_params(draws), function(p) p[, "n_leapfrog__"])))
  }
  off_diagonal <- function(draws) {
    f <- attr(draws, "model_info")$run$metric_factor
    max(abs(f[, , 1][upper.tri(f[, , 1])]))  # the slice is the lower factor's transpose
  }
  regression <- uncentred_regression(96)
  correlated <- regression$model
  auto <- run(correlated)
  expect_gt(off_diagonal(auto), 0)
  expect_match(summary(auto)$sampler, "metric dense (chosen by metric = \"auto\")", fixed = TRUE)
  expect_lt(steps(auto), 8)
  expect_lt(abs(stats::cor(as.matrix(auto)[, "a"], as.matrix(auto)[, "b"]) -
                  stats::cov2cor(stats::vcov(regression$fit))[1, 2]), 0.002)
  # in chain groups on two threads, the draws of one thread
  two <- run(correlated, threads = 2)
  expect_equal(attr(attr(two, "model_info")$run$handle, "chain_groups"), 2)
  expect_identical(as.matrix(two), as.matrix(auto))
  # independent parameters of very different scales: a diagonal metric, which
  # learns the scales
  u <- normal(0, 0.01)
  v <- normal(5, 100)
  independent <- run(model(u, v))
  f <- attr(independent, "model_info")$run$metric_factor[, , 1]
  expect_equal(f[upper.tri(f)], 0)
  expect_equal(diag(f), c(0.01, 100), tolerance = 0.3)
  expect_lt(steps(independent), 8)
  # hmc() and chees() choose it too (on an easier posterior, correlated at
  # -0.98: they do not reach the regression's typical set from random initial
  # values in a short warmup)
  z <- normal(0, 1, dim = 2)
  w <- as_data(c(0.3, -0.2))
  distribution(w) <- normal(z[1] + c(1, 1.1) * z[2], 0.2)
  for (smp in list(hmc(Lmin = 3, Lmax = 6), chees())) {
    d <- run(model(z), sampler = smp)
    expect_gt(off_diagonal(d), 0)
  }
  # with more than 100 free parameters, the diagonal metric alone
  big <- normal(0, 1, dim = 101)
  d <- run(model(big), chains = 2)
  expect_null(attr(d, "model_info")$run$metric_factor)
  expect_length(attr(d, "model_info")$run$diag_sd, 101)
  # diag_sd is where "auto" starts from
  set.seed(97)
  start <- mcmc(model(u, v), sampler = nuts(diag_sd = c(0.01, 100)), n_samples = 1, warmup = 0,
                chains = 1, verbose = FALSE)
  expect_equal(diag(attr(start, "model_info")$run$metric_factor[, , 1]), c(0.01, 100))
})

test_that("a chain that has not come in by the end of warmup is named in a warning", {
  x <- normal(0, 1)
  m <- model(x)
  set.seed(561)
  # random-walk steps of about one sd cannot cover 1e4 in 30 iterations
  inits <- list(initials(x = 0.1), initials(x = 1e4), initials(x = -0.2), initials(x = 0.3))
  expect_warning(
    mcmc(m, sampler = rwmh(), n_samples = 10, warmup = 30, chains = 4, initial_values = inits,
         verbose = FALSE),
    "chain 2 had not reached the other chains by the end of warmup"
  )
  # with every chain in, no such warning
  near <- list(initials(x = 0.1), initials(x = 0.5), initials(x = -0.2), initials(x = 0.3))
  expect_no_lagging_warning <- function(expr) {
    withCallingHandlers(expr, warning = function(w) {
      expect_false(grepl("had not reached", conditionMessage(w)))
      invokeRestart("muffleWarning")
    })
  }
  expect_no_lagging_warning(mcmc(m, sampler = rwmh(), n_samples = 10, warmup = 30, chains = 4,
                                 initial_values = near, verbose = FALSE))
})

test_that("get_sampler_params(inc_warmup = TRUE) puts every warmup iteration first", {
  set.seed(534)
  x <- normal(0, 1)
  draws <- mcmc(model(x), n_samples = 40, thin = 2, warmup = 30, chains = 3, verbose = FALSE)
  kept <- get_sampler_params(draws)
  all <- get_sampler_params(draws, inc_warmup = TRUE)
  expect_length(all, 3)
  for (k in 1:3) {
    expect_equal(nrow(kept[[k]]), 20)
    expect_equal(nrow(all[[k]]), 30 + 20)
    expect_equal(all[[k]][31:50, ], kept[[k]], ignore_attr = TRUE)
    expect_equal(colnames(all[[k]]), colnames(kept[[k]]))
  }
  # warmup's step sizes move (dual averaging); sampling's stay at the tuned one
  expect_gt(length(unique(all[[1]][1:30, "stepsize__"])), 1)
  expect_length(unique(kept[[1]][, "stepsize__"]), 1)
  # extra_samples() keeps the warmup of the run it continues
  more <- extra_samples(draws, n_samples = 10, thin = 2, verbose = FALSE)
  expect_equal(nrow(get_sampler_params(more, inc_warmup = TRUE)[[2]]), 30 + 25)
  # no warmup: nothing before the draws; a window keeps none
  none <- mcmc(model(x), n_samples = 10, warmup = 0, chains = 2, verbose = FALSE)
  expect_equal(nrow(get_sampler_params(none, inc_warmup = TRUE)[[1]]), 10)
  expect_error(get_sampler_params(window(draws, start = 11), inc_warmup = TRUE),
               "no warmup diagnostics")
})

test_that("a run whose kept draws would not fit in memory stops before it starts (issue 38)", {
  x <- normal(0, 1, dim = 3)
  m <- model(x)
  # 1e9 draws of 4 chains of 3 values: about 536 GB, twice over
  started <- proc.time()[["elapsed"]]
  expect_error(mcmc(m, n_samples = 1e9, chains = 4, verbose = FALSE),
               "keeping 1,000,000,000 draws of 4 chains of 3 traced values would take about [0-9.]+ [GT]B, more than the")
  expect_lt(proc.time()[["elapsed"]] - started, 5)  # refused, not run
  old <- options(lockstep.memory_available_mb = 1)
  on.exit(options(old))
  # 1 MB: 20,000 draws of 2 chains of 3 values need ~2.7 MB; 2,000 fit
  expect_error(mcmc(m, n_samples = 20000, warmup = 10, chains = 2, verbose = FALSE),
               "more than the 1 MB of memory available: use a smaller `n_samples`")
  d <- mcmc(m, n_samples = 2000, warmup = 10, chains = 2, verbose = FALSE)
  expect_equal(coda::niter(d), 2000)
  expect_error(extra_samples(d, n_samples = 20000, verbose = FALSE), "of memory available")
  options(lockstep.memory_available_mb = "lots")
  expect_error(mcmc(m, n_samples = 10, verbose = FALSE),
               "option `lockstep.memory_available_mb` must be a positive number")
})

test_that("an interrupt at the console returns draws or, in warmup, aborts; in a script it stops with the draws stashed (issue 38)", {
  set.seed(538)
  x <- normal(0, 1)
  m <- model(x)
  # a progress_update() that interrupts warmup at its first update
  warmup_interrupter <- function(bar, done, ...) {
    if (bar$name == "  warmup" && done > 0) {
      signalCondition(structure(class = c("interrupt", "condition"),
                                list(message = "interrupt", call = NULL)))
    }
    invisible(NULL)
  }
  old <- options(lockstep.interactive = TRUE)
  on.exit(options(old))
  # at the console, warmup interrupted: abort, so an assignment keeps its value
  earlier <- "the earlier value"
  result <- withRestarts(
    with_progress_update(warmup_interrupter, suppressMessages(
      earlier <- mcmc(m, n_samples = 50, warmup = 200, chains = 2, pb_update = 10,
                      verbose = FALSE))),
    abort = function() "aborted")
  expect_identical(result, "aborted")
  expect_identical(earlier, "the earlier value")
  # in a script: an error, for warmup and for sampling; the draws are stashed
  options(lockstep.interactive = FALSE)
  expect_error(with_progress_update(warmup_interrupter, suppressMessages(
    mcmc(m, n_samples = 50, warmup = 200, chains = 2, pb_update = 10, verbose = FALSE))),
    "sampling was interrupted during warmup, before any draw")
  interrupt <- sampling_interrupter(20)
  said <- character()
  expect_error(with_progress_update(interrupt$update, withCallingHandlers(
    mcmc(m, n_samples = 100, warmup = 10, chains = 2, pb_update = 10, verbose = FALSE),
    message = function(e) {
      said <<- c(said, conditionMessage(e))
      invokeRestart("muffleMessage")
    })), "sampling was interrupted: the draws made so far are in stashed_samples\\(\\)")
  expect_true(any(grepl(paste("the", interrupt$at, "draws per chain made so far are in stashed"),
                        said)))
  expect_equal(coda::niter(stashed_samples()), interrupt$at)
})
