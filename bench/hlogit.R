# Benchmark: the seed's hierarchical logistic regression (issue 3), lockstep vs rstan.
#
# Usage:
#   Rscript bench/hlogit.R [--N 1e5,1e6] [--chains 1,4,16] [--threads 2]
#                          [--precision double,single] [--rstan yes|no]
#                          [--stan rdp[,glm]] [--check yes|no] [--check-N 1e4]
#                          [--order random[,sorted]] [--fallback-timing no|yes]
#                          [--memcap MB] [--budget s] [--stream yes|no] [--bw GB/s]
#
# What it measures (see bench/README.md and bench/RESULTS.md):
# * lockstep: seconds per chain-gradient, i.e. the wall time of ONE engine call that
#   evaluates the log density and gradient of all C chains
#   (lockstep:::model_log_density(m, free), free a C x n_free matrix), divided by C.
#   A warm-up call first, then the median of repeated batches of calls (each batch
#   >= 0.2 s). Also the CPU time / wall time during the timed calls (how many cores
#   the engine really used).
# * rstan 2.21: seconds per gradient of rstan::grad_log_prob on a stanfit made by
#   sampling(chains = 0) (the model instance and data, no sampling), as
#   /work/shared/peers/grad_time.R does. rstan has no chain batching: one chain-gradient
#   is one gradient.
# * peak memory: every measurement runs in a child Rscript (one per N for rstan; one
#   per N x precision x threads for lockstep, the model rebuilt for each C). "peak MB"
#   is the process's VmHWM while building the model and timing it (VmHWM is reset
#   through /proc/self/clear_refs after the data have been simulated), so it includes
#   the simulated data that R holds; "model MB" is that peak minus the RSS before the
#   model was built, i.e. what the model (engine or stanfit) and its evaluation add.
# * a correctness cross-check at a small N: lockstep's log density and gradient
#   against rstan's (same data, same point, free-state layouts mapped) and against a
#   log density written out in plain R.
#
# Data: /work/shared/peers/simdata.R's sim_hlogit(N, G = N / 10, K = 20, seed = 20240601),
# found in ../shared relative to the repository root, or in $LOCKSTEP_SHARED.
#
# The lockstep model is written with the R API of issue 3 (sweep, rowSums, row gathers,
# bernoulli(ilogit(eta)), precision = "single", cpu_only(threads = )). Parts of that API
# that the installed lockstep lacks are reported as "not available yet" and their
# configurations skipped. The correctness check then uses a FALLBACK model written with
# older ops only (labelled as such); its timings are never reported as the benchmark
# figure (--fallback-timing yes prints them in a separate, labelled table).

# ---------------------------------------------------------------------------------------
# Paths and arguments
# ---------------------------------------------------------------------------------------

script_file <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE),
                                                         value = TRUE)[1]))
bench_dir <- dirname(script_file)
repo_root <- dirname(bench_dir)
shared_dir <- Sys.getenv("LOCKSTEP_SHARED", file.path(dirname(repo_root), "shared"))
peers_dir <- file.path(shared_dir, "peers")
cache_dir <- file.path(bench_dir, "cache")
source(file.path(bench_dir, "peer_helpers.R"))  # cached_stan_model()

SEED <- 20240601L
K_DEFAULT <- 20L

parse_args <- function(args) {
  opts <- list(N = "1e5,1e6", chains = "1,4,16", threads = "2", precision = "double,single",
               rstan = "yes", stan = "rdp", check = "yes", `check-N` = "1e4",
               `fallback-timing` = "no", memcap = "", budget = "540", K = as.character(K_DEFAULT),
               worker = "", out = "", variant = "api", `stream` = "yes", order = "random", bw = "")
  i <- 1
  while (i <= length(args)) {
    a <- args[i]
    if (a %in% c("-h", "--help")) {
      cat(readLines(script_file, n = 8)[-1], sep = "\n")
      quit(status = 0)
    }
    if (!startsWith(a, "--")) stop("unexpected argument: ", a, call. = FALSE)
    key <- sub("^--", "", a)
    if (grepl("=", key)) {
      val <- sub("^[^=]*=", "", key); key <- sub("=.*$", "", key)
    } else {
      if (i == length(args)) stop("option --", key, " needs a value", call. = FALSE)
      val <- args[i + 1]; i <- i + 1
    }
    if (!key %in% names(opts)) stop("unknown option --", key, call. = FALSE)
    opts[[key]] <- val
    i <- i + 1
  }
  opts
}
split_num <- function(s) as.numeric(strsplit(s, ",")[[1]])
split_chr <- function(s) strsplit(s, ",")[[1]]
yes <- function(s) tolower(s) %in% c("yes", "y", "true", "1")

# ---------------------------------------------------------------------------------------
# Small utilities
# ---------------------------------------------------------------------------------------

now <- function() as.numeric(Sys.time())
proc_kb <- function(field) {
  line <- grep(paste0("^", field, ":"), readLines("/proc/self/status"), value = TRUE)
  if (length(line) == 0) return(NA_real_)
  as.numeric(gsub("[^0-9]", "", line))
}
rss_mb <- function() proc_kb("VmRSS") / 1024
hwm_mb <- function() proc_kb("VmHWM") / 1024
# Resets VmHWM to the current RSS (Linux >= 4.0); FALSE where that is not allowed.
reset_hwm <- function() {
  isTRUE(tryCatch({ writeLines("5", "/proc/self/clear_refs"); TRUE }, error = function(e) FALSE,
                  warning = function(w) FALSE))
}
# (total, steal) jiffies of all CPUs from /proc/stat: steal is time the hypervisor gave
# this VM's CPUs to someone else, i.e. how noisy the timings are on a shared host.
cpu_steal <- function() {
  f <- as.numeric(strsplit(trimws(readLines("/proc/stat", n = 1)), " +")[[1]][-1])
  c(total = sum(f[1:min(8, length(f))]), steal = if (length(f) >= 8) f[8] else NA)
}
# (total, busy) jiffies of all CPUs from /proc/stat (busy = all but idle and iowait).
cpu_busy <- function() {
  f <- as.numeric(strsplit(trimws(readLines("/proc/stat", n = 1)), " +")[[1]][-1])
  tot <- sum(f[1:min(8, length(f))])
  c(total = tot, busy = tot - f[4] - f[5])
}
mem_available_mb <- function() {
  line <- grep("^MemAvailable:", readLines("/proc/meminfo"), value = TRUE)
  as.numeric(gsub("[^0-9]", "", line)) / 1024
}
fmt_s <- function(x) {
  ifelse(is.na(x), "-", ifelse(x >= 1, sprintf("%.3f s", x),
         ifelse(x >= 1e-3, sprintf("%.3f ms", x * 1e3), sprintf("%.1f us", x * 1e6))))
}
fmt_ratio <- function(x) if (x >= 10) sprintf("%.0fx", x) else sprintf("%.2fx", x)
fmt_n <- function(x) sprintf("%g", x)
fmt_mb <- function(x) ifelse(is.na(x), "-", sprintf("%.0f", x))

# Times f(): a warm-up call, a calibration call, then nrep batches of `inner` calls
# (inner chosen so that a batch lasts >= target seconds); median, min and max seconds
# per call, and CPU time / wall time over the batches.
time_calls <- function(f, target = 0.2, nrep = 7, budget = 20) {
  f()
  t0 <- now(); f(); t1 <- max(now() - t0, 1e-7)
  inner <- max(1L, as.integer(ceiling(target / t1)))
  nrep <- as.integer(max(3, min(nrep, floor(budget / (inner * t1)))))
  per <- numeric(nrep)
  s0 <- cpu_busy()
  c0 <- proc.time()
  w0 <- now()
  for (r in seq_len(nrep)) {
    t0 <- now()
    for (j in seq_len(inner)) f()
    per[r] <- (now() - t0) / inner
  }
  wall <- now() - w0
  c1 <- proc.time()
  s1 <- cpu_busy()
  cpu <- (c1[["user.self"]] + c1[["sys.self"]]) - (c0[["user.self"]] + c0[["sys.self"]])
  # cores kept busy by the whole machine during the batches, minus this process's share:
  # what other processes took (on a 2-core machine anything near 1 spoils the timing)
  all_busy <- (s1[["busy"]] - s0[["busy"]]) / (s1[["total"]] - s0[["total"]]) *
    parallel::detectCores()
  list(median = median(per), min = min(per), max = max(per), nrep = nrep, inner = inner,
       cpu_ratio = cpu / wall, other_load = max(0, all_busy - cpu / wall))
}

load_sim <- function() {
  f <- file.path(peers_dir, "simdata.R")
  if (!file.exists(f)) {
    stop("cannot find ", f, ": set LOCKSTEP_SHARED to the folder holding peers/simdata.R",
         call. = FALSE)
  }
  # sourced where base's %*% and rowSums are seen, not lockstep's greta-array versions
  env <- new.env(parent = getNamespace("stats"))
  sys.source(f, envir = env)
  assign("sim_hlogit", env$sim_hlogit, envir = globalenv())
}

# ---------------------------------------------------------------------------------------
# lockstep: feature detection, model building, evaluation
# ---------------------------------------------------------------------------------------

ls_ns <- function() asNamespace("lockstep")
ls_has <- function(name) exists(name, envir = ls_ns(), inherits = FALSE)
ls_exports <- function() getNamespaceExports("lockstep")

# What the issue-3 API needs, and whether the installed lockstep has it.
lockstep_features <- function() {
  ex <- ls_exports()
  list(
    sweep = "sweep" %in% ex,
    rowSums = "rowSums" %in% ex,
    cpu_only = ls_has("cpu_only"),
    model_compute_options = "compute_options" %in% names(formals(lockstep::model)),
    mld_compute_options = "compute_options" %in% names(formals(ls_ns()$model_log_density))
  )
}

compute_options_for <- function(threads) {
  options(lockstep.threads = threads)
  if (ls_has("cpu_only")) get("cpu_only", envir = ls_ns())(threads = threads) else NULL
}

# The seed's model with lockstep's R API. variant = "api" is the issue-3 form (the
# benchmark); "fallback" is the same model written with the ops lockstep had before
# issue 3 (gather-based sweep, rowSums as a product with a vector of ones), used ONLY for
# the correctness cross-check and the labelled fallback timings.
build_lockstep <- function(d, precision = "double", threads = 1L, variant = "api") {
  K <- d$K; G <- d$G; X <- d$X; g <- d$g; y <- d$y
  co <- compute_options_for(threads)
  # the issue-3 API masks base::sweep / base::rowSums with greta-array methods; look
  # them up in lockstep so that a missing one is reported rather than base's used
  if (variant == "api") {
    miss <- c("sweep", "rowSums")[!c("sweep", "rowSums") %in% ls_exports()]
    if (length(miss)) {
      stop("not available yet: lockstep does not export ", paste(miss, collapse = ", "),
           call. = FALSE)
    }
    sweep <- getExportedValue("lockstep", "sweep")
    rowSums <- getExportedValue("lockstep", "rowSums")
  }
  alpha <- normal(0, 1.5)
  beta <- normal(0, 1, dim = K)
  sigma_alpha <- normal(0, 1, truncation = c(0, Inf))
  # the FALLBACK declares sigma_gamma as a 1 x K row (same K values, same order in the
  # free state) so that a row gather can replicate it down G rows (no dim<- before issue 3)
  sigma_gamma <- normal(0, 0.5, dim = if (variant == "api") K else c(1L, K),
                        truncation = c(0, Inf))
  z_alpha <- normal(0, 1, dim = G)
  z_gamma <- normal(0, 1, dim = c(G, K))
  alpha_g <- sigma_alpha * z_alpha
  Xd <- as_data(X)
  if (variant == "api") {
    gamma <- sweep(z_gamma, 2, sigma_gamma, "*")
    eta <- alpha + alpha_g[g] + Xd %*% beta + rowSums(Xd * gamma[g, ])
  } else {
    # FALLBACK (pre-issue-3 ops): sigma_gamma (1 x K) replicated down G rows by a
    # gather, the row sums as a matrix product with a column of ones
    gamma <- z_gamma * sigma_gamma[rep(1L, G), ]
    eta <- alpha + alpha_g[g] + Xd %*% beta + (Xd * gamma[g, ]) %*% matrix(1, K, 1)
  }
  distribution(y) <- bernoulli(ilogit(eta))
  args <- list(alpha = alpha, beta = beta, sigma_alpha = sigma_alpha,
               sigma_gamma = sigma_gamma, precision = precision)
  if (!is.null(co) && "compute_options" %in% names(formals(lockstep::model))) {
    args$compute_options <- co
  }
  m <- do.call(lockstep::model, args)
  vars <- list(alpha = alpha, beta = beta, sigma_alpha = sigma_alpha,
               sigma_gamma = sigma_gamma, z_alpha = z_alpha, z_gamma = z_gamma)
  list(model = m, vars = vars, compute_options = co)
}

ls_eval <- function(b, free, gradient = TRUE) {
  mld <- get("model_log_density", envir = ls_ns())
  if (!is.null(b$compute_options) && "compute_options" %in% names(formals(mld))) {
    mld(b$model, free, gradient = gradient, compute_options = b$compute_options)
  } else {
    mld(b$model, free, gradient = gradient)
  }
}

# Tries the issue-3 model on tiny data: NULL when it builds and evaluates, otherwise
# the reason it does not.
probe_lockstep <- function(precision, threads, variant = "api") {
  if (!requireNamespace("lockstep", quietly = TRUE)) return("lockstep is not installed")
  suppressPackageStartupMessages(library(lockstep))
  set.seed(1)
  N <- 60L; G <- 6L; K <- 3L
  d <- list(N = N, G = G, K = K, g = sample.int(G, N, TRUE), X = matrix(rnorm(N * K), N, K),
            y = rbinom(N, 1, 0.5))
  res <- tryCatch({
    b <- build_lockstep(d, precision, threads, variant)
    r <- ls_eval(b, matrix(0.1, 2, b$model$n_free))
    if (!all(is.finite(r$log_density)) || !all(is.finite(r$gradient))) {
      stop("non-finite log density or gradient on the probe data")
    }
    NULL
  }, error = function(e) conditionMessage(e))
  if (!is.null(res) && !grepl("not available", res)) res <- paste("not available yet:", res)
  res
}

# ---------------------------------------------------------------------------------------
# Free-state layouts
# ---------------------------------------------------------------------------------------

# Stan's unconstrained vector (hlogit.stan): parameters in declaration order, each
# column-major, positive ones on the log scale (lower bound 0: x = exp(u)).
stan_layout <- function(G, K) {
  sizes <- c(alpha = 1, beta = K, sigma_alpha = 1, sigma_gamma = K, z_alpha = G,
             z_gamma = G * K)
  data.frame(name = names(sizes), size = sizes, offset = cumsum(c(0, sizes))[seq_along(sizes)],
             stringsAsFactors = FALSE)
}

# lockstep's free state: each variable's slice (offset, size) from model$variables,
# matched to the greta arrays through their node ids; column-major within a variable,
# lower-bounded variables on the log scale.
lockstep_layout <- function(b) {
  get_node <- get("get_node", envir = ls_ns())
  vars <- b$model$variables
  out <- lapply(names(b$vars), function(nm) {
    v <- vars[[as.character(get_node(b$vars[[nm]])$id)]]
    if (is.null(v)) stop("cannot find variable ", nm, " in the model's free-state layout")
    data.frame(name = nm, size = v$size, offset = v$offset, lower = v$lower, upper = v$upper,
               stringsAsFactors = FALSE)
  })
  do.call(rbind, out)
}

# Index vector p such that lockstep_free = stan_u[p].
stan_to_lockstep_perm <- function(st, ls, n_free) {
  p <- integer(n_free)
  for (k in seq_len(nrow(st))) {
    r <- ls[ls$name == st$name[k], ]
    if (r$size != st$size[k]) stop("size mismatch for ", st$name[k])
    p[r$offset + seq_len(r$size)] <- st$offset[k] + seq_len(st$size[k])
  }
  if (anyDuplicated(p) || any(p == 0)) stop("the two layouts do not cover each other")
  p
}

# The model's full log density (all constants, half-normal normalisation, log-Jacobian
# of the log transforms) at a Stan-layout unconstrained point, in plain R.
r_log_density <- function(u, d) {
  G <- d$G; K <- d$K
  st <- stan_layout(G, K)
  get <- function(nm) u[st$offset[st$name == nm] + seq_len(st$size[st$name == nm])]
  alpha <- get("alpha"); beta <- get("beta")
  la <- get("sigma_alpha"); lg <- get("sigma_gamma")
  sa <- exp(la); sg <- exp(lg)
  za <- get("z_alpha"); zg <- matrix(get("z_gamma"), G, K)
  gamma <- zg * rep(sg, each = G)
  eta <- alpha + sa * za[d$g] + drop(base::`%*%`(d$X, beta)) +
    base::rowSums(d$X * gamma[d$g, , drop = FALSE])
  lp_y <- sum(ifelse(d$y == 1, plogis(eta, log.p = TRUE), plogis(-eta, log.p = TRUE)))
  dnorm(alpha, 0, 1.5, log = TRUE) + sum(dnorm(beta, 0, 1, log = TRUE)) +
    dnorm(sa, 0, 1, log = TRUE) + log(2) + la +
    sum(dnorm(sg, 0, 0.5, log = TRUE) + log(2)) + sum(lg) +
    sum(dnorm(za, log = TRUE)) + sum(dnorm(zg, log = TRUE)) + lp_y
}

# What rstan's log_prob / grad_log_prob (propto = TRUE: constants dropped by `~`) leave
# out of the full log density: -log(sqrt(2 pi)) per normal term, -log(sd) for constant
# sds, and the log(2) of each half-normal's truncation.
stan_dropped_constant <- function(G, K) {
  n_normal <- 1 + K + 1 + K + G + G * K
  -n_normal * 0.5 * log(2 * pi) - log(1.5) - K * log(0.5) + (1 + K) * log(2)
}

stan_model_file <- function(variant) {
  file.path(cache_dir, if (variant == "glm") "hlogit_glm.rds" else "hlogit.rds")
}

# Compiles (with peers/compile.R, which handles Debian's Boost) and caches the Stan model.
ensure_stan_model <- function(variant) {
  src <- file.path(peers_dir, if (variant == "glm") "hlogit_glm.stan" else "hlogit.stan")
  cached_stan_model(src, stan_model_file(variant), peers_dir)  # peer_helpers.R
}

# ---------------------------------------------------------------------------------------
# Workers (child processes)
# ---------------------------------------------------------------------------------------

worker_rstan <- function(o) {
  suppressPackageStartupMessages(library(rstan))
  load_sim()
  N <- as.numeric(o$N); K <- as.integer(o$K); G <- as.integer(round(N / 10))
  variant <- o$stan
  res <- list(kind = "rstan", variant = variant, N = N, G = G, K = K)
  res <- tryCatch({
    sm <- readRDS(stan_model_file(variant))
    t_sim <- system.time(sim <- sim_hlogit(N, G, K, SEED))[["elapsed"]]
    d <- sim$data; rm(sim); invisible(gc())
    base <- rss_mb(); hwm_ok <- reset_hwm()
    t_fit <- system.time(invisible(capture.output(suppressMessages(
      fit <- sampling(sm, data = d, chains = 0)))))[["elapsed"]]
    npar <- get_num_upars(fit)
    set.seed(1)
    u <- rnorm(npar, 0, 0.5)
    tm <- time_calls(function() grad_log_prob(fit, u), target = 0.2, nrep = 5, budget = 15)
    gr <- grad_log_prob(fit, u)
    peak <- hwm_mb()
    c(res, list(ok = TRUE, sec = tm$median, sec_min = tm$min, sec_max = tm$max, nrep = tm$nrep,
                inner = tm$inner, cpu_ratio = tm$cpu_ratio, other_load = tm$other_load,
                t_sim = t_sim, t_setup = t_fit,
                npar = npar, finite = all(is.finite(gr)), peak_mb = peak,
                model_mb = peak - base, hwm_reset = hwm_ok))
  }, error = function(e) c(res, list(ok = FALSE, error = conditionMessage(e))))
  saveRDS(res, o$out)
}

worker_lockstep <- function(o) {
  suppressPackageStartupMessages(library(lockstep))
  load_sim()
  N <- as.numeric(o$N); K <- as.integer(o$K); G <- as.integer(round(N / 10))
  precision <- o$precision; threads <- as.integer(o$threads); variant <- o$variant
  chains <- split_num(o$chains)
  t_sim <- system.time(sim <- sim_hlogit(N, G, K, SEED))[["elapsed"]]
  d <- sim$data; rm(sim); invisible(gc())
  if (o$order == "sorted") {
    # the same observations in group order: the same model (the likelihood is a sum over
    # exchangeable rows), but gathers and scatter-adds walk the group arrays in order
    ord <- order(d$g)
    d$g <- d$g[ord]; d$y <- d$y[ord]; d$X <- d$X[ord, , drop = FALSE]
    rm(ord); invisible(gc())
  }
  results <- list()
  for (C in chains) {
    res <- list(kind = "lockstep", variant = variant, N = N, G = G, K = K, C = C,
                precision = precision, threads = threads, order = o$order, t_sim = t_sim)
    res <- tryCatch({
      base <- rss_mb(); hwm_ok <- reset_hwm()
      t_build <- system.time(b <- build_lockstep(d, precision, threads, variant))[["elapsed"]]
      set.seed(1)
      free <- matrix(rnorm(C * b$model$n_free, 0, 0.5), C, b$model$n_free)
      tm <- time_calls(function() ls_eval(b, free), target = 0.2, nrep = 7, budget = 20)
      r <- ls_eval(b, free)
      # The engine alone (what a leapfrog step costs): timed inside the engine,
      # without the copies of the state and gradient to and from R.
      sec_engine <- NA
      if (exists("ls_engine_time", envir = ls_ns()) && !is.null(b$compute_options)) {
        reps <- as.integer(min(50, max(3, ceiling(1 / tm$median))))
        sec_engine <- get("ls_engine_time", envir = ls_ns())(
          get("model_engine", envir = ls_ns())(b$model), free, b$compute_options, reps) / C
      }
      peak <- hwm_mb()
      out <- c(res, list(ok = TRUE, sec_call = tm$median, sec = tm$median / C,
                         sec_engine = sec_engine,
                         sec_min = tm$min / C, sec_max = tm$max / C, nrep = tm$nrep,
                         inner = tm$inner, cpu_ratio = tm$cpu_ratio,
                         other_load = tm$other_load, t_build = t_build,
                         n_free = b$model$n_free,
                         finite = all(is.finite(r$log_density)) && all(is.finite(r$gradient)),
                         peak_mb = peak, model_mb = peak - base, hwm_reset = hwm_ok))
      rm(b, free, r); invisible(gc())
      out
    }, error = function(e) c(res, list(ok = FALSE, error = conditionMessage(e))))
    results[[length(results) + 1]] <- res
    saveRDS(results, o$out)  # after each C, so a crash later keeps what was measured
  }
}

# Correctness cross-check at a small N: lockstep (the issue-3 model if it builds, else the
# FALLBACK model) against rstan's hlogit.stan and a plain-R log density.
worker_check <- function(o) {
  suppressPackageStartupMessages({library(rstan); library(lockstep)})
  load_sim()
  N <- as.numeric(o$N); K <- as.integer(o$K); G <- as.integer(round(N / 10))
  variant <- o$variant; precisions <- split_chr(o$precision)
  d <- sim_hlogit(N, G, K, SEED)$data
  fit <- NULL
  invisible(capture.output(suppressMessages(
    fit <- sampling(readRDS(stan_model_file("rdp")), data = d, chains = 0))))
  st <- stan_layout(G, K)
  npar <- get_num_upars(fit)
  stopifnot(npar == sum(st$size))
  set.seed(11); u1 <- rnorm(npar, 0, 0.5)
  set.seed(12); u2 <- rnorm(npar, 0, 0.5)
  g1 <- grad_log_prob(fit, u1); g2 <- grad_log_prob(fit, u2)
  s1 <- attr(g1, "log_prob"); s2 <- attr(g2, "log_prob")
  g1 <- as.numeric(g1); g2 <- as.numeric(g2)
  r1 <- r_log_density(u1, d); r2 <- r_log_density(u2, d)
  out <- list(kind = "check", variant = variant, N = N, G = G, K = K, npar = npar,
              stan_lp = c(s1, s2), r_lp = c(r1, r2), const = stan_dropped_constant(G, K),
              per_precision = list())
  for (prec in precisions) {
    res <- tryCatch({
      b <- build_lockstep(d, prec, as.integer(o$threads), variant)
      ls <- lockstep_layout(b)
      if (!all(ls$lower[ls$name %in% c("sigma_alpha", "sigma_gamma")] == 0) ||
          !all(is.infinite(ls$upper))) {
        stop("unexpected bounds in lockstep's layout")
      }
      p <- stan_to_lockstep_perm(st, ls, b$model$n_free)
      r <- ls_eval(b, rbind(u1[p], u2[p]))
      inv <- order(p)  # lockstep column j holds Stan element p[j]; back to Stan order
      lg1 <- r$gradient[1, inv]; lg2 <- r$gradient[2, inv]
      rel_norm <- max(abs(c(lg1 - g1, lg2 - g2))) / max(abs(c(g1, g2)))
      big <- abs(c(g1, g2)) > 1e-6 * max(abs(c(g1, g2)))
      rel_elem <- max((abs(c(lg1 - g1, lg2 - g2)) / pmax(abs(c(lg1, lg2)), abs(c(g1, g2))))[big])
      by_par <- sapply(seq_len(nrow(st)), function(k) {
        idx <- st$offset[k] + seq_len(st$size[k])
        max(abs(c(lg1[idx] - g1[idx], lg2[idx] - g2[idx]))) / max(abs(c(g1[idx], g2[idx])), 1e-300)
      })
      names(by_par) <- st$name
      list(ok = TRUE, precision = prec, ls_lp = r$log_density,
           ls_minus_stan = r$log_density - c(s1, s2),
           ls_minus_r = r$log_density - c(r1, r2),
           diff_of_diffs = (r$log_density[1] - r$log_density[2]) - (s1 - s2),
           grad_rel_norm = rel_norm, grad_rel_elem = rel_elem, grad_rel_by_par = by_par,
           layout = ls)
    }, error = function(e) list(ok = FALSE, precision = prec, error = conditionMessage(e)))
    out$per_precision[[prec]] <- res
  }
  saveRDS(out, o$out)
}

# ---------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------

run_child <- function(args, memcap_mb, threads = 1L) {
  out <- tempfile(fileext = ".rds")
  cmd <- paste(c(shQuote(file.path(R.home("bin"), "Rscript")), shQuote(script_file),
                 shQuote(args), "--out", shQuote(out)), collapse = " ")
  env <- sprintf("OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=1", as.integer(threads))
  cap <- if (is.finite(memcap_mb) && memcap_mb > 0) {
    sprintf("ulimit -v %.0f 2>/dev/null; ", memcap_mb * 1024)
  } else ""
  rc <- system(paste0(cap, env, " exec ", cmd))
  res <- if (file.exists(out)) readRDS(out) else NULL
  list(rc = rc, res = res)
}

stream_bw <- function(threads) {
  src <- file.path(bench_dir, "stream.c")
  exe <- file.path(cache_dir, "stream")
  if (!file.exists(exe) || file.mtime(exe) < file.mtime(src)) {
    dir.create(cache_dir, showWarnings = FALSE)
    rc <- system2("cc", c("-O3", "-march=native", "-fopenmp", shQuote(src), "-o", shQuote(exe)),
                  stdout = FALSE, stderr = FALSE)
    if (rc != 0) return(c(triad = NA, read = NA))
  }
  line <- tryCatch(system2(exe, c("800", threads, "6"), stdout = TRUE), error = function(e) "")
  num <- suppressWarnings(as.numeric(regmatches(line, gregexpr("[0-9.]+", line))[[1]][1:2]))
  c(triad = num[1], read = num[2])
}

# Bytes that one chain-gradient must move at least: the observation data (X, g, y)
# streamed once per engine call and shared by the C chains, plus each chain's own
# group-level state (z_gamma, z_alpha) read once and its adjoint written once (3 passes
# over G x (K + 1) values: read value, read + write adjoint accumulator). This assumes
# gathers and scatter-adds hit cache (e.g. rows sorted by group); with random group
# order and a per-chain working set larger than the cache, add ~3 (K + 1) values per
# observation per chain (see RESULTS.md).
floor_bytes <- function(N, G, K, C, precision) {
  s <- if (precision == "single") 4 else 8
  data <- N * (K * s + 4 + 4)
  data / C + 3 * G * (K + 1) * s
}

driver <- function(o) {
  orders <- split_chr(o$order)
  if (!all(orders %in% c("random", "sorted"))) stop("--order takes random and/or sorted", call. = FALSE)
  Ns <- split_num(o$N); chains <- split_num(o$chains); threads <- as.integer(split_num(o$threads))
  precisions <- split_chr(o$precision); K <- as.integer(o$K)
  stan_variants <- split_chr(o$stan)
  budget <- as.numeric(o$budget); t_start <- now()
  memcap <- if (nzchar(o$memcap)) as.numeric(o$memcap) else floor(0.9 * mem_available_mb())
  over_budget <- function() now() - t_start > budget

  cat("== hlogit benchmark (issue 3) ==\n")
  cat(sprintf("repo %s (git %s); shared %s\n", repo_root,
              tryCatch(system2("git", c("-C", shQuote(repo_root), "rev-parse", "--short", "HEAD"),
                               stdout = TRUE, stderr = FALSE)[1], error = function(e) "?"),
              shared_dir))
  cpu <- grep("^model name", readLines("/proc/cpuinfo"), value = TRUE)[1]
  cat(sprintf("host: %s, %d cores, MemAvailable %.1f GB; child memory cap %s\n",
              sub(".*: ", "", cpu), parallel::detectCores(), mem_available_mb() / 1024,
              if (memcap > 0) sprintf("%.1f GB (ulimit -v)", memcap / 1024) else "none"))
  has_ls <- requireNamespace("lockstep", quietly = TRUE)
  if (has_ls) {
    cat(sprintf("lockstep %s from %s\n", format(utils::packageVersion("lockstep")),
                dirname(system.file(package = "lockstep"))))
    f <- lockstep_features()
    cat("issue-3 API present: ",
        paste(sprintf("%s=%s", names(f), ifelse(unlist(f), "yes", "no")), collapse = ", "), "\n")
  }
  cat(sprintf("data: sim_hlogit(N, G = N/10, K = %d, seed = %d)\n\n", K, SEED))

  # which lockstep configurations exist
  # probes[[key]]: NA when the configuration builds, else why it does not (a list
  # element set to NULL would vanish, hence NA)
  probes <- list()
  for (p in precisions) for (t in threads) {
    key <- paste(p, t)
    why <- if (has_ls) probe_lockstep(p, t, "api") else "lockstep is not installed"
    probes[[key]] <- if (is.null(why)) NA_character_ else why
    cat(sprintf("lockstep model, precision %s, threads %d: %s\n", p, t,
                if (is.na(probes[[key]])) "builds" else probes[[key]]))
    if (is.na(probes[[key]]) && !ls_has("cpu_only") && t > 1) {
      cat("  note: lockstep::cpu_only() does not exist; threads are requested only through",
          "options(lockstep.threads) and OMP_NUM_THREADS: see the cpu/wall column\n")
    }
  }
  fallback_probe <- if (has_ls) probe_lockstep("double", 1L, "fallback") else "not installed"
  cat(sprintf("FALLBACK lockstep model (pre-issue-3 ops, cross-check only): %s\n\n",
              if (is.null(fallback_probe)) "builds" else fallback_probe))

  steal0 <- cpu_steal()
  bw <- list()
  measure_bw <- function(when) {
    for (t in unique(c(1L, threads))) {
      b <- stream_bw(t); k <- as.character(t)
      # the best of the measurements: the floor is what the hardware can do
      bw[[k]] <<- if (is.null(bw[[k]])) b else pmax(bw[[k]], b, na.rm = TRUE)
      cat(sprintf("memory bandwidth %s (bench/stream.c, 800 MB arrays), %d thread(s): triad %.1f GB/s, read %.1f GB/s\n",
                  when, t, b[["triad"]], b[["read"]]))
    }
  }
  if (yes(o$stream)) { measure_bw("at start"); cat("\n") }

  # correctness cross-check
  check <- NULL
  if ((yes(o$rstan) || yes(o$check)) && !requireNamespace("rstan", quietly = TRUE))
    stop("--rstan yes and --check yes need rstan, which is not installed: run ",
         "`make bench-setup` from the repository root (Debian's r-cran-rstan), or pass ",
         "--rstan no --check no", call. = FALSE)
  if (yes(o$check)) {
    api_ok <- any(vapply(probes, is.na, logical(1)))
    variant <- if (api_ok) "api" else "fallback"
    if (!api_ok && !is.null(fallback_probe)) {
      cat("cross-check skipped: neither the issue-3 model nor the fallback builds\n\n")
    } else {
      ensure_stan_model("rdp")
      precs <- if (api_ok) precisions[vapply(precisions, function(p) any(vapply(
        threads, function(t) is.na(probes[[paste(p, t)]]), logical(1))), logical(1))] else "double"
      cat(sprintf("cross-check at N = %g (lockstep %s model%s) ...\n", as.numeric(o$`check-N`),
                  variant, if (variant == "fallback") ", FALLBACK: pre-issue-3 ops" else ""))
      # with the largest thread count benchmarked, so that sharding is exercised
      ch <- run_child(c("--worker", "check", "--N", o$`check-N`, "--K", o$K, "--variant", variant,
                        "--precision", paste(precs, collapse = ","),
                        "--threads", if (variant == "api") max(threads) else 1L), memcap,
                      if (variant == "api") max(threads) else 1L)
      check <- ch$res
      print_check(check)
    }
  }

  # timings
  rows <- list(); stan_rows <- list(); fb_rows <- list()
  if (yes(o$rstan)) for (v in stan_variants) ensure_stan_model(v)
  for (N in Ns) {
    G <- round(N / 10)
    if (yes(o$rstan)) for (v in stan_variants) {
      est <- 300 + 2300 * N / 1e6
      if (over_budget()) {
        stan_rows[[length(stan_rows) + 1]] <- list(N = N, variant = v, ok = FALSE,
                                                    error = "skipped: time budget")
      } else if (memcap > 0 && est > memcap) {
        stan_rows[[length(stan_rows) + 1]] <- list(N = N, variant = v, ok = FALSE,
          error = sprintf("skipped: needs ~%.0f GB, cap %.0f GB", est / 1024, memcap / 1024))
      } else {
        cat(sprintf("rstan (%s) N = %g ...\n", v, N))
        r <- run_child(c("--worker", "rstan", "--N", format(N, scientific = FALSE), "--K", o$K,
                         "--stan", v), memcap)
        stan_rows[[length(stan_rows) + 1]] <- if (is.null(r$res)) {
          list(N = N, variant = v, ok = FALSE, error = sprintf("child failed (exit %d)", r$rc))
        } else r$res
      }
      x <- stan_rows[[length(stan_rows)]]
      cat(if (isTRUE(x$ok)) sprintf("  %s per gradient (setup %.1f s), peak %s MB, other processes %.2f cores\n",
                                     fmt_s(x$sec), x$t_setup, fmt_mb(x$peak_mb),
                                     if (is.null(x$other_load)) NA else x$other_load) else paste0("  ", x$error, "\n"))
    }
    for (p in precisions) for (t in threads) for (ord in orders) {
      why <- probes[[paste(p, t)]]
      if (!is.na(why)) {
        for (C in chains) rows[[length(rows) + 1]] <- list(N = N, G = G, K = K, C = C, precision = p,
                                                            threads = t, order = ord, ok = FALSE,
                                                            error = why)
        next
      }
      if (over_budget()) {
        for (C in chains) rows[[length(rows) + 1]] <- list(N = N, G = G, K = K, C = C, precision = p,
                                                            threads = t, order = ord, ok = FALSE,
                                                            error = "skipped: time budget")
        next
      }
      cat(sprintf("%s lockstep N = %g, %s, %d thread(s), rows in %s order, C = %s ...\n",
                  format(Sys.time(), "%H:%M:%S"), N, p, t, ord, o$chains))
      r <- run_child(c("--worker", "lockstep", "--N", format(N, scientific = FALSE), "--K", o$K,
                       "--precision", p, "--threads", t, "--chains", o$chains, "--variant", "api",
                       "--order", ord), memcap, t)
      got <- if (is.null(r$res)) list() else r$res
      for (C in chains) {
        hit <- Filter(function(x) x$C == C, got)
        rows[[length(rows) + 1]] <- if (length(hit)) hit[[1]] else
          list(N = N, G = G, K = K, C = C, precision = p, threads = t, order = ord, ok = FALSE,
               error = sprintf("child failed (exit %d; out of memory?)", r$rc))
      }
    }
    if (yes(o$`fallback-timing`) && is.null(fallback_probe)) for (ord in orders) {
      if (over_budget()) break
      cat(sprintf("FALLBACK lockstep (pre-issue-3 ops) N = %g, double, rows in %s order, C = %s ...\n",
                  N, ord, o$chains))
      r <- run_child(c("--worker", "lockstep", "--N", format(N, scientific = FALSE), "--K", o$K,
                       "--precision", "double", "--threads", "1", "--chains", o$chains,
                       "--variant", "fallback", "--order", ord), memcap, 1L)
      got <- if (is.null(r$res)) list() else r$res
      for (C in chains) {
        hit <- Filter(function(x) x$C == C, got)
        fb_rows[[length(fb_rows) + 1]] <- if (length(hit)) hit[[1]] else
          list(N = N, G = G, K = K, C = C, precision = "double", threads = 1, order = ord, ok = FALSE,
               error = sprintf("child failed (exit %d; out of memory?)", r$rc))
      }
    }
  }
  if (yes(o$stream)) measure_bw("at end")
  if (nzchar(o$bw)) {
    # --bw 28 or --bw 1:14.5,2:28: the triad bandwidth (GB/s) the floor uses, per thread count
    for (item in split_chr(o$bw)) {
      kv <- strsplit(item, ":")[[1]]
      ks <- if (length(kv) == 2) kv[1] else as.character(unique(c(1L, threads)))
      for (k in ks) bw[[k]] <- c(triad = as.numeric(kv[length(kv)]), read = NA)
    }
    cat("floor computed with --bw", o$bw, "GB/s\n")
  }
  steal1 <- cpu_steal()
  cat(sprintf("CPU steal during the run: %.1f%% of CPU time (time the host gave this VM's cores to others)\n\n",
              100 * (steal1[["steal"]] - steal0[["steal"]]) / (steal1[["total"]] - steal0[["total"]])))
  print_stan(stan_rows)
  print_table(rows, stan_rows, bw, "lockstep (issue-3 model) vs rstan (hlogit.stan)")
  if (length(fb_rows)) {
    print_table(fb_rows, stan_rows, bw,
                "FALLBACK lockstep model (pre-issue-3 ops; NOT the benchmark figure)")
  }
  print_linearity(rows)
  if (length(fb_rows)) print_linearity(fb_rows, "FALLBACK model, ")
  all <- list(rows = rows, stan = stan_rows, fallback = fb_rows, check = check, bw = bw,
              steal = rbind(steal0, steal1),
              args = o, date = Sys.time())
  dir.create(cache_dir, showWarnings = FALSE)
  saveRDS(all, file.path(cache_dir, "hlogit_last.rds"))
  cat(sprintf("total wall time %.0f s (results saved in %s)\n", now() - t_start,
              file.path(cache_dir, "hlogit_last.rds")))
  invisible(all)
}

print_check <- function(ch) {
  if (is.null(ch)) { cat("  cross-check child failed\n\n"); return(invisible()) }
  cat(sprintf("  N = %g, G = %d, K = %d, %d unconstrained parameters; two points u ~ N(0, 0.5)\n",
              ch$N, ch$G, ch$K, ch$npar))
  cat(sprintf("  rstan lp - plain-R lp = %s; expected (constants rstan drops) %.6f\n",
              paste(sprintf("%.6f", ch$stan_lp - ch$r_lp), collapse = ", "), -ch$const))
  for (r in ch$per_precision) {
    if (!isTRUE(r$ok)) { cat(sprintf("  [%s] %s\n", r$precision, r$error)); next }
    tol_g <- if (r$precision == "single") 1e-5 else 1e-9
    tol_lp <- if (r$precision == "single") 1e-6 else 1e-10
    lp_rel <- max(abs(r$ls_minus_r)) / max(abs(ch$r_lp))
    lp_dd <- abs(r$diff_of_diffs) / max(abs(ch$stan_lp))
    pass <- r$grad_rel_norm < tol_g && lp_rel < tol_lp && lp_dd < tol_lp
    cat(sprintf("  [%s, %s model] lockstep lp = %s\n", r$precision,
                if (ch$variant == "fallback") "FALLBACK" else "issue-3", paste(sprintf("%.6f", r$ls_lp),
                                                                            collapse = ", ")))
    cat(sprintf("    lockstep lp - plain-R lp (full density) = %s  (relative %.2g)\n",
                paste(sprintf("%.3g", r$ls_minus_r), collapse = ", "), lp_rel))
    cat(sprintf("    lockstep lp - rstan lp = %s (constant expected %.6f); lp(u1)-lp(u2) differs by %.3g\n",
                paste(sprintf("%.6f", r$ls_minus_stan), collapse = ", "), ch$const, r$diff_of_diffs))
    cat(sprintf("    gradient vs rstan: max |diff| / max |grad| = %.3g; max elementwise relative = %.3g\n",
                r$grad_rel_norm, r$grad_rel_elem))
    cat(sprintf("    by parameter (max |diff| / max |grad|): %s\n",
                paste(sprintf("%s %.2g", names(r$grad_rel_by_par), r$grad_rel_by_par), collapse = ", ")))
    cat(sprintf("    CROSS-CHECK %s (tolerances: gradient %.0e, log density %.0e relative)\n",
                if (pass) "PASSED" else "FAILED", tol_g, tol_lp))
  }
  cat("\n")
}

print_stan <- function(stan_rows) {
  if (!length(stan_rows)) return(invisible())
  cat("rstan 2.21 grad_log_prob (one gradient; Debian's -O2 build):\n")
  for (s in stan_rows) {
    if (isTRUE(s$ok)) {
      cat(sprintf("  %-3s N = %-8g G = %-7g %s/gradient (min %s, max %s; %d x %d calls), setup %.1f s, peak %s MB (model %s MB)\n",
                  s$variant, s$N, s$G, fmt_s(s$sec), fmt_s(s$sec_min), fmt_s(s$sec_max), s$nrep,
                  s$inner, s$t_setup, fmt_mb(s$peak_mb), fmt_mb(s$model_mb)))
    } else {
      cat(sprintf("  %-3s N = %-8g %s\n", s$variant, s$N, s$error))
    }
  }
  cat("\n")
}

print_table <- function(rows, stan_rows, bw, title) {
  if (!length(rows)) return(invisible())
  cat(title, ":\n", sep = "")
  hdr <- c("N", "G", "K", "C", "precision", "threads", "rows", "lockstep s/chain-grad",
           "engine only", "rstan s/grad",
           "ratio", "engine ratio", "cpu/wall", "others", "floor", "x floor (engine)",
           "lockstep peak MB", "(model MB)", "rstan peak MB")
  tab <- lapply(rows, function(r) {
    s <- Filter(function(x) x$N == r$N && x$variant == "rdp" && isTRUE(x$ok), stan_rows)
    s <- if (length(s)) s[[1]] else NULL
    b <- bw[[as.character(r$threads)]]
    fl <- if (!is.null(b) && is.finite(b[["triad"]])) {
      floor_bytes(r$N, r$G, r$K, r$C, r$precision) / (b[["triad"]] * 1e9)
    } else NA
    if (isTRUE(r$ok)) {
      c(fmt_n(r$N), fmt_n(r$G), r$K, r$C, r$precision, r$threads, r$order,
        paste0(fmt_s(r$sec), if (!isTRUE(r$finite)) " (!)" else ""),
        fmt_s(if (is.null(r$sec_engine)) NA else r$sec_engine),
        fmt_s(if (is.null(s)) NA else s$sec),
        if (is.null(s)) "-" else fmt_ratio(s$sec / r$sec),
        if (is.null(s) || !is.numeric(r$sec_engine) || is.na(r$sec_engine)) "-" else
          fmt_ratio(s$sec / r$sec_engine),
        sprintf("%.2f", r$cpu_ratio),
        if (is.null(r$other_load)) "-" else sprintf("%.2f", r$other_load), fmt_s(fl),
        if (is.na(fl)) "-" else sprintf("%.1f (%s)", r$sec / fl,
          if (!is.numeric(r$sec_engine) || is.na(r$sec_engine)) "-" else
            sprintf("%.1f", r$sec_engine / fl)),
        fmt_mb(r$peak_mb), fmt_mb(r$model_mb), fmt_mb(if (is.null(s)) NA else s$peak_mb))
    } else {
      c(fmt_n(r$N), fmt_n(r$G), r$K, r$C, r$precision, r$threads, r$order, "-", "-",
        fmt_s(if (is.null(s)) NA else s$sec), "-", "-", "-", "-", fmt_s(fl), "-", "-", "-",
        fmt_mb(if (is.null(s)) NA else s$peak_mb))
    }
  })
  m <- rbind(hdr, do.call(rbind, tab))
  w <- apply(m, 2, function(col) max(nchar(col)))
  for (i in seq_len(nrow(m))) {
    cat(paste(vapply(seq_along(w), function(k) formatC(m[i, k], width = w[k]), ""),
              collapse = "  "), "\n")
  }
  notes <- unique(unlist(lapply(rows, function(r) if (!isTRUE(r$ok)) r$error)))
  for (n in notes) cat("  lockstep skipped/failed:", n, "\n")
  bad <- Filter(function(r) isTRUE(r$ok) && !isTRUE(r$finite), rows)
  if (length(bad)) {
    cat("  (!) WARNING: a non-finite log density or gradient for some chain in", length(bad),
        "row(s): the test point has |eta| > ~37, where a probability-form bernoulli(ilogit(eta))",
        "gives log(0); the logit form must not\n")
  }
  cat("  ratio: rstan's gradient over lockstep's through R (lockstep:::model_log_density(),",
      "which copies the state in and a fresh gradient matrix out); engine ratio: over the",
      "engine alone, what a sampler's leapfrog step pays (bench/hlogit_sampler.R)\n")
  cat("  floor: minimum bytes per chain-gradient (data once per call / C + 3 passes over each",
      "chain's G x (K+1) group state) at the STREAM triad bandwidth for that thread count\n")
  cat("  others: cores kept busy by OTHER processes during the timed calls (/proc/stat);",
      "well above 0 means the row was timed on a contended machine\n\n")
}

print_linearity <- function(rows, label = "") {
  ok <- Filter(function(r) isTRUE(r$ok), rows)
  if (length(ok) < 2) return(invisible())
  keys <- unique(vapply(ok, function(r) paste(r$C, r$precision, r$threads, r$order), ""))
  lines <- character()
  for (k in keys) {
    rs <- Filter(function(r) paste(r$C, r$precision, r$threads, r$order) == k, ok)
    if (length(rs) < 2) next
    rs <- rs[order(vapply(rs, `[[`, 0, "N"))]
    for (i in 2:length(rs)) {
      lines <- c(lines, sprintf("  C = %-3s %-6s %s thr, %s rows: N %g -> %g (x%g): time x%.2f",
                                rs[[i]]$C, rs[[i]]$precision, rs[[i]]$threads, rs[[i]]$order,
                                rs[[i - 1]]$N,
                                rs[[i]]$N, rs[[i]]$N / rs[[i - 1]]$N, rs[[i]]$sec / rs[[i - 1]]$sec))
    }
  }
  if (length(lines)) cat(label, "growth in N (linear = same factor as N):\n", paste(lines, collapse = "\n"),
                         "\n\n", sep = "")
}

# ---------------------------------------------------------------------------------------

main <- function() {
  o <- parse_args(commandArgs(TRUE))
  switch(o$worker,
    rstan = worker_rstan(o),
    lockstep = worker_lockstep(o),
    check = worker_check(o),
    driver(o)
  )
}

main()
