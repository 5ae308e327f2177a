/*
 * test_feed.c: the compression feed of the trace readers
 * (src/trace/feed.c). Plain, gzip and zstd input give the same bytes to the
 * sink whatever the split (inside the magic numbers too), concatenated gzip
 * members and zstd frames read as one stream; truncated, corrupt and
 * trailing data, a failing sink and misuse are errors with their offsets;
 * any one allocation failing gives SC_ENOMEM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sctest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "trace/feed_int.h"

static sc_ctx *ctx;

static int setup(void **state) {
  (void)state;
  return sc_test_ctx_new(&ctx);
}
static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

typedef sc_test_buf buf;

/* The sink: collects what comes out, checks the buffer bound (decoded
 * output; plain comes as fed), and fails once it has seen fail_after bytes
 * (0: never). */
typedef struct sink {
  buf out;
  size_t fail_after;
  int calls;
  int plain;
} sink;

static int to_sink(void *ud, const char *p, size_t n) {
  sink *s = ud;
  assert_true(n > 0 && (s->plain || n <= SC_FEED_OUT_BYTES));
  s->calls++;
  sc_test_buf_write(&s->out, p, n);
  return s->fail_after && s->out.len >= s->fail_after ? SC_EWRITE : SC_OK;
}

/* Text like a trace: compressible, not trivially. */
static char *sample(size_t *n) {
  buf b = {0};
  uint32_t x = 12345;
  while (b.len < 300000) {
    char line[128];
    x = x * 1103515245u + 12345u;
    int k = snprintf(line, sizeof line, "{\"ph\": \"X\", \"ts\": %u.%03u, \"name\": \"k%u\"},\n", x >> 8,
                     x % 1000, (x >> 20) % 97);
    sc_test_buf_write(&b, line, (size_t)k);
  }
  *n = b.len;
  return b.p;
}

static unsigned char *gzip_of(const void *in, size_t n, size_t *out_n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&z, (uLong)n);
  unsigned char *out = malloc(cap);
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static unsigned char *zstd_of(const void *in, size_t n, size_t *out_n) {
  size_t cap = ZSTD_compressBound(n);
  unsigned char *out = malloc(cap);
  *out_n = ZSTD_compress(out, cap, in, n, 3);
  assert_false(ZSTD_isError(*out_n));
  return out;
}

/* Feeds data in pieces of `piece` bytes (the first cut at `first` when
 * non-zero), then ends. Returns the code; f is left to inspect, freed. */
static int run_feed(const void *data, size_t len, size_t first, size_t piece, sink *s, sc_feed *f) {
  assert_int_equal(sc__feed_init(f, ctx, to_sink, s), 0);
  const unsigned char *p = data;
  int rc = 0;
  size_t off = 0;
  if (first && first <= len) {
    rc = sc__feed_put(f, p, first);
    off = first;
  }
  for (; !rc && off < len; off += piece) rc = sc__feed_put(f, p + off, len - off < piece ? len - off : piece);
  if (!rc) rc = sc__feed_end(f);
  sc__feed_free(f);
  return rc;
}

/* ------------------------------------------------------------ tests */

static void test_feed_encodings(void **state) {
  (void)state;
  size_t n, gzn, zsn;
  char *text = sample(&n);
  unsigned char *gz = gzip_of(text, n, &gzn), *zs = zstd_of(text, n, &zsn);
  static const size_t pieces[] = {1, 3, 7, 4096, 65536, 1 << 20};
  const struct {
    const void *p;
    size_t n;
    const char *enc;
  } in[] = {{text, n, "plain"}, {gz, gzn, "gzip"}, {zs, zsn, "zstd"}};
  for (int e = 0; e < 3; e++)
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
      if (pieces[k] == 1 && e == 0) continue; /* plain byte by byte: the split test below */
      sink s = {0};
      s.plain = e == 0;
      sc_feed f;
      int rc = run_feed(in[e].p, in[e].n, 0, pieces[k], &s, &f);
      if (rc) fail_msg("%s pieces of %zu: rc %d %s", in[e].enc, pieces[k], rc, f.errmsg);
      assert_string_equal(sc__feed_encoding(&f), in[e].enc);
      assert_int_equal(s.out.len, n);
      assert_memory_equal(s.out.p, text, n);
      assert_true(f.in_bytes == in[e].n && f.out_bytes == n);
      free(s.out.p);
    }
  free(text);
  free(gz);
  free(zs);
}

/* A short text in each encoding, split at every byte offset (inside the
 * magic numbers too) and fed byte by byte. */
static void test_feed_split(void **state) {
  (void)state;
  const char *text = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"gemm\"}]}";
  size_t n = strlen(text), gzn, zsn;
  unsigned char *gz = gzip_of(text, n, &gzn), *zs = zstd_of(text, n, &zsn);
  const struct {
    const void *p;
    size_t n;
  } in[] = {{text, n}, {gz, gzn}, {zs, zsn}};
  for (int e = 0; e < 3; e++)
    for (size_t cut = 0; cut <= in[e].n; cut++)
      for (size_t piece = 1; piece <= in[e].n; piece += in[e].n - 1) {
        sink s = {0};
        sc_feed f;
        int rc = run_feed(in[e].p, in[e].n, cut, piece, &s, &f);
        if (rc) fail_msg("encoding %d cut %zu piece %zu: rc %d %s", e, cut, piece, rc, f.errmsg);
        assert_int_equal(s.out.len, n);
        assert_memory_equal(s.out.p, text, n);
        free(s.out.p);
      }
  /* Fewer than the 4 magic bytes in all: plain, delivered at the end. */
  for (size_t k = 0; k < 4; k++) {
    sink s = {0};
    sc_feed f;
    assert_int_equal(run_feed("[1]", k, 0, 1, &s, &f), 0);
    assert_string_equal(sc__feed_encoding(&f), "plain");
    assert_int_equal(s.out.len, k);
    assert_int_equal(s.calls, k ? 1 : 0);
    free(s.out.p);
  }
  free(gz);
  free(zs);
}

/* Concatenated gzip members (RFC 1952 2.2) and zstd frames (RFC 8878 3)
 * read as one stream. */
static void test_feed_concatenated(void **state) {
  (void)state;
  size_t n;
  char *text = sample(&n);
  size_t half = n / 3;
  for (int e = 0; e < 2; e++) {
    size_t n1, n2;
    unsigned char *a = e ? zstd_of(text, half, &n1) : gzip_of(text, half, &n1);
    unsigned char *b = e ? zstd_of(text + half, n - half, &n2) : gzip_of(text + half, n - half, &n2);
    unsigned char *cat = malloc(n1 + n2);
    memcpy(cat, a, n1);
    memcpy(cat + n1, b, n2);
    for (size_t piece = 333; piece < n1 + n2; piece *= 7) {
      sink s = {0};
      sc_feed f;
      int rc = run_feed(cat, n1 + n2, n1, piece, &s, &f); /* a cut at the member boundary */
      if (rc) fail_msg("encoding %d piece %zu: %s", e, piece, f.errmsg);
      assert_int_equal(s.out.len, n);
      assert_memory_equal(s.out.p, text, n);
      free(s.out.p);
    }
    free(a);
    free(b);
    free(cat);
  }
  free(text);
}

static void expect_error(const void *data, size_t len, size_t piece, int rc, const char *msg, uint64_t off) {
  sink s = {0};
  sc_feed f;
  int got = run_feed(data, len, 0, piece, &s, &f);
  if (got != rc || !strstr(f.errmsg, msg) || (off != UINT64_MAX && f.err_off != off))
    fail_msg("rc %d (want %d), \"%s\" at %llu (want \"%s\" at %llu)", got, rc, f.errmsg,
             (unsigned long long)f.err_off, msg, (unsigned long long)off);
  free(s.out.p);
}

static void test_feed_errors(void **state) {
  (void)state;
  size_t n, gzn, zsn;
  char *text = sample(&n);
  unsigned char *gz = gzip_of(text, n, &gzn), *zs = zstd_of(text, n, &zsn);
  /* Truncated anywhere after the magic: at the end, at the stored size. */
  for (size_t cut = 4; cut < gzn; cut += gzn / 29 + 1)
    expect_error(gz, cut, 4096, SC_EINVAL, "truncated gzip data (the file ends inside the stream)", cut);
  for (size_t cut = 4; cut < zsn; cut += zsn / 29 + 1)
    expect_error(zs, cut, 4096, SC_EINVAL, "truncated zstd data (the file ends inside the stream)", cut);
  expect_error("\x1f\x8b", 2, 1, SC_EINVAL, "truncated gzip data", 2);
  /* Corrupt data: the decoder's reason. */
  expect_error("\x1f\x8b garbage that is not deflate", 32, 5, SC_EINVAL, "corrupt gzip data (", UINT64_MAX);
  unsigned char *bad = malloc(zsn);
  memcpy(bad, zs, zsn);
  bad[4] ^= 0xff; /* the frame header descriptor */
  expect_error(bad, zsn, 4096, SC_EINVAL, "corrupt zstd data (", UINT64_MAX);
  free(bad);
  /* After the gzip stream only another member may follow. */
  unsigned char *tail = malloc(gzn + 3);
  memcpy(tail, gz, gzn);
  memcpy(tail + gzn, "xyz", 3);
  expect_error(tail, gzn + 3, 1000, SC_EINVAL, "data after the end of the gzip stream", gzn);
  free(tail);
  /* The sink's error stops the feed: its code, no message of the feed's. */
  for (int e = 0; e < 3; e++) {
    sink s = {0};
    s.fail_after = 100000;
    s.plain = 1;
    sc_feed f;
    const void *p = e == 0 ? (const void *)text : e == 1 ? (const void *)gz : (const void *)zs;
    size_t len = e == 0 ? n : e == 1 ? gzn : zsn;
    assert_int_equal(run_feed(p, len, 0, 50000, &s, &f), SC_EWRITE);
    assert_string_equal(f.errmsg, "");
    assert_int_equal(f.err, SC_EWRITE);
    free(s.out.p);
  }
  /* Misuse, and errors are sticky. */
  sink s = {0};
  sc_feed f;
  assert_int_equal(sc__feed_init(&f, ctx, to_sink, &s), 0);
  assert_int_equal(sc__feed_put(&f, "[1]", 3), 0);
  assert_int_equal(sc__feed_end(&f), 0);
  assert_int_equal(sc__feed_end(&f), SC_EINVAL);
  assert_string_equal(f.errmsg, "finished twice");
  assert_int_equal(sc__feed_put(&f, "x", 1), SC_EINVAL);
  sc__feed_free(&f);
  assert_int_equal(sc__feed_init(&f, ctx, to_sink, &s), 0);
  assert_int_equal(sc__feed_end(&f), 0);
  assert_int_equal(sc__feed_put(&f, "x", 1), SC_EINVAL);
  assert_string_equal(f.errmsg, "data fed after the end");
  sc__feed_free(&f);
  free(s.out.p);
  free(text);
  free(gz);
  free(zs);
}

/* Any one allocation failing (buffer, decoder state, window): SC_ENOMEM,
 * nothing leaks (ASan). */
static void test_feed_alloc_failures(void **state) {
  (void)state;
  size_t n, gzn, zsn;
  char *text = sample(&n);
  unsigned char *gz = gzip_of(text, n, &gzn), *zs = zstd_of(text, n, &zsn);
  sc_test_heap b = {0};
  sc_ctx *c2;
  assert_int_equal(sc_test_ctx_on(&b, &c2), 0);
  for (int e = 0; e < 2; e++) {
    const unsigned char *p = e ? zs : gz;
    size_t len = e ? zsn : gzn;
    long total = 0;
    for (long k = 0; k == 0 || k <= total; k++) {
      b.count = 0;
      b.fail_at = k;
      sink s = {0};
      sc_feed f;
      int rc = sc__feed_init(&f, c2, to_sink, &s);
      for (size_t off = 0; !rc && off < len; off += 8192)
        rc = sc__feed_put(&f, p + off, len - off < 8192 ? len - off : 8192);
      if (!rc) rc = sc__feed_end(&f);
      sc__feed_free(&f);
      free(s.out.p);
      if (k == 0) {
        assert_int_equal(rc, 0);
        total = b.count;
      } else if (rc != SC_ENOMEM) {
        fail_msg("encoding %d, allocation %ld of %ld: rc %d", e, k, total, rc);
      }
    }
  }
  sc_ctx_free(c2);
  assert_int_equal(b.live, 0);
  free(text);
  free(gz);
  free(zs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_feed_encodings),    cmocka_unit_test(test_feed_split),
      cmocka_unit_test(test_feed_concatenated), cmocka_unit_test(test_feed_errors),
      cmocka_unit_test(test_feed_alloc_failures),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
