/*
 * schedule_int.h: pipeline schedules. The order in which one pipeline stage
 * runs the forward and backward passes of its micro-batches and model chunks
 * (GPipe, 1F1B, interleaved 1F1B), derived from the shape alone, so that the
 * workload synthesiser and the memory model walk the same order.
 */
#ifndef SC_SCHEDULE_INT_H
#define SC_SCHEDULE_INT_H

#include "model/shape_int.h"

/* One schedule item: a forward or backward pass of micro-batch mb through
 * model chunk `chunk` of the stage. */
typedef struct sc_sched_item {
  uint32_t mb;
  uint16_t chunk;
  uint8_t fwd;
} sc_sched_item;

/* Items per stage: 2 * m * vpp. */
static inline size_t sc__schedule_len(const sc_shape *sh) {
  return (size_t)(2 * sh->m * sh->vpp);
}

/* Fills items[sc__schedule_len(sh)] with the order stage `stage` runs its
 * passes in (the config's parallel.schedule; interleaved whenever vpp > 1).
 * Returns the count. */
size_t sc__schedule_items(const sc_shape *sh, int64_t stage, sc_sched_item *items);

#endif /* SC_SCHEDULE_INT_H */
