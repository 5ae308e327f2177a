/*
 * moe.c: the FFN of a mixture-of-experts layer in the synthesised workload
 * (Megatron-Core MoE semantics; docs/MOE.md): router GEMM and top-k, token
 * permutation, dispatch over the expert-parallel group (NCCL all-to-all,
 * all-gather, or DeepEP), the local experts' grouped GEMMs sized by the
 * token copies the hottest EP rank receives, combine and un-permutation,
 * with the shared experts as a tensor-parallel dense MLP beside them;
 * forward, backward (input and weight grads) and a split backward's weight
 * grads. Layers.c calls it in place of the dense FFN for MoE layers.
 */
#include "synth/build_int.h"

/* ------------------------------------------------------------ sizes */

/* Bytes of this rank's tokens entering the MoE layer (sequence-parallel
 * share), one hidden vector each. */
static double local_bytes(const builder *B) {
  return sc__syn_tokens_local(B) * B->sh->h * B->sh->elem_bytes;
}

/* Bytes one rank sends (and the hottest one receives) in a dispatch or
 * combine all-to-all: its tokens' k routed copies, times the hottest EP
 * rank's load (shape.c, moe_shape). */
static double a2a_bytes(const builder *B) { return B->sh->hot * B->sh->k * local_bytes(B); }

static double gated(const builder *B) { return B->sh->swiglu ? 2.0 : 1.0; }

/* A grouped GEMM of the E_local experts on this rank, each C[m_e, n] =
 * A[m_e, k] W_e[k, n], m_e = moe_tokens / E_local: priced as one GEMM with
 * every expert's rows stacked (the grouped kernel tiles all experts' rows
 * over the SMs together), and at least the time to read every expert's
 * weights. wgrad: the weight-grad form, the token dimension as the
 * reduction (per expert [k, m_e] x [m_e, n]). */
/* A grouped GEMM on the compute stream: with FP8, its casts first (the
 * token copies' activations, and all E_local experts' weights), then the
 * GEMM. */
static double grouped_ns(builder *B, double n, double k, int wgrad);
static void grouped(builder *B, const where *w, int label, double n, double k, int wgrad) {
  const sc_shape *sh = B->sh;
  if (wgrad)
    sc__syn_fp8_casts(B, w, label, k, n * sh->E_local, sh->moe_tokens / sh->E_local);
  else
    sc__syn_fp8_casts(B, w, label, sh->moe_tokens, n * sh->E_local, k);
  sc__syn_compute(B, w, SC_OP_GEMM, label, grouped_ns(B, n, k, wgrad));
}

static double grouped_ns(builder *B, double n, double k, int wgrad) {
  const sc_shape *sh = B->sh;
  double M = sh->moe_tokens, El = sh->E_local;
  double t = wgrad ? (B->fp8 ? sc__syn_gemm_fp8(B, k, n, M / El) : sc__syn_gemm(B, k, n, M / El)) * El
                   : (B->fp8 ? sc__syn_gemm_fp8(B, M, n, k) : sc__syn_gemm(B, M, n, k));
  double weights = sc__syn_mem(B, El * n * k * sh->elem_bytes);
  return t > weights ? t : weights;
}

/* ------------------------------------------------------------ communication */

/* Placement of the EP group of this stage's first rank (the expert grid:
 * ep members etp apart), for pricing at build time. */
static sc_placement ep_placement(const builder *B) {
  const sc_shape *sh = B->sh;
  int64_t stride = sh->tp * sh->cp * sh->dp, base = B->stage * stride;
  int64_t gpn = B->cost->gpus_per_node > 0 ? B->cost->gpus_per_node : 1;
  sc_placement_acc acc;
  sc__placement_begin(&acc, B->cost->nodes_per_leaf);
  for (int64_t i = 0; i < sh->ep; i++) sc__placement_add(&acc, (base + i * sh->etp) / gpn);
  return acc.pl;
}

/* SMs the communication kernels of a hidden all-to-all occupy while compute
 * runs beside them: DeepEP's normal kernels run on 20 SMs (Megatron-LM
 * --moe-deepep-num-sms and DeepEP's Buffer default, both 20); NCCL's
 * all-to-all on one block per channel (the NCCL model's channels). */
static double comm_sms(const builder *B) {
  return B->cost->moe_deepep ? 20.0 : B->cost->comm_params.channels;
}

/* A hidden all-to-all of `bytes` still takes its SMs from the compute it
 * overlaps: that compute runs slower by their share of the GPU for as long
 * as the all-to-all runs, priced here as compute time of that length times
 * the share (the engine's interference model is off in merged builds). */
static void overlap_contention(builder *B, const where *w, int label, double bytes) {
  sc_placement pl = ep_placement(B);
  double ns = B->cost->moe_deepep ? sc__ep_deepep_ns(B->cost, bytes, &pl)
                                  : B->cost->comm->coll_ns(B->cost, SC_COLL_ALLTOALL, bytes, &pl);
  double share = comm_sms(B) / (double)B->sh->hw->sms;
  if (share > 1.0) share = 1.0;
  if (ns > 0 && ns <= SC_WORK_MAX) sc__syn_compute(B, w, SC_OP_ELEMWISE, label, ns * share);
}

/* An EP-stream collective after the last compute op. Blocking (the next
 * compute op waits for it) unless the pass hides it behind another
 * micro-batch's compute (B->ep_overlap: parallel.moe_a2a_overlap in the
 * steady 1F1B phase, pipeline.c): then only the next pass waits for it
 * (B->ep_pending). */
static void ep_coll(builder *B, const where *w, int group, int coll, int label, double bytes) {
  uint32_t h = sc__syn_collective(B, w, SC_ST_EP, group, coll, label, SC_CAT_EP, bytes,
                                  sc__syn_last_compute(B));
  if (!B->ep_overlap) {
    if (B->ep_defer)
      B->ep_deferred = h; /* EP-stream order: the last one implies the others */
    else
      sc__syn_add_wait(B, h);
    return;
  }
  B->ep_pending = h;
  if (group == SC_GRP_EP && coll == SC_COLL_ALLTOALL) overlap_contention(B, w, label, bytes);
}

/* Tokens to the experts (back = 0) or the experts' outputs back (back = 1),
 * in the direction of the pass: a forward dispatch and a backward combine
 * move the same bytes the same way. `gather` is 1 for the way into the
 * experts (dispatch forward, combine-grad backward). */
static void exchange(builder *B, const where *w, int into_experts, int label) {
  const sc_shape *sh = B->sh;
  sc_moe_dispatcher d = B->cfg->parallel.moe_dispatcher;
  double x = local_bytes(B);
  if (d == SC_MOE_ALLGATHER) {
    /* Megatron's all-gather dispatcher: every token of the EP (x ETP) group
     * gathered, each rank keeps its experts' copies; the way back
     * reduce-scatters the partial outputs. */
    double ep_all = x * (double)sh->ep, all = ep_all * (double)sh->etp;
    if (into_experts) {
      if (sh->ep > 1) ep_coll(B, w, SC_GRP_EP, SC_COLL_ALLGATHER, label, ep_all);
      if (sh->etp > 1) ep_coll(B, w, SC_GRP_ETP, SC_COLL_ALLGATHER, SC_L_ETP_AG, all);
    } else {
      if (sh->etp > 1) ep_coll(B, w, SC_GRP_ETP, SC_COLL_REDUCESCATTER, SC_L_ETP_RS, all);
      if (sh->ep > 1) ep_coll(B, w, SC_GRP_EP, SC_COLL_REDUCESCATTER, label, ep_all);
    }
    return;
  }
  /* All-to-all (NCCL or DeepEP, told apart by the cost model): the k routed
   * copies, then the expert tensor-parallel ranks share what they received. */
  double y = a2a_bytes(B), yall = y * (double)sh->etp;
  if (into_experts) {
    if (sh->ep > 1) ep_coll(B, w, SC_GRP_EP, SC_COLL_ALLTOALL, label, y);
    if (sh->etp > 1) ep_coll(B, w, SC_GRP_ETP, SC_COLL_ALLGATHER, SC_L_ETP_AG, yall);
  } else {
    if (sh->etp > 1) ep_coll(B, w, SC_GRP_ETP, SC_COLL_REDUCESCATTER, SC_L_ETP_RS, yall);
    if (sh->ep > 1) ep_coll(B, w, SC_GRP_EP, SC_COLL_ALLTOALL, label, y);
  }
}

/* ------------------------------------------------------------ compute */

/* Router: logits GEMM [tokens, h] x [h, E] (replicated weights, on the
 * sequence-parallel tokens), then softmax / top-k / aux-loss kernels over the
 * fp32 logits (read the 16-bit logits, write and read fp32 scores, write the
 * probabilities: e + 12 bytes per logit). */
static void router_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double Tl = sc__syn_tokens_local(B);
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ROUTER, sc__syn_gemm(B, Tl, sh->E, sh->h));
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ROUTER,
                  sc__syn_mem(B, Tl * sh->E * (sh->elem_bytes + 12.0)));
}

/* The shared experts: a dense TP MLP of width f_shared on the layer's
 * tokens (tensor.c's column/row-parallel GEMMs and their TP collectives). */
static void shared_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (sh->f_shared <= 0) return;
  double T = sc__syn_tokens(B), act = T * sh->h * sh->elem_bytes;
  sc__syn_gathered_gemm(B, w, SC_L_SHARED_FC1, T, sh->f_shared * gated(B) / sh->t, sh->h, act);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ACT,
                  sc__syn_mem(B, (gated(B) + 1.0) * T * sh->f_shared / sh->t * sh->elem_bytes));
  sc__syn_reduced_gemm(B, w, SC_L_SHARED_FC2, T, sh->h, sh->f_shared / sh->t, act);
}

static void shared_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (sh->f_shared <= 0) return;
  double T = sc__syn_tokens(B);
  sc__syn_row_parallel_backward(B, w, SC_L_SHARED_FC2, sh->f_shared / sh->t);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ACT,
                  sc__syn_mem(B, (gated(B) + 2.0) * T * sh->f_shared / sh->t * sh->elem_bytes));
  sc__syn_column_parallel_backward(B, w, SC_L_SHARED_FC1, sh->f_shared * gated(B) / sh->t);
}

/* The local experts forward: FC1 (gated halves), activation, FC2 over the
 * received token copies; the FFN split over etp. */
static void experts_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double fl = sh->fe / (double)sh->etp, M = sh->moe_tokens;
  grouped(B, w, SC_L_EXPERT_FC1, fl * gated(B), sh->h, 0);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_EXPERT_ACT,
                  sc__syn_mem(B, (gated(B) + 1.0) * M * fl * sh->elem_bytes));
  grouped(B, w, SC_L_EXPERT_FC2, sh->h, fl, 0);
}

/* Permutation (gather each token's k copies into expert order) and its
 * inverse (the weighted sum of the k expert outputs per token): memory-bound
 * over the token and its copies (Megatron's fused permute kernels). */
static void permute(builder *B, const where *w, int label) {
  const sc_shape *sh = B->sh;
  sc__syn_compute(B, w, SC_OP_ELEMWISE, label, sc__syn_mem(B, (1.0 + sh->k) * local_bytes(B)));
}

/* ------------------------------------------------------------ passes */

/* The exchange into the experts and the shared experts: in turn, or with
 * parallel.moe_shared_expert_overlap the shared experts computing while
 * the exchange is in flight (the routed experts wait for both). */
static void exchange_and_shared(builder *B, const where *w, int label, int bwd) {
  int overlap = B->cfg->parallel.moe_shared_expert_overlap && B->sh->f_shared > 0;
  B->ep_defer = overlap;
  B->ep_deferred = NONE;
  exchange(B, w, 1, label);
  B->ep_defer = 0;
  if (bwd)
    shared_backward(B, w);
  else
    shared_forward(B, w);
  sc__syn_add_wait(B, B->ep_deferred);
  B->ep_deferred = NONE;
}

void sc__syn_moe_forward(builder *B, const where *w) {
  router_forward(B, w);
  permute(B, w, SC_L_PERMUTE);
  exchange_and_shared(B, w, SC_L_DISPATCH, 0);
  experts_forward(B, w);
  exchange(B, w, 0, SC_L_COMBINE);
  permute(B, w, SC_L_UNPERMUTE);
}

/* Weight grads of the local experts (FC2 then FC1) and of the router. */
static void experts_weight_grads(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double fl = sh->fe / (double)sh->etp;
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  grouped(B, &ww, SC_L_EXPERT_FC2, sh->h, fl, 1);
  grouped(B, &ww, SC_L_EXPERT_FC1, fl * gated(B), sh->h, 1);
  sc__syn_compute(B, &ww, SC_OP_GEMM, SC_L_ROUTER,
                  sc__syn_gemm(B, sh->h, sh->E, sc__syn_tokens_local(B)));
}

/* Backward: the grads of the combined output travel back to the experts
 * (the combine's mirror), the experts' data grads (FC2, activation, FC1)
 * and, unless the backward is split, their weight grads; the token grads go
 * home (the dispatch's mirror), the permutation and the router backward. */
void sc__syn_moe_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double fl = sh->fe / (double)sh->etp, M = sh->moe_tokens;
  permute(B, w, SC_L_UNPERMUTE);
  exchange_and_shared(B, w, SC_L_COMBINE, 1);
  if ((sh->rc & SC_RC_MOE_ACT) && !(sh->rc & SC_RC_MOE)) { /* the activation again */
    where rw = *w;
    rw.phase = SC_PH_RECOMPUTE;
    sc__syn_compute(B, &rw, SC_OP_ELEMWISE, SC_L_EXPERT_ACT,
                    sc__syn_mem(B, (gated(B) + 1.0) * M * fl * sh->elem_bytes));
  }
  grouped(B, w, SC_L_EXPERT_FC2, fl, sh->h, 0);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_EXPERT_ACT,
                  sc__syn_mem(B, (gated(B) + 2.0) * M * fl * sh->elem_bytes));
  grouped(B, w, SC_L_EXPERT_FC1, sh->h, fl * gated(B), 0);
  if (!B->bw_input) experts_weight_grads(B, w);
  exchange(B, w, 0, SC_L_DISPATCH);
  permute(B, w, SC_L_PERMUTE);
  double Tl = sc__syn_tokens_local(B);
  sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_ROUTER,
                  sc__syn_mem(B, Tl * sh->E * (sh->elem_bytes + 12.0)));
  sc__syn_compute(B, w, SC_OP_GEMM, SC_L_ROUTER, sc__syn_gemm(B, Tl, sh->h, sh->E));
}

/* A split backward's W pass: the experts', router's and shared experts'
 * weight grads. */
void sc__syn_moe_weight_grads(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (sh->f_shared > 0) {
    sc__syn_weight_grad(B, w, SC_L_SHARED_FC2, sh->f_shared / sh->t);
    sc__syn_weight_grad(B, w, SC_L_SHARED_FC1, sh->f_shared * gated(B) / sh->t);
  }
  experts_weight_grads(B, w);
}
