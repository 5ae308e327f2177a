/* test_html.c: the HTML reports (src/analysis/html.c) and their SVG writer
 * (src/analysis/svg.c): axis ticks, escaping, a run report that is one
 * self-contained page (balanced svg elements, nothing fetched, no script,
 * the same bytes twice, every figure it promises), a sweep report's Pareto
 * front, a validation report, a replay report (host time not called a
 * bubble), and sink errors passed through. The rendering
 * in a browser is tests/html/render.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/svg_int.h"
#include "stepcast/memory.h"
#include "stepcast/report.h"
#include "stepcast/sweep.h"
#include "stepcast/trace.h"
#include "stepcast/validate.h"
#include "sctest.h"

static size_t count(const char *s, const char *what) {
  size_t n = 0, len = strlen(what);
  for (const char *p = s; (p = strstr(p, what)); p += len) n++;
  return n;
}

static void test_ticks(void **state) {
  (void)state;
  double t[64];
  int n = sc__svg_ticks(0, 30.6, 0, 8, t, 64);
  assert_int_equal(n, 7); /* 0, 5, ..., 30 */
  assert_true(t[0] == 0 && fabs(t[6] - 30) < 1e-9 && fabs(t[1] - 5) < 1e-9);
  n = sc__svg_ticks(0.3, 130, 1, 0, t, 64); /* over two decades: powers of ten */
  assert_int_equal(n, 3);
  assert_true(fabs(t[0] - 1) < 1e-12 && fabs(t[2] - 100) < 1e-9);
  n = sc__svg_ticks(1.5, 60, 1, 0, t, 64); /* 2, 5, 10, 20, 50 */
  assert_int_equal(n, 5);
  assert_true(fabs(t[0] - 2) < 1e-12 && fabs(t[4] - 50) < 1e-9);
  assert_int_equal(sc__svg_ticks(1, 1, 0, 8, t, 64), 1); /* empty range: one tick */
  assert_int_equal(sc__svg_ticks(-1, 10, 1, 0, t, 64), 0); /* log of a negative range */
  char buf[32];
  assert_string_equal(sc__svg_num(2.5, buf, sizeof buf), "2.5");
  assert_string_equal(sc__svg_num(0, buf, sizeof buf), "0");
  assert_string_equal(sc__svg_num(3e11, buf, sizeof buf), "3e+11");
}

static void test_escape(void **state) {
  (void)state;
  sc_test_buf b = {0};
  sc_html h = {sc_test_buf_write, &b, 0};
  sc__html_text(&h, "<a & 'b'>\"");
  assert_int_equal(h.rc, 0);
  assert_string_equal(b.p, "&lt;a &amp; &#39;b&#39;&gt;&quot;");
  /* longer than the escaper's buffer: nothing lost */
  char big[3000];
  memset(big, '&', sizeof big - 1);
  big[sizeof big - 1] = 0;
  b.len = 0;
  sc__html_text(&h, big);
  assert_int_equal(b.len, 5 * (sizeof big - 1));
  free(b.p);
}

/* A page is self-contained: nothing it would fetch, no script, svg elements
 * balanced, one html element. */
static void check_page(const char *p) {
  assert_int_equal(strncmp(p, "<!DOCTYPE html>\n", 16), 0);
  assert_non_null(strstr(p, "</html>\n"));
  assert_null(strstr(p, "http:"));
  assert_null(strstr(p, "https:"));
  assert_null(strstr(p, "<script"));
  assert_null(strstr(p, "src="));
  assert_int_equal(count(p, "<svg "), count(p, "</svg>"));
  assert_int_equal(count(p, "<table"), count(p, "</table>"));
  assert_int_equal(count(p, "<tr>"), count(p, "</tr>"));
  assert_int_equal(count(p, "<html"), 1);
  assert_null(strstr(p, "nan"));
  assert_null(strstr(p, "inf\""));
}

static void test_run_report(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
  cfg.training.tokens = 1e10;
  cfg.cluster.price_per_gpu_hour = 2.5;
  cfg.cluster.mem_headroom = 0.1;
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_result res;
  assert_int_equal(sc_simulate(ctx, &cfg, NULL, NULL, &res), 0);
  sc_test_buf a = {0}, b = {0};
  assert_int_equal(sc_report_html_run(ctx, &cfg, &res, sc_test_buf_write, &a), 0);
  assert_int_equal(sc_report_html_run(ctx, &cfg, &res, sc_test_buf_write, &b), 0);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.p, b.p, a.len); /* deterministic */
  check_page(a.p);
  assert_int_equal(count(a.p, "<svg "), 4); /* timeline, breakdown, memory by stage, over time */
  /* the timeline shows the first, middle and last of the 4 stages */
  assert_non_null(strstr(a.p, "stage 0, rank"));
  assert_non_null(strstr(a.p, "stage 1, rank"));
  assert_non_null(strstr(a.p, "stage 3, rank"));
  assert_null(strstr(a.p, "stage 2, rank"));
  assert_non_null(strstr(a.p, "TP comm"));
  assert_non_null(strstr(a.p, "time in the step ("));
  assert_non_null(strstr(a.p, "memory per GPU (GiB)"));
  assert_non_null(strstr(a.p, "capacity 80 GiB"));
  assert_non_null(strstr(a.p, "usable 72.0 GiB"));
  assert_non_null(strstr(a.p, "time to train"));
  assert_non_null(strstr(a.p, "cost"));
  for (int c = 0; c < SC_CAT_COUNT; c++) assert_non_null(strstr(a.p, sc_category_key(c)));
  for (int f = 0; f < sc_config_field_count(); f++)
    assert_non_null(strstr(a.p, sc_config_field_name(f)));
  /* the memory bars: one group per stage with its total in the tooltip */
  assert_int_equal(count(a.p, "<g><title>stage "), 4);
  /* memory over the step: each shown stage's track peaks at its estimate */
  sc_memory_report mr;
  assert_int_equal(sc_memory_estimate(ctx, &cfg, &mr), 0);
  static const int shown[] = {0, 1, 3};
  for (int i = 0; i < 3; i++) {
    char want[64];
    snprintf(want, sizeof want, "stage %d, rank ", shown[i]);
    const char *q = strstr(a.p, "memory over the step");
    assert_non_null(q);
    q = strstr(q, want);
    assert_non_null(q);
    double peak = 0;
    assert_int_equal(sscanf(strstr(q, "peak ") + 5, "%lf", &peak), 1);
    assert_true(fabs(peak - mr.stages[shown[i]].total_bytes / 1073741824.0) < 0.006);
  }
  sc_memory_report_free(ctx, &mr);
  free(a.p);
  free(b.p);
  sc_ctx_free(ctx);
}

/* Fails the write after `left` bytes. */
typedef struct budget {
  size_t left;
} budget;

static int limited(void *ud, const char *s, size_t n) {
  budget *b = ud;
  (void)s;
  if (n > b->left) return SC_EWRITE;
  b->left -= n;
  return 0;
}

static void test_run_report_write_error(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
  cfg.model.layers = 8;
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_result res;
  assert_int_equal(sc_simulate(ctx, &cfg, NULL, NULL, &res), 0);
  for (size_t left = 0; left < 40000; left += 9973) {
    budget b = {left};
    assert_int_equal(sc_report_html_run(ctx, &cfg, &res, limited, &b), SC_EWRITE);
  }
  sc_ctx_free(ctx);
}

static void test_sweep_report(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config base;
  sc_test_example(&base);
  base.training.tokens = 1e9;
  /* rows best first: B (fastest), C (slower and larger than B: off the
   * front), A (slowest and smallest: on it) */
  sc_sweep_row rows[3];
  memset(rows, 0, sizeof rows);
  double mem[3] = {20, 30, 10}, step[3] = {3, 4, 5};
  for (int i = 0; i < 3; i++) {
    rows[i].index = i;
    rows[i].tp = rows[i].pp = rows[i].dp = rows[i].vpp = rows[i].cp = rows[i].micro_batch = 1;
    rows[i].memory_gib = mem[i];
    rows[i].step_time_s = step[i];
    rows[i].tokens_per_s = 1e6 / step[i];
    rows[i].breakdown_s[SC_CAT_COMPUTE] = step[i];
  }
  sc_sweep_result r;
  memset(&r, 0, sizeof r);
  r.is_root = 1;
  r.gpus = 8;
  r.candidates = 5;
  r.simulated = 3;
  r.excluded[0] = 2;
  r.rows = rows;
  r.capacity_gib = 80;
  r.usable_gib = 76;
  sc_test_buf b = {0};
  assert_int_equal(sc_report_html_sweep(ctx, &base, &r, 2, sc_test_buf_write, &b), 0);
  check_page(b.p);
  assert_int_equal(count(b.p, "<svg "), 1);
  assert_non_null(strstr(b.p, "memory limit 76.0 GiB"));
  assert_non_null(strstr(b.p, "peak memory per GPU (GiB)"));
  assert_non_null(strstr(b.p, "step time (s)"));
  /* the front's polyline joins A and B: two points */
  const char *pl = strstr(b.p, "<polyline");
  assert_non_null(pl);
  const char *pts = strstr(pl, "points=\"") + 8;
  size_t npts = 0;
  for (const char *q = pts; *q != '"'; q++) npts += *q == ',';
  assert_int_equal(npts, 2);
  assert_int_equal(count(b.p, "fill=\"#e15759\""), 2); /* front points */
  assert_int_equal(count(b.p, "fill=\"#4e79a7\""), 2); /* top 2 */
  assert_non_null(strstr(b.p, "days to train"));
  assert_int_equal(count(b.p, "<tr><td>"), 2); /* the top-2 table */
  free(b.p);
  sc_ctx_free(ctx);
}

static void test_validate_report(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_caseset *set;
  assert_int_equal(sc_caseset_new(ctx, &set), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/validation/cases/megatron_sc21_table1.csv", sc_test_source_dir());
  assert_int_equal(sc_caseset_load_file(set, path), 0);
  size_t n = sc_caseset_count(set);
  assert_true(n > 0);
  sc_case_result *res = calloc(n, sizeof *res);
  assert_non_null(res);
  sc_validate_options opt = {NULL, NULL, 0};
  assert_int_equal(sc_validate_run(ctx, set, &opt, res), 0);
  sc_test_buf b = {0};
  assert_int_equal(sc_report_html_validate(ctx, set, res, sc_test_buf_write, &b), 0);
  check_page(b.p);
  assert_int_equal(count(b.p, "<svg "), 1);
  assert_non_null(strstr(b.p, "measured step time (s)"));
  assert_non_null(strstr(b.p, "predicted step time (s)"));
  /* one point per simulated case, with its id in the tooltip */
  size_t ok = 0;
  for (size_t i = 0; i < n; i++) {
    ok += res[i].status == SC_OK;
    assert_non_null(strstr(b.p, sc_caseset_case(set, i)->id));
  }
  assert_int_equal(count(b.p, "<circle "), ok);
  free(b.p);
  free(res);
  sc_caseset_free(set);
  sc_ctx_free(ctx);
}

static void test_replay_report(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fuzz/corpus-scw/kineto-small.scw", sc_test_source_dir());
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static unsigned char img[1 << 20];
  size_t len = fread(img, 1, sizeof img, f);
  fclose(f);
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_job *job;
  assert_int_equal(sc_job_read(ctx, path, img, len, &job), 0);
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
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_replay_opts o = {.scale_dp = 8, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO}; /* re-targeted to dp 8 */
  sc_replay_result res;
  assert_int_equal(sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res), 0);
  sc_test_buf b = {0};
  assert_int_equal(sc_report_html_replay(ctx, job, &cfg, &o, &res, sc_test_buf_write, &b), 0);
  check_page(b.p);
  assert_int_equal(count(b.p, "<svg "), 1);
  assert_non_null(strstr(b.p, "rank 0</text>"));
  assert_non_null(strstr(b.p, "time in the replay (ms)"));
  assert_non_null(strstr(b.p, "GPU idle / host"));
  assert_non_null(strstr(b.p, "host / idle"));
  assert_null(strstr(b.p, ">pipeline bubble<")); /* no row or label says bubble */
  free(b.p);
  sc_job_free(job);
  sc_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ticks),          cmocka_unit_test(test_escape),
      cmocka_unit_test(test_run_report),     cmocka_unit_test(test_run_report_write_error),
      cmocka_unit_test(test_sweep_report),   cmocka_unit_test(test_validate_report),
      cmocka_unit_test(test_replay_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
