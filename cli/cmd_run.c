/*
 * cmd_run.c: `stepcast run [CONFIG.yaml]`: loads the config (or the built-in
 * example), applies --calibration and --set, simulates one step through
 * sc_simulate and prints the result; optionally streams the Chrome trace and
 * writes result.json into -o DIR. Parsing and printing only.
 */
#include "stepcast/stepcast.h"

#include "commands.h"
#include "outfile.h"

#include <stdio.h>
#include <string.h>

int sc_cli_run(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *config = NULL, *trace_path = NULL, *outdir = NULL, *calibration = NULL, *hf = NULL;
  sc_format fmt = SC_FORMAT_TEXT;
  sc_cli_list sets = {0};
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (config) code = sc_cli_usage_error(cmd, "more than one config file given (%s)", a.value);
      config = a.value;
    } else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, a.value);
    else if (sc_cli_is(&a, "--format")) fmt = (sc_format)a.choice; /* text|json|csv */
    else if (sc_cli_is(&a, "--trace")) trace_path = a.value;
    else if (sc_cli_is(&a, "--calibration")) calibration = a.value;
    else if (sc_cli_is(&a, "--hf")) hf = a.value;
    else if (sc_cli_is(&a, "-o")) outdir = a.value;
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
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
  sc_config_default(&cfg);
  int rc = 0;
  if (config) rc = sc_config_load_file(ctx, &cfg, config);
  /* --calibration FILE: as --set calibration=FILE, before --set; errors
   * name FILE (and its line) */
  if (!rc && calibration) rc = sc_config_load_calibration(ctx, &cfg, calibration);
  /* --hf FILE: as --set model.hf_config=FILE, before the --set list */
  if (!rc && hf) {
    char assign[4200];
    snprintf(assign, sizeof assign, "model.hf_config=%s", hf); /* long paths: set's error */
    rc = sc_config_set(ctx, &cfg, assign);
  }
  for (int i = 0; !rc && i < sets.n; i++) rc = sc_config_set(ctx, &cfg, sets.v[i]);
  sc_cli_list_free(&sets);
  if (!rc) rc = sc_config_resolve(ctx, &cfg);
  if (rc) goto done;
  sc_cli_config_warnings(&cfg);

  char pathbuf[4096];
  /* -o DIR: created (with its parents) and checked before simulating. */
  if (outdir && (code = sc_cli_out_dir(outdir))) goto done;
  if (outdir && !trace_path) {
    snprintf(pathbuf, sizeof pathbuf, "%s/trace.json", outdir);
    trace_path = pathbuf;
  }
  sc_cli_out to = {0};
  if (trace_path && (code = sc_cli_out_open(&to, trace_path))) goto done;
  sc_result res;
  rc = sc_simulate(ctx, &cfg, to.f ? sc_cli_write_file : NULL, to.f, &res);
  if (to.f && (code = sc_cli_out_close(&to, rc != 0))) {
    if (rc == SC_EWRITE) rc = 0; /* reported */
    goto done;
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
  }
done:
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  sc_ctx_free(ctx);
  return code;
}
