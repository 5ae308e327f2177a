/*
 * sweep.c: configuration search (stepcast/sweep.h). Enumerates the candidate
 * layouts of a base config in a fixed order, prunes them by divisibility,
 * config validation and the memory model (memory.c), simulates the survivors
 * with the folded engine through the process-parallel runner (par_int.h),
 * appends each result to a CSV file in enumeration order (crash-safe,
 * resumable) and ranks them. Every process enumerates identically, so only
 * positions in the candidate list travel between processes.
 */
#include "stepcast/sweep.h"

#include "input/config_int.h"
#include "analysis/simulate_int.h"
#include "analysis/par_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ names */

const char *sc_sweep_reason_key(int r) {
  static const char *const keys[] = {
#define SC_X_KEY(id, key, text) key,
      SC_SWEEP_REASON_LIST(SC_X_KEY)
#undef SC_X_KEY
  };
  return r >= 0 && r < SC_SWEEP_REASON_COUNT ? keys[r] : "?";
}

const char *sc_sweep_reason_text(int r) {
  static const char *const texts[] = {
#define SC_X_TEXT(id, key, text) text,
      SC_SWEEP_REASON_LIST(SC_X_TEXT)
#undef SC_X_TEXT
  };
  return r >= 0 && r < SC_SWEEP_REASON_COUNT ? texts[r] : "?";
}

static int recompute_of(const char *s) { return sc_enum_parse(SC_ENUM_RECOMPUTE, s); }

const char *sc_sweep_row_key(const sc_sweep_row *r, char *buf, size_t n) {
  snprintf(buf, n, "tp%" PRId64 "-pp%" PRId64 "-vpp%" PRId64 "-mb%" PRId64 "-sp%d-%s-do%d", r->tp,
           r->pp, r->vpp, r->micro_batch, r->sequence_parallel,
           sc_enum_name(SC_ENUM_RECOMPUTE, r->recompute), r->distributed_optimizer);
  return buf;
}

/* ------------------------------------------------------------ candidates */

/* A configuration that passed pruning; `index` is its leaf position in the
 * enumeration (pruned leaves included), the stable tie-break key. */
typedef struct cand {
  int64_t index;
  int64_t tp, pp, dp, vpp, mb;
  uint8_t sp, rc, dopt;
} cand;

typedef struct sweep {
  sc_ctx *ctx;
  const sc_sweep_opts *opts;
  sc_config probe;       /* base resolved with neutral knobs */
  int64_t gpus;
  uint64_t fingerprint;  /* of the probe: rows of another base are refused */
  cand *todo;
  size_t ntodo, cap;
  int64_t leaves;
  int64_t excluded[SC_SWEEP_REASON_COUNT];
  double capacity_gib;
  /* Process 0 only. */
  sc_sweep_row *rows;    /* per todo position */
  uint8_t *state;        /* per todo position: 0 pending, 1 done ok, 2 failed, 3 resumed */
  size_t next_write;     /* first todo position not yet settled in the file */
  int64_t done, resumed, written;
  int fd;                /* results file or -1 */
  double last_sync;      /* monotonic seconds of the last fdatasync */
} sweep;

enum { ST_PENDING = 0, ST_OK, ST_FAILED, ST_RESUMED };

/* Ascending divisors of n (n >= 1) into d (at most max). */
static int divisors(int64_t n, int64_t *d, int max) {
  int k = 0;
  for (int64_t i = 1; i <= n && k < max; i++)
    if (n % i == 0) d[k++] = i;
  return k;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The values of one dimension: the user's list (first occurrence of each
 * value, in the given order) or the default. */
static int dim_values(const sc_sweep_dim *dim, const int64_t *def, int ndef, int64_t *out) {
  const int64_t *src = dim->n > 0 ? dim->v : def;
  int n = dim->n > 0 ? dim->n : ndef, k = 0;
  if (n > SC_SWEEP_DIM_MAX) n = SC_SWEEP_DIM_MAX;
  for (int i = 0; i < n; i++) {
    int seen = 0;
    for (int j = 0; j < k && !seen; j++) seen = out[j] == src[i];
    if (!seen) out[k++] = src[i];
  }
  return k;
}

/* Applies a candidate's knobs to a copy of the probe. */
static void apply(const sweep *S, const cand *c, sc_config *cfg) {
  *cfg = S->probe;
  sc_parallel_cfg *p = &cfg->parallel;
  p->tp = c->tp;
  p->pp = c->pp;
  p->dp = c->dp;
  p->vpp = c->vpp;
  p->schedule = c->vpp > 1 ? SC_SCHED_INTERLEAVED
                           : (S->probe.parallel.schedule == SC_SCHED_GPIPE ? SC_SCHED_GPIPE
                                                                            : SC_SCHED_1F1B);
  p->sequence_parallel = c->sp;
  p->distributed_optimizer = c->dopt;
  cfg->training.micro_batch = c->mb;
  cfg->training.recompute = (sc_recompute)c->rc;
}

/* First reason a candidate cannot run, or -1 when it is worth simulating.
 * The cheap arithmetic checks come first so the counts name the real cause;
 * sc_config_resolve then catches anything else; memory last. */
static int prune(sweep *S, const cand *c) {
  const sc_model_cfg *m = &S->probe.model;
  int64_t B = S->probe.training.global_batch;
  if (m->heads % c->tp || m->ffn_hidden % c->tp || (m->kv_heads % c->tp && c->tp % m->kv_heads))
    return SC_SWEEP_TP_SHAPE;
  if (m->layers % (c->pp * c->vpp)) return SC_SWEEP_PP_LAYERS;
  if (B % (c->mb * c->dp)) return SC_SWEEP_BATCH;
  if (c->vpp > 1 && (B / (c->mb * c->dp)) % c->pp) return SC_SWEEP_INTERLEAVE;
  if (c->sp && m->seq_len % c->tp) return SC_SWEEP_SP_SEQ;
  sc_config cfg;
  apply(S, c, &cfg);
  sc_plan plan;
  if (c->vpp > 64 || sc_config_resolve(S->ctx, &cfg) || sc__plan_init(S->ctx, &cfg, &plan))
    return SC_SWEEP_INVALID;
  if (plan.memory_peak_bytes > plan.memory_capacity_bytes) return SC_SWEEP_MEMORY;
  return -1;
}

static int add_leaf(sweep *S, cand *c) {
  c->index = S->leaves++;
  int r = prune(S, c);
  if (r >= 0) {
    S->excluded[r]++;
    return SC_OK;
  }
  if (sc__grow(S->ctx, (void **)&S->todo, sizeof *S->todo, &S->cap, S->ntodo + 1))
    return SC_ENOMEM;
  S->todo[S->ntodo++] = *c;
  return SC_OK;
}

/* Enumerates every leaf in the documented order: tp, pp, vpp, micro-batch,
 * sequence parallel, recompute, distributed optimizer (outermost first),
 * each dimension in the order of its value list. */
static int enumerate(sweep *S) {
  const sc_sweep_opts *o = S->opts;
  int64_t N = S->gpus, L = S->probe.model.layers;
  int64_t d[SC_SWEEP_DIM_MAX], tps[SC_SWEEP_DIM_MAX], pps[SC_SWEEP_DIM_MAX];
  int64_t vpps[SC_SWEEP_DIM_MAX], mbs[SC_SWEEP_DIM_MAX], sps[SC_SWEEP_DIM_MAX];
  int64_t rcs[SC_SWEEP_DIM_MAX], dos[SC_SWEEP_DIM_MAX];
  static const int64_t def_mb[] = {1, 2, 4, 8}, def_sp[] = {0, 1}, def_do[] = {0, 1};
  static const int64_t def_rc[] = {SC_RECOMPUTE_NONE, SC_RECOMPUTE_SELECTIVE, SC_RECOMPUTE_FULL};
  int nd = divisors(gcd64(S->probe.cluster.gpus_per_node, N), d, SC_SWEEP_DIM_MAX);
  int ntp = dim_values(&o->tp, d, nd, tps);
  int nmb = dim_values(&o->micro_batch, def_mb, 4, mbs);
  int nrc = dim_values(&o->recompute, def_rc, 3, rcs);
  for (int i = 0; i < ntp; i++) {
    int64_t tp = tps[i];
    if (tp < 1 || N % tp) {
      S->leaves++;
      S->excluded[SC_SWEEP_INVALID]++;
      continue;
    }
    int64_t dpp[SC_SWEEP_DIM_MAX];
    int ndpp = divisors(N / tp, dpp, SC_SWEEP_DIM_MAX);
    int npp = dim_values(&o->pp, dpp, ndpp, pps);
    int nsp = tp > 1 ? dim_values(&o->sequence_parallel, def_sp, 2, sps) : 1;
    if (tp == 1) sps[0] = 0;
    for (int j = 0; j < npp; j++) {
      int64_t pp = pps[j];
      if (pp < 1 || (N / tp) % pp) {
        S->leaves++;
        S->excluded[SC_SWEEP_INVALID]++;
        continue;
      }
      int64_t dp = N / (tp * pp);
      int64_t dv[SC_SWEEP_DIM_MAX];
      int ndv = 1;
      dv[0] = 1;
      if (L % pp == 0 && pp > 1) ndv = divisors(L / pp, dv, SC_SWEEP_DIM_MAX);
      int nv = pp > 1 ? dim_values(&o->vpp, dv, ndv, vpps) : 1;
      if (pp == 1) vpps[0] = 1; /* interleaving needs a pipeline */
      int ndo = dp > 1 ? dim_values(&o->distributed_optimizer, def_do, 2, dos) : 1;
      if (dp == 1) dos[0] = 0;
      for (int a = 0; a < nv; a++)
        for (int b = 0; b < nmb; b++)
          for (int s = 0; s < nsp; s++)
            for (int r = 0; r < nrc; r++)
              for (int q = 0; q < ndo; q++) {
                cand c = {0, tp, pp, dp, vpps[a], mbs[b], (uint8_t)(sps[s] != 0),
                          (uint8_t)rcs[r], (uint8_t)(dos[q] != 0)};
                if (c.vpp < 1 || c.mb < 1 || rcs[r] < 0 || rcs[r] > 2) {
                  S->leaves++;
                  S->excluded[SC_SWEEP_INVALID]++;
                  continue;
                }
                int rc = add_leaf(S, &c);
                if (rc) return rc;
              }
    }
  }
  return SC_OK;
}

/* ------------------------------------------------------------ fingerprint */

typedef struct hasher {
  uint64_t h;
} hasher;

static int hash_sink(void *ud, const char *buf, size_t len) {
  hasher *H = ud;
  for (size_t i = 0; i < len; i++) {
    H->h ^= (unsigned char)buf[i];
    H->h *= UINT64_C(1099511628211); /* FNV-1a 64 */
  }
  return 0;
}

/* ------------------------------------------------------------ CSV rows */

#define CSV_COLS (9 + 4 + SC_CAT_COUNT + 2)

static int csv_header(char *buf, size_t n) {
  size_t len = 0;
  int k = snprintf(buf, n,
                   "key,tp,pp,dp,vpp,micro_batch,sequence_parallel,recompute,"
                   "distributed_optimizer,step_time_s,tokens_per_s,tflops_per_gpu,mfu");
  if (k < 0 || (size_t)k >= n) return -1;
  len = (size_t)k;
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    k = snprintf(buf + len, n - len, ",%s_s", sc_category_key(c));
    if (k < 0 || (size_t)k >= n - len) return -1;
    len += (size_t)k;
  }
  k = snprintf(buf + len, n - len, ",memory_gib,base\n");
  if (k < 0 || (size_t)k >= n - len) return -1;
  return (int)(len + (size_t)k);
}

/* One row as CSV text ending in '\n'; returns its length or -1. The
 * precision is what the file keeps: step time to the nanosecond (the
 * engine's resolution, so the ranking is exact), the rest rounded. */
static int csv_row(const sc_sweep_row *r, uint64_t fp, char *buf, size_t n) {
  char key[128];
  size_t len = 0;
  int k = snprintf(buf, n,
                   "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                   ",%d,%s,%d,%.9f,%.1f,%.3f,%.6f",
                   sc_sweep_row_key(r, key, sizeof key), r->tp, r->pp, r->dp, r->vpp,
                   r->micro_batch, r->sequence_parallel, sc_enum_name(SC_ENUM_RECOMPUTE, r->recompute),
                   r->distributed_optimizer, r->step_time_s, r->tokens_per_s, r->tflops_per_gpu,
                   r->mfu);
  if (k < 0 || (size_t)k >= n) return -1;
  len = (size_t)k;
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    k = snprintf(buf + len, n - len, ",%.6f", r->breakdown_s[c]);
    if (k < 0 || (size_t)k >= n - len) return -1;
    len += (size_t)k;
  }
  k = snprintf(buf + len, n - len, ",%.3f,%016" PRIx64 "\n", r->memory_gib, fp);
  if (k < 0 || (size_t)k >= n - len) return -1;
  return (int)(len + (size_t)k);
}

static int parse_i64(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || end == s || *end) return -1;
  *v = x;
  return 0;
}

static int parse_f64(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return (errno || end == s || *end) ? -1 : 0;
}

/* Parses one CSV line (without '\n', modified in place) into r and its base
 * fingerprint. Returns 0 or -1 when malformed. */
static int csv_parse(char *line, sc_sweep_row *r, uint64_t *fp) {
  char *f[CSV_COLS + 1];
  int nf = 0;
  f[nf++] = line;
  for (char *p = line; *p; p++)
    if (*p == ',') {
      *p = 0;
      if (nf == CSV_COLS) return -1;
      f[nf++] = p + 1;
    }
  if (nf != CSV_COLS) return -1;
  memset(r, 0, sizeof *r);
  int64_t sp, dopt;
  int rc = recompute_of(f[7]);
  if (parse_i64(f[1], &r->tp) || parse_i64(f[2], &r->pp) || parse_i64(f[3], &r->dp) ||
      parse_i64(f[4], &r->vpp) || parse_i64(f[5], &r->micro_batch) || parse_i64(f[6], &sp) ||
      rc < 0 || parse_i64(f[8], &dopt) || parse_f64(f[9], &r->step_time_s) ||
      parse_f64(f[10], &r->tokens_per_s) || parse_f64(f[11], &r->tflops_per_gpu) ||
      parse_f64(f[12], &r->mfu))
    return -1;
  r->sequence_parallel = sp != 0;
  r->distributed_optimizer = dopt != 0;
  r->recompute = (sc_recompute)rc;
  for (int c = 0; c < SC_CAT_COUNT; c++)
    if (parse_f64(f[13 + c], &r->breakdown_s[c])) return -1;
  if (parse_f64(f[13 + SC_CAT_COUNT], &r->memory_gib)) return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(f[14 + SC_CAT_COUNT], &end, 16);
  if (errno || *end || end == f[14 + SC_CAT_COUNT]) return -1;
  *fp = x;
  char key[128];
  if (strcmp(f[0], sc_sweep_row_key(r, key, sizeof key))) return -1;
  return 0;
}

/* Rounds a fresh row to what the file keeps, so every path (fresh,
 * resumed, other process) ranks and prints the same numbers. */
static int normalise(sc_sweep_row *r, uint64_t fp) {
  char line[1024];
  int len = csv_row(r, fp, line, sizeof line);
  if (len < 1) return -1;
  line[len - 1] = 0;
  int64_t index = r->index;
  uint64_t back;
  if (csv_parse(line, r, &back)) return -1;
  r->index = index;
  return 0;
}

/* ------------------------------------------------------------ results file */

/* Seconds between fdatasync calls on the results file. A row is handed to
 * the kernel with one write() as soon as it is settled, so killing the
 * process never loses or tears it; fdatasync only protects against an OS
 * crash or power loss, which then costs at most this much of recent rows
 * (and possibly a torn last line that resume drops). Syncing every row cost
 * ~10 ms each on the development disk, as much as a simulation. */
#define SYNC_INTERVAL_S 0.25

static double monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int sync_results(sweep *S, int force) {
  double now = monotonic_s();
  if (!force && now - S->last_sync < SYNC_INTERVAL_S) return SC_OK;
  S->last_sync = now;
  if (fdatasync(S->fd))
    return sc__error(S->ctx, SC_EWRITE, "%s: fdatasync failed: %s", S->opts->out_path,
                     strerror(errno));
  return SC_OK;
}

/* Appends all of buf with one write() on the O_APPEND descriptor: a row is
 * never interleaved with another writer's and is either complete or, after
 * a crash, a torn tail that resume drops. */
static int append_row(sweep *S, const char *buf, size_t len, int force_sync) {
  ssize_t k = write(S->fd, buf, len);
  if (k < 0 || (size_t)k != len)
    return sc__error(S->ctx, SC_EWRITE, "%s: write failed: %s", S->opts->out_path,
                     k < 0 ? strerror(errno) : "short write");
  return sync_results(S, force_sync);
}

static int cmp_tuple(const cand *a, const cand *b) {
#define CMP(f)                         \
  if (a->f != b->f) return a->f < b->f ? -1 : 1;
  CMP(tp) CMP(pp) CMP(vpp) CMP(mb) CMP(sp) CMP(rc) CMP(dopt)
#undef CMP
  return 0;
}

static int cmp_cand(const void *x, const void *y) { return cmp_tuple(x, y); }

/* Position in todo of the row's configuration, or -1. sorted: the todo
 * entries sorted by tuple, each with its todo position in `index`. */
static int64_t find_row(const cand *sorted, size_t n, const sc_sweep_row *r) {
  cand key = {0, r->tp, r->pp, r->dp, r->vpp, r->micro_batch, (uint8_t)r->sequence_parallel,
              (uint8_t)r->recompute, (uint8_t)r->distributed_optimizer};
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cmp_tuple(&sorted[mid], &key);
    if (c == 0) return sorted[mid].dp == r->dp ? sorted[mid].index : -1;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* Opens the results file on process 0. Resume: drops a torn last line,
 * checks the header, reads every row back (marking its configuration done);
 * otherwise refuses a non-empty file. Writes the header into an empty file. */
static int open_results(sweep *S) {
  const char *path = S->opts->out_path;
  char header[512];
  int hlen = csv_header(header, sizeof header);
  if (hlen < 0) return sc__error(S->ctx, SC_EINTERNAL, "results header too long");
  S->fd = open(path, O_RDWR | O_APPEND | O_CREAT, 0644);
  if (S->fd < 0) return sc__error(S->ctx, SC_EWRITE, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(S->fd, &st)) return sc__error(S->ctx, SC_EWRITE, "%s: %s", path, strerror(errno));
  size_t size = (size_t)st.st_size;
  if (size > 0 && !S->opts->resume)
    return sc__error(S->ctx, SC_EINVAL,
                     "%s: already holds results; use --resume to continue it or remove it", path);
  if (size == 0) return append_row(S, header, (size_t)hlen, 1);

  char *text = sc__malloc(S->ctx, size + 1);
  if (!text) return SC_ENOMEM;
  size_t got = 0;
  while (got < size) {
    ssize_t k = pread(S->fd, text + got, size - got, (off_t)got);
    if (k <= 0) {
      sc__free(S->ctx, text, size + 1);
      return sc__error(S->ctx, SC_EREAD, "%s: read failed", path);
    }
    got += (size_t)k;
  }
  text[size] = 0;
  /* A crash can leave a torn last row: cut the file after the last '\n'. */
  size_t keep = size;
  while (keep > 0 && text[keep - 1] != '\n') keep--;
  int rc = SC_OK;
  if (keep < size && ftruncate(S->fd, (off_t)keep))
    rc = sc__error(S->ctx, SC_EWRITE, "%s: cannot drop the torn last line: %s", path,
                   strerror(errno));
  text[keep] = 0;
  if (!rc && keep == 0) rc = append_row(S, header, (size_t)hlen, 1);
  else if (!rc && (keep < (size_t)hlen || memcmp(text, header, (size_t)hlen)))
    rc = sc__error(S->ctx, SC_EINVAL, "%s: not a stepcast sweep results file (header differs)",
                   path);
  cand *sorted = NULL;
  size_t nsorted = S->ntodo ? S->ntodo : 1;
  if (!rc && keep > (size_t)hlen) {
    sorted = sc__malloc(S->ctx, nsorted * sizeof *sorted);
    if (!sorted) rc = SC_ENOMEM;
    else {
      for (size_t i = 0; i < S->ntodo; i++) {
        sorted[i] = S->todo[i];
        sorted[i].index = (int64_t)i;
      }
      qsort(sorted, S->ntodo, sizeof *sorted, cmp_cand);
    }
  }
  int lineno = 1;
  for (char *line = text + hlen; !rc && line < text + keep; lineno++) {
    char *nl = strchr(line, '\n');
    *nl = 0;
    sc_sweep_row r;
    uint64_t fp;
    if (csv_parse(line, &r, &fp))
      rc = sc__error(S->ctx, SC_EINVAL, "%s:%d: malformed results row", path, lineno + 1);
    else if (fp != S->fingerprint)
      rc = sc__error(S->ctx, SC_EINVAL,
                     "%s:%d: row of a different base config or GPU count; use another file",
                     path, lineno + 1);
    else {
      int64_t pos = find_row(sorted, S->ntodo, &r);
      if (pos >= 0 && S->state[pos] == ST_PENDING) {
        r.index = S->todo[pos].index;
        S->rows[pos] = r;
        S->state[pos] = ST_RESUMED;
        S->resumed++;
        S->done++;
      }
    }
    line = nl + 1;
  }
  if (sorted) sc__free(S->ctx, sorted, nsorted * sizeof *sorted);
  sc__free(S->ctx, text, size + 1);
  return rc;
}

/* ------------------------------------------------------------ work */

static int work(void *ud, int64_t pos, void *rec) {
  sweep *S = ud;
  if (pos < 0 || (size_t)pos >= S->ntodo) return SC_EINVAL; /* processes disagree */
  const cand *c = &S->todo[pos];
  sc_sweep_row *r = rec;
  sc_config cfg;
  apply(S, c, &cfg);
  sc_plan plan;
  sc_result res;
  int rc = sc_config_resolve(S->ctx, &cfg);
  if (!rc) rc = sc__plan_init(S->ctx, &cfg, &plan);
  if (!rc) rc = sc__plan_simulate(S->ctx, &plan, NULL, NULL, &res);
  if (rc) return rc;
  r->index = c->index;
  r->tp = c->tp;
  r->pp = c->pp;
  r->dp = c->dp;
  r->vpp = c->vpp;
  r->micro_batch = c->mb;
  r->sequence_parallel = c->sp;
  r->recompute = (sc_recompute)c->rc;
  r->distributed_optimizer = c->dopt;
  r->step_time_s = res.step_time_s;
  r->tokens_per_s = res.tokens_per_s;
  r->tflops_per_gpu = res.tflops_per_gpu;
  r->mfu = res.mfu;
  memcpy(r->breakdown_s, res.breakdown_s, sizeof r->breakdown_s);
  r->memory_gib = res.memory_gib;
  return SC_OK;
}

static int deliver(void *ud, int64_t pos, int status, const void *rec) {
  sweep *S = ud;
  if (pos < 0 || (size_t)pos >= S->ntodo)
    return sc__error(S->ctx, SC_EINVAL, "sweep processes enumerated different candidates");
  if (status == SC_ENOMEM) return sc__error(S->ctx, SC_ENOMEM, "out of memory in a simulation");
  if (status) {
    S->state[pos] = ST_FAILED;
  } else {
    S->rows[pos] = *(const sc_sweep_row *)rec;
    if (normalise(&S->rows[pos], S->fingerprint))
      return sc__error(S->ctx, SC_EINTERNAL, "cannot format a results row");
    S->state[pos] = ST_OK;
  }
  S->done++;
  /* Settle the file in enumeration order: rows finished out of order wait
   * until every earlier position is done. */
  while (S->next_write < S->ntodo && S->state[S->next_write] != ST_PENDING) {
    size_t p = S->next_write++;
    if (S->state[p] != ST_OK || S->fd < 0) continue;
    char line[1024];
    int len = csv_row(&S->rows[p], S->fingerprint, line, sizeof line);
    if (len < 0) return sc__error(S->ctx, SC_EINTERNAL, "cannot format a results row");
    int stop = S->opts->stop_after > 0 && S->written + 1 >= S->opts->stop_after;
    int rc = append_row(S, line, (size_t)len, stop);
    if (rc) return rc;
    S->written++;
    if (stop)
      return sc__error(S->ctx, SC_ESTOPPED, "stopped after %" PRId64 " new rows (stop_after)",
                       S->written);
  }
  if (S->opts->progress) S->opts->progress(S->opts->progress_ud, S->done, (int64_t)S->ntodo);
  return SC_OK;
}

/* ------------------------------------------------------------ driver */

/* Sets the probe: the base with the GPU count applied and neutral knobs, so
 * that resolving it checks model, cluster and precision only. */
static int make_probe(sweep *S, const sc_config *base) {
  sc_config *p = &S->probe;
  *p = *base;
  if (S->opts->gpus > 0) {
    p->cluster.num_gpus = S->opts->gpus;
    p->cluster.nodes = 0;
  }
  int64_t batch = p->training.global_batch;
  p->parallel.tp = p->parallel.pp = p->parallel.vpp = p->parallel.cp = 1;
  p->parallel.dp = 0;
  if (p->parallel.schedule != SC_SCHED_GPIPE) p->parallel.schedule = SC_SCHED_1F1B;
  p->parallel.sequence_parallel = 0;
  p->parallel.distributed_optimizer = 0;
  p->training.micro_batch = 1;
  p->training.recompute = SC_RECOMPUTE_NONE;
  p->simulation.fold = 1;
  memset(p->field_line, 0, sizeof p->field_line);
  int rc = SC_OK;
  int64_t n = p->cluster.num_gpus ? p->cluster.num_gpus
                                  : p->cluster.nodes * (p->cluster.gpus_per_node
                                                            ? p->cluster.gpus_per_node
                                                            : 1);
  /* Any batch divisible by the world size resolves; the real one is
   * checked per candidate. */
  p->training.global_batch = n > 0 && n <= SC_CONFIG_INT_MAX ? n : 1;
  rc = sc_config_resolve(S->ctx, p);
  if (rc) return rc;
  p->training.global_batch = batch;
  p->parallel.dp = 0;
  S->gpus = p->cluster.num_gpus;
  hasher H = {UINT64_C(14695981039346656037)};
  sc_config_write_yaml(p, hash_sink, &H);
  S->fingerprint = H.h;
  const sc_hw *hw = sc_hw_find(p->cluster.gpu);
  S->capacity_gib = hw ? hw->hbm_gib : 0;
  return SC_OK;
}

static int cmp_rows(const void *x, const void *y) {
  const sc_sweep_row *a = x, *b = y;
  if (a->step_time_s != b->step_time_s) return a->step_time_s < b->step_time_s ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Releases the sweep; makes the results file durable and closes it.
 * Returns rc, or SC_EWRITE when rc is 0 and the final sync or close fails. */
static int sweep_free(sweep *S, int rc) {
  sc__free(S->ctx, S->todo, S->cap * sizeof *S->todo);
  sc__free(S->ctx, S->rows, (S->ntodo ? S->ntodo : 1) * sizeof *S->rows);
  sc__free(S->ctx, S->state, S->ntodo ? S->ntodo : 1);
  if (S->fd >= 0) {
    int src = sync_results(S, 1);
    if (close(S->fd) && !src)
      src = sc__error(S->ctx, SC_EWRITE, "%s: close failed: %s", S->opts->out_path,
                      strerror(errno));
    if (!rc) rc = src;
  }
  return rc;
}

int sc_sweep_run(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                 sc_sweep_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!base || !opts || !out) return sc__error(ctx, SC_EINVAL, "sc_sweep_run: missing argument");
  memset(out, 0, sizeof *out);
  sweep S;
  memset(&S, 0, sizeof S);
  S.ctx = ctx;
  S.opts = opts;
  S.fd = -1;
  int root = sc__par_rank() == 0;
  out->is_root = root;

  int rc = make_probe(&S, base);
  if (!rc) rc = enumerate(&S);
  if (!rc && root) {
    size_t n = S.ntodo ? S.ntodo : 1;
    S.rows = sc__calloc(ctx, n, sizeof *S.rows);
    S.state = sc__calloc(ctx, n, 1);
    if (!S.rows || !S.state) rc = SC_ENOMEM;
    if (!rc && opts->out_path) rc = open_results(&S);
  }
  /* Every process enumerated the same list; only process 0 knows what the
   * file already holds and whether it is usable. All go on or none. */
  int agreed = sc__par_agree(rc);
  if (agreed && !rc) rc = sc__error(ctx, agreed, "another sweep process failed");
  rc = agreed;
  if (!rc) {
    /* From here every process must join sc__par_run, even if process 0
     * fails to prepare its list: it then hands out nothing. */
    int64_t *items = NULL;
    size_t nitems = 0, nalloc = S.ntodo ? S.ntodo : 1;
    int local = SC_OK;
    if (root) {
      items = sc__malloc(ctx, nalloc * sizeof *items);
      if (!items) local = SC_ENOMEM;
      for (size_t i = 0; !local && i < S.ntodo; i++)
        if (S.state[i] == ST_PENDING) items[nitems++] = (int64_t)i;
      /* Rows already in the file settle the write order up to the first gap. */
      while (S.next_write < S.ntodo && S.state[S.next_write] != ST_PENDING) S.next_write++;
      if (!local && opts->progress) opts->progress(opts->progress_ud, S.done, (int64_t)S.ntodo);
    }
    int prc = sc__par_run(ctx, items, local ? 0 : (int64_t)nitems, sizeof(sc_sweep_row), work,
                          deliver, &S);
    rc = local ? local : prc;
    if (items) sc__free(ctx, items, nalloc * sizeof *items);
  }

  out->gpus = S.gpus;
  out->candidates = S.leaves;
  out->capacity_gib = S.capacity_gib;
  memcpy(out->excluded, S.excluded, sizeof out->excluded);
  if (!rc && root) {
    int64_t ok = 0;
    for (size_t i = 0; i < S.ntodo; i++) {
      if (S.state[i] == ST_OK || S.state[i] == ST_RESUMED) ok++;
      else out->excluded[SC_SWEEP_SIM_ERROR]++;
    }
    out->rows = sc__malloc(ctx, (size_t)(ok ? ok : 1) * sizeof *out->rows);
    if (!out->rows) rc = SC_ENOMEM;
    else {
      int64_t k = 0;
      for (size_t i = 0; i < S.ntodo; i++)
        if (S.state[i] == ST_OK || S.state[i] == ST_RESUMED) out->rows[k++] = S.rows[i];
      qsort(out->rows, (size_t)ok, sizeof *out->rows, cmp_rows);
      out->simulated = ok;
      out->resumed = S.resumed;
    }
  }
  return sweep_free(&S, rc);
}

void sc_sweep_result_free(sc_ctx *ctx, sc_sweep_result *r) {
  if (!ctx || !r) return;
  if (r->rows)
    sc__free(ctx, r->rows, (size_t)(r->simulated ? r->simulated : 1) * sizeof *r->rows);
  r->rows = NULL;
  r->simulated = 0;
}

/* ------------------------------------------------------------ output */


int sc_sweep_format(const sc_config *base, const sc_sweep_result *r, int top_k, sc_format fmt,
                    sc_write_fn out, void *ud) {
  if (!base || !r || !out) return SC_EINVAL;
  if (top_k <= 0) top_k = 10;
  int64_t ntop = r->simulated < top_k ? r->simulated : top_k;
  int64_t excluded = 0;
  for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++) excluded += r->excluded[i];
  int rc;
  char key[128];
  if (fmt == SC_FORMAT_JSON) {
    if ((rc = sc__writef(out, ud,
                         "{\"model\": \"%s\", \"gpu\": \"%s\", \"gpus\": %" PRId64
                         ", \"global_batch\": %" PRId64 ", \"seq_len\": %" PRId64
                         ", \"capacity_gib\": %.1f, \"candidates\": %" PRId64
                         ", \"simulated\": %" PRId64 ", \"excluded\": {",
                         base->model.name, base->cluster.gpu, r->gpus, base->training.global_batch,
                         base->model.seq_len, r->capacity_gib, r->candidates, r->simulated)))
      return rc;
    for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++)
      if ((rc = sc__writef(out, ud, "%s\"%s\": %" PRId64, i ? ", " : "", sc_sweep_reason_key(i),
                           r->excluded[i])))
        return rc;
    if ((rc = sc__writef(out, ud, "}, \"top\": ["))) return rc;
    for (int64_t i = 0; i < ntop; i++) {
      const sc_sweep_row *w = &r->rows[i];
      if ((rc = sc__writef(out, ud,
                           "%s{\"rank\": %" PRId64 ", \"key\": \"%s\", \"tp\": %" PRId64
                           ", \"pp\": %" PRId64 ", \"dp\": %" PRId64 ", \"vpp\": %" PRId64
                           ", \"micro_batch\": %" PRId64
                           ", \"sequence_parallel\": %s, \"recompute\": \"%s\", "
                           "\"distributed_optimizer\": %s, \"step_time_s\": %.9f, "
                           "\"tokens_per_s\": %.1f, \"tflops_per_gpu\": %.3f, \"mfu\": %.6f, "
                           "\"memory_gib\": %.3f, \"breakdown_s\": {",
                           i ? ", " : "", i + 1, sc_sweep_row_key(w, key, sizeof key), w->tp,
                           w->pp, w->dp, w->vpp, w->micro_batch,
                           w->sequence_parallel ? "true" : "false",
                           sc_enum_name(SC_ENUM_RECOMPUTE, w->recompute),
                           w->distributed_optimizer ? "true" : "false", w->step_time_s,
                           w->tokens_per_s, w->tflops_per_gpu, w->mfu, w->memory_gib)))
        return rc;
      for (int c = 0; c < SC_CAT_COUNT; c++)
        if ((rc = sc__writef(out, ud, "%s\"%s\": %.6f", c ? ", " : "", sc_category_key(c),
                             w->breakdown_s[c])))
          return rc;
      if ((rc = sc__writef(out, ud, "}}"))) return rc;
    }
    return sc__writef(out, ud, "]}\n");
  }

  if ((rc = sc__writef(out, ud,
                       "stepcast sweep: %s on %" PRId64 " x %s (%.0f GiB), batch %" PRId64
                       ", seq %" PRId64 ", %s\n",
                       base->model.name, r->gpus, base->cluster.gpu, r->capacity_gib,
                       base->training.global_batch, base->model.seq_len,
                       sc_enum_name(SC_ENUM_PRECISION, base->training.precision))))
    return rc;
  if ((rc = sc__writef(out, ud,
                       "  candidates %" PRId64 ": simulated %" PRId64 ", excluded %" PRId64 "\n",
                       r->candidates, r->simulated, excluded)))
    return rc;
  for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++)
    if (r->excluded[i] &&
        (rc = sc__writef(out, ud, "    %-11s %8" PRId64 "  %s\n", sc_sweep_reason_key(i),
                         r->excluded[i], sc_sweep_reason_text(i))))
      return rc;
  if (ntop == 0) return sc__writef(out, ud, "\n  no configuration to rank\n");
  if ((rc = sc__writef(out, ud,
                       "\n  top %" PRId64 " by throughput (step breakdown in seconds, x- = exposed "
                       "communication; memory: peak stage)\n",
                       ntop)))
    return rc;
  if ((rc = sc__writef(out, ud,
                       "  %4s %3s %3s %4s %3s %3s %2s %-9s %2s %9s %9s %7s %6s %8s %7s %7s %7s "
                       "%7s %6s %7s\n",
                       "rank", "tp", "pp", "dp", "vpp", "mb", "sp", "recompute", "do", "step s",
                       "tokens/s", "TFLOP/s", "MFU", "compute", "x-tp", "x-pp", "x-dp", "bubble",
                       "optim", "mem GiB")))
    return rc;
  for (int64_t i = 0; i < ntop; i++) {
    const sc_sweep_row *w = &r->rows[i];
    if ((rc = sc__writef(out, ud,
                         "  %4" PRId64 " %3" PRId64 " %3" PRId64 " %4" PRId64 " %3" PRId64
                         " %3" PRId64 " %2d %-9s %2d %9.3f %9.0f %7.1f %5.1f%% %8.3f %7.3f %7.3f "
                         "%7.3f %7.3f %6.3f %7.1f\n",
                         i + 1, w->tp, w->pp, w->dp, w->vpp, w->micro_batch, w->sequence_parallel,
                         sc_enum_name(SC_ENUM_RECOMPUTE, w->recompute), w->distributed_optimizer,
                         w->step_time_s, w->tokens_per_s, w->tflops_per_gpu, 100.0 * w->mfu,
                         w->breakdown_s[SC_CAT_COMPUTE], w->breakdown_s[SC_CAT_TP],
                         w->breakdown_s[SC_CAT_PP], w->breakdown_s[SC_CAT_DP],
                         w->breakdown_s[SC_CAT_BUBBLE], w->breakdown_s[SC_CAT_OPTIMIZER],
                         w->memory_gib)))
      return rc;
  }
  return SC_OK;
}

/* ------------------------------------------------------------ processes */

int sc_sweep_procs_init(int *argc, char ***argv) { return sc__par_init(argc, argv); }
void sc_sweep_procs_finalize(void) { sc__par_finalize(); }
int sc_sweep_procs_rank(void) { return sc__par_rank(); }
int sc_sweep_procs_count(void) { return sc__par_size(); }
