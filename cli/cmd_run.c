/*
 * cmd_run.c: `stepcast run [CONFIG.yaml]`: loads the config (or the built-in
 * example), applies --calibration and --set, simulates one step through
 * sc_simulate_traced and prints the result; optionally streams the timeline
 * (Chrome JSON or Perfetto protobuf, all ranks or --trace-ranks) and writes
 * result.json into -o DIR and the HTML report to --html FILE.
 * Parsing and printing only.
 */
#include "stepcast/report.h"
#include "stepcast/stepcast.h"

#include "commands.h"
#include "outfile.h"
#include "traceopt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sc_cli_run(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *config = NULL, *outdir = NULL, *calibration = NULL;
  const char *html_path = NULL;
  const char *hf = NULL;
  int print_config = 0;
  sc_cli_trace tr;
  sc_cli_trace_init(&tr);
  sc_format fmt = SC_FORMAT_TEXT;
  sc_cli_list sets = {0};
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (config) code = sc_cli_usage_error(cmd, "more than one config file given (%s)", a.value);
      config = a.value;
    } else if (sc_cli_trace_arg(&tr, &a, &code)) continue;
    else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, a.value);
    else if (sc_cli_is(&a, "--format")) fmt = (sc_format)a.choice; /* text|json|csv */
    else if (sc_cli_is(&a, "--calibration")) calibration = a.value;
    else if (sc_cli_is(&a, "--hf")) hf = a.value;
    else if (sc_cli_is(&a, "-o")) outdir = a.value;
    else if (sc_cli_is(&a, "--html")) html_path = a.value;
    else if (sc_cli_is(&a, "--print-config")) print_config = 1;
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && r >= 0) code = sc_cli_trace_needs(cmd, &tr, outdir != NULL);
  if (code || r < 0) {
    sc_cli_list_free(&sets);
    return code;
  }

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    sc_cli_list_free(&sets);
    return sc_cli_fail(NULL, SC_ENOMEM);
  }
  sc_config cfg;
  if (print_config && !config && !hf && !sets.n && !calibration) {
    /* the example as shipped, comments and all */
    size_t len;
    const char *text = sc_config_example_text(&len);
    sc_cli_list_free(&sets);
    sc_ctx_free(ctx);
    return fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0
               ? 0
               : sc_cli_write_error("stdout", 1);
  }
  int rc = sc_cli_config(ctx, &cfg, config, calibration, hf, &sets);
  sc_cli_list_free(&sets);
  if (!rc) rc = sc_config_resolve(ctx, &cfg);
  if (rc) goto done;
  sc_cli_config_warnings(&cfg);
  if (print_config) {
    if (sc_config_write_yaml(&cfg, sc_cli_write_file, stdout) || fflush(stdout))
      code = sc_cli_write_error("stdout", 1);
    goto done;
  }

  char pathbuf[4096];
  /* -o DIR: created (with its parents) and checked before simulating. */
  if (outdir && (code = sc_cli_out_dir(outdir))) goto done;
  if (outdir && !tr.path) {
    snprintf(pathbuf, sizeof pathbuf, "%s/trace.%s", outdir,
             tr.format == SC_CLI_TRACE_PERFETTO ? "pftrace" : "json");
    tr.path = pathbuf;
  }
  if (tr.path) { /* before anything is written or simulated */
    /* the ranks of the resolved job: [0, num_gpus) */
    if ((code = sc_cli_trace_prepare(&tr, cfg.cluster.num_gpus))) goto done;
    double est = 0;
    if ((rc = sc_trace_estimate_opts(ctx, &cfg, &tr.opts, &est))) goto done;
    const char *note = outdir && tr.path == pathbuf
                           ? tr.opts.format == SC_TRACE_OUT_PERFETTO
                                 ? " (-o DIR writes DIR/trace.pftrace)"
                                 : " (-o DIR writes DIR/trace.json)"
                           : "";
    if ((code = sc_cli_trace_limit(&tr, est, note,
                                   cfg.simulation.fold ? ""
                                                       : " or fold the run (simulation.fold: true)")))
      goto done;
  }
  sc_cli_out to = {0}, ho = {0};
  /* --html FILE: opened (a temporary file beside it) before simulating, so
   * an unwritable place fails at once. */
  if (html_path && (code = sc_cli_out_open(&ho, html_path))) goto done;
  if (tr.path && (code = sc_cli_out_open(&to, tr.path))) {
    sc_cli_out_close(&ho, 1);
    goto done;
  }
  sc_result res;
  rc = sc_simulate_traced(ctx, &cfg, &tr.opts, to.f ? sc_cli_write_file : NULL, to.f, &res);
  if (to.f && (code = sc_cli_out_close(&to, rc != 0))) {
    if (rc == SC_EWRITE) rc = 0; /* reported */
    sc_cli_out_close(&ho, 1);
    goto done;
  }
  if (!rc && ho.f) {
    rc = sc_report_html_run(ctx, &cfg, &res, sc_cli_write_file, ho.f);
    code = sc_cli_out_close(&ho, rc != 0);
    if (rc == SC_EWRITE) code = sc_cli_write_error(html_path, 1), rc = 0;
    if (code) goto done;
  } else if (ho.f) {
    sc_cli_out_close(&ho, 1);
  }
  if (rc) goto done;
  if ((rc = sc_result_format(&cfg, &res, fmt, sc_cli_write_file, stdout))) {
    code = sc_cli_write_error("stdout", 1);
    goto done;
  }
  if (outdir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/result.json", outdir);
    sc_cli_out jo;
    if (!(code = sc_cli_out_open(&jo, p))) {
      rc = sc_result_format(&cfg, &res, SC_FORMAT_JSON, sc_cli_write_file, jo.f);
      code = sc_cli_out_close(&jo, rc != 0);
      if (rc) code = sc_cli_write_error(p, 1);
      rc = 0;
    }
    /* DIR/config.yaml: the resolved config, every field, for `stepcast
     * report DIR` and for running the same step again. */
    snprintf(p, sizeof p, "%s/config.yaml", outdir);
    if (!code && !(code = sc_cli_out_open(&jo, p))) {
      rc = sc_config_write_yaml(&cfg, sc_cli_write_file, jo.f);
      code = sc_cli_out_close(&jo, rc != 0);
      if (rc) code = sc_cli_write_error(p, 1);
      rc = 0;
    }
  }
done:
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  sc_ctx_free(ctx);
  return code;
}

int sc_cli_report(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *dir = NULL, *html_path = NULL;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (dir) code = sc_cli_usage_error(cmd, "more than one directory given (%s)", a.value);
      dir = a.value;
    } else if (sc_cli_is(&a, "-o")) html_path = a.value;
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && !dir) code = sc_cli_usage_error(cmd, "no directory given (run -o DIR)");
  if (!code && !r && !html_path) code = sc_cli_usage_error(cmd, "-o REPORT.html is required");
  if (code || r < 0) return code;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return sc_cli_fail(NULL, SC_ENOMEM);
  char path[4096];
  snprintf(path, sizeof path, "%s/config.yaml", dir);
  sc_config cfg;
  sc_config_default(&cfg);
  int rc = sc_config_load_file(ctx, &cfg, path);
  if (!rc) rc = sc_config_resolve(ctx, &cfg);
  sc_cli_out ho = {0};
  if (!rc && (code = sc_cli_out_open(&ho, html_path))) goto done;
  sc_result res;
  if (!rc) rc = sc_simulate(ctx, &cfg, NULL, NULL, &res);
  if (!rc) { /* the saved result: the same step unless another build or calibration made it */
    snprintf(path, sizeof path, "%s/result.json", dir);
    FILE *f = fopen(path, "rb");
    /* a result is 1-300 KiB (memory_breakdown has a row per stage) */
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = size > 0 && size <= (16L << 20) ? malloc((size_t)size) : NULL;
    if (f && text) {
      rewind(f);
      size_t n = fread(text, 1, (size_t)size, f);
      sc_result saved;
      if (!sc_result_read_json(ctx, path, text, n, &saved) &&
          fabs(saved.step_time_s - res.step_time_s) > 1e-6 * res.step_time_s)
        fprintf(stderr,
                "stepcast: warning: %s has a step time of %.9g s, its config gives %.9g s now "
                "(another build or calibration): the report shows the new one\n",
                path, saved.step_time_s, res.step_time_s);
    }
    free(text);
    if (f) fclose(f);
  }
  if (!rc) {
    rc = sc_report_html_run(ctx, &cfg, &res, sc_cli_write_file, ho.f);
    code = sc_cli_out_close(&ho, rc != 0);
    if (rc == SC_EWRITE) code = sc_cli_write_error(html_path, 1), rc = 0;
  } else {
    sc_cli_out_close(&ho, 1);
  }
done:
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  sc_ctx_free(ctx);
  return code;
}
