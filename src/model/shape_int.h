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
  const sc_hw *hw;      /* cluster.gpu, resolved */

  /* Dimensions (elements), as doubles because every use multiplies them. */
  double b;      /* micro-batch, sequences */
  double s;      /* sequence length, tokens */
  double h;      /* hidden */
  double a;      /* attention heads */
  double g;      /* key/value heads */
  double d;      /* head dim h / a */
  double f;      /* FFN inner size */
  double v;      /* vocabulary padded to a multiple of 128 * tp (Megatron) */
  double t;      /* tensor-parallel size */
  double g_rank; /* KV heads on one TP rank: a shard, or one replicated head when
                    tp > kv_heads (Megatron-LM's GQA layout) */
  double shard;  /* t with sequence parallelism, else 1: how activations split */
  double qkv_out; /* QKV projection outputs summed over the TP group: h + 2 g_rank t d */
  int sp;        /* sequence parallelism over TP (tp > 1) */
  int swiglu;    /* gated FFN: three GEMMs */
  int tied;      /* LM head shares the input embedding */

  /* Parallel layout and schedule sizes. */
  int64_t tp, pp, dp, cp, vpp;
  int64_t layers;
  int64_t m;   /* micro-batches per replica per step */
  int64_t lpc; /* layers per model chunk: layers / (pp * vpp) */

  /* Bytes per element. */
  double elem_bytes; /* activations and GEMM operands: 4 for fp32, else 2 (fp8
                        keeps 16-bit activations between kernels) */
  double grad_bytes; /* the data-parallel gradient reduction dtype */

  /* Parameters held by one TP rank. */
  double layer_params; /* one transformer layer */
  double embed_params; /* the word embedding (or LM head) vocabulary shard */
  double norm_params;  /* the final norm */

  /* FLOPs per step, Megatron's model-FLOPs convention (no recompute) and
   * counting the configured recompute. */
  double model_flops, hw_flops;
} sc_shape;

/* Derives the shape of a resolved config (sc_config_resolve). Returns 0 or
 * SC_EINVAL with a message (unknown GPU, sizes that do not divide: a config
 * that was not resolved). No allocation. */
int sc__shape_init(sc_ctx *ctx, const sc_config *cfg, sc_shape *out);

/* Parameters held by one rank of pipeline stage `stage` (every model chunk
 * it runs): layers, embedding and LM head where the stage holds them, and
 * the final norm. */
double sc__shape_stage_params(const sc_shape *sh, int64_t stage);

/* Megatron model FLOPs per step (no recompute) and hardware FLOPs (with the
 * configured recompute), general form for GQA/SwiGLU, of a config's model
 * and training sections (used by sc__shape_init). */
void sc__model_flops(const sc_config *cfg, double *model_flops, double *hw_flops);


#endif /* SC_SHAPE_INT_H */
