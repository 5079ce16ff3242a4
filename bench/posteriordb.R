# Sampling efficiency of lockstep's NUTS against rstan on posteriordb's reference
# posteriors (issue 6): bulk effective sample size per second of sampling.
#
#   Rscript bench/posteriordb.R [--posteriors fast|all|name,name,...]
#                               [--warmup 1000] [--samples 1000] [--chains 4]
#                               [--cores 2] [--threads default,1] [--seed 1]
#                               [--rstan yes|no] [--metric auto|diagonal|dense]
#                               [--sampler nuts|chees] [--start gradient|unit]
#                               [--max_energy_error default|number]
#   Rscript bench/posteriordb.R --compile-only yes   # compile (and cache) the Stan programs
#
# Run from the repository root, with an installed lockstep (R_LIBS may point at a
# private library) and ../shared/posteriordb (or LOCKSTEP_SHARED set to the folder
# holding posteriordb/). The lockstep models are the ones the acceptance tests
# sample: this script evaluates the definitions at the top of
# tests/testthat/test_posteriordb.R (everything but its test_that() blocks), with
# the helpers of tests/testthat/helper-lockstep.R. The Stan programs below follow
# posteriordb's; they are compiled once and cached in bench/cache/ (git-ignored)
# as posteriordb_<program>.rds, recompiled when the program's text changes.
#
# For each posterior, both samplers run `chains` chains of `warmup` + `samples`
# iterations on the same data: lockstep's mcmc() with its defaults (nuts(), all
# chains in one engine; by default once with cpu_only()'s threads, one per core,
# and once with one thread, --threads), rstan's sampling() with `cores` parallel
# chains and its defaults (NUTS, diag_e, adapt delta 0.8, max tree depth 10).
# lockstep's default metric is "auto" (a dense metric where warmup's draws are
# strongly correlated, for models of up to 100 free parameters), rstan's diag_e.
# With --metric diagonal, both use a diagonal metric (nuts(metric = "diagonal"));
# with --metric dense, both a dense one: nuts(metric = "dense") and rstan's
# control = list(metric = "dense_e"). With --sampler chees, lockstep runs
# chees() (with the same metric) against rstan's NUTS. lockstep's warmup starts
# from a metric scaled to the gradient at the initial values (its default);
# with --start unit, from the unit metric as Stan's does (diag_sd = 1).
# --max_energy_error passes nuts() its WALNUTS threshold (default: nuts()'s own,
# also for a lockstep from before the argument).
# "seconds" is the wall time of the mcmc() /
# sampling() call, warmup included (model building and rstan's compilation are
# not; rstan's includes starting its worker processes). ESS is the bulk ESS of
# rstan::monitor() (Vehtari et al. 2021, rank-normalised), the same estimator on
# both samplers' draws, minimised over the posterior's reported quantities; the
# minimum over the same quantities of coda::effectiveSize is printed too. max|z|
# is each sampler's largest |z| against the reference (posteriordb_z(), both
# moments), a check that both programs sample the same posterior.

args <- commandArgs(trailingOnly = TRUE)
opt <- list(posteriors = "fast", warmup = "1000", samples = "1000", chains = "4", cores = "2",
            threads = "default,1", seed = "1", rstan = "yes", compile_only = "no",
            metric = "auto", sampler = "nuts", start = "gradient",
            max_energy_error = "default")
i <- 1
while (i <= length(args)) {
  key <- gsub("-", "_", sub("^--", "", args[i]))
  if (!key %in% names(opt) || i == length(args)) stop("unknown or incomplete argument ", args[i])
  opt[[key]] <- args[i + 1]
  i <- i + 2
}
warmup <- as.integer(opt$warmup)
n_samples <- as.integer(opt$samples)
chains <- as.integer(opt$chains)
cores <- as.integer(opt$cores)
seed <- as.integer(opt$seed)
use_rstan <- identical(opt$rstan, "yes")
if (!opt$metric %in% c("auto", "diagonal", "dense")) stop("--metric must be auto, diagonal or dense")
if (!opt$sampler %in% c("nuts", "chees")) stop("--sampler must be nuts or chees")
if (!opt$start %in% c("gradient", "unit")) stop("--start must be gradient or unit")
lockstep_sampler <- function() {
  sampler <- if (opt$sampler == "chees") lockstep::chees else lockstep::nuts
  args <- list(metric = opt$metric)
  if (opt$start == "unit") args$diag_sd <- 1
  if (opt$max_energy_error != "default") {
    if (opt$sampler != "nuts") stop("--max_energy_error is nuts()'s")
    args$max_energy_error <- as.numeric(opt$max_energy_error)
  }
  do.call(sampler, args)
}
threads <- strsplit(opt$threads, ",")[[1]]  # lockstep's thread counts; "default": cpu_only()'s

suppressPackageStartupMessages(library(lockstep))
source("bench/posteriordb_models.R")
source("bench/peer_helpers.R")  # fix_boost()
defs <- posteriordb_definitions()
if (use_rstan) suppressPackageStartupMessages(requireNamespace("rstan"))

# -- the posteriors ----------------------------------------------------------------

# The Stan programs (rstan 2.21's syntax), as posteriordb writes them, the linear
# predictors as a matrix product of the same design matrices that lockstep uses
# (posteriordb_design in the test file).
stan_programs <- list(
  regression_flat = "
data { int<lower=0> N; int<lower=1> K; matrix[N, K] X; vector[N] y; }
parameters { vector[K] beta; real<lower=0> sigma; }
model { y ~ normal(X * beta, sigma); }
",
  kidiq = "
data { int<lower=0> N; int<lower=1> K; matrix[N, K] X; vector[N] y; }
parameters { vector[K] beta; real<lower=0> sigma; }
model { sigma ~ cauchy(0, 2.5); y ~ normal(X * beta, sigma); }
",
  arK = "
data { int<lower=0> N; int<lower=1> K; matrix[N, K] X; vector[N] y; }
parameters { real alpha; vector[K] beta; real<lower=0> sigma; }
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  sigma ~ cauchy(0, 2.5);
  y ~ normal(alpha + X * beta, sigma);
}
",
  kilpisjarvi = "
data { int<lower=0> N; vector[N] x; vector[N] y; real pmualpha; real psalpha; real pmubeta;
       real psbeta; }
parameters { real alpha; real beta; real<lower=0> sigma; }
model {
  alpha ~ normal(pmualpha, psalpha);
  beta ~ normal(pmubeta, psbeta);
  y ~ normal(alpha + beta * x, sigma);
}
",
  blr = "
data { int<lower=0> N; int<lower=0> D; matrix[N, D] X; vector[N] y; }
parameters { vector[D] beta; real<lower=0> sigma; }
model {
  target += normal_lpdf(beta | 0, 10);
  target += normal_lpdf(sigma | 0, 10);
  target += normal_lpdf(y | X * beta, sigma);
}
",
  gp_pois_regr = "
data { int<lower=1> N; real x[N]; int k[N]; }
parameters { real<lower=0> rho; real<lower=0> alpha; vector[N] f_tilde; }
transformed parameters {
  vector[N] f;
  {
    matrix[N, N] cov = cov_exp_quad(x, alpha, rho) + diag_matrix(rep_vector(1e-10, N));
    matrix[N, N] L_cov = cholesky_decompose(cov);
    f = L_cov * f_tilde;
  }
}
model {
  rho ~ gamma(25, 4);
  alpha ~ normal(0, 2);
  f_tilde ~ normal(0, 1);
  k ~ poisson_log(f);
}
",
  eight_schools_noncentered = "
data { int<lower=0> J; real y[J]; real<lower=0> sigma[J]; }
parameters { real mu; real<lower=0> tau; vector[J] theta_tilde; }
transformed parameters { vector[J] theta = mu + tau * theta_tilde; }
model {
  mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta_tilde ~ normal(0, 1);
  y ~ normal(theta, sigma);
}",
  diamonds = "
data { int<lower=1> N; vector[N] Y; int<lower=1> K; matrix[N, K] X; int prior_only; }
transformed data {
  int Kc = K - 1;
  matrix[N, Kc] Xc;
  vector[Kc] means_X;
  for (i in 2:K) {
    means_X[i - 1] = mean(X[, i]);
    Xc[, i - 1] = X[, i] - means_X[i - 1];
  }
}
parameters { vector[Kc] b; real Intercept; real<lower=0> sigma; }
model {
  target += normal_lpdf(b | 0, 1);
  target += student_t_lpdf(Intercept | 3, 8, 10);
  target += student_t_lpdf(sigma | 3, 0, 10) - 1 * student_t_lccdf(0 | 3, 0, 10);
  if (!prior_only) target += normal_id_glm_lpdf(Y | Xc, Intercept, b, sigma);
}
"
)

design_data <- function(posterior, d) {
  r <- defs$posteriordb_design[[posterior]](d)
  list(N = nrow(r$X), K = ncol(r$X), X = r$X, y = r$y)
}

# posterior -> the Stan program and its data; posteriors not in `fast` take
# minutes (diamonds: long trajectories through 26 correlated parameters).
posteriors <- list(
  "kidiq-kidscore_interaction" = list(program = "kidiq", data = design_data),
  "earnings-logearn_interaction_z" = list(program = "regression_flat", data = design_data),
  "mesquite-logmesquite_logvas" = list(program = "regression_flat", data = design_data),
  "nes2000-nes" = list(program = "regression_flat", data = design_data),
  "arK-arK" = list(program = "arK", data = design_data),
  "kilpisjarvi_mod-kilpisjarvi" = list(program = "kilpisjarvi",
                                       data = function(posterior, d) d[c("N", "x", "y", "pmualpha",
                                                                         "psalpha", "pmubeta",
                                                                         "psbeta")]),
  "sblrc-blr" = list(program = "blr", data = function(posterior, d) d),
  "gp_pois_regr-gp_pois_regr" = list(program = "gp_pois_regr",
                                     data = function(posterior, d) d[c("N", "x", "k")]),
  "eight_schools-eight_schools_noncentered" = list(program = "eight_schools_noncentered",
                                                   data = function(posterior, d) d),
  "diamonds-diamonds" = list(program = "diamonds", data = function(posterior, d) d)
)
slow <- "diamonds-diamonds"
which <- switch(opt$posteriors,
                fast = setdiff(names(posteriors), slow),
                all = names(posteriors),
                strsplit(opt$posteriors, ",")[[1]])
unknown <- setdiff(which, names(posteriors))
if (length(unknown)) stop("unknown posteriors: ", paste(unknown, collapse = ", "), call. = FALSE)

# -- rstan: compile once, cache -------------------------------------------------------

cache_dir <- file.path("bench", "cache")
dir.create(cache_dir, showWarnings = FALSE, recursive = TRUE)

# The stanmodel of a program and the seconds its compilation took (when it was
# compiled, possibly by an earlier run).
stan_program <- function(name) {
  code <- stan_programs[[name]]
  path <- file.path(cache_dir, paste0("posteriordb_", name, ".rds"))
  if (file.exists(path)) {
    cached <- readRDS(path)
    if (identical(cached$code, code)) return(cached)
  }
  fix_boost()
  cat(sprintf("compiling the Stan program %s ...\n", name))
  t <- system.time(sm <- rstan::stan_model(model_code = code, model_name = name,
                                           save_dso = TRUE))[["elapsed"]]
  cached <- list(code = code, model = sm, compile_s = t, compiled = format(Sys.time()))
  saveRDS(cached, path)
  cached
}

# -- measurements ---------------------------------------------------------------------

# Cores kept busy on the whole machine over `seconds` (from /proc/stat) while this
# script waits: how much else is running before a timed run.
busy_cores <- function(seconds = 1) {
  read <- function() {
    f <- as.numeric(strsplit(trimws(readLines("/proc/stat", n = 1)), " +")[[1]][-1])
    total <- sum(f[1:min(8, length(f))])
    c(total = total, busy = total - f[4] - f[5])
  }
  a <- read()
  Sys.sleep(seconds)
  b <- read()
  n_cpu <- parallel::detectCores()
  unname((b["busy"] - a["busy"]) / (b["total"] - a["total"]) * n_cpu)
}

# Draws as an iterations x chains x quantities array, for rstan::monitor().
draws_array <- function(chain_matrices, names) {
  out <- array(NA_real_, c(nrow(chain_matrices[[1]]), length(chain_matrices), length(names)),
               dimnames = list(NULL, NULL, names))
  for (k in seq_along(chain_matrices)) out[, k, ] <- chain_matrices[[k]][, names, drop = FALSE]
  out
}

efficiency <- function(chain_matrices, names, posterior, seconds) {
  arr <- draws_array(chain_matrices, names)
  bulk <- if (use_rstan || requireNamespace("rstan", quietly = TRUE)) {
    mon <- rstan::monitor(arr, warmup = 0, print = FALSE)
    min(mon[, "Bulk_ESS"])
  } else NA_real_
  as_mcmc <- coda::mcmc.list(lapply(chain_matrices, function(m) coda::mcmc(m[, names, drop = FALSE])))
  coda_ess <- min(coda::effectiveSize(as_mcmc))
  z <- defs$posteriordb_z(as_mcmc, posterior)
  list(seconds = seconds, bulk_ess = bulk, coda_ess = coda_ess,
       max_z = max(abs(c(z$z_mean, z$z_mean_squared))))
}

run_lockstep <- function(posterior, d, names, threads) {
  m <- defs$posteriordb_posteriors[[posterior]]$build(d)
  options <- if (threads == "default") cpu_only() else cpu_only(threads = as.integer(threads))
  set.seed(seed)
  # warnings of divergences and tree depth: counted from the sampler's diagnostics below
  t <- system.time(draws <- suppressWarnings(
    lockstep::mcmc(m, sampler = lockstep_sampler(), n_samples = n_samples,
                   warmup = warmup, chains = chains, verbose = FALSE,
                   compute_options = options)))[["elapsed"]]
  mats <- lapply(draws, as.matrix)
  lockstep_names <- defs$posteriordb_vector_names(names)
  mats <- lapply(mats, function(x) {
    x <- x[, lockstep_names, drop = FALSE]
    colnames(x) <- names
    x
  })
  sp <- as.data.frame(do.call(rbind, lockstep::get_sampler_params(draws)))
  all_sp <- lapply(lockstep::get_sampler_params(draws, inc_warmup = TRUE), as.data.frame)
  warmup_steps <- mean(vapply(all_sp, function(p) sum(p$n_leapfrog__[seq_len(warmup)]), 0))
  c(efficiency(mats, names, posterior, t),
    list(divergent = sum(sp$divergent__), treedepth_hits = sum(sp$treedepth__ >= 10),
         leapfrog = mean(sp$n_leapfrog__), warmup_leapfrog = warmup_steps,
         threads = options$threads))
}

run_rstan <- function(posterior, d, names) {
  prog <- stan_program(posteriors[[posterior]]$program)
  data <- posteriors[[posterior]]$data(posterior, d)
  t <- system.time(fit <- suppressWarnings(rstan::sampling(
    prog$model, data = data, chains = chains, iter = warmup + n_samples, warmup = warmup,
    cores = cores, seed = seed, refresh = 0, open_progress = FALSE,
    control = list(metric = if (opt$metric == "dense") "dense_e" else "diag_e"))))[["elapsed"]]
  arr <- as.array(fit)  # iterations x chains x parameters, warmup excluded
  mats <- lapply(seq_len(dim(arr)[2]), function(k) {
    matrix(arr[, k, names], ncol = length(names), dimnames = list(NULL, names))
  })
  sp <- do.call(rbind, rstan::get_sampler_params(fit, inc_warmup = FALSE))
  c(efficiency(mats, names, posterior, t),
    list(divergent = sum(sp[, "divergent__"]), treedepth_hits = sum(sp[, "treedepth__"] >= 10),
         leapfrog = mean(sp[, "n_leapfrog__"]), compile_s = prog$compile_s,
         chain_seconds = sum(rstan::get_elapsed_time(fit))))
}

if (identical(opt$compile_only, "yes")) {
  for (name in unique(vapply(posteriors[which], function(p) p$program, ""))) {
    cat(sprintf("%s: compiled in %.1f s\n", name, stan_program(name)$compile_s))
  }
  quit(save = "no")
}

# -- run --------------------------------------------------------------------------------

cat(sprintf("lockstep %s (%s), %s; %d chains, %d warmup + %d samples, seed %d; rstan %s, cores = %d\n",
            utils::packageVersion("lockstep"), find.package("lockstep"), R.version.string, chains,
            warmup, n_samples, seed,
            if (use_rstan) as.character(utils::packageVersion("rstan")) else "not run", cores))
cat(sprintf("machine: %s, %d cores; %s\n\n",
            sub("^model name\\s*:\\s*", "", grep("^model name", readLines("/proc/cpuinfo"),
                                                value = TRUE)[1]),
            parallel::detectCores(), format(Sys.time(), "%Y-%m-%d %H:%M %Z")))

rows <- list()
for (posterior in which) {
  d <- defs$posteriordb_data(posterior)
  ref <- defs$read_json_file(file.path(defs$posteriordb_dir(posterior), "reference_mean.json"))
  names <- ref$names
  cat(sprintf("%s (%d quantities)\n", posterior, length(names)))
  ls_runs <- list()
  for (th in threads) {
    busy <- busy_cores()
    l <- run_lockstep(posterior, d, names, th)
    l$busy <- busy
    cat(sprintf("  lockstep (%d thread%s): %.2f s, min bulk ESS %.0f (coda %.0f), max|z| %.2f, %d divergent, %d at max tree depth, %.0f leapfrog steps/iteration, %.0f in warmup a chain; busy cores before: %.2f\n",
                l$threads, if (l$threads == 1) "" else "s", l$seconds, l$bulk_ess, l$coda_ess,
                l$max_z, l$divergent, l$treedepth_hits, l$leapfrog, l$warmup_leapfrog, busy))
    ls_runs[[th]] <- l
  }
  r <- NULL
  if (use_rstan) {
    prog <- stan_program(posteriors[[posterior]]$program)  # compile before the idle check
    busy <- busy_cores()
    r <- run_rstan(posterior, d, names)
    r$busy <- busy
    cat(sprintf("  rstan (%d cores): %.1f s, min bulk ESS %.0f (coda %.0f), max|z| %.2f, %d divergent, %d at max tree depth, %.0f leapfrog steps/iteration; busy cores before: %.2f; compiled in %.1f s\n",
                cores, r$seconds, r$bulk_ess, r$coda_ess, r$max_z, r$divergent, r$treedepth_hits,
                r$leapfrog, busy, r$compile_s))
  }
  rows[[posterior]] <- list(posterior = posterior, lockstep = ls_runs, rstan = r)
}

fmt <- function(x, digits = 0) {
  if (is.null(x) || length(x) == 0 || is.na(x)) "-" else formatC(x, format = "f", digits = digits)
}
ratio <- function(a, b) if (is.null(a) || is.null(b) || is.na(a / b)) "-" else sprintf("%.2f", a / b)
# Per lockstep thread setting: bulk ESS, seconds, ESS/s. rstan: bulk ESS, wall
# seconds (its `cores` chains in parallel, worker start-up included) and ESS/s,
# then the seconds its chains spent sampling added up (rstan's get_elapsed_time(),
# warmup included: the one-core cost) and ESS per such second. The ratios: wall
# time, the first lockstep setting against rstan's wall time; per core, lockstep
# on one thread (when run) against rstan's ESS per chain-second. With compile:
# rstan's ESS per second of its wall time plus its compilation (of a program
# not cached in bench/cache/), and lockstep's first setting against it.
header <- "posterior"
for (th in threads) {
  label <- if (th == "default") "lockstep" else sprintf("lockstep %s thread%s", th, if (th == "1") "" else "s")
  header <- c(header, paste(label, c("ESS", "s", "ESS/s")))
}
header <- c(header, "rstan ESS", "rstan wall s", "rstan ESS/s", "rstan chain s", "rstan ESS/chain-s",
            "ratio (wall)", "ratio (per core)", "rstan compile s", "rstan ESS/s with compile",
            "ratio (with compile)", "divergent (lockstep / rstan)",
            "max abs z (lockstep / rstan)")
cat("\n|", paste(header, collapse = " | "), "|\n")
cat("|", paste(c("---", rep("---:", length(header) - 1)), collapse = " | "), "|\n")
for (row in rows) {
  cells <- row$posterior
  for (th in threads) {
    l <- row$lockstep[[th]]
    cells <- c(cells, fmt(l$bulk_ess), fmt(l$seconds, 1), fmt(l$bulk_ess / l$seconds))
  }
  r <- row$rstan
  first <- row$lockstep[[1]]
  one <- row$lockstep[["1"]]
  r_wall <- if (is.null(r)) NULL else r$bulk_ess / r$seconds
  r_core <- if (is.null(r)) NULL else r$bulk_ess / r$chain_seconds
  r_total <- if (is.null(r)) NULL else r$bulk_ess / (r$seconds + r$compile_s)
  cells <- c(cells, fmt(r$bulk_ess), fmt(r$seconds, 1), fmt(r_wall), fmt(r$chain_seconds, 1),
             fmt(r_core), ratio(first$bulk_ess / first$seconds, r_wall),
             if (is.null(one)) "-" else ratio(one$bulk_ess / one$seconds, r_core),
             fmt(r$compile_s, 1), fmt(r_total, 1), ratio(first$bulk_ess / first$seconds, r_total),
             paste(first$divergent, if (is.null(r)) "-" else r$divergent, sep = " / "),
             paste(fmt(first$max_z, 2), fmt(r$max_z, 2), sep = " / "))
  cat("|", paste(cells, collapse = " | "), "|\n")
}
saveRDS(rows, file.path(cache_dir, "posteriordb_last.rds"))
cat(sprintf("\n(every number in %s)\n", file.path(cache_dir, "posteriordb_last.rds")))
