/* test_alloc.c: allocation failure across the command families. For a small
 * representative run of each (run: config + sc_simulate, merged and not;
 * and its HTML report; validate: case file + sc_validate_run; import: Kineto trace to a finished,
 * written job; replay: .scw read + sc_replay as traced, re-targeted and as
 * DDP, and its HTML report; sweep: sc_sweep_run over a tiny space) the Nth allocation through the
 * context hook fails, for every N from 1 until the run succeeds: each must
 * return SC_OK (a failure absorbed) or SC_ENOMEM, never another code (an
 * out-of-memory reported as bad input, exit 2: issue 13 found replay calling
 * one a "dependency cycle") nor a crash, free every byte it allocated, and
 * pass every free the size it allocated (sctest.h's allocator aborts
 * otherwise). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sctest.h"
#include "stepcast/report.h"
#include "stepcast/sweep.h"
#include "stepcast/trace.h"
#include "stepcast/validate.h"

/* One run of a family on ctx; 0 or an SC_E code. */
typedef int (*family_fn)(sc_ctx *ctx, void *ud);

typedef struct tally {
  long total;     /* allocations of the successful run */
  long nomem;     /* failures returned as SC_ENOMEM */
  long ok;        /* runs that absorbed the failure (a lost warning, a retry) */
} tally;

/* Runs fn once to count its allocations, then twice per N = 1 .. total:
 * with allocation N failing alone (recovery paths then run with the heap
 * working again) and with N and every later one failing (cleanup with no
 * memory at all). Every run must end with nothing live. */
static tally fail_each(const char *what, family_fn fn, void *ud) {
  tally t = {0, 0, 0};
  sc_test_heap h = sc_test_heap_failing(0, 0);
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_on(&h, &ctx), SC_OK);
  int rc = fn(ctx, ud);
  if (rc) fail_msg("%s: the reference run failed: %d %s", what, rc, sc_errmsg(ctx));
  t.total = h.count;
  sc_ctx_free(ctx);
  if (h.live) fail_msg("%s: the reference run leaks %ld blocks (%zu bytes)", what, h.live, h.bytes);
  for (long i = 0; i < 2 * t.total; i++) {
    long n = i / 2 + 1;
    h = sc_test_heap_failing(n, (int)(i % 2));
    assert_int_equal(sc_test_ctx_on(&h, &ctx), SC_OK);
    rc = fn(ctx, ud);
    if (rc == SC_OK) {
      t.ok++;
    } else if (rc == SC_ENOMEM) {
      t.nomem++;
    } else {
      fail_msg("%s: allocation %ld of %ld failing%s: code %d (%s), not SC_ENOMEM: \"%s\"", what, n,
               t.total, i % 2 ? " (and later ones)" : "", rc, sc_strerror(rc), sc_errmsg(ctx));
    }
    sc_ctx_free(ctx);
    if (h.live || h.bytes)
      fail_msg("%s: allocation %ld of %ld failing: %ld blocks (%zu bytes) leaked (code %d)", what, n, t.total,
               h.live, h.bytes, rc);
  }
  print_message("%-28s %4ld allocations, %ld failing runs: %ld out of memory, %ld absorbed\n", what,
                t.total, 2 * t.total, t.nomem, t.ok);
  return t;
}

/* ------------------------------------------------------------ run */

static const char small_yaml[] =
    "model: {preset: gpt3-125m, layers: 4}\n"
    "training: {global_batch: 8, micro_batch: 1, recompute: selective}\n"
    "parallel: {tp: 2, pp: 2, sequence_parallel: true}\n"
    "cluster: {gpu: h100-sxm, num_gpus: 8}\n"
    "calibration: {kernel_overhead_us: 3}\n";

/* ud: non-NULL for the unmerged path (unfolded, constant interference). */
static int family_run(sc_ctx *ctx, void *ud) {
  sc_config cfg;
  sc_test_example(&cfg);
  int rc = sc_config_load_string(ctx, &cfg, "small.yaml", small_yaml, sizeof small_yaml - 1);
  if (!rc && ud) rc = sc_config_set(ctx, &cfg, "simulation.fold=0");
  if (!rc && ud) rc = sc_config_set(ctx, &cfg, "simulation.interference=constant");
  if (!rc) rc = sc_config_resolve(ctx, &cfg);
  sc_test_buf trace = {0}, out = {0}, html = {0};
  sc_result res;
  if (!rc) rc = sc_simulate(ctx, &cfg, sc_test_buf_write, &trace, &res);
  /* the Perfetto writer's interning tables, and a rank selection */
  sc_rank_range ranks[] = {{4, 7}, {0, 0}};
  sc_trace_opts pf = {SC_TRACE_OUT_PERFETTO, ranks, 2};
  sc_test_buf pft = {0};
  if (!rc) rc = sc_simulate_traced(ctx, &cfg, &pf, sc_test_buf_write, &pft, &res);
  free(pft.p);
  if (!rc) rc = sc_result_format(&cfg, &res, SC_FORMAT_JSON, sc_test_buf_write, &out);
  if (!rc) rc = sc_report_html_run(ctx, &cfg, &res, sc_test_buf_write, &html);
  free(trace.p);
  free(out.p);
  free(html.p);
  return rc;
}

static void test_run(void **state) {
  (void)state;
  tally t = fail_each("run (merged)", family_run, NULL);
  assert_true(t.total > 10);
  assert_true(t.nomem > 0);
  t = fail_each("run (unfolded, interference)", family_run, "unmerged");
  assert_true(t.nomem > 0);
}

/* ------------------------------------------------------------ validate */

static const char small_cases[] =
    "id,split,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,micro_batch,tp,pp,"
    "recompute,precision,measured_step_s,source\n"
    "small-a,calibration,a100-80gb,8,4,768,12,1024,51200,8,1,2,2,full,fp16,0.05,test\n"
    "small-b,validation,h100-sxm,8,4,768,12,1024,51200,16,2,4,1,selective,bf16,0.04,test\n";

static int family_validate(sc_ctx *ctx, void *ud) {
  (void)ud;
  sc_caseset *set;
  int rc = sc_caseset_new(ctx, &set);
  if (rc) return rc;
  rc = sc_caseset_load_string(set, "small.csv", small_cases, sizeof small_cases - 1, NULL);
  size_t n = rc ? 0 : sc_caseset_count(set);
  sc_case_result *res = calloc(n ? n : 1, sizeof *res);
  if (!res) rc = SC_ENOMEM;
  if (!rc) rc = sc_validate_run(ctx, set, NULL, res);
  sc_test_buf out = {0};
  if (!rc) rc = sc_validate_write(set, res, SC_VALIDATE_TEXT, sc_test_buf_write, &out);
  free(out.p);
  free(res);
  sc_caseset_free(set);
  return rc;
}

static void test_validate(void **state) {
  (void)state;
  tally t = fail_each("validate", family_validate, NULL);
  assert_true(t.nomem > 0);
}

/* ------------------------------------------------------------ import */

typedef struct file { char *p; size_t len; } file;

static file read_source(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", sc_test_source_dir(), rel);
  file f = {NULL, 0};
  FILE *fp = fopen(path, "rb");
  if (!fp) fail_msg("cannot open %s", path);
  size_t cap = 1 << 16;
  f.p = malloc(cap);
  assert_non_null(f.p);
  size_t k;
  while ((k = fread(f.p + f.len, 1, cap - f.len, fp)) > 0) {
    f.len += k;
    if (f.len == cap) {
      cap *= 2;
      f.p = realloc(f.p, cap);
      assert_non_null(f.p);
    }
  }
  fclose(fp);
  return f;
}

static int family_import(sc_ctx *ctx, void *ud) {
  const file *f = ud;
  sc_job *job;
  int rc = sc_job_new(ctx, &job);
  if (rc) return rc;
  sc_trace_reader *r = NULL;
  rc = sc_trace_open(job, SC_TRACE_KINETO, "kineto-small.json", -1, &r);
  if (!rc) rc = sc_trace_feed(r, f->p, f->len / 3); /* two pieces: a token cut in two */
  if (!rc) rc = sc_trace_feed(r, f->p + f->len / 3, f->len - f->len / 3);
  if (!rc) rc = sc_trace_finish(r);
  sc_trace_free(r);
  if (!rc) rc = sc_job_finish(job);
  sc_test_buf out = {0};
  if (!rc) rc = sc_job_write(job, sc_test_buf_write, &out);
  free(out.p);
  sc_job_free(job);
  return rc;
}

static void test_import(void **state) {
  (void)state;
  file f = read_source("tests/fuzz/corpus-kineto/kineto-small.json");
  tally t = fail_each("import kineto", family_import, &f);
  assert_true(t.nomem > 0);
  free(f.p);
}

/* ------------------------------------------------------------ replay */

typedef struct replay_case {
  file scw;
  int64_t scale_dp; /* also replayed at this data parallelism (0: only as traced) */
  const sc_replay_opts *retarget; /* also replayed re-targeted so (NULL: not) */
} replay_case;

static int family_replay(sc_ctx *ctx, void *ud) {
  const replay_case *c = ud;
  sc_job *job;
  int rc = sc_job_read(ctx, "job.scw", c->scw.p, c->scw.len, &job);
  if (rc) return rc;
  sc_job_info info;
  sc_job_get_info(job, &info);
  sc_config cfg;
  sc_test_example(&cfg);
  cfg.parallel.tp = cfg.parallel.pp = cfg.parallel.cp = cfg.parallel.vpp = 1;
  cfg.parallel.dp = 0;
  cfg.cluster.num_gpus = info.world;
  cfg.cluster.nodes = 0;
  cfg.training.micro_batch = 1;
  cfg.training.global_batch = info.world;
  rc = sc_config_resolve(ctx, &cfg);
  sc_replay_result res;
  sc_test_buf trace = {0};
  sc_replay_opts o = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  if (!rc) rc = sc_replay(ctx, job, &cfg, &o, sc_test_buf_write, &trace, &res);
  o.scale_dp = c->scale_dp;
  if (!rc && c->scale_dp) rc = sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res);
  if (!rc && c->retarget) rc = sc_replay(ctx, job, &cfg, c->retarget, NULL, NULL, &res);
  sc_test_buf html = {0};
  if (!rc) rc = sc_report_html_replay(ctx, job, &cfg, &o, &res, sc_test_buf_write, &html);
  free(html.p);
  free(trace.p);
  sc_job_free(job);
  return rc;
}

static void test_replay(void **state) {
  (void)state;
  replay_case k = {read_source("tests/fuzz/corpus-scw/kineto-small.scw"), 8, NULL};
  tally t = fail_each("replay (Kineto job)", family_replay, &k);
  assert_true(t.nomem > 0);
  free(k.scw.p);
  replay_case x = {read_source("tests/fuzz/corpus-scw/cpu-small.scw"), 4, NULL}; /* priced ops, DDP */
  t = fail_each("replay (ex-situ job, DDP)", family_replay, &x);
  assert_true(t.nomem > 0);
  free(x.scw.p);
  /* A re-target (shard.c) with ZB-V's list schedule and expert parallelism:
   * the tiny MoE at 4 layers, pp 2, ep 2 of dp 2, 2 micro-batches. */
  sc_replay_opts zo = {.replica_ranks = 1, .layers = 4, .scale_pp = 2, .scale_dp = 2, .scale_ep = 2,
                       .micro_batches = 2, .schedule = SC_SCHED_ZBV};
  replay_case z = {read_source("tests/fuzz/corpus-scw/cpu-tiny-moe.scw"), 0, &zo};
  t = fail_each("replay (re-target, ZB-V, EP)", family_replay, &z);
  assert_true(t.nomem > 0);
  free(z.scw.p);
}

/* ------------------------------------------------------------ sweep */

static int family_sweep(sc_ctx *ctx, void *ud) {
  (void)ud;
  sc_config base;
  sc_test_example(&base);
  int rc = sc_config_load_string(ctx, &base, "small.yaml", small_yaml, sizeof small_yaml - 1);
  if (rc) return rc;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.tp.n = 2, o.tp.v[0] = 1, o.tp.v[1] = 2;
  o.pp.n = 1, o.pp.v[0] = 2;
  o.vpp.n = 1, o.vpp.v[0] = 1;
  o.micro_batch.n = 1, o.micro_batch.v[0] = 1;
  o.sequence_parallel.n = 1, o.sequence_parallel.v[0] = 0;
  o.recompute.n = 1, o.recompute.v[0] = SC_RECOMPUTE_NONE;
  o.distributed_optimizer.n = 1, o.distributed_optimizer.v[0] = 0;
  o.pp_split.n = 1, o.pp_split.v[0] = SC_SWEEP_SPLIT_PLAIN;
  sc_sweep_result r;
  rc = sc_sweep_run(ctx, &base, &o, &r);
  sc_test_buf out = {0};
  if (!rc) rc = sc_sweep_format(&base, &r, 5, SC_FORMAT_TEXT, sc_test_buf_write, &out);
  free(out.p);
  if (!rc && r.simulated != 2) rc = SC_EINTERNAL;
  sc_sweep_result_free(ctx, &r);
  return rc;
}

static void test_sweep(void **state) {
  (void)state;
  tally t = fail_each("sweep", family_sweep, NULL);
  assert_true(t.nomem > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run),    cmocka_unit_test(test_validate), cmocka_unit_test(test_import),
      cmocka_unit_test(test_replay), cmocka_unit_test(test_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
