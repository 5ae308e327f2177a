/*
 * schedule.c: the order of forward and backward passes each pipeline stage
 * runs (schedule_int.h): GPipe, 1F1B (PipeDream-flush) and Megatron's
 * interleaved 1F1B, from the shape's stage, micro-batch and chunk counts.
 */
#include "model/schedule_int.h"

size_t sc__schedule_items(const sc_shape *sh, int64_t stage, sc_sched_item *items) {
  int64_t m = sh->m, pp = sh->pp, v = sh->vpp;
  size_t n = 0;
  sc_schedule kind = sh->cfg->parallel.schedule;
  if (v > 1) kind = SC_SCHED_INTERLEAVED;
  if (kind == SC_SCHED_GPIPE) {
    for (int64_t i = 0; i < m; i++) items[n++] = (sc_sched_item){(uint32_t)i, 0, 1};
    for (int64_t i = 0; i < m; i++) items[n++] = (sc_sched_item){(uint32_t)i, 0, 0};
    return n;
  }
  if (kind == SC_SCHED_1F1B) {
    int64_t warm = pp - stage - 1;
    if (warm > m) warm = m;
    int64_t f = 0, b = 0;
    for (; f < warm; f++) items[n++] = (sc_sched_item){(uint32_t)f, 0, 1};
    for (; f < m; f++, b++) {
      items[n++] = (sc_sched_item){(uint32_t)f, 0, 1};
      items[n++] = (sc_sched_item){(uint32_t)b, 0, 0};
    }
    for (; b < m; b++) items[n++] = (sc_sched_item){(uint32_t)b, 0, 0};
    return n;
  }
  /* Interleaved 1F1B (Megatron): virtual micro-batch k maps to chunk
   * (k mod (pp*v)) / pp and micro-batch (k / (pp*v)) * pp + k mod pp; backward
   * walks the chunks in reverse. Warm-up: (pp - stage - 1) * 2 + (v - 1) * pp. */
  int64_t total = m * v;
  int64_t warm = (pp - stage - 1) * 2 + (v - 1) * pp;
  if (warm > total) warm = total;
  int64_t f = 0, b = 0;
#define VMB(k) ((uint32_t)(((k) / (pp * v)) * pp + (k) % pp))
#define FCH(k) ((uint16_t)(((k) % (pp * v)) / pp))
#define BCH(k) ((uint16_t)(v - 1 - ((k) % (pp * v)) / pp))
  for (; f < warm; f++) items[n++] = (sc_sched_item){VMB(f), FCH(f), 1};
  for (; f < total; f++, b++) {
    items[n++] = (sc_sched_item){VMB(f), FCH(f), 1};
    items[n++] = (sc_sched_item){VMB(b), BCH(b), 0};
  }
  for (; b < total; b++) items[n++] = (sc_sched_item){VMB(b), BCH(b), 0};
#undef VMB
#undef FCH
#undef BCH
  return n;
}
