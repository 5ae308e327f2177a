/*
 * engine_int.h: the discrete-event engine's internal entry point, so tests and
 * future front ends (trace replay) can run a workload they built or edited.
 */
#ifndef SC_ENGINE_INT_H
#define SC_ENGINE_INT_H

#include "cost/cost_int.h"
#include "ir/workload_int.h"

/* Replays wl (built for cfg with cost) and fills out. trace may be NULL.
 * Does not free wl. Returns 0 or an SC_E code with the context message. */
int sc__engine_run(sc_ctx *ctx, const sc_config *cfg, const sc_workload *wl,
                   const sc_cost *cost, sc_write_fn trace, void *trace_ud, sc_result *out);

#endif /* SC_ENGINE_INT_H */
