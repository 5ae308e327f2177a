/* test_engine.c: engine properties: folded == unfolded step time, 1F1B bubble
 * fraction, determinism, interference and NIC sharing slow things down, and
 * the interference models' exact effect on hand-built one-rank workloads. */
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

#include "sctest_pipe.h"
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

/* A small GPT (sctest.h); callers then adjust. */
static void small_config(sc_config *cfg) { assert_int_equal(sc_test_small_gpt(ctx, cfg), 0); }

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
  assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
  cfg.training.recompute = SC_RECOMPUTE_NONE;
  cfg.parallel.sequence_parallel = 1;
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
    cfg.cluster.nic_gbps = 1e5; /* the largest accepted: 100 Tbit/s, transfers negligible */
    cfg.cluster.nvlink_gbps = 1e5;
    cfg.costs.p2p_latency_us = 0.01; /* the smallest accepted: 10 ns, negligible here */
    if (sc_config_resolve(ctx, &cfg)) fail_msg("%s", sc_errmsg(ctx));
    sc_cost cost;
    sc_workload wl;
    sc_shape sh;
    assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
    assert_int_equal(sc_test_build(ctx, &cfg, &cost, 0, &sh, &wl), 0);
    for (int64_t s = 0; s < wl.nprogs; s++)
      for (size_t k = 0; k < wl.progs[s].nops[SC_ST_COMPUTE]; k++) {
        sc_op *op = &wl.progs[s].ops[SC_ST_COMPUTE][k];
        if (op->layer == SC_NO_LAYER) op->work = 0; /* embedding, head, optimizer */
      }
    sc_engine_result r;
    assert_int_equal(sc_test_engine(ctx, &cfg, &wl, &cost, NULL, NULL, &r), 0);
    sc__workload_free(ctx, &wl);
    double expect = (double)(p - 1) / (double)(m + p - 1);
    double got = (r.breakdown_s[SC_CAT_BUBBLE] + r.breakdown_s[SC_CAT_PP]) / sc_test_step_s(&r);
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
  cfg.costs.interference_gemm = 0.5;
  simulate(&cfg, &constant);
  assert_true(constant.step_time_s > none.step_time_s);
  sc_result learned;
  small_config(&cfg);
  cfg.simulation.interference = SC_INTERF_LEARNED;
  cfg.costs.interference_w.gemm = 0.5;
  simulate(&cfg, &learned);
  assert_true(learned.step_time_s > none.step_time_s);
}

static void test_fold_learned_interference(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  cfg.simulation.interference = SC_INTERF_LEARNED;
  cfg.parallel.sequence_parallel = 1;
  /* every feature weighs something, so every comm feature must agree */
  double w[SC_INTERF_NFEAT];
  for (int i = 0; i < SC_INTERF_NFEAT; i++) w[i] = 0.01 * (i + 1);
  w[SC_IF_log_dur] = -0.05;
  sc__interf_coefs_from_array(w, &cfg.costs.interference_w);
  assert_fold_equal(&cfg);
}

/* ---------------------------------------------------------------- hand-built */

/* One pipeline stage of a TP-2 job (one simulated rank, folded), whose
 * program is replaced by one compute op of `work_ns` on the compute stream
 * and one collective of `bytes` on the TP stream, both free to start at 0
 * unless `after_comm` makes the compute op wait for the collective.
 * Communication keeps its speed (interference_comm 0): the tests look at
 * the compute op. */
typedef struct tiny {
  sc_config cfg;
  sc_shape sh;
  sc_cost cost;
  sc_workload wl;
} tiny;

static void tiny_build(tiny *t, sc_interference model, int kind, double work_ns, int coll,
                       double bytes, int after_comm) {
  sc_config_default(&t->cfg);
  assert_int_equal(sc_model_preset(ctx, &t->cfg, "gpt3-1.3b"), 0);
  t->cfg.model.layers = 2;
  t->cfg.training.global_batch = 1;
  t->cfg.training.micro_batch = 1;
  t->cfg.parallel.tp = 2;
  t->cfg.parallel.pp = 1;
  t->cfg.parallel.dp = 0;
  t->cfg.cluster.num_gpus = 2;
  t->cfg.cluster.nodes = 0;
  t->cfg.simulation.interference = model;
  if (sc_config_resolve(ctx, &t->cfg)) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc__cost_init(ctx, &t->cfg, &t->cost), 0);
  assert_int_equal(sc_test_build(ctx, &t->cfg, &t->cost, 0, &t->sh, &t->wl), 0);
  t->cost.p.interference_comm = 0;
  sc_program *p = &t->wl.progs[0];
  for (int s = 0; s < SC_ST_COUNT; s++) p->nops[s] = 0;
  sc_op *c = &p->ops[SC_ST_COMPUTE][0], *m = &p->ops[SC_ST_TP][0];
  memset(c, 0, sizeof *c);
  memset(m, 0, sizeof *m);
  c->work = work_ns;
  c->kind = (uint8_t)kind;
  c->cat = SC_CAT_COMPUTE;
  c->layer = SC_NO_LAYER;
  if (after_comm) {
    p->deps[0] = SC_DEP(SC_ST_TP, 0);
    c->dep_off = 0;
    c->ndeps = 1;
  }
  m->work = bytes;
  m->kind = SC_OP_COLL;
  m->cat = SC_CAT_TP;
  m->coll = (uint8_t)coll;
  m->group = SC_GRP_TP;
  m->layer = SC_NO_LAYER;
  p->nops[SC_ST_COMPUTE] = p->nops[SC_ST_TP] = 1;
}

/* Duration of the tiny job's collective (two ranks on one node). */
static double tiny_comm_ns(const tiny *t, int coll, double bytes) {
  sc_placement pl = {2, 1, 2};
  return t->cost.comm->coll_ns(&t->cost, coll, bytes, &pl);
}

/* Runs the tiny job: the compute op's duration (its stream's busy time) and
 * the step time, ns. */
static void tiny_run(tiny *t, double *compute_ns, double *step_ns) {
  sc_engine_result r;
  assert_int_equal(sc_test_engine(ctx, &t->cfg, &t->wl, &t->cost, NULL, NULL, &r), 0);
  *compute_ns = r.breakdown_s[SC_CAT_COMPUTE] * 1e9;
  *step_ns = sc_test_step_s(&r) * 1e9;
  sc__workload_free(ctx, &t->wl);
}

#define BIG_BYTES (256.0 * 1048576.0) /* an all-reduce far longer than the kernels below */

/* No overlap, no slowdown: a kernel after the collective runs at full speed
 * whatever the model. */
static void test_interference_no_overlap(void **state) {
  (void)state;
  for (int model = SC_INTERF_NONE; model <= SC_INTERF_LEARNED; model++) {
    tiny t;
    double work = 1e5, comp, step;
    tiny_build(&t, (sc_interference)model, SC_OP_GEMM, work, SC_COLL_ALLREDUCE, BIG_BYTES, 1);
    double d = tiny_comm_ns(&t, SC_COLL_ALLREDUCE, BIG_BYTES);
    tiny_run(&t, &comp, &step);
    assert_true(fabs(comp - work) <= 1.0);
    assert_true(fabs(step - (ceil(d) + work)) <= 2.0);
  }
}

/* Overlapped for its whole duration, a kernel takes exactly T * (1 + s):
 * s per class for `constant`, s = w . x for `learned`, 0 for `none`. */
static void test_interference_full_overlap(void **state) {
  (void)state;
  static const int kinds[] = {SC_OP_GEMM, SC_OP_ATTN, SC_OP_ELEMWISE, SC_OP_NORM,
                              SC_OP_OPTIMIZER};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    tiny t;
    double work = 1e5, comp, step;
    tiny_build(&t, SC_INTERF_CONSTANT, kinds[i], work, SC_COLL_ALLREDUCE, BIG_BYTES, 0);
    double s = sc__interf_constant_s(&t.cost.p, kinds[i]);
    assert_true(s > 0);
    assert_true(tiny_comm_ns(&t, SC_COLL_ALLREDUCE, BIG_BYTES) > work * (1 + s));
    tiny_run(&t, &comp, &step);
    if (fabs(comp - work * (1 + s)) > 1.0)
      fail_msg("kind %d: %.1f ns, expected %.1f", kinds[i], comp, work * (1 + s));
  }
  tiny t;
  double work = 1e5, comp, step;
  tiny_build(&t, SC_INTERF_NONE, SC_OP_GEMM, work, SC_COLL_ALLREDUCE, BIG_BYTES, 0);
  tiny_run(&t, &comp, &step);
  assert_true(fabs(comp - work) <= 1.0);
  /* learned: only the GEMM intercept and the all-gather term are non-zero */
  for (int coll = SC_COLL_ALLREDUCE; coll <= SC_COLL_ALLGATHER; coll++) {
    tiny_build(&t, SC_INTERF_LEARNED, SC_OP_GEMM, work, coll, BIG_BYTES, 0);
    memset(t.cost.interf_w, 0, sizeof t.cost.interf_w); /* what the engine reads */
    t.cost.interf_w[SC_IF_gemm] = 0.3;
    t.cost.interf_w[SC_IF_all_gather] = 0.2;
    double s = coll == SC_COLL_ALLGATHER ? 0.5 : 0.3;
    tiny_run(&t, &comp, &step);
    if (fabs(comp - work * (1 + s)) > 1.0)
      fail_msg("learned, coll %d: %.1f ns, expected %.1f", coll, comp, work * (1 + s));
  }
}

/* Rates are recomputed when the overlap changes: a kernel whose first half
 * of work runs under a collective that then ends takes T * (1 + s / 2). */
static void test_interference_half_overlap(void **state) {
  (void)state;
  for (int model = SC_INTERF_CONSTANT; model <= SC_INTERF_LEARNED; model++) {
    tiny t;
    double bytes = 16.0 * 1048576.0, comp, step;
    tiny_build(&t, (sc_interference)model, SC_OP_ELEMWISE, 1, SC_COLL_ALLREDUCE, bytes, 0);
    double s = sc__interf_constant_s(&t.cost.p, SC_OP_ELEMWISE);
    if (model == SC_INTERF_LEARNED) {
      memset(t.cost.interf_w, 0, sizeof t.cost.interf_w);
      t.cost.interf_w[SC_IF_elementwise] = s = 0.7;
    }
    /* The collective lasts d: at rate 1 / (1 + s) the kernel does d / (1 + s)
     * of work meanwhile; make that half of it. */
    double d = ceil(tiny_comm_ns(&t, SC_COLL_ALLREDUCE, bytes) - 1e-9);
    double work = 2 * d / (1 + s);
    t.wl.progs[0].ops[SC_ST_COMPUTE][0].work = work;
    tiny_run(&t, &comp, &step);
    if (fabs(comp - work * (1 + s / 2)) > 2.0)
      fail_msg("model %d: %.1f ns, expected %.1f", model, comp, work * (1 + s / 2));
  }
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


/* The trace's memory counter: one sample at the start per rank, one when each
 * forward item allocates and one when its backward frees; every rank ends
 * where it started (activations drained). */
static void test_trace_memory_counter(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg); /* pp 4, dp 8: 8 micro-batches per stage */
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_test_buf g = {NULL, 0, 0};
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &cfg, sc_test_buf_write, &g, &r), 0);
  int64_t m = cfg.training.global_batch / (cfg.training.micro_batch * cfg.parallel.dp);
  size_t count = 0;
  for (const char *p = g.p; (p = strstr(p, "\"ph\":\"C\"")); p++) count++;
  assert_int_equal(count, (size_t)(r.simulated_ranks * (1 + 2 * m)));
  for (int64_t pid = 0; pid < r.simulated_ranks; pid++) {
    char key[96];
    snprintf(key, sizeof key, "\"name\":\"memory\",\"pid\":%lld,",
             (long long)(pid * cfg.parallel.tp * cfg.parallel.dp));
    double first = -1, last = -1, peak = 0;
    for (const char *p = g.p; (p = strstr(p, key)); p++) {
      const char *v = strstr(p, "\"GiB\":");
      assert_non_null(v);
      double x = atof(v + 6);
      if (first < 0) first = x;
      last = x;
      if (x > peak) peak = x;
    }
    assert_true(first > 0 && fabs(first - last) < 1e-3 && peak > first);
  }
  free(g.p);
}

static int failing_sink(void *ud, const char *buf, size_t len) {
  (void)ud, (void)buf, (void)len;
  return SC_EWRITE;
}

static void test_trace_write_error(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &cfg, failing_sink, NULL, &r), SC_EWRITE);
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
      cmocka_unit_test(test_fold_learned_interference),
      cmocka_unit_test(test_interference_no_overlap),
      cmocka_unit_test(test_interference_full_overlap),
      cmocka_unit_test(test_interference_half_overlap),
      cmocka_unit_test(test_breakdown_sums_to_step),
      cmocka_unit_test(test_trace_streams),
      cmocka_unit_test(test_trace_write_error),
      cmocka_unit_test(test_trace_memory_counter),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
