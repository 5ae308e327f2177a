/*
 * fuzz_config.c: libFuzzer harness for the YAML config parser and resolver.
 * Any input must give 0 or a clean error code, never a crash, leak or UB.
 *   make fuzz   (clang -fsanitize=fuzzer,address,undefined; bounded run)
 */
#include "stepcast/stepcast.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_config cfg;
  sc_config_default(&cfg);
  if (sc_config_load_string(ctx, &cfg, "fuzz.yaml", (const char *)data, size) == SC_OK)
    (void)sc_config_resolve(ctx, &cfg);
  sc_ctx_free(ctx);
  return 0;
}
