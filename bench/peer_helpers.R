# What the bench scripts that time lockstep against rstan share (mixture.R,
# families.R, posteriordb.R, hlogit.R, hlogit_nuts.R). Run them from the repository root, which is
# where they source this from.

# The median of `reps` timings of f(), each of enough calls to last ~0.2 s:
# calls per timing are doubled until a batch takes 20 ms (system.time()
# counts milliseconds, so one fast call reads as 0), then scaled to 0.2 s.
per_call <- function(f, reps = 5) {
  f()
  inner <- 1L
  while ((t <- system.time(for (j in seq_len(inner)) f())[["elapsed"]]) < 0.02) inner <- 2L * inner
  inner <- max(1L, as.integer(ceiling(inner * 0.2 / t)))
  stats::median(vapply(seq_len(reps), function(r) {
    system.time(for (j in seq_len(inner)) f())[["elapsed"]] / inner
  }, numeric(1)))
}

# Debian's r-cran-bh is empty and relies on /usr/include/boost (as in
# ../shared/peers/compile.R): point rstan at a folder holding only a link to it.
fix_boost <- function() {
  if (!file.exists(rstan::rstan_options("boost_lib"))) {
    bdir <- file.path(tempdir(), "boost_inc")
    dir.create(bdir, showWarnings = FALSE)
    file.symlink("/usr/include/boost", file.path(bdir, "boost"))
    rstan::rstan_options(boost_lib = bdir)
  }
}

# The Stan program `src` compiled by `peers_dir`/compile.R (which handles
# Debian's Boost itself) and saved as `out`, unless `out` already exists: the
# path of the saved stanmodel. It runs in a child process.
cached_stan_model <- function(src, out, peers_dir) {
  if (file.exists(out)) return(out)
  dir.create(dirname(out), showWarnings = FALSE, recursive = TRUE)
  cat(sprintf("compiling %s with rstan (about a minute; cached as %s)\n", basename(src), out))
  rc <- system2(file.path(R.home("bin"), "Rscript"),
                c(shQuote(file.path(peers_dir, "compile.R")), shQuote(src), shQuote(out)))
  if (rc != 0 || !file.exists(out)) stop("compiling ", src, " failed", call. = FALSE)
  out
}
