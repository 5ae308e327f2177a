/*
 * cmd_sweep.c: `stepcast sweep [CONFIG] --gpus N ...`, the command-line face
 * of the configuration search (stepcast/sweep.h): parses options, loads the
 * base config, runs the sweep (over MPI processes when built with SC_MPI and
 * started by mpirun), draws a progress bar on a terminal, prints the ranking.
 * Only process 0 prints. Exit codes: 0, 1 runtime failure, 2 bad input.
 */
#include "stepcast/sweep.h"

#include "commands.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sweep_usage(FILE *f) {
  fprintf(f,
          "usage: stepcast sweep [CONFIG.yaml] [--gpus N] [--top K] [--out results.csv]\n"
          "                      [--resume] [--format text|json] [--set section.key=value ...]\n"
          "                      [--tp LIST] [--pp LIST] [--vpp LIST] [--mb LIST] [--sp LIST]\n"
          "                      [--recompute LIST] [--dist-opt LIST] [--no-progress]\n"
          "Enumerates parallel layouts of CONFIG on N GPUs (default: the config's),\n"
          "prunes those that do not divide or do not fit memory, simulates the rest and\n"
          "prints the top K (default 10) by throughput. LIST restricts one dimension:\n"
          "comma-separated values (`--tp 4,8`, `--recompute selective,full`, `--sp 1`).\n"
          "--out appends one CSV row per simulated config (crash-safe); --resume\n"
          "continues such a file. Under `mpirun -np K` the work is shared by K processes\n"
          "(builds with SC_MPI) and the output is the same as with one.\n");
}

/* Parses "a,b,c" into dim; names (may be NULL) map words to values. */
static int parse_list(const char *opt, const char *s, sc_sweep_dim *dim,
                      const char *const *names) {
  dim->n = 0;
  const char *p = s;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char word[32];
    if (len == 0 || len >= sizeof word || dim->n == SC_SWEEP_DIM_MAX) {
      fprintf(stderr, "stepcast: %s: bad list \"%s\"\n", opt, s);
      return -1;
    }
    memcpy(word, p, len);
    word[len] = 0;
    int64_t v = -1;
    for (int i = 0; names && names[i]; i++)
      if (!strcmp(word, names[i])) v = i;
    if (v < 0) {
      char *end;
      errno = 0;
      long long x = strtoll(word, &end, 10);
      if (errno || *end || x < 0 || x > INT32_MAX) {
        fprintf(stderr, "stepcast: %s: \"%s\" is not a valid value\n", opt, word);
        return -1;
      }
      v = x;
    }
    dim->v[dim->n++] = v;
    p += len;
    if (*p == ',') p++;
  }
  return dim->n ? 0 : -1;
}

static int parse_count(const char *opt, const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || *end || end == s || x < 0 || x > INT32_MAX) {
    fprintf(stderr, "stepcast: %s needs a non-negative integer, not \"%s\"\n", opt, s);
    return -1;
  }
  *v = x;
  return 0;
}

/* Progress bar on stderr: redrawn at most ten times a second. */
typedef struct bar {
  struct timespec start, last;
  int drawn;
} bar;

static double since(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

static void draw_bar(void *ud, int64_t done, int64_t total) {
  bar *B = ud;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!B->drawn) B->start = now;
  if (B->drawn && done < total && since(&B->last, &now) < 0.1) return;
  B->last = now;
  B->drawn = 1;
  double el = since(&B->start, &now);
  double rate = el > 0 ? (double)done / el : 0;
  double frac = total > 0 ? (double)done / (double)total : 1.0;
  int width = 30, fill = (int)(frac * width);
  char cells[32];
  for (int i = 0; i < width; i++) cells[i] = i < fill ? '#' : '.';
  cells[width] = 0;
  double eta = rate > 0 ? (double)(total - done) / rate : 0;
  fprintf(stderr, "\r[%s] %" PRId64 "/%" PRId64 " %3.0f%%  %.1f configs/s  ETA %d:%02d ", cells,
          done, total, 100.0 * frac, rate, (int)eta / 60, (int)eta % 60);
  fflush(stderr);
}

int sc_cli_sweep(int argc, char **argv) {
  static const char *const recompute_words[] = {"none", "selective", "full", NULL};
  static const char *const bool_words[] = {"off", "on", NULL};
  const char *config = NULL, *sets[256];
  int nsets = 0, top = 10, progress = 1;
  sc_format fmt = SC_FORMAT_TEXT;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--resume")) {
      o.resume = 1;
      continue;
    }
    if (!strcmp(a, "--no-progress")) {
      progress = 0;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      sweep_usage(stdout);
      return 0;
    }
    if (a[0] == '-' && a[1]) {
      if (i + 1 >= argc) {
        fprintf(stderr, "stepcast: %s needs a value\n", a);
        return 2;
      }
      const char *v = argv[++i];
      int64_t n = 0;
      int bad = 0;
      if (!strcmp(a, "--gpus")) bad = parse_count(a, v, &o.gpus) || o.gpus < 1;
      else if (!strcmp(a, "--top")) {
        bad = parse_count(a, v, &n) || n < 1;
        top = (int)n;
      } else if (!strcmp(a, "--stop-after")) bad = parse_count(a, v, &o.stop_after);
      else if (!strcmp(a, "--out")) o.out_path = v;
      else if (!strcmp(a, "--format")) {
        if (!strcmp(v, "text")) fmt = SC_FORMAT_TEXT;
        else if (!strcmp(v, "json")) fmt = SC_FORMAT_JSON;
        else {
          fprintf(stderr, "stepcast: --format must be text or json, not \"%s\"\n", v);
          return 2;
        }
      } else if (!strcmp(a, "--set")) {
        if (nsets == (int)(sizeof sets / sizeof sets[0])) {
          fprintf(stderr, "stepcast: too many --set options\n");
          return 2;
        }
        sets[nsets++] = v;
      } else if (!strcmp(a, "--tp")) bad = parse_list(a, v, &o.tp, NULL);
      else if (!strcmp(a, "--pp")) bad = parse_list(a, v, &o.pp, NULL);
      else if (!strcmp(a, "--vpp")) bad = parse_list(a, v, &o.vpp, NULL);
      else if (!strcmp(a, "--mb")) bad = parse_list(a, v, &o.micro_batch, NULL);
      else if (!strcmp(a, "--sp")) bad = parse_list(a, v, &o.sequence_parallel, bool_words);
      else if (!strcmp(a, "--dist-opt"))
        bad = parse_list(a, v, &o.distributed_optimizer, bool_words);
      else if (!strcmp(a, "--recompute"))
        bad = parse_list(a, v, &o.recompute, recompute_words);
      else {
        fprintf(stderr, "stepcast: unknown option %s\n", a);
        sweep_usage(stderr);
        return 2;
      }
      if (bad) {
        if (!strcmp(a, "--gpus") || !strcmp(a, "--top"))
          fprintf(stderr, "stepcast: %s needs a positive integer\n", a);
        return 2;
      }
    } else if (!config) config = a;
    else {
      fprintf(stderr, "stepcast: more than one config file given (%s)\n", a);
      return 2;
    }
  }
  if (o.resume && !o.out_path) {
    fprintf(stderr, "stepcast: --resume needs --out FILE\n");
    return 2;
  }

  if (sc_sweep_procs_init(NULL, NULL)) {
    fprintf(stderr, "stepcast: cannot start MPI\n");
    return 1;
  }
  int root = sc_sweep_procs_rank() == 0;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    if (root) fprintf(stderr, "stepcast: out of memory\n");
    sc_sweep_procs_finalize();
    return 1;
  }
  sc_config cfg;
  sc_config_default(&cfg);
  int rc = 0;
  if (config) rc = sc_config_load_file(ctx, &cfg, config);
  for (int i = 0; !rc && i < nsets; i++) rc = sc_config_set(ctx, &cfg, sets[i]);
  bar B;
  memset(&B, 0, sizeof B);
  if (!rc && root && progress && isatty(STDERR_FILENO)) {
    o.progress = draw_bar;
    o.progress_ud = &B;
  }
  sc_sweep_result res;
  memset(&res, 0, sizeof res);
  if (!rc) rc = sc_sweep_run(ctx, &cfg, &o, &res);
  if (B.drawn) fprintf(stderr, "\r\033[K");
  int code = 0;
  if (rc) {
    if (root) fprintf(stderr, "stepcast: %s\n", sc_errmsg(ctx));
    code = rc == SC_EINVAL || rc == SC_EUNSUPPORTED ? 2 : 1;
  } else if (res.is_root) {
    if (res.resumed)
      fprintf(stderr, "stepcast: %" PRId64 " of %" PRId64 " results read back from %s\n",
              res.resumed, res.simulated, o.out_path);
    if (sc_sweep_format(&cfg, &res, top, fmt, sc_cli_write_file, stdout)) code = 1;
    if (fflush(stdout)) code = 1;
  }
  sc_sweep_result_free(ctx, &res);
  sc_ctx_free(ctx);
  sc_sweep_procs_finalize();
  return code;
}
