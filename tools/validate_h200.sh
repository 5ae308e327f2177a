#!/bin/sh
# validate_h200.sh STEPCAST: the measured H200 training steps
# (validation/h200/train.csv, the three with a Kineto trace in
# validation/traces/h200) against stepcast:
#   in-situ   `import kineto` + `replay`: the traced kernels at their
#             measured durations, the engine's dependencies and host gaps;
#   ex-situ   `import cpu --gpu-trace` + `replay --set cluster.gpu=h200`:
#             every operator priced by the cost model, with the shipped H200
#             defaults (the H100 step-time fit) and with the H200 kernel
#             calibration fitted to validation/h200's kernel data
#             (validation/calibration/kernel-h200.yaml).
# Errors are against the median of 8 unprofiled steps (CUDA events). One
# line per trace, then the mean absolute errors. docs/VALIDATION.md.
set -eu
sc=$1
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pred() { sed -n 's/^predicted step *\([0-9.]*\) ms.*/\1/p'; }
printf '%-26s %9s %9s %9s %9s %9s\n' trace measured traced in-situ ex-dflt ex-kern
# train.csv has quoted fields with commas: split it by hand, columns by name.
awk '
function split_csv(line, f,    n, i, c, q, cur) {
  n = 0; cur = ""; q = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (c == "\"") q = !q
    else if (c == "," && !q) { f[++n] = cur; cur = "" }
    else cur = cur c
  }
  f[++n] = cur
  return n
}
NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
{ split_csv($0, f); if (f[col["trace"]] != "") print f[col["trace"]] "," f[col["step_ms_median"]] "," f[col["profiled_step_ms"]] }
' "$here/validation/h200/train.csv" |
while IFS=, read -r trace med prof; do
  t="$here/validation/traces/h200/$trace"
  # (their warnings: no distributedInfo rank, blocking copies; docs/TRACE.md)
  "$sc" import kineto "$t" -o "$tmp/k.scw" >/dev/null 2>&1
  "$sc" import cpu --gpu-trace "$t" -o "$tmp/c.scw" >/dev/null 2>&1
  ins=$("$sc" replay "$tmp/k.scw" | pred)
  dfl=$("$sc" replay "$tmp/c.scw" --set cluster.gpu=h200 --set training.precision=bf16 | pred)
  krn=$("$sc" replay "$tmp/c.scw" --set cluster.gpu=h200 --set training.precision=bf16 \
          --cluster "$here/validation/calibration/kernel-h200.yaml" | pred)
  echo "$trace $med $prof $ins $dfl $krn"
done | awk '
function pct(p, m) { return 100 * (p / m - 1) }
function abs(x) { return x < 0 ? -x : x }
{
  printf "%-26s %9.2f %9.2f %+8.1f%% %+8.1f%% %+8.1f%%\n", $1, $2, $3, pct($4, $2), pct($5, $2), pct($6, $2)
  n++; si += abs(pct($4, $2)); sd += abs(pct($5, $2)); sk += abs(pct($6, $2))
  if (abs(pct($4, $2)) > wi) wi = abs(pct($4, $2))
  if (abs(pct($6, $2)) > wk) wk = abs(pct($6, $2))
}
END {
  printf "in-situ MAPE %.1f %% (worst %.1f %%); ex-situ MAPE %.1f %% with the defaults, %.1f %% with kernel-h200.yaml (worst %.1f %%), %d traces\n",
    si / n, wi, sd / n, sk / n, wk, n
}'
