#!/usr/bin/python3
"""Ex-situ tracing: one training step of a PyTorch model, profiled on the CPU.

Runs forward, loss, backward and the optimizer step of a model under
torch.profiler with record_shapes=True on the CPU and writes the operator
timeline as a Kineto-layout JSON trace ("cpu_op" events with "Input Dims",
"Input type" and, for convolutions and pools, "Concrete Inputs" as newer
PyTorch releases record them). `stepcast import cpu` maps every aten
operator to FLOPs and bytes and `stepcast replay` prices them on a GPU and
simulates data parallelism (PyTorch DDP) on N GPUs. No GPU is needed: this
is Echo's ex-situ idea.

Debian's python3-torch (1.13) is built without Kineto, so the profiler's
own exporter writes no shapes; this script serialises the profiler's events
in Kineto's layout itself. It calls the system BLAS: install OpenBLAS
(libopenblas0-pthread), the reference BLAS is ~20x slower (measured here:
3.8 vs 73 GFLOP/s for a 1024^3 fp32 matmul).

Batch sizes. Shapes of one step are affine in the batch size (every
activation dimension that depends on it is batch x a constant), so the step
is traced at two small batch sizes (2 and 3, cheap on a CPU) and the trace
for any other batch B is written with each dimension d(B) = d(2) + (d(3) -
d(2)) x (B - 2); the two traces must have the same operators in the same
order (aligned by name; the few operators the CPU backend adds for one
batch size only keep their traced shapes and are counted). Batch 1 is traced directly when asked for: with a batch
dimension of 1 some reshapes are views instead of copies. The trace records
this in its "stepcast" metadata.

Usage:
  tools/trace_torch.py MODEL [--batch 1,2,4] [--seq N] [--layers N] [--tp N] [--pp-stage K/P] [-o DIR]
      [--device cpu|meta] [--attention eager|sdpa] [--loss sum|ce] [--ac none|full|op]
      [--amp bf16|fp16] [--zero-grad zero|none] [--optimizer sgd|momentum|adamw]
MODEL: resnet50 resnet152 vgg19 gpt2 bert-large llama3-8b llama3-70b llama3-405b tiny-cnn tiny-gpt tiny-llama
       tiny-moe
Writes DIR/MODEL-bB.json.gz per batch size (MODEL-lL-tpN-sKofP-bB.json.gz
with --layers, --tp, --pp-stage; -seqN, -sdpa, -acX, -ce, -bf16, -zgnone
after them with those options).

As torchtitan trains (the llama models; llama3-70b and llama3-405b on meta
tensors only; docs/TRACE.md, "Tracing as
torchtitan trains"): on meta tensors (shapes only, nothing computed: a
full-size layer at 8192 tokens traces in about a second, every batch
directly), fused causal attention, an LM head with cross entropy, per-block
activation checkpointing (full, or torchtitan's per-op selective policy),
tensors recorded in a mixed-precision type, gradients freed by zero_grad.

Per-rank shards (--tp, --pp-stage; gpt2, bert-large, llama3-8b, tiny-gpt): one tensor-
parallel rank's shard of one pipeline stage, built at its shard shapes (no
weight at full size) with markers where the GPU run communicates; see
"shards" below and docs/TRACE.md, "Per-rank shards". `stepcast import cpu`
of one such trace per stage makes one job.

Models, as the harness behind validation/ddp records them in its operator
graphs (github.com/fwyc0573/aisimu @dfcd3a9, simulator_benchmark/data_ib/
torch/graphs: input shapes, module types, optimizer attributes): torchvision
VGG19 and ResNet-152 (224x224 images, 1000 classes, cross entropy); GPT-2
small and BERT-Large as the HuggingFace base models (GPT2Model: fused QKV,
tanh-approximated GELU written out elementwise, final LayerNorm, no LM head;
BertModel: separate Q/K/V, erf GELU, pooler, no pre-training heads),
sequence length 512 for both, built here from torch.nn in the same layout,
with the sum of their outputs as the loss (the graphs do not show theirs);
plain SGD (lr 0.01, no momentum, no weight decay); fp32 weights. The
--optimizer momentum (SGD, momentum 0.9, weight decay 1e-4, torchvision's
reference) and --optimizer adamw (per-parameter AdamW, foreach off as
PyTorch 1.x ran on GPUs) trace other setups.

tiny-moe is the tiny GPT (hidden 32, 2 heads, sequence 16) with a
Mixtral-style MoE FFN per layer: a router (moe.gate) and 4 GELU experts
(moe.experts.<i>: fc1, fc2, FFN 64), top 2, the tokens routed round robin
(a uniform router: every expert gets tokens x 2 / 4), for the re-target's
expert parallelism (docs/TRACE.md, "Expert parallelism").
"""

import argparse
import gzip
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


# ---------------------------------------------------------------- shards
#
# Per-rank shards (issue 20 item 6; docs/TRACE.md, "Per-rank shards"):
# with --tp N the model is built with one TP rank's shapes, by the rules
# src/trace/shard.c applies to a whole-model trace (Megatron-LM, Shoeybi et
# al. 2019, section 3: column-parallel linears split their output features
# and heads by N, row-parallel ones their input features, the vocabulary
# embedding its rows); with --pp-stage k/P only stage k's layers (shard.c's
# even cut: the first layers % P stages one more; the embedding on the
# first stage, the final norm and loss on the last). Where the GPU run
# communicates, a zero-length profiler range (a marker) names the
# collective and its tensor: Megatron's f (identity forward, all-reduce of
# the input gradient in backward) before each column-parallel linear, g
# (all-reduce forward, identity backward) after each row-parallel linear and
# the vocab-parallel embedding, and the pipeline's receive / send of the
# activation (its gradient travelling back) at the stage's ends. The
# markers are custom autograd Functions, as Megatron's are, so their
# backward halves run where the autograd engine reaches them. They leave
# the trace as "stepcast::tp_all_reduce[bytes=N]", "stepcast::pp_send[...]"
# and "stepcast::pp_recv[...]" operator events; `stepcast import cpu`
# turns them into the collectives and p2p of the stage's program.

MARK = "stepcast::"


class Shard:
    """The rank a trace is of: tp ranks, pipeline stage `stage` of `stages`."""

    def __init__(self, tp=1, stage=0, stages=1):
        self.tp, self.stage, self.stages = tp, stage, stages
        self.first, self.last = stage == 0, stage == stages - 1

    def span(self, n):
        """Layers [lo, hi) of this stage out of n (shard.c's even cut)."""
        sizes = [n // self.stages + (s < n % self.stages) for s in range(self.stages)]
        lo = sum(sizes[:self.stage])
        return lo, lo + sizes[self.stage]

    def layers(self, make, n):
        """The stage's layers, named by their index in the whole model."""
        if self.stages == 1:
            return nn.ModuleList(make() for _ in range(n))
        lo, hi = self.span(n)
        return nn.ModuleDict((str(i), make()) for i in range(lo, hi))

    @staticmethod
    def iter(mods):
        return mods.values() if isinstance(mods, nn.ModuleDict) else mods


def _marker(kind, t):
    """A zero-length profiler range: a communication of tensor t here. Its
    name carries the shape and element size (turned into bytes when the
    trace is written, after batch extrapolation)."""
    h = torch.ops.profiler._record_function_enter_new(
        "%sC:%s:%s:%d" % (MARK, kind, ",".join(str(v) for v in t.shape), t.element_size()), None)
    torch.ops.profiler._record_function_exit._RecordFunction(h)


def _comm(name, fwd, bwd):
    """An identity autograd Function (named `name`, as its backward node
    is) marking communication `fwd` in forward and `bwd` in backward (None:
    none)."""
    def forward(ctx, x):
        if fwd:
            _marker(fwd, x)
        return x.view_as(x)

    def backward(ctx, g):
        if bwd:
            _marker(bwd, g)
        return g

    return type(name, (torch.autograd.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


_TPIn = _comm("_TPIn", None, "tp_all_reduce")  # Megatron's f
_TPOut = _comm("_TPOut", "tp_all_reduce", None)  # Megatron's g
_PPIn = _comm("_PPIn", "pp_recv", "pp_send")  # the activation received, its gradient sent back
_PPOut = _comm("_PPOut", "pp_send", "pp_recv")  # the activation sent, its gradient received


def tp_in(x, tp):
    return _TPIn.apply(x) if tp > 1 else x


def tp_out(x, tp):
    return _TPOut.apply(x) if tp > 1 else x


def pp_in(x):
    return _PPIn.apply(x)


def pp_out(x):
    return _PPOut.apply(x)


# ---------------------------------------------------------------- models

class GPT2Block(nn.Module):
    """GPT-2's layer; with tp > 1 one TP rank's shard (Megatron-LM's
    column-parallel c_attn and c_fc: output features / tp, heads / tp;
    row-parallel c_proj and mlp_proj: input features / tp, their outputs
    all-reduced), as src/trace/shard.c's rules re-target the full layer."""

    def __init__(self, d, heads, drop=0.1, tp=1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d // tp)
        self.c_proj = nn.Linear(d // tp, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d // tp)
        self.mlp_proj = nn.Linear(4 * d // tp, d)
        self.drop = drop
        self.heads = heads // tp
        self.hd, self.tp = d // heads, tp

    def forward(self, x, mask):
        b, s, d = x.shape
        h, hd, tp = self.heads, self.hd, self.tp
        q, k, v = self.c_attn(tp_in(self.ln_1(x), tp)).split(h * hd, dim=2)
        q = q.view(b, s, h, hd).permute(0, 2, 1, 3)
        k = k.view(b, s, h, hd).permute(0, 2, 1, 3)
        v = v.view(b, s, h, hd).permute(0, 2, 1, 3)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / math.sqrt(hd)
        w = torch.where(mask[:, :, :s, :s], w, torch.tensor(-1e4, dtype=w.dtype))
        w = F.dropout(F.softmax(w, dim=-1), self.drop, self.training)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, h * hd)
        x = x + F.dropout(tp_out(self.c_proj(a), tp), self.drop, self.training)
        m = self.c_fc(tp_in(self.ln_2(x), tp))
        m = 0.5 * m * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (m + 0.044715 * torch.pow(m, 3.0))))
        return x + F.dropout(tp_out(self.mlp_proj(m), tp), self.drop, self.training)


class GPT2(nn.Module):
    """GPT2Model; with a Shard, one TP rank of one pipeline stage: the
    stage's layers (named as in the whole model), the vocab-parallel wte
    (ceil(vocab / tp) rows, its output all-reduced) on the first stage, the
    final norm and loss on the last, p2p markers at the cut."""

    def __init__(self, vocab=50257, pos=1024, d=768, layers=12, heads=12, shard=None):
        super().__init__()
        sh = shard or Shard()
        self.sh = sh
        if sh.first:
            self.wte = nn.Embedding(-(-vocab // sh.tp), d)
            self.wpe = nn.Embedding(pos, d)
        self.blocks = sh.layers(lambda: GPT2Block(d, heads, tp=sh.tp), layers)
        if sh.last:
            self.ln_f = nn.LayerNorm(d)
        self.register_buffer("mask", torch.tril(torch.ones(pos, pos, dtype=torch.bool)).view(1, 1, pos, pos))

    def forward(self, inp):
        sh = self.sh
        if sh.first:
            s = inp.shape[1]
            x = F.dropout(tp_out(self.wte(inp), sh.tp) + self.wpe(torch.arange(s).unsqueeze(0)), 0.1, self.training)
        else:
            x = pp_in(inp)
        for blk in sh.iter(self.blocks):
            x = blk(x, self.mask)
        return self.ln_f(x).sum() if sh.last else pp_out(x)


class Expert(nn.Module):
    """One expert of an MoE layer: a GELU MLP (fc1, fc2)."""

    def __init__(self, d, ffn):
        super().__init__()
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MoE(nn.Module):
    """A Mixtral-style sparse MoE FFN (Jiang et al. 2024, "Mixtral of
    Experts": a linear router over n experts, the top-k weights soft-maxed,
    each token's output the weighted sum of its k experts'), each expert an
    nn.Module under experts.<i>, as src/trace/shard.c's expert rule finds
    them. The router's weights are computed, but the tokens are routed
    round robin (copy j of token i to expert (i k + j) mod n): a uniform
    router, every expert getting tokens x k / n of them, the balanced load
    an auxiliary loss aims at, and shapes that do not depend on the
    weights."""

    def __init__(self, d, ffn, experts=4, topk=2):
        super().__init__()
        self.gate = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList([Expert(d, ffn) for _ in range(experts)])
        self.topk = topk

    def forward(self, x):
        b, s, d = x.shape
        t = x.reshape(b * s, d)
        n, k = len(self.experts), self.topk
        w, _ = torch.topk(self.gate(t), k, dim=-1)
        w = F.softmax(w, dim=-1)
        route = (torch.arange(b * s * k) % n).view(b * s, k)
        out = torch.zeros_like(t)
        for e, ex in enumerate(self.experts):
            tok, slot = (route == e).nonzero(as_tuple=True)
            out = out.index_add(0, tok, ex(t[tok]) * w[tok, slot].unsqueeze(-1))
        return out.view(b, s, d)


class MoEBlock(GPT2Block):
    """GPT-2's layer with an MoE FFN (moe) in place of its MLP."""

    def __init__(self, d, heads, experts=4, topk=2):
        super().__init__(d, heads)
        del self.c_fc, self.mlp_proj
        self.moe = MoE(d, 2 * d, experts, topk)

    def forward(self, x, mask):
        b, s, d = x.shape
        h, hd = self.heads, self.hd
        q, k, v = self.c_attn(self.ln_1(x)).split(h * hd, dim=2)
        q, k, v = (t.view(b, s, h, hd).permute(0, 2, 1, 3) for t in (q, k, v))
        w = torch.where(mask[:, :, :s, :s], torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd),
                        torch.tensor(-1e4, dtype=q.dtype))
        a = torch.matmul(F.dropout(F.softmax(w, dim=-1), self.drop, self.training), v)
        x = x + F.dropout(self.c_proj(a.permute(0, 2, 1, 3).contiguous().view(b, s, h * hd)), self.drop,
                          self.training)
        return x + F.dropout(self.moe(self.ln_2(x)), self.drop, self.training)


class TinyMoE(GPT2):
    """The tiny GPT with MoE layers (4 experts, top 2)."""

    def __init__(self, vocab=64, pos=16, d=32, layers=2, heads=2):
        super().__init__(vocab=vocab, pos=pos, d=d, layers=0, heads=heads)
        self.blocks = nn.ModuleList([MoEBlock(d, heads) for _ in range(layers)])


class BertLayer(nn.Module):
    """BERT-Large's encoder layer (post-LN); with tp > 1 one TP rank's shard
    as shard.c's rules re-target it: q, k, v and fc1 column-parallel (output
    features and heads / tp, each all-reducing its input gradient), o and
    fc2 row-parallel (input features / tp, their outputs all-reduced before
    the bias-free residual path; their biases, replicated, added once)."""

    def __init__(self, d, heads, ffn, drop=0.1, tp=1):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d // tp), nn.Linear(d, d // tp), nn.Linear(d, d // tp)
        self.o = nn.Linear(d // tp, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.fc1, self.fc2 = nn.Linear(d, ffn // tp), nn.Linear(ffn // tp, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)
        self.heads, self.hd, self.drop, self.tp = heads // tp, d // heads, drop, tp

    def forward(self, x, amask):
        b, s, d = x.shape
        h, hd, tp = self.heads, self.hd, self.tp

        def split(t):
            return t.view(b, s, h, hd).permute(0, 2, 1, 3)

        q, k, v = split(self.q(tp_in(x, tp))), split(self.k(tp_in(x, tp))), split(self.v(tp_in(x, tp)))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + amask
        w = F.dropout(F.softmax(w, dim=-1), self.drop, self.training)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, h * hd)
        x = self.ln1(F.dropout(tp_out(self.o(a), tp), self.drop, self.training) + x)
        m = self.fc2(F.gelu(self.fc1(tp_in(x, tp))))
        return self.ln2(F.dropout(tp_out(m, tp), self.drop, self.training) + x)


class Bert(nn.Module):
    """BERT-Large (BertModel with its pooler; the loss the sum of the last
    hidden states and the pooled output). With a Shard as GPT2's: the
    vocab-parallel word embedding (ceil(vocab / tp) rows, its output
    all-reduced), the position and type embeddings and their LayerNorm on
    the first stage, the pooler and loss on the last, p2p markers at the
    cut."""

    def __init__(self, vocab=30522, pos=512, d=1024, layers=24, heads=16, ffn=4096, shard=None):
        super().__init__()
        sh = shard or Shard()
        self.sh = sh
        if sh.first:
            self.word = nn.Embedding(-(-vocab // sh.tp), d)
            self.pos = nn.Embedding(pos, d)
            self.typ = nn.Embedding(2, d)
            self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = sh.layers(lambda: BertLayer(d, heads, ffn, tp=sh.tp), layers)
        if sh.last:
            self.pooler = nn.Linear(d, d)

    def forward(self, inp):
        sh = self.sh
        b, s = inp.shape[:2]
        if sh.first:
            ids = inp
            x = tp_out(self.word(ids), sh.tp) + self.pos(torch.arange(s).unsqueeze(0)) + self.typ(torch.zeros_like(ids))
            x = F.dropout(self.ln(x), 0.1, self.training)
        else:
            x = pp_in(inp)
        amask = torch.zeros(b, 1, 1, s)
        for layer in sh.iter(self.layers):
            x = layer(x, amask)
        if not sh.last:
            return pp_out(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x.sum() + pooled.sum()


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d, device=DEV.device))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Dev:
    """Where the Llama models are built and run: "cpu", or "meta" (tensors
    with shapes and no storage: every operator dispatches and is profiled
    with its shapes, none computes, so a full-size layer at 8192 tokens
    traces in seconds; the trace is of costs, not values)."""
    device = "cpu"
    set_to_none = False  # zero_grad(set_to_none=...): --zero-grad none


DEV = Dev()


def _op_marker(name, tensors, concrete):
    """A zero-length profiler range standing for aten operator `name`, which
    PyTorch 1.13 does not have: it leaves the trace as that operator with
    the tensors' shapes as "Input Dims" and `concrete` as "Concrete Inputs"
    (see annotate())."""
    h = torch.ops.profiler._record_function_enter_new(
        "%sO:%s:%s:%s" % (MARK, name, ";".join(",".join(str(v) for v in t.shape) for t in tensors),
                          "|".join(concrete)), None)
    torch.ops.profiler._record_function_exit._RecordFunction(h)


class _FusedAttention(torch.autograd.Function):
    """Causal fused attention (FlashAttention, as PyTorch 2's SDPA runs it on
    a GPU) over q [b, h, s, d], k and v [b, h, s, d]: recorded as the
    operators SDPA's flash kernel records, aten::_scaled_dot_product_flash_
    attention (is_causal, its 5th argument, True) and its backward (is_causal
    the 12th), so that `import cpu` prices one attention kernel each way
    instead of the s x s scores. Nothing is computed (outputs and gradients
    are uninitialised): a trace is of costs."""

    @staticmethod
    def forward(ctx, q, k, v):
        _op_marker("aten::_scaled_dot_product_flash_attention", (q, k, v), ["", "", "", "0.0", "True", "False", ""])
        ctx.save_for_backward(q, k, v)
        return torch.empty_like(q)

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        conc = [""] * 11 + ["True"]
        _op_marker("aten::_scaled_dot_product_flash_attention_backward", (g, q, k, v), conc)
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


class _Recompute(torch.autograd.Function):
    """Identity on a block's output whose backward, the first of the block's
    when the autograd engine reaches it, first re-runs `fn` (without
    autograd): activation checkpointing's recomputation, at the point where
    torch.utils.checkpoint runs it (the first saved tensor the block's
    backward unpacks)."""

    @staticmethod
    def forward(ctx, y, fn):
        ctx.fn = fn
        return y.view_as(y)

    @staticmethod
    def backward(ctx, g):
        with torch.no_grad():
            ctx.fn()
        return g, None


class LlamaAttention(nn.Module):
    """Grouped-query attention with rotary embeddings: eager (the s x s
    scores materialised, as for GPT-2 and BERT here) or fused
    (_FusedAttention, after repeating the KV heads as torchtitan's repeat_kv
    does). With tp > 1 one TP rank's shard: heads and KV heads / tp,
    q/k/v_proj column-parallel (each all-reduces its input gradient, as
    shard.c's rules do), o_proj row-parallel."""

    def __init__(self, d, heads, kv_heads, tp=1, fused=False):
        super().__init__()
        self.num_heads, self.kv_heads, self.hd = heads // tp, kv_heads // tp, d // heads
        self.tp, self.fused = tp, fused
        dev = DEV.device
        self.q_proj = nn.Linear(d, self.num_heads * self.hd, bias=False, device=dev)
        self.k_proj = nn.Linear(d, self.kv_heads * self.hd, bias=False, device=dev)
        self.v_proj = nn.Linear(d, self.kv_heads * self.hd, bias=False, device=dev)
        self.o_proj = nn.Linear(self.num_heads * self.hd, d, bias=False, device=dev)
        self.saved = None

    def rot(self, t, cos, sin):
        hd = self.hd
        t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
        return t * cos + torch.cat((-t2, t1), dim=-1) * sin

    def heads(self, t, n):
        b, s = t.shape[:2]
        return t.view(b, s, n, self.hd).transpose(1, 2)

    def repeat_kv(self, t):
        b, n, s, hd = t.shape
        rep = self.num_heads // n
        return t[:, :, None].expand(b, n, rep, s, hd).reshape(b, n * rep, s, hd)

    def core(self, q, k, v, mask):
        """q, k, v after RoPE, [b, heads, s, hd]: the attention output [b, s, h hd]."""
        b, _, s, hd = q.shape
        rep = self.num_heads // self.kv_heads
        if self.fused:  # torchtitan's repeat_kv (expand, then a copy)
            k, v = self.repeat_kv(k), self.repeat_kv(v)
            a = _FusedAttention.apply(q, k, v)
        else:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + mask
            a = torch.matmul(F.softmax(w, dim=-1), v)
        return a.transpose(1, 2).contiguous().view(b, s, self.num_heads * hd)

    def forward(self, x, cos, sin, mask):
        tp = self.tp
        qp = self.q_proj(tp_in(x, tp))
        k = self.rot(self.heads(self.k_proj(tp_in(x, tp)), self.kv_heads), cos, sin)
        vp = self.v_proj(tp_in(x, tp))
        a = self.core(self.rot(self.heads(qp, self.num_heads), cos, sin), k, self.heads(vp, self.kv_heads), mask)
        self.saved = (qp, vp, a)
        return tp_out(self.o_proj(a), tp)


class LlamaMLP(nn.Module):
    def __init__(self, d, ffn, tp=1):
        super().__init__()
        self.tp = tp
        dev = DEV.device
        self.gate_proj = nn.Linear(d, ffn // tp, bias=False, device=dev)
        self.up_proj = nn.Linear(d, ffn // tp, bias=False, device=dev)
        self.down_proj = nn.Linear(ffn // tp, d, bias=False, device=dev)
        self.saved = None

    def forward(self, x):
        tp = self.tp
        g = self.gate_proj(tp_in(x, tp))
        self.saved = g
        return tp_out(self.down_proj(F.silu(g) * self.up_proj(tp_in(x, tp))), tp)


class LlamaBlock(nn.Module):
    """A Llama layer. Activation checkpointing (ac, tp 1 only):
    "full" re-runs the whole block's forward at the start of its backward
    (torchtitan's and Megatron's full recompute); "op" re-runs what
    torchtitan's per-op selective checkpointing (its default for Llama 3)
    does not save: its policy keeps the outputs of matmuls except every
    second one in the block (mm count odd: wq, wv, w1=gate_proj, w2=
    down_proj kept; wk, wo, w3=up_proj recomputed) and of attention, so the
    backward first recomputes both RMSNorms, k_proj and RoPE of q and k, the
    KV-head repeat, o_proj, up_proj, SiLU and the gate product."""

    def __init__(self, d, heads, kv_heads, ffn, tp=1, fused=False, ac="none"):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaAttention(d, heads, kv_heads, tp, fused)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d, ffn, tp)
        self.ac = ac

    def forward(self, x, cos, sin, mask):
        xm = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        y = xm + self.mlp(self.post_attention_layernorm(xm))
        if self.ac == "none":
            return y
        if self.ac == "full":
            fn = lambda: self.forward_plain(x, cos, sin, mask)
        else:
            at, saved, g = self.self_attn, self.self_attn.saved, self.mlp.saved

            def fn():
                qp, vp, a = saved
                h = self.input_layernorm(x)
                k = at.rot(at.heads(at.k_proj(h), at.kv_heads), cos, sin)
                at.rot(at.heads(qp, at.num_heads), cos, sin)
                at.repeat_kv(k)  # attention's inputs: its backward needs them
                at.repeat_kv(at.heads(vp, at.kv_heads))
                at.o_proj(a)
                h2 = self.post_attention_layernorm(xm)
                F.silu(g) * self.mlp.up_proj(h2)
        return _Recompute.apply(y, fn)

    def forward_plain(self, x, cos, sin, mask):
        xm = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return xm + self.mlp(self.post_attention_layernorm(xm))


class Llama(nn.Module):
    """Llama-3-8B's layer shape (hidden 4096, 32 heads, 8 KV heads, SwiGLU
    FFN 14336, RMSNorm, rotary base 500000), HuggingFace module names,
    vocabulary 128256. Without an LM head (as the GPT-2 and BERT models
    here: the loss is the sum of the final norm's output) unless ce: then
    torchtitan's head, an untied lm_head linear and cross entropy over the
    logits cast to fp32. With a Shard as GPT2's: every stage computes its
    rotary tables (a stage needs them)."""

    def __init__(self, vocab=128256, d=4096, layers=32, heads=32, kv_heads=8, ffn=14336, theta=500000.0,
                 shard=None, fused=False, ac="none", ce=False):
        super().__init__()
        sh = shard or Shard()
        self.sh = sh
        dev = DEV.device
        if sh.first:
            self.embed_tokens = nn.Embedding(-(-vocab // sh.tp), d, device=dev)
        self.layers = sh.layers(lambda: LlamaBlock(d, heads, kv_heads, ffn, sh.tp, fused, ac), layers)
        if sh.last:
            self.norm = RMSNorm(d)
            if ce:
                self.lm_head = nn.Linear(d, vocab, bias=False, device=dev)
        self.hd, self.theta, self.fused, self.vocab, self.ce = d // heads, theta, fused, vocab, ce

    def forward(self, inp):
        sh = self.sh
        b, s = inp.shape[:2]
        dev = inp.device
        inv = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, device=dev).float() / self.hd))
        f = torch.outer(torch.arange(s, device=dev).float(), inv)
        emb = torch.cat((f, f), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = None if self.fused else torch.full((s, s), float("-inf"), device=dev).triu(1)[None, None]
        x = tp_out(self.embed_tokens(inp), sh.tp) if sh.first else pp_in(inp)
        for layer in sh.iter(self.layers):
            x = layer(x, cos, sin, mask)
        if not sh.last:
            return pp_out(x)
        x = self.norm(x)
        if not self.ce:
            return x.sum()
        logits = self.lm_head(x)
        return F.cross_entropy(logits.flatten(0, 1).float(), self.labels.flatten(0, 1))


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x, y):
        x = self.pool(F.relu(self.bn(self.conv(x))))
        return F.cross_entropy(self.fc(torch.flatten(x, 1)), y)


OPTIMIZERS = {
    # Plain SGD (lr 0.01, no momentum, no weight decay), as the harness behind
    # the measured DDP step times records for every model.
    "sgd": lambda p: torch.optim.SGD(p, lr=0.01),
    "momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-4, weight_decay=0.01, foreach=False),
}


def shard_inputs(model, sh, s, d, vocab):
    """Inputs of a (shard) transformer at batch b: token ids on the first
    stage (of the rank's vocabulary rows), else the received activation (a
    leaf that needs its gradient: it is sent back); a stage before the last
    backpropagates the gradient its next stage would send (model.grad_out)."""
    dev = DEV.device

    def make(b):
        if not sh.last:
            model.grad_out = torch.ones(b, s, d, device=dev)
        elif getattr(model, "ce", False):
            model.labels = torch.randint(0, vocab, (b, s), device=dev)
        if sh.first:
            return (torch.randint(0, -(-vocab // sh.tp), (b, s), device=dev),)
        return (torch.randn(b, s, d, requires_grad=True, device=dev),)
    return make


def build(name, seq, optimizer="sgd", layers=0, shard=None, attention="eager", ac="none", loss="sum"):
    """Returns (model, make_inputs(batch) -> args, optimizer factory, seq used);
    layers > 0 overrides a transformer's layer count; shard: the TP rank and
    pipeline stage to build (gpt2 and llama3-8b)."""
    torch.manual_seed(0)
    sgd = OPTIMIZERS[optimizer]
    sh = shard or Shard()
    if (sh.tp > 1 or sh.stages > 1) and name not in ("gpt2", "bert-large", "llama3-8b", "tiny-gpt", "tiny-llama"):
        raise SystemExit("trace_torch.py: --tp and --pp-stage build gpt2, bert-large, llama3-8b, tiny-gpt and "
                         "tiny-llama shards only")
    if sh.tp > 1 and ac != "none":
        raise SystemExit("trace_torch.py: --ac with --tp: not built (the recomputation would repeat the TP markers)")
    if name in ("resnet50", "resnet152", "vgg19"):
        import torchvision
        net = getattr(torchvision.models, name)()

        class Wrap(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x, y):
                return F.cross_entropy(self.m(x), y)

        model = Wrap(net)
        inputs = lambda b: (torch.randn(b, 3, 224, 224), torch.randint(0, 1000, (b,)))
        return model, inputs, sgd, 0
    if name == "tiny-cnn":
        inputs = lambda b: (torch.randn(b, 3, 16, 16), torch.randint(0, 10, (b,)))
        return TinyCNN(), inputs, sgd, 0
    if name == "gpt2":
        s = seq or 512
        model = GPT2(layers=layers or 12, shard=sh)
        return model, shard_inputs(model, sh, s, 768, 50257), sgd, s
    if name == "tiny-gpt":
        s = seq or 16
        model = GPT2(vocab=64, pos=s, d=32, layers=layers or 2, heads=2, shard=sh)
        return model, shard_inputs(model, sh, s, 32, 64), sgd, s
    if name == "tiny-moe":
        s = seq or 16
        model = TinyMoE(pos=s, layers=layers or 2)
        return model, shard_inputs(model, sh, s, 32, 64), sgd, s
    # Llama 3.1 shapes (the models' config.json: hidden, heads, KV heads,
    # FFN, vocabulary 128256, rotary base 500000), layers as published.
    llama = {"llama3-8b": (dict(), 32), "llama3-70b": (dict(d=8192, heads=64, ffn=28672), 80),
             "llama3-405b": (dict(d=16384, heads=128, ffn=53248), 126),
             "tiny-llama": (dict(vocab=64, d=32, heads=4, kv_heads=2, ffn=64), 2)}
    if name in llama:
        if name in ("llama3-70b", "llama3-405b") and DEV.device != "meta":
            raise SystemExit("trace_torch.py: %s is traced on meta tensors only (--device meta): its weights "
                             "do not fit a CPU run" % name)
        s = seq or (16 if name == "tiny-llama" else 8192)
        kw = dict(llama[name][0], layers=layers or llama[name][1], shard=sh,
                  fused=attention == "sdpa", ac=ac, ce=loss == "ce")
        model = Llama(**kw)
        return model, shard_inputs(model, sh, s, kw.get("d", 4096), kw.get("vocab", 128256)), sgd, s
    if attention != "eager" or ac != "none" or loss != "sum" or DEV.device != "cpu":
        raise SystemExit("trace_torch.py: --attention, --ac, --loss and --device build the llama models only")
    if name == "bert-large":
        s = seq or 512
        model = Bert(layers=layers or 24, shard=sh)
        return model, shard_inputs(model, sh, s, 1024, 30522), sgd, s
    raise SystemExit("trace_torch.py: unknown model %r" % name)


# ---------------------------------------------------------------- tracing

def concrete_hooks(model, queue):
    """Forward pre-hooks that record, in call order, the scalar arguments of
    the aten operator each conv / pool module calls (not in 1.13's shapes)."""
    def lst(v, n=2):
        v = v if isinstance(v, (tuple, list)) else (v,) * n
        return "[" + ", ".join(str(int(a)) for a in v) + "]"

    def hook(mod, inp):
        if isinstance(mod, nn.Conv2d):
            pad = mod.padding if not isinstance(mod.padding, str) else (0, 0)
            queue.append(("aten::convolution", ["", "", "", lst(mod.stride), lst(pad), lst(mod.dilation),
                                                "False", "[0, 0]", str(mod.groups)]))
            # Its backward: the input gradient is computed only when the
            # input needs one (not for the first layer, fed by the data).
            mask = "[%s, True, %s]" % (bool(inp[0].requires_grad), mod.bias is not None)
            key = (tuple(inp[0].shape), tuple(mod.weight.shape))
            queue.append(("backward", key, ["", "", "", "", lst(mod.stride), lst(pad), lst(mod.dilation),
                                            "False", "[0, 0]", str(mod.groups), mask]))
        elif isinstance(mod, nn.MaxPool2d):
            stride = mod.stride if mod.stride is not None else mod.kernel_size
            queue.append(("aten::max_pool2d", ["", lst(mod.kernel_size), lst(stride), lst(mod.padding),
                                               lst(mod.dilation), str(bool(mod.ceil_mode))]))
        elif isinstance(mod, nn.AdaptiveAvgPool2d):
            queue.append(("aten::adaptive_avg_pool2d", ["", lst(mod.output_size)]))

    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.MaxPool2d, nn.AdaptiveAvgPool2d)):
            m.register_forward_pre_hook(hook)


# ---------------------------------------------------------------- modules
#
# Module structure (docs/TRACE.md, "Module paths"): every operator of the
# trace carries the nn.Module it ran in ("Module": the dotted path of
# named_modules(), "" the model itself; "Module Type": the class name) and
# the pass ("Pass": forward, backward, optimizer). Forward operators take the
# innermost module whose forward encloses them: forward pre- and post-hooks
# open and close a profiler range per module call (RecordFunction handles
# without the tensor record_function() allocates, so that the ranges add no
# operators). Backward operators take the module of the forward operator
# that created their autograd node (the profiler's sequence numbers link
# them). AccumulateGrad and the optimizer's per-parameter operators name
# the parameter ("Parameter": weight, bias): a gradient hook on each
# parameter puts a marker range inside its AccumulateGrad; the optimizer and
# zero_grad() visit the parameters in order, matched by shape. Attention
# modules give their head count ("Module Heads", from num_heads, n_head,
# heads or num_attention_heads). The ranges are dropped from the trace.


class Marks:
    def __init__(self, model):
        self.model = model
        self.stack = []
        self.types, self.heads = {}, {}
        self.params = [(n, p) for n, p in model.named_parameters()]
        self.leaf_input = not getattr(model, "sh", Shard()).first
        enter = torch.ops.profiler._record_function_enter_new
        leave = torch.ops.profiler._record_function_exit._RecordFunction

        def pre(mod, inp, path=None):
            self.stack.append(enter(MARK + "M:" + path, None))

        def post(mod, inp, out, path=None):
            leave(self.stack.pop())

        for path, mod in model.named_modules():
            self.types[path] = type(mod).__name__
            for a in ("num_heads", "n_head", "heads", "num_attention_heads"):
                v = getattr(mod, a, None)
                if isinstance(v, int) and v > 0:
                    self.heads[path] = v
                    break
            mod.register_forward_pre_hook(lambda m, i, path=path: pre(m, i, path))
            mod.register_forward_hook(lambda m, i, o, path=path: post(m, i, o, path))

        def grad_hook(name):
            def h(g):
                leave(enter(MARK + "P:" + name, None))
            return h

        for n, p in self.params:
            p.register_hook(grad_hook(n))

    def phase(self, name):
        return torch.ops.profiler._record_function_enter_new(MARK + "S:" + name, None)


def split_param(name):
    mod, _, leaf = name.rpartition(".")
    return mod, leaf


def annotate(evs, marks):
    """Sets e["module"], e["mtype"], e["pass"], e["param"], e["heads"] on the
    operators of evs (start order) and drops the marker ranges."""
    byid = {e["id"]: e for e in evs}
    # Ranges: phases and module calls, per thread, by time containment.
    out, stack, seq_mod = [], {}, {}
    for e in evs:
        st = stack.setdefault(e["tid"], [])
        while st and st[-1]["end"] <= e["ts"]:
            st.pop()
        if e["name"].startswith(MARK + "C:"):  # a communication marker: kept as an operator
            _, kind, shape, eb = e["name"][len(MARK):].split(":")
            e["name"] = MARK + kind
            e["dims"] = [[int(v) for v in shape.split(",") if v]]
            e["marker_eb"] = int(eb)
            e["end"] = e["ts"]
            phase = next((a["mark"][1] for a in reversed(st) if a.get("mark", ("",))[0] == "S"), "")
            e["pass"] = phase
            e["acc"] = None
            out.append(e)
            continue
        if e["name"].startswith(MARK + "O:"):  # an operator 1.13 lacks (_op_marker): named as PyTorch 2 does
            name, shapes, conc = e["name"][len(MARK) + 2:].rsplit(":", 2)
            e["name"] = name
            e["dims"] = [[int(v) for v in t.split(",") if v] for t in shapes.split(";")]
            e["concrete"] = conc.split("|")
        elif e["name"].startswith(MARK):
            kind, _, arg = e["name"][len(MARK):].partition(":")
            e["mark"] = (kind, arg)
            if kind == "P":  # the AccumulateGrad around it names its parameter
                for a in reversed(st):
                    if a["name"] == "torch::autograd::AccumulateGrad":
                        a["param_name"] = arg
                        break
            st.append(e)
            continue
        phase = next((a["mark"][1] for a in reversed(st) if a.get("mark", ("",))[0] == "S"), "")
        mod = next((a["mark"][1] for a in reversed(st) if a.get("mark", ("",))[0] == "M"), None)
        node = next((a for a in reversed(st) if a["name"].startswith("autograd::engine::evaluate_function")),
                    None)
        e["pass"] = phase or ("backward" if node is not None else "")
        if mod is not None:  # a module's forward (in backward: re-run by activation checkpointing)
            e["module"] = mod
            if phase == "backward":
                e["pass"] = "recompute"
            # An operator that creates no autograd node still records the
            # next sequence number (the one the next node takes): the last
            # forward operator with a number is the node's.
            if e["seq"] >= 0 and phase == "forward":
                seq_mod[e["seq"]] = mod
        elif node is not None and node["seq"] >= 0:
            e["node_seq"] = node["seq"]
        e["acc"] = next((a for a in reversed(st) if a["name"] == "torch::autograd::AccumulateGrad"), None)
        if phase == "optimizer":  # the phase range, and the operator called directly in it
            i = max(k for k, a in enumerate(st) if a.get("mark", ("",))[0] == "S")
            e["segment"] = st[i]["id"]
            e["top"] = next((a["id"] for a in st[i + 1:] if a["name"].startswith("aten::")), e["id"])
        st.append(e)
        out.append(e)
    for e in out:  # backward: the module of the forward op behind the node
        if "node_seq" in e and e["node_seq"] in seq_mod:
            e["module"] = seq_mod[e["node_seq"]]
        if e["name"].startswith("autograd::engine::evaluate_function") and e["seq"] in seq_mod:
            e["module"] = seq_mod[e["seq"]]
    # Gradient accumulation: the parameter its marker named. A stage after
    # the first receives its input as a leaf that needs a gradient (which
    # is sent back, not accumulated: a GPU run keeps the tensor and launches
    # nothing), so AccumulateGrad without a parameter is dropped there.
    drop = set()
    for e in out:
        acc = e.pop("acc")
        if e["name"] == "torch::autograd::AccumulateGrad":
            acc = e
        if acc is not None and "param_name" in acc:
            e["module"], e["param"] = split_param(acc["param_name"])
        elif acc is not None and marks.leaf_input:
            drop.add(e["id"])
    if drop:  # ... with the autograd node around it
        gone = [(e["tid"], e["ts"]) for e in out if e["id"] in drop and e["name"] == "torch::autograd::AccumulateGrad"]
        for e in out:
            if e["name"] == "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad" and \
                    any(t == e["tid"] and e["ts"] <= ts <= e["end"] for t, ts in gone):
                drop.add(e["id"])
    out = [e for e in out if e["id"] not in drop]
    # Optimizer and zero_grad(): parameters in order. Both run the same
    # operators for every parameter, so the operators they call directly
    # split evenly over the parameters; failing that, matched by shape.
    shapes = [list(p.shape) for _, p in marks.params]
    np_ = len(shapes)
    segs = {}
    for e in out:
        if "segment" in e:
            segs.setdefault(e["segment"], []).append(e)
    for seg in segs.values():
        # The operators on a parameter take it (or its gradient) first, so
        # their first input has a parameter's shape (the record_function
        # handles of Optimizer.step do not).
        tops = []
        for e in seg:
            if e["id"] == e["top"] and e["name"].startswith("aten::") and e["dims"] and \
                    list(e["dims"][0]) in shapes:
                tops.append(e["top"])
        if np_ and len(tops) % np_ == 0:
            per = len(tops) // np_
            idx = {t: k // per for k, t in enumerate(tops)}
            for e in seg:
                if e["top"] in idx:
                    e["module"], e["param"] = split_param(marks.params[idx[e["top"]]][0])
            continue
        cur = 0
        for e in seg:
            if not e["dims"] or not e["dims"][0]:
                continue
            d = list(e["dims"][0])
            j = next((k for k in range(cur, np_) if shapes[k] == d), None)
            if j is not None:
                cur = j
                e["module"], e["param"] = split_param(marks.params[j][0])
    for e in out:
        if "module" in e:
            e["mtype"] = marks.types.get(e["module"], "")
            if e["module"] in marks.heads:
                e["heads"] = marks.heads[e["module"]]
    return out


def step(model, args, opt, marks=None):
    # zero_grad() keeps the gradients (set_to_none=False, PyTorch 1.x's
    # default): one memset per parameter, and backward accumulates in place;
    # with --zero-grad none (PyTorch 2's default) it frees them and backward
    # hands each new gradient over (AccumulateGrad launches nothing).
    leave = torch.ops.profiler._record_function_exit._RecordFunction
    h = marks.phase("optimizer") if marks else None
    opt.zero_grad(set_to_none=DEV.set_to_none)
    if h is not None:
        leave(h)
        h = marks.phase("forward")
    loss = model(*args)
    if h is not None:
        leave(h)
        h = marks.phase("backward")
    if loss.dim():  # a stage before the last: the gradient its next stage sends
        loss.backward(model.grad_out)
    else:
        loss.backward()
    if h is not None:
        leave(h)
        h = marks.phase("optimizer")
    opt.step()
    if h is not None:
        leave(h)


def trace_step(model, inputs, opt, batch, queue, marks):
    """One profiled step (after a warm-up step made by the caller: optimizer
    state and gradients exist, as in steady-state training); returns the
    events as dicts in start order."""
    args = inputs(batch)
    model.train()
    queue.clear()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with torch.profiler.record_function("ProfilerStep#0"):
            step(model, args, opt, marks)
    # Times in ns from the profiler's event tree where it has them: the
    # events' own times tick in whole microseconds, so on meta tensors (and
    # often on the CPU) an operator starts in the tick its enclosing range
    # ends, and nesting by time would put it outside.
    ns = {}
    tree = getattr(prof.profiler.kineto_results, "experimental_event_tree", None)
    todo = list(tree()) if tree else []
    while todo:
        n = todo.pop()
        ns[n.correlation_id] = (n.start_time_ns, n.end_time_ns)
        todo.extend(n.children)
    t0 = min((v[0] for v in ns.values()), default=0)
    evs = []
    for e in prof.events():
        ts, end = e.time_range.start, e.time_range.end
        if e.id in ns:
            ts, end = (ns[e.id][0] - t0) / 1000.0, (ns[e.id][1] - t0) / 1000.0
        evs.append({"name": e.name, "dims": [list(s) for s in e.input_shapes],
                    "ts": ts, "end": end, "tid": e.thread, "id": e.id, "seq": e.sequence_nr})
    # Start order; the profiler's ids follow the order operators started (a
    # parent before its children) where times are equal.
    evs.sort(key=lambda e: (e["ts"], e["id"]))
    return prune(annotate(evs, marks))


# Operators whose children are the CPU backend's own implementation (which
# even changes with the batch size: slow_conv2d vs mkldnn, a loop of
# per-matrix selects under bmm); a GPU runs one cuDNN / cuBLAS call there
# instead, so the children are dropped.
OPAQUE = {"aten::convolution", "aten::convolution_backward", "aten::mm", "aten::bmm", "aten::addmm",
          "aten::baddbmm", "aten::addbmm"}


def prune(evs):
    """Drops the children of OPAQUE operators. The profiler's clock ticks in
    whole microseconds, so a child may seem to end a tick after its parent:
    an operator that starts inside another is its child, its end clamped."""
    out, stack = [], {}
    for e in evs:
        st = stack.setdefault(e["tid"], [])
        while st and st[-1][1] <= e["ts"]:
            st.pop()
        if st and e["end"] > st[-1][1]:
            e["end"] = st[-1][1]
        if any(name in OPAQUE for _, _, name in st):
            continue
        out.append(e)
        st.append((e["ts"], e["end"], e["name"]))
    return out


def attach_concrete(evs, queue):
    by_name, bwd = {}, {}
    for q in queue:
        if q[0] == "backward":
            bwd[q[1]] = q[2]
        else:
            by_name.setdefault(q[0], []).append(q[1])
    for e in evs:
        if e["name"] == "aten::convolution_backward" and len(e["dims"]) >= 3:
            key = (tuple(e["dims"][1]), tuple(e["dims"][2]))
            if key in bwd:
                e["concrete"] = bwd[key]
            continue
        q = by_name.get(e["name"])
        if q:
            e["concrete"] = q.pop(0)
    left = sum(len(q) for q in by_name.values())
    if left:
        raise SystemExit("trace_torch.py: %d module calls did not match an operator" % left)


def extrapolate(e1, e2, batch):
    """Shapes for `batch` from the traces at batch 2 (e1) and 3 (e2).

    The two operator sequences are aligned by name and input ranks
    (difflib), and a pair is used only when each size is the same in both or
    grows as c x batch (2 c, then 3 c); the CPU
    backend may pick a different implementation for a different batch size
    (an extra reduction, a copy), so a few operators may appear in one trace
    only. Aligned operators get extrapolated shapes; operators of the batch-3
    trace without a partner keep their batch-3 shapes (counted)."""
    import difflib

    def key(e):  # name and input ranks
        return (e["name"],) + tuple(len(d) for d in e["dims"])

    def batch_like(u, v):  # a size at batch 2 and 3: constant, or c x batch
        return u == v or 2 * v == 3 * u

    a = [key(e) for e in e1]
    b = [key(e) for e in e2]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out, unmatched = [], 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1 and a[i1:i2] == b[j1:j2]):
            pairs = zip(e1[i1:i2], e2[j1:j2])
        else:
            unmatched += j2 - j1
            out.extend(dict(e) for e in e2[j1:j2])
            continue
        for x, y in pairs:
            e = dict(y)
            if all(batch_like(u, v) for p, q in zip(x["dims"], y["dims"]) for u, v in zip(p, q)):
                e["dims"] = [[u + (v - u) * (batch - 2) for u, v in zip(p, q)] for p, q in zip(x["dims"], y["dims"])]
            else:
                unmatched += 1  # paired with another operator: keep batch 3's shapes
            out.append(e)
    return out, unmatched


# --amp: the element type a mixed-precision GPU run gives each operator's
# tensors ("Input type"), for a trace run in fp32: activations and their
# gradients in the half type (autocast, FSDP2's param_dtype), the
# parameters' gradient accumulation and the optimizer in fp32 (master
# weights; FSDP2 reduces gradients in fp32, its reduce_dtype default).
AMP_TYPES = {"bf16": ("c10::BFloat16", 2), "fp16": ("c10::Half", 2)}


def write_trace(path, evs, meta, shard=None, amp=None):
    t0 = min(e["ts"] for e in evs)
    tids = {}
    events = []
    for e in evs:
        tid = tids.setdefault(e["tid"], len(tids) + 1)
        name = e["name"]
        half = amp is not None and e.get("pass") in ("forward", "backward", "recompute") and "param" not in e
        if "marker_eb" in e:  # bytes of the (extrapolated) tensor it names
            eb = AMP_TYPES[amp][1] if half and e["marker_eb"] == 4 else e["marker_eb"]
            name = "%s[bytes=%d]" % (name, math.prod(e["dims"][0]) * eb)
        cat = "user_annotation" if name.startswith("ProfilerStep#") else "cpu_op"
        args = {"External id": e["id"]}
        if cat == "cpu_op":
            args["Input Dims"] = e["dims"]
            ty = AMP_TYPES[amp][0] if half else "float"
            args["Input type"] = [ty if d else "" for d in e["dims"]]
            if "concrete" in e:
                args["Concrete Inputs"] = e["concrete"]
            if e.get("pass"):
                args["Pass"] = e["pass"]
            if "module" in e:
                args["Module"] = e["module"]
                args["Module Type"] = e.get("mtype", "")
            if "param" in e:
                args["Parameter"] = e["param"]
            if "heads" in e:
                args["Module Heads"] = e["heads"]
        events.append({"ph": "X", "cat": cat, "name": name, "pid": os.getpid(), "tid": tid,
                       "ts": round(float(e["ts"] - t0), 3), "dur": round(float(e["end"] - e["ts"]), 3),
                       "args": args})
    dist = {"backend": "nccl", "rank": 0, "world_size": 1}
    if shard is not None and (shard.tp > 1 or shard.stages > 1):  # the rank of the stage's first TP rank
        dist = {"backend": "nccl", "rank": shard.stage * shard.tp, "world_size": shard.tp * shard.stages,
                "tp": shard.tp, "pp": shard.stages, "pp_stage": shard.stage}
    doc = {"schemaVersion": 1, "deviceProperties": [],
           "distributedInfo": dist,
           "stepcast": meta, "traceEvents": events}
    with gzip.open(path, "wt", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes per GPU")
    ap.add_argument("--seq", type=int, default=0, help="sequence length (transformers)")
    ap.add_argument("-o", "--out", default=".", help="output directory")
    ap.add_argument("--optimizer", default="sgd", choices=sorted(OPTIMIZERS))
    ap.add_argument("--layers", type=int, default=0,
                    help="transformer layers (default the model's); the file is MODEL-lN-bB.json.gz")
    ap.add_argument("--tp", type=int, default=1,
                    help="trace one tensor-parallel rank's shard of N (gpt2, bert-large, llama3-8b, tiny-gpt); file MODEL[-lL]-tpN-...")
    ap.add_argument("--pp-stage", default="0/1", metavar="K/P",
                    help="trace pipeline stage K of P only (its layers; markers for the p2p at the cut)")
    ap.add_argument("--attention", default="eager", choices=("eager", "sdpa"),
                    help="llama models: eager (s x s scores) or sdpa (one fused causal attention operator)")
    ap.add_argument("--ac", default="none", choices=("none", "full", "op"),
                    help="llama models: activation checkpointing (full, or torchtitan's per-op selective)")
    ap.add_argument("--loss", default="sum", choices=("sum", "ce"),
                    help="llama models: sum of the final norm (no head), or lm_head + cross entropy")
    ap.add_argument("--zero-grad", default="zero", choices=("zero", "none"),
                    help="zero_grad(): zero the gradients (PyTorch 1.x) or free them (none: PyTorch 2's default)")
    ap.add_argument("--amp", default=None, choices=sorted(AMP_TYPES),
                    help="record the tensors of forward and backward in this type (mixed precision; the "
                         "parameters' gradients and the optimizer stay fp32)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "meta"),
                    help="llama models: run on the CPU, or on meta tensors (shapes only, nothing computed)")
    a = ap.parse_args()
    batches = [int(x) for x in a.batch.split(",")]
    if any(b < 1 for b in batches):
        raise SystemExit("trace_torch.py: batch sizes must be >= 1")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if a.layers < 0:
        raise SystemExit("trace_torch.py: --layers must be >= 1")
    try:
        k, P = (int(v) for v in a.pp_stage.split("/"))
    except ValueError:
        raise SystemExit("trace_torch.py: --pp-stage takes K/P (stage K of P), not %r" % a.pp_stage)
    if a.tp < 1 or P < 1 or not 0 <= k < P:
        raise SystemExit("trace_torch.py: --tp N >= 1 and --pp-stage K/P with 0 <= K < P")
    shard = Shard(a.tp, k, P)
    DEV.device = a.device
    DEV.set_to_none = a.zero_grad == "none"
    model, inputs, mkopt, seq = build(a.model, a.seq, a.optimizer, a.layers, shard, a.attention, a.ac, a.loss)
    nlayers = len(model.layers if hasattr(model, "layers") else getattr(model, "blocks", []))
    if P > 1 and not nlayers:
        raise SystemExit("trace_torch.py: --pp-stage %d/%d: no layers on this stage (more stages than layers)" % (k, P))
    queue = []
    concrete_hooks(model, queue)
    marks = Marks(model)
    traced = {}
    opt = mkopt(model.parameters())
    model.train()
    step(model, inputs(1), opt)  # warm-up: optimizer state and gradients exist
    # Batch 1 alone is traced directly: no batches 2 and 3 to extrapolate
    # from; on meta tensors (nothing computed) every batch is.
    direct = set(batches) == {1} or a.device == "meta"
    for b in sorted(set(batches)) if direct else sorted({2, 3} | ({1} & set(batches))):
        evs = trace_step(model, inputs, opt, b, queue, marks)
        attach_concrete(evs, list(queue))
        traced[b] = evs
    # Rarely (a loaded machine) the two traces order many operators
    # differently; trace both again, up to twice, when over 5 % of the
    # operators fail to align.
    for _ in range(0 if direct else 2):
        _, unaligned = extrapolate(traced[2], traced[3], 4)
        if unaligned * 20 <= len(traced[3]):
            break
        print("trace_torch.py: %d operators unaligned: tracing batches 2 and 3 again" % unaligned, file=sys.stderr)
        for b in (2, 3):
            evs = trace_step(model, inputs, opt, b, queue, marks)
            attach_concrete(evs, list(queue))
            traced[b] = evs
    os.makedirs(a.out, exist_ok=True)
    for b in batches:
        unmatched = 0
        if b in traced:
            evs = traced[b]
        else:
            evs, unmatched = extrapolate(traced[2], traced[3], b)
        meta = {"model": a.model, "layers": a.layers or None, "batch_per_gpu": b, "seq": seq, "dtype": "float32",
                "traced_on": "cpu", "torch": torch.__version__, "optimizer": a.optimizer, "traced_batches": sorted(traced),
                "extrapolated": b not in traced, "unaligned_operators": unmatched,
                "params": sum(p.numel() for p in model.parameters()), "module_paths": 1}
        if a.amp:
            meta["dtype"] = "float32 run, recorded as %s mixed precision (--amp)" % a.amp
        if a.model.startswith("llama3-") or a.model == "tiny-llama":
            meta.update(attention=a.attention, ac=a.ac, loss=a.loss, device=a.device)
        if DEV.set_to_none:
            meta["zero_grad"] = "set_to_none"
        if a.tp > 1 or P > 1:
            meta["tp"], meta["pp_stage"] = a.tp, "%d/%d" % (k, P)
        tag = a.model + ("-l%d" % a.layers if a.layers else "")
        tag += ("-tp%d" % a.tp if a.tp > 1 else "") + ("-s%dof%d" % (k, P) if P > 1 else "")
        tag += ("-seq%d" % a.seq if a.seq else "") + ("-sdpa" if a.attention == "sdpa" else "")
        tag += ("-ac%s" % a.ac if a.ac != "none" else "") + ("-ce" if a.loss == "ce" else "")
        tag += ("-%s" % a.amp if a.amp else "") + ("-zgnone" if DEV.set_to_none else "")
        path = os.path.join(a.out, "%s-b%d.json.gz" % (tag, b))
        write_trace(path, evs, meta, shard, a.amp)
        print("%s: %d events, batch %d%s" % (path, len(evs), b,
                                              "" if b in traced else " (extrapolated, %d unaligned)" % unmatched))


if __name__ == "__main__":
    sys.exit(main())
