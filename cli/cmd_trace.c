/*
 * cmd_trace.c: `stepcast import` (profiler traces to a .scw job) and
 * `stepcast replay` (simulate a .scw job as traced or re-targeted). Reads
 * files in fixed chunks and hands them to the library's feed-style reader;
 * all parsing and simulation live in libstepcast (stepcast/trace.h).
 */
#include "stepcast/trace.h"

#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK_BYTES (1u << 20)

static int code_of(int rc) {
  return sc_exit_code(rc);
}

static int fail(sc_ctx *ctx, int rc) {
  fprintf(stderr, "stepcast: %s\n", ctx ? sc_errmsg(ctx) : sc_strerror(rc));
  return code_of(rc);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void import_usage(FILE *f) {
  fprintf(f, "usage: stepcast import kineto|chakra|cpu FILE... -o JOB.scw\n"
             "  Kineto: PyTorch profiler JSON traces (plain, .gz or .zst), one per rank.\n"
             "  Chakra: Chakra ET protobuf (*.<rank>.et) or PyTorch host execution-trace JSON.\n"
             "  cpu:    a step profiled on a CPU with input shapes (tools/trace_torch.py): every\n"
             "          operator is priced on the target GPU at replay (ex-situ).\n");
}

/* Streams one file into a reader that adds one rank to job. */
static int import_file(sc_ctx *ctx, sc_job *job, sc_trace_format fmt, const char *path, int64_t hint,
                       unsigned char *buf, uint64_t *bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "stepcast: %s: cannot open: %s\n", path, strerror(errno));
    return 2;
  }
  sc_trace_reader *r;
  int rc = sc_trace_open(job, fmt, path, hint, &r);
  if (rc) {
    fclose(f);
    return fail(ctx, rc);
  }
  size_t n;
  while (!rc && (n = fread(buf, 1, CHUNK_BYTES, f)) > 0) rc = sc_trace_feed(r, buf, n);
  if (!rc && ferror(f)) {
    fprintf(stderr, "stepcast: %s: read error\n", path);
    rc = SC_EREAD;
    fclose(f);
    sc_trace_free(r);
    return 2;
  }
  fclose(f);
  if (!rc) rc = sc_trace_finish(r);
  *bytes += sc_trace_bytes(r);
  sc_trace_free(r);
  return rc ? fail(ctx, rc) : 0;
}

int sc_cli_import(int argc, char **argv) {
  if (argc < 1 || (strcmp(argv[0], "kineto") && strcmp(argv[0], "chakra") && strcmp(argv[0], "cpu"))) {
    import_usage(stderr);
    return 2;
  }
  sc_trace_format fmt = !strcmp(argv[0], "chakra") ? SC_TRACE_CHAKRA
                        : !strcmp(argv[0], "cpu")  ? SC_TRACE_CPU
                                                   : SC_TRACE_KINETO;
  const char *out = NULL;
  int nfiles = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-o")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "stepcast: -o needs a value\n");
        return 2;
      }
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "stepcast: unknown option %s\n", argv[i]);
      import_usage(stderr);
      return 2;
    } else nfiles++;
  }
  if (!nfiles || !out) {
    import_usage(stderr);
    return 2;
  }
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return fail(NULL, SC_ENOMEM);
  sc_job *job;
  int rc = sc_job_new(ctx, &job);
  if (rc) {
    sc_ctx_free(ctx);
    return fail(NULL, rc);
  }
  unsigned char *buf = malloc(CHUNK_BYTES);
  int code = buf ? 0 : 1;
  double t0 = now_s();
  uint64_t bytes = 0;
  int64_t hint = 0;
  for (int i = 1; !code && i < argc; i++) {
    if (!strcmp(argv[i], "-o")) {
      i++;
      continue;
    }
    code = import_file(ctx, job, fmt, argv[i], hint++, buf, &bytes);
  }
  free(buf);
  if (!code && (rc = sc_job_finish(job))) code = fail(ctx, rc);
  double secs = now_s() - t0;
  if (!code) {
    FILE *f = fopen(out, "wb");
    if (!f) {
      fprintf(stderr, "stepcast: %s: cannot open: %s\n", out, strerror(errno));
      code = 2;
    } else {
      rc = sc_job_write(job, sc_cli_write_file, f);
      if (fclose(f) || rc) {
        fprintf(stderr, "stepcast: %s: write failed\n", out);
        code = 1;
      }
    }
  }
  if (!code) {
    sc_job_info info;
    sc_job_get_info(job, &info);
    printf("imported %lld rank(s) of a %lld-rank job: %lld ops (%lld GPU ops, %lld collectives, "
           "%lld p2p, %lld host), %lld dependencies, %lld groups\n",
           (long long)info.ranks, (long long)info.world, (long long)info.ops, (long long)info.gpu_ops,
           (long long)info.collectives, (long long)info.p2p, (long long)info.host_ops,
           (long long)info.deps, (long long)info.groups);
    if (info.traced_step_s > 0)
      printf("traced: %lld iteration(s), %.3f ms per iteration\n", (long long)info.iterations,
             info.traced_step_s * 1e3);
    printf("read %.1f MB in %.2f s (%.0f MB/s); wrote %s\n", (double)bytes / 1e6, secs,
           secs > 0 ? (double)bytes / 1e6 / secs : 0.0, out);
    sc_job_write_warnings(job, sc_cli_write_file, stderr);
  }
  sc_job_free(job);
  sc_ctx_free(ctx);
  return code;
}

static void replay_usage(FILE *f) {
  fprintf(f, "usage: stepcast replay JOB.scw [--scale dp=N] [--replica R] [--comm auto|measured|model]\n"
             "                      [--cluster FILE.yaml] [--set section.key=value ...]\n"
             "                      [--ddp] [--bucket-mb MiB] [--first-bucket-mb MiB]\n"
             "                      [--format text|json] [--trace out.json]\n"
             "  An ex-situ job (import cpu) is priced on cluster.gpu in fp32 unless\n"
             "  training.precision is set; --scale dp=N then adds PyTorch DDP (buckets of\n"
             "  --bucket-mb, default 25, the first --first-bucket-mb, default 1); --ddp adds it\n"
             "  at the traced scale too (DDP with one process still copies into buckets).\n");
}

static int read_all(const char *path, unsigned char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "stepcast: %s: cannot open: %s\n", path, strerror(errno));
    return 2;
  }
  size_t cap = 1 << 20, n = 0;
  unsigned char *b = malloc(cap);
  while (b) {
    size_t k = fread(b + n, 1, cap - n, f);
    n += k;
    if (n < cap) break;
    unsigned char *nb = realloc(b, cap * 2);
    if (!nb) {
      free(b);
      b = NULL;
      break;
    }
    b = nb;
    cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (!b || err) {
    free(b);
    fprintf(stderr, "stepcast: %s: cannot read\n", path);
    return b ? 2 : 1;
  }
  *out = b;
  *len = n;
  return 0;
}

int sc_cli_replay(int argc, char **argv) {
  const char *path = NULL, *cluster = NULL, *trace_path = NULL;
  const char *sets[128];
  int nsets = 0;
  sc_format fmt = SC_FORMAT_TEXT;
  sc_replay_opts opts = {0, 1, SC_REPLAY_COMM_AUTO, 0, 0, 0};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    int takes = !strcmp(a, "--scale") || !strcmp(a, "--replica") || !strcmp(a, "--comm") ||
                !strcmp(a, "--cluster") || !strcmp(a, "--set") || !strcmp(a, "--format") ||
                !strcmp(a, "--trace") || !strcmp(a, "--bucket-mb") || !strcmp(a, "--first-bucket-mb");
    if (takes) {
      if (i + 1 >= argc) {
        fprintf(stderr, "stepcast: %s needs a value\n", a);
        return 2;
      }
      const char *v = argv[++i];
      char *end;
      if (!strcmp(a, "--scale")) {
        if (strncmp(v, "dp=", 3) || (opts.scale_dp = strtoll(v + 3, &end, 10)) <= 0 || *end) {
          fprintf(stderr, "stepcast: --scale takes dp=N with N >= 1, not \"%s\"\n", v);
          return 2;
        }
      } else if (!strcmp(a, "--replica")) {
        if ((opts.replica_ranks = strtoll(v, &end, 10)) <= 0 || *end) {
          fprintf(stderr, "stepcast: --replica takes a positive rank count, not \"%s\"\n", v);
          return 2;
        }
      } else if (!strcmp(a, "--comm")) {
        if (!strcmp(v, "auto")) opts.comm = SC_REPLAY_COMM_AUTO;
        else if (!strcmp(v, "measured")) opts.comm = SC_REPLAY_COMM_MEASURED;
        else if (!strcmp(v, "model")) opts.comm = SC_REPLAY_COMM_MODEL;
        else {
          fprintf(stderr, "stepcast: --comm must be auto, measured or model, not \"%s\"\n", v);
          return 2;
        }
      } else if (!strcmp(a, "--bucket-mb") || !strcmp(a, "--first-bucket-mb")) {
        double mb = strtod(v, &end);
        if (!(mb > 0 && mb < 1e6) || *end) {
          fprintf(stderr, "stepcast: %s takes a size in MiB > 0, not \"%s\"\n", a, v);
          return 2;
        }
        if (a[2] == 'b') opts.ddp_bucket_mb = mb;
        else opts.ddp_first_bucket_mb = mb;
      } else if (!strcmp(a, "--cluster")) cluster = v;
      else if (!strcmp(a, "--set")) {
        if (nsets == (int)(sizeof sets / sizeof sets[0])) {
          fprintf(stderr, "stepcast: too many --set options\n");
          return 2;
        }
        sets[nsets++] = v;
      } else if (!strcmp(a, "--format")) {
        if (!strcmp(v, "text")) fmt = SC_FORMAT_TEXT;
        else if (!strcmp(v, "json")) fmt = SC_FORMAT_JSON;
        else {
          fprintf(stderr, "stepcast: --format must be text or json, not \"%s\"\n", v);
          return 2;
        }
      } else trace_path = v;
    } else if (!strcmp(a, "--ddp")) {
      opts.ddp = 1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "stepcast: unknown option %s\n", a);
      replay_usage(stderr);
      return 2;
    } else if (!path) path = a;
    else {
      fprintf(stderr, "stepcast: more than one job file given (%s)\n", a);
      return 2;
    }
  }
  if (!path) {
    replay_usage(stderr);
    return 2;
  }
  unsigned char *img;
  size_t len;
  int code = read_all(path, &img, &len);
  if (code) return code;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    free(img);
    return fail(NULL, SC_ENOMEM);
  }
  sc_job *job = NULL;
  int rc = sc_job_read(ctx, path, img, len, &job);
  free(img);
  if (rc) {
    code = fail(ctx, rc);
    sc_ctx_free(ctx);
    return code;
  }
  /* The cluster: the GPU of the trace unless told otherwise; sizes follow
   * the (re-targeted) world; model and parallel sections are unused. */
  sc_job_info info;
  sc_job_get_info(job, &info);
  int64_t R = opts.replica_ranks, world = opts.scale_dp > 0 ? opts.scale_dp * R : info.world;
  sc_config cfg;
  sc_config_default(&cfg);
  const char *gpu = sc_job_gpu_preset(job);
  char assign[4200];
  if (gpu) {
    snprintf(assign, sizeof assign, "cluster.gpu=%s", gpu);
    rc = sc_config_set(ctx, &cfg, assign);
  }
  /* Ex-situ jobs keep the traced dtype: fp32 unless told (TF32 math where
   * the GPU has it, as PyTorch enables for cuDNN convolutions). */
  if (!rc && info.priced_ops) rc = sc_config_set(ctx, &cfg, "training.precision=fp32");
  if (!rc && cluster) rc = sc_config_load_file(ctx, &cfg, cluster);
  for (int i = 0; !rc && i < nsets; i++) rc = sc_config_set(ctx, &cfg, sets[i]);
  if (!rc) {
    cfg.parallel.tp = cfg.parallel.pp = cfg.parallel.cp = cfg.parallel.vpp = 1;
    cfg.parallel.dp = 0;
    cfg.parallel.sequence_parallel = 0;
    cfg.parallel.schedule = SC_SCHED_1F1B;
    cfg.cluster.num_gpus = world;
    cfg.cluster.nodes = 0;
    /* A job smaller than a node fills part of one (same placement). */
    if (cfg.cluster.gpus_per_node > world) cfg.cluster.gpus_per_node = world;
    cfg.training.micro_batch = 1;
    cfg.training.global_batch = world;
    rc = sc_config_resolve(ctx, &cfg);
  }
  FILE *tf = NULL;
  if (!rc && trace_path && !(tf = fopen(trace_path, "w"))) {
    fprintf(stderr, "stepcast: %s: cannot open: %s\n", trace_path, strerror(errno));
    sc_job_free(job);
    sc_ctx_free(ctx);
    return 2;
  }
  sc_replay_result res;
  if (!rc) rc = sc_replay(ctx, job, &cfg, &opts, tf ? sc_cli_write_file : NULL, tf, &res);
  if (tf && fclose(tf) && !rc) {
    fprintf(stderr, "stepcast: %s: write failed\n", trace_path);
    rc = SC_EWRITE;
  }
  if (rc) code = fail(ctx, rc);
  else rc = sc_replay_format(&res, fmt, sc_cli_write_file, stdout);
  if (!code && rc) code = 1;
  sc_job_free(job);
  sc_ctx_free(ctx);
  return code;
}
