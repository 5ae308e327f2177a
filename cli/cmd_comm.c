/*
 * cmd_comm.c: the `comm` subcommand (predicted collective times in the
 * nccl-tests layout, or predicted vs measured against an nccl-tests output)
 * and the nccl-tests half of `calibrate` (fit the collective model, write a
 * calibration YAML). Argument parsing and printing only; the model, the
 * parser and the fit live in src/comm*.c and src/nccltests.c.
 */
#include "stepcast/comm.h"

#include "cmd_interf.h"
#include "commands.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 256

static int exit_code(int rc) {
  return sc_exit_code(rc);
}

static int fail(sc_ctx *ctx, int rc) {
  fprintf(stderr, "stepcast: %s\n", ctx ? sc_errmsg(ctx) : sc_strerror(rc));
  return exit_code(rc);
}

static const char *option_value(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "stepcast: %s needs a value\n", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

/* "8", "64K", "8G", "16GiB", "1MB": bytes, with binary multiples as
 * nccl-tests' -b/-e take them. */
static int parse_size(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0)) return 0;
  double mult = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    mult = 1024.0, end++;
    break;
  case 'M':
    mult = 1024.0 * 1024, end++;
    break;
  case 'G':
    mult = 1024.0 * 1024 * 1024, end++;
    break;
  case 'T':
    mult = 1024.0 * 1024 * 1024 * 1024, end++;
    break;
  default:
    break;
  }
  if (*end == 'i' && mult > 1) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return 0;
  *out = floor(v * mult);
  return 1;
}

static int parse_count(const char *opt, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < 1) {
    fprintf(stderr, "stepcast: %s expects a positive integer, got \"%s\"\n", opt, s);
    return 0;
  }
  *out = (int64_t)v;
  return 1;
}

static int parse_real(const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !(v > 0) || !isfinite(v)) {
    fprintf(stderr, "stepcast: %s expects a positive number, got \"%s\"\n", opt, s);
    return 0;
  }
  *out = v;
  return 1;
}

/* A number in at most `width` characters, nccl-tests style: two decimals
 * while they fit, then one, then none. */
static void fixed(char *buf, size_t cap, int width, double v) {
  for (int prec = 2; prec >= 0; prec--) {
    int n = snprintf(buf, cap, "%*.*f", width, prec, v);
    if (n <= width) return;
  }
  snprintf(buf, cap, "%*.3g", width, v);
}

/* ------------------------------------------------------------ comm */

static void comm_usage(FILE *f) {
  fprintf(f, "usage: stepcast comm --gpu NAME --gpus N [--gpus-per-node N] [--op OP]\n"
             "                     [--nic-gbps GBIT] [--nvlink-gbps GB] [--sharp]\n"
             "                     [--calibration site.yaml] [--min-bytes 8] [--max-bytes 8G]\n"
             "                     [--step-factor 2] [--compare NCCL_TESTS_OUTPUT]\n"
             "                     [--format text|json]\n"
             "Predicts collective times with the \"nccl\" model (docs/COMM.md) in the\n"
             "nccl-tests layout. OP: all_reduce (default), all_gather, reduce_scatter,\n"
             "all_to_all, broadcast, send_recv. --compare prints predicted vs measured for\n"
             "every row of an nccl-tests output (GPU, ranks and placement from its device\n"
             "lines unless given); measured = the smaller of out-of-place and in-place;\n"
             "a run driving G GPUs from one thread (nGpus G) is predicted no faster than\n"
             "G kernel launches. A run whose first size took over twice the time of the\n"
             "next has a warm-up row: shown, not counted in the MAPE.\n");
}

typedef struct comm_opts {
  sc_comm_cluster cl;
  const char *gpu, *calibration, *compare;
  int op, json;
  int64_t gpus, per_node;
  double min_bytes, max_bytes, factor;
} comm_opts;

static int comm_args(int argc, char **argv, comm_opts *o) {
  memset(o, 0, sizeof *o);
  o->op = -1;
  o->min_bytes = 8;
  o->max_bytes = 8.0 * 1024 * 1024 * 1024;
  o->factor = 2;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      comm_usage(stdout);
      return -1;
    }
    if (!strcmp(a, "--sharp")) {
      o->cl.sharp = 1;
      continue;
    }
    if (a[0] != '-') {
      fprintf(stderr, "stepcast: comm: unexpected argument %s\n", a);
      comm_usage(stderr);
      return 2;
    }
    if (!(v = option_value(argc, argv, &i))) return 2;
    if (!strcmp(a, "--gpu"))
      o->gpu = v;
    else if (!strcmp(a, "--gpus")) {
      if (!parse_count(a, v, &o->gpus)) return 2;
    } else if (!strcmp(a, "--gpus-per-node")) {
      if (!parse_count(a, v, &o->per_node)) return 2;
    } else if (!strcmp(a, "--nic-gbps")) {
      if (!parse_real(a, v, &o->cl.nic_gbps)) return 2;
    } else if (!strcmp(a, "--nvlink-gbps")) {
      if (!parse_real(a, v, &o->cl.nvlink_gbps)) return 2;
    } else if (!strcmp(a, "--step-factor")) {
      if (!parse_real(a, v, &o->factor) || o->factor <= 1) {
        fprintf(stderr, "stepcast: --step-factor must be above 1\n");
        return 2;
      }
    } else if (!strcmp(a, "--op")) {
      if ((o->op = sc_comm_op_find(v)) < 0) {
        fprintf(stderr, "stepcast: unknown collective \"%s\"\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--min-bytes") || !strcmp(a, "--max-bytes")) {
      double *dst = a[2] == 'm' && a[3] == 'i' ? &o->min_bytes : &o->max_bytes;
      if (!parse_size(v, dst)) {
        fprintf(stderr, "stepcast: %s expects a size such as 8, 64K or 8G, got \"%s\"\n", a, v);
        return 2;
      }
    } else if (!strcmp(a, "--calibration"))
      o->calibration = v;
    else if (!strcmp(a, "--compare"))
      o->compare = v;
    else if (!strcmp(a, "--format")) {
      if (!strcmp(v, "json"))
        o->json = 1;
      else if (strcmp(v, "text")) {
        fprintf(stderr, "stepcast: --format must be text or json, not \"%s\"\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "stepcast: comm: unknown option %s\n", a);
      comm_usage(stderr);
      return 2;
    }
  }
  if (o->min_bytes > o->max_bytes) {
    fprintf(stderr, "stepcast: --min-bytes is above --max-bytes\n");
    return 2;
  }
  return 0;
}

static int make_model(sc_ctx *ctx, comm_opts *o, sc_comm **m) {
  snprintf(o->cl.gpu, sizeof o->cl.gpu, "%s", o->gpu);
  o->cl.gpus_per_node = o->per_node;
  int rc = sc_comm_new(ctx, &o->cl, m);
  if (!rc && o->calibration) rc = sc_comm_load_calibration(*m, o->calibration);
  return rc;
}

static int print_table(sc_comm *m, const comm_opts *o) {
  int op = o->op < 0 ? SC_COMM_ALL_REDUCE : o->op;
  int64_t per_node = o->per_node > 0 ? o->per_node : 0;
  sc_comm_estimate e;
  /* placement as the model resolves it, for the header */
  int64_t gpn = per_node ? per_node : o->cl.gpus_per_node;
  if (!gpn) {
    const sc_hw *hw = sc_hw_find(o->cl.gpu);
    gpn = hw ? hw->gpus_per_node : 8;
  }
  if (gpn > o->gpus) gpn = o->gpus;
  int64_t nodes = (o->gpus + gpn - 1) / gpn;
  const char *redop = op == SC_COMM_ALL_REDUCE || op == SC_COMM_REDUCE_SCATTER ? "sum" : "none";
  if (o->json)
    printf("{\"op\":\"%s\",\"gpu\":\"%s\",\"gpus\":%lld,\"gpus_per_node\":%lld,\"nodes\":%lld,"
           "\"rows\":[",
           sc_comm_op_name(op), o->cl.gpu, (long long)o->gpus, (long long)gpn, (long long)nodes);
  else
    printf("# stepcast comm: predicted %s on %lld x %s (%lld node%s, %lld per node), "
           "model nccl v4\n#\n"
           "# %10s  %12s  %8s  %6s  %7s  %6s  %6s  %s\n"
           "# %10s  %12s  %8s  %6s  %7s  %6s  %6s\n",
           sc_comm_op_name(op), (long long)o->gpus, o->cl.gpu, (long long)nodes,
           nodes == 1 ? "" : "s", (long long)gpn, "size", "count", "type", "redop", "time", "algbw",
           "busbw", "algorithm", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)");
  int first = 1;
  for (double b = o->min_bytes; b <= o->max_bytes;
       b = floor(b * o->factor) > b ? floor(b * o->factor) : b + 1) {
    int rc = sc_comm_predict(m, op, b, o->gpus, per_node, &e);
    if (rc) return rc;
    if (o->json) {
      printf("%s{\"bytes\":%.0f,\"time_us\":%.6g,\"algbw_gbps\":%.6g,\"busbw_gbps\":%.6g,"
             "\"algo\":\"%s\",\"proto\":\"%s\"}",
             first ? "" : ",", b, e.time_us, e.algbw_gbps, e.busbw_gbps, sc_comm_algo_name(e.algo),
             sc_comm_proto_name(e.proto));
    } else {
      char t[32], ab[32], bb[32];
      fixed(t, sizeof t, 7, e.time_us);
      fixed(ab, sizeof ab, 6, e.algbw_gbps);
      fixed(bb, sizeof bb, 6, e.busbw_gbps);
      printf("%12.0f  %12.0f  %8s  %6s  %7s  %6s  %6s  %s/%s\n", b, floor(b / 4), "float", redop, t,
             ab, bb, sc_comm_algo_name(e.algo), sc_comm_proto_name(e.proto));
    }
    first = 0;
  }
  if (o->json) printf("]}\n");
  return SC_OK;
}

/* How many rows are warm-up rows, and the mean absolute error over every
 * row, warm-up rows included (sc_comm_compare's MAPE leaves them out). */
static size_t warmup_rows(const sc_comm_compare_row *rows, size_t n, double *mape_all) {
  double sum = 0;
  size_t warm = 0;
  for (size_t i = 0; i < n; i++) sum += fabs(rows[i].error_pct), warm += rows[i].warmup != 0;
  if (mape_all) *mape_all = n ? sum / (double)n : 0;
  return warm;
}

static int print_compare(sc_comm *m, const comm_opts *o, const sc_nccltests *t) {
  sc_comm_compare_row *rows = calloc(t->nrows ? t->nrows : 1, sizeof *rows);
  if (!rows) return SC_ENOMEM;
  size_t n;
  double mape;
  int rc = sc_comm_compare(m, t, o->op, o->gpus, o->per_node, rows, &n, &mape);
  if (rc) {
    free(rows);
    return rc;
  }
  double all;
  size_t warm = warmup_rows(rows, n, &all);
  if (o->json) {
    printf("{\"rows\":[");
    for (size_t i = 0; i < n; i++)
      printf("%s{\"bytes\":%.0f,\"measured_us\":%.6g,\"predicted_us\":%.6g,\"error_pct\":%.4g%s}",
             i ? "," : "", rows[i].bytes, rows[i].measured_us, rows[i].predicted_us,
             rows[i].error_pct, rows[i].warmup ? ",\"warmup\":true" : "");
    printf("],\"mape_pct\":%.4g,\"mape_all_pct\":%.4g}\n", mape, all);
  } else {
    int op = o->op >= 0 ? o->op : t->op;
    int64_t ranks = o->gpus > 0 ? o->gpus : t->ranks > 0 ? t->ranks : sc_nccltests_infer_ranks(t);
    printf("# stepcast comm: %s vs the \"nccl\" v4 model: %s on %lld x %s\n"
           "# measured = the smaller of out-of-place and in-place time\n#\n"
           "# %10s  %10s  %10s  %8s\n# %10s  %10s  %10s  %8s\n",
           t->origin, sc_comm_op_name(op), (long long)ranks, o->cl.gpu, "size", "measured",
           "predicted", "error", "(B)", "(us)", "(us)", "(%)");
    for (size_t i = 0; i < n; i++) {
      char me[32], pr[32];
      fixed(me, sizeof me, 10, rows[i].measured_us);
      fixed(pr, sizeof pr, 10, rows[i].predicted_us);
      printf("%12.0f  %10s  %10s  %+8.1f%s\n", rows[i].bytes, me, pr, rows[i].error_pct,
             rows[i].warmup ? "  warm-up, not counted" : "");
    }
    if (warm)
      printf("# MAPE %.1f%% over %zu rows (%.1f%% with the warm-up row: the run's first size took\n"
             "# over twice the time of the next)\n",
             mape, n - warm, all);
    else
      printf("# MAPE %.1f%% over %zu rows\n", mape, n);
  }
  free(rows);
  return SC_OK;
}

int sc_cli_comm(int argc, char **argv) {
  comm_opts o;
  int rc = comm_args(argc, argv, &o);
  if (rc) return rc < 0 ? 0 : rc;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return fail(NULL, SC_ENOMEM);
  sc_nccltests t;
  memset(&t, 0, sizeof t);
  sc_comm *m = NULL;
  int code = 0;
  if (o.compare) {
    if ((rc = sc_nccltests_load(ctx, o.compare, &t))) goto done;
    if (!o.gpu) {
      const sc_hw *hw = sc_comm_guess_hw(t.gpu);
      if (!hw) {
        fprintf(stderr,
                "stepcast: %s: cannot tell the GPU from its device names (\"%s\"); give "
                "--gpu\n",
                t.origin, t.gpu);
        code = 2;
        goto done;
      }
      o.gpu = hw->name;
    }
  } else if (!o.gpu || o.gpus < 1) {
    fprintf(stderr, "stepcast: comm needs --gpu and --gpus (or --compare FILE)\n");
    comm_usage(stderr);
    sc_ctx_free(ctx);
    return 2;
  }
  if ((rc = make_model(ctx, &o, &m))) goto done;
  rc = o.compare ? print_compare(m, &o, &t) : print_table(m, &o);
done:
  if (rc) code = fail(ctx, rc);
  sc_comm_free(m);
  sc_nccltests_free(ctx, &t);
  sc_ctx_free(ctx);
  return code;
}

/* ------------------------------------------------------------ calibrate */

static void calibrate_usage(FILE *f) {
  fprintf(f, "usage: stepcast calibrate --nccl-tests FILE... [-o site.yaml] [--gpu NAME]\n"
             "                          [--gpus-per-node N] [--nic-gbps GBIT] [--nvlink-gbps GB]\n"
             "                          [--sharp] [--op OP]\n"
             "       stepcast calibrate --cases CASES.csv ...   (step-time parameters)\n"
             "       stepcast calibrate --interference TRACES... (interference model)\n"
             "Fits the collective model's parameters (docs/COMM.md) to nccl-tests outputs\n"
             "(any *_perf binary; ranks and nodes from their device lines) and writes a\n"
             "`calibration:` mapping. The GPU is guessed from the device names unless given;\n"
             "--op names the collective of files whose output and name do not.\n");
}

int sc_cli_calibrate(int argc, char **argv) {
  int nccl = 0;
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--interference")) return sc_cli_calibrate_interference(argc, argv);
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--cases")) {
      for (int j = 0; j < argc; j++)
        if (!strcmp(argv[j], "--nccl-tests")) {
          fprintf(stderr, "stepcast: calibrate: give --cases or --nccl-tests, not both (yet)\n");
          return 2;
        }
      return sc_cli_calibrate_cases(argc, argv);
    }
    if (!strcmp(argv[i], "--nccl-tests")) nccl = 1;
  }
  const char *files[MAX_FILES];
  int nfiles = 0;
  const char *outpath = NULL, *gpu = NULL;
  sc_comm_cluster cl;
  memset(&cl, 0, sizeof cl);
  int op = -1, in_files = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      calibrate_usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--nccl-tests")) {
      in_files = 1;
      continue;
    }
    if (!strcmp(a, "--sharp")) {
      cl.sharp = 1;
      continue;
    }
    if (a[0] != '-' || !a[1]) {
      if (!in_files) {
        fprintf(stderr, "stepcast: calibrate: unexpected argument %s\n", a);
        calibrate_usage(stderr);
        return 2;
      }
      if (nfiles == MAX_FILES) {
        fprintf(stderr, "stepcast: calibrate: more than %d files\n", MAX_FILES);
        return 2;
      }
      files[nfiles++] = a;
      continue;
    }
    in_files = 0;
    if (!(v = option_value(argc, argv, &i))) return 2;
    if (!strcmp(a, "-o"))
      outpath = v;
    else if (!strcmp(a, "--gpu"))
      gpu = v;
    else if (!strcmp(a, "--gpus-per-node")) {
      if (!parse_count(a, v, &cl.gpus_per_node)) return 2;
    } else if (!strcmp(a, "--nic-gbps")) {
      if (!parse_real(a, v, &cl.nic_gbps)) return 2;
    } else if (!strcmp(a, "--nvlink-gbps")) {
      if (!parse_real(a, v, &cl.nvlink_gbps)) return 2;
    } else if (!strcmp(a, "--op")) {
      if ((op = sc_comm_op_find(v)) < 0) {
        fprintf(stderr, "stepcast: unknown collective \"%s\"\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "stepcast: calibrate: unknown option %s\n", a);
      calibrate_usage(stderr);
      return 2;
    }
  }
  if (!nccl || !nfiles) {
    fprintf(stderr, "stepcast: calibrate needs --nccl-tests FILE... (or --cases)\n");
    calibrate_usage(stderr);
    return 2;
  }

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return fail(NULL, SC_ENOMEM);
  sc_nccltests *t = calloc((size_t)nfiles, sizeof *t);
  sc_comm *m = NULL;
  FILE *out = NULL;
  int rc = t ? SC_OK : SC_ENOMEM;
  int loaded = 0, code = 0;
  for (; !rc && loaded < nfiles; loaded++) {
    if ((rc = sc_nccltests_load(ctx, files[loaded], &t[loaded]))) break;
    if (t[loaded].op < 0) t[loaded].op = op;
    if (!gpu) {
      const sc_hw *hw = sc_comm_guess_hw(t[loaded].gpu);
      if (!hw) {
        fprintf(stderr,
                "stepcast: %s: cannot tell the GPU from its device names (\"%s\"); give "
                "--gpu\n",
                files[loaded], t[loaded].gpu);
        code = 2;
        loaded++;
        break;
      }
      gpu = hw->name;
    }
  }
  if (!rc && !code) {
    snprintf(cl.gpu, sizeof cl.gpu, "%s", gpu);
    rc = sc_comm_new(ctx, &cl, &m);
  }
  double mape = 0;
  if (!rc && !code) rc = sc_comm_calibrate(m, t, (size_t)nfiles, &mape);
  if (!rc && !code) {
    /* provenance, and the fit's error per file */
    char note[4096];
    size_t len = (size_t)snprintf(note, sizeof note,
                                  "fitted by `stepcast calibrate --nccl-tests` for %s on:", cl.gpu);
    FILE *report = outpath ? stdout : stderr;
    fprintf(report, "# %-44s %-14s %6s %6s %8s\n", "file", "op", "ranks", "nodes", "MAPE %");
    for (int i = 0; i < nfiles && !rc; i++) {
      sc_comm_compare_row *rows = calloc(t[i].nrows ? t[i].nrows : 1, sizeof *rows);
      size_t n = 0;
      double fm = 0;
      if (!rows) {
        rc = SC_ENOMEM;
        break;
      }
      int64_t ranks = t[i].ranks > 0 ? t[i].ranks : sc_nccltests_infer_ranks(&t[i]);
      if (ranks > 1) rc = sc_comm_compare(m, &t[i], -1, 0, 0, rows, &n, &fm);
      size_t warm = warmup_rows(rows, n, NULL);
      free(rows);
      char nodes[24] = "-"; /* no device lines: the placement came from --gpus-per-node */
      if (t[i].nodes > 0) snprintf(nodes, sizeof nodes, "%lld", (long long)t[i].nodes);
      fprintf(report, "  %-44s %-14s %6lld %6s %8.1f%s\n", files[i], sc_comm_op_name(t[i].op),
              (long long)ranks, nodes, fm, warm ? "  (warm-up row left out)" : "");
      if (len < sizeof note)
        len += (size_t)snprintf(note + len, sizeof note - len, "\n  %s (%s, %lld ranks)", files[i],
                                sc_comm_op_name(t[i].op), (long long)ranks);
    }
    fprintf(report, "# in-sample MAPE %.1f%%\n", mape);
    if (len < sizeof note) snprintf(note + len, sizeof note - len, "\nin-sample MAPE %.1f%%", mape);
    if (!rc) {
      out = outpath ? fopen(outpath, "w") : stdout;
      if (!out) {
        fprintf(stderr, "stepcast: %s: cannot open: %s\n", outpath, strerror(errno));
        code = 2;
      } else {
        rc = sc_comm_write_calibration(m, note, sc_cli_write_file, out);
        if (outpath && fclose(out) && !rc) {
          fprintf(stderr, "stepcast: %s: write failed\n", outpath);
          code = 1;
        }
      }
    }
  }
  if (rc) code = fail(ctx, rc);
  for (int i = 0; t && i < loaded; i++) sc_nccltests_free(ctx, &t[i]);
  free(t);
  sc_comm_free(m);
  sc_ctx_free(ctx);
  return code;
}
