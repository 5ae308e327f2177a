#!/usr/bin/env bash
# Regenerates the reference screenshots of the HTML reports shown in the
# README, docs/REPORT.md and docs/WHATIF.md (docs/img/report-{run,sweep,validate,whatif}.png) with
# headless Chromium, from the reports of the same commands docs/REPORT.md
# lists. Deterministic reports; the PNG bytes may vary with the Chromium
# version and fonts.
#   tools/gen_report_screenshots.sh [STEPCAST]   (default build/stepcast)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$root/build/stepcast}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
  { echo "no chromium: apt-get install chromium" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
"$cli" run --set training.tokens=3e11 --set cluster.price_per_gpu_hour=2 \
  --set cluster.mem_headroom=0.05 --html "$work/run.html" >/dev/null
"$cli" sweep --gpus 64 --set model.layers=24 --set training.global_batch=256 --no-progress \
  --html "$work/sweep.html" >/dev/null
"$cli" validate validation/cases/megatron_sc21_table1.csv validation/cases/korthikanti2022.csv \
  validation/cases/megatron_core_h100.csv --html "$work/validate.html" >/dev/null
"$cli" run examples/llama3-70b-h100-512.yaml --set 'variation.slow_gpus=ranks=5 speed=0.8' \
  --set variation.failures=100 --set variation.steps=1000 --set training.checkpoint_interval=50 \
  --set training.restart_s=300 --html "$work/whatif.html" >/dev/null
mkdir -p docs/img
for name in run:2150 sweep:1150 validate:1250 whatif:1700; do
  page=${name%%:*} height=${name##*:}
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$work/profile" --window-size=1360,"$height" --force-device-scale-factor=0.75 \
    --screenshot="docs/img/report-$page.png" "file://$work/$page.html" >/dev/null 2>&1
  echo "docs/img/report-$page.png"
done
