# Checkpoints (R/checkpoint.R): a run killed with SIGKILL part-way through,
# in warmup or in sampling, resumes to the draws of the run that was never
# stopped; a damaged checkpoint, another model or bad arguments are refused
# with clear messages.

fixture <- test_path("fixtures", "checkpoint_run.R")
source(fixture, local = TRUE)

# The draws, sampler diagnostics, warmup's, and raw draws of a run: what
# must be identical after a resume (the rest of model_info holds the
# sampler's pointer, which differs).
run_result <- function(d) {
  info <- attr(d, "model_info")
  list(draws = lapply(d, unclass), params = attr(d, "sampler_params"),
       warmup = info$warmup_diagnostics, raw = lapply(info$raw_draws, unclass),
       rescues = info$warmup_rescues, last = info$last_free)
}

# Runs checkpoint_run.R in a process of its own and kills it (SIGKILL) once
# its checkpoint has passed `after` iterations (warmup and sampling
# together) and a random further moment has gone by; returns the iterations
# the last checkpoint it wrote had reached.
killed_run <- function(path, sampler, threads, seed, after) {
  rscript <- file.path(R.home("bin"), "Rscript")
  log <- tempfile(fileext = ".log")
  cmd <- sprintf("R_LIBS=%s %s --vanilla %s %s %s %d %d > %s 2>&1 & echo $!",
                 shQuote(paste(.libPaths(), collapse = .Platform$path.sep)), shQuote(rscript),
                 shQuote(fixture), shQuote(path), sampler, threads, seed, shQuote(log))
  pid <- as.integer(system(cmd, intern = TRUE))
  position <- function() {
    s <- tryCatch(lockstep:::latest_checkpoint_state(path), error = function(e) NULL)
    if (is.null(s)) return(-1)
    if (sampler == "svi") return(length(s$loop$loss))
    s$done + if (s$phase == "sampling") 300 else 0
  }
  deadline <- Sys.time() + 60
  while (position() < after && Sys.time() < deadline) Sys.sleep(0.02)
  Sys.sleep(stats::runif(1, 0, 0.15))
  alive_before <- tools::pskill(pid, 0L)
  tools::pskill(pid, tools::SIGKILL)
  # gone: no such process, or one that has died and not been reaped (its
  # parent, the shell that started it, has exited)
  gone <- function() {
    stat <- suppressWarnings(system(paste("ps -o stat= -p", pid), intern = TRUE))
    !length(stat) || grepl("^Z", stat[1])
  }
  deadline <- Sys.time() + 10
  while (!gone() && Sys.time() < deadline) Sys.sleep(0.05)
  list(alive_before = alive_before, gone = gone(), at = position(),
       log = readLines(log, warn = FALSE))
}

test_that("a run killed with SIGKILL in warmup or sampling resumes to the uninterrupted run's draws", {
  skip_on_os("windows")
  m <- checkpoint_model()
  cases <- list(list("nuts", 1L, 150), list("nuts", 2L, 340), list("hmc", 1L, 380),
                list("hmc", 2L, 90))
  for (k in cases) {
    sampler <- k[[1]]; threads <- k[[2]]; after <- k[[3]]
    label <- sprintf("%s on %d threads, killed after iteration %d", sampler, threads, after)
    reference <- checkpoint_fit(m, sampler, threads, seed = 5)
    path <- tempfile("ckpt")
    killed <- killed_run(path, sampler, threads, seed = 5, after = after)
    expect_true(killed$alive_before, label = paste(label, ": still running when killed"))
    expect_true(killed$gone, label = label)
    expect_gte(killed$at, after)
    expect_lt(killed$at, 600)  # (it had not finished)
    resumed <- resume(path, m, verbose = FALSE)
    expect_identical(run_result(resumed), run_result(reference), label = label)
    # the resumed run went on checkpointing to the end: resuming again
    # returns the same draws at once
    expect_identical(run_result(resume(path, m, verbose = FALSE)), run_result(reference),
                     label = label)
    unlink(path, recursive = TRUE)
  }
})

# What must be identical in a resumed variational fit: all but its handle.
svi_result <- function(fit) {
  fit$handle <- NULL
  fit$model <- NULL
  fit$draws <- run_result(fit$draws)
  fit
}

test_that("an svi() fit killed with SIGKILL resumes to the uninterrupted fit", {
  skip_on_os("windows")
  m <- checkpoint_model()
  for (threads in 1:2) {
    label <- sprintf("svi on %d threads", threads)
    reference <- checkpoint_svi(m, threads, seed = 4)
    after_reference <- .Random.seed
    path <- tempfile("ckpt")
    killed <- killed_run(path, "svi", threads, seed = 4, after = 1500 + 1000 * (threads - 1))
    expect_true(killed$alive_before, label = paste(label, ": still running when killed"))
    expect_true(killed$gone, label = label)
    expect_lt(killed$at, 6000)
    set.seed(1)  # (resume() puts R's generator where the fit's was)
    resumed <- resume(path, m, verbose = FALSE)
    expect_identical(svi_result(resumed), svi_result(reference), label = label)
    expect_identical(.Random.seed, after_reference)
    expect_identical(svi_result(resume(path, m, verbose = FALSE)), svi_result(reference))
    unlink(path, recursive = TRUE)
  }
})

test_that("a run that writes checkpoints draws what one without them draws", {
  m <- checkpoint_model()
  path <- tempfile("ckpt")
  on.exit(unlink(path, recursive = TRUE))
  with <- checkpoint_fit(m, "nuts", 1L, seed = 8, path = path, warmup = 100, n_samples = 60)
  without <- checkpoint_fit(m, "nuts", 1L, seed = 8, warmup = 100, n_samples = 60)
  expect_identical(run_result(with), run_result(without))
  # every 20 iterations: 8 draws files, and the start and the state
  files <- list.files(path)
  expect_setequal(files, c("start.rds", "state_0.rds", "state_1.rds",
                           sprintf("draws_%06d.rds", 1:8)))
  # the draws files are plain R objects
  last <- readRDS(file.path(path, "draws_000008.rds"))
  expect_equal(nrow(last$values), 20 * 4)
  expect_equal(unname(last$values), unname(as.matrix(without)[c(t(matrix(seq_len(240), 60)))[
    -(1:160)], , drop = FALSE]))
})

test_that("extra_samples() writes checkpoints, and its resume includes the draws it continued", {
  m <- checkpoint_model()
  path <- tempfile("ckpt")
  on.exit(unlink(path, recursive = TRUE))
  set.seed(2)
  first <- mcmc(m, warmup = 100, n_samples = 40, chains = 2, verbose = FALSE)
  more <- extra_samples(first, 60, verbose = FALSE, checkpoint = path, checkpoint_every = 25)
  again <- resume(path, m, verbose = FALSE)
  expect_identical(run_result(again), run_result(more))
  expect_equal(coda::niter(again), 100)
})

test_that("a truncated or damaged checkpoint is refused with a clear message", {
  m <- checkpoint_model()
  path <- tempfile("ckpt")
  on.exit(unlink(c(path, paste0(path, "_copy")), recursive = TRUE))
  checkpoint_fit(m, "nuts", 1L, seed = 3, path = path, warmup = 40, n_samples = 40)
  copy <- paste0(path, "_copy")
  set.seed(99)
  for (file in c("state_0.rds", "state_1.rds", "start.rds", "draws_000002.rds")) {
    size <- file.size(file.path(path, file))
    for (cut in sort(sample(size - 1, 10))) {
      unlink(copy, recursive = TRUE)
      dir.create(copy)
      file.copy(list.files(path, full.names = TRUE), copy)
      bytes <- readBin(file.path(path, file), "raw", size)
      writeBin(bytes[seq_len(cut)], file.path(copy, file))
      expect_error(resume(copy, m, verbose = FALSE), "truncated or damaged|damaged",
                   label = sprintf("%s cut to %d of %d bytes", file, cut, size))
    }
  }
  # a flipped byte in a draws file, with its length unchanged
  unlink(copy, recursive = TRUE)
  dir.create(copy)
  file.copy(list.files(path, full.names = TRUE), copy)
  f <- file.path(copy, "draws_000001.rds")
  bytes <- readBin(f, "raw", file.size(f))
  bytes[length(bytes) %/% 2] <- xor(bytes[length(bytes) %/% 2], as.raw(1))
  writeBin(bytes, f)
  expect_error(resume(copy, m, verbose = FALSE), "does not match its checksum")
  # a draws file gone
  unlink(f)
  expect_error(resume(copy, m, verbose = FALSE), "draws file draws_000001.rds is missing")
  # not a checkpoint at all
  expect_error(resume(tempdir(), m), "holds no checkpoint state")
  expect_error(resume(file.path(tempdir(), "no_such_dir"), m), "there is no checkpoint directory")
})

test_that("resume() refuses another model, saying what differs", {
  m <- checkpoint_model()
  path <- tempfile("ckpt")
  on.exit(unlink(path, recursive = TRUE))
  checkpoint_fit(m, "nuts", 1L, seed = 3, path = path, warmup = 20, n_samples = 20)
  a <- normal(0, 1)
  expect_error(resume(path, model(a)), "another model: it has 6 free parameters, this model 1")
  # the same graph, other data
  expect_error(resume(path, checkpoint_model(data_seed = 12)), "data differ from this one's")
  # another graph of the same size
  expect_error(resume(path, checkpoint_model(alpha_prior = function() logistic(0, 2))),
               "graph \\(the distributions and operations\\) differs")
  # other traced arrays
  alpha <- normal(0, 2)
  beta <- normal(0, 1, dim = 5)
  expect_error(resume(path, model(beta, alpha)), "it traces alpha\\[1,1\\], beta\\[5,1\\]")
  expect_error(resume(path, "m"), "`model` must be the greta_model")
})

test_that("checkpoint arguments are checked before anything runs", {
  m <- checkpoint_model()
  expect_error(mcmc(m, checkpoint = 3), "`checkpoint` must be the path of a directory")
  expect_error(mcmc(m, checkpoint = c("a", "b")), "`checkpoint` must be the path")
  expect_error(mcmc(m, checkpoint_every = 10), "`checkpoint_every` needs `checkpoint`")
  path <- tempfile("ckpt")
  dir.create(path)
  on.exit(unlink(path, recursive = TRUE))
  expect_error(mcmc(m, checkpoint = path, checkpoint_every = 0), "checkpoint_every")
  writeLines("x", file.path(path, "something"))
  expect_error(mcmc(m, checkpoint = path), "already holds files: resume that run with resume")
  f <- tempfile()
  writeLines("x", f)
  on.exit(unlink(f), add = TRUE)
  expect_error(mcmc(m, checkpoint = f), "is a file: give the path of a directory")
})
