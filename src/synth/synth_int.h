/*
 * synth_int.h: the workload synthesiser, which turns a resolved config into
 * the per-stage programs of the workload IR (ir/ir_int.h): Megatron-style
 * transformer layers under tensor, pipeline and data parallelism, priced by
 * the cost models. The pipeline driver (analysis/simulate.c) calls it.
 */
#ifndef SC_SYNTH_INT_H
#define SC_SYNTH_INT_H

#include "cost/cost_int.h"
#include "ir/ir_int.h"
#include "model/shape_int.h"

/* Builds the per-stage programs of a shape (and its resolved config) with
 * compute durations from the cost model. Returns 0 or an SC_E code; free
 * with sc__workload_free. */
int sc__workload_build(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost, sc_workload *wl);

/* Build flags. SC_WL_MERGE: a smaller workload that the engine replays to
 * the same result, bit for bit, when compute runs at rate 1 (simulation
 * interference none) and nobody looks at single ops (no trace):
 *  - each run of consecutive compute ops in which no op but the first waits
 *    for another stream and no op but the last is waited for by another
 *    stream becomes one op, whose work is the sum of the ops' whole-ns
 *    durations (sc__duration_ns): each op starts exactly when the previous
 *    one ends and nothing else can see the boundary;
 *  - folded runs with the TP group inside one node also inline the TP
 *    collectives that follow a compute op (they then run alone, at rate 1,
 *    at a time the builder knows): a merged op then includes the time its
 *    compute waited for them, counted as exposed TP communication
 *    (sc_op.tp_ns). chain.c ("merging") lists the conditions that keep
 *    this exact; the builder checks them and builds without inlining when
 *    one fails.
 * sc_program.nmerged keeps the unmerged op count, so the reported ops and
 * events do not change either.
 * SC_WL_UNFOLDED: never inline (a what-if variation simulates several
 * members of a TP group even when simulation.fold is on). */
enum { SC_WL_MERGE = 1, SC_WL_UNFOLDED = 2 };

/* sc__workload_build with flags (SC_WL_*). */
int sc__workload_build_ex(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost,
                          unsigned flags, sc_workload *wl);

/* Builds program `stage` (0 <= stage < pp) only, the others left empty
 * (nops 0): the program sc__workload_build_ex gives that stage, except that
 * TP inlining is given up only when this stage cannot inline (the whole
 * build gives it up when any stage cannot; the stage's compute ops are the
 * same, their inlined TP waits, sc_op.tp_ns, are then the time the engine's
 * compute stream waits for those collectives). For a bound from one stage's
 * compute (sc__engine_compute_bound) at about 1/pp of the cost. */
int sc__workload_build_stage(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost,
                             unsigned flags, int64_t stage, sc_workload *wl);

#endif /* SC_SYNTH_INT_H */
