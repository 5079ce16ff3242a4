# Progress bars in greta's format:
#     warmup ====================================== 1000/1000 | eta:  0s
#   sampling ======================                 600/1000 | eta:  2s | <1% bad
# written with carriage returns to stderr (as progress bars are), so that
# knitted output and captured stdout stay clean.

# `done`: the iterations already made (a resumed run's), which the eta leaves
# out of its rate.
progress_bar <- function(phase, total, width_total, chains, verbose, done = 0) {
  bar <- new.env(parent = emptyenv())
  bar$name <- switch(phase, warmup = "  warmup", svi = "     svi", "sampling")
  bar$total <- total
  bar$digits <- nchar(width_total)
  bar$chains <- chains
  bar$start <- Sys.time()
  bar$verbose <- verbose && total > 0
  bar$last_width <- 0
  bar$done0 <- done
  bar
}

progress_update <- function(bar, done, bad = 0, final = FALSE, note = "") {
  if (!bar$verbose) return(invisible())
  elapsed <- as.numeric(difftime(Sys.time(), bar$start, units = "secs"))
  made <- done - bar$done0
  eta <- if (made > 0) elapsed / made * (bar$total - done) else NA
  eta_text <- if (is.na(eta)) "  ?" else format_seconds(eta)
  bad_text <- ""
  if (bad > 0) {
    pct <- 100 * bad / (max(done, 1) * bar$chains)
    bad_text <- paste0(" | ", if (pct < 1) "<1" else round(pct), "% bad")
  }
  counter <- sprintf("%*d/%*d", bar$digits, done, bar$digits, bar$total)
  # The bar takes what the console's width leaves, less the longest "| x%
  # bad" (11) whether it shows or not, as greta's does, and one column (a
  # line that fills the last column wraps in some consoles): so the line never
  # wraps, and the bar keeps its length when the suffix appears. Consoles too
  # narrow for a bar get the rest of the line, cut to fit.
  console <- getOption("width", 80)
  text <- nchar(sprintf("  %s  %s | eta: %s", bar$name, counter, eta_text))
  width <- console - 1 - text - max(11, nchar(note))
  bar_text <- if (width >= 5) {
    filled <- round(width * done / max(bar$total, 1))
    paste0(strrep("=", filled), strrep(" ", width - filled), " ")
  } else {
    ""
  }
  line <- sprintf("  %s %s%s | eta: %s%s%s", bar$name, bar_text, counter, eta_text, bad_text, note)
  line <- substr(line, 1, max(1, console - 1))
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
