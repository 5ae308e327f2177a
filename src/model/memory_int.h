/*
 * memory_int.h: internals of the memory model (src/memory.c) shared with the
 * sweep's pruning, the engine (step result, future memory counter track in
 * the Chrome trace) and tests. Not API; the public face is stepcast/memory.h.
 */
#ifndef SC_MEMORY_INT_H
#define SC_MEMORY_INT_H

#include "model/shape_int.h"
#include "stepcast/memory.h"

/* Doubles per stage in sc_memory_model.sched_peak. */
#define SC_MEMORY_PEAK_VALUES 4

/* Options of the estimate. zero_stage: 0 none, 1 optimizer states sharded
 * over DP (= parallel.distributed_optimizer), 2 gradients too, 3 weights too
 * (FSDP); 2 and 3 have no config field yet. flash_attention: 1 when the
 * attention kernel does not materialise the s x s score matrix
 * (training.attention: flash), 0 for unfused attention as in Korthikanti et
 * al. 2022 (training.attention: unfused). */
typedef struct sc_memory_opts {
  int zero_stage;
  int flash_attention;
} sc_memory_opts;

/* The options a config implies: zero_stage 1 with the distributed optimizer
 * (and dp > 1) else 0; flash_attention from training.attention. */
void sc__memory_opts_of(const sc_config *cfg, sc_memory_opts *o);

/* Per-config quantities behind every stage's estimate; filled by
 * sc__memory_model_init and read-only afterwards. Bytes and elements. */
typedef struct sc_memory_model {
  const sc_shape *sh;         /* borrowed, must outlive the model */
  const sc_config *cfg;       /* sh->cfg */
  sc_memory_opts o;
  int64_t tp, pp, dp, vpp, m; /* m: micro-batches per replica per step */
  double layer_params;        /* one layer's parameters on one TP rank */
  double embed_params;        /* word embedding (or LM head) shard */
  double norm_params;         /* final norm */
  double weight_bpp, grad_bpp, opt_bpp; /* bytes per parameter before sharding */
  double act_layer;           /* stored per layer per micro-batch (recompute mode) */
  double act_layer_full;      /* same without any recompute */
  double act_layer_w;         /* held between a split backward's B and W passes */
  double act_layer_rc;        /* re-made for one layer's backward, with its SP gather */
  double act_embed, act_head; /* per micro-batch on the first / last virtual stage */
  double gather_bytes;        /* sequence-parallel all-gather output */
  double cp_kv_bytes;         /* context parallelism's K/V buffers during attention */
  /* Mixture of experts (0 for dense models): per MoE layer per micro-batch
   * stored (recompute mode), without recompute, between a split backward's
   * B and W passes; the dispatch buffers held while an MoE layer runs; the
   * routed experts' states after their expert-data-parallel sharding. */
  double act_moe_layer, act_moe_layer_full, act_moe_layer_w;
  double moe_buffer_bytes;
  double expert_weight_bpp, expert_grad_bpp, expert_opt_bpp;
  double loss_logits_bytes;      /* the loss's logits beside its fp32 log-probabilities
                                 (16-bit; fp32 gradients with fp32_loss_grads) */
  /* parallel.pp_keep_outputs (torch.distributed.pipelining, pp > 1): the
   * 16-bit logits of one micro-batch, e s b V / t, which the last virtual
   * stage's forward adds and nothing frees before the step ends; else 0. */
  double pp_output_bytes;
  /* Host-memory offload (training.optimizer_offload,
   * activation_offload_layers): bytes per parameter of the optimizer
   * states kept in host memory (opt_bpp and expert_opt_bpp hold the
   * device's part); the first offload_layers layers' activations go to the
   * host, offload_layer_max the largest of them (one layer in transit). */
  double host_opt_bpp, host_expert_opt_bpp;
  int64_t offload_layers;
  double offload_layer_max;
  double capacity_bytes;      /* HBM of the GPU */
  /* ZB-V, DualPipe, DualPipe-V only (sc__schedule_whole; else NULL): per
   * stage the peak of its walk along the order the synthesiser runs
   * (sc__schedule_all), SC_MEMORY_PEAK_VALUES doubles a stage:
   * activations, embedding and LM head of them, items held, kept
   * pipeline outputs of them. Owned;
   * sc__memory_model_free releases it. */
  double *sched_peak;
} sc_memory_model;

/* Prepares the model for a shape (sc__shape_init). Returns 0, or SC_ENOMEM
 * / SC_EINTERNAL (message in ctx) from ZB-V's schedule, the one schedule
 * whose order needs the whole pipeline: it is built once here (O(pp * m)
 * memory while walked) and each stage's peak kept. Other schedules
 * allocate nothing. Free with sc__memory_model_free. */
int sc__memory_model_init(sc_ctx *ctx, sc_memory_model *mm, const sc_shape *sh,
                          const sc_memory_opts *o);
/* Frees what sc__memory_model_init allocated; safe on a zeroed model. */
void sc__memory_model_free(sc_ctx *ctx, sc_memory_model *mm);

/* Stored activations of one transformer layer for one micro-batch on one TP
 * rank, bytes, for `recompute` with the model's shape: Korthikanti et al.
 * 2022 Table 2 generalised to GQA, SwiGLU and any FFN width. */
double sc__memory_layer_act(const sc_shape *sh, int recompute, int flash_attention);
double sc__memory_layer_wgrad_act(const sc_shape *sh);
/* The same for an MoE layer (docs/MOE.md): the attention half as above,
 * then the router's fp32 scores and the routed token copies the experts
 * keep (the hottest EP rank's), and the shared experts as a dense FFN. */
double sc__memory_moe_layer_act(const sc_shape *sh, int recompute, int flash_attention);
double sc__memory_moe_layer_wgrad_act(const sc_shape *sh);

/* Activations one schedule item (a forward pass of one micro-batch through
 * one model chunk) adds on `stage`, bytes: the chunk's layers plus embedding
 * or LM head when the chunk holds them. The engine's memory counter track
 * adds this when the item's forward starts and removes it when its backward
 * ends. */
double sc__memory_item_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk);
/* Of those, what a split backward (ZB-H1, ZB-V) keeps from the item's
 * input-grad pass until its weight-grad pass; 0 when the backward is not
 * split. The counter track frees the rest when the B pass ends. */
double sc__memory_item_wgrad_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk);
/* Of those, what the item keeps after its backward, until the step ends
 * (parallel.pp_keep_outputs: the last stage's outputs); 0 otherwise. The
 * counter track does not free it when the backward ends. */
double sc__memory_item_kept_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk);

/* Memory that does not depend on the schedule position (weights, grads,
 * optimizer, communication buffers, framework fixed part), bytes: the
 * baseline of the counter track. */
double sc__memory_static_bytes(const sc_memory_model *mm, int64_t stage);

/* Fills out for one stage (0 <= stage < pp). Walks the stage's schedule
 * order, O(m * vpp) (ZB-V: its walk from sc__memory_model_init). */
void sc__memory_stage(const sc_memory_model *mm, int64_t stage, sc_memory_stage *out);

/* Largest stage total, bytes; *stage_out (may be NULL) gets the stage. */
double sc__memory_peak(const sc_memory_model *mm, int64_t *stage_out);

/* Peak memory per GPU of a shape with the options its config implies, GiB:
 * what sc_result.memory_gib reports (analysis/simulate.c); 0 or the
 * model's error code. */
int sc__memory_peak_gib(sc_ctx *ctx, const sc_shape *sh, double *gib);

#endif /* SC_MEMORY_INT_H */
