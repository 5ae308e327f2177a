#!/bin/sh
# retarget_consistency.sh STEPCAST [gpt2|bert|llama]: the consistency
# tables of docs/TRACE.md ("Re-targeting to TP and PP"). An ex-situ trace
# re-targeted by `replay --scale` against the synthesized workload of the
# same shape (`run`, vocabulary 128: the traced models have no LM head, so
# the synthesized one is made negligible) on the same GPU, per component,
# in ms per step:
#   gpt2   validation/traces/cpu/gpt2-b4.json.gz: GPT2Model, batch 4,
#          sequence 512, fp32, unfused attention, SGD (layouts TP2, PP2,
#          TP2 x PP2, TP2 x PP2 x DP2);
#   bert   bert-large-l4-b4.json.gz: BERT-Large's layer (hidden 1024, 16
#          heads, FFN 4096), 4 layers, batch 4, sequence 512;
#   llama  llama3-8b-l2-b1.json.gz: Llama-3-8B's layer (hidden 4096, 32
#          heads, 8 KV heads, SwiGLU 14336), 2 layers, batch 1, sequence 1024.
# bert and llama give TP2, PP2 (4 micro-batches), TP2 x PP2 and CP2 (the
# synthesized CP needs FlashAttention: that row's run uses it).
set -eu
sc=$1
which=${2:-gpt2}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $which in
gpt2)
  trace=$here/validation/traces/cpu/gpt2-b4.json.gz mb=4
  model='{name: gpt2-shape, layers: 12, hidden: 768, heads: 12, ffn_hidden: 3072, vocab: 128, seq_len: 512, activation: gelu}'
  layouts="2:1:1:1:1 1:2:1:1:4 2:2:1:1:4 2:2:1:2:4" ;;
bert)
  trace=$here/validation/traces/cpu/bert-large-l4-b4.json.gz mb=4
  model='{name: bert-large-shape, layers: 4, hidden: 1024, heads: 16, ffn_hidden: 4096, vocab: 128, seq_len: 512, activation: gelu}'
  layouts="2:1:1:1:1 1:2:1:1:4 2:2:1:1:4 1:1:2:1:1" ;;
llama)
  trace=$here/validation/traces/cpu/llama3-8b-l2-b1.json.gz mb=1
  model='{name: llama3-8b-shape, layers: 2, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, vocab: 128, seq_len: 1024, activation: swiglu}'
  layouts="2:1:1:1:1 1:2:1:1:4 2:2:1:1:4 1:1:2:1:1" ;;
*) echo "retarget_consistency.sh: gpt2, bert or llama, not $which" >&2; exit 2 ;;
esac
"$sc" import cpu "$trace" -o "$tmp/g.scw" >/dev/null
cat >"$tmp/m.yaml" <<YAML
model: $model
training: {micro_batch: $mb, precision: fp32, attention: unfused}
cluster: {gpu: a100-40gb, gpus_per_node: 8}
YAML
printf '| layout | m | source | step | compute (+optimizer) | TP | CP | PP | bubble / idle / host | DP |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for l in $layouts; do
  IFS=: read -r tp pp cp dp m <<L
$l
L
  name="TP$tp PP$pp CP$cp DP$dp"
  attn=unfused
  [ "$cp" -gt 1 ] && attn=flash
  "$sc" replay "$tmp/g.scw" --set cluster.gpu=a100-40gb --set cluster.gpus_per_node=8 \
    --scale "tp=$tp,pp=$pp,cp=$cp,dp=$dp" --micro-batches "$m" --format json >"$tmp/r.json"
  "$sc" run "$tmp/m.yaml" --set "parallel.tp=$tp" --set "parallel.pp=$pp" --set "parallel.cp=$cp" \
    --set "training.attention=$attn" --set "cluster.num_gpus=$((tp * pp * cp * dp))" \
    --set "training.global_batch=$((mb * m * dp))" --format json >"$tmp/s.json"
  python3 - "$tmp/r.json" "$tmp/s.json" "$name" "$m" "$attn" <<'PY'
import json, sys
r, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
b, c = r["breakdown"], s["breakdown"]
ms = lambda x: "%.2f" % (1e3 * x)
print("| %s | %s | replay | %s | %s | %s | %s | %s | %s | %s |" % (sys.argv[3], sys.argv[4], ms(r["predicted_step_s"]),
      ms(b["compute"] + b["optimizer"]), ms(b["tp_comm"]), ms(b["cp_comm"]), ms(b["pp_comm"]), ms(b["gpu_idle_host"]),
      ms(b["dp_comm"])))
print("| | | run%s | %s | %s | %s | %s | %s | %s | %s |" % (" (flash)" if sys.argv[5] == "flash" else "",
      ms(s["step_time_s"]), ms(c["compute"] + c["optimizer"]), ms(c["tp_comm"]), ms(c["cp_comm"]), ms(c["pp_comm"]),
      ms(c["bubble"]), ms(c["dp_comm"])))
PY
done
