/*
 * trace_int.h: the trace reader behind sc_trace_open/feed/finish. trace.c
 * puts the compression feed (feed.c: plain, gzip, zstd from the first bytes)
 * in front of a format handler: kineto.c, exsitu.c (both on the Chrome-trace
 * reader chrome.c) and chakra.c. A handler sees one file (one rank) and adds
 * it to the job when the input ends.
 */
#ifndef SC_TRACE_INT_H
#define SC_TRACE_INT_H

#include "trace/feed_int.h"
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
  sc_trace_format fmt;     /* the format asked for (the handler serves several) */
  void *state;             /* handler state */
  sc_feed feed;            /* stored bytes in, decompressed bytes to h->data;
                            * feed.out_bytes: decompressed bytes so far */
  int err;                 /* sticky error code */
};

/* Records of one kind (GPU events, runtime calls, operators, Chakra nodes)
 * a reader keeps from one trace file, so memory is bounded by content, not
 * file size: 2^24, the most ops a rank may have (job_int.h SC_JOB_MAX_OPS). */
#define SC_TRACE_MAX_RECORDS SC_JOB_MAX_OPS

/* Handlers. The Chakra one reads both the protobuf ET and the PyTorch host
 * execution-trace JSON, choosing by the first byte. */
extern const sc_trace_handler sc__kineto_handler;
extern const sc_trace_handler sc__chakra_handler;
extern const sc_trace_handler sc__exsitu_handler; /* exsitu.c: `import cpu` */

/* Sets the reader's sticky error with "name:offset: msg" and returns code. */
int sc__trace_fail(sc_trace_reader *r, int code, uint64_t offset, const char *fmt, ...)
    SC_PRINTF(4, 5);

struct sc_json;
struct sc_jtok;
/* Pulls every token the JSON tokenizer j has from its input and hands it to
 * on_token; an error from either becomes the reader's sticky error (malformed
 * JSON as "name:offset: invalid JSON: ..."). The JSON readers' data step. */
int sc__trace_pump(sc_trace_reader *r, struct sc_json *j,
                   int (*on_token)(sc_trace_reader *r, const struct sc_jtok *t));
struct sc_chrome;
/* Makes a failure of the Chrome-trace reader c (rc from sc__chrome_feed /
 * sc__chrome_end) the reader's sticky error, worded as the JSON readers
 * word it: "name:offset: invalid JSON: ...", "name:offset: out of memory",
 * "name:offset: <the spec's message>"; a callback's own error is kept as it
 * is. Returns the sticky code. */
int sc__trace_chrome_fail(sc_trace_reader *r, const struct sc_chrome *c, int rc);
struct sc_jtok;
/* deviceProperties (v, n tokens: [{"id": 0, "name": "NVIDIA ..."}, ..]):
 * dev(ud, id, name) for each entry with an integer id, name interned (0
 * when absent); a non-integer id is warned about and the entry skipped;
 * members other than id and name, and entries that are not objects, are
 * passed over. Returns 0, SC_ENOMEM or dev's error. */
int sc__trace_devices(sc_trace_reader *r, const struct sc_jtok *v, size_t n,
                      int (*dev)(void *ud, int64_t id, uint32_t name), void *ud);
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
