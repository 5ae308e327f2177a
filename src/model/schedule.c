/*
 * schedule.c: the order of forward and backward passes each pipeline stage
 * runs (schedule_int.h): GPipe; 1F1B (PipeDream-flush); Megatron's
 * interleaved 1F1B, flexible in the micro-batch count; the zero-bubble
 * schedules of Qi et al. 2024 ("Zero Bubble Pipeline Parallelism"): ZB-H1
 * (1F1B with the weight-grad pass W of stage i deferred by i micro-batches,
 * so every stage holds pp micro-batches and W passes fill the cool-down) and
 * ZB-V (two chunks per stage in a V, ordered by a unit-time list schedule);
 * DeepSeek-V3's DualPipe and DualPipe-V (their eight-step tables, with the
 * overlapped forward-and-backward chunks marked).
 */
#include "model/schedule_int.h"

#include <string.h>

static sc_sched_item pass_item(int64_t mb, int64_t chunk, int pass) {
  sc_sched_item it = {(uint32_t)mb, (uint16_t)chunk, (uint8_t)pass, 0};
  return it;
}

/* Micro-batches of the padded interleaved table: m rounded up to a
 * multiple of pp. */
static int64_t padded_m(const sc_shape *sh) { return (sh->m + sh->pp - 1) / sh->pp * sh->pp; }

void sc__schedule_interleaved_fwd(const sc_shape *sh, int64_t k, uint32_t *mb, uint16_t *chunk) {
  int64_t pp = sh->pp, v = sh->vpp, in = k % (pp * v);
  *chunk = (uint16_t)(in / pp);
  *mb = (uint32_t)(k / (pp * v) * pp + in % pp);
}

int64_t sc__schedule_warmup(const sc_shape *sh, int64_t stage) {
  int64_t pp = sh->pp, total = sh->m * sh->vpp, warm;
  switch (sh->cfg->parallel.schedule) {
  case SC_SCHED_GPIPE: return sh->m;
  case SC_SCHED_INTERLEAVED:
    total = padded_m(sh) * sh->vpp;
    warm = (pp - stage - 1) * 2 + (sh->vpp - 1) * pp;
    break;
  default: warm = pp - stage - 1; break;
  }
  return warm < total ? warm : total;
}

/* ------------------------------------------------------------ iterator */

void sc__schedule_begin(const sc_shape *sh, int64_t stage, sc_sched_iter *it) {
  memset(it, 0, sizeof *it);
  it->sh = sh;
  it->stage = stage;
  it->kind = sh->vpp > 1 && !sc__schedule_whole(sh) ? SC_SCHED_INTERLEAVED
                                                    : sh->cfg->parallel.schedule;
  it->total = (it->kind == SC_SCHED_INTERLEAVED ? padded_m(sh) : sh->m) * sh->vpp;
  it->warm = sc__schedule_warmup(sh, stage);
  it->defer = it->kind == SC_SCHED_ZB_H1 ? stage : -1;
}

/* GPipe: every forward, then every backward. 1F1B (and ZB-H1 with defer
 * >= 0): the warm-up forwards, then a forward (while any is left) and a
 * backward at a time, each backward followed by the weight grads of the
 * micro-batch `defer` backwards earlier, then the remaining weight grads.
 * Interleaved: the same pairs over Megatron's table of (micro-batch, chunk). */
int sc__schedule_next(sc_sched_iter *it, sc_sched_item *out) {
  const sc_shape *sh = it->sh;
  uint32_t mb;
  uint16_t c;
  if (sc__schedule_whole(sh)) return 0;
  if (it->kind == SC_SCHED_GPIPE) {
    if (it->f < sh->m) *out = pass_item(it->f++, 0, SC_PASS_F);
    else if (it->b < sh->m) *out = pass_item(it->b++, 0, SC_PASS_B);
    else return 0;
    return 1;
  }
  for (;;) {
    if (it->f < it->warm) {
      it->step = 0;
    } else if (it->b >= it->total) {
      if (it->defer < 0 || it->w >= it->total) return 0;
      *out = pass_item(it->w++, 0, SC_PASS_W);
      return 1;
    }
    switch (it->step) {
    case 0: /* a forward, while any is left */
      if (it->f >= it->warm) it->step = 1;
      if (it->f >= it->total) continue;
      if (it->kind == SC_SCHED_INTERLEAVED) {
        sc__schedule_interleaved_fwd(sh, it->f++, &mb, &c);
        if (mb >= sh->m) continue; /* a padding micro-batch */
        *out = pass_item(mb, c, SC_PASS_F);
      } else {
        *out = pass_item(it->f++, 0, SC_PASS_F);
      }
      return 1;
    case 1: /* a backward */
      it->step = 2;
      if (it->kind == SC_SCHED_INTERLEAVED) {
        sc__schedule_interleaved_fwd(sh, it->b++, &mb, &c);
        if (mb >= sh->m) continue; /* a padding micro-batch */
        *out = pass_item(mb, sh->vpp - 1 - c, SC_PASS_B);
      } else {
        *out = pass_item(it->b++, 0, SC_PASS_B);
      }
      return 1;
    default: /* the deferred weight grads, if due */
      it->step = 0;
      if (it->defer >= 0 && it->b - it->w > it->defer) {
        *out = pass_item(it->w++, 0, SC_PASS_W);
        return 1;
      }
      continue;
    }
  }
}

/* ------------------------------------------------------------ ZB-V */

/* ZB-V places chunk 0 of the model on stages 0..pp-1 and chunk 1 on
 * pp-1..0 (virtual stage 2pp-1-s on stage s), so stage 0 holds the
 * embedding and the loss and the forward turns on the last stage. Its order
 * comes from a list schedule of the whole pipeline over estimated pass times
 * (as the paper's automatic scheduler uses profiled ones): whenever a stage
 * is free it runs the first ready pass in the order F of chunk 1, B of chunk
 * 1, B of chunk 0, W of chunk 0, F of chunk 0 (while fewer than
 * sc__schedule_zbv_limit passes are in flight), W of chunk 1. Finishing the
 * forwards that turn and the backwards first keeps the pipeline draining;
 * weight grads fill what would be bubbles. On a uniform model this comes
 * within 10-30 % of the last stage's unavoidable start-up idle, (pp - 1)
 * chunk forwards (the unit tests check the bound). */

typedef struct zbv_pass {
  int pass, chunk;
} zbv_pass;

static const zbv_pass zbv_priority[] = {
    {SC_PASS_F, 1}, {SC_PASS_B, 1}, {SC_PASS_B, 0}, {SC_PASS_W, 0}, {SC_PASS_F, 0}, {SC_PASS_W, 1},
};

/* Estimated time of a chunk's forward, input-grad and weight-grad pass, in
 * FLOPs of one layer and micro-batch (their ratio is what matters): the
 * GEMMs' 2 T n k each way, FlashAttention's causal forward and 2.5 times it
 * backward, recomputation added to the input-grad pass. */
static void zbv_times(const sc_shape *sh, double t[3]) {
  double T = sh->b * sh->s_cp;
  double fc1 = sh->f * (sh->swiglu ? 2.0 : 1.0);
  double gemm = 2.0 * T * sh->h * (sh->qkv_out + sh->qd + fc1 + sh->f) / sh->t;
  double attn = 2.0 * T * sh->s * sh->qd / sh->t;
  t[SC_PASS_F] = gemm + attn;
  t[SC_PASS_B] = gemm + 2.5 * attn;
  t[SC_PASS_W] = gemm;
  if (sh->cfg->training.recompute == SC_RECOMPUTE_FULL) t[SC_PASS_B] += t[SC_PASS_F];
  else if (sh->cfg->training.recompute == SC_RECOMPUTE_SELECTIVE) t[SC_PASS_B] += attn;
  else if (sh->cfg->training.recompute == SC_RECOMPUTE_OP_SAC) /* wk, wo, w3 (or w2) again */
    t[SC_PASS_B] += 2.0 * T * (sh->h * sh->g_rank * sh->d + (sh->qd + sh->f) * sh->h / sh->t);
}

typedef struct zbv_state {
  int64_t pp, m;
  double *done;  /* [(pass * 2 + chunk) * pp + stage][mb]: end time, or -1 */
  double *heap;  /* pending end times, a binary min-heap */
  size_t nheap;
} zbv_state;

static double *zbv_cell(const zbv_state *z, int pass, int chunk, int64_t s, int64_t mb) {
  return &z->done[(((int64_t)pass * 2 + chunk) * z->pp + s) * z->m + mb];
}

static int zbv_done_by(const zbv_state *z, int pass, int chunk, int64_t s, int64_t mb, double t) {
  double e = *zbv_cell(z, pass, chunk, s, mb);
  return e >= 0 && e <= t;
}

/* Whether pass (pass, chunk) of mb on stage s has its inputs by time t. */
static int zbv_ready(const zbv_state *z, int pass, int chunk, int64_t s, int64_t mb, double t) {
  int64_t pp = z->pp;
  switch (pass) {
  case SC_PASS_F:
    if (chunk == 0) return s == 0 || zbv_done_by(z, SC_PASS_F, 0, s - 1, mb, t);
    return s == pp - 1 ? zbv_done_by(z, SC_PASS_F, 0, s, mb, t)
                       : zbv_done_by(z, SC_PASS_F, 1, s + 1, mb, t);
  case SC_PASS_B:
    if (chunk == 1)
      return s == 0 ? zbv_done_by(z, SC_PASS_F, 1, 0, mb, t)
                    : zbv_done_by(z, SC_PASS_B, 1, s - 1, mb, t);
    return (s == pp - 1 ? zbv_done_by(z, SC_PASS_B, 1, s, mb, t)
                        : zbv_done_by(z, SC_PASS_B, 0, s + 1, mb, t)) &&
           zbv_done_by(z, SC_PASS_F, 0, s, mb, t);
  default:
    return zbv_done_by(z, SC_PASS_B, chunk, s, mb, t);
  }
}

static void heap_push(zbv_state *z, double t) {
  size_t i = z->nheap++;
  while (i > 0 && z->heap[(i - 1) / 2] > t) {
    z->heap[i] = z->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  z->heap[i] = t;
}

static double heap_pop(zbv_state *z) {
  double top = z->heap[0], last = z->heap[--z->nheap];
  size_t i = 0, n = z->nheap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && z->heap[c + 1] < z->heap[c]) c++;
    if (z->heap[c] >= last) break;
    z->heap[i] = z->heap[c];
    i = c;
  }
  if (n) z->heap[i] = last;
  return top;
}

int sc__schedule_zbv(sc_ctx *ctx, int64_t pp, int64_t m, const double t[3], sc_sched_item *items) {
  int64_t len = 6 * m, limit = 2 * pp; /* sc__schedule_zbv_limit */
  int64_t total = len * pp, placed = 0;
  size_t cells = (size_t)(6 * pp * m);
  zbv_state z = {pp, m, NULL, NULL, 0};
  z.done = sc__malloc(ctx, cells * sizeof *z.done);
  z.heap = sc__malloc(ctx, ((size_t)total + 1) * sizeof *z.heap);
  int64_t *next = sc__calloc(ctx, (size_t)(6 * pp), sizeof *next); /* per (pass, chunk, stage) */
  int64_t *fill = sc__calloc(ctx, (size_t)(2 * pp), sizeof *fill);  /* items placed, in flight */
  double *free_at = sc__calloc(ctx, (size_t)pp, sizeof *free_at);
  int rc = SC_ENOMEM;
  if (!z.done || !z.heap || !next || !fill || !free_at) goto out;
  for (size_t i = 0; i < cells; i++) z.done[i] = -1;
  heap_push(&z, 0);
  while (placed < total && z.nheap) {
    double now = heap_pop(&z);
    while (z.nheap && z.heap[0] <= now) heap_pop(&z);
    for (int64_t s = 0; s < pp; s++) {
      if (free_at[s] > now) continue;
      int64_t *nfill = &fill[2 * s], *inflight = &fill[2 * s + 1];
      for (size_t k = 0; k < sizeof zbv_priority / sizeof zbv_priority[0]; k++) {
        int pass = zbv_priority[k].pass, chunk = zbv_priority[k].chunk;
        int64_t *nx = &next[(pass * 2 + chunk) * pp + s];
        if (*nx >= m) continue;
        if (pass == SC_PASS_F && *inflight >= limit) continue;
        if (!zbv_ready(&z, pass, chunk, s, *nx, now)) continue;
        double end = now + t[pass];
        *zbv_cell(&z, pass, chunk, s, *nx) = end;
        free_at[s] = end;
        heap_push(&z, end);
        items[s * len + (*nfill)++] = pass_item(*nx, chunk, pass);
        *inflight += pass == SC_PASS_F ? 1 : pass == SC_PASS_W ? -1 : 0;
        (*nx)++;
        placed++;
        break;
      }
    }
  }
  rc = placed == total ? SC_OK
                       : sc__error(ctx, SC_EINTERNAL, "zbv schedule: %lld of %lld passes placed",
                                   (long long)placed, (long long)total);
out:
  sc__free(ctx, z.done, cells * sizeof *z.done);
  sc__free(ctx, z.heap, ((size_t)total + 1) * sizeof *z.heap);
  sc__free(ctx, next, (size_t)(6 * pp) * sizeof *next);
  sc__free(ctx, fill, (size_t)(2 * pp) * sizeof *fill);
  sc__free(ctx, free_at, (size_t)pp * sizeof *free_at);
  return rc;
}

/* ------------------------------------------------------------ DualPipe */

/* DualPipe and DualPipe-V share one step table (the DeepSeek-V3 report's
 * figure 5 and deepseek-ai/DualPipe's dualpipe.py / dualpipev.py, whose
 * step counts this follows; the order is our own code). It is written for
 * "rank" r of n ranks with M micro-batches per phase: DualPipe-V runs it
 * with r = stage, n = pp, M = m, phase 0 the first leg of the V (chunk 0)
 * and phase 1 the way back; DualPipe with r = min(s, pp - 1 - s), n = pp/2,
 * M = m / 2, and on the second half of the stages the phases swapped, so
 * phase 0 is always the direction whose micro-batches reach the stage
 * first. Per stage:
 *   1. 2 (n - r - 1) forwards of phase 0;
 *   2. r + 1 pairs F0 F1;
 *   3. n - r - 1 times B1, its W1, F1 (zero-bubble: W right away);
 *   4. M - 2n + r + 1 times F0&B1, F1&B0 (F&B chunks; on the middle
 *      stages the first F0, B1 run apart, which shortens the bubble);
 *   5. n - r - 1 times B1, F1&B0;
 *   6. r + 1 times B1, B0, the later half with W deferred;
 *   7. n - r - 1 times a deferred W, B0 with W deferred;
 *   8. r + 1 deferred W.
 * A backward whose W is not deferred is a B item followed by its W item;
 * deferred W run first in, first out (dualpipe's WeightGradStore queue). */
typedef struct dp_table {
  const sc_shape *sh;
  sc_sched_item *out;
  size_t n, cap;
  int64_t f[2], b[2];       /* next micro-batch per phase */
  int swap;                 /* phase 1 is chunk 0 (DualPipe's second half) */
  int64_t base[2];          /* first micro-batch of each chunk */
  sc_sched_item *q;         /* deferred W, a ring: at most r + 1 <= n pending */
  size_t qcap, qhead, qlen;
} dp_table;

static void dp_put(dp_table *t, sc_sched_item x) {
  if (t->n < t->cap) t->out[t->n] = x;
  t->n++;
}

static int dp_chunk(const dp_table *t, int phase) { return phase ^ t->swap; }

static void dp_forward(dp_table *t, int phase, int fb) {
  int c = dp_chunk(t, phase);
  sc_sched_item x = pass_item(t->base[c] + t->f[phase]++, c, SC_PASS_F);
  x.fb = (uint8_t)fb;
  dp_put(t, x);
}

/* A backward of `phase`: its W at once, or queued (defer). */
static void dp_backward(dp_table *t, int phase, int defer, int fb) {
  int c = dp_chunk(t, phase);
  int64_t mb = t->base[c] + t->b[phase]++;
  sc_sched_item x = pass_item(mb, c, SC_PASS_B);
  x.fb = (uint8_t)fb;
  dp_put(t, x);
  if (!defer) {
    dp_put(t, pass_item(mb, c, SC_PASS_W));
  } else if (t->qlen < t->qcap) {
    t->q[(t->qhead + t->qlen++) % t->qcap] = pass_item(mb, c, SC_PASS_W);
  } else {
    t->n = t->cap + 1; /* cannot happen: reported as a length mismatch */
  }
}

static void dp_weight(dp_table *t) {
  if (!t->qlen) {
    t->n = t->cap + 1;
    return;
  }
  dp_put(t, t->q[t->qhead]);
  t->qhead = (t->qhead + 1) % t->qcap;
  t->qlen--;
}

/* An F&B chunk: the forward of phase pf, the backward of the other. */
static void dp_fb(dp_table *t, int pf) {
  dp_forward(t, pf, 1);
  dp_backward(t, !pf, 0, 1);
}

static void dp_stage(dp_table *t, int64_t r, int64_t n, int64_t M) {
  int64_t i, k6 = r + 1;
  for (i = 0; i < 2 * (n - r - 1); i++) dp_forward(t, 0, 0);
  for (i = 0; i < r + 1; i++) dp_forward(t, 0, 0), dp_forward(t, 1, 0);
  for (i = 0; i < n - r - 1; i++) {
    dp_backward(t, 1, 1, 0);
    dp_weight(t);
    dp_forward(t, 1, 0);
  }
  for (i = 0; i < M - 2 * n + r + 1; i++) {
    if (i == 0 && r == n - 1) { /* the middle stages: apart */
      dp_forward(t, 0, 0);
      dp_backward(t, 1, 0, 0);
    } else {
      dp_fb(t, 0);
    }
    dp_fb(t, 1);
  }
  for (i = 0; i < n - r - 1; i++) {
    dp_backward(t, 1, 0, 0);
    dp_fb(t, 1);
  }
  /* Step 6: the W of the later half deferred, switching before B1 (odd r)
   * or between B1 and B0 (even r), so r + 1 W are queued. */
  int defer = 0;
  for (i = 0; i < k6; i++) {
    if (i == k6 / 2 && r % 2 == 1) defer = 1;
    dp_backward(t, 1, defer, 0);
    if (i == k6 / 2 && r % 2 == 0) defer = 1;
    dp_backward(t, 0, defer, 0);
  }
  for (i = 0; i < n - r - 1; i++) {
    dp_weight(t);
    dp_backward(t, 0, 1, 0);
  }
  for (i = 0; i < r + 1; i++) dp_weight(t);
}

static int dualpipe(sc_ctx *ctx, const sc_shape *sh, sc_sched_item *items) {
  int64_t pp = sh->pp, m = sh->m;
  int dual = sh->cfg->parallel.schedule == SC_SCHED_DUALPIPE;
  int64_t n = dual ? pp / 2 : pp, M = dual ? m / 2 : m;
  size_t len = sc__schedule_len(sh);
  if ((dual && (pp % 2 || m % 2)) || M < 2 * n)
    return sc__error(ctx, SC_EINTERNAL, "%s schedule: pp %lld, %lld micro-batches",
                     dual ? "dualpipe" : "dualpipev", (long long)pp, (long long)m);
  size_t qcap = (size_t)n + 1;
  sc_sched_item *q = sc__malloc(ctx, qcap * sizeof *q);
  if (!q) return SC_ENOMEM;
  int rc = SC_OK;
  for (int64_t s = 0; s < pp && !rc; s++) {
    dp_table t;
    memset(&t, 0, sizeof t);
    t.sh = sh;
    t.out = items + (size_t)s * len;
    t.cap = len;
    t.q = q;
    t.qcap = qcap;
    t.swap = dual && s >= pp / 2;
    /* DualPipe's mirrored copy runs micro-batches m/2 .. m - 1; DualPipe-V
     * takes each micro-batch through both chunks */
    t.base[1] = dual ? M : 0;
    dp_stage(&t, dual ? (s < pp - 1 - s ? s : pp - 1 - s) : s, n, M);
    if (t.n != len || t.qlen)
      rc = sc__error(ctx, SC_EINTERNAL, "stage %lld's %s schedule has %zu items, not %zu",
                     (long long)s, dual ? "dualpipe" : "dualpipev", t.n, len);
  }
  sc__free(ctx, q, qcap * sizeof *q);
  return rc;
}

/* ------------------------------------------------------------ entry */

int sc__schedule_all(sc_ctx *ctx, const sc_shape *sh, sc_sched_item *items) {
  size_t len = sc__schedule_len(sh);
  sc_schedule kind = sh->cfg->parallel.schedule;
  if (kind == SC_SCHED_ZBV) {
    double t[3];
    zbv_times(sh, t);
    return sc__schedule_zbv(ctx, sh->pp, sh->m, t, items);
  }
  if (kind == SC_SCHED_DUALPIPE || kind == SC_SCHED_DUALPIPEV) return dualpipe(ctx, sh, items);
  for (int64_t s = 0; s < sh->pp; s++) {
    sc_sched_item *out = items + (size_t)s * len, x;
    size_t n = 0;
    sc_sched_iter it;
    sc__schedule_begin(sh, s, &it);
    while (n < len && sc__schedule_next(&it, &x)) out[n++] = x;
    if (n != len || sc__schedule_next(&it, &x))
      return sc__error(ctx, SC_EINTERNAL, "stage %lld's schedule has %zu items, not %zu",
                       (long long)s, n, len);
  }
  return SC_OK;
}
