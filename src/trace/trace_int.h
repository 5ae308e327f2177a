/*
 * trace_int.h: the trace reader behind sc_trace_open/feed/finish. trace.c
 * recognises the compression (plain, gzip, zstd) from the first bytes and
 * hands decompressed bytes to a format handler; kineto.c and chakra.c are
 * the handlers. A handler sees one file (one rank) and adds it to the job
 * when the input ends.
 */
#ifndef SC_TRACE_INT_H
#define SC_TRACE_INT_H

#include "trace/job_int.h"

typedef struct sc_trace_handler {
  const char *name;
  /* Allocates the handler state into r->state. 0 or SC_ENOMEM. */
  int (*open)(sc_trace_reader *r);
  /* Consumes decompressed bytes (any split). 0 or an SC_E code with the
   * context message set ("file:offset: ..."). */
  int (*data)(sc_trace_reader *r, const char *buf, size_t len);
  /* End of input: completes parsing and adds the rank to r->job. */
  int (*finish)(sc_trace_reader *r);
  void (*close)(sc_trace_reader *r);
} sc_trace_handler;

struct sc_trace_reader {
  sc_ctx *ctx;
  sc_job *job;
  char name[512];          /* file name for messages */
  uint32_t name_id;        /* interned name (rank source) */
  int64_t rank_hint;
  const sc_trace_handler *h;
  void *state;             /* handler state */
  /* Compression, chosen from the first bytes. */
  int comp;                /* 0 undecided, 1 plain, 2 gzip, 3 zstd */
  unsigned char head[4];
  size_t nhead;
  void *z;                 /* z_stream or ZSTD_DStream */
  int zend;                /* the compressed stream ended cleanly */
  unsigned char *out;      /* decompression output buffer */
  uint64_t in_bytes, out_bytes;
  int err;                 /* sticky error code */
  int finished;
};

/* Handlers. The Chakra one reads both the protobuf ET and the PyTorch host
 * execution-trace JSON, choosing by the first byte. */
extern const sc_trace_handler sc__kineto_handler;
extern const sc_trace_handler sc__chakra_handler;
extern const sc_trace_handler sc__exsitu_handler; /* exsitu.c: `import cpu` */

/* Sets the reader's sticky error with "name:offset: msg" and returns code. */
int sc__trace_fail(sc_trace_reader *r, int code, uint64_t offset, const char *fmt, ...)
    SC_PRINTF(4, 5);

/* Size-prefixed allocation through the context hook, for libraries whose
 * free callback does not pass the size (zlib, zstd, protobuf-c). */
void *sc__trace_alloc(sc_ctx *ctx, size_t n);
void sc__trace_free_block(sc_ctx *ctx, void *p);

struct sc_json;
struct sc_jtok;
/* Pulls every token the JSON tokenizer j has from its input and hands it to
 * on_token; an error from either becomes the reader's sticky error (malformed
 * JSON as "name:offset: invalid JSON: ..."). The JSON readers' data step. */
int sc__trace_pump(sc_trace_reader *r, struct sc_json *j,
                   int (*on_token)(sc_trace_reader *r, const struct sc_jtok *t));
/* Appends item (size bytes) to a growing array of *n items. 0 or SC_ENOMEM. */
int sc__trace_push(sc_ctx *ctx, void **arr, size_t size, size_t *n, size_t *cap, const void *item);

/* Bytes per element of a PyTorch / NCCL dtype name ("Float", "c10::BFloat16",
 * "float", "int8_t", "long int"); 0 when unknown. */
double sc__dtype_bytes(const char *s, size_t n);
/* SC_COLL_* of a collective name as c10d and Chakra spell it ("allreduce",
 * "all_reduce", "_allgather_base", "reduce_scatter_tensor", "alltoall_base",
 * "broadcast"); -1 for point-to-point (send/recv); -2 unknown. */
int sc__coll_from_name(const char *s, size_t n);

#endif /* SC_TRACE_INT_H */
