# Progress bars in greta's format:
#     warmup ====================================== 1000/1000 | eta:  0s
#   sampling ======================                 600/1000 | eta:  2s | <1% bad
# written with carriage returns to stderr (as progress bars are), so that
# knitted output and captured stdout stay clean.

progress_bar <- function(phase, total, width_total, chains, verbose) {
  bar <- new.env(parent = emptyenv())
  bar$name <- if (phase == "warmup") "  warmup" else "sampling"
  bar$total <- total
  bar$digits <- nchar(width_total)
  bar$chains <- chains
  bar$start <- Sys.time()
  bar$verbose <- verbose && total > 0
  bar$last_width <- 0
  bar
}

progress_update <- function(bar, done, bad = 0, final = FALSE) {
  if (!bar$verbose) return(invisible())
  elapsed <- as.numeric(difftime(Sys.time(), bar$start, units = "secs"))
  eta <- if (done > 0) elapsed / done * (bar$total - done) else NA
  eta_text <- if (is.na(eta)) "  ?" else format_seconds(eta)
  bad_text <- ""
  if (bad > 0) {
    pct <- 100 * bad / (max(done, 1) * bar$chains)
    bad_text <- paste0(" | ", if (pct < 1) "<1" else round(pct), "% bad")
  }
  counter <- sprintf("%*d/%*d", bar$digits, done, bar$digits, bar$total)
  width <- max(10, getOption("width", 80) - nchar(bar$name) - nchar(counter) - 22)
  filled <- round(width * done / max(bar$total, 1))
  line <- sprintf("  %s %s%s %s | eta: %s%s", bar$name, strrep("=", filled),
                  strrep(" ", width - filled), counter, eta_text, bad_text)
  # pad over whatever the previous, possibly longer, line left behind
  padding <- strrep(" ", max(0, bar$last_width - nchar(line)))
  bar$last_width <- nchar(line)
  cat("\r", line, padding, if (final) "\n", sep = "", file = stderr())
  utils::flush.console()
  invisible()
}

format_seconds <- function(s) {
  if (s < 60) return(sprintf("%2ds", round(s)))
  if (s < 3600) return(sprintf("%2dm", round(s / 60)))
  sprintf("%2dh", round(s / 3600))
}
