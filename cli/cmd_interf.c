/*
 * cmd_interf.c: `stepcast calibrate --interference TRACES... [-o site.yaml]`:
 * reads Kineto traces through the library's streaming reader, fits the
 * learned interference model (include/stepcast/interference.h), prints the
 * held-out accuracy and writes the `calibration:` YAML. Parsing and printing
 * only.
 */
#include "stepcast/interference.h"

#include "cmd_interf.h"
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRACES 256

static void usage(FILE *f) {
  fprintf(f,
          "usage: stepcast calibrate --interference TRACE.json[.gz] ... [-o site.yaml]\n"
          "                          [--min-kernel-us US] [--min-alone N] [--max-spread F]\n"
          "                          [--min-overlap F] [--shape-tol F] [--ridge L]\n"
          "                          [--huber F] [--folds K]\n"
          "Pairs every compute kernel of Kineto traces overlapped by an NCCL kernel with\n"
          "the same kernel (name, grid, block) alone, fits the learned interference model\n"
          "(simulation.interference: learned) and reports its error on held-out kernels\n"
          "(default: each kernel predicted by the fit on the others, 10 folds beyond 200\n"
          "kernels; --folds K: K folds by name hash; -1: none) and held-out traces.\n"
          "Writes the `calibration:` mapping of interference_w_* keys to -o (else stdout).\n"
          "docs/INTERFERENCE.md.\n");
}

static int number(const char *opt, const char *v, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || x != x) {
    fprintf(stderr, "stepcast: %s: expected a number, got \"%s\"\n", opt, v);
    return 0;
  }
  *out = x;
  return 1;
}

int sc_cli_calibrate_interference(int argc, char **argv) {
  const char *files[MAX_TRACES], *outpath = NULL;
  int nfiles = 0, in_files = 0;
  sc_interf_extract_options ex;
  sc_interf_fit_options fo;
  memset(&ex, 0, sizeof ex);
  memset(&fo, 0, sizeof fo);
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--interference")) {
      in_files = 1;
      continue;
    }
    if (a[0] != '-' || !a[1]) {
      if (!in_files) {
        fprintf(stderr, "stepcast: calibrate: unexpected argument %s\n", a);
        usage(stderr);
        return 2;
      }
      if (nfiles == MAX_TRACES) {
        fprintf(stderr, "stepcast: calibrate: more than %d traces\n", MAX_TRACES);
        return 2;
      }
      files[nfiles++] = a;
      continue;
    }
    in_files = 0;
    if (i + 1 >= argc) {
      fprintf(stderr, "stepcast: calibrate: %s needs a value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    double x = 0;
    if (!strcmp(a, "-o")) {
      outpath = v;
      continue;
    }
    if (!number(a, v, &x)) return 2;
    if (!strcmp(a, "--min-kernel-us")) ex.min_kernel_us = x;
    else if (!strcmp(a, "--min-alone")) ex.min_alone = (int)x;
    else if (!strcmp(a, "--max-spread")) ex.max_spread = x;
    else if (!strcmp(a, "--min-overlap")) ex.min_overlap = x;
    else if (!strcmp(a, "--shape-tol")) ex.shape_tol = x;
    else if (!strcmp(a, "--ridge")) fo.ridge = x;
    else if (!strcmp(a, "--huber")) fo.huber = x;
    else if (!strcmp(a, "--folds")) fo.folds = (int)x;
    else {
      fprintf(stderr, "stepcast: calibrate: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!nfiles) {
    fprintf(stderr, "stepcast: calibrate --interference needs trace files\n");
    usage(stderr);
    return 2;
  }
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) {
    fprintf(stderr, "stepcast: out of memory\n");
    return 1;
  }
  sc_interf_data *d = NULL;
  int rc = sc_interf_data_new(ctx, &ex, &d), code = 0;
  for (int i = 0; !rc && i < nfiles; i++) rc = sc_interf_load_file(d, files[i]);
  sc_interf_fit_result res;
  sc_interf_stats st;
  if (!rc) {
    sc_interf_data_stats(d, &st);
    rc = sc_interf_fit(d, &fo, &res);
  }
  if (!rc) {
    FILE *report = outpath ? stdout : stderr;
    rc = sc_interf_write_report(&res, &st, sc_cli_write_file, report);
  }
  if (!rc) {
    char note[4096];
    size_t len = (size_t)snprintf(note, sizeof note,
                                  "fitted by `stepcast calibrate --interference` on:");
    for (int i = 0; i < nfiles && len < sizeof note; i++)
      len += (size_t)snprintf(note + len, sizeof note - len, "\n  %s", files[i]);
    FILE *out = outpath ? fopen(outpath, "w") : stdout;
    if (!out) {
      fprintf(stderr, "stepcast: %s: cannot open: %s\n", outpath, strerror(errno));
      code = 2;
    } else {
      rc = sc_interf_write_calibration(&res, &st, note, sc_cli_write_file, out);
      if (outpath && fclose(out) && !rc) {
        fprintf(stderr, "stepcast: %s: write failed\n", outpath);
        code = 1;
      }
    }
  }
  if (rc) {
    fprintf(stderr, "stepcast: %s\n", sc_errmsg(ctx)[0] ? sc_errmsg(ctx) : sc_strerror(rc));
    code = sc_exit_code(rc);
  }
  sc_interf_data_free(d);
  sc_ctx_free(ctx);
  return code;
}
