/*
 * test_shard.c: re-targeting an ex-situ job to tensor and pipeline
 * parallelism (src/trace/shard.c). On a traced tiny GPT (tools/
 * trace_torch.py tiny-gpt, batch 1: 2 layers, 2 heads, hidden 32; the
 * fixture tests/fuzz/corpus-scw/cpu-tiny-gpt.scw): the override file
 * parser, the built-in sharding rules, the stage cut, the TP re-shaping and
 * all-reduces, the p2p sends and receives of the 1F1B stages and of the
 * other schedules (ZB-V's V on the 4-layer trace), their replay, and the
 * refusals (heads not divisible, fewer layers than stages, a job
 * without module paths).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sctest.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "trace/shard_int.h"
#include "ir/ir_int.h"

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

/* A job of tests/fuzz/corpus-scw/. */
static sc_job *corpus_scw(const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/tests/fuzz/corpus-scw/%s", sc_test_source_dir(), name);
  FILE *f = fopen(p, "rb");
  if (!f) fail_msg("%s not found (set SC_SOURCE_DIR)", p);
  static unsigned char img[1 << 20];
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  sc_job *job;
  int rc = sc_job_read(ctx, name, img, n, &job);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  return job;
}

static sc_job *tiny_gpt(void) { return corpus_scw("cpu-tiny-gpt.scw"); }

static int64_t module_of(const sc_job *job, const sc_jrank *r, const char *path) {
  for (size_t i = 0; i < r->nmodules; i++)
    if (!strcmp(sc__job_str(job, r->modules[i].path), path)) return (int64_t)i;
  return -1;
}

static void test_rules_file(void **state) {
  (void)state;
  const char *ok = "# overrides\n\nblocks.*.c_fc   replicated  # keep the MLP whole\nlm_head column-parallel\n"
                   "layers.*.moe.mlp? expert\n";
  sc_shard_rule *r;
  size_t n;
  assert_int_equal(sc__shard_rules_parse(ctx, "r.txt", ok, strlen(ok), &r, &n), 0);
  assert_int_equal(n, 3);
  assert_string_equal(r[0].glob, "blocks.*.c_fc");
  assert_int_equal(r[0].role, SC_SHARD_REPLICATED);
  assert_int_equal(r[1].role, SC_SHARD_COLUMN);
  assert_int_equal(r[2].role, SC_SHARD_EXPERT);
  sc__free(ctx, r, n * sizeof *r);
  const char *block = "blocks.* block\n"; /* the built-in rules' own role, not for overrides */
  assert_int_equal(sc__shard_rules_parse(ctx, "k.txt", block, strlen(block), &r, &n), SC_EINVAL);
  const char *bad = "blocks.* column-parallel\nblocks.*.x sideways\n";
  assert_int_equal(sc__shard_rules_parse(ctx, "b.txt", bad, strlen(bad), &r, &n), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "b.txt:2: role must be"));
  const char *lone = "blocks.*\n";
  assert_int_equal(sc__shard_rules_parse(ctx, "c.txt", lone, strlen(lone), &r, &n), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "c.txt:1: a module path pattern and a role expected"));
  assert_int_equal(sc__shard_rules_parse(ctx, "e.txt", "# none\n", 7, &r, &n), SC_EINVAL);
}

static sc_job *tiny_moe(void);

static void test_classify(void **state) {
  (void)state;
  sc_job *job = tiny_gpt();
  const sc_jrank *r = &job->ranks[0];
  uint8_t roles[256];
  assert_true(r->nmodules <= 256);
  sc__shard_classify(job, r, NULL, 0, roles);
  static const struct { const char *path; int role; } want[] = {
      {"blocks.0.c_attn", SC_SHARD_COLUMN}, {"blocks.0.c_proj", SC_SHARD_ROW},
      {"blocks.1.c_fc", SC_SHARD_COLUMN},   {"blocks.1.mlp_proj", SC_SHARD_ROW},
      {"blocks.0.ln_1", SC_SHARD_REPLICATED}, {"ln_f", SC_SHARD_REPLICATED},
      {"wte", SC_SHARD_VOCAB},              {"wpe", SC_SHARD_REPLICATED},
      {"blocks.1", SC_SHARD_BLOCK},         {"", SC_SHARD_REPLICATED}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int64_t m = module_of(job, r, want[i].path);
    if (m < 0) fail_msg("module %s not in the trace", want[i].path);
    if (roles[m] != want[i].role) fail_msg("%s: role %d, want %d", want[i].path, roles[m], want[i].role);
  }
  assert_int_equal(r->modules[module_of(job, r, "blocks.0")].heads, 2);
  /* An override wins over the built-in rules; the first match counts. */
  sc_shard_rule over[2] = {{"blocks.*.c_fc", SC_SHARD_REPLICATED}, {"*", SC_SHARD_ROW}};
  sc__shard_classify(job, r, over, 2, roles);
  assert_int_equal(roles[module_of(job, r, "blocks.0.c_fc")], SC_SHARD_REPLICATED);
  assert_int_equal(roles[module_of(job, r, "wte")], SC_SHARD_ROW);
  sc_job_free(job);
  /* The tiny MoE: its experts (their linears by their names), the router
   * replicated. */
  job = tiny_moe();
  r = &job->ranks[0];
  assert_true(r->nmodules <= 256);
  sc__shard_classify(job, r, NULL, 0, roles);
  assert_int_equal(roles[module_of(job, r, "blocks.1.moe.experts.3")], SC_SHARD_EXPERT);
  assert_int_equal(roles[module_of(job, r, "blocks.1.moe.experts.3.fc1")], SC_SHARD_COLUMN);
  assert_int_equal(roles[module_of(job, r, "blocks.0.moe.gate")], SC_SHARD_REPLICATED);
  assert_int_equal(roles[module_of(job, r, "blocks.0.moe")], SC_SHARD_BLOCK);
  sc_job_free(job);
}

static void test_stage_cut(void **state) {
  (void)state;
  int64_t c[9];
  assert_int_equal(sc__shard_stages(ctx, 12, 4, 0, 0, c), 0);
  assert_true(c[0] == 0 && c[1] == 3 && c[2] == 6 && c[3] == 9 && c[4] == 12);
  assert_int_equal(sc__shard_stages(ctx, 5, 2, 0, 0, c), 0); /* the first stages take the remainder */
  assert_true(c[1] == 3 && c[2] == 5);
  assert_int_equal(sc__shard_stages(ctx, 12, 4, 2, 2, c), 0); /* uneven: 2, 4, 4, 2 */
  assert_true(c[1] == 2 && c[2] == 6 && c[3] == 10 && c[4] == 12);
  assert_int_equal(sc__shard_stages(ctx, 12, 3, 0, 4, c), 0); /* 4, 4, 4 */
  assert_true(c[1] == 4 && c[2] == 8 && c[3] == 12);
  assert_int_equal(sc__shard_stages(ctx, 2, 3, 0, 0, c), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "fewer than the stages"));
  assert_int_equal(sc__shard_stages(ctx, 6, 4, 3, 2, c), SC_EINVAL); /* 1 layer for 2 stages */
  assert_int_equal(sc__shard_stages(ctx, 1, 1, 0, 0, c), 0);
  assert_true(c[1] == 1);
}

static size_t count(const sc_jrank *r, int kind) {
  size_t n = 0;
  for (size_t k = 0; k < r->nops; k++) n += r->ops[k].kind == kind;
  return n;
}

static const sc_jop *first_named(const sc_job *job, const sc_jrank *r, const char *name) {
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].shape && !strcmp(sc__job_str(job, r->ops[k].name), name)) return &r->ops[k];
  return NULL;
}

static void test_tensor_parallel(void **state) {
  (void)state;
  sc_job *job = tiny_gpt();
  sc_shard_opts o = {2, 1, 1, 1, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *tp;
  int rc = sc__job_shard(job, &o, &tp);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(tp->nranks, 1);
  assert_int_equal(tp->world, 2);
  const sc_jrank *a = &job->ranks[0], *b = &tp->ranks[0];
  /* Per layer: the row-parallel c_proj and mlp_proj all-reduce their
   * outputs in forward, the column-parallel c_attn and c_fc their input
   * gradients in backward; plus the vocab-parallel embedding's output. */
  assert_int_equal(count(b, SC_JOP_COLL), 2 * 4 + 1);
  assert_int_equal(count(b, SC_JOP_KERNEL), count(a, SC_JOP_KERNEL));
  for (size_t k = 0; k < b->nops; k++)
    if (b->ops[k].kind == SC_JOP_COLL) {
      assert_int_equal(b->ops[k].coll, SC_COLL_ALLREDUCE);
      assert_string_equal(sc__job_str(tp, tp->groups[b->ops[k].group].name), SC_JOB_TP_GROUP);
      assert_int_equal(tp->groups[b->ops[k].group].n, 2);
      assert_true(b->ops[k].bytes == 16 * 32 * 4.0); /* tokens x hidden, fp32 */
    }
  /* The first GEMM (c_attn forward: 16 tokens x 96 x 32) splits its output
   * features; the attention bmm (batch x heads = 2) its heads. */
  const sc_jop *g0 = first_named(job, a, "aten::addmm"), *g1 = first_named(tp, b, "aten::addmm");
  const sc_jshape *s0 = &a->shapes[g0->shape - 1], *s1 = &b->shapes[g1->shape - 1];
  assert_true(s0->n == 96 && s1->n == 48 && s1->m == s0->m && s1->k == s0->k);
  assert_true(g1->flops * 2 == g0->flops);
  const sc_jop *m0 = first_named(job, a, "aten::bmm"), *m1 = first_named(tp, b, "aten::bmm");
  assert_true(a->shapes[m0->shape - 1].batch == 2 && b->shapes[m1->shape - 1].batch == 1);
  sc_job_free(tp);
  /* Sequence parallelism: per layer, forward gathers the input of c_attn
   * and c_fc and reduce-scatters the outputs of c_proj and mlp_proj;
   * backward gathers the output gradients of mlp_proj and c_proj and, for
   * the weight gradients, the inputs of c_fc and c_attn again, and
   * reduce-scatters their input gradients; the embedding's output is
   * reduce-scattered, its gradient gathered. The norms work on s / tp. */
  o.sp = 1;
  rc = sc__job_shard(job, &o, &tp);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  b = &tp->ranks[0];
  size_t ag = 0, rs = 0;
  for (size_t k = 0; k < b->nops; k++)
    if (b->ops[k].kind == SC_JOP_COLL) {
      ag += b->ops[k].coll == SC_COLL_ALLGATHER;
      rs += b->ops[k].coll == SC_COLL_REDUCESCATTER;
      assert_true(b->ops[k].bytes == 16 * 32 * 4.0);
    }
  assert_int_equal(ag, 2 * 6 + 1);
  assert_int_equal(rs, 2 * 4 + 1);
  assert_int_equal(count(b, SC_JOP_COLL), ag + rs);
  const sc_jop *n0 = first_named(job, a, "aten::native_layer_norm"), *n1 = first_named(tp, b, "aten::native_layer_norm");
  assert_true(n1->bytes * 2 == n0->bytes);
  /* Async TP: the same collectives; each of the 12 GEMMs after a layer's
   * gather runs as two parts (tp - 1 of the 2 row chunks, then the last,
   * which waits for the gather), and so does each of the 4 forward
   * row-parallel GEMMs (one chunk, the reduce-scatter after it, then the
   * rest); the FLOPs are those of the SP job. */
  double fl_sp = 0, fl_as = 0;
  size_t kern_sp = count(b, SC_JOP_KERNEL);
  for (size_t k = 0; k < b->nops; k++) fl_sp += b->ops[k].flops;
  o.async_tp = 1;
  sc_job *at;
  if (sc__job_shard(job, &o, &at)) fail_msg("%s", sc_errmsg(ctx));
  const sc_jrank *c = &at->ranks[0];
  size_t ag2 = 0, rs2 = 0, waits_gather = 0;
  for (size_t k = 0; k < c->nops; k++) {
    const sc_jop *op = &c->ops[k];
    fl_as += op->flops;
    ag2 += op->kind == SC_JOP_COLL && op->coll == SC_COLL_ALLGATHER;
    rs2 += op->kind == SC_JOP_COLL && op->coll == SC_COLL_REDUCESCATTER;
    if (op->kind != SC_JOP_KERNEL) continue;
    for (uint32_t d = 0; d < op->ndeps; d++) {
      const sc_jop *q = &c->ops[c->deps[op->dep_off + d]];
      waits_gather += q->kind == SC_JOP_COLL && q->coll == SC_COLL_ALLGATHER && op->shape &&
                      sc__jshape_gemm(c->shapes[op->shape - 1].cls);
    }
  }
  assert_int_equal(ag2, ag);
  assert_int_equal(rs2, rs);
  assert_int_equal(count(c, SC_JOP_KERNEL), kern_sp + 12 + 4);
  assert_int_equal(waits_gather, 12);
  assert_true(fabs(fl_as - fl_sp) < 1e-9 * fl_sp);
  sc_job_free(at);
  o.async_tp = 0;
  sc_job_free(tp);
  o.tp = 1;
  assert_int_equal(sc__job_shard(job, &o, &tp), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "sequence parallelism needs tp >= 2"));
  o.sp = 0;
  o.tp = 2;
  o.async_tp = 1;
  assert_int_equal(sc__job_shard(job, &o, &tp), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "async TP needs sequence parallelism"));
  o.async_tp = 0;
  /* 2 heads do not split 4 ways. */
  o.tp = 4;
  assert_int_equal(sc__job_shard(job, &o, &tp), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "module blocks.0 has 2 attention heads, not divisible by tp"));
  sc_job_free(job);
}

static void test_pipeline(void **state) {
  (void)state;
  sc_job *job = tiny_gpt();
  sc_shard_opts o = {1, 2, 1, 3, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *pj;
  int rc = sc__job_shard(job, &o, &pj);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(pj->nranks, 2);
  const sc_jrank *s0 = &pj->ranks[0], *s1 = &pj->ranks[1];
  assert_int_equal(s0->rank, 0);
  assert_int_equal(s1->rank, 1);
  /* 1F1B over 3 micro-batches: stage 0 sends 3 activations and receives 3
   * gradients from stage 1, which mirrors it. */
  size_t sends0 = 0, recvs0 = 0, sends1 = 0, recvs1 = 0;
  for (size_t k = 0; k < s0->nops; k++)
    if (s0->ops[k].kind == SC_JOP_SEND || s0->ops[k].kind == SC_JOP_RECV) {
      assert_int_equal(s0->ops[k].peer, 1);
      assert_true(s0->ops[k].bytes == 16 * 32 * 4.0);
      sends0 += s0->ops[k].kind == SC_JOP_SEND;
      recvs0 += s0->ops[k].kind == SC_JOP_RECV;
    }
  for (size_t k = 0; k < s1->nops; k++) {
    if (s1->ops[k].kind == SC_JOP_SEND || s1->ops[k].kind == SC_JOP_RECV) assert_int_equal(s1->ops[k].peer, 0);
    sends1 += s1->ops[k].kind == SC_JOP_SEND;
    recvs1 += s1->ops[k].kind == SC_JOP_RECV;
  }
  assert_true(sends0 == 3 && recvs0 == 3 && sends1 == 3 && recvs1 == 3);
  /* The embeddings run on stage 0 only, the final norm on stage 1; each
   * stage's gradients are marked once (the last micro-batch). */
  assert_non_null(first_named(pj, s0, "aten::embedding"));
  assert_null(first_named(pj, s1, "aten::embedding"));
  assert_true(count(s0, SC_JOP_GRAD) + count(s1, SC_JOP_GRAD) == count(&job->ranks[0], SC_JOP_GRAD));
  assert_true(count(s0, SC_JOP_GRAD) > 0 && count(s1, SC_JOP_GRAD) > 0);
  /* Replayed: the engine pairs the transfers; PP time and a bubble. */
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_config_set(ctx, &cfg, "cluster.gpu=a100-80gb"), 0);
  cfg.parallel.tp = cfg.parallel.pp = cfg.parallel.cp = cfg.parallel.vpp = 1;
  cfg.parallel.dp = 0;
  cfg.cluster.num_gpus = 4;
  cfg.cluster.nodes = 0;
  cfg.cluster.gpus_per_node = 4;
  cfg.training.micro_batch = 1;
  cfg.training.global_batch = 4;
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_replay_opts ro = {.replica_ranks = 1, .scale_pp = 2, .micro_batches = 3};
  sc_replay_result res, one;
  rc = sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_true(res.pp == 2 && res.tp == 1 && res.micro_batches == 3);
  assert_true(res.breakdown_s[SC_CAT_PP] > 0);
  sc_replay_opts ro1 = {.replica_ranks = 1};
  assert_int_equal(sc_replay(ctx, job, &cfg, &ro1, NULL, NULL, &one), 0);
  /* Three micro-batches on two stages take longer than one step whole,
   * less than three. */
  assert_true(res.predicted_step_s > one.predicted_step_s && res.predicted_step_s < 3 * one.predicted_step_s);
  /* DDP on top: one bucket set per stage, over each stage's replicas. */
  ro.scale_dp = 2;
  ro.scale_tp = 2;
  rc = sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_true(res.world == 8 && res.dp == 2 && res.ddp_buckets >= 1);
  assert_true(res.breakdown_s[SC_CAT_TP] > 0);
  sc_job_free(pj);
  /* Three stages for two layers; a sequence cp does not divide. */
  o.pp = 3;
  assert_int_equal(sc__job_shard(job, &o, &pj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "pp=3: the traced model has 2 layer(s), fewer than the stages"));
  sc_replay_opts rc2 = {.replica_ranks = 1, .scale_cp = 5};
  assert_int_equal(sc_replay(ctx, job, &cfg, &rc2, NULL, NULL, &res), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "not divisible by cp"));
  sc_job_free(job);
}

/* The 4-layer tiny GPT (tools/trace_torch.py tiny-gpt --layers 4, batch 1;
 * tests/trace/tiny-gpt-l4-b1.json.gz) imported ex-situ. */
static sc_job *tiny_gpt4(void) {
  char p[4096];
  snprintf(p, sizeof p, "%s/tests/trace/tiny-gpt-l4-b1.json.gz", sc_test_source_dir());
  FILE *f = fopen(p, "rb");
  if (!f) fail_msg("%s not found (set SC_SOURCE_DIR)", p);
  static unsigned char img[1 << 20];
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  sc_trace_reader *rd;
  int rc = sc_trace_open(job, SC_TRACE_CPU, "tiny-gpt-l4-b1.json.gz", 0, &rd);
  if (!rc) rc = sc_trace_feed(rd, img, n);
  if (!rc) rc = sc_trace_finish(rd);
  if (!rc) sc_trace_free(rd);
  if (!rc) rc = sc_job_finish(job);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  return job;
}

/* A replay config on an A100 with the host's per-operator costs at their
 * floor, so that the GPU and not the eager host sets the pace. */
static void replay_cfg(sc_config *cfg, int64_t gpus) {
  sc_test_example(cfg);
  assert_int_equal(sc_config_set(ctx, cfg, "cluster.gpu=a100-40gb"), 0);
  assert_int_equal(sc_config_set(ctx, cfg, "training.precision=fp32"), 0);
  assert_int_equal(sc_config_set(ctx, cfg, "calibration.host_op_us=0.01"), 0);
  assert_int_equal(sc_config_set(ctx, cfg, "calibration.host_autograd_us=0.01"), 0);
  assert_int_equal(sc_config_set(ctx, cfg, "calibration.host_module_us=0.01"), 0);
  cfg->parallel.tp = cfg->parallel.pp = cfg->parallel.cp = cfg->parallel.vpp = 1;
  cfg->parallel.dp = 0;
  cfg->cluster.num_gpus = gpus;
  cfg->cluster.nodes = 0;
  cfg->cluster.gpus_per_node = gpus < 8 ? gpus : 8;
  cfg->training.micro_batch = 1;
  cfg->training.global_batch = gpus;
  assert_int_equal(sc_config_resolve(ctx, cfg), 0);
}

/* The synthesized workload of the tiny GPT's shape: its pipeline bubble. */
static double synth_bubble(const char *schedule, int64_t vpp, int64_t m) {
  sc_config cfg;
  sc_test_example(&cfg);
  const char *sets[] = {"model.layers=4", "model.hidden=32", "model.heads=2", "model.kv_heads=2",
                        "model.ffn_hidden=128", "model.vocab=64", "model.seq_len=16", "model.activation=gelu",
                        "training.micro_batch=1", "training.precision=fp32", "training.attention=unfused",
                        "training.recompute=none", "cluster.gpu=a100-40gb", "cluster.gpus_per_node=8",
                        "parallel.tp=1", "parallel.pp=2",
                        "parallel.sequence_parallel=0", "parallel.dp=0", NULL};
  for (int i = 0; sets[i]; i++)
    if (sc_config_set(ctx, &cfg, sets[i])) fail_msg("%s: %s", sets[i], sc_errmsg(ctx));
  char a[96];
  snprintf(a, sizeof a, "parallel.schedule=%s", schedule);
  assert_int_equal(sc_config_set(ctx, &cfg, a), 0);
  cfg.parallel.vpp = vpp;
  cfg.cluster.num_gpus = 2;
  cfg.cluster.nodes = 0;
  cfg.training.global_batch = m;
  sc_test_pin_costs(&cfg);
  if (sc_config_resolve(ctx, &cfg)) fail_msg("%s", sc_errmsg(ctx));
  sc_result r;
  if (sc_simulate(ctx, &cfg, NULL, NULL, &r)) fail_msg("%s", sc_errmsg(ctx));
  return r.breakdown_s[SC_CAT_BUBBLE];
}

/* Each schedule of a re-targeted pipeline (pp 2, 8 micro-batches of the
 * traced 4-layer tiny GPT) against the synthesized workload of its shape:
 * interleaved (2 chunks), ZB-H1 and ZB-V cut 1F1B's bubble, ZB-V to near
 * zero (below half of ZB-H1's and a twentieth of the compute), GPipe's is
 * no smaller, and the order of the five is the synthesized one's. */
static void test_schedules(void **state) {
  (void)state;
  sc_job *job = tiny_gpt4();
  sc_config cfg;
  replay_cfg(&cfg, 2);
  sc_test_pin_costs(&cfg);
  enum { NK = 5 };
  static const int kinds[NK] = {SC_SCHED_1F1B, SC_SCHED_GPIPE, SC_SCHED_INTERLEAVED, SC_SCHED_ZB_H1, SC_SCHED_ZBV};
  static const char *const names[NK] = {"1f1b", "gpipe", "interleaved", "zb-h1", "zbv"};
  double rb[NK], sb[NK], compute = 0;
  for (int i = 0; i < NK; i++) {
    sc_replay_opts ro = {.replica_ranks = 1, .scale_pp = 2, .micro_batches = 8, .schedule = (sc_schedule)kinds[i]};
    sc_replay_result res;
    if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res)) fail_msg("%s: %s", names[i], sc_errmsg(ctx));
    assert_int_equal(res.schedule, kinds[i]);
    int chunks = kinds[i] == SC_SCHED_INTERLEAVED || kinds[i] == SC_SCHED_ZBV ? 2 : 1;
    assert_int_equal(res.vpp, chunks);
    rb[i] = res.breakdown_s[SC_CAT_BUBBLE];
    /* The same work in every schedule. */
    if (i == 0) compute = res.breakdown_s[SC_CAT_COMPUTE];
    assert_true(fabs(res.breakdown_s[SC_CAT_COMPUTE] - compute) < 1e-3 * compute);
    sb[i] = synth_bubble(names[i], chunks, 8);
    print_message("%-12s bubble replay %.3f ms, synthesized %.3f ms\n", names[i], rb[i] * 1e3, sb[i] * 1e3);
  }
  assert_true(rb[2] < 0.6 * rb[0] && rb[3] < 0.8 * rb[0] && rb[1] >= rb[0] * 0.99);
  assert_true(sb[2] < sb[0] && sb[3] < sb[0]);
  assert_true(rb[4] < 0.5 * rb[3] && rb[4] < 0.05 * compute && sb[4] < 0.5 * sb[3]);
  for (int i = 0; i < NK; i++)
    for (int j = 0; j < NK; j++)
      if (i != j && sb[i] < 0.95 * sb[j]) assert_true(rb[i] < rb[j]);
  /* The shard itself: 8 micro-batches x 2 chunks of sends each way. */
  sc_shard_opts o = {1, 2, 1, 8, 0, 0, NULL, 0, SC_SCHED_INTERLEAVED, 2, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *pj;
  if (sc__job_shard(job, &o, &pj)) fail_msg("%s", sc_errmsg(ctx));
  /* Stage 0 runs virtual stages 0 and 2 of 4, stage 1 runs 1 and 3: only
   * the ends of the chain (vs 0's forward receive and backward send, vs 3's
   * forward send and backward receive) have no transfer, so each stage
   * sends and receives 3 x 8 messages, all to and from the other stage. */
  for (int q = 0; q < 2; q++) {
    assert_true(count(&pj->ranks[q], SC_JOP_SEND) == 24 && count(&pj->ranks[q], SC_JOP_RECV) == 24);
    for (size_t k = 0; k < pj->ranks[q].nops; k++)
      if (pj->ranks[q].ops[k].kind == SC_JOP_SEND || pj->ranks[q].ops[k].kind == SC_JOP_RECV)
        assert_int_equal(pj->ranks[q].ops[k].peer, 1 - q);
  }
  sc_job_free(pj);
  /* ZB-H1: the weight-gradient GEMMs and gradient marks leave the backward
   * for the W passes; same ops in all. */
  o.schedule = SC_SCHED_ZB_H1;
  o.vpp = 0;
  if (sc__job_shard(job, &o, &pj)) fail_msg("%s", sc_errmsg(ctx));
  sc_job *fj;
  o.schedule = SC_SCHED_1F1B;
  assert_int_equal(sc__job_shard(job, &o, &fj), 0);
  assert_int_equal(pj->ranks[0].nops, fj->ranks[0].nops);
  assert_int_equal(count(&pj->ranks[1], SC_JOP_GRAD), count(&fj->ranks[1], SC_JOP_GRAD));
  sc_job_free(pj);
  sc_job_free(fj);
  /* Refusals: more chunks than layers, chunks without the interleaved
   * schedule, interleaved on one stage, ZB-V. */
  o.schedule = SC_SCHED_INTERLEAVED;
  o.vpp = 3;
  assert_int_equal(sc__job_shard(job, &o, &pj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "4 layer(s), fewer than the 6 chunks"));
  o.schedule = SC_SCHED_1F1B;
  o.vpp = 2;
  assert_int_equal(sc__job_shard(job, &o, &pj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "need the interleaved schedule"));
  o.schedule = SC_SCHED_INTERLEAVED;
  o.pp = 1;
  assert_int_equal(sc__job_shard(job, &o, &pj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "needs pp >= 2"));
  o.schedule = SC_SCHED_DUALPIPEV;
  o.pp = 2;
  o.vpp = 0;
  assert_int_equal(sc__job_shard(job, &o, &pj), SC_EUNSUPPORTED);
  assert_non_null(strstr(sc_errmsg(ctx), "runs 1f1b, gpipe, interleaved, zb-h1 or zbv"));
  sc_job_free(job);
}

/* Sends or receives (kind) of a rank on shard.c's stream id `id`
 * (SC_SHARD_ST_*), each checked to talk to global rank peer. */
static size_t p2p_on(const sc_jrank *r, int64_t id, int kind, int64_t peer) {
  size_t n = 0;
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == kind && r->streams[r->ops[k].stream].id == id) {
      assert_int_equal(r->ops[k].peer, peer);
      n++;
    }
  return n;
}

/* Kernels named `name` on a rank. */
static size_t named(const sc_job *job, const sc_jrank *r, const char *name) {
  size_t n = 0;
  for (size_t k = 0; k < r->nops; k++) n += r->ops[k].shape && !strcmp(sc__job_str(job, r->ops[k].name), name);
  return n;
}

/* sc__job_shard refuses o (SC_EINVAL) with a message holding msg. */
static void refused(const sc_job *job, const sc_shard_opts *o, const char *msg) {
  sc_job *out = NULL;
  assert_int_equal(sc__job_shard(job, o, &out), SC_EINVAL);
  assert_null(out);
  assert_non_null(strstr(sc_errmsg(ctx), msg));
}

/* ZB-V on a re-targeted job: stage s runs virtual stages s and 2 pp - 1 - s
 * (chunk 1 back up the stages on its own stream pair), the last stage turns
 * the V in memory, stage 0 holds the embeddings and the final norm; the
 * same ops as 1F1B in all, the backward split into B and W as ZB-H1's. */
static void test_zbv(void **state) {
  (void)state;
  sc_job *job4 = tiny_gpt4(), *job;
  int64_t traced;
  /* 8 layers for pp 4 (the last traced one repeated). */
  assert_int_equal(sc__job_layers(job4, 8, &job, &traced), 0);
  const int64_t m = 6;
  sc_shard_opts o = {1, 4, 1, m, 0, 0, NULL, 0, SC_SCHED_ZBV, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *vj, *fj;
  if (sc__job_shard(job, &o, &vj)) fail_msg("%s", sc_errmsg(ctx));
  o.schedule = SC_SCHED_1F1B;
  assert_int_equal(sc__job_shard(job, &o, &fj), 0);
  assert_int_equal(vj->nranks, 4);
  size_t ops_v = 0, ops_f = 0, grads_v = 0, grads_f = 0;
  for (int q = 0; q < 4; q++) {
    const sc_jrank *r = &vj->ranks[q];
    ops_v += r->nops - count(r, SC_JOP_SEND) - count(r, SC_JOP_RECV);
    ops_f += fj->ranks[q].nops - count(&fj->ranks[q], SC_JOP_SEND) - count(&fj->ranks[q], SC_JOP_RECV);
    grads_v += count(r, SC_JOP_GRAD), grads_f += count(&fj->ranks[q], SC_JOP_GRAD);
    /* Chunk 0 (virtual stage q) down the stages, chunk 1 (7 - q) back up:
     * a forward send and a backward receive per micro-batch and link, none
     * at the model's ends (stage 0's vs 0 and vs 7) and at the turn (vs 3
     * to vs 4 on stage 3). */
    int64_t up = q - 1, down = q + 1; /* the neighbours' ranks (tp 1) */
    size_t want_down = q < 3 ? (size_t)m : 0, want_up = q > 0 ? (size_t)m : 0;
    assert_int_equal(p2p_on(r, SC_SHARD_ST_FSEND, SC_JOP_SEND, down), want_down);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_BRECV, SC_JOP_RECV, down), want_down);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_FRECV, SC_JOP_RECV, up), want_up);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_BSEND, SC_JOP_SEND, up), want_up);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_RFSEND, SC_JOP_SEND, up), want_up);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_RBRECV, SC_JOP_RECV, up), want_up);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_RFRECV, SC_JOP_RECV, down), want_down);
    assert_int_equal(p2p_on(r, SC_SHARD_ST_RBSEND, SC_JOP_SEND, down), want_down);
    assert_int_equal(count(r, SC_JOP_SEND), 2 * (want_up + want_down));
    assert_int_equal(count(r, SC_JOP_RECV), 2 * (want_up + want_down));
    /* Two layers a stage, one per chunk (2 layer norms each, per
     * micro-batch); stage 0 also runs the final norm. */
    assert_int_equal(named(vj, r, "aten::native_layer_norm"), (size_t)m * (4 + (q == 0)));
    assert_int_equal(named(vj, r, "aten::embedding") > 0, q == 0);
  }
  assert_int_equal(named(fj, &fj->ranks[3], "aten::native_layer_norm"), (size_t)m * 5);
  assert_int_equal(ops_v, ops_f);
  assert_int_equal(grads_v, grads_f);
  assert_int_equal(grads_v, count(&job->ranks[0], SC_JOP_GRAD));
  sc_job_free(vj);
  sc_job_free(fj);
  /* Replayed: the engine pairs every transfer; the bubble below ZB-H1's. */
  sc_config cfg;
  replay_cfg(&cfg, 4);
  sc_replay_opts ro = {.replica_ranks = 1, .scale_pp = 4, .micro_batches = 8, .schedule = SC_SCHED_ZBV};
  sc_replay_result zv, zh;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &zv)) fail_msg("%s", sc_errmsg(ctx));
  ro.schedule = SC_SCHED_ZB_H1;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &zh)) fail_msg("%s", sc_errmsg(ctx));
  print_message("pp 4: bubble zbv %.3f ms, zb-h1 %.3f ms\n", zv.breakdown_s[SC_CAT_BUBBLE] * 1e3,
                zh.breakdown_s[SC_CAT_BUBBLE] * 1e3);
  assert_true(zv.breakdown_s[SC_CAT_PP] > 0);
  assert_true(zv.breakdown_s[SC_CAT_BUBBLE] < 0.6 * zh.breakdown_s[SC_CAT_BUBBLE]);
  /* With FSDP, CP and SP / async TP: one gather per unit and pass as
   * before, two chunks' units on each stage. */
  sc_replay_opts rf = {.replica_ranks = 1, .scale_pp = 2, .scale_fsdp = 2, .scale_cp = 2, .scale_tp = 2,
                       .sequence_parallel = 1, .async_tp = 1, .micro_batches = 4, .schedule = SC_SCHED_ZBV};
  replay_cfg(&cfg, 16);
  if (sc_replay(ctx, job4, &cfg, &rf, NULL, NULL, &zv)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(zv.world == 16 && zv.fsdp == 2 && zv.breakdown_s[SC_CAT_CP] > 0 && zv.breakdown_s[SC_CAT_DP] > 0);
  /* Refusals: fewer layers than 2 pp chunks, another chunk count, one
   * stage, an uneven first stage. */
  o.schedule = SC_SCHED_ZBV;
  o.pp = 3;
  refused(job4, &o, "4 layer(s), fewer than the 6 chunks");
  o.pp = 2;
  o.vpp = 3;
  refused(job4, &o, "vpp must be 2 or unset");
  o.vpp = 2;
  assert_int_equal(sc__job_shard(job4, &o, &vj), 0);
  sc_job_free(vj);
  o.pp = 1;
  refused(job4, &o, "needs pp >= 2");
  o.pp = 2;
  o.first_layers = 1;
  refused(job4, &o, "takes an even split");
  sc_job_free(job);
  sc_job_free(job4);
}

/* The traced tiny MoE (tools/trace_torch.py tiny-moe: the tiny GPT's 2
 * layers with an MoE FFN of 4 GELU experts, top 2, a uniform router, 16
 * tokens; tests/fuzz/corpus-scw/cpu-tiny-moe.scw, imported from
 * tests/trace/tiny-moe-b1.json.gz). */
static sc_job *tiny_moe(void) { return corpus_scw("cpu-tiny-moe.scw"); }

/* Ops of rank r (source job `job`) that lie in an expert, and their GEMM
 * FLOPs. */
static size_t expert_ops(const sc_job *job, const sc_jrank *r, int kind, double *gemm_flops) {
  size_t n = 0;
  for (size_t k = 0; k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    if (!om.module || !strstr(sc__job_str(job, r->modules[om.module - 1].path), ".experts.")) continue;
    n += r->ops[k].kind == kind;
    if (gemm_flops && r->ops[k].shape && r->shapes[r->ops[k].shape - 1].cls == SC_JSHAPE_GEMM)
      *gemm_flops += r->ops[k].flops;
  }
  return n;
}

static double gemm_flops(const sc_jrank *r) {
  double f = 0;
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].shape && r->shapes[r->ops[k].shape - 1].cls == SC_JSHAPE_GEMM) f += r->ops[k].flops;
  return f;
}

/* Collectives of a rank over groups named `group`: count and bytes. */
static size_t colls_in(const sc_job *job, const sc_jrank *r, const char *group, double *bytes) {
  size_t n = 0;
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_COLL && !strcmp(sc__job_str(job, job->groups[r->ops[k].group].name), group)) {
      n++;
      if (bytes) *bytes += r->ops[k].bytes;
    }
  return n;
}

/* Expert parallelism (the experts found by the built-in rules:
 * test_classify): at ep 2 the rank runs 2 of
 * each layer's 4 experts on twice their traced tokens (the same expert
 * GEMM FLOPs as the whole traced layer), behind an all-to-all dispatch and
 * before a combine in forward and backward (tokens x top-k x hidden x 4
 * bytes each); its experts' gradients go to the expert-data-parallel
 * group, the rest to DDP's as before. */
static void test_expert(void **state) {
  (void)state;
  sc_job *job = tiny_moe();
  const sc_jrank *r0 = &job->ranks[0];
  sc_shard_opts o = {1, 1, 2, 1, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 2};
  sc_shard_opts o1 = {1, 1, 2, 1, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *ej, *wj;
  if (sc__job_shard(job, &o, &ej)) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc__job_shard(job, &o1, &wj), 0);
  const sc_jrank *e = &ej->ranks[0], *w = &wj->ranks[0];
  double ef = 0;
  size_t ek = expert_ops(job, r0, SC_JOP_KERNEL, &ef), eg = expert_ops(job, r0, SC_JOP_GRAD, NULL);
  assert_true(ek > 0 && eg > 0 && ef > 0);
  /* Half the experts' kernels and gradient marks, the same GEMM FLOPs. */
  assert_int_equal(count(e, SC_JOP_KERNEL), count(w, SC_JOP_KERNEL) - ek / 2);
  assert_int_equal(count(e, SC_JOP_GRAD), count(w, SC_JOP_GRAD) - eg / 2);
  assert_true(fabs(gemm_flops(e) - gemm_flops(w)) < 1e-9 * gemm_flops(w));
  /* 2 layers x (dispatch, combine) x (forward, backward); each the 16
   * tokens' 2 copies of 32 fp32 features. */
  double bytes = 0;
  assert_int_equal(colls_in(ej, e, SC_JOB_EP_GROUP, &bytes), 8);
  assert_true(bytes == 8 * 16 * 2 * 32 * 4.0);
  assert_int_equal(colls_in(wj, w, SC_JOB_EP_GROUP, NULL), 0);
  /* The experts' GEMMs on 2 x their 8 traced tokens: fc1's forward and
   * fc2's input gradient (16 x 64 x 32) of the 2 local experts of 2
   * layers, none left on 8. */
  size_t m16 = 0, m8 = 0;
  for (size_t k = 0; k < e->nops; k++) {
    const sc_jshape *sh = e->ops[k].shape ? &e->shapes[e->ops[k].shape - 1] : NULL;
    if (!sh || sh->cls != SC_JSHAPE_GEMM || sh->n != 64 || sh->k != 32) continue;
    m16 += sh->m == 16, m8 += sh->m == 8;
  }
  assert_int_equal(m16, 2 * 2 * 2);
  assert_int_equal(m8, 0);
  /* DDP: the dense buckets over the 2 replicas, the experts' apart over
   * their expert-data-parallel group (ep 2 of dp 4: 2 replicas). */
  sc_job_free(ej);
  o.dp = 4;
  if (sc__job_shard(job, &o, &ej)) fail_msg("%s", sc_errmsg(ctx));
  sc_job *dj;
  if (sc__job_ddp(ej, 25.0 * 1048576, 1048576, 1, 1, 1, &dj)) fail_msg("%s", sc_errmsg(ctx));
  double eb = 0, db = 0, wb = 0;
  const sc_jrank *er = &ej->ranks[0];
  for (size_t k = 0; k < er->nops; k++)
    if (er->ops[k].kind == SC_JOP_GRAD) *(er->ops[k].group != SC_JOB_NONE ? &eb : &db) += er->ops[k].bytes;
  for (size_t k = 0; k < r0->nops; k++) wb += r0->ops[k].kind == SC_JOP_GRAD ? r0->ops[k].bytes : 0;
  assert_true(eb > 0 && fabs(eb * 2 + db - wb) < 1e-9 * wb); /* 2 of the 4 experts' gradients here */
  double edb = 0, ddb = 0;
  assert_int_equal(colls_in(dj, &dj->ranks[0], SC_JOB_EDP_GROUP, &edb), 1);
  assert_true(colls_in(dj, &dj->ranks[0], "ddp", &ddb) >= 1);
  assert_true(edb == eb && ddb == db);
  for (size_t g = 0; g < dj->ngroups; g++)
    if (!strcmp(sc__job_str(dj, dj->groups[g].name), SC_JOB_EDP_GROUP)) {
      assert_int_equal(dj->groups[g].n, 2);
      assert_int_equal(dj->members[dj->groups[g].off + 1], 2); /* replicas 0 and ep */
    }
  sc_job_free(dj);
  sc_job_free(ej);
  sc_job_free(wj);
  /* Replayed: EP time, the rest as before. */
  sc_config cfg;
  replay_cfg(&cfg, 4);
  sc_replay_opts ro = {.replica_ranks = 1, .scale_dp = 4, .scale_ep = 2, .scale_pp = 2, .micro_batches = 2};
  sc_replay_result res;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(res.ep == 2 && res.world == 8 && res.breakdown_s[SC_CAT_EP] > 0 && res.breakdown_s[SC_CAT_DP] > 0);
  /* Refusals: 4 experts over 3 ranks, a model without experts, ep not
   * dividing dp, with TP. */
  o.ep = 3;
  o.dp = 3;
  refused(job, &o, "ep=3: layer blocks.0 has 4 experts, not divisible by ep");
  o.ep = 2;
  refused(job, &o, "ep=2 with dp=3: the expert-parallel ranks are data-parallel replicas");
  o.dp = 2;
  sc_job *gpt = tiny_gpt();
  refused(gpt, &o, "ep=2: the traced layers have no experts");
  sc_job_free(gpt);
  o.tp = 2;
  refused(job, &o, "an MoE layer under tensor parallelism needs sequence parallelism");
  /* TP 2 with SP: the experts' linears split by their names, the routed
   * copies all-gathered over the expert-TP group after each dispatch and
   * reduce-scattered before each combine (the whole copies, 4096 bytes;
   * the all-to-alls move the rank's s / tp tokens' half), no per-expert SP
   * collective; without EP only the gathers and scatters. */
  o.sp = 1;
  if (sc__job_shard(job, &o, &ej)) fail_msg("%s", sc_errmsg(ctx));
  double ab = 0, tb = 0;
  assert_int_equal(colls_in(ej, &ej->ranks[0], SC_JOB_EP_GROUP, &ab), 8);
  assert_int_equal(colls_in(ej, &ej->ranks[0], SC_JOB_ETP_GROUP, &tb), 8);
  assert_true(ab == 8 * 2048.0 && tb == 8 * 4096.0);
  size_t tp_ep = colls_in(ej, &ej->ranks[0], SC_JOB_TP_GROUP, NULL);
  sc_job_free(ej);
  o.ep = 0;
  if (sc__job_shard(job, &o, &ej)) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(colls_in(ej, &ej->ranks[0], SC_JOB_EP_GROUP, NULL), 0);
  assert_int_equal(colls_in(ej, &ej->ranks[0], SC_JOB_ETP_GROUP, NULL), 8);
  assert_int_equal(colls_in(ej, &ej->ranks[0], SC_JOB_TP_GROUP, NULL), tp_ep);
  sc_job_free(ej);
  sc_job_free(job);
}

/* FSDP on a re-targeted job (tiny GPT, 4 layers, 2 micro-batches, dp 4):
 * five units (the four layers and the root: embeddings, final norm), each
 * gathered before its forward and its backward in every micro-batch, its
 * gradients reduce-scattered once, in the last micro-batch; all the
 * parameters gathered per pass and scattered per step; no DDP. */
static void test_fsdp(void **state) {
  (void)state;
  sc_job *job = tiny_gpt4();
  sc_shard_opts o = {1, 1, 4, 2, 0, 0, NULL, 0, 0, 0, 4, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *fj;
  if (sc__job_shard(job, &o, &fj)) fail_msg("%s", sc_errmsg(ctx));
  const sc_jrank *r = &fj->ranks[0];
  size_t ag = 0, rs = 0;
  double ag_bytes = 0, rs_bytes = 0, grad_bytes = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    if (op->kind == SC_JOP_COLL) {
      assert_string_equal(sc__job_str(fj, fj->groups[op->group].name), SC_JOB_FSDP_GROUP);
      assert_int_equal(fj->groups[op->group].n, 4);
      if (op->coll == SC_COLL_ALLGATHER) ag++, ag_bytes += op->bytes;
      if (op->coll == SC_COLL_REDUCESCATTER) rs++, rs_bytes += op->bytes;
    }
  }
  const sc_jrank *src = &job->ranks[0];
  for (size_t k = 0; k < src->nops; k++)
    if (src->ops[k].kind == SC_JOP_GRAD) grad_bytes += src->ops[k].bytes;
  assert_int_equal(ag, 2 * 2 * 5);
  assert_int_equal(rs, 5);
  assert_true(fabs(rs_bytes - grad_bytes) < 1e-6 * grad_bytes);
  assert_true(fabs(ag_bytes - 4 * grad_bytes) < 1e-6 * grad_bytes);
  sc_job_free(fj);
  /* Kept unsharded (fsdp_keep): each unit gathered once per step, at its
   * first forward; the scatters unchanged. */
  o.fsdp_keep = 1;
  if (sc__job_shard(job, &o, &fj)) fail_msg("%s", sc_errmsg(ctx));
  r = &fj->ranks[0];
  ag = rs = 0;
  ag_bytes = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    if (op->kind != SC_JOP_COLL) continue;
    if (op->coll == SC_COLL_ALLGATHER) ag++, ag_bytes += op->bytes;
    rs += op->coll == SC_COLL_REDUCESCATTER;
  }
  assert_int_equal(ag, 5);
  assert_int_equal(rs, 5);
  assert_true(fabs(ag_bytes - grad_bytes) < 1e-6 * grad_bytes);
  sc_job_free(fj);
  o.fsdp_keep = 0;
  /* Replayed: DP time from the gathers and scatters, no DDP buckets, and
   * the optimizer on a quarter of the parameters. */
  sc_config cfg;
  replay_cfg(&cfg, 4);
  sc_replay_opts ro = {.replica_ranks = 1, .scale_dp = 4, .scale_fsdp = 4, .micro_batches = 2};
  sc_replay_result res, ddp;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(res.fsdp == 4 && res.dp == 4 && res.world == 4 && res.ddp_buckets == 0);
  assert_true(res.breakdown_s[SC_CAT_DP] > 0);
  ro.scale_fsdp = 0;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &ddp)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(ddp.ddp_buckets > 0 && ddp.fsdp == 0);
  assert_true(res.breakdown_s[SC_CAT_OPTIMIZER] + res.breakdown_s[SC_CAT_COMPUTE] <
              ddp.breakdown_s[SC_CAT_OPTIMIZER] + ddp.breakdown_s[SC_CAT_COMPUTE]);
  /* HSDP: shard groups of 4 in dp 8 (2 replicas): the same gathers and
   * scatters within the group of 4, and behind each unit's scatter an
   * all-reduce of its quarter shard over the 2 replicas (the rank and its
   * peer 4 replicas on). */
  o.dp = 8;
  if (sc__job_shard(job, &o, &fj)) fail_msg("%s", sc_errmsg(ctx));
  r = &fj->ranks[0];
  size_t ar = 0, ag2 = 0, rs2 = 0;
  double ar_bytes = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    if (op->kind != SC_JOP_COLL) continue;
    const sc_jgroup *g = &fj->groups[op->group];
    if (op->coll == SC_COLL_ALLREDUCE) {
      assert_string_equal(sc__job_str(fj, g->name), SC_JOB_HSDP_GROUP);
      assert_int_equal(g->n, 2);
      assert_int_equal(fj->members[g->off + 1] - fj->members[g->off], 4);
      ar++, ar_bytes += op->bytes;
      continue;
    }
    assert_string_equal(sc__job_str(fj, g->name), SC_JOB_FSDP_GROUP);
    assert_int_equal(g->n, 4);
    ag2 += op->coll == SC_COLL_ALLGATHER;
    rs2 += op->coll == SC_COLL_REDUCESCATTER;
  }
  assert_int_equal(ag2, 2 * 2 * 5);
  assert_int_equal(rs2, 5);
  assert_int_equal(ar, 5);
  assert_true(fabs(ar_bytes - grad_bytes / 4) < 1e-6 * grad_bytes);
  sc_job_free(fj);
  ro.scale_dp = 8;
  ro.scale_fsdp = 4;
  sc_replay_result hs;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &hs)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(hs.fsdp == 4 && hs.dp == 8 && hs.world == 8 && hs.ddp_buckets == 0);
  /* A shard group that does not divide the replicas is refused. */
  o.dp = 6;
  assert_int_equal(sc__job_shard(job, &o, &fj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "fsdp=4 with dp=6: the shard group must divide"));
  sc_job_free(job);
}

/* Context parallelism (tiny GPT, 4 layers, sequence 16, cp 2): one ring
 * step per layer forward (cp - 1), one and the dK/dV return backward, on
 * the CP group; the attention core's batched GEMMs run once per step on a
 * quarter of the scores each (half the work in all), the other GEMMs on
 * half the tokens; the gradients reduce over DP x CP. */
static void test_context(void **state) {
  (void)state;
  sc_job *job = tiny_gpt4();
  sc_shard_opts o = {1, 1, 1, 1, 0, 0, NULL, 0, 0, 0, 0, 2, 0, 0, 0, 0, NULL, NULL, 0};
  sc_shard_opts o1 = {1, 1, 1, 1, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *cj, *wj;
  if (sc__job_shard(job, &o, &cj)) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc__job_shard(job, &o1, &wj), 0);
  assert_int_equal(cj->world, 2);
  const sc_jrank *r = &cj->ranks[0], *w = &wj->ranks[0];
  size_t ring = 0, bmm_c = 0, bmm_w = 0;
  double fl_c = 0, fl_w = 0, bf_c = 0, bf_w = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    if (op->kind == SC_JOP_COLL && op->coll == SC_COLL_SENDRECV) {
      assert_string_equal(sc__job_str(cj, cj->groups[op->group].name), SC_JOB_CP_GROUP);
      ring++;
    }
    if (op->kind != SC_JOP_KERNEL || !op->shape) continue;
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    if (sh->cls != SC_JSHAPE_GEMM) continue;
    if (sh->batch > 1) bmm_c++, bf_c += op->flops;
    else fl_c += op->flops;
  }
  for (size_t k = 0; k < w->nops; k++) {
    const sc_jop *op = &w->ops[k];
    if (op->kind != SC_JOP_KERNEL || !op->shape) continue;
    const sc_jshape *sh = &w->shapes[op->shape - 1];
    if (sh->cls != SC_JSHAPE_GEMM) continue;
    if (sh->batch > 1) bmm_w++, bf_w += op->flops;
    else fl_w += op->flops;
  }
  assert_int_equal(ring, 4 * 1 + 4 * 2);
  assert_int_equal(bmm_c, 2 * bmm_w);
  assert_true(fabs(bf_c - bf_w / 2) < 1e-6 * bf_w);
  assert_true(fabs(fl_c - fl_w / 2) < 1e-6 * fl_w);
  sc_job_free(cj);
  /* Ulysses (a2a): no ring; an all-to-all before and after each layer's
   * attention core each way; the core's batched GEMMs (bmm) once, on the
   * heads / cp (one of the 2 here; the same FLOPs as the ring's cp steps of s/cp x s/cp); 2 heads
   * do not split 4 ways. */
  o.cp_comm = SC_CP_A2A;
  if (sc__job_shard(job, &o, &cj)) fail_msg("%s", sc_errmsg(ctx));
  r = &cj->ranks[0];
  size_t a2a = 0, bmm_a = 0;
  double bf_a = 0;
  ring = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    ring += op->kind == SC_JOP_COLL && op->coll == SC_COLL_SENDRECV;
    a2a += op->kind == SC_JOP_COLL && op->coll == SC_COLL_ALLTOALL;
    if (op->kind != SC_JOP_KERNEL || !op->shape) continue;
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    if (sh->cls == SC_JSHAPE_GEMM && !strcmp(sc__job_str(cj, op->name), "aten::bmm")) bmm_a++, bf_a += op->flops;
  }
  assert_int_equal(ring, 0);
  assert_int_equal(a2a, 4 * 2 * 2);
  assert_int_equal(bmm_a, bmm_w);
  assert_true(fabs(bf_a - bf_w / 2) < 1e-6 * bf_w);
  sc_job_free(cj);
  o.cp = 4;
  assert_int_equal(sc__job_shard(job, &o, &cj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "not divisible by tp x cp = 4"));
  o.cp = 2;
  /* All-gather (PyTorch's allgather rotation): each layer's attention core
   * waits for an all-gather of the whole sequence's K and V, forward and
   * backward (4 + 4), and its backward ends with a reduce-scatter of
   * dK/dV (4), all of cp x the rank's K/V bytes; the core's batched GEMMs
   * run once, on the rank's queries against every key (half the work, as
   * the ring's two steps of a quarter); no ring, no all-to-all. */
  o.cp_comm = SC_CP_ALLGATHER;
  if (sc__job_shard(job, &o, &cj)) fail_msg("%s", sc_errmsg(ctx));
  r = &cj->ranks[0];
  size_t ag = 0, rs = 0, bmm_g = 0;
  double bf_g = 0, ag_bytes = -1;
  ring = a2a = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    if (op->kind == SC_JOP_COLL) {
      ring += op->coll == SC_COLL_SENDRECV;
      a2a += op->coll == SC_COLL_ALLTOALL;
      if (op->coll == SC_COLL_ALLGATHER || op->coll == SC_COLL_REDUCESCATTER) {
        assert_string_equal(sc__job_str(cj, cj->groups[op->group].name), SC_JOB_CP_GROUP);
        if (ag_bytes < 0) ag_bytes = op->bytes;
        assert_true(op->bytes == ag_bytes && op->bytes > 0);
        ag += op->coll == SC_COLL_ALLGATHER;
        rs += op->coll == SC_COLL_REDUCESCATTER;
      }
    }
    if (op->kind != SC_JOP_KERNEL || !op->shape) continue;
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    if (sh->cls == SC_JSHAPE_GEMM && !strcmp(sc__job_str(cj, op->name), "aten::bmm")) bmm_g++, bf_g += op->flops;
  }
  assert_int_equal(ring, 0);
  assert_int_equal(a2a, 0);
  assert_int_equal(ag, 4 * 2);
  assert_int_equal(rs, 4);
  assert_int_equal(bmm_g, bmm_w);
  assert_true(fabs(bf_g - bf_w / 2) < 1e-6 * bf_w);
  sc_job_free(cj);
  o.cp_comm = SC_CP_A2A_P2P;
  assert_int_equal(sc__job_shard(job, &o, &cj), SC_EUNSUPPORTED);
  assert_non_null(strstr(sc_errmsg(ctx), "a2a+p2p is not modelled"));
  o.cp_comm = SC_CP_P2P;
  sc_job_free(wj);
  /* Replayed with DP 2: the DDP group holds both CP ranks of each replica. */
  sc_config cfg;
  replay_cfg(&cfg, 4);
  sc_replay_opts ro = {.replica_ranks = 1, .scale_cp = 2, .scale_dp = 2};
  sc_replay_result res;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(res.cp == 2 && res.dp == 2 && res.world == 4 && res.ddp_buckets > 0);
  assert_true(res.breakdown_s[SC_CAT_DP] > 0);
  /* At dp 1 the CP pair still reduces its gradients (DDP over DP x CP),
   * counted as DP although its members are those of the CP group. */
  ro.scale_dp = 0;
  if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res)) fail_msg("%s", sc_errmsg(ctx));
  assert_true(res.cp == 2 && res.world == 2 && res.ddp_buckets > 0);
  assert_true(res.breakdown_s[SC_CAT_DP] > 0 && res.breakdown_s[SC_CAT_CP] >= 0);
  /* A sequence cp does not divide. */
  o.cp = 3;
  assert_int_equal(sc__job_shard(job, &o, &cj), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "cp=3: the traced sequence of 16 tokens is not divisible by cp"));
  sc_job_free(job);
}

/* The fuzz corpus's cpu-small.scw: a version 2 job, without module paths. */
static sc_job *read_small_v2(void) {
  char p[4096];
  snprintf(p, sizeof p, "%s/tests/fuzz/corpus-scw/cpu-small.scw", sc_test_source_dir());
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  static unsigned char img[1 << 16];
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  assert_int_equal(img[8], 2); /* version 2 */
  sc_job *job;
  assert_int_equal(sc_job_read(ctx, "cpu-small.scw", img, n, &job), 0);
  return job;
}

/* A job without module paths (read from a version 2 file) cannot be split. */
static void test_no_modules(void **state) {
  (void)state;
  sc_job *job = read_small_v2();
  sc_shard_opts o = {2, 1, 1, 1, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
  sc_job *out;
  assert_int_equal(sc__job_shard(job, &o, &out), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "no module paths"));
  sc_job_free(job);
}

/* Layer-count extrapolation (layers.c): the 2-layer tiny GPT run with 3, 4
 * and 5 layers. The added layers are copies of the last traced one (its
 * modules under blocks.2 ... with the same types, as many ops each, its
 * gradient marks), the sharding rules see them as layers, and every added
 * layer adds the same time, also re-targeted to TP x PP. */
static void test_layers(void **state) {
  (void)state;
  sc_job *job = tiny_gpt();
  const sc_jrank *r0 = &job->ranks[0];
  int32_t ml0[256];
  assert_true(r0->nmodules <= 256);
  assert_int_equal(sc__shard_layers(job, r0, ml0, NULL), 2);
  size_t grads0 = count(r0, SC_JOP_GRAD), grads_last = 0, ops_last = 0;
  for (size_t k = 0; k < r0->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r0, k);
    if (om.module && ml0[om.module - 1] == 1) grads_last += r0->ops[k].kind == SC_JOP_GRAD, ops_last++;
  }
  assert_true(grads_last > 0);
  sc_job *out;
  int64_t traced;
  assert_int_equal(sc__job_layers(job, 5, &out, &traced), 0);
  assert_int_equal(traced, 2);
  const sc_jrank *r = &out->ranks[0];
  int32_t ml[1024];
  assert_true(r->nmodules <= 1024);
  assert_int_equal(sc__shard_layers(out, r, ml, NULL), 5);
  assert_int_equal(count(r, SC_JOP_GRAD), grads0 + 3 * grads_last);
  for (int32_t l = 1; l < 5; l++) { /* each layer as many tagged ops as the last traced one */
    size_t n = 0;
    for (size_t k = 0; k < r->nops; k++) {
      sc_jopmod om = sc__jrank_opmod(r, k);
      n += om.module && ml[om.module - 1] == l;
    }
    assert_int_equal(n, ops_last);
  }
  for (size_t m = 0; m < r0->nmodules; m++) {
    const char *p = sc__job_str(job, r0->modules[m].path);
    if (strncmp(p, "blocks.1", 8)) continue;
    char q[300];
    snprintf(q, sizeof q, "blocks.4%s", p + 8);
    int64_t c = module_of(out, r, q);
    if (c < 0) fail_msg("no module %s", q);
    assert_int_equal(r->modules[c].type, r0->modules[m].type);
    assert_int_equal(r->modules[c].heads, r0->modules[m].heads);
  }
  /* Dependencies stay within the rank and point backwards or to the same
   * places as the traced ones did. */
  for (size_t k = 0; k < r->nops; k++)
    for (uint32_t d = 0; d < r->ops[k].ndeps; d++) assert_true(r->deps[r->ops[k].dep_off + d] < r->nops);
  sc_job_free(out);
  /* As traced: the same job. */
  assert_int_equal(sc__job_layers(job, 2, &out, &traced), 0);
  assert_int_equal(out->ranks[0].nops, r0->nops);
  sc_job_free(out);
  /* Time per added layer, whole and at TP2 x PP2. */
  sc_config cfg;
  replay_cfg(&cfg, 4);
  for (int layout = 0; layout < 2; layout++) {
    double t[6];
    for (int64_t n = 3; n <= 5; n++) {
      sc_replay_opts ro = {.replica_ranks = 1, .layers = n};
      if (layout) ro.scale_tp = 2, ro.scale_pp = 2, ro.micro_batches = 4;
      sc_replay_result res;
      if (sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res)) fail_msg("layers %lld: %s", (long long)n, sc_errmsg(ctx));
      assert_int_equal(res.layers, n);
      assert_int_equal(res.traced_layers, 2);
      t[n] = res.breakdown_s[SC_CAT_COMPUTE];
    }
    print_message("layout %d: compute %.4f / %.4f / %.4f ms at 3 / 4 / 5 layers\n", layout, t[3] * 1e3, t[4] * 1e3,
                  t[5] * 1e3);
    assert_true(t[4] > t[3] && t[5] > t[4]);
    /* One stage: each added layer the same; two stages: layers alternate
     * between them, so compare two added layers at a time. */
    if (!layout) assert_true(fabs((t[5] - t[4]) - (t[4] - t[3])) < 1e-6 * t[5]);
  }
  /* Refused: fewer layers than traced, out of range, no module paths. */
  assert_int_equal(sc__job_layers(job, 1, &out, &traced), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "layers=1: fewer than the 2 traced"));
  assert_int_equal(sc__job_layers(job, 5000, &out, &traced), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "layers: 5000 out of range [1, 4096]"));
  sc_job_free(job);
  job = read_small_v2();
  assert_int_equal(sc__job_layers(job, 4, &out, &traced), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "no module paths"));
  sc_job_free(job);
}

/* torch.compile's fusion (fuse.c): in the tiny GPT, each run of a layer
 * pass's memory-bound kernels between two other kernels keeps its first
 * kernel with the run's largest bytes, the others move 0; nothing outside
 * the layers or outside memory-bound kernels changes; the count absorbed
 * is reported. blocks.0's attention core in forward (score bmm, then
 * scale, mask, softmax and dropout, then the value bmm) is one such run. */
static void test_fused(void **state) {
  (void)state;
  sc_job *job = tiny_gpt(), *fj;
  int64_t absorbed = 0;
  assert_int_equal(sc__job_fused(job, &fj, &absorbed), 0);
  const sc_jrank *a = &job->ranks[0], *b = &fj->ranks[0];
  assert_int_equal(a->nops, b->nops);
  int32_t ml[256];
  assert_true(a->nmodules <= 256);
  sc__shard_layers(job, a, ml, NULL);
  int64_t zeroed = 0;
  double before = 0, after = 0;
  for (size_t k = 0; k < a->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(a, k);
    int cls = a->ops[k].shape ? a->shapes[a->ops[k].shape - 1].cls : -1;
    int fusable = (cls == SC_JSHAPE_MEM || cls == SC_JSHAPE_NORM) && om.module && ml[om.module - 1] >= 0 &&
                  (om.pass == SC_JPASS_FWD || om.pass == SC_JPASS_BWD) && !om.param;
    if (!fusable) {
      assert_true(b->ops[k].bytes == a->ops[k].bytes);
      continue;
    }
    before += a->ops[k].bytes, after += b->ops[k].bytes;
    if (b->ops[k].bytes == 0) zeroed++;
    else assert_true(b->ops[k].bytes >= a->ops[k].bytes);
  }
  assert_int_equal(zeroed, absorbed);
  assert_true(absorbed > 0 && after < before);
  /* The attention core's run: from the first kernel after blocks.0's
   * score bmm to the value bmm. */
  int64_t m = module_of(job, a, "blocks.0");
  size_t k = 0;
  while (k < a->nops && !(sc__jrank_opmod(a, k).module == m + 1 && sc__jrank_opmod(a, k).pass == SC_JPASS_FWD &&
                          !strcmp(sc__job_str(job, a->ops[k].name), "aten::bmm")))
    k++;
  assert_true(k < a->nops);
  size_t h = k + 1;
  while (a->ops[h].kind != SC_JOP_KERNEL) h++;
  double big = 0;
  size_t q = h;
  for (; strcmp(sc__job_str(job, a->ops[q].name), "aten::bmm"); q++)
    if (a->ops[q].kind == SC_JOP_KERNEL) {
      if (a->ops[q].bytes > big) big = a->ops[q].bytes;
      if (q > h) assert_true(b->ops[q].bytes == 0);
    }
  assert_true(q > h + 3 && b->ops[h].bytes == big); /* scale, mask, softmax, dropout at least */
  sc_job_free(fj);
  sc_job_free(job);
}

/* FP8 linears (fp8.c): the tiny GPT's four nn.Linear of each of its 2
 * layers get a forward, an input-gradient and a weight-gradient FP8 GEMM
 * (no LM head here; the attention bmm stays); a job without module paths
 * is refused. */
static void test_fp8(void **state) {
  (void)state;
  sc_job *job = tiny_gpt(), *pj;
  int64_t n = 0;
  assert_int_equal(sc__job_fp8(job, &pj, &n), 0);
  const sc_jrank *b = &pj->ranks[0];
  int64_t cnt[SC_JSHAPE_COUNT] = {0};
  for (size_t k = 0; k < b->nops; k++)
    if (b->ops[k].shape) cnt[b->shapes[b->ops[k].shape - 1].cls]++;
  assert_int_equal(cnt[SC_JSHAPE_GEMM8_FWD], 2 * 4);
  assert_int_equal(cnt[SC_JSHAPE_GEMM8_FWD_SHARED], 0);
  assert_int_equal(cnt[SC_JSHAPE_GEMM8_DGRAD], 2 * 4);
  assert_int_equal(cnt[SC_JSHAPE_GEMM8_WGRAD], 2 * 4);
  assert_int_equal(n, 3 * 2 * 4);
  assert_true(cnt[SC_JSHAPE_GEMM] > 0); /* the attention's batched GEMMs */
  sc_job_free(pj);
  sc_job_free(job);
  job = read_small_v2();
  assert_int_equal(sc__job_fp8(job, &pj, &n), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "has no module paths to tell its layers and linears"));
  sc_job_free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rules_file),    cmocka_unit_test(test_classify),
      cmocka_unit_test(test_stage_cut),     cmocka_unit_test(test_tensor_parallel),
      cmocka_unit_test(test_pipeline),      cmocka_unit_test(test_no_modules),
      cmocka_unit_test(test_schedules),     cmocka_unit_test(test_zbv),           cmocka_unit_test(test_expert),           cmocka_unit_test(test_fsdp),
      cmocka_unit_test(test_context),       cmocka_unit_test(test_layers), cmocka_unit_test(test_fused), cmocka_unit_test(test_fp8),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
