/*
 * workload.c: synthesises the per-rank DAG of one Megatron-style training step
 * (BLUEPRINT section 3): dense decoder layers under TP (with or without
 * sequence parallelism), PP with GPipe / 1F1B / interleaved 1F1B, DP gradient
 * buckets overlapping backward or a distributed optimizer, recompute modes,
 * embedding / LM head with vocab-parallel loss and tied-embedding grad sync.
 * One program per pipeline stage; ranks of a stage run identical programs.
 */
#include "synth/synth_int.h"

#include <math.h>

/* ------------------------------------------------------------ shapes */

/* Parameters of one transformer layer held by one TP rank. */
static double layer_params(const sc_shape *sh) {
  double qkv_out = sh->h + 2.0 * sh->g * sh->d;
  double fc1_out = sh->f * (sh->swiglu ? 2.0 : 1.0);
  double w = (sh->h * qkv_out + sh->h * sh->h + sh->h * fc1_out + sh->f * sh->h) / sh->t;
  double small = 4.0 * sh->h + qkv_out / sh->t + sh->h + fc1_out / sh->t + sh->h;
  return w + small;
}

/* ------------------------------------------------------------ builder */

typedef struct item {
  uint32_t mb;
  uint16_t chunk;
  uint8_t fwd;
} item;

#define SC_GEMM_MEMO 64
typedef struct gemm_memo {
  double m, n, k, ns;
  int valid;
} gemm_memo;

/* State of a merged build (SC_WL_MERGE; see "merging" below). Times are
 * chain times, whole ns. */
#define TP_RING 16      /* inlined collectives a compute op can wait for */
#define TP_PRICES 8     /* TP collective prices remembered */
typedef struct merger {
  int on;           /* SC_WL_MERGE */
  int inline_tp;    /* TP collectives after compute ops are priced, not emitted */
  int order_tp;     /* TP collectives are also emitted (receive gathers): keep order */
  int open;         /* the last compute-stream op may still grow */
  int flushed;      /* the last compute-stream op is a bare remainder */
  int retry;        /* an exactness condition failed: build again without inlining */
  int64_t t_c;      /* the compute stream is free from here */
  int64_t t_tp;     /* the inlined collectives are done here */
  int64_t op_start; /* start of the last compute-stream op */
  uint32_t first_id, last_id; /* inlined collectives: first of this chain, last (0: none) */
  uint32_t must_wait;         /* the next compute op must wait for this one (0: none) */
  uint32_t tp_done_id;        /* last inlined collective that tp_done ends with */
  uint32_t tp_done;           /* compute-stream op ending with it */
  uint32_t real_tp;           /* emitted TP op no compute op has waited for, or NONE */
  int64_t tp_end[TP_RING];    /* chain time each recent inlined collective ends */
  struct {
    int coll;
    double bytes, ns;
  } price[TP_PRICES];
  int nprice, price_next;
} merger;

typedef struct builder {
  sc_ctx *ctx;
  const sc_config *cfg;
  const sc_cost *cost;
  sc_program *prog;
  const sc_shape *sh;
  int64_t pp, vpp, m, lpc, stage;
  int rc;
  gemm_memo memo[SC_GEMM_MEMO];
  uint32_t wait[4]; /* deps the next compute op must take */
  int nwait;
  /* Per schedule item: compute handle at its end and its send (or NONE).
   * A pass posts its receive and waits for the sends `lag` items back:
   * 1 for 1F1B/GPipe (Megatron blocks after every pass), 2 for the
   * interleaved schedule (it batches the p2p of each forward/backward pair
   * and receives one pair ahead). */
  uint32_t *item_end, *item_send;
  int lag;
  uint32_t *param_ag; /* per layer: DP-stream handle of its param all-gather */
  merger mg;          /* SC_WL_MERGE state */
  struct part_memo *parts; /* [2]: layer_forward_rest, layer_backward_rest */
} builder;

#define NONE UINT32_MAX

static uint32_t emit(builder *B, int stream, const sc_op *tmpl, const uint32_t *deps, int ndeps) {
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

typedef struct where {
  uint16_t layer, chunk;
  uint32_t mb;
  uint8_t phase;
} where;

/* A compute op at w of `work` (ns), without dependencies. */
static sc_op compute_op(const where *w, int kind, int label, uint8_t cat, double work) {
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

/* Merged workloads (SC_WL_MERGE, see workload_int.h) are built here as a
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
    if (emit(B, SC_ST_COMPUTE, &rest, NULL, 0) == NONE) return;
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
  sc_op op = compute_op(w, kind, label, cat, (double)(gap_ns + compute_ns));
  op.tp_ns = (uint32_t)gap_ns;
  if (emit(B, SC_ST_COMPUTE, &op, NULL, 0) == NONE) return;
  B->prog->nmerged--;
  M->op_start = M->t_c;
  M->t_c += gap_ns + compute_ns;
  M->open = 1;
  M->flushed = 0;
}

/* Puts the inlined collectives still running at t_c on the compute stream as
 * a bare op (see the comment above), closed. */
static void flush_remainder(builder *B, const where *w) {
  merger *M = &B->mg;
  if (M->t_tp <= M->t_c) return;
  chain_append(B, w, SC_OP_ELEMWISE, SC_L_TP_AR, SC_CAT_COMPUTE, M->t_tp - M->t_c, 0);
  M->must_wait = M->last_id;
}

/* Handle of the last op emitted on the compute stream, or NONE. The only way
 * to name a compute op: taking the handle closes the op, so that a merged
 * workload never grows an op something may depend on. */
static uint32_t last_compute(builder *B) {
  if (B->mg.on) {
    if (B->mg.flushed) merge_retry(B);
    close_op(B);
  }
  size_t n = B->prog->nops[SC_ST_COMPUTE];
  return n ? SC_DEP(SC_ST_COMPUTE, n - 1) : NONE;
}

/* Emits a compute op of ns taking the pending waits (last_compute names it);
 * merged workloads add it to the chain instead (see above). */
static void compute(builder *B, const where *w, int kind, int label, double ns) {
  uint8_t cat = kind == SC_OP_OPTIMIZER ? SC_CAT_OPTIMIZER : SC_CAT_COMPUTE;
  if (!B->mg.on) {
    sc_op op = compute_op(w, kind, label, cat, ns);
    emit(B, SC_ST_COMPUTE, &op, B->wait, B->nwait);
    B->nwait = 0;
    return;
  }
  merger *M = &B->mg;
  int64_t d = sc__duration_ns(ns);
  B->prog->nmerged++; /* an op of the unmerged workload; emitted ops count -1 */
  /* Split the waits: ops of other streams, and inlined collectives. */
  uint32_t real[4];
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
    flush_remainder(B, w);
    M->must_wait = 0;
  }
  close_op(B);
  sc_op op = compute_op(w, kind, label, cat, (double)d);
  if (emit(B, SC_ST_COMPUTE, &op, real, nreal) == NONE) return;
  B->prog->nmerged--;
  M->op_start = 0;
  M->t_c = d;
  M->t_tp = 0;
  M->first_id = M->last_id + 1;
  M->open = 1;
  M->flushed = 0;
}

static void add_wait(builder *B, uint32_t dep) {
  if (dep != NONE && B->nwait < 4) B->wait[B->nwait++] = dep;
}

/* Emits a collective on `stream` after `after` (a dep handle or NONE). */
static uint32_t collective(builder *B, const where *w, int stream, int group, int coll,
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
  uint32_t idx = emit(B, stream, &op, &after, 1);
  return idx == NONE ? NONE : SC_DEP(stream, idx);
}

/* Time of a TP collective as the engine prices it: the comm model on the
 * group's placement (one node: inline_tp), memoised. */
static double tp_coll_ns(builder *B, int coll, double bytes) {
  merger *M = &B->mg;
  for (int i = 0; i < M->nprice; i++)
    if (M->price[i].coll == coll && M->price[i].bytes == bytes) return M->price[i].ns;
  sc_placement pl = {(int64_t)B->sh->t, 1, (int64_t)B->sh->t};
  double ns = B->cost->comm->coll_ns(B->cost, coll, bytes, &pl);
  int i = M->nprice < TP_PRICES ? M->nprice++ : M->price_next++ % TP_PRICES;
  M->price[i].coll = coll;
  M->price[i].bytes = bytes;
  M->price[i].ns = ns;
  return ns;
}

/* A TP collective after the last compute op (its input is that op's output);
 * returns its handle, for add_wait only. */
static uint32_t tp_after_compute(builder *B, const where *w, int coll, int label, double bytes) {
  merger *M = &B->mg;
  if (!M->inline_tp)
    return collective(B, w, SC_ST_TP, SC_GRP_TP, coll, label, SC_CAT_TP, bytes, last_compute(B));
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
static uint32_t tp_after_op(builder *B, const where *w, int coll, int label, int cat, double bytes,
                            uint32_t after) {
  merger *M = &B->mg;
  if (!M->inline_tp)
    return collective(B, w, SC_ST_TP, SC_GRP_TP, coll, label, cat, bytes, after);
  uint32_t deps[2] = {after, NONE};
  if (M->last_id) {
    close_op(B);
    if (M->t_tp > M->t_c) {
      flush_remainder(B, w);
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
  op.label = (uint8_t)label;
  op.phase = w->phase;
  op.layer = w->layer;
  op.chunk = w->chunk;
  op.mb = w->mb;
  uint32_t idx = emit(B, SC_ST_TP, &op, deps, 2);
  if (idx == NONE) return NONE;
  M->real_tp = SC_DEP(SC_ST_TP, idx);
  return M->real_tp;
}

/* A TP collective on the critical path: after the last compute op, and the
 * next compute op waits for it. */
static void tp_blocking(builder *B, const where *w, int coll, int label, double bytes) {
  if (B->sh->t <= 1) return;
  add_wait(B, tp_after_compute(B, w, coll, label, bytes));
}

/* Every layer and micro-batch repeats the same few GEMM shapes, so their
 * costs are memoised in a small direct-mapped table (sweeps build thousands
 * of workloads; pricing each GEMM again was ~13% of a sweep's time). */
static double gemm(builder *B, double m, double n, double k) {
  uint64_t h = (uint64_t)m * 0x9E3779B97F4A7C15ull ^ (uint64_t)n * 0xC2B2AE3D27D4EB4Full ^
               (uint64_t)k * 0x165667B19E3779F9ull;
  gemm_memo *e = &B->memo[(h >> 32) % SC_GEMM_MEMO];
  if (e->valid && e->m == m && e->n == n && e->k == k) return e->ns;
  e->m = m, e->n = n, e->k = k, e->valid = 1;
  e->ns = B->cost->compute->gemm_ns(B->cost, m, n, k);
  return e->ns;
}

static double mem(const builder *B, double bytes) {
  return B->cost->compute->mem_ns(B->cost, bytes);
}

/* Tokens per micro-batch, and tokens an elementwise op touches on one rank. */
static double tokens(const builder *B) { return B->sh->b * B->sh->s; }
static double tokens_local(const builder *B) {
  return B->sh->sp ? tokens(B) / B->sh->t : tokens(B);
}

/* Causal FlashAttention forward FLOPs of one micro-batch on one TP rank:
 * 4*b*s^2*h/t for full attention, half of it for causal kernels. */
static double attn_fwd_flops(const builder *B) {
  const sc_shape *sh = B->sh;
  return 0.5 * 4.0 * sh->b * sh->s * sh->s * sh->h / sh->t;
}

static double attn_ns(const builder *B, double flops) {
  return B->cost->compute->attn_ns(B->cost, flops, B->sh->s, B->sh->d);
}

/* Unfused attention (Megatron-LM's CoreAttention before FlashAttention, as
 * used by SC21 and Korthikanti et al. 2022): per head, batched GEMMs over the
 * full s x s scores (the causal mask is applied by the softmax, not skipped)
 * and memory-bound kernels that stream the scores through HBM. A batch of
 * `heads` s x s GEMMs is priced as one (heads*s) x s GEMM: same FLOPs, same
 * output tiles. Bytes per score element e (2 for fp16/bf16):
 *   fused scale-mask-softmax: read e, write e;
 *   dropout (p = 0.1, Megatron's default): read e, write e and a 1-byte mask;
 *   backward: dropout 2e + 1, softmax (reads its output and the grad) 3e. */
static double unfused_heads(const builder *B) { return B->sh->b * B->sh->a / B->sh->t; }

static double scores(const builder *B) { return unfused_heads(B) * B->sh->s * B->sh->s; }

static void attention_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (B->cfg->training.attention == SC_ATTN_FLASH) {
    compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, attn_fwd_flops(B)));
    return;
  }
  double hs = unfused_heads(B) * sh->s, e = sh->elem_bytes;
  compute(B, w, SC_OP_GEMM, SC_L_ATTN, gemm(B, hs, sh->s, sh->d)); /* Q K^T */
  compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, mem(B, 2.0 * e * scores(B)));
  compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, mem(B, (2.0 * e + 1.0) * scores(B)));
  compute(B, w, SC_OP_GEMM, SC_L_ATTN, gemm(B, hs, sh->d, sh->s)); /* P V */
}

static void attention_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  if (B->cfg->training.attention == SC_ATTN_FLASH) {
    /* FlashAttention backward: ~2.5x the forward FLOPs (BLUEPRINT section 3). */
    compute(B, w, SC_OP_ATTN, SC_L_ATTN, attn_ns(B, 2.5 * attn_fwd_flops(B)));
    return;
  }
  double hs = unfused_heads(B) * sh->s, e = sh->elem_bytes;
  compute(B, w, SC_OP_GEMM, SC_L_ATTN, gemm(B, hs, sh->d, sh->s)); /* dV = P^T dO */
  compute(B, w, SC_OP_GEMM, SC_L_ATTN, gemm(B, hs, sh->s, sh->d)); /* dP = dO V^T */
  compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, mem(B, (2.0 * e + 1.0) * scores(B)));
  compute(B, w, SC_OP_ELEMWISE, SC_L_ATTN, mem(B, 3.0 * e * scores(B)));
  compute(B, w, SC_OP_GEMM, SC_L_ATTN, gemm(B, hs, sh->d, sh->s)); /* dQ = dS K */
  compute(B, w, SC_OP_GEMM, SC_L_ATTN, gemm(B, hs, sh->d, sh->s)); /* dK = dS^T Q */
}

/* A GEMM C[m,n] = A[m,k] B[k,n] whose input A is all-gathered over the TP
 * group first (sequence parallelism; `bytes` = the gathered input). Plain
 * Megatron blocks on the gather. With tp_comm_overlap (Transformer Engine's
 * userbuffers ring exchange) the GEMM runs as t chunks of m/t rows, chunk i
 * while chunk i+1 arrives: t-1 chunks overlap the gather, the last waits. */
static void gathered_gemm(builder *B, const where *w, int label, double m, double n, double k,
                          double bytes) {
  const sc_shape *sh = B->sh;
  if (!sh->sp) {
    compute(B, w, SC_OP_GEMM, label, gemm(B, m, n, k));
    return;
  }
  if (!B->cfg->parallel.tp_comm_overlap) {
    tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, bytes);
    compute(B, w, SC_OP_GEMM, label, gemm(B, m, n, k));
    return;
  }
  uint32_t ag = tp_after_compute(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, bytes);
  double chunk = gemm(B, m / sh->t, n, k);
  compute(B, w, SC_OP_GEMM, label, (sh->t - 1.0) * chunk);
  add_wait(B, ag);
  compute(B, w, SC_OP_GEMM, label, chunk);
}

/* A row-parallel GEMM whose partial output is reduce-scattered (SP) or
 * all-reduced (TP only) before the next op. With tp_comm_overlap the
 * reduce-scatter of chunk i runs while chunk i+1 is computed: only the first
 * chunk's GEMM and the tail of the collective stay exposed. */
static void reduced_gemm(builder *B, const where *w, int label, double m, double n, double k,
                         double bytes) {
  const sc_shape *sh = B->sh;
  if (sh->t <= 1 || !sh->sp || !B->cfg->parallel.tp_comm_overlap) {
    compute(B, w, SC_OP_GEMM, label, gemm(B, m, n, k));
    tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                sh->sp ? SC_L_TP_RS : SC_L_TP_AR, bytes);
    return;
  }
  double chunk = gemm(B, m / sh->t, n, k);
  compute(B, w, SC_OP_GEMM, label, chunk);
  uint32_t rs = tp_after_compute(B, w, SC_COLL_REDUCESCATTER, SC_L_TP_RS, bytes);
  compute(B, w, SC_OP_GEMM, label, (sh->t - 1.0) * chunk);
  add_wait(B, rs);
}

/* ------------------------------------------------------------ layer memo */

/* In a merged build (see "merging") every layer repeats the same compute ops
 * and inlined collectives. Once a part of a layer has run as pure growth of
 * the open op (no op emitted, nothing pending before or after it), its effect
 * is a few numbers: chain time, waiting time and ops added, and the ends of
 * its collectives relative to the chain. Later layers that start in the same
 * kind of state replay those numbers instead of pricing every kernel again;
 * the state they produce is the one running the part would produce. */
typedef struct part_memo {
  int valid;
  int64_t dc, dgap, dmerged; /* added to t_c, the op's tp_ns, nmerged */
  uint32_t ntp;              /* inlined collectives */
  int64_t tp_rel;            /* t_tp - t_c after the part (when ntp > 0) */
  int64_t end_rel[TP_RING];  /* ends of its last min(ntp, TP_RING) collectives - t_c */
} part_memo;

typedef void (*part_fn)(builder *B, const where *w);

/* A state from which a part's effect does not depend on anything but t_c:
 * the open op grows, nothing pending, no collective still running. */
static int memo_state_ok(builder *B) {
  const merger *M = &B->mg;
  return M->on && M->open && !M->flushed && !B->rc && B->nwait == 0 && !M->must_wait &&
         M->real_tp == NONE && M->t_tp <= M->t_c && last_op(B)->cat == SC_CAT_COMPUTE;
}

/* Runs fn(B, w), or replays its recorded effect (pm). */
static void memo_run(builder *B, part_memo *pm, part_fn fn, const where *w) {
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

/* Forward (or recompute) of one transformer layer for one micro-batch, after
 * its input norm. */
static void layer_forward_rest(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = tokens(B), Tl = tokens_local(B);
  double act = T * sh->h * sh->elem_bytes;
  double act_l = Tl * sh->h * sh->elem_bytes;
  double qkv_n = (sh->h + 2.0 * sh->g * sh->d) / sh->t;
  double fc1_n = sh->f * (sh->swiglu ? 2.0 : 1.0) / sh->t;

  gathered_gemm(B, w, SC_L_QKV, T, qkv_n, sh->h, act);
  attention_forward(B, w);
  reduced_gemm(B, w, SC_L_PROJ, T, sh->h, sh->h / sh->t, act);
  compute(B, w, SC_OP_ELEMWISE, SC_L_RES1, mem(B, 4.0 * act_l));
  compute(B, w, SC_OP_NORM, SC_L_LN2, mem(B, 2.0 * act_l));
  gathered_gemm(B, w, SC_L_FC1, T, fc1_n, sh->h, act);
  compute(B, w, SC_OP_ELEMWISE, SC_L_ACT,
          mem(B, (sh->swiglu ? 3.0 : 2.0) * T * sh->f / sh->t * sh->elem_bytes));
  reduced_gemm(B, w, SC_L_FC2, T, sh->h, sh->f / sh->t, act);
  compute(B, w, SC_OP_ELEMWISE, SC_L_RES2, mem(B, 4.0 * act_l));
}

/* Forward (or recompute) of one transformer layer for one micro-batch. The
 * first op takes what the layer waits for; the rest may be replayed. */
static void layer_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act_l = tokens_local(B) * sh->h * sh->elem_bytes;
  compute(B, w, SC_OP_NORM, SC_L_LN1, mem(B, 2.0 * act_l));
  memo_run(B, &B->parts[0], layer_forward_rest, w);
}

/* Backward of a column-parallel linear (QKV, FC1, logits) as Megatron runs
 * it: with SP the input all-gather overlaps the data-grad GEMM; the grad
 * reduce-scatter (SP) or all-reduce (TP only) overlaps the weight-grad GEMM. */
static void column_parallel_backward(builder *B, const where *w, int label, double n_out) {
  const sc_shape *sh = B->sh;
  double T = tokens(B);
  double act = T * sh->h * sh->elem_bytes;
  uint32_t ag = NONE;
  if (sh->sp) ag = tp_after_compute(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, act);
  compute(B, w, SC_OP_GEMM, label, gemm(B, T, sh->h, n_out));
  uint32_t red = NONE;
  if (sh->t > 1)
    red = tp_after_compute(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                           sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  add_wait(B, ag);
  compute(B, &ww, SC_OP_GEMM, label, gemm(B, n_out, sh->h, T));
  add_wait(B, red);
}

/* Backward of a row-parallel linear (attention projection, FC2): the output
 * grad is all-gathered (SP; the mirror of the forward reduce-scatter) into
 * the input-grad GEMM, then the weight-grad GEMM. */
static void row_parallel_backward(builder *B, const where *w, int label, double k_in) {
  const sc_shape *sh = B->sh;
  double T = tokens(B);
  gathered_gemm(B, w, label, T, k_in, sh->h, T * sh->h * sh->elem_bytes);
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  compute(B, &ww, SC_OP_GEMM, label, gemm(B, k_in, sh->h, T));
}

/* Backward of one layer after its first op (the residual's grad). */
static void layer_backward_rest(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = tokens(B), Tl = tokens_local(B);
  double act_l = Tl * sh->h * sh->elem_bytes;
  double qkv_n = (sh->h + 2.0 * sh->g * sh->d) / sh->t;
  double fc1_n = sh->f * (sh->swiglu ? 2.0 : 1.0) / sh->t;

  row_parallel_backward(B, w, SC_L_FC2, sh->f / sh->t);
  compute(B, w, SC_OP_ELEMWISE, SC_L_ACT,
          mem(B, (sh->swiglu ? 4.0 : 3.0) * T * sh->f / sh->t * sh->elem_bytes));
  column_parallel_backward(B, w, SC_L_FC1, fc1_n);
  compute(B, w, SC_OP_NORM, SC_L_LN2, mem(B, 3.0 * act_l));
  compute(B, w, SC_OP_ELEMWISE, SC_L_RES1, mem(B, 3.0 * act_l));
  row_parallel_backward(B, w, SC_L_PROJ, sh->h / sh->t);
  if (B->cfg->training.recompute == SC_RECOMPUTE_SELECTIVE) {
    /* Selective recompute re-runs the attention core (Korthikanti et al.
     * 2022: QK^T, softmax, dropout, attention over V). */
    where rw = *w;
    rw.phase = SC_PH_RECOMPUTE;
    attention_forward(B, &rw);
  }
  attention_backward(B, w);
  column_parallel_backward(B, w, SC_L_QKV, qkv_n);
  compute(B, w, SC_OP_NORM, SC_L_LN1, mem(B, 3.0 * act_l));
}

static void layer_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act_l = tokens_local(B) * sh->h * sh->elem_bytes;
  if (B->cfg->training.recompute == SC_RECOMPUTE_FULL) {
    where rw = *w;
    rw.phase = SC_PH_RECOMPUTE;
    layer_forward(B, &rw);
  }
  compute(B, w, SC_OP_ELEMWISE, SC_L_RES2, mem(B, 3.0 * act_l));
  memo_run(B, &B->parts[1], layer_backward_rest, w);
}

static void embedding_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act = tokens(B) * sh->h * sh->elem_bytes;
  compute(B, w, SC_OP_ELEMWISE, SC_L_EMBED, mem(B, 2.0 * act));
  /* Vocab-parallel embedding: partial rows are summed over TP. */
  tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
              sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
}

/* Embedding backward: the token grads are scattered into a dense grad of
 * the local vocabulary shard (V/t x h, written once in the working dtype),
 * which is then accumulated into the fp32 main grad (read 4 + e, write 4;
 * Megatron-LM keeps main grads in fp32 for bf16 and fp16). */
static void embedding_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double act = tokens(B) * sh->h * sh->elem_bytes;
  double table = sh->v / sh->t * sh->h;
  if (sh->sp) tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, act);
  compute(B, w, SC_OP_ELEMWISE, SC_L_EMBED,
          mem(B, 2.0 * act + table * (2.0 * sh->elem_bytes + 8.0)));
}

/* HBM bytes per logit of Megatron-LM's vocab-parallel cross-entropy, which
 * runs as separate fp32 kernels over the [tokens x V/t] logits: forward =
 * cast to fp32 (read e, write 4), max (4), subtract (8), exp (8), sum (4),
 * divide into the softmax kept for backward (8); backward = scale the
 * softmax by the loss grad in place (8) and cast back for the logits GEMM
 * (read 4, write e). */
static double loss_fwd_bytes(const sc_shape *sh) { return sh->elem_bytes + 4.0 + 32.0; }
static double loss_bwd_bytes(const sc_shape *sh) { return 8.0 + 4.0 + sh->elem_bytes; }

/* Final norm, logits GEMM over the vocab shard, vocab-parallel cross-entropy
 * (three small TP all-reduces: max, sum of exp, target logit). */
static void head_forward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = tokens(B);
  double act = T * sh->h * sh->elem_bytes;
  compute(B, w, SC_OP_NORM, SC_L_FINAL_LN, mem(B, 2.0 * tokens_local(B) * sh->h * sh->elem_bytes));
  if (sh->sp) tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, act);
  compute(B, w, SC_OP_GEMM, SC_L_LOGITS, gemm(B, T, sh->v / sh->t, sh->h));
  compute(B, w, SC_OP_ELEMWISE, SC_L_LOSS, mem(B, T * sh->v / sh->t * loss_fwd_bytes(sh)));
  for (int i = 0; i < 3; i++) tp_blocking(B, w, SC_COLL_ALLREDUCE, SC_L_LOSS_AR, T * 4.0);
}

static void head_backward(builder *B, const where *w) {
  const sc_shape *sh = B->sh;
  double T = tokens(B);
  compute(B, w, SC_OP_ELEMWISE, SC_L_LOSS, mem(B, T * sh->v / sh->t * loss_bwd_bytes(sh)));
  column_parallel_backward(B, w, SC_L_LOGITS, sh->v / sh->t);
  compute(B, w, SC_OP_NORM, SC_L_FINAL_LN, mem(B, 3.0 * tokens_local(B) * sh->h * sh->elem_bytes));
}

/* ------------------------------------------------------------ schedules */

/* Fills items[] with the order stage `stage` runs forward/backward passes;
 * returns the count (2 * m * vpp). */
static size_t schedule(const builder *B, int64_t stage, item *items) {
  int64_t m = B->m, pp = B->pp, v = B->vpp;
  size_t n = 0;
  sc_schedule kind = B->cfg->parallel.schedule;
  if (v > 1) kind = SC_SCHED_INTERLEAVED;
  if (kind == SC_SCHED_GPIPE) {
    for (int64_t i = 0; i < m; i++) items[n++] = (item){(uint32_t)i, 0, 1};
    for (int64_t i = 0; i < m; i++) items[n++] = (item){(uint32_t)i, 0, 0};
    return n;
  }
  if (kind == SC_SCHED_1F1B) {
    int64_t warm = pp - stage - 1;
    if (warm > m) warm = m;
    int64_t f = 0, b = 0;
    for (; f < warm; f++) items[n++] = (item){(uint32_t)f, 0, 1};
    for (; f < m; f++, b++) {
      items[n++] = (item){(uint32_t)f, 0, 1};
      items[n++] = (item){(uint32_t)b, 0, 0};
    }
    for (; b < m; b++) items[n++] = (item){(uint32_t)b, 0, 0};
    return n;
  }
  /* Interleaved 1F1B (Megatron): virtual micro-batch k maps to chunk
   * (k mod (pp*v)) / pp and micro-batch (k / (pp*v)) * pp + k mod pp; backward
   * walks the chunks in reverse. Warm-up: (pp - stage - 1) * 2 + (v - 1) * pp. */
  int64_t total = m * v;
  int64_t warm = (pp - stage - 1) * 2 + (v - 1) * pp;
  if (warm > total) warm = total;
  int64_t f = 0, b = 0;
#define VMB(k) ((uint32_t)(((k) / (pp * v)) * pp + (k) % pp))
#define FCH(k) ((uint16_t)(((k) % (pp * v)) / pp))
#define BCH(k) ((uint16_t)(v - 1 - ((k) % (pp * v)) / pp))
  for (; f < warm; f++) items[n++] = (item){VMB(f), FCH(f), 1};
  for (; f < total; f++, b++) {
    items[n++] = (item){VMB(f), FCH(f), 1};
    items[n++] = (item){VMB(b), BCH(b), 0};
  }
  for (; b < total; b++) items[n++] = (item){VMB(b), BCH(b), 0};
#undef VMB
#undef FCH
#undef BCH
  return n;
}

/* ------------------------------------------------------------ program */

static int64_t vstage(const builder *B, int64_t stage, int64_t chunk) {
  return chunk * B->pp + stage;
}

/* Emits a send or receive; returns its dep handle. Megatron's default
 * pipeline p2p is blocking: a receive is posted when the compute stream gets
 * to the pass that needs it, and the next pass waits for the last send. */
static uint32_t p2p_op(builder *B, int stream, int label, uint32_t mb, uint16_t chunk,
                       double bytes, uint32_t after) {
  sc_op op = {0};
  op.work = bytes;
  op.kind = (stream == SC_ST_FWD_SEND || stream == SC_ST_BWD_SEND) ? SC_OP_SEND : SC_OP_RECV;
  op.cat = SC_CAT_PP;
  op.label = (uint8_t)label;
  op.layer = SC_NO_LAYER;
  op.chunk = chunk;
  op.mb = mb;
  op.phase = (stream == SC_ST_FWD_SEND || stream == SC_ST_FWD_RECV) ? SC_PH_FWD : SC_PH_BWD;
  uint32_t idx = emit(B, stream, &op, &after, 1);
  return idx == NONE ? NONE : SC_DEP(stream, idx);
}

/* Receives a pipeline message (activation or its grad) for item `it`; the
 * next compute op waits for it. Without SP the 1/t slices are all-gathered
 * over the TP group first (scatter/gather, see build_stage); the gather is
 * pipeline traffic in the breakdown. */
static void receive_activation(builder *B, const where *w, int stream, int label,
                               const item *it, double bytes, uint32_t posted) {
  const sc_shape *sh = B->sh;
  uint32_t r = p2p_op(B, stream, label, it->mb, it->chunk, bytes, posted);
  if (!sh->sp && sh->t > 1)
    r = tp_after_op(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, SC_CAT_PP, bytes * sh->t, r);
  add_wait(B, r);
}

/* Bucketing of one chunk's gradients, in backward order. */
typedef struct bucketer {
  double fill;      /* elements in the open bucket */
  double limit;     /* bucket size, elements */
  int overlap;      /* emit as soon as ready (else collect) */
} bucketer;

static void dp_reduce(builder *B, double elems, uint32_t after) {
  const sc_parallel_cfg *par = &B->cfg->parallel;
  if (par->dp <= 1 || elems <= 0) return;
  where w = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  int dist = par->distributed_optimizer;
  collective(B, &w, SC_ST_DP, SC_GRP_DP, dist ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
             dist ? SC_L_GRAD_RS : SC_L_GRAD_AR, SC_CAT_DP, elems * B->sh->grad_bytes, after);
}

/* Adds elems whose grads are final once the last compute op ends; a full
 * bucket is reduced after that op (handle taken only then: see last_compute). */
static void bucket_add(builder *B, bucketer *bk, double elems) {
  bk->fill += elems;
  if (bk->fill >= bk->limit) {
    if (bk->overlap) dp_reduce(B, bk->fill, last_compute(B));
    bk->fill = 0;
  }
}

static int build_stage(builder *B, const item *sched, size_t nsched, double *stage_params) {
  const sc_shape *sh = B->sh;
  const sc_config *cfg = B->cfg;
  int64_t stage = B->stage, pp = B->pp, v = B->vpp;
  int64_t last_vs = pp * v - 1;
  /* Pipeline messages are split over the TP ranks of a stage, each sending
   * b*s*h/t over its own NIC: with SP the activations are already scattered;
   * without it Megatron-LM's scatter/gather optimisation (SC21 section 4.1,
   * on by default) sends a 1/t slice and all-gathers it over NVLink on the
   * receiving stage (receive_activation). */
  double p2p_bytes = tokens(B) * sh->h * sh->elem_bytes / sh->t;
  double lparams = layer_params(sh);
  double emb_params = sh->v * sh->h / sh->t;
  int tied = cfg->model.tied_embeddings;
  int overlap = cfg->parallel.overlap_grad_reduce;
  int dist = cfg->parallel.distributed_optimizer && cfg->parallel.dp > 1;


  /* Parameters held by this stage (per TP rank). */
  double params = 0;
  for (int64_t c = 0; c < v; c++) {
    int64_t vs = vstage(B, stage, c);
    params += lparams * (double)B->lpc;
    if (vs == 0) params += emb_params;
    if (vs == last_vs && (!tied || pp > 1 || v > 1)) params += emb_params;
    if (vs == last_vs) params += 2.0 * sh->h; /* final norm */
  }
  *stage_params = params;

  /* Overlapped parameter all-gather (distributed optimizer): the gathers of
   * the previous step's update run while this step's forward starts; each
   * layer's first forward waits for its bucket. */
  int64_t layers_total = pp * v * B->lpc;
  for (int64_t l = 0; l < layers_total; l++) B->param_ag[l] = NONE;
  if (dist && cfg->parallel.overlap_param_gather) {
    where w = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
    for (int64_t c = 0; c < v; c++) {
      int64_t vs = vstage(B, stage, c);
      double fill = 0;
      for (int64_t j = 0; j < B->lpc; j++) {
        fill += lparams;
        int64_t layer = vs * B->lpc + j;
        if (fill >= (double)cfg->parallel.dp_bucket_elems || j == B->lpc - 1) {
          uint32_t ag = collective(B, &w, SC_ST_DP, SC_GRP_DP, SC_COLL_ALLGATHER,
                                   SC_L_PARAM_AG, SC_CAT_DP, fill * sh->elem_bytes, NONE);
          for (int64_t k = layer; k >= vs * B->lpc && B->param_ag[k] == NONE; k--)
            B->param_ag[k] = ag;
          fill = 0;
        }
      }
    }
  }

  /* Index in sched of the last backward of each chunk (its grads are final). */
  size_t last_b[64];
  for (int64_t c = 0; c < v && c < 64; c++) last_b[c] = 0;
  for (size_t i = 0; i < nsched; i++)
    if (!sched[i].fwd) last_b[sched[i].chunk] = i;
  uint8_t *first_fwd_seen = sc__calloc(B->ctx, (size_t)v, 1);
  if (!first_fwd_seen) return SC_ENOMEM;

  bucketer bk = {0, (double)cfg->parallel.dp_bucket_elems, overlap};

  for (size_t i = 0; i < nsched && !B->rc; i++) {
    const item *it = &sched[i];
    int64_t vs = vstage(B, stage, it->chunk);
    where w = {SC_NO_LAYER, it->chunk, it->mb, it->fwd ? SC_PH_FWD : SC_PH_BWD};
    uint32_t posted = i >= (size_t)B->lag ? B->item_end[i - (size_t)B->lag] : NONE;
    if (i >= (size_t)B->lag) add_wait(B, B->item_send[i - (size_t)B->lag]);
    B->item_send[i] = NONE;
    if (it->fwd) {
      if (vs > 0)
        receive_activation(B, &w, SC_ST_FWD_RECV, SC_L_RECV_ACT, it, p2p_bytes, posted);
      if (vs == 0) embedding_forward(B, &w);
      int first = !first_fwd_seen[it->chunk];
      first_fwd_seen[it->chunk] = 1;
      for (int64_t j = 0; j < B->lpc; j++) {
        w.layer = (uint16_t)(vs * B->lpc + j);
        if (first) add_wait(B, B->param_ag[w.layer]);
        layer_forward(B, &w);
      }
      w.layer = SC_NO_LAYER;
      if (vs == last_vs) head_forward(B, &w);
      else B->item_send[i] = p2p_op(B, SC_ST_FWD_SEND, SC_L_SEND_ACT, it->mb, it->chunk,
                                    p2p_bytes, last_compute(B));
    } else {
      int final = (i == last_b[it->chunk]);
      if (vs < last_vs)
        receive_activation(B, &w, SC_ST_BWD_RECV, SC_L_RECV_GRAD, it, p2p_bytes, posted);
      if (vs == last_vs) {
        head_backward(B, &w);
        if (final && (!tied || pp > 1 || v > 1)) bucket_add(B, &bk, emb_params);
        if (final) bucket_add(B, &bk, 2.0 * sh->h);
      }
      for (int64_t j = B->lpc - 1; j >= 0; j--) {
        w.layer = (uint16_t)(vs * B->lpc + j);
        layer_backward(B, &w);
        if (final) bucket_add(B, &bk, lparams);
      }
      w.layer = SC_NO_LAYER;
      if (vs == 0) {
        embedding_backward(B, &w);
        if (final) bucket_add(B, &bk, emb_params);
      }
      if (final) { /* close the chunk's last partial bucket */
        if (bk.fill > 0) {
          if (overlap) dp_reduce(B, bk.fill, last_compute(B));
        }
        bk.fill = 0;
      }
      if (vs > 0)
        B->item_send[i] = p2p_op(B, SC_ST_BWD_SEND, SC_L_SEND_GRAD, it->mb, it->chunk,
                                 p2p_bytes, last_compute(B));
    }
    B->item_end[i] = last_compute(B);
  }
  sc__free(B->ctx, first_fwd_seen, (size_t)v);
  if (B->rc) return B->rc;

  /* Without overlap every bucket is reduced after the whole backward. */
  if (!overlap) {
    double all = params;
    double bucket = (double)cfg->parallel.dp_bucket_elems;
    while (all > 0) {
      double e = all < bucket ? all : bucket;
      dp_reduce(B, e, last_compute(B));
      all -= e;
    }
  }

  /* Tied embeddings across the pipeline: the first and last stage sum their
   * embedding-weight grads (Megatron finalize_model_grads). */
  where ws = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  int holds_first = stage == 0, holds_last = stage == pp - 1;
  uint32_t dp_last = B->prog->nops[SC_ST_DP] ? SC_DEP(SC_ST_DP, B->prog->nops[SC_ST_DP] - 1) : NONE;
  if (tied && pp > 1 && (holds_first || holds_last)) {
    dp_last = collective(B, &ws, SC_ST_DP, SC_GRP_EMBED, SC_COLL_ALLREDUCE, SC_L_EMBED_AR,
                         SC_CAT_DP, emb_params * sh->grad_bytes, last_compute(B));
  }

  /* Optimizer: Adam over the local (sharded) parameters, memory-bound. */
  double local = dist ? params / (double)cfg->parallel.dp : params;
  add_wait(B, dp_last);
  for (size_t k = nsched > (size_t)B->lag ? nsched - (size_t)B->lag : 0; k < nsched; k++)
    add_wait(B, B->item_send[k]);
  /* Adam over the local shard, plus zeroing the full local grad buffer for
   * the next step (Megatron-LM's zero_grad_buffer, grad_bytes per param). */
  compute(B, &ws, SC_OP_OPTIMIZER, SC_L_OPTIM,
          mem(B, local * B->cost->p.optimizer_bytes_per_param + params * sh->grad_bytes));
  if (dist && !cfg->parallel.overlap_param_gather) {
    double all = params, bucket = (double)cfg->parallel.dp_bucket_elems;
    uint32_t opt = last_compute(B);
    while (all > 0) {
      double e = all < bucket ? all : bucket;
      collective(B, &ws, SC_ST_DP, SC_GRP_DP, SC_COLL_ALLGATHER, SC_L_PARAM_AG, SC_CAT_DP,
                 e * sh->elem_bytes, opt);
      all -= e;
    }
  }
  return B->rc;
}

int sc__workload_build(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost, sc_workload *wl) {
  return sc__workload_build_ex(ctx, sh, cost, 0, wl);
}

/* Builds wl; with inline_tp, sets *retry when inlining cannot be exact. */
static int build_workload(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost, unsigned flags,
                          int inline_tp, sc_workload *wl, int *retry) {
  const sc_config *cfg = sh->cfg;
  memset(wl, 0, sizeof *wl);
  const sc_parallel_cfg *par = &cfg->parallel;
  builder B;
  memset(&B, 0, sizeof B);
  B.ctx = ctx;
  B.cfg = cfg;
  B.cost = cost;
  part_memo parts[2];
  memset(parts, 0, sizeof parts);
  B.parts = parts;
  B.mg.on = (flags & SC_WL_MERGE) != 0;
  wl->merged = B.mg.on;
  B.sh = sh;
  B.mg.inline_tp = B.mg.on && inline_tp;
  B.mg.order_tp = B.mg.inline_tp && !B.sh->sp;
  B.pp = par->pp;
  B.vpp = par->vpp > 0 ? par->vpp : 1;
  if (par->zero_stage >= 3)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "%s: parallel.zero_stage=3 (parameter sharding) is not modelled yet: its "
                     "per-layer parameter gathers are missing from the workload",
                     cfg->origin);
  if (par->cp > 1)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s: context parallelism is not modelled yet",
                     cfg->origin);
  if (B.vpp > 1 && B.pp == 1)
    return sc__error(ctx, SC_EINVAL, "%s: parallel.vpp=%lld needs parallel.pp > 1",
                     cfg->origin, (long long)B.vpp);
  if (B.vpp > 64)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s: parallel.vpp above 64 is not supported",
                     cfg->origin);
  int64_t denom = cfg->training.micro_batch * par->dp;
  if (denom <= 0 || cfg->training.global_batch % denom)
    return sc__error(ctx, SC_EINVAL, "%s: global_batch does not split into micro-batches",
                     cfg->origin);
  B.m = cfg->training.global_batch / denom;
  if (cfg->model.layers % (B.pp * B.vpp))
    return sc__error(ctx, SC_EINVAL, "%s: model.layers=%lld is not divisible by pp*vpp=%lld",
                     cfg->origin, (long long)cfg->model.layers, (long long)(B.pp * B.vpp));
  B.lpc = cfg->model.layers / (B.pp * B.vpp);
  if (B.vpp > 1 && B.m % B.pp)
    return sc__error(ctx, SC_EINVAL,
                     "%s: interleaved schedule needs micro-batches (%lld) divisible by pp=%lld",
                     cfg->origin, (long long)B.m, (long long)B.pp);
  if (B.m > 0x7fffffff / 4 / B.vpp)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s: too many micro-batches", cfg->origin);

  wl->map.tp = par->tp;
  wl->map.cp = par->cp > 0 ? par->cp : 1;
  wl->map.dp = par->dp;
  wl->map.pp = par->pp;
  wl->map.world = par->tp * wl->map.cp * par->dp * par->pp;
  wl->map.gpus_per_node = cost->gpus_per_node;
  wl->tied_embed_sync = cfg->model.tied_embeddings && par->pp > 1;
  wl->nprogs = B.pp;

  size_t nitems = (size_t)(2 * B.m * B.vpp);
  int64_t layers_total = cfg->model.layers;
  int rc = SC_ENOMEM;
  item *sched_all = sc__malloc(ctx, sizeof(item) * nitems * (size_t)B.pp);
  B.param_ag = sc__malloc(ctx, sizeof(uint32_t) * (size_t)layers_total);
  B.item_end = sc__malloc(ctx, sizeof(uint32_t) * nitems);
  B.item_send = sc__malloc(ctx, sizeof(uint32_t) * nitems);
  B.lag = B.vpp > 1 ? 2 : 1;
  wl->progs = sc__calloc(ctx, (size_t)B.pp, sizeof(sc_program));
  if (!sched_all || !B.param_ag || !B.item_end || !B.item_send || !wl->progs) goto done;
  for (int64_t s = 0; s < B.pp; s++) schedule(&B, s, sched_all + (size_t)s * nitems);

  for (int64_t s = 0; s < B.pp; s++) {
    B.stage = s;
    B.prog = &wl->progs[s];
    B.nwait = 0;
    merger *M = &B.mg;
    M->open = M->flushed = 0;
    M->t_c = M->t_tp = M->op_start = 0;
    M->first_id = 1;
    M->last_id = M->must_wait = M->tp_done_id = 0;
    M->tp_done = M->real_tp = NONE;
    double params = 0;
    rc = build_stage(&B, sched_all + (size_t)s * nitems, nitems, &params);
    if (!rc && M->inline_tp) { /* collectives still running after the last op */
      where w = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
      flush_remainder(&B, &w);
      rc = B.rc;
    }
    if (rc) goto done;
    if (params > wl->params_per_stage_max) wl->params_per_stage_max = params;
  }
  rc = SC_OK;
done:
  sc__free(ctx, sched_all, sizeof(item) * nitems * (size_t)B.pp);
  sc__free(ctx, B.param_ag, sizeof(uint32_t) * (size_t)layers_total);
  sc__free(ctx, B.item_end, sizeof(uint32_t) * nitems);
  sc__free(ctx, B.item_send, sizeof(uint32_t) * nitems);
  if (rc) {
    *retry = B.mg.retry && rc != SC_ENOMEM;
    if (rc == SC_ENOMEM) sc__error(ctx, SC_ENOMEM, "out of memory building the workload");
    sc__workload_free(ctx, wl);
  }
  return rc;
}

int sc__workload_build_ex(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost,
                          unsigned flags, sc_workload *wl) {
  const sc_config *cfg = sh->cfg;
  /* TP collectives are inlined (see "merging") when each runs alone at rate
   * 1 on a known placement: folded (one simulated member per group), the
   * group inside one node (no NIC), no interference (SC_WL_MERGE's rule). */
  int64_t tp = cfg->parallel.tp;
  int inline_tp = (flags & SC_WL_MERGE) && cfg->simulation.fold && tp > 1 &&
                  cost->gpus_per_node > 0 && cost->gpus_per_node % tp == 0 &&
                  cfg->simulation.interference == SC_INTERF_NONE;
  int retry = 0;
  int rc = build_workload(ctx, sh, cost, flags, inline_tp, wl, &retry);
  if (rc && retry) rc = build_workload(ctx, sh, cost, flags, 0, wl, &retry);
  return rc;
}

