/* test_workload.c: workload synthesis: invariants of the per-stage programs,
 * op counts per layer, p2p pairing, and the model-FLOPs formulas. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "cost_int.h"
#include "workload_int.h"

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

static void build(sc_config *cfg, sc_workload *wl) {
  sc_cost cost;
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
  assert_int_equal(sc__cost_init(ctx, cfg, &cost), 0);
  if (sc__workload_build(ctx, cfg, &cost, wl)) fail_msg("build: %s", sc_errmsg(ctx));
  if (sc__workload_check(ctx, wl)) fail_msg("check: %s", sc_errmsg(ctx));
}

static size_t count(const sc_program *p, int stream, int label) {
  size_t n = 0;
  for (size_t i = 0; i < p->nops[stream]; i++) n += p->ops[stream][i].label == label;
  return n;
}

/* Default example: TP8 without SP, PP16, 1F1B, full recompute. */
static void test_default_program_shape(void **state) {
  (void)state;
  sc_config cfg;
  sc_config_default(&cfg);
  sc_workload wl;
  build(&cfg, &wl);
  assert_int_equal(wl.nprogs, 16);
  int64_t m = 1536 / 8, layers = 96 / 16;
  const sc_program *mid = &wl.progs[5];
  /* QKV GEMMs: forward + recompute + dgrad + wgrad per layer and micro-batch. */
  assert_int_equal(count(mid, SC_ST_COMPUTE, SC_L_QKV), (size_t)(4 * layers * m));
  /* TP all-reduces: 2 forward + 2 recompute + 2 backward per layer-mb. */
  assert_int_equal(count(mid, SC_ST_TP, SC_L_TP_AR), (size_t)(6 * layers * m));
  /* Middle stages receive and send every micro-batch in both directions. */
  assert_int_equal(mid->nops[SC_ST_FWD_RECV], (size_t)m);
  assert_int_equal(mid->nops[SC_ST_FWD_SEND], (size_t)m);
  assert_int_equal(mid->nops[SC_ST_BWD_RECV], (size_t)m);
  assert_int_equal(wl.progs[0].nops[SC_ST_FWD_RECV], 0);
  assert_int_equal(wl.progs[15].nops[SC_ST_FWD_SEND], 0);
  /* Tied embeddings: first and last stage sync embedding grads. */
  assert_int_equal(count(&wl.progs[0], SC_ST_DP, SC_L_EMBED_AR), 1);
  assert_int_equal(count(&wl.progs[15], SC_ST_DP, SC_L_EMBED_AR), 1);
  assert_int_equal(count(mid, SC_ST_DP, SC_L_EMBED_AR), 0);
  assert_int_equal(count(mid, SC_ST_COMPUTE, SC_L_OPTIM), 1);
  /* DP all-reduce buckets cover exactly the last stage's parameters (the
   * fullest stage: layers, LM head copy, final norm), fp16 grads = 2 bytes. */
  const sc_program *last = &wl.progs[15];
  double bytes = 0;
  for (size_t i = 0; i < last->nops[SC_ST_DP]; i++)
    if (last->ops[SC_ST_DP][i].label == SC_L_GRAD_AR) bytes += last->ops[SC_ST_DP][i].work;
  assert_true(fabs(bytes / 2.0 - wl.params_per_stage_max) < 1e-6 * wl.params_per_stage_max);
  sc__workload_free(ctx, &wl);
}

static void test_sp_uses_ag_rs(void **state) {
  (void)state;
  sc_config cfg;
  sc_config_default(&cfg);
  cfg.parallel.sequence_parallel = 1;
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  sc_workload wl;
  build(&cfg, &wl);
  const sc_program *mid = &wl.progs[3];
  assert_int_equal(count(mid, SC_ST_TP, SC_L_TP_AR), 0);
  assert_true(count(mid, SC_ST_TP, SC_L_TP_AG) > 0);
  assert_true(count(mid, SC_ST_TP, SC_L_TP_RS) > 0);
  sc__workload_free(ctx, &wl);
}

static void test_interleaved_programs_check(void **state) {
  (void)state;
  sc_config cfg;
  sc_config_default(&cfg);
  cfg.parallel.vpp = 3;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  cfg.parallel.distributed_optimizer = 1;
  cfg.parallel.overlap_param_gather = 1;
  sc_workload wl;
  build(&cfg, &wl);
  /* With the wrap-around, stage 0 receives activations for chunks 1..v-1. */
  assert_int_equal(wl.progs[0].nops[SC_ST_FWD_RECV], (size_t)(2 * 192));
  sc__workload_free(ctx, &wl);
}

/* Megatron's closed forms for GPT (MHA, f = 4h): model 72*B*s*L*h^2*(1 + s/6h +
 * V/12Lh), hardware with full recompute 96*B*s*L*h^2*(1 + s/6h + V/16Lh). */
static void test_flops_formulas(void **state) {
  (void)state;
  sc_config cfg;
  sc_config_default(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  double B = 1536, s = 2048, L = 96, h = 12288, V = 51200;
  double model = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  double hw = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  double m, w;
  sc__model_flops(&cfg, &m, &w);
  assert_true(fabs(m - model) < 1e-9 * model);
  assert_true(fabs(w - hw) < 1e-9 * hw);
}

static void test_rejects_bad_pipeline(void **state) {
  (void)state;
  sc_config cfg;
  sc_config_default(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  cfg.parallel.vpp = 5; /* 96 layers do not split into 16 * 5 chunks */
  sc_cost cost;
  sc_workload wl;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  assert_int_equal(sc__workload_build(ctx, &cfg, &cost, &wl), SC_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_program_shape),
      cmocka_unit_test(test_sp_uses_ag_rs),
      cmocka_unit_test(test_interleaved_programs_check),
      cmocka_unit_test(test_flops_formulas),
      cmocka_unit_test(test_rejects_bad_pipeline),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
