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

/* The plain event loop (sc_simulate_ex without the critical path: sweeps,
 * calibrate, validate) takes shortcuts the general loop (sc_simulate, which
 * records the critical path) does not: a kernel's next kernel started in
 * the same activity at rate 1 (next_kernel). Both must give the same step,
 * breakdown, ops and events, bit for bit. */
static void assert_plain_equal(sc_config *cfg) {
  sc_result general, plain;
  int rc = sc_config_resolve(ctx, cfg);
  if (rc) fail_msg("resolve: %s", sc_errmsg(ctx));
  if ((rc = sc_simulate(ctx, cfg, NULL, NULL, &general)))
    fail_msg("simulate: %s", sc_errmsg(ctx));
  if ((rc = sc_simulate_ex(ctx, cfg, 0, NULL, NULL, &plain)))
    fail_msg("simulate_ex: %s", sc_errmsg(ctx));
  assert_true(general.critical_path_ops > 0);
  assert_int_equal(plain.critical_path_ops, 0);
  if (memcmp(&general.step_time_s, &plain.step_time_s, sizeof plain.step_time_s))
    fail_msg("general %a s != plain %a s", general.step_time_s, plain.step_time_s);
  assert_memory_equal(general.breakdown_s, plain.breakdown_s, sizeof plain.breakdown_s);
  assert_int_equal(general.ops, plain.ops);
  assert_int_equal(general.events, plain.events);
}

static void test_plain_loop_identical(void **state) {
  (void)state;
  static const sc_interference models[] = {SC_INTERF_NONE, SC_INTERF_CONSTANT,
                                           SC_INTERF_LEARNED};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    for (int fold = 0; fold <= 1; fold++) {
      sc_config cfg;
      small_config(&cfg);
      cfg.simulation.fold = fold;
      cfg.simulation.interference = models[i];
      assert_plain_equal(&cfg);
      small_config(&cfg);
      cfg.simulation.fold = fold;
      cfg.simulation.interference = models[i];
      cfg.parallel.vpp = 2;
      cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
      cfg.parallel.sequence_parallel = 1;
      cfg.parallel.distributed_optimizer = 1;
      cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
      assert_plain_equal(&cfg);
    }
  }
}

/* training.eager: a gated-FFN (Llama-family) model's RMSNorm, rotary
 * embedding and SwiGLU run kernel by kernel, so the step is slower and the
 * extra is compute time (and the bubble of the longer stages); a GELU / LayerNorm model is unchanged, bit for
 * bit (eager PyTorch runs those as single kernels too). */
static void small_llama_run(int eager, sc_recompute rc, sc_result *r) {
  sc_config cfg;
  assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
  cfg.training.recompute = rc;
  cfg.training.eager = eager;
  simulate(&cfg, r);
}

static void test_eager_elementwise(void **state) {
  (void)state;
  sc_result fused, eager;
  small_llama_run(0, SC_RECOMPUTE_NONE, &fused);
  small_llama_run(1, SC_RECOMPUTE_NONE, &eager);
  double extra = eager.step_time_s - fused.step_time_s;
  assert_true(extra > 0.02 * fused.step_time_s);
  assert_true(extra < 0.5 * fused.step_time_s);
  /* compute, and the pipeline bubble the longer stages leave (PP2) */
  double more = eager.breakdown_s[SC_CAT_COMPUTE] - fused.breakdown_s[SC_CAT_COMPUTE] +
                eager.breakdown_s[SC_CAT_BUBBLE] - fused.breakdown_s[SC_CAT_BUBBLE];
  assert_true(more > 0.9 * extra);
  assert_true(eager.ops > fused.ops); /* the rotary embedding's ops */
  /* Full recompute re-runs the layer's forward, eager kernels included. */
  sc_result fused_rc, eager_rc;
  small_llama_run(0, SC_RECOMPUTE_FULL, &fused_rc);
  small_llama_run(1, SC_RECOMPUTE_FULL, &eager_rc);
  assert_true(eager_rc.step_time_s - fused_rc.step_time_s > extra);
  /* GELU: the same step. */
  sc_config cfg;
  sc_result g0, g1;
  small_config(&cfg);
  simulate(&cfg, &g0);
  small_config(&cfg);
  cfg.training.eager = 1;
  simulate(&cfg, &g1);
  assert_memory_equal(&g0.step_time_s, &g1.step_time_s, sizeof g0.step_time_s);
  assert_int_equal(g0.ops, g1.ops);
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

/* DP groups of 32 simulated ranks, above the engine's LOAD_HIST_MIN: their
 * collectives take their rates from load histograms (moved as the members'
 * transfers and compute start and end), the folded run's one-member groups
 * from a scan, and both must agree, with interference and NIC sharing. */
static void test_fold_large_dp_histogram(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  cfg.cluster.num_gpus = 256;
  cfg.training.global_batch = 128;
  cfg.simulation.interference = SC_INTERF_CONSTANT;
  cfg.simulation.share_links = 1;
  assert_fold_equal(&cfg);
  cfg.simulation.interference = SC_INTERF_NONE; /* merged; NIC sharing alone */
  assert_fold_equal(&cfg);
}

/* Uneven stages (first and last stage lighter), the zero-bubble schedules
 * and flexible interleaving: folded == unfolded too. */
static void test_fold_uneven_and_zero_bubble(void **state) {
  (void)state;
  for (int k = 0; k < 6; k++) {
    sc_config cfg;
    small_config(&cfg);
    cfg.model.layers = 22; /* 5 + 6 + 6 + 5 over pp 4: derived split */
    cfg.parallel.distributed_optimizer = 1;
    if (k == 1) cfg.parallel.schedule = SC_SCHED_ZB_H1;
    if (k == 2) cfg.model.layers = 24, cfg.parallel.schedule = SC_SCHED_ZBV;
    if (k == 3) { /* interleaved, 10 micro-batches over pp 4, first/last stages of 4 */
      cfg.model.layers = 32;
      cfg.parallel.vpp = 2;
      cfg.parallel.pp_first_layers = 4;
      cfg.parallel.pp_last_layers = 4;
      cfg.training.global_batch = 80;
    }
    /* DualPipe: uneven stages of both copies on every stage; DualPipe-V */
    if (k == 4) cfg.parallel.schedule = SC_SCHED_DUALPIPE, cfg.training.global_batch = 96;
    if (k == 5) cfg.model.layers = 24, cfg.parallel.schedule = SC_SCHED_DUALPIPEV;
    assert_fold_equal(&cfg);
  }
}

/* Context parallelism, every exchange: folded == unfolded (CP ranks are
 * symmetric). */
static void test_fold_cp(void **state) {
  (void)state;
  for (int c = SC_CP_P2P; c <= SC_CP_A2A_P2P; c++) {
    sc_config cfg;
    small_config(&cfg);
    cfg.model.seq_len = 4096;
    cfg.model.heads = 32;
    cfg.parallel.cp = 4;
    cfg.parallel.cp_comm = (sc_cp_comm)c;
    cfg.parallel.distributed_optimizer = 1;
    cfg.simulation.interference = c == SC_CP_P2P ? SC_INTERF_CONSTANT : SC_INTERF_NONE;
    assert_fold_equal(&cfg);
  }
}

/* FSDP / ZeRO-3, full and hybrid sharding, with CP: folded == unfolded. */
static void test_fold_fsdp(void **state) {
  (void)state;
  for (int k = 0; k < 3; k++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
    cfg.parallel.zero_stage = 3;
    if (k == 1) cfg.parallel.fsdp_shard = 2;
    if (k == 2) cfg.parallel.cp = 2, cfg.parallel.fsdp_reshard_after_forward = 0;
    assert_fold_equal(&cfg);
  }
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
    sc_test_example(&cfg);
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

/* A uniform pipeline as above for any schedule: returns the mean idle time
 * of a rank (bubble + exposed p2p) and the compute time of one micro-batch's
 * forward, backward (input grads when split) and weight-grad passes through
 * one stage, measured on stage 0's program. */
typedef struct uniform_run {
  double idle, tf, tb, tw, step;
} uniform_run;

static uniform_run run_uniform(int64_t p, int64_t m, sc_schedule sched, int64_t vpp) {
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_model_preset(ctx, &cfg, "gpt3-1.3b"), 0);
  cfg.model.layers = p * 2 * (vpp > 1 ? vpp : 1);
  cfg.training.global_batch = m;
  cfg.training.micro_batch = 1;
  cfg.training.recompute = SC_RECOMPUTE_NONE;
  cfg.parallel.tp = 1;
  cfg.parallel.pp = p;
  cfg.parallel.vpp = vpp;
  cfg.parallel.schedule = sched;
  cfg.parallel.dp = 0;
  cfg.cluster.num_gpus = p;
  cfg.cluster.nodes = 0;
  cfg.cluster.nic_gbps = 1e5;
  cfg.cluster.nvlink_gbps = 1e5;
  cfg.costs.p2p_latency_us = 0.01;
  sc_test_pin_costs(&cfg);
  if (sc_config_resolve(ctx, &cfg)) fail_msg("%s", sc_errmsg(ctx));
  sc_cost cost;
  sc_workload wl;
  sc_shape sh;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  if (sc_test_build(ctx, &cfg, &cost, 0, &sh, &wl)) fail_msg("%s", sc_errmsg(ctx));
  uniform_run u = {0, 0, 0, 0, 0};
  for (int64_t s = 0; s < wl.nprogs; s++)
    for (size_t k = 0; k < wl.progs[s].nops[SC_ST_COMPUTE]; k++) {
      sc_op *op = &wl.progs[s].ops[SC_ST_COMPUTE][k];
      if (op->layer == SC_NO_LAYER) op->work = 0; /* embedding, head, optimizer */
      if (s != 0) continue;
      double ns = (double)sc__duration_ns(op->work) / (double)m;
      if (op->phase == SC_PH_FWD) u.tf += ns;
      else if (op->phase == SC_PH_WGRAD) u.tw += ns;
      else u.tb += ns;
    }
  sc_engine_result r;
  if (sc_test_engine(ctx, &cfg, &wl, &cost, NULL, NULL, &r))
    fail_msg("%s p=%lld m=%lld: %s", sc_enum_name(SC_ENUM_SCHEDULE, sched), (long long)p,
             (long long)m, sc_errmsg(ctx));
  sc__workload_free(ctx, &wl);
  u.step = sc_test_step_s(&r) * 1e9;
  u.idle = (r.breakdown_s[SC_CAT_BUBBLE] + r.breakdown_s[SC_CAT_PP]) * 1e9;
  return u;
}

/* Each schedule's bubble against its formula on the uniform model (pass
 * times per micro-batch and stage: F forward, B input grads, W weight grads,
 * B + W without a split; Qi et al. 2024, Table 1 for ZB-H1):
 *   GPipe and 1F1B  (p-1) (F + B + W)
 *   interleaved     (p-1) (F + B + W) / v   (m a multiple of p)
 *   ZB-H1           (p-1) (F + B - W)
 *   ZB-V            between the last stage's unavoidable start-up idle, p-1
 *                   chunk forwards (F / 2: two chunks per stage), and 1.35
 *                   times it (its list schedule, model/schedule.c). */
static void test_schedule_bubbles(void **state) {
  (void)state;
  static const int64_t cases[][2] = {{4, 16}, {8, 32}, {4, 8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t p = cases[i][0], m = cases[i][1];
    uniform_run g = run_uniform(p, m, SC_SCHED_GPIPE, 1);
    uniform_run f = run_uniform(p, m, SC_SCHED_1F1B, 1);
    uniform_run v = run_uniform(p, m, SC_SCHED_INTERLEAVED, 2);
    uniform_run h = run_uniform(p, m, SC_SCHED_ZB_H1, 1);
    uniform_run z = run_uniform(p, m, SC_SCHED_ZBV, 2);
    double pm1 = (double)(p - 1);
    if (getenv("SC_TEST_VERBOSE"))
      for (int k = 0; k < 5; k++) {
        const uniform_run *u = k == 0 ? &g : k == 1 ? &f : k == 2 ? &v : k == 3 ? &h : &z;
        print_message("p=%lld m=%lld sched %d: idle %.0f step %.0f F %.0f B %.0f W %.0f\n",
                      (long long)p, (long long)m, k, u->idle, u->step, u->tf, u->tb, u->tw);
      }
    struct {
      const char *name;
      double got, want, tol;
    } chk[] = {
        {"gpipe", g.idle, pm1 * (g.tf + g.tb + g.tw), 0.01},
        {"1f1b", f.idle, pm1 * (f.tf + f.tb + f.tw), 0.01},
        {"interleaved", v.idle, pm1 * (v.tf + v.tb + v.tw) / 2.0, 0.03},
        {"zb-h1", h.idle, pm1 * (h.tf + h.tb - h.tw), 0.02},
    };
    for (size_t k = 0; k < sizeof chk / sizeof chk[0]; k++)
      if (fabs(chk[k].got - chk[k].want) > chk[k].tol * chk[k].want)
        fail_msg("p=%lld m=%lld %s: idle %.0f ns, formula %.0f ns", (long long)p, (long long)m,
                 chk[k].name, chk[k].got, chk[k].want);
    /* the same work in every schedule */
    double work = f.tf + f.tb + f.tw;
    assert_true(fabs((h.tf + h.tb + h.tw) - work) < 0.001 * work);
    double zbv_floor = pm1 * z.tf / 2.0;
    if (!(z.idle >= 0.99 * zbv_floor && z.idle <= 1.35 * zbv_floor && z.idle < h.idle &&
          h.idle < f.idle))
      fail_msg("p=%lld m=%lld: zbv idle %.0f ns (floor %.0f), zb-h1 %.0f, 1f1b %.0f",
               (long long)p, (long long)m, z.idle, zbv_floor, h.idle, f.idle);
  }
}

/* DualPipe and DualPipe-V on the uniform model against the DualPipe
 * README's bubble, (S/2 - 1) (F&B + B - 3W) for S pipeline stages (pp for
 * DualPipe, 2 pp for DualPipe-V: pp - 1), F, B (a whole backward), W the
 * times of one chunk and F&B an overlapped pair's; without EP traffic a
 * pair runs its passes one after the other, F&B = F + B. Per chunk: a
 * stage's forward per micro-batch is one chunk (DualPipe) or two
 * (DualPipe-V). The formula is an upper bound here (a unit-time replay of
 * the step table meets it only once W is about twice F; shorter weight
 * grads leave the cool-down less to fill than the formula's - 3W assumes);
 * the floor is the start-up of the middle stages, S/2 - 1 chunk forwards
 * before their first micro-batch arrives. Both schedules leave a smaller
 * share of the step idle than 1F1B and ZB-H1 on the same pipeline. */
static void test_dualpipe_bubbles(void **state) {
  (void)state;
  static const int64_t cases[][2] = {{4, 16}, {8, 32}, {4, 8}, {8, 16}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t p = cases[i][0], m = cases[i][1];
    uniform_run f = run_uniform(p, m, SC_SCHED_1F1B, 1);
    uniform_run h = run_uniform(p, m, SC_SCHED_ZB_H1, 1);
    uniform_run d = run_uniform(p, m, SC_SCHED_DUALPIPE, 1);
    uniform_run v = run_uniform(p, m, SC_SCHED_DUALPIPEV, 2);
    /* the same work per micro-batch and stage as 1F1B (DualPipe: per stage
     * of one copy; its stage holds two, m / 2 micro-batches each; run_uniform
     * gives DualPipe-V's two chunks the layers of one 1F1B stage each) */
    double work = f.tf + f.tb + f.tw;
    if (fabs((d.tf + d.tb + d.tw) - work) > 0.001 * work ||
        fabs((v.tf + v.tb + v.tw) - 2.0 * work) > 0.002 * work)
      fail_msg("p=%lld m=%lld: work per micro-batch 1f1b %.0f, dualpipe %.0f, dualpipev %.0f",
               (long long)p, (long long)m, work, d.tf + d.tb + d.tw, v.tf + v.tb + v.tw);
    for (int k = 0; k < 2; k++) {
      const uniform_run *u = k ? &v : &d;
      double chunks = k ? 2.0 : 1.0;
      double F = u->tf / chunks, Bw = (u->tb + u->tw) / chunks, W = u->tw / chunks;
      double stages = k ? 2.0 * (double)p : (double)p;
      double want = (stages / 2.0 - 1.0) * ((F + Bw) + Bw - 3.0 * W);
      if (getenv("SC_TEST_VERBOSE"))
        print_message("p=%lld m=%lld %s: idle %.0f floor %.0f formula %.0f step %.0f (1f1b "
                      "idle %.0f, zb-h1 %.0f)\n",
                      (long long)p, (long long)m, k ? "dualpipev" : "dualpipe", u->idle,
                      (stages / 2.0 - 1.0) * F, want, u->step, f.idle, h.idle);
      double floor = (stages / 2.0 - 1.0) * F;
      if (!(u->idle >= 0.99 * floor && u->idle <= 1.02 * want &&
            u->idle / u->step < h.idle / h.step && h.idle / h.step < f.idle / f.step))
        fail_msg("p=%lld m=%lld %s: idle %.0f ns, floor %.0f, formula %.0f ns, zb-h1 %.0f, "
                 "1f1b %.0f",
                 (long long)p, (long long)m, k ? "dualpipev" : "dualpipe", u->idle, floor, want,
                 h.idle, f.idle);
    }
  }
}

/* Megatron's flexible interleaving: a micro-batch count pp does not divide
 * runs (a last partial group), between its neighbours in step time. */
static void test_interleaved_any_microbatches(void **state) {
  (void)state;
  uniform_run a = run_uniform(4, 16, SC_SCHED_INTERLEAVED, 2);
  uniform_run b = run_uniform(4, 18, SC_SCHED_INTERLEAVED, 2);
  uniform_run c = run_uniform(4, 20, SC_SCHED_INTERLEAVED, 2);
  assert_true(a.step < b.step && b.step < c.step);
  /* Counts whose Megatron table (a last group of m mod pp) is not
   * executable with its warm-up (stage 0 would wait for stage 7 forwards
   * that wait for its own first backward): the padded table runs them, and
   * the step grows with every micro-batch. */
  static const int64_t pv[][2] = {{8, 3}, {4, 3}, {5, 2}, {8, 2}};
  for (size_t i = 0; i < sizeof pv / sizeof pv[0]; i++) {
    double prev = 0;
    for (int64_t m = 1; m <= 3 * pv[i][0] + 1; m++) {
      uniform_run u = run_uniform(pv[i][0], m, SC_SCHED_INTERLEAVED, pv[i][1]);
      if (!(u.step > prev))
        fail_msg("pp %lld vpp %lld: m %lld step %.6f s, m - 1 %.6f s", (long long)pv[i][0],
                 (long long)pv[i][1], (long long)m, u.step, prev);
      prev = u.step;
    }
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
  sc_test_example(&t->cfg);
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
  sc_placement pl = {2, 1, 2, 1};
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
  sc_test_example(&cfg);
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

/* The memory counter's peak per stage is the reported peak, also for a
 * split backward under full recomputation (ZB-H1, ZB-V), whose peak can
 * fall after an input-grad pass, and for ZB-V's list-scheduled order with
 * and without recomputation (docs/MEMORY.md). */
/* DualPipe: every stage holds two stages' parameters (stage s of the model
 * and pp - 1 - s of its mirrored copy) and sums the copies' gradients with
 * its mirror stage in one all-reduce of all its grads; 1F1B has neither. */
static void test_dualpipe_mirror_grads(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    sc_config cfg;
    small_config(&cfg);
    cfg.parallel.distributed_optimizer = 0;
    cfg.parallel.schedule = k ? SC_SCHED_DUALPIPE : SC_SCHED_1F1B;
    if (sc_config_resolve(ctx, &cfg)) fail_msg("%s", sc_errmsg(ctx));
    sc_cost cost;
    sc_workload wl;
    sc_shape sh;
    assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
    if (sc_test_build(ctx, &cfg, &cost, 0, &sh, &wl)) fail_msg("%s", sc_errmsg(ctx));
    for (int64_t s = 0; s < wl.nprogs; s++) {
      double mirror = 0;
      int n = 0;
      for (size_t i = 0; i < wl.progs[s].nops[SC_ST_DP]; i++) {
        const sc_op *op = &wl.progs[s].ops[SC_ST_DP][i];
        if (op->kind == SC_OP_COLL && op->group == SC_GRP_MIRROR) mirror += op->work, n++;
      }
      double want = sc__shape_stage_params(&sh, s) * sh.grad_bytes;
      assert_int_equal(n, k);
      if (k && fabs(mirror - want) > 1e-6 * want)
        fail_msg("stage %lld: mirror all-reduce of %.0f bytes, want %.0f", (long long)s, mirror,
                 want);
      /* both chunks' layers: twice a 1F1B stage's */
      double layers = 0;
      for (int64_t c = 0; c < sc__shape_chunks(&sh); c++)
        layers += (double)sc__shape_vs_layers(&sh, sc__shape_vstage(&sh, s, c));
      assert_true(layers == (double)(k + 1) * (double)cfg.model.layers / (double)cfg.parallel.pp);
    }
    sc__workload_free(ctx, &wl);
  }
}

static void test_counter_peak_is_estimate(void **state) {
  (void)state;
  /* keep: parallel.pp_keep_outputs (the last stage's outputs held to the
   * step's end, so its peak moves to the last forward) */
  static const struct {
    sc_schedule sched;
    sc_recompute recompute;
    int keep;
  } cases[] = {{SC_SCHED_1F1B, SC_RECOMPUTE_FULL, 0},
               {SC_SCHED_ZB_H1, SC_RECOMPUTE_FULL, 0},
               {SC_SCHED_ZBV, SC_RECOMPUTE_FULL, 0},
               {SC_SCHED_ZBV, SC_RECOMPUTE_NONE, 0},
               {SC_SCHED_DUALPIPE, SC_RECOMPUTE_NONE, 0},
               {SC_SCHED_DUALPIPE, SC_RECOMPUTE_FULL, 0},
               {SC_SCHED_DUALPIPEV, SC_RECOMPUTE_SELECTIVE, 0},
               {SC_SCHED_1F1B, SC_RECOMPUTE_FULL, 1},
               {SC_SCHED_INTERLEAVED, SC_RECOMPUTE_NONE, 1},
               {SC_SCHED_ZB_H1, SC_RECOMPUTE_FULL, 1},
               {SC_SCHED_ZBV, SC_RECOMPUTE_NONE, 1}};
  for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    sc_config cfg;
    small_config(&cfg);
    cfg.training.recompute = cases[k].recompute;
    cfg.parallel.schedule = cases[k].sched;
    cfg.parallel.pp_keep_outputs = cases[k].keep;
    if (cases[k].sched == SC_SCHED_INTERLEAVED) cfg.parallel.vpp = 2;
    if (cases[k].sched == SC_SCHED_DUALPIPE) cfg.training.global_batch = 96; /* 12 */
    assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
    double peak = 0, want = 0;
    int st = sc_test_counter_peak_mismatch(ctx, &cfg, &peak, &want);
    if (st != -1)
      fail_msg("case %d stage %d: counter peak %.4f GiB, estimate %.4f GiB", k, st, peak, want);
  }
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

/* Network tiers (docs/COMM.md): on the small GPT (64 GPUs, TP2 PP4, DP8;
 * a stage is two 8-GPU nodes) with one node per leaf, pipeline sends and the
 * DP all-reduce cross the spine. Non-blocking, the result is bit for bit
 * the flat fabric's; 2:1 slows the step; folded equals unfolded. */
static void test_network_tiers(void **state) {
  (void)state;
  sc_config cfg;
  sc_result flat, leaves, over;
  small_config(&cfg);
  simulate(&cfg, &flat);
  small_config(&cfg);
  cfg.cluster.leaf_gpus = 8;
  simulate(&cfg, &leaves);
  assert_true(leaves.step_time_s == flat.step_time_s);
  small_config(&cfg);
  cfg.cluster.leaf_gpus = 8;
  cfg.cluster.spine_oversubscription = 2;
  simulate(&cfg, &over);
  assert_true(over.step_time_s > flat.step_time_s);
  small_config(&cfg);
  cfg.cluster.leaf_gpus = 8;
  cfg.cluster.spine_oversubscription = 2;
  assert_fold_equal(&cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_network_tiers),
      cmocka_unit_test(test_fold_1f1b),
      cmocka_unit_test(test_plain_loop_identical),
      cmocka_unit_test(test_eager_elementwise),
      cmocka_unit_test(test_fold_interleaved_sp_distopt),
      cmocka_unit_test(test_fold_gpipe_interference),
      cmocka_unit_test(test_fold_large_dp_histogram),
      cmocka_unit_test(test_fold_llama_gqa_swiglu),
      cmocka_unit_test(test_fold_uneven_and_zero_bubble),
      cmocka_unit_test(test_fold_cp),
      cmocka_unit_test(test_fold_fsdp),
      cmocka_unit_test(test_1f1b_bubble),
      cmocka_unit_test(test_interleaved_smaller_bubble),
      cmocka_unit_test(test_schedule_bubbles),
      cmocka_unit_test(test_dualpipe_bubbles),
      cmocka_unit_test(test_interleaved_any_microbatches),
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
      cmocka_unit_test(test_counter_peak_is_estimate),
      cmocka_unit_test(test_dualpipe_mirror_grads),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
