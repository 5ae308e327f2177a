/*
 * simulate.c: the pipeline driver. config -> shape (model/) -> cost models
 * (cost/) -> workload (synth/) -> engine (engine/) -> sc_result. The only
 * place where the engine's timeline meets the step's FLOPs, tokens and
 * memory; sweep, validate and calibrate run configs through it.
 */
#include "analysis/simulate_int.h"
#include "analysis/variation_int.h"

#include "engine/engine_int.h"
#include "engine/traceout_int.h"
#include "input/config_int.h"
#include "input/vary_int.h"
#include "synth/synth_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GIB 1073741824.0

int sc__plan_init(sc_ctx *ctx, const sc_config *cfg, sc_plan *plan) {
  memset(plan, 0, sizeof *plan);
  plan->cfg = cfg;
  int rc = sc__shape_init(ctx, cfg, &plan->shape);
  if (rc) return rc;
  sc_memory_opts o;
  sc_memory_model mm;
  sc__memory_opts_of(cfg, &o);
  if ((rc = sc__memory_model_init(ctx, &mm, &plan->shape, &o))) return rc;
  plan->memory_peak_bytes = sc__memory_peak(&mm, &plan->memory_peak_stage);
  plan->memory_capacity_bytes = mm.capacity_bytes;
  plan->memory_usable_bytes = mm.capacity_bytes - sc__memory_headroom_bytes(cfg, mm.capacity_bytes);
  sc__memory_model_free(ctx, &mm);
  return SC_OK;
}

double sc__memory_headroom_bytes(const sc_config *cfg, double capacity_bytes) {
  double h = cfg->cluster.mem_headroom;
  return h >= 1.0 ? h * GIB : h * capacity_bytes;
}

int sc__memory_headroom_check(sc_ctx *ctx, const sc_config *cfg, double capacity_bytes) {
  double keep = sc__memory_headroom_bytes(cfg, capacity_bytes);
  if (keep < capacity_bytes) return SC_OK;
  char where[300];
  sc__config_where(cfg, SC_FIELD_cluster_mem_headroom, where, sizeof where);
  return sc__error(ctx, SC_EINVAL,
                   "%s: cluster.mem_headroom: %g keeps %.1f GiB free, not less than the %.1f GiB "
                   "of %s (values >= 1 are GiB, below 1 a fraction of the capacity)",
                   where, cfg->cluster.mem_headroom, keep / GIB, capacity_bytes / GIB,
                   cfg->cluster.gpu);
}

int sc__memory_each_stage(sc_ctx *ctx, const sc_config *cfg,
                          int (*fn)(void *ud, const sc_memory_stage *st), void *ud) {
  sc_shape sh;
  int rc = sc__shape_init(ctx, cfg, &sh);
  if (rc) return rc;
  sc_memory_opts o;
  sc_memory_model mm;
  sc__memory_opts_of(cfg, &o);
  if ((rc = sc__memory_model_init(ctx, &mm, &sh, &o))) return rc;
  for (int64_t s = 0; s < mm.pp && !rc; s++) {
    sc_memory_stage st;
    sc__memory_stage(&mm, s, &st);
    rc = fn(ud, &st);
  }
  sc__memory_model_free(ctx, &mm);
  return rc;
}

/* Seconds in a day and in an hour. */
#define DAY_S 86400.0
#define HOUR_S 3600.0

void sc__result_training_cost(const sc_config *cfg, sc_result *res) {
  res->time_to_train_days = res->gpu_hours = res->cost = 0;
  if (cfg->training.tokens <= 0 || res->tokens_per_s <= 0) return;
  double seconds = cfg->training.tokens / res->tokens_per_s;
  res->time_to_train_days = seconds / DAY_S;
  res->gpu_hours = (double)res->num_gpus * seconds / HOUR_S;
  res->cost = res->gpu_hours * cfg->cluster.price_per_gpu_hour;
}

/* The engine's memory counter track, from the memory model: its baseline
 * also holds the stage's working buffers and fragmentation allowance, so that
 * the track's peak is the stage's reported peak (sc_result.memory_gib and
 * memory_breakdown). */
static double track_static(const void *ud, int64_t stage) {
  sc_memory_stage st;
  sc__memory_stage(ud, stage, &st);
  return sc__memory_static_bytes(ud, stage) + st.transient_bytes + st.fragmentation_bytes;
}
static double track_item(const void *ud, int64_t stage, int64_t chunk) {
  return sc__memory_item_bytes(ud, stage, chunk);
}
static double track_item_wgrad(const void *ud, int64_t stage, int64_t chunk) {
  return sc__memory_item_wgrad_bytes(ud, stage, chunk);
}
static double track_item_kept(const void *ud, int64_t stage, int64_t chunk) {
  return sc__memory_item_kept_bytes(ud, stage, chunk);
}

/* Memory the simulation may take: more means the config describes a job
 * far beyond what one step's simulation is for (the largest runs the
 * benchmarks exercise, Llama-3 405B on 131,072 GPUs unfolded, stay below
 * 1 GiB). */
#define MAX_SIMULATION_BYTES (8.0 * GIB)

/* Ops of the unmerged programs: per pipeline stage 2 * m * vpp passes of at
 * most lpc_max layers, at most 24 ops per layer pass and 16 around it. */
double sc__plan_estimate_ops(const sc_plan *plan) {
  const sc_shape *sh = &plan->shape;
  double passes = 2.0 * (double)sh->m * (double)sh->vpp;
  return (double)sh->pp * passes * (24.0 * (double)sh->lpc_max + 16.0);
}

/* Bytes the unmerged workload's programs and the engine's per-rank state take,
 * estimated from the schedule before anything is built: per pipeline stage
 * 2 * m * vpp passes of at most lpc_max layers, at most 24 ops (32 B each, with ~8 B of
 * dependencies) per layer pass and 16 around it (measured: ~20 on the
 * default example); per simulated rank ~1 KiB of engine state. */
double sc__plan_estimate_bytes(const sc_plan *plan) {
  const sc_shape *sh = &plan->shape;
  double ops = sc__plan_estimate_ops(plan);
  /* A variation simulates more than one rank per stage: at most all. */
  double ranks = plan->cfg->simulation.fold && !sc__vary_active(plan->cfg) ? (double)sh->pp
                                           : (double)(sh->tp * sh->pp * sh->dp * sh->cp);
  return ops * 40.0 + ranks * 1024.0;
}

static int range_cmp(const void *a, const void *b) {
  int64_t x = ((const sc_rank_range *)a)->first, y = ((const sc_rank_range *)b)->first;
  return (x > y) - (x < y);
}

/* Checks a trace's chosen ranks against the plan's job: each range in
 * [0, world) and first <= last. *share: the fraction of the simulated ranks
 * they hold (a folded run's simulated rank per stage stands for the stage's
 * ranks). */
static int trace_ranks_check(sc_ctx *ctx, const sc_plan *plan, const sc_trace_opts *t,
                             double *share) {
  *share = 1.0;
  const sc_shape *sh = &plan->shape;
  int64_t stride = sh->tp * sh->dp * sh->cp, world = stride * sh->pp;
  int rc = sc__trace_opts_check(ctx, t, world);
  if (rc || !t || !t->nranks) return rc;
  /* Count the simulated ranks held (per stage when folded) over the
   * ranges sorted and merged. */
  int fold = plan->cfg->simulation.fold;
  int64_t unit = fold ? stride : 1, units = fold ? sh->pp : world, held = 0, upto = -1;
  sc_rank_range *u = sc__malloc(ctx, t->nranks * sizeof *u);
  if (!u) return SC_ENOMEM;
  for (size_t k = 0; k < t->nranks; k++)
    u[k] = (sc_rank_range){t->ranks[k].first / unit, t->ranks[k].last / unit};
  qsort(u, t->nranks, sizeof *u, range_cmp);
  for (size_t k = 0; k < t->nranks; k++) {
    int64_t lo = u[k].first > upto ? u[k].first : upto + 1;
    if (u[k].last >= lo) held += u[k].last - lo + 1;
    if (u[k].last > upto) upto = u[k].last;
  }
  sc__free(ctx, u, t->nranks * sizeof *u);
  *share = units > 0 ? (double)held / (double)units : 1.0;
  return SC_OK;
}

/* Bytes of Chrome-trace JSON per op run (its "X" event with names and
 * arguments, plus its share of the memory counter events): measured 141-143
 * on the default example folded (106,619,715 bytes for 757,364 ops), with
 * vpp 2, and on examples/llama3-8b-quick.yaml folded and unfolded. */
#define TRACE_BYTES_PER_OP 144.0

/* Bytes of .pftrace per op run (a slice's begin and end packets, its
 * interned name and arguments, its share of the counter packets): measured
 * 58.5 on the default example folded (44,328,130 bytes for 757,364 ops) and
 * 57 on test_pftrace's small GPT unfolded. */
#define PFTRACE_BYTES_PER_OP 60.0

int sc_trace_estimate(sc_ctx *ctx, const sc_config *cfg, double *bytes) {
  return sc_trace_estimate_opts(ctx, cfg, NULL, bytes);
}

int sc_trace_estimate_opts(sc_ctx *ctx, const sc_config *cfg, const sc_trace_opts *opts,
                           double *bytes) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !bytes) return sc__error(ctx, SC_EINVAL, "sc_trace_estimate: no config or output");
  *bytes = 0;
  sc_plan plan;
  int rc = sc__plan_init(ctx, cfg, &plan);
  if (rc) return rc;
  const sc_shape *sh = &plan.shape;
  /* every simulated rank of a stage runs that stage's program */
  double per_stage = cfg->simulation.fold && !sc__vary_active(cfg) ? 1.0 : (double)(sh->tp * sh->dp * sh->cp);
  double share;
  if ((rc = trace_ranks_check(ctx, &plan, opts, &share))) return rc;
  double per_op = opts && opts->format == SC_TRACE_OUT_PERFETTO ? PFTRACE_BYTES_PER_OP
                                                                : TRACE_BYTES_PER_OP;
  *bytes = sc__plan_estimate_ops(&plan) * per_stage * share * per_op;
  return SC_OK;
}

int sc__plan_simulate(sc_ctx *ctx, const sc_plan *plan, sc_write_fn trace, void *trace_ud,
                      sc_result *out) {
  return sc__plan_simulate_ex(ctx, plan, trace, trace_ud, NULL, out);
}

static int simulate_priced(sc_ctx *ctx, const sc_plan *plan, const sc_config *cfg,
                           const sc_cost *costp, const sc_trace_opts *topts, sc_write_fn trace,
                           void *trace_ud, const sc_sim_hooks *hk, sc_result *out);

int sc__plan_simulate_ex(sc_ctx *ctx, const sc_plan *plan, sc_write_fn trace, void *trace_ud,
                         const sc_sim_hooks *hooks, sc_result *out) {
  memset(out, 0, sizeof *out);
  sc_sim_hooks none = {NULL, NULL, NULL, NULL, 0, NULL};
  const sc_sim_hooks *hk = hooks ? hooks : &none;
  const sc_config *cfg = plan->cfg;
  double need = sc__plan_estimate_bytes(plan);
  if (need > MAX_SIMULATION_BYTES)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "%s: simulating this step would take ~%.1f GiB (%.3g micro-batches per "
                     "replica over %lld stages of %lld layers%s); the limit is %.0f GiB",
                     cfg->origin, need / GIB, (double)plan->shape.m, (long long)plan->shape.pp,
                     (long long)plan->shape.layers, cfg->simulation.fold ? "" : ", every rank",
                     MAX_SIMULATION_BYTES / GIB);
  const sc_trace_opts *topts = trace ? hk->trace_opts : NULL;
  double share;
  int rc = trace_ranks_check(ctx, plan, topts, &share);
  if (rc) return rc;
  sc_cost cost;
  if ((rc = sc__cost_init(ctx, cfg, &cost))) return rc;
  rc = simulate_priced(ctx, plan, cfg, &cost, topts, trace, trace_ud, hk, out);
  sc__cost_release(ctx, &cost);
  return rc;
}

/* The stage whose compute bounds the step best, guessed without building:
 * the one holding the most parameters (layers, and the LM head or the
 * embedding), the later one of equals (the last holds the LM head's
 * GEMMs, the first only the embedding's lookup). Any stage gives a bound. */
static int64_t busiest_stage(const sc_shape *sh) {
  int64_t best = sh->pp - 1;
  double most = sc__shape_stage_params(sh, best);
  for (int64_t s = sh->pp - 2; s >= 0; s--) {
    double p = sc__shape_stage_params(sh, s);
    if (p > most) most = p, best = s;
  }
  return best;
}

int sc__plan_bound(sc_ctx *ctx, const sc_plan *plan, int quick, int64_t *bound_ns) {
  *bound_ns = 0;
  const sc_config *cfg = plan->cfg;
  /* A variation's speeds can beat nominal and its runs are unfolded: no bound. */
  if (!cfg->simulation.fold || sc__vary_active(cfg)) return SC_OK;
  if (sc__plan_estimate_bytes(plan) > MAX_SIMULATION_BYTES) return SC_OK; /* refused anyway */
  sc_cost cost;
  int rc = sc__cost_init(ctx, cfg, &cost);
  if (rc) return rc;
  /* The workload sc__plan_simulate builds for an untraced run (quick: one
   * stage of it). */
  unsigned flags = cfg->simulation.interference == SC_INTERF_NONE ? SC_WL_MERGE : 0;
  sc_workload wl;
  rc = quick ? sc__workload_build_stage(ctx, &plan->shape, &cost, flags,
                                        busiest_stage(&plan->shape), &wl)
             : sc__workload_build_ex(ctx, &plan->shape, &cost, flags, &wl);
  if (!rc) {
    if (quick) *bound_ns = sc__engine_compute_bound(&wl);
    else rc = sc__engine_lower_bound(ctx, &wl, bound_ns);
    sc__workload_free(ctx, &wl);
  }
  sc__cost_release(ctx, &cost);
  return rc;
}

/* gpu_mix: a stage with ranks on the other GPU must fit that GPU's usable
 * memory (its capacity less cluster.mem_headroom). */
typedef struct mix_mem {
  const sc_vary_plan *vp;
  double usable;
  int oom;
} mix_mem;

static int mix_stage_check(void *ud, const sc_memory_stage *st) {
  mix_mem *M = ud;
  if (st->stage < M->vp->pp && M->vp->mix_stage[st->stage] && st->total_bytes > M->usable)
    M->oom = 1;
  return 0;
}

/* The variation's facts in the result. */
static int vary_result(sc_ctx *ctx, const sc_config *cfg, const sc_vary_plan *vp, sc_result *out) {
  out->varied_ranks = vp->varied;
  out->slowest_gpu_speed = vp->slowest_speed;
  out->gpu_mix_ranks = vp->mix_ranks;
  sc__strlcpy(out->gpu_mix, vp->mix_gpu, sizeof out->gpu_mix);
  if (!vp->mix_ranks) return SC_OK;
  double cap = vp->mix_hbm_gib * GIB;
  mix_mem M = {vp, cap - sc__memory_headroom_bytes(cfg, cap), 0};
  int rc = sc__memory_each_stage(ctx, cfg, mix_stage_check, &M);
  out->gpu_mix_oom = M.oom;
  return rc;
}

/* The rest of a plan's simulation, on its prepared cost model. */
static int simulate_priced(sc_ctx *ctx, const sc_plan *plan, const sc_config *cfg,
                           const sc_cost *costp, const sc_trace_opts *topts, sc_write_fn trace,
                           void *trace_ud, const sc_sim_hooks *hk, sc_result *out) {
  sc_cost cost = *costp;
  int rc;
  /* Untraced runs without interference merge the ops that nothing can tell
   * apart (SC_WL_MERGE): the same result, far fewer events. A variation
   * simulates several members of a TP group, so nothing is inlined. */
  int vary = sc__vary_active(cfg);
  unsigned flags =
      !trace && !hk->op_sink && !hk->mem_sink && cfg->simulation.interference == SC_INTERF_NONE
          ? SC_WL_MERGE
          : 0;
  if (vary) flags |= SC_WL_UNFOLDED;
  sc_workload wl;
  rc = sc__workload_build_ex(ctx, &plan->shape, &cost, flags, &wl);
  if (rc) return rc;
  if (sc__checks(ctx)) rc = sc__workload_check(ctx, &wl);
  sc_vary_plan vp;
  memset(&vp, 0, sizeof vp);
  if (!rc && vary) rc = sc__vary_plan(ctx, cfg, &wl.map, &cost, &vp);
  sc_memory_model mm;
  sc_memory_opts o;
  sc__memory_opts_of(cfg, &o);
  if (!rc) rc = sc__memory_model_init(ctx, &mm, &plan->shape, &o);
  if (rc) {
    sc__vary_plan_free(ctx, &vp);
    sc__workload_free(ctx, &wl);
    return rc;
  }
  sc_mem_track track = {&mm, track_static, track_item, track_item_wgrad, track_item_kept};
  sc_engine_opts eo = {cfg->simulation.fold, cfg->simulation.interference,
                       cfg->simulation.share_links, trace, trace_ud, &track, hk->op_sink,
                       hk->op_sink_ud, hk->critical_path, hk->mem_sink, hk->mem_sink_ud,
                       topts ? (int)topts->format : SC_TRACE_OUT_JSON,
                       topts ? topts->ranks : NULL, topts ? topts->nranks : 0,
                       vary ? &vp.ev : NULL};
  sc_engine_result er;
  if (!rc) rc = sc__engine_run(ctx, &wl, &cost, &eo, &er);
  sc__workload_free(ctx, &wl);
  sc__memory_model_free(ctx, &mm);
  if (!rc && vary) rc = vary_result(ctx, cfg, &vp, out);
  sc__vary_plan_free(ctx, &vp);
  if (rc) return rc;

  double step = (double)er.step_ns / 1e9;
  double gpus = (double)er.world;
  out->step_time_s = step;
  {
    double w = cfg->model.moe_experts > 0 ? cost.p.interval_moe : cost.p.interval_dense;
    out->step_time_lo_s = step * exp(-w);
    out->step_time_hi_s = step * exp(w);
  }
  out->num_gpus = er.world;
  for (int c = 0; c < SC_CAT_COUNT; c++) out->breakdown_s[c] = er.breakdown_s[c];
  out->bubble_imbalance_s = er.bubble_imbalance_s;
  out->tokens_per_s =
      step > 0 ? (double)cfg->training.global_batch * (double)cfg->model.seq_len / step : 0;
  out->model_flops = plan->shape.model_flops;
  out->hardware_flops = plan->shape.hw_flops;
  if (step > 0) {
    out->tflops_per_gpu = out->model_flops / step / gpus / 1e12;
    out->hw_tflops_per_gpu = out->hardware_flops / step / gpus / 1e12;
    out->mfu = out->model_flops / step / gpus / cost.peak_flops;
    out->hfu = out->hardware_flops / step / gpus / cost.peak_flops;
  }
  out->memory_gib = plan->memory_peak_bytes / GIB;
  out->memory_capacity_gib = plan->shape.hw->hbm_gib;
  out->memory_usable_gib = plan->memory_usable_bytes / GIB;
  out->memory_peak_stage = plan->memory_peak_stage;
  out->oom = plan->memory_peak_bytes > plan->memory_usable_bytes || out->gpu_mix_oom;
  sc__result_training_cost(cfg, out);
  sc_goodput gp;
  rc = sc__vary_goodput(ctx, cfg, step,
                        (double)cfg->training.global_batch * (double)cfg->model.seq_len, er.world,
                        &gp);
  if (rc) return rc;
  if (gp.steps) {
    out->run_steps = gp.steps;
    out->failures = gp.failures;
    out->goodput = gp.goodput;
    out->run_days = gp.run_s / DAY_S;
    if (out->time_to_train_days > 0) { /* the run's wall time, failures included */
      out->time_to_train_days = gp.run_s / DAY_S;
      out->gpu_hours = (double)out->num_gpus * gp.run_s / HOUR_S;
      out->cost = out->gpu_hours * cfg->cluster.price_per_gpu_hour;
    }
  }
  out->simulated_ranks = er.simulated_ranks;
  out->critical_path_ops = er.cpath_ops;
  for (int c = 0; c < SC_CAT_COUNT; c++) out->critical_path_s[c] = er.cpath_s[c];
  for (int i = 0; i < SC_CPATH_TOP && i < SC_ENGINE_CPATH_TOP; i++) {
    out->critical_path_top[i].stage = er.cpath_top[i].stage;
    out->critical_path_top[i].stream = er.cpath_top[i].s > 0 ? sc__stream_name(er.cpath_top[i].stream) : NULL;
    out->critical_path_top[i].seconds = er.cpath_top[i].s;
    out->critical_path_ranks[i].rank = er.cpath_rank[i].rank;
    out->critical_path_ranks[i].ranks = er.cpath_rank[i].s > 0 ? er.cpath_rank[i].weight : 0;
    out->critical_path_ranks[i].seconds = er.cpath_rank[i].s;
  }
  out->ops = er.ops;
  out->events = er.events;
  return SC_OK;
}

int sc_simulate(sc_ctx *ctx, const sc_config *cfg, sc_write_fn trace, void *trace_ud,
                sc_result *out) {
  return sc_simulate_traced(ctx, cfg, NULL, trace, trace_ud, out);
}

static int simulate_with(sc_ctx *ctx, const sc_config *cfg, const sc_trace_opts *opts,
                         unsigned flags, sc_write_fn trace, void *trace_ud, sc_result *out);

int sc_simulate_traced(sc_ctx *ctx, const sc_config *cfg, const sc_trace_opts *opts,
                       sc_write_fn trace, void *trace_ud, sc_result *out) {
  return simulate_with(ctx, cfg, opts, SC_SIM_CRITICAL_PATH, trace, trace_ud, out);
}

int sc_simulate_ex(sc_ctx *ctx, const sc_config *cfg, unsigned flags, sc_write_fn trace,
                   void *trace_ud, sc_result *out) {
  return simulate_with(ctx, cfg, NULL, flags, trace, trace_ud, out);
}

static int simulate_with(sc_ctx *ctx, const sc_config *cfg, const sc_trace_opts *opts,
                         unsigned flags, sc_write_fn trace, void *trace_ud, sc_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !out) return sc__error(ctx, SC_EINVAL, "sc_simulate: no config or result");
  memset(out, 0, sizeof *out);
  sc_plan plan;
  int rc = sc__plan_init(ctx, cfg, &plan);
  if (!rc) rc = sc__memory_headroom_check(ctx, cfg, plan.memory_capacity_bytes);
  if (rc) return rc;
  sc_sim_hooks hooks = {NULL, NULL, NULL, NULL, (flags & SC_SIM_CRITICAL_PATH) != 0, opts};
  rc = sc__plan_simulate_ex(ctx, &plan, trace, trace_ud, &hooks, out);
  if (rc || !sc__vary_active(cfg)) return rc;
  /* The same job without variation, folded: what the variation costs. */
  sc_config *nom = sc__malloc(ctx, sizeof *nom);
  if (!nom) return SC_ENOMEM;
  *nom = *cfg;
  sc__vary_clear(&nom->variation);
  nom->simulation.fold = 1;
  sc_result *r = sc__malloc(ctx, sizeof *r);
  sc_plan np;
  rc = r ? sc__plan_init(ctx, nom, &np) : SC_ENOMEM;
  if (!rc) rc = sc__plan_simulate_ex(ctx, &np, NULL, NULL, NULL, r);
  if (!rc) out->step_time_nominal_s = r->step_time_s;
  if (r) sc__free(ctx, r, sizeof *r);
  sc__free(ctx, nom, sizeof *nom);
  return rc;
}

/* ------------------------------------------------------------ warnings */

/* Whether any compute-model calibration key was given (a fit, a file). */
static int compute_given(const sc_cost_params *p) {
  return p->gemm_eff > 0 || p->gemm_dim_half > 0 || p->attn_eff > 0 || p->cudnn_attn_eff > 0 ||
         p->mem_eff > 0 || p->kernel_overhead_us > 0 || p->fp8_gemm_eff > 0;
}

int sc_config_warnings(const sc_config *cfg, sc_write_fn w, void *ud) {
  return sc_config_warnings_ex(cfg, 0, w, ud);
}

int sc_config_warnings_ex(const sc_config *cfg, unsigned flags, sc_write_fn w, void *ud) {
  if (!cfg || !w) return SC_EINVAL;
  sc_hw own;
  const sc_hw *hw = sc__config_gpu(cfg, &own);
  if (!hw) return SC_OK; /* resolution reports it */
  int rc;
  if (cfg->calibration_gpu[0] && strcasecmp(cfg->calibration_gpu, hw->name) &&
      (rc = sc__writef(w, ud,
                       "the calibration was fitted for %s, the cluster's GPU is %s: its "
                       "efficiencies may not carry over (docs/VALIDATION.md, cross-hardware "
                       "transfer)\n",
                       cfg->calibration_gpu, hw->name)))
    return rc;
  /* The compute keys a fit sets; any given counts as a calibration. */
  int given = compute_given(&cfg->costs);
  /* The H200's defaults are the H100 step-time fit, which carries the costs
   * of the stacks it was fitted on; an operator-by-operator trace prices
   * those itself: on this project's measured H200 steps 33-36 % slow
   * (docs/VALIDATION.md, "H200 measured by this project"). */
  if ((flags & SC_WARN_EXSITU) && !given && !strcasecmp(hw->name, "h200") &&
      (rc = sc__writef(w, ud,
                       "ex-situ pricing on h200 with its defaults (the H100 step-time fit) came out "
                       "33-36 %% slow on this project's measured H200 steps; --cluster "
                       "validation/calibration/kernel-h200.yaml (its kernel measurements: 6.7 %%) or a "
                       "`stepcast calibrate --kernels` fit of your own trace is closer\n")))
    return rc;
  char src[256];
  if (!given && !sc__cost_fitted(hw)) sc__cost_prior_sources(hw, src, sizeof src);
  if (!given && !sc__cost_fitted(hw) &&
      (rc = sc__writef(w, ud,
                       "gpu %s has no compute calibration fitted on measured step times, "
                       "so expect more error than on A100 / H100: %s (docs/VALIDATION.md; "
                       "`stepcast calibrate --cases` fits one)\n",
                       hw->name, src)))
    return rc;
  return SC_OK;
}
