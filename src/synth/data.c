/*
 * data.c: data parallelism in the synthesised workload: gradient buckets
 * (Megatron ~40M elements) reduced as the backward finishes them or after
 * it, the distributed optimizer's reduce-scatter and parameter all-gather
 * (after the step, or overlapped with the next forward), the tied-embedding
 * gradient sync between the first and last stage, and the optimizer step.
 */
#include "synth/build_int.h"

/* The distributed optimizer: 1 when it shards over more than one replica. */
static int distributed(const builder *B) {
  return B->cfg->parallel.distributed_optimizer && sc__syn_dp_ranks(B) > 1 && !B->fsdp.on;
}

/* Overlapped parameter all-gather (distributed optimizer): the gathers of
 * the previous step's update run while this step's forward starts; each
 * layer's first forward waits for its bucket. */
void sc__syn_dp_param_gathers(builder *B) {
  const sc_shape *sh = B->sh;
  const sc_config *cfg = B->cfg;
  int64_t stage = B->stage, v = sc__shape_chunks(B->sh);
  int64_t layers_total = sh->layers;
  for (int64_t l = 0; l < layers_total; l++) B->param_ag[l] = NONE;
  if (!distributed(B) || !cfg->parallel.overlap_param_gather) return;
  where w = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  for (int64_t c = 0; c < v; c++) {
    int64_t vs = sc__shape_vstage(sh, stage, c);
    int64_t nl = sc__shape_vs_layers(sh, vs), l0 = sc__shape_vs_first_layer(sh, vs);
    double fill = 0, efill = 0;
    uint32_t eag = NONE;
    for (int64_t j = 0; j < nl; j++) {
      int64_t layer = l0 + j;
      fill += sc__syn_layer_dense_params(B, layer);
      efill += sc__syn_layer_expert_params(B, layer);
      /* Routed experts' shards are gathered over the expert-data-parallel
       * group in buckets of their own; a layer waits for the later one. */
      if (efill > 0 && sh->edp > 1 &&
          (efill >= (double)cfg->parallel.dp_bucket_elems || j == nl - 1)) {
        eag = sc__syn_collective(B, &w, SC_ST_DP, SC_GRP_EDP, SC_COLL_ALLGATHER, SC_L_PARAM_AG,
                                 SC_CAT_DP, efill * sh->elem_bytes, NONE);
        efill = 0;
      }
      if (fill >= (double)cfg->parallel.dp_bucket_elems || j == nl - 1) {
        uint32_t ag = sc__syn_collective(B, &w, SC_ST_DP, SC_GRP_DP, SC_COLL_ALLGATHER,
                                         SC_L_PARAM_AG, SC_CAT_DP, fill * sh->elem_bytes, NONE);
        if (eag != NONE) ag = eag; /* later on the same stream */
        for (int64_t k = layer; k >= l0 && B->param_ag[k] == NONE; k--)
          B->param_ag[k] = ag;
        fill = 0;
      }
    }
  }
}


void sc__syn_dp_reduce(builder *B, int group, double elems, uint32_t after) {
  const sc_parallel_cfg *par = &B->cfg->parallel;
  if (sc__syn_grad_ranks(B, group) <= 1 || elems <= 0 || B->fsdp.on) return; /* FSDP: fsdp.c */
  where w = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  int dist = par->distributed_optimizer;
  int label = group == SC_GRP_EDP ? SC_L_EXPERT_GRAD : dist ? SC_L_GRAD_RS : SC_L_GRAD_AR;
  sc__syn_collective(B, &w, SC_ST_DP, group, dist ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                     label, SC_CAT_DP, elems * B->sh->grad_bytes, after);
}

/* Adds elems whose grads are final once the last compute op ends; a full
 * bucket is reduced after that op (handle taken only then: see last_compute). */
void sc__syn_bucket_add(builder *B, bucketer *bk, double elems) {
  bk->fill += elems;
  if (bk->fill >= bk->limit) {
    if (bk->overlap) sc__syn_dp_reduce(B, bk->group, bk->fill, sc__syn_last_compute(B));
    bk->fill = 0;
  }
}

/* Reduces `all` elements over `group` in buckets after the last compute op
 * (no overlap with the backward). */
static void reduce_all(builder *B, int group, double all) {
  double bucket = (double)B->cfg->parallel.dp_bucket_elems;
  while (all > 0) {
    double e = all < bucket ? all : bucket;
    sc__syn_dp_reduce(B, group, e, sc__syn_last_compute(B));
    all -= e;
  }
}

uint32_t sc__syn_dp_grads_done(builder *B, double params, double expert_params) {
  const sc_shape *sh = B->sh;
  const sc_config *cfg = B->cfg;
  /* Without overlap every bucket is reduced after the whole backward. */
  if (!cfg->parallel.overlap_grad_reduce && !B->fsdp.on) {
    reduce_all(B, SC_GRP_DP, params - expert_params);
    reduce_all(B, SC_GRP_EDP, expert_params);
  }
  /* Tied embeddings across the pipeline: the first and last stage sum their
   * embedding-weight grads (Megatron finalize_model_grads). */
  where ws = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  int holds_first = B->stage == 0, holds_last = B->stage == B->pp - 1;
  uint32_t dp_last =
      B->prog->nops[SC_ST_DP] ? SC_DEP(SC_ST_DP, B->prog->nops[SC_ST_DP] - 1) : NONE;
  if (cfg->model.tied_embeddings && !sc__shape_ends_together(sh) && (holds_first || holds_last)) {
    double emb_params = sh->v * sh->h / sh->t;
    dp_last = sc__syn_collective(B, &ws, SC_ST_DP, SC_GRP_EMBED, SC_COLL_ALLREDUCE,
                                 SC_L_EMBED_AR, SC_CAT_DP, emb_params * sh->grad_bytes,
                                 sc__syn_last_compute(B));
  }
  /* DualPipe: stages s and pp - 1 - s hold each other's stage of the
   * mirrored model copy and sum the two copies' gradients (as
   * deepseek-ai/DualPipe's example_dualpipe.py does before comparing with
   * the reference: each chunk's grad plus the mirror rank's other chunk's),
   * after the data-parallel reduction, so over the local shard where that
   * shards them. Both chunks' grads, params of them. */
  if (sh->dual) {
    double dense = params - expert_params;
    double elems = B->fsdp.on    ? params / (double)B->fsdp.shard_ranks
                   : distributed(B) ? dense / (double)sc__syn_dp_ranks(B) +
                                        expert_params / (double)(sh->moe ? sh->edp : 1)
                                    : params;
    dp_last = sc__syn_collective(B, &ws, SC_ST_DP, SC_GRP_MIRROR, SC_COLL_ALLREDUCE,
                                 SC_L_MIRROR_AR, SC_CAT_DP, elems * sh->grad_bytes,
                                 sc__syn_last_compute(B));
  }
  return dp_last;
}

/* The distributed optimizer's parameter all-gathers of `all` elements over
 * `group` after the optimizer step. */
static void gather_all(builder *B, int group, double all, uint32_t opt) {
  where ws = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  double bucket = (double)B->cfg->parallel.dp_bucket_elems;
  if (sc__syn_grad_ranks(B, group) <= 1) return;
  while (all > 0) {
    double e = all < bucket ? all : bucket;
    sc__syn_collective(B, &ws, SC_ST_DP, group, SC_COLL_ALLGATHER, SC_L_PARAM_AG, SC_CAT_DP,
                       e * B->sh->elem_bytes, opt);
    all -= e;
  }
}

void sc__syn_dp_optimizer(builder *B, double params, double expert_params) {
  const sc_shape *sh = B->sh;
  const sc_config *cfg = B->cfg;
  where ws = {SC_NO_LAYER, 0, 0, SC_PH_STEP};
  int dist = distributed(B);
  /* Adam over the local (sharded) parameters, memory-bound, plus zeroing the
   * full local grad buffer for the next step (Megatron-LM's
   * zero_grad_buffer, grad_bytes per param). The distributed optimizer
   * shards routed experts over their expert-data-parallel group. */
  double dense = params - expert_params;
  const fsdp_state *F = &B->fsdp;
  double local = F->on && F->expert_ranks > 0
                     ? dense / (double)F->shard_ranks + expert_params / (double)F->expert_ranks
                 : F->on ? params / (double)F->shard_ranks
                 : dist  ? dense / (double)sc__syn_dp_ranks(B) + expert_params / (double)sh->edp
                         : params;
  /* training.optimizer_offload (offload.c): the offloaded fraction of the
   * local states steps on the CPU (the GPU's Adam then covers the rest; the
   * gradient buffer is still zeroed whole), or on the GPU after its states
   * came over. */
  double f = cfg->training.optimizer_offload;
  int cpu_step = f > 0 && cfg->training.optimizer_offload_cpu_step;
  uint32_t grads_ready[SC_SYN_WAITS + 1];
  int nready = f > 0 ? sc__syn_offload_grads_ready(B, grads_ready) : 0;
  if (f > 0) sc__syn_offload_optimizer_before(B, &ws, f * local, grads_ready, nready);
  double gpu_local = cpu_step ? (1.0 - f) * local : local;
  sc__syn_compute(B, &ws, SC_OP_OPTIMIZER, SC_L_OPTIM,
                  sc__syn_mem(B, gpu_local * B->cost->p.optimizer_bytes_per_param +
                                     params * sh->grad_bytes));
  if (f > 0 || (dist && !cfg->parallel.overlap_param_gather)) {
    uint32_t opt = sc__syn_last_compute(B);
    if (f > 0) opt = sc__syn_offload_optimizer_after(B, &ws, f * local, grads_ready, nready, opt);
    if (dist && !cfg->parallel.overlap_param_gather) {
      gather_all(B, SC_GRP_DP, dense, opt);
      gather_all(B, SC_GRP_EDP, expert_params, opt);
    }
  }
}
