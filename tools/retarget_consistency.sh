#!/bin/sh
# retarget_consistency.sh STEPCAST [TRACE.json.gz]: the consistency table of
# docs/TRACE.md ("Re-targeting to TP and PP"). The ex-situ GPT-2 trace
# (validation/traces/cpu/gpt2-b4.json.gz: GPT2Model, batch 4, sequence 512,
# fp32, unfused attention, SGD) re-targeted by `replay --scale` against the
# synthesized workload of the same shape (`run`, vocabulary 128: the traced
# model has no LM head, so the synthesized one is made negligible) on the
# same GPU, per component, in ms per step.
set -eu
sc=$1
here=$(cd "$(dirname "$0")/.." && pwd)
trace=${2:-$here/validation/traces/cpu/gpt2-b4.json.gz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sc" import cpu "$trace" -o "$tmp/g.scw" >/dev/null
cat >"$tmp/gpt2.yaml" <<'YAML'
model: {name: gpt2-shape, layers: 12, hidden: 768, heads: 12, ffn_hidden: 3072, vocab: 128, seq_len: 512, activation: gelu}
training: {micro_batch: 4, precision: fp32, attention: unfused}
cluster: {gpu: a100-40gb, gpus_per_node: 8}
YAML
printf '| layout | m | source | step | compute (+optimizer) | TP | PP | bubble / idle / host | DP |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for l in "2 1 1 1" "1 2 1 4" "2 2 1 4" "2 2 2 4"; do
  set -- $l
  tp=$1 pp=$2 dp=$3 m=$4
  name="TP$tp PP$pp DP$dp"
  "$sc" replay "$tmp/g.scw" --set cluster.gpu=a100-40gb --set cluster.gpus_per_node=8 \
    --scale "tp=$tp,pp=$pp,dp=$dp" --micro-batches "$m" --format json >"$tmp/r.json"
  "$sc" run "$tmp/gpt2.yaml" --set "parallel.tp=$tp" --set "parallel.pp=$pp" \
    --set "cluster.num_gpus=$((tp * pp * dp))" --set "training.global_batch=$((4 * m * dp))" \
    --format json >"$tmp/s.json"
  python3 - "$tmp/r.json" "$tmp/s.json" "$name" "$m" <<'PY'
import json, sys
r, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
b, c = r["breakdown"], s["breakdown"]
ms = lambda x: "%.2f" % (1e3 * x)
print("| %s | %s | replay | %s | %s | %s | %s | %s | %s |" % (sys.argv[3], sys.argv[4], ms(r["predicted_step_s"]),
      ms(b["compute"] + b["optimizer"]), ms(b["tp_comm"]), ms(b["pp_comm"]), ms(b["gpu_idle_host"]), ms(b["dp_comm"])))
print("| | | run | %s | %s | %s | %s | %s | %s |" % (ms(s["step_time_s"]), ms(c["compute"] + c["optimizer"]),
      ms(c["tp_comm"]), ms(c["pp_comm"]), ms(c["bubble"]), ms(c["dp_comm"])))
PY
done
