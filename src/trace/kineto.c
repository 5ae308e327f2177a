/*
 * kineto.c: importer of PyTorch profiler (Kineto) Chrome-trace JSON, one
 * rank per file. Pass 1 takes the events and metadata the Chrome-trace
 * reader (chrome.c) hands out and keeps compact records of what matters (GPU
 * kernels/copies/memsets, the CUDA runtime calls that launch or wait for
 * them, profiler steps, c10d annotations, CUDA sync records,
 * distributedInfo, deviceProperties); everything else is dropped as it goes
 * by. At the end, pass 2 rebuilds the rank's program: GPU ops per stream,
 * NCCL kernels as collectives, the host launch timeline with its syncs, and
 * cross-stream dependencies (CUDA events when recorded, else inferred).
 */
#include "trace/chrome_int.h"
#include "trace/kinmod_int.h"
#include "trace/trace_int.h"
#include "ir/ir_int.h"

#include <stdio.h>
#include <stdlib.h>

/* One item of `size` bytes copied: the sizes sorted here as constants,
 * so that each is a few moves rather than a call. */
static inline void copy_item(char *d, const char *s, size_t size) {
  switch (size) {
  case 16: memcpy(d, s, 16); break;
  case 24: memcpy(d, s, 24); break;
  case 32: memcpy(d, s, 32); break;
  case 40: memcpy(d, s, 40); break;
  default: memcpy(d, s, size);
  }
}

/* Stable merge sort of p[0..n) through scratch from the context's
 * allocator: runs of MERGE_RUN items put in order by insertion, then merged
 * pairwise, back and forth between the array and the scratch; SC_OK or
 * SC_ENOMEM (no scratch: the items left as they were). Unlike the C library's qsort
 * (glibc's merge sort takes its scratch from malloc, outside the
 * allocator hook, and is stable only before 2.37), what it gives depends on
 * nothing but the items. */
#define MERGE_RUN 16
static int merge_sort(sc_ctx *ctx, char *p, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *tmp = sc__malloc(ctx, n * size), *src = p, *dst = tmp, item[64];
  if (!tmp) return SC_ENOMEM;
  for (size_t lo = 0; lo < n; lo += MERGE_RUN) {
    size_t hi = lo + MERGE_RUN < n ? lo + MERGE_RUN : n;
    for (size_t i = lo + 1; i < hi; i++) {
      size_t j = i;
      if (cmp(p + (j - 1) * size, p + j * size) <= 0) continue;
      copy_item(item, p + j * size, size);
      do {
        copy_item(p + j * size, p + (j - 1) * size, size);
        j--;
      } while (j > lo && cmp(p + (j - 1) * size, item) > 0);
      copy_item(p + j * size, item, size);
    }
  }
  for (size_t w = MERGE_RUN; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {
        if (cmp(src + a * size, src + b * size) <= 0) copy_item(dst + o++ * size, src + a++ * size, size);
        else copy_item(dst + o++ * size, src + b++ * size, size);
      }
      memcpy(dst + o * size, src + a * size, (mid - a) * size);
      o += mid - a;
      memcpy(dst + o * size, src + b * size, (hi - b) * size);
    }
    char *t = src;
    src = dst;
    dst = t;
  }
  if (src != p) memcpy(p, src, n * size);
  sc__free(ctx, tmp, n * size);
  return SC_OK;
}

/* Sorts n items (an empty array too: the C library's qsort does not take a
 * NULL base, even for zero items). Most of a trace's records come nearly
 * in order (by time, by correlation), so the items are first put in order
 * by insertion, which moves an item only past greater ones and so keeps
 * equal ones in the order they came; past a budget of moves (4 an item: an
 * array far from sorted) merge_sort finishes the job, stable too, so what
 * comes out is the one stable order of the items as they came. SC_OK or
 * SC_ENOMEM. */
static int sort_items(sc_ctx *ctx, void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *p = base, tmp[64];
  size_t budget = 4 * n + 64;
  if (size > sizeof tmp) { /* no record sorted here is */
    if (n > 1) qsort(base, n, size, cmp);
    return SC_OK;
  }
  for (size_t i = 1; i < n; i++) {
    size_t j = i;
    if (cmp(p + (j - 1) * size, p + j * size) <= 0) continue;
    copy_item(tmp, p + j * size, size);
    do {
      if (!budget--) {
        copy_item(p + j * size, tmp, size);
        return merge_sort(ctx, p, n, size, cmp);
      }
      copy_item(p + j * size, p + (j - 1) * size, size);
      j--;
    } while (j > 0 && cmp(p + (j - 1) * size, tmp) > 0);
    copy_item(p + j * size, tmp, size);
  }
  return SC_OK;
}

#define NAME_MAX_BYTES 4096

/* Bounds of an event's times (ns): timestamps within +-2^62 (Kineto's are
 * microseconds since the epoch, 1.7e18 ns in 2024), durations at most
 * SC_WORK_MAX (2^50 ns, 13 days), so sums and differences of times stay in
 * int64. Records of one kind kept per trace: SC_TRACE_MAX_RECORDS. */
#define TS_MAX ((int64_t)1 << 62)

/* Event categories we keep apart (old and new Kineto spellings). */
enum {
  CAT_OTHER = 0,
  CAT_KERNEL,
  CAT_MEMCPY,
  CAT_MEMSET,
  CAT_RUNTIME,
  CAT_CPU_OP,
  CAT_ANNOTATION,
  CAT_SYNC, /* cuda_sync: CUDA event / stream synchronisation activity */
  CAT_PYFUNC /* python_function: Python frames and nn.Module calls (with_stack / with_modules) */
};

/* Members of an event's args that we read: member ids, in the order of
 * arg_keys (the Chrome-trace reader numbers them from SC_CHROME_ARG). */
enum {
  A_DEVICE = SC_CHROME_ARG, A_STREAM, A_CORR, A_BYTES, A_IN_NELEMS, A_OUT_NELEMS, A_GROUP_SIZE, A_DTYPE,
  A_COLL_NAME, A_PG_RANKS, A_PG_NAME, A_INPUT_DIMS, A_INPUT_TYPE, A_WAIT_STREAM, A_WAIT_CORR, A_SEQ
};
static const char *const arg_keys[] = {"device", "stream", "correlation", "bytes", "In msg nelems",
                                       "Out msg nelems", "Group size", "dtype", "Collective name",
                                       "Process Group Ranks", "Process Group Name", "Input Dims",
                                       "Input type", "wait_on_stream",
                                       "wait_on_cuda_event_record_corr_id", "Sequence number", NULL};
/* distributedInfo members and top-level members we read. */
enum { D_RANK = 0, D_WORLD, D_PGCONFIG };
static const char *const dist_keys[] = {"rank", "world_size", "pg_config", NULL};
static const char *const meta_keys[] = {"deviceProperties", NULL};

/* Kinds of CUDA runtime calls we keep. */
enum { RT_LAUNCH = 0, RT_SYNC_STREAM, RT_SYNC_DEVICE, RT_SYNC_EVENT, RT_MEMCPY_SYNC, RT_EVENT_RECORD,
       RT_STREAM_WAIT };

/* A GPU activity. 64 bytes: a long trace holds one per kernel, and they
 * live beside the job's ops while those are built, so their size sets the
 * import's peak memory (docs/PERFORMANCE.md, section 4). */
typedef struct kgpu {
  int64_t ts, dur;      /* ns */
  int64_t corr;
  double bytes;         /* copies: bytes moved; NCCL: message bytes from args */
  uint32_t name;
  uint32_t group;       /* explicit group from args, or SC_JOB_NONE */
  /* pass 2 */
  uint32_t launch;      /* its launch call: index in kin.rt (sorted by corr), SC_JOB_NONE none */
  uint32_t host_op;     /* host op it depends on */
  uint32_t xdep;        /* cross-stream dependency (index in build.g), or SC_JOB_NONE */
  uint32_t iter;
  union {
    int32_t gsize;      /* "Group size" arg, 0 unknown: read until classify_collectives */
    uint32_t index;     /* final op index: set by emit_rank */
  } u;
  uint16_t slot;        /* its stream: index in kin.streams */
  uint8_t kind : 4;     /* SC_JOP_KERNEL / MEMCPY / MEMSET */
  uint8_t p2p : 2;      /* from args: 1 send, 2 recv */
  uint8_t nccl : 1;
  uint8_t coll;         /* from args: SC_COLL_*, SC_JCOLL_UNKNOWN */
} kgpu;
_Static_assert(sizeof(kgpu) == 64, "kgpu is one cache line");

/* The most GPU streams of one trace (kgpu.slot; job streams are 16-bit). */
#define MAX_STREAMS 65535

typedef struct krt {    /* a CUDA runtime call */
  int64_t ts, dur, corr, tid;
  uint8_t type;
} krt;

typedef struct kann {   /* a c10d annotation (nccl:<coll>, record_param_comms) */
  int64_t ts, end, tid;
  double bytes;         /* 0 unknown */
  uint32_t group;
  int32_t gsize;
  int8_t coll;          /* sc__coll_from_name */
  uint8_t from_args;    /* record_param_comms with full args */
} kann;

typedef struct ksync {  /* a cuda_sync "Stream Wait Event" record */
  int64_t stream, wait_stream, wait_corr, corr;
} ksync;

typedef struct kstep { int64_t ts, dur; } kstep;

typedef struct kdev { int64_t id; uint32_t name; } kdev;

typedef struct kpg { uint32_t name; uint32_t group; } kpg; /* pg_config entry */

/* The event being read. */
typedef struct kev {
  char ph;
  uint8_t cat;
  int has_ts, has_dur, has_stream, has_corr;
  int64_t ts, dur, tid, device, stream, corr, in_nelems, out_nelems, gsize, wait_stream, wait_corr;
  double bytes;
  const char *name;     /* the raw name in the event, or name_buf when it had escapes */
  size_t name_len;      /* at most NAME_MAX_BYTES - 1 */
  char name_buf[NAME_MAX_BYTES];
  char coll_name[64], dtype[32], pg_name[64], input_type[32];
  int64_t input_elems;  /* product of the first "Input Dims" entry; -1 none */
  int64_t seq;          /* "Sequence number" (has_seq) */
  int has_seq;
  int64_t *pg_ranks;    /* parsed "Process Group Ranks" */
  size_t npg_ranks, pg_ranks_cap;
  int has_pg_ranks;
  uint64_t offset;
} kev;

typedef struct kin {
  sc_chrome c;
  kev ev;
  /* distributedInfo */
  int64_t rank, world;
  int have_rank;
  uint32_t pg_cur_name;
  int64_t *pg_cur_ranks;
  size_t pg_cur_n, pg_cur_cap;
  int pg_cur_has_ranks;
  int64_t pg_cur_size;
  kpg *pgs;
  size_t npgs, pgs_cap;
  /* deviceProperties */
  kdev *devs;
  size_t ndevs, devs_cap;
  /* records */
  kgpu *gpu;
  size_t ngpu, gpu_cap;
  int64_t *streams;     /* GPU stream ids (device << 32 | stream) by slot */
  size_t nstreams, streams_cap;
  uint32_t *stream_hash; /* open addressing: 1 + slot, 0 empty; stream_hash_cap a power of 2 */
  size_t stream_hash_cap;
  uint16_t last_slot;   /* the slot found last */
  krt *rt;
  size_t nrt, rt_cap;
  kann *ann;
  size_t nann, ann_cap;
  ksync *sync;
  size_t nsync, sync_cap;
  kstep *steps;
  size_t nsteps, steps_cap;
  int64_t min_device;   /* device of the first GPU event */
  sc_kinmod km;         /* module calls, sequence numbers, optimizer ranges (kinmod.c) */
} kin;

/* ------------------------------------------------------------ names */

/* A name table entry with its length (looked up once per event). */
#define NAMED(lit, v) {lit, sizeof(lit) - 1, v}

static int category(const char *s, size_t n) {
  static const struct {
    const char *name;
    size_t n;
    int cat;
  } t[] = {NAMED("kernel", CAT_KERNEL),         NAMED("Kernel", CAT_KERNEL),
           NAMED("gpu_memcpy", CAT_MEMCPY),     NAMED("Memcpy", CAT_MEMCPY),
           NAMED("gpu_memset", CAT_MEMSET),     NAMED("Memset", CAT_MEMSET),
           NAMED("cuda_runtime", CAT_RUNTIME),  NAMED("cuda_driver", CAT_RUNTIME),
           NAMED("Runtime", CAT_RUNTIME),       NAMED("cpu_op", CAT_CPU_OP),
           NAMED("Operator", CAT_CPU_OP),       NAMED("user_annotation", CAT_ANNOTATION),
           NAMED("cuda_sync", CAT_SYNC),        NAMED("python_function", CAT_PYFUNC)};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (t[i].n == n && !memcmp(t[i].name, s, n)) return t[i].cat;
  return CAT_OTHER;
}

/* Runtime call kinds by name; -1 for calls we drop. */
static int runtime_kind(const char *s, size_t n) {
  if (n >= 16 && !memcmp(s, "cudaLaunchKernel", 16)) return RT_LAUNCH; /* also ExC */
  if (n >= 14 && !memcmp(s, "cuLaunchKernel", 14)) return RT_LAUNCH;
  if (n >= 23 && !memcmp(s, "cudaLaunchCooperativeKe", 23)) return RT_LAUNCH;
  static const struct {
    const char *name;
    size_t n;
    int kind;
  } t[] = {NAMED("cudaMemcpyAsync", RT_LAUNCH),      NAMED("cudaMemsetAsync", RT_LAUNCH),
           NAMED("cudaMemcpy2DAsync", RT_LAUNCH),    NAMED("cudaMemcpyPeerAsync", RT_LAUNCH),
           NAMED("cudaMemset", RT_LAUNCH),           NAMED("cudaGraphLaunch", RT_LAUNCH),
           NAMED("cuMemcpyAsync", RT_LAUNCH),        NAMED("cuMemsetD8Async", RT_LAUNCH),
           NAMED("cudaMemcpy", RT_MEMCPY_SYNC),      NAMED("cudaMemcpy2D", RT_MEMCPY_SYNC),
           NAMED("cudaStreamSynchronize", RT_SYNC_STREAM), NAMED("cudaDeviceSynchronize", RT_SYNC_DEVICE),
           NAMED("cudaEventSynchronize", RT_SYNC_EVENT),   NAMED("cudaEventRecord", RT_EVENT_RECORD),
           NAMED("cudaEventRecordWithFlags", RT_EVENT_RECORD), NAMED("cudaStreamWaitEvent", RT_STREAM_WAIT)};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (t[i].n == n && !memcmp(t[i].name, s, n)) return t[i].kind;
  return -1;
}

/* ------------------------------------------------------------ pass 1 */

static kin *K(sc_trace_reader *r) { return r->state; }

static int on_event(void *ud, const sc_chrome_event *ce);
static int on_item(void *ud, const sc_chrome_item *it);

/* tid is a member: its warnings come in document order with the args ones. */
static const sc_chrome_spec kineto_spec = {
    .members = 1u << SC_CHROME_TID,
    .arg_keys = arg_keys,
    .dist_keys = dist_keys,
    .meta_keys = meta_keys,
    /* read only for c10d "nccl:" annotations (end_event); ~19 kept tokens of every cpu_op otherwise */
    .name_args = 1u << (A_INPUT_DIMS - SC_CHROME_ARG) | 1u << (A_INPUT_TYPE - SC_CHROME_ARG),
    .name_prefix = "nccl:",
    .not_object = "not a Kineto trace: the top level is not an object",
    .ts_range = "timestamp out of range",
    .dur_range = "timestamp out of range",
    .event = on_event,
    .item = on_item};

static int kin_open(sc_trace_reader *r) {
  kin *k = sc__calloc(r->ctx, 1, sizeof *k);
  if (!k) return SC_ENOMEM;
  int rc = sc__chrome_init(&k->c, r->ctx, &kineto_spec, r);
  if (rc) {
    sc__free(r->ctx, k, sizeof *k);
    return rc;
  }
  k->rank = -1;
  k->min_device = -1;
  r->state = k;
  return SC_OK;
}

#define FREE_ARR(ctx, p, cap) sc__free(ctx, p, (cap) * sizeof *(p))

static void kin_close(sc_trace_reader *r) {
  kin *k = K(r);
  sc_ctx *ctx = r->ctx;
  sc__chrome_free(&k->c);
  FREE_ARR(ctx, k->ev.pg_ranks, k->ev.pg_ranks_cap);
  FREE_ARR(ctx, k->pg_cur_ranks, k->pg_cur_cap);
  FREE_ARR(ctx, k->pgs, k->pgs_cap);
  FREE_ARR(ctx, k->devs, k->devs_cap);
  FREE_ARR(ctx, k->gpu, k->gpu_cap);
  FREE_ARR(ctx, k->streams, k->streams_cap);
  FREE_ARR(ctx, k->stream_hash, k->stream_hash_cap);
  FREE_ARR(ctx, k->rt, k->rt_cap);
  FREE_ARR(ctx, k->ann, k->ann_cap);
  FREE_ARR(ctx, k->sync, k->sync_cap);
  FREE_ARR(ctx, k->steps, k->steps_cap);
  sc__kinmod_free(ctx, &k->km);
  sc__free(ctx, k, sizeof *k);
  r->state = NULL;
}

/* Copies a string token, decoding escapes, into dst (always terminated). */
static size_t tok_str(const sc_jtok *t, char *dst, size_t cap) {
  if (!t->escaped) {
    size_t n = t->n < cap - 1 ? t->n : cap - 1;
    memcpy(dst, t->s, n);
    dst[n] = 0;
    return n;
  }
  size_t n = sc__json_unescape(t->s, t->n, dst, cap);
  return n < cap - 1 ? n : cap - 1;
}

static int tok_i64(sc_trace_reader *r, const sc_jtok *t, int64_t *v, const char *what) {
  if (t->type != SC_JT_NUMBER) return 0; /* strings, null: treated as absent */
  if (sc__json_int(t->s, t->n, v)) {
    sc__job_warn(r->job, "%s: non-integer \"%s\" ignored", r->name, what);
    return 0;
  }
  return 1;
}

/* Parses "[0, 1, 2]" (the string form of Process Group Ranks) into ev. */
static int parse_rank_list(sc_trace_reader *r, kev *e, const char *s, size_t n) {
  e->npg_ranks = 0;
  e->has_pg_ranks = 1;
  for (size_t i = 0; i < n;) {
    if (s[i] < '0' || s[i] > '9') {
      i++;
      continue;
    }
    int64_t v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (v >= SC_JOB_MAX_WORLD) return SC_OK; /* not a rank: ignore the rest */
      v = v * 10 + (s[i++] - '0');
    }
    if ((int64_t)e->npg_ranks >= SC_JOB_MAX_WORLD) { /* more entries than ranks: not a rank list */
      e->npg_ranks = 0;
      return SC_OK;
    }
    if (sc__grow(r->ctx, (void **)&e->pg_ranks, sizeof *e->pg_ranks, &e->pg_ranks_cap,
                 e->npg_ranks + 1))
      return SC_ENOMEM;
    e->pg_ranks[e->npg_ranks++] = v;
  }
  return SC_OK;
}

#define PUSH(ctx, arr, n, cap, item) sc__trace_push(ctx, (void **)&(arr), sizeof *(arr), &(n), &(cap), item)

/* PUSH of an event record, at most SC_TRACE_MAX_RECORDS of one kind. */
#define KEEP(r, arr, n, cap, item, what)                                                        \
  ((n) >= SC_TRACE_MAX_RECORDS ? sc__trace_fail(r, SC_EINVAL, K(r)->ev.offset,                  \
                                                "more than %lld %s events: too many for one "   \
                                                "rank's trace (profile fewer steps)",          \
                                                (long long)SC_TRACE_MAX_RECORDS, what)          \
                               : PUSH((r)->ctx, arr, n, cap, item))

static int starts_with(const char *s, size_t n, const char *p) {
  size_t k = strlen(p);
  return n >= k && !memcmp(s, p, k);
}

/* Group id for explicit ranks, or SC_JOB_NONE. A job past its group
 * bounds is an error at the event. */
static int args_group(sc_trace_reader *r, kev *e, uint32_t *group) {
  *group = SC_JOB_NONE;
  if (!e->has_pg_ranks || !e->npg_ranks) return SC_OK;
  uint32_t name = 0;
  if (e->pg_name[0] && sc__job_intern(r->job, e->pg_name, strlen(e->pg_name), &name)) return SC_ENOMEM;
  int rc = sc__job_group(r->job, e->pg_ranks, e->npg_ranks, name, group);
  if (rc == SC_EINVAL) return sc__trace_fail(r, rc, e->offset, "%s", sc_errmsg(r->ctx));
  return rc;
}

static size_t stream_hash_at(int64_t id, size_t cap) {
  uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15u;
  return (size_t)(h >> 32) & (cap - 1);
}

/* The slot of GPU stream id (device << 32 | stream), added when new. */
static int stream_slot(sc_trace_reader *r, int64_t id, uint16_t *slot) {
  kin *k = K(r);
  if (k->nstreams && k->streams[k->last_slot] == id) { /* the common case: the same stream again */
    *slot = k->last_slot;
    return SC_OK;
  }
  size_t cap = k->stream_hash_cap;
  for (size_t h = cap ? stream_hash_at(id, cap) : 0; cap && k->stream_hash[h]; h = (h + 1) & (cap - 1))
    if (k->streams[k->stream_hash[h] - 1] == id) {
      *slot = k->last_slot = (uint16_t)(k->stream_hash[h] - 1);
      return SC_OK;
    }
  if (k->nstreams >= MAX_STREAMS)
    return sc__trace_fail(r, SC_EINVAL, k->ev.offset, "more than %d GPU streams in one trace", MAX_STREAMS);
  if (PUSH(r->ctx, k->streams, k->nstreams, k->streams_cap, &id)) return SC_ENOMEM;
  if (2 * k->nstreams > cap) { /* rehash at half full */
    size_t ncap = cap ? 2 * cap : 64;
    uint32_t *t = sc__calloc(r->ctx, ncap, sizeof *t);
    if (!t) return SC_ENOMEM;
    for (size_t i = 0; i < k->nstreams; i++) {
      size_t h = stream_hash_at(k->streams[i], ncap);
      while (t[h]) h = (h + 1) & (ncap - 1);
      t[h] = (uint32_t)(i + 1);
    }
    FREE_ARR(r->ctx, k->stream_hash, k->stream_hash_cap);
    k->stream_hash = t;
    k->stream_hash_cap = ncap;
  } else {
    size_t h = stream_hash_at(id, cap);
    while (k->stream_hash[h]) h = (h + 1) & (cap - 1);
    k->stream_hash[h] = (uint32_t)k->nstreams;
  }
  *slot = k->last_slot = (uint16_t)(k->nstreams - 1);
  return SC_OK;
}

/* A complete event: keep a compact record of it if it matters. */
/* Module calls, operators with a sequence number, backward nodes and the
 * optimizer's ranges (kinmod.c keeps what is one of them). */
static int module_record(sc_trace_reader *r, const kev *e) {
  int rc = sc__kinmod_keep(r->ctx, r->job, &K(r)->km, e->name, e->name_len, e->ts, e->has_dur ? e->dur : 0,
                           e->tid, e->has_seq, e->seq, SC_TRACE_MAX_RECORDS);
  if (rc == SC_EINVAL)
    return sc__trace_fail(r, SC_EINVAL, e->offset,
                          "more than %lld module, operator or optimizer ranges: too many for one rank's trace "
                          "(profile fewer steps)", (long long)SC_TRACE_MAX_RECORDS);
  return rc;
}

static int end_event(sc_trace_reader *r) {
  kin *k = K(r);
  kev *e = &k->ev;
  int rc = SC_OK;
  if (e->ph != 'X') return SC_OK;
  switch (e->cat) {
  case CAT_KERNEL:
  case CAT_MEMCPY:
  case CAT_MEMSET: {
    if (!e->has_ts || !e->has_dur || !e->has_stream) {
      sc__job_warn(r->job, "%s: GPU event without ts, dur or args.stream ignored", r->name);
      return SC_OK;
    }
    if (e->dur < 0) {
      sc__job_warn(r->job, "%s: GPU event with a negative duration set to 0", r->name);
      e->dur = 0;
    }
    kgpu g;
    memset(&g, 0, sizeof g);
    g.ts = e->ts;
    g.dur = e->dur;
    if ((rc = stream_slot(r, (e->device << 32) | (e->stream & 0xffffffff), &g.slot))) return rc;
    g.corr = e->has_corr ? e->corr : -1;
    g.kind = e->cat == CAT_KERNEL ? SC_JOP_KERNEL : e->cat == CAT_MEMCPY ? SC_JOP_MEMCPY : SC_JOP_MEMSET;
    g.coll = SC_JCOLL_UNKNOWN;
    g.group = SC_JOB_NONE;
    if (k->min_device < 0) k->min_device = e->device;
    if (g.kind != SC_JOP_KERNEL) g.bytes = e->bytes;
    if (g.kind == SC_JOP_KERNEL && starts_with(e->name, e->name_len, "nccl")) {
      g.nccl = 1;
      if (e->coll_name[0]) {
        int c = sc__coll_from_name(e->coll_name, strlen(e->coll_name));
        if (c >= 0) g.coll = (uint8_t)c;
        else if (c == -1) g.p2p = strstr(e->coll_name, "recv") ? 2 : 1;
      }
      double es = sc__dtype_bytes(e->dtype, strlen(e->dtype));
      int64_t nel = g.coll == SC_COLL_ALLGATHER ? e->out_nelems : e->in_nelems;
      if (nel > 0 && es > 0) g.bytes = (double)nel * es;
      g.u.gsize = e->gsize > 0 && e->gsize < INT32_MAX ? (int32_t)e->gsize : 0;
      if ((rc = args_group(r, e, &g.group))) return rc;
      if (g.group == SC_JOB_NONE && e->pg_name[0]) {
        uint32_t id;
        if (sc__job_intern(r->job, e->pg_name, strlen(e->pg_name), &id)) return SC_ENOMEM;
        for (size_t i = 0; i < k->npgs; i++)
          if (k->pgs[i].name == id) g.group = k->pgs[i].group;
      }
    }
    if ((rc = sc__job_intern(r->job, e->name, e->name_len, &g.name))) return rc;
    return KEEP(r, k->gpu, k->ngpu, k->gpu_cap, &g, "GPU");
  }
  case CAT_RUNTIME: {
    int kind = runtime_kind(e->name, e->name_len);
    if (kind < 0 || !e->has_ts) return SC_OK;
    krt t = {e->ts, e->has_dur && e->dur > 0 ? e->dur : 0, e->has_corr ? e->corr : -1, e->tid,
             (uint8_t)kind};
    return KEEP(r, k->rt, k->nrt, k->rt_cap, &t, "CUDA runtime");
  }
  case CAT_PYFUNC:
    if (!e->has_ts) return SC_OK;
    return module_record(r, e);
  case CAT_ANNOTATION:
  case CAT_CPU_OP: {
    if (!e->has_ts) return SC_OK;
    if ((rc = module_record(r, e))) return rc;
    if (e->cat == CAT_ANNOTATION && starts_with(e->name, e->name_len, "ProfilerStep#")) {
      kstep s = {e->ts, e->has_dur ? e->dur : 0};
      return KEEP(r, k->steps, k->nsteps, k->steps_cap, &s, "ProfilerStep");
    }
    int from_args = e->coll_name[0] != 0 && starts_with(e->name, e->name_len, "record_param_comms");
    if (!from_args && !starts_with(e->name, e->name_len, "nccl:")) return SC_OK;
    kann a;
    memset(&a, 0, sizeof a);
    a.ts = e->ts;
    a.end = e->ts + (e->has_dur && e->dur > 0 ? e->dur : 0);
    a.tid = e->tid;
    a.from_args = (uint8_t)from_args;
    a.group = SC_JOB_NONE;
    if (from_args) {
      a.coll = (int8_t)sc__coll_from_name(e->coll_name, strlen(e->coll_name));
      double es = sc__dtype_bytes(e->dtype, strlen(e->dtype));
      int64_t nel = a.coll == SC_COLL_ALLGATHER ? e->out_nelems : e->in_nelems;
      if (nel > 0 && es > 0) a.bytes = (double)nel * es;
      a.gsize = e->gsize > 0 && e->gsize < INT32_MAX ? (int32_t)e->gsize : 0;
      if ((rc = args_group(r, e, &a.group))) return rc;
    } else {
      a.coll = (int8_t)sc__coll_from_name(e->name, e->name_len);
      /* c10d records the op's input tensors: the buffer for all-reduce,
       * broadcast, all-to-all and reduce-scatter (the nccl-tests size),
       * one rank's share for all-gather (scaled by the group size later). */
      double es = sc__dtype_bytes(e->input_type, strlen(e->input_type));
      if (e->input_elems > 0 && es > 0) a.bytes = (double)e->input_elems * es;
    }
    return KEEP(r, k->ann, k->nann, k->ann_cap, &a, "c10d annotation");
  }
  case CAT_SYNC: {
    /* Kineto names CUPTI synchronisation records by type; only "Stream Wait
     * Event" records a cross-stream edge (stream waits on wait_on_stream). */
    if (!(e->name_len == 17 && !memcmp(e->name, "Stream Wait Event", 17))) return SC_OK;
    if (!e->has_stream || e->wait_stream < 0 || e->wait_corr < 0) return SC_OK;
    ksync s = {(e->device << 32) | (e->stream & 0xffffffff),
               (e->device << 32) | (e->wait_stream & 0xffffffff), e->wait_corr,
               e->has_corr ? e->corr : -1};
    return KEEP(r, k->sync, k->nsync, k->sync_cap, &s, "cuda_sync");
  }
  }
  return SC_OK;
}

static void reset_event(kev *e, uint64_t off) {
  e->ph = 0;
  e->cat = CAT_OTHER;
  e->has_ts = e->has_dur = e->has_stream = e->has_corr = 0;
  e->ts = e->dur = e->device = e->stream = e->corr = 0;
  e->tid = INT64_MIN;
  e->in_nelems = e->out_nelems = e->gsize = 0;
  e->wait_stream = e->wait_corr = -1;
  e->bytes = 0;
  e->name = e->name_buf;
  e->name_len = 0;
  e->name_buf[0] = e->coll_name[0] = e->dtype[0] = e->pg_name[0] = e->input_type[0] = 0;
  e->input_elems = -1;
  e->seq = -1;
  e->has_seq = 0;
  e->npg_ranks = 0;
  e->has_pg_ranks = 0;
  e->offset = off;
}

/* "Input Dims" (v, n tokens): the element count of its first array entry,
 * the one c10d records a collective's input tensor in. Non-array entries
 * before it, and containers inside it, are passed over. */
static void input_dims(kev *e, const sc_jtok *v, size_t n) {
  if (v[0].type != SC_JT_ARR_BEGIN) return;
  int state = 1; /* 1: before the first inner array, 2: inside it, 3: after */
  for (size_t i = 1; i < n;) {
    const sc_jtok *t = &v[i];
    if (state == 1 && t->depth == 1 && t->type == SC_JT_ARR_BEGIN) {
      state = 2;
      e->input_elems = 1;
    } else if (state == 2 && t->depth == 2 && t->type == SC_JT_NUMBER) {
      int64_t x;
      if (!sc__json_int(t->s, t->n, &x) && x >= 0 && (x == 0 || e->input_elems <= INT64_MAX / x))
        e->input_elems *= x;
      else e->input_elems = -1;
    } else if (state == 2 && t->depth == 1 && t->type == SC_JT_ARR_END) {
      state = 3;
    } else if (t->depth > 0) {
      i = sc__chrome_next(v, n, i);
      continue;
    }
    i++;
  }
}

/* "Input type" (v, n tokens): its first string entry. */
static void input_type(kev *e, const sc_jtok *v, size_t n) {
  if (v[0].type != SC_JT_ARR_BEGIN) return;
  for (size_t i = 1; i < n; i = sc__chrome_next(v, n, i))
    if (v[i].depth == 1 && v[i].type == SC_JT_STRING) {
      tok_str(&v[i], e->input_type, sizeof e->input_type);
      return;
    }
}

/* A kept member of the event (id key, value tokens v[0..n)): its value into
 * e. Scalars where a scalar is read; containers only for Input Dims / type. */
static int event_value(sc_trace_reader *r, kev *e, int key, const sc_jtok *v, size_t n) {
  const sc_jtok *t = v;
  int str = t->type == SC_JT_STRING;
  if (key == A_INPUT_DIMS) {
    input_dims(e, v, n);
    return SC_OK;
  }
  if (key == A_INPUT_TYPE) {
    input_type(e, v, n);
    return SC_OK;
  }
  if (t->type == SC_JT_OBJ_BEGIN || t->type == SC_JT_ARR_BEGIN) return SC_OK;
  switch (key) {
  case SC_CHROME_TID:
    if (t->type == SC_JT_NUMBER) tok_i64(r, t, &e->tid, "tid");
    break;
  case A_DEVICE:
    tok_i64(r, t, &e->device, "device");
    if (e->device < 0 || e->device > 0xffff) e->device = 0;
    break;
  case A_STREAM:
    e->has_stream = tok_i64(r, t, &e->stream, "stream");
    break;
  case A_CORR:
    e->has_corr = tok_i64(r, t, &e->corr, "correlation");
    break;
  case A_BYTES: {
    int64_t x;
    if (tok_i64(r, t, &x, "bytes") && x > 0) e->bytes = (double)x;
    break;
  }
  case A_IN_NELEMS:
    tok_i64(r, t, &e->in_nelems, "In msg nelems");
    break;
  case A_OUT_NELEMS:
    tok_i64(r, t, &e->out_nelems, "Out msg nelems");
    break;
  case A_GROUP_SIZE:
    tok_i64(r, t, &e->gsize, "Group size");
    break;
  case A_WAIT_STREAM:
    tok_i64(r, t, &e->wait_stream, "wait_on_stream");
    break;
  case A_WAIT_CORR:
    tok_i64(r, t, &e->wait_corr, "wait_on_cuda_event_record_corr_id");
    break;
  case A_SEQ:
    e->has_seq = tok_i64(r, t, &e->seq, "Sequence number");
    break;
  case A_DTYPE:
    if (str) tok_str(t, e->dtype, sizeof e->dtype);
    break;
  case A_COLL_NAME:
    if (str) tok_str(t, e->coll_name, sizeof e->coll_name);
    break;
  case A_PG_NAME:
    if (str) tok_str(t, e->pg_name, sizeof e->pg_name);
    break;
  case A_PG_RANKS:
    if (str && !t->escaped) return parse_rank_list(r, e, t->s, t->n); /* a rank list has no escapes */
    break;
  }
  return SC_OK;
}

/* A completed event from the Chrome-trace reader: its members, in document
 * order (so warnings come in the order the values do), then the record. */
static int on_event(void *ud, const sc_chrome_event *ce) {
  sc_trace_reader *r = ud;
  kev *e = &K(r)->ev;
  reset_event(e, ce->offset);
  e->ph = ce->ph;
  if (ce->cat.s) e->cat = (uint8_t)category(ce->cat.s, ce->cat.n);
  if (ce->name.s && !ce->name.escaped) { /* used in place, cut as a copy would be */
    e->name = ce->name.s;
    e->name_len = ce->name.n < NAME_MAX_BYTES - 1 ? ce->name.n : NAME_MAX_BYTES - 1;
  } else if (ce->name.s) {
    size_t n = sc__json_unescape(ce->name.s, ce->name.n, e->name_buf, sizeof e->name_buf);
    e->name_len = n < NAME_MAX_BYTES - 1 ? n : NAME_MAX_BYTES - 1;
  }
  /* The last value wins: a later "ts" that is not a number hides one. */
  e->has_ts = ce->has_ts && !ce->ts_shadowed;
  e->ts = ce->ts_ns;
  e->has_dur = ce->has_dur && !ce->dur_shadowed;
  e->dur = ce->dur_ns;
  if (e->has_ts && (e->ts < -TS_MAX || e->ts > TS_MAX))
    return sc__trace_fail(r, SC_EINVAL, ce->offset, "ts: %lld ns out of range [%lld, %lld]", (long long)e->ts,
                          (long long)-TS_MAX, (long long)TS_MAX);
  if (e->has_dur && (e->dur < -TS_MAX || (double)e->dur > SC_WORK_MAX))
    return sc__trace_fail(r, SC_EINVAL, ce->offset, "dur: %lld ns out of range [%lld, %lld]", (long long)e->dur,
                          (long long)-TS_MAX, (long long)SC_WORK_MAX);
  for (size_t i = 0; i < ce->nm; i++) {
    const sc_chrome_member *m = &ce->m[i];
    int rc = event_value(r, e, m->key, sc__chrome_value(ce, m), m->count);
    if (rc) return rc;
  }
  return end_event(r);
}

/* distributedInfo: rank, world_size, pg_config (a list of process groups). */
enum { PG_NONE = 0, PG_NAME, PG_RANKS, PG_SIZE };

static int end_pg(sc_trace_reader *r) {
  kin *k = K(r);
  if (!k->pg_cur_has_ranks) return SC_OK;
  if (k->pg_cur_n == 0) {
    /* An empty list names every rank (the default group): kept by size. */
    if (k->pg_cur_size <= 0 || k->pg_cur_size > SC_JOB_MAX_WORLD) return SC_OK;
    for (int64_t i = 0; i < k->pg_cur_size; i++)
      if (PUSH(r->ctx, k->pg_cur_ranks, k->pg_cur_n, k->pg_cur_cap, &i)) return SC_ENOMEM;
  }
  kpg pg = {k->pg_cur_name, 0};
  int rc = sc__job_group(r->job, k->pg_cur_ranks, k->pg_cur_n, k->pg_cur_name, &pg.group);
  if (rc) return rc;
  return PUSH(r->ctx, k->pgs, k->npgs, k->pgs_cap, &pg);
}

static int key_is(const sc_jtok *t, const char *lit) {
  size_t n = strlen(lit);
  return t->n == n && !memcmp(t->s, lit, n);
}

/* pg_config (v, n tokens): [{"pg_name": .., "ranks": [..], "pg_size": ..}, ..];
 * each group is made when its object ends. Depths: entries 1, their
 * members 2, ranks 3; what is not read is passed over whole. */
static int pg_config(sc_trace_reader *r, const sc_jtok *v, size_t n) {
  kin *k = K(r);
  if (v[0].type != SC_JT_ARR_BEGIN) return SC_OK;
  int pg_key = PG_NONE;
  for (size_t i = 1; i < n;) {
    const sc_jtok *t = &v[i];
    int d = t->depth, rc = SC_OK;
    if (d == 1 && t->type == SC_JT_OBJ_BEGIN) {
      k->pg_cur_name = 0;
      k->pg_cur_n = 0;
      k->pg_cur_has_ranks = 0;
      k->pg_cur_size = 0;
    } else if (d == 1 && t->type == SC_JT_OBJ_END) {
      rc = end_pg(r);
    } else if (d == 2 && t->type == SC_JT_KEY) {
      pg_key = key_is(t, "pg_name") ? PG_NAME : key_is(t, "ranks") ? PG_RANKS
               : key_is(t, "pg_size") ? PG_SIZE : PG_NONE;
    } else if (d == 2 && pg_key == PG_RANKS && t->type == SC_JT_ARR_BEGIN) {
      k->pg_cur_has_ranks = 1;
    } else if (d == 2 && t->type == SC_JT_ARR_END) {
      /* end of ranks */
    } else if (d == 2 && pg_key == PG_NAME && t->type == SC_JT_STRING) {
      char tmp[64];
      size_t len = tok_str(t, tmp, sizeof tmp);
      if (sc__job_intern(r->job, tmp, len, &k->pg_cur_name)) rc = SC_ENOMEM;
    } else if (d == 2 && pg_key == PG_SIZE && t->type != SC_JT_OBJ_BEGIN && t->type != SC_JT_ARR_BEGIN) {
      tok_i64(r, t, &k->pg_cur_size, "pg_size");
    } else if (d == 3 && pg_key == PG_RANKS && t->type == SC_JT_NUMBER) {
      int64_t x;
      if (tok_i64(r, t, &x, "ranks") && x >= 0 && x < SC_JOB_MAX_WORLD)
        rc = PUSH(r->ctx, k->pg_cur_ranks, k->pg_cur_n, k->pg_cur_cap, &x);
    } else if (d > 0) {
      i = sc__chrome_next(v, n, i);
      continue;
    }
    if (rc) return rc;
    i++;
  }
  return SC_OK;
}

/* One deviceProperties entry (sc__trace_devices): kept for the rank's GPU. */
static int add_device(void *ud, int64_t id, uint32_t name) {
  sc_trace_reader *r = ud;
  kin *k = K(r);
  kdev d = {0};
  d.id = id;
  d.name = name;
  return PUSH(r->ctx, k->devs, k->ndevs, k->devs_cap, &d);
}

/* A distributedInfo member or deviceProperties from the Chrome-trace reader. */
static int on_item(void *ud, const sc_chrome_item *it) {
  sc_trace_reader *r = ud;
  kin *k = K(r);
  const sc_jtok *t = it->tok;
  if (it->section == SC_CHROME_META) return sc__trace_devices(r, it->tok, it->ntok, add_device, r);
  switch (it->key) {
  case D_RANK:
    if (tok_i64(r, t, &k->rank, "rank")) k->have_rank = 1;
    break;
  case D_WORLD:
    tok_i64(r, t, &k->world, "world_size");
    break;
  case D_PGCONFIG:
    return pg_config(r, it->tok, it->ntok);
  }
  return SC_OK;
}

static int kin_data(sc_trace_reader *r, const char *buf, size_t len) {
  sc_chrome *c = &K(r)->c;
  int rc = sc__chrome_feed(c, buf, len);
  return rc ? sc__trace_chrome_fail(r, c, rc) : SC_OK;
}

/* ------------------------------------------------------------ pass 2 */

static int cmp_rt_corr(const void *a, const void *b) {
  const krt *x = a, *y = b;
  if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
  return (x->ts > y->ts) - (x->ts < y->ts);
}
static int cmp_ann(const void *a, const void *b) {
  const kann *x = a, *y = b;
  return (x->ts > y->ts) - (x->ts < y->ts);
}
static int cmp_u16(const void *a, const void *b) {
  uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;
  return (x > y) - (x < y);
}
static int cmp_step(const void *a, const void *b) {
  const kstep *x = a, *y = b;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Sorting context for index arrays (qsort has none: a file-local pointer
 * would be process-wide state, so the keys are copied next to the index). */
typedef struct skey {
  int64_t a, b, c;
  uint32_t i;
} skey;
static int cmp_skey(const void *p, const void *q) {
  const skey *x = p, *y = q;
  if (x->a != y->a) return x->a < y->a ? -1 : 1;
  if (x->b != y->b) return x->b < y->b ? -1 : 1;
  if (x->c != y->c) return x->c < y->c ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* A one-key index entry (half an skey: bycorr and byend hold one per op). */
typedef struct ikey {
  int64_t a;
  uint32_t i;
} ikey;
static int cmp_ikey(const void *p, const void *q) {
  const ikey *x = p, *y = q;
  if (x->a != y->a) return x->a < y->a ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static const krt *find_corr(const kin *k, int64_t corr) {
  size_t lo = 0, hi = k->nrt;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (k->rt[mid].corr < corr) lo = mid + 1;
    else hi = mid;
  }
  return lo < k->nrt && k->rt[lo].corr == corr ? &k->rt[lo] : NULL;
}

/* The c10d annotation on thread tid enclosing time t, or NULL: the
 * innermost, unless an enclosing record_param_comms carries full args. */
static const kann *find_ann(const kin *k, int64_t tid, int64_t t) {
  size_t lo = 0, hi = k->nann;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (k->ann[mid].ts <= t) lo = mid + 1;
    else hi = mid;
  }
  const kann *best = NULL;
  /* Annotations of other threads interleave: look back a bounded way. */
  for (size_t n = 0; lo > 0 && n < 256; n++) {
    const kann *a = &k->ann[--lo];
    if (a->tid != tid || a->end < t) continue;
    if (!best) best = a;
    if (a->from_args) return a;
  }
  return best;
}

/* Parses the collective out of an NCCL kernel name: ncclKernel_<Coll>_...,
 * ncclDevKernel_<Coll>_... (NCCL's generated kernel names). */
static int coll_from_kernel(const char *name, int *p2p) {
  const char *s = strchr(name, '_');
  *p2p = 0;
  if (!s) return -2;
  s++;
  static const struct {
    const char *prefix;
    int coll;
  } t[] = {{"AllReduce", SC_COLL_ALLREDUCE},         {"AllGather", SC_COLL_ALLGATHER},
           {"ReduceScatter", SC_COLL_REDUCESCATTER}, {"Broadcast", SC_COLL_BROADCAST},
           {"Reduce_", SC_COLL_BROADCAST},           {"AllToAll", SC_COLL_ALLTOALL},
           {"SendRecv", -1},                         {"Send", -1},
           {"Recv", -1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strncmp(s, t[i].prefix, strlen(t[i].prefix))) {
      if (t[i].coll == -1) *p2p = strncmp(s, "Recv", 4) ? 1 : 2;
      return t[i].coll;
    }
  return -2;
}

/* The world group (all ranks), interned once. */
static int world_group(sc_trace_reader *r, int64_t world, uint32_t *g) {
  int64_t *ranks = sc__malloc(r->ctx, (size_t)world * sizeof *ranks);
  if (!ranks) return SC_ENOMEM;
  for (int64_t i = 0; i < world; i++) ranks[i] = i;
  uint32_t name;
  int rc = sc__job_intern(r->job, "world", 5, &name);
  if (!rc) rc = sc__job_group(r->job, ranks, (size_t)world, name, g);
  sc__free(r->ctx, ranks, (size_t)world * sizeof *ranks);
  return rc;
}

/* A group of `size` ranks containing `rank` when only the size is known:
 * the aligned block of consecutive ranks (how torch.distributed's
 * new_subgroups() lays groups out by default). */
static int block_group(sc_trace_reader *r, int64_t rank, int64_t size, uint32_t *g) {
  if (size <= 0 || size > SC_JOB_MAX_WORLD) return SC_EINVAL;
  int64_t *ranks = sc__malloc(r->ctx, (size_t)size * sizeof *ranks);
  if (!ranks) return SC_ENOMEM;
  int64_t first = rank - rank % size;
  for (int64_t i = 0; i < size; i++) ranks[i] = first + i;
  int rc = sc__job_group(r->job, ranks, (size_t)size, 0, g);
  sc__free(r->ctx, ranks, (size_t)size * sizeof *ranks);
  return rc;
}

/* Host-side event of the launch timeline. */
typedef struct hev {
  int64_t ts, end;
  int type;        /* RT_* */
  int64_t corr;
} hev;

static int cmp_hev(const void *a, const void *b) {
  const hev *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (x->corr > y->corr) - (x->corr < y->corr);
}

/* Tolerances of the dependency inference, ns. CPU and GPU timestamps come
 * from one clock (CUPTI converts GPU time to the host clock) but with
 * conversion jitter of about a microsecond; a stream wait releases the
 * waiting kernel a few microseconds after the producer ends (CUDA event
 * latency). A delay larger than SLACK_NS that a producer ending within
 * WAIT_NS before explains is taken as a cross-stream dependency. */
#define JITTER_NS 2000
#define SLACK_NS 5000
#define WAIT_NS 10000
/* An unexplained wait this long on a launched op is a stall kept as idle
 * time: fifty times the median launch-to-start latency (not jitter). Over
 * the HTA samples it halves the GPU-side deviation of the replay compared
 * with 1 ms, at an unchanged step-time error. */
#define STALL_NS 100000
/* Syncs and waits look back over at most this many ops (launch order). */
#define LOOKBACK 4096

typedef struct hop {   /* host op under construction */
  int64_t dur, start;
  int64_t end;         /* traced end (a sync's includes its wait), relative to w0 */
  int kind;            /* SC_JOP_HOST / SC_JOP_SYNC */
  uint32_t name;
  uint32_t dep_off, ndeps; /* into deps (gpu indices) */
} hop;

typedef struct build {
  sc_trace_reader *r;
  kin *k;
  int64_t rank, world;
  skey *keys;          /* [k->ngpu] scratch of select_ops */
  kgpu **g;            /* included GPU ops, in launch order */
  size_t ng;
  uint32_t *ord;       /* indices in g in (stream, start) order */
  uint16_t *sidx;      /* [k->nstreams] stream index in the rank by slot (included streams) */
  ikey *bycorr;        /* g by correlation id */
  sc_jrank *jr;        /* the rank being built */
  hop *h;
  size_t nh, h_cap;
  uint32_t *hdeps;
  size_t nhdeps, hdeps_cap;
  int64_t w0, w1;
} build;

static int host_op(build *b, int kind, int64_t start, int64_t dur, uint32_t name) {
  hop o = {dur < 0 ? 0 : dur, start, start + (dur < 0 ? 0 : dur), kind, name, (uint32_t)b->nhdeps, 0};
  return PUSH(b->r->ctx, b->h, b->nh, b->h_cap, &o);
}

static int host_dep(build *b, uint32_t gi) {
  if (PUSH(b->r->ctx, b->hdeps, b->nhdeps, b->hdeps_cap, &gi)) return SC_ENOMEM;
  b->h[b->nh - 1].ndeps++;
  return SC_OK;
}

static int64_t gend(const kgpu *g) { return g->ts + g->dur; }

/* Its launch call's start, end and thread (-1, -1, INT64_MIN without one);
 * valid until kin.rt is freed after cross_stream_deps. */
static int64_t launch_ts(const kin *k, const kgpu *g) { return g->launch != SC_JOB_NONE ? k->rt[g->launch].ts : -1; }
static int64_t launch_end(const kin *k, const kgpu *g) {
  return g->launch != SC_JOB_NONE ? k->rt[g->launch].ts + k->rt[g->launch].dur : -1;
}
static int64_t launch_tid(const kin *k, const kgpu *g) {
  return g->launch != SC_JOB_NONE ? k->rt[g->launch].tid : INT64_MIN;
}

/* Its stream's index in the rank (set by make_streams). */
static uint16_t gsidx(const build *b, const kgpu *g) { return b->sidx[g->slot]; }

/* The end of the op before ord[i] on its stream, or the window's start. */
static int64_t stream_prev_end(const build *b, size_t i) {
  const kgpu *g = b->g[b->ord[i]], *pr = i > 0 ? b->g[b->ord[i - 1]] : NULL;
  return pr && gsidx(b, pr) == gsidx(b, g) ? gend(pr) : b->w0;
}

/* Phase 1: the window (profiler steps) and the GPU ops inside it, in
 * launch order (b->g). */
static int select_ops(build *b) {
  sc_trace_reader *r = b->r;
  kin *k = b->k;
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  int rc = SC_OK;
  /* Profiler steps give the window and the iterations. */
  if ((rc = sort_items(ctx, k->steps, k->nsteps, sizeof *k->steps, cmp_step)) ||
      (rc = sort_items(ctx, k->rt, k->nrt, sizeof *k->rt, cmp_rt_corr)) ||
      (rc = sort_items(ctx, k->ann, k->nann, sizeof *k->ann, cmp_ann)))
    return rc;
  int64_t w0 = INT64_MAX, w1 = INT64_MIN;
  if (k->nsteps) {
    w0 = k->steps[0].ts;
    w1 = k->steps[k->nsteps - 1].ts + k->steps[k->nsteps - 1].dur;
  } else {
    sc__job_warn(job, "%s: no ProfilerStep annotations: the whole trace is taken as one step", r->name);
    for (size_t i = 0; i < k->ngpu; i++) {
      const kgpu *g = &k->gpu[i];
      const krt *l = g->corr >= 0 ? find_corr(k, g->corr) : NULL;
      int64_t s = l && l->ts < g->ts ? l->ts : g->ts;
      if (s < w0) w0 = s;
      if (gend(g) > w1) w1 = gend(g);
    }
  }
  /* Included GPU ops: launched inside the window (or, without a launch
   * record, started inside it). */
  b->w0 = w0;
  b->w1 = w1;
  skey *keys = b->keys = sc__malloc(ctx, k->ngpu * sizeof *keys);
  if (!keys) return SC_ENOMEM;
  size_t ng = 0;
  int64_t nolaunch = 0;
  for (size_t i = 0; i < k->ngpu; i++) {
    kgpu *g = &k->gpu[i];
    const krt *l = g->corr >= 0 ? find_corr(k, g->corr) : NULL;
    if (l && l->type != RT_LAUNCH && l->type != RT_MEMCPY_SYNC) l = NULL;
    g->launch = l ? (uint32_t)(l - k->rt) : SC_JOB_NONE;
    g->host_op = SC_JOB_NONE;
    int64_t anchor = l ? l->ts : g->ts;
    if (anchor < w0 || anchor > w1) continue;
    if (!l) nolaunch++;
    keys[ng++] = (skey){anchor, g->ts, 0, (uint32_t)i};
  }
  if (nolaunch)
    sc__job_warn_n(job, nolaunch, "%s: GPU ops without a launch record (launched before the profiler "
                                  "started?)", r->name);
  if (!ng) return sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes, "no GPU activity inside the profiler steps");
  if ((rc = sort_items(ctx, keys, ng, sizeof *keys, cmp_skey))) return rc;
  b->g = sc__malloc(ctx, ng * sizeof *b->g);
  if (!b->g) return SC_ENOMEM;
  for (size_t i = 0; i < ng; i++) b->g[i] = &k->gpu[keys[i].i];
  b->ng = ng;

  return rc;
}

/* Phase 2: iterations of the ops; collectives' type, size and group from
 * args, else the enclosing c10d annotation, else the kernel name. */
static int classify_collectives(build *b) {
  sc_trace_reader *r = b->r;
  kin *k = b->k;
  sc_job *job = r->job;
  int rc = SC_OK;
  size_t ng = b->ng;
  int64_t rank = b->rank, world = b->world;
  uint32_t wgroup = SC_JOB_NONE;
  int64_t unknown_nccl = 0, no_bytes = 0;
  for (size_t i = 0; i < ng && !rc; i++) {
    kgpu *g = b->g[i];
    g->xdep = SC_JOB_NONE;
    g->iter = 0;
    if (k->nsteps > 1) {
      int64_t a = g->launch != SC_JOB_NONE ? launch_ts(k, g) : g->ts;
      size_t lo = 0, hi = k->nsteps;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->steps[mid].ts <= a) lo = mid + 1;
        else hi = mid;
      }
      g->iter = lo ? (uint32_t)(lo - 1) : 0;
    }
    if (!g->nccl) continue;
    const kann *a = g->launch != SC_JOB_NONE ? find_ann(k, launch_tid(k, g), launch_ts(k, g)) : NULL;
    if (g->coll == SC_JCOLL_UNKNOWN && !g->p2p && a) {
      if (a->coll >= 0) g->coll = (uint8_t)a->coll;
      else if (a->coll == -1) g->p2p = 1;
      if (g->bytes <= 0 && a->bytes > 0) {
        g->bytes = a->bytes;
        /* An annotation's input is one rank's share of an all-gather:
         * marked negative here, scaled by the group size below. */
        if (!a->from_args && g->coll == SC_COLL_ALLGATHER) g->bytes = -g->bytes;
      }
      if (g->group == SC_JOB_NONE) g->group = a->group;
      if (!g->u.gsize) g->u.gsize = a->gsize;
    }
    if (g->coll == SC_JCOLL_UNKNOWN && !g->p2p) {
      int p2p;
      int c = coll_from_kernel(sc__job_str(job, g->name), &p2p);
      /* A bare SendRecv kernel also carries all-to-all: without a c10d
       * record it stays of unknown type, priced as traced. */
      if (c >= 0) g->coll = (uint8_t)c;
      else if (c == -1 && !strstr(sc__job_str(job, g->name), "SendRecv")) g->p2p = (uint8_t)p2p;
    }
    if (g->p2p) {
      sc__job_warn(job, "%s: NCCL point-to-point kernels have no peer in Kineto traces: kept as "
                        "transfers of unknown peer", r->name);
      continue;
    }
    if (g->coll == SC_JCOLL_UNKNOWN) unknown_nccl++;
    if (g->group == SC_JOB_NONE) {
      if (g->u.gsize > 0 && g->u.gsize != world && g->u.gsize <= SC_JOB_MAX_WORLD)
        rc = block_group(r, rank, g->u.gsize, &g->group);
      else {
        /* Without distributedInfo.world_size, sc_job_finish decides. */
        if (wgroup == SC_JOB_NONE) {
          if (k->world > 0) rc = world_group(r, world, &wgroup);
          else wgroup = SC_JOB_WORLD;
        }
        g->group = wgroup;
      }
    }
    if (!rc && g->bytes < 0) { /* all-gather from an annotation: input x group size */
      size_t n = g->group == SC_JOB_WORLD ? (size_t)world : job->groups[g->group].n;
      g->bytes = -g->bytes * (double)n;
    }
    if (g->bytes <= 0) no_bytes++;
  }
  if (unknown_nccl)
    sc__job_warn_n(job, unknown_nccl, "%s: NCCL kernels of unknown collective type (kept with their traced duration)", r->name);
  if (no_bytes) sc__job_warn_n(job, no_bytes, "%s: NCCL kernels without a message size (kept with their traced duration)", r->name);

  return rc;
}

/* Phase 3: the rank, its streams (host first, then GPU streams in
 * ascending id) and the GPU ops in (stream, start) order (b->ord). */
static int make_streams(build *b) {
  sc_trace_reader *r = b->r;
  kin *k = b->k;
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  int rc = SC_OK;
  size_t ng = b->ng;
  sc_jrank *jr = b->jr = sc__job_add_rank(job, b->rank);
  if (!jr) return SC_ENOMEM;
  skey *sk = NULL;
  b->sidx = sc__malloc(ctx, (k->nstreams ? k->nstreams : 1) * sizeof *b->sidx);
  if (!b->sidx) rc = SC_ENOMEM;
  if (!rc) {
    jr->source = r->name_id;
    jr->iterations = k->nsteps ? (int64_t)k->nsteps : 1;
    for (size_t i = 0; i < k->ndevs; i++)
      if (k->devs[i].id == (k->min_device < 0 ? 0 : k->min_device)) jr->gpu = k->devs[i].name;
    uint32_t hn;
    rc = sc__job_intern(job, "host", 4, &hn);
    int si = rc ? 0 : sc__jrank_stream(job, jr, -1, hn, 1);
    if (si < 0) rc = si;
  }
  if (!rc) {
    /* Order GPU ops by (stream, start): stream indices and final op order. */
    sk = sc__malloc(ctx, ng * sizeof *sk);
    if (!sk) rc = SC_ENOMEM;
    for (size_t i = 0; !rc && i < ng; i++)
      sk[i] = (skey){k->streams[b->g[i]->slot], b->g[i]->ts, launch_ts(k, b->g[i]), (uint32_t)i};
    if (!rc) rc = sort_items(ctx, sk, ng, sizeof *sk, cmp_skey);
    int64_t overlaps = 0;
    for (size_t i = 0; !rc && i < ng; i++) {
      kgpu *g = b->g[sk[i].i];
      if (i == 0 || sk[i - 1].a != sk[i].a) {
        char nm[64];
        int64_t dev = sk[i].a >> 32, st = sk[i].a & 0xffffffff;
        if (dev) snprintf(nm, sizeof nm, "gpu %lld stream %lld", (long long)dev, (long long)st);
        else snprintf(nm, sizeof nm, "stream %lld", (long long)st);
        uint32_t id;
        rc = sc__job_intern(job, nm, strlen(nm), &id);
        int si = rc ? 0 : sc__jrank_stream(job, jr, sk[i].a, id, 0);
        if (si < 0) rc = si;
      } else if (g->ts < gend(b->g[sk[i - 1].i])) overlaps++;
      b->sidx[g->slot] = (uint16_t)(jr->nstreams - 1);
    }
    if (overlaps)
      sc__job_warn_n(job, overlaps, "%s: ops overlapping the previous op of their stream (non-monotonic "
                        "timestamps; durations kept)", r->name);
  }
  /* Later phases need only the order (4 bytes an op instead of 32). */
  if (!rc) {
    b->ord = sc__malloc(ctx, (ng ? ng : 1) * sizeof *b->ord);
    if (!b->ord) rc = SC_ENOMEM;
    for (size_t i = 0; !rc && i < ng; i++) b->ord[i] = sk[i].i;
  }
  sc__free(ctx, sk, ng * sizeof *sk);

  return rc;
}

/* Phase 4: the host timeline: launches, synchronisations and the CPU time
 * between them, in time order (b->h); every GPU op gets its host op. */
static int host_timeline(build *b) {
  sc_trace_reader *r = b->r;
  kin *k = b->k;
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  int rc = SC_OK;
  size_t ng = b->ng;
  int64_t w0 = b->w0, w1 = b->w1;
  hev *hv = NULL;
  size_t nhv = 0, hv_cap = 0;
  for (size_t i = 0; !rc && i < k->nrt; i++) {
    const krt *t = &k->rt[i];
    if (t->ts < w0 || t->ts > w1) continue;
    if (t->type == RT_EVENT_RECORD || t->type == RT_STREAM_WAIT) continue;
    hev h = {t->ts, t->ts + t->dur, t->type, t->corr};
    rc = PUSH(ctx, hv, nhv, hv_cap, &h);
  }
  if (!rc) rc = sort_items(ctx, hv, nhv, sizeof *hv, cmp_hev);
  uint32_t n_launch = 0, n_sync = 0, n_tail = 0;
  if (!rc) rc = sc__job_intern(job, "launch", 6, &n_launch);
  if (!rc) rc = sc__job_intern(job, "sync", 4, &n_sync);
  if (!rc) rc = sc__job_intern(job, "cpu", 3, &n_tail);
  /* GPU ops by correlation, to link launches to what they launched. */
  ikey *bycorr = NULL;
  if (!rc) {
    bycorr = b->bycorr = sc__malloc(ctx, ng * sizeof *bycorr);
    if (!bycorr) rc = SC_ENOMEM;
    for (size_t i = 0; !rc && i < ng; i++) bycorr[i] = (ikey){b->g[i]->corr, (uint32_t)i};
    if (!rc) rc = sort_items(ctx, bycorr, ng, sizeof *bycorr, cmp_ikey);
  }
  /* Device syncs: the last op of each stream in the window (SC_JOB_NONE:
   * none yet) and the streams seen. */
  size_t ns = b->jr->nstreams;
  uint32_t *last_of = rc ? NULL : sc__malloc(ctx, ns * sizeof *last_of);
  uint16_t *touched = rc ? NULL : sc__malloc(ctx, (LOOKBACK < ns ? LOOKBACK : ns) * sizeof *touched);
  if (!rc && (!last_of || !touched)) rc = SC_ENOMEM;
  for (size_t s = 0; !rc && s < ns; s++) last_of[s] = SC_JOB_NONE;
  int64_t cursor = w0, n_blocking = 0;
  if (!rc) rc = host_op(b, SC_JOP_HOST, 0, 0, n_tail); /* the start: op 0 */
  size_t launched = 0; /* b->g[0..launched) were launched before the current host event */
  /* A launch that blocked until its own GPU op was done is a synchronous
   * copy: cudaMemcpyAsync to pageable memory (CUDA Runtime API, "API
   * synchronization behavior": device-to-pageable copies return once the
   * copy completes; pageable-to-device ones return once staged, so they
   * are not), or any launch call that returned only after its op ended. */
  for (size_t i = 0; !rc && i < nhv; i++) {
    hev *h = &hv[i];
    if (h->type != RT_LAUNCH) continue;
    size_t lo = 0, hi = ng;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (bycorr[mid].a < h->corr) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < ng && bycorr[lo].a == h->corr; lo++) {
      const kgpu *g = b->g[bycorr[lo].i];
      int pageable = g->kind == SC_JOP_MEMCPY && strstr(sc__job_str(job, g->name), "-> Pageable");
      if (pageable || (h->end - h->ts > WAIT_NS && h->end + JITTER_NS >= gend(g))) {
        h->type = RT_MEMCPY_SYNC;
        n_blocking++;
        break;
      }
    }
  }
  for (size_t i = 0; !rc && i < nhv; i++) {
    const hev *h = &hv[i];
    while (launched < ng && (b->g[launched]->launch != SC_JOB_NONE ? launch_ts(k, b->g[launched]) : b->g[launched]->ts) < h->ts)
      launched++;
    if (h->type == RT_LAUNCH || h->type == RT_MEMCPY_SYNC) {
      /* A launch returns at once; a blocking cudaMemcpy is a launch at its
       * start followed by a wait for the copy (below). */
      int64_t upto = h->type == RT_LAUNCH ? h->end : h->ts;
      int64_t end = upto > cursor ? upto : cursor;
      rc = host_op(b, SC_JOP_HOST, cursor - w0, end - cursor, n_launch);
      cursor = end;
      /* Every GPU op of this correlation (a graph launch has several). */
      size_t lo = 0, hi = ng;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bycorr[mid].a < h->corr) lo = mid + 1;
        else hi = mid;
      }
      for (; lo < ng && bycorr[lo].a == h->corr; lo++) b->g[bycorr[lo].i]->host_op = (uint32_t)(b->nh - 1);
      if (h->type == RT_LAUNCH || rc) continue;
    }
    /* A synchronisation: the host waited for GPU work. Device syncs wait
     * for every stream; for the others, the op whose end released the call
     * (latest end before the call returned, among ops launched before it). */
    if (h->ts > cursor) rc = host_op(b, SC_JOP_HOST, cursor - w0, h->ts - cursor, n_tail);
    if (rc) break;
    int64_t released = -1;
    rc = host_op(b, SC_JOP_SYNC, h->ts - w0, 0, n_sync);
    size_t stop = launched > LOOKBACK ? launched - LOOKBACK : 0;
    if (h->type == RT_MEMCPY_SYNC) {
      /* cudaMemcpy returns when its own copy is done. */
      size_t lo = 0, hi = ng;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bycorr[mid].a < h->corr) lo = mid + 1;
        else hi = mid;
      }
      for (; !rc && lo < ng && bycorr[lo].a == h->corr; lo++) {
        kgpu *g = b->g[bycorr[lo].i];
        rc = host_dep(b, bycorr[lo].i);
        if (gend(g) > released) released = gend(g);
      }
    } else if (h->type == RT_SYNC_DEVICE) {
      /* One dependency per stream, in stream order: its last op launched
       * before the call. One pass over the window (a per-stream scan would
       * cost streams x LOOKBACK per sync: hours for a crafted trace). */
      size_t nlast = 0;
      for (size_t j = launched; j > stop; j--) {
        const kgpu *g = b->g[j - 1];
        uint16_t si = gsidx(b, g);
        if (si == 0 || last_of[si] != SC_JOB_NONE) continue;
        last_of[si] = (uint32_t)(j - 1);
        touched[nlast++] = si;
      }
      if (!rc) rc = sort_items(ctx, touched, nlast, sizeof *touched, cmp_u16);
      for (size_t t = 0; t < nlast; t++) {
        uint32_t j = last_of[touched[t]];
        last_of[touched[t]] = SC_JOB_NONE;
        const kgpu *g = b->g[j];
        if (!rc && gend(g) > h->ts) {
          rc = host_dep(b, j);
          if (gend(g) > released) released = gend(g);
        }
      }
    } else {
      size_t best = SIZE_MAX;
      for (size_t j = launched; j > stop; j--) {
        const kgpu *g = b->g[j - 1];
        int64_t e = gend(g);
        if (e <= h->end + JITTER_NS && (best == SIZE_MAX || e > gend(b->g[best]))) best = j - 1;
      }
      if (best != SIZE_MAX && gend(b->g[best]) > h->ts) {
        rc = host_dep(b, (uint32_t)best);
        released = gend(b->g[best]);
      }
    }
    /* What the call took after its GPU work ended (wake-up), or all of it. */
    int64_t from = released > h->ts ? released : h->ts;
    b->h[b->nh - 1].dur = h->end > from ? h->end - from : 0;
    cursor = h->end > cursor ? h->end : cursor;
    b->h[b->nh - 1].end = cursor - w0;
  }
  if (!rc && w1 > cursor) rc = host_op(b, SC_JOP_HOST, cursor - w0, w1 - cursor, n_tail);
  if (n_blocking)
    sc__job_warn_n(job, n_blocking, "%s: launch calls that blocked until their GPU op ended (copies to "
                                    "pageable memory) modelled as synchronisations", r->name);
  if (!rc && b->nh == 0) rc = host_op(b, SC_JOP_HOST, 0, 0, n_tail);

  /* GPU ops without a launch record (launched before the profiler started,
   * or by a thread it did not see) hang off the empty start op 0; the time
   * their stream stood idle before them, which nothing traced explains, is
   * kept as an idle op in front of them (below). */
  for (size_t i = 0; !rc && i < ng; i++)
    if (b->g[i]->host_op == SC_JOB_NONE) b->g[i]->host_op = 0;

  sc__free(ctx, hv, hv_cap * sizeof *hv);
  sc__free(ctx, last_of, ns * sizeof *last_of);
  sc__free(ctx, touched, (LOOKBACK < ns ? LOOKBACK : ns) * sizeof *touched);
  return rc;
}

/* Phase 5: cross-stream dependencies, from CUDA event records when the
 * trace has them, else inferred from timing (see the tolerances above). */
static int cross_stream_deps(build *b) {
  sc_trace_reader *r = b->r;
  kin *k = b->k;
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  int rc = SC_OK;
  size_t ng = b->ng;
  int64_t w0 = b->w0;
  const uint32_t *ord = b->ord;
  const ikey *bycorr = b->bycorr;
  if (k->nsync) {
    /* Recorded CUDA events: producer = the last op launched on the waited
     * stream before the cudaEventRecord; consumer = the first op launched on
     * the waiting stream after the cudaStreamWaitEvent. */
    skey *bl = sc__malloc(ctx, ng * sizeof *bl);
    size_t nbl = 0;
    if (!bl) rc = SC_ENOMEM;
    for (size_t i = 0; !rc && i < ng; i++)
      if (b->g[i]->launch != SC_JOB_NONE)
        bl[nbl++] = (skey){k->streams[b->g[i]->slot], launch_ts(k, b->g[i]), 0, (uint32_t)i};
    if (!rc) rc = sort_items(ctx, bl, nbl, sizeof *bl, cmp_skey);
    for (size_t s = 0; !rc && s < k->nsync; s++) {
      const ksync *x = &k->sync[s];
      const krt *rec = find_corr(k, x->wait_corr), *wait = x->corr >= 0 ? find_corr(k, x->corr) : NULL;
      if (!rec || !wait) continue;
      /* Producer: last (wait_stream, launch <= record); consumer: first
       * (stream, launch >= wait). */
      size_t lo = 0, hi = nbl;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bl[mid].a < x->wait_stream || (bl[mid].a == x->wait_stream && bl[mid].b <= rec->ts)) lo = mid + 1;
        else hi = mid;
      }
      if (!lo || bl[lo - 1].a != x->wait_stream) continue;
      uint32_t prod = bl[lo - 1].i;
      lo = 0, hi = nbl;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bl[mid].a < x->stream || (bl[mid].a == x->stream && bl[mid].b < wait->ts)) lo = mid + 1;
        else hi = mid;
      }
      if (lo == nbl || bl[lo].a != x->stream) continue;
      uint32_t cons = bl[lo].i;
      if (gsidx(b, b->g[prod]) != gsidx(b, b->g[cons])) b->g[cons]->xdep = prod;
    }
    sc__free(ctx, bl, ng * sizeof *bl);
  } else {
    /* Inferred: an op that started later than its launch and its stream
     * predecessor explain was held by a wait; the producer is the op of
     * another stream, launched before it, whose end explains the start. */
    ikey *byend = sc__malloc(ctx, ng * sizeof *byend);
    if (!byend) rc = SC_ENOMEM;
    for (size_t i = 0; !rc && i < ng; i++) byend[i] = (ikey){gend(b->g[i]), (uint32_t)i};
    if (!rc) rc = sort_items(ctx, byend, ng, sizeof *byend, cmp_ikey);
    int64_t inferred = 0, host_waits = 0;
    /* syncs_before[h]: sync ops among host ops 0..h. */
    uint32_t *syncs_before = rc ? NULL : sc__malloc(ctx, (b->nh ? b->nh : 1) * sizeof *syncs_before);
    if (!rc && !syncs_before) rc = SC_ENOMEM;
    for (size_t h = 0, n = 0; !rc && h < b->nh; h++) {
      n += b->h[h].kind == SC_JOP_SYNC;
      syncs_before[h] = (uint32_t)n;
    }
    for (size_t i = 0; !rc && i < ng; i++) {
      kgpu *g = b->g[ord[i]];
      /* A kernel starts within ~2 us of its launch call's return on an idle
       * stream (median 1.7 us over the HTA sample traces). */
      int64_t ready = g->launch != SC_JOB_NONE ? launch_end(k, g) : g->ts;
      const kgpu *pr = i > 0 ? b->g[ord[i - 1]] : NULL;
      if (pr && gsidx(b, pr) == gsidx(b, g) && gend(pr) > ready) ready = gend(pr);
      if (g->ts <= ready + SLACK_NS) continue;
      size_t lo = 0, hi = ng;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (byend[mid].a <= g->ts + JITTER_NS) lo = mid + 1;
        else hi = mid;
      }
      int graph_node = 0;
      if (g->corr >= 0) {
        size_t a = 0, z = ng;
        while (a < z) {
          size_t mid = (a + z) / 2;
          if (bycorr[mid].a < g->corr) a = mid + 1;
          else z = mid;
        }
        graph_node = a + 1 < ng && bycorr[a].a == g->corr && bycorr[a + 1].a == g->corr;
      }
      for (size_t n = 0; lo > 0 && n < LOOKBACK; n++) {
        const ikey *c = &byend[--lo];
        if (c->a < g->ts - WAIT_NS) break;
        const kgpu *p = b->g[c->i];
        /* The producer was launched before g: CUPTI correlation ids grow with
         * launch order (also for ops launched before the profiler started,
         * which have no launch record); else the launch-ordered index. */
        int before = p->corr >= 0 && g->corr >= 0 ? p->corr < g->corr : c->i < ord[i];
        /* CUDA graph nodes (ops sharing their launch's correlation) wait on
         * events captured into the graph, recorded by later launches too. */
        if (gsidx(b, p) == gsidx(b, g) || !(before || graph_node)) continue;
        g->xdep = c->i;
        inferred++;
        break;
      }
      if (g->xdep != SC_JOB_NONE) continue;
      /* No GPU op explains the start, but the host did something just
       * before (a graph node released by a host-recorded event, a wait on
       * host work): the op waits for that host op instead. */
      int64_t t = g->ts - w0;
      size_t a = 0, z = b->nh;
      while (a < z) {
        size_t mid = (a + z) / 2;
        if (b->h[mid].end <= t + JITTER_NS) a = mid + 1;
        else z = mid;
      }
      /* Never past a sync: it may wait for work queued behind this op. */
      if (a > 0 && b->h[a - 1].end >= t - WAIT_NS && a - 1 > g->host_op &&
          syncs_before[a - 1] == syncs_before[g->host_op]) {
        g->host_op = (uint32_t)(a - 1);
        host_waits++;
      }
    }
    sc__free(ctx, byend, ng * sizeof *byend);
    sc__free(ctx, syncs_before, (b->nh ? b->nh : 1) * sizeof *syncs_before);
    if (host_waits)
      sc__job_warn_n(job, host_waits, "%s: ops that started right after a host call and after no GPU "
                                      "op: taken to wait for the host", r->name);
    if (inferred)
      sc__job_warn_n(job, inferred, "%s: cross-stream dependencies inferred from timing (the "
                                    "trace has no CUDA event records, cuda_sync)", r->name);
  }

  return rc;
}

/* Phase 6: the rank's ops: host ops (stream 0), then GPU ops stream by
 * stream, an idle op before each op that waited for something the trace
 * does not show. */
static int emit_rank(build *b) {
  sc_trace_reader *r = b->r;
  kin *k = b->k;
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  int rc = SC_OK;
  size_t ng = b->ng;
  int64_t w0 = b->w0, w1 = b->w1;
  const uint32_t *ord = b->ord;
  sc_jrank *jr = b->jr;
  uint8_t *idle = sc__calloc(ctx, ng ? ng : 1, sizeof *idle); /* 1: an idle op goes before ord[i] */
  if (!idle) return SC_ENOMEM;
  int64_t nidle = 0;
  double idle_ns = 0; /* summed over streams: may pass int64 */
  if (!rc) {
    /* An op that started well after everything it is known to wait for
     * (its launch or host wait, its stream predecessor, its cross-stream
     * producer) waited for something the trace does not show (work of
     * other processes, events we could not attribute, kernels launched
     * before the profiler started): that idle time of its stream is kept
     * as an idle op before it, so the replay does not run ahead. */
    uint32_t next = (uint32_t)b->nh;
    for (size_t i = 0; i < ng; i++) {
      kgpu *g = b->g[ord[i]];
      int64_t prev = stream_prev_end(b, i);
      int64_t ready = prev;
      if (b->h[g->host_op].end + w0 > ready) ready = b->h[g->host_op].end + w0;
      if (g->xdep != SC_JOB_NONE && gend(b->g[g->xdep]) > ready) ready = gend(b->g[g->xdep]);
      /* Short unexplained waits of launched ops are left alone: sampled
       * traces drop events, and the launch already anchors the op. */
      int64_t unexplained = g->ts - ready;
      if (unexplained > SLACK_NS && g->ts - prev > SLACK_NS &&
          (g->launch == SC_JOB_NONE || unexplained > STALL_NS)) {
        idle[i] = 1;
        idle_ns += (double)(g->ts - prev);
        next++;
        nidle++;
      }
      g->u.index = next++;
    }
  }
  if (nidle)
    sc__job_warn_n(job, nidle, "%s: GPU idle time the trace does not explain kept as idle ops "
                               "(%.3f ms per iteration, summed over streams)", r->name,
                   idle_ns / 1e6 / (double)(k->nsteps ? k->nsteps : 1));
  for (size_t i = 0; !rc && i < b->nh; i++) {
    const hop *h = &b->h[i];
    sc_jop op;
    memset(&op, 0, sizeof op);
    op.dur_ns = h->dur;
    op.start_ns = h->start;
    op.name = h->name;
    op.group = SC_JOB_NONE;
    op.peer = -1;
    op.kind = (uint8_t)h->kind;
    op.coll = SC_JCOLL_UNKNOWN;
    op.stream = 0;
    if (k->nsteps > 1) {
      int64_t t = h->start + w0;
      size_t lo = 0, hi = k->nsteps;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->steps[mid].ts <= t) lo = mid + 1;
        else hi = mid;
      }
      op.iter = lo ? (uint32_t)(lo - 1) : 0;
    }
    if (sc__jrank_op(job, jr, &op) < 0) rc = SC_ENOMEM;
    for (uint32_t d = 0; !rc && d < h->ndeps; d++) rc = sc__jrank_dep(job, jr, b->g[b->hdeps[h->dep_off + d]]->u.index);
  }
  /* The host ops are built: their scratch goes before the GPU ops are. */
  sc__free(ctx, b->h, b->h_cap * sizeof *b->h);
  sc__free(ctx, b->hdeps, b->hdeps_cap * sizeof *b->hdeps);
  b->h = NULL;
  b->hdeps = NULL;
  b->nh = b->h_cap = b->nhdeps = b->hdeps_cap = 0;
  sc__release_free(ctx);
  int64_t span_end = w1;
  uint32_t n_idle = 0;
  if (!rc && nidle) rc = sc__job_intern(job, "idle", 4, &n_idle);
  for (size_t i = 0; !rc && i < ng; i++) {
    const kgpu *g = b->g[ord[i]];
    sc_jop op;
    memset(&op, 0, sizeof op);
    if (idle[i]) {
      int64_t gap = g->ts - stream_prev_end(b, i); /* as computed above */
      op.dur_ns = gap;
      op.start_ns = g->ts - gap > w0 ? g->ts - gap - w0 : 0; /* -1 means unknown */
      op.name = n_idle;
      op.group = SC_JOB_NONE;
      op.peer = -1;
      op.iter = g->iter;
      op.stream = gsidx(b, g);
      op.coll = SC_JCOLL_UNKNOWN;
      op.kind = SC_JOP_IDLE;
      if (sc__jrank_op(job, jr, &op) < 0) rc = SC_ENOMEM;
      if (rc) break;
      memset(&op, 0, sizeof op);
    }
    op.dur_ns = g->dur;
    op.start_ns = g->ts > w0 ? g->ts - w0 : 0; /* ran before the first step: clamped */
    op.bytes = g->bytes > 0 ? g->bytes : 0;
    op.name = g->name;
    op.group = SC_JOB_NONE;
    op.peer = -1;
    op.iter = g->iter;
    op.stream = gsidx(b, g);
    op.coll = SC_JCOLL_UNKNOWN;
    op.kind = g->kind;
    if (g->nccl && g->p2p) op.kind = g->p2p == 2 ? SC_JOP_RECV : SC_JOP_SEND;
    else if (g->nccl) {
      op.kind = SC_JOP_COLL;
      op.coll = g->coll;
      op.group = g->group;
    }
    if (gend(g) > span_end) span_end = gend(g);
    if (sc__jrank_op(job, jr, &op) < 0) rc = SC_ENOMEM;
    if (!rc) rc = sc__jrank_dep(job, jr, (uint32_t)g->host_op);
    if (!rc && g->xdep != SC_JOB_NONE) rc = sc__jrank_dep(job, jr, b->g[g->xdep]->u.index);
  }
  if (!rc) jr->span_ns = span_end - w0;

  sc__free(ctx, idle, (ng ? ng : 1) * sizeof *idle);
  return rc;
}

/* Phase 6 (traces with module calls): each GPU op's module and pass from
 * its launch call (kinmod.c), in b->g order. */
static int module_tags(build *b, sc_jopmod **out) {
  sc_ctx *ctx = b->r->ctx;
  size_t ng = b->ng ? b->ng : 1;
  int64_t *ts = sc__malloc(ctx, 2 * ng * sizeof *ts), *tid = ts ? ts + ng : NULL;
  sc_jopmod *tags = sc__malloc(ctx, ng * sizeof *tags);
  int rc = ts && tags ? SC_OK : SC_ENOMEM;
  for (size_t i = 0; !rc && i < b->ng; i++) {
    const kgpu *g = b->g[i];
    ts[i] = g->launch != SC_JOB_NONE ? b->k->rt[g->launch].ts : 0;
    tid[i] = g->launch != SC_JOB_NONE ? b->k->rt[g->launch].tid : INT64_MIN;
  }
  if (!rc) rc = sc__kinmod_tag(ctx, b->r->job, b->jr, &b->k->km, ts, tid, b->ng, tags);
  sc__free(ctx, ts, 2 * ng * sizeof *ts);
  if (rc) {
    sc__free(ctx, tags, ng * sizeof *tags);
    return rc;
  }
  *out = tags;
  return SC_OK;
}

/* Builds the rank from the records (see the file comment). */
static int kin_build(sc_trace_reader *r) {
  kin *k = K(r);
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  int rc = SC_OK;
  if (!k->c.saw_events) return sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes, "no traceEvents array: not a Kineto trace");
  if (!k->ngpu)
    return sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes,
                          "no GPU kernels, copies or memsets (profile with CUDA activities)");
  /* Rank and world. */
  int64_t rank = k->have_rank ? k->rank : r->rank_hint;
  if (!k->have_rank) sc__job_warn(job, "%s: no distributedInfo.rank: rank %lld assumed", r->name, (long long)rank);
  if (rank < 0 || rank >= SC_JOB_MAX_WORLD)
    return sc__trace_fail(r, SC_EINVAL, 0, "distributedInfo.rank: %lld out of range [0, %lld]", (long long)rank,
                          (long long)SC_JOB_MAX_WORLD - 1);
  if (k->world < 0 || k->world > SC_JOB_MAX_WORLD) /* 0: not given */
    return sc__trace_fail(r, SC_EINVAL, 0, "distributedInfo.world_size: %lld out of range [1, %lld]",
                          (long long)k->world, (long long)SC_JOB_MAX_WORLD);
  if (k->world > 0) {
    if (job->world && job->world != k->world)
      return sc__trace_fail(r, SC_EINVAL, 0, "world_size %lld differs from %lld in earlier traces",
                            (long long)k->world, (long long)job->world);
    job->world = k->world;
  }
  int64_t world = job->world > rank ? job->world : rank + 1;

  build b;
  memset(&b, 0, sizeof b);
  b.r = r;
  b.k = k;
  b.rank = rank;
  b.world = world;
  /* Each phase's scratch is freed as soon as no later phase reads it, and
   * what the job's ops are not built from before they are (peak RSS is set
   * here: the records, the phases' arrays, the ops). */
  /* Without module calls the sequence ranges are never read (module_tags
   * is not called): they go before the phases' scratch comes. */
  if (!sc__kinmod_any(&k->km)) sc__kinmod_free(ctx, &k->km);
  rc = select_ops(&b);
  sc__free(ctx, b.keys, k->ngpu * sizeof *b.keys);
  b.keys = NULL;
  if (!rc) rc = classify_collectives(&b);
  if (!rc) rc = make_streams(&b);
  if (!rc) rc = host_timeline(&b);
  if (!rc) rc = cross_stream_deps(&b);
  sc_jopmod *tags = NULL;
  if (!rc && sc__kinmod_any(&k->km)) rc = module_tags(&b, &tags);
  /* The module and sequence ranges are read by module_tags only (one per
   * operator with a sequence number: 15 MB on the 1,003.8 MB trace). */
  sc__kinmod_free(ctx, &k->km);
  sc__free(ctx, b.bycorr, b.ng * sizeof *b.bycorr);
  b.bycorr = NULL;
  FREE_ARR(ctx, k->rt, k->rt_cap);
  FREE_ARR(ctx, k->ann, k->ann_cap);
  FREE_ARR(ctx, k->sync, k->sync_cap);
  k->rt = NULL;
  k->ann = NULL;
  k->sync = NULL;
  k->nrt = k->rt_cap = k->nann = k->ann_cap = k->nsync = k->sync_cap = 0;
  sc__release_free(ctx);
  if (!rc) rc = emit_rank(&b);
  /* Each GPU op and its launch get the module and pass of the call. */
  for (size_t i = 0; !rc && tags && i < b.ng; i++) {
    if (!tags[i].pass && !tags[i].module) continue;
    rc = sc__jrank_set_opmod(job, b.jr, b.g[i]->u.index, &tags[i]);
    if (!rc && b.g[i]->host_op) rc = sc__jrank_set_opmod(job, b.jr, b.g[i]->host_op, &tags[i]);
  }
  sc__free(ctx, tags, (b.ng ? b.ng : 1) * sizeof *tags);
  sc__free(ctx, b.ord, (b.ng ? b.ng : 1) * sizeof *b.ord);
  sc__free(ctx, b.sidx, (k->nstreams ? k->nstreams : 1) * sizeof *b.sidx);
  sc__free(ctx, b.g, b.ng * sizeof *b.g);
  sc__free(ctx, b.h, b.h_cap * sizeof *b.h);
  sc__free(ctx, b.hdeps, b.hdeps_cap * sizeof *b.hdeps);
  if (rc && b.jr) { /* drop the half-built rank */
    sc__jrank_free(ctx, &job->ranks[job->nranks - 1]);
    job->nranks--;
  }
  return rc;
}

static int kin_finish(sc_trace_reader *r) {
  sc_chrome *c = &K(r)->c;
  int rc = sc__chrome_end(c);
  if (rc) return sc__trace_chrome_fail(r, c, rc);
  return kin_build(r);
}

const sc_trace_handler sc__kineto_handler = {"kineto", kin_open, kin_data, kin_finish, kin_close};
