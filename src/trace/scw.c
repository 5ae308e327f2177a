/*
 * scw.c: the .scw workload file (docs/SCW.md): writer and bounds-checked
 * reader of an imported job. Little-endian, a magic number and version, the
 * payload's length and CRC-32 (zlib) in a fixed header, then tagged sections
 * (strings, job, groups, one per rank, warnings) that a reader can skip when
 * it does not know them. Every count and index read is checked before use.
 */
#include "trace/job_int.h"

#include "ir/ir_int.h"

#include <math.h>
#include <stdio.h>
#include <zlib.h>

/* 8-byte signature: a non-ASCII first byte and CR LF / ^Z / LF catch text
 * mode transfers and truncation at a ^Z, as the PNG signature does. */
static const unsigned char scw_magic[8] = {0x89, 'S', 'C', 'W', '\r', '\n', 0x1a, '\n'};
#define SCW_VERSION 3u  /* 2: op shape index (bytes 60-63) and a shape table per rank;
                         * 3: module table and per-op modules per rank */
#define SCW_VERSION_MIN 1u
#define SCW_SHAPE_BYTES 40u
#define SCW_MODULE_BYTES 12u
#define SCW_OPMOD_BYTES 8u
#define SCW_HEADER 32u
#define SCW_OP_BYTES 64u
#define SCW_STREAM_BYTES 16u

#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define TAG_STRS TAG('S', 'T', 'R', 'S')
#define TAG_JOB TAG('J', 'O', 'B', ' ')
#define TAG_GRPS TAG('G', 'R', 'P', 'S')
#define TAG_RANK TAG('R', 'A', 'N', 'K')
#define TAG_WARN TAG('W', 'A', 'R', 'N')
/* Per-rank shards (job_int.h: shard_tp, shard_pp): written only for such
 * jobs, after the groups; a reader that does not know it skips it. */
#define TAG_SHRD TAG('S', 'H', 'R', 'D')

/* ------------------------------------------------------------ writer */

/* Output of the serialiser: counts bytes and CRC (pass 1) or writes them
 * through a 64 KiB buffer (pass 2, which the CRC of pass 1 heads). */
typedef struct wbuf {
  sc_write_fn w; /* NULL: measure only */
  void *ud;
  unsigned char buf[1 << 16];
  size_t len;
  uint64_t total;
  uint32_t crc;
  int rc;
} wbuf;

static void wflush(wbuf *b) {
  if (b->len) {
    if (!b->w) b->crc = (uint32_t)crc32(b->crc, b->buf, (uInt)b->len);
    else if (!b->rc) b->rc = b->w(b->ud, (const char *)b->buf, b->len);
  }
  b->total += b->len;
  b->len = 0;
}

static void wbytes(wbuf *b, const void *p, size_t n) {
  const unsigned char *s = p;
  while (n) {
    if (b->len == sizeof b->buf) wflush(b);
    size_t k = sizeof b->buf - b->len;
    if (k > n) k = n;
    memcpy(b->buf + b->len, s, k);
    b->len += k;
    s += k;
    n -= k;
  }
}

static void put_u8(unsigned char *p, uint8_t v) { p[0] = v; }
static void put_u16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_f64(unsigned char *p, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  put_u64(p, v);
}

static void w32(wbuf *b, uint32_t v) {
  unsigned char t[4];
  put_u32(t, v);
  wbytes(b, t, 4);
}
static void w64(wbuf *b, uint64_t v) {
  unsigned char t[8];
  put_u64(t, v);
  wbytes(b, t, 8);
}

static void section(wbuf *b, uint32_t tag, uint64_t len) {
  w32(b, tag);
  w32(b, 0);
  w64(b, len);
}

static uint64_t rank_bytes(const sc_jrank *r) {
  return 8 + 4 + 4 + 8 + 8 + 4 + 4 + 4 + (uint64_t)r->nstreams * SCW_STREAM_BYTES +
         (uint64_t)r->nops * SCW_OP_BYTES + (uint64_t)r->ndeps * 4 + 4 +
         (uint64_t)r->nshapes * SCW_SHAPE_BYTES + 4 + (uint64_t)r->nmodules * SCW_MODULE_BYTES + 4 +
         (r->opmods ? (uint64_t)r->nops * SCW_OPMOD_BYTES : 0);
}

static void write_payload(const sc_job *job, wbuf *b) {
  uint64_t len = 4;
  for (size_t i = 0; i < job->nstr; i++) len += 4 + strlen(sc__job_str(job, (uint32_t)i));
  section(b, TAG_STRS, len);
  w32(b, (uint32_t)job->nstr);
  for (size_t i = 0; i < job->nstr; i++) {
    const char *s = sc__job_str(job, (uint32_t)i);
    w32(b, (uint32_t)strlen(s));
    wbytes(b, s, strlen(s));
  }
  section(b, TAG_JOB, 16);
  w64(b, (uint64_t)job->world);
  w32(b, (uint32_t)job->nranks);
  w32(b, (uint32_t)job->ngroups);
  len = 4;
  for (size_t g = 0; g < job->ngroups; g++) len += 8 + 8 * (uint64_t)job->groups[g].n;
  section(b, TAG_GRPS, len);
  w32(b, (uint32_t)job->ngroups);
  for (size_t g = 0; g < job->ngroups; g++) {
    const sc_jgroup *gr = &job->groups[g];
    w32(b, gr->name);
    w32(b, gr->n);
    for (uint32_t k = 0; k < gr->n; k++) w64(b, (uint64_t)job->members[gr->off + k]);
  }
  if (job->shard_tp > 0) {
    section(b, TAG_SHRD, 16);
    w64(b, (uint64_t)job->shard_tp);
    w64(b, (uint64_t)job->shard_pp);
  }
  for (size_t i = 0; i < job->nranks; i++) {
    const sc_jrank *r = &job->ranks[i];
    section(b, TAG_RANK, rank_bytes(r));
    w64(b, (uint64_t)r->rank);
    w32(b, r->source);
    w32(b, r->gpu);
    w64(b, (uint64_t)r->iterations);
    w64(b, (uint64_t)r->span_ns);
    w32(b, (uint32_t)r->nstreams);
    w32(b, (uint32_t)r->nops);
    w32(b, (uint32_t)r->ndeps);
    for (size_t s = 0; s < r->nstreams; s++) {
      unsigned char t[SCW_STREAM_BYTES] = {0};
      put_u64(t, (uint64_t)r->streams[s].id);
      put_u32(t + 8, r->streams[s].name);
      put_u8(t + 12, r->streams[s].host);
      wbytes(b, t, sizeof t);
    }
    for (size_t k = 0; k < r->nops; k++) {
      const sc_jop *op = &r->ops[k];
      unsigned char t[SCW_OP_BYTES];
      put_u64(t, (uint64_t)op->dur_ns);
      put_u64(t + 8, (uint64_t)op->start_ns);
      put_f64(t + 16, op->flops);
      put_f64(t + 24, op->bytes);
      put_u32(t + 32, op->dep_off);
      put_u32(t + 36, op->ndeps);
      put_u32(t + 40, op->name);
      put_u32(t + 44, op->group);
      put_u32(t + 48, (uint32_t)op->peer);
      put_u32(t + 52, op->iter);
      put_u16(t + 56, op->stream);
      put_u8(t + 58, op->kind);
      put_u8(t + 59, op->coll);
      put_u32(t + 60, op->shape);
      wbytes(b, t, sizeof t);
    }
    for (size_t k = 0; k < r->ndeps; k++) w32(b, r->deps[k]);
    w32(b, (uint32_t)r->nshapes);
    for (size_t k = 0; k < r->nshapes; k++) {
      const sc_jshape *sh = &r->shapes[k];
      unsigned char t[SCW_SHAPE_BYTES] = {0};
      put_f64(t, sh->m);
      put_f64(t + 8, sh->n);
      put_f64(t + 16, sh->k);
      put_f64(t + 24, sh->batch);
      put_u8(t + 32, sh->cls);
      wbytes(b, t, sizeof t);
    }
    w32(b, (uint32_t)r->nmodules);
    for (size_t k = 0; k < r->nmodules; k++) {
      w32(b, r->modules[k].path);
      w32(b, r->modules[k].type);
      w32(b, r->modules[k].heads);
    }
    w32(b, r->opmods ? (uint32_t)r->nops : 0);
    for (size_t k = 0; r->opmods && k < r->nops; k++) {
      sc_jopmod m = sc__jrank_opmod(r, k);
      unsigned char t[SCW_OPMOD_BYTES] = {0};
      put_u32(t, m.module);
      put_u8(t + 4, m.pass);
      put_u8(t + 5, m.param);
      wbytes(b, t, sizeof t);
    }
  }
  len = 4;
  for (size_t i = 0; i < job->nwarns; i++) len += 12 + strlen(job->warns[i].msg);
  section(b, TAG_WARN, len);
  w32(b, (uint32_t)job->nwarns);
  for (size_t i = 0; i < job->nwarns; i++) {
    w64(b, (uint64_t)job->warns[i].count);
    w32(b, (uint32_t)strlen(job->warns[i].msg));
    wbytes(b, job->warns[i].msg, strlen(job->warns[i].msg));
  }
  wflush(b);
}

int sc_job_write(const sc_job *job, sc_write_fn w, void *ud) {
  for (size_t i = 0; i < job->nranks; i++)
    for (size_t k = 0; k < job->ranks[i].nops; k++)
      if (job->ranks[i].ops[k].group == SC_JOB_WORLD)
        return sc__error(job->ctx, SC_EINVAL, "the job is not finished (sc_job_finish)");
  wbuf *b = sc__malloc(job->ctx, sizeof *b);
  if (!b) return SC_ENOMEM;
  /* Pass 1 measures the payload and its CRC; pass 2 writes header and payload. */
  memset(b, 0, offsetof(wbuf, buf));
  b->len = 0;
  b->total = 0;
  b->crc = (uint32_t)crc32(0L, Z_NULL, 0);
  write_payload(job, b);
  unsigned char h[SCW_HEADER] = {0};
  memcpy(h, scw_magic, 8);
  put_u32(h + 8, SCW_VERSION);
  put_u32(h + 12, SCW_HEADER);
  put_u64(h + 16, b->total);
  put_u32(h + 24, b->crc);
  int rc = w(ud, (const char *)h, sizeof h);
  if (!rc) {
    b->w = w;
    b->ud = ud;
    b->len = 0;
    b->total = 0;
    b->rc = 0;
    write_payload(job, b);
    rc = b->rc;
  }
  sc__free(job->ctx, b, sizeof *b);
  return rc;
}

/* ------------------------------------------------------------ reader */

typedef struct rd {
  sc_ctx *ctx;
  const char *name;
  const unsigned char *p;
  size_t len, pos;
  size_t base; /* file offset of p[0] */
  uint32_t version;
} rd;

static int rd_fail(const rd *r, size_t at, const char *what) {
  return sc__error(r->ctx, SC_EINVAL, "%s:%zu: %s", r->name, r->base + at, what);
}

/* A field outside its bounds (job_int.h, docs/SCW.md "Bounds"):
 * "name:offset: field: value out of range [lo, hi]". */
static int rd_range(const rd *r, size_t at, const char *field, double v, double lo, double hi) {
  char a[32], b[32], c[32];
  return sc__error(r->ctx, SC_EINVAL, "%s:%zu: %s: %s out of range [%s, %s]", r->name, r->base + at, field,
                   sc__job_fmt_num(v, a, sizeof a), sc__job_fmt_num(lo, b, sizeof b),
                   sc__job_fmt_num(hi, c, sizeof c));
}
static int rd_range_i(const rd *r, size_t at, const char *field, int64_t v, int64_t lo, int64_t hi) {
  return sc__error(r->ctx, SC_EINVAL, "%s:%zu: %s: %lld out of range [%lld, %lld]", r->name, r->base + at,
                   field, (long long)v, (long long)lo, (long long)hi);
}
static int rd_range_u(const rd *r, size_t at, const char *field, uint64_t v, int64_t lo, int64_t hi) {
  return sc__error(r->ctx, SC_EINVAL, "%s:%zu: %s: %llu out of range [%lld, %lld]", r->name, r->base + at,
                   field, (unsigned long long)v, (long long)lo, (long long)hi);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) {
  return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}
static double get_f64(const unsigned char *p) {
  uint64_t v = get_u64(p);
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

/* Takes n bytes or fails with "truncated <what>". */
static int take(rd *r, size_t n, const unsigned char **out, const char *what) {
  if (n > r->len - r->pos) {
    char msg[96];
    snprintf(msg, sizeof msg, "truncated %s", what);
    return rd_fail(r, r->pos, msg);
  }
  *out = r->p + r->pos;
  r->pos += n;
  return SC_OK;
}

static int r32(rd *r, uint32_t *v, const char *what) {
  const unsigned char *p = NULL;
  if (take(r, 4, &p, what)) return SC_EINVAL;
  *v = get_u32(p);
  return SC_OK;
}
static int r64(rd *r, uint64_t *v, const char *what) {
  const unsigned char *p = NULL;
  if (take(r, 8, &p, what)) return SC_EINVAL;
  *v = get_u64(p);
  return SC_OK;
}

static int read_strings(rd *r, sc_job *job) {
  uint32_t n;
  if (r32(r, &n, "string table")) return SC_EINVAL;
  if (n == 0 || n > (r->len - r->pos) / 4) return rd_fail(r, r->pos - 4, "bad string count");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len;
    const unsigned char *s = NULL;
    if (r32(r, &len, "string") || take(r, len, &s, "string")) return SC_EINVAL;
    if (memchr(s, 0, len)) return rd_fail(r, r->pos - len, "string holds a NUL byte");
    uint32_t id;
    if (i == 0) {
      if (len) return rd_fail(r, r->pos - len, "string 0 must be empty");
      continue; /* sc_job_new interned "" as id 0 */
    }
    size_t before = job->nstr;
    if (sc__job_intern(job, (const char *)s, len, &id)) return SC_ENOMEM;
    if (job->nstr == before) return rd_fail(r, r->pos - len, "duplicate string");
  }
  return SC_OK;
}

static int read_groups(rd *r, sc_job *job, uint32_t ngroups) {
  uint32_t n;
  if (r32(r, &n, "group table")) return SC_EINVAL;
  if (n != ngroups) return rd_fail(r, r->pos - 4, "group count differs from the job header");
  if ((int64_t)n > SC_JOB_MAX_GROUPS) return rd_range_u(r, r->pos - 4, "groups", n, 0, SC_JOB_MAX_GROUPS);
  for (uint32_t g = 0; g < n; g++) {
    uint32_t name, m;
    if (r32(r, &name, "group") || r32(r, &m, "group")) return SC_EINVAL;
    if (name >= job->nstr) return rd_fail(r, r->pos - 8, "group name out of range");
    if (m == 0 || m > (r->len - r->pos) / 8) return rd_fail(r, r->pos - 4, "bad group size");
    if ((int64_t)(job->nmembers + m) > SC_JOB_MAX_MEMBERS)
      return rd_range_u(r, r->pos - 4, "group members (all groups)", job->nmembers + m, 1, SC_JOB_MAX_MEMBERS);
    if (sc__grow(job->ctx, (void **)&job->groups, sizeof *job->groups, &job->groups_cap, g + 1) ||
        sc__grow(job->ctx, (void **)&job->members, sizeof *job->members, &job->members_cap,
                 job->nmembers + m))
      return SC_ENOMEM;
    for (uint32_t k = 0; k < m; k++) {
      uint64_t v;
      if (r64(r, &v, "group member")) return SC_EINVAL;
      int64_t rank = (int64_t)v;
      if (rank < 0 || rank >= job->world) return rd_fail(r, r->pos - 8, "group member out of range");
      if (k && rank <= job->members[job->nmembers + k - 1])
        return rd_fail(r, r->pos - 8, "group members not ascending");
      job->members[job->nmembers + k] = rank;
    }
    job->groups[g] = (sc_jgroup){name, (uint32_t)job->nmembers, m};
    job->nmembers += m;
    job->ngroups = g + 1;
  }
  return SC_OK;
}

static int read_rank(rd *r, sc_job *job) {
  uint64_t rank, iters, span;
  uint32_t source, gpu, nstreams, nops, ndeps;
  size_t at = r->pos;
  if (r64(r, &rank, "rank") || r32(r, &source, "rank") || r32(r, &gpu, "rank") ||
      r64(r, &iters, "rank") || r64(r, &span, "rank") || r32(r, &nstreams, "rank") ||
      r32(r, &nops, "rank") || r32(r, &ndeps, "rank"))
    return SC_EINVAL;
  if ((int64_t)rank < 0 || (int64_t)rank >= job->world)
    return rd_range_i(r, at, "rank", (int64_t)rank, 0, job->world - 1);
  if (source >= job->nstr || gpu >= job->nstr) return rd_fail(r, at, "rank string out of range");
  if ((int64_t)iters < 1 || (int64_t)iters > SC_JOB_MAX_ITERATIONS) /* i64 fields */
    return rd_range_i(r, at + 16, "iterations", (int64_t)iters, 1, SC_JOB_MAX_ITERATIONS);
  if ((int64_t)span < 0 || (int64_t)span > SC_TIME_MAX)
    return rd_range_i(r, at + 24, "span (ns)", (int64_t)span, 0, SC_TIME_MAX);
  if (nstreams > SC_JOB_MAX_STREAMS) return rd_range_u(r, at + 32, "streams", nstreams, 0, SC_JOB_MAX_STREAMS);
  if (nops > SC_JOB_MAX_OPS) return rd_range_u(r, at + 36, "ops", nops, 0, SC_JOB_MAX_OPS);
  if (ndeps > SC_JOB_MAX_DEPS) return rd_range_u(r, at + 40, "dependencies", ndeps, 0, SC_JOB_MAX_DEPS);
  uint64_t need = (uint64_t)nstreams * SCW_STREAM_BYTES + (uint64_t)nops * SCW_OP_BYTES +
                  (uint64_t)ndeps * 4;
  if (need > r->len - r->pos) return rd_fail(r, r->pos, "truncated rank (counts exceed the section)");
  sc_jrank *jr = sc__job_add_rank(job, (int64_t)rank);
  if (!jr) return SC_ENOMEM;
  jr->source = source;
  jr->gpu = gpu;
  jr->iterations = (int64_t)iters;
  jr->span_ns = (int64_t)span;
  jr->streams = sc__calloc(job->ctx, nstreams ? nstreams : 1, sizeof *jr->streams);
  jr->streams_cap = nstreams ? nstreams : 1;
  jr->ops = sc__calloc(job->ctx, nops ? nops : 1, sizeof *jr->ops);
  jr->ops_cap = nops ? nops : 1;
  jr->deps = sc__calloc(job->ctx, ndeps ? ndeps : 1, sizeof *jr->deps);
  jr->deps_cap = ndeps ? ndeps : 1;
  if (!jr->streams || !jr->ops || !jr->deps) return SC_ENOMEM;
  for (uint32_t s = 0; s < nstreams; s++) {
    const unsigned char *p = NULL;
    if (take(r, SCW_STREAM_BYTES, &p, "stream")) return SC_EINVAL;
    sc_jstream *st = &jr->streams[s];
    st->id = (int64_t)get_u64(p);
    st->name = get_u32(p + 8);
    st->host = p[12];
    if (st->name >= job->nstr || st->host > 1) return rd_fail(r, r->pos - SCW_STREAM_BYTES, "bad stream");
    jr->nstreams++;
  }
  for (uint32_t k = 0; k < nops; k++) {
    const unsigned char *p = NULL;
    if (take(r, SCW_OP_BYTES, &p, "op")) return SC_EINVAL;
    size_t opat = r->pos - SCW_OP_BYTES;
    sc_jop *op = &jr->ops[k];
    op->dur_ns = (int64_t)get_u64(p);
    op->start_ns = (int64_t)get_u64(p + 8);
    op->flops = get_f64(p + 16);
    op->bytes = get_f64(p + 24);
    op->dep_off = get_u32(p + 32);
    op->ndeps = get_u32(p + 36);
    op->name = get_u32(p + 40);
    op->group = get_u32(p + 44);
    op->peer = (int32_t)get_u32(p + 48);
    op->iter = get_u32(p + 52);
    op->stream = (uint16_t)(p[56] | p[57] << 8);
    op->kind = p[58];
    op->coll = p[59];
    op->shape = r->version >= 2 ? get_u32(p + 60) : 0;
    if (op->kind >= SC_JOP_COUNT) return rd_fail(r, opat + 58, "unknown op kind");
    if (op->stream >= nstreams) return rd_fail(r, opat + 56, "op stream out of range");
    int host_kind = op->kind == SC_JOP_HOST || op->kind == SC_JOP_SYNC; /* IDLE, GRAD: GPU streams */
    if (host_kind != jr->streams[op->stream].host)
      return rd_fail(r, opat + 58, "host op on a GPU stream or GPU op on the host stream");
    if (!(op->dur_ns >= 0 && (double)op->dur_ns <= SC_WORK_MAX))
      return rd_range_i(r, opat, "op duration (ns)", op->dur_ns, 0, (int64_t)SC_WORK_MAX);
    if (op->start_ns < -1 || op->start_ns > SC_TIME_MAX)
      return rd_range_i(r, opat + 8, "op start (ns)", op->start_ns, -1, SC_TIME_MAX);
    if (!(op->flops >= 0 && op->flops <= SC_JOB_MAX_FLOPS))
      return rd_range(r, opat + 16, "op FLOPs", op->flops, 0, SC_JOB_MAX_FLOPS);
    if (!(op->bytes >= 0 && op->bytes <= SC_JOB_MAX_BYTES))
      return rd_range(r, opat + 24, "op bytes", op->bytes, 0, SC_JOB_MAX_BYTES);
    if (op->dep_off > ndeps || op->ndeps > ndeps - op->dep_off)
      return rd_fail(r, opat + 32, "dependency range out of bounds");
    if (op->name >= job->nstr) return rd_fail(r, opat + 40, "op name out of range");
    if (op->kind == SC_JOP_COLL) {
      if (op->group >= job->ngroups) return rd_fail(r, opat + 44, "collective group out of range");
      if (op->coll >= SC_COLL_COUNT && op->coll != SC_JCOLL_UNKNOWN)
        return rd_fail(r, opat + 59, "unknown collective type");
    } else if (op->group != SC_JOB_NONE) return rd_fail(r, opat + 44, "group on a non-collective op");
    if (op->peer < -1 || op->peer >= job->world) return rd_fail(r, opat + 48, "peer out of range");
    if ((int64_t)op->iter >= jr->iterations) return rd_fail(r, opat + 52, "iteration out of range");
    jr->nops++;
  }
  for (uint32_t k = 0; k < ndeps; k++) {
    const unsigned char *p = NULL;
    if (take(r, 4, &p, "dependency")) return SC_EINVAL;
    uint32_t d = get_u32(p);
    if (d >= nops) return rd_fail(r, r->pos - 4, "dependency out of range");
    jr->deps[k] = d;
    jr->ndeps++;
  }
  uint32_t nshapes = 0;
  if (r->version >= 2) {
    if (r32(r, &nshapes, "shape table")) return SC_EINVAL;
    if ((uint64_t)nshapes * SCW_SHAPE_BYTES > r->len - r->pos)
      return rd_fail(r, r->pos - 4, "truncated shape table");
    if (nshapes > SC_JOB_MAX_OPS) return rd_range_u(r, r->pos - 4, "shapes", nshapes, 0, SC_JOB_MAX_OPS);
    if (nshapes) {
      jr->shapes = sc__calloc(job->ctx, nshapes, sizeof *jr->shapes);
      if (!jr->shapes) return SC_ENOMEM;
      jr->shapes_cap = nshapes;
    }
    for (uint32_t k = 0; k < nshapes; k++) {
      const unsigned char *p = NULL;
      if (take(r, SCW_SHAPE_BYTES, &p, "shape")) return SC_EINVAL;
      sc_jshape *sh = &jr->shapes[k];
      sh->m = get_f64(p);
      sh->n = get_f64(p + 8);
      sh->k = get_f64(p + 16);
      sh->batch = get_f64(p + 24);
      sh->cls = p[32];
      if (sh->cls >= SC_JSHAPE_COUNT) return rd_fail(r, r->pos - SCW_SHAPE_BYTES + 32, "unknown shape class");
      static const char *const what[4] = {"shape m", "shape n", "shape k", "shape batch"};
      for (int f = 0; f < 4; f++) {
        double v = f == 0 ? sh->m : f == 1 ? sh->n : f == 2 ? sh->k : sh->batch;
        if (!(v >= 0 && v <= SC_JOB_MAX_DIM))
          return rd_range(r, r->pos - SCW_SHAPE_BYTES + 8 * (size_t)f, what[f], v, 0, SC_JOB_MAX_DIM);
      }
      jr->nshapes++;
    }
  }
  for (uint32_t k = 0; k < nops; k++)
    if (jr->ops[k].shape > nshapes) return rd_fail(r, 0, "op shape index out of range");
  if (r->version >= 3) { /* module table, then 0 or one module entry per op */
    uint32_t nmod = 0, nom = 0;
    if (r32(r, &nmod, "module table")) return SC_EINVAL;
    if ((uint64_t)nmod * SCW_MODULE_BYTES > r->len - r->pos) return rd_fail(r, r->pos - 4, "truncated module table");
    if (nmod) {
      jr->modules = sc__calloc(job->ctx, nmod, sizeof *jr->modules);
      if (!jr->modules) return SC_ENOMEM;
      jr->modules_cap = nmod;
    }
    for (uint32_t k = 0; k < nmod; k++) {
      const unsigned char *p = NULL;
      if (take(r, SCW_MODULE_BYTES, &p, "module")) return SC_EINVAL;
      sc_jmodule *m = &jr->modules[k];
      m->path = get_u32(p);
      m->type = get_u32(p + 4);
      m->heads = get_u32(p + 8);
      if (m->path >= job->nstr || m->type >= job->nstr)
        return rd_fail(r, r->pos - SCW_MODULE_BYTES, "module string out of range");
      if (m->heads > SC_JOB_MAX_HEADS)
        return rd_range_u(r, r->pos - 4, "module heads", m->heads, 0, SC_JOB_MAX_HEADS);
      jr->nmodules++;
    }
    if (r32(r, &nom, "op modules")) return SC_EINVAL;
    if (nom && nom != nops) return rd_fail(r, r->pos - 4, "op module count is neither 0 nor the op count");
    if ((uint64_t)nom * SCW_OPMOD_BYTES > r->len - r->pos) return rd_fail(r, r->pos - 4, "truncated op modules");
    if (nom) {
      jr->opmods = sc__calloc(job->ctx, nom, sizeof *jr->opmods);
      if (!jr->opmods) return SC_ENOMEM;
      jr->opmods_cap = nom;
    }
    for (uint32_t k = 0; k < nom; k++) {
      const unsigned char *p = NULL;
      if (take(r, SCW_OPMOD_BYTES, &p, "op module")) return SC_EINVAL;
      sc_jopmod *m = &jr->opmods[k];
      m->module = get_u32(p);
      m->pass = p[4];
      m->param = p[5];
      if (m->module > nmod) return rd_fail(r, r->pos - SCW_OPMOD_BYTES, "op module index out of range");
      if (m->pass >= SC_JPASS_COUNT || m->param >= SC_JPARAM_COUNT || p[6] || p[7])
        return rd_fail(r, r->pos - SCW_OPMOD_BYTES + 4, "bad op module entry");
    }
  }
  /* An op may not depend on itself. */
  for (uint32_t k = 0; k < nops; k++)
    for (uint32_t d = 0; d < jr->ops[k].ndeps; d++)
      if (jr->deps[jr->ops[k].dep_off + d] == k)
        return sc__error(r->ctx, SC_EINVAL, "%s: rank %lld op %u depends on itself", r->name,
                         (long long)rank, k);
  return SC_OK;
}

static int read_warns(rd *r, sc_job *job) {
  uint32_t n;
  if (r32(r, &n, "warnings")) return SC_EINVAL;
  if (n > (r->len - r->pos) / 12) return rd_fail(r, r->pos - 4, "bad warning count");
  for (uint32_t i = 0; i < n; i++) {
    uint64_t count;
    uint32_t len;
    const unsigned char *s = NULL;
    if (r64(r, &count, "warning") || r32(r, &len, "warning") || take(r, len, &s, "warning"))
      return SC_EINVAL;
    if (count > (uint64_t)INT64_MAX) return rd_range_u(r, r->pos - len - 12, "warning count", count, 0, INT64_MAX);
    if (sc__grow(job->ctx, (void **)&job->warns, sizeof *job->warns, &job->warns_cap,
                 job->nwarns + 1))
      return SC_ENOMEM;
    sc_jwarn *w = &job->warns[job->nwarns++];
    size_t k = len < sizeof w->msg - 1 ? len : sizeof w->msg - 1;
    memcpy(w->msg, s, k);
    w->msg[k] = 0;
    w->count = (int64_t)count;
  }
  return SC_OK;
}

static int read_payload(rd *r, sc_job *job) {
  int have_strs = 0, have_job = 0, have_grps = 0;
  uint32_t nranks = 0, ngroups = 0;
  while (r->pos < r->len) {
    uint32_t tag, zero;
    uint64_t len;
    size_t at = r->pos;
    if (r32(r, &tag, "section header") || r32(r, &zero, "section header") ||
        r64(r, &len, "section header"))
      return SC_EINVAL;
    if (len > r->len - r->pos) return rd_fail(r, at, "section longer than the file");
    rd sub = {r->ctx, r->name, r->p + r->pos, (size_t)len, 0, r->base + r->pos, r->version};
    int rc = SC_OK;
    if (tag == TAG_STRS) {
      if (have_strs) return rd_fail(r, at, "second string table");
      rc = read_strings(&sub, job);
      have_strs = 1;
    } else if (tag == TAG_JOB) {
      if (!have_strs || have_job) return rd_fail(r, at, "job section out of order");
      uint64_t world;
      if (r64(&sub, &world, "job") || r32(&sub, &nranks, "job") || r32(&sub, &ngroups, "job"))
        return SC_EINVAL;
      if ((int64_t)world < 1 || (int64_t)world > SC_JOB_MAX_WORLD) /* an i64 */
        return rd_range_i(&sub, 0, "world", (int64_t)world, 1, SC_JOB_MAX_WORLD);
      if (nranks > world) return rd_range_u(&sub, 8, "ranks", nranks, 0, (int64_t)world);
      job->world = (int64_t)world;
      have_job = 1;
    } else if (tag == TAG_GRPS) {
      if (!have_job || have_grps) return rd_fail(r, at, "group section out of order");
      rc = read_groups(&sub, job, ngroups);
      have_grps = 1;
    } else if (tag == TAG_RANK) {
      if (!have_grps) return rd_fail(r, at, "rank section before the groups");
      if (job->nranks >= nranks) return rd_fail(r, at, "more ranks than the job header says");
      rc = read_rank(&sub, job);
    } else if (tag == TAG_WARN) {
      rc = read_warns(&sub, job);
    } else if (tag == TAG_SHRD) {
      uint64_t tp, pp;
      if (!have_grps || job->nranks || job->shard_tp) return rd_fail(r, at, "shard section out of order");
      if (r64(&sub, &tp, "shards") || r64(&sub, &pp, "shards")) return SC_EINVAL;
      if (tp < 1 || tp > 4096) return rd_range_i(&sub, 0, "shard tp", (int64_t)tp, 1, 4096);
      if (pp < 1 || pp > 4096) return rd_range_i(&sub, 8, "shard pp", (int64_t)pp, 1, 4096);
      if ((int64_t)(tp * pp) != job->world || pp != nranks)
        return rd_fail(&sub, 0, "shards: tp x pp is not the world, or pp not the ranks");
      job->shard_tp = (int64_t)tp;
      job->shard_pp = (int64_t)pp;
    } /* unknown sections are skipped */
    if (rc) return rc;
    if (tag == TAG_STRS || tag == TAG_JOB || tag == TAG_GRPS || tag == TAG_RANK || tag == TAG_WARN ||
        tag == TAG_SHRD)
      if (sub.pos != sub.len) return rd_fail(&sub, sub.pos, "section has trailing bytes");
    r->pos += (size_t)len;
  }
  if (!have_grps) return rd_fail(r, r->pos, "missing job or group section");
  if (job->nranks != nranks) return rd_fail(r, r->pos, "fewer ranks than the job header says");
  for (size_t i = 0; i < job->nranks && job->shard_tp; i++) /* stage s is rank s x tp (each once: below) */
    if (job->ranks[i].rank % job->shard_tp)
      return sc__error(r->ctx, SC_EINVAL, "%s: shards: rank %lld is no stage's (a multiple of tp %lld)", r->name,
                       (long long)job->ranks[i].rank, (long long)job->shard_tp);
  /* Each rank once (a bitmap of the world: at most 128 KiB). */
  size_t nb = (size_t)job->world / 8 + 1;
  unsigned char *seen = sc__calloc(r->ctx, nb, 1);
  if (!seen) return SC_ENOMEM;
  int rc = SC_OK;
  for (size_t i = 0; i < job->nranks && !rc; i++) {
    uint64_t k = (uint64_t)job->ranks[i].rank;
    if (seen[k / 8] & (1u << (k % 8)))
      rc = sc__error(r->ctx, SC_EINVAL, "%s: rank %llu appears twice", r->name, (unsigned long long)k);
    seen[k / 8] |= (unsigned char)(1u << (k % 8));
  }
  sc__free(r->ctx, seen, nb);
  return rc;
}

int sc_job_read(sc_ctx *ctx, const char *name, const void *buf, size_t len, sc_job **out) {
  *out = NULL;
  const unsigned char *p = buf;
  rd r = {ctx, name, p, len, 0, 0, 0};
  if (len < SCW_HEADER || memcmp(p, scw_magic, 8))
    return rd_fail(&r, 0, "not a .scw file (bad magic number)");
  uint32_t version = get_u32(p + 8), hsize = get_u32(p + 12);
  if (version < SCW_VERSION_MIN || version > SCW_VERSION) {
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "%s:8: .scw version %u is not supported (this build reads %u to %u)", name, version,
                     SCW_VERSION_MIN, SCW_VERSION);
  }
  if (hsize < SCW_HEADER || hsize > len) return rd_fail(&r, 12, "bad header size");
  if (get_u32(p + 28)) return rd_fail(&r, 28, "unknown header flags");
  uint64_t plen = get_u64(p + 16);
  if (plen != len - hsize) return rd_fail(&r, 16, "payload length does not match the file size (truncated?)");
  uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
  /* zlib takes uInt lengths: feed large payloads in pieces. */
  for (size_t off = 0; off < plen;) {
    size_t k = plen - off > (1u << 30) ? (1u << 30) : (size_t)(plen - off);
    crc = (uint32_t)crc32(crc, p + hsize + off, (uInt)k);
    off += k;
  }
  if (crc != get_u32(p + 24)) return rd_fail(&r, 24, "checksum mismatch: the file is damaged");
  sc_job *job;
  int rc = sc_job_new(ctx, &job);
  if (rc) return rc;
  rd body = {ctx, name, p + hsize, (size_t)plen, 0, hsize, version};
  rc = read_payload(&body, job);
  if (rc) {
    sc_job_free(job);
    return rc;
  }
  *out = job;
  return SC_OK;
}
