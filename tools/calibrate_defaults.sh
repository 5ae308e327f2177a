#!/usr/bin/env bash
# calibrate_defaults.sh: refits the shipped compute defaults of src/cost/cost.c
# from the split=calibration rows of the shipped case files (never the
# validation rows) and writes validation/calibration/{a100,h100}.yaml and the
# summary default.yaml. The fit starts from the kernel-data values
# (sc__cost_compute_priors), so the result does not depend on what cost.c
# currently ships; rerun it whenever a model changes, then copy the printed
# values into compute_defaults() in src/cost/cost.c (test_validate checks they
# agree), rerun tools/interval_loo.sh and the interval fit (docs/VALIDATION.md,
# Prediction intervals) and regenerate docs/VALIDATION.md (tools/gen_validation_md.sh).
# It also refits the same parameters with each interference model on
# ({a100,h100}-interference-{constant,learned}.yaml), which are not defaults.
#
# usage: tools/calibrate_defaults.sh [STEPCAST]   (default build/stepcast;
#        the binary's `calibrate --cases` is sc_cli_calibrate_cases)
set -euo pipefail
cli=${1:-build/stepcast}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
cd "$(dirname "$0")/.."
out=validation/calibration
mkdir -p "$out"

# Both GPU families are fitted in two stages: first the Megatron rows (GEMM,
# memory, per-kernel and, on H100, cudnn_attn_eff), then attn_eff alone on the
# rows that run FlashAttention-2, the first stage's values held. The file of
# stage 1 gets stage 2's attn_eff added. scores_mem_eff (unfused attention's
# bandwidth) is never fitted here: it keeps its kernel-data value (params.c).
#   stage2 DST GPU CASES... -- [--set ...]
stage2() {
  local dst=$1 gpu=$2; shift 2
  local cases=()
  while [ "$1" != -- ]; do cases+=(--cases "$1"); shift; done
  shift
  local held=()
  while read -r k v; do held+=(--set "calibration.${k%:}=$v"); done < <(values "$dst")
  "$cli" calibrate "${cases[@]}" --gpu "$gpu" --params attn_eff "${held[@]}" "$@" -o "$dst.flash"
  local a
  a=$(values "$dst.flash" | sed -n 's/^  attn_eff: //p')
  sed -i "/^calibration:/a\\  attn_eff: $a   # stage 2: the FlashAttention-2 rows" "$dst"
  rm -f "$dst.flash"
}
values() { sed -n '/^calibration:/,/^[^ ]/p' "$1" | grep '^  ' ; }

# A100 (a100-80gb and a100-40gb, one die):
# 1. the Megatron rows (SC21, Korthikanti), which predate FlashAttention
#    (training.attention=unfused in the base configs): GEMM, memory and
#    per-kernel;
# 2. llm-foundry's A100 rows, which run the flash-attn package: attn_eff.
a100_fit() { # OUT [--set ...]
  local dst=$1; shift
  "$cli" calibrate --cases validation/cases/megatron_sc21_table1.csv \
    --cases validation/cases/korthikanti2022.csv \
    --params gemm_eff,gemm_dim_half,mem_eff,kernel_overhead_us "$@" -o "$dst"
  stage2 "$dst" a100-80gb validation/cases/llm_foundry_mpt.csv -- "$@"
}
a100_fit "$out/a100.yaml"
# H100 (and its die-mates), in two stages:
# 1. the Megatron-Core rows (dense and MoE), which run Transformer Engine's
#    cuDNN fused attention (the case loader's framework rule): GEMM, memory,
#    per-kernel and cudnn_attn_eff;
# 2. the rows that run FlashAttention-2 (torchtitan's SDPA, llm-foundry's
#    flash-attn; h100-sxm and the 500 W h100-96gb-500w, one compute die):
#    attn_eff alone, with stage 1's values held.
# h100.yaml is stage 1's file with stage 2's attn_eff added.
h100_fit() { # OUT [--set ...]: both stages into OUT
  local dst=$1; shift
  "$cli" calibrate --cases validation/cases/megatron_core_h100.csv \
    --cases validation/cases/megatron_moe_h100.csv --gpu h100-sxm "$@" -o "$dst"
  stage2 "$dst" h100-sxm validation/cases/torchtitan_h100.csv \
    validation/cases/llm_foundry_mpt.csv -- "$@"
}
h100_fit "$out/h100.yaml"

# The same fits with each interference model on (simulation.interference),
# for runs that turn it on: the shipped defaults above are fitted with it off
# (the default), so they have absorbed the slowdown of overlapped compute
# into the efficiencies, and turning interference on would count it twice.
# Not copied into src/cost/cost.c: loaded with --calibration (docs/VALIDATION.md,
# section Interference).
for m in constant learned; do
  a100_fit "$out/a100-interference-$m.yaml" --set simulation.interference=$m
  h100_fit "$out/h100-interference-$m.yaml" --set simulation.interference=$m
  for g in a100 h100; do
    sed -i "1a # With simulation.interference: $m (every row simulated with it; use it with the same setting)." \
      "$out/$g-interference-$m.yaml"
  done
done

{
  echo "# Shipped default calibration of stepcast's compute model (src/cost/cost.c,"
  echo "# compute_defaults). Produced by tools/calibrate_defaults.sh: a robust fit"
  echo "# (soft-L1 of log(predicted/measured), 5 % scale, pull towards the"
  echo "# kernel-data values of validation/kernels/) on the split=calibration rows"
  echo "# only: A100 = megatron_sc21_table1.csv (4 rows, <= 256 GPUs) +"
  echo "# korthikanti2022.csv (2 rows, 22B), then attn_eff on the 5 FlashAttention"
  echo "# rows of llm_foundry_mpt.csv (A100); H100 = megatron_core_h100.csv (3 rows,"
  echo "# <= 192 GPUs) + megatron_moe_h100.csv (4 rows), then attn_eff on the 12"
  echo "# FlashAttention rows of torchtitan_h100.csv and llm_foundry_mpt.csv (H100)."
  echo "# The loadable files are a100.yaml and h100.yaml beside this"
  echo "# one; this file is the record (not itself a calibration file)."
  echo "defaults:"
  echo "  a100:   # a100-80gb, a100-40gb"
  values "$out/a100.yaml" | sed 's/^/  /'
  echo "  h100:   # h100-sxm, h800, h200 (same GH100 compute die)"
  values "$out/h100.yaml" | sed 's/^/  /'
} >"$out/default.yaml"

echo "values for compute_defaults() in src/cost/params.c:"
echo "  a100:"; values "$out/a100.yaml"
echo "  h100:"; values "$out/h100.yaml"
