/*
 * test_gpufile.c: GPU description files (src/input/gpufile.c, cluster.gpu:
 * FILE.yaml): every preset written by sc_hw_write_yaml reads back with every
 * figure identical and simulates identically; a config naming a file writes
 * the path back in its YAML; a preset name replaces a file; every malformed
 * file is "file:line: message"; the warnings a config's GPU and calibration
 * deserve (sc_config_warnings).
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

#include "sctest.h"

static sc_ctx *ctx;
static char dir[64];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/sc_gpu_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  return sc_test_ctx_new(&ctx);
}

static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *put(const char *name, const char *text, size_t len) {
  static char path[160];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  fclose(f);
  return path;
}

static void check_msg(const char *want) {
  const char *got = sc_errmsg(ctx);
  if (!strstr(got, want)) fail_msg("expected a message containing\n  %s\ngot\n  %s", want, got);
}

static void test_presets_round_trip(void **state) {
  (void)state;
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    sc_test_buf out = {0};
    assert_int_equal(sc_hw_write_yaml(hw, sc_test_buf_write, &out), SC_OK);
    char name[64], set[256];
    snprintf(name, sizeof name, "%s.yaml", hw->name);
    const char *path = put(name, out.p, out.len);
    free(out.p);
    sc_config a, b;
    sc_test_example(&a);
    sc_test_example(&b);
    snprintf(set, sizeof set, "cluster.gpu=%s", path);
    if (sc_config_set(ctx, &a, set)) fail_msg("%s: %s", hw->name, sc_errmsg(ctx));
    snprintf(set, sizeof set, "cluster.gpu=%s", hw->name);
    assert_int_equal(sc_config_set(ctx, &b, set), SC_OK);
    const sc_gpu_desc *d = &a.cluster.gpu_file;
    assert_int_equal(d->set, 1);
    assert_string_equal(a.cluster.gpu, hw->name);
    assert_string_equal(d->description, hw->description);
    assert_string_equal(d->source, hw->source);
    assert_true(d->fp32_tflops == hw->fp32_tflops && d->tf32_tflops == hw->tf32_tflops &&
                d->bf16_tflops == hw->bf16_tflops && d->fp8_tflops == hw->fp8_tflops &&
                d->hbm_gib == hw->hbm_gib && d->hbm_gbps == hw->hbm_gbps &&
                d->nvlink_gbps == hw->nvlink_gbps && d->nic_gbps == hw->nic_gbps);
    assert_int_equal(d->sms, hw->sms);
    assert_int_equal(d->gpus_per_node, hw->gpus_per_node);
    if (hw->bf16_tflops < 100) continue; /* the default example needs a modern part */
    /* The same step on the file and on the preset. */
    static const char *const small[] = {"model.preset=llama3-8b", "cluster.num_gpus=16",
                                        "parallel.tp=2", "parallel.pp=1",
                                        "training.global_batch=32", "training.precision=bf16"};
    for (size_t k = 0; k < sizeof small / sizeof small[0]; k++) {
      assert_int_equal(sc_config_set(ctx, &a, small[k]), SC_OK);
      assert_int_equal(sc_config_set(ctx, &b, small[k]), SC_OK);
    }
    if (sc_config_resolve(ctx, &a) || sc_config_resolve(ctx, &b))
      fail_msg("%s: %s", hw->name, sc_errmsg(ctx));
    sc_result ra, rb;
    assert_int_equal(sc_simulate(ctx, &a, NULL, NULL, &ra), SC_OK);
    assert_int_equal(sc_simulate(ctx, &b, NULL, NULL, &rb), SC_OK);
    if (ra.step_time_s != rb.step_time_s || ra.memory_gib != rb.memory_gib)
      fail_msg("%s: %.9f vs %.9f s", hw->name, ra.step_time_s, rb.step_time_s);
  }
}

/* A config that names a file writes the path back, relative to where it was
 * found, and a preset name given later replaces the file. */
static void test_config_paths(void **state) {
  (void)state;
  const char gpu[] =
      "gpu:\n  name: mi300x-test\n  fp32_tflops: 163.4\n  bf16_tflops: 1307.4\n"
      "  fp8_tflops: 2614.9\n  hbm_gib: 192\n  hbm_gbps: 5300\n  sms: 304\n"
      "  nvlink_gbps: 448\n  nic_gbps: 400\n  gpus_per_node: 8\n";
  put("mi.yaml", gpu, strlen(gpu));
  char yaml[256], name[128];
  snprintf(yaml, sizeof yaml,
           "model: {preset: llama3-8b}\ntraining: {global_batch: 32}\n"
           "parallel: {tp: 1, pp: 1}\ncluster: {gpu: mi.yaml, num_gpus: 8}\n");
  snprintf(name, sizeof name, "%s/job.yaml", dir);
  sc_config c;
  sc_test_example(&c);
  if (sc_config_load_string(ctx, &c, name, yaml, strlen(yaml))) fail_msg("%s", sc_errmsg(ctx));
  if (sc_config_resolve(ctx, &c)) fail_msg("%s", sc_errmsg(ctx));
  assert_string_equal(c.cluster.gpu, "mi300x-test");
  assert_true(c.cluster.nvlink_gbps == 448); /* the file's figures reach the derivation */
  sc_test_buf out = {0};
  assert_int_equal(sc_config_write_yaml(&c, sc_test_buf_write, &out), SC_OK);
  char want[160];
  snprintf(want, sizeof want, "gpu: \"%s/mi.yaml\"", dir);
  assert_non_null(strstr(out.p, want));
  /* ...and loads again. */
  sc_config d;
  sc_test_example(&d);
  if (sc_config_load_string(ctx, &d, "again.yaml", out.p, out.len)) fail_msg("%s", sc_errmsg(ctx));
  free(out.p);
  assert_string_equal(d.cluster.gpu, "mi300x-test");
  assert_int_equal(sc_config_set(ctx, &d, "cluster.gpu=h100-sxm"), SC_OK);
  assert_int_equal(d.cluster.gpu_file.set, 0);
}

static void test_bad_files(void **state) {
  (void)state;
  struct {
    const char *text, *want;
  } cases[] = {
      {"gpu:\n  name: x\n  bf16_tflops: -5\n", "bad.yaml:3: gpu.bf16_tflops: -5 out of range"},
      {"gpu:\n  name: x\n  bf16_tflops: 100\n", "bad.yaml:2: gpu: missing fp32_tflops, hbm_gib"},
      {"gpu:\n  name: x\n  bf16_tflop: 100\n", "bad.yaml:3: unknown key \"gpu.bf16_tflop\""},
      {"gpu:\n  name: x\n  name: y\n", "bad.yaml:3: duplicate key \"gpu.name\""},
      {"gpu:\n  name: x\n  sms: 1.5\n", "bad.yaml:3: gpu.sms: expected an integer, got 1.5"},
      {"gpu:\n  name: x\n  hbm_gbps: fast\n", "bad.yaml:3: gpu.hbm_gbps: expected a number"},
      {"cluster:\n  gpu: x\n", "bad.yaml:1: unknown section \"cluster\""},
      {"gpu: [1, 2]\n", "bad.yaml:1: gpu: expected a mapping"},
      {"gpu:\n  name: [x\n", "bad.yaml:"},
      {"gpu:\n  name: \"\"\n", "bad.yaml:2: gpu.name: empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *path = put("bad.yaml", cases[i].text, strlen(cases[i].text));
    sc_config c;
    sc_test_example(&c);
    char set[256];
    snprintf(set, sizeof set, "cluster.gpu=%s", path);
    assert_int_equal(sc_config_set(ctx, &c, set), SC_EINVAL);
    check_msg(cases[i].want);
  }
  sc_config c;
  sc_test_example(&c);
  assert_int_equal(sc_config_set(ctx, &c, "cluster.gpu=/nonexistent/g.yaml"), SC_EREAD);
  check_msg("cannot open GPU file");
  assert_int_equal(sc_config_set(ctx, &c, "cluster.gpu=h100"), SC_EINVAL);
  check_msg("unknown gpu \"h100\" (a GPU file ends in .yaml; known:");
}

static int sink_buf(void *ud, const char *p, size_t n) { return sc_test_buf_write(ud, p, n); }

/* The warnings of a config: a GPU without a fitted compute calibration, a
 * calibration file fitted for another GPU; none for the shipped fits. */
static void test_warnings(void **state) {
  (void)state;
  sc_config c;
  sc_test_buf out = {0};
  sc_test_example(&c); /* A100: fitted */
  assert_int_equal(sc_config_warnings(&c, sink_buf, &out), SC_OK);
  assert_true(out.len == 0);
  assert_int_equal(sc_config_set(ctx, &c, "cluster.gpu=mi300x"), SC_OK);
  assert_int_equal(sc_config_warnings(&c, sink_buf, &out), SC_OK);
  assert_non_null(strstr(out.p, "gpu mi300x has no compute calibration fitted"));
  free(out.p);
  memset(&out, 0, sizeof out);
  assert_int_equal(sc_config_set(ctx, &c, "calibration.gemm_eff=0.7"), SC_OK);
  assert_int_equal(sc_config_warnings(&c, sink_buf, &out), SC_OK); /* calibrated by hand */
  assert_true(out.len == 0);
  const char cal[] = "calibration:\n  gemm_eff: 0.6\nfit:\n  gpu: h100-sxm\n";
  const char *path = put("cal.yaml", cal, strlen(cal));
  sc_test_example(&c);
  assert_int_equal(sc_config_load_calibration(ctx, &c, path), SC_OK);
  assert_int_equal(sc_config_warnings(&c, sink_buf, &out), SC_OK);
  assert_non_null(strstr(out.p, "the calibration was fitted for h100-sxm, the cluster's GPU is "
                                "a100-80gb"));
  free(out.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets_round_trip),
      cmocka_unit_test(test_config_paths),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_warnings),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
