/* test_variation.c: what-if variation (docs/WHATIF.md). A slow GPU in a
 * data-parallel pair without overlap costs exactly its extra compute (hand
 * computed); folding split only where a variation reaches gives the same
 * step and breakdown as simulating every rank (dense TP/PP/DP, slow links,
 * MoE expert blocks, HSDP shard blocks, a second GPU type); one slow GPU
 * slows the step by no more than its own slowdown and is the rank on the
 * critical path; seeded draws are reproducible; goodput under failures is
 * the hand-computed one; bad variations are errors naming the key. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "sctest.h"

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

/* Applies NULL-terminated --set assignments, resolves and simulates. */
static int run_with(const sc_config *base, sc_result *r, ...) {
  sc_config c = *base;
  va_list ap;
  va_start(ap, r);
  int rc = 0;
  for (const char *a; !rc && (a = va_arg(ap, const char *));) rc = sc_config_set(ctx, &c, a);
  va_end(ap);
  if (!rc) rc = sc_config_resolve(ctx, &c);
  if (!rc) rc = sc_simulate(ctx, &c, NULL, NULL, r);
  if (rc) fprintf(stderr, "run_with: %s\n", sc_errmsg(ctx));
  return rc;
}

static void small_gpt(sc_config *c) { assert_int_equal(sc_test_small_gpt(ctx, c), 0); }

/* Folded with the variation equals unfolded with it: step time and every
 * category (the classes are exact, not an approximation). */
static void same_as_unfolded(const sc_config *base, const char *var, int expect_fewer) {
  sc_result f, u;
  assert_int_equal(run_with(base, &f, var, NULL), 0);
  assert_int_equal(run_with(base, &u, var, "simulation.fold=false", NULL), 0);
  assert_true(f.varied_ranks > 0);
  assert_int_equal(f.varied_ranks, u.varied_ranks);
  assert_true(f.step_time_s == u.step_time_s);
  for (int c = 0; c < SC_CAT_COUNT; c++)
    assert_true(fabs(f.breakdown_s[c] - u.breakdown_s[c]) <= 1e-9 * f.step_time_s);
  assert_int_equal(u.simulated_ranks, u.num_gpus);
  if (expect_fewer) assert_true(f.simulated_ranks < f.num_gpus);
  assert_true(f.step_time_nominal_s > 0 && f.step_time_s >= f.step_time_nominal_s * (1 - 1e-12));
}

/* Two data-parallel ranks, no pipeline, no overlap: the slow rank's compute
 * and optimizer take 1/speed as long and the gradient all-reduce waits for
 * it, so step = nominal + (1/speed - 1) (compute + optimizer). */
static void test_hand_computed(void **state) {
  (void)state;
  sc_config base;
  small_gpt(&base);
  const char *shape[] = {"parallel.tp=1", "parallel.pp=1", "cluster.num_gpus=2",
                         "training.global_batch=4", "parallel.overlap_grad_reduce=false"};
  for (size_t i = 0; i < sizeof shape / sizeof *shape; i++)
    assert_int_equal(sc_config_set(ctx, &base, shape[i]), 0);
  sc_result nom, var;
  assert_int_equal(run_with(&base, &nom, NULL), 0);
  assert_int_equal(run_with(&base, &var, "variation.slow_gpus=ranks=1 speed=0.5", NULL), 0);
  double expect = nom.step_time_s + nom.breakdown_s[SC_CAT_COMPUTE] + nom.breakdown_s[SC_CAT_OPTIMIZER];
  assert_true(fabs(var.step_time_s - expect) <= 1e-6 * expect);
  assert_true(var.step_time_nominal_s == nom.step_time_s);
  assert_int_equal(var.varied_ranks, 1);
  assert_true(var.slowest_gpu_speed == 0.5);
  assert_int_equal(var.critical_path_ranks[0].rank, 1);
  /* speed 1 is nominal: same step */
  sc_result one;
  assert_int_equal(run_with(&base, &one, "variation.slow_gpus=ranks=0 speed=1", NULL), 0);
  assert_true(one.step_time_s == nom.step_time_s);
}

static void test_fold_matches_unfolded(void **state) {
  (void)state;
  sc_config gpt, llama;
  small_gpt(&gpt); /* TP2 PP4 DP8 on 64 A100s */
  same_as_unfolded(&gpt, "variation.slow_gpus=ranks=13 speed=0.8", 1);
  same_as_unfolded(&gpt, "variation.slow_gpus=ranks=13 speed=0.8; ranks=40-41 speed=0.95", 1);
  same_as_unfolded(&gpt, "variation.slow_links=nodes=1 nic_speed=0.5 nvlink_speed=0.7", 1);
  same_as_unfolded(&gpt, "variation.gpu_mix=gpu=v100-32gb nodes=2", 1);
  assert_int_equal(sc_test_small_llama(ctx, &llama), 0); /* TP4 PP2 on H100s */
  assert_int_equal(sc_config_set(ctx, &llama, "cluster.num_gpus=64"), 0); /* DP8 */
  /* HSDP: shard blocks of two replicas pair with the others position by
   * position (replica groups) */
  assert_int_equal(sc_config_set(ctx, &llama, "parallel.zero_stage=3"), 0);
  assert_int_equal(sc_config_set(ctx, &llama, "parallel.fsdp_shard=2"), 0);
  same_as_unfolded(&llama, "variation.slow_gpus=ranks=5 speed=0.7", 1);
  /* MoE: EP 8 over a stage of 32 ranks (tp 2 x dp 16) is four expert blocks */
  sc_config moe;
  small_gpt(&moe);
  const char *m[] = {"model.moe_experts=8", "model.moe_topk=2", "parallel.ep=8",
                     "parallel.sequence_parallel=true", "parallel.etp=1",
                     "parallel.pp=2", "cluster.num_gpus=64", "model.layers=4"};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++) assert_int_equal(sc_config_set(ctx, &moe, m[i]), 0);
  same_as_unfolded(&moe, "variation.slow_gpus=ranks=3 speed=0.7", 1);
}

/* The default example: one GPU at 0.8 slows the step by less than 1/0.8,
 * sets the critical path, and costs 2 replicas of 128 ranks instead of 1024. */
static void test_bound_and_ranks(void **state) {
  (void)state;
  sc_config ex;
  sc_test_example(&ex);
  sc_result r;
  assert_int_equal(run_with(&ex, &r, "variation.slow_gpus=ranks=5 speed=0.8", NULL), 0);
  double slow = r.step_time_s / r.step_time_nominal_s;
  assert_true(slow > 1.0 && slow <= 1.0 / 0.8);
  assert_int_equal(r.simulated_ranks, 256);
  assert_int_equal(r.critical_path_ranks[0].rank, 5);
  assert_int_equal(r.critical_path_ranks[0].ranks, 1);
}

static void test_seeded(void **state) {
  (void)state;
  sc_config gpt;
  small_gpt(&gpt);
  sc_result a, b, c;
  assert_int_equal(run_with(&gpt, &a, "variation.gpu_speed_sigma=0.05", "variation.seed=1", NULL), 0);
  assert_int_equal(run_with(&gpt, &b, "variation.gpu_speed_sigma=0.05", "variation.seed=1", NULL), 0);
  assert_int_equal(run_with(&gpt, &c, "variation.gpu_speed_sigma=0.05", "variation.seed=2", NULL), 0);
  assert_true(a.step_time_s == b.step_time_s);
  assert_true(a.step_time_s != c.step_time_s);
  assert_int_equal(a.simulated_ranks, 64);
  assert_int_equal(a.varied_ranks, 64);
  assert_true(a.slowest_gpu_speed < 1.0);
  assert_true(a.step_time_s > a.step_time_nominal_s);
  /* count= draws distinct ranks, reproducibly */
  assert_int_equal(run_with(&gpt, &a, "variation.slow_gpus=count=3 speed=0.9", NULL), 0);
  assert_int_equal(run_with(&gpt, &b, "variation.slow_gpus=count=3 speed=0.9", NULL), 0);
  assert_int_equal(a.varied_ranks, 3);
  assert_true(a.step_time_s == b.step_time_s);
}

static void test_gpu_mix(void **state) {
  (void)state;
  sc_config llama;
  assert_int_equal(sc_test_small_llama(ctx, &llama), 0);
  sc_result r;
  /* the last node on A100s: slower kernels there */
  assert_int_equal(run_with(&llama, &r, "variation.gpu_mix=gpu=a100-80gb count=1", NULL), 0);
  assert_int_equal(r.gpu_mix_ranks, 8);
  assert_string_equal(r.gpu_mix, "a100-80gb");
  /* every kernel class is slower there: with the shipped efficiencies an
   * A100 runs GEMMs at 0.39x, attention at 0.83x and streaming kernels at
   * 0.71x of an H100, so the pipeline stage on it takes at least 1/0.83 of
   * its time and sets the step (0.91 s against 0.62 s nominal) */
  assert_true(r.step_time_s > 1.2 * r.step_time_nominal_s);
  assert_false(r.gpu_mix_oom);
  /* a stage that does not fit a 32 GB GPU: OOM */
  assert_int_equal(run_with(&llama, &r, "variation.gpu_mix=gpu=v100-32gb nodes=0",
                            "model.layers=32", "training.micro_batch=4",
                            "training.recompute=none", NULL), 0);
  if (!r.gpu_mix_oom) fprintf(stderr, "memory %.3g GiB\n", r.memory_gib);
  assert_true(r.gpu_mix_oom);
  assert_true(r.oom);
}

static void test_goodput(void **state) {
  (void)state;
  sc_config gpt;
  small_gpt(&gpt);
  sc_result r;
  assert_int_equal(run_with(&gpt, &r, "variation.failures=100,550", "variation.steps=1000",
                            "training.checkpoint_interval=100", "training.restart_s=60",
                            "training.checkpoint_load_s=30", "training.checkpoint_save_s=10", NULL),
                   0);
  double S = r.step_time_s;
  /* lost: 99.5 + 49.5 steps; 10 checkpoints of 10 s; 2 restarts of 90 s */
  double T = 1000 * S + 149 * S + 100 + 180;
  assert_int_equal(r.run_steps, 1000);
  assert_true(r.failures == 2);
  assert_true(fabs(r.goodput - 1000 * S / T) < 1e-12);
  assert_true(fabs(r.run_days - T / 86400) < 1e-12);
  assert_int_equal(r.varied_ranks, 0); /* failures change the run, not the step */
  /* MTBF: T = fixed / (1 - lambda c), lambda = 64 / (MTBF s) */
  assert_int_equal(run_with(&gpt, &r, "variation.gpu_mtbf_hours=50000", "variation.steps=1000",
                            "training.checkpoint_interval=100", "training.restart_s=60", NULL),
                   0);
  S = r.step_time_s;
  double lambda = 64.0 / (50000.0 * 3600.0), c = 60 + 50.5 * S;
  T = 1000 * S / (1 - lambda * c);
  assert_true(fabs(r.run_days * 86400 - T) <= 1e-9 * T);
  assert_true(fabs(r.failures - lambda * T) <= 1e-9);
}

static void expect_error(const sc_config *base, const char *needle, ...) {
  sc_config c = *base;
  va_list ap;
  va_start(ap, needle);
  int rc = 0;
  for (const char *a; !rc && (a = va_arg(ap, const char *));) rc = sc_config_set(ctx, &c, a);
  va_end(ap);
  if (!rc) rc = sc_config_resolve(ctx, &c);
  sc_result r;
  if (!rc) rc = sc_simulate(ctx, &c, NULL, NULL, &r);
  assert_int_equal(rc, SC_EINVAL);
  if (!strstr(sc_errmsg(ctx), needle)) fprintf(stderr, "message: %s\n", sc_errmsg(ctx));
  assert_non_null(strstr(sc_errmsg(ctx), needle));
}

static void test_bad_input(void **state) {
  (void)state;
  sc_config gpt;
  small_gpt(&gpt);
  expect_error(&gpt, "rank 64 is outside the job", "variation.slow_gpus=ranks=64 speed=0.5", NULL);
  expect_error(&gpt, "node 8 is outside the job", "variation.slow_links=nodes=8 nic_speed=0.5", NULL);
  expect_error(&gpt, "speed factor in (0, 4]", "variation.slow_gpus=ranks=1 speed=0", NULL);
  expect_error(&gpt, "both ranks and count", "variation.slow_gpus=ranks=1 count=2 speed=0.5", NULL);
  expect_error(&gpt, "unknown key \"sped\"", "variation.slow_gpus=ranks=1 sped=0.5", NULL);
  expect_error(&gpt, "needs speed", "variation.slow_gpus=ranks=1", NULL);
  expect_error(&gpt, "count=65 is more than", "variation.slow_gpus=count=65 speed=0.5", NULL);
  expect_error(&gpt, "unknown gpu \"nope\"", "variation.gpu_mix=gpu=nope nodes=0", NULL);
  expect_error(&gpt, "one other GPU at most", "variation.gpu_mix=gpu=v100-32gb nodes=0; gpu=h100-sxm nodes=1", NULL);
  expect_error(&gpt, "past the run", "variation.failures=2000", "variation.steps=1000", NULL);
  expect_error(&gpt, "need the run's length", "variation.failures=20", NULL);
  expect_error(&gpt, "needs training.checkpoint_interval", "variation.gpu_mtbf_hours=1000",
               "variation.steps=10", NULL);
  expect_error(&gpt, "never finishes", "variation.gpu_mtbf_hours=1", "variation.steps=10",
               "training.checkpoint_interval=100000", "training.restart_s=100000", NULL);
  expect_error(&gpt, "out of range", "variation.gpu_speed_sigma=0.9", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_computed), cmocka_unit_test(test_fold_matches_unfolded),
      cmocka_unit_test(test_bound_and_ranks), cmocka_unit_test(test_seeded),
      cmocka_unit_test(test_gpu_mix),       cmocka_unit_test(test_goodput),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
