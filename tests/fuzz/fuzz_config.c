/*
 * fuzz_config.c: libFuzzer harness for the YAML config parser: load, resolve
 * and simulate a tiny step of it (fuzz_common.h), so every value that loads,
 * calibration keys included, reaches the cost models and the engine. Any
 * input must give 0 or a clean error code, never a crash, leak, hang or UB.
 *   make fuzz   (clang -fsanitize=fuzzer,address,undefined; bounded run)
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_config cfg;
  if (sc_config_example(ctx, &cfg)) { /* the inputs edit the built-in example */
    sc_ctx_free(ctx);
    return 0;
  }
  if (sc_config_load_string(ctx, &cfg, "fuzz.yaml", (const char *)data, size) == SC_OK) {
    fz_tiny_sim(ctx, &cfg, (size & 7) == 0);
    fz_buf y = {0};
    (void)sc_config_write_yaml(&cfg, fz_sink, &y);
    free(y.p);
  }
  sc_ctx_free(ctx);
  return 0;
}
