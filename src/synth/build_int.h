/*
 * build_int.h: the workload synthesiser's shared state and the functions its
 * modules offer one another (internal to src/synth/):
 *   chain.c    op emission, the merged-workload chain and TP inlining, the
 *              GEMM memo and the per-layer memo (see "merging" there);
 *   tensor.c   tensor parallelism: column/row-parallel GEMMs with their
 *              all-reduce, or all-gather/reduce-scatter under sequence
 *              parallelism, and their overlap;
 *   layers.c   the ops of a transformer layer, the embedding and the LM head;
 *   moe.c      a mixture-of-experts layer's FFN: router, dispatch, experts,
 *              combine;
 *   mla.c      multi-head latent attention's down/up projections;
 *   pipeline.c a stage's program: the schedule's passes with their p2p;
 *   context.c  context parallelism: the attention exchanges over the CP group;
 *   fsdp.c     FSDP / ZeRO-3: per-layer parameter gathers and gradient
 *              reduce-scatters over the shard group;
 *   data.c     data parallelism: gradient buckets, the distributed
 *              optimizer's traffic, the optimizer step;
 *   offload.c  host-memory offload: activation and optimizer copies on the
 *              host-copy stream, the CPU optimizer step;
 *   build.c    the entry points (synth_int.h).
 */
#ifndef SC_SYNTH_BUILD_INT_H
#define SC_SYNTH_BUILD_INT_H

#include "input/config_int.h"
#include "model/schedule_int.h"
#include "synth/synth_int.h"

#define NONE UINT32_MAX

typedef sc_sched_item item;

#define SC_GEMM_MEMO 64
/* Dependencies one compute op can take (a pass start: the last send, the
 * receive, a parameter gather, an FSDP gather, a hidden MoE all-to-all). */
#define SC_SYN_WAITS 8
typedef struct gemm_memo {
  double m, n, k, ns;
  int valid; /* 0: empty, 1: a GEMM in the working dtype, 2: an FP8 one */
} gemm_memo;

/* State of a merged build (SC_WL_MERGE; see "merging" in chain.c). Times are
 * chain times, whole ns. */
#define TP_RING 16  /* inlined collectives a compute op can wait for */
#define TP_PRICES 8 /* TP collective prices remembered */
typedef struct merger {
  int on;           /* SC_WL_MERGE */
  int inline_tp;    /* TP collectives after compute ops are priced, not emitted */
  int order_tp;     /* TP collectives are also emitted (receive gathers): keep order */
  int open;         /* the last compute-stream op may still grow */
  int flushed;      /* the last compute-stream op is a bare remainder */
  int retry;        /* an exactness condition failed: build again without inlining */
  int64_t t_c;      /* the compute stream is free from here */
  int64_t t_tp;     /* the inlined collectives are done here */
  int64_t op_start; /* start of the last compute-stream op */
  uint32_t first_id, last_id; /* inlined collectives: first of this chain, last (0: none) */
  uint32_t must_wait;         /* the next compute op must wait for this one (0: none) */
  uint32_t tp_done_id;        /* last inlined collective that tp_done ends with */
  uint32_t tp_done;           /* compute-stream op ending with it */
  uint32_t real_tp;           /* emitted TP op no compute op has waited for, or NONE */
  int64_t tp_end[TP_RING];    /* chain time each recent inlined collective ends */
  struct {
    int coll;
    double bytes, ns;
  } price[TP_PRICES];
  int nprice, price_next;
} merger;

/* FSDP / ZeRO-3 state of the pass being built (fsdp.c). */
typedef struct fsdp_state {
  int on;                 /* parallel.zero_stage >= 3 */
  int gather;             /* this pass gathers its units' parameters */
  int64_t shard_ranks;    /* ranks a parameter is sharded over: fsdp_shard x cp */
  int64_t replicas;       /* copies of each shard (hybrid sharding) */
  int64_t expert_ranks;   /* ranks routed experts are sharded over apart from the rest
                             (the EDP group), or 0: with the rest of their unit
                             (sc__shape_fsdp_expert_ranks) */
  int64_t nunits, issued, unit; /* units of the pass, gathers issued, next unit */
  int64_t cap;            /* entries of params and ag */
  double *params;         /* per unit, in compute order: gathered over the shard group */
  double *eparams;        /* per unit: routed experts' over EDP (0 if expert_ranks 0) */
  uint32_t *ag;           /* its all-gather */
} fsdp_state;

typedef struct builder {
  sc_ctx *ctx;
  const sc_config *cfg;
  const sc_cost *cost;
  sc_program *prog;
  const sc_shape *sh;
  int64_t pp, vpp, m, stage;
  double lparams; /* parameters of one layer on one TP rank */
  int rc;
  gemm_memo memo[SC_GEMM_MEMO];
  uint32_t wait[SC_SYN_WAITS]; /* deps the next compute op must take */
  int nwait;
  /* Per schedule item: compute handle at its end and its send (or NONE).
   * A pass posts its receive and waits for the sends `lag` items back:
   * 1 for 1F1B/GPipe (Megatron blocks after every pass), 2 for the
   * interleaved schedule (it batches the p2p of each forward/backward pair
   * and receives one pair ahead); 0 for the zero-bubble schedules, whose
   * transfers are all posted ahead (non-blocking). */
  uint32_t *item_end, *item_send;
  int lag;
  uint32_t *param_ag; /* per layer: DP-stream handle of its param all-gather */
  merger mg;          /* SC_WL_MERGE state */
  struct part_memo *parts; /* [6]: layer_forward_rest, layer_backward_rest, weight grads;
                              the same for MoE layers */
  int bw_input;       /* split backward (zero-bubble): B passes leave the weight grads */
  int fp8;            /* training.precision fp8: linear layers' GEMMs in FP8 (tensor.c) */
  fsdp_state fsdp;    /* FSDP / ZeRO-3 (fsdp.c) */
  uint32_t ep_pending; /* parallel.moe_a2a_overlap: the last EP collective no compute op
                          has waited for (the next pass waits; NONE: none) */
  int ep_overlap;      /* the pass being built hides its EP all-to-alls (moe_a2a_overlap,
                          in the schedule's steady 1F1B phase) */
  int ep_defer;        /* moe.c: EP collectives' waits go to ep_deferred (shared expert
                          overlap) instead of the next compute op */
  uint32_t ep_deferred;
  /* training.activation_offload_layers (offload.c), per global layer (NULL
   * without): the copy of its activations to the host in the current
   * forward pass, and its reload in the current backward pass. */
  uint32_t *offload_d2h, *offload_h2d;
} builder;

/* Where an op sits in the step (for traces and the memory track). */
typedef struct where {
  uint16_t layer, chunk;
  uint32_t mb;
  uint8_t phase;
} where;

/* The recorded effect of a part of a layer in a merged build (chain.c,
 * "layer memo"). */
typedef struct part_memo {
  int valid;
  int64_t dc, dgap, dmerged; /* added to t_c, the op's tp_ns, nmerged */
  uint32_t ntp;              /* inlined collectives */
  int64_t tp_rel;            /* t_tp - t_c after the part (when ntp > 0) */
  int64_t end_rel[TP_RING];  /* ends of its last min(ntp, TP_RING) collectives - t_c */
} part_memo;

typedef void (*part_fn)(builder *B, const where *w);

/* Bucketing of one chunk's gradients, in backward order (data.c). */
typedef struct bucketer {
  double fill;  /* elements in the open bucket */
  double limit; /* bucket size, elements */
  int overlap;  /* emit as soon as ready (else collect) */
  int group;    /* SC_GRP_DP, or SC_GRP_EDP for routed experts' gradients */
} bucketer;

/* ------------------------------------------------------------ chain.c */

/* An op at w of kind, label and category with `work` (ns for compute and
 * host time, bytes for communication), without dependencies. */
sc_op sc__syn_op(const where *w, int kind, int label, uint8_t cat, double work);
/* Appends a copy of tmpl to `stream` with the deps that are not NONE;
 * returns its index, or NONE (B->rc set) when out of memory. */
uint32_t sc__syn_emit(builder *B, int stream, const sc_op *tmpl, const uint32_t *deps, int ndeps);
/* A compute op of ns at w taking the pending waits (merged: grows the chain). */
void sc__syn_compute(builder *B, const where *w, int kind, int label, double ns);
/* Handle of the last compute-stream op (closes it in a merged build), or NONE. */
uint32_t sc__syn_last_compute(builder *B);
/* The next compute op waits for dep (NONE: nothing). */
void sc__syn_add_wait(builder *B, uint32_t dep);
/* A collective on `stream` of `bytes` over group kind `group`, after
 * `after`; returns its handle. */
uint32_t sc__syn_collective(builder *B, const where *w, int stream, int group, int coll,
                            int label, int cat, double bytes, uint32_t after);
/* A TP collective after the last compute op / after another stream's op. */
uint32_t sc__syn_tp_after_compute(builder *B, const where *w, int coll, int label, double bytes);
uint32_t sc__syn_tp_after_op(builder *B, const where *w, int coll, int label, int cat,
                             double bytes, uint32_t after);
/* Puts the inlined collectives still running on the compute stream. */
void sc__syn_flush_remainder(builder *B, const where *w);
/* A GEMM's duration, memoised per shape. */
double sc__syn_gemm(builder *B, double m, double n, double k);
/* The same on FP8 operands. */
double sc__syn_gemm_fp8(builder *B, double m, double n, double k);
/* Runs fn(B, w) or replays its recorded effect. */
void sc__syn_memo_run(builder *B, part_memo *pm, part_fn fn, const where *w);

/* A memory-bound kernel of bytes. */
static inline double sc__syn_mem(const builder *B, double bytes) {
  return B->cost->compute->mem_ns(B->cost, bytes);
}
/* Unfused attention's kernels that stream the s x s scores: a batched score
 * GEMM, a softmax or dropout pass (calibration.scores_mem_eff). */
static inline double sc__syn_scores_gemm(const builder *B, double m, double n, double k) {
  return B->cost->compute->scores_gemm_ns(B->cost, m, n, k);
}
static inline double sc__syn_scores_mem(const builder *B, double bytes) {
  return B->cost->compute->scores_mem_ns(B->cost, bytes);
}
/* Ranks that hold the same parameters and reduce their gradients: dp x cp
 * (the SC_GRP_DP group; Megatron-LM reduces over data and context
 * parallelism together). */
static inline int64_t sc__syn_dp_ranks(const builder *B) { return B->sh->dp * B->sh->cp; }

/* Parameters of global layer `layer` on one rank outside the routed experts
 * (reduced over dp x cp), and its routed experts' (reduced over the
 * expert-data-parallel group, SC_GRP_EDP, of edp ranks). */
static inline double sc__syn_layer_dense_params(const builder *B, int64_t layer) {
  return sc__shape_is_moe_layer(B->sh, layer) ? B->sh->moe_layer_params : B->sh->layer_params;
}
static inline double sc__syn_layer_expert_params(const builder *B, int64_t layer) {
  return sc__shape_is_moe_layer(B->sh, layer) ? B->sh->expert_params : 0.0;
}
/* Ranks a gradient reduction of `group` (SC_GRP_DP or SC_GRP_EDP) spans. */
static inline int64_t sc__syn_grad_ranks(const builder *B, int group) {
  return group == SC_GRP_EDP ? B->sh->edp : sc__syn_dp_ranks(B);
}

/* Tokens of a micro-batch on this rank (its context-parallel share), and
 * tokens an elementwise op touches on one rank (split over TP with SP). */
static inline double sc__syn_tokens(const builder *B) { return B->sh->b * B->sh->s_cp; }
static inline double sc__syn_tokens_local(const builder *B) {
  return B->sh->sp ? sc__syn_tokens(B) / B->sh->t : sc__syn_tokens(B);
}

/* ------------------------------------------------------------ tensor.c */

/* A linear layer's GEMM C[m,n] = A[m,k] B[k,n] on the compute stream with
 * its FP8 casts (training.precision fp8), no communication. */
void sc__syn_linear(builder *B, const where *w, int label, double m, double n, double k);
/* The FP8 quantisation kernel a GEMM C[m,n] = A[m,k] B[k,n] needs first
 * (training.recipe rules, tensor.c); nothing without FP8. */
void sc__syn_fp8_casts(builder *B, const where *w, int label, double m, double n, double k);
void sc__syn_tp_blocking(builder *B, const where *w, int coll, int label, double bytes);
void sc__syn_gathered_gemm(builder *B, const where *w, int label, double m, double n, double k,
                           double bytes);
void sc__syn_reduced_gemm(builder *B, const where *w, int label, double m, double n, double k,
                          double bytes);
void sc__syn_gathered_gemms(builder *B, const where *w, int label, double m, const double *n,
                            int parts, double k, double bytes);
void sc__syn_column_parallel_backward(builder *B, const where *w, int label, double n_out);
void sc__syn_column_parallel_backwards(builder *B, const where *w, int label, const double *n_out,
                                       int parts);
void sc__syn_row_parallel_backward(builder *B, const where *w, int label, double k_in);
void sc__syn_weight_grad(builder *B, const where *w, int label, double n);
void sc__syn_weight_grads(builder *B, const where *w, int label, const double *n, int parts);

/* ------------------------------------------------------------ context.c */

/* Causal attention of one micro-batch under context parallelism (cp > 1);
 * flops: this rank's share of the forward / backward FLOPs. */
void sc__syn_cp_attention_forward(builder *B, const where *w, double flops);
void sc__syn_cp_attention_backward(builder *B, const where *w, double flops);

/* ------------------------------------------------------------ fsdp.c */

/* A pass (SC_PASS_*) of virtual stage vs begins: its units' parameter
 * gathers start (prefetch depth ahead). No-ops without FSDP. */
void sc__syn_fsdp_pass(builder *B, const where *w, int64_t vs, int pass);
/* The next unit's compute begins (waits for its gather) / ended; reduce: its
 * gradients are complete, reduce-scatter them. */
void sc__syn_fsdp_unit_begin(builder *B, const where *w);
void sc__syn_fsdp_unit_end(builder *B, const where *w, int reduce);

/* ------------------------------------------------------------ moe.c */

/* The MoE FFN of one layer and micro-batch (after the FFN norm, before the
 * residual): forward, backward (input grads, and weight grads unless the
 * backward is split), a split backward's weight grads. */
void sc__syn_moe_forward(builder *B, const where *w);
void sc__syn_moe_backward(builder *B, const where *w);
void sc__syn_moe_weight_grads(builder *B, const where *w);

/* ------------------------------------------------------------ mla.c */

/* Multi-head latent attention's projections into the attention core (in
 * place of the QKV GEMM): forward, backward (input grads, and weight grads
 * unless the backward is split), a split backward's weight grads. */
void sc__syn_mla_forward(builder *B, const where *w);
void sc__syn_mla_backward(builder *B, const where *w);
void sc__syn_mla_weight_grads(builder *B, const where *w);
/* recompute_modules mla_up_proj: the up projections re-run in the backward. */
void sc__syn_mla_up_recompute(builder *B, const where *w);

/* ------------------------------------------------------------ layers.c */

void sc__syn_layer_forward(builder *B, const where *w);
void sc__syn_layer_backward(builder *B, const where *w);
void sc__syn_embedding_forward(builder *B, const where *w);
void sc__syn_embedding_backward(builder *B, const where *w);
void sc__syn_head_forward(builder *B, const where *w);
void sc__syn_head_backward(builder *B, const where *w);
/* A split backward's W pass: one layer's weight grads, the LM head's. */
void sc__syn_layer_weight_grads(builder *B, const where *w);
void sc__syn_head_weight_grads(builder *B, const where *w);

/* ------------------------------------------------------------ pipeline.c */

/* Builds stage B->stage's program from its schedule; *stage_params gets the
 * parameters it holds. 0 or an SC_E code. */
int sc__syn_build_stage(builder *B, const item *sched, size_t nsched, double *stage_params);

/* ------------------------------------------------------------ offload.c */

/* Whether global layer `layer`'s activations go to host memory. */
int sc__syn_offloaded(const builder *B, int64_t layer);
/* Around a layer's forward: its first op waits for the copy of the layer
 * two before; after it, its activations are copied out. */
void sc__syn_offload_forward_begin(builder *B, int64_t layer);
void sc__syn_offload_forward_end(builder *B, const where *w, int64_t layer);
/* Before a layer's backward: it waits for its reload; the layer before it
 * starts reloading. */
void sc__syn_offload_backward_begin(builder *B, const where *w, int64_t layer);
/* training.optimizer_offload around the optimizer step over `elems`
 * offloaded parameters: _before (a GPU step: the states come over; the
 * step waits for them; its handle or NONE), then _after the GPU step
 * `gpu_step` (its handle): the CPU step's gradient copy after grads_ready,
 * CPU Adam and the copy back, or a GPU step's states back. Returns what the
 * step's followers wait for. No-ops without optimizer offload. */
uint32_t sc__syn_offload_optimizer_before(builder *B, const where *w, double elems,
                                          const uint32_t *grads_ready, int nready);
/* The handles the offloaded part of the step waits for, into out (at most
 * SC_SYN_WAITS + 1): the step's pending waits on real streams and the last
 * compute op (the end of the backward). */
int sc__syn_offload_grads_ready(builder *B, uint32_t *out);
uint32_t sc__syn_offload_optimizer_after(builder *B, const where *w, double elems,
                                         const uint32_t *grads_ready, int nready,
                                         uint32_t gpu_step);

/* ------------------------------------------------------------ data.c */

/* The distributed optimizer's parameter all-gathers overlapped with the
 * forward (B->param_ag per layer; NONE without them). */
void sc__syn_dp_param_gathers(builder *B);
/* Reduces elems of gradients over `group` (SC_GRP_DP, or SC_GRP_EDP for
 * routed experts) after `after`. */
void sc__syn_dp_reduce(builder *B, int group, double elems, uint32_t after);
/* Adds elems whose gradients are final once the last compute op ends. */
void sc__syn_bucket_add(builder *B, bucketer *bk, double elems);
/* After the backward: the reductions not overlapped, the tied-embedding
 * sync; returns the handle the optimizer waits for (or NONE). params: the
 * stage's, of which expert_params routed experts'. */
uint32_t sc__syn_dp_grads_done(builder *B, double params, double expert_params);
/* The optimizer step over the local shard and the distributed optimizer's
 * parameter all-gathers after it (when not overlapped with the forward). */
void sc__syn_dp_optimizer(builder *B, double params, double expert_params);

#endif /* SC_SYNTH_BUILD_INT_H */
