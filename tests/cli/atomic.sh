#!/usr/bin/env bash
# atomic.sh: outputs are atomic (cli/outfile.c). An existing output survives a
# run that fails, and a writer killed with SIGKILL mid-way; a finished run
# replaces it whole; -o creates missing directories before simulating.
#   atomic.sh path/to/stepcast
set -u
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

echo OLD >"$tmp/t.json"
# 1. A run that fails after the output was named: the old file stays.
"$cli" run --set parallel.tp=3 --trace "$tmp/t.json" >/dev/null 2>&1
[ "$(cat "$tmp/t.json")" = OLD ] || bad "a failed run changed the trace file"

# 2. A writer killed mid-way: an unfolded trace of the default example takes
#    seconds to write; kill it while it writes.
"$cli" run --set simulation.fold=false --trace "$tmp/t.json" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
  ls "$tmp"/t.json.tmp-* >/dev/null 2>&1 && break
  sleep 0.05
done
sleep 0.3
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ "$(cat "$tmp/t.json")" = OLD ] || bad "a killed writer changed the trace file"

# 3. A finished run replaces it with a complete trace (valid JSON ending).
"$cli" run --set model.layers=16 --set parallel.pp=4 --set training.global_batch=64 \
  --trace "$tmp/t.json" >/dev/null 2>&1 || bad "run --trace failed"
tail -c 4 "$tmp/t.json" | grep -q ']}' || bad "the trace is not complete"
ls "$tmp"/t.json.tmp-* >/dev/null 2>&1 && [ "$(ls "$tmp"/t.json.tmp-* | wc -l)" -gt 1 ] &&
  bad "a finished run left a temporary file"

# 4. -o NEWDIR/sub: created, result.json and trace.json written.
"$cli" run --set model.layers=16 --set parallel.pp=4 --set training.global_batch=64 \
  -o "$tmp/new/sub/" >/dev/null 2>&1 || bad "run -o NEWDIR failed"
[ -s "$tmp/new/sub/result.json" ] && [ -s "$tmp/new/sub/trace.json" ] || bad "-o NEWDIR: files missing"
# -o onto a regular file is refused before simulating (exit 3).
touch "$tmp/file"
"$cli" run -o "$tmp/file" >/dev/null 2>"$tmp/err"
code=$?
[ "$code" = 3 ] && grep -q "cannot write into" "$tmp/err" || bad "-o FILE: exit $code, $(cat "$tmp/err")"

# 5. A failed import keeps an existing .scw.
echo OLDJOB >"$tmp/j.scw"
"$cli" import kineto "$tmp/missing.json" -o "$tmp/j.scw" >/dev/null 2>&1
[ "$(cat "$tmp/j.scw")" = OLDJOB ] || bad "a failed import changed the .scw"

[ "$fail" = 0 ] && echo "atomic outputs: ok"
exit "$fail"
