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
# train.csv has quoted fields with commas: rows split by hand, columns by name.
csv_cols='
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
'
pred() { sed -n 's/^predicted step *\([0-9.]*\) ms.*/\1/p'; }
# The in-step calibration: `calibrate --kernels` on the first trace (the
# calibration trace; the other two are held out), from kernel-h200.yaml.
"$sc" calibrate --kernels "$here/validation/traces/h200/trace_l4_s4096_b2.json.gz" \
  --set training.precision=bf16 --cluster "$here/validation/calibration/kernel-h200.yaml" \
  -o "$tmp/fit.yaml" >/dev/null
printf '%-26s %9s %9s %9s %9s %9s %9s\n' trace measured traced in-situ ex-dflt ex-kern ex-fit
awk "$csv_cols"'
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
  fit=$("$sc" replay "$tmp/c.scw" --set training.precision=bf16 --cluster "$tmp/fit.yaml" | pred)
  echo "$trace $med $prof $ins $dfl $krn $fit"
done | awk '
function pct(p, m) { return 100 * (p / m - 1) }
function abs(x) { return x < 0 ? -x : x }
{
  printf "%-26s %9.2f %9.2f %+8.1f%% %+8.1f%% %+8.1f%% %+8.1f%%\n", $1, $2, $3, pct($4, $2), pct($5, $2),
    pct($6, $2), pct($7, $2)
  if (NR > 1) { nf++; sf += abs(pct($7, $2)); if (abs(pct($7, $2)) > wf) wf = abs(pct($7, $2)) }
  n++; si += abs(pct($4, $2)); sd += abs(pct($5, $2)); sk += abs(pct($6, $2))
  if (abs(pct($4, $2)) > wi) wi = abs(pct($4, $2))
  if (abs(pct($6, $2)) > wk) wk = abs(pct($6, $2))
}
END {
  printf "in-situ MAPE %.1f %% (worst %.1f %%); ex-situ MAPE %.1f %% with the defaults, %.1f %% with kernel-h200.yaml (worst %.1f %%), %d traces\n",
    si / n, wi, sd / n, sk / n, wk, n
  printf "in-step kernel fit on the first trace: held-out MAPE %.1f %% (worst %.1f %%), %d traces\n", sf / nf, wf, nf
}'

# Synthesized: the same eight steps as `stepcast run` configs (Llama-3 8B
# preset cut to the measured layers, sequence and batch; one H200; bf16;
# SDPA's cuDNN attention as PyTorch ran it; full recompute for the
# activation-checkpointing rows): step time and memory against the
# measured median step and peak allocated memory. The synthesized workload
# is Megatron-LM's (fused kernels, bf16 weights with fp32 master copies), not
# transformers' eager layers: a cross-check, not a like-for-like model.
cfg="$tmp/run.yaml"
printf '%-26s %9s %9s %8s %9s %9s %8s\n' config measured run error mem-meas mem-run error
awk "$csv_cols"'
{ split_csv($0, f); print f[col["layers"]], f[col["seq"]], f[col["batch"]], (f[col["activation_checkpointing"]] == "none" ? "none" : "full"), f[col["step_ms_median"]], f[col["peak_allocated_gib"]] }
' "$here/validation/h200/train.csv" |
while read -r L s b ac med mem; do
  cat > "$cfg" <<EOF
model: {preset: llama3-8b, layers: $L, seq_len: $s}
training: {micro_batch: $b, global_batch: $b, precision: bf16, recompute: $ac, attention: cudnn}
parallel: {tp: 1, pp: 1}
cluster: {gpu: h200, num_gpus: 1}
EOF
  out=$("$sc" run "$cfg" --format json 2>/dev/null | tr ',' '\n')
  t=$(echo "$out" | sed -n 's/^[{ ]*"step_time_s": *\([0-9.e+-]*\).*/\1/p' | head -n 1)
  m=$(echo "$out" | sed -n 's/^[{ ]*"memory_gib": *\([0-9.e+-]*\).*/\1/p' | head -n 1)
  echo "L$L-s$s-b$b-ac:$ac $med $t $mem $m"
done | awk '
function abs(x) { return x < 0 ? -x : x }
{
  e = 100 * ($3 * 1000 / $2 - 1); em = 100 * ($5 / $4 - 1)
  printf "%-26s %9.2f %9.2f %+7.1f%% %9.2f %9.2f %+7.1f%%\n", $1, $2, $3 * 1000, e, $4, $5, em
  n++; st += abs(e); sm += abs(em)
}
END { printf "synthesized: step time MAPE %.1f %%, memory MAPE %.1f %%, %d configs\n", st / n, sm / n, n }'
