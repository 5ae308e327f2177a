/*
 * fuzz_kineto.c: libFuzzer harness for trace import and the .scw reader. The
 * first byte picks the path: Kineto JSON, Chakra (protobuf or host JSON), a
 * .scw image, or an ex-situ CPU trace (`import cpu`); the second where the
 * input is split in two feeds (so token and message boundaries fall
 * anywhere). Whatever imports or reads is also written, read back and
 * replayed; Kineto input also goes through the interference data reader
 * (`calibrate --interference`, the same Chrome-trace reader and feed). Any
 * input must give 0 or a clean error code, never a crash, leak or UB.
 *   make fuzz-kineto  (clang -fsanitize=fuzzer,address,undefined; bounded run)
 */
#include "stepcast/interference.h"
#include "stepcast/trace.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct img {
  char *p;
  size_t len, cap;
} img;

static int to_img(void *ud, const char *s, size_t n) {
  img *b = ud;
  if (b->len + n > b->cap) {
    size_t cap = (b->len + n) * 2;
    char *q = realloc(b->p, cap);
    if (!q) return SC_ENOMEM;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  return 0;
}

static void replay(sc_ctx *ctx, const sc_job *job, int64_t scale_dp) {
  sc_job_info info;
  sc_job_get_info(job, &info);
  if (info.world < 1 || info.world > 4096 || info.ops > 100000) return; /* keep runs short */
  sc_config cfg;
  sc_config_default(&cfg);
  cfg.parallel.tp = cfg.parallel.pp = cfg.parallel.cp = cfg.parallel.vpp = 1;
  cfg.parallel.dp = 0;
  cfg.cluster.num_gpus = info.world;
  cfg.cluster.nodes = 0;
  cfg.training.micro_batch = 1;
  cfg.training.global_batch = info.world;
  if (sc_config_resolve(ctx, &cfg)) return;
  sc_replay_opts o = {scale_dp, 1, SC_REPLAY_COMM_AUTO, 0, 0, 0}; /* dp > world: DDP on grad marks */
  sc_replay_result res;
  img trace = {0};
  (void)sc_replay(ctx, job, &cfg, &o, to_img, &trace, &res);
  free(trace.p);
}

/* The interference data reader on the same bytes, split the same way, and
 * the fit when pairs came out. */
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
  if (size < 2) return 0;
  int mode = data[0] % 4;
  size_t cut = size > 2 ? (size_t)data[1] * (size - 2) / 255 : 0;
  data += 2;
  size -= 2;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 0;
  sc_job *job = NULL;
  int rc;
  if (mode == 2) {
    rc = sc_job_read(ctx, "fuzz.scw", data, size, &job);
  } else {
    rc = sc_job_new(ctx, &job);
    sc_trace_reader *r = NULL;
    sc_trace_format fmt = mode == 3 ? SC_TRACE_CPU : mode ? SC_TRACE_CHAKRA : SC_TRACE_KINETO;
    if (!rc) rc = sc_trace_open(job, fmt, "fuzz.0.et", -1, &r);
    if (!rc) rc = sc_trace_feed(r, data, cut);
    if (!rc) rc = sc_trace_feed(r, data + cut, size - cut);
    if (!rc) rc = sc_trace_finish(r);
    sc_trace_free(r);
    if (!rc) rc = sc_job_finish(job);
    if (mode == 0) interference(ctx, data, size, cut);
  }
  if (!rc) {
    img a = {0};
    if (!sc_job_write(job, to_img, &a)) {
      sc_job *back = NULL;
      if (sc_job_read(ctx, "fuzz.scw", a.p, a.len, &back) == SC_OK) {
        replay(ctx, back, mode == 3 ? 4 : 0);
        sc_job_free(back);
      } else {
        abort(); /* what we wrote must read back */
      }
    }
    free(a.p);
  }
  sc_job_free(job);
  sc_ctx_free(ctx);
  return 0;
}
