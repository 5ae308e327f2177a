#!/usr/bin/env bash
# MPI equality check (CI, `make mpi-check`): a sweep run by 2 MPI processes
# must print exactly what one process prints (text and JSON) and write the
# same results file, including after a stop-and-resume under MPI.
#   mpi_equal.sh SERIAL_STEPCAST MPI_STEPCAST
set -euo pipefail
serial=$1
mpi=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(mpirun --oversubscribe --allow-run-as-root -np 2)
args=(--gpus 32 --set model.preset=gpt3-1.3b --set training.global_batch=64 --mb 1,2
      --recompute none,full --no-progress)
fail() { echo "FAIL: $*"; exit 1; }

"$serial" sweep "${args[@]}" --out "$tmp/one.csv" >"$tmp/one.txt"
"${mpirun[@]}" "$mpi" sweep "${args[@]}" --out "$tmp/two.csv" >"$tmp/two.txt"
diff "$tmp/one.txt" "$tmp/two.txt" || fail "2-process ranking differs from 1 process"
diff "$tmp/one.csv" "$tmp/two.csv" || fail "2-process results file differs from 1 process"

"$serial" sweep "${args[@]}" --format json --top 25 >"$tmp/one.json"
"${mpirun[@]}" "$mpi" sweep "${args[@]}" --format json --top 25 >"$tmp/two.json"
diff "$tmp/one.json" "$tmp/two.json" || fail "2-process JSON differs from 1 process"

# Stop partway under MPI, resume under MPI: same file as one process.
if "${mpirun[@]}" "$mpi" sweep "${args[@]}" --out "$tmp/three.csv" --stop-after 20 \
  >/dev/null 2>&1; then
  fail "--stop-after did not stop the MPI sweep"
fi
"${mpirun[@]}" "$mpi" sweep "${args[@]}" --out "$tmp/three.csv" --resume >"$tmp/three.txt" 2>/dev/null
diff "$tmp/one.csv" "$tmp/three.csv" || fail "MPI stop+resume file differs from 1 process"
diff "$tmp/one.txt" "$tmp/three.txt" || fail "MPI stop+resume ranking differs from 1 process"
echo "mpi sweep equality: ok ($(($(wc -l <"$tmp/one.csv") - 1)) configs, 2 processes)"
