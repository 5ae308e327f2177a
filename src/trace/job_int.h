/*
 * job_int.h: the imported workload ("job") behind include/stepcast/trace.h.
 * Importers (kineto.c, chakra.c) fill it, scw.c stores and loads it, replay.c
 * turns it into engine programs. Per rank: streams (the host launch timeline
 * and the GPU streams of the trace) and ops in stream order with explicit
 * cross-op dependencies; per job: interned strings and communication groups
 * listing their global member ranks.
 */
#ifndef SC_JOB_INT_H
#define SC_JOB_INT_H

#include "stepcast/trace.h"

#include "base/sc_int.h"

#define SC_JOB_NONE UINT32_MAX
/* Group of a collective over the whole job when the trace does not give
 * the world size (Chakra; Kineto without distributedInfo): importers set
 * it, sc_job_finish replaces it with the group of all ranks once every
 * rank is in. Never written to a .scw file. */
#define SC_JOB_WORLD (UINT32_MAX - 1)
/* Largest world a job may describe (ranks, group sizes): 2^20, far above
 * any real job, low enough that per-rank tables stay small. */
#define SC_JOB_MAX_WORLD ((int64_t)1 << 20)

/* Bounds of a job's contents (docs/SCW.md, "Bounds"): what an importer
 * keeps, sc_job_finish checks and the .scw reader accepts, so that memory
 * stays bounded by content and every number reaching the engine is in its
 * range (ir_int.h: SC_WORK_MAX, SC_TIME_MAX).
 *  - ops per rank: 2^24 (16.8 M; a profiled step of the largest models
 *    holds a few hundred thousand kernels per rank); dependencies per rank
 *    4 per op; streams per rank 2^16 - 1 (the op's 16-bit stream index);
 *  - groups per job 2^16, their members together 2^24;
 *  - iterations (profiler steps) per rank 2^20;
 *  - an op's duration at most SC_WORK_MAX (2^50 ns, 13 days), its start
 *    and a rank's span at most SC_TIME_MAX (2^61 ns);
 *  - an op's bytes at most 2^50 (1 PiB: the memory of ~10,000 GPUs), its
 *    FLOPs at most 1e24 (2^50 ns at 1 EFLOP/s), a shape's m, n, k and
 *    batch at most 2^40 each. */
#define SC_JOB_MAX_OPS ((int64_t)1 << 24)
#define SC_JOB_MAX_DEPS ((int64_t)1 << 26)
#define SC_JOB_MAX_STREAMS ((int64_t)UINT16_MAX)
#define SC_JOB_MAX_GROUPS ((int64_t)1 << 16)
#define SC_JOB_MAX_MEMBERS ((int64_t)1 << 24)
#define SC_JOB_MAX_ITERATIONS ((int64_t)1 << 20)
#define SC_JOB_MAX_BYTES ((double)((int64_t)1 << 50))
#define SC_JOB_MAX_FLOPS 1e24
#define SC_JOB_MAX_DIM ((double)((int64_t)1 << 40))

/* X(id, name): op kinds of a job. HOST is CPU time of the launching thread
 * between two host events; SYNC is the host blocked until its dependencies
 * (GPU ops) are done, then dur_ns more (wake-up); IDLE is time a GPU stream
 * stood idle for a reason the trace does not show (kept as a delay); GRAD
 * marks, on a GPU stream, the point where a parameter's gradient is complete
 * (bytes: its size), which data parallelism (DDP buckets) hangs off. */
#define SC_JOP_LIST(X)          \
  X(SC_JOP_KERNEL, "kernel")    \
  X(SC_JOP_MEMCPY, "memcpy")    \
  X(SC_JOP_MEMSET, "memset")    \
  X(SC_JOP_COLL, "collective")  \
  X(SC_JOP_SEND, "send")        \
  X(SC_JOP_RECV, "recv")        \
  X(SC_JOP_HOST, "host")        \
  X(SC_JOP_SYNC, "sync")        \
  X(SC_JOP_IDLE, "idle")        \
  X(SC_JOP_GRAD, "grad")

enum {
#define SC_X_ENUM(id, name) id,
  SC_JOP_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_JOP_COUNT
};

/* Collective type of an op whose type could not be determined. */
#define SC_JCOLL_UNKNOWN 0xff

/* X(id, name): how an op whose duration is not measured (ex-situ traces,
 * `import cpu`) is priced at replay on the target GPU, from its shape entry:
 * GEMM and CONV (implicit GEMM of a convolution) as a GEMM of m x n x k,
 * `batch` times; MEM as a memory-bound kernel moving the op's `bytes`;
 * HOST as m operators dispatched from Python and n from the C++ autograd
 * engine, k of the m layer-level (calibration host_op_us, host_autograd_us,
 * host_module_us);
 * NORM as a memory-bound normalisation (batch / layer norm and their
 * backward: per-channel reductions) at calibration norm_eff of MEM's speed;
 * ATTN as fused (flash) attention of the op's FLOPs over `batch` (batch x
 * heads) query sequences of m tokens against k keys, head dimension n, by
 * the attention model; GEMM8_FWD / _DGRAD / _WGRAD as a GEMM on FP8
 * operands (a linear layer's forward, input-gradient or weight-gradient
 * GEMM under training.precision fp8, `replay` of an ex-situ job) with the
 * casts training.fp8_recipe needs (FWD_SHARED: a forward GEMM whose input
 * the previous one cast, q/k/v or gate/up: its weight's cast only). */
#define SC_JSHAPE_LIST(X)      \
  X(SC_JSHAPE_GEMM, "gemm")    \
  X(SC_JSHAPE_CONV, "conv")    \
  X(SC_JSHAPE_MEM, "mem")      \
  X(SC_JSHAPE_HOST, "host")    \
  X(SC_JSHAPE_NORM, "norm")    \
  X(SC_JSHAPE_ATTN, "attn")    \
  X(SC_JSHAPE_GEMM8_FWD, "gemm8-fwd") \
  X(SC_JSHAPE_GEMM8_DGRAD, "gemm8-dgrad") \
  X(SC_JSHAPE_GEMM8_WGRAD, "gemm8-wgrad") \
  X(SC_JSHAPE_GEMM8_FWD_SHARED, "gemm8-fwd-shared") \
  X(SC_JSHAPE_ATTN_CUDNN, "attn-cudnn")

enum {
#define SC_X_ENUM(id, name) id,
  SC_JSHAPE_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_JSHAPE_COUNT
};

/* Fused attention, by any backend (ATTN_CUDNN: SDPA's cuDNN kernels, priced
 * at calibration cudnn_attn_eff instead of attn_eff). */
static inline int sc__jshape_attn(int cls) { return cls == SC_JSHAPE_ATTN || cls == SC_JSHAPE_ATTN_CUDNN; }

/* A GEMM, in bf16/fp32 or on FP8 operands. */
static inline int sc__jshape_gemm(int cls) {
  return cls == SC_JSHAPE_GEMM || cls == SC_JSHAPE_GEMM8_FWD || cls == SC_JSHAPE_GEMM8_DGRAD ||
         cls == SC_JSHAPE_GEMM8_WGRAD || cls == SC_JSHAPE_GEMM8_FWD_SHARED;
}

typedef struct sc_jshape {
  double m, n, k, batch;
  uint8_t cls;       /* SC_JSHAPE_* */
} sc_jshape;

/* Module structure of ex-situ traces (`.scw` version 3): the nn.Module an
 * op ran in and the pass it belongs to, which the sharding rules (shard.c)
 * re-target to tensor and pipeline parallelism. Modules are per rank:
 * dotted path ("blocks.3.c_attn", "" the model itself), class name
 * ("Linear") and attention heads (0 unknown). An op names one by 1 + index
 * (0: none) with its pass and, for gradient accumulation and optimizer
 * ops, the parameter. */
/* RECOMP: a forward operator re-run in backward by activation
 * checkpointing (it runs where the backward does, shaped as forward). */
enum { SC_JPASS_NONE = 0, SC_JPASS_FWD, SC_JPASS_BWD, SC_JPASS_OPT, SC_JPASS_RECOMP, SC_JPASS_COUNT };
enum { SC_JPARAM_NONE = 0, SC_JPARAM_WEIGHT, SC_JPARAM_BIAS, SC_JPARAM_OTHER, SC_JPARAM_COUNT };
/* Attention heads a module may declare: at most 2^20. */
#define SC_JOB_MAX_HEADS ((uint32_t)1 << 20)

typedef struct sc_jmodule {
  uint32_t path, type; /* string ids */
  uint32_t heads;      /* 0: unknown */
} sc_jmodule;

typedef struct sc_jopmod {
  uint32_t module;   /* 1 + index in sc_jrank.modules; 0 none */
  uint8_t pass;      /* SC_JPASS_* */
  uint8_t param;     /* SC_JPARAM_* */
} sc_jopmod;

/* One op. 64 bytes. */
typedef struct sc_jop {
  int64_t dur_ns;    /* measured duration (HOST: CPU time; SYNC: after deps) */
  int64_t start_ns;  /* measured start relative to the rank's origin; -1 unknown */
  double flops;      /* 0 = unknown */
  double bytes;      /* collectives: nccl-tests size; copies: bytes; 0 = unknown */
  uint32_t dep_off;  /* first dependency in sc_jrank.deps */
  uint32_t ndeps;
  uint32_t name;     /* string id */
  uint32_t group;    /* collectives: group id, else SC_JOB_NONE */
  int32_t peer;      /* send/recv: global rank of the peer, -1 unknown */
  uint32_t iter;     /* profiler step (0-based) the op belongs to */
  uint32_t shape;    /* priced at replay (dur_ns 0): 1 + index in sc_jrank.shapes; 0 none */
  uint16_t stream;   /* index in sc_jrank.streams */
  uint8_t kind;      /* SC_JOP_* */
  uint8_t coll;      /* SC_COLL_* or SC_JCOLL_UNKNOWN */
} sc_jop;

typedef struct sc_jstream {
  int64_t id;        /* trace stream id (device << 32 | stream); -1 host */
  uint32_t name;     /* string id */
  uint8_t host;      /* 1: the host timeline */
} sc_jstream;

/* One traced rank. Ops of one stream run in array order; deps are op
 * indices of the same rank (any stream). */
typedef struct sc_jrank {
  int64_t rank;            /* global rank */
  uint32_t source;         /* string id: file it came from */
  uint32_t gpu;            /* string id: device name ("" unknown) */
  int64_t iterations;      /* profiler steps covered (>= 1) */
  int64_t span_ns;         /* traced span of those steps (first start to last op end) */
  sc_jstream *streams;
  size_t nstreams, streams_cap;
  sc_jop *ops;
  size_t nops, ops_cap;
  uint32_t *deps;
  size_t ndeps, deps_cap;
  sc_jshape *shapes;       /* ops priced at replay (ex-situ traces) */
  size_t nshapes, shapes_cap;
  sc_jmodule *modules;     /* module table (version 3 ex-situ traces) */
  size_t nmodules, modules_cap;
  sc_jopmod *opmods;       /* NULL, or one per op (index as ops) */
  size_t opmods_cap;
  /* NULL, or one per op (index as ops): a GPU trace's measured kernel time
   * of the operator a priced op came from, on its first kernel (-1 on its
   * other kernels, 0 unknown); `import cpu --gpu-trace` in memory only (not
   * in .scw), for `calibrate --kernels` (kfit.c). */
  int64_t *ref_ns;
  size_t ref_cap;
} sc_jrank;

typedef struct sc_jgroup {
  uint32_t name;     /* string id ("" unknown) */
  uint32_t off, n;   /* members: job->members[off .. off+n), ascending global ranks */
} sc_jgroup;

typedef struct sc_jwarn {
  char msg[200];
  int64_t count;
} sc_jwarn;

struct sc_job {
  sc_ctx *ctx;
  int64_t world;           /* 0 until known */
  sc_jrank *ranks;
  size_t nranks, ranks_cap;
  sc_jgroup *groups;
  size_t ngroups, groups_cap;
  int64_t *members;
  size_t nmembers, members_cap;
  uint32_t *group_hash;    /* open addressing over member lists: group id + 1, 0 empty */
  size_t group_hash_cap;
  /* Interned strings: bytes (each 0-terminated) and offsets; hash index. */
  char *str;
  size_t str_len, str_cap;
  uint32_t *str_off;
  size_t nstr, str_off_cap;
  uint32_t *str_hash;      /* open addressing: string id + 1, 0 empty */
  size_t str_hash_cap;
  sc_jwarn *warns;
  size_t nwarns, warns_cap;
  int64_t opened;          /* readers opened (rank hint default) */
  /* Per-rank shards (issue 20 item 6; docs/TRACE.md, "Per-rank shards"):
   * a job of ex-situ traces of one TP rank of every pipeline stage, traced
   * with their shard shapes (tools/trace_torch.py --tp N --pp-stage K/P).
   * shard_tp x shard_pp is the world; stage s is rank s x shard_tp, its TP
   * all-reduces and pipeline p2p the collectives and send / receive ops
   * the importer made of the trace's markers. 0: not such a job. Stored
   * in the .scw's SHRD section. */
  int64_t shard_tp, shard_pp;
  /* Import only: the first shard trace and the offset of its
   * distributedInfo.pp, for the missing-stage error of sc_job_finish. */
  uint32_t shard_src;
  uint64_t shard_off;
};

/* Interns s[0..n) and returns its id in *id. 0 or SC_ENOMEM. */
int sc__job_intern(sc_job *job, const char *s, size_t n, uint32_t *id);
const char *sc__job_str(const sc_job *job, uint32_t id);

/* Finds or adds the group with these members (sorted and deduplicated
 * here; ranks must be >= 0); name is a string id. 0, SC_ENOMEM, or
 * SC_EINVAL (message set) past SC_JOB_MAX_GROUPS / SC_JOB_MAX_MEMBERS. */
int sc__job_group(sc_job *job, int64_t *ranks, size_t n, uint32_t name, uint32_t *id);
/* ... the group with these members and this name: the groups a re-target
 * makes (shard.c, ddp.c) keep their kind where members coincide (a CP
 * pair that is also the gradients' DP x CP group at dp 1). */
int sc__job_group_named(sc_job *job, int64_t *ranks, size_t n, uint32_t name, uint32_t *id);
/* Copies in's string table into the empty job out (same ids) and, with
 * groups, its groups (same ids and names): what a job rewritten from
 * another (ddp.c, shard.c, layers.c) starts from. 0, SC_ENOMEM or
 * SC_EINVAL (message set). */
int sc__job_copy_tables(const sc_job *in, sc_job *out, int groups);

/* Appends a rank (zeroed, rank set) and returns it (NULL: SC_ENOMEM). The
 * pointer is valid until the next call. */
sc_jrank *sc__job_add_rank(sc_job *job, int64_t rank);

/* Appends a stream to r; returns its index or a negative SC_E code. */
int sc__jrank_stream(sc_job *job, sc_jrank *r, int64_t id, uint32_t name, int host);
/* Appends an op (copied) and returns its index, or -1 (SC_ENOMEM). Its
 * dependencies are added with sc__jrank_dep right after, before the next op. */
int64_t sc__jrank_op(sc_job *job, sc_jrank *r, const sc_jop *op);
int sc__jrank_dep(sc_job *job, sc_jrank *r, uint32_t dep);
/* Appends a shape entry; returns its index, or -1 (SC_ENOMEM). */
int64_t sc__jrank_shape(sc_job *job, sc_jrank *r, const sc_jshape *sh);
/* Finds or adds the module (path, type) of r, taking heads when it has none
 * yet; returns its index, or -1 (SC_ENOMEM). Linear in the modules: tables
 * are a few hundred. */
int64_t sc__jrank_module(sc_job *job, sc_jrank *r, uint32_t path, uint32_t type, uint32_t heads);
/* Sets op k's module entry (allocating the per-op table, zeroed, on first
 * use). 0 or SC_ENOMEM. */
int sc__jrank_set_opmod(sc_job *job, sc_jrank *r, size_t k, const sc_jopmod *m);
/* Sets op k's ref_ns (growing the array, zero-filled). 0 or SC_ENOMEM. */
int sc__jrank_set_ref(sc_job *job, sc_jrank *r, size_t k, int64_t ns);
/* Op k's module entry (zeroed when the rank has none). */
static inline sc_jopmod sc__jrank_opmod(const sc_jrank *r, size_t k) {
  sc_jopmod none = {0, 0, 0};
  return r->opmods && k < r->opmods_cap ? r->opmods[k] : none;
}

/* Counts a warning once (sc__job_warn) or n times; the text is the key
 * (same text, same counter). */
void sc__job_warn(sc_job *job, const char *fmt, ...) SC_PRINTF(2, 3);
void sc__job_warn_n(sc_job *job, int64_t n, const char *fmt, ...) SC_PRINTF(3, 4);

/* Checks every rank of a job against the bounds above (counts, durations,
 * times, bytes, FLOPs, shapes): 0 or SC_EINVAL with "source: rank R op K:
 * field: value out of range [lo, hi]". sc_job_finish runs it, so that
 * what sc_job_write writes the .scw reader accepts. */
int sc__job_check_bounds(const sc_job *job);

/* Formats v in the fewest significant digits that read back as v (15 to
 * 17: "1e+24", "1125899906842624", "1.2e+158") into buf; returns buf. */
const char *sc__job_fmt_num(double v, char *buf, size_t n);

/* Frees a rank's arrays. */
void sc__jrank_free(sc_ctx *ctx, sc_jrank *r);

const char *sc__jop_name(int kind);

/* ddp.c: a copy of `in` with PyTorch DDP added after its GRAD ops: bucket
 * copies, one all-reduce per bucket (first bucket first_bytes, then
 * bucket_bytes) on a new stream over the rank's data-parallel group (the
 * world split into replicas of replica_ranks ranks: one rank of each), and
 * the copy back after backward. 0 or SC_ENOMEM / SC_EINVAL. */
/* ... cp > 1: each DP group also holds the rank's cp - 1 context-parallel
 * peers, cp_stride ranks apart inside its replica (Megatron reduces
 * gradients over DP x CP). */
int sc__job_ddp(const sc_job *in, double bucket_bytes, double first_bytes, int64_t replica_ranks, int64_t cp,
                int64_t cp_stride, sc_job **out);
const char *sc__jshape_name(int cls);

#endif /* SC_JOB_INT_H */
