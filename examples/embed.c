/*
 * embed.c: libstepcast embedded in a program of your own, using only the
 * installed public header. Simulates one training step and prints the step
 * time, throughput, MFU and where the time goes.
 *
 *   embed [CONFIG.yaml] [--set section.key=value]... [--json]
 *
 * Without a CONFIG it simulates the built-in default example (GPT-3 175B on
 * 1,024 A100-80GB, TP8 PP16 DP8); --set overrides one field as the CLI's
 * `stepcast run --set` does (docs/CONFIG.md lists every key); --json also
 * prints the library's JSON summary. Build it against an installed prefix:
 *
 *   cc -std=c11 embed.c $(pkg-config --cflags --libs --static stepcast) -o embed
 *
 * (--static: libstepcast is a static library, so its dependencies, libyaml,
 * zlib, libzstd, libprotobuf-c and libm, must be linked too.)
 */
#include <stepcast/stepcast.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An allocator hook (optional: sc_ctx_new(NULL, NULL, &ctx) uses malloc).
 * Every allocation of the library goes through it, Lua-style: nsize == 0
 * frees, anything else reallocates. This one counts the bytes in use and
 * their peak. */
typedef struct {
  size_t in_use, peak;
} alloc_stats;

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  alloc_stats *st = ud;
  if (nsize == 0) {
    free(ptr);
    st->in_use -= osize;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p) {
    st->in_use += nsize - osize; /* unsigned wrap-around makes shrinking work too */
    if (st->in_use > st->peak) st->peak = st->in_use;
  }
  return p;
}

/* A write sink (sc_write_fn) for the library's formatters: here stdout. */
static int write_stdout(void *ud, const char *buf, size_t len) {
  (void)ud;
  return fwrite(buf, 1, len, stdout) == len ? SC_OK : SC_EWRITE;
}

/* Prints an error the way the CLI does and returns the matching exit code
 * (2 for invalid input, 1 for a failed simulation, ...). sc_errmsg holds the
 * context's last message, "file:line: message" for input errors. */
static int fail(const sc_ctx *ctx, int rc) {
  const char *msg = ctx ? sc_errmsg(ctx) : "";
  fprintf(stderr, "embed: %s\n", msg[0] ? msg : sc_strerror(rc));
  return sc_exit_code(rc);
}

int main(int argc, char **argv) {
  const char *config_path = NULL;
  int json = 0;

  alloc_stats stats = {0, 0};
  sc_ctx *ctx;
  int rc = sc_ctx_new(counting_alloc, &stats, &ctx); /* out-parameter last */
  if (rc) return fail(NULL, rc);

  /* 1. The config: a YAML file on the neutral defaults (fields the file
   *    does not give keep their documented defaults), or without one the
   *    built-in example, as `stepcast run` does. */
  sc_config cfg;
  sc_config_default(&cfg);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--set") == 0) i++;
    else if (argv[i][0] != '-') config_path = argv[i];
  }
  if (!config_path) rc = sc_config_example(ctx, &cfg);
  for (int i = 1; !rc && i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--set") == 0 || argv[i][0] == '-') {
      if (strcmp(argv[i], "--set") != 0 || i + 1 >= argc) {
        fprintf(stderr, "usage: %s [CONFIG.yaml] [--set section.key=value]... [--json]\n",
                argv[0]);
        sc_ctx_free(ctx);
        return 2;
      }
      i++; /* applied below, after the file */
    } else if (argv[i] == config_path) {
      rc = sc_config_load_file(ctx, &cfg, config_path);
    } else {
      fprintf(stderr, "embed: more than one config file given (%s)\n", argv[i]);
      sc_ctx_free(ctx);
      return 2;
    }
  }
  /* 2. --set overrides, in order, after the file (as `stepcast run` does). */
  for (int i = 1; !rc && i + 1 < argc; i++)
    if (strcmp(argv[i], "--set") == 0) rc = sc_config_set(ctx, &cfg, argv[++i]);
  /* 3. Derive the defaults (dp, nodes, ...) and check the whole config. */
  if (!rc) rc = sc_config_resolve(ctx, &cfg);

  /* 4. Simulate one step; no Chrome trace (NULL sink). */
  sc_result res;
  if (!rc) rc = sc_simulate(ctx, &cfg, NULL, NULL, &res);
  if (rc) {
    int code = fail(ctx, rc);
    sc_ctx_free(ctx);
    return code;
  }

  /* 5. Read the result struct directly... */
  printf("libstepcast %s (header %s): %s on %lld x %s\n", sc_version(), SC_VERSION,
         cfg.model.name, (long long)res.num_gpus, cfg.cluster.gpu);
  printf("  config          %s\n", config_path ? config_path : "(built-in default)");
  printf("  parallel        TP=%lld PP=%lld DP=%lld\n", (long long)cfg.parallel.tp,
         (long long)cfg.parallel.pp, (long long)cfg.parallel.dp);
  printf("  step time       %10.3f s\n", res.step_time_s);
  printf("  tokens/s        %10.0f\n", res.tokens_per_s);
  printf("  TFLOP/s per GPU %10.1f\n", res.tflops_per_gpu);
  printf("  MFU             %10.1f %%\n", 100.0 * res.mfu);
  printf("  memory per GPU  %10.1f GiB of %.0f GiB\n", res.memory_gib, res.memory_capacity_gib);
  printf("  breakdown (mean over ranks)\n");
  for (int c = 0; c < SC_CAT_COUNT; c++)
    printf("    %-18s %9.3f s  %5.1f %%\n", sc_category_label(c), res.breakdown_s[c],
           res.step_time_s > 0 ? 100.0 * res.breakdown_s[c] / res.step_time_s : 0.0);
  printf("  library memory  %10.1f MiB peak\n", (double)stats.peak / (1024.0 * 1024.0));

  /* ...or let the library format it (text, JSON or CSV) into a sink. */
  if (json) {
    rc = sc_result_format(&cfg, &res, SC_FORMAT_JSON, write_stdout, NULL);
    if (rc) {
      int code = fail(ctx, rc);
      sc_ctx_free(ctx);
      return code;
    }
  }

  sc_ctx_free(ctx);
  return fflush(stdout) == 0 ? 0 : sc_exit_code(SC_EWRITE);
}
