/*
 * test_chakra.c: the Chakra importer (src/trace/chakra.c): the shipped
 * protobuf execution trace (one rank, two ranks settled by sc_job_finish,
 * truncation) and the PyTorch host execution-trace JSON.
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

#include "trace/job_int.h"
#include "stepcast/trace.h"
#include "ir/ir_int.h"

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

/* Path under the source tree (SC_SOURCE_DIR, set by ctest; else "."). */
static const char *src_path(const char *rel) {
  static char p[4096];
  const char *root = sc_test_source_dir();
  snprintf(p, sizeof p, "%s/%s", root, rel);
  return p;
}

/* Imports one file image as one rank, fed in pieces of `piece` bytes. */
static int import_mem(sc_job *job, sc_trace_format fmt, const char *name, const void *data, size_t len,
                      size_t piece, int64_t hint) {
  sc_trace_reader *r;
  int rc = sc_trace_open(job, fmt, name, hint, &r);
  if (rc) return rc;
  const unsigned char *p = data;
  for (size_t off = 0; !rc && off < len; off += piece)
    rc = sc_trace_feed(r, p + off, len - off < piece ? len - off : piece);
  if (!rc) rc = sc_trace_finish(r);
  sc_trace_free(r);
  return rc;
}

/* Extracts the first regular file whose name ends with suffix from a
 * .tar.gz (ustar: 512-byte headers, octal sizes; AppleDouble "._" files and
 * pax headers skipped). */
static unsigned char *untar(const char *path, const char *suffix, size_t *len) {
  gzFile gz = gzopen(path, "rb");
  if (!gz) return NULL;
  size_t cap = 1 << 20, n = 0;
  unsigned char *all = malloc(cap);
  int k;
  while (all && (k = gzread(gz, all + n, (unsigned)(cap - n))) > 0) {
    n += (size_t)k;
    if (n == cap) all = realloc(all, cap *= 2);
  }
  gzclose(gz);
  if (!all) return NULL;
  unsigned char *found = NULL;
  for (size_t off = 0; off + 512 <= n;) {
    const unsigned char *h = all + off;
    if (!h[0]) break;
    char name[101];
    memcpy(name, h, 100);
    name[100] = 0;
    size_t size = (size_t)strtoull((const char *)h + 124, NULL, 8);
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t nl = strlen(name), sl = strlen(suffix);
    if ((h[156] == '0' || h[156] == 0) && strncmp(base, "._", 2) && nl >= sl &&
        !strcmp(name + nl - sl, suffix) && off + 512 + size <= n) {
      found = malloc(size ? size : 1);
      memcpy(found, all + off + 512, size);
      *len = size;
      break;
    }
    off += 512 + (size + 511) / 512 * 512;
  }
  free(all);
  return found;
}

static void test_shipped_chakra(void **state) {
  (void)state;
  size_t len;
  unsigned char *et = untar(src_path("validation/traces/chakra/feeder_tests_trace.tar.gz"), ".et", &len);
  if (!et) {
    print_message("skipped: chakra sample not found\n");
    return;
  }
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  int rc = import_mem(job, SC_TRACE_CHAKRA, "tests/data/chakra.0.et", et, len, 10000, 3);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_job_finish(job), 0);
  sc_job_info info;
  sc_job_get_info(job, &info);
  assert_int_equal(job->ranks[0].rank, 0); /* from the file name */
  assert_int_equal(info.ops, 3664);
  assert_int_equal(info.collectives, 7);
  assert_int_equal(info.gpu_ops, 1216);
  assert_true(info.deps > 30000);
  const sc_jrank *r = &job->ranks[0];
  const sc_jop *bc = NULL;
  for (size_t k = 0; k < r->nops && !bc; k++)
    if (r->ops[k].kind == SC_JOP_COLL) bc = &r->ops[k];
  assert_int_equal(bc->coll, SC_COLL_BROADCAST);
  assert_true(bc->bytes == 212480);
  sc_job_free(job);
  /* Two ranks: the world (not in the files) is settled by sc_job_finish. */
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_CHAKRA, "run/chakra.0.et", et, len, 1 << 16, 0), 0);
  assert_int_equal(import_mem(job, SC_TRACE_CHAKRA, "run/chakra.1.et", et, len, 1 << 16, 0), 0);
  buf img = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &img), SC_EINVAL); /* not finished */
  assert_int_equal(sc_job_finish(job), 0);
  sc_job_get_info(job, &info);
  assert_int_equal(info.world, 2);
  assert_int_equal(info.ranks, 2);
  assert_int_equal(info.groups, 1);
  assert_int_equal(job->groups[0].n, 2);
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &img), 0);
  free(img.p);
  sc_job_free(job);
  /* Truncated protobuf: an error at the cut message. */
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_not_equal(import_mem(job, SC_TRACE_CHAKRA, "cut.0.et", et, len / 2, 4096, 0), 0);
  assert_non_null(strstr(sc_errmsg(ctx), "truncated Chakra trace"));
  sc_job_free(job);
  free(et);

  unsigned char *js = untar(src_path("validation/traces/chakra/1.0.2-chakra.0.0.4.tgz"), ".json", &len);
  assert_non_null(js);
  assert_int_equal(sc_job_new(ctx, &job), 0);
  rc = import_mem(job, SC_TRACE_CHAKRA, "1.0.2-chakra.0.0.4.json", js, len, 777, 0);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_job_finish(job), 0);
  sc_job_get_info(job, &info);
  assert_int_equal(info.world, 2);
  assert_int_equal(info.collectives, 10);
  assert_int_equal(info.host_ops, 20);
  r = &job->ranks[0];
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_COLL) {
      assert_int_equal(r->ops[k].coll, SC_COLL_ALLGATHER);
      assert_true(r->ops[k].bytes == 8); /* two 1-element fp32 outputs */
    }
  sc_job_free(job);
  free(js);
}

/* The reader ends on any input, by content (issue 13: /dev/zero and a 2 GB
 * zeroed file never ended): a run of zero bytes stops at the second
 * message, a varint of continuation bytes at its 10th byte; node times and
 * sizes beyond the job's bounds are errors at the message. */
static void test_endless_inputs(void **state) {
  (void)state;
  static unsigned char chunk[1 << 16];
  for (int fill = 0; fill < 2; fill++) {
    memset(chunk, fill ? 0xff : 0x00, sizeof chunk);
    sc_job *job;
    assert_int_equal(sc_job_new(ctx, &job), 0);
    sc_trace_reader *r;
    assert_int_equal(sc_trace_open(job, SC_TRACE_CHAKRA, "zero.et", 0, &r), 0);
    int rc = SC_OK, feeds = 0;
    while (!rc && feeds < 1000) rc = sc_trace_feed(r, chunk, sizeof chunk), feeds++;
    assert_int_equal(rc, SC_EINVAL);
    assert_int_equal(feeds, 1); /* within the first 64 KiB */
    assert_non_null(strstr(sc_errmsg(ctx), fill ? "zero.et:0: invalid message length"
                                                 : "zero.et:1: empty Chakra node message"));
    sc_trace_free(r);
    sc_job_free(job);
  }
  /* A node lasting 2^62 us: its duration is out of the job's range. Metadata
   * "0.0.4", then node {id 1, name "k", type COMP, duration_micros 2^62}. */
  static const unsigned char node[] = {7, 0x0a, 5, '0', '.', '0', '.', '4', 17, 0x08, 1, 0x12, 1, 'k', 0x18, 4,
                                       0x38, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40};
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_CHAKRA, "long.et", node, sizeof node, 5, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "long.et:8: node 1: duration_micros: 4611686018427387904 us out of range"));
  sc_job_free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shipped_chakra),
      cmocka_unit_test(test_endless_inputs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
