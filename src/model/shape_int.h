/*
 * shape_int.h: the model shape, derived once from a resolved config and passed
 * down the pipeline: every dimension the workload synthesiser, the memory
 * model and the FLOP count need (per TP rank where it says so), parameter
 * counts per layer and per stage, bytes per element, the resolved GPU and the
 * step's FLOPs. The place where new model features (MoE, MLA, context
 * parallelism, uneven stages) add their dimensions.
 */
#ifndef SC_SHAPE_INT_H
#define SC_SHAPE_INT_H

#include "base/sc_int.h"

typedef struct sc_shape {
  const sc_config *cfg; /* the resolved config it was derived from (borrowed) */
  const sc_hw *hw;      /* cluster.gpu, resolved (&hw_own for a GPU file) */
  sc_hw hw_own;         /* a GPU file's figures; the shape is not copied */

  /* Dimensions (elements), as doubles because every use multiplies them. */
  double b;      /* micro-batch, sequences */
  double s;      /* sequence length, tokens */
  double h;      /* hidden */
  double a;      /* attention heads */
  double g;      /* key/value heads */
  double d;      /* head dim (model.head_dim, h / a unless given) */
  double qd;     /* query width a * d (h unless head_dim is given) */
  double s_cp;   /* tokens of a sequence on one context-parallel rank: s / cp */
  int64_t cp_in; /* cp_comm a2a+p2p: CP ranks of one all-to-all group (on one node);
                    else cp */
  double f;      /* FFN inner size */
  double v;      /* vocabulary padded to a multiple of 128 * tp (Megatron) */
  double t;      /* tensor-parallel size */
  double g_rank; /* KV heads on one TP rank: a shard, or one replicated head when
                    tp > kv_heads (Megatron-LM's GQA layout) */
  double shard;  /* t with sequence parallelism, else 1: how activations split */
  double qkv_out; /* QKV projection outputs summed over the TP group: qd + 2 g_rank t d
                     (MLA: the up-projections', a (dq + d + dv)) */
  /* Attention widths over all heads: queries/keys (a d, MLA a dq) and values
   * (a d, MLA a dv); the attention core's FLOPs and the output projection's
   * input use them. */
  double attn_qk, attn_v;
  /* Multi-head latent attention (mla = 0: ordinary attention): compressed
   * query and K/V widths, the decoupled RoPE dim, the query/key head dim
   * dq = d + rope and the value head dim dv. */
  int mla;
  double q_lora, kv_lora, rope, dq, dv;
  int sp;        /* sequence parallelism over TP (tp > 1) */
  int swiglu;    /* gated FFN: three GEMMs */
  int relu2;     /* squared ReLU (not gated) */
  int tied;      /* LM head shares the input embedding */
  int dropout;   /* model.dropout > 0: masks stored, unfused dropout kernels run */

  /* Parallel layout and schedule sizes. */
  int64_t tp, pp, dp, cp, vpp;
  int64_t layers;
  int64_t m;   /* micro-batches per replica per step */
  /* Layers per model chunk of the first, middle and last stage (uneven
   * splits: parallel.pp_first_layers / pp_last_layers over vpp chunks), and
   * how many layers the very first / last model chunk holds fewer than
   * that: 1 where it counts the embedding / loss as a layer
   * (pp_embedding_in_split / pp_loss_in_split), or torchtitan's short outer
   * chunks when the given ends do not divide into vpp chunks. Read through
   * sc__shape_vs_layers and sc__shape_vs_first_layer. */
  int64_t lpc_first, lpc_mid, lpc_last;
  int short_first, short_last;
  int64_t lpc_max; /* most layers of any model chunk */
  int vshape;      /* ZB-V, DualPipe-V: chunk 1 of stage s is virtual stage 2 pp - 1 - s */
  int dual;        /* DualPipe: vpp 1, and a second chunk per stage, stage pp - 1 - s of a
                      mirrored model copy whose micro-batches enter at the last stage */

  /* Bytes per element. */
  double elem_bytes; /* activations and GEMM operands: 4 for fp32, else 2 (fp8
                        keeps 16-bit activations between kernels) */
  double grad_bytes; /* the data-parallel gradient reduction dtype */

  /* Parameters held by one TP rank. */
  double layer_params; /* one transformer layer */
  double embed_params; /* the word embedding (or LM head) vocabulary shard */
  double norm_params;  /* the final norm */

  /* Mixture of experts (docs/MOE.md); moe = 0 for a dense model, whose
   * other MoE members are then 0 (ep, etp, edp 1). */
  unsigned rc;          /* with recompute selective its modules (SC_RC_*), else 0 */
  unsigned rc_modules;  /* training.recompute_modules whatever the recompute mode */
  int moe;
  int64_t dense_layers; /* leading layers with a dense FFN (all of them when !moe) */
  int64_t moe_freq;     /* after them, every moe_freq-th layer is MoE (1: all) */
  double E, k;          /* routed experts, experts per token */
  double fe;            /* one expert's FFN inner size */
  double f_shared;      /* the shared experts' total width (shared x fe), TP-split */
  int64_t ep, etp, edp; /* expert grid: etp fastest, ep, then expert-data-parallel
                           edp = tp * cp * dp / (ep * etp) */
  double E_local;       /* experts on one EP rank: E / ep */
  double hot;           /* routed tokens of the hottest EP rank over the mean
                           (model.moe_router_balance on E_local experts, capped by
                           moe_capacity_factor); every EP rank is priced at it */
  double moe_tokens;    /* token copies one rank's expert GEMMs take per micro-batch,
                           the hottest rank's: hot * k * (tokens / t with SP) * etp */
  double moe_layer_params; /* an MoE layer's parameters on one rank outside the experts:
                              attention, norms, router (h x E, replicated), shared experts */
  double expert_params;    /* its routed experts' parameters on one rank:
                              E_local * gated FFN of fe / etp */

  /* FLOPs per step, Megatron's model-FLOPs convention (no recompute) and
   * counting the configured recompute. */
  double model_flops, hw_flops;
} sc_shape;

/* Derives the shape of a resolved config (sc_config_resolve). Returns 0 or
 * SC_EINVAL with a message (unknown GPU, sizes that do not divide: a config
 * that was not resolved). No allocation. */
int sc__shape_init(sc_ctx *ctx, const sc_config *cfg, sc_shape *out);

/* Virtual stage (position in the pipeline) of model chunk `chunk` of
 * `stage`: chunk * pp + stage (interleaved), the V of ZB-V, or for
 * DualPipe's chunk 1 the mirrored copy's stage pp - 1 - stage (its pipeline
 * runs from the last stage to the first). */
static inline int64_t sc__shape_vstage(const sc_shape *sh, int64_t stage, int64_t chunk) {
  if (sh->dual) return chunk == 1 ? sh->pp - 1 - stage : stage;
  return sh->vshape && chunk == 1 ? 2 * sh->pp - 1 - stage : chunk * sh->pp + stage;
}

/* Model chunks one stage holds: vpp, or 2 for DualPipe (vpp 1 for the layer
 * split: each chunk is one stage of a pp-stage copy). */
static inline int64_t sc__shape_chunks(const sc_shape *sh) { return sh->dual ? 2 : sh->vpp; }

/* 1 when chunk 1 of a stage runs its pipeline from the last stage towards
 * the first (ZB-V's and DualPipe-V's V, DualPipe's mirrored copy): it uses
 * the reverse p2p streams. */
static inline int sc__shape_reverse_chunk(const sc_shape *sh, int64_t chunk) {
  return (sh->vshape || sh->dual) && chunk == 1;
}

/* 1 when one stage holds both the first and the last virtual stage (pp = 1,
 * or the V of ZB-V): tied embeddings then need no synchronisation. */
static inline int sc__shape_ends_together(const sc_shape *sh) {
  return sh->pp == 1 || sh->vshape;
}

/* 1 when global layer `layer` has an MoE FFN (MoE models: every layer
 * after the leading dense ones). */
static inline int sc__shape_is_moe_layer(const sc_shape *sh, int64_t layer) {
  return sh->moe && layer >= sh->dense_layers && (layer + 1) % sh->moe_freq == 0;
}

/* MoE layers among layers 0 .. n - 1 (n >= 0). */
static inline int64_t sc__shape_moe_layers_below(const sc_shape *sh, int64_t n) {
  if (!sh->moe || n <= sh->dense_layers) return 0;
  /* multiples of moe_freq in (dense_layers, n] */
  return n / sh->moe_freq - sh->dense_layers / sh->moe_freq;
}

/* MoE layers among the n layers starting at global layer l0. */
static inline int64_t sc__shape_moe_layers_in(const sc_shape *sh, int64_t l0, int64_t n) {
  return sc__shape_moe_layers_below(sh, l0 + n) - sc__shape_moe_layers_below(sh, l0);
}

/* Transformer layers of virtual stage vs (see sc__shape_vstage) and the
 * global index of its first layer. */
int64_t sc__shape_vs_layers(const sc_shape *sh, int64_t vs);
int64_t sc__shape_vs_first_layer(const sc_shape *sh, int64_t vs);

/* Parameters held by one rank of pipeline stage `stage` (every model chunk
 * it runs): layers, embedding and LM head where the stage holds them, and
 * the final norm. */
double sc__shape_stage_params(const sc_shape *sh, int64_t stage);
/* The part of sc__shape_stage_params that is routed experts' parameters
 * (sharded over ep * etp, reduced and optimizer-sharded over the
 * expert-data-parallel group). */
double sc__shape_stage_expert_params(const sc_shape *sh, int64_t stage);

/* FSDP / ZeRO-3 (parallel.zero_stage 3): the ranks the dense parameters are
 * sharded over (fsdp_shard, or dp, times cp), and those the routed experts
 * are: edp when the expert-data-parallel group is another group than the
 * shard group, Megatron-FSDP's layout with expert parallelism (expert
 * parameters live in buffers of their own, sharded and reduced over the EDP
 * group); 0 when the two groups are the same ranks (ep x etp = tp and no
 * hybrid sharding, or a dense model): the experts are then sharded with the
 * rest of their unit. */
int64_t sc__shape_fsdp_shard_ranks(const sc_shape *sh);
int64_t sc__shape_fsdp_expert_ranks(const sc_shape *sh);

/* Megatron model FLOPs per step (no recompute) and hardware FLOPs (with the
 * configured recompute), general form for GQA/SwiGLU, of a config's model
 * and training sections (used by sc__shape_init). */
void sc__model_flops(const sc_config *cfg, double *model_flops, double *hw_flops);


#endif /* SC_SHAPE_INT_H */
