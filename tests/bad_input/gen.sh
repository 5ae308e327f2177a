#!/usr/bin/env bash
# gen.sh ID: writes the generated input of bad-input case ID to stdout, for
# the cases whose input is too large to keep in the repository or is made of
# repetition (deep nesting, inputs past a size cap, many records); run.sh
# calls it for rows whose command line names @GEN@.
set -eu

# n copies of string s, without a trailing newline.
rep() { awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'; }

case "$1" in
yaml_deep_100k) # issue 13: 1e5 levels took libyaml's loader over 60 s
  printf 'model: '; rep 100000 '['; rep 100000 ']'; printf '\n' ;;
yaml_deep_block_2k)
  awk 'BEGIN { for (i = 0; i < 2000; i++) printf "%*s- \n", i, ""; }' ;;
yaml_over_16mib)
  printf 'model: {layers: 24}\n'; awk 'BEGIN { for (i = 0; i < 300000; i++) print "# padding padding padding padding padding padding padding" }' ;;
calib_deep_100k | run_calibration_deep)
  printf 'calibration: '; rep 100000 '{a: '; rep 100000 '}'; printf '\n' ;;
csv_over_16mib)
  printf 'id,split,gpu\n'; awk 'BEGIN { for (i = 0; i < 400000; i++) printf "case-%d,validation,a100-80gb,%s\n", i, "padding-padding-padding" }' ;;
csv_cell_1mib)
  printf 'id,split,gpu\nx,validation,'; rep 1048576 'a'; printf '\n' ;;
nccl_over_16mib | calibrate_nccl_over_16mib)
  awk 'BEGIN { for (i = 0; i < 320000; i++) print "# nccl-tests padding line padding line padding line pad" }' ;;
kineto_deep_json)
  printf '{"traceEvents": '; rep 200 '['; rep 200 ']'; printf '}' ;;
kineto_token_17mib)
  printf '{"traceEvents": [{"ph": "X", "name": "'; rep 17825792 'k'; printf '"}]}' ;;
kineto_args_1m_values) # one event keeping 1.1 M values of "Input Dims"
  printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::cat", "ts": 1, "dur": 1, "args": {"Input Dims": [['
  rep 1100000 '1,'; printf '1]]}}]}' ;;
cpu_args_1m_values)
  printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::cat", "ts": 1, "dur": 1, "args": {"Input Dims": [['
  rep 1100000 '1,'; printf '1]]}}]}' ;;
kineto_70k_groups) # a distinct process group on every NCCL kernel
  printf '{"distributedInfo": {"rank": 0, "world_size": 1048576}, "traceEvents": [\n'
  awk 'BEGIN { for (i = 0; i < 70000; i++) printf "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce\", \"ts\": %d, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7, \"Process Group Ranks\": \"[0, %d]\"}},\n", i * 10, i + 1 }'
  printf '{"ph": "i", "name": "end", "ts": 1}]}' ;;
chakra_zeros_2mib) # a zeroed file (issue 13: a 2 GB one never ended)
  head -c 2097152 /dev/zero ;;
chakra_varint_run) # a length varint of continuation bytes only
  head -c 4096 /dev/zero | tr '\0' '\377' ;;
*)
  echo "gen.sh: no generator for $1" >&2
  exit 1 ;;
esac
