/*
 * fsdp.c: fully sharded data parallelism in the synthesised workload (PyTorch
 * FSDP / FSDP2, DeepSpeed ZeRO-3; parallel.zero_stage = 3). Parameters,
 * gradients and optimizer states are sharded over the shard group (fsdp_shard
 * data-parallel ranks times cp; SC_GRP_SHARD). Each transformer layer is an
 * FSDP unit, and so are the embedding and the LM head with the final norm
 * where the chunk holds them. Every micro-batch:
 *   - before a unit's forward, its parameters are all-gathered over the shard
 *     group (on the FSDP stream, in the compute dtype, or fp8 with
 *     fsdp_fp8_allgather), issued parallel.fsdp_prefetch units ahead of the
 *     one computing (FSDP's forward prefetch); its first op waits for it;
 *   - before its backward, gathered again the same way in backward order,
 *     unless fsdp_reshard_after_forward is false (the forward's copy is kept);
 *   - once its gradients are complete (after its backward, or its weight-grad
 *     pass in a zero-bubble schedule) they are reduce-scattered over the
 *     shard group (fp32 for bf16 training, FSDP2's reduce dtype as torchtitan
 *     sets it; sc_shape.grad_bytes) on the gradient stream, and with hybrid
 *     sharding (fsdp_shard < dp) the shard is all-reduced across the replicas
 *     (SC_GRP_REPLICA).
 * With expert parallelism the routed experts of an MoE layer are sharded
 * over their expert-data-parallel group instead (SC_GRP_EDP, edp ranks; see
 * sc__shape_fsdp_expert_ranks): Megatron-Core's FSDP keeps expert parameters
 * in buffers of their own over that group, as its DDP does for their
 * gradients (github.com/NVIDIA/Megatron-LM, megatron/core/distributed/fsdp).
 * Such a unit's gather is two all-gathers on the FSDP stream, dense over the
 * shard group then experts over EDP (its compute waits for the later), and
 * its gradients two reduce-scatters; the experts' shards have no replicas
 * (EDP spans every rank holding those experts).
 * The Megatron gradient buckets and distributed-optimizer gathers of data.c
 * are then off; the optimizer steps the local shard.
 */
#include "synth/build_int.h"

/* Parameters of the units a pass of virtual stage vs computes, in compute
 * order: embedding, layers, head forward; the reverse backward. params gets
 * what the shard group gathers, eparams what the EDP group does (0 unless
 * the experts have a group of their own). */
static int64_t pass_units(const builder *B, int64_t vs, int fwd, double *params,
                          double *eparams) {
  const sc_shape *sh = B->sh;
  int own = B->fsdp.expert_ranks > 0;
  int64_t nl = sc__shape_vs_layers(sh, vs), n = 0, last_vs = B->pp * B->vpp - 1;
  double head = vs == last_vs ? sh->norm_params + (!sh->tied || !sc__shape_ends_together(sh)
                                                       ? sh->embed_params
                                                       : 0.0)
                              : 0.0;
  double emb = vs == 0 ? sh->embed_params : 0.0;
  double first = fwd ? emb : head, last = fwd ? head : emb;
  if (first > 0) eparams[n] = 0, params[n++] = first;
  int64_t l0 = sc__shape_vs_first_layer(sh, vs);
  for (int64_t j = 0; j < nl; j++) {
    int64_t layer = fwd ? l0 + j : l0 + nl - 1 - j;
    double dense = sc__syn_layer_dense_params(B, layer), ex = sc__syn_layer_expert_params(B, layer);
    params[n] = own ? dense : dense + ex;
    eparams[n++] = own ? ex : 0.0;
  }
  if (last > 0) eparams[n] = 0, params[n++] = last;
  return n;
}

static double gather_bytes(const builder *B, double params) {
  const sc_config *cfg = B->cfg;
  return params * (cfg->parallel.fsdp_fp8_allgather ? 1.0 : B->sh->elem_bytes);
}

/* Issues the all-gathers of units up to `upto` (after the last compute op). */
static void issue(builder *B, const where *w, int64_t upto) {
  fsdp_state *F = &B->fsdp;
  uint32_t after = NONE;
  for (; F->issued <= upto && F->issued < F->nunits; F->issued++) {
    if (after == NONE) after = sc__syn_last_compute(B);
    where wu = *w;
    wu.layer = SC_NO_LAYER;
    F->ag[F->issued] = sc__syn_collective(B, &wu, SC_ST_FSDP, SC_GRP_SHARD, SC_COLL_ALLGATHER,
                                          SC_L_FSDP_AG, SC_CAT_DP,
                                          gather_bytes(B, F->params[F->issued]), after);
    if (F->eparams[F->issued] > 0 && F->expert_ranks > 1) /* later on the same stream */
      F->ag[F->issued] = sc__syn_collective(B, &wu, SC_ST_FSDP, SC_GRP_EDP, SC_COLL_ALLGATHER,
                                            SC_L_FSDP_AG, SC_CAT_DP,
                                            gather_bytes(B, F->eparams[F->issued]), after);
  }
}

void sc__syn_fsdp_pass(builder *B, const where *w, int64_t vs, int pass) {
  fsdp_state *F = &B->fsdp;
  if (!F->on) return;
  int fwd = pass == SC_PASS_F;
  F->gather = fwd || (pass == SC_PASS_B && B->cfg->parallel.fsdp_reshard_after_forward);
  F->nunits = pass_units(B, vs, fwd, F->params, F->eparams);
  F->issued = 0;
  F->unit = 0;
  if (F->gather) issue(B, w, B->cfg->parallel.fsdp_prefetch);
}

void sc__syn_fsdp_unit_begin(builder *B, const where *w) {
  fsdp_state *F = &B->fsdp;
  if (!F->on || !F->gather || F->unit >= F->nunits) return;
  issue(B, w, F->unit + B->cfg->parallel.fsdp_prefetch); /* the prefetch window moves on */
  sc__syn_add_wait(B, F->ag[F->unit]);
}

void sc__syn_fsdp_unit_end(builder *B, const where *w, int reduce) {
  fsdp_state *F = &B->fsdp;
  if (!F->on || F->unit >= F->nunits) return;
  double params = F->params[F->unit], eparams = F->eparams[F->unit];
  F->unit++;
  if (!reduce) return;
  const sc_shape *sh = B->sh;
  where wu = *w;
  wu.layer = SC_NO_LAYER;
  sc__syn_collective(B, &wu, SC_ST_DP, SC_GRP_SHARD, SC_COLL_REDUCESCATTER, SC_L_FSDP_RS,
                     SC_CAT_DP, params * sh->grad_bytes, sc__syn_last_compute(B));
  if (F->replicas > 1) /* hybrid sharding: the shard across the replicas */
    sc__syn_collective(B, &wu, SC_ST_DP, SC_GRP_REPLICA, SC_COLL_ALLREDUCE, SC_L_FSDP_AR,
                       SC_CAT_DP, params / (double)F->shard_ranks * sh->grad_bytes, NONE);
  if (eparams > 0 && F->expert_ranks > 1)
    sc__syn_collective(B, &wu, SC_ST_DP, SC_GRP_EDP, SC_COLL_REDUCESCATTER, SC_L_FSDP_RS,
                       SC_CAT_DP, eparams * sh->grad_bytes, NONE);
}
