/*
 * feed.c: the compression feed of the trace readers (see feed_int.h). The
 * first four stored bytes pick the decoder (gzip magic 1f 8b, RFC 1952; zstd
 * frame magic 28 b5 2f fd, RFC 8878; anything else is plain) and every
 * decompressed byte goes through one 64 KiB buffer to the sink (plain bytes
 * straight from the caller's), so plain, gzip and zstd input take one path
 * whatever the reader behind it.
 */
#include "trace/feed_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <zlib.h>
/* ZSTD_createDStream_advanced (allocation through our context hook) is in
 * zstd's experimental section, stable since 1.0 and exported by libzstd. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

/* 16-byte header holding the block size, keeping the payload aligned. */
void *sc__trace_alloc(sc_ctx *ctx, size_t n) {
  if (n > SIZE_MAX - 16) return NULL;
  unsigned char *p = sc__malloc(ctx, n + 16);
  if (!p) return NULL;
  size_t total = n + 16;
  memcpy(p, &total, sizeof total);
  return p + 16;
}

void sc__trace_free_block(sc_ctx *ctx, void *q) {
  if (!q) return;
  unsigned char *p = (unsigned char *)q - 16;
  size_t total;
  memcpy(&total, p, sizeof total);
  sc__free(ctx, p, total);
}

static voidpf z_alloc(voidpf ud, uInt items, uInt size) {
  if (size && items > SIZE_MAX / size) return Z_NULL;
  return sc__trace_alloc(ud, (size_t)items * size);
}
static void z_free(voidpf ud, voidpf p) { sc__trace_free_block(ud, p); }
static void *zstd_alloc(void *ud, size_t n) { return sc__trace_alloc(ud, n); }
static void zstd_free(void *ud, void *p) { sc__trace_free_block(ud, p); }

/* Sets the sticky error with a message about stored byte `offset`; returns
 * the (first) error code. */
static int fail(sc_feed *f, int code, uint64_t offset, const char *fmt, ...) SC_PRINTF(4, 5);
static int fail(sc_feed *f, int code, uint64_t offset, const char *fmt, ...) {
  if (f->err) return f->err;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->errmsg, sizeof f->errmsg, fmt, ap);
  va_end(ap);
  f->err = code;
  f->err_off = offset;
  return code;
}

int sc__feed_init(sc_feed *f, sc_ctx *ctx, sc_feed_sink sink, void *ud) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx;
  f->sink = sink;
  f->ud = ud;
  f->out = sc__malloc(ctx, SC_FEED_OUT_BYTES);
  return f->out ? SC_OK : SC_ENOMEM;
}

void sc__feed_free(sc_feed *f) {
  if (f->z && f->comp == SC_FEED_GZIP) {
    inflateEnd(f->z);
    sc__free(f->ctx, f->z, sizeof(z_stream));
  } else if (f->z && f->comp == SC_FEED_ZSTD) {
    ZSTD_freeDStream(f->z);
  }
  f->z = NULL;
  sc__free(f->ctx, f->out, f->out ? SC_FEED_OUT_BYTES : 0);
  f->out = NULL;
}

const char *sc__feed_encoding(const sc_feed *f) {
  return f->comp == SC_FEED_PLAIN  ? "plain"
         : f->comp == SC_FEED_GZIP ? "gzip"
         : f->comp == SC_FEED_ZSTD ? "zstd"
                                   : "unknown";
}

/* Hands len decompressed bytes to the sink; its error becomes the feed's
 * (without a message: the sink reported it). */
static int deliver(sc_feed *f, const char *buf, size_t len) {
  if (!len) return SC_OK;
  int rc = f->sink(f->ud, buf, len);
  f->out_bytes += len;
  if (rc && !f->err) f->err = rc;
  return rc ? f->err : SC_OK;
}

/* Picks the decoder from the first bytes and sets it up. */
static int start_decoder(sc_feed *f) {
  const unsigned char *h = f->head;
  if (f->nhead >= 2 && h[0] == 0x1f && h[1] == 0x8b) {
    z_stream *z = sc__calloc(f->ctx, 1, sizeof *z);
    if (!z) return f->err = SC_ENOMEM;
    z->zalloc = z_alloc;
    z->zfree = z_free;
    z->opaque = f->ctx;
    /* 15 + 16: gzip wrapper, largest window. */
    if (inflateInit2(z, 15 + 16) != Z_OK) {
      sc__free(f->ctx, z, sizeof *z);
      return fail(f, SC_ENOMEM, 0, "cannot start the gzip decoder");
    }
    f->z = z;
    f->comp = SC_FEED_GZIP;
  } else if (f->nhead >= 4 && h[0] == 0x28 && h[1] == 0xb5 && h[2] == 0x2f && h[3] == 0xfd) {
    ZSTD_customMem mem = {zstd_alloc, zstd_free, f->ctx};
    ZSTD_DStream *zs = ZSTD_createDStream_advanced(mem);
    if (!zs) return fail(f, SC_ENOMEM, 0, "cannot start the zstd decoder");
    ZSTD_initDStream(zs);
    f->z = zs;
    f->comp = SC_FEED_ZSTD;
  } else {
    f->comp = SC_FEED_PLAIN;
  }
  return SC_OK;
}

/* Inflates len stored bytes (gzip members, possibly several) to the sink.
 * 0 or the sticky error. */
static int feed_gzip(sc_feed *f, const unsigned char *p, size_t len) {
  z_stream *z = f->z;
  while (len) {
    uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
    if (f->zend) {
      /* Concatenated gzip members (RFC 1952 2.2) continue; anything else
       * after the end is an error. */
      if (p[0] != 0x1f) return fail(f, SC_EINVAL, f->in_bytes, "data after the end of the gzip stream");
      inflateReset(z);
      f->zend = 0;
    }
    z->next_in = (Bytef *)p;
    z->avail_in = chunk;
    for (;;) {
      z->next_out = f->out;
      z->avail_out = SC_FEED_OUT_BYTES;
      int zr = inflate(z, Z_NO_FLUSH);
      size_t got = SC_FEED_OUT_BYTES - z->avail_out;
      if (zr == Z_STREAM_END) f->zend = 1;
      else if (zr == Z_MEM_ERROR) return fail(f, SC_ENOMEM, f->in_bytes, "out of memory");
      else if (zr != Z_OK && zr != Z_BUF_ERROR)
        return fail(f, SC_EINVAL, f->in_bytes + (chunk - z->avail_in), "corrupt gzip data (%s)",
                    z->msg ? z->msg : "inflate failed");
      if (deliver(f, (const char *)f->out, got)) return f->err;
      /* Done with this input once it is consumed and the output buffer was
       * not filled (a full buffer may leave output pending). */
      if (f->zend || zr == Z_BUF_ERROR || (z->avail_in == 0 && z->avail_out != 0)) break;
    }
    size_t used = chunk - z->avail_in;
    f->in_bytes += used;
    p += used;
    len -= used;
    if (!used && !f->zend) break; /* cannot happen with input and output room */
  }
  return SC_OK;
}

/* Decompresses len stored bytes (zstd frames) to the sink; 0 or the sticky
 * error. A call that neither consumes input nor produces output leaves `zend`
 * alone: after a complete frame zstd reports the header size of a next
 * frame, which is not a truncation. */
static int feed_zstd(sc_feed *f, const unsigned char *p, size_t len) {
  ZSTD_inBuffer in = {p, len, 0};
  for (;;) {
    ZSTD_outBuffer out = {f->out, SC_FEED_OUT_BYTES, 0};
    size_t before = in.pos;
    size_t zr = ZSTD_decompressStream(f->z, &out, &in);
    if (ZSTD_isError(zr)) {
      if (ZSTD_getErrorCode(zr) == ZSTD_error_memory_allocation)
        return fail(f, SC_ENOMEM, f->in_bytes + in.pos, "out of memory");
      return fail(f, SC_EINVAL, f->in_bytes + in.pos, "corrupt zstd data (%s)", ZSTD_getErrorName(zr));
    }
    if (zr == 0) f->zend = 1;
    else if (in.pos > before || out.pos > 0) f->zend = 0;
    if (deliver(f, (const char *)f->out, out.pos)) return f->err;
    if (in.pos == in.size && out.pos < SC_FEED_OUT_BYTES) break; /* input used, output drained */
  }
  f->in_bytes += len;
  return SC_OK;
}

/* Stored bytes to the decoder chosen, or straight to the sink when plain. */
static int feed_raw(sc_feed *f, const unsigned char *p, size_t len) {
  switch (f->comp) {
  case SC_FEED_GZIP:
    return feed_gzip(f, p, len);
  case SC_FEED_ZSTD:
    return feed_zstd(f, p, len);
  default:
    f->in_bytes += len;
    return deliver(f, (const char *)p, len);
  }
}

int sc__feed_put(sc_feed *f, const void *buf, size_t len) {
  if (f->err) return f->err;
  if (f->ended) return fail(f, SC_EINVAL, f->in_bytes, "data fed after the end");
  const unsigned char *p = buf;
  if (f->comp == SC_FEED_UNKNOWN) {
    /* Collect the 4 magic bytes first (they may arrive split). */
    while (len && f->nhead < sizeof f->head) f->head[f->nhead++] = *p++, len--;
    if (f->nhead < sizeof f->head) return SC_OK;
    int rc = start_decoder(f);
    if (!rc) rc = feed_raw(f, f->head, f->nhead);
    if (rc) return rc;
  }
  return len ? feed_raw(f, p, len) : SC_OK;
}

int sc__feed_end(sc_feed *f) {
  if (f->err) return f->err;
  if (f->ended) return fail(f, SC_EINVAL, f->in_bytes, "finished twice");
  if (f->comp == SC_FEED_UNKNOWN) { /* fewer than 4 bytes in all */
    int rc = start_decoder(f);
    if (!rc) rc = feed_raw(f, f->head, f->nhead);
    if (rc) return rc;
  }
  f->ended = 1;
  if ((f->comp == SC_FEED_GZIP || f->comp == SC_FEED_ZSTD) && !f->zend)
    return fail(f, SC_EINVAL, f->in_bytes, "truncated %s data (the file ends inside the stream)",
                f->comp == SC_FEED_GZIP ? "gzip" : "zstd");
  return SC_OK;
}
