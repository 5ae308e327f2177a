#!/bin/sh
# meta.sh STEPCAST: torchtitan-style ex-situ traces (docs/TRACE.md,
# "Tracing as torchtitan trains"): tools/trace_torch.py on meta tensors
# with fused attention (--attention sdpa), an LM head with cross entropy,
# mixed precision, zero_grad(set_to_none) and activation checkpointing (none,
# torchtitan's per-op selective, full). Checks:
#  - a tiny Llama traced on meta tensors imports as it does traced on the
#    CPU (the same ops, give or take the profiler's 4, GPU time within 0.5 %:
#    1,026 against 1,028 ops and 0.18 % seen);
#  - the Llama-3-8B layer shape (2 and 4 layers, 1,024 tokens): one fused
#    attention kernel per layer each way (and one more forward per layer
#    with full recompute); GPU time none < op < full;
#  - re-targeted to TP2, the recomputed row-parallel linears sum their
#    outputs again: one all-reduce more per layer with op (o_proj), two
#    with full (o_proj, down_proj);
#  - with --sequence-parallel (TP2) the all-reduces become all-gathers and
#    reduce-scatters, one per shared input: 27 gathers (6 a layer: before
#    q/k/v and gate/up forward; the output gradients of down_proj and o_proj
#    and the inputs again for the weight gradients in backward; plus the
#    embedding's gradient and the LM head's input twice) and 18
#    reduce-scatters (4 a layer, the embedding's output, the head's input
#    gradient); op adds a reduce-scatter a layer (the recomputed o_proj),
#    full two; a recomputation gathers the inputs, so its layer's backward
#    does not gather them again; GPU time below TP2's without SP;
#  - --compile (torch.compile's fusion) fuses kernels and lowers GPU time;
#  - 2 layers run as 4 (--layers 4) against the 4-layer trace, as traced,
#    TP2, FSDP2, CP2 (the fused attention's ring) and PP2: the same ops and
#    step (host costs at their floor: the GPU sets the pace).
set -eu
sc=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "meta.sh: python3-torch not installed: skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opts="--attention sdpa --loss ce --optimizer adamw --amp bf16 --zero-grad none"
gpu="--set cluster.gpu=h100-sxm --set training.precision=bf16"
host="--set calibration.host_op_us=0.01 --set calibration.host_autograd_us=0.01 --set calibration.host_module_us=0.01"
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }
fail=0

# Meta against CPU: the tiny Llama.
for dev in cpu meta; do
  "$py" "$here/tools/trace_torch.py" tiny-llama $opts --ac op --device $dev -o "$tmp/$dev" >"$tmp/log" ||
    { cat "$tmp/log"; exit 1; }
  "$sc" import cpu "$tmp/$dev"/*.json.gz -o "$tmp/tiny-$dev.scw" >"$tmp/imp" 2>"$tmp/warn"
  if [ -s "$tmp/warn" ]; then echo "tiny-llama $dev: import warnings:"; cat "$tmp/warn"; exit 1; fi
  "$sc" replay "$tmp/tiny-$dev.scw" $gpu $host --format json >"$tmp/tiny-$dev.json"
done
c=$(field priced_ops <"$tmp/tiny-cpu.json") m=$(field priced_ops <"$tmp/tiny-meta.json")
bc=$(field gpu_busy_s <"$tmp/tiny-cpu.json") bm=$(field gpu_busy_s <"$tmp/tiny-meta.json")
echo "tiny-llama: cpu $c ops $bc s, meta $m ops $bm s"
awk -v a="$c" -v b="$m" -v x="$bc" -v y="$bm" 'BEGIN { d = a - b; e = x - y; if (d < 0) d = -d; if (e < 0) e = -e;
  exit !(d <= 4 && e <= 5e-3 * x) }' || { echo "tiny-llama: meta and cpu traces differ"; fail=1; }

# The Llama-3-8B layer shape on meta tensors.
for ac in none op full; do
  for l in 2 4; do
    "$py" "$here/tools/trace_torch.py" llama3-8b --layers $l --seq 1024 $opts --ac $ac --device meta \
      -o "$tmp/$ac-$l" >"$tmp/log" || { cat "$tmp/log"; exit 1; }
    "$sc" import cpu "$tmp/$ac-$l"/*.json.gz -o "$tmp/$ac-$l.scw" >"$tmp/imp" 2>"$tmp/warn"
    if [ -s "$tmp/warn" ]; then echo "$ac $l layers: import warnings:"; cat "$tmp/warn"; exit 1; fi
  done
  "$sc" replay "$tmp/$ac-4.scw" $gpu $host --format json >"$tmp/$ac.json"
  "$sc" replay "$tmp/$ac-4.scw" $gpu $host --scale tp=2 --trace "$tmp/$ac-tp2.trace.json" >/dev/null
  f=$(grep -o '"name":"aten::_scaled_dot_product_flash_attention"' "$tmp/$ac-tp2.trace.json" | wc -l)
  b=$(grep -o '"name":"aten::_scaled_dot_product_flash_attention_backward"' "$tmp/$ac-tp2.trace.json" | wc -l)
  ar=$(grep -o '"name":"tp: all_reduce"' "$tmp/$ac-tp2.trace.json" | wc -l)
  echo "$ac: $(field gpu_busy_s <"$tmp/$ac.json") s busy; TP2: $f / $b attention forward / backward, $ar all-reduces"
  want=4
  [ $ac = full ] && want=8
  [ "$f" -eq $want ] && [ "$b" -eq 4 ] || { echo "$ac: attention kernels $f / $b, want $want / 4"; fail=1; }
  eval "ar_$ac=$ar"
  "$sc" replay "$tmp/$ac-4.scw" $gpu $host --scale tp=2 --format json >"$tmp/$ac-tp2.json"
  "$sc" replay "$tmp/$ac-4.scw" $gpu $host --scale tp=2 --sequence-parallel --format json \
    --trace "$tmp/$ac-sp.trace.json" >"$tmp/$ac-sp.json"
  ag=$(grep -o '"name":"tp: all_gather"' "$tmp/$ac-sp.trace.json" | wc -l)
  rs=$(grep -o '"name":"tp: reduce_scatter"' "$tmp/$ac-sp.trace.json" | wc -l)
  ar=$(grep -o '"name":"tp: all_reduce"' "$tmp/$ac-sp.trace.json" | wc -l)
  bt=$(field gpu_busy_s <"$tmp/$ac-tp2.json") bs=$(field gpu_busy_s <"$tmp/$ac-sp.json")
  echo "$ac: TP2 with SP: $ag all-gathers, $rs reduce-scatters, $ar all-reduces; GPU $bs s (without SP $bt s)"
  # op SAC saves the reduce-scatters' outputs: its recomputed wo does not
  # scatter again (18, as without recompute); full re-runs 2 a layer.
  want=18
  [ $ac = full ] && want=26
  [ "$ag" -eq 27 ] && [ "$rs" -eq $want ] && [ "$ar" -eq 0 ] ||
    { echo "$ac: SP collectives $ag / $rs / $ar, want 27 / $want / 0"; fail=1; }
  awk -v a="$bs" -v b="$bt" 'BEGIN { exit !(a < b) }' || { echo "$ac: SP not below TP2's GPU time"; fail=1; }
done
awk -v a="$(field gpu_busy_s <"$tmp/none.json")" -v b="$(field gpu_busy_s <"$tmp/op.json")" \
  -v c="$(field gpu_busy_s <"$tmp/full.json")" 'BEGIN { exit !(a < b && b < c) }' ||
  { echo "recompute: GPU time not none < op < full"; fail=1; }
[ $((ar_op - ar_none)) -eq 4 ] && [ $((ar_full - ar_none)) -eq 8 ] ||
  { echo "TP2 all-reduces: none $ar_none, op $ar_op, full $ar_full (want +4, +8)"; fail=1; }

# --compile: fewer bytes, GPU time down, kernels fused.
c=$("$sc" replay "$tmp/op-4.scw" $gpu $host --compile --format json)
fk=$(echo "$c" | field fused_kernels) bc=$(echo "$c" | field gpu_busy_s)
echo "op --compile: $fk kernels fused, GPU $bc s (eager $(field gpu_busy_s <"$tmp/op.json") s)"
awk -v n="$fk" -v a="$bc" -v b="$(field gpu_busy_s <"$tmp/op.json")" 'BEGIN { exit !(n > 0 && a < b) }' ||
  { echo "op --compile: nothing fused or no faster"; fail=1; }

# --layers 4 of the 2-layer traces against the 4-layer ones. Within 1 % of
# the ops and 0.2 % of the step, not exactly: the CPU profiler of Debian's
# torch does not record the same operators every time (three traces of
# the 4-layer config: 3,473 / 3,473 / 3,474 events, aten::mul 147 / 147 /
# 146, aten::div 53 / 53 / 55; once in six runs beside another job the
# 4-layer trace came out 2-4 ops and 0.013-0.035 % short; a 2-layer one 6
# short, which pp=2 as 4 layers makes 12 of 3,291 ops, 0.08 %). A layer is
# hundreds of ops and 25 % of the step, so a --layers error still fails.
for ac in none op full; do
  for s in "" "--scale tp=2" "--scale fsdp=2" "--scale cp=2" "--scale pp=2" "--scale tp=2 --sequence-parallel --compile"; do
    a=$("$sc" replay "$tmp/$ac-2.scw" --layers 4 $s $gpu $host --format json)
    b=$("$sc" replay "$tmp/$ac-4.scw" $s $gpu $host --format json)
    ta=$(echo "$a" | field predicted_step_s) tb=$(echo "$b" | field predicted_step_s)
    oa=$(echo "$a" | field ops) ob=$(echo "$b" | field ops)
    echo "$ac ${s:-as traced}: 2 as 4 layers $ta s $oa ops, 4 traced $tb s $ob ops"
    awk -v a="$ta" -v b="$tb" -v x="$oa" -v y="$ob" 'BEGIN { d = a - b; e = x - y; if (d < 0) d = -d;
      if (e < 0) e = -e; exit !(a > 0 && d <= 2e-3 * b && e <= 0.01 * y) }' ||
      { echo "$ac ${s:-as traced}: --layers 4 differs from the 4-layer trace"; fail=1; }
  done
done
exit $fail
