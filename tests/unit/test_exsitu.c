/*
 * test_exsitu.c: the ex-situ importer (src/trace/exsitu.c, `import cpu`): a
 * CPU-profiled step becomes shaped kernels (convolution, GEMM, memory-bound,
 * gradients ready), round-trips through .scw, replays priced on a GPU with
 * and without DDP; GPU traces, missing shapes and missing durations are
 * refused with their messages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sctest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/job_int.h"
#include "stepcast/trace.h"
#include "ir/ir_int.h"
#include "cost/cost_int.h"

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

typedef sc_test_buf buf;

/* Imports one file image as one rank, fed in pieces of `piece` bytes. */
static int import_mem(sc_job *job, sc_trace_format fmt, const char *name, const void *data, size_t len,
                      size_t piece, int64_t hint) {
  sc_trace_reader *r;
  int rc = sc_trace_open(job, fmt, name, hint, &r);
  if (rc) return rc;
  const unsigned char *p = data;
  for (size_t off = 0; !rc && off < len; off += piece)
    rc = sc_trace_feed(r, p + off, len - off < piece ? len - off : piece);
  if (!rc) rc = sc_trace_finish(r);
  sc_trace_free(r);
  return rc;
}

/* A fresh job holding one imported rank, finished; the test fails on an
 * import error. */
static sc_job *imported(sc_trace_format fmt, const char *name, const char *data, size_t len, size_t piece) {
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  int rc = import_mem(job, fmt, name, data, len, piece, 0);
  if (!rc) rc = sc_job_finish(job);
  if (rc) fail_msg("%s: %s", name, sc_errmsg(ctx));
  return job;
}

static void job_image(const sc_job *job, buf *out) {
  out->len = 0;
  assert_int_equal(sc_job_write(job, sc_test_buf_write, out), 0);
}

static const sc_jop *find_op(const sc_job *job, const sc_jrank *r, const char *prefix, int nth) {
  for (size_t k = 0; k < r->nops; k++)
    if (!strncmp(sc__job_str(job, r->ops[k].name), prefix, strlen(prefix)) && nth-- == 0) return &r->ops[k];
  return NULL;
}

/* The config the CLI builds for a replay: the cluster for `world` ranks. */
static void replay_config(sc_config *cfg, int64_t world, int64_t gpn) {
  sc_test_example(cfg);
  assert_int_equal(sc_config_set(ctx, cfg, "cluster.gpu=a100-80gb"), 0);
  cfg->parallel.tp = cfg->parallel.pp = cfg->parallel.cp = cfg->parallel.vpp = 1;
  cfg->parallel.dp = 0;
  cfg->cluster.num_gpus = world;
  cfg->cluster.nodes = 0;
  cfg->cluster.gpus_per_node = gpn;
  cfg->training.micro_batch = 1;
  cfg->training.global_batch = world;
  assert_int_equal(sc_config_resolve(ctx, cfg), 0);
}

/* ------------------------------------------------------------ ex-situ */

/* A CPU trace as tools/trace_torch.py writes it: forward conv (with its
 * scalar arguments), linear (addmm under aten::linear), backward with a
 * convolution_backward (its children are the CPU's own kernels: dropped),
 * an autograd node, two AccumulateGrad and a view. Times in us. */
static const char exsitu_json[] =
    "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":0,\"world_size\":1},\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::conv2d\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":50,"
    "\"args\":{\"Input Dims\":[[8,3,32,32],[16,3,3,3],[16],[],[],[],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::convolution\",\"pid\":1,\"tid\":1,\"ts\":11,\"dur\":48,"
    "\"args\":{\"Input Dims\":[[8,3,32,32],[16,3,3,3],[16],[],[],[],[],[],[]],"
    "\"Input type\":[\"float\",\"float\",\"float\",\"\",\"\",\"\",\"\",\"\",\"\"],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"[2, 2]\",\"[1, 1]\",\"[1, 1]\",\"False\",\"[0, 0]\",\"1\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::view\",\"pid\":1,\"tid\":1,\"ts\":70,\"dur\":2,"
    "\"args\":{\"Input Dims\":[[8,16,16,16],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,\"tid\":1,\"ts\":80,\"dur\":30,"
    "\"args\":{\"Input Dims\":[[8,4096],[10,4096],[10]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::addmm\",\"pid\":1,\"tid\":1,\"ts\":85,\"dur\":20,"
    "\"args\":{\"Input Dims\":[[10],[8,4096],[4096,10],[],[]],\"Module\":\"fc\",\"Module Type\":\"Linear\","
    "\"Pass\":\"forward\",\"Module Heads\":4}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: ConvolutionBackward0\","
    "\"pid\":1,\"tid\":1,\"ts\":200,\"dur\":100,\"args\":{}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::convolution_backward\",\"pid\":1,\"tid\":1,\"ts\":201,\"dur\":98,"
    "\"args\":{\"Input Dims\":[[8,16,16,16],[8,3,32,32],[16,3,3,3],[],[],[],[],[],[],[],[]],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"\",\"[2, 2]\",\"[1, 1]\",\"[1, 1]\",\"False\",\"[0, 0]\",\"1\","
    "\"[False, True, True]\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::fill_\",\"pid\":1,\"tid\":1,\"ts\":250,\"dur\":10,"
    "\"args\":{\"Input Dims\":[[16,3,3,3],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":310,\"dur\":5,\"args\":{\"Input Dims\":[[16,3,3,3]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":320,\"dur\":5,\"args\":{\"Input Dims\":[[10,4096]],\"Module\":\"fc\",\"Module Type\":\"Linear\","
    "\"Pass\":\"backward\",\"Parameter\":\"weight\"}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":1,\"tid\":1,\"ts\":400,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[10,4096],[10,4096],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":1,\"tid\":1,\"ts\":410,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[],[],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::frobnicate\",\"pid\":1,\"tid\":1,\"ts\":420,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[10,4096]]}}"
    "]}";

static void test_exsitu(void **state) {
  (void)state;
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  size_t len = sizeof exsitu_json - 1;
  int rc = import_mem(job, SC_TRACE_CPU, "cpu.json", exsitu_json, len, 7, 0);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_job_finish(job), 0);
  const sc_jrank *r = &job->ranks[0];
  /* Kernels: conv forward; addmm (not aten::linear); the weight gradient
   * only (the input needs none); fill_ inside convolution_backward is its
   * implementation: dropped; 2 AccumulateGrad adds; one add_; the unknown
   * operator. The view and the 0-dim add_ launch nothing. */
  size_t kernels = 0, grads = 0, host = 0;
  for (size_t k = 0; k < r->nops; k++) {
    kernels += r->ops[k].kind == SC_JOP_KERNEL;
    grads += r->ops[k].kind == SC_JOP_GRAD;
    host += r->ops[k].kind == SC_JOP_HOST;
  }
  assert_int_equal(kernels, 7);
  assert_int_equal(grads, 2);
  const sc_jop *conv = find_op(job, r, "aten::convolution", 0);
  assert_non_null(conv);
  assert_true(conv->shape > 0);
  const sc_jshape *sh = &r->shapes[conv->shape - 1];
  /* 32x32 input, 3x3 kernel, stride 2, padding 1: 16x16 output. */
  assert_int_equal(sh->cls, SC_JSHAPE_CONV);
  assert_true(sh->m == 8 * 16 * 16 && sh->n == 16 && sh->k == 27);
  assert_true(conv->flops == 2.0 * 8 * 16 * 16 * 16 * 27);
  const sc_jop *mm = find_op(job, r, "aten::addmm", 0);
  sh = &r->shapes[mm->shape - 1];
  assert_true(sh->cls == SC_JSHAPE_GEMM && sh->m == 8 && sh->n == 10 && sh->k == 4096);
  const sc_jop *wg = find_op(job, r, "aten::convolution_backward", 0);
  sh = &r->shapes[wg->shape - 1];
  assert_true(sh->m == 16 && sh->n == 27 && sh->k == 8 * 16 * 16); /* weight gradient */
  assert_null(find_op(job, r, "aten::convolution_backward", 1));
  assert_null(find_op(job, r, "aten::fill_", 0));
  const sc_jop *g = find_op(job, r, "grad ready", 1);
  assert_true(g->bytes == 10 * 4096 * 4.0);
  /* Module paths (version 3): the addmm and the second gradient (and its
   * accumulation kernel) name module fc; the conv has none. */
  assert_int_equal(r->nmodules, 1);
  assert_string_equal(sc__job_str(job, r->modules[0].path), "fc");
  assert_string_equal(sc__job_str(job, r->modules[0].type), "Linear");
  assert_int_equal(r->modules[0].heads, 4);
  sc_jopmod om = sc__jrank_opmod(r, (size_t)(mm - r->ops));
  assert_true(om.module == 1 && om.pass == SC_JPASS_FWD && om.param == SC_JPARAM_NONE);
  om = sc__jrank_opmod(r, (size_t)(g - r->ops));
  assert_true(om.module == 1 && om.pass == SC_JPASS_BWD && om.param == SC_JPARAM_WEIGHT);
  assert_int_equal(sc__jrank_opmod(r, (size_t)(conv - r->ops)).module, 0);
  /* Every kernel waits for its launch, a host op. */
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_KERNEL) {
      assert_int_equal(r->ops[k].ndeps, 1);
      assert_int_equal(r->ops[r->deps[r->ops[k].dep_off]].kind, SC_JOP_HOST);
    }
  /* Counted warning for the unknown operator. */
  buf wb = {0};
  assert_int_equal(sc_job_write_warnings(job, sc_test_buf_write, &wb), 0);
  assert_non_null(strstr(wb.p, "unknown operator aten::frobnicate"));
  /* Round trip through .scw keeps shapes. */
  buf img = {0};
  job_image(job, &img);
  sc_job *back;
  assert_int_equal(sc_job_read(ctx, "x.scw", img.p, img.len, &back), 0);
  buf img2 = {0};
  job_image(back, &img2);
  assert_int_equal(img.len, img2.len);
  assert_memory_equal(img.p, img2.p, img.len);
  /* Replay: priced on the GPU; the host dispatch bounds this tiny step. */
  sc_config cfg;
  replay_config(&cfg, 1, 0);
  cfg.training.precision = SC_PREC_FP32;
  sc_replay_opts o = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  sc_replay_result res, res2;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  assert_int_equal(res.priced_ops, (int64_t)(kernels + host));
  assert_int_equal(res.ddp_buckets, 0);
  assert_true(res.predicted_step_s > 0 && res.gpu_busy_s > 0);
  /* Host time grows the step: 10 us per operator instead of 1. */
  cfg.costs.host_op_us = 1;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  cfg.costs.host_op_us = 10;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res2), 0);
  assert_true(res2.predicted_step_s > res.predicted_step_s);
  /* DDP on 16 ranks (2 nodes): both gradients (1.8 KiB + 160 KiB) fit the
   * first 1 MiB bucket: one all-reduce; a 1 KiB first bucket closes after the
   * first gradient: two. */
  replay_config(&cfg, 16, 8);
  cfg.training.precision = SC_PREC_FP32;
  o.scale_dp = 16;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  assert_int_equal(res.ddp_buckets, 1);
  assert_int_equal(res.modelled_collectives, 1);
  assert_true(res.breakdown_s[SC_CAT_DP] > 0);
  o.ddp_first_bucket_mb = 1.0 / 1024;
  o.ddp_bucket_mb = 1.0 / 16;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res2), 0);
  assert_int_equal(res2.ddp_buckets, 2);
  assert_true(res2.predicted_step_s > res.predicted_step_s * 0.99);
  /* A GPU trace is refused, with a pointer to the right importer. */
  sc_job *bad;
  assert_int_equal(sc_job_new(ctx, &bad), 0);
  const char *gpu = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}]}";
  assert_int_equal(import_mem(bad, SC_TRACE_CPU, "g.json", gpu, strlen(gpu), 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "import kineto"));
  sc_job_free(bad);
  assert_int_equal(sc_job_new(ctx, &bad), 0);
  const char *noshape = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":1,\"dur\":1}]}";
  assert_int_equal(import_mem(bad, SC_TRACE_CPU, "n.json", noshape, strlen(noshape), 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "record_shapes"));
  sc_job_free(bad);
  assert_int_equal(sc_job_new(ctx, &bad), 0);
  const char *nodur = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":1}]}";
  assert_int_equal(import_mem(bad, SC_TRACE_CPU, "d.json", nodur, strlen(nodur), 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "d.json:16: operator event without \"dur\""));
  sc_job_free(bad);
  free(wb.p);
  free(img.p);
  free(img2.p);
  sc_job_free(back);
  sc_job_free(job);
}

/* ------------------------------------------------------------ shards */

/* Per-rank shard traces (tools/trace_torch.py --tp 2 --pp-stage K/2), cut
 * down to a linear layer per stage: stage 0 runs a forward GEMM (tokens 4 x
 * in 8 -> out 16) and its all-reduce (g), sends the activation; in backward
 * receives its gradient, computes the input gradient (4 x 8) and the
 * weight gradient (8 x 16), then f's all-reduce of the input gradient (128
 * bytes: it must follow the input-gradient GEMM, not the last one). Stage 1
 * receives and sends the other way. %d: stage; %s: its pipeline markers. */
#define SHARD_EV(name, ts, dims, pass) \
  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts ",\"dur\":1," \
  "\"args\":{\"Input Dims\":" dims ",\"Input type\":[\"float\",\"float\"],\"Pass\":\"" pass "\"," \
  "\"Module\":\"blocks.0.fc\",\"Module Type\":\"Linear\"}}"
static const char shard0_json[] =
    "{\"distributedInfo\":{\"rank\":0,\"world_size\":4,\"tp\":2,\"pp\":2,\"pp_stage\":0},\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"ts\":0,\"dur\":100},"
    SHARD_EV("aten::mm", 1, "[[4,8],[8,16]]", "forward") ","
    SHARD_EV("stepcast::tp_all_reduce[bytes=256]", 3, "[[4,16]]", "forward") ","
    SHARD_EV("stepcast::pp_send[bytes=256]", 4, "[[4,16]]", "forward") ","
    SHARD_EV("stepcast::pp_recv[bytes=256]", 10, "[[4,16]]", "backward") ","
    SHARD_EV("aten::mm", 11, "[[4,16],[16,8]]", "backward") ","
    SHARD_EV("aten::mm", 13, "[[8,4],[4,16]]", "backward") ","
    SHARD_EV("stepcast::tp_all_reduce[bytes=128]", 15, "[[4,8]]", "backward") "]}";
static const char shard1_json[] =
    "{\"distributedInfo\":{\"rank\":2,\"world_size\":4,\"tp\":2,\"pp\":2,\"pp_stage\":1},\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"ts\":0,\"dur\":100},"
    SHARD_EV("stepcast::pp_recv[bytes=256]", 1, "[[4,16]]", "forward") ","
    SHARD_EV("aten::mm", 2, "[[4,8],[8,16]]", "forward") ","
    SHARD_EV("aten::mm", 11, "[[4,16],[16,8]]", "backward") ","
    SHARD_EV("stepcast::pp_send[bytes=128]", 15, "[[4,8]]", "backward") "]}";

/* Imports one hand-written shard trace into a fresh job and returns the
 * error code (message in sc_errmsg). */
static int import_one(const char *name, const char *json) {
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  int rc = import_mem(job, SC_TRACE_CPU, name, json, strlen(json), 5, 0);
  if (!rc) rc = sc_job_finish(job);
  sc_job_free(job);
  return rc;
}

static void test_shards(void **state) {
  (void)state;
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  /* Stage 1 first: the job takes its stages in any order. */
  int rc = import_mem(job, SC_TRACE_CPU, "s1.json", shard1_json, sizeof shard1_json - 1, 9, 0);
  if (!rc) rc = import_mem(job, SC_TRACE_CPU, "s0.json", shard0_json, sizeof shard0_json - 1, 9, 1);
  if (!rc) rc = sc_job_finish(job);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(job->shard_tp, 2);
  assert_int_equal(job->shard_pp, 2);
  assert_int_equal(job->world, 4);
  assert_int_equal(job->nranks, 2);
  const sc_jrank *r0 = job->ranks[0].rank == 0 ? &job->ranks[0] : &job->ranks[1];
  const sc_jrank *r1 = r0 == &job->ranks[0] ? &job->ranks[1] : &job->ranks[0];
  assert_int_equal(r1->rank, 2);
  /* Stage 0: two all-reduces over its TP group {0, 1}: the forward one
   * after the forward GEMM, the backward one after the input-gradient GEMM
   * (4 x 8 = 128 bytes of output), not the weight gradient after it. */
  const sc_jop *ar0 = find_op(job, r0, "tp: all_reduce", 0), *ar1 = find_op(job, r0, "tp: all_reduce", 1);
  assert_non_null(ar0);
  assert_non_null(ar1);
  assert_null(find_op(job, r0, "tp: all_reduce", 2));
  assert_true(ar0->kind == SC_JOP_COLL && ar0->coll == SC_COLL_ALLREDUCE && ar0->bytes == 256);
  assert_true(ar1->bytes == 128);
  const sc_jgroup *g = &job->groups[ar0->group];
  assert_int_equal(g->n, 2);
  assert_true(job->members[g->off] == 0 && job->members[g->off + 1] == 1);
  assert_string_equal(sc__job_str(job, g->name), "tensor parallel");
  const sc_jop *fwd = find_op(job, r0, "aten::mm", 0), *dx = find_op(job, r0, "aten::mm", 1);
  assert_int_equal(ar0->ndeps, 1);
  assert_ptr_equal(&r0->ops[r0->deps[ar0->dep_off]], fwd);
  assert_ptr_equal(&r0->ops[r0->deps[ar1->dep_off]], dx);
  /* Pipeline markers: stage 0 sends to and receives from rank 2, stage 1
   * the other way; the sizes are the markers'. */
  const sc_jop *snd = find_op(job, r0, "pp: send", 0), *rcv = find_op(job, r0, "pp: recv", 0);
  assert_true(snd && snd->kind == SC_JOP_SEND && snd->peer == 2 && snd->bytes == 256);
  assert_true(rcv && rcv->kind == SC_JOP_RECV && rcv->peer == 2);
  snd = find_op(job, r1, "pp: send", 0);
  assert_true(snd && snd->peer == 0 && snd->bytes == 128 && sc__jrank_opmod(r1, (size_t)(snd - r1->ops)).pass == SC_JPASS_BWD);
  /* The layout survives a .scw round trip. */
  buf img = {0}, img2 = {0};
  job_image(job, &img);
  sc_job *back;
  assert_int_equal(sc_job_read(ctx, "s.scw", img.p, img.len, &back), 0);
  assert_true(back->shard_tp == 2 && back->shard_pp == 2);
  job_image(back, &img2);
  assert_int_equal(img.len, img2.len);
  assert_memory_equal(img.p, img2.p, img.len);
  /* Replay: the stage cut of the traced layout, 4 micro-batches by default
   * of pp (2 here), TP all-reduces priced and p2p paired. */
  sc_config cfg;
  replay_config(&cfg, 4, 8);
  sc_replay_opts o = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  sc_replay_result res;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), 0);
  assert_true(res.tp == 2 && res.pp == 2 && res.micro_batches == 2);
  assert_true(res.predicted_step_s > 0);
  /* Another layout is refused. */
  o.scale_tp = 4;
  assert_int_equal(sc_replay(ctx, back, &cfg, &o, NULL, NULL, &res), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "shard traces are of tp=2, pp=2"));
  free(img.p);
  free(img2.p);
  sc_job_free(back);
  sc_job_free(job);

  /* Bad inputs: each names its file and offset. */
  char bad[sizeof shard0_json + 64];
  assert_int_equal(import_one("s0.json", shard0_json), SC_EINVAL); /* stage 1 missing */
  assert_non_null(strstr(sc_errmsg(ctx), "s0.json:"));
  assert_non_null(strstr(sc_errmsg(ctx), "pp 2: no trace of stage 1"));
  const struct {
    const char *from, *to, *msg;
  } cases[] = {
      {"tp_all_reduce[bytes=256]", "tp_all_reduce[]", "no size (stepcast::tp_all_reduce[bytes=N])"},
      {"tp_all_reduce[bytes=256]", "tp_all_reduce", "no size"},
      {"tp_all_reduce[bytes=256]", "tp_all_reduce[bytes=0]", "bytes out of range"},
      {"tp_all_reduce[bytes=256]", "all_gather[bytes=256]", "unknown (tp_all_reduce, pp_send or pp_recv)"},
      {"\"tp\":2,", "", "a shard trace gives tp, pp and pp_stage; tp is missing"},
      {"\"pp_stage\":0", "\"pp_stage\":2", "distributedInfo.pp_stage: 2 out of range [0, 1]"},
      {"\"pp_stage\":0", "\"pp_stage\":\"0\"", "distributedInfo.pp_stage: not a non-negative integer"},
      {"\"rank\":0", "\"rank\":1", "distributedInfo.rank 1 is not pp_stage x tp = 0"},
      {"\"world_size\":4", "\"world_size\":8", "world_size 8 is not tp x pp = 4"},
      {"\"world_size\":4,\"tp\":2", "\"world_size\":2,\"tp\":1", "in a trace of tp 1: no TP group"},
      {"pp_recv[bytes=256]", "pp_send[bytes=256]", "no stage -1"}, /* a backward send from stage 0 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *at = strstr(shard0_json, cases[i].from);
    assert_non_null(at);
    size_t pre = (size_t)(at - shard0_json);
    snprintf(bad, sizeof bad, "%.*s%s%s", (int)pre, shard0_json, cases[i].to, at + strlen(cases[i].from));
    assert_int_equal(import_one("b.json", bad), SC_EINVAL);
    if (!strstr(sc_errmsg(ctx), cases[i].msg) || strncmp(sc_errmsg(ctx), "b.json:", 7))
      fail_msg("case %zu: %s", i, sc_errmsg(ctx));
  }
  /* A marker in a trace that is no shard's. */
  const char *plain = "{\"traceEvents\":[" SHARD_EV("aten::mm", 1, "[[4,8],[8,16]]", "forward") ","
                      SHARD_EV("stepcast::tp_all_reduce[bytes=256]", 3, "[[4,16]]", "forward") "]}";
  assert_int_equal(import_one("p.json", plain), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "in a trace without distributedInfo tp, pp and pp_stage"));
}

/* Fused attention (the operators PyTorch 2's SDPA records, as
 * tools/trace_torch.py --attention sdpa writes them), a recomputed forward
 * GEMM (activation checkpointing: Pass "recompute"), and gradients handed
 * over (zero_grad(set_to_none=True): AccumulateGrad's only child a detach)
 * or accumulated (an add_ inside). */
static const char attn_json[] =
    "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":0,\"world_size\":1},\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_scaled_dot_product_flash_attention\",\"pid\":1,\"tid\":1,"
    "\"ts\":10,\"dur\":5,\"args\":{\"Input Dims\":[[2,4,128,64],[2,4,128,64],[2,4,128,32],[],[],[],[]],"
    "\"Input type\":[\"c10::BFloat16\",\"c10::BFloat16\",\"c10::BFloat16\",\"\",\"\",\"\",\"\"],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"0.0\",\"True\",\"False\",\"\"],\"Module\":\"blocks.0.attn\","
    "\"Module Type\":\"Attention\",\"Pass\":\"forward\",\"Module Heads\":4}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_scaled_dot_product_efficient_attention\",\"pid\":1,"
    "\"tid\":1,\"ts\":20,\"dur\":5,\"args\":{\"Input Dims\":[[1,2,64,16],[1,2,32,16],[1,2,32,16],[],[]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[256,256],[256,64]],\"Module\":\"blocks.0.k\",\"Module Type\":\"Linear\","
    "\"Pass\":\"recompute\"}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_scaled_dot_product_flash_attention_backward\",\"pid\":1,"
    "\"tid\":1,\"ts\":110,\"dur\":5,\"args\":{\"Input Dims\":[[2,4,128,32],[2,4,128,64],[2,4,128,64],"
    "[2,4,128,32],[2,4,128,32],[2,4,128],[],[],[],[],[],[],[],[]],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"0.0\",\"True\",\"\",\"\"],"
    "\"Module\":\"blocks.0.attn\",\"Module Type\":\"Attention\",\"Pass\":\"backward\"}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":200,\"dur\":5,\"args\":{\"Input Dims\":[[64,256]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::detach\",\"pid\":1,\"tid\":1,\"ts\":201,\"dur\":1,"
    "\"args\":{\"Input Dims\":[[64,256]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":210,\"dur\":5,\"args\":{\"Input Dims\":[[256]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":1,\"tid\":1,\"ts\":211,\"dur\":1,"
    "\"args\":{\"Input Dims\":[[256],[256],[]]}}"
    "]}";

static void test_attention(void **state) {
  (void)state;
  sc_job *job = imported(SC_TRACE_CPU, "attn.json", attn_json, sizeof attn_json - 1, 13);
  const sc_jrank *r = &job->ranks[0];
  /* Causal flash forward: 2 b h s s (d + dv) / 2 FLOPs; query length,
   * head dim, key length, batch x heads in the shape; bf16 bytes. */
  const sc_jop *f = find_op(job, r, "aten::_scaled_dot_product_flash_attention", 0);
  assert_non_null(f);
  const sc_jshape *sh = &r->shapes[f->shape - 1];
  assert_int_equal(sh->cls, SC_JSHAPE_ATTN);
  assert_true(sh->m == 128 && sh->n == 64 && sh->k == 128 && sh->batch == 8);
  double fl = 2.0 * 2 * 4 * 128 * 128 * (64 + 32) * 0.5;
  assert_true(f->flops == fl);
  assert_true(f->bytes == 2.0 * (3 * 65536 + 32768) + 4.0 * 2 * 4 * 128);
  /* Its backward: 2.5x; not causal without "Concrete Inputs" (warned),
   * keys longer than queries. */
  const sc_jop *bw = find_op(job, r, "aten::_scaled_dot_product_flash_attention_backward", 0);
  assert_true(bw->flops == 2.5 * fl);
  assert_int_equal(sc__jrank_opmod(r, (size_t)(bw - r->ops)).pass, SC_JPASS_BWD);
  const sc_jop *ef = find_op(job, r, "aten::_scaled_dot_product_efficient_attention", 0);
  sh = &r->shapes[ef->shape - 1];
  assert_true(sh->m == 64 && sh->k == 32 && ef->flops == 2.0 * 1 * 2 * 64 * 32 * 32);
  buf wb = {0};
  assert_int_equal(sc_job_write_warnings(job, sc_test_buf_write, &wb), 0);
  assert_non_null(strstr(wb.p, "_scaled_dot_product_efficient_attention without \"Concrete Inputs\""));
  free(wb.p);
  /* The recomputed GEMM: pass recompute, shaped as forward. */
  const sc_jop *mm = find_op(job, r, "aten::mm", 0);
  assert_int_equal(sc__jrank_opmod(r, (size_t)(mm - r->ops)).pass, SC_JPASS_RECOMP);
  /* Two gradients ready, one accumulation kernel (the handed-over one
   * launches nothing). */
  size_t grads = 0, acc = 0;
  for (size_t k = 0; k < r->nops; k++) {
    grads += r->ops[k].kind == SC_JOP_GRAD;
    acc += r->ops[k].kind == SC_JOP_KERNEL &&
           !strcmp(sc__job_str(job, r->ops[k].name), "torch::autograd::AccumulateGrad");
  }
  assert_int_equal(grads, 2);
  assert_int_equal(acc, 1);
  /* Replay prices each attention op with the attention model: bf16 on an
   * H100 the three take attn_ns of their FLOPs; the step is no shorter. */
  sc_config cfg;
  replay_config(&cfg, 1, 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "cluster.gpu=h100-sxm"), 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "training.precision=bf16"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  /* ... and the GEMM (too small for split-K) and the accumulation (3 x
   * its fp32 bytes) as any ex-situ op. */
  double want = cost.compute->attn_ns(&cost, fl, 128, 64) + cost.compute->attn_ns(&cost, 2.5 * fl, 128, 64) +
                cost.compute->attn_ns(&cost, ef->flops, 64, 16) + cost.compute->gemm_ns(&cost, 256, 64, 256) +
                cost.compute->mem_ns(&cost, 3.0 * 256 * 4);
  sc__cost_release(ctx, &cost);
  sc_replay_opts o = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  sc_replay_result res;
  assert_int_equal(sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res), 0);
  assert_true(fabs(res.gpu_busy_s * 1e9 - want) < 1e-6 * want);
  sc_job_free(job);
}

/* Eager attention's batched score GEMMs (two of M, N, K equal and above the
 * third: Q K^T writes the s x s scores, P V reads them) move the scores at
 * scores_mem_eff; a batched GEMM of another shape is priced as any GEMM. */
static const char bmm_json[] =
    "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":0,\"world_size\":1},\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::bmm\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[8,512,64],[8,64,512]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::bmm\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[8,512,512],[8,512,64]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::bmm\",\"pid\":1,\"tid\":1,\"ts\":30,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[8,512,64],[8,64,256]]}}"
    "]}";

static void test_score_gemms(void **state) {
  (void)state;
  sc_job *job = imported(SC_TRACE_CPU, "bmm.json", bmm_json, sizeof bmm_json - 1, 4096);
  sc_config cfg;
  replay_config(&cfg, 1, 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  const sc_compute_model *m = cost.compute;
  double want = m->scores_gemm_ns(&cost, 8 * 512, 512, 64) + m->scores_gemm_ns(&cost, 8 * 512, 64, 512) +
                m->gemm_ns(&cost, 8 * 512, 256, 64);
  /* the score GEMMs are slower than the plain roofline prices them */
  assert_true(m->scores_gemm_ns(&cost, 8 * 512, 512, 64) > m->gemm_ns(&cost, 8 * 512, 512, 64));
  sc__cost_release(ctx, &cost);
  sc_replay_opts o = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  sc_replay_result res;
  assert_int_equal(sc_replay(ctx, job, &cfg, &o, NULL, NULL, &res), 0);
  if (fabs(res.gpu_busy_s * 1e9 - want) > 1e-6 * want)
    fail_msg("GPU busy %.1f ns, want %.1f ns", res.gpu_busy_s * 1e9, want);
  sc_job_free(job);
}

/* A trace that ran on a GPU (tools/measure_gpu.py's layout: Kineto with
 * record_shapes): refused by plain `import cpu`, taken with SC_TRACE_CPU_OF_GPU
 * (`import cpu --gpu-trace`), whose kernels and runtime calls are ignored and
 * whose profiler step is kept as the measured step. SDPA's cuDNN kernels get
 * the cuDNN attention class; fused AdamW, whose TensorLists carry no shapes,
 * is sized by the step's gradients: 7 passes over their bytes, streamed at
 * 0.83 of a copy's rate. */
static const char gpu_json[] =
    "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":2500},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_scaled_dot_product_cudnn_attention\",\"pid\":1,\"tid\":1,"
    "\"ts\":10,\"dur\":20,\"args\":{\"Input Dims\":[[2,4,128,64],[2,4,128,64],[2,4,128,64],[],[],[],[],[],[]],"
    "\"Input type\":[\"c10::BFloat16\",\"c10::BFloat16\",\"c10::BFloat16\",\"\",\"\",\"\",\"\",\"\",\"\"],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"\",\"True\",\"0.\",\"True\",\"False\",\"\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":12,\"dur\":4,"
    "\"args\":{\"correlation\":7}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"cudnn_generated_sdpa_fprop\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":90,"
    "\"args\":{\"correlation\":7}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":300,\"dur\":5,\"args\":{\"Input Dims\":[[1024,1024]],\"Input type\":[\"float\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"torch::autograd::AccumulateGrad\",\"pid\":1,\"tid\":1,"
    "\"ts\":310,\"dur\":5,\"args\":{\"Input Dims\":[[1024]],\"Input type\":[\"float\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_fused_adamw_\",\"pid\":1,\"tid\":1,\"ts\":400,\"dur\":50,"
    "\"args\":{\"Input Dims\":[[],[],[],[],[],[],[],[],[],[],[],[],[],[],[]],"
    "\"Input type\":[\"TensorList\",\"TensorList\",\"TensorList\",\"TensorList\",\"TensorList\",\"TensorList\","
    "\"Scalar\",\"Scalar\",\"Scalar\",\"Scalar\",\"Scalar\",\"Scalar\",\"Scalar\",\"\",\"\"],"
    "\"Concrete Inputs\":[\"\",\"\",\"\",\"\",\"\",\"\",\"1e-05\",\"0.9\",\"0.999\",\"0.01\",\"1e-08\",\"False\","
    "\"False\",\"\",\"\"]}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"multi_tensor_apply_kernel\",\"pid\":0,\"tid\":7,\"ts\":500,\"dur\":900,"
    "\"args\":{\"correlation\":9}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::cat\",\"pid\":1,\"tid\":1,\"ts\":350,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[[2,64],[2,64]],[]],\"Input type\":[\"TensorList\",\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaDeviceSynchronize\",\"pid\":1,\"tid\":1,\"ts\":2000,"
    "\"dur\":400,\"args\":{}}"
    "]}";

static void test_gpu_trace(void **state) {
  (void)state;
  sc_job *job;
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_CPU, "gpu.json", gpu_json, sizeof gpu_json - 1, 64, 0), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "2 GPU kernel/copy events: this trace ran on a GPU"));
  assert_non_null(strstr(sc_errmsg(ctx), "--gpu-trace"));
  sc_job_free(job);
  job = imported(SC_TRACE_CPU_OF_GPU, "gpu.json", gpu_json, sizeof gpu_json - 1, 64);
  const sc_jrank *r = &job->ranks[0];
  assert_true(r->span_ns == 2500000); /* the profiler step, measured */
  const sc_jop *a = find_op(job, r, "aten::_scaled_dot_product_cudnn_attention", 0);
  assert_non_null(a);
  assert_int_equal(r->shapes[a->shape - 1].cls, SC_JSHAPE_ATTN_CUDNN);
  assert_true(a->flops == 2.0 * 2 * 4 * 128 * 128 * (64 + 64) * 0.5);
  const sc_jop *o = find_op(job, r, "aten::_fused_adamw_", 0);
  assert_non_null(o);
  double grad_bytes = 4.0 * (1024 * 1024 + 1024);
  assert_true(fabs(o->bytes - 7.0 * grad_bytes / 0.83) < 1e-9 * o->bytes); /* at 0.83 of a copy's rate */
  /* The host ops carry the trace's own host timeline: up to the first
   * launch (the cudaLaunchKernel at 12 us), then to each priced operator
   * without a launch call at its start, then the tail to the step's end:
   * the 2.5 ms step less the 0.4 ms the host waited in
   * cudaDeviceSynchronize. */
  int64_t host_sum = 0, first_host = -1;
  for (size_t k = 0; k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_HOST) {
      assert_int_equal(r->ops[k].shape, 0);
      if (first_host < 0) first_host = r->ops[k].dur_ns;
      host_sum += r->ops[k].dur_ns;
    }
  assert_true(first_host == 12000);
  /* An operator on tensor lists (no shapes) is counted, not hidden. */
  buf wb = {0};
  assert_int_equal(sc_job_write_warnings(job, sc_test_buf_write, &wb), 0);
  assert_non_null(strstr(wb.p, "aten::cat has tensor-list inputs, whose dtype the profiler does not record: not priced"));
  free(wb.p);
  assert_true(host_sum == 2100000);
  /* No kernel of the trace became an op: the cudnn attention, the two
   * gradients' marks, the optimizer and host ops only. */
  assert_null(find_op(job, r, "cudnn_generated", 0));
  assert_null(find_op(job, r, "multi_tensor_apply", 0));
  /* Replay on an H200: the cuDNN attention at cudnn_attn_eff, i.e. the
   * attention model's time scaled by attn_eff / cudnn_attn_eff. */
  sc_config cfg;
  replay_config(&cfg, 1, 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "cluster.gpu=h200"), 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "training.precision=bf16"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  double ov = cost.p.kernel_overhead_us * 1e3;
  double t_attn = cost.compute->attn_ns(&cost, a->flops, 128, 64);
  /* ... the two accumulations (AccumulateGrad without children: into an
   * existing gradient, 3 x its bytes) and the optimizer's 7 passes. */
  double want = ov + (t_attn - ov) * cost.p.attn_eff / cost.p.cudnn_attn_eff +
                cost.compute->mem_ns(&cost, 3.0 * 4 * 1024 * 1024) + cost.compute->mem_ns(&cost, 3.0 * 4 * 1024) +
                cost.compute->mem_ns(&cost, 7.0 * grad_bytes / 0.83);
  assert_true(cost.p.cudnn_attn_eff != cost.p.attn_eff);
  sc__cost_release(ctx, &cost);
  sc_replay_opts ro = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  sc_replay_result res;
  assert_int_equal(sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res), 0);
  if (fabs(res.gpu_busy_s * 1e9 - want) > 1e-6 * want)
    fail_msg("busy %.1f ns, want %.1f", res.gpu_busy_s * 1e9, want);
  /* The trace names its GPU (deviceProperties): on it the measured step is
   * compared; on another it is shown, not compared. */
  assert_string_equal(sc__job_str(job, r->gpu), "NVIDIA H200");
  assert_string_equal(sc_job_gpu_preset(job), "h200");
  assert_null(res.traced_gpu);
  assert_true(res.traced_step_s == 2.5e-3 && res.error_pct != 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "cluster.gpu=a100-80gb"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  assert_int_equal(sc_replay(ctx, job, &cfg, &ro, NULL, NULL, &res), 0);
  assert_non_null(res.traced_gpu);
  assert_string_equal(res.traced_gpu, "h200");
  assert_true(res.error_pct == 0 && res.traced_step_s == 2.5e-3);
  sc_job_free(job);
}

/* Memory-bound pricing measured in the H200 traces: a widening copy (bf16
 * into fp32) at half a copy's rate, a narrowing one at the copy's; a
 * log-softmax over rows longer than 1,024 elements four passes, over
 * shorter rows two (backward: four and three). */
static const char membound_json[] =
    "{\"schemaVersion\":1,\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[64,32],[]],\"Input type\":[\"float\",\"c10::BFloat16\",\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[64,32],[]],\"Input type\":[\"c10::BFloat16\",\"float\",\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_log_softmax\",\"pid\":1,\"tid\":1,\"ts\":30,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[8,2048],[],[]],\"Input type\":[\"float\",\"Scalar\",\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_log_softmax\",\"pid\":1,\"tid\":1,\"ts\":40,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[8,1024],[],[]],\"Input type\":[\"float\",\"Scalar\",\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_log_softmax_backward_data\",\"pid\":1,\"tid\":1,\"ts\":50,"
    "\"dur\":5,\"args\":{\"Input Dims\":[[8,2048],[8,2048],[],[]],\"Input type\":[\"float\",\"float\",\"Scalar\","
    "\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_log_softmax_backward_data\",\"pid\":1,\"tid\":1,\"ts\":60,"
    "\"dur\":5,\"args\":{\"Input Dims\":[[8,512],[8,512],[],[]],\"Input type\":[\"float\",\"float\",\"Scalar\","
    "\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":1,\"tid\":1,\"ts\":70,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[64,32]],\"Input type\":[\"float\",\"float\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":1,\"tid\":1,\"ts\":80,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[32]],\"Input type\":[\"float\",\"float\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":1,\"tid\":1,\"ts\":90,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[64,32]],\"Input type\":[\"float\",\"c10::BFloat16\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[1,32]],\"Input type\":[\"c10::BFloat16\",\"float\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":1,\"tid\":1,\"ts\":110,\"dur\":5,"
    "\"args\":{\"Input Dims\":[[64,32],[]],\"Input type\":[\"float\",\"Scalar\"]}}"
    "]}";

static void test_membound(void **state) {
  (void)state;
  sc_job *job = imported(SC_TRACE_CPU, "mem.json", membound_json, sizeof membound_json - 1, 29);
  const sc_jrank *r = &job->ranks[0];
  double copy = 64 * 32 * (4.0 + 2.0);
  const sc_jop *w = find_op(job, r, "aten::copy_", 0), *nw = find_op(job, r, "aten::copy_", 1);
  assert_true(fabs(w->bytes - copy / 0.50) < 1e-9 * w->bytes);
  assert_true(nw->bytes == copy);
  assert_true(find_op(job, r, "aten::_log_softmax", 0)->bytes == 4.0 * 8 * 2048 * 4);
  assert_true(find_op(job, r, "aten::_log_softmax", 1)->bytes == 2.0 * 8 * 1024 * 4);
  assert_true(find_op(job, r, "aten::_log_softmax_backward_data", 0)->bytes == 4.0 * 8 * 2048 * 4);
  assert_true(find_op(job, r, "aten::_log_softmax_backward_data", 1)->bytes == 3.0 * 8 * 512 * 4);
  /* Elementwise: the same shapes and dtype at a copy's rate (inputs read,
   * the largest written); a broadcast operand at 0.6 of it, mixed dtypes
   * 0.7, both 0.2; a scalar is no broadcast. */
  double full = 64 * 32 * 4.0, row = 32 * 4.0, half = 64 * 32 * 2.0;
  const double want[5] = {3 * full, (2 * full + row) / 0.6, (2 * full + half) / 0.7,
                          (half + row + half) / 0.2, 2 * full};
  for (int i = 0; i < 5; i++) {
    const sc_jop *m = find_op(job, r, "aten::mul", i);
    assert_non_null(m);
    if (fabs(m->bytes - want[i]) > 1e-9 * want[i]) fail_msg("mul %d: %.1f bytes, want %.1f", i, m->bytes, want[i]);
  }
  sc_job_free(job);
}

/* calibrate --kernels: a GPU trace whose GEMM kernels took exactly what the
 * roofline prices at gemm_eff 0.6 (and whose copies what mem_eff 0.7
 * prices) is fitted back to those values from the H200 defaults. */
static void test_kernel_fit(void **state) {
  (void)state;
  sc_config cfg;
  replay_config(&cfg, 1, 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "cluster.gpu=h200"), 0);
  assert_int_equal(sc_config_set(ctx, &cfg, "training.precision=bf16"), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  cost.p.gemm_eff = 0.6;
  cost.p.mem_eff = 0.7;
  static const int ks[4] = {1024, 2048, 4096, 8192};
  char *json = malloc(16384);
  assert_non_null(json);
  size_t n = (size_t)snprintf(json, 16384,
                              "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],\"traceEvents\":["
                              "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,"
                              "\"tid\":1,\"ts\":0,\"dur\":100000}");
  int corr = 1;
  double t = 10;
  for (int i = 0; i < 4; i++, corr++) { /* mm [4096, K] x [K, 4096] */
    double ns = cost.compute->gemm_ns(&cost, 4096, 4096, ks[i]);
    n += (size_t)snprintf(json + n, 16384 - n,
                          ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
                          "\"dur\":20,\"args\":{\"Input Dims\":[[4096,%d],[%d,4096]],\"Input type\":"
                          "[\"c10::BFloat16\",\"c10::BFloat16\"]}}"
                          ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
                          "\"ts\":%.3f,\"dur\":2,\"args\":{\"correlation\":%d}}"
                          ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                          "\"dur\":%.4f,\"args\":{\"correlation\":%d}}",
                          t, ks[i], ks[i], t + 5, corr, t + 10, ns / 1e3, corr);
    t += 1000;
  }
  for (int i = 0; i < 3; i++, corr++) { /* copies of 2^20 .. 2^22 fp32 elements */
    double elems = (double)(1 << (20 + i));
    double ns = cost.compute->mem_ns(&cost, 8.0 * elems);
    n += (size_t)snprintf(json + n, 16384 - n,
                          ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
                          "\"dur\":20,\"args\":{\"Input Dims\":[[%.0f],[%.0f],[]],\"Input type\":"
                          "[\"float\",\"float\",\"Scalar\"]}}"
                          ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
                          "\"ts\":%.3f,\"dur\":2,\"args\":{\"correlation\":%d}}"
                          ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"copy\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                          "\"dur\":%.4f,\"args\":{\"correlation\":%d}}",
                          t, elems, elems, t + 5, corr, t + 10, ns / 1e3, corr);
    t += 1000;
  }
  n += (size_t)snprintf(json + n, 16384 - n, "]}");
  sc__cost_release(ctx, &cost);
  sc_job *job = imported(SC_TRACE_CPU_OF_GPU, "fit.json", json, n, 97);
  free(json);
  sc_kernel_fit fit;
  int rc = sc_calibrate_kernels(ctx, job, &cfg, &fit);
  if (rc) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(fit.cls[SC_KFIT_GEMM].ops, 4);
  assert_int_equal(fit.cls[SC_KFIT_MEM].ops, 3);
  assert_int_equal(fit.cls[SC_KFIT_ATTN].ops, 0);
  if (fabs(fit.cls[SC_KFIT_GEMM].after - 0.6) > 2e-3 || fabs(fit.cls[SC_KFIT_MEM].after - 0.7) > 2e-3)
    fail_msg("fitted gemm_eff %.4f, mem_eff %.4f", fit.cls[SC_KFIT_GEMM].after, fit.cls[SC_KFIT_MEM].after);
  assert_true(fit.cls[SC_KFIT_GEMM].mape_after < 0.5 && fit.cls[SC_KFIT_GEMM].mape_before > 5);
  buf b = {0};
  assert_int_equal(sc_kernel_fit_write_calibration(&fit, "test", sc_test_buf_write, &b), 0);
  assert_non_null(strstr(b.p, "calibration:\n  gemm_eff: 0.6"));
  assert_non_null(strstr(b.p, "attn_eff: 0.268248   # kept"));
  free(b.p);
  sc_job_free(job);
  /* A CPU trace has no measured kernel times: refused. */
  assert_int_equal(sc_job_new(ctx, &job), 0);
  assert_int_equal(import_mem(job, SC_TRACE_CPU, "exsitu.json", exsitu_json, sizeof exsitu_json - 1, 64, 0), 0);
  assert_int_equal(sc_calibrate_kernels(ctx, job, &cfg, &fit), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "no operator with a measured kernel time"));
  sc_job_free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exsitu),
      cmocka_unit_test(test_shards),
      cmocka_unit_test(test_attention),
      cmocka_unit_test(test_score_gemms),
      cmocka_unit_test(test_gpu_trace),
      cmocka_unit_test(test_membound),
      cmocka_unit_test(test_kernel_fit),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
