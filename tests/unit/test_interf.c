/* test_interf.c: the interference models and their fit: feature keys and
 * kernel classes, the robust ridge fit recovering a known slowdown from
 * synthetic pairs and pooling the class intercepts, the held-out splits, the
 * streaming Kineto reader on a hand-written trace (plain, gzip, any
 * chunking, malformed input, allocation failures), and the whole
 * path on the real HTA traces against the shipped coefficients. */
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

#include "cost/cost_int.h"
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

/* ---------------------------------------------------------------- model */

static void test_keys_and_classes(void **state) {
  (void)state;
  /* the features' keys come from the calibration key table, in feature order */
  assert_int_equal(sc__calib_key_find("interference_w_gemm"), SC_CALIB_INTERF_FIRST + SC_IF_gemm);
  assert_int_equal(sc__calib_key_find("interference_w_log_group"),
                   SC_CALIB_INTERF_FIRST + SC_IF_log_group);
  assert_int_equal(sc__calib_key_find("interference_w_nope"), -1);
  assert_string_equal(sc__calib_keys[SC_CALIB_INTERF_FIRST + SC_IF_p2p].key, "interference_w_p2p");
  assert_int_equal(sc__kernel_kind("ampere_sgemm_128x64_nn"), SC_OP_GEMM);
  assert_int_equal(sc__kernel_kind("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>"),
                   SC_OP_GEMM);
  assert_int_equal(sc__kernel_kind("sm80_xmma_wgrad_implicit_gemm_indexed"), SC_OP_GEMM);
  assert_int_equal(sc__kernel_kind("flash_fwd_kernel<Flash_fwd_kernel_traits>"),
                   SC_OP_ATTN);
  assert_int_equal(sc__kernel_kind("void at::native::reduce_kernel<512, 1>"), SC_OP_NORM);
  assert_int_equal(sc__kernel_kind("cuApplyLayerNorm"), SC_OP_NORM);
  assert_int_equal(sc__kernel_kind("multi_tensor_apply_kernel<AdamFunctor>"),
                   SC_OP_OPTIMIZER);
  /* a lambda in template arguments is not the LAMB optimizer */
  assert_int_equal(sc__kernel_kind("vectorized_elementwise_kernel<{lambda(float)#1}>"),
                   SC_OP_ELEMWISE);
  /* the constant model reads its table by kernel class */
  sc_cost_params p;
  memset(&p, 0, sizeof p);
  sc__interf_defaults(&p);
  assert_true(sc__interf_constant_s(&p, SC_OP_GEMM) == p.interference_gemm);
  assert_true(sc__interf_constant_s(&p, SC_OP_NORM) == p.interference_norm);
  assert_true(sc__interf_constant_s(&p, SC_OP_COLL) == 0);
  assert_true(p.interference_elementwise > p.interference_gemm); /* memory-bound suffer more */
}

/* The learned slowdown is w . x clamped to [0, S_MAX]. */
static void test_learned_clamps(void **state) {
  (void)state;
  double w[SC_INTERF_NFEAT] = {0};
  sc_interf_comm c = {SC_ICOLL_ALLGATHER, 1048576.0, 1, 16};
  w[SC_IF_gemm] = 0.1;
  w[SC_IF_all_gather] = 0.05;
  w[SC_IF_inter_node] = 0.02;
  w[SC_IF_log_group] = 0.01; /* log2(16 / 2) = 3 */
  assert_true(fabs(sc__interf_learned_s(w, SC_OP_GEMM, 1e5, &c) - 0.2) < 1e-12);
  w[SC_IF_gemm] = -5;
  assert_true(sc__interf_learned_s(w, SC_OP_GEMM, 1e5, &c) == 0);
  w[SC_IF_gemm] = 50;
  assert_true(sc__interf_learned_s(w, SC_OP_GEMM, 1e5, &c) == SC_INTERF_S_MAX);
}

/* Synthetic pairs with a known slowdown per class (GEMM 0.25, elementwise
 * 0.6, plus 0.1 more under an all-gather), overlapped for various r: the
 * fit recovers them, also with a tenth of the pairs wildly off (robust). */
static void test_fit_recovers_known_s(void **state) {
  (void)state;
  enum { N = 400 };
  sc_interf_sample *s = calloc(N, sizeof *s);
  for (int outliers = 0; outliers <= 1; outliers++) {
    for (int i = 0; i < N; i++) {
      int gemm = i % 2, ag = (i / 2) % 2;
      double truth = (gemm ? 0.25 : 0.6) + (ag ? 0.1 : 0);
      double r = 0.3 + 0.7 * (double)((i * 37) % 100) / 99.0;
      double alone = 5e4 + 1e3 * (double)((i * 53) % 450);
      s[i].kind = gemm ? SC_OP_GEMM : SC_OP_ELEMWISE;
      s[i].alone_ns = alone;
      s[i].r = r;
      s[i].dur_ns = alone * (1 + r * truth);
      if (outliers && i % 10 == 3) s[i].dur_ns = alone * 3.5; /* another kernel's time */
      s[i].comm = (sc_interf_comm){ag ? SC_ICOLL_ALLGATHER : SC_ICOLL_ALLREDUCE, 64 << 20, 0, 8};
      s[i].key = (uint64_t)i;
    }
    double w[SC_INTERF_NFEAT];
    assert_int_equal(sc__interf_fit(ctx, s, N, 1e-6, 0.05, w), SC_OK);
    sc_interf_comm ar = {SC_ICOLL_ALLREDUCE, 64 << 20, 0, 8}, agc = ar;
    agc.coll = SC_ICOLL_ALLGATHER;
    /* Huber bounds, not removes, the outliers' pull: least squares would be
     * off by ~0.2 here */
    double tol = outliers ? 0.03 : 1e-6;
    for (double alone = 5e4; alone < 5e5; alone *= 3) {
      assert_true(fabs(sc__interf_learned_s(w, SC_OP_GEMM, alone, &ar) - 0.25) < tol);
      assert_true(fabs(sc__interf_learned_s(w, SC_OP_ELEMWISE, alone, &ar) - 0.6) < tol);
      assert_true(fabs(sc__interf_learned_s(w, SC_OP_GEMM, alone, &agc) - 0.35) < tol);
    }
  }
  /* Through the public fit: noise-free pairs are predicted exactly held out,
   * by kernel fold (4 folds; by default 10 folds beyond 200 kernels, else
   * leave one kernel out) and by trace (two traces). */
  for (int i = 0; i < N; i++) s[i].dur_ns = s[i].alone_ns * (1 + s[i].r * (i % 2 ? 0.25 : 0.6));
  for (int i = 0; i < N; i++) s[i].comm.coll = SC_ICOLL_ALLREDUCE;
  for (int i = 0; i < N; i++) s[i].trace = i % 3 == 0;
  static const struct {
    int n, folds, want_folds, want_loo;
  } splits[] = {{N, 4, 4, 0}, {N, 0, 10, 0}, {100, 0, 100, 1}};
  for (size_t c = 0; c < sizeof splits / sizeof splits[0]; c++) {
    sc_interf_data *d;
    assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
    assert_int_equal(sc__interf_data_add(d, s, (size_t)splits[c].n), 0);
    sc_interf_fit_result res;
    sc_interf_fit_options fo = {.ridge = 1e-6, .huber = 0.05, .folds = splits[c].folds};
    assert_int_equal(sc_interf_fit(d, &fo, &res), 0);
    assert_int_equal(res.kernels, splits[c].n);
    assert_int_equal(res.folds, splits[c].want_folds);
    assert_int_equal(res.leave_one_out, splits[c].want_loo);
    assert_int_equal(res.traces, 2);
    const sc_interf_eval *held[] = {&res.learned, &res.learned_by_trace};
    for (int h = 0; h < 2; h++) {
      assert_int_equal(held[h]->n, splits[c].n);
      assert_true(held[h]->within_pct[0] == 100.0);
      assert_true(fabs(held[h]->sum_err_pct) < 1e-3);
    }
    assert_true(res.none.sum_err_pct < -10); /* ignoring interference is too fast */
    sc_interf_data_free(d);
  }
  /* folds -1: no held-out evaluation at all */
  sc_interf_data *d;
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  assert_int_equal(sc__interf_data_add(d, s, N), 0);
  sc_interf_fit_result res;
  sc_interf_fit_options none = {.folds = -1};
  assert_int_equal(sc_interf_fit(d, &none, &res), 0);
  assert_int_equal(res.learned.n, 0);
  assert_int_equal(res.learned_by_trace.n, 0);
  assert_int_equal(res.learned_fit.n, N);
  sc_interf_data_free(d);
  /* no pairs: an error, not a crash */
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  assert_int_equal(sc_interf_fit(d, NULL, &res), SC_EINVAL);
  sc_interf_data_free(d);
  free(s);
}

/* The class intercepts are pooled: a class without pairs gets the mean of
 * the fitted classes' intercepts, and a class with few pairs is pulled
 * towards that pooled value by the ridge, less the more pairs it has. */
static void test_fit_pools_classes(void **state) {
  (void)state;
  enum { N = 300 };
  sc_interf_sample *s = calloc(N, sizeof *s);
  const sc_interf_comm ar = {SC_ICOLL_ALLREDUCE, 0, 0, 0}; /* size unknown: x has no size */
  for (int i = 0; i < N; i++) {
    int kind = i % 3 == 0 ? SC_OP_GEMM : i % 3 == 1 ? SC_OP_ELEMWISE : SC_OP_NORM;
    double truth = kind == SC_OP_GEMM ? 0.1 : kind == SC_OP_ELEMWISE ? 0.3 : 0.8;
    s[i].kind = kind;
    s[i].alone_ns = 1e5; /* log_dur = 0 */
    s[i].r = 1;
    s[i].dur_ns = s[i].alone_ns * (1 + truth);
    s[i].comm = ar;
    s[i].key = (uint64_t)i;
  }
  double w[SC_INTERF_NFEAT];
  /* Everything: each class its own value; attention and optimizer, without
   * pairs, the mean of the three. */
  assert_int_equal(sc__interf_fit(ctx, s, N, 1e-6, 0.05, w), SC_OK);
  assert_true(fabs(sc__interf_learned_s(w, SC_OP_GEMM, 1e5, &ar) - 0.1) < 1e-4);
  assert_true(fabs(sc__interf_learned_s(w, SC_OP_NORM, 1e5, &ar) - 0.8) < 1e-4);
  assert_true(fabs(sc__interf_learned_s(w, SC_OP_ATTN, 1e5, &ar) - 0.4) < 1e-4);
  assert_true(fabs(sc__interf_learned_s(w, SC_OP_OPTIMIZER, 1e5, &ar) - 0.4) < 1e-4);
  /* Keep only 3 norm pairs: with ridge 2 they are shrunk towards the pool;
   * with all 100 much less. */
  sc_interf_sample *few = calloc(N, sizeof *few);
  size_t nf = 0;
  int norms = 0;
  for (int i = 0; i < N; i++)
    if (s[i].kind != SC_OP_NORM || norms++ < 3) few[nf++] = s[i];
  double wf[SC_INTERF_NFEAT];
  assert_int_equal(sc__interf_fit(ctx, few, nf, 2.0, 0.05, wf), SC_OK);
  assert_int_equal(sc__interf_fit(ctx, s, N, 2.0, 0.05, w), SC_OK);
  double s_few = sc__interf_learned_s(wf, SC_OP_NORM, 1e5, &ar);
  double s_all = sc__interf_learned_s(w, SC_OP_NORM, 1e5, &ar);
  double pool = sc__interf_learned_s(wf, SC_OP_ATTN, 1e5, &ar);
  if (!(pool < s_few && s_few < 0.7 && s_few < s_all && s_all > 0.75))
    fail_msg("pooled %g, norm with 3 pairs %g, with 100 %g", pool, s_few, s_all);
  free(few);
  free(s);
}

/* ---------------------------------------------------------------- reader */

/* A small Kineto trace: an sgemm alone 4 times (100 us) then twice under an
 * all-reduce (120 and 125 us: s = 0.2, 0.25), an elementwise kernel alone 3
 * times (50 us) then once overlapped for 30 of its 60 us (r = 0.4, s = 0.5),
 * a kernel of another launch shape seen only overlapped, NCCL kernels on
 * another device, host events, escapes and nested arguments. */
static const char trace_text[] =
    "{\n  \"schemaVersion\": 1,\n"
    "  \"deviceProperties\": [ {\"id\": 0, \"name\": \"NVIDIA A100\"}, {\"id\": 1} ],\n"
    "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2},\n"
    "  \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, \"dur\": 5,"
    " \"args\": {\"Input Dims\": [[8, 8], [8, 8]], \"nested\": {\"a\": [1, {\"b\": 2}]}}},\n"
#define SGEMM(ts, dur)                                                                     \
  "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_nn\", \"pid\": 0," \
  " \"tid\": 7, \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {\"device\": 0, \"stream\": 7," \
  " \"grid\": [10, 1, 1], \"block\": [256, 1, 1]}},\n"
#define ELEM(ts, dur)                                                                      \
  "  {\"args\": {\"grid\": [1, 1, 1], \"block\": [128, 1, 1], \"stream\": 7, \"device\": 0}," \
  " \"name\": \"void at::native::vectorized_elementwise_kernel<4, \\\"x\\\\y\\u0041\\\">\"," \
  " \"ts\": " #ts ".000, \"dur\": " #dur ", \"cat\": \"kernel\", \"ph\": \"X\"},\n"
    SGEMM(0, 100) SGEMM(1000, 100) SGEMM(2000, 100.0) SGEMM(3000, 100)
    SGEMM(5000, 120) SGEMM(6000, 125)
    ELEM(7000, 50) ELEM(7100, 50) ELEM(7200, 50) ELEM(8000, 60)
    /* same name, another launch shape: a different kernel, only run overlapped */
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_nn\", \"ts\": 6100,"
    " \"dur\": 40, \"args\": {\"device\": 0, \"stream\": 7, \"grid\": [2, 1, 1],"
    " \"block\": [256, 1, 1]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float("
    "ncclDevComm*, unsigned long, ncclWork*)\", \"ts\": 4990, \"dur\": 140, \"args\": {"
    "\"device\": 0, \"stream\": 20, \"Collective name\": \"allreduce\", \"In msg nelems\": "
    "1048576, \"Out msg nelems\": 1048576, \"Group size\": 2, \"dtype\": \"Float\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float\","
    " \"ts\": 5990, \"dur\": 200, \"args\": {\"device\": 0, \"stream\": 20}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllGather_RING_LL\","
    " \"ts\": 7990, \"dur\": 40, \"args\": {\"device\": 0, \"stream\": 21}},\n"
    /* on another device: overlaps nothing of device 0 */
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_SendRecv\", \"ts\": 0,"
    " \"dur\": 99999, \"args\": {\"device\": 1, \"stream\": 20}},\n"
    "  {\"ph\": \"i\", \"name\": \"marker\", \"ts\": 3}\n"
    "  ]\n}\n";

static sc_interf_data *read_chunks(const char *data, size_t len, size_t chunk, int *rc_out) {
  sc_interf_data *d;
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  int rc = sc_interf_trace_begin(d, "t.json");
  for (size_t off = 0; !rc && off < len; off += chunk)
    rc = sc_interf_trace_feed(d, data + off, len - off < chunk ? len - off : chunk);
  if (!rc) rc = sc_interf_trace_end(d);
  *rc_out = rc;
  return d;
}

/* gzip of data (deflate with a gzip wrapper); *n gets its size. */
static unsigned char *gzip_of(const char *data, size_t len, size_t *n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&z, (uLong)len);
  unsigned char *out = malloc(cap);
  z.next_in = (Bytef *)(uintptr_t)data;
  z.avail_in = (uInt)len;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *n = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static void check_trace_pairs(sc_interf_data *d) {
  size_t n;
  const sc_interf_sample *s = sc__interf_data_samples(d, &n);
  if (n != 3) fail_msg("%zu pairs, expected 3", n);
  sc_interf_stats st;
  sc_interf_data_stats(d, &st);
  assert_int_equal(st.traces, 1);
  assert_int_equal(st.kernels, 11);
  assert_int_equal(st.nccl_kernels, 4);
  assert_int_equal(st.overlapped, 4);
  assert_int_equal(st.dropped_alone, 1); /* the other launch shape: no run alone */
  /* pairs come grouped by kernel; find them by kind and duration */
  int seen = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i].kind == SC_OP_GEMM) {
      assert_true(s[i].alone_ns == 100e3);
      assert_true(s[i].r == 1.0);
      assert_int_equal(s[i].comm.coll, SC_ICOLL_ALLREDUCE);
      assert_int_equal(s[i].comm.inter_node, 0);
      if (s[i].dur_ns == 120e3) {
        assert_true(s[i].comm.bytes == 4.0 * 1048576); /* 1 Mi floats */
        assert_int_equal(s[i].comm.group, 2);
        seen |= 1;
      } else if (s[i].dur_ns == 125e3) {
        assert_true(s[i].comm.bytes == 0); /* no metadata on that one */
        seen |= 2;
      }
    } else {
      assert_int_equal(s[i].kind, SC_OP_ELEMWISE);
      assert_true(s[i].alone_ns == 50e3 && s[i].dur_ns == 60e3);
      assert_true(fabs(s[i].r - 0.4) < 1e-12);
      assert_int_equal(s[i].comm.coll, SC_ICOLL_ALLGATHER);
      seen |= 4;
    }
  }
  assert_int_equal(seen, 7);
}

static void test_reader_plain_and_chunked(void **state) {
  (void)state;
  size_t len = strlen(trace_text);
  static const size_t chunks[] = {1, 7, 4096, 1 << 20};
  sc_interf_sample first[3];
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
    int rc;
    sc_interf_data *d = read_chunks(trace_text, len, chunks[c], &rc);
    if (rc) fail_msg("chunk %zu: %s", chunks[c], sc_errmsg(ctx));
    check_trace_pairs(d);
    size_t n;
    const sc_interf_sample *s = sc__interf_data_samples(d, &n);
    if (c == 0) memcpy(first, s, sizeof first);
    else assert_memory_equal(first, s, sizeof first); /* same pairs, same order */
    sc_interf_data_free(d);
  }
}

static void test_reader_gzip(void **state) {
  (void)state;
  size_t len = strlen(trace_text), gz;
  unsigned char *z = gzip_of(trace_text, len, &gz);
  for (size_t chunk = 1; chunk <= gz; chunk = chunk * 5 + 1) {
    int rc;
    sc_interf_data *d = read_chunks((const char *)z, gz, chunk, &rc);
    if (rc) fail_msg("chunk %zu: %s", chunk, sc_errmsg(ctx));
    check_trace_pairs(d);
    sc_interf_data_free(d);
  }
  /* two traces into one set: pairs add up */
  sc_interf_data *d;
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(sc_interf_trace_begin(d, "t.json.gz"), 0);
    assert_int_equal(sc_interf_trace_feed(d, z, gz), 0);
    assert_int_equal(sc_interf_trace_end(d), 0);
  }
  sc_interf_stats st;
  sc_interf_data_stats(d, &st);
  assert_int_equal(st.traces, 2);
  assert_int_equal(st.pairs, 6);
  sc_interf_data_free(d);
  /* truncated gzip */
  int rc;
  d = read_chunks((const char *)z, gz / 2, 64, &rc);
  assert_int_equal(rc, SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "t.json: "));
  sc_interf_data_free(d);
  free(z);
}

static void test_reader_errors(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"{\"traceEvents\": [ {\"ph\": } ]}", "t.json:25: "},
      {"{\"traceEvents\": [ {\"ph\": \"X\"} ", "unexpected end of input"},
      {"", "empty"},
      {"\x1f\x8b garbage that is not deflate", "gzip"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc;
    sc_interf_data *d = read_chunks(bad[i].text, strlen(bad[i].text), 3, &rc);
    if (rc != SC_EINVAL || !strstr(sc_errmsg(ctx), bad[i].msg))
      fail_msg("case %zu: rc %d, \"%s\"", i, rc, sc_errmsg(ctx));
    sc_interf_data_free(d);
  }
  sc_interf_data *d;
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  assert_int_equal(sc_interf_load_file(d, "/nonexistent/trace.json"), SC_EREAD);
  assert_int_equal(sc_interf_trace_feed(d, "{}", 2), SC_EINVAL); /* not begun */
  sc_interf_data_free(d);
}


/* Reading (gzip) and fitting with any one allocation failing gives
 * SC_ENOMEM and leaks nothing (ASan checks the latter). */
static void test_allocation_failures(void **state) {
  (void)state;
  size_t gz;
  unsigned char *z = gzip_of(trace_text, strlen(trace_text), &gz);
  sc_test_heap b = {0};
  sc_ctx *c;
  assert_int_equal(sc_test_ctx_on(&b, &c), 0);
  long total = 0;
  for (long k = 0; k == 0 || k <= total; k++) {
    b.count = 0;
    b.fail_at = k;
    sc_interf_data *d = NULL;
    int rc = sc_interf_data_new(c, NULL, &d);
    if (!rc) rc = sc_interf_trace_begin(d, "t.json.gz");
    for (size_t off = 0; !rc && off < gz; off += 100)
      rc = sc_interf_trace_feed(d, z + off, gz - off < 100 ? gz - off : 100);
    if (!rc) rc = sc_interf_trace_end(d);
    sc_interf_fit_result res;
    if (!rc) rc = sc_interf_fit(d, NULL, &res);
    sc_interf_data_free(d);
    if (k == 0) {
      assert_int_equal(rc, 0);
      total = b.count;
    } else if (rc != SC_ENOMEM) {
      fail_msg("allocation %ld of %ld: rc %d", k, total, rc);
    }
  }
  sc_ctx_free(c);
  assert_int_equal(b.live, 0);
  free(z);
}

/* ---------------------------------------------------------------- real traces */

static const char *const hta[] = {
    "validation/traces/hta/nccl_parser_config_nccl_data.json.gz",
    "validation/traces/hta/negative_queue_length_rank0.json.gz",
    "validation/traces/hta/trace_filter_sampled_rank-0.json.gz",
    "validation/traces/hta/trace_filter_sampled_rank-1.json.gz",
};

static void path_of(char *buf, size_t n, const char *rel) {
  const char *root = sc_test_source_dir();
  snprintf(buf, n, "%s/%s", root, rel);
}

/* The shipped traces give the pairs and the fit documented in
 * docs/INTERFERENCE.md, and the shipped coefficients are that fit. */
static void test_hta_traces(void **state) {
  (void)state;
  char p[1024];
  sc_interf_data *d;
  assert_int_equal(sc_interf_data_new(ctx, NULL, &d), 0);
  for (size_t i = 0; i < sizeof hta / sizeof hta[0]; i++) {
    path_of(p, sizeof p, hta[i]);
    if (sc_interf_load_file(d, p)) fail_msg("%s", sc_errmsg(ctx));
  }
  sc_interf_stats st;
  sc_interf_data_stats(d, &st);
  assert_int_equal(st.traces, 4);
  assert_int_equal(st.kernels, 10917);
  assert_int_equal(st.nccl_kernels, 121);
  assert_int_equal(st.pairs, 142);
  sc_interf_fit_result res;
  assert_int_equal(sc_interf_fit(d, NULL, &res), 0);
  assert_int_equal(res.kernels, 46);
  assert_int_equal(res.leave_one_out, 1);
  assert_int_equal(res.folds, 46);
  assert_int_equal(res.traces, 4);
  /* Held out by kernel and by trace, the learned model predicts each
   * overlapped kernel at least as well as ignoring interference (MAPE), and
   * their summed duration closer than ignoring interference
   * (docs/INTERFERENCE.md has the numbers); the shipped constant table (the
   * refit medians of these pairs) beats ignoring interference in sample on
   * both. */
  assert_true(res.constant.mape_pct < res.none.mape_pct);
  assert_true(fabs(res.constant.sum_err_pct) < fabs(res.none.sum_err_pct));
  const sc_interf_eval *held[] = {&res.learned, &res.learned_by_trace};
  for (int h = 0; h < 2; h++) {
    assert_int_equal(held[h]->n, 142);
    if (!(held[h]->mape_pct <= res.none.mape_pct))
      fail_msg("held out %d: MAPE %.2f, none %.2f", h, held[h]->mape_pct, res.none.mape_pct);
    assert_true(held[h]->within_pct[0] >= res.none.within_pct[0]);
    assert_true(fabs(held[h]->sum_err_pct) < fabs(res.none.sum_err_pct));
  }
  /* The record matches the fit, and the shipped coefficients the record. */
  sc_config cfg;
  sc_test_example(&cfg);
  char set[1100];
  path_of(p, sizeof p, "validation/calibration/interference-hta.yaml");
  snprintf(set, sizeof set, "calibration=%s", p);
  if (sc_config_set(ctx, &cfg, set)) fail_msg("%s", sc_errmsg(ctx));
  sc_cost_params def;
  memset(&def, 0, sizeof def);
  sc__interf_defaults(&def);
  double rec[SC_INTERF_NFEAT], fit[SC_INTERF_NFEAT], ship[SC_INTERF_NFEAT];
  sc__interf_coefs_to_array(&cfg.costs.interference_w, rec);
  sc__interf_coefs_to_array(&res.w, fit);
  sc__interf_coefs_to_array(&def.interference_w, ship);
  for (int i = 0; i < SC_INTERF_NFEAT; i++) {
    const char *key = sc__calib_keys[SC_CALIB_INTERF_FIRST + i].key;
    if (fabs(rec[i] - fit[i]) > 1e-5 * (1 + fabs(fit[i])))
      fail_msg("%s: record %g, fit %g", key, rec[i], fit[i]);
    if (rec[i] != ship[i])
      fail_msg("%s: record %g, shipped %g (run tools/calibrate_interference.sh)", key, rec[i],
               ship[i]);
  }
  /* The shipped constant table is the refit that calibrate --interference
   * records (interference-hta-tree.yaml). */
  sc_test_example(&cfg);
  path_of(p, sizeof p, "validation/calibration/interference-hta-tree.yaml");
  snprintf(set, sizeof set, "calibration=%s", p);
  if (sc_config_set(ctx, &cfg, set)) fail_msg("%s", sc_errmsg(ctx));
  const double got[] = {def.interference_gemm, def.interference_attn,
                        def.interference_elementwise, def.interference_norm,
                        def.interference_optimizer};
  const double want[] = {cfg.costs.interference_gemm, cfg.costs.interference_attn,
                         cfg.costs.interference_elementwise, cfg.costs.interference_norm,
                         cfg.costs.interference_optimizer};
  for (int i = 0; i < 5; i++)
    if (fabs(got[i] - want[i]) > 1e-6 * want[i])
      fail_msg("constant table entry %d: shipped %g, refit record %g", i, got[i], want[i]);
  sc_interf_data_free(d);
}


/* ------------------------------------------------------------ tree model */

/* A growing sink for the booster's JSON. */
typedef struct membuf {
  char *p;
  size_t n, cap;
} membuf;

static int mem_write(void *ud, const char *buf, size_t len) {
  membuf *m = ud;
  if (m->n + len + 1 > m->cap) {
    m->cap = (m->n + len + 1) * 2;
    m->p = realloc(m->p, m->cap);
    if (!m->p) return SC_ENOMEM;
  }
  memcpy(m->p + m->n, buf, len);
  m->n += len;
  m->p[m->n] = 0;
  return SC_OK;
}

/* Synthetic pairs with a known slowdown growing with the kernel's duration:
 * s = 0.02 + 0.1 * (log10(alone / 100 us) + 2) for GEMMs, half that for
 * elementwise kernels, fully overlapped (r = 1) by a 2-rank all-reduce. */
static size_t monotone_pairs(sc_interf_sample *s, size_t cap) {
  size_t n = 0;
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 40 && n < cap; i++) {
      double alone = 1e3 * pow(10.0, 4.0 * i / 39.0); /* 1 us .. 10 ms */
      double ld = log10(alone / 1e5) + 2, sd = (0.02 + 0.1 * ld) * (c ? 0.5 : 1);
      s[n++] = (sc_interf_sample){c ? SC_OP_ELEMWISE : SC_OP_GEMM, alone, alone * (1 + sd), 1.0,
                                  {SC_ICOLL_ALLREDUCE, 8 << 20, 0, 2}, (uint64_t)(n + 1), 0};
    }
  return n;
}

static void test_tree_learns_monotone_slowdown(void **state) {
  (void)state;
  sc_interf_sample s[80];
  size_t n = monotone_pairs(s, 80);
  sc_interf_tree_params prm = {200, 3, 0.2, 1, 1};
  sc_interf_tree *t;
  assert_int_equal(sc__interf_tree_train(ctx, s, n, &prm, &t), 0);
  assert_true(sc__interf_tree_count(t) == 200);
  sc_interf_comm comm = {SC_ICOLL_ALLREDUCE, 8 << 20, 0, 2};
  double prev = -1;
  for (int i = 0; i < 40; i += 3) { /* close to the truth, and growing with duration */
    double alone = s[i].alone_ns, truth = s[i].dur_ns / alone - 1;
    double v = sc__interf_tree_s(t, SC_OP_GEMM, alone, &comm);
    assert_true(fabs(v - truth) < 0.03);
    assert_true(v >= prev - 1e-6);
    prev = v;
    /* the flat forest gives XGBoost's own prediction */
    double b;
    assert_int_equal(sc__interf_tree_booster_s(ctx, t, SC_OP_GEMM, alone, &comm, &b), 0);
    assert_true(fabs(b - v) < 1e-5);
  }
  /* elementwise kernels are slowed less than GEMMs of the same duration */
  assert_true(sc__interf_tree_s(t, SC_OP_ELEMWISE, 1e6, &comm) <
              sc__interf_tree_s(t, SC_OP_GEMM, 1e6, &comm));
  /* deterministic: the same pairs give the same model, byte for byte */
  sc_interf_tree *t2;
  assert_int_equal(sc__interf_tree_train(ctx, s, n, &prm, &t2), 0);
  membuf a = {0}, b = {0};
  assert_int_equal(sc__interf_tree_write(ctx, t, mem_write, &a), 0);
  assert_int_equal(sc__interf_tree_write(ctx, t2, mem_write, &b), 0);
  assert_true(a.n == b.n && a.n > 0 && !memcmp(a.p, b.p, a.n));
  /* save / load round trip: the loaded model predicts the same */
  sc_interf_tree *t3;
  assert_int_equal(sc__interf_tree_load(ctx, a.p, a.n, "mem", &t3), 0);
  for (int i = 0; i < 40; i++)
    assert_true(sc__interf_tree_s(t3, SC_OP_GEMM, s[i].alone_ns, &comm) ==
                sc__interf_tree_s(t, SC_OP_GEMM, s[i].alone_ns, &comm));
  sc__interf_tree_free(ctx, t);
  sc__interf_tree_free(ctx, t2);
  sc__interf_tree_free(ctx, t3);
  free(a.p);
  free(b.p);
}

static void test_tree_bad_models(void **state) {
  (void)state;
  sc_interf_tree *t = (sc_interf_tree *)1;
  assert_int_equal(sc__interf_tree_load(ctx, "nonsense", 8, "m.json", &t), SC_EINVAL);
  assert_null(t);
  assert_non_null(strstr(sc_errmsg(ctx), "m.json: not an XGBoost JSON model"));
  assert_int_equal(sc__interf_tree_load(ctx, "{\"learner\": 7}", 14, "m.json", &t), SC_EINVAL);
  assert_true(!strncmp(sc_errmsg(ctx), "m.json: ", 8) && !strchr(sc_errmsg(ctx), '\n'));
  assert_int_equal(sc__interf_tree_load_file(ctx, "/nonexistent/x.json", NULL, &t), SC_EREAD);
  /* no pairs */
  sc_interf_tree_params prm = {10, 2, 0.1, 1, 1};
  assert_int_equal(sc__interf_tree_train(ctx, NULL, 0, &prm, &t), SC_EINVAL);
}

static void test_constant_fit_medians(void **state) {
  (void)state;
  sc_interf_sample s[3] = {
      {SC_OP_GEMM, 100, 110, 1, {0, 0, 0, 2}, 1, 0},
      {SC_OP_GEMM, 100, 120, 1, {0, 0, 0, 2}, 2, 0},
      {SC_OP_GEMM, 100, 190, 1, {0, 0, 0, 2}, 3, 0},
  };
  double cs[SC_OP_OPTIMIZER + 1];
  assert_int_equal(sc__interf_constant_fit(ctx, s, 3, cs), 0);
  assert_true(fabs(cs[SC_OP_GEMM] - 0.2) < 1e-12); /* the median s, not the mean */
  assert_true(fabs(cs[SC_OP_NORM] - 0.2) < 1e-12); /* no pairs: the pooled median */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keys_and_classes),
      cmocka_unit_test(test_learned_clamps),
      cmocka_unit_test(test_fit_recovers_known_s),
      cmocka_unit_test(test_fit_pools_classes),
      cmocka_unit_test(test_reader_plain_and_chunked),
      cmocka_unit_test(test_reader_gzip),
      cmocka_unit_test(test_reader_errors),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_hta_traces),
      cmocka_unit_test(test_tree_learns_monotone_slowdown),
      cmocka_unit_test(test_tree_bad_models),
      cmocka_unit_test(test_constant_fit_medians),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
