/*
 * layers.c: the ops of one transformer layer (norms, QKV, attention, output
 * projection, MLP or the MoE FFN of moe.c, residuals; forward, backward,
 * recompute), the embedding
 * and the LM head with its vocab-parallel cross-entropy, priced by the cost
 * models (BLUEPRINT section 3).
 */
#include "synth/build_int.h"

/* ------------------------------------------------------------ eager PyTorch */

/* training.eager on a gated-FFN (Llama-family) model: its RMSNorm, rotary
 * embedding and SwiGLU as eager PyTorch runs them, kernel by kernel (as
 * torchtitan's and Hugging Face's Llama code them: the norm and the
 * rotation in fp32). Each kernel streams its bytes and pays the kernel
 * overhead, so n kernels over `bytes` cost n times mem_ns(bytes / n). A
 * LayerNorm / GELU model runs single native kernels eagerly too, so its
 * ops are the fused ones. */
static int eager(const builder *B) { return B->cfg->training.eager && B->sh->swiglu; }

static double kernels_ns(const builder *B, double bytes, int n) {
  return (double)n * sc__syn_mem(B, bytes / (double)n);
}

/* PyTorch's elementwise kernels with a broadcast operand (a per-row rsqrt,
 * the norm's weight, the rotation's frequencies) stream at SC_ELEM_BCAST_RATE
 * of a contiguous one's rate (cost_int.h, measured in the H200 traces, as
 * the ex-situ pricing counts them). */
#define EAGER_BCAST SC_ELEM_BCAST_RATE

/* An RMSNorm over `elems` elements of e bytes. Fused: one kernel, read
 * and write (backward: the input, the grad and the grad out, 3e). Eager
 * forward: x.float() (e + 4, none when e is 4), pow (8), mean (4), the
 * epsilon and rsqrt on one value a row (two kernels, no bytes), x * rsqrt
 * (8, broadcast), type_as (4 + e, none when e is 4), times the weight (2e,
 * broadcast): 8 kernels (6 in fp32); on an H200, 32768 x 4096 bf16 in
 * 1,554 us at the kernel calibration (mem_eff 0.80, 2 us a kernel) against
 * 1,689 measured (validation/h200/mem.csv, rmsnorm_eager). Eager backward, the autograd
 * of those: the weight's product (2e, broadcast) and its grad (a product
 * and a reduction, 4e), the downcast's grad (e + 4), the product's grad
 * to x (8, broadcast) and to rsqrt (a product and a reduction, 16), the
 * mean's expanded grad (4, broadcast), pow's (two products, 20), the two
 * grads' sum (12), the upcast's grad (4 + e): about 14 kernels. */
static double norm_ns(const builder *B, double elems, int bwd) {
  double e = B->sh->elem_bytes;
  if (!eager(B)) return sc__syn_mem(B, (bwd ? 3.0 : 2.0) * e * elems);
  double cast = e < 4.0 ? 4.0 + e : 0.0;
  if (!bwd)
    return kernels_ns(B, (2.0 * cast + 8.0 + 4.0 + (8.0 + 2.0 * e) / EAGER_BCAST) * elems, e < 4.0 ? 8 : 6);
  return kernels_ns(B, ((2.0 * e + 8.0 + 4.0) / EAGER_BCAST + 4.0 * e + 16.0 + 20.0 + 12.0 + 2.0 * cast) * elems,
                    14);
}

static void norm(builder *B, const where *w, int label, double elems, int bwd) {
  sc__syn_compute(B, w, SC_OP_NORM, label, norm_ns(B, elems, bwd));
}

/* The gated activation over `elems` FFN elements. Fused: SiLU and product
 * in one kernel (read both halves, write: 3e; backward 4e). Eager: SiLU
 * (2e) and the product (3e); backward, the product's two grads (6e) and
 * SiLU's (3e). */
static double act_ns(const builder *B, double elems, int bwd) {
  const sc_shape *sh = B->sh;
  double e = sh->elem_bytes;
  if (!eager(B)) return sc__syn_mem(B, (sh->swiglu ? (bwd ? 4.0 : 3.0) : (bwd ? 3.0 : 2.0)) * e * elems);
  return bwd ? kernels_ns(B, 9.0 * e * elems, 3) : kernels_ns(B, 5.0 * e * elems, 2);
}

/* The rotary embedding of one micro-batch's queries and keys on one TP
 * rank, eager only (fused into the neighbouring kernels, it is not priced):
 * torchtitan's complex rotation, per tensor x.float() (e + 4), the complex
 * product by the frequencies (8, broadcast), type_as (4 + e), three
 * kernels; its backward the same (the conjugate rotation of the grads).
 * Not with MLA (its decoupled rope is part of mla.c's kernels). */
static void rope(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (!eager(B) || sh->mla) return;
  double e = sh->elem_bytes, cast = e < 4.0 ? 4.0 + e : 0.0;
  double elems = sc__syn_tokens(B) * (sh->attn_qk / sh->t + sh->g_rank * sh->d);
  int n = e < 4.0 ? 3 : 1;
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ROPE,
                  kernels_ns(B, (2.0 * cast + 8.0 / EAGER_BCAST) * elems, 2 * n));
}

/* Causal FlashAttention forward FLOPs of one micro-batch on one TP rank:
 * 4*b*s^2*(a*d)/t for full attention, half of it for causal kernels. */
static double attn_fwd_flops(const builder *B) {
  const sc_shape *sh = B->sh;
  /* 2 b s^2 over the query/key width (scores) and the value width (output);
   * both a d without MLA */
  return 0.5 * 2.0 * sh->b * sh->s * sh->s * (sh->attn_qk + sh->attn_v) / sh->t;
}

static double attn_ns(const builder *B, double flops) {
  return B->cost->compute->attn_ns(B->cost, flops, B->sh->s, B->sh->mla ? B->sh->dq : B->sh->d);
}

/* Unfused attention (Megatron-LM's CoreAttention before FlashAttention, as
 * used by SC21 and Korthikanti et al. 2022): per head, batched GEMMs over the
 * full s x s scores (the causal mask is applied by the softmax, not skipped)
 * and memory-bound kernels that stream the scores through HBM. A batch of
 * `heads` s x s GEMMs is priced as one (heads*s) x s GEMM: same FLOPs, same
 * output tiles. Bytes per score element e (2 for fp16/bf16):
 *   fused scale-mask-softmax: read e, write e;
 *   dropout (p = 0.1, Megatron's default): read e, write e and a 1-byte mask;
 *   backward: dropout 2e + 1, softmax (reads its output and the grad) 3e. */
static double unfused_heads(const builder *B) { return B->sh->b * B->sh->a / B->sh->t; }

static double scores(const builder *B) { return unfused_heads(B) * B->sh->s * B->sh->s; }

static void attention_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (sh->cp > 1) { /* context parallel (flash only): this rank's share */
    sc__syn_cp_attention_forward(B, w, attn_fwd_flops(B) / (double)sh->cp);
    return;
  }
  if (B->cfg->training.attention != SC_ATTN_UNFUSED) {
    sc__syn_compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, attn_fwd_flops(B)));
    return;
  }
  double hs = unfused_heads(B) * sh->s, e = sh->elem_bytes;
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ATTN, sc__syn_scores_gemm(B, hs, sh->s, sh->d)); /* Q K^T */
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, sc__syn_scores_mem(B, 2.0 * e * scores(B)));
  if (sh->dropout)
    sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, sc__syn_scores_mem(B, (2.0 * e + 1.0) * scores(B)));
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ATTN, sc__syn_scores_gemm(B, hs, sh->d, sh->s)); /* P V */
}

static void attention_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (sh->cp > 1) {
    sc__syn_cp_attention_backward(B, w, 2.5 * attn_fwd_flops(B) / (double)sh->cp);
    return;
  }
  if (B->cfg->training.attention != SC_ATTN_UNFUSED) {
    /* FlashAttention backward: ~2.5x the forward FLOPs (BLUEPRINT section 3). */
    sc__syn_compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, 2.5 * attn_fwd_flops(B)));
    return;
  }
  double hs = unfused_heads(B) * sh->s, e = sh->elem_bytes;
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ATTN, sc__syn_scores_gemm(B, hs, sh->d, sh->s)); /* dV = P^T dO */
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ATTN, sc__syn_scores_gemm(B, hs, sh->s, sh->d)); /* dP = dO V^T */
  if (sh->dropout)
    sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, sc__syn_scores_mem(B, (2.0 * e + 1.0) * scores(B)));
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, sc__syn_scores_mem(B, 3.0 * e * scores(B)));
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ATTN, sc__syn_scores_gemm(B, hs, sh->d, sh->s)); /* dQ = dS K */
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ATTN, sc__syn_scores_gemm(B, hs, sh->d, sh->s)); /* dK = dS^T Q */
}

/* The widths of the QKV projection's GEMMs on this TP rank: one fused GEMM,
 * or with training.fused_projections=false the query, key and value
 * linears apart. Returns their count. */
static int qkv_parts(const builder *B, double n[3]) {
  const sc_shape *sh = B->sh;
  if (B->cfg->training.fused_projections) {
    n[0] = sh->qkv_out / sh->t;
    return 1;
  }
  n[0] = sh->qd / sh->t;
  n[1] = n[2] = sh->g_rank * sh->d;
  return 3;
}

/* The FFN's first GEMMs: one (gate and up fused, or an ungated FFN's), or
 * the gate and up linears apart. */
static int fc1_parts(const builder *B, double n[2]) {
  const sc_shape *sh = B->sh;
  if (sh->swiglu && !B->cfg->training.fused_projections) {
    n[0] = n[1] = sh->f / sh->t;
    return 2;
  }
  n[0] = sh->f * (sh->swiglu ? 2.0 : 1.0) / sh->t;
  return 1;
}

/* The attention half of a layer's forward after its input norm: QKV,
 * attention, projection, residual and the FFN's norm. */
static void attn_block_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B), Tl = sc__syn_tokens_local(B);
  double act = T * sh->h * sh->elem_bytes;
  double act_l = Tl * sh->h * sh->elem_bytes;
  double qkv_n[3];
  int qkv = qkv_parts(B, qkv_n);

  if (sh->mla)
    sc__syn_mla_forward(B, w);
  else
    sc__syn_gathered_gemms(B, w, SC_L_QKV, T, qkv_n, qkv, sh->h, act);
  rope(B, w);
  attention_forward(B, w);
  sc__syn_reduced_gemm(B, w, SC_L_PROJ, T, sh->h, sh->attn_v / sh->t, act);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_RES1, sc__syn_mem(B, 4.0 * act_l));
  norm(B, w, SC_L_LN2, Tl * sh->h, 0);
}

/* An MoE layer's forward after its input norm: attention, then the MoE FFN
 * (moe.c) and the residual. */
static void moe_layer_forward_rest(builder *B, const where *w) {
  double act_l = sc__syn_tokens_local(B) * B->sh->h * B->sh->elem_bytes;
  attn_block_forward(B, w);
  sc__syn_moe_forward(B, w);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_RES2, sc__syn_mem(B, 4.0 * act_l));
}

/* Forward (or recompute) of one transformer layer for one micro-batch, after
 * its input norm. */
static void layer_forward_rest(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B), Tl = sc__syn_tokens_local(B);
  double act = T * sh->h * sh->elem_bytes;
  double act_l = Tl * sh->h * sh->elem_bytes;
  double fc1_n[2];
  int fc1 = fc1_parts(B, fc1_n);

  attn_block_forward(B, w);
  sc__syn_gathered_gemms(B, w, SC_L_FC1, T, fc1_n, fc1, sh->h, act);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ACT, act_ns(B, T * sh->f / sh->t, 0));
  sc__syn_reduced_gemm(B, w, SC_L_FC2, T, sh->h, sh->f / sh->t, act);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_RES2, sc__syn_mem(B, 4.0 * act_l));
}

/* Forward (or recompute) of one transformer layer for one micro-batch. The
 * first op takes what the layer waits for; the rest may be replayed. */
void sc__syn_layer_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  norm(B, w, SC_L_LN1, sc__syn_tokens_local(B) * sh->h, 0);
  if (sc__shape_is_moe_layer(sh, w->layer))
    sc__syn_memo_run(B, &B->parts[3], moe_layer_forward_rest, w);
  else
    sc__syn_memo_run(B, &B->parts[0], layer_forward_rest, w);
}

/* The attention half of a layer's backward, from the FFN norm's grad to
 * the input norm's. */
static void attn_block_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double Tl = sc__syn_tokens_local(B);
  double act_l = Tl * sh->h * sh->elem_bytes;
  double qkv_n[3];
  int qkv = qkv_parts(B, qkv_n);

  norm(B, w, SC_L_LN2, Tl * sh->h, 1);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_RES1, sc__syn_mem(B, 3.0 * act_l));
  sc__syn_row_parallel_backward(B, w, SC_L_PROJ, sh->attn_v / sh->t);
  if (sh->mla && (sh->rc & SC_RC_MLA_UP_PROJ)) sc__syn_mla_up_recompute(B, w);
  if (sh->rc & SC_RC_CORE_ATTN) {
    /* Selective recompute re-runs the attention core (Korthikanti et al.
     * 2022: QK^T, softmax, dropout, attention over V). */
    where rw = *w;
    rw.phase = SC_PH_RECOMPUTE;
    attention_forward(B, &rw);
  }
  attention_backward(B, w);
  rope(B, w);
  if (sh->mla)
    sc__syn_mla_backward(B, w);
  else
    sc__syn_column_parallel_backwards(B, w, SC_L_QKV, qkv_n, qkv);
  norm(B, w, SC_L_LN1, Tl * sh->h, 1);
}

/* Selective recompute of the two norms (recompute_modules layernorm): their
 * outputs were not kept, the backward re-runs them. */
static void norms_recompute(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (!(sh->rc & SC_RC_LAYERNORM)) return;
  double elems = sc__syn_tokens_local(B) * sh->h;
  where rw = *w;
  rw.phase = SC_PH_RECOMPUTE;
  norm(B, &rw, SC_L_LN2, elems, 0);
  norm(B, &rw, SC_L_LN1, elems, 0);
}

/* recompute op_sac (torchtitan's op-level selective activation
 * checkpointing, docs/MEMORY.md): before a dense layer's backward its
 * forward runs again with the kept matmul, attention and reduce-scatter
 * outputs taken from memory, which re-runs the input norm, the wk GEMM,
 * the wo GEMM (its reduce-scatter's output is kept), the residual add, the
 * FFN norm, the w3 GEMM (GELU: the w2 GEMM, the sixth matmul) and the
 * activation. RoPE is not a kernel of the workload's forward either. The
 * SP all-gathers of the norm outputs it re-runs are the ones the backward
 * already gathers for its weight grads (sc__syn_column_parallel_backward),
 * so none is added. */
static void op_sac_recompute(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (B->cfg->training.recompute != SC_RECOMPUTE_OP_SAC) return;
  double T = sc__syn_tokens(B);
  double act_l = sc__syn_tokens_local(B) * sh->h * sh->elem_bytes;
  double fl = sh->f / sh->t;
  where rw = *w;
  rw.phase = SC_PH_RECOMPUTE;
  double elems_l = sc__syn_tokens_local(B) * sh->h;
  norm(B, &rw, SC_L_LN1, elems_l, 0);
  sc__syn_linear(B, &rw, SC_L_QKV, T, sh->g_rank * sh->d, sh->h);
  sc__syn_linear(B, &rw, SC_L_PROJ, T, sh->h, sh->attn_v / sh->t);
  sc__syn_compute(B, &rw, SC_OP_ELEMWISE, SC_L_RES1, sc__syn_mem(B, 4.0 * act_l));
  norm(B, &rw, SC_L_LN2, elems_l, 0);
  if (sh->swiglu) sc__syn_linear(B, &rw, SC_L_FC1, T, fl, sh->h);
  sc__syn_compute(B, &rw, SC_OP_ELEMWISE, SC_L_ACT, act_ns(B, T * fl, 0));
  if (!sh->swiglu) sc__syn_linear(B, &rw, SC_L_FC2, T, sh->h, fl);
}

/* Backward of one dense layer after its first op (the residual's grad). */
static void layer_backward_rest(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  double fc1_n[2];
  int fc1 = fc1_parts(B, fc1_n);

  op_sac_recompute(B, w);
  norms_recompute(B, w);
  sc__syn_row_parallel_backward(B, w, SC_L_FC2, sh->f / sh->t);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ACT, act_ns(B, T * sh->f / sh->t, 1));
  sc__syn_column_parallel_backwards(B, w, SC_L_FC1, fc1_n, fc1);
  attn_block_backward(B, w);
}

static void moe_layer_backward_rest(builder *B, const where *w) {
  norms_recompute(B, w);
  if (B->sh->rc & SC_RC_MOE) { /* recompute_modules moe: the FFN forward again */
    where rw = *w;
    rw.phase = SC_PH_RECOMPUTE;
    sc__syn_moe_forward(B, &rw);
  }
  sc__syn_moe_backward(B, w);
  attn_block_backward(B, w);
}

void sc__syn_layer_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act_l = sc__syn_tokens_local(B) * sh->h * sh->elem_bytes;
  if (B->cfg->training.recompute == SC_RECOMPUTE_FULL) {
    where rw = *w;
    rw.phase = SC_PH_RECOMPUTE;
    sc__syn_layer_forward(B, &rw);
  }
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_RES2, sc__syn_mem(B, 3.0 * act_l));
  if (sc__shape_is_moe_layer(sh, w->layer))
    sc__syn_memo_run(B, &B->parts[4], moe_layer_backward_rest, w);
  else
    sc__syn_memo_run(B, &B->parts[1], layer_backward_rest, w);
}

void sc__syn_embedding_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act = sc__syn_tokens(B) * sh->h * sh->elem_bytes;
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_EMBED, sc__syn_mem(B, 2.0 * act));
  /* Vocab-parallel embedding: partial rows are summed over TP. */
  sc__syn_tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
              sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
}

/* Embedding backward: the token grads are scattered into a dense grad of
 * the local vocabulary shard (V/t x h, written once in the working dtype),
 * which is then accumulated into the fp32 main grad (read 4 + e, write 4;
 * Megatron-LM keeps main grads in fp32 for bf16 and fp16). */
void sc__syn_embedding_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act = sc__syn_tokens(B) * sh->h * sh->elem_bytes;
  double table = sh->v / sh->t * sh->h;
  if (sh->sp) sc__syn_tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, act);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_EMBED,
          sc__syn_mem(B, 2.0 * act + table * (2.0 * sh->elem_bytes + 8.0)));
}


/* HBM bytes per logit of Megatron-LM's vocab-parallel cross-entropy, which
 * runs as separate fp32 kernels over the [tokens x V/t] logits: forward =
 * cast to fp32 (read e, write 4), max (4), subtract (8), exp (8), sum (4),
 * divide into the softmax kept for backward (8); backward = scale the
 * softmax by the loss grad in place (8) and cast back for the logits GEMM
 * (read 4, write e). */
static double loss_fwd_bytes(const sc_shape *sh) { return sh->elem_bytes + 4.0 + 32.0; }
static double loss_bwd_bytes(const sc_shape *sh) { return 8.0 + 4.0 + sh->elem_bytes; }

/* Final norm, logits GEMM over the vocab shard, vocab-parallel cross-entropy
 * (three small TP all-reduces: max, sum of exp, target logit). */
void sc__syn_head_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  double act = T * sh->h * sh->elem_bytes;
  norm(B, w, SC_L_FINAL_LN, sc__syn_tokens_local(B) * sh->h, 0);
  if (sh->sp) sc__syn_tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, act);
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_LOGITS, sc__syn_gemm(B, T, sh->v / sh->t, sh->h));
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_LOSS, sc__syn_mem(B, T * sh->v / sh->t * loss_fwd_bytes(sh)));
  for (int i = 0; i < 3; i++) sc__syn_tp_blocking(B, w, SC_COLL_ALLREDUCE, SC_L_LOSS_AR, T * 4.0);
}

void sc__syn_head_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_LOSS, sc__syn_mem(B, T * sh->v / sh->t * loss_bwd_bytes(sh)));
  sc__syn_column_parallel_backward(B, w, SC_L_LOGITS, sh->v / sh->t);
  norm(B, w, SC_L_FINAL_LN, sc__syn_tokens_local(B) * sh->h, 1);
}


/* Weight grads of one layer in a split backward's W pass, in backward order. */
static void layer_weight_grads(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double n[3];
  if (sc__shape_is_moe_layer(sh, w->layer)) {
    sc__syn_moe_weight_grads(B, w);
  } else {
    sc__syn_weight_grad(B, w, SC_L_FC2, sh->f / sh->t);
    int fc1 = fc1_parts(B, n);
    sc__syn_weight_grads(B, w, SC_L_FC1, n, fc1);
  }
  sc__syn_weight_grad(B, w, SC_L_PROJ, sh->attn_v / sh->t);
  if (sh->mla) {
    sc__syn_mla_weight_grads(B, w);
  } else {
    int qkv = qkv_parts(B, n);
    sc__syn_weight_grads(B, w, SC_L_QKV, n, qkv);
  }
}

void sc__syn_layer_weight_grads(builder *B, const where *w) {
  int moe = sc__shape_is_moe_layer(B->sh, w->layer);
  sc__syn_memo_run(B, &B->parts[moe ? 5 : 2], layer_weight_grads, w);
}

void sc__syn_head_weight_grads(builder *B, const where *w) {
  sc__syn_weight_grad(B, w, SC_L_LOGITS, B->sh->v / B->sh->t);
}
