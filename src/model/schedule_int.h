/*
 * schedule_int.h: pipeline schedules. The order in which one pipeline stage
 * runs the forward and backward passes of its micro-batches and model chunks
 * (GPipe, 1F1B, interleaved 1F1B, the zero-bubble ZB-H1 and ZB-V,
 * DeepSeek-V3's DualPipe and its cut-in-half DualPipe-V), derived
 * from the shape alone, so that the workload synthesiser and the memory
 * model walk the same order.
 */
#ifndef SC_SCHEDULE_INT_H
#define SC_SCHEDULE_INT_H

#include "model/shape_int.h"

/* A pass: forward, backward (the whole backward, or only the input grads
 * when the schedule splits it), weight grads (split schedules only). */
enum { SC_PASS_F = 0, SC_PASS_B, SC_PASS_W };

/* One schedule item: pass `pass` of micro-batch mb through model chunk
 * `chunk` of the stage. fb is 1 on the two items of a DualPipe F&B chunk
 * (a forward, then the backward of another micro-batch it overlaps with:
 * each hides its EP all-to-alls behind the other's compute), else 0. */
typedef struct sc_sched_item {
  uint32_t mb;
  uint16_t chunk;
  uint8_t pass;
  uint8_t fb;
} sc_sched_item;

/* 1 when the schedule splits the backward into B and W passes (ZB-H1, ZB-V,
 * DualPipe, DualPipe-V; DualPipe runs most backwards whole, as a B item
 * followed at once by its W). */
static inline int sc__schedule_split(const sc_shape *sh) {
  sc_schedule k = sh->cfg->parallel.schedule;
  return k == SC_SCHED_ZB_H1 || k == SC_SCHED_ZBV || k == SC_SCHED_DUALPIPE ||
         k == SC_SCHED_DUALPIPEV;
}

/* 1 when the stage orders come only from sc__schedule_all (ZB-V's list
 * schedule; DualPipe's and DualPipe-V's per-stage step tables, built there
 * with their F&B marks): the iterator then gives nothing. */
static inline int sc__schedule_whole(const sc_shape *sh) {
  sc_schedule k = sh->cfg->parallel.schedule;
  return k == SC_SCHED_ZBV || k == SC_SCHED_DUALPIPE || k == SC_SCHED_DUALPIPEV;
}

/* Items per stage: 2 * m * vpp, or 3 * m * vpp with split backwards
 * (DualPipe: vpp 1, its two chunks running m / 2 micro-batches each). */
static inline size_t sc__schedule_len(const sc_shape *sh) {
  return (size_t)((sc__schedule_split(sh) ? 3 : 2) * sh->m * sh->vpp);
}

/* Walks stage `stage`'s order one item at a time, in constant memory (every
 * schedule but those of sc__schedule_whole: next returns 0 at once). next
 * returns 1 and the item, or 0 after the last. */
typedef struct sc_sched_iter {
  const sc_shape *sh;
  int64_t stage, total, warm, defer, f, b, w;
  int kind, step;
} sc_sched_iter;
void sc__schedule_begin(const sc_shape *sh, int64_t stage, sc_sched_iter *it);
int sc__schedule_next(sc_sched_iter *it, sc_sched_item *out);

/* Fills items[pp * sc__schedule_len(sh)] with every stage's order, stage by
 * stage: the config's parallel.schedule (interleaved whenever vpp > 1 and
 * the schedule is not zbv or dualpipev). ZB-V's order comes from a
 * unit-time list schedule of the whole pipeline, DualPipe's and
 * DualPipe-V's from their step tables, the others from their formulas. 0,
 * SC_ENOMEM or SC_EINTERNAL (with a message). */
int sc__schedule_all(sc_ctx *ctx, const sc_shape *sh, sc_sched_item *items);

/* Micro-batch and chunk of the k-th forward of an interleaved stage
 * (Megatron's schedule table: micro-batches in groups of pp per chunk);
 * backward k runs the same micro-batch through chunk vpp - 1 - chunk. When
 * pp does not divide m the table is that of m rounded up to a multiple of
 * pp, and the iterator skips the padding micro-batches (mb >= m): Megatron's
 * own flexible table (a last group of m mod pp) with its warm-up count is
 * not executable for some (pp, vpp, m), e.g. pp 8, vpp 3, m 9 (stage 0's
 * warm-up forwards wait for stage 7 forwards that wait for stage 0's first
 * backward); the padded order keeps the even schedule's dependencies, so it
 * never deadlocks (checked for pp 2-16, vpp 2-6, m 1 to 5 pp + 2). */
void sc__schedule_interleaved_fwd(const sc_shape *sh, int64_t k, uint32_t *mb, uint16_t *chunk);

/* Warm-up forwards of stage `stage` before its first backward (1F1B, ZB-H1:
 * pp - stage - 1; interleaved: (pp - stage - 1) * 2 + (vpp - 1) * pp
 * positions of the padded table, padding included), at most the forwards it
 * runs. */
int64_t sc__schedule_warmup(const sc_shape *sh, int64_t stage);

/* ZB-V's list schedule (sc__schedule_all's for parallel.schedule zbv) over
 * pp stages and m micro-batches with the given time of a model chunk's
 * forward, input-grad and weight-grad pass (t[SC_PASS_F], t[SC_PASS_B],
 * t[SC_PASS_W], >= 0, any unit: only their ratio matters). The
 * synthesiser estimates them from the shape; shard.c, re-targeting a traced
 * job, from the traced operators. Fills items[pp * 6 * m], stage by stage.
 * 0, SC_ENOMEM or SC_EINTERNAL (with a message). */
int sc__schedule_zbv(sc_ctx *ctx, int64_t pp, int64_t m, const double t[3], sc_sched_item *items);

/* ZB-V keeps at most this many model-chunk passes in flight (forward run,
 * weight grads not yet) on a stage: 2 * pp, the activations of pp whole
 * micro-batches, as 1F1B's first stage. */
static inline int64_t sc__schedule_zbv_limit(const sc_shape *sh) { return 2 * sh->pp; }

#endif /* SC_SCHEDULE_INT_H */
