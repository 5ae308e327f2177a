/*
 * traceopt.c: the trace options of `run` and `replay` (traceopt.h), so both
 * commands parse, check and refuse traces the same way.
 */
#include "traceopt.h"

#include <math.h>
#include <string.h>

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcmp(s + n - m, tail);
}

void sc_cli_trace_init(sc_cli_trace *t) {
  memset(t, 0, sizeof *t);
  t->format = SC_CLI_TRACE_AUTO;
  t->limit_bytes = 4.0 * 1073741824.0;
  t->opts.format = SC_TRACE_OUT_JSON;
}

int sc_cli_trace_arg(sc_cli_trace *t, const sc_cli_args *a, int *code) {
  if (sc_cli_is(a, "--trace")) t->path = a->value;
  else if (sc_cli_is(a, "--trace-format")) t->format = a->choice; /* auto|json|perfetto */
  else if (sc_cli_is(a, "--trace-ranks")) t->ranks = a->value;
  else if (sc_cli_is(a, "--trace-limit")) {
    if (!sc_cli_size(a->opt->name, a->value, 0, SC_CLI_BYTES_MAX, &t->limit_bytes))
      *code = SC_CLI_EXIT_USAGE;
  } else return 0;
  return 1;
}

int sc_cli_trace_needs(const sc_cli_cmd *cmd, const sc_cli_trace *t, int other_sink) {
  if ((t->ranks || t->format != SC_CLI_TRACE_AUTO) && !t->path && !other_sink)
    return sc_cli_usage_error(cmd, "%s needs --trace FILE%s",
                              t->ranks ? "--trace-ranks" : "--trace-format",
                              cmd->name && !strcmp(cmd->name, "run") ? " or -o DIR" : "");
  return 0;
}

int sc_cli_trace_prepare(sc_cli_trace *t, int64_t world) {
  t->opts.format = t->format == SC_CLI_TRACE_PERFETTO ||
                           (t->format == SC_CLI_TRACE_AUTO && t->path &&
                            ends_with(t->path, ".pftrace"))
                       ? SC_TRACE_OUT_PERFETTO
                       : SC_TRACE_OUT_JSON;
  int nr = 0;
  if (t->ranks && !sc_cli_range_list("--trace-ranks", t->ranks, 0, world - 1, t->ranges,
                                     SC_CLI_TRACE_RANGES, &nr))
    return SC_CLI_EXIT_USAGE;
  t->opts.ranks = nr ? t->ranges : NULL;
  t->opts.nranks = (size_t)nr;
  return 0;
}

int sc_cli_trace_limit(const sc_cli_trace *t, double est_bytes, const char *note,
                       const char *advice) {
  if (!(est_bytes > t->limit_bytes)) return 0;
  /* in the unit --trace-limit takes: GiB, or MiB below one GiB */
  double unit = est_bytes >= 1073741824.0 ? 1073741824.0 : 1048576.0;
  const char *u = unit > 1048576.0 ? "G" : "M";
  return sc_cli_error(sc_exit_code(SC_EINVAL),
                      "%s: the trace would take ~%.1f %siB (estimate), above --trace-limit "
                      "%.1f %siB%s; raise the limit (--trace-limit %.0f%s)%s",
                      t->path, est_bytes / unit, u, t->limit_bytes / unit, u, note,
                      ceil(est_bytes / unit), u, advice);
}
