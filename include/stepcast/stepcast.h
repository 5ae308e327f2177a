/*
 * stepcast.h: the public API of libstepcast, a simulator of one training step of
 * large-scale distributed deep-learning jobs. A config (YAML or built in) is
 * synthesised into a per-rank operation DAG, replayed by a discrete-event engine
 * over cost models, and summarised (step time, throughput, MFU, breakdown).
 *
 * Ownership: sc_ctx is created by sc_ctx_new and owned by the caller. sc_config
 * and sc_result are plain structs owned by the caller (no heap members). Strings
 * returned by accessors are borrowed and live as long as the library/context.
 * Constructors and fillers take their out-parameter last.
 * Units: seconds in results, nanoseconds inside the engine, bytes, FLOPs.
 *
 * Threads: the library keeps no process-wide mutable state. A context and
 * everything created with it (configs it loaded are plain data) must be used
 * by one thread at a time; use one context per thread. Read-only data may be
 * shared freely: the preset tables (sc_hw_at, sc_hw_find, sc_model_preset_*),
 * error and category names, and any sc_config or sc_result no thread writes.
 */
#ifndef STEPCAST_H
#define STEPCAST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version this header belongs to; sc_version() is the library's. */
#define STEPCAST_VERSION_MAJOR 0
#define STEPCAST_VERSION_MINOR 1
#define STEPCAST_VERSION_PATCH 0
#define SC_VERSION "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for compile-time comparisons. */
#define STEPCAST_VERSION_NUMBER \
  (STEPCAST_VERSION_MAJOR * 10000 + STEPCAST_VERSION_MINOR * 100 + STEPCAST_VERSION_PATCH)

/* "0.1.0" of the linked library (may differ from SC_VERSION when a program
 * runs against another build than it was compiled with). */
const char *sc_version(void);

/* ---------------------------------------------------------------- errors */

/* X(name, value, exit, text): single source for codes, their descriptions and
 * the process exit code every stepcast command returns for them (README, "Exit
 * codes"): 0 success, 1 internal or simulation failure, 2 invalid, unreadable
 * or unsupported input, 3 an output could not be written, 4 stopped before
 * completion on request. */
#define SC_ERROR_LIST(X)                                                      \
  X(SC_OK, 0, 0, "ok")                                                        \
  X(SC_ENOMEM, -1, 1, "out of memory")                                        \
  X(SC_EINVAL, -2, 2, "invalid input")                                        \
  X(SC_EREAD, -3, 2, "input could not be read")                               \
  X(SC_EUNSUPPORTED, -4, 2, "feature not supported")                          \
  X(SC_EDEADLOCK, -5, 1, "simulation deadlock")                               \
  X(SC_EWRITE, -6, 3, "output could not be written")                          \
  X(SC_ESTOPPED, -7, 4, "stopped on request")                                 \
  X(SC_EINTERNAL, -8, 1, "internal error")

enum {
#define SC_X_ENUM(name, value, exit, text) name = value,
  SC_ERROR_LIST(SC_X_ENUM)
#undef SC_X_ENUM
};

/* Text of an error code ("invalid input"); never NULL. */
const char *sc_strerror(int code);
/* Process exit code for a return code (the table above); 1 for codes not in
 * it. */
int sc_exit_code(int code);

/* ---------------------------------------------------------------- context */

typedef struct sc_ctx sc_ctx;

/* Allocator hook, Lua-style: nsize == 0 frees ptr and returns NULL; otherwise
 * behaves like realloc(ptr, nsize). osize is the old size (0 for new blocks). */
typedef void *(*sc_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* Creates a context. alloc may be NULL (malloc/realloc/free). Returns 0 or
 * SC_ENOMEM. The context carries the last error message (sc_errmsg). */
int sc_ctx_new(sc_alloc_fn alloc, void *ud, sc_ctx **out);
void sc_ctx_free(sc_ctx *ctx);
/* Last error message, "file:line: message" for input errors; "" if none. */
const char *sc_errmsg(const sc_ctx *ctx);

/* Sink for streamed output (reports, traces, YAML): called with consecutive
 * chunks; returns 0 or an error code (SC_EWRITE for a failed write), which
 * the writer returns at once without writing more. */
typedef int (*sc_write_fn)(void *ud, const char *buf, size_t len);

/* ---------------------------------------------------------------- hardware */

typedef struct sc_hw {
  const char *name;        /* preset key, e.g. "a100-80gb" */
  const char *description; /* marketing name and form factor */
  double fp32_tflops;      /* dense peak, TFLOP/s (1e12) */
  double tf32_tflops;      /* dense peak; 0 = not supported */
  double bf16_tflops;      /* dense peak (fp16 is equal on all presets) */
  double fp8_tflops;       /* dense peak; 0 = not supported */
  double hbm_gib;          /* memory capacity, GiB (2^30 bytes) */
  double hbm_gbps;         /* memory bandwidth, GB/s (1e9 bytes/s) */
  int sms;                 /* streaming multiprocessors */
  double nvlink_gbps;      /* NVLink bandwidth per GPU per direction, GB/s */
  double nic_gbps;         /* default scale-out NIC per GPU, Gbit/s */
  int gpus_per_node;       /* default GPUs per node (HGX/DGX baseboard) */
  const char *source;      /* datasheet citation */
  double host_link_gbps;   /* GPU <-> host memory copies per direction (PCIe, NVLink-C2C),
                              GB/s as pinned copies reach it; 0 = not known */
  double host_mem_gbps;    /* host DRAM bandwidth per GPU of the reference host, GB/s;
                              0 = not known */
} sc_hw;

/* Writes hw as a GPU file (YAML, every figure exactly: loading it as
 * cluster.gpu reproduces the preset). Returns the sink's status. */
int sc_hw_write_yaml(const sc_hw *hw, sc_write_fn w, void *ud);

size_t sc_hw_count(void);
const sc_hw *sc_hw_at(size_t i);          /* NULL when out of range */
const sc_hw *sc_hw_find(const char *name); /* NULL when unknown */
/* The preset for a device name as CUDA, nvidia-smi or nccl-tests print it
 * ("NVIDIA A100-SXM4-80GB" -> a100-80gb); NULL for a part without one
 * (PCIe and NVL boards, A800, H20, unknown names). */
const sc_hw *sc_hw_match(const char *device_name);

/* ---------------------------------------------------------------- config */

/* FFN activations: GeLU (two GEMMs), SwiGLU (gated, three GEMMs), squared
 * ReLU (Nemotron; not gated, two GEMMs). */
typedef enum { SC_ACT_GELU = 0, SC_ACT_SWIGLU, SC_ACT_RELU2 } sc_activation;
typedef enum { SC_PREC_BF16 = 0, SC_PREC_FP16, SC_PREC_FP8, SC_PREC_FP32 } sc_precision;
/* op_sac: torchtitan's op-level selective activation checkpointing (docs/MEMORY.md). */
typedef enum {
  SC_RECOMPUTE_NONE = 0,
  SC_RECOMPUTE_SELECTIVE,
  SC_RECOMPUTE_FULL,
  SC_RECOMPUTE_OP_SAC
} sc_recompute;
/* Pipeline schedules: 1F1B, GPipe, Megatron's interleaved 1F1B (vpp > 1),
 * and the zero-bubble schedules of Qi et al. 2024 that split the backward
 * into input-grad (B) and weight-grad (W) passes: ZB-H1 (1F1B order, W
 * deferred into the bubbles) and ZB-V (two chunks per stage in a V); and
 * DeepSeek-V3's DualPipe (two mirrored model copies, micro-batches fed from
 * both ends, forward and backward chunks of different micro-batches
 * overlapped) and its cut-in-half DualPipe-V (ZB-V's placement). */
typedef enum {
  SC_SCHED_1F1B = 0,
  SC_SCHED_GPIPE,
  SC_SCHED_INTERLEAVED,
  SC_SCHED_ZB_H1,
  SC_SCHED_ZBV,
  SC_SCHED_DUALPIPE,
  SC_SCHED_DUALPIPEV
} sc_schedule;
/* Context-parallel attention exchange (Megatron / Transformer Engine
 * cp_comm_type): ring of K/V chunks, all-to-all over heads (Ulysses), K/V
 * all-gather, or all-to-all inside a node with a ring across nodes. */
typedef enum { SC_CP_P2P = 0, SC_CP_A2A, SC_CP_ALLGATHER, SC_CP_A2A_P2P } sc_cp_comm;
/* FP8 scaling recipes (Transformer Engine / torchao): delayed scaling (amax
 * history), current per-tensor scaling, row-wise scaling. */
typedef enum { SC_FP8_DELAYED = 0, SC_FP8_TENSORWISE, SC_FP8_ROWWISE } sc_fp8_recipe;
/* How communication running on a rank slows its compute kernels (docs/INTERFERENCE.md):
 * not at all, by a constant factor per kernel class, or by a regression model
 * learned from traces (`stepcast calibrate --interference`): linear (learned) or
 * gradient-boosted trees (tree, XGBoost). */
typedef enum { SC_INTERF_NONE = 0, SC_INTERF_CONSTANT, SC_INTERF_LEARNED, SC_INTERF_TREE } sc_interference;
/* Attention kernels: fused FlashAttention-style, or the unfused path of
 * Megatron-LM before FlashAttention (batched GEMMs + softmax/dropout kernels
 * streaming the s x s scores through HBM). */
/* Attention kernels: FlashAttention-2 (flash), cuDNN fused attention
 * (Transformer Engine's FusedAttention backend, cudnn), or the unfused
 * GEMM + softmax kernels of Megatron-LM before FlashAttention. */
typedef enum { SC_ATTN_FLASH = 0, SC_ATTN_UNFUSED, SC_ATTN_CUDNN } sc_attention;
/* How a mixture-of-experts layer moves tokens to the experts of the
 * expert-parallel group (Megatron-Core --moe-token-dispatcher-type;
 * docs/MOE.md): NCCL all-to-all of the routed copies, all-gather of every
 * token / reduce-scatter of the outputs, or DeepEP's NVLink + RDMA
 * hierarchical all-to-all (Megatron's flex dispatcher with DeepEP). */
typedef enum { SC_MOE_ALLTOALL = 0, SC_MOE_ALLGATHER, SC_MOE_DEEPEP } sc_moe_dispatcher;

/* The enums of a config by kind, for their names: the YAML spelling
 * ("selective", "interleaved") and a label for reports ("interleaved-1f1b"). */
typedef enum {
  SC_ENUM_ACTIVATION = 0,
  SC_ENUM_PRECISION,
  SC_ENUM_RECOMPUTE,
  SC_ENUM_SCHEDULE,
  SC_ENUM_INTERFERENCE,
  SC_ENUM_ATTENTION,
  SC_ENUM_CP_COMM,
  SC_ENUM_FP8_RECIPE,
  SC_ENUM_MOE_DISPATCHER,
  SC_ENUM_COUNT
} sc_enum;

/* YAML spelling of value v of enum e; NULL when out of range. */
const char *sc_enum_name(sc_enum e, int v);
/* The name reports print (most are the YAML spelling); NULL when out of range. */
const char *sc_enum_label(sc_enum e, int v);
/* Value of a YAML spelling, or -1. */
int sc_enum_parse(sc_enum e, const char *name);
/* Number of values of enum e (0 when e is unknown). */
int sc_enum_count(sc_enum e);

typedef struct sc_model_cfg {
  char name[64];          /* preset name or free label */
  char hf_config[256];    /* the HuggingFace config.json the shape came from, or "" */
  int64_t layers;         /* transformer layers L */
  int64_t hidden;         /* hidden size h */
  int64_t heads;          /* attention heads a */
  int64_t kv_heads;       /* key/value heads g (GQA); 0 = heads */
  int64_t ffn_hidden;     /* FFN inner size f; 0 = 4h (gelu) */
  int64_t vocab;          /* vocabulary size V */
  int64_t seq_len;        /* sequence length s, tokens */
  sc_activation activation;
  int tied_embeddings;    /* 1: LM head shares the input embedding */
  int64_t head_dim;       /* attention head dim (kv_channels); 0 = hidden / heads */
  double dropout;         /* hidden and attention dropout probability (0: none) */
  /* Mixture of experts (docs/MOE.md); moe_experts 0 = a dense model. */
  int64_t moe_experts;    /* routed experts E per MoE layer */
  int64_t moe_topk;       /* experts each token is routed to k; 0 = 2 */
  int64_t moe_ffn_hidden; /* one expert's FFN inner size; 0 = ffn_hidden */
  int64_t moe_shared_experts; /* always-active experts, moe_ffn_hidden wide each */
  int64_t moe_dense_layers;   /* leading layers with a dense FFN */
  int64_t moe_layer_freq;     /* every k-th layer is MoE (1-based); 0 = 1, every layer */
  double moe_capacity_factor; /* tokens an expert takes / its balanced share; 0 = dropless */
  double moe_router_balance;  /* hottest expert's tokens / the mean (>= 1); 0 = 1 */
  /* Multi-head latent attention (DeepSeek-V2/V3; docs/MOE.md); kv rank 0 =
   * ordinary attention. head_dim is then the no-RoPE query/key head dim. */
  int64_t mla_kv_lora_rank; /* compressed K/V latent width */
  int64_t mla_q_lora_rank;  /* compressed query width; 0 = no query compression */
  int64_t mla_rope_dim;     /* decoupled RoPE query/key head dim; 0 = 64 */
  int64_t mla_v_head_dim;   /* value head dim; 0 = head_dim */
} sc_model_cfg;

typedef struct sc_training_cfg {
  int64_t global_batch;   /* sequences per step B */
  int64_t micro_batch;    /* sequences per micro-batch b */
  sc_precision precision; /* compute dtype of GEMMs and attention */
  sc_recompute recompute;
  sc_attention attention; /* attention implementation */
  sc_fp8_recipe fp8_recipe; /* scaling of fp8 GEMM inputs (precision fp8) */
  int fp8_attention;      /* 1: attention in fp8 too (else bf16) */
  int fp32_loss_grads;    /* 1: the loss on fp32 logits, their fp32 gradients held */
  int eager;              /* 1: eager PyTorch elementwise kernels (no torch.compile, no fused ones) */
  int fused_projections;  /* 1: one QKV GEMM and one gate+up GEMM (Megatron); 0: separate linears */
  double optimizer_offload; /* fraction of optimizer states + fp32 master weights in host
                               memory, [0, 1] */
  int optimizer_offload_cpu_step; /* 1: the offloaded part steps on the CPU (CPU Adam) */
  int64_t activation_offload_layers; /* first layers whose activations go to host memory */
  double tokens;          /* tokens the whole training run consumes; 0 = not given
                             (no time-to-train or cost in the result) */
  /* With recompute selective: what is recomputed, a list of Megatron-LM
   * --recompute-modules names ("core_attn", "layernorm", "moe_act", "moe")
   * separated by commas */
  char recompute_modules[64];
  /* Checkpointing and restarts (goodput under variation.failures and
   * variation.gpu_mtbf_hours, docs/WHATIF.md) */
  int64_t checkpoint_interval; /* steps between checkpoints; 0 = none */
  double checkpoint_save_s;    /* the step a checkpoint is written takes this much longer */
  double checkpoint_load_s;    /* reading the last checkpoint back after a failure */
  double restart_s;            /* from a failure to training again, without the load */
} sc_training_cfg;

typedef struct sc_parallel_cfg {
  int64_t tp, pp, dp, cp; /* dp = 0: derived as num_gpus/(tp*pp*cp) */
  int64_t vpp;            /* model chunks per stage (interleaved), >= 1 */
  int sequence_parallel;  /* 1: Megatron sequence parallelism with TP */
  int distributed_optimizer; /* 1: ZeRO-1 style sharded optimizer */
  int64_t zero_stage;        /* DeepSpeed ZeRO stage 0-3; >= 1 implies distributed_optimizer */
  sc_schedule schedule;
  int overlap_grad_reduce;   /* 1: DP grad reduction overlaps backward */
  int overlap_param_gather;  /* 1: param all-gather overlaps forward */
  int tp_comm_overlap;       /* 1: SP all-gather/reduce-scatter pipelined with GEMMs */
  int64_t dp_bucket_elems;   /* gradient bucket size, elements */
  sc_cp_comm cp_comm;        /* context-parallel attention exchange */
  int64_t fsdp_shard;        /* ZeRO-3/FSDP shard group (data-parallel ranks); 0 = dp */
  int fsdp_reshard_after_forward; /* 1: parameters gathered again for backward */
  int64_t fsdp_prefetch;     /* FSDP units gathered ahead of the one computing */
  int fsdp_fp8_allgather;    /* 1: FSDP gathers fp8 weights (precision fp8) */
  int tp_fp8_allgather;      /* 1: SP gathers of FP8 linears' inputs in fp8 (precision fp8) */
  int64_t pp_first_layers;   /* layers of the first stage; 0 = even split */
  int64_t pp_last_layers;    /* layers of the last stage; 0 = even split */
  int pp_embedding_in_split; /* 1: the embedding counts as a layer in the split */
  int pp_loss_in_split;      /* 1: the LM head and loss count as a layer */
  int pp_keep_outputs;       /* 1: the last stage keeps every micro-batch's output (logits)
                                to the step's end (torch.distributed.pipelining) */
  int64_t ep;                /* expert-parallel size (MoE), >= 1 */
  int64_t etp;               /* expert tensor-parallel size; 0 = tp */
  sc_moe_dispatcher moe_dispatcher; /* token dispatch of MoE layers */
  int moe_a2a_overlap;       /* 1: dispatch/combine hidden behind other micro-batches' compute */
  int moe_shared_expert_overlap; /* 1: shared experts run while the dispatch is in flight */
} sc_parallel_cfg;

/* A GPU described by a file (`cluster.gpu: FILE.yaml`; the format is what
 * `stepcast hw show NAME --format yaml` prints, docs/HARDWARE.md): the
 * figures of an sc_hw, with its strings held here. */
typedef struct sc_gpu_desc {
  int set;                /* 1: cluster.gpu names this description, not a preset */
  char path[256];         /* the file as given (YAML output writes it back) */
  char name[32], description[96], source[192];
  double fp32_tflops, tf32_tflops, bf16_tflops, fp8_tflops, hbm_gib, hbm_gbps;
  int sms;
  double nvlink_gbps, nic_gbps;
  int gpus_per_node;
  double host_link_gbps, host_mem_gbps; /* 0: not given */
} sc_gpu_desc;

typedef struct sc_cluster_cfg {
  char gpu[32];           /* hardware preset name (or gpu_file's name) */
  sc_gpu_desc gpu_file;   /* set when cluster.gpu was a GPU file */
  int64_t num_gpus;       /* total GPUs; 0 = nodes * gpus_per_node */
  int64_t nodes;          /* 0 = num_gpus / gpus_per_node */
  int64_t gpus_per_node;  /* 0 = the preset's */
  double nic_gbps;        /* scale-out bandwidth per GPU, Gbit/s; 0 = preset */
  double nvlink_gbps;     /* intra-node bandwidth per GPU, GB/s; 0 = preset */
  double host_link_gbps;  /* GPU <-> host copy bandwidth per direction, GB/s; 0 = preset */
  double host_mem_gbps;   /* host DRAM bandwidth of one GPU's CPU optimizer, GB/s; 0 = preset */
  double mem_headroom;    /* memory kept free per GPU: GiB when >= 1, else a fraction
                             of the GPU's capacity; 0 = none */
  double price_per_gpu_hour; /* price of one GPU for one hour (any currency); 0 = not
                                given (no cost in the result) */
  /* Network tiers above the node (docs/COMM.md, "Network tiers"). */
  int64_t leaf_gpus;      /* GPUs under one leaf (or rail-leaf group); 0 = one leaf for all */
  double spine_oversubscription; /* leaf downlink : uplink bandwidth, >= 1; 1 = non-blocking */
  double leaf_latency_us; /* extra latency per network step, us */
  double spine_latency_us;/* extra latency per network step crossing the spine, us */
  int rail_optimized;     /* 1: GPU k of each node on rail leaf k (all-to-all forwards, PXN) */
} sc_cluster_cfg;

/* Parameters of the "nccl" collective model; calibration keys nccl_<member>
 * (p2p latency: sc_cost_params.p2p_latency_us). Meanings, units, bounds and defaults:
 * docs/COMM.md and docs/CONFIG.md. 0 = the model's default. */
typedef struct sc_nccl_params {
  double nvlink_eff;            /* nccl_nvlink_eff */
  double nic_eff;               /* nccl_nic_eff */
  double launch_us;             /* nccl_launch_us */
  double channel_us;            /* nccl_channel_us */
  double tree_channel_us;       /* nccl_tree_channel_us */
  double base_scale;            /* nccl_base_scale */
  double intra_hop_scale;       /* nccl_intra_hop_scale */
  double tree_hop_scale;        /* nccl_tree_hop_scale */
  double net_hop_scale;         /* nccl_net_hop_scale */
  double net_bulk_hop_scale;    /* nccl_net_bulk_hop_scale */
  double ll_frac;               /* nccl_ll_frac */
  double ll_stream_gbps;        /* nccl_ll_stream_gbps */
  double ll_net_gbps;           /* nccl_ll_net_gbps */
  double ll128_frac;            /* nccl_ll128_frac */
  double tree_frac;             /* nccl_tree_frac */
  double pipe_kib;              /* nccl_pipe_kib */
  double mem_passes;            /* nccl_mem_passes */
  double nvls_eff;              /* nccl_nvls_eff */
  double a2a_peer_us;           /* nccl_a2a_peer_us */
  double net_overhead_us;       /* nccl_net_overhead_us */
  double channels;              /* nccl_channels */
  double sharp;                 /* nccl_sharp */
  double select;                /* nccl_select */
  double host_launch_us;        /* nccl_host_launch_us */
  double reduce_passes;         /* nccl_reduce_passes */
  double setup_us;              /* nccl_setup_us */
  double ring_mix;              /* nccl_ring_mix */
} sc_nccl_params;

/* Coefficients of the learned interference model, one per feature
 * (docs/INTERFERENCE.md); calibration keys interference_w_<member>. All zero:
 * the shipped model; a vector given in a calibration is used whole (features
 * it does not name weigh 0). */
typedef struct sc_interf_coefs {
  double gemm, attn, elementwise, norm, optimizer; /* class intercepts */
  double log_dur;                                  /* kernel duration */
  double all_gather, reduce_scatter, p2p, other_coll; /* the overlapping op */
  double size_known, log_bytes, inter_node, log_group; /* its size and span */
} sc_interf_coefs;

/* Cost-model parameters: the knobs calibration fits (the `calibration:`
 * section; every key, its bounds and default in docs/CONFIG.md). 0 means
 * "use the documented default". */
typedef struct sc_cost_params {
  double gemm_eff;          /* best-shape GEMM fraction of dense peak */
  double fp8_gemm_eff;      /* the same for FP8 GEMMs, of the FP8 dense peak */
  double gemm_dim_half;     /* GEMM reduction length K (elements) at which efficiency halves */
  double attn_eff;          /* FlashAttention forward fraction of peak at long sequences */
  double cudnn_attn_eff;    /* the same for cuDNN fused attention (training.attention cudnn) */
  double mem_eff;           /* fraction of HBM bandwidth reached by memory-bound kernels */
  double scores_mem_eff;    /* the same for the unfused attention kernels that stream the s x s scores */
  double kernel_overhead_us;/* fixed cost per kernel (launch + tail), microseconds */
  double host_op_us;        /* host time per operator dispatched from Python (ex-situ traces), us */
  double host_autograd_us;  /* host time per operator the C++ autograd engine dispatches, us */
  double host_module_us;    /* extra host time per layer (nn.Module-level operator) called from Python, us */
  double conv_eff;          /* convolution (implicit GEMM) efficiency relative to a GEMM's */
  double norm_eff;          /* batch/layer-norm kernels' speed relative to streaming kernels */
  double p2p_latency_us;    /* latency of a point-to-point transfer, microseconds */
  double optimizer_bytes_per_param; /* HBM traffic of the optimizer per parameter */
  /* Half-widths, in log space, of the 90 % prediction interval of the step
   * time of dense and of mixture-of-experts models. */
  double interval_dense, interval_moe;
  /* Interference model `constant`: slowdown s of a compute kernel while
   * communication runs on its GPU, per kernel class; a kernel overlapped for
   * a fraction r of its work takes T * (1 + r * s). */
  double interference_gemm;        /* GEMMs (dense layers, unfused attention GEMMs) */
  double interference_attn;        /* fused (flash) attention */
  double interference_elementwise; /* memory-bound elementwise kernels */
  double interference_norm;        /* norms, softmax, reductions, loss */
  double interference_optimizer;   /* the optimizer step */
  double interference_comm;        /* slowdown of comm while compute overlaps */
  sc_nccl_params nccl;             /* the collective model */
  sc_interf_coefs interference_w;  /* the learned interference model */
} sc_cost_params;

/* What-if variation (docs/WHATIF.md): slow GPUs, per-GPU variability,
 * slow links, a second GPU type, failures. The list keys hold items as text
 * (src/input/vary_int.h); "" = none. */
typedef struct sc_vary_cfg {
  char slow_gpus[512];    /* "ranks=0,17 speed=0.8; count=4 speed=0.9" */
  double gpu_speed_sigma; /* per-GPU speed = exp(sigma * N(0,1)), seeded; 0 = none */
  int64_t seed;           /* of every random choice (count=, sigma) */
  char slow_links[512];   /* "nodes=3 nic_speed=0.5 nvlink_speed=0.8" */
  char gpu_mix[256];      /* "gpu=A100-80GB nodes=0-3" or "gpu=... count=N" */
  char failures[256];     /* steps at which a GPU is lost: "1200,3000" */
  double gpu_mtbf_hours;  /* mean time between failures of one GPU (its node share); 0 = none */
  int64_t steps;          /* steps of the run failures are counted over; 0 = from training.tokens */
} sc_vary_cfg;

typedef struct sc_sim_cfg {
  int fold;               /* 1: simulate one rank per symmetry class */
  sc_interference interference;
  int share_links;        /* 1: concurrent network transfers share the NIC */
} sc_sim_cfg;

#define SC_CONFIG_MAX_FIELDS 128

typedef struct sc_config {
  char origin[256];       /* file name the config was read from, for messages */
  char calibration_gpu[32]; /* the `fit: {gpu: ...}` of a loaded calibration file, else "" */
  /* calibration.interference_tree: the XGBoost model file of the `tree`
   * interference model, resolved against the file that named it; "" none. */
  char interference_tree[4096];
  sc_model_cfg model;
  sc_training_cfg training;
  sc_parallel_cfg parallel;
  sc_cluster_cfg cluster;
  sc_sim_cfg simulation;
  sc_vary_cfg variation;
  sc_cost_params costs;
  /* Where each field's value came from, by field index (sc_config_field_index),
   * for messages that name the line to fix: > 0 a line of the file `origin`,
   * SC_LINE_SET an override (sc_config_set), SC_LINE_DEFAULT a default. The
   * loaders maintain it; calibration keys are not tracked. */
  int field_line[SC_CONFIG_MAX_FIELDS];
  /* 1 where sc_config_resolve filled the value in (a 0 meaning "derived",
   * the schedule vpp > 1 implies, the preset's NIC bandwidth ...). */
  unsigned char field_derived[SC_CONFIG_MAX_FIELDS];
} sc_config;

#define SC_LINE_DEFAULT 0
#define SC_LINE_SET (-1)

/* The config's fields by index, 0 .. sc_config_field_count() - 1, named
 * "section.key" (docs/CONFIG.md; calibration keys are not fields). */
int sc_config_field_count(void);
const char *sc_config_field_name(int field); /* NULL when out of range */
int sc_config_field_index(const char *key);  /* -1 when unknown */

/* Fills cfg with the documented neutral defaults of every field
 * (docs/CONFIG.md): no model and no GPU (a config must give them), bf16, no
 * recomputation, tp = pp = cp = 1, Megatron-LM's overlap flags; the fields
 * whose default is 0 are derived by sc_config_resolve. */
void sc_config_default(sc_config *cfg);
/* The built-in example, GPT-3 175B on 1,024 A100-80GB, TP8 PP16 DP8, batch
 * 1536, seq 2048, full recompute (SC21): the file
 * examples/gpt3-175b-1024.yaml compiled in, loaded on the neutral defaults
 * (messages name it SC_EXAMPLE_NAME). sc_config_example_text gives its
 * text (len: its length without the terminating NUL). */
#define SC_EXAMPLE_NAME "<example gpt3-175b-1024.yaml>"
int sc_config_example(sc_ctx *ctx, sc_config *cfg);
const char *sc_config_example_text(size_t *len);
/* Reads a YAML file on top of cfg (fields not given keep their values; a
 * `model: {preset: NAME}` loads the preset first). Errors: "file:line: msg". */
int sc_config_load_file(sc_ctx *ctx, sc_config *cfg, const char *path);
int sc_config_load_string(sc_ctx *ctx, sc_config *cfg, const char *name,
                          const char *text, size_t len);
/* Loads the top-level `calibration:` mapping of a YAML file (a file written
 * by `stepcast calibrate`; other top-level keys are provenance and ignored)
 * into cfg->costs, as `--set calibration=PATH` does. Errors "file:line: msg". */
int sc_config_load_calibration(sc_ctx *ctx, sc_config *cfg, const char *path);
/* Applies one "section.key=value" override (the CLI's --set). */
int sc_config_set(sc_ctx *ctx, sc_config *cfg, const char *assignment);
/* Derives the defaults (dp, nodes, kv_heads, ffn, ...) and checks the whole
 * config for consistency. Must be called before sc_simulate. */
int sc_config_resolve(sc_ctx *ctx, sc_config *cfg);
/* Writes cfg as a complete YAML config (every field, the model shape spelled
 * out without a preset) that loads back to the same values. Returns the
 * sink's status. */
int sc_config_write_yaml(const sc_config *cfg, sc_write_fn w, void *ud);
/* Writes the configuration reference (docs/CONFIG.md: every section, key,
 * type, unit, default and meaning, the presets). Returns the sink's status. */
int sc_config_write_docs(sc_write_fn w, void *ud);
/* Loads a model preset's shape into cfg->model; SC_EINVAL if unknown. */
int sc_model_preset(sc_ctx *ctx, sc_config *cfg, const char *name);
size_t sc_model_preset_count(void);
const char *sc_model_preset_name(size_t i);

/* ---------------------------------------------------------------- results */

/* X(id, key, label): where one rank's step time goes. */
#define SC_CATEGORY_LIST(X)                         \
  X(SC_CAT_COMPUTE, "compute", "compute")           \
  X(SC_CAT_TP, "tp_comm", "exposed TP comm")        \
  X(SC_CAT_CP, "cp_comm", "exposed CP comm")        \
  X(SC_CAT_EP, "ep_comm", "exposed EP comm")        \
  X(SC_CAT_PP, "pp_comm", "exposed PP comm")        \
  X(SC_CAT_DP, "dp_comm", "exposed DP comm")        \
  X(SC_CAT_BUBBLE, "bubble", "pipeline bubble")     \
  X(SC_CAT_OPTIMIZER, "optimizer", "optimizer")

typedef enum {
#define SC_X_ENUM(id, key, label) id,
  SC_CATEGORY_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_CAT_COUNT
} sc_category;

const char *sc_category_key(int cat);   /* "tp_comm" */
const char *sc_category_label(int cat); /* "exposed TP comm" */

/* Entries of sc_result.critical_path_top. */
#define SC_CPATH_TOP 3

typedef struct sc_result {
  double step_time_s;
  /* The 90 % prediction interval of step_time_s (calibration keys
   * interval_dense / interval_moe: from the calibration rows' errors). */
  double step_time_lo_s, step_time_hi_s;
  double tokens_per_s;
  double model_flops;        /* per step, Megatron model-FLOPs convention (no recompute) */
  double hardware_flops;     /* per step, counting recompute */
  double tflops_per_gpu;     /* model TFLOP/s per GPU */
  double hw_tflops_per_gpu;  /* hardware TFLOP/s per GPU */
  double mfu;                /* model FLOPs utilisation, 0..1 */
  double hfu;                /* hardware FLOPs utilisation, 0..1 */
  double breakdown_s[SC_CAT_COUNT]; /* mean over ranks; sums to step time */
  /* Of breakdown_s[SC_CAT_BUBBLE]: idle time caused by stage imbalance, the
   * mean over ranks of their idle time above the busiest rank's (whose idle
   * time is the schedule's bubble). */
  double bubble_imbalance_s;
  double memory_gib;         /* estimated peak memory of the fullest rank */
  double memory_capacity_gib;
  double memory_usable_gib;  /* capacity less cluster.mem_headroom */
  int64_t memory_peak_stage; /* pipeline stage of memory_gib */
  int oom;                   /* 1: memory_gib exceeds memory_usable_gib */
  /* With training.tokens (else 0): the whole run at this step time. */
  double time_to_train_days; /* training.tokens / tokens_per_s */
  double gpu_hours;          /* num_gpus x the time to train */
  double cost;               /* gpu_hours x cluster.price_per_gpu_hour (0 without a price) */
  int64_t num_gpus;
  int64_t simulated_ranks;   /* ranks the engine ran (folded or all) */
  /* The critical path of the step (docs/REPORT.md): the chain of ops, each
   * started by the end of the one before, that ends the step; recorded by
   * sc_simulate up to 16M simulated ops (else, and by sc_simulate_ex without
   * SC_SIM_CRITICAL_PATH, critical_path_ops is 0). */
  int64_t critical_path_ops;              /* ops on it; 0: not recorded */
  double critical_path_s[SC_CAT_COUNT];   /* its time per category; sums to the step */
  struct {
    int64_t stage;                        /* pipeline stage */
    const char *stream;                   /* "compute", "tp-comm", ...; NULL past the last */
    double seconds;                       /* time of the path on that stage's stream */
  } critical_path_top[SC_CPATH_TOP];      /* where most of it runs, largest first */
  struct {
    int64_t rank;                         /* global rank (simulated) */
    int64_t ranks;                        /* ranks it stands for (its class); 0 past the last */
    double seconds;                       /* time of the path on that rank */
  } critical_path_ranks[SC_CPATH_TOP];    /* the ranks that set the step, largest first */
  /* What-if variation (the variation: section, docs/WHATIF.md); varied_ranks
   * 0: none. */
  int64_t varied_ranks;      /* ranks whose speed, links or GPU differ from nominal */
  double step_time_nominal_s; /* the same job without variation (sc_simulate); 0: not run */
  double slowest_gpu_speed;  /* smallest compute speed factor of any rank */
  int64_t gpu_mix_ranks;     /* ranks on variation.gpu_mix's GPU */
  char gpu_mix[32];          /* that GPU's preset name; "" none */
  int gpu_mix_oom;           /* 1: a stage on that GPU exceeds its usable memory */
  /* Failures over the run (variation.failures, gpu_mtbf_hours); run_steps 0: none. */
  int64_t run_steps;
  double failures;           /* given plus expected */
  double goodput;            /* time of the steps that count / wall time of the run, 0..1 */
  double run_days;           /* wall time of the run with failures, checkpoints, restarts */
  int64_t ops;               /* ops executed over simulated ranks */
  int64_t events;            /* engine events processed */
} sc_result;


/* Writes the warnings a resolved config deserves, one line each (no
 * prefix): a calibration file fitted for another GPU than the cluster's; a
 * GPU whose compute model has no fit on measured step times (and no
 * calibration keys given). Returns the sink's status. */
int sc_config_warnings(const sc_config *cfg, sc_write_fn w, void *ud);
/* Flags of sc_config_warnings_ex. */
#define SC_WARN_EXSITU 1u /* the config prices an ex-situ job's operators (replay) */
/* sc_config_warnings, and with SC_WARN_EXSITU those of pricing traced
 * operators: on a GPU whose default compute calibration is known to price
 * this project's measured ex-situ steps badly (the H200, whose defaults are
 * the H100 step-time fit), with no compute calibration keys given. */
int sc_config_warnings_ex(const sc_config *cfg, unsigned flags, sc_write_fn w, void *ud);

/* Where a resolved config's value of a field came from: given (a file, a
 * preset, a config.json, --set), defaulted (the documented default of
 * docs/CONFIG.md), derived (filled in by resolution), or unused (the field
 * of a feature the config does not use, or one never listed: the model's
 * required shape, labels, prices). Reports list the defaulted and derived
 * ones, so that no value reaches a result unseen. */
enum { SC_FIELD_GIVEN, SC_FIELD_DEFAULTED, SC_FIELD_DERIVED, SC_FIELD_UNUSED };
int sc_config_field_state(const sc_config *cfg, int field);
/* The field's value as YAML scalar text ("8", "bf16", "true"); 0 or SC_EINVAL. */
int sc_config_field_value(const sc_config *cfg, int field, char *buf, size_t n);

/* Simulates one training step of a resolved config. If trace is non-NULL a
 * Chrome/Perfetto JSON trace is streamed to it (one process per simulated
 * rank, one thread per stream). Returns 0 or a negative SC_E code. */
int sc_simulate(sc_ctx *ctx, const sc_config *cfg, sc_write_fn trace,
                void *trace_ud, sc_result *out);

/* Timeline formats of a traced simulation. */
typedef enum {
  SC_TRACE_OUT_JSON = 0, /* Chrome/Perfetto JSON (traceEvents) */
  SC_TRACE_OUT_PERFETTO  /* Perfetto's protobuf trace (.pftrace): TrackDescriptor and TrackEvent packets */
} sc_trace_out_format;

/* A range of global ranks, first to last inclusive. */
typedef struct sc_rank_range {
  int64_t first, last;
} sc_rank_range;

/* What a traced simulation writes: the format, and which ranks go into the
 * timeline (ranks NULL or nranks 0: every simulated rank). Ranges may
 * overlap and come in any order; each must lie in [0, world). In a folded
 * run (simulation.fold) a rank stands for its rank class, its pipeline
 * stage's one simulated rank, and the trace's metadata says so. Borrowed. */
typedef struct sc_trace_opts {
  sc_trace_out_format format;
  const sc_rank_range *ranks;
  size_t nranks;
} sc_trace_opts;

/* sc_simulate with a trace in the format and of the ranks opts names
 * (opts NULL: JSON of every simulated rank, as sc_simulate). Ranks outside
 * the job are SC_EINVAL. trace may be NULL (no trace, opts unused). */
int sc_simulate_traced(sc_ctx *ctx, const sc_config *cfg, const sc_trace_opts *opts,
                       sc_write_fn trace, void *trace_ud, sc_result *out);

/* Flags of sc_simulate_ex. */
#define SC_SIM_CRITICAL_PATH 1u /* record the critical path (sc_result.critical_path_*) */
/* sc_simulate with flags; sc_simulate is sc_simulate_ex with
 * SC_SIM_CRITICAL_PATH. Without that flag critical_path_ops is 0 and
 * everything else is the same, bit for bit: for callers that do not report
 * the path (recording it costs 16 bytes per simulated op, and up to 60% more
 * time on small unfolded runs, docs/PERFORMANCE.md). */
int sc_simulate_ex(sc_ctx *ctx, const sc_config *cfg, unsigned flags, sc_write_fn trace,
                   void *trace_ud, sc_result *out);

/* Size of the Chrome trace sc_simulate would stream for a resolved config,
 * bytes, estimated before anything is built (from the schedule's passes and
 * an upper bound of ops per layer; a few tens of percent above the real size
 * on the shipped examples): for refusing a trace that would fill a disk.
 * Returns 0 or the config's SC_E code. */
int sc_trace_estimate(sc_ctx *ctx, const sc_config *cfg, double *bytes);
/* The same for the trace sc_simulate_traced would stream with opts (its
 * format and ranks; NULL: as sc_trace_estimate). Ranks outside the job are
 * SC_EINVAL, so a caller can refuse them before simulating. */
int sc_trace_estimate_opts(sc_ctx *ctx, const sc_config *cfg, const sc_trace_opts *opts,
                           double *bytes);

/* Formats a result: human summary, one JSON object, or CSV (header + row). */
typedef enum { SC_FORMAT_TEXT = 0, SC_FORMAT_JSON, SC_FORMAT_CSV } sc_format;
int sc_result_format(const sc_config *cfg, const sc_result *res, sc_format fmt,
                     sc_write_fn out, void *ud);

/* Reads a result back from its JSON (sc_result_format's, `run --format json`,
 * `run -o DIR`'s result.json): the headline numbers, memory, time to train,
 * cost and the breakdown; the rest of out stays 0. name is for messages
 * ("name:line: message"). Returns 0 or SC_EINVAL (malformed JSON, not a
 * result) or SC_ENOMEM. */
int sc_result_read_json(sc_ctx *ctx, const char *name, const char *text, size_t len,
                        sc_result *out);
/* Writes what changed from a to b (`stepcast diff`): step time, tokens/s,
 * TFLOP/s, MFU, memory, time to train, cost and every breakdown category,
 * with B - A and the relative change; as text (headed by the names, which
 * may be NULL) or one JSON object ({"step_time_s": {"a", "b", "delta",
 * "pct"}, ..., "breakdown": {...}}). Returns the sink's status. */
int sc_result_diff_format(const sc_result *a, const sc_result *b, const char *name_a,
                          const char *name_b, sc_format fmt, sc_write_fn w, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_H */
