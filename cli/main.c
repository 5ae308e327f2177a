/*
 * main.c: the stepcast command-line front end. Parses arguments, calls
 * libstepcast, prints. No simulation logic lives here. Exit codes: 0 success,
 * 1 runtime failure, 2 bad usage or invalid input.
 */
#include "stepcast/stepcast.h"

#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sc_cli_write_file(void *ud, const char *buf, size_t len) {
  return fwrite(buf, 1, len, (FILE *)ud) == len ? 0 : SC_EWRITE;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: stepcast run [CONFIG.yaml] [--set section.key=value ...] [--calibration FILE]\n"
          "                    [--format text|json|csv] [--trace out.json] [-o OUTDIR]\n"
          "       stepcast sweep CONFIG --gpus N [--top K] [--out results.csv] [--resume]\n"
          "       stepcast validate CASES.csv ... [--calibration FILE] [--format text|json|csv]\n"
          "       stepcast calibrate --cases CASES.csv | --nccl-tests LOGS... -o site.yaml\n"
          "       stepcast comm --gpu NAME --gpus N --op all_reduce [--compare LOG]\n"
          "       stepcast import kineto|chakra TRACES... -o job.scw\n"
          "       stepcast replay job.scw [--scale dp=N] [--format text|json] [--trace out.json]\n"
          "       stepcast hw list | hw show NAME\n"
          "       stepcast presets\n"
          "       stepcast config-docs      (prints docs/CONFIG.md)\n"
          "       stepcast version\n"
          "Without CONFIG, `run` simulates the built-in example: GPT-3 175B on 1,024\n"
          "A100-80GB (TP8 PP16 DP8, batch 1536, full recompute; Megatron SC21).\n");
}

static int fail(sc_ctx *ctx, int rc) {
  fprintf(stderr, "stepcast: %s\n", ctx ? sc_errmsg(ctx) : sc_strerror(rc));
  return sc_exit_code(rc);
}

static int cmd_run(int argc, char **argv) {
  const char *config = NULL, *trace_path = NULL, *outdir = NULL, *calibration = NULL;
  sc_format fmt = SC_FORMAT_TEXT;
  const char *sets[256];
  int nsets = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--set") || !strcmp(a, "--format") || !strcmp(a, "--trace") ||
        !strcmp(a, "-o") || !strcmp(a, "--calibration")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "stepcast: %s needs a value\n", a);
        return 2;
      }
      const char *v = argv[++i];
      if (!strcmp(a, "--set")) {
        if (nsets == (int)(sizeof sets / sizeof sets[0])) {
          fprintf(stderr, "stepcast: too many --set options\n");
          return 2;
        }
        sets[nsets++] = v;
      } else if (!strcmp(a, "--format")) {
        if (!strcmp(v, "text")) fmt = SC_FORMAT_TEXT;
        else if (!strcmp(v, "json")) fmt = SC_FORMAT_JSON;
        else if (!strcmp(v, "csv")) fmt = SC_FORMAT_CSV;
        else {
          fprintf(stderr, "stepcast: --format must be text, json or csv, not \"%s\"\n", v);
          return 2;
        }
      } else if (!strcmp(a, "--trace")) trace_path = v;
      else if (!strcmp(a, "--calibration")) calibration = v;
      else outdir = v;
    } else if (!strncmp(a, "--set=", 6)) {
      if (nsets < (int)(sizeof sets / sizeof sets[0])) sets[nsets++] = a + 6;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "stepcast: unknown option %s\n", a);
      usage(stderr);
      return 2;
    } else if (!config) config = a;
    else {
      fprintf(stderr, "stepcast: more than one config file given (%s)\n", a);
      return 2;
    }
  }

  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return fail(NULL, SC_ENOMEM);
  sc_config cfg;
  sc_config_default(&cfg);
  int rc = 0;
  if (config) rc = sc_config_load_file(ctx, &cfg, config);
  if (!rc && calibration) { /* --calibration FILE == --set calibration=FILE, before --set */
    char assign[4200];
    snprintf(assign, sizeof assign, "calibration=%s", calibration);
    rc = sc_config_set(ctx, &cfg, assign);
  }
  for (int i = 0; !rc && i < nsets; i++) rc = sc_config_set(ctx, &cfg, sets[i]);
  if (!rc) rc = sc_config_resolve(ctx, &cfg);
  if (rc) {
    int code = fail(ctx, rc);
    sc_ctx_free(ctx);
    return code == 1 ? 1 : 2;
  }

  FILE *tf = NULL;
  char pathbuf[4096];
  if (outdir && !trace_path) {
    snprintf(pathbuf, sizeof pathbuf, "%s/trace.json", outdir);
    trace_path = pathbuf;
  }
  if (trace_path) {
    tf = fopen(trace_path, "w");
    if (!tf) {
      fprintf(stderr, "stepcast: %s: cannot open: %s\n", trace_path, strerror(errno));
      sc_ctx_free(ctx);
      return 2;
    }
  }
  sc_result res;
  rc = sc_simulate(ctx, &cfg, tf ? sc_cli_write_file : NULL, tf, &res);
  if (tf && fclose(tf) && !rc) {
    fprintf(stderr, "stepcast: %s: write failed\n", trace_path);
    rc = SC_EWRITE;
  }
  if (rc) {
    int code = fail(ctx, rc);
    sc_ctx_free(ctx);
    return code;
  }
  rc = sc_result_format(&cfg, &res, fmt, sc_cli_write_file, stdout);
  if (!rc && outdir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/result.json", outdir);
    FILE *jf = fopen(p, "w");
    if (!jf) {
      fprintf(stderr, "stepcast: %s: cannot open: %s\n", p, strerror(errno));
      rc = SC_EWRITE;
    } else {
      rc = sc_result_format(&cfg, &res, SC_FORMAT_JSON, sc_cli_write_file, jf);
      fclose(jf);
    }
  }
  sc_ctx_free(ctx);
  return rc ? 1 : 0;
}

static void print_hw(const sc_hw *hw) {
  printf("%s: %s\n", hw->name, hw->description);
  printf("  peak dense   fp32 %.1f  tf32 %.1f  bf16/fp16 %.1f  fp8 %.1f TFLOP/s\n",
         hw->fp32_tflops, hw->tf32_tflops, hw->bf16_tflops, hw->fp8_tflops);
  printf("  memory       %.0f GiB at %.0f GB/s, %d SMs\n", hw->hbm_gib, hw->hbm_gbps, hw->sms);
  printf("  links        NVLink %.0f GB/s per direction, NIC %.0f Gb/s per GPU, %d GPUs/node\n",
         hw->nvlink_gbps, hw->nic_gbps, hw->gpus_per_node);
  printf("  source       %s\n", hw->source);
}

static int cmd_hw(int argc, char **argv) {
  if (argc >= 1 && !strcmp(argv[0], "list")) {
    printf("%-12s %9s %9s %8s %8s  %s\n", "name", "bf16 TF", "fp8 TF", "HBM GiB", "HBM GB/s",
           "description");
    for (size_t i = 0; i < sc_hw_count(); i++) {
      const sc_hw *hw = sc_hw_at(i);
      printf("%-12s %9.1f %9.1f %8.0f %8.0f  %s\n", hw->name, hw->bf16_tflops, hw->fp8_tflops,
             hw->hbm_gib, hw->hbm_gbps, hw->description);
    }
    return 0;
  }
  if (argc >= 2 && !strcmp(argv[0], "show")) {
    const sc_hw *hw = sc_hw_find(argv[1]);
    if (!hw) {
      fprintf(stderr, "stepcast: unknown gpu \"%s\" (see `stepcast hw list`)\n", argv[1]);
      return 2;
    }
    print_hw(hw);
    return 0;
  }
  fprintf(stderr, "usage: stepcast hw list | hw show NAME\n");
  return 2;
}

/* Subcommands implemented in their own cli/cmd_*.c files (commands.h).
 * Each takes the arguments after its name and returns the exit code. */
static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} commands[] = {
    {"run", cmd_run},
    {"hw", cmd_hw},
    {"validate", sc_cli_validate},
    {"sweep", sc_cli_sweep},
    {"comm", sc_cli_comm},
    {"calibrate", sc_cli_calibrate},
    {"import", sc_cli_import},
    {"replay", sc_cli_replay},
    /* more subcommands: one line each, keep this comment last */
};

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 2, argv + 2);
  if (!strcmp(cmd, "presets")) {
    for (size_t i = 0; i < sc_model_preset_count(); i++) printf("%s\n", sc_model_preset_name(i));
    return 0;
  }
  if (!strcmp(cmd, "config-docs")) return sc_config_write_docs(sc_cli_write_file, stdout) ? 1 : 0;
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("stepcast %s\n", SC_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "stepcast: unknown command \"%s\"\n", cmd);
  usage(stderr);
  return 2;
}
