/*
 * opts.c: the argument iterator every command's parser runs on (driven by
 * the command's option table in cli/commands.c), choice values, numbers,
 * sizes and lists checked against their physical ranges (opts.h), lists of
 * repeated values, input files that must be regular, and the one way the
 * CLI prints errors and picks exit codes (the library's sc_exit_code table).
 */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sc_cli_config(sc_ctx *ctx, sc_config *cfg, const char *config, const char *calibration,
                  const char *hf, const sc_cli_list *sets) {
  /* Without CONFIG or --hf the job is the built-in example (--set edits
   * it); otherwise the file or config.json starts from the neutral defaults. */
  int rc = 0;
  if (config || hf) sc_config_default(cfg);
  else rc = sc_config_example(ctx, cfg);
  if (!rc && config) rc = sc_config_load_file(ctx, cfg, config);
  /* errors of --calibration name FILE (and its line) */
  if (!rc && calibration) rc = sc_config_load_calibration(ctx, cfg, calibration);
  if (!rc && hf) {
    char assign[4200];
    snprintf(assign, sizeof assign, "model.hf_config=%s", hf); /* long paths: set's error */
    rc = sc_config_set(ctx, cfg, assign);
  }
  for (int i = 0; !rc && sets && i < sets->n; i++) rc = sc_config_set(ctx, cfg, sets->v[i]);
  return rc;
}

/* sc_write_fn: whole lines to stderr, each prefixed. */
static int warn_line(void *ud, const char *buf, size_t len) {
  int *at_start = ud;
  for (size_t i = 0; i < len; i++) {
    if (*at_start) fputs("stepcast: warning: ", stderr);
    fputc(buf[i], stderr);
    *at_start = buf[i] == '\n';
  }
  return 0;
}

void sc_cli_config_warnings(const sc_config *cfg) { sc_cli_config_warnings_ex(cfg, 0); }

void sc_cli_config_warnings_ex(const sc_config *cfg, unsigned flags) {
  int at_start = 1;
  (void)sc_config_warnings_ex(cfg, flags, warn_line, &at_start);
}

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

/* A bound as the messages print it: every digit of an integer ("1048576",
 * not "1.04858e+06"), else the shortest %g text that reads back as v. */
static void bound_text(char *buf, size_t n, double v) {
  if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    snprintf(buf, n, "%.0f", v);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* "stepcast: OPT: V out of range [LO, HI]" ("(LO, HI]" when lo_open), V as
 * the user typed it; returns 0. */
static int out_of_range(const char *opt, const char *v, double lo, int lo_open, double hi) {
  char l[40], h[40];
  bound_text(l, sizeof l, lo);
  bound_text(h, sizeof h, hi);
  fprintf(stderr, "stepcast: %s: %s out of range %c%s, %s]\n", opt, v, lo_open ? '(' : '[', l, h);
  return 0;
}

static int expected(const char *opt, const char *what, const char *v) {
  fprintf(stderr, "stepcast: %s: expected %s, got \"%s\"\n", opt, what, v);
  return 0;
}

int sc_cli_int(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || (errno && errno != ERANGE)) return expected(opt, "an integer", v);
  /* beyond int64 (ERANGE) is beyond any bound */
  if (errno == ERANGE || x < lo || x > hi) return out_of_range(opt, v, (double)lo, 0, (double)hi);
  *out = (int64_t)x;
  return 1;
}

/* The number at the start of v (strtod's syntax; nan is not a number, an
 * overflow is +-HUGE_VAL), with *end after it; 0 if there is none. */
static int leading_number(const char *v, double *x, char **end) {
  errno = 0;
  *x = strtod(v, end);
  return *end != v && !isnan(*x);
}

static int in_range(double x, double lo, int lo_open, double hi) {
  return (lo_open ? x > lo : x >= lo) && x <= hi;
}

int sc_cli_real(const char *opt, const char *v, double lo, int lo_open, double hi, double *out) {
  char *end;
  double x;
  if (!leading_number(v, &x, &end) || *end) return expected(opt, "a number", v);
  if (!isfinite(x) || !in_range(x, lo, lo_open, hi)) return out_of_range(opt, v, lo, lo_open, hi);
  *out = x;
  return 1;
}

int sc_cli_size(const char *opt, const char *v, double lo, double hi, double *out) {
  static const char units[] = "KMGTP";
  char *end;
  double x;
  if (!leading_number(v, &x, &end)) return expected(opt, "a size such as 8, 64K or 8G", v);
  double mult = 1;
  const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
  if (u) {
    mult = ldexp(1.0, 10 * (int)(u - units + 1));
    end++;
    if (*end == 'i') end++;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return expected(opt, "a size such as 8, 64K or 8G", v);
  x = floor(x * mult) + 0.0; /* -0 is 0 */
  if (!isfinite(x) || !in_range(x, lo, 0, hi)) return out_of_range(opt, v, lo, 0, hi);
  *out = x;
  return 1;
}

int sc_cli_int_list(const char *opt, const char *v, int64_t lo, int64_t hi,
                    const char *const *names, int64_t *out, int max, int *n) {
  *n = 0;
  for (const char *p = v; *p;) {
    size_t len = strcspn(p, ",");
    char word[32];
    if (len == 0 || len >= sizeof word || *n == max) {
      fprintf(stderr, "stepcast: %s: bad list \"%s\"\n", opt, v);
      return 0;
    }
    memcpy(word, p, len);
    word[len] = 0;
    int64_t x = -1;
    int named = 0;
    for (int i = 0; names && names[i]; i++)
      if (!strcmp(word, names[i])) x = i, named = 1;
    if (!named) {
      char *end;
      errno = 0;
      long long y = strtoll(word, &end, 10);
      if (end == word || *end || (errno && errno != ERANGE)) {
        fprintf(stderr, "stepcast: %s: \"%s\" is not a valid value\n", opt, word);
        return 0;
      }
      if (errno == ERANGE || y < lo || y > hi)
        return out_of_range(opt, word, (double)lo, 0, (double)hi);
      x = (int64_t)y;
    }
    out[(*n)++] = x;
    p += len;
    if (*p == ',') {
      p++;
      if (!*p) { /* "4," */
        fprintf(stderr, "stepcast: %s: bad list \"%s\"\n", opt, v);
        return 0;
      }
    }
  }
  if (!*n) fprintf(stderr, "stepcast: %s: bad list \"%s\"\n", opt, v);
  return *n > 0;
}

int sc_cli_range_list(const char *opt, const char *v, int64_t lo, int64_t hi, sc_rank_range *out,
                      int max, int *n) {
  *n = 0;
  for (const char *p = v;;) {
    size_t len = strcspn(p, ",");
    char word[64];
    if (len == 0 || *n == max) {
      fprintf(stderr, "stepcast: %s: bad list \"%s\"\n", opt, v);
      return 0;
    }
    if (len >= sizeof word) {
      fprintf(stderr, "stepcast: %s: \"%.*s\" is not a rank or range A-B\n", opt, (int)len, p);
      return 0;
    }
    memcpy(word, p, len);
    word[len] = 0;
    /* A-B: the dash after the first digit (a leading '-' is a sign) */
    char *dash = word[0] ? strchr(word + 1, '-') : NULL;
    int64_t a, b;
    if (dash) *dash = 0;
    if (!word[0] || (dash && !dash[1]) || strspn(word, "0123456789-") != strlen(word) ||
        (dash && strspn(dash + 1, "0123456789-") != strlen(dash + 1))) {
      if (dash) *dash = '-';
      fprintf(stderr, "stepcast: %s: \"%s\" is not a rank or range A-B\n", opt, word);
      return 0;
    }
    if (!sc_cli_int(opt, word, lo, hi, &a) || (dash && !sc_cli_int(opt, dash + 1, lo, hi, &b)))
      return 0;
    if (!dash) b = a;
    if (b < a) {
      fprintf(stderr, "stepcast: %s: %s-%s is an empty range\n", opt, word, dash + 1);
      return 0;
    }
    out[(*n)++] = (sc_rank_range){a, b};
    p += len;
    if (!*p) break;
    p++; /* "4," leaves an empty item: a bad list */
  }
  return 1;
}

/* ------------------------------------------------------------ input files */

/* Why a file of this mode is no input, in the library's words
 * (src/base/ctx.c, sc__read_file). */
static const char *not_regular(mode_t mode) {
  return S_ISDIR(mode)    ? strerror(EISDIR)
         : S_ISFIFO(mode) ? "a FIFO, not a regular file"
                          : "not a regular file (a device?)";
}

FILE *sc_cli_open_regular(const char *path) {
  /* O_NONBLOCK: opening a FIFO for reading returns at once instead of
   * waiting for a writer; fstat then tells what was opened. */
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) {
    sc_cli_error(sc_exit_code(SC_EREAD), "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  const char *why = NULL;
  if (fstat(fd, &st) != 0) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = not_regular(st.st_mode);
  int fl = why ? -1 : fcntl(fd, F_GETFL);
  if (!why && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) why = strerror(errno);
  FILE *f = why ? NULL : fdopen(fd, "rb");
  if (!f) {
    if (!why) why = strerror(errno);
    close(fd);
    sc_cli_error(sc_exit_code(SC_EREAD), "%s: cannot open: %s", path, why);
  }
  return f;
}

int sc_cli_regular_file(const char *path) {
  struct stat st;
  const char *why = NULL;
  if (stat(path, &st) != 0) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = not_regular(st.st_mode);
  if (why) sc_cli_error(sc_exit_code(SC_EREAD), "%s: cannot open: %s", path, why);
  return !why;
}
