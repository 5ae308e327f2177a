#!/usr/bin/env bash
# Runs the benchmarks against a build directory (default: build). Wall times on
# a shared 2-core machine are noisy; for before/after comparisons use
#   valgrind --tool=callgrind BUILD/bench_engine --quick
set -euo pipefail
build=${1:-build}
"$build/bench_engine"
# Time per simulated rank from 1,024 to 131,072 GPUs (about a minute; peak
# RSS 0.2 GB): docs/PERFORMANCE.md.
"$build/bench_engine" --scaling
# What-if variations: one slow GPU among 131,072, per-GPU variability (docs/WHATIF.md).
"$build/bench_engine" --variation
"$build/bench_sweep"
"$build/bench_import" --mb 200
# Two MPI processes when the MPI variant is built (make mpi).
if [ -x build-mpi/bench_sweep ] && command -v mpirun >/dev/null; then
  mpirun --oversubscribe --allow-run-as-root -np 2 build-mpi/bench_sweep
fi
