/*
 * chrome.c: the Chrome-trace / Kineto document reader (see chrome_int.h).
 * One walk over the tokens of json.c knows the layout (the top-level
 * members, the events of traceEvents or of a bare array, their members and
 * args); what a reader registered is copied aside as it streams by and handed
 * out when its value completes, everything else is skipped unread.
 */
#include "trace/chrome_int.h"

#include <stdio.h>

/* Rare paths of the event fast path kept out of line (gaps near a buffer's
 * end), so that its common cases need fewer registers saved; the scalar
 * scanner inlined into its callers (measured: 2.2M fewer instructions on
 * the 21.8 MB trace; inlining the string scan too costs 19M more). */
#if defined(__GNUC__)
#define COLD __attribute__((noinline, cold))
#define INLINE inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#else
#define COLD
#define INLINE inline
#define NOINLINE
#endif

/* What the current top-level member is. */
enum { TOP_NONE = 0, TOP_EVENTS, TOP_DIST, TOP_META, TOP_SKIP };
/* c->field for an event's "args" member (the others are SC_CHROME_PH..TID). */
#define FIELD_ARGS (-2)

_Static_assert(SC_CHROME_PH == 0 && SC_CHROME_CAT == 1 && SC_CHROME_NAME == 2, "the summary's strings come first");

/* ------------------------------------------------------------ keys */

static size_t len_group(size_t n) { return n < SC_CHROME_KEY_LEN ? n : SC_CHROME_KEY_LEN; }

/* Registers the NULL-terminated list, grouped by length. 0 or SC_EINVAL
 * (too many keys). */
static int keys_init(sc_chrome_keys *k, const char *const *list) {
  memset(k, 0, sizeof *k);
  int n = 0;
  while (list && list[n]) n++;
  if (n > SC_CHROME_MAX_KEYS) return SC_EINVAL;
  for (size_t g = 0; g <= SC_CHROME_KEY_LEN; g++) {
    k->first[g] = (uint8_t)k->total;
    for (int i = 0; i < n; i++) {
      size_t len = strlen(list[i]);
      if (len_group(len) != g) continue;
      k->s[k->total] = list[i];
      k->n[k->total] = len;
      k->index[k->total++] = i;
      k->count[g]++;
    }
  }
  return SC_OK;
}

/* Index in the spec's list of the raw key s[0..n), or -1. */
static int key_find(const sc_chrome_keys *k, const char *s, size_t n) {
  size_t g = len_group(n);
  for (int i = k->first[g], end = i + k->count[g]; i < end; i++)
    if (k->n[i] == n && k->s[i][0] == s[0] && !memcmp(k->s[i], s, n)) return k->index[i];
  return -1;
}

/* The standard member a raw event key names: SC_CHROME_PH..TID,
 * FIELD_ARGS, or -1. */
static int std_field(const sc_jtok *t) {
  const char *s = t->s;
  switch (t->n) {
  case 2:
    if (s[0] == 'p' && s[1] == 'h') return SC_CHROME_PH;
    if (s[0] == 't' && s[1] == 's') return SC_CHROME_TS;
    break;
  case 3:
    if (!memcmp(s, "cat", 3)) return SC_CHROME_CAT;
    if (!memcmp(s, "tid", 3)) return SC_CHROME_TID;
    if (!memcmp(s, "dur", 3)) return SC_CHROME_DUR;
    if (!memcmp(s, "pid", 3)) return SC_CHROME_PID;
    break;
  case 4:
    if (!memcmp(s, "name", 4)) return SC_CHROME_NAME;
    if (!memcmp(s, "args", 4)) return FIELD_ARGS;
    break;
  }
  return -1;
}

static int is_key(const sc_jtok *t, const char *lit, size_t n) { return t->n == n && !memcmp(t->s, lit, n); }

/* ------------------------------------------------------------ errors */

static int fail(sc_chrome *c, int kind, int code, uint64_t off, const char *msg) {
  if (!c->err) {
    c->err = code;
    c->err_kind = kind;
    c->err_off = off;
    c->errmsg = msg;
  }
  return c->err;
}

/* ------------------------------------------------------------ kept values */

/* Drops what was kept (the next event or metadata value starts afresh). */
static void keep_reset(sc_chrome *c) {
  c->nm = c->ntok = c->ntext = 0;
  c->keep_depth = -1;
}

/* Makes room for need more bytes of kept text. The text moves to a larger
 * block (rarely: it grows to the largest event once), and the kept tokens
 * are pointed at the new copy. 0 or SC_ENOMEM. */
static int text_room(sc_chrome *c, size_t need) {
  if (need <= c->text_cap - c->ntext) return SC_OK;
  size_t cap = c->text_cap ? c->text_cap : 4096;
  while (cap - c->ntext < need) {
    if (cap > SIZE_MAX / 2) return SC_ENOMEM;
    cap *= 2;
  }
  char *text = sc__malloc(c->ctx, cap);
  if (!text) return SC_ENOMEM;
  if (c->ntext) memcpy(text, c->text, c->ntext);
  for (size_t i = 0; i < c->ntok; i++)
    if (c->tok[i].s) c->tok[i].s = text + (c->tok[i].s - c->text);
  sc__free(c->ctx, c->text, c->text_cap);
  c->text = text;
  c->text_cap = cap;
  return SC_OK;
}

/* Copies token t, at depth `depth` relative to its value, aside (its text
 * NUL-terminated). 0, SC_ENOMEM, or the format error of a value past the
 * bounds (SC_CHROME_MAX_KEPT_TOKENS / _BYTES, set on c). */
static int keep(sc_chrome *c, const sc_jtok *t, int depth) {
  if (c->ntok >= SC_CHROME_MAX_KEPT_TOKENS || (t->s && t->n + 1 > SC_CHROME_MAX_KEPT_BYTES - c->ntext))
    return fail(c, SC_CHROME_EFORMAT, SC_EINVAL, t->offset,
                "event or metadata value too large (more than 1048576 values or 64 MiB of the members read)");
  if (c->ntok == c->tok_cap && sc__grow(c->ctx, (void **)&c->tok, sizeof *c->tok, &c->tok_cap, c->ntok + 1))
    return SC_ENOMEM;
  if (t->s && text_room(c, t->n + 1)) return SC_ENOMEM;
  sc_jtok *k = &c->tok[c->ntok++];
  *k = *t;
  k->depth = depth;
  if (t->s) {
    char *p = c->text + c->ntext;
    memcpy(p, t->s, t->n);
    p[t->n] = 0;
    c->ntext += t->n + 1;
    k->s = p;
  }
  return SC_OK;
}

/* keep for an event read in place: the token's text is used where it lies
 * in the buffer (whole there until the event's callback returns) instead of
 * copied; its bytes still count toward SC_CHROME_MAX_KEPT_BYTES as a copy
 * would (the caller checked keep_fits). 0 or SC_ENOMEM. */
static int keep_in_place(sc_chrome *c, const sc_jtok *t, int depth) {
  if (c->ntok == c->tok_cap && sc__grow(c->ctx, (void **)&c->tok, sizeof *c->tok, &c->tok_cap, c->ntok + 1))
    return SC_ENOMEM;
  sc_jtok *k = &c->tok[c->ntok++];
  *k = *t;
  k->depth = depth;
  if (t->s) c->ntext += t->n + 1;
  return SC_OK;
}

/* Starts a member with id key whose value's first token comes next; its
 * token count is set when the value is complete. */
static int member(sc_chrome *c, int key) {
  if (c->nm == c->m_cap && sc__grow(c->ctx, (void **)&c->m, sizeof *c->m, &c->m_cap, c->nm + 1))
    return SC_ENOMEM;
  c->m[c->nm].key = key;
  c->m[c->nm].first = (uint32_t)c->ntok;
  c->m[c->nm].count = 1;
  c->nm++;
  return SC_OK;
}

static sc_chrome_str kept_str(const sc_chrome *c, int i) {
  sc_chrome_str s = {NULL, 0, 0};
  if (i >= 0) s = sc__chrome_str_of(&c->tok[i]);
  return s;
}

/* ------------------------------------------------------------ events */

static void event_begin(sc_chrome *c, uint64_t offset) {
  keep_reset(c);
  memset(&c->ev, 0, sizeof c->ev);
  c->ev.offset = offset;
  c->ph_i = c->cat_i = c->name_i = c->pid_i = c->tid_i = -1;
  c->field = c->arg = -1;
}

static int event_done(sc_chrome *c) {
  sc_chrome_event *e = &c->ev;
  e->ph_s = kept_str(c, c->ph_i);
  e->cat = kept_str(c, c->cat_i);
  e->name = kept_str(c, c->name_i);
  e->pid = c->pid_i >= 0 ? &c->tok[c->pid_i] : NULL;
  e->tid = c->tid_i >= 0 ? &c->tok[c->tid_i] : NULL;
  e->m = c->m;
  e->nm = c->nm;
  e->tok = c->tok;
  int rc = c->spec->event ? c->spec->event(c->ud, e) : SC_OK;
  keep_reset(c);
  return rc ? fail(c, SC_CHROME_ECALLBACK, rc, c->ev.offset, "") : SC_OK;
}

/* Keeps the scalar token t of standard member f when it is needed after
 * this call (as a member the spec asks for, or as the summary's ph, cat or
 * name); in_place: by keep_in_place. 0, SC_ENOMEM, or keep's format
 * error. */
static INLINE int std_keep(sc_chrome *c, int f, const sc_jtok *t, int in_place) {
  int str = t->type == SC_JT_STRING;
  int as_member = (c->spec->members >> f) & 1;
  int summary = str && (f == SC_CHROME_PH || f == SC_CHROME_CAT || f == SC_CHROME_NAME);
  if (!as_member && !summary) return SC_OK;
  if (as_member && member(c, f)) return SC_ENOMEM;
  int rc = in_place ? keep_in_place(c, t, 0) : keep(c, t, 0);
  if (rc) return rc;
  int i = (int)c->ntok - 1;
  switch (f) {
  case SC_CHROME_PH:
    if (str) {
      c->ph_i = i;
      if (t->n) c->ev.ph = t->s[0];
    }
    break;
  case SC_CHROME_CAT:
    if (str) c->cat_i = i;
    break;
  case SC_CHROME_NAME:
    if (str) c->name_i = i;
    break;
  case SC_CHROME_PID:
    c->pid_i = i;
    break;
  case SC_CHROME_TID:
    c->tid_i = i;
    break;
  }
  return SC_OK;
}

/* "ts" (is_ts) or "dur" into the summary: a number that parsed (ok, v), or
 * (number 0) a scalar of another type, which shadows an earlier number. */
static void time_value(sc_chrome *c, int is_ts, int number, int ok, int64_t v) {
  sc_chrome_event *e = &c->ev;
  if (number) {
    *(is_ts ? &e->has_ts : &e->has_dur) = ok;
    *(is_ts ? &e->ts_shadowed : &e->dur_shadowed) = 0;
    if (ok) *(is_ts ? &e->ts_ns : &e->dur_ns) = v;
  } else {
    *(is_ts ? &e->ts_shadowed : &e->dur_shadowed) = 1;
  }
}

/* A scalar value of standard member c->field: folded into the summary
 * fields, and kept by std_keep. */
static int std_value(sc_chrome *c, const sc_jtok *t) {
  int f = c->field;
  if (f == SC_CHROME_TS || f == SC_CHROME_DUR) {
    int is_ts = f == SC_CHROME_TS, number = t->type == SC_JT_NUMBER, ok = 0;
    int64_t v = 0;
    if (number) {
      ok = sc__json_us_to_ns(t->s, t->n, &v) == SC_OK;
      const char *msg = is_ts ? c->spec->ts_range : c->spec->dur_range;
      if (!ok && msg) return fail(c, SC_CHROME_EFORMAT, SC_EINVAL, t->offset, msg);
    }
    time_value(c, is_ts, number, ok, v);
  }
  return std_keep(c, f, t, 0);
}

/* ------------------------------------------------------------ events in place */

/* Most events lie whole in the buffer and are plain (no escapes, no token
 * cut, well formed): event_fast reads such an event straight from the
 * buffer, member by member, keeping the same tokens (same types, texts,
 * offsets and relative depths) and summary the token walk would, without a
 * token call per key, scalar and bracket. At the first thing it does not
 * take (the buffer ends, an escape, malformed input, a timestamp that does
 * not parse, a kept value past the bounds or nesting deeper than
 * FAST_DEPTH) it gives up having changed nothing the reader shows: the
 * event restarts on the token path, which reads it and words any error at
 * the same offset as before. */
#define FAST_DEPTH 16

/* The block of the gap and shape memos. */
#define MEMO_BYTES (SC_CHROME_GAPS * sizeof(sc_chrome_gap) + SC_CHROME_SHAPES * sizeof(sc_chrome_shape))
_Static_assert(sizeof(sc_chrome_gap) % _Alignof(sc_chrome_shape) == 0, "the shapes follow the gaps aligned");
_Static_assert(SC_CHROME_SHAPE_BYTES <= UINT16_MAX && SC_CHROME_SHAPE_TOKENS <= INT8_MAX &&
                   SC_CHROME_SHAPE_MEMBERS <= UINT8_MAX,
               "a shape's offsets and counts fit their fields");

typedef struct fast_buf {
  const unsigned char *b;
  size_t len;
  uint64_t base; /* stream offset of b[0] */
} fast_buf;

/* The token path's out of memory at the token at stream offset off. */
static int fast_nomem(sc_chrome *c, uint64_t off) { return fail(c, SC_CHROME_ECALLBACK, SC_ENOMEM, off, ""); }

/* The string (KEY or STRING type) whose opening quote is b[i], when it has
 * no escape and ends in the buffer: t filled as the tokenizer would, and the
 * index past the closing quote returned; else 0. */
static size_t fast_string(const fast_buf *f, size_t i, int type, sc_jtok *t) {
  size_t s = i + 1, e = s + sc__json_str_stop(f->b + s, f->len - s);
  if (e == f->len || f->b[e] != '"') return 0;
  t->type = (sc_jtype)type;
  t->depth = 0;
  t->escaped = 0;
  t->s = (const char *)f->b + s;
  t->n = e - s;
  t->offset = f->base + i;
  return e + 1;
}

/* The scalar at b[i] (a plain string, a number that ends in the buffer, a
 * literal) as a token; the index past it, or 0. *num: where a number's
 * parts are. */
static INLINE size_t fast_scalar_num(const fast_buf *f, size_t i, sc_jtok *t, sc_jnum *num) {
  unsigned char ch = f->b[i];
  if (ch == '"') return fast_string(f, i, SC_JT_STRING, t);
  t->depth = 0;
  t->escaped = 0;
  t->s = (const char *)f->b + i;
  t->offset = f->base + i;
  if (ch == '-' || sc__json_is_digit(ch)) {
    ptrdiff_t e = sc__json_number_scan(f->b + i, f->len - i, num);
    if (e < 0) return 0;
    t->type = SC_JT_NUMBER;
    t->n = (size_t)e;
    return i + (size_t)e;
  }
  const char *lit = ch == 't' ? "true" : ch == 'f' ? "false" : ch == 'n' ? "null" : NULL;
  size_t n = lit ? strlen(lit) : 0;
  if (!lit || f->len - i < n || memcmp(f->b + i, lit, n)) return 0;
  t->type = ch == 't' ? SC_JT_TRUE : ch == 'f' ? SC_JT_FALSE : SC_JT_NULL;
  t->n = n;
  return i + n;
}

static size_t fast_scalar(const fast_buf *f, size_t i, sc_jtok *t) {
  sc_jnum num;
  return fast_scalar_num(f, i, t, &num);
}

/* The pair of memo entries for a container value starting at b[i]: a hash
 * of its first sixteen bytes (fewer near the buffer's end). Two entries, so
 * that two values with one prefix (["c10::BFloat16", ..]) can stay. */
static sc_chrome_skip *skip_memo(sc_chrome *c, const fast_buf *f, size_t i) {
  uint64_t w0 = 0, w1 = 0;
  size_t n = f->len - i;
  if (n >= 16) {
    memcpy(&w0, f->b + i, 8);
    memcpy(&w1, f->b + i + 8, 8);
  } else {
    memcpy(&w0, f->b + i, n < 8 ? n : 8);
  }
  uint64_t h = w0 * 0x9e3779b97f4a7c15u ^ w1 * 0xc2b2ae3d27d4eb4fu;
  return &c->skip_memo[(h >> 40) % (SC_CHROME_SKIP_MEMO / 2) * 2];
}

static int skip_hit(const sc_chrome_skip *m, const fast_buf *f, size_t i, int depth) {
  return m->n && m->depth == depth && m->n <= f->len - i && !memcmp(f->b + i, m->text, m->n);
}

/* Index past the container at b[i] ('{' or '[') that no reader reads
 * (`depth` containers open around it), or 0: as sc__json_value_end skips
 * it, or at once when its bytes are those of a container skipped before at
 * the same depth (remembered when it is short enough). */
static size_t fast_skip(sc_chrome *c, const fast_buf *f, size_t i, int depth) {
  sc_chrome_skip *m = skip_memo(c, f, i);
  if (skip_hit(&m[0], f, i, depth)) {
    m[0].age = 0;
    return i + m[0].n;
  }
  if (skip_hit(&m[1], f, i, depth)) {
    m[0].age = 1; /* entry 1 was used last: replace entry 0 next */
    return i + m[1].n;
  }
  size_t e = sc__json_value_end(f->b, i, f->len, depth);
  if (e && e - i <= SC_CHROME_SKIP_BYTES) {
    sc_chrome_skip *w = &m[m[0].age ? 0 : 1];
    m[0].age = w == &m[1];
    memcpy(w->text, f->b + i, e - i);
    w->n = (uint32_t)(e - i);
    w->depth = depth;
  }
  return e;
}

/* Whether keep(c, t, ..) stays within the bounds (else the token path
 * raises keep's error). */
static int keep_fits(const sc_chrome *c, const sc_jtok *t) {
  return c->ntok < SC_CHROME_MAX_KEPT_TOKENS && (!t->s || t->n + 1 <= SC_CHROME_MAX_KEPT_BYTES - c->ntext);
}

/* keep for the fast path: 1 kept, 0 give up (*rc: 0, or the out-of-memory
 * error, set on c). */
static int fast_keep(sc_chrome *c, const sc_jtok *t, int depth, int *rc) {
  if (!keep_fits(c, t)) return 0;
  if (keep_in_place(c, t, depth)) {
    *rc = fast_nomem(c, t->offset);
    return 0;
  }
  return 1;
}

/* Keeps the container value at b[i] ('{' or '['; `depth` containers open
 * around it) token by token, as the tokenizer hands them out. The index past
 * its end, or 0 (give up; *rc as fast_keep). */
static size_t fast_keep_container(sc_chrome *c, const fast_buf *f, size_t i, int depth, int *rc) {
  const unsigned char *b = f->b;
  size_t len = f->len, e;
  unsigned char stack[FAST_DEPTH];
  int d = 0;
  sc_jtok t = {0};
  for (;;) { /* a value is due at b[i] */
    unsigned char ch = b[i];
    if (ch == '{' || ch == '[') {
      if (d == FAST_DEPTH || depth + d >= SC_JSON_MAX_DEPTH) return 0;
      t.type = ch == '{' ? SC_JT_OBJ_BEGIN : SC_JT_ARR_BEGIN;
      t.s = NULL;
      t.n = 0;
      t.escaped = 0;
      t.offset = f->base + i;
      if (!fast_keep(c, &t, d, rc)) return 0;
      stack[d++] = ch;
      i = sc__json_ws(b, i + 1, len);
      if (i == len) return 0;
      if (b[i] == (ch == '{' ? '}' : ']')) goto close;
      if (ch == '[') continue;
      goto key;
    }
    if (!(e = fast_scalar(f, i, &t)) || !fast_keep(c, &t, d, rc)) return 0;
    i = e;
  after_value:
    if (d == 0) return i;
    i = sc__json_ws(b, i, len);
    if (i == len) return 0;
    if (b[i] == (stack[d - 1] == '{' ? '}' : ']')) goto close;
    if (b[i] != ',') return 0;
    i = sc__json_ws(b, i + 1, len);
    if (i == len) return 0;
    if (stack[d - 1] == '[') continue;
  key:
    if (b[i] != '"' || !(e = fast_string(f, i, SC_JT_KEY, &t)) || !fast_keep(c, &t, d, rc)) return 0;
    i = sc__json_ws(b, e, len);
    if (i == len || b[i] != ':') return 0;
    i = sc__json_ws(b, i + 1, len);
    if (i == len) return 0;
    continue;
  close:
    d--;
    t.type = stack[d] == '{' ? SC_JT_OBJ_END : SC_JT_ARR_END;
    t.s = NULL;
    t.n = 0;
    t.escaped = 0;
    t.offset = f->base + i;
    if (!fast_keep(c, &t, d, rc)) return 0;
    i++;
    goto after_value;
  }
}

/* Whether args key `arg` may be skipped in this event: one of the spec's
 * name_args after a name without its prefix. */
static int name_arg_unread(const sc_chrome *c, int arg) {
  if (!((c->spec->name_args >> arg) & 1) || c->name_i < 0) return 0;
  const sc_jtok *t = &c->tok[c->name_i];
  size_t n = strlen(c->spec->name_prefix);
  return t->n < n || memcmp(t->s, c->spec->name_prefix, n);
}

/* A hash of a string token's length and first bytes (its text lies in a
 * buffer that continues past its closing quote). */
static uint32_t string_hash(const sc_jtok *t) {
  uint32_t h = (uint32_t)t->n;
  for (size_t k = 0; k < t->n && k < 8; k++) h = h * 31 + (unsigned char)t->s[k];
  return h;
}
/* Levels of a gap, and the context of the first gap of an object or of one
 * after a gap too long to remember. */
enum { GAP_EVENT = 0, GAP_ARGS = 1 };
#define GAP_START SC_CHROME_GAPS
#define GAP_NONE (SC_CHROME_GAPS + 1)

/* The first entry of the pair for the gap that follows gap entry `prev`
 * (or GAP_START, GAP_NONE) as the k-th of an object at level lv, in an
 * event of context ctx (ph and cat, already multiplied by an odd constant).
 * The member's place k keeps the chain of entries of one object from
 * running in a circle; the top bits of a multiplicative hash pick the
 * pair. */
static uint32_t gap_index(uint32_t prev, uint32_t ctx, int lv, uint32_t k) {
  uint32_t x = ((prev | (uint32_t)lv << 10 | k << 11) * 0x9e3779b1u ^ ctx) * 0xc2b2ae35u;
  return (uint32_t)(((uint64_t)x * (SC_CHROME_GAPS / 2)) >> 32) * 2;
}

/* gap_match with fewer than SC_CHROME_GAP_BYTES bytes left, or without
 * SSE2. */
static COLD int gap_match_tail(const sc_chrome_gap *g, const unsigned char *b, size_t avail) {
  size_t n = g->n, vn = g->vn;
  if (n >= avail || memcmp(b, g->text, n)) return 0;
  return vn && n + vn < avail && !memcmp(b + n, g->text + n, vn) ? 2 : 1;
}

#if defined(__SSE2__)
/* Bit i set for each digit among the sixteen bytes of w. */
static inline unsigned digit_bits(__m128i w) {
  __m128i d = _mm_sub_epi8(w, _mm_set1_epi8('0'));
  return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
}
#endif

/* Whether the avail bytes at b begin with gap g's text and go on after it
 * (a member's value follows): 0 no, 1 yes, 2 yes and the value remembered
 * after it follows too (any digits where g->dmask has a bit). */
static inline int gap_match(const sc_chrome_gap *g, const unsigned char *b, size_t avail) {
#if defined(__SSE2__)
  if (avail >= SC_CHROME_GAP_BYTES) {
    const __m128i *t = (const __m128i *)(const void *)g->text;
    __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)b),
            b1 = _mm_loadu_si128((const __m128i *)(const void *)(b + 16)),
            b2 = _mm_loadu_si128((const __m128i *)(const void *)(b + 32));
    uint64_t m = (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b0, _mm_loadu_si128(t))) |
                 (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b1, _mm_loadu_si128(t + 1))) << 16 |
                 (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b2, _mm_loadu_si128(t + 2))) << 32;
    if (g->dmask)
      m |= ((uint64_t)digit_bits(b0) | (uint64_t)digit_bits(b1) << 16 | (uint64_t)digit_bits(b2) << 32) & g->dmask;
    return (m & g->vmask) == g->vmask ? 1 + (g->vn > 0) : (m & g->mask) == g->mask;
  }
#endif
  return gap_match_tail(g, b, avail);
}

/* The gap at b[p] that fast_gap did not find in its entry g: parsed (ws,
 * ',' after a value, ws, key, ws, ':', ws; or ws and '}') and remembered
 * there when short enough. As fast_gap. */
static size_t gap_learn(sc_chrome *c, const fast_buf *f, size_t p, int lv, int after, uint32_t h, uint32_t *prev,
                        sc_chrome_gap **gp, int *key, int *close, int *val) {
  const unsigned char *b = f->b;
  size_t len = f->len, i, e;
  sc_chrome_gap *g = &c->gaps[h];
  int hit;
  if (g->kind == 1 + lv * 2 + after && (hit = gap_match(g, b + p, len - p))) { /* the pair's first entry */
    c->gaps[h & ~1u].age = 0;
    *prev = h;
    *gp = g;
    *key = g->key;
    *close = g->close;
    *val = hit == 2;
    return p + g->n;
  }
  h = c->gaps[h].age ? h : h + 1; /* the entry used less recently */
  g = &c->gaps[h];
  *val = 0;
  *gp = NULL;
  if ((i = sc__json_ws(b, p, len)) == len) return 0;
  if (b[i] == '}') {
    *key = -1;
    *close = 1;
    e = i + 1;
  } else {
    if (after && (b[i] != ',' || (i = sc__json_ws(b, i + 1, len)) == len)) return 0;
    sc_jtok t;
    if (b[i] != '"' || !(e = fast_string(f, i, SC_JT_KEY, &t))) return 0;
    *key = lv == GAP_EVENT ? std_field(&t) : key_find(&c->args, t.s, t.n);
    *close = 0;
    i = sc__json_ws(b, e, len);
    if (i == len || b[i] != ':' || (e = sc__json_ws(b, i + 1, len)) == len) return 0;
  }
  if (e - p > SC_CHROME_GAP_BYTES) {
    *prev = GAP_NONE;
    return e;
  }
  memcpy(g->text, b + p, e - p);
  g->n = (uint8_t)(e - p);
  g->mask = g->vmask = ((uint64_t)1 << g->n) - 1;
  g->dmask = 0;
  g->vn = 0;
  g->vmiss = 0;
  g->kind = (uint8_t)(1 + lv * 2 + after);
  g->close = (uint8_t)*close;
  g->key = (int16_t)*key;
  c->gaps[h & ~1u].age = h & 1;
  *prev = h;
  *gp = g;
  return e;
}

/* The gap at b[p] of level lv, the k-th of its object (k = 0: right after
 * the '{', else after a member's value), in an event of context ctx,
 * following the gap entry *prev: the index of the next member's value
 * (*key: which member, as the gap entry holds it; *val: the value
 * remembered after the gap follows it) or just past the object's '}'
 * (*close set); 0 to give up (the buffer ends, an escape, anything
 * malformed). *prev becomes this gap's entry. */
static inline size_t fast_gap(sc_chrome *c, const fast_buf *f, size_t p, int lv, uint32_t k, uint32_t ctx,
                              uint32_t *prev, sc_chrome_gap **gp, int *key, int *close, int *val) {
  int after = k > 0, hit;
  uint32_t h = gap_index(*prev, ctx, lv, k);
  sc_chrome_gap *g = &c->gaps[h + 1]; /* the pair's second entry first: gap_learn fills it first */
  if (g->kind == 1 + lv * 2 + after && (hit = gap_match(g, f->b + p, f->len - p))) {
    c->gaps[h].age = 1;
    *prev = h + 1;
    *gp = g;
    *key = g->key;
    *close = g->close;
    *val = hit == 2;
    return p + g->n;
  }
  return gap_learn(c, f, p, lv, after, h, prev, gp, key, close, val);
}

/* Whether the number text p[0..n) (parts num) is laid out as the number
 * remembered in g: the same length, sign, integer and fraction digits, no
 * exponent, and the same first digit (so no leading zero can stand where
 * g's has none). */
static int number_layout(const sc_chrome_gap *g, const unsigned char *p, size_t n, const sc_jnum *num) {
  return n == g->vn && !num->exp && num->neg == g->vneg && num->int_len == g->vint_len &&
         num->frac_len == g->vfrac_len && g->vint_at == num->int_at && g->vn == num->int_at + num->int_len +
         (num->frac_len ? num->frac_len + 1 : 0) && p[num->int_at] == g->text[g->n + num->int_at];
}

/* fast_value's scalar not remembered: scanned, and remembered in g unless
 * its values keep changing (a number's layout once its digits change). As
 * fast_value. */
static size_t value_learn(const fast_buf *f, size_t i, sc_chrome_gap *g, int want_ns, sc_jtok *t, int64_t *ns) {
  sc_jnum num = {0, 0, 0, 0, 0};
  size_t e = fast_scalar_num(f, i, t, &num);
  if (!e) return 0;
  int ok = 1;
  if (want_ns && t->type == SC_JT_NUMBER) {
    const unsigned char *p = (const unsigned char *)t->s;
    ok = sc__json_us_fast(p, f->len - (size_t)(p - f->b), &num, ns) || sc__json_us_to_ns(t->s, t->n, ns) == SC_OK;
  }
  if (g) {
    if (g->vn && g->vtype == SC_JT_NUMBER && t->type == SC_JT_NUMBER && !g->dmask &&
        number_layout(g, f->b + i, e - i, &num)) {
      /* the same layout as the number remembered: its digits after the first may be any */
      uint64_t lo = (uint64_t)1 << (g->n + num.int_at + 1);
      g->dmask = (((uint64_t)1 << (g->n + num.int_at + num.int_len)) - lo) |
                 ((((uint64_t)1 << num.frac_len) - 1) << (g->n + num.int_at + num.int_len + 1));
    } else if (g->vmiss < 2 && g->n + (e - i) <= SC_CHROME_GAP_BYTES) {
      memcpy(g->text + g->n, f->b + i, e - i);
      g->vn = (uint8_t)(e - i);
      g->vmask = ((uint64_t)1 << (g->n + g->vn)) - 1;
      g->dmask = 0;
      g->vtype = (uint8_t)t->type;
      g->vok = (uint8_t)ok;
      g->vns = ok ? *ns : 0;
      g->vint_at = (uint8_t)num.int_at;
      g->vint_len = (uint8_t)num.int_len;
      g->vfrac_len = (uint8_t)num.frac_len;
      g->vneg = (uint8_t)num.neg;
    }
    g->vmiss++; /* wraps: a member whose values kept changing is tried again every 256 */
  }
  return ok ? e : 0;
}

/* The scalar value at b[i] after the gap in entry g (NULL: a gap not
 * remembered): taken from g when val (fast_gap found it there), else
 * scanned and remembered in g. As a token in t, with (want_ns, for "ts" and
 * "dur") a number's value in *ns. The index past it, or 0 (give up: not a
 * scalar fast_scalar takes, or a number sc__json_us_to_ns refuses). */
static inline size_t fast_value(const fast_buf *f, size_t i, sc_chrome_gap *g, int val, int want_ns, sc_jtok *t,
                                int64_t *ns) {
  if (!val) return value_learn(f, i, g, want_ns, t, ns);
  size_t vn = g->vn;
  int str = g->vtype == SC_JT_STRING;
  g->vmiss = 0;
  t->type = (sc_jtype)g->vtype;
  t->depth = 0;
  t->escaped = 0;
  t->offset = f->base + i;
  t->s = (const char *)f->b + i + str;
  t->n = vn - 2 * (size_t)str;
  if (want_ns && t->type == SC_JT_NUMBER) {
    if (g->dmask) { /* digits of their own: converted as value_learn would */
      sc_jnum num = {g->vint_at, g->vint_len, g->vfrac_len, g->vneg, 0};
      if (!sc__json_us_fast((const unsigned char *)t->s, f->len - i, &num, ns) && sc__json_us_to_ns(t->s, t->n, ns))
        return 0;
    } else {
      if (!g->vok) return 0;
      *ns = g->vns;
    }
  }
  return i + vn;
}

/* Notes the scalar value t of a member (field: SC_CHROME_TS / _DUR, else
 * -1) for the event's shape when it is a number. */
static INLINE void note_number(sc_chrome *c, const fast_buf *f, const sc_jtok *t, int field) {
  if (t->type != SC_JT_NUMBER) return;
  uint32_t k = c->nnum;
  if (k >= SC_CHROME_SHAPE_NUMBERS || t->n > UINT8_MAX) {
    c->nnum = SC_CHROME_SHAPE_NUMBERS + 1;
    return;
  }
  c->num_at[k] = (size_t)((const unsigned char *)t->s - f->b);
  c->num_n[k] = (uint8_t)t->n;
  c->num_field[k] = (int8_t)field;
  c->nnum = k + 1;
}

/* The members of an event's "args" object whose '{' is b[i] (`depth`
 * containers open inside it; ctx: the event's context for fast_gap):
 * registered ones kept, the others skipped. *unread is set when a
 * name_args member was skipped (name_arg_unread). The index past its '}',
 * or 0 (give up; *rc as fast_keep). */
static size_t fast_args(sc_chrome *c, const fast_buf *f, size_t i, int depth, uint32_t ctx, int *rc, int *unread) {
  const unsigned char *b = f->b;
  size_t e;
  sc_jtok t;
  uint32_t prev = GAP_START;
  int arg, close, val;
  int64_t ns;
  for (uint32_t k = 0;; k++) {
    sc_chrome_gap *g;
    if (!(i = fast_gap(c, f, k ? i : i + 1, GAP_ARGS, k, ctx, &prev, &g, &arg, &close, &val)) || close) return i;
    if (arg >= 0 && name_arg_unread(c, arg)) {
      arg = -1;
      *unread = 1;
    }
    if (arg < 0) {
      if (b[i] == '{' || b[i] == '[') {
        if (!(i = fast_skip(c, f, i, depth))) return 0;
      } else if (!(i = fast_value(f, i, g, val, 0, &t, &ns))) {
        return 0;
      } else {
        note_number(c, f, &t, -1);
      }
    } else {
      if (member(c, SC_CHROME_ARG + arg)) {
        *rc = fast_nomem(c, f->base + i);
        return 0;
      }
      if (b[i] == '{' || b[i] == '[') {
        uint32_t first = c->m[c->nm - 1].first;
        if (!(i = fast_keep_container(c, f, i, depth, rc))) return 0;
        c->m[c->nm - 1].count = (uint32_t)(c->ntok - first);
      } else {
        if (!(e = fast_value(f, i, g, val, 0, &t, &ns)) || !fast_keep(c, &t, 0, rc)) return 0;
        note_number(c, f, &t, -1);
        i = e;
      }
    }
  }
}

/* A standard member's scalar value t (member f; for "ts" and "dur" a
 * number's value ns) into the summary and the kept tokens: 1, or 0 (give
 * up; *rc as fast_keep). */
static int fast_std(sc_chrome *c, int f, const sc_jtok *t, int64_t ns, int *rc) {
  if (f == SC_CHROME_TS || f == SC_CHROME_DUR) time_value(c, f == SC_CHROME_TS, t->type == SC_JT_NUMBER, 1, ns);
  if (!((c->spec->members >> f) & 1) && (t->type != SC_JT_STRING || f > SC_CHROME_NAME))
    return 1; /* std_keep would not keep it: ph, cat and name (the first ids) are the summary's strings */
  if (!keep_fits(c, t)) return 0;
  if (std_keep(c, f, t, 1)) {
    *rc = fast_nomem(c, t->offset);
    return 0;
  }
  return 1;
}

#if defined(__SSE2__)
/* The hash of the SHAPE_TAG_BYTES bytes at b with every digit masked: what
 * finds the set of shapes an event may have (the digits of its ids and
 * timestamps change from one event of a kind to the next). 128 bytes reach
 * past "name": "autograd::engine::evaluate_function: " (HTA's samples:
 * with 64, the backward functions share a tag and thrash their set) and
 * past the 63 bytes two of the synthetic trace's kernel names share. */
#define SHAPE_TAG_BYTES 128
static uint64_t shape_tag(const unsigned char *b) {
  uint64_t h = 0, w[2];
  for (int k = 0; k < SHAPE_TAG_BYTES / 16; k++) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * k));
    __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    _mm_storeu_si128((__m128i *)(void *)w, _mm_andnot_si128(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d), v));
    h = (h + w[0]) * 0x9e3779b97f4a7c15u;
    h = (h ^ w[1]) * 0xc2b2ae3d27d4eb4fu;
  }
  return h ^ h >> 29;
}

/* The first entry of the set of shapes for tag. */
static sc_chrome_shape *shape_set(sc_chrome *c, uint64_t tag) {
  return &c->shapes[(size_t)(tag >> 40) % (SC_CHROME_SHAPES / SC_CHROME_SHAPE_WAYS) * SC_CHROME_SHAPE_WAYS];
}

/* Bit i set for each byte of the 16 at b + 16 * k equal to the shape's,
 * or a digit where the shape has a free digit. */
static inline unsigned shape_block(const sc_chrome_shape *s, const unsigned char *b, size_t k) {
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * k));
  unsigned m = (unsigned)_mm_movemask_epi8(
      _mm_cmpeq_epi8(v, _mm_loadu_si128((const __m128i *)(const void *)(s->text + 16 * k))));
  unsigned free = s->free_digits[k];
  return free ? m | (digit_bits(v) & free) : m;
}

/* Whether the avail bytes at b begin with shape s's bytes (any digit where
 * it has a free digit): 32 bytes a step, then the last 16 with what lies
 * past its end. */
static int shape_match(const sc_chrome_shape *s, const unsigned char *b, size_t avail) {
  size_t last = (size_t)(s->n - 1) >> 4, k = 0;
  if ((last + 1) << 4 > avail) return 0;
  for (; k + 1 < last; k += 2)
    if ((shape_block(s, b, k) & shape_block(s, b, k + 1)) != 0xffffu) return 0;
  if (k < last && shape_block(s, b, k) != 0xffffu) return 0;
  return (shape_block(s, b, last) | s->past_end) == 0xffffu;
}

/* The event whose first byte after the '{' is b[p] read from shape s (its
 * bytes matched): the kept tokens, members and summary as reading it would
 * leave them. 1, or 0 with nothing changed (a "ts" / "dur" that does not
 * convert, which the fast path gives up on too; or kept arrays too small). */
static int shape_take(sc_chrome *c, const sc_chrome_shape *s, const fast_buf *f, size_t p) {
  const unsigned char *b = f->b + p;
  int64_t ts = 0, dur = 0, v;
  if (s->ntok > c->tok_cap || s->nm > c->m_cap) return 0;
  for (int k = 0; k < s->ntime; k++) {
    const sc_chrome_shape_time *tm = &s->time[k];
    sc_jnum num = {tm->int_at, tm->int_len, tm->frac_len, tm->neg, tm->exp};
    if (!sc__json_us_fast(b + tm->at, f->len - p - tm->at, &num, &v) &&
        sc__json_us_to_ns((const char *)b + tm->at, tm->n, &v))
      return 0;
    *(tm->is_ts ? &ts : &dur) = v;
  }
  uint64_t base = f->base + p;
  for (int k = 0; k < s->ntok; k++) {
    const sc_chrome_shape_tok *st = &s->tok[k];
    sc_jtok *t = &c->tok[k];
    t->type = (sc_jtype)st->type;
    t->depth = st->depth;
    t->escaped = 0;
    t->s = st->s_at == SC_CHROME_SHAPE_NONE ? NULL : (const char *)b + st->s_at;
    t->n = st->n;
    t->offset = base + st->at;
  }
  if (s->nm) memcpy(c->m, s->m, s->nm * sizeof *c->m);
  c->ntok = s->ntok;
  c->nm = s->nm;
  c->ntext = s->ntext;
  c->ph_i = s->ph_i;
  c->cat_i = s->cat_i;
  c->name_i = s->name_i;
  c->pid_i = s->pid_i;
  c->tid_i = s->tid_i;
  sc_chrome_event *e = &c->ev;
  e->ph = s->ph;
  e->has_ts = s->has_ts;
  e->has_dur = s->has_dur;
  e->ts_shadowed = s->ts_shadowed;
  e->dur_shadowed = s->dur_shadowed;
  e->ts_ns = ts;
  e->dur_ns = dur;
  return 1;
}

/* The shape of the event at b[p] (after its '{'; depth as event_fast_one's,
 * tag of its first bytes) taken when one matches: the index past its
 * '}', or 0. */
static size_t shape_find(sc_chrome *c, const fast_buf *f, size_t p, int depth, uint64_t tag) {
  sc_chrome_shape *set = shape_set(c, tag);
  int first = set->last; /* the entry met last first: older ones of the tag may be stale (an id grew a digit) */
  for (int k = 0; k < SC_CHROME_SHAPE_WAYS; k++) {
    int w = k ? k - (k <= first) : first;
    sc_chrome_shape *s = &set[w];
    if (s->n && s->tag == tag && s->depth == depth && shape_match(s, f->b + p, f->len - p) && shape_take(c, s, f, p)) {
      s->used = c->shape_clock;
      set->last = (uint8_t)w;
      c->shape_hits++;
      return p + s->n;
    }
  }
  return 0;
}

/* Sets the bits of the bytes [from, to) in a shape's free digits. */
static void free_range(uint16_t *bits, size_t from, size_t to) {
  while (from < to) {
    size_t w = from >> 4, end = to - (w << 4) < 16 ? to - (w << 4) : 16;
    bits[w] |= (uint16_t)(((1u << end) - 1) & ~((1u << (from & 15)) - 1));
    from = (w + 1) << 4;
  }
}

/* Remembers the event just read in place from b[p] (after its '{') to its
 * '}' at b[end - 1] as a shape (tag and depth as for shape_find), in the
 * place of the set's entry met least recently; not when it is too long or
 * keeps too much. */
static NOINLINE void shape_learn(sc_chrome *c, const fast_buf *f, size_t p, size_t end, int depth, uint64_t tag) {
  size_t n = end - p;
  if (n > SC_CHROME_SHAPE_BYTES || c->ntok > SC_CHROME_SHAPE_TOKENS || c->nm > SC_CHROME_SHAPE_MEMBERS ||
      c->nnum > SC_CHROME_SHAPE_NUMBERS || c->ntext > UINT32_MAX)
    return;
  sc_chrome_shape *s = shape_set(c, tag), *w = s;
  for (int k = 1; k < SC_CHROME_SHAPE_WAYS && w->n; k++)
    if (!s[k].n || c->shape_clock - s[k].used > c->shape_clock - w->used) w = &s[k];
  const unsigned char *b = f->b + p;
  w->n = 0; /* empty unless filled whole */
  memset(w->free_digits, 0, sizeof w->free_digits);
  w->ntime = 0;
  for (uint32_t k = 0; k < c->nnum; k++) {
    sc_jnum num;
    size_t at = c->num_at[k] - p;
    if (sc__json_number_scan(b + at, f->len - p - at, &num) != (ptrdiff_t)c->num_n[k]) return;
    if (c->num_field[k] == SC_CHROME_TS || c->num_field[k] == SC_CHROME_DUR) {
      if (w->ntime == SC_CHROME_SHAPE_TIMES) return;
      sc_chrome_shape_time *tm = &w->time[w->ntime++];
      tm->at = (uint16_t)at;
      tm->n = c->num_n[k];
      tm->is_ts = c->num_field[k] == SC_CHROME_TS;
      tm->int_at = (uint8_t)num.int_at;
      tm->int_len = (uint8_t)num.int_len;
      tm->frac_len = (uint8_t)num.frac_len;
      tm->neg = (uint8_t)num.neg;
      tm->exp = (uint8_t)num.exp;
    }
    if (num.exp) continue; /* its digits stay as they are */
    size_t first = at + num.int_at; /* the integer's first digit stays: no leading zero appears */
    free_range(w->free_digits, first + 1, first + num.int_len);
    free_range(w->free_digits, first + num.int_len + 1, first + num.int_len + 1 + num.frac_len);
  }
  uint64_t base = f->base + p;
  for (size_t k = 0; k < c->ntok; k++) {
    const sc_jtok *t = &c->tok[k];
    sc_chrome_shape_tok *st = &w->tok[k];
    if (t->escaped || t->offset < base || t->offset - base >= n || t->n > n) return;
    st->at = (uint16_t)(t->offset - base);
    if (t->s) {
      size_t s_at = (size_t)((const unsigned char *)t->s - b);
      if ((const unsigned char *)t->s < b || s_at > n) return;
      st->s_at = (uint16_t)s_at;
    } else {
      st->s_at = SC_CHROME_SHAPE_NONE;
    }
    st->n = (uint16_t)t->n;
    st->type = (uint8_t)t->type;
    st->depth = (uint8_t)t->depth;
  }
  if (c->nm) memcpy(w->m, c->m, c->nm * sizeof *c->m); /* c->m is NULL until a member is kept */
  memcpy(w->text, b, n);
  w->ntok = (uint8_t)c->ntok;
  w->nm = (uint8_t)c->nm;
  w->ntext = (uint32_t)c->ntext;
  w->ph_i = (int8_t)c->ph_i;
  w->cat_i = (int8_t)c->cat_i;
  w->name_i = (int8_t)c->name_i;
  w->pid_i = (int8_t)c->pid_i;
  w->tid_i = (int8_t)c->tid_i;
  w->ph = c->ev.ph;
  w->has_ts = (uint8_t)c->ev.has_ts;
  w->has_dur = (uint8_t)c->ev.has_dur;
  w->ts_shadowed = (uint8_t)c->ev.ts_shadowed;
  w->dur_shadowed = (uint8_t)c->ev.dur_shadowed;
  w->past_end = (uint16_t)(n & 15 ? 0xffffu << (n & 15) : 0);
  w->depth = depth;
  w->tag = tag;
  w->used = c->shape_clock;
  s->last = (uint8_t)(w - s);
  w->n = (uint16_t)n;
}
#endif

/* Right after an event's '{' (event_begin done): reads the event in place
 * and hands it out. Nonzero: done (the tokenizer is past its '}'), unless
 * c->err was set (out of memory, or the event callback's code); 0: give up
 * (the tokenizer is where it was: reset the event, take the token path). */
static int event_fast_one(sc_chrome *c) {
  sc_json *j = &c->j;
  if (j->carry_type || j->err) return 0;
  if (!c->gaps) { /* the gaps and the shapes in one block */
    if (!(c->gaps = sc__calloc(c->ctx, 1, MEMO_BYTES))) return fast_nomem(c, c->ev.offset);
    c->shapes = (sc_chrome_shape *)(void *)(c->gaps + SC_CHROME_GAPS);
  }
  fast_buf f = {(const unsigned char *)j->buf, j->len, j->base};
  const unsigned char *b = f.b;
  size_t i, e;
  int depth = j->depth, rc = SC_OK, unread = 0; /* containers open inside the event */
  uint32_t prev = GAP_START, ctx = 0;
  int fld, close, val;
  int64_t ns = 0;
  sc_jtok t;
  c->shape_clock++;
#if defined(__SSE2__)
  size_t p = j->pos;
  uint64_t tag = 0;
  int tagged = f.len - p >= SHAPE_TAG_BYTES;
  if (tagged) {
    tag = shape_tag(b + p);
    if ((i = shape_find(c, &f, p, depth, tag))) goto done;
  }
#endif
  c->nnum = 0;
  for (uint32_t k = 0;; k++) {
    sc_chrome_gap *g;
    if (!(i = fast_gap(c, &f, k ? i : j->pos, GAP_EVENT, k, ctx, &prev, &g, &fld, &close, &val))) return 0;
    if (close) break;
    if (fld == SC_CHROME_NAME && unread) return 0; /* a later name could read what was skipped */
    if (fld == FIELD_ARGS && b[i] == '{') {
      if (!(i = fast_args(c, &f, i, depth + 1, ctx, &rc, &unread))) return rc;
    } else if (b[i] == '{' || b[i] == '[') { /* a container: skipped */
      if (!(i = fast_skip(c, &f, i, depth))) return 0;
    } else if (fld < 0) { /* not read */
      if (!(i = fast_value(&f, i, g, val, 0, &t, &ns))) return 0;
      note_number(c, &f, &t, -1);
    } else {
      int want_ns = fld == SC_CHROME_TS || fld == SC_CHROME_DUR;
      if (!(e = fast_value(&f, i, g, val, want_ns, &t, &ns)) || !fast_std(c, fld, &t, ns, &rc)) return rc;
      note_number(c, &f, &t, want_ns ? fld : -1);
      i = e;
      if ((fld == SC_CHROME_PH || fld == SC_CHROME_CAT) && t.type == SC_JT_STRING)
        ctx = (ctx + string_hash(&t)) * 0x85ebca77u; /* what the gaps that follow depend on */
    }
  }
#if defined(__SSE2__)
  if (tagged) {
    /* learned on the second sight of its tag: an event met once (a sampled
     * trace's) costs the tag only */
    uint64_t *seen = &c->shape_seen[tag >> 8 & (SC_CHROME_SHAPE_SEEN - 1)];
    if (*seen == tag) shape_learn(c, &f, p, i, depth, tag);
    else *seen = tag;
  }
done:
#endif
  sc__json_close_object(j, i - 1);
  rc = event_done(c);
  return rc ? rc : 1;
}

/* Right after an event's '{' (event_begin done): event_fast_one, then, as
 * long as the next event follows in the buffer (',' and '{' after white
 * space), that one too without the tokenizer's tokens for them. Nonzero:
 * done, and the tokenizer is past the last event read or, when the fast
 * path gave up on a later one, right after that one's '{' with the event
 * begun afresh for the token path; unless c->err was set. 0: gave up on the
 * first event, as event_fast_one. */
static int event_fast(sc_chrome *c) {
  sc_json *j = &c->j;
  int rc = event_fast_one(c);
  while (rc == 1) {
    const unsigned char *b = (const unsigned char *)j->buf;
    size_t i = sc__json_ws(b, j->pos, j->len);
    if (i == j->len || b[i] != ',' || (i = sc__json_ws(b, i + 1, j->len)) == j->len || b[i] != '{' ||
        !sc__json_open_next(j, i))
      return 1;
    event_begin(c, j->base + i);
    if (!(rc = event_fast_one(c))) {
      event_begin(c, j->base + i); /* what the fast path kept is dropped */
      return 1;
    }
  }
  return rc;
}

/* A token inside an event; rel = its depth minus the event's. Events'
 * members are at rel 1, args members at rel 2 (any other container is
 * skipped, so deeper tokens are kept values or skipped ones). */
static int event_token(sc_chrome *c, const sc_jtok *t, int rel, int begin) {
  int type = t->type;
  if (rel == 0) {
    if (type == SC_JT_OBJ_BEGIN) {
      event_begin(c, t->offset);
      int done = event_fast(c);
      if (c->err) return c->err;
      if (done) return SC_OK;
      event_begin(c, t->offset); /* what the fast path kept is dropped */
    } else if (type == SC_JT_OBJ_END) return event_done(c);
    else if (begin) c->skip = t->depth; /* an array in traceEvents: not an event */
    return SC_OK;
  }
  if (rel == 1) {
    if (type == SC_JT_KEY) {
      c->field = std_field(t);
      if (c->field == -1) sc__json_skip_value(&c->j); /* a member no reader reads */
      return SC_OK;
    }
    if (c->field == FIELD_ARGS && type == SC_JT_OBJ_BEGIN) return SC_OK; /* into args */
    if (type == SC_JT_OBJ_END) return SC_OK;                              /* out of args */
    if (begin) {
      c->skip = t->depth;
      return SC_OK;
    }
    return c->field >= 0 ? std_value(c, t) : SC_OK;
  }
  if (type == SC_JT_KEY) {
    c->arg = key_find(&c->args, t->s, t->n);
    if (c->arg < 0) sc__json_skip_value(&c->j); /* an args member not registered */
    return SC_OK;
  }
  if (c->arg < 0) {
    if (begin) c->skip = t->depth;
    return SC_OK;
  }
  int rc = member(c, SC_CHROME_ARG + c->arg);
  if (!rc) rc = keep(c, t, 0);
  if (!rc && begin) {
    c->keep_depth = t->depth;
    c->keep_item = 0;
  }
  return rc;
}

/* ------------------------------------------------------------ metadata */

static int item_done(sc_chrome *c, int section, int key) {
  sc_chrome_item it = {section, key, c->tok, c->ntok};
  int rc = c->spec->item ? c->spec->item(c->ud, &it) : SC_OK;
  uint64_t off = c->ntok ? c->tok[0].offset : 0;
  keep_reset(c);
  return rc ? fail(c, SC_CHROME_ECALLBACK, rc, off, "") : SC_OK;
}

/* The first token of a registered metadata value: a scalar is handed out at
 * once, a container once its END arrives. */
static int item_begin(sc_chrome *c, const sc_jtok *t, int section, int key, int begin) {
  keep_reset(c);
  int rc = keep(c, t, 0);
  if (rc) return rc;
  if (!begin) return item_done(c, section, key);
  c->keep_depth = t->depth;
  c->keep_item = section;
  c->keep_key = key;
  return SC_OK;
}

/* A token at depth 1 of a top-level object: member names and values. */
static int top_token(sc_chrome *c, const sc_jtok *t, int begin) {
  int type = t->type;
  if (type == SC_JT_KEY) {
    c->top_key = -1;
    if (is_key(t, "traceEvents", 11)) c->top = TOP_EVENTS;
    else if (is_key(t, "distributedInfo", 15)) c->top = TOP_DIST;
    else if ((c->top_key = key_find(&c->meta, t->s, t->n)) >= 0) c->top = TOP_META;
    else c->top = TOP_SKIP;
    return SC_OK;
  }
  if (type == SC_JT_OBJ_END || type == SC_JT_ARR_END) { /* traceEvents or distributedInfo ends */
    c->evd = 0;
    c->top = TOP_NONE;
    return SC_OK;
  }
  if (c->top == TOP_EVENTS && type == SC_JT_ARR_BEGIN) {
    c->evd = 2;
    c->saw_events = 1;
    return SC_OK;
  }
  if (c->top == TOP_DIST && type == SC_JT_OBJ_BEGIN) {
    c->arg = -1;
    return SC_OK;
  }
  if (c->top == TOP_META) return item_begin(c, t, SC_CHROME_META, c->top_key, begin);
  if (begin) c->skip = t->depth;
  return SC_OK;
}

/* A token at depth 2 inside distributedInfo: its members. */
static int dist_token(sc_chrome *c, const sc_jtok *t, int begin) {
  if (t->type == SC_JT_KEY) {
    c->arg = key_find(&c->dist, t->s, t->n);
    return SC_OK;
  }
  if (c->arg < 0) {
    if (begin) c->skip = t->depth;
    return SC_OK;
  }
  return item_begin(c, t, SC_CHROME_DIST, c->arg, begin);
}

/* ------------------------------------------------------------ the walk */

/* One token of the document: skipped, kept as part of a value, or placed
 * (top level, events, distributedInfo). 0 or an error code (a callback's,
 * SC_ENOMEM, or the spec's format error, set on c). */
static int on_token(sc_chrome *c, const sc_jtok *t) {
  int d = t->depth, type = t->type;
  int end = type == SC_JT_OBJ_END || type == SC_JT_ARR_END;
  if (c->skip >= 0) {
    if (end && d == c->skip) c->skip = -1;
    return SC_OK;
  }
  if (c->keep_depth >= 0) { /* inside a kept container value */
    int rc = keep(c, t, d - c->keep_depth);
    if (rc || !end || d != c->keep_depth) return rc;
    c->keep_depth = -1;
    if (c->keep_item) return item_done(c, c->keep_item, c->keep_key);
    c->m[c->nm - 1].count = (uint32_t)(c->ntok - c->m[c->nm - 1].first);
    return SC_OK;
  }
  int begin = type == SC_JT_OBJ_BEGIN || type == SC_JT_ARR_BEGIN;
  if (d == 0) {
    if (type == SC_JT_ARR_BEGIN) { /* a bare array of events */
      c->root_array = 1;
      c->evd = 1;
      c->saw_events = 1;
    } else if (type == SC_JT_ARR_END) {
      c->evd = 0;
    } else if (type != SC_JT_OBJ_BEGIN && type != SC_JT_OBJ_END && c->spec->not_object) {
      return fail(c, SC_CHROME_EFORMAT, SC_EINVAL, t->offset, c->spec->not_object);
    }
    return SC_OK;
  }
  if (c->evd && d >= c->evd) return event_token(c, t, d - c->evd, begin);
  if (d == 1 && !c->root_array) return top_token(c, t, begin);
  if (d == 2 && c->top == TOP_DIST) return dist_token(c, t, begin);
  if (begin) c->skip = d;
  return SC_OK;
}

/* Pulls every token of the input so far through the walk. */
static int pump(sc_chrome *c) {
  sc_jtok t;
  int rc;
  while ((rc = sc__json_next(&c->j, &t)) == 1) {
    int e = on_token(c, &t);
    if (e) return c->err ? c->err : fail(c, SC_CHROME_ECALLBACK, e, t.offset, "");
  }
  if (rc < 0) return fail(c, SC_CHROME_EJSON, rc, c->j.err_off, c->j.errmsg);
  return SC_OK;
}

int sc__chrome_init(sc_chrome *c, sc_ctx *ctx, const sc_chrome_spec *spec, void *ud) {
  memset(c, 0, sizeof *c);
  if (keys_init(&c->args, spec->arg_keys) || keys_init(&c->dist, spec->dist_keys) ||
      keys_init(&c->meta, spec->meta_keys))
    return SC_EINVAL;
  sc__json_init(&c->j, ctx);
  c->ctx = ctx;
  c->spec = spec;
  c->ud = ud;
  c->skip = -1;
  c->keep_depth = -1;
  c->field = c->arg = c->top_key = -1;
  c->ph_i = c->cat_i = c->name_i = c->pid_i = c->tid_i = -1;
  c->errmsg = "";
  return SC_OK;
}

void sc__chrome_free(sc_chrome *c) {
  sc_ctx *ctx = c->ctx;
  if (!ctx) return;
  sc__json_free(&c->j);
  sc__free(ctx, c->m, c->m_cap * sizeof *c->m);
  sc__free(ctx, c->tok, c->tok_cap * sizeof *c->tok);
  sc__free(ctx, c->text, c->text_cap);
  if (c->gaps) sc__free(ctx, c->gaps, MEMO_BYTES);
  c->gaps = NULL;
  c->shapes = NULL;
  c->m = NULL;
  c->tok = NULL;
  c->text = NULL;
  c->m_cap = c->tok_cap = c->text_cap = 0;
}

int sc__chrome_feed(sc_chrome *c, const char *buf, size_t len) {
  if (c->err) return c->err;
  sc__json_feed(&c->j, buf, len);
  return pump(c);
}

int sc__chrome_end(sc_chrome *c) {
  if (c->err) return c->err;
  sc__json_end(&c->j);
  sc__json_feed(&c->j, "", 0);
  return pump(c);
}
