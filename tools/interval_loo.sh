#!/usr/bin/env bash
# interval_loo.sh: leave-one-out predictions of the split=calibration rows,
# the errors the 90 % prediction interval is fitted on (docs/VALIDATION.md,
# section Prediction intervals). Each calibration row that a compute fit of
# tools/calibrate_defaults.sh uses is predicted by that fit redone without it
# (the row's split turned to validation in a scratch copy of
# validation/cases/), every stage the row enters refitted (an A100 Megatron
# row refits stage 1 only: its unfused attention does not read stage 2's
# attn_eff); a row no fit uses is predicted as shipped. No validation row is read for anything but its
# own prediction. Writes validation/calibration/loo.csv:
#   id,file,predicted_s,loo_predicted_s
# (predicted_s: with the shipped defaults, which test_validate compares with
# the current model to catch a stale file). About 10 minutes on one core.
#
# usage: tools/interval_loo.sh [STEPCAST]   (default build/stepcast)
set -euo pipefail
cli=${1:-build/stepcast}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
cd "$(dirname "$0")/.."
out=validation/calibration/loo.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

a100_files=(megatron_sc21_table1 korthikanti2022)
stage1_files=(megatron_core_h100 megatron_moe_h100)
stage2_files=(torchtitan_h100 llm_foundry_mpt)
a100_params=gemm_eff,gemm_dim_half,mem_eff,kernel_overhead_us

values() { sed -n '/^calibration:/,/^[^ ]/p' "$1" | grep '^  ' | sed 's/ *#.*//'; }
held_of() { # FILE: --set options holding FILE's calibration values
  while read -r k v; do printf -- '--set\ncalibration.%s=%s\n' "${k%:}" "$v"; done < <(values "$1")
}
cases_of() { local d=$1; shift; for f; do printf -- '--cases\n%s/%s.csv\n' "$d" "$f"; done; }

# One row's fields: "id,split,gpu" of every row (the first three columns).
rows() { awk -F, 'FNR > 1 && $1 != "" { print $1 "," $2 "," $3 }' "validation/cases/$1.csv"; }

# Scratch copy of the case files with row ID's split set to validation.
held_out_copy() { # ID FILE -> directory
  local d=$tmp/cases
  rm -rf "$d"
  cp -r validation/cases "$d"
  awk -F, -v OFS=, -v id="$1" '$1 == id { $2 = "validation" } { print }' \
    "validation/cases/$2.csv" >"$d/$2.csv"
  echo "$d"
}

# The predicted step time of row ID of FILE.csv in directory DIR with
# calibration file CAL ("" = shipped defaults).
predict() { # DIR FILE ID CAL
  local cal=()
  [ -n "$4" ] && cal=(--calibration "$4")
  "$cli" validate "$1/$2.csv" "${cal[@]}" --format csv |
    awk -F, -v id="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "predicted_step_s") p = i }
                       $2 == id { print $p }'
}

stage1() { # DIR OUT: the H100 stage 1 fit
  mapfile -t c < <(cases_of "$1" "${stage1_files[@]}")
  "$cli" calibrate "${c[@]}" --gpu h100-sxm -o "$2" >/dev/null
}
stage2() { # DIR STAGE1 OUT [GPU FILE...]: stage 2 (attn_eff) with stage 1 held; OUT = both
  local dir=$1 s1=$2 dst=$3 gpu=h100-sxm
  shift 3
  local files=("${stage2_files[@]}")
  if [ $# -gt 0 ]; then gpu=$1; shift; files=("$@"); fi
  mapfile -t c < <(cases_of "$dir" "${files[@]}")
  mapfile -t h < <(held_of "$s1")
  "$cli" calibrate "${c[@]}" --gpu "$gpu" --params attn_eff "${h[@]}" -o "$dst.flash" >/dev/null
  { echo "calibration:"; values "$s1"; values "$dst.flash"; } >"$dst"
}

# The shipped stage 1 fits (for rows that only stage 2 uses): H100, and the
# A100's on its Megatron rows (its stage 2 is llm-foundry's A100 rows).
stage1 validation/cases "$tmp/s1.yaml"
mapfile -t c < <(cases_of validation/cases "${a100_files[@]}")
"$cli" calibrate "${c[@]}" --params $a100_params -o "$tmp/a1.yaml" >/dev/null

echo "id,file,predicted_s,loo_predicted_s" >"$tmp/loo.csv"
for f in "${a100_files[@]}" "${stage1_files[@]}" "${stage2_files[@]}"; do
  while IFS=, read -r id split gpu; do
    [ "$split" = calibration ] || continue
    shipped=$(predict validation/cases "$f" "$id" "")
    d=$(held_out_copy "$id" "$f")
    case " ${a100_files[*]} " in
    *" $f "*)
      mapfile -t c < <(cases_of "$d" "${a100_files[@]}")
      "$cli" calibrate "${c[@]}" --params $a100_params -o "$tmp/fit.yaml" >/dev/null ;;
    *)
      if [ "${gpu#a100}" != "$gpu" ]; then # an A100 llm-foundry row: A100 stage 2
        stage2 "$d" "$tmp/a1.yaml" "$tmp/fit.yaml" a100-80gb llm_foundry_mpt
        loo=$(predict "$d" "$f" "$id" "$tmp/fit.yaml")
        echo "$id,$f.csv,$shipped,$loo" | tee -a "$tmp/loo.csv" >&2
        continue
      fi
      case " ${stage1_files[*]} " in
      *" $f "*) stage1 "$d" "$tmp/s1-loo.yaml"; stage2 "$d" "$tmp/s1-loo.yaml" "$tmp/fit.yaml" ;;
      *) stage2 "$d" "$tmp/s1.yaml" "$tmp/fit.yaml" ;;
      esac ;;
    esac
    loo=$(predict "$d" "$f" "$id" "$tmp/fit.yaml")
    echo "$id,$f.csv,$shipped,$loo" | tee -a "$tmp/loo.csv" >&2
  done < <(rows "$f")
done
cp "$tmp/loo.csv" "$out"
echo "wrote $out ($(($(wc -l <"$out") - 1)) rows)"
