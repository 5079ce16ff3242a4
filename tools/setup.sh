#!/usr/bin/env bash
# Installs, from Debian's packages only, what lockstep needs to build, check and
# test, and nothing that is already there. Idempotent: `apt-get update` runs only
# when something must be installed. The CUDA toolkit is not a Debian dependency
# here: configure uses nvcc when it finds one and builds CPU-only otherwise.
# abind, mvtnorm and extraDistr are Suggests: the tests use them as independent
# references, and R CMD check refuses to run without every suggested package.
# posterior, bayesplot and loo are Suggests too: the packages users combine
# lockstep's draws with, which the tests run it against; gridExtra is one of
# bayesplot's Suggests that its mcmc_pairs() (test_interop.R) needs.
# OpenMPI (libopenmpi-dev, openmpi-bin) is for the MPI communicator's test
# (tests/mpi, the "mpi" suite of tools/check.sh); the R package does not use it.
# ccache is for tools/check.sh: every compiler call of `make check` (CMake's,
# nvcc's, R CMD INSTALL's) goes through it, so that a translation unit built
# with the same flags is compiled once (the R suite's two installs share it).
# `setup.sh --bench` (make bench-setup) adds the benchmarks' peer, rstan
# (r-cran-rstan), which bench/hlogit.R and bench/posteriordb.R time lockstep
# against; tests and the package do not need it.
set -euo pipefail

packages=(
  r-base-dev r-cran-rcpp r-cran-coda r-cran-testthat
  r-cran-knitr r-cran-rmarkdown r-cran-roxygen2 r-cran-jsonlite
  r-cran-extradistr r-cran-abind r-cran-mvtnorm catch2 cmake pandoc
  r-cran-posterior r-cran-bayesplot r-cran-loo r-cran-gridextra
  libopenmpi-dev openmpi-bin ccache
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(r-cran-rstan)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  if [ "$status" != "installed" ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
