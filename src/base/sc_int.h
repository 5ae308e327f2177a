/*
 * sc_int.h: internal shared declarations of libstepcast: the context (allocator
 * hook and error buffer), error helpers, growable arrays and the arena. Not API.
 */
#ifndef SC_INT_H
#define SC_INT_H

#include "stepcast/stepcast.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#define SC_ERRMSG_MAX 512

struct sc_ctx {
  sc_alloc_fn alloc;
  void *alloc_ud;
  int checks; /* run the invariant checkers (sc__workload_check, ...) on what is built */
  char errmsg[SC_ERRMSG_MAX];
};

/* Invariant checks (assert-style: every workload the pipeline builds is
 * checked before it runs) are on in debug builds and wherever a caller turns
 * them on; the unit tests turn them on for every context they create. */
void sc__ctx_set_checks(sc_ctx *ctx, int on);
static inline int sc__checks(const sc_ctx *ctx) { return ctx->checks; }

#if defined(__GNUC__)
#define SC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define SC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define SC_PRINTF(a, b)
#define SC_UNLIKELY(x) (x)
#endif

/* Sets ctx->errmsg (printf-style) and returns code, so callers can write
 * `return sc__error(ctx, SC_EINVAL, "%s:%d: ...", file, line)`. */
int sc__error(sc_ctx *ctx, int code, const char *fmt, ...) SC_PRINTF(3, 4);

/* Sets the context error to "FILE:WHERE: message" (a line, from 1, or a byte
 * offset, from 0; where = SC_AT_NONE: "FILE: message") and returns code: the
 * one formatter of input errors, for every reader. */
#define SC_AT_NONE (-1)
int sc__error_at(sc_ctx *ctx, int code, const char *file, int64_t where, const char *fmt, ...)
    SC_PRINTF(5, 6);
int sc__error_atv(sc_ctx *ctx, int code, const char *file, int64_t where, const char *fmt,
                  va_list ap);

/* 1 when needle (lower-case ASCII) occurs in s, ignoring ASCII case. */
int sc__contains_nocase(const char *s, const char *needle);

/* Allocation through the context hook. sc__malloc returns NULL on failure and
 * sets the context error to SC_ENOMEM's message. */
void *sc__malloc(sc_ctx *ctx, size_t n);
void *sc__calloc(sc_ctx *ctx, size_t count, size_t size);
void *sc__realloc(sc_ctx *ctx, void *p, size_t oldn, size_t newn);
void sc__free(sc_ctx *ctx, void *p, size_t n);
/* Returns memory freed so far to the system where the default allocator
 * keeps it (glibc): called after a phase frees large scratch. */
void sc__release_free(sc_ctx *ctx);

/* Growable array of fixed-size items; grows geometrically. Returns 0 or
 * SC_ENOMEM. `cap` and `len` count items. */
int sc__grow(sc_ctx *ctx, void **items, size_t item_size, size_t *cap, size_t need);

/* Writers stop at the first failure: SC_WRITE(rc, expr) evaluates expr only
 * while rc is 0 and keeps the first error (the sink's own code). */
#define SC_WRITE(rc, expr) ((void)((rc) || ((rc) = (expr))))

/* Writes printf-formatted text (at most SC_WRITEF_MAX bytes) to a sink;
 * returns the sink's status, or SC_EINTERNAL for text that does not fit. */
#define SC_WRITEF_MAX 8192
int sc__writef(sc_write_fn w, void *ud, const char *fmt, ...) SC_PRINTF(3, 4);

/* Reads a whole file into a NUL-terminated buffer allocated through the
 * context (*cap bytes; free with sc__free(ctx, *out, *cap)); *len excludes
 * the NUL. Errors are SC_EREAD with "PATH: cannot open: reason" (or, when
 * `from` is given, "FROM: cannot open NOUN PATH: reason", for files named
 * inside another file), SC_ENOMEM, or SC_EREAD when larger than max_bytes. */
int sc__read_file(sc_ctx *ctx, const char *path, const char *from, const char *noun,
                  size_t max_bytes, char **out, size_t *len, size_t *cap);

/* Bounded string copy that always terminates. */
void sc__strlcpy(char *dst, const char *src, size_t dst_size);

#endif /* SC_INT_H */
