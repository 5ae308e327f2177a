/*
 * replay.c: profile-and-predict. Turns an imported job into explicit engine
 * programs (one per traced rank, explicit groups) and runs the engine:
 * compute, copies and host time keep their traced durations; collectives keep
 * theirs or are priced by the comm model for the group's placement, which is
 * how a trace is re-targeted to another data-parallel degree and cluster
 * (weak scaling: per-rank work fixed, groups resized, ranks outside the trace
 * folded onto the traced ones, as in the engine's rank folding).
 */
#include "stepcast/trace.h"

#include "analysis/replay_int.h"
#include "analysis/variation_int.h"
#include "engine/engine_int.h"
#include "engine/traceout_int.h"
#include "trace/job_int.h"
#include "trace/shard_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Engine slot of the host timeline. Not SC_ST_COMPUTE: the engine takes the
 * breakdown category of the compute slot from the op running there. */
#define HOST_SLOT (SC_ST_COUNT - 1)
#define GPU_SLOTS (SC_ST_COUNT - 1)

/* The engine prices every collective through the comm model's vtable; the
 * replay prices them itself (traced duration or model), so the run uses this
 * model, whose "bytes" are already nanoseconds. */
static double fixed_coll_ns(const sc_cost *c, int coll, double work, const sc_placement *pl) {
  (void)c, (void)coll, (void)pl;
  return work;
}
static double fixed_p2p_ns(const sc_cost *c, double work, int tier) {
  (void)c, (void)tier;
  return work;
}
static const sc_comm_model fixed_comm = {"replay-priced", 1, fixed_coll_ns, fixed_p2p_ns};

/* Names for the Chrome trace: the job's strings escaped for JSON and cut to
 * NAME_CUT bytes (the engine prints at most 300), whole escapes and UTF-8
 * characters only. */
#define NAME_CUT 256

typedef struct names {
  const sc_job *job;
  char *esc;           /* escaped strings, 0-terminated, by string id */
  uint32_t *off;
  size_t esc_len, nstr;
  uint32_t stream[64][SC_ST_COUNT]; /* string id + 1 per slot; first 64 programs */
} names;

static int escape_names(sc_ctx *ctx, names *n) {
  const sc_job *job = n->job;
  n->nstr = job->nstr;
  n->off = sc__malloc(ctx, (job->nstr ? job->nstr : 1) * sizeof *n->off);
  n->esc = sc__malloc(ctx, job->nstr * (NAME_CUT + 8) + 1);
  if (!n->off || !n->esc) return SC_ENOMEM;
  size_t len = 0;
  for (size_t i = 0; i < job->nstr; i++) {
    const unsigned char *p = (const unsigned char *)sc__job_str(job, (uint32_t)i);
    size_t start = len;
    n->off[i] = (uint32_t)len;
    while (*p) {
      char tmp[8];
      size_t k, take = 1;
      if (*p == '"' || *p == '\\') tmp[0] = '\\', tmp[1] = (char)*p, k = 2;
      else if (*p < 0x20) k = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", *p);
      else if (*p < 0x80) tmp[0] = (char)*p, k = 1;
      else { /* a UTF-8 sequence is copied whole */
        take = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1;
        for (k = 0; k < take && p[k]; k++) tmp[k] = (char)p[k];
        take = k;
      }
      if (len - start + k > NAME_CUT) break;
      memcpy(n->esc + len, tmp, k);
      len += k;
      p += take;
    }
    n->esc[len++] = 0;
  }
  n->esc_len = len;
  return SC_OK;
}

static void free_names(sc_ctx *ctx, names *n) {
  sc__free(ctx, n->off, (n->nstr ? n->nstr : 1) * sizeof *n->off);
  sc__free(ctx, n->esc, n->nstr * (NAME_CUT + 8) + 1);
}

static const char *escaped(const names *n, uint32_t id) {
  return n->esc && id < n->nstr ? n->esc + n->off[id] : "";
}

static const char *op_name(const void *ud, const sc_op *op) {
  return escaped(ud, op->mb); /* replay ops carry their name id in mb */
}

static const char *stream_name(const void *ud, uint32_t prog, int s) {
  const names *n = ud;
  uint32_t id = prog < 64 ? n->stream[prog][s] : 0;
  return id ? escaped(n, id - 1) : s == HOST_SLOT ? "host" : "gpu";
}

/* Placement of a group given its global members (ascending). */
static sc_placement place(const int64_t *m, size_t n, int64_t gpn, int64_t nodes_per_leaf) {
  sc_placement_acc acc;
  sc__placement_begin(&acc, nodes_per_leaf);
  for (size_t i = 0; i < n; i++) sc__placement_add(&acc, m[i] / gpn);
  return acc.pl;
}

typedef struct okey { uint32_t stream, idx; } okey;

/* Per-rank conversion state. */
typedef struct conv {
  uint8_t *slot_of;   /* [nstreams] */
  uint32_t *pos;      /* [nops] index of the op in its slot */
  uint32_t *seq;      /* [nops] ops in slot order, slot by slot */
  size_t count[SC_ST_COUNT];
} conv;

/* Assigns the rank's streams to engine slots: host to HOST_SLOT; the busiest
 * compute stream to slot 0, then communication streams (ordered by the
 * smallest group they serve, so that every member puts a group on the same
 * slot), then the other compute streams; streams beyond the slots share the
 * last one. */
static int assign_slots(sc_ctx *ctx, const sc_jrank *r, conv *cv, int64_t *merged) {
  size_t ns = r->nstreams;
  /* busy: summed durations, as a double: up to 2^24 ops of 2^50 ns
   * (job_int.h bounds) overflow an int64. */
  typedef struct sinfo { double busy; int64_t mingroup; int comm, host; uint32_t i; } sinfo;
  sinfo *si = sc__calloc(ctx, ns ? ns : 1, sizeof *si);
  if (!si) return SC_ENOMEM;
  for (size_t s = 0; s < ns; s++) {
    si[s].i = (uint32_t)s;
    si[s].host = r->streams[s].host;
    si[s].mingroup = INT64_MAX;
  }
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    sinfo *x = &si[op->stream];
    if (op->kind == SC_JOP_COLL || op->kind == SC_JOP_SEND || op->kind == SC_JOP_RECV) {
      x->comm = 1;
      int64_t g = op->kind == SC_JOP_COLL ? (int64_t)op->group : INT64_MAX - 1;
      if (g < x->mingroup) x->mingroup = g;
    } else x->busy += (double)op->dur_ns;
  }
  /* Main compute stream: most busy non-comm GPU stream. */
  int64_t main = -1;
  for (size_t s = 0; s < ns; s++)
    if (!si[s].host && !si[s].comm && (main < 0 || si[s].busy > si[main].busy)) main = (int64_t)s;
  uint32_t *list = sc__malloc(ctx, (ns ? ns : 1) * sizeof *list);
  if (!list) {
    sc__free(ctx, si, (ns ? ns : 1) * sizeof *si);
    return SC_ENOMEM;
  }
  size_t nl = 0;
  if (main >= 0) list[nl++] = (uint32_t)main;
  /* Comm streams by (mingroup, id); then compute by busy (desc), id. */
  for (int pass = 0; pass < 2; pass++) {
    size_t first = nl;
    for (size_t s = 0; s < ns; s++)
      if (!si[s].host && (int64_t)s != main && si[s].comm == (pass == 0)) list[nl++] = (uint32_t)s;
    for (size_t a = first + 1; a < nl; a++) /* insertion sort: few streams */
      for (size_t b = a; b > first; b--) {
        const sinfo *x = &si[list[b - 1]], *y = &si[list[b]];
        int swap = pass == 0 ? (x->mingroup > y->mingroup || (x->mingroup == y->mingroup && x->i > y->i))
                             : (x->busy < y->busy || (x->busy == y->busy && x->i > y->i));
        if (!swap) break;
        uint32_t t = list[b - 1];
        list[b - 1] = list[b];
        list[b] = t;
      }
  }
  for (size_t s = 0; s < ns; s++)
    if (si[s].host) cv->slot_of[s] = HOST_SLOT;
  for (size_t k = 0; k < nl; k++) {
    int slot = k < GPU_SLOTS ? (int)k : GPU_SLOTS - 1;
    cv->slot_of[list[k]] = (uint8_t)slot;
    if (k >= GPU_SLOTS) (*merged)++;
  }
  sc__free(ctx, list, (ns ? ns : 1) * sizeof *list);
  sc__free(ctx, si, (ns ? ns : 1) * sizeof *si);
  return SC_OK;
}

/* Orders each slot's ops. One stream per slot: its own order. Several: a
 * topological merge (Kahn) that keeps each stream's order and the
 * dependencies between the merged streams, preferring traced start time.
 * Returns SC_OK, SC_ENOMEM, or SC_EINVAL (without a message) for a
 * dependency cycle through the merged streams. */
static int order_slots(sc_ctx *ctx, const sc_jrank *r, conv *cv) {
  size_t n = r->nops;
  int rc = SC_OK;
  uint32_t streams_in[SC_ST_COUNT] = {0};
  for (size_t s = 0; s < r->nstreams; s++) streams_in[cv->slot_of[s]]++;
  /* Ops of each slot, stream by stream, in stream order. */
  size_t off[SC_ST_COUNT + 1] = {0};
  for (size_t k = 0; k < n; k++) cv->count[cv->slot_of[r->ops[k].stream]]++;
  for (int s = 0; s < SC_ST_COUNT; s++) off[s + 1] = off[s] + cv->count[s];
  okey *keys = sc__malloc(ctx, (n ? n : 1) * sizeof *keys);
  if (!keys) return SC_ENOMEM;
  for (int slot = 0; slot < SC_ST_COUNT && !rc; slot++) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
      if (cv->slot_of[r->ops[k].stream] == slot) keys[m++] = (okey){r->ops[k].stream, (uint32_t)k};
    if (streams_in[slot] <= 1) {
      for (size_t i = 0; i < m; i++) cv->seq[off[slot] + i] = keys[i].idx;
      continue;
    }
    /* Kahn over the slot's ops: an op is ready when its stream predecessor
     * and its same-slot dependencies are placed. */
    uint32_t *pending = sc__calloc(ctx, n ? n : 1, sizeof *pending);
    uint32_t *placed = sc__calloc(ctx, n ? n : 1, sizeof *placed);
    if (!pending || !placed) rc = SC_ENOMEM;
    size_t done = 0;
    while (!rc && done < m) {
      size_t best = SIZE_MAX;
      /* Heads of each stream: first unplaced op in stream order. */
      for (size_t i = 0; i < m; i++) {
        uint32_t k = keys[i].idx;
        if (placed[k]) continue;
        int prev_stream_unplaced = 0;
        for (size_t j = i; j > 0; j--)
          if (keys[j - 1].stream == keys[i].stream) {
            prev_stream_unplaced = !placed[keys[j - 1].idx];
            break;
          }
        if (prev_stream_unplaced) continue;
        int ok = 1;
        const sc_jop *op = &r->ops[k];
        for (uint32_t d = 0; d < op->ndeps && ok; d++) {
          uint32_t dep = r->deps[op->dep_off + d];
          if (cv->slot_of[r->ops[dep].stream] == slot && !placed[dep]) ok = 0;
        }
        if (!ok) continue;
        int64_t t = op->start_ns;
        if (best == SIZE_MAX || t < r->ops[keys[best].idx].start_ns ||
            (t == r->ops[keys[best].idx].start_ns && i < best))
          best = i;
      }
      if (best == SIZE_MAX) {
        rc = SC_EINVAL; /* a dependency cycle through the merged streams */
        break;
      }
      placed[keys[best].idx] = 1;
      cv->seq[off[slot] + done++] = keys[best].idx;
    }
    sc__free(ctx, pending, (n ? n : 1) * sizeof *pending);
    sc__free(ctx, placed, (n ? n : 1) * sizeof *placed);
  }
  sc__free(ctx, keys, (n ? n : 1) * sizeof *keys);
  if (rc) return rc;
  for (int slot = 0; slot < SC_ST_COUNT; slot++)
    for (size_t i = 0; i < cv->count[slot]; i++) cv->pos[cv->seq[off[slot] + i]] = (uint32_t)i;
  return SC_OK;
}

typedef struct gdef {   /* a group in the replayed job */
  int64_t *members;     /* global ranks in the new world */
  size_t n;
  int spans_replicas;
  int cp;               /* shard.c's context-parallel group */
  int ep;               /* shard.c's expert-parallel group (its all-to-alls) */
  sc_placement pl, traced_pl;
} gdef;

static void free_groups(sc_ctx *ctx, gdef *g, size_t n) {
  if (!g) return;
  for (size_t i = 0; i < n; i++) sc__free(ctx, g[i].members, (g[i].n ? g[i].n : 1) * sizeof *g[i].members);
  sc__free(ctx, g, (n ? n : 1) * sizeof *g);
}

/* Memory a replay may take for its group tables: the limit of the
 * simulate driver (src/analysis/simulate.c, MAX_SIMULATION_BYTES), which no
 * real job comes near (a 2^20-rank re-target of a job with a few spanning
 * groups takes tens of MiB); only a crafted job (thousands of groups that
 * each span the world, re-targeted to 2^20 ranks) goes past it. */
#define GIB 1073741824.0
#define MAX_REPLAY_GROUP_BYTES (8.0 * GIB)

/* Members of group jg after re-targeting from dp0 to dp replicas of R
 * ranks: the world group grows to the new world; a group with one member
 * per replica (stride = ranks per replica) to one per new replica; groups
 * inside a replica keep their members. *world, *strided: which of the
 * first two it is. */
static size_t resized_members(const sc_job *job, const sc_jgroup *jg, int64_t R, int64_t dp0,
                              int64_t dp, int *world, int *strided) {
  const int64_t *m = job->members + jg->off;
  if (!strcmp(sc__job_str(job, jg->name), SC_JOB_TP_GROUP) ||
      !strcmp(sc__job_str(job, jg->name), SC_JOB_CP_GROUP)) { /* shard.c's TP and CP groups: inside a replica */
    *world = *strided = 0;
    return jg->n;
  }
  *world = (int64_t)jg->n == job->world;
  *strided = jg->n > 1 && (int64_t)jg->n == dp0;
  for (uint32_t k = 1; *strided && k < jg->n; k++) *strided = m[k] - m[k - 1] == R;
  return *world ? (size_t)(dp * R) : *strided ? (size_t)dp : jg->n;
}

/* New member lists (resized_members). Their bytes are estimated first:
 * above MAX_REPLAY_GROUP_BYTES the replay is refused (SC_EUNSUPPORTED) with
 * the size it would take, before anything is allocated. */
static int resize_groups(sc_ctx *ctx, const sc_job *job, int64_t R, int64_t dp0, int64_t dp,
                         int64_t gpn, int64_t nodes_per_leaf, gdef **out) {
  double need = (double)(job->ngroups ? job->ngroups : 1) * (double)sizeof(gdef);
  int64_t spanning = 0;
  for (size_t i = 0; i < job->ngroups; i++) {
    int world, strided;
    size_t n = resized_members(job, &job->groups[i], R, dp0, dp, &world, &strided);
    need += (double)(n ? n : 1) * (double)sizeof(int64_t);
    spanning += world || strided;
  }
  if (need > MAX_REPLAY_GROUP_BYTES)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "--scale dp=%lld: replaying this job would take ~%.1f GiB (%lld communication "
                     "groups, %lld of them spanning the %lld re-targeted ranks); the limit is %.0f "
                     "GiB",
                     (long long)dp, need / GIB, (long long)job->ngroups, (long long)spanning,
                     (long long)(dp * R), MAX_REPLAY_GROUP_BYTES / GIB);
  gdef *g = sc__calloc(ctx, job->ngroups ? job->ngroups : 1, sizeof *g);
  if (!g) return SC_ENOMEM;
  for (size_t i = 0; i < job->ngroups; i++) {
    const sc_jgroup *jg = &job->groups[i];
    const int64_t *m = job->members + jg->off;
    int world, strided;
    size_t n = resized_members(job, jg, R, dp0, dp, &world, &strided);
    g[i].n = n;
    /* DDP's and FSDP's groups are data-parallel traffic even where their
     * CP ranks make them neither world nor strided (or keep them inside
     * one replica: dp 1, cp 2). */
    const char *gname = sc__job_str(job, jg->name);
    g[i].spans_replicas = world || strided || !strcmp(gname, "ddp") || !strcmp(gname, SC_JOB_FSDP_GROUP) ||
                          !strcmp(gname, SC_JOB_HSDP_GROUP) || !strcmp(gname, SC_JOB_EDP_GROUP);
    g[i].cp = !strcmp(gname, SC_JOB_CP_GROUP);
    g[i].ep = !strcmp(gname, SC_JOB_EP_GROUP) || !strcmp(gname, SC_JOB_ETP_GROUP);
    g[i].members = sc__malloc(ctx, (n ? n : 1) * sizeof *g[i].members);
    if (!g[i].members) {
      free_groups(ctx, g, job->ngroups);
      return SC_ENOMEM;
    }
    for (size_t k = 0; k < n; k++)
      g[i].members[k] = world ? (int64_t)k : strided ? m[0] + (int64_t)k * R : m[k];
    g[i].pl = place(g[i].members, n, gpn, nodes_per_leaf);
    g[i].traced_pl = place(m, jg->n, gpn, nodes_per_leaf);
  }
  *out = g;
  return SC_OK;
}

/* Invariants of the built programs (checked when the context asks): dependencies point to
 * existing ops of other slots; collectives name existing groups. (The
 * pipeline pairing check of sc__workload_check does not apply here.) */
static int check_programs(sc_ctx *ctx, const sc_workload *wl) {
  for (int64_t i = 0; i < wl->nprogs; i++) {
    const sc_program *p = &wl->progs[i];
    for (int s = 0; s < SC_ST_COUNT; s++)
      for (size_t q = 0; q < p->nops[s]; q++) {
        const sc_op *op = &p->ops[s][q];
        if ((size_t)op->dep_off + op->ndeps > p->ndeps)
          return sc__error(ctx, SC_EINVAL, "replay program %lld: deps out of range", (long long)i);
        for (uint32_t d = 0; d < op->ndeps; d++) {
          uint32_t dep = p->deps[op->dep_off + d];
          if (SC_DEP_STREAM(dep) >= SC_ST_COUNT || (int)SC_DEP_STREAM(dep) == s ||
              SC_DEP_INDEX(dep) >= p->nops[SC_DEP_STREAM(dep)])
            return sc__error(ctx, SC_EINVAL, "replay program %lld: bad dependency", (long long)i);
        }
        if (op->kind >= SC_OP_KIND_COUNT || op->cat >= SC_CAT_COUNT)
          return sc__error(ctx, SC_EINVAL, "replay program %lld: op kind or category out of range",
                           (long long)i);
        if (op->kind == SC_OP_COLL && op->peer >= wl->ngroups)
          return sc__error(ctx, SC_EINVAL, "replay program %lld: collective without group", (long long)i);
      }
  }
  return SC_OK;
}

/* Per-rank state kept across the phases of sc_replay. */
typedef struct rprep {
  conv cv;
  uint32_t *chan;      /* [nops] collectives: engine group (channel), else unused */
  double *dur;         /* [nops] collectives: priced duration, ns */
} rprep;

/* A channel: one job group on one engine slot (an NCCL communicator and its
 * stream). Process groups with the same members but their own streams
 * (torchrec's all-to-all and all-reduce groups) stay apart this way. */
typedef struct chan { uint32_t group; int slot; } chan;

/* Duration in ns of an op whose duration was not measured (ex-situ traces):
 * priced from its shape by the cost models for the target GPU. */
/* A GEMM (batch of b) whose output tiles cannot fill the GPU but whose
 * reduction is long (weight gradients: m x n small, k = batch x positions)
 * runs split-K, as cuBLAS and cuDNN do: s slices of k in parallel, then a
 * reduction of the s partial m x n results. */
static double gemm_split_ns(const sc_cost *c, double m, double n, double k, double b) {
  double tiles = ceil(m / 128.0) * ceil(n / 128.0) * b, sms = c->hw->sms;
  double s = tiles < sms ? floor(fmin(sms / tiles, k / 256.0)) : 1;
  if (s < 2) return c->compute->gemm_ns(c, m * b, n, k);
  double partial = s * m * n * b * 4.0; /* fp32 partial sums, written and read */
  return c->compute->gemm_ns(c, m * b * s, n, k / s) + c->compute->mem_ns(c, 2 * partial);
}

/* An FP8 GEMM (fp8.c) and the casts of its operands before it, by recipe
 * (synth/tensor.c's accounting, on the traced pass): forward the
 * activation m x k and the weight k x n; the input gradient the output's
 * gradient m x k; the weight gradient, rowwise only, both operands
 * column-wise again. Bytes per element: delayed 4 (the weight's cast
 * cached: one micro-batch's worth counted), tensorwise 6 (an amax pass
 * first), rowwise 3 (weights 6). */
static double fp8_gemm_priced_ns(const sc_cost *c, const sc_jshape *sh, double b, int recipe) {
  double m = sh->m * b, act = recipe == SC_FP8_DELAYED ? 4.0 : recipe == SC_FP8_TENSORWISE ? 6.0 : 3.0;
  double weight = recipe == SC_FP8_DELAYED ? 4.0 : 6.0, cast;
  if (sh->cls == SC_JSHAPE_GEMM8_WGRAD) cast = recipe == SC_FP8_ROWWISE ? 3.0 * (sh->m * sh->k + sh->k * sh->n) * b : 0;
  else if (sh->cls == SC_JSHAPE_GEMM8_DGRAD) cast = act * m * sh->k;
  else if (sh->cls == SC_JSHAPE_GEMM8_FWD_SHARED) cast = weight * sh->k * sh->n;
  else cast = act * m * sh->k + weight * sh->k * sh->n;
  return c->compute->fp8_gemm_ns(c, m, sh->n, sh->k) + (cast > 0 ? c->compute->mem_ns(c, cast) : 0);
}

/* Whether a traced GEMM is one of eager attention's score GEMMs (a batch
 * over heads of Q K^T, P V or their gradients): batched, with two of M, N, K
 * equal (the sequence length, the s x s scores) and above the third (the
 * head dim). These stream the scores through HBM at scores_mem_eff, as
 * unfused attention does in the synthesized workload (layers.c). */
static int scores_shaped(const sc_jshape *sh, double b) {
  double m = sh->m, n = sh->n, k = sh->k;
  if (b <= 1) return 0;
  return (m == n && k < m) || (m == k && n < m) || (n == k && m < n);
}

static double priced_shape_ns(const sc_cost *c, const sc_jshape *sh, const sc_jop *jo, int fp8_recipe) {
  double b = sh->batch > 0 ? sh->batch : 1;
  switch (sh->cls) {
  case SC_JSHAPE_GEMM8_FWD:
  case SC_JSHAPE_GEMM8_DGRAD:
  case SC_JSHAPE_GEMM8_WGRAD:
  case SC_JSHAPE_GEMM8_FWD_SHARED:
    return fp8_gemm_priced_ns(c, sh, b, fp8_recipe);
  case SC_JSHAPE_GEMM:
    if (scores_shaped(sh, b)) return c->compute->scores_gemm_ns(c, sh->m * b, sh->n, sh->k);
    return gemm_split_ns(c, sh->m, sh->n, sh->k, b);
  case SC_JSHAPE_CONV: {
    /* At conv_eff of a GEMM's efficiency: the compute part scales, the
     * fixed kernel overhead does not. */
    double t = gemm_split_ns(c, sh->m, sh->n, sh->k, b), o = c->p.kernel_overhead_us * 1e3;
    return t > o ? o + (t - o) / c->p.conv_eff : t;
  }
  case SC_JSHAPE_MEM:
    return c->compute->mem_ns(c, jo->bytes);
  case SC_JSHAPE_NORM: {
    double t = c->compute->mem_ns(c, jo->bytes), o = c->p.kernel_overhead_us * 1e3;
    return t > o ? o + (t - o) / c->p.norm_eff : t;
  }
  case SC_JSHAPE_ATTN:
    return c->compute->attn_ns(c, jo->flops, sh->m, sh->n);
  case SC_JSHAPE_ATTN_CUDNN: { /* the attention curve at cudnn_attn_eff instead of attn_eff */
    double t = c->compute->attn_ns(c, jo->flops, sh->m, sh->n), o = c->p.kernel_overhead_us * 1e3;
    return t > o && c->p.cudnn_attn_eff > 0 ? o + (t - o) * c->attn_eff / c->p.cudnn_attn_eff : t;
  }
  case SC_JSHAPE_HOST:
    return (sh->m * c->p.host_op_us + sh->n * c->p.host_autograd_us + sh->k * c->p.host_module_us) * 1e3;
  default:
    return 0;
  }
}

static double priced_ns(const sc_cost *c, const sc_jrank *r, const sc_jop *jo, int fp8_recipe) {
  return priced_shape_ns(c, &r->shapes[jo->shape - 1], jo, fp8_recipe);
}

double sc__replay_priced_ns(const sc_cost *c, const sc_jrank *r, const sc_jop *jo, int fp8_recipe) {
  return priced_ns(c, r, jo, fp8_recipe);
}

/* shard.c's ZB-V pass times: a re-shaped op priced as the replay prices it
 * (measured ops at their duration). */
typedef struct shard_pricing { const sc_cost *cost; int fp8_recipe; } shard_pricing;
static double shard_op_ns(void *ud, const sc_jop *op, const sc_jshape *sh) {
  const shard_pricing *p = ud;
  return sh ? priced_shape_ns(p->cost, sh, op, p->fp8_recipe) : (double)op->dur_ns;
}

static int replay_job(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *opts,
                      const sc_trace_opts *topts, sc_write_fn trace, void *trace_ud,
                      sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out);
static int check_gpu(sc_ctx *ctx, const sc_job *job, const sc_config *cfg);
static int replay_sharded(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *o,
                          const sc_trace_opts *topts, sc_write_fn trace, void *trace_ud,
                          sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out);

int sc_replay(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *opts,
              sc_write_fn trace, void *trace_ud, sc_replay_result *out) {
  return sc__replay_run(ctx, job, cfg, opts, NULL, trace, trace_ud, NULL, NULL, out);
}

int sc_replay_traced(sc_ctx *ctx, const sc_job *job, const sc_config *cfg,
                     const sc_replay_opts *opts, const sc_trace_opts *topts, sc_write_fn trace,
                     void *trace_ud, sc_replay_result *out) {
  return sc__replay_run(ctx, job, cfg, opts, topts, trace, trace_ud, NULL, NULL, out);
}

/* The replay's world: the traced one, or dp x R re-targeted (0 when R does
 * not divide the traced world; replay_priced reports it). */
static int64_t replay_world(const sc_job *job, const sc_replay_opts *o) {
  int64_t R = o && o->replica_ranks > 0 ? o->replica_ranks : 1;
  int64_t W = job->world > 0 ? job->world : (int64_t)job->nranks;
  if (W % R) return 0;
  return (o && o->scale_dp > 0 ? o->scale_dp : W / R) * R;
}

/* A replay's trace ranks: the shared checks against its world, and each
 * range must hold a replayed (traced) rank, since ranks outside the trace
 * are folded onto the traced ones and have no timeline of their own. */
static int replay_ranks_check(sc_ctx *ctx, const sc_job *job, const sc_replay_opts *o,
                              const sc_trace_opts *t) {
  int64_t world = replay_world(job, o);
  int rc = sc__trace_opts_check(ctx, t, world > 0 ? world : (int64_t)job->nranks);
  if (rc || !t || !t->nranks) return rc;
  for (size_t k = 0; k < t->nranks; k++) {
    size_t i = 0;
    while (i < job->nranks && !(job->ranks[i].rank >= t->ranks[k].first &&
                                job->ranks[i].rank <= t->ranks[k].last))
      i++;
    if (i < job->nranks) continue;
    char range[48];
    if (t->ranks[k].first == t->ranks[k].last)
      snprintf(range, sizeof range, "%lld", (long long)t->ranks[k].first);
    else
      snprintf(range, sizeof range, "%lld-%lld", (long long)t->ranks[k].first,
               (long long)t->ranks[k].last);
    return sc__error(ctx, SC_EINVAL,
                     "trace ranks: %s holds none of the %zu traced rank(s) (the first is %lld); "
                     "the replay simulates only those",
                     range, job->nranks, (long long)(job->nranks ? job->ranks[0].rank : 0));
  }
  return SC_OK;
}

static int rank_chosen(const sc_trace_opts *t, int64_t rank) {
  if (!t || !t->nranks) return 1;
  for (size_t k = 0; k < t->nranks; k++)
    if (rank >= t->ranks[k].first && rank <= t->ranks[k].last) return 1;
  return 0;
}

/* Bytes per replayed op in the Chrome JSON trace besides its name (the "X"
 * event's fixed keys, times, category and arguments) and in the .pftrace
 * (a slice's begin and end packets with their interned ids); names are
 * counted once per op in JSON, once per string in the .pftrace (interned).
 * Measured on the HTA Kineto samples (validation/traces/hta,
 * nccl_parser_config_nccl_data and negative_queue_length_rank0, as traced):
 * JSON ~92 bytes per op besides its name, .pftrace 39 per op names and
 * all; rounded up, so the estimate lands 5-20 % above the file. */
#define REPLAY_JSON_BYTES_PER_OP 100.0
#define REPLAY_PFTRACE_BYTES_PER_OP 44.0
/* Per traced rank its process and stream tracks (JSON ~80 bytes a track,
 * the .pftrace about half), and per trace the header and the note on the
 * chosen ranks (at most ~600 bytes): what a job of few ops is made of. */
#define REPLAY_JSON_BYTES_PER_RANK 1024.0
#define REPLAY_PFTRACE_BYTES_PER_RANK 512.0
#define REPLAY_TRACE_BYTES_FIXED 640.0

int sc_replay_trace_estimate(sc_ctx *ctx, const sc_job *job, const sc_replay_opts *opts,
                             const sc_trace_opts *topts, double *bytes) {
  if (!ctx) return SC_EINVAL;
  if (!job || !bytes) return sc__error(ctx, SC_EINVAL, "sc_replay_trace_estimate: no job or output");
  *bytes = 0;
  int rc = replay_ranks_check(ctx, job, opts, topts);
  if (rc) return rc;
  int pf = topts && topts->format == SC_TRACE_OUT_PERFETTO;
  double total = REPLAY_TRACE_BYTES_FIXED;
  for (size_t i = 0; i < job->nranks; i++) {
    const sc_jrank *r = &job->ranks[i];
    if (!rank_chosen(topts, r->rank)) continue;
    total += pf ? REPLAY_PFTRACE_BYTES_PER_RANK : REPLAY_JSON_BYTES_PER_RANK;
    total += (double)r->nops * (pf ? REPLAY_PFTRACE_BYTES_PER_OP : REPLAY_JSON_BYTES_PER_OP);
    for (size_t k = 0; !pf && k < r->nops; k++) {
      size_t n = strlen(sc__job_str(job, r->ops[k].name));
      total += (double)(n < NAME_CUT ? n : NAME_CUT);
    }
  }
  for (size_t i = 0; pf && i < job->nstr; i++) {
    size_t n = strlen(sc__job_str(job, (uint32_t)i));
    total += (double)(n < NAME_CUT ? n : NAME_CUT) + 4.0;
  }
  *bytes = total;
  return SC_OK;
}

/* Whether the job has ops priced from a shape (an ex-situ job). */
static int job_priced(const sc_job *job) {
  for (size_t i = 0; i < job->nranks; i++)
    for (size_t k = 0; k < job->ranks[i].nops; k++)
      if (job->ranks[i].ops[k].shape) return 1;
  return 0;
}

int sc__replay_run(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *opts,
                   const sc_trace_opts *topts, sc_write_fn trace, void *trace_ud,
                   sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out) {
  memset(out, 0, sizeof *out);
  if (cfg && sc__vary_active(cfg))
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "variation: slow GPUs, links and GPU mixes apply to synthesised runs "
                     "(`stepcast run`), not to replayed traces yet");
  if (!trace) topts = NULL;
  if (opts && opts->layers > 0) { /* extrapolate first, then replay as asked */
    sc_job *lj = NULL;
    int64_t traced = 0;
    int rc = sc__job_layers(job, opts->layers, &lj, &traced);
    if (rc) return rc;
    sc_replay_opts o2 = *opts;
    o2.layers = 0;
    rc = sc__replay_run(ctx, lj, cfg, &o2, topts, trace, trace_ud, sink, sink_ud, out);
    sc_job_free(lj);
    if (!rc) {
      out->layers = opts->layers;
      out->traced_layers = traced;
      /* A traced time is of the traced layers, not of these. */
      if (opts->layers != traced) out->traced_step_s = 0, out->error_pct = 0;
    }
    return rc;
  }
  if (cfg && cfg->training.precision == SC_PREC_FP8 && !(opts && opts->fp8_done)) {
    /* FP8 linear layers (fp8.c) of an ex-situ job, then replayed as asked. */
    if (job_priced(job)) {
      sc_job *pj = NULL;
      int64_t n = 0;
      int rc = sc__job_fp8(job, &pj, &n);
      if (rc) return rc;
      sc_replay_opts o2;
      if (opts) o2 = *opts;
      else memset(&o2, 0, sizeof o2);
      o2.fp8_done = 1;
      rc = sc__replay_run(ctx, pj, cfg, &o2, topts, trace, trace_ud, sink, sink_ud, out);
      sc_job_free(pj);
      if (!rc) out->fp8_gemms = n;
      return rc;
    }
  }
  if (opts && opts->compile) { /* fused first (fuse.c), then replayed as asked */
    if (!job_priced(job))
      return sc__error(ctx, SC_EINVAL,
                       "--compile fuses the priced kernels of an ex-situ job (import cpu); this job's kernels "
                       "have measured durations");
    sc_job *fj = NULL;
    int64_t absorbed = 0;
    int rc = sc__job_fused(job, &fj, &absorbed);
    if (rc) return rc;
    sc_replay_opts o2 = *opts;
    o2.compile = 0;
    rc = sc__replay_run(ctx, fj, cfg, &o2, topts, trace, trace_ud, sink, sink_ud, out);
    sc_job_free(fj);
    if (!rc) out->fused_kernels = absorbed;
    return rc;
  }
  sc_replay_opts o;
  if (opts) o = *opts;
  else memset(&o, 0, sizeof o);
  int rc = check_gpu(ctx, job, cfg);
  if (rc) return rc;
  if (o.scale_tp > 1 || o.scale_pp > 1 || o.micro_batches > 1 || o.schedule != SC_SCHED_1F1B || o.vpp > 1 ||
      o.scale_fsdp > 1 || o.scale_cp > 1 || o.scale_ep > 1 || o.sequence_parallel || job->shard_tp > 0) { /* a shard job always runs its stage cut */
    if (topts && topts->nranks)
      return sc__error(ctx, SC_EUNSUPPORTED,
                       "--trace-ranks with --scale tp= / pp= is not supported yet (the "
                       "re-targeted job's ranks are not the traced ones): trace every rank");
    return replay_sharded(ctx, job, cfg, &o, topts, trace, trace_ud, sink, sink_ud, out);
  }
  if ((rc = replay_ranks_check(ctx, job, opts, topts))) return rc;
  out->tp = out->pp = out->cp = out->micro_batches = out->vpp = 1;
  /* Gradient marks and a re-target to more replicas: add PyTorch DDP. */
  int64_t R = o.replica_ranks > 0 ? o.replica_ranks : 1;
  int64_t W = job->world > 0 ? job->world : (int64_t)job->nranks;
  int64_t grads = 0, colls = 0;
  for (size_t i = 0; i < job->nranks; i++)
    for (size_t k = 0; k < job->ranks[i].nops; k++) {
      grads += job->ranks[i].ops[k].kind == SC_JOP_GRAD;
      colls += job->ranks[i].ops[k].kind == SC_JOP_COLL;
    }
  if (!grads || colls || (!o.ddp && (o.scale_dp <= 0 || o.scale_dp * R <= W)))
    return replay_job(ctx, job, cfg, &o, topts, trace, trace_ud, sink, sink_ud, out);
  double mib = 1048576.0;
  if (!(o.ddp_bucket_mb >= 0 && o.ddp_first_bucket_mb >= 0))
    return sc__error(ctx, SC_EINVAL, "DDP bucket sizes must be positive");
  sc_job *ddp;
  rc = sc__job_ddp(job, (o.ddp_bucket_mb > 0 ? o.ddp_bucket_mb : 25.0) * mib,
                   (o.ddp_first_bucket_mb > 0 ? o.ddp_first_bucket_mb : 1.0) * mib, 1, 1, 1, &ddp);
  if (rc) return rc;
  rc = replay_job(ctx, ddp, cfg, &o, topts, trace, trace_ud, sink, sink_ud, out);
  out->tp = out->pp = out->cp = out->micro_batches = out->vpp = 1;
  if (!rc)
    for (size_t k = 0; k < ddp->ranks[0].nops; k++) out->ddp_buckets += ddp->ranks[0].ops[k].kind == SC_JOP_COLL;
  sc_job_free(ddp);
  return rc;
}

/* Item 5 of issue 20: measured kernel times belong to the GPU they were
 * measured on. A job with measured kernels replayed for another GPU preset
 * than its trace's is refused rather than replayed with the old times (no
 * per-kernel-class ratio is calibrated yet); ex-situ jobs are priced per
 * shape and may target any GPU. A trace whose GPU matches no preset runs on
 * the GPU it is given (its times as traced). */
static int check_gpu(sc_ctx *ctx, const sc_job *job, const sc_config *cfg) {
  const char *traced = sc_job_gpu_preset(job);
  if (!traced || !strcmp(traced, cfg->cluster.gpu)) return SC_OK;
  for (size_t i = 0; i < job->nranks; i++)
    for (size_t k = 0; k < job->ranks[i].nops; k++) {
      const sc_jop *op = &job->ranks[i].ops[k];
      if ((op->kind == SC_JOP_KERNEL || op->kind == SC_JOP_MEMCPY || op->kind == SC_JOP_MEMSET) && !op->shape &&
          op->dur_ns > 0)
        return sc__error(ctx, SC_EUNSUPPORTED,
                         "%s: the kernel times were measured on %s; replaying them as %s would keep %s's "
                         "times (re-pricing measured kernels for another GPU is not supported yet): "
                         "replay on %s, or trace on the target GPU",
                         sc__job_str(job, job->ranks[i].source), traced, cfg->cluster.gpu, traced, traced);
    }
  return SC_OK;
}

/* tp / pp (and micro-batches) of an ex-situ job: shard.c builds the stage
 * programs, DDP goes over each stage's data-parallel group, and the job
 * replays with replicas of tp x pp ranks. */
static int replay_sharded(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *o,
                          const sc_trace_opts *topts, sc_write_fn trace, void *trace_ud,
                          sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out) {
  /* Measured kernels keep their times: a re-target would change their
   * shapes (tp, cp, fsdp) or need the activations' size (pp), neither of
   * which a GPU trace says (its module annotations give only the layers).
   * (A job of several traced ranks is refused by sc__job_shard.) */
  if (job->nranks == 1 && job->world <= 1 && !job_priced(job))
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "%s: --scale tp/pp/cp/fsdp (and micro-batches, schedules, sequence parallelism) re-target "
                     "operators priced from their shapes; this job's GPU kernels have measured times, which a "
                     "re-target cannot re-shape: trace the model ex-situ (tools/trace_torch.py) for that, or "
                     "replay this job with --layers N and --scale dp=K",
                     sc__job_str(job, job->ranks[0].source));
  sc_shard_opts so;
  memset(&so, 0, sizeof so);
  so.tp = o->scale_tp > 0 ? o->scale_tp : 1;
  so.pp = o->scale_pp > 0 ? o->scale_pp : 1;
  /* Per-rank shards: the layout they were traced for (another is refused
   * by sc__job_shard). */
  if (job->shard_tp > 0 && !o->scale_tp) so.tp = job->shard_tp;
  if (job->shard_tp > 0 && !o->scale_pp) so.pp = job->shard_pp;
  so.dp = o->scale_dp > 0 ? o->scale_dp : o->scale_fsdp > 1 ? o->scale_fsdp : 1;
  so.cp = o->scale_cp > 0 ? o->scale_cp : 1;
  so.fsdp = o->scale_fsdp > 1 ? o->scale_fsdp : 0;
  so.ep = o->scale_ep > 1 ? o->scale_ep : 0;
  so.fsdp_keep = o->fsdp_keep;
  so.async_tp = o->async_tp;
  so.sp = o->sequence_parallel;
  so.cp_comm = o->cp_comm;
  so.micro_batches = o->micro_batches > 0 ? o->micro_batches : so.pp;
  so.schedule = (int)o->schedule;
  /* Interleaved: 2 model chunks per stage unless told; ZB-V: always 2. */
  int chunked = o->schedule == SC_SCHED_INTERLEAVED || o->schedule == SC_SCHED_ZBV;
  so.vpp = chunked && o->vpp <= 1 ? 2 : o->vpp;
  so.first_layers = o->first_layers;
  so.last_layers = o->last_layers;
  if (o->replica_ranks > 1)
    return sc__error(ctx, SC_EINVAL, "--replica and --scale tp/pp do not go together (the replica is tp x pp)");
  sc_shard_rule *rules = NULL;
  size_t nrules = 0;
  int rc = SC_OK;
  if (o->shard_rules)
    rc = sc__shard_rules_parse(ctx, o->shard_rules_name ? o->shard_rules_name : "shard rules", o->shard_rules,
                               o->shard_rules_len, &rules, &nrules);
  so.rules = rules;
  so.nrules = nrules;
  sc_job *sj = NULL, *dj = NULL;
  /* ZB-V orders its passes by their times on the target GPU. */
  sc_cost zcost;
  shard_pricing zp = {&zcost, (int)cfg->training.fp8_recipe};
  int zbv = !rc && so.schedule == SC_SCHED_ZBV;
  if (zbv) {
    rc = sc__cost_init(ctx, cfg, &zcost); /* released in any case, as replay_job does */
    so.op_ns = shard_op_ns, so.op_ns_ud = &zp;
  }
  if (!rc) rc = sc__job_shard(job, &so, &sj);
  if (zbv) sc__cost_release(ctx, &zcost);
  double mib = 1048576.0;
  int64_t R = so.tp * so.cp * so.pp;
  if (!rc && !(o->ddp_bucket_mb >= 0 && o->ddp_first_bucket_mb >= 0))
    rc = sc__error(ctx, SC_EINVAL, "DDP bucket sizes must be positive");
  /* CP ranks reduce their gradients even at dp 1 (Megatron's DP x CP). */
  if (!rc && !so.fsdp && (so.dp > 1 || so.cp > 1 || o->ddp))
    rc = sc__job_ddp(sj, (o->ddp_bucket_mb > 0 ? o->ddp_bucket_mb : 25.0) * mib,
                     (o->ddp_first_bucket_mb > 0 ? o->ddp_first_bucket_mb : 1.0) * mib, R, so.cp, so.tp, &dj);
  sc_replay_opts o2 = *o;
  o2.replica_ranks = R;
  o2.scale_dp = 0;
  if (!rc) rc = replay_job(ctx, dj ? dj : sj, cfg, &o2, topts, trace, trace_ud, sink, sink_ud, out);
  if (!rc) {
    out->tp = so.tp;
    out->pp = so.pp;
    out->cp = so.cp;
    out->micro_batches = so.micro_batches;
    out->schedule = (sc_schedule)so.schedule;
    out->vpp = so.vpp > 1 ? so.vpp : 1;
    out->fsdp = so.fsdp;
    out->ep = so.ep > 1 ? so.ep : 1;
    out->sequence_parallel = so.sp;
    out->cp_comm = so.cp_comm;
    out->async_tp = so.async_tp;
    out->fsdp_keep = so.fsdp_keep && so.fsdp > 1;
    out->traced_world = job->shard_tp > 0 ? job->world : 1; /* shards: the ranks they were traced for */
    out->traced_dp = 1;
    if (dj)
      for (size_t k = 0; k < dj->ranks[0].nops; k++)
        if (dj->ranks[0].ops[k].kind == SC_JOP_COLL) { /* the dense buckets and the experts' */
          const char *g = sc__job_str(dj, dj->groups[dj->ranks[0].ops[k].group].name);
          out->ddp_buckets += !strcmp(g, "ddp") || !strcmp(g, SC_JOB_EDP_GROUP);
        }
  }
  sc_job_free(dj);
  sc_job_free(sj);
  sc__free(ctx, rules, nrules * sizeof *rules);
  return rc;
}

static int replay_priced(sc_ctx *ctx, const sc_job *job, const sc_config *cfg,
                         const sc_replay_opts *opts, const sc_trace_opts *topts, sc_write_fn trace,
                         void *trace_ud, sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out,
                         sc_cost *costp);

/* Replays with the run's cost model, which it frees (a tree interference
 * model is loaded by sc__cost_init). */
static int replay_job(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, const sc_replay_opts *opts,
                      const sc_trace_opts *topts, sc_write_fn trace, void *trace_ud,
                      sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out) {
  sc_cost cost;
  int rc = sc__cost_init(ctx, cfg, &cost);
  if (!rc)
    rc = replay_priced(ctx, job, cfg, opts, topts, trace, trace_ud, sink, sink_ud, out, &cost);
  sc__cost_release(ctx, &cost);
  return rc;
}

static int replay_priced(sc_ctx *ctx, const sc_job *job, const sc_config *cfg,
                         const sc_replay_opts *opts, const sc_trace_opts *topts, sc_write_fn trace,
                         void *trace_ud, sc_op_sink_fn sink, void *sink_ud, sc_replay_result *out,
                         sc_cost *costp) {
  if (!job->nranks) return sc__error(ctx, SC_EINVAL, "the job has no ranks to replay");
  for (size_t i = 0; i < job->nranks; i++)
    for (size_t k = 0; k < job->ranks[i].nops; k++)
      if (job->ranks[i].ops[k].kind == SC_JOP_COLL && job->ranks[i].ops[k].group >= job->ngroups)
        return sc__error(ctx, SC_EINVAL, "the job is not finished (sc_job_finish)");
  sc_replay_opts o = *opts;
  int64_t R = o.replica_ranks > 0 ? o.replica_ranks : 1;
  int64_t W = job->world > 0 ? job->world : (int64_t)job->nranks;
  if (W % R)
    return sc__error(ctx, SC_EINVAL, "ranks per replica (%lld) do not divide the traced world (%lld)",
                     (long long)R, (long long)W);
  int64_t dp0 = W / R, dp = o.scale_dp > 0 ? o.scale_dp : dp0;
  if (dp > SC_JOB_MAX_WORLD / R) return sc__error(ctx, SC_EINVAL, "--scale dp=%lld is too large", (long long)dp);
  int64_t W2 = dp * R;
  int retarget = dp != dp0;
  int64_t iters = 0, span = 0;
  for (size_t i = 0; i < job->nranks; i++) {
    if (job->ranks[i].iterations > iters) iters = job->ranks[i].iterations;
    if (job->ranks[i].span_ns > span) span = job->ranks[i].span_ns;
  }
  int model = o.comm == SC_REPLAY_COMM_MODEL || (o.comm == SC_REPLAY_COMM_AUTO && (retarget || span == 0));
  sc_cost cost = *costp; /* a copy: the engine reads the model it points to */
  int rc;
  int64_t gpn = cfg->cluster.gpus_per_node > 0 ? cfg->cluster.gpus_per_node : 1;
  gdef *groups = NULL;
  rc = resize_groups(ctx, job, R, dp0, dp, gpn, cost.nodes_per_leaf, &groups);
  if (rc) return rc;

  size_t nr = job->nranks;
  sc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.nprogs = (int64_t)nr;
  wl.map = (sc_mapping){1, 1, W2, 1, W2, gpn, W2, 1, 1, 1};
  wl.progs = sc__calloc(ctx, nr, sizeof *wl.progs);
  uint32_t *rank_prog = sc__malloc(ctx, nr * sizeof *rank_prog);
  int64_t *rank_global = sc__malloc(ctx, nr * sizeof *rank_global);
  rprep *rp = sc__calloc(ctx, nr, sizeof *rp);
  names *nm = sc__calloc(ctx, 1, sizeof *nm);
  chan *chans = NULL;
  size_t nchans = 0, chans_cap = 0;
  sc_xgroup *xg = NULL;
  uint32_t *xmem = NULL;
  size_t nxm = 0;
  if (!wl.progs || !rank_prog || !rank_global || !rp || !nm) rc = SC_ENOMEM;
  if (!rc) nm->job = job;
  if (!rc && trace) rc = escape_names(ctx, nm);

  /* Phase 1: slots and slot order of every rank's ops. */
  int64_t merged = 0;
  for (size_t i = 0; !rc && i < nr; i++) {
    const sc_jrank *r = &job->ranks[i];
    conv *cv = &rp[i].cv;
    size_t n = r->nops ? r->nops : 1;
    cv->slot_of = sc__calloc(ctx, r->nstreams ? r->nstreams : 1, 1);
    cv->pos = sc__malloc(ctx, n * sizeof *cv->pos);
    cv->seq = sc__malloc(ctx, n * sizeof *cv->seq);
    rp[i].chan = sc__malloc(ctx, n * sizeof *rp[i].chan);
    rp[i].dur = sc__calloc(ctx, n, sizeof *rp[i].dur);
    if (!cv->slot_of || !cv->pos || !cv->seq || !rp[i].chan || !rp[i].dur) {
      rc = SC_ENOMEM;
      break;
    }
    rc = assign_slots(ctx, r, cv, &merged);
    if (!rc) rc = order_slots(ctx, r, cv);
    if (rc == SC_EINVAL) /* SC_ENOMEM stays out of memory */
      rc = sc__error(ctx, SC_EINVAL, "%s: rank %lld: dependency cycle among merged streams",
                     sc__job_str(job, r->source), (long long)r->rank);
    if (!rc && i < 64)
      for (size_t st = 0; st < r->nstreams; st++)
        if (!nm->stream[i][cv->slot_of[st]]) nm->stream[i][cv->slot_of[st]] = r->streams[st].name + 1;
  }

  /* Phase 2: channels, in order of first use, and their simulated members
   * (the traced ranks of the group). */
  for (size_t i = 0; !rc && i < nr; i++) {
    const sc_jrank *r = &job->ranks[i];
    for (size_t k = 0; !rc && k < r->nops; k++) {
      const sc_jop *op = &r->ops[k];
      if (op->kind != SC_JOP_COLL) continue;
      int slot = rp[i].cv.slot_of[op->stream];
      size_t c = 0;
      while (c < nchans && !(chans[c].group == op->group && chans[c].slot == slot)) c++;
      if (c == nchans) {
        if (sc__grow(ctx, (void **)&chans, sizeof *chans, &chans_cap, nchans + 1)) {
          rc = SC_ENOMEM;
          break;
        }
        chans[nchans++] = (chan){op->group, slot};
      }
      rp[i].chan[k] = (uint32_t)c;
    }
  }
  if (!rc) {
    xg = sc__calloc(ctx, nchans ? nchans : 1, sizeof *xg);
    xmem = sc__malloc(ctx, (nr * (nchans ? nchans : 1)) * sizeof *xmem);
    if (!xg || !xmem) rc = SC_ENOMEM;
  }
  for (size_t c = 0; !rc && c < nchans; c++) {
    const sc_jgroup *jg = &job->groups[chans[c].group];
    const int64_t *m = job->members + jg->off;
    xg[c].mem_off = (uint32_t)nxm;
    for (size_t i = 0; i < nr; i++)
      for (uint32_t k = 0; k < jg->n; k++)
        if (m[k] == job->ranks[i].rank) {
          xmem[nxm++] = (uint32_t)i;
          break;
        }
    xg[c].nmem = (uint32_t)(nxm - xg[c].mem_off);
    xg[c].n = groups[chans[c].group].pl.n;
    xg[c].nodes = groups[chans[c].group].pl.nodes;
    xg[c].per_node = groups[chans[c].group].pl.per_node;
    xg[c].leaves = groups[chans[c].group].pl.leaves;
  }

  /* Phase 3: collective durations. Traced: the least over the traced
   * members of each instance (the others' include waiting for the last
   * arrival, which the rendezvous reproduces); every member must issue the
   * same number on a channel. Model: priced for the group's placement. */
  int64_t modelled = 0, measured = 0;
  for (size_t c = 0; !rc && c < nchans; c++) {
    uint32_t nmem = xg[c].nmem;
    size_t *cur = sc__calloc(ctx, nmem ? nmem : 1, sizeof *cur);
    if (!cur) {
      rc = SC_ENOMEM;
      break;
    }
    int slot = chans[c].slot;
    for (;;) {
      double least = INFINITY;
      int have = 0, missing = 0;
      for (uint32_t mi = 0; mi < nmem; mi++) {
        uint32_t ri = xmem[xg[c].mem_off + mi];
        const sc_jrank *r = &job->ranks[ri];
        const rprep *x = &rp[ri];
        size_t off = 0;
        for (int s2 = 0; s2 < slot; s2++) off += x->cv.count[s2];
        size_t q = cur[mi];
        while (q < x->cv.count[slot]) {
          uint32_t k = x->cv.seq[off + q];
          if (r->ops[k].kind == SC_JOP_COLL && x->chan[k] == c) break;
          q++;
        }
        cur[mi] = q;
        if (q < x->cv.count[slot]) {
          have++;
          uint32_t k = x->cv.seq[off + q];
          if ((double)r->ops[k].dur_ns < least) least = (double)r->ops[k].dur_ns;
        } else missing++;
      }
      if (!have) break;
      if (missing) {
        rc = sc__error(ctx, SC_EUNSUPPORTED,
                       "group %u: the traced ranks issue different numbers of collectives on its "
                       "stream (different streams per rank are not supported)", chans[c].group);
        break;
      }
      for (uint32_t mi = 0; mi < nmem; mi++) {
        uint32_t ri = xmem[xg[c].mem_off + mi];
        rprep *x = &rp[ri];
        size_t off = 0;
        for (int s2 = 0; s2 < slot; s2++) off += x->cv.count[s2];
        x->dur[x->cv.seq[off + cur[mi]]] = least;
        cur[mi]++;
      }
    }
    sc__free(ctx, cur, (nmem ? nmem : 1) * sizeof *cur);
  }
  for (size_t i = 0; !rc && i < nr; i++) {
    const sc_jrank *r = &job->ranks[i];
    for (size_t k = 0; k < r->nops; k++) {
      const sc_jop *op = &r->ops[k];
      if (op->kind != SC_JOP_COLL) continue;
      const gdef *g = &groups[op->group];
      if (model && op->coll < SC_COLL_COUNT && op->bytes > 0) {
        /* A group of one moves nothing. */
        rp[i].dur[k] = g->n > 1 ? cost.comm->coll_ns(&cost, op->coll, op->bytes, &g->pl) : 0;
        modelled++;
      } else if (model && retarget && op->coll < SC_COLL_COUNT && g->traced_pl.n > 1) {
        /* Size unknown: scale the traced time by the model's ratio between
         * the new and the traced placement, at a nominal 64 MiB. */
        double b = 64.0 * 1048576.0;
        double t0 = cost.comm->coll_ns(&cost, op->coll, b, &g->traced_pl);
        double t1 = cost.comm->coll_ns(&cost, op->coll, b, &g->pl);
        if (t0 > 0) rp[i].dur[k] *= t1 / t0;
        measured++;
      } else {
        measured++;
      }
    }
  }

  /* Phase 4: the engine programs. */
  int64_t priced = 0;
  double priced_busy = 0;
  for (size_t i = 0; !rc && i < nr; i++) {
    const sc_jrank *r = &job->ranks[i];
    const conv *cv = &rp[i].cv;
    rank_prog[i] = (uint32_t)i;
    rank_global[i] = r->rank;
    sc_program *p = &wl.progs[i];
    size_t off = 0;
    for (int s = 0; !rc && s < SC_ST_COUNT; s++) {
      p->nops[s] = cv->count[s];
      p->cap[s] = cv->count[s] ? cv->count[s] : 1;
      p->ops[s] = sc__calloc(ctx, p->cap[s], sizeof(sc_op));
      if (!p->ops[s]) rc = SC_ENOMEM;
      for (size_t q = 0; !rc && q < cv->count[s]; q++) {
        uint32_t k = cv->seq[off + q];
        const sc_jop *jo = &r->ops[k];
        sc_op *op = &p->ops[s][q];
        op->layer = SC_NO_LAYER;
        op->phase = SC_PH_FWD;
        op->label = SC_L_OPTIM;
        op->mb = jo->name; /* the name, for op_name() */
        op->dep_off = (uint32_t)p->ndeps;
        switch (jo->kind) {
        case SC_JOP_KERNEL:
          op->kind = (uint8_t)sc__kernel_kind(sc__job_str(job, jo->name));
          op->cat = SC_CAT_COMPUTE;
          op->work = (double)jo->dur_ns;
          if (jo->shape) {
            op->work = priced_ns(&cost, r, jo, (int)cfg->training.fp8_recipe);
            priced++;
            priced_busy += op->work;
            int cls = r->shapes[jo->shape - 1].cls;
            if (sc__jshape_gemm(cls) || cls == SC_JSHAPE_CONV) op->kind = SC_OP_GEMM;
            if (sc__jshape_attn(cls)) op->kind = SC_OP_ATTN;
          }
          break;
        case SC_JOP_MEMCPY:
        case SC_JOP_MEMSET:
          op->kind = SC_OP_ELEMWISE;
          op->cat = SC_CAT_COMPUTE;
          op->work = (double)jo->dur_ns;
          break;
        case SC_JOP_COLL:
          op->kind = SC_OP_COLL;
          op->coll = jo->coll < SC_COLL_COUNT ? jo->coll : SC_COLL_ALLREDUCE;
          op->cat = groups[jo->group].ep               ? SC_CAT_EP
                    : groups[jo->group].spans_replicas ? SC_CAT_DP
                    : groups[jo->group].cp             ? SC_CAT_CP
                                                       : SC_CAT_TP;
          op->peer = rp[i].chan[k];
          op->work = rp[i].dur[k];
          break;
        case SC_JOP_SEND:
        case SC_JOP_RECV: {
          /* A peer among the simulated ranks (shard.c's pipeline stages):
           * an engine transfer paired with the peer's stream that talks to
           * this rank, priced by the comm model for the link between them.
           * Otherwise no peer to pair with: a transfer of traced duration. */
          int64_t pi = -1, ps = -1;
          for (size_t u = 0; jo->peer >= 0 && u < nr && pi < 0; u++)
            if (job->ranks[u].rank == jo->peer) pi = (int64_t)u;
          /* The peer's stream of the opposite kind that talks to this rank;
           * shard.c's pair by stream id (send k, receive k ^ 1), since with
           * model chunks and pp = 2 both directions share the peer. */
          int64_t my_id = r->streams[jo->stream].id, first = -1;
          for (size_t u = 0; pi >= 0 && u < job->ranks[pi].nops && ps < 0; u++) {
            const sc_jop *po = &job->ranks[pi].ops[u];
            if (po->peer != r->rank || po->kind != (jo->kind == SC_JOP_SEND ? SC_JOP_RECV : SC_JOP_SEND)) continue;
            if (first < 0) first = rp[pi].cv.slot_of[po->stream];
            if (my_id >= SC_SHARD_ST_FSEND && my_id <= SC_SHARD_ST_RBRECV &&
                job->ranks[pi].streams[po->stream].id == (my_id ^ 1))
              ps = rp[pi].cv.slot_of[po->stream];
          }
          if (ps < 0) ps = first;
          op->cat = SC_CAT_PP;
          if (ps < 0) {
            op->kind = SC_OP_HOST;
            op->work = (double)jo->dur_ns;
            break;
          }
          op->kind = jo->kind == SC_JOP_SEND ? SC_OP_SEND : SC_OP_RECV;
          op->peer = SC_DEP(ps, pi);
          int64_t na = r->rank / gpn, nb = job->ranks[pi].rank / gpn, npl = cost.nodes_per_leaf;
          int tier = na == nb ? SC_TIER_NODE : npl > 0 && na / npl != nb / npl ? SC_TIER_SPINE : SC_TIER_LEAF;
          op->work = cost.comm->p2p_ns(&cost, jo->bytes, tier);
          break;
        }
        default: /* host, sync, idle, grad */
          op->kind = SC_OP_HOST;
          op->cat = SC_CAT_BUBBLE;
          op->work = (double)jo->dur_ns;
          if (jo->shape) {
            op->work = priced_ns(&cost, r, jo, (int)cfg->training.fp8_recipe);
            priced++;
          }
          break;
        }
        /* Traced durations and priced ones alike within the engine's bounds
         * (ir_int.h, SC_WORK_MAX: 13 days). */
        if (!(op->work >= 0 && op->work <= SC_WORK_MAX)) {
          rc = sc__error(ctx, SC_EINVAL, "%s: rank %lld op %u (%.200s): duration %.3g ns out of "
                         "range [0, %.3g]",
                         sc__job_str(job, r->source), (long long)r->rank, k,
                         sc__job_str(job, jo->name), op->work, SC_WORK_MAX);
          break;
        }
        for (uint32_t d = 0; !rc && d < jo->ndeps; d++) {
          uint32_t dep = r->deps[jo->dep_off + d];
          int ds = cv->slot_of[r->ops[dep].stream];
          uint32_t di = cv->pos[dep];
          if (ds == s) {
            if (di < q) continue; /* implied by slot order */
            rc = sc__error(ctx, SC_EINVAL, "%s: rank %lld op %u depends on a later op of its stream",
                           sc__job_str(job, r->source), (long long)r->rank, k);
            break;
          }
          if (op->ndeps == UINT16_MAX) {
            rc = sc__error(ctx, SC_EUNSUPPORTED, "op with too many dependencies");
            break;
          }
          if (sc__grow(ctx, (void **)&p->deps, sizeof *p->deps, &p->deps_cap, p->ndeps + 1)) {
            rc = SC_ENOMEM;
            break;
          }
          p->deps[p->ndeps++] = SC_DEP(ds, di);
          op->ndeps++;
        }
      }
      off += cv->count[s];
    }
  }
  if (!rc) {
    wl.nranks = (uint32_t)nr;
    wl.rank_prog = rank_prog;
    wl.rank_global = rank_global;
    wl.groups = xg;
    wl.ngroups = (uint32_t)nchans;
    wl.group_members = xmem;
    wl.op_name = op_name;
    wl.stream_name = stream_name;
    wl.names_ud = nm;
    if (sc__checks(ctx)) rc = check_programs(ctx, &wl);
  }
  sc_engine_result res;
  if (!rc) {
    /* Traced compute already carries its interference, and traced
     * collectives their link sharing: neither is applied again. Priced
     * (ex-situ) kernels get the configured interference model. */
    sc_engine_opts eo = {0, priced ? cfg->simulation.interference : SC_INTERF_NONE,
                         model ? cfg->simulation.share_links : 0, trace, trace_ud, NULL,
                         sink, sink_ud, 0, NULL, NULL,
                         topts ? (int)topts->format : SC_TRACE_OUT_JSON,
                         topts ? topts->ranks : NULL, topts ? topts->nranks : 0, NULL};
    sc_cost run_cost = cost;
    run_cost.comm = &fixed_comm;
    rc = sc__engine_run(ctx, &wl, &run_cost, &eo, &res);
  }
  if (!rc) {
    double it = (double)(iters > 0 ? iters : 1);
    out->world = W2;
    out->traced_world = W;
    out->dp = dp;
    out->traced_dp = dp0;
    out->simulated_ranks = (int64_t)nr;
    out->iterations = iters > 0 ? iters : 1;
    out->ops = res.ops;
    out->events = res.events;
    out->traced_step_s = (double)span / 1e9 / it;
    out->predicted_step_s = (double)res.step_ns / 1e9 / it;
    /* A GPU trace priced ex-situ on another GPU than its own: its measured
     * step is shown, not compared. */
    const char *tg = priced ? sc_job_gpu_preset(job) : NULL;
    out->traced_gpu = tg && strcmp(tg, cfg->cluster.gpu) ? tg : NULL;
    out->error_pct = out->traced_step_s > 0 && !retarget && !out->traced_gpu
                         ? 100.0 * (out->predicted_step_s - out->traced_step_s) / out->traced_step_s
                         : 0;
    for (int c = 0; c < SC_CAT_COUNT; c++) out->breakdown_s[c] = res.breakdown_s[c] / it;
    double busy = 0;
    for (size_t i = 0; i < nr; i++)
      for (size_t k = 0; k < job->ranks[i].nops; k++) {
        int kind = job->ranks[i].ops[k].kind;
        if (kind != SC_JOP_HOST && kind != SC_JOP_SYNC && kind != SC_JOP_IDLE)
          busy += (double)job->ranks[i].ops[k].dur_ns;
      }
    out->gpu_busy_s = (busy + priced_busy) / 1e9 / (double)nr / it;
    out->priced_ops = priced;
    out->modelled_collectives = modelled;
    out->measured_collectives = measured;
    out->merged_streams = merged;
    out->comm = model ? "model" : "measured";
    out->gpu = cost.hw ? cost.hw->name : "";
  }
  for (size_t i = 0; rp && i < nr; i++) {
    size_t n = job->ranks[i].nops ? job->ranks[i].nops : 1;
    sc__free(ctx, rp[i].cv.slot_of, job->ranks[i].nstreams ? job->ranks[i].nstreams : 1);
    sc__free(ctx, rp[i].cv.pos, n * sizeof *rp[i].cv.pos);
    sc__free(ctx, rp[i].cv.seq, n * sizeof *rp[i].cv.seq);
    sc__free(ctx, rp[i].chan, n * sizeof *rp[i].chan);
    sc__free(ctx, rp[i].dur, n * sizeof *rp[i].dur);
  }
  sc__free(ctx, rp, nr * sizeof *rp);
  sc__workload_free(ctx, &wl);
  sc__free(ctx, rank_prog, nr * sizeof *rank_prog);
  sc__free(ctx, rank_global, nr * sizeof *rank_global);
  sc__free(ctx, xg, (nchans ? nchans : 1) * sizeof *xg);
  sc__free(ctx, xmem, (nr * (nchans ? nchans : 1)) * sizeof *xmem);
  sc__free(ctx, chans, chans_cap * sizeof *chans);
  if (nm) free_names(ctx, nm);
  sc__free(ctx, nm, sizeof *nm);
  free_groups(ctx, groups, job->ngroups);
  return rc;
}

/* ------------------------------------------------------------ output */

static const char *cp_label(int k) {
  return k == SC_CP_A2A ? "a2a" : k == SC_CP_ALLGATHER ? "allgather" : "p2p";
}

static const char *cp_text(int k) {
  return k == SC_CP_A2A ? " (a2a)" : k == SC_CP_ALLGATHER ? " (all-gather)" : " (ring)";
}

static const char *sched_label(sc_schedule k) {
  return k == SC_SCHED_GPIPE         ? "GPipe"
         : k == SC_SCHED_INTERLEAVED ? "interleaved 1F1B"
         : k == SC_SCHED_ZB_H1       ? "ZB-H1"
         : k == SC_SCHED_ZBV         ? "ZB-V"
                                     : "1F1B";
}

int sc_replay_format(const sc_replay_result *r, sc_format fmt, sc_write_fn w, void *ud) {
  int rc;
  if (fmt == SC_FORMAT_JSON) {
    rc = sc__writef(w, ud,
                    "{\"world\":%lld,\"traced_world\":%lld,\"tp\":%lld,\"pp\":%lld,\"cp\":%lld,"
                    "\"micro_batches\":%lld,\"dp\":%lld,\"traced_dp\":%lld,"
                    "\"simulated_ranks\":%lld,\"iterations\":%lld,\"gpu\":\"%s\",\"comm\":\"%s\","
                    "\"traced_step_s\":%.6f,\"predicted_step_s\":%.6f,",
                    (long long)r->world, (long long)r->traced_world, (long long)r->tp, (long long)r->pp,
                    (long long)r->cp, (long long)r->micro_batches, (long long)r->dp,
                    (long long)r->traced_dp, (long long)r->simulated_ranks, (long long)r->iterations,
                    r->gpu, r->comm, r->traced_step_s, r->predicted_step_s);
    if (!rc && (r->tp > 1 || r->pp > 1 || r->micro_batches > 1 || r->fsdp > 1 || r->cp > 1 || r->ep > 1))
      rc = sc__writef(w, ud,
                      "\"schedule\":\"%s\",\"vpp\":%lld,\"fsdp\":%lld,\"fsdp_keep\":%s,\"sequence_parallel\":%s,"
                      "\"async_tp\":%s,\"cp_comm\":\"%s\",",
                      sc_enum_name(SC_ENUM_SCHEDULE, (int)r->schedule), (long long)(r->vpp > 1 ? r->vpp : 1),
                      (long long)r->fsdp, r->fsdp_keep ? "true" : "false", r->sequence_parallel ? "true" : "false",
                      r->async_tp ? "true" : "false", cp_label(r->cp_comm));
    if (!rc && r->ep > 1) rc = sc__writef(w, ud, "\"ep\":%lld,", (long long)r->ep);
    if (!rc && r->layers > 0)
      rc = sc__writef(w, ud, "\"layers\":%lld,\"traced_layers\":%lld,", (long long)r->layers,
                      (long long)r->traced_layers);
    if (!rc && r->fused_kernels > 0) rc = sc__writef(w, ud, "\"fused_kernels\":%lld,", (long long)r->fused_kernels);
    if (!rc && r->fp8_gemms > 0) rc = sc__writef(w, ud, "\"fp8_gemms\":%lld,", (long long)r->fp8_gemms);
    if (!rc && r->traced_step_s > 0 && r->dp == r->traced_dp && !r->traced_gpu)
      rc = sc__writef(w, ud, "\"error_pct\":%.2f,", r->error_pct);
    if (!rc && r->traced_gpu) rc = sc__writef(w, ud, "\"traced_gpu\":\"%s\",", r->traced_gpu);
    if (!rc)
      rc = sc__writef(w, ud, "\"gpu_busy_s\":%.6f,\"modelled_collectives\":%lld,\"measured_collectives\":%lld,"
                             "\"priced_ops\":%lld,\"ddp_buckets\":%lld,\"ops\":%lld,\"events\":%lld,\"breakdown\":{",
                      r->gpu_busy_s, (long long)r->modelled_collectives,
                      (long long)r->measured_collectives, (long long)r->priced_ops,
                      (long long)r->ddp_buckets, (long long)r->ops, (long long)r->events);
    /* A replayed GPU waiting on its host or idle is no pipeline bubble: its
     * own key (the text says "GPU idle / host"). */
    for (int c = 0; !rc && c < SC_CAT_COUNT; c++)
      rc = sc__writef(w, ud, "%s\"%s\":%.6f", c ? "," : "",
                      c == SC_CAT_BUBBLE ? "gpu_idle_host" : sc_category_key(c), r->breakdown_s[c]);
    if (!rc) rc = sc__writef(w, ud, "}}\n");
    return rc;
  }
  rc = sc__writef(w, ud, "replay: %lld traced rank(s) of %lld, %lld iteration(s), GPU %s, collectives %s\n",
                  (long long)r->simulated_ranks, (long long)r->traced_world, (long long)r->iterations,
                  r->gpu, r->comm);
  int sharded = r->tp > 1 || r->pp > 1 || r->micro_batches > 1 || r->fsdp > 1 || r->cp > 1 || r->ep > 1;
  if (!rc && r->layers > 0 && r->layers != r->traced_layers)
    rc = sc__writef(w, ud, "extrapolated: %lld layers (%lld traced; the last traced layer repeated)\n",
                    (long long)r->layers, (long long)r->traced_layers);
  if (!rc && r->fp8_gemms > 0)
    rc = sc__writef(w, ud, "fp8: %lld linear-layer GEMMs of the traced rank(s) on FP8 operands, with their casts\n",
                    (long long)r->fp8_gemms);
  if (!rc && r->fused_kernels > 0)
    rc = sc__writef(w, ud, "compiled: %lld memory-bound kernels of the traced rank(s) fused into the run before "
                    "them (torch.compile)\n", (long long)r->fused_kernels);
  char chunks[48] = "";
  if (r->vpp > 1) snprintf(chunks, sizeof chunks, " x %lld chunks", (long long)r->vpp);
  char dpx[96] = "";
  const char *keep = r->fsdp_keep ? ", kept unsharded" : "";
  if (r->fsdp > 1 && r->fsdp < r->dp) snprintf(dpx, sizeof dpx, " (HSDP: shards of %lld%s)", (long long)r->fsdp, keep);
  else if (r->fsdp > 1) snprintf(dpx, sizeof dpx, " (FSDP%s)", keep);
  else if (r->ep > 1) snprintf(dpx, sizeof dpx, ", EP %lld (expert data parallel %lld)", (long long)r->ep,
                               (long long)(r->dp / r->ep));
  if (!rc && sharded)
    rc = sc__writef(w, ud,
                    "re-targeted: TP %lld%s, CP %lld%s, PP %lld%s (%s, %lld micro-batch(es)), DP %lld%s: world %lld, "
                    "one program per stage\n",
                    (long long)r->tp, r->async_tp ? " (SP, async)" : r->sequence_parallel ? " (SP)" : "",
                    (long long)r->cp, r->cp > 1 ? cp_text(r->cp_comm) : "", (long long)r->pp, chunks,
                    sched_label(r->schedule), (long long)r->micro_batches, (long long)r->dp, dpx,
                    (long long)r->world);
  else if (!rc && r->dp != r->traced_dp)
    rc = sc__writef(w, ud, "re-targeted: data parallel %lld -> %lld (world %lld -> %lld)\n",
                    (long long)r->traced_dp, (long long)r->dp, (long long)r->traced_world, (long long)r->world);
  if (!rc && r->traced_step_s > 0)
    rc = sc__writef(w, ud, "traced step       %10.3f ms%s%s%s%s\n", r->traced_step_s * 1e3,
                    r->dp != r->traced_dp ? " (at the traced scale)" : "", r->traced_gpu ? " (traced on " : "",
                    r->traced_gpu ? r->traced_gpu : "", r->traced_gpu ? ")" : "");
  else if (!rc) rc = sc__writef(w, ud, "traced step              n/a (the trace has no timing)\n");
  if (!rc) rc = sc__writef(w, ud, "predicted step    %10.3f ms", r->predicted_step_s * 1e3);
  if (!rc && r->traced_step_s > 0 && r->dp == r->traced_dp && !r->traced_gpu)
    rc = sc__writef(w, ud, "  (error %+.1f %%)", r->error_pct);
  if (!rc)
    rc = sc__writef(w, ud, "\nGPU busy (%s) %10.3f ms per iteration\n", r->priced_ops ? "priced" : "traced",
                    r->gpu_busy_s * 1e3);
  for (int c = 0; !rc && c < SC_CAT_COUNT; c++)
    if (r->breakdown_s[c] > 0)
      rc = sc__writef(w, ud, "  %-18s %10.3f ms\n",
                      c == SC_CAT_BUBBLE ? (r->pp > 1 ? "bubble, idle, host" : "GPU idle / host")
                                         : sc_category_label(c),
                      r->breakdown_s[c] * 1e3);
  if (!rc)
    rc = sc__writef(w, ud, "collectives: %lld priced by the comm model, %lld with traced durations\n",
                    (long long)r->modelled_collectives, (long long)r->measured_collectives);
  if (!rc && r->priced_ops)
    rc = sc__writef(w, ud, "ex-situ: %lld ops priced on %s by the cost models%s", (long long)r->priced_ops, r->gpu,
                    r->ddp_buckets ? "" : "\n");
  if (!rc && r->ddp_buckets)
    rc = sc__writef(w, ud, "; DDP: %lld gradient bucket all-reduce(s) per step\n", (long long)r->ddp_buckets);
  if (!rc && r->merged_streams)
    rc = sc__writef(w, ud, "note: %lld GPU stream(s) shared an engine stream with another (more streams than slots)\n",
                    (long long)r->merged_streams);
  return rc;
}
