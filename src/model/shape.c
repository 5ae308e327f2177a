/*
 * shape.c: derives the model shape (shape_int.h) of a resolved config once,
 * for the workload synthesiser, the memory model and the FLOP count, so that
 * every stage of the pipeline sees the same dimensions and parameter counts.
 */
#include "model/shape_int.h"

#include "input/config_int.h"

#include <math.h>

void sc__model_flops(const sc_config *cfg, double *model_flops, double *hw_flops) {
  const sc_model_cfg *m = &cfg->model;
  double h = (double)m->hidden, s = (double)m->seq_len, L = (double)m->layers;
  double a = (double)m->heads;
  double g = (double)(m->kv_heads > 0 ? m->kv_heads : m->heads);
  double d = m->head_dim > 0 ? (double)m->head_dim : h / a, qd = a * d;
  double f = (double)(m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden);
  double V = (double)m->vocab;
  double tokens = (double)cfg->training.global_batch * s;
  /* Forward FLOPs per token and layer (Megatron num_floating_point_operations,
   * full s x s attention as in the 72/96 formulas of the SC21 paper). */
  double qkv = 2.0 * h * (qd + 2.0 * g * d);
  double attn = 4.0 * s * qd;
  double proj = 2.0 * qd * h;
  double up = 0; /* MLA's up projections (recompute_modules mla_up_proj) */
  if (m->mla_kv_lora_rank > 0) {
    /* Multi-head latent attention, as Megatron-LM counts it
     * (num_floating_point_operations, multi_latent_attention): the query
     * down/up projections (or the direct one), the K/V down projection with
     * the RoPE key, the K/V up projection, the scores over dq = d + rope and
     * the values over dv (here over the full s x s, stepcast's convention),
     * the output projection of a dv. */
    double ql = (double)m->mla_q_lora_rank, kl = (double)m->mla_kv_lora_rank;
    double rope = (double)(m->mla_rope_dim > 0 ? m->mla_rope_dim : 64);
    double dv = m->mla_v_head_dim > 0 ? (double)m->mla_v_head_dim : d, dq = d + rope;
    qkv = 2.0 * (ql > 0 ? ql * (h + a * dq) : h * a * dq) + 2.0 * h * (kl + rope) +
          2.0 * kl * a * (d + dv);
    attn = 2.0 * s * a * (dq + dv);
    proj = 2.0 * a * dv * h;
    up = (ql > 0 ? 2.0 * ql * a * dq : 0.0) + 2.0 * kl * a * (d + dv);
  }
  double gated = m->activation == SC_ACT_SWIGLU ? 3.0 : 2.0;
  double mlp = 2.0 * h * f * gated;
  /* Mixture of experts, as Megatron-LM's num_floating_point_operations
   * counts it (training.py, 2025): an MoE layer's FFN is the k routed
   * experts' plus the shared experts', 2 * h * (k * f_moe + f_shared) *
   * (3 gated, else 2) forward FLOPs per token; the router GEMM (2 h E) is
   * not counted; the leading dense layers keep the dense FFN. */
  double moe_layers = 0, moe_mlp = 0;
  if (m->moe_experts > 0) {
    double fe = (double)(m->moe_ffn_hidden > 0 ? m->moe_ffn_hidden : m->ffn_hidden);
    double k = (double)(m->moe_topk > 0 ? m->moe_topk : 2);
    /* layers l >= dense with (l + 1) a multiple of the frequency */
    int64_t freq = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    moe_layers = (double)(m->layers / freq - m->moe_dense_layers / freq);
    moe_mlp = 2.0 * h * (k * fe + (double)m->moe_shared_experts * fe) * gated;
  }
  double attn_part = qkv + attn + proj;
  double all_layers = L * attn_part + (L - moe_layers) * mlp + moe_layers * moe_mlp;
  double logits = 2.0 * h * V;
  *model_flops = 3.0 * tokens * (all_layers + logits);
  double extra = 0;
  unsigned rc = cfg->training.recompute == SC_RECOMPUTE_SELECTIVE ? sc__recompute_modules(cfg) : 0;
  if (cfg->training.recompute == SC_RECOMPUTE_FULL) extra = tokens * all_layers;
  if (rc & SC_RC_CORE_ATTN) extra += tokens * L * attn;
  if (rc & SC_RC_MOE) extra += tokens * moe_layers * moe_mlp; /* the MoE FFN re-run */
  if (rc & SC_RC_MLA_UP_PROJ) extra += tokens * L * up;
  /* op_sac re-runs every second matmul of a block: wk, wo and w3 (gated;
   * w2 with a GELU FFN, the sixth of six), 2 n k FLOPs a token each. */
  if (cfg->training.recompute == SC_RECOMPUTE_OP_SAC)
    extra += tokens * L * (2.0 * h * g * d + proj + 2.0 * h * f);
  *hw_flops = *model_flops + extra;
}

/* One layer's parameters on one TP rank: QKV, projection, FC1 (two halves
 * for SwiGLU) and FC2 weights split over TP; biases of the column-parallel
 * layers split, the rest and the two norms (weight + bias) replicated. KV
 * heads are replicated when the TP group is larger than the KV heads. */
static double attn_params(const sc_shape *sh) {
  if (sh->mla) {
    /* down projections replicated over TP (with their latents' norms), the
     * up projections and the output projection split */
    double q = sh->q_lora > 0 ? sh->h * sh->q_lora + sh->q_lora + sh->q_lora * sh->a * sh->dq / sh->t
                              : sh->h * sh->a * sh->dq / sh->t;
    double kv = sh->h * (sh->kv_lora + sh->rope) + sh->kv_lora +
                sh->kv_lora * sh->a * (sh->d + sh->dv) / sh->t;
    return q + kv + sh->a * sh->dv * sh->h / sh->t + 4.0 * sh->h + sh->h;
  }
  double qkv_out = sh->qkv_out;
  double weights = (sh->h * qkv_out + sh->qd * sh->h) / sh->t;
  return weights + 4.0 * sh->h + qkv_out / sh->t + sh->h;
}

/* A TP-split FFN of inner size f: FC1 (two halves gated), FC2, FC1's bias
 * split, FC2's replicated. */
static double mlp_params(const sc_shape *sh, double f) {
  double fc1_out = f * (sh->swiglu ? 2.0 : 1.0);
  return (sh->h * fc1_out + f * sh->h) / sh->t + fc1_out / sh->t + sh->h;
}

static double layer_params(const sc_shape *sh) { return attn_params(sh) + mlp_params(sh, sh->f); }

/* Mixture of experts: the expert grid and the hottest EP rank's load. The
 * skew model (docs/MOE.md): model.moe_router_balance r is the hottest
 * expert's tokens over the mean; the EP rank holding it is assumed to hold
 * average experts beside it, so its n = E/ep experts take (r + n - 1) / n
 * times the mean; a capacity factor c caps every expert at c times its
 * share, (min(r, c) + (n - 1) min(1, c)) / n. The all-to-all and every
 * expert GEMM wait for that rank, so every rank is priced at it. */
static void moe_shape(const sc_config *cfg, sc_shape *sh) {
  const sc_model_cfg *m = &cfg->model;
  const sc_parallel_cfg *par = &cfg->parallel;
  sh->ep = par->ep > 0 ? par->ep : 1;
  sh->etp = par->etp > 0 ? par->etp : par->tp;
  sh->edp = 1;
  sh->dense_layers = m->layers;
  sh->moe_freq = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
  sh->hot = 1.0;
  if (m->moe_experts <= 0) {
    sh->etp = 1;
    return;
  }
  sh->moe = 1;
  sh->dense_layers = m->moe_dense_layers;
  sh->E = (double)m->moe_experts;
  sh->k = (double)(m->moe_topk > 0 ? m->moe_topk : 2);
  sh->fe = (double)(m->moe_ffn_hidden > 0 ? m->moe_ffn_hidden : m->ffn_hidden);
  sh->f_shared = (double)m->moe_shared_experts * sh->fe;
  sh->edp = par->tp * par->cp * par->dp / (sh->ep * sh->etp);
  sh->E_local = sh->E / (double)sh->ep;
  double r = m->moe_router_balance >= 1.0 ? m->moe_router_balance : 1.0;
  double c = m->moe_capacity_factor, n = sh->E_local;
  double top = c > 0 && c < r ? c : r, rest = c > 0 && c < 1.0 ? c : 1.0;
  sh->hot = (top + (n - 1.0) * rest) / n;
  double tokens = sh->b * sh->s_cp / (sh->sp ? sh->t : 1.0);
  sh->moe_tokens = sh->hot * sh->k * tokens * (double)sh->etp;
  double gated = sh->swiglu ? 3.0 : 2.0;
  sh->expert_params = sh->E_local * gated * sh->h * sh->fe / (double)sh->etp;
  sh->moe_layer_params = attn_params(sh) + sh->h * sh->E + sh->h +
                         (sh->f_shared > 0 ? mlp_params(sh, sh->f_shared) - sh->h : 0.0);
}

/* Layers per model chunk of the first, middle and last stages (see
 * sc_shape); nonzero when the split does not work out (a config that was not
 * resolved). */
static int split_layers(const sc_config *cfg, int64_t vpp, sc_shape *sh) {
  const sc_parallel_cfg *par = &cfg->parallel;
  int64_t L = cfg->model.layers, pp = par->pp;
  sh->short_first = pp > 1 && par->pp_embedding_in_split;
  sh->short_last = pp > 1 && par->pp_loss_in_split;
  if (pp > 1 && (par->pp_first_layers || par->pp_last_layers)) {
    int64_t F = par->pp_first_layers, Z = par->pp_last_layers;
    if (!F || !Z || F + Z > L) return 1;
    if (pp > 2 && (L - F - Z) % ((pp - 2) * vpp)) return 1;
    if (pp == 2 && F + Z != L) return 1;
    int64_t c = pp > 2 ? (L - F - Z) / ((pp - 2) * vpp) : 0;
    if (F % vpp || Z % vpp) {
      /* torchtitan's split (config.c, resolve_pipeline_split): every chunk
       * c layers but the outermost two, short by what the ends lack. */
      if (pp < 3 || vpp < 2 || F > c * vpp || Z > c * vpp || c * vpp - F >= c ||
          c * vpp - Z >= c)
        return 1;
      sh->lpc_first = sh->lpc_mid = sh->lpc_last = c;
      sh->short_first = (int)(c * vpp - F);
      sh->short_last = (int)(c * vpp - Z);
    } else {
      sh->lpc_first = F / vpp;
      sh->lpc_last = Z / vpp;
      sh->lpc_mid = c;
    }
  } else {
    int64_t units = L + sh->short_first + sh->short_last;
    if (units % (pp * vpp)) return 1;
    sh->lpc_first = sh->lpc_mid = sh->lpc_last = units / (pp * vpp);
  }
  sh->lpc_max = sh->lpc_first > sh->lpc_mid ? sh->lpc_first : sh->lpc_mid;
  if (sh->lpc_last > sh->lpc_max) sh->lpc_max = sh->lpc_last;
  return 0;
}

int64_t sc__shape_vs_layers(const sc_shape *sh, int64_t vs) {
  /* the stage holding vs; ZB-V splits evenly, so any stage of the row */
  int64_t s = vs % sh->pp;
  int64_t n = s == 0 ? sh->lpc_first : s == sh->pp - 1 ? sh->lpc_last : sh->lpc_mid;
  if (vs == 0) n -= sh->short_first;
  if (vs == sh->pp * sh->vpp - 1) n -= sh->short_last;
  return n;
}

int64_t sc__shape_vs_first_layer(const sc_shape *sh, int64_t vs) {
  int64_t pp = sh->pp, c = vs / pp, s = vs % pp;
  int64_t row = pp == 1 ? sh->lpc_first : sh->lpc_first + sh->lpc_last + (pp - 2) * sh->lpc_mid;
  int64_t at = c * row + (s == 0 ? 0 : sh->lpc_first + (s - 1) * sh->lpc_mid);
  return vs > 0 ? at - sh->short_first : at;
}

int sc__shape_init(sc_ctx *ctx, const sc_config *cfg, sc_shape *sh) {
  memset(sh, 0, sizeof *sh);
  const sc_model_cfg *m = &cfg->model;
  const sc_parallel_cfg *par = &cfg->parallel;
  sh->cfg = cfg;
  sh->hw = sc__config_gpu(cfg, &sh->hw_own);
  int64_t vpp = par->vpp > 0 ? par->vpp : 1;
  int64_t per_step = cfg->training.micro_batch * par->dp;
  if (!sh->hw || par->tp < 1 || par->pp < 1 || par->dp < 1 || par->cp < 1 ||
      cfg->training.micro_batch < 1 || m->layers < 1 || m->heads < 1 || m->hidden < 1 ||
      per_step < 1 || cfg->training.global_batch % per_step || vpp > 64 ||
      m->seq_len % par->cp || split_layers(cfg, vpp, sh))
    return sc__error(ctx, SC_EINVAL,
                     "%s: the config was not resolved (sizes, divisibility, known gpu)",
                     cfg->origin);
  sh->tp = par->tp;
  sh->pp = par->pp;
  sh->dp = par->dp;
  sh->cp = par->cp;
  sh->vpp = vpp;
  sh->layers = m->layers;
  sh->m = cfg->training.global_batch / per_step;

  sh->b = (double)cfg->training.micro_batch;
  sh->s = (double)m->seq_len;
  sh->h = (double)m->hidden;
  sh->a = (double)m->heads;
  sh->g = (double)(m->kv_heads > 0 ? m->kv_heads : m->heads);
  sh->d = m->head_dim > 0 ? (double)m->head_dim : sh->h / sh->a;
  sh->qd = sh->a * sh->d;
  sh->s_cp = sh->s / (double)par->cp;
  /* Hierarchical CP: the all-to-all runs among the CP ranks that share a
   * node (the largest divisor of cp whose TP x CP block fits a node and
   * that splits the TP rank's heads), the ring across those groups. */
  sh->cp_in = par->cp;
  if (par->cp_comm == SC_CP_A2A_P2P) {
    int64_t gpn = cfg->cluster.gpus_per_node > 0 ? cfg->cluster.gpus_per_node : 1;
    sh->cp_in = 1;
    for (int64_t k = par->cp; k > 1; k--)
      if (par->cp % k == 0 && k * par->tp <= gpn && (m->heads / par->tp) % k == 0) {
        sh->cp_in = k;
        break;
      }
  }
  sh->f = (double)(m->ffn_hidden > 0 ? m->ffn_hidden : 4 * m->hidden);
  sh->t = (double)par->tp;
  sh->g_rank = sh->g >= sh->t ? sh->g / sh->t : 1.0;
  sh->qkv_out = sh->qd + 2.0 * sh->g_rank * sh->t * sh->d;
  sh->attn_qk = sh->attn_v = sh->qd;
  if (m->mla_kv_lora_rank > 0) {
    sh->mla = 1;
    sh->q_lora = (double)m->mla_q_lora_rank;
    sh->kv_lora = (double)m->mla_kv_lora_rank;
    sh->rope = (double)(m->mla_rope_dim > 0 ? m->mla_rope_dim : 64);
    sh->dv = m->mla_v_head_dim > 0 ? (double)m->mla_v_head_dim : sh->d;
    sh->dq = sh->d + sh->rope;
    sh->g = sh->a;
    sh->g_rank = sh->a / sh->t;
    sh->attn_qk = sh->a * sh->dq;
    sh->attn_v = sh->a * sh->dv;
    sh->qkv_out = sh->a * (sh->dq + sh->d + sh->dv);
  }
  /* Megatron pads the vocabulary to a multiple of 128 * tp. */
  double mult = 128.0 * sh->t;
  sh->v = ceil((double)m->vocab / mult) * mult;
  sh->sp = par->sequence_parallel && par->tp > 1;
  sh->shard = sh->sp ? sh->t : 1.0;
  sh->swiglu = m->activation == SC_ACT_SWIGLU;
  sh->relu2 = m->activation == SC_ACT_RELU2;
  sh->vshape = par->schedule == SC_SCHED_ZBV || par->schedule == SC_SCHED_DUALPIPEV;
  sh->dual = par->schedule == SC_SCHED_DUALPIPE;
  sh->tied = m->tied_embeddings;
  sh->dropout = m->dropout > 0;

  sh->elem_bytes = sc__precision_elem_bytes(cfg->training.precision);
  /* Megatron-LM reduces bf16 training's gradients in fp32 (its main grads;
   * fp8 is a GEMM precision over bf16 parameters, so the same), fp32's in
   * fp32, fp16's in fp16: the memory model's gradient bytes. */
  sh->grad_bytes = cfg->training.precision == SC_PREC_FP16 ? 2.0 : 4.0;

  sh->layer_params = layer_params(sh);
  sh->rc_modules = sc__recompute_modules(cfg);
  sh->rc = cfg->training.recompute == SC_RECOMPUTE_SELECTIVE ? sh->rc_modules : 0;
  moe_shape(cfg, sh);
  if (sh->moe && (sh->edp < 1 || sh->edp * sh->ep * sh->etp != par->tp * par->cp * par->dp))
    return sc__error(ctx, SC_EINVAL, "%s: the config was not resolved (expert grid)",
                     cfg->origin);
  sh->embed_params = sh->v * sh->h / sh->t;
  sh->norm_params = 2.0 * sh->h;
  sc__model_flops(cfg, &sh->model_flops, &sh->hw_flops);
  return SC_OK;
}

double sc__shape_stage_expert_params(const sc_shape *sh, int64_t stage) {
  double n = 0;
  for (int64_t c = 0; c < sc__shape_chunks(sh); c++) {
    int64_t vs = sc__shape_vstage(sh, stage, c);
    n += (double)sc__shape_moe_layers_in(sh, sc__shape_vs_first_layer(sh, vs),
                                         sc__shape_vs_layers(sh, vs));
  }
  return n * sh->expert_params;
}

int64_t sc__shape_fsdp_shard_ranks(const sc_shape *sh) {
  const sc_parallel_cfg *par = &sh->cfg->parallel;
  return (par->fsdp_shard > 0 ? par->fsdp_shard : par->dp) * sh->cp;
}

int64_t sc__shape_fsdp_expert_ranks(const sc_shape *sh) {
  if (!sh->moe) return 0;
  /* The EDP group is the ranks of a stage with the same expert-grid
   * position jj % (ep etp); the shard group those with the same tp rank in
   * one block of fsdp_shard x cp: the same ranks exactly when ep etp = tp
   * and the block is the whole stage. */
  if ((double)(sh->ep * sh->etp) == sh->t && sc__shape_fsdp_shard_ranks(sh) == sh->dp * sh->cp) return 0;
  return sh->edp;
}

double sc__shape_stage_params(const sc_shape *sh, int64_t stage) {
  int64_t last_vs = sh->pp * sh->vpp - 1;
  double params = 0;
  for (int64_t c = 0; c < sc__shape_chunks(sh); c++) {
    int64_t vs = sc__shape_vstage(sh, stage, c);
    int64_t nl = sc__shape_vs_layers(sh, vs);
    int64_t nm = sc__shape_moe_layers_in(sh, sc__shape_vs_first_layer(sh, vs), nl);
    params += sh->layer_params * (double)(nl - nm) +
              (sh->moe_layer_params + sh->expert_params) * (double)nm;
    if (vs == 0) params += sh->embed_params;
    /* The LM head: its own matrix, or with tied embeddings a copy kept on
     * the last stage and synchronised (shared when one stage holds both). */
    if (vs == last_vs && (!sh->tied || !sc__shape_ends_together(sh))) params += sh->embed_params;
    if (vs == last_vs) params += sh->norm_params;
  }
  return params;
}
