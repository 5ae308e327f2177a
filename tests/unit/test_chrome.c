/*
 * test_chrome.c: the Chrome-trace / Kineto document reader
 * (src/trace/chrome.c). Events as handed out (summary fields, kept members
 * in document order, args values as relative-depth tokens, offsets),
 * distributedInfo and top-level metadata, a bare array of events; the same
 * callbacks whatever the split of the input (every byte offset, byte by
 * byte); name_args skipped only where no later name can read them;
 * malformed JSON, the spec's format errors and callback errors with
 * their offsets; failed allocations.
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

#include "trace/chrome_int.h"

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

typedef sc_test_buf buf;

static void logf_(buf *b, const char *fmt, ...) {
  char tmp[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < sizeof tmp);
  sc_test_buf_write(b, tmp, (size_t)n);
}

/* ------------------------------------------------------------ a recorder */

/* Writes what the reader hands out as text, so that runs compare with a
 * string compare. */
typedef struct rec {
  buf log;
  int fail_at;  /* callback number that fails (1-based; 0 never) */
  int calls;
} rec;

static const char *type_name(sc_jtype t) {
  static const char *const n[] = {"?", "{", "}", "[", "]", "K", "S", "N", "T", "F", "0"};
  return n[t];
}

static void log_tokens(buf *b, const sc_jtok *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    /* The text is n bytes, not NUL-terminated (in place, it lies in the
     * input buffer). */
    logf_(b, "%s%d%s%.*s%s", type_name(t[i].type), t[i].depth, t[i].escaped ? "e" : "",
          t[i].s ? (int)t[i].n : 0, t[i].s ? t[i].s : "", i + 1 < n ? "," : "");
  }
}

static void log_str(buf *b, const char *what, sc_chrome_str s) {
  if (s.s) logf_(b, " %s=%.*s%s", what, (int)s.n, s.s, s.escaped ? "(e)" : "");
}

static int rec_event(void *ud, const sc_chrome_event *e) {
  rec *r = ud;
  r->calls++;
  buf *b = &r->log;
  logf_(b, "E@%llu", (unsigned long long)e->offset);
  if (e->ph) logf_(b, " ph=%c", e->ph);
  log_str(b, "cat", e->cat);
  log_str(b, "name", e->name);
  /* "~": a non-number came after it */
  if (e->has_ts) logf_(b, " ts=%lld%s", (long long)e->ts_ns, e->ts_shadowed ? "~" : "");
  if (e->has_dur) logf_(b, " dur=%lld%s", (long long)e->dur_ns, e->dur_shadowed ? "~" : "");
  if (e->pid) logf_(b, " pid=%.*s", (int)e->pid->n, e->pid->s);
  if (e->tid) logf_(b, " tid=%.*s", (int)e->tid->n, e->tid->s);
  for (size_t i = 0; i < e->nm; i++) {
    logf_(b, " m%d:", e->m[i].key);
    log_tokens(b, sc__chrome_value(e, &e->m[i]), e->m[i].count);
  }
  logf_(b, "\n");
  return r->calls == r->fail_at ? SC_ENOMEM : SC_OK;
}

static int rec_item(void *ud, const sc_chrome_item *it) {
  rec *r = ud;
  r->calls++;
  logf_(&r->log, "%s%d:", it->section == SC_CHROME_DIST ? "D" : "M", it->key);
  log_tokens(&r->log, it->tok, it->ntok);
  logf_(&r->log, "\n");
  return r->calls == r->fail_at ? SC_EINVAL : SC_OK;
}

static const char *const arg_keys[] = {"device", "Input Dims", "name", "x", NULL};
static const char *const dist_keys[] = {"rank", "pg_config", NULL};
static const char *const meta_keys[] = {"deviceProperties", "schemaVersion", NULL};

static const sc_chrome_spec spec_all = {
    .members = 1u << SC_CHROME_TID | 1u << SC_CHROME_PID | 1u << SC_CHROME_NAME | 1u << SC_CHROME_TS,
    .arg_keys = arg_keys,
    .dist_keys = dist_keys,
    .meta_keys = meta_keys,
    .not_object = "not an object",
    .ts_range = "ts out of range",
    .dur_range = "dur out of range",
    .event = rec_event,
    .item = rec_item};

/* Reads doc through spec, fed in pieces cut at cuts[0..ncuts), into r.
 * Returns the reader's code; *c (when given) is left to inspect, freed. */
static int read_doc(const sc_chrome_spec *spec, const char *doc, size_t len, const size_t *cuts, int ncuts,
                    rec *r, sc_chrome *out) {
  sc_chrome c;
  assert_int_equal(sc__chrome_init(&c, ctx, spec, r), 0);
  int rc = 0;
  size_t prev = 0;
  for (int k = 0; k <= ncuts && !rc; k++) {
    size_t end = k < ncuts ? cuts[k] : len;
    rc = sc__chrome_feed(&c, doc + prev, end - prev);
    prev = end;
  }
  if (!rc) rc = sc__chrome_end(&c);
  if (out) *out = c;
  sc__chrome_free(&c);
  return rc;
}

/* ------------------------------------------------------------ documents */

static const char doc_full[] =
    "{\"schemaVersion\": 1, \"traceName\": \"x\", \"stackFrames\": {\"1\": {\"name\": \"f\"}},\n"
    " \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100\"}],\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 8,"
    " \"pg_config\": [{\"pg_name\": \"0\", \"ranks\": [0, 1]}]},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\\u0041\", \"pid\": 0, \"tid\": 7,"
    " \"ts\": 1682725898094377.891, \"dur\": 12.5,"
    " \"args\": {\"External id\": 5, \"device\": 1, \"grid\": [1, 2], \"Input Dims\": [[2, 3], [], null, [[4]]],"
    " \"name\": {\"a\": [true, false, null]}}},\n"
    "  {\"name\": \"first\", \"ph\": \"i\", \"name\": \"second\", \"ts\": 5, \"ts\": \"x\", \"dur\": [1],"
    " \"tid\": \"thread 2\", \"cat\": 7},\n"
    "  [{\"ph\": \"X\"}], 5, \"s\",\n"
    "  {\"args\": {\"x\": 1.5e3, \"device\": \"0\"}, \"args\": {\"x\": -0}}, {}\n"
    " ],\n"
    " \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1700000000000000000\n"
    "}\n";

/* What rec logs for doc_full with spec_all. */
static const char doc_full_log[] =
    "M1:N01\n"
    "M0:[0,{1,K2id,N20,K2name,S2NVIDIA H100,}1,]0\n"
    "D0:N03\n"
    "D1:[0,{1,K2pg_name,S20,K2ranks,[2,N30,N31,]2,}1,]0\n"
    "E@272 ph=X cat=kernel name=gemm\\u0041(e) ts=1682725898094377891 dur=12500 pid=0 tid=7"
    " m2:S0egemm\\u0041 m5:N00 m6:N07 m3:N01682725898094377.891 m7:N01"
    " m8:[0,[1,N22,N23,]1,[1,]1,01null,[1,[2,N34,]2,]1,]0 m9:{0,K1a,[1,T2true,F2false,02null,]1,}0\n"
    "E@521 ph=i name=second ts=5000~ tid=thread 2 m2:S0first m2:S0second m3:N05 m3:S0x m6:S0thread 2\n"
    "E@657 m10:N01.5e3 m7:S00 m10:N0-0\n"
    "E@715\n";

static void test_chrome_events(void **state) {
  (void)state;
  rec r = {0};
  sc_chrome c;
  int rc = read_doc(&spec_all, doc_full, strlen(doc_full), NULL, 0, &r, &c);
  if (rc) fail_msg("rc %d: %s at %llu", rc, c.errmsg, (unsigned long long)c.err_off);
  assert_true(c.saw_events);
  if (strcmp(r.log.p, doc_full_log)) fail_msg("got:\n%s\nexpected:\n%s", r.log.p, doc_full_log);
  free(r.log.p);
}

/* The summary rules, one at a time. */
static void test_chrome_summary(void **state) {
  (void)state;
  static const struct {
    const char *doc, *log;
  } cases[] = {
      /* last string wins; non-strings and containers leave it */
      {"[{\"cat\": \"a\", \"cat\": 5, \"cat\": [\"b\"], \"ph\": \"\", \"ph\": \"Xy\", \"ph\": \"\"}]",
       "E@1 ph=X cat=a\n"},
      /* the last number is the time; a later non-number marks it shadowed */
      {"[{\"ts\": 1, \"ts\": null}, {\"ts\": null, \"ts\": 2.0005, \"dur\": -1.5}]",
       "E@1 ts=1000~ m3:N01 m3:00null\nE@24 ts=2001 dur=-1500 m3:00null m3:N02.0005\n"},
      /* a bare array: events at depth 1, no metadata */
      {"[{\"ph\": \"X\", \"args\": {\"device\": 2}}, [], {\"tid\": 1}]",
       "E@1 ph=X m7:N02\nE@41 tid=1 m6:N01\n"},
      /* escapes stay raw and flagged */
      {"[{\"name\": \"a\\\"b\", \"cat\": \"c\\\\d\"}]", "E@1 cat=c\\\\d(e) name=a\\\"b(e) m2:S0ea\\\"b\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rec r = {0};
    sc_chrome c;
    int rc = read_doc(&spec_all, cases[i].doc, strlen(cases[i].doc), NULL, 0, &r, &c);
    if (rc) fail_msg("case %zu: rc %d: %s", i, rc, c.errmsg);
    if (strcmp(r.log.p ? r.log.p : "", cases[i].log))
      fail_msg("case %zu: got:\n%s\nexpected:\n%s", i, r.log.p, cases[i].log);
    assert_true(c.saw_events);
    free(r.log.p);
  }
  /* Nothing registered: events still come with their summary; metadata
   * and args are skipped unread. */
  static const sc_chrome_spec bare = {.event = rec_event};
  rec r = {0};
  const char *doc = "{\"distributedInfo\": {\"rank\": 1}, \"traceEvents\": [{\"ph\": \"X\", \"tid\": 3, "
                    "\"args\": {\"device\": 1}}]}";
  assert_int_equal(read_doc(&bare, doc, strlen(doc), NULL, 0, &r, NULL), 0);
  assert_string_equal(r.log.p, "E@49 ph=X\n");
  free(r.log.p);
  /* No events array: not seen; traceEvents that is not an array neither. */
  static const char *const none[] = {"{\"schemaVersion\": 1}", "{\"traceEvents\": {\"a\": [1]}}",
                                     "{\"traceEvents\": 5}"};
  for (size_t i = 0; i < 3; i++) {
    rec q = {0};
    sc_chrome c;
    assert_int_equal(read_doc(&spec_all, none[i], strlen(none[i]), NULL, 0, &q, &c), 0);
    assert_false(c.saw_events);
    free(q.log.p);
  }
}

/* Every split point, pairs of split points on a shorter document, and byte
 * by byte give the same callbacks. */
static void test_chrome_split(void **state) {
  (void)state;
  size_t len = strlen(doc_full);
  for (size_t k = 0; k <= len; k++) {
    rec r = {0};
    assert_int_equal(read_doc(&spec_all, doc_full, len, &k, 1, &r, NULL), 0);
    if (strcmp(r.log.p, doc_full_log)) fail_msg("cut at %zu:\n%s", k, r.log.p);
    free(r.log.p);
  }
  size_t *cuts = malloc(len * sizeof *cuts);
  for (size_t k = 0; k < len; k++) cuts[k] = k + 1;
  rec r = {0};
  assert_int_equal(read_doc(&spec_all, doc_full, len, cuts, (int)len - 1, &r, NULL), 0);
  assert_string_equal(r.log.p, doc_full_log);
  free(r.log.p);
  free(cuts);
  const char *small = "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1.5,\"args\":{\"x\":[1,{\"y\":\"z\\n\"}]}}]}";
  size_t sl = strlen(small);
  rec ref = {0};
  assert_int_equal(read_doc(&spec_all, small, sl, NULL, 0, &ref, NULL), 0);
  assert_string_equal(ref.log.p, "E@16 ph=X ts=1500 m3:N01.5 m10:[0,N11,{1,K2y,S2ez\\n,}1,]0\n");
  for (size_t a = 1; a < sl; a++)
    for (size_t b = a; b < sl; b++) {
      size_t c2[2] = {a, b};
      rec q = {0};
      assert_int_equal(read_doc(&spec_all, small, sl, c2, 2, &q, NULL), 0);
      if (strcmp(q.log.p, ref.log.p)) fail_msg("cuts %zu %zu:\n%s", a, b, q.log.p);
      free(q.log.p);
    }
  free(ref.log.p);
}

/* Values longer than the kept text's first block move it: tokens kept
 * before the move must still read right. */
static void test_chrome_large_values(void **state) {
  (void)state;
  buf d = {0}, want = {0};
  logf_(&d, "[{\"ph\": \"X\", \"name\": \"");
  for (int i = 0; i < 3000; i++) logf_(&d, "n%d", i % 10);
  logf_(&d, "\", \"args\": {\"Input Dims\": [");
  for (int i = 0; i < 2000; i++) logf_(&d, "%s[%d, %d]", i ? ", " : "", i, i + 1);
  logf_(&d, "], \"device\": \"");
  for (int i = 0; i < 5000; i++) logf_(&d, "d");
  logf_(&d, "\"}}]");
  rec r = {0};
  static const sc_chrome_spec s = {.members = 1u << SC_CHROME_NAME, .arg_keys = arg_keys, .event = rec_event};
  assert_int_equal(read_doc(&s, d.p, d.len, NULL, 0, &r, NULL), 0);
  logf_(&want, "E@1 ph=X name=");
  for (int i = 0; i < 3000; i++) logf_(&want, "n%d", i % 10);
  logf_(&want, " m2:S0");
  for (int i = 0; i < 3000; i++) logf_(&want, "n%d", i % 10);
  logf_(&want, " m8:[0,");
  for (int i = 0; i < 2000; i++) logf_(&want, "[1,N2%d,N2%d,]1,", i, i + 1);
  logf_(&want, "]0 m7:S0");
  for (int i = 0; i < 5000; i++) logf_(&want, "d");
  logf_(&want, "\n");
  assert_string_equal(r.log.p, want.p);
  free(r.log.p);
  free(d.p);
  free(want.p);
}

/* Six like events, then the seventh "ph": "X", .., "tid": 7, `last`: the
 * same events, error and offset fed whole (the first six teach chrome.c
 * their gaps, values and shape) and byte by byte (the token path). ts9: the
 * six have timestamps of 9.0e18 ns (near the int64 ns bound).
 * Returns how many events (fed whole) were taken from a shape. */
static unsigned check_like_events(const char *last, int ts9, size_t i) {
  buf d = {0};
  logf_(&d, "[");
  for (int e = 0; e < 6; e++)
    logf_(&d, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1, \"tid\": 7, "
              "\"ts\": %s00000000000%03d.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, "
              "\"External id\": 10%02d}},\n", ts9 ? "90" : "17", 100 + 7 * e, 10 + e);
  /* white space after it: a shape is only compared with 128 bytes or more ahead in the buffer */
  logf_(&d, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1, \"tid\": 7, %s}%140s]", last, "");
  size_t *cuts = malloc(d.len * sizeof *cuts);
  for (size_t k = 0; k + 1 < d.len; k++) cuts[k] = k + 1;
  rec whole = {0}, bytes = {0};
  sc_chrome cw, cb;
  int rw = read_doc(&spec_all, d.p, d.len, NULL, 0, &whole, &cw);
  int rb = read_doc(&spec_all, d.p, d.len, cuts, (int)d.len - 1, &bytes, &cb);
  assert_int_equal(rw, rb);
  if (rw) {
    assert_true(cw.err_off == cb.err_off);
    assert_string_equal(cw.errmsg, cb.errmsg);
  }
  if (strcmp(whole.log.p ? whole.log.p : "", bytes.log.p ? bytes.log.p : ""))
    fail_msg("case %zu: whole:\n%s\nbyte by byte:\n%s", i, whole.log.p, bytes.log.p);
  free(whole.log.p);
  free(bytes.log.p);
  free(cuts);
  free(d.p);
  return cw.shape_hits;
}

/* The shape hits of case i were want (chrome.c takes shapes with SSE2 only). */
static void expect_hits(unsigned got, unsigned want, size_t i) {
#if defined(__SSE2__)
  if (got != want) fail_msg("case %zu: %u events from a shape, not %u", i, got, want);
#else
  (void)got, (void)want, (void)i;
#endif
}

/* Events read in place after events like them (chrome.c remembers the gaps
 * between members, the values after them, the layout of numbers whose
 * digits change, and whole events with their numbers' digits free) give
 * what the token path gives, whatever the last event changes: a value, a
 * number's layout, first or later digits, white space, a key; well formed
 * or not (same error, same offset). */
static void test_chrome_remembered(void **state) {
  (void)state;
  static const char *const last[] = {
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 1700000000000999.4567, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 17000000000009999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 2700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 0700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 1700000000000999.456e3, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 1700000000000999.45x, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 1700000000000999.4, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 9999999999999999.999, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.55, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5e0, \"args\": {\"device\": 0, \"x\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 01, \"x\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0.5, \"x\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 123}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": \"12\"}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\":  12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12 }",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"y\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099,}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 10990}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099.}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": -1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": true, \"x\": 12}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12}, \"ts\": 5",
  };
  for (size_t i = 0; i < sizeof last / sizeof last[0]; i++) check_like_events(last[i], 0, i);
  /* Digits a shape leaves free, and what it compares as it is: events 3-6
   * are taken from the shape of the second (a tag is learned when met
   * again), the last one too (hits 5) when only free digits change. */
  static const char *const shaped[] = {
      "\"ts\": 1700000000000999.457, \"dur\": 2.7, \"args\": {\"device\": 0, \"x\": 19, \"External id\": 1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 3.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 1, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 22, \"External id\": 2099}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 1e, \"External id\": 1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 1-, \"External id\": 1099}",
      "\"ts\": 17000000000009.9456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}}",
      "\"ts\": 0700000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, \"External id\": 1099}",
      "\"ts\": 1700000000000999.456, \"dur\": 0.5, \"args\": {\"device\": 0, \"x\": 02, \"External id\": 1099}",
  };
  static const unsigned hits[] = {5, 4, 4, 4, 4, 4, 4, 5, 4, 4};
  for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; i++)
    expect_hits(check_like_events(shaped[i], 0, 100 + i), hits[i], 100 + i);
  /* A shape's "ts" that no longer converts: the token path's error. */
  expect_hits(check_like_events("\"ts\": 9999999999999999.999, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, "
                                "\"External id\": 1099}", 1, 200), 4, 200);
  expect_hits(check_like_events("\"ts\": 9000000000000999.456, \"dur\": 2.5, \"args\": {\"device\": 0, \"x\": 12, "
                                "\"External id\": 1099}", 1, 201), 5, 201);
}

/* name_args: "Input Dims" read only for names starting "nccl:". An event
 * read whole in the buffer skips it after another name; the token path (an
 * event cut by the buffer end) and an event with a name after it keep it. */
static void test_chrome_name_args(void **state) {
  (void)state;
  sc_chrome_spec s = spec_all;
  s.name_args = 1u << 1; /* "Input Dims" */
  s.name_prefix = "nccl:";
  static const struct {
    const char *doc, *whole;
  } cases[] = {
      {"[{\"name\": \"aten::mm\", \"args\": {\"Input Dims\": [[2]], \"device\": 1}}]",
       "E@1 name=aten::mm m2:S0aten::mm m7:N01\n"},
      {"[{\"name\": \"nccl:all_reduce\", \"args\": {\"Input Dims\": [[2]], \"device\": 1}}]",
       "E@1 name=nccl:all_reduce m2:S0nccl:all_reduce m8:[0,[1,N22,]1,]0 m7:N01\n"},
      {"[{\"args\": {\"Input Dims\": [[2]]}, \"name\": \"aten::mm\"}]",
       "E@1 name=aten::mm m8:[0,[1,N22,]1,]0 m2:S0aten::mm\n"},
      {"[{\"name\": \"aten::mm\", \"args\": {\"Input Dims\": [[2]]}, \"name\": \"nccl:x\"}]",
       "E@1 name=nccl:x m2:S0aten::mm m8:[0,[1,N22,]1,]0 m2:S0nccl:x\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = strlen(cases[i].doc);
    rec r = {0};
    assert_int_equal(read_doc(&s, cases[i].doc, len, NULL, 0, &r, NULL), 0);
    if (strcmp(r.log.p, cases[i].whole)) fail_msg("case %zu: got:\n%s\nexpected:\n%s", i, r.log.p, cases[i].whole);
    free(r.log.p);
    /* Cut inside the args: the token path keeps everything (spec_all's log). */
    size_t cut = (size_t)(strstr(cases[i].doc, "Dims") - cases[i].doc);
    rec q = {0}, all = {0};
    assert_int_equal(read_doc(&s, cases[i].doc, len, &cut, 1, &q, NULL), 0);
    assert_int_equal(read_doc(&spec_all, cases[i].doc, len, NULL, 0, &all, NULL), 0);
    assert_string_equal(q.log.p, all.log.p);
    free(q.log.p);
    free(all.log.p);
  }
}

/* Errors: kind, code, offset and message, the same whatever the split. */
static void test_chrome_errors(void **state) {
  (void)state;
  static const struct {
    const char *doc;
    int rc, kind;
    uint64_t off;
    const char *msg;
  } cases[] = {
      {"{\"traceEvents\": [{\"ph\": }]}", SC_EINVAL, SC_CHROME_EJSON, 24, "unexpected '}'"},
      {"{\"traceEvents\": [{\"ph\": \"X\"}", SC_EINVAL, SC_CHROME_EJSON, 28, "unexpected end of input"},
      {"", SC_EINVAL, SC_CHROME_EJSON, 0, "empty input"},
      {"\"just a string\"", SC_EINVAL, SC_CHROME_EFORMAT, 0, "not an object"},
      {"  42 43", SC_EINVAL, SC_CHROME_EFORMAT, 2, "not an object"}, /* before the grammar error */
      {"[{\"ts\": 1e30}]", SC_EINVAL, SC_CHROME_EFORMAT, 8, "ts out of range"},
      {"[{\"dur\": 9223372036854775808}]", SC_EINVAL, SC_CHROME_EFORMAT, 9, "dur out of range"},
      {"[{\"ts\": 1e30, \"x\": ]", SC_EINVAL, SC_CHROME_EFORMAT, 8, "ts out of range"}, /* first error wins */
      {"[{\"ts\": 1}, {\"ts\": 2}]", SC_ENOMEM, SC_CHROME_ECALLBACK, 12, ""},            /* 2nd callback fails */
      {"{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": [1]}}", SC_EINVAL, SC_CHROME_ECALLBACK, 49, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = strlen(cases[i].doc);
    for (size_t cut = 0; cut <= len; cut++) {
      rec r = {0};
      r.fail_at = 2;
      sc_chrome c;
      int rc = read_doc(&spec_all, cases[i].doc, len, &cut, 1, &r, &c);
      if (rc != cases[i].rc || c.err_kind != cases[i].kind || c.err_off != cases[i].off ||
          strcmp(c.errmsg, cases[i].msg))
        fail_msg("case %zu cut %zu: rc %d kind %d off %llu \"%s\"", i, cut, rc, c.err_kind,
                 (unsigned long long)c.err_off, c.errmsg);
      free(r.log.p);
    }
  }
  /* Without the spec's messages the same input reads: a scalar document has
   * no events, a timestamp out of range is no timestamp. */
  static const sc_chrome_spec lax = {.event = rec_event};
  rec r = {0};
  assert_int_equal(read_doc(&lax, "\"s\"", 3, NULL, 0, &r, NULL), 0);
  assert_null(r.log.p);
  const char *range = "[{\"ts\": 5, \"ts\": 1e30, \"dur\": 2}]";
  assert_int_equal(read_doc(&lax, range, strlen(range), NULL, 0, &r, NULL), 0);
  assert_string_equal(r.log.p, "E@1 dur=2000\n");
  free(r.log.p);
  /* Errors are sticky. */
  sc_chrome c;
  rec q = {0};
  assert_int_equal(sc__chrome_init(&c, ctx, &spec_all, &q), 0);
  assert_int_equal(sc__chrome_feed(&c, "[1,,", 4), SC_EINVAL);
  assert_int_equal(sc__chrome_feed(&c, "2]", 2), SC_EINVAL);
  assert_int_equal(sc__chrome_end(&c), SC_EINVAL);
  assert_int_equal(c.err_off, 3);
  sc__chrome_free(&c);
  /* Too many keys for a list. */
  const char *many[SC_CHROME_MAX_KEYS + 2];
  for (int k = 0; k <= SC_CHROME_MAX_KEYS; k++) many[k] = "k";
  many[SC_CHROME_MAX_KEYS + 1] = NULL;
  sc_chrome_spec big = {.arg_keys = many};
  assert_int_equal(sc__chrome_init(&c, ctx, &big, NULL), SC_EINVAL);
  sc__chrome_free(&c); /* harmless after a failed init */
}

/* Any one allocation failing: SC_ENOMEM (a callback-kind error: no message
 * of its own, or the tokenizer's for a cut token), nothing leaks (ASan). */
static void test_chrome_alloc_failures(void **state) {
  (void)state;
  sc_test_heap b = {0};
  sc_ctx *c2;
  assert_int_equal(sc_test_ctx_on(&b, &c2), 0);
  size_t len = strlen(doc_full), cut = len / 2;
  long total = 0;
  for (long k = 0; k == 0 || k <= total; k++) {
    b.count = 0;
    b.fail_at = k;
    rec r = {0};
    sc_chrome c;
    assert_int_equal(sc__chrome_init(&c, c2, &spec_all, &r), 0);
    int rc = sc__chrome_feed(&c, doc_full, cut);
    if (!rc) rc = sc__chrome_feed(&c, doc_full + cut, len - cut);
    if (!rc) rc = sc__chrome_end(&c);
    sc__chrome_free(&c);
    free(r.log.p);
    if (k == 0) {
      assert_int_equal(rc, 0);
      total = b.count;
    } else if (rc != SC_ENOMEM) {
      fail_msg("allocation %ld of %ld: rc %d", k, total, rc);
    }
  }
  assert_true(total > 0);
  sc_ctx_free(c2);
  assert_int_equal(b.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chrome_events),       cmocka_unit_test(test_chrome_summary),
      cmocka_unit_test(test_chrome_split),        cmocka_unit_test(test_chrome_large_values),
      cmocka_unit_test(test_chrome_name_args),    cmocka_unit_test(test_chrome_errors),       cmocka_unit_test(test_chrome_alloc_failures),
      cmocka_unit_test(test_chrome_remembered),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
