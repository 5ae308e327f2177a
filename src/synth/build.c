/*
 * build.c: the synthesiser's entry points (synth_int.h): sets up the builder
 * for a shape, builds one program per pipeline stage (pipeline.c), and for
 * merged workloads retries without TP inlining when an exactness condition
 * fails (chain.c, "merging").
 */
#include "synth/build_int.h"

int sc__workload_build(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost, sc_workload *wl) {
  return sc__workload_build_ex(ctx, sh, cost, 0, wl);
}

/* Builds wl (only program `only` when it is >= 0, the others left empty);
 * with inline_tp, sets *retry when inlining cannot be exact. */
static int build_workload(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost, unsigned flags,
                          int inline_tp, int64_t only, sc_workload *wl, int *retry) {
  const sc_config *cfg = sh->cfg;
  memset(wl, 0, sizeof *wl);
  const sc_parallel_cfg *par = &cfg->parallel;
  builder B;
  memset(&B, 0, sizeof B);
  B.ctx = ctx;
  B.cfg = cfg;
  B.cost = cost;
  part_memo parts[6];
  memset(parts, 0, sizeof parts);
  B.parts = parts;
  B.mg.on = (flags & SC_WL_MERGE) != 0;
  wl->merged = B.mg.on;
  B.sh = sh;
  B.bw_input = sc__schedule_split(sh);
  B.fp8 = cfg->training.precision == SC_PREC_FP8;
  B.lparams = sh->layer_params;
  B.mg.inline_tp = B.mg.on && inline_tp;
  wl->inlined = B.mg.inline_tp;
  B.mg.order_tp = B.mg.inline_tp && !B.sh->sp;
  B.pp = par->pp;
  B.vpp = par->vpp > 0 ? par->vpp : 1;
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
  if (B.m > 0x7fffffff / 4 / B.vpp)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s: too many micro-batches", cfg->origin);

  wl->map.tp = par->tp;
  wl->map.cp = par->cp > 0 ? par->cp : 1;
  wl->map.dp = par->dp;
  wl->map.pp = par->pp;
  wl->map.world = par->tp * wl->map.cp * par->dp * par->pp;
  wl->map.gpus_per_node = cost->gpus_per_node;
  wl->map.shard = par->fsdp_shard > 0 ? par->fsdp_shard : par->dp;
  wl->map.cp_in = sh->cp_in;
  wl->map.ep = sh->ep;
  wl->map.etp = sh->etp;
  B.ep_pending = B.ep_deferred = NONE;
  wl->tied_embed_sync = cfg->model.tied_embeddings && !sc__shape_ends_together(sh);
  wl->nprogs = B.pp;

  size_t nitems = sc__schedule_len(sh);
  int64_t layers_total = cfg->model.layers;
  int rc = SC_ENOMEM;
  item *sched_all = sc__malloc(ctx, sizeof(item) * nitems * (size_t)B.pp);
  B.param_ag = sc__malloc(ctx, sizeof(uint32_t) * (size_t)layers_total);
  B.fsdp.on = par->zero_stage >= 3;
  B.fsdp.shard_ranks = sc__shape_fsdp_shard_ranks(sh);
  B.fsdp.expert_ranks = sc__shape_fsdp_expert_ranks(sh);
  B.fsdp.replicas = par->dp * sh->cp / B.fsdp.shard_ranks;
  B.fsdp.cap = sh->lpc_max + 2;
  B.fsdp.params = sc__malloc(ctx, sizeof(double) * (size_t)B.fsdp.cap);
  B.fsdp.eparams = sc__malloc(ctx, sizeof(double) * (size_t)B.fsdp.cap);
  B.fsdp.ag = sc__malloc(ctx, sizeof(uint32_t) * (size_t)B.fsdp.cap);
  B.item_end = sc__malloc(ctx, sizeof(uint32_t) * nitems);
  B.item_send = sc__malloc(ctx, sizeof(uint32_t) * nitems);
  int offload = cfg->training.activation_offload_layers > 0;
  if (offload) {
    B.offload_d2h = sc__malloc(ctx, sizeof(uint32_t) * (size_t)layers_total);
    B.offload_h2d = sc__malloc(ctx, sizeof(uint32_t) * (size_t)layers_total);
  }
  /* Megatron's blocking p2p: one pass back (1F1B, GPipe) or two
   * (interleaved); the zero-bubble schedules post every transfer ahead
   * (batched non-blocking isend/irecv), so a pass waits only for its data. */
  B.lag = cfg->parallel.schedule == SC_SCHED_INTERLEAVED ? 2 : sc__schedule_split(sh) ? 0 : 1;
  wl->progs = sc__calloc(ctx, (size_t)B.pp, sizeof(sc_program));
  if (!sched_all || !B.param_ag || !B.item_end || !B.item_send || !wl->progs ||
      !B.fsdp.params || !B.fsdp.eparams || !B.fsdp.ag ||
      (offload && (!B.offload_d2h || !B.offload_h2d)))
    goto done;
  if ((rc = sc__schedule_all(ctx, sh, sched_all))) goto done;
  rc = SC_ENOMEM;

  for (int64_t s = only >= 0 ? only : 0; s < (only >= 0 ? only + 1 : B.pp); s++) {
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
    rc = sc__syn_build_stage(&B, sched_all + (size_t)s * nitems, nitems, &params);
    if (!rc && M->inline_tp) { /* collectives still running after the last op */
      where w = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
      sc__syn_flush_remainder(&B, &w);
      rc = B.rc;
    }
    if (rc) goto done;
    if (params > wl->params_per_stage_max) wl->params_per_stage_max = params;
  }
  rc = SC_OK;
done:
  sc__free(ctx, sched_all, sizeof(item) * nitems * (size_t)B.pp);
  sc__free(ctx, B.param_ag, sizeof(uint32_t) * (size_t)layers_total);
  sc__free(ctx, B.fsdp.params, sizeof(double) * (size_t)B.fsdp.cap);
  sc__free(ctx, B.fsdp.eparams, sizeof(double) * (size_t)B.fsdp.cap);
  sc__free(ctx, B.fsdp.ag, sizeof(uint32_t) * (size_t)B.fsdp.cap);
  sc__free(ctx, B.item_end, sizeof(uint32_t) * nitems);
  sc__free(ctx, B.item_send, sizeof(uint32_t) * nitems);
  if (B.offload_d2h) sc__free(ctx, B.offload_d2h, sizeof(uint32_t) * (size_t)layers_total);
  if (B.offload_h2d) sc__free(ctx, B.offload_h2d, sizeof(uint32_t) * (size_t)layers_total);
  if (rc) {
    *retry = B.mg.retry && rc != SC_ENOMEM;
    if (rc == SC_ENOMEM) sc__error(ctx, SC_ENOMEM, "out of memory building the workload");
    sc__workload_free(ctx, wl);
  }
  return rc;
}

/* sc__workload_build_ex and sc__workload_build_stage: every program, or
 * only program `only` (>= 0). */
static int build_programs(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost, unsigned flags,
                          int64_t only, sc_workload *wl) {
  const sc_config *cfg = sh->cfg;
  /* TP collectives are inlined (see "merging") when each runs alone at rate
   * 1 on a known placement: folded (one simulated member per group), the
   * group inside one node (no NIC), no interference (SC_WL_MERGE's rule). */
  int64_t tp = cfg->parallel.tp;
  int inline_tp = (flags & SC_WL_MERGE) && !(flags & SC_WL_UNFOLDED) && cfg->simulation.fold &&
                  tp > 1 &&
                  cost->gpus_per_node > 0 && cost->gpus_per_node % tp == 0 &&
                  cfg->simulation.interference == SC_INTERF_NONE;
  int retry = 0;
  int rc = build_workload(ctx, sh, cost, flags, inline_tp, only, wl, &retry);
  if (rc && retry) rc = build_workload(ctx, sh, cost, flags, 0, only, wl, &retry);
  return rc;
}

int sc__workload_build_ex(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost,
                          unsigned flags, sc_workload *wl) {
  return build_programs(ctx, sh, cost, flags, -1, wl);
}

int sc__workload_build_stage(sc_ctx *ctx, const sc_shape *sh, const sc_cost *cost,
                             unsigned flags, int64_t stage, sc_workload *wl) {
  if (stage < 0 || stage >= sh->pp)
    return sc__error(ctx, SC_EINVAL, "no pipeline stage %lld", (long long)stage);
  return build_programs(ctx, sh, cost, flags, stage, wl);
}

