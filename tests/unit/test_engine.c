/* test_engine.c: engine properties: folded == unfolded step time, 1F1B bubble
 * fraction, determinism, interference and NIC sharing slow things down. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static sc_ctx *ctx;

static int setup(void **state) {
  (void)state;
  return sc_ctx_new(&ctx, NULL, NULL);
}

static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

/* A small GPT (1.3B shape) on 64 A100s; callers then adjust. */
static void small_config(sc_config *cfg) {
  sc_config_default(cfg);
  assert_int_equal(sc_model_preset(ctx, cfg, "gpt3-1.3b"), 0);
  cfg->training.global_batch = 64;
  cfg->training.micro_batch = 1;
  cfg->training.recompute = SC_RECOMPUTE_NONE;
  cfg->parallel.tp = 2;
  cfg->parallel.pp = 4;
  cfg->parallel.dp = 0;
  cfg->parallel.vpp = 1;
  cfg->cluster.num_gpus = 64;
  cfg->cluster.nodes = 0;
}

static void simulate(sc_config *cfg, sc_result *r) {
  int rc = sc_config_resolve(ctx, cfg);
  if (rc) fail_msg("resolve: %s", sc_errmsg(ctx));
  rc = sc_simulate(ctx, cfg, NULL, NULL, r);
  if (rc) fail_msg("simulate: %s", sc_errmsg(ctx));
}

static void assert_fold_equal(sc_config *cfg) {
  sc_result folded, unfolded;
  cfg->simulation.fold = 1;
  simulate(cfg, &folded);
  cfg->simulation.fold = 0;
  simulate(cfg, &unfolded);
  assert_true(folded.step_time_s > 0);
  assert_true(unfolded.simulated_ranks > folded.simulated_ranks);
  if (folded.step_time_s != unfolded.step_time_s)
    fail_msg("folded %.9f s != unfolded %.9f s", folded.step_time_s, unfolded.step_time_s);
  for (int c = 0; c < SC_CAT_COUNT; c++)
    assert_true(fabs(folded.breakdown_s[c] - unfolded.breakdown_s[c]) < 1e-9);
}

static void test_fold_1f1b(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  assert_fold_equal(&cfg);
}

static void test_fold_interleaved_sp_distopt(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  cfg.parallel.vpp = 2;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  cfg.parallel.sequence_parallel = 1;
  cfg.parallel.distributed_optimizer = 1;
  cfg.parallel.overlap_param_gather = 1;
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  assert_fold_equal(&cfg);
}

static void test_fold_gpipe_interference(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  cfg.parallel.schedule = SC_SCHED_GPIPE;
  cfg.simulation.interference = SC_INTERF_CONSTANT;
  cfg.training.recompute = SC_RECOMPUTE_FULL;
  cfg.parallel.overlap_grad_reduce = 0;
  assert_fold_equal(&cfg);
}

static void test_fold_llama_gqa_swiglu(void **state) {
  (void)state;
  sc_config cfg;
  sc_config_default(&cfg);
  assert_int_equal(sc_model_preset(ctx, &cfg, "llama3-8b"), 0);
  cfg.model.layers = 8;
  cfg.training.global_batch = 32;
  cfg.training.precision = SC_PREC_BF16;
  cfg.training.recompute = SC_RECOMPUTE_NONE;
  cfg.parallel.tp = 4;
  cfg.parallel.pp = 2;
  cfg.parallel.dp = 0;
  cfg.parallel.sequence_parallel = 1;
  cfg.parallel.distributed_optimizer = 1;
  cfg.cluster.num_gpus = 32;
  cfg.cluster.nodes = 0;
  snprintf(cfg.cluster.gpu, sizeof cfg.cluster.gpu, "h100-sxm");
  assert_fold_equal(&cfg);
}

/* A uniform pipeline: the real synthesis with the embedding and LM-head work
 * zeroed, no TP/DP, negligible p2p: every stage does the same work, so the
 * 1F1B idle share of the step is (p-1)/(m+p-1). */
static void test_1f1b_bubble(void **state) {
  (void)state;
  static const int64_t cases[][2] = {{4, 8}, {4, 32}, {8, 16}, {2, 64}, {16, 64}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t p = cases[i][0], m = cases[i][1];
    sc_config cfg;
    sc_config_default(&cfg);
    assert_int_equal(sc_model_preset(ctx, &cfg, "gpt3-1.3b"), 0);
    cfg.model.layers = p * 2;
    cfg.training.global_batch = m;
    cfg.training.micro_batch = 1;
    cfg.training.recompute = SC_RECOMPUTE_NONE;
    cfg.parallel.tp = 1;
    cfg.parallel.pp = p;
    cfg.parallel.dp = 0;
    cfg.cluster.num_gpus = p;
    cfg.cluster.nodes = 0;
    cfg.cluster.nic_gbps = 1e9;
    cfg.cluster.nvlink_gbps = 1e9;
    cfg.costs.p2p_latency_us = 1e-6;
    if (sc_config_resolve(ctx, &cfg)) fail_msg("%s", sc_errmsg(ctx));
    sc_cost cost;
    sc_workload wl;
    assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
    assert_int_equal(sc__workload_build(ctx, &cfg, &cost, &wl), 0);
    for (int64_t s = 0; s < wl.nprogs; s++)
      for (size_t k = 0; k < wl.progs[s].nops[SC_ST_COMPUTE]; k++) {
        sc_op *op = &wl.progs[s].ops[SC_ST_COMPUTE][k];
        if (op->layer == SC_NO_LAYER) op->work = 0; /* embedding, head, optimizer */
      }
    sc_result r;
    assert_int_equal(sc__engine_run(ctx, &cfg, &wl, &cost, NULL, NULL, &r), 0);
    sc__workload_free(ctx, &wl);
    double expect = (double)(p - 1) / (double)(m + p - 1);
    double got = (r.breakdown_s[SC_CAT_BUBBLE] + r.breakdown_s[SC_CAT_PP]) / r.step_time_s;
    if (fabs(got - expect) > 0.01 * expect)
      fail_msg("p=%lld m=%lld: bubble %.5f, expected %.5f", (long long)p, (long long)m, got,
               expect);
  }
}

static void test_interleaved_smaller_bubble(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  cfg.parallel.dp = 0;
  sc_result plain, inter;
  simulate(&cfg, &plain);
  small_config(&cfg);
  cfg.parallel.vpp = 2;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  simulate(&cfg, &inter);
  assert_true(inter.breakdown_s[SC_CAT_BUBBLE] < plain.breakdown_s[SC_CAT_BUBBLE]);
}

static void test_deterministic(void **state) {
  (void)state;
  sc_config cfg;
  sc_result a, b;
  small_config(&cfg);
  cfg.simulation.interference = SC_INTERF_CONSTANT;
  simulate(&cfg, &a);
  simulate(&cfg, &b);
  assert_memory_equal(&a, &b, sizeof a);
}

static void test_interference_slows(void **state) {
  (void)state;
  sc_config cfg;
  sc_result none, constant;
  small_config(&cfg);
  simulate(&cfg, &none);
  small_config(&cfg);
  cfg.simulation.interference = SC_INTERF_CONSTANT;
  cfg.costs.interference_compute = 0.5;
  simulate(&cfg, &constant);
  assert_true(constant.step_time_s > none.step_time_s);
}

static void test_breakdown_sums_to_step(void **state) {
  (void)state;
  sc_config cfg;
  sc_result r;
  sc_config_default(&cfg);
  simulate(&cfg, &r);
  double sum = 0;
  for (int c = 0; c < SC_CAT_COUNT; c++) sum += r.breakdown_s[c];
  assert_true(fabs(sum - r.step_time_s) < 1e-6 * r.step_time_s);
  /* The default example (SC21 GPT-3 175B) lands in the published range. */
  assert_true(r.hw_tflops_per_gpu > 120 && r.hw_tflops_per_gpu < 170);
}

static int count_writes(void *ud, const char *buf, size_t len) {
  size_t *n = ud;
  (void)buf;
  *n += len;
  return 0;
}

static void test_trace_streams(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  size_t bytes = 0;
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &cfg, count_writes, &bytes, &r), 0);
  assert_true(bytes > 1000);
}

typedef struct grow_sink {
  char *buf;
  size_t len, cap;
} grow_sink;

static int to_grow_sink(void *ud, const char *buf, size_t len) {
  grow_sink *g = ud;
  if (g->len + len + 1 > g->cap) {
    g->cap = (g->len + len + 1) * 2;
    g->buf = realloc(g->buf, g->cap);
    if (!g->buf) return SC_ENOMEM;
  }
  memcpy(g->buf + g->len, buf, len);
  g->len += len;
  g->buf[g->len] = 0;
  return 0;
}

/* The trace's memory counter: one sample at the start per rank, one when each
 * forward item allocates and one when its backward frees; every rank ends
 * where it started (activations drained). */
static void test_trace_memory_counter(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg); /* pp 4, dp 8: 8 micro-batches per stage */
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  grow_sink g = {NULL, 0, 0};
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &cfg, to_grow_sink, &g, &r), 0);
  int64_t m = cfg.training.global_batch / (cfg.training.micro_batch * cfg.parallel.dp);
  size_t count = 0;
  for (const char *p = g.buf; (p = strstr(p, "\"ph\":\"C\"")); p++) count++;
  assert_int_equal(count, (size_t)(r.simulated_ranks * (1 + 2 * m)));
  for (int64_t pid = 0; pid < r.simulated_ranks; pid++) {
    char key[96];
    snprintf(key, sizeof key, "\"name\":\"memory\",\"pid\":%lld,",
             (long long)(pid * cfg.parallel.tp * cfg.parallel.dp));
    double first = -1, last = -1, peak = 0;
    for (const char *p = g.buf; (p = strstr(p, key)); p++) {
      const char *v = strstr(p, "\"GiB\":");
      assert_non_null(v);
      double x = atof(v + 6);
      if (first < 0) first = x;
      last = x;
      if (x > peak) peak = x;
    }
    assert_true(first > 0 && fabs(first - last) < 1e-3 && peak > first);
  }
  free(g.buf);
}

static int failing_sink(void *ud, const char *buf, size_t len) {
  (void)ud, (void)buf, (void)len;
  return SC_EIO;
}

static void test_trace_write_error(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &cfg, failing_sink, NULL, &r), SC_EIO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_1f1b),
      cmocka_unit_test(test_fold_interleaved_sp_distopt),
      cmocka_unit_test(test_fold_gpipe_interference),
      cmocka_unit_test(test_fold_llama_gqa_swiglu),
      cmocka_unit_test(test_1f1b_bubble),
      cmocka_unit_test(test_interleaved_smaller_bubble),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_interference_slows),
      cmocka_unit_test(test_breakdown_sums_to_step),
      cmocka_unit_test(test_trace_streams),
      cmocka_unit_test(test_trace_write_error),
      cmocka_unit_test(test_trace_memory_counter),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
