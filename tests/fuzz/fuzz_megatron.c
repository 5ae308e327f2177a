/*
 * fuzz_megatron.c: libFuzzer harness for Megatron-LM launch lines: the input
 * is read by sc_config_load_megatron (`import megatron`); a config that
 * loads is cut to a tiny step and simulated (fuzz_common.h), and a resolved
 * one is exported back (`export megatron`). Any input must give 0 or a clean
 * error code, never a crash, leak or UB.
 *   make fuzz FUZZERS=megatron
 */
#include "fuzz_common.h"
#include "stepcast/megatron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_config cfg;
  sc_config_default(&cfg);
  sc_megatron_info info;
  if (sc_config_load_megatron(ctx, &cfg, "fuzz.sh", (const char *)data, size, &info) == SC_OK) {
    sc_config c = cfg;
    if (sc_config_resolve(ctx, &c) == SC_OK) {
      fz_buf out = {0};
      (void)sc_config_write_megatron(ctx, &c, fz_sink, &out);
      free(out.p);
    }
    if (cfg.model.layers > 8) cfg.model.layers = 8;
    if (cfg.model.seq_len > 512) cfg.model.seq_len = 512;
    fz_tiny_sim(ctx, &cfg, 0);
  }
  sc_ctx_free(ctx);
  return 0;
}
