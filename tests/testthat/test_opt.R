# opt(): maximum likelihood and MAP estimates with known answers, every
# optimiser, the Hessian, several starts, and bad arguments.

test_that("opt() finds the maximum likelihood estimates of a normal model", {
  set.seed(601)
  x <- rnorm(50, -2, 1.2)
  mu <- variable()
  sd <- variable(lower = 0)
  distribution(x) <- normal(mu, sd)
  m <- model(mu, sd)
  mle_sd <- sqrt(mean((x - mean(x))^2))
  o <- opt(m, adjust = FALSE)
  expect_equal(names(o), c("par", "value", "iterations", "convergence"))
  expect_equal(o$par$mu, mean(x), tolerance = 1e-5)
  expect_equal(o$par$sd, mle_sd, tolerance = 1e-5)
  expect_identical(o$convergence, 0)
  expect_equal(o$value, -sum(dnorm(x, mean(x), mle_sd, log = TRUE)), tolerance = 1e-8)
  for (optimiser in list(adam(), rms_prop(learning_rate = 0.05), nelder_mead(),
                         gradient_descent(learning_rate = 0.005, momentum = 0.5),
                         adagrad(), adamax(learning_rate = 0.05), nadam(learning_rate = 0.05),
                         ftrl(learning_rate = 0.5), proximal_gradient_descent(learning_rate = 0.005),
                         proximal_adagrad(learning_rate = 0.5), adagrad_da(learning_rate = 0.5))) {
    o2 <- opt(m, optimiser = optimiser, adjust = FALSE, max_iterations = 5000, tolerance = 1e-12)
    label <- class(optimiser)[1]
    expect_equal(o2$par$mu, mean(x), tolerance = 1e-3, label = label)
    expect_equal(o2$par$sd, mle_sd, tolerance = 1e-3, label = label)
  }
})

test_that("opt() with adjust = TRUE maximises the density of the free state (MAP)", {
  set.seed(602)
  y <- rnorm(10, 1, 1)
  mu <- normal(0, 1)
  distribution(y) <- normal(mu, 1)
  m <- model(mu)
  o <- opt(m)
  # a conjugate normal: the posterior mode is sum(y) / (n + 1)
  expect_equal(o$par$mu, sum(y) / 11, tolerance = 1e-6)
  # the Hessian of -log density in mu is n + 1
  h <- opt(m, hessian = TRUE)$hessian
  expect_equal(names(h), "mu")
  expect_equal(h$mu[1, 1], 11, tolerance = 1e-5)
  # a positive variable: adjust changes the answer by the log Jacobian
  z <- rexp(30, 2)
  rate <- variable(lower = 0)
  distribution(z) <- exponential(rate)
  m2 <- model(rate)
  expect_equal(opt(m2, adjust = FALSE)$par$rate, 1 / mean(z), tolerance = 1e-5)
  # with the Jacobian, the free log rate has density rate^(n + 1) exp(-rate sum(z))
  expect_equal(opt(m2, adjust = TRUE)$par$rate, (length(z) + 1) / sum(z), tolerance = 1e-5)
  # the Hessian of -log likelihood of an exponential rate is n / rate^2
  hr <- opt(m2, adjust = FALSE, hessian = TRUE)
  expect_equal(hr$hessian$rate[1, 1], length(z) / hr$par$rate^2, tolerance = 1e-4)
  # as greta's, the Hessian is the density's in the value: with adjust = TRUE
  # (at the adjusted optimum) the log Jacobian is not part of it
  ha <- opt(m2, adjust = TRUE, hessian = TRUE)
  expect_equal(ha$hessian$rate[1, 1], length(z) / ha$par$rate^2, tolerance = 1e-4)
  # a greta array made of variables' elements has the joint Hessian of those
  # elements, in its order; another function of them has none, and a warning
  # names it
  both <- c(mu, rate)
  root <- sqrt(rate)
  m3 <- model(mu, both, root)
  expect_warning(o3 <- opt(m3, hessian = TRUE), "no Hessian for `root`")
  expect_equal(names(o3$hessian), c("mu", "both"))
  expect_equal(o3$hessian$both, diag(c(11, length(z) / o3$par$both[2]^2)), tolerance = 1e-4)
})

test_that("opt()'s Hessian of several variables joined in one greta array has their cross terms", {
  # greta's ?opt example: the mean and variance of a normal, with a prior on
  # the mean so that the cross term is not 0 at the optimum. -log p =
  # n/2 log v + S / (2 v) + mu^2 / 2, S = sum((x - mu)^2):
  # d2/dmu2 = n / v + 1, d2/dmu dv = sum(x - mu) / v^2, d2/dv2 = -n / (2 v^2) + S / v^3
  set.seed(606)
  x <- rnorm(15, 2, 1.5)
  mu <- normal(0, 1)
  variance <- variable(lower = 0)
  distribution(x) <- normal(mu, sqrt(variance))
  expected <- function(mu, v) {
    n <- length(x)
    S <- sum((x - mu)^2)
    matrix(c(n / v + 1, sum(x - mu) / v^2, sum(x - mu) / v^2, -n / (2 * v^2) + S / v^3), 2, 2)
  }
  params <- c(mu, variance)
  for (adjust in c(FALSE, TRUE)) {
    o <- opt(model(params), adjust = adjust, hessian = TRUE)
    expect_equal(o$hessian$params, expected(o$par$params[1], o$par$params[2]), tolerance = 1e-5,
                 label = paste("adjust =", adjust))
    expect_gt(abs(o$hessian$params[1, 2]), 0.1)
  }
  # in the array's order, and from a transpose or an index of one
  reversed <- c(variance, mu)
  beta <- t(params)
  o <- opt(model(reversed, beta), hessian = TRUE)
  want <- expected(o$par$reversed[2], o$par$reversed[1])
  expect_equal(o$hessian$reversed, want[2:1, 2:1], tolerance = 1e-5)
  expect_equal(o$hessian$beta, want, tolerance = 1e-5)
  # an element used twice has no Hessian of its own
  twice <- c(mu, mu)
  expect_warning(opt(model(mu, twice), hessian = TRUE), "no Hessian for `twice`")
})

test_that("opt() names the start whose initial values it could not find", {
  x <- 1e200  # (x - mu)^2 overflows for every mu
  mu <- variable()
  distribution(x) <- normal(mu, 1)
  expect_error(opt(model(mu)), "finite log density for start 1 in 50 random starts")
})

test_that("opt() runs several starts together and reports the iteration limit", {
  set.seed(603)
  x <- rnorm(20)
  mu <- variable()
  distribution(x) <- normal(mu, 1)
  m <- model(mu)
  o <- opt(m, optimiser = adam(learning_rate = 0.01), starts = 3, max_iterations = 5,
           adjust = FALSE)
  expect_length(o$all_starts, 3)
  expect_true(all(vapply(o$all_starts, `[[`, 0, "convergence") == 1))
  expect_true(all(vapply(o$all_starts, `[[`, 0L, "iterations") == 5L))
  o3 <- opt(m, starts = 3, adjust = FALSE)
  for (s in o3$all_starts) expect_equal(s$par$mu, mean(x), tolerance = 1e-6)
  # a diverging optimiser (gradient descent far past 2 / curvature) stops at
  # its last finite point and says so
  expect_warning(big <- opt(m, optimiser = gradient_descent(learning_rate = 5),
                            max_iterations = 500, adjust = FALSE,
                            initial_values = initials(mu = -3)),
                 "the optimiser diverged")
  expect_identical(big$convergence, 2)
  expect_error(opt(m, initial_values = list(initials(mu = 1), initials(mu = 2))),
               "2 sets of initial values, but there is 1 start")
  expect_gt(big$iterations, 0L)
  expect_true(is.finite(big$value))
})

test_that("opt() and the optimisers check their arguments", {
  x <- rnorm(5)
  mu <- variable()
  distribution(x) <- normal(mu, 1)
  m <- model(mu)
  expect_error(opt(list()), "greta_model")
  expect_error(opt(m, optimiser = hmc()), "`optimiser`")
  expect_error(opt(m, max_iterations = 0), "`max_iterations`")
  expect_error(opt(m, tolerance = -1), "`tolerance`")
  expect_error(opt(m, adjust = NA), "`adjust`")
  expect_error(opt(m, starts = 0), "`starts`")
  expect_error(adam(learning_rate = -1), "`learning_rate`")
  expect_error(bfgs(tolerance = "a"), "`tolerance`")
  expect_error(bfgs(x_tolerance = -1), "`x_tolerance`")
  expect_error(bfgs(initial_position = 1), "`initial_position` of bfgs\\(\\) is not set by hand")
  expect_error(bfgs(validate_args = NA), "`validate_args`")
  expect_error(nelder_mead(initial_vertex = 1), "`initial_vertex` of nelder_mead\\(\\) is not set")
  expect_error(nelder_mead(step_sizes = 0), "`step_sizes`")
  expect_error(nelder_mead(expansion = 0.5), "`expansion`")
  expect_error(nelder_mead(shrinkage = 1.5), "`shrinkage`")
  expect_output(print(nelder_mead()), "reflection = 1")
  expect_output(print(adam()), "learning_rate = 0.1")
  expect_s3_class(rms_prop(), "optimiser")
  expect_error(ftrl(learning_rate_power = 0.5), "`learning_rate_power` must be a single non-positive")
  expect_error(ftrl(learning_rate = 0), "`learning_rate` must be positive")
  expect_error(proximal_gradient_descent(l1_regularization_strength = -1),
               "`l1_regularization_strength`")
  expect_error(proximal_adagrad(initial_accumulator_value = 0), "`initial_accumulator_value`")
  expect_error(adagrad_da(initial_gradient_squared_accumulator_value = 0),
               "`initial_gradient_squared_accumulator_value`")
  expect_output(print(ftrl()), "learning_rate_power = -0.5")
})

test_that("greta 0.5's defunct optimisers stop with an error naming what to use instead", {
  expect_error(l_bfgs_b(maxcor = 5), "`l_bfgs_b\\(\\)` is defunct.*Use bfgs\\(\\) instead")
  expect_error(momentum(), "Use gradient_descent\\(momentum = 0.9\\) instead")
  expect_error(powell(), "Use nelder_mead\\(\\)")
  for (f in list(cg, newton_cg, tnc, cobyla, slsqp)) expect_error(f(), "is defunct")
})

test_that("proximal_gradient_descent()'s L1 penalty sets an estimate to exactly 0", {
  # y ~ normal(b, 1) with an L1 penalty of 30 on b: sum(y) = 10 is below it, so b = 0
  y <- c(2.5, 2.5, 2.5, 2.5)
  b <- variable()
  distribution(y) <- normal(b, 1)
  mb <- model(b)
  lasso <- opt(mb, optimiser = proximal_gradient_descent(learning_rate = 0.05,
                                                         l1_regularization_strength = 30),
               adjust = FALSE, max_iterations = 500, tolerance = 0)
  expect_true(all(lasso$par$b == 0))
  # a penalty of 2: the soft-thresholded mean, (10 - 2) / 4
  lasso2 <- opt(mb, optimiser = proximal_gradient_descent(learning_rate = 0.05,
                                                          l1_regularization_strength = 2),
                adjust = FALSE, max_iterations = 2000, tolerance = 0)
  expect_equal(as.numeric(lasso2$par$b), 2, tolerance = 1e-8)
})

test_that("bfgs()'s x_tolerance, f_relative_tolerance and f_absolute_tolerance stop it early", {
  set.seed(1301)
  x <- rnorm(40, 3, 2)
  mu <- variable()
  sd <- variable(lower = 0)
  distribution(x) <- normal(mu, sd)
  m <- model(mu, sd)
  start <- initials(mu = -20, sd = 10)
  full <- opt(m, optimiser = bfgs(), initial_values = start, tolerance = 0)
  expect_equal(full$convergence, 0)
  expect_gt(full$iterations, 3)
  # each rule, set loosely enough, stops at the first step
  for (o in list(bfgs(x_tolerance = 1e6), bfgs(f_relative_tolerance = 1e6),
                 bfgs(f_absolute_tolerance = 1e6))) {
    early <- opt(m, optimiser = o, initial_values = start, tolerance = 0)
    expect_equal(early$iterations, 1)
    expect_equal(early$convergence, 0)
  }
  # and tightly, they change nothing
  tight <- opt(m, optimiser = bfgs(x_tolerance = 1e-300, f_absolute_tolerance = 1e-300),
               initial_values = start, tolerance = 0)
  expect_equal(tight$iterations, full$iterations)
  expect_equal(tight$par, full$par)
})

test_that("nelder_mead() runs every start in C++, with its own tolerances and moves", {
  set.seed(1302)
  x <- rnorm(30, 1, 2)
  mu <- variable()
  sd <- variable(lower = 0)
  distribution(x) <- normal(mu, sd)
  m <- model(mu, sd)
  mle <- c(mean(x), sqrt(mean((x - mean(x))^2)))
  inits <- list(initials(mu = -5, sd = 1), initials(mu = 5, sd = 8), initials(mu = 0, sd = 0.5))
  o <- opt(m, optimiser = nelder_mead(func_tolerance = 1e-12), adjust = FALSE, starts = 3,
           initial_values = inits)
  for (k in 1:3) {
    s <- o$all_starts[[k]]
    expect_equal(c(s$par$mu, s$par$sd), mle, tolerance = 1e-4)
    expect_equal(s$convergence, 0L)
  }
  # a loose func_tolerance stops at once; other moves still converge
  loose <- opt(m, optimiser = nelder_mead(func_tolerance = 1e9), adjust = FALSE)
  expect_equal(loose$iterations, 0L)
  other <- opt(m, optimiser = nelder_mead(step_sizes = 0.1, reflection = 1.2, expansion = 1.5,
                                          contraction = 0.3, shrinkage = 0.7,
                                          func_tolerance = 1e-12),
               adjust = FALSE, max_iterations = 2000)
  expect_equal(c(other$par$mu, other$par$sd), mle, tolerance = 1e-4)
})

test_that("opt() on devices that own their groups (emulated) finds one device's optimum", {
  # a hierarchical model: with two devices each evaluates its own groups'
  # part of the state, and only the globals' gradient and the log density
  # cross between them
  m <- small_grouped_logit(51)
  K <- 2
  old <- options(lockstep.backend = "emulated")
  on.exit(options(old))
  engine <- lockstep:::model_engine(m)
  init <- matrix(stats::runif(2 * m$n_free, -0.5, 0.5), 2)
  for (o in list(bfgs(), adam())) {
    run <- function(devices) {
      options <- lockstep:::check_compute_options(cpu_only(threads = 1, devices = devices))
      lockstep:::ls_optimise(engine, init, o$name, o$parameters, 40, 0, options)
    }
    one <- run(1)
    two <- run(2)
    expect_equal(two$par, one$par, tolerance = 1e-6, label = o$name)
    expect_equal(two$iterations, one$iterations)
    expect_equal(unname(one$exchanged), c(0, 0))
    # per gradient: each start's log density and the 2 K + 2 globals' gradient
    expect_lte(two$exchanged[2] / two$exchanged[1], 2 * (1 + 2 * K + 2) * 8)
    expect_gt(two$exchanged[1], 10)
  }
})
