#' Variational inference
#'
#' Fits an approximation to a model's posterior by stochastic variational
#' inference: a *guide*, a distribution over the model's free (unconstrained)
#' parameters, is moved by a first-order optimiser to maximise a lower bound
#' on the log evidence, estimated at each iteration from `particles` draws of
#' the guide. The particles are the engine's chains: every iteration
#' evaluates all of them in one call, as one step of [mcmc()]'s chains does.
#' Constrained variables go through the model's own transforms (with their
#' Jacobians), so the approximation's draws respect every support. Where
#' [mcmc()] is too slow for a model, `svi()` gives an approximate answer in a
#' fraction of the time, and says how far to trust it (the Pareto k
#' diagnostic, below); its fit can start [mcmc()].
#'
#' @param model a `greta_model` created by [model()]
#' @param guide the approximation: `"mean_field"` (the default; independent
#'   normals over the free parameters, NumPyro's `AutoNormal`, Stan's ADVI
#'   `meanfield`), `"full_rank"` (a multivariate normal, which learns the
#'   posterior's correlations: NumPyro's `AutoMultivariateNormal`, ADVI's
#'   `fullrank`; for models of up to 1,000 free parameters, as its cost
#'   grows with their square) or `"delta"` (a point mass: the posterior mode
#'   of the free parameters, Jacobians included, NumPyro's `AutoDelta`), or
#'   `"low_rank"` (a normal whose covariance is a rank-`rank` matrix plus a
#'   diagonal, NumPyro's `AutoLowRankMultivariateNormal`: the posterior's
#'   main correlations at a cost that grows with the free parameters times
#'   the rank, for models of any size)
#' @param rank a low-rank guide's rank: by default the square root of the
#'   number of free parameters, rounded (NumPyro's), but at most 10, so that
#'   a model of millions of parameters keeps a guide of 12 values per
#'   parameter
#' @param particles the number of draws of the guide per iteration (at least
#'   1; a point mass takes 1)
#' @param alpha the objective: `1` (the default) the evidence lower bound
#'   (ELBO); otherwise Renyi's alpha-divergence bound, which `alpha = 0`
#'   makes the importance-weighted bound (NumPyro's `RenyiELBO(alpha = 0)`):
#'   tighter than the ELBO, and more so with more particles, so that the
#'   guide covers more of the posterior. At least 0: below it the bound is
#'   an upper bound on the log evidence
#' @param optimiser a first-order optimiser, such as [adam()] (the default,
#'   with a learning rate of 0.01) or [rms_prop()]: see [opt()]
#' @param batch_size minibatches: the rows of the likelihood evaluated at
#'   each iteration (`NULL`, the default: all of them). The rows are drawn as
#'   random blocks of neighbouring rows (the engine's tiles, made small
#'   enough that a batch holds about 32 of them), afresh at each iteration,
#'   and their log density is scaled by the rows over the rows drawn, so
#'   that the bound and its gradient are unbiased estimates of the whole
#'   data's; the priors are evaluated in full. Each iteration then costs
#'   about `batch_size` rows' work instead of all of them; the estimates are
#'   noisier, so a fit needs more iterations and a smaller learning rate.
#'   A block holds at least 16 rows (or `tile_rows` of [cpu_only()]), the
#'   smallest `batch_size`.
#'   For a model with several likelihoods, `batch_size` counts the rows of
#'   the largest, and the others are subsampled in the same proportion.
#'   Across MPI processes each draws from its own rows, and `batch_size`
#'   counts the rows of all of them. With `alpha != 1` the estimate of
#'   Renyi's bound is biased (a log of a mean). On a GPU, minibatches run in
#'   the tile kernel (`gpu_only(tile_kernel = TRUE)`), for likelihoods it
#'   holds.
#' @param n_iterations the most iterations
#' @param decay_rate,decay_steps the learning rate decays exponentially, as
#'   seed 003's `optax.exponential_decay`: at iteration t it is the
#'   optimiser's times `decay_rate^(t / decay_steps)`; `decay_rate = 1` (the
#'   default) keeps it constant
#' @param tolerance stop when the ELBO's relative change between windows of
#'   100 iterations, averaged over (or the median of) the last few windows,
#'   falls below it (Stan ADVI's `tol_rel_obj`, whose default this is); `0`
#'   runs all `n_iterations`
#' @param n_draws the number of draws of the fitted guide returned, as 4
#'   chains of `n_draws / 4`
#' @param initial_values an [initials()] object: the guide's first mean (the
#'   rest drawn as [mcmc()] draws them); its first standard deviations are
#'   0.1 (NumPyro's)
#' @param verbose whether to show a progress bar with the running average of
#'   the loss (minus the bound)
#' @param pb_update how many iterations between updates of the progress bar
#'   (and checks for convergence and interrupts)
#' @param checkpoint,checkpoint_every as [mcmc()]'s: a directory to which
#'   the fit writes checkpoints (its iteration, guide, optimiser's state and
#'   losses), every `checkpoint_every` iterations or, by default, as often as
#'   costs at most 1% of the fit, and at its end; [resume()] goes on from the
#'   last one and returns the fit the uninterrupted run would have returned
#' @param compute_options where the model runs: [cpu_only()] or [gpu_only()];
#'   across MPI processes whose rows are whole groups ([mpi]), each process
#'   holds and fits its own groups' guide parameters (mean-field, low-rank
#'   and point mass guides), and the fit is one process's up to the order of
#'   sums; on the GPUs of one process, each GPU evaluates its own groups'
#'   slice of the particles
#' @details Each iteration draws `particles` points z = mu + sd * eps of the
#'   mean-field guide (eps standard normal, from lockstep's counter-based
#'   generator seeded by R's: [set.seed()] repeats a run), evaluates the
#'   model's log density and gradient at all of them in one engine call, and
#'   moves mu and log(sd) along the bound's reparameterised gradient.
#'
#'   On a GPU, a mean-field guide, a point mass or a low-rank guide lives in
#'   the GPU's memory with the model, whichever first-order optimiser fits
#'   it: its parameters, the optimiser's state, the particles and their
#'   gradients stay there, and each iteration moves a few numbers per
#'   particle (and, for a low-rank guide, per rank) between the GPU and R's
#'   process. The full-rank guide (for small models) works in the host's
#'   memory, the particles copied to the GPU and their gradients back at
#'   each iteration.
#'
#'   An interrupt (Esc, Ctrl-C) stops the fit and returns it as it is. An
#'   iteration whose bound is not finite leaves the guide where it was; 20 of
#'   them in a row stop the fit (the optimiser has diverged), which returns
#'   the guide where the bound was last finite (before the step that left
#'   it) with a warning, and `diverged = TRUE`.
#'
#'   The Pareto k diagnostic (Yao et al. 2018, "Yes, but did it work?") fits
#'   a generalised Pareto distribution to the largest importance ratios
#'   p(z) / q(z) of the returned draws (with the \pkg{loo} package, where it
#'   is installed): below 0.5 the approximation is good; above 0.7 it is poor
#'   (a funnel under a mean-field guide, say), and `svi()` warns. Its tail
#'   needs at least 5 ratios, so it needs at least 21 draws (`n_draws` of 24,
#'   the draws coming as 4 chains); with fewer (or a point mass, whose ratios
#'   are not defined) it is `NA`.
#' @return a `lockstep_svi` object: a list of `draws` (a `greta_mcmc_list`
#'   of draws of the model's targets under the guide, which [summary()],
#'   [calculate()], [log_lik()], coda, posterior and bayesplot take), `par`
#'   (the targets at the guide's mean, as [opt()] gives them), `guide` (its
#'   `type`, and its `mean` and `sd` over the free parameters and, for a
#'   full-rank guide, its `scale`: the guide is normal(`mean`, `scale %*%
#'   t(scale)`); for a low-rank one, its `factor` and `diagonal`: normal(`mean`,
#'   `factor %*% t(factor) + diag(diagonal^2)`); and `on_device`, whether it
#'   lived in a GPU's memory), `loss` (each
#'   iteration's; with `batch_size`, each an estimate from its minibatch),
#'   `elbo` (the bound averaged over the last 100 iterations), `k_hat`
#'   (from the whole data), `iterations`, `converged`, `interrupted`,
#'   `diverged` and `batch_size`.
#'   Given to [mcmc()] as `initial_values`, each chain starts from a draw of
#'   the guide.
#' @examples
#' y <- as_data(c(-0.4, 1.2, 0.9, 2.1, 0.3))
#' mu <- normal(0, 10)
#' distribution(y) <- normal(mu, 1)
#' m <- model(mu)
#' set.seed(1)
#' # a learning rate that decays (tenfold each 1000 iterations) lets the
#' # guide settle: the iterations' noise shrinks with it
#' fit <- svi(m, n_iterations = 3000, decay_rate = 0.1, decay_steps = 1000, tolerance = 0,
#'            verbose = FALSE)
#' fit
#' fit$guide$mean  # the exact posterior: normal(mean 0.818, sd 0.447)
#' fit$guide$sd
#' summary(fit$draws)
#' draws <- mcmc(m, initial_values = fit, warmup = 200, n_samples = 200, verbose = FALSE)
#' @export
svi <- function(model, guide = c("mean_field", "full_rank", "low_rank", "delta"), rank = NULL,
                particles = 4, alpha = 1,
                optimiser = adam(learning_rate = 0.01), batch_size = NULL, n_iterations = 10000,
                decay_rate = 1, decay_steps = 1000, tolerance = 0.01, n_draws = 1000,
                initial_values = initials(), verbose = TRUE, pb_update = 100,
                compute_options = cpu_only(), checkpoint = NULL, checkpoint_every = NULL) {
  particles_given <- !missing(particles)
  if (!inherits(model, "greta_model")) {
    stop("`model` must be a greta_model created by model()", call. = FALSE)
  }
  guide <- check_choice(guide, c("mean_field", "full_rank", "low_rank", "delta"), "guide")
  if (!is.null(rank) && guide != "low_rank") {
    stop("`rank` is the low-rank guide's: give guide = \"low_rank\" with it, or leave it NULL",
         call. = FALSE)
  }
  rank <- if (is.null(rank)) max(1L, min(10L, as.integer(round(sqrt(model$n_free))))) else
    check_count(rank, "rank", minimum = 1)
  if (guide == "low_rank" && rank > model$n_free) {
    stop("`rank` must be at most the model's ", model$n_free, " free parameters", call. = FALSE)
  }
  particles <- check_count(particles, "particles", minimum = 1)
  if (guide == "delta" && particles != 1) {
    if (particles_given) stop("a point mass guide takes `particles = 1`", call. = FALSE)
    particles <- 1L
  }
  check_number(alpha, "alpha")
  if (alpha < 0) {
    stop("`alpha` must be at least 0 (1 the ELBO, 0 the importance-weighted bound): below 0 ",
         "Renyi's bound is above the log evidence, and maximising it fits no posterior",
         call. = FALSE)
  }
  if (guide == "delta" && alpha != 1) {
    stop("a point mass guide has no bound but the ELBO: leave `alpha` at 1", call. = FALSE)
  }
  if (!inherits(optimiser, "optimiser") || optimiser$name %in% c("bfgs", "nelder_mead")) {
    stop("`optimiser` must be a first-order optimiser such as adam() or rms_prop()",
         call. = FALSE)
  }
  n_iterations <- check_count(n_iterations, "n_iterations", minimum = 1, truncate = TRUE)
  check_number(decay_rate, "decay_rate", positive = TRUE)
  check_number(decay_steps, "decay_steps", positive = TRUE)
  check_number(tolerance, "tolerance", minimum = 0)
  n_draws <- check_count(n_draws, "n_draws", minimum = 4)
  pb_update <- check_count(pb_update, "pb_update", minimum = 1)
  if (!is.logical(verbose) || length(verbose) != 1 || is.na(verbose)) {
    stop("`verbose` must be TRUE or FALSE", call. = FALSE)
  }
  options <- check_compute_options(compute_options)
  checkpoint <- check_checkpoint(checkpoint, checkpoint_every, options)
  check_ranks_agree(model, options)
  engine <- model_engine(model)
  fraction <- batch_fraction(batch_size, engine, options)
  init <- initial_free_state(model, initial_values, 1, options, parent.frame(), "guide")
  seeds <- same_on_every_rank(floor(stats::runif(2) * 2^32), options)
  settings <- list(guide = guide, rank = rank, particles = particles, alpha = alpha,
                   optimiser = optimiser, decay_rate = decay_rate, decay_steps = decay_steps,
                   fraction = fraction, batch_size = batch_size, n_iterations = n_iterations,
                   tolerance = tolerance, n_draws = n_draws, init = init[1, ], seeds = seeds)
  handle <- svi_handle(engine, settings, options)
  writer <- if (!is.null(checkpoint)) {
    # (R's generator as it is now: the guide's draws after the fit use it,
    # and a resumed fit starts them from here too)
    checkpoint_open(checkpoint, list(kind = "svi",
                                     lockstep_version = as.character(utils::packageVersion("lockstep")),
                                     identity = model_identity(model), settings = settings,
                                     options = options, checkpoint_every = checkpoint$every,
                                     random_seed = get0(".Random.seed", globalenv())),
                    options)
  }
  run <- svi_iterations(handle, n_iterations, pb_update, tolerance, verbose && mpi_rank() == 0,
                        checkpoint = writer)
  svi_fit(model, handle, run, settings, options)
}

# A fit's engine handle, made from its settings (svi()'s, checked).
svi_handle <- function(engine, settings, options) {
  with(settings, ls_svi_new(engine, init, particles, guide, rank, alpha, optimiser$name,
                            optimiser$parameters, decay_rate, decay_steps, 0.1, seeds[1],
                            seeds[2], fraction, options))
}

# The lockstep_svi object of a fit whose iterations are done (`run`, from
# svi_iterations()): the guide, its draws and their Pareto k.
svi_fit <- function(model, handle, run, settings, options) {
  guide <- settings$guide
  alpha <- settings$alpha
  particles <- settings$particles
  fraction <- settings$fraction
  batch_size <- settings$batch_size
  n_draws <- settings$n_draws
  if (run$diverged) ls_svi_restore(handle)  # where the bound was last finite
  fitted <- ls_svi_guide(handle, guide == "full_rank")
  fit <- list(guide = list(type = guide, mean = fitted$mean, sd = fitted$sd,
                           scale = fitted$scale, factor = fitted$factor,
                           diagonal = fitted$diagonal, on_device = fitted$on_device),
              loss = run$loss, iterations = length(run$loss), converged = run$converged,
              interrupted = run$interrupted, diverged = run$diverged, particles = particles,
              alpha = alpha,
              batch_size = if (fraction < 1) batch_size,
              model = model, handle = handle)
  finite <- run$loss[is.finite(run$loss)]
  fit$elbo <- -mean(utils::tail(finite, 100))
  fit$par <- opt_par(model, fit$guide$mean, options)
  approx <- guide_draws(model, fit$guide, n_draws, options)
  fit$draws <- approx$draws
  fit$k_hat <- pareto_k_hat(approx$log_ratios)
  class(fit) <- "lockstep_svi"
  if (run$diverged) {
    warning("svi() stopped at iteration ", length(run$loss), ": the bound was not finite for 20 ",
            "iterations in a row (the optimiser diverged?); returning the guide where it was ",
            "last finite. ",
            "Try a smaller learning rate", call. = FALSE)
  }
  if (!is.na(fit$k_hat) && fit$k_hat > 0.7) {
    warning(sprintf(paste0("the Pareto k diagnostic is %.2f (above 0.7): the approximation is ",
                           "poor where the posterior has most of its mass; use mcmc()"),
                    fit$k_hat), call. = FALSE)
  }
  fit
}

# The fraction of the likelihood's rows a minibatch of batch_size rows is
# (1: all of them, no minibatches), checked against the model's rows (all
# processes' across MPI ranks).
batch_fraction <- function(batch_size, engine, options) {
  if (is.null(batch_size)) return(1)
  batch_size <- check_count(batch_size, "batch_size", minimum = 1)
  if (identical(options$backend, "cuda") && !isTRUE(options$tile_kernel)) {
    stop("`batch_size` on a GPU runs in its tile kernel: use ",
         "compute_options = gpu_only(tile_kernel = TRUE), or cpu_only()", call. = FALSE)
  }
  rows <- ls_svi_rows(engine, options)
  if (length(rows) == 0) {
    stop("`batch_size` needs a likelihood over rows of data (distribution(y) <- ... with one ",
         "row of y per observation, its parameters row by row or shared); this model has ",
         "none: leave `batch_size` NULL", call. = FALSE)
  }
  if (batch_size > max(rows)) {
    stop("`batch_size` must be at most the likelihood's ", max(rows), " rows, not ",
         batch_size, call. = FALSE)
  }
  # the smallest block of rows drawn: a tile of at least 16 rows
  # (ls_svi_new), or of the tile_rows asked for
  smallest <- if (isTRUE(options$tile_rows > 0)) options$tile_rows else 16
  if (batch_size < smallest) {
    stop("`batch_size` must be at least ", smallest, " rows (minibatches are drawn as blocks ",
         "of at least ", smallest, " neighbouring rows), not ", batch_size, call. = FALSE)
  }
  batch_size / max(rows)
}

# Steps a fit in chunks of pb_update iterations: its progress bar (with the
# loss's running average, as NumPyro shows it), convergence (Stan ADVI's
# rule on the ELBO's relative changes between windows of 100 iterations),
# 20 non-finite iterations in a row (divergence) and interrupts.
# With `checkpoint` (checkpoint_open()), checkpoints are written as they
# fall due and at the end; `resume_at`: the loop's state from a checkpoint
# (svi_loop_state()), where a resumed fit goes on from.
svi_iterations <- function(handle, n_iterations, pb_update, tolerance, verbose,
                           checkpoint = NULL, resume_at = NULL) {
  loss <- numeric(0)
  window <- 100
  changes <- numeric(0)
  keep_changes <- max(2, floor(0.1 * n_iterations / window))
  previous <- NA
  windows <- 0
  converged <- diverged <- interrupted <- FALSE
  if (!is.null(resume_at)) {
    loss <- resume_at$loss
    changes <- resume_at$changes
    previous <- resume_at$previous
    windows <- resume_at$windows
    converged <- resume_at$converged
    diverged <- resume_at$diverged
  }
  bar <- progress_bar("svi", n_iterations, n_iterations, 1, verbose, length(loss))
  loop_state <- function() {
    list(loss = loss, changes = changes, previous = previous, windows = windows,
         converged = converged, diverged = diverged)
  }
  note <- function() {
    recent <- utils::tail(loss[is.finite(loss)], window)
    if (length(recent)) sprintf(" | avg. loss %s", format(mean(recent), digits = 5)) else ""
  }
  tryCatch({
    while (length(loss) < n_iterations && !converged && !diverged) {
      n <- min(pb_update, n_iterations - length(loss), checkpoint_room(checkpoint, length(loss)))
      suspendInterrupts(loss <- c(loss, ls_svi_step(handle, n)))  # (the fit and its losses agree)
      done <- length(loss)
      bad <- rle(is.na(loss))
      diverged <- utils::tail(bad$values, 1) && utils::tail(bad$lengths, 1) >= 20
      # every window of 100 iterations: the relative change of its mean bound
      while ((windows + 1) * window <= done) {
        windows <- windows + 1
        elbo <- -mean(loss[(windows - 1) * window + seq_len(window)], na.rm = TRUE)
        if (!is.na(previous) && is.finite(elbo)) {
          changes <- utils::tail(c(changes, abs((elbo - previous) / elbo)), keep_changes)
          converged <- tolerance > 0 && length(changes) >= 2 &&
            (mean(changes) < tolerance || stats::median(changes) < tolerance)
        }
        previous <- elbo
      }
      finished <- converged || diverged || done == n_iterations
      if (!is.null(checkpoint) && (finished || checkpoint_due(checkpoint, done))) {
        suspendInterrupts(svi_checkpoint_write(checkpoint, handle, loop_state(), finished))
      }
      progress_update(bar, done, note = note(), final = finished)
    }
  }, interrupt = function(e) {
    interrupted <<- TRUE
    if (verbose) cat("\n", file = stderr())
    message("svi() was interrupted: returning the fit after ", length(loss), " iterations")
  })
  list(loss = loss, converged = converged, diverged = diverged, interrupted = interrupted)
}

# n draws of the guide as 4 chains' greta_mcmc_list of the model's targets,
# and their log importance ratios log p(z) - log q(z) (NA for a point mass).
# The draws are made and evaluated 100 at a time, so that a model of
# millions of free parameters holds 100 draws of its free state at once, and
# all of them only where the raw draws are kept (as mcmc() keeps them:
# within getOption("lockstep.max_raw_draws_mb")).
guide_draws <- function(model, guide, n, options) {
  D <- model$n_free
  chains <- 4L
  per_chain <- n %/% chains
  n <- per_chain * chains
  engine <- model_engine(model)
  ids <- vapply(model$traced, function(t) as.integer(t$ir), integer(1))
  keep_raw <- raw_draws_mb(model, per_chain, chains) <= getOption("lockstep.max_raw_draws_mb", 500)
  batches <- lapply(split(seq_len(n), ceiling(seq_len(n) / 100)), function(rows) {
    z <- same_on_every_rank(guide_sample(guide, length(rows), D), options)
    log_ratio <- rep(NA_real_, length(rows))
    if (guide$type != "delta") {
      log_p <- ls_engine_log_density(engine, z, FALSE, options)$log_density
      log_ratio <- log_p - guide_log_density(guide, z)
    }
    list(values = ls_engine_values(engine, z, ids, options), log_ratio = log_ratio,
         z = if (keep_raw) z)
  })
  values <- do.call(rbind, lapply(batches, `[[`, "values"))
  chain_of_row <- rep_len(seq_len(chains), n)
  free <- NULL
  if (keep_raw) {
    z <- do.call(rbind, lapply(batches, `[[`, "z"))
    free <- lapply(seq_len(chains), function(k) z[chain_of_row == k, , drop = FALSE])
  }
  list(draws = build_mcmc_list(model, values, free, chains, 1, "complete"),
       log_ratios = unlist(lapply(batches, `[[`, "log_ratio"), use.names = FALSE))
}

# Whether S ratios are too few for the Pareto k: loo fits the largest
# ceiling(min(S / 5, 3 sqrt(S))) of them and returns Inf for fewer than 5,
# which would read as a poor approximation.
too_few_for_k_hat <- function(S) ceiling(min(0.2 * S, 3 * sqrt(S))) < 5

# The Pareto k diagnostic of log importance ratios (loo's PSIS), NA where it
# cannot be had (a point mass, loo not installed, ratios not finite, or too
# few of them).
pareto_k_hat <- function(log_ratios) {
  if (anyNA(log_ratios) || !all(is.finite(log_ratios)) ||
      too_few_for_k_hat(length(log_ratios)) || !requireNamespace("loo", quietly = TRUE)) {
    return(NA_real_)
  }
  psis <- suppressWarnings(loo::psis(log_ratios, r_eff = 1))
  as.numeric(loo::pareto_k_values(psis))
}

#' @export
print.lockstep_svi <- function(x, ...) {
  type <- switch(x$guide$type, mean_field = "mean-field guide", full_rank = "full-rank guide",
                 low_rank = sprintf("rank-%d guide", ncol(x$guide$factor)), "point mass guide")
  objective <- if (x$alpha == 1) "ELBO" else sprintf("Renyi bound (alpha = %s)", x$alpha)
  status <- if (x$converged) "converged" else if (x$interrupted) "interrupted" else
    if (isTRUE(x$diverged)) "diverged: the guide where the bound was last finite" else
    "did not converge"
  cat(sprintf("svi(): %s, %d particle%s, %s%s\n", type, x$particles,
              if (x$particles == 1) "" else "s", objective,
              if (is.null(x$batch_size)) "" else
                sprintf(", minibatches of %s rows", format(x$batch_size, big.mark = ","))))
  cat(sprintf("%d iterations (%s); %s %s (mean of the last 100)\n", x$iterations, status,
              objective, format(x$elbo, digits = 6)))
  if (!is.na(x$k_hat)) {
    cat(sprintf("Pareto k diagnostic: %.2f (%s)\n", x$k_hat,
                if (x$k_hat < 0.5) "good" else if (x$k_hat <= 0.7) "fair" else "poor: use mcmc()"))
  } else if (x$guide$type != "delta" &&
             too_few_for_k_hat(coda::niter(x$draws) * coda::nchain(x$draws))) {
    cat("Pareto k diagnostic: not estimated (it needs n_draws of at least 24)\n")
  }
  cat("posterior means (of the draws):\n")
  print(colMeans(as.matrix(x$draws)), ...)
  invisible(x)
}

#' @export
summary.lockstep_svi <- function(object, ...) summary(object$draws, ...)

#' @export
as.matrix.lockstep_svi <- function(x, ...) as.matrix(x$draws, ...)

# posterior's conversions take the fit as its draws (registered when
# posterior is loaded)
#' @exportS3Method posterior::as_draws
as_draws.lockstep_svi <- function(x, ...) posterior::as_draws(x$draws, ...)
#' @exportS3Method posterior::as_draws_df
as_draws_df.lockstep_svi <- function(x, ...) posterior::as_draws_df(x$draws, ...)
#' @exportS3Method posterior::as_draws_array
as_draws_array.lockstep_svi <- function(x, ...) posterior::as_draws_array(x$draws, ...)
#' @exportS3Method posterior::as_draws_matrix
as_draws_matrix.lockstep_svi <- function(x, ...) posterior::as_draws_matrix(x$draws, ...)

#' Plot an svi() fit's loss
#'
#' The loss (minus the bound's estimate) at each iteration of a fit from
#' [svi()], and its running mean over `window` iterations: whether the fit
#' has settled. The draws of the fitted guide are in `x$draws`, for
#' [summary()], bayesplot and posterior.
#'
#' @param x a fit from [svi()]
#' @param window iterations of the running mean
#' @param ... further arguments of [plot()]
#' @return `x`, invisibly
#' @examples
#' y <- as_data(c(-0.4, 1.2, 0.9, 2.1, 0.3))
#' mu <- normal(0, 10)
#' distribution(y) <- normal(mu, 1)
#' fit <- svi(model(mu), n_iterations = 500, verbose = FALSE)
#' plot(fit)
#' @export
plot.lockstep_svi <- function(x, window = 100, ...) {
  window <- check_count(window, "window", minimum = 1)
  loss <- x$loss
  iteration <- seq_along(loss)
  finite <- is.finite(loss)
  graphics::plot(iteration[finite], loss[finite], type = "l", col = "grey70",
                 xlab = "iteration", ylab = "loss (minus the bound)", ...)
  if (sum(finite) >= window) {
    kept <- loss[finite]
    smooth <- stats::filter(kept, rep(1 / window, window), sides = 1)
    graphics::lines(iteration[finite], smooth, lwd = 2)
  }
  invisible(x)
}

# A single finite number, at least `minimum` (above 0 where `positive`).
check_number <- function(x, arg, minimum = -Inf, positive = FALSE) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x < minimum || (positive && x <= 0)) {
    stop("`", arg, "` must be a single ", if (positive) "positive " else if (minimum == 0)
      "non-negative " else "finite ", "number", call. = FALSE)
  }
  x
}

# Each chain's start drawn from an svi() fit's guide (its mean where a draw's
# log density is not finite).
guide_starts <- function(model, fit, chains, options) {
  g <- fit$guide
  if (length(g$mean) != model$n_free) {
    stop("`initial_values` is an svi() fit of a model with ", length(g$mean),
         " free parameters; this one has ", model$n_free, call. = FALSE)
  }
  init <- same_on_every_rank(guide_sample(g, chains, model$n_free), options)
  lp <- ls_engine_log_density(model_engine(model), init, FALSE, options)$log_density
  init[!is.finite(lp), ] <- rep(g$mean, each = sum(!is.finite(lp)))
  init
}

# n draws of a guide, [n, D]: mean + scale e, e standard normal (low rank:
# mean + factor e1 + diagonal e2).
guide_sample <- function(guide, n, D) {
  mean <- rep(guide$mean, each = n)
  if (guide$type == "low_rank") {
    k <- ncol(guide$factor)
    e1 <- matrix(stats::rnorm(n * k), n, k)
    e2 <- matrix(stats::rnorm(n * D), n, D)
    return(e1 %*% t(guide$factor) + e2 * rep(guide$diagonal, each = n) + mean)
  }
  e <- matrix(stats::rnorm(n * D), n, D)
  if (guide$type == "full_rank") return(e %*% t(guide$scale) + mean)
  e * rep(guide$sd, each = n) + mean
}

# log q(z) of a (normal) guide at the rows of z: by its triangular scale, or
# (low rank) by Woodbury's identity and the matrix determinant lemma, with
# no dim x dim matrix.
guide_log_density <- function(guide, z) {
  D <- ncol(z)
  r <- t(z) - guide$mean  # [D, n]
  if (guide$type == "low_rank") {
    W <- guide$factor
    inv_d2 <- 1 / guide$diagonal^2
    K <- diag(ncol(W)) + crossprod(W, W * inv_d2)
    p <- crossprod(W, r * inv_d2)  # [k, n]
    quad <- colSums(r^2 * inv_d2) - colSums(p * solve(K, p))
    log_det <- as.numeric(determinant(K)$modulus) + 2 * sum(log(guide$diagonal))
    return(-quad / 2 - log_det / 2 - D * log(2 * pi) / 2)
  }
  full <- guide$type == "full_rank"
  e <- if (full) forwardsolve(guide$scale, r) else r / guide$sd
  diagonal <- if (full) diag(guide$scale) else guide$sd
  -sum(log(diagonal)) - colSums(e^2) / 2 - D * log(2 * pi) / 2
}
