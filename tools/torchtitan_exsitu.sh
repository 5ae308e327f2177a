#!/bin/sh
# torchtitan_exsitu.sh STEPCAST [MAX_MAPE MAX_ROW]: ex-situ predictions of
# torchtitan's bf16 H100 rows (validation/cases/torchtitan_h100.csv) from
# tools/trace_torch.py traces on meta tensors (docs/TRACE.md, "Against
# torchtitan's measurements"): each row's model traced with 2 layers at its
# local batch and sequence, its checkpointing, fused attention, LM head and
# cross entropy, bf16, AdamW; replayed with its layer count and layout on
# its GPU (--compile for the rows torch.compile ran). Prints a markdown table (measured, ex-situ, synthesized by
# `stepcast validate`) and the mean absolute errors. With MAX_MAPE and
# MAX_ROW (percent), exits 1 when the ex-situ MAPE or one row's error is
# above them (tests/trace/titan.sh).
set -eu
sc=$1
max_mape=${2:-}
max_row=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
csv=$here/validation/cases/torchtitan_h100.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# id | model | layers | local batch | checkpointing | --scale | SP, compile
# (the 405B row's compile is not stated; its torchtitan config enables it)
rows="tt2412-8b-8gpu-fsdp8-eager-bf16|llama3-8b|32|2|op|fsdp=8|
tt2412-8b-8gpu-fsdp8-compile-bf16|llama3-8b|32|2|op|fsdp=8|--compile
tt2412-8b-128gpu-fsdp128-eager-bf16|llama3-8b|32|2|op|fsdp=128|
tt2412-8b-128gpu-fsdp128-compile-bf16|llama3-8b|32|2|op|fsdp=128|--compile
tt2506-8b-64gpu-fsdp8-tp8-bf16-tp|llama3-8b|32|12|op|tp=8,fsdp=8|--sequence-parallel --compile
tt2506-70b-256gpu-fsdp32-tp8-bf16-tp|llama3-70b|80|16|full|tp=8,fsdp=32|--sequence-parallel --compile
tt2408-405b-128gpu-fsdp16-tp8-bf16|llama3-405b|126|2|full|tp=8,fsdp=16|--sequence-parallel --compile"
# FP8 (torchao Float8Linear, tensorwise scaling: the rows' notes), compiled:
# reported, not guarded (they are less accurate; docs/TRACE.md).
fp8="--set training.precision=fp8 --set training.fp8_recipe=tensorwise"
rows8="tt2412-8b-8gpu-fsdp8-compile-fp8|llama3-8b|32|2|op|fsdp=8|--compile $fp8
tt2412-8b-128gpu-fsdp128-compile-fp8|llama3-8b|32|2|op|fsdp=128|--compile $fp8
tt2506-8b-64gpu-fsdp8-tp8-fp8tw-tp|llama3-8b|32|12|op|tp=8,fsdp=8|--sequence-parallel --compile $fp8
tt2506-70b-256gpu-fsdp32-tp8-fp8tw-tp|llama3-70b|80|16|full|tp=8,fsdp=32|--sequence-parallel --compile $fp8
tt2408-405b-128gpu-fsdp16-tp8-fp8|llama3-405b|126|2|full|tp=8,fsdp=16|--sequence-parallel --compile $fp8"
"$sc" validate "$csv" --format csv >"$tmp/validate.csv"
table() { # ROWS -> the table's rows
echo "$1" | while IFS='|' read -r id model layers batch ac scale sp; do
  d=$tmp/$model-b$batch-$ac
  if [ ! -f "$d.scw" ]; then # one trace per model, batch and checkpointing
    "$py" "$here/tools/trace_torch.py" "$model" --layers 2 --seq 8192 --batch "$batch" --device meta \
      --attention sdpa --loss ce --ac "$ac" --amp bf16 --zero-grad none --optimizer adamw -o "$d" >"$tmp/log" ||
      { cat "$tmp/log" >&2; exit 1; }
    "$sc" import cpu "$d"/*.json.gz -o "$d.scw" >/dev/null
  fi
  gpu=$(awk -F, -v id="$id" '$1 == id { print $3 }' "$csv")
  measured=$(awk -F, -v id="$id" '$1 == id { print $38 }' "$csv")
  # shellcheck disable=SC2086 # $sp: flags or none
  p=$("$sc" replay "$d.scw" --layers "$layers" --scale "$scale" --set cluster.gpu="$gpu" \
    --set training.precision=bf16 $sp --format json | sed -n 's/.*"predicted_step_s":\([0-9.e+-]*\).*/\1/p')
  s=$(awk -F, -v id="$id" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["id"] == id { print $c["predicted_step_s"] }' "$tmp/validate.csv")
  awk -v id="$id" -v m="$measured" -v p="$p" -v s="$s" 'BEGIN {
    printf "| %s | %.3f | %.3f | %+.1f %% | %.3f | %+.1f %% |\n", id, m, p, 100 * (p - m) / m, s, 100 * (s - m) / m }'
done
}
summary() { # TABLE MAX_MAPE MAX_ROW
awk -F'|' -v mm="$2" -v mr="$3" '{ e = $5; s = $7; gsub(/[ %+]/, "", e); gsub(/[ %+]/, "", s);
  e += 0; s += 0; e = e < 0 ? -e : e; s = s < 0 ? -s : s; te += e; ts += s; n++; if (e > worst) worst = e }
  END { printf "\nex-situ MAPE %.1f %% (worst %.1f %%), synthesized %.1f %%, %d rows\n", te / n, worst, ts / n, n;
    if (mm != "" && (te / n > mm || worst > mr)) exit 1 }' "$1"
}
echo "| row | measured s | ex-situ s | error | synthesized s | error |"
echo "|---|---:|---:|---:|---:|---:|"
table "$rows" >"$tmp/table"
table "$rows8" >"$tmp/table8"
cat "$tmp/table" "$tmp/table8"
printf '\nfp8 rows:'
summary "$tmp/table8" "" ""
printf '\nbf16 rows:'
summary "$tmp/table" "$max_mape" "$max_row"
