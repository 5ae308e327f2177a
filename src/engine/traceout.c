/*
 * traceout.c: the engine's timeline writers' shared buffer and the JSON one
 * (Chrome's trace event format, which ui.perfetto.dev and chrome://tracing
 * read): one process per traced rank, one thread per stream, "X" events for
 * ops and "C" events for the memory counter. The protobuf writer is
 * pftrace.c; traceout_int.h says how the engine drives both.
 */
#include "engine/traceout_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ buffer */

void sc__trace_out_flush(sc__trace_out *o) {
  if (o->len && !o->rc && o->w)
    o->rc = o->w(o->ud, o->buf, o->len);
  o->len = 0;
}

int sc__trace_out_reserve(sc__trace_out *o, size_t n) {
  if (o->rc || n > sizeof o->buf)
    return 0;
  if (sizeof o->buf - o->len < n)
    sc__trace_out_flush(o);
  return !o->rc;
}

/* A formatted piece of at most 512 bytes (longer ones are dropped, which the
 * name limit SC_TRACE_NAME_MAX keeps from happening). */
void sc__trace_out_printf(sc__trace_out *o, const char *fmt, ...) {
  if (sizeof o->buf - o->len < 512)
    sc__trace_out_flush(o);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    o->len += (size_t)n < sizeof o->buf - o->len ? (size_t)n : 0;
}

int sc__trace_opts_check(sc_ctx *ctx, const sc_trace_opts *t, int64_t world) {
  if (!t) return SC_OK;
  if (t->format != SC_TRACE_OUT_JSON && t->format != SC_TRACE_OUT_PERFETTO)
    return sc__error(ctx, SC_EINVAL, "unknown trace format %d", (int)t->format);
  if (!t->nranks) return SC_OK;
  if (!t->ranks)
    return sc__error(ctx, SC_EINVAL, "trace ranks: %zu ranges but none given", t->nranks);
  for (size_t k = 0; k < t->nranks; k++) {
    sc_rank_range g = t->ranks[k];
    if (g.first > g.last)
      return sc__error(ctx, SC_EINVAL, "trace ranks: %lld-%lld is an empty range",
                       (long long)g.first, (long long)g.last);
    if (g.first < 0 || g.last >= world)
      return sc__error(ctx, SC_EINVAL,
                       "trace ranks: rank %lld out of range [0, %lld] (the job has %lld ranks)",
                       (long long)(g.first < 0 ? g.first : g.last), (long long)(world - 1),
                       (long long)world);
  }
  return SC_OK;
}

int sc__trace_out_init(sc__trace_out *o, sc_ctx *ctx, int format, sc_write_fn w,
                       void *ud) {
  const sc__trace_vt *vt = format == SC_TRACE_OUT_JSON ? &sc__trace_json
                           : format == SC_TRACE_OUT_PERFETTO
                               ? &sc__trace_perfetto
                               : NULL;
  if (!vt)
    return sc__error(ctx, SC_EINVAL, "unknown trace format %d", format);
  o->vt = vt;
  o->ctx = ctx;
  o->w = w;
  o->ud = ud;
  o->rc = 0;
  o->first = 1;
  o->state = NULL;
  o->len = 0;
  return SC_OK;
}

void sc__trace_out_free(sc__trace_out *o) {
  if (o->vt && o->vt->free)
    o->vt->free(o);
  o->state = NULL;
}

/* ------------------------------------------------------------ JSON */

static void json_process(sc__trace_out *o, int64_t pid, const char *name,
                         int memory) {
  (void)memory; /* the counter events name their track themselves */
  if (o->first)
    sc__trace_out_printf(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  sc__trace_out_printf(o,
                       "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,"
                       "\"args\":{\"name\":"
                       "\"%s\"}}",
                       o->first ? "" : ",\n", (long long)pid, name);
  o->first = 0;
}

static void json_thread(sc__trace_out *o, int64_t pid, int tid,
                        const char *name) {
  sc__trace_out_printf(o,
                       ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,"
                       "\"tid\":%d,\"args\":"
                       "{\"name\":\"%s\"}}",
                       (long long)pid, tid, name);
}

static void json_slice(sc__trace_out *o, const sc__trace_slice *s) {
  double ts_us = (double)s->start_ns / 1e3,
         dur_us = (double)(s->end_ns - s->start_ns) / 1e3;
  if (s->explicit_op) {
    sc__trace_out_printf(
        o,
        ",\n{\"ph\":\"X\",\"pid\":%lld,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
        "\"name\":\"%.300s\",\"cat\":\"%s\",\"args\":{",
        (long long)s->pid, s->tid, ts_us, dur_us, s->name, s->cat);
    if (s->coll)
      sc__trace_out_printf(o, "\"collective\":\"%s\",\"group\":%u", s->coll,
                           s->group);
    sc__trace_out_printf(o, "}}");
    return;
  }
  sc__trace_out_printf(
      o,
      ",\n{\"ph\":\"X\",\"pid\":%lld,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
      "\"name\":\"%.300s\",\"cat\":\"%s\",\"args\":{\"mb\":%u,\"chunk\":%u",
      (long long)s->pid, s->tid, ts_us, dur_us, s->name, s->cat, s->mb,
      s->chunk);
  if (s->bytes >= 0)
    sc__trace_out_printf(o, ",\"bytes\":%.0f", s->bytes);
  if (s->coll)
    sc__trace_out_printf(o, ",\"collective\":\"%s\"", s->coll);
  sc__trace_out_printf(o, "}}");
}

static void json_counter(sc__trace_out *o, int64_t pid, int64_t t_ns,
                         double bytes) {
  sc__trace_out_printf(
      o,
      ",\n{\"ph\":\"C\",\"name\":\"memory\",\"pid\":%lld,\"ts\":%.3f,"
      "\"args\":{\"GiB\":%.4f}}",
      (long long)pid, (double)t_ns / 1e3, bytes / 1073741824.0);
}

/* The note goes into the top-level "otherData" object, where Chrome's
 * format keeps a trace's metadata. */
static void json_end(sc__trace_out *o, const char *note) {
  if (o->first)
    sc__trace_out_printf(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  o->first = 0;
  if (note)
    sc__trace_out_printf(
        o, "\n],\"otherData\":{\"stepcast_trace_ranks\":\"%.400s\"}}\n", note);
  else
    sc__trace_out_printf(o, "\n]}\n");
  sc__trace_out_flush(o);
}

const sc__trace_vt sc__trace_json = {"json",     json_process, json_thread,
                                     json_slice, json_counter, json_end,
                                     NULL};
