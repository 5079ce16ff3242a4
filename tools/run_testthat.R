# Runs the testthat suite against the installed lockstep and prints counts.
#   Rscript tools/run_testthat.R [tests/testthat]
# (with the library holding the installed package on R_LIBS or .libPaths()).
# A test_that() block passes when it has no failure and no error; a skipped one
# (skip(), or an empty block) is counted as skipped and listed. The last line
# is machine-readable for tools/check.sh:
#   testthat-counts: <passed> <failed> <skipped>
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

suppressPackageStartupMessages(library(testthat))

results <- tryCatch(
  testthat::test_dir(
    dir,
    package = "lockstep",
    load_package = "installed",
    stop_on_failure = FALSE,
    stop_on_warning = FALSE,
    # One line per file (no spinner updates: the log is read, not watched).
    reporter = testthat::ProgressReporter$new(
      show_praise = FALSE,
      max_failures = Inf,
      update_interval = Inf
    )
  ),
  error = function(e) {
    cat("testthat: the suite did not run:", conditionMessage(e), "\n")
    NULL
  }
)
if (is.null(results)) {
  counts(0L, 1L, 0L)
  quit(save = "no", status = 1L)
}

df <- as.data.frame(results)
failed <- df$failed > 0 | df$error
skipped <- !failed & df$skipped
passed <- !failed & !skipped

if (any(skipped)) {
  cat("\nSkipped test_that blocks:\n")
  cat(sprintf("  %s: %s\n", df$file[skipped], df$test[skipped]), sep = "")
}
if (any(failed)) {
  cat("\nFailed test_that blocks:\n")
  cat(sprintf("  %s: %s\n", df$file[failed], df$test[failed]), sep = "")
}
counts(sum(passed), sum(failed), sum(skipped))
quit(save = "no", status = if (any(failed)) 1L else 0L)
