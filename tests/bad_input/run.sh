#!/usr/bin/env bash
# Bad-input suite: every row of DIR/cases.tsv is one pathological input for one
# reader or command line, run with a time and a memory limit; the CLI must exit
# with the expected code and a clear message, never crash or hang.
# Row: ID <TAB> exit code <TAB> stderr substring [<TAB> ARGS]. ARGS is the
# command line after `stepcast`, split at spaces, with these substituted:
#   @FILE@  DIR/configs/ID (the default ARGS is `run @FILE@`)
#   @CFG@   DIR/configs (other fixtures)
#   @SRC@   the source tree (shipped examples and data)
#   @TMP@   a fresh directory for the case (outputs)
#   @GEN@   a file DIR/gen.sh writes for ID (large or generated inputs)
#   @FIFO@  a named pipe nobody writes to (must be refused, not waited on)
# Checks: the exit code, that stderr contains the substring, no signal death
# (exit >= 128), no hang (timeout, exit 124), no sanitizer report.
# Limits per case: LIMIT_S seconds (default 10); memory: `ulimit -v` of
# LIMIT_MB MiB (default 1024) in plain builds; under ASan (SC_SANITIZED=1,
# set by CMake for SC_SANITIZE builds: its shadow memory needs terabytes of
# address space) ASAN_OPTIONS=hard_rss_limit_mb=2*LIMIT_MB instead, which
# aborts a run whose resident memory passes it (ASan's own overhead is
# about 2x).
# Usage: run.sh CLI_PATH DIR [ID...]   (IDs: run only those rows)
set -u
set -f # no globbing: ARGS are split at spaces only

if [ $# -lt 2 ]; then
  echo "usage: $0 CLI_PATH DIR [ID...]" >&2
  exit 2
fi
cli=$1
dir=$2
shift 2
only=" $* "
if [ ! -x "$cli" ]; then
  echo "run.sh: $cli is not an executable" >&2
  exit 2
fi
if [ ! -r "$dir/cases.tsv" ]; then
  echo "run.sh: no $dir/cases.tsv" >&2
  exit 2
fi
dir=$(cd "$dir" && pwd)
src=$(cd "$dir/../.." && pwd)
limit_s=${LIMIT_S:-10}
limit_mb=${LIMIT_MB:-1024}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/fifo"
passed=0
failed=0
slowest=0
slowest_id=""

while IFS=$'\t' read -r id want_code want_err args || [ -n "$id" ]; do
  case "$id" in '' | '#'*) continue ;; esac
  if [ "$only" != "  " ] && [[ "$only" != *" $id "* ]]; then continue; fi
  if [ -z "${want_code:-}" ] || [ -z "${want_err:-}" ]; then
    echo "FAIL $id: malformed row in cases.tsv (need 3 or 4 tab-separated columns)"
    failed=$((failed + 1))
    continue
  fi
  [ -n "${args:-}" ] || args="run @FILE@"
  work="$tmp/case"
  rm -rf "$work"
  mkdir -p "$work"
  gen=""
  if [[ "$args" == *@GEN@* ]]; then
    gen="$work/$id"
    if ! "$dir/gen.sh" "$id" >"$gen"; then
      echo "FAIL $id: gen.sh could not generate the input"
      failed=$((failed + 1))
      continue
    fi
  fi
  argv=()
  for a in $args; do
    a=${a//@FILE@/$dir/configs/$id}
    a=${a//@CFG@/$dir/configs}
    a=${a//@SRC@/$src}
    a=${a//@TMP@/$work}
    a=${a//@GEN@/$gen}
    a=${a//@FIFO@/$tmp/fifo}
    argv+=("$a")
  done
  start=$(date +%s%N)
  if [ "${SC_SANITIZED:-0}" = 1 ]; then
    ASAN_OPTIONS="hard_rss_limit_mb=$((2 * limit_mb)):${ASAN_OPTIONS:-}" \
      timeout -k 2 "$limit_s" "$cli" "${argv[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null
    code=$?
  else
    (ulimit -v $((limit_mb * 1024)) && exec timeout -k 2 "$limit_s" "$cli" "${argv[@]}") \
      >"$tmp/out" 2>"$tmp/err" </dev/null
    code=$?
  fi
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$ms" -gt "$slowest" ]; then slowest=$ms slowest_id=$id; fi
  why=""
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    why="hung: no exit within ${limit_s} s (exit code $code)"
  elif [ "$code" -ge 128 ]; then
    why="crashed (exit code $code)"
  elif grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|hard rss limit' "$tmp/err"; then
    why="sanitizer report (exit code $code)"
  elif [ "$code" -ne "$want_code" ]; then
    why="exit code $code, expected $want_code"
  elif ! grep -qF -- "$want_err" "$tmp/err"; then
    why="stderr lacks: $want_err"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $id: $why"
    echo "    stepcast $args"
    sed 's/^/    stderr: /' "$tmp/err" | head -n 5
  fi
done <"$dir/cases.tsv"

echo "$passed passed, $failed failed (slowest: $slowest_id, $slowest ms)"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
