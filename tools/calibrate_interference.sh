#!/usr/bin/env bash
# calibrate_interference.sh: refits the shipped `learned` interference model
# (src/cost/interf.c, shipped_w) from the Kineto traces in validation/traces/hta
# and writes validation/calibration/interference-hta.yaml, the record that
# test_interf checks the shipped coefficients against. Rerun it when the
# extraction, the features or the fit change, then copy the printed vector
# into shipped_w and regenerate docs/INTERFERENCE.md's numbers.
#
# usage: tools/calibrate_interference.sh [STEPCAST]   (default build/stepcast)
set -euo pipefail
cli=${1:-build/stepcast}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
cd "$(dirname "$0")/.."
out=validation/calibration/interference-hta.yaml
"$cli" calibrate --interference validation/traces/hta/*.json.gz -o "$out"
echo "shipped_w for src/cost/interf.c (SC_INTERF_FEATURE_LIST order):"
sed -n '/^calibration:/,$p' "$out" | grep '^  interference_w_' | awk '{printf "%s%s", sep, $2; sep=", "} END {print ""}'
