/*
 * fuzz_kineto.c: libFuzzer harness for PyTorch profiler (Kineto) traces: the
 * input is one rank's trace file (plain, gzip or zstd), fed to the Kineto
 * importer in two pieces (fz_cut: token boundaries fall anywhere); a job
 * that imports is finished, written as .scw, read back and replayed
 * (fuzz_common.h). The same bytes also go through the interference data
 * reader (`calibrate --interference`) and, when pairs come out, its fit.
 * Any input must give 0 or a clean error code, never a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"
#include "stepcast/interference.h"

static void interference(sc_ctx *ctx, const uint8_t *data, size_t size, size_t cut) {
  sc_interf_data *d;
  if (sc_interf_data_new(ctx, NULL, &d)) return;
  int rc = sc_interf_trace_begin(d, "fuzz.json");
  if (!rc) rc = sc_interf_trace_feed(d, data, cut);
  if (!rc) rc = sc_interf_trace_feed(d, data + cut, size - cut);
  if (!rc) rc = sc_interf_trace_end(d);
  sc_interf_stats st;
  sc_interf_data_stats(d, &st);
  if (!rc && st.pairs > 0 && st.pairs < 10000) {
    sc_interf_fit_result res;
    (void)sc_interf_fit(d, NULL, &res);
  }
  sc_interf_data_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  size_t cut = fz_cut(size);
  (void)fz_import(ctx, SC_TRACE_KINETO, "fuzz.json", data, size, cut, 0);
  interference(ctx, data, size, cut);
  sc_ctx_free(ctx);
  return 0;
}
