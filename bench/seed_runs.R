# What the many-seeds benchmarks share (eight_schools_seeds.R,
# slopes_seeds.R, issues 37 and 49): a run's verdict against a reference
# posterior, lockstep's and rstan's runs with their warnings kept, and the
# table over seeds. Sourced from the repository root.

# A run's verdict from its draws of one quantity (a list of per-chain
# vectors) and the warnings it gave: z = |mean - reference| / MCSE, MCSE =
# sd / sqrt(bulk ESS) (lockstep's ess_bulk(), the same estimator for both
# samplers' draws); a chain is "stuck" when more than a quarter of its
# consecutive draws repeat (it rejects its proposals); "named" when a warning
# of the run names that chain.
verdict <- function(chains, warnings, reference) {
  all <- unlist(chains)
  ess <- ess_bulk(coda::mcmc.list(lapply(chains, coda::mcmc)))
  mcse <- stats::sd(all) / sqrt(ess)
  repeats <- vapply(chains, function(v) mean(diff(v) == 0), numeric(1))
  stuck <- which(repeats > 0.25)
  named <- vapply(stuck, function(k) {
    any(grepl(sprintf("chains? ([0-9]+, )*%d\\b|chain %d:", k, k), warnings))
  }, logical(1))
  list(mean = mean(all), z = abs(mean(all) - reference) / mcse, ess = ess,
       stuck = length(stuck), named = all(named), warned = length(warnings) > 0, rescued = 0)
}

# f() with its warnings muffled and kept: list(value, warnings).
keeping_warnings <- function(f) {
  warnings <- character()
  value <- withCallingHandlers(f(), warning = function(w) {
    warnings <<- c(warnings, conditionMessage(w))
    invokeRestart("muffleWarning")
  })
  list(value = value, warnings = warnings)
}

# A lockstep run (`fit()`, seeded) and its verdict on quantity `name`, with
# the number of chains its warmup moved (mcmc()'s warmup rescue).
lockstep_verdict <- function(seed, fit, name, reference) {
  got <- keeping_warnings(function() {
    set.seed(seed)
    fit()
  })
  d <- got$value
  v <- verdict(lapply(d, function(ch) as.numeric(ch[, name])), got$warnings, reference)
  rescues <- attr(d, "model_info")$warmup_rescues
  v$rescued <- if (is.null(rescues)) 0 else nrow(rescues)
  v
}

# An rstan run (`fit(seed)`, a stanfit) and its verdict on quantity `name`.
rstan_verdict <- function(seed, fit, name, reference) {
  got <- keeping_warnings(function() fit(seed))
  arr <- as.array(got$value)[, , name]
  verdict(lapply(seq_len(ncol(arr)), function(k) as.numeric(arr[, k])), got$warnings, reference)
}

# nuts() at adapt_delta, with adapt_step_size and max_energy_error unless
# "default" (nuts()'s own, also for a lockstep from before the arguments).
seeds_sampler <- function(adapt_delta, adapt_step_size, max_energy_error = "default") {
  args <- list(adapt_delta = adapt_delta)
  if (!identical(adapt_step_size, "default")) args$adapt_step_size <- adapt_step_size
  if (!identical(max_energy_error, "default")) {
    args$max_energy_error <- as.numeric(max_energy_error)
  }
  do.call(nuts, args)
}

# The table over seeds 1..n_seeds of each sampler in `samplers` (named
# functions of a seed giving a verdict), printed, with the seeds that were off
# or had a stuck chain.
seeds_table <- function(samplers, n_seeds, adapt_delta) {
  rows <- list()
  for (name in names(samplers)) {
    seconds <- system.time(runs <- lapply(seq_len(n_seeds), samplers[[name]]))[["elapsed"]]
    z <- vapply(runs, `[[`, numeric(1), "z")
    stuck <- vapply(runs, `[[`, numeric(1), "stuck")
    named <- vapply(runs, `[[`, logical(1), "named")
    rescued <- vapply(runs, `[[`, numeric(1), "rescued")
    off <- z > 4
    silent_bad <- (off | stuck > 0) & !(stuck > 0 & named)
    rows[[name]] <- data.frame(
      sampler = name, seeds = n_seeds, adapt_delta = adapt_delta,
      off_by_4_mcse = sum(off), with_stuck_chain = sum(stuck > 0),
      stuck_named = sum(stuck > 0 & named), bad_and_unnamed = sum(silent_bad),
      warmup_moved_a_chain = sum(rescued > 0),
      median_z = round(stats::median(z), 2), median_ess = round(stats::median(
        vapply(runs, `[[`, numeric(1), "ess"))),
      seconds = round(seconds, 1))
    cat(sprintf("%s: seeds with |mean - reference| > 4 MCSE: %s; with a stuck chain: %s\n", name,
                paste(which(off), collapse = " "), paste(which(stuck > 0), collapse = " ")))
  }
  print(do.call(rbind, rows), row.names = FALSE)
  invisible(rows)
}

# The Stan program `code` compiled once and cached in bench/cache/`name`.rds
# (git-ignored), again when the code changes.
stan_program <- function(code, name) {
  path <- file.path("bench", "cache", paste0(name, ".rds"))
  if (file.exists(path)) {
    cached <- readRDS(path)
    if (identical(cached$code, code)) return(cached$model)
  }
  dir.create(dirname(path), showWarnings = FALSE, recursive = TRUE)
  source("bench/peer_helpers.R", local = TRUE)  # fix_boost()
  fix_boost()
  cat("compiling the Stan program (about a minute) ...\n")
  sm <- rstan::stan_model(model_code = code, model_name = name, save_dso = TRUE)
  saveRDS(list(code = code, model = sm), path)
  sm
}

# Command-line options --key value over `defaults` (a named list).
seeds_options <- function(defaults) {
  args <- commandArgs(trailingOnly = TRUE)
  opt <- defaults
  i <- 1
  while (i <= length(args)) {
    key <- sub("^--", "", args[i])
    if (!key %in% names(opt) || i == length(args)) stop("unknown or incomplete argument ", args[i])
    opt[[key]] <- args[i + 1]
    i <- i + 2
  }
  opt
}
