/*
 * simulate.c: the pipeline driver. config -> shape (model/) -> cost models
 * (cost/) -> workload (synth/) -> engine (engine/) -> sc_result. The only
 * place where the engine's timeline meets the step's FLOPs, tokens and
 * memory; sweep, validate and calibrate run configs through it.
 */
#include "analysis/simulate_int.h"

#include "engine/engine_int.h"
#include "input/config_int.h"
#include "synth/synth_int.h"

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
  sc__memory_model_init(&mm, &plan->shape, &o);
  plan->memory_peak_bytes = sc__memory_peak(&mm, &plan->memory_peak_stage);
  plan->memory_capacity_bytes = mm.capacity_bytes;
  return SC_OK;
}

/* The engine's memory counter track, from the memory model. */
static double track_static(const void *ud, int64_t stage) {
  return sc__memory_static_bytes(ud, stage);
}
static double track_item(const void *ud, int64_t stage, int64_t chunk) {
  return sc__memory_item_bytes(ud, stage, chunk);
}

/* Memory the simulation may take: more means the config describes a job
 * far beyond what one step's simulation is for (the largest runs the
 * benchmarks exercise, Llama-3 405B on 131,072 GPUs unfolded, stay below
 * 1 GiB). */
#define MAX_SIMULATION_BYTES (8.0 * GIB)

/* Bytes the unmerged workload's programs and the engine's per-rank state take,
 * estimated from the schedule before anything is built: per pipeline stage
 * 2 * m * vpp passes of at most lpc_max layers, at most 24 ops (32 B each, with ~8 B of
 * dependencies) per layer pass and 16 around it (measured: ~20 on the
 * default example); per simulated rank ~1 KiB of engine state. */
double sc__plan_estimate_bytes(const sc_plan *plan) {
  const sc_shape *sh = &plan->shape;
  double passes = 2.0 * (double)sh->m * (double)sh->vpp;
  double ops = (double)sh->pp * passes * (24.0 * (double)sh->lpc_max + 16.0);
  double ranks = plan->cfg->simulation.fold ? (double)sh->pp
                                           : (double)(sh->tp * sh->pp * sh->dp * sh->cp);
  return ops * 40.0 + ranks * 1024.0;
}

int sc__plan_simulate(sc_ctx *ctx, const sc_plan *plan, sc_write_fn trace, void *trace_ud,
                      sc_result *out) {
  memset(out, 0, sizeof *out);
  const sc_config *cfg = plan->cfg;
  double need = sc__plan_estimate_bytes(plan);
  if (need > MAX_SIMULATION_BYTES)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "%s: simulating this step would take ~%.1f GiB (%.3g micro-batches per "
                     "replica over %lld stages of %lld layers%s); the limit is %.0f GiB",
                     cfg->origin, need / GIB, (double)plan->shape.m, (long long)plan->shape.pp,
                     (long long)plan->shape.layers, cfg->simulation.fold ? "" : ", every rank",
                     MAX_SIMULATION_BYTES / GIB);
  sc_cost cost;
  int rc = sc__cost_init(ctx, cfg, &cost);
  if (rc) return rc;
  /* Untraced runs without interference merge the ops that nothing can tell
   * apart (SC_WL_MERGE): the same result, far fewer events. */
  unsigned flags = !trace && cfg->simulation.interference == SC_INTERF_NONE ? SC_WL_MERGE : 0;
  sc_workload wl;
  rc = sc__workload_build_ex(ctx, &plan->shape, &cost, flags, &wl);
  if (rc) return rc;
  if (sc__checks(ctx)) rc = sc__workload_check(ctx, &wl);
  sc_memory_model mm;
  sc_memory_opts o;
  sc__memory_opts_of(cfg, &o);
  sc__memory_model_init(&mm, &plan->shape, &o);
  sc_mem_track track = {&mm, track_static, track_item};
  sc_engine_opts eo = {cfg->simulation.fold, cfg->simulation.interference,
                       cfg->simulation.share_links, trace, trace_ud, &track};
  sc_engine_result er;
  if (!rc) rc = sc__engine_run(ctx, &wl, &cost, &eo, &er);
  sc__workload_free(ctx, &wl);
  if (rc) return rc;

  double step = (double)er.step_ns / 1e9;
  double gpus = (double)er.world;
  out->step_time_s = step;
  out->num_gpus = er.world;
  for (int c = 0; c < SC_CAT_COUNT; c++) out->breakdown_s[c] = er.breakdown_s[c];
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
  out->simulated_ranks = er.simulated_ranks;
  out->ops = er.ops;
  out->events = er.events;
  return SC_OK;
}

int sc_simulate(sc_ctx *ctx, const sc_config *cfg, sc_write_fn trace, void *trace_ud,
                sc_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !out) return sc__error(ctx, SC_EINVAL, "sc_simulate: no config or result");
  memset(out, 0, sizeof *out);
  sc_plan plan;
  int rc = sc__plan_init(ctx, cfg, &plan);
  if (rc) return rc;
  return sc__plan_simulate(ctx, &plan, trace, trace_ud, out);
}

/* ------------------------------------------------------------ warnings */

int sc_config_warnings(const sc_config *cfg, sc_write_fn w, void *ud) {
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
  const sc_cost_params *p = &cfg->costs;
  int given = p->gemm_eff > 0 || p->gemm_dim_half > 0 || p->attn_eff > 0 || p->mem_eff > 0 ||
              p->kernel_overhead_us > 0 || p->fp8_gemm_eff > 0;
  if (!given && !sc__cost_fitted(hw) &&
      (rc = sc__writef(w, ud,
                       "gpu %s has no compute calibration fitted on measured step times: its "
                       "GEMM, attention and memory efficiencies are kernel-data priors, so "
                       "expect more error than on A100 / H100 (docs/VALIDATION.md; `stepcast "
                       "calibrate --cases` fits one)\n",
                       hw->name)))
    return rc;
  return SC_OK;
}
