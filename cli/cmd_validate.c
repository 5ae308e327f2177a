/*
 * cmd_validate.c: `stepcast validate CASES.csv ...`: predicted vs measured
 * step time of published runs (signed error, MAPE / median / worst per file
 * and split over the simulated rows; rows that are not modelled or fail are
 * listed with their reason, and only an unreadable or malformed file stops
 * the command). Argument parsing and printing only; the work is in
 * src/analysis/validate.c (include/stepcast/validate.h).
 */
#include "stepcast/report.h"
#include "stepcast/validate.h"

#include "commands.h"
#include "outfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sc_cli_load_cases(sc_caseset *set, const char *const *files, int nfiles) {
  int rc = SC_OK;
  for (int i = 0; !rc && i < nfiles; i++) rc = sc_caseset_load_file(set, files[i]);
  for (size_t i = 0; i < sc_caseset_warning_count(set); i++)
    fprintf(stderr, "stepcast: warning: %s\n", sc_caseset_warning(set, i));
  return rc;
}

/* Loads the `calibration:` mapping of path into *p (fields not in the file
 * stay 0, i.e. "use the default"). */
static int load_calibration(sc_ctx *ctx, const char *path, sc_cost_params *p) {
  sc_config tmp;
  sc_config_default(&tmp);
  int rc = sc_config_load_calibration(ctx, &tmp, path);
  if (!rc) *p = tmp.costs;
  return rc;
}

/* --fit-interval FILE: the interval widths as a loadable calibration file,
 * on the held-out predictions of --held-out HELD (NULL: the predictions of
 * this run, the fit's own residuals for the rows the fit used). */
static int write_interval(sc_ctx *ctx, const sc_caseset *set, const sc_case_result *res,
                          const sc_cli_list files, const char *held, const char *path) {
  size_t n = sc_caseset_count(set);
  double *held_out = held ? calloc(n ? n : 1, sizeof *held_out) : NULL;
  if (held && !held_out) return sc_cli_fail(ctx, SC_ENOMEM);
  int rc = held ? sc_validate_load_held_out(set, held, NULL, held_out) : 0;
  sc_interval_fit fit;
  if (!rc) rc = sc_validate_fit_interval(set, res, held_out, &fit);
  free(held_out);
  if (rc) return sc_cli_fail(ctx, rc);
  if (!fit.dense && !fit.moe)
    return sc_cli_error(sc_exit_code(SC_EINVAL),
                        "--fit-interval: fewer than 9 simulated calibration rows of dense "
                        "models and of all models: no 90 %% rank to fit");
  sc_cli_out o;
  int code = sc_cli_out_open(&o, path);
  if (code) return code;
  int bad = fprintf(o.f, "# stepcast validate --fit-interval: 90 %% prediction-interval "
                         "half-widths (log space),\n# w = the ceil((n + 1) * 0.9)-th smallest "
                         "|log(measured / predicted)| (split conformal)\n# over the simulated "
                         "split=calibration rows, %zu of them held out (%s), of:\n",
                    fit.held_out, held ? held : "no --held-out file") < 0;
  for (int i = 0; i < files.n; i++) bad |= fprintf(o.f, "#   %s\n", files.v[i]) < 0;
  bad |= fprintf(o.f, "calibration:\n") < 0;
  if (fit.dense > 0)
    bad |= fprintf(o.f, "  interval_dense: %.4g   # %zu dense rows, rms log error %.4g\n",
                   fit.dense, fit.dense_n, fit.dense_rms) < 0;
  if (fit.moe > 0)
    bad |= fprintf(o.f, "  interval_moe: %.4g   # %zu MoE rows, rms log error %.4g%s%s\n",
                   fit.moe, fit.moe_n, fit.moe_rms,
                   fit.moe_pooled ? " (rank over every row)" : "",
                   fit.moe == fit.dense ? " (at least the dense width)" : "") < 0;
  code = sc_cli_out_close(&o, bad);
  return !code && bad ? sc_cli_write_error(path, 1) : code;
}

int sc_cli_validate(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_cli_list files = {0}, sets = {0};
  const char *calibration = NULL, *outpath = NULL, *html_path = NULL, *interval_path = NULL,
             *held_path = NULL;
  sc_validate_format fmt = SC_VALIDATE_TEXT;
  sc_validate_group by = SC_VALIDATE_BY_FILE;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) code = sc_cli_list_add(&files, a.value);
    else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, a.value);
    else if (sc_cli_is(&a, "--calibration")) calibration = a.value;
    else if (sc_cli_is(&a, "-o")) outpath = a.value;
    else if (sc_cli_is(&a, "--html")) html_path = a.value;
    else if (sc_cli_is(&a, "--fit-interval")) interval_path = a.value;
    else if (sc_cli_is(&a, "--held-out")) held_path = a.value;
    else if (sc_cli_is(&a, "--format")) fmt = (sc_validate_format)a.choice; /* text|json|csv|md */
    else if (sc_cli_is(&a, "--by")) by = (sc_validate_group)a.choice; /* file|gpu|parallelism */
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !files.n) code = sc_cli_usage_error(cmd, "no case files given");
  if (code || r < 0) goto out_args;

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    code = sc_cli_fail(NULL, SC_ENOMEM);
    goto out_args;
  }
  sc_caseset *set = NULL;
  sc_case_result *res = NULL;
  sc_cost_params calib;
  memset(&calib, 0, sizeof calib);
  int rc = sc_caseset_new(ctx, &set);
  if (!rc && calibration) rc = load_calibration(ctx, calibration, &calib);
  if (!rc) rc = sc_cli_load_cases(set, files.v, files.n);
  if (rc) goto out;
  size_t n = sc_caseset_count(set);
  if (!(res = calloc(n ? n : 1, sizeof *res))) {
    rc = SC_ENOMEM;
    goto out;
  }
  sc_validate_options opt = {calibration ? &calib : NULL, sets.v, (size_t)sets.n};
  /* --html FILE: opened before the cases are simulated (an unwritable place
   * fails at once), renamed into place when complete. */
  sc_cli_out ho = {0};
  if (html_path && (code = sc_cli_out_open(&ho, html_path))) goto out;
  if ((rc = sc_validate_run(ctx, set, &opt, res))) {
    sc_cli_out_close(&ho, 1);
    goto out;
  }
  /* A row that cannot be simulated does not stop the others (exit 0); its
   * error is in the report and, for people and scripts reading stderr,
   * here. A feature not modelled is expected and only reported. */
  for (size_t i = 0; i < n; i++)
    if (res[i].status && res[i].status != SC_EUNSUPPORTED)
      fprintf(stderr, "stepcast: warning: case %s not simulated: %s\n",
              sc_caseset_case(set, i)->id, res[i].reason);
  if (ho.f) {
    rc = sc_report_html_validate(ctx, set, res, sc_cli_write_file, ho.f);
    code = sc_cli_out_close(&ho, rc != 0);
    if (rc == SC_EWRITE) code = sc_cli_write_error(html_path, 1), rc = 0;
    if (code || rc) goto out;
  }
  sc_cli_out o;
  if ((code = sc_cli_out_open(&o, outpath))) goto out;
  FILE *f = o.f;
  if (fmt == SC_VALIDATE_TEXT)
    fprintf(f, "calibration: %s\n", calibration ? calibration : "built-in defaults");
  rc = sc_validate_write_by(set, res, fmt, by, sc_cli_write_file, f);
  code = sc_cli_out_close(&o, rc != 0);
  if (rc == SC_EWRITE) code = sc_cli_write_error(outpath ? outpath : "stdout", 1), rc = 0;
  if (!code && !rc && interval_path)
    code = write_interval(ctx, set, res, files, held_path, interval_path);
out:
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  free(res);
  sc_caseset_free(set);
  sc_ctx_free(ctx);
out_args:
  sc_cli_list_free(&files);
  sc_cli_list_free(&sets);
  return code;
}
