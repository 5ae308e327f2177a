/*
 * test_megatron.c: Megatron-LM launch lines in and out (src/input/megatron.c):
 * a real-looking launch script (torchrun, backslash continuations, quotes,
 * comments, environment prefixes, flags that do not matter) maps onto the
 * config it describes; Megatron-LM's own defaults are made explicit; export
 * then import simulates identically for the layouts the mapping covers
 * (GPT-3 with full recompute, GQA + SwiGLU + interleaving + SP + overlap,
 * uneven stages, CP, FP8, FSDP, MoE with DeepEP and with a capacity factor); every malformed line is "file:line:
 * message", and what Megatron-LM cannot express is refused on export.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sctest.h"
#include "stepcast/megatron.h"

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

static void check_msg(const char *want) {
  const char *got = sc_errmsg(ctx);
  if (!strstr(got, want)) fail_msg("expected a message containing\n  %s\ngot\n  %s", want, got);
}

static int load(sc_config *cfg, const char *text, sc_megatron_info *info) {
  sc_test_example(cfg);
  return sc_config_load_megatron(ctx, cfg, "args.sh", text, strlen(text), info);
}

/* A small model's launch line with `flags` after it, loaded; fails the
 * test with the message when it does not load. */
static void load_small(sc_config *c, const char *flags) {
  char text[512];
  snprintf(text, sizeof text,
           "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
           "--vocab-size 1000 --bf16 %s\n",
           flags);
  if (load(c, text, NULL)) fail_msg("%s: %s", flags, sc_errmsg(ctx));
}

static const char script[] =
    "#!/bin/bash\n"
    "# Llama-3-70B-like pretraining on 64 nodes\n"
    "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8 --nnodes 64 --node_rank 0 \\\n"
    "    pretrain_gpt.py \\\n"
    "    --num-layers 80 --hidden-size 8192 --num-attention-heads 64 \\\n"
    "    --group-query-attention --num-query-groups 8 \\\n"
    "    --ffn-hidden-size 28672 --swiglu --untie-embeddings-and-output-weights \\\n"
    "    --seq-length 8192 --max-position-embeddings 8192 --vocab-size 128256 \\\n"
    "    --normalization RMSNorm --position-embedding-type rope \\\n"
    "    --attention-dropout 0.0 --hidden-dropout 0.0 \\\n"
    "    --micro-batch-size 1 --global-batch-size 512 \\\n"
    "    --bf16 --use-flash-attn \\\n"
    "    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 \\\n"
    "    --num-layers-per-virtual-pipeline-stage 5 \\\n"
    "    --sequence-parallel --use-distributed-optimizer \\\n"
    "    --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap \\\n"
    "    --recompute-activations \\\n"
    "    --lr 1.5e-4 --min-lr=1.5e-5 --lr-decay-style cosine \\\n"
    "    --data-path \"/data/my corpus/text_document\" --save '/ckpt/llama 70b' \\\n"
    "    --log-interval 10 --eval-iters 0 --distributed-backend nccl\n";

static void test_script(void **state) {
  (void)state;
  sc_config c;
  sc_megatron_info info;
  if (load(&c, script, &info)) fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  assert_int_equal(c.model.layers, 80);
  assert_int_equal(c.model.kv_heads, 8);
  assert_int_equal(c.model.ffn_hidden, 28672);
  assert_int_equal(c.model.activation, SC_ACT_SWIGLU);
  assert_int_equal(c.model.tied_embeddings, 0);
  assert_true(c.model.dropout == 0.0);
  assert_int_equal(c.training.precision, SC_PREC_BF16);
  assert_int_equal(c.training.recompute, SC_RECOMPUTE_SELECTIVE);
  assert_int_equal(c.parallel.tp, 8);
  assert_int_equal(c.parallel.pp, 4);
  assert_int_equal(c.parallel.vpp, 4); /* 80 / 4 stages / 5 layers per chunk */
  assert_int_equal(c.parallel.schedule, SC_SCHED_INTERLEAVED);
  assert_int_equal(c.parallel.dp, 16);
  assert_true(c.parallel.sequence_parallel && c.parallel.distributed_optimizer);
  assert_true(c.parallel.overlap_grad_reduce && c.parallel.overlap_param_gather);
  assert_true(c.parallel.tp_comm_overlap);
  assert_int_equal(c.cluster.num_gpus, 512);
  assert_int_equal(c.cluster.gpus_per_node, 8);
  assert_int_equal(info.have_cluster, 1);
  assert_true(info.ignored >= 10);
  assert_non_null(strstr(info.ignored_names, "--data-path"));
  assert_non_null(strstr(info.ignored_names, "--min-lr"));
  assert_null(strstr(info.ignored_names, "--bf16"));
}

/* What the line does not say is Megatron-LM's default, not the built-in
 * example's: tied embeddings, GeLU with a 4h FFN, fp32, dropout 0.1, no
 * recompute, tp = pp = 1, global batch = micro-batch x dp; SwiGLU without
 * --ffn-hidden-size takes Megatron's int(8h/3 / 64) * 64. */
static void test_megatron_defaults(void **state) {
  (void)state;
  sc_config c;
  if (load(&c, "--num-layers 4 --hidden-size 1000 --num-attention-heads 8 --seq-length 1024 "
               "--vocab-size 32000 --micro-batch-size 2 --nnodes 1 --nproc-per-node 8",
           NULL))
    fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  assert_int_equal(c.model.tied_embeddings, 1);
  assert_int_equal(c.model.activation, SC_ACT_GELU);
  assert_int_equal(c.model.ffn_hidden, 4000);
  assert_true(c.model.dropout == 0.1);
  assert_int_equal(c.training.precision, SC_PREC_FP32);
  assert_int_equal(c.training.recompute, SC_RECOMPUTE_NONE);
  assert_int_equal(c.parallel.tp, 1);
  assert_int_equal(c.parallel.pp, 1);
  assert_int_equal(c.training.global_batch, 16);
  if (load(&c, "--num-layers 4 --hidden-size 1000 --num-attention-heads 8 --seq-length 1024 "
               "--vocab-size 32000 --swiglu",
           NULL))
    fail_msg("%s", sc_errmsg(ctx));
  assert_int_equal(c.model.ffn_hidden, 2624); /* int(2666.67 / 64) * 64 */
}

/* export -> import simulates identically. */
static void round_trip(const char *const *sets, size_t n) {
  sc_config a;
  sc_test_example(&a);
  for (size_t i = 0; i < n; i++)
    if (sc_config_set(ctx, &a, sets[i])) fail_msg("%s: %s", sets[i], sc_errmsg(ctx));
  if (sc_config_resolve(ctx, &a)) fail_msg("%s", sc_errmsg(ctx));
  sc_test_buf out = {0};
  if (sc_config_write_megatron(ctx, &a, sc_test_buf_write, &out)) fail_msg("%s", sc_errmsg(ctx));
  sc_config b;
  sc_test_example(&b);
  /* The GPU is not a Megatron-LM flag. */
  char gpu[64];
  snprintf(gpu, sizeof gpu, "cluster.gpu=%s", a.cluster.gpu);
  assert_int_equal(sc_config_set(ctx, &b, gpu), SC_OK);
  if (sc_config_load_megatron(ctx, &b, "export.sh", out.p, out.len, NULL))
    fail_msg("%s\n%s", sc_errmsg(ctx), out.p);
  if (sc_config_resolve(ctx, &b)) fail_msg("%s\n%s", sc_errmsg(ctx), out.p);
  sc_result ra, rb;
  assert_int_equal(sc_simulate(ctx, &a, NULL, NULL, &ra), SC_OK);
  assert_int_equal(sc_simulate(ctx, &b, NULL, NULL, &rb), SC_OK);
  if (ra.step_time_s != rb.step_time_s || ra.memory_gib != rb.memory_gib)
    fail_msg("step %.9f vs %.9f s, memory %.6f vs %.6f GiB\n%s", ra.step_time_s, rb.step_time_s,
             ra.memory_gib, rb.memory_gib, out.p);
  free(out.p);
}

static void test_round_trips(void **state) {
  (void)state;
  round_trip(NULL, 0); /* the built-in GPT-3 175B example */
  static const char *const llama[] = {
      "model.preset=llama3-70b", "cluster.gpu=h100-sxm", "cluster.num_gpus=512",
      "training.global_batch=512", "training.precision=bf16", "training.recompute=selective",
      "parallel.tp=8", "parallel.pp=4", "parallel.vpp=5", "parallel.sequence_parallel=true",
      "parallel.distributed_optimizer=true", "parallel.overlap_param_gather=true",
      "parallel.tp_comm_overlap=true"};
  round_trip(llama, sizeof llama / sizeof llama[0]);
  static const char *const uneven[] = {"model.preset=llama3-405b", "cluster.gpu=h100-sxm",
                                       "cluster.num_gpus=1024", "training.global_batch=64",
                                       "parallel.tp=8", "parallel.pp=16",
                                       "parallel.sequence_parallel=true",
                                       "parallel.distributed_optimizer=true"};
  round_trip(uneven, sizeof uneven / sizeof uneven[0]); /* 126 layers: 7 + 14 x 8 + 7 */
  static const char *const cp[] = {"model.preset=llama3-8b", "model.seq_len=65536",
                                   "cluster.gpu=h100-sxm", "cluster.num_gpus=64",
                                   "training.global_batch=16", "training.precision=fp8",
                                   "training.fp8_recipe=tensorwise", "parallel.tp=4",
                                   "parallel.pp=1", "parallel.cp=4", "parallel.cp_comm=a2a",
                                   "parallel.sequence_parallel=true"};
  round_trip(cp, sizeof cp / sizeof cp[0]);
  static const char *const fsdp[] = {"model.preset=llama3-8b", "cluster.gpu=h100-sxm",
                                     "cluster.num_gpus=64", "training.global_batch=128",
                                     "training.micro_batch=2", "parallel.tp=1", "parallel.pp=1",
                                     "parallel.zero_stage=3", "model.dropout=0.05"};
  round_trip(fsdp, sizeof fsdp / sizeof fsdp[0]);
  static const char *const moe[] = {"model.preset=qwen3-30b-a3b", "cluster.gpu=h100-sxm",
                                    "cluster.num_gpus=64",        "training.global_batch=256",
                                    "parallel.tp=1",              "parallel.pp=2",
                                    "parallel.ep=8",              "parallel.moe_dispatcher=deepep"};
  round_trip(moe, sizeof moe / sizeof moe[0]);
  static const char *const mixtral[] = {"model.preset=mixtral-8x7b", "cluster.gpu=h100-sxm",
                                        "cluster.num_gpus=64",       "training.global_batch=256",
                                        "parallel.tp=2",             "parallel.pp=4",
                                        "parallel.ep=8",             "parallel.sequence_parallel=true",
                                        "model.moe_capacity_factor=1.25"};
  round_trip(mixtral, sizeof mixtral / sizeof mixtral[0]);
  static const char *const cudnn[] = {"model.preset=llama3-8b", "cluster.gpu=h100-sxm",
                                      "cluster.num_gpus=8", "training.global_batch=8",
                                      "parallel.tp=1", "parallel.pp=1",
                                      "training.attention=cudnn"};
  round_trip(cudnn, sizeof cudnn / sizeof cudnn[0]); /* --attention-backend fused */
  static const char *const offload[] = {"model.preset=llama3-8b", "cluster.gpu=h100-sxm",
                                        "cluster.num_gpus=8", "training.global_batch=16",
                                        "parallel.tp=2", "parallel.pp=1",
                                        "parallel.sequence_parallel=true",
                                        "training.optimizer_offload=0.5",
                                        "training.recompute=none",
                                        "training.activation_offload_layers=6"};
  round_trip(offload, sizeof offload / sizeof offload[0]); /* --optimizer-cpu-offload ... */
}

/* Offload: the fraction (Megatron's default 1) and the layer count only
 * with their switches, in any order. */
static void test_offload_flags(void **state) {
  (void)state;
  static const struct {
    const char *flags;
    double fraction;
    int64_t layers;
  } cases[] = {{"--optimizer-cpu-offload", 1.0, 0},
               {"--optimizer-offload-fraction 0.25 --optimizer-cpu-offload", 0.25, 0},
               {"--optimizer-offload-fraction 0.25", 0.0, 0},
               {"--cpu-offloading --cpu-offloading-num-layers 3", 0.0, 3},
               {"--cpu-offloading-num-layers 3", 0.0, 0},
               {"--cpu-offloading", 0.0, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_config c;
    load_small(&c, cases[i].flags);
    assert_true(c.training.optimizer_offload == cases[i].fraction);
    assert_int_equal(c.training.activation_offload_layers, cases[i].layers);
    assert_true(c.training.optimizer_offload_cpu_step);
  }
  sc_config c;
  assert_int_equal(load(&c, "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 "
                            "--seq-length 1024 --vocab-size 10\n--optimizer-cpu-offload "
                            "--optimizer-offload-fraction 2\n",
                        NULL),
                   SC_EINVAL);
  check_msg("args.sh:2: --optimizer-offload-fraction");
}

/* --attention-backend names the kernel; auto leaves Transformer Engine's
 * choice to the implementation flags. */
static void test_attention_backend(void **state) {
  (void)state;
  static const struct {
    const char *flags;
    sc_attention want;
  } cases[] = {{"--attention-backend fused", SC_ATTN_CUDNN},
               {"--attention-backend flash", SC_ATTN_FLASH},
               {"--attention-backend=unfused", SC_ATTN_UNFUSED},
               {"--attention-backend local", SC_ATTN_UNFUSED},
               {"--attention-backend auto", SC_ATTN_FLASH},
               {"--transformer-impl local", SC_ATTN_UNFUSED}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_config c;
    load_small(&c, cases[i].flags);
    assert_int_equal(c.training.attention, cases[i].want);
  }
  sc_config c;
  assert_int_equal(load(&c, "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 "
                            "--seq-length 1024 --vocab-size 10\n--attention-backend fast\n",
                        NULL),
                   SC_EINVAL);
  check_msg("args.sh:2: --attention-backend: expected flash, fused, unfused, local or auto, got "
            "\"fast\"");
}

static void test_bad_input(void **state) {
  (void)state;
  struct {
    const char *text, *want;
    int rc;
  } cases[] = {
      {"--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024\n"
       "--tensor-model-parallel-size $TP --vocab-size 1000\n",
       "args.sh:2: --tensor-model-parallel-size $TP: a shell variable", SC_EINVAL},
      {"--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024",
       "missing --vocab-size", SC_EINVAL},
      {"--num-layers\n--hidden-size 1024", "args.sh:1: --num-layers: expected a value", SC_EINVAL},
      {"--num-layers 99999 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
       "--vocab-size 10",
       "args.sh:1: --num-layers 99999: model.layers: 99999 out of range [1, 4096]", SC_EINVAL},
      {"--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
       "--vocab-size 10 --bf16 --fp8-format hybrid --fp8-recipe mxfp8",
       "--fp8-recipe mxfp8: stepcast models the delayed and tensorwise", SC_EUNSUPPORTED},
      {"--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
       "--vocab-size 10 --recompute-granularity sometimes",
       "--recompute-granularity: expected full or selective", SC_EINVAL},
      {"--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 "
       "--vocab-size 10 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 3",
       "--num-layers-per-virtual-pipeline-stage 3 does not divide the 4 layers", SC_EINVAL},
      {"--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024\n"
       "--vocab-size 10 --recompute-granularity full --recompute-method block\n"
       "--recompute-num-layers 2 --pipeline-model-parallel-size 2",
       "recomputing part of a stage's layers is not modelled", SC_EUNSUPPORTED},
      {"--data-path 'unterminated\n", "args.sh:1: unterminated single quote", SC_EINVAL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_config c;
    int rc = load(&c, cases[i].text, NULL);
    if (rc != cases[i].rc)
      fail_msg("case %zu: code %d, want %d: %s", i, rc, cases[i].rc, sc_errmsg(ctx));
    check_msg(cases[i].want);
  }
  /* Export refuses what Megatron-LM has no flag for. */
  static const char *const nope[][2] = {{"parallel.schedule=zbv", "parallel.vpp=2"},
                                        {"parallel.zero_stage=2", "parallel.pp=16"}};
  for (size_t i = 0; i < 2; i++) {
    sc_config c;
    sc_test_example(&c);
    assert_int_equal(sc_config_set(ctx, &c, nope[i][0]), SC_OK);
    assert_int_equal(sc_config_set(ctx, &c, nope[i][1]), SC_OK);
    if (sc_config_resolve(ctx, &c)) fail_msg("%s", sc_errmsg(ctx));
    sc_test_buf out = {0};
    assert_int_equal(sc_config_write_megatron(ctx, &c, sc_test_buf_write, &out), SC_EUNSUPPORTED);
    free(out.p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_script),      cmocka_unit_test(test_megatron_defaults),
      cmocka_unit_test(test_round_trips), cmocka_unit_test(test_bad_input),
cmocka_unit_test(test_attention_backend), cmocka_unit_test(test_offload_flags),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
