#!/bin/sh
# layers.sh STEPCAST: layer-count extrapolation (`replay --layers N`,
# docs/TRACE.md "More layers than traced"). The tiny GPT traced with 2 and
# with 4 layers by the same tools/trace_torch.py (tests/trace/layers/): the
# 2-layer job run with --layers 4 must replay as the 4-layer trace does,
# whole and re-targeted (TP, PP, interleaved, ZB-H1, FSDP, DDP, CP): the
# same op count and, with the host's per-operator costs at their floor (so
# that the GPU sets the pace), the same step and breakdown to 0.1 %; with
# the default host costs within 2 % (the traced host time per layer differs
# a little between the two traces). Also: what it refuses.
set -eu
sc=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
d=$here/tests/trace/layers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
host="--set calibration.host_op_us=0.01 --set calibration.host_autograd_us=0.01 --set calibration.host_module_us=0.01"
"$sc" import cpu "$d/tiny-gpt-l2-b1.json.gz" -o "$tmp/l2.scw" >/dev/null
"$sc" import cpu "$d/tiny-gpt-l4-b1.json.gz" -o "$tmp/l4.scw" >/dev/null
fail=0
n=0
while IFS='|' read -r tol hostopts scale; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$sc" replay "$tmp/l2.scw" --layers 4 --set cluster.gpu=a100-80gb $hostopts $scale --format json >"$tmp/a.json"
  # shellcheck disable=SC2086
  "$sc" replay "$tmp/l4.scw" --set cluster.gpu=a100-80gb $hostopts $scale --format json >"$tmp/b.json"
  python3 - "$tmp/a.json" "$tmp/b.json" "$tol" "$scale" <<'PY' || fail=1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
tol, what = float(sys.argv[3]), sys.argv[4] or "as traced"
bad = []
if (a.get("layers"), a.get("traced_layers")) != (4, 2):
    bad.append("layers %s / traced %s" % (a.get("layers"), a.get("traced_layers")))
if a["ops"] != b["ops"]:
    bad.append("ops %d vs %d" % (a["ops"], b["ops"]))
def near(k, u, v):
    if abs(u - v) > tol * max(abs(v), 1e-6 * b["predicted_step_s"]):
        bad.append("%s %.4f vs %.4f ms" % (k, u * 1e3, v * 1e3))
near("step", a["predicted_step_s"], b["predicted_step_s"])
for k in b["breakdown"]:
    # With the default host costs only the compute is compared: what the
    # communication exposes follows the host's pace.
    if tol < 0.01 or k in ("compute", "optimizer"):
        near(k, a["breakdown"][k], b["breakdown"][k])
print("%-45s step %.4f ms (2 layers -> 4) vs %.4f ms (4 traced)" % (what, a["predicted_step_s"] * 1e3,
                                                                  b["predicted_step_s"] * 1e3))
if bad:
    print("layers.sh: %s: %s" % (what, "; ".join(bad)))
    sys.exit(1)
PY
done <<CASES
0.001|$host|
0.001|$host|--scale tp=2
0.001|$host|--scale pp=2 --micro-batches 4
0.001|$host|--scale tp=2,pp=2 --micro-batches 4
0.001|$host|--scale pp=2 --micro-batches 8 --schedule interleaved --vpp 2
0.001|$host|--scale pp=2 --micro-batches 4 --schedule zb-h1
0.001|$host|--scale fsdp=4
0.001|$host|--scale dp=8
0.001|$host|--scale cp=2
0.02||
0.02||--scale tp=2,pp=2,dp=2 --micro-batches 4
CASES
[ "$n" = 11 ] || { echo "layers.sh: ran $n layouts"; fail=1; }
# Refused, exit 2: fewer layers than traced; a job without module paths.
refused() {
  want=$1
  shift
  code=0
  "$sc" replay "$@" --set cluster.gpu=a100-80gb >/dev/null 2>"$tmp/err" || code=$?
  if [ "$code" != 2 ] || ! grep -q "$want" "$tmp/err"; then
    echo "layers.sh: replay $* exited $code, not 2 with \"$want\":"
    cat "$tmp/err"
    fail=1
  fi
}
refused "layers=1: fewer than the 2 traced" "$tmp/l2.scw" --layers 1
refused "has no module paths" "$here/tests/fuzz/corpus-scw/cpu-small.scw" --layers 4
refused "out of range" "$tmp/l2.scw" --layers 0
exit $fail
