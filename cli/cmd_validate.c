/*
 * cmd_validate.c: the `validate` subcommand (predicted vs measured step time
 * of published runs, MAPE) and the case-file half of `calibrate` (fit the
 * compute parameters on the calibration rows, write a calibration YAML).
 * Argument parsing and printing only; the work is in src/validate.c and
 * src/calibrate.c.
 */
#include "stepcast/validate.h"

#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 256

static int exit_code(int rc) {
  return sc_exit_code(rc);
}

static int fail(sc_ctx *ctx, int rc) {
  fprintf(stderr, "stepcast: %s\n", ctx ? sc_errmsg(ctx) : sc_strerror(rc));
  return exit_code(rc);
}

static void validate_usage(FILE *f) {
  fprintf(f,
          "usage: stepcast validate CASES.csv [more.csv ...] [--calibration FILE]\n"
          "                         [--set section.key=value ...]\n"
          "                         [--format text|json|csv|markdown] [-o FILE]\n"
          "Simulates every case of the case files (validation/SCHEMA.md) and prints\n"
          "measured vs predicted step time, signed error, and MAPE / median / worst error\n"
          "per file and split; the headline figures cover validation rows. A sibling\n"
          "CASES.yaml, if present, is the base config of the file's rows.\n");
}

/* Loads the `calibration:` mapping of path into *p (fields not in the file
 * stay 0, i.e. "use the default"). */
static int load_calibration(sc_ctx *ctx, const char *path, sc_cost_params *p) {
  sc_config tmp;
  sc_config_default(&tmp);
  char assign[4200];
  if (snprintf(assign, sizeof assign, "calibration=%s", path) >= (int)sizeof assign)
    return SC_EINVAL;
  int rc = sc_config_set(ctx, &tmp, assign);
  if (!rc) *p = tmp.costs;
  return rc;
}

/* Takes the value of option argv[*i]; prints an error when it is missing. */
static const char *option_value(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "stepcast: %s needs a value\n", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

static void print_warnings(const sc_caseset *set) {
  for (size_t i = 0; i < sc_caseset_warning_count(set); i++)
    fprintf(stderr, "stepcast: warning: %s\n", sc_caseset_warning(set, i));
}

static int load_cases(sc_ctx *ctx, sc_caseset *set, const char *const *files, int nfiles) {
  for (int i = 0; i < nfiles; i++) {
    int rc = sc_caseset_load_file(set, files[i]);
    if (rc) return rc;
  }
  (void)ctx;
  return SC_OK;
}

int sc_cli_validate(int argc, char **argv) {
  const char *files[MAX_ITEMS], *sets[MAX_ITEMS];
  int nfiles = 0, nsets = 0;
  const char *calibration = NULL, *outpath = NULL;
  sc_validate_format fmt = SC_VALIDATE_TEXT;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      validate_usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--set") || !strcmp(a, "--calibration") || !strcmp(a, "--format") ||
        !strcmp(a, "-o")) {
      if (!(v = option_value(argc, argv, &i))) return 2;
      if (!strcmp(a, "--set")) {
        if (nsets == MAX_ITEMS) {
          fprintf(stderr, "stepcast: too many --set options\n");
          return 2;
        }
        sets[nsets++] = v;
      } else if (!strcmp(a, "--calibration")) {
        calibration = v;
      } else if (!strcmp(a, "-o")) {
        outpath = v;
      } else if (!strcmp(v, "text")) {
        fmt = SC_VALIDATE_TEXT;
      } else if (!strcmp(v, "json")) {
        fmt = SC_VALIDATE_JSON;
      } else if (!strcmp(v, "csv")) {
        fmt = SC_VALIDATE_CSV;
      } else if (!strcmp(v, "markdown")) {
        fmt = SC_VALIDATE_MARKDOWN;
      } else {
        fprintf(stderr, "stepcast: --format must be text, json, csv or markdown, not \"%s\"\n",
                v);
        return 2;
      }
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "stepcast: unknown option %s\n", a);
      validate_usage(stderr);
      return 2;
    } else if (nfiles == MAX_ITEMS) {
      fprintf(stderr, "stepcast: too many case files\n");
      return 2;
    } else {
      files[nfiles++] = a;
    }
  }
  if (!nfiles) {
    validate_usage(stderr);
    return 2;
  }

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return fail(NULL, SC_ENOMEM);
  sc_caseset *set = NULL;
  sc_case_result *res = NULL;
  sc_cost_params calib;
  memset(&calib, 0, sizeof calib);
  int code = 0, rc = sc_caseset_new(ctx, &set);
  if (!rc && calibration) rc = load_calibration(ctx, calibration, &calib);
  if (!rc) rc = load_cases(ctx, set, files, nfiles);
  if (set) print_warnings(set);
  if (rc) {
    code = fail(ctx, rc);
    goto out;
  }
  size_t n = sc_caseset_count(set);
  res = calloc(n ? n : 1, sizeof *res);
  if (!res) {
    code = fail(NULL, SC_ENOMEM);
    goto out;
  }
  sc_validate_options opt = {calibration ? &calib : NULL, sets, (size_t)nsets};
  if ((rc = sc_validate_run(ctx, set, &opt, res))) {
    code = fail(ctx, rc);
    goto out;
  }
  FILE *f = stdout;
  if (outpath && !(f = fopen(outpath, "w"))) {
    fprintf(stderr, "stepcast: %s: cannot open: %s\n", outpath, strerror(errno));
    code = 2;
    goto out;
  }
  if (fmt == SC_VALIDATE_TEXT)
    fprintf(f, "calibration: %s\n", calibration ? calibration : "built-in defaults");
  rc = sc_validate_write(set, res, fmt, sc_cli_write_file, f);
  if (f != stdout && fclose(f)) rc = SC_EWRITE;
  if (rc) {
    fprintf(stderr, "stepcast: %s: write failed\n", outpath ? outpath : "stdout");
    code = 1;
  }
out:
  free(res);
  sc_caseset_free(set);
  sc_ctx_free(ctx);
  return code;
}

static void calibrate_usage(FILE *f) {
  fprintf(f,
          "usage: stepcast calibrate --cases CASES.csv [--cases more.csv ...] [-o site.yaml]\n"
          "                          [--gpu NAME] [--params p1,p2,...] [--set k=v ...]\n"
          "                          [--prior-weight W] [--max-evals N]\n"
          "Fits compute-model parameters (default and maximum set: gemm_eff,\n"
          "gemm_dim_half, attn_eff, mem_eff, kernel_overhead_us) on the split=calibration\n"
          "rows only and writes a `calibration:` YAML for --calibration / `calibration:`.\n");
}

/* Splits a comma-separated list in place into names[]; returns the count. */
static size_t split_list(char *s, const char **names, size_t max) {
  size_t n = 0;
  for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) names[n++] = tok;
  return n;
}

int sc_cli_calibrate_cases(int argc, char **argv) {
  const char *files[MAX_ITEMS], *sets[MAX_ITEMS], *params[SC_CALIB_MAX_PARAMS + 1];
  int nfiles = 0, nsets = 0;
  size_t nparams = 0;
  char plist[512];
  const char *outpath = NULL, *gpu = NULL;
  double prior_weight = -1;
  int max_evals = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      calibrate_usage(stdout);
      return 0;
    }
    if (strcmp(a, "--cases") && strcmp(a, "--set") && strcmp(a, "-o") && strcmp(a, "--gpu") &&
        strcmp(a, "--params") && strcmp(a, "--prior-weight") && strcmp(a, "--max-evals")) {
      fprintf(stderr, "stepcast: calibrate: unexpected argument %s\n", a);
      calibrate_usage(stderr);
      return 2;
    }
    if (!(v = option_value(argc, argv, &i))) return 2;
    char *end;
    if (!strcmp(a, "--cases") || !strcmp(a, "--set")) {
      if (nfiles == MAX_ITEMS || nsets == MAX_ITEMS) {
        fprintf(stderr, "stepcast: too many %s options\n", a);
        return 2;
      }
      if (!strcmp(a, "--cases")) files[nfiles++] = v;
      else sets[nsets++] = v;
    } else if (!strcmp(a, "-o")) {
      outpath = v;
    } else if (!strcmp(a, "--gpu")) {
      gpu = v;
    } else if (!strcmp(a, "--params")) {
      snprintf(plist, sizeof plist, "%s", v);
      nparams = split_list(plist, params, SC_CALIB_MAX_PARAMS + 1);
      if (!nparams || nparams > SC_CALIB_MAX_PARAMS) {
        fprintf(stderr, "stepcast: --params takes 1 to %d names\n", SC_CALIB_MAX_PARAMS);
        return 2;
      }
    } else if (!strcmp(a, "--prior-weight")) {
      prior_weight = strtod(v, &end);
      if (*end || prior_weight < 0) {
        fprintf(stderr, "stepcast: --prior-weight must be a number >= 0, not \"%s\"\n", v);
        return 2;
      }
    } else {
      long k = strtol(v, &end, 10);
      if (*end || k < 1 || k > 100000) {
        fprintf(stderr, "stepcast: --max-evals must be an integer in 1..100000, not \"%s\"\n",
                v);
        return 2;
      }
      max_evals = (int)k;
    }
  }
  if (!nfiles) {
    calibrate_usage(stderr);
    return 2;
  }

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return fail(NULL, SC_ENOMEM);
  sc_caseset *set = NULL;
  int code = 0, rc = sc_caseset_new(ctx, &set);
  if (!rc) rc = load_cases(ctx, set, files, nfiles);
  if (set) print_warnings(set);
  sc_calibration_result fit;
  sc_calibration_options opt = {gpu,        nparams ? params : NULL, nparams, NULL, sets,
                                (size_t)nsets, prior_weight,          max_evals};
  if (!rc) rc = sc_calibrate_cases(ctx, set, &opt, &fit);
  if (rc) {
    code = fail(ctx, rc);
    goto out;
  }
  char note[1024];
  int len = snprintf(note, sizeof note, "Fitted by `stepcast calibrate` on the split=calibration "
                                        "rows (gpu %s) of:",
                     fit.gpu);
  for (int i = 0; i < nfiles && len > 0 && (size_t)len < sizeof note; i++)
    len += snprintf(note + len, sizeof note - (size_t)len, "\n  %s", files[i]);
  FILE *f = stdout;
  if (outpath && !(f = fopen(outpath, "w"))) {
    fprintf(stderr, "stepcast: %s: cannot open: %s\n", outpath, strerror(errno));
    code = 2;
    goto out;
  }
  rc = sc_calibration_write_yaml(&fit, note, sc_cli_write_file, f);
  if (f != stdout && fclose(f)) rc = SC_EWRITE;
  if (rc) {
    fprintf(stderr, "stepcast: %s: write failed\n", outpath ? outpath : "stdout");
    code = 1;
    goto out;
  }
  fprintf(stderr,
          "stepcast: calibrated %zu parameters on %zu calibration rows (%s): MAPE %.1f %% -> "
          "%.1f %%, worst %.1f %% -> %.1f %% (%d evaluations)%s%s\n",
          fit.nfitted, fit.rows, fit.gpu, fit.mape_before_pct, fit.mape_after_pct,
          fit.max_before_pct, fit.max_after_pct, fit.evaluations, outpath ? "; wrote " : "",
          outpath ? outpath : "");
out:
  sc_caseset_free(set);
  sc_ctx_free(ctx);
  return code;
}
