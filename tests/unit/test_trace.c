/*
 * test_trace.c: trace import. The JSON tokenizer on buffers split at every
 * byte, exact int64 timestamps, malformed JSON as file:offset errors; the
 * Kineto importer (host timeline, syncs, collectives from args, annotations
 * or kernel names, CUDA event dependencies), plain/gzip/zstd giving the same
 * job, truncated and corrupt input, failed allocations; every shipped trace
 * (validation/traces) importing with its expected counts; the Chakra
 * protobuf and host-JSON readers.
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

#include "trace/job_int.h"
#include "base/json_int.h"
#include "stepcast/trace.h"
#include "ir/ir_int.h"

static sc_ctx *ctx;

static int setup(void **state) {
  (void)state;
  return sc_ctx_new(NULL, NULL, &ctx);
}
static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

/* ------------------------------------------------------------ helpers */

typedef sc_test_buf buf;

static void bprintf(buf *b, const char *fmt, ...) {
  char tmp[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  assert_true(n > 0 && (size_t)n < sizeof tmp);
  sc_test_buf_write(b, tmp, (size_t)n);
}

/* Path under the source tree (SC_SOURCE_DIR, set by ctest; else "."). */
static const char *src_path(const char *rel) {
  static char p[4096];
  const char *root = getenv("SC_SOURCE_DIR");
  snprintf(p, sizeof p, "%s/%s", root ? root : ".", rel);
  return p;
}

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = (size_t)n;
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

static void job_image(const sc_job *job, buf *out) {
  out->len = 0;
  assert_int_equal(sc_job_write(job, sc_test_buf_write, out), 0);
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

/* ------------------------------------------------------------ tokenizer */

static const char sample_json[] =
    "{\"traceEvents\": [ {\"ph\":\"X\", \"name\":\"a\\\"b\\u00e9\\ud83d\\ude00\", \"ts\": 1682725898094377.891,"
    " \"dur\":-1.5e-3, \"args\": {\"x\": [1, 2.5, -0, 0.25E+2, true, false, null], \"y\": {}}},"
    "\n  [] , \"\" , 1234567890123456789 ], \"z\":\t\"tail\\\\\" }";

typedef struct rec {
  int type, depth;
  uint64_t offset;
  char text[64];
} rec;

/* Tokenizes data fed in the given pieces; returns the token count or -1. */
static int tokenize(const char *data, size_t len, const size_t *cuts, int ncuts, rec *out, int max) {
  sc_json j;
  sc__json_init(&j, ctx);
  int n = 0, rc = 0;
  size_t prev = 0;
  for (int c = 0; c <= ncuts && rc >= 0; c++) {
    size_t end = c < ncuts ? cuts[c] : len;
    sc__json_feed(&j, data + prev, end - prev);
    sc_jtok t;
    while ((rc = sc__json_next(&j, &t)) == 1 && n < max) {
      memset(&out[n], 0, sizeof out[n]);
      out[n].type = t.type;
      out[n].depth = t.depth;
      out[n].offset = t.offset;
      size_t k = t.n < sizeof out[n].text - 1 ? t.n : sizeof out[n].text - 1;
      memcpy(out[n].text, t.s ? t.s : "", k);
      out[n].text[k] = 0;
      n++;
    }
    prev = end;
  }
  if (rc >= 0) {
    sc__json_end(&j);
    sc__json_feed(&j, "", 0);
    sc_jtok t;
    while ((rc = sc__json_next(&j, &t)) == 1 && n < max) {
      memset(&out[n], 0, sizeof out[n]);
      out[n].type = t.type;
      out[n].depth = t.depth;
      out[n].offset = t.offset;
      size_t k = t.n < sizeof out[n].text - 1 ? t.n : sizeof out[n].text - 1;
      memcpy(out[n].text, t.s ? t.s : "", k);
      out[n].text[k] = 0;
      n++;
    }
  }
  sc__json_free(&j);
  return rc < 0 ? -1 : n;
}

static void test_tokens_whole(void **state) {
  (void)state;
  rec t[128];
  int n = tokenize(sample_json, strlen(sample_json), NULL, 0, t, 128);
  assert_true(n > 20);
  assert_int_equal(t[0].type, SC_JT_OBJ_BEGIN);
  assert_int_equal(t[0].depth, 0);
  assert_int_equal(t[1].type, SC_JT_KEY);
  assert_string_equal(t[1].text, "traceEvents");
  assert_int_equal(t[2].type, SC_JT_ARR_BEGIN);
  assert_int_equal(t[3].type, SC_JT_OBJ_BEGIN);
  assert_int_equal(t[3].depth, 2);
  /* The escaped name stays raw in the token and decodes to UTF-8. */
  assert_string_equal(t[7].text, "a\\\"b\\u00e9\\ud83d\\ude00");
  char dec[32];
  size_t dn = sc__json_unescape(t[7].text, strlen(t[7].text), dec, sizeof dec);
  assert_int_equal(dn, 2 + 1 + 2 + 4);
  assert_memory_equal(dec, "a\"b\xc3\xa9\xf0\x9f\x98\x80", 9);
  assert_string_equal(t[9].text, "1682725898094377.891");
  assert_int_equal(t[9].type, SC_JT_NUMBER);
  assert_int_equal(t[n - 1].type, SC_JT_OBJ_END);
  assert_int_equal(t[n - 1].depth, 0);
  assert_string_equal(t[n - 2].text, "tail\\\\");
}

/* Every split point and byte-by-byte feeding give the same tokens. */
static void test_tokens_split(void **state) {
  (void)state;
  size_t len = strlen(sample_json);
  rec ref[128], got[128];
  int n = tokenize(sample_json, len, NULL, 0, ref, 128);
  for (size_t k = 1; k < len; k++) {
    int m = tokenize(sample_json, len, &k, 1, got, 128);
    assert_int_equal(m, n);
    assert_memory_equal(got, ref, sizeof(rec) * (size_t)n);
  }
  size_t cuts[512];
  for (size_t k = 0; k + 1 < len; k++) cuts[k] = k + 1;
  int m = tokenize(sample_json, len, cuts, (int)len - 1, got, 128);
  assert_int_equal(m, n);
  assert_memory_equal(got, ref, sizeof(rec) * (size_t)n);
  /* Two cuts anywhere (every pair on a shorter document). */
  const char *small = "{\"ab\":[12.5e1,\"c\\nd\",true],\"e\":null}";
  size_t sl = strlen(small);
  n = tokenize(small, sl, NULL, 0, ref, 128);
  for (size_t a = 1; a < sl; a++)
    for (size_t b = a; b < sl; b++) {
      size_t c2[2] = {a, b};
      m = tokenize(small, sl, c2, 2, got, 128);
      assert_int_equal(m, n);
      assert_memory_equal(got, ref, sizeof(rec) * (size_t)n);
    }
}

static void test_timestamps(void **state) {
  (void)state;
  int64_t v;
  assert_int_equal(sc__json_us_to_ns("1682725898094377.891", 20, &v), 0);
  assert_true(v == INT64_C(1682725898094377891));
  assert_int_equal(sc__json_us_to_ns("4458676416788.066", 17, &v), 0);
  assert_true(v == INT64_C(4458676416788066));
  assert_int_equal(sc__json_us_to_ns("1682725898236567", 16, &v), 0);
  assert_true(v == INT64_C(1682725898236567000));
  assert_int_equal(sc__json_us_to_ns("68.0", 4, &v), 0);
  assert_true(v == 68000);
  assert_int_equal(sc__json_us_to_ns("1.5e3", 5, &v), 0);
  assert_true(v == 1500000);
  assert_int_equal(sc__json_us_to_ns("-1.5", 4, &v), 0);
  assert_true(v == -1500);
  assert_int_equal(sc__json_us_to_ns("0.0005", 6, &v), 0); /* half away from zero */
  assert_true(v == 1);
  assert_int_equal(sc__json_us_to_ns("0.00049", 7, &v), 0);
  assert_true(v == 0);
  assert_int_equal(sc__json_us_to_ns("2.5e-4", 6, &v), 0);
  assert_true(v == 0);
  assert_int_equal(sc__json_us_to_ns("9223372036854775.807", 20, &v), 0);
  assert_true(v == INT64_MAX);
  assert_int_not_equal(sc__json_us_to_ns("9223372036854775.808", 20, &v), 0);
  assert_int_not_equal(sc__json_us_to_ns("1e400", 5, &v), 0);
  assert_int_not_equal(sc__json_us_to_ns("abc", 3, &v), 0);
  assert_int_equal(sc__json_int("68.0", 4, &v), 0);
  assert_true(v == 68);
  assert_int_not_equal(sc__json_int("68.5", 4, &v), 0);
  assert_int_equal(sc__json_int("12e2", 4, &v), 0);
  assert_true(v == 1200);
  assert_int_equal(sc__json_int("-9223372036854775807", 20, &v), 0);
  assert_true(v == -INT64_MAX);
}

static void test_json_errors(void **state) {
  (void)state;
  static const struct {
    const char *doc;
    uint64_t offset;
    const char *msg;
  } cases[] = {
      {"{\"a\":1,}", 7, "unexpected '}'"},
      {"[1 2]", 3, "unexpected value"},
      {"{\"a\" 1}", 5, "unexpected value"},
      {"{\"a\":\"abc", 5, "unexpected end of input inside a string"},
      {"[tru", 1, "unexpected end of input inside a token"},
      {"[trux]", 1, "invalid literal"},
      {"[01]", 1, "invalid number"},
      {"[1.e5]", 1, "invalid number"},
      {"[-]", 1, "invalid number"},
      {"[1]]", 3, "data after the top-level value"},
      {"", 0, "empty input"},
      {"   ", 3, "empty input"},
      {"{\"a\":\"\x01\"}", 5, "invalid string (control character or bad escape)"},
      {"[\"\\x\"]", 1, "invalid string (control character or bad escape)"},
      {"[\"\\u12g4\"]", 1, "invalid string (control character or bad escape)"},
      {"{\"a\":1", 6, "unexpected end of input"},
      {"[1,]", 3, "unexpected ']'"},
      {"{1:2}", 1, "unexpected value"},
      {"[1}", 2, "unexpected '}'"},
      {"[1:2]", 2, "unexpected ':'"},
      {"@", 0, "unexpected character"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* Same error whether whole or split at every byte. */
    size_t len = strlen(cases[i].doc);
    for (size_t cut = 0; cut <= len; cut++) {
      sc_json j;
      sc__json_init(&j, ctx);
      sc_jtok t;
      int rc = 0;
      sc__json_feed(&j, cases[i].doc, cut);
      while ((rc = sc__json_next(&j, &t)) == 1) {}
      if (rc == 0) {
        sc__json_feed(&j, cases[i].doc + cut, len - cut);
        while ((rc = sc__json_next(&j, &t)) == 1) {}
      }
      if (rc == 0) {
        sc__json_end(&j);
        sc__json_feed(&j, "", 0);
        while ((rc = sc__json_next(&j, &t)) == 1) {}
      }
      if (rc != SC_EINVAL || j.err_off != cases[i].offset || strcmp(j.errmsg, cases[i].msg))
        fail_msg("case %zu (%s) cut %zu: rc %d offset %llu \"%s\"", i, cases[i].doc, cut, rc,
                 (unsigned long long)j.err_off, j.errmsg);
      sc__json_free(&j);
    }
  }
  /* Nesting beyond the limit. */
  char deep[SC_JSON_MAX_DEPTH + 2];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = 0;
  sc_json j;
  sc__json_init(&j, ctx);
  sc__json_feed(&j, deep, strlen(deep));
  sc_jtok t;
  int rc;
  while ((rc = sc__json_next(&j, &t)) == 1) {}
  assert_int_equal(rc, SC_EINVAL);
  assert_string_equal(j.errmsg, "nesting too deep");
  assert_int_equal(j.err_off, SC_JSON_MAX_DEPTH);
  sc__json_free(&j);
}

/* ------------------------------------------------------------ Kineto */

/* A small two-iteration trace of `rank` of 2: per step a GEMM on stream 7,
 * a gradient all-reduce on stream 20 (waiting on the GEMM, as a stream
 * wait would make it), an optimizer kernel after a stream synchronize, and
 * a device-to-host copy. Times in µs with fractional nanoseconds. With
 * `skew`, the rank's GEMM is faster and its all-reduce kernel starts early
 * and waits for the other rank: both all-reduces end together. */
static void kineto_trace_skew(buf *b, int rank, int with_args, int with_sync_records, int skew) {
  bprintf(b, "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", "
             "\"numSms\": 108}],\n \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": 2},\n"
             " \"traceEvents\": [\n",
          rank);
  int corr = 100;
  for (int it = 0; it < 2; it++) {
    double t = 1000.0 + it * 1000.0;
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": 1, "
               "\"tid\": 1, \"ts\": %.3f, \"dur\": 1000},\n", it + 5, t);
    /* GEMM: launched at +10 (returns +15.5), runs +17.125..+317.375 */
    double gemm = skew ? 150.25 : 300.25, ar_start = 17.125 + gemm + 1, ar_dur = 518.375 - ar_start;
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
               "\"tid\": 1, \"ts\": %.3f, \"dur\": 5.5, \"args\": {\"correlation\": %d}},\n", t + 10, corr);
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_bf16_s16816gemm_bf16_128x128_nn\", "
               "\"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"device\": 0, "
               "\"stream\": 7, \"correlation\": %d}},\n", t + 17.125, gemm, corr);
    corr++;
    /* all-reduce: launched at +20, starts just after the GEMM ends, ends at
     * +518.375 (200 us of transfer) */
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
               "\"tid\": 1, \"ts\": %.3f, \"dur\": 6, \"args\": {\"correlation\": %d}},\n", t + 20, corr);
    if (with_args)
      bprintf(b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\", "
                 "\"pid\": 0, \"tid\": 20, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"device\": 0, "
                 "\"stream\": 20, \"correlation\": %d, \"Collective name\": \"allreduce\", "
                 "\"In msg nelems\": 1048576, \"Out msg nelems\": 1048576, \"Group size\": 2, "
                 "\"dtype\": \"BFloat16\", \"Process Group Name\": \"0\", \"Process Group Ranks\": \"[0, 1]\"}},\n",
              t + ar_start, ar_dur, corr);
    else
      bprintf(b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)\", "
                 "\"pid\": 0, \"tid\": 20, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"device\": 0, "
                 "\"stream\": 20, \"correlation\": %d}},\n", t + ar_start, ar_dur, corr);
    if (with_sync_records) {
      /* cudaEventRecord on stream 7 after the GEMM, cudaStreamWaitEvent on 20. */
      bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaEventRecord\", \"pid\": 1, "
                 "\"tid\": 1, \"ts\": %.3f, \"dur\": 1, \"args\": {\"correlation\": %d}},\n", t + 16, corr + 500);
      bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamWaitEvent\", \"pid\": 1, "
                 "\"tid\": 1, \"ts\": %.3f, \"dur\": 1, \"args\": {\"correlation\": %d}},\n", t + 18, corr + 501);
      bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Wait Event\", \"pid\": 0, "
                 "\"tid\": 20, \"ts\": %.3f, \"dur\": 0, \"args\": {\"device\": 0, \"stream\": 20, "
                 "\"correlation\": %d, \"wait_on_stream\": 7, \"wait_on_cuda_event_record_corr_id\": %d}},\n",
              t + 19, corr + 501, corr + 500);
    }
    corr++;
    /* stream synchronize at +30, returns at +519 (all-reduce ended +518.375) */
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": 1, "
               "\"tid\": 1, \"ts\": %.3f, \"dur\": 489, \"args\": {\"correlation\": %d}},\n", t + 30, corr++);
    /* optimizer at +610 on stream 7, 50 us; then a 4 KiB copy */
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
               "\"tid\": 1, \"ts\": %.3f, \"dur\": 5, \"args\": {\"correlation\": %d}},\n", t + 610, corr);
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void multi_tensor_apply_kernel<Adam>\", "
               "\"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": 50, \"args\": {\"device\": 0, "
               "\"stream\": 7, \"correlation\": %d}},\n", t + 616, corr);
    corr++;
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 1, "
               "\"tid\": 1, \"ts\": %.3f, \"dur\": 3, \"args\": {\"correlation\": %d}},\n", t + 620, corr);
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", "
               "\"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": 2, \"args\": {\"device\": 0, "
               "\"stream\": 7, \"correlation\": %d, \"bytes\": 4096}},\n", t + 666.5, corr);
    corr++;
    /* A CPU op and a flow event: dropped. */
    bprintf(b, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
               "\"ts\": %.3f, \"dur\": 8, \"args\": {\"Input Dims\": [[64, 64], [64, 64]]}},\n", t + 9);
    bprintf(b, "{\"ph\": \"s\", \"id\": %d, \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"cat\": \"ac2g\", "
               "\"name\": \"ac2g\"},\n", corr, t + 10);
  }
  bprintf(b, "{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", "
             "\"ts\": 9999}\n]}\n");
}

static void kineto_trace(buf *b, int rank, int with_args, int with_sync_records) {
  kineto_trace_skew(b, rank, with_args, with_sync_records, 0);
}

static const sc_jop *find_op(const sc_job *job, const sc_jrank *r, const char *prefix, int nth) {
  for (size_t k = 0; k < r->nops; k++)
    if (!strncmp(sc__job_str(job, r->ops[k].name), prefix, strlen(prefix)) && nth-- == 0) return &r->ops[k];
  return NULL;
}

static int depends_on(const sc_jrank *r, const sc_jop *op, const sc_jop *on) {
  for (uint32_t d = 0; d < op->ndeps; d++)
    if (&r->ops[r->deps[op->dep_off + d]] == on) return 1;
  return 0;
}

static void test_kineto_program(void **state) {
  (void)state;
  buf b = {0};
  kineto_trace(&b, 1, 1, 0);
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "r1.json", b.p, b.len, 4096, 0), 0);
  assert_int_equal(sc_job_finish(job), 0);
  sc_job_info info;
  sc_job_get_info(job, &info);
  assert_int_equal(info.world, 2);
  assert_int_equal(info.ranks, 1);
  assert_int_equal(info.gpu_ops, 8);
  assert_int_equal(info.collectives, 2);
  assert_int_equal(info.iterations, 2);
  assert_int_equal(info.groups, 1);
  const sc_jrank *r = &job->ranks[0];
  assert_int_equal(r->rank, 1);
  assert_string_equal(sc__job_str(job, r->gpu), "NVIDIA A100-SXM4-80GB");
  assert_string_equal(sc_job_gpu_preset(job), "a100-80gb");
  /* Span: first step start (1000) to the last step end (3000). */
  assert_true(r->span_ns == 2000000);
  assert_int_equal(r->nstreams, 3); /* host, stream 7, stream 20 */
  assert_true(r->streams[0].host);
  const sc_jop *gemm = find_op(job, r, "ampere_bf16", 0);
  const sc_jop *ar = find_op(job, r, "ncclDevKernel_AllReduce", 0);
  const sc_jop *adam = find_op(job, r, "void multi_tensor", 0);
  const sc_jop *cp = find_op(job, r, "Memcpy DtoH", 1);
  assert_non_null(gemm);
  assert_non_null(ar);
  assert_non_null(adam);
  assert_non_null(cp);
  assert_true(gemm->dur_ns == 300250); /* 300.25 us, exact */
  assert_true(gemm->start_ns == 17125);
  assert_int_equal(ar->kind, SC_JOP_COLL);
  assert_int_equal(ar->coll, SC_COLL_ALLREDUCE);
  assert_true(ar->bytes == 1048576.0 * 2); /* bf16 */
  assert_int_equal(job->groups[ar->group].n, 2);
  assert_int_equal(cp->kind, SC_JOP_MEMCPY);
  assert_true(cp->bytes == 4096);
  assert_int_equal(cp->iter, 1);
  /* The all-reduce started when the GEMM ended, not at its launch: an
   * inferred cross-stream dependency. */
  assert_true(depends_on(r, ar, gemm));
  /* The host synchronised on the all-reduce, and the optimizer's launch
   * comes after that sync. */
  const sc_jop *sync = NULL;
  for (size_t k = 0; k < r->nops && !sync; k++)
    if (r->ops[k].kind == SC_JOP_SYNC) sync = &r->ops[k];
  assert_non_null(sync);
  assert_true(depends_on(r, sync, ar));
  assert_true(sync->dur_ns == 625); /* returned 0.625 us after the all-reduce ended */
  /* Host time adds up to the traced window. */
  int64_t host = 0;
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_HOST) host += r->ops[k].dur_ns;
  assert_true(host > 0 && host < r->span_ns);
  sc_job_free(job);
  free(b.p);
}

/* Without args, the collective comes from the kernel name; with CUDA event
 * records, the dependency comes from them (not from timing). */
static void test_kineto_fallbacks(void **state) {
  (void)state;
  buf b = {0};
  kineto_trace(&b, 0, 0, 1);
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "r0.json", b.p, b.len, 1000, 0), 0);
  const sc_jrank *r = &job->ranks[0];
  const sc_jop *ag = find_op(job, r, "ncclKernel_AllGather", 0);
  const sc_jop *gemm = find_op(job, r, "ampere_bf16", 0);
  assert_non_null(ag);
  assert_int_equal(ag->kind, SC_JOP_COLL);
  assert_int_equal(ag->coll, SC_COLL_ALLGATHER);
  assert_true(ag->bytes == 0); /* no size known */
  assert_int_equal(job->groups[ag->group].n, 2); /* the world */
  assert_true(depends_on(r, ag, gemm));
  /* No timing inference was needed (the record said so). */
  for (size_t i = 0; i < job->nwarns; i++) assert_null(strstr(job->warns[i].msg, "inferred"));
  sc_job_free(job);
  free(b.p);
}

static size_t gzip_mem(const char *in, size_t n, unsigned char **out) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&z, n);
  *out = malloc(cap);
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)n;
  z.next_out = *out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  size_t len = cap - z.avail_out;
  deflateEnd(&z);
  return len;
}

static size_t zstd_mem(const char *in, size_t n, unsigned char **out) {
  size_t cap = ZSTD_compressBound(n);
  *out = malloc(cap);
  size_t len = ZSTD_compress(*out, cap, in, n, 3);
  assert_false(ZSTD_isError(len));
  return len;
}

static void test_encodings_equal(void **state) {
  (void)state;
  buf b = {0}, ref = {0}, got = {0};
  kineto_trace(&b, 0, 1, 0);
  unsigned char *gz, *zs;
  size_t gzn = gzip_mem(b.p, b.len, &gz), zsn = zstd_mem(b.p, b.len, &zs);
  static const size_t pieces[] = {1, 7, 4096, 1 << 20};
  for (int enc = 0; enc < 3; enc++)
    for (size_t pi = 0; pi < sizeof pieces / sizeof pieces[0]; pi++) {
      const void *data = enc == 0 ? (const void *)b.p : enc == 1 ? (const void *)gz : (const void *)zs;
      size_t len = enc == 0 ? b.len : enc == 1 ? gzn : zsn;
      sc_job *job;
      assert_int_equal(sc_job_new(ctx, &job), 0);
      int rc = import_mem(job, SC_TRACE_KINETO, "trace", data, len, pieces[pi], 0);
      if (rc) fail_msg("encoding %d, pieces of %zu: %s", enc, pieces[pi], sc_errmsg(ctx));
      job_image(job, enc == 0 && pi == 0 ? &ref : &got);
      if (!(enc == 0 && pi == 0)) {
        assert_int_equal(got.len, ref.len);
        assert_memory_equal(got.p, ref.p, ref.len);
      }
      sc_job_free(job);
    }
  /* Concatenated gzip members read as one stream (RFC 1952). */
  size_t half = b.len / 2;
  unsigned char *g1, *g2;
  size_t n1 = gzip_mem(b.p, half, &g1), n2 = gzip_mem(b.p + half, b.len - half, &g2);
  unsigned char *cat = malloc(n1 + n2);
  memcpy(cat, g1, n1);
  memcpy(cat + n1, g2, n2);
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "trace", cat, n1 + n2, 333, 0), 0);
  job_image(job, &got);
  assert_memory_equal(got.p, ref.p, ref.len);
  sc_job_free(job);
  free(cat);
  free(g1);
  free(g2);
  /* Truncated and corrupt streams: errors with the file name, no crash. */
  static const struct {
    int enc;
    size_t cut;
    const char *msg;
  } bad[] = {{1, 0, "truncated gzip data"}, {2, 0, "truncated zstd data"}, {0, 0, "invalid JSON"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const void *data = bad[i].enc == 0 ? (const void *)b.p : bad[i].enc == 1 ? (const void *)gz : (const void *)zs;
    size_t len = bad[i].enc == 0 ? b.len : bad[i].enc == 1 ? gzn : zsn;
    for (size_t cut = 1; cut < len; cut += len / 37 + 1) {
      assert_int_equal(sc_job_new(ctx, &job), 0);
      int rc = import_mem(job, SC_TRACE_KINETO, "cut.json", data, cut, 512, 0);
      assert_int_not_equal(rc, 0);
      assert_non_null(strstr(sc_errmsg(ctx), "cut.json:"));
      if (cut > 10 && !strstr(sc_errmsg(ctx), bad[i].msg))
        fail_msg("cut %zu of encoding %d: %s", cut, bad[i].enc, sc_errmsg(ctx));
      sc_job_free(job);
    }
  }
  for (size_t at = 20; at < gzn - 8; at += gzn / 13) {
    unsigned char *c = malloc(gzn);
    memcpy(c, gz, gzn);
    c[at] ^= 0x55;
    assert_int_equal(sc_job_new(ctx, &job), 0);
    int rc = import_mem(job, SC_TRACE_KINETO, "bad.gz", c, gzn, 4096, 0);
    assert_int_not_equal(rc, 0); /* corrupt deflate data, bad CRC, or bad JSON */
    sc_job_free(job);
    free(c);
  }
  free(gz);
  free(zs);
  free(b.p);
  free(ref.p);
  free(got.p);
}

static void expect_import_error(const char *doc, const char *msg) {
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  int rc = import_mem(job, SC_TRACE_KINETO, "t.json", doc, strlen(doc), 5, 0);
  if (rc == 0 || !strstr(sc_errmsg(ctx), msg)) fail_msg("%s: rc %d, \"%s\"", doc, rc, sc_errmsg(ctx));
  sc_job_free(job);
}

static void test_kineto_errors(void **state) {
  (void)state;
  expect_import_error("{\"schemaVersion\": 1}", "t.json:20: no traceEvents array");
  expect_import_error("[1, 2]", "t.json:6: no GPU kernels");
  expect_import_error("{\"traceEvents\": []}", "no GPU kernels");
  expect_import_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, "
                      "\"dur\": 1, \"args\": {\"stream\": 7, \"correlation\": 1}},]}",
                      "t.json:119: invalid JSON: unexpected ']'");
  expect_import_error("\"just a string\"", "not a Kineto trace");
  expect_import_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1e30, \"dur\": 1}]}",
                      "t.json:52: timestamp out of range");
  /* Events without what a GPU op needs: counted, not fatal when others remain. */
  buf b = {0};
  bprintf(&b, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"dur\": 1, \"args\": {\"stream\": 7}},"
              "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 5, \"dur\": -2, \"args\": {\"stream\": 7}},"
              "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 2, \"dur\": 4, \"args\": {\"stream\": 7}}]}");
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "w.json", b.p, b.len, 3, 4), 0);
  sc_job_info info;
  sc_job_get_info(job, &info);
  assert_int_equal(info.gpu_ops, 2);
  assert_int_equal(job->ranks[0].rank, 4); /* the hint: no distributedInfo */
  assert_true(info.warnings >= 4);        /* no ts, negative dur, no rank, no steps, overlap */
  buf w = {0};
  sc_job_write_warnings(job, sc_test_buf_write, &w);
  assert_non_null(strstr(w.p, "w.json: GPU event without ts, dur or args.stream ignored"));
  assert_non_null(strstr(w.p, "negative duration"));
  assert_non_null(strstr(w.p, "overlapping"));
  free(w.p);
  free(b.p);
  sc_job_free(job);
  /* Two files of different world sizes, or the same rank twice. */
  buf r0 = {0}, r1 = {0};
  kineto_trace(&r0, 0, 1, 0);
  kineto_trace(&r1, 0, 1, 0);
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "a.json", r0.p, r0.len, 65536, 0), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "b.json", r1.p, r1.len, 65536, 1), 0);
  assert_int_equal(sc_job_finish(job), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "rank 0 was already imported from a.json"));
  sc_job_free(job);
  char *p = strstr(r1.p, "\"world_size\": 2");
  p[14] = '4';
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "a.json", r0.p, r0.len, 65536, 0), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "b.json", r1.p, r1.len, 65536, 1), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "b.json:0: world_size 4 differs from 2"));
  sc_job_free(job);
  free(r0.p);
  free(r1.p);
}

/* Allocation failures anywhere: an error, never a crash or a leak (ASan). */
typedef struct failing {
  long left;
} failing;
static void *failing_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  failing *f = ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (f->left-- == 0) return NULL;
  return realloc(ptr, nsize);
}

static void test_alloc_failures(void **state) {
  (void)state;
  buf b = {0};
  kineto_trace(&b, 0, 1, 0);
  unsigned char *gz;
  size_t gzn = gzip_mem(b.p, b.len, &gz);
  int ok = 0;
  for (long n = 0; n < 400 && !ok; n++) {
    failing f = {1 << 30};
    sc_ctx *c;
    assert_int_equal(sc_ctx_new(failing_alloc, &f, &c), 0);
    f.left = n;
    sc_job *job = NULL;
    int rc = sc_job_new(c, &job);
    if (!rc) rc = import_mem(job, SC_TRACE_KINETO, "f.json.gz", gz, gzn, 700, 0);
    buf img = {0};
    if (!rc) rc = sc_job_write(job, sc_test_buf_write, &img);
    if (!rc) {
      sc_job *back;
      rc = sc_job_read(c, "f.scw", img.p, img.len, &back);
      if (!rc) sc_job_free(back);
    }
    free(img.p);
    if (rc) assert_int_equal(rc, SC_ENOMEM);
    else ok = 1;
    sc_job_free(job);
    f.left = 1 << 30;
    sc_ctx_free(c);
  }
  assert_true(ok); /* enough allocations eventually succeed */
  free(gz);
  free(b.p);
}

/* ------------------------------------------------------------ shipped traces */

static void test_shipped_kineto(void **state) {
  (void)state;
  static const struct {
    const char *file;
    int64_t rank, world, gpu_ops, collectives, iterations, min_host;
    double step_ms;
  } t[] = {
      {"validation/traces/hta/nccl_parser_config_nccl_data.json.gz", 0, 2, 3774, 21, 3, 3774, 222.409},
      {"validation/traces/hta/negative_queue_length_rank0.json.gz", 0, 16, 7747, 80, 5, 6000, 246.490},
      {"validation/traces/hta/trace_filter_sampled_rank-0.json.gz", 0, 128, 1204, 10, 2, 1204, 615.144},
      {"validation/traces/hta/trace_filter_sampled_rank-1.json.gz", 1, 128, 1154, 10, 2, 1154, 619.297},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    size_t len;
    unsigned char *data = read_file(src_path(t[i].file), &len);
    if (!data) {
      print_message("skipped %s (run from the source tree or set SC_SOURCE_DIR)\n", t[i].file);
      continue;
    }
    sc_job *job;
    assert_int_equal(sc_job_new(ctx, &job), 0);
    int rc = import_mem(job, SC_TRACE_KINETO, t[i].file, data, len, 1 << 16, 0);
    if (rc) fail_msg("%s: %s", t[i].file, sc_errmsg(ctx));
    assert_int_equal(sc_job_finish(job), 0);
    sc_job_info info;
    sc_job_get_info(job, &info);
    assert_int_equal(job->ranks[0].rank, t[i].rank);
    assert_int_equal(info.world, t[i].world);
    assert_int_equal(info.gpu_ops, t[i].gpu_ops);
    assert_int_equal(info.collectives, t[i].collectives);
    assert_int_equal(info.iterations, t[i].iterations);
    assert_true(info.host_ops >= t[i].min_host);
    if (info.traced_step_s * 1e3 < t[i].step_ms - 0.001 || info.traced_step_s * 1e3 > t[i].step_ms + 0.001)
      fail_msg("%s: traced step %.4f ms", t[i].file, info.traced_step_s * 1e3);
    /* Collectives carry a type and (from the c10d annotations) a size. */
    int64_t typed = 0;
    for (size_t k = 0; k < job->ranks[0].nops; k++) {
      const sc_jop *op = &job->ranks[0].ops[k];
      if (op->kind == SC_JOP_COLL && op->coll != SC_JCOLL_UNKNOWN && op->bytes > 0) typed++;
    }
    assert_true(typed >= info.collectives - 5);
    sc_job_free(job);
    free(data);
  }
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

/* ------------------------------------------------------------ replay */

/* The config the CLI builds for a replay: the cluster for `world` ranks. */
static void replay_config(sc_config *cfg, int64_t world, int64_t gpn) {
  sc_config_default(cfg);
  assert_int_equal(sc_config_set(ctx, cfg, "cluster.gpu=a100-80gb"), 0);
  cfg->parallel.tp = cfg->parallel.pp = cfg->parallel.cp = cfg->parallel.vpp = 1;
  cfg->parallel.dp = 0;
  cfg->cluster.num_gpus = world;
  cfg->cluster.nodes = 0;
  cfg->cluster.gpus_per_node = gpn;
  cfg->training.micro_batch = 1;
  cfg->training.global_batch = world;
  assert_int_equal(sc_config_resolve(ctx, cfg), 0);
}

static void test_replay(void **state) {
  (void)state;
  buf r0 = {0}, r1 = {0};
  kineto_trace(&r0, 0, 1, 0);
  kineto_trace_skew(&r1, 1, 1, 0, 1); /* rank 1 waits 150 us in each all-reduce */
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "r0.json", r0.p, r0.len, 1 << 16, 0), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "r1.json", r1.p, r1.len, 1 << 16, 1), 0);
  assert_int_equal(sc_job_finish(job), 0);
  sc_config cfg;
  replay_config(&cfg, 2, 0); /* the preset's 8 per node; 2 ranks fill part of one */
  sc_replay_opts o = {0, 1, SC_REPLAY_COMM_AUTO, 0, 0, 0};
  sc_replay_result res;
  buf tr = {0};
  int rc = sc_replay(ctx, job, &cfg, &o, sc_test_buf_write, &tr, &res);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_string_equal(res.comm, "measured");
  assert_int_equal(res.simulated_ranks, 2);
  assert_int_equal(res.iterations, 2);
  assert_int_equal(res.measured_collectives, 4);
  /* The host timeline bounds the step: the replay reproduces it. */
  assert_true(res.traced_step_s > 0.000999 && res.traced_step_s < 0.001001);
  if (res.error_pct < -1 || res.error_pct > 1) fail_msg("error %.3f %%", res.error_pct);
  /* Both ranks ran each all-reduce for the shorter traced time, together. */
  assert_non_null(strstr(tr.p, "\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\",\"cat\":\"dp_comm\""));
  assert_null(strstr(tr.p, "\"dur\":350.000")); /* rank 1's traced 350 us */
  assert_non_null(strstr(tr.p, "\"dur\":200.000"));
  /* The comm model instead; then re-targeted to 64 ranks on 8 nodes. */
  o.comm = SC_REPLAY_COMM_MODEL;
  assert_int_equal(sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res), 0);
  assert_int_equal(res.modelled_collectives, 4);
  double model2 = res.breakdown_s[SC_CAT_DP];
  o.comm = SC_REPLAY_COMM_AUTO;
  o.scale_dp = 64;
  replay_config(&cfg, 64, 8);
  assert_int_equal(sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res), 0);
  assert_string_equal(res.comm, "model");
  assert_int_equal(res.world, 64);
  assert_int_equal(res.dp, 64);
  assert_int_equal(res.traced_dp, 2);
  assert_true(res.predicted_step_s > 0.0009); /* the host timeline still bounds it */
  assert_true(res.breakdown_s[SC_CAT_DP] > model2); /* across nodes now */
  /* Text and JSON reports. */
  buf out = {0};
  assert_int_equal(sc_replay_format(&res, SC_FORMAT_TEXT, sc_test_buf_write, &out), 0);
  assert_non_null(strstr(out.p, "re-targeted: data parallel 2 -> 64 (world 2 -> 64)"));
  out.len = 0;
  assert_int_equal(sc_replay_format(&res, SC_FORMAT_JSON, sc_test_buf_write, &out), 0);
  assert_non_null(strstr(out.p, "\"dp\":64,\"traced_dp\":2"));
  /* Ranks per replica must divide the traced world. */
  o.replica_ranks = 3;
  assert_int_equal(sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res), SC_EINVAL);
  free(out.p);
  free(tr.p);
  sc_job_free(job);
  free(r0.p);
  free(r1.p);
}

/* ------------------------------------------------------------ ex-situ */

/* A CPU trace as tools/trace_torch.py writes it: forward conv (with its
 * scalar arguments), linear (addmm under aten::linear), backward with a
 * convolution_backward (its children are the CPU's own kernels: dropped),
 * an autograd node, two AccumulateGrad and a view. Times in us. */
static const char exsitu_json[] =
    "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":0,\"world_size\":1},\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::conv2d\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":50,"
    "\"args\":{\"Input Dims\":[[8,3,32,32],[16,3,3,3],[16],[],[],[],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::convolution\",\"pid\":1,\"tid\":1,\"ts\":11,\"dur\":48,"
    "\"args\":{\"Input Dims\":[[8,3,32,32],[16,3,3,3],[16],[],[],[],[],[],[]],"
    "\"Input type\":[\"float\",\"float\",\"float\",\"\",\"\",\"\",\"\",\"\",\"\"],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"[2, 2]\",\"[1, 1]\",\"[1, 1]\",\"False\",\"[0, 0]\",\"1\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::view\",\"pid\":1,\"tid\":1,\"ts\":70,\"dur\":2,"
    "\"args\":{\"Input Dims\":[[8,16,16,16],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,\"tid\":1,\"ts\":80,\"dur\":30,"
    "\"args\":{\"Input Dims\":[[8,4096],[10,4096],[10]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::addmm\",\"pid\":1,\"tid\":1,\"ts\":85,\"dur\":20,"
    "\"args\":{\"Input Dims\":[[10],[8,4096],[4096,10],[],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: ConvolutionBackward0\","
    "\"pid\":1,\"tid\":1,\"ts\":200,\"dur\":100,\"args\":{}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::convolution_backward\",\"pid\":1,\"tid\":1,\"ts\":201,\"dur\":98,"
    "\"args\":{\"Input Dims\":[[8,16,16,16],[8,3,32,32],[16,3,3,3],[],[],[],[],[],[],[],[]],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"\",\"[2, 2]\",\"[1, 1]\",\"[1, 1]\",\"False\",\"[0, 0]\",\"1\","
    "\"[False, True, True]\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::fill_\",\"pid\":1,\"tid\":1,\"ts\":250,\"dur\":10,"
    "\"args\":{\"Input Dims\":[[16,3,3,3],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":310,\"dur\":5,\"args\":{\"Input Dims\":[[16,3,3,3]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":320,\"dur\":5,\"args\":{\"Input Dims\":[[10,4096]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":1,\"tid\":1,\"ts\":400,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[10,4096],[10,4096],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":1,\"tid\":1,\"ts\":410,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[],[],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::frobnicate\",\"pid\":1,\"tid\":1,\"ts\":420,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[10,4096]]}}"
    "]}";

static void test_exsitu(void **state) {
  (void)state;
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  size_t len = sizeof exsitu_json - 1;
  int rc = import_mem(job, SC_TRACE_CPU, "cpu.json", exsitu_json, len, 7, 0);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_job_finish(job), 0);
  const sc_jrank *r = &job->ranks[0];
  /* Kernels: conv forward; addmm (not aten::linear); the weight gradient
   * only (the input needs none); fill_ inside convolution_backward is its
   * implementation: dropped; 2 AccumulateGrad adds; one add_; the unknown
   * operator. The view and the 0-dim add_ launch nothing. */
  size_t kernels = 0, grads = 0, host = 0;
  for (size_t k = 0; k < r->nops; k++) {
    kernels += r->ops[k].kind == SC_JOP_KERNEL;
    grads += r->ops[k].kind == SC_JOP_GRAD;
    host += r->ops[k].kind == SC_JOP_HOST;
  }
  assert_int_equal(kernels, 7);
  assert_int_equal(grads, 2);
  const sc_jop *conv = find_op(job, r, "aten::convolution", 0);
  assert_non_null(conv);
  assert_true(conv->shape > 0);
  const sc_jshape *sh = &r->shapes[conv->shape - 1];
  /* 32x32 input, 3x3 kernel, stride 2, padding 1: 16x16 output. */
  assert_int_equal(sh->cls, SC_JSHAPE_CONV);
  assert_true(sh->m == 8 * 16 * 16 && sh->n == 16 && sh->k == 27);
  assert_true(conv->flops == 2.0 * 8 * 16 * 16 * 16 * 27);
  const sc_jop *mm = find_op(job, r, "aten::addmm", 0);
  sh = &r->shapes[mm->shape - 1];
  assert_true(sh->cls == SC_JSHAPE_GEMM && sh->m == 8 && sh->n == 10 && sh->k == 4096);
  const sc_jop *wg = find_op(job, r, "aten::convolution_backward", 0);
  sh = &r->shapes[wg->shape - 1];
  assert_true(sh->m == 16 && sh->n == 27 && sh->k == 8 * 16 * 16); /* weight gradient */
  assert_null(find_op(job, r, "aten::convolution_backward", 1));
  assert_null(find_op(job, r, "aten::fill_", 0));
  const sc_jop *g = find_op(job, r, "grad ready", 1);
  assert_true(g->bytes == 10 * 4096 * 4.0);
  /* Every kernel waits for its launch, a host op. */
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_KERNEL) {
      assert_int_equal(r->ops[k].ndeps, 1);
      assert_int_equal(r->ops[r->deps[r->ops[k].dep_off]].kind, SC_JOP_HOST);
    }
  /* Counted warning for the unknown operator. */
  buf wb = {0};
  assert_int_equal(sc_job_write_warnings(job, sc_test_buf_write, &wb), 0);
  assert_non_null(strstr(wb.p, "unknown operator aten::frobnicate"));
  /* Round trip through .scw keeps shapes. */
  buf img = {0};
  job_image(job, &img);
  sc_job *back;
  assert_int_equal(sc_job_read(ctx, "x.scw", img.p, img.len, &back), 0);
  buf img2 = {0};
  job_image(back, &img2);
  assert_int_equal(img.len, img2.len);
  assert_memory_equal(img.p, img2.p, img.len);
  /* Replay: priced on the GPU; the host dispatch bounds this tiny step. */
  sc_config cfg;
  replay_config(&cfg, 1, 0);
  cfg.training.precision = SC_PREC_FP32;
  sc_replay_opts o = {0, 1, SC_REPLAY_COMM_AUTO, 0, 0, 0};
  sc_replay_result res, res2;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  assert_int_equal(res.priced_ops, (int64_t)(kernels + host));
  assert_int_equal(res.ddp_buckets, 0);
  assert_true(res.predicted_step_s > 0 && res.gpu_busy_s > 0);
  /* Host time grows the step: 10 us per operator instead of 1. */
  cfg.costs.host_op_us = 1;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  cfg.costs.host_op_us = 10;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res2), 0);
  assert_true(res2.predicted_step_s > res.predicted_step_s);
  /* DDP on 16 ranks (2 nodes): both gradients (1.8 KiB + 160 KiB) fit the
   * first 1 MiB bucket: one all-reduce; a 1 KiB first bucket closes after the
   * first gradient: two. */
  replay_config(&cfg, 16, 8);
  cfg.training.precision = SC_PREC_FP32;
  o.scale_dp = 16;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  assert_int_equal(res.ddp_buckets, 1);
  assert_int_equal(res.modelled_collectives, 1);
  assert_true(res.breakdown_s[SC_CAT_DP] > 0);
  o.ddp_first_bucket_mb = 1.0 / 1024;
  o.ddp_bucket_mb = 1.0 / 16;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res2), 0);
  assert_int_equal(res2.ddp_buckets, 2);
  assert_true(res2.predicted_step_s > res.predicted_step_s * 0.99);
  /* A GPU trace is refused, with a pointer to the right importer. */
  sc_job *bad;
  assert_int_equal(sc_job_new(ctx, &bad), 0);
  const char *gpu = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}]}";
  assert_int_equal(import_mem(bad, SC_TRACE_CPU, "g.json", gpu, strlen(gpu), 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "import kineto"));
  sc_job_free(bad);
  assert_int_equal(sc_job_new(ctx, &bad), 0);
  const char *noshape = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":1,\"dur\":1}]}";
  assert_int_equal(import_mem(bad, SC_TRACE_CPU, "n.json", noshape, strlen(noshape), 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "record_shapes"));
  sc_job_free(bad);
  assert_int_equal(sc_job_new(ctx, &bad), 0);
  const char *nodur = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":1}]}";
  assert_int_equal(import_mem(bad, SC_TRACE_CPU, "d.json", nodur, strlen(nodur), 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "d.json:16: operator event without \"dur\""));
  sc_job_free(bad);
  free(wb.p);
  free(img.p);
  free(img2.p);
  sc_job_free(back);
  sc_job_free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tokens_whole),    cmocka_unit_test(test_tokens_split),
      cmocka_unit_test(test_timestamps),      cmocka_unit_test(test_json_errors),
      cmocka_unit_test(test_kineto_program),  cmocka_unit_test(test_kineto_fallbacks),
      cmocka_unit_test(test_encodings_equal), cmocka_unit_test(test_kineto_errors),
      cmocka_unit_test(test_alloc_failures),  cmocka_unit_test(test_shipped_kineto),
      cmocka_unit_test(test_shipped_chakra),  cmocka_unit_test(test_replay),
      cmocka_unit_test(test_exsitu),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
