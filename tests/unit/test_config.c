/*
 * test_config.c: unit tests of configuration loading (src/config.c): the
 * built-in default, model presets, YAML files and strings, --set overrides,
 * field_line bookkeeping, derivation and validation in sc_config_resolve, the
 * "FILE:LINE: message" form of every error, allocation failure, and inputs
 * that must fail cleanly rather than crash.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input/config_int.h"
#include "sctest.h"

/* ---------------------------------------------------------------- helpers */

static sc_ctx *new_ctx(void) {
  sc_ctx *ctx = NULL;
  assert_int_equal(sc_test_ctx_new(&ctx), SC_OK);
  return ctx;
}

/* Fails with the actual message when `want` is not a substring of it. */
static void check_msg(const sc_ctx *ctx, const char *want) {
  const char *got = sc_errmsg(ctx);
  if (!strstr(got, want)) {
    print_error("expected message containing\n  %s\ngot\n  %s\n", want, got);
    fail();
  }
}

/* The built-in example's values as if they were the defaults (no field
 * given, origin "<default>"): the start of the tests of the loader's
 * messages and lines, written before the defaults became neutral. */
static void example_as_default(sc_config *cfg) {
  sc_test_example(cfg);
  memset(cfg->field_line, 0, sizeof cfg->field_line);
  snprintf(cfg->origin, sizeof cfg->origin, "<default>");
}

/* Loads `yaml` (named t.yaml) over the example's values and resolves it. */
static int load_resolve(sc_ctx *ctx, sc_config *cfg, const char *yaml) {
  example_as_default(cfg);
  int rc = sc_config_load_string(ctx, cfg, "t.yaml", yaml, strlen(yaml));
  if (rc) return rc;
  return sc_config_resolve(ctx, cfg);
}

typedef struct buf {
  char data[1 << 16];
  size_t len;
} buf;

static int buf_write(void *ud, const char *p, size_t n) {
  buf *b = ud;
  if (b->len + n >= sizeof b->data) return SC_EWRITE;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
  return 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* ---------------------------------------------------------------- default */

/* The neutral defaults: no model and no GPU, which resolution asks for by
 * name, and documented values for the rest. */
static void test_default_is_neutral(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  sc_config_default(&c);
  assert_string_equal(c.origin, "<default>");
  for (int i = 0; i < SC_CONFIG_MAX_FIELDS; i++) assert_int_equal(c.field_line[i], 0);
  for (int i = 0; i < SC_CONFIG_MAX_FIELDS; i++) assert_int_equal(c.field_derived[i], 0);
  assert_string_equal(c.model.name, "");
  assert_int_equal(c.model.layers, 0);
  assert_int_equal(c.model.seq_len, 0);
  assert_int_equal(c.model.activation, SC_ACT_SWIGLU);
  assert_int_equal(c.model.tied_embeddings, 0);
  assert_true(c.model.dropout == 0);
  assert_int_equal(c.training.global_batch, 0);
  assert_int_equal(c.training.micro_batch, 1);
  assert_int_equal(c.training.precision, SC_PREC_BF16);
  assert_int_equal(c.training.recompute, SC_RECOMPUTE_NONE);
  assert_int_equal(c.parallel.tp, 1);
  assert_int_equal(c.parallel.pp, 1);
  assert_int_equal(c.parallel.cp, 1);
  assert_int_equal(c.parallel.overlap_grad_reduce, 0);
  assert_int_equal(c.parallel.overlap_param_gather, 0);
  assert_string_equal(c.cluster.gpu, "");
  assert_int_equal(c.cluster.num_gpus, 0);

  /* Every missing shape field is named, then the GPU. */
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "<default>: model: layers, hidden, heads, vocab, seq_len are missing");
  const char *part = "model:\n  layers: 4\n  hidden: 512\n  heads: 8\n";
  assert_int_equal(sc_config_load_string(ctx, &c, "m.yaml", part, strlen(part)), SC_OK);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "m.yaml:2: model: vocab, seq_len are missing: give them");
  sc_config_default(&c);
  const char *y = "model: {layers: 4, hidden: 512, heads: 8, vocab: 1000, seq_len: 256}\n";
  assert_int_equal(sc_config_load_string(ctx, &c, "m.yaml", y, strlen(y)), SC_OK);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "m.yaml: cluster.gpu is missing");
  assert_int_equal(sc_config_set(ctx, &c, "cluster.gpu=h100-sxm"), SC_OK);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "give cluster.num_gpus or cluster.nodes (or parallel.dp)");

  /* parallel.dp sizes the job; the global batch is one micro-batch per
   * replica (Megatron-LM's default); both are marked derived. */
  assert_int_equal(sc_config_set(ctx, &c, "parallel.dp=4"), SC_OK);
  assert_int_equal(sc_config_set(ctx, &c, "training.micro_batch=2"), SC_OK);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  assert_int_equal(c.cluster.num_gpus, 4);
  assert_int_equal(c.training.global_batch, 8);
  assert_int_equal(c.model.ffn_hidden, 1536); /* 8h/3 rounded up to 256, swiglu */
  int gb = sc_config_field_index("training.global_batch");
  assert_int_equal(sc_config_field_state(&c, gb), SC_FIELD_DERIVED);
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("cluster.num_gpus")),
                   SC_FIELD_DERIVED);
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("training.precision")),
                   SC_FIELD_DEFAULTED);
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("parallel.dp")),
                   SC_FIELD_GIVEN);
  /* a feature the config does not use is not listed */
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("parallel.fsdp_prefetch")),
                   SC_FIELD_UNUSED);
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("model.moe_topk")),
                   SC_FIELD_UNUSED);
  char v[32];
  assert_int_equal(sc_config_field_value(&c, gb, v, sizeof v), SC_OK);
  assert_string_equal(v, "8");
  /* the marks survive a second resolution */
  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  assert_int_equal(sc_config_field_state(&c, gb), SC_FIELD_DERIVED);
  sc_ctx_free(ctx);
}

/* The built-in example is the shipped file: GPT-3 175B on 1,024 A100s. */
static void test_example_resolves(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  assert_int_equal(sc_config_example(ctx, &c), SC_OK);
  assert_string_equal(c.origin, SC_EXAMPLE_NAME);
  assert_string_equal(c.model.name, "gpt3-175b");
  assert_int_equal(c.model.layers, 96);
  assert_int_equal(c.model.hidden, 12288);
  assert_int_equal(c.model.heads, 96);
  assert_int_equal(c.model.seq_len, 2048);
  assert_int_equal(c.model.vocab, 51200);
  assert_int_equal(c.model.tied_embeddings, 1);
  assert_int_equal(c.model.activation, SC_ACT_GELU);
  assert_int_equal(c.training.global_batch, 1536);
  assert_int_equal(c.training.micro_batch, 1);
  assert_int_equal(c.training.precision, SC_PREC_FP16);
  assert_int_equal(c.training.recompute, SC_RECOMPUTE_FULL);
  assert_int_equal(c.parallel.tp, 8);
  assert_int_equal(c.parallel.pp, 16);
  assert_int_equal(c.parallel.dp, 0);
  assert_int_equal(c.parallel.cp, 1);
  assert_int_equal(c.parallel.vpp, 1);
  assert_int_equal(c.parallel.sequence_parallel, 0);
  assert_int_equal(c.parallel.distributed_optimizer, 0);
  assert_int_equal(c.parallel.schedule, SC_SCHED_1F1B);
  assert_int_equal(c.parallel.overlap_grad_reduce, 1);
  assert_int_equal(c.parallel.overlap_param_gather, 0);
  assert_int_equal(c.parallel.dp_bucket_elems, 40000000);
  assert_string_equal(c.cluster.gpu, "a100-80gb");
  assert_int_equal(c.cluster.num_gpus, 1024);
  assert_int_equal(c.cluster.nodes, 0);
  assert_int_equal(c.simulation.fold, 1);
  assert_int_equal(c.simulation.interference, SC_INTERF_NONE);
  assert_int_equal(c.simulation.share_links, 1);
  sc_cost_params zero;
  memset(&zero, 0, sizeof zero);
  assert_memory_equal(&c.costs, &zero, sizeof zero);
  /* the text is the file as shipped */
  size_t len;
  const char *text = sc_config_example_text(&len);
  assert_int_equal(strlen(text), len);
  assert_non_null(strstr(text, "preset: gpt3-175b"));

  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  assert_int_equal(c.parallel.dp, 8);
  assert_int_equal(c.model.kv_heads, 96);
  assert_int_equal(c.model.ffn_hidden, 4 * 12288);
  assert_int_equal(c.cluster.gpus_per_node, 8);
  assert_int_equal(c.cluster.nodes, 128);
  const sc_hw *hw = sc_hw_find("a100-80gb");
  assert_true(c.cluster.nic_gbps == hw->nic_gbps);
  assert_true(c.cluster.nvlink_gbps == hw->nvlink_gbps);
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("parallel.dp")),
                   SC_FIELD_DERIVED);
  assert_int_equal(sc_config_field_state(&c, sc_config_field_index("parallel.tp")),
                   SC_FIELD_GIVEN);

  /* Resolving a resolved config changes nothing. */
  sc_config again = c;
  assert_int_equal(sc_config_resolve(ctx, &again), SC_OK);
  assert_memory_equal(&again, &c, sizeof c);
  sc_ctx_free(ctx);
}

static void test_example_is_the_preset(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config a, b;
  sc_test_example(&a);
  sc_config_default(&b);
  assert_int_equal(sc_model_preset(ctx, &b, "gpt3-175b"), SC_OK);
  assert_memory_equal(&a.model, &b.model, sizeof a.model);
  sc_ctx_free(ctx);
}

/* The example written as YAML loads back to the same struct: every field's
 * formatter and parser agree (and every default text parsed). */
static void test_yaml_round_trip(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c, back;
  example_as_default(&c);
  c.costs.gemm_eff = 0.1; /* needs 17 digits to round-trip */
  c.costs.p2p_latency_us = 7.25;
  c.costs.interference_w.norm = -0.1; /* learned interference coefficients round-trip too */
  c.costs.interference_w.log_group = 0.03125;
  c.costs.nccl.ll_frac = 0.3; /* and the collective model's */
  c.simulation.interference = SC_INTERF_LEARNED;
  sc__strlcpy(c.model.name, "my \"model\"\\v2", sizeof c.model.name);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  buf *b = calloc(1, sizeof *b);
  assert_int_equal(sc_config_write_yaml(&c, buf_write, b), 0);
  memset(&back, 0x5a, sizeof back);
  example_as_default(&back);
  assert_int_equal(sc_config_load_string(ctx, &back, "rt.yaml", b->data, b->len), SC_OK);
  assert_int_equal(sc_config_resolve(ctx, &back), SC_OK);
  assert_memory_equal(&back.model, &c.model, sizeof c.model);
  assert_memory_equal(&back.training, &c.training, sizeof c.training);
  assert_memory_equal(&back.parallel, &c.parallel, sizeof c.parallel);
  assert_memory_equal(&back.cluster, &c.cluster, sizeof c.cluster);
  assert_memory_equal(&back.simulation, &c.simulation, sizeof c.simulation);
  assert_memory_equal(&back.costs, &c.costs, sizeof c.costs);
  free(b);
  sc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- presets */

static void test_presets(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  static const char *const names[] = {
      "gpt3-125m", "gpt3-350m", "gpt3-760m",  "gpt3-1.3b", "gpt3-2.7b",  "gpt3-6.7b",   "gpt3-13b",
      "gpt3-175b", "llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
      "mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3",
      "gpt-oss-120b",
  };
  assert_int_equal(sc_model_preset_count(), sizeof names / sizeof names[0]);
  for (size_t i = 0; i < sc_model_preset_count(); i++) {
    assert_string_equal(sc_model_preset_name(i), names[i]);
    sc_config c;
    example_as_default(&c);
    assert_int_equal(sc_model_preset(ctx, &c, names[i]), SC_OK);
    assert_string_equal(c.model.name, names[i]);
    assert_int_equal(c.model.tied_embeddings, !strncmp(names[i], "gpt3", 4));
    /* Every preset resolves on one GPU. */
    c.parallel.tp = c.parallel.pp = 1;
    c.cluster.num_gpus = 1;
    c.training.global_batch = 8;
    c.training.precision = SC_PREC_BF16;
    assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
    assert_int_equal(c.model.hidden % c.model.heads, 0);
  }
  assert_null(sc_model_preset_name(sc_model_preset_count()));

  sc_config c;
  example_as_default(&c);
  assert_int_equal(sc_model_preset(ctx, &c, "llama2-7b"), SC_OK);
  assert_int_equal(c.model.layers, 32);
  assert_int_equal(c.model.kv_heads, 32);
  assert_int_equal(c.model.ffn_hidden, 11008);
  assert_int_equal(c.model.vocab, 32000);
  assert_int_equal(c.model.seq_len, 4096);
  assert_int_equal(c.model.activation, SC_ACT_SWIGLU);
  assert_int_equal(sc_model_preset(ctx, &c, "llama3-405b"), SC_OK);
  assert_int_equal(c.model.layers, 126);
  assert_int_equal(c.model.hidden, 16384);
  assert_int_equal(c.model.heads, 128);
  assert_int_equal(c.model.kv_heads, 8);
  assert_int_equal(c.model.ffn_hidden, 53248);
  assert_int_equal(c.model.vocab, 128256);
  assert_int_equal(c.model.seq_len, 8192);
  assert_int_equal(sc_model_preset(ctx, &c, "llama2-70b"), SC_OK);
  assert_int_equal(c.model.kv_heads, 8);
  assert_int_equal(c.model.ffn_hidden, 28672);
  assert_int_equal(sc_model_preset(ctx, &c, "gpt3-13b"), SC_OK);
  assert_int_equal(c.model.hidden, 5120);
  assert_int_equal(c.model.layers, 40);

  sc_config before = c;
  assert_int_equal(sc_model_preset(ctx, &c, "gpt-5"), SC_EINVAL);
  check_msg(ctx, "unknown preset \"gpt-5\" (known: gpt3-125m");
  check_msg(ctx, "llama3-405b, mixtral-8x7b, mixtral-8x22b, qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3, gpt-oss-120b)");
  assert_memory_equal(&c, &before, sizeof c);
  assert_int_equal(sc_model_preset(NULL, &c, "gpt3-13b"), SC_EINVAL);
  assert_int_equal(sc_model_preset(ctx, NULL, "gpt3-13b"), SC_EINVAL);
  assert_int_equal(sc_model_preset(ctx, &c, NULL), SC_EINVAL);
  sc_ctx_free(ctx);
}

static void test_preset_then_override(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  /* The override comes first in the file but still wins. */
  const char *yaml =
      "model:\n"
      "  layers: 4\n"
      "  preset: llama3-8b\n"
      "  seq_len: 4096\n"
      "parallel:\n"
      "  tp: 2\n"
      "  pp: 2\n"
      "cluster:\n"
      "  gpu: h100-sxm\n"
      "  nodes: 2\n"
      "training:\n"
      "  global_batch: 64\n"
      "  precision: bf16\n";
  assert_int_equal(load_resolve(ctx, &c, yaml), SC_OK);
  assert_string_equal(c.model.name, "llama3-8b");
  assert_int_equal(c.model.layers, 4);
  assert_int_equal(c.model.seq_len, 4096);
  assert_int_equal(c.model.hidden, 4096);
  assert_int_equal(c.model.kv_heads, 8);
  assert_int_equal(c.model.ffn_hidden, 14336);
  assert_int_equal(c.model.tied_embeddings, 0);
  assert_int_equal(c.field_line[SC_FIELD_model_layers], 2);
  assert_int_equal(c.field_line[SC_FIELD_model_preset], 3);
  assert_int_equal(c.field_line[SC_FIELD_model_hidden], 3); /* from the preset */
  assert_int_equal(c.field_line[SC_FIELD_model_seq_len], 4);
  /* nodes alone re-derives num_gpus (the default's 1024 is dropped). */
  assert_int_equal(c.cluster.num_gpus, 16);
  assert_int_equal(c.parallel.dp, 4);
  sc_ctx_free(ctx);
}

static void test_swiglu_ffn_default(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  assert_int_equal(
      load_resolve(ctx, &c,
                   "model: {name: custom, hidden: 4096, heads: 32, activation: swiglu}\n"
                   "parallel: {tp: 8, pp: 4}\n"
                   "model_unused: 1\n"),
      SC_EINVAL);
  check_msg(ctx, "t.yaml:3: unknown section \"model_unused\"");
  assert_int_equal(load_resolve(ctx, &c,
                                "model: {name: custom, layers: 32, hidden: 4096, heads: 32, "
                                "activation: swiglu}\nparallel: {tp: 8, pp: 4}\n"),
                   SC_OK);
  assert_string_equal(c.model.name, "custom");
  assert_int_equal(c.model.ffn_hidden, 11008); /* Llama 2 7B's width */
  assert_int_equal(c.model.kv_heads, 32);
  sc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- field_line */

static void test_field_lines(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  const char *yaml =
      "# comment line 1\n"
      "training:\n"
      "  global_batch: 512\n"
      "\n"
      "parallel:\n"
      "  tp: 4\n"
      "  sequence_parallel: true\n"
      "calibration:\n"
      "  gemm_eff: 0.7\n";
  example_as_default(&c);
  assert_int_equal(sc_config_load_string(ctx, &c, "lines.yaml", yaml, strlen(yaml)), SC_OK);
  assert_string_equal(c.origin, "lines.yaml");
  assert_int_equal(c.field_line[SC_FIELD_training_global_batch], 3);
  assert_int_equal(c.field_line[SC_FIELD_parallel_tp], 6);
  assert_int_equal(c.field_line[SC_FIELD_parallel_sequence_parallel], 7);
  assert_int_equal(c.field_line[SC_FIELD_parallel_pp], 0);
  assert_true(c.costs.gemm_eff == 0.7);
  char w[300];
  assert_string_equal(sc__config_where(&c, SC_FIELD_parallel_tp, w, sizeof w), "lines.yaml:6");
  assert_string_equal(sc__config_where(&c, SC_FIELD_parallel_pp, w, sizeof w), "lines.yaml");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.pp=8"), SC_OK);
  assert_int_equal(c.field_line[SC_FIELD_parallel_pp], SC_CONFIG_LINE_SET);
  assert_string_equal(sc__config_where(&c, SC_FIELD_parallel_pp, w, sizeof w), "--set");
  sc_ctx_free(ctx);
}

/* The enum name table: rows in value order, names parse back, labels. */
static void test_enum_names(void **state) {
  (void)state;
  static const int counts[SC_ENUM_COUNT] = {3, 4, 4, 7, 4, 3, 4, 3, 3};
  for (int e = 0; e < SC_ENUM_COUNT; e++) {
    assert_int_equal(sc_enum_count((sc_enum)e), counts[e]);
    for (int v = 0; v < counts[e]; v++) {
      const char *n = sc_enum_name((sc_enum)e, v);
      assert_non_null(n);
      assert_non_null(sc_enum_label((sc_enum)e, v));
      assert_int_equal(sc_enum_parse((sc_enum)e, n), v);
    }
    assert_null(sc_enum_name((sc_enum)e, counts[e]));
    assert_null(sc_enum_name((sc_enum)e, -1));
    assert_int_equal(sc_enum_parse((sc_enum)e, "nope"), -1);
  }
  assert_string_equal(sc_enum_name(SC_ENUM_RECOMPUTE, SC_RECOMPUTE_SELECTIVE), "selective");
  assert_string_equal(sc_enum_name(SC_ENUM_SCHEDULE, SC_SCHED_INTERLEAVED), "interleaved");
  assert_string_equal(sc_enum_label(SC_ENUM_SCHEDULE, SC_SCHED_INTERLEAVED), "interleaved-1f1b");
  assert_int_equal(sc_enum_parse(SC_ENUM_PRECISION, "fp8"), SC_PREC_FP8);
  assert_int_equal(sc_enum_count(SC_ENUM_COUNT), 0);
  assert_null(sc_enum_name(SC_ENUM_COUNT, 0));
}

static void test_field_names(void **state) {
  (void)state;
  assert_true(SC_FIELD_COUNT <= SC_CONFIG_MAX_FIELDS);
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    const char *name = sc_config_field_name(i);
    assert_non_null(name);
    assert_int_equal(sc_config_field_index(name), i);
  }
  assert_null(sc_config_field_name(SC_FIELD_COUNT));
  assert_null(sc_config_field_name(-1));
  assert_int_equal(sc_config_field_index("parallel.tp"), SC_FIELD_parallel_tp);
  assert_int_equal(sc_config_field_index("calibration.gemm_eff"), -1); /* a calibration key */
  assert_int_equal(sc_config_field_index("parallel.foo"), -1);
  assert_int_equal(sc_config_field_index(NULL), -1);
}

/* ---------------------------------------------------------------- --set */

static void test_set_each_type(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  example_as_default(&c);
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tp=4"), SC_OK); /* POSINT */
  assert_int_equal(c.parallel.tp, 4);
  assert_int_equal(sc_config_set(ctx, &c, " parallel.dp = 16 "), SC_OK); /* COUNT */
  assert_int_equal(c.parallel.dp, 16);
  assert_int_equal(sc_config_set(ctx, &c, "parallel.dp=0"), SC_OK);
  assert_int_equal(c.parallel.dp, 0);
  assert_int_equal(sc_config_set(ctx, &c, "parallel.dp_bucket_elems=25_000_000"), SC_OK);
  assert_int_equal(c.parallel.dp_bucket_elems, 25000000);
  assert_int_equal(sc_config_set(ctx, &c, "parallel.sequence_parallel=true"), SC_OK); /* BOOL */
  assert_int_equal(c.parallel.sequence_parallel, 1);
  assert_int_equal(sc_config_set(ctx, &c, "simulation.fold=0"), SC_OK);
  assert_int_equal(c.simulation.fold, 0);
  assert_int_equal(sc_config_set(ctx, &c, "cluster.nic_gbps=400"), SC_OK); /* REAL */
  assert_true(c.cluster.nic_gbps == 400.0);
  assert_int_equal(sc_config_set(ctx, &c, "calibration.gemm_eff=0.75"), SC_OK); /* FRAC */
  assert_true(c.costs.gemm_eff == 0.75);
  assert_int_equal(sc_config_set(ctx, &c, "calibration.kernel_overhead_us=1e-1"), SC_OK);
  assert_true(c.costs.kernel_overhead_us == 0.1);
  assert_int_equal(sc_config_set(ctx, &c, "training.precision=bf16"), SC_OK); /* enums */
  assert_int_equal(c.training.precision, SC_PREC_BF16);
  assert_int_equal(sc_config_set(ctx, &c, "training.recompute=selective"), SC_OK);
  assert_int_equal(c.training.recompute, SC_RECOMPUTE_SELECTIVE);
  assert_int_equal(sc_config_set(ctx, &c, "parallel.schedule=gpipe"), SC_OK);
  assert_int_equal(c.parallel.schedule, SC_SCHED_GPIPE);
  assert_int_equal(sc_config_set(ctx, &c, "model.activation=swiglu"), SC_OK);
  assert_int_equal(c.model.activation, SC_ACT_SWIGLU);
  assert_int_equal(sc_config_set(ctx, &c, "simulation.interference=constant"), SC_OK);
  assert_int_equal(c.simulation.interference, SC_INTERF_CONSTANT);
  assert_int_equal(sc_config_set(ctx, &c, "simulation.interference=learned"), SC_OK);
  assert_int_equal(c.simulation.interference, SC_INTERF_LEARNED);
  assert_int_equal(sc_config_set(ctx, &c, "calibration.interference_w_log_dur=-0.25"), SC_OK);
  assert_true(c.costs.interference_w.log_dur == -0.25);
  assert_int_equal(sc_config_set(ctx, &c, "calibration.interference_gemm=0.3"), SC_OK);
  assert_true(c.costs.interference_gemm == 0.3);
  assert_int_equal(sc_config_set(ctx, &c, "calibration.interference_w_gemm=abc"), SC_EINVAL);
  c.costs.interference_w.log_dur = 0;
  c.costs.interference_gemm = 0;
  assert_int_equal(sc_config_set(ctx, &c, "cluster.gpu=H100-SXM"), SC_OK); /* GPU */
  assert_string_equal(c.cluster.gpu, "h100-sxm");
  assert_int_equal(sc_config_set(ctx, &c, "model.name=my run = 1"), SC_OK); /* LABEL */
  assert_string_equal(c.model.name, "my run = 1");
  assert_int_equal(sc_config_set(ctx, &c, "model.preset=llama3-70b"), SC_OK); /* PRESET */
  assert_int_equal(c.model.layers, 80);
  assert_int_equal(c.field_line[SC_FIELD_model_layers], SC_CONFIG_LINE_SET);
  assert_int_equal(c.field_line[SC_FIELD_parallel_tp], SC_CONFIG_LINE_SET);
  /* num_gpus alone re-derives nodes; nodes alone re-derives num_gpus. */
  assert_int_equal(sc_config_set(ctx, &c, "cluster.nodes=32"), SC_OK);
  assert_int_equal(c.cluster.num_gpus, 0);
  assert_int_equal(sc_config_set(ctx, &c, "cluster.num_gpus=512"), SC_OK);
  assert_int_equal(c.cluster.nodes, 0);
  sc_ctx_free(ctx);
}

static void test_set_errors(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c, before;
  example_as_default(&c);
  before = c;
  assert_int_equal(sc_config_set(ctx, &c, "parallel.foo=1"), SC_EINVAL);
  check_msg(ctx, "--set: unknown key \"parallel.foo\"");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tpp=1"), SC_EINVAL);
  check_msg(ctx, "--set: unknown key \"parallel.tpp\" (did you mean \"parallel.tp\"?)");
  assert_int_equal(sc_config_set(ctx, &c, "tp=1"), SC_EINVAL);
  check_msg(ctx, "(did you mean \"parallel.tp\"?)");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tp"), SC_EINVAL);
  check_msg(ctx, "--set: expected SECTION.KEY=VALUE, got \"parallel.tp\"");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tp=x"), SC_EINVAL);
  check_msg(ctx, "--set: parallel.tp: expected a positive integer, got \"x\"");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tp="), SC_EINVAL);
  check_msg(ctx, "--set: parallel.tp: expected a positive integer, got an empty value");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.overlap_grad_reduce=yes"), SC_EINVAL);
  check_msg(ctx, "--set: parallel.overlap_grad_reduce: expected true, false, 1 or 0");
  assert_int_equal(sc_config_set(ctx, &c, "calibration.mem_eff=1.01"), SC_EINVAL);
  check_msg(ctx, "--set: calibration.mem_eff: 1.01 out of range [0.01, 1] (0 = the default)");
  assert_int_equal(sc_config_set(ctx, &c, "calibration.mem_eff=nan"), SC_EINVAL);
  /* the knobs of the removed ring/tree model are unknown keys now */
  assert_int_equal(sc_config_set(ctx, &c, "calibration.nic_eff=0.5"), SC_EINVAL);
  check_msg(ctx, "--set: unknown key \"calibration.nic_eff\" (did you mean \"calibration.nccl_nic_eff\"?)");
  assert_int_equal(sc_config_set(ctx, &c, "cluster.nvlink_gbps=inf"), SC_EINVAL);
  assert_int_equal(sc_config_set(ctx, &c, "cluster.nvlink_gbps=0x10"), SC_EINVAL);
  assert_int_equal(sc_config_set(ctx, &c, "training.recompute=partial"), SC_EINVAL);
  check_msg(
      ctx, "--set: training.recompute: unknown value \"partial\" (allowed: none, selective, full, op_sac)");
  assert_int_equal(sc_config_set(ctx, &c, "cluster.gpu=tpu-v5"), SC_EINVAL);
  check_msg(ctx, "--set: cluster.gpu: unknown gpu \"tpu-v5\" (a GPU file ends in .yaml; known: ");
  check_msg(ctx, "h100-sxm");
  assert_int_equal(sc_config_set(ctx, &c, "model.preset=bert"), SC_EINVAL);
  check_msg(ctx, "--set: model.preset: unknown preset \"bert\"");
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tp=3000000000"), SC_EINVAL);
  check_msg(ctx, "--set: parallel.tp: 3000000000 out of range [1, 1024]");
  assert_int_equal(sc_config_set(ctx, &c, "calibration=/nonexistent/site.yaml"), SC_EREAD);
  check_msg(ctx, "--set: cannot open calibration file /nonexistent/site.yaml");
  assert_memory_equal(&c, &before, sizeof c); /* failures leave cfg untouched */
  assert_int_equal(sc_config_set(NULL, &c, "parallel.tp=1"), SC_EINVAL);
  assert_int_equal(sc_config_set(ctx, NULL, "parallel.tp=1"), SC_EINVAL);
  assert_int_equal(sc_config_set(ctx, &c, NULL), SC_EINVAL);
  sc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- errors */

typedef struct error_case {
  const char *yaml;
  int rc;
  const char *msg;
} error_case;

/* clang-format off */
static const error_case error_cases[] = {
    /* unknown section / key, with and without suggestions */
    {"paralel:\n  tp: 8\n", SC_EINVAL, "t.yaml:1: unknown section \"paralel\" (did you mean \"parallel\"?)"},
    {"model: {}\nfoo: 1\n", SC_EINVAL, "t.yaml:2: unknown section \"foo\" (valid sections: model, training"},
    {"parallel:\n  tp: 8\n  ppp: 2\n", SC_EINVAL, "t.yaml:3: unknown key \"parallel.ppp\" (did you mean \"parallel.pp\"?)"},
    {"parallel:\n  global_batch: 8\n", SC_EINVAL, "t.yaml:2: unknown key \"parallel.global_batch\" (did you mean \"training.global_batch\"?)"},
    {"parallel:\n  zzzzzz: 8\n", SC_EINVAL, "t.yaml:2: unknown key \"parallel.zzzzzz\" (valid keys: tp, pp, pp_first_layers"},
    {"calibration:\n  gemm_ef: 0.5\n", SC_EINVAL, "t.yaml:2: unknown key \"calibration.gemm_ef\" (did you mean \"calibration.gemm_eff\"?)"},
    /* wrong types and ranges */
    {"model:\n  layers: abc\n", SC_EINVAL, "t.yaml:2: model.layers: expected a positive integer, got \"abc\""},
    {"model:\n  layers: 0\n", SC_EINVAL, "t.yaml:2: model.layers: 0 out of range [1, 4096]"},
    {"model:\n  layers: -2\n", SC_EINVAL, "t.yaml:2: model.layers: -2 out of range [1, 4096]"},
    {"parallel:\n  dp: -1\n", SC_EINVAL, "t.yaml:2: parallel.dp: -1 out of range [1, 16777216] (0 = derived)"},
    {"parallel:\n  tp: 1.0\n", SC_EINVAL, "t.yaml:2: parallel.tp: expected a positive integer, got \"1.0\""},
    {"parallel:\n  tp: [8]\n", SC_EINVAL, "t.yaml:2: parallel.tp: expected a positive integer, got a sequence"},
    {"parallel:\n  tp:\n", SC_EINVAL, "t.yaml:2: parallel.tp: expected a positive integer, got an empty value"},
    {"parallel:\n  tp: \"8\\0\"\n", SC_EINVAL, "t.yaml:2: parallel.tp: value contains a NUL byte"},
    {"simulation:\n  fold: yes\n", SC_EINVAL, "t.yaml:2: simulation.fold: expected true, false, 1 or 0, got \"yes\""},
    {"cluster:\n  nic_gbps: fast\n", SC_EINVAL, "t.yaml:2: cluster.nic_gbps: expected a non-negative number, got \"fast\""},
    {"cluster:\n  nic_gbps: -100\n", SC_EINVAL, "t.yaml:2: cluster.nic_gbps: -100 out of range [0.1, 100000] (0 = derived)"},
    {"calibration:\n  mem_eff: 1.2\n", SC_EINVAL, "t.yaml:2: calibration.mem_eff: 1.2 out of range [0.01, 1] (0 = the default)"},
    {"calibration:\n  p2p_latency_us: -0.5\n", SC_EINVAL, "t.yaml:2: calibration.p2p_latency_us: -0.5 out of range [0.01, 10000]"},
    {"calibration:\n  attn_eff: .nan\n", SC_EINVAL, "t.yaml:2: calibration.attn_eff: expected a number, got \".nan\""},
    {"model:\n  name: \"0123456789012345678901234567890123456789012345678901234567890123\"\n", SC_EINVAL, "t.yaml:2: model.name: longer than 63 bytes"},
    /* enums, presets, gpus */
    {"model:\n  activation: relu\n", SC_EINVAL, "t.yaml:2: model.activation: unknown value \"relu\" (allowed: gelu, swiglu, relu2)"},
    {"training:\n  precision: int8\n", SC_EINVAL, "(allowed: bf16, fp16, fp8, fp32)"},
    {"training:\n  recompute: some\n", SC_EINVAL, "(allowed: none, selective, full, op_sac)"},
    {"parallel:\n  schedule: 1F1B\n", SC_EINVAL, "t.yaml:2: parallel.schedule: unknown value \"1F1B\" (allowed: 1f1b, gpipe, interleaved, zb-h1, zbv, dualpipe, dualpipev)"},
    {"simulation:\n  interference: magic\n", SC_EINVAL, "(allowed: none, constant, learned, tree)"},
    {"calibration:\n  interference_w_gemm: 11\n", SC_EINVAL, "t.yaml:2: calibration.interference_w_gemm: 11 out of range [-10, 10]"},
    {"calibration:\n  interference_w_gemm: 1\n  interference_w_gemm: 2\n", SC_EINVAL, "t.yaml:3: duplicate key \"calibration.interference_w_gemm\" (first given on line 2)"},
    {"calibration:\n  interference_w_bogus: 1\n", SC_EINVAL, "t.yaml:2: unknown key \"calibration.interference_w_bogus\""},
    {"model:\n  preset: gpt2\n", SC_EINVAL, "t.yaml:2: model.preset: unknown preset \"gpt2\" (known: gpt3-125m, "},
    {"cluster:\n  gpu: a100\n", SC_EINVAL, "t.yaml:2: cluster.gpu: unknown gpu \"a100\" (a GPU file ends in .yaml; known: "},
    /* YAML structure */
    {"parallel: [tp, 8\n", SC_EINVAL, "t.yaml:2: YAML syntax error: "},
    {"parallel:\n  tp: 8\n   pp: 2\n", SC_EINVAL, "t.yaml:3: YAML syntax error: mapping values are not allowed"},
    {"parallel:\n  tp: \"8\n", SC_EINVAL, "YAML syntax error: found unexpected end of stream"},
    {"parallel:\n  tp: *x\n", SC_EINVAL, "t.yaml:2: YAML syntax error: found undefined alias"},
    {"a\x01b: 1\n", SC_EINVAL, "t.yaml:1: invalid YAML input: control characters are not allowed"},
    {"", SC_EINVAL, "t.yaml:1: empty config"},
    {"# just a comment\n", SC_EINVAL, "t.yaml:1: empty config"},
    {"~\n", SC_EINVAL, "t.yaml:1: empty config"},
    {"- model\n", SC_EINVAL, "t.yaml:1: top level must be a mapping of sections"},
    {"42\n", SC_EINVAL, "t.yaml:1: top level must be a mapping of sections (model, training, parallel, cluster, simulation, calibration), got a scalar"},
    {"parallel: 8\n", SC_EINVAL, "t.yaml:1: parallel: expected a mapping of keys, got a scalar"},
    {"parallel:\n  - tp\n", SC_EINVAL, "t.yaml:2: parallel: expected a mapping of keys, got a sequence"},
    {"[a]: 1\n", SC_EINVAL, "t.yaml:1: top level: keys must be plain names, got a sequence"},
    {"parallel:\n  tp: 8\n  tp: 4\n", SC_EINVAL, "t.yaml:3: duplicate key \"parallel.tp\" (first given on line 2)"},
    {"model:\n  preset: gpt3-13b\n  preset: gpt3-175b\n", SC_EINVAL, "t.yaml:3: duplicate key \"model.preset\" (first given on line 2)"},
    {"model: {}\ntraining: {}\nmodel: {}\n", SC_EINVAL, "t.yaml:3: duplicate key \"model\" (first given on line 1)"},
    {"parallel: {tp: 8}\n---\nparallel: {tp: 4}\n", SC_EINVAL, "t.yaml:3: more than one YAML document"},
    {"calibration: \"\"\n", SC_EINVAL, "t.yaml:1: calibration: expected a mapping or a file path"},
    {"calibration: no-such-file.yaml\n", SC_EREAD, "t.yaml:1: cannot open calibration file no-such-file.yaml: No such file or directory"},
    /* resolve: cross-field checks name the field and its line */
    {"model:\n  preset: gpt3-175b\nparallel:\n  tp: 5\n  pp: 16\ncluster:\n  num_gpus: 80\n", SC_EINVAL, "t.yaml:4: parallel.tp=5 does not divide model.heads=96"},
    {"model:\n  preset: llama3-8b\nparallel:\n  tp: 64\n  pp: 1\ncluster:\n  num_gpus: 64\n", SC_EINVAL, "t.yaml:4: parallel.tp=64 does not divide model.heads=32"},
    {"model:\n  preset: llama3-8b\n  kv_heads: 4\n  heads: 24\n  hidden: 3072\nparallel:\n  tp: 3\n  pp: 1\ncluster:\n  num_gpus: 3\n", SC_EINVAL, "t.yaml:7: parallel.tp=3 and model.kv_heads=4: one must divide the other"},
    {"model:\n  ffn_hidden: 1001\nparallel:\n  tp: 8\n", SC_EINVAL, "t.yaml:4: parallel.tp=8 does not divide model.ffn_hidden=1001"},
    {"model:\n  kv_heads: 5\n", SC_EINVAL, "t.yaml:2: model.kv_heads=5 does not divide model.heads=96"},
    {"model:\n  kv_heads: 192\n", SC_EINVAL, "t.yaml:2: model.kv_heads=192 does not divide model.heads=96"},
    {"model:\n  hidden: 1000\n", SC_EINVAL, "t.yaml:2: model.hidden=1000 is not a multiple of model.heads=96"},
    {"parallel:\n  pp: 5\n  pp_first_layers: 10\n  pp_last_layers: 10\n  dp: 1\ncluster:\n  num_gpus: 40\n", SC_EINVAL, "t.yaml:3: the 76 layers left by parallel.pp_first_layers / pp_last_layers do not split evenly over the other 3 stages"},
    {"parallel:\n  pp: 4\n  pp_first_layers: 50\n  pp_last_layers: 50\n  dp: 32\n", SC_EINVAL, "t.yaml:3: parallel.pp_first_layers + pp_last_layers = 50 + 50 leave -4 of model.layers=96"},
    {"parallel:\n  pp: 4\n  pp_first_layers: 12\n  pp_embedding_in_split: true\n  dp: 32\n", SC_EINVAL, "t.yaml:3: parallel.pp_first_layers / pp_last_layers and pp_embedding_in_split / pp_loss_in_split are two ways"},
    {"parallel:\n  pp: 4\n  pp_embedding_in_split: true\n  dp: 32\n", SC_EINVAL, "t.yaml:3: model.layers=96 plus the embedding / loss counted as layers (97 units) do not split"},
    {"model:\n  layers: 8\nparallel:\n  pp: 16\n", SC_EINVAL, "t.yaml:4: parallel.pp*vpp = 16*1 does not divide model.layers=8 and no split with equal middle stages fits"},
    {"parallel:\n  vpp: 4\n", SC_EINVAL, "t.yaml:2: parallel.pp*vpp = 16*4 does not divide model.layers=96 and no split"},
    {"parallel:\n  pp: 1\n  pp_first_layers: 4\n  dp: 128\n", SC_EINVAL, "t.yaml:3: parallel.pp_first_layers / pp_last_layers need parallel.pp > 1"},
    {"parallel:\n  dp: 4\n", SC_EINVAL, "t.yaml:2: world size mismatch: parallel.tp*pp*dp*cp = 8*16*4*1 = 512 but cluster.num_gpus=1024"},
    {"cluster:\n  num_gpus: 1000\n  nodes: 125\n", SC_EINVAL, "t.yaml:2: world size mismatch: cluster.num_gpus=1000 is not divisible by parallel.tp*pp*cp = 8*16*1 = 128"},
    {"parallel:\n  tp: 64\n  pp: 32\n", SC_EINVAL, "world size mismatch: cluster.num_gpus=1024 is not divisible by parallel.tp*pp*cp = 64*32*1 = 2048"},
    {"cluster:\n  num_gpus: 1024\n  nodes: 64\n", SC_EINVAL, "t.yaml:2: cluster.num_gpus=1024 does not match cluster.nodes*gpus_per_node = 64*8 = 512"},
    {"cluster:\n  num_gpus: 12\n", SC_EINVAL, "t.yaml:2: cluster.num_gpus=12 is not a multiple of cluster.gpus_per_node=8"},
    {"cluster:\n  num_gpus: 0\n", SC_EINVAL, "t.yaml:2: cluster: give cluster.num_gpus or cluster.nodes"},
    {"training:\n  global_batch: 100\n", SC_EINVAL, "t.yaml:2: training.global_batch=100 is not divisible by training.micro_batch*parallel.dp = 1*8 = 8"},
    {"training:\n  micro_batch: 256\n", SC_EINVAL, "t.yaml:2: training.global_batch=1536 is not divisible by training.micro_batch*parallel.dp = 256*8 = 2048"},
    {"parallel:\n  schedule: interleaved\n", SC_EINVAL, "t.yaml:2: parallel.schedule=interleaved requires parallel.vpp > 1"},
    {"parallel:\n  schedule: 1f1b\n  vpp: 2\n", SC_EINVAL, "t.yaml:2: parallel.vpp=2 requires parallel.schedule=interleaved, got 1f1b"},
    {"parallel:\n  vpp: 2\n  pp: 1\n  dp: 128\n", SC_EINVAL, "parallel.schedule=interleaved requires parallel.pp > 1"},
    {"parallel:\n  schedule: zb-h1\n  vpp: 2\n", SC_EINVAL, "t.yaml:3: parallel.schedule=zb-h1 runs one model chunk per stage"},
    {"parallel:\n  schedule: zbv\n  vpp: 3\n", SC_EINVAL, "t.yaml:3: parallel.schedule=zbv places two model chunks per stage"},
    {"parallel:\n  schedule: zbv\n  pp: 1\n  dp: 128\n", SC_EINVAL, "t.yaml:2: parallel.schedule=zbv requires parallel.pp > 1"},
    {"parallel:\n  schedule: dualpipe\n  pp: 1\n  dp: 128\n", SC_EINVAL, "t.yaml:3: parallel.schedule=dualpipe needs an even parallel.pp >= 2, got 1"},
    {"parallel:\n  schedule: dualpipe\n  vpp: 2\n", SC_EINVAL, "t.yaml:3: parallel.schedule=dualpipe holds one stage of each of two model copies: parallel.vpp must be 1 or unset, got 2"},
    {"training:\n  global_batch: 128\nparallel:\n  schedule: dualpipe\n", SC_EINVAL, "t.yaml:2: parallel.schedule=dualpipe needs at least 2 * pp = 32 micro-batches per replica, an even number, got global_batch / (micro_batch * dp) = 16"},
    {"training:\n  global_batch: 264\nparallel:\n  schedule: dualpipe\n", SC_EINVAL, "t.yaml:2: parallel.schedule=dualpipe needs at least 2 * pp = 32 micro-batches per replica, an even number, got global_batch / (micro_batch * dp) = 33"},
    {"parallel:\n  schedule: dualpipev\n  vpp: 3\n", SC_EINVAL, "t.yaml:3: parallel.schedule=dualpipev places two model chunks per stage"},
    {"parallel:\n  schedule: dualpipev\n  pp: 1\n  dp: 128\n", SC_EINVAL, "t.yaml:2: parallel.schedule=dualpipev requires parallel.pp > 1"},
    {"training:\n  global_batch: 128\nparallel:\n  schedule: dualpipev\n", SC_EINVAL, "t.yaml:2: parallel.schedule=dualpipev needs at least 2 * pp = 32 micro-batches per replica, got global_batch / (micro_batch * dp) = 16"},
    {"model:\n  layers: 80\nparallel:\n  schedule: dualpipev\n", SC_EINVAL, "t.yaml:4: parallel.schedule=dualpipev splits model.layers=80 evenly over 2 * pp = 32 model chunks"},
    {"parallel:\n  cp: 8\n  cp_comm: a2a\n  dp: 1\n", SC_EINVAL, "t.yaml:3: parallel.cp_comm=a2a splits the 12 heads of a TP rank over parallel.cp=8: cp must divide them"},
    {"model:\n  seq_len: 2052\nparallel:\n  cp: 4\n  dp: 2\n", SC_EINVAL, "t.yaml:4: model.seq_len=2052 is not divisible by 2 * cp = 8"},
    {"parallel:\n  fsdp_shard: 4\n", SC_EINVAL, "t.yaml:2: parallel.fsdp_shard=4 needs parallel.zero_stage=3"},
    {"parallel:\n  zero_stage: 3\n  fsdp_shard: 3\n", SC_EINVAL, "t.yaml:3: parallel.fsdp_shard=3 does not divide parallel.dp=8"},
    {"parallel:\n  zero_stage: 3\n  fsdp_fp8_allgather: true\n", SC_EINVAL, "t.yaml:3: parallel.fsdp_fp8_allgather needs parallel.zero_stage=3 and training.precision=fp8"},
    {"training:\n  fp8_attention: true\n", SC_EINVAL, "t.yaml:2: training.fp8_attention needs training.precision=fp8"},
    {"cluster:\n  num_gpus: 12\n  gpus_per_node: 8\nparallel:\n  tp: 8\n  pp: 1\n", SC_EINVAL, "t.yaml:2: cluster.num_gpus=12 is not a multiple of cluster.gpus_per_node=8 and its last node's 4 GPUs do not hold whole parallel.tp=8 groups"},
    {"parallel:\n  fsdp_prefetch: 9\n", SC_EINVAL, "t.yaml:2: parallel.fsdp_prefetch: 9 out of range [0, 8]"},
    {"model:\n  seq_len: 2047\nparallel:\n  sequence_parallel: 1\n", SC_EINVAL, "t.yaml:2: model.seq_len=2047 per context-parallel rank (cp=1) is not divisible by parallel.tp=8 (needed by sequence_parallel)"},
    {"training:\n  precision: fp8\n", SC_EINVAL, "t.yaml:2: training.precision=fp8 is not supported by cluster.gpu=a100-80gb"},
};
/* clang-format on */

static void test_error_messages(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
    sc_config c;
    int rc = load_resolve(ctx, &c, error_cases[i].yaml);
    if (rc != error_cases[i].rc || !strstr(sc_errmsg(ctx), error_cases[i].msg)) {
      print_error("case %zu:\n%s\nwant rc %d and\n  %s\ngot rc %d and\n  %s\n", i,
                  error_cases[i].yaml, error_cases[i].rc, error_cases[i].msg, rc, sc_errmsg(ctx));
      fail();
    }
  }
  sc_ctx_free(ctx);
}

/* Errors found by resolve in values that came from --set or code. */
static void test_resolve_locations(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  example_as_default(&c);
  assert_int_equal(sc_config_set(ctx, &c, "parallel.tp=5"), SC_OK);
  assert_int_equal(sc_config_set(ctx, &c, "cluster.num_gpus=80"), SC_OK);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "--set: parallel.tp=5 does not divide model.heads=96");

  example_as_default(&c);
  c.parallel.pp = 7;
  sc_config before = c;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "<default>: world size mismatch");
  assert_memory_equal(&c, &before, sizeof c); /* failed resolve leaves cfg as it was */

  /* Values set by code are checked against their types too. */
  example_as_default(&c);
  c.parallel.tp = -8;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "<default>: parallel.tp: -8 out of range [1, 1024]");
  example_as_default(&c);
  c.parallel.distributed_optimizer = 2;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "parallel.distributed_optimizer: expected 0 or 1, got 2");
  example_as_default(&c);
  c.training.precision = (sc_precision)9;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "training.precision: invalid enum value 9 (allowed: bf16, fp16, fp8, fp32)");
  example_as_default(&c);
  c.costs.attn_eff = 1.5;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "<default>: calibration.attn_eff: 1.5 out of range [0.01, 1] (0 = the default)");
  example_as_default(&c);
  c.costs.p2p_latency_us = -1;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "<default>: calibration.p2p_latency_us: -1 out of range [0.01, 10000]");
  example_as_default(&c);
  sc__strlcpy(c.cluster.gpu, "tpu", sizeof c.cluster.gpu);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "cluster.gpu: unknown gpu \"tpu\"");
  example_as_default(&c);
  memset(c.model.name, 'x', sizeof c.model.name);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  check_msg(ctx, "model.name: string is not terminated");
  example_as_default(&c);
  c.model.layers = INT64_MAX;
  assert_int_equal(sc_config_resolve(ctx, &c), SC_EINVAL);
  assert_int_equal(sc_config_resolve(NULL, &c), SC_EINVAL);
  assert_int_equal(sc_config_resolve(ctx, NULL), SC_EINVAL);
  sc_ctx_free(ctx);
}

static void test_resolve_derivations(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  sc_config c;
  /* Fewer GPUs than a node holds: one partly used node. */
  assert_int_equal(load_resolve(ctx, &c,
                                "model: {preset: gpt3-1.3b}\nparallel: {tp: 2, pp: 1}\n"
                                "cluster: {num_gpus: 4}\ntraining: {global_batch: 8}\n"),
                   SC_OK);
  assert_int_equal(c.cluster.nodes, 1);
  assert_int_equal(c.cluster.gpus_per_node, 4);
  assert_int_equal(c.parallel.dp, 2);
  /* vpp > 1 without a schedule selects interleaved; SP is dropped at tp 1. */
  assert_int_equal(load_resolve(ctx, &c,
                                "parallel: {tp: 1, pp: 8, vpp: 3, sequence_parallel: true}\n"
                                "cluster: {gpu: h100-sxm, nodes: 2}\n"
                                "training: {global_batch: 64, precision: bf16}\n"),
                   SC_OK);
  assert_int_equal(c.parallel.schedule, SC_SCHED_INTERLEAVED);
  assert_int_equal(c.parallel.sequence_parallel, 0);
  assert_int_equal(c.parallel.dp, 2);
  assert_int_equal(c.cluster.num_gpus, 16);
  assert_true(c.cluster.nic_gbps == sc_hw_find("h100-sxm")->nic_gbps);
  /* Explicit bandwidths and node shape are kept. */
  assert_int_equal(load_resolve(ctx, &c,
                                "cluster: {nodes: 256, gpus_per_node: 4, nic_gbps: 100, "
                                "nvlink_gbps: 150}\n"),
                   SC_OK);
  assert_int_equal(c.cluster.num_gpus, 1024);
  assert_true(c.cluster.nic_gbps == 100 && c.cluster.nvlink_gbps == 150);
  /* GQA with kv_heads < tp replicates KV heads (Megatron-LM accepts it). */
  assert_int_equal(load_resolve(ctx, &c,
                                "model: {preset: llama3-70b, kv_heads: 4}\n"
                                "parallel: {tp: 8, pp: 4, sequence_parallel: true}\n"
                                "cluster: {gpu: h100-sxm, num_gpus: 512}\n"
                                "training: {global_batch: 512, precision: bf16}\n"),
                   SC_OK);
  assert_int_equal(c.parallel.dp, 16);
  sc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- files */

static void test_files_and_calibration(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  char dir[] = "/tmp/test_config_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cfg_path[256], site_path[256], bad_path[256], badcfg_path[256];
  snprintf(cfg_path, sizeof cfg_path, "%s/run.yaml", dir);
  snprintf(site_path, sizeof site_path, "%s/site.yaml", dir);
  snprintf(bad_path, sizeof bad_path, "%s/bad_site.yaml", dir);
  snprintf(badcfg_path, sizeof badcfg_path, "%s/bad_run.yaml", dir);
  write_text(site_path,
             "provenance: {tool: stepcast calibrate}\n"
             "calibration:\n"
             "  gemm_eff: 0.81\n"
             "  p2p_latency_us: 6.5\n");
  write_text(cfg_path,
             "model:\n"
             "  preset: gpt3-13b\n"
             "parallel: {tp: 8, pp: 2}\n"
             "cluster: {num_gpus: 64}\n"
             "calibration: site.yaml\n");
  write_text(bad_path, "calibration:\n  gemm_eff: 2\n");
  write_text(badcfg_path, "calibration: bad_site.yaml\n");

  sc_config c;
  example_as_default(&c);
  assert_int_equal(sc_config_load_file(ctx, &c, cfg_path), SC_OK);
  assert_string_equal(c.origin, cfg_path);
  assert_true(c.costs.gemm_eff == 0.81);
  assert_true(c.costs.p2p_latency_us == 6.5);
  assert_int_equal(c.field_line[SC_FIELD_model_layers], 2);
  assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
  assert_int_equal(c.parallel.dp, 4);

  /* --set calibration=PATH and errors inside an included file. */
  example_as_default(&c);
  char set[300];
  snprintf(set, sizeof set, "calibration=%s", site_path);
  assert_int_equal(sc_config_set(ctx, &c, set), SC_OK);
  assert_true(c.costs.gemm_eff == 0.81);
  example_as_default(&c);
  assert_int_equal(sc_config_load_file(ctx, &c, badcfg_path), SC_EINVAL);
  check_msg(ctx, "bad_site.yaml:2: calibration.gemm_eff: 2 out of range [0.01, 1] (0 = the default)");
  /* A calibration file needs its calibration mapping. */
  write_text(bad_path, "other: 1\n");
  assert_int_equal(sc_config_load_file(ctx, &c, badcfg_path), SC_EINVAL);
  check_msg(ctx, "bad_site.yaml:1: no top-level \"calibration:\" mapping in calibration file");
  write_text(bad_path, "calibration: nested.yaml\n");
  assert_int_equal(sc_config_load_file(ctx, &c, badcfg_path), SC_EINVAL);
  check_msg(ctx, "bad_site.yaml:1: calibration: expected a mapping of keys, got a scalar");
  /* A config that includes itself as calibration is only read once. */
  write_text(bad_path, "calibration: bad_site.yaml\n");
  assert_int_equal(sc_config_load_file(ctx, &c, bad_path), SC_EINVAL);

  /* Missing file and directory. */
  assert_int_equal(sc_config_load_file(ctx, &c, "/nonexistent/x.yaml"), SC_EREAD);
  assert_string_equal(sc_errmsg(ctx),
                      "/nonexistent/x.yaml: cannot open: No such file or directory");
  assert_int_equal(sc_config_load_file(ctx, &c, dir), SC_EREAD);
  check_msg(ctx, ": cannot open: Is a directory");
  assert_int_equal(sc_config_load_file(NULL, &c, cfg_path), SC_EINVAL);
  assert_int_equal(sc_config_load_file(ctx, NULL, cfg_path), SC_EINVAL);
  assert_int_equal(sc_config_load_file(ctx, &c, NULL), SC_EINVAL);
  assert_int_equal(sc_config_load_string(ctx, &c, NULL, NULL, 0), SC_EINVAL);
  check_msg(ctx, "<string>:1: empty config");

  unlink(cfg_path);
  unlink(site_path);
  unlink(bad_path);
  unlink(badcfg_path);
  rmdir(dir);
  sc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- robustness */

/* Every prefix of a valid config, byte flips and odd structures either load
 * or fail with a message; none may crash or leak (run under ASan). */
static void test_never_crash(void **state) {
  (void)state;
  sc_ctx *ctx = new_ctx();
  const char *good =
      "model:\n  preset: llama3-70b\n  seq_len: 8192\n"
      "training: {global_batch: 512, micro_batch: 1, precision: bf16, recompute: selective}\n"
      "parallel:\n  tp: 8\n  pp: 4\n  vpp: 5\n  sequence_parallel: true\n"
      "  distributed_optimizer: true\n"
      "cluster: {gpu: h100-sxm, num_gpus: 512}\n"
      "calibration:\n  gemm_eff: 0.8\n";
  size_t n = strlen(good);
  sc_config c;
  assert_int_equal(load_resolve(ctx, &c, good), SC_OK);
  char text[1024];
  for (size_t k = 0; k <= n; k++) {
    example_as_default(&c);
    if (!sc_config_load_string(ctx, &c, "p.yaml", good, k)) (void)sc_config_resolve(ctx, &c);
  }
  uint32_t seed = 12345;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(text, good, n);
    for (int f = 0; f < 3; f++) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % n;
      seed = seed * 1103515245u + 12345u;
      text[pos] = (char)(seed >> 16);
    }
    example_as_default(&c);
    if (!sc_config_load_string(ctx, &c, "f.yaml", text, n)) (void)sc_config_resolve(ctx, &c);
    assert_true(strlen(sc_errmsg(ctx)) < 512);
  }
  /* Deep nesting, aliases, many keys, long scalars. */
  static char big[200000];
  size_t len = 0;
  for (int i = 0; i < 20000; i++) big[len++] = '[';
  example_as_default(&c);
  assert_int_not_equal(sc_config_load_string(ctx, &c, "deep.yaml", big, len), SC_OK);
  len = (size_t)snprintf(big, sizeof big, "parallel:\n");
  for (int i = 0; i < 5000; i++)
    len += (size_t)snprintf(big + len, sizeof big - len, "  k%d: %d\n", i, i);
  assert_int_equal(sc_config_load_string(ctx, &c, "wide.yaml", big, len), SC_EINVAL);
  check_msg(ctx, "wide.yaml:2: unknown key \"parallel.k0\"");
  memset(big, 'a', 100000);
  memcpy(big, "model:\n  name: ", 15);
  assert_int_equal(sc_config_load_string(ctx, &c, "long.yaml", big, 100000), SC_EINVAL);
  check_msg(ctx, "model.name: longer than 63 bytes");
  const char *alias = "x: &a [1, 2]\nparallel: {tp: *a}\n";
  assert_int_equal(sc_config_load_string(ctx, &c, "alias.yaml", alias, strlen(alias)), SC_EINVAL);
  const char *alias_ok = "model: &m {preset: gpt3-13b}\n";
  assert_int_equal(sc_config_load_string(ctx, &c, "a2.yaml", alias_ok, strlen(alias_ok)), SC_OK);
  const char *utf16 =
      "\xff\xfe"
      "p\0a\0";
  assert_int_not_equal(sc_config_load_string(ctx, &c, "u16.yaml", utf16, 6), SC_OK);
  sc_ctx_free(ctx);
}

static void test_alloc_failure(void **state) {
  (void)state;
  char path[] = "/tmp/test_config_alloc_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  /* Big enough to need the read buffer to grow. */
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  fputs("model:\n  preset: gpt3-175b\n", fp);
  for (int i = 0; i < 2000; i++) fputs("# padding padding padding padding\n", fp);
  fclose(fp);
  int ok = 0;
  for (long k = 1; k < 10 && !ok; k++) {
    sc_test_heap f = sc_test_heap_failing(k, 1); /* calls k, k+1, ... fail */
    sc_ctx *ctx;
    assert_int_equal(sc_test_ctx_on(&f, &ctx), SC_OK);
    sc_config c, before;
    example_as_default(&c);
    before = c;
    int rc = sc_config_load_file(ctx, &c, path);
    if (rc == SC_OK) {
      ok = 1;
    } else {
      assert_int_equal(rc, SC_ENOMEM);
      assert_memory_equal(&c, &before, sizeof c);
    }
    sc_ctx_free(ctx);
    assert_int_equal(f.live, 0);
  }
  assert_true(ok);
  unlink(path);
}

/* The examples load and resolve; the spelled-out default equals the default. */
static void test_examples(void **state) {
  (void)state;
  const char *src = sc_test_source_dir();
  static const char *const names[] = {"gpt3-175b-1024.yaml", "llama3-70b-h100-512.yaml",
                                      "gpt3-13b-a100-64.yaml", "llama3-8b-quick.yaml"};
  sc_ctx *ctx = new_ctx();
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/%s", src, names[0]);
  if (access(path, R_OK)) {
    sc_ctx_free(ctx);
    skip(); /* run from the source tree or with SC_SOURCE_DIR set */
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    sc_config c;
    snprintf(path, sizeof path, "%s/examples/%s", src, names[i]);
    example_as_default(&c);
    int rc = sc_config_load_file(ctx, &c, path);
    if (!rc) rc = sc_config_resolve(ctx, &c);
    if (rc) {
      print_error("%s: %s\n", names[i], sc_errmsg(ctx));
      fail();
    }
    if (i == 0) {
      sc_config d;
      example_as_default(&d);
      assert_int_equal(sc_config_resolve(ctx, &d), SC_OK);
      assert_memory_equal(&c.model, &d.model, sizeof d.model);
      assert_memory_equal(&c.training, &d.training, sizeof d.training);
      assert_memory_equal(&c.parallel, &d.parallel, sizeof d.parallel);
      assert_memory_equal(&c.cluster, &d.cluster, sizeof d.cluster);
      assert_memory_equal(&c.simulation, &d.simulation, sizeof d.simulation);
      assert_memory_equal(&c.costs, &d.costs, sizeof d.costs);
    }
  }
  sc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- docs */

static void test_docs(void **state) {
  (void)state;
  buf *b = calloc(1, sizeof *b);
  assert_int_equal(sc_config_write_docs(buf_write, b), 0);
  assert_non_null(strstr(b->data, "stepcast config-docs > docs/CONFIG.md"));
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    char cell[128];
    snprintf(cell, sizeof cell, "| `%s` |", sc_config_field_name(i));
    if (!strstr(b->data, cell)) {
      print_error("docs lack %s\n", cell);
      fail();
    }
  }
  for (size_t i = 0; i < sc_model_preset_count(); i++) {
    char cell[128];
    snprintf(cell, sizeof cell, "| `%s` |", sc_model_preset_name(i));
    assert_non_null(strstr(b->data, cell));
  }
  for (size_t i = 0; i < sc_hw_count(); i++) assert_non_null(strstr(b->data, sc_hw_at(i)->name));
  assert_non_null(strstr(
      b->data, "| `llama2-7b` | 32 | 4096 | 32 | 32 | 11008 | 32000 | 4096 | swiglu | no |"));
  assert_non_null(strstr(b->data, "```yaml\nmodel:\n"));
  /* Both YAML examples in the docs load and resolve. */
  sc_ctx *ctx = new_ctx();
  for (const char *p = strstr(b->data, "```yaml\n"); p; p = strstr(p, "```yaml\n")) {
    p += 8;
    const char *end = strstr(p, "```\n");
    assert_non_null(end);
    sc_config c;
    sc_config_default(&c);
    assert_int_equal(sc_config_load_string(ctx, &c, "doc.yaml", p, (size_t)(end - p)), SC_OK);
    assert_int_equal(sc_config_resolve(ctx, &c), SC_OK);
    p = end;
  }
  sc_ctx_free(ctx);
  /* The checked-in docs/CONFIG.md is the generator's output. */
  const char *src = sc_test_source_dir();
  if (src) {
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/CONFIG.md", src);
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open %s", path);
    if (fp) {
      static char disk[1 << 16];
      size_t n = fread(disk, 1, sizeof disk - 1, fp);
      fclose(fp);
      disk[n] = 0;
      if (n != b->len || memcmp(disk, b->data, n)) {
        print_error("docs/CONFIG.md is stale: regenerate with `stepcast config-docs`\n");
        fail();
      }
    }
  }
  free(b);
}

/* Jobs smaller than a node, or with a partly used last node whose GPUs hold
 * whole TP groups, are valid: 4 of an 8-GPU node; 12 GPUs as 8 + 4 with TP 4. */
static void test_partial_nodes(void **state) {
  (void)state;
  sc_ctx *ctx;
  assert_int_equal(sc_test_ctx_new(&ctx), 0);
  sc_config c;
  example_as_default(&c);
  assert_int_equal(sc_model_preset(ctx, &c, "llama3-8b"), 0);
  c.parallel.tp = 4;
  c.parallel.pp = 1;
  c.parallel.dp = 0;
  c.training.global_batch = 12;
  c.cluster.gpus_per_node = 8;
  c.cluster.num_gpus = 4;
  snprintf(c.cluster.gpu, sizeof c.cluster.gpu, "h100-sxm");
  sc_config a = c;
  assert_int_equal(sc_config_resolve(ctx, &a), SC_OK);
  assert_int_equal(a.cluster.nodes, 1);
  a = c;
  a.cluster.num_gpus = 12;
  assert_int_equal(sc_config_resolve(ctx, &a), SC_OK);
  assert_int_equal(a.cluster.nodes, 2);
  assert_int_equal(a.parallel.dp, 3);
  sc_result r;
  assert_int_equal(sc_simulate(ctx, &a, NULL, NULL, &r), SC_OK);
  assert_true(r.step_time_s > 0);
  sc_ctx_free(ctx);
}

static void test_format_field(void **state) {
  (void)state;
  sc_config c;
  char v[128];
  example_as_default(&c);
  assert_int_equal(sc__config_format_field(&c, SC_FIELD_parallel_tp, v, sizeof v), SC_OK);
  assert_string_equal(v, "8");
  assert_int_equal(sc__config_format_field(&c, SC_FIELD_training_precision, v, sizeof v), SC_OK);
  assert_string_equal(v, "fp16");
  assert_int_equal(sc__config_format_field(&c, SC_FIELD_simulation_fold, v, sizeof v), SC_OK);
  assert_string_equal(v, "true");
  assert_int_equal(sc__config_format_field(&c, SC_FIELD_cluster_gpu, v, sizeof v), SC_OK);
  assert_string_equal(v, "\"a100-80gb\"");
  assert_int_equal(sc__config_format_field(&c, SC_FIELD_COUNT, v, sizeof v), SC_EINVAL);
  c.parallel.schedule = (sc_schedule)7;
  assert_int_equal(sc__config_format_field(&c, SC_FIELD_parallel_schedule, v, sizeof v), SC_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_is_neutral),
      cmocka_unit_test(test_example_resolves),
      cmocka_unit_test(test_example_is_the_preset),
      cmocka_unit_test(test_yaml_round_trip),
      cmocka_unit_test(test_presets),
      cmocka_unit_test(test_preset_then_override),
      cmocka_unit_test(test_swiglu_ffn_default),
      cmocka_unit_test(test_field_lines),
      cmocka_unit_test(test_enum_names),
      cmocka_unit_test(test_field_names),
      cmocka_unit_test(test_set_each_type),
      cmocka_unit_test(test_set_errors),
      cmocka_unit_test(test_error_messages),
      cmocka_unit_test(test_resolve_locations),
      cmocka_unit_test(test_resolve_derivations),
      cmocka_unit_test(test_files_and_calibration),
      cmocka_unit_test(test_never_crash),
      cmocka_unit_test(test_alloc_failure),
      cmocka_unit_test(test_examples),
      cmocka_unit_test(test_docs),
      cmocka_unit_test(test_format_field),
      cmocka_unit_test(test_partial_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
