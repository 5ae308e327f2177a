/* test_sweep.c: configuration sweeps: enumeration and pruning counts on a
 * small case against an independent count, restrictions of the space,
 * deterministic ranking, memory pruning, results file round trip, the GPT-3
 * 175B / 1,024 A100 search (reduced), input errors, allocation failures. */
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
#include <unistd.h>

#include "stepcast/sweep.h"

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

/* A small GPT (L=12, h=1024, a=16, s=512) on 16 A100-80GB, batch 32:
 * cheap to simulate, so the tests stay fast under sanitizers. */
enum { SMALL_L = 12, SMALL_B = 32, SMALL_N = 16, SMALL_HEADS = 16 };

static void small_base(sc_config *cfg) {
  sc_config_default(cfg);
  assert_int_equal(sc_model_preset(ctx, cfg, "gpt3-1.3b"), 0);
  cfg->model.layers = SMALL_L;
  cfg->model.hidden = 1024;
  cfg->model.heads = SMALL_HEADS;
  cfg->model.kv_heads = 0;
  cfg->model.ffn_hidden = 0;
  cfg->model.seq_len = 512;
  cfg->training.global_batch = SMALL_B;
  cfg->cluster.num_gpus = SMALL_N;
  cfg->cluster.nodes = 0;
}

static void run_sweep(const sc_config *base, const sc_sweep_opts *o, sc_sweep_result *r) {
  int rc = sc_sweep_run(ctx, base, o, r);
  if (rc) fail_msg("sweep: %s", sc_errmsg(ctx));
  assert_true(r->is_root);
}

static int64_t total_excluded(const sc_sweep_result *r) {
  int64_t n = 0;
  for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++) n += r->excluded[i];
  return n;
}

/* Independent count of the documented space: tp | gcd(8, N), pp | N/tp,
 * vpp | L/pp when pp > 1 divides L (else 1), micro-batch {1,2,4,8}, SP
 * {0,1} when tp > 1, 3 recompute modes, distributed optimizer {0,1} when
 * dp > 1; first failing reason per candidate. */
static void reference_counts(int64_t *leaves, int64_t *pp_layers, int64_t *batch,
                             int64_t *interleave) {
  const int64_t L = SMALL_L, B = SMALL_B, N = SMALL_N, heads = SMALL_HEADS;
  *leaves = *pp_layers = *batch = *interleave = 0;
  for (int64_t tp = 1; tp <= 8; tp++) {
    if (8 % tp || N % tp) continue;
    assert_int_equal(heads % tp, 0); /* no tp_shape case here */
    for (int64_t pp = 1; pp <= N / tp; pp++) {
      if ((N / tp) % pp) continue;
      int64_t dp = N / (tp * pp);
      for (int64_t v = 1; v <= L; v++) {
        int vok = (pp > 1 && L % pp == 0) ? (L / pp) % v == 0 : v == 1;
        if (!vok) continue;
        for (int64_t mb = 1; mb <= 8; mb *= 2) {
          int64_t per_leaf = (tp > 1 ? 2 : 1) * 3 * (dp > 1 ? 2 : 1);
          *leaves += per_leaf;
          if (L % (pp * v)) *pp_layers += per_leaf;
          else if (B % (mb * dp)) *batch += per_leaf;
          else if (v > 1 && (B / (mb * dp)) % pp) *interleave += per_leaf;
        }
      }
    }
  }
}

static void test_enumeration_counts(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.micro_batch.n = 4; /* same as the default set, spelled out */
  o.micro_batch.v[0] = 1, o.micro_batch.v[1] = 2, o.micro_batch.v[2] = 4, o.micro_batch.v[3] = 8;
  o.recompute.n = 1; /* one mode keeps the test fast; counts scale by 3 */
  o.recompute.v[0] = SC_RECOMPUTE_FULL;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  int64_t leaves, pp_layers, batch, interleave;
  reference_counts(&leaves, &pp_layers, &batch, &interleave);
  assert_int_equal(r.gpus, 16);
  assert_int_equal(r.candidates, leaves / 3);
  assert_int_equal(r.excluded[SC_SWEEP_PP_LAYERS], pp_layers / 3);
  assert_int_equal(r.excluded[SC_SWEEP_BATCH], batch / 3);
  assert_int_equal(r.excluded[SC_SWEEP_INTERLEAVE], interleave / 3);
  assert_int_equal(r.excluded[SC_SWEEP_TP_SHAPE], 0);
  assert_int_equal(r.excluded[SC_SWEEP_SIM_ERROR], 0);
  assert_int_equal(r.simulated + total_excluded(&r), r.candidates);
  assert_true(r.simulated > 50);
  /* Ranked best first, ties by enumeration order; the memory column is
   * the memory model's. */
  for (int64_t i = 1; i < r.simulated; i++) {
    const sc_sweep_row *a = &r.rows[i - 1], *b = &r.rows[i];
    assert_true(a->step_time_s < b->step_time_s ||
                (a->step_time_s == b->step_time_s && a->index < b->index));
  }
  for (int64_t i = 0; i < r.simulated; i++) {
    assert_true(r.rows[i].memory_gib > 0 && r.rows[i].memory_gib <= 80);
    assert_int_equal(r.rows[i].tp * r.rows[i].pp * r.rows[i].dp, 16);
    assert_int_equal(r.rows[i].recompute, SC_RECOMPUTE_FULL);
  }
  sc_sweep_result_free(ctx, &r);
  assert_null(r.rows);
}

/* tp that does not divide the heads, SP over a sequence tp does not
 * divide: counted under their own reasons. */
static void test_pruning_reasons(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  base.model.heads = 8; /* head dim 128 */
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  /* A list may exceed a node (16 !| 8 heads); a repeated value counts once. */
  o.tp.n = 3, o.tp.v[0] = 4, o.tp.v[1] = 16, o.tp.v[2] = 4;
  o.pp.n = 1, o.pp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 0;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  /* tp 4: sp {0,1} both fine; tp 16: 16 does not divide 8 heads (2 leaves). */
  assert_int_equal(r.candidates, 4);
  assert_int_equal(r.excluded[SC_SWEEP_TP_SHAPE], 2);
  assert_int_equal(r.simulated, 2);
  sc_sweep_result_free(ctx, &r);

  base.model.seq_len = 2050; /* not divisible by 4: SP impossible */
  o.tp.n = 1;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 2);
  assert_int_equal(r.excluded[SC_SWEEP_SP_SEQ], 1);
  assert_int_equal(r.simulated, 1);
  assert_int_equal(r.rows[0].sequence_parallel, 0);
  sc_sweep_result_free(ctx, &r);
}

static int sink_buf(void *ud, const char *buf, size_t len) {
  char **p = ud;
  memcpy(*p, buf, len);
  *p += len;
  **p = 0;
  return 0;
}

/* Memory: GPT-3 175B on 8 A100s fits in no layout. */
static void test_all_out_of_memory(void **state) {
  (void)state;
  sc_config base;
  sc_config_default(&base);
  base.training.global_batch = 8;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.gpus = 8;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.simulated, 0);
  assert_true(r.excluded[SC_SWEEP_MEMORY] > 0);
  assert_int_equal(total_excluded(&r), r.candidates);
  static char text[4096];
  char *p = text;
  assert_int_equal(sc_sweep_format(&base, &r, 10, SC_FORMAT_TEXT, sink_buf, &p), 0);
  assert_non_null(strstr(text, "no configuration to rank"));
  assert_non_null(strstr(text, "memory"));
  sc_sweep_result_free(ctx, &r);
}

/* Same inputs, same output, byte for byte; and a results file read back
 * by a resumed sweep ranks identically. */
static void test_determinism_and_file(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 2, o.tp.v[0] = 2, o.tp.v[1] = 4;
  o.pp.n = 2, o.pp.v[0] = 1, o.pp.v[1] = 2;
  o.micro_batch.n = 2, o.micro_batch.v[0] = 1, o.micro_batch.v[1] = 2;
  o.recompute.n = 2, o.recompute.v[0] = SC_RECOMPUTE_NONE, o.recompute.v[1] = SC_RECOMPUTE_FULL;
  char path[] = "/tmp/stepcast_test_sweep_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  o.out_path = path;
  static char text1[1 << 16], text2[1 << 16], json[1 << 16];
  sc_sweep_result r1, r2;
  run_sweep(&base, &o, &r1);
  char *p = text1;
  assert_int_equal(sc_sweep_format(&base, &r1, 1000, SC_FORMAT_TEXT, sink_buf, &p), 0);
  p = json;
  assert_int_equal(sc_sweep_format(&base, &r1, 3, SC_FORMAT_JSON, sink_buf, &p), 0);
  assert_non_null(strstr(json, "\"top\": [{\"rank\": 1"));
  assert_non_null(strstr(json, "\"memory\": "));

  /* Fresh run refuses the existing file; resume reads it all back. */
  assert_int_equal(sc_sweep_run(ctx, &base, &o, &r2), SC_EINVAL);
  sc_sweep_result_free(ctx, &r2);
  o.resume = 1;
  run_sweep(&base, &o, &r2);
  assert_int_equal(r2.resumed, r1.simulated);
  assert_int_equal(r2.simulated, r1.simulated);
  p = text2;
  assert_int_equal(sc_sweep_format(&base, &r2, 1000, SC_FORMAT_TEXT, sink_buf, &p), 0);
  assert_string_equal(text1, text2);
  assert_memory_equal(r1.rows, r2.rows, (size_t)r1.simulated * sizeof *r1.rows);
  sc_sweep_result_free(ctx, &r2);

  /* And a second fresh run (no file) gives the same rows. */
  unlink(path);
  o.resume = 0;
  o.out_path = NULL;
  run_sweep(&base, &o, &r2);
  assert_int_equal(r2.simulated, r1.simulated);
  assert_memory_equal(r1.rows, r2.rows, (size_t)r1.simulated * sizeof *r1.rows);
  sc_sweep_result_free(ctx, &r2);
  sc_sweep_result_free(ctx, &r1);

  char key[128];
  sc_sweep_row row = {0};
  row.tp = 8, row.pp = 16, row.vpp = 1, row.micro_batch = 1, row.sequence_parallel = 1;
  row.recompute = SC_RECOMPUTE_FULL, row.distributed_optimizer = 1;
  assert_string_equal(sc_sweep_row_key(&row, key, sizeof key), "tp8-pp16-vpp1-mb1-sp1-full-do1");
}

/* GPT-3 175B on 1,024 A100-80GB (the SC21 setting), reduced to TP
 * {2,4,8} x PP {4,8,16} with SP, selective recompute, micro-batch 1, no
 * interleaving: memory removes the layouts with tp*pp < 16 (over 80 GiB of
 * model states and activations), and a TP8 layout with PP 8 or 16 (SC21
 * ran TP8 PP16) is within 5% of the best step time. */
static void test_gpt3_175b_1024(void **state) {
  (void)state;
  sc_config base;
  sc_config_default(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.gpus = 1024;
  o.tp.n = 3, o.tp.v[0] = 2, o.tp.v[1] = 4, o.tp.v[2] = 8;
  o.pp.n = 3, o.pp.v[0] = 4, o.pp.v[1] = 8, o.pp.v[2] = 16;
  o.vpp.n = 1, o.vpp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_SELECTIVE;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 1;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 9);
  assert_int_equal(r.excluded[SC_SWEEP_MEMORY], 2); /* TP2 PP4, TP2 PP8 */
  assert_true(r.simulated >= 6);
  int found = 0;
  for (int64_t i = 0; i < r.simulated; i++) {
    const sc_sweep_row *w = &r.rows[i];
    assert_true(w->tp * w->pp >= 16);
    if (w->tp == 8 && (w->pp == 8 || w->pp == 16) &&
        w->step_time_s <= 1.05 * r.rows[0].step_time_s)
      found = 1;
  }
  if (!found) fail_msg("no TP8 PP8/PP16 layout within 5%% of the best (tp%lld pp%lld)",
                       (long long)r.rows[0].tp, (long long)r.rows[0].pp);
  sc_sweep_result_free(ctx, &r);
}

static void test_bad_input(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  base.model.hidden = 2049; /* not a multiple of the heads */
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  sc_sweep_result r;
  assert_int_equal(sc_sweep_run(ctx, &base, &o, &r), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "model.hidden"));
  sc_sweep_result_free(ctx, &r);
  small_base(&base);
  o.out_path = "/nonexistent-dir/results.csv";
  assert_int_equal(sc_sweep_run(ctx, &base, &o, &r), SC_EWRITE);
  assert_non_null(strstr(sc_errmsg(ctx), "cannot open"));
  sc_sweep_result_free(ctx, &r);
}


/* Failing any allocation of a one-config sweep with a results file gives
 * SC_ENOMEM and leaks nothing (ASan checks the latter). */
static void test_allocation_failures(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 8;
  o.pp.n = 1, o.pp.v[0] = 2;
  o.vpp.n = 1, o.vpp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 0;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  char path[] = "/tmp/stepcast_test_alloc_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  o.out_path = path;
  o.resume = 1; /* the same file is reused: resumed rows exercise the reader */
  sc_test_heap b = {0};
  sc_ctx *c;
  assert_int_equal(sc_test_ctx_on(&b, &c), 0);
  sc_sweep_result r;
  long before = b.count;
  assert_int_equal(sc_sweep_run(c, &base, &o, &r), 0);
  long total = b.count - before;
  assert_int_equal(r.simulated, 1);
  sc_sweep_result_free(c, &r);
  /* Fail allocation k for about 40 k spread over the run (all of them
   * for short runs). */
  long step = total / 40 > 0 ? total / 40 : 1;
  for (long k = 1; k <= total; k += step) {
    assert_int_equal(truncate(path, 0), 0); /* a fresh file every time */
    b.count = 0;
    b.fail_at = k;
    int rc = sc_sweep_run(c, &base, &o, &r);
    if (rc != SC_ENOMEM) fail_msg("allocation %ld of %ld: rc %d", k, total, rc);
    sc_sweep_result_free(c, &r);
  }
  b.fail_at = 0;
  sc_ctx_free(c);
  assert_int_equal(b.live, 0);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enumeration_counts),
      cmocka_unit_test(test_pruning_reasons),
      cmocka_unit_test(test_all_out_of_memory),
      cmocka_unit_test(test_determinism_and_file),
      cmocka_unit_test(test_gpt3_175b_1024),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
