# Runs the testthat suite against the installed lockstep and prints counts.
#   Rscript tools/run_testthat.R [tests/testthat]
# (with the library holding the installed package on R_LIBS or .libPaths()).
# A test_that() block passes when it has no failure and no error; a skipped one
# (skip(), or an empty block) is counted as skipped and listed. The last line
# is machine-readable for tools/check.sh:
#   testthat-counts: <passed> <failed> <skipped>
#
# The files run in LOCKSTEP_TEST_JOBS processes at once (default: the
# machine's cores, at most 4), each file in a process of its own forked from
# this one, which has loaded testthat but not lockstep (so no engine threads
# exist when it forks). The longest files start first: the suite takes about
# as long as its longest file or its total over the jobs, whichever is more.
# Each file's output goes to a log of its own, printed whole, in file order,
# once every file has run: the log is read, not watched. A file whose
# process dies (a crash) counts as one failed block and its log is printed.
args <- commandArgs(trailingOnly = TRUE)
dir <- if (length(args) >= 1L) args[[1L]] else "tests/testthat"

counts <- function(passed, failed, skipped) {
  cat(sprintf("\ntestthat: %d passed, %d failed, %d skipped\n", passed, failed, skipped))
  cat(sprintf("testthat-counts: %d %d %d\n", passed, failed, skipped))
}

files <- list.files(dir, pattern = "^test.*\\.[rR]$")
if (length(files) == 0L) {
  cat("testthat: no test files in", dir, "\n")
  counts(0L, 0L, 0L)
  quit(save = "no", status = 0L)
}

jobs <- Sys.getenv("LOCKSTEP_TEST_JOBS", "")
jobs <- if (nzchar(jobs)) {
  suppressWarnings(as.integer(jobs))
} else {
  min(4L, parallel::detectCores(logical = TRUE))
}
if (is.na(jobs) || jobs < 1L) {
  cat("testthat: LOCKSTEP_TEST_JOBS must be a positive whole number, not '",
      Sys.getenv("LOCKSTEP_TEST_JOBS"), "'\n", sep = "")
  counts(0L, 1L, 0L)
  quit(save = "no", status = 1L)
}
# mclapply forks: on Windows it cannot, so one job there.
if (.Platform$OS.type == "windows") jobs <- 1L

# The order files start in: the seconds each took here (bench/RESULTS.md,
# "Build once") where known, the longest first; a file not listed (a new
# one) by its size, which sorts it after the listed long ones. A stale
# figure costs balance, never a test.
expected_seconds <- c(
  test_operations.R = 74, test_arrays.R = 49, test_mcmc.R = 48,
  test_posteriordb.R = 42, test_distributions.R = 27
)
size_order <- file.size(file.path(dir, files))
key <- ifelse(files %in% names(expected_seconds),
              1e9 + expected_seconds[files], size_order)
files_by_length <- files[order(key, decreasing = TRUE)]

suppressPackageStartupMessages(library(testthat))

logs <- file.path(tempdir(), paste0(files, ".log"))
names(logs) <- files

run_file <- function(file) {
  con <- file(logs[[file]], open = "wt")
  sink(con)
  sink(con, type = "message")
  on.exit({
    sink(type = "message")
    sink()
    close(con)
  })
  started <- proc.time()[["elapsed"]]
  results <- tryCatch(
    testthat::test_file(
      file.path(dir, file),
      package = "lockstep",
      load_package = "installed",
      stop_on_failure = FALSE,
      stop_on_warning = FALSE,
      # One line per file (no spinner updates).
      reporter = testthat::ProgressReporter$new(
        show_praise = FALSE,
        max_failures = Inf,
        update_interval = Inf
      )
    ),
    error = function(e) {
      cat("testthat: the file did not run:", conditionMessage(e), "\n")
      NULL
    }
  )
  list(
    df = if (is.null(results)) NULL else as.data.frame(results),
    seconds = proc.time()[["elapsed"]] - started
  )
}

cat(sprintf("testthat: %d files in %d processes at once\n", length(files), jobs))
outcome <- parallel::mclapply(
  files_by_length, run_file,
  mc.preschedule = FALSE, mc.cores = jobs, mc.set.seed = TRUE
)
names(outcome) <- files_by_length

passed <- failed <- skipped <- 0L
failed_blocks <- skipped_blocks <- character()
seconds <- setNames(rep(NA_real_, length(files)), files)
for (file in files) {
  cat(sprintf("\n---- %s\n", file))
  if (file.exists(logs[[file]])) {
    cat(readLines(logs[[file]], warn = FALSE), sep = "\n")
  }
  got <- outcome[[file]]
  if (!is.list(got) || is.null(got$df)) {
    why <- if (inherits(got, "try-error")) {
      conditionMessage(attr(got, "condition"))
    } else if (is.null(got)) {
      "its process died (a crash, or killed)"
    } else {
      "it did not run"
    }
    cat(sprintf("testthat: %s FAILED: %s\n", file, why))
    failed <- failed + 1L
    failed_blocks <- c(failed_blocks, sprintf("%s: (the whole file: %s)", file, why))
    next
  }
  seconds[[file]] <- got$seconds
  df <- got$df
  if (nrow(df) == 0L) next
  is_failed <- df$failed > 0 | df$error
  is_skipped <- !is_failed & df$skipped
  passed <- passed + sum(!is_failed & !is_skipped)
  failed <- failed + sum(is_failed)
  skipped <- skipped + sum(is_skipped)
  failed_blocks <- c(failed_blocks, sprintf("%s: %s", file, df$test[is_failed]))
  skipped_blocks <- c(skipped_blocks, sprintf("%s: %s", file, df$test[is_skipped]))
}

cat("\nSeconds per file, longest first:\n")
timed <- sort(seconds, decreasing = TRUE, na.last = TRUE)
cat(sprintf("  %6.1f  %s\n", timed, names(timed)), sep = "")
if (length(skipped_blocks)) {
  cat("\nSkipped test_that blocks:\n")
  cat(sprintf("  %s\n", skipped_blocks), sep = "")
}
if (length(failed_blocks)) {
  cat("\nFailed test_that blocks:\n")
  cat(sprintf("  %s\n", failed_blocks), sep = "")
}
counts(passed, failed, skipped)
quit(save = "no", status = if (failed > 0L) 1L else 0L)
