/*
 * fuzz_gpu.c: libFuzzer harness for GPU description files: the input goes to
 * a scratch .yaml file applied as cluster.gpu (--set); a description that
 * loads prices a tiny simulated step (fuzz_common.h) and is written back with
 * sc_hw_write_yaml. Any input must give 0 or a clean error code, never a
 * crash, leak or UB.
 *   make fuzz FUZZERS=gpu
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  char path[256];
  if (!fz_scratch("gpu", ".yaml", data, size, path, sizeof path)) {
    sc_ctx_free(ctx);
    return 0;
  }
  sc_config cfg;
  fz_small_config(ctx, &cfg);
  cfg.cluster.gpus_per_node = 0;
  cfg.training.precision = SC_PREC_BF16;
  char set[300];
  snprintf(set, sizeof set, "cluster.gpu=%s", path);
  if (sc_config_set(ctx, &cfg, set) == SC_OK) {
    fz_tiny_sim(ctx, &cfg, 0);
    sc_hw hw = {0};
    hw.name = cfg.cluster.gpu_file.name;
    hw.description = cfg.cluster.gpu_file.description;
    hw.source = cfg.cluster.gpu_file.source;
    hw.bf16_tflops = cfg.cluster.gpu_file.bf16_tflops;
    fz_buf out = {0};
    (void)sc_hw_write_yaml(&hw, fz_sink, &out);
    free(out.p);
  }
  remove(path);
  sc_ctx_free(ctx);
  return 0;
}
