#!/usr/bin/env bash
# Runs every test suite of lockstep, never stopping at a failing suite, prints
# per-suite counts and ends with one line `N passed, N failed, N skipped`
# (summed over the suites). Exits non-zero when anything failed.
#
#   a. cpp:    Catch2 tests of the core (tests/cpp, CMake + CTest, build/cpp)
#   b. nvcc:   every src/cuda/*.cu compiled with the package's nvcc flags, and
#              linked with tests/gpu/link_check.cpp and the core, src/core/*.cpp
#              (skipped without nvcc)
#   c. mpi:    the MPI communicator's test (tests/mpi, CMake, build/mpi) run
#              under `mpirun -np 2`; fails when OpenMPI is missing (tools/setup.sh
#              installs it)
#   d. R:      R CMD build (which knits the vignettes), R CMD check
#              --no-manual --no-tests --no-build-vignettes (1 test: fails
#              on ERROR or WARNING), then the testthat suite against the
#              package that check installed (tools/run_testthat.R: its files
#              in LOCKSTEP_TEST_JOBS processes at once, default the cores, at
#              most 4), then an SPMD fit under `mpirun -np 2`, and the MPI
#              fault cases (tests/mpi/faults.sh: one rank fails, every rank
#              ends within seconds)
#
# Each translation unit is compiled once (issue 48): every compiler call goes
# through ccache (tools/setup.sh installs it; its cache in build/ccache, or
# CCACHE_DIR), so that R CMD check's install reuses R CMD build's objects and
# the nvcc suite's, and the MPI test the Catch2 build's core; ccache hashes
# each call's flags and preprocessed source, so nothing built with other flags
# is reused. The nvcc suite links the Catch2 build's core objects.
#
# Environment: LOCKSTEP_CUDA (see configure) applies to the nvcc and R suites;
# CHECK_SUITES="cpp nvcc mpi r" picks suites (default all); LOCKSTEP_CCACHE=no
# compiles without ccache.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
BUILD="$ROOT/build"
mkdir -p "$BUILD"
export MAKEFLAGS="${MAKEFLAGS:--j2}"
SUITES=${CHECK_SUITES:-"cpp nvcc mpi r"}

CCACHE=""
if [ "${LOCKSTEP_CCACHE:-yes}" != no ] && command -v ccache >/dev/null 2>&1; then
  CCACHE=$(command -v ccache)
  export CCACHE_DIR="${CCACHE_DIR:-$BUILD/ccache}"
  # The suites build in different directories (R CMD build's and check's
  # copies of the package): the directory only matters to debug information,
  # which none of these builds has.
  export CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-4G}"
  ccache --zero-stats >/dev/null 2>&1
  echo "compiler cache: $CCACHE (CCACHE_DIR=$CCACHE_DIR)"
else
  echo "compiler cache: none (every suite compiles its own objects; make setup installs ccache)"
fi
# CMake's compiler launcher, where there is a cache
cmake_launcher=()
if [ -n "$CCACHE" ]; then
  cmake_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$CCACHE")
fi

total_passed=0
total_failed=0
total_skipped=0
summary=()

now() { date +%s; }

# record SUITE PASSED FAILED SKIPPED SECONDS
record() {
  total_passed=$((total_passed + $2))
  total_failed=$((total_failed + $3))
  total_skipped=$((total_skipped + $4))
  summary+=("$(printf '%-8s %4d passed, %4d failed, %4d skipped  (%ds)' "$1:" "$2" "$3" "$4" "$5")")
  echo ">>> suite $1: $2 passed, $3 failed, $4 skipped ($5 s)"
}

banner() {
  echo
  echo "================================================================"
  echo "== $*"
  echo "================================================================"
}

# ---------------------------------------------------------------- a. Catch2
suite_cpp() {
  banner "cpp: Catch2 tests of the core (tests/cpp -> build/cpp)"
  local t0 passed=0 failed=0 log="$BUILD/cpp-ctest.log"
  t0=$(now)
  if ! cmake -S tests/cpp -B "$BUILD/cpp" -DCMAKE_BUILD_TYPE= "${cmake_launcher[@]}" >"$BUILD/cpp-cmake.log" 2>&1; then
    cat "$BUILD/cpp-cmake.log"
    echo "cpp: cmake configure FAILED"
    record cpp 0 1 0 $(($(now) - t0))
    return
  fi
  if ! cmake --build "$BUILD/cpp" -j2; then
    echo "cpp: build FAILED (counted as 1 failed test)"
    record cpp 0 1 0 $(($(now) - t0))
    return
  fi
  (cd "$BUILD/cpp" && ctest --output-on-failure -j2 --timeout 300) 2>&1 | tee "$log"
  local line
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    local total
    failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
    total=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
    passed=$((total - failed))
  elif grep -q 'No tests were found' "$log"; then
    echo "cpp: no Catch2 tests yet"
  else
    echo "cpp: ctest gave no summary (counted as 1 failed test)"
    failed=1
  fi
  record cpp "$passed" "$failed" 0 $(($(now) - t0))
}

# ---------------------------------------------------------------- b. nvcc
# The core's objects of the Catch2 build (tests/cpp's target lockstep_core:
# built there already when the cpp suite ran) into the array core_objs.
core_objects() {
  core_objs=()
  cmake -S tests/cpp -B "$BUILD/cpp" -DCMAKE_BUILD_TYPE= "${cmake_launcher[@]}" \
    >"$BUILD/cpp-cmake.log" 2>&1 || { cat "$BUILD/cpp-cmake.log"; return 1; }
  cmake --build "$BUILD/cpp" -j2 --target lockstep_core || return 1
  local f
  while IFS= read -r f; do [ -n "$f" ] && core_objs+=("$f"); done <"$BUILD/cpp/lockstep_core_objects.txt"
  [ ${#core_objs[@]} -gt 0 ]
}

suite_nvcc() {
  banner "nvcc: compile src/cuda/*.cu and link them (never run: no GPU here)"
  local t0 passed=0 failed=0 dir="$BUILD/nvcc"
  t0=$(now)
  rm -rf "$dir"
  mkdir -p "$dir/cfg/src"
  # configure, in a scratch copy, decides as it does for the package and writes
  # the nvcc flags the package uses.
  cp configure "$dir/cfg/" && cp src/Makevars.in "$dir/cfg/src/"
  (cd "$dir/cfg" && sh ./configure) >"$dir/configure.log" 2>&1
  local makevars="$dir/cfg/src/Makevars"
  if [ ! -f "$makevars" ] || ! grep -q '^# CUDA: yes' "$makevars"; then
    cat "$dir/configure.log"
    echo "nvcc: SKIPPED (configure builds no CUDA backend here; counted as 1 skipped)"
    record nvcc 0 0 1 $(($(now) - t0))
    return
  fi
  local nvcc flags
  nvcc=$(sed -n 's/^NVCC = //p' "$makevars")
  flags=$(sed -n 's/^NVCC_FLAGS = //p' "$makevars")
  echo "nvcc: $nvcc"
  echo "flags: $flags"
  local objs=() f o
  # Two at a time (the executor's two precisions take minutes each), from
  # src/ as in the package build (-I../inst/include); each writes its own log.
  local pids=() files=()
  for f in src/cuda/*.cu; do
    [ -e "$f" ] || continue
    o="$dir/$(basename "$f" .cu).o"
    # shellcheck disable=SC2086
    (cd src && $CCACHE "$nvcc" $flags -c "${f#src/}" -o "$o") >"$o.log" 2>&1 &
    pids+=($!)
    files+=("$f")
    if [ ${#pids[@]} -ge 2 ]; then
      wait "${pids[0]}"; echo $? >"$dir/$(basename "${files[0]}" .cu).rc"
      pids=("${pids[@]:1}"); files=("${files[@]:1}")
    fi
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; echo $? >"$dir/$(basename "${files[$i]}" .cu).rc"
  done
  for f in src/cuda/*.cu; do
    [ -e "$f" ] || continue
    o="$dir/$(basename "$f" .cu).o"
    cat "$o.log"
    if [ "$(cat "$dir/$(basename "$f" .cu).rc")" = 0 ] && [ ! -s "$o.log" ]; then
      echo "PASS compile $f"
      passed=$((passed + 1))
      objs+=("$o")
    else
      echo "FAIL compile $f (an error, or a warning: the build must be clean)"
      failed=$((failed + 1))
    fi
  done
  # Without a GPU, configure compiles PTX only (ptxas, the machine code, is
  # most of a build's time: about 15 times the PTX); the tile kernel, the
  # largest, is compiled to sm_80 machine code as well, so ptxas still sees
  # the code.
  local base sass="$dir/tile_kernel_float.sm_80.o"
  base=$(echo "$flags" | sed 's/ -gencode [^ ]*//g')
  if [ -e src/cuda/tile_kernel_float.cu ] && ! echo "$flags" | grep -q 'code=sm_'; then
    # shellcheck disable=SC2086
    if (cd src && $CCACHE "$nvcc" $base -gencode arch=compute_80,code=sm_80 \
          -c cuda/tile_kernel_float.cu -o "$sass") >"$sass.log" 2>&1 && [ ! -s "$sass.log" ]; then
      echo "PASS compile src/cuda/tile_kernel_float.cu to sm_80 machine code"
      passed=$((passed + 1))
    else
      cat "$sass.log"
      echo "FAIL compile src/cuda/tile_kernel_float.cu to sm_80 machine code"
      failed=$((failed + 1))
    fi
  fi
  if [ $((passed + failed)) -eq 0 ]; then
    echo "nvcc: no src/cuda/*.cu files"
  elif [ "$failed" -gt 0 ]; then
    echo "FAIL link (not attempted: a .cu file failed to compile)"
    failed=$((failed + 1))
  elif ! core_objects; then
    echo "FAIL link (the core's objects, target lockstep_core of tests/cpp, did not build)"
    failed=$((failed + 1))
  elif (cd src && "$nvcc" -std=c++17 -I../inst/include -cudart shared \
          ../tests/gpu/link_check.cpp "${core_objs[@]}" "${objs[@]}" -o "$dir/link_check"); then
    echo "PASS link build/nvcc/link_check"
    passed=$((passed + 1))
  else
    echo "FAIL link build/nvcc/link_check"
    failed=$((failed + 1))
  fi
  record nvcc "$passed" "$failed" 0 $(($(now) - t0))
}

# ---------------------------------------------------------------- c. MPI
# Two ranks on this machine, whatever its cores (--oversubscribe), as root
# where need be, over shared memory only (no network): OpenMPI's flags (into
# the caller's `flags` array) and MCA settings; the caller's OMPI_MCA_*
# settings win.
mpirun_setup() {
  if mpirun --version 2>&1 | grep -q 'Open MPI'; then
    flags+=(--oversubscribe)
    if [ "$(id -u)" -eq 0 ]; then
      flags+=(--allow-run-as-root)
    fi
    export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader}"
    # CMA (ptrace) single copy is often refused in containers.
    export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
  fi
}

suite_mpi() {
  banner "mpi: MpiCommunicator test under mpirun -np 2 (tests/mpi -> build/mpi)"
  local t0 passed=0 failed=0 log="$BUILD/mpi-run.log"
  t0=$(now)
  if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicxx >/dev/null 2>&1; then
    echo "mpi: FAILED: MPI is not installed (no mpirun or mpicxx on PATH)."
    echo "     Run 'make setup' (bash tools/setup.sh), which installs the Debian"
    echo "     packages libopenmpi-dev and openmpi-bin."
    record mpi 0 1 0 $(($(now) - t0))
    return
  fi
  if ! cmake -S tests/mpi -B "$BUILD/mpi" -DCMAKE_BUILD_TYPE= "${cmake_launcher[@]}" >"$BUILD/mpi-cmake.log" 2>&1; then
    cat "$BUILD/mpi-cmake.log"
    echo "mpi: cmake configure FAILED (is libopenmpi-dev installed? see tools/setup.sh)"
    record mpi 0 1 0 $(($(now) - t0))
    return
  fi
  if ! cmake --build "$BUILD/mpi" -j2; then
    echo "mpi: build FAILED (counted as 1 failed test)"
    record mpi 0 1 0 $(($(now) - t0))
    return
  fi
  local flags=()
  mpirun_setup
  local rc
  timeout 300 mpirun "${flags[@]}" -np 2 "$BUILD/mpi/test_mpi_communicator" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local counts
  counts=$(grep -E '^mpi-counts: [0-9]+ [0-9]+$' "$log" | tail -n 1)
  if [ -n "$counts" ]; then
    set -- $counts
    passed=$2
    failed=$3
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
      echo "mpi: mpirun exited with status $rc (counted as 1 failed test)"
      failed=1
    fi
  else
    echo "mpi: no counts (mpirun exited with status $rc: aborted, crashed or timed out; counted as 1 failed test)"
    failed=$((failed + 1))
  fi
  record mpi "$passed" "$failed" 0 $(($(now) - t0))
}

# ---------------------------------------------------------------- d. R
suite_r() {
  banner "R: R CMD build, R CMD check --no-manual --no-tests --no-build-vignettes, testthat"
  local t0 t1 passed=0 failed=0 skipped=0 dir="$BUILD/r"
  t0=$(now)
  rm -rf "$dir"
  mkdir -p "$dir/repo/src/contrib"
  # R CMD check looks packages up in getOption("repos") (CRAN, from Debian's
  # Rprofile.site). Point it at an empty local repository so that it never
  # reaches for the network.
  : >"$dir/repo/src/contrib/PACKAGES"
  echo "options(repos = c(LOCAL = 'file://$dir/repo'))" >"$dir/Rprofile"
  export R_PROFILE_USER="$dir/Rprofile"
  # The package's compiles through the cache (R reads this file after the
  # package's Makevars): R CMD check's install finds R CMD build's objects
  # (the two differ only where LOCKSTEP_HAS_CUDA is tested) and the nvcc
  # suite's .cu objects (the same flags).
  if [ -n "$CCACHE" ]; then
    {
      echo "CXX17 = $CCACHE $(R CMD config CXX17)"
      echo 'NVCC := '"$CCACHE"' $(NVCC)'
    } >"$dir/Makevars"
    export R_MAKEVARS_USER="$dir/Makevars"
  fi
  # R CMD build installs the package only to knit the vignettes: CPU-only is
  # enough there (and it proves that the package builds without CUDA), and it
  # saves minutes of nvcc. R CMD check builds for LOCKSTEP_R_CUDA_ARCHS
  # (default "ptx": PTX only, as configure does where no GPU is listed): the
  # nvcc suite has already compiled every .cu.
  if ! (cd "$dir" && LOCKSTEP_CUDA=no R CMD build "$ROOT"); then
    echo "R: R CMD build FAILED (check and testthat not run: 2 failed)"
    record R 0 2 0 $(($(now) - t0))
    return
  fi
  local tarball
  tarball=$(cd "$dir" && ls lockstep_*.tar.gz 2>/dev/null | head -n 1)
  t1=$(now)
  echo "R CMD build: $((t1 - t0)) s"
  # --no-build-vignettes: R CMD build has just knitted every vignette (with
  # the package it installed); check still runs each vignette's R code with
  # the package it installs.
  (cd "$dir" && LOCKSTEP_CUDA_ARCHS="${LOCKSTEP_R_CUDA_ARCHS:-ptx}" \
     R CMD check --no-manual --no-tests --no-build-vignettes "$tarball")
  local log="$dir/lockstep.Rcheck/00check.log" status
  status=$(grep -E '^Status:' "$log" 2>/dev/null | tail -n 1)
  echo "R CMD check: $(($(now) - t1)) s, ${status:-no status}"
  if [ -n "$status" ] && ! echo "$status" | grep -qE 'ERROR|WARNING'; then
    echo "PASS R CMD check ($status)"
    passed=$((passed + 1))
  else
    echo "FAIL R CMD check (${status:-no Status line}); end of 00check.log:"
    tail -n 60 "$log" 2>/dev/null || echo "(no 00check.log)"
    if [ -f "$dir/lockstep.Rcheck/00install.out" ]; then
      echo "---- end of 00install.out:"
      tail -n 40 "$dir/lockstep.Rcheck/00install.out"
    fi
    failed=$((failed + 1))
  fi

  # The testthat suite runs against the package R CMD check installed from the
  # tarball (lockstep.Rcheck/lockstep): the same R CMD INSTALL of the same
  # tarball, without compiling the engine a third time.
  local lib="$dir/lockstep.Rcheck"
  if [ ! -f "$lib/lockstep/DESCRIPTION" ]; then
    echo "R: the package did not install; installing the tarball to see why"
    mkdir -p "$dir/lib"
    if (cd "$dir" && R CMD INSTALL --library="$dir/lib" "$tarball"); then
      lib="$dir/lib"
    else
      echo "FAIL testthat (the package does not install)"
      record R "$passed" $((failed + 1)) 0 $(($(now) - t0))
      return
    fi
  fi
  local t2 out="$dir/testthat.log" counts
  t2=$(now)
  R_LIBS="$lib${R_LIBS:+:$R_LIBS}" Rscript tools/run_testthat.R tests/testthat 2>&1 | tee "$out"
  counts=$(grep -E '^testthat-counts: [0-9]+ [0-9]+ [0-9]+$' "$out" | tail -n 1)
  echo "testthat: $(($(now) - t2)) s"
  if [ -n "$counts" ]; then
    set -- $counts
    passed=$((passed + $2))
    failed=$((failed + $3))
    skipped=$((skipped + $4))
  else
    echo "FAIL testthat (no counts: the runner died)"
    failed=$((failed + 1))
  fi

  # An SPMD fit across two MPI processes, as a user runs it (tests/mpi/spmd_fit.R).
  local spmd="$dir/spmd.log" flags=() rc
  if command -v mpirun >/dev/null 2>&1; then
    mpirun_setup
    R_LIBS="$lib${R_LIBS:+:$R_LIBS}" timeout 300 mpirun "${flags[@]}" -np 2 \
      Rscript tests/mpi/spmd_fit.R 2>&1 | tee "$spmd"
    rc=${PIPESTATUS[0]}
    counts=$(grep -E '^spmd-counts: [0-9]+ [0-9]+$' "$spmd" | tail -n 1)
    if [ -n "$counts" ]; then
      set -- $counts
      passed=$((passed + $2))
      failed=$((failed + $3))
      if [ "$rc" -ne 0 ] && [ "$3" -eq 0 ]; then
        echo "FAIL SPMD fit: mpirun exited with status $rc"
        failed=$((failed + 1))
      fi
    else
      echo "FAIL SPMD fit (no counts: mpirun exited with status $rc)"
      failed=$((failed + 1))
    fi
  else
    echo "FAIL SPMD fit: MPI is not installed (make setup installs it)"
    failed=$((failed + 1))
  fi

  # MPI jobs that fail fast: each way one rank can fail ends every rank
  # within seconds (tests/mpi/faults.sh)
  local faults="$dir/faults.log"
  if command -v mpirun >/dev/null 2>&1; then
    R_LIBS="$lib${R_LIBS:+:$R_LIBS}" MPI_FLAGS="${flags[*]}" timeout 900 bash tests/mpi/faults.sh \
      2>&1 | tee "$faults"
    counts=$(grep -E '^fault-counts: [0-9]+ [0-9]+$' "$faults" | tail -n 1)
    if [ -n "$counts" ]; then
      set -- $counts
      passed=$((passed + $2))
      failed=$((failed + $3))
    else
      echo "FAIL MPI faults (no counts: tests/mpi/faults.sh did not finish)"
      failed=$((failed + 1))
    fi
  fi
  record R "$passed" "$failed" "$skipped" $(($(now) - t0))
}

start=$(now)
for s in $SUITES; do
  case "$s" in
    cpp) suite_cpp ;;
    nvcc) suite_nvcc ;;
    mpi) suite_mpi ;;
    r|R) suite_r ;;
    *) echo "unknown suite '$s'"; record "$s" 0 1 0 0 ;;
  esac
done

echo
echo "================================================================"
echo "== summary ($(($(now) - start)) s)"
if [ -n "$CCACHE" ]; then
  echo "compiler cache: $(ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
    $1 == "cache_miss" { misses = $2 }
    END { printf "%d compiles, %d from the cache", hits + misses, hits }')"
fi
for line in "${summary[@]}"; do
  echo "$line"
done
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
if [ "$total_failed" -gt 0 ]; then
  exit 1
fi
exit 0
