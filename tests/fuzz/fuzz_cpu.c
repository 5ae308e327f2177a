/*
 * fuzz_cpu.c: libFuzzer harness for ex-situ CPU traces (`import cpu`,
 * tools/trace_torch.py): one trace file fed in two pieces to the ex-situ
 * importer; a job that imports is finished, round-tripped through .scw and
 * replayed as traced and as DDP on 4 replicas (its priced ops go through
 * the cost models). Inputs of odd size are read as GPU traces priced
 * ex-situ (`import cpu --gpu-trace`: kernels ignored, the step measured).
 * Any input must give 0 or a clean error code, never a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_trace_format fmt = size & 1 ? SC_TRACE_CPU_OF_GPU : SC_TRACE_CPU;
  (void)fz_import(ctx, fmt, "fuzz.json", data, size, fz_cut(size), 4);
  sc_ctx_free(ctx);
  return 0;
}
