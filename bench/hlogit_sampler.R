# The seed model's sampler through R: what a leapfrog step costs in mcmc(), against the
# engine's gradient alone. bench/hlogit.R times one log density and gradient; a sampler
# adds its vector operations (momentum draws, kick and drift, kinetic energies) and
# what each kept draw costs (its traced values, its raw draws when they are kept).
#
#   Rscript bench/hlogit_sampler.R [--N 1e6] [--chains 4] [--threads 2]
#                                  [--precision double] [--iterations 5,25] [--L 10]
#                                  [--raw default|keep|drop]
#
# --raw keep keeps every raw draw (the free state, 67 MB a draw of 4 chains at
# N = 10^6), drop none, default as mcmc() decides (up to
# getOption("lockstep.max_raw_draws_mb"), 1024 MB): what keeping a draw costs
# is the difference between keep and drop.
#
# Runs hmc() with a fixed number of leapfrog steps L and no warmup, for each of the two
# iteration counts, and takes the difference (what the extra iterations cost, without
# the model's build and the first evaluation); prints it per iteration and per
# chain-gradient, with the engine alone (ls_engine_time) for comparison. The step size
# is small (1e-4) so that the chains stay near their starts; HMC's trajectories have
# their L steps whether or not they diverge. The model and data: hlogit_model.R (the seed's
# generator, ../shared/peers/simdata.R; set LOCKSTEP_SHARED to the folder holding peers/).
suppressPackageStartupMessages(library(lockstep))

script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(dirname(script), "hlogit_model.R"))
opt <- bench_options(list(N = "1e6", chains = "4", threads = "2", precision = "double",
                          iterations = "5,25", L = "10", raw = "default"))
if (!opt$raw %in% c("default", "keep", "drop")) stop("--raw must be default, keep or drop")
if (opt$raw != "default") options(lockstep.max_raw_draws_mb = if (opt$raw == "keep") 1e7 else 0)
N <- as.numeric(opt$N); chains <- as.integer(opt$chains); threads <- as.integer(opt$threads)
L <- as.integer(opt$L); its <- as.integer(strsplit(opt$iterations, ",")[[1]])
stopifnot(length(its) == 2, its[2] > its[1])

repo_root <- dirname(dirname(script))
shared <- Sys.getenv("LOCKSTEP_SHARED", file.path(dirname(repo_root), "shared"))
m <- hlogit_model(hlogit_data(N, shared), opt$precision)
co <- cpu_only(threads = threads)

seconds <- vapply(its, function(n) {
  set.seed(1)
  system.time(suppressWarnings(
    mcmc(m, sampler = hmc(Lmin = L, Lmax = L, epsilon = 1e-4), warmup = 0, n_samples = n,
         chains = chains, verbose = FALSE, compute_options = co)))[["elapsed"]]
}, numeric(1))
per_iteration <- diff(seconds) / diff(its)
set.seed(1)
free <- matrix(rnorm(chains * m$n_free, 0, 0.5), chains, m$n_free)
engine <- lockstep:::ls_engine_time(lockstep:::model_engine(m), free, co, 10L) / chains

cat(sprintf("N = %g, %d chains, %d threads, %s, hmc L = %d (%d free parameters), raw draws %s\n",
            N, chains, threads, opt$precision, L, m$n_free, opt$raw))
cat(sprintf("  mcmc(): %.3f s and %.3f s for %d and %d iterations: %.1f ms per iteration\n",
            seconds[1], seconds[2], its[1], its[2], 1e3 * per_iteration))
cat(sprintf("  per chain-gradient: sampler %.2f ms, engine alone %.2f ms (%.2fx)\n",
            1e3 * per_iteration / (L * chains), 1e3 * engine,
            per_iteration / (L * chains) / engine))
