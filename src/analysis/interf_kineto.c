/*
 * interf_kineto.c: training pairs for the learned interference model, read
 * from Kineto (PyTorch profiler) Chrome traces in one streaming pass: stored
 * bytes go through the importers' compression feed (trace/feed.c: plain,
 * gzip, zstd) to the Chrome-trace reader (trace/chrome.c); only GPU kernel
 * events are kept, compactly. At the end of a trace every compute kernel is
 * matched with the NCCL kernels running on other streams of its device, and
 * each overlapped run of a kernel (same name and launch shape) is paired
 * with the median of its runs alone.
 */
#include "cost/interf_int.h"
#include "trace/chrome_int.h"
#include "trace/feed_int.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define READ_BYTES (1u << 16)     /* sc_interf_load_file's read size */
#define NAME_MAX_BYTES (1u << 16) /* longer kernel names are cut (classification only) */

/* One GPU kernel of the trace being read. */
typedef struct kern {
  int64_t t0, dur;   /* ns */
  int64_t stream;
  int64_t device;
  uint64_t key;      /* FNV-1a of name, grid and block */
  double bytes;      /* NCCL: message size, 0 unknown */
  int64_t group;     /* NCCL: group size, 0 unknown */
  int64_t ov;        /* compute: ns overlapped by NCCL kernels of other streams */
  uint32_t by;       /* compute: the NCCL kernel overlapping it longest (index) */
  uint8_t nccl;
  uint8_t kind;      /* compute: SC_OP_*; NCCL: SC_ICOLL_* */
} kern;

/* What an event says, as far as kernels go. */
typedef struct event {
  int is_x, is_kernel, has_ts, has_dur;
  int64_t ts, dur, device, stream, tid;
  int has_device, has_stream;
  uint64_t shape;      /* FNV-1a over grid and block numbers */
  char coll[32];       /* args "Collective name" */
  int64_t in_nelems, out_nelems, group;
  int esize;           /* bytes per element of args "dtype", 0 unknown */
} event;

/* Members of args we read (member ids, in arg_keys order), and the
 * distributedInfo and top-level members. */
enum { AK_DEVICE = SC_CHROME_ARG, AK_STREAM, AK_GRID, AK_BLOCK, AK_COLL, AK_IN, AK_OUT, AK_GROUP,
       AK_DTYPE };
static const char *const arg_keys[] = {"device", "stream", "grid", "block", "Collective name",
                                       "In msg nelems", "Out msg nelems", "Group size", "dtype", NULL};
static const char *const dist_keys[] = {"world_size", NULL};
static const char *const meta_keys[] = {"deviceProperties", NULL};

struct sc_interf_data {
  sc_ctx *ctx;
  sc_interf_extract_options opt;
  sc_interf_stats st;
  sc_interf_sample *samples;
  size_t nsamples, samples_cap;
  /* The trace being read. */
  int active;
  char name[256];
  sc_feed feed;       /* stored bytes (plain, gzip, zstd) to the reader */
  sc_chrome c;        /* the Chrome-trace reader: events and metadata */
  int feed_ready, chrome_ready;
  char *ev_name;      /* a kernel name with escapes (or too long), decoded */
  size_t ev_name_cap;
  int64_t ndev, world;
  kern *k;
  size_t nk, kcap;
  int rc;
};

/* ------------------------------------------------------------ helpers */

#define FNV_OFFSET 0xcbf29ce484222325ull /* FNV-1a 64-bit (Fowler, Noll, Vo) */
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
  return h;
}

static int has(const char *s, const char *needle) { return sc__contains_nocase(s, needle); }

/* Collective of an NCCL kernel, from the profiler's "Collective name" when
 * given, else from the kernel name (ncclKernel_AllReduce_RING_LL_Sum_float,
 * ncclDevKernel_SendRecv, ...). */
static int nccl_coll(const char *coll_arg, const char *name) {
  const char *s = coll_arg && coll_arg[0] ? coll_arg : name;
  if (has(s, "all_to_all") || has(s, "alltoall") || has(s, "sendrecv") || has(s, "send") ||
      has(s, "recv"))
    return SC_ICOLL_P2P;
  if (has(s, "allreduce") || has(s, "all_reduce")) return SC_ICOLL_ALLREDUCE;
  if (has(s, "allgather") || has(s, "all_gather")) return SC_ICOLL_ALLGATHER;
  if (has(s, "reducescatter") || has(s, "reduce_scatter")) return SC_ICOLL_REDUCESCATTER;
  return SC_ICOLL_OTHER;
}

/* Bytes per element of a profiler dtype name ("Float", "BFloat16", ...). */
static int dtype_size(const char *t) {
  static const struct { const char *name; int size; } sizes[] = {
      {"double", 8}, {"long", 8}, {"int64", 8}, {"bfloat16", 2}, {"half", 2}, {"float16", 2},
      {"float8", 1}, {"float", 4}, {"int", 4}, {"char", 1}, {"byte", 1}, {"bool", 1},
      {"uint8", 1}, {"int8", 1}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (has(t, sizes[i].name)) return sizes[i].size;
  return 0;
}

static int failf(sc_interf_data *d, int code, const char *fmt, ...) SC_PRINTF(3, 4);
static int failf(sc_interf_data *d, int code, const char *fmt, ...) {
  if (!d->rc) {
    va_list ap;
    va_start(ap, fmt);
    d->rc = sc__error_atv(d->ctx, code, d->name, SC_AT_NONE, fmt, ap);
    va_end(ap);
  }
  return d->rc;
}

/* ------------------------------------------------------------ data set */

int sc_interf_data_new(sc_ctx *ctx, const sc_interf_extract_options *opt, sc_interf_data **out) {
  if (!ctx || !out) return SC_EINVAL;
  sc_interf_data *d = sc__calloc(ctx, 1, sizeof *d);
  if (!d) return SC_ENOMEM;
  d->ctx = ctx;
  if (opt) d->opt = *opt;
  if (!(d->opt.min_kernel_us > 0)) d->opt.min_kernel_us = 10;
  if (d->opt.min_alone <= 0) d->opt.min_alone = 3;
  if (!(d->opt.max_spread > 0)) d->opt.max_spread = 0.25;
  if (!(d->opt.min_overlap > 0)) d->opt.min_overlap = 0.2;
  if (!(d->opt.shape_tol > 0)) d->opt.shape_tol = 0.1;
  *out = d;
  return SC_OK;
}

static void trace_release(sc_interf_data *d) {
  if (d->feed_ready) sc__feed_free(&d->feed);
  d->feed_ready = 0;
  if (d->chrome_ready) sc__chrome_free(&d->c);
  d->chrome_ready = 0;
  d->active = 0;
}

void sc_interf_data_free(sc_interf_data *d) {
  if (!d) return;
  sc_ctx *ctx = d->ctx;
  trace_release(d);
  sc__free(ctx, d->samples, d->samples_cap * sizeof *d->samples);
  sc__free(ctx, d->ev_name, d->ev_name_cap);
  sc__free(ctx, d->k, d->kcap * sizeof *d->k);
  sc__free(ctx, d, sizeof *d);
}

sc_ctx *sc__interf_data_ctx(const sc_interf_data *d) { return d->ctx; }

const sc_interf_sample *sc__interf_data_samples(const sc_interf_data *d, size_t *n) {
  *n = d->nsamples;
  return d->samples;
}

int sc__interf_data_add(sc_interf_data *d, const sc_interf_sample *s, size_t n) {
  if (!n) return SC_OK;
  if (sc__grow(d->ctx, (void **)&d->samples, sizeof *s, &d->samples_cap, d->nsamples + n))
    return SC_ENOMEM;
  memcpy(d->samples + d->nsamples, s, n * sizeof *s);
  d->nsamples += n;
  d->st.pairs += (int64_t)n;
  return SC_OK;
}

void sc_interf_data_stats(const sc_interf_data *d, sc_interf_stats *out) {
  if (d && out) *out = d->st;
}

/* ------------------------------------------------------------ events */

/* Keeps a GPU kernel event (e; its name raw in ce). */
static int event_done(sc_interf_data *d, const event *e, const sc_chrome_str *raw) {
  if (!e->is_x || !e->is_kernel || !e->has_ts || !e->has_dur || e->dur <= 0) return SC_OK;
  /* The name, NUL-terminated (the raw text is not): its first
   * NAME_MAX_BYTES raw bytes, decoded when they have escapes. */
  const char *name = "";
  size_t name_len = 0;
  if (raw->s) {
    size_t n = raw->n < NAME_MAX_BYTES ? raw->n : NAME_MAX_BYTES;
    if (sc__grow(d->ctx, (void **)&d->ev_name, 1, &d->ev_name_cap, n + 1)) return SC_ENOMEM;
    if (raw->escaped) n = sc__json_unescape(raw->s, n, d->ev_name, n + 1);
    else memcpy(d->ev_name, raw->s, n);
    if (n > d->ev_name_cap - 1) n = d->ev_name_cap - 1;
    d->ev_name[n] = 0;
    name = d->ev_name;
    name_len = n;
  }
  if (sc__grow(d->ctx, (void **)&d->k, sizeof *d->k, &d->kcap, d->nk + 1)) return SC_ENOMEM;
  kern *k = &d->k[d->nk++];
  memset(k, 0, sizeof *k);
  k->t0 = e->ts;
  k->dur = e->dur;
  k->device = e->has_device ? e->device : 0;
  k->stream = e->has_stream ? e->stream : e->tid;
  if (!strncmp(name, "nccl", 4)) {
    k->nccl = 1;
    k->kind = (uint8_t)nccl_coll(e->coll, name);
    int64_t nel = e->in_nelems > e->out_nelems ? e->in_nelems : e->out_nelems;
    k->bytes = nel > 0 && e->esize > 0 ? (double)nel * e->esize : 0;
    k->group = e->group;
    d->st.nccl_kernels++;
    return SC_OK;
  }
  k->kind = (uint8_t)sc__kernel_kind(name);
  k->key = fnv(fnv(FNV_OFFSET, name, name_len), (const char *)&e->shape, sizeof e->shape);
  d->st.kernels++;
  return SC_OK;
}

/* A string value: raw token bytes decoded into buf (cap bytes). */
static void token_text(const char *s, size_t n, int escaped, char *buf, size_t cap) {
  if (escaped) sc__json_unescape(s, n, buf, cap);
  else {
    n = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
  }
}

/* An integer value given as a number or a string of digits. */
static int tok_int(const sc_jtok *t, int64_t *v) {
  return (t->type == SC_JT_NUMBER || t->type == SC_JT_STRING) &&
         sc__json_int(t->s, t->n, v) == SC_OK;
}

/* One kept member of args (id key, value tokens v[0..n)) into e: grid and
 * block arrays hash their numbers; other values are read as scalars (an
 * object reads as no value). */
static void arg_value(event *e, int key, const sc_jtok *v, size_t n) {
  const sc_jtok *t = v;
  if (t->type == SC_JT_ARR_BEGIN) {
    if (key != AK_GRID && key != AK_BLOCK) return;
    e->shape = fnv(e->shape, key == AK_GRID ? "g" : "b", 1);
    for (size_t i = 1; i < n; i++)
      if (v[i].depth == 1 && v[i].type == SC_JT_NUMBER) e->shape = fnv(fnv(e->shape, v[i].s, v[i].n), ",", 1);
    return;
  }
  switch (key) {
  case AK_DEVICE: e->has_device = tok_int(t, &e->device); break;
  case AK_STREAM: e->has_stream = tok_int(t, &e->stream); break;
  case AK_IN: tok_int(t, &e->in_nelems); break;
  case AK_OUT: tok_int(t, &e->out_nelems); break;
  case AK_GROUP: tok_int(t, &e->group); break;
  case AK_COLL:
    if (t->type == SC_JT_STRING) token_text(t->s, t->n, t->escaped, e->coll, sizeof e->coll);
    break;
  case AK_DTYPE:
    if (t->type == SC_JT_STRING) {
      char buf[32];
      token_text(t->s, t->n, t->escaped, buf, sizeof buf);
      e->esize = dtype_size(buf);
    }
    break;
  default: break;
  }
}

/* A completed event from the Chrome-trace reader: its members in document
 * order, then kept if it is a GPU kernel. */
static int on_event(void *ud, const sc_chrome_event *ce) {
  sc_interf_data *d = ud;
  event e;
  memset(&e, 0, sizeof e);
  e.shape = FNV_OFFSET;
  if (ce->cat.s) {
    char buf[32];
    token_text(ce->cat.s, ce->cat.n, ce->cat.escaped, buf, sizeof buf);
    e.is_kernel = !strcmp(buf, "kernel") || !strcmp(buf, "Kernel");
  }
  e.has_ts = ce->has_ts; /* the last number decides */
  e.ts = ce->ts_ns;
  e.has_dur = ce->has_dur;
  e.dur = ce->dur_ns;
  for (size_t i = 0; i < ce->nm; i++) {
    const sc_chrome_member *m = &ce->m[i];
    const sc_jtok *t = sc__chrome_value(ce, m);
    if (m->key == SC_CHROME_PH) e.is_x = t->type == SC_JT_STRING && t->n == 1 && t->s[0] == 'X';
    else if (m->key == SC_CHROME_TID) tok_int(t, &e.tid);
    else if (m->key >= SC_CHROME_ARG) arg_value(&e, m->key, t, m->count);
  }
  return event_done(d, &e, &ce->name);
}

/* distributedInfo.world_size and deviceProperties (devices per node). */
static int on_item(void *ud, const sc_chrome_item *it) {
  sc_interf_data *d = ud;
  if (it->section == SC_CHROME_DIST) {
    int64_t v;
    if (tok_int(it->tok, &v) && v > 0) d->world = v;
    return SC_OK;
  }
  for (size_t i = 0; i < it->ntok; i++)
    if (it->tok[i].depth == 1 && it->tok[i].type == SC_JT_OBJ_BEGIN) d->ndev++;
  return SC_OK;
}

/* ph and tid are members, read with this reader's own rules (the last ph
 * exactly "X"; thread ids as numbers or digit strings); timestamps out of
 * range count as absent. */
static const sc_chrome_spec interf_spec = {.members = 1u << SC_CHROME_PH | 1u << SC_CHROME_TID,
                                           .arg_keys = arg_keys,
                                           .dist_keys = dist_keys,
                                           .meta_keys = meta_keys,
                                           .event = on_event,
                                           .item = on_item};

/* A failed Chrome-trace reader call: malformed JSON as "name:offset: ...",
 * the callbacks' out of memory as "name: out of memory". */
static int chrome_failed(sc_interf_data *d, int rc) {
  if (d->rc) return d->rc;
  if (d->c.err_kind == SC_CHROME_EJSON)
    return d->rc = sc__error(d->ctx, rc, "%s:%llu: %s", d->name, (unsigned long long)d->c.err_off,
                             d->c.errmsg);
  return failf(d, rc, "out of memory");
}

/* The feed's sink: decompressed bytes to the Chrome-trace reader. */
static int to_reader(void *ud, const char *buf, size_t len) {
  sc_interf_data *d = ud;
  int rc = sc__chrome_feed(&d->c, buf, len);
  return rc ? chrome_failed(d, rc) : SC_OK;
}

/* A failed feed call: its own errors (corrupt or truncated data) as
 * "name: message"; the reader's are already set. */
static int feed_failed(sc_interf_data *d, int rc) {
  if (d->rc) return d->rc;
  return failf(d, rc, "%s", d->feed.errmsg[0] ? d->feed.errmsg : "out of memory");
}

/* ------------------------------------------------------------ reading */

int sc_interf_trace_begin(sc_interf_data *d, const char *name) {
  if (!d) return SC_EINVAL;
  trace_release(d);
  d->rc = SC_OK;
  sc__strlcpy(d->name, name ? name : "<trace>", sizeof d->name);
  d->ndev = d->world = 0;
  d->nk = 0;
  int rc = sc__feed_init(&d->feed, d->ctx, to_reader, d);
  if (rc) return rc;
  d->feed_ready = 1;
  rc = sc__chrome_init(&d->c, d->ctx, &interf_spec, d);
  if (rc) {
    trace_release(d);
    return rc;
  }
  d->chrome_ready = 1;
  d->active = 1;
  return SC_OK;
}

int sc_interf_trace_feed(sc_interf_data *d, const void *buf, size_t len) {
  if (!d || !d->active) return SC_EINVAL;
  if (d->rc) return d->rc;
  if (!len) return SC_OK;
  int rc = sc__feed_put(&d->feed, buf, len);
  return rc ? feed_failed(d, rc) : SC_OK;
}

/* ------------------------------------------------------------ pairing */

static int cmp_nccl(const void *a, const void *b) {
  const kern *x = a, *y = b;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return 0;
}

/* Compute kernels by (key, start, stream): runs of one kernel in time order. */
static int cmp_key(const void *a, const void *b) {
  const kern *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct span {
  int64_t a, b;
} span;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->a < y->a ? -1 : x->a > y->a;
}

/* Sets ov and by of every compute kernel in c[0..nc) from the NCCL kernels
 * g[0..ng) (sorted by device and start; pmax = running maximum of their ends
 * within a device). */
static int overlap_all(sc_interf_data *d, kern *c, size_t nc, const kern *g, size_t ng,
                       const int64_t *pmax) {
  span *sp = NULL;
  size_t sp_cap = 0;
  for (size_t i = 0; i < nc; i++) {
    kern *k = &c[i];
    int64_t t1 = k->t0 + k->dur;
    /* The device's segment, then the first NCCL kernel starting at or after t1. */
    size_t lo = 0, hi = ng;
    while (lo < hi) {
      size_t m = (lo + hi) / 2;
      if (g[m].device < k->device) lo = m + 1;
      else hi = m;
    }
    size_t seg = lo;
    hi = ng;
    while (lo < hi) {
      size_t m = (lo + hi) / 2;
      if (g[m].device < k->device || (g[m].device == k->device && g[m].t0 < t1)) lo = m + 1;
      else hi = m;
    }
    size_t nsp = 0;
    int64_t best = 0;
    k->by = UINT32_MAX;
    for (size_t j = lo; j-- > seg && pmax[j] > k->t0;) {
      if (g[j].stream == k->stream) continue;
      int64_t a = g[j].t0 > k->t0 ? g[j].t0 : k->t0;
      int64_t b = g[j].t0 + g[j].dur < t1 ? g[j].t0 + g[j].dur : t1;
      if (b <= a) continue;
      if (sc__grow(d->ctx, (void **)&sp, sizeof *sp, &sp_cap, nsp + 1)) {
        sc__free(d->ctx, sp, sp_cap * sizeof *sp);
        return SC_ENOMEM;
      }
      sp[nsp++] = (span){a, b};
      if (b - a >= best) { /* ties: the earlier kernel (visited last) */
        best = b - a;
        k->by = (uint32_t)j;
      }
    }
    if (nsp > 1) qsort(sp, nsp, sizeof *sp, cmp_span);
    int64_t ov = 0, end = INT64_MIN;
    for (size_t s = 0; s < nsp; s++) {
      int64_t a = sp[s].a > end ? sp[s].a : end;
      if (sp[s].b > a) ov += sp[s].b - a;
      if (sp[s].b > end) end = sp[s].b;
    }
    k->ov = ov;
    if (ov > 0) d->st.overlapped++;
  }
  sc__free(d->ctx, sp, sp_cap * sizeof *sp);
  return SC_OK;
}

/* Pairs the overlapped runs of each kernel c[lo..hi) (one key, time order)
 * with its runs alone. */
static int pair_kernel(sc_interf_data *d, const kern *c, size_t lo, size_t hi, const kern *g,
                       int64_t *alone) {
  size_t na = 0, nov = 0;
  for (size_t i = lo; i < hi; i++) {
    if (c[i].ov == 0) alone[na++] = c[i].dur;
    else nov++;
  }
  if (!nov) return SC_OK;
  if (na > 1) qsort(alone, na, sizeof *alone, cmp_i64);
  double med = 0, spread = 1e9;
  if (na) {
    med = na % 2 ? (double)alone[na / 2] : 0.5 * (double)(alone[na / 2 - 1] + alone[na / 2]);
    spread = ((double)alone[(3 * na) / 4] - (double)alone[na / 4]) / med;
  }
  const sc_interf_extract_options *o = &d->opt;
  if (na && med < o->min_kernel_us * 1e3) {
    d->st.dropped_short += (int64_t)nov;
    return SC_OK;
  }
  if ((int)na < o->min_alone || !(spread <= o->max_spread)) {
    d->st.dropped_alone += (int64_t)nov;
    return SC_OK;
  }
  for (size_t i = lo; i < hi; i++) {
    const kern *k = &c[i];
    if (!k->ov) continue;
    double r = 1.0 - (double)(k->dur - k->ov) / med;
    if (r > 1) r = 1;
    if (!(r >= o->min_overlap)) {
      d->st.dropped_overlap++;
      continue;
    }
    if ((double)k->dur < (1.0 - o->shape_tol) * (double)alone[0]) {
      d->st.dropped_shape++;
      continue;
    }
    const kern *n = &g[k->by];
    int64_t gpn = d->ndev > 0 ? d->ndev : 8; /* GPUs per node: deviceProperties, else HGX */
    int64_t span_ranks = n->group > 0 ? n->group : d->world;
    sc_interf_sample s = {k->kind, med, (double)k->dur, r,
                          {n->kind, n->bytes, span_ranks > gpn, n->group}, k->key,
                          (int)(d->st.traces - 1)}; /* counted before pairing */
    int rc = sc__interf_data_add(d, &s, 1);
    if (rc) return rc;
  }
  return SC_OK;
}

int sc_interf_trace_end(sc_interf_data *d) {
  if (!d || !d->active) return SC_EINVAL;
  int rc = d->rc;
  if (!rc && (rc = sc__feed_end(&d->feed))) rc = feed_failed(d, rc);
  if (!rc && (rc = sc__chrome_end(&d->c))) rc = chrome_failed(d, rc);
  trace_release(d);
  if (rc) return rc;
  d->st.traces++;
  /* NCCL kernels first (sorted by device and start), compute kernels after
   * (sorted by key): one array, two runs. */
  size_t ng = 0;
  for (size_t i = 0; i < d->nk; i++)
    if (d->k[i].nccl) {
      kern t = d->k[ng];
      d->k[ng++] = d->k[i];
      d->k[i] = t;
    }
  kern *g = d->k, *c = d->k ? d->k + ng : NULL;
  size_t nc = d->nk - ng;
  if (ng > 1) qsort(g, ng, sizeof *g, cmp_nccl);
  int64_t *pmax = sc__malloc(d->ctx, (ng ? ng : 1) * sizeof *pmax);
  int64_t *alone = sc__malloc(d->ctx, (nc ? nc : 1) * sizeof *alone);
  if (!pmax || !alone) rc = SC_ENOMEM;
  for (size_t j = 0; !rc && j < ng; j++) {
    int64_t e = g[j].t0 + g[j].dur;
    pmax[j] = j > 0 && g[j - 1].device == g[j].device && pmax[j - 1] > e ? pmax[j - 1] : e;
  }
  if (!rc) rc = overlap_all(d, c, nc, g, ng, pmax);
  if (!rc) {
    /* The NCCL index `by` must survive sorting the compute kernels: it points
     * into g, which stays put. */
    if (nc > 1) qsort(c, nc, sizeof *c, cmp_key);
    for (size_t lo = 0; !rc && lo < nc;) {
      size_t hi = lo + 1;
      while (hi < nc && c[hi].key == c[lo].key) hi++;
      rc = pair_kernel(d, c, lo, hi, g, alone);
      lo = hi;
    }
  }
  sc__free(d->ctx, pmax, pmax ? (ng ? ng : 1) * sizeof *pmax : 0);
  sc__free(d->ctx, alone, alone ? (nc ? nc : 1) * sizeof *alone : 0);
  d->nk = 0;
  return rc;
}

/* ------------------------------------------------------------ paired tables */

/* A table of paired measurements in the layout of the Echo-slowdown data
 * (validation/interference/echo-slowdown/ORIGIN.md): a CSV header naming at
 * least kShortName, ground_truth (ns alone), duration (ns in the training
 * run) and overlap_ratio (share of the run overlapped by NCCL, 0 to 1);
 * fields may be quoted ("" inside quotes). Each row with overlap_ratio > 0
 * is a pair as measured (the trace extraction's filters do not apply); the
 * overlapping op is an all-reduce of unknown size between two GPUs of one
 * node (the setup the data were measured in). One data set (trace index). */
enum { EC_NAME, EC_ALONE, EC_DUR, EC_RATIO, EC_N };

/* Next field of a CSV line at *p (advanced past the field and its comma);
 * copies it unquoted into out (cut at cap - 1). Returns 1 at end of line. */
static int csv_field(const char **p, const char *end, char *out, size_t cap, int *bad) {
  const char *q = *p;
  size_t n = 0;
  if (q < end && *q == '"') {
    q++;
    for (;;) {
      if (q >= end) { *bad = 1; break; }
      if (*q == '"') {
        if (q + 1 < end && q[1] == '"') q++;
        else { q++; break; }
      }
      if (n + 1 < cap) out[n++] = *q;
      q++;
    }
  } else {
    while (q < end && *q != ',' && *q != '\n' && *q != '\r') {
      if (n + 1 < cap) out[n++] = *q;
      q++;
    }
  }
  out[n] = 0;
  int eol = q >= end || *q == '\n' || *q == '\r';
  if (!eol && *q != ',') *bad = 1;
  if (!eol) q++;
  *p = q;
  return eol;
}

static int csv_number(const char *f, double *v) {
  char *e;
  *v = strtod(f, &e);
  return *f && !*e && isfinite(*v);
}

static int load_pair_table(sc_interf_data *d, const char *path) {
  char *text;
  size_t len, cap;
  int rc = sc__read_file(d->ctx, path, NULL, "table", (size_t)256 << 20, &text, &len, &cap);
  if (rc) return rc;
  const char *p = text, *end = text + len;
  int col[EC_N] = {-1, -1, -1, -1}, line = 1, bad = 0, ncol = 0;
  static const char *const names[EC_N] = {"kShortName", "ground_truth", "duration",
                                          "overlap_ratio"};
  char field[512], val[EC_N][512];
  for (int c = 0;; c++) { /* the header */
    int eol = csv_field(&p, end, field, sizeof field, &bad);
    for (int k = 0; k < EC_N; k++)
      if (!strcmp(field, names[k]) && col[k] < 0) col[k] = c;
    ncol = c + 1;
    if (eol || bad) break;
  }
  for (int k = 0; !rc && k < EC_N; k++)
    if (col[k] < 0 || bad)
      rc = sc__error(d->ctx, SC_EINVAL, "%s:1: %s", path,
                     bad ? "malformed CSV header" : "the header lacks a column of kShortName, "
                     "ground_truth, duration, overlap_ratio");
  int trace = (int)d->st.traces;
  while (!rc) {
    while (p < end && (*p == '\r' || *p == '\n')) {
      if (*p == '\n') line++;
      p++;
    }
    if (p >= end) break;
    int c = 0, eol = 0;
    for (int k = 0; k < EC_N; k++) val[k][0] = 0;
    while (!eol && !bad) {
      eol = csv_field(&p, end, field, sizeof field, &bad);
      for (int k = 0; k < EC_N; k++)
        if (c == col[k]) memcpy(val[k], field, sizeof field);
      c++;
    }
    if (bad || c != ncol) {
      rc = sc__error(d->ctx, SC_EINVAL, "%s:%d: %s", path, line,
                     bad ? "malformed CSV field" : "wrong number of fields");
      break;
    }
    double alone, dur, ratio;
    if (!csv_number(val[EC_ALONE], &alone) || !csv_number(val[EC_DUR], &dur) ||
        !csv_number(val[EC_RATIO], &ratio) || alone <= 0 || dur <= 0 || ratio < 0 || ratio > 1) {
      rc = sc__error(d->ctx, SC_EINVAL,
                     "%s:%d: ground_truth and duration must be positive ns and overlap_ratio in "
                     "[0, 1]", path, line);
      break;
    }
    d->st.kernels++;
    if (ratio > 0) {
      d->st.overlapped++;
      sc_interf_sample smp = {sc__kernel_kind(val[EC_NAME]), alone, dur, ratio,
                              {SC_ICOLL_ALLREDUCE, 0, 0, 2},
                              fnv(FNV_OFFSET, val[EC_NAME], strlen(val[EC_NAME])), trace};
      rc = sc__interf_data_add(d, &smp, 1);
    }
  }
  if (!rc) d->st.traces++;
  sc__free(d->ctx, text, cap);
  return rc;
}

int sc_interf_load_file(sc_interf_data *d, const char *path) {
  if (!d || !path) return SC_EINVAL;
  size_t pl = strlen(path);
  if (pl > 4 && !strcmp(path + pl - 4, ".csv")) return load_pair_table(d, path);
  FILE *f = fopen(path, "rb");
  if (!f) return sc__error(d->ctx, SC_EREAD, "%s: cannot open: %s", path, strerror(errno));
  int rc = sc_interf_trace_begin(d, path);
  char *buf = rc ? NULL : sc__malloc(d->ctx, READ_BYTES);
  if (!rc && !buf) rc = SC_ENOMEM;
  size_t n;
  while (!rc && (n = fread(buf, 1, READ_BYTES, f)) > 0) rc = sc_interf_trace_feed(d, buf, n);
  if (!rc && ferror(f)) rc = sc__error(d->ctx, SC_EREAD, "%s: read error", path);
  if (!rc) rc = sc_interf_trace_end(d);
  else trace_release(d);
  sc__free(d->ctx, buf, buf ? READ_BYTES : 0);
  fclose(f);
  return rc;
}
