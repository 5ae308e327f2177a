#!/usr/bin/env python3
"""gen_kineto_modules.py LAYERS OUT.json [--steps N] [--host-us U] [--ac]: a
synthetic PyTorch 2.x profiler (Kineto) trace of one training step of a
small decoder on one GPU, with the module annotations a
`torch.profiler.profile(with_stack=True, with_modules=True)` run records:
every nn.Module call a `python_function` range named
"nn.Module: <Class>_<instance>" (the instance numbered per class in the
order first called, as the profiler does) with "Python id" / "Python parent
id", forward operators (`cpu_op`) inside them carrying "Sequence number",
the autograd engine's backward nodes as "autograd::engine::evaluate_function:
<Node>" ranges on their own thread carrying the sequence number of the
forward operator that made them, an "Optimizer.step#AdamW.step" range, CUDA
launches (`cuda_runtime`) and kernels (`kernel`) matched by correlation, and
the stream synchronisation that ends a step (loss.item()).

No GPU ran it: the layout of the events follows the format, the times are
made up and the same in every layer (each kernel's time depends only on its
kind), so a trace of N layers and one of 2 layers extrapolated to N should
replay alike (tests/trace/kineto_modules.sh). Deterministic."""
import argparse
import json

ap = argparse.ArgumentParser()
ap.add_argument("layers", type=int)
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=1)
ap.add_argument("--host-us", type=float, default=4.0, help="CPU time of one operator before its launch")
ap.add_argument("--ac", action="store_true",
                help="activation checkpointing of every block (non-reentrant: the block's forward re-run, "
                     "module calls and all, inside a backward node on the autograd thread)")
a = ap.parse_args()

MAIN, BWD = 1000, 1001   # the Python thread and the autograd engine's
KDUR = {"mm": 120.0, "mm_dgrad": 120.0, "mm_wgrad": 110.0, "norm": 9.0, "norm_bwd": 14.0, "act": 11.0,
        "act_bwd": 15.0, "attn": 60.0, "attn_bwd": 150.0, "add": 6.0, "embed": 8.0, "embed_bwd": 20.0,
        "loss": 30.0, "loss_bwd": 25.0, "adam": 300.0, "zero": 5.0}
KNAME = {"mm": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "norm": "rms_norm_kernel",
         "act": "vectorized_elementwise_kernel<silu>", "attn": "flash_fwd_kernel", "add": "elementwise_kernel<add>",
         "embed": "indexSelectLargeIndex", "loss": "cross_entropy_loss_kernel", "adam": "multi_tensor_apply_kernel<adam>",
         "zero": "vectorized_elementwise_kernel<fill>"}

ev = []
state = {"ts": 0.0, "gpu": 0.0, "corr": 1, "ext": 1, "seq": 0, "pyid": 1, "tid": MAIN, "recomp": False}
block_last = {}  # the sequence number of a block's last forward operator -> the block
counters = {}
seq_kind = {}  # sequence number -> (backward node name, kernel kinds)


def nm(kind):
    base = kind.split("_")[0]
    return KNAME.get(kind, KNAME.get(base, "elementwise_kernel")) + ("" if kind == base else "_" + kind)


def launch(tid, kind):
    """A CUDA launch now on tid and its kernel on stream 7 (in stream order)."""
    c = state["corr"]
    state["corr"] += 1
    t = state["ts"]
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": MAIN, "tid": tid, "ts": t,
               "dur": 3.0, "args": {"External id": state["ext"], "cbid": 211, "correlation": c}})
    start = max(state["gpu"], t + 5.0)
    d = KDUR[kind]
    ev.append({"ph": "X", "cat": "kernel", "name": nm(kind), "pid": 0, "tid": 7, "ts": start, "dur": d,
               "args": {"External id": state["ext"], "device": 0, "stream": 7, "correlation": c,
                        "grid": [132, 1, 1], "block": [128, 1, 1]}})
    state["gpu"] = start + d
    state["ts"] = t + 3.0


def op(name, kinds, tid=None, seq=True, bwd=None):
    """A forward operator launching `kinds`; its sequence number, and what its
    backward node runs (a recomputation records none)."""
    tid = state["tid"] if tid is None else tid
    seq = seq and not state["recomp"]
    t0 = state["ts"]
    state["ts"] += a.host_us
    args = {"External id": state["ext"], "Record function id": 0, "Ev Idx": len(ev)}
    if seq:
        state["seq"] += 1
        args["Sequence number"] = state["seq"]
        args["Fwd thread id"] = 0
        seq_kind[state["seq"]] = bwd
    for k in kinds:
        launch(tid, k)
    state["ext"] += 1
    ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": MAIN, "tid": tid, "ts": t0,
               "dur": state["ts"] - t0 + 1.0, "args": args})
    state["ts"] += 1.0


class Mod:
    """An nn.Module call: a python_function range around what it runs."""

    def __init__(self, cls, parent):
        self.cls, self.parent = cls, parent

    def __enter__(self):
        n = counters.setdefault(self.cls, {})
        self.key = id(self)
        self.t0 = state["ts"]
        self.pyid = state["pyid"]
        state["pyid"] += 1
        state["ts"] += 1.0
        return self

    def __exit__(self, *exc):
        state["ts"] += 1.0
        ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: %s_%d" % (self.cls, self.inst),
                   "pid": MAIN, "tid": state["tid"], "ts": self.t0, "dur": state["ts"] - self.t0,
                   "args": {"Python parent id": self.parent.pyid if self.parent else None, "Python id": self.pyid,
                            "Python module id": self.inst, "Python thread": 0}})
        return False


instances = {}


def mod(cls, parent, key):
    """The module `key` (a stable name) of class cls: its instance number is
    fixed at its first call."""
    m = Mod(cls, parent)
    if key not in instances:
        instances[key] = sum(1 for k in instances if k[0] == cls)
    m.inst = instances[key]
    return m


def linear(parent, key):
    with mod("Linear", parent, ("Linear",) + key):
        op("aten::mm", ["mm"], bwd=("MmBackward0", ["mm_dgrad", "mm_wgrad"]))


def norm(parent, key):
    with mod("RMSNorm", parent, ("RMSNorm",) + key):
        op("aten::_fused_rms_norm", ["norm"], bwd=("FusedRmsNormBackward0", ["norm_bwd"]))


def block(root, i):
    with mod("TransformerBlock", root, ("TransformerBlock", i)) as blk:
        norm(blk, (i, 0))
        with mod("Attention", blk, ("Attention", i)) as at:
            for j in range(3):
                linear(at, (i, "a", j))
            op("aten::_scaled_dot_product_flash_attention", ["attn"],
               bwd=("ScaledDotProductFlashAttentionBackward0", ["attn_bwd"]))
            linear(at, (i, "a", 3))
        op("aten::add", ["add"], bwd=None)
        norm(blk, (i, 1))
        with mod("FeedForward", blk, ("FeedForward", i)) as ff:
            linear(ff, (i, "f", 0))
            op("aten::silu", ["act"], bwd=("SiluBackward0", ["act_bwd"]))
            linear(ff, (i, "f", 1))
            op("aten::mul", ["add"], bwd=("MulBackward0", ["add", "add"]))
            linear(ff, (i, "f", 2))
        op("aten::add", ["add"], bwd=None)


def recompute(i):
    """Checkpointing: block i's forward re-run on the autograd thread inside a
    backward node (the first of the block's to unpack a saved tensor)."""
    t0 = state["ts"]
    state["ts"] += 2.0
    state["tid"], state["recomp"] = BWD, True
    block(None, i)
    state["tid"], state["recomp"] = MAIN, False
    state["ts"] += 1.0
    ev.append({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: CheckpointFunctionBackward",
               "pid": MAIN, "tid": BWD, "ts": t0, "dur": state["ts"] - t0,
               "args": {"External id": state["ext"], "Record function id": 0}})
    state["ext"] += 1
    state["ts"] += 1.0


def forward():
    with mod("Transformer", None, ("Transformer",)) as root:
        with mod("Embedding", root, ("Embedding",)):
            op("aten::embedding", ["embed"], bwd=("EmbeddingBackward0", ["embed_bwd"]))
        for i in range(a.layers):
            block(root, i)
            block_last[state["seq"]] = i
        norm(root, ("final",))
        linear(root, ("head",))
    op("aten::cross_entropy_loss", ["loss"], bwd=("NllLossBackward0", ["loss_bwd"]))


def backward(first_seq, last_seq):
    """The autograd engine: the step's nodes in reverse creation order."""
    state["ts"] = max(state["ts"], 0) + 5.0
    for s in range(last_seq, first_seq - 1, -1):
        if a.ac and s in block_last:
            recompute(block_last[s])
        node = seq_kind.get(s)
        if not node:
            continue
        t0 = state["ts"]
        state["ts"] += 2.0
        for k in node[1]:
            state["ts"] += a.host_us / 2
            launch(BWD, k)
        state["ts"] += 1.0
        ev.append({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: " + node[0],
                   "pid": MAIN, "tid": BWD, "ts": t0, "dur": state["ts"] - t0,
                   "args": {"External id": state["ext"], "Sequence number": s, "Fwd thread id": 1,
                            "Record function id": 0}})
        state["ext"] += 1
        state["ts"] += 1.0


for step in range(a.steps):
    t_step = state["ts"]
    state["ts"] += 2.0
    t0 = state["ts"]
    op("aten::zero_", ["zero"], seq=False)
    first = state["seq"] + 1
    forward()
    backward(first, state["seq"])
    t1 = state["ts"]
    state["ts"] += 2.0
    op("aten::_fused_adamw_", ["adam"], seq=False)
    ev.append({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "pid": MAIN, "tid": MAIN,
               "ts": t1, "dur": state["ts"] - t1 + 1.0, "args": {"External id": state["ext"]}})
    state["ext"] += 1
    # loss.item(): the host waits for the GPU (a stream synchronisation)
    t = state["ts"]
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": MAIN, "tid": MAIN, "ts": t,
               "dur": max(state["gpu"] - t, 0.0) + 2.0, "args": {"cbid": 131, "correlation": state["corr"]}})
    state["corr"] += 1
    state["ts"] = max(state["ts"], state["gpu"]) + 10.0
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (step + 1), "pid": MAIN,
               "tid": MAIN, "ts": t_step, "dur": state["ts"] - t_step, "args": {"External id": state["ext"]}})
    state["ext"] += 1
    del t0

base = 1700000000000000.0  # Kineto's epoch microseconds
for e in ev:
    e["ts"] = round(base + e["ts"], 3)
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
doc = {"schemaVersion": 1,
       "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045870592,
                             "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
       "traceEvents": ev}
with open(a.out, "w") as f:
    json.dump(doc, f, indent=1)
