/*
 * context.c: context parallelism in the synthesised workload (Megatron-LM /
 * Transformer Engine semantics). The sequence is split over the cp ranks of
 * a CP group, each holding two load-balanced chunks of the causal sequence
 * (so every rank does the same share of the causal attention, 1/cp of it);
 * every op outside attention runs on the rank's s/cp tokens (build_int.h,
 * sc__syn_tokens). Attention needs the other ranks' keys and values, which
 * parallel.cp_comm brings in one of four ways:
 *   p2p        a ring: cp steps, step i computing the local queries against
 *              the K/V chunk received in step i-1 while the next chunk travels
 *              (send to the next CP rank, receive from the previous: a
 *              send_recv collective on the CP stream); the backward circulates
 *              K/V and dK/dV together and returns the last dK/dV;
 *   a2a        Ulysses: all-to-all of Q, K, V over the CP group before
 *              attention (each rank then holds the whole sequence for a/cp of
 *              its heads) and of the output after it; mirrored backward;
 *   allgather  K/V all-gathered over the group, attention of the local
 *              queries against all of them; the backward gathers them again
 *              and reduce-scatters dK/dV;
 *   a2a+p2p    all-to-all among the CP ranks of one node (cp_in, shape.c),
 *              then a ring across the cp/cp_in node groups.
 * Exchanges count as CP communication (SC_CAT_CP) where compute waits for
 * them.
 */
#include "synth/build_int.h"

/* Fused attention time of `flops` over keys of length seq (its efficiency
 * curve; multi-head latent attention's scores run over d + rope). */
static double attn_ns(const builder *B, double flops, double seq) {
  return B->cost->compute->attn_ns(B->cost, flops, seq, B->sh->mla ? B->sh->dq : B->sh->d);
}

/* K and V of `tokens` tokens for `heads` KV heads on this TP rank: a head's
 * key is attn_qk / a wide and its value attn_v / a (d and d; with
 * multi-head latent attention the up-projected d + rope and dv, which is
 * what Megatron-Core's context parallelism exchanges, not the latent). */
static double kv_bytes(const builder *B, double tokens, double heads) {
  const sc_shape *sh = B->sh;
  return sh->b * tokens * heads * (sh->attn_qk + sh->attn_v) / sh->a * sh->elem_bytes;
}

static uint32_t cp_coll(builder *B, const where *w, int group, int coll, int label, double bytes,
                        uint32_t after) {
  return sc__syn_collective(B, w, SC_ST_CP, group, coll, label, SC_CAT_CP, bytes, after);
}

/* Ring attention over n ranks of `group`: n steps of flops_step each over
 * keys of length seq, the K/V chunk (kv bytes) of the next step travelling
 * during the current one; backward (bwd) steps also carry dK/dV and a last
 * exchange returns them, which the next compute op waits for. */
static void ring(builder *B, const where *w, int group, int64_t n, double flops_step, double seq,
                 double kv, int bwd) {
  uint32_t prev = NONE;
  double step_bytes = bwd ? 2.0 * kv : kv;
  for (int64_t i = 0; i < n; i++) {
    uint32_t next = NONE;
    if (i + 1 < n) /* the chunk for step i + 1; the first one is the local K/V */
      next = cp_coll(B, w, group, SC_COLL_SENDRECV, bwd ? SC_L_CP_DKV : SC_L_CP_KV, step_bytes,
                     i == 0 ? sc__syn_last_compute(B) : NONE);
    sc__syn_add_wait(B, prev);
    sc__syn_compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, flops_step, seq));
    prev = next;
  }
  if (bwd && n > 1) /* dK/dV of the last chunk go home */
    sc__syn_add_wait(B, cp_coll(B, w, group, SC_COLL_SENDRECV, SC_L_CP_DKV, kv,
                                sc__syn_last_compute(B)));
}

/* A blocking collective of the CP exchange: after the last compute op, and
 * the next one waits for it. */
static void blocking(builder *B, const where *w, int group, int coll, int label, double bytes) {
  sc__syn_add_wait(B, cp_coll(B, w, group, coll, label, bytes, sc__syn_last_compute(B)));
}

/* Causal attention of one micro-batch with context parallelism; flops is the
 * rank's share (the causal total over cp), forward or backward (2.5x). */
static void cp_attention(builder *B, const where *w, double flops, int bwd) {
  const sc_shape *sh = B->sh;
  double T = sh->s_cp;                                   /* this rank's tokens */
  /* Q, K, V (MLA: the up-projected Q and K of d + rope and V of dv a head)
   * and the attention output */
  double qkv_w = sh->mla ? 2.0 * sh->attn_qk + sh->attn_v : sh->qkv_out;
  double qkv = sh->b * T * qkv_w / sh->t * sh->elem_bytes;
  double out = sh->b * T * sh->attn_v / sh->t * sh->elem_bytes;
  int64_t cp = sh->cp, in = sh->cp_in, outer = cp / in;
  switch (B->cfg->parallel.cp_comm) {
  case SC_CP_P2P:
    ring(B, w, SC_GRP_CP, cp, flops / (double)cp, T, kv_bytes(B, T, sh->g_rank), bwd);
    break;
  case SC_CP_A2A:
    blocking(B, w, SC_GRP_CP, SC_COLL_ALLTOALL, SC_L_CP_A2A, bwd ? out : qkv);
    sc__syn_compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, flops, sh->s));
    blocking(B, w, SC_GRP_CP, SC_COLL_ALLTOALL, SC_L_CP_A2A, bwd ? qkv : out);
    break;
  case SC_CP_ALLGATHER: {
    double kv_all = kv_bytes(B, sh->s, sh->g_rank); /* gathered over the group */
    blocking(B, w, SC_GRP_CP, SC_COLL_ALLGATHER, SC_L_CP_AG, kv_all);
    sc__syn_compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, flops, T));
    if (bwd) blocking(B, w, SC_GRP_CP, SC_COLL_REDUCESCATTER, SC_L_CP_RS, kv_all);
    break;
  }
  default: { /* SC_CP_A2A_P2P */
    double heads = sh->g_rank / (double)in > 1.0 ? sh->g_rank / (double)in : 1.0;
    double chunk = sh->s / (double)outer; /* tokens of a node group after the all-to-all */
    if (in > 1) blocking(B, w, SC_GRP_CP_IN, SC_COLL_ALLTOALL, SC_L_CP_A2A, bwd ? out : qkv);
    ring(B, w, SC_GRP_CP_OUT, outer, flops / (double)outer, chunk, kv_bytes(B, chunk, heads), bwd);
    if (in > 1) blocking(B, w, SC_GRP_CP_IN, SC_COLL_ALLTOALL, SC_L_CP_A2A, bwd ? qkv : out);
    break;
  }
  }
}

void sc__syn_cp_attention_forward(builder *B, const where *w, double flops) {
  cp_attention(B, w, flops, 0);
}

void sc__syn_cp_attention_backward(builder *B, const where *w, double flops) {
  cp_attention(B, w, flops, 1);
}
