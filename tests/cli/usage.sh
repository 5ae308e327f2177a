#!/usr/bin/env bash
# usage.sh: the CLI's usage table end to end. For every command the listing
# (`stepcast help`) names, and for the groups: `CMD --help`, `CMD -h` and
# `help CMD` print the same usage to stdout and exit 0; bad usage prints the
# usage to stderr, nothing to stdout, and exits 2; a bad value exits 2 with a
# message; --name=value equals --name value; the man page is the one
# `stepcast man` writes, covers every command and has no troff warnings;
# numeric options mirroring a config field have the field's range.
#   usage.sh path/to/stepcast [path/to/stepcast.1]
set -u
cli=$1
page=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1. Every command's help, three ways.
"$cli" help >"$tmp/top" 2>"$tmp/err" || bad "stepcast help exited $?"
for form in --help -h; do
  "$cli" $form >"$tmp/top2" 2>>"$tmp/err" || bad "stepcast $form exited $?"
  cmp -s "$tmp/top" "$tmp/top2" || bad "stepcast $form differs from stepcast help"
done
names=$(sed -n 's/^  \([a-z][a-z-]*\( [a-z-]*\)\{0,1\}\)  .*/\1/p' "$tmp/top")
[ "$(printf '%s\n' "$names" | wc -l)" -ge 15 ] || bad "stepcast help lists only: $names"
while read -r name; do
  # shellcheck disable=SC2086 # the name's words are separate arguments
  "$cli" help $name >"$tmp/a" 2>>"$tmp/err" || bad "help $name exited $?"
  "$cli" $name --help >"$tmp/b" 2>>"$tmp/err" || bad "$name --help exited $?"
  "$cli" $name -h >"$tmp/c" 2>>"$tmp/err" || bad "$name -h exited $?"
  cmp -s "$tmp/a" "$tmp/b" || bad "$name --help differs from help $name"
  cmp -s "$tmp/a" "$tmp/c" || bad "$name -h differs from help $name"
  head -n 1 "$tmp/a" | grep -q "^usage: stepcast $name" || bad "help $name: $(head -n 1 "$tmp/a")"
done <<<"$names
calibrate
import
hw"
[ -s "$tmp/err" ] && bad "help wrote to stderr: $(head -n 3 "$tmp/err")"

# 2. Bad usage: the command's usage on stderr, nothing on stdout, exit 2.
while IFS= read -r args; do
  # shellcheck disable=SC2086
  "$cli" $args >"$tmp/out" 2>"$tmp/err"
  code=$?
  [ "$code" = 2 ] || bad "stepcast $args: exit $code, expected 2"
  [ -s "$tmp/out" ] && bad "stepcast $args wrote to stdout"
  grep -q "^usage: stepcast" "$tmp/err" || bad "stepcast $args: no usage on stderr"
done <<'CASES'

frobnicate
run --bogus
run --format
run a.yaml b.yaml
sweep --resume
validate
calibrate
calibrate --cases a.csv --nccl-tests b.log
calibrate --cases a.csv stray
calibrate --nccl-tests
calibrate --interference
comm
comm --sharp=1
import
import foo
import kineto
import kineto t.json
import cpu t.json -o
replay
replay a.scw b.scw
hw
hw bogus
hw show
hw list extra
presets extra
config-docs extra
version extra
help bogus
man extra
CASES

# 3. Bad values: a message, exit 2.
while IFS= read -r args; do
  # shellcheck disable=SC2086
  "$cli" $args >"$tmp/out" 2>"$tmp/err"
  code=$?
  [ "$code" = 2 ] || bad "stepcast $args: exit $code, expected 2"
  grep -q "^stepcast: " "$tmp/err" || bad "stepcast $args: no message"
done <<'CASES'
run --format yaml
sweep --top 0
sweep --tp 4,x
comm --gpu a100-80gb --gpus 0
comm --gpu a100-80gb --gpus 8 --step-factor 1
comm --gpu a100-80gb --gpus 8 --format csv
replay --scale 4 a.scw
replay --comm guessed a.scw
calibrate --cases a.csv --max-evals 0
calibrate --interference t.json --folds x
hw show no-such-gpu
CASES

# 4. --name=value and --.
args="comm --gpu a100-80gb --gpus 8 --max-bytes 64K"
"$cli" $args >"$tmp/a" 2>&1 || bad "$args exited $?"
"$cli" ${args/--max-bytes /--max-bytes=} >"$tmp/b" 2>&1 || bad "--max-bytes=64K exited $?"
cmp -s "$tmp/a" "$tmp/b" || bad "--max-bytes=64K differs from --max-bytes 64K"
"$cli" hw show -- h100-sxm >"$tmp/a" 2>&1 || bad "hw show -- h100-sxm exited $?"
grep -q "^h100-sxm: " "$tmp/a" || bad "hw show -- h100-sxm: $(head -n 1 "$tmp/a")"

# 5. Every option in the table is handled: `CMD OPTION VALUE --zz` stops at
# --zz (exit 2), never at the option (an unhandled one exits 1).
while read -r name; do
  mode=""
  case "$name" in calibrate\ --*) mode=${name#calibrate } ;; esac
  # shellcheck disable=SC2086
  "$cli" help $name | sed -n -E 's/^  (-[^ ]+)( [^ ]+)?($|  .*)/\1\2/p' >"$tmp/opts"
  while read -r opt arg; do
    value=${arg%%|*}
    [ -n "$arg" ] && [ "$value" = "$arg" ] && value=1
    pre=$mode
    [ "$opt" = "$mode" ] && pre=""
    # shellcheck disable=SC2086
    "$cli" ${name%% --*} $pre $opt ${arg:+$value} --zz >/dev/null 2>"$tmp/err"
    code=$?
    if [ "$code" = 1 ] || grep -q "internal error" "$tmp/err"; then
      bad "$name: option $opt not handled: $(head -n 1 "$tmp/err")"
    fi
  done <"$tmp/opts"
done <<<"$names
man"

# 6. The man page.
"$cli" man >"$tmp/man" 2>"$tmp/err" || bad "stepcast man exited $?"
"$cli" man -o "$tmp/man2" || bad "stepcast man -o exited $?"
cmp -s "$tmp/man" "$tmp/man2" || bad "man -o FILE differs from man"
if [ -n "$page" ]; then cmp -s "$tmp/man" "$page" || bad "$page is not what stepcast man writes"; fi
head -n 2 "$tmp/man" | grep -q '^\.TH STEPCAST 1' || bad "man: no .TH line"
while read -r name; do
  grep -qF ".SS \"${name//-/\\-}\"" "$tmp/man" || bad "man page lacks $name"
done <<<"$names"
grep -q '^\.SS "man"' "$tmp/man" && bad "man page lists the hidden man command"
if command -v groff >/dev/null; then
  groff -man -ww -z "$tmp/man" 2>"$tmp/warn"
  [ -s "$tmp/warn" ] && bad "groff: $(head -n 3 "$tmp/warn")"
fi

# 7. Numeric options that mirror a config field take the field's range
# (cli/opts.h): the range an out-of-range value names is the same for both.
range_of() { sed -n 's/.*out of range \(\[[^]]*\]\).*/\1/p' "$tmp/err" | head -n 1; }
nccl=$(dirname "$0")/../../validation/nccl/azure-ndv4-a100/all_reduce_16gpu.log
while IFS='|' read -r key args; do
  "$cli" run --set "$key=99999999999" >/dev/null 2>"$tmp/err"
  want=$(range_of)
  # shellcheck disable=SC2086 # args are separate words
  "$cli" $args >/dev/null 2>"$tmp/err"
  code=$?
  got=$(range_of)
  [ -n "$want" ] || bad "--set $key=99999999999 names no range"
  [ "$code" = 2 ] && [ "$got" = "$want" ] ||
    bad "$args: exit $code, range \"$got\", expected 2 and $key's \"$want\""
done <<EOF2
cluster.num_gpus|comm --gpu h100-sxm --gpus 99999999999
cluster.gpus_per_node|comm --gpu h100-sxm --gpus 8 --gpus-per-node 99999999999
cluster.nic_gbps|comm --gpu h100-sxm --gpus 8 --nic-gbps 99999999999
cluster.nvlink_gbps|comm --gpu h100-sxm --gpus 8 --nvlink-gbps 99999999999
cluster.gpus_per_node|calibrate --nccl-tests $nccl --gpus-per-node 99999999999
cluster.nic_gbps|calibrate --nccl-tests $nccl --nic-gbps 99999999999
cluster.nvlink_gbps|calibrate --nccl-tests $nccl --nvlink-gbps 99999999999
EOF2

[ "$fail" = 0 ] && echo "usage: all passed"
exit "$fail"
