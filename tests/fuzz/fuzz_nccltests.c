/*
 * fuzz_nccltests.c: libFuzzer harness for nccl-tests output
 * (sc_nccltests_parse): every layout the parser knows, then the derived
 * numbers (row times, warm-up rows, inferred ranks) and, for a table of a
 * known operation, the comparison with the collective model, as
 * `comm --compare` runs it. Any input must give 0 or a clean error code,
 * never a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"
#include "stepcast/comm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_nccltests t;
  if (sc_nccltests_parse(ctx, "all_reduce_fuzz.log", (const char *)data, size, &t) == SC_OK) {
    for (size_t i = 0; i < t.nrows; i++) {
      (void)sc_nccltests_row_time_us(&t.rows[i]);
      (void)sc_nccltests_row_is_warmup(&t, i);
    }
    int64_t ranks = sc_nccltests_infer_ranks(&t);
    if (t.op >= 0 && t.nrows <= 4096) {
      sc_comm_cluster cl;
      memset(&cl, 0, sizeof cl);
      snprintf(cl.gpu, sizeof cl.gpu, "a100-80gb");
      sc_comm *m;
      if (sc_comm_new(ctx, &cl, &m) == SC_OK) {
        sc_comm_compare_row *rows = calloc(t.nrows ? t.nrows : 1, sizeof *rows);
        size_t n = 0;
        double mape;
        int64_t gpus = t.ranks > 0 ? 0 : ranks > 0 ? ranks : 8;
        if (rows) (void)sc_comm_compare(m, &t, -1, gpus, 0, rows, &n, &mape);
        free(rows);
        sc_comm_free(m);
      }
    }
    sc_nccltests_free(ctx, &t);
  }
  sc_ctx_free(ctx);
  return 0;
}
