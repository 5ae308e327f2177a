/*
 * json_int.h: a streaming pull tokenizer for JSON, the front of the trace
 * importers (Kineto, PyTorch execution traces). Input arrives in buffers of any
 * size split at any byte (sc__json_feed); the consumer pulls one token at a
 * time (sc__json_next) and never sees a document tree, so multi-GB traces are
 * read in constant memory. The grammar (RFC 8259) is checked as tokens go by.
 */
#ifndef SC_JSON_INT_H
#define SC_JSON_INT_H

#include "base/sc_int.h"

#include <stddef.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Containers nested deeper than this are rejected (traces nest < 10). */
#define SC_JSON_MAX_DEPTH 128
/* A single string or number longer than this is rejected (kernel names with
 * full C++ template arguments reach a few KiB; this bounds the carry buffer). */
#define SC_JSON_MAX_TOKEN (16u << 20)

typedef enum {
  SC_JT_OBJ_BEGIN = 1,
  SC_JT_OBJ_END,
  SC_JT_ARR_BEGIN,
  SC_JT_ARR_END,
  SC_JT_KEY,    /* object member name */
  SC_JT_STRING, /* string value */
  SC_JT_NUMBER,
  SC_JT_TRUE,
  SC_JT_FALSE,
  SC_JT_NULL
} sc_jtype;

/* One token. s/n: for KEY and STRING the raw bytes between the quotes
 * (escapes not decoded, `escaped` says whether there are any); for NUMBER the
 * number's text. s is borrowed: valid until the next sc__json_next or feed.
 * depth: containers open around the token (a BEGIN token reports the depth
 * outside the container it opens, its END the same). offset: stream offset of
 * the token's first byte. */
typedef struct sc_jtok {
  sc_jtype type;
  int depth;
  int escaped;
  const char *s;
  size_t n;
  uint64_t offset;
} sc_jtok;

typedef struct sc_json {
  sc_ctx *ctx;
  const char *buf; /* current input (borrowed) */
  size_t len, pos;
  uint64_t base;   /* stream offset of buf[0] */
  int eof;
  /* A token cut by the end of a buffer: its bytes so far and scanner state. */
  char *carry;
  size_t carry_len, carry_cap;
  int carry_type;      /* 0: none; else the token type being completed */
  int carry_is_key;
  uint64_t carry_off;
  uint32_t scan;       /* resumable scanner state of the cut token */
  int carry_escaped;
  int carry_emitted;   /* the completed carry token was handed out: reset on next call */
  /* Grammar. */
  uint8_t stack[SC_JSON_MAX_DEPTH]; /* 1 object, 2 array */
  int depth;
  int expect;
  /* Error: message and stream offset (sticky). */
  int err;
  uint64_t err_off;
  char errmsg[160];
} sc_json;

/* Prepares a tokenizer bound to ctx (for the carry buffer). Never fails. */
void sc__json_init(sc_json *j, sc_ctx *ctx);
/* Releases the carry buffer. */
void sc__json_free(sc_json *j);
/* Hands the next input buffer to the tokenizer. The bytes must stay valid
 * until sc__json_next returns 0 (all consumed). */
void sc__json_feed(sc_json *j, const char *buf, size_t len);
/* Declares the end of input, so that a number at the very end completes. */
void sc__json_end(sc_json *j);

/* Pulls the next token into *t. Returns 1 (a token), 0 (input exhausted:
 * feed more, or after sc__json_end the document is complete), or SC_EINVAL
 * with j->errmsg and j->err_off set (malformed or truncated input), or
 * SC_ENOMEM (the carry buffer could not grow). Errors are sticky. */
int sc__json_next(sc_json *j, sc_jtok *t);

/* Right after a KEY token: skips the ':' and the member's value, without
 * handing out its tokens, when the value lies whole in the current buffer
 * and is well formed (sixteen bytes at a time through strings). Returns 1
 * (skipped: the next token is what follows the value) or 0 (nothing
 * consumed: pull the value's tokens as usual, which also words any error).
 * For readers that do not read a member, so that its value costs a scan and
 * no tokens. */
int sc__json_skip_value(sc_json *j);

/* Decodes the escapes of a raw string token into out (UTF-8; \u escapes
 * with surrogate pairs; invalid escapes decode to '?'). Writes at most cap-1
 * bytes plus a terminating 0 and returns the decoded length before
 * truncation. */
size_t sc__json_unescape(const char *s, size_t n, char *out, size_t cap);

/* Parses a NUMBER token as an integer (a fraction of zeros is accepted,
 * "68.0"). Returns 0 or SC_EINVAL (not an integer, or out of int64 range). */
int sc__json_int(const char *s, size_t n, int64_t *out);
/* Parses a decimal NUMBER in microseconds (fraction, exponent allowed) to
 * integer nanoseconds, rounded half away from zero, without going through
 * a double ("1682725898094377.891" keeps every digit). SC_EINVAL if the
 * text is not a number or the result leaves int64. */
int sc__json_us_to_ns(const char *s, size_t n, int64_t *out);
/* Parses a NUMBER token as a double (strtod semantics); SC_EINVAL if not a number. */
int sc__json_double(const char *s, size_t n, double *out);

/* A member of a small JSON document's top-level object, or of the one
 * object member named `nested` (parent is then that name, else ""): its
 * decoded key, its value token (a scalar, or the BEGIN token of a container,
 * whose contents are skipped) and the line of its key. Nonzero stops the
 * walk and is returned. */
typedef int (*sc_json_member_fn)(void *ud, const char *parent, const char *key,
                                 const sc_jtok *value, int line);

/* Walks the members of the JSON object in text (len bytes, a whole
 * document: config.json files, saved results). Errors name `name` and the
 * line: "expected a JSON object (WHAT)", "empty input", the tokenizer's
 * message for malformed input. Returns SC_OK, SC_EINVAL, SC_ENOMEM or what
 * fn returned. */
int sc__json_members(sc_ctx *ctx, const char *name, const char *what, const char *text,
                     size_t len, const char *nested, sc_json_member_fn fn, void *ud);

/* ------------------------------------------------------------ scanning in place
 * The scanners of the tokenizer's common cases, shared with readers that
 * read whole values in place (chrome.c's event fast path); each only
 * succeeds on what the tokenizer accepts. */

/* Index of the first byte of b[i..len) that is not whitespace, len if none.
 * Pretty-printed traces (Kineto indents every member) spend a fifth of their
 * bytes on whitespace, in short runs ("\n    ", " "), and most calls find
 * none or one space: a test for a byte above ' ' (never whitespace), one
 * for a single space, then sixteen bytes at a time with SSE2 (the
 * indentation after a newline), then one table load a byte. */
static inline size_t sc__json_ws(const unsigned char *b, size_t i, size_t len) {
  static const unsigned char ws[256] = {[' '] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};
  if (i < len && b[i] > ' ') return i;
  if (i + 1 < len && b[i] == ' ' && b[i + 1] > ' ') return i + 1; /* ", " and ": " */
#if defined(__SSE2__)
  for (; i + 16 <= len; i += 16) {
    __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(w, _mm_set1_epi8('\n'))),
                             _mm_or_si128(_mm_cmpeq_epi8(w, _mm_set1_epi8('\t')), _mm_cmpeq_epi8(w, _mm_set1_epi8('\r'))));
    unsigned other = ~(unsigned)_mm_movemask_epi8(m) & 0xffffu;
    if (other) return i + (size_t)__builtin_ctz(other);
  }
#endif
  while (i < len && ws[b[i]]) i++;
  return i;
}

/* Index of the first byte of p[0..n) that ends a run of plain string bytes
 * (a quote, a backslash or a control character), n if none. Sixteen bytes
 * at a time with SSE2 (every x86-64 has it: kernel names run to hundreds of
 * bytes); else eight at a time where the byte order allows: the lowest
 * flagged byte of each zero-byte test is a true match (a borrow only flags
 * bytes above one), so the lowest of the three is the first stop. */
static inline size_t sc__json_str_stop(const unsigned char *p, size_t n) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
    /* control: w < 0x20 unsigned, i.e. min(w, 0x1f) == w */
    __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(w, _mm_set1_epi8(0x1f)), w);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, bslash)), ctl);
    unsigned mask = (unsigned)_mm_movemask_epi8(hit);
    if (mask) return i + (size_t)__builtin_ctz(mask);
  }
#elif defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w);
    hit &= highs;
    if (hit) return i + ((size_t)__builtin_ctzll(hit) >> 3);
  }
#endif
  while (i < n && p[i] >= 0x20 && p[i] != '"' && p[i] != '\\') i++;
  return i;
}

static inline int sc__json_is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* How many of the bytes p[0..n) are digits before the first that is not.
 * Sixteen bytes at a time with SSE2 (a Kineto timestamp has 16 integer
 * digits), else a byte at a time. */
static inline size_t sc__json_digits(const unsigned char *p, size_t n) {
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 16 <= n; i += 16) {
    __m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), _mm_set1_epi8('0'));
    __m128i digit = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d); /* d <= 9 unsigned */
    unsigned other = ~(unsigned)_mm_movemask_epi8(digit) & 0xffffu;
    if (other) return i + (size_t)__builtin_ctz(other);
  }
#endif
  while (i < n && sc__json_is_digit(p[i])) i++;
  return i;
}

/* Where the parts of a number the fast scanner took lie (indices into its
 * text): for sc__json_us_fast. */
typedef struct sc_jnum {
  size_t int_at, int_len, frac_len; /* the fraction starts at int_at + int_len + 1 */
  int neg, exp;                     /* a '-' sign; an exponent */
} sc_jnum;

/* The common case of the number scanner: a number that ends inside p[0..n)
 * and is well formed. Returns the index just past it, or -1 when the exact
 * scanner must decide (the buffer ends inside it, or it is malformed: that
 * scanner words the error). Where it returns an index the exact scanner
 * returns the same one. *num: where its parts are. */
static inline ptrdiff_t sc__json_number_scan(const unsigned char *p, size_t n, sc_jnum *num) {
  size_t i = 0, k;
  num->neg = n && p[0] == '-';
  i = num->int_at = (size_t)num->neg;
  if (i < n && p[i] == '0') i++;
  else if (!(k = sc__json_digits(p + i, n - i))) return -1;
  else i += k;
  num->int_len = i - num->int_at;
  num->frac_len = 0;
  num->exp = 0;
  if (i < n && p[i] == '.') {
    if (!(k = sc__json_digits(p + i + 1, n - i - 1))) return -1;
    num->frac_len = k;
    i += k + 1;
  }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    num->exp = 1;
    i++;
    if (i < n && (p[i] == '+' || p[i] == '-')) i++;
    if (!(k = sc__json_digits(p + i, n - i))) return -1;
    i += k;
  }
  if (i >= n) return -1;
  unsigned char c = p[i];
  if (sc__json_is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') return -1;
  return (ptrdiff_t)i;
}

static inline ptrdiff_t sc__json_number_end(const unsigned char *p, size_t n) {
  sc_jnum num;
  return sc__json_number_scan(p, n, &num);
}

/* The value of the k digits (1 <= k <= 8) at p, reading the eight bytes
 * p[0..8): a word of them, shifted so that the missing digits are leading
 * zeros, folded pairwise (10, 100, 10^4). A borrow of the subtraction only
 * runs from the bytes after the digits upward, and those are shifted out. */
static inline uint64_t sc__json_digits8(const unsigned char *p, size_t k) {
  uint64_t w;
  memcpy(&w, p, 8);
  w = (w - 0x3030303030303030u) << (8 * (8 - k));
  w = (w * 10 + (w >> 8)) & 0x00ff00ff00ff00ffu;
  w = (w * 100 + (w >> 16)) & 0x0000ffff0000ffffu;
  return (w * 10000 + (w >> 32)) & 0xffffffffu;
}

/* sc__json_us_to_ns of the number text p[0..end) scanned into num, when
 * it has at most 16 integer and 3 fraction digits, no exponent, and the
 * eight bytes after each part's start lie before p + avail: 1 and *ns (the
 * value sc__json_us_to_ns gives), or 0: ask sc__json_us_to_ns. */
static inline int sc__json_us_fast(const unsigned char *p, size_t avail, const sc_jnum *num, int64_t *ns) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  size_t k = num->int_len, f = num->frac_len, at = num->int_at;
  if (num->exp || k > 16 || f > 3 || at + k + 1 + 8 > avail) return 0;
  uint64_t v = k > 8 ? sc__json_digits8(p + at, k - 8) * 100000000u + sc__json_digits8(p + at + k - 8, 8)
                     : sc__json_digits8(p + at, k);
  static const uint32_t scale[4] = {1000, 100, 10, 1};
  v = v * 1000 + (f ? sc__json_digits8(p + at + k + 1, f) : 0) * scale[f];
  if (v > (uint64_t)INT64_MAX) return 0;
  *ns = num->neg ? -(int64_t)v : (int64_t)v;
  return 1;
#else
  (void)p, (void)avail, (void)num, (void)ns;
  return 0;
#endif
}

/* Index just past the JSON value that starts at or after b[i] (after
 * whitespace), or 0 when the value is not whole inside b[0..len), is
 * malformed, or nests too deep (counting the `depth` containers open around
 * it): what sc__json_skip_value skips. */
size_t sc__json_value_end(const unsigned char *b, size_t i, size_t len, int depth);

/* For a reader that has read the rest of the innermost open object in
 * place, from the current position to its '}' at buf[close] (all well
 * formed, as checked by the scanners above): the tokenizer continues after
 * it as if it had handed out those tokens and the END. The object must be
 * open (its BEGIN handed out) and no token cut. */
void sc__json_close_object(sc_json *j, size_t close);

/* For a reader that found in place, after the value just completed (and
 * every token before it handed out or closed as above), the ',' of the
 * array around it and then an object's '{' at buf[open], white space
 * between: the tokenizer continues after that '{' as if it had handed out
 * its BEGIN. Returns 1, or 0 (nothing changed) when the value is not in an
 * array, a token is cut, or the '{' would nest too deep (the tokenizer
 * then reads it and words the error). */
int sc__json_open_next(sc_json *j, size_t open);

#endif /* SC_JSON_INT_H */
