/*
 * fuzz_scw.c: libFuzzer harness for the .scw reader (sc_job_read, docs/SCW.md).
 * The header's payload length and CRC-32 are recomputed over the mutated
 * bytes before reading (the fix-up), so mutations reach the section and
 * field decoders instead of all stopping at the checksum. A job that reads
 * is written again, must read back, and is replayed as traced and at twice
 * its data parallelism. Any input must give 0 or a clean error code, never
 * a crash, leak or UB.
 *   make fuzz
 */
#include "fuzz_common.h"

#include <zlib.h>

#define SCW_HEADER 32u

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The fix-up: payload length (offset 16) and CRC (offset 24) made to match
 * the bytes after the header (its size at offset 12 when plausible). */
static void fix_header(unsigned char *p, size_t size) {
  if (size < SCW_HEADER) return;
  uint32_t hsize = get_u32(p + 12);
  if (hsize < SCW_HEADER || hsize > size) hsize = SCW_HEADER;
  uint64_t plen = size - hsize;
  put_u32(p + 16, (uint32_t)plen);
  put_u32(p + 20, (uint32_t)(plen >> 32));
  uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
  crc = (uint32_t)crc32(crc, p + hsize, (uInt)plen);
  put_u32(p + 24, crc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *p = malloc(size ? size : 1);
  if (!p) return 0;
  memcpy(p, data, size);
  fix_header(p, size);
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    free(p);
    return 0;
  }
  sc_job *job = NULL;
  if (sc_job_read(ctx, "fuzz.scw", p, size, &job) == SC_OK) {
    sc_job_info info;
    sc_job_get_info(job, &info);
    fz_job_roundtrip(ctx, job, 0);
    if (info.world <= 2048) fz_replay(ctx, job, 2 * info.world);
    sc_job_free(job);
  }
  sc_ctx_free(ctx);
  free(p);
  return 0;
}
