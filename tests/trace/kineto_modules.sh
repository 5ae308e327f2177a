#!/bin/sh
# kineto_modules.sh STEPCAST: GPU (Kineto) traces with module annotations
# (docs/TRACE.md, "Module annotations in GPU traces"). Synthetic traces of a
# small decoder in the profiler's with_stack / with_modules format
# (tests/trace/gen_kineto_modules.py: the same kernel times in every layer)
# are imported with their nn.Module paths and passes; 2 traced layers
# replayed as 4 (--layers) must match the 4-layer trace within 0.5 %, GPU
# bound, host bound, over 2 profiler steps and with activation
# checkpointing (the block's modules called again inside a backward node:
# the recomputation pass, same modules); a trace without the
# annotations, and a tp / pp re-target of measured kernels, are refused.
set -eu
sc=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
gen=$here/tests/trace/gen_kineto_modules.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }
for opts in "" "--host-us 150" "--steps 2 --host-us 40" "--ac"; do
  # shellcheck disable=SC2086
  python3 "$gen" 2 "$tmp/l2.json" $opts
  # shellcheck disable=SC2086
  python3 "$gen" 4 "$tmp/l4.json" $opts
  "$sc" import kineto "$tmp/l2.json" -o "$tmp/l2.scw" >"$tmp/imp" 2>/dev/null
  "$sc" import kineto "$tmp/l4.json" -o "$tmp/l4.scw" >/dev/null 2>&1
  # root, embedding, 12 a layer (block, 2 norms, attention, 4 linears,
  # feed-forward, 3 linears), final norm, head
  # ops tagged: 154 a step (77 kernels and their launches); with --ac the
  # re-run forward adds 56
  want=154
  case $opts in --steps*) want=308 ;; --ac) want=210 ;; esac
  grep -q "module annotations: 28 nn.Module(s), $want ops" "$tmp/imp" ||
    { echo "kineto_modules.sh: import (want 28 modules, $want ops):"; cat "$tmp/imp"; fail=1; }
  a=$("$sc" replay "$tmp/l2.scw" --layers 4 --format json | field predicted_step_s)
  b=$("$sc" replay "$tmp/l4.scw" --format json | field predicted_step_s)
  echo "${opts:-default}: 2 as 4 layers $a s, 4 traced $b s"
  awk -v a="$a" -v b="$b" 'BEGIN { d = (a - b) / b; exit !(d > -0.005 && d < 0.005) }' ||
    { echo "kineto_modules.sh: ${opts:-default}: $a vs $b s"; fail=1; }
done
# Without the annotations (the python_function ranges dropped) there are no
# module paths to extrapolate.
python3 - "$tmp/l2.json" "$tmp/bare.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") != "python_function"]
json.dump(d, open(sys.argv[2], "w"))
PY
"$sc" import kineto "$tmp/bare.json" -o "$tmp/bare.scw" >"$tmp/imp" 2>/dev/null
if grep -q "module annotations" "$tmp/imp"; then echo "kineto_modules.sh: bare trace has modules"; fail=1; fi
code=0
"$sc" replay "$tmp/bare.scw" --layers 4 >/dev/null 2>"$tmp/err" || code=$?
[ "$code" = 2 ] && grep -q "no module paths" "$tmp/err" || { echo "kineto_modules.sh: bare --layers: $code"; cat "$tmp/err"; fail=1; }
for s in tp=2 pp=2; do
  code=0
  "$sc" replay "$tmp/l2.scw" --scale "$s" >/dev/null 2>"$tmp/err" || code=$?
  [ "$code" = 2 ] && grep -q "kernels have measured times" "$tmp/err" ||
    { echo "kineto_modules.sh: --scale $s: $code"; cat "$tmp/err"; fail=1; }
done
exit $fail
