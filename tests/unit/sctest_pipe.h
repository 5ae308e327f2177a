/*
 * sctest_pipe.h: helpers for the unit tests that drive the pipeline's stages
 * one by one (shape, cost models, workload synthesis, engine) instead of
 * through sc_simulate. Header-only, test code only.
 */
#ifndef SC_TEST_PIPE_H
#define SC_TEST_PIPE_H

#include "engine/engine_int.h"
#include "model/shape_int.h"
#include "synth/synth_int.h"

/* Engine options a resolved config implies, as the pipeline driver sets
 * them (without the memory counter track). */
static inline sc_engine_opts sc_test_engine_opts(const sc_config *cfg, sc_write_fn trace,
                                                 void *ud) {
  sc_engine_opts o = {cfg->simulation.fold, cfg->simulation.interference,
                      cfg->simulation.share_links, trace, ud, NULL, NULL, NULL, 0, NULL, NULL,
                      SC_TRACE_OUT_JSON, NULL, 0, NULL};
  return o;
}

/* Runs the engine on wl with the options of cfg. */
static inline int sc_test_engine(sc_ctx *ctx, const sc_config *cfg, const sc_workload *wl,
                                 const sc_cost *cost, sc_write_fn trace, void *ud,
                                 sc_engine_result *r) {
  sc_engine_opts o = sc_test_engine_opts(cfg, trace, ud);
  return sc__engine_run(ctx, wl, cost, &o, r);
}

/* Step time of an engine result, seconds. */
static inline double sc_test_step_s(const sc_engine_result *r) { return (double)r->step_ns / 1e9; }

/* Shape of a resolved config, then its workload with flags (SC_WL_*). */
static inline int sc_test_build(sc_ctx *ctx, const sc_config *cfg, const sc_cost *cost,
                                unsigned flags, sc_shape *sh, sc_workload *wl) {
  int rc = sc__shape_init(ctx, cfg, sh);
  return rc ? rc : sc__workload_build_ex(ctx, sh, cost, flags, wl);
}

#endif /* SC_TEST_PIPE_H */
