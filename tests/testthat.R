library(testthat)
library(lockstep)

test_check("lockstep")
