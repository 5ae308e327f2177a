/* test_report.c: the result formats: JSON carries the documented keys and
 * parses as one object, CSV header and row have the same arity, the text
 * summary names step time and every breakdown category; memory_breakdown,
 * headroom, time to train and cost; the critical path. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "sctest.h"

typedef struct sink {
  char buf[8192];
  size_t len;
} sink;

static int to_sink(void *ud, const char *b, size_t n) {
  sink *s = ud;
  if (s->len + n >= sizeof s->buf) return SC_EWRITE;
  memcpy(s->buf + s->len, b, n);
  s->len += n;
  s->buf[s->len] = 0;
  return 0;
}

static sc_config cfg;
static sc_result res;

static int setup(void **state) {
  (void)state;
  sc_ctx *ctx;
  if (sc_test_ctx_new(&ctx)) return -1;
  sc_test_example(&cfg);
  int rc = sc_config_resolve(ctx, &cfg) || sc_simulate(ctx, &cfg, NULL, NULL, &res);
  sc_ctx_free(ctx);
  return rc;
}

static void test_json(void **state) {
  (void)state;
  sink s = {{0}, 0};
  assert_int_equal(sc_result_format(&cfg, &res, SC_FORMAT_JSON, to_sink, &s), 0);
  static const char *const keys[] = {"\"step_time_s\":", "\"tokens_per_s\":",
                                     "\"tflops_per_gpu\":", "\"mfu\":", "\"breakdown\":{",
                                     "\"memory_gib\":"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) assert_non_null(strstr(s.buf, keys[i]));
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", sc_category_key(c));
    assert_non_null(strstr(s.buf, k));
  }
  assert_int_equal(s.buf[0], '{');
  assert_int_equal(s.buf[s.len - 2], '}');
  int depth = 0;
  for (size_t i = 0; i < s.len; i++) depth += (s.buf[i] == '{') - (s.buf[i] == '}');
  assert_int_equal(depth, 0);
  double step = 0;
  assert_int_equal(sscanf(s.buf, "{\"step_time_s\":%lf", &step), 1);
  assert_true(fabs(step - res.step_time_s) < 1e-6 * res.step_time_s);
}

static void test_csv(void **state) {
  (void)state;
  sink s = {{0}, 0};
  assert_int_equal(sc_result_format(&cfg, &res, SC_FORMAT_CSV, to_sink, &s), 0);
  char *nl = strchr(s.buf, '\n');
  assert_non_null(nl);
  size_t header_commas = 0, row_commas = 0;
  for (char *p = s.buf; p < nl; p++) header_commas += *p == ',';
  for (char *p = nl + 1; *p && *p != '\n'; p++) row_commas += *p == ',';
  assert_int_equal(header_commas, row_commas);
  assert_true(header_commas >= 6 + SC_CAT_COUNT);
}

static void test_text(void **state) {
  (void)state;
  sink s = {{0}, 0};
  assert_int_equal(sc_result_format(&cfg, &res, SC_FORMAT_TEXT, to_sink, &s), 0);
  assert_non_null(strstr(s.buf, "step time"));
  assert_non_null(strstr(s.buf, "MFU"));
  /* every category, but context / expert parallel ones only when used */
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    int shown = strstr(s.buf, sc_category_label(c)) != NULL;
    assert_int_equal(shown, (c != SC_CAT_CP && c != SC_CAT_EP) || res.breakdown_s[c] != 0);
  }
  sink t = {{0}, 0};
  sc_result cp = res;
  cp.breakdown_s[SC_CAT_CP] = 0.5;
  assert_int_equal(sc_result_format(&cfg, &cp, SC_FORMAT_TEXT, to_sink, &t), 0);
  assert_non_null(strstr(t.buf, "exposed CP comm"));
}

static int failing(void *ud, const char *b, size_t n) {
  (void)ud, (void)b, (void)n;
  return SC_EWRITE;
}

static void test_write_error(void **state) {
  (void)state;
  assert_int_equal(sc_result_format(&cfg, &res, SC_FORMAT_TEXT, failing, NULL), SC_EWRITE);
  assert_int_equal(sc_result_format(&cfg, &res, SC_FORMAT_JSON, failing, NULL), SC_EWRITE);
}

/* memory_breakdown: every stage, terms adding up to the stage's peak, the
 * largest peak being memory_gib; time to train from tokens and price. */
static void test_memory_and_cost(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config c = cfg;
  c.training.tokens = 3e11;
  c.cluster.price_per_gpu_hour = 2;
  c.cluster.mem_headroom = 0.05;
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &c, NULL, NULL, &r), 0);
  assert_true(fabs(r.memory_usable_gib - 76.0) < 1e-9);
  assert_true(fabs(r.time_to_train_days - 3e11 / r.tokens_per_s / 86400) < 1e-9);
  assert_true(fabs(r.gpu_hours - 1024 * 3e11 / r.tokens_per_s / 3600) < 1e-6);
  assert_true(fabs(r.cost - 2 * r.gpu_hours) < 1e-6);
  sc_test_buf b = {0};
  assert_int_equal(sc_result_format(&c, &r, SC_FORMAT_JSON, sc_test_buf_write, &b), 0);
  const char *p = strstr(b.p, "\"memory_breakdown\":[");
  assert_non_null(p);
  const char *end = strchr(p, ']');
  double peak_max = 0;
  int stages = 0;
  while ((p = strstr(p, "{\"stage\":")) && p < end) {
    double v[9];
    int stage;
    int n = sscanf(p,
                   "{\"stage\":%d,\"weights_gib\":%lf,\"gradients_gib\":%lf,"
                   "\"optimizer_states_gib\":%lf,\"activations_gib\":%lf,\"workspace_gib\":%lf,"
                   "\"comm_buffers_gib\":%lf,\"framework_gib\":%lf,\"fragmentation_gib\":%lf,"
                   "\"peak_gib\":%lf}",
                   &stage, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]);
    assert_int_equal(n, 10);
    assert_int_equal(stage, stages);
    double sum = 0;
    for (int i = 0; i < 8; i++) sum += v[i];
    assert_true(fabs(sum - v[8]) < 1e-4 * v[8]); /* %.6g rounding */
    if (v[8] > peak_max) peak_max = v[8];
    stages++;
    p++;
  }
  assert_int_equal(stages, c.parallel.pp);
  assert_true(fabs(peak_max - r.memory_gib) < 1e-4 * r.memory_gib);
  assert_non_null(strstr(b.p, "\"oom\":false,\"memory_usable_gib\":76,"));
  assert_non_null(strstr(b.p, "\"time_to_train_days\":"));
  assert_null(strstr(b.p, "\"cost\":null"));
  free(b.p);
  /* a headroom above the peak: out of memory */
  c.cluster.mem_headroom = 80 - r.memory_gib + 0.5;
  assert_int_equal(sc_simulate(ctx, &c, NULL, NULL, &r), 0);
  assert_int_equal(r.oom, 1);
  /* no tokens: no time to train, nulls in the JSON */
  c.training.tokens = 0;
  c.cluster.mem_headroom = 0;
  assert_int_equal(sc_simulate(ctx, &c, NULL, NULL, &r), 0);
  assert_true(r.time_to_train_days == 0 && r.cost == 0 && r.oom == 0);
  sc_test_buf j = {0};
  assert_int_equal(sc_result_format(&c, &r, SC_FORMAT_JSON, sc_test_buf_write, &j), 0);
  assert_non_null(strstr(j.p, "\"time_to_train_days\":null"));
  free(j.p);
  sc_ctx_free(ctx);
}

static int discard(void *ud, const char *b, size_t n) {
  (void)ud, (void)b, (void)n;
  return 0;
}

/* The critical path adds up to the step, the same split with the workload
 * merged (no trace) and op by op (traced); its largest part is first. */
static void test_critical_path(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config c;
  assert_int_equal(sc_test_small_gpt(ctx, &c), 0);
  assert_int_equal(sc_config_resolve(ctx, &c), 0);
  sc_result merged, traced;
  assert_int_equal(sc_simulate(ctx, &c, NULL, NULL, &merged), 0);
  assert_int_equal(sc_simulate(ctx, &c, discard, NULL, &traced), 0);
  const sc_result *rs[2] = {&merged, &traced};
  for (int k = 0; k < 2; k++) {
    const sc_result *r = rs[k];
    assert_true(r->critical_path_ops > 0);
    double sum = 0;
    for (int i = 0; i < SC_CAT_COUNT; i++) {
      assert_true(r->critical_path_s[i] >= 0);
      sum += r->critical_path_s[i];
    }
    assert_true(fabs(sum - r->step_time_s) < 1e-9 * r->step_time_s);
    assert_int_equal(r->critical_path_s[SC_CAT_BUBBLE], 0); /* the path never idles */
    assert_non_null(r->critical_path_top[0].stream);
    for (int i = 1; i < SC_CPATH_TOP && r->critical_path_top[i].stream; i++)
      assert_true(r->critical_path_top[i].seconds <= r->critical_path_top[i - 1].seconds);
  }
  assert_true(traced.critical_path_ops > merged.critical_path_ops);
  for (int i = 0; i < SC_CAT_COUNT; i++)
    assert_true(fabs(merged.critical_path_s[i] - traced.critical_path_s[i]) <
                1e-9 * merged.step_time_s);
  sc_test_buf b = {0};
  assert_int_equal(sc_result_format(&c, &merged, SC_FORMAT_JSON, sc_test_buf_write, &b), 0);
  assert_non_null(strstr(b.p, "\"critical_path\":{\"ops\":"));
  free(b.p);
  sc_ctx_free(ctx);
}

/* A result's JSON reads back to the same numbers; a diff of a result with
 * itself changes nothing; malformed and foreign JSON are errors. */
static void test_read_back_and_diff(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_test_buf b = {0};
  assert_int_equal(sc_result_format(&cfg, &res, SC_FORMAT_JSON, sc_test_buf_write, &b), 0);
  sc_result back;
  assert_int_equal(sc_result_read_json(ctx, "r.json", b.p, b.len, &back), 0);
  assert_true(fabs(back.step_time_s - res.step_time_s) < 1e-8 * res.step_time_s);
  assert_true(fabs(back.mfu - res.mfu) < 1e-5);
  assert_true(fabs(back.memory_gib - res.memory_gib) < 1e-4);
  assert_int_equal(back.num_gpus, res.num_gpus);
  for (int c = 0; c < SC_CAT_COUNT; c++)
    assert_true(fabs(back.breakdown_s[c] - res.breakdown_s[c]) <= 1e-8 * res.step_time_s);
  sc_test_buf d = {0};
  assert_int_equal(sc_result_diff_format(&res, &back, "a", "b", SC_FORMAT_JSON, sc_test_buf_write, &d), 0);
  assert_non_null(strstr(d.p, "\"step_time_s\":{\"a\":"));
  assert_non_null(strstr(d.p, "\"breakdown\":{\"compute\":"));
  int depth = 0;
  for (size_t i = 0; i < d.len; i++) depth += (d.p[i] == '{') - (d.p[i] == '}');
  assert_int_equal(depth, 0);
  free(d.p);
  static const char *const bad[] = {"", "[1]", "{\"mfu\": 0.3}", "{\"step_time_s\": 1,", "{\"step_time_s\": }"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(sc_result_read_json(ctx, "bad.json", bad[i], strlen(bad[i]), &back), SC_EINVAL);
    assert_int_equal(strncmp(sc_errmsg(ctx), "bad.json:1: ", 12), 0);
  }
  free(b.p);
  sc_ctx_free(ctx);
}

/* The bubble's split: the schedule's share does not depend on the number of
 * micro-batches, the stage imbalance's grows with it (the last stage's LM
 * head makes it slower than the others on every micro-batch). */
static void test_bubble_split(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config c = cfg;
  c.training.global_batch = 256;
  assert_int_equal(sc_config_resolve(ctx, &c), 0);
  sc_result small;
  assert_int_equal(sc_simulate(ctx, &c, NULL, NULL, &small), 0);
  const sc_result *rs[2] = {&small, &res};
  for (int k = 0; k < 2; k++) {
    assert_true(rs[k]->bubble_imbalance_s > 0);
    assert_true(rs[k]->bubble_imbalance_s < rs[k]->breakdown_s[SC_CAT_BUBBLE]);
  }
  double sched_small = small.breakdown_s[SC_CAT_BUBBLE] - small.bubble_imbalance_s;
  double sched = res.breakdown_s[SC_CAT_BUBBLE] - res.bubble_imbalance_s;
  assert_true(fabs(sched - sched_small) < 0.01 * sched);
  assert_true(res.bubble_imbalance_s > 4 * small.bubble_imbalance_s); /* 192 vs 32 micro-batches */
  sc_ctx_free(ctx);
}

static void test_category_names(void **state) {
  (void)state;
  assert_string_equal(sc_category_key(SC_CAT_TP), "tp_comm");
  assert_string_equal(sc_category_key(-1), "?");
  assert_string_equal(sc_strerror(SC_EINVAL), "invalid input");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json),       cmocka_unit_test(test_csv),
      cmocka_unit_test(test_text),       cmocka_unit_test(test_write_error),
      cmocka_unit_test(test_category_names), cmocka_unit_test(test_memory_and_cost),
      cmocka_unit_test(test_critical_path), cmocka_unit_test(test_read_back_and_diff),
      cmocka_unit_test(test_bubble_split),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
