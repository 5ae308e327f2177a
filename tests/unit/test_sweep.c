/* test_sweep.c: configuration sweeps: enumeration and pruning counts on a
 * small case against an independent count, restrictions of the space, the
 * dimensions of issue 14 (schedules, cp, ZeRO-3 and its shard, uneven and
 * counted layer splits, flexible interleaving), the expert grid and
 * dispatcher of MoE models (issue 15), reasons for what was not
 * ranked and why nothing ranked, deterministic ranking, memory pruning,
 * results file round trip, the GPT-3 175B / 1,024 A100 search (reduced),
 * input errors, allocation failures. */
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
  sc_test_example(cfg);
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

/* Independent count of the documented default space on the small GPT:
 * tp | gcd(8, N), pp | N/tp, cp 1 (seq 512 is short), vpp | L/pp when pp
 * divides L (else | ceil(L/pp): for L = 12 the pp 8 and 16 leave no layers
 * for the end stages, so no derived split exists), the layer split plain
 * and, where pp > 1 and L + 2 splits over pp*vpp, counted; micro-batch
 * {1,2,4,8}, SP {0,1} when tp > 1, 3 recompute modes, distributed optimizer
 * {0,1} when dp > 1 plus, where pp = 1 and dp > 1, ZeRO-3 over dp and over
 * a node (8 / tp when that is in [2, dp) and divides dp); first failing
 * reason per candidate. Interleaving with a micro-batch count that is not a
 * multiple of pp is a candidate now (Megatron's flexible interleaving). */
static void reference_counts(int64_t *leaves, int64_t *pp_layers, int64_t *batch) {
  const int64_t L = SMALL_L, B = SMALL_B, N = SMALL_N, heads = SMALL_HEADS;
  *leaves = *pp_layers = *batch = 0;
  for (int64_t tp = 1; tp <= 8; tp++) {
    if (8 % tp || N % tp) continue;
    assert_int_equal(heads % tp, 0); /* no tp_shape case here */
    for (int64_t pp = 1; pp <= N / tp; pp++) {
      if ((N / tp) % pp) continue;
      int64_t dp = N / (tp * pp);
      int64_t per_stage = L % pp == 0 ? L / pp : (L + pp - 1) / pp;
      int64_t shard = 0;
      int64_t sharding = dp > 1 ? 2 : 1;
      if (pp == 1 && dp > 1) {
        sharding++; /* full */
        shard = 8 / tp;
        if (shard >= 2 && shard < dp && dp % shard == 0) sharding++;
      }
      for (int64_t v = 1; v <= L; v++) {
        int vok = pp > 1 ? per_stage % v == 0 : v == 1;
        if (!vok) continue;
        for (int counted = 0; counted < 2; counted++) {
          if (counted && (pp == 1 || (L + 2) % (pp * v))) continue;
          int split_ok = counted || L % (pp * v) == 0;
          for (int64_t mb = 1; mb <= 8; mb *= 2) {
            int64_t per_leaf = (tp > 1 ? 2 : 1) * 3 * sharding;
            *leaves += per_leaf;
            if (!split_ok) *pp_layers += per_leaf;
            else if (B % (mb * dp)) *batch += per_leaf;
          }
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
  int64_t leaves, pp_layers, batch;
  reference_counts(&leaves, &pp_layers, &batch);
  assert_int_equal(r.gpus, 16);
  assert_int_equal(r.gpus_per_node, 8);
  assert_int_equal(r.candidates, leaves / 3);
  assert_int_equal(r.excluded[SC_SWEEP_PP_LAYERS], pp_layers / 3);
  assert_int_equal(r.excluded[SC_SWEEP_BATCH], batch / 3);
  assert_int_equal(r.excluded[SC_SWEEP_TP_SHAPE], 0);
  assert_int_equal(r.excluded[SC_SWEEP_NOT_MODELLED], 0); /* every feature tried is modelled */
  if (r.excluded[SC_SWEEP_SIM_ERROR])
    print_message("  %lld candidates failed to simulate\n",
                  (long long)r.excluded[SC_SWEEP_SIM_ERROR]);
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
  o.fsdp.n = 1, o.fsdp.v[0] = SC_SWEEP_FSDP_OFF;
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

  /* cp 4 needs the sequence in 8 chunks (2050 is not); a ZeRO-3 shard of 3
   * does not divide dp 4. */
  o.tp.n = 1, o.tp.v[0] = 1;
  o.cp.n = 2, o.cp.v[0] = 1, o.cp.v[1] = 4;
  o.fsdp.n = 2, o.fsdp.v[0] = SC_SWEEP_FSDP_OFF, o.fsdp.v[1] = 3;
  run_sweep(&base, &o, &r);
  /* cp 1 (dp 16): do 0 + fsdp 3; cp 4 (dp 4): do 0 + fsdp 3 */
  assert_int_equal(r.candidates, 4);
  assert_int_equal(r.excluded[SC_SWEEP_CP_SEQ], 2);
  assert_int_equal(r.excluded[SC_SWEEP_FSDP_SHARD], 1);
  assert_int_equal(r.simulated, 1);
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
  sc_test_example(&base);
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
  sc_test_example(&base);
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

/* Lists of the new dimensions: every schedule where it is valid, cp, ZeRO-3
 * full and hybrid, the counted layer split; counts by hand, every feature
 * ranked, keys and the results file's new columns read back by resume. */
static void test_new_dimensions(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 2;
  o.pp.n = 2, o.pp.v[0] = 1, o.pp.v[1] = 2;
  o.cp.n = 2, o.cp.v[0] = 1, o.cp.v[1] = 2;
  o.vpp.n = 2, o.vpp.v[0] = 1, o.vpp.v[1] = 2;
  o.schedule.n = 4, o.schedule.v[0] = SC_SCHED_1F1B, o.schedule.v[1] = SC_SCHED_ZB_H1;
  o.schedule.v[2] = SC_SCHED_INTERLEAVED, o.schedule.v[3] = SC_SCHED_ZBV;
  o.fsdp.n = 3, o.fsdp.v[0] = SC_SWEEP_FSDP_OFF, o.fsdp.v[1] = SC_SWEEP_FSDP_FULL, o.fsdp.v[2] = 2;
  o.pp_split.n = 2, o.pp_split.v[0] = SC_SWEEP_SPLIT_PLAIN, o.pp_split.v[1] = SC_SWEEP_SPLIT_COUNTED;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 1;
  char path[] = "/tmp/stepcast_test_sweep_dims_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  o.out_path = path;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  /* pp 1 (no schedule, no split): cp 1 (dp 8) and cp 2 (dp 4) x sharding
   * {do0, do1, fsdp dp, fsdp 2} = 8. pp 2: per cp 7 pipeline combinations
   * (vpp 1: 1f1b, zb-h1, each plain or counted; vpp 2: interleaved plain or
   * counted, zbv plain) x sharding: cp 1 (dp 4) 4, cp 2 (dp 2: full = 2) 3,
   * so 28 + 21. The counted split of vpp 2 (14 units over 4 chunks) does not
   * exist: 4 + 3 leaves. */
  assert_int_equal(r.candidates, 8 + 28 + 21);
  assert_int_equal(r.excluded[SC_SWEEP_PP_LAYERS], 7);
  assert_int_equal(r.simulated + total_excluded(&r), r.candidates);
  assert_true(r.simulated >= 40);
  int seen_zbh1 = 0, seen_zbv = 0, seen_cp = 0, seen_full = 0, seen_hsdp = 0, seen_counted = 0;
  char key[160];
  for (int64_t i = 0; i < r.simulated; i++) {
    const sc_sweep_row *w = &r.rows[i];
    assert_int_equal(w->tp * w->pp * w->cp * w->dp, 16);
    sc_sweep_row_key(w, key, sizeof key);
    if (w->schedule == SC_SCHED_ZB_H1) {
      seen_zbh1++;
      assert_int_equal(w->vpp, 1);
      assert_non_null(strstr(key, "-zb-h1"));
    }
    if (w->schedule == SC_SCHED_ZBV) {
      seen_zbv++;
      assert_int_equal(w->vpp, 2);
      assert_int_equal(w->pp_counted, 0);
    }
    if (w->cp == 2) {
      seen_cp++;
      assert_non_null(strstr(key, "-cp2"));
    }
    if (w->zero_stage == 3) {
      assert_int_equal(w->distributed_optimizer, 1);
      assert_non_null(strstr(key, "-fsdp"));
      if (w->fsdp_shard == w->dp) seen_full++;
      else if (w->fsdp_shard == 2 && w->dp > 2) seen_hsdp++;
      else fail_msg("%s: shard %lld of dp %lld", key, (long long)w->fsdp_shard, (long long)w->dp);
    } else {
      assert_int_equal(w->fsdp_shard, 0);
      assert_int_equal(w->zero_stage, w->distributed_optimizer);
    }
    if (w->pp_counted) {
      seen_counted++;
      assert_int_equal(w->pp, 2);
      assert_non_null(strstr(key, "-elsplit"));
    }
    if (w->pp == 1) assert_int_equal(w->schedule, SC_SCHED_1F1B);
  }
  assert_true(seen_zbh1 && seen_zbv && seen_cp && seen_full && seen_hsdp && seen_counted);

  /* The results file: new columns at the end, read back exactly. */
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char header[1024];
  assert_non_null(fgets(header, sizeof header, f));
  fclose(f);
  assert_true(!strncmp(header, "key,tp,pp,dp,vpp,micro_batch,sequence_parallel,recompute,", 57));
  assert_non_null(strstr(header, ",memory_gib,base,cp,schedule,zero_stage,fsdp_shard,"
                                 "pp_first_layers,pp_last_layers,pp_counted,"));
  sc_sweep_result r2;
  o.resume = 1;
  run_sweep(&base, &o, &r2);
  assert_int_equal(r2.resumed, r.simulated);
  assert_int_equal(r2.simulated, r.simulated);
  assert_memory_equal(r.rows, r2.rows, (size_t)r.simulated * sizeof *r.rows);
  sc_sweep_result_free(ctx, &r2);
  sc_sweep_result_free(ctx, &r);
  unlink(path);
}

/* Mixtral 8x7B cut to 4 layers of 1,024 tokens on 16 H100s (TP 2, PP 1,
 * DP 8), one value on every dense dimension: the expert grid and the
 * dispatcher (issue 15). */
static void moe_base(sc_config *cfg, sc_sweep_opts *o) {
  sc_test_example(cfg);
  assert_int_equal(sc_model_preset(ctx, cfg, "mixtral-8x7b"), 0);
  cfg->model.layers = 4;
  cfg->model.seq_len = 1024;
  cfg->training.global_batch = 32;
  cfg->training.precision = SC_PREC_BF16;
  snprintf(cfg->cluster.gpu, sizeof cfg->cluster.gpu, "%s", "h100-sxm");
  cfg->cluster.num_gpus = 16;
  cfg->cluster.nodes = 0;
  memset(o, 0, sizeof *o);
  o->tp.n = 1, o->tp.v[0] = 2;
  o->pp.n = 1, o->pp.v[0] = 1;
  o->cp.n = 1, o->cp.v[0] = 1;
  o->micro_batch.n = 1, o->micro_batch.v[0] = 1;
  o->recompute.n = 1, o->recompute.v[0] = SC_RECOMPUTE_NONE;
  o->distributed_optimizer.n = 1, o->distributed_optimizer.v[0] = 1;
  o->fsdp.n = 1, o->fsdp.v[0] = SC_SWEEP_FSDP_OFF;
}

/* The expert grid: by default ep over the divisors of the 8 experts and
 * etp 1 and tp (2), every pair fitting the 16 ranks (8 candidates, SP on
 * only: Megatron-Core's MoE needs it); a second dispatcher doubles all but
 * ep = etp = 1; --ep 3 (not dividing the experts) counts under moe_grid and
 * nothing ranks; a dense model keeps ep 1 and counts ep 2 under moe_grid;
 * the results file round-trips the new columns and keys. */
static void test_moe_dimensions(void **state) {
  (void)state;
  sc_config base;
  sc_sweep_opts o;
  moe_base(&base, &o);
  char path[] = "/tmp/stepcast_test_sweep_moe_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  o.out_path = path;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 8);
  assert_int_equal(r.simulated + total_excluded(&r), 8);
  assert_true(r.simulated > 0);
  char key[160];
  for (int64_t i = 0; i < r.simulated; i++) {
    const sc_sweep_row *w = &r.rows[i];
    assert_int_equal(w->sequence_parallel, 1);
    assert_int_equal(w->moe_dispatcher, SC_MOE_ALLTOALL);
    assert_true(w->ep >= 1 && 8 % w->ep == 0 && (w->etp == 1 || w->etp == 2));
    sc_sweep_row_key(w, key, sizeof key);
    if (w->ep > 1 || w->etp > 1) {
      char want[48];
      snprintf(want, sizeof want, "-ep%lld-etp%lld-alltoall", (long long)w->ep,
               (long long)w->etp);
      assert_non_null(strstr(key, want));
    } else {
      assert_null(strstr(key, "-ep"));
    }
  }
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char header[1024];
  assert_non_null(fgets(header, sizeof header, f));
  fclose(f);
  assert_non_null(strstr(header, ",pp_counted,ep,etp,moe_dispatcher\n"));
  sc_sweep_result r2;
  o.resume = 1;
  run_sweep(&base, &o, &r2);
  assert_int_equal(r2.resumed, r.simulated);
  assert_memory_equal(r.rows, r2.rows, (size_t)r.simulated * sizeof *r.rows);
  sc_sweep_result_free(ctx, &r2);
  sc_sweep_result_free(ctx, &r);
  unlink(path);

  /* two dispatchers: 1 + 7 x 2 */
  moe_base(&base, &o);
  o.dispatcher.n = 2, o.dispatcher.v[0] = SC_MOE_ALLTOALL, o.dispatcher.v[1] = SC_MOE_DEEPEP;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 15);
  int deepep = 0;
  for (int64_t i = 0; i < r.simulated; i++) deepep += r.rows[i].moe_dispatcher == SC_MOE_DEEPEP;
  assert_true(deepep > 0);
  sc_sweep_result_free(ctx, &r);

  /* --ep 3,4 --etp 1: ep 3 does not divide 8 experts */
  moe_base(&base, &o);
  o.ep.n = 2, o.ep.v[0] = 3, o.ep.v[1] = 4;
  o.etp.n = 1, o.etp.v[0] = 1;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 2);
  assert_int_equal(r.excluded[SC_SWEEP_MOE_GRID], 1);
  for (int64_t i = 0; i < r.simulated; i++) assert_int_equal(r.rows[i].ep, 4);
  sc_sweep_result_free(ctx, &r);
  /* --ep 3 alone: with the default etp {1, 2} two leaves, nothing ranks */
  moe_base(&base, &o);
  o.ep.n = 1, o.ep.v[0] = 3;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 2);
  assert_int_equal(r.excluded[SC_SWEEP_MOE_GRID], 2);
  assert_int_equal(r.simulated, 0);
  char why[512];
  assert_non_null(strstr(sc_sweep_why_unranked(&r, why, sizeof why), "moe_grid 2"));
  sc_sweep_result_free(ctx, &r);

  /* a dense model: ep 1 only; a listed ep 2 is a moe_grid leaf */
  small_base(&base);
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 2;
  o.pp.n = 1, o.pp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_NONE;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 1;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 1;
  o.fsdp.n = 1, o.fsdp.v[0] = SC_SWEEP_FSDP_OFF;
  o.dispatcher.n = 1, o.dispatcher.v[0] = SC_MOE_DEEPEP; /* no effect on a dense model */
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 1);
  assert_int_equal(r.simulated, 1);
  assert_int_equal(r.rows[0].ep, 1);
  assert_int_equal(r.rows[0].etp, 1);
  assert_int_equal(r.rows[0].moe_dispatcher, SC_MOE_ALLTOALL);
  sc_sweep_result_free(ctx, &r);
  o.ep.n = 2, o.ep.v[0] = 1, o.ep.v[1] = 2;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 2);
  assert_int_equal(r.excluded[SC_SWEEP_MOE_GRID], 1);
  assert_int_equal(r.simulated, 1);
  sc_sweep_result_free(ctx, &r);
}

/* pp that does not divide the layers: the config's derived uneven split
 * makes it a candidate (10 layers over 4 stages: 2 + 3 + 3 + 2); where no
 * split exists (8 stages) it is counted under pp_layers; the counted split
 * is tried by default where it is even (10 + 2 units over 4 stages). */
static void test_uneven_pp(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  base.model.layers = 10;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 2;
  o.pp.n = 2, o.pp.v[0] = 4, o.pp.v[1] = 8;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 1;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 1;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  /* pp 4: vpp | ceil(10/4) = 3: vpp 1 (plain, counted), vpp 3 (plain: no
   * split; counted: 12 units over 12 chunks); pp 8: vpp 1, 2, plain only. */
  assert_int_equal(r.candidates, 6);
  assert_int_equal(r.excluded[SC_SWEEP_PP_LAYERS], 3);
  int uneven = 0, counted = 0;
  for (int64_t i = 0; i < r.simulated; i++) {
    const sc_sweep_row *w = &r.rows[i];
    assert_int_equal(w->pp, 4);
    if (!w->pp_counted && w->vpp == 1) {
      assert_int_equal(w->pp_first_layers, 2);
      assert_int_equal(w->pp_last_layers, 2);
      uneven++;
    }
    if (w->pp_counted) counted++;
  }
  assert_int_equal(uneven, 1);
  assert_true(counted >= 1);
  sc_sweep_result_free(ctx, &r);
}

/* Interleaving with a micro-batch count that is not a multiple of pp
 * (6 over 4 stages) runs in the config (flexible interleaving): it is a
 * candidate, not pruned. */
static void test_interleave_any_count(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  base.training.global_batch = 24;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 2;
  o.pp.n = 1, o.pp.v[0] = 4;
  o.vpp.n = 1, o.vpp.v[0] = 3;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 2;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 1;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 1;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 1);
  assert_int_equal(r.simulated, 1);
  assert_int_equal(r.rows[0].schedule, SC_SCHED_INTERLEAVED);
  sc_sweep_result_free(ctx, &r);
}

/* Nothing to rank: why, from the counts. */
static void test_nothing_ranks(void **state) {
  (void)state;
  static char text[8192];
  char why[1024];
  char *p;
  /* GPT-3 175B (96 layers, batch 1536 = 2^9 * 3) on 1000 = 2^3 * 5^3 GPUs:
   * every layout fails the batch or the layer split. */
  sc_config base;
  sc_test_example(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.gpus = 1000;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.simulated, 0);
  assert_true(r.candidates > 0);
  assert_int_equal(total_excluded(&r), r.candidates);
  sc_sweep_why_unranked(&r, why, sizeof why);
  char want[160];
  snprintf(want, sizeof want, "all %lld candidates excluded: ", (long long)r.candidates);
  assert_true(!strncmp(why, want, strlen(want)));
  assert_non_null(strstr(why, "pp_layers "));
  assert_null(strstr(why, "node size")); /* 125 full nodes */
  /* most frequent first */
  const char *key = r.excluded[SC_SWEEP_BATCH] >= r.excluded[SC_SWEEP_PP_LAYERS] ? "batch"
                                                                                 : "pp_layers";
  assert_true(!strncmp(why + strlen(want), key, strlen(key)));
  p = text;
  assert_int_equal(sc_sweep_format(&base, &r, 10, SC_FORMAT_TEXT, sink_buf, &p), 0);
  assert_non_null(strstr(text, "\n  no configuration to rank: all "));
  p = text;
  assert_int_equal(sc_sweep_format(&base, &r, 10, SC_FORMAT_JSON, sink_buf, &p), 0);
  assert_non_null(strstr(text, "\"unranked\": \"all "));
  assert_non_null(strstr(text, "\"top\": []}"));
  sc_sweep_result_free(ctx, &r);
  /* 1001 GPUs: not whole 8-GPU nodes, which the reason says first. */
  o.gpus = 1001;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.simulated, 0);
  assert_true(!strncmp(sc_sweep_why_unranked(&r, why, sizeof why),
                       "1001 GPUs are not a multiple of the node size 8; all ", 53));
  sc_sweep_result_free(ctx, &r);
  /* Something ranked: no reason. */
  small_base(&base);
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 8;
  o.pp.n = 1, o.pp.v[0] = 2;
  o.vpp.n = 1, o.vpp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 1;
  o.pp_split.n = 1, o.pp_split.v[0] = SC_SWEEP_SPLIT_PLAIN;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.simulated, 1);
  assert_string_equal(sc_sweep_why_unranked(&r, why, sizeof why), "");
  sc_sweep_result_free(ctx, &r);

  /* A candidate the simulation refuses (over its size limit) is counted. */
  small_base(&base);
  base.training.global_batch = 16777216;
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 2;
  o.pp.n = 1, o.pp.v[0] = 2;
  o.vpp.n = 1, o.vpp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 0;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 0;
  o.pp_split.n = 1, o.pp_split.v[0] = SC_SWEEP_SPLIT_PLAIN;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 1);
  assert_int_equal(r.excluded[SC_SWEEP_SIM_ERROR], 1);
  assert_int_equal(r.simulated, 0);
  assert_string_equal(sc_sweep_why_unranked(&r, why, sizeof why),
                      "all 1 candidates excluded: sim_error 1 (simulation failed or exceeded a "
                      "limit)");
  sc_sweep_result_free(ctx, &r);

  /* Lists that leave no candidate: zbv needs vpp 2. */
  small_base(&base);
  memset(&o, 0, sizeof o);
  o.pp.n = 1, o.pp.v[0] = 2;
  o.vpp.n = 1, o.vpp.v[0] = 1;
  o.schedule.n = 1, o.schedule.v[0] = SC_SCHED_ZBV;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 0);
  assert_string_equal(sc_sweep_why_unranked(&r, why, sizeof why),
                      "the search space is empty (the lists given leave no candidate)");
  sc_sweep_result_free(ctx, &r);
}

/* DualPipe and DualPipe-V in a --schedule list: dualpipe where vpp is 1,
 * dualpipev where vpp is 2 and 2 pp chunks split the layers; a candidate
 * with fewer than 2 pp micro-batches is refused by resolution (invalid),
 * never simulated. On 16 GPUs, 12 layers, batch 32, tp 1: pp 2 (dp 8) and
 * pp 4 (dp 4) x {dualpipe, dualpipev} x micro-batch {1, 4} = 8 leaves;
 * pp 4's dualpipev has 12 layers over 8 chunks (2, PP_LAYERS); micro-batch
 * 4 leaves 1 (pp 2) or 2 (pp 4) micro-batches (3 invalid); 3 run. */
static void test_dualpipe_schedules(void **state) {
  (void)state;
  sc_config base;
  small_base(&base);
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 1, o.tp.v[0] = 1;
  o.pp.n = 2, o.pp.v[0] = 2, o.pp.v[1] = 4;
  o.vpp.n = 2, o.vpp.v[0] = 1, o.vpp.v[1] = 2;
  o.schedule.n = 2, o.schedule.v[0] = SC_SCHED_DUALPIPE, o.schedule.v[1] = SC_SCHED_DUALPIPEV;
  o.micro_batch.n = 2, o.micro_batch.v[0] = 1, o.micro_batch.v[1] = 4;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_FULL;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 0;
  o.pp_split.n = 1, o.pp_split.v[0] = SC_SWEEP_SPLIT_PLAIN;
  sc_sweep_result r;
  run_sweep(&base, &o, &r);
  assert_int_equal(r.candidates, 8);
  assert_int_equal(r.excluded[SC_SWEEP_PP_LAYERS], 2);
  assert_int_equal(r.excluded[SC_SWEEP_INVALID], 3);
  assert_int_equal(r.simulated, 3);
  char key[160];
  int seen[2] = {0, 0};
  for (int64_t i = 0; i < r.simulated; i++) {
    const sc_sweep_row *w = &r.rows[i];
    sc_sweep_row_key(w, key, sizeof key);
    int v = w->schedule == SC_SCHED_DUALPIPEV;
    assert_true(w->schedule == SC_SCHED_DUALPIPE || v);
    assert_int_equal(w->vpp, v ? 2 : 1);
    assert_non_null(strstr(key, v ? "-dualpipev" : "-dualpipe"));
    assert_true(w->step_time_s > 0);
    seen[v]++;
  }
  assert_int_equal(seen[0], 2);
  assert_int_equal(seen[1], 1);
  sc_sweep_result_free(ctx, &r);
}

/* The library's refusals by reason: a feature it does not model (the
 * validate path's MoE message) and everything else. */
int sc__sweep_refusal_reason(int rc, const char *msg);
static void test_refusal_reasons(void **state) {
  (void)state;
  assert_int_equal(sc__sweep_refusal_reason(SC_EUNSUPPORTED, "MoE/MLA is not modelled yet (issue 15)"),
                   SC_SWEEP_NOT_MODELLED);
  assert_int_equal(sc__sweep_refusal_reason(SC_EUNSUPPORTED, "too many micro-batches"),
                   SC_SWEEP_SIM_ERROR);
  assert_int_equal(sc__sweep_refusal_reason(SC_EINTERNAL, "simulation deadlock: rank 0 ..."),
                   SC_SWEEP_SIM_ERROR);
  assert_string_equal(sc_sweep_reason_key(SC_SWEEP_NOT_MODELLED), "unmodelled");
  assert_string_equal(sc_sweep_reason_key(SC_SWEEP_REASON_COUNT), "?");
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
/* Robustness: the layouts rank without variation (the same rows as a base
 * without it); the best ones are re-simulated per seed under the base's
 * gpu_speed_sigma, ordered by P50, reproducibly; without a seeded
 * variation it is an error. */
static void test_robustness(void **state) {
  (void)state;
  sc_config base, plain;
  small_base(&base);
  plain = base;
  base.variation.gpu_speed_sigma = 0.05;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp = (sc_sweep_dim){2, {1, 2}};
  o.pp = (sc_sweep_dim){2, {1, 2}};
  o.micro_batch = (sc_sweep_dim){1, {1}};
  sc_sweep_result r, rp;
  run_sweep(&base, &o, &r);
  run_sweep(&plain, &o, &rp);
  assert_int_equal(r.simulated, rp.simulated);
  for (int64_t i = 0; i < r.simulated; i++) assert_true(r.rows[i].step_time_s == rp.rows[i].step_time_s);
  sc_sweep_robust a[3], b[3];
  int64_t na, nb;
  assert_int_equal(sc_sweep_robustness(ctx, &base, &r, 3, 5, a, &na), 0);
  assert_int_equal(sc_sweep_robustness(ctx, &base, &r, 3, 5, b, &nb), 0);
  assert_int_equal(na, 3);
  for (int64_t i = 0; i < na; i++) {
    assert_true(a[i].p50_s == b[i].p50_s && a[i].p99_s == b[i].p99_s && a[i].row == b[i].row);
    assert_true(a[i].p99_s >= a[i].p50_s && a[i].worst_s >= a[i].p99_s);
    assert_true(a[i].p50_s > a[i].nominal_s); /* 16 GPUs: the slowest sets the step */
    assert_true(a[i].nominal_s == r.rows[a[i].row].step_time_s);
    if (i) assert_true(a[i].p50_s >= a[i - 1].p50_s);
  }
  assert_int_equal(sc_sweep_robustness(ctx, &plain, &rp, 3, 5, a, &na), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "needs a variation"));
  sc_sweep_result_free(ctx, &r);
  sc_sweep_result_free(ctx, &rp);
}

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
  o.pp_split.n = 1, o.pp_split.v[0] = SC_SWEEP_SPLIT_PLAIN;
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

/* The bounded sweep's step-time bounds must never exceed the simulated
 * step, and the quick one (one stage's compute) never the replay's
 * (sc__engine_lower_bound): checked on every candidate of the default
 * spaces of both scale targets and of an MoE space with every schedule;
 * then the bounded top 10 must be the exhaustive one, row for row, and the
 * bounded sweep must simulate what it does with every candidate refined. */
int sc__sweep_bound_check(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                          int64_t *checked, int64_t *violations);
int sc__sweep_run_ex(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                     int refine_all, sc_sweep_result *out);

static void check_bounds(const sc_config *base, const sc_sweep_opts *o, int64_t min_checked) {
  int64_t checked = 0, violations = 0;
  if (sc__sweep_bound_check(ctx, base, o, &checked, &violations))
    fail_msg("bound check: %s", sc_errmsg(ctx));
  if (violations)
    fail_msg("%lld of %lld candidates: quick bound > bound or bound > simulated step",
             (long long)violations, (long long)checked);
  assert_true(checked >= min_checked);
}

/* Exhaustive and bounded sweeps of one space give the same top K (every
 * field, enumeration index included) and the same counts but dominated;
 * refining every candidate (no quick bounds) simulates the same rows. */
static void check_top_k(const sc_config *base, sc_sweep_opts *o, int64_t k) {
  sc_sweep_result all, top, ref;
  o->top_k = 0;
  run_sweep(base, o, &all);
  o->top_k = k;
  run_sweep(base, o, &top);
  if (sc__sweep_run_ex(ctx, base, o, 1, &ref)) fail_msg("sweep: %s", sc_errmsg(ctx));
  assert_int_equal(ref.refined, ref.bounded);
  assert_true(top.refined <= ref.refined);
  assert_int_equal(top.simulated, ref.simulated);
  for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++) assert_int_equal(top.excluded[i], ref.excluded[i]);
  if (memcmp(top.rows, ref.rows, (size_t)top.simulated * sizeof *top.rows))
    fail_msg("quick bounds changed the simulated rows");
  sc_sweep_result_free(ctx, &ref);
  assert_int_equal(all.excluded[SC_SWEEP_DOMINATED], 0);
  assert_int_equal(top.simulated + top.excluded[SC_SWEEP_DOMINATED], all.simulated);
  assert_true(top.excluded[SC_SWEEP_DOMINATED] > 0);
  assert_int_equal(top.bounded, all.simulated);
  for (int i = 0; i < SC_SWEEP_DOMINATED; i++) assert_int_equal(top.excluded[i], all.excluded[i]);
  int64_t n = all.simulated < k ? all.simulated : k;
  assert_true(top.simulated >= n);
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&all.rows[i], &top.rows[i], sizeof all.rows[i]))
      fail_msg("rank %lld differs between the exhaustive and the bounded sweep", (long long)i + 1);
  sc_sweep_result_free(ctx, &all);
  sc_sweep_result_free(ctx, &top);
  o->top_k = 0;
}

/* The two scale targets as bench_sweep runs them: the built-in GPT-3 175B
 * on 1,024 A100s, Llama-3 70B on 512 H100s. */
static void test_bound_scale_targets(void **state) {
  (void)state;
  static const char *const llama[] = {"model.preset=llama3-70b", "cluster.gpu=h100-sxm",
                                      "training.precision=bf16", "training.global_batch=512",
                                      "cluster.num_gpus=512", NULL};
  for (int t = 0; t < 2; t++) {
    sc_config base;
    sc_test_example(&base);
    for (int i = 0; t && llama[i]; i++) assert_int_equal(sc_config_set(ctx, &base, llama[i]), 0);
    sc_sweep_opts o;
    memset(&o, 0, sizeof o);
    o.gpus = t ? 512 : 1024;
    check_bounds(&base, &o, t ? 700 : 1129);
    check_top_k(&base, &o, 10);
  }
}

/* MoE: the expert grid and both dispatchers over pipelines with every
 * schedule (DualPipe and DualPipe-V among them), and the small GPT's
 * default space (ZeRO-3, counted splits). */
static void test_bound_moe_and_schedules(void **state) {
  (void)state;
  sc_config base;
  sc_sweep_opts o;
  moe_base(&base, &o);
  o.tp.n = 2, o.tp.v[0] = 1, o.tp.v[1] = 2;
  o.pp.n = 3, o.pp.v[0] = 1, o.pp.v[1] = 2, o.pp.v[2] = 4;
  o.micro_batch.n = 2, o.micro_batch.v[1] = 2;
  o.dispatcher.n = 2, o.dispatcher.v[0] = SC_MOE_ALLTOALL, o.dispatcher.v[1] = SC_MOE_DEEPEP;
  o.schedule.n = 7;
  int64_t sched[] = {SC_SCHED_1F1B,     SC_SCHED_GPIPE, SC_SCHED_INTERLEAVED, SC_SCHED_ZB_H1,
                     SC_SCHED_ZBV,      SC_SCHED_DUALPIPE, SC_SCHED_DUALPIPEV};
  memcpy(o.schedule.v, sched, sizeof sched);
  check_bounds(&base, &o, 100);
  check_top_k(&base, &o, 5);
  sc_config small;
  small_base(&small);
  memset(&o, 0, sizeof o);
  check_bounds(&small, &o, 100);
  check_top_k(&small, &o, 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enumeration_counts),
      cmocka_unit_test(test_pruning_reasons),
      cmocka_unit_test(test_all_out_of_memory),
      cmocka_unit_test(test_determinism_and_file),
      cmocka_unit_test(test_gpt3_175b_1024),
      cmocka_unit_test(test_new_dimensions),
      cmocka_unit_test(test_moe_dimensions),
      cmocka_unit_test(test_dualpipe_schedules),
      cmocka_unit_test(test_uneven_pp),
      cmocka_unit_test(test_interleave_any_count),
      cmocka_unit_test(test_nothing_ranks),
      cmocka_unit_test(test_refusal_reasons),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_robustness),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_bound_scale_targets),
      cmocka_unit_test(test_bound_moe_and_schedules),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
