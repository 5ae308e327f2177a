#!/usr/bin/env bash
# Bad-input test: runs `CLI run DIR/configs/FILE` for every row of DIR/cases.tsv
# (FILE <TAB> expected exit code <TAB> expected stderr substring) and checks the
# exit code, that stderr contains the substring, and that the CLI did not crash
# (killed by a signal: exit code >= 128). Prints "N passed, N failed".
# Usage: run.sh CLI_PATH DIR
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 CLI_PATH DIR" >&2
  exit 2
fi
cli=$1
dir=$2
if [ ! -x "$cli" ]; then
  echo "run.sh: $cli is not an executable" >&2
  exit 2
fi
if [ ! -r "$dir/cases.tsv" ]; then
  echo "run.sh: no $dir/cases.tsv" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

while IFS=$'\t' read -r file want_code want_err || [ -n "$file" ]; do
  case "$file" in '' | '#'*) continue ;; esac
  if [ -z "${want_code:-}" ] || [ -z "${want_err:-}" ]; then
    echo "FAIL $file: malformed row in cases.tsv (need 3 tab-separated columns)"
    failed=$((failed + 1))
    continue
  fi
  # timeout guards against hangs; 124 is reported as a failure below.
  timeout 60 "$cli" run "$dir/configs/$file" >"$tmp/out" 2>"$tmp/err"
  code=$?
  why=""
  if [ "$code" -ge 128 ] || [ "$code" -eq 124 ]; then
    why="crashed or hung (exit code $code)"
  elif [ "$code" -ne "$want_code" ]; then
    why="exit code $code, expected $want_code"
  elif ! grep -qF -- "$want_err" "$tmp/err"; then
    why="stderr lacks: $want_err"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $file: $why"
    sed 's/^/    stderr: /' "$tmp/err" | head -n 5
  fi
done <"$dir/cases.tsv"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
