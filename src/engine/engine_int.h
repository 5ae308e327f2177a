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
} sc_mem_track;

typedef struct sc_engine_opts {
  int fold;                     /* the workload is folded (one rank per class) */
  sc_interference interference; /* how communication slows compute */
  int share_links;              /* concurrent network transfers share the NIC */
  sc_write_fn trace;            /* Chrome trace sink; NULL: none */
  void *trace_ud;
  const sc_mem_track *mem;      /* memory counter track of the trace; may be NULL */
} sc_engine_opts;

typedef struct sc_engine_result {
  int64_t step_ns;                  /* end of the last op on any rank */
  double breakdown_s[SC_CAT_COUNT]; /* mean over simulated ranks; sums to the step */
  int64_t world;                    /* ranks of the job */
  int64_t simulated_ranks;          /* ranks the engine ran (folded or all) */
  int64_t ops;                      /* ops executed over simulated ranks (unmerged count) */
  int64_t events;                   /* events processed (unmerged count) */
} sc_engine_result;

/* Replays wl with the cost models and fills out. Does not free wl. Returns
 * 0 or an SC_E code with the context message (SC_EDEADLOCK when programs
 * cannot complete, the trace sink's error when it fails). */
int sc__engine_run(sc_ctx *ctx, const sc_workload *wl, const sc_cost *cost,
                   const sc_engine_opts *opts, sc_engine_result *out);

#endif /* SC_ENGINE_INT_H */
