/*
 * replay_int.h: the replay driver behind sc_replay (analysis/replay.c) with
 * the engine's op sink, for the HTML report's timeline of a replayed job
 * (analysis/html.c). Not API.
 */
#ifndef SC_REPLAY_INT_H
#define SC_REPLAY_INT_H

#include "engine/engine_int.h"
#include "stepcast/trace.h"

/* sc_replay_traced (topts NULL: JSON of every replayed rank), handing
 * every op the engine runs to sink (NULL: none) as it ends; the same
 * result. */
int sc__replay_run(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *opts,
                   const sc_trace_opts *topts, sc_write_fn trace, void *trace_ud,
                   sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out);

/* The time replay prices a shaped (ex-situ) op at, on cost (kfit.c). */
struct sc_jrank;
struct sc_jop;
double sc__replay_priced_ns(const sc_cost *c, const struct sc_jrank *r, const struct sc_jop *jo, int fp8_recipe);

#endif /* SC_REPLAY_INT_H */
