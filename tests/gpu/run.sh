#!/usr/bin/env bash
# Runs lockstep's GPU tests and the GPU benchmark, on a machine with an NVIDIA
# GPU, from the repository root:
#   bash tests/gpu/run.sh            # builds build/gpu/ first if need be
# 1. build/gpu/test_cuda_executor: the CUDA executor against the CPU executor
#    (every op, every distribution, the seed model; double and single).
# 2. build/gpu/gpu_hlogit: the seed model's gradient on the GPU and the CPU,
#    and a NUTS run on the GPU (bench/gpu_hlogit.cpp); its table goes in
#    bench/RESULTS.md with the device named.
# 3. tests/gpu/test_*.R, where R and an installed lockstep with CUDA exist:
#    the elementwise kernels against R (test_cuda.R), and models written in R
#    run with gpu_only() against the CPU (test_gpu_models.R).
# 4. bench/svi_demand_gpu.sh, where R with lockstep and python3 with numpyro
#    exist: svi() against NumPyro's SVI on seed 003's demand model, on the same
#    GPU (SVI_DEMAND_ARGS: its products and iterations; SVI_DEMAND=0 skips it);
#    its figures go in bench/RESULTS.md too.
# Logs go to $OUT when set (the device tool), else build/gpu/. Exits non-zero
# when a test fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-build/gpu}
mkdir -p "$LOG"
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$LOG/device.txt"
if [ ! -x build/gpu/test_cuda_executor ] || [ ! -x build/gpu/gpu_hlogit ]; then
  bash tests/gpu/build.sh || exit 1
fi
echo "== test_cuda_executor"
build/gpu/test_cuda_executor 2>&1 | tee "$LOG/test_cuda_executor.log" | tail -n 40
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "== gpu_hlogit ${GPU_HLOGIT_ARGS:-}"
# shellcheck disable=SC2086
build/gpu/gpu_hlogit ${GPU_HLOGIT_ARGS:-} 2>&1 | tee "$LOG/gpu_hlogit.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if command -v Rscript >/dev/null 2>&1 && Rscript -e 'library(lockstep)' >/dev/null 2>&1; then
  for t in tests/gpu/test_*.R; do
    name=$(basename "$t" .R)
    echo "== $name.R"
    Rscript "$t" 2>&1 | tee "$LOG/${name}_R.log" | tail -n 12
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
else
  echo "== tests/gpu/test_*.R skipped: no R with lockstep installed here"
fi
if [ "${SVI_DEMAND:-1}" != 0 ] && command -v Rscript >/dev/null 2>&1 &&
  Rscript -e 'library(lockstep)' >/dev/null 2>&1 && python3 -c 'import numpyro' >/dev/null 2>&1; then
  echo "== svi_demand_gpu.sh ${SVI_DEMAND_ARGS:-}"
  # shellcheck disable=SC2086
  bash bench/svi_demand_gpu.sh ${SVI_DEMAND_ARGS:-} || status=1
else
  echo "== bench/svi_demand_gpu.sh skipped (SVI_DEMAND=0, or no R with lockstep or no numpyro)"
fi
exit $status
