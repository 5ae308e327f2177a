#!/usr/bin/env bash
# pftrace.sh: run --trace FILE.pftrace, --trace-format and --trace-ranks from
# the command line: the format follows the extension (or --trace-format), -o
# DIR names its trace by the format, the chosen ranks are the only processes
# of the JSON and the .pftrace, a refused --trace-ranks leaves an existing
# trace as it was, and --trace-ranks shrinks the --trace-limit estimate. The
# slices themselves are compared with the JSON by unit.test_pftrace (decoded
# with our schema; no trace_processor here).
#   pftrace.sh path/to/stepcast
set -u
cli=$1
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
exit $fail
