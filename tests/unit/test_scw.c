/*
 * test_scw.c: the .scw workload file. A job built through the internal API
 * survives write/read/write byte for byte; truncation at every length and
 * every single-bit flip are reported as errors; payload damage with a
 * recomputed checksum (what the CRC cannot see) is caught by the bounds
 * checks or read harmlessly, never a crash (run under ASan); numbers past
 * their ranges are refused on read and by sc_job_finish; group lookup.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sctest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "trace/job_int.h"
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

/* Two ranks of a 4-rank job: host timeline, a compute and a comm stream,
 * a collective on the world and one on a pair, deps across streams. */
static sc_job *sample_job(void) {
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  job->world = 4;
  uint32_t world, pair, nm_host, nm_s7, nm_s20, nm_k, nm_ar, nm_l, src;
  int64_t all[4] = {3, 1, 2, 0}, two[2] = {1, 0};
  assert_int_equal(sc__job_intern(job, "world", 5, &nm_k), 0);
  assert_int_equal(sc__job_group(job, all, 4, nm_k, &world), 0);
  assert_int_equal(sc__job_group(job, two, 2, 0, &pair), 0);
  assert_int_equal(sc__job_intern(job, "host", 4, &nm_host), 0);
  assert_int_equal(sc__job_intern(job, "stream 7", 8, &nm_s7), 0);
  assert_int_equal(sc__job_intern(job, "stream 20", 9, &nm_s20), 0);
  assert_int_equal(sc__job_intern(job, "sm80_xmma_gemm", 14, &nm_k), 0);
  assert_int_equal(sc__job_intern(job, "ncclDevKernel_AllReduce", 23, &nm_ar), 0);
  assert_int_equal(sc__job_intern(job, "launch", 6, &nm_l), 0);
  for (int64_t rank = 0; rank < 2; rank++) {
    char s[32];
    snprintf(s, sizeof s, "rank%lld.json", (long long)rank);
    assert_int_equal(sc__job_intern(job, s, strlen(s), &src), 0);
    sc_jrank *r = sc__job_add_rank(job, rank);
    r->source = src;
    r->gpu = nm_k;
    r->iterations = 2;
    r->span_ns = 1000000 + rank;
    assert_int_equal(sc__jrank_stream(job, r, -1, nm_host, 1), 0);
    assert_int_equal(sc__jrank_stream(job, r, 7, nm_s7, 0), 1);
    assert_int_equal(sc__jrank_stream(job, r, 20, nm_s20, 0), 2);
    for (int it = 0; it < 2; it++) {
      sc_jop op;
      memset(&op, 0, sizeof op);
      op.group = SC_JOB_NONE;
      op.peer = -1;
      op.coll = SC_JCOLL_UNKNOWN;
      op.iter = (uint32_t)it;
      op.kind = SC_JOP_HOST;
      op.name = nm_l;
      op.dur_ns = 5000;
      op.start_ns = it * 500000;
      int64_t h = sc__jrank_op(job, r, &op);
      op.kind = SC_JOP_KERNEL;
      op.stream = 1;
      op.name = nm_k;
      op.dur_ns = 300250;
      op.flops = 2.0 * 4096 * 4096 * 4096;
      op.start_ns = it * 500000 + 10000;
      int64_t k = sc__jrank_op(job, r, &op);
      assert_int_equal(sc__jrank_dep(job, r, (uint32_t)h), 0);
      op.kind = SC_JOP_COLL;
      op.stream = 2;
      op.name = nm_ar;
      op.flops = 0;
      op.bytes = 2097152;
      op.coll = SC_COLL_ALLREDUCE;
      op.group = it ? pair : world;
      op.dur_ns = 200000;
      sc__jrank_op(job, r, &op);
      assert_int_equal(sc__jrank_dep(job, r, (uint32_t)h), 0);
      assert_int_equal(sc__jrank_dep(job, r, (uint32_t)k), 0);
    }
  }
  sc__job_warn_n(job, 3, "rank0.json: an example warning");
  assert_int_equal(sc_job_finish(job), 0);
  return job;
}

static void test_round_trip(void **state) {
  (void)state;
  sc_job *job = sample_job();
  buf a = {0}, b = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &a), 0);
  sc_job *back;
  int rc = sc_job_read(ctx, "a.scw", a.p, a.len, &back);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_job_write(back, sc_test_buf_write, &b), 0);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.p, b.p, a.len);
  /* Field by field. */
  assert_int_equal(back->world, 4);
  assert_int_equal(back->nranks, 2);
  assert_int_equal(back->ngroups, 2);
  assert_int_equal(back->groups[0].n, 4);
  assert_int_equal(back->members[back->groups[0].off + 3], 3);
  for (size_t i = 0; i < 2; i++) {
    const sc_jrank *x = &job->ranks[i], *y = &back->ranks[i];
    assert_int_equal(x->rank, y->rank);
    assert_int_equal(x->span_ns, y->span_ns);
    assert_int_equal(x->nops, y->nops);
    assert_int_equal(x->ndeps, y->ndeps);
    assert_memory_equal(x->ops, y->ops, x->nops * sizeof *x->ops);
    assert_memory_equal(x->deps, y->deps, x->ndeps * sizeof *x->deps);
    assert_string_equal(sc__job_str(job, x->source), sc__job_str(back, y->source));
  }
  sc_job_info info;
  sc_job_get_info(back, &info);
  assert_int_equal(info.warnings, 3);
  assert_int_equal(info.collectives, 4);
  assert_true(info.traced_step_s > 0.0005 && info.traced_step_s < 0.00051);
  /* The header: magic, version 3, little-endian sizes. */
  assert_memory_equal(a.p, "\x89SCW\r\n\x1a\n", 8);
  assert_int_equal((unsigned char)a.p[8], 3);
  sc_job_free(back);
  sc_job_free(job);
  free(a.p);
  free(b.p);
}

static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* An older file still reads, to the same job: version 1 (written before
 * shapes existed: no shape count at the end of a RANK section) and version
 * 2 (no module table and op modules: their two counts). The sample job has
 * no shapes and no modules, so the older images are the new one less those
 * trailing counts. */
static void reads_version(uint32_t version) {
  sc_job *job = sample_job();
  buf a = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &a), 0);
  unsigned char *old = malloc(a.len);
  const unsigned char *p = (const unsigned char *)a.p;
  memcpy(old, p, 32);
  size_t out = 32, drop = version == 1 ? 12 : 8;
  for (size_t at = 32; at < a.len;) {
    uint32_t tag = rd32(p + at);
    uint64_t len = rd32(p + at + 8) | (uint64_t)rd32(p + at + 12) << 32;
    int rank = tag == ((uint32_t)'R' | 'A' << 8 | 'N' << 16 | (uint32_t)'K' << 24);
    uint64_t keep = rank ? len - drop : len; /* drop the trailing counts (0) */
    if (rank)
      for (size_t q = 0; q < drop; q += 4) assert_int_equal(rd32(p + at + 16 + keep + q), 0);
    memcpy(old + out, p + at, 16);
    wr32(old + out + 8, (uint32_t)keep);
    memcpy(old + out + 16, p + at + 16, keep);
    out += 16 + keep;
    at += 16 + len;
  }
  wr32(old + 8, version);
  wr32(old + 16, (uint32_t)(out - 32));
  wr32(old + 24, (uint32_t)crc32(crc32(0L, Z_NULL, 0), old + 32, (uInt)(out - 32)));
  sc_job *back;
  int rc = sc_job_read(ctx, "old.scw", old, out, &back);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  buf b = {0};
  assert_int_equal(sc_job_write(back, sc_test_buf_write, &b), 0);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.p, b.p, a.len); /* written back as version 3, identical */
  sc_job_free(back);
  sc_job_free(job);
  free(old);
  free(a.p);
  free(b.p);
}

static void test_reads_version_1(void **state) {
  (void)state;
  reads_version(1);
}

static void test_reads_version_2(void **state) {
  (void)state;
  reads_version(2);
}

static void expect_error(const char *img, size_t len, const char *msg);

/* Version 3: the module table and per-op modules survive a round trip;
 * a module index past the table is refused. */
static void test_modules(void **state) {
  (void)state;
  sc_job *job = sample_job();
  sc_jrank *r = &job->ranks[0];
  uint32_t path, type;
  assert_int_equal(sc__job_intern(job, "blocks.0.c_attn", 15, &path), 0);
  assert_int_equal(sc__job_intern(job, "Linear", 6, &type), 0);
  int64_t mi = sc__jrank_module(job, r, path, type, 0);
  assert_int_equal(mi, 0);
  assert_int_equal(sc__jrank_module(job, r, path, type, 0), 0); /* found, not added */
  assert_int_equal(sc__jrank_module(job, r, path, type, 12), 0); /* heads taken */
  assert_int_equal(sc__jrank_module(job, r, type, type, 0), 1);
  sc_jopmod m = {1, SC_JPASS_FWD, SC_JPARAM_NONE}, w = {2, SC_JPASS_BWD, SC_JPARAM_WEIGHT};
  assert_int_equal(sc__jrank_set_opmod(job, r, 1, &m), 0);
  assert_int_equal(sc__jrank_set_opmod(job, r, 4, &w), 0);
  buf a = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &a), 0);
  sc_job *back;
  int rc = sc_job_read(ctx, "m.scw", a.p, a.len, &back);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  const sc_jrank *y = &back->ranks[0];
  assert_int_equal(y->nmodules, 2);
  assert_string_equal(sc__job_str(back, y->modules[0].path), "blocks.0.c_attn");
  assert_int_equal(y->modules[0].heads, 12);
  assert_int_equal(sc__jrank_opmod(y, 1).module, 1);
  assert_int_equal(sc__jrank_opmod(y, 4).pass, SC_JPASS_BWD);
  assert_int_equal(sc__jrank_opmod(y, 4).param, SC_JPARAM_WEIGHT);
  assert_int_equal(sc__jrank_opmod(y, 0).module, 0);
  assert_null(back->ranks[1].opmods);
  sc_job_free(back);
  /* Op 4's module index (2) made 3, past the table of 2. */
  unsigned char *p = (unsigned char *)a.p;
  size_t at = SIZE_MAX;
  for (size_t q = a.len - 8; q > 32; q--)
    if (rd32(p + q) == 2 && p[q + 4] == SC_JPASS_BWD && p[q + 5] == SC_JPARAM_WEIGHT) {
      at = q;
      break;
    }
  assert_true(at != SIZE_MAX);
  wr32(p + at, 3);
  wr32(p + 24, (uint32_t)crc32(crc32(0L, Z_NULL, 0), p + 32, (uInt)(a.len - 32)));
  expect_error(a.p, a.len, "op module index out of range");
  sc_job_free(job);
  free(a.p);
}

static void expect_error(const char *img, size_t len, const char *msg) {
  sc_job *job = NULL;
  int rc = sc_job_read(ctx, "x.scw", img, len, &job);
  if (rc == 0) fail_msg("accepted a damaged file (%s expected)", msg);
  assert_null(job);
  if (msg && !strstr(sc_errmsg(ctx), msg)) fail_msg("\"%s\" does not say \"%s\"", sc_errmsg(ctx), msg);
  assert_non_null(strstr(sc_errmsg(ctx), "x.scw:"));
}

static void test_damage_detected(void **state) {
  (void)state;
  sc_job *job = sample_job();
  buf a = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &a), 0);
  sc_job_free(job);
  for (size_t n = 0; n < a.len; n++) expect_error(a.p, n, NULL);
  expect_error(a.p, 10, "bad magic");
  expect_error(a.p, a.len - 1, "payload length does not match");
  char *c = malloc(a.len + 1);
  for (size_t i = 0; i < a.len; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(c, a.p, a.len);
      c[i] ^= (char)(1 << bit);
      expect_error(c, a.len, NULL);
    }
  memcpy(c, a.p, a.len);
  c[24] ^= 1;
  expect_error(c, a.len, "checksum mismatch");
  memcpy(c, a.p, a.len);
  c[8] = 9;
  job = NULL;
  assert_int_equal(sc_job_read(ctx, "x.scw", c, a.len, &job), SC_EUNSUPPORTED);
  assert_non_null(strstr(sc_errmsg(ctx), "version 9 is not supported"));
  memcpy(c, a.p, a.len);
  c[a.len] = 0;
  expect_error(c, a.len + 1, "payload length");
  free(c);
  free(a.p);
}

/* Damage the checksum cannot see: every payload byte changed, CRC fixed up. */
static void test_forged_payloads(void **state) {
  (void)state;
  sc_job *job = sample_job();
  buf a = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &a), 0);
  sc_job_free(job);
  unsigned char *c = malloc(a.len);
  static const unsigned char xors[] = {0x01, 0x80, 0xff, 0x7f};
  size_t rejected = 0, total = 0;
  for (size_t i = 32; i < a.len; i++)
    for (size_t x = 0; x < sizeof xors; x++) {
      memcpy(c, a.p, a.len);
      c[i] ^= xors[x];
      uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), c + 32, (uInt)(a.len - 32));
      for (int k = 0; k < 4; k++) c[24 + k] = (unsigned char)(crc >> (8 * k));
      sc_job *back = NULL;
      int rc = sc_job_read(ctx, "f.scw", c, a.len, &back);
      total++;
      if (rc) {
        rejected++;
        assert_null(back);
        assert_non_null(strstr(sc_errmsg(ctx), "f.scw"));
      } else {
        /* Accepted: the damage hit a value (a duration, a name byte), and
         * the job is still consistent enough to summarise and write. */
        sc_job_info info;
        sc_job_get_info(back, &info);
        buf w = {0};
        assert_int_equal(sc_job_write(back, sc_test_buf_write, &w), 0);
        free(w.p);
        sc_job_free(back);
      }
    }
  /* Structure (counts, indices, kinds, tags) is most of the file. */
  assert_true(rejected > total / 3);
  free(c);
  free(a.p);
}

/* Writes v (little-endian, n bytes) at p[at] and fixes the CRC up. */
static void forge(unsigned char *p, size_t len, size_t at, const void *v, size_t n) {
  memcpy(p + at, v, n);
  uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p + 32, (uInt)(len - 32));
  for (int k = 0; k < 4; k++) p[24 + k] = (unsigned char)(crc >> (8 * k));
}

/* Offset of the first op of the first RANK section. */
static size_t first_op(const unsigned char *p, size_t len) {
  for (size_t pos = 32; pos + 16 <= len;) {
    uint64_t sl = 0;
    for (int k = 0; k < 8; k++) sl |= (uint64_t)p[pos + 8 + k] << (8 * k);
    if (!memcmp(p + pos, "RANK", 4)) {
      uint32_t nstreams = p[pos + 16 + 32] | p[pos + 16 + 33] << 8;
      return pos + 16 + 44 + 16 * (size_t)nstreams;
    }
    pos += 16 + (size_t)sl;
  }
  fail_msg("no RANK section");
  return 0;
}

/* Numbers past their bounds (job_int.h, docs/SCW.md "Bounds") with a valid
 * CRC: durations past SC_WORK_MAX, FLOPs and bytes not finite or beyond the
 * physical maximum are "name:offset: field: value out of range [lo, hi]";
 * the same values in an imported job are refused by sc_job_finish, so no
 * written job fails to read back. (Issue 13: INT64_MAX durations and 1e158
 * bytes were accepted and overflowed in replay and the engine.) */
static void test_bounds(void **state) {
  (void)state;
  sc_job *job = sample_job();
  buf a = {0};
  assert_int_equal(sc_job_write(job, sc_test_buf_write, &a), 0);
  sc_job_free(job);
  size_t op = first_op((unsigned char *)a.p, a.len);
  unsigned char *c = malloc(a.len);
  const int64_t durs[] = {INT64_MAX, ((int64_t)1 << 50) + 1, -1};
  for (size_t i = 0; i < sizeof durs / sizeof durs[0]; i++) {
    memcpy(c, a.p, a.len);
    forge(c, a.len, op, &durs[i], 8);
    sc_job *back = NULL;
    assert_int_equal(sc_job_read(ctx, "d.scw", c, a.len, &back), SC_EINVAL);
    assert_null(back);
    assert_non_null(strstr(sc_errmsg(ctx), "op duration (ns):"));
    assert_non_null(strstr(sc_errmsg(ctx), "out of range [0, 1125899906842624]"));
  }
  const double vals[] = {INFINITY, NAN, 1.2e158, -1};
  for (int field = 0; field < 2; field++)
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
      memcpy(c, a.p, a.len);
      forge(c, a.len, op + 16 + 8 * (size_t)field, &vals[i], 8);
      sc_job *back = NULL;
      assert_int_equal(sc_job_read(ctx, "v.scw", c, a.len, &back), SC_EINVAL);
      assert_non_null(strstr(sc_errmsg(ctx), field ? "op bytes:" : "op FLOPs:"));
      assert_non_null(strstr(sc_errmsg(ctx), "out of range"));
    }
  free(c);
  free(a.p);
  /* The importers' side: sc_job_finish checks the same bounds. */
  job = sample_job();
  job->ranks[1].ops[2].dur_ns = ((int64_t)1 << 50) + 1;
  assert_int_equal(sc_job_finish(job), SC_EINVAL);
  assert_string_equal(sc_errmsg(ctx), "rank1.json: rank 1 op 2: duration (ns): 1125899906842625 out of range "
                                      "[0, 1125899906842624]");
  job->ranks[1].ops[2].dur_ns = 10;
  job->ranks[0].ops[1].bytes = 1e300;
  assert_int_equal(sc_job_finish(job), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "rank 0 op 1: bytes: 1e+300 out of range [0, 1125899906842624]"));
  sc_job_free(job);
}

/* Groups are found by their members through a hash (a trace names one on
 * every collective); at most SC_JOB_MAX_GROUPS of them. */
static void test_groups(void **state) {
  (void)state;
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  for (int64_t g = 0; g < SC_JOB_MAX_GROUPS; g++) {
    int64_t m[2] = {g + 1, 0}; /* unsorted: sorted by the call */
    uint32_t id;
    assert_int_equal(sc__job_group(job, m, 2, 0, &id), 0);
    assert_int_equal(id, (uint32_t)g);
  }
  for (int64_t g = SC_JOB_MAX_GROUPS - 1; g >= 0; g -= 4099) {
    int64_t m[3] = {0, g + 1, 0}; /* duplicates dropped: the same group */
    uint32_t id;
    assert_int_equal(sc__job_group(job, m, 3, 0, &id), 0);
    assert_int_equal(id, (uint32_t)g);
  }
  int64_t m[2] = {0, 1 << 30};
  uint32_t id;
  assert_int_equal(sc__job_group(job, m, 2, 0, &id), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "more than 65536 communication groups"));
  sc_job_free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_groups),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_reads_version_1),
      cmocka_unit_test(test_reads_version_2),
      cmocka_unit_test(test_modules),
      cmocka_unit_test(test_damage_detected),
      cmocka_unit_test(test_forged_payloads),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
