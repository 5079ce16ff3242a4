# The seed model in lockstep's R API, for the bench scripts that time it alone
# (profile_hlogit.R, hlogit_sampler.R, hlogit_nuts.R): the same model as hlogit.R's
# build_lockstep(variant = "api"), on the seed's generator; and their options.

# Command-line options `--key value` over `defaults`, a named list of strings.
bench_options <- function(defaults, args = commandArgs(TRUE)) {
  if (length(args) %% 2 != 0) stop("usage: see the header of the script", call. = FALSE)
  for (i in seq_len(length(args) / 2) * 2 - 1) {
    key <- sub("^--", "", args[i])
    if (!key %in% names(defaults)) {
      stop("unknown option --", key, "; see the header of the script", call. = FALSE)
    }
    defaults[[key]] <- args[i + 1]
  }
  defaults
}

# The seed's simulation for N rows (G groups, N / 10 by default; K = 20 covariates) from
# `shared`/peers/simdata.R: its data and the truth they were drawn from. The
# generator runs with base's %*% and rowSums, which lockstep masks once
# attached.
hlogit_sim <- function(N, shared, G = NULL) {
  env <- new.env(parent = getNamespace("stats"))
  sys.source(file.path(shared, "peers", "simdata.R"), envir = env)
  if (is.null(G)) G <- round(N / 10)
  env$sim_hlogit(N, G, 20L, 20240601L)
}

hlogit_data <- function(N, shared) hlogit_sim(N, shared)$data

# The seed's non-centred hierarchical logistic regression of data `d`, tracing
# alpha, beta, sigma_alpha and sigma_gamma.
hlogit_model <- function(d, precision = "double") {
  K <- d$K; G <- d$G; g <- d$g
  alpha <- normal(0, 1.5)
  beta <- normal(0, 1, dim = K)
  sigma_alpha <- normal(0, 1, truncation = c(0, Inf))
  sigma_gamma <- normal(0, 0.5, dim = K, truncation = c(0, Inf))
  z_alpha <- normal(0, 1, dim = G)
  z_gamma <- normal(0, 1, dim = c(G, K))
  alpha_g <- sigma_alpha * z_alpha
  Xd <- as_data(d$X)
  gamma <- lockstep::sweep(z_gamma, 2, sigma_gamma, "*")
  eta <- alpha + alpha_g[g] + Xd %*% beta + lockstep::rowSums(Xd * gamma[g, ])
  distribution(d$y) <- bernoulli(ilogit(eta))
  model(alpha, beta, sigma_alpha, sigma_gamma, precision = precision)
}
