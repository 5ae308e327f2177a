/* test_offload.c: host-memory offload (src/synth/offload.c and its memory
 * terms in memory.c): the device and host bytes by hand, the copies and the
 * CPU optimizer step in the workload (counts, bytes, durations), a slow host
 * link delaying the step and a fast one hidden behind compute, the counter
 * track's peak equal to the estimate, and the refused combinations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost/cost_int.h"
#include "model/memory_int.h"
#include "sctest.h"
#include "sctest_pipe.h"

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

static void assert_close(double got, double want, double rel, const char *what) {
  if (fabs(got - want) > rel * fabs(want))
    fail_msg("%s: got %.9g, want %.9g (rel tol %g)", what, got, want, rel);
}

/* Llama 3 8B cut to 8 layers on one node of 8 H100s: TP 2 + SP, PP 1, DP 4,
 * micro-batch 1 x 8192, 8 micro-batches a replica, bf16, no recompute,
 * the distributed optimizer (unresolved). */
static void llama8(sc_config *cfg) {
  assert_int_equal(sc_test_small_llama(ctx, cfg), 0);
  cfg->cluster.num_gpus = 8;
  cfg->training.micro_batch = 1;
  cfg->training.recompute = SC_RECOMPUTE_NONE;
  cfg->parallel.tp = 2;
  cfg->parallel.pp = 1;
  cfg->parallel.sequence_parallel = 1;
}

static void resolve(sc_config *cfg) {
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
}

static void estimate(const sc_config *cfg, sc_memory_stage *st) {
  sc_memory_report r;
  if (sc_memory_estimate(ctx, cfg, &r)) fail_msg("estimate: %s", sc_errmsg(ctx));
  *st = r.stages[0];
  sc_memory_report_free(ctx, &r);
}

/* One layer's stored activations per micro-batch without recompute, by
 * hand (Korthikanti et al. generalised, docs/MEMORY.md) for Llama 3 8B at
 * t = 2 with SP and FlashAttention, bytes a token: e (4h/t norm and GEMM
 * inputs + qd/t + 2 g_t d K and V + qd/t attention output + 3f/t SwiGLU's
 * two FC1 halves and the activation output) + 4 a/t log-sum-exp =
 * 2 (8192 + 2048 + 1024 + 2048 + 21504) + 64 = 69,696; x 8192 tokens. */
#define LAYER_ACT (69696.0 * 8192.0)

/* training.optimizer_offload f: f of the (sharded) optimizer states move to
 * the host, nothing else changes; activation_offload_layers n: n layers'
 * activations of the one micro-batch held at the peak (1F1B at pp 1) go to
 * the host, one layer stays as the one in transit. */
static void test_memory_terms(void **state) {
  (void)state;
  sc_config cfg;
  llama8(&cfg);
  resolve(&cfg);
  sc_memory_stage base;
  estimate(&cfg, &base);
  sc_shape sh;
  assert_int_equal(sc__shape_init(ctx, &cfg, &sh), 0);
  assert_close(sc__memory_layer_act(&sh, SC_RECOMPUTE_NONE, 1), LAYER_ACT, 1e-15, "layer");
  /* 12 bytes a parameter over dp 4 */
  assert_close(base.optimizer_bytes, base.params * 12.0 / 4.0, 1e-12, "optimizer states");

  sc_config o = cfg;
  o.training.optimizer_offload = 0.25;
  resolve(&o);
  sc_memory_stage st;
  estimate(&o, &st);
  assert_close(st.optimizer_bytes, 0.75 * base.optimizer_bytes, 1e-12, "device states");
  assert_close(st.host_optimizer_bytes, 0.25 * base.optimizer_bytes, 1e-12, "host states");
  assert_close(st.total_bytes, base.total_bytes - 0.25 * base.optimizer_bytes, 1e-12, "total");
  assert_true(st.activations_bytes == base.activations_bytes);
  assert_true(base.host_optimizer_bytes == 0 && base.host_activation_bytes == 0);

  sc_config a = cfg;
  a.training.activation_offload_layers = 5;
  resolve(&a);
  estimate(&a, &st);
  assert_true(st.inflight == 1 && base.inflight == 1);
  assert_close(st.activations_bytes, base.activations_bytes - 5.0 * LAYER_ACT, 1e-12,
               "stored on the device");
  assert_close(st.transient_bytes, base.transient_bytes + LAYER_ACT, 1e-12, "layer in transit");
  assert_close(st.host_activation_bytes, 5.0 * LAYER_ACT, 1e-12, "host activations");
  assert_true(st.optimizer_bytes == base.optimizer_bytes);

  /* A GPU step of streamed states (optimizer_offload_cpu_step false): they
   * are back on the device for the step, after the activations are freed.
   * Unsharded (dp 1: 16.8 GB of states against 6.7 GB of activations) that
   * moment is the peak. */
  sc_config g;
  llama8(&g);
  g.cluster.num_gpus = 2;
  g.training.global_batch = 8;
  g.training.optimizer_offload = 1;
  g.training.optimizer_offload_cpu_step = 0;
  resolve(&g);
  estimate(&g, &st);
  assert_true(st.optimizer_bytes == 0 && st.host_optimizer_bytes > st.activations_bytes);
  assert_close(st.activations_bytes + st.transient_bytes, st.host_optimizer_bytes, 1e-12,
               "the step's streamed states");
}

/* The workload of cfg (resolved), unmerged. */
static void build(const sc_config *cfg, sc_cost *cost, sc_shape *sh, sc_workload *wl) {
  assert_int_equal(sc__cost_init(ctx, cfg, cost), 0);
  if (sc_test_build(ctx, cfg, cost, 0, sh, wl)) fail_msg("build: %s", sc_errmsg(ctx));
  if (sc__workload_check(ctx, wl)) fail_msg("check: %s", sc_errmsg(ctx));
}

/* Copies on the host-copy stream: per micro-batch and offloaded layer one
 * copy out after its forward and one back before its backward, each of the
 * layer's activations at cluster.host_link_gbps; the optimizer's gradient
 * copy (fp32, 4 bytes a parameter), CPU Adam (30 bytes a parameter at
 * host_mem_gbps) and the 16-bit parameters back, over the offloaded
 * fraction of the rank's shard. */
static void test_ops(void **state) {
  (void)state;
  sc_config cfg;
  llama8(&cfg);
  cfg.training.activation_offload_layers = 3;
  cfg.training.optimizer_offload = 0.5;
  cfg.cluster.host_link_gbps = 20;
  cfg.cluster.host_mem_gbps = 40;
  resolve(&cfg);
  sc_cost cost;
  sc_shape sh;
  sc_workload wl;
  build(&cfg, &cost, &sh, &wl);
  const sc_program *p = &wl.progs[0];
  int64_t m = 32 / 4; /* micro-batches a replica */
  size_t d2h = 0, h2d = 0, cpu = 0;
  double local = sc__shape_stage_params(&sh, 0) / 4.0, f = 0.5;
  for (size_t i = 0; i < p->nops[SC_ST_HOST]; i++) {
    const sc_op *op = &p->ops[SC_ST_HOST][i];
    if (op->phase == SC_PH_STEP) {
      double want = op->label == SC_L_D2H   ? f * local * 4.0 / 20.0
                    : op->label == SC_L_H2D ? f * local * 2.0 / 20.0
                                            : f * local * 30.0 / 40.0;
      assert_int_equal(op->kind, op->label == SC_L_CPU_OPTIM ? SC_OP_HOST : SC_OP_MEMCPY);
      assert_int_equal(op->cat, SC_CAT_OPTIMIZER);
      assert_close(op->work, want, 1e-12, "optimizer copy / CPU step ns");
      cpu += op->label == SC_L_CPU_OPTIM;
      continue;
    }
    assert_int_equal(op->kind, SC_OP_MEMCPY);
    assert_true(op->layer < 3);
    assert_close(op->work, LAYER_ACT / 20.0, 1e-12, "activation copy ns");
    d2h += op->label == SC_L_D2H;
    h2d += op->label == SC_L_H2D;
  }
  assert_int_equal(d2h, (size_t)(3 * m));
  assert_int_equal(h2d, (size_t)(3 * m));
  assert_int_equal(cpu, 1);
  sc__workload_free(ctx, &wl);
  /* without offload: no host-copy stream at all */
  sc_config plain;
  llama8(&plain);
  resolve(&plain);
  build(&plain, &cost, &sh, &wl);
  assert_int_equal(wl.progs[0].nops[SC_ST_HOST], 0);
  sc__workload_free(ctx, &wl);
}

static double step_s(sc_config *cfg) {
  resolve(cfg);
  sc_result r;
  if (sc_simulate(ctx, cfg, NULL, NULL, &r)) fail_msg("simulate: %s", sc_errmsg(ctx));
  return r.step_time_s;
}

/* A slow host link exposes the copies (the forward two layers on waits for
 * its copy, the backward for its reload); a fast one hides them behind the
 * layers' compute: the step of a job without offload. The CPU step adds
 * its time to the optimizer's. */
static void test_link_speed(void **state) {
  (void)state;
  sc_config cfg;
  llama8(&cfg);
  double none = step_s(&cfg);
  sc_config a = cfg;
  a.training.activation_offload_layers = 6;
  a.cluster.host_link_gbps = 5000;
  double fast = step_s(&a);
  a.cluster.host_link_gbps = 50;
  double pcie = step_s(&a);
  a.cluster.host_link_gbps = 5;
  double slow = step_s(&a);
  if (fast != none) fail_msg("fast link: %.9f s, without offload %.9f s", fast, none);
  assert_true(pcie > none * 1.05);
  assert_true(slow > pcie * 2.0);

  sc_config o = cfg;
  o.training.optimizer_offload = 1;
  o.cluster.host_mem_gbps = 100;
  double cpu = step_s(&o);
  o.cluster.host_mem_gbps = 10;
  double cpu_slow = step_s(&o);
  assert_true(cpu > none);
  assert_true(cpu_slow > cpu);
  /* the CPU step grows by what the bandwidth takes away: 30 bytes a
   * parameter over the rank's shard at 10 rather than 100 GB/s */
  sc_shape sh;
  assert_int_equal(sc__shape_init(ctx, &o, &sh), 0);
  double local = sc__shape_stage_params(&sh, 0) / 4.0;
  assert_close(cpu_slow - cpu, local * 30.0 * (1.0 / 10.0 - 1.0 / 100.0) / 1e9, 1e-6,
               "CPU Adam time");
}

/* The memory counter track's peak is the estimate with offload too. */
static void test_counter_peak(void **state) {
  (void)state;
  for (int k = 0; k < 6; k++) {
    sc_config cfg;
    llama8(&cfg);
    if (k != 1 && k != 3 && k != 5) cfg.training.activation_offload_layers = 4;
    if (k != 0) cfg.training.optimizer_offload = 0.5;
    if (k == 2) cfg.parallel.schedule = SC_SCHED_GPIPE;
    /* a GPU step of streamed states: the step's peak is the larger one
     * with a short global batch (one micro-batch) and all states out */
    if (k == 3) cfg.training.optimizer_offload_cpu_step = 0, cfg.training.optimizer_offload = 1;
    if (k == 4) cfg.parallel.cp = 2, cfg.cluster.num_gpus = 16;
    if (k == 5) {
      cfg.cluster.num_gpus = 2, cfg.training.global_batch = 8;
      cfg.training.optimizer_offload = 1, cfg.training.optimizer_offload_cpu_step = 0;
    }
    resolve(&cfg);
    double peak = 0, want = 0;
    int st = sc_test_counter_peak_mismatch(ctx, &cfg, &peak, &want);
    if (st != -1) fail_msg("case %d: counter peak %.4f GiB, estimate %.4f GiB", k, peak, want);
  }
}

/* What is not modelled is refused at resolution, naming the field. */
static void test_refused(void **state) {
  (void)state;
  static const struct {
    const char *set, *msg;
  } bad[] = {
      {"training.activation_offload_layers=8", "must be fewer than model.layers=8"},
      {"parallel.pp=2", "needs parallel.pp=1"},
      {"training.recompute=selective", "needs training.recompute=none"},
      {"parallel.zero_stage=3", "not modelled with parallel.zero_stage=3"},
      {"parallel.schedule=zb-h1", "not modelled with parallel.schedule=zb-h1"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    sc_config cfg;
    llama8(&cfg);
    cfg.training.activation_offload_layers = 2;
    assert_int_equal(sc_config_set(ctx, &cfg, bad[k].set), 0);
    assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
    if (!strstr(sc_errmsg(ctx), bad[k].msg)) fail_msg("%s: %s", bad[k].set, sc_errmsg(ctx));
  }
  sc_config cfg;
  llama8(&cfg);
  cfg.training.optimizer_offload = 0.5;
  cfg.parallel.zero_stage = 3;
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "optimizer_offload is not modelled"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_terms),
      cmocka_unit_test(test_ops),
      cmocka_unit_test(test_link_speed),
      cmocka_unit_test(test_counter_peak),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
