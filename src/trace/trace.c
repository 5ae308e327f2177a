/*
 * trace.c: the feed-style trace reader (sc_trace_open/feed/finish). Bytes
 * arrive exactly as stored; the first ones decide the encoding (gzip and
 * zstd magic numbers, else plain), and decompressed output goes through a
 * 64 KiB buffer to the format handler (kineto.c, chakra.c). Also the small
 * vocabulary the handlers share: dtype sizes and collective names.
 */
#include "trace/trace_int.h"

#include "base/json_int.h"

#include "ir/ir_int.h"

#include <stdio.h>
#include <zlib.h>
/* ZSTD_createDStream_advanced (allocation through our context hook) is in
 * zstd's experimental section, stable since 1.0 and exported by libzstd. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

enum { COMP_NONE = 0, COMP_PLAIN, COMP_GZIP, COMP_ZSTD };
#define OUT_BYTES (1u << 16)

int sc__trace_fail(sc_trace_reader *r, int code, uint64_t offset, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!r->err) {
    r->err = code;
    sc__error(r->ctx, code, "%s:%llu: %s", r->name, (unsigned long long)offset, msg);
  }
  return r->err;
}

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

int sc_trace_open(sc_job *job, sc_trace_format fmt, const char *name, int64_t rank_hint,
                  sc_trace_reader **out) {
  sc_ctx *ctx = job->ctx;
  *out = NULL;
  sc_trace_reader *r = sc__calloc(ctx, 1, sizeof *r);
  if (!r) return SC_ENOMEM;
  r->ctx = ctx;
  r->job = job;
  sc__strlcpy(r->name, name ? name : "trace", sizeof r->name);
  r->rank_hint = rank_hint >= 0 ? rank_hint : job->opened;
  job->opened++;
  r->h = fmt == SC_TRACE_CHAKRA ? &sc__chakra_handler
         : fmt == SC_TRACE_CPU  ? &sc__exsitu_handler
                                : &sc__kineto_handler;
  r->out = sc__malloc(ctx, OUT_BYTES);
  int rc = r->out ? sc__job_intern(job, r->name, strlen(r->name), &r->name_id) : SC_ENOMEM;
  if (!rc) rc = r->h->open(r);
  if (rc) {
    sc_trace_free(r);
    return rc;
  }
  *out = r;
  return SC_OK;
}

void sc_trace_free(sc_trace_reader *r) {
  if (!r) return;
  sc_ctx *ctx = r->ctx;
  if (r->state) r->h->close(r);
  if (r->z && r->comp == COMP_GZIP) {
    inflateEnd(r->z);
    sc__free(ctx, r->z, sizeof(z_stream));
  } else if (r->z && r->comp == COMP_ZSTD) {
    ZSTD_freeDStream(r->z);
  }
  sc__free(ctx, r->out, OUT_BYTES);
  sc__free(ctx, r, sizeof *r);
}

uint64_t sc_trace_bytes(const sc_trace_reader *r) { return r->out_bytes; }

static int deliver(sc_trace_reader *r, const char *buf, size_t len) {
  if (!len) return SC_OK;
  int rc = r->h->data(r, buf, len);
  r->out_bytes += len;
  if (rc && !r->err) r->err = rc;
  return rc;
}

/* Picks the decoder from the first bytes (gzip 1f 8b, RFC 1952; zstd frame
 * magic 28 b5 2f fd, RFC 8878) and sets it up. */
static int start_decoder(sc_trace_reader *r) {
  const unsigned char *h = r->head;
  if (r->nhead >= 2 && h[0] == 0x1f && h[1] == 0x8b) {
    z_stream *z = sc__calloc(r->ctx, 1, sizeof *z);
    if (!z) return SC_ENOMEM;
    z->zalloc = z_alloc;
    z->zfree = z_free;
    z->opaque = r->ctx;
    /* 15 + 16: gzip wrapper, largest window. */
    if (inflateInit2(z, 15 + 16) != Z_OK) {
      sc__free(r->ctx, z, sizeof *z);
      return sc__trace_fail(r, SC_ENOMEM, 0, "cannot start the gzip decoder");
    }
    r->z = z;
    r->comp = COMP_GZIP;
  } else if (r->nhead >= 4 && h[0] == 0x28 && h[1] == 0xb5 && h[2] == 0x2f && h[3] == 0xfd) {
    ZSTD_customMem mem = {zstd_alloc, zstd_free, r->ctx};
    ZSTD_DStream *zs = ZSTD_createDStream_advanced(mem);
    if (!zs) return sc__trace_fail(r, SC_ENOMEM, 0, "cannot start the zstd decoder");
    ZSTD_initDStream(zs);
    r->z = zs;
    r->comp = COMP_ZSTD;
  } else {
    r->comp = COMP_PLAIN;
  }
  return SC_OK;
}

static int feed_gzip(sc_trace_reader *r, const unsigned char *p, size_t len) {
  z_stream *z = r->z;
  while (len) {
    uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
    if (r->zend) {
      /* Concatenated gzip members (RFC 1952 2.2) continue; anything else
       * after the end is an error. */
      if (p[0] != 0x1f) return sc__trace_fail(r, SC_EINVAL, r->in_bytes, "data after the end of the gzip stream");
      inflateReset(z);
      r->zend = 0;
    }
    z->next_in = (Bytef *)p;
    z->avail_in = chunk;
    for (;;) {
      z->next_out = r->out;
      z->avail_out = OUT_BYTES;
      int zr = inflate(z, Z_NO_FLUSH);
      size_t got = OUT_BYTES - z->avail_out;
      if (zr == Z_STREAM_END) r->zend = 1;
      else if (zr == Z_MEM_ERROR) return sc__trace_fail(r, SC_ENOMEM, r->in_bytes, "out of memory");
      else if (zr != Z_OK && zr != Z_BUF_ERROR)
        return sc__trace_fail(r, SC_EINVAL, r->in_bytes + (chunk - z->avail_in),
                              "corrupt gzip data (%s)", z->msg ? z->msg : "inflate failed");
      if (deliver(r, (const char *)r->out, got)) return r->err;
      /* Done with this input once it is consumed and the output buffer was
       * not filled (a full buffer may leave output pending). */
      if (r->zend || zr == Z_BUF_ERROR || (z->avail_in == 0 && z->avail_out != 0)) break;
    }
    size_t used = chunk - z->avail_in;
    r->in_bytes += used;
    p += used;
    len -= used;
    if (!used && !r->zend) break; /* cannot happen with input and output room */
  }
  return SC_OK;
}

/* A call that neither consumes input nor produces output leaves `zend`
 * alone: after a complete frame zstd reports the header size of a next
 * frame, which is not a truncation. */
static int feed_zstd(sc_trace_reader *r, const unsigned char *p, size_t len) {
  ZSTD_inBuffer in = {p, len, 0};
  for (;;) {
    ZSTD_outBuffer out = {r->out, OUT_BYTES, 0};
    size_t before = in.pos;
    size_t zr = ZSTD_decompressStream(r->z, &out, &in);
    if (ZSTD_isError(zr)) {
      if (ZSTD_getErrorCode(zr) == ZSTD_error_memory_allocation)
        return sc__trace_fail(r, SC_ENOMEM, r->in_bytes + in.pos, "out of memory");
      return sc__trace_fail(r, SC_EINVAL, r->in_bytes + in.pos, "corrupt zstd data (%s)",
                            ZSTD_getErrorName(zr));
    }
    if (zr == 0) r->zend = 1;
    else if (in.pos > before || out.pos > 0) r->zend = 0;
    if (deliver(r, (const char *)r->out, out.pos)) return r->err;
    if (in.pos == in.size && out.pos < OUT_BYTES) break; /* input used, output drained */
  }
  r->in_bytes += len;
  return SC_OK;
}

static int feed_raw(sc_trace_reader *r, const unsigned char *p, size_t len) {
  switch (r->comp) {
  case COMP_GZIP:
    return feed_gzip(r, p, len);
  case COMP_ZSTD:
    return feed_zstd(r, p, len);
  default:
    r->in_bytes += len;
    return deliver(r, (const char *)p, len);
  }
}

int sc_trace_feed(sc_trace_reader *r, const void *buf, size_t len) {
  if (r->err) return r->err;
  if (r->finished) return sc__trace_fail(r, SC_EINVAL, r->in_bytes, "data fed after the end");
  const unsigned char *p = buf;
  if (r->comp == COMP_NONE) {
    /* Collect the 4 magic bytes first (they may arrive split). */
    while (len && r->nhead < sizeof r->head) r->head[r->nhead++] = *p++, len--;
    if (r->nhead < sizeof r->head) return SC_OK;
    int rc = start_decoder(r);
    if (!rc) rc = feed_raw(r, r->head, r->nhead);
    if (rc) return rc;
  }
  return len ? feed_raw(r, p, len) : SC_OK;
}

int sc_trace_finish(sc_trace_reader *r) {
  if (r->err) return r->err;
  if (r->finished) return sc__trace_fail(r, SC_EINVAL, r->in_bytes, "finished twice");
  if (r->comp == COMP_NONE) { /* fewer than 4 bytes in all */
    int rc = start_decoder(r);
    if (!rc) rc = feed_raw(r, r->head, r->nhead);
    if (rc) return rc;
  }
  r->finished = 1;
  if ((r->comp == COMP_GZIP || r->comp == COMP_ZSTD) && !r->zend)
    return sc__trace_fail(r, SC_EINVAL, r->in_bytes, "truncated %s data (the file ends inside the stream)",
                          r->comp == COMP_GZIP ? "gzip" : "zstd");
  int rc = r->h->finish(r);
  if (rc && !r->err) r->err = rc;
  return rc;
}

/* ------------------------------------------------------------ vocabulary */

static int eq(const char *s, size_t n, const char *lit) {
  size_t k = strlen(lit);
  if (n != k) return 0;
  for (size_t i = 0; i < n; i++) {
    char a = s[i], b = lit[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

int sc__trace_pump(sc_trace_reader *r, sc_json *j, int (*on_token)(sc_trace_reader *r, const sc_jtok *t)) {
  sc_jtok t;
  int rc;
  while ((rc = sc__json_next(j, &t)) == 1) {
    int e = on_token(r, &t);
    if (e) return r->err ? r->err : (r->err = e);
  }
  if (rc == SC_ENOMEM) return sc__trace_fail(r, SC_ENOMEM, j->err_off, "out of memory");
  if (rc < 0) return sc__trace_fail(r, SC_EINVAL, j->err_off, "invalid JSON: %s", j->errmsg);
  return SC_OK;
}

int sc__trace_push(sc_ctx *ctx, void **arr, size_t size, size_t *n, size_t *cap, const void *item) {
  if (*n >= UINT32_MAX - 1 || sc__grow(ctx, arr, size, cap, *n + 1)) return SC_ENOMEM;
  memcpy((char *)*arr + *n * size, item, size);
  (*n)++;
  return SC_OK;
}

double sc__dtype_bytes(const char *s, size_t n) {
  /* Strip a "c10::" or "at::" namespace and a trailing '*'. */
  if (n > 5 && !memcmp(s, "c10::", 5)) s += 5, n -= 5;
  static const struct {
    const char *name;
    double bytes;
  } t[] = {{"float", 4},       {"float32", 4},     {"int", 4},         {"int32", 4},
           {"int32_t", 4},     {"uint32_t", 4},    {"unsigned int", 4}, {"half", 2},
           {"float16", 2},     {"bfloat16", 2},    {"__nv_bfloat16", 2}, {"bf16", 2},
           {"__half", 2},      {"short", 2},       {"int16", 2},       {"double", 8},
           {"float64", 8},     {"long", 8},        {"long int", 8},    {"int64", 8},
           {"int64_t", 8},     {"uint64_t", 8},    {"long long", 8},   {"byte", 1},
           {"char", 1},        {"bool", 1},        {"int8", 1},        {"int8_t", 1},
           {"uint8", 1},       {"uint8_t", 1},     {"unsigned char", 1}, {"signed char", 1},
           {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"fp8", 1},       {"complexfloat", 8},
           {"complexdouble", 16}, {"complexhalf", 4}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (eq(s, n, t[i].name)) return t[i].bytes;
  return 0;
}

int sc__coll_from_name(const char *s, size_t n) {
  /* Drop "nccl:", "c10d::", leading underscores and a trailing '_' (c10d's
   * in-place op names). */
  if (n > 5 && !memcmp(s, "nccl:", 5)) s += 5, n -= 5;
  if (n > 6 && !memcmp(s, "c10d::", 6)) s += 6, n -= 6;
  while (n && *s == '_') s++, n--;
  while (n && s[n - 1] == '_') n--;
  static const struct {
    const char *name;
    int coll;
  } t[] = {{"allreduce", SC_COLL_ALLREDUCE},
           {"all_reduce", SC_COLL_ALLREDUCE},
           {"allreduce_coalesced", SC_COLL_ALLREDUCE},
           {"all_reduce_coalesced", SC_COLL_ALLREDUCE},
           {"allreduce_sparse", SC_COLL_ALLREDUCE},
           {"barrier", SC_COLL_ALLREDUCE}, /* c10d's barrier is a 1-element all-reduce */
           {"allgather", SC_COLL_ALLGATHER},
           {"all_gather", SC_COLL_ALLGATHER},
           {"allgather_base", SC_COLL_ALLGATHER},
           {"all_gather_base", SC_COLL_ALLGATHER},
           {"allgather_into_tensor", SC_COLL_ALLGATHER},
           {"all_gather_into_tensor", SC_COLL_ALLGATHER},
           {"allgather_into_tensor_coalesced", SC_COLL_ALLGATHER},
           {"allgather_coalesced", SC_COLL_ALLGATHER},
           {"reducescatter", SC_COLL_REDUCESCATTER},
           {"reduce_scatter", SC_COLL_REDUCESCATTER},
           {"reduce_scatter_base", SC_COLL_REDUCESCATTER},
           {"reduce_scatter_tensor", SC_COLL_REDUCESCATTER},
           {"reduce_scatter_tensor_coalesced", SC_COLL_REDUCESCATTER},
           {"alltoall", SC_COLL_ALLTOALL},
           {"all_to_all", SC_COLL_ALLTOALL},
           {"alltoall_base", SC_COLL_ALLTOALL},
           {"all_to_all_single", SC_COLL_ALLTOALL},
           {"all_to_allv", SC_COLL_ALLTOALL},
           {"broadcast", SC_COLL_BROADCAST},
           /* NCCL's ring reduce moves the same bytes per link as its ring
            * broadcast (nccl-tests doc/PERFORMANCE.md: bus factor 1 for
            * both), so reduce is priced as a broadcast. */
           {"reduce", SC_COLL_BROADCAST},
           {"send", -1},
           {"recv", -1},
           {"sendrecv", -1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (eq(s, n, t[i].name)) return t[i].coll;
  return -2;
}
