# Draws from mcmc() in posterior, bayesplot and loo (issue 38): the packages
# a Bayesian R user combines lockstep with (Suggests, installed by make setup).

interop_draws <- function() {
  set.seed(381)
  x <- rnorm(30)
  y <- 1 + 2 * x + rnorm(30, sd = 0.5)
  a <- normal(0, 5)
  b <- normal(0, 5, dim = 2)
  s <- normal(0, 2, truncation = c(0, Inf))
  distribution(y) <- normal(a + b[1] * x + b[2] * x^2, s)
  list(draws = mcmc(model(a, b, s), n_samples = 300, warmup = 300, chains = 3, verbose = FALSE),
       y = y)
}

test_that("posterior's draws formats hold the draws, named and in order", {
  d <- interop_draws()$draws
  arr <- posterior::as_draws_array(d)
  expect_s3_class(arr, "draws_array")
  expect_equal(posterior::variables(arr), c("a", "b[1,1]", "b[2,1]", "s"))
  expect_equal(posterior::nchains(arr), 3)
  expect_equal(posterior::niterations(arr), 300)
  for (k in 1:3) expect_equal(unclass(arr)[, k, ], as.matrix(d[[k]]), ignore_attr = TRUE)
  df <- posterior::as_draws_df(d)
  expect_s3_class(df, "draws_df")
  expect_equal(df$s[df$.chain == 2], as.numeric(d[[2]][, "s"]))
  expect_s3_class(posterior::as_draws(d), "draws")
  expect_s3_class(posterior::as_draws_list(d), "draws_list")
  expect_equal(dim(posterior::as_draws_matrix(d)), c(900L, 4L))
  expect_s3_class(posterior::as_draws_rvars(d), "draws_rvars")
  # posterior's own summary, its R-hat and bulk ESS (an implementation of
  # their own) agree with lockstep's
  summ <- posterior::summarise_draws(d)
  expect_equal(summ$variable, posterior::variables(arr))
  expect_equal(as.numeric(summ$mean), unname(colMeans(as.matrix(d))))
  expect_equal(as.numeric(summ$rhat), unname(rhat(d)), tolerance = 1e-6)
  expect_equal(as.numeric(summ$ess_bulk), unname(ess_bulk(d)), tolerance = 1e-6)
})

test_that("posterior's and bayesplot's rhat() and ess_bulk() of draws are lockstep's, whichever is attached", {
  d <- interop_draws()$draws
  # what a user who attached posterior (or bayesplot) after lockstep calls
  expect_equal(posterior::rhat(d), lockstep::rhat(d))
  expect_equal(posterior::ess_bulk(d), lockstep::ess_bulk(d))
  expect_equal(bayesplot::rhat(d), lockstep::rhat(d))
  expect_length(posterior::ess_bulk(d), 4)  # a value per variable, not one number
  expect_named(posterior::rhat(d), c("a", "b[1,1]", "b[2,1]", "s"))
})

test_that("get_sampler_params() has rstan's shape, and bayesplot's NUTS plots read the draws", {
  d <- interop_draws()$draws
  sp <- get_sampler_params(d)
  expect_true(all(vapply(sp, is.matrix, logical(1))))
  np <- bayesplot::nuts_params(d)
  expect_equal(names(np), c("Chain", "Iteration", "Parameter", "Value"))
  expect_equal(nrow(np), 6 * 300 * 3)
  expect_equal(np$Value[np$Parameter == "energy__" & np$Chain == 2], sp[[2]][, "energy__"])
  # (rstan's route: the list of matrices itself)
  expect_equal(bayesplot::nuts_params(sp), np)
  expect_equal(nrow(bayesplot::nuts_params(d, pars = "divergent__")), 900)
  expect_s3_class(bayesplot::mcmc_nuts_energy(np), "ggplot")
  expect_s3_class(bayesplot::mcmc_pairs(posterior::as_draws_array(d), pars = c("a", "s"), np = np),
                  "bayesplot_grid")
  expect_s3_class(bayesplot::mcmc_rhat(bayesplot::rhat(d)), "ggplot")
})

test_that("loo's loo() and waic() read log_lik()", {
  run <- interop_draws()
  d <- run$draws
  ll <- log_lik(d)
  expect_equal(dim(ll), c(900L, 30L))
  r_eff <- loo::relative_eff(exp(log_lik(d, merge_chains = FALSE)))
  expect_length(r_eff, 30)
  # (k between 0.5 and 0.7 draws loo's "slightly high" warning; asserted below)
  fit <- suppressWarnings(loo::loo(ll, r_eff = r_eff))
  expect_s3_class(fit, "psis_loo")
  expect_equal(dim(fit$pointwise)[1], 30)
  expect_true(all(loo::pareto_k_values(fit) < 0.7))
  # WAIC by hand from the same matrix: lppd - p_waic
  lppd <- sum(log(colMeans(exp(ll))))
  p_waic <- sum(apply(ll, 2, stats::var))
  w <- suppressWarnings(loo::waic(ll))
  expect_equal(w$estimates["elpd_waic", "Estimate"], lppd - p_waic, tolerance = 1e-8)
  # and elpd_loo close to it for this well-behaved model
  expect_lt(abs(fit$estimates["elpd_loo", "Estimate"] - (lppd - p_waic)), 1)
})
