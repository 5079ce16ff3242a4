#!/usr/bin/env bash
# svi() against NumPyro's SVI on the same GPU (issue 36): seed 003's demand model on
# sim_demand(PRODUCTS)'s rows, a mean-field guide, 4 particles, the importance-weighted
# bound; milliseconds per iteration of each and their ratio. Needs R with lockstep
# installed with CUDA, and python3 with numpyro, jax (CUDA) and optax.
#
#   bash bench/svi_demand_gpu.sh [PRODUCTS] [ITERATIONS]     # defaults 1e4, 300
#
# lockstep: bench/svi_demand.R --gpu 1 (double and single; all rows and batch_size 10%),
# which also writes the rows for NumPyro; NumPyro: bench/svi_demand_numpyro.py (float32,
# as JAX computes by default). The ratio is NumPyro's Python-loop time (the seed's
# figures, from svi.run()'s progress bar) over lockstep's single-precision whole-data
# time. Logs go to $OUT when set, else build/gpu/.
set -uo pipefail
cd "$(dirname "$0")/.."
products=${1:-1e4}
iterations=${2:-300}
LOG=${OUT:-build/gpu}
mkdir -p "$LOG"
data="$LOG/demand_$products.bin"
Rscript bench/svi_demand.R --products "$products" --iterations "$iterations" --gpu 1 \
  --fit 0 --export "$data" 2>&1 | tee "$LOG/svi_demand_gpu_R.log"
python3 bench/svi_demand_numpyro.py "$data" --iterations "$iterations" 2>&1 |
  grep -v "^WARNING\|^I0000\|^E0000" | tee "$LOG/svi_demand_numpyro.log"
lockstep=$(sed -n 's/^single, GPU 0, all rows: .*; \([0-9.]*\) ms per iteration.*/\1/p' "$LOG/svi_demand_gpu_R.log")
numpyro=$(sed -n 's/^numpyro, .*: \([0-9.]*\) ms per iteration.*/\1/p' "$LOG/svi_demand_numpyro.log")
if [ -n "$lockstep" ] && [ -n "$numpyro" ]; then
  awk -v l="$lockstep" -v n="$numpyro" \
    'BEGIN { printf "svi() %.2f ms, NumPyro %.2f ms per iteration: NumPyro / svi() = %.2f\n", l, n, n / l }' |
    tee -a "$LOG/svi_demand_numpyro.log"
else
  echo "svi_demand_gpu.sh: a timing is missing (see the logs above)"
  exit 1
fi
