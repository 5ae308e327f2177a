/*
 * cmd_sweep.c: `stepcast sweep [CONFIG] --gpus N ...`, the command-line face
 * of the configuration search (stepcast/sweep.h): parses options, loads the
 * base config, runs the sweep (over MPI processes when built with SC_MPI and
 * started by mpirun), draws a progress bar on a terminal, prints the ranking,
 * and exits 2 with the reasons when nothing could be ranked. Only process 0
 * prints.
 */
#include "stepcast/report.h"
#include "stepcast/sweep.h"
#include "stepcast/megatron.h"

#include "commands.h"
#include "outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Parses "a,b,c" into dim; names (may be NULL) map words to values. */
static int parse_list(const char *opt, const char *s, sc_sweep_dim *dim, const char *const *names) {
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
  if (!dim->n) fprintf(stderr, "stepcast: %s: bad list \"%s\"\n", opt, s);
  return dim->n ? 0 : -1;
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

/* --emit megatron: the launch line of each of the top rows (the base with
 * the row's layout), after the ranking. Returns an exit code. */
static int emit_megatron(sc_ctx *ctx, const sc_config *base, const sc_sweep_result *res, int top,
                         int64_t gpus) {
  int64_t n = res->simulated < top ? res->simulated : top;
  for (int64_t i = 0; i < n; i++) {
    const sc_sweep_row *w = &res->rows[i];
    sc_config c = *base;
    char key[160], a[24][96];
    int k = 0;
    snprintf(a[k++], 96, "cluster.num_gpus=%lld", (long long)gpus);
    snprintf(a[k++], 96, "parallel.tp=%lld", (long long)w->tp);
    snprintf(a[k++], 96, "parallel.pp=%lld", (long long)w->pp);
    snprintf(a[k++], 96, "parallel.cp=%lld", (long long)w->cp);
    snprintf(a[k++], 96, "parallel.dp=%lld", (long long)w->dp);
    snprintf(a[k++], 96, "parallel.vpp=%lld", (long long)w->vpp);
    snprintf(a[k++], 96, "parallel.schedule=%s", sc_enum_name(SC_ENUM_SCHEDULE, (int)w->schedule));
    snprintf(a[k++], 96, "training.micro_batch=%lld", (long long)w->micro_batch);
    snprintf(a[k++], 96, "parallel.sequence_parallel=%d", w->sequence_parallel);
    snprintf(a[k++], 96, "training.recompute=%s", sc_enum_name(SC_ENUM_RECOMPUTE, w->recompute));
    snprintf(a[k++], 96, "parallel.distributed_optimizer=%d", w->distributed_optimizer);
    snprintf(a[k++], 96, "parallel.zero_stage=%lld", (long long)w->zero_stage);
    snprintf(a[k++], 96, "parallel.fsdp_shard=%lld", (long long)w->fsdp_shard);
    snprintf(a[k++], 96, "parallel.pp_first_layers=%lld", (long long)w->pp_first_layers);
    snprintf(a[k++], 96, "parallel.pp_last_layers=%lld", (long long)w->pp_last_layers);
    snprintf(a[k++], 96, "parallel.pp_embedding_in_split=%d", w->pp_counted);
    snprintf(a[k++], 96, "parallel.pp_loss_in_split=%d", w->pp_counted);
    if (base->model.moe_experts > 0) {
      snprintf(a[k++], 96, "parallel.ep=%lld", (long long)w->ep);
      snprintf(a[k++], 96, "parallel.etp=%lld", (long long)w->etp);
      snprintf(a[k++], 96, "parallel.moe_dispatcher=%s",
               sc_enum_name(SC_ENUM_MOE_DISPATCHER, (int)w->moe_dispatcher));
    }
    int rc = 0;
    for (int j = 0; !rc && j < k; j++) rc = sc_config_set(ctx, &c, a[j]);
    if (!rc) rc = sc_config_resolve(ctx, &c);
    printf("\n# rank %lld: %s\n", (long long)(i + 1), sc_sweep_row_key(w, key, sizeof key));
    if (!rc) rc = sc_config_write_megatron(ctx, &c, sc_cli_write_file, stdout);
    if (rc == SC_EUNSUPPORTED) { /* a layout Megatron-LM has no flags for: say so, go on */
      printf("# (no Megatron-LM launch line: %s)\n", sc_errmsg(ctx));
      continue;
    }
    if (rc == SC_EWRITE) return sc_cli_write_error("stdout", 1);
    if (rc) return sc_cli_fail(ctx, rc);
  }
  return fflush(stdout) ? sc_cli_write_error("stdout", 1) : 0;
}

int sc_cli_sweep(const sc_cli_cmd *cmd, int argc, char **argv) {
  static const char *const recompute_words[] = {"none", "selective", "full", NULL};
  static const char *const bool_words[] = {"off", "on", NULL};
  /* Indexes are the values: SC_SWEEP_FSDP_OFF / _FULL (numbers >= 2 are
   * shard sizes), SC_SWEEP_SPLIT_PLAIN / _COUNTED. */
  static const char *const fsdp_words[] = {"off", "full", NULL};
  static const char *const split_words[] = {"plain", "counted", NULL};
  const char *schedule_words[8] = {NULL}, *dispatcher_words[8] = {NULL};
  for (int i = 0; i < sc_enum_count(SC_ENUM_MOE_DISPATCHER) && i < 7; i++)
    dispatcher_words[i] = sc_enum_name(SC_ENUM_MOE_DISPATCHER, i);
  for (int i = 0; i < sc_enum_count(SC_ENUM_SCHEDULE) && i < 7; i++)
    schedule_words[i] = sc_enum_name(SC_ENUM_SCHEDULE, i);
  const char *config = NULL, *html_path = NULL;
  int64_t robust_seeds = 0, robust_top = 5;
  sc_cli_list sets = {0};
  int top = 10, progress = 1, emit = 0, exhaustive = 0;
  sc_format fmt = SC_FORMAT_TEXT;
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    const char *v = a.value;
    int64_t n = 0;
    int bad = 0;
    if (!a.opt) {
      if (config) code = sc_cli_usage_error(cmd, "more than one config file given (%s)", v);
      config = v;
    } else if (sc_cli_is(&a, "--resume")) o.resume = 1;
    else if (sc_cli_is(&a, "--exhaustive")) exhaustive = 1;
    else if (sc_cli_is(&a, "--no-progress")) progress = 0;
    else if (sc_cli_is(&a, "--gpus")) bad = !sc_cli_int(a.opt->name, v, 1, INT32_MAX, &o.gpus);
    else if (sc_cli_is(&a, "--top")) {
      bad = !sc_cli_int(a.opt->name, v, 1, INT32_MAX, &n);
      top = (int)n;
    } else if (sc_cli_is(&a, "--stop-after"))
      bad = !sc_cli_int(a.opt->name, v, 0, INT32_MAX, &o.stop_after);
    else if (sc_cli_is(&a, "--out")) o.out_path = v;
    else if (sc_cli_is(&a, "--html")) html_path = v;
    else if (sc_cli_is(&a, "--robust-seeds"))
      bad = !sc_cli_int(a.opt->name, v, 1, 10000, &robust_seeds);
    else if (sc_cli_is(&a, "--robust-top"))
      bad = !sc_cli_int(a.opt->name, v, 1, 1000, &robust_top);
    else if (sc_cli_is(&a, "--format")) fmt = (sc_format)a.choice; /* text|json */
    else if (sc_cli_is(&a, "--emit")) emit = 1; /* megatron */
    else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, v);
    else if (sc_cli_is(&a, "--tp")) bad = parse_list(a.opt->name, v, &o.tp, NULL);
    else if (sc_cli_is(&a, "--pp")) bad = parse_list(a.opt->name, v, &o.pp, NULL);
    else if (sc_cli_is(&a, "--vpp")) bad = parse_list(a.opt->name, v, &o.vpp, NULL);
    else if (sc_cli_is(&a, "--mb")) bad = parse_list(a.opt->name, v, &o.micro_batch, NULL);
    else if (sc_cli_is(&a, "--sp"))
      bad = parse_list(a.opt->name, v, &o.sequence_parallel, bool_words);
    else if (sc_cli_is(&a, "--dist-opt"))
      bad = parse_list(a.opt->name, v, &o.distributed_optimizer, bool_words);
    else if (sc_cli_is(&a, "--recompute"))
      bad = parse_list(a.opt->name, v, &o.recompute, recompute_words);
    else if (sc_cli_is(&a, "--cp")) bad = parse_list(a.opt->name, v, &o.cp, NULL);
    else if (sc_cli_is(&a, "--schedule"))
      bad = parse_list(a.opt->name, v, &o.schedule, schedule_words);
    else if (sc_cli_is(&a, "--fsdp")) bad = parse_list(a.opt->name, v, &o.fsdp, fsdp_words);
    else if (sc_cli_is(&a, "--pp-split"))
      bad = parse_list(a.opt->name, v, &o.pp_split, split_words);
    else if (sc_cli_is(&a, "--ep")) bad = parse_list(a.opt->name, v, &o.ep, NULL);
    else if (sc_cli_is(&a, "--etp")) bad = parse_list(a.opt->name, v, &o.etp, NULL);
    else if (sc_cli_is(&a, "--dispatcher"))
      bad = parse_list(a.opt->name, v, &o.dispatcher, dispatcher_words);
    else code = sc_cli_unhandled(&a);
    if (bad) code = SC_CLI_EXIT_USAGE;
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && o.resume && !o.out_path)
    code = sc_cli_usage_error(cmd, "--resume needs --out FILE");
  if (code || r < 0) {
    sc_cli_list_free(&sets);
    return code;
  }

  /* Only the rows printed, emitted or re-simulated for robustness must be
   * exact; the HTML report plots every layout, so it sweeps them all. */
  o.top_k = exhaustive || html_path ? 0 : robust_seeds > 0 && robust_top > top ? robust_top : top;

  if (sc_sweep_procs_init(NULL, NULL)) {
    sc_cli_list_free(&sets);
    return sc_cli_error(1, "cannot start MPI");
  }
  int root = sc_sweep_procs_rank() == 0;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    if (root) sc_cli_fail(NULL, SC_ENOMEM);
    sc_cli_list_free(&sets);
    sc_sweep_procs_finalize();
    return sc_exit_code(SC_ENOMEM);
  }
  sc_config cfg;
  int rc = sc_cli_config(ctx, &cfg, config, NULL, NULL, &sets);
  sc_cli_list_free(&sets);
  bar B;
  memset(&B, 0, sizeof B);
  if (!rc && root && progress && isatty(STDERR_FILENO)) {
    o.progress = draw_bar;
    o.progress_ud = &B;
  }
  if (!rc && root) sc_cli_config_warnings(&cfg);
  sc_sweep_result res;
  memset(&res, 0, sizeof res);
  /* --html FILE: opened by process 0 before the sweep (fails at once when
   * it cannot be written), renamed into place when complete. */
  sc_cli_out ho = {0};
  if (!rc && root && html_path && (code = sc_cli_out_open(&ho, html_path))) {
    sc_cli_list_free(&sets);
    sc_ctx_free(ctx);
    sc_sweep_procs_finalize();
    return code;
  }
  if (!rc) rc = sc_sweep_run(ctx, &cfg, &o, &res);
  if (B.drawn) fprintf(stderr, "\r\033[K");
  if (rc) {
    code = root ? sc_cli_fail(ctx, rc) : sc_exit_code(rc);
  } else if (res.is_root) {
    if (res.resumed)
      fprintf(stderr, "stepcast: %" PRId64 " of %" PRId64 " results read back from %s\n",
              res.resumed, res.simulated, o.out_path);
    sc_sweep_robust *rb = NULL;
    int64_t nrb = 0;
    if (robust_seeds > 0 && res.simulated > 0) {
      rb = calloc((size_t)robust_top, sizeof *rb);
      rc = rb ? sc_sweep_robustness(ctx, &cfg, &res, (int)robust_top, (int)robust_seeds, rb, &nrb)
              : SC_ENOMEM;
    }
    if (!rc) rc = sc_sweep_format_ex(&cfg, &res, top, rb, nrb, fmt, sc_cli_write_file, stdout);
    free(rb);
    if (rc == SC_EWRITE || (!rc && fflush(stdout))) code = sc_cli_write_error("stdout", 1);
    else if (rc) code = sc_cli_fail(ctx, rc);
    if (!code && ho.f && res.simulated > 0) {
      rc = sc_report_html_sweep(ctx, &cfg, &res, top, sc_cli_write_file, ho.f);
      code = sc_cli_out_close(&ho, rc != 0);
      if (rc == SC_EWRITE) code = sc_cli_write_error(html_path, 1);
      else if (rc) code = sc_cli_fail(ctx, rc);
    }
    if (!code && emit && fmt == SC_FORMAT_TEXT && res.simulated > 0)
      code = emit_megatron(ctx, &cfg, &res, top, res.gpus);
    if (!code && res.simulated == 0) { /* nothing to rank is the input's fault: say why, exit 2 */
      char why[1024];
      code = sc_cli_error(sc_exit_code(SC_EINVAL), "sweep: no configuration to rank: %s",
                          sc_sweep_why_unranked(&res, why, sizeof why));
    }
  }
  if (ho.f) sc_cli_out_close(&ho, 1); /* not written: the old file stays */
  sc_sweep_result_free(ctx, &res);
  sc_ctx_free(ctx);
  sc_sweep_procs_finalize();
  return code;
}
