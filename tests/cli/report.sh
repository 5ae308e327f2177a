#!/usr/bin/env bash
# `run -o DIR` saves what `report DIR` and another `run` need: config.yaml
# (the resolved config) runs to the same step as result.json, and `report
# DIR -o FILE` writes the very bytes `run --html FILE` (untraced) writes for
# that config; a result.json of another step time is warned about.
#   report.sh STEPCAST
set -u
cli=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$root" || exit 1
"$cli" run examples/llama3-8b-quick.yaml --set training.tokens=1e12 -o "$work/saved" \
  >/dev/null || fail "run -o"
# untraced, as report runs (a traced run, as -o DIR's, has the op-by-op critical path)
"$cli" run examples/llama3-8b-quick.yaml --set training.tokens=1e12 --html "$work/run.html" \
  >/dev/null || fail "run --html"
for f in result.json config.yaml trace.json; do
  [ -s "$work/saved/$f" ] || fail "run -o wrote no $f"
done
"$cli" run "$work/saved/config.yaml" --format json >"$work/again.json" || fail "run config.yaml"
"$cli" diff "$work/saved/result.json" "$work/again.json" --format json >"$work/diff.json" ||
  fail "diff"
grep -q '"step_time_s":{"a":\([0-9.e+-]*\),"b":\1,"delta":0,' "$work/diff.json" ||
  fail "config.yaml does not run to the saved step: $(head -c 300 "$work/diff.json")"
"$cli" report "$work/saved" -o "$work/report.html" 2>"$work/err" || fail "report: $(cat "$work/err")"
[ -s "$work/err" ] && fail "report warned: $(cat "$work/err")"
cmp -s "$work/run.html" "$work/report.html" || fail "report DIR differs from run --html"
# A result made by something else: the report says so.
sed 's/"step_time_s":[0-9.e+-]*/"step_time_s":1/' "$work/saved/result.json" >"$work/r.json"
mv "$work/r.json" "$work/saved/result.json"
"$cli" report "$work/saved" -o "$work/report2.html" 2>"$work/err" || fail "report (changed)"
grep -q "warning: .*result.json has a step time of 1 s" "$work/err" || fail "no warning: $(cat "$work/err")"
echo "report: all passed"
