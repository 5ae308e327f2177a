/*
 * test_kineto.c: the Kineto importer (src/trace/kineto.c) through the
 * public reader: host timeline, syncs, collectives from args, annotations or
 * kernel names, CUDA event dependencies; plain/gzip/zstd giving the same job
 * at any split, truncated and corrupt input, errors and counted warnings,
 * failed allocations; every shipped HTA trace importing with its expected
 * counts; and the replay of imported Kineto jobs (src/analysis/replay.c).
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
  const char *root = sc_test_source_dir();
  snprintf(p, sizeof p, "%s/%s", root, rel);
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
              "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 2, \"dur\": 4, \"args\": {\"stream\": 7}},"
              /* the last "ts" wins, a string one too: no ts */
              "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 7, \"dur\": 1, \"args\": {\"stream\": 7}, "
              "\"ts\": \"late\"}]}");
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
  assert_non_null(strstr(w.p, "2 x w.json: GPU event without ts, dur or args.stream ignored"));
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

/* Bounds by content (docs/TRACE.md): times past +-2^62 ns and durations
 * past 2^50 ns are errors at the event; a device synchronisation costs one
 * pass over the ops launched before it, whatever the number of streams (a
 * scan per stream made 4096 streams x 2000 syncs an hours-long import). */
static void test_kineto_bounds(void **state) {
  (void)state;
  expect_import_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 5000000000000000, "
                      "\"dur\": 1}]}",
                      "t.json:17: ts: 5000000000000000000 ns out of range [-4611686018427387904, 4611686018427387904]");
  expect_import_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1, "
                      "\"dur\": 2000000000000}]}",
                      "t.json:17: dur: 2000000000000000 ns out of range [-4611686018427387904, 1125899906842624]");
  expect_import_error("{\"distributedInfo\": {\"rank\": 0, \"world_size\": -3}, \"traceEvents\": [{\"ph\": \"X\", "
                      "\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 1, \"args\": {\"stream\": 7}}]}",
                      "t.json:0: distributedInfo.world_size: -3 out of range [1, 1048576]");
  enum { STREAMS = 4096, SYNCS = 2000 };
  buf b = {0};
  bprintf(&b, "{\"traceEvents\": [\n");
  int64_t corr = 1;
  for (int s = 0; s < STREAMS; s++, corr++) {
    bprintf(&b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"tid\": 1, \"ts\": %d, "
                "\"dur\": 1, \"args\": {\"correlation\": %lld}},\n", 10 * s, (long long)corr);
    bprintf(&b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": %d, \"dur\": 5, "
                "\"args\": {\"stream\": %d, \"correlation\": %lld}},\n", 10 * s + 2, s + 1, (long long)corr);
  }
  for (int k = 0; k < SYNCS; k++)
    bprintf(&b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaDeviceSynchronize\", \"tid\": 1, "
                "\"ts\": %d, \"dur\": 1},\n", 10 * STREAMS + 3 * k);
  bprintf(&b, "{\"ph\": \"i\", \"name\": \"end\", \"ts\": 1}]}");
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "syncs.json", b.p, b.len, 1 << 16, 0), 0);
  sc_job_info info;
  sc_job_get_info(job, &info);
  assert_int_equal(info.gpu_ops, STREAMS);
  assert_int_equal(job->ranks[0].nstreams, STREAMS + 1);
  free(b.p);
  sc_job_free(job);
}

/* Streams are kept by slot (kineto.c's stream table): streams met again in
 * any order map to the same job stream, the same stream number on two
 * devices to two, and a trace with more GPU streams than a job can hold is
 * refused at the event that adds one too many. */
static void test_kineto_stream_slots(void **state) {
  (void)state;
  enum { N = 300 };
  buf b = {0};
  bprintf(&b, "{\"traceEvents\": [\n");
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < N; i++) {
      int s = pass ? N - 1 - i : (i * 7) % N; /* a permutation, then backwards */
      bprintf(&b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": %d, \"dur\": 1, "
                  "\"args\": {\"device\": %d, \"stream\": %d}},\n", 10 * (pass * N + i), s % 2, s / 2 + 1);
    }
  bprintf(&b, "{\"ph\": \"i\", \"name\": \"end\", \"ts\": 1}]}");
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_KINETO, "slots.json", b.p, b.len, 1 << 16, 0), 0);
  assert_int_equal(job->ranks[0].nstreams, N + 1);
  sc_job_info info;
  sc_job_get_info(job, &info);
  assert_int_equal(info.gpu_ops, 2 * N);
  free(b.p);
  sc_job_free(job);

  enum { MANY = 65536 };
  b = (buf){0};
  bprintf(&b, "{\"traceEvents\": [\n");
  for (int s = 0; s < MANY; s++)
    bprintf(&b, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": %d, \"dur\": 1, "
                "\"args\": {\"stream\": %d}},\n", s, s + 1);
  bprintf(&b, "{\"ph\": \"i\", \"name\": \"end\", \"ts\": 1}]}");
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_not_equal(import_mem(job, SC_TRACE_KINETO, "many.json", b.p, b.len, 1 << 16, 0), 0);
  if (!strstr(sc_errmsg(ctx), "more than 65535 GPU streams in one trace")) fail_msg("%s", sc_errmsg(ctx));
  free(b.p);
  sc_job_free(job);
}

/* Allocation failures anywhere: an error, never a crash or a leak (ASan). */
static void test_alloc_failures(void **state) {
  (void)state;
  buf b = {0};
  kineto_trace(&b, 0, 1, 0);
  unsigned char *gz;
  size_t gzn = gzip_mem(b.p, b.len, &gz);
  int ok = 0;
  for (long n = 0; n < 400 && !ok; n++) {
    sc_test_heap f = sc_test_heap_failing(n + 1, 0);
    sc_ctx *c;
    assert_int_equal(sc_test_ctx_on(&f, &c), 0);
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
    sc_ctx_free(c);
    assert_int_equal(f.live, 0);
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

/* ------------------------------------------------------------ replay */

/* The config the CLI builds for a replay: the cluster for `world` ranks. */
static void replay_config(sc_config *cfg, int64_t world, int64_t gpn) {
  sc_test_example(cfg);
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
  sc_replay_opts o = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
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
  /* --trace-ranks 1: rank 1's timeline only, the same replay */
  sc_rank_range one = {1, 1};
  sc_trace_opts to = {SC_TRACE_OUT_JSON, &one, 1};
  sc_replay_result res1;
  buf tr1 = {0};
  assert_int_equal(sc_replay_traced(ctx, job, &cfg, &o, &to, sc_test_buf_write, &tr1, &res1), 0);
  assert_true(res1.predicted_step_s == res.predicted_step_s);
  assert_non_null(strstr(tr1.p, "\"pid\":1,"));
  assert_null(strstr(tr1.p, "\"pid\":0,"));
  assert_non_null(strstr(tr1.p, "\"stepcast_trace_ranks\":\"1 of ranks 0-1; 1 of 2 simulated ranks traced"));
  assert_true(tr1.len < tr.len);
  free(tr1.p);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kineto_program),  cmocka_unit_test(test_kineto_fallbacks),
      cmocka_unit_test(test_encodings_equal), cmocka_unit_test(test_kineto_errors),
      cmocka_unit_test(test_alloc_failures),  cmocka_unit_test(test_shipped_kineto),
      cmocka_unit_test(test_replay),          cmocka_unit_test(test_kineto_bounds),
      cmocka_unit_test(test_kineto_stream_slots),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
