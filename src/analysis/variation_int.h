/*
 * variation_int.h: what-if variation (the `variation:` section,
 * docs/WHATIF.md). From a resolved config and the workload's rank mapping,
 * sc__vary_plan decides which ranks differ from nominal (slow GPUs, per-GPU
 * variability, degraded NICs or NVLink, another GPU type), which ranks the
 * engine must simulate so that every rank it does not simulate behaves
 * exactly like one it does, and each simulated rank's factors and weight
 * (engine_int.h's sc_engine_vary). sc__vary_goodput turns a step time into
 * the run's goodput under failures. Not API.
 */
#ifndef SC_VARIATION_INT_H
#define SC_VARIATION_INT_H

#include "engine/engine_int.h"
#include "input/vary_int.h"

typedef struct sc_vary_plan {
  sc_engine_vary ev;      /* what the engine reads (points into the arrays below) */
  int64_t *global;
  double *weight, *speed, *nic, *nvlink;
  uint8_t *mix;
  size_t cap;             /* entries of each array */
  int64_t varied;         /* ranks whose factors differ from nominal */
  int64_t replicas;       /* pipeline replicas (dp indices) simulated in full */
  double slowest_speed;   /* smallest compute factor of any rank (1: none slower) */
  int64_t mix_ranks;      /* ranks on gpu_mix's GPU */
  char mix_gpu[32];       /* its preset name; "" none */
  double mix_hbm_gib;     /* its memory capacity */
  uint8_t *mix_stage;     /* per pipeline stage: 1 when a rank of it is on that GPU */
  int64_t pp;
} sc_vary_plan;

/* Plans the variation of a resolved config over the workload's mapping;
 * cost is the run's (the nominal GPU). 0, SC_ENOMEM, or SC_EINVAL with a
 * `file:line:` message (a rank or node outside the job, an unknown GPU). */
int sc__vary_plan(sc_ctx *ctx, const sc_config *cfg, const sc_mapping *map, const sc_cost *cost,
                  sc_vary_plan *vp);
void sc__vary_plan_free(sc_ctx *ctx, sc_vary_plan *vp);

/* Goodput of the run under variation.failures / gpu_mtbf_hours and
 * checkpointing: steps of the run, failures expected, the wall time of the
 * run and the fraction of it spent on steps that count. */
typedef struct sc_goodput {
  int64_t steps;
  double failures;
  double run_s, ideal_s, lost_s, checkpoint_s, restart_s;
  double goodput; /* ideal_s / run_s */
} sc_goodput;

/* 0 with *g filled (g->steps 0: nothing to say, neither failures nor an
 * MTBF given); SC_EINVAL with a message when the run cannot finish (the
 * failures come faster than the work they lose) or a failure step lies past
 * the run. */
int sc__vary_goodput(sc_ctx *ctx, const sc_config *cfg, double step_s, double tokens_per_step,
                     int64_t world, sc_goodput *g);

#endif /* SC_VARIATION_INT_H */
