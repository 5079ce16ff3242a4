# mcmc()'s progress bar (R/progress.R): greta's format, never wider than the
# console (issue 38: at 80 columns the "| x% bad" suffix made every update wrap).

progress_lines <- function(width, updates, total = 1000, chains = 4) {
  old <- options(width = width)
  on.exit(options(old))
  bar <- lockstep:::progress_bar("sampling", total, total, chains, TRUE)
  out <- capture.output(type = "message", for (u in updates) {
    lockstep:::progress_update(bar, u$done, u$bad, final = u$done == total)
  })
  strsplit(paste(out, collapse = "\n"), "\r")[[1]][-1]
}

test_that("the progress bar fits the console at widths 40, 80 and 200, and keeps its length when the bad count appears", {
  updates <- list(list(done = 0, bad = 0), list(done = 10, bad = 0),
                  list(done = 600, bad = 3), list(done = 700, bad = 2700),
                  list(done = 1000, bad = 4000))
  for (width in c(40, 80, 200)) {
    lines <- trimws(progress_lines(width, updates), "right")
    expect_length(lines, 5)
    expect_true(all(nchar(lines) <= width - 1), info = paste(width, lines))
    if (width >= 80) {
      # greta's format, the bar as long before the suffix as after it
      expect_match(lines[3], "^  sampling =+ +600/1000 \\| eta: +[0-9?]+s? \\| <1% bad$")
      expect_match(lines[4], "\\| 96% bad$")
      bar_end <- function(l) regexpr("/1000", l, fixed = TRUE)
      expect_equal(bar_end(lines[2]), bar_end(lines[4]))
      expect_match(lines[5], "^  sampling =+ 1000/1000 \\| eta: +0s \\| 100% bad$")
    }
  }
})

test_that("a whole run's progress at 80 columns is one line per phase", {
  old <- options(width = 80)
  on.exit(options(old))
  x <- normal(0, 0.01)
  # divergences from the first iteration: the suffix shows throughout
  err <- capture.output(type = "message", suppressWarnings(
    mcmc(model(x), sampler = hmc(epsilon = 10), warmup = 20, n_samples = 20, chains = 2,
         pb_update = 5)))
  lines <- unlist(strsplit(err, "\r"))
  lines <- trimws(lines[nzchar(trimws(lines))], "right")
  expect_true(any(grepl("% bad", lines)))
  # a warmup rescue's message (when warmup moves a chain) is a line of its
  # own, never on a bar's line; the bars' lines fit
  bars <- grepl("^ *(warmup|sampling) [= ]", lines)
  expect_false(any(bars & grepl("warmup iteration", lines)), info = paste(lines, collapse = "\n"))
  expect_true(all(nchar(lines[bars]) <= 79), info = paste(lines, collapse = "\n"))
})
