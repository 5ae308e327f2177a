/*
 * bound.c: a lower bound on the step time of a synthesised workload without
 * running the engine (engine_int.h, sc__engine_lower_bound). The sweep
 * (analysis/sweep.c) uses it to skip candidates that cannot reach its top
 * ranks. It keeps every ordering constraint the engine obeys on the folded
 * job (one rank per pipeline stage) and drops everything that can only make
 * an op later: communication is free, collectives do not wait for other
 * members, compute runs at full speed. sc__engine_compute_bound is the
 * cheaper, looser bound of one stream's compute alone.
 */
#include "engine/engine_int.h"

/* Per program (stage): the next op of each stream, the end of the op before
 * it, where each stream's op ends are kept (off), which streams may advance
 * (ready) and which wait for an op of another stream (waiters, by that
 * stream), as the engine's try_advance does. */
typedef struct bound_prog {
  size_t head[SC_ST_COUNT];
  int64_t free_ns[SC_ST_COUNT]; /* the stream is free from here */
  size_t off[SC_ST_COUNT];
  uint16_t ready, waiters[SC_ST_COUNT];
  uint32_t wait_idx[SC_ST_COUNT]; /* a waiting stream's dependency index */
  int queued;
} bound_prog;

typedef struct bounder {
  const sc_workload *wl;
  bound_prog *bp;
  int64_t *end_ns; /* per op, all programs: end time */
  uint32_t *queue;
  size_t qhead, qlen, nprogs;
} bounder;

static void enqueue(bounder *Bd, uint32_t p) {
  if (Bd->bp[p].queued) return;
  Bd->bp[p].queued = 1;
  Bd->queue[(Bd->qhead + Bd->qlen++) % Bd->nprogs] = p;
}

/* Earliest start of program p's op at the head of stream s: after the
 * stream's previous op and every dependency; -1 while a dependency is not
 * done (*blocked: its stream, *idx: its index). */
static int64_t ready_ns(const bounder *Bd, uint32_t p, int s, int *blocked, uint32_t *idx) {
  const sc_program *pg = &Bd->wl->progs[p];
  const bound_prog *b = &Bd->bp[p];
  const sc_op *op = &pg->ops[s][b->head[s]];
  int64_t t = b->free_ns[s];
  for (uint32_t d = 0; d < op->ndeps; d++) {
    uint32_t dep = pg->deps[op->dep_off + d];
    uint32_t ds = SC_DEP_STREAM(dep), di = SC_DEP_INDEX(dep);
    if (ds >= SC_ST_COUNT || di >= b->head[ds]) {
      *blocked = ds < SC_ST_COUNT ? (int)ds : -1;
      *idx = di;
      return -1;
    }
    int64_t e = Bd->end_ns[b->off[ds] + di];
    if (e > t) t = e;
  }
  return t;
}

/* The head op of (p, s) ends at `end`: the stream moves on, and the streams
 * waiting for it may start. */
static void retire(bounder *Bd, uint32_t p, int s, int64_t end) {
  bound_prog *b = &Bd->bp[p];
  Bd->end_ns[b->off[s] + b->head[s]] = end;
  b->head[s]++;
  b->free_ns[s] = end;
  b->ready |= (uint16_t)(1u << s);
  for (unsigned w = b->waiters[s]; w; w &= w - 1) {
    int x = 0;
    while (!(w & (1u << x))) x++;
    if (b->wait_idx[x] < b->head[s]) {
      b->ready |= (uint16_t)(1u << x);
      b->waiters[s] &= (uint16_t)~(1u << x);
    }
  }
}

/* Advances the ready streams of program p as far as the constraints allow;
 * a transfer completed with another program queues it. A transfer whose
 * other side is not ready waits for that side: the second side to become
 * ready completes the pair. */
static void advance(bounder *Bd, uint32_t p) {
  const sc_program *pg = &Bd->wl->progs[p];
  int64_t pp = (int64_t)Bd->nprogs;
  bound_prog *b = &Bd->bp[p];
  while (b->ready) {
    int s = 0;
    while (!(b->ready & (1u << s))) s++;
    b->ready &= (uint16_t)~(1u << s);
    if (b->head[s] >= pg->nops[s]) continue;
    const sc_op *op = &pg->ops[s][b->head[s]];
    int blocked = -1;
    uint32_t idx = 0;
    int64_t t = ready_ns(Bd, p, s, &blocked, &idx);
    if (t < 0) {
      if (blocked >= 0) {
        b->waiters[blocked] |= (uint16_t)(1u << s);
        b->wait_idx[s] = idx;
      }
      continue;
    }
    if (op->kind == SC_OP_SEND || op->kind == SC_OP_RECV) {
      /* A transfer starts when both sides are ready (the engine pairs the
       * k-th op of a p2p stream with the k-th of its peer's). */
      int ps = sc__p2p_streams[s].peer, qblocked;
      uint32_t qidx;
      uint32_t q = (uint32_t)((((int64_t)p + sc__p2p_streams[s].delta) % pp + pp) % pp);
      if (!sc__p2p_streams[s].delta || Bd->bp[q].head[ps] >= Bd->wl->progs[q].nops[ps])
        continue;
      int64_t tq = ready_ns(Bd, q, ps, &qblocked, &qidx);
      if (tq < 0) continue; /* (q, ps) completes the pair when it is ready */
      if (tq > t) t = tq;
      retire(Bd, q, ps, t);
      if (q != p) enqueue(Bd, q);
      retire(Bd, p, s, t);
    } else if (op->kind == SC_OP_COLL) {
      retire(Bd, p, s, t);
    } else { /* compute (and host) ops at rate 1 or slower */
      retire(Bd, p, s, t + (int64_t)op->work);
    }
  }
}

int sc__engine_lower_bound(sc_ctx *ctx, const sc_workload *wl, int64_t *bound_ns) {
  *bound_ns = 0;
  if (wl->nranks > 0 || wl->nprogs < 1) return SC_OK; /* explicit workloads: no bound */
  size_t nprogs = (size_t)wl->nprogs, nops = 0;
  for (size_t p = 0; p < nprogs; p++)
    for (int s = 0; s < SC_ST_COUNT; s++) nops += wl->progs[p].nops[s];
  bounder Bd = {wl, NULL, NULL, NULL, 0, 0, nprogs};
  Bd.bp = sc__calloc(ctx, nprogs, sizeof *Bd.bp);
  Bd.end_ns = sc__malloc(ctx, (nops ? nops : 1) * sizeof *Bd.end_ns);
  Bd.queue = sc__malloc(ctx, nprogs * sizeof *Bd.queue);
  int rc = Bd.bp && Bd.end_ns && Bd.queue ? SC_OK : SC_ENOMEM;
  if (!rc) {
    size_t off = 0;
    for (size_t p = 0; p < nprogs; p++)
      for (int s = 0; s < SC_ST_COUNT; s++) {
        Bd.bp[p].off[s] = off;
        off += wl->progs[p].nops[s];
      }
    for (uint32_t p = 0; p < (uint32_t)nprogs; p++) {
      Bd.bp[p].ready = (uint16_t)((1u << SC_ST_COUNT) - 1);
      enqueue(&Bd, p);
    }
    while (Bd.qlen) {
      uint32_t p = Bd.queue[Bd.qhead];
      Bd.qhead = (Bd.qhead + 1) % nprogs;
      Bd.qlen--;
      Bd.bp[p].queued = 0;
      advance(&Bd, p);
    }
    /* Every op retired: the latest end bounds the step. Ops left over (the
     * engine would deadlock) give no bound. */
    int64_t step = 0;
    int complete = 1;
    for (size_t p = 0; p < nprogs; p++)
      for (int s = 0; s < SC_ST_COUNT; s++) {
        if (Bd.bp[p].head[s] < wl->progs[p].nops[s]) complete = 0;
        if (Bd.bp[p].free_ns[s] > step) step = Bd.bp[p].free_ns[s];
      }
    if (complete) *bound_ns = step;
  }
  sc__free(ctx, Bd.bp, nprogs * sizeof *Bd.bp);
  sc__free(ctx, Bd.end_ns, (nops ? nops : 1) * sizeof *Bd.end_ns);
  sc__free(ctx, Bd.queue, nprogs * sizeof *Bd.queue);
  if (rc) return sc__error(ctx, rc, "out of memory bounding the step");
  return SC_OK;
}

int64_t sc__engine_compute_bound(const sc_workload *wl) {
  int64_t best = 0;
  if (wl->nranks > 0) return 0;
  for (int64_t p = 0; p < wl->nprogs; p++)
    for (int s = 0; s < SC_ST_COUNT; s++) {
      const sc_program *pg = &wl->progs[p];
      int64_t sum = 0;
      for (size_t i = 0; i < pg->nops[s]; i++) {
        const sc_op *op = &pg->ops[s][i];
        if (op->kind == SC_OP_COLL || op->kind == SC_OP_SEND || op->kind == SC_OP_RECV) continue;
        sum += (int64_t)op->work; /* as advance() times it */
      }
      if (sum > best) best = sum;
    }
  return best;
}
