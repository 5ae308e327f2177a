/* test_moe.c: mixture of experts (src/synth/moe.c, the MoE parts of
 * model/shape.c, model/memory.c, cost/comm_ep.c and the engine's expert
 * groups): token counts and imbalance, all-to-all sizes per layer and per EP
 * rank, expert FLOPs, memory terms, DeepEP's price, folded == unfolded and
 * merged == unmerged on EP configs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost/cost_int.h"
#include "input/config_int.h"
#include "model/memory_int.h"
#include "sctest.h"
#include "sctest_pipe.h"

static sc_ctx *ctx;

static int setup(void **state) {
  (void)state;
  return sc_test_ctx_new(&ctx);
}

static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

/* Mixtral 8x7B cut to 4 layers of 1,024 tokens on 32 H100s (4 nodes): TP2
 * PP2 DP8 with SP, EP 4 (ETP 1: the EP group is 4 consecutive GPUs of one
 * node), batch 32, bf16, distributed optimizer. */
static void small_moe(sc_config *cfg) {
  sc_test_example(cfg);
  assert_int_equal(sc_model_preset(ctx, cfg, "mixtral-8x7b"), 0);
  cfg->model.layers = 4;
  cfg->model.seq_len = 1024;
  cfg->training.global_batch = 32;
  cfg->training.micro_batch = 1;
  cfg->training.precision = SC_PREC_BF16;
  cfg->training.recompute = SC_RECOMPUTE_NONE;
  cfg->parallel.tp = 2;
  cfg->parallel.pp = 2;
  cfg->parallel.dp = 0;
  cfg->parallel.ep = 4;
  cfg->parallel.etp = 1;
  cfg->parallel.sequence_parallel = 1;
  cfg->parallel.distributed_optimizer = 1;
  sc__strlcpy(cfg->cluster.gpu, "h100-sxm", sizeof cfg->cluster.gpu);
  cfg->cluster.num_gpus = 32;
  cfg->cluster.nodes = 0;
}

static void resolve(sc_config *cfg) {
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
}

static void shape(const sc_config *cfg, sc_shape *sh) {
  if (sc__shape_init(ctx, cfg, sh)) fail_msg("shape: %s", sc_errmsg(ctx));
}

static void assert_near(double got, double want, double rel) {
  if (!(fabs(got - want) <= rel * fabs(want)))
    fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* The expert grid, tokens per local expert, expert parameters. */
static void test_shape_tokens(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  resolve(&cfg);
  sc_shape sh;
  shape(&cfg, &sh);
  assert_true(sh.moe);
  assert_int_equal(sh.ep, 4);
  assert_int_equal(sh.etp, 1);
  assert_int_equal(sh.edp, 4); /* tp*cp*dp = 2*1*8 = 16 over ep*etp = 4 */
  assert_near(sh.E_local, 2.0, 0);
  assert_near(sh.hot, 1.0, 0);
  /* 1,024 tokens over TP 2 (SP) = 512 per rank, k = 2 copies each: the EP
   * rank's two experts receive 1,024 copies, 512 each. */
  assert_near(sh.moe_tokens, 1024.0, 0);
  assert_near(sh.expert_params, 2.0 * 3.0 * 4096.0 * 14336.0, 0);
  /* ETP 2 gathers the copies of the two ETP ranks, each expert half as wide. */
  cfg.parallel.etp = 2;
  resolve(&cfg);
  shape(&cfg, &sh);
  assert_int_equal(sh.edp, 2);
  assert_near(sh.moe_tokens, 2048.0, 0);
  assert_near(sh.expert_params, 2.0 * 3.0 * 4096.0 * 14336.0 / 2.0, 0);
  /* Every second layer MoE (1-based, decoder_sparse_step 2): layers 1, 3. */
  cfg.model.moe_layer_freq = 2;
  resolve(&cfg);
  shape(&cfg, &sh);
  assert_false(sc__shape_is_moe_layer(&sh, 0));
  assert_true(sc__shape_is_moe_layer(&sh, 1));
  assert_false(sc__shape_is_moe_layer(&sh, 2));
  assert_int_equal(sc__shape_moe_layers_in(&sh, 0, 4), 2);
  assert_int_equal(sc__shape_moe_layers_in(&sh, 2, 2), 1);
  cfg.model.moe_layer_freq = 0;
  /* Dense layers keep the dense parameters; stage params add up. */
  cfg.model.moe_dense_layers = 1;
  resolve(&cfg);
  shape(&cfg, &sh);
  assert_false(sc__shape_is_moe_layer(&sh, 0));
  assert_true(sc__shape_is_moe_layer(&sh, 1));
  double s0 = sc__shape_stage_params(&sh, 0), e0 = sc__shape_stage_expert_params(&sh, 0);
  assert_near(e0, sh.expert_params, 0); /* layers 0 (dense) and 1 (MoE) */
  assert_near(s0 - e0, sh.layer_params + sh.moe_layer_params + sh.embed_params, 1e-12);
}

/* The skew model: (r + n - 1) / n on n local experts, capped by the
 * capacity factor. */
static void test_imbalance(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  cfg.model.moe_router_balance = 2.0;
  resolve(&cfg);
  sc_shape sh;
  shape(&cfg, &sh);
  assert_near(sh.hot, (2.0 + 1.0) / 2.0, 1e-15);
  assert_near(sh.moe_tokens, 1.5 * 1024.0, 1e-15);
  cfg.model.moe_capacity_factor = 1.25;
  resolve(&cfg);
  shape(&cfg, &sh);
  assert_near(sh.hot, (1.25 + 1.0) / 2.0, 1e-15);
  cfg.model.moe_capacity_factor = 0.5; /* every expert dropped to half */
  resolve(&cfg);
  shape(&cfg, &sh);
  assert_near(sh.hot, 0.5, 1e-15);
  /* EP 1: one rank holds all eight experts. */
  cfg.model.moe_capacity_factor = 0;
  cfg.parallel.ep = 1;
  resolve(&cfg);
  shape(&cfg, &sh);
  assert_near(sh.hot, (2.0 + 7.0) / 8.0, 1e-15);
}

/* Builds cfg unmerged and checks it. */
static void build(sc_config *cfg, sc_cost *cost, sc_shape *sh, sc_workload *wl) {
  resolve(cfg);
  assert_int_equal(sc__cost_init(ctx, cfg, cost), 0);
  if (sc_test_build(ctx, cfg, cost, 0, sh, wl)) fail_msg("build: %s", sc_errmsg(ctx));
  if (sc__workload_check(ctx, wl)) fail_msg("check: %s", sc_errmsg(ctx));
}

/* Ops of stream st with label l on program p, and their bytes. */
static size_t count(const sc_program *p, int st, int l, double *bytes) {
  size_t n = 0;
  for (size_t i = 0; i < p->nops[st]; i++)
    if (p->ops[st][i].label == l) {
      n++;
      if (bytes) *bytes = p->ops[st][i].work;
    }
  return n;
}

/* Dispatch and combine: an all-to-all each per MoE layer and micro-batch,
 * forward and backward, of the k routed copies of the rank's tokens (times
 * the hottest rank's load); expert grads reduced over edp. */
static void test_a2a_sizes(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  cfg.model.moe_router_balance = 1.6;
  sc_cost cost;
  sc_shape sh;
  sc_workload wl;
  build(&cfg, &cost, &sh, &wl);
  const sc_program *p = &wl.progs[0];
  double bytes = 0;
  /* 2 layers per stage, 4 micro-batches per replica (32 / (1 x 8)) */
  size_t m = 4, layers = 2;
  assert_int_equal(count(p, SC_ST_EP, SC_L_DISPATCH, &bytes), 2 * m * layers);
  assert_int_equal(count(p, SC_ST_EP, SC_L_COMBINE, NULL), 2 * m * layers);
  double hot = (1.6 + 1.0) / 2.0;
  assert_near(bytes, hot * 2.0 * 512.0 * 4096.0 * 2.0, 1e-15);
  for (size_t i = 0; i < p->nops[SC_ST_EP]; i++) {
    assert_int_equal(p->ops[SC_ST_EP][i].coll, SC_COLL_ALLTOALL);
    assert_int_equal(p->ops[SC_ST_EP][i].group, SC_GRP_EP);
    assert_int_equal(p->ops[SC_ST_EP][i].cat, SC_CAT_EP);
  }
  /* Expert grads go over the expert-data-parallel group, the rest over DP. */
  size_t edp = 0;
  for (size_t i = 0; i < p->nops[SC_ST_DP]; i++)
    if (p->ops[SC_ST_DP][i].group == SC_GRP_EDP) edp++;
  assert_true(edp > 0);
  sc__workload_free(ctx, &wl);

  /* ETP 2: each way adds an ETP all-gather / reduce-scatter of the copies
   * of both ETP ranks. */
  small_moe(&cfg);
  cfg.parallel.etp = 2;
  build(&cfg, &cost, &sh, &wl);
  p = &wl.progs[0];
  assert_int_equal(count(p, SC_ST_EP, SC_L_ETP_AG, &bytes), 2 * m * layers);
  assert_near(bytes, 2.0 * 2.0 * 512.0 * 4096.0 * 2.0, 1e-15);
  assert_int_equal(count(p, SC_ST_EP, SC_L_ETP_RS, NULL), 2 * m * layers);
  sc__workload_free(ctx, &wl);

  /* The all-gather dispatcher: every token of the EP group. */
  small_moe(&cfg);
  cfg.parallel.moe_dispatcher = SC_MOE_ALLGATHER;
  build(&cfg, &cost, &sh, &wl);
  p = &wl.progs[0];
  assert_int_equal(count(p, SC_ST_EP, SC_L_DISPATCH, &bytes), 2 * m * layers);
  assert_near(bytes, 4.0 * 512.0 * 4096.0 * 2.0, 1e-15);
  sc__workload_free(ctx, &wl);
}

/* Megatron's MoE FLOPs: per token and MoE layer 2 h (k f_moe + f_shared) x
 * 3 (gated) forward, times 3 for the step; attention and logits as dense. */
static void test_expert_flops(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  cfg.model.moe_shared_experts = 1;
  cfg.model.moe_dense_layers = 1;
  resolve(&cfg);
  double mf, hf;
  sc__model_flops(&cfg, &mf, &hf);
  double h = 4096, s = 1024, L = 4, f = 14336, k = 2, V = 32000, B = 32;
  double qd = h, g = 8 * 128.0;
  double attn = 2 * h * (qd + 2 * g) + 4 * s * qd + 2 * qd * h;
  double dense_mlp = 2 * h * f * 3, moe_mlp = 2 * h * (k * f + f) * 3;
  double want = 3 * B * s * (L * attn + dense_mlp + 3 * moe_mlp + 2 * h * V);
  assert_near(mf, want, 1e-12);
  assert_near(hf, mf, 0); /* no recompute */
  /* MoE every second layer after the dense one: layers 1 and 3. */
  cfg.model.moe_layer_freq = 2;
  resolve(&cfg);
  sc__model_flops(&cfg, &mf, &hf);
  assert_near(mf, 3 * B * s * (L * attn + 2 * dense_mlp + 2 * moe_mlp + 2 * h * V), 1e-12);
}

/* Memory: expert states over edp, the rest over dp x cp; routed-token
 * activations of the hottest rank; dispatch buffers. */
static void test_memory_terms(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  resolve(&cfg);
  sc_shape sh;
  shape(&cfg, &sh);
  sc_memory_opts o;
  sc__memory_opts_of(&cfg, &o);
  sc_memory_model mm;
  assert_int_equal(sc__memory_model_init(ctx, &mm, &sh, &o), 0);
  assert_near(mm.opt_bpp, 12.0 / 8.0, 1e-15);        /* dp x cp = 8 */
  assert_near(mm.expert_opt_bpp, 12.0 / 4.0, 1e-15); /* edp = 4 */
  sc_memory_stage st;
  sc__memory_stage(&mm, 0, &st);
  double pe = sc__shape_stage_expert_params(&sh, 0), pd = st.params - pe;
  assert_near(st.optimizer_bytes, pd * 12.0 / 8.0 + pe * 12.0 / 4.0, 1e-12);
  assert_near(st.weights_bytes, 2.0 * st.params, 1e-12);
  /* An MoE layer stores the dense attention half, the router's fp32
   * probabilities and per routed copy h + 2 fe + fe + h elements. */
  double e = 2.0, M = sh.moe_tokens, fe = 14336;
  double dense_ffn = (e * 1024 * 14336 * 2 + e * 1024 * 14336) / 2.0;
  double want = sc__memory_layer_act(&sh, SC_RECOMPUTE_NONE, 1) - dense_ffn +
                e * M * (2 * 4096 + 3 * fe) + 4.0 * 512 * 8;
  assert_near(mm.act_moe_layer, want, 1e-12);
  assert_near(mm.moe_buffer_bytes, 2.0 * 2.0 * 512 * 4096 * e, 1e-15);
  /* Imbalance grows the hottest rank's routed activations. */
  cfg.model.moe_router_balance = 3.0;
  resolve(&cfg);
  shape(&cfg, &sh);
  sc_memory_model hot;
  assert_int_equal(sc__memory_model_init(ctx, &hot, &sh, &o), 0);
  assert_near(hot.act_moe_layer - mm.act_moe_layer, e * 1024 * (2 * 4096 + 3 * fe), 1e-12);
}

/* DeepEP: NVLink for copies inside the node, one RDMA copy per remote node
 * a token reaches. */
static void test_deepep_price(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  cfg.parallel.moe_dispatcher = SC_MOE_DEEPEP;
  resolve(&cfg);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  assert_true(cost.moe_deepep);
  double lat = (cost.comm_params.launch_us + cost.comm_params.p2p_latency_us) * 1e3;
  double bytes = 64e6;
  sc_placement in = {8, 1, 8, 1};
  assert_near(sc__ep_deepep_ns(&cost, bytes, &in) - lat,
              bytes * 7.0 / 8.0 / (cost.nvlink_bytes_per_ns * 0.78), 1e-12);
  /* 32 ranks on 4 nodes, 8 experts (2 per node), top 2: a token misses a
   * node with probability 6/8 * 5/7, so it reaches 3 * (1 - 15/28) remote
   * nodes on average. */
  sc_placement out = {32, 4, 8, 1};
  double rdma = bytes / 2.0 * 3.0 * (1.0 - 30.0 / 56.0) / cost.nic_bytes_per_ns;
  double nvl = bytes * 7.0 / 8.0 / (cost.nvlink_bytes_per_ns * 0.78);
  assert_near(sc__ep_deepep_ns(&cost, bytes, &out) - lat, fmax(rdma, nvl), 1e-12);
}

/* Runs cfg folded and unfolded, merged and not: identical step times and
 * breakdowns. */
static void assert_fold_merge_exact(sc_config *cfg) {
  sc_result r[4];
  for (int k = 0; k < 4; k++) {
    sc_config c = *cfg;
    c.simulation.fold = k < 2;
    resolve(&c);
    sc_cost cost;
    assert_int_equal(sc__cost_init(ctx, &c, &cost), 0);
    sc_shape sh;
    sc_workload wl;
    if (sc_test_build(ctx, &c, &cost, k % 2 ? SC_WL_MERGE : 0, &sh, &wl))
      fail_msg("build: %s", sc_errmsg(ctx));
    if (sc__workload_check(ctx, &wl)) fail_msg("check: %s", sc_errmsg(ctx));
    sc_engine_result er;
    if (sc_test_engine(ctx, &c, &wl, &cost, NULL, NULL, &er)) fail_msg("run: %s", sc_errmsg(ctx));
    r[k].step_time_s = (double)er.step_ns;
    for (int cat = 0; cat < SC_CAT_COUNT; cat++) r[k].breakdown_s[cat] = er.breakdown_s[cat];
    sc__workload_free(ctx, &wl);
  }
  for (int k = 1; k < 4; k++) {
    if (r[k].step_time_s != r[0].step_time_s)
      fail_msg("variant %d: step %.0f ns != %.0f ns", k, r[k].step_time_s, r[0].step_time_s);
    for (int cat = 0; cat < SC_CAT_COUNT; cat++)
      if (fabs(r[k].breakdown_s[cat] - r[0].breakdown_s[cat]) > 1e-9)
        fail_msg("variant %d: %s %.12g != %.12g", k, sc_category_key(cat), r[k].breakdown_s[cat],
                 r[0].breakdown_s[cat]);
  }
  assert_true(r[0].breakdown_s[SC_CAT_EP] > 0 || cfg->parallel.ep == 1);
}

static void test_fold_and_merge(void **state) {
  (void)state;
  for (int k = 0; k < 14; k++) {
    sc_config cfg;
    small_moe(&cfg);
    cfg.model.moe_router_balance = 1.3;
    switch (k) {
    case 1: cfg.parallel.etp = 2; break; /* EP group strided over a node */
    case 2: cfg.parallel.ep = 8, cfg.parallel.etp = 2; break; /* EP across nodes */
    case 3: cfg.parallel.moe_dispatcher = SC_MOE_DEEPEP, cfg.parallel.ep = 8; break;
    case 4: cfg.parallel.moe_dispatcher = SC_MOE_ALLGATHER; break;
    case 5:
      cfg.parallel.moe_a2a_overlap = 1;
      cfg.model.moe_shared_experts = 1;
      cfg.model.moe_dense_layers = 1;
      cfg.model.moe_layer_freq = 2;
      break;
    case 6: cfg.parallel.schedule = SC_SCHED_ZB_H1, cfg.training.recompute = SC_RECOMPUTE_FULL; break;
    case 7:
      cfg.parallel.vpp = 2, cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
      cfg.parallel.overlap_param_gather = 1;
      cfg.parallel.tp_comm_overlap = 1;
      break;
    case 8:
      cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
      sc__strlcpy(cfg.training.recompute_modules, "layernorm,moe",
                  sizeof cfg.training.recompute_modules);
      cfg.parallel.moe_dispatcher = SC_MOE_DEEPEP, cfg.parallel.ep = 8;
      cfg.parallel.moe_a2a_overlap = 1;
      break;
    case 9: /* context parallelism: the expert grid spans tp x cp x dp */
      cfg.parallel.cp = 2, cfg.parallel.ep = 8, cfg.parallel.etp = 2;
      cfg.model.moe_shared_experts = 1, cfg.parallel.moe_shared_expert_overlap = 1;
      break;
    case 10: /* FSDP with EP across nodes: dense over the shard group, experts over EDP */
      cfg.parallel.zero_stage = 3, cfg.parallel.ep = 8, cfg.parallel.etp = 2;
      cfg.parallel.moe_dispatcher = SC_MOE_DEEPEP;
      break;
    case 11: /* hybrid FSDP with EP, prefetch 2, full recompute */
      cfg.parallel.zero_stage = 3, cfg.parallel.fsdp_shard = 2, cfg.parallel.fsdp_prefetch = 2;
      cfg.training.recompute = SC_RECOMPUTE_FULL;
      break;
    case 12: /* DualPipe's F&B chunks, EP across nodes */
      cfg.parallel.schedule = SC_SCHED_DUALPIPE, cfg.parallel.ep = 8, cfg.parallel.etp = 2;
      break;
    case 13:
      cfg.parallel.schedule = SC_SCHED_DUALPIPEV;
      cfg.parallel.moe_dispatcher = SC_MOE_DEEPEP, cfg.parallel.ep = 8;
      break;
    }
    assert_fold_merge_exact(&cfg);
  }
}

/* small_moe with ZeRO-3 / FSDP in place of the distributed optimizer. */
static void small_fsdp_moe(sc_config *cfg) {
  small_moe(cfg);
  cfg->parallel.zero_stage = 3;
  cfg->parallel.distributed_optimizer = 0;
}

/* FSDP / ZeRO-3 with expert parallelism (Megatron-FSDP): on small_moe (TP2
 * PP2 DP8, EP 4, ETP 1, edp 4; stage 0 runs the embedding and two MoE
 * layers, 4 micro-batches) every MoE unit is gathered twice per
 * micro-batch, forward and backward, as a dense all-gather over the shard
 * group and an expert one over EDP, and its gradients reduce-scattered over
 * each; hybrid sharding all-reduces the dense shards only; with ep x etp =
 * tp (EP 2) the two groups are the same ranks and one gather serves the
 * unit; without resharding after the forward no backward gathers. */
static void test_fsdp_ep_collectives(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    sc_config cfg;
    small_fsdp_moe(&cfg);
    if (k == 1) cfg.parallel.fsdp_shard = 2; /* hybrid: 4 replicas */
    if (k == 2) cfg.parallel.ep = 2;         /* EDP group = shard group */
    if (k == 3) cfg.parallel.fsdp_reshard_after_forward = 0;
    sc_cost cost;
    sc_shape sh;
    sc_workload wl;
    build(&cfg, &cost, &sh, &wl);
    int own = k != 2;
    assert_int_equal(sc__shape_fsdp_expert_ranks(&sh), own ? 4 : 0);
    const sc_program *p = &wl.progs[0];
    size_t ag[2][2] = {{0, 0}, {0, 0}}; /* [dense, expert][fwd, bwd] */
    for (size_t i = 0; i < p->nops[SC_ST_FSDP]; i++) {
      const sc_op *op = &p->ops[SC_ST_FSDP][i];
      assert_int_equal(op->coll, SC_COLL_ALLGATHER);
      int ex = op->group == SC_GRP_EDP;
      if (!ex) assert_int_equal(op->group, SC_GRP_SHARD);
      ag[ex][op->phase != SC_PH_FWD]++;
      if (ex) assert_near(op->work, 2.0 * sh.expert_params, 1e-15);
      else if (op->work != 2.0 * sh.embed_params)
        assert_near(op->work, 2.0 * (sh.moe_layer_params + (own ? 0.0 : sh.expert_params)), 1e-15);
    }
    size_t rs[2] = {0, 0}, ar = 0;
    for (size_t i = 0; i < p->nops[SC_ST_DP]; i++) {
      const sc_op *op = &p->ops[SC_ST_DP][i];
      if (op->label == SC_L_FSDP_RS) {
        int ex = op->group == SC_GRP_EDP;
        rs[ex]++;
        if (ex) assert_near(op->work, 4.0 * sh.expert_params, 1e-15);
      } else {
        assert_int_equal(op->label, SC_L_FSDP_AR);
        assert_int_equal(op->group, SC_GRP_REPLICA);
        ar++;
      }
    }
    size_t mb = 4, units = mb * 3, moe = mb * 2; /* embedding + 2 layers */
    assert_int_equal(ag[0][0], units);
    assert_int_equal(ag[0][1], k == 3 ? 0 : units);
    assert_int_equal(ag[1][0], own ? moe : 0);
    assert_int_equal(ag[1][1], own && k != 3 ? moe : 0);
    assert_int_equal(rs[0], units);
    assert_int_equal(rs[1], own ? moe : 0);
    assert_int_equal(ar, k == 1 ? units : 0);
    sc__workload_free(ctx, &wl);
  }
}

/* FSDP with EP memory: dense states over the shard group (dp x cp = 8, or
 * fsdp_shard), the routed experts' over edp = 4, and the gathered units
 * (current + prefetched) at the size of an MoE layer with its local
 * experts; the memory counter track peaks at the estimate. */
static void test_fsdp_ep_memory(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    sc_config cfg;
    small_fsdp_moe(&cfg);
    if (k == 1) cfg.parallel.fsdp_shard = 2;
    resolve(&cfg);
    sc_shape sh;
    shape(&cfg, &sh);
    sc_memory_opts o;
    sc__memory_opts_of(&cfg, &o);
    sc_memory_model mm;
    assert_int_equal(sc__memory_model_init(ctx, &mm, &sh, &o), 0);
    double shard = k == 1 ? 2.0 : 8.0;
    assert_near(mm.weight_bpp, 2.0 / shard, 1e-15);
    assert_near(mm.grad_bpp, 4.0 / shard, 1e-15);
    assert_near(mm.opt_bpp, 12.0 / shard, 1e-15);
    assert_near(mm.expert_weight_bpp, 2.0 / 4.0, 1e-15);
    assert_near(mm.expert_grad_bpp, 4.0 / 4.0, 1e-15);
    assert_near(mm.expert_opt_bpp, 12.0 / 4.0, 1e-15);
    sc_memory_stage st, plain;
    sc__memory_stage(&mm, 0, &st);
    double pe = sc__shape_stage_expert_params(&sh, 0), pd = st.params - pe;
    assert_near(st.weights_bytes, pd * 2.0 / shard + pe * 2.0 / 4.0, 1e-12);
    /* the same config without ZeRO-3: the difference in transients is the
     * gathered units, one unit's unsharded grads in the parameter dtype and
     * in the reduce dtype, and the root unit (stage 0: the embedding), 16-bit */
    sc_config c0 = cfg;
    c0.parallel.zero_stage = 0;
    c0.parallel.fsdp_shard = 0;
    resolve(&c0);
    sc_shape sh0;
    shape(&c0, &sh0);
    sc_memory_opts o0;
    sc__memory_opts_of(&c0, &o0);
    sc_memory_model mm0;
    assert_int_equal(sc__memory_model_init(ctx, &mm0, &sh0, &o0), 0);
    sc__memory_stage(&mm0, 0, &plain);
    double unit = sh.moe_layer_params + sh.expert_params;
    assert_near(st.transient_bytes - plain.transient_bytes,
                2.0 * unit * 2.0 + unit * (2.0 + 4.0) + sh.embed_params * 2.0, 1e-12);
    /* the trace's memory counter peaks at the estimate on every stage */
    double peak = 0, want = 0;
    int bad = sc_test_counter_peak_mismatch(ctx, &cfg, &peak, &want);
    if (bad != -1)
      fail_msg("case %d stage %d: counter peak %.4f GiB, estimate %.4f GiB", k, bad, peak, want);
  }
}

/* The dispatchers and the overlap move step time the expected way. */
static void test_dispatcher_effects(void **state) {
  (void)state;
  double t[4];
  for (int k = 0; k < 4; k++) {
    sc_config cfg;
    small_moe(&cfg);
    cfg.parallel.ep = 8, cfg.parallel.etp = 2; /* EP across two nodes */
    if (k == 1) cfg.parallel.moe_dispatcher = SC_MOE_DEEPEP;
    if (k == 2) cfg.parallel.moe_a2a_overlap = 1;
    if (k == 3) cfg.model.moe_router_balance = 2.0;
    resolve(&cfg);
    sc_result r;
    if (sc_simulate(ctx, &cfg, NULL, NULL, &r)) fail_msg("simulate: %s", sc_errmsg(ctx));
    t[k] = r.step_time_s;
  }
  assert_true(t[1] < t[0]); /* DeepEP dedups the RDMA copies */
  assert_true(t[2] < t[0]); /* hidden all-to-alls */
  assert_true(t[3] > t[0]); /* the hottest rank sets the pace */
  /* shared experts overlapping the dispatch: faster, never below the
   * model without shared experts */
  double u[3];
  for (int k = 0; k < 3; k++) {
    sc_config cfg;
    small_moe(&cfg);
    cfg.parallel.ep = 8, cfg.parallel.etp = 2;
    cfg.model.moe_shared_experts = k > 0;
    cfg.parallel.moe_shared_expert_overlap = k == 2;
    resolve(&cfg);
    sc_result r;
    if (sc_simulate(ctx, &cfg, NULL, NULL, &r)) fail_msg("simulate: %s", sc_errmsg(ctx));
    u[k] = r.step_time_s;
  }
  assert_true(u[2] < u[1] && u[2] > u[0]);
}

/* DualPipe and DualPipe-V hide the all-to-alls of their F&B chunks: less
 * exposed EP time than ZB-H1 (the same split backward, no overlap) on the
 * same model, EP across two nodes; the pairs alone, without
 * moe_a2a_overlap. */
static void test_dualpipe_hides_ep(void **state) {
  (void)state;
  double ep[3];
  static const sc_schedule k3[3] = {SC_SCHED_ZB_H1, SC_SCHED_DUALPIPE, SC_SCHED_DUALPIPEV};
  for (int k = 0; k < 3; k++) {
    sc_config cfg;
    small_moe(&cfg);
    cfg.parallel.ep = 8, cfg.parallel.etp = 2;
    cfg.training.global_batch = 64; /* 8 micro-batches: a steady phase of F&B chunks */
    cfg.parallel.schedule = k3[k];
    resolve(&cfg);
    sc_result r;
    if (sc_simulate(ctx, &cfg, NULL, NULL, &r)) fail_msg("simulate: %s", sc_errmsg(ctx));
    ep[k] = r.breakdown_s[SC_CAT_EP];
  }
  if (!(ep[1] < 0.8 * ep[0] && ep[2] < 0.8 * ep[0]))
    fail_msg("exposed EP: zb-h1 %.6f s, dualpipe %.6f s, dualpipev %.6f s", ep[0], ep[1], ep[2]);
}

/* Cross-field rules of the MoE keys. */
static void test_config_rules(void **state) {
  (void)state;
  sc_config cfg;
  small_moe(&cfg);
  assert_int_equal(sc_config_set(ctx, &cfg, "parallel.ep=3"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "does not divide model.moe_experts"));
  small_moe(&cfg);
  assert_int_equal(sc_config_set(ctx, &cfg, "model.moe_topk=9"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "exceeds model.moe_experts"));
  small_moe(&cfg);
  cfg.parallel.etp = 2;
  cfg.cluster.num_gpus = 8; /* tp2 pp2 dp2: 4 ranks per stage < ep*etp = 8 */
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "does not divide the ranks of a pipeline stage"));
  small_moe(&cfg);
  assert_int_equal(sc_config_set(ctx, &cfg, "parallel.sequence_parallel=false"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "needs parallel.sequence_parallel"));
  sc_test_example(&cfg);
  cfg.parallel.ep = 2;
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "needs model.moe_experts"));
}

/* Every MoE preset runs (folded, merged) on a layout that fits it. */
static void test_presets_run(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int64_t tp, pp, ep, gpus, batch;
  } runs[] = {
      {"mixtral-8x7b", 2, 4, 8, 64, 256},       {"mixtral-8x22b", 2, 8, 8, 128, 256},
      {"qwen3-30b-a3b", 1, 2, 8, 64, 256},      {"qwen3-235b-a22b", 2, 8, 32, 256, 1024},
      {"deepseek-v3", 1, 16, 64, 2048, 4096},   {"gpt-oss-120b", 1, 4, 8, 64, 256},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    sc_config cfg;
    sc_test_example(&cfg);
    assert_int_equal(sc_model_preset(ctx, &cfg, runs[i].name), 0);
    sc__strlcpy(cfg.cluster.gpu, "h100-sxm", sizeof cfg.cluster.gpu);
    cfg.training.precision = SC_PREC_BF16;
    cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
    cfg.training.global_batch = runs[i].batch;
    cfg.parallel.tp = runs[i].tp;
    cfg.parallel.pp = runs[i].pp;
    cfg.parallel.ep = runs[i].ep;
    cfg.parallel.etp = 1;
    cfg.parallel.sequence_parallel = runs[i].tp > 1;
    cfg.parallel.distributed_optimizer = 1;
    cfg.cluster.num_gpus = runs[i].gpus;
    cfg.cluster.nodes = 0;
    if (sc_config_resolve(ctx, &cfg)) fail_msg("%s: %s", runs[i].name, sc_errmsg(ctx));
    sc_result r;
    if (sc_simulate(ctx, &cfg, NULL, NULL, &r)) fail_msg("%s: %s", runs[i].name, sc_errmsg(ctx));
    assert_true(r.step_time_s > 0 && r.mfu > 0.05 && r.mfu < 0.9);
  }
}

/* Multi-head latent attention: FLOPs per Megatron's MLA formula (over the
 * full s x s), parameters of the down/up projections, the projections' ops,
 * and exact folding / merging. */
static void mla_small(sc_config *cfg) {
  small_moe(cfg);
  cfg->model.kv_heads = 0;
  cfg->model.heads = 16;
  cfg->model.head_dim = 128;
  cfg->model.mla_kv_lora_rank = 512;
  cfg->model.mla_q_lora_rank = 1024;
  cfg->model.mla_rope_dim = 64;
  cfg->model.mla_v_head_dim = 128;
}

static void test_mla(void **state) {
  (void)state;
  sc_config cfg;
  mla_small(&cfg);
  resolve(&cfg);
  double mf, hf;
  sc__model_flops(&cfg, &mf, &hf);
  double h = 4096, s = 1024, a = 16, d = 128, r = 64, dv = 128, ql = 1024, kl = 512;
  double f = 14336, k = 2, V = 32000, B = 32, L = 4;
  double attn = 2 * ql * (h + a * (d + r)) + 2 * h * (kl + r) + 2 * kl * a * (d + dv) +
                2 * s * a * (d + r + dv) + 2 * a * dv * h;
  double moe = 2 * h * k * f * 3;
  assert_near(mf, 3 * B * s * (L * (attn + moe) + 2 * h * V), 1e-12);
  sc_shape sh;
  shape(&cfg, &sh);
  assert_true(sh.mla);
  assert_near(sh.attn_qk, a * (d + r), 0);
  assert_near(sh.attn_v, a * dv, 0);
  /* the up projections split over TP 2, the down ones replicated */
  double want = h * ql + ql + ql * a * (d + r) / 2 + h * (kl + r) + kl + kl * a * (d + dv) / 2 +
                a * dv * h / 2 + 5 * h;
  assert_near(sh.moe_layer_params - (h * 8 + h), want, 1e-12); /* less router and FC2 bias */
  /* ops: per layer and micro-batch forward one down projection, the SP
   * gather of the latents, two up projections */
  sc_cost cost;
  sc_workload wl;
  build(&cfg, &cost, &sh, &wl);
  const sc_program *p = &wl.progs[0];
  size_t fwd = 0;
  for (size_t i = 0; i < p->nops[SC_ST_COMPUTE]; i++)
    if (p->ops[SC_ST_COMPUTE][i].label == SC_L_MLA_DOWN &&
        p->ops[SC_ST_COMPUTE][i].phase == SC_PH_FWD)
      fwd++;
  assert_int_equal(fwd, 4 * 2); /* 4 micro-batches x 2 layers */
  assert_int_equal(count(p, SC_ST_COMPUTE, SC_L_QKV, NULL), 0);
  sc__workload_free(ctx, &wl);
  for (int v = 0; v < 3; v++) {
    mla_small(&cfg);
    if (v == 1) cfg.model.mla_q_lora_rank = 0; /* queries from the hidden state */
    if (v == 2) cfg.parallel.schedule = SC_SCHED_ZB_H1, cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
    assert_fold_merge_exact(&cfg);
  }
  /* context parallelism over MLA: the ring moves each head's up-projected
   * K (d + rope) and V (dv), Ulysses the up-projected Q, K, V; exact
   * folding and merging */
  static const sc_cp_comm comms[] = {SC_CP_P2P, SC_CP_A2A, SC_CP_ALLGATHER};
  for (int c = 0; c < 3; c++) {
    mla_small(&cfg);
    cfg.parallel.cp = 2;
    cfg.parallel.cp_comm = comms[c];
    resolve(&cfg);
    shape(&cfg, &sh);
    build(&cfg, &cost, &sh, &wl);
    p = &wl.progs[0];
    double tokens = s / 2, e = 2, heads = a / 2, bytes = 0;
    if (comms[c] == SC_CP_P2P) {
      assert_true(count(p, SC_ST_CP, SC_L_CP_KV, &bytes) > 0);
      assert_near(bytes, tokens * heads * (d + r + dv) * e, 1e-12);
    } else if (comms[c] == SC_CP_A2A) {
      assert_true(count(p, SC_ST_CP, SC_L_CP_A2A, &bytes) > 0);
      double qkv = tokens * a * (2 * (d + r) + dv) / 2 * e, out = tokens * a * dv / 2 * e;
      assert_true(fabs(bytes - qkv) < 1e-9 * qkv || fabs(bytes - out) < 1e-9 * out);
    } else {
      assert_true(count(p, SC_ST_CP, SC_L_CP_AG, &bytes) > 0);
      assert_near(bytes, s * heads * (d + r + dv) * e, 1e-12);
    }
    sc__workload_free(ctx, &wl);
    mla_small(&cfg);
    cfg.parallel.cp = 2;
    cfg.parallel.cp_comm = comms[c];
    assert_fold_merge_exact(&cfg);
  }
  /* recompute_modules mla_up_proj: the up projections re-run once per
   * layer and micro-batch in the backward, their FLOPs in the hardware
   * count; the activations lose the up-projected Q, K, V; exact folding */
  double act[2], hwf[2];
  size_t rec[2];
  for (int v = 0; v < 2; v++) {
    mla_small(&cfg);
    cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
    sc__strlcpy(cfg.training.recompute_modules, v ? "core_attn,mla_up_proj" : "core_attn",
                sizeof cfg.training.recompute_modules);
    resolve(&cfg);
    shape(&cfg, &sh);
    act[v] = sc__memory_moe_layer_act(&sh, SC_RECOMPUTE_SELECTIVE, 1);
    double m2;
    sc__model_flops(&cfg, &m2, &hwf[v]);
    build(&cfg, &cost, &sh, &wl);
    p = &wl.progs[0];
    rec[v] = 0;
    for (size_t i = 0; i < p->nops[SC_ST_COMPUTE]; i++)
      rec[v] += p->ops[SC_ST_COMPUTE][i].phase == SC_PH_RECOMPUTE &&
                (p->ops[SC_ST_COMPUTE][i].label == SC_L_MLA_Q_UP ||
                 p->ops[SC_ST_COMPUTE][i].label == SC_L_MLA_KV_UP);
    sc__workload_free(ctx, &wl);
  }
  assert_int_equal(rec[0], 0);
  assert_int_equal(rec[1], 4 * 2 * 2); /* 4 micro-batches x 2 layers x (Q, KV) */
  assert_near(act[0] - act[1], 2 * s * a * (2 * (d + r) + dv) / 2, 1e-12);
  assert_near(hwf[1] - hwf[0], B * s * L * (2 * ql * a * (d + r) + 2 * kl * a * (d + dv)), 1e-12);
  mla_small(&cfg);
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  sc__strlcpy(cfg.training.recompute_modules, "mla_up_proj,layernorm",
              sizeof cfg.training.recompute_modules);
  assert_fold_merge_exact(&cfg);
  small_moe(&cfg);
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  sc__strlcpy(cfg.training.recompute_modules, "mla_up_proj", sizeof cfg.training.recompute_modules);
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "mla_up_proj needs multi-head latent attention"));
  /* rules */
  mla_small(&cfg);
  cfg.model.kv_heads = 4;
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "must equal model.heads"));
  mla_small(&cfg);
  cfg.model.mla_kv_lora_rank = 0;
  assert_int_equal(sc_config_resolve(ctx, &cfg), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "needs model.mla_kv_lora_rank"));
}

/* Selective recompute by module: layernorm re-runs the norms, moe_act the
 * experts' activation, moe the whole MoE FFN (its all-to-alls too); each
 * drops what it re-makes from the stored activations. */
static void test_recompute_modules(void **state) {
  (void)state;
  double act[4], flops[4];
  size_t recompute_ops[4], a2a[4];
  static const char *const mods[] = {"core_attn", "layernorm", "moe_act", "moe"};
  for (int k = 0; k < 4; k++) {
    sc_config cfg;
    small_moe(&cfg);
    cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
    sc__strlcpy(cfg.training.recompute_modules, mods[k], sizeof cfg.training.recompute_modules);
    sc_cost cost;
    sc_shape sh;
    sc_workload wl;
    build(&cfg, &cost, &sh, &wl);
    const sc_program *p = &wl.progs[0];
    recompute_ops[k] = 0;
    for (size_t i = 0; i < p->nops[SC_ST_COMPUTE]; i++)
      recompute_ops[k] += p->ops[SC_ST_COMPUTE][i].phase == SC_PH_RECOMPUTE;
    a2a[k] = p->nops[SC_ST_EP];
    sc__workload_free(ctx, &wl);
    sc_memory_opts o;
    sc__memory_opts_of(&cfg, &o);
    sc_memory_model mm;
    assert_int_equal(sc__memory_model_init(ctx, &mm, &sh, &o), 0);
    act[k] = mm.act_moe_layer;
    double hf;
    sc__model_flops(&cfg, &flops[k], &hf);
    flops[k] = hf - flops[k];
  }
  /* per layer and micro-batch: attention (1), two norms (2), the activation
   * (1), the MoE forward (router GEMM and scores, permute, three expert
   * kernels, un-permute: 7 ops) */
  size_t per = 4 * 2;
  assert_int_equal(recompute_ops[0], per * 1);
  assert_int_equal(recompute_ops[1], per * 2);
  assert_int_equal(recompute_ops[2], per * 1);
  assert_int_equal(recompute_ops[3], per * 7);
  assert_int_equal(a2a[3], a2a[0] + per * 2); /* the re-run dispatch and combine */
  assert_true(flops[0] > 0 && flops[1] == 0 && flops[2] == 0 && flops[3] > 0);
  double e = 2.0, sbh = 1024 * 4096;
  double lse = 4.0 * 32 * 1024 / 2; /* FlashAttention's log-sum-exp, kept without core_attn */
  assert_near(act[1], act[0] + lse - 2 * e * sbh / 2, 1e-12);
  assert_near(act[2], act[0] + lse - e * 1024 * 14336, 1e-12);
  assert_true(act[3] < act[2]);
}

/* Each MoE preset has the shape its released config.json gives
 * (tests/hf, read through model.hf_config). */
static void test_presets_match_hf(void **state) {
  (void)state;
  static const char *const names[] = {"mixtral-8x7b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                                      "deepseek-v3", "gpt-oss-120b"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    sc_config p, h;
    sc_test_example(&p);
    assert_int_equal(sc_model_preset(ctx, &p, names[i]), 0);
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "model: {hf_config: \"%s/tests/hf/%s.json\", seq_len: %lld}\n",
             sc_test_source_dir(), names[i], (long long)p.model.seq_len);
    sc_test_example(&h);
    if (sc_config_load_string(ctx, &h, "hf.yaml", yaml, strlen(yaml)))
      fail_msg("%s: %s", names[i], sc_errmsg(ctx));
    const sc_model_cfg *a = &p.model, *b = &h.model;
    int64_t ffn_a = a->ffn_hidden, ffn_b = b->ffn_hidden;
    if (a->moe_dense_layers == 0) ffn_a = ffn_b = 0; /* the dense width is unused */
    if (a->layers != b->layers || a->hidden != b->hidden || a->heads != b->heads ||
        a->kv_heads != b->kv_heads || ffn_a != ffn_b || a->vocab != b->vocab ||
        a->moe_experts != b->moe_experts || a->moe_topk != b->moe_topk ||
        a->moe_ffn_hidden != b->moe_ffn_hidden || a->moe_shared_experts != b->moe_shared_experts ||
        a->moe_dense_layers != b->moe_dense_layers || a->mla_kv_lora_rank != b->mla_kv_lora_rank ||
        a->mla_q_lora_rank != b->mla_q_lora_rank || a->tied_embeddings != b->tied_embeddings)
      fail_msg("%s: preset and config.json differ", names[i]);
    int64_t da = a->head_dim ? a->head_dim : a->hidden / a->heads;
    int64_t db = b->head_dim ? b->head_dim : b->hidden / b->heads;
    assert_int_equal(da, db);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape_tokens),   cmocka_unit_test(test_imbalance),
      cmocka_unit_test(test_a2a_sizes),      cmocka_unit_test(test_expert_flops),
      cmocka_unit_test(test_memory_terms),   cmocka_unit_test(test_deepep_price),
      cmocka_unit_test(test_fold_and_merge), cmocka_unit_test(test_dispatcher_effects),
      cmocka_unit_test(test_dualpipe_hides_ep),
      cmocka_unit_test(test_config_rules),   cmocka_unit_test(test_presets_run),
      cmocka_unit_test(test_mla),            cmocka_unit_test(test_recompute_modules),
      cmocka_unit_test(test_presets_match_hf), cmocka_unit_test(test_fsdp_ep_collectives),
      cmocka_unit_test(test_fsdp_ep_memory),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
