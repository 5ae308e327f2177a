#!/usr/bin/env bash
# comm_heldout.sh: the held-out accuracy table of the collective model
# (docs/COMM.md section 4, docs/VALIDATION.md "Collectives"). Calibrates the
# "nccl" model on the 8-, 16- and 32-GPU Azure ND A100 v4 all-reduce logs
# (`stepcast calibrate --nccl-tests`), predicts every log from 2 to 128 GPUs
# (`stepcast comm --compare`) and prints the MAPE of time per message-size
# band as a markdown table. Warm-up rows (sc_nccltests_row_is_warmup: a run's
# first size taking over twice the next's time) are not counted; a line after
# the table gives the bands with them. tests/unit/test_comm.c (test_heldout_accuracy)
# computes the same figures and guards them. A second table does the same
# for the H100 logs of every collective (validation/nccl/h100-*).
#
# usage: tools/comm_heldout.sh [STEPCAST]   (default build/stepcast)
set -euo pipefail
cli=${1:-build/stepcast}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
cd "$(dirname "$0")/.."
dir=validation/nccl/azure-ndv4-a100
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" calibrate --nccl-tests $dir/all_reduce_{8,16,32}gpu.log -o "$tmp/fit.yaml" >"$tmp/log" 2>&1 ||
  { cat "$tmp/log" >&2; exit 1; }
echo "| GPUs | role | < 64 KiB | 64 KiB - 16 MiB | > 16 MiB | all rows |"
echo "|---:|---|---:|---:|---:|---:|"
for g in 2 4 8 16 32 64 128; do
  case $g in 8 | 16 | 32) role=calibration ;; *) role="held out" ;; esac
  "$cli" comm --calibration "$tmp/fit.yaml" --compare $dir/all_reduce_${g}gpu.log --format json |
    tr '{' '\n' |
    sed -n 's/.*"bytes":\([0-9.e+]*\),.*"error_pct":\([-0-9.e+]*\)\(,"warmup":true\)\{0,1\}[,}].*/\1 \2 \3/p' |
    awk -v g="$g" -v role="$role" '
      { e = $2 < 0 ? -$2 : $2; b = $1 < 65536 ? 0 : $1 <= 16777216 ? 1 : 2
        w = $3 != ""
        if (!w) { s[b] += e; c[b]++; s[3] += e; c[3]++ }
        a[b] += e; ac[b]++; a[3] += e; ac[3]++
        if (w) nw++ }
      END { printf "| %d | %s |", g, role
            for (i = 0; i < 4; i++) printf " %.1f |", s[i] / c[i]
            printf "\n"
            if (nw) {
              printf "%d GPUs: %d warm-up row(s) not counted; with them", g, nw >> notes
              for (i = 0; i < 4; i++) printf "%s %.1f", i ? "," : "", a[i] / ac[i] >> notes
              printf ".\n" >> notes } }' notes="$tmp/notes"
done
if [ -s "$tmp/notes" ]; then
  echo
  cat "$tmp/notes"
fi

# The other collectives (and all-reduce) on H100: fit the keys the H100 logs
# identify (the Hopper defaults of src/cost/comm_nccl.c) on 8 GPUs (one node)
# and 40 GPUs (10 nodes, send/recv left out), predict every log.
# tests/unit/test_comm.c (test_heldout_collectives) guards the held-out rows.
h=validation/nccl/h100-cluster01
g=validation/nccl/h100-together
keys=nccl_nvlink_eff,nccl_nic_eff,nccl_channel_us,nccl_base_scale,nccl_tree_hop_scale
keys=$keys,nccl_net_bulk_hop_scale,nccl_ll128_frac,nccl_pipe_kib,nccl_mem_passes
keys=$keys,nccl_host_launch_us,nccl_reduce_passes,nccl_ring_mix
"$cli" calibrate --gpu h100-sxm --params $keys --nccl-tests $g/*.log \
  $h/{all_gather,reduce_scatter,all_reduce,alltoall,sendrecv}_8gpu.log \
  $h/{all_gather,reduce_scatter,all_reduce,alltoall}_40gpu.log -o "$tmp/h100.yaml" >"$tmp/log" 2>&1 ||
  { cat "$tmp/log" >&2; exit 1; }
echo
echo "| collective | log | GPUs (nodes) | role | < 64 KiB | 64 KiB - 16 MiB | > 16 MiB | all rows |"
echo "|---|---|---:|---|---:|---:|---:|---:|"
for f in $g/*.log $h/*.log; do
  b=$(basename "$f" .log)
  op=${b%%_[0-9]*}
  gpus=${b#"$op"_}
  gpus=${gpus%%gpu*}
  case $b in
    *_2nodes) nodes=2 ;;
    *) nodes=$((gpus >= 10 ? 10 : 1)) ;;
  esac
  case $f in
    $g/*) role=calibration ;;
    *_8gpu.log) role=calibration ;;
    *_40gpu.log) role=calibration; [ "$op" = sendrecv ] && role="held out" ;;
    *) role="held out" ;;
  esac
  "$cli" comm --calibration "$tmp/h100.yaml" --compare "$f" --format json |
    tr '{' '\n' |
    sed -n 's/.*"bytes":\([0-9.e+]*\),.*"error_pct":\([-0-9.e+]*\)\(,"warmup":true\)\{0,1\}.*/\1 \2 \3/p' |
    awk -v op="$op" -v lf="${f#validation/nccl/}" -v gn="$gpus ($nodes)" -v role="$role" '
      { e = $2 < 0 ? -$2 : $2; b = $1 < 65536 ? 0 : $1 <= 16777216 ? 1 : 2
        if ($3 == "") { s[b] += e; c[b]++; s[3] += e; c[3]++ } }
      END { printf "| %s | %s | %s | %s |", op, lf, gn, role
            for (i = 0; i < 4; i++) printf c[i] ? " %.1f |" : " - |", c[i] ? s[i] / c[i] : 0
            printf "\n" }'
done
