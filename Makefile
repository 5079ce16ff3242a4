# Developer targets for lockstep (not part of the R package: .Rbuildignore).
#   make setup     install missing Debian packages (tools/setup.sh)
#   make bench-setup  the same, plus rstan, the benchmarks' peer (bench/)
#   make document  Rcpp::compileAttributes() + roxygen2 (NAMESPACE, man/, RcppExports)
#   make install   R CMD INSTALL . (configure picks CUDA when nvcc is found), and the vignettes
#   make demo      install, then run tools/demo.R
#   make check     every test suite (tools/check.sh)
#   make clean     remove build outputs
# LOCKSTEP_CUDA=no|yes|auto in the environment is passed on to configure.

R ?= R
RSCRIPT ?= Rscript

.PHONY: all setup bench-setup document install demo check clean

all: install

setup:
	bash tools/setup.sh

bench-setup:
	bash tools/setup.sh --bench

# compileAttributes() needs a NAMESPACE (it reads useDynLib from it): on a
# fresh tree roxygen writes one first. Roxygen sources R/ rather than compiling.
document:
	$(RSCRIPT) \
	  -e 'if (!file.exists("NAMESPACE")) roxygen2::roxygenise(load_code = "source")' \
	  -e 'Rcpp::compileAttributes()' \
	  -e 'roxygen2::roxygenise(load_code = "source")'

# (then the vignettes, knitted with the installed package: tools/install_vignettes.R)
install: setup
	MAKEFLAGS=-j2 $(R) CMD INSTALL .
	$(RSCRIPT) tools/install_vignettes.R

demo: install
	$(RSCRIPT) tools/demo.R

check: setup
	bash tools/check.sh

clean:
	sh ./cleanup
	rm -rf build lockstep.Rcheck lockstep_*.tar.gz
	rm -f vignettes/*.html vignettes/*.R
