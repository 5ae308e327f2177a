/*
 * test_interf_kineto.c: reading interference training pairs from Kineto
 * traces (src/analysis/interf_kineto.c) through the importers' compression
 * feed: a shipped HTA trace gives the same pairs and counts plain, gzip and
 * zstd, fed in any pieces or read from a file (what `calibrate
 * --interference` does); truncated and corrupt compressed input and bad JSON
 * are errors naming the trace.
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
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "cost/interf_int.h"

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

/* The trace (its gzip as shipped) and its plain and zstd forms. */
typedef struct forms {
  unsigned char *gz, *plain, *zs;
  size_t gzn, plainn, zsn;
} forms;

static const char *const trace_rel = "validation/traces/hta/nccl_parser_config_nccl_data.json.gz";

static int load_forms(forms *f) {
  char path[4096];
  const char *root = sc_test_source_dir();
  snprintf(path, sizeof path, "%s/%s", root, trace_rel);
  FILE *fp = fopen(path, "rb");
  if (!fp) return -1;
  buf g = {0};
  char tmp[65536];
  size_t k;
  while ((k = fread(tmp, 1, sizeof tmp, fp)) > 0) sc_test_buf_write(&g, tmp, k);
  fclose(fp);
  f->gz = (unsigned char *)g.p;
  f->gzn = g.len;
  /* Inflate it here with zlib, then compress with the zstd C API (the
   * `zstd` tool need not be installed). */
  buf p = {0};
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = f->gz;
  z.avail_in = (uInt)f->gzn;
  int zr;
  do {
    z.next_out = (Bytef *)tmp;
    z.avail_out = sizeof tmp;
    zr = inflate(&z, Z_NO_FLUSH);
    assert_true(zr == Z_OK || zr == Z_STREAM_END);
    sc_test_buf_write(&p, tmp, sizeof tmp - z.avail_out);
  } while (zr != Z_STREAM_END);
  inflateEnd(&z);
  f->plain = (unsigned char *)p.p;
  f->plainn = p.len;
  size_t cap = ZSTD_compressBound(f->plainn);
  f->zs = malloc(cap);
  f->zsn = ZSTD_compress(f->zs, cap, f->plain, f->plainn, 3);
  assert_false(ZSTD_isError(f->zsn));
  return 0;
}

static void free_forms(forms *f) {
  free(f->gz);
  free(f->plain);
  free(f->zs);
}

/* Reads one trace image fed in pieces of `piece` bytes into a new set. */
static sc_interf_data *read_image(const char *name, const void *data, size_t len, size_t piece, int *rc_out) {
  sc_interf_data *d;
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  int rc = sc_interf_trace_begin(d, name);
  const unsigned char *p = data;
  for (size_t off = 0; !rc && off < len; off += piece)
    rc = sc_interf_trace_feed(d, p + off, len - off < piece ? len - off : piece);
  if (!rc) rc = sc_interf_trace_end(d);
  *rc_out = rc;
  return d;
}

/* The same pairs, field by field, in the same order, and the same counts. */
static void same_data(const sc_interf_data *a, const sc_interf_data *b) {
  size_t na, nb;
  const sc_interf_sample *x = sc__interf_data_samples(a, &na), *y = sc__interf_data_samples(b, &nb);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++) {
    assert_int_equal(x[i].kind, y[i].kind);
    assert_true(x[i].alone_ns == y[i].alone_ns && x[i].dur_ns == y[i].dur_ns && x[i].r == y[i].r);
    assert_int_equal(x[i].comm.coll, y[i].comm.coll);
    assert_true(x[i].comm.bytes == y[i].comm.bytes);
    assert_int_equal(x[i].comm.inter_node, y[i].comm.inter_node);
    assert_int_equal(x[i].comm.group, y[i].comm.group);
    assert_true(x[i].key == y[i].key);
    assert_int_equal(x[i].trace, y[i].trace);
  }
  sc_interf_stats s, t;
  sc_interf_data_stats(a, &s);
  sc_interf_data_stats(b, &t);
  assert_memory_equal(&s, &t, sizeof s);
}

/* zstd (and gzip) give the samples of the plain trace. */
static void test_interf_encodings(void **state) {
  (void)state;
  forms f;
  if (load_forms(&f)) {
    print_message("skipped: %s not found (set SC_SOURCE_DIR)\n", trace_rel);
    return;
  }
  int rc;
  sc_interf_data *plain = read_image("t.json", f.plain, f.plainn, 1 << 16, &rc);
  if (rc) fail_msg("plain: %s", sc_errmsg(ctx));
  size_t n;
  sc__interf_data_samples(plain, &n);
  assert_true(n > 0); /* the trace has overlapped kernels */
  static const size_t pieces[] = {1000, 4096, 65536, 1 << 22};
  for (int e = 0; e < 2; e++)
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
      sc_interf_data *d = e ? read_image("t.json.zst", f.zs, f.zsn, pieces[k], &rc)
                            : read_image("t.json.gz", f.gz, f.gzn, pieces[k], &rc);
      if (rc) fail_msg("encoding %d pieces of %zu: %s", e, pieces[k], sc_errmsg(ctx));
      same_data(plain, d);
      sc_interf_data_free(d);
    }
  /* A plain trace split in small pieces, too. */
  sc_interf_data *d = read_image("t.json", f.plain, f.plainn, 777, &rc);
  assert_int_equal(rc, 0);
  same_data(plain, d);
  sc_interf_data_free(d);
  /* From a .zst file, as `calibrate --interference` reads it. */
  char path[] = "/tmp/test_interf_kineto_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, f.zs, f.zsn), (ssize_t)f.zsn);
  close(fd);
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  if (sc_interf_load_file(d, path)) fail_msg("%s", sc_errmsg(ctx));
  same_data(plain, d);
  sc_interf_data_free(d);
  unlink(path);
  sc_interf_data_free(plain);
  free_forms(&f);
}

static void expect_error(const char *name, const void *data, size_t len, int rc_want, const char *msg) {
  int rc;
  sc_interf_data *d = read_image(name, data, len, 4096, &rc);
  if (rc != rc_want || !strstr(sc_errmsg(ctx), msg))
    fail_msg("rc %d, \"%s\" (want \"%s\")", rc, sc_errmsg(ctx), msg);
  sc_interf_data_free(d);
}

/* Errors name the trace: compressed data as "name: message", JSON as
 * "name:offset: message". */
static void test_interf_errors(void **state) {
  (void)state;
  const char *text = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1, \"dur\": 2}]}";
  size_t n = strlen(text), zsn;
  size_t cap = ZSTD_compressBound(n);
  unsigned char *zs = malloc(cap);
  zsn = ZSTD_compress(zs, cap, text, n, 3);
  assert_false(ZSTD_isError(zsn));
  int rc;
  sc_interf_data *d = read_image("ok.zst", zs, zsn, 5, &rc);
  assert_int_equal(rc, 0);
  sc_interf_stats st;
  sc_interf_data_stats(d, &st);
  assert_int_equal(st.kernels, 1);
  sc_interf_data_free(d);
  expect_error("cut.zst", zs, zsn - 3, SC_EINVAL, "cut.zst: truncated zstd data");
  zs[4] ^= 0xff;
  expect_error("bad.zst", zs, zsn, SC_EINVAL, "bad.zst: corrupt zstd data");
  expect_error("bad.json", "{\"traceEvents\": [1,]}", 21, SC_EINVAL, "bad.json:19: unexpected ']'");
  expect_error("empty.json", "", 0, SC_EINVAL, "empty.json:0: empty input");
  free(zs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_interf_encodings),
      cmocka_unit_test(test_interf_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
