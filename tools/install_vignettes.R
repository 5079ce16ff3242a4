# Knits the vignettes with the installed lockstep and installs them into it,
# so that `make install` (and `make demo`) give vignette(package = "lockstep")
# as installing a built tarball does, without building the package twice (R
# CMD build installs it once more to knit them).
#
#   Rscript tools/install_vignettes.R [library]
#
# Run from the repository root after R CMD INSTALL; `library` is where lockstep
# was installed (default: the first library that has it). Writes each
# vignette's HTML, its source and its R code to <library>/lockstep/doc, and
# the vignette index R reads (Meta/vignette.rds, doc/index.html), as R CMD
# INSTALL does from a built tarball's build/vignette.rds.
args <- commandArgs(trailingOnly = TRUE)
lib <- if (length(args)) args[1] else dirname(find.package("lockstep"))
pkg <- file.path(lib, "lockstep")
if (!dir.exists(pkg)) stop("lockstep is not installed in ", lib)
.libPaths(c(lib, .libPaths()))

work <- file.path(tempdir(), "lockstep-vignettes")
unlink(work, recursive = TRUE)
dir.create(file.path(work, "vignettes"), recursive = TRUE)
invisible(file.copy(list.files("vignettes", full.names = TRUE), file.path(work, "vignettes"),
          recursive = TRUE))
invisible(file.copy("DESCRIPTION", work))
started <- proc.time()[["elapsed"]]
built <- tools::buildVignettes(dir = work, tangle = TRUE, quiet = TRUE)
vigns <- tools::pkgVignettes(dir = work, output = TRUE, source = TRUE)
doc <- file.path(pkg, "doc")
dir.create(doc, showWarnings = FALSE)
invisible(file.copy(c(vigns$docs, unlist(vigns$outputs), unlist(vigns$sources)), doc, overwrite = TRUE))
# the index: what R CMD build records in build/vignette.rds and INSTALL copies
index <- tools:::.build_vignette_index(vigns)
dir.create(file.path(pkg, "Meta"), showWarnings = FALSE)
saveRDS(index, file.path(pkg, "Meta", "vignette.rds"))
tools:::.writeVignetteHtmlIndex("lockstep", file.path(doc, "index.html"), index)
cat(sprintf("installed %d vignette%s into %s (%.0f s)\n", nrow(index),
            if (nrow(index) == 1) "" else "s", doc, proc.time()[["elapsed"]] - started))
