/*
 * json.c: the streaming JSON pull tokenizer of the trace importers (see
 * json_int.h). Tokens are scanned in place in the caller's buffer; only a
 * token cut by the end of a buffer is copied, into a small carry buffer, and
 * completed from the next buffer by the same resumable scanners. Numbers are
 * handed out as text and parsed exactly on demand (timestamps to int64 ns).
 */
#include "base/json_int.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

/* Rare paths (errors, tokens cut by a buffer end, escapes, numbers the fast
 * scan leaves to the DFA) kept out of line, so that the token loop's common
 * cases need fewer registers saved on each call. */
#if defined(__GNUC__)
#define COLD __attribute__((noinline, cold))
#else
#define COLD
#endif

/* What the grammar allows next. */
enum {
  E_VALUE = 0, /* a value (top level, after ':' or ',' in an array) */
  E_FIRST_VALUE, /* right after '[': a value or ']' */
  E_KEY,         /* after ',' in an object: a key */
  E_FIRST_KEY,   /* right after '{': a key or '}' */
  E_COLON,
  E_COMMA,       /* after a value inside a container: ',' or the closer */
  E_DONE         /* the top-level value is complete */
};

enum { C_OBJ = 1, C_ARR = 2 };

/* Byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control. */
static const unsigned char str_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
};

static int is_hex(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Result of a scanner over one buffer: the index just past the token, or one
 * of these. */
#define SCAN_MORE ((ptrdiff_t)-1) /* the buffer ended inside the token */
#define SCAN_BAD ((ptrdiff_t)-2)  /* malformed token */

/* String scanner. State: 0 plain, 1 after a backslash, 2+k: k hex digits of
 * a \u escape still due. Starts after the opening quote; returns the index
 * just past the closing quote. *esc is set when an escape is seen. */
COLD static ptrdiff_t scan_string(const unsigned char *p, size_t n, uint32_t *st, int *esc) {
  size_t i = 0;
  uint32_t s = *st;
  while (i < n) {
    if (s == 0) {
      i += sc__json_str_stop(p + i, n - i);
      if (i == n) break;
      switch (str_class[p[i]]) {
      case 1:
        *st = 0;
        return (ptrdiff_t)(i + 1);
      case 2:
        *esc = 1;
        s = 1;
        i++;
        break;
      default:
        return SCAN_BAD; /* raw control character */
      }
    } else if (s == 1) {
      switch (p[i]) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        s = 0;
        break;
      case 'u':
        s = 2 + 4;
        break;
      default:
        return SCAN_BAD;
      }
      i++;
    } else {
      if (!is_hex(p[i])) return SCAN_BAD;
      s = s == 3 ? 0 : s - 1;
      i++;
    }
  }
  *st = s;
  return SCAN_MORE;
}

/* Number scanner (RFC 8259 grammar) as a DFA. States: */
enum { N_START = 0, N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

static int n_accepting(uint32_t s) { return s == N_ZERO || s == N_INT || s == N_FRAC || s == N_EXP; }

/* Returns the index of the first byte after the number, SCAN_MORE, or SCAN_BAD. */
COLD static ptrdiff_t scan_number(const unsigned char *p, size_t n, uint32_t *st) {
  uint32_t s = *st;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = p[i];
    int digit = c >= '0' && c <= '9';
    switch (s) {
    case N_START:
      s = c == '-' ? N_SIGN : c == '0' ? N_ZERO : digit ? N_INT : 99;
      break;
    case N_SIGN:
      s = c == '0' ? N_ZERO : digit ? N_INT : 99;
      break;
    case N_ZERO:
    case N_INT:
      if (digit) s = s == N_ZERO ? 99 : N_INT;
      else if (c == '.') s = N_DOT;
      else if (c == 'e' || c == 'E') s = N_E;
      else if (c == '-' || c == '+') s = 99;
      else return *st = s, (ptrdiff_t)i;
      break;
    case N_DOT:
      s = digit ? N_FRAC : 99;
      break;
    case N_FRAC:
      if (digit) break;
      if (c == 'e' || c == 'E') s = N_E;
      else if (c == '.' || c == '-' || c == '+') s = 99;
      else return *st = s, (ptrdiff_t)i;
      break;
    case N_E:
      s = (c == '+' || c == '-') ? N_ESIGN : digit ? N_EXP : 99;
      break;
    case N_ESIGN:
      s = digit ? N_EXP : 99;
      break;
    case N_EXP:
      if (digit) break;
      if (c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') s = 99;
      else return *st = s, (ptrdiff_t)i;
      break;
    }
    if (s == 99) return SCAN_BAD;
  }
  *st = s;
  return SCAN_MORE;
}

/* Literal scanner: state = bytes of lit matched so far. */
COLD static ptrdiff_t scan_literal(const unsigned char *p, size_t n, uint32_t *st, const char *lit) {
  size_t len = strlen(lit), k = *st, i = 0;
  while (i < n && k < len) {
    if (p[i] != (unsigned char)lit[k]) return SCAN_BAD;
    i++, k++;
  }
  *st = (uint32_t)k;
  return k == len ? (ptrdiff_t)i : SCAN_MORE;
}

static const char *literal_of(int type) {
  return type == SC_JT_TRUE ? "true" : type == SC_JT_FALSE ? "false" : "null";
}

void sc__json_init(sc_json *j, sc_ctx *ctx) {
  memset(j, 0, sizeof *j);
  j->ctx = ctx;
  j->expect = E_VALUE;
}

void sc__json_free(sc_json *j) {
  sc__free(j->ctx, j->carry, j->carry_cap);
  j->carry = NULL;
  j->carry_cap = j->carry_len = 0;
}

void sc__json_feed(sc_json *j, const char *buf, size_t len) {
  j->base += j->len;
  j->buf = buf;
  j->len = len;
  j->pos = 0;
}

void sc__json_end(sc_json *j) { j->eof = 1; }

COLD static int fail_code(sc_json *j, int code, uint64_t off, const char *msg) {
  if (!j->err) {
    j->err = code;
    j->err_off = off;
    snprintf(j->errmsg, sizeof j->errmsg, "%s", msg);
  }
  return j->err;
}

COLD static int fail(sc_json *j, uint64_t off, const char *msg) { return fail_code(j, SC_EINVAL, off, msg); }

static int carry_append(sc_json *j, const char *p, size_t n) {
  if (j->carry_len + n > SC_JSON_MAX_TOKEN) return fail(j, j->carry_off, "token too long");
  if (sc__grow(j->ctx, (void **)&j->carry, 1, &j->carry_cap, j->carry_len + n))
    return fail_code(j, SC_ENOMEM, j->carry_off, "out of memory");
  memcpy(j->carry + j->carry_len, p, n);
  j->carry_len += n;
  return SC_OK;
}

/* The grammar step after a complete value. */
static void value_done(sc_json *j) { j->expect = j->depth ? E_COMMA : E_DONE; }

/* Fills t for a scalar or key of `type` whose text is s[0..n), then advances
 * the grammar. For strings s/n include the quotes. */
static void emit_scalar(sc_json *j, sc_jtok *t, int type, const char *s, size_t n, uint64_t off,
                        int escaped) {
  t->depth = j->depth;
  t->offset = off;
  t->escaped = escaped;
  if (type == SC_JT_KEY || type == SC_JT_STRING) {
    t->s = s + 1;
    t->n = n - 2;
  } else {
    t->s = s;
    t->n = n;
  }
  t->type = (sc_jtype)type;
  if (type == SC_JT_KEY) j->expect = E_COLON;
  else value_done(j);
}

/* Completes the token cut at the previous buffer's end from the current one.
 * Returns 1 (emitted into t), 0 (need more input) or SC_EINVAL. */
COLD static int continue_token(sc_json *j, sc_jtok *t) {
  const unsigned char *p = (const unsigned char *)j->buf + j->pos;
  size_t n = j->len - j->pos;
  ptrdiff_t end;
  int type = j->carry_type;
  if (type == SC_JT_STRING || type == SC_JT_KEY) end = scan_string(p, n, &j->scan, &j->carry_escaped);
  else if (type == SC_JT_NUMBER) end = scan_number(p, n, &j->scan);
  else end = scan_literal(p, n, &j->scan, literal_of(type));
  if (end == SCAN_BAD) return fail(j, j->carry_off, type == SC_JT_NUMBER ? "invalid number"
                                                 : type == SC_JT_STRING || type == SC_JT_KEY
                                                     ? "invalid string (control character or bad escape)"
                                                     : "invalid literal");
  size_t take = end == SCAN_MORE ? n : (size_t)end;
  if (carry_append(j, (const char *)p, take)) return j->err;
  j->pos += take;
  if (end == SCAN_MORE) {
    if (!j->eof) return 0;
    if (type != SC_JT_NUMBER || !n_accepting(j->scan))
      return fail(j, j->carry_off, type == SC_JT_STRING || type == SC_JT_KEY
                                       ? "unexpected end of input inside a string"
                                       : "unexpected end of input inside a token");
  }
  emit_scalar(j, t, type, j->carry, j->carry_len, j->carry_off, j->carry_escaped);
  j->carry_emitted = 1;
  return 1;
}

/* Saves the token starting at buf[start] (cut by the buffer end) for later. */
COLD static int cut_token(sc_json *j, int type, size_t start, uint32_t scan, int escaped) {
  j->carry_len = 0;
  j->carry_type = type;
  j->carry_off = j->base + start;
  j->scan = scan;
  j->carry_escaped = escaped;
  if (carry_append(j, j->buf + start, j->len - start)) return j->err;
  j->pos = j->len;
  return 0;
}

int sc__json_next(sc_json *j, sc_jtok *t) {
  if (j->err) return j->err;
  if (j->carry_emitted) {
    j->carry_emitted = 0;
    j->carry_type = 0;
    j->carry_len = 0;
  }
  if (j->carry_type) return continue_token(j, t);
  const unsigned char *b = (const unsigned char *)j->buf;
  const size_t len = j->len;
  for (;;) {
    size_t i = sc__json_ws(b, j->pos, len);
    j->pos = i;
    if (i == len) {
      if (!j->eof) return 0;
      if (j->expect != E_DONE)
        return fail(j, j->base + i, j->expect == E_VALUE && j->depth == 0
                                        ? "empty input"
                                        : "unexpected end of input");
      return 0;
    }
    unsigned char c = b[i];
    uint64_t off = j->base + i;
    if (j->expect == E_DONE) return fail(j, off, "data after the top-level value");
    switch (c) {
    case '{':
    case '[':
      if (j->expect != E_VALUE && j->expect != E_FIRST_VALUE)
        return fail(j, off, j->expect == E_DONE ? "data after the top-level value" : "unexpected '{' or '['");
      if (j->depth == SC_JSON_MAX_DEPTH) return fail(j, off, "nesting too deep");
      t->type = c == '{' ? SC_JT_OBJ_BEGIN : SC_JT_ARR_BEGIN;
      t->depth = j->depth;
      t->offset = off;
      t->s = NULL;
      t->n = 0;
      t->escaped = 0;
      j->stack[j->depth++] = c == '{' ? C_OBJ : C_ARR;
      j->expect = c == '{' ? E_FIRST_KEY : E_FIRST_VALUE;
      j->pos = i + 1;
      return 1;
    case '}':
    case ']': {
      int kind = c == '}' ? C_OBJ : C_ARR;
      int ok = j->depth > 0 && j->stack[j->depth - 1] == kind &&
               (j->expect == E_COMMA || j->expect == (kind == C_OBJ ? E_FIRST_KEY : E_FIRST_VALUE));
      if (!ok) return fail(j, off, c == '}' ? "unexpected '}'" : "unexpected ']'");
      j->depth--;
      t->type = c == '}' ? SC_JT_OBJ_END : SC_JT_ARR_END;
      t->depth = j->depth;
      t->offset = off;
      t->s = NULL;
      t->n = 0;
      t->escaped = 0;
      value_done(j);
      j->pos = i + 1;
      return 1;
    }
    case ':':
      if (j->expect != E_COLON) return fail(j, off, "unexpected ':'");
      j->expect = E_VALUE;
      j->pos = i + 1;
      continue;
    case ',':
      if (j->expect != E_COMMA) return fail(j, off, "unexpected ','");
      j->expect = j->stack[j->depth - 1] == C_OBJ ? E_KEY : E_VALUE;
      j->pos = i + 1;
      continue;
    case '"': {
      int key = j->expect == E_KEY || j->expect == E_FIRST_KEY;
      if (!key && j->expect != E_VALUE && j->expect != E_FIRST_VALUE)
        return fail(j, off, j->expect == E_DONE ? "data after the top-level value" : "unexpected string");
      uint32_t st = 0;
      int esc = 0;
      ptrdiff_t end;
      size_t stop = i + 1 + sc__json_str_stop(b + i + 1, len - i - 1);
      if (stop < len && b[stop] == '"') end = (ptrdiff_t)(stop - i); /* no escape: the common case */
      else end = scan_string(b + i + 1, len - i - 1, &st, &esc);
      if (end == SCAN_BAD) return fail(j, off, "invalid string (control character or bad escape)");
      int type = key ? SC_JT_KEY : SC_JT_STRING;
      if (end == SCAN_MORE) {
        if (j->eof) return fail(j, off, "unexpected end of input inside a string");
        if (cut_token(j, type, i, st, esc)) return j->err;
        return 0;
      }
      j->pos = i + 1 + (size_t)end;
      emit_scalar(j, t, type, (const char *)b + i, (size_t)end + 1, off, esc);
      return 1;
    }
    default: {
      int type;
      if (c == '-' || (c >= '0' && c <= '9')) type = SC_JT_NUMBER;
      else if (c == 't') type = SC_JT_TRUE;
      else if (c == 'f') type = SC_JT_FALSE;
      else if (c == 'n') type = SC_JT_NULL;
      else return fail(j, off, "unexpected character");
      if (j->expect != E_VALUE && j->expect != E_FIRST_VALUE)
        return fail(j, off, j->expect == E_DONE ? "data after the top-level value" : "unexpected value");
      if (type == SC_JT_NUMBER) {
        ptrdiff_t fast = sc__json_number_end(b + i, len - i);
        if (fast > 0) {
          j->pos = i + (size_t)fast;
          emit_scalar(j, t, type, (const char *)b + i, (size_t)fast, off, 0);
          return 1;
        }
      }
      uint32_t st = 0;
      ptrdiff_t end = type == SC_JT_NUMBER ? scan_number(b + i, j->len - i, &st)
                                           : scan_literal(b + i, j->len - i, &st, literal_of(type));
      if (end == SCAN_BAD)
        return fail(j, off, type == SC_JT_NUMBER ? "invalid number" : "invalid literal");
      if (end == SCAN_MORE) {
        if (j->eof) {
          if (type != SC_JT_NUMBER || !n_accepting(st))
            return fail(j, off, "unexpected end of input inside a token");
          end = (ptrdiff_t)(j->len - i);
        } else {
          if (cut_token(j, type, i, st, 0)) return j->err;
          return 0;
        }
      } else if (type == SC_JT_NUMBER && !n_accepting(st)) {
        return fail(j, off, "invalid number");
      }
      j->pos = i + (size_t)end;
      emit_scalar(j, t, type, (const char *)b + i, (size_t)end, off, 0);
      return 1;
    }
    }
  }
}

/* ------------------------------------------------------------ skipping */

/* Index just past the string whose opening quote is b[i], or 0 when it is
 * not whole and well formed inside b[0..len). */
static size_t skip_string(const unsigned char *b, size_t i, size_t len) {
  size_t stop = i + 1 + sc__json_str_stop(b + i + 1, len - i - 1);
  if (stop < len && b[stop] == '"') return stop + 1;
  uint32_t st = 0;
  int esc = 0;
  ptrdiff_t end = scan_string(b + i + 1, len - i - 1, &st, &esc);
  return end >= 0 ? i + 1 + (size_t)end : 0;
}

/* How deep a skipped value may nest (relative): deeper ones take the token
 * path (traces' unread values nest 2-3 deep: "Input Strides"). */
#define SKIP_MAX_DEPTH 32

/* Index just past the JSON value that starts at or after b[i] (after
 * whitespace), or 0 when the value is not whole inside b[0..len), is
 * malformed, or nests too deep (past SC_JSON_MAX_DEPTH counting the `depth`
 * containers around it, or past SKIP_MAX_DEPTH): the token path then reads
 * it and words any error. It accepts exactly what the tokenizer accepts. */
size_t sc__json_value_end(const unsigned char *b, size_t i, size_t len, int depth) {
  unsigned char stack[SKIP_MAX_DEPTH];
  int d = 0;
  for (;;) { /* a value is due */
    i = sc__json_ws(b, i, len);
    if (i == len) return 0;
    unsigned char c = b[i];
    if (c == '{' || c == '[') {
      if (d == SKIP_MAX_DEPTH || depth + d >= SC_JSON_MAX_DEPTH) return 0;
      stack[d++] = c;
      i = sc__json_ws(b, i + 1, len);
      if (i == len) return 0;
      if (b[i] == (c == '{' ? '}' : ']')) {
        d--;
        i++;
        goto after_value;
      }
      if (c == '[') continue;
      goto key;
    } else if (c == '"') {
      if (!(i = skip_string(b, i, len))) return 0;
    } else if (c == '-' || sc__json_is_digit(c)) {
      ptrdiff_t end = sc__json_number_end(b + i, len - i);
      if (end < 0) return 0;
      i += (size_t)end;
    } else {
      const char *lit = c == 't' ? "true" : c == 'f' ? "false" : c == 'n' ? "null" : NULL;
      size_t n = lit ? strlen(lit) : 0;
      if (!lit || len - i < n || memcmp(b + i, lit, n)) return 0;
      i += n;
    }
  after_value:
    if (d == 0) return i;
    i = sc__json_ws(b, i, len);
    if (i == len) return 0;
    c = b[i++];
    if (c == (stack[d - 1] == '{' ? '}' : ']')) {
      d--;
      goto after_value;
    }
    if (c != ',') return 0;
    if (stack[d - 1] == '[') continue;
  key:
    i = sc__json_ws(b, i, len);
    if (i == len || b[i] != '"' || !(i = skip_string(b, i, len))) return 0;
    i = sc__json_ws(b, i, len);
    if (i == len || b[i] != ':') return 0;
    i++;
  }
}

int sc__json_skip_value(sc_json *j) {
  if (j->err || j->carry_type || j->expect != E_COLON) return 0;
  const unsigned char *b = (const unsigned char *)j->buf;
  size_t i = sc__json_ws(b, j->pos, j->len);
  if (i == j->len || b[i] != ':') return 0;
  size_t end = sc__json_value_end(b, i + 1, j->len, j->depth);
  if (!end) return 0;
  j->pos = end;
  value_done(j);
  return 1;
}

void sc__json_close_object(sc_json *j, size_t close) {
  j->pos = close + 1;
  j->depth--;
  value_done(j);
}

int sc__json_open_next(sc_json *j, size_t open) {
  if (j->err || j->carry_type || j->expect != E_COMMA || j->stack[j->depth - 1] != C_ARR ||
      j->depth == SC_JSON_MAX_DEPTH)
    return 0;
  j->stack[j->depth++] = C_OBJ;
  j->expect = E_FIRST_KEY;
  j->pos = open + 1;
  return 1;
}

/* ------------------------------------------------------------ values */

static void put_utf8(char *out, size_t cap, size_t *len, uint32_t cp) {
  char tmp[4];
  size_t n;
  if (cp < 0x80) tmp[0] = (char)cp, n = 1;
  else if (cp < 0x800) tmp[0] = (char)(0xc0 | (cp >> 6)), tmp[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
  else if (cp < 0x10000)
    tmp[0] = (char)(0xe0 | (cp >> 12)), tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
    tmp[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
  else
    tmp[0] = (char)(0xf0 | (cp >> 18)), tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
    tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), tmp[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
  for (size_t k = 0; k < n; k++, (*len)++)
    if (cap && *len < cap - 1) out[*len] = tmp[k];
}

static int hex4(const char *s, size_t n, size_t i, uint32_t *v) {
  if (i + 4 > n) return 0;
  uint32_t x = 0;
  for (size_t k = 0; k < 4; k++) {
    unsigned char c = (unsigned char)s[i + k];
    if (!is_hex(c)) return 0;
    x = x * 16 + (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  *v = x;
  return 1;
}

size_t sc__json_unescape(const char *s, size_t n, char *out, size_t cap) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c != '\\' || i + 1 >= n) {
      if (cap && len < cap - 1) out[len] = c;
      len++;
      continue;
    }
    char e = s[++i];
    uint32_t cp = '?';
    switch (e) {
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u':
      if (hex4(s, n, i + 1, &cp)) {
        i += 4;
        uint32_t lo;
        if (cp >= 0xd800 && cp < 0xdc00 && i + 2 < n && s[i + 1] == '\\' && s[i + 2] == 'u' &&
            hex4(s, n, i + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          i += 6;
        } else if (cp >= 0xd800 && cp < 0xe000) cp = '?';
      } else cp = '?';
      break;
    default: cp = (unsigned char)e; break;
    }
    put_utf8(out, cap, &len, cp);
  }
  if (cap) out[len < cap ? len : cap - 1] = 0;
  return len;
}

/* Exact decimal to integer: the value of s times 10^scale, rounded half away
 * from zero (or, with exact set, failing when a non-zero digit would be
 * dropped). Digits are weighed one by one so no precision is lost. */
static int parse_decimal(const char *s, size_t n, int scale, int exact, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && s[i] == '-') neg = 1, i++;
  size_t int_start = i;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  size_t int_len = i - int_start, frac_start = i, frac_len = 0;
  if (i < n && s[i] == '.') {
    frac_start = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    frac_len = i - frac_start;
  }
  if (int_len + frac_len == 0) return SC_EINVAL;
  long exp = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    int eneg = 0;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
    if (i == n) return SC_EINVAL;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
      i++;
    }
    if (eneg) exp = -exp;
  }
  if (i != n) return SC_EINVAL;
  long p = (long)scale + exp - (long)frac_len; /* value = digits * 10^p */
  size_t total = int_len + frac_len;
  uint64_t acc = 0;
  int round_up = 0;
  for (size_t k = 0; k < total; k++) {
    char c = k < int_len ? s[int_start + k] : s[frac_start + (k - int_len)];
    int d = c - '0';
    long w = p + (long)(total - 1 - k);
    if (w >= 0) {
      if (acc > (uint64_t)(INT64_MAX - d) / 10) return SC_EINVAL;
      acc = acc * 10 + (uint64_t)d;
    } else if (w == -1) {
      if (d >= 5) round_up = 1;
      if (exact && d) return SC_EINVAL;
    } else if (exact && d) return SC_EINVAL;
  }
  for (long k = 0; k < p; k++) {
    if (acc == 0) break;
    if (acc > (uint64_t)INT64_MAX / 10) return SC_EINVAL;
    acc *= 10;
  }
  if (round_up) {
    if (acc == (uint64_t)INT64_MAX) return SC_EINVAL;
    acc++;
  }
  *out = neg ? -(int64_t)acc : (int64_t)acc;
  return SC_OK;
}

/* parse_decimal's common case: an optional '-', at most 19 - scale integer
 * digits, at most `scale` fraction digits, no exponent, so the value times
 * 10^scale has at most 19 digits and fits a uint64_t without a check per
 * digit. 1 and *out set (the value parse_decimal gives), or 0: let
 * parse_decimal decide. */
static int decimal_fast(const char *s, size_t n, int scale, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && s[i] == '-') neg = 1, i++;
  size_t int_start = i;
  uint64_t acc = 0;
  while (i < n && sc__json_is_digit((unsigned char)s[i])) acc = acc * 10 + (uint64_t)(s[i++] - '0');
  size_t int_len = i - int_start;
  if (int_len == 0 || int_len + (size_t)scale > 19) return 0;
  size_t frac_len = 0;
  if (i < n && s[i] == '.') {
    size_t frac_start = ++i;
    while (i < n && sc__json_is_digit((unsigned char)s[i]) && i - frac_start < (size_t)scale)
      acc = acc * 10 + (uint64_t)(s[i++] - '0');
    frac_len = i - frac_start;
    if (frac_len == 0) return 0;
  }
  if (i != n) return 0; /* more fraction digits than scale, an exponent, or junk */
  for (size_t k = frac_len; k < (size_t)scale; k++) acc *= 10;
  if (acc > (uint64_t)INT64_MAX) return 0;
  *out = neg ? -(int64_t)acc : (int64_t)acc;
  return 1;
}

int sc__json_int(const char *s, size_t n, int64_t *out) {
  if (n - 1 < 18) { /* 1 to 18 digits and nothing else (ids, streams, correlations): no overflow */
    uint64_t acc = 0;
    size_t i = 0;
    for (unsigned d; i < n && (d = (unsigned)(unsigned char)s[i] - '0') <= 9; i++) acc = acc * 10 + d;
    if (i == n) {
      *out = (int64_t)acc;
      return SC_OK;
    }
  }
  if (decimal_fast(s, n, 0, out)) return SC_OK;
  return parse_decimal(s, n, 0, 1, out);
}

int sc__json_us_to_ns(const char *s, size_t n, int64_t *out) {
  if (decimal_fast(s, n, 3, out)) return SC_OK;
  return parse_decimal(s, n, 3, 0, out);
}

int sc__json_double(const char *s, size_t n, double *out) {
  char tmp[512];
  if (n == 0 || n >= sizeof tmp) return SC_EINVAL;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  char *end;
  double v = strtod(tmp, &end);
  if (*end) return SC_EINVAL;
  *out = v;
  return SC_OK;
}

/* ------------------------------------------------------------ members */

/* Line (1-based) of byte offset off in text. */
static int text_line(const char *text, size_t len, uint64_t off) {
  int line = 1;
  for (uint64_t i = 0; i < off && i < len; i++) line += text[i] == '\n';
  return line;
}

int sc__json_members(sc_ctx *ctx, const char *name, const char *what, const char *text,
                     size_t len, const char *nested, sc_json_member_fn fn, void *ud) {
  sc_json j;
  sc__json_init(&j, ctx);
  sc__json_feed(&j, text, len);
  sc__json_end(&j);
  sc_jtok t;
  int rc, out = SC_OK, first = 1, inside = 0, skip = -1, key_line = 0;
  char key[128] = "";
  while ((rc = sc__json_next(&j, &t)) == 1) {
    if (first) {
      first = 0;
      if (t.type != SC_JT_OBJ_BEGIN) {
        out = sc__error_at(ctx, SC_EINVAL, name, text_line(text, len, t.offset),
                           "expected a JSON object (%s)", what);
        break;
      }
      continue;
    }
    if (skip >= 0) {
      if ((t.type == SC_JT_OBJ_END || t.type == SC_JT_ARR_END) && t.depth == skip) skip = -1;
      continue;
    }
    if (inside && t.type == SC_JT_OBJ_END && t.depth == 1) {
      inside = 0;
      continue;
    }
    if (t.type == SC_JT_KEY) {
      sc__json_unescape(t.s, t.n, key, sizeof key);
      key_line = text_line(text, len, t.offset);
      continue;
    }
    if (t.type == SC_JT_OBJ_END || t.type == SC_JT_ARR_END) continue; /* the document's end */
    int begins = t.type == SC_JT_OBJ_BEGIN || t.type == SC_JT_ARR_BEGIN;
    if (begins && t.depth == 1 && t.type == SC_JT_OBJ_BEGIN && nested && !strcmp(key, nested)) {
      inside = 1;
      continue;
    }
    if ((out = fn(ud, t.depth == 2 && inside ? nested : "", key, &t, key_line))) break;
    if (begins) skip = t.depth;
  }
  if (!out && rc < 0)
    out = rc == SC_EINVAL ? sc__error_at(ctx, SC_EINVAL, name, text_line(text, len, j.err_off),
                                         "%s", j.errmsg)
                          : rc;
  if (!out && first) out = sc__error_at(ctx, SC_EINVAL, name, 1, "empty input");
  sc__json_free(&j);
  return out;
}
