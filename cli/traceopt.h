/*
 * traceopt.h: the trace options `run` and `replay` share (--trace,
 * --trace-format, --trace-ranks, --trace-limit): their parsing, the format
 * a path implies, the rank list against the job's world, and the refusal of
 * a trace estimated above the limit (cli/traceopt.c). Parsing only; the
 * library sizes and writes the trace.
 */
#ifndef SC_CLI_TRACEOPT_H
#define SC_CLI_TRACEOPT_H

#include "opts.h"

/* Most ranges --trace-ranks takes (a timeline of more is no longer read by
 * eye; a range covers any number of ranks). */
#define SC_CLI_TRACE_RANGES 256

/* --trace-format: auto (the extension decides), json, perfetto */
enum { SC_CLI_TRACE_AUTO = 0, SC_CLI_TRACE_JSON, SC_CLI_TRACE_PERFETTO };

typedef struct sc_cli_trace {
  const char *path;  /* --trace FILE; NULL: none */
  const char *ranks; /* --trace-ranks LIST as typed; NULL: every rank */
  int format;        /* SC_CLI_TRACE_* */
  /* --trace-limit: refuse a trace estimated above it (default 4 GiB: an
   * unfolded GPT-3 175B step is ~9 GB of JSON) */
  double limit_bytes;
  sc_rank_range ranges[SC_CLI_TRACE_RANGES];
  sc_trace_opts opts; /* after sc_cli_trace_prepare */
} sc_cli_trace;

void sc_cli_trace_init(sc_cli_trace *t);
/* Takes the argument just read if it is one of the trace options: returns
 * 1 (with *code the usage exit code on a bad --trace-limit, else left
 * alone), 0 when it is not a trace option. */
int sc_cli_trace_arg(sc_cli_trace *t, const sc_cli_args *a, int *code);
/* --trace-ranks or --trace-format without a trace to write (path NULL and
 * no -o DIR: other_sink 0): prints the usage error, returns exit 2; else 0. */
int sc_cli_trace_needs(const sc_cli_cmd *cmd, const sc_cli_trace *t, int other_sink);
/* The format (--trace-format, else by the path's extension: .pftrace is
 * Perfetto protobuf) and the ranks parsed against [0, world - 1] into
 * t->opts. 0, or the usage exit code after printing why. */
int sc_cli_trace_prepare(sc_cli_trace *t, int64_t world);
/* est_bytes over the limit: prints "PATH: the trace would take ~X (estimate),
 * above --trace-limit ...; raise the limit (...)" with `note` after the
 * limit and `advice` after the way out (each may be ""), returns exit 2;
 * else 0. */
int sc_cli_trace_limit(const sc_cli_trace *t, double est_bytes, const char *note,
                       const char *advice);

#endif /* SC_CLI_TRACEOPT_H */
