/*
 * mla.c: multi-head latent attention (DeepSeek-V2/V3, Megatron-Core's
 * MLASelfAttention; docs/MOE.md) in the synthesised workload: the
 * projections that replace the QKV GEMM. The hidden state is projected down
 * to a compressed query (q_lora) and a compressed K/V latent (kv_lora) plus
 * the decoupled RoPE key (rope), by weights replicated over TP, on the
 * rank's sequence-parallel tokens; the latents are all-gathered over TP
 * (SP), normed, and projected up per head by column-parallel GEMMs: queries
 * to a (d + rope), keys and values to a (d + dv). The attention core and the
 * output projection (a dv wide) are layers.c's.
 */
#include "synth/build_int.h"

/* Width of the down-projected latents: query, K/V and the RoPE key. */
static double latent(const sc_shape *sh) { return sh->q_lora + sh->kv_lora + sh->rope; }

void sc__syn_mla_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B), Tl = sc__syn_tokens_local(B), e = sh->elem_bytes;
  if (sh->q_lora <= 0) /* queries straight from the (gathered) hidden state */
    sc__syn_gathered_gemm(B, w, SC_L_QKV, T, sh->a * sh->dq / sh->t, sh->h, T * sh->h * e);
  sc__syn_linear(B, w, SC_L_MLA_DOWN, Tl, latent(sh), sh->h);
  if (sh->sp) sc__syn_tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, T * latent(sh) * e);
  sc__syn_compute(B, w, SC_OP_NORM, SC_L_MLA_NORM,
                  sc__syn_mem(B, 2.0 * T * (sh->q_lora + sh->kv_lora) * e));
  if (sh->q_lora > 0) sc__syn_linear(B, w, SC_L_MLA_Q_UP, T, sh->a * sh->dq / sh->t, sh->q_lora);
  sc__syn_linear(B, w, SC_L_MLA_KV_UP, T, sh->a * (sh->d + sh->dv) / sh->t, sh->kv_lora);
}

/* recompute_modules mla_up_proj: the up projections again, before the
 * attention backward needs their outputs (only the latents were kept). */
void sc__syn_mla_up_recompute(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  where rw = *w;
  rw.phase = SC_PH_RECOMPUTE;
  if (sh->q_lora > 0) sc__syn_linear(B, &rw, SC_L_MLA_Q_UP, T, sh->a * sh->dq / sh->t, sh->q_lora);
  sc__syn_linear(B, &rw, SC_L_MLA_KV_UP, T, sh->a * (sh->d + sh->dv) / sh->t, sh->kv_lora);
}

/* The weight grads of the up and down projections, from the inputs kept
 * since the forward. */
static void mla_wgrads(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B), Tl = sc__syn_tokens_local(B);
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  sc__syn_linear(B, &ww, SC_L_MLA_KV_UP, sh->kv_lora, sh->a * (sh->d + sh->dv) / sh->t, T);
  if (sh->q_lora > 0) sc__syn_linear(B, &ww, SC_L_MLA_Q_UP, sh->q_lora, sh->a * sh->dq / sh->t, T);
  sc__syn_linear(B, &ww, SC_L_MLA_DOWN, sh->h, latent(sh), Tl);
}

/* Backward: the up projections' data grads (their weight grads while the
 * latents' grads are reduced over TP, unless the backward is split), the
 * latent norms, the down projection's data grad. */
void sc__syn_mla_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B), Tl = sc__syn_tokens_local(B), e = sh->elem_bytes;
  sc__syn_linear(B, w, SC_L_MLA_KV_UP, T, sh->kv_lora, sh->a * (sh->d + sh->dv) / sh->t);
  if (sh->q_lora > 0) sc__syn_linear(B, w, SC_L_MLA_Q_UP, T, sh->q_lora, sh->a * sh->dq / sh->t);
  /* each TP rank's heads give a partial grad of the replicated latents */
  sc__syn_tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                      sh->sp ? SC_L_TP_RS : SC_L_TP_AR, T * latent(sh) * e);
  sc__syn_compute(B, w, SC_OP_NORM, SC_L_MLA_NORM,
                  sc__syn_mem(B, 3.0 * T * (sh->q_lora + sh->kv_lora) * e));
  sc__syn_linear(B, w, SC_L_MLA_DOWN, Tl, sh->h, latent(sh));
  if (!B->bw_input) mla_wgrads(B, w);
  if (sh->q_lora <= 0) sc__syn_column_parallel_backward(B, w, SC_L_QKV, sh->a * sh->dq / sh->t);
}

void sc__syn_mla_weight_grads(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  mla_wgrads(B, w);
  if (sh->q_lora <= 0) sc__syn_weight_grad(B, w, SC_L_QKV, sh->a * sh->dq / sh->t);
}
