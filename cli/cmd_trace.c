/*
 * cmd_trace.c: `stepcast import kineto|chakra|cpu` (profiler traces to a
 * .scw job) and `stepcast replay` (simulate a .scw job as traced or
 * re-targeted). Reads files in fixed chunks and hands them to the library's
 * feed-style reader; all parsing and simulation live in libstepcast
 * (stepcast/trace.h).
 */
#include "stepcast/report.h"
#include "stepcast/trace.h"

#include "commands.h"
#include "outfile.h"
#include "traceopt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK_BYTES (1u << 20)
/* The read buffer is page-aligned: the kernel copies file pages into a
 * buffer 16 bytes off a page boundary (where malloc puts a block this large)
 * three to four times slower than into an aligned one (0.39 against 0.09 s
 * of system time for 1 GB here; docs/PERFORMANCE.md, section 4). */
#define READ_ALIGN 4096

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Streams one file into a reader that adds one rank to job. Traces are
 * read from regular files only (docs/TRACE.md): a FIFO is refused before
 * anything waits on it, a device or a directory before reading. */
static int import_file(sc_ctx *ctx, sc_job *job, sc_trace_format fmt, const char *path,
                       int64_t hint, unsigned char *buf, uint64_t *bytes) {
  FILE *f = sc_cli_open_regular(path);
  if (!f) return sc_exit_code(SC_EREAD);
  sc_trace_reader *r;
  int rc = sc_trace_open(job, fmt, path, hint, &r);
  if (rc) {
    fclose(f);
    return sc_cli_fail(ctx, rc);
  }
  size_t n;
  while (!rc && (n = fread(buf, 1, CHUNK_BYTES, f)) > 0) rc = sc_trace_feed(r, buf, n);
  if (!rc && ferror(f)) {
    int err = errno;
    fclose(f);
    sc_trace_free(r);
    return sc_cli_error(sc_exit_code(SC_EREAD), "%s: cannot read: %s", path, strerror(err));
  }
  fclose(f);
  if (!rc) rc = sc_trace_finish(r);
  *bytes += sc_trace_bytes(r);
  sc_trace_free(r);
  return rc ? sc_cli_fail(ctx, rc) : 0;
}

/* Imports files (one rank each) into a new job of ctx and finishes it.
 * Returns 0 or an exit code (printed); *job is set either way (NULL when it
 * could not be made) and is the caller's to free. */
static int import_job(sc_ctx *ctx, sc_trace_format fmt, const sc_cli_list *files, sc_job **job, uint64_t *bytes) {
  int rc = sc_job_new(ctx, job);
  if (rc) {
    *job = NULL;
    return sc_cli_fail(ctx, rc);
  }
  unsigned char *buf = aligned_alloc(READ_ALIGN, CHUNK_BYTES);
  int code = buf ? 0 : sc_cli_fail(NULL, SC_ENOMEM);
  for (int i = 0; !code && i < files->n; i++)
    code = import_file(ctx, *job, fmt, files->v[i], i, buf, bytes);
  free(buf);
  if (!code && (rc = sc_job_finish(*job))) code = sc_cli_fail(ctx, rc);
  return code;
}

int sc_cli_import(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_trace_format fmt = (sc_trace_format)cmd->tag;
  const char *out = NULL;
  sc_cli_list files = {0};
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0)
    if (!a.opt) code = sc_cli_list_add(&files, a.value);
    else if (sc_cli_is(&a, "-o")) out = a.value;
    else if (sc_cli_is(&a, "--gpu-trace")) fmt = SC_TRACE_CPU_OF_GPU;
    else code = sc_cli_unhandled(&a);
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !files.n) code = sc_cli_usage_error(cmd, "no trace files given");
  if (!code && !r && !out) code = sc_cli_usage_error(cmd, "-o JOB.scw is required");
  if (code || r < 0) {
    sc_cli_list_free(&files);
    return code;
  }
  sc_ctx *ctx;
  sc_job *job = NULL;
  int rc = sc_ctx_new(NULL, NULL, &ctx);
  if (rc) {
    sc_cli_list_free(&files);
    return sc_cli_fail(NULL, rc);
  }
  double t0 = now_s();
  uint64_t bytes = 0;
  code = import_job(ctx, fmt, &files, &job, &bytes);
  double secs = now_s() - t0;
  if (!code) {
    sc_cli_out o;
    if (!(code = sc_cli_out_open(&o, out))) {
      rc = sc_job_write(job, sc_cli_write_file, o.f);
      code = sc_cli_out_close(&o, rc != 0);
      if (rc) code = sc_cli_write_error(out, 1), rc = 0;
    }
  }
  if (!code) {
    sc_job_info info;
    sc_job_get_info(job, &info);
    printf("imported %lld rank(s) of a %lld-rank job: %lld ops (%lld GPU ops, %lld collectives, "
           "%lld p2p, %lld host), %lld dependencies, %lld groups\n",
           (long long)info.ranks, (long long)info.world, (long long)info.ops,
           (long long)info.gpu_ops, (long long)info.collectives, (long long)info.p2p,
           (long long)info.host_ops, (long long)info.deps, (long long)info.groups);
    if (info.traced_step_s > 0)
      printf("traced: %lld iteration(s), %.3f ms per iteration\n", (long long)info.iterations,
             info.traced_step_s * 1e3);
    if (info.modules > 0 && fmt == SC_TRACE_KINETO)
      printf("module annotations: %lld nn.Module(s), %lld ops with their module and pass\n",
             (long long)info.modules, (long long)info.module_ops);
    printf("read %.1f MB in %.2f s (%.0f MB/s); wrote %s\n", (double)bytes / 1e6, secs,
           secs > 0 ? (double)bytes / 1e6 / secs : 0.0, out);
    sc_job_write_warnings(job, sc_cli_write_file, stderr);
  }
  sc_job_free(job);
  sc_ctx_free(ctx);
  sc_cli_list_free(&files);
  return code;
}

/* A .scw job is a regular file (a device such as /dev/zero would never
 * end; a FIFO is not seekable input either). */
static int read_all(const char *path, unsigned char **out, size_t *len) {
  FILE *f = sc_cli_open_regular(path);
  if (!f) return sc_exit_code(SC_EREAD);
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
    return sc_cli_error(sc_exit_code(b ? SC_EREAD : SC_ENOMEM), "%s: cannot read", path);
  }
  *out = b;
  *len = n;
  return 0;
}

/* The config a replay of job (or a kernel fit on it) runs under: the GPU of
 * the trace unless told otherwise (ex-situ jobs in fp32 unless told), then
 * --cluster FILE and --set, sizes for `world` ranks; the model and parallel
 * sections are unused (a one-element model stands in for resolution's
 * checks), the parallel layout's uneven stages handed out (first / last
 * layers, NULL: dropped). Returns an exit code (a missing GPU), 0 with *rc
 * the library's error or 0. */
int sc_cli_job_config(sc_ctx *ctx, const sc_job *job, int64_t world, const char *path, const char *cluster,
                      const sc_cli_list *sets, sc_config *cfg, int64_t *first_layers, int64_t *last_layers,
                      int *rc_out) {
  sc_job_info info;
  sc_job_get_info(job, &info);
  sc_config_default(cfg);
  const char *gpu = sc_job_gpu_preset(job);
  char assign[4200];
  int rc = SC_OK;
  if (gpu) {
    snprintf(assign, sizeof assign, "cluster.gpu=%s", gpu);
    rc = sc_config_set(ctx, cfg, assign);
  }
  /* Ex-situ jobs keep the traced dtype: fp32 unless told (TF32 math where
   * the GPU has it, as PyTorch enables for cuDNN convolutions). */
  if (!rc && info.priced_ops) rc = sc_config_set(ctx, cfg, "training.precision=fp32");
  if (!rc && cluster) rc = sc_config_load_file(ctx, cfg, cluster);
  int precision_given = 0;
  for (int i = 0; !rc && i < sets->n; i++) {
    rc = sc_config_set(ctx, cfg, sets->v[i]);
    precision_given |= !strncmp(sets->v[i], "training.precision=", 19);
  }
  /* A trace whose GEMMs ran on 16-bit operands priced as fp32 (TF32) would
   * be about twice too slow: say so (the dtype, bf16 or fp16, is the user's). */
  if (!rc && info.priced_ops && !precision_given && info.gemm16_share > 0.5)
    fprintf(stderr,
            "stepcast: warning: %s: %.0f %% of the traced GEMM FLOPs are on 16-bit operands, priced here as "
            "fp32 (TF32): give --set training.precision=bf16 (or fp16)\n",
            path, 100.0 * info.gemm16_share);
  if (!rc && !cfg->cluster.gpu[0] && !cfg->field_line[sc_config_field_index("cluster.gpu")]) {
    sc_cli_error(sc_exit_code(SC_EINVAL),
                 "%s: the trace names no GPU stepcast has a preset for: give --set "
                 "cluster.gpu=NAME (stepcast hw list), or cluster.gpu in --cluster FILE",
                 path);
    *rc_out = SC_OK;
    return sc_exit_code(SC_EINVAL);
  }
  if (!rc) {
    /* The trace is the workload: the model keys are never read, and a
     * one-element shape stands in for them in resolution's checks. */
    if (!cfg->model.layers) {
      snprintf(cfg->model.name, sizeof cfg->model.name, "%s", "trace");
      cfg->model.layers = cfg->model.hidden = cfg->model.heads = 1;
      cfg->model.vocab = cfg->model.seq_len = 1;
    }
    /* Uneven pipeline stages of a --scale pp re-target (the trace's layers). */
    if (first_layers) *first_layers = cfg->parallel.pp_first_layers;
    if (last_layers) *last_layers = cfg->parallel.pp_last_layers;
    cfg->parallel.pp_first_layers = cfg->parallel.pp_last_layers = 0;
    cfg->parallel.tp = cfg->parallel.pp = cfg->parallel.cp = cfg->parallel.vpp = 1;
    cfg->parallel.dp = 0;
    cfg->parallel.sequence_parallel = 0;
    cfg->parallel.schedule = SC_SCHED_1F1B;
    cfg->cluster.num_gpus = world;
    cfg->cluster.nodes = 0;
    /* A job smaller than a node fills part of one (same placement). */
    if (cfg->cluster.gpus_per_node > world) cfg->cluster.gpus_per_node = world;
    cfg->training.micro_batch = 1;
    cfg->training.global_batch = world;
    rc = sc_config_resolve(ctx, cfg);
    /* As `run` warns (a calibration fitted for another GPU, a GPU without a
     * step-time fit), and for an ex-situ job its pricing's. */
    if (!rc) sc_cli_config_warnings_ex(cfg, info.priced_ops ? SC_WARN_EXSITU : 0);
  }
  *rc_out = rc;
  return 0;
}

int sc_cli_replay(const sc_cli_cmd *cmd, int argc, char **argv) {
  static const sc_replay_comm comm_modes[] = {SC_REPLAY_COMM_AUTO, SC_REPLAY_COMM_MEASURED,
                                              SC_REPLAY_COMM_MODEL}; /* auto|measured|model */
  const char *path = NULL, *cluster = NULL, *html_path = NULL, *rules_path = NULL;
  sc_cli_trace tr;
  sc_cli_trace_init(&tr);
  sc_cli_list sets = {0};
  sc_format fmt = SC_FORMAT_TEXT;
  sc_replay_opts opts = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    const char *v = a.value, *name = a.opt ? a.opt->name : NULL;
    int64_t k = 0;
    int ok = 1;
    if (!a.opt) {
      if (path) code = sc_cli_usage_error(cmd, "more than one job file given (%s)", v);
      path = v;
    } else if (sc_cli_trace_arg(&tr, &a, &code)) continue;
    else if (sc_cli_is(&a, "--scale")) {
      /* tp=N,pp=M,cp=C,dp=K,fsdp=F,ep=E in any order, each at most once. */
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      int seen[6] = {0, 0, 0, 0, 0, 0};
      static const char *const keys[6] = {"tp", "pp", "cp", "dp", "fsdp", "ep"};
      int64_t *dst[6] = {&opts.scale_tp, &opts.scale_pp, &opts.scale_cp, &opts.scale_dp, &opts.scale_fsdp,
                         &opts.scale_ep};
      char *save = NULL;
      int any = 0;
      for (char *t = strtok_r(buf, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        int which = -1;
        for (int q = 0; q < 6; q++) {
          size_t kl = strlen(keys[q]);
          if (!strncmp(t, keys[q], kl) && t[kl] == '=') which = q;
        }
        if (which < 0 || seen[which]) {
          fprintf(stderr, "stepcast: --scale takes tp=N,pp=M,cp=C,dp=K,fsdp=F,ep=E (each once, N >= 1), not \"%s\"\n", v);
          ok = 0;
          break;
        }
        char what[16];
        snprintf(what, sizeof what, "--scale %s", keys[which]);
        seen[which] = 1;
        any = 1;
        ok = sc_cli_int(what, t + strlen(keys[which]) + 1, 1, SC_CLI_JOB_WORLD_MAX, &k);
        *dst[which] = k;
      }
      if (ok && !any) {
        fprintf(stderr, "stepcast: --scale takes tp=N,pp=M,cp=C,dp=K,fsdp=F,ep=E (each once, N >= 1), not \"%s\"\n", v);
        ok = 0;
      }
      /* fsdp=F alone: F data-parallel replicas sharded over all of them. */
      if (ok && opts.scale_fsdp > 1 && opts.scale_dp <= 0) opts.scale_dp = opts.scale_fsdp;
      /* ep=E alone: E data-parallel replicas, the experts over all of them. */
      if (ok && opts.scale_ep > 1 && opts.scale_dp <= 0) opts.scale_dp = opts.scale_ep;
    } else if (sc_cli_is(&a, "--async-tp")) {
      opts.async_tp = 1;
    } else if (sc_cli_is(&a, "--fsdp-keep")) {
      opts.fsdp_keep = 1;
    } else if (sc_cli_is(&a, "--layers")) {
      ok = sc_cli_int(name, v, 1, 4096, &k);
      opts.layers = k;
    } else if (sc_cli_is(&a, "--micro-batches")) {
      ok = sc_cli_int(name, v, 1, 65536, &k);
      opts.micro_batches = k;
    } else if (sc_cli_is(&a, "--cp-comm")) {
      opts.cp_comm = a.choice; /* p2p|a2a|allgather: sc_cp_comm's order */
    } else if (sc_cli_is(&a, "--schedule")) {
      opts.schedule = (sc_schedule)a.choice; /* 1f1b|gpipe|interleaved|zb-h1|zbv: the enum's order */
    } else if (sc_cli_is(&a, "--vpp")) {
      ok = sc_cli_int(name, v, 2, 64, &k);
      opts.vpp = k;
    } else if (sc_cli_is(&a, "--shard-rules")) {
      rules_path = v;
    } else if (sc_cli_is(&a, "--replica")) {
      ok = sc_cli_int(name, v, 1, SC_CLI_JOB_WORLD_MAX, &k);
      opts.replica_ranks = k;
    } else if (sc_cli_is(&a, "--comm")) opts.comm = comm_modes[a.choice];
    else if (sc_cli_is(&a, "--bucket-mb"))
      ok = sc_cli_real(name, v, 0, 1, SC_CLI_BUCKET_MB_MAX, &opts.ddp_bucket_mb);
    else if (sc_cli_is(&a, "--first-bucket-mb"))
      ok = sc_cli_real(name, v, 0, 1, SC_CLI_BUCKET_MB_MAX, &opts.ddp_first_bucket_mb);
    else if (sc_cli_is(&a, "--cluster")) cluster = v;
    else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, v);
    else if (sc_cli_is(&a, "--format")) fmt = (sc_format)a.choice; /* text|json */
    else if (sc_cli_is(&a, "--html")) html_path = v;
    else if (sc_cli_is(&a, "--ddp")) opts.ddp = 1;
    else if (sc_cli_is(&a, "--sequence-parallel")) opts.sequence_parallel = 1;
    else if (sc_cli_is(&a, "--compile")) opts.compile = 1;
    else code = sc_cli_unhandled(&a);
    if (!ok) code = SC_CLI_EXIT_USAGE;
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !path) code = sc_cli_usage_error(cmd, "no job file given");
  if (!code && !r) code = sc_cli_trace_needs(cmd, &tr, 0);
  int64_t tpp = (opts.scale_tp > 0 ? opts.scale_tp : 1) * (opts.scale_pp > 0 ? opts.scale_pp : 1) *
                (opts.scale_cp > 0 ? opts.scale_cp : 1);
  if (!code && !r && tpp > 1 && opts.scale_dp * tpp > SC_CLI_JOB_WORLD_MAX)
    code = sc_cli_error(SC_CLI_EXIT_USAGE, "--scale: tp x cp x pp x dp = %lld ranks, out of range [1, %d]",
                        (long long)(tpp * (opts.scale_dp > 0 ? opts.scale_dp : 1)), SC_CLI_JOB_WORLD_MAX);
  /* The re-targeted world, N x R ranks, is a job's world too. */
  if (!code && !r && opts.scale_dp > SC_CLI_JOB_WORLD_MAX / opts.replica_ranks)
    code = sc_cli_error(SC_CLI_EXIT_USAGE,
                        "--scale: dp=%lld x --replica %lld = %lld ranks, out of range [1, %d]",
                        (long long)opts.scale_dp, (long long)opts.replica_ranks,
                        (long long)(opts.scale_dp * opts.replica_ranks), SC_CLI_JOB_WORLD_MAX);
  if (code || r < 0) {
    sc_cli_list_free(&sets);
    return code;
  }
  unsigned char *img = NULL;
  size_t len = 0;
  if ((code = read_all(path, &img, &len))) {
    sc_cli_list_free(&sets);
    return code;
  }
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    free(img);
    sc_cli_list_free(&sets);
    return sc_cli_fail(NULL, SC_ENOMEM);
  }
  sc_job *job = NULL;
  unsigned char *rules = NULL;
  int rc = sc_job_read(ctx, path, img, len, &job);
  free(img);
  if (rc) goto done;
  if (rules_path) {
    size_t rlen = 0;
    if ((code = read_all(rules_path, &rules, &rlen))) goto done;
    opts.shard_rules = (const char *)rules;
    opts.shard_rules_len = rlen;
    opts.shard_rules_name = rules_path;
  }
  sc_job_info info;
  sc_job_get_info(job, &info);
  int64_t R = opts.replica_ranks, world = opts.scale_dp > 0 ? opts.scale_dp * R : info.world;
  if (tpp > 1) world = tpp * (opts.scale_dp > 0 ? opts.scale_dp : 1);
  sc_config cfg;
  if ((code = sc_cli_job_config(ctx, job, world, path, cluster, &sets, &cfg, &opts.first_layers,
                                &opts.last_layers, &rc)))
    goto done;
  if (rc) goto done;
  if (tr.path) { /* before anything is written or replayed */
    /* the ranks of the replayed world: [0, world) */
    if ((code = sc_cli_trace_prepare(&tr, world))) goto done;
    double est = 0;
    if ((rc = sc_replay_trace_estimate(ctx, job, &opts, &tr.opts, &est))) goto done;
    if ((code = sc_cli_trace_limit(&tr, est, "",
                                   info.ranks > 1 && !tr.opts.nranks
                                       ? " or pick ranks (--trace-ranks)"
                                       : "")))
      goto done;
  }
  sc_cli_out to = {0}, ho = {0};
  /* --html FILE: opened before the replay (an unwritable place fails at
   * once), renamed into place when complete. */
  if (html_path && (code = sc_cli_out_open(&ho, html_path))) goto done;
  if (tr.path && (code = sc_cli_out_open(&to, tr.path))) {
    sc_cli_out_close(&ho, 1);
    goto done;
  }
  sc_replay_result res;
  rc = sc_replay_traced(ctx, job, &cfg, &opts, &tr.opts, to.f ? sc_cli_write_file : NULL, to.f,
                        &res);
  if (to.f && (code = sc_cli_out_close(&to, rc != 0))) {
    if (rc == SC_EWRITE) rc = 0; /* reported */
    sc_cli_out_close(&ho, 1);
    goto done;
  }
  if (!rc && ho.f) {
    rc = sc_report_html_replay(ctx, job, &cfg, &opts, &res, sc_cli_write_file, ho.f);
    code = sc_cli_out_close(&ho, rc != 0);
    if (rc == SC_EWRITE) code = sc_cli_write_error(html_path, 1), rc = 0;
    if (code) goto done;
  } else if (ho.f) {
    sc_cli_out_close(&ho, 1);
  }
  if (!rc && (rc = sc_replay_format(&res, fmt, sc_cli_write_file, stdout)) == SC_EWRITE) {
    code = sc_cli_write_error("stdout", 1);
    rc = 0;
  }
done:
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  free(rules);
  sc_job_free(job);
  sc_ctx_free(ctx);
  sc_cli_list_free(&sets);
  return code;
}

/* ------------------------------------------------------------ calibrate --kernels */

int sc_cli_calibrate_kernels(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_cli_list files = {0}, sets = {0};
  const char *outpath = NULL, *cluster = NULL;
  int in_files = 0;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (in_files) code = sc_cli_list_add(&files, a.value);
      else code = sc_cli_usage_error(cmd, "unexpected argument %s", a.value);
      continue;
    }
    in_files = 0;
    if (sc_cli_is(&a, "--kernels")) in_files = 1;
    else if (sc_cli_is(&a, "-o")) outpath = a.value;
    else if (sc_cli_is(&a, "--cluster")) cluster = a.value;
    else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, a.value);
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !files.n) code = sc_cli_usage_error(cmd, "--kernels needs trace files");
  if (code || r < 0) {
    sc_cli_list_free(&files);
    sc_cli_list_free(&sets);
    return code;
  }
  sc_ctx *ctx;
  sc_job *job = NULL;
  int rc = sc_ctx_new(NULL, NULL, &ctx);
  if (rc) {
    sc_cli_list_free(&files);
    sc_cli_list_free(&sets);
    return sc_cli_fail(NULL, rc);
  }
  uint64_t bytes = 0;
  code = import_job(ctx, SC_TRACE_CPU_OF_GPU, &files, &job, &bytes);
  sc_config cfg;
  if (!code) {
    sc_job_info info;
    sc_job_get_info(job, &info);
    code = sc_cli_job_config(ctx, job, info.world, files.v[0], cluster, &sets, &cfg, NULL, NULL, &rc);
  }
  sc_kernel_fit fit;
  if (!code && !rc) rc = sc_calibrate_kernels(ctx, job, &cfg, &fit);
  if (!code && !rc) rc = sc_kernel_fit_report(&fit, sc_cli_write_file, outpath ? stdout : stderr);
  if (!code && !rc) {
    char note[4096];
    size_t len = (size_t)snprintf(note, sizeof note, "fitted to the kernels of");
    for (int i = 0; i < files.n && len < sizeof note; i++)
      len += (size_t)snprintf(note + len, sizeof note - len, " %s", files.v[i]);
    sc_cli_out o;
    if (!(code = sc_cli_out_open(&o, outpath))) {
      int wrc = sc_kernel_fit_write_calibration(&fit, note, sc_cli_write_file, o.f);
      code = sc_cli_out_close(&o, wrc != 0);
      if (wrc) code = sc_cli_write_error(outpath ? outpath : "stdout", 1);
    }
  }
  if (rc) code = sc_cli_fail(ctx, rc);
  sc_job_free(job);
  sc_ctx_free(ctx);
  sc_cli_list_free(&files);
  sc_cli_list_free(&sets);
  return code;
}
