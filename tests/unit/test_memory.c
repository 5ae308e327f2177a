/* test_memory.c: the memory model against Korthikanti et al. 2022 (Table 2
 * formulas on the paper's 22B/175B/530B/1T configs, first-stage totals,
 * the ~5x saving), hand calculations of model states, stage dependence of
 * the schedules (cross-checked with the workload's own schedule), ZeRO
 * stages, the OOM verdict, Megatron-LM's theoretical estimate, the API. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost/cost_int.h"
#include "sctest.h"
#include "model/memory_int.h"
#include "sctest_pipe.h"

static sc_ctx *ctx;

/* The shape behind the model or estimate the test looks at next (each call
 * re-derives it: the tests use one memory model at a time). */
static sc_shape test_shape;
static const sc_shape *shape_of(const sc_config *cfg) {
  if (sc__shape_init(ctx, cfg, &test_shape)) fail_msg("shape: %s", sc_errmsg(ctx));
  return &test_shape;
}

static int setup(void **state) {
  (void)state;
  return sc_test_ctx_new(&ctx);
}

static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

#define GIB 1073741824.0

static void assert_close(double got, double want, double rel, const char *what) {
  if (fabs(got - want) > rel * fabs(want))
    fail_msg("%s: got %.6g, want %.6g (rel tol %g)", what, got, want, rel);
}

static void resolve(sc_config *cfg) {
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
}

/* The four models of Korthikanti et al. 2022, Table 3 (the configs of
 * validation/cases/korthikanti2022.csv): layers, hidden,
 * heads, tp, pp, micro-batch, global batch, GPUs, interleaving. */
typedef struct kcase {
  const char *name;
  int64_t L, h, a, t, p, b, B, gpus, v;
} kcase;

static const kcase kcases[] = {
    {"22b", 48, 6144, 64, 8, 1, 4, 4, 8, 1},
    {"175b", 96, 12288, 96, 8, 8, 1, 64, 64, 3},
    {"530b", 105, 20480, 128, 8, 35, 1, 280, 280, 3},
    {"1t", 128, 25600, 160, 8, 64, 1, 512, 512, 1},
};

static void kconfig(const kcase *k, sc_config *cfg, int sp, sc_recompute rc) {
  sc_test_example(cfg);
  cfg->model.layers = k->L;
  cfg->model.hidden = k->h;
  cfg->model.heads = k->a;
  cfg->model.kv_heads = 0;
  cfg->model.ffn_hidden = 0;
  cfg->model.vocab = 51200;
  cfg->model.seq_len = 2048;
  cfg->training.global_batch = k->B;
  cfg->training.micro_batch = k->b;
  cfg->training.precision = SC_PREC_FP16;
  cfg->training.recompute = rc;
  cfg->parallel.tp = k->t;
  cfg->parallel.pp = k->p;
  cfg->parallel.dp = 0;
  cfg->parallel.vpp = k->v;
  cfg->parallel.sequence_parallel = sp;
  cfg->cluster.num_gpus = k->gpus;
  cfg->cluster.nodes = 0;
  resolve(cfg);
}

/* Table 2, "activations memory per transformer layer", every row. */
static void test_korthikanti_table2(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
    const kcase *k = &kcases[i];
    sc_config cfg;
    kconfig(k, &cfg, 0, SC_RECOMPUTE_NONE);
    double s = 2048, b = (double)k->b, h = (double)k->h, a = (double)k->a, t = (double)k->t;
    double sbh = s * b * h, quad = 5.0 * a * s / (h * t);
    /* tensor parallel (baseline): sbh (10 + 24/t + 5as/(ht)) */
    assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_NONE, 0), sbh * (10 + 24 / t + quad),
                 1e-12, k->name);
    /* tensor parallel + selective recompute: sbh (10 + 24/t) */
    assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_SELECTIVE, 0), sbh * (10 + 24 / t),
                 1e-12, k->name);
    /* full recompute: 2 sbh */
    assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_FULL, 0), 2 * sbh, 1e-12, k->name);
    kconfig(k, &cfg, 1, SC_RECOMPUTE_NONE);
    /* tensor + sequence parallel: sbh (34/t + 5as/(ht)) */
    assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_NONE, 0), sbh * (34 / t + quad), 1e-12,
                 k->name);
    /* tensor + sequence parallel + selective: sbh 34/t */
    assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_SELECTIVE, 0), sbh * 34 / t, 1e-12,
                 k->name);
    /* FlashAttention stores no s x s term, only the fp32 log-sum-exp. */
    assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_NONE, 1),
                 sbh * 34 / t + 4 * a * s * b / t, 1e-12, k->name);
    /* The paper's headline: SP + selective needs ~5x less than the
     * baseline (Section 6.1: "together they reduce the memory required by
     * ~5x"); 5.4x to 6.2x per layer here, falling with size. */
    kconfig(k, &cfg, 0, SC_RECOMPUTE_NONE);
    double base = sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_NONE, 0);
    kconfig(k, &cfg, 1, SC_RECOMPUTE_SELECTIVE);
    double ratio = base / sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_SELECTIVE, 0);
    if (ratio < 4.8 || ratio > 6.3) fail_msg("%s: saving %.2fx, not ~5x", k->name, ratio);
  }
  /* No parallelism (t = 1): sbh (34 + 5as/h). */
  sc_config cfg;
  kconfig(&kcases[0], &cfg, 0, SC_RECOMPUTE_NONE);
  cfg.parallel.tp = 1;
  cfg.parallel.dp = 0;
  cfg.cluster.num_gpus = 1;
  cfg.cluster.nodes = 0;
  cfg.cluster.gpus_per_node = 0;
  resolve(&cfg);
  double sbh = 2048.0 * 4 * 6144;
  assert_close(sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_NONE, 0),
               sbh * (34 + 5.0 * 64 * 2048 / 6144), 1e-12, "t=1");
}

/* Section 4.2.3: with 1F1B the first stage holds p micro-batches of L/p
 * layers, i.e. L layers' activations, whatever p; interleaving multiplies
 * that by 1 + (p-1)/(p v). Plus the embedding's per-micro-batch part. */
static void test_first_stage_totals(void **state) {
  (void)state;
  for (size_t i = 1; i < sizeof kcases / sizeof kcases[0]; i++) {
    const kcase *k = &kcases[i];
    sc_config cfg;
    kconfig(k, &cfg, 1, SC_RECOMPUTE_SELECTIVE);
    sc_memory_opts o = {0, 0};
    sc_memory_model mm;
    assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
    sc_memory_stage st;
    sc__memory_stage(&mm, 0, &st);
    double p = (double)k->p, v = (double)k->v, L = (double)k->L;
    double layer = 2048.0 * (double)k->b * (double)k->h * 34.0 / 8.0;
    double items = k->v > 1 ? (p - 1) * 2 + (v - 1) * p + 1 : p;
    double want_layers = L * layer * (k->v > 1 ? 1.0 + (p - 1) / (p * v) : 1.0);
    assert_close(st.inflight, items, 0, k->name);
    assert_close(st.activations_bytes - st.embed_head_bytes, want_layers, 1e-12, k->name);
    /* Embedding held for the chunk-0 passes among them. */
    assert_true(st.embed_head_bytes > 0);
    assert_true(st.embed_head_bytes <= items * mm.act_embed * (1 + 1e-12));
  }
}

static void small_config(sc_config *cfg) { assert_int_equal(sc_test_small_gpt(ctx, cfg), 0); }

/* 1F1B: stage i holds min(p - i, m); GPipe: m everywhere; and the memory
 * falls from the first stage to the last but one. */
static void test_stage_dependence(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  resolve(&cfg); /* dp 8, m = 8 */
  sc_memory_opts o;
  sc__memory_opts_of(&cfg, &o);
  sc_memory_model mm;
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  double prev = INFINITY;
  for (int64_t s = 0; s < 4; s++) {
    sc_memory_stage st;
    sc__memory_stage(&mm, s, &st);
    assert_close(st.inflight, (double)(4 - s), 0, "1f1b inflight");
    if (s < 3) assert_true(st.total_bytes < prev);
    prev = st.total_bytes;
  }
  cfg.training.global_batch = 16; /* m = 2 < p: stages 0..2 hold 2 */
  cfg.parallel.dp = 0;
  resolve(&cfg);
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  sc_memory_stage st;
  sc__memory_stage(&mm, 0, &st);
  assert_close(st.inflight, 2, 0, "m < p");
  sc__memory_stage(&mm, 3, &st);
  assert_close(st.inflight, 1, 0, "last stage");
  cfg.parallel.schedule = SC_SCHED_GPIPE;
  cfg.training.global_batch = 64;
  cfg.parallel.dp = 0;
  resolve(&cfg);
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  for (int64_t s = 0; s < 4; s++) {
    sc__memory_stage(&mm, s, &st);
    assert_close(st.inflight, 8, 0, "gpipe");
  }
}

/* The interleaved walk agrees with the schedule the workload builds: the
 * largest number of (micro-batch, chunk) forward passes whose backward has
 * not finished, per stage, read off the built programs. */
static void test_interleaved_matches_workload(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  cfg.parallel.vpp = 3;
  cfg.model.layers = 24;
  cfg.training.global_batch = 96; /* dp 8 -> m = 12, a multiple of pp */
  resolve(&cfg);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  sc_workload wl;
  sc_shape wl_shape;
  assert_int_equal(sc_test_build(ctx, &cfg, &cost, 0, &wl_shape, &wl), 0);
  sc_memory_opts o;
  sc__memory_opts_of(&cfg, &o);
  sc_memory_model mm;
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  int64_t lpc = 24 / (4 * 3);
  double max_params = 0;
  for (int64_t s = 0; s < 4; s++) {
    const sc_program *p = &wl.progs[s];
    int held = 0, peak = 0;
    for (size_t i = 0; i < p->nops[SC_ST_COMPUTE]; i++) {
      const sc_op *op = &p->ops[SC_ST_COMPUTE][i];
      if (op->label != SC_L_QKV || op->layer % lpc) continue; /* first layer of a chunk */
      if (op->phase == SC_PH_FWD) held++;
      else if (op->phase == SC_PH_BWD) held--;
      if (held > peak) peak = held;
    }
    sc_memory_stage st;
    sc__memory_stage(&mm, s, &st);
    if (st.inflight != peak)
      fail_msg("stage %lld: memory model holds %.0f passes, workload %d", (long long)s,
               st.inflight, peak);
    if (st.params > max_params) max_params = st.params;
  }
  /* Same parameter count as the workload (tied embeddings, v chunks). */
  assert_close(max_params, wl.params_per_stage_max, 1e-12, "params");
  sc__workload_free(ctx, &wl);
}

/* Model states by hand: GPT-3 175B, TP8 PP16 DP8 (the built-in example). */
static void test_model_states_by_hand(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  resolve(&cfg);
  sc_memory_opts o;
  sc__memory_opts_of(&cfg, &o);
  sc_memory_model mm;
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  double h = 12288, f = 4 * h, t = 8;
  /* Per TP rank: QKV 3h^2, proj h^2, FC1 hf, FC2 fh split; biases of QKV
   * and FC1 split; 2 norms (4h), proj and FC2 biases replicated. */
  double layer = (3 * h * h + h * h + 2 * h * f) / t + (3 * h + f) / t + 6 * h;
  double embed = 51200.0 * h / t; /* 51200 is a multiple of 128 * 8 */
  sc_memory_stage mid, first, last;
  sc__memory_stage(&mm, 5, &mid);
  sc__memory_stage(&mm, 0, &first);
  sc__memory_stage(&mm, 15, &last);
  assert_close(mid.params, 6 * layer, 1e-12, "middle stage");
  assert_close(first.params, 6 * layer + embed, 1e-12, "first stage");
  assert_close(last.params, 6 * layer + embed + 2 * h, 1e-12, "last stage (tied copy)");
  /* fp16: 2 B weights, 2 B grads, 12 B fp32 master + Adam m, v. */
  assert_close(mid.weights_bytes, 2 * mid.params, 1e-12, "weights");
  assert_close(mid.grads_bytes, 2 * mid.params, 1e-12, "grads fp16");
  assert_close(mid.optimizer_bytes, 12 * mid.params, 1e-12, "adam");
  /* Full recompute: 2 sbh per layer (no SP), 16 micro-batches of 6 layers
   * on the first stage, plus 16 embedding passes (8 sb + sbh). */
  double sbh = 2048.0 * h;
  assert_close(first.activations_bytes, 16 * 6 * 2 * sbh + 16 * (8 * 2048.0 + sbh), 1e-12,
               "activations");
  /* The recompute working set is one layer's activations without recompute. */
  assert_close(first.transient_bytes,
               sc__memory_layer_act(shape_of(&cfg), SC_RECOMPUTE_NONE, 1) - 2 * sbh, 1e-12, "transient");

  /* Unfused attention (training.attention) stores the s x s part. */
  cfg.training.attention = SC_ATTN_UNFUSED;
  sc__memory_opts_of(&cfg, &o);
  assert_int_equal(o.flash_attention, 0);
  cfg.training.attention = SC_ATTN_FLASH;
  sc__memory_opts_of(&cfg, &o);
  assert_int_equal(o.flash_attention, 1);

  /* bf16: fp32 main grads; distributed optimizer: Adam states / dp. */
  cfg.training.precision = SC_PREC_BF16;
  cfg.parallel.distributed_optimizer = 1;
  sc__memory_opts_of(&cfg, &o);
  assert_int_equal(o.zero_stage, 1);
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  sc__memory_stage(&mm, 5, &mid);
  assert_close(mid.grads_bytes, 4 * mid.params, 1e-12, "grads bf16");
  assert_close(mid.optimizer_bytes, 12.0 / 8 * mid.params, 1e-12, "zero-1");
  /* ZeRO-2 shards grads, ZeRO-3 weights too. */
  o.zero_stage = 2;
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  sc__memory_stage(&mm, 5, &mid);
  assert_close(mid.grads_bytes, 4.0 / 8 * mid.params, 1e-12, "zero-2");
  assert_close(mid.weights_bytes, 2 * mid.params, 1e-12, "zero-2 weights");
  o.zero_stage = 3;
  assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
  sc_memory_stage z3;
  sc__memory_stage(&mm, 5, &z3);
  assert_close(z3.weights_bytes, 2.0 / 8 * z3.params, 1e-12, "zero-3");
  assert_true(z3.transient_bytes > mid.transient_bytes); /* gathered layers */
}

/* OOM verdict against the GPU's HBM: the SC21 layout fits an A100-80GB;
 * GPT-3 175B without model parallelism does not; a 40 GB A100 tips the
 * verdict of a layout that needs ~60 GiB. */
static void test_oom_verdict(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  resolve(&cfg);
  sc_memory_report r;
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
  assert_int_equal(r.nstages, 16);
  assert_int_equal(r.peak_stage, 0);
  assert_false(r.oom);
  assert_close(r.capacity_gib, sc_hw_find("a100-80gb")->hbm_gib, 0, "capacity");
  assert_true(r.peak_gib > 20 && r.peak_gib < 40);
  sc_memory_report_free(ctx, &r);
  assert_null(r.stages);

  cfg.parallel.tp = 1;
  cfg.parallel.pp = 1;
  cfg.parallel.dp = 0;
  cfg.training.global_batch = 1024;
  resolve(&cfg);
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
  assert_true(r.oom);
  assert_true(r.stages[0].oom);
  assert_true(r.peak_gib > 1000); /* 16 B x 175e9 params alone */
  sc_memory_report_free(ctx, &r);

  sc_test_example(&cfg);
  cfg.training.recompute = SC_RECOMPUTE_NONE;
  resolve(&cfg);
  double need;
  assert_int_equal(sc__memory_peak_gib(ctx, shape_of(&cfg), &need), 0);
  if (need < 40 || need > 80) fail_msg("needs %.1f GiB", need);
  snprintf(cfg.cluster.gpu, sizeof cfg.cluster.gpu, "a100-40gb");
  cfg.cluster.nodes = 0;
  if (sc_hw_find("a100-40gb")) {
    resolve(&cfg);
    assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
    assert_true(r.oom);
    sc_memory_report_free(ctx, &r);
  }
}

/* Megatron-LM's theoretical_memory_usage.py (re-derived here, first stage,
 * sequence parallel + selective recompute): weights+optimizer 18 B/param
 * (6 + 12/dp with the distributed optimizer) on the most loaded shard, and
 * activations sbh (18 + 4f/h) L + 8 sbp + sbhp, times the interleaving
 * penalty, over t. Our model stays within a few percent on the paper's
 * configs (bf16, where both count fp32 grads); docs/MEMORY.md lists them. */
static void test_megatron_formula(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
    const kcase *k = &kcases[i];
    sc_config cfg;
    kconfig(k, &cfg, 1, SC_RECOMPUTE_SELECTIVE);
    cfg.training.precision = SC_PREC_BF16;
    resolve(&cfg);
    double s = 2048, b = (double)k->b, h = (double)k->h, L = (double)k->L;
    double p = (double)k->p, t = (double)k->t, v = (double)k->v;
    double V = cfg.model.vocab; /* 51200: already padded for t = 8 */
    double layer_params = 2 * h * (4 * h + 2) + 2 * h * h * 2; /* MLP + norms + attention */
    double block = layer_params * L + 2 * h;
    double shard = (block / p + h * V) / t;
    double mega_states = shard * 18;
    double act = s * b * h * (18 + 4 * 4) * L + 8 * s * b * p + s * b * h * p;
    if (k->v > 1) act *= 1 + (p - 1) / (p * v);
    if (k->p == 1) act += s * b * h * 4 * (1 + V / h);
    act /= t;

    sc_memory_opts o = {0, 0};
    sc_memory_model mm;
    assert_int_equal(sc__memory_model_init(ctx, &mm, shape_of(&cfg), &o), 0);
    sc_memory_stage st;
    sc__memory_stage(&mm, 0, &st);
    double ours_states = st.weights_bytes + st.grads_bytes + st.optimizer_bytes;
    double ours_act = st.activations_bytes;
    if (k->p == 1) {
      /* One stage: Megatron adds the LM head's inputs and fp32 logits. */
      assert_true(st.embed_head_bytes > s * b * V * 4 / t);
    }
    assert_close(ours_states, mega_states, 0.01, k->name);
    assert_close(ours_act, act, 0.02, k->name);
  }
}

static int sink_count(void *ud, const char *buf, size_t len) {
  (void)buf;
  *(size_t *)ud += len;
  return 0;
}

static void test_api(void **state) {
  (void)state;
  sc_config cfg;
  small_config(&cfg);
  resolve(&cfg);
  sc_memory_report r;
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
  double sum = 0;
  for (int64_t s = 0; s < r.nstages; s++) {
    const sc_memory_stage *st = &r.stages[s];
    double parts = st->weights_bytes + st->grads_bytes + st->optimizer_bytes +
                   st->activations_bytes + st->transient_bytes + st->comm_buffer_bytes +
                   st->framework_bytes;
    assert_close(st->total_bytes, parts, 1e-12, "parts add up");
    sum += st->total_bytes;
  }
  assert_true(sum > 0);
  double peak_gib;
  assert_int_equal(sc__memory_peak_gib(ctx, shape_of(&cfg), &peak_gib), 0);
  assert_close(r.peak_gib, peak_gib, 1e-12, "peak");
  for (int fmt = SC_FORMAT_TEXT; fmt <= SC_FORMAT_CSV; fmt++) {
    size_t n = 0;
    assert_int_equal(sc_memory_format(&cfg, &r, (sc_format)fmt, sink_count, &n), 0);
    assert_true(n > 100);
  }
  sc_memory_report_free(ctx, &r);
  sc_memory_report_free(ctx, &r); /* idempotent */

  /* Unresolved (dp = 0): refused with a message, nothing allocated. */
  small_config(&cfg);
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), SC_EINVAL);
  assert_null(r.stages);
  assert_true(strlen(sc_errmsg(ctx)) > 0);
}

/* parallel.zero_stage: 1 shards the optimizer states (as the distributed
 * optimizer), 2 also the gradients, 3 also the weights, each over DP. */
static void test_zero_stages(void **state) {
  (void)state;
  sc_memory_stage st[4];
  for (int z = 0; z <= 3; z++) {
    sc_config cfg;
    sc_test_example(&cfg); /* dp = 8 */
    cfg.parallel.zero_stage = z;
    resolve(&cfg);
    assert_int_equal(cfg.parallel.distributed_optimizer, z >= 1);
    sc_memory_report r;
    assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
    st[z] = r.stages[0];
    sc_memory_report_free(ctx, &r);
  }
  double dp = 8;
  assert_close(st[1].optimizer_bytes, st[0].optimizer_bytes / dp, 1e-9, "zero-1 optimizer");
  assert_close(st[1].grads_bytes, st[0].grads_bytes, 1e-9, "zero-1 grads");
  assert_close(st[2].grads_bytes, st[0].grads_bytes / dp, 1e-9, "zero-2 grads");
  assert_close(st[2].weights_bytes, st[0].weights_bytes, 1e-9, "zero-2 weights");
  assert_close(st[3].weights_bytes, st[0].weights_bytes / dp, 1e-9, "zero-3 weights");
  /* ZeRO-3 / FSDP: the gathered units (the computing one and the prefetched
   * one) and one unit's fp32 gradients come on top; hybrid sharding over 4
   * of the 8 ranks doubles every sharded state. */
  assert_true(st[3].transient_bytes > st[2].transient_bytes);
  sc_config cfg;
  sc_test_example(&cfg);
  cfg.parallel.zero_stage = 3;
  cfg.parallel.fsdp_shard = 4;
  resolve(&cfg);
  sc_memory_report r;
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
  assert_close(r.stages[0].weights_bytes, 2 * st[3].weights_bytes, 1e-9, "hsdp weights");
  assert_close(r.stages[0].optimizer_bytes, 2 * st[3].optimizer_bytes, 1e-9, "hsdp optimizer");
  sc_memory_report_free(ctx, &r);
  cfg.parallel.zero_stage = 4;
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
}

/* Context parallelism: every activation term scales with the rank's s/cp
 * tokens; the distributed optimizer shards over dp x cp (the same 8 ranks
 * here); the ring's K/V buffers add to the transient memory. */
static void test_cp_memory(void **state) {
  (void)state;
  sc_memory_stage st[2];
  for (int k = 0; k < 2; k++) {
    sc_config cfg;
    sc_test_example(&cfg); /* tp 8, pp 16, dp 8 */
    cfg.parallel.distributed_optimizer = 1;
    if (k) cfg.parallel.cp = 2; /* dp 4 */
    resolve(&cfg);
    sc_memory_report r;
    assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
    st[k] = r.stages[1];
    sc_memory_report_free(ctx, &r);
  }
  assert_close(st[1].act_layer_bytes, st[0].act_layer_bytes / 2, 1e-9, "activations per layer");
  assert_close(st[1].optimizer_bytes, st[0].optimizer_bytes, 1e-9, "optimizer over dp x cp");
  /* the transient terms halve too, but for the K/V buffers that come on top */
  assert_true(st[1].transient_bytes > st[0].transient_bytes / 2 * 1.01);

  /* All of the data parallelism in CP (dp 1, cp 8: torchtitan's 8B at 256K
   * tokens on 8 GPUs): the sharding group is still dp x cp = 8, so the
   * model states are those of dp 8, cp 1 (they were counted unsharded). */
  double states[2];
  for (int k = 0; k < 2; k++) {
    sc_config cfg;
    sc_test_example(&cfg);
    assert_int_equal(sc_model_preset(ctx, &cfg, "llama3-8b"), 0);
    cfg.cluster.num_gpus = 8;
    cfg.cluster.nodes = 0;
    cfg.parallel.tp = cfg.parallel.pp = 1;
    cfg.parallel.cp = k ? 8 : 1;
    cfg.parallel.dp = k ? 1 : 8;
    cfg.parallel.zero_stage = 3;
    cfg.training.global_batch = k ? 1 : 8;
    cfg.training.micro_batch = 1;
    cfg.training.recompute = SC_RECOMPUTE_FULL;
    resolve(&cfg);
    sc_memory_report r;
    assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
    states[k] = r.stages[0].weights_bytes + r.stages[0].grads_bytes + r.stages[0].optimizer_bytes;
    sc_memory_report_free(ctx, &r);
  }
  assert_close(states[1], states[0], 1e-9, "model states over dp 1 x cp 8");
}

/* Llama 3 405B as Meta trained it at 8K (Llama Team 2024, Table 4 and
 * Sec. 3.3.2: TP8 CP1 PP16 DP128 on 16,384 H100-80GB, 2,048 sequences per
 * step, no activation recomputation, one layer fewer on the first and last
 * stage; FSDP-style data parallelism that shards optimizer states and
 * gradients). Per layer and micro-batch its activations are Korthikanti's
 * terms without dropout masks (Llama has no dropout): 8 sbh replicated (two
 * norm inputs, the QKV and FC1 inputs), Q and the GQA K/V, the attention
 * output, SwiGLU's two FC1 halves and the FC2 input, all / t with SP. With
 * gradients sharded (zero_stage 2) the layout fits; kept whole in fp32 as
 * Megatron's distributed optimizer does (ZeRO-1) it does not. */
/* Llama 3 405B on H100s in bf16 with TP 8 + SP and PP pp, the first and
 * last stage `edge` layers (unresolved). */
static void llama3_405b(sc_config *cfg, int64_t gpus, int64_t batch, int64_t pp, int64_t edge) {
  sc_test_example(cfg);
  assert_int_equal(sc_model_preset(ctx, cfg, "llama3-405b"), 0);
  snprintf(cfg->cluster.gpu, sizeof cfg->cluster.gpu, "h100-sxm");
  cfg->cluster.num_gpus = gpus;
  cfg->training.global_batch = batch;
  cfg->training.precision = SC_PREC_BF16;
  cfg->parallel.tp = 8;
  cfg->parallel.pp = pp;
  cfg->parallel.dp = 0;
  cfg->parallel.sequence_parallel = 1;
  cfg->parallel.pp_first_layers = edge;
  cfg->parallel.pp_last_layers = edge;
}

static void test_llama3_405b_layout(void **state) {
  (void)state;
  double peak[2];
  for (int z = 0; z < 2; z++) {
    sc_config cfg;
    llama3_405b(&cfg, 16384, 2048, 16, 7);
    cfg.training.recompute = SC_RECOMPUTE_NONE;
    cfg.parallel.zero_stage = z ? 2 : 1;
    resolve(&cfg);
    assert_true(cfg.model.dropout == 0);
    const sc_shape *sh = shape_of(&cfg);
    double sb = 8192.0, e = 2.0, t = 8.0, h = 16384.0, f = 53248.0;
    double want = e * sb * (4.0 * h + 16384.0 + 2.0 * 128.0 * 8.0 + 16384.0 + 3.0 * f) / t +
                  4.0 * 128.0 * sb / t;
    assert_close(sc__memory_layer_act(sh, SC_RECOMPUTE_NONE, 1), want, 1e-9, "405B layer");
    sc_memory_report r;
    assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
    peak[z] = r.peak_gib;
    sc_memory_report_free(ctx, &r);
  }
  assert_true(peak[0] > 80.0 && peak[1] < 80.0);
}

/* Llama 3 8B on 8 H100s, micro-batch 2 of 8192 tokens, one micro-batch per
 * replica, tp-way tensor parallel (with SP when tp > 1), resolved. */
static void llama3_8b_on_8(sc_config *cfg, int64_t tp, sc_recompute rc) {
  sc_test_example(cfg);
  assert_int_equal(sc_model_preset(ctx, cfg, "llama3-8b"), 0);
  snprintf(cfg->cluster.gpu, sizeof cfg->cluster.gpu, "h100-sxm");
  cfg->cluster.num_gpus = 8;
  cfg->training.global_batch = 16 / tp;
  cfg->training.micro_batch = 2;
  cfg->training.precision = SC_PREC_BF16;
  cfg->training.recompute = rc;
  cfg->parallel.tp = tp;
  cfg->parallel.pp = 1;
  cfg->parallel.dp = 0;
  cfg->parallel.sequence_parallel = tp > 1;
  resolve(cfg);
}

/* FSDP2 as torchtitan runs Llama 3 8B on 8 GPUs (zero_stage 3, untied LM
 * head, op_sac, fp32 loss): the transient at the loss backward, by hand.
 * A layer: 4096 (4096 + 1024 + 1024 + 4096) + 3 x 4096 x 14336 + 2 x 4096
 * = 218,112,000 parameters; the embedding and the LM head 128256 x 4096 =
 * 525,336,576 each. The gathered units: the computing layer and one
 * prefetched, 2 x 2 bytes; the reduced layer's bf16 gradients and its fp32
 * reduce buffer, 2 + 4 bytes; the root unit (embedding, LM head, final
 * norm) gathered in bf16, 2 bytes; the loss backward's 8 fp32 bytes a
 * logit over 2 x 8192 tokens x 128256. */
static void test_fsdp2_llama3_8b(void **state) {
  (void)state;
  sc_config cfg;
  llama3_8b_on_8(&cfg, 1, SC_RECOMPUTE_OP_SAC);
  cfg.model.tied_embeddings = 0;
  cfg.parallel.zero_stage = 3;
  cfg.training.fp32_loss_grads = 1;
  resolve(&cfg);
  sc_memory_report r;
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
  const sc_shape *sh = shape_of(&cfg);
  /* the shape counts GPT-style biases and norm shifts too (+51,200) */
  double layer = sh->layer_params, embed = sh->embed_params;
  assert_close(layer, 218112000.0 + 51200.0, 1e-15, "layer parameters");
  assert_close(embed, 525336576.0, 1e-15, "embedding parameters");
  double root = 2.0 * embed + sh->norm_params;
  double fsdp = 2.0 * layer * 2.0 + layer * (2.0 + 4.0) + root * 2.0;
  double loss = 8.0 * 2.0 * 8192.0 * 128256.0;
  assert_close(r.stages[0].transient_bytes, loss + fsdp, 1e-12, "FSDP2 transient");
  sc_memory_report_free(ctx, &r);
}

/* parallel.pp_keep_outputs (torch.distributed.pipelining's output_chunks)
 * on torchtitan's Llama 3.1 405B PP rows (TP 8, PP 8, micro-batch 4 x 8192,
 * 8 micro-batches, full recompute): the last stage keeps every micro-batch's
 * 16-bit logits over the padded vocabulary (128256 -> 129024, a multiple of
 * 128 t), 2 x 4 x 8192 x 129024 / 8 = 1,056,964,608 bytes each, to the
 * step's end. 1F1B: the last stage runs F B F B ..., so its peak moves to
 * the 8th forward: one micro-batch's activations and all 8 outputs, 8 x
 * 1.06 GB more than without; interleaved (vpp 2): the 8 outputs of its last
 * chunk's forwards, at least 7 of them beyond its peak without. Stage 0
 * does not change. */
static void test_pp_keep_outputs_405b(void **state) {
  (void)state;
  for (int il = 0; il < 2; il++) {
    double last[2], first[2];
    for (int keep = 0; keep < 2; keep++) {
      sc_config cfg;
      llama3_405b(&cfg, 512, 256, 8, 15);
      cfg.model.tied_embeddings = 0;
      cfg.training.micro_batch = 4;
      cfg.training.recompute = SC_RECOMPUTE_FULL;
      cfg.training.fp32_loss_grads = 1;
      cfg.parallel.zero_stage = 1;
      cfg.parallel.vpp = il ? 2 : 1;
      cfg.parallel.schedule = il ? SC_SCHED_INTERLEAVED : SC_SCHED_1F1B;
      cfg.parallel.pp_keep_outputs = keep;
      resolve(&cfg);
      sc_memory_report r;
      assert_int_equal(sc_memory_estimate(ctx, &cfg, &r), 0);
      const sc_memory_stage *ls = &r.stages[7];
      double out = 2.0 * 4.0 * 8192.0 * 129024.0 / 8.0;
      assert_close(out, 1056964608.0, 1e-15, "one micro-batch's logits");
      assert_close(ls->pp_outputs_bytes, keep ? 8.0 * out : 0.0, 1e-12, "kept outputs");
      for (int s = 0; s < 7; s++) assert_true(r.stages[s].pp_outputs_bytes == 0);
      last[keep] = ls->activations_bytes;
      first[keep] = r.stages[0].total_bytes;
      if (keep && !il) {
        /* at the last forward: one micro-batch's stored activations (the
         * 15 layer inputs and the LM head's) and the 8 outputs */
        const sc_shape *sh = shape_of(&cfg);
        double sb = 4.0 * 8192.0, layer = 2.0 * sb * 16384.0 / 8.0;
        double head = 2.0 * 2.0 * sb * 16384.0 / 8.0 + 4.0 * sb * 129024.0 / 8.0;
        assert_close(sc__memory_item_bytes(&(sc_memory_model){.sh = sh, .pp = 8, .vpp = 1,
                                                              .act_layer = layer,
                                                              .act_head = head,
                                                              .pp_output_bytes = out},
                                           7, 0),
                     15.0 * layer + head + out, 1e-12, "item bytes");
        assert_close(ls->activations_bytes, 15.0 * layer + head + 8.0 * out, 1e-12,
                     "1F1B last stage at its last forward");
      }
      sc_memory_report_free(ctx, &r);
    }
    double out = 1056964608.0;
    if (!il) assert_close(last[1] - last[0], 8.0 * out, 1e-12, "1F1B: + 8 outputs");
    else assert_true(last[1] - last[0] >= 7.0 * out && last[1] - last[0] <= 8.0 * out);
    assert_close(first[1], first[0], 1e-15, "stage 0 unchanged");
  }
}

/* recompute op_sac (torchtitan's op-level SAC) on Llama 3 8B (h 4096, 32
 * heads of 128, 8 KV heads, FFN 14336), micro-batch 2 x 8192 tokens, by
 * hand per layer and micro-batch, e = 2:
 *   TP1: block input 4096, wq 4096, wv 1024, w1 14336, w2 4096, attention
 *     output 4096: 31744 e sb, plus the fp32 LSE 4 x 32 sb: 63616 sb =
 *     1,042,284,544 bytes;
 *   TP2 + SP: block input 2048, wq 2048, wv 512 (4 KV heads), w1 7168, w2's
 *     partial sums 4096, attention 2048, two reduce-scatters 2 x 2048:
 *     22016 e sb, LSE 4 x 16 sb: 44096 sb = 722,468,864 bytes.
 * Re-made in a layer's backward: both norm outputs gathered (2 x 4096),
 * RoPE's Q and K (4096 + 1024 over t), the residual sum (4096 / shard), w3,
 * SiLU and their product (3 x 14336 / t): TP1 120832 sb, TP2 + SP 68608 sb.
 * Hardware FLOPs: wk, wo, w3 again, 2 (4096 x 1024 + 4096 x 4096 + 4096 x
 * 14336) = 159,383,552 a token and layer. */
static void test_op_sac_llama3_8b(void **state) {
  (void)state;
  const double sb = 2.0 * 8192.0;
  static const struct {
    int64_t tp;
    double act, remade;
  } want[] = {{1, 1042284544.0, 120832.0 * 16384.0}, {2, 722468864.0, 68608.0 * 16384.0}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    sc_config cfg;
    llama3_8b_on_8(&cfg, want[i].tp, SC_RECOMPUTE_OP_SAC);
    const sc_shape *sh = shape_of(&cfg);
    assert_close(sc__memory_layer_act(sh, SC_RECOMPUTE_OP_SAC, 1), want[i].act, 1e-12, "op_sac kept");
    sc_memory_opts o;
    sc__memory_opts_of(&cfg, &o);
    sc_memory_model mm;
    assert_int_equal(sc__memory_model_init(ctx, &mm, sh, &o), 0);
    assert_close(mm.act_layer_rc, want[i].remade, 1e-12, "op_sac re-made");
    /* the loss on fp32 logits beside the stored fp32 log-probabilities,
     * against 2 bytes a logit for Megatron-LM's in-place softmax */
    double logits = sb * sh->v / sh->t;
    assert_close(mm.loss_logits_bytes, 2.0 * logits, 1e-12, "16-bit logits");
    sc__memory_model_free(ctx, &mm);
    cfg.training.fp32_loss_grads = 1;
    assert_int_equal(sc__memory_model_init(ctx, &mm, sh, &o), 0);
    /* t = 1: the fp32 gradients of the log-probabilities and of the logits,
     * 8 bytes; t = 2 (torch's loss_parallel decomposition): the one-hot,
     * exp(log-probabilities), their sum and its product, 12 */
    assert_close(mm.loss_logits_bytes, (want[i].tp > 1 ? 12.0 : 8.0) * logits, 1e-12,
                 "fp32 loss grads");
    sc__memory_model_free(ctx, &mm);
    double model, hw;
    sc__model_flops(&cfg, &model, &hw);
    assert_close(hw - model, 159383552.0 * 32.0 * (double)cfg.training.global_batch * 8192.0, 1e-12,
                 "op_sac recompute FLOPs");
  }
  /* op_sac keeps less than Megatron's selective set and more than full
   * recompute on this model */
  sc_config cfg;
  llama3_8b_on_8(&cfg, 1, SC_RECOMPUTE_NONE);
  const sc_shape *sh = shape_of(&cfg);
  double sac = sc__memory_layer_act(sh, SC_RECOMPUTE_OP_SAC, 1);
  assert_true(sac < sc__memory_layer_act(sh, SC_RECOMPUTE_SELECTIVE, 1));
  assert_true(sac > sc__memory_layer_act(sh, SC_RECOMPUTE_FULL, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llama3_405b_layout),
      cmocka_unit_test(test_op_sac_llama3_8b),
      cmocka_unit_test(test_cp_memory),
      cmocka_unit_test(test_korthikanti_table2),
      cmocka_unit_test(test_first_stage_totals),
      cmocka_unit_test(test_stage_dependence),
      cmocka_unit_test(test_interleaved_matches_workload),
      cmocka_unit_test(test_model_states_by_hand),
      cmocka_unit_test(test_oom_verdict),
      cmocka_unit_test(test_megatron_formula),
      cmocka_unit_test(test_api),
      cmocka_unit_test(test_zero_stages),
      cmocka_unit_test(test_fsdp2_llama3_8b),
      cmocka_unit_test(test_pp_keep_outputs_405b),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
