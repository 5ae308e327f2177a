#!/usr/bin/env bash
# Crash-and-resume test of `stepcast sweep --out`: a sweep stopped partway
# (--stop-after, then a torn last row as a crash mid-write would leave; and a
# real SIGKILL) and resumed with --resume must leave the same results file and
# print the same ranking as an uninterrupted sweep. Also: an existing file is
# never overwritten without --resume, and resuming a finished file is a no-op.
#   resume.sh path/to/stepcast
set -euo pipefail
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--gpus 16 --set model.preset=gpt3-1.3b --set model.layers=12 --set model.hidden=1024
      --set model.seq_len=512 --set training.global_batch=32
      --tp 1,2 --pp 1,2,4 --vpp 1,3 --mb 1,2 --recompute selective,full --no-progress)
fail() { echo "FAIL: $*"; exit 1; }
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

"$cli" sweep "${args[@]}" --out "$tmp/ref.csv" >"$tmp/ref.txt"
rows=$(($(wc -l <"$tmp/ref.csv") - 1))
[ "$rows" -ge 12 ] || fail "reference sweep simulated only $rows configs"
# The default space holds ZeRO-3 (pp 1) and counted-split (pp 2) rows, so the
# columns added with issue 14 go through the stop-and-resume below too.
grep -q -- "-fsdp" "$tmp/ref.csv" || fail "no ZeRO-3 row in the reference sweep"
grep -q -- "-elsplit" "$tmp/ref.csv" || fail "no counted-split row in the reference sweep"

# 1. Stop after 5 rows, append a torn row, resume.
if "$cli" sweep "${args[@]}" --out "$tmp/a.csv" --stop-after 5 >/dev/null 2>"$tmp/a.err"; then
  fail "--stop-after did not stop the sweep"
fi
[ "$(wc -l <"$tmp/a.csv")" -eq 6 ] || fail "expected header + 5 rows after --stop-after 5"
head -c 40 <(sed -n 8p "$tmp/ref.csv") >>"$tmp/a.csv" # no newline: a torn row
"$cli" sweep "${args[@]}" --out "$tmp/a.csv" --resume >"$tmp/a.txt" 2>"$tmp/a.err"
grep -q "5 of $rows results read back" "$tmp/a.err" || fail "resume did not reuse 5 rows: $(cat "$tmp/a.err")"
cmp "$tmp/ref.csv" "$tmp/a.csv" || fail "resumed file differs from the uninterrupted one"
cmp "$tmp/ref.txt" "$tmp/a.txt" || fail "resumed ranking differs"

# 2. SIGKILL while running (wherever it happens to be), then resume.
"$cli" sweep "${args[@]}" --out "$tmp/b.csv" >/dev/null 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null && [ "$(lines "$tmp/b.csv")" -lt 4 ]; do
  sleep 0.01
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
"$cli" sweep "${args[@]}" --out "$tmp/b.csv" --resume >"$tmp/b.txt" 2>/dev/null
cmp "$tmp/ref.csv" "$tmp/b.csv" || fail "file resumed after SIGKILL differs"
cmp "$tmp/ref.txt" "$tmp/b.txt" || fail "ranking resumed after SIGKILL differs"

# 3. An existing results file is refused without --resume and left intact.
if "$cli" sweep "${args[@]}" --out "$tmp/a.csv" >/dev/null 2>&1; then
  fail "an existing results file was accepted without --resume"
fi
cmp "$tmp/ref.csv" "$tmp/a.csv" || fail "refused file was modified"

# 4. Resuming a finished file simulates nothing and prints the same.
"$cli" sweep "${args[@]}" --out "$tmp/a.csv" --resume >"$tmp/c.txt" 2>/dev/null
cmp "$tmp/ref.csv" "$tmp/a.csv" || fail "resuming a finished file changed it"
cmp "$tmp/ref.txt" "$tmp/c.txt" || fail "resuming a finished file printed a different ranking"

# 5. A file of another base config is refused.
if "$cli" sweep "${args[@]}" --set training.precision=bf16 --out "$tmp/a.csv" --resume \
  >/dev/null 2>&1; then
  fail "rows of another base config were accepted"
fi
echo "sweep resume: ok ($rows configs)"
