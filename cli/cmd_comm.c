/*
 * cmd_comm.c: `stepcast comm`: predicted collective times in the nccl-tests
 * layout, or predicted vs measured against an nccl-tests output (--compare).
 * Argument parsing and printing only; the model and the nccl-tests parser
 * live in src/cost/comm_nccl.c, src/analysis/comm.c, src/input/nccltests.c.
 */
#include "stepcast/comm.h"

#include "commands.h"

/* Most rows a predicted table prints (--step-factor). */
#define MAX_TABLE_ROWS 100000

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct comm_opts {
  sc_comm_cluster cl;
  const char *gpu, *calibration, *compare;
  int op, json;
  int64_t gpus, per_node;
  double min_bytes, max_bytes, factor;
} comm_opts;

/* Reads comm's arguments into *o; an exit code to stop with, or -1. */
static int comm_args(const sc_cli_cmd *cmd, int argc, char **argv, comm_opts *o) {
  memset(o, 0, sizeof *o);
  o->op = -1;
  o->min_bytes = 8;
  o->max_bytes = 8.0 * 1024 * 1024 * 1024;
  o->factor = 2;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r;
  while ((r = sc_cli_next(&a)) > 0) {
    const char *v = a.value, *name = a.opt ? a.opt->name : NULL;
    int ok = 1;
    if (!a.opt) return sc_cli_usage_error(cmd, "unexpected argument %s", v);
    if (sc_cli_is(&a, "--sharp")) o->cl.sharp = 1;
    else if (sc_cli_is(&a, "--leaf-gpus"))
      ok = sc_cli_int(name, v, 1, SC_CLI_GPUS_MAX, &o->cl.leaf_gpus);
    else if (sc_cli_is(&a, "--spine-oversubscription"))
      ok = sc_cli_real(name, v, 1, 0, 64, &o->cl.spine_oversubscription);
    else if (sc_cli_is(&a, "--leaf-latency-us"))
      ok = sc_cli_real(name, v, 0, 0, 100, &o->cl.leaf_latency_us);
    else if (sc_cli_is(&a, "--spine-latency-us"))
      ok = sc_cli_real(name, v, 0, 0, 100, &o->cl.spine_latency_us);
    else if (sc_cli_is(&a, "--gpu")) o->gpu = v;
    else if (sc_cli_is(&a, "--gpus")) ok = sc_cli_int(name, v, 1, SC_CLI_GPUS_MAX, &o->gpus);
    else if (sc_cli_is(&a, "--gpus-per-node"))
      ok = sc_cli_int(name, v, 1, SC_CLI_GPUS_PER_NODE_MAX, &o->per_node);
    else if (sc_cli_is(&a, "--nic-gbps"))
      ok = sc_cli_real(name, v, SC_CLI_LINK_GBPS_MIN, 0, SC_CLI_LINK_GBPS_MAX, &o->cl.nic_gbps);
    else if (sc_cli_is(&a, "--nvlink-gbps"))
      ok = sc_cli_real(name, v, SC_CLI_LINK_GBPS_MIN, 0, SC_CLI_LINK_GBPS_MAX, &o->cl.nvlink_gbps);
    else if (sc_cli_is(&a, "--step-factor"))
      ok = sc_cli_real(name, v, 1, 1, SC_CLI_STEP_FACTOR_MAX, &o->factor);
    else if (sc_cli_is(&a, "--min-bytes"))
      ok = sc_cli_size(name, v, 0, SC_CLI_BYTES_MAX, &o->min_bytes);
    else if (sc_cli_is(&a, "--max-bytes"))
      ok = sc_cli_size(name, v, 0, SC_CLI_BYTES_MAX, &o->max_bytes);
    else if (sc_cli_is(&a, "--op")) {
      if ((o->op = sc_comm_op_find(v)) < 0)
        return sc_cli_error(SC_CLI_EXIT_USAGE, "unknown collective \"%s\"", v);
    } else if (sc_cli_is(&a, "--calibration")) o->calibration = v;
    else if (sc_cli_is(&a, "--compare")) o->compare = v;
    else if (sc_cli_is(&a, "--format")) o->json = a.choice == 1; /* text|json */
    else return sc_cli_unhandled(&a);
    if (!ok) return SC_CLI_EXIT_USAGE;
  }
  if (r < 0) return a.exit;
  if (o->min_bytes > o->max_bytes)
    return sc_cli_error(SC_CLI_EXIT_USAGE, "--min-bytes is above --max-bytes");
  return -1;
}

static int make_model(sc_ctx *ctx, comm_opts *o, sc_comm **m) {
  snprintf(o->cl.gpu, sizeof o->cl.gpu, "%s", o->gpu);
  o->cl.gpus_per_node = o->per_node;
  int rc = sc_comm_new(ctx, &o->cl, m);
  if (!rc && o->calibration) rc = sc_comm_load_calibration(*m, o->calibration);
  return rc;
}

/* Sizes of a predicted table (nccl-tests steps the same way, at least one
 * byte more each time), counted up to MAX_TABLE_ROWS + 1: a factor a hair
 * above 1 must not run for hours. */
static long table_rows(const comm_opts *o) {
  long rows = 0;
  for (double b = o->min_bytes; b <= o->max_bytes && rows <= MAX_TABLE_ROWS;
       b = floor(b * o->factor) > b ? floor(b * o->factor) : b + 1)
    rows++;
  return rows;
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
  /* the one-time first-call setup does not depend on the size */
  int rc0 = sc_comm_predict(m, op, o->min_bytes, o->gpus, per_node, &e);
  if (rc0) return rc0;
  double setup_us = e.setup_us;
  if (o->json)
    printf("{\"op\":\"%s\",\"gpu\":\"%s\",\"gpus\":%lld,\"gpus_per_node\":%lld,\"nodes\":%lld,"
           "\"first_call_setup_us\":%.6g,\"rows\":[",
           sc_comm_op_name(op), o->cl.gpu, (long long)o->gpus, (long long)gpn, (long long)nodes,
           setup_us);
  else
    printf("# stepcast comm: predicted %s on %lld x %s (%lld node%s, %lld per node), "
           "model nccl v5\n"
           "# first call: + %.1f us once (setup; not in the times below, not paid by training)\n#\n"
           "# %10s  %12s  %8s  %6s  %7s  %6s  %6s  %6s  %s\n"
           "# %10s  %12s  %8s  %6s  %7s  %6s  %6s  %6s\n",
           sc_comm_op_name(op), (long long)o->gpus, o->cl.gpu, (long long)nodes,
           nodes == 1 ? "" : "s", (long long)gpn, setup_us, "size", "count", "type", "redop",
           "time", "algbw", "busbw", "reduce", "algorithm", "(B)", "(elements)", "", "", "(us)",
           "(GB/s)", "(GB/s)", "(us)");
  int first = 1;
  for (double b = o->min_bytes; b <= o->max_bytes;
       b = floor(b * o->factor) > b ? floor(b * o->factor) : b + 1) {
    int rc = sc_comm_predict(m, op, b, o->gpus, per_node, &e);
    if (rc) return rc;
    if (o->json) {
      printf("%s{\"bytes\":%.0f,\"time_us\":%.6g,\"algbw_gbps\":%.6g,\"busbw_gbps\":%.6g,"
             "\"reduce_us\":%.6g,\"algo\":\"%s\",\"proto\":\"%s\"}",
             first ? "" : ",", b, e.time_us, e.algbw_gbps, e.busbw_gbps, e.reduce_us,
             sc_comm_algo_name(e.algo), sc_comm_proto_name(e.proto));
    } else {
      char t[32], ab[32], bb[32], rd[32];
      fixed(t, sizeof t, 7, e.time_us);
      fixed(ab, sizeof ab, 6, e.algbw_gbps);
      fixed(bb, sizeof bb, 6, e.busbw_gbps);
      fixed(rd, sizeof rd, 6, e.reduce_us);
      printf("%12.0f  %12.0f  %8s  %6s  %7s  %6s  %6s  %6s  %s/%s\n", b, floor(b / 4), "float",
             redop, t, ab, bb, rd, sc_comm_algo_name(e.algo), sc_comm_proto_name(e.proto));
    }
    first = 0;
  }
  if (o->json) printf("]}\n");
  return SC_OK;
}

size_t sc_cli_warmup_rows(const sc_comm_compare_row *rows, size_t n, double *mape_all) {
  double sum = 0;
  size_t warm = 0;
  for (size_t i = 0; i < n; i++) sum += fabs(rows[i].error_pct), warm += rows[i].warmup != 0;
  if (mape_all) *mape_all = n ? sum / (double)n : 0;
  return warm;
}

const sc_hw *sc_cli_guess_gpu(const char *file, const char *devices) {
  const sc_hw *hw = sc_hw_match(devices);
  if (!hw)
    sc_cli_error(sc_exit_code(SC_EINVAL),
                 "%s: cannot tell the GPU from its device names (\"%s\"); give --gpu", file,
                 devices);
  return hw;
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
  size_t warm = sc_cli_warmup_rows(rows, n, &all);
  if (o->json) {
    printf("{\"rows\":[");
    for (size_t i = 0; i < n; i++)
    {
      printf("%s{\"bytes\":%.0f,\"measured_us\":%.6g,\"predicted_us\":%.6g,\"error_pct\":%.4g%s",
             i ? "," : "", rows[i].bytes, rows[i].measured_us, rows[i].predicted_us,
             rows[i].error_pct, rows[i].warmup ? ",\"warmup\":true" : "");
      if (!isnan(rows[i].first_call_us))
        printf(",\"first_call_us\":%.6g,\"first_call_predicted_us\":%.6g,\"setup_share_us\":%.6g",
               rows[i].first_call_us, rows[i].first_call_predicted_us, rows[i].setup_share_us);
      printf("}");
    }
    printf("],\"mape_pct\":%.4g,\"mape_all_pct\":%.4g}\n", mape, all);
  } else {
    int op = o->op >= 0 ? o->op : t->op;
    int64_t ranks = o->gpus > 0 ? o->gpus : t->ranks > 0 ? t->ranks : sc_nccltests_infer_ranks(t);
    printf("# stepcast comm: %s vs the \"nccl\" v5 model: %s on %lld x %s\n"
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
      if (!isnan(rows[i].first_call_us))
        printf("# first call (out-of-place) %.2f us, predicted %.2f us with the setup (%.2f us per "
               "iteration): %+.1f%%\n",
               rows[i].first_call_us, rows[i].first_call_predicted_us, rows[i].setup_share_us,
               100.0 * (rows[i].first_call_predicted_us - rows[i].first_call_us) /
                   rows[i].first_call_us);
    }
    if (warm)
      printf("# MAPE %.1f%% over %zu rows (%.1f%% with the warm-up row: the run's first size took\n"
             "# over twice the time of the next)\n",
             mape, n - warm, all);
    else printf("# MAPE %.1f%% over %zu rows\n", mape, n);
  }
  free(rows);
  return SC_OK;
}

int sc_cli_comm(const sc_cli_cmd *cmd, int argc, char **argv) {
  comm_opts o;
  int code = comm_args(cmd, argc, argv, &o);
  if (code >= 0) return code;
  code = 0;
  if (!o.compare && (!o.gpu || o.gpus < 1))
    return sc_cli_usage_error(cmd, "needs --gpu and --gpus (or --compare FILE)");
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return sc_cli_fail(NULL, SC_ENOMEM);
  sc_nccltests t;
  memset(&t, 0, sizeof t);
  sc_comm *m = NULL;
  int rc = 0;
  if (o.compare) {
    if ((rc = sc_nccltests_load(ctx, o.compare, &t))) goto done;
    int64_t logged = t.ranks > 0 ? t.ranks : sc_nccltests_infer_ranks(&t);
    if (o.gpus > 0 && logged > 0 && logged != o.gpus)
      fprintf(stderr,
              "stepcast: warning: --gpus %lld, but %s ran on %lld ranks: the comparison prices "
              "a collective over %lld\n",
              (long long)o.gpus, o.compare, (long long)logged, (long long)o.gpus);
    if (!o.gpu) {
      const sc_hw *hw = sc_cli_guess_gpu(t.origin, t.gpu);
      if (!hw) {
        code = sc_exit_code(SC_EINVAL);
        goto done;
      }
      o.gpu = hw->name;
    }
  }
  if (!o.compare && table_rows(&o) > MAX_TABLE_ROWS) {
    code = sc_cli_error(sc_exit_code(SC_EINVAL),
                        "comm: --min-bytes %.0f to --max-bytes %.0f by --step-factor %.10g gives "
                        "more than %d sizes; use a larger factor",
                        o.min_bytes, o.max_bytes, o.factor, MAX_TABLE_ROWS);
    goto done;
  }
  if ((rc = make_model(ctx, &o, &m))) goto done;
  rc = o.compare ? print_compare(m, &o, &t) : print_table(m, &o);
  if (!rc && fflush(stdout)) code = sc_cli_write_error("stdout", 1);
done:
  if (rc) code = sc_cli_fail(ctx, rc);
  sc_comm_free(m);
  sc_nccltests_free(ctx, &t);
  sc_ctx_free(ctx);
  return code;
}
