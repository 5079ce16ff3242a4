#!/usr/bin/env bash
# Builds build/gpu/test_cuda_executor, the Catch2 test of the CUDA executor
# against the CPU executor (tests/gpu/test_cuda_executor.cpp), through
# tests/gpu/Makefile:
#   src/core/*.cpp                     g++ -std=c++17 -O2 -Iinst/include (targets.cpp
#                                      also with -DLOCKSTEP_HAS_CUDA, for the GPU binaries)
#   src/cuda/*.cu                      nvcc with the package's flags (configure's),
#                                      -gencode arch=compute_A,code=sm_A per arch
#   the test and tests/cpp/catch_main  g++ -Itests/cpp
#   linked with the static CUDA runtime (no libcudart.so needed at run time).
# Objects go to build/gpu and are rebuilt only when older than their source or
# a header. The .cu files take minutes each.
#
# Run from the repository root (it changes there itself):
#   bash tests/gpu/build.sh                        # sm_90 (H100, H200)
#   LOCKSTEP_CUDA_ARCHS="80 90" bash tests/gpu/build.sh
#   JOBS=4 bash tests/gpu/build.sh                 # parallel jobs (default 2)
#   bash tests/gpu/build.sh standin                # no CUDA needed: the stand-in build
# then, on a machine with a GPU:
#   ./build/gpu/test_cuda_executor
# Environment: LOCKSTEP_CUDA_ARCHS (default "90"), CUDA_HOME (default
# /usr/local/cuda), NVCC (default $CUDA_HOME/bin/nvcc), LOCKSTEP_NVCC_FLAGS
# (extra nvcc flags), JOBS.
set -euo pipefail
cd "$(dirname "$0")/../.."

export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
export LOCKSTEP_CUDA_ARCHS=${LOCKSTEP_CUDA_ARCHS:-90}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(all)
fi
needs_cuda=0
for t in "${targets[@]}"; do
  case "$t" in standin|clean) ;; *) needs_cuda=1 ;; esac
done
if [ "$needs_cuda" -eq 1 ]; then
  if [ ! -x "$NVCC" ]; then
    echo "build.sh: no nvcc at $NVCC (set NVCC or CUDA_HOME)" >&2
    exit 1
  fi
  if [ ! -f "$CUDA_HOME/lib64/libcudart_static.a" ]; then
    echo "build.sh: no $CUDA_HOME/lib64/libcudart_static.a (set CUDA_HOME)" >&2
    exit 1
  fi
  echo "build.sh: $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p'), architectures: $LOCKSTEP_CUDA_ARCHS"
fi

make -f tests/gpu/Makefile -j"${JOBS:-2}" "${targets[@]}"
