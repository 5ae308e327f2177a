/*
 * test_json.c: the streaming JSON tokenizer (src/base/json.c): tokens of a
 * document whole, split at every byte and at every pair of cuts; exact int64
 * nanosecond timestamps from microsecond text; malformed JSON as an offset
 * and a message, whatever the split; the nesting limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sctest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_int.h"

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

static const char sample_json[] =
    "{\"traceEvents\": [ {\"ph\":\"X\", \"name\":\"a\\\"b\\u00e9\\ud83d\\ude00\", \"ts\": 1682725898094377.891,"
    " \"dur\":-1.5e-3, \"args\": {\"x\": [1, 2.5, -0, 0.25E+2, true, false, null], \"y\": {}}},"
    "\n  [] , \"\" , 1234567890123456789 ], \"z\":\t\"tail\\\\\" }";

typedef struct rec {
  int type, depth;
  uint64_t offset;
  char text[64];
} rec;

/* Tokenizes data fed in the given pieces; returns the token count or -1. */
static int tokenize(const char *data, size_t len, const size_t *cuts, int ncuts, rec *out, int max) {
  sc_json j;
  sc__json_init(&j, ctx);
  int n = 0, rc = 0;
  size_t prev = 0;
  for (int c = 0; c <= ncuts && rc >= 0; c++) {
    size_t end = c < ncuts ? cuts[c] : len;
    sc__json_feed(&j, data + prev, end - prev);
    sc_jtok t;
    while ((rc = sc__json_next(&j, &t)) == 1 && n < max) {
      memset(&out[n], 0, sizeof out[n]);
      out[n].type = t.type;
      out[n].depth = t.depth;
      out[n].offset = t.offset;
      size_t k = t.n < sizeof out[n].text - 1 ? t.n : sizeof out[n].text - 1;
      memcpy(out[n].text, t.s ? t.s : "", k);
      out[n].text[k] = 0;
      n++;
    }
    prev = end;
  }
  if (rc >= 0) {
    sc__json_end(&j);
    sc__json_feed(&j, "", 0);
    sc_jtok t;
    while ((rc = sc__json_next(&j, &t)) == 1 && n < max) {
      memset(&out[n], 0, sizeof out[n]);
      out[n].type = t.type;
      out[n].depth = t.depth;
      out[n].offset = t.offset;
      size_t k = t.n < sizeof out[n].text - 1 ? t.n : sizeof out[n].text - 1;
      memcpy(out[n].text, t.s ? t.s : "", k);
      out[n].text[k] = 0;
      n++;
    }
  }
  sc__json_free(&j);
  return rc < 0 ? -1 : n;
}

static void test_tokens_whole(void **state) {
  (void)state;
  rec t[128];
  int n = tokenize(sample_json, strlen(sample_json), NULL, 0, t, 128);
  assert_true(n > 20);
  assert_int_equal(t[0].type, SC_JT_OBJ_BEGIN);
  assert_int_equal(t[0].depth, 0);
  assert_int_equal(t[1].type, SC_JT_KEY);
  assert_string_equal(t[1].text, "traceEvents");
  assert_int_equal(t[2].type, SC_JT_ARR_BEGIN);
  assert_int_equal(t[3].type, SC_JT_OBJ_BEGIN);
  assert_int_equal(t[3].depth, 2);
  /* The escaped name stays raw in the token and decodes to UTF-8. */
  assert_string_equal(t[7].text, "a\\\"b\\u00e9\\ud83d\\ude00");
  char dec[32];
  size_t dn = sc__json_unescape(t[7].text, strlen(t[7].text), dec, sizeof dec);
  assert_int_equal(dn, 2 + 1 + 2 + 4);
  assert_memory_equal(dec, "a\"b\xc3\xa9\xf0\x9f\x98\x80", 9);
  assert_string_equal(t[9].text, "1682725898094377.891");
  assert_int_equal(t[9].type, SC_JT_NUMBER);
  assert_int_equal(t[n - 1].type, SC_JT_OBJ_END);
  assert_int_equal(t[n - 1].depth, 0);
  assert_string_equal(t[n - 2].text, "tail\\\\");
}

/* Every split point and byte-by-byte feeding give the same tokens. */
static void test_tokens_split(void **state) {
  (void)state;
  size_t len = strlen(sample_json);
  rec ref[128], got[128];
  int n = tokenize(sample_json, len, NULL, 0, ref, 128);
  for (size_t k = 1; k < len; k++) {
    int m = tokenize(sample_json, len, &k, 1, got, 128);
    assert_int_equal(m, n);
    assert_memory_equal(got, ref, sizeof(rec) * (size_t)n);
  }
  size_t cuts[512];
  for (size_t k = 0; k + 1 < len; k++) cuts[k] = k + 1;
  int m = tokenize(sample_json, len, cuts, (int)len - 1, got, 128);
  assert_int_equal(m, n);
  assert_memory_equal(got, ref, sizeof(rec) * (size_t)n);
  /* Two cuts anywhere (every pair on a shorter document). */
  const char *small = "{\"ab\":[12.5e1,\"c\\nd\",true],\"e\":null}";
  size_t sl = strlen(small);
  n = tokenize(small, sl, NULL, 0, ref, 128);
  for (size_t a = 1; a < sl; a++)
    for (size_t b = a; b < sl; b++) {
      size_t c2[2] = {a, b};
      m = tokenize(small, sl, c2, 2, got, 128);
      assert_int_equal(m, n);
      assert_memory_equal(got, ref, sizeof(rec) * (size_t)n);
    }
}

static void test_timestamps(void **state) {
  (void)state;
  int64_t v;
  assert_int_equal(sc__json_us_to_ns("1682725898094377.891", 20, &v), 0);
  assert_true(v == INT64_C(1682725898094377891));
  assert_int_equal(sc__json_us_to_ns("4458676416788.066", 17, &v), 0);
  assert_true(v == INT64_C(4458676416788066));
  assert_int_equal(sc__json_us_to_ns("1682725898236567", 16, &v), 0);
  assert_true(v == INT64_C(1682725898236567000));
  assert_int_equal(sc__json_us_to_ns("68.0", 4, &v), 0);
  assert_true(v == 68000);
  assert_int_equal(sc__json_us_to_ns("1.5e3", 5, &v), 0);
  assert_true(v == 1500000);
  assert_int_equal(sc__json_us_to_ns("-1.5", 4, &v), 0);
  assert_true(v == -1500);
  assert_int_equal(sc__json_us_to_ns("0.0005", 6, &v), 0); /* half away from zero */
  assert_true(v == 1);
  assert_int_equal(sc__json_us_to_ns("0.00049", 7, &v), 0);
  assert_true(v == 0);
  assert_int_equal(sc__json_us_to_ns("2.5e-4", 6, &v), 0);
  assert_true(v == 0);
  assert_int_equal(sc__json_us_to_ns("9223372036854775.807", 20, &v), 0);
  assert_true(v == INT64_MAX);
  assert_int_not_equal(sc__json_us_to_ns("9223372036854775.808", 20, &v), 0);
  assert_int_not_equal(sc__json_us_to_ns("1e400", 5, &v), 0);
  assert_int_not_equal(sc__json_us_to_ns("abc", 3, &v), 0);
  assert_int_equal(sc__json_int("68.0", 4, &v), 0);
  assert_true(v == 68);
  assert_int_not_equal(sc__json_int("68.5", 4, &v), 0);
  assert_int_equal(sc__json_int("12e2", 4, &v), 0);
  assert_true(v == 1200);
  assert_int_equal(sc__json_int("-9223372036854775807", 20, &v), 0);
  assert_true(v == -INT64_MAX);
  /* At the edges of the fast path (at most 19 digits once scaled). */
  assert_int_not_equal(sc__json_int("9223372036854775808", 19, &v), 0);
  assert_int_not_equal(sc__json_us_to_ns("9999999999999999.999", 20, &v), 0);
  assert_int_equal(sc__json_us_to_ns("1700000000000004.22", 19, &v), 0);
  assert_true(v == INT64_C(1700000000000004220));
  assert_int_equal(sc__json_us_to_ns("0.1234", 6, &v), 0); /* a 4th digit: rounded */
  assert_true(v == 123);
  assert_int_equal(sc__json_us_to_ns("-0.0", 4, &v), 0);
  assert_true(v == 0);
  assert_int_equal(sc__json_us_to_ns("1.", 2, &v), 0); /* not a token; accepted as before */
  assert_true(v == 1000);
  assert_int_not_equal(sc__json_us_to_ns("-", 1, &v), 0);
}

/* The in-place scanner's timestamps (sc__json_number_scan, then
 * sc__json_us_fast where it takes the number) against sc__json_us_to_ns:
 * every number of up to 17 integer and 4 fraction digits of a few digit
 * patterns, signed and not, with and without an exponent. */
static void test_timestamps_fast(void **state) {
  (void)state;
  static const char *const digits[] = {"0", "9", "1234567890123456789", "9999999999999999999",
                                       "1700000000000123456", "1000000000000000000"};
  char text[64];
  int taken = 0;
  for (size_t d = 0; d < sizeof digits / sizeof digits[0]; d++)
    for (int neg = 0; neg < 2; neg++)
      for (size_t k = 1; k <= 17; k++)
        for (size_t f = 0; f <= 4; f++)
          for (int e = 0; e < 2; e++) {
            const char *src = digits[d];
            size_t n = 0;
            if (neg) text[n++] = '-';
            for (size_t i = 0; i < k; i++) text[n++] = src[i % strlen(src)];
            if (k > 1 && text[neg] == '0') text[neg] = '1'; /* no leading zero */
            if (f) {
              text[n++] = '.';
              for (size_t i = 0; i < f; i++) text[n++] = src[(k + i) % strlen(src)];
            }
            if (e) text[n++] = 'e', text[n++] = '1';
            size_t len = n;
            memset(text + n, ',', sizeof text - n); /* what follows the number */
            sc_jnum num = {0, 0, 0, 0, 0};
            assert_int_equal(sc__json_number_scan((const unsigned char *)text, sizeof text, &num), (ptrdiff_t)len);
            int64_t fast = 0, exact = 0;
            int ok = sc__json_us_to_ns(text, len, &exact) == 0;
            if (sc__json_us_fast((const unsigned char *)text, sizeof text, &num, &fast)) {
              assert_true(ok);
              assert_true(fast == exact);
              taken++;
            }
          }
  assert_true(taken > 0);
}

static void test_json_errors(void **state) {
  (void)state;
  static const struct {
    const char *doc;
    uint64_t offset;
    const char *msg;
  } cases[] = {
      {"{\"a\":1,}", 7, "unexpected '}'"},
      {"[1 2]", 3, "unexpected value"},
      {"{\"a\" 1}", 5, "unexpected value"},
      {"{\"a\":\"abc", 5, "unexpected end of input inside a string"},
      {"[tru", 1, "unexpected end of input inside a token"},
      {"[trux]", 1, "invalid literal"},
      {"[01]", 1, "invalid number"},
      {"[1.e5]", 1, "invalid number"},
      {"[-]", 1, "invalid number"},
      {"[1]]", 3, "data after the top-level value"},
      {"", 0, "empty input"},
      {"   ", 3, "empty input"},
      {"{\"a\":\"\x01\"}", 5, "invalid string (control character or bad escape)"},
      {"[\"\\x\"]", 1, "invalid string (control character or bad escape)"},
      {"[\"\\u12g4\"]", 1, "invalid string (control character or bad escape)"},
      {"{\"a\":1", 6, "unexpected end of input"},
      {"[1,]", 3, "unexpected ']'"},
      {"{1:2}", 1, "unexpected value"},
      {"[1}", 2, "unexpected '}'"},
      {"[1:2]", 2, "unexpected ':'"},
      {"@", 0, "unexpected character"},
      /* The eight-bytes-at-a-time string scan and the fast number scan
       * leave these to the exact scanners, which word the error. */
      {"[\"abcdefghijklmnop\x1fq\"]", 1, "invalid string (control character or bad escape)"},
      {"[\"abcdefghijklmnop\\q\"]", 1, "invalid string (control character or bad escape)"},
      {"[0123]", 1, "invalid number"},
      {"[1.5.3]", 1, "invalid number"},
      {"[1e5e]", 1, "invalid number"},
      {"[-01]", 1, "invalid number"},
      {"[12+]", 1, "invalid number"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* Same error whether whole or split at every byte. */
    size_t len = strlen(cases[i].doc);
    for (size_t cut = 0; cut <= len; cut++) {
      sc_json j;
      sc__json_init(&j, ctx);
      sc_jtok t;
      int rc = 0;
      sc__json_feed(&j, cases[i].doc, cut);
      while ((rc = sc__json_next(&j, &t)) == 1) {}
      if (rc == 0) {
        sc__json_feed(&j, cases[i].doc + cut, len - cut);
        while ((rc = sc__json_next(&j, &t)) == 1) {}
      }
      if (rc == 0) {
        sc__json_end(&j);
        sc__json_feed(&j, "", 0);
        while ((rc = sc__json_next(&j, &t)) == 1) {}
      }
      if (rc != SC_EINVAL || j.err_off != cases[i].offset || strcmp(j.errmsg, cases[i].msg))
        fail_msg("case %zu (%s) cut %zu: rc %d offset %llu \"%s\"", i, cases[i].doc, cut, rc,
                 (unsigned long long)j.err_off, j.errmsg);
      sc__json_free(&j);
    }
  }
  /* Nesting beyond the limit. */
  char deep[SC_JSON_MAX_DEPTH + 2];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = 0;
  sc_json j;
  sc__json_init(&j, ctx);
  sc__json_feed(&j, deep, strlen(deep));
  sc_jtok t;
  int rc;
  while ((rc = sc__json_next(&j, &t)) == 1) {}
  assert_int_equal(rc, SC_EINVAL);
  assert_string_equal(j.errmsg, "nesting too deep");
  assert_int_equal(j.err_off, SC_JSON_MAX_DEPTH);
  sc__json_free(&j);
}

/* Pulls tokens of doc (one buffer) up to the first KEY and tries to skip
 * its value; returns what sc__json_skip_value returned, *next the type of
 * the token after (or the error code). */
static int skip_after_first_key(const char *doc, int *next, sc_json *j) {
  sc__json_init(j, ctx);
  sc__json_feed(j, doc, strlen(doc));
  sc__json_end(j);
  sc_jtok t;
  while (sc__json_next(j, &t) == 1 && t.type != SC_JT_KEY) {}
  int skipped = sc__json_skip_value(j);
  int rc = sc__json_next(j, &t);
  *next = rc == 1 ? (int)t.type : rc;
  return skipped;
}

static void test_skip_value(void **state) {
  (void)state;
  sc_json j;
  int next;
  sc_jtok t;
  /* Whole and well formed: skipped, the next token is the next key. */
  assert_int_equal(skip_after_first_key("{\"a\" : [1, {\"b\": \"x\\\"y\", \"c\": [true, false, null, {}, []]},"
                                        " -2.5e3, \"a long string of more than eight bytes\"], \"z\": 1}",
                                        &next, &j),
                   1);
  assert_int_equal(next, SC_JT_KEY);
  assert_int_equal(sc__json_next(&j, &t), 1);
  assert_int_equal(t.type, SC_JT_NUMBER);
  sc__json_free(&j);
  /* Malformed, cut or at the end of the buffer: nothing consumed, and the
   * token path reports the error as before. */
  static const char *const bad[] = {"{\"a\": [1,], \"z\": 1}", "{\"a\": {\"b\" 1}}", "{\"a\": [01]}",
                                    "{\"a\": \"\x01\"}", "{\"a\": [1, 2", "{\"a\": 12", "{\"a\": tru}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(skip_after_first_key(bad[i], &next, &j), 0);
    int rc;
    while ((rc = sc__json_next(&j, &t)) == 1) {}
    assert_int_equal(rc, SC_EINVAL);
    sc__json_free(&j);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tokens_whole),
      cmocka_unit_test(test_tokens_split),
      cmocka_unit_test(test_timestamps),
      cmocka_unit_test(test_timestamps_fast),
      cmocka_unit_test(test_json_errors),
      cmocka_unit_test(test_skip_value),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
