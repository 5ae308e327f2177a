#!/bin/sh
# calibrate_ddp.sh: fits the ex-situ parameters (calibration.host_module_us,
# host_op_us, host_autograd_us, norm_eff, conv_eff) on the 1-GPU rows of
# validation/ddp/pytorch_ddp_a100_step_times.csv only (compute-only runs:
# the split used for calibration; every multi-GPU row stays held out).
# Grid search minimising the MAPE of those rows; prints the best values and
# its MAPE. The shipped defaults in src/cost/cost.c come from this fit.
#
# usage: tools/calibrate_ddp.sh STEPCAST
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
sc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -F, 'NR == 1 || $3 == 1' "$here/validation/ddp/pytorch_ddp_a100_step_times.csv" >"$tmp/rows.csv"
for f in "$here"/validation/traces/cpu/*.json.gz; do
  "$sc" import cpu "$f" -o "$tmp/$(basename "$f" .json.gz).scw" >/dev/null 2>&1
done
best=""
for m in 60 80 100; do
  for h in 2 4 6; do
    for a in 4 6; do
      for n in 0.50 0.60; do
        for c in 0.85 0.90 0.95 1.00; do
          m1=$(DDP_CSV=$tmp/rows.csv DDP_JOBS=$tmp "$here/tools/validate_ddp.sh" "$sc" \
            --set calibration.host_module_us=$m --set calibration.host_op_us=$h \
            --set calibration.host_autograd_us=$a --set calibration.norm_eff=$n \
            --set calibration.conv_eff=$c |
            sed -n 's/^all rows: MAPE \([0-9.]*\) .*/\1/p')
          echo "host_module_us $m host_op_us $h host_autograd_us $a norm_eff $n conv_eff $c: MAPE $m1 %"
          best=$(printf '%s\n%s %s %s %s %s %s\n' "$best" "$m1" "$m" "$h" "$a" "$n" "$c" | awk 'NF == 6' | sort -g | head -n 1)
        done
      done
    done
  done
done
echo "best: $best (MAPE %, host_module_us, host_op_us, host_autograd_us, norm_eff, conv_eff)"
