/*
 * fuzz_caseset.c: libFuzzer harness for validation case files
 * (sc_caseset_load_string): the input is a CSV, optionally followed by a
 * line "%%" and a base config (the NAME.yaml beside NAME.csv), which goes to
 * a scratch file. Rows that load are turned into configs as `validate` does
 * (sc_case_config) and tiny ones simulated. Any input must give 0 or a clean
 * error code, never a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"
#include "stepcast/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  fz_split sp = fz_split_at(data, size);
  char base[256];
  if (sp.has && !fz_scratch("base", ".yaml", sp.b, sp.nb, base, sizeof base)) {
    sc_ctx_free(ctx);
    return 0;
  }
  sc_caseset *set;
  if (sc_caseset_new(ctx, &set) == SC_OK) {
    if (sc_caseset_load_string(set, "fuzz.csv", sp.a, sp.na, sp.has ? base : NULL) == SC_OK) {
      for (size_t i = 0; i < sc_caseset_count(set) && i < 4; i++) {
        const sc_case *c = sc_caseset_case(set, i);
        sc_config cfg;
        if (!c->unsupported[0] && sc_case_config(ctx, c, NULL, &cfg) == SC_OK)
          fz_tiny_sim(ctx, &cfg, 0);
      }
      for (size_t i = 0; i < sc_caseset_warning_count(set); i++) (void)sc_caseset_warning(set, i);
    }
    sc_caseset_free(set);
  }
  if (sp.has) remove(base);
  sc_ctx_free(ctx);
  return 0;
}
