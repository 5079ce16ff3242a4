# `make demo`: fits the eight schools model (non-centred) and prints a summary.
library(lockstep)

y <- c(28, 8, -3, 7, -1, 1, 18, 12)
sigma_y <- c(15, 10, 16, 11, 9, 11, 10, 18)

mu <- normal(0, 5)
tau <- cauchy(0, 5, truncation = c(0, Inf))
theta_tilde <- normal(0, 1, dim = 8)
theta <- mu + tau * theta_tilde
distribution(y) <- normal(theta, sigma_y)

m <- model(mu, tau, theta)
print(backend_info())
set.seed(2026)
elapsed <- system.time(
  draws <- mcmc(m, n_samples = 1000, warmup = 1000, chains = 4)
)[["elapsed"]]
print(summary(draws))
print(coda::gelman.diag(draws, multivariate = FALSE))
cat(sprintf("\n4 chains x 2000 iterations in %.2f s; minimum effective sample size %.0f\n",
            elapsed, min(coda::effectiveSize(draws))))
