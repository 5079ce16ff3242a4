# The posteriordb models of the acceptance tests, for the bench scripts that
# time or study them (posteriordb.R, metric_choice.R, gradient_posteriordb.R):
# an environment holding tests/testthat/helper-lockstep.R's helpers and
# everything in tests/testthat/test_posteriordb.R but its test_that() blocks
# (posteriordb_posteriors, posteriordb_data(), ...). Run from the repository root.
posteriordb_definitions <- function() {
  if (!file.exists("tests/testthat/test_posteriordb.R")) {
    stop("run the bench scripts from the repository root", call. = FALSE)
  }
  defs <- new.env()
  sys.source("tests/testthat/helper-lockstep.R", envir = defs)
  for (e in parse("tests/testthat/test_posteriordb.R", keep.source = FALSE)) {
    if (!(is.call(e) && identical(e[[1]], as.name("test_that")))) eval(e, defs)
  }
  defs
}
