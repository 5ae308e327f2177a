#!/bin/sh
# validate_ddp.sh: the ex-situ DDP path against measured PyTorch DDP step
# times (validation/ddp/pytorch_ddp_a100_step_times.csv).
#
# usage: tools/validate_ddp.sh STEPCAST [--md] [--set section.key=value ...]
#
# For every row (model, batch per GPU, GPUs, measured ms) the CPU trace
# validation/traces/cpu/MODEL-bBATCH.json.gz (tools/trace_torch.py) is
# imported once and replayed on the row's cluster: A100-SXM4-40GB, 8 per
# node, NVLink, 200 Gb/s InfiniBand per GPU; `--scale dp=N` adds DDP with
# PyTorch's 25 MiB buckets. Prints one CSV line per row, then MAPE per
# model, per GPU count, for the 1-GPU rows (the calibration split of
# tools/calibrate_ddp.sh) and the multi-GPU rows (held out), and overall.
# --md prints the summary as Markdown tables (docs/VALIDATION.md).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
sc=$1
shift
md=0
if [ "${1:-}" = "--md" ]; then md=1; shift; fi
csv=${DDP_CSV:-$here/validation/ddp/pytorch_ddp_a100_step_times.csv}
traces=$here/validation/traces/cpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# DDP_JOBS: a directory of already imported MODEL-bB.scw (tools/calibrate_ddp.sh).
jobs=${DDP_JOBS:-$tmp}
if [ -z "${DDP_JOBS:-}" ]; then
  for f in "$traces"/*.json.gz; do
    b=$(basename "$f" .json.gz)
    "$sc" import cpu "$f" -o "$tmp/$b.scw" >/dev/null 2>"$tmp/$b.warn" || {
      cat "$tmp/$b.warn" >&2
      exit 1
    }
  done
fi
echo "model,batch_per_gpu,gpus,measured_ms,predicted_ms,error_pct" >"$tmp/rows.csv"
tail -n +2 "$csv" | while IFS=, read -r model batch gpus ms gpu rest; do
  job=$jobs/$model-b$batch.scw
  if [ ! -f "$job" ]; then
    echo "validate_ddp.sh: no trace for $model batch $batch" >&2
    exit 1
  fi
  pred=$("$sc" replay "$job" --ddp --scale "dp=$gpus" --set cluster.gpu=a100-40gb \
    --set cluster.gpus_per_node=8 --set cluster.nic_gbps=200 "$@" --format json |
    sed -n 's/.*"predicted_step_s":\([0-9.e+-]*\).*/\1/p')
  awk -v m="$model" -v b="$batch" -v n="$gpus" -v ms="$ms" -v p="$pred" \
    'BEGIN { pm = p * 1000; printf "%s,%s,%s,%.2f,%.2f,%+.1f\n", m, b, n, ms, pm, 100 * (pm - ms) / ms }' \
    >>"$tmp/rows.csv"
done
awk -F, -v md=$md '
NR == 1 { if (!md) print; next }
{
  if (!md) print
  key = $1 " b" $2
  if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
  cell[key, $3] = sprintf("%+.1f", $6)
  if ($3 == 1) base[key] = $4
  e = $6 < 0 ? -$6 : $6
  pm[$1] += e; nm[$1]++; pg[$3] += e; ng[$3]++
  if ($3 == 1) { c1 += e; n1++ } else { cm += e; nmult++; if (e > worst) { worst = e; wrow = $1 " b" $2 " on " $3 } }
  all += e; n++
}
END {
  if (md) {
    printf "| model, batch per GPU | measured 1 GPU (ms) |"
    for (g = 1; g <= 128; g *= 2) printf " %d |", g
    printf "\n|---|---:|"
    for (g = 1; g <= 128; g *= 2) printf "---:|"
    printf "\n"
    for (i = 1; i <= nk; i++) {
      k = order[i]
      printf "| %s | %.2f |", k, base[k]
      for (g = 1; g <= 128; g *= 2) printf " %s |", ((k, g) in cell) ? cell[k, g] : ""
      printf "\n"
    }
    print ""
    print "| model | MAPE % |"; print "|---|---:|"
    for (k in pm) printf "| %s | %.1f |\n", k, pm[k] / nm[k]
    print ""; print "| GPUs | MAPE % |"; print "|---:|---:|"
    for (g = 1; g <= 128; g *= 2) if (ng[g]) printf "| %d | %.1f |\n", g, pg[g] / ng[g]
    print ""
  } else {
    for (k in pm) printf "model %s: MAPE %.1f %% (%d rows)\n", k, pm[k] / nm[k], nm[k]
    for (g = 1; g <= 128; g *= 2) if (ng[g]) printf "gpus %d: MAPE %.1f %% (%d rows)\n", g, pg[g] / ng[g], ng[g]
  }
  printf "1-GPU rows (calibration): MAPE %.1f %% (%d rows)\n", c1 / n1, n1
  printf "multi-GPU rows (held out): MAPE %.1f %% (%d rows), worst %.1f %% (%s)\n", cm / nmult, nmult, worst, wrow
  printf "all rows: MAPE %.1f %% (%d rows)\n", all / n, n
}' "$tmp/rows.csv"
