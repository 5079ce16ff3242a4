# Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari and Gelman
# 2018) of lockstep's NUTS on two small hierarchical models (issue 6): for each
# replication, draw the parameters from the prior, simulate data from them, fit
# with mcmc(), and record the rank of each true parameter among L thinned
# posterior draws. If the sampler is calibrated the ranks are uniform on
# 0..L; a chi-square test on B bins checks that, per parameter.
#
#   Rscript bench/sbc.R [--reps 200] [--L 99] [--models normal,logit]
#                       [--first 1] [--metric auto|diagonal|dense]
#
# Replication r (from --first on) draws with set.seed(10000 + r); --metric is
# nuts()'s metric (its default, "auto").
#
# Prints, per model and parameter, the chi-square statistic and p-value (and
# the minimum p-value over parameters), plus the time taken. Record the table
# in bench/RESULTS.md.
suppressPackageStartupMessages(library(lockstep))

args <- commandArgs(TRUE)
opt <- function(name, default) {
  k <- match(paste0("--", name), args)
  if (is.na(k)) default else args[k + 1]
}
reps <- as.integer(opt("reps", "200"))
L <- as.integer(opt("L", "99"))
models <- strsplit(opt("models", "normal,logit"), ",")[[1]]
first <- as.integer(opt("first", "1"))
metric <- opt("metric", "auto")
bins <- 10

# Eight-schools-like non-centred normal hierarchy, J = 8 groups.
sim_normal <- function() {
  J <- 8
  sigma <- c(15, 10, 16, 11, 9, 11, 10, 18) / 5
  truth <- list(mu = rnorm(1, 0, 2), tau = abs(rnorm(1, 0, 1)))
  z <- rnorm(J)
  truth$theta1 <- truth$mu + truth$tau * z[1]
  y <- rnorm(J, truth$mu + truth$tau * z, sigma)
  fit <- function() {
    mu <- normal(0, 2)
    tau <- normal(0, 1, truncation = c(0, Inf))
    z_ <- normal(0, 1, dim = J)
    theta <- mu + tau * z_
    distribution(y) <- normal(theta, sigma)
    theta1 <- theta[1]
    model(mu, tau, theta1)
  }
  list(truth = truth, model = fit())
}

# Hierarchical logistic regression: 6 groups, 20 rows each, random intercepts.
sim_logit <- function() {
  G <- 6
  n <- 20
  g <- rep(seq_len(G), each = n)
  x <- rnorm(G * n)
  truth <- list(alpha = rnorm(1, 0, 1), beta = rnorm(1, 0, 1),
                sigma = abs(rnorm(1, 0, 1)))
  a <- rnorm(G)
  y <- rbinom(G * n, 1, plogis(truth$alpha + truth$sigma * a[g] + truth$beta * x))
  fit <- function() {
    alpha <- normal(0, 1)
    beta <- normal(0, 1)
    sigma <- normal(0, 1, truncation = c(0, Inf))
    a_ <- normal(0, 1, dim = G)
    eta <- alpha + sigma * a_[g] + beta * x
    distribution(y) <- bernoulli(ilogit(eta))
    model(alpha, beta, sigma)
  }
  list(truth = truth, model = fit())
}

run_model <- function(name) {
  sim <- switch(name, normal = sim_normal, logit = sim_logit)
  ranks <- NULL
  divergent <- 0
  t0 <- Sys.time()
  for (r in seq(first, length.out = reps)) {
    set.seed(10000 + r)
    s <- sim()
    # 4 chains x 250 draws, thinned to L draws in all (roughly independent)
    draws <- suppressWarnings(mcmc(s$model, sampler = nuts(metric = metric), n_samples = 250,
                                   warmup = 500, chains = 4, verbose = FALSE))
    divergent <- divergent + sum(unlist(lapply(get_sampler_params(draws),
                                               function(p) p[, "divergent__"])))
    post <- as.matrix(draws)
    keep <- round(seq(1, nrow(post), length.out = L))
    rank <- vapply(names(s$truth), function(p) sum(post[keep, p] < s$truth[[p]]), numeric(1))
    ranks <- rbind(ranks, rank)
  }
  secs <- as.numeric(Sys.time() - t0, units = "secs")
  cat(sprintf("\n== %s: %d replications, L = %d, %d bins, %.0f s, %d divergent draws in all\n",
              name, reps, L, bins, secs, divergent))
  for (p in colnames(ranks)) {
    counts <- tabulate(floor(ranks[, p] / ((L + 1) / bins)) + 1, nbins = bins)
    test <- suppressWarnings(stats::chisq.test(counts))
    cat(sprintf("  %-8s chi-square %6.2f on %d df, p = %.3f   bins: %s\n", p, test$statistic,
                bins - 1, test$p.value, paste(counts, collapse = " ")))
  }
}

cat(sprintf("lockstep %s, NUTS (mcmc() defaults, metric = \"%s\"), replications %d-%d, %s\n",
            packageVersion("lockstep"), metric, first, first + reps - 1,
            format(Sys.time(), "%Y-%m-%d %H:%M")))
for (m in models) run_model(m)
