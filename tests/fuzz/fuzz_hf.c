/*
 * fuzz_hf.c: libFuzzer harness for HuggingFace config.json files: the input
 * goes to a scratch file applied as model.hf_config (--set, as `run --hf`);
 * a shape that loads, with a short sequence and a small layout, then runs a
 * tiny simulated step (fuzz_common.h). Any input must give 0 or a clean error
 * code, never a crash, leak or UB.
 *   make fuzz FUZZERS=hf
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  char path[256];
  if (!fz_scratch("hf", ".json", data, size, path, sizeof path)) {
    sc_ctx_free(ctx);
    return 0;
  }
  sc_config cfg;
  sc_config_default(&cfg);
  char set[300];
  snprintf(set, sizeof set, "model.hf_config=%s", path);
  if (sc_config_set(ctx, &cfg, set) == SC_OK) {
    /* Keep the step tiny whatever the shape says. */
    if (cfg.model.layers > 8) cfg.model.layers = 8;
    cfg.model.seq_len = 256;
    cfg.field_line[sc_config_field_index("model.seq_len")] = SC_LINE_SET;
    cfg.parallel.tp = cfg.parallel.pp = 1;
    cfg.parallel.dp = 0;
    cfg.cluster.num_gpus = 8;
    cfg.cluster.nodes = 0;
    cfg.training.global_batch = 8;
    cfg.training.micro_batch = 1;
    fz_tiny_sim(ctx, &cfg, 0);
  }
  remove(path);
  sc_ctx_free(ctx);
  return 0;
}
