#!/bin/sh
# calibrate_ddp.sh: fits the ex-situ parameters (calibration.host_op_us,
# calibration.conv_eff, calibration.norm_eff) on the 1-GPU rows of
# validation/ddp/pytorch_ddp_a100_step_times.csv only (compute-only runs:
# the split used for calibration; every multi-GPU row stays held out).
# Grid search minimising the MAPE of those rows; prints the best triple and
# its MAPE. The shipped defaults in src/cost.c come from this fit.
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
for h in 8 10 12 14 16 18 20 22; do
  for c in 0.80 0.90 1.00; do
    for n in 0.40 0.50 0.60 0.70 0.80 0.90 1.00; do
      m=$(DDP_CSV=$tmp/rows.csv DDP_JOBS=$tmp "$here/tools/validate_ddp.sh" "$sc" \
        --set calibration.host_op_us=$h --set calibration.conv_eff=$c --set calibration.norm_eff=$n |
        sed -n 's/^all rows: MAPE \([0-9.]*\) .*/\1/p')
      echo "host_op_us $h conv_eff $c norm_eff $n: MAPE $m %"
      best=$(printf '%s\n%s %s %s %s\n' "$best" "$m" "$h" "$c" "$n" | awk 'NF == 4' | sort -g | head -n 1)
    done
  done
done
echo "best: $best (MAPE %, host_op_us, conv_eff, norm_eff)"
