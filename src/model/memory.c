/*
 * memory.c: memory per rank for each pipeline stage of a resolved config
 * (BLUEPRINT section 3, "Memory per rank"): model states from the parameter
 * count and the optimizer's sharding, activations from Korthikanti et al.
 * 2022 (Table 2) times the micro-batches the schedule keeps in flight on the
 * stage, plus transient, communication and framework buffers. Used by the
 * step result, the sweep's pruning and `sc_memory_estimate`. docs/MEMORY.md
 * derives every term and compares it with Megatron-LM's own estimate.
 */
#include "model/memory_int.h"
#include "input/config_int.h"
#include "model/schedule_int.h"

#include <math.h>

/* ------------------------------------------------------------ constants */

#define GIB 1073741824.0
#define MIB 1048576.0

/* NCCL communicator buffers, per communicator a rank belongs to: NCCL
 * allocates NCCL_BUFFSIZE (default 4 MiB, NCCL environment-variable docs)
 * per channel and ring neighbour; we assume 16 channels (NCCL's usual count
 * on NVSwitch baseboards) and 2 neighbours. An assumption, not a
 * measurement: 128 MiB. */
#define NCCL_COMM_BYTES (2.0 * 16.0 * 4.0 * MIB)

/* Fixed framework overhead: the CUDA context with PyTorch's kernels takes
 * about 0.7-0.8 GiB on the first CUDA call (723 MiB and "~800 MB" reported in
 * discuss.pytorch.org threads 73021 and 81330), plus cuBLAS/cuDNN/Transformer
 * Engine workspaces (tens of MiB); rounded to 1 GiB. */
#define FRAMEWORK_FIXED_BYTES (1.0 * GIB)

/* Caching-allocator fragmentation and miscellaneous temporaries as a
 * fraction of the dynamic (activation) memory: Megatron-LM's theoretical
 * memory estimate applies the same 5% to its activation term. */
#define FRAGMENTATION 0.05

/* ------------------------------------------------------------ activations */

/*
 * Korthikanti et al. 2022, Section 4.1, count per layer and micro-batch with
 * 16-bit activations (e = 2) and 1-byte dropout masks:
 *   replicated over TP unless sequence parallel: the two norm inputs, the
 *     QKV and FC1 GEMM inputs (4e sbh) and the two residual dropout masks
 *     (2 sbh): 10 sbh;
 *   split over TP: Q, K, V (e sbh + 2e s b g d), the attention output that
 *     feeds the projection (e sbh), FC1 output and activation output
 *     (e s b f (1 or 2 for SwiGLU's two halves) + e s b f): 24 sbh for MHA
 *     with f = 4h;
 *   the s x s part, split over TP: softmax output, its dropout mask and
 *     dropout output, (2e + 1) a s^2 b = 5 a s^2 b.
 * Selective recompute drops the s x s part; FlashAttention never stores it
 * but keeps the fp32 log-sum-exp per query row and head (4 a s b). Full
 * recompute keeps only the layer input, e sbh (split with SP).
 */
/* Per layer and micro-batch between a split backward's B and W passes: the
 * inputs of the QKV, projection, FC1 and FC2 weight-grad GEMMs (stored as
 * the forward stored them: h split with SP, qd/t, f/t) and their output
 * grads (qkv_out/t, h, FC1's outputs/t, h; split with SP). */
double sc__memory_layer_wgrad_act(const sc_shape *sh) {
  double e = sh->elem_bytes, sb = sh->s_cp * sh->b;
  double fc1 = sh->f * (sh->swiglu ? 2.0 : 1.0) / sh->t;
  double inputs = 2.0 * sh->h / sh->shard + sh->qd / sh->t + sh->f / sh->t;
  double grads = sh->qkv_out / sh->t + 2.0 * sh->h / sh->shard + fc1;
  return e * sb * (inputs + grads);
}

/*
 * torchtitan's op-level selective activation checkpointing (recompute
 * op_sac; its _custom_policy in the activation-checkpoint code): inside
 * each block's checkpoint (a counter per block) the outputs of the ops in
 * a save list are kept (aten.mm, the SDPA flash/efficient attention output
 * with its log-sum-exp, c10d reduce_scatter_tensor, aten.max), except that
 * every second mm is recomputed (odd counts kept, even ones re-run). The
 * block's forward mm order is wq, wk, wv, wo, w1, w3, w2 (gated FFN) or
 * wq, wk, wv, wo, w1, w2 (GELU), so kept per TP rank, e bytes each and
 * every mm over the block's whole (gathered) tokens:
 *   the block input (the checkpoint's input, split with SP): h / shard;
 *   wq, wv outputs (column-parallel shards): qd / t, g_rank d;
 *   w1's output: f / t; gated: w2's, row-parallel partial sums of all h
 *     (the mm output, before its reduce-scatter);
 *   the attention output (qd / t) and its fp32 log-sum-exp (4 a / t);
 *   with SP the two reduce-scatter outputs (after wo and w2): 2 h / t.
 * What the backward re-makes (op_sac_recomputed) is not stored. The
 * per-tensor fp8 amax (aten.max) is a scalar and not counted. */
static double op_sac_act(const sc_shape *sh) {
  double e = sh->elem_bytes, sb = sh->s_cp * sh->b;
  double mm = sh->qd / sh->t + sh->g_rank * sh->d + sh->f / sh->t + (sh->swiglu ? sh->h : 0.0);
  double rs = sh->sp ? 2.0 * sh->h / sh->t : 0.0;
  double attn = sh->attn_v / sh->t;
  return e * sb * (sh->h / sh->shard + mm + attn + rs) + 4.0 * sh->a / sh->t * sb;
}

/* What op_sac re-makes for one layer's backward and autograd then holds
 * until that backward is done, per TP rank: the two norms' outputs as the
 * GEMMs take them (gathered over TP with SP: h each), RoPE's Q and K (the
 * attention's inputs, qd / t + g_rank d), the residual sum the FFN norm
 * reads (h / shard) and, gated, the w3 output, the SiLU output and their
 * product (w2's input; GELU: its output), f / t each. The norms' fp32
 * statistics (4 bytes a token) are left out. */
static double op_sac_recomputed(const sc_shape *sh) {
  double e = sh->elem_bytes, sb = sh->s_cp * sh->b;
  double ffn = (sh->swiglu ? 3.0 : 1.0) * sh->f / sh->t;
  return e * sb * (2.0 * sh->h + sh->qd / sh->t + sh->g_rank * sh->d + sh->h / sh->shard + ffn);
}

double sc__memory_layer_act(const sc_shape *sh, int recompute, int flash_attention) {
  double e = sh->elem_bytes;
  double sb = sh->s_cp * sh->b, sbh = sb * sh->h;
  if (recompute == SC_RECOMPUTE_FULL) return e * sbh / sh->shard;
  if (recompute == SC_RECOMPUTE_OP_SAC) return op_sac_act(sh);
  double masks = sh->dropout ? 2.0 : 0.0; /* the two residual dropout masks */
  double replicated = (4.0 * e + masks) * sbh;
  double qkv = e * sb * sh->qd / sh->t + 2.0 * e * sb * sh->d * sh->g_rank;
  /* Multi-head latent attention: Q and K of a (d + rope) and V of a dv per
   * TP share, and the gathered latents (input of the up projections and of
   * their norms, not split). */
  if (sh->mla)
    qkv = e * sb * (2.0 * sh->attn_qk + sh->attn_v) / sh->t +
          2.0 * e * sb * (sh->q_lora + sh->kv_lora + sh->rope);
  /* recompute_modules mla_up_proj: the up projections' outputs (the
   * attention core's Q, K, V) are re-made in the backward; the latents stay */
  if (sh->mla && recompute == SC_RECOMPUTE_SELECTIVE && (sh->rc_modules & SC_RC_MLA_UP_PROJ))
    qkv = 2.0 * e * sb * (sh->q_lora + sh->kv_lora + sh->rope);
  double split = e * sb * sh->attn_v + e * sb * sh->f * (sh->swiglu ? 2.0 : 1.0) + e * sb * sh->f;
  double bytes = replicated / sh->shard + qkv + split / sh->t;
  /* Selective recompute by module (training.recompute_modules): the norms'
   * outputs (the QKV and FC1 inputs) are re-made when layernorm is listed;
   * without core_attn the attention core's state is kept as without
   * recompute. */
  unsigned rc = recompute == SC_RECOMPUTE_SELECTIVE ? sh->rc_modules : 0;
  if (rc & SC_RC_LAYERNORM) bytes -= 2.0 * e * sbh / sh->shard;
  if (recompute == SC_RECOMPUTE_NONE ||
      (recompute == SC_RECOMPUTE_SELECTIVE && !(rc & SC_RC_CORE_ATTN))) {
    if (flash_attention) bytes += 4.0 * sh->a * sb / sh->t;
    else bytes += (sh->dropout ? 2.0 * e + 1.0 : e) * sh->a * sh->s * sb / sh->t;
  }
  return bytes;
}

/* Mixture of experts. Per MoE layer and micro-batch, beside the attention
 * half of the dense count (the FFN terms replaced): the router's fp32
 * probabilities (4 bytes x tokens x E, for its backward), and per routed
 * token copy on the expert side (moe_tokens: the hottest EP rank's, with
 * its etp gather) the FC1 input (h), FC1 output (gated: 2 fe / etp), the
 * activation output (fe / etp) and the FC2 output the weighted un-permute
 * needs (h), e bytes each (Megatron-Core's grouped MLP saves these); the
 * shared experts store like a dense FFN of their width. Full recompute
 * keeps the layer input only, as for dense layers. */
static double moe_ffn_act(const sc_shape *sh) {
  double e = sh->elem_bytes, sb = sh->s_cp * sh->b, M = sh->moe_tokens;
  double fl = sh->fe / (double)sh->etp, g = sh->swiglu ? 2.0 : 1.0;
  double routed = e * M * (2.0 * sh->h + g * fl + fl);
  double router = 4.0 * sb / sh->shard * sh->E;
  double shared = e * sb * sh->f_shared * (g + 1.0) / sh->t;
  return routed + router + shared;
}

/* The dense FFN terms of sc__memory_layer_act: FC1 output, activation
 * output (split over TP); its input is among the replicated terms. */
static double dense_ffn_act(const sc_shape *sh) {
  double e = sh->elem_bytes, sb = sh->s_cp * sh->b;
  return (e * sb * sh->f * (sh->swiglu ? 2.0 : 1.0) + e * sb * sh->f) / sh->t;
}

double sc__memory_moe_layer_act(const sc_shape *sh, int recompute, int flash_attention) {
  double dense = sc__memory_layer_act(sh, recompute, flash_attention);
  if (recompute == SC_RECOMPUTE_FULL) return dense;
  unsigned rc = recompute == SC_RECOMPUTE_SELECTIVE ? sh->rc_modules : 0;
  double e = sh->elem_bytes, M = sh->moe_tokens, fl = sh->fe / (double)sh->etp;
  double ffn = moe_ffn_act(sh);
  if (rc & SC_RC_MOE) ffn = 0; /* the FFN re-run from its input (the norm output) */
  else if (rc & SC_RC_MOE_ACT) ffn -= e * M * fl; /* the activation output */
  return dense - dense_ffn_act(sh) + ffn;
}

double sc__memory_moe_layer_wgrad_act(const sc_shape *sh) {
  double e = sh->elem_bytes, sb = sh->s_cp * sh->b, M = sh->moe_tokens;
  double fl = sh->fe / (double)sh->etp, g = sh->swiglu ? 2.0 : 1.0;
  double attn = e * sb * (sh->h / sh->shard + sh->qd / sh->t + sh->qkv_out / sh->t +
                          sh->h / sh->shard);
  /* experts: FC1 and FC2 inputs and output grads */
  return attn + e * M * (sh->h + fl + g * fl + sh->h);
}

/* ------------------------------------------------------------ model */

void sc__memory_opts_of(const sc_config *cfg, sc_memory_opts *o) {
  /* The sharding group is dp x cp (CP ranks hold the same parameters):
   * with dp 1 and cp 8 the states are still sharded 8 ways. */
  o->zero_stage = cfg->parallel.dp * cfg->parallel.cp <= 1 ? 0
                  : cfg->parallel.zero_stage > 0            ? (int)cfg->parallel.zero_stage
                  : cfg->parallel.distributed_optimizer ? 1
                                                            : 0;
  o->flash_attention = cfg->training.attention != SC_ATTN_UNFUSED;
}

static int whole_walk(sc_ctx *ctx, sc_memory_model *mm);

int sc__memory_model_init(sc_ctx *ctx, sc_memory_model *mm, const sc_shape *sh,
                          const sc_memory_opts *o) {
  memset(mm, 0, sizeof *mm);
  const sc_config *cfg = sh->cfg;
  mm->sh = sh;
  mm->cfg = cfg;
  mm->o = *o;
  mm->tp = sh->tp;
  mm->pp = sh->pp;
  mm->dp = sh->dp;
  mm->vpp = sh->vpp;
  mm->m = sh->m;
  mm->layer_params = sh->layer_params;
  mm->embed_params = sh->embed_params;
  mm->norm_params = sh->norm_params;

  /* Bytes per parameter. Mixed precision (Micikevicius et al. 2018 as
   * Megatron-LM runs it): 16-bit weights; gradients accumulate in fp32
   * "main grads" with bf16 and fp8 (Megatron requires fp32 grad accumulation
   * with bf16) and stay 16-bit with fp16, the ZeRO paper's 2 + 2 + 12
   * accounting; Adam keeps an fp32 master copy and two fp32 moments (12).
   * fp32 training: the weights are the master copy (4 + 4 + 8). */
  int fp32 = cfg->training.precision == SC_PREC_FP32;
  mm->weight_bpp = fp32 ? 4.0 : 2.0;
  mm->grad_bpp = cfg->training.precision == SC_PREC_FP16 ? 2.0 : 4.0;
  mm->opt_bpp = fp32 ? 8.0 : 12.0;
  /* Sharded over the data-parallel ranks with the context-parallel ones
   * (Megatron-LM's distributed optimizer and FSDP both shard over dp x cp). */
  double dp = (double)(sh->dp * sh->cp);
  /* ZeRO-3 / FSDP shards the dense parameters over its shard group
   * (fsdp_shard x cp; hybrid sharding replicates the shards across the
   * other dp ranks). */
  if (o->zero_stage >= 3) dp = (double)sc__shape_fsdp_shard_ranks(sh);
  /* Routed experts shard over their expert-data-parallel group (edp ranks
   * hold the same experts); under FSDP over it where it is another group
   * than the shard group (Megatron-FSDP with EP), else with the rest. */
  double edp = sh->moe ? (double)sh->edp : dp;
  if (o->zero_stage >= 3) {
    int64_t er = sc__shape_fsdp_expert_ranks(sh);
    edp = er > 0 ? (double)er : dp;
  }
  mm->expert_weight_bpp = mm->weight_bpp;
  mm->expert_grad_bpp = mm->grad_bpp;
  mm->expert_opt_bpp = mm->opt_bpp;
  if (o->zero_stage >= 1 && edp > 1) mm->expert_opt_bpp /= edp;
  if (o->zero_stage >= 2 && edp > 1) mm->expert_grad_bpp /= edp;
  if (o->zero_stage >= 3 && edp > 1) mm->expert_weight_bpp /= edp;
  if (o->zero_stage >= 1) mm->opt_bpp /= dp;
  if (o->zero_stage >= 2) mm->grad_bpp /= dp;
  if (o->zero_stage >= 3) mm->weight_bpp /= dp;
  /* training.optimizer_offload: that fraction of the (sharded) states, the
   * fp32 master weights with them, lives in host memory (Megatron-LM's
   * --optimizer-offload-fraction; ZeRO-Offload: all). */
  double off = cfg->training.optimizer_offload;
  if (off > 0) {
    mm->host_opt_bpp = off * mm->opt_bpp;
    mm->host_expert_opt_bpp = off * mm->expert_opt_bpp;
    mm->opt_bpp -= mm->host_opt_bpp;
    mm->expert_opt_bpp -= mm->host_expert_opt_bpp;
  }

  mm->act_layer = sc__memory_layer_act(sh, cfg->training.recompute, o->flash_attention);
  mm->act_layer_full = sc__memory_layer_act(sh, SC_RECOMPUTE_NONE, o->flash_attention);
  mm->act_layer_w = sc__memory_layer_wgrad_act(sh);
  /* training.activation_offload_layers (pp = 1, no recompute: config.c):
   * the first layers' stored activations go to the host after their
   * forward; the largest of them is the one in transit. */
  mm->offload_layers = cfg->training.activation_offload_layers;
  for (int64_t l = 0; l < mm->offload_layers; l++) {
    double a = sc__shape_is_moe_layer(sh, l)
                   ? sc__memory_moe_layer_act(sh, cfg->training.recompute, o->flash_attention)
                   : mm->act_layer;
    if (a > mm->offload_layer_max) mm->offload_layer_max = a;
  }
  mm->gather_bytes = sh->shard > 1.0 ? sh->elem_bytes * sh->s_cp * sh->b * sh->h : 0.0;
  /* One layer's backward: what recompute dropped, re-made, and the
   * sequence-parallel gather of the GEMM input it runs on (op_sac's count
   * holds both gathered norm outputs already). */
  mm->act_layer_rc = cfg->training.recompute == SC_RECOMPUTE_OP_SAC
                         ? op_sac_recomputed(sh)
                         : mm->act_layer_full - mm->act_layer + mm->gather_bytes;
  if (sh->moe) {
    mm->act_moe_layer = sc__memory_moe_layer_act(sh, cfg->training.recompute, o->flash_attention);
    mm->act_moe_layer_full = sc__memory_moe_layer_act(sh, SC_RECOMPUTE_NONE, o->flash_attention);
    mm->act_moe_layer_w = sc__memory_moe_layer_wgrad_act(sh);
    /* Dispatch buffers while an MoE layer runs: the permuted send buffer
     * and the receive buffer of the all-to-all (the hottest rank's copies),
     * 16-bit. */
    double e = sh->elem_bytes;
    double sent = sh->hot * sh->k * sh->s_cp * sh->b / sh->shard * sh->h * e;
    mm->moe_buffer_bytes = 2.0 * sent;
  }
  double e = sh->elem_bytes;
  double sb = sh->s_cp * sh->b, sbh = sb * sh->h;
  /* Embedding: int64 token ids (replicated over TP) and the 1-byte dropout
   * mask of the embedding output; its value is the first layer's input,
   * counted there. Megatron-LM counts the same 8 sb + sbh per micro-batch. */
  mm->act_embed = 8.0 * sb + (sh->dropout ? sbh / sh->shard : 0.0);
  /* LM head: final-norm input and logits-GEMM input (e sbh each, split with
   * SP) and the fp32 softmax the vocab-parallel cross-entropy keeps for its
   * backward, 4 s b V / t: Korthikanti et al.'s 4 sbh (1 + V/h) / t. */
  mm->act_head = 2.0 * e * sbh / sh->shard + 4.0 * sb * sh->v / sh->t;
  /* Context parallelism's K/V in flight during a layer's attention: the ring
   * double-buffers a chunk of K/V and, backward, of dK/dV (4 chunks); the
   * all-gather holds every rank's K/V and their grads; Ulysses the whole
   * sequence's Q, K, V for a/cp heads (as many bytes as the local ones). */
  mm->cp_kv_bytes = 0;
  if (sh->cp > 1) {
    /* this rank's K and V (multi-head latent attention: up-projected) */
    double kv = e * sb * sh->g_rank * (sh->attn_qk + sh->attn_v) / sh->a;
    double qkv_w = sh->mla ? 2.0 * sh->attn_qk + sh->attn_v : sh->qkv_out;
    switch (cfg->parallel.cp_comm) {
    case SC_CP_ALLGATHER: mm->cp_kv_bytes = 2.0 * kv * (double)sh->cp; break;
    case SC_CP_A2A: mm->cp_kv_bytes = e * sb * qkv_w / sh->t; break;
    default: mm->cp_kv_bytes = 4.0 * kv; break;
    }
  }
  /* The loss backward's logits on the last stage, beside the fp32
   * log-probabilities stored for it: Megatron-LM scales its fp32 softmax
   * in place and casts it to 16 bits (e a logit); with fp32_loss_grads
   * (torchtitan's cross-entropy on logits cast to fp32) autograd holds
   * the fp32 gradients of the log-probabilities and of the logits (4 + 4),
   * more than the forward's 16-bit logits and their fp32 copy (e + 4). */
  double per_logit = e;
  if (cfg->training.fp32_loss_grads) per_logit = e + 4.0 > 8.0 ? e + 4.0 : 8.0;
  /* With tp > 1 torchtitan's loss runs under torch's loss_parallel on
   * vocabulary-sharded logits: its backward (_nll_loss_and_log_softmax_
   * backward, out of place) holds, beside the stored log-probabilities,
   * the zero-filled one-hot gradient, exp(log-probabilities), their sum and
   * that sum times the incoming gradient, fp32 each: 12 bytes a logit (two
   * of them at a time: 4 + 4 + 4 beside the one-hot). Its forward
   * (_log_softmax: the max-shifted copy and its exp beside the fp32 input
   * and the 16-bit logits, e + 8) is less. */
  if (cfg->training.fp32_loss_grads && sh->tp > 1) per_logit = e + 8.0 > 12.0 ? e + 8.0 : 12.0;
  mm->loss_logits_bytes = per_logit * sb * sh->v / sh->t;
  /* torch.distributed.pipelining's last stage appends each micro-batch's
   * forward output to output_chunks (PipelineStage.forward_one_chunk, "Prepare
   * for final output merge or reduction") and frees them only when the step
   * is over: torchtitan's model output, the 16-bit logits [b, s, V/t], e s b
   * V / t a micro-batch, stays alive beside the loss's own buffers. */
  mm->pp_output_bytes =
      cfg->parallel.pp_keep_outputs && sh->pp > 1 ? e * sb * sh->v / sh->t : 0.0;
  mm->capacity_bytes = sh->hw->hbm_gib * GIB;
  return sc__schedule_whole(sh) ? whole_walk(ctx, mm) : SC_OK;
}

void sc__memory_model_free(sc_ctx *ctx, sc_memory_model *mm) {
  if (mm->sched_peak)
    sc__free(ctx, mm->sched_peak, (size_t)mm->pp * SC_MEMORY_PEAK_VALUES * sizeof *mm->sched_peak);
  mm->sched_peak = NULL;
}

static double stage_params(const sc_memory_model *mm, int64_t stage) {
  return sc__shape_stage_params(mm->sh, stage);
}

/* MoE layers of virtual stage vs. */
static int64_t vs_moe_layers(const sc_shape *sh, int64_t vs) {
  return sc__shape_moe_layers_in(sh, sc__shape_vs_first_layer(sh, vs), sc__shape_vs_layers(sh, vs));
}

/* The activations of virtual stage vs's offloaded layers (per micro-batch),
 * which its forward sends to host memory. */
static double vs_offloaded_bytes(const sc_memory_model *mm, int64_t vs) {
  if (mm->offload_layers <= 0) return 0.0;
  int64_t first = sc__shape_vs_first_layer(mm->sh, vs), n = sc__shape_vs_layers(mm->sh, vs);
  int64_t end = first + n < mm->offload_layers ? first + n : mm->offload_layers;
  if (end <= first) return 0.0;
  int64_t nm = sc__shape_moe_layers_in(mm->sh, first, end - first);
  return mm->act_layer * (double)(end - first - nm) + mm->act_moe_layer * (double)nm;
}

double sc__memory_item_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk) {
  int64_t vs = sc__shape_vstage(mm->sh, stage, chunk);
  int64_t nm = vs_moe_layers(mm->sh, vs);
  double bytes = mm->act_layer * (double)(sc__shape_vs_layers(mm->sh, vs) - nm) +
                 mm->act_moe_layer * (double)nm - vs_offloaded_bytes(mm, vs);
  if (vs == 0) bytes += mm->act_embed;
  if (vs == mm->pp * mm->vpp - 1) bytes += mm->act_head + mm->pp_output_bytes;
  return bytes;
}

double sc__memory_item_kept_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk) {
  int64_t vs = sc__shape_vstage(mm->sh, stage, chunk);
  return vs == mm->pp * mm->vpp - 1 ? mm->pp_output_bytes : 0.0;
}

static double item_embed_head(const sc_memory_model *mm, int64_t stage, int64_t chunk) {
  int64_t vs = sc__shape_vstage(mm->sh, stage, chunk);
  return (vs == 0 ? mm->act_embed : 0.0) + (vs == mm->pp * mm->vpp - 1 ? mm->act_head : 0.0);
}

/* What a micro-batch still holds between its input-grad pass and its
 * weight-grad pass (split backwards): per layer the weight-grad GEMMs'
 * inputs and output grads. */
static double item_wgrad_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk) {
  int64_t vs = sc__shape_vstage(mm->sh, stage, chunk);
  int64_t nm = vs_moe_layers(mm->sh, vs);
  return mm->act_layer_w * (double)(sc__shape_vs_layers(mm->sh, vs) - nm) +
         mm->act_moe_layer_w * (double)nm;
}

double sc__memory_item_wgrad_bytes(const sc_memory_model *mm, int64_t stage, int64_t chunk) {
  return sc__schedule_split(mm->sh) ? item_wgrad_bytes(mm, stage, chunk) : 0.0;
}

/* Communicators a rank of `stage` belongs to: TP, DP, the pipeline's p2p
 * and, for tied embeddings across the pipeline, the first/last-stage group;
 * DualPipe's pair of mirrored stages. */
static int communicators(const sc_memory_model *mm, int64_t stage) {
  int n = (mm->tp > 1) + (mm->dp * mm->sh->cp > 1) + (mm->pp > 1) + (mm->sh->cp > 1);
  if (mm->cfg->model.tied_embeddings && mm->pp > 1 && (stage == 0 || stage == mm->pp - 1)) n++;
  n += mm->sh->dual; /* DualPipe's mirror pair */
  /* MoE: the EP, expert tensor-parallel and expert-data-parallel groups */
  if (mm->sh->moe) n += (mm->sh->ep > 1) + (mm->sh->etp > 1) + (mm->sh->edp > 1);
  return n;
}

double sc__memory_static_bytes(const sc_memory_model *mm, int64_t stage) {
  double p = stage_params(mm, stage), pe = sc__shape_stage_expert_params(mm->sh, stage);
  return (p - pe) * (mm->weight_bpp + mm->grad_bpp + mm->opt_bpp) +
         pe * (mm->expert_weight_bpp + mm->expert_grad_bpp + mm->expert_opt_bpp) +
         communicators(mm, stage) * NCCL_COMM_BYTES + FRAMEWORK_FIXED_BYTES;
}

/* Peak of stored activations on a stage and the schedule items held then,
 * walking the stage's schedule (model/schedule.c) as the engine's memory
 * counter track does: a forward adds its chunk's activations, a backward
 * frees them (a split backward keeps what the weight grads need until its W
 * pass), so the embedding and LM head, which live on one chunk only, are
 * counted when they are really held. */
typedef struct peak_walk {
  double bytes[64], eh[64], w[64], kept[64]; /* per chunk (vpp <= 64: shape init) */
  int split;
  double cur, cur_eh, cur_kept, best, best_eh, best_kept;
  int64_t held, best_items;
} peak_walk;

static void walk_begin(const sc_memory_model *mm, int64_t stage, peak_walk *p) {
  memset(p, 0, sizeof *p);
  for (int64_t c = 0; c < sc__shape_chunks(mm->sh); c++) {
    p->bytes[c] = sc__memory_item_bytes(mm, stage, c);
    p->eh[c] = item_embed_head(mm, stage, c);
    p->w[c] = item_wgrad_bytes(mm, stage, c);
    p->kept[c] = sc__memory_item_kept_bytes(mm, stage, c);
  }
  p->split = sc__schedule_split(mm->sh);
}

static void walk_item(peak_walk *p, const sc_sched_item *x) {
  int c = x->chunk;
  if (x->pass == SC_PASS_F) {
    p->cur += p->bytes[c];
    p->cur_eh += p->eh[c];
    p->cur_kept += p->kept[c];
    p->held++;
  } else if (x->pass == SC_PASS_B) {
    /* a split backward under full recomputation keeps more (the
     * re-created weight-grad inputs) than the forward stored; kept
     * pipeline outputs stay to the step's end */
    p->cur -= p->bytes[c] - p->kept[c] - (p->split ? p->w[c] : 0.0);
    p->cur_eh -= p->eh[c];
    if (!p->split) p->held--;
  } else {
    p->cur -= p->w[c];
    p->held--;
    return; /* only frees */
  }
  if (p->cur > p->best) {
    p->best = p->cur;
    p->best_eh = p->cur_eh;
    p->best_kept = p->cur_kept;
    p->best_items = p->held;
  }
}

/* ZB-V, DualPipe, DualPipe-V: every stage's order from sc__schedule_all
 * (the one the synthesiser builds its programs along), walked once. */
static int whole_walk(sc_ctx *ctx, sc_memory_model *mm) {
  const sc_shape *sh = mm->sh;
  size_t len = sc__schedule_len(sh), n = (size_t)mm->pp * len;
  sc_sched_item *items = sc__malloc(ctx, n * sizeof *items);
  mm->sched_peak =
      sc__malloc(ctx, (size_t)mm->pp * SC_MEMORY_PEAK_VALUES * sizeof *mm->sched_peak);
  int rc = items && mm->sched_peak ? sc__schedule_all(ctx, sh, items) : SC_ENOMEM;
  for (int64_t s = 0; !rc && s < mm->pp; s++) {
    peak_walk p;
    walk_begin(mm, s, &p);
    for (size_t k = 0; k < len; k++) walk_item(&p, &items[(size_t)s * len + k]);
    double *pk = &mm->sched_peak[SC_MEMORY_PEAK_VALUES * s];
    pk[0] = p.best;
    pk[1] = p.best_eh;
    pk[2] = (double)p.best_items;
    pk[3] = p.best_kept;
  }
  sc__free(ctx, items, n * sizeof *items);
  if (rc) sc__memory_model_free(ctx, mm);
  return rc;
}

static void schedule_peak(const sc_memory_model *mm, int64_t stage, double *bytes,
                          double *embed_head, double *items, double *kept) {
  if (mm->sched_peak) {
    const double *pk = &mm->sched_peak[SC_MEMORY_PEAK_VALUES * stage];
    *bytes = pk[0];
    *embed_head = pk[1];
    *items = pk[2];
    *kept = pk[3];
    return;
  }
  peak_walk p;
  walk_begin(mm, stage, &p);
  sc_sched_iter it;
  sc_sched_item x;
  sc__schedule_begin(mm->sh, stage, &it);
  while (sc__schedule_next(&it, &x)) walk_item(&p, &x);
  *bytes = p.best;
  *embed_head = p.best_eh;
  *items = (double)p.best_items;
  *kept = p.best_kept;
}

/* FSDP / ZeRO-3 on top of the sharded states: the units gathered at once
 * (the one computing and fsdp_prefetch ahead, in the compute dtype or fp8;
 * without resharding after the forward, every unit of the stage stays
 * gathered until its backward) and one unit's unsharded gradients before
 * their reduce-scatter (in the reduce dtype). A unit is the largest layer:
 * an MoE layer's gathers bring its dense part and its E/ep local experts
 * (over EDP with expert parallelism), so it is priced at
 * moe_layer_params + expert_params. */
/* Parameters of a stage outside its transformer layers: the word embedding
 * on virtual stage 0, the LM head (unless it is the embedding, shared) and
 * the final norm on the last one. */
static double stage_root_params(const sc_memory_model *mm, int64_t stage) {
  const sc_shape *sh = mm->sh;
  int64_t last_vs = sh->pp * sh->vpp - 1;
  double params = 0;
  for (int64_t c = 0; c < sc__shape_chunks(sh); c++) {
    int64_t vs = sc__shape_vstage(sh, stage, c);
    if (vs == 0) params += sh->embed_params;
    if (vs == last_vs && (!sh->tied || !sc__shape_ends_together(sh))) params += sh->embed_params;
    if (vs == last_vs) params += sh->norm_params;
  }
  return params;
}

/* The LM head's parameters on `stage` (0 where the stage has none). */
static double stage_head_params(const sc_memory_model *mm, int64_t stage) {
  const sc_shape *sh = mm->sh;
  int64_t last_vs = sh->pp * sh->vpp - 1;
  for (int64_t c = 0; c < sc__shape_chunks(sh); c++)
    if (sc__shape_vstage(sh, stage, c) == last_vs) return sh->embed_params;
  return 0.0;
}

static double fsdp_gathered(const sc_memory_model *mm, int64_t stage) {
  const sc_parallel_cfg *par = &mm->cfg->parallel;
  const sc_shape *sh = mm->sh;
  double pbytes = par->fsdp_fp8_allgather ? 1.0 : sh->elem_bytes;
  double units = (double)(1 + par->fsdp_prefetch);
  if (!par->fsdp_reshard_after_forward) {
    int64_t layers = 0;
    for (int64_t c = 0; c < sc__shape_chunks(sh); c++)
      layers += sc__shape_vs_layers(sh, sc__shape_vstage(sh, stage, c));
    if ((double)layers > units) units = (double)layers;
  }
  double unit = mm->layer_params;
  if (sh->moe) {
    double moe_unit = sh->moe_layer_params + sh->expert_params;
    int dense_layers = sh->dense_layers > 0 || sh->moe_freq > 1;
    unit = dense_layers && unit > moe_unit ? unit : moe_unit;
  }
  /* The unit being reduced: FSDP2's foreach_reduce copies its unsharded
   * gradients (parameter dtype, e) into a reduce-dtype buffer and frees them
   * only after that copy; the buffer is held until the next unit's reduce
   * (post_backward waits on reduce_scatter_state), while the next unit's
   * gradients are made: unit * (e + grad_bytes). The root unit (FSDP2's
   * fully_shard on the whole model: embedding, final norm, LM head) is
   * never resharded after its forward (_lazy_init clears the root's
   * post_forward_mesh_info), so it stays gathered, 16-bit (fp8 gathers are
   * Float8Linear's, not the embedding's or the output's), from the forward's
   * start to the backward's end. */
  double root = stage_root_params(mm, stage) * sh->elem_bytes;
  return units * unit * pbytes + unit * (sh->elem_bytes + sh->grad_bytes) + root;
}

void sc__memory_stage(const sc_memory_model *mm, int64_t stage, sc_memory_stage *out) {
  memset(out, 0, sizeof *out);
  out->stage = stage;
  out->params = stage_params(mm, stage);
  double pe = sc__shape_stage_expert_params(mm->sh, stage), pd = out->params - pe;
  out->weights_bytes = pd * mm->weight_bpp + pe * mm->expert_weight_bpp;
  out->grads_bytes = pd * mm->grad_bpp + pe * mm->expert_grad_bpp;
  out->optimizer_bytes = pd * mm->opt_bpp + pe * mm->expert_opt_bpp;
  out->host_optimizer_bytes = pd * mm->host_opt_bpp + pe * mm->host_expert_opt_bpp;
  out->act_layer_bytes = mm->act_layer;
  schedule_peak(mm, stage, &out->activations_bytes, &out->embed_head_bytes, &out->inflight,
                &out->pp_outputs_bytes);

  /* Transients on top of the stored peak, which is reached just before a
   * backward: that backward recomputes one layer (what recompute dropped,
   * held for one layer) and gathers its sequence-parallel input; the last
   * stage's head briefly holds 16-bit logits next to the fp32 ones. With
   * ZeRO-3 two layers' weights are gathered (current and prefetched). */
  double layer_ws = mm->act_layer_rc + mm->cp_kv_bytes;
  if (mm->sh->moe) { /* an MoE layer's recompute and its dispatch buffers */
    double moe_ws = (mm->act_moe_layer_full - mm->act_moe_layer) + mm->gather_bytes +
                    mm->cp_kv_bytes + mm->moe_buffer_bytes;
    if (moe_ws > layer_ws) layer_ws = moe_ws;
  }
  /* FSDP2 keeps the LM head's unsharded gradient (e a parameter) from its
   * backward, right after the loss's, until the root unit's post-backward at
   * the end of the backward: it is there for every layer's backward. */
  if (mm->o.zero_stage >= 3) layer_ws += stage_head_params(mm, stage) * mm->sh->elem_bytes;
  double head_ws = stage == mm->pp - 1 ? mm->loss_logits_bytes : 0.0;
  out->transient_bytes = layer_ws > head_ws ? layer_ws : head_ws;
  if (mm->o.zero_stage >= 3) out->transient_bytes += fsdp_gathered(mm, stage);
  /* Activation offload: one offloaded layer's activations on the device
   * beside the stored ones (the one being copied out in the forward, or
   * reloaded for the next backward); the offloaded ones of the items held
   * at the peak are in host memory. pp = 1: one chunk. */
  if (mm->offload_layers > 0) {
    out->transient_bytes += mm->offload_layer_max;
    int64_t vs = sc__shape_vstage(mm->sh, stage, 0);
    out->host_activation_bytes = out->inflight * vs_offloaded_bytes(mm, vs);
  }
  /* A GPU step of offloaded states (optimizer_offload_cpu_step false)
   * brings them back for the step, when the activations are freed: the
   * stage's peak is the larger of the two moments. */
  if (out->host_optimizer_bytes > 0 && !mm->cfg->training.optimizer_offload_cpu_step &&
      out->host_optimizer_bytes > out->activations_bytes + out->transient_bytes)
    out->transient_bytes = out->host_optimizer_bytes - out->activations_bytes;
  out->comm_buffer_bytes = communicators(mm, stage) * NCCL_COMM_BYTES;
  out->fragmentation_bytes = FRAGMENTATION * (out->activations_bytes + out->transient_bytes);
  out->framework_bytes = FRAMEWORK_FIXED_BYTES + out->fragmentation_bytes;
  out->total_bytes = out->weights_bytes + out->grads_bytes + out->optimizer_bytes +
                     out->activations_bytes + out->transient_bytes + out->comm_buffer_bytes +
                     out->framework_bytes;
  out->oom = out->total_bytes > mm->capacity_bytes;
}

double sc__memory_peak(const sc_memory_model *mm, int64_t *stage_out) {
  double best = -1;
  int64_t at = 0;
  for (int64_t s = 0; s < mm->pp; s++) {
    sc_memory_stage st;
    sc__memory_stage(mm, s, &st);
    if (st.total_bytes > best) {
      best = st.total_bytes;
      at = s;
    }
  }
  if (stage_out) *stage_out = at;
  return best;
}

int sc__memory_peak_gib(sc_ctx *ctx, const sc_shape *sh, double *gib) {
  sc_memory_opts o;
  sc_memory_model mm;
  sc__memory_opts_of(sh->cfg, &o);
  int rc = sc__memory_model_init(ctx, &mm, sh, &o);
  *gib = rc ? 0 : sc__memory_peak(&mm, NULL) / GIB;
  sc__memory_model_free(ctx, &mm);
  return rc;
}

/* ------------------------------------------------------------ public */

int sc_memory_estimate(sc_ctx *ctx, const sc_config *cfg, sc_memory_report *out) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !out) return sc__error(ctx, SC_EINVAL, "sc_memory_estimate: no config or report");
  memset(out, 0, sizeof *out);
  sc_shape sh;
  sc_memory_opts o;
  sc_memory_model mm;
  int rc = sc__shape_init(ctx, cfg, &sh);
  if (rc) return rc;
  sc__memory_opts_of(cfg, &o);
  if ((rc = sc__memory_model_init(ctx, &mm, &sh, &o))) return rc;
  out->stages = sc__calloc(ctx, (size_t)mm.pp, sizeof *out->stages);
  if (!out->stages) {
    sc__memory_model_free(ctx, &mm);
    return SC_ENOMEM;
  }
  out->nstages = mm.pp;
  out->peak_bytes = -1;
  for (int64_t s = 0; s < mm.pp; s++) {
    sc_memory_stage *st = &out->stages[s];
    sc__memory_stage(&mm, s, st);
    if (st->total_bytes > out->peak_bytes) {
      out->peak_bytes = st->total_bytes;
      out->peak_stage = s;
    }
    out->oom |= st->oom;
  }
  out->peak_gib = out->peak_bytes / GIB;
  out->capacity_gib = mm.capacity_bytes / GIB;
  sc__memory_model_free(ctx, &mm);
  return SC_OK;
}

void sc_memory_report_free(sc_ctx *ctx, sc_memory_report *out) {
  if (!ctx || !out) return;
  if (out->stages) sc__free(ctx, out->stages, (size_t)out->nstages * sizeof *out->stages);
  out->stages = NULL;
  out->nstages = 0;
}

/* X(member, key): the byte fields of a stage, in output order. */
#define STAGE_BYTE_FIELDS(X)              \
  X(weights_bytes, "weights_bytes")       \
  X(grads_bytes, "grads_bytes")           \
  X(optimizer_bytes, "optimizer_bytes")   \
  X(activations_bytes, "activations_bytes") \
  X(embed_head_bytes, "embed_head_bytes") \
  X(transient_bytes, "transient_bytes")   \
  X(comm_buffer_bytes, "comm_buffer_bytes") \
  X(framework_bytes, "framework_bytes")   \
  X(total_bytes, "total_bytes")

/* X(member, key, label): byte fields only some configs have (kept pipeline
 * outputs, host-memory offload), written when some stage has them. */
#define STAGE_OPT_FIELDS(X)                                  \
  X(pp_outputs_bytes, "pp_outputs_bytes", "pp-outs")         \
  X(host_optimizer_bytes, "host_optimizer_bytes", "host-opt") \
  X(host_activation_bytes, "host_activation_bytes", "host-act")

int sc_memory_format(const sc_config *cfg, const sc_memory_report *r, sc_format fmt,
                     sc_write_fn out, void *ud) {
  int rc;
  if (!r || !out) return SC_EINVAL;
  /* which optional fields some stage has: bit i for the i-th of STAGE_OPT_FIELDS */
  unsigned opt = 0, bit;
  for (int64_t s = 0; s < r->nstages; s++) {
    bit = 1;
#define SC_X_HAS(member, key, label) \
  if (r->stages[s].member > 0) opt |= bit; \
  bit <<= 1;
    STAGE_OPT_FIELDS(SC_X_HAS)
#undef SC_X_HAS
  }
  if (fmt == SC_FORMAT_JSON) {
    if ((rc = sc__writef(out, ud,
                         "{\"capacity_gib\": %.3f, \"peak_gib\": %.3f, \"peak_stage\": %lld, "
                         "\"oom\": %s, \"stages\": [",
                         r->capacity_gib, r->peak_gib, (long long)r->peak_stage,
                         r->oom ? "true" : "false")))
      return rc;
    for (int64_t s = 0; s < r->nstages; s++) {
      const sc_memory_stage *st = &r->stages[s];
      if ((rc = sc__writef(out, ud,
                           "%s{\"stage\": %lld, \"params\": %.0f, \"act_layer_bytes\": %.0f, "
                           "\"inflight\": %.0f",
                           s ? ", " : "", (long long)st->stage, st->params, st->act_layer_bytes,
                           st->inflight)))
        return rc;
#define SC_X_JSON(member, key) \
  if ((rc = sc__writef(out, ud, ", \"" key "\": %.0f", st->member))) return rc;
      STAGE_BYTE_FIELDS(SC_X_JSON)
#undef SC_X_JSON
      bit = 1;
#define SC_X_JSON(member, key, label) \
  if ((opt & bit) && (rc = sc__writef(out, ud, ", \"" key "\": %.0f", st->member))) return rc; \
  bit <<= 1;
      STAGE_OPT_FIELDS(SC_X_JSON)
#undef SC_X_JSON
      if ((rc = sc__writef(out, ud, ", \"oom\": %s}", st->oom ? "true" : "false"))) return rc;
    }
    return sc__writef(out, ud, "]}\n");
  }
  if (fmt == SC_FORMAT_CSV) {
    if ((rc = sc__writef(out, ud, "stage,params,act_layer_bytes,inflight"))) return rc;
#define SC_X_HEAD(member, key) \
  if ((rc = sc__writef(out, ud, "," key))) return rc;
    STAGE_BYTE_FIELDS(SC_X_HEAD)
#undef SC_X_HEAD
    bit = 1;
#define SC_X_HEAD(member, key, label) \
  if ((opt & bit) && (rc = sc__writef(out, ud, "," key))) return rc; \
  bit <<= 1;
    STAGE_OPT_FIELDS(SC_X_HEAD)
#undef SC_X_HEAD
    if ((rc = sc__writef(out, ud, ",oom\n"))) return rc;
    for (int64_t s = 0; s < r->nstages; s++) {
      const sc_memory_stage *st = &r->stages[s];
      if ((rc = sc__writef(out, ud, "%lld,%.0f,%.0f,%.0f", (long long)st->stage, st->params,
                           st->act_layer_bytes, st->inflight)))
        return rc;
#define SC_X_ROW(member, key) \
  if ((rc = sc__writef(out, ud, ",%.0f", st->member))) return rc;
      STAGE_BYTE_FIELDS(SC_X_ROW)
#undef SC_X_ROW
      bit = 1;
#define SC_X_ROW(member, key, label) \
  if ((opt & bit) && (rc = sc__writef(out, ud, ",%.0f", st->member))) return rc; \
  bit <<= 1;
      STAGE_OPT_FIELDS(SC_X_ROW)
#undef SC_X_ROW
      if ((rc = sc__writef(out, ud, ",%d\n", st->oom))) return rc;
    }
    return SC_OK;
  }
  if ((rc = sc__writef(out, ud,
                       "memory per GPU (estimate): peak %.1f GiB on stage %lld of %.0f GiB%s\n",
                       r->peak_gib, (long long)r->peak_stage, r->capacity_gib,
                       r->oom ? "  OUT OF MEMORY" : "")))
    return rc;
  if (cfg && (rc = sc__writef(out, ud, "  %s, recompute %s, tp=%lld pp=%lld dp=%lld vpp=%lld\n",
                              cfg->model.name,
                              sc_enum_name(SC_ENUM_RECOMPUTE, cfg->training.recompute),
                              (long long)cfg->parallel.tp, (long long)cfg->parallel.pp,
                              (long long)cfg->parallel.dp, (long long)cfg->parallel.vpp)))
    return rc;
  if ((rc = sc__writef(out, ud, "  %5s %9s %8s %8s %8s %8s %7s %8s %8s %8s %8s", "stage",
                       "params M", "weights", "grads", "optim", "activ", "held", "transnt", "comm",
                       "frame", "total")))
    return rc;
  bit = 1;
#define SC_X_HEAD(member, key, label) \
  if ((opt & bit) && (rc = sc__writef(out, ud, " %8s", label))) return rc; \
  bit <<= 1;
  STAGE_OPT_FIELDS(SC_X_HEAD)
#undef SC_X_HEAD
  if ((rc = sc__writef(out, ud, "  (GiB)\n"))) return rc;
  for (int64_t s = 0; s < r->nstages; s++) {
    const sc_memory_stage *st = &r->stages[s];
    if ((rc = sc__writef(out, ud, "  %5lld %9.1f %8.2f %8.2f %8.2f %8.2f %7.0f %8.2f %8.2f %8.2f %8.2f",
                         (long long)st->stage, st->params / 1e6, st->weights_bytes / GIB,
                         st->grads_bytes / GIB, st->optimizer_bytes / GIB,
                         st->activations_bytes / GIB, st->inflight, st->transient_bytes / GIB,
                         st->comm_buffer_bytes / GIB, st->framework_bytes / GIB,
                         st->total_bytes / GIB)))
      return rc;
    bit = 1;
#define SC_X_ROW(member, key, label) \
  if ((opt & bit) && (rc = sc__writef(out, ud, " %8.2f", st->member / GIB))) return rc; \
  bit <<= 1;
    STAGE_OPT_FIELDS(SC_X_ROW)
#undef SC_X_ROW
    if ((rc = sc__writef(out, ud, "%s\n", st->oom ? "  OOM" : ""))) return rc;
  }
  return SC_OK;
}
