#!/usr/bin/env bash
# Packs R for a GPU machine that has none: this machine's R (Debian's), the
# packages lockstep and tests/gpu/test_*.R load, lockstep itself as installed
# in a library built with CUDA, and the shared libraries all of them load
# (except the C library's and the C++ runtime's, which the GPU machine has in
# newer versions), into one .tar.xz to unpack at / there:
#   LOCKSTEP_CUDA=yes LOCKSTEP_CUDA_ARCHS=90 R CMD INSTALL --library=LIB .   # here
#   bash tests/gpu/pack_r.sh LIB .rgpu/r.tar.xz                                # here
#   tar -C / -xJf .rgpu/r.tar.xz && export LD_LIBRARY_PATH=/opt/rlibs         # there
#   bash tests/gpu/run.sh                                                     # there
# R's paths are absolute (/usr/lib/R, /etc/R), so it is unpacked at / rather
# than elsewhere; the machine must not have an R of its own there. Help pages
# and documentation are left out, and lockstep's library is stripped of its
# debugging information, to keep the archive small (about 25 MB).
set -euo pipefail
if [ $# -ne 2 ] || [ ! -d "$1/lockstep" ]; then
  echo "usage: pack_r.sh LIBRARY OUT.tar.xz (LIBRARY holds lockstep, built with CUDA)" >&2
  exit 1
fi
lib=$1
out=$(realpath -m "$2")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/lib/R/library" "$stage/usr/lib/R/site-library" "$stage/usr/share/R" \
         "$stage/usr/bin" "$stage/opt/rlibs" "$stage/etc"
cp -a /usr/lib/R/bin /usr/lib/R/lib /usr/lib/R/modules /usr/lib/R/etc "$stage/usr/lib/R/"
cp -a /usr/bin/R /usr/bin/Rscript "$stage/usr/bin/"
cp -a /etc/R "$stage/etc/"
cp -a /usr/share/R/share /usr/share/R/include "$stage/usr/share/R/"
for p in base compiler datasets grDevices graphics grid methods parallel stats tools utils \
         splines lattice; do
  cp -a "/usr/lib/R/library/$p" "$stage/usr/lib/R/library/"
done
# lockstep's imports and testthat's, recursively
packages=$(Rscript -e 'ip <- installed.packages()
  deps <- tools::package_dependencies(c("Rcpp", "coda", "testthat"), db = ip, recursive = TRUE,
                                      which = c("Depends", "Imports", "LinkingTo"))
  cat(setdiff(unique(c("Rcpp", "coda", "testthat", unlist(deps))), rownames(ip)[ip[, "Priority"] %in% "base"]))')
for p in $packages; do
  [ -d "$stage/usr/lib/R/library/$p" ] && continue
  cp -a "$(Rscript -e "cat(find.package('$p'))")" "$stage/usr/lib/R/site-library/"
done
cp -a "$lib/lockstep" "$stage/usr/lib/R/site-library/"
strip --strip-debug "$stage/usr/lib/R/site-library/lockstep/libs/lockstep.so"
find "$stage/usr/lib/R" -type d \( -name help -o -name html -o -name doc -o -name po \
  -o -name tinytest -o -name examples \) -prune -exec rm -rf {} +
find "$stage/usr/lib/R/site-library" -mindepth 2 -maxdepth 2 -type d -name include \
  ! -path '*/lockstep/include' -exec rm -rf {} +
# No X11 windows, data editor, cairo devices or downloads there: what these
# modules load (X, cairo, pango, curl, TLS) would triple the archive.
rm -f "$stage/usr/lib/R/modules/R_X11.so" "$stage/usr/lib/R/modules/R_de.so" \
      "$stage/usr/lib/R/modules/internet.so" "$stage/usr/lib/R/library/grDevices/libs/cairo.so"
find "$stage" \( -name '*.so*' -o -path '*/bin/exec/R' \) -type f | while read -r f; do
  ldd "$f" 2>/dev/null | awk '/=>/ {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libresolv|libstdc\+\+|libgcc_s)\.so' |
  grep -v '^/usr/lib/R' | while read -r l; do
  [ -f "$l" ] && cp -L "$l" "$stage/opt/rlibs/"
done
tar -C "$stage" -cJf "$out" .
echo "pack_r.sh: $out ($(du -h "$out" | cut -f1)); shared libraries: $(ls "$stage/opt/rlibs" | wc -l)"
