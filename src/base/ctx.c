/*
 * ctx.c: the library context (allocator hook, last error message) and the small
 * utilities every module shares: error formatting, allocation, growable arrays,
 * formatted writes to output sinks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "base/sc_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#ifdef __linux__
#include <stdint.h>
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Large blocks of the default allocator (Linux, not under AddressSanitizer,
 * whose checks need its malloc): mapped directly instead of through malloc,
 * so that an array that doubles is moved by mremap, page tables and not
 * bytes, and faults in 2 MiB pages. glibc puts blocks below its dynamic mmap
 * threshold (up to 32 MiB once a large block was freed) on the heap, where
 * realloc copies them to fresh pages, and faults 4 KiB at a time; on the
 * import of a 300.8 MB Kineto trace those faults were a third of the CPU
 * time (docs/PERFORMANCE.md, section 4, fifth round). */
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SC_NO_MAPPED_BLOCKS
#endif
#endif
#else
#define SC_NO_MAPPED_BLOCKS
#endif

#ifndef SC_NO_MAPPED_BLOCKS
/* Blocks from MAP_MIN bytes are mapped, in whole huge pages (the PMD size
 * of x86-64, and of arm64 with 4 KiB pages) aligned to one, and ask for
 * huge pages: a block's resident memory is what was touched of it rounded
 * up to 2 MiB (peak RSS of the 1,003.8 MB import: +0.7 MB against huge
 * pages from 4 MiB only, for 5,500 -> 1,538 minor faults). */
#define MAP_MIN ((size_t)1 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
/* A mapped block starts with its header; the caller's bytes follow it. */
#define MAP_MAGIC 0x5343424c4f434b31u /* "SCBLOCK1" */
typedef struct map_head {
  uint64_t magic;
  uint64_t len; /* bytes mapped, a multiple of HUGE_PAGE */
} map_head;

static size_t map_len(size_t n) {
  if (n > SIZE_MAX - sizeof(map_head) - HUGE_PAGE) return 0;
  return (n + sizeof(map_head) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/* len bytes of fresh memory aligned to HUGE_PAGE, or NULL. */
static char *map_aligned(size_t len) {
  char *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  size_t head = (HUGE_PAGE - ((uintptr_t)p & (HUGE_PAGE - 1))) & (HUGE_PAGE - 1);
  if (head) munmap(p, head);
  munmap(p + head + len, HUGE_PAGE - head);
  p += head;
  madvise(p, len, MADV_HUGEPAGE);
  return p;
}

/* The header of a block the caller sized at osize bytes, when mapped. */
static map_head *mapped(void *ptr, size_t osize) {
  if (!ptr || osize < MAP_MIN) return NULL;
  map_head *h = (map_head *)ptr - 1;
  return ((uintptr_t)h & (HUGE_PAGE - 1)) == 0 && h->magic == MAP_MAGIC ? h : NULL;
}

static void *map_resize(map_head *h, size_t nsize) {
  size_t len = map_len(nsize);
  if (!len) return NULL;
  if (len == h->len) return h + 1;
  if (len < h->len) { /* shrinks in place */
    if (mremap(h, h->len, len, 0) == MAP_FAILED) return h + 1;
    h->len = len;
    return h + 1;
  }
  if (mremap(h, h->len, len, 0) == MAP_FAILED) { /* cannot grow in place: moved, aligned */
    char *q = map_aligned(len);
    if (!q) return NULL;
    if (mremap(h, h->len, h->len, MREMAP_MAYMOVE | MREMAP_FIXED, q) == MAP_FAILED) {
      munmap(q, len);
      return NULL;
    }
    h = (map_head *)q;
  }
  h->len = len;
  return h + 1;
}

static void *map_new(size_t nsize) {
  size_t len = map_len(nsize);
  map_head *h = len ? (map_head *)map_aligned(len) : NULL;
  if (!h) return NULL;
  h->magic = MAP_MAGIC;
  h->len = len;
  return h + 1;
}
#endif

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
#ifndef SC_NO_MAPPED_BLOCKS
  map_head *h = mapped(ptr, osize);
  if (h) {
    if (nsize == 0) {
      munmap(h, h->len);
      return NULL;
    }
    if (nsize >= MAP_MIN) return map_resize(h, nsize);
    void *q = malloc(nsize); /* shrunk below MAP_MIN: back to malloc */
    if (!q) return NULL;
    memcpy(q, ptr, nsize);
    munmap(h, h->len);
    return q;
  }
  if (nsize >= MAP_MIN) {
    void *q = map_new(nsize);
    if (!q) return NULL;
    if (ptr) {
      memcpy(q, ptr, osize < nsize ? osize : nsize);
      free(ptr);
    }
    return q;
  }
#else
  (void)osize;
#endif
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

int sc_ctx_new(sc_alloc_fn alloc, void *ud, sc_ctx **out) {
  sc_alloc_fn fn = alloc ? alloc : default_alloc;
  sc_ctx *ctx = fn(ud, NULL, 0, sizeof *ctx);
  *out = NULL;
  if (!ctx) return SC_ENOMEM;
  memset(ctx, 0, sizeof *ctx);
  ctx->alloc = fn;
  ctx->alloc_ud = ud;
#ifndef NDEBUG
  ctx->checks = 1;
#endif
  *out = ctx;
  return SC_OK;
}

void sc__ctx_set_checks(sc_ctx *ctx, int on) { ctx->checks = on != 0; }

void sc_ctx_free(sc_ctx *ctx) {
  if (ctx) ctx->alloc(ctx->alloc_ud, ctx, sizeof *ctx, 0);
}

const char *sc_errmsg(const sc_ctx *ctx) { return ctx ? ctx->errmsg : "no context"; }

const char *sc_version(void) { return SC_VERSION; }

const char *sc_strerror(int code) {
  switch (code) {
#define SC_X_CASE(name, value, exit, text) \
  case name:                               \
    return text;
    SC_ERROR_LIST(SC_X_CASE)
#undef SC_X_CASE
  }
  return "unknown error";
}

int sc_exit_code(int code) {
  switch (code) {
#define SC_X_CASE(name, value, exit, text) \
  case name:                               \
    return exit;
    SC_ERROR_LIST(SC_X_CASE)
#undef SC_X_CASE
  }
  return 1;
}

int sc__contains_nocase(const char *s, const char *needle) {
  size_t m = strlen(needle);
  for (; *s; s++) {
    size_t i = 0;
    while (i < m && s[i] && (s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]) == needle[i]) i++;
    if (i == m) return 1;
  }
  return 0;
}

int sc__error(sc_ctx *ctx, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
  va_end(ap);
  return code;
}

int sc__error_atv(sc_ctx *ctx, int code, const char *file, int64_t where, const char *fmt,
                  va_list ap) {
  char msg[SC_ERRMSG_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (where >= 0) return sc__error(ctx, code, "%s:%lld: %s", file, (long long)where, msg);
  return sc__error(ctx, code, "%s: %s", file, msg);
}

int sc__error_at(sc_ctx *ctx, int code, const char *file, int64_t where, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = sc__error_atv(ctx, code, file, where, fmt, ap);
  va_end(ap);
  return rc;
}

void sc__release_free(sc_ctx *ctx) {
#ifdef __GLIBC__
  /* glibc keeps freed blocks below its (dynamic, up to 32 MiB) mmap
   * threshold resident for reuse; after a phase has freed large scratch,
   * hand their pages back so they do not add to the peak of the next. */
  if (ctx->alloc == default_alloc) malloc_trim(0);
#else
  (void)ctx;
#endif
}

void *sc__malloc(sc_ctx *ctx, size_t n) {
  void *p = ctx->alloc(ctx->alloc_ud, NULL, 0, n ? n : 1);
  if (!p) sc__error(ctx, SC_ENOMEM, "out of memory (%zu bytes)", n);
  return p;
}

void *sc__calloc(sc_ctx *ctx, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) {
    sc__error(ctx, SC_ENOMEM, "allocation overflow");
    return NULL;
  }
  size_t total = count * size;
  void *p = sc__malloc(ctx, total);
  if (p && total > 0) memset(p, 0, total);
  return p;
}

void *sc__realloc(sc_ctx *ctx, void *p, size_t oldn, size_t newn) {
  void *q = ctx->alloc(ctx->alloc_ud, p, oldn, newn ? newn : 1);
  if (!q) sc__error(ctx, SC_ENOMEM, "out of memory (%zu bytes)", newn);
  return q;
}

void sc__free(sc_ctx *ctx, void *p, size_t n) {
  if (p) ctx->alloc(ctx->alloc_ud, p, n, 0);
}

int sc__grow(sc_ctx *ctx, void **items, size_t item_size, size_t *cap, size_t need) {
  if (need <= *cap) return SC_OK;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / item_size) return sc__error(ctx, SC_ENOMEM, "array too large");
    ncap *= 2;
  }
  void *q = sc__realloc(ctx, *items, *cap * item_size, ncap * item_size);
  if (!q) return SC_ENOMEM;
  *items = q;
  *cap = ncap;
  return SC_OK;
}

int sc__writef(sc_write_fn w, void *ud, const char *fmt, ...) {
  char buf[SC_WRITEF_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) return SC_EINTERNAL; /* never cut text silently */
  return w(ud, buf, (size_t)n);
}

void sc__strlcpy(char *dst, const char *src, size_t dst_size) {
  if (!dst_size) return;
  size_t n = strlen(src);
  if (n >= dst_size) n = dst_size - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

static int read_failure(sc_ctx *ctx, const char *path, const char *from, const char *noun,
                        const char *what, const char *why) {
  if (!from) return sc__error(ctx, SC_EREAD, "%s: %s: %s", path, what, why);
  return sc__error(ctx, SC_EREAD, "%s: %s %s %s: %s", from, what, noun ? noun : "file", path, why);
}

int sc__read_file(sc_ctx *ctx, const char *path, const char *from, const char *noun,
                  size_t max_bytes, char **out, size_t *len, size_t *cap) {
  *out = NULL;
  *len = *cap = 0;
  /* Whole-file inputs are regular files: a FIFO would block the open until
   * a writer appears, a device (/dev/zero) never ends, a directory is not
   * text. Checked before opening. */
  struct stat st;
  if (stat(path, &st) != 0)
    return read_failure(ctx, path, from, noun, "cannot open", strerror(errno));
  if (!S_ISREG(st.st_mode))
    return read_failure(ctx, path, from, noun, "cannot open",
                        S_ISDIR(st.st_mode)    ? strerror(EISDIR)
                        : S_ISFIFO(st.st_mode) ? "a FIFO, not a regular file"
                                               : "not a regular file (a device?)");
  FILE *fp = fopen(path, "rb");
  if (!fp) return read_failure(ctx, path, from, noun, "cannot open", strerror(errno));
  size_t n = 0, c = 0;
  char *buf = NULL;
  int rc = SC_OK;
  for (;;) {
    if (n + 1 >= c && sc__grow(ctx, (void **)&buf, 1, &c, n + 65536)) {
      rc = SC_ENOMEM;
      break;
    }
    size_t k = fread(buf + n, 1, c - n - 1, fp);
    n += k;
    if (n > max_bytes) {
      char why[64];
      snprintf(why, sizeof why, "file larger than %zu MiB", max_bytes >> 20);
      rc = read_failure(ctx, path, from, noun, "cannot read", why);
      break;
    }
    if (k == 0) {
      if (ferror(fp)) rc = read_failure(ctx, path, from, noun, "cannot read", strerror(errno));
      break;
    }
  }
  fclose(fp);
  if (rc) {
    sc__free(ctx, buf, c);
    return rc;
  }
  buf[n] = 0;
  *out = buf;
  *len = n;
  *cap = c;
  return SC_OK;
}
