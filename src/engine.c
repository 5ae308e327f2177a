/*
 * engine.c: the discrete-event engine. Replays the per-rank programs of a
 * workload: an op starts when its stream is free and its dependencies are done;
 * collectives start on all members when the last one arrives (rendezvous);
 * send/recv pairs start when both sides are ready. Running ops progress at a
 * rate that changes whenever the set of running ops on their ranks changes
 * (interference, NIC sharing): remaining work is kept and rescaled (fluid
 * model). Events are ordered by (time, sequence), so runs are deterministic.
 */
#include "engine_int.h"

#include <math.h>
#include <stdio.h>

#define NONE UINT32_MAX

enum { ST_IDLE = 0, ST_WAIT, ST_RUN };
enum { ACT_COMPUTE = 0, ACT_COLL, ACT_P2P };

typedef struct ginst {
  uint32_t mem_off, nmem; /* simulated members in sim.members */
  uint32_t arrived;
  sc_placement pl;        /* placement of the full logical group */
} ginst;

typedef struct rstate {
  uint32_t head[SC_ST_COUNT]; /* next op per stream; ops before it are done */
  uint32_t act[SC_ST_COUNT];  /* running or pending activity per stream */
  uint8_t st[SC_ST_COUNT];
  int32_t n_comp, n_comm, n_net;
  int32_t n_cat[SC_CAT_COUNT];
  int64_t last_ns;            /* breakdown accounted up to here */
  int64_t end_ns;             /* end of the rank's last op */
  double acc[SC_CAT_COUNT];
  int64_t global;             /* global rank */
  uint32_t stage;
} rstate;

typedef struct activity {
  double remaining; /* ns of work left at rate 1 */
  double rate;
  int64_t last_ns, start_ns;
  const sc_op *op;
  uint32_t version;
  uint32_t a, b;    /* compute: rank a; coll: group instance a; p2p: ranks a -> b */
  uint8_t type, sa, sb, net;
  uint32_t next_free;
} activity;

typedef struct event {
  int64_t t;
  uint64_t seq;
  uint32_t act, version;
} event;

typedef struct tracebuf {
  sc_write_fn w;
  void *ud;
  char buf[1 << 16];
  size_t len;
  int rc, first;
} tracebuf;

typedef struct sim {
  sc_ctx *ctx;
  const sc_config *cfg;
  const sc_workload *wl;
  const sc_cost *cost;
  int fold, interf, share;
  int64_t stride;     /* ranks per pipeline stage: tp*cp*dp */
  uint32_t nsim;
  rstate *ranks;
  ginst *inst;
  uint32_t ninst;
  uint32_t *inst_of;  /* [nsim * SC_GRP_COUNT] */
  uint32_t *members;
  activity *acts;
  size_t nacts, acts_cap;
  uint32_t free_act;
  event *heap;
  size_t nheap, heap_cap;
  uint64_t seq;
  int64_t now;
  int64_t events, ops;
  tracebuf *trace;
  int rc;
} sim;

/* ------------------------------------------------------------ event heap */

static int ev_less(const event *x, const event *y) {
  return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static void heap_push(sim *S, int64_t t, uint32_t act, uint32_t version) {
  if (sc__grow(S->ctx, (void **)&S->heap, sizeof(event), &S->heap_cap, S->nheap + 1)) {
    S->rc = SC_ENOMEM;
    return;
  }
  size_t i = S->nheap++;
  event e = {t, S->seq++, act, version};
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!ev_less(&e, &S->heap[p])) break;
    S->heap[i] = S->heap[p];
    i = p;
  }
  S->heap[i] = e;
}

static event heap_pop(sim *S) {
  event top = S->heap[0];
  event last = S->heap[--S->nheap];
  size_t i = 0, n = S->nheap;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const event *best = &last;
    if (l < n && ev_less(&S->heap[l], best)) m = l, best = &S->heap[l];
    if (r < n && ev_less(&S->heap[r], best)) m = r;
    if (m == i) break;
    S->heap[i] = S->heap[m];
    i = m;
  }
  if (n) S->heap[i] = last;
  return top;
}

/* ------------------------------------------------------------ trace output */

static void tb_flush(tracebuf *tb) {
  if (tb->len && !tb->rc) tb->rc = tb->w(tb->ud, tb->buf, tb->len);
  tb->len = 0;
}

static void tb_printf(tracebuf *tb, const char *fmt, ...) SC_PRINTF(2, 3);
static void tb_printf(tracebuf *tb, const char *fmt, ...) {
  if (sizeof tb->buf - tb->len < 512) tb_flush(tb);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tb->buf + tb->len, sizeof tb->buf - tb->len, fmt, ap);
  va_end(ap);
  if (n > 0) tb->len += (size_t)n < sizeof tb->buf - tb->len ? (size_t)n : 0;
}

static void trace_begin(sim *S) {
  tracebuf *tb = S->trace;
  tb_printf(tb, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  tb->first = 1;
  for (uint32_t i = 0; i < S->nsim; i++) {
    const rstate *r = &S->ranks[i];
    tb_printf(tb, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":\"rank %lld (stage %u)\"}}",
              tb->first ? "" : ",\n", (long long)r->global, (long long)r->global, r->stage);
    tb->first = 0;
    for (int s = 0; s < SC_ST_COUNT; s++)
      tb_printf(tb, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                (long long)r->global, s, sc__stream_name(s));
  }
}

static void trace_op(sim *S, const rstate *r, int stream, const sc_op *op, int64_t start,
                     int64_t end) {
  static const char *const phase[] = {"fwd", "bwd", "wgrad", "recompute", "step"};
  tracebuf *tb = S->trace;
  char layer[24] = "";
  if (op->layer != SC_NO_LAYER) snprintf(layer, sizeof layer, " L%u", op->layer);
  tb_printf(tb, ",\n{\"ph\":\"X\",\"pid\":%lld,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"name\":\"%s %s%s\",\"cat\":\"%s\",\"args\":{\"mb\":%u,\"chunk\":%u",
            (long long)r->global, stream, (double)start / 1e3, (double)(end - start) / 1e3,
            phase[op->phase], sc__label_name(op->label), layer, sc_category_key(op->cat),
            op->mb, op->chunk);
  if (!sc__opkind_is_compute(op->kind)) tb_printf(tb, ",\"bytes\":%.0f", op->work);
  if (op->kind == SC_OP_COLL) tb_printf(tb, ",\"collective\":\"%s\"", sc__coll_name(op->coll));
  tb_printf(tb, "}}");
}

static void trace_end(sim *S) {
  tb_printf(S->trace, "\n]}\n");
  tb_flush(S->trace);
}

/* ------------------------------------------------------------ mapping, groups */

static int64_t stage_of(const sim *S, int64_t global) { return global / S->stride; }

static int64_t node_of(const sim *S, int64_t global) {
  return global / S->wl->map.gpus_per_node;
}

/* Key of the group instance of `kind` that global rank r belongs to, or -1. */
static int64_t group_key(const sim *S, int kind, int64_t r) {
  const sc_mapping *m = &S->wl->map;
  int64_t tpcp = m->tp * m->cp;
  switch (kind) {
  case SC_GRP_TP:
    return r / m->tp;
  case SC_GRP_DP:
    return stage_of(S, r) * tpcp + r % tpcp;
  case SC_GRP_EMBED: {
    int64_t st = stage_of(S, r);
    if (!S->wl->tied_embed_sync || (st != 0 && st != m->pp - 1)) return -1;
    return r % S->stride;
  }
  }
  return -1;
}

static int64_t group_nkeys(const sim *S, int kind) {
  const sc_mapping *m = &S->wl->map;
  switch (kind) {
  case SC_GRP_TP:
    return m->world / m->tp;
  case SC_GRP_DP:
    return m->pp * m->tp * m->cp;
  default:
    return S->stride;
  }
}

/* Placement of the full logical group of `kind` containing global rank r:
 * members are enumerated in ascending rank order, so nodes change monotonically. */
static sc_placement group_placement(const sim *S, int kind, int64_t r) {
  const sc_mapping *m = &S->wl->map;
  int64_t tpcp = m->tp * m->cp;
  int64_t first, step, n;
  switch (kind) {
  case SC_GRP_TP:
    first = r - r % m->tp, step = 1, n = m->tp;
    break;
  case SC_GRP_DP:
    first = stage_of(S, r) * S->stride + r % tpcp, step = tpcp, n = m->dp;
    break;
  default: /* embedding: same position in the first and last stage */
    first = r % S->stride, step = (m->pp - 1) * S->stride, n = m->pp > 1 ? 2 : 1;
    break;
  }
  sc_placement pl = {n, 0, 0};
  int64_t cur = -1, run = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t node = node_of(S, first + i * (step ? step : 1));
    if (node != cur) {
      pl.nodes++;
      cur = node;
      run = 0;
    }
    if (++run > pl.per_node) pl.per_node = run;
  }
  return pl;
}

static int build_groups(sim *S) {
  size_t total_inst = 0;
  int64_t base[SC_GRP_COUNT];
  for (int k = 0; k < SC_GRP_COUNT; k++) {
    base[k] = (int64_t)total_inst;
    total_inst += (size_t)group_nkeys(S, k);
  }
  S->ninst = (uint32_t)total_inst;
  S->inst = sc__calloc(S->ctx, total_inst, sizeof(ginst));
  S->inst_of = sc__malloc(S->ctx, sizeof(uint32_t) * S->nsim * SC_GRP_COUNT);
  S->members = sc__malloc(S->ctx, sizeof(uint32_t) * S->nsim * SC_GRP_COUNT);
  if (!S->inst || !S->inst_of || !S->members) return SC_ENOMEM;
  for (uint32_t i = 0; i < S->nsim; i++) {
    for (int k = 0; k < SC_GRP_COUNT; k++) {
      int64_t key = group_key(S, k, S->ranks[i].global);
      uint32_t id = key < 0 ? NONE : (uint32_t)(base[k] + key);
      S->inst_of[(size_t)i * SC_GRP_COUNT + k] = id;
      if (id != NONE) S->inst[id].nmem++;
    }
  }
  uint32_t off = 0;
  for (uint32_t g = 0; g < S->ninst; g++) {
    S->inst[g].mem_off = off;
    off += S->inst[g].nmem;
    S->inst[g].nmem = 0;
  }
  for (uint32_t i = 0; i < S->nsim; i++) {
    for (int k = 0; k < SC_GRP_COUNT; k++) {
      uint32_t id = S->inst_of[(size_t)i * SC_GRP_COUNT + k];
      if (id == NONE) continue;
      ginst *g = &S->inst[id];
      if (g->nmem == 0) g->pl = group_placement(S, k, S->ranks[i].global);
      S->members[g->mem_off + g->nmem++] = i;
    }
  }
  return SC_OK;
}

/* ------------------------------------------------------------ activities */

static uint32_t act_new(sim *S) {
  uint32_t id;
  if (S->free_act != NONE) {
    id = S->free_act;
    S->free_act = S->acts[id].next_free;
  } else {
    if (sc__grow(S->ctx, (void **)&S->acts, sizeof(activity), &S->acts_cap, S->nacts + 1)) {
      S->rc = SC_ENOMEM;
      return NONE;
    }
    id = (uint32_t)S->nacts++;
    S->acts[id].version = 0;
  }
  activity *a = &S->acts[id];
  uint32_t v = a->version;
  memset(a, 0, sizeof *a);
  a->version = v + 1;
  return id;
}

static void act_free(sim *S, uint32_t id) {
  S->acts[id].version++;
  S->acts[id].next_free = S->free_act;
  S->free_act = id;
}

/* Category rank r's time counts under right now. */
static int rank_category(const sim *S, const rstate *r) {
  if (r->n_comp > 0) {
    uint32_t a = r->act[SC_ST_COMPUTE];
    return S->acts[a].op->cat;
  }
  if (r->n_cat[SC_CAT_TP]) return SC_CAT_TP;
  if (r->n_cat[SC_CAT_PP]) return SC_CAT_PP;
  if (r->n_cat[SC_CAT_DP]) return SC_CAT_DP;
  return SC_CAT_BUBBLE;
}

static void account(sim *S, rstate *r) {
  if (S->now > r->last_ns) {
    r->acc[rank_category(S, r)] += (double)(S->now - r->last_ns);
    r->last_ns = S->now;
  }
}

static double member_factor(const sim *S, const rstate *r, int net) {
  double f = 1.0;
  if (net && S->share && r->n_net > 1) f /= (double)r->n_net;
  if (S->interf && r->n_comp > 0) f /= 1.0 + S->cost->p.interference_comm;
  return f;
}

static double act_rate(const sim *S, const activity *a) {
  switch (a->type) {
  case ACT_COMPUTE: {
    const rstate *r = &S->ranks[a->a];
    return (S->interf && r->n_comm > 0) ? 1.0 / (1.0 + S->cost->p.interference_compute) : 1.0;
  }
  case ACT_COLL: {
    const ginst *g = &S->inst[a->a];
    double rate = 1.0;
    for (uint32_t i = 0; i < g->nmem; i++) {
      double f = member_factor(S, &S->ranks[S->members[g->mem_off + i]], a->net);
      if (f < rate) rate = f;
    }
    return rate;
  }
  default: {
    double fa = member_factor(S, &S->ranks[a->a], a->net);
    double fb = member_factor(S, &S->ranks[a->b], a->net);
    return fa < fb ? fa : fb;
  }
  }
}

static void schedule_end(sim *S, uint32_t id) {
  activity *a = &S->acts[id];
  double dt = a->remaining / a->rate;
  heap_push(S, S->now + (int64_t)ceil(dt - 1e-9), id, a->version);
}

/* Rescales every running activity on rank r whose rate changed. */
static void refresh_rates(sim *S, uint32_t rank) {
  if (!S->interf && !S->share) return;
  rstate *r = &S->ranks[rank];
  for (int s = 0; s < SC_ST_COUNT; s++) {
    if (r->st[s] != ST_RUN) continue;
    uint32_t id = r->act[s];
    activity *a = &S->acts[id];
    double rate = act_rate(S, a);
    if (rate == a->rate) continue;
    a->remaining -= (double)(S->now - a->last_ns) * a->rate;
    if (a->remaining < 0) a->remaining = 0;
    a->last_ns = S->now;
    a->rate = rate;
    a->version++;
    schedule_end(S, id);
  }
}

/* Marks (rank, stream) as running activity id and updates its counters. */
static void occupy(sim *S, uint32_t rank, int stream, uint32_t id, const sc_op *op, int net) {
  rstate *r = &S->ranks[rank];
  account(S, r);
  r->st[stream] = ST_RUN;
  r->act[stream] = id;
  if (sc__opkind_is_compute(op->kind)) r->n_comp++;
  else {
    r->n_comm++;
    r->n_cat[op->cat]++;
    if (net) r->n_net++;
  }
}

static void release(sim *S, uint32_t rank, int stream, const sc_op *op, int net, int64_t start) {
  rstate *r = &S->ranks[rank];
  account(S, r);
  if (S->trace) trace_op(S, r, stream, op, start, S->now);
  r->st[stream] = ST_IDLE;
  r->act[stream] = NONE;
  r->head[stream]++;
  r->end_ns = S->now;
  S->ops++;
  if (sc__opkind_is_compute(op->kind)) r->n_comp--;
  else {
    r->n_comm--;
    r->n_cat[op->cat]--;
    if (net) r->n_net--;
  }
}

static void start(sim *S, uint32_t id, double work_ns) {
  activity *a = &S->acts[id];
  a->remaining = work_ns;
  a->start_ns = a->last_ns = S->now;
  a->rate = act_rate(S, a);
  schedule_end(S, id);
}

static void start_compute(sim *S, uint32_t rank, int stream, const sc_op *op) {
  uint32_t id = act_new(S);
  if (id == NONE) return;
  activity *a = &S->acts[id];
  a->type = ACT_COMPUTE;
  a->a = rank;
  a->sa = (uint8_t)stream;
  a->op = op;
  occupy(S, rank, stream, id, op, 0);
  start(S, id, op->work);
  refresh_rates(S, rank);
}

static void start_collective(sim *S, uint32_t gid, int stream, const sc_op *op) {
  ginst *g = &S->inst[gid];
  uint32_t id = act_new(S);
  if (id == NONE) return;
  activity *a = &S->acts[id];
  a->type = ACT_COLL;
  a->a = gid;
  a->sa = (uint8_t)stream;
  a->op = op;
  a->net = g->pl.nodes > 1;
  for (uint32_t i = 0; i < g->nmem; i++)
    occupy(S, S->members[g->mem_off + i], stream, id, op, a->net);
  start(S, id, S->cost->comm->coll_ns(S->cost, op->coll, op->work, &g->pl));
  for (uint32_t i = 0; i < g->nmem; i++) refresh_rates(S, S->members[g->mem_off + i]);
}

/* Simulated index of the rank `delta` stages away (with wrap-around). */
static uint32_t peer_of(const sim *S, uint32_t rank, int delta) {
  int64_t pp = S->wl->map.pp;
  int64_t st = S->ranks[rank].stage;
  int64_t st2 = ((st + delta) % pp + pp) % pp;
  if (S->fold) return (uint32_t)st2;
  return (uint32_t)(S->ranks[rank].global + (st2 - st) * S->stride);
}

static void start_p2p(sim *S, uint32_t snd, int ss, uint32_t rcv, int rs, const sc_op *op) {
  uint32_t id = act_new(S);
  if (id == NONE) return;
  activity *a = &S->acts[id];
  a->type = ACT_P2P;
  a->a = snd;
  a->b = rcv;
  a->sa = (uint8_t)ss;
  a->sb = (uint8_t)rs;
  a->op = op;
  a->net = node_of(S, S->ranks[snd].global) != node_of(S, S->ranks[rcv].global);
  occupy(S, snd, ss, id, op, a->net);
  const sc_op *rop = &S->wl->progs[S->ranks[rcv].stage].ops[rs][S->ranks[rcv].head[rs]];
  occupy(S, rcv, rs, id, rop, a->net);
  start(S, id, S->cost->comm->p2p_ns(S->cost, op->work, a->net));
  refresh_rates(S, snd);
  refresh_rates(S, rcv);
}

static int deps_done(const sim *S, const rstate *r, const sc_program *p, const sc_op *op) {
  for (uint32_t d = 0; d < op->ndeps; d++) {
    uint32_t dep = p->deps[op->dep_off + d];
    if (SC_DEP_INDEX(dep) >= r->head[SC_DEP_STREAM(dep)]) return 0;
  }
  return 1;
}

/* Starts every op of rank `rank` whose stream is free and deps are done. */
static void try_advance(sim *S, uint32_t rank) {
  rstate *r = &S->ranks[rank];
  const sc_program *p = &S->wl->progs[r->stage];
  for (int s = 0; s < SC_ST_COUNT && !S->rc; s++) {
    if (r->st[s] != ST_IDLE || r->head[s] >= p->nops[s]) continue;
    const sc_op *op = &p->ops[s][r->head[s]];
    if (op->ndeps && !deps_done(S, r, p, op)) continue;
    switch (op->kind) {
    case SC_OP_COLL: {
      uint32_t gid = S->inst_of[(size_t)rank * SC_GRP_COUNT + op->group];
      if (gid == NONE) { /* not a member: the op is a no-op for this rank */
        S->rc = sc__error(S->ctx, SC_EINVAL, "rank %lld is not in the %s group",
                          (long long)r->global, op->group == SC_GRP_EMBED ? "embedding" : "?");
        return;
      }
      ginst *g = &S->inst[gid];
      r->st[s] = ST_WAIT;
      if (++g->arrived == g->nmem) {
        g->arrived = 0;
        start_collective(S, gid, s, op);
      }
      break;
    }
    case SC_OP_SEND:
    case SC_OP_RECV: {
      int is_send = op->kind == SC_OP_SEND;
      int fwd = (s == SC_ST_FWD_SEND || s == SC_ST_FWD_RECV);
      int delta = (fwd == is_send) ? 1 : -1;
      int ps = fwd ? (is_send ? SC_ST_FWD_RECV : SC_ST_FWD_SEND)
                   : (is_send ? SC_ST_BWD_RECV : SC_ST_BWD_SEND);
      uint32_t peer = peer_of(S, rank, delta);
      r->st[s] = ST_WAIT;
      if (S->ranks[peer].st[ps] == ST_WAIT) {
        if (is_send) start_p2p(S, rank, s, peer, ps, op);
        else start_p2p(S, peer, ps, rank, s,
                       &S->wl->progs[S->ranks[peer].stage].ops[ps][S->ranks[peer].head[ps]]);
      }
      break;
    }
    default:
      start_compute(S, rank, s, op);
      break;
    }
  }
}

static void finish(sim *S, uint32_t id) {
  activity *a = &S->acts[id];
  const sc_op *op = a->op;
  int64_t t0 = a->start_ns;
  switch (a->type) {
  case ACT_COMPUTE: {
    uint32_t rank = a->a;
    release(S, rank, a->sa, op, 0, t0);
    act_free(S, id);
    refresh_rates(S, rank);
    try_advance(S, rank);
    break;
  }
  case ACT_COLL: {
    const ginst *g = &S->inst[a->a];
    int s = a->sa, net = a->net;
    act_free(S, id);
    for (uint32_t i = 0; i < g->nmem; i++) release(S, S->members[g->mem_off + i], s, op, net, t0);
    for (uint32_t i = 0; i < g->nmem; i++) refresh_rates(S, S->members[g->mem_off + i]);
    for (uint32_t i = 0; i < g->nmem; i++) try_advance(S, S->members[g->mem_off + i]);
    break;
  }
  default: {
    uint32_t snd = a->a, rcv = a->b;
    int ss = a->sa, rs = a->sb, net = a->net;
    const sc_op *rop = &S->wl->progs[S->ranks[rcv].stage].ops[rs][S->ranks[rcv].head[rs]];
    act_free(S, id);
    release(S, snd, ss, op, net, t0);
    release(S, rcv, rs, rop, net, t0);
    refresh_rates(S, snd);
    refresh_rates(S, rcv);
    try_advance(S, snd);
    try_advance(S, rcv);
    break;
  }
  }
}

/* ------------------------------------------------------------ memory estimate */

/* Peak memory of the first pipeline stage (it holds the most in-flight
 * activations), GiB: weights, grads, optimizer states (Korthikanti et al.
 * 2022 byte counts) plus activations per layer and micro-batch times the
 * schedule's in-flight micro-batches, plus a framework overhead. */
static double memory_gib(const sc_config *cfg, const sc_workload *wl) {
  const sc_model_cfg *m = &cfg->model;
  double t = (double)cfg->parallel.tp, dp = (double)cfg->parallel.dp;
  double s = (double)m->seq_len, b = (double)cfg->training.micro_batch, h = (double)m->hidden;
  double params = wl->params_per_stage_max;
  double grad_bytes = cfg->training.precision == SC_PREC_FP16 ? 2.0 : 4.0;
  double opt = 12.0 / (cfg->parallel.distributed_optimizer ? dp : 1.0);
  double states = params * (2.0 + grad_bytes + opt);
  int sp = cfg->parallel.sequence_parallel && t > 1;
  double per_layer;
  switch (cfg->training.recompute) {
  case SC_RECOMPUTE_FULL:
    per_layer = 2.0 * s * b * h / (sp ? t : 1.0);
    break;
  default: /* FlashAttention / selective: the a*s^2 term is not stored */
    per_layer = s * b * h * (sp ? 34.0 / t : 10.0 + 24.0 / t);
    break;
  }
  int64_t pp = cfg->parallel.pp, v = cfg->parallel.vpp > 0 ? cfg->parallel.vpp : 1;
  int64_t mbs = cfg->training.global_batch / (cfg->training.micro_batch * cfg->parallel.dp);
  double lpc = (double)m->layers / (double)(pp * v);
  double inflight; /* layer-micro-batches held by stage 0 */
  if (cfg->parallel.schedule == SC_SCHED_GPIPE) inflight = (double)mbs * lpc;
  else if (v > 1) {
    int64_t warm = (pp - 1) * 2 + (v - 1) * pp + 1;
    if (warm > mbs * v) warm = mbs * v;
    inflight = (double)warm * lpc;
  } else inflight = (double)(pp < mbs ? pp : mbs) * lpc;
  double act = per_layer * inflight;
  double overhead = 3.0 * 1073741824.0; /* CUDA context, NCCL buffers, fragmentation (assumed) */
  return (states + act + overhead) / 1073741824.0;
}

/* ------------------------------------------------------------ driver */

static void sim_free(sim *S) {
  sc_ctx *ctx = S->ctx;
  sc__free(ctx, S->ranks, sizeof(rstate) * S->nsim);
  sc__free(ctx, S->inst, sizeof(ginst) * S->ninst);
  sc__free(ctx, S->inst_of, sizeof(uint32_t) * S->nsim * SC_GRP_COUNT);
  sc__free(ctx, S->members, sizeof(uint32_t) * S->nsim * SC_GRP_COUNT);
  sc__free(ctx, S->acts, sizeof(activity) * S->acts_cap);
  sc__free(ctx, S->heap, sizeof(event) * S->heap_cap);
  sc__free(ctx, S->trace, sizeof(tracebuf));
}

static int run(sim *S) {
  const sc_mapping *m = &S->wl->map;
  S->stride = m->tp * m->cp * m->dp;
  int64_t n = S->fold ? m->pp : m->world;
  if (n > (int64_t)UINT32_MAX / SC_GRP_COUNT)
    return sc__error(S->ctx, SC_EUNSUPPORTED, "too many ranks to simulate unfolded");
  S->nsim = (uint32_t)n;
  S->free_act = NONE;
  S->ranks = sc__calloc(S->ctx, S->nsim, sizeof(rstate));
  if (!S->ranks) return SC_ENOMEM;
  for (uint32_t i = 0; i < S->nsim; i++) {
    rstate *r = &S->ranks[i];
    r->global = S->fold ? (int64_t)i * S->stride : (int64_t)i;
    r->stage = (uint32_t)stage_of(S, r->global);
    for (int s = 0; s < SC_ST_COUNT; s++) r->act[s] = NONE;
  }
  int rc = build_groups(S);
  if (rc) return rc;
  if (S->trace) trace_begin(S);
  for (uint32_t i = 0; i < S->nsim && !S->rc; i++) try_advance(S, i);
  while (S->nheap && !S->rc) {
    event e = heap_pop(S);
    if (S->acts[e.act].version != e.version) continue;
    S->now = e.t;
    S->events++;
    finish(S, e.act);
  }
  if (S->rc) return S->rc;
  /* Every stream must have drained; otherwise the programs deadlocked. */
  for (uint32_t i = 0; i < S->nsim; i++) {
    const rstate *r = &S->ranks[i];
    const sc_program *p = &S->wl->progs[r->stage];
    for (int s = 0; s < SC_ST_COUNT; s++)
      if (r->head[s] < p->nops[s]) {
        const sc_op *op = &p->ops[s][r->head[s]];
        return sc__error(S->ctx, SC_EDEADLOCK,
                         "simulation deadlock: rank %lld stream %s stuck at op %u (%s, mb %u)",
                         (long long)r->global, sc__stream_name(s), r->head[s],
                         sc__label_name(op->label), op->mb);
      }
  }
  if (S->trace) {
    trace_end(S);
    if (S->trace->rc) return sc__error(S->ctx, SC_EIO, "cannot write the trace");
  }
  return SC_OK;
}

int sc__engine_run(sc_ctx *ctx, const sc_config *cfg, const sc_workload *wl,
                   const sc_cost *cost, sc_write_fn trace, void *trace_ud, sc_result *out) {
  memset(out, 0, sizeof *out);
  int rc = SC_OK;
  sim S;
  memset(&S, 0, sizeof S);
  S.ctx = ctx;
  S.cfg = cfg;
  S.wl = wl;
  S.cost = cost;
  S.fold = cfg->simulation.fold;
  S.interf = cfg->simulation.interference != SC_INTERF_NONE;
  S.share = cfg->simulation.share_links;
  if (trace) {
    S.trace = sc__calloc(ctx, 1, sizeof(tracebuf));
    if (!S.trace) rc = SC_ENOMEM;
    else {
      S.trace->w = trace;
      S.trace->ud = trace_ud;
    }
  }
  if (!rc) rc = run(&S);
  if (!rc) {
    int64_t step_ns = 0;
    for (uint32_t i = 0; i < S.nsim; i++)
      if (S.ranks[i].end_ns > step_ns) step_ns = S.ranks[i].end_ns;
    S.now = step_ns;
    for (uint32_t i = 0; i < S.nsim; i++) {
      rstate *r = &S.ranks[i];
      account(&S, r); /* tail: waiting for the slowest rank */
      for (int c = 0; c < SC_CAT_COUNT; c++) out->breakdown_s[c] += r->acc[c] / 1e9 / S.nsim;
    }
    double step = (double)step_ns / 1e9;
    double gpus = (double)wl->map.world;
    out->step_time_s = step;
    out->num_gpus = wl->map.world;
    out->tokens_per_s = step > 0 ? (double)cfg->training.global_batch *
                                       (double)cfg->model.seq_len / step
                                 : 0;
    sc__model_flops(cfg, &out->model_flops, &out->hardware_flops);
    if (step > 0) {
      out->tflops_per_gpu = out->model_flops / step / gpus / 1e12;
      out->hw_tflops_per_gpu = out->hardware_flops / step / gpus / 1e12;
      out->mfu = out->model_flops / step / gpus / cost->peak_flops;
      out->hfu = out->hardware_flops / step / gpus / cost->peak_flops;
    }
    out->memory_gib = memory_gib(cfg, wl);
    out->memory_capacity_gib = cost->hw->hbm_gib;
    out->simulated_ranks = S.nsim;
    out->ops = S.ops;
    out->events = S.events;
  }
  sim_free(&S);
  return rc;
}

int sc_simulate(sc_ctx *ctx, const sc_config *cfg, sc_write_fn trace, void *trace_ud,
                sc_result *out) {
  memset(out, 0, sizeof *out);
  sc_cost cost;
  int rc = sc__cost_init(ctx, cfg, &cost);
  if (rc) return rc;
  sc_workload wl;
  rc = sc__workload_build(ctx, cfg, &cost, &wl);
  if (rc) return rc;
#ifndef NDEBUG
  rc = sc__workload_check(ctx, &wl);
#endif
  if (!rc) rc = sc__engine_run(ctx, cfg, &wl, &cost, trace, trace_ud, out);
  sc__workload_free(ctx, &wl);
  return rc;
}
