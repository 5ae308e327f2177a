/*
 * cmd_calibrate.c: the three modes of `stepcast calibrate`, each writing a
 * `calibration:` YAML: --cases (compute model on published step times,
 * stepcast/validate.h), --nccl-tests (collective model on nccl-tests outputs,
 * stepcast/comm.h), --interference (learned interference model on Kineto
 * traces, stepcast/interference.h). Parsing and printing only.
 */
#include "stepcast/comm.h"
#include "stepcast/interference.h"
#include "stepcast/validate.h"

#include "commands.h"
#include "outfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most keys --params names for the collective model (it has fewer). */
#define SC_COMM_MAX_FIT_KEYS 64

/* Opens the YAML output (atomic: outfile.h): path, or stdout without -o.
 * NULL after printing. */
static FILE *open_output(sc_cli_out *o, const char *path) {
  return sc_cli_out_open(o, path) ? NULL : o->f;
}

/* Closes what open_output opened; rc: the writer's return code. Returns the
 * exit code. */
static int close_output(const sc_ctx *ctx, sc_cli_out *o, int rc) {
  int code = sc_cli_out_close(o, rc != 0);
  if (rc == SC_EWRITE) return sc_cli_write_error(o->path ? o->path : "stdout", 1);
  if (rc) return sc_cli_fail(ctx, rc);
  return code;
}

/* ------------------------------------------------------------ --cases */

/* Splits a comma-separated list in place into names[]; returns the count. */
static size_t split_list(char *s, const char **names, size_t max) {
  size_t n = 0;
  for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) names[n++] = tok;
  return n;
}

int sc_cli_calibrate_cases(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_cli_list files = {0}, sets = {0};
  const char *params[SC_CALIB_MAX_PARAMS + 1];
  size_t nparams = 0;
  char plist[512];
  const char *outpath = NULL, *gpu = NULL;
  double prior_weight = -1;
  int64_t max_evals = 0;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    const char *v = a.value;
    if (!a.opt) code = sc_cli_usage_error(cmd, "unexpected argument %s", v);
    else if (sc_cli_is(&a, "--cases")) code = sc_cli_list_add(&files, v);
    else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, v);
    else if (sc_cli_is(&a, "-o")) outpath = v;
    else if (sc_cli_is(&a, "--gpu")) gpu = v;
    else if (sc_cli_is(&a, "--params")) {
      snprintf(plist, sizeof plist, "%s", v);
      nparams = split_list(plist, params, SC_CALIB_MAX_PARAMS + 1);
      if (!nparams || nparams > SC_CALIB_MAX_PARAMS)
        code = sc_cli_error(SC_CLI_EXIT_USAGE, "--params takes 1 to %d names", SC_CALIB_MAX_PARAMS);
    } else if (sc_cli_is(&a, "--prior-weight")) {
      if (!sc_cli_real(a.opt->name, v, 0, 0, SC_CLI_PRIOR_WEIGHT_MAX, &prior_weight))
        code = SC_CLI_EXIT_USAGE;
    } else if (sc_cli_is(&a, "--max-evals")) {
      if (!sc_cli_int(a.opt->name, v, 1, SC_CLI_MAX_EVALS_MAX, &max_evals))
        code = SC_CLI_EXIT_USAGE;
    } else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !files.n) code = sc_cli_usage_error(cmd, "no --cases file given");
  if (code || r < 0) goto out_args;

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    code = sc_cli_fail(NULL, SC_ENOMEM);
    goto out_args;
  }
  sc_caseset *set = NULL;
  int rc = sc_caseset_new(ctx, &set);
  if (!rc) rc = sc_cli_load_cases(set, files.v, files.n);
  sc_calibration_result fit;
  sc_calibration_options opt = {gpu,    nparams ? params : NULL, nparams,      NULL,
                                sets.v, (size_t)sets.n,          prior_weight, (int)max_evals};
  if (!rc) rc = sc_calibrate_cases(ctx, set, &opt, &fit);
  if (rc) {
    code = sc_cli_fail(ctx, rc);
    goto out;
  }
  char note[1024];
  int len = snprintf(note, sizeof note,
                     "Fitted by `stepcast calibrate` on the split=calibration "
                     "rows (gpu %s) of:",
                     fit.gpu);
  for (int i = 0; i < files.n && len > 0 && (size_t)len < sizeof note; i++)
    len += snprintf(note + len, sizeof note - (size_t)len, "\n  %s", files.v[i]);
  sc_cli_out o;
  FILE *f = open_output(&o, outpath);
  if (!f) {
    code = sc_exit_code(SC_EWRITE);
    goto out;
  }
  if ((code = close_output(ctx, &o, sc_calibration_write_yaml(&fit, note, sc_cli_write_file, f))))
    goto out;
  fprintf(stderr,
          "stepcast: calibrated %zu parameters on %zu calibration rows (%s): MAPE %.1f %% -> "
          "%.1f %%, worst %.1f %% -> %.1f %% (%d evaluations)%s%s\n",
          fit.nfitted, fit.rows, fit.gpu, fit.mape_before_pct, fit.mape_after_pct,
          fit.max_before_pct, fit.max_after_pct, fit.evaluations, outpath ? "; wrote " : "",
          outpath ? outpath : "");
out:
  sc_caseset_free(set);
  sc_ctx_free(ctx);
out_args:
  sc_cli_list_free(&files);
  sc_cli_list_free(&sets);
  return code;
}

/* ------------------------------------------------------------ --nccl-tests */

/* Prints the fit's error per file (to report) and builds the provenance
 * note of the YAML. */
static int nccl_report(sc_comm *m, const sc_nccltests *t, const char *const *files, int nfiles,
                       const char *gpu, double mape, FILE *report, char *note, size_t cap) {
  int rc = SC_OK;
  size_t len =
      (size_t)snprintf(note, cap, "fitted by `stepcast calibrate --nccl-tests` for %s on:", gpu);
  fprintf(report, "# %-44s %-14s %6s %6s %8s\n", "file", "op", "ranks", "nodes", "MAPE %");
  for (int i = 0; i < nfiles && !rc; i++) {
    sc_comm_compare_row *rows = calloc(t[i].nrows ? t[i].nrows : 1, sizeof *rows);
    size_t n = 0;
    double fm = 0;
    if (!rows) return SC_ENOMEM;
    int64_t ranks = t[i].ranks > 0 ? t[i].ranks : sc_nccltests_infer_ranks(&t[i]);
    if (ranks > 1) rc = sc_comm_compare(m, &t[i], -1, 0, 0, rows, &n, &fm);
    size_t warm = sc_cli_warmup_rows(rows, n, NULL);
    free(rows);
    char nodes[24] = "-"; /* no device lines: the placement came from --gpus-per-node */
    if (t[i].nodes > 0) snprintf(nodes, sizeof nodes, "%lld", (long long)t[i].nodes);
    fprintf(report, "  %-44s %-14s %6lld %6s %8.1f%s\n", files[i], sc_comm_op_name(t[i].op),
            (long long)ranks, nodes, fm, warm ? "  (warm-up row left out)" : "");
    if (len < cap)
      len += (size_t)snprintf(note + len, cap - len, "\n  %s (%s, %lld ranks)", files[i],
                              sc_comm_op_name(t[i].op), (long long)ranks);
  }
  fprintf(report, "# in-sample MAPE %.1f%%\n", mape);
  if (len < cap) snprintf(note + len, cap - len, "\nin-sample MAPE %.1f%%", mape);
  return rc;
}

int sc_cli_calibrate_nccl(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_cli_list files = {0};
  const char *params[SC_COMM_MAX_FIT_KEYS];
  size_t nparams = 0;
  char plist[1024];
  const char *outpath = NULL, *gpu = NULL;
  sc_comm_cluster cl;
  memset(&cl, 0, sizeof cl);
  int op = -1, in_files = 0;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    const char *v = a.value;
    if (!a.opt) {
      if (in_files) code = sc_cli_list_add(&files, v);
      else code = sc_cli_usage_error(cmd, "unexpected argument %s", v);
      continue;
    }
    if (v) in_files = 0; /* files follow --nccl-tests up to the next option with a value */
    if (sc_cli_is(&a, "--nccl-tests")) in_files = 1;
    else if (sc_cli_is(&a, "--sharp")) cl.sharp = 1;
    else if (sc_cli_is(&a, "-o")) outpath = v;
    else if (sc_cli_is(&a, "--gpu")) gpu = v;
    else if (sc_cli_is(&a, "--gpus-per-node")) {
      if (!sc_cli_int(a.opt->name, v, 1, SC_CLI_GPUS_PER_NODE_MAX, &cl.gpus_per_node))
        code = SC_CLI_EXIT_USAGE;
    } else if (sc_cli_is(&a, "--nic-gbps")) {
      if (!sc_cli_real(a.opt->name, v, SC_CLI_LINK_GBPS_MIN, 0, SC_CLI_LINK_GBPS_MAX, &cl.nic_gbps))
        code = SC_CLI_EXIT_USAGE;
    } else if (sc_cli_is(&a, "--nvlink-gbps")) {
      if (!sc_cli_real(a.opt->name, v, SC_CLI_LINK_GBPS_MIN, 0, SC_CLI_LINK_GBPS_MAX,
                       &cl.nvlink_gbps))
        code = SC_CLI_EXIT_USAGE;
    } else if (sc_cli_is(&a, "--op")) {
      if ((op = sc_comm_op_find(v)) < 0)
        code = sc_cli_error(SC_CLI_EXIT_USAGE, "unknown collective \"%s\"", v);
    } else if (sc_cli_is(&a, "--params")) {
      snprintf(plist, sizeof plist, "%s", v);
      nparams = split_list(plist, params, SC_COMM_MAX_FIT_KEYS);
      if (!nparams) code = sc_cli_error(SC_CLI_EXIT_USAGE, "--params needs key names");
    } else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !files.n) code = sc_cli_usage_error(cmd, "--nccl-tests needs FILE...");
  if (code || r < 0) {
    sc_cli_list_free(&files);
    return code;
  }

  int nfiles = files.n;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    sc_cli_list_free(&files);
    return sc_cli_fail(NULL, SC_ENOMEM);
  }
  sc_nccltests *t = calloc((size_t)nfiles, sizeof *t);
  sc_comm *m = NULL;
  int rc = t ? SC_OK : SC_ENOMEM;
  int loaded = 0;
  for (; !rc && loaded < nfiles; loaded++) {
    if ((rc = sc_nccltests_load(ctx, files.v[loaded], &t[loaded]))) break;
    if (t[loaded].op < 0) t[loaded].op = op;
    if (!gpu) {
      const sc_hw *hw = sc_cli_guess_gpu(files.v[loaded], t[loaded].gpu);
      if (!hw) {
        code = sc_exit_code(SC_EINVAL);
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
  if (!rc && !code && nparams) rc = sc_comm_fit_only(m, params, nparams);
  if (!rc && !code) rc = sc_comm_calibrate(m, t, (size_t)nfiles, &mape);
  char note[4096];
  if (!rc && !code)
    rc = nccl_report(m, t, files.v, nfiles, cl.gpu, mape, outpath ? stdout : stderr, note,
                     sizeof note);
  if (!rc && !code) {
    sc_cli_out o;
    FILE *out = open_output(&o, outpath);
    if (!out) code = sc_exit_code(SC_EWRITE);
    else code = close_output(ctx, &o, sc_comm_write_calibration(m, note, sc_cli_write_file, out));
  }
  if (rc) code = sc_cli_fail(ctx, rc);
  for (int i = 0; t && i < loaded; i++) sc_nccltests_free(ctx, &t[i]);
  free(t);
  sc_comm_free(m);
  sc_ctx_free(ctx);
  sc_cli_list_free(&files);
  return code;
}

/* ------------------------------------------------------------ --interference */

int sc_cli_calibrate_interference(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_cli_list files = {0};
  const char *outpath = NULL;
  int in_files = 0;
  sc_interf_extract_options ex;
  sc_interf_fit_options fo;
  memset(&ex, 0, sizeof ex);
  memset(&fo, 0, sizeof fo);
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    const char *v = a.value, *name = a.opt ? a.opt->name : NULL;
    int64_t k = 0;
    int ok = 1;
    if (!a.opt) {
      if (in_files) code = sc_cli_list_add(&files, v);
      else code = sc_cli_usage_error(cmd, "unexpected argument %s", v);
      continue;
    }
    in_files = 0;
    if (sc_cli_is(&a, "--interference")) in_files = 1;
    else if (sc_cli_is(&a, "-o")) outpath = v;
    else if (sc_cli_is(&a, "--min-kernel-us"))
      ok = sc_cli_real(name, v, 0, 0, SC_CLI_KERNEL_US_MAX, &ex.min_kernel_us);
    else if (sc_cli_is(&a, "--max-spread"))
      ok = sc_cli_real(name, v, 0, 1, SC_CLI_SPREAD_MAX, &ex.max_spread);
    else if (sc_cli_is(&a, "--min-overlap")) ok = sc_cli_real(name, v, 0, 1, 1, &ex.min_overlap);
    else if (sc_cli_is(&a, "--shape-tol")) ok = sc_cli_real(name, v, 0, 1, 1, &ex.shape_tol);
    else if (sc_cli_is(&a, "--ridge")) ok = sc_cli_real(name, v, 0, 1, SC_CLI_RIDGE_MAX, &fo.ridge);
    else if (sc_cli_is(&a, "--huber")) ok = sc_cli_real(name, v, 0, 1, SC_CLI_HUBER_MAX, &fo.huber);
    else if (sc_cli_is(&a, "--min-alone")) {
      ok = sc_cli_int(name, v, 1, SC_CLI_RUNS_MAX, &k);
      ex.min_alone = (int)k;
    } else if (sc_cli_is(&a, "--model")) {
      if (!strcmp(v, "tree")) fo.model = SC_INTERF_MODEL_TREE;
      else if (!strcmp(v, "linear")) fo.model = SC_INTERF_MODEL_LINEAR;
      else code = sc_cli_usage_error(cmd, "--model: expected linear or tree, got %s", v);
    } else if (sc_cli_is(&a, "--tree-rounds")) {
      ok = sc_cli_int(name, v, 1, SC_CLI_TREE_ROUNDS_MAX, &k);
      fo.tree_rounds = (int)k;
    } else if (sc_cli_is(&a, "--tree-depth")) {
      ok = sc_cli_int(name, v, 1, SC_CLI_TREE_DEPTH_MAX, &k);
      fo.tree_depth = (int)k;
    } else if (sc_cli_is(&a, "--tree-eta")) ok = sc_cli_real(name, v, 0, 1, 1, &fo.tree_eta);
    else if (sc_cli_is(&a, "--tree-min-child"))
      ok = sc_cli_real(name, v, 0, 1, SC_CLI_TREE_CHILD_MAX, &fo.tree_min_child);
    else if (sc_cli_is(&a, "--folds")) {
      ok = sc_cli_int(name, v, -1, SC_CLI_FOLDS_MAX, &k);
      fo.folds = (int)k;
    } else code = sc_cli_unhandled(&a);
    if (!ok) code = SC_CLI_EXIT_USAGE;
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !files.n) code = sc_cli_usage_error(cmd, "--interference needs trace files");
  if (!code && !r && fo.model == SC_INTERF_MODEL_TREE && !outpath)
    code = sc_cli_usage_error(cmd, "--model tree needs -o FILE (the booster goes beside it)");
  if (code || r < 0) {
    sc_cli_list_free(&files);
    return code;
  }
  /* --model tree: the booster is FILE's name less .yaml / .yml plus
   * .xgb.json, in FILE's directory; the YAML names it relative to itself. */
  char treepath[4096] = "";
  const char *treebase = NULL;
  if (fo.model == SC_INTERF_MODEL_TREE) {
    size_t n = strlen(outpath);
    if (n > 5 && !strcmp(outpath + n - 5, ".yaml")) n -= 5;
    else if (n > 4 && !strcmp(outpath + n - 4, ".yml")) n -= 4;
    if (n + 10 > sizeof treepath) {
      sc_cli_list_free(&files);
      return sc_cli_usage_error(cmd, "-o: path too long");
    }
    snprintf(treepath, sizeof treepath, "%.*s.xgb.json", (int)n, outpath);
    const char *slash = strrchr(treepath, '/');
    treebase = slash ? slash + 1 : treepath;
  }

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    sc_cli_list_free(&files);
    return sc_cli_fail(NULL, SC_ENOMEM);
  }
  sc_interf_data *d = NULL;
  int rc = sc_interf_data_new(ctx, &ex, &d);
  for (int i = 0; !rc && !code && i < files.n; i++) {
    /* the library's reader opens what it is given: refuse a FIFO first */
    if (!sc_cli_regular_file(files.v[i])) code = sc_exit_code(SC_EREAD);
    else rc = sc_interf_load_file(d, files.v[i]);
  }
  sc_interf_fit_result res;
  memset(&res, 0, sizeof res);
  sc_interf_stats st;
  if (!rc && !code) {
    sc_interf_data_stats(d, &st);
    rc = sc_interf_fit(d, &fo, &res);
  }
  if (!rc && !code)
    rc = sc_interf_write_report(&res, &st, sc_cli_write_file, outpath ? stdout : stderr);
  if (!rc && !code) {
    char note[4096];
    size_t len =
        (size_t)snprintf(note, sizeof note, "fitted by `stepcast calibrate --interference` on:");
    for (int i = 0; i < files.n && len < sizeof note; i++)
      len += (size_t)snprintf(note + len, sizeof note - len, "\n  %s", files.v[i]);
    if (treebase && strlen(treebase) < sizeof res.tree_file) {
      memcpy(res.tree_file, treebase, strlen(treebase) + 1); /* fits: checked above */
      sc_cli_out t;
      FILE *tf = open_output(&t, treepath);
      if (!tf) code = sc_exit_code(SC_EWRITE);
      else code = close_output(ctx, &t, sc_interf_write_tree(&res, sc_cli_write_file, tf));
    } else if (treebase) {
      code = sc_cli_usage_error(cmd, "-o: file name too long for the booster's name");
    }
    sc_cli_out o;
    FILE *out = code ? NULL : open_output(&o, outpath);
    if (!code && !out) code = sc_exit_code(SC_EWRITE);
    else if (!code)
      code = close_output(ctx, &o,
                          sc_interf_write_calibration(&res, &st, note, sc_cli_write_file, out));
  }
  sc_interf_fit_result_release(&res);
  if (rc) code = sc_cli_fail(ctx, rc);
  sc_interf_data_free(d);
  sc_ctx_free(ctx);
  sc_cli_list_free(&files);
  return code;
}
