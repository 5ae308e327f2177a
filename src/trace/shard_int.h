/*
 * shard_int.h: re-targeting an ex-situ job (one traced process with module
 * paths, `.scw` version 3) to tensor and pipeline parallelism (shard.c).
 * The sharding rules say how each nn.Module splits over the TP ranks
 * (Megatron-LM: column-parallel, row-parallel, vocab-parallel, replicated);
 * the stage cut gives each pipeline stage its layers; sc__job_shard builds
 * one program per stage, run along model/schedule.c's order (1F1B, GPipe,
 * interleaved, ZB-H1, ZB-V), with TP
 * all-reduces and p2p transfers of the activations. Replay (analysis/
 * replay.c) then prices it like any job.
 */
#ifndef SC_SHARD_INT_H
#define SC_SHARD_INT_H

#include "trace/job_int.h"

/* X(id, name): how a module splits over tensor-parallel ranks. AUTO: the
 * built-in rules decide; BLOCK: a layer's own operators (attention core,
 * activations), split where they sit between a column- and a row-parallel
 * GEMM, replicated elsewhere; EXPERT: one expert of an MoE layer (it and
 * its sub-modules), distributed over the expert-parallel ranks (ep), its
 * own operators split under TP as BLOCK's. */
#define SC_SHARD_ROLE_LIST(X)                 \
  X(SC_SHARD_AUTO, "auto")                    \
  X(SC_SHARD_COLUMN, "column-parallel")       \
  X(SC_SHARD_ROW, "row-parallel")             \
  X(SC_SHARD_REPLICATED, "replicated")        \
  X(SC_SHARD_VOCAB, "vocab-parallel")         \
  X(SC_SHARD_BLOCK, "block")                  \
  X(SC_SHARD_EXPERT, "expert")

enum {
#define SC_X_ENUM(id, name) id,
  SC_SHARD_ROLE_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_SHARD_ROLE_COUNT
};

/* One override: modules whose path matches glob (`*` any run of
 * characters, `?` one) take role. */
typedef struct sc_shard_rule {
  char glob[256];
  uint8_t role;
} sc_shard_rule;

/* Parses an override file: one rule a line, `GLOB ROLE` (ROLE one of
 * column-parallel, row-parallel, replicated, vocab-parallel, expert), `#` comments
 * and blank lines skipped. *out is allocated (sc__free with *n entries).
 * 0, SC_ENOMEM or SC_EINVAL with "name:line: message". */
int sc__shard_rules_parse(sc_ctx *ctx, const char *name, const char *text, size_t len, sc_shard_rule **out,
                          size_t *n);

/* Roles of rank r's modules (roles[nmodules]): the first matching override,
 * else the built-in rules (docs/TRACE.md, "Sharding rules"). */
void sc__shard_classify(const sc_job *job, const sc_jrank *r, const sc_shard_rule *rules, size_t nrules,
                        uint8_t *roles);

/* Length of the layer prefix of a module path: up to and including its
 * first all-digit component ("blocks.3.c_attn" -> "blocks.3"); 0 none. */
size_t sc__shard_layer_prefix(const char *p);

/* The layers of rank r: distinct layer prefixes of its modules in order of
 * first forward use. mod_layer[nmodules] gets each module's layer (-1 none:
 * outside the layers); mod_post (may be NULL; zeroed by the caller) marks
 * modules first used before (1) or after (2) the layers. Returns the count. */
int64_t sc__shard_layers(const sc_job *job, const sc_jrank *r, int32_t *mod_layer, uint8_t *mod_post);

/* Layer-count extrapolation (layers.c; docs/TRACE.md, "More layers than
 * traced"): a copy of an ex-situ job with module paths whose every rank
 * runs `layers` layers, the last traced layer's operators (each pass's:
 * forward, backward, gradient marks, optimizer and zero_grad work)
 * repeated right after it under new module paths (prefix index continued:
 * blocks.4, blocks.5, ...). *traced gets the traced count. 0, SC_ENOMEM, or
 * SC_EINVAL / SC_EUNSUPPORTED (message set): no module paths or layers,
 * fewer layers than traced, a shard job, more ops than a job holds. */
int sc__job_layers(const sc_job *in, int64_t layers, sc_job **out, int64_t *traced);

/* torch.compile's fusion of an ex-situ job's eager kernels (fuse.c,
 * `replay --compile`): a copy in which each run of a layer pass's
 * memory-bound kernels moves its largest member's bytes in its first
 * kernel and 0 in the others (*absorbed counts those). 0, SC_ENOMEM or a
 * read error. */
int sc__job_fused(const sc_job *in, sc_job **out, int64_t *absorbed);

/* Each module's first forward GEMM: m (tokens), n (out), k (in); 0 none. */
void sc__shard_forward_dims(const sc_jrank *r, double *fm, double *fn, double *fk);
/* Module m an LM head: a linear outside the layers named as one (lm_head,
 * head, output_layer) or vocabulary-wide (fn >= 16384 outputs). */
int sc__shard_is_head(const sc_job *job, const sc_jrank *r, size_t m, double fn);
/* 0, or SC_EINVAL ("WHAT: FILE has no module paths ...") when a rank of
 * the job has no module paths. */
int sc__job_need_modules(const sc_job *in, const char *what);

/* A deep copy of a job (a .scw round trip in memory; fuse.c). */
int sc__job_clone(const sc_job *in, sc_job **out);

/* FP8 linear layers (fp8.c, `replay` with training.precision fp8): a copy
 * of an ex-situ job whose nn.Linear GEMMs (not the LM head) have the
 * shape classes GEMM8_FWD / _DGRAD / _WGRAD (*n counts them). 0,
 * SC_ENOMEM, SC_EINVAL (no module paths: message set). */
int sc__job_fp8(const sc_job *in, sc_job **out, int64_t *n);

/* The stage cut: first_layer[0..pp] with stage s holding layers
 * [first_layer[s], first_layer[s+1]) of `layers`. Even split (the first
 * layers % pp stages one more), or with first / last (> 0) layers on the
 * first / last stage and the rest even over the others. 0 or SC_EINVAL
 * (message set) when a stage would have no layer. */
int sc__shard_stages(sc_ctx *ctx, int64_t layers, int64_t pp, int64_t first, int64_t last, int64_t *first_layer);

typedef struct sc_shard_opts {
  int64_t tp, pp, dp;
  int64_t micro_batches;      /* 1F1B over this many (>= 1) */
  int64_t first_layers, last_layers; /* uneven stages (0: even) */
  const sc_shard_rule *rules;
  size_t nrules;
  /* The pipeline schedule (SC_SCHED_1F1B 0, GPIPE, INTERLEAVED with vpp
   * model chunks per stage, ZB_H1 with the backward split into input- and
   * weight-gradient passes, ZBV: two chunks per stage in a V, split too).
   * vpp: 0 or 1 but for interleaved (>= 2); ZBV 0 or 2. */
  int schedule;
  int64_t vpp;
  /* FSDP (FULL_SHARD) instead of DDP: 0 off, else the shard group's
   * data-parallel ranks (with their CP peers), which divide dp; fewer than
   * dp is HSDP (the reduced shards all-reduced across dp / fsdp replicas). */
  int64_t fsdp;
  /* Context parallelism: each sequence split over cp ranks (0 or 1: off);
   * rank t + tp x (c + cp x (s + pp x d)). */
  int64_t cp;
  /* Megatron's sequence parallelism with tp > 1 (Korthikanti et al. 2022,
   * section 4.2.2): what TP replicates works on s / tp tokens, all-gathers
   * and reduce-scatters instead of the all-reduces. */
  int sp;
  /* CP exchange (sc_cp_comm): SC_CP_P2P the ring of K/V chunks,
   * SC_CP_A2A Ulysses all-to-alls over heads around the attention core,
   * SC_CP_ALLGATHER K/V all-gathered before it (backward: gathered again,
   * dK/dV reduce-scattered after it). */
  int cp_comm;
  /* FSDP: 1 gathers each unit once per step, at its first use, and keeps
   * it unsharded to the step's end (FSDP2's reshard_after_forward=False
   * under torch pipelining, which also keeps it after each backward); 0
   * re-gathers it for every forward and backward pass. */
  int fsdp_keep;
  /* With sp: async TP (torchtitan's enable_async_tensor_parallel, the
   * micro-pipelined all-gather matmul and matmul reduce-scatter): a GEMM
   * after an SP all-gather runs tp - 1 of its tp row chunks while the
   * gather is under way, the last after it; a forward row-parallel GEMM
   * computes one chunk, then the rest while its output is reduce-scattered. */
  int async_tp;
  /* ZB-V's pass times (its list schedule's): the time in ns of a GPU op
   * as re-shaped (sh: its shape, NULL for none) on the target GPU, called
   * with op_ns_ud; NULL takes the ops' FLOPs instead. */
  double (*op_ns)(void *ud, const sc_jop *op, const sc_jshape *sh);
  void *op_ns_ud;
  /* Expert parallelism (0 or 1: off): the experts of each MoE layer
   * (modules of role expert) spread over ep ranks, ep of the dp replicas
   * (cp 1, no FSDP; with tp > 1 and sp the experts' linears split as
   * their names say, expert TP = tp); each rank runs its experts on the tokens
   * routed to them from the ep ranks, with an all-to-all dispatch before
   * and combine after them over the EP group; the experts' gradients
   * reduced over the expert-data-parallel group (dp / ep replicas). */
  int64_t ep;
} sc_shard_opts;

/* shard.c's pipeline p2p streams: forward send / receive, backward send /
 * receive, and the same four of ZB-V's chunk 1 (the way back up the V). A
 * send on stream id k pairs with the peer's receive on k ^ 1 (with pp = 2
 * and model chunks both directions talk to the same peer). */
enum {
  SC_SHARD_ST_FSEND = 30,
  SC_SHARD_ST_FRECV,
  SC_SHARD_ST_BSEND,
  SC_SHARD_ST_BRECV,
  SC_SHARD_ST_RFSEND,
  SC_SHARD_ST_RFRECV,
  SC_SHARD_ST_RBSEND,
  SC_SHARD_ST_RBRECV
};

/* Group name of the FSDP shard groups (one rank of every replica). */
#define SC_JOB_FSDP_GROUP "fsdp"
/* ... and of the context-parallel groups (the ring's send_recv steps). */
#define SC_JOB_CP_GROUP "context parallel"
/* ... of the expert-parallel groups (the MoE all-to-alls: ep replicas)
 * and the expert-data-parallel ones (an expert's gradient reduction). */
#define SC_JOB_EP_GROUP "expert parallel"
#define SC_JOB_EDP_GROUP "expert data parallel"
/* ... and the expert-tensor-parallel ones (the stage's TP ranks: with tp > 1
 * the dispatched tokens gathered, the experts' outputs reduce-scattered). */
#define SC_JOB_ETP_GROUP "expert tensor parallel"
/* Group name of HSDP's replica groups (the same shard of every replica). */
#define SC_JOB_HSDP_GROUP "hsdp"

/* Group name of the TP groups sc__job_shard makes: replay counts their
 * collectives as TP and never resizes them. */
#define SC_JOB_TP_GROUP "tensor parallel"

/* A new job of o->pp ranks (stage s: global rank s * tp of a world of
 * tp * pp * dp ranks) from `in`'s one rank. 0, SC_ENOMEM, or SC_EINVAL /
 * SC_EUNSUPPORTED with the message (no module paths, heads or features not
 * divisible by tp, fewer layers than stages). */
int sc__job_shard(const sc_job *in, const sc_shard_opts *o, sc_job **out);

#endif /* SC_SHARD_INT_H */
