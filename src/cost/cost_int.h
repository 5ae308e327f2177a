/*
 * cost_int.h: cost models. A compute model prices kernels (GEMM, attention,
 * memory-bound) and a communication model prices collectives and p2p
 * transfers; both are const vtables chosen by name, fed by one parameter set
 * (sc_cost_params) that the config and calibration can override.
 */
#ifndef SC_COST_INT_H
#define SC_COST_INT_H

#include "cost/comm_params_int.h"
#include "ir/ir_int.h"


struct sc_cost;

typedef struct sc_compute_model {
  const char *name;
  int version;
  /* Duration in ns of a GEMM C[M,N] = A[M,K] B[K,N] in the working dtype. */
  double (*gemm_ns)(const struct sc_cost *c, double m, double n, double k);
  /* The same with FP8 operands (16-bit output), at the FP8 peak. */
  double (*fp8_gemm_ns)(const struct sc_cost *c, double m, double n, double k);
  /* Duration in ns of fused (flash) attention: flops as counted by the caller,
   * seq = keys per query row, head_dim; causal halves work upstream. */
  double (*attn_ns)(const struct sc_cost *c, double flops, double seq, double head_dim);
  /* Duration in ns of a memory-bound kernel moving bytes through HBM. */
  double (*mem_ns)(const struct sc_cost *c, double bytes);
  /* The same two for the kernels of unfused attention that stream the s x s
   * scores (batched QK^T / PV GEMMs, softmax, dropout): their HBM traffic
   * runs at p.scores_mem_eff instead of p.mem_eff. */
  double (*scores_gemm_ns)(const struct sc_cost *c, double m, double n, double k);
  double (*scores_mem_ns)(const struct sc_cost *c, double bytes);
} sc_compute_model;

typedef struct sc_comm_model {
  const char *name;
  int version;
  /* Duration in ns of a collective of `bytes` (the nccl-tests "size": the
   * full buffer for all-reduce, the output for all-gather, the input for
   * reduce-scatter) over a group placed as pl. */
  double (*coll_ns)(const struct sc_cost *c, int coll, double bytes, const sc_placement *pl);
  /* Duration in ns of a point-to-point transfer; tier: 0 inside a node,
   * 1 across nodes under one leaf, 2 across the spine (SC_TIER_*). */
  double (*p2p_ns)(const struct sc_cost *c, double bytes, int tier);
} sc_comm_model;

typedef struct sc_cost {
  const sc_hw *hw;
  sc_hw hw_own; /* a GPU file's figures (hw points here); the cost is not copied */
  sc_cost_params p;          /* every field filled (no zeros left) */
  const sc_compute_model *compute;
  const sc_comm_model *comm;
  double peak_flops;         /* dense peak of the working dtype, FLOP/s (bf16 for fp8
                                training: what is not an FP8 GEMM runs in bf16) */
  double fp8_peak_flops;     /* dense FP8 peak, FLOP/s; 0 without FP8 */
  double attn_peak_flops;    /* attention's: the working dtype's, FP8 with fp8_attention */
  double attn_eff;           /* the fused attention kernel's efficiency: p.attn_eff (flash)
                                or p.cudnn_attn_eff (cudnn) */
  double elem_bytes;         /* bytes per element of the working dtype */
  double hbm_bytes_per_ns;   /* HBM bandwidth, bytes per ns */
  double nvlink_bytes_per_ns;/* intra-node bandwidth per GPU per direction */
  double nic_bytes_per_ns;   /* scale-out bandwidth per GPU */
  int64_t gpus_per_node;     /* NICs per node = GPUs per node (rail design) */
  /* Network tiers above the node (cluster.leaf_gpus ...; docs/COMM.md). */
  int64_t nodes_per_leaf;    /* nodes under one leaf; 0 = one leaf for all */
  double spine_oversub;      /* leaf downlink : uplink, >= 1 */
  double leaf_latency_us, spine_latency_us; /* extra per network / spine step */
  int rail_optimized;        /* 1: rail leaves (all-to-all forwards over NVLink) */
  /* The NCCL model's parameters and links, prepared by sc__cost_init so that
   * pricing a collective does no per-GPU lookups (it ran per collective). */
  sc_comm_params comm_params;
  sc_comm_topo comm_topo;
  double interf_w[SC_INTERF_NFEAT]; /* p.interference_w as an array, for the engine */
  /* simulation.interference: tree: the model loaded from
   * calibration.interference_tree (owned; sc__cost_release frees it). */
  struct sc_interf_tree *interf_tree;
  /* Mixture of experts: the EP group's all-to-alls run on DeepEP's kernels
   * (parallel.moe_dispatcher deepep) and the routing they carry. */
  int moe_deepep;
  double moe_experts, moe_topk;
} sc_cost;

/* DeepEP's dispatch or combine (cost/comm_ep.c) of `bytes` (the k routed
 * copies one rank sends, as for an NCCL all-to-all) over an EP group placed
 * as pl, ns. */
double sc__ep_deepep_ns(const sc_cost *c, double bytes, const sc_placement *pl);

/* Latency of a point-to-point transfer when no calibration gives one: an
 * assumption (no sendrecv measurement is shipped), us. */
#define SC_P2P_LATENCY_US_DEFAULT 10.0
/* The shipped 90 % prediction-interval half-widths (log space), from
 * `stepcast validate validation/cases/CASES.csv --held-out
 * validation/calibration/loo.csv --fit-interval FILE`: the split-conformal
 * rank of the calibration rows' held-out errors (docs/VALIDATION.md). */
#define SC_INTERVAL_DENSE_DEFAULT 0.2422
#define SC_INTERVAL_MOE_DEFAULT 0.2422

/* The registered models. */
extern const sc_compute_model sc__roofline_model;

/* Prepares a cost model for a resolved config: fills defaults for every zero
 * parameter (documented in docs/CONFIG.md) and picks the models. */
int sc__cost_init(sc_ctx *ctx, const sc_config *cfg, sc_cost *cost);
/* The attention efficiency the attention model reads (sc_cost.attn_eff):
 * the cuDNN one when cfg's training.attention is cudnn. */
static inline double sc__cost_attn_eff(const sc_cost_params *p, const sc_config *cfg) {
  return cfg->training.attention == SC_ATTN_CUDNN ? p->cudnn_attn_eff : p->attn_eff;
}
/* PyTorch's elementwise kernels relative to a contiguous copy's streaming
 * rate, measured in this project's H200 traces (validation/traces/h200:
 * 0.42-0.52 of HBM with a broadcast operand, 0.54 with mixed dtypes, 0.15
 * with both, against 0.78-0.91 for copies and same-shape operations): the
 * indexed and the casting kernels. The ex-situ pricing of traced operators
 * (trace/exsitu.c) and the eager layer of the synthesised workload
 * (synth/layers.c, training.eager) count their bytes at these rates. */
#define SC_ELEM_BCAST_RATE 0.6
#define SC_ELEM_MIXED_RATE 0.7
#define SC_ELEM_BOTH_RATE 0.2
/* Frees what sc__cost_init loaded (the tree interference model). */
void sc__cost_release(sc_ctx *ctx, sc_cost *cost);

/* Default parameters for a GPU preset (params.c; used by sc__cost_init and
 * docs). */
void sc__cost_defaults(const sc_hw *hw, sc_cost_params *p);
/* 1 when the shipped compute defaults of hw's family were fitted on measured
 * step times (A100; H100 and its die-mates H800, H200), 0 for kernel-data
 * priors alone. */
int sc__cost_fitted(const sc_hw *hw);
/* 1 when a and b have the same default compute parameters (one compute die
 * and calibration: h100-sxm and h100-96gb-500w), so one fit serves both. */
int sc__cost_same_defaults(const sc_hw *a, const sc_hw *b);
/* Where hw's uncalibrated compute priors come from, one sentence for the
 * warning of a GPU without a fit (which are its own kernel data, which are
 * assumed or borrowed from the A100). */
void sc__cost_prior_sources(const sc_hw *hw, char *out, size_t n);

/* Overwrites the compute fields of *p (gemm_eff, gemm_dim_half, attn_eff,
 * mem_eff, kernel_overhead_us) with the values derived from kernel
 * measurements alone (validation/kernels/), before any step-time fit: the
 * start and prior centre of `calibrate --cases` (the shipped defaults are the
 * result of that fit on the calibration rows; see validation/calibration/).
 * Other fields are left alone. */
void sc__cost_compute_priors(const sc_hw *hw, sc_cost_params *p);

const sc_compute_model *sc__compute_model_find(const char *name);
const sc_comm_model *sc__comm_model_find(const char *name);

#endif /* SC_COST_INT_H */
