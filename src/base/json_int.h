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
 * and is well formed (eight bytes at a time through strings). Returns 1
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

#endif /* SC_JSON_INT_H */
