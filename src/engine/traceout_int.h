/*
 * traceout_int.h: the timeline writers behind the engine's trace (`run
 * --trace`, `replay --trace`). The engine hands each writer the same calls
 * (tracks, slices, memory counter values, a closing note) and the writer
 * encodes them: traceout.c as Chrome/Perfetto JSON, pftrace.c as Perfetto's
 * protobuf trace (src/engine/perfetto_trace.proto). Both stream through one
 * 64 KiB buffer to the caller's sc_write_fn.
 */
#ifndef SC_TRACEOUT_INT_H
#define SC_TRACEOUT_INT_H

#include "base/sc_int.h"

#include <stdint.h>

/* One op on the timeline. pid is the global rank, tid the stream (SC_ST_*).
 * Synthesised workloads' ops carry mb and chunk (and bytes >= 0 for
 * communication); explicit (replayed) ones carry group instead. coll is the
 * collective's name, NULL for other ops. Times in ns. */
typedef struct sc__trace_slice {
  int64_t pid;
  int tid;
  int64_t start_ns, end_ns;
  const char *name; /* at most SC_TRACE_NAME_MAX bytes are written */
  const char *cat;  /* breakdown category key */
  int explicit_op;  /* 1: args are coll and group only */
  unsigned mb, chunk, group;
  double bytes;     /* < 0: none */
  const char *coll; /* NULL: not a collective */
} sc__trace_slice;

/* Longest op name written (replayed kernel names can be long). */
#define SC_TRACE_NAME_MAX 300

typedef struct sc__trace_out sc__trace_out;

/* A writer. Calls come in this order: process (with its threads after it)
 * for every traced rank, then slices and counters in the engine's order
 * (ending time, not start time), then end. Errors are sticky in out->rc. */
typedef struct sc__trace_vt {
  const char *name;
  /* A traced rank's track, named; memory: it has a memory counter track. */
  void (*process)(sc__trace_out *o, int64_t pid, const char *name, int memory);
  void (*thread)(sc__trace_out *o, int64_t pid, int tid, const char *name);
  void (*slice)(sc__trace_out *o, const sc__trace_slice *s);
  /* The memory counter of rank pid from t_ns on, bytes. */
  void (*counter)(sc__trace_out *o, int64_t pid, int64_t t_ns, double bytes);
  /* note: the trace's metadata (which ranks were chosen and how); NULL for
   * none. Flushes the buffer. */
  void (*end)(sc__trace_out *o, const char *note);
  /* Frees the writer's state (NULL: none). */
  void (*free)(sc__trace_out *o);
} sc__trace_vt;

struct sc__trace_out {
  const sc__trace_vt *vt;
  sc_ctx *ctx;
  sc_write_fn w;
  void *ud;
  int rc; /* first failure of w (or SC_ENOMEM); nothing is written after it */
  int first;   /* JSON: no event written yet */
  void *state; /* the writer's own (pftrace.c: interning tables) */
  size_t len;
  char buf[1 << 16];
};

extern const sc__trace_vt sc__trace_json;
extern const sc__trace_vt sc__trace_perfetto;

/* Sets up o for the writer of format (SC_TRACE_OUT_*) writing to w; does not
 * write. Returns 0 or SC_EINVAL for an unknown format. */
int sc__trace_out_init(sc__trace_out *o, sc_ctx *ctx, int format, sc_write_fn w,
                       void *ud);
/* Checks a trace's options against a job of `world` ranks before anything
 * runs: a known format, and each chosen range first <= last inside
 * [0, world). 0 or SC_EINVAL with "trace ranks: ..." in ctx. Shared by
 * run's (analysis/simulate.c) and replay's (analysis/replay.c) traces. */
int sc__trace_opts_check(sc_ctx *ctx, const sc_trace_opts *t, int64_t world);

/* Frees what the writer allocated (not o itself). */
void sc__trace_out_free(sc__trace_out *o);

/* Buffer helpers shared by the writers. */
void sc__trace_out_flush(sc__trace_out *o);
/* Room for n more bytes (flushes first when short); 0 when n exceeds the
 * buffer or writing failed. */
int sc__trace_out_reserve(sc__trace_out *o, size_t n);
void sc__trace_out_printf(sc__trace_out *o, const char *fmt, ...)
    SC_PRINTF(2, 3);

#endif /* SC_TRACEOUT_INT_H */
