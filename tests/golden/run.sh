#!/usr/bin/env bash
# Golden end-to-end tests: runs the CLI with each line of cases.txt
# ("name<TAB>arguments") from the repository root and compares stdout and the
# exit code with expected/NAME.out. UPDATE=1 rewrites the expected files.
set -u
cli=$1
dir=$2
root=$(cd "$dir/../.." && pwd)
pass=0 fail=0
while IFS=$'\t' read -r name args; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue ;; esac
  out=$(cd "$root" && eval "\"$cli\" $args" 2>/dev/null; echo "exit=$?")
  exp="$dir/expected/$name.out"
  if [ "${UPDATE:-0}" = 1 ]; then
    printf '%s\n' "$out" >"$exp"
  fi
  if [ -f "$exp" ] && [ "$out" = "$(cat "$exp")" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: stepcast $args"
    if [ -f "$exp" ]; then diff <(printf '%s\n' "$out") "$exp" | head -20; else echo "  (no $exp)"; fi
  fi
done <"$dir/cases.txt"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
