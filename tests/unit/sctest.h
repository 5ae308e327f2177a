/*
 * sctest.h: helpers shared by the unit tests: a growing in-memory output
 * sink (for traces, reports, .scw files) and an allocator hook that fails one
 * chosen allocation (for out-of-memory paths). Header-only, test code only.
 */
#ifndef SC_TEST_H
#define SC_TEST_H

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
