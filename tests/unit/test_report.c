/* test_report.c: the result formats: JSON carries the documented keys and
 * parses as one object, CSV header and row have the same arity, the text
 * summary names step time and every breakdown category. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
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
  sc_config_default(&cfg);
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
      cmocka_unit_test(test_category_names),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
