#!/usr/bin/env bash
# The engine's identity check (docs/PERFORMANCE.md): writes `run --format json`
# of configs that cover the engine's paths (folded and unfolded, interference
# none / constant / learned / tree, NIC sharing off, vpp 2, distributed
# optimizer, MoE, FSDP, context parallelism, Llama-3 405B, zero-bubble and
# DualPipe schedules, what-if variations), validate and calibrate output (the
# plain event loop), a JSON and a Perfetto trace and an HTML report into
# OUTDIR, one file each. Run it with main's CLI and with the
# changed one, then `cmp` the two folders file by file:
#   bench/identity.sh BUILD/stepcast OUTDIR
set -u
cli=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$(mkdir -p "$2" && cd "$2" && pwd)
cd "$(dirname "$0")/.."
i=0
run() {
  i=$((i + 1))
  local f
  f=$out/$(printf %02d $i)
  "$cli" "$@" >"$f.json" 2>"$f.err"
  echo "exit=$?" >>"$f.json"
}
U="--set simulation.fold=0"
C="--set simulation.interference=constant"
L="--set simulation.interference=learned"
T="--calibration validation/calibration/interference-hta-tree.yaml --set simulation.interference=tree"
L405="--set model.preset=llama3-405b --set model.layers=128 --set cluster.gpu=h100-sxm --set parallel.pp=16 --set training.precision=bf16"
run run --format json
run run --format json $U
run run --format json $U $C
run run --format json $U $L
run run --format json $C
run run --format json $L
run run --format json $U $C --set simulation.share_links=false
run run --format json $U --set simulation.share_links=false
run run --format json $U $C --set parallel.vpp=2
run run --format json $U $C --set parallel.distributed_optimizer=true
run run examples/mixtral-8x22b-h100-128.yaml --format json $U $C
run run examples/mixtral-8x22b-h100-128.yaml --format json $U $L
run run examples/llama3-8b-quick.yaml --format json $U $C --set parallel.tp=1 --set parallel.pp=1 \
  --set parallel.zero_stage=3 --set parallel.fsdp_shard=8
run run examples/llama3-8b-quick.yaml --format json $U $L --set model.seq_len=32768 --set parallel.cp=4
run run --format json $U $C $L405 --set cluster.num_gpus=4096 --set training.global_batch=512
run run --format json $L405 --set cluster.num_gpus=16384 --set training.global_batch=2048
run run examples/gpt3-13b-a100-64.yaml --format json $U $C
run run examples/llama3-70b-h100-512.yaml --format json $U $L
run run --format json $U $C --set parallel.schedule=zb-h1
run run --format json $C --set parallel.schedule=dualpipev --set parallel.pp=8 --set model.layers=96 \
  --set cluster.num_gpus=512
run run --format json $C --set variation.slow_gpus="ranks=5 speed=0.8"
run run --format json $C --set variation.gpu_speed_sigma=0.03
run run --format json $U $T
run run examples/llama3-8b-quick.yaml --format json $U $C --set training.recompute=op_sac
# The plain event loop (no critical path, trace or op sink: engine.c,
# event_loop_plain), which `run` does not take below 16M ops: validate's
# micro-batch search and calibrate's loss simulate without the critical path.
run validate validation/cases/megatron_sc21_table1.csv validation/cases/korthikanti2022.csv \
  --format csv $C
run validate validation/cases/megatron_moe_h100.csv --format csv $L
# (the calibration written to OUTDIR/calibrate.yaml; its message, which names
# that path, is left out of the comparison)
run calibrate --cases validation/cases/korthikanti2022.csv --params gemm_eff,mem_eff $C \
  -o "$out/calibrate.yaml"
sed -i "s|$out/||" "$out/$(printf %02d $i).err"
# The trace writers, the op sink (the HTML report's timeline) and the memory track.
run run $U $C --set training.global_batch=64 --trace-ranks 0-127,900-1023 --trace "$out/trace.json"
run run examples/llama3-8b-quick.yaml $L --trace "$out/trace.pftrace"
run run --set training.global_batch=64 $C --html "$out/report.html"
