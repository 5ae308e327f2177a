/*
 * sweep.c: configuration search (stepcast/sweep.h). Enumerates the candidate
 * layouts of a base config in a fixed order, prunes them by divisibility,
 * config validation and the memory model (memory.c), simulates the survivors
 * with the folded engine through the process-parallel runner (par_int.h),
 * counts the ones the library refuses by reason (features not modelled
 * yet among them), appends each result to a CSV file in enumeration order
 * (crash-safe, resumable) and ranks them. Every process enumerates identically, so only
 * positions in the candidate list travel between processes.
 */
#include "stepcast/sweep.h"

#include "input/config_int.h"
#include "input/vary_int.h"
#include "analysis/simulate_int.h"
#include "analysis/par_int.h"
#include "analysis/variation_int.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ names */

const char *sc_sweep_reason_key(int r) {
  static const char *const keys[] = {
#define SC_X_KEY(id, key, text) key,
      SC_SWEEP_REASON_LIST(SC_X_KEY)
#undef SC_X_KEY
  };
  return r >= 0 && r < SC_SWEEP_REASON_COUNT ? keys[r] : "?";
}

const char *sc_sweep_reason_text(int r) {
  static const char *const texts[] = {
#define SC_X_TEXT(id, key, text) text,
      SC_SWEEP_REASON_LIST(SC_X_TEXT)
#undef SC_X_TEXT
  };
  return r >= 0 && r < SC_SWEEP_REASON_COUNT ? texts[r] : "?";
}

static int recompute_of(const char *s) { return sc_enum_parse(SC_ENUM_RECOMPUTE, s); }

/* The schedule a row's vpp implies: no suffix in its key. */
static int implied_schedule(int64_t vpp) {
  return vpp > 1 ? SC_SCHED_INTERLEAVED : SC_SCHED_1F1B;
}

const char *sc_sweep_row_key(const sc_sweep_row *r, char *buf, size_t n) {
  int k = snprintf(buf, n, "tp%" PRId64 "-pp%" PRId64 "-vpp%" PRId64 "-mb%" PRId64 "-sp%d-%s-do%d",
                   r->tp, r->pp, r->vpp, r->micro_batch, r->sequence_parallel,
                   sc_enum_name(SC_ENUM_RECOMPUTE, r->recompute), r->distributed_optimizer);
  size_t len = k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
  if (r->cp > 1 && len < n)
    len += (size_t)snprintf(buf + len, n - len, "-cp%" PRId64, r->cp);
  if ((int)r->schedule != implied_schedule(r->vpp) && r->pp > 1 && len < n) {
    const char *name = sc_enum_name(SC_ENUM_SCHEDULE, (int)r->schedule);
    len += (size_t)snprintf(buf + len, n - len, "-%s", name ? name : "?");
  }
  if (r->zero_stage >= 3 && len < n)
    len += (size_t)snprintf(buf + len, n - len, "-fsdp%" PRId64, r->fsdp_shard);
  if (r->pp_counted && len < n) len += (size_t)snprintf(buf + len, n - len, "-elsplit");
  if ((r->ep > 1 || r->etp > 1 || r->moe_dispatcher != SC_MOE_ALLTOALL) && len < n) {
    const char *d = sc_enum_name(SC_ENUM_MOE_DISPATCHER, (int)r->moe_dispatcher);
    snprintf(buf + len, n - len, "-ep%" PRId64 "-etp%" PRId64 "-%s", r->ep, r->etp, d ? d : "?");
  }
  return buf;
}

/* ------------------------------------------------------------ candidates */

/* A configuration that passed pruning; `index` is its leaf position in the
 * enumeration (pruned leaves included), the stable tie-break key. */
typedef struct cand {
  int64_t index;
  int64_t tp, pp, dp, vpp, mb;
  uint8_t sp, rc, dopt;
  uint8_t sched;    /* sc_schedule */
  uint8_t counted;  /* embedding and loss counted in the layer split */
  uint8_t split_ok; /* the layers split over (pp, vpp, sched, counted): see pipeline_split_ok */
  int64_t cp;
  int64_t fsdp;     /* ZeRO-3 shard size; 0 = no ZeRO-3 */
  int64_t ep, etp;  /* expert grid (1, 1 for a dense model) */
  uint8_t disp;     /* sc_moe_dispatcher (alltoall for a dense model) */
} cand;

typedef struct sweep {
  sc_ctx *ctx;
  const sc_sweep_opts *opts;
  sc_config probe;       /* base resolved with neutral knobs */
  int64_t gpus;
  int fp8_allgather;     /* the base's parallel.fsdp_fp8_allgather (ZeRO-3 candidates only) */
  int sched1;            /* the base's one-chunk schedule (1f1b, gpipe, zb-h1 or dualpipe) */
  int sched_v;           /* the base's V schedule (zbv or dualpipev), or -1 */
  int moe;               /* the model has routed experts (model.moe_experts > 0) */
  int base_disp;         /* the base's parallel.moe_dispatcher */
  uint64_t fingerprint;  /* of the probe: rows of another base are refused */
  cand *todo;
  size_t ntodo, cap;
  int64_t leaves;
  int64_t bounded;       /* candidates given a quick bound (top_k > 0) */
  int64_t refined;       /* of them, those given the replay's bound too */
  int refine_all;        /* testing: quick bounds all 0, so every candidate is refined */
  int64_t excluded[SC_SWEEP_REASON_COUNT];
  double capacity_gib;
  double usable_gib;     /* capacity_gib less cluster.mem_headroom */
  /* Process 0 only. */
  sc_sweep_row *rows;    /* per todo position */
  uint8_t *state;        /* per todo position: 0 pending, 1 done ok, 2 failed, 3 resumed,
                            4 dominated (not simulated) */
  int64_t *quick_ns;     /* per todo position: quick step-time lower bound (top_k > 0) */
  int64_t *bound_ns;     /* per todo position: the replay's bound, where refined */
  int64_t *bound_into;   /* quick_ns or bound_ns: where deliver_bound writes */
  size_t next_write;     /* first todo position not yet settled in the file */
  int64_t done, resumed, written;
  int fd;                /* results file or -1 */
  double last_sync;      /* monotonic seconds of the last fdatasync */
} sweep;

enum { ST_PENDING = 0, ST_OK, ST_FAILED, ST_RESUMED, ST_DOMINATED };

/* Ascending divisors of n (n >= 1) into d (at most max). */
static int divisors(int64_t n, int64_t *d, int max) {
  int k = 0;
  for (int64_t i = 1; i <= n && k < max; i++)
    if (n % i == 0) d[k++] = i;
  return k;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The values of one dimension: the user's list (first occurrence of each
 * value, in the given order) or the default. */
static int dim_values(const sc_sweep_dim *dim, const int64_t *def, int ndef, int64_t *out) {
  const int64_t *src = dim->n > 0 ? dim->v : def;
  int n = dim->n > 0 ? dim->n : ndef, k = 0;
  if (n > SC_SWEEP_DIM_MAX) n = SC_SWEEP_DIM_MAX;
  for (int i = 0; i < n; i++) {
    int seen = 0;
    for (int j = 0; j < k && !seen; j++) seen = out[j] == src[i];
    if (!seen) out[k++] = src[i];
  }
  return k;
}

/* Applies a candidate's knobs to a copy of the probe. */
static void apply(const sweep *S, const cand *c, sc_config *cfg) {
  *cfg = S->probe;
  sc_parallel_cfg *p = &cfg->parallel;
  p->tp = c->tp;
  p->pp = c->pp;
  p->dp = c->dp;
  p->cp = c->cp;
  p->vpp = c->vpp;
  p->schedule = (sc_schedule)c->sched;
  p->pp_first_layers = p->pp_last_layers = 0; /* even, or the config's derived split */
  p->pp_embedding_in_split = p->pp_loss_in_split = c->counted;
  p->sequence_parallel = c->sp;
  /* as if the config said so: resolve_moe refuses MoE with tp > 1 without
   * SP instead of switching it on (which would duplicate the SP candidate) */
  if (S->moe) cfg->field_line[SC_FIELD_parallel_sequence_parallel] = 1;
  p->distributed_optimizer = c->dopt;
  p->zero_stage = c->fsdp ? 3 : 0;
  p->fsdp_shard = c->fsdp;
  p->fsdp_fp8_allgather = c->fsdp && S->fp8_allgather;
  if (S->moe) {
    p->ep = c->ep;
    p->etp = c->etp;
    p->moe_dispatcher = (sc_moe_dispatcher)c->disp;
  } else {
    p->ep = c->ep; /* > 1 only from a user's list, refused as moe_grid */
  }
  cfg->training.micro_batch = c->mb;
  cfg->training.recompute = (sc_recompute)c->rc;
}

/* Whether the config's layer split (resolve_pipeline_split in config.c: an
 * even split of pp * vpp chunks, or the derived uneven one, or the counted
 * one) exists for these pipeline values. It depends only on the layers, pp,
 * vpp, the schedule and the counted flags, so it is asked once per
 * combination of a probe that is otherwise the least constrained layout
 * (tp = cp = 1, no SP, no ZeRO, a batch that splits): when the probe does not
 * resolve, no candidate with these values does, and pruning them is sound. */
static int pipeline_split_ok(sweep *S, int64_t pp, int64_t vpp, int sched, int counted) {
  int64_t L = S->probe.model.layers;
  if (!counted && L % (pp * vpp) == 0 && L >= pp * vpp) return 1; /* even: always */
  sc_config cfg = S->probe;
  sc_parallel_cfg *p = &cfg.parallel;
  p->tp = p->cp = 1;
  p->pp = pp;
  p->dp = S->gpus / pp;
  p->vpp = vpp;
  p->schedule = (sc_schedule)sched;
  p->pp_first_layers = p->pp_last_layers = 0;
  p->pp_embedding_in_split = p->pp_loss_in_split = counted;
  cfg.training.micro_batch = 1;
  cfg.training.global_batch = p->dp;
  return sc_config_resolve(S->ctx, &cfg) == SC_OK;
}

/* The reason a candidate the library refused with code rc and message msg
 * counts under: a feature it does not model (SC_EUNSUPPORTED with "not
 * modelled"), else the simulation's failure. Internal (the unit test
 * declares it). The library models every feature the default space tries,
 * so only a user's list can reach the first. */
int sc__sweep_refusal_reason(int rc, const char *msg);
int sc__sweep_refusal_reason(int rc, const char *msg) {
  if (rc == SC_EUNSUPPORTED && strstr(msg, "not modelled")) return SC_SWEEP_NOT_MODELLED;
  return SC_SWEEP_SIM_ERROR;
}

/* 1 when an expert grid does not fit (resolve_moe's rules): ep divides the
 * experts, etp the expert FFN, and ep * etp the block of tp * cp * dp ranks
 * of a stage. */
static int moe_grid_bad(const sweep *S, int64_t block, int64_t ep, int64_t etp) {
  const sc_model_cfg *m = &S->probe.model;
  int64_t fe = m->moe_ffn_hidden > 0 ? m->moe_ffn_hidden : m->ffn_hidden;
  return ep < 1 || etp < 1 || m->moe_experts % ep || fe % etp || ep * etp > block ||
         block % (ep * etp);
}

/* First reason a candidate cannot run, or -1 when it is worth simulating.
 * The cheap arithmetic checks come first so the counts name the real cause;
 * sc_config_resolve then catches anything else; memory last. Every check
 * only refuses what resolution or the simulation would refuse too. */
static int prune(sweep *S, const cand *c) {
  const sc_model_cfg *m = &S->probe.model;
  int64_t B = S->probe.training.global_batch;
  if (m->heads % c->tp || m->ffn_hidden % c->tp || (m->kv_heads % c->tp && c->tp % m->kv_heads))
    return SC_SWEEP_TP_SHAPE;
  if (!c->split_ok) return SC_SWEEP_PP_LAYERS;
  if (B % (c->mb * c->dp)) return SC_SWEEP_BATCH;
  if (c->sp && m->seq_len % c->tp) return SC_SWEEP_SP_SEQ;
  if (c->cp > 1 && m->seq_len % (S->probe.parallel.cp_comm == SC_CP_A2A ? c->cp : 2 * c->cp))
    return SC_SWEEP_CP_SEQ;
  if (c->fsdp && (c->fsdp > c->dp || c->dp % c->fsdp)) return SC_SWEEP_FSDP_SHARD;
  if (!S->moe ? c->ep != 1 || c->etp != 1 : moe_grid_bad(S, c->tp * c->cp * c->dp, c->ep, c->etp))
    return SC_SWEEP_MOE_GRID;
  sc_config cfg;
  apply(S, c, &cfg);
  sc_plan plan;
  int rc = c->vpp > 64 ? SC_EINVAL : sc_config_resolve(S->ctx, &cfg);
  if (!rc) rc = sc__plan_init(S->ctx, &cfg, &plan);
  if (rc == SC_EUNSUPPORTED) return sc__sweep_refusal_reason(rc, sc_errmsg(S->ctx));
  if (rc) return SC_SWEEP_INVALID;
  if (plan.memory_peak_bytes > plan.memory_usable_bytes) return SC_SWEEP_MEMORY;
  return -1;
}

static int add_leaf(sweep *S, cand *c) {
  c->index = S->leaves++;
  int r = prune(S, c);
  if (r >= 0) {
    S->excluded[r]++;
    return SC_OK;
  }
  if (sc__grow(S->ctx, (void **)&S->todo, sizeof *S->todo, &S->cap, S->ntodo + 1))
    return SC_ENOMEM;
  S->todo[S->ntodo++] = *c;
  return SC_OK;
}

/* A leaf outside every valid value (a user's list): counted, not built. */
static void invalid_leaf(sweep *S) {
  S->leaves++;
  S->excluded[SC_SWEEP_INVALID]++;
}

/* Context-parallel sizes tried by default: 1, and 2, 4, 8 where each CP
 * rank keeps at least 8192 tokens of the sequence and the sequence splits
 * into the 2 * cp load-balanced chunks. Published long-context runs keep
 * 8K-32K tokens per CP rank (Llama 3, Dubey et al. 2024, Table 4: 131,072
 * tokens over CP 16; the torchtitan and Megatron-MoE case files: 16K-32K);
 * at shorter sequences CP only adds exchanges, so it stays out of the
 * default space (--cp, opts.cp, asks for it anywhere). */
static int default_cps(const sweep *S, int64_t *out) {
  int64_t s = S->probe.model.seq_len;
  int n = 0;
  out[n++] = 1;
  for (int64_t cp = 2; cp <= 8; cp *= 2)
    if (s / cp >= 8192 && s % (2 * cp) == 0) out[n++] = cp;
  return n;
}

/* The schedules of the list valid for (pp, vpp), into out: vpp 1 the
 * one-chunk ones (dualpipe where pp is even), vpp 2 also zbv and dualpipev.
 * pp 1 runs no schedule: the first one-chunk schedule of the list (1f1b if
 * none). */
static int schedules_for(int64_t pp, int64_t vpp, const int64_t *list, int nlist, int64_t *out) {
  int n = 0;
  if (pp == 1) {
    out[0] = SC_SCHED_1F1B;
    for (int i = 0; i < nlist; i++)
      if (list[i] == SC_SCHED_GPIPE || list[i] == SC_SCHED_1F1B || list[i] == SC_SCHED_ZB_H1 ||
          list[i] == SC_SCHED_DUALPIPE) {
        out[0] = list[i] == SC_SCHED_GPIPE ? SC_SCHED_GPIPE : SC_SCHED_1F1B;
        break;
      }
    return 1;
  }
  for (int i = 0; i < nlist; i++) {
    int64_t s = list[i];
    int ok = vpp == 1 ? (s == SC_SCHED_1F1B || s == SC_SCHED_GPIPE || s == SC_SCHED_ZB_H1 ||
                         (s == SC_SCHED_DUALPIPE && pp % 2 == 0))
                      : (s == SC_SCHED_INTERLEAVED ||
                         ((s == SC_SCHED_ZBV || s == SC_SCHED_DUALPIPEV) && vpp == 2));
    if (ok) out[n++] = s;
  }
  return n;
}

/* The expert grids (ep, etp) tried on a stage of `block` = tp * cp * dp
 * ranks, in list order (ep outer), into ep[] / etp[] (at most max); returns
 * how many. A dense model: ep 1, etp 1, or the user's values (refused later
 * as moe_grid unless 1). An MoE model: by default ep the divisors of the
 * experts and etp 1 and tp (where tp divides the expert FFN), only the
 * combinations that fit; a combination that does not fit is a leaf (counted
 * under moe_grid) only when a value the user listed does not fit on its
 * own, or both values are the user's. */
static int expert_grids(const sweep *S, int64_t tp, int64_t block, int64_t *ep, int64_t *etp,
                        int max) {
  const sc_sweep_opts *o = S->opts;
  const sc_model_cfg *m = &S->probe.model;
  int64_t eps[SC_SWEEP_DIM_MAX], etps[SC_SWEEP_DIM_MAX], def_ep[SC_SWEEP_DIM_MAX], def_etp[2];
  int ndef_ep = 0, ndef_etp = 0, user_ep = o->ep.n > 0, user_etp = o->etp.n > 0;
  def_etp[ndef_etp++] = 1;
  if (!S->moe) {
    def_ep[ndef_ep++] = 1;
  } else {
    int64_t fe = m->moe_ffn_hidden > 0 ? m->moe_ffn_hidden : m->ffn_hidden;
    if (tp > 1 && fe % tp == 0) def_etp[ndef_etp++] = tp;
    ndef_ep = divisors(m->moe_experts, def_ep, SC_SWEEP_DIM_MAX);
  }
  int nep = dim_values(&o->ep, def_ep, ndef_ep, eps);
  int netp = dim_values(&o->etp, def_etp, ndef_etp, etps);
  int n = 0;
  for (int i = 0; i < nep; i++)
    for (int j = 0; j < netp && n < max; j++) {
      if (S->moe && moe_grid_bad(S, block, eps[i], etps[j]) && !(user_ep && user_etp) &&
          !(user_ep && moe_grid_bad(S, block, eps[i], 1)) &&
          !(user_etp && moe_grid_bad(S, block, 1, etps[j])))
        continue;
      ep[n] = eps[i], etp[n] = etps[j], n++;
    }
  return n;
}

/* Enumerates every leaf in the documented order, outermost first: tp, pp,
 * cp, vpp, schedule, layer split, micro-batch, sequence parallel,
 * recompute, sharding (distributed optimizer off/on, then the ZeRO-3
 * shard sizes), then for MoE models the expert grid (ep, then etp) and the
 * dispatcher, each dimension in the order of its value list. With the
 * default lists of the new dimensions holding one value where they do not
 * apply, the default space of a GPT without long sequences keeps its
 * former order. */
static int enumerate(sweep *S) {
  const sc_sweep_opts *o = S->opts;
  int64_t N = S->gpus, L = S->probe.model.layers;
  int64_t d[SC_SWEEP_DIM_MAX], tps[SC_SWEEP_DIM_MAX], pps[SC_SWEEP_DIM_MAX];
  int64_t vpps[SC_SWEEP_DIM_MAX], mbs[SC_SWEEP_DIM_MAX], sps[SC_SWEEP_DIM_MAX];
  int64_t rcs[SC_SWEEP_DIM_MAX], dos[SC_SWEEP_DIM_MAX], cps[SC_SWEEP_DIM_MAX];
  int64_t scheds[SC_SWEEP_DIM_MAX], fsdps[SC_SWEEP_DIM_MAX + 2], splits[SC_SWEEP_DIM_MAX];
  static const int64_t def_mb[] = {1, 2, 4, 8}, def_sp[] = {0, 1}, def_do[] = {0, 1};
  static const int64_t def_rc[] = {SC_RECOMPUTE_NONE, SC_RECOMPUTE_SELECTIVE, SC_RECOMPUTE_FULL};
  static const int64_t def_split[] = {SC_SWEEP_SPLIT_PLAIN, SC_SWEEP_SPLIT_COUNTED};
  int64_t def_sched[3] = {S->sched1, SC_SCHED_INTERLEAVED, S->sched_v};
  int64_t def_cp[4];
  int ndef_cp = default_cps(S, def_cp);
  int nd = divisors(gcd64(S->probe.cluster.gpus_per_node, N), d, SC_SWEEP_DIM_MAX);
  int ntp = dim_values(&o->tp, d, nd, tps);
  int nmb = dim_values(&o->micro_batch, def_mb, 4, mbs);
  int nrc = dim_values(&o->recompute, def_rc, 3, rcs);
  int nsched = dim_values(&o->schedule, def_sched, S->sched_v >= 0 ? 3 : 2, scheds);
  int nsplit = dim_values(&o->pp_split, def_split, 2, splits);
  int user_split = o->pp_split.n > 0, user_fsdp = o->fsdp.n > 0;
  int64_t fsdp_list[SC_SWEEP_DIM_MAX];
  int nfsdp = dim_values(&o->fsdp, NULL, 0, fsdp_list);
  /* Dispatchers: MoE models the list (default the base's), dense alltoall. */
  int64_t disps[SC_SWEEP_DIM_MAX], def_disp[1] = {S->moe ? S->base_disp : SC_MOE_ALLTOALL};
  int ndisp = S->moe ? dim_values(&o->dispatcher, def_disp, 1, disps) : 1;
  if (!S->moe) disps[0] = SC_MOE_ALLTOALL;
  int64_t grid_ep[SC_SWEEP_DIM_MAX * SC_SWEEP_DIM_MAX], grid_etp[SC_SWEEP_DIM_MAX * SC_SWEEP_DIM_MAX];
  for (int i = 0; i < ntp; i++) {
    int64_t tp = tps[i];
    if (tp < 1 || N % tp) {
      invalid_leaf(S);
      continue;
    }
    int64_t dpp[SC_SWEEP_DIM_MAX];
    int ndpp = divisors(N / tp, dpp, SC_SWEEP_DIM_MAX);
    int npp = dim_values(&o->pp, dpp, ndpp, pps);
    /* MoE models with tp > 1 run sequence parallel (Megatron-Core's token
     * dispatchers take SP-split tokens): by default only on; off from a
     * user's list is refused by the resolver (apply). */
    int nsp = tp > 1 ? dim_values(&o->sequence_parallel, S->moe ? def_sp + 1 : def_sp,
                                  S->moe ? 1 : 2, sps)
                     : 1;
    if (tp == 1) sps[0] = 0;
    for (int j = 0; j < npp; j++) {
      int64_t pp = pps[j];
      if (pp < 1 || (N / tp) % pp) {
        invalid_leaf(S);
        continue;
      }
      int ncp = dim_values(&o->cp, def_cp, ndef_cp, cps);
      for (int t = 0; t < ncp; t++) {
        int64_t cp = cps[t];
        if (cp < 1 || (N / (tp * pp)) % cp) {
          invalid_leaf(S);
          continue;
        }
        int64_t dp = N / (tp * pp * cp);
        int ngrid = expert_grids(S, tp, tp * cp * dp, grid_ep, grid_etp,
                                 SC_SWEEP_DIM_MAX * SC_SWEEP_DIM_MAX);
        /* vpp: divisors of the layers per stage (of the middle stages'
         * ceil(layers / pp) when pp does not divide the layers). */
        int64_t dv[SC_SWEEP_DIM_MAX];
        int ndv = 1;
        dv[0] = 1;
        if (pp > 1) ndv = divisors(L % pp == 0 ? L / pp : (L + pp - 1) / pp, dv, SC_SWEEP_DIM_MAX);
        int nv = pp > 1 ? dim_values(&o->vpp, dv, ndv, vpps) : 1;
        if (pp == 1) vpps[0] = 1; /* interleaving needs a pipeline */
        int ndo = dp > 1 ? dim_values(&o->distributed_optimizer, def_do, 2, dos) : 1;
        if (dp == 1) dos[0] = 0;
        /* ZeRO-3 shard sizes, after the distributed-optimizer values; a
         * user's list without "off" leaves those out. */
        int nfs = 0;
        int64_t fs[SC_SWEEP_DIM_MAX + 2];
        if (dp > 1 && user_fsdp) {
          int off = 0;
          for (int g = 0; g < nfsdp; g++) {
            if (fsdp_list[g] == SC_SWEEP_FSDP_OFF) off = 1;
            else fs[nfs++] = fsdp_list[g] == SC_SWEEP_FSDP_FULL ? dp : fsdp_list[g];
          }
          if (!off) ndo = 0;
        } else if (dp > 1 && pp == 1) {
          fs[nfs++] = dp;
          fs[nfs++] = S->probe.cluster.gpus_per_node / (tp * cp); /* within a node */
        }
        int nf = 0; /* distinct sizes; the default's node size only where it is hybrid */
        for (int g = 0; g < nfs; g++) {
          int seen = 0;
          for (int k = 0; k < nf && !seen; k++) seen = fsdps[k] == fs[g];
          if (seen || (!user_fsdp && g == 1 && (fs[g] < 2 || fs[g] >= dp || dp % fs[g]))) continue;
          fsdps[nf++] = fs[g];
        }
        nfs = nf;
        for (int a = 0; a < nv; a++) {
          int64_t vpp = vpps[a], sv[SC_SWEEP_DIM_MAX];
          if (vpp < 1) {
            invalid_leaf(S);
            continue;
          }
          int nsv = schedules_for(pp, vpp, scheds, nsched, sv);
          for (int h = 0; h < nsv; h++) {
            for (int e = 0; e < nsplit; e++) {
              int counted = splits[e] == SC_SWEEP_SPLIT_COUNTED;
              if (splits[e] != SC_SWEEP_SPLIT_PLAIN && !counted) {
                invalid_leaf(S);
                continue;
              }
              /* Counted splits only with a pipeline, never for zbv or
               * dualpipev (they keep the even split); by default only where
               * they are even. */
              if (counted && (pp == 1 || sv[h] == SC_SCHED_ZBV || sv[h] == SC_SCHED_DUALPIPEV))
                continue;
              if (counted && !user_split && (L + 2) % (pp * vpp)) continue;
              int split_ok = pipeline_split_ok(S, pp, vpp, (int)sv[h], counted);
              for (int b = 0; b < nmb; b++)
                for (int s = 0; s < nsp; s++)
                  for (int r = 0; r < nrc; r++)
                    for (int q = 0; q < ndo + nfs; q++) {
                      cand c;
                      memset(&c, 0, sizeof c);
                      c.tp = tp, c.pp = pp, c.dp = dp, c.cp = cp, c.vpp = vpp, c.mb = mbs[b];
                      c.sp = (uint8_t)(sps[s] != 0);
                      c.rc = (uint8_t)rcs[r];
                      c.sched = (uint8_t)sv[h];
                      c.counted = (uint8_t)counted;
                      c.split_ok = (uint8_t)split_ok;
                      if (q < ndo) c.dopt = (uint8_t)(dos[q] != 0);
                      else c.dopt = 1, c.fsdp = fsdps[q - ndo];
                      if (c.mb < 1 || rcs[r] < 0 || rcs[r] > 2 || (q >= ndo && c.fsdp < 1)) {
                        invalid_leaf(S);
                        continue;
                      }
                      for (int gi = 0; gi < ngrid; gi++) {
                        c.ep = grid_ep[gi], c.etp = grid_etp[gi];
                        /* no expert communication: the dispatcher changes nothing */
                        int ndi = c.ep == 1 && c.etp == 1 ? 1 : ndisp;
                        for (int di = 0; di < ndi; di++) {
                          if (disps[di] < 0 || disps[di] > SC_MOE_DEEPEP) {
                            invalid_leaf(S);
                            continue;
                          }
                          c.disp = (uint8_t)disps[di];
                          int rc = add_leaf(S, &c);
                          if (rc) return rc;
                        }
                      }
                    }
            }
          }
        }
      }
    }
  }
  return SC_OK;
}

/* ------------------------------------------------------------ fingerprint */

typedef struct hasher {
  uint64_t h;
} hasher;

static int hash_sink(void *ud, const char *buf, size_t len) {
  hasher *H = ud;
  for (size_t i = 0; i < len; i++) {
    H->h ^= (unsigned char)buf[i];
    H->h *= UINT64_C(1099511628211); /* FNV-1a 64 */
  }
  return 0;
}

/* ------------------------------------------------------------ CSV rows */

/* Columns: the key and the knobs of issue <= 13, the figures, the
 * breakdown, memory and base fingerprint, then (appended with issue 14, so
 * the older columns keep their places) cp, schedule, zero_stage, fsdp_shard,
 * pp_first_layers, pp_last_layers, pp_counted, and (issue 15) ep, etp,
 * moe_dispatcher. */
#define CSV_NEW_COLS 10
#define CSV_COLS (9 + 4 + SC_CAT_COUNT + 2 + CSV_NEW_COLS)

static int csv_header(char *buf, size_t n) {
  size_t len = 0;
  int k = snprintf(buf, n,
                   "key,tp,pp,dp,vpp,micro_batch,sequence_parallel,recompute,"
                   "distributed_optimizer,step_time_s,tokens_per_s,tflops_per_gpu,mfu");
  if (k < 0 || (size_t)k >= n) return -1;
  len = (size_t)k;
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    k = snprintf(buf + len, n - len, ",%s_s", sc_category_key(c));
    if (k < 0 || (size_t)k >= n - len) return -1;
    len += (size_t)k;
  }
  k = snprintf(buf + len, n - len,
               ",memory_gib,base,cp,schedule,zero_stage,fsdp_shard,pp_first_layers,"
               "pp_last_layers,pp_counted,ep,etp,moe_dispatcher\n");
  if (k < 0 || (size_t)k >= n - len) return -1;
  return (int)(len + (size_t)k);
}

/* One row as CSV text ending in '\n'; returns its length or -1. The
 * precision is what the file keeps: step time to the nanosecond (the
 * engine's resolution, so the ranking is exact), the rest rounded. */
static int csv_row(const sc_sweep_row *r, uint64_t fp, char *buf, size_t n) {
  char key[128];
  size_t len = 0;
  int k = snprintf(buf, n,
                   "%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                   ",%d,%s,%d,%.9f,%.1f,%.3f,%.6f",
                   sc_sweep_row_key(r, key, sizeof key), r->tp, r->pp, r->dp, r->vpp,
                   r->micro_batch, r->sequence_parallel, sc_enum_name(SC_ENUM_RECOMPUTE, r->recompute),
                   r->distributed_optimizer, r->step_time_s, r->tokens_per_s, r->tflops_per_gpu,
                   r->mfu);
  if (k < 0 || (size_t)k >= n) return -1;
  len = (size_t)k;
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    k = snprintf(buf + len, n - len, ",%.6f", r->breakdown_s[c]);
    if (k < 0 || (size_t)k >= n - len) return -1;
    len += (size_t)k;
  }
  const char *sched = sc_enum_name(SC_ENUM_SCHEDULE, (int)r->schedule);
  const char *disp = sc_enum_name(SC_ENUM_MOE_DISPATCHER, (int)r->moe_dispatcher);
  k = snprintf(buf + len, n - len,
               ",%.3f,%016" PRIx64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
               ",%d,%" PRId64 ",%" PRId64 ",%s\n",
               r->memory_gib, fp, r->cp, sched ? sched : "?", r->zero_stage, r->fsdp_shard,
               r->pp_first_layers, r->pp_last_layers, r->pp_counted, r->ep, r->etp,
               disp ? disp : "?");
  if (k < 0 || (size_t)k >= n - len) return -1;
  return (int)(len + (size_t)k);
}

static int parse_i64(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || end == s || *end) return -1;
  *v = x;
  return 0;
}

static int parse_f64(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return (errno || end == s || *end) ? -1 : 0;
}

/* Parses one CSV line (without '\n', modified in place) into r and its base
 * fingerprint. Returns 0 or -1 when malformed. */
static int csv_parse(char *line, sc_sweep_row *r, uint64_t *fp) {
  char *f[CSV_COLS + 1];
  int nf = 0;
  f[nf++] = line;
  for (char *p = line; *p; p++)
    if (*p == ',') {
      *p = 0;
      if (nf == CSV_COLS) return -1;
      f[nf++] = p + 1;
    }
  if (nf != CSV_COLS) return -1;
  memset(r, 0, sizeof *r);
  int64_t sp, dopt;
  int rc = recompute_of(f[7]);
  if (parse_i64(f[1], &r->tp) || parse_i64(f[2], &r->pp) || parse_i64(f[3], &r->dp) ||
      parse_i64(f[4], &r->vpp) || parse_i64(f[5], &r->micro_batch) || parse_i64(f[6], &sp) ||
      rc < 0 || parse_i64(f[8], &dopt) || parse_f64(f[9], &r->step_time_s) ||
      parse_f64(f[10], &r->tokens_per_s) || parse_f64(f[11], &r->tflops_per_gpu) ||
      parse_f64(f[12], &r->mfu))
    return -1;
  r->sequence_parallel = sp != 0;
  r->distributed_optimizer = dopt != 0;
  r->recompute = (sc_recompute)rc;
  for (int c = 0; c < SC_CAT_COUNT; c++)
    if (parse_f64(f[13 + c], &r->breakdown_s[c])) return -1;
  if (parse_f64(f[13 + SC_CAT_COUNT], &r->memory_gib)) return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(f[14 + SC_CAT_COUNT], &end, 16);
  if (errno || *end || end == f[14 + SC_CAT_COUNT]) return -1;
  *fp = x;
  char **more = f + 15 + SC_CAT_COUNT;
  int sched = sc_enum_parse(SC_ENUM_SCHEDULE, more[1]);
  int64_t counted;
  if (parse_i64(more[0], &r->cp) || sched < 0 || parse_i64(more[2], &r->zero_stage) ||
      parse_i64(more[3], &r->fsdp_shard) || parse_i64(more[4], &r->pp_first_layers) ||
      parse_i64(more[5], &r->pp_last_layers) || parse_i64(more[6], &counted))
    return -1;
  r->schedule = (sc_schedule)sched;
  r->pp_counted = counted != 0;
  int disp = sc_enum_parse(SC_ENUM_MOE_DISPATCHER, more[9]);
  if (parse_i64(more[7], &r->ep) || parse_i64(more[8], &r->etp) || disp < 0) return -1;
  r->moe_dispatcher = (sc_moe_dispatcher)disp;
  char key[128];
  if (strcmp(f[0], sc_sweep_row_key(r, key, sizeof key))) return -1;
  return 0;
}

/* Rounds a fresh row to what the file keeps, so every path (fresh,
 * resumed, other process) ranks and prints the same numbers. */
static int normalise(sc_sweep_row *r, uint64_t fp) {
  char line[1024];
  int len = csv_row(r, fp, line, sizeof line);
  if (len < 1) return -1;
  line[len - 1] = 0;
  int64_t index = r->index;
  uint64_t back;
  if (csv_parse(line, r, &back)) return -1;
  r->index = index;
  return 0;
}

/* ------------------------------------------------------------ results file */

/* Seconds between fdatasync calls on the results file. A row is handed to
 * the kernel with one write() as soon as it is settled, so killing the
 * process never loses or tears it; fdatasync only protects against an OS
 * crash or power loss, which then costs at most this much of recent rows
 * (and possibly a torn last line that resume drops). Syncing every row cost
 * ~10 ms each on the development disk, as much as a simulation. */
#define SYNC_INTERVAL_S 0.25

static double monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int sync_results(sweep *S, int force) {
  double now = monotonic_s();
  if (!force && now - S->last_sync < SYNC_INTERVAL_S) return SC_OK;
  S->last_sync = now;
  if (fdatasync(S->fd))
    return sc__error(S->ctx, SC_EWRITE, "%s: fdatasync failed: %s", S->opts->out_path,
                     strerror(errno));
  return SC_OK;
}

/* Appends all of buf with one write() on the O_APPEND descriptor: a row is
 * never interleaved with another writer's and is either complete or, after
 * a crash, a torn tail that resume drops. */
static int append_row(sweep *S, const char *buf, size_t len, int force_sync) {
  ssize_t k = write(S->fd, buf, len);
  if (k < 0 || (size_t)k != len)
    return sc__error(S->ctx, SC_EWRITE, "%s: write failed: %s", S->opts->out_path,
                     k < 0 ? strerror(errno) : "short write");
  return sync_results(S, force_sync);
}

static int cmp_tuple(const cand *a, const cand *b) {
#define CMP(f)                         \
  if (a->f != b->f) return a->f < b->f ? -1 : 1;
  CMP(tp) CMP(pp) CMP(cp) CMP(vpp) CMP(sched) CMP(counted) CMP(mb) CMP(sp) CMP(rc) CMP(dopt)
  CMP(fsdp) CMP(ep) CMP(etp) CMP(disp)
#undef CMP
  return 0;
}

static int cmp_cand(const void *x, const void *y) { return cmp_tuple(x, y); }

/* Position in todo of the row's configuration, or -1. sorted: the todo
 * entries sorted by tuple, each with its todo position in `index`. */
static int64_t find_row(const cand *sorted, size_t n, const sc_sweep_row *r) {
  cand key;
  memset(&key, 0, sizeof key);
  key.tp = r->tp, key.pp = r->pp, key.dp = r->dp, key.vpp = r->vpp, key.mb = r->micro_batch;
  key.sp = (uint8_t)r->sequence_parallel, key.rc = (uint8_t)r->recompute;
  key.dopt = (uint8_t)r->distributed_optimizer, key.sched = (uint8_t)r->schedule;
  key.counted = (uint8_t)r->pp_counted, key.cp = r->cp;
  key.fsdp = r->zero_stage >= 3 ? r->fsdp_shard : 0;
  key.ep = r->ep, key.etp = r->etp, key.disp = (uint8_t)r->moe_dispatcher;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cmp_tuple(&sorted[mid], &key);
    if (c == 0) return sorted[mid].dp == r->dp ? sorted[mid].index : -1;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* Opens the results file on process 0. Resume: drops a torn last line,
 * checks the header, reads every row back (marking its configuration done);
 * otherwise refuses a non-empty file. Writes the header into an empty file. */
static int open_results(sweep *S) {
  const char *path = S->opts->out_path;
  char header[512];
  int hlen = csv_header(header, sizeof header);
  if (hlen < 0) return sc__error(S->ctx, SC_EINTERNAL, "results header too long");
  S->fd = open(path, O_RDWR | O_APPEND | O_CREAT, 0644);
  if (S->fd < 0) return sc__error(S->ctx, SC_EWRITE, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(S->fd, &st)) return sc__error(S->ctx, SC_EWRITE, "%s: %s", path, strerror(errno));
  size_t size = (size_t)st.st_size;
  if (size > 0 && !S->opts->resume)
    return sc__error(S->ctx, SC_EINVAL,
                     "%s: already holds results; use --resume to continue it or remove it", path);
  if (size == 0) return append_row(S, header, (size_t)hlen, 1);

  char *text = sc__malloc(S->ctx, size + 1);
  if (!text) return SC_ENOMEM;
  size_t got = 0;
  while (got < size) {
    ssize_t k = pread(S->fd, text + got, size - got, (off_t)got);
    if (k <= 0) {
      sc__free(S->ctx, text, size + 1);
      return sc__error(S->ctx, SC_EREAD, "%s: read failed", path);
    }
    got += (size_t)k;
  }
  text[size] = 0;
  /* A crash can leave a torn last row: cut the file after the last '\n'. */
  size_t keep = size;
  while (keep > 0 && text[keep - 1] != '\n') keep--;
  int rc = SC_OK;
  if (keep < size && ftruncate(S->fd, (off_t)keep))
    rc = sc__error(S->ctx, SC_EWRITE, "%s: cannot drop the torn last line: %s", path,
                   strerror(errno));
  text[keep] = 0;
  if (!rc && keep == 0) rc = append_row(S, header, (size_t)hlen, 1);
  else if (!rc && (keep < (size_t)hlen || memcmp(text, header, (size_t)hlen)))
    rc = sc__error(S->ctx, SC_EINVAL, "%s: not a stepcast sweep results file (header differs)",
                   path);
  cand *sorted = NULL;
  size_t nsorted = S->ntodo ? S->ntodo : 1;
  if (!rc && keep > (size_t)hlen) {
    sorted = sc__malloc(S->ctx, nsorted * sizeof *sorted);
    if (!sorted) rc = SC_ENOMEM;
    else {
      for (size_t i = 0; i < S->ntodo; i++) {
        sorted[i] = S->todo[i];
        sorted[i].index = (int64_t)i;
      }
      qsort(sorted, S->ntodo, sizeof *sorted, cmp_cand);
    }
  }
  int lineno = 1;
  for (char *line = text + hlen; !rc && line < text + keep; lineno++) {
    char *nl = strchr(line, '\n');
    *nl = 0;
    sc_sweep_row r;
    uint64_t fp;
    if (csv_parse(line, &r, &fp))
      rc = sc__error(S->ctx, SC_EINVAL, "%s:%d: malformed results row", path, lineno + 1);
    else if (fp != S->fingerprint)
      rc = sc__error(S->ctx, SC_EINVAL,
                     "%s:%d: row of a different base config or GPU count; use another file",
                     path, lineno + 1);
    else {
      int64_t pos = find_row(sorted, S->ntodo, &r);
      if (pos >= 0 && S->state[pos] == ST_PENDING) {
        r.index = S->todo[pos].index;
        S->rows[pos] = r;
        S->state[pos] = ST_RESUMED;
        S->resumed++;
        S->done++;
      }
    }
    line = nl + 1;
  }
  if (sorted) sc__free(S->ctx, sorted, nsorted * sizeof *sorted);
  sc__free(S->ctx, text, size + 1);
  return rc;
}

/* ------------------------------------------------------------ work */

/* What a work item sends back to process 0: the row, or for a candidate
 * the library refused, the sc_sweep_reason it counts under (the message
 * stays on the process that ran it). */
typedef struct work_rec {
  sc_sweep_row row;
  int32_t reason;
} work_rec;

static int work(void *ud, int64_t pos, void *rec) {
  sweep *S = ud;
  if (pos < 0 || (size_t)pos >= S->ntodo) return SC_EINVAL; /* processes disagree */
  const cand *c = &S->todo[pos];
  work_rec *w = rec;
  sc_sweep_row *r = &w->row;
  sc_config cfg;
  apply(S, c, &cfg);
  sc_plan plan;
  sc_result res;
  int rc = sc_config_resolve(S->ctx, &cfg);
  if (!rc) rc = sc__plan_init(S->ctx, &cfg, &plan);
  if (!rc) rc = sc__plan_simulate(S->ctx, &plan, NULL, NULL, &res);
  if (rc) {
    w->reason = sc__sweep_refusal_reason(rc, sc_errmsg(S->ctx));
    return rc;
  }
  r->index = c->index;
  r->tp = c->tp;
  r->pp = c->pp;
  r->dp = c->dp;
  r->vpp = c->vpp;
  r->micro_batch = c->mb;
  r->sequence_parallel = c->sp;
  r->recompute = (sc_recompute)c->rc;
  r->distributed_optimizer = c->dopt;
  r->cp = c->cp;
  r->schedule = (sc_schedule)c->sched;
  r->zero_stage = c->fsdp ? 3 : c->dopt ? 1 : 0;
  r->fsdp_shard = c->fsdp;
  r->pp_first_layers = cfg.parallel.pp_first_layers;
  r->pp_last_layers = cfg.parallel.pp_last_layers;
  r->pp_counted = c->counted;
  r->ep = c->ep;
  r->etp = c->etp;
  r->moe_dispatcher = (sc_moe_dispatcher)c->disp;
  r->step_time_s = res.step_time_s;
  r->tokens_per_s = res.tokens_per_s;
  r->tflops_per_gpu = res.tflops_per_gpu;
  r->mfu = res.mfu;
  memcpy(r->breakdown_s, res.breakdown_s, sizeof r->breakdown_s);
  r->memory_gib = res.memory_gib;
  return SC_OK;
}

static int settle_rows(sweep *S);

static int deliver(void *ud, int64_t pos, int status, const void *rec) {
  sweep *S = ud;
  if (pos < 0 || (size_t)pos >= S->ntodo)
    return sc__error(S->ctx, SC_EINVAL, "sweep processes enumerated different candidates");
  if (status == SC_ENOMEM) return sc__error(S->ctx, SC_ENOMEM, "out of memory in a simulation");
  const work_rec *w = rec;
  if (status) {
    S->state[pos] = ST_FAILED;
    int why = w->reason >= 0 && w->reason < SC_SWEEP_REASON_COUNT ? w->reason : SC_SWEEP_SIM_ERROR;
    S->excluded[why]++;
  } else {
    S->rows[pos] = w->row;
    if (normalise(&S->rows[pos], S->fingerprint))
      return sc__error(S->ctx, SC_EINTERNAL, "cannot format a results row");
    S->state[pos] = ST_OK;
  }
  S->done++;
  int rc = settle_rows(S);
  if (rc) return rc;
  if (S->opts->progress) S->opts->progress(S->opts->progress_ud, S->done, (int64_t)S->ntodo);
  return SC_OK;
}

/* Settles the file in enumeration order: rows finished out of order wait
 * until every earlier position is decided (simulated, failed, resumed or
 * dominated). */
static int settle_rows(sweep *S) {
  while (S->next_write < S->ntodo && S->state[S->next_write] != ST_PENDING) {
    size_t p = S->next_write++;
    if (S->state[p] != ST_OK || S->fd < 0) continue;
    char line[1024];
    int len = csv_row(&S->rows[p], S->fingerprint, line, sizeof line);
    if (len < 0) return sc__error(S->ctx, SC_EINTERNAL, "cannot format a results row");
    int stop = S->opts->stop_after > 0 && S->written + 1 >= S->opts->stop_after;
    int rc = append_row(S, line, (size_t)len, stop);
    if (rc) return rc;
    S->written++;
    if (stop)
      return sc__error(S->ctx, SC_ESTOPPED, "stopped after %" PRId64 " new rows (stop_after)",
                       S->written);
  }
  return SC_OK;
}

/* ------------------------------------------------------------ bounds */

/* Candidate pos's step-time lower bound (sc__plan_bound, quick or the
 * replay's), computed on any process from its shape (the memory model was
 * pruning's). A candidate the library refuses gets 0 (no bound): it is then
 * simulated and counted under the reason the simulation gives. */
static int bound_at(sweep *S, int64_t pos, int quick, int64_t *bound) {
  if (pos < 0 || (size_t)pos >= S->ntodo) return SC_EINVAL;
  sc_config cfg;
  apply(S, &S->todo[pos], &cfg);
  sc_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.cfg = &cfg;
  int rc = sc_config_resolve(S->ctx, &cfg);
  if (!rc) rc = sc__shape_init(S->ctx, &cfg, &plan.shape);
  if (!rc) rc = sc__plan_bound(S->ctx, &plan, quick, bound);
  if (rc) *bound = 0;
  return rc == SC_ENOMEM ? rc : SC_OK;
}

static int work_quick_bound(void *ud, int64_t pos, void *rec) { return bound_at(ud, pos, 1, rec); }
static int work_bound(void *ud, int64_t pos, void *rec) { return bound_at(ud, pos, 0, rec); }

static int deliver_bound(void *ud, int64_t pos, int status, const void *rec) {
  sweep *S = ud;
  if (pos < 0 || (size_t)pos >= S->ntodo)
    return sc__error(S->ctx, SC_EINVAL, "sweep processes enumerated different candidates");
  if (status == SC_ENOMEM) return sc__error(S->ctx, SC_ENOMEM, "out of memory bounding a step");
  S->bound_into[pos] = status ? 0 : *(const int64_t *)rec;
  return SC_OK;
}

typedef struct bound_key {
  int64_t bound_ns, pos;
} bound_key;

static int cmp_bound(const void *x, const void *y) {
  const bound_key *a = x, *b = y;
  if (a->bound_ns != b->bound_ns) return a->bound_ns < b->bound_ns ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* The K-th best step (ns) of the rows at order[0..n) (simulated or read
 * back), K = top_k; INT64_MAX while fewer rows. steps: scratch of n. */
static int64_t kth_best(const sweep *S, const bound_key *order, size_t n, int64_t *steps) {
  size_t got = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t p = order[i].pos;
    if (S->state[p] == ST_OK || S->state[p] == ST_RESUMED)
      steps[got++] = llround(S->rows[p].step_time_s * 1e9);
  }
  if (got < (size_t)S->opts->top_k) return INT64_MAX;
  qsort(steps, got, sizeof *steps, cmp_i64);
  return steps[S->opts->top_k - 1];
}

/* Bounded rounds (process 0 decides, every process simulates): candidates
 * go in ascending order of their bound (the replay's, sc__plan_bound quick
 * 0), top_k positions a round. Before each round, the K-th best step over
 * the positions taken so far is the threshold; the first candidate whose
 * bound exceeds it ends the sweep: it and every later one step at least
 * that long, strictly longer than K rows already have, so none can rank
 * among the K best (ties included: the bound must exceed the threshold);
 * they are counted as dominated.
 *
 * The replay's bound is computed only where that order needs it. Every
 * candidate has a quick bound (one stage's compute), never above the
 * replay's; candidates are *refined* (given the replay's bound) in ascending
 * quick-bound order, top_k at a time, until every unrefined one has a quick
 * bound above T: the K-th smallest refined bound among the candidates left,
 * or the threshold when fewer than K are at most that. Then every unrefined
 * candidate's bound exceeds T as well, so the next round (the K smallest
 * refined bounds up to the threshold, ties by position) is exactly the one
 * that bounding every candidate gives, and so is the stop.
 *
 * Rounds, threshold and stop depend on the bounds and steps only, never on
 * which rows a file already held (those count as taken, not simulated
 * again) or on the process count, so the simulated set is the same for a
 * fresh, resumed or multi-process sweep. Each iteration is one sc__par_run
 * of bounds and one of simulations on every process (one of them empty). */
static int bounded_rounds(sweep *S, int root, int64_t *items) {
  sc_ctx *ctx = S->ctx;
  size_t nalloc = S->ntodo ? S->ntodo : 1, k = (size_t)S->opts->top_k;
  size_t nquick = 0, nready = 0, ntaken = 0; /* refined; refined, not taken; taken */
  bound_key *by_quick = NULL, *ready = NULL, *taken = NULL;
  int64_t *steps = NULL;
  uint8_t *took = NULL;
  int local = SC_OK;
  S->bound_into = S->bound_ns;
  if (root) {
    by_quick = sc__malloc(ctx, nalloc * sizeof *by_quick);
    ready = sc__malloc(ctx, nalloc * sizeof *ready);
    taken = sc__malloc(ctx, nalloc * sizeof *taken);
    steps = sc__malloc(ctx, nalloc * sizeof *steps);
    took = sc__calloc(ctx, nalloc, 1);
    if (!by_quick || !ready || !taken || !steps || !took) local = SC_ENOMEM;
    for (size_t i = 0; !local && i < S->ntodo; i++)
      by_quick[i] = (bound_key){S->quick_ns[i], (int64_t)i};
    if (!local) qsort(by_quick, S->ntodo, sizeof *by_quick, cmp_bound);
  }
  for (;;) {
    size_t nrefine = 0, nsim = 0;
    int more = 0, last = 0;
    if (root && !local) {
      int64_t limit = kth_best(S, taken, ntaken, steps);
      qsort(ready, nready, sizeof *ready, cmp_bound);
      size_t under = 0; /* the next round: ready[0 .. under) */
      while (under < nready && under < k && ready[under].bound_ns <= limit) under++;
      int64_t upto = under == k ? ready[k - 1].bound_ns : limit; /* T above */
      while (nrefine < k && nquick < S->ntodo && by_quick[nquick].bound_ns <= upto)
        items[nrefine++] = by_quick[nquick++].pos;
      if (!nrefine) {
        for (size_t i = 0; i < under; i++) {
          int64_t p = ready[i].pos;
          taken[ntaken++] = ready[i];
          took[p] = 1;
          if (S->state[p] == ST_PENDING) items[nsim++] = p;
        }
        nready -= under;
        memmove(ready, ready + under, nready * sizeof *ready);
        /* A full round with candidates left: another round, on the
         * threshold this one leaves. Else the rest (if any) is dominated. */
        more = under == k && ntaken < S->ntodo;
        last = !more;
        for (size_t p = 0; last && p < S->ntodo; p++) {
          if (took[p] || S->state[p] != ST_PENDING) continue;
          S->state[p] = ST_DOMINATED;
          S->excluded[SC_SWEEP_DOMINATED]++;
          S->done++;
        }
      }
    }
    int prc = sc__par_run(ctx, items, local ? 0 : (int64_t)nrefine, sizeof(int64_t), work_bound,
                          deliver_bound, S);
    if (!local) local = prc;
    /* Never below the quick bound (both are below the step): where the
     * whole build gives up TP inlining that the quick bound's stage keeps,
     * the replay times the TP waits at 0. */
    for (size_t i = 0; root && !local && i < nrefine; i++) {
      int64_t p = items[i], b = S->bound_ns[p] > S->quick_ns[p] ? S->bound_ns[p] : S->quick_ns[p];
      ready[nready++] = (bound_key){b, p};
    }
    S->refined += (int64_t)nrefine;
    prc = sc__par_run(ctx, items, local ? 0 : (int64_t)nsim, sizeof(work_rec), work, deliver, S);
    if (!local) local = prc;
    if (root && !local && last) local = settle_rows(S);
    int go = sc__par_share(root ? (!local && !last) : 0);
    if (go < 0 && !local) local = go;
    if (go <= 0) break;
  }
  if (by_quick) sc__free(ctx, by_quick, nalloc * sizeof *by_quick);
  if (ready) sc__free(ctx, ready, nalloc * sizeof *ready);
  if (taken) sc__free(ctx, taken, nalloc * sizeof *taken);
  if (steps) sc__free(ctx, steps, nalloc * sizeof *steps);
  if (took) sc__free(ctx, took, nalloc);
  return local;
}

/* Runs the work of a sweep on every process: with top_k the quick bounds,
 * then the bounded rounds; else one round of every pending candidate. Every
 * process makes the same sc__par_run calls; the lists are process 0's. */
static int run_work(sweep *S, int root) {
  sc_ctx *ctx = S->ctx;
  int bounded = S->opts->top_k > 0;
  size_t nalloc = S->ntodo ? S->ntodo : 1, n = 0;
  int64_t *items = NULL;
  int local = SC_OK, prc;
  if (root) {
    items = sc__malloc(ctx, nalloc * sizeof *items);
    if (bounded) {
      S->quick_ns = sc__calloc(ctx, nalloc, sizeof *S->quick_ns);
      S->bound_ns = sc__calloc(ctx, nalloc, sizeof *S->bound_ns);
    }
    if (!items || (bounded && (!S->quick_ns || !S->bound_ns))) local = SC_ENOMEM;
  }
  if (bounded) {
    for (size_t i = 0; root && !local && i < S->ntodo; i++) items[n++] = (int64_t)i;
    S->bound_into = S->quick_ns;
    prc = sc__par_run(ctx, items, local || S->refine_all ? 0 : (int64_t)n, sizeof(int64_t),
                      work_quick_bound, deliver_bound, S);
    if (!local) local = prc;
    S->bounded = local ? 0 : (int64_t)n;
  }
  n = 0;
  if (root && !local) {
    if (!bounded)
      for (size_t i = 0; i < S->ntodo; i++)
        if (S->state[i] == ST_PENDING) items[n++] = (int64_t)i;
    /* Rows already in the file settle the write order up to the first gap. */
    while (S->next_write < S->ntodo && S->state[S->next_write] != ST_PENDING) S->next_write++;
    if (S->opts->progress) S->opts->progress(S->opts->progress_ud, S->done, (int64_t)S->ntodo);
  }
  if (bounded) {
    prc = bounded_rounds(S, root, items);
  } else {
    prc = sc__par_run(ctx, items, local ? 0 : (int64_t)n, sizeof(work_rec), work, deliver, S);
  }
  if (!local) local = prc;
  if (items) sc__free(ctx, items, nalloc * sizeof *items);
  return local;
}

/* ------------------------------------------------------------ driver */

/* Sets the probe: the base with the GPU count applied and neutral knobs, so
 * that resolving it checks model, cluster and precision only. */
static int make_probe(sweep *S, const sc_config *base) {
  sc_config *p = &S->probe;
  *p = *base;
  if (S->opts->gpus > 0) {
    p->cluster.num_gpus = S->opts->gpus;
    p->cluster.nodes = 0;
  }
  int64_t batch = p->training.global_batch;
  sc_schedule bs = p->parallel.schedule;
  S->sched1 = bs == SC_SCHED_GPIPE || bs == SC_SCHED_ZB_H1 || bs == SC_SCHED_DUALPIPE
                  ? (int)bs
                  : SC_SCHED_1F1B;
  S->sched_v = bs == SC_SCHED_ZBV || bs == SC_SCHED_DUALPIPEV ? (int)bs : -1;
  S->fp8_allgather = p->parallel.fsdp_fp8_allgather;
  S->base_disp = (int)p->parallel.moe_dispatcher;
  /* The expert grid and the dispatcher are swept (MoE models). */
  p->parallel.ep = 1;
  p->parallel.etp = 0;
  p->parallel.moe_dispatcher = SC_MOE_ALLTOALL;
  p->parallel.tp = p->parallel.pp = p->parallel.vpp = p->parallel.cp = 1;
  p->parallel.dp = 0;
  p->parallel.schedule = bs == SC_SCHED_GPIPE ? SC_SCHED_GPIPE : SC_SCHED_1F1B;
  p->parallel.sequence_parallel = 0;
  p->parallel.distributed_optimizer = 0;
  /* Swept or derived per candidate: the layer split, ZeRO stage, shard. */
  p->parallel.pp_first_layers = p->parallel.pp_last_layers = 0;
  p->parallel.pp_embedding_in_split = p->parallel.pp_loss_in_split = 0;
  p->parallel.zero_stage = p->parallel.fsdp_shard = 0;
  p->parallel.fsdp_fp8_allgather = 0;
  p->training.micro_batch = 1;
  p->training.recompute = SC_RECOMPUTE_NONE;
  p->simulation.fold = 1;
  /* Layouts rank without variation; sc_sweep_robustness applies it. */
  sc__vary_clear(&p->variation);
  memset(p->field_line, 0, sizeof p->field_line);
  int rc = SC_OK;
  int64_t n = p->cluster.num_gpus ? p->cluster.num_gpus
                                  : p->cluster.nodes * (p->cluster.gpus_per_node
                                                            ? p->cluster.gpus_per_node
                                                            : 1);
  /* Any batch divisible by the world size resolves; the real one is
   * checked per candidate. */
  p->training.global_batch = n > 0 && n <= SC_CONFIG_INT_MAX ? n : 1;
  rc = sc_config_resolve(S->ctx, p);
  if (rc) return rc;
  p->training.global_batch = batch;
  p->parallel.dp = 0;
  S->gpus = p->cluster.num_gpus;
  S->moe = p->model.moe_experts > 0;
  hasher H = {UINT64_C(14695981039346656037)};
  sc_config_write_yaml(p, hash_sink, &H);
  S->fingerprint = H.h;
  sc_hw hw_own;
  const sc_hw *hw = sc__config_gpu(p, &hw_own);
  S->capacity_gib = hw ? hw->hbm_gib : 0;
  double cap_bytes = S->capacity_gib * 1073741824.0;
  if (cap_bytes > 0 && (rc = sc__memory_headroom_check(S->ctx, base, cap_bytes))) return rc;
  S->usable_gib = (cap_bytes - sc__memory_headroom_bytes(p, cap_bytes)) / 1073741824.0;
  return SC_OK;
}

static int cmp_rows(const void *x, const void *y) {
  const sc_sweep_row *a = x, *b = y;
  if (a->step_time_s != b->step_time_s) return a->step_time_s < b->step_time_s ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Releases the sweep; makes the results file durable and closes it.
 * Returns rc, or SC_EWRITE when rc is 0 and the final sync or close fails. */
static int sweep_free(sweep *S, int rc) {
  sc__free(S->ctx, S->todo, S->cap * sizeof *S->todo);
  sc__free(S->ctx, S->rows, (S->ntodo ? S->ntodo : 1) * sizeof *S->rows);
  sc__free(S->ctx, S->state, S->ntodo ? S->ntodo : 1);
  if (S->quick_ns) sc__free(S->ctx, S->quick_ns, (S->ntodo ? S->ntodo : 1) * sizeof *S->quick_ns);
  if (S->bound_ns) sc__free(S->ctx, S->bound_ns, (S->ntodo ? S->ntodo : 1) * sizeof *S->bound_ns);
  if (S->fd >= 0) {
    int src = sync_results(S, 1);
    if (close(S->fd) && !src)
      src = sc__error(S->ctx, SC_EWRITE, "%s: close failed: %s", S->opts->out_path,
                      strerror(errno));
    if (!rc) rc = src;
  }
  return rc;
}

/* sc_sweep_run; refine_all (testing): the bounded rounds without quick
 * bounds, every candidate refined, as the sweep was before it had them. */
int sc__sweep_run_ex(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                     int refine_all, sc_sweep_result *out);

int sc_sweep_run(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                 sc_sweep_result *out) {
  return sc__sweep_run_ex(ctx, base, opts, 0, out);
}

int sc__sweep_run_ex(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                     int refine_all, sc_sweep_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!base || !opts || !out) return sc__error(ctx, SC_EINVAL, "sc_sweep_run: missing argument");
  memset(out, 0, sizeof *out);
  sweep S;
  memset(&S, 0, sizeof S);
  S.ctx = ctx;
  S.opts = opts;
  S.fd = -1;
  S.refine_all = refine_all;
  int root = sc__par_rank() == 0;
  out->is_root = root;

  int rc = make_probe(&S, base);
  if (!rc) rc = enumerate(&S);
  if (!rc && root) {
    size_t n = S.ntodo ? S.ntodo : 1;
    S.rows = sc__calloc(ctx, n, sizeof *S.rows);
    S.state = sc__calloc(ctx, n, 1);
    if (!S.rows || !S.state) rc = SC_ENOMEM;
    if (!rc && opts->out_path) rc = open_results(&S);
  }
  /* Every process enumerated the same list; only process 0 knows what the
   * file already holds and whether it is usable. All go on or none. */
  int agreed = sc__par_agree(rc);
  if (agreed && !rc) rc = sc__error(ctx, agreed, "another sweep process failed");
  rc = agreed;
  /* From here every process must join each sc__par_run, even if process
   * 0 fails to prepare its list: it then hands out nothing. */
  if (!rc) rc = run_work(&S, root);

  out->gpus = S.gpus;
  out->gpus_per_node = S.probe.cluster.gpus_per_node;
  out->candidates = S.leaves;
  out->bounded = S.bounded;
  out->refined = S.refined;
  out->capacity_gib = S.capacity_gib;
  out->usable_gib = S.usable_gib;
  memcpy(out->excluded, S.excluded, sizeof out->excluded); /* failures counted by deliver */
  if (!rc && root) {
    int64_t ok = 0;
    for (size_t i = 0; i < S.ntodo; i++)
      if (S.state[i] == ST_OK || S.state[i] == ST_RESUMED) ok++;
    out->rows = sc__malloc(ctx, (size_t)(ok ? ok : 1) * sizeof *out->rows);
    if (!out->rows) rc = SC_ENOMEM;
    else {
      int64_t k = 0;
      for (size_t i = 0; i < S.ntodo; i++)
        if (S.state[i] == ST_OK || S.state[i] == ST_RESUMED) out->rows[k++] = S.rows[i];
      qsort(out->rows, (size_t)ok, sizeof *out->rows, cmp_rows);
      out->simulated = ok;
      out->resumed = S.resumed;
    }
  }
  return sweep_free(&S, rc);
}

/* Soundness check of the bounds (internal; the unit test declares it):
 * enumerates and prunes as sc_sweep_run does (one process, no file), then
 * for every candidate computes its quick bound, the replay's bound and its
 * simulated step; *checked gets the candidates all three answered for,
 * *violations those where quick > replay's > step does not hold as <=.
 * Returns 0 or SC_ENOMEM. */
int sc__sweep_bound_check(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                          int64_t *checked, int64_t *violations);
int sc__sweep_bound_check(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                          int64_t *checked, int64_t *violations) {
  *checked = *violations = 0;
  sweep S;
  memset(&S, 0, sizeof S);
  S.ctx = ctx;
  S.opts = opts;
  S.fd = -1;
  int rc = make_probe(&S, base);
  if (!rc) rc = enumerate(&S);
  for (size_t i = 0; !rc && i < S.ntodo; i++) {
    int64_t quick = 0, bound = 0;
    work_rec w;
    memset(&w, 0, sizeof w);
    rc = work_quick_bound(&S, (int64_t)i, &quick);
    if (!rc) rc = work_bound(&S, (int64_t)i, &bound);
    if (!rc && !work(&S, (int64_t)i, &w)) {
      ++*checked;
      if (quick > bound || bound > llround(w.row.step_time_s * 1e9)) ++*violations;
    }
  }
  return sweep_free(&S, rc);
}

void sc_sweep_result_free(sc_ctx *ctx, sc_sweep_result *r) {
  if (!ctx || !r) return;
  if (r->rows)
    sc__free(ctx, r->rows, (size_t)(r->simulated ? r->simulated : 1) * sizeof *r->rows);
  r->rows = NULL;
  r->simulated = 0;
}

/* ------------------------------------------------------------ output */


/* Appends to buf (n bytes, *len used), truncating at the end. */
static void appendf(char *buf, size_t n, size_t *len, const char *fmt, ...) SC_PRINTF(4, 5);
static void appendf(char *buf, size_t n, size_t *len, const char *fmt, ...) {
  if (*len + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *len, n - *len, fmt, ap);
  va_end(ap);
  if (k > 0) *len = *len + (size_t)k < n ? *len + (size_t)k : n - 1;
}

const char *sc_sweep_why_unranked(const sc_sweep_result *r, char *buf, size_t n) {
  if (!buf || !n) return buf;
  buf[0] = 0;
  if (!r || r->simulated > 0) return buf;
  size_t len = 0;
  if (r->gpus_per_node > 0 && r->gpus % r->gpus_per_node)
    appendf(buf, n, &len, "%" PRId64 " GPUs are not a multiple of the node size %" PRId64 "; ",
            r->gpus, r->gpus_per_node);
  if (r->candidates == 0) {
    appendf(buf, n, &len, "the search space is empty (the lists given leave no candidate)");
    return buf;
  }
  appendf(buf, n, &len, "all %" PRId64 " candidates excluded:", r->candidates);
  /* Reasons by count, most frequent first (ties in list order). */
  int64_t count[SC_SWEEP_REASON_COUNT];
  memcpy(count, r->excluded, sizeof count);
  for (int k = 0;; k++) {
    int best = 0;
    for (int i = 1; i < SC_SWEEP_REASON_COUNT; i++)
      if (count[i] > count[best]) best = i;
    if (count[best] <= 0) break;
    appendf(buf, n, &len, "%s %s %" PRId64 " (%s)", k ? "," : "", sc_sweep_reason_key(best),
            count[best], sc_sweep_reason_text(best));
    count[best] = -1;
  }
  return buf;
}

/* ------------------------------------------------------------ robustness */

/* The config of a ranked row: the base with the row's layout. */
static void row_config(const sc_config *base, const sc_sweep_result *r, const sc_sweep_row *w,
                       sc_config *cfg) {
  *cfg = *base;
  sc_parallel_cfg *p = &cfg->parallel;
  cfg->cluster.num_gpus = r->gpus;
  cfg->cluster.nodes = 0;
  p->tp = w->tp;
  p->pp = w->pp;
  p->dp = w->dp;
  p->cp = w->cp;
  p->vpp = w->vpp;
  p->schedule = w->schedule;
  p->pp_first_layers = p->pp_last_layers = 0; /* re-derived as the sweep did */
  p->pp_embedding_in_split = p->pp_loss_in_split = w->pp_counted;
  p->sequence_parallel = w->sequence_parallel;
  p->distributed_optimizer = w->distributed_optimizer;
  p->zero_stage = w->zero_stage >= 3 ? 3 : 0;
  p->fsdp_shard = w->zero_stage >= 3 ? w->fsdp_shard : 0;
  if (w->zero_stage < 3) p->fsdp_fp8_allgather = 0;
  if (cfg->model.moe_experts > 0) {
    p->ep = w->ep;
    p->etp = w->etp;
    p->moe_dispatcher = w->moe_dispatcher;
  }
  cfg->training.micro_batch = w->micro_batch;
  cfg->training.recompute = w->recompute;
  cfg->simulation.fold = 1;
}

static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int robust_cmp(const void *a, const void *b) {
  const sc_sweep_robust *x = a, *y = b;
  if (x->p50_s != y->p50_s) return x->p50_s < y->p50_s ? -1 : 1;
  if (x->p99_s != y->p99_s) return x->p99_s < y->p99_s ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

int sc_sweep_robustness(sc_ctx *ctx, const sc_config *base, const sc_sweep_result *r, int top_k,
                        int seeds, sc_sweep_robust *out, int64_t *n) {
  if (!ctx) return SC_EINVAL;
  if (!base || !r || !out || !n) return sc__error(ctx, SC_EINVAL, "sc_sweep_robustness: missing argument");
  *n = 0;
  const sc_vary_cfg *v = &base->variation;
  if (!sc__vary_seeded(v))
    return sc__error(ctx, SC_EINVAL,
                     "robustness over seeds needs a variation that seeds change: "
                     "variation.gpu_speed_sigma, or slow_gpus / slow_links with count=");
  if (seeds < 1 || seeds > 10000)
    return sc__error(ctx, SC_EINVAL, "robustness: %d seeds (1 to 10000)", seeds);
  int64_t k = r->simulated < top_k ? r->simulated : top_k;
  double *t = sc__malloc(ctx, (size_t)seeds * sizeof *t);
  sc_config *cfg = sc__malloc(ctx, sizeof *cfg);
  int rc = t && cfg ? SC_OK : SC_ENOMEM;
  for (int64_t i = 0; i < k && !rc; i++) {
    sc_sweep_robust *o = &out[i];
    memset(o, 0, sizeof *o);
    o->row = i;
    o->seeds = seeds;
    o->nominal_s = r->rows[i].step_time_s;
    for (int s = 0; s < seeds && !rc; s++) {
      row_config(base, r, &r->rows[i], cfg);
      cfg->variation.seed = v->seed + s;
      sc_result res;
      rc = sc_config_resolve(ctx, cfg);
      if (!rc) rc = sc_simulate_ex(ctx, cfg, 0, NULL, NULL, &res);
      if (!rc) t[s] = res.step_time_s;
    }
    if (rc) break;
    qsort(t, (size_t)seeds, sizeof *t, dbl_cmp);
    double sum = 0;
    for (int s = 0; s < seeds; s++) sum += t[s];
    o->p50_s = seeds % 2 ? t[seeds / 2] : 0.5 * (t[seeds / 2 - 1] + t[seeds / 2]);
    int at = (int)ceil(0.99 * seeds) - 1;
    o->p99_s = t[at < 0 ? 0 : at];
    o->mean_s = sum / seeds;
    o->worst_s = t[seeds - 1];
  }
  if (t) sc__free(ctx, t, (size_t)seeds * sizeof *t);
  if (cfg) sc__free(ctx, cfg, sizeof *cfg);
  if (rc) return rc;
  qsort(out, (size_t)k, sizeof *out, robust_cmp);
  *n = k;
  return SC_OK;
}

int sc_sweep_format(const sc_config *base, const sc_sweep_result *r, int top_k, sc_format fmt,
                    sc_write_fn out, void *ud) {
  return sc_sweep_format_ex(base, r, top_k, NULL, 0, fmt, out, ud);
}

/* The robustness table: text rows, or the JSON array's members. */
static int robust_write(const sc_sweep_result *r, const sc_sweep_robust *rb, int64_t n,
                        sc_format fmt, sc_write_fn out, void *ud) {
  int rc;
  char key[160];
  if (fmt == SC_FORMAT_JSON) {
    if ((rc = sc__writef(out, ud, ", \"robustness\": ["))) return rc;
    for (int64_t i = 0; i < n; i++) {
      const sc_sweep_robust *b = &rb[i];
      if ((rc = sc__writef(out, ud,
                           "%s{\"rank\": %" PRId64 ", \"nominal_rank\": %" PRId64
                           ", \"key\": \"%s\", \"seeds\": %" PRId64 ", \"step_time_s\": %.9f"
                           ", \"p50_s\": %.9f, \"p99_s\": %.9f, \"mean_s\": %.9f, "
                           "\"worst_s\": %.9f}",
                           i ? ", " : "", i + 1, b->row + 1,
                           sc_sweep_row_key(&r->rows[b->row], key, sizeof key), b->seeds,
                           b->nominal_s, b->p50_s, b->p99_s, b->mean_s, b->worst_s)))
        return rc;
    }
    return sc__writef(out, ud, "]");
  }
  if ((rc = sc__writef(out, ud,
                       "\n  robustness to stragglers: the top %" PRId64 " under the variation, %"
                       PRId64 " seeds, by P50 (docs/WHATIF.md)\n"
                       "  %4s %7s %-40s %9s %9s %9s %7s\n",
                       n, n ? rb[0].seeds : 0, "rank", "nominal", "layout", "step s", "P50 s",
                       "P99 s", "P99 +%")))
    return rc;
  for (int64_t i = 0; i < n; i++) {
    const sc_sweep_robust *b = &rb[i];
    if ((rc = sc__writef(out, ud, "  %4" PRId64 " %7" PRId64 " %-40s %9.3f %9.3f %9.3f %6.1f%%\n",
                         i + 1, b->row + 1, sc_sweep_row_key(&r->rows[b->row], key, sizeof key),
                         b->nominal_s, b->p50_s, b->p99_s,
                         b->nominal_s > 0 ? 100.0 * (b->p99_s / b->nominal_s - 1.0) : 0.0)))
      return rc;
  }
  return SC_OK;
}

int sc_sweep_format_ex(const sc_config *base, const sc_sweep_result *r, int top_k,
                       const sc_sweep_robust *rb, int64_t nrb, sc_format fmt, sc_write_fn out,
                       void *ud) {
  if (!base || !r || !out) return SC_EINVAL;
  if (top_k <= 0) top_k = 10;
  int64_t ntop = r->simulated < top_k ? r->simulated : top_k;
  int64_t excluded = 0;
  for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++) excluded += r->excluded[i];
  int rc;
  char key[160], why[1024], usable[48] = "";
  sc_sweep_why_unranked(r, why, sizeof why);
  if (r->usable_gib > 0 && r->usable_gib < r->capacity_gib)
    snprintf(usable, sizeof usable, ", %.1f usable", r->usable_gib);
  if (fmt == SC_FORMAT_JSON) {
    if ((rc = sc__writef(out, ud,
                         "{\"model\": \"%s\", \"gpu\": \"%s\", \"gpus\": %" PRId64
                         ", \"global_batch\": %" PRId64 ", \"seq_len\": %" PRId64
                         ", \"capacity_gib\": %.1f, \"usable_gib\": %.1f, \"candidates\": %" PRId64
                         ", \"simulated\": %" PRId64 ", \"excluded\": {",
                         base->model.name, base->cluster.gpu, r->gpus, base->training.global_batch,
                         base->model.seq_len, r->capacity_gib, r->usable_gib, r->candidates,
                         r->simulated)))
      return rc;
    for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++)
      if ((rc = sc__writef(out, ud, "%s\"%s\": %" PRId64, i ? ", " : "", sc_sweep_reason_key(i),
                           r->excluded[i])))
        return rc;
    if ((rc = sc__writef(out, ud, "}, ")) ||
        (why[0] && (rc = sc__writef(out, ud, "\"unranked\": \"%s\", ", why))) ||
        (rc = sc__writef(out, ud, "\"top\": [")))
      return rc;
    for (int64_t i = 0; i < ntop; i++) {
      const sc_sweep_row *w = &r->rows[i];
      const char *sched = sc_enum_name(SC_ENUM_SCHEDULE, (int)w->schedule);
      if ((rc = sc__writef(out, ud,
                           "%s{\"rank\": %" PRId64 ", \"key\": \"%s\", \"tp\": %" PRId64
                           ", \"pp\": %" PRId64 ", \"dp\": %" PRId64 ", \"cp\": %" PRId64
                           ", \"vpp\": %" PRId64 ", \"schedule\": \"%s\", \"pp_first_layers\": %"
                           PRId64 ", \"pp_last_layers\": %" PRId64 ", \"pp_counted\": %s"
                           ", \"micro_batch\": %" PRId64
                           ", \"sequence_parallel\": %s, \"recompute\": \"%s\", "
                           "\"distributed_optimizer\": %s, \"zero_stage\": %" PRId64
                           ", \"fsdp_shard\": %" PRId64 ", \"ep\": %" PRId64 ", \"etp\": %" PRId64
                           ", \"moe_dispatcher\": \"%s\", \"step_time_s\": %.9f, "
                           "\"tokens_per_s\": %.1f, \"tflops_per_gpu\": %.3f, \"mfu\": %.6f, "
                           "\"memory_gib\": %.3f, \"breakdown\": {",
                           i ? ", " : "", i + 1, sc_sweep_row_key(w, key, sizeof key), w->tp,
                           w->pp, w->dp, w->cp, w->vpp, sched ? sched : "?", w->pp_first_layers,
                           w->pp_last_layers, w->pp_counted ? "true" : "false", w->micro_batch,
                           w->sequence_parallel ? "true" : "false",
                           sc_enum_name(SC_ENUM_RECOMPUTE, w->recompute),
                           w->distributed_optimizer ? "true" : "false", w->zero_stage,
                           w->fsdp_shard, w->ep, w->etp,
                           sc_enum_name(SC_ENUM_MOE_DISPATCHER, (int)w->moe_dispatcher),
                           w->step_time_s, w->tokens_per_s, w->tflops_per_gpu,
                           w->mfu, w->memory_gib)))
        return rc;
      for (int c = 0; c < SC_CAT_COUNT; c++)
        if ((rc = sc__writef(out, ud, "%s\"%s\": %.6f", c ? ", " : "", sc_category_key(c),
                             w->breakdown_s[c])))
          return rc;
      if ((rc = sc__writef(out, ud, "}"))) return rc;
      /* With training.tokens: the whole run at this layout's throughput
       * (and its cost with cluster.price_per_gpu_hour), as run reports it. */
      if (base->training.tokens > 0 && w->tokens_per_s > 0) {
        sc_result tr;
        memset(&tr, 0, sizeof tr);
        tr.tokens_per_s = w->tokens_per_s;
        tr.num_gpus = r->gpus;
        sc__result_training_cost(base, &tr);
        if ((rc = sc__writef(out, ud, ", \"time_to_train_days\": %.6g, \"gpu_hours\": %.6g",
                             tr.time_to_train_days, tr.gpu_hours)))
          return rc;
        if (base->cluster.price_per_gpu_hour > 0 &&
            (rc = sc__writef(out, ud, ", \"cost\": %.6g", tr.cost)))
          return rc;
      }
      if ((rc = sc__writef(out, ud, "}"))) return rc;
    }
    if ((rc = sc__writef(out, ud, "]"))) return rc;
    if (rb && (rc = robust_write(r, rb, nrb, fmt, out, ud))) return rc;
    return sc__writef(out, ud, "}\n");
  }

  if ((rc = sc__writef(out, ud,
                       "stepcast sweep: %s on %" PRId64 " x %s (%.0f GiB%s), batch %" PRId64
                       ", seq %" PRId64 ", %s\n",
                       base->model.name, r->gpus, base->cluster.gpu, r->capacity_gib, usable,
                       base->training.global_batch, base->model.seq_len,
                       sc_enum_name(SC_ENUM_PRECISION, base->training.precision))))
    return rc;
  if ((rc = sc__writef(out, ud,
                       "  candidates %" PRId64 ": simulated %" PRId64 ", excluded %" PRId64 "\n",
                       r->candidates, r->simulated, excluded)))
    return rc;
  for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++)
    if (r->excluded[i] &&
        (rc = sc__writef(out, ud, "    %-15s %8" PRId64 "  %s\n", sc_sweep_reason_key(i),
                         r->excluded[i], sc_sweep_reason_text(i))))
      return rc;
  if (ntop == 0) return sc__writef(out, ud, "\n  no configuration to rank: %s\n", why);
  if ((rc = sc__writef(out, ud,
                       "\n  top %" PRId64 " by throughput (step breakdown in seconds, x- = exposed "
                       "communication; memory: peak stage; fsdp: ZeRO-3 shard size)\n",
                       ntop)))
    return rc;
  /* MoE models: the expert grid and dispatcher after the sharding, and the
   * exposed EP communication after x-pp. */
  int moe = base->model.moe_experts > 0;
  char moe_head[64] = "", ep_head[16] = "";
  if (moe) {
    snprintf(moe_head, sizeof moe_head, " %3s %3s %-8s", "ep", "etp", "dispatch");
    snprintf(ep_head, sizeof ep_head, " %7s", "x-ep");
  }
  if ((rc = sc__writef(out, ud,
                       "  %4s %3s %3s %3s %4s %3s %-11s %3s %2s %-9s %2s %4s%s %9s %9s %7s %6s %8s "
                       "%7s %7s%s %7s %7s %6s %7s\n",
                       "rank", "tp", "cp", "pp", "dp", "vpp", "schedule", "mb", "sp", "recompute",
                       "do", "fsdp", moe_head, "step s", "tokens/s", "TFLOP/s", "MFU", "compute",
                       "x-tp", "x-pp", ep_head, "x-dp", "bubble", "optim", "mem GiB")))
    return rc;
  for (int64_t i = 0; i < ntop; i++) {
    const sc_sweep_row *w = &r->rows[i];
    char sched[24], fsdp[24];
    const char *sn = sc_enum_name(SC_ENUM_SCHEDULE, (int)w->schedule);
    snprintf(sched, sizeof sched, "%s%s", w->pp > 1 ? (sn ? sn : "?") : "-",
             w->pp_counted ? "+el" : "");
    if (w->zero_stage >= 3) snprintf(fsdp, sizeof fsdp, "%" PRId64, w->fsdp_shard);
    else snprintf(fsdp, sizeof fsdp, "-");
    char moe_cells[64] = "", ep_cell[16] = "";
    if (moe) {
      const char *dn = sc_enum_name(SC_ENUM_MOE_DISPATCHER, (int)w->moe_dispatcher);
      snprintf(moe_cells, sizeof moe_cells, " %3" PRId64 " %3" PRId64 " %-8s", w->ep, w->etp,
               dn ? dn : "?");
      snprintf(ep_cell, sizeof ep_cell, " %7.3f", w->breakdown_s[SC_CAT_EP]);
    }
    if ((rc = sc__writef(out, ud,
                         "  %4" PRId64 " %3" PRId64 " %3" PRId64 " %3" PRId64 " %4" PRId64
                         " %3" PRId64 " %-11s %3" PRId64 " %2d %-9s %2d %4s%s %9.3f %9.0f %7.1f "
                         "%5.1f%% %8.3f %7.3f %7.3f%s %7.3f %7.3f %6.3f %7.1f\n",
                         i + 1, w->tp, w->cp, w->pp, w->dp, w->vpp, sched, w->micro_batch,
                         w->sequence_parallel, sc_enum_name(SC_ENUM_RECOMPUTE, w->recompute),
                         w->distributed_optimizer, fsdp, moe_cells, w->step_time_s,
                         w->tokens_per_s, w->tflops_per_gpu, 100.0 * w->mfu,
                         w->breakdown_s[SC_CAT_COMPUTE], w->breakdown_s[SC_CAT_TP],
                         w->breakdown_s[SC_CAT_PP], ep_cell, w->breakdown_s[SC_CAT_DP],
                         w->breakdown_s[SC_CAT_BUBBLE], w->breakdown_s[SC_CAT_OPTIMIZER],
                         w->memory_gib)))
      return rc;
  }
  if (rb) return robust_write(r, rb, nrb, fmt, out, ud);
  if (sc__vary_active(base))
    return sc__writef(out, ud,
                      "\n  the config's variation is not in this ranking (layouts rank without it); "
                      "--robust-seeds N re-simulates the best under it (docs/WHATIF.md)\n");
  return SC_OK;
}

/* ------------------------------------------------------------ processes */

int sc_sweep_procs_init(int *argc, char ***argv) { return sc__par_init(argc, argv); }
void sc_sweep_procs_finalize(void) { sc__par_finalize(); }
int sc_sweep_procs_rank(void) { return sc__par_rank(); }
int sc_sweep_procs_count(void) { return sc__par_size(); }
