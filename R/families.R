# Each distribution family in R terms, for what the engine does not do:
# drawing random values (calculate(nsim =), simulate()). Parameters come
# positionally, in the order of the family's constructor (and of
# inst/include/lockstep/distributions.def), each a vector as long as the
# values. Every entry has
#   r(n, p)                random draws, from R's r* functions
#   p(x, p, lower.tail)    the distribution function (continuous families)
#   q(u, p, lower.tail)    its inverse (continuous families)
# p and q serve truncation: a truncated family is drawn by inverse-CDF
# sampling between its bounds. Log densities are the engine's alone
# (log_lik() traces its logpdf op). Functions are called as stats:: because
# lockstep exports `beta`, `gamma`, `f` and `binomial`, which mask base and
# stats names.

# binomial(size, g^-1(eta)) for a symmetric link with inverse `cdf` (plogis,
# pnorm)
link_binomial_family <- function(cdf) {
  list(
    r = function(n, p) stats::rbinom(n, p[[1]], cdf(p[[2]]))
  )
}

r_families <- list(
  normal = list(
    r = function(n, p) stats::rnorm(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::pnorm(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qnorm(u, p[[1]], p[[2]], lower.tail)
  ),
  cauchy = list(
    r = function(n, p) stats::rcauchy(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::pcauchy(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qcauchy(u, p[[1]], p[[2]], lower.tail)
  ),
  # student(df, mu, sigma): mu + sigma * t(df)
  student = list(
    r = function(n, p) p[[2]] + p[[3]] * stats::rt(n, p[[1]]),
    p = function(x, p, lower.tail) stats::pt((x - p[[2]]) / p[[3]], p[[1]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) p[[2]] + p[[3]] * stats::qt(u, p[[1]], lower.tail = lower.tail)
  ),
  exponential = list(
    r = function(n, p) stats::rexp(n, p[[1]]),
    p = function(x, p, lower.tail) stats::pexp(x, p[[1]], lower.tail),
    q = function(u, p, lower.tail) stats::qexp(u, p[[1]], lower.tail)
  ),
  uniform = list(
    r = function(n, p) stats::runif(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::punif(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qunif(u, p[[1]], p[[2]], lower.tail)
  ),
  lognormal = list(
    r = function(n, p) stats::rlnorm(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::plnorm(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qlnorm(u, p[[1]], p[[2]], lower.tail)
  ),
  gamma = list(
    r = function(n, p) stats::rgamma(n, shape = p[[1]], rate = p[[2]]),
    p = function(x, p, lower.tail) stats::pgamma(x, shape = p[[1]], rate = p[[2]],
                                                 lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qgamma(u, shape = p[[1]], rate = p[[2]],
                                                 lower.tail = lower.tail)
  ),
  # inverse_gamma(alpha, beta): 1 / x follows gamma(alpha, rate = beta)
  inverse_gamma = list(
    r = function(n, p) 1 / stats::rgamma(n, shape = p[[1]], rate = p[[2]]),
    p = function(x, p, lower.tail) stats::pgamma(1 / x, shape = p[[1]], rate = p[[2]],
                                                 lower.tail = !lower.tail),
    q = function(u, p, lower.tail) 1 / stats::qgamma(u, shape = p[[1]], rate = p[[2]],
                                                     lower.tail = !lower.tail)
  ),
  weibull = list(
    r = function(n, p) stats::rweibull(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::pweibull(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qweibull(u, p[[1]], p[[2]], lower.tail)
  ),
  # pareto(a, b): shape a, scale b; P(X > x) = (b / x)^a above b
  pareto = list(
    r = function(n, p) p[[2]] * exp(stats::rexp(n, p[[1]])),
    p = function(x, p, lower.tail) {
      upper <- ifelse(x <= p[[2]], 1, (p[[2]] / x)^p[[1]])
      if (lower.tail) 1 - upper else upper
    },
    q = function(u, p, lower.tail) {
      upper <- if (lower.tail) 1 - u else u
      p[[2]] * upper^(-1 / p[[1]])
    }
  ),
  # laplace(mu, sigma): density exp(-|x - mu| / sigma) / (2 sigma)
  laplace = list(
    r = function(n, p) p[[1]] + p[[2]] * (stats::rexp(n) - stats::rexp(n)),
    p = function(x, p, lower.tail) {
      z <- (x - p[[1]]) / p[[2]]
      if (!lower.tail) z <- -z
      ifelse(z < 0, 0.5 * exp(z), 1 - 0.5 * exp(-z))
    },
    q = function(u, p, lower.tail) {
      z <- ifelse(u < 0.5, log(2 * u), -log(2 * (1 - u)))
      if (!lower.tail) z <- -z
      p[[1]] + p[[2]] * z
    }
  ),
  beta = list(
    r = function(n, p) stats::rbeta(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::pbeta(x, p[[1]], p[[2]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qbeta(u, p[[1]], p[[2]], lower.tail = lower.tail)
  ),
  chi_squared = list(
    r = function(n, p) stats::rchisq(n, p[[1]]),
    p = function(x, p, lower.tail) stats::pchisq(x, p[[1]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qchisq(u, p[[1]], lower.tail = lower.tail)
  ),
  logistic = list(
    r = function(n, p) stats::rlogis(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::plogis(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qlogis(u, p[[1]], p[[2]], lower.tail)
  ),
  f = list(
    r = function(n, p) stats::rf(n, p[[1]], p[[2]]),
    p = function(x, p, lower.tail) stats::pf(x, p[[1]], p[[2]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qf(u, p[[1]], p[[2]], lower.tail = lower.tail)
  ),
  poisson = list(
    r = function(n, p) stats::rpois(n, p[[1]])
  ),
  bernoulli = list(
    r = function(n, p) stats::rbinom(n, 1, p[[1]])
  ),
  # bernoulli(ilogit(eta)), on the logit scale
  bernoulli_logit = list(
    r = function(n, p) stats::rbinom(n, 1, stats::plogis(p[[1]]))
  ),
  # bernoulli(iprobit(eta)), on the probit scale
  bernoulli_probit = list(
    r = function(n, p) stats::rbinom(n, 1, stats::pnorm(p[[1]]))
  ),
  binomial = list(
    r = function(n, p) stats::rbinom(n, p[[1]], p[[2]])
  ),
  # binomial(size, ilogit(eta)) and binomial(size, iprobit(eta)), on the link's
  # scale
  binomial_logit = link_binomial_family(stats::plogis),
  binomial_probit = link_binomial_family(stats::pnorm),
  # poisson(exp(eta)), on the log scale
  poisson_log = list(
    r = function(n, p) stats::rpois(n, exp(p[[1]]))
  ),
  negative_binomial = list(
    r = function(n, p) stats::rnbinom(n, p[[1]], p[[2]])
  ),
  # beta_binomial(size, alpha, beta): binomial(size, q) with q ~ beta(alpha, beta)
  beta_binomial = list(
    r = function(n, p) stats::rbinom(n, p[[1]], stats::rbeta(n, p[[2]], p[[3]]))
  ),
  hypergeometric = list(
    r = function(n, p) stats::rhyper(n, p[[1]], p[[2]], p[[3]])
  )
)

# The family's entry, or an error naming what needs it.
r_family <- function(family, what) {
  entry <- r_families[[family]]
  if (is.null(entry)) {
    stop(what, " does not support the ", family, "() distribution (supported: ",
         paste(names(r_families), collapse = ", "), ")", call. = FALSE)
  }
  entry
}

# n draws, with parameters `p` (vectors of length n), truncated to
# [lower, upper] when either bound is finite: inverse-CDF sampling,
# F^-1(F(lower) + u (F(upper) - F(lower))), done on the upper tail's scale
# where the lower bound lies above the median, so that a bound far in a tail
# keeps its precision (F(lower) near 1 would leave no room between the two).
draw_family <- function(family, n, p, lower = -Inf, upper = Inf) {
  entry <- r_family(family, "simulation")
  if (!is.finite(lower) && !is.finite(upper)) return(entry$r(n, p))
  u <- stats::runif(n)
  below_lower <- entry$p(lower, p, TRUE)
  below_upper <- entry$p(upper, p, TRUE)
  above_lower <- entry$p(lower, p, FALSE)
  above_upper <- entry$p(upper, p, FALSE)
  right <- below_lower > 0.5
  x <- numeric(n)
  if (any(!right)) {
    i <- which(!right)
    x[i] <- entry$q(below_lower[i] + u[i] * (below_upper[i] - below_lower[i]),
                    lapply(p, `[`, i), TRUE)
  }
  if (any(right)) {
    i <- which(right)
    x[i] <- entry$q(above_lower[i] - u[i] * (above_lower[i] - above_upper[i]),
                    lapply(p, `[`, i), FALSE)
  }
  pmin(pmax(x, lower), upper)
}
