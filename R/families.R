# Each distribution family in R terms, for what the engine does not do:
# drawing random values (calculate(nsim =), simulate()) and the log density of
# each observation (log_lik()). Parameters come positionally, in the order of
# the family's constructor (and of inst/include/lockstep/distributions.def),
# each a vector as long as the values. Every entry has
#   r(n, p)                random draws, from R's r* functions
#   d(x, p)                the log density (log mass), matching the engine's
#   p(x, p, lower.tail)    the distribution function (continuous families)
#   q(u, p, lower.tail)    its inverse (continuous families)
# p and q serve truncation: a truncated family is drawn by inverse-CDF
# sampling between its bounds, and its log density is renormalised by
# F(upper) - F(lower). Functions are called as stats:: because lockstep
# exports `beta`, `gamma`, `f` and `binomial`, which mask base and stats names.

# binomial(size, g^-1(eta)) for a symmetric link with inverse `cdf` (plogis,
# pnorm), computed from log g^-1(eta) and log g^-1(-eta); as binomial's lchoose
# through lgamma. A count of 0 contributes 0 (not 0 * -Inf).
link_binomial_family <- function(cdf) {
  list(
    r = function(n, p) stats::rbinom(n, p[[1]], cdf(p[[2]])),
    d = function(x, p) {
      size <- p[[1]]
      times <- function(count, v) ifelse(count == 0, 0, count * v)
      ok <- x >= 0 & x <= size & x == round(x)
      ifelse(ok, lgamma(size + 1) - lgamma(x + 1) - lgamma(pmax(size - x, 0) + 1) +
               times(x, cdf(p[[2]], log.p = TRUE)) +
               times(size - x, cdf(-p[[2]], log.p = TRUE)), -Inf)
    }
  )
}

r_families <- list(
  normal = list(
    r = function(n, p) stats::rnorm(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dnorm(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::pnorm(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qnorm(u, p[[1]], p[[2]], lower.tail)
  ),
  cauchy = list(
    r = function(n, p) stats::rcauchy(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dcauchy(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::pcauchy(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qcauchy(u, p[[1]], p[[2]], lower.tail)
  ),
  # student(df, mu, sigma): mu + sigma * t(df)
  student = list(
    r = function(n, p) p[[2]] + p[[3]] * stats::rt(n, p[[1]]),
    d = function(x, p) stats::dt((x - p[[2]]) / p[[3]], p[[1]], log = TRUE) - log(p[[3]]),
    p = function(x, p, lower.tail) stats::pt((x - p[[2]]) / p[[3]], p[[1]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) p[[2]] + p[[3]] * stats::qt(u, p[[1]], lower.tail = lower.tail)
  ),
  exponential = list(
    r = function(n, p) stats::rexp(n, p[[1]]),
    d = function(x, p) stats::dexp(x, p[[1]], log = TRUE),
    p = function(x, p, lower.tail) stats::pexp(x, p[[1]], lower.tail),
    q = function(u, p, lower.tail) stats::qexp(u, p[[1]], lower.tail)
  ),
  uniform = list(
    r = function(n, p) stats::runif(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dunif(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::punif(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qunif(u, p[[1]], p[[2]], lower.tail)
  ),
  lognormal = list(
    r = function(n, p) stats::rlnorm(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dlnorm(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::plnorm(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qlnorm(u, p[[1]], p[[2]], lower.tail)
  ),
  gamma = list(
    r = function(n, p) stats::rgamma(n, shape = p[[1]], rate = p[[2]]),
    d = function(x, p) stats::dgamma(x, shape = p[[1]], rate = p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::pgamma(x, shape = p[[1]], rate = p[[2]],
                                                 lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qgamma(u, shape = p[[1]], rate = p[[2]],
                                                 lower.tail = lower.tail)
  ),
  # inverse_gamma(alpha, beta): 1 / x follows gamma(alpha, rate = beta)
  inverse_gamma = list(
    r = function(n, p) 1 / stats::rgamma(n, shape = p[[1]], rate = p[[2]]),
    d = function(x, p) stats::dgamma(1 / x, shape = p[[1]], rate = p[[2]], log = TRUE) - 2 * log(x),
    p = function(x, p, lower.tail) stats::pgamma(1 / x, shape = p[[1]], rate = p[[2]],
                                                 lower.tail = !lower.tail),
    q = function(u, p, lower.tail) 1 / stats::qgamma(u, shape = p[[1]], rate = p[[2]],
                                                     lower.tail = !lower.tail)
  ),
  weibull = list(
    r = function(n, p) stats::rweibull(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dweibull(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::pweibull(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qweibull(u, p[[1]], p[[2]], lower.tail)
  ),
  # pareto(a, b): shape a, scale b; P(X > x) = (b / x)^a above b
  pareto = list(
    r = function(n, p) p[[2]] * exp(stats::rexp(n, p[[1]])),
    d = function(x, p) ifelse(x >= p[[2]], log(p[[1]]) + p[[1]] * log(p[[2]]) -
                                (p[[1]] + 1) * log(x), -Inf),
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
    d = function(x, p) -log(2 * p[[2]]) - abs(x - p[[1]]) / p[[2]],
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
    d = function(x, p) stats::dbeta(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::pbeta(x, p[[1]], p[[2]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qbeta(u, p[[1]], p[[2]], lower.tail = lower.tail)
  ),
  chi_squared = list(
    r = function(n, p) stats::rchisq(n, p[[1]]),
    d = function(x, p) stats::dchisq(x, p[[1]], log = TRUE),
    p = function(x, p, lower.tail) stats::pchisq(x, p[[1]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qchisq(u, p[[1]], lower.tail = lower.tail)
  ),
  logistic = list(
    r = function(n, p) stats::rlogis(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dlogis(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::plogis(x, p[[1]], p[[2]], lower.tail),
    q = function(u, p, lower.tail) stats::qlogis(u, p[[1]], p[[2]], lower.tail)
  ),
  f = list(
    r = function(n, p) stats::rf(n, p[[1]], p[[2]]),
    d = function(x, p) stats::df(x, p[[1]], p[[2]], log = TRUE),
    p = function(x, p, lower.tail) stats::pf(x, p[[1]], p[[2]], lower.tail = lower.tail),
    q = function(u, p, lower.tail) stats::qf(u, p[[1]], p[[2]], lower.tail = lower.tail)
  ),
  poisson = list(
    r = function(n, p) stats::rpois(n, p[[1]]),
    d = function(x, p) stats::dpois(x, p[[1]], log = TRUE)
  ),
  bernoulli = list(
    r = function(n, p) stats::rbinom(n, 1, p[[1]]),
    d = function(x, p) stats::dbinom(x, 1, p[[1]], log = TRUE)
  ),
  # bernoulli(ilogit(eta)), on the logit scale: log P(x) = log ilogit(+-eta)
  bernoulli_logit = list(
    r = function(n, p) stats::rbinom(n, 1, stats::plogis(p[[1]])),
    d = function(x, p) stats::plogis(ifelse(x == 1, p[[1]], -p[[1]]), log.p = TRUE)
  ),
  # bernoulli(iprobit(eta)), on the probit scale: log P(x) = log Phi(+-eta)
  bernoulli_probit = list(
    r = function(n, p) stats::rbinom(n, 1, stats::pnorm(p[[1]])),
    d = function(x, p) stats::pnorm(ifelse(x == 1, p[[1]], -p[[1]]), log.p = TRUE)
  ),
  binomial = list(
    r = function(n, p) stats::rbinom(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dbinom(x, p[[1]], p[[2]], log = TRUE)
  ),
  # binomial(size, ilogit(eta)) and binomial(size, iprobit(eta)), on the link's
  # scale: the log probabilities of success and failure from plogis() or
  # pnorm() with log.p, finite where the probability rounds to 0 or 1
  binomial_logit = link_binomial_family(stats::plogis),
  binomial_probit = link_binomial_family(stats::pnorm),
  # poisson(exp(eta)), on the log scale
  poisson_log = list(
    r = function(n, p) stats::rpois(n, exp(p[[1]])),
    d = function(x, p) ifelse(x == 0, 0, x * p[[1]]) - exp(p[[1]]) - lgamma(x + 1)
  ),
  negative_binomial = list(
    r = function(n, p) stats::rnbinom(n, p[[1]], p[[2]]),
    d = function(x, p) stats::dnbinom(x, p[[1]], p[[2]], log = TRUE)
  ),
  # beta_binomial(size, alpha, beta): binomial(size, q) with q ~ beta(alpha, beta)
  beta_binomial = list(
    r = function(n, p) stats::rbinom(n, p[[1]], stats::rbeta(n, p[[2]], p[[3]])),
    d = function(x, p) lchoose(p[[1]], x) + lbeta(x + p[[2]], p[[1]] - x + p[[3]]) -
      lbeta(p[[2]], p[[3]])
  ),
  hypergeometric = list(
    r = function(n, p) stats::rhyper(n, p[[1]], p[[2]], p[[3]]),
    d = function(x, p) stats::dhyper(x, p[[1]], p[[2]], p[[3]], log = TRUE)
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

# The log density of each x, with parameters `p` (vectors as long as x),
# renormalised to [lower, upper] when either bound is finite.
log_density_family <- function(family, x, p, lower = -Inf, upper = Inf) {
  entry <- r_family(family, "log_lik()")
  out <- entry$d(x, p)
  if (!is.finite(lower) && !is.finite(upper)) return(out)
  below_lower <- entry$p(lower, p, TRUE)
  mass <- ifelse(below_lower > 0.5,
                 entry$p(lower, p, FALSE) - entry$p(upper, p, FALSE),
                 entry$p(upper, p, TRUE) - below_lower)
  ifelse(x < lower | x > upper, -Inf, out - log(mass))
}
