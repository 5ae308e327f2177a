/*
 * ir_int.h: the workload IR, the per-rank DAG of one training step, which the
 * synthesiser (src/synth/) and the trace importers (src/trace/, through
 * replay) produce and the engine runs. A program is the op list of one class
 * of ranks (synthesised: one pipeline stage); ops sit on in-order streams
 * (like CUDA streams) and cross-stream edges are explicit (like CUDA events).
 * Groups are resolved per rank by the engine from the rank mapping, or listed
 * explicitly. Ops are referenced by 32-bit (stream, index) handles. Depends on
 * nothing but base/.
 */
#ifndef SC_IR_INT_H
#define SC_IR_INT_H

#include "base/sc_int.h"

/* X(id, name): streams of one rank. p2p streams are split by direction and
 * side so that every stream talks to exactly one peer: the next stage's
 * forward activations and the previous stage's gradients, and for the V of
 * ZB-V (chunk 1 runs from the last stage back to the first) the reverse pair.
 * host-copy: copies between the GPU and host memory (offload, one copy
 * engine for both directions) and the CPU optimizer step of the offloaded
 * states. At most 15 streams (SC_DEP's 4 bits, one value kept for the
 * synthesiser). */
#define SC_STREAM_LIST(X)             \
  X(SC_ST_COMPUTE, "compute")         \
  X(SC_ST_TP, "tp-comm")              \
  X(SC_ST_DP, "dp-comm")              \
  X(SC_ST_FWD_SEND, "pp-fwd-send")    \
  X(SC_ST_FWD_RECV, "pp-fwd-recv")    \
  X(SC_ST_BWD_SEND, "pp-bwd-send")    \
  X(SC_ST_BWD_RECV, "pp-bwd-recv")    \
  X(SC_ST_CP, "cp-comm")              \
  X(SC_ST_FSDP, "fsdp-gather")        \
  X(SC_ST_RFWD_SEND, "pp-vfwd-send")  \
  X(SC_ST_RFWD_RECV, "pp-vfwd-recv")  \
  X(SC_ST_RBWD_SEND, "pp-vbwd-send")  \
  X(SC_ST_RBWD_RECV, "pp-vbwd-recv")  \
  X(SC_ST_EP, "ep-comm")              \
  X(SC_ST_HOST, "host-copy")

enum {
#define SC_X_ENUM(id, name) id,
  SC_STREAM_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_ST_COUNT
};
_Static_assert(SC_ST_COUNT <= 15, "streams are 4 bits in SC_DEP, one value reserved");

/* Synthesised workloads' pipeline p2p: per stream, the stage offset of the
 * peer (0: not a p2p stream) and the peer's stream. */
typedef struct sc_p2p_stream {
  int8_t delta;
  int8_t peer;
} sc_p2p_stream;
static const sc_p2p_stream sc__p2p_streams[SC_ST_COUNT] = {
    [SC_ST_FWD_SEND] = {1, SC_ST_FWD_RECV},    [SC_ST_FWD_RECV] = {-1, SC_ST_FWD_SEND},
    [SC_ST_BWD_SEND] = {-1, SC_ST_BWD_RECV},   [SC_ST_BWD_RECV] = {1, SC_ST_BWD_SEND},
    [SC_ST_RFWD_SEND] = {-1, SC_ST_RFWD_RECV}, [SC_ST_RFWD_RECV] = {1, SC_ST_RFWD_SEND},
    [SC_ST_RBWD_SEND] = {1, SC_ST_RBWD_RECV},  [SC_ST_RBWD_RECV] = {-1, SC_ST_RBWD_SEND},
};

/* X(id, name, is_compute) */
#define SC_OPKIND_LIST(X)                 \
  X(SC_OP_GEMM, "gemm", 1)                \
  X(SC_OP_ATTN, "attention", 1)           \
  X(SC_OP_ELEMWISE, "elementwise", 1)     \
  X(SC_OP_NORM, "norm", 1)                \
  X(SC_OP_OPTIMIZER, "optimizer", 1)      \
  X(SC_OP_COLL, "collective", 0)          \
  X(SC_OP_SEND, "send", 0)                \
  X(SC_OP_RECV, "recv", 0)                \
  X(SC_OP_HOST, "host", 0)                \
  X(SC_OP_MEMCPY, "memcpy", 0)

enum {
#define SC_X_ENUM(id, name, c) id,
  SC_OPKIND_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_OP_KIND_COUNT
};

/* X(id, name, nccl-tests bus factor numerator kind) */
#define SC_COLL_LIST(X)                   \
  X(SC_COLL_ALLREDUCE, "all_reduce")      \
  X(SC_COLL_ALLGATHER, "all_gather")      \
  X(SC_COLL_REDUCESCATTER, "reduce_scatter") \
  X(SC_COLL_ALLTOALL, "all_to_all")       \
  X(SC_COLL_BROADCAST, "broadcast")       \
  X(SC_COLL_SENDRECV, "send_recv")

enum {
#define SC_X_ENUM(id, name) id,
  SC_COLL_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_COLL_COUNT
};

/* Group kinds a collective can name; the engine resolves the instance from
 * the rank mapping (tp fastest, then cp, dp, pp):
 *   tp     the tensor-parallel ranks;
 *   dp     the data-parallel ranks with the context-parallel ones (dp x cp:
 *          gradient reduction and optimizer sharding, as Megatron-LM does);
 *   cp     the context-parallel ranks;
 *   cp_in  / cp_out  hierarchical CP (a2a+p2p): the CP ranks on one node /
 *          one per node-block, a ring across them;
 *   shard  / replica  FSDP hybrid sharding: the dp x cp ranks a parameter
 *          is sharded over / the copies of a shard;
 *   embedding  the first and last stage's tied embeddings;
 *   ep / etp / edp  mixture of experts, Megatron-Core's expert grid over a
 *          stage's tp x cp x dp ranks (etp fastest, then ep, then edp): the
 *          expert-parallel ranks that exchange tokens, the expert
 *          tensor-parallel ranks that split each expert, and the
 *          expert-data-parallel ranks that hold the same experts and reduce
 *          their gradients;
 *   mirror  DualPipe's stage s and pp - 1 - s (same position): each holds
 *          the other's stage of the mirrored model copy, and they sum those
 *          copies' gradients.
 * A send_recv collective (every member sends to the next and receives from
 * the previous one) is a ring exchange, as context parallelism runs it. */
#define SC_GROUP_LIST(X)     \
  X(SC_GRP_TP, "tp")         \
  X(SC_GRP_DP, "dp")         \
  X(SC_GRP_EMBED, "embedding") \
  X(SC_GRP_CP, "cp")         \
  X(SC_GRP_CP_IN, "cp_in")   \
  X(SC_GRP_CP_OUT, "cp_out") \
  X(SC_GRP_SHARD, "shard")   \
  X(SC_GRP_REPLICA, "replica") \
  X(SC_GRP_EP, "ep")           \
  X(SC_GRP_ETP, "etp")         \
  X(SC_GRP_EDP, "edp")         \
  X(SC_GRP_MIRROR, "mirror")

enum {
#define SC_X_ENUM(id, name) id,
  SC_GROUP_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_GRP_COUNT
};

/* Op labels, for trace names. */
#define SC_LABEL_LIST(X)                                                   \
  X(SC_L_EMBED, "embedding") X(SC_L_LN1, "input-norm")                     \
  X(SC_L_QKV, "qkv") X(SC_L_ATTN, "attention") X(SC_L_PROJ, "attn-proj")  \
  X(SC_L_RES1, "attn-residual") X(SC_L_LN2, "mlp-norm") X(SC_L_FC1, "fc1") \
  X(SC_L_ACT, "activation") X(SC_L_FC2, "fc2") X(SC_L_RES2, "mlp-residual") \
  X(SC_L_FINAL_LN, "final-norm") X(SC_L_LOGITS, "logits")                  \
  X(SC_L_LOSS, "cross-entropy") X(SC_L_TP_AG, "tp-all-gather")             \
  X(SC_L_TP_RS, "tp-reduce-scatter") X(SC_L_TP_AR, "tp-all-reduce")        \
  X(SC_L_LOSS_AR, "loss-all-reduce") X(SC_L_SEND_ACT, "send-activation")   \
  X(SC_L_RECV_ACT, "recv-activation") X(SC_L_SEND_GRAD, "send-grad")       \
  X(SC_L_RECV_GRAD, "recv-grad") X(SC_L_GRAD_AR, "grad-all-reduce")        \
  X(SC_L_GRAD_RS, "grad-reduce-scatter") X(SC_L_PARAM_AG, "param-all-gather") \
  X(SC_L_EMBED_AR, "embedding-grad-all-reduce") X(SC_L_OPTIM, "optimizer-step") \
  X(SC_L_CP_KV, "cp-kv-exchange") X(SC_L_CP_DKV, "cp-dkv-exchange")        \
  X(SC_L_CP_A2A, "cp-all-to-all") X(SC_L_CP_AG, "cp-kv-all-gather")        \
  X(SC_L_CP_RS, "cp-dkv-reduce-scatter") X(SC_L_FSDP_AG, "fsdp-param-all-gather") \
  X(SC_L_FSDP_RS, "fsdp-grad-reduce-scatter") X(SC_L_FSDP_AR, "hsdp-grad-all-reduce") \
  X(SC_L_FP8_CAST, "fp8-cast") X(SC_L_FP8_AMAX, "fp8-amax")               \
  X(SC_L_ROUTER, "moe-router") X(SC_L_PERMUTE, "moe-permute")             \
  X(SC_L_DISPATCH, "moe-dispatch") X(SC_L_COMBINE, "moe-combine")          \
  X(SC_L_EXPERT_FC1, "expert-fc1") X(SC_L_EXPERT_ACT, "expert-activation") \
  X(SC_L_EXPERT_FC2, "expert-fc2") X(SC_L_UNPERMUTE, "moe-unpermute")      \
  X(SC_L_SHARED_FC1, "shared-expert-fc1") X(SC_L_SHARED_FC2, "shared-expert-fc2") \
  X(SC_L_ETP_AG, "etp-all-gather") X(SC_L_ETP_RS, "etp-reduce-scatter")    \
  X(SC_L_EXPERT_GRAD, "expert-grad-reduce")                                \
  X(SC_L_MLA_DOWN, "mla-down-proj") X(SC_L_MLA_Q_UP, "mla-q-up-proj")       \
  X(SC_L_MLA_KV_UP, "mla-kv-up-proj") X(SC_L_MLA_NORM, "mla-latent-norm")  \
  X(SC_L_MIRROR_AR, "mirror-grad-all-reduce")                              \
  X(SC_L_D2H, "copy-to-host") X(SC_L_H2D, "copy-to-device")                \
  X(SC_L_CPU_OPTIM, "cpu-optimizer-step") X(SC_L_ROPE, "rotary-embedding")

enum {
#define SC_X_ENUM(id, name) id,
  SC_LABEL_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_L_COUNT
};

enum { SC_PH_FWD = 0, SC_PH_BWD, SC_PH_WGRAD, SC_PH_RECOMPUTE, SC_PH_STEP };

#define SC_NO_LAYER 0xffffu

/* One operation. 32 bytes. */
typedef struct sc_op {
  double work;       /* compute: duration at full speed, ns; comm: bytes */
  uint32_t dep_off;  /* first dependency in sc_program.deps */
  uint16_t ndeps;    /* cross-stream dependencies */
  uint8_t kind;      /* SC_OP_* */
  uint8_t cat;       /* sc_category the op's time counts under */
  uint8_t coll;      /* SC_COLL_* for collectives */
  uint8_t group;     /* SC_GRP_* for collectives */
  uint8_t label;     /* SC_L_* */
  uint8_t phase;     /* SC_PH_* */
  uint16_t layer;    /* global layer index or SC_NO_LAYER */
  uint16_t chunk;    /* model chunk (interleaved schedule) */
  uint32_t mb;       /* micro-batch index */
  union {
    /* Explicit workloads only (sc_workload.nranks > 0): a collective's group
     * (index in sc_workload.groups); a send/recv's peer as
     * SC_DEP(peer's stream, peer's simulated rank). */
    uint32_t peer;
    /* Merged workloads only (SC_WL_MERGE), compute ops: ns of the op's
     * duration during which the compute stream stood waiting for inlined
     * TP collectives (exposed TP communication). */
    uint32_t tp_ns;
  };
} sc_op;
_Static_assert(sizeof(sc_op) == 32, "sc_op is meant to stay 32 bytes (two per cache line)");

/* A dependency handle: stream in the top 4 bits, index in the low 28. */
#define SC_DEP(stream, idx) (((uint32_t)(stream) << 28) | (uint32_t)(idx))
#define SC_DEP_STREAM(d) ((d) >> 28)
#define SC_DEP_INDEX(d) ((d) & 0x0fffffffu)

typedef struct sc_program {
  sc_op *ops[SC_ST_COUNT];
  size_t nops[SC_ST_COUNT], cap[SC_ST_COUNT];
  uint32_t *deps;
  size_t ndeps, deps_cap;
  /* Merged workloads (SC_WL_MERGE): ops of the unmerged program less ops
   * of this one. Each of those ended in exactly one event (rate 1, never
   * re-queued), so the engine adds it to both its op and event counts. */
  int64_t nmerged;
  /* Synthesised workloads: bit g set when a collective names group kind g
   * (the engine builds instances of those only). */
  uint16_t groups_used;
} sc_program;

/* Whole nanoseconds an activity with work_ns of work left takes at rate 1:
 * the engine rounds every duration up, less 1e-9 ns of slack so that a value
 * a hair above an integer (rounding error) is not pushed up by one. Shared by
 * the engine and the merged workload, which must round exactly alike. */
/* Time bounds, so that time arithmetic never overflows and no conversion
 * of a double to int64 is undefined:
 *  - SC_WORK_MAX (2^50 ns, 13 days): the longest op duration (compute work,
 *    a priced collective or transfer) a workload may hold; the builders and
 *    the engine's pricing refuse longer ones. The slowest rate an activity
 *    runs at (interference at most 1 + SC_INTERF_S_MAX, NIC sharing over at
 *    most 7 streams, communication slowdown at most 11) stretches it less
 *    than 2^9 times, so every duration the engine computes is below 2^59.
 *  - SC_TIME_MAX (2^61 ns, 73 years): the latest event time; the engine
 *    refuses an event beyond it (checked when a new event time is queued). */
#define SC_WORK_MAX ((double)((int64_t)1 << 50))
#define SC_TIME_MAX ((int64_t)1 << 61)

/* Precondition: 0 <= work_ns < 2^62 (SC_WORK_MAX and the rate bound above). */
static inline int64_t sc__duration_ns(double work_ns) {
  /* ceil without the libm call: truncation rounds toward zero, so only
   * positive non-integers are one short; (double)i is exact whenever x has a
   * fraction (|x| < 2^52). */
  double x = work_ns - 1e-9;
  int64_t i = (int64_t)x;
  return i + ((double)i < x);
}

/* Where a group's members sit: decides which links a collective uses. */
typedef struct sc_placement {
  int64_t n;      /* ranks in the group */
  int64_t nodes;  /* nodes the group spans */
  int64_t per_node; /* most group members on one node */
  int64_t leaves; /* leaf switches (or rail-leaf groups) the nodes span; 0 or 1: one */
} sc_placement;

/* Where two ranks of a point-to-point transfer sit (sc_comm_model.p2p_ns). */
enum { SC_TIER_NODE = 0, SC_TIER_LEAF = 1, SC_TIER_SPINE = 2 };

/* Accumulates the placement of a group whose members are visited in
 * ascending global rank order (so nodes change monotonically): start with
 * sc__placement_begin (nodes_per_leaf: nodes under one leaf, 0 = one leaf
 * for all), add each member's node. */
typedef struct sc_placement_acc {
  sc_placement pl;
  int64_t node, run, leaf, nodes_per_leaf;
} sc_placement_acc;
void sc__placement_begin(sc_placement_acc *a, int64_t nodes_per_leaf);
void sc__placement_add(sc_placement_acc *a, int64_t node);

/* Rank mapping and group sizes of a job (Megatron order: tp fastest, then cp,
 * dp, pp): rank = tp_rank + t*(cp_rank + c*(dp_rank + dp*pp_rank)). */
typedef struct sc_mapping {
  int64_t tp, cp, dp, pp, world, gpus_per_node;
  int64_t shard; /* FSDP: data-parallel ranks a parameter is sharded over (dp: no HSDP) */
  int64_t cp_in; /* hierarchical CP: CP ranks of one inner (all-to-all) group (cp: none) */
  int64_t ep, etp; /* MoE expert grid: expert-parallel and expert tensor-parallel sizes
                      (1, 1 for dense models; ep * etp divides tp * cp * dp) */
} sc_mapping;

/* A communication group of an explicit workload: its simulated members
 * (indices into the workload's simulated ranks, in sc_workload.group_members)
 * and the placement of the full logical group, which prices it (members not
 * simulated are folded onto the simulated ones). */
typedef struct sc_xgroup {
  uint32_t mem_off, nmem;
  int64_t n, nodes, per_node, leaves; /* as sc_placement */
} sc_xgroup;

typedef struct sc_workload {
  sc_program *progs;  /* one per pipeline stage (explicit: any number) */
  int64_t nprogs;
  sc_mapping map;
  int tied_embed_sync; /* 1: stages 0 and pp-1 all-reduce embedding grads */
  double params_per_stage_max; /* parameters on the fullest TP rank */
  double hw_flops_per_rank_max;
  /* Explicit workloads (trace replay): when nranks > 0 the engine simulates
   * these ranks, each running progs[rank_prog[i]]; collectives name a group
   * of `groups` and p2p ops their peer (sc_op.peer); map gives world size
   * and GPUs per node only. 0 keeps the Megatron mapping above. Borrowed. */
  uint32_t nranks;
  const uint32_t *rank_prog;
  const int64_t *rank_global;   /* global rank of each simulated rank */
  const sc_xgroup *groups;
  uint32_t ngroups;
  const uint32_t *group_members;
  /* Optional names for the Chrome trace (NULL: built-in labels). */
  const char *(*op_name)(const void *ud, const sc_op *op);
  const char *(*stream_name)(const void *ud, uint32_t prog, int stream);
  const void *names_ud;
  int merged; /* built with SC_WL_MERGE: valid only as that flag says */
  int inlined; /* merged with TP collectives inlined: valid only folded */
} sc_workload;

/* Frees the programs of a workload built by the synthesiser or replay
 * (progs and their arrays; borrowed tables are the builder's). */
void sc__workload_free(sc_ctx *ctx, sc_workload *wl);

/* Checks program invariants (deps point backwards in existing streams,
 * p2p sends and receives pair up across stages). 0 or SC_EINVAL. */
int sc__workload_check(sc_ctx *ctx, const sc_workload *wl);

const char *sc__stream_name(int s);
const char *sc__label_name(int l);
const char *sc__coll_name(int c);
int sc__opkind_is_compute(int kind);
/* Compute op kind (SC_OP_*) of a CUDA kernel from its name: optimizer,
 * attention, GEMM, norm/reduction, otherwise elementwise. The one kernel
 * classifier, for replayed traces and interference training pairs. */
int sc__kernel_kind(const char *name);

#endif /* SC_IR_INT_H */
