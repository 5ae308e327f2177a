/*
 * job.c: the imported-workload container (job_int.h): interned strings,
 * deduplicated communication groups, per-rank op arrays, counted warnings,
 * and the cross-rank checks run once every rank is imported. Importers build
 * jobs through these helpers; scw.c serialises them; replay.c consumes them.
 */
#include "trace/job_int.h"

#include "ir/ir_int.h"

#include <stdio.h>
#include <stdlib.h>

/* qsort/bsearch that accept an empty array (the C library's do not take a
 * NULL base, even for zero items). */
static void sort_items(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

static const char *const jop_names[] = {
#define SC_X_NAME(id, name) name,
    SC_JOP_LIST(SC_X_NAME)
#undef SC_X_NAME
};

const char *sc__jop_name(int kind) {
  return kind >= 0 && kind < SC_JOP_COUNT ? jop_names[kind] : "?";
}

static const char *const jshape_names[] = {
#define SC_X_NAME(id, name) name,
    SC_JSHAPE_LIST(SC_X_NAME)
#undef SC_X_NAME
};

const char *sc__jshape_name(int cls) {
  return cls >= 0 && cls < SC_JSHAPE_COUNT ? jshape_names[cls] : "?";
}

int sc_job_new(sc_ctx *ctx, sc_job **out) {
  *out = NULL;
  sc_job *job = sc__calloc(ctx, 1, sizeof *job);
  if (!job) return SC_ENOMEM;
  job->ctx = ctx;
  uint32_t id;
  if (sc__job_intern(job, "", 0, &id)) { /* string id 0 is "" */
    sc_job_free(job);
    return SC_ENOMEM;
  }
  *out = job;
  return SC_OK;
}

void sc__jrank_free(sc_ctx *ctx, sc_jrank *r) {
  sc__free(ctx, r->streams, r->streams_cap * sizeof *r->streams);
  sc__free(ctx, r->ops, r->ops_cap * sizeof *r->ops);
  sc__free(ctx, r->deps, r->deps_cap * sizeof *r->deps);
  sc__free(ctx, r->shapes, r->shapes_cap * sizeof *r->shapes);
  sc__free(ctx, r->modules, r->modules_cap * sizeof *r->modules);
  sc__free(ctx, r->opmods, r->opmods_cap * sizeof *r->opmods);
  sc__free(ctx, r->ref_ns, r->ref_cap * sizeof *r->ref_ns);
  memset(r, 0, sizeof *r);
}

void sc_job_free(sc_job *job) {
  if (!job) return;
  sc_ctx *ctx = job->ctx;
  for (size_t i = 0; i < job->nranks; i++) sc__jrank_free(ctx, &job->ranks[i]);
  sc__free(ctx, job->ranks, job->ranks_cap * sizeof *job->ranks);
  sc__free(ctx, job->groups, job->groups_cap * sizeof *job->groups);
  sc__free(ctx, job->members, job->members_cap * sizeof *job->members);
  sc__free(ctx, job->group_hash, job->group_hash_cap * sizeof *job->group_hash);
  sc__free(ctx, job->str, job->str_cap);
  sc__free(ctx, job->str_off, job->str_off_cap * sizeof *job->str_off);
  sc__free(ctx, job->str_hash, job->str_hash_cap * sizeof *job->str_hash);
  sc__free(ctx, job->warns, job->warns_cap * sizeof *job->warns);
  sc__free(ctx, job, sizeof *job);
}

/* ------------------------------------------------------------ strings */

/* The hash of a string for the intern table: eight bytes a step (kernel
 * names run to hundreds of bytes, and a trace interns one per GPU event), a
 * multiply and a shift each (the 64-bit finaliser constant of MurmurHash3).
 * Only a string's slot depends on it, never its id, so no output does. */
static uint32_t str_hash(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdu;
    h ^= h >> 29;
  }
  if (i < n) {
    w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w) * 0xff51afd7ed558ccdu;
  }
  return (uint32_t)(h ^ h >> 32);
}

const char *sc__job_str(const sc_job *job, uint32_t id) {
  return id < job->nstr ? job->str + job->str_off[id] : "";
}

static int hash_rebuild(sc_job *job, size_t cap) {
  uint32_t *h = sc__calloc(job->ctx, cap, sizeof *h);
  if (!h) return SC_ENOMEM;
  for (size_t id = 0; id < job->nstr; id++) {
    const char *s = job->str + job->str_off[id];
    size_t i = str_hash(s, strlen(s)) & (cap - 1);
    while (h[i]) i = (i + 1) & (cap - 1);
    h[i] = (uint32_t)id + 1;
  }
  sc__free(job->ctx, job->str_hash, job->str_hash_cap * sizeof *job->str_hash);
  job->str_hash = h;
  job->str_hash_cap = cap;
  return SC_OK;
}

int sc__job_intern(sc_job *job, const char *s, size_t n, uint32_t *id) {
  if (2 * (job->nstr + 1) > job->str_hash_cap &&
      hash_rebuild(job, job->str_hash_cap ? job->str_hash_cap * 2 : 256))
    return SC_ENOMEM;
  /* Strings are stored 0-terminated: cut at an embedded 0. */
  const char *z = memchr(s, 0, n);
  if (z) n = (size_t)(z - s);
  size_t mask = job->str_hash_cap - 1, i = str_hash(s, n) & mask;
  while (job->str_hash[i]) {
    uint32_t cand = job->str_hash[i] - 1;
    const char *c = job->str + job->str_off[cand];
    if (!strncmp(c, s, n) && c[n] == 0) {
      *id = cand;
      return SC_OK;
    }
    i = (i + 1) & mask;
  }
  if (job->nstr >= UINT32_MAX - 1 || job->str_len + n + 1 > UINT32_MAX)
    return sc__error(job->ctx, SC_ENOMEM, "too many strings");
  if (sc__grow(job->ctx, (void **)&job->str, 1, &job->str_cap, job->str_len + n + 1) ||
      sc__grow(job->ctx, (void **)&job->str_off, sizeof *job->str_off, &job->str_off_cap,
               job->nstr + 1))
    return SC_ENOMEM;
  memcpy(job->str + job->str_len, s, n);
  job->str[job->str_len + n] = 0;
  job->str_off[job->nstr] = (uint32_t)job->str_len;
  job->str_len += n + 1;
  job->str_hash[i] = (uint32_t)job->nstr + 1;
  *id = (uint32_t)job->nstr++;
  return SC_OK;
}

/* ------------------------------------------------------------ groups */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* FNV-1a over the members' bytes (little-endian int64s). */
static uint32_t members_hash(const int64_t *m, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    for (int b = 0; b < 8; b++) h = (h ^ (uint8_t)((uint64_t)m[i] >> (8 * b))) * 16777619u;
  return h;
}

static int group_hash_rebuild(sc_job *job, size_t cap) {
  uint32_t *h = sc__calloc(job->ctx, cap, sizeof *h);
  if (!h) return SC_ENOMEM;
  for (size_t g = 0; g < job->ngroups; g++) {
    const sc_jgroup *gr = &job->groups[g];
    size_t i = members_hash(job->members + gr->off, gr->n) & (cap - 1);
    while (h[i]) i = (i + 1) & (cap - 1);
    h[i] = (uint32_t)g + 1;
  }
  sc__free(job->ctx, job->group_hash, job->group_hash_cap * sizeof *job->group_hash);
  job->group_hash = h;
  job->group_hash_cap = cap;
  return SC_OK;
}

/* Groups are found by their members through a hash index (a trace names
 * a group on every collective it records). */
static int find_or_add_group(sc_job *job, int64_t *ranks, size_t n, uint32_t name, int by_name, uint32_t *id);

int sc__job_group(sc_job *job, int64_t *ranks, size_t n, uint32_t name, uint32_t *id) {
  return find_or_add_group(job, ranks, n, name, 0, id);
}

int sc__job_group_named(sc_job *job, int64_t *ranks, size_t n, uint32_t name, uint32_t *id) {
  return find_or_add_group(job, ranks, n, name, 1, id);
}

int sc__job_copy_tables(const sc_job *in, sc_job *out, int groups) {
  int rc = SC_OK;
  for (size_t i = 0; !rc && i < in->nstr; i++) {
    const char *s = sc__job_str(in, (uint32_t)i);
    uint32_t id;
    if (sc__job_intern(out, s, strlen(s), &id)) return SC_ENOMEM;
    if (id != i) rc = sc__error(in->ctx, SC_EINVAL, "duplicate string in the job's table");
  }
  for (size_t g = 0; !rc && groups && g < in->ngroups; g++) {
    size_t n = in->groups[g].n;
    int64_t *m = sc__malloc(in->ctx, (n ? n : 1) * sizeof *m);
    uint32_t id;
    if (!m) return SC_ENOMEM;
    memcpy(m, in->members + in->groups[g].off, n * sizeof *m);
    rc = sc__job_group_named(out, m, n, in->groups[g].name, &id);
    sc__free(in->ctx, m, (n ? n : 1) * sizeof *m);
  }
  return rc;
}

static int find_or_add_group(sc_job *job, int64_t *ranks, size_t n, uint32_t name, int by_name, uint32_t *id) {
  sort_items(ranks, n, sizeof *ranks, cmp_i64);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || ranks[i] != ranks[m - 1]) ranks[m++] = ranks[i];
  if (2 * (job->ngroups + 1) > job->group_hash_cap) {
    size_t cap = job->group_hash_cap ? job->group_hash_cap : 64;
    while (2 * (job->ngroups + 1) > cap) cap *= 2; /* groups read from a .scw file come unindexed */
    if (group_hash_rebuild(job, cap)) return SC_ENOMEM;
  }
  size_t mask = job->group_hash_cap - 1, i = members_hash(ranks, m) & mask;
  while (job->group_hash[i]) {
    uint32_t g = job->group_hash[i] - 1;
    const sc_jgroup *gr = &job->groups[g];
    if (gr->n == m && (!by_name || gr->name == name) && !memcmp(job->members + gr->off, ranks, m * sizeof *ranks)) {
      *id = g;
      return SC_OK;
    }
    i = (i + 1) & mask;
  }
  if ((int64_t)job->ngroups >= SC_JOB_MAX_GROUPS)
    return sc__error(job->ctx, SC_EINVAL, "more than %lld communication groups (the most a job may have)",
                     (long long)SC_JOB_MAX_GROUPS);
  if ((int64_t)(job->nmembers + m) > SC_JOB_MAX_MEMBERS)
    return sc__error(job->ctx, SC_EINVAL,
                     "communication groups with more than %lld members together (the most a job may have)",
                     (long long)SC_JOB_MAX_MEMBERS);
  if (sc__grow(job->ctx, (void **)&job->groups, sizeof *job->groups, &job->groups_cap,
               job->ngroups + 1) ||
      sc__grow(job->ctx, (void **)&job->members, sizeof *job->members, &job->members_cap,
               job->nmembers + m))
    return SC_ENOMEM;
  memcpy(job->members + job->nmembers, ranks, m * sizeof *ranks);
  job->groups[job->ngroups] = (sc_jgroup){name, (uint32_t)job->nmembers, (uint32_t)m};
  job->nmembers += m;
  job->group_hash[i] = (uint32_t)job->ngroups + 1;
  *id = (uint32_t)job->ngroups++;
  return SC_OK;
}

/* ------------------------------------------------------------ ranks, ops */

sc_jrank *sc__job_add_rank(sc_job *job, int64_t rank) {
  if (sc__grow(job->ctx, (void **)&job->ranks, sizeof *job->ranks, &job->ranks_cap,
               job->nranks + 1))
    return NULL;
  sc_jrank *r = &job->ranks[job->nranks++];
  memset(r, 0, sizeof *r);
  r->rank = rank;
  r->iterations = 1;
  return r;
}

int sc__jrank_stream(sc_job *job, sc_jrank *r, int64_t id, uint32_t name, int host) {
  if (r->nstreams >= UINT16_MAX) return sc__error(job->ctx, SC_EUNSUPPORTED, "too many streams");
  if (sc__grow(job->ctx, (void **)&r->streams, sizeof *r->streams, &r->streams_cap,
               r->nstreams + 1))
    return SC_ENOMEM;
  r->streams[r->nstreams] = (sc_jstream){id, name, (uint8_t)(host != 0)};
  return (int)r->nstreams++;
}

int64_t sc__jrank_op(sc_job *job, sc_jrank *r, const sc_jop *op) {
  if (r->nops >= UINT32_MAX - 1) return -1;
  if (sc__grow(job->ctx, (void **)&r->ops, sizeof *r->ops, &r->ops_cap, r->nops + 1)) return -1;
  sc_jop *o = &r->ops[r->nops];
  *o = *op;
  o->dep_off = (uint32_t)r->ndeps;
  o->ndeps = 0;
  return (int64_t)r->nops++;
}

int64_t sc__jrank_module(sc_job *job, sc_jrank *r, uint32_t path, uint32_t type, uint32_t heads) {
  for (size_t i = 0; i < r->nmodules; i++)
    if (r->modules[i].path == path && r->modules[i].type == type) {
      if (heads && !r->modules[i].heads) r->modules[i].heads = heads; /* given on some ops only */
      return (int64_t)i;
    }
  if (r->nmodules >= (size_t)SC_JOB_MAX_OPS) return -1;
  if (sc__grow(job->ctx, (void **)&r->modules, sizeof *r->modules, &r->modules_cap, r->nmodules + 1))
    return -1;
  r->modules[r->nmodules] = (sc_jmodule){path, type, heads};
  return (int64_t)r->nmodules++;
}

int sc__jrank_set_opmod(sc_job *job, sc_jrank *r, size_t k, const sc_jopmod *m) {
  if (k >= r->opmods_cap) {
    size_t old = r->opmods_cap, want = k + 1 > r->ops_cap ? k + 1 : r->ops_cap;
    if (sc__grow(job->ctx, (void **)&r->opmods, sizeof *r->opmods, &r->opmods_cap, want)) return SC_ENOMEM;
    memset(r->opmods + old, 0, (r->opmods_cap - old) * sizeof *r->opmods);
  }
  r->opmods[k] = *m;
  return SC_OK;
}

int sc__jrank_set_ref(sc_job *job, sc_jrank *r, size_t k, int64_t ns) {
  if (k >= r->ref_cap) {
    size_t old = r->ref_cap, want = k + 1 > r->ops_cap ? k + 1 : r->ops_cap;
    if (sc__grow(job->ctx, (void **)&r->ref_ns, sizeof *r->ref_ns, &r->ref_cap, want)) return SC_ENOMEM;
    memset(r->ref_ns + old, 0, (r->ref_cap - old) * sizeof *r->ref_ns);
  }
  r->ref_ns[k] = ns;
  return SC_OK;
}

int64_t sc__jrank_shape(sc_job *job, sc_jrank *r, const sc_jshape *sh) {
  if (r->nshapes >= UINT32_MAX - 1) return -1;
  if (sc__grow(job->ctx, (void **)&r->shapes, sizeof *r->shapes, &r->shapes_cap, r->nshapes + 1))
    return -1;
  r->shapes[r->nshapes] = *sh;
  return (int64_t)r->nshapes++;
}

int sc__jrank_dep(sc_job *job, sc_jrank *r, uint32_t dep) {
  if (r->ndeps >= UINT32_MAX - 1) return sc__error(job->ctx, SC_ENOMEM, "too many dependencies");
  if (sc__grow(job->ctx, (void **)&r->deps, sizeof *r->deps, &r->deps_cap, r->ndeps + 1))
    return SC_ENOMEM;
  r->deps[r->ndeps++] = dep;
  r->ops[r->nops - 1].ndeps++;
  return SC_OK;
}

static void warn_v(sc_job *job, int64_t n, const char *fmt, va_list ap) {
  char msg[sizeof job->warns[0].msg];
  vsnprintf(msg, sizeof msg, fmt, ap);
  for (size_t i = 0; i < job->nwarns; i++)
    if (!strcmp(job->warns[i].msg, msg)) {
      job->warns[i].count += n;
      return;
    }
  /* Out of memory for a warning only loses the warning. */
  if (sc__grow(job->ctx, (void **)&job->warns, sizeof *job->warns, &job->warns_cap,
               job->nwarns + 1))
    return;
  sc__strlcpy(job->warns[job->nwarns].msg, msg, sizeof msg);
  job->warns[job->nwarns++].count = n;
}

void sc__job_warn(sc_job *job, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  warn_v(job, 1, fmt, ap);
  va_end(ap);
}

void sc__job_warn_n(sc_job *job, int64_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  warn_v(job, n, fmt, ap);
  va_end(ap);
}

int sc_job_write_warnings(const sc_job *job, sc_write_fn w, void *ud) {
  for (size_t i = 0; i < job->nwarns; i++) {
    int rc = sc__writef(w, ud, "warning: %lld x %s\n", (long long)job->warns[i].count,
                        job->warns[i].msg);
    if (rc) return rc;
  }
  return SC_OK;
}

/* ------------------------------------------------------------ summary */

void sc_job_get_info(const sc_job *job, sc_job_info *info) {
  memset(info, 0, sizeof *info);
  double gemm_flops = 0, gemm16 = 0;
  info->world = job->world;
  info->ranks = (int64_t)job->nranks;
  info->groups = (int64_t)job->ngroups;
  for (size_t i = 0; i < job->nwarns; i++) info->warnings += job->warns[i].count;
  for (size_t i = 0; i < job->nranks; i++) {
    const sc_jrank *r = &job->ranks[i];
    info->ops += (int64_t)r->nops;
    info->deps += (int64_t)r->ndeps;
    if (r->iterations > info->iterations) info->iterations = r->iterations;
    double step = r->iterations > 0 ? (double)r->span_ns / 1e9 / (double)r->iterations : 0;
    if (step > info->traced_step_s) info->traced_step_s = step;
    if ((int64_t)r->nmodules > info->modules) info->modules = (int64_t)r->nmodules;
    for (size_t k = 0; r->opmods && k < r->nops; k++) info->module_ops += r->opmods[k].module || r->opmods[k].pass;
    for (size_t k = 0; k < r->nops; k++) {
      info->priced_ops += r->ops[k].shape != 0;
      if (r->ops[k].shape && r->ops[k].shape <= r->nshapes && r->shapes[r->ops[k].shape - 1].cls == SC_JSHAPE_GEMM) {
        const sc_jshape *sh = &r->shapes[r->ops[k].shape - 1];
        double elems = (sh->m * sh->k + sh->k * sh->n + sh->m * sh->n) * (sh->batch > 0 ? sh->batch : 1);
        double eb = elems > 0 ? r->ops[k].bytes / elems : 0;
        gemm_flops += r->ops[k].flops;
        if (eb > 1.5 && eb < 2.5) gemm16 += r->ops[k].flops;
      }
      info->grads += r->ops[k].kind == SC_JOP_GRAD;
      switch (r->ops[k].kind) {
      case SC_JOP_HOST:
      case SC_JOP_SYNC:
        info->host_ops++;
        break;
      case SC_JOP_IDLE:
      case SC_JOP_GRAD:
        break;
      case SC_JOP_COLL:
        info->collectives++;
        info->gpu_ops++;
        break;
      case SC_JOP_SEND:
      case SC_JOP_RECV:
        info->p2p++;
        info->gpu_ops++;
        break;
      default:
        info->gpu_ops++;
        break;
      }
    }
  }
  info->gemm16_share = gemm_flops > 0 ? gemm16 / gemm_flops : 0;
}

/* ------------------------------------------------------------ checks */

static int is_member(const sc_job *job, uint32_t g, int64_t rank) {
  const sc_jgroup *gr = &job->groups[g];
  const int64_t *m = job->members + gr->off;
  size_t lo = 0, hi = gr->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m[mid] < rank) lo = mid + 1;
    else hi = mid;
  }
  return lo < gr->n && m[lo] == rank;
}

const char *sc__job_fmt_num(double v, char *buf, size_t n) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (prec == 17 || !(v == v) || strtod(buf, NULL) == v) break;
  }
  return buf;
}

/* "source: rank R[ op K]: field: V out of range [lo, hi]". */
static int out_of_range(const sc_job *job, const sc_jrank *r, int64_t op, const char *field, double v,
                        double lo, double hi) {
  char where[32] = "", a[32], b[32], c[32];
  if (op >= 0) snprintf(where, sizeof where, " op %lld", (long long)op);
  return sc__error(job->ctx, SC_EINVAL, "%s: rank %lld%s: %s: %s out of range [%s, %s]",
                   sc__job_str(job, r->source), (long long)r->rank, where, field,
                   sc__job_fmt_num(v, a, sizeof a), sc__job_fmt_num(lo, b, sizeof b),
                   sc__job_fmt_num(hi, c, sizeof c));
}

int sc__job_check_bounds(const sc_job *job) {
  for (size_t i = 0; i < job->nranks; i++) {
    const sc_jrank *r = &job->ranks[i];
    if ((int64_t)r->nops > SC_JOB_MAX_OPS)
      return out_of_range(job, r, -1, "ops", (double)r->nops, 0, (double)SC_JOB_MAX_OPS);
    if ((int64_t)r->ndeps > SC_JOB_MAX_DEPS)
      return out_of_range(job, r, -1, "dependencies", (double)r->ndeps, 0, (double)SC_JOB_MAX_DEPS);
    if ((int64_t)r->nshapes > SC_JOB_MAX_OPS)
      return out_of_range(job, r, -1, "shapes", (double)r->nshapes, 0, (double)SC_JOB_MAX_OPS);
    if (r->iterations < 1 || r->iterations > SC_JOB_MAX_ITERATIONS)
      return out_of_range(job, r, -1, "iterations", (double)r->iterations, 1, (double)SC_JOB_MAX_ITERATIONS);
    if (r->span_ns < 0 || r->span_ns > SC_TIME_MAX)
      return out_of_range(job, r, -1, "span (ns)", (double)r->span_ns, 0, (double)SC_TIME_MAX);
    for (size_t k = 0; k < r->nops; k++) {
      const sc_jop *op = &r->ops[k];
      if (!(op->dur_ns >= 0 && (double)op->dur_ns <= SC_WORK_MAX))
        return out_of_range(job, r, (int64_t)k, "duration (ns)", (double)op->dur_ns, 0, SC_WORK_MAX);
      if (op->start_ns < -1 || op->start_ns > SC_TIME_MAX)
        return out_of_range(job, r, (int64_t)k, "start (ns)", (double)op->start_ns, -1, (double)SC_TIME_MAX);
      if (!(op->bytes >= 0 && op->bytes <= SC_JOB_MAX_BYTES))
        return out_of_range(job, r, (int64_t)k, "bytes", op->bytes, 0, SC_JOB_MAX_BYTES);
      if (!(op->flops >= 0 && op->flops <= SC_JOB_MAX_FLOPS))
        return out_of_range(job, r, (int64_t)k, "FLOPs", op->flops, 0, SC_JOB_MAX_FLOPS);
    }
    for (size_t k = 0; k < r->nshapes; k++) {
      const sc_jshape *sh = &r->shapes[k];
      const double v[4] = {sh->m, sh->n, sh->k, sh->batch};
      static const char *const what[4] = {"shape m", "shape n", "shape k", "shape batch"};
      for (int f = 0; f < 4; f++)
        if (!(v[f] >= 0 && v[f] <= SC_JOB_MAX_DIM)) return out_of_range(job, r, -1, what[f], v[f], 0, SC_JOB_MAX_DIM);
    }
  }
  return SC_OK;
}

int sc_job_finish(sc_job *job) {
  sc_ctx *ctx = job->ctx;
  int64_t maxr = -1;
  for (size_t i = 0; i < job->nranks; i++) {
    const sc_jrank *r = &job->ranks[i];
    if (r->rank > maxr) maxr = r->rank;
    for (size_t k = 0; k < i; k++)
      if (job->ranks[k].rank == r->rank)
        return sc__error(ctx, SC_EINVAL, "%s: rank %lld was already imported from %s",
                         sc__job_str(job, r->source), (long long)r->rank,
                         sc__job_str(job, job->ranks[k].source));
  }
  int rc = sc__job_check_bounds(job);
  if (rc) return rc;
  /* Per-rank shards: one trace of every stage (exsitu.c checked each
   * trace's tp, pp and stage against the first one's). */
  for (int64_t s = 0; s < job->shard_pp; s++) {
    size_t i = 0;
    while (i < job->nranks && job->ranks[i].rank != s * job->shard_tp) i++;
    if (i == job->nranks)
      return sc__error(ctx, SC_EINVAL,
                       "%s:%llu: pp %lld: no trace of stage %lld among the %zu shard trace(s) (one per stage: "
                       "tools/trace_torch.py --pp-stage %lld/%lld)", sc__job_str(job, job->shard_src),
                       (unsigned long long)job->shard_off, (long long)job->shard_pp, (long long)s, job->nranks,
                       (long long)s, (long long)job->shard_pp);
  }
  for (size_t i = 0; i < job->nmembers; i++)
    if (job->members[i] > maxr) maxr = job->members[i];
  if (maxr >= SC_JOB_MAX_WORLD || job->world > SC_JOB_MAX_WORLD)
    return sc__error(ctx, SC_EINVAL, "the job names rank %lld: more than %lld ranks are not supported",
                     (long long)(maxr > job->world ? maxr : job->world), (long long)SC_JOB_MAX_WORLD);
  if (job->world <= maxr) {
    if (job->world) sc__job_warn(job, "world size %lld is smaller than rank %lld: enlarged",
                                 (long long)job->world, (long long)maxr);
    job->world = maxr + 1;
  }
  /* Collectives over "the world" of traces that did not say its size. */
  uint32_t world_id = SC_JOB_NONE;
  for (size_t i = 0; i < job->nranks; i++) {
    sc_jrank *r = &job->ranks[i];
    for (size_t k = 0; k < r->nops; k++) {
      if (r->ops[k].group != SC_JOB_WORLD) continue;
      if (world_id == SC_JOB_NONE) {
        int64_t *all = sc__malloc(ctx, (size_t)job->world * sizeof *all);
        uint32_t name;
        if (!all) return SC_ENOMEM;
        for (int64_t m = 0; m < job->world; m++) all[m] = m;
        rc = sc__job_intern(job, "world", 5, &name);
        if (!rc) rc = sc__job_group(job, all, (size_t)job->world, name, &world_id);
        sc__free(ctx, all, (size_t)job->world * sizeof *all);
        if (rc) return rc;
      }
      r->ops[k].group = world_id;
    }
  }
  /* Collectives: every traced member of a group issues the same sequence
   * (same count, same types in the same order): the replay pairs the k-th
   * collective of each member. */
  for (size_t g = 0; g < job->ngroups; g++) {
    const sc_jrank *ref = NULL;
    size_t ref_n = 0;
    for (size_t i = 0; i < job->nranks; i++) {
      const sc_jrank *r = &job->ranks[i];
      size_t n = 0, k_ref = 0;
      for (size_t k = 0; k < r->nops; k++) {
        const sc_jop *op = &r->ops[k];
        if (op->kind != SC_JOP_COLL || op->group != g) continue;
        if (!is_member(job, (uint32_t)g, r->rank))
          return sc__error(ctx, SC_EINVAL, "%s: rank %lld issues a collective on a group it is not in",
                           sc__job_str(job, r->source), (long long)r->rank);
        if (ref) { /* the n-th collective of ref on g */
          while (k_ref < ref->nops && !(ref->ops[k_ref].kind == SC_JOP_COLL && ref->ops[k_ref].group == g))
            k_ref++;
          if (k_ref < ref->nops) {
            const sc_jop *x = &ref->ops[k_ref++];
            if (x->coll != op->coll && x->coll != SC_JCOLL_UNKNOWN && op->coll != SC_JCOLL_UNKNOWN)
              return sc__error(ctx, SC_EINVAL,
                               "%s: collective %zu of group %zu: %s on rank %lld, %s on rank %lld (%s): "
                               "the traces do not cover the same steps (sampled traces?)",
                               sc__job_str(job, r->source), n, g, sc__coll_name(op->coll),
                               (long long)r->rank, sc__coll_name(x->coll), (long long)ref->rank,
                               sc__job_str(job, ref->source));
          }
        }
        n++;
      }
      if (!n && !is_member(job, (uint32_t)g, r->rank)) continue;
      if (!ref) {
        ref = r;
        ref_n = n;
      } else if (n != ref_n) {
        return sc__error(ctx, SC_EINVAL,
                         "%s: rank %lld issues %zu collectives on group %zu, rank %lld (%s) %zu: "
                         "the traces do not cover the same steps",
                         sc__job_str(job, r->source), (long long)r->rank, n, g,
                         (long long)ref->rank, sc__job_str(job, ref->source), ref_n);
      }
    }
  }
  return SC_OK;
}

/* ------------------------------------------------------------ hardware */

const char *sc_job_gpu_preset(const sc_job *job) {
  for (size_t i = 0; i < job->nranks; i++) {
    const sc_hw *hw = sc_hw_match(sc__job_str(job, job->ranks[i].gpu));
    if (hw) return hw->name;
  }
  return NULL;
}
