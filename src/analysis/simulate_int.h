/*
 * simulate_int.h: the pipeline driver behind sc_simulate. A *plan* is a
 * resolved config with what is derived from it once: the model shape and its
 * memory estimate (enough for a sweep to prune a candidate before anything is
 * built); simulating a plan prices it (cost models), synthesises its workload,
 * runs the engine and assembles the sc_result (throughput, FLOPs, MFU,
 * memory) that the engine itself knows nothing of.
 */
#ifndef SC_SIMULATE_INT_H
#define SC_SIMULATE_INT_H

#include "model/memory_int.h"
#include "model/shape_int.h"

typedef struct sc_plan {
  const sc_config *cfg;    /* resolved (borrowed; must outlive the plan) */
  sc_shape shape;
  double memory_peak_bytes; /* fullest stage (memory.c) */
  int64_t memory_peak_stage;
  double memory_capacity_bytes;
} sc_plan;

/* Derives the plan of a resolved config: shape and memory estimate. Returns
 * 0 or SC_EINVAL (a config sc_config_resolve did not accept). */
int sc__plan_init(sc_ctx *ctx, const sc_config *cfg, sc_plan *plan);

/* Bytes simulating the plan would take at most (workload and engine state),
 * estimated without building anything; sc__plan_simulate refuses plans
 * above its limit. */
double sc__plan_estimate_bytes(const sc_plan *plan);

/* Simulates one step of a plan (see sc_simulate for trace and out). */
int sc__plan_simulate(sc_ctx *ctx, const sc_plan *plan, sc_write_fn trace, void *trace_ud,
                      sc_result *out);

#endif /* SC_SIMULATE_INT_H */
