/*
 * fuzz_chakra.c: libFuzzer harness for Chakra execution traces (`import
 * chakra`): the protobuf ET (varint-delimited messages) or the PyTorch host
 * execution-trace JSON, chosen by the first byte as the importer does, fed
 * in two pieces; a job that imports is finished, round-tripped through .scw
 * and replayed. Any input must give 0 or a clean error code, never a
 * crash, leak, hang or UB.
 *   make fuzz
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  (void)fz_import(ctx, SC_TRACE_CHAKRA, "fuzz.0.et", data, size, fz_cut(size), 0);
  sc_ctx_free(ctx);
  return 0;
}
