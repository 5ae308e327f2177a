/*
 * chain.c: how the synthesiser emits ops: dependencies and streams, and for
 * merged workloads (SC_WL_MERGE) the compute chain that folds runs of compute
 * ops into one, TP collectives priced inline, the GEMM memo and the per-layer
 * memo that replays a layer's recorded effect.
 */
#include "synth/build_int.h"

uint32_t sc__syn_emit(builder *B, int stream, const sc_op *tmpl, const uint32_t *deps, int ndeps) {
  if (B->rc) return NONE;
  sc_program *p = B->prog;
  if ((p->nops[stream] >= p->cap[stream] &&
       sc__grow(B->ctx, (void **)&p->ops[stream], sizeof(sc_op), &p->cap[stream],
                p->nops[stream] + 1)) ||
      (p->ndeps + (size_t)ndeps > p->deps_cap &&
       sc__grow(B->ctx, (void **)&p->deps, sizeof(uint32_t), &p->deps_cap,
                p->ndeps + (size_t)ndeps))) {
    B->rc = SC_ENOMEM;
    return NONE;
  }
  sc_op *op = &p->ops[stream][p->nops[stream]];
  *op = *tmpl;
  op->dep_off = (uint32_t)p->ndeps;
  op->ndeps = 0;
  for (int i = 0; i < ndeps; i++) {
    if (deps[i] == NONE) continue;
    p->deps[p->ndeps++] = deps[i];
    op->ndeps++;
  }
  return (uint32_t)p->nops[stream]++;
}

sc_op sc__syn_op(const where *w, int kind, int label, uint8_t cat, double work) {
  sc_op op = {0};
  op.work = work;
  op.kind = (uint8_t)kind;
  op.cat = cat;
  op.label = (uint8_t)label;
  op.phase = w->phase;
  op.layer = w->layer;
  op.chunk = w->chunk;
  op.mb = w->mb;
  return op;
}

/* ------------------------------------------------------------ merging */

/* Merged workloads (SC_WL_MERGE, see synth_int.h) are built here as a
 * chain: while the compute ops on the compute stream follow one another
 * without waiting for another stream, the builder knows their times relative
 * to the chain's first op ("chain time", whole ns as the engine rounds them)
 * and emits one op per run that nothing else needs to see inside.
 *
 * With inline_tp (folded runs, TP inside a node) the TP collectives that
 * follow a compute op are priced here too, not emitted: with one simulated
 * member per group, no NIC and no interference such a collective starts when
 * its compute op has ended and the TP stream is free and runs at rate 1, so
 * its chain time is known. A compute op waiting for it starts later: the gap
 * is exposed TP time, recorded in the op's tp_ns (the engine moves it from
 * compute to TP in the breakdown; during the gap the original compute stream
 * is idle and a TP collective runs, which the breakdown counts as TP). Three
 * things keep this exact, each checked; when one fails the workload is built
 * again without inlining (retry):
 *  - a compute op that waits for another stream starts a new chain at an
 *    unknown time: collectives still running then become a bare op on the
 *    compute stream ending with the last of them ("remainder"), and that
 *    compute op must have waited for the last one in the original too;
 *  - TP collectives that are emitted (a receive's all-gather, after a p2p
 *    receive) keep TP-stream order with the inlined ones: they wait for an op
 *    ending exactly when the last inlined collective ends (ops are split
 *    there when they close: order_tp), and no collective is inlined while an
 *    emitted one may still run;
 *  - a handle to the last compute op never names a bare remainder. */
#define SYM_STREAM 15u  /* handles of inlined collectives: SC_DEP(SYM_STREAM, id) */

static sc_op *last_op(builder *B) {
  sc_program *p = B->prog;
  return &p->ops[SC_ST_COMPUTE][p->nops[SC_ST_COMPUTE] - 1];
}

/* Abandons inlining: the build stops and runs again without it. */
static void merge_retry(builder *B) {
  B->mg.retry = 1;
  if (!B->rc) B->rc = SC_EINVAL;
}

/* Closes the last compute-stream op: it never grows again. With order_tp,
 * an op inside which the last inlined collective ends is split there, so
 * that tp_done names an op ending exactly with it. */
static void close_op(builder *B) {
  merger *M = &B->mg;
  if (!M->open) return;
  M->open = 0;
  if (!M->order_tp || M->tp_done_id == M->last_id || M->t_tp > M->t_c) return;
  size_t idx = B->prog->nops[SC_ST_COMPUTE] - 1;
  if (M->t_tp < M->t_c) { /* op_start < t_tp, as inlined collectives take > 0 ns */
    sc_op *op = last_op(B), rest = *op;
    op->work = (double)(M->t_tp - M->op_start);
    rest.work = (double)(M->t_c - M->t_tp);
    rest.tp_ns = 0; /* all gaps end by the last collective's end */
    if (sc__syn_emit(B, SC_ST_COMPUTE, &rest, NULL, 0) == NONE) return;
    B->prog->nmerged--;
    M->op_start = M->t_tp;
  }
  M->tp_done = SC_DEP(SC_ST_COMPUTE, idx);
  M->tp_done_id = M->last_id;
}

/* Adds to the compute stream, at chain time t_c: gap_ns waiting for inlined
 * collectives, then compute_ns of op work; grows the last op when it is open
 * and of the same category, else starts a new op without dependencies (it
 * starts when the last one ends). */
static void chain_append(builder *B, const where *w, int kind, int label, uint8_t cat,
                         int64_t gap_ns, int64_t compute_ns) {
  merger *M = &B->mg;
  /* Chain times stay below SC_TIME_MAX: each term is at most that, so the
   * sum cannot overflow before the check. */
  if (SC_UNLIKELY(M->t_c + gap_ns + compute_ns > SC_TIME_MAX)) {
    if (!B->rc)
      B->rc = sc__error(B->ctx, SC_EUNSUPPORTED,
                        "the simulated step exceeds %lld ns (73 years): an op's duration is out "
                        "of any physical range",
                        (long long)SC_TIME_MAX);
    return;
  }
  if (M->open) {
    sc_op *last = last_op(B);
    if (last->cat == cat && (int64_t)last->tp_ns + gap_ns <= (int64_t)UINT32_MAX) {
      last->tp_ns += (uint32_t)gap_ns;
      M->t_c += gap_ns + compute_ns;
      last->work = (double)(M->t_c - M->op_start);
      M->flushed = 0;
      return;
    }
  }
  if (gap_ns > (int64_t)UINT32_MAX) {
    merge_retry(B);
    return;
  }
  close_op(B);
  sc_op op = sc__syn_op(w, kind, label, cat, (double)(gap_ns + compute_ns));
  op.tp_ns = (uint32_t)gap_ns;
  if (sc__syn_emit(B, SC_ST_COMPUTE, &op, NULL, 0) == NONE) return;
  B->prog->nmerged--;
  M->op_start = M->t_c;
  M->t_c += gap_ns + compute_ns;
  M->open = 1;
  M->flushed = 0;
}

/* Puts the inlined collectives still running at t_c on the compute stream as
 * a bare op (see the comment above), closed. */
void sc__syn_flush_remainder(builder *B, const where *w) {
  merger *M = &B->mg;
  if (M->t_tp <= M->t_c) return;
  chain_append(B, w, SC_OP_ELEMWISE, SC_L_TP_AR, SC_CAT_COMPUTE, M->t_tp - M->t_c, 0);
  M->must_wait = M->last_id;
}

/* Handle of the last op emitted on the compute stream, or NONE. The only way
 * to name a compute op: taking the handle closes the op, so that a merged
 * workload never grows an op something may depend on. */
uint32_t sc__syn_last_compute(builder *B) {
  if (B->mg.on) {
    if (B->mg.flushed) merge_retry(B);
    close_op(B);
  }
  size_t n = B->prog->nops[SC_ST_COMPUTE];
  return n ? SC_DEP(SC_ST_COMPUTE, n - 1) : NONE;
}

/* Emits a compute op of ns taking the pending waits (last_compute names it);
 * merged workloads add it to the chain instead (see above). */
/* An op longer than SC_WORK_MAX (ir_int.h): refused, the build stops. */
static void work_overflow(builder *B, const char *what, double ns) {
  if (!B->rc)
    B->rc = sc__error(B->ctx, SC_EUNSUPPORTED,
                      "%s would take %.3g ns, more than %.3g ns (13 days): the model or batch is "
                      "out of any physical range",
                      what, ns, SC_WORK_MAX);
}

void sc__syn_compute(builder *B, const where *w, int kind, int label, double ns) {
  uint8_t cat = kind == SC_OP_OPTIMIZER ? SC_CAT_OPTIMIZER : SC_CAT_COMPUTE;
  if (SC_UNLIKELY(!(ns <= SC_WORK_MAX))) {
    work_overflow(B, "a kernel", ns);
    return;
  }
  if (!B->mg.on) {
    sc_op op = sc__syn_op(w, kind, label, cat, ns);
    sc__syn_emit(B, SC_ST_COMPUTE, &op, B->wait, B->nwait);
    B->nwait = 0;
    return;
  }
  merger *M = &B->mg;
  int64_t d = sc__duration_ns(ns);
  B->prog->nmerged++; /* an op of the unmerged workload; emitted ops count -1 */
  /* Split the waits: ops of other streams, and inlined collectives. */
  uint32_t real[SC_SYN_WAITS];
  int nreal = 0;
  int64_t ready = 0;
  uint32_t waited = 0; /* last inlined collective waited for */
  for (int i = 0; i < B->nwait; i++) {
    uint32_t h = B->wait[i];
    if (SC_DEP_STREAM(h) != SYM_STREAM) {
      real[nreal++] = h;
      if (h == M->real_tp) M->real_tp = NONE;
      continue;
    }
    uint32_t id = SC_DEP_INDEX(h);
    if (id > waited) waited = id;
    if (id < M->first_id) continue; /* of an earlier chain: done */
    if (M->last_id - id >= TP_RING) {
      merge_retry(B);
      return;
    }
    if (M->tp_end[id % TP_RING] > ready) ready = M->tp_end[id % TP_RING];
  }
  B->nwait = 0;
  if (M->must_wait) {
    if (waited < M->must_wait) {
      merge_retry(B);
      return;
    }
    M->must_wait = 0;
  }
  if (!nreal) {
    int64_t start = ready > M->t_c ? ready : M->t_c;
    chain_append(B, w, kind, label, cat, start - M->t_c, d);
    return;
  }
  /* Starts at a time unknown here: a new chain. */
  if (M->t_tp > M->t_c) {
    if (waited < M->last_id) {
      merge_retry(B);
      return;
    }
    sc__syn_flush_remainder(B, w);
    M->must_wait = 0;
  }
  close_op(B);
  sc_op op = sc__syn_op(w, kind, label, cat, (double)d);
  if (sc__syn_emit(B, SC_ST_COMPUTE, &op, real, nreal) == NONE) return;
  B->prog->nmerged--;
  M->op_start = 0;
  M->t_c = d;
  M->t_tp = 0;
  M->first_id = M->last_id + 1;
  M->open = 1;
  M->flushed = 0;
}

void sc__syn_add_wait(builder *B, uint32_t dep) {
  if (dep != NONE && B->nwait < SC_SYN_WAITS) B->wait[B->nwait++] = dep;
}

/* Emits a collective on `stream` after `after` (a dep handle or NONE). */
uint32_t sc__syn_collective(builder *B, const where *w, int stream, int group, int coll,
                           int label, int cat, double bytes, uint32_t after) {
  sc_op op = {0};
  op.work = bytes;
  op.kind = SC_OP_COLL;
  op.cat = (uint8_t)cat;
  op.coll = (uint8_t)coll;
  op.group = (uint8_t)group;
  op.label = (uint8_t)label;
  op.phase = w->phase;
  op.layer = w->layer;
  op.chunk = w->chunk;
  op.mb = w->mb;
  B->prog->groups_used |= (uint16_t)(1u << group);
  uint32_t idx = sc__syn_emit(B, stream, &op, &after, 1);
  return idx == NONE ? NONE : SC_DEP(stream, idx);
}

/* Time of a TP collective as the engine prices it: the comm model on the
 * group's placement (one node: inline_tp), memoised. */
static double tp_coll_ns(builder *B, int coll, double bytes) {
  merger *M = &B->mg;
  for (int i = 0; i < M->nprice; i++)
    if (M->price[i].coll == coll && M->price[i].bytes == bytes) return M->price[i].ns;
  sc_placement pl = {(int64_t)B->sh->t, 1, (int64_t)B->sh->t, 1};
  double ns = B->cost->comm->coll_ns(B->cost, coll, bytes, &pl);
  if (SC_UNLIKELY(!(ns <= SC_WORK_MAX))) {
    work_overflow(B, "a TP collective", ns);
    ns = 0;
  }
  int i = M->nprice < TP_PRICES ? M->nprice++ : M->price_next++ % TP_PRICES;
  M->price[i].coll = coll;
  M->price[i].bytes = bytes;
  M->price[i].ns = ns;
  return ns;
}

/* A TP collective after the last compute op (its input is that op's output);
 * returns its handle, for add_wait only. */
uint32_t sc__syn_tp_after_compute(builder *B, const where *w, int coll, int label, double bytes) {
  merger *M = &B->mg;
  if (!M->inline_tp)
    return sc__syn_collective(B, w, SC_ST_TP, SC_GRP_TP, coll, label, SC_CAT_TP, bytes, sc__syn_last_compute(B));
  int64_t dur = sc__duration_ns(tp_coll_ns(B, coll, bytes));
  if (M->real_tp != NONE || dur <= 0 || M->last_id + 2 >= (1u << 28)) { /* id < NONE's */
    merge_retry(B);
    return NONE;
  }
  int64_t start = M->t_tp > M->t_c ? M->t_tp : M->t_c;
  M->t_tp = start + dur;
  uint32_t id = ++M->last_id;
  M->tp_end[id % TP_RING] = M->t_tp;
  B->prog->nmerged++;
  return SC_DEP(SYM_STREAM, id);
}

/* A TP collective after `after`, an op of another stream (a receive): always
 * emitted, in TP-stream order with the inlined ones. */
uint32_t sc__syn_tp_after_op(builder *B, const where *w, int coll, int label, int cat, double bytes,
                            uint32_t after) {
  merger *M = &B->mg;
  if (!M->inline_tp)
    return sc__syn_collective(B, w, SC_ST_TP, SC_GRP_TP, coll, label, cat, bytes, after);
  uint32_t deps[2] = {after, NONE};
  if (M->last_id) {
    close_op(B);
    if (M->t_tp > M->t_c) {
      sc__syn_flush_remainder(B, w);
      close_op(B);
      M->flushed = 1;
    }
    if (M->tp_done_id != M->last_id) {
      merge_retry(B);
      return NONE;
    }
    deps[1] = M->tp_done;
  }
  sc_op op = {0};
  op.work = bytes;
  op.kind = SC_OP_COLL;
  op.cat = (uint8_t)cat;
  op.coll = (uint8_t)coll;
  op.group = SC_GRP_TP;
  B->prog->groups_used |= (uint16_t)(1u << SC_GRP_TP);
  op.label = (uint8_t)label;
  op.phase = w->phase;
  op.layer = w->layer;
  op.chunk = w->chunk;
  op.mb = w->mb;
  uint32_t idx = sc__syn_emit(B, SC_ST_TP, &op, deps, 2);
  if (idx == NONE) return NONE;
  M->real_tp = SC_DEP(SC_ST_TP, idx);
  return M->real_tp;
}

/* Every layer and micro-batch repeats the same few GEMM shapes, so their
 * costs are memoised in a small direct-mapped table (sweeps build thousands
 * of workloads; pricing each GEMM again was ~13% of a sweep's time). */
static double gemm_memo_ns(builder *B, double m, double n, double k, int fp8) {
  uint64_t h = (uint64_t)m * 0x9E3779B97F4A7C15ull ^ (uint64_t)n * 0xC2B2AE3D27D4EB4Full ^
               (uint64_t)k * 0x165667B19E3779F9ull ^ (uint64_t)fp8;
  gemm_memo *e = &B->memo[(h >> 32) % SC_GEMM_MEMO];
  if (e->valid == 1 + fp8 && e->m == m && e->n == n && e->k == k) return e->ns;
  e->m = m, e->n = n, e->k = k, e->valid = 1 + fp8;
  e->ns = fp8 ? B->cost->compute->fp8_gemm_ns(B->cost, m, n, k)
              : B->cost->compute->gemm_ns(B->cost, m, n, k);
  return e->ns;
}

double sc__syn_gemm(builder *B, double m, double n, double k) { return gemm_memo_ns(B, m, n, k, 0); }

double sc__syn_gemm_fp8(builder *B, double m, double n, double k) {
  return gemm_memo_ns(B, m, n, k, 1);
}

/* ------------------------------------------------------------ layer memo */

/* In a merged build (see "merging") every layer repeats the same compute ops
 * and inlined collectives. Once a part of a layer has run as pure growth of
 * the open op (no op emitted, nothing pending before or after it), its effect
 * is a few numbers: chain time, waiting time and ops added, and the ends of
 * its collectives relative to the chain (part_memo). Later layers that start
 * in the same kind of state replay those numbers instead of pricing every
 * kernel again; the state they produce is the one running the part would
 * produce. */

/* A state from which a part's effect does not depend on anything but t_c:
 * the open op grows, nothing pending, no collective still running. */
static int memo_state_ok(builder *B) {
  const merger *M = &B->mg;
  return M->on && M->open && !M->flushed && !B->rc && B->nwait == 0 && !M->must_wait &&
         M->real_tp == NONE && M->t_tp <= M->t_c && last_op(B)->cat == SC_CAT_COMPUTE;
}

/* Runs fn(B, w), or replays its recorded effect (pm). */
void sc__syn_memo_run(builder *B, part_memo *pm, part_fn fn, const where *w) {
  if (!memo_state_ok(B)) {
    fn(B, w);
    return;
  }
  merger *M = &B->mg;
  sc_program *p = B->prog;
  sc_op *last = last_op(B);
  if (pm->valid && (int64_t)last->tp_ns + pm->dgap <= (int64_t)UINT32_MAX &&
      M->last_id + pm->ntp + 2 < (1u << 28)) { /* else running fn takes the failure path */
    M->t_c += pm->dc;
    last->tp_ns += (uint32_t)pm->dgap;
    last->work = (double)(M->t_c - M->op_start);
    p->nmerged += pm->dmerged;
    if (pm->ntp) {
      uint32_t k = pm->ntp < TP_RING ? pm->ntp : TP_RING;
      for (uint32_t i = 0; i < k; i++)
        M->tp_end[(M->last_id + pm->ntp - k + 1 + i) % TP_RING] = M->t_c + pm->end_rel[i];
      M->last_id += pm->ntp;
      M->t_tp = M->t_c + pm->tp_rel;
    }
    return;
  }
  size_t nops[SC_ST_COUNT];
  memcpy(nops, p->nops, sizeof nops);
  int64_t t_c = M->t_c, tp_ns = last->tp_ns, merged = p->nmerged;
  uint32_t id = M->last_id;
  fn(B, w);
  if (B->rc || !M->open || M->flushed || B->nwait || M->must_wait || M->real_tp != NONE ||
      memcmp(nops, p->nops, sizeof nops))
    return; /* not pure growth: run it again next time */
  last = last_op(B);
  pm->dc = M->t_c - t_c;
  pm->dgap = (int64_t)last->tp_ns - tp_ns;
  pm->dmerged = p->nmerged - merged;
  pm->ntp = M->last_id - id;
  if (pm->ntp) {
    uint32_t k = pm->ntp < TP_RING ? pm->ntp : TP_RING;
    for (uint32_t i = 0; i < k; i++)
      pm->end_rel[i] = M->tp_end[(M->last_id - k + 1 + i) % TP_RING] - M->t_c;
    pm->tp_rel = M->t_tp - M->t_c;
  }
  pm->valid = 1;
}

