/*
 * opts.c: the argument iterator every command's parser runs on (driven by
 * the command's option table in cli/commands.c), choice and number values,
 * lists of repeated values, and the one way the CLI prints errors and picks
 * exit codes (the library's sc_exit_code table).
 */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int sc_cli_write_file(void *ud, const char *buf, size_t len) {
  return fwrite(buf, 1, len, (FILE *)ud) == len ? 0 : SC_EWRITE;
}

/* ------------------------------------------------------------ errors */

int sc_cli_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("stepcast: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

int sc_cli_usage_error(const sc_cli_cmd *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "stepcast: %s: ", cmd->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  sc_cli_usage(cmd, stderr);
  return SC_CLI_EXIT_USAGE;
}

int sc_cli_fail(const sc_ctx *ctx, int rc) {
  const char *msg = ctx ? sc_errmsg(ctx) : NULL;
  return sc_cli_error(sc_exit_code(rc), "%s", msg && msg[0] ? msg : sc_strerror(rc));
}

int sc_cli_write_error(const char *path, int opened) {
  if (opened) return sc_cli_error(sc_exit_code(SC_EWRITE), "%s: write failed", path);
  return sc_cli_error(sc_exit_code(SC_EWRITE), "%s: cannot open: %s", path, strerror(errno));
}

/* ------------------------------------------------------------ arguments */

void sc_cli_args_init(sc_cli_args *a, const sc_cli_cmd *cmd, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  a->argc = argc;
  a->argv = argv;
}

/* Index of value among the '|'-separated choices, or -1. */
static int choice_index(const char *choices, const char *value) {
  size_t len = strlen(value);
  int k = 0;
  for (const char *p = choices; *p; k++) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (n == len && !strncmp(p, value, n)) return k;
    p += n;
    if (*p == '|') p++;
  }
  return -1;
}

/* "--format must be text, json or csv, not "yaml"" */
static int bad_choice(sc_cli_args *a) {
  const char *c = a->opt->arg;
  fprintf(stderr, "stepcast: %s must be ", a->opt->name);
  int n = 1;
  for (const char *p = c; *p; p++) n += *p == '|';
  for (int k = 0; *c; k++) {
    size_t len = strcspn(c, "|");
    fprintf(stderr, "%s%.*s", k == 0 ? "" : k == n - 1 ? " or " : ", ", (int)len, c);
    c += len;
    if (*c == '|') c++;
  }
  fprintf(stderr, ", not \"%s\"\n", a->value);
  a->exit = SC_CLI_EXIT_USAGE;
  return -1;
}

static int is_help(const char *s) { return !strcmp(s, "-h") || !strcmp(s, "--help"); }

static int stop_help(sc_cli_args *a) {
  sc_cli_usage(a->cmd, stdout);
  a->exit = 0;
  return -1;
}

static int stop_usage(sc_cli_args *a, const char *fmt, const char *what) {
  a->exit = sc_cli_usage_error(a->cmd, fmt, what);
  return -1;
}

int sc_cli_next(sc_cli_args *a) {
  a->opt = NULL;
  a->value = NULL;
  a->choice = -1;
  if (a->i >= a->argc) return 0;
  const char *s = a->argv[a->i++];
  if (a->opts_done || s[0] != '-' || !s[1]) {
    a->value = s;
    return 1;
  }
  if (!strcmp(s, "--")) {
    a->opts_done = 1;
    return sc_cli_next(a);
  }
  if (is_help(s)) return stop_help(a);
  /* --name=value */
  const char *eq = s[1] == '-' ? strchr(s, '=') : NULL;
  size_t len = eq ? (size_t)(eq - s) : strlen(s);
  for (const sc_cli_opt *o = a->cmd->opts; o && o->name; o++) {
    if (strlen(o->name) != len || strncmp(o->name, s, len)) continue;
    a->opt = o;
    if (!o->arg || (o->flags & SC_CLI_LIST)) {
      if (eq) return stop_usage(a, "%s takes no value", o->name);
      return 1;
    }
    if (eq) a->value = eq + 1;
    else if (a->i < a->argc && is_help(a->argv[a->i])) return stop_help(a); /* --cases --help */
    else if (a->i < a->argc) a->value = a->argv[a->i++];
    else return stop_usage(a, "%s needs a value", o->name);
    if ((o->flags & SC_CLI_CHOICE) && (a->choice = choice_index(o->arg, a->value)) < 0)
      return bad_choice(a);
    return 1;
  }
  return stop_usage(a, "unknown option %s", s);
}

int sc_cli_is(const sc_cli_args *a, const char *name) {
  return a->opt && !strcmp(a->opt->name, name);
}

int sc_cli_unhandled(const sc_cli_args *a) {
  return sc_cli_error(1, "%s: internal error: option %s is not handled", a->cmd->name,
                      a->opt ? a->opt->name : a->value);
}

int sc_cli_list_add(sc_cli_list *l, const char *s) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    const char **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return sc_cli_fail(NULL, SC_ENOMEM);
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return 0;
}

void sc_cli_list_free(sc_cli_list *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------ values */

int sc_cli_int(const char *opt, const char *v, int64_t min, int64_t max, int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno || x < min || x > max) {
    /* bounds at or beyond int32's are not worth naming */
    int lo = min > INT32_MIN, hi = max < INT32_MAX;
    fprintf(stderr, "stepcast: %s: expected an integer", opt);
    if (lo && hi) fprintf(stderr, " in %lld..%lld", (long long)min, (long long)max);
    else if (lo) fprintf(stderr, " >= %lld", (long long)min);
    else if (hi) fprintf(stderr, " <= %lld", (long long)max);
    fprintf(stderr, ", got \"%s\"\n", v);
    return 0;
  }
  *out = (int64_t)x;
  return 1;
}

int sc_cli_real(const char *opt, const char *v, double min, int min_inclusive, double max,
                double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  int ok =
      end != v && !*end && !errno && isfinite(x) && x < max && (min_inclusive ? x >= min : x > min);
  if (!ok) {
    fprintf(stderr, "stepcast: %s: expected a number", opt);
    if (isfinite(min)) fprintf(stderr, " %s %g", min_inclusive ? ">=" : "above", min);
    if (isfinite(max)) fprintf(stderr, "%s below %g", isfinite(min) ? " and" : "", max);
    fprintf(stderr, ", got \"%s\"\n", v);
    return 0;
  }
  *out = x;
  return 1;
}
