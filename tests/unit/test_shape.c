/*
 * test_shape.c: the model shape derived once for synthesis, memory and FLOPs
 * (src/model/shape.c): dimensions per TP rank (GQA with tp above the KV
 * heads), parameter counts per stage, gradient bytes per precision, and
 * Megatron's FLOP formula.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "sctest.h"
#include "model/shape_int.h"
#include "model/schedule_int.h"

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

static void shape_of(sc_config *cfg, sc_shape *sh) {
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
  if (sc__shape_init(ctx, cfg, sh)) fail_msg("shape: %s", sc_errmsg(ctx));
}

/* Llama-3 70B (8 KV heads) under TP 16: every rank holds one replicated KV
 * head (Megatron-LM), so its QKV output is h/16 + 2 * 128 columns and the
 * layer's parameters count 16 KV heads over the group. */
static void test_gqa_beyond_kv_heads(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_model_preset(ctx, &cfg, "llama3-70b"), 0);
  cfg.parallel.tp = 16;
  cfg.parallel.pp = 4;
  cfg.parallel.dp = 0;
  cfg.cluster.gpus_per_node = 16;
  cfg.cluster.num_gpus = 1024;
  cfg.cluster.nodes = 0;
  sc_shape sh;
  shape_of(&cfg, &sh);
  assert_true(sh.g == 8 && sh.g_rank == 1 && sh.d == 128);
  assert_true(sh.qkv_out == 8192 + 2.0 * 16 * 128);
  assert_true(sh.qkv_out / sh.t == 512 + 256);
  double h = 8192, f = 28672, t = 16;
  double w = (h * sh.qkv_out + h * h + h * 2 * f + f * h) / t;
  double small = 4 * h + sh.qkv_out / t + h + 2 * f / t + h;
  assert_true(fabs(sh.layer_params - (w + small)) < 1e-6);
  /* with tp 8 the KV heads shard exactly: one per rank, no replication */
  cfg.parallel.tp = 8;
  cfg.parallel.dp = 0;
  cfg.cluster.gpus_per_node = 8;
  cfg.cluster.nodes = 0;
  shape_of(&cfg, &sh);
  assert_true(sh.g_rank == 1 && sh.qkv_out == 8192 + 2.0 * 8 * 128);
}

/* Stage parameters: the layers of every chunk, embedding on the first
 * virtual stage, LM head and final norm on the last; summed over the stages
 * they give the TP rank's share of the whole model. */
static void test_stage_params(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
  cfg.parallel.vpp = 2;
  cfg.training.global_batch = 64;
  sc_shape sh;
  shape_of(&cfg, &sh);
  double sum = 0;
  for (int64_t s = 0; s < sh.pp; s++) sum += sc__shape_stage_params(&sh, s);
  double expect = sh.layers * sh.layer_params + 2 * sh.embed_params + sh.norm_params;
  assert_true(fabs(sum - expect) <= 1e-9 * expect);
  assert_true(sh.embed_params == sh.v * sh.h / sh.t);
  assert_true(fmod(sh.v, 128 * sh.t) == 0 && sh.v >= 128256);
}

/* DP reduction bytes follow Megatron's main grads: fp32 for bf16, fp8 (bf16
 * parameters) and fp32; fp16 for fp16. */
static void test_grad_bytes(void **state) {
  (void)state;
  static const struct {
    sc_precision p;
    double grad, elem;
  } cases[] = {{SC_PREC_BF16, 4, 2}, {SC_PREC_FP8, 4, 2}, {SC_PREC_FP16, 2, 2}, {SC_PREC_FP32, 4, 4}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
    cfg.training.precision = cases[i].p;
    sc_shape sh;
    shape_of(&cfg, &sh);
    assert_true(sh.grad_bytes == cases[i].grad);
    assert_true(sh.elem_bytes == cases[i].elem);
  }
}

/* Megatron's GPT model FLOPs: 72 B s L h^2 (1 + s / 6h + V / 12 L h); with
 * full recompute the SC21 hardware count 96 B s L h^2 (1 + s / 6h + V / 16 L h). */
static void test_flops_formula(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg); /* GPT-3 175B, full recompute */
  sc_shape sh;
  shape_of(&cfg, &sh);
  double B = 1536, s = 2048, L = 96, h = 12288, V = 51200;
  double model = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  double hw = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  assert_true(fabs(sh.model_flops - model) <= 1e-12 * model);
  assert_true(fabs(sh.hw_flops - hw) <= 1e-12 * hw);
}

/* An unresolved config (pp not dividing the layers) has no shape. */
static void test_unresolved(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  cfg.model.layers = 95;
  sc_shape sh;
  assert_int_equal(sc__shape_init(ctx, &cfg, &sh), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "not resolved"));
}

/* The schedules: every micro-batch's passes once per chunk (forward,
 * backward, and weight grads when split), 1F1B's warm-up of pp - stage - 1
 * forwards, GPipe's forwards first, and the flexible interleaved schedule
 * with a micro-batch count pp does not divide. */
static void test_schedules(void **state) {
  (void)state;
  for (int kind = SC_SCHED_1F1B; kind <= SC_SCHED_DUALPIPEV; kind++) {
    for (int odd = 0; odd < 2; odd++) {
      sc_config cfg;
      assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
      cfg.parallel.schedule = (sc_schedule)kind;
      cfg.parallel.vpp =
          kind == SC_SCHED_INTERLEAVED || kind == SC_SCHED_ZBV || kind == SC_SCHED_DUALPIPEV ? 2
                                                                                               : 1;
      cfg.model.layers = 24;
      if (odd) cfg.training.global_batch = 176; /* 22 micro-batches per replica */
      sc_shape sh;
      shape_of(&cfg, &sh);
      size_t n = sc__schedule_len(&sh);
      sc_sched_item *all = calloc(n * (size_t)sh.pp, sizeof *all);
      assert_non_null(all);
      assert_int_equal(sc__schedule_all(ctx, &sh, all), 0);
      int split = sc__schedule_split(&sh);
      assert_int_equal(n, (size_t)((split ? 3 : 2) * sh.m * sh.vpp));
      int64_t nc = sc__shape_chunks(&sh);
      for (int64_t st = 0; st < sh.pp; st++) {
        const sc_sched_item *it = all + (size_t)st * n;
        int seen[3][64][2] = {{{0}}};
        for (size_t i = 0; i < n; i++) {
          assert_true(it[i].pass <= SC_PASS_W && it[i].mb < sh.m && it[i].chunk < nc);
          seen[it[i].pass][it[i].mb][it[i].chunk]++;
          /* an F&B chunk: a marked forward, then a marked backward of the
           * other chunk */
          if (it[i].fb && it[i].pass == SC_PASS_F)
            assert_true(i + 1 < n && it[i + 1].fb && it[i + 1].pass == SC_PASS_B &&
                        it[i + 1].chunk != it[i].chunk);
        }
        /* DualPipe: micro-batches 0 .. m/2 - 1 through chunk 0 (entering at
         * stage 0), the rest through the mirrored chunk 1 */
        for (int64_t mb = 0; mb < sh.m; mb++)
          for (int64_t c = 0; c < nc; c++)
            for (int p = 0; p < (split ? 3 : 2); p++)
              assert_int_equal(seen[p][mb][c], !sh.dual || (mb >= sh.m / 2) == c);
        if (kind == SC_SCHED_1F1B || kind == SC_SCHED_ZB_H1)
          for (int64_t i = 0; i < sh.pp - st; i++) assert_int_equal(it[i].pass, SC_PASS_F);
        if (kind == SC_SCHED_GPIPE)
          assert_true(it[sh.m - 1].pass == SC_PASS_F && it[sh.m].pass == SC_PASS_B);
      }
      free(all);
    }
  }
}

/* Replays every stage's order in unit time with the pipeline's data
 * dependencies (a forward needs the previous virtual stage's forward of the
 * micro-batch, a backward its own forward and the next virtual stage's
 * backward, weight grads their backward): 0 when every item runs, 1 on a
 * deadlock. */
static int replay_deadlocks(const sc_shape *sh, const sc_sched_item *all, size_t n) {
  int64_t pp = sh->pp, nvs = sh->dual ? pp : pp * sh->vpp, m = sh->m;
  size_t cells = (size_t)(3 * nvs * m), *pos = calloc((size_t)pp, sizeof *pos);
  char *done = calloc(cells, 1);
  assert_true(pos && done);
#define DONE(p, vs, mb) done[((size_t)(p) * (size_t)nvs + (size_t)(vs)) * (size_t)m + (mb)]
  for (int progress = 1; progress;) {
    progress = 0;
    for (int64_t s = 0; s < pp; s++) {
      /* one item per stage and round: the unit-time step */
      if (pos[s] >= n) continue;
      const sc_sched_item *x = &all[(size_t)s * n + pos[s]];
      int64_t vs = sc__shape_vstage(sh, s, x->chunk);
      int ok = x->pass == SC_PASS_F   ? vs == 0 || DONE(SC_PASS_F, vs - 1, x->mb) == 1
               : x->pass == SC_PASS_B ? DONE(SC_PASS_F, vs, x->mb) == 1 &&
                                            (vs == nvs - 1 || DONE(SC_PASS_B, vs + 1, x->mb) == 1)
                                      : DONE(SC_PASS_B, vs, x->mb) == 1;
      if (!ok) continue;
      DONE(x->pass, vs, x->mb) = 2; /* visible from the next round */
      pos[s]++;
      progress = 1;
    }
    for (size_t i = 0; i < cells; i++)
      if (done[i] == 2) done[i] = 1;
  }
#undef DONE
  int stuck = 0;
  for (int64_t s = 0; s < pp; s++) stuck |= pos[s] != n;
  free(pos);
  free(done);
  return stuck;
}

/* DualPipe and DualPipe-V over a range of pipelines and micro-batch counts:
 * every pass once, and no deadlock. */
static void test_dualpipe_orders(void **state) {
  (void)state;
  for (int kind = SC_SCHED_DUALPIPE; kind <= SC_SCHED_DUALPIPEV; kind++)
    for (int64_t pp = 2; pp <= 16; pp += kind == SC_SCHED_DUALPIPE ? 2 : 1)
      for (int64_t m = 2 * pp; m <= 2 * pp + 7; m++) {
        if (kind == SC_SCHED_DUALPIPE && m % 2) continue;
        sc_config cfg;
        assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
        cfg.parallel.schedule = (sc_schedule)kind;
        cfg.parallel.pp = pp;
        cfg.parallel.vpp = 1;
        cfg.parallel.tp = 1;
        cfg.cluster.num_gpus = pp;
        cfg.model.layers = 2 * pp;
        cfg.training.global_batch = m;
        sc_shape sh;
        shape_of(&cfg, &sh);
        assert_int_equal(sh.m, m);
        size_t n = sc__schedule_len(&sh);
        sc_sched_item *all = calloc(n * (size_t)pp, sizeof *all);
        assert_non_null(all);
        if (sc__schedule_all(ctx, &sh, all)) fail_msg("%s", sc_errmsg(ctx));
        size_t nf = 0;
        for (size_t i = 0; i < n * (size_t)pp; i++) nf += all[i].pass == SC_PASS_F;
        assert_int_equal(nf, (size_t)(m * pp * (kind == SC_SCHED_DUALPIPE ? 1 : 2)));
        if (replay_deadlocks(&sh, all, n))
          fail_msg("%s pp=%lld m=%lld deadlocks", sc_enum_name(SC_ENUM_SCHEDULE, kind),
                   (long long)pp, (long long)m);
        free(all);
      }
}

/* Layers per virtual stage: even, uneven (Llama 3 405B's 126 layers over 16
 * stages: 7 + 14 x 8 + 7, derived), given first/last layers with chunks
 * (also ends that do not divide into the chunks: torchtitan's split), the
 * embedding and loss counted as layers; every layer on exactly one virtual
 * stage, in order. */
static void test_stage_layers(void **state) {
  (void)state;
  struct {
    int64_t layers, pp, vpp, first, last;
    int emb, loss;
    int64_t want_first, want_mid, want_last; /* layers of vs 0, a middle one, the last */
  } cases[] = {
      {24, 4, 1, 0, 0, 0, 0, 6, 6, 6},  {126, 16, 1, 0, 0, 0, 0, 7, 8, 7},
      {32, 4, 2, 4, 4, 0, 0, 2, 6, 2},  {23, 4, 1, 0, 0, 1, 0, 5, 6, 6},
      {22, 4, 1, 0, 0, 1, 1, 5, 6, 5},  {30, 4, 1, 6, 0, 0, 0, 6, 8, 8},
      /* torchtitan's split of Llama 3 405B over pp 8 x vpp 2: 15 / 16 / 15
       * layers per stage, 7 + 8 x 14 + 7 per virtual stage */
      {126, 8, 2, 15, 15, 0, 0, 7, 8, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
    cfg.model.layers = cases[i].layers;
    cfg.parallel.pp = cases[i].pp;
    cfg.parallel.vpp = cases[i].vpp;
    cfg.parallel.pp_first_layers = cases[i].first;
    cfg.parallel.pp_last_layers = cases[i].last;
    cfg.parallel.pp_embedding_in_split = cases[i].emb;
    cfg.parallel.pp_loss_in_split = cases[i].loss;
    cfg.cluster.num_gpus = 2 * cases[i].pp * 8;
    sc_shape sh;
    shape_of(&cfg, &sh);
    int64_t nvs = sh.pp * sh.vpp, next = 0;
    for (int64_t vs = 0; vs < nvs; vs++) {
      assert_int_equal(sc__shape_vs_first_layer(&sh, vs), next);
      next += sc__shape_vs_layers(&sh, vs);
    }
    assert_int_equal(next, cases[i].layers);
    assert_int_equal(sc__shape_vs_layers(&sh, 0), cases[i].want_first);
    assert_int_equal(sc__shape_vs_layers(&sh, 1), cases[i].want_mid);
    assert_int_equal(sc__shape_vs_layers(&sh, nvs - 1), cases[i].want_last);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gqa_beyond_kv_heads), cmocka_unit_test(test_stage_params),
      cmocka_unit_test(test_grad_bytes),          cmocka_unit_test(test_flops_formula),
      cmocka_unit_test(test_unresolved),          cmocka_unit_test(test_schedules),
      cmocka_unit_test(test_dualpipe_orders),
      cmocka_unit_test(test_stage_layers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
