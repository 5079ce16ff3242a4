#' MCMC samplers
#'
#' Functions to set up MCMC samplers for [mcmc()]: `nuts()`, the No-U-Turn
#' sampler (the default), and `hmc()` with greta's parameters.
#'
#' @param max_treedepth the most times a NUTS trajectory is doubled: at most
#'   `2^max_treedepth - 1` leapfrog steps per iteration (Stan's default, 10)
#' @param adapt_delta the acceptance statistic that warmup tunes the step size
#'   towards (Stan's default, 0.8), averaged over iterations as Stan does.
#'   With `adapt_step_size = "shared"`, it is averaged over chains by their
#'   harmonic mean, which keeps the one step size small enough for a chain
#'   that accepts little (a chain in a posterior's difficult tail), where the
#'   plain mean would let the others hide it. Higher values give smaller
#'   steps and fewer divergences
#'
#' @param max_energy_error WALNUTS's split steps (Bou-Rabee, Carpenter,
#'   Kleppe and Liu, 2025): in sampling, a leapfrog step whose energy
#'   error is at least `max_energy_error` is taken again as 2, 4, ..., 64
#'   steps of a half, a quarter, ... the step size, the fewest that keep the
#'   error below it, so that a trajectory passing through a region that needs
#'   a much smaller step than the rest (the neck of a hierarchical model's
#'   funnel) goes through it instead of diverging there; a split step that
#'   the same rule would not pick from its end, going back, is not
#'   reversible, and the trajectory's points past it get no weight, which
#'   keeps the draws exact. A step that no split keeps within the error is a
#'   divergence. Warmup takes its steps whole (its early step sizes fit
#'   badly enough that most would split, and its rescue moves a stuck chain),
#'   and tunes the step size on the whole steps' acceptance, as NUTS's.
#'   `Inf` (the default) takes every step whole, as Stan's NUTS does. On
#'   greta's eight schools over 50 seeds, `max_energy_error = 2` (or 1, or 4)
#'   left no chain stuck where the default left one, in 1.3 times the time;
#'   on posteriordb's posteriors it costs nothing where no step splits, but
#'   gp_pois_regr and the non-centred eight schools lose 15% and 25% of their
#'   ESS per second, which is why it is not the default yet
#'   (bench/RESULTS.md). [mcmc()]'s warning of a stuck chain suggests it. Split
#'   steps count in `n_leapfrog__` ([get_sampler_params()]); a step that
#'   needs none costs nothing more than NUTS's, but the trajectory then
#'   writes each new point beside the last rather than over it (two more
#'   vectors' memory traffic a step, noticeable only on models with millions
#'   of parameters)
#' @param Lmin,Lmax the number of leapfrog steps of each iteration is drawn
#'   uniformly from `Lmin` to `Lmax`
#' @param epsilon the leapfrog step size, a starting value: warmup tunes it by
#'   dual averaging, as `adapt_step_size` says (`chees()`: on the harmonic
#'   mean of the chains' acceptance rates; `rwmh()`: on their mean).
#'   `rwmh()` starts from 1, where greta's default is 0.1: its step is
#'   `epsilon * diag_sd` and warmup tunes `epsilon` towards an acceptance rate
#'   of 0.234, which for normal posteriors of 2 and 10 dimensions ended near
#'   2.4-3.0 and 0.95-1.0 from either start (4 chains, 200 warmup
#'   iterations, 3 seeds each), so 1 starts nearer what warmup finds; give
#'   `epsilon = 0.1` for greta's start
#' @param adapt_step_size how warmup tunes the step size of `nuts()` and
#'   `hmc()`: `"shared"` (the default), one step size for every chain, by
#'   dual averaging on the chains' acceptance statistics pooled (`nuts()`:
#'   their harmonic mean; `hmc()`: their mean); or `"per_chain"`, each chain
#'   its own, on its own acceptance statistic, as Stan does for each of its
#'   chains. With one step size, a chain that lands where the posterior needs
#'   a much smaller step than elsewhere (the neck of a hierarchical model's
#'   funnel) cannot get it in warmup (warmup's rescue then moves it, see
#'   [mcmc()]); with its own, it shrinks its step and moves on. But each
#'   chain's own step size is fitted to where that chain went, and one that
#'   did not visit the narrow region gets a larger step than the pooled one:
#'   on posteriordb's `gp_pois_regr` (6 seeds) per-chain step sizes gave 1 to
#'   29 divergent draws a run against 0 to 3, and on eight schools
#'   (non-centred) 0 to 3 against none, so shared stays the default. The
#'   chains step together either way (the leapfrog takes each chain's step
#'   size); the step sizes are in the draws' `stepsize__`
#'   ([get_sampler_params()]). With one chain the two are the same
#' @param warmup_rescue whether warmup moves a stuck chain to a healthy chain's
#'   state at the end of each metric window (`TRUE`, the default; see
#'   [mcmc()]'s Details). `FALSE` keeps every chain on its own path through
#'   warmup, as Stan's are: for studying how chains started apart behave
#'   (their lag and stuck-chain warnings), or a posterior whose modes should
#'   each keep their chains. With one chain there is nothing to move to, and
#'   nothing is pooled: warmup is Stan's for its one chain
#' @param diag_sd an estimate of the posterior standard deviations of the free
#'   parameters (one value, or one per free parameter), a starting value:
#'   warmup re-estimates it from the draws, as `adapt_metric` says. For
#'   `nuts()`, `hmc()` and `chees()`, `"gradient"` (the default) starts
#'   warmup with a diagonal metric from one estimated from the gradient at
#'   the initial values (each free parameter's sd as `|dlp/dx|^(-1/2)`, the
#'   chains' geometric mean, within 0.001 and 1; see Details), and
#'   `diag_sd = 1` starts from Stan's unit metric. (greta's default is 1,
#'   which `diag_sd = 1` gives; the gradient's estimate starts warmup nearer
#'   the posterior's scales, so its first window needs fewer leapfrog steps.)
#' @param adapt_metric how warmup estimates `diag_sd` (the diagonal metric, or
#'   inverse mass matrix): `"pooled"` (the default), one metric for every
#'   chain from the draws of all chains pooled; or `"per_chain"`, each chain's
#'   own metric from its own draws, as Stan does. Pooled estimates are
#'   steadier, the more so the more chains there are (a short warmup with many
#'   chains still sees many draws), but a chain stuck in a different mode or
#'   scale from the others gets a metric that fits none of them; per-chain
#'   estimates fit each chain's own region and keep chains independent until
#'   the end of warmup.
#'   With `"per_chain"`, the `diag_sd` that warmup tuned is a chains x
#'   parameters matrix
#' @param metric the metric (inverse mass matrix) that warmup learns:
#'   `"auto"` (the default), `"diagonal"` or `"dense"`. `"diagonal"` (Stan's
#'   default, `diag_e`) learns the variances of the free parameters.
#'   `"dense"` (Stan's `dense_e`) learns their whole covariance, in the same
#'   windows as Stan, regularised as Stan does but in proportion to each
#'   variance (so that a parameter with a small posterior scale keeps its
#'   correlations): the sampler then works in coordinates where the posterior
#'   is close to round, with far shorter trajectories where parameters are
#'   strongly correlated (a regression on an uncentred predictor). It costs
#'   two triangular products of the number of free parameters squared per
#'   gradient, so it is meant for models with up to a few hundred free
#'   parameters, and its vector work stays in host memory. On a hierarchical
#'   model with more than 2,000 free parameters, or whose groups are owned by
#'   MPI ranks ([mpi]), the dense part covers the global parameters alone
#'   (those that are not one per group; at most 2,000) and the group-level
#'   ones keep a diagonal metric, learnt in the same windows: their
#'   correlations with the globals are left to the sampler, as a diagonal
#'   metric leaves every correlation. `"auto"` learns
#'   the covariance in each window, and keeps it whole only where its
#'   correlations would leave a diagonal metric badly conditioned and the
#'   window's gradients show a posterior close enough to a Gaussian for one
#'   covariance to serve all of it (see Details); otherwise it keeps the
#'   variances, the diagonal metric. It does so for models with at most
#'   100 free parameters on the CPU in one process ([cpu_only()]); larger
#'   models, and models on a GPU or across MPI ranks, get the diagonal
#'   metric. `adapt_metric` applies to each choice. With `diag_sd` set,
#'   `"auto"` starts from it
#' @details All chains run in lockstep: every leapfrog step evaluates the log
#'   density and gradient of all chains in one call to the engine, with one
#'   step size (or each chain its own: `adapt_step_size`); each chain accepts
#'   or rejects its own proposal.
#'
#'   `nuts()` is Stan's NUTS: multinomial sampling of the trajectory's points,
#'   the generalised U-turn criterion (with Stan's checks across merged
#'   subtrees), and a divergence when the energy error exceeds 1000. Each
#'   chain builds its own tree; a chain whose tree is finished waits while the
#'   others finish theirs, so an iteration costs the longest trajectory of the
#'   chains. On a model whose gradient is too small to share between threads
#'   (see [cpu_only()]), `nuts()` instead splits the chains into one group per
#'   thread, each group building its own chains' trees on its own thread, so
#'   that a chain waits only for the others of its group; the draws are the
#'   same as on one thread. `hmc()` does the same there (each group draws the
#'   same number of steps each iteration, so again the draws do not change).
#'   Warmup tunes the step size by dual averaging on the acceptance
#'   statistic of all chains (`nuts()`: their harmonic mean; `hmc()`: their
#'   mean; or each chain's own on its own: `adapt_step_size`), and
#'   `diag_sd` in Stan's windows, from the pooled draws of the chains or each
#'   chain's own (`adapt_metric`).
#'
#'   Until the first window ends (100 iterations into a warmup of 150 or
#'   more) the metric is the starting one. Stan starts from the unit metric,
#'   and where the free parameters' scales differ by orders of magnitude (a
#'   hierarchical regression's coefficients beside its group effects) the
#'   step size must fit the narrowest, so those iterations take hundreds of
#'   leapfrog steps each. Unless `diag_sd` is given, warmup of a diagonal
#'   metric (`metric = "diagonal"`, or `"auto"` on a model too large for a
#'   dense one) therefore starts from the scales the gradient shows at the
#'   initial values: for a normal of sd \eqn{s} at a distance \eqn{d} from
#'   its mean, \eqn{|dlp/dx| = d / s^2}, so where the initial values are
#'   about 1 from the posterior's mean (they are drawn on (-2, 2) on the free
#'   scale), \eqn{|dlp/dx|^{-1/2}} is about \eqn{s} (as nutpie starts). It
#'   only narrows a scale from the unit metric's 1, never widens it. On a
#'   hierarchical logistic regression (20,000 rows, 10,542 free
#'   parameters, 500 warmup iterations) this took warmup from 46,000-48,000
#'   to 26,000-34,000 leapfrog steps a chain, and the whole run from 130-173
#'   to 92-131 seconds; sampling's trajectories were as long as before.
#'
#'   With `metric = "auto"`, at the end of each of warmup's metric windows
#'   the window's covariance of the free parameters (n draws of d) is kept
#'   whole when the condition number of its correlation matrix exceeds
#'   \eqn{4 ((1 + r) / (1 - r))^2}{4 ((1 + r) / (1 - r))^2}, \eqn{r =
#'   \sqrt{4 d / n}}{r = sqrt(4 d / n)}: four times the largest condition
#'   number that n / 4 independent draws of uncorrelated parameters would
#'   show by chance (the Marchenko-Pastur edges, n / 4 allowing for the
#'   draws' autocorrelation), and never with fewer than 4 d draws. The
#'   number of leapfrog steps a trajectory needs grows as the square root of
#'   that condition number. The window's gradients then check that the
#'   posterior is close enough to a Gaussian: for a Gaussian, the gradients'
#'   second moments are the inverse of the covariance, so in a metric's
#'   coordinates the largest curvature they show times the largest variance
#'   is 1 for the dense metric and the correlations' condition number for the
#'   diagonal one. Where the curvature changes across the posterior (a
#'   funnel, a latent Gaussian process's hyperparameters) these grow, and the
#'   dense metric is kept only if its product is at most twice the
#'   diagonal's over that condition number (or within what the window's
#'   noise could make of a Gaussian's). On posteriordb's reference
#'   posteriors, the regressions on uncentred
#'   predictors (condition numbers of 20 to 240,000) get a dense metric and
#'   need one tenth to one hundredth of the leapfrog steps of a diagonal
#'   one, while the latent Gaussian process of `gp_pois_regr` (on which a
#'   dense metric diverged in 3 percent of its draws) and eight schools keep the
#'   diagonal metric.
#'
#'   Pooled warmup leaves out a chain that lags far behind the others: one
#'   whose log density is more than \eqn{10 + 5 \sqrt{d / 2}}{10 + 5 sqrt(d / 2)}
#'   below the chains' median (d free parameters: five standard deviations
#'   of a Gaussian's log density, and ten more), such as a chain still on its
#'   way in from initial values far out in the tails. Its draws would
#'   otherwise stretch the pooled metric to its own scales, and every chain
#'   would then barely move. It still counts in the step size (its own, with
#'   `adapt_step_size = "per_chain"`), so that the step size lets it come in.
#'   Stan does not meet this: each of its chains adapts alone. A chain still lagging at the end of warmup is named in a
#'   warning: its first draws are from the tails.
#'
#'   `chees()` is ChEES-HMC (Hoffman, Radul and Sountsov 2021), made for
#'   many chains in lockstep: every chain takes the same, jittered number of
#'   leapfrog steps, so none waits for another. Warmup learns the trajectory
#'   length from the chains by maximising the ChEES criterion (the expected
#'   change in the chains' squared distance from their mean) with Adam,
#'   starting again after each new metric, and the step size by dual
#'   averaging on the harmonic mean of the chains' acceptance probabilities
#'   (target 0.651). The first phase of warmup (Stan's initial buffer, 75
#'   iterations of 1000), and later warmup iterations while a chain lags as
#'   above (up to half of warmup), make NUTS transitions instead: chains
#'   coming in from far-apart initial values need trajectories of very
#'   different lengths, which NUTS finds for each, where one shared length
#'   can leave a chain out in the tails for good. So `chees()` needs the
#'   memory of `nuts()` too.
#'
#'   `rwmh()` is random-walk Metropolis: each chain proposes a step of
#'   `epsilon * diag_sd` times normal (or uniform) noise and accepts it with
#'   the Metropolis probability; warmup tunes `epsilon` towards an acceptance
#'   rate of 0.234 and `diag_sd` from the draws. `slice()` slice-samples each
#'   chain along a random direction scaled by `diag_sd` (tuned in warmup),
#'   stepping its interval out and shrinking it (Neal 2003); it needs no
#'   gradients and always moves. Both evaluate all chains' proposals in one
#'   engine call.
#' @return a `sampler` object that can be passed to [mcmc()]
#' @examples
#' nuts()
#' nuts(adapt_delta = 0.95)
#' nuts(adapt_metric = "per_chain")
#' # each chain its own step size
#' nuts(adapt_step_size = "per_chain")
#' # always a dense metric, or always a diagonal one
#' nuts(metric = "dense")
#' nuts(metric = "diagonal")
#' chees()
#' rwmh(proposal = "uniform")
#' slice(max_doublings = 3)
#' hmc()
#' hmc(Lmin = 10, Lmax = 20)
#' @name samplers
NULL

#' @rdname samplers
#' @export
nuts <- function(max_treedepth = 10, adapt_delta = 0.8, epsilon = 0.1, diag_sd = "gradient",
                 adapt_metric = c("pooled", "per_chain"),
                 metric = c("auto", "diagonal", "dense"),
                 adapt_step_size = c("shared", "per_chain"), warmup_rescue = TRUE,
                 max_energy_error = Inf) {
  check_count(max_treedepth, "max_treedepth", minimum = 1)
  if (max_treedepth > 30) stop("`max_treedepth` must be at most 30", call. = FALSE)
  if (!is.numeric(adapt_delta) || length(adapt_delta) != 1 || !is.finite(adapt_delta) ||
      adapt_delta <= 0 || adapt_delta >= 1) {
    stop("`adapt_delta` must be a single number between 0 and 1", call. = FALSE)
  }
  from_gradient <- is_gradient_default(diag_sd)
  if (from_gradient) diag_sd <- 1
  check_step_size(epsilon, diag_sd)
  adapt_metric <- check_adapt_metric(adapt_metric)
  metric <- check_metric(metric, diag_sd)
  adapt_step_size <- check_adapt_step_size(adapt_step_size)
  obj <- list(parameters = list(max_treedepth = as.integer(max_treedepth),
                                adapt_delta = adapt_delta, epsilon = epsilon, diag_sd = diag_sd,
                                adapt_metric = adapt_metric, metric = metric,
                                adapt_step_size = adapt_step_size,
                                warmup_rescue = check_flag(warmup_rescue, "warmup_rescue"),
                                max_energy_error = check_energy_error(max_energy_error),
                                diag_sd_from_gradient = from_gradient),
              name = "nuts")
  class(obj) <- c("nuts sampler", "sampler")
  obj
}

#' @rdname samplers
#' @param max_leapfrog the most leapfrog steps `chees()` takes in one
#'   iteration; [mcmc()] warns when kept draws reached it (their trajectories
#'   were cut short of the adapted length)
#' @export
chees <- function(epsilon = 0.1, diag_sd = "gradient", max_leapfrog = 1000,
                  adapt_metric = c("pooled", "per_chain"),
                  metric = c("auto", "diagonal", "dense"), warmup_rescue = TRUE) {
  from_gradient <- is_gradient_default(diag_sd)
  if (from_gradient) diag_sd <- 1
  check_step_size(epsilon, diag_sd)
  check_count(max_leapfrog, "max_leapfrog", minimum = 1)
  adapt_metric <- check_adapt_metric(adapt_metric)
  metric <- check_metric(metric, diag_sd)
  obj <- list(parameters = list(epsilon = epsilon, diag_sd = diag_sd,
                                max_leapfrog = as.integer(max_leapfrog),
                                adapt_metric = adapt_metric, metric = metric,
                                warmup_rescue = check_flag(warmup_rescue, "warmup_rescue"),
                                diag_sd_from_gradient = from_gradient),
              name = "chees")
  class(obj) <- c("chees sampler", "sampler")
  obj
}

#' @rdname samplers
#' @param proposal the distribution of `rwmh()`'s proposal steps: `"normal"`
#'   or `"uniform"` (on `(-1, 1)`), scaled by `epsilon * diag_sd`
#' @export
rwmh <- function(proposal = c("normal", "uniform"), epsilon = 1, diag_sd = 1,
                 adapt_metric = c("pooled", "per_chain")) {
  if (!is.character(proposal) || !all(proposal %in% c("normal", "uniform"))) {
    stop("`proposal` must be \"normal\" or \"uniform\"", call. = FALSE)
  }
  proposal <- match.arg(proposal)
  check_step_size(epsilon, diag_sd)
  adapt_metric <- check_adapt_metric(adapt_metric)
  obj <- list(parameters = list(proposal = proposal, epsilon = epsilon, diag_sd = diag_sd,
                                adapt_metric = adapt_metric),
              name = "rwmh")
  class(obj) <- c("rwmh sampler", "sampler")
  obj
}

#' @rdname samplers
#' @param max_doublings `slice()` steps its interval out by at most
#'   `2^max_doublings` widths
#' @export
slice <- function(max_doublings = 5, adapt_metric = c("pooled", "per_chain")) {
  check_count(max_doublings, "max_doublings", minimum = 0)
  if (max_doublings > 30) stop("`max_doublings` must be at most 30", call. = FALSE)
  adapt_metric <- check_adapt_metric(adapt_metric)
  obj <- list(parameters = list(max_doublings = as.integer(max_doublings), epsilon = 1,
                                diag_sd = 1, adapt_metric = adapt_metric),
              name = "slice")
  class(obj) <- c("slice sampler", "sampler")
  obj
}

#' @rdname samplers
#' @export
hmc <- function(Lmin = 5, Lmax = 10, epsilon = 0.1, diag_sd = "gradient",
                adapt_metric = c("pooled", "per_chain"),
                metric = c("auto", "diagonal", "dense"),
                adapt_step_size = c("shared", "per_chain"), warmup_rescue = TRUE) {
  check_count(Lmin, "Lmin", minimum = 1)
  check_count(Lmax, "Lmax", minimum = 1)
  if (Lmax < Lmin) stop("`Lmax` must be at least `Lmin`", call. = FALSE)
  from_gradient <- is_gradient_default(diag_sd)
  if (from_gradient) diag_sd <- 1
  check_step_size(epsilon, diag_sd)
  adapt_metric <- check_adapt_metric(adapt_metric)
  metric <- check_metric(metric, diag_sd)
  adapt_step_size <- check_adapt_step_size(adapt_step_size)
  obj <- list(parameters = list(Lmin = as.integer(Lmin), Lmax = as.integer(Lmax),
                                epsilon = epsilon, diag_sd = diag_sd,
                                adapt_metric = adapt_metric, metric = metric,
                                adapt_step_size = adapt_step_size,
                                warmup_rescue = check_flag(warmup_rescue, "warmup_rescue"),
                                diag_sd_from_gradient = from_gradient),
              name = "hmc")
  class(obj) <- c("hmc sampler", "sampler")
  obj
}

#' @export
print.sampler <- function(x, ...) {
  parameters <- x$parameters
  # (diag_sd_from_gradient is how the sampler records that diag_sd was left
  # unset: warmup starts from the gradient's scales, which print says)
  if (isTRUE(parameters$diag_sd_from_gradient)) parameters$diag_sd <- "from the gradient"
  parameters$diag_sd_from_gradient <- NULL
  values <- vapply(parameters, function(v) paste(prettyNum(v), collapse = ", "), "")
  cat(class(x)[1], " object with parameters:\n  ",
      paste(names(parameters), values, sep = " = ", collapse = ", "), "\n", sep = "")
  invisible(x)
}

# Whether `diag_sd` is "gradient": warmup starts from the gradient's scales
# (the default of nuts(), hmc() and chees()).
is_gradient_default <- function(diag_sd) {
  if (!is.character(diag_sd)) return(FALSE)
  if (!identical(diag_sd, "gradient")) {
    stop("`diag_sd` must be \"gradient\" (the default) or positive numbers", call. = FALSE)
  }
  TRUE
}

check_step_size <- function(epsilon, diag_sd) {
  if (!is.numeric(epsilon) || length(epsilon) != 1 || !is.finite(epsilon) || epsilon <= 0) {
    stop("`epsilon` must be a single positive number", call. = FALSE)
  }
  if (!is.numeric(diag_sd) || length(diag_sd) < 1 || any(!is.finite(diag_sd)) ||
      any(diag_sd <= 0)) {
    stop("`diag_sd` must be positive numbers", call. = FALSE)
  }
  invisible(NULL)
}

# One of `choices` (the first, the default, also when the argument is left as
# all its choices, as match.arg() has it); an error names the argument and its
# choices otherwise (match.arg's names neither).
check_choice <- function(x, choices, arg) {
  if (identical(x, choices)) return(choices[1])
  if (!is.character(x) || length(x) != 1 || is.na(x) || !x %in% choices) {
    stop("`", arg, "` must be ", paste0("\"", choices, "\"", collapse = " or "), call. = FALSE)
  }
  x
}

check_adapt_metric <- function(adapt_metric) {
  check_choice(adapt_metric, c("pooled", "per_chain"), "adapt_metric")
}

check_adapt_step_size <- function(adapt_step_size) {
  check_choice(adapt_step_size, c("shared", "per_chain"), "adapt_step_size")
}

# nuts()'s max_energy_error: one positive number, Inf allowed (no split steps).
check_energy_error <- function(max_energy_error) {
  if (!is.numeric(max_energy_error) || length(max_energy_error) != 1 ||
      is.na(max_energy_error) || max_energy_error <= 0) {
    stop("`max_energy_error` must be a single positive number (or Inf: no split steps)",
         call. = FALSE)
  }
  as.numeric(max_energy_error)
}

# "auto", "diagonal" or "dense"; a dense metric is learnt whole in warmup, so
# it takes no diag_sd ("auto" starts from it).
check_metric <- function(metric, diag_sd) {
  metric <- check_choice(metric, c("auto", "diagonal", "dense"), "metric")
  if (metric == "dense" && !all(diag_sd == 1)) {
    stop("`diag_sd` cannot be set with metric = \"dense\": warmup learns the whole metric",
         call. = FALSE)
  }
  metric
}

# trace_batch_size: a whole number of at least 1, or Inf for all draws in one
# batch (greta's ?calculate example uses Inf), as a number beyond any run.
check_batch_size <- function(x, arg = "trace_batch_size") {
  if (is.numeric(x) && length(x) == 1 && identical(as.numeric(x), Inf)) {
    return(2^40)  # a double: batch * chains must not overflow R's integers
  }
  tryCatch(check_count(x, arg, minimum = 1), error = function(e) {
    stop("`", arg, "` must be a whole number of at least 1, or Inf", call. = FALSE)
  })
}

check_count <- function(x, arg, minimum = 0, truncate = FALSE) {
  # A run length (n_samples, warmup, iterations) that is not whole is cut to
  # its whole part, as greta's as.integer() does (its own helpers pass
  # n_samples = n / chains); other counts must be whole.
  if (truncate && is.numeric(x) && length(x) == 1 && is.finite(x)) x <- trunc(x)
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x != round(x) || x < minimum) {
    stop("`", arg, "` must be a whole number of at least ", minimum, call. = FALSE)
  }
  if (x > .Machine$integer.max) {
    stop("`", arg, "` must be at most ", .Machine$integer.max, ", not ", format(x),
         call. = FALSE)
  }
  invisible(as.integer(x))
}

# A single TRUE or FALSE, else an error naming the argument.
check_flag <- function(x, arg) {
  if (!is.logical(x) || length(x) != 1 || is.na(x)) {
    stop("`", arg, "` must be TRUE or FALSE", call. = FALSE)
  }
  x
}
