#!/usr/bin/env bash
# The HTML reports in a real browser: writes the run, sweep, validate and
# replay reports of small jobs, renders each with headless Chromium (Debian's
# `chromium`, installed by `make test`), and checks that the screenshot is not
# blank (tests/html/png_check.py) and that the page logged nothing to the
# console (no script errors, no resource that failed to load). The check is
# itself checked on a page with a script error first. Skips (exit 77) when no
# Chromium is installed.
#   render.sh STEPCAST [OUTDIR]   OUTDIR keeps the reports and screenshots
set -u
cli=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "SKIP: no chromium (apt-get install chromium)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: no python3 for the PNG check"
  exit 77
fi
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
fail=0

# shot NAME HTML HEIGHT: screenshot (half scale) and console log of one page.
shot() {
  local name=$1 page=$2 height=$3 profile
  profile=$(mktemp -d)
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --no-first-run --user-data-dir="$profile" --window-size=1360,"$height" \
    --force-device-scale-factor=0.5 --enable-logging=stderr --v=0 \
    --screenshot="$work/$name.png" "file://$page" >"$work/$name.log" 2>&1
  local rc=$?
  rm -rf "$profile"
  return $rc
}

# check NAME: the screenshot is there and not blank, the console is silent.
check() {
  local name=$1
  if [ ! -s "$work/$name.png" ]; then
    echo "FAIL $name: no screenshot"; sed -n 1,20p "$work/$name.log"; return 1
  fi
  if grep -E ':CONSOLE|Uncaught' "$work/$name.log"; then
    echo "FAIL $name: console messages above"; return 1
  fi
  python3 "$here/png_check.py" "$work/$name.png" || { echo "FAIL $name: blank screenshot"; return 1; }
  echo "ok $name"
}

# The detector: a page with a script error must be caught.
printf '<!DOCTYPE html><html><body><p>x</p><script>throw new Error("boom")</script></body></html>\n' >"$work/broken.html"
shot broken "$work/broken.html" 400
if ! grep -q 'Uncaught Error: boom' "$work/broken.log"; then
  echo "FAIL: the console check did not see a script error (is --enable-logging honoured?)"
  sed -n 1,20p "$work/broken.log"
  exit 1
fi

cd "$root" || exit 1
"$cli" run examples/llama3-8b-quick.yaml --set training.tokens=1.5e13 \
  --set cluster.price_per_gpu_hour=2.5 --set cluster.mem_headroom=0.1 \
  --html "$work/run.html" >/dev/null || { echo "FAIL: run --html"; fail=1; }
"$cli" sweep --gpus 64 --set model.layers=24 --set training.global_batch=256 --no-progress \
  --html "$work/sweep.html" >/dev/null || { echo "FAIL: sweep --html"; fail=1; }
"$cli" validate validation/cases/megatron_sc21_table1.csv validation/cases/korthikanti2022.csv \
  validation/cases/megatron_core_h100.csv --html "$work/validate.html" >/dev/null ||
  { echo "FAIL: validate --html"; fail=1; }
"$cli" replay tests/fuzz/corpus-scw/kineto-small.scw --scale dp=8 --html "$work/replay.html" \
  >/dev/null || { echo "FAIL: replay --html"; fail=1; }
"$cli" run examples/llama3-8b-quick.yaml --set 'variation.slow_gpus=ranks=3 speed=0.8' \
  --set variation.failures=10 --set variation.steps=100 --html "$work/whatif.html" >/dev/null ||
  { echo "FAIL: run --html with a variation"; fail=1; }
for name in run sweep validate replay whatif; do
  [ -s "$work/$name.html" ] || continue
  shot "$name" "$work/$name.html" 2400 || { echo "FAIL $name: $browser exited $?"; fail=1; continue; }
  check "$name" || fail=1
done
exit $fail
