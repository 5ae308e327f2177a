/*
 * cmd_diff.c: `stepcast diff A.json B.json`: reads two results saved by
 * `run --format json` or `run -o DIR` (result.json) and prints what changed,
 * category by category (sc_result_read_json, sc_result_diff_format).
 * Parsing and printing only.
 */
#include "stepcast/stepcast.h"

#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Results are a few KiB; a file above this is not one. */
#define RESULT_MAX_BYTES (16u << 20)

/* Reads path into a malloc'd buffer; exit code (after printing) or 0. */
static int read_result(const char *path, char **text, size_t *len) {
  FILE *f = sc_cli_open_regular(path);
  if (!f) return sc_exit_code(SC_EREAD);
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap || ferror(f)) break;
    if (cap >= RESULT_MAX_BYTES) {
      fclose(f);
      free(buf);
      return sc_cli_error(sc_exit_code(SC_EINVAL), "%s: larger than 16 MiB: not a result", path);
    }
    char *more = realloc(buf, cap * 2);
    if (!more) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = more;
    cap *= 2;
  }
  int bad = !buf || ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return buf ? sc_cli_error(sc_exit_code(SC_EREAD), "%s: read failed", path)
               : sc_cli_fail(NULL, SC_ENOMEM);
  }
  *text = buf;
  *len = n;
  return 0;
}

int sc_cli_diff(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *files[2] = {NULL, NULL};
  int nfiles = 0;
  sc_format fmt = SC_FORMAT_TEXT;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = 0, code = 0;
  while (!code && (r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (nfiles == 2) code = sc_cli_usage_error(cmd, "more than two results given (%s)", a.value);
      else files[nfiles++] = a.value;
    } else if (sc_cli_is(&a, "--format")) fmt = a.choice ? SC_FORMAT_JSON : SC_FORMAT_TEXT;
    else code = sc_cli_unhandled(&a);
  }
  if (!code && r < 0) code = a.exit;
  if (!code && !r && nfiles < 2) code = sc_cli_usage_error(cmd, "give two result files");
  if (code || r < 0) return code;
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return sc_cli_fail(NULL, SC_ENOMEM);
  sc_result res[2];
  int rc = 0;
  for (int i = 0; i < 2 && !rc && !code; i++) {
    char *text = NULL;
    size_t len = 0;
    if ((code = read_result(files[i], &text, &len))) break;
    rc = sc_result_read_json(ctx, files[i], text, len, &res[i]);
    free(text);
  }
  if (!rc && !code) {
    rc = sc_result_diff_format(&res[0], &res[1], files[0], files[1], fmt, sc_cli_write_file, stdout);
    if (rc == SC_EWRITE || (!rc && fflush(stdout))) code = sc_cli_write_error("stdout", 1), rc = 0;
  }
  if (rc && !code) code = sc_cli_fail(ctx, rc);
  sc_ctx_free(ctx);
  return code;
}
