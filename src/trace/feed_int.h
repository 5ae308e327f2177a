/*
 * feed_int.h: the compression feed in front of every trace reader (trace.c's
 * importers, analysis/interf_kineto.c): stored bytes in, split anywhere; the
 * first ones decide the encoding (gzip, zstd, else plain); decompressed bytes
 * out to a sink, through one 64 KiB buffer (plain bytes as they are).
 */
#ifndef SC_FEED_INT_H
#define SC_FEED_INT_H

#include "base/sc_int.h"

/* Decompressed bytes per sink call, at most, for gzip and zstd (plain
 * input goes to the sink as fed, without a copy). */
#define SC_FEED_OUT_BYTES (1u << 16)

/* Receives decompressed bytes (borrowed for the call). Returns 0 or an SC_E
 * code, which stops the feed and is handed back to its caller. */
typedef int (*sc_feed_sink)(void *ud, const char *buf, size_t len);

enum { SC_FEED_UNKNOWN = 0, SC_FEED_PLAIN, SC_FEED_GZIP, SC_FEED_ZSTD };

typedef struct sc_feed {
  sc_ctx *ctx;
  sc_feed_sink sink;
  void *ud;
  int comp;                /* SC_FEED_*: decided by the first 4 bytes */
  unsigned char head[4];
  size_t nhead;
  void *z;                 /* z_stream or ZSTD_DStream */
  int zend;                /* the compressed stream ended cleanly */
  unsigned char *out;      /* SC_FEED_OUT_BYTES of decompressed output */
  uint64_t in_bytes;       /* stored bytes consumed */
  uint64_t out_bytes;      /* bytes handed to the sink */
  int ended;
  /* Sticky error: its code, and for the feed's own errors (corrupt or
   * truncated data, decoder failures) a message and the stored-byte offset
   * it refers to. errmsg is empty when the sink failed (the sink reports its
   * own errors) or for a bare SC_ENOMEM. */
  int err;
  uint64_t err_off;
  char errmsg[256];
} sc_feed;

/* Prepares a feed bound to ctx that hands decompressed bytes to sink(ud, ..).
 * Allocates the output buffer: 0 or SC_ENOMEM (then nothing to free). */
int sc__feed_init(sc_feed *f, sc_ctx *ctx, sc_feed_sink sink, void *ud);
/* Releases the decoder and the buffer (after init, whatever happened). */
void sc__feed_free(sc_feed *f);
/* Feeds the next stored bytes. Returns 0 or the sticky error code: the
 * feed's own (f->errmsg set: "corrupt gzip data (...)", "data fed after the
 * end", ...) or the sink's. */
int sc__feed_put(sc_feed *f, const void *buf, size_t len);
/* Ends the input: flushes what is pending and checks that a compressed
 * stream ended ("truncated gzip data (the file ends inside the stream)").
 * Returns 0 or the sticky error code, as sc__feed_put. */
int sc__feed_end(sc_feed *f);
/* "plain", "gzip", "zstd" or "unknown" (fewer than 4 bytes seen). */
const char *sc__feed_encoding(const sc_feed *f);

/* Size-prefixed allocation through the context hook, for libraries whose
 * free callback does not pass the size (zlib, zstd, protobuf-c). */
void *sc__trace_alloc(sc_ctx *ctx, size_t n);
void sc__trace_free_block(sc_ctx *ctx, void *p);

#endif /* SC_FEED_INT_H */
