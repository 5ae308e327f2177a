/*
 * variation.c: what-if variation (variation_int.h, docs/WHATIF.md).
 *
 * Which ranks to simulate. Ranks are coupled tightly (every layer, every
 * micro-batch) by their TP, CP and EP groups, their FSDP shard group and the
 * pipeline (the ranks of one data-parallel index d across stages: a *pipeline
 * replica*, tp x cp x pp ranks), and loosely, symmetrically, by the groups
 * spanning replicas (DP gradient reduction, expert-data-parallel, HSDP
 * replicas), whose members all wait for the last to arrive. A varied rank
 * changes the timeline of its whole replica, and of the replicas that share
 * an EP block or FSDP shard block with it (when that block is smaller than
 * the stage); every other replica sees the varied ones only through the
 * symmetric groups, so all of them run the same timeline. The engine
 * therefore simulates the affected replicas in full plus one unaffected
 * replica, which stands for the rest (its weight in the breakdown), and the
 * step is exact: the same as simulating every rank (tested). Per-GPU
 * variability touches every replica, so it simulates every rank.
 */
#include "analysis/variation_int.h"

#include "input/config_int.h"
#include "input/vary_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ random draws */

/* SplitMix64: a small, well-mixed generator, seeded per purpose so that
 * adding one kind of variation does not move another's draws. */
typedef struct rng {
  uint64_t s;
} rng;

static rng rng_for(int64_t seed, uint64_t purpose) {
  rng r = {(uint64_t)seed * 0x9E3779B97F4A7C15ull ^ purpose * 0xD1B54A32D192ED03ull};
  return r;
}

static uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double rng_unit(rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0; }

static int64_t rng_below(rng *r, int64_t n) { return (int64_t)(rng_unit(r) * (double)n) % n; }

/* Standard normal (Box-Muller; one value per call, for a fixed order). */
static double rng_normal(rng *r) {
  double u = rng_unit(r), v = rng_unit(r);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ------------------------------------------------------------ varied ranks */

typedef struct entry {
  int64_t g;
  double speed, nic, nvlink;
  uint8_t mix;
} entry;

typedef struct collect {
  sc_ctx *ctx;
  const sc_config *cfg;
  int field;          /* SC_FIELD_variation_* being read */
  int64_t world, nodes, gpn;
  entry *e;
  size_t n, cap;
  uint64_t purpose;   /* distinct draws per item */
  char gpu[32];       /* gpu_mix's preset */
} collect;

static int add(collect *C, int64_t g, double speed, double nic, double nvlink, uint8_t mix) {
  if (C->n == C->cap) {
    size_t nc = C->cap ? C->cap * 2 : 64;
    entry *ne = sc__realloc(C->ctx, C->e, C->cap * sizeof *ne, nc * sizeof *ne);
    if (!ne) return SC_ENOMEM;
    C->e = ne;
    C->cap = nc;
  }
  C->e[C->n++] = (entry){g, speed, nic, nvlink, mix};
  return SC_OK;
}

static int where_error(collect *C, const char *fmt, long long a, long long b) {
  char w[320], msg[200];
  snprintf(msg, sizeof msg, fmt, a, b);
  return sc__error(C->ctx, SC_EINVAL, "%s: %s: %s",
                   sc__config_where(C->cfg, C->field, w, sizeof w), sc_config_field_name(C->field),
                   msg);
}

/* Draws `count` distinct values below n (a sorted set kept in a small
 * open-addressing table), calling take for each in draw order. */
static int draw_distinct(collect *C, int64_t count, int64_t n, int (*take)(collect *, int64_t, const sc_vary_item *),
                         const sc_vary_item *it) {
  if (count > n)
    return where_error(C, "count=%lld is more than the %lld there are", (long long)count,
                       (long long)n);
  size_t cap = 16;
  while (cap < (size_t)count * 2) cap *= 2;
  int64_t *set = sc__malloc(C->ctx, cap * sizeof *set);
  if (!set) return SC_ENOMEM;
  for (size_t i = 0; i < cap; i++) set[i] = -1;
  rng r = rng_for(C->cfg->variation.seed, C->purpose++);
  int rc = SC_OK;
  for (int64_t k = 0; k < count && !rc; k++) {
    for (;;) {
      int64_t v = rng_below(&r, n);
      size_t h = (size_t)((uint64_t)v * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
      while (set[h] >= 0 && set[h] != v) h = (h + 1) & (cap - 1);
      if (set[h] == v) continue;
      set[h] = v;
      rc = take(C, v, it);
      break;
    }
  }
  sc__free(C->ctx, set, cap * sizeof *set);
  return rc;
}

static int take_gpu(collect *C, int64_t g, const sc_vary_item *it) {
  return add(C, g, it->speed, 1, 1, 0);
}

/* Every rank of node `node`. */
static int take_node(collect *C, int64_t node, const sc_vary_item *it) {
  int rc = SC_OK;
  int mix = C->field == SC_FIELD_variation_gpu_mix;
  for (int64_t g = node * C->gpn; g < (node + 1) * C->gpn && g < C->world && !rc; g++)
    rc = add(C, g, 1, mix ? 1 : it->nic, mix ? 1 : it->nvlink, (uint8_t)mix);
  return rc;
}

static int on_item(void *ud, const sc_vary_item *it) {
  collect *C = ud;
  int gpus = C->field == SC_FIELD_variation_slow_gpus;
  int64_t n = gpus ? C->world : C->nodes;
  int (*take)(collect *, int64_t, const sc_vary_item *) = gpus ? take_gpu : take_node;
  if (C->field == SC_FIELD_variation_gpu_mix) {
    sc__strlcpy(C->gpu, it->gpu, sizeof C->gpu);
    if (it->count) { /* the last count nodes */
      if (it->count > n)
        return where_error(C, "count=%lld is more than the %lld nodes there are",
                           (long long)it->count, (long long)n);
      int rc = SC_OK;
      for (int64_t k = n - it->count; k < n && !rc; k++) rc = take(C, k, it);
      return rc;
    }
  }
  if (it->count) return draw_distinct(C, it->count, n, take, it);
  for (size_t k = 0; k < it->nsel; k++) {
    if (it->sel[k].last >= n)
      return where_error(C, gpus ? "rank %lld is outside the job (ranks 0-%lld)"
                                 : "node %lld is outside the job (nodes 0-%lld)",
                         (long long)it->sel[k].last, (long long)(n - 1));
    for (int64_t v = it->sel[k].first; v <= it->sel[k].last; v++) {
      int rc = take(C, v, it);
      if (rc) return rc;
    }
  }
  return SC_OK;
}

static int entry_cmp(const void *a, const void *b) {
  int64_t x = ((const entry *)a)->g, y = ((const entry *)b)->g;
  return (x > y) - (x < y);
}

/* gpu_mix: the other GPU's speed per compute kind relative to the run's GPU,
 * from the two cost models: GEMMs by dense peak x calibrated GEMM
 * efficiency, attention by its peak x attention efficiency, memory-bound
 * kernels by HBM bandwidth x memory efficiency. */
static int mix_speeds(sc_ctx *ctx, const sc_config *cfg, const sc_cost *cost, const char *gpu,
                      sc_vary_plan *vp) {
  const sc_hw *hw = sc_hw_find(gpu);
  if (!hw) {
    char w[320];
    return sc__error(ctx, SC_EINVAL, "%s: variation.gpu_mix: unknown gpu \"%s\"",
                     sc__config_where(cfg, SC_FIELD_variation_gpu_mix, w, sizeof w), gpu);
  }
  sc_config *c2 = sc__malloc(ctx, sizeof *c2);
  if (!c2) return SC_ENOMEM;
  *c2 = *cfg;
  sc__strlcpy(c2->cluster.gpu, hw->name, sizeof c2->cluster.gpu);
  memset(&c2->cluster.gpu_file, 0, sizeof c2->cluster.gpu_file);
  sc_cost other;
  int rc = sc__cost_init(ctx, c2, &other);
  sc__free(ctx, c2, sizeof *c2);
  if (rc) return rc;
  double gemm = other.peak_flops * other.p.gemm_eff / (cost->peak_flops * cost->p.gemm_eff);
  double attn = other.attn_peak_flops * other.attn_eff / (cost->attn_peak_flops * cost->attn_eff);
  double mem = other.hbm_bytes_per_ns * other.p.mem_eff / (cost->hbm_bytes_per_ns * cost->p.mem_eff);
  for (int k = 0; k < SC_OP_KIND_COUNT; k++) vp->ev.mix_speed[k] = mem;
  vp->ev.mix_speed[SC_OP_GEMM] = gemm;
  vp->ev.mix_speed[SC_OP_ATTN] = attn;
  sc__strlcpy(vp->mix_gpu, hw->name, sizeof vp->mix_gpu);
  vp->mix_hbm_gib = hw->hbm_gib;
  sc__cost_release(ctx, &other);
  return SC_OK;
}

/* ------------------------------------------------------------ the plan */

static int alloc_arrays(sc_ctx *ctx, sc_vary_plan *vp, size_t n) {
  vp->cap = n ? n : 1;
  vp->global = sc__malloc(ctx, vp->cap * sizeof(int64_t));
  vp->weight = sc__malloc(ctx, vp->cap * sizeof(double));
  vp->speed = sc__malloc(ctx, vp->cap * sizeof(double));
  vp->nic = sc__malloc(ctx, vp->cap * sizeof(double));
  vp->nvlink = sc__malloc(ctx, vp->cap * sizeof(double));
  vp->mix = sc__calloc(ctx, vp->cap, 1);
  return vp->global && vp->weight && vp->speed && vp->nic && vp->nvlink && vp->mix ? SC_OK
                                                                                   : SC_ENOMEM;
}

void sc__vary_plan_free(sc_ctx *ctx, sc_vary_plan *vp) {
  if (vp->cap) {
    sc__free(ctx, vp->global, vp->cap * sizeof(int64_t));
    sc__free(ctx, vp->weight, vp->cap * sizeof(double));
    sc__free(ctx, vp->speed, vp->cap * sizeof(double));
    sc__free(ctx, vp->nic, vp->cap * sizeof(double));
    sc__free(ctx, vp->nvlink, vp->cap * sizeof(double));
    sc__free(ctx, vp->mix, vp->cap);
  }
  if (vp->mix_stage) sc__free(ctx, vp->mix_stage, (size_t)vp->pp);
  memset(vp, 0, sizeof *vp);
}

/* Marks, in `aff` (per dp index), the replicas sharing a block of `block`
 * consecutive stage-local indices (of `unit` per replica) with a marked
 * one; returns 1 when it marked any. */
static int close_blocks(uint8_t *aff, int64_t dp, int64_t unit, int64_t block, int64_t stride) {
  if (block >= stride || block <= unit) return 0; /* the whole stage, or inside a replica */
  int grew = 0;
  for (int64_t b = 0; b * block < stride; b++) {
    int64_t d0 = b * block / unit, d1 = ((b + 1) * block - 1) / unit;
    if (d1 >= dp) d1 = dp - 1;
    int any = 0;
    for (int64_t d = d0; d <= d1; d++) any |= aff[d];
    if (!any) continue;
    for (int64_t d = d0; d <= d1; d++)
      if (!aff[d]) aff[d] = 1, grew = 1;
  }
  return grew;
}

/* Closes a set of replicas over EP blocks (ep ranks of the expert grid)
 * and FSDP shard blocks (shard replicas) until nothing changes. */
static void close_all(uint8_t *set, int64_t dp, int64_t unit, int64_t ep, int64_t shard,
                      int64_t stride) {
  for (int grew = 1; grew;) {
    grew = close_blocks(set, dp, unit, ep, stride);
    grew |= close_blocks(set, dp, unit, shard * unit, stride);
  }
}

int sc__vary_plan(sc_ctx *ctx, const sc_config *cfg, const sc_mapping *map, const sc_cost *cost,
                  sc_vary_plan *vp) {
  memset(vp, 0, sizeof *vp);
  const sc_vary_cfg *v = &cfg->variation;
  collect C = {ctx, cfg, 0, map->world, 0, map->gpus_per_node, NULL, 0, 0, 1, ""};
  C.nodes = (map->world + C.gpn - 1) / C.gpn;
  static const int keys[] = {SC_FIELD_variation_slow_gpus, SC_FIELD_variation_slow_links,
                             SC_FIELD_variation_gpu_mix};
  static const int kinds[] = {SC_VARY_GPUS, SC_VARY_LINKS, SC_VARY_MIX};
  const char *texts[] = {v->slow_gpus, v->slow_links, v->gpu_mix};
  char err[SC_ERRMSG_MAX];
  int rc = SC_OK;
  for (int k = 0; k < 3 && !rc; k++) {
    C.field = keys[k];
    C.purpose = 16u * (unsigned)(k + 1);
    rc = sc__vary_parse(kinds[k], sc_config_field_name(keys[k]), texts[k], on_item, &C, err,
                        sizeof err);
    if (rc == SC_EINVAL && !sc_errmsg(ctx)[0]) {
      char w[320];
      rc = sc__error(ctx, rc, "%s: %s", sc__config_where(cfg, keys[k], w, sizeof w), err);
    }
  }
  if (!rc && C.gpu[0]) rc = mix_speeds(ctx, cfg, cost, C.gpu, vp);
  if (rc) goto done;
  /* Entries of one rank combine: factors multiply. */
  if (C.n) qsort(C.e, C.n, sizeof *C.e, entry_cmp);
  size_t u = 0;
  for (size_t i = 0; i < C.n; i++) {
    if (u && C.e[u - 1].g == C.e[i].g) {
      entry *p = &C.e[u - 1];
      p->speed *= C.e[i].speed;
      p->nic *= C.e[i].nic;
      p->nvlink *= C.e[i].nvlink;
      p->mix |= C.e[i].mix;
    } else {
      C.e[u++] = C.e[i];
    }
  }
  C.n = u;
  int64_t tp = map->tp, cp = map->cp, dp = map->dp, pp = map->pp;
  int64_t stride = tp * cp * dp, unit = tp * cp;
  vp->pp = pp;
  vp->mix_stage = sc__calloc(ctx, (size_t)pp, 1);
  if (!vp->mix_stage) {
    rc = SC_ENOMEM;
    goto done;
  }
  int all = v->gpu_speed_sigma > 0 || !cfg->simulation.fold;
  uint8_t *aff = NULL;
  size_t nsim;
  int64_t rep = -1;     /* the first unaffected replica */
  double rep_weight = 0; /* unaffected blocks each replica of the stand-in block stands for */
  if (all) {
    nsim = (size_t)map->world;
  } else {
    aff = sc__calloc(ctx, 2 * (size_t)dp, 1); /* affected, then the stand-in block */
    if (!aff) {
      rc = SC_ENOMEM;
      goto done;
    }
    for (size_t i = 0; i < C.n; i++) aff[(C.e[i].g % stride) / unit] = 1;
    /* EP blocks (the expert grid, etp fastest, over a stage's indices) and
     * FSDP shard blocks (shard dp ranks of cp each) smaller than the stage
     * couple replicas tightly: close over both until nothing changes. */
    int64_t shard = map->shard > 0 ? map->shard : dp, ep = map->ep * map->etp;
    close_all(aff, dp, unit, ep, shard, stride);
    int64_t naff = 0;
    for (int64_t d = 0; d < dp; d++) {
      naff += aff[d];
      if (!aff[d] && rep < 0) rep = d;
    }
    /* The unaffected replicas stand for each other by whole blocks: a
     * replica's EP or shard block partners pair position by position with
     * the affected blocks' (expert-data-parallel, HSDP replica groups), so
     * the stand-in is the block of the first unaffected replica, and every
     * unaffected block must be like it. */
    int64_t nrep = 0;
    if (rep >= 0) {
      memset(aff + dp, 0, (size_t)dp);
      aff[dp + rep] = 1;
      close_all(aff + dp, dp, unit, ep, shard, stride);
      for (int64_t d = 0; d < dp; d++) nrep += aff[dp + d];
      if ((dp - naff) % nrep) { /* blocks of unequal shape: simulate all */
        all = 1;
        nsim = (size_t)map->world;
      }
    }
    if (!all) {
      vp->replicas = naff + nrep;
      rep_weight = nrep ? (double)((dp - naff) / nrep) : 0;
      nsim = (size_t)(vp->replicas * unit * pp);
    }
  }
  if ((rc = alloc_arrays(ctx, vp, nsim))) goto done_aff;
  size_t k = 0;
  if (all) {
    for (int64_t g = 0; g < map->world; g++) {
      vp->global[k] = g;
      vp->weight[k++] = 1;
    }
    vp->replicas = dp;
  } else {
    for (int64_t s = 0; s < pp; s++)
      for (int64_t d = 0; d < dp; d++) {
        if (!aff[d] && !aff[dp + d]) continue;
        double w = aff[d] ? 1.0 : rep_weight;
        for (int64_t j = 0; j < unit; j++) {
          vp->global[k] = s * stride + d * unit + j;
          vp->weight[k++] = w;
        }
      }
  }
  /* Factors: nominal, then the entries (both lists ascending). */
  size_t e = 0;
  rng sig = rng_for(v->seed, 3);
  vp->slowest_speed = 1.0;
  for (size_t i = 0; i < k; i++) {
    int64_t g = vp->global[i];
    vp->speed[i] = vp->nic[i] = vp->nvlink[i] = 1.0;
    while (e < C.n && C.e[e].g < g) e++;
    if (e < C.n && C.e[e].g == g) {
      vp->speed[i] = C.e[e].speed;
      vp->nic[i] = C.e[e].nic;
      vp->nvlink[i] = C.e[e].nvlink;
      vp->mix[i] = C.e[e].mix;
    }
    if (v->gpu_speed_sigma > 0) vp->speed[i] *= exp(v->gpu_speed_sigma * rng_normal(&sig));
    if (vp->speed[i] != 1.0 || vp->nic[i] != 1.0 || vp->nvlink[i] != 1.0 || vp->mix[i])
      vp->varied++;
    if (vp->speed[i] < vp->slowest_speed) vp->slowest_speed = vp->speed[i];
    if (vp->mix[i]) {
      vp->mix_ranks++;
      vp->mix_stage[g / stride] = 1;
    }
  }
  vp->ev.n = k;
  vp->ev.global = vp->global;
  vp->ev.weight = vp->weight;
  vp->ev.speed = vp->speed;
  vp->ev.nic = vp->nic;
  vp->ev.nvlink = vp->nvlink;
  vp->ev.mix = vp->mix_ranks ? vp->mix : NULL;
done_aff:
  if (aff) sc__free(ctx, aff, 2 * (size_t)dp);
done:
  if (C.cap) sc__free(ctx, C.e, C.cap * sizeof *C.e);
  if (rc) sc__vary_plan_free(ctx, vp);
  return rc;
}

/* ------------------------------------------------------------ goodput */

typedef struct fsteps {
  int64_t n, last;
  double lost_steps; /* steps lost over the failures, each mid-step */
  int64_t interval;
} fsteps;

static int on_failure(void *ud, const sc_vary_item *it) {
  fsteps *F = ud;
  for (size_t k = 0; k < it->nsel; k++)
    for (int64_t s = it->sel[k].first; s <= it->sel[k].last; s++) {
      F->n++;
      if (s > F->last) F->last = s;
      F->lost_steps += (double)(F->interval ? (s - 1) % F->interval : s - 1) + 0.5;
    }
  return SC_OK;
}

int sc__vary_goodput(sc_ctx *ctx, const sc_config *cfg, double step_s, double tokens_per_step,
                     int64_t world, sc_goodput *g) {
  memset(g, 0, sizeof *g);
  const sc_vary_cfg *v = &cfg->variation;
  const sc_training_cfg *t = &cfg->training;
  if (!v->failures[0] && v->gpu_mtbf_hours <= 0) return SC_OK;
  char w[320], err[SC_ERRMSG_MAX];
  int64_t steps = v->steps;
  if (!steps && t->tokens > 0 && tokens_per_step > 0) steps = (int64_t)ceil(t->tokens / tokens_per_step);
  if (!steps)
    return sc__error(ctx, SC_EINVAL,
                     "%s: variation: failures need the run's length (variation.steps or "
                     "training.tokens)",
                     sc__config_where(cfg, v->failures[0] ? SC_FIELD_variation_failures
                                                          : SC_FIELD_variation_gpu_mtbf_hours,
                                      w, sizeof w));
  if (v->gpu_mtbf_hours > 0 && t->checkpoint_interval <= 0)
    return sc__error(ctx, SC_EINVAL,
                     "%s: variation.gpu_mtbf_hours: needs training.checkpoint_interval (without "
                     "checkpoints every failure restarts the run)",
                     sc__config_where(cfg, SC_FIELD_variation_gpu_mtbf_hours, w, sizeof w));
  fsteps F = {0, 0, 0, t->checkpoint_interval};
  int rc = sc__vary_parse(SC_VARY_FAILURES, "variation.failures", v->failures, on_failure, &F,
                          err, sizeof err);
  if (rc)
    return sc__error(ctx, rc, "%s: %s",
                     sc__config_where(cfg, SC_FIELD_variation_failures, w, sizeof w), err);
  if (F.last > steps)
    return sc__error(ctx, SC_EINVAL, "%s: variation.failures: step %lld is past the run's %lld steps",
                     sc__config_where(cfg, SC_FIELD_variation_failures, w, sizeof w),
                     (long long)F.last, (long long)steps);
  double per_restart = t->restart_s + (t->checkpoint_interval > 0 ? t->checkpoint_load_s : 0);
  g->steps = steps;
  g->ideal_s = (double)steps * step_s;
  g->checkpoint_s =
      t->checkpoint_interval > 0 ? (double)(steps / t->checkpoint_interval) * t->checkpoint_save_s : 0;
  double fixed = g->ideal_s + g->checkpoint_s + F.lost_steps * step_s + (double)F.n * per_restart;
  double T = fixed;
  double expected = 0;
  if (v->gpu_mtbf_hours > 0) {
    /* Failures arrive at world / MTBF per second of the run and each costs
     * the restart plus, on average, half a checkpoint interval (and half a
     * step): T = fixed + lambda * T * c. */
    double lambda = (double)world / (v->gpu_mtbf_hours * 3600.0);
    double c = per_restart + (0.5 * (double)t->checkpoint_interval + 0.5) * step_s;
    if (lambda * c >= 1.0)
      return sc__error(ctx, SC_EINVAL,
                       "%s: variation.gpu_mtbf_hours: the run never finishes: %lld GPUs fail every "
                       "%.3g s on average and each failure costs %.3g s",
                       sc__config_where(cfg, SC_FIELD_variation_gpu_mtbf_hours, w, sizeof w),
                       (long long)world, 1.0 / lambda, c);
    T = fixed / (1.0 - lambda * c);
    expected = lambda * T;
    g->lost_s += expected * (0.5 * (double)t->checkpoint_interval + 0.5) * step_s;
    g->restart_s += expected * per_restart;
  }
  g->failures = (double)F.n + expected;
  g->lost_s += F.lost_steps * step_s;
  g->restart_s += (double)F.n * per_restart;
  g->run_s = T;
  g->goodput = T > 0 ? g->ideal_s / T : 1.0;
  return SC_OK;
}
