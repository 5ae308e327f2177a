/*
 * case_memory.c: the memory estimate of every row of case files, as
 * `stepcast validate` builds each row's configuration (its defaults and
 * framework rules), on the public API only: one line per case with the peak
 * stage's total, the first and last stage's, and the micro-batch. What
 * docs/MEMORY.md's torchtitan table reads. Built and run by
 * tools/case_memory.sh; not part of the library.
 *   case_memory CASES.csv... [--set SECTION.KEY=VALUE]... [--stages]
 */
#include <stdio.h>
#include <string.h>

#include <stepcast/memory.h>
#include <stepcast/stepcast.h>
#include <stepcast/validate.h>

#define GIB 1073741824.0
#define MAX_SETS 32

static int write_out(void *ud, const char *buf, size_t len) {
  return fwrite(buf, 1, len, (FILE *)ud) == len ? 0 : SC_EWRITE;
}

int main(int argc, char **argv) {
  sc_ctx *ctx;
  sc_caseset *set;
  const char *sets[MAX_SETS];
  size_t nsets = 0;
  int stages = 0, rc = 0;
  if (sc_ctx_new(NULL, NULL, &ctx) || sc_caseset_new(ctx, &set)) return 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--stages")) {
      stages = 1;
    } else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < MAX_SETS) {
      sets[nsets++] = argv[++i];
    } else if (sc_caseset_load_file(set, argv[i])) {
      fprintf(stderr, "case_memory: %s\n", sc_errmsg(ctx));
      return 2;
    }
  }
  sc_validate_options opt = {NULL, sets, nsets};
  printf("%-48s %8s %5s %8s %8s %4s\n", "case", "peak GiB", "stage", "first", "last", "mb");
  for (size_t i = 0; i < sc_caseset_count(set); i++) {
    const sc_case *c = sc_caseset_case(set, i);
    sc_config cfg;
    sc_memory_report r;
    if (sc_case_config(ctx, c, &opt, &cfg) || sc_memory_estimate(ctx, &cfg, &r)) {
      printf("%-48s %s\n", c->id, sc_errmsg(ctx));
      continue;
    }
    printf("%-48s %8.2f %5lld %8.2f %8.2f %4lld\n", c->id, r.peak_gib, (long long)r.peak_stage,
           r.stages[0].total_bytes / GIB, r.stages[r.nstages - 1].total_bytes / GIB,
           (long long)cfg.training.micro_batch);
    if (stages) rc |= sc_memory_format(&cfg, &r, SC_FORMAT_TEXT, write_out, stdout);
    sc_memory_report_free(ctx, &r);
  }
  sc_caseset_free(set);
  sc_ctx_free(ctx);
  return rc ? 1 : 0;
}
