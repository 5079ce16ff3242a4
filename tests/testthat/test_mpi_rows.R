# mpi_rows(n, groups = g)'s share of the rows, without MPI: rank_rows() for
# every rank of a run of `size` processes.

shares <- function(n, size, groups = NULL) {
  lapply(seq_len(size) - 1L, function(r) lockstep:::rank_rows(n, r, size, groups))
}

test_that("without groups the ranks' blocks cover the rows once, in order", {
  for (size in 1:5) {
    s <- shares(103, size)
    expect_identical(unlist(s), seq_len(103))
    expect_lte(max(lengths(s)) - min(lengths(s)), 1)
  }
})

test_that("with groups every rank gets whole groups, a contiguous range of them, balanced by rows", {
  set.seed(41)
  n <- 5000
  G <- 120
  # rows in any order, groups of very different sizes, a few groups empty
  g <- sample(seq_len(G), n, replace = TRUE, prob = rexp(G) * (seq_len(G) %% 17 != 0))
  for (size in 1:6) {
    s <- shares(n, size, g)
    rows <- unlist(lapply(s, as.vector))
    expect_setequal(rows, seq_len(n))
    expect_equal(length(rows), n)  # each row once
    owned <- lapply(s, attr, "groups")
    # whole groups: no group's rows on two ranks, and each rank's rows are
    # exactly its groups'
    expect_identical(anyDuplicated(unlist(owned)), 0L)
    for (r in seq_len(size)) {
      expect_true(all(g[s[[r]]] %in% owned[[r]]))
      expect_identical(as.vector(s[[r]]), which(g %in% owned[[r]]))
      if (length(owned[[r]]) > 0) {  # a range of groups (the empty ones no rank's)
        range <- seq(min(owned[[r]]), max(owned[[r]]))
        expect_identical(owned[[r]], range[range %in% g])
      }
    }
    # ranges in rank order
    firsts <- vapply(owned, function(o) if (length(o)) min(o) else NA_real_, numeric(1))
    expect_false(is.unsorted(firsts, na.rm = TRUE))
    # balanced: each rank within a largest group's rows of an even share
    expect_lte(max(abs(lengths(s) - n / size)), max(tabulate(g)))
  }
})

test_that("mpi_rows() refuses groups that are not a group per row", {
  expect_error(lockstep:::check_row_groups(c(1, 2, NA), 3), "row 3 has NA")
  expect_error(lockstep:::check_row_groups(c(1, 0, 2), 3), "row 2 has 0")
  expect_error(lockstep:::check_row_groups(c(1, 2.5, 2), 3), "row 2 has 2.5")
  expect_error(lockstep:::check_row_groups(c(1, 2), 3), "each of the 3 rows, but has 2")
  expect_error(lockstep:::check_row_groups(c("a", "b", "c"), 3), "vector of group numbers")
  expect_error(lockstep:::check_row_groups(matrix(1, 3, 2), 3), "vector of group numbers")
  expect_null(lockstep:::check_row_groups(NULL, 3))
  expect_null(lockstep:::check_row_groups(c(3, 1, 1), 3))
})

test_that("mpi_stats(draws =) is for runs across processes, and says so", {
  d <- mcmc(model(normal(0, 1)), n_samples = 5, warmup = 5, chains = 1, verbose = FALSE)
  expect_null(attr(d, "model_info")$mpi)
  expect_error(mpi_stats(draws = d), "not made across MPI processes")
  expect_error(mpi_stats(draws = 1), "must be the draws of mcmc\\(\\) or extra_samples\\(\\)")
})
