#!/usr/bin/env bash
# MPI jobs that fail fast and lose nothing (issue 51): runs tests/mpi/fault.R
# under `mpirun -np 2` for each way rank 1 can fail, and checks that every
# rank is gone within 10 seconds of the failure, that the job's exit status
# is non-zero, and that its output names the failing rank and why; that a
# job where nothing fails ends normally; and (tests/mpi/checkpoint.R) that a
# job writing checkpoints, its ranks killed with SIGKILL part-way, resumes
# under mpirun to the draws of the job that was not stopped, on every rank.
# Prints "fault-counts: <passed> <failed>" last. tools/check.sh runs it in the R suite, with R_LIBS holding
# the package R CMD check installed and MPI_FLAGS its mpirun flags.
#   bash tests/mpi/faults.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
passed=0
failed=0
check() {  # check OK WHAT
  if [ "$1" = 1 ]; then
    echo "PASS $2"
    passed=$((passed + 1))
  else
    echo "FAIL $2"
    failed=$((failed + 1))
  fi
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# case, what the output must say (an extended regular expression)
cases=(
  "na|rank 1 of 2 failed.*missing values"
  "stop|rank 1 of 2 failed.*rank 1 gave up before mcmc"
  "exception|rank 1 of 2 failed.*(free|values|columns)"
  "shape|rank [01] of 2 failed.*models differ in their distributions"
  "kill|(rank 1|process rank 1|signal 9|Killed)"
)
for entry in "${cases[@]}"; do
  c=${entry%%|*}
  want=${entry#*|}
  stamp="$work/$c.stamp"
  log="$work/$c.log"
  # shellcheck disable=SC2086
  timeout 120 mpirun ${MPI_FLAGS:-} -np 2 Rscript tests/mpi/fault.R "$c" "$stamp" >"$log" 2>&1
  rc=$?
  ended=$(date +%s.%N)
  echo "--- case $c: exit status $rc"
  tail -n 15 "$log" | sed 's/^/    /'
  check $([ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && echo 1 || echo 0) \
    "$c: the job ends with a non-zero status, not by the time limit (status $rc)"
  if [ -f "$stamp" ]; then
    took=$(awk -v a="$ended" -v b="$(cat "$stamp")" 'BEGIN { printf "%.1f", a - b }')
    check $(awk -v t="$took" 'BEGIN { print (t < 10) ? 1 : 0 }') \
      "$c: every rank gone within 10 s of the failure (${took} s)"
  else
    check 0 "$c: the failing rank wrote its time"
  fi
  check $(grep -Eq "$want" "$log" && echo 1 || echo 0) "$c: the output says which rank failed and why"
  if [ "$c" != kill ]; then
    check $(grep -q "finished on rank 0" "$log" && echo 0 || echo 1) "$c: rank 0 did not go on"
  fi
done
# the control: nothing fails
timeout 300 mpirun ${MPI_FLAGS:-} -np 2 Rscript tests/mpi/fault.R none "$work/none.stamp" \
  >"$work/none.log" 2>&1
rc=$?
check $([ "$rc" -eq 0 ] && grep -q "finished on rank 0" "$work/none.log" && echo 1 || echo 0) \
  "none: a job where nothing fails ends normally (status $rc)"

# checkpoints across ranks: killed with SIGKILL in sampling, then resumed
ck="$work/ck"
timeout 300 mpirun ${MPI_FLAGS:-} -np 2 Rscript tests/mpi/checkpoint.R reference "$work/ref.rds" \
  >"$work/ref.log" 2>&1
timeout 300 mpirun ${MPI_FLAGS:-} -np 2 Rscript tests/mpi/checkpoint.R run "$ck" \
  >"$work/run.log" 2>&1 &
job=$!
# (20 checkpoints of every 25 iterations: 100 iterations into sampling)
for _ in $(seq 1 1200); do
  n=$(ls "$ck"/draws_*.rds 2>/dev/null | wc -l)
  [ "$n" -ge 20 ] && break
  sleep 0.05
done
sleep 0.0$((RANDOM % 10))
pkill -9 -f -- "--file=tests/mpi/checkpoint.R --args run $ck"
wait "$job"
rc=$?
n=$(ls "$ck"/draws_*.rds 2>/dev/null | wc -l)
check $([ "$rc" -ne 0 ] && [ "$n" -ge 20 ] && [ "$n" -lt 32 ] && echo 1 || echo 0) \
  "checkpoint: the job was killed part-way (status $rc, $n of 32 checkpoints' draws)"
timeout 300 mpirun ${MPI_FLAGS:-} -np 2 Rscript tests/mpi/checkpoint.R resume "$ck" "$work/res.rds" \
  >"$work/res.log" 2>&1
rc=$?
tail -n 5 "$work/res.log" | sed 's/^/    /'
check $([ "$rc" -eq 0 ] && grep -q "checkpoint.R: resumed" "$work/res.log" && echo 1 || echo 0) \
  "checkpoint: resumed under mpirun -np 2 (status $rc)"
same=$(Rscript -e "cat(all(vapply(0:1, function(r) identical(readRDS(paste0('$work/ref.rds.', r)),
  readRDS(paste0('$work/res.rds.', r))), NA)))" 2>/dev/null)
check $([ "$same" = TRUE ] && echo 1 || echo 0) \
  "checkpoint: every rank's resumed draws are identical to the uninterrupted job's"
echo "fault-counts: $passed $failed"
