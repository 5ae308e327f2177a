/*
 * fuzz_chrome.c: differential libFuzzer harness for the Chrome-trace reader
 * (src/trace/chrome.c): the input is read once fed whole (events that lie in
 * the buffer take the in-place path, event_fast) and once byte by byte (no
 * event lies whole in a buffer: every event takes the token path), and what
 * the reader hands out (every event's summary, kept tokens with their types,
 * depths, offsets and text, metadata values) and how it ends (code, error
 * kind, offset and message) must be the same. name_args is left empty: it is
 * the one documented difference between the paths.
 *   make fuzz
 */
#include "fuzz_common.h"

#include <stdarg.h>

#include "trace/chrome_int.h"

static void logf_(fz_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) fz_sink(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void log_tokens(fz_buf *b, const sc_jtok *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    logf_(b, "%d/%d/%d/%llu:", (int)t[i].type, t[i].depth, t[i].escaped, (unsigned long long)t[i].offset);
    if (t[i].s) fz_sink(b, t[i].s, t[i].n);
    fz_sink(b, ",", 1);
  }
}

static void log_str(fz_buf *b, sc_chrome_str s) {
  if (!s.s) {
    fz_sink(b, " -", 2);
    return;
  }
  fz_sink(b, " ", 1);
  fz_sink(b, s.s, s.n);
  logf_(b, "(%d)", s.escaped);
}

/* An event named "FAIL" fails its callback, so that callback errors are
 * compared too. */
static int on_event(void *ud, const sc_chrome_event *e) {
  fz_buf *b = ud;
  logf_(b, "E%llu %d", (unsigned long long)e->offset, e->ph);
  log_str(b, e->ph_s);
  log_str(b, e->cat);
  log_str(b, e->name);
  logf_(b, " %d %d %d %d %lld %lld ", e->has_ts, e->has_dur, e->ts_shadowed, e->dur_shadowed,
        (long long)(e->has_ts ? e->ts_ns : 0), (long long)(e->has_dur ? e->dur_ns : 0));
  if (e->pid) log_tokens(b, e->pid, 1);
  if (e->tid) log_tokens(b, e->tid, 1);
  for (size_t i = 0; i < e->nm; i++) {
    logf_(b, " m%d:", e->m[i].key);
    log_tokens(b, sc__chrome_value(e, &e->m[i]), e->m[i].count);
  }
  fz_sink(b, "\n", 1);
  return e->name.s && e->name.n == 4 && !memcmp(e->name.s, "FAIL", 4) ? SC_EINVAL : SC_OK;
}

static int on_item(void *ud, const sc_chrome_item *it) {
  fz_buf *b = ud;
  logf_(b, "I%d %d ", it->section, it->key);
  log_tokens(b, it->tok, it->ntok);
  fz_sink(b, "\n", 1);
  return SC_OK;
}

static const char *const arg_keys[] = {"device", "stream", "correlation", "Input Dims", "Input type", "x", "name", NULL};
static const char *const dist_keys[] = {"rank", "pg_config", NULL};
static const char *const meta_keys[] = {"deviceProperties", NULL};
static const sc_chrome_spec spec = {.members = 1u << SC_CHROME_TID | 1u << SC_CHROME_PID,
                                    .arg_keys = arg_keys,
                                    .dist_keys = dist_keys,
                                    .meta_keys = meta_keys,
                                    .not_object = "not an object",
                                    .ts_range = "ts out of range",
                                    .dur_range = "dur out of range",
                                    .event = on_event,
                                    .item = on_item};

/* Reads data in pieces of `piece` bytes into b. */
static void read_all(sc_ctx *ctx, const uint8_t *data, size_t size, size_t piece, fz_buf *b) {
  sc_chrome c;
  if (sc__chrome_init(&c, ctx, &spec, b)) abort();
  int rc = SC_OK;
  for (size_t i = 0; i < size && !rc; i += piece)
    rc = sc__chrome_feed(&c, (const char *)data + i, size - i < piece ? size - i : piece);
  if (!rc) rc = sc__chrome_end(&c);
  logf_(b, "rc %d kind %d at %llu: %s\n", rc, c.err_kind, (unsigned long long)c.err_off, c.errmsg);
  sc__chrome_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0; /* byte by byte: keep each run short */
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  fz_buf whole = {0}, bytes = {0};
  read_all(ctx, data, size, size ? size : 1, &whole);
  read_all(ctx, data, size, 1, &bytes);
  if (whole.len != bytes.len || memcmp(whole.p, bytes.p, whole.len)) {
    fprintf(stderr, "fed whole:\n%.*s\nbyte by byte:\n%.*s\n", (int)whole.len, whole.p, (int)bytes.len, bytes.p);
    abort();
  }
  free(whole.p);
  free(bytes.p);
  sc_ctx_free(ctx);
  return 0;
}
