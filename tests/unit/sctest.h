/*
 * sctest.h: helpers shared by the unit tests: a growing in-memory output
 * sink (for traces, reports, .scw files), shared test configs, a checking
 * allocator that verifies every free's size, finds leaks and fails chosen
 * allocations, contexts with the IR checkers on, the data directory, and
 * the memory counter track's agreement with the estimate.
 * Header-only, test code only.
 */
#ifndef SC_TEST_H
#define SC_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sc_int.h"
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

/* The built-in example (GPT-3 175B on 1,024 A100s, SC21), the starting
 * point of tests written against its values; loaded with a context of its
 * own, so allocation-counting tests see none of it. Aborts on failure. */
static inline void sc_test_example(sc_config *cfg) {
  sc_ctx *ex;
  if (sc_ctx_new(NULL, NULL, &ex) || sc_config_example(ex, cfg)) {
    fprintf(stderr, "sc_test_example: the built-in example does not load\n");
    abort();
  }
  sc_ctx_free(ex);
}

/* Fixes the compute parameters of cfg (an A100 config) at the A100
 * calibration of 2026-11, with the scores of unfused attention streaming like
 * any memory-bound kernel, for tests whose bounds depend on the ratio of
 * forward, input-grad and weight-grad times (the zero-bubble schedules' list
 * schedules), so that a recalibration does not move them. */
static inline void sc_test_pin_costs(sc_config *cfg) {
  cfg->costs.gemm_eff = 0.674182;
  cfg->costs.gemm_dim_half = 86.1492;
  cfg->costs.mem_eff = 0.74232;
  cfg->costs.scores_mem_eff = 0.74232;
  cfg->costs.kernel_overhead_us = 1.85979;
  cfg->costs.attn_eff = 0.70;
}

/* Simulates a resolved cfg with the Chrome trace and compares, per pipeline
 * stage, the peak of the trace's memory counter (the stage's first rank)
 * with the result's peak_gib estimate. Returns -1 when every stage agrees
 * within 1e-3 GiB, else the first stage that does not (its two figures in
 * *peak and *want), or -2 when the simulation or formatting fails. */
static inline int sc_test_counter_peak_mismatch(sc_ctx *ctx, const sc_config *cfg, double *peak,
                                                double *want) {
  sc_test_buf g = {NULL, 0, 0}, js = {NULL, 0, 0};
  sc_result r;
  int bad = -1;
  if (sc_simulate(ctx, cfg, sc_test_buf_write, &g, &r) ||
      sc_result_format(cfg, &r, SC_FORMAT_JSON, sc_test_buf_write, &js))
    bad = -2;
  const char *q = js.p;
  for (int64_t st = 0; bad == -1 && st < cfg->parallel.pp; st++) {
    q = q ? strstr(q, "\"peak_gib\":") : NULL;
    if (!q) {
      bad = -2;
      break;
    }
    q += 11;
    *want = atof(q);
    *peak = 0;
    char key[96];
    snprintf(key, sizeof key, "\"name\":\"memory\",\"pid\":%lld,",
             (long long)(st * cfg->parallel.tp * cfg->parallel.dp));
    for (const char *p = g.p; (p = strstr(p, key)); p++) {
      const char *v = strstr(p, "\"GiB\":");
      if (v && atof(v + 6) > *peak) *peak = atof(v + 6);
    }
    if (*peak - *want > 1e-3 || *want - *peak > 1e-3) bad = (int)st;
  }
  free(js.p);
  free(g.p);
  return bad;
}

/* Test configs shared by the engine, workload and memory tests; callers then
 * adjust fields. Return sc_model_preset's code. */

/* A small GPT (1.3B shape) on 64 A100s: TP2 PP4, 1F1B, batch 64, micro 1,
 * no recompute. */
static inline int sc_test_small_gpt(sc_ctx *ctx, sc_config *cfg) {
  sc_test_example(cfg);
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
  sc_test_example(cfg);
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

/* ------------------------------------------------------------ allocator */

/* The unit tests' allocator (sc_alloc_fn): every block carries a header with
 * its size, so a resize or free that names a different old size (the
 * allocator contract: sc__free(ctx, p, n) with the n it was allocated with)
 * aborts with both sizes. It counts live blocks and bytes, and fails the
 * allocation call numbered fail_at (1-based over calls with nsize > 0; 0:
 * never), and every later one too when sticky. */
typedef struct sc_test_heap {
  long count;   /* allocation and resize calls so far */
  long fail_at; /* the call that fails; 0: none */
  int sticky;   /* fail every call from fail_at on */
  long live;    /* blocks allocated and not freed */
  size_t bytes; /* their sizes */
} sc_test_heap;

typedef union sc_test_block {
  struct {
    size_t size;
    uint64_t magic;
  } h;
  max_align_t align;
} sc_test_block;

#define SC_TEST_MAGIC UINT64_C(0x5374657063617374) /* "Stepcast" */

static inline sc_test_block *sc_test_block_of(void *ptr, size_t osize, const char *what) {
  sc_test_block *b = (sc_test_block *)ptr - 1;
  if (b->h.magic != SC_TEST_MAGIC) {
    fprintf(stderr, "sctest: %s of %p, a block this allocator never returned\n", what, ptr);
    abort();
  }
  if (b->h.size != osize) {
    fprintf(stderr, "sctest: %s of a %zu-byte block as %zu bytes\n", what, b->h.size, osize);
    abort();
  }
  return b;
}

static inline void *sc_test_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  sc_test_heap *hp = ud;
  if (nsize == 0) {
    if (ptr) {
      sc_test_block *b = sc_test_block_of(ptr, osize, "free");
      b->h.magic = 0;
      hp->live--;
      hp->bytes -= osize;
      free(b);
    }
    return NULL;
  }
  hp->count++;
  if (hp->fail_at > 0 && (hp->count == hp->fail_at || (hp->sticky && hp->count > hp->fail_at)))
    return NULL;
  if (nsize > SIZE_MAX - sizeof(sc_test_block)) return NULL;
  sc_test_block *old = ptr ? sc_test_block_of(ptr, osize, "resize") : NULL;
  sc_test_block *b = realloc(old, sizeof *b + nsize);
  if (!b) return NULL;
  if (old) {
    hp->bytes -= osize;
  } else {
    hp->live++;
  }
  b->h.size = nsize;
  b->h.magic = SC_TEST_MAGIC;
  hp->bytes += nsize;
  return b + 1;
}

/* A heap failing call fail_at (after the context exists: the count starts
 * once sc_test_ctx_on has made it). */
static inline sc_test_heap sc_test_heap_failing(long fail_at, int sticky) {
  sc_test_heap h = {0, 0, 0, 0, 0};
  h.fail_at = fail_at;
  h.sticky = sticky;
  return h;
}

/* The heap behind sc_test_ctx_new's contexts; at exit it must be empty. */
static sc_test_heap sc_test_main_heap;

static void sc_test_check_leaks(void) {
  if (sc_test_main_heap.live != 0) {
    fprintf(stderr, "sctest: %ld blocks (%zu bytes) never freed\n", sc_test_main_heap.live,
            sc_test_main_heap.bytes);
    _Exit(1);
  }
}

/* A context over heap hp with the IR checkers on (as debug builds have them),
 * whatever NDEBUG says; the heap's count restarts after the context itself. */
static inline int sc_test_ctx_on(sc_test_heap *hp, sc_ctx **out) {
  long fail_at = hp->fail_at;
  hp->fail_at = 0;
  int rc = sc_ctx_new(sc_test_alloc, hp, out);
  hp->fail_at = fail_at;
  hp->count = 0;
  if (rc == SC_OK) sc__ctx_set_checks(*out, 1);
  return rc;
}

/* The usual test context: on the main heap, which the program checks for
 * leaks when it exits. */
static inline int sc_test_ctx_new(sc_ctx **out) {
  static int registered;
  if (!registered) registered = atexit(sc_test_check_leaks) == 0;
  return sc_test_ctx_on(&sc_test_main_heap, out);
}

/* ------------------------------------------------------------ data files */

/* The source tree's root: $SC_SOURCE_DIR when set (ctest sets it), else the
 * tree the test was built from, so a test binary run by hand finds its data. */
static inline const char *sc_test_source_dir(void) {
  const char *root = getenv("SC_SOURCE_DIR");
#ifdef SC_TEST_SOURCE_DIR
  if (!root || !*root) root = SC_TEST_SOURCE_DIR;
#endif
  return root && *root ? root : ".";
}

#endif /* SC_TEST_H */
