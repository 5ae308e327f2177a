/*
 * nccltests.c: reader of nccl-tests output (all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf, alltoall_perf, sendrecv_perf, broadcast_perf), the
 * measurements that `stepcast calibrate --nccl-tests` fits the collective
 * model to and `stepcast comm --compare` checks it against. One pass over the
 * text, one growable row array; errors are "file:line: message".
 */
#include "stepcast/comm.h"

#include "base/sc_int.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* ------------------------------------------------------------ operations */

static const struct {
  const char *name, *perf;
} op_names[] = {
#define SC_X_ROW(id, name, perf) {name, perf},
    SC_COMM_OP_LIST(SC_X_ROW)
#undef SC_X_ROW
};

const char *sc_comm_op_name(int op) {
  return op >= 0 && op < SC_COMM_OP_COUNT ? op_names[op].name : "?";
}

/* Lower-cases `s` and drops '_', '-' and a trailing "perf", so that
 * "All-Reduce", "allreduce" and "all_reduce_perf" compare equal. */
static void squash(const char *s, char *out, size_t cap) {
  size_t n = 0;
  for (; *s && n + 1 < cap; s++)
    if (*s != '_' && *s != '-' && *s != ' ') out[n++] = (char)tolower((unsigned char)*s);
  out[n] = 0;
  if (n > 4 && !strcmp(out + n - 4, "perf")) out[n - 4] = 0;
}

int sc_comm_op_find(const char *name) {
  if (!name) return -1;
  char want[64], have[64];
  squash(name, want, sizeof want);
  for (int i = 0; i < SC_COMM_OP_COUNT; i++) {
    squash(op_names[i].name, have, sizeof have);
    if (!strcmp(want, have)) return i;
    squash(op_names[i].perf, have, sizeof have);
    if (!strcmp(want, have)) return i;
  }
  if (!strcmp(want, "bcast")) return SC_COMM_BROADCAST;
  if (!strcmp(want, "a2a")) return SC_COMM_ALL_TO_ALL;
  return -1;
}

/* nccl-tests' bus factors (its README "Performance" section and the
 * *GetBw functions of each test): 2(n-1)/n for all-reduce, (n-1)/n for
 * all-gather, reduce-scatter and all-to-all, 1 for broadcast and send/recv. */
double sc_comm_bus_factor(int op, int64_t n) {
  double dn = (double)(n < 1 ? 1 : n);
  switch (op) {
  case SC_COMM_ALL_REDUCE:
    return 2.0 * (dn - 1) / dn;
  case SC_COMM_ALL_GATHER:
  case SC_COMM_REDUCE_SCATTER:
  case SC_COMM_ALL_TO_ALL:
    return (dn - 1) / dn;
  default:
    return 1.0;
  }
}

/* The operation a file name suggests ("all_gather_8gpu.log",
 * "h200_2node_16gpu_allreduce_roce.txt"), -1 if none. reduce_scatter is
 * tried before the all-reduce spellings because "reducescatter" contains
 * neither, while "allreduce" would match inside nothing else. */
static int op_from_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char s[256];
  squash(base, s, sizeof s);
  static const struct {
    const char *needle;
    int op;
  } pats[] = {{"reducescatter", SC_COMM_REDUCE_SCATTER}, {"allreduce", SC_COMM_ALL_REDUCE},
              {"allgather", SC_COMM_ALL_GATHER},         {"alltoall", SC_COMM_ALL_TO_ALL},
              {"sendrecv", SC_COMM_SEND_RECV},           {"broadcast", SC_COMM_BROADCAST}};
  for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
    if (strstr(s, pats[i].needle)) return pats[i].op;
  return -1;
}

/* ------------------------------------------------------------ lines */

#define LINE_MAX_BYTES 8192
#define MAX_TOKENS 64

/* Copies line [s, s+n) into dst without the trailing CR and without mpirun's
 * output tags "[1,0]<stdout>:" / "<stderr>:", which Open MPI inserts at the
 * start of every line and, when two writes interleave, in the middle of one
 * (the Azure 128-GPU log has "node-[1,0]<stdout>:00000C"). Returns the
 * length, or -1 if the line does not fit. */
static long strip_line(const char *s, size_t n, char *dst, size_t cap) {
  size_t o = 0;
  while (n && (s[n - 1] == '\r' || s[n - 1] == '\n')) n--;
  for (size_t i = 0; i < n;) {
    if (s[i] == '[') {
      size_t j = i + 1;
      while (j < n && isdigit((unsigned char)s[j])) j++;
      if (j > i + 1 && j < n && s[j] == ',') {
        size_t k = j + 1;
        while (k < n && isdigit((unsigned char)s[k])) k++;
        if (k > j + 1 && k + 10 <= n && s[k] == ']' &&
            (!memcmp(s + k + 1, "<stdout>:", 9) || !memcmp(s + k + 1, "<stderr>:", 9))) {
          i = k + 10;
          continue;
        }
      }
    }
    if (o + 1 >= cap) return -1;
    dst[o++] = s[i++] == '\t' ? ' ' : s[i - 1];
  }
  dst[o] = 0;
  return (long)o;
}

/* Splits buf in place at spaces; returns the token count (at most max, the
 * rest of the line stays attached to nothing: *more is set). */
static int tokenize(char *buf, char **tok, int max, int *more) {
  int n = 0;
  *more = 0;
  char *p = buf;
  for (;;) {
    while (*p == ' ') p++;
    if (!*p) break;
    if (n == max) {
      *more = 1;
      break;
    }
    tok[n++] = p;
    while (*p && *p != ' ') p++;
    if (*p) *p++ = 0;
  }
  return n;
}

static int parse_i64(const char *s, int64_t *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end || errno) return 0;
  *out = (int64_t)v;
  return 1;
}

/* Whether s is spelled as an integer ([+-]digits), whether or not it fits
 * an int64: a data row starts with one, and one too large for int64 is a
 * cell out of range, not a line to skip. */
static int is_integer(const char *s) {
  if (*s == '+' || *s == '-') s++;
  if (!isdigit((unsigned char)*s)) return 0;
  while (isdigit((unsigned char)*s)) s++;
  return !*s;
}

/* A numeric cell: a finite number, or "N/A" (NAN). */
static int parse_cell(const char *s, double *out) {
  if (!strcmp(s, "N/A")) {
    *out = NAN;
    return 1;
  }
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

static int is_name(const char *s) {
  if (!isalpha((unsigned char)*s)) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.') return 0;
  return 1;
}

/* ------------------------------------------------------------ table layout */

/* Column kinds of a table header ("# size count type redop root time algbw
 * busbw #wrong time algbw busbw #wrong"). */
enum {
  C_SIZE,
  C_COUNT,
  C_TYPE,
  C_REDOP,
  C_ROOT,
  C_TIME,
  C_ALGBW,
  C_BUSBW,
  C_WRONG,
  C_SKIP,
  C_STAMP
};

typedef struct layout {
  int ncols;
  unsigned char kind[MAX_TOKENS];
  unsigned char side[MAX_TOKENS]; /* 0 out-of-place, 1 in-place */
  int side_width;                 /* columns per side (time .. last stat) */
  int stamp;                      /* 1: ends with a timestamp of any width */
} layout;

/* Reads a header's column names; 0 if the tokens are not a table header. */
static int layout_from_header(char **tok, int n, layout *L) {
  memset(L, 0, sizeof *L);
  if (n < 6 || strcmp(tok[0], "size") || strcmp(tok[1], "count") || strcmp(tok[2], "type"))
    return 0;
  int side = -1, first_side_start = -1;
  for (int i = 0; i < n; i++) {
    const char *t = tok[i];
    int k;
    if (!strcmp(t, "size"))
      k = C_SIZE;
    else if (!strcmp(t, "count"))
      k = C_COUNT;
    else if (!strcmp(t, "type"))
      k = C_TYPE;
    else if (!strcmp(t, "redop"))
      k = C_REDOP;
    else if (!strcmp(t, "root"))
      k = C_ROOT;
    else if (!strcmp(t, "time") || !strcmp(t, "cputime"))
      k = C_TIME;
    else if (!strcmp(t, "algbw"))
      k = C_ALGBW;
    else if (!strcmp(t, "busbw"))
      k = C_BUSBW;
    else if (!strcmp(t, "#wrong") || !strcmp(t, "error") || !strcmp(t, "#wrong_count"))
      k = C_WRONG;
    else if (!strcmp(t, "timestamp"))
      k = C_STAMP;
    else
      k = C_SKIP; /* i_min, i_max, i_p99, i_cv% and future statistics */
    if (k == C_TIME) {
      if (++side > 1) return 0;
      if (side == 0)
        first_side_start = i;
      else
        L->side_width = i - first_side_start;
    }
    if (k == C_STAMP) {
      L->stamp = 1;
      break; /* the stamp is last and may span several tokens */
    }
    L->kind[L->ncols] = (unsigned char)k;
    L->side[L->ncols] = (unsigned char)(side < 0 ? 0 : side);
    L->ncols++;
  }
  if (side < 0) return 0;
  if (side == 0) L->side_width = L->ncols - first_side_start;
  return 1;
}

/* The layout of a row when no header was seen: size count type, an optional
 * reduction name, an optional root, then time algbw busbw error for
 * out-of-place and in-place. Old (2.x) tests printed no root column and some
 * (all_gather) no redop; broadcast printed a root but no redop. */
static int layout_infer(char **tok, int n, layout *L) {
  memset(L, 0, sizeof *L);
  if (n < 3) return 0;
  int i = 3;
  L->kind[0] = C_SIZE, L->kind[1] = C_COUNT, L->kind[2] = C_TYPE;
  if (i < n && is_name(tok[i]) && strcmp(tok[i], "N/A")) L->kind[i++] = C_REDOP;
  int rest = n - i;
  if (rest == 9 || rest == 5) L->kind[i++] = C_ROOT, rest--;
  if (rest != 8 && rest != 4) return 0;
  static const unsigned char body[4] = {C_TIME, C_ALGBW, C_BUSBW, C_WRONG};
  for (int s = 0; s < rest / 4; s++)
    for (int k = 0; k < 4; k++, i++) {
      L->kind[i] = body[k];
      L->side[i] = (unsigned char)(rest == 4 ? 1 : s); /* lone side: in-place only */
    }
  L->ncols = i;
  L->side_width = 4;
  return 1;
}

static const char *kind_name(int k) {
  static const char *const names[] = {"size",  "count", "type",   "redop",     "root",     "time",
                                      "algbw", "busbw", "#wrong", "statistic", "timestamp"};
  return names[k];
}

/* ------------------------------------------------------------ parser state */

typedef struct host {
  char name[64];
  int64_t ranks;
} host;

typedef struct parser {
  sc_ctx *ctx;
  sc_nccltests *t;
  const char *name;
  int line;
  layout hdr;
  int have_hdr;
  /* device lines: host index per rank number (-1 = not listed) */
  int32_t *rank_host;
  size_t rank_cap;
  int64_t max_rank;
  host *hosts;
  size_t nhosts, hosts_cap;
  int64_t gpu_rank; /* rank whose device name is in t->gpu */
  size_t rows_cap;  /* t->rows while parsing; trimmed to t->nrows at the end */
} parser;

#define MAX_RANK_INDEX (1 << 22)

/* Physical ranges of the cells (an nccl-tests run prints values far inside
 * them; a value outside is an error naming the range, never a row skipped
 * or a number the model is fed): sizes and element counts up to 2^50
 * (1 PiB, the largest transfer a traced job may hold, docs/SCW.md), times
 * up to an hour per call (3.6e9 us), bandwidths up to 1e15 GB/s (2^50
 * bytes in the 0.01 us the time cells resolve: a one-GPU in-place call that
 * does nothing prints over 1e6), iteration counts below 2^31, threads and
 * GPUs per thread up to the rank limit. */
#define MAX_CELL_BYTES 1125899906842624.0
#define MAX_TIME_US 3.6e9
#define MAX_BW_GBPS 1e15
#define MAX_ITERS 2147483647.0

static int fail(parser *P, const char *fmt, ...) SC_PRINTF(2, 3);
static int fail(parser *P, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = sc__error_atv(P->ctx, SC_EINVAL, P->name, P->line, fmt, ap);
  va_end(ap);
  return rc;
}

/* "WHAT V out of range [LO, HI]", V as printed. */
static int range_fail(parser *P, const char *what, const char *v, double lo, double hi) {
  return fail(P, "%s %s out of range [%.0f, %.0f]", what, v, lo, hi); /* bounds are whole */
}

/* A size or count cell: an integer in [0, MAX_CELL_BYTES]. 0 after failing
 * (*rc: the error): one that is no integer or negative "is not a
 * non-negative integer", one beyond the range (int64's too) is out of it. */
static int count_cell(parser *P, const char *what, const char *v, int64_t *out, int *rc) {
  int64_t x = 0;
  int ok = parse_i64(v, &x);
  if (ok && x >= 0 && (double)x <= MAX_CELL_BYTES) {
    *out = x;
    return 1;
  }
  if (!is_integer(v) || (ok && x < 0) || v[0] == '-')
    *rc = fail(P, "%s \"%s\" is not a non-negative integer", what, v);
  else
    *rc = range_fail(P, what, v, 0, MAX_CELL_BYTES);
  return 0;
}

/* "# Rank R [Group G] Pid P on HOST device D [BUS] NAME...". */
static int device_line(parser *P, char **tok, int n) {
  int i = 1;
  int64_t rank, v;
  if (n < 2 || !parse_i64(tok[1], &rank) || rank < 0) goto bad;
  i = 2;
  if (i + 1 < n && !strcmp(tok[i], "Group")) {
    if (!parse_i64(tok[i + 1], &v)) goto bad;
    i += 2;
  }
  if (i + 1 >= n || strcmp(tok[i], "Pid") || !parse_i64(tok[i + 1], &v)) goto bad;
  i += 2;
  if (i + 1 >= n || strcmp(tok[i], "on")) goto bad;
  const char *hostname = tok[i + 1];
  i += 2;
  if (i + 1 >= n || strcmp(tok[i], "device") || !parse_i64(tok[i + 1], &v)) goto bad;
  i += 2;
  if (i < n && tok[i][0] == '[') i++;
  if (rank >= MAX_RANK_INDEX)
    return fail(P, "rank %lld is beyond %d", (long long)rank, MAX_RANK_INDEX);

  /* host index: most device lines repeat the previous host */
  size_t h = P->nhosts;
  if (P->nhosts && !strncmp(P->hosts[P->nhosts - 1].name, hostname, sizeof P->hosts[0].name - 1))
    h = P->nhosts - 1;
  else
    for (size_t k = 0; k < P->nhosts; k++)
      if (!strncmp(P->hosts[k].name, hostname, sizeof P->hosts[0].name - 1)) {
        h = k;
        break;
      }
  if (h == P->nhosts) {
    int rc = sc__grow(P->ctx, (void **)&P->hosts, sizeof *P->hosts, &P->hosts_cap, P->nhosts + 1);
    if (rc) return rc;
    sc__strlcpy(P->hosts[h].name, hostname, sizeof P->hosts[h].name);
    P->hosts[h].ranks = 0;
    P->nhosts++;
  }
  if ((size_t)rank >= P->rank_cap) {
    size_t old = P->rank_cap;
    int rc = sc__grow(P->ctx, (void **)&P->rank_host, sizeof *P->rank_host, &P->rank_cap,
                      (size_t)rank + 1);
    if (rc) return rc;
    for (size_t k = old; k < P->rank_cap; k++) P->rank_host[k] = -1;
  }
  if (P->rank_host[rank] >= 0) {
    /* a repeated device list (concatenated runs of the same job) is fine */
    if (P->rank_host[rank] != (int32_t)h)
      return fail(P, "rank %lld listed again on another host (%s)", (long long)rank, hostname);
    return SC_OK;
  }
  P->rank_host[rank] = (int32_t)h;
  P->hosts[h].ranks++;
  P->t->ranks++;
  if (rank > P->max_rank) P->max_rank = rank;

  char gpu[sizeof P->t->gpu];
  size_t o = 0;
  gpu[0] = 0;
  for (; i < n; i++) {
    size_t L = strlen(tok[i]);
    if (o && o + 1 < sizeof gpu) gpu[o++] = ' ';
    if (o + L >= sizeof gpu) L = sizeof gpu - 1 - o;
    memcpy(gpu + o, tok[i], L);
    o += L;
    gpu[o] = 0;
  }
  if (P->gpu_rank < 0 || rank < P->gpu_rank) {
    if (P->gpu_rank >= 0 && strcmp(P->t->gpu, gpu)) P->t->mixed_gpus = 1;
    sc__strlcpy(P->t->gpu, gpu, sizeof P->t->gpu);
    P->gpu_rank = rank;
  } else if (strcmp(P->t->gpu, gpu)) {
    P->t->mixed_gpus = 1;
  }
  return SC_OK;
bad:
  return fail(P, "malformed device line (expected \"Rank R [Group G] Pid P on HOST device D "
                 "[BUS] NAME\")");
}

/* "# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: ...": the
 * run's parameters; an integer out of its range (int64's included) is an
 * error, anything else after a key is left alone. */
static int run_line(parser *P, char **tok, int n) {
  for (int i = 0; i + 1 < n; i++) {
    const char *key = tok[i], *v = tok[i + 1];
    int64_t *dst = NULL;
    double hi = MAX_ITERS;
    if (!strcmp(key, "iters:")) {
      /* "warmup iters: 5 iters: 20 agg iters: 1" */
      if (i > 0 && !strcmp(tok[i - 1], "warmup"))
        dst = &P->t->warmup_iters, key = "warmup iters";
      else if (!(i > 0 && !strcmp(tok[i - 1], "agg")))
        dst = &P->t->iters, key = "iters";
    } else if (!strcmp(key, "nThread"))
      dst = &P->t->nthread, hi = MAX_RANK_INDEX;
    else if (!strcmp(key, "nGpus"))
      dst = &P->t->ngpus, hi = MAX_RANK_INDEX;
    else if (!strcmp(key, "minBytes"))
      dst = &P->t->min_bytes, hi = MAX_CELL_BYTES;
    else if (!strcmp(key, "maxBytes"))
      dst = &P->t->max_bytes, hi = MAX_CELL_BYTES;
    int64_t x;
    if (!dst || !is_integer(v)) continue;
    if (!parse_i64(v, &x) || x < 0 || (double)x > hi) return range_fail(P, key, v, 0, hi);
    *dst = x;
  }
  return SC_OK;
}

static int comment_line(parser *P, char *text) {
  char *tok[MAX_TOKENS];
  int more, n = tokenize(text, tok, MAX_TOKENS, &more);
  if (!n) return SC_OK;
  if (!strcmp(tok[0], "Rank")) return device_line(P, tok, n);
  if (!strcmp(tok[0], "nThread")) return run_line(P, tok, n);
  if (n >= 4 && !strcmp(tok[0], "Collective") && !strcmp(tok[1], "test") &&
      !strcmp(tok[2], "starting:")) {
    int op = sc_comm_op_find(tok[3]);
    if (op >= 0) P->t->op = op;
    return SC_OK;
  }
  if (n >= 4 && !strcmp(tok[0], "Avg") && !strcmp(tok[1], "bus") && !strcmp(tok[2], "bandwidth")) {
    double v;
    for (int i = 3; i < n; i++)
      if (parse_cell(tok[i], &v)) {
        P->t->avg_busbw_gbps = v;
        break;
      }
    return SC_OK;
  }
  layout L;
  if (!more && layout_from_header(tok, n, &L)) {
    P->hdr = L;
    P->have_hdr = 1;
  }
  return SC_OK;
}

static int data_line(parser *P, char **tok, int n, int more) {
  if (more) return fail(P, "more than %d columns", MAX_TOKENS);
  const layout *L = &P->hdr;
  layout guessed;
  int skip_side0 = 0;
  if (P->have_hdr) {
    if (n == L->ncols - L->side_width) {
      skip_side0 = 1; /* out-of-place printed blank (trace replay): in-place only */
    } else if (n != L->ncols && !(L->stamp && n > L->ncols)) {
      return fail(P, "data row has %d columns, the table header above has %d", n, L->ncols);
    }
  } else {
    if (!layout_infer(tok, n, &guessed))
      return fail(P,
                  "data row has %d columns; expected size count type [redop] [root] and "
                  "time algbw busbw #wrong for out-of-place and in-place",
                  n);
    L = &guessed;
  }

  int rc = sc__grow(P->ctx, (void **)&P->t->rows, sizeof *P->t->rows, &P->rows_cap, P->t->nrows + 1);
  if (rc) return rc;
  sc_nccltests_row *r = &P->t->rows[P->t->nrows];
  memset(r, 0, sizeof *r);
  r->root = -1;
  r->line = P->line;
  for (int s = 0; s < 2; s++)
    r->time_us[s] = r->algbw_gbps[s] = r->busbw_gbps[s] = r->wrong[s] = NAN;

  for (int c = 0, t = 0; c < L->ncols && t < n; c++) {
    int k = L->kind[c], side = L->side[c];
    if (skip_side0 && side == 0 && k >= C_TIME && k <= C_SKIP) continue;
    const char *v = tok[t++];
    double *cell = NULL;
    switch (k) {
    case C_SIZE:
      if (!count_cell(P, "size", v, &r->bytes, &rc)) return rc;
      break;
    case C_COUNT:
      if (!count_cell(P, "count", v, &r->count, &rc)) return rc;
      break;
    case C_TYPE:
      if (!is_name(v) || strlen(v) >= sizeof r->type)
        return fail(P, "type \"%s\" is not a data type name", v);
      sc__strlcpy(r->type, v, sizeof r->type);
      break;
    case C_REDOP:
      if (!is_name(v) || strlen(v) >= sizeof r->redop)
        return fail(P, "redop \"%s\" is not a reduction name", v);
      sc__strlcpy(r->redop, v, sizeof r->redop);
      break;
    case C_ROOT:
      if (is_integer(v) && v[0] != '-' && (!parse_i64(v, &r->root) || r->root >= MAX_RANK_INDEX))
        return range_fail(P, "root", v, -1, MAX_RANK_INDEX - 1);
      if (!parse_i64(v, &r->root) || r->root < -1)
        return fail(P, "root \"%s\" is not a rank or -1", v);
      break;
    case C_TIME:
      cell = &r->time_us[side];
      break;
    case C_ALGBW:
      cell = &r->algbw_gbps[side];
      break;
    case C_BUSBW:
      cell = &r->busbw_gbps[side];
      break;
    case C_WRONG:
      cell = &r->wrong[side];
      break;
    case C_SKIP: {
      double ignored;
      if (!parse_cell(v, &ignored)) return fail(P, "%s \"%s\" is not a number", kind_name(k), v);
      break;
    }
    default:
      break;
    }
    if (!cell) continue;
    if (!parse_cell(v, cell))
      return fail(P, "%s%s \"%s\" is not a number", side ? "in-place " : "out-of-place ",
                  kind_name(k), v);
    if (k == C_TIME && !isnan(*cell) && *cell < 0)
      return fail(P, "%stime %s is negative", side ? "in-place " : "out-of-place ", v);
    double hi = k == C_TIME ? MAX_TIME_US : k == C_WRONG ? MAX_CELL_BYTES : MAX_BW_GBPS;
    if (!isnan(*cell) && !(*cell >= 0 && *cell <= hi)) {
      char what[40];
      snprintf(what, sizeof what, "%s%s", side ? "in-place " : "out-of-place ", kind_name(k));
      return range_fail(P, what, v, 0, hi);
    }
  }
  if (isnan(r->time_us[0]) && isnan(r->time_us[1]))
    return fail(P, "no time in this row (out-of-place and in-place are both N/A)");
  P->t->nrows++;
  return SC_OK;
}

static int parse_line(parser *P, const char *s, size_t n) {
  char buf[LINE_MAX_BYTES];
  long len = strip_line(s, n, buf, sizeof buf);
  char *p = buf;
  if (len < 0) {
    /* overlong comments (a pasted banner) are harmless; data rows never are */
    size_t k = 0;
    while (k < n && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k < n && s[k] == '#') return SC_OK;
    return fail(P, "line longer than %d bytes", LINE_MAX_BYTES);
  }
  while (*p == ' ') p++;
  if (!*p) return SC_OK;
  if (*p == '#') return comment_line(P, p + 1);
  char *tok[MAX_TOKENS];
  int more, nt = tokenize(p, tok, MAX_TOKENS, &more);
  /* NCCL INFO logs, warnings, banners; a row whose size overflows int64 is
   * still a row (data_line refuses it) */
  if (!is_integer(tok[0])) return SC_OK;
  return data_line(P, tok, nt, more);
}

void sc_nccltests_free(sc_ctx *ctx, sc_nccltests *t) {
  if (!t) return;
  sc__free(ctx, t->rows, t->nrows * sizeof *t->rows);
  t->rows = NULL;
  t->nrows = 0;
}

static void init_result(sc_nccltests *t, const char *name) {
  memset(t, 0, sizeof *t);
  sc__strlcpy(t->origin, name, sizeof t->origin);
  t->op = -1;
  t->avg_busbw_gbps = NAN;
}

int sc_nccltests_parse(sc_ctx *ctx, const char *name, const char *text, size_t len, sc_nccltests *out) {
  init_result(out, name ? name : "<nccl-tests>");
  parser P;
  memset(&P, 0, sizeof P);
  P.ctx = ctx;
  P.t = out;
  P.name = out->origin;
  P.gpu_rank = -1;
  P.max_rank = -1;
  int rc = SC_OK;
  size_t i = 0;
  while (i < len && !rc) {
    size_t j = i;
    while (j < len && text[j] != '\n') j++;
    P.line++;
    if (memchr(text + i, 0, j - i))
      rc = fail(&P, "NUL byte in text");
    else
      rc = parse_line(&P, text + i, j - i);
    i = j + 1;
  }
  if (!rc && out->nrows == 0)
    rc = sc__error(ctx, SC_EINVAL, "%s: no nccl-tests data rows found", out->origin);
  if (!rc) {
    if (out->op < 0) out->op = op_from_name(out->origin);
    out->nodes = (int64_t)P.nhosts;
    for (size_t h = 0; h < P.nhosts; h++)
      if (P.hosts[h].ranks > out->per_node) out->per_node = P.hosts[h].ranks;
    if (out->ranks && P.max_rank + 1 != out->ranks)
      rc = sc__error(ctx, SC_EINVAL, "%s: device lines list %lld ranks but number them up to %lld",
                     out->origin, (long long)out->ranks, (long long)P.max_rank);
  }
  sc__free(ctx, P.rank_host, P.rank_cap * sizeof *P.rank_host);
  sc__free(ctx, P.hosts, P.hosts_cap * sizeof *P.hosts);
  if (!rc && P.rows_cap > out->nrows) { /* exactly nrows, so that free needs no capacity */
    void *q = sc__realloc(ctx, out->rows, P.rows_cap * sizeof *out->rows,
                          out->nrows * sizeof *out->rows);
    if (q) out->rows = q;
    else rc = SC_ENOMEM;
    if (q) P.rows_cap = out->nrows;
  }
  if (rc) {
    sc__free(ctx, out->rows, P.rows_cap * sizeof *out->rows);
    init_result(out, name ? name : "<nccl-tests>");
  }
  return rc;
}

int sc_nccltests_load(sc_ctx *ctx, const char *path, sc_nccltests *out) {
  init_result(out, path);
  char *buf;
  size_t n, cap;
  /* nccl-tests outputs are a few KiB (one line per size); 16 MiB is far
   * beyond any, and keeps a wrong path from filling memory. */
  int rc = sc__read_file(ctx, path, NULL, NULL, (size_t)16 << 20, &buf, &n, &cap);
  if (rc) return rc;
  rc = sc_nccltests_parse(ctx, path, buf, n, out);
  sc__free(ctx, buf, cap);
  return rc;
}

double sc_nccltests_row_time_us(const sc_nccltests_row *r) {
  if (isnan(r->time_us[0])) return r->time_us[1];
  if (isnan(r->time_us[1])) return r->time_us[0];
  return fmin(r->time_us[0], r->time_us[1]);
}

static size_t first_sized_row(const sc_nccltests *t);

int sc_nccltests_row_is_warmup(const sc_nccltests *t, size_t i) {
  /* zero-byte rows (nccl-tests -b 0 prints a few) time an empty call */
  size_t first = first_sized_row(t);
  if (i != first || first >= t->nrows) return 0;
  size_t next = first + 1;
  while (next < t->nrows && !(sc_nccltests_row_time_us(&t->rows[next]) > 0)) next++;
  if (next >= t->nrows || t->rows[next].bytes <= t->rows[first].bytes) return 0;
  return sc_nccltests_row_time_us(&t->rows[first]) > 2.0 * sc_nccltests_row_time_us(&t->rows[next]);
}

/* The first row with a size and a measured time; t->nrows if none. */
static size_t first_sized_row(const sc_nccltests *t) {
  size_t i = 0;
  while (i < t->nrows && !(t->rows[i].bytes > 0 && sc_nccltests_row_time_us(&t->rows[i]) > 0)) i++;
  return i;
}

int sc_nccltests_row_is_first_call(const sc_nccltests *t, size_t i) {
  size_t first = first_sized_row(t);
  if (i != first || first >= t->nrows || !(t->rows[first].time_us[0] > 0)) return 0;
  size_t next = first + 1;
  while (next < t->nrows && !(sc_nccltests_row_time_us(&t->rows[next]) > 0)) next++;
  if (next >= t->nrows || t->rows[next].bytes <= t->rows[first].bytes) return 0;
  return t->rows[first].time_us[0] > 2.0 * sc_nccltests_row_time_us(&t->rows[next]);
}

int64_t sc_nccltests_infer_ranks(const sc_nccltests *t) {
  int op = t->op;
  if (op != SC_COMM_ALL_REDUCE && op != SC_COMM_ALL_GATHER && op != SC_COMM_REDUCE_SCATTER &&
      op != SC_COMM_ALL_TO_ALL)
    return 0;
  /* estimate from the row with the most significant digits, check the rest */
  double best_alg = 0, ratio = 0;
  for (size_t i = 0; i < t->nrows; i++)
    for (int s = 0; s < 2; s++) {
      double a = t->rows[i].algbw_gbps[s], b = t->rows[i].busbw_gbps[s];
      if (a > best_alg && b > 0) best_alg = a, ratio = b / a;
    }
  if (best_alg < 1.0) return 0;
  double n = op == SC_COMM_ALL_REDUCE ? 2.0 / (2.0 - ratio) : 1.0 / (1.0 - ratio);
  if (!(n >= 1.5 && n < 1e7)) return 0;
  int64_t ranks = (int64_t)llround(n);
  double f = sc_comm_bus_factor(op, ranks);
  for (size_t i = 0; i < t->nrows; i++)
    for (int s = 0; s < 2; s++) {
      double a = t->rows[i].algbw_gbps[s], b = t->rows[i].busbw_gbps[s];
      if (!(a >= 1.0 && b > 0)) continue;
      /* both cells are printed to 0.01: allow that rounding, three times over */
      double tol = 3.0 * (0.005 / a + 0.005 / b) * f + 1e-9;
      if (fabs(b / a - f) > tol) return 0;
    }
  return ranks;
}
