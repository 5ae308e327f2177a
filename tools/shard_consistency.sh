#!/bin/sh
# shard_consistency.sh STEPCAST gpt2|bert|llama [DIR]: the per-rank shard table
# of docs/TRACE.md ("Per-rank shards"). The same model two ways on
# A100-80GB, 8 per node: the whole-model ex-situ trace re-targeted by
# graph rewriting (`replay --scale tp=..,pp=..`, src/trace/shard.c) and the
# per-rank shard traces (tools/trace_torch.py --tp 2 --pp-stage K/2, one
# per stage, imported into one job), at TP2 (1 micro-batch), PP2 and
# TP2 x PP2 (4 micro-batches, 1F1B); ms per step, mean over the stage
# programs: the step, GEMMs (mm, addmm), the attention core's kernels
# (batched score GEMMs, softmax forward and backward), the other compute
# (+optimizer), exposed TP and PP communication, bubble / idle / host.
# Then the costs after tracing: the traces' size (gzip), the .scw's, and
# the wall time of import and of replay (best of 3 runs).
#   gpt2   DIR/gpt2-b4.json.gz and, in DIR/shards, gpt2-tp2-b4, -s0of2-/-s1of2-b4,
#          -tp2-s0of2-/-tp2-s1of2-b4
#   bert   DIR/shards/bert-large-b4.json.gz (the whole model, with module paths),
#          DIR/shards/bert-large-tp2-b4, ... (as gpt2)
#   llama  DIR/llama3-8b-l2-b1.json.gz and DIR/shards/llama3-8b-l2-tp2-b1, ...
# DIR defaults to validation/traces/cpu (the shards in DIR/shards, or DIR
# itself when it has no shards folder).
set -eu
sc=$1
which=${2:-gpt2}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${3:-$here/validation/traces/cpu}
sdir=$dir/shards
[ -d "$sdir" ] || sdir=$dir
case $which in
gpt2) full=gpt2 b=b4 ;;
bert) full=bert-large b=b4 ;;
llama) full=llama3-8b-l2 b=b1 ;;
*) echo "shard_consistency.sh: gpt2, bert or llama, not $which" >&2; exit 2 ;;
esac
# The whole-model trace: in the shards folder when traced there (with module
# paths; the one beside it may predate them), else beside it.
whole=$dir/$full-$b.json.gz
[ -f "$sdir/$full-$b.json.gz" ] && whole=$sdir/$full-$b.json.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gpu="--set cluster.gpu=a100-80gb --set cluster.gpus_per_node=8"
best3() { # best wall time of 3 runs of the command, s
  python3 - "$@" <<'PY'
import subprocess, sys, time
best = 1e9
for _ in range(3):
    t0 = time.time()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    best = min(best, time.time() - t0)
print("%.3f" % best)
PY
}
shards_of() {
  case $1 in
  tp2) echo "$sdir/$full-tp2-$b.json.gz" ;;
  pp2) echo "$sdir/$full-s0of2-$b.json.gz $sdir/$full-s1of2-$b.json.gz" ;;
  tp2pp2) echo "$sdir/$full-tp2-s0of2-$b.json.gz $sdir/$full-tp2-s1of2-$b.json.gz" ;;
  esac
}
printf '| layout | m | source | step | GEMM | attention | other compute | TP | PP | bubble / idle / host |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for l in tp2:2:1:1 pp2:1:2:4 tp2pp2:2:2:4; do
  IFS=: read -r name tp pp m <<L
$l
L
  shards=$(shards_of $name)
  for src in rewriting shards; do
    if [ $src = rewriting ]; then
      "$sc" import cpu "$whole" -o "$tmp/j.scw" >/dev/null 2>&1
      # shellcheck disable=SC2086
      "$sc" replay "$tmp/j.scw" $gpu --scale "tp=$tp,pp=$pp" --micro-batches "$m" --format json >"$tmp/r.json"
    else
      # shellcheck disable=SC2086
      "$sc" import cpu $shards -o "$tmp/j.scw" >/dev/null 2>&1
      # shellcheck disable=SC2086
      "$sc" replay "$tmp/j.scw" $gpu --micro-batches "$m" --format json >"$tmp/r.json"
    fi
    # shellcheck disable=SC2086
    "$sc" replay "$tmp/j.scw" $gpu $([ $src = rewriting ] && echo "--scale tp=$tp,pp=$pp") --micro-batches "$m" \
      --trace "$tmp/t.json" >/dev/null
    python3 - "$tmp/r.json" "$tmp/t.json" "$name" "$m" "$src" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
ev = t["traceEvents"] if isinstance(t, dict) else t
pids = {e["pid"] for e in ev if e.get("ph") == "X"}
gemm = attn = 0.0
for e in ev:
    if e.get("ph") != "X" or e.get("cat") != "compute":
        continue
    n = e["name"]
    if n in ("aten::mm", "aten::addmm"):
        gemm += e["dur"]
    elif n in ("aten::bmm", "aten::baddbmm", "aten::_softmax", "aten::_softmax_backward_data"):
        attn += e["dur"]
k = len(pids) or 1
gemm, attn = gemm / k / 1e3, attn / k / 1e3  # us -> ms, per stage program
b = r["breakdown"]
ms = lambda x: "%.2f" % (1e3 * x)
comp = 1e3 * (b["compute"] + b["optimizer"])
name = {"tp2": "TP2", "pp2": "PP2", "tp2pp2": "TP2 x PP2"}[sys.argv[3]]
first = sys.argv[5] == "rewriting"
print("| %s | %s | %s | %s | %.2f | %.2f | %.2f | %s | %s | %s |" % (
    name if first else "", sys.argv[4] if first else "", "replay --scale" if first else "shard traces",
    ms(r["predicted_step_s"]), gemm, attn, comp - gemm - attn, ms(b["tp_comm"]), ms(b["pp_comm"]),
    ms(b["gpu_idle_host"])))
PY
  done
done
echo
printf '| layout | source | traces (gzip) | .scw | import (s) | replay (s) |\n'
printf '|---|---|---|---|---|---|\n'
"$sc" import cpu "$whole" -o "$tmp/full.scw" >/dev/null 2>&1
ti=$(best3 "$sc" import cpu "$whole" -o "$tmp/full.scw")
for l in tp2:2:1:1 pp2:1:2:4 tp2pp2:2:2:4; do
  IFS=: read -r name tp pp m <<L
$l
L
  shards=$(shards_of $name)
  # shellcheck disable=SC2086
  tr=$(best3 "$sc" replay "$tmp/full.scw" $gpu --scale "tp=$tp,pp=$pp" --micro-batches "$m")
  # shellcheck disable=SC2086
  si=$(best3 "$sc" import cpu $shards -o "$tmp/sh.scw")
  # shellcheck disable=SC2086
  sr=$(best3 "$sc" replay "$tmp/sh.scw" $gpu --micro-batches "$m")
  # shellcheck disable=SC2086
  sz=$(cat $shards | wc -c)
  label=$(echo "$name" | sed 's/tp2pp2/TP2 x PP2/; s/tp2/TP2/; s/pp2/PP2/')
  printf '| %s | replay --scale | %s | %s | %s | %s |\n' "$label" "$(wc -c <"$whole")" \
    "$(wc -c <"$tmp/full.scw")" "$ti" "$tr"
  printf '| | shard traces | %s | %s | %s | %s |\n' "$sz" "$(wc -c <"$tmp/sh.scw")" "$si" "$sr"
done
