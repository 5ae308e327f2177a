/*
 * fuzz_set.c: libFuzzer harness for `--set` overrides (sc_config_set): each
 * input line is one "section.key=value" applied to the built-in default,
 * then the config is resolved and a tiny step simulated (fuzz_common.h).
 * Any input must give 0 or a clean error code, never a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_config cfg;
  if (sc_config_example(ctx, &cfg)) { /* the inputs edit the built-in example */
    sc_ctx_free(ctx);
    return 0;
  }
  char line[4097];
  size_t i = 0;
  int ok = 1;
  while (i < size && ok) {
    size_t j = i;
    while (j < size && data[j] != '\n') j++;
    memcpy(line, data + i, j - i);
    line[j - i] = 0; /* an embedded NUL cuts the assignment, as argv would */
    ok = sc_config_set(ctx, &cfg, line) == SC_OK;
    i = j + 1;
  }
  if (ok) fz_tiny_sim(ctx, &cfg, 0);
  sc_ctx_free(ctx);
  return 0;
}
