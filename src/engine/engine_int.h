/*
 * engine_int.h: the discrete-event engine. It replays a workload (ir/ir_int.h)
 * over the cost models and returns the step's timeline summary: step time,
 * the breakdown per category and what it ran. It knows nothing of throughput,
 * MFU or memory: the pipeline driver (analysis/simulate.c) and replay derive
 * those from its result.
 */
#ifndef SC_ENGINE_INT_H
#define SC_ENGINE_INT_H

#include "cost/cost_int.h"
#include "ir/ir_int.h"

/* A memory model for the trace's memory counter track (synthesised
 * workloads): bytes a rank of a stage holds all step, and bytes one schedule
 * item (a forward of a micro-batch through a model chunk) adds from its first
 * forward op until its backward ends. */
typedef struct sc_mem_track {
  const void *ud;
  double (*static_bytes)(const void *ud, int64_t stage);
  double (*item_bytes)(const void *ud, int64_t stage, int64_t chunk);
  /* Of item_bytes, what a split backward keeps from the input-grad pass to
   * the weight-grad pass; NULL (or 0): the backward is one pass. */
  double (*item_wgrad_bytes)(const void *ud, int64_t stage, int64_t chunk);
  /* Of item_bytes, what stays after the backward until the step ends (the
   * last pipeline stage's kept outputs); NULL (or 0): nothing. */
  double (*item_kept_bytes)(const void *ud, int64_t stage, int64_t chunk);
} sc_mem_track;

/* Receives every op as it ends on a simulated rank (the HTML report's
 * timeline): the rank (global id) and its pipeline stage, the stream, the op's
 * breakdown category, its start and end, ns. */
typedef void (*sc_op_sink_fn)(void *ud, int64_t rank, int64_t stage, int stream, int cat,
                              int64_t start_ns, int64_t end_ns);

/* Receives the memory counter track as it changes (the HTML report's memory
 * over the step): the rank (global id), its pipeline stage, the time (ns) and
 * the bytes it holds from then on (sc_mem_track's model). */
typedef void (*sc_mem_sink_fn)(void *ud, int64_t rank, int64_t stage, int64_t t_ns, double bytes);

/* What-if variation (analysis/variation.c, docs/WHATIF.md): which ranks the
 * engine simulates and how each differs from the nominal cluster. The set is
 * closed under everything that couples ranks tightly (their TP, CP and EP
 * groups, FSDP shard group and pipeline replica), so a simulated rank of
 * weight w > 1 stands for w - 1 others that behave exactly as it does. */
typedef struct sc_engine_vary {
  size_t n;              /* simulated ranks */
  const int64_t *global; /* their global ranks, ascending */
  const double *weight;  /* ranks each stands for in the breakdown, >= 1 */
  const double *speed;   /* compute speed factor (1 nominal; 0.8: 25% longer kernels) */
  const double *nic;     /* network (NIC) speed factor of the rank */
  const double *nvlink;  /* NVLink speed factor of the rank */
  const uint8_t *mix;    /* 1: the rank is gpu_mix's other GPU; NULL: none is */
  double mix_speed[SC_OP_KIND_COUNT]; /* that GPU's speed per compute op kind */
} sc_engine_vary;

typedef struct sc_engine_opts {
  int fold;                     /* the workload is folded (one rank per class) */
  sc_interference interference; /* how communication slows compute */
  int share_links;              /* concurrent network transfers share the NIC */
  sc_write_fn trace;            /* trace sink (traceout_int.h); NULL: none */
  void *trace_ud;
  const sc_mem_track *mem;      /* memory counter track of the trace; may be NULL */
  sc_op_sink_fn op_sink;        /* every op as it ends; NULL: none (needs an unmerged workload) */
  void *op_sink_ud;
  int critical_path;            /* 1: record the critical path (synthesised workloads) */
  sc_mem_sink_fn mem_sink;      /* the memory track (needs mem; a merged workload is refused) */
  void *mem_sink_ud;
  int trace_format;             /* SC_TRACE_OUT_* of the trace sink */
  /* Ranks in the trace (NULL or 0: every simulated rank); validated by the
   * caller. Folded, a range holds the simulated ranks of its stages. */
  const sc_rank_range *trace_ranks;
  size_t ntrace_ranks;
  /* What-if variation; NULL: none (every rank nominal, fold as asked). With
   * it, the engine simulates vary->global (fold is ignored) and the workload
   * must be built unfolded (no inlined TP collectives). */
  const sc_engine_vary *vary;
} sc_engine_opts;

/* Entries of sc_engine_result.cpath_top. */
#define SC_ENGINE_CPATH_TOP 3

typedef struct sc_engine_result {
  int64_t step_ns;                  /* end of the last op on any rank */
  double breakdown_s[SC_CAT_COUNT]; /* mean over simulated ranks; sums to the step */
  /* Of breakdown_s[SC_CAT_BUBBLE]: the mean idle time above the busiest
   * rank's (the least idle one), i.e. time ranks wait because another rank
   * has more to do, not because of the schedule. */
  double bubble_imbalance_s;
  int64_t world;                    /* ranks of the job */
  int64_t simulated_ranks;          /* ranks the engine ran (folded or all) */
  int64_t ops;                      /* ops executed over simulated ranks (unmerged count) */
  int64_t events;                   /* events processed (unmerged count) */
  /* The critical path, with sc_engine_opts.critical_path and at most 16M ops
   * (else cpath_ops is 0): the chain of ops, each started by the end of the
   * one before, that ends the step. Its time per category (sums to the step)
   * and the (stage, stream) pairs holding most of it, largest first
   * (stream SC_ST_*; s 0 past the last). */
  int64_t cpath_ops;
  double cpath_s[SC_CAT_COUNT];
  struct {
    int64_t stage;
    int stream;
    double s;
  } cpath_top[SC_ENGINE_CPATH_TOP];
  /* The simulated ranks holding most of the critical path, largest first
   * (s 0 past the last): global rank and the ranks it stands for. */
  struct {
    int64_t rank, weight;
    double s;
  } cpath_rank[SC_ENGINE_CPATH_TOP];
} sc_engine_result;

/* Replays wl with the cost models and fills out. Does not free wl. Returns
 * 0 or an SC_E code with the context message (SC_EDEADLOCK when programs
 * cannot complete, the trace sink's error when it fails). */
int sc__engine_run(sc_ctx *ctx, const sc_workload *wl, const sc_cost *cost,
                   const sc_engine_opts *opts, sc_engine_result *out);

/* A lower bound on the step time sc__engine_run gives a synthesised workload
 * (bound.c), folded (one rank per stage), in ns, without an event queue: every
 * op starts after its stream's previous op and its dependencies, a send and
 * its receive start together, compute ops take their work at full speed and
 * communication takes no time (collectives wait for no other member). The
 * engine keeps all of these constraints and can only add time (transfers,
 * rendezvous, slower rates), so *bound_ns <= its step_ns. 0 for explicit
 * workloads or programs that cannot complete. Returns 0 or SC_ENOMEM. */
int sc__engine_lower_bound(sc_ctx *ctx, const sc_workload *wl, int64_t *bound_ns);

/* A looser lower bound than sc__engine_lower_bound, of a synthesised
 * workload's step (ns): the largest sum, over one program's stream, of its
 * compute ops' work at full speed (a merged compute stream's ops include
 * their waits for inlined TP collectives, sc_op.tp_ns). The ops of a stream
 * run one after another, so the replay's bound, and the engine's step, can
 * only be later. Also holds for a workload built with only some programs
 * (sc__workload_build_stage) against the engine's step of the whole one;
 * against the replay's bound of the whole one only when both inline TP or
 * neither does (the replay times TP collectives at 0). 0 for explicit
 * workloads. */
int64_t sc__engine_compute_bound(const sc_workload *wl);

#endif /* SC_ENGINE_INT_H */
