# An SPMD fit across MPI processes, as a user runs it:
#   mpirun -np 2 Rscript tests/mpi/spmd_fit.R
# (tools/check.sh runs it in the R suite, against the package R CMD check
# installed). Every rank simulates the same data, keeps its own rows
# (mpi_rows) and builds the model from them; cpu_only(mpi = TRUE) sums the
# rows' partial log densities across ranks. Checks, on every rank:
#   - the split model's log density and gradient equal the whole-data model's
#     (one process, no MPI) to 1e-12, for a regression and for a mixture;
#   - mcmc() gives bitwise the same draws on every rank, even when the ranks'
#     own R random numbers differ (seeds and initial values come from rank 0);
#   - those draws match the posterior (a conjugate-like regression) within
#     Monte Carlo error.
# Prints "spmd-counts: <passed> <failed>" on rank 0.
#
# With --gpu (where lockstep has CUDA and a GPU is visible), the ranks run on
# GPUs instead, gpu_only(mpi = TRUE): rank r on GPU r where there are two,
# both on GPU 0 where there is one (their sums then go through MPI on the
# host, as NCCL refuses two ranks on one GPU):
#   mpirun -np 2 Rscript tests/mpi/spmd_fit.R --gpu
suppressPackageStartupMessages(library(lockstep))
on_gpu <- "--gpu" %in% commandArgs(TRUE)

passed <- 0L
failed <- 0L
check <- function(ok, what) {
  ok <- isTRUE(ok)
  # every rank must agree: a check fails if it fails anywhere
  ok <- lockstep:::ls_mpi_same(as.numeric(ok)) && ok
  if (mpi_rank() == 0) cat(if (ok) "PASS" else "FAIL", what, "\n")
  if (ok) passed <<- passed + 1L else failed <<- failed + 1L
}

co <- if (on_gpu) gpu_only(backend_info()$devices$id, mpi = TRUE) else cpu_only(threads = 1, mpi = TRUE)
# the GPU's sums add in an order of their own
tolerance <- if (on_gpu) 1e-10 else 1e-12
check(mpi_size() == 2, "two ranks")
set.seed(1)
N <- 1001
x <- rnorm(N)
y <- rnorm(N, 1 + 2 * x, 0.5)
rows <- mpi_rows(N)
all_rows <- unlist(lapply(0:1, function(r) {
  first <- floor(N * r / 2)
  seq.int(first + 1, floor(N * (r + 1) / 2))
}))
check(identical(all_rows, seq_len(N)), "mpi_rows() shares out 1:N in order")

build <- function(idx) {
  alpha <- normal(0, 5)
  beta <- normal(0, 5)
  sigma <- cauchy(0, 2, truncation = c(0, Inf))
  distribution(y[idx]) <- normal(alpha + beta * x[idx], sigma)
  model(alpha, beta, sigma)
}
split <- build(rows)
whole <- build(seq_len(N))

set.seed(2)
free <- matrix(rnorm(3 * split$n_free, 0, 0.5), 3)
mld <- lockstep:::model_log_density
a <- mld(split, free, compute_options = co)
b <- mld(whole, free, compute_options = cpu_only(threads = 1))
rel <- function(u, v) max(abs(u - v) / pmax(1, abs(u), abs(v)))
check(rel(a$log_density, b$log_density) < tolerance, "split log density equals the whole-data one")
check(rel(a$gradient, b$gradient) < tolerance, "split gradient equals the whole-data one")
mine <- mld(split, free, compute_options = cpu_only(threads = 1))
check(rel(mine$log_density, b$log_density) > 1e-6, "without mpi a rank sees only its own rows")

# mpi_stats(): each gradient exchanges the same payload, on every rank; the
# log density alone (3 chains' values, no adjoints) exchanges less. (On GPUs
# the sums may go through NCCL, which the count does not see.)
if (!on_gpu) {
  mpi_stats(reset = TRUE)
  mld(split, free, compute_options = co)
  one <- mpi_stats(reset = TRUE)
  mld(split, free, compute_options = co)
  two <- mpi_stats(reset = TRUE)
  mld(split, free, gradient = FALSE, compute_options = co)
  value_only <- mpi_stats()
  same <- lockstep:::ls_mpi_same(c(one$calls, one$bytes))  # (collective: every rank calls)
  check(one$calls > 0 && one$bytes >= 8 * 3 && identical(one, two) && same,
        sprintf("mpi_stats(): %g calls and %g bytes per gradient of 3 chains, on every rank",
                one$calls, one$bytes))
  check(value_only$bytes < one$bytes && value_only$bytes >= 8 * 3,
        sprintf("mpi_stats(): %g bytes for the log density alone", value_only$bytes))
}
check(inherits(try(mpi_stats(reset = NA), silent = TRUE), "try-error"),
      "mpi_stats() refuses a reset that is not TRUE or FALSE")

# a mixture's likelihood (per-element log densities, logpdf) splits by rows too
build_mixture <- function(idx) {
  mu1 <- normal(-1, 2)
  mu2 <- normal(2, 2)
  s <- normal(0, 2, truncation = c(0, Inf))
  w <- uniform(0, 1)
  distribution(y[idx]) <- mixture(normal(mu1, s), normal(mu2, s), weights = c(w, 1 - w))
  model(mu1, mu2, s, w)
}
mix_split <- build_mixture(rows)
mix_whole <- build_mixture(seq_len(N))
free_mix <- matrix(rnorm(2 * mix_split$n_free, 0, 0.5), 2)
a <- mld(mix_split, free_mix, compute_options = co)
b <- mld(mix_whole, free_mix, compute_options = cpu_only(threads = 1))
check(rel(a$log_density, b$log_density) < tolerance && rel(a$gradient, b$gradient) < tolerance,
      "a mixture's split log density and gradient equal the whole-data ones")

# different R random numbers on each rank: the run must not depend on them
set.seed(100 + mpi_rank())
draws <- mcmc(split, n_samples = 500, warmup = 500, chains = 2, verbose = FALSE,
              compute_options = co)
values <- as.numeric(as.matrix(draws))
check(lockstep:::ls_mpi_same(values), "every rank holds bitwise the same draws")

fit <- stats::lm(y ~ x)
est <- stats::coef(fit)
se <- sqrt(diag(stats::vcov(fit)))
post <- as.matrix(draws)
ess <- coda::effectiveSize(draws)
z_alpha <- (mean(post[, "alpha"]) - est[[1]]) / (se[[1]] / sqrt(min(ess[["alpha"]], 1000)))
z_beta <- (mean(post[, "beta"]) - est[[2]]) / (se[[2]] / sqrt(min(ess[["beta"]], 1000)))
check(abs(z_alpha) < 5 && abs(z_beta) < 5, sprintf(
  "posterior means match the regression (z = %.2f, %.2f)", z_alpha, z_beta))
check(abs(mean(post[, "sigma"]) - 0.5) < 0.05, "posterior of sigma near 0.5")

# A hierarchical model whose ranks own their groups (issue 35): rows split by
# whole groups (mpi_rows(groups = )), each rank holds the global parameters
# and only its groups' z; its draws, made whole, equal one process's with the
# same seed, and every rank returns every draw.
if (!on_gpu) {
  G <- 300
  grp <- rep(seq_len(G), times = rep(c(3, 6, 10), length.out = G))
  Nh <- length(grp)
  set.seed(11)
  xh <- rnorm(Nh)
  yh <- rnorm(Nh, 0.5 + rnorm(G, 0, 0.7)[grp] + 1.5 * xh, 1)
  rows_h <- mpi_rows(Nh, groups = grp)
  check(length(unique(grp[rows_h])) == length(attr(rows_h, "groups")) &&
          all(diff(grp[rows_h]) >= 0), "mpi_rows(groups = ) gives whole groups")
  build_h <- function(idx, trace_alpha = TRUE) {
    a <- normal(0, 5)
    b <- normal(0, 5)
    sd_g <- normal(0, 1, truncation = c(0, Inf))
    z <- normal(0, 1, dim = G)
    alpha <- z * sd_g
    distribution(yh[idx]) <- normal(a + alpha[grp[idx]] + b * xh[idx], 1)
    if (trace_alpha) model(a, b, sd_g, alpha) else model(a, b, sd_g)
  }
  split_h <- build_h(rows_h)
  whole_h <- build_h(seq_len(Nh))
  opts <- lockstep:::check_compute_options(co)
  init_h <- lockstep:::same_on_every_rank(matrix(rnorm(2 * split_h$n_free, 0, 0.5), 2), opts)
  handle <- lockstep:::ls_sampler_new(lockstep:::model_engine(split_h), init_h, "nuts",
                                      nuts()$parameters, 1, 2, opts)
  owned <- attr(handle, "owned_groups")
  check(length(owned) == 2 && all(grp[rows_h] >= owned[1] & grp[rows_h] <= owned[2]) &&
          (mpi_rank() != 0 || owned[1] == 1) && (mpi_rank() != 1 || owned[2] == G),
        sprintf("rank %d owns groups %s, those of its rows", mpi_rank(),
                paste(owned, collapse = " to ")))
  # (a diagonal metric in both: one process would choose a dense one for a
  # small model, which ranks never do)
  set.seed(21)
  d_split <- mcmc(split_h, sampler = nuts(metric = "diagonal"), warmup = 10, n_samples = 10,
                  chains = 2, verbose = FALSE, compute_options = co)
  set.seed(21)
  d_whole <- mcmc(whole_h, sampler = nuts(metric = "diagonal"), warmup = 10, n_samples = 10,
                  chains = 2, verbose = FALSE, compute_options = cpu_only(threads = 1))
  a_split <- as.matrix(d_split)
  a_whole <- as.matrix(d_whole)
  # rank 0 returns every traced value; the others, those that read no
  # group's local parameters, and no raw draws (each rank sent its own
  # groups' draws to rank 0 alone)
  globals <- c("a", "b", "sd_g")
  raw_split <- attr(d_split, "model_info")$raw_draws
  check(if (mpi_rank() == 0) {
    identical(dim(a_split), dim(a_whole)) && identical(colnames(a_split), colnames(a_whole)) &&
      !is.null(raw_split)
  } else {
    identical(colnames(a_split), globals) && is.null(raw_split)
  }, "rank 0 returns every group's draws, the other ranks the global values'")
  check(rel(a_split, a_whole[, colnames(a_split)]) < 1e-8, sprintf(
    "owned groups: draws equal one process's (worst relative difference %.2g)",
    rel(a_split, a_whole[, colnames(a_split)])))
  if (mpi_rank() == 0) {
    raw_whole <- attr(d_whole, "model_info")$raw_draws
    check(rel(as.matrix(raw_split), as.matrix(raw_whole)) < 1e-8,
          "owned groups: rank 0's raw draws equal one process's")
  } else {
    check(TRUE, "owned groups: rank 0's raw draws equal one process's")
  }
  check(lockstep:::ls_mpi_same(as.numeric(a_split[, globals])),
        "owned groups: the global values' draws are bitwise the same on every rank")
  # extra_samples() goes on, every rank the same way
  more <- extra_samples(d_split, n_samples = 4, verbose = FALSE, compute_options = co)
  check(coda::niter(more) == 14 && identical(colnames(as.matrix(more)), colnames(a_split)) &&
          lockstep:::ls_mpi_same(as.numeric(as.matrix(more)[, globals])),
        "owned groups: extra_samples() goes on with the same columns on each rank")
  # a dense metric shards too: over the global parameters, the same factor on
  # every rank, each rank's groups on a diagonal
  set.seed(22)
  d_dense <- mcmc(split_h, sampler = nuts(metric = "dense"), warmup = 40, n_samples = 10,
                  chains = 2, verbose = FALSE, compute_options = co)
  run_dense <- attr(d_dense, "model_info")$run
  factor <- run_dense$metric_factor
  check(!is.null(attr(run_dense$handle, "owned_groups")) &&
          length(attr(factor, "coordinates")) == nrow(factor) &&
          length(run_dense$diag_sd) == split_h$n_free &&
          lockstep:::ls_mpi_same(as.numeric(factor)) &&
          lockstep:::ls_mpi_same(as.numeric(as.matrix(d_dense)[, globals])),
        "owned groups, metric = \"dense\": a factor over the globals, the same on every rank")
  more_dense <- extra_samples(d_dense, n_samples = 3, verbose = FALSE, compute_options = co)
  check(coda::niter(more_dense) == 13, "owned groups, metric = \"dense\": extra_samples() goes on")
  # tracing only global values, without the raw draws: no draw is made whole
  # but the last of each call, and the draws are the same
  old_mb <- options(lockstep.max_raw_draws_mb = 0)
  set.seed(21)
  g_split <- as.matrix(mcmc(build_h(rows_h, FALSE), sampler = nuts(metric = "diagonal"),
                            warmup = 10, n_samples = 10, chains = 2, verbose = FALSE,
                            compute_options = co))
  options(old_mb)
  check(identical(colnames(g_split), c("a", "b", "sd_g")) &&
          rel(g_split, a_whole[, colnames(g_split)]) < 1e-7,
        "owned groups, global values traced: draws equal one process's")
  # opt() with a first-order method shards too; its optimum is made whole on
  # every rank
  set.seed(23)
  fit_split <- opt(split_h, optimiser = adam(), max_iterations = 50, compute_options = co)
  set.seed(23)
  fit_whole <- opt(whole_h, optimiser = adam(), max_iterations = 50,
                   compute_options = cpu_only(threads = 1))
  gap <- rel(unlist(fit_split$par), unlist(fit_whole$par))
  check(gap < 1e-7 && lockstep:::ls_mpi_same(unlist(fit_split$par)), sprintf(
    "owned groups, opt(adam()): the optimum is one process's on every rank (%.2g)", gap))
  # and so does the default, bfgs()
  set.seed(24)
  fit_split <- opt(split_h, max_iterations = 40, compute_options = co)
  set.seed(24)
  fit_whole <- opt(whole_h, max_iterations = 40, compute_options = cpu_only(threads = 1))
  gap <- rel(unlist(fit_split$par), unlist(fit_whole$par))
  check(gap < 1e-7 && lockstep:::ls_mpi_same(unlist(fit_split$par)) &&
          identical(fit_split$iterations, fit_whole$iterations), sprintf(
    "owned groups, opt(bfgs()): the optimum and iterations are one process's on every rank (%.2g)",
    gap))
  # svi() shards too: each rank fits its own groups' guide parameters
  set.seed(25)
  v_split <- svi(split_h, n_iterations = 200, tolerance = 0, n_draws = 40, verbose = FALSE,
                 compute_options = co)
  set.seed(25)
  v_whole <- svi(whole_h, n_iterations = 200, tolerance = 0, n_draws = 40, verbose = FALSE,
                 compute_options = cpu_only(threads = 1))
  gap <- max(rel(v_split$loss, v_whole$loss), rel(v_split$guide$mean, v_whole$guide$mean),
             rel(v_split$guide$sd, v_whole$guide$sd))
  check(!is.null(attr(v_split$handle, "owned_groups")) && gap < 1e-8 &&
          lockstep:::ls_mpi_same(v_split$guide$mean), sprintf(
    "owned groups, svi(): the losses and guide are one process's on every rank (%.2g)", gap))
  set.seed(26)
  v_split <- svi(split_h, guide = "low_rank", rank = 3, n_iterations = 100, tolerance = 0,
                 n_draws = 40, verbose = FALSE, compute_options = co)
  set.seed(26)
  v_whole <- svi(whole_h, guide = "low_rank", rank = 3, n_iterations = 100, tolerance = 0,
                 n_draws = 40, verbose = FALSE, compute_options = cpu_only(threads = 1))
  gap <- max(rel(v_split$loss, v_whole$loss), rel(v_split$guide$factor, v_whole$guide$factor),
             rel(v_split$guide$diagonal, v_whole$guide$diagonal))
  check(gap < 1e-8 && all(dim(v_split$guide$factor) == c(split_h$n_free, 3)), sprintf(
    "owned groups, svi(guide = \"low_rank\"): the losses and guide are one process's (%.2g)", gap))
  # minibatches: batch_size counts every rank's rows, each rank draws its
  # own tiles, and with the guide held still (a learning rate of 0) the
  # losses average to the whole data's (the same particles: the same seed)
  refused <- tryCatch(svi(split_h, batch_size = Nh + 1, compute_options = co),
                      error = conditionMessage)
  check(grepl(sprintf("at most the likelihood's %d rows", Nh), refused),
        "owned groups, svi(batch_size = ): the rows counted are every rank's")
  held <- function(h, batch_size, options) {
    set.seed(27)
    suppressWarnings(svi(h, batch_size = batch_size, optimiser = adam(learning_rate = 0),
                         n_iterations = 600, tolerance = 0, n_draws = 4, verbose = FALSE,
                         compute_options = options))
  }
  b_split <- held(split_h, round(Nh / 5), co)
  b_whole <- held(whole_h, NULL, cpu_only(threads = 1))
  difference <- b_split$loss - b_whole$loss
  se <- stats::sd(difference) / sqrt(length(difference))
  check(stats::sd(difference) > 0 && abs(mean(difference)) < 4.5 * se &&
          lockstep:::ls_mpi_same(b_split$loss), sprintf(
    "owned groups, svi(batch_size = ): the minibatches' losses average to the whole data's (%.2g, se %.2g)",
    mean(difference), se))
  # rwmh() and slice(), which step on the host, shard too: each coordinate's
  # random numbers are drawn by its index in the whole model
  for (s in list(rwmh(), rwmh(proposal = "uniform"), slice())) {
    set.seed(22)
    h_split <- as.matrix(mcmc(split_h, sampler = s, warmup = 40, n_samples = 10, chains = 2,
                              verbose = FALSE, compute_options = co))
    set.seed(22)
    h_whole <- as.matrix(mcmc(whole_h, sampler = s, warmup = 40, n_samples = 10, chains = 2,
                              verbose = FALSE, compute_options = cpu_only(threads = 1)))
    gap <- rel(h_split, h_whole[, colnames(h_split)])
    moved <- nrow(unique(h_whole)) > 2  # (a random walk in 300 dimensions accepts rarely)
    check(gap < 1e-7 && moved, sprintf(
      "owned groups, %s%s: draws equal one process's (worst relative difference %.2g)",
      s$name, if (is.null(s$parameters$proposal)) "" else paste0(", ", s$parameters$proposal),
      gap))
  }
  # what crosses: per gradient the globals' and a few sums per chain; with
  # nothing local traced, and the call asked to make them whole, the whole
  # state twice a call (the last draw, from which a run continues, and the
  # metric: each rank's own coordinates to rank 0, then rank 0's broadcast);
  # summing whole gradients would send at least n_free doubles per chain and
  # gradient (the same overhead each call: the difference between a long
  # call and a short one is the gradients' alone)
  sent_by <- function(n, whole = TRUE) {
    mpi_stats(reset = TRUE)
    ran <- lockstep:::ls_sampler_run(handle, n, FALSE, 1L, 0L, integer(), FALSE, whole)
    leapfrogs <- matrix(ran$diagnostics$n_leapfrog__, ncol = 2, byrow = TRUE)
    c(bytes = mpi_stats()$bytes, gradients = sum(apply(leapfrogs, 1, max)),
      free_rows = nrow(ran$free), sd_null = is.null(ran$diag_sd))
  }
  short <- sent_by(3L)
  long <- sent_by(13L)
  gradients <- long[["gradients"]] - short[["gradients"]]
  whole_state <- 2 * split_h$n_free * 8
  per_gradient <- (long[["bytes"]] - short[["bytes"]]) / gradients
  check(gradients > 0 && per_gradient > 0 && per_gradient < whole_state / 4, sprintf(
    "owned groups: %.0f bytes a gradient of 2 chains, %g gradients (whole gradients: at least %g)",
    per_gradient, gradients, whole_state))
  # a call not asked to make them whole (mcmc()'s calls but the last and a
  # checkpoint's) sends what its gradients do and no more, and returns
  # neither the state nor diag_sd
  lean <- sent_by(3L, whole = FALSE)
  check(lean[["gradients"]] > 0 && lean[["bytes"]] <= 2 * per_gradient * lean[["gradients"]] &&
          lean[["free_rows"]] == 0 && lean[["sd_null"]] == 1, sprintf(
    "owned groups: a call not made whole sends %.0f bytes for %g gradients (%.0f a gradient; made whole: %.0f more a call)",
    lean[["bytes"]], lean[["gradients"]], lean[["bytes"]] / lean[["gradients"]],
    short[["bytes"]] - short[["gradients"]] * per_gradient))
  # mpi_stats(draws =): what a run of mcmc() sent, a gradient and an iteration
  # (its once-a-run exchanges, the start and the whole state at the end,
  # spread over its gradients)
  set.seed(23)
  run_draws <- mcmc(split_h, warmup = 20, n_samples = 10, chains = 2, verbose = FALSE,
                    compute_options = co)
  sent <- mpi_stats(draws = run_draws)
  once <- 4 * whole_state  # at most: the start, the metric's start, the end's state and diag_sd
  check(sent$iterations == 30 && sent$gradients >= 30 && sent$bytes > 0 &&
          sent$bytes <= once + 2 * per_gradient * sent$gradients &&
          lockstep:::ls_mpi_same(sent$gradients) &&
          isTRUE(all.equal(sent$bytes_per_gradient, sent$bytes / sent$gradients)), sprintf(
    "mpi_stats(draws =): a run's %g bytes over %g gradients (%.0f a gradient) and %g iterations",
    sent$bytes, sent$gradients, sent$bytes_per_gradient, sent$iterations))
}

# Ranks whose models differ get a clear error on every rank, not a hang;
# rows split without regard to groups keep every parameter on every rank,
# with a warning that says how to split them.
if (!on_gpu) {
  w <- normal(0, 1, dim = if (mpi_rank() == 0) 2 else 3)
  distribution(y[rows]) <- normal(sum(w) + x[rows], 1)
  odd <- model(w)
  res <- try(mcmc(odd, warmup = 5, n_samples = 5, chains = 1, verbose = FALSE,
                  compute_options = co), silent = TRUE)
  check(inherits(res, "try-error") && grepl("models differ", res),
        "ranks with different models: an error on every rank")
  res <- try(opt(odd, compute_options = co), silent = TRUE)
  check(inherits(res, "try-error") && grepl("models differ", res),
        "opt() on ranks with different models: an error on every rank")
  # (the rows as mpi_rows(Nh) would split them, moved off a group boundary:
  # one group's rows on both ranks)
  plain_rows <- if (mpi_rank() == 0) seq_len(951) else seq.int(952, Nh)
  check(length(intersect(grp[plain_rows], grp[setdiff(seq_len(Nh), plain_rows)])) == 1,
        "a split that shares a group")
  shared <- build_h(plain_rows)
  said <- tryCatch({
    mcmc(shared, sampler = nuts(metric = "diagonal"), warmup = 5, n_samples = 5, chains = 2,
         verbose = FALSE, compute_options = co)
    ""
  }, error = function(e) conditionMessage(e))
  check(grepl("share groups", said) && grepl("mpi_rows(n, groups = )", said, fixed = TRUE),
        "rows that share groups: an error on every rank naming mpi_rows(n, groups = )")
  said <- tryCatch({
    opt(shared, optimiser = adam(), max_iterations = 5, compute_options = co)
    ""
  }, error = function(e) conditionMessage(e))
  check(grepl("share groups", said), "opt() on rows that share groups: an error on every rank")
}

if (mpi_rank() == 0) cat(sprintf("spmd-counts: %d %d\n", passed, failed))
