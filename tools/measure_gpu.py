#!/usr/bin/python3
"""Kernel and training-step measurements on one NVIDIA GPU, in one run.

Measures, with CUDA events (median of three timed loops after warm-up,
random normal data so that power draw is realistic):

  gemm_data.csv  large GEMMs on normal, small and zero data, both layouts,
              with the SM clock and power after each (the power limit).
  gemm.csv    bf16 GEMMs through F.linear (the layout training uses: x @ W^T)
              over square shapes, Llama-3 8B / 70B-TP8 training shapes (the
              forward, data-gradient and weight-gradient GEMMs) and thin
              shapes (one dimension 64-512); fp8 e4m3 GEMMs through
              torch._scaled_mm with tensor-wise and row-wise scales.
  sdpa.csv    scaled_dot_product_attention forward and forward+backward,
              per backend (flash, cuDNN, memory-efficient, math), causal and
              not, head dim 64 and 128, sequence 512-16384 at 16384 tokens
              per batch and 2048 hidden (the FlashAttention-2 benchmark's
              layout, so that rows compare with
              validation/kernels/flashattention_kernel_tflops.csv).
  mem.csv     memory-bound kernels (copy, add, silu, layer norm, softmax,
              cross entropy, the eager RMSNorm, fused / foreach AdamW) with
              the bytes they must move; a tiny kernel's device time in a CUDA
              graph (the launch gap) and eager PyTorch's host time per
              dispatched operator.
  train.csv   whole training steps of few-layer Llama-3-8B-shaped models
              (HuggingFace transformers' LlamaForCausalLM, random weights,
              fp32 parameters, bf16 autocast, SDPA attention, fused AdamW):
              median step time and peak memory per configuration.
  trace_*.json.gz  PyTorch profiler (Kineto) traces of one step of three of
              the training configurations, with input shapes (record_shapes).
              `--train-set modes` runs instead the same model with each
              decoder layer under torch.compile and with pure bf16 parameters
              (for `replay --compile` and the torchtitan-style stacks; written,
              not yet run on a GPU: the device was not lent again on
              2026-12-04).
  env.json    the machine: GPU, driver, clocks, PyTorch / CUDA / cuDNN
              versions, the date.

Every section runs under a time budget (--budget seconds in all) and in its
own try block: a failing section is logged and the others still run.

Usage: tools/measure_gpu.py --out DIR [--budget S] [--sections env,gemm,...]
                             [--train-set eager|modes] [--quick]
"""
import argparse
import csv
import datetime
import gzip
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

T0 = time.time()
ARGS = None


def log(*a):
    print("[%6.1f s]" % (time.time() - T0), *a, flush=True)


def left():
    return ARGS.budget - (time.time() - T0)


def bench(fn, min_ms=15.0, max_iters=200, reps=3):
    """Median milliseconds per call of fn (CUDA events, after warm-up)."""
    fn()
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    n = int(min(max(min_ms / one, 3), max_iters))
    times = []
    for _ in range(reps):
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / n)
    return statistics.median(times), n


def bench_graph(fn, k=20):
    """Device milliseconds per call of fn: k calls captured in a CUDA graph
    and replayed, so that the host's launch cost (eager PyTorch's dispatch
    is ~15-30 us per operator on the measuring host) hides nothing."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(k):
            fn()
    ms, n = bench(g.replay, min_ms=5)
    del g
    return ms / k, n * k


class Csv:
    def __init__(self, name, fields):
        self.path = os.path.join(ARGS.out, name)
        self.f = open(self.path, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=fields)
        self.w.writeheader()

    def row(self, **kw):
        self.w.writerow(kw)
        self.f.flush()


def gpu_name():
    return torch.cuda.get_device_name(0)


# ------------------------------------------------------------------ env
def section_env():
    p = torch.cuda.get_device_properties(0)
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "gpu": p.name,
        "sm_count": p.multi_processor_count,
        "memory_bytes": p.total_memory,
        "capability": "%d.%d" % (p.major, p.minor),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "host_cpus": os.cpu_count(),
        "host_cpu": platform.processor(),
        "measured_by": "stepcast tools/measure_gpu.py",
    }
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except Exception as ex:  # noqa: BLE001
        env["transformers"] = "unavailable: %s" % ex
    try:
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem,"
             "clocks.sm,clocks.mem,temperature.gpu,pstate", "--format=csv"],
            capture_output=True, text=True, timeout=20)
        env["nvidia_smi"] = q.stdout.strip()
    except Exception as ex:  # noqa: BLE001
        env["nvidia_smi"] = "unavailable: %s" % ex
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["host_cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return env


# ------------------------------------------------------------------ GEMM
def gemm_shapes():
    sq = [(n, n, n, "square") for n in (256, 512, 1024, 2048, 4096, 6144, 8192, 12288, 16384)]
    llama = []
    # Llama-3 8B at 8192 tokens per GPU: forward y = x W^T (M tokens, N out,
    # K in), data gradient (M, K_in <- N_out), weight gradient (N_out x K_in
    # summed over M tokens).
    for T, tag in ((8192, "llama8b"), (4096, "llama8b-t4k")):
        for nout, kin, what in ((6144, 4096, "qkv"), (4096, 4096, "o"), (28672, 4096, "gate_up"),
                                (14336, 4096, "gate"), (4096, 14336, "down"), (128256, 4096, "lm_head")):
            llama.append((T, nout, kin, "%s-%s-fwd" % (tag, what)))
            if tag == "llama8b":
                llama.append((T, kin, nout, "%s-%s-dgrad" % (tag, what)))
                llama.append((nout, kin, T, "%s-%s-wgrad" % (tag, what)))
    # Llama-3 70B, TP 8 shards, 8192 tokens.
    for nout, kin, what in ((1280, 8192, "qkv"), (8192, 1024, "o"), (7168, 8192, "gate_up"), (8192, 3584, "down")):
        llama.append((8192, nout, kin, "llama70b-tp8-%s-fwd" % what))
        llama.append((nout, kin, 8192, "llama70b-tp8-%s-wgrad" % what))
    thin = []
    for d in (64, 128, 256, 512):
        thin.append((8192, 8192, d, "thin-k"))
        thin.append((8192, d, 8192, "thin-n"))
        thin.append((d, 8192, 8192, "thin-m"))
    small = [(m, 4096, 4096, "small-m") for m in (1, 16, 64, 128, 256, 512, 1024, 2048)]
    return sq + llama + thin + small


def section_gemm():
    out = Csv("gemm.csv", ["gpu", "dtype", "scaling", "M", "N", "K", "label", "iters", "time_us", "tflops",
                           "eager_time_us", "timing"])

    def timed(fn):
        """(device ms, iterations, eager ms, how): short kernels are timed
        in a CUDA graph, long ones eagerly (the same there)."""
        ms, n = bench(fn)
        if ms < 1.0:
            gms, gn = bench_graph(fn)
            return gms, gn, ms, "cuda_graph"
        return ms, n, ms, "eager"

    dev = "cuda"
    shapes = gemm_shapes()
    if ARGS.quick:
        shapes = shapes[:3]
    for (M, N, K, label) in shapes:
        if left() < ARGS.reserve:
            log("gemm: out of time budget")
            break
        try:
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            w = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
            ms, n, ems, how = timed(lambda: F.linear(x, w))
            out.row(gpu=gpu_name(), dtype="bf16", scaling="", M=M, N=N, K=K, label=label, iters=n,
                    time_us="%.3f" % (ms * 1e3), tflops="%.2f" % (2.0 * M * N * K / (ms * 1e-3) / 1e12),
                    eager_time_us="%.3f" % (ems * 1e3), timing=how)
            del x, w
        except Exception as ex:  # noqa: BLE001
            log("gemm bf16 %s failed: %s" % ((M, N, K), ex))
    # fp8: square and the Llama 8B forward shapes, tensor-wise and row-wise scales.
    fp8 = [s for s in shapes if s[3] in ("square",) and s[0] >= 512] + \
          [s for s in shapes if s[3] in ("small-m", "thin-k")] + \
          [s for s in shapes if s[3].startswith("llama8b-") and s[3].endswith("fwd") and "t4k" not in s[3]] + \
          [s for s in shapes if s[3].startswith("llama8b-") and s[3].endswith("wgrad")]
    for (M, N, K, label) in fp8:
        for scaling in ("tensorwise", "rowwise"):
            if left() < ARGS.reserve:
                log("gemm fp8: out of time budget")
                break
            try:
                a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
                b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn).t()
                if scaling == "tensorwise":
                    sa = torch.tensor(1.0, device=dev)
                    sb = torch.tensor(1.0, device=dev)
                else:
                    sa = torch.ones(M, 1, device=dev, dtype=torch.float32)
                    sb = torch.ones(1, N, device=dev, dtype=torch.float32)
                ms, n, ems, how = timed(lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb,
                                                                 out_dtype=torch.bfloat16))
                out.row(gpu=gpu_name(), dtype="fp8_e4m3", scaling=scaling, M=M, N=N, K=K, label=label, iters=n,
                        time_us="%.3f" % (ms * 1e3), tflops="%.2f" % (2.0 * M * N * K / (ms * 1e-3) / 1e12),
                        eager_time_us="%.3f" % (ems * 1e3), timing=how)
                del a, b
            except Exception as ex:  # noqa: BLE001
                log("gemm fp8 %s %s failed: %s" % (scaling, (M, N, K), ex))
    torch.cuda.empty_cache()


def section_gemm_data():
    """The same GEMMs on different data and layouts: the chip's clock falls
    with the power that toggling bits draw, so throughput depends on the
    values (random normal operands, weights at a trained model's scale,
    zeros) and on the operand layout (F.linear's x W^T against x @ W)."""
    out = Csv("gemm_data.csv", ["gpu", "M", "N", "K", "data", "layout", "iters", "time_us", "tflops",
                                "sm_clock_mhz_after", "power_w_after"])
    shapes = [(8192, 8192, 8192), (8192, 4096, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
              (8192, 128256, 4096)]

    def smi():
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True, timeout=10)
            a = q.stdout.strip().split(",")
            return a[0].strip(), a[1].strip()
        except Exception:  # noqa: BLE001
            return "", ""

    for (M, N, K) in shapes:
        for data in ("normal", "weights_std0.02", "zeros"):
            for layout in ("x_wT", "x_w"):
                if left() < ARGS.reserve:
                    return
                try:
                    if data == "zeros":
                        x = torch.zeros(M, K, device="cuda", dtype=torch.bfloat16)
                        w = torch.zeros(N, K, device="cuda", dtype=torch.bfloat16)
                    else:
                        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
                        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
                        if data != "normal":
                            w.mul_(0.02)
                    if layout == "x_w":
                        wt = w.t().contiguous()
                        fn = lambda: torch.matmul(x, wt)  # noqa: E731
                    else:
                        fn = lambda: F.linear(x, w)  # noqa: E731
                    ms, n = bench(fn, min_ms=200, max_iters=400)
                    clk, pw = smi()
                    out.row(gpu=gpu_name(), M=M, N=N, K=K, data=data, layout=layout, iters=n,
                            time_us="%.3f" % (ms * 1e3), tflops="%.2f" % (2.0 * M * N * K / (ms * 1e-3) / 1e12),
                            sm_clock_mhz_after=clk, power_w_after=pw)
                    del x, w
                except Exception as ex:  # noqa: BLE001
                    log("gemm_data %s failed: %s" % ((M, N, K, data, layout), ex))
    torch.cuda.empty_cache()


# ------------------------------------------------------------------ SDPA
def section_sdpa():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = Csv("sdpa.csv", ["gpu", "pass", "causal", "head_dim", "seq_len", "batch_size", "num_heads",
                           "backend", "iters", "time_ms", "tflops"])
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)]
    seqs = (512, 1024, 2048, 4096, 8192, 16384)
    if ARGS.quick:
        seqs = (512,)
    hidden, tokens = 2048, 16384
    for name, be in backends:
        for d in (64, 128):
            for causal in (False, True):
                for s in seqs:
                    if name == "math" and s > 4096:
                        continue
                    if left() < ARGS.reserve:
                        log("sdpa: out of time budget")
                        return
                    b, h = tokens // s, hidden // d
                    try:
                        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                                   for _ in range(3))
                        dout = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                        f = 4.0 * b * s * s * h * d / (2.0 if causal else 1.0)

                        def fwd():
                            with torch.no_grad():
                                F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                        def fwdbwd():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            o.backward(dout)

                        with sdpa_kernel([be]):
                            ms_f, n_f = bench(fwd, min_ms=10)
                            ms_fb, n_fb = bench(fwdbwd, min_ms=10)
                        for pas, ms, n, fl in (("fwd", ms_f, n_f, f), ("fwd+bwd", ms_fb, n_fb, 3.5 * f),
                                               ("bwd", ms_fb - ms_f, n_fb, 2.5 * f)):
                            out.row(gpu=gpu_name(), **{"pass": pas}, causal=causal, head_dim=d, seq_len=s,
                                    batch_size=b, num_heads=h, backend=name, iters=n, time_ms="%.4f" % ms,
                                    tflops="%.2f" % (fl / (ms * 1e-3) / 1e12))
                        del q, k, v, dout
                    except Exception as ex:  # noqa: BLE001
                        log("sdpa %s d=%d causal=%s s=%d failed: %s" % (name, d, causal, s,
                                                                       str(ex).splitlines()[0][:200]))
                        break
    torch.cuda.empty_cache()


# ------------------------------------------------------------------ memory-bound
def section_mem():
    out = Csv("mem.csv", ["gpu", "kernel", "shape", "dtype", "bytes", "iters", "time_us", "gbps", "note"])
    dev = "cuda"
    n = 256 * 1024 * 1024
    x = torch.randn(n, device=dev, dtype=torch.bfloat16)
    y = torch.randn(n, device=dev, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    e = 2

    def rec(kernel, shape, dtype, nbytes, fn, note=""):
        if left() < ARGS.reserve:
            return
        try:
            ms, it = bench(fn, min_ms=10)
            out.row(gpu=gpu_name(), kernel=kernel, shape=shape, dtype=dtype, bytes=int(nbytes), iters=it,
                    time_us="%.3f" % (ms * 1e3), gbps="%.1f" % (nbytes / (ms * 1e-3) / 1e9), note=note)
        except Exception as ex:  # noqa: BLE001
            log("mem %s failed: %s" % (kernel, ex))

    rec("copy", str(n), "bf16", 2 * n * e, lambda: z.copy_(x), "read + write")
    rec("add", str(n), "bf16", 3 * n * e, lambda: torch.add(x, y, out=z), "2 reads + write")
    rec("mul_scalar_inplace", str(n), "bf16", 2 * n * e, lambda: x.mul_(1.0))
    rec("silu", str(n), "bf16", 2 * n * e, lambda: F.silu(x))
    rows, cols = 8192 * 4, 4096
    a = x[: rows * cols].view(rows, cols)
    wln = torch.ones(cols, device=dev, dtype=torch.bfloat16)
    rec("layer_norm", "%dx%d" % (rows, cols), "bf16", 2 * rows * cols * e,
        lambda: F.layer_norm(a, (cols,), wln, None))
    rec("softmax", "%dx%d" % (rows, cols), "bf16", 2 * rows * cols * e, lambda: torch.softmax(a, dim=-1))

    def rmsnorm():  # transformers' LlamaRMSNorm, eager
        h = a.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + 1e-5)
        return wln * h.to(torch.bfloat16)

    rec("rmsnorm_eager", "%dx%d" % (rows, cols), "bf16", 2 * rows * cols * e, rmsnorm,
        "composite: 6 kernels; bytes are the fused minimum (read + write)")
    del z
    torch.cuda.empty_cache()
    try:
        logits = torch.randn(8192, 128256, device=dev, dtype=torch.bfloat16, requires_grad=True)
        tgt = torch.randint(0, 128256, (8192,), device=dev)
        rec("cross_entropy_fwd", "8192x128256", "bf16->fp32", 8192 * 128256 * (2 + 4 + 4),
            lambda: F.cross_entropy(logits.float(), tgt), "cast to fp32 (read bf16, write fp32) + log_softmax")

        def ce_fb():
            F.cross_entropy(logits.float(), tgt).backward()

        rec("cross_entropy_fwd_bwd", "8192x128256", "bf16->fp32", 8192 * 128256 * (2 + 4 + 4 + 4 + 4 + 2), ce_fb,
            "bytes: the minimum traffic of cast, log_softmax and their backward")
        del logits
    except Exception as ex:  # noqa: BLE001
        log("cross entropy failed: %s" % ex)
    torch.cuda.empty_cache()
    # AdamW over 64 tensors of 4M fp32 parameters (268M parameters).
    for impl in ("fused", "foreach"):
        try:
            ps = [torch.randn(4 * 1024 * 1024, device=dev, requires_grad=True) for _ in range(64)]
            for p in ps:
                p.grad = torch.randn_like(p)
            opt = torch.optim.AdamW(ps, lr=1e-4, **({"fused": True} if impl == "fused" else {"foreach": True}))
            npar = sum(p.numel() for p in ps)
            rec("adamw_" + impl, "64x4Mi", "fp32", npar * (4 * 4 + 3 * 4), opt.step,
                "reads param, grad, exp_avg, exp_avg_sq; writes param, exp_avg, exp_avg_sq")
            del ps, opt
        except Exception as ex:  # noqa: BLE001
            log("adamw %s failed: %s" % (impl, ex))
    torch.cuda.empty_cache()
    # The launch gap: 200 dependent tiny kernels in a CUDA graph (no host
    # cost), and eager PyTorch's host time per dispatched operator.
    try:
        t = torch.zeros(1, device=dev)
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                t.add_(1.0)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(200):
                t.add_(1.0)
        ms, it = bench(g.replay, min_ms=10)
        out.row(gpu=gpu_name(), kernel="tiny_kernel_in_graph", shape="1", dtype="fp32", bytes=8, iters=it * 200,
                time_us="%.3f" % (ms * 1e3 / 200), gbps="", note="per kernel: device time of one dependent tiny kernel")
        torch.cuda.synchronize()
        for _ in range(100):
            t.add_(1.0)
        torch.cuda.synchronize()
        k = 20000
        w0 = time.perf_counter()
        for _ in range(k):
            t.add_(1.0)
        w1 = time.perf_counter()
        torch.cuda.synchronize()
        w2 = time.perf_counter()
        out.row(gpu=gpu_name(), kernel="eager_dispatch_host", shape="1", dtype="fp32", bytes=8, iters=k,
                time_us="%.3f" % ((w1 - w0) * 1e6 / k), gbps="",
                note="per op: host time of torch add_ on a 1-element CUDA tensor (queue drained %.1f us later)"
                % ((w2 - w1) * 1e6))
    except Exception as ex:  # noqa: BLE001
        log("launch gap failed: %s" % ex)
    del x, y
    torch.cuda.empty_cache()


# ------------------------------------------------------------------ training step
class TinyLlama(torch.nn.Module):
    """Fallback when transformers is missing: the Llama-3 block in torch.nn."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(c["vocab"], c["hidden"])
        self.layers = torch.nn.ModuleList()
        hd = c["hidden"] // c["heads"]
        for _ in range(c["layers"]):
            m = torch.nn.Module()
            m.n1 = torch.nn.RMSNorm(c["hidden"], eps=1e-5)
            m.qkv = torch.nn.Linear(c["hidden"], (c["heads"] + 2 * c["kv"]) * hd, bias=False)
            m.o = torch.nn.Linear(c["hidden"], c["hidden"], bias=False)
            m.n2 = torch.nn.RMSNorm(c["hidden"], eps=1e-5)
            m.gu = torch.nn.Linear(c["hidden"], 2 * c["ffn"], bias=False)
            m.down = torch.nn.Linear(c["ffn"], c["hidden"], bias=False)
            self.layers.append(m)
        self.norm = torch.nn.RMSNorm(c["hidden"], eps=1e-5)
        self.head = torch.nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, ids):
        c = self.c
        hd = c["hidden"] // c["heads"]
        x = self.embed(ids)
        b, s, _ = x.shape
        for m in self.layers:
            h = m.qkv(m.n1(x))
            q, k, v = h.split([c["heads"] * hd, c["kv"] * hd, c["kv"] * hd], dim=-1)
            q = q.view(b, s, c["heads"], hd).transpose(1, 2)
            k = k.view(b, s, c["kv"], hd).transpose(1, 2).repeat_interleave(c["heads"] // c["kv"], dim=1)
            v = v.view(b, s, c["kv"], hd).transpose(1, 2).repeat_interleave(c["heads"] // c["kv"], dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, -1)
            x = x + m.o(a)
            g, u = m.gu(m.n2(x)).chunk(2, dim=-1)
            x = x + m.down(F.silu(g) * u)
        logits = self.head(self.norm(x)).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), ids.view(-1))


def build_model(layers):
    c = dict(vocab=128256, hidden=4096, ffn=14336, heads=32, kv=8, layers=layers)
    try:
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["ffn"],
                          num_hidden_layers=layers, num_attention_heads=c["heads"], num_key_value_heads=c["kv"],
                          max_position_embeddings=8192, rope_theta=500000.0, rms_norm_eps=1e-5,
                          tie_word_embeddings=False, attn_implementation="sdpa")
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg)
        return model, "transformers LlamaForCausalLM (attn_implementation=sdpa)", \
            lambda ids: model(input_ids=ids, labels=ids).loss
    except Exception as ex:  # noqa: BLE001
        log("transformers model unavailable (%s); using the torch.nn fallback" % ex)
        with torch.device("cuda"):
            model = TinyLlama(c)
        return model, "torch.nn Llama-3 block (tools/measure_gpu.py TinyLlama)", lambda ids: model(ids)


def section_train():
    out = Csv("train.csv", ["gpu", "model", "layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "seq",
                            "batch", "params", "precision", "optimizer", "steps", "step_ms_median",
                            "step_ms_min", "step_ms_max", "tokens_per_s", "peak_allocated_gib",
                            "peak_reserved_gib", "activation_checkpointing", "trace", "profiled_step_ms", "note"])
    # (layers, seq, batch, trace, activation checkpointing, mode): mode "amp"
    # (fp32 parameters, bf16 autocast), "bf16" (bf16 parameters and
    # optimizer state, no autocast) or "compile" (amp, each decoder layer
    # under torch.compile, as torchtitan compiles its blocks).
    sets = {
        "eager": [(4, 4096, 2, True, False, "amp"), (2, 1024, 1, True, False, "amp"),
                  (4, 4096, 2, True, True, "amp"), (2, 8192, 1, False, False, "amp"),
                  (4, 2048, 1, False, False, "amp"), (8, 4096, 1, False, False, "amp"),
                  (4, 8192, 1, False, True, "amp"), (1, 4096, 4, False, False, "amp")],
        "modes": [(4, 4096, 2, True, False, "compile"), (4, 4096, 2, True, False, "bf16"),
                  (2, 1024, 1, True, False, "compile"), (2, 1024, 1, False, False, "bf16")],
    }
    configs = sets[ARGS.train_set]
    if ARGS.quick:
        configs = [(1, 512, 1, True, False, "amp")]
    for (layers, seq, batch, trace, ac, mode) in configs:
        if left() < ARGS.reserve + 20:
            log("train: out of time budget")
            break
        model = opt = None
        try:
            torch.cuda.empty_cache()
            torch.manual_seed(0)
            model, desc, loss_fn = build_model(layers)
            model.train()
            if mode == "bf16":
                model.to(torch.bfloat16)
            if mode == "compile":
                inner = model.model.layers if hasattr(model, "model") else model.layers
                for i in range(len(inner)):
                    inner[i] = torch.compile(inner[i])
                desc += ", each decoder layer under torch.compile"
            if ac:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            params = sum(p.numel() for p in model.parameters())
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
            ids = torch.randint(0, 128256, (batch, seq), device="cuda")

            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode != "bf16"):
                    loss = loss_fn(ids)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

            w0 = time.time()
            for _ in range(3 if mode != "compile" else 5):
                step()
            torch.cuda.synchronize()
            if mode == "compile":
                log("compiled and warmed up in %.1f s" % (time.time() - w0))
            torch.cuda.reset_peak_memory_stats()
            times = []
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            nsteps = 8 if not ARGS.quick else 2
            for _ in range(nsteps):
                s.record()
                step()
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            med = statistics.median(times)
            row = dict(gpu=gpu_name(), model=desc, layers=layers, hidden=4096, ffn=14336, heads=32, kv_heads=8,
                    vocab=128256, seq=seq, batch=batch, params=params, precision="bf16 params and optimizer state" if mode == "bf16" else "fp32 params, bf16 autocast",
                    optimizer="AdamW fused", steps=nsteps, step_ms_median="%.3f" % med,
                    step_ms_min="%.3f" % min(times), step_ms_max="%.3f" % max(times),
                    tokens_per_s="%.0f" % (batch * seq / (med * 1e-3)),
                    peak_allocated_gib="%.3f" % (torch.cuda.max_memory_allocated() / 2**30),
                    peak_reserved_gib="%.3f" % (torch.cuda.max_memory_reserved() / 2**30),
                    activation_checkpointing="full (per block, non-reentrant)" if ac else "none",
                    trace="", profiled_step_ms="",
                    note="zero_grad(set_to_none=True); 3 warm-up steps; CUDA events around each step")
            log("train %s L%d s%d b%d ac=%d: %.2f ms median, peak %.1f GiB (%s)" % (mode, layers, seq, batch, ac, med, torch.cuda.max_memory_allocated() / 2**30, desc))
            if trace and left() > ARGS.reserve:
                from torch.profiler import ProfilerActivity, profile, schedule

                tname = "trace_l%d_s%d_b%d%s%s.json" % (layers, seq, batch, "_ac" if ac else "",
                                                        "" if mode == "amp" else "_" + mode)
                path = os.path.join(ARGS.out, tname)
                prof_times = []
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                             schedule=schedule(wait=0, warmup=1, active=1),
                             on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
                    for _ in range(2):
                        s.record()
                        step()
                        e.record()
                        torch.cuda.synchronize()
                        prof_times.append(s.elapsed_time(e))
                        prof.step()
                if not os.path.exists(path):
                    prof.export_chrome_trace(path)
                with open(path, "rb") as fi, gzip.open(path + ".gz", "wb", compresslevel=9) as fo:
                    shutil.copyfileobj(fi, fo)
                os.unlink(path)
                row["trace"] = tname + ".gz"
                row["profiled_step_ms"] = "%.3f" % prof_times[-1]
                log("trace written: %d bytes gz; profiled step %.2f ms" %
                    (os.path.getsize(path + ".gz"), prof_times[-1]))
            out.row(**row)
        except Exception as ex:  # noqa: BLE001
            log("train L%d s%d b%d failed: %s" % (layers, seq, batch, ex))
            traceback.print_exc()
        finally:
            del model, opt
            torch.cuda.empty_cache()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--reserve", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--train-set", default="eager", choices=["eager", "modes"],
                    help="eager: the eight autocast steps; modes: torch.compile and pure-bf16 steps")
    ap.add_argument("--sections", default="env,gemm,gemm_data,sdpa,mem,train")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    secs = ARGS.sections.split(",")
    env = section_env()
    log("env:", json.dumps(env))
    with open(os.path.join(ARGS.out, "env.json"), "w") as f:
        json.dump(env, f, indent=1)
    # Order: the training step first (the scarce result), then kernels.
    for name, fn in (("train", section_train), ("gemm", section_gemm), ("gemm_data", section_gemm_data),
                     ("sdpa", section_sdpa), ("mem", section_mem)):
        if name not in secs:
            continue
        log("section %s (%.0f s left)" % (name, left()))
        try:
            fn()
        except Exception as ex:  # noqa: BLE001
            log("section %s failed: %s" % (name, ex))
            traceback.print_exc()
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
                            "--format=csv"], capture_output=True, text=True, timeout=20)
        env["nvidia_smi_after"] = q.stdout.strip()
        with open(os.path.join(ARGS.out, "env.json"), "w") as f:
            json.dump(env, f, indent=1)
    except Exception:  # noqa: BLE001
        pass
    log("done")


if __name__ == "__main__":
    sys.exit(main())
