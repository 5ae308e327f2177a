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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most ranges --trace-ranks takes (a timeline of more is no longer read by
 * eye; a range covers any number of ranks). */
#define MAX_TRACE_RANGES 256

/* --trace-format: auto (the extension decides), json, perfetto */
enum { TRACE_AUTO = 0, TRACE_JSON, TRACE_PERFETTO };

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcmp(s + n - m, tail);
}

int sc_cli_run(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *config = NULL, *trace_path = NULL, *outdir = NULL, *calibration = NULL;
  const char *html_path = NULL;
  const char *hf = NULL, *trace_ranks = NULL;
  int trace_format = TRACE_AUTO;
  int print_config = 0;
  /* --trace-limit: refuse a trace estimated above it (default 4 GiB: an
   * unfolded GPT-3 175B step is ~9 GB of JSON) */
  double trace_limit = 4.0 * 1073741824.0;
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
    else if (sc_cli_is(&a, "--html")) html_path = a.value;
    else if (sc_cli_is(&a, "--print-config")) print_config = 1;
    else if (sc_cli_is(&a, "--trace-format")) trace_format = a.choice;
    else if (sc_cli_is(&a, "--trace-ranks")) trace_ranks = a.value;
    else if (sc_cli_is(&a, "--trace-limit")) {
      if (!sc_cli_size(a.opt->name, a.value, 0, SC_CLI_BYTES_MAX, &trace_limit))
        code = SC_CLI_EXIT_USAGE;
    } else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && r >= 0 && (trace_ranks || trace_format != TRACE_AUTO) && !trace_path && !outdir)
    code = sc_cli_usage_error(cmd, "%s needs --trace FILE or -o DIR",
                              trace_ranks ? "--trace-ranks" : "--trace-format");
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
  if (outdir && !trace_path) {
    snprintf(pathbuf, sizeof pathbuf, "%s/trace.%s", outdir,
             trace_format == TRACE_PERFETTO ? "pftrace" : "json");
    trace_path = pathbuf;
  }
  sc_rank_range ranges[MAX_TRACE_RANGES];
  sc_trace_opts topts = {SC_TRACE_OUT_JSON, NULL, 0};
  if (trace_path) { /* before anything is written or simulated */
    if (trace_format == TRACE_PERFETTO ||
        (trace_format == TRACE_AUTO && ends_with(trace_path, ".pftrace")))
      topts.format = SC_TRACE_OUT_PERFETTO;
    /* the ranks of the resolved job: [0, num_gpus) */
    int nr = 0;
    if (trace_ranks && !sc_cli_range_list("--trace-ranks", trace_ranks, 0, cfg.cluster.num_gpus - 1,
                                          ranges, MAX_TRACE_RANGES, &nr)) {
      code = SC_CLI_EXIT_USAGE;
      goto done;
    }
    topts.ranks = nr ? ranges : NULL;
    topts.nranks = (size_t)nr;
    double est = 0;
    if ((rc = sc_trace_estimate_opts(ctx, &cfg, &topts, &est))) goto done;
    if (est > trace_limit) {
      /* in the unit --trace-limit takes: GiB, or MiB below one GiB */
      double unit = est >= 1073741824.0 ? 1073741824.0 : 1048576.0;
      const char *u = unit > 1048576.0 ? "G" : "M";
      code = sc_cli_error(sc_exit_code(SC_EINVAL),
                          "%s: the trace would take ~%.1f %siB (estimate), above --trace-limit "
                          "%.1f %siB%s; raise the limit (--trace-limit %.0f%s)%s",
                          trace_path, est / unit, u, trace_limit / unit, u,
                          outdir && trace_path == pathbuf
                              ? topts.format == SC_TRACE_OUT_PERFETTO
                                    ? " (-o DIR writes DIR/trace.pftrace)"
                                    : " (-o DIR writes DIR/trace.json)"
                              : "",
                          ceil(est / unit), u,
                          cfg.simulation.fold ? "" : " or fold the run (simulation.fold: true)");
      goto done;
    }
  }
  sc_cli_out to = {0}, ho = {0};
  /* --html FILE: opened (a temporary file beside it) before simulating, so
   * an unwritable place fails at once. */
  if (html_path && (code = sc_cli_out_open(&ho, html_path))) goto done;
  if (trace_path && (code = sc_cli_out_open(&to, trace_path))) {
    sc_cli_out_close(&ho, 1);
    goto done;
  }
  sc_result res;
  rc = sc_simulate_traced(ctx, &cfg, &topts, to.f ? sc_cli_write_file : NULL, to.f, &res);
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
