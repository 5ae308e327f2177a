/*
 * chrome_int.h: the one reader of Chrome-trace / Kineto JSON documents, behind
 * kineto.c, exsitu.c and analysis/interf_kineto.c: walks the tokens of json.c
 * and hands each completed event, and each metadata member a reader asked
 * for, to callbacks. Nothing else is kept: memory is that of the largest event.
 */
#ifndef SC_CHROME_INT_H
#define SC_CHROME_INT_H

#include "base/json_int.h"

/* What one event or metadata value may keep (the members a reader reads,
 * with their arrays: "Input Dims" of an operator, pg_config): 2^20 tokens
 * and 64 MiB of their text, far above real traces (an operator's inputs
 * are a few thousand values), so memory stays bounded whatever the input. */
#define SC_CHROME_MAX_KEPT_TOKENS ((size_t)1 << 20)
#define SC_CHROME_MAX_KEPT_BYTES ((size_t)64 << 20)

/* Keys a reader may register per list (args, distributedInfo, top level). */
#define SC_CHROME_MAX_KEYS 32

/* Member ids of an event: the standard members, then args key i of the
 * reader's spec as SC_CHROME_ARG + i. */
enum {
  SC_CHROME_PH = 0,
  SC_CHROME_CAT,
  SC_CHROME_NAME,
  SC_CHROME_TS,
  SC_CHROME_DUR,
  SC_CHROME_PID,
  SC_CHROME_TID,
  SC_CHROME_ARG
};

/* A string as it stands in the document: raw bytes between the quotes
 * (escapes not decoded; decode with sc__json_unescape when `escaped`), not
 * NUL-terminated (an event read in place points into the input buffer).
 * s is NULL when absent. */
typedef struct sc_chrome_str {
  const char *s;
  size_t n;
  int escaped;
} sc_chrome_str;

/* One member kept from an event, in document order: a standard member the
 * spec asks for (spec->members) whose value is a scalar, or a registered
 * args member (any value). Its value is
 * the tokens e->tok[first .. first + count): a scalar is one token; an array
 * or object runs from its BEGIN to its END token. Token depths are relative
 * to the value (0: the value itself), offsets are stream offsets, and s
 * (n bytes, not NUL-terminated) lives as long as the event. */
typedef struct sc_chrome_member {
  int key;
  uint32_t first, count;
} sc_chrome_member;

/* A completed event (a JSON object in traceEvents). Borrowed for the
 * callback only. The summary fields hold the last value of each standard
 * member that has the type they need (members that are objects or arrays
 * are skipped); readers with finer rules (document order, warnings, ids as
 * strings) read the members. */
typedef struct sc_chrome_event {
  uint64_t offset;         /* stream offset of the event's '{' */
  char ph;                 /* first byte of the last non-empty string "ph"; 0 none */
  sc_chrome_str ph_s;      /* the last string "ph", raw */
  sc_chrome_str cat, name; /* the last string "cat" / "name", raw */
  /* "ts" / "dur": the last number, microseconds as int64 ns
   * (sc__json_us_to_ns): has_ts says it parsed (one out of range is the
   * spec's error, or clears has_ts); ts_ns is the last that parsed.
   * ts_shadowed: a scalar other than a number came after it, for readers
   * that let the last value win whatever its type. */
  int has_ts, has_dur;
  int ts_shadowed, dur_shadowed;
  int64_t ts_ns, dur_ns;
  /* "pid" / "tid": the last scalar value, raw (numbers, or strings in some
   * traces), when the spec keeps them as members; else NULL. */
  const sc_jtok *pid, *tid;
  const sc_chrome_member *m; /* kept members, in document order */
  size_t nm;
  const sc_jtok *tok;      /* their value tokens */
} sc_chrome_event;

/* Metadata: a registered member of distributedInfo, or a registered
 * top-level member other than traceEvents and distributedInfo. */
enum { SC_CHROME_DIST = 1, SC_CHROME_META };

typedef struct sc_chrome_item {
  int section;             /* SC_CHROME_DIST or SC_CHROME_META */
  int key;                 /* index in the spec's dist_keys / meta_keys */
  const sc_jtok *tok;      /* the value's tokens, as for an event member */
  size_t ntok;
} sc_chrome_item;

/* What a reader wants. Key lists are NULL-terminated (or NULL for none),
 * matched against the raw key bytes; at most SC_CHROME_MAX_KEYS each. */
typedef struct sc_chrome_spec {
  /* Standard members to keep as members, a bit per id (1 << SC_CHROME_TID
   * | ...): for readers that need them in document order with args. */
  unsigned members;
  const char *const *arg_keys;  /* members of an event's "args" to keep */
  const char *const *dist_keys; /* members of distributedInfo to hand out */
  const char *const *meta_keys; /* other top-level members to hand out */
  /* Args keys (a bit per index in arg_keys) the reader only reads when the
   * event's name starts with name_prefix (Kineto: "Input Dims" of "nccl:"
   * annotations only). Such a member that comes after a name without the
   * prefix may be skipped rather than kept (never when another "name"
   * follows it: the event is then read whole, everything kept). */
  unsigned name_args;
  const char *name_prefix;
  /* Format errors, raised at the token ("name:offset: message"); NULL
   * accepts the input instead: */
  const char *not_object;       /* the top-level value is a scalar (else: no events) */
  const char *ts_range;         /* a numeric "ts" outside int64 ns (else: no ts) */
  const char *dur_range;        /* the same for "dur" */
  /* Called at each event's '}' and at the end of each registered metadata
   * value. A non-zero return stops the reader with that code
   * (SC_CHROME_ECALLBACK). Either may be NULL. */
  int (*event)(void *ud, const sc_chrome_event *e);
  int (*item)(void *ud, const sc_chrome_item *it);
} sc_chrome_spec;

/* Registered keys, grouped by length (most keys in a trace have a length
 * no registered key has, and are rejected by one test). */
#define SC_CHROME_KEY_LEN 64 /* keys at least this long share the last group */
typedef struct sc_chrome_keys {
  const char *s[SC_CHROME_MAX_KEYS]; /* sorted by length */
  size_t n[SC_CHROME_MAX_KEYS];
  int index[SC_CHROME_MAX_KEYS];     /* position in the spec's list */
  uint8_t first[SC_CHROME_KEY_LEN + 1], count[SC_CHROME_KEY_LEN + 1];
  int total;
} sc_chrome_keys;

/* A container value the event fast path skipped, byte for byte: the same
 * bytes again at the same depth are skipped without a scan (whether a value
 * is well formed depends on its bytes alone). Kineto writes the same unread
 * arrays over and over ("Input Strides", "Concrete Inputs", "grid",
 * "block"): on the synthetic trace of bench_import all but 16 of 112,026
 * are met again. Values up to SC_CHROME_SKIP_BYTES are remembered. */
#define SC_CHROME_SKIP_MEMO 64
#define SC_CHROME_SKIP_BYTES 120
typedef struct sc_chrome_skip {
  unsigned char text[SC_CHROME_SKIP_BYTES];
  uint32_t n;     /* 0: empty */
  int32_t depth;  /* containers open around it when it was skipped */
  uint32_t age;   /* in the first entry of a pair: 1 when the second was used last */
} sc_chrome_skip;

/* What lies between two values of an event or of its args, byte for byte:
 * the separator, the key and the ':' with the white space around them up
 * to the next value, or the white space and the object's '}' (a *gap*).
 * The event fast path remembers each gap it parsed under the gap before it
 * and the event's ph and cat (Kineto writes each kind of event with the same
 * members in the same order and layout), and takes the gap remembered there
 * when the next bytes are the same, without scanning the key or finding it
 * among the registered ones again; and the scalar value that followed the
 * gap last time, taken when it follows again ("pid": 4242, "cat":
 * "kernel", "Record function id": 0), unless the values there keep
 * changing; for a number whose digits change but not its layout ("ts",
 * ids, correlations) the layout: the sign, the first digit, the '.' and
 * the number of digits, any digit standing for the others. A value taken
 * on such a compare is only taken when the gap after it parses, which a
 * longer number or literal could not. Gaps up to SC_CHROME_GAP_BYTES long are
 * remembered, in SC_CHROME_GAPS entries, pairs found by a hash of that
 * context (two, so that two kinds of events that share ph and cat, and
 * part of their members, part there and stay apart after). */
#define SC_CHROME_GAPS 512
#define SC_CHROME_GAP_BYTES 48
typedef struct sc_chrome_gap {
  unsigned char text[SC_CHROME_GAP_BYTES]; /* the gap, then the scalar value that followed it */
  uint64_t mask;  /* bit i set for each of the n bytes of the gap */
  uint64_t vmask; /* the same for the n + vn bytes of the gap and its value */
  uint64_t dmask; /* the value's digits that may be any digit (a number whose digits change) */
  uint8_t n;      /* the gap's bytes */
  uint8_t vn;     /* the value's bytes after them; 0: none remembered */
  uint8_t kind;   /* 0: empty; else 1 + level (0 event, 1 args) * 2 + (1: after a value, 0: after the '{') */
  uint8_t close;  /* the gap ends with the object's '}' */
  uint8_t age;    /* in the first entry of a pair: 1 when the second was used last */
  uint8_t vtype;  /* the value's token type */
  uint8_t vmiss;  /* values met that were not the one remembered (a new one is kept while < 2) */
  uint8_t vok;    /* vns holds the value of a number under "ts" / "dur" */
  int16_t key;    /* the member: a standard one or FIELD_ARGS (event), an args key or -1 (args) */
  uint8_t vint_at, vint_len, vfrac_len, vneg; /* a number value's parts (sc_jnum) */
  int64_t vns;    /* that value: sc__json_us_to_ns of the number (without dmask) */
} sc_chrome_gap;

/* An event the fast path read whole, as it read it (a *shape*): its bytes
 * after the '{' up to its '}', the digits of its scalar numbers free (the
 * first of the integer part excepted, none of a number with an exponent),
 * and what reading it left: the kept tokens and members as offsets into
 * those bytes, the summary's indices and flags, where its "ts" / "dur"
 * numbers are. An event with the same bytes at the same depth, digits where
 * the shape has free digits, is read the same way (a number keeps its
 * length and layout, so the gaps, keys and values around it are the same),
 * and is taken from the shape on one compare of its bytes, its "ts" / "dur"
 * converted from their places. Kineto writes most events of a kind alike
 * but for their ids, correlations and timestamps. SC_CHROME_SHAPES entries,
 * in sets of four found by a hash of the first 128 bytes (digits masked);
 * an event is learned the second time its hash is met (one met once costs
 * the hash only), and only with 128 bytes or more left in the buffer. */
/* Sizes: bench_import's synthetic trace has 27 kinds of events (ph, cat,
 * name) of at most 932 bytes; the HTA samples (validation/traces/hta) 206
 * and 304 kinds, 0.6% of their events longer than 1,024 bytes (NCCL events
 * with rank lists). 64 shapes of 1,904 bytes (119 KiB) take 83% and 84% of
 * those samples' events (docs/PERFORMANCE.md, section 4, sixth round); a
 * Kineto kernel keeps 7 tokens. */
#define SC_CHROME_SHAPES 64
#define SC_CHROME_SHAPE_WAYS 4
#define SC_CHROME_SHAPE_BYTES 1024
#define SC_CHROME_SHAPE_TOKENS 48
#define SC_CHROME_SHAPE_MEMBERS 24
#define SC_CHROME_SHAPE_NUMBERS 32 /* scalar numbers noted while an event is read */
#define SC_CHROME_SHAPE_TIMES 4
#define SC_CHROME_SHAPE_NONE 0xffff /* a kept token without text (a bracket) */
#define SC_CHROME_SHAPE_SEEN 256 /* tags of events not taken from a shape, remembered so the second is learned */
typedef struct sc_chrome_shape_tok {
  uint16_t at;     /* the token's offset, from the byte after the '{' */
  uint16_t s_at;   /* its text's (past a string's quote), or SC_CHROME_SHAPE_NONE */
  uint16_t n;
  uint8_t type, depth;
} sc_chrome_shape_tok;
typedef struct sc_chrome_shape_time {
  uint16_t at;     /* the number's offset */
  uint8_t n, is_ts; /* its bytes; "ts" (else "dur") */
  uint8_t int_at, int_len, frac_len, neg, exp; /* its parts (sc_jnum) */
} sc_chrome_shape_time;
typedef struct sc_chrome_shape {
  uint64_t tag;    /* the hash of the first 128 bytes it was met with */
  uint32_t used;   /* the reader's clock when last met: the set's oldest is replaced */
  uint16_t n;      /* bytes after the '{', its '}' included; 0: empty */
  uint16_t past_end; /* bits of the bytes after them in their last 16 */
  uint8_t ntok, nm, ntime;
  uint8_t last;    /* in the first entry of a set: the entry met last */
  char ph;
  uint8_t has_ts, has_dur, ts_shadowed, dur_shadowed;
  int8_t ph_i, cat_i, name_i, pid_i, tid_i;
  int32_t depth;   /* containers open inside the event (the tokenizer's depth) */
  uint32_t ntext;  /* what the kept text counts (c->ntext) */
  uint16_t free_digits[SC_CHROME_SHAPE_BYTES / 16]; /* per 16 bytes: those that may be any digit */
  unsigned char text[SC_CHROME_SHAPE_BYTES];
  sc_chrome_shape_tok tok[SC_CHROME_SHAPE_TOKENS];
  sc_chrome_member m[SC_CHROME_SHAPE_MEMBERS];
  sc_chrome_shape_time time[SC_CHROME_SHAPE_TIMES];
} sc_chrome_shape;

/* Error kinds (err_kind). */
enum {
  SC_CHROME_EJSON = 1, /* the tokenizer's: malformed JSON, or SC_ENOMEM for a token's carry */
  SC_CHROME_EFORMAT,   /* one of the spec's format errors (SC_EINVAL) */
  SC_CHROME_ECALLBACK  /* a callback's code, or SC_ENOMEM keeping an event: no message */
};

typedef struct sc_chrome {
  sc_json j;
  sc_ctx *ctx;
  const sc_chrome_spec *spec;
  void *ud;
  sc_chrome_keys args, dist, meta;
  /* Where the walk is. */
  int root_array;      /* the document is a bare array of events */
  int evd;             /* depth of event objects while inside the events; 0 outside */
  int saw_events;      /* a traceEvents array (or a bare array) was seen */
  int skip;            /* skipping a value: the depth of its END; -1 none */
  int top;             /* what the current top-level member is (chrome.c) */
  int top_key;         /* its registered index, for metadata */
  int field;           /* the standard member whose value comes next; -1 none */
  int arg;             /* the registered args key whose value comes next; -1 none */
  int keep_depth;      /* depth of the container value being kept; -1 none */
  int keep_item;       /* the value kept is metadata (SC_CHROME_DIST/META), not a member */
  int keep_key;
  /* The event or metadata value being kept. */
  sc_chrome_event ev;
  int ph_i, cat_i, name_i, pid_i, tid_i; /* tokens of the summary fields; -1 none */
  sc_chrome_member *m;
  size_t nm, m_cap;
  sc_jtok *tok;        /* kept tokens; their s points into `text` (token path) or the buffer (in place) */
  size_t ntok, tok_cap;
  char *text;          /* kept token text, each NUL-terminated (token path) */
  size_t ntext, text_cap; /* ntext also counts text kept in place, for the bound */
  /* Containers skipped on the event fast path, by a hash of their first
   * bytes (chrome.c: skip_memo). */
  sc_chrome_skip skip_memo[SC_CHROME_SKIP_MEMO];
  sc_chrome_gap *gaps;  /* SC_CHROME_GAPS entries (chrome.c: fast_gap); NULL until the first event */
  sc_chrome_shape *shapes; /* SC_CHROME_SHAPES entries, in the block of gaps (chrome.c: shape_find) */
  uint32_t shape_clock;    /* events read in place */
  uint32_t shape_hits;     /* of them, taken from a shape (for tests) */
  uint64_t shape_seen[SC_CHROME_SHAPE_SEEN]; /* tags of events read without a shape, by their bits */
  /* The scalar numbers of the event being read in place (buffer index,
   * bytes, SC_CHROME_TS / _DUR or -1), for its shape; nnum past
   * SC_CHROME_SHAPE_NUMBERS: too many to remember. */
  size_t num_at[SC_CHROME_SHAPE_NUMBERS];
  uint8_t num_n[SC_CHROME_SHAPE_NUMBERS];
  int8_t num_field[SC_CHROME_SHAPE_NUMBERS];
  uint32_t nnum;
  /* Sticky error. */
  int err, err_kind;
  uint64_t err_off;
  const char *errmsg;  /* the tokenizer's message or the spec's; "" for callbacks */
} sc_chrome;

/* Prepares a reader for one document; spec (borrowed, must outlive c) says
 * what to keep and whom to call with ud. 0, or SC_EINVAL for more than
 * SC_CHROME_MAX_KEYS keys in a list (then nothing to free). */
int sc__chrome_init(sc_chrome *c, sc_ctx *ctx, const sc_chrome_spec *spec, void *ud);
/* Releases the tokenizer and the kept-value buffers. */
void sc__chrome_free(sc_chrome *c);
/* Reads the next bytes of the document (any split), calling back as events
 * and metadata values complete. Returns 0 or the sticky error code: see
 * err_kind, err_off (stream offset) and errmsg. */
int sc__chrome_feed(sc_chrome *c, const char *buf, size_t len);
/* Ends the document (a number at the very end completes; truncation is an
 * error). Returns 0 or the sticky error code, as sc__chrome_feed. */
int sc__chrome_end(sc_chrome *c);

/* The raw string of a token (KEY or STRING) as an sc_chrome_str. */
static inline sc_chrome_str sc__chrome_str_of(const sc_jtok *t) {
  sc_chrome_str s = {t->s, t->n, t->escaped};
  return s;
}

/* Index just past the value that starts at tok[i] of a kept value of ntok
 * tokens: i + 1 for a scalar, past the matching END for a container. For
 * readers walking a kept array or object that skip what they do not read. */
static inline size_t sc__chrome_next(const sc_jtok *tok, size_t ntok, size_t i) {
  if (tok[i].type != SC_JT_OBJ_BEGIN && tok[i].type != SC_JT_ARR_BEGIN) return i + 1;
  int d = tok[i].depth;
  for (size_t j = i + 1; j < ntok; j++)
    if ((tok[j].type == SC_JT_OBJ_END || tok[j].type == SC_JT_ARR_END) && tok[j].depth == d) return j + 1;
  return ntok;
}

/* The value tokens of member m of event e. */
static inline const sc_jtok *sc__chrome_value(const sc_chrome_event *e, const sc_chrome_member *m) {
  return e->tok + m->first;
}

#endif /* SC_CHROME_INT_H */
