/* test_workload.c: workload synthesis: invariants of the per-stage programs,
 * op counts per layer, p2p pairing, the model-FLOPs formulas, and merged
 * workloads (SC_WL_MERGE) replaying exactly like unmerged ones. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost/cost_int.h"
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

static void build(sc_config *cfg, sc_workload *wl) {
  sc_cost cost;
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
  sc_shape sh;
  assert_int_equal(sc__cost_init(ctx, cfg, &cost), 0);
  if (sc_test_build(ctx, cfg, &cost, 0, &sh, wl)) fail_msg("build: %s", sc_errmsg(ctx));
  if (sc__workload_check(ctx, wl)) fail_msg("check: %s", sc_errmsg(ctx));
}

static size_t count(const sc_program *p, int stream, int label) {
  size_t n = 0;
  for (size_t i = 0; i < p->nops[stream]; i++) n += p->ops[stream][i].label == label;
  return n;
}

/* Default example: TP8 without SP, PP16, 1F1B, full recompute. */
static void test_default_program_shape(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  sc_workload wl;
  build(&cfg, &wl);
  assert_int_equal(wl.nprogs, 16);
  int64_t m = 1536 / 8, layers = 96 / 16;
  const sc_program *mid = &wl.progs[5];
  /* QKV GEMMs: forward + recompute + dgrad + wgrad per layer and micro-batch. */
  assert_int_equal(count(mid, SC_ST_COMPUTE, SC_L_QKV), (size_t)(4 * layers * m));
  /* TP all-reduces: 2 forward + 2 recompute + 2 backward per layer-mb. */
  assert_int_equal(count(mid, SC_ST_TP, SC_L_TP_AR), (size_t)(6 * layers * m));
  /* Middle stages receive and send every micro-batch in both directions. */
  assert_int_equal(mid->nops[SC_ST_FWD_RECV], (size_t)m);
  assert_int_equal(mid->nops[SC_ST_FWD_SEND], (size_t)m);
  assert_int_equal(mid->nops[SC_ST_BWD_RECV], (size_t)m);
  assert_int_equal(wl.progs[0].nops[SC_ST_FWD_RECV], 0);
  assert_int_equal(wl.progs[15].nops[SC_ST_FWD_SEND], 0);
  /* Tied embeddings: first and last stage sync embedding grads. */
  assert_int_equal(count(&wl.progs[0], SC_ST_DP, SC_L_EMBED_AR), 1);
  assert_int_equal(count(&wl.progs[15], SC_ST_DP, SC_L_EMBED_AR), 1);
  assert_int_equal(count(mid, SC_ST_DP, SC_L_EMBED_AR), 0);
  assert_int_equal(count(mid, SC_ST_COMPUTE, SC_L_OPTIM), 1);
  /* DP all-reduce buckets cover exactly the last stage's parameters (the
   * fullest stage: layers, LM head copy, final norm), fp16 grads = 2 bytes. */
  const sc_program *last = &wl.progs[15];
  double bytes = 0;
  for (size_t i = 0; i < last->nops[SC_ST_DP]; i++)
    if (last->ops[SC_ST_DP][i].label == SC_L_GRAD_AR) bytes += last->ops[SC_ST_DP][i].work;
  assert_true(fabs(bytes / 2.0 - wl.params_per_stage_max) < 1e-6 * wl.params_per_stage_max);
  sc__workload_free(ctx, &wl);
}

static void test_sp_uses_ag_rs(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  cfg.parallel.sequence_parallel = 1;
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  sc_workload wl;
  build(&cfg, &wl);
  const sc_program *mid = &wl.progs[3];
  assert_int_equal(count(mid, SC_ST_TP, SC_L_TP_AR), 0);
  assert_true(count(mid, SC_ST_TP, SC_L_TP_AG) > 0);
  assert_true(count(mid, SC_ST_TP, SC_L_TP_RS) > 0);
  sc__workload_free(ctx, &wl);
}

static void test_interleaved_programs_check(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  cfg.parallel.vpp = 3;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  cfg.parallel.distributed_optimizer = 1;
  cfg.parallel.overlap_param_gather = 1;
  sc_workload wl;
  build(&cfg, &wl);
  /* With the wrap-around, stage 0 receives activations for chunks 1..v-1. */
  assert_int_equal(wl.progs[0].nops[SC_ST_FWD_RECV], (size_t)(2 * 192));
  sc__workload_free(ctx, &wl);
}

/* Megatron's closed forms for GPT (MHA, f = 4h): model 72*B*s*L*h^2*(1 + s/6h +
 * V/12Lh), hardware with full recompute 96*B*s*L*h^2*(1 + s/6h + V/16Lh). */
static void test_flops_formulas(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  double B = 1536, s = 2048, L = 96, h = 12288, V = 51200;
  double model = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  double hw = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  double m, w;
  sc__model_flops(&cfg, &m, &w);
  assert_true(fabs(m - model) < 1e-9 * model);
  assert_true(fabs(w - hw) < 1e-9 * hw);
}

static void test_rejects_bad_pipeline(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  cfg.parallel.vpp = 5; /* 96 layers do not split into 16 * 5 chunks */
  sc_shape sh;
  assert_int_equal(sc__shape_init(ctx, &cfg, &sh), SC_EINVAL);
}

/* ------------------------------------------------------------ merging */

typedef struct replayed {
  sc_engine_result r;
  size_t ops[SC_ST_COUNT]; /* ops of the built programs, all stages */
  int64_t nmerged;
} replayed;

/* Builds cfg (resolved) with flags, checks and replays it. */
static void replay(sc_config *cfg, const sc_cost *cost, unsigned flags, replayed *out) {
  sc_workload wl;
  sc_shape sh;
  memset(out, 0, sizeof *out);
  if (sc_test_build(ctx, cfg, cost, flags, &sh, &wl)) fail_msg("build: %s", sc_errmsg(ctx));
  if (sc__workload_check(ctx, &wl)) fail_msg("check: %s", sc_errmsg(ctx));
  for (int64_t s = 0; s < wl.nprogs; s++) {
    for (int st = 0; st < SC_ST_COUNT; st++) out->ops[st] += wl.progs[s].nops[st];
    out->nmerged += wl.progs[s].nmerged;
  }
  if (sc_test_engine(ctx, cfg, &wl, cost, NULL, NULL, &out->r))
    fail_msg("run: %s", sc_errmsg(ctx));
  sc__workload_free(ctx, &wl);
}

/* The merged workload of cfg replays bit for bit like the unmerged one (step
 * time, every breakdown category, ops and events) with fewer compute ops.
 * Returns the merged build's TP-stream ops (0 when every TP collective was
 * inlined). */
static size_t assert_merge_exact(sc_config *cfg) {
  sc_cost cost;
  if (sc_config_resolve(ctx, cfg)) fail_msg("resolve: %s", sc_errmsg(ctx));
  assert_int_equal(sc__cost_init(ctx, cfg, &cost), 0);
  replayed plain, merged;
  replay(cfg, &cost, 0, &plain);
  replay(cfg, &cost, SC_WL_MERGE, &merged);
  assert_int_equal(plain.nmerged, 0);
  assert_true(plain.r.step_ns > 0);
  if (merged.r.step_ns != plain.r.step_ns)
    fail_msg("merged step %lld ns != unmerged %lld ns", (long long)merged.r.step_ns,
             (long long)plain.r.step_ns);
  for (int c = 0; c < SC_CAT_COUNT; c++)
    if (merged.r.breakdown_s[c] != plain.r.breakdown_s[c])
      fail_msg("%s: merged %.17g s != unmerged %.17g s", sc_category_key(c),
               merged.r.breakdown_s[c], plain.r.breakdown_s[c]);
  assert_int_equal(merged.r.ops, plain.r.ops);
  assert_int_equal(merged.r.events, plain.r.events);
  assert_true(merged.ops[SC_ST_COMPUTE] < plain.ops[SC_ST_COMPUTE]);
  assert_true(merged.nmerged > 0);
  /* Only compute and TP work is merged: the other streams are untouched. */
  for (int st = SC_ST_DP; st < SC_ST_COUNT; st++) assert_int_equal(merged.ops[st], plain.ops[st]);
  return merged.ops[SC_ST_TP];
}

/* A small GPT (sctest.h: TP2 PP4 1F1B on 64 A100s); callers adjust. */
static void small_gpt(sc_config *cfg) { assert_int_equal(sc_test_small_gpt(ctx, cfg), 0); }

/* Without SP a receive all-gathers its slices over TP: those collectives stay
 * on the TP stream, ordered after the inlined ones. */
static void test_merge_1f1b_receive_gathers(void **state) {
  (void)state;
  sc_config cfg;
  small_gpt(&cfg);
  size_t tp_ops = assert_merge_exact(&cfg);
  /* One gather per received message: 8 micro-batches (batch 64 over DP 8),
   * forward on stages 1-3, backward on stages 0-2. */
  assert_int_equal(tp_ops, (size_t)(2 * 3 * 8));
}

static void test_merge_interleaved_sp_distopt_selective(void **state) {
  (void)state;
  sc_config cfg;
  small_gpt(&cfg);
  cfg.parallel.vpp = 2;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  cfg.parallel.sequence_parallel = 1;
  cfg.parallel.distributed_optimizer = 1;
  cfg.parallel.overlap_param_gather = 1;
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  assert_int_equal(assert_merge_exact(&cfg), 0); /* every TP collective inlined */
}

static void test_merge_full_recompute_sp_overlap(void **state) {
  (void)state;
  sc_config cfg;
  small_gpt(&cfg);
  cfg.parallel.tp = 4;
  cfg.parallel.sequence_parallel = 1;
  cfg.parallel.tp_comm_overlap = 1;
  cfg.training.recompute = SC_RECOMPUTE_FULL;
  cfg.training.micro_batch = 2;
  assert_int_equal(assert_merge_exact(&cfg), 0);
}

static void test_merge_gpipe_unfused_no_overlap(void **state) {
  (void)state;
  sc_config cfg;
  small_gpt(&cfg);
  cfg.parallel.schedule = SC_SCHED_GPIPE;
  cfg.training.attention = SC_ATTN_UNFUSED;
  cfg.parallel.overlap_grad_reduce = 0;
  cfg.training.recompute = SC_RECOMPUTE_FULL;
  assert_merge_exact(&cfg);
}

/* GQA and SwiGLU, interleaved without SP (receive gathers two passes back),
 * distributed optimizer with overlapped parameter gathers, full recompute. */
static void test_merge_llama_interleaved(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
  cfg.training.recompute = SC_RECOMPUTE_FULL;
  cfg.parallel.vpp = 2;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  cfg.parallel.overlap_param_gather = 1;
  assert_merge_exact(&cfg);
}

/* Cases where TP collectives are not inlined, only compute ops merged:
 * unfolded (several members per group), TP spanning nodes (the NIC is
 * shared), and no TP with NIC sharing off. */
static void test_merge_without_inlining(void **state) {
  (void)state;
  sc_config cfg;
  small_gpt(&cfg);
  cfg.simulation.fold = 0;
  cfg.parallel.pp = 2;
  cfg.cluster.num_gpus = 16;
  cfg.training.global_batch = 32;
  assert_true(assert_merge_exact(&cfg) > 0);

  small_gpt(&cfg);
  cfg.parallel.tp = 8;
  cfg.parallel.pp = 2;
  cfg.parallel.sequence_parallel = 1;
  cfg.cluster.gpus_per_node = 4;
  cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
  assert_true(assert_merge_exact(&cfg) > 0);

  small_gpt(&cfg);
  cfg.parallel.tp = 1;
  cfg.parallel.pp = 4;
  cfg.simulation.share_links = 0;
  cfg.model.tied_embeddings = 0;
  assert_int_equal(assert_merge_exact(&cfg), 0);
}

/* Context parallelism: the exchanges per layer and micro-batch for every
 * cp_comm, their sizes, the attention's share of the work, and that every
 * other op runs on s/cp tokens. Small GPT, TP2 PP4, cp 4 (dp 2), no
 * recompute: 8 micro-batches, 6 layers per stage. */
static void test_cp_exchanges(void **state) {
  (void)state;
  static const struct {
    sc_cp_comm comm;
    int coll, group;
    size_t fwd, bwd; /* collectives per layer pass */
  } cases[] = {
      {SC_CP_P2P, SC_COLL_SENDRECV, SC_GRP_CP, 3, 4},       /* cp - 1 forward, + the last dK/dV */
      {SC_CP_A2A, SC_COLL_ALLTOALL, SC_GRP_CP, 2, 2},       /* in and out */
      {SC_CP_ALLGATHER, SC_COLL_ALLGATHER, SC_GRP_CP, 1, 1}, /* + one reduce-scatter backward */
  };
  sc_workload one;
  sc_config base;
  small_gpt(&base);
  base.model.seq_len = 8192;
  base.model.heads = 32; /* 16 per TP rank: the all-to-all splits them over cp 4 */
  base.training.global_batch = 16;
  build(&base, &one);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_config cfg = base;
    cfg.parallel.dp = 0; /* derived again: num_gpus / (tp pp cp) */
    cfg.parallel.cp = 4;
    cfg.parallel.cp_comm = cases[i].comm;
    sc_workload wl;
    build(&cfg, &wl);
    const sc_program *p = &wl.progs[1];
    size_t n = p->nops[SC_ST_CP], fwd = 0, bwd = 0, rs = 0;
    double kv = 2.0 * 1 * (8192.0 / 4) * 16 /* KV heads per TP rank */ * 64 * 2;
    for (size_t k = 0; k < n; k++) {
      const sc_op *op = &p->ops[SC_ST_CP][k];
      assert_int_equal(op->cat, SC_CAT_CP);
      if (op->coll == SC_COLL_REDUCESCATTER) {
        rs++;
        continue;
      }
      assert_int_equal(op->coll, cases[i].coll);
      assert_int_equal(op->group, cases[i].group);
      if (op->phase == SC_PH_FWD) fwd++;
      else bwd++;
      if (cases[i].comm == SC_CP_P2P && op->label == SC_L_CP_KV) assert_true(op->work == kv);
      if (cases[i].comm == SC_CP_ALLGATHER) assert_true(op->work == 4.0 * kv);
    }
    size_t passes = 8 * 6; /* micro-batches x layers of the stage */
    assert_int_equal(fwd, cases[i].fwd * passes);
    assert_int_equal(bwd, cases[i].bwd * passes);
    assert_int_equal(rs, cases[i].comm == SC_CP_ALLGATHER ? passes : 0);
    /* Per micro-batch (8 here, 2 without CP: dp 2 instead of 8), attention
     * does 1/cp of the work and the GEMMs run on s/cp tokens. */
    double attn = 0, attn1 = 0, gemm = 0, gemm1 = 0;
    for (size_t k = 0; k < p->nops[SC_ST_COMPUTE]; k++) {
      const sc_op *op = &p->ops[SC_ST_COMPUTE][k];
      if (op->kind == SC_OP_ATTN) attn += op->work;
      if (op->label == SC_L_FC1) gemm += op->work;
    }
    for (size_t k = 0; k < one.progs[1].nops[SC_ST_COMPUTE]; k++) {
      const sc_op *op = &one.progs[1].ops[SC_ST_COMPUTE][k];
      if (op->kind == SC_OP_ATTN) attn1 += op->work;
      if (op->label == SC_L_FC1) gemm1 += op->work;
    }
    attn /= 8.0, gemm /= 8.0, attn1 /= 2.0, gemm1 /= 2.0;
    if (!(attn < 0.5 * attn1 && attn > 0.2 * attn1)) /* ~1/4, kernel efficiency apart */
      fail_msg("%s: attention %.0f ns vs %.0f ns without CP", sc_enum_name(SC_ENUM_CP_COMM, cases[i].comm), attn, attn1);
    assert_true(gemm < 0.3 * gemm1 && gemm > 0.2 * gemm1);
    sc__workload_free(ctx, &wl);
  }
  sc__workload_free(ctx, &one);
}

/* FSDP / ZeRO-3 on the small Llama (TP4 PP2 DP4, 4 layers and 4
 * micro-batches per stage): per micro-batch and unit one parameter
 * all-gather forward and one backward (none backward without resharding),
 * one gradient reduce-scatter over the shard group, plus an all-reduce of the
 * shard across replicas with hybrid sharding; fp8 gathers halve the bytes;
 * no Megatron buckets or distributed-optimizer gathers. */
static void test_fsdp_collectives(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
    cfg.training.global_batch = 16; /* 4 micro-batches per replica */
    cfg.parallel.zero_stage = 3;
    if (k == 1) cfg.parallel.fsdp_reshard_after_forward = 0;
    if (k == 2) cfg.parallel.fsdp_shard = 2;
    if (k == 3) {
      cfg.training.precision = SC_PREC_FP8;
      cfg.parallel.fsdp_fp8_allgather = 1;
    }
    sc_workload wl;
    build(&cfg, &wl);
    sc_shape sh;
    assert_int_equal(sc__shape_init(ctx, &cfg, &sh), 0);
    const sc_program *p = &wl.progs[0]; /* stage 0: embedding + 4 layers */
    size_t ag_f = 0, ag_b = 0, rs = 0, ar = 0, other = 0;
    for (size_t i = 0; i < p->nops[SC_ST_FSDP]; i++) {
      const sc_op *op = &p->ops[SC_ST_FSDP][i];
      assert_int_equal(op->group, SC_GRP_SHARD);
      assert_int_equal(op->coll, SC_COLL_ALLGATHER);
      if (op->phase == SC_PH_FWD) ag_f++;
      else ag_b++;
      if (op->work != sh.embed_params * (k == 3 ? 1.0 : 2.0))
        assert_true(op->work == sh.layer_params * (k == 3 ? 1.0 : 2.0));
    }
    for (size_t i = 0; i < p->nops[SC_ST_DP]; i++) {
      const sc_op *op = &p->ops[SC_ST_DP][i];
      if (op->label == SC_L_FSDP_RS) {
        rs++;
        assert_int_equal(op->group, SC_GRP_SHARD);
      } else if (op->label == SC_L_FSDP_AR) {
        ar++;
        assert_int_equal(op->group, SC_GRP_REPLICA);
      } else {
        other++;
      }
    }
    size_t units = 4 * (4 + 1); /* micro-batches x (layers + embedding) */
    assert_int_equal(ag_f, units);
    assert_int_equal(ag_b, k == 1 ? 0 : units);
    assert_int_equal(rs, units);
    assert_int_equal(ar, k == 2 ? units : 0);
    assert_int_equal(other, 0);
    sc__workload_free(ctx, &wl);
  }
}

/* FP8: every linear layer's GEMM (QKV, projection, FC1, FC2; not the LM
 * head) is preceded by its cast, forward and data-grad; the recipes order
 * by bytes cast (delayed < rowwise-forward... checked as delayed <
 * tensorwise); squared-ReLU has the two GEMMs of an ungated FFN. */
static void test_fp8_casts_and_relu2(void **state) {
  (void)state;
  double cast_bytes[3] = {0, 0, 0};
  for (int r = 0; r < 3; r++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
    cfg.training.precision = SC_PREC_FP8;
    cfg.training.fp8_recipe = (sc_fp8_recipe)r;
    cfg.training.recompute = SC_RECOMPUTE_NONE;
    sc_workload wl;
    build(&cfg, &wl);
    const sc_program *p = &wl.progs[1]; /* the last stage: layers and the head */
    size_t casts = 0, linear = 0;
    for (size_t k = 0; k < p->nops[SC_ST_COMPUTE]; k++) {
      const sc_op *op = &p->ops[SC_ST_COMPUTE][k];
      if (op->label == SC_L_FP8_CAST) {
        casts++;
        cast_bytes[r] += op->work;
        assert_true(op->phase == SC_PH_FWD || op->phase == SC_PH_BWD ||
                    (r == SC_FP8_ROWWISE && op->phase == SC_PH_WGRAD));
      }
      if (op->kind == SC_OP_GEMM && op->phase != SC_PH_WGRAD &&
          (op->label == SC_L_QKV || op->label == SC_L_PROJ || op->label == SC_L_FC1 ||
           op->label == SC_L_FC2))
        linear++;
    }
    size_t wgrad_casts = r == SC_FP8_ROWWISE ? linear / 2 : 0; /* one per weight grad */
    assert_int_equal(casts, linear + wgrad_casts);
    sc__workload_free(ctx, &wl);
  }
  assert_true(cast_bytes[SC_FP8_DELAYED] < cast_bytes[SC_FP8_TENSORWISE]);
  sc_config cfg;
  assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
  cfg.model.activation = SC_ACT_RELU2;
  cfg.model.ffn_hidden = 0; /* 4h, as for an ungated FFN */
  sc_workload wl;
  build(&cfg, &wl);
  sc_shape sh;
  assert_int_equal(sc__shape_init(ctx, &cfg, &sh), 0);
  assert_true(sh.relu2 && !sh.swiglu && sh.f == 4.0 * sh.h);
  sc__workload_free(ctx, &wl);
}

/* parallel.tp_fp8_allgather (tensorwise FP8, TP4 with SP, both recompute
 * modes): every TP all-gather into an FP8 linear moves half the bytes (fp8,
 * not bf16), forward and backward; the LM head's stays 16-bit; the casts of
 * gathered inputs (the forward and recomputed QKV and FC1 inputs, the
 * backward output grads of the projection and FC2) shrink, every other cast and every GEMM is the
 * same; the ops are the same in number. Without SP the flag changes nothing. */
static void test_fp8_tp_allgather(void **state) {
  (void)state;
  for (int sp = 0; sp < 2; sp++) {
    sc_workload wl[2];
    for (int on = 0; on < 2; on++) {
      sc_config cfg;
      assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
      cfg.training.precision = SC_PREC_FP8;
      cfg.training.fp8_recipe = SC_FP8_TENSORWISE;
      cfg.parallel.sequence_parallel = sp;
      cfg.parallel.tp_fp8_allgather = on;
      build(&cfg, &wl[on]);
    }
    for (int s = 0; s < 2; s++) {
      const sc_program *a = &wl[0].progs[s], *b = &wl[1].progs[s];
      assert_int_equal(a->nops[SC_ST_TP], b->nops[SC_ST_TP]);
      assert_int_equal(a->nops[SC_ST_COMPUTE], b->nops[SC_ST_COMPUTE]);
      size_t halved = 0, smaller = 0;
      for (size_t k = 0; k < a->nops[SC_ST_TP]; k++) {
        const sc_op *x = &a->ops[SC_ST_TP][k], *y = &b->ops[SC_ST_TP][k];
        assert_int_equal(x->label, y->label);
        if (sp && x->coll == SC_COLL_ALLGATHER && x->label == SC_L_TP_AG && y->work != x->work) {
          assert_true(y->work == x->work / 2.0);
          halved++;
        } else {
          assert_true(y->work == x->work);
        }
      }
      for (size_t k = 0; k < a->nops[SC_ST_COMPUTE]; k++) {
        const sc_op *x = &a->ops[SC_ST_COMPUTE][k], *y = &b->ops[SC_ST_COMPUTE][k];
        assert_int_equal(x->label, y->label);
        assert_int_equal(x->phase, y->phase);
        int gathered = x->label == SC_L_FP8_CAST && sp &&
                       (((x->phase == SC_PH_FWD || x->phase == SC_PH_RECOMPUTE) && k + 1 < a->nops[SC_ST_COMPUTE] &&
                         (a->ops[SC_ST_COMPUTE][k + 1].label == SC_L_QKV ||
                          a->ops[SC_ST_COMPUTE][k + 1].label == SC_L_FC1)) ||
                        (x->phase == SC_PH_BWD && k + 1 < a->nops[SC_ST_COMPUTE] &&
                         (a->ops[SC_ST_COMPUTE][k + 1].label == SC_L_PROJ ||
                          a->ops[SC_ST_COMPUTE][k + 1].label == SC_L_FC2)));
        if (gathered) {
          assert_true(y->work < x->work);
          smaller++;
        } else if (y->work != x->work) {
          fail_msg("stage %d op %zu label %d phase %d next %d: %g vs %g", s, k, x->label, x->phase,
                   k + 1 < a->nops[SC_ST_COMPUTE] ? a->ops[SC_ST_COMPUTE][k + 1].label : -1,
                   x->work, y->work);
        }
      }
      if (sp) {
        assert_true(halved > 0 && smaller > 0);
      } else {
        assert_int_equal(halved, 0);
        assert_int_equal(smaller, 0);
      }
    }
    sc__workload_free(ctx, &wl[0]);
    sc__workload_free(ctx, &wl[1]);
  }
}

/* training.fused_projections=false (the small Llama: GQA, SwiGLU, TP4 with
 * SP, no recompute): per layer and micro-batch the QKV GEMM becomes three
 * (query, key, value widths) and FC1 two (gate, up) in every pass, the
 * gathers and reductions stay one each, and each backward sums the input
 * grads in one kernel of (parts + 1) x T x h 16-bit elements (an add of 3 x
 * T x h per extra part with training.eager). */
static void test_unfused_projections(void **state) {
  (void)state;
  for (int eager = 0; eager < 2; eager++) {
    sc_workload wl[2];
    sc_config cfg[2];
    sc_cost cost;
    for (int f = 0; f < 2; f++) {
      assert_int_equal(sc_test_small_llama(ctx, &cfg[f]), 0);
      cfg[f].parallel.sequence_parallel = 1;
      cfg[f].training.recompute = SC_RECOMPUTE_NONE;
      cfg[f].training.eager = eager;
      cfg[f].training.fused_projections = f; /* wl[1]: fused, the default */
      build(&cfg[f], &wl[f]);
    }
    assert_int_equal(sc__cost_init(ctx, &cfg[0], &cost), 0);
    sc_shape sh;
    assert_int_equal(sc__shape_init(ctx, &cfg[0], &sh), 0);
    double T = sh.b * sh.s_cp, act = T * sh.h * sh.elem_bytes;
    const sc_program *u = &wl[0].progs[0], *fu = &wl[1].progs[0];
    size_t g[2][2][3] = {{{0}}}; /* [fused][qkv, fc1][fwd, bwd, wgrad] GEMMs */
    size_t sums[2][2] = {{0}};
    for (int f = 0; f < 2; f++) {
      const sc_program *p = f ? fu : u;
      for (size_t k = 0; k < p->nops[SC_ST_COMPUTE]; k++) {
        const sc_op *op = &p->ops[SC_ST_COMPUTE][k];
        int which = op->label == SC_L_QKV ? 0 : op->label == SC_L_FC1 ? 1 : -1;
        if (which < 0) continue;
        if (op->kind == SC_OP_GEMM) {
          g[f][which][op->phase == SC_PH_FWD ? 0 : op->phase == SC_PH_BWD ? 1 : 2]++;
        } else {
          assert_int_equal(op->phase, SC_PH_BWD);
          sums[f][which]++;
          int parts = which ? 2 : 3;
          double bytes = eager ? 3.0 * (parts - 1) * act : (parts + 1.0) * act;
          assert_true(fabs(op->work - cost.compute->mem_ns(&cost, bytes)) < 1e-9 * op->work);
        }
      }
    }
    for (int ph = 0; ph < 3; ph++) {
      assert_true(g[1][0][ph] > 0);
      assert_int_equal(g[0][0][ph], 3 * g[1][0][ph]);
      assert_int_equal(g[0][1][ph], 2 * g[1][1][ph]);
    }
    assert_int_equal(sums[1][0] + sums[1][1], 0);
    assert_int_equal(sums[0][0], g[1][0][1]); /* one sum per backward */
    assert_int_equal(sums[0][1], g[1][1][1]);
    assert_int_equal(u->nops[SC_ST_TP], fu->nops[SC_ST_TP]);
    sc__workload_free(ctx, &wl[0]);
    sc__workload_free(ctx, &wl[1]);
  }
}

/* Merged == unmerged under context parallelism. */
static void test_merge_cp(void **state) {
  (void)state;
  for (int c = SC_CP_P2P; c <= SC_CP_A2A_P2P; c++) {
    sc_config cfg;
    small_gpt(&cfg);
    cfg.model.seq_len = 4096;
    cfg.model.heads = 32;
    cfg.parallel.cp = 4;
    cfg.parallel.cp_comm = (sc_cp_comm)c;
    cfg.parallel.sequence_parallel = 1;
    cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
    assert_merge_exact(&cfg);
  }
}

/* Merged == unmerged with FSDP (plain, hybrid, with TP and a zero-bubble
 * schedule). */
static void test_merge_fsdp(void **state) {
  (void)state;
  for (int k = 0; k < 3; k++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
    cfg.parallel.zero_stage = 3;
    if (k == 1) cfg.parallel.fsdp_shard = 2;
    if (k == 2) cfg.parallel.schedule = SC_SCHED_ZB_H1, cfg.parallel.fsdp_prefetch = 2;
    assert_merge_exact(&cfg);
  }
}

/* Merged == unmerged with host-memory offload: activation copies between
 * the layers (slow and fast links), the optimizer's copies and CPU step,
 * a GPU step of streamed states. */
static void test_merge_offload(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    sc_config cfg;
    assert_int_equal(sc_test_small_llama(ctx, &cfg), 0);
    cfg.cluster.num_gpus = 8;
    cfg.parallel.tp = 2;
    cfg.parallel.pp = 1;
    cfg.parallel.sequence_parallel = k != 3;
    cfg.training.recompute = SC_RECOMPUTE_NONE;
    if (k < 2) cfg.training.activation_offload_layers = 3;
    if (k == 1) cfg.cluster.host_link_gbps = 5000;
    if (k >= 1) cfg.training.optimizer_offload = 0.5;
    if (k == 3) cfg.training.optimizer_offload_cpu_step = 0;
    assert_merge_exact(&cfg);
  }
}

/* Uneven stages, flexible interleaving, ZB-H1 and ZB-V (W passes, V
 * placement, non-blocking p2p) with SP and the distributed optimizer. */
static void test_merge_new_schedules(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    sc_config cfg;
    small_gpt(&cfg);
    cfg.parallel.sequence_parallel = 1;
    cfg.parallel.distributed_optimizer = 1;
    cfg.training.recompute = SC_RECOMPUTE_SELECTIVE;
    if (k == 0) cfg.model.layers = 22; /* derived 5 + 6 + 6 + 5 */
    if (k == 1) cfg.parallel.schedule = SC_SCHED_ZB_H1;
    if (k == 2) cfg.parallel.schedule = SC_SCHED_ZBV, cfg.model.layers = 16;
    if (k == 3) {
      cfg.parallel.vpp = 2;
      cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
      cfg.training.global_batch = 80; /* 10 micro-batches over pp 4 */
      cfg.parallel.overlap_param_gather = 1;
    }
    assert_merge_exact(&cfg);
  }
}

/* The sweep's target: GPT-3 175B on 1,024 A100s (TP8 PP16, full recompute). */
static void test_merge_gpt3_default(void **state) {
  (void)state;
  sc_config cfg;
  sc_test_example(&cfg);
  assert_merge_exact(&cfg);
  cfg.parallel.sequence_parallel = 1;
  cfg.parallel.vpp = 2;
  cfg.parallel.schedule = SC_SCHED_INTERLEAVED;
  cfg.parallel.distributed_optimizer = 1;
  assert_merge_exact(&cfg);
}

static int discard(void *ud, const char *s, size_t n) {
  (void)ud, (void)s, (void)n;
  return 0;
}

/* A merged workload loses what interference and traces need: refused. */
static void test_merge_refused_with_interference_or_trace(void **state) {
  (void)state;
  sc_config cfg;
  small_gpt(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  sc_workload wl;
  sc_shape sh;
  assert_int_equal(sc_test_build(ctx, &cfg, &cost, SC_WL_MERGE, &sh, &wl), 0);
  sc_engine_result r;
  assert_int_equal(sc_test_engine(ctx, &cfg, &wl, &cost, discard, NULL, &r), SC_EINTERNAL);
  cfg.simulation.interference = SC_INTERF_CONSTANT;
  assert_int_equal(sc_test_engine(ctx, &cfg, &wl, &cost, NULL, NULL, &r), SC_EINTERNAL);
  sc__workload_free(ctx, &wl);
}

/* The small Llama (TP4 PP2) with SP and recompute op_sac; GELU when asked. */
static void op_sac_llama(sc_config *cfg, int gelu) {
  assert_int_equal(sc_test_small_llama(ctx, cfg), 0);
  cfg->parallel.sequence_parallel = 1;
  cfg->training.recompute = SC_RECOMPUTE_OP_SAC;
  if (gelu) cfg->model.activation = SC_ACT_GELU;
}

/* recompute op_sac: before each dense layer's backward, the input norm, the
 * wk GEMM (a QKV-labelled GEMM of the KV width), the wo GEMM, the residual,
 * the FFN norm, the w3 GEMM and the activation run again (7 ops per layer
 * and micro-batch, no collective); the backward is the plain one. A GELU
 * model re-runs w2 instead of w3. Merged == unmerged. */
static void test_op_sac_recompute_ops(void **state) {
  (void)state;
  for (int gelu = 0; gelu < 2; gelu++) {
    sc_config cfg;
    op_sac_llama(&cfg, gelu);
    sc_workload wl;
    build(&cfg, &wl);
    const sc_program *p = &wl.progs[0];
    size_t rec = 0, by_label[SC_L_COUNT] = {0};
    for (size_t i = 0; i < p->nops[SC_ST_COMPUTE]; i++) {
      const sc_op *op = &p->ops[SC_ST_COMPUTE][i];
      if (op->phase != SC_PH_RECOMPUTE) continue;
      rec++;
      by_label[op->label]++;
    }
    size_t per = 4 * 8; /* 4 layers on stage 0 x 8 micro-batches (32 over dp 4) */
    assert_int_equal(rec, 7 * per);
    assert_int_equal(by_label[SC_L_QKV], per);
    assert_int_equal(by_label[SC_L_PROJ], per);
    assert_int_equal(by_label[gelu ? SC_L_FC2 : SC_L_FC1], per);
    assert_int_equal(by_label[gelu ? SC_L_FC1 : SC_L_FC2], 0);
    assert_int_equal(by_label[SC_L_ATTN], 0);
    sc__workload_free(ctx, &wl);
    op_sac_llama(&cfg, gelu);
    assert_merge_exact(&cfg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_program_shape),
      cmocka_unit_test(test_sp_uses_ag_rs),
      cmocka_unit_test(test_interleaved_programs_check),
      cmocka_unit_test(test_flops_formulas),
      cmocka_unit_test(test_op_sac_recompute_ops),
      cmocka_unit_test(test_rejects_bad_pipeline),
      cmocka_unit_test(test_merge_1f1b_receive_gathers),
      cmocka_unit_test(test_merge_interleaved_sp_distopt_selective),
      cmocka_unit_test(test_merge_full_recompute_sp_overlap),
      cmocka_unit_test(test_merge_gpipe_unfused_no_overlap),
      cmocka_unit_test(test_merge_llama_interleaved),
      cmocka_unit_test(test_merge_new_schedules),
      cmocka_unit_test(test_cp_exchanges),
      cmocka_unit_test(test_merge_cp),
      cmocka_unit_test(test_fsdp_collectives),
      cmocka_unit_test(test_fp8_casts_and_relu2),
      cmocka_unit_test(test_fp8_tp_allgather),
      cmocka_unit_test(test_unfused_projections),
      cmocka_unit_test(test_merge_fsdp),
      cmocka_unit_test(test_merge_offload),
      cmocka_unit_test(test_merge_without_inlining),
      cmocka_unit_test(test_merge_gpt3_default),
      cmocka_unit_test(test_merge_refused_with_interference_or_trace),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
