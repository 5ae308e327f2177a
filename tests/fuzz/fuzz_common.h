/*
 * fuzz_common.h: helpers shared by the libFuzzer harnesses in tests/fuzz/
 * (one per parser, `make fuzz`) and by their replay driver (replay_main.c,
 * the ctest regression run of every corpus file): an in-memory sink, a
 * per-process scratch file for the readers that take a path, a "tiny step"
 * simulation that keeps each execution fast, and a bounded replay of a job.
 * Header-only, test code only.
 */
#ifndef SC_FUZZ_COMMON_H
#define SC_FUZZ_COMMON_H

#include "stepcast/stepcast.h"
#include "stepcast/trace.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Growing output buffer; zero-initialise, free(b.p) when done. */
typedef struct fz_buf {
  char *p;
  size_t len, cap;
} fz_buf;

static inline int fz_sink(void *ud, const char *s, size_t n) {
  fz_buf *b = ud;
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

/* A sink that drops its input (traces whose content nothing checks). */
static inline int fz_discard(void *ud, const char *s, size_t n) {
  (void)ud, (void)s, (void)n;
  return 0;
}

/* Writes data to a scratch file of this process ($TMPDIR or /tmp,
 * "stepcast-fuzz-<pid>-<tag><suffix>") and returns its path in out, or 0
 * when it cannot be written (the input is then skipped). */
static inline int fz_scratch(const char *tag, const char *suffix, const void *data, size_t size,
                             char *out, size_t cap) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  snprintf(out, cap, "%s/stepcast-fuzz-%ld-%s%s", dir, (long)getpid(), tag, suffix);
  FILE *f = fopen(out, "wb");
  if (!f) return 0;
  int ok = fwrite(data, 1, size, f) == size;
  ok = fclose(f) == 0 && ok;
  if (!ok) remove(out);
  return ok;
}

/* The pieces of an input split at the first separator line "\n%%\n" (the
 * second is empty, has == 0, without one). */
typedef struct fz_split {
  const char *a, *b;
  size_t na, nb;
  int has;
} fz_split;

static inline fz_split fz_split_at(const uint8_t *data, size_t size) {
  fz_split s = {(const char *)data, NULL, size, 0, 0};
  static const char sep[] = "\n%%\n";
  for (size_t i = 0; i + 4 <= size; i++)
    if (!memcmp(data + i, sep, 4)) {
      s.na = i + 1; /* keep the newline that ends the first part */
      s.b = (const char *)data + i + 4;
      s.nb = size - i - 4;
      s.has = 1;
      break;
    }
  return s;
}

/* Work of one step, roughly ops: simulated ranks x layers per stage x
 * micro-batches. Runs over FZ_TINY_WORK are cut down (fz_tiny_sim) so one
 * execution stays in the milliseconds. */
#define FZ_TINY_WORK 1024

static inline double fz_work(const sc_config *c) {
  /* a what-if variation simulates more than a rank per stage: count all */
  int vary = c->variation.slow_gpus[0] || c->variation.gpu_speed_sigma > 0 ||
             c->variation.slow_links[0] || c->variation.gpu_mix[0];
  double ranks =
      c->simulation.fold && !vary ? (double)c->parallel.pp : (double)c->cluster.num_gpus;
  double per = (double)c->training.micro_batch * (double)c->parallel.dp;
  double m = per > 0 ? (double)c->training.global_batch / per : 1e9;
  double layers = (double)c->model.layers / (double)(c->parallel.pp > 0 ? c->parallel.pp : 1);
  return ranks * layers * m * (double)(c->parallel.vpp > 0 ? c->parallel.vpp : 1);
}

/* A small config the value under test goes on: GPT-3 125M, TP2 PP2 on 8
 * A100-80GB, batch 8. */
static inline void fz_small_config(sc_ctx *ctx, sc_config *cfg) {
  sc_config_default(cfg);
  (void)sc_model_preset(ctx, cfg, "gpt3-125m");
  snprintf(cfg->cluster.gpu, sizeof cfg->cluster.gpu, "a100-80gb");
  cfg->parallel.tp = 2;
  cfg->parallel.pp = 2;
  cfg->parallel.dp = 0;
  cfg->cluster.num_gpus = 8;
  cfg->cluster.nodes = 0;
  cfg->training.global_batch = 8;
}

/* Resolves a copy of cfg and, when it resolves, simulates one step of it;
 * a step over FZ_TINY_WORK is first cut to one layer per model chunk, pp
 * micro-batches per replica and rank folding (the values under test, such
 * as calibration keys, still reach the engine), or skipped when even that
 * is large. trace: also stream a Chrome trace (to nowhere). */
static inline void fz_tiny_sim(sc_ctx *ctx, const sc_config *cfg, int trace) {
  sc_config c = *cfg;
  if (sc_config_resolve(ctx, &c)) return;
  if (fz_work(&c) > FZ_TINY_WORK || c.cluster.num_gpus > 4096) {
    sc_config d = *cfg;
    d.model.layers = c.parallel.pp * c.parallel.vpp;
    d.training.global_batch = c.training.micro_batch * c.parallel.dp * c.parallel.pp;
    d.simulation.fold = 1;
    if (sc_config_resolve(ctx, &d)) return;
    if (fz_work(&d) > FZ_TINY_WORK) return;
    c = d;
  }
  sc_result res;
  int rc = sc_simulate(ctx, &c, trace ? fz_discard : NULL, NULL, &res);
  if (getenv("SC_FUZZ_VERBOSE"))
    fprintf(stderr, "fuzz: simulated %lld ranks, work %.0f: %s\n", (long long)c.cluster.num_gpus,
            fz_work(&c), rc ? sc_errmsg(ctx) : "ok");
  if (rc == SC_OK) {
    fz_buf out = {0};
    (void)sc_result_format(&c, &res, SC_FORMAT_JSON, fz_sink, &out);
    free(out.p);
  }
}

/* Replays a job as traced and, when scale_dp > 0, re-targeted, if it is
 * small enough to keep an execution short. */
static inline void fz_replay(sc_ctx *ctx, const sc_job *job, int64_t scale_dp) {
  sc_job_info info;
  sc_job_get_info(job, &info);
  if (info.world < 1 || info.world > 4096 || info.ops > 100000) return;
  sc_config cfg;
  sc_config_default(&cfg);
  /* as `stepcast replay`: the trace is the workload, an A100 the GPU */
  snprintf(cfg.cluster.gpu, sizeof cfg.cluster.gpu, "a100-80gb");
  cfg.model.layers = cfg.model.hidden = cfg.model.heads = cfg.model.vocab = cfg.model.seq_len = 1;
  cfg.parallel.tp = cfg.parallel.pp = cfg.parallel.cp = cfg.parallel.vpp = 1;
  cfg.parallel.dp = 0;
  cfg.cluster.num_gpus = info.world;
  cfg.cluster.nodes = 0;
  cfg.training.micro_batch = 1;
  cfg.training.global_batch = info.world;
  if (sc_config_resolve(ctx, &cfg)) return;
  sc_replay_opts o = {.scale_dp = scale_dp, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO}; /* dp > world: DDP on grad marks */
  sc_replay_result res;
  fz_buf trace = {0};
  if (sc_replay(ctx, job, &cfg, &o, fz_sink, &trace, &res) == SC_OK) {
    fz_buf out = {0};
    (void)sc_replay_format(&res, SC_FORMAT_JSON, fz_sink, &out);
    free(out.p);
  }
  free(trace.p);
}

/* A job that imported: it must serialise, read back, and replay. */
static inline void fz_job_roundtrip(sc_ctx *ctx, sc_job *job, int64_t scale_dp) {
  fz_buf a = {0};
  if (sc_job_write(job, fz_sink, &a) == SC_OK) {
    sc_job *back = NULL;
    if (sc_job_read(ctx, "fuzz.scw", a.p, a.len, &back) != SC_OK) {
      fprintf(stderr, "fuzz: a written job does not read back: %s\n", sc_errmsg(ctx));
      abort(); /* what we wrote must read back */
    }
    fz_replay(ctx, back, scale_dp);
    sc_job_free(back);
  }
  free(a.p);
}

/* One trace file of format fmt named name, fed in two pieces cut at cut,
 * imported into a fresh job that is then finished, round-tripped through
 * .scw and replayed. Returns the import's code. */
static inline int fz_import(sc_ctx *ctx, sc_trace_format fmt, const char *name, const uint8_t *data,
                            size_t size, size_t cut, int64_t scale_dp) {
  sc_job *job = NULL;
  int rc = sc_job_new(ctx, &job);
  sc_trace_reader *r = NULL;
  if (!rc) rc = sc_trace_open(job, fmt, name, -1, &r);
  if (!rc) rc = sc_trace_feed(r, data, cut);
  if (!rc) rc = sc_trace_feed(r, data + cut, size - cut);
  if (!rc) rc = sc_trace_finish(r);
  sc_trace_free(r);
  if (!rc) rc = sc_job_finish(job);
  if (!rc) {
    fz_buf w = {0};
    (void)sc_job_write_warnings(job, fz_sink, &w);
    free(w.p);
    fz_job_roundtrip(ctx, job, scale_dp);
  }
  sc_job_free(job);
  return rc;
}

/* Where a two-piece feed is cut: a point that moves with the input's size
 * (so token and message boundaries fall anywhere as the fuzzer grows and
 * shrinks inputs) while corpus files stay plain trace files. */
static inline size_t fz_cut(size_t size) {
  return (size_t)(((uint64_t)size * 2654435761u) % ((uint64_t)size + 1));
}

#endif /* SC_FUZZ_COMMON_H */
