/* test_ctx.c: the context and shared utilities: allocator hook (every
 * allocation goes through it, failures surface as SC_ENOMEM), error
 * messages and codes, growable arrays, whole-file reads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sc_int.h"
#include "sctest.h"

static void test_hook_and_errors(void **state) {
  (void)state;
  sc_test_heap h = {0};
  sc_ctx *ctx;
  assert_int_equal(sc_ctx_new(sc_test_alloc, &h, &ctx), SC_OK);
  assert_string_equal(sc_errmsg(ctx), "");
  assert_int_equal(sc__error(ctx, SC_EINVAL, "%s:%d: bad %s", "f.yaml", 3, "thing"), SC_EINVAL);
  assert_string_equal(sc_errmsg(ctx), "f.yaml:3: bad thing");
  void *p = sc__calloc(ctx, 10, 8);
  assert_non_null(p);
  for (int i = 0; i < 80; i++) assert_int_equal(((unsigned char *)p)[i], 0);
  sc__free(ctx, p, 80);
  sc_ctx_free(ctx);
  assert_int_equal(h.count, 2); /* the context itself went through the hook */
  assert_int_equal(h.live, 0);
  assert_string_equal(sc_strerror(SC_ENOMEM), "out of memory");
  assert_string_equal(sc_strerror(12345), "unknown error");
}

static void test_allocation_failure(void **state) {
  (void)state;
  sc_test_heap h = sc_test_heap_failing(1, 1);
  sc_ctx *ctx;
  assert_int_equal(sc_ctx_new(sc_test_alloc, &h, &ctx), SC_ENOMEM);
  assert_null(ctx);
  h = sc_test_heap_failing(2, 1); /* the context succeeds, the next allocation fails */
  assert_int_equal(sc_ctx_new(sc_test_alloc, &h, &ctx), SC_OK);
  assert_null(sc__malloc(ctx, 100));
  assert_non_null(strstr(sc_errmsg(ctx), "out of memory"));
  assert_null(sc__calloc(ctx, SIZE_MAX / 2, 4)); /* overflow, not a wrap-around */
  sc_ctx_free(ctx);
}

static void test_grow(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), SC_OK);
  int *v = NULL;
  size_t cap = 0;
  for (size_t i = 0; i < 1000; i++) {
    assert_int_equal(sc__grow(ctx, (void **)&v, sizeof *v, &cap, i + 1), SC_OK);
    assert_true(cap >= i + 1);
    v[i] = (int)i;
  }
  for (size_t i = 0; i < 1000; i++) assert_int_equal(v[i], (int)i);
  sc__free(ctx, v, cap * sizeof *v);
  sc_ctx_free(ctx);
}

static void test_read_file(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), SC_OK);
  char path[] = "/tmp/stepcast-test-ctx-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  for (int i = 0; i < 30000; i++) fputs("abc\n", f); /* 120000 bytes: several refills */
  fclose(f);
  char *buf;
  size_t len, cap;
  assert_int_equal(sc__read_file(ctx, path, NULL, NULL, 1 << 20, &buf, &len, &cap), SC_OK);
  assert_int_equal(len, 120000);
  assert_int_equal(buf[len], 0);
  assert_memory_equal(buf + len - 4, "abc\n", 4);
  sc__free(ctx, buf, cap);
  assert_int_equal(sc__read_file(ctx, path, NULL, NULL, 1000, &buf, &len, &cap), SC_EREAD);
  assert_non_null(strstr(sc_errmsg(ctx), "cannot read: file larger than"));
  remove(path);
  assert_int_equal(sc__read_file(ctx, path, NULL, NULL, 1000, &buf, &len, &cap), SC_EREAD);
  assert_non_null(strstr(sc_errmsg(ctx), ": cannot open: No such file or directory"));
  assert_int_equal(sc__read_file(ctx, path, "a.yaml:3", "calibration file", 1000, &buf, &len,
                                 &cap),
                   SC_EREAD);
  assert_non_null(strstr(sc_errmsg(ctx), "a.yaml:3: cannot open calibration file /tmp/"));
  assert_int_equal(sc__read_file(ctx, "/tmp", NULL, NULL, 1000, &buf, &len, &cap), SC_EREAD);
  assert_non_null(strstr(sc_errmsg(ctx), "/tmp: cannot open: Is a directory"));
  sc_ctx_free(ctx);
}

/* The default allocator's large blocks (mapped from 1 MiB, grown by
 * mremap, back to malloc below 1 MiB): the bytes survive every move, and
 * calloc's are zero. */
static void fill(unsigned char *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) p[i] = (unsigned char)(i * 131 + (i >> 12));
}
static int filled(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(i * 131 + (i >> 12))) return 0;
  return 1;
}
static void test_default_large_blocks(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_ctx_new(NULL, NULL, &ctx), SC_OK);
  unsigned char *p = NULL;
  size_t cap = 0, n = 0;
  for (size_t need = 1000; need <= ((size_t)48 << 20); need = need * 3 / 2) { /* through malloc, then mapped */
    assert_int_equal(sc__grow(ctx, (void **)&p, 1, &cap, need), SC_OK);
    fill(p, n, need);
    n = need;
    assert_true(filled(p, n));
  }
  unsigned char *q = sc__malloc(ctx, (size_t)3 << 20); /* a mapping in the way of growing in place */
  assert_non_null(q);
  fill(q, 0, (size_t)3 << 20);
  p = sc__realloc(ctx, p, cap, (size_t)96 << 20);
  assert_non_null(p);
  assert_true(filled(p, n));
  p = sc__realloc(ctx, p, (size_t)96 << 20, (size_t)5 << 20); /* shrinks in place */
  assert_non_null(p);
  assert_true(filled(p, (size_t)5 << 20));
  p = sc__realloc(ctx, p, (size_t)5 << 20, 700000); /* back to malloc */
  assert_non_null(p);
  assert_true(filled(p, 700000));
  sc__free(ctx, p, 700000);
  assert_true(filled(q, (size_t)3 << 20));
  sc__free(ctx, q, (size_t)3 << 20);
  unsigned char *z = sc__calloc(ctx, (size_t)9 << 20, 1);
  assert_non_null(z);
  for (size_t i = 0; i < ((size_t)9 << 20); i += 4093) assert_int_equal(z[i], 0);
  sc__free(ctx, z, (size_t)9 << 20);
  sc_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hook_and_errors),
      cmocka_unit_test(test_allocation_failure),
      cmocka_unit_test(test_grow),
      cmocka_unit_test(test_default_large_blocks),
      cmocka_unit_test(test_read_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
