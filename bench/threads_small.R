# The engine alone (one log density and gradient of 4 chains, `ls_engine_time`)
# on 1 and 2 threads, for regressions and hierarchical logistic regressions of a
# few hundred to 50,000 rows: where a second thread starts to pay (issue 6,
# cpu_only()'s automatic thread count).
#
#   R_LIBS=<library with lockstep> Rscript bench/threads_small.R
#
# Results in bench/RESULTS.md ("Small models: three kernels on the CPU, and a
# thread pool that spins").
suppressMessages(library(lockstep))
ns <- asNamespace("lockstep")

time_model <- function(label, m, threads, C = 4, reps = 500) {
  set.seed(1)
  free <- matrix(rnorm(C * m$n_free, sd = 0.1), C)
  eng <- ns$model_engine(m)
  t <- replicate(5, ns$ls_engine_time(eng, free, cpu_only(threads = threads), as.integer(reps)))
  cat(sprintf("%-36s threads %d: %9.2f us per call (median of 5 x %d)\n", label, threads,
              1e6 * median(t), reps))
}

regression <- function(N, K) {
  set.seed(2)
  X <- matrix(rnorm(N * K), N)
  y <- X %*% rnorm(K) + rnorm(N)
  beta <- normal(0, 5, dim = K)
  sigma <- normal(0, 2, truncation = c(0, Inf))
  distribution(y) <- normal(as_data(X) %*% beta, sigma)
  model(beta, sigma)
}

hierarchical_logit <- function(N, G) {
  set.seed(3)
  g <- sample.int(G, N, TRUE)
  x <- rnorm(N)
  y <- rbinom(N, 1, plogis(0.3 + 0.5 * x + rnorm(G)[g]))
  mu <- normal(0, 2)
  tau <- normal(0, 1, truncation = c(0, Inf))
  z <- normal(0, 1, dim = G)
  b <- normal(0, 2)
  distribution(y) <- bernoulli(ilogit(mu + z[g] * tau + b * x))
  model(mu, tau, z, b)
}

for (N in c(100, 500, 1000, 2000, 20000)) {
  m <- regression(N, 5)
  for (th in 1:2) time_model(sprintf("regression N = %d, K = 5", N), m, th)
}
for (s in list(c(500, 20), c(2000, 20), c(5000, 100), c(50000, 1000))) {
  m <- hierarchical_logit(s[1], s[2])
  for (th in 1:2) time_model(sprintf("hierarchical logit N = %d, G = %d", s[1], s[2]), m, th)
}
