#!/usr/bin/env bash
# pftrace.sh: run --trace FILE.pftrace, --trace-format and --trace-ranks from
# the command line: the format follows the extension (or --trace-format), -o
# DIR names its trace by the format, the chosen ranks are the only processes
# of the JSON and the .pftrace, a refused --trace-ranks leaves an existing
# trace as it was, and --trace-ranks shrinks the --trace-limit estimate;
# the same options on `replay` of a shipped Kineto trace. The
# slices themselves are compared with the JSON by unit.test_pftrace (decoded
# with our schema; no trace_processor here).
#   pftrace.sh path/to/stepcast
set -u
cli=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--set model.layers=16 --set parallel.pp=4 --set training.global_batch=64)

# 1. By extension: .pftrace is a protobuf Trace (its first byte is the tag of
#    field 1, length-delimited: 0x0a), anything else JSON.
"$cli" run "${small[@]}" --trace "$tmp/t.pftrace" >/dev/null || bad "run --trace t.pftrace failed"
[ "$(head -c 1 "$tmp/t.pftrace" | od -An -tx1 | tr -d ' ')" = 0a ] || bad "t.pftrace is not a Trace"
"$cli" run "${small[@]}" --trace "$tmp/t.json" >/dev/null || bad "run --trace t.json failed"
head -c 1 "$tmp/t.json" | grep -q '{' || bad "t.json is not JSON"
js=$(stat -c %s "$tmp/t.json")
pf=$(stat -c %s "$tmp/t.pftrace")
[ $((pf * 10)) -lt $((js * 6)) ] || bad ".pftrace ($pf bytes) not under 60 % of the JSON ($js)"

# 2. --trace-format overrides the extension; -o DIR writes trace.pftrace.
"$cli" run "${small[@]}" --trace "$tmp/x.bin" --trace-format perfetto >/dev/null
cmp -s "$tmp/x.bin" "$tmp/t.pftrace" || bad "--trace-format perfetto differs from .pftrace"
"$cli" run "${small[@]}" --trace "$tmp/y.pftrace" --trace-format json >/dev/null
cmp -s "$tmp/y.pftrace" "$tmp/t.json" || bad "--trace-format json differs from .json"
"$cli" run "${small[@]}" -o "$tmp/out" --trace-format perfetto >/dev/null
[ -f "$tmp/out/trace.pftrace" ] && [ ! -e "$tmp/out/trace.json" ] ||
  bad "-o DIR --trace-format perfetto did not write DIR/trace.pftrace alone"

# 3. --trace-ranks, folded (the default example: 64 ranks a stage): ranks 0,
#    7 and 1000-1015 are the classes of stages 0 and 15, in both formats.
"$cli" run --trace "$tmp/r.json" --trace-ranks 0,7,1000-1015 >/dev/null || bad "--trace-ranks json"
"$cli" run --trace "$tmp/r.pftrace" --trace-ranks 0,7,1000-1015 >/dev/null || bad "--trace-ranks pftrace"
[ "$(grep -o '"name":"process_name"' "$tmp/r.json" | wc -l)" = 2 ] || bad "r.json: not 2 processes"
grep -q '"name":"rank 960 (stage 15)"' "$tmp/r.json" || bad "r.json: no rank 960 (stage 15)"
grep -q '"otherData":{"stepcast_trace_ranks":"0,7,1000-1015 of ranks 0-1023; the run is folded' \
  "$tmp/r.json" || bad "r.json: no note on the folded ranks"
for s in 'rank 0 (stage 0)' 'rank 960 (stage 15)' 'stepcast_trace_ranks' 'the run is folded'; do
  grep -aq "$s" "$tmp/r.pftrace" || bad "r.pftrace: no \"$s\""
done
grep -aq 'rank 64 (stage 1)' "$tmp/r.pftrace" && bad "r.pftrace: stage 1 was not chosen"

# 4. A refused --trace-ranks leaves the old trace; nothing is simulated.
echo OLD >"$tmp/old.pftrace"
"$cli" run --trace "$tmp/old.pftrace" --trace-ranks 2048 >/dev/null 2>&1
[ $? = 2 ] || bad "--trace-ranks 2048: exit code not 2"
[ "$(cat "$tmp/old.pftrace")" = OLD ] || bad "a refused --trace-ranks changed the trace file"

# 5. --trace-limit counts the chosen ranks only: refused for every rank of
#    an unfolded run, accepted for four of its 32.
"$cli" run "${small[@]}" --set simulation.fold=false --trace "$tmp/l.json" --trace-limit 8M \
  >/dev/null 2>&1 && bad "an 8M limit did not refuse the whole unfolded trace"
"$cli" run "${small[@]}" --set simulation.fold=false --trace "$tmp/l.json" --trace-limit 8M \
  --trace-ranks 0-3 >/dev/null || bad "--trace-ranks 0-3 under --trace-limit 8M refused"
[ "$(grep -o '"name":"process_name"' "$tmp/l.json" | wc -l)" = 4 ] || bad "l.json: not 4 processes"
# 6. replay: the shipped 2-GPU DDP Kineto trace (rank 0 of 2 traced) as
#    .pftrace and JSON; the .pftrace under a third of the JSON's size.
job=$tmp/ddp.scw
"$cli" import kineto "$src/validation/traces/hta/nccl_parser_config_nccl_data.json.gz" -o "$job" \
  >/dev/null 2>&1 || bad "import of the shipped trace failed"
"$cli" replay "$job" --trace "$tmp/rp.pftrace" >/dev/null || bad "replay --trace rp.pftrace failed"
[ "$(head -c 1 "$tmp/rp.pftrace" | od -An -tx1 | tr -d ' ')" = 0a ] || bad "rp.pftrace is not a Trace"
"$cli" replay "$job" --trace "$tmp/rp.json" >/dev/null || bad "replay --trace rp.json failed"
head -c 1 "$tmp/rp.json" | grep -q '{' || bad "rp.json is not JSON"
js=$(stat -c %s "$tmp/rp.json")
pf=$(stat -c %s "$tmp/rp.pftrace")
[ $((pf * 3)) -lt "$js" ] || bad "replay .pftrace ($pf bytes) not under a third of the JSON ($js)"
"$cli" replay "$job" --trace "$tmp/rx.bin" --trace-format perfetto >/dev/null
cmp -s "$tmp/rx.bin" "$tmp/rp.pftrace" || bad "replay --trace-format perfetto differs from .pftrace"
#    --trace-ranks: 0-1 holds the traced rank (noted); 1 holds none, 2 is
#    outside the world: exit 2, the old file kept; --trace-ranks alone is
#    a usage error.
"$cli" replay "$job" --trace "$tmp/rr.json" --trace-ranks 0-1 >/dev/null || bad "replay --trace-ranks 0-1"
grep -q '"stepcast_trace_ranks":"0-1 of ranks 0-1; 1 of 1 simulated ranks traced"' "$tmp/rr.json" ||
  bad "rr.json: no note on the chosen ranks"
echo OLD >"$tmp/old.json"
for r in 1 2; do
  "$cli" replay "$job" --trace "$tmp/old.json" --trace-ranks $r >/dev/null 2>"$tmp/err"
  [ $? = 2 ] || bad "replay --trace-ranks $r: exit code not 2"
done
grep -q "out of range \[0, 1\]" "$tmp/err" || bad "replay --trace-ranks 2: $(cat "$tmp/err")"
"$cli" replay "$job" --trace "$tmp/old.json" --trace-ranks 1 2>&1 >/dev/null |
  grep -q "holds none of the 1 traced rank(s)" || bad "replay --trace-ranks 1: no clear error"
[ "$(cat "$tmp/old.json")" = OLD ] || bad "a refused replay --trace-ranks changed the trace file"
"$cli" replay "$job" --trace-ranks 0 >/dev/null 2>&1
[ $? = 2 ] || bad "replay --trace-ranks without --trace: exit code not 2"
#    --trace-limit: refused (exit 2, clear message, nothing written) under
#    the estimate, accepted above it.
"$cli" replay "$job" --trace "$tmp/lim.pftrace" --trace-limit 100K >/dev/null 2>"$tmp/err"
[ $? = 2 ] || bad "replay --trace-limit 100K: exit code not 2"
grep -q "the trace would take ~0.[0-9] MiB (estimate), above --trace-limit 0.1 MiB" "$tmp/err" ||
  bad "replay --trace-limit 100K: $(cat "$tmp/err")"
[ ! -e "$tmp/lim.pftrace" ] || bad "a refused replay trace was written"
"$cli" replay "$job" --trace "$tmp/lim.pftrace" --trace-limit 1M >/dev/null ||
  bad "replay --trace-limit 1M refused a ${pf}-byte trace"
exit $fail
