/*
 * cmd_megatron.c: `stepcast import megatron ARGS.txt [-o JOB.yaml]` (a
 * Megatron-LM launch line to the config keys it sets) and `stepcast export
 * megatron [CONFIG.yaml]` (a config's launch line), over
 * stepcast/megatron.h. Parsing and printing only.
 */
#include "stepcast/megatron.h"

#include "commands.h"
#include "outfile.h"

#include <stdio.h>
#include <string.h>

int sc_cli_import_megatron(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  int verbose = 0;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (in) code = sc_cli_usage_error(cmd, "more than one launch line given (%s)", a.value);
      in = a.value;
    } else if (sc_cli_is(&a, "-o")) out = a.value;
    else if (sc_cli_is(&a, "--verbose")) verbose = 1;
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (code || r < 0) return code;
  if (!in) return sc_cli_usage_error(cmd, "no launch line file given");
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return sc_cli_fail(NULL, SC_ENOMEM);
  sc_config cfg;
  sc_config_default(&cfg);
  sc_megatron_info info;
  int rc = sc_config_load_megatron_file(ctx, &cfg, in, &info);
  if (!rc) {
    /* The keys are checked together as `run` would. */
    sc_config check = cfg;
    if (!info.have_cluster) { /* no GPUs in the line: one replica of the layout */
      check.cluster.num_gpus = check.parallel.tp * check.parallel.pp * check.parallel.cp;
      check.cluster.nodes = 0;
      check.parallel.dp = 0;
      if (check.cluster.gpus_per_node > check.cluster.num_gpus)
        check.cluster.gpus_per_node = check.cluster.num_gpus;
    }
    /* A launch line names no GPU: the layout is checked on an H100 (every
     * precision), and the written config asks for the GPU. */
    if (!check.cluster.gpu[0]) snprintf(check.cluster.gpu, sizeof check.cluster.gpu, "h100-sxm");
    rc = sc_config_resolve(ctx, &check);
  }
  if (rc) {
    code = sc_cli_fail(ctx, rc);
    sc_ctx_free(ctx);
    return code;
  }
  fprintf(stderr, "stepcast: %s: %d flags, %d mapped onto config keys, %d not timing-relevant%s\n",
          in, info.flags, info.mapped, info.ignored,
          verbose || !info.ignored ? "" : " (--verbose lists them)");
  if (verbose && info.ignored) fprintf(stderr, "  ignored: %s\n", info.ignored_names);
  sc_cli_out o;
  if ((code = sc_cli_out_open(&o, out))) {
    sc_ctx_free(ctx);
    return code;
  }
  int werr = fprintf(o.f, "# stepcast import megatron %s: the config keys the launch line sets "
                          "(Megatron-LM defaults made explicit)\n",
                     in) < 0;
  if (!info.have_cluster)
    werr |= fprintf(o.f, "# not in the launch line: cluster.gpu and cluster.num_gpus (or nodes); "
                         "add a cluster section\n") < 0;
  else if (!cfg.cluster.gpu[0])
    werr |= fprintf(o.f, "# not in the launch line: cluster.gpu; add it to the cluster section\n") <
            0;
  rc = sc_config_write_yaml_given(&cfg, sc_cli_write_file, o.f);
  code = sc_cli_out_close(&o, rc != 0 || werr);
  if (!code && (rc || werr)) code = sc_cli_write_error(out ? out : "stdout", 1);
  sc_ctx_free(ctx);
  return code;
}

int sc_cli_export_megatron(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *config = NULL;
  sc_cli_list sets = {0};
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (config) code = sc_cli_usage_error(cmd, "more than one config file given (%s)", a.value);
      config = a.value;
    } else if (sc_cli_is(&a, "--set")) code = sc_cli_list_add(&sets, a.value);
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
  int rc = sc_cli_config(ctx, &cfg, config, NULL, NULL, &sets);
  sc_cli_list_free(&sets);
  if (!rc) rc = sc_config_resolve(ctx, &cfg);
  if (!rc) {
    rc = sc_config_write_megatron(ctx, &cfg, sc_cli_write_file, stdout);
    if (rc == SC_EWRITE || (!rc && fflush(stdout))) {
      code = sc_cli_write_error("stdout", 1);
      rc = 0;
    }
  }
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  sc_ctx_free(ctx);
  return code;
}
