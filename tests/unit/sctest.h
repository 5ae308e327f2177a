/*
 * sctest.h: helpers shared by the unit tests: a growing in-memory output
 * sink (for traces, reports, .scw files) and an allocator hook that fails one
 * chosen allocation (for out-of-memory paths). Header-only, test code only.
 */
#ifndef SC_TEST_H
#define SC_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"

/* Growing, NUL-terminated buffer; zero-initialise, free(b.p) when done. */
typedef struct sc_test_buf {
  char *p;
  size_t len, cap;
} sc_test_buf;

/* sc_write_fn appending to an sc_test_buf. */
static inline int sc_test_buf_write(void *ud, const char *s, size_t n) {
  sc_test_buf *b = ud;
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *q = realloc(b->p, cap);
    if (!q) return SC_ENOMEM;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

/* Test configs shared by the engine, workload and memory tests; callers then
 * adjust fields. Return sc_model_preset's code. */

/* A small GPT (1.3B shape) on 64 A100s: TP2 PP4, 1F1B, batch 64, micro 1,
 * no recompute. */
static inline int sc_test_small_gpt(sc_ctx *ctx, sc_config *cfg) {
  sc_config_default(cfg);
  int rc = sc_model_preset(ctx, cfg, "gpt3-1.3b");
  cfg->training.global_batch = 64;
  cfg->training.micro_batch = 1;
  cfg->training.recompute = SC_RECOMPUTE_NONE;
  cfg->parallel.tp = 2;
  cfg->parallel.pp = 4;
  cfg->parallel.dp = 0;
  cfg->parallel.vpp = 1;
  cfg->cluster.num_gpus = 64;
  cfg->cluster.nodes = 0;
  return rc;
}

/* Llama-3 8B cut to 8 layers (GQA, SwiGLU) on 32 H100s: TP4 PP2, batch 32,
 * bf16, distributed optimizer. */
static inline int sc_test_small_llama(sc_ctx *ctx, sc_config *cfg) {
  sc_config_default(cfg);
  int rc = sc_model_preset(ctx, cfg, "llama3-8b");
  cfg->model.layers = 8;
  cfg->training.global_batch = 32;
  cfg->training.precision = SC_PREC_BF16;
  cfg->parallel.tp = 4;
  cfg->parallel.pp = 2;
  cfg->parallel.dp = 0;
  cfg->parallel.distributed_optimizer = 1;
  cfg->cluster.num_gpus = 32;
  cfg->cluster.nodes = 0;
  snprintf(cfg->cluster.gpu, sizeof cfg->cluster.gpu, "h100-sxm");
  return rc;
}

/* sc_alloc_fn that counts allocations and fails the one numbered fail_at
 * (1-based; 0 = never); later ones succeed again. */
typedef struct sc_test_budget {
  long count, fail_at;
} sc_test_budget;

static inline void *sc_test_failing_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  sc_test_budget *b = ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (++b->count == b->fail_at) return NULL;
  return realloc(ptr, nsize);
}

#endif /* SC_TEST_H */
