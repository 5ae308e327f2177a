/*
 * fuzz_calib.c: libFuzzer harness for calibration files: the input goes to a
 * scratch file read by sc_config_load_calibration (`--calibration FILE`),
 * whose values then price a tiny simulated step (fuzz_common.h), and by the
 * collective model's loader (sc_comm_load_calibration, `comm
 * --calibration`), which predicts a few sizes with them. Any input must give
 * 0 or a clean error code, never a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"
#include "stepcast/comm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  char path[256];
  if (!fz_scratch("calib", ".yaml", data, size, path, sizeof path)) {
    sc_ctx_free(ctx);
    return 0;
  }
  sc_config cfg;
  fz_small_config(ctx, &cfg);
  if (sc_config_load_calibration(ctx, &cfg, path) == SC_OK) {
    fz_tiny_sim(ctx, &cfg, 0);
    cfg.simulation.interference = SC_INTERF_CONSTANT;
    fz_tiny_sim(ctx, &cfg, 0);
  }
  sc_comm_cluster cl;
  memset(&cl, 0, sizeof cl);
  snprintf(cl.gpu, sizeof cl.gpu, "h100-sxm");
  sc_comm *m;
  if (sc_comm_new(ctx, &cl, &m) == SC_OK) {
    if (sc_comm_load_calibration(m, path) == SC_OK) {
      sc_comm_estimate e;
      for (int op = 0; op < 3; op++)
        for (double b = 8; b < 1e10; b *= 1024) (void)sc_comm_predict(m, op, b, 64, 8, &e);
    }
    sc_comm_free(m);
  }
  remove(path);
  sc_ctx_free(ctx);
  return 0;
}
