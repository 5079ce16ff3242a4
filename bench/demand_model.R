# Seed 003's demand model (issue 50), written once for the benchmarks that fit it
# (svi_demand.R, demand_reference.R, demand_log_density.R, demand_svi_run.R,
# demand_memory.R): a hierarchical Poisson regression of weekly unit sales on log
# price, each product's elasticity drawn around its category's, with product and
# week-by-category effects, non-centred. The seed's own JAX code: shared/seeds.
#
#   source(file.path(bench_dir, "demand_model.R"), local = TRUE)
#
# with `d`, the `data` of shared/peers/demand_sim.R's sim_demand(), in the calling
# environment; it defines the greta arrays there (z_* the free variables, which
# initials() names), the likelihood included.
z_global <- normal(0, 1)
z_category <- normal(0, 1, dim = d$n_cat)
z_product <- normal(0, 1, dim = d$n_product)
z_effect <- normal(0, 1, dim = d$n_product)
z_time <- normal(0, 1, dim = d$n_week_cat)
global_a <- -2 + z_global
category_a <- global_a + z_category
product_a <- category_a[d$category_of_product] + 2 * z_product
product_effect <- 3 * z_effect
time_cat_effects <- 3 * z_time
log_demand <- product_a[d$product] * d$log_price + time_cat_effects[d$week_cat] +
  product_effect[d$product]
# (as_data(): a plain vector shared with `d` would be copied by R at `distribution(units) <-`)
units <- as_data(d$units)
distribution(units) <- poisson(exp(log_demand))
# every fit starts at the priors' medians (NumPyro's init_to_median): z = 0
at_median <- initials(z_global = 0, z_category = rep(0, d$n_cat), z_product = rep(0, d$n_product),
                      z_effect = rep(0, d$n_product), z_time = rep(0, d$n_week_cat))
