# Seed 003's demand data at the large size (1e6 products, 157M rows), simulated by
# chunks of products (issue 50): the model of ../shared/peers/demand_sim.R's sim_demand(),
# whose whole-data temporaries (a dozen vectors of 157M rows, ~10 GB) do not fit beside a
# fit on a 24 GB machine. Each chunk's rows are written into the four columns a fit
# reads (product, week_cat, units as integers; log_price as doubles: 20 bytes a row), so
# the peak is the columns plus one chunk's temporaries. Rows come by product then week,
# as sim_demand()'s; the draws differ from sim_demand()'s (the random numbers are
# consumed chunk by chunk), the distribution does not.
#   source("bench/demand_sim_chunks.R"); sim <- sim_demand_chunks(1e6)
sim_demand_chunks <- function(n_product, n_cat = 10L, n_week = 157L, seed = 20250301L,
                              chunk = 50000L) {
  set.seed(seed)
  n_product <- as.integer(n_product); n_cat <- as.integer(n_cat); n_week <- as.integer(n_week)
  cat_of_product <- sample.int(n_cat, n_product, replace = TRUE)
  beta_g <- -1.8
  beta_cat <- rnorm(n_cat, beta_g, 0.4)
  beta_product <- rnorm(n_product, beta_cat[cat_of_product], 0.3)
  log_base_price <- rnorm(n_product, 3, 0.7)
  delta_product <- 3 - beta_product * log_base_price + rnorm(n_product, 0, 0.5)
  gamma_week_cat <- matrix(rnorm(n_week * n_cat, 0, 0.25), n_week, n_cat)
  N <- n_product * n_week
  product <- integer(N); week_cat <- integer(N); units <- integer(N); log_price <- numeric(N)
  for (first in seq(1L, n_product, by = chunk)) {
    p <- first:min(n_product, first + chunk - 1L)
    rows <- ((first - 1L) * n_week + 1):(max(p) * n_week)
    pr <- rep(p, each = n_week)
    week <- rep(seq_len(n_week), times = length(p))
    category <- cat_of_product[pr]
    promo <- runif(length(pr)) < 0.15
    lp <- log_base_price[pr] + rnorm(length(pr), 0, 0.05) + ifelse(promo, log(0.8), 0)
    log_mu <- beta_product[pr] * lp + gamma_week_cat[cbind(week, category)] + delta_product[pr]
    product[rows] <- pr
    week_cat[rows] <- (category - 1L) * n_week + week
    log_price[rows] <- lp
    units[rows] <- rpois(length(pr), exp(pmin(pmax(log_mu, -4), 20)))
  }
  list(data = list(n_obs = N, n_product = n_product, n_cat = n_cat, n_week_cat = n_week * n_cat,
                   product = product, category_of_product = cat_of_product, week_cat = week_cat,
                   log_price = log_price, units = units),
       truth = list(beta_g = beta_g, beta_cat = beta_cat, beta_product = beta_product,
                    delta_product = delta_product, gamma_week_cat = gamma_week_cat))
}
