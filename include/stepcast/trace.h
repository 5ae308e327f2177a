/*
 * trace.h: profile-and-predict. Profiler traces of a real training step
 * (PyTorch Kineto JSON, plain/gzip/zstd; Chakra execution traces, protobuf
 * or PyTorch host JSON) are imported into a *job*: per-rank programs of
 * measured GPU kernels, copies, collectives and the host's launch timeline,
 * with their dependencies and communication groups. A job is saved as a
 * `.scw` file (format in docs/SCW.md) and replayed by the engine, as traced
 * or re-targeted to another data-parallel scale and cluster.
 *
 * Ownership: sc_job and sc_trace_reader are opaque, created by the calls
 * below and freed by sc_job_free / sc_trace_free. Both borrow the sc_ctx they
 * were created with, which must outlive them. A reader adds one rank to the
 * job it was opened on. Strings returned are borrowed from the job.
 * Units: nanoseconds (int64) for times inside a job, seconds in results,
 * bytes, FLOPs.
 */
#ifndef STEPCAST_TRACE_H
#define STEPCAST_TRACE_H

#include "stepcast/stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- jobs */

typedef struct sc_job sc_job;

/* Creates an empty job. Returns 0 or SC_ENOMEM. */
int sc_job_new(sc_ctx *ctx, sc_job **out);
void sc_job_free(sc_job *job);

/* Counts over the whole job (for summaries and tests). */
typedef struct sc_job_info {
  int64_t world;          /* ranks of the traced job */
  int64_t ranks;          /* ranks with a program in the job */
  int64_t ops;            /* ops over all ranks (host ops included) */
  int64_t gpu_ops;        /* kernels, copies, memsets, collectives, p2p */
  int64_t collectives;
  int64_t p2p;
  int64_t host_ops;
  int64_t deps;           /* explicit dependencies */
  int64_t groups;         /* communication groups */
  int64_t iterations;     /* profiler steps covered (max over ranks) */
  int64_t warnings;       /* counted import warnings */
  int64_t priced_ops;     /* ops to be priced at replay (ex-situ traces) */
  int64_t grads;          /* gradient-ready marks (ex-situ traces) */
  int64_t modules;        /* nn.Module table entries (max over ranks; module paths: ex-situ traces, Kineto
                           * traces with module annotations) */
  int64_t module_ops;     /* ops with a module or pass */
  double traced_step_s;   /* measured time per iteration (max over ranks); 0 if unknown */
  double gemm16_share;    /* priced GEMMs (ex-situ): the share of their FLOPs on 16-bit operands
                           * (their bytes per element, from the traced dtypes); 0 without any */
} sc_job_info;

void sc_job_get_info(const sc_job *job, sc_job_info *info);

/* Writes the counted import warnings, one line each ("12 x file: message"). */
int sc_job_write_warnings(const sc_job *job, sc_write_fn w, void *ud);

/* Completes a job once all ranks are imported, before sc_job_write or
 * sc_replay: settles the world size (and the groups of collectives over
 * the whole job when the traces did not give it), then checks distinct
 * ranks and that every traced member of a group issues the same
 * collectives in the same order. Returns 0 or SC_EINVAL with the message. */
int sc_job_finish(sc_job *job);

/* Serialises the job as a .scw file through w. Returns 0 or the sink's error. */
int sc_job_write(const sc_job *job, sc_write_fn w, void *ud);
/* Reads a .scw image (name for messages). Every count, index and length is
 * bounds-checked, every number checked against its range (docs/SCW.md,
 * "Bounds") and the checksum verified: a damaged or out-of-range file gives
 * SC_EINVAL ("name:offset: message", "name:offset: field: value out of
 * range [lo, hi]"), never a crash. */
int sc_job_read(sc_ctx *ctx, const char *name, const void *buf, size_t len, sc_job **out);

/* ---------------------------------------------------------------- import */

typedef enum {
  SC_TRACE_KINETO = 0, /* PyTorch profiler (Kineto) Chrome-trace JSON */
  SC_TRACE_CHAKRA,     /* Chakra ET protobuf, or PyTorch host execution trace JSON */
  SC_TRACE_CPU,        /* ex-situ: a step profiled on a CPU (operators with input shapes,
                        * tools/trace_torch.py); kernels are priced at replay */
  SC_TRACE_CPU_OF_GPU  /* ex-situ pricing of a step profiled on a GPU: its operators as
                        * SC_TRACE_CPU, its kernels ignored, its measured step kept as the
                        * traced step to compare with */
} sc_trace_format;

typedef struct sc_trace_reader sc_trace_reader;

/* Opens a reader that will add one rank to job from one trace file. name is
 * used in messages ("name:offset: ..."). rank_hint is the rank to use when
 * the trace does not say (-1: the order of opening). Returns 0 or SC_ENOMEM. */
int sc_trace_open(sc_job *job, sc_trace_format fmt, const char *name, int64_t rank_hint,
                  sc_trace_reader **out);
/* Feeds the next bytes of the file, exactly as stored: gzip and zstd are
 * recognised by their magic numbers and decompressed on the fly, so every
 * encoding takes the same path. Buffers may split the data anywhere.
 * Returns 0 or SC_EINVAL / SC_EREAD / SC_ENOMEM with "name:offset: message". */
int sc_trace_feed(sc_trace_reader *r, const void *buf, size_t len);
/* Ends the input, builds the rank's program and adds it to the job.
 * Returns 0 or an error (truncated input, missing fields, ...). */
int sc_trace_finish(sc_trace_reader *r);
/* Frees a reader (finished or not). */
void sc_trace_free(sc_trace_reader *r);
/* Decompressed bytes consumed so far. */
uint64_t sc_trace_bytes(const sc_trace_reader *r);

/* ---------------------------------------------------------------- replay */

typedef enum {
  SC_REPLAY_COMM_AUTO = 0, /* measured when not re-targeted, else model */
  SC_REPLAY_COMM_MEASURED, /* collectives take their traced duration */
  SC_REPLAY_COMM_MODEL     /* collectives priced by the comm model */
} sc_replay_comm;

typedef struct sc_replay_opts {
  int64_t scale_dp;       /* 0: as traced; else the new data-parallel degree */
  int64_t replica_ranks;  /* ranks per model replica (default 1: pure DP) */
  sc_replay_comm comm;
  /* Data parallelism of a job with gradient marks (ex-situ traces): PyTorch
   * DDP with buckets of this size in MiB (0: 25) and a first bucket of
   * ddp_first_bucket_mb (0: 1), added when replayed at more replicas than
   * traced, or always with ddp = 1. */
  double ddp_bucket_mb;
  double ddp_first_bucket_mb;
  int ddp;                /* 1: add DDP even at the traced scale (a DDP job of one rank) */
  /* Tensor and pipeline parallelism of an ex-situ job with module paths
   * (docs/TRACE.md, "Re-targeting to TP and PP"): 0 or 1 keeps the traced
   * process whole. cp: context parallelism (ring attention). micro_batches: of
   * the pipeline schedule (0: pp). shard_rules: an override file's text (NULL
   * none), shard_rules_len its bytes, shard_rules_name for messages.
   * first_layers / last_layers: uneven stages (0: even). */
  int64_t scale_tp, scale_pp, scale_cp;
  int64_t micro_batches;
  /* The pipeline schedule of a tp / pp re-target: SC_SCHED_1F1B (0),
   * GPIPE, INTERLEAVED (vpp >= 2 model chunks per stage, 0: 2), ZB_H1
   * (backward split into input- and weight-gradient passes) or ZBV (split,
   * two chunks per stage in a V: vpp 0 or 2); DualPipe refused. */
  sc_schedule schedule;
  int64_t vpp;
  /* FSDP (FULL_SHARD) instead of DDP on an ex-situ job with module paths:
   * 0 or 1 off, else the shard group's data-parallel ranks, which divide
   * scale_dp (0 there takes this); each shard group also holds its ranks'
   * CP peers. Per layer parameter all-gathers and gradient reduce-scatters
   * within the group, and with fewer than scale_dp (HSDP) an all-reduce of
   * each reduced shard across the dp / fsdp replicas (docs/TRACE.md,
   * "FSDP"). */
  int64_t scale_fsdp;
  /* Expert parallelism of an ex-situ job's MoE layers (0 or 1: off): their
   * experts spread over scale_ep of the scale_dp replicas, all-to-all
   * dispatch and combine over the EP group (with scale_tp > 1, which needs
   * sequence_parallel, the routed tokens gathered over the expert-TP group
   * too), the experts' gradients reduced over the expert-data-parallel
   * group (docs/TRACE.md, "Expert parallelism"). */
  int64_t scale_ep;
  /* With scale_fsdp: 1 gathers each unit's parameters once per step and
   * keeps them unsharded to its end (FSDP2 with reshard_after_forward=False
   * under torch pipelining, as torchtitan's PP runs); 0 gathers them again
   * for every forward and backward pass (FULL_SHARD). */
  int fsdp_keep;
  /* With sequence_parallel: async TP (torchtitan's micro-pipelined
   * all-gather matmul and matmul reduce-scatter; docs/TRACE.md, "Sequence
   * parallelism"). */
  int async_tp;
  /* Megatron's sequence parallelism with scale_tp >= 2: norms, residuals
   * and dropout on s / tp tokens, all-gathers and reduce-scatters instead
   * of the TP all-reduces (docs/TRACE.md, "Sequence parallelism"). */
  int sequence_parallel;
  /* The CP exchange of a re-target with scale_cp > 1 (sc_cp_comm):
   * SC_CP_P2P the ring of K/V chunks, SC_CP_A2A Ulysses all-to-alls over
   * heads, SC_CP_ALLGATHER K/V all-gathered (dK/dV reduce-scattered);
   * SC_CP_A2A_P2P is refused. */
  int cp_comm;
  /* torch.compile: the memory-bound kernels of a layer's pass between two
   * other kernels fused into one (ex-situ jobs; docs/TRACE.md, "Compiled
   * blocks"). */
  int compile;
  int fp8_done;               /* internal: the job's FP8 linears are marked (fp8.c) */
  int64_t first_layers, last_layers;
  const char *shard_rules;
  size_t shard_rules_len;
  const char *shard_rules_name;
  /* Layer-count extrapolation of an ex-situ job with module paths
   * (docs/TRACE.md, "More layers than traced"): 0 as traced, else the
   * layers the replayed job runs, the last traced layer's operators
   * repeated (before any --scale re-target). */
  int64_t layers;
} sc_replay_opts;

typedef struct sc_replay_result {
  int64_t world;              /* ranks of the simulated job */
  int64_t traced_world;
  int64_t dp, traced_dp;      /* data-parallel degrees */
  int64_t tp, pp, cp;         /* tensor / pipeline / context parallel degrees (1: as traced) */
  int64_t micro_batches;      /* of the pipeline schedule (1 without re-targeting) */
  sc_schedule schedule;       /* of a re-targeted pipeline (SC_SCHED_1F1B otherwise) */
  int64_t vpp;                /* model chunks per stage (1 but interleaved) */
  int64_t fsdp;               /* FSDP shard group (0: none) */
  int64_t ep;                 /* expert-parallel degree (1: none) */
  int sequence_parallel;      /* 1: re-targeted with sequence parallelism */
  int cp_comm;                /* the CP exchange (sc_cp_comm) */
  int async_tp;               /* 1: SP collectives chunk-overlapped with their GEMMs */
  int fsdp_keep;              /* 1: FSDP units gathered once per step and kept */
  int64_t fused_kernels;      /* --compile: kernels fused into the one before them (per traced rank) */
  int64_t fp8_gemms;          /* precision fp8: linear-layer GEMMs on FP8 operands (per traced rank) */
  int64_t simulated_ranks;
  int64_t iterations;
  int64_t ops, events;
  double traced_step_s;       /* traced time per iteration; 0 if unknown */
  double predicted_step_s;    /* simulated time per iteration */
  double error_pct;           /* signed, predicted vs traced (as traced, on the traced GPU, only) */
  const char *traced_gpu;     /* an ex-situ GPU trace replayed on another GPU: the preset it
                               * was traced on (no error against its step); NULL otherwise */
  double breakdown_s[SC_CAT_COUNT]; /* per iteration, mean over simulated ranks */
  double gpu_busy_s;          /* traced GPU time per iteration, mean over ranks */
  int64_t modelled_collectives; /* collectives priced by the comm model */
  int64_t measured_collectives; /* collectives that kept their traced duration */
  int64_t merged_streams;     /* GPU streams that had to share an engine stream */
  int64_t priced_ops;         /* ops priced by the cost models (ex-situ traces) */
  int64_t ddp_buckets;        /* DDP all-reduces per step (0: no DDP) */
  const char *comm;           /* "measured" or "model" */
  const char *gpu;            /* hardware preset used */
  int64_t layers, traced_layers; /* extrapolated layer count and the traced one (0, 0: as traced) */
} sc_replay_result;

/* ---------------------------------------------------------------- kernel fit */

/* `calibrate --kernels`: the compute model's efficiencies fitted to the
 * measured kernels of GPU traces imported with SC_TRACE_CPU_OF_GPU (each
 * priced operator's kernels against the kernel time the trace measured for
 * it; in memory only: a job read back from .scw has none). Classes:
 * GEMMs and convolutions (gemm_eff), streaming memory-bound kernels
 * (mem_eff), fused attention (attn_eff) and SDPA's cuDNN attention
 * (cudnn_attn_eff); normalisations, host work and collectives are not
 * fitted. */
enum { SC_KFIT_GEMM = 0, SC_KFIT_MEM, SC_KFIT_ATTN, SC_KFIT_CUDNN, SC_KFIT_COUNT };
typedef struct sc_kernel_fit_class {
  int64_t ops;                /* operators with a measured time */
  double measured_s;          /* their measured kernel time, summed over the job */
  double before_s, after_s;   /* priced, before and after the fit */
  double mape_before, mape_after; /* per operator, % */
  double before, after;       /* the parameter; after == before when too few ops (< 3) */
  int at_bound;               /* 1: no value in [0.05, 1] prices the measured total */
} sc_kernel_fit_class;
typedef struct sc_kernel_fit {
  sc_kernel_fit_class cls[SC_KFIT_COUNT];
  int64_t unmatched;          /* priced operators without a measured kernel time */
  const char *gpu;            /* the preset fitted for */
  /* The compute parameters the fit kept (its starting point), so that the
   * calibration it writes is whole: */
  double gemm_dim_half, kernel_overhead_us, fp8_gemm_eff, scores_mem_eff;
} sc_kernel_fit;

/* Fits, class by class (memory-bound first, then GEMMs, attention), the
 * efficiency at which the operators' priced times sum to their measured
 * ones, by bisection over [0.05, 1] (per-operator errors reported, not
 * fitted). cfg (resolved) gives the GPU, the precision and
 * the starting calibration. SC_EINVAL when the job holds no measured
 * kernel times. */
int sc_calibrate_kernels(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, sc_kernel_fit *out);
/* The fit's table (text) and its `calibration:` mapping (YAML: the four
 * efficiencies, fitted or kept, and the compute parameters the fit kept;
 * note: a comment line, e.g. the traces). */
int sc_kernel_fit_report(const sc_kernel_fit *f, sc_write_fn w, void *ud);
int sc_kernel_fit_write_calibration(const sc_kernel_fit *f, const char *note, sc_write_fn w, void *ud);

/* Replays job with the engine. cfg (resolved) supplies the cluster, cost
 * parameters and simulation switches; its model/parallel sections are not
 * used. trace, if non-NULL, receives a Chrome trace of the replay. */
int sc_replay(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *opts,
              sc_write_fn trace, void *trace_ud, sc_replay_result *out);

/* sc_replay with a trace in the format and of the ranks topts names
 * (sc_trace_opts, stepcast.h; NULL: JSON of every replayed rank). Ranks
 * are global ranks of the replay's world (re-targeted: dp x replica_ranks);
 * each range must hold a traced rank, the only ones replayed. Ranks
 * outside either are SC_EINVAL before anything runs. */
int sc_replay_traced(sc_ctx *ctx, const sc_job *job, const sc_config *cfg,
                     const sc_replay_opts *opts, const sc_trace_opts *topts, sc_write_fn trace,
                     void *trace_ud, sc_replay_result *out);

/* Size of the trace sc_replay_traced would write, bytes, from the job's op
 * counts and names of the chosen ranks (within ~10 % on the shipped
 * traces; DDP's added bucket all-reduces, tens a step, are not counted):
 * for refusing a trace that would fill a disk. SC_EINVAL for ranks as
 * sc_replay_traced refuses them. */
int sc_replay_trace_estimate(sc_ctx *ctx, const sc_job *job, const sc_replay_opts *opts,
                             const sc_trace_opts *topts, double *bytes);

/* Picks the hardware preset matching the GPU the trace was recorded on
 * ("NVIDIA A100-SXM4-80GB" -> "a100-80gb"); NULL when unknown. */
const char *sc_job_gpu_preset(const sc_job *job);

/* Formats a replay result as text or one JSON object. */
int sc_replay_format(const sc_replay_result *res, sc_format fmt, sc_write_fn w, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_TRACE_H */
