/*
 * bench_engine.c: speed and memory of the simulator on the scale targets
 * (BLUEPRINT section 7). Not a test: prints wall time, CPU time, peak RSS,
 * ops/s and events/s for each scenario so figures can be recorded in notes.
 *   bench_engine [--quick]
 */
#include "stepcast/stepcast.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct scenario {
  const char *name;
  const char *sets[8];
} scenario;

static double now_s(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run(sc_ctx *ctx, const scenario *sc) {
  sc_config cfg;
  if (sc_config_example(ctx, &cfg)) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  for (int i = 0; i < 8 && sc->sets[i]; i++)
    if (sc_config_set(ctx, &cfg, sc->sets[i])) {
      fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
      return 1;
    }
  if (sc_config_resolve(ctx, &cfg)) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  sc_result r;
  double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
  int rc = sc_simulate(ctx, &cfg, NULL, NULL, &r);
  double wall = now_s(CLOCK_MONOTONIC) - w0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (rc) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%-44s ranks %6lld  step %8.3f s  wall %7.3f s  cpu %7.3f s  ops %10lld  "
         "%6.1f M ops/s  %6.1f M events/s  peak RSS %7.1f MB\n",
         sc->name, (long long)r.simulated_ranks, r.step_time_s, wall, cpu, (long long)r.ops,
         (double)r.ops / wall / 1e6, (double)r.events / wall / 1e6, (double)ru.ru_maxrss / 1024.0);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  static const scenario scenarios[] = {
      {"gpt3-175b 1024 A100 folded", {"simulation.fold=1"}},
      {"gpt3-175b 1024 A100 unfolded", {"simulation.fold=0"}},
      {"gpt3-175b 1024 A100 unfolded interleaved v2",
       {"simulation.fold=0", "parallel.vpp=2"}},
      /* Llama-3 405B as Meta trained it on 16K H100s (TP8 PP16 DP128); 126
       * layers are rounded to 128 because stages must be even here. */
      {"llama3-405b(128 layers) 16384 H100 folded",
       {"model.preset=llama3-405b", "model.layers=128", "cluster.gpu=h100-sxm",
        "cluster.num_gpus=16384", "parallel.pp=16", "training.global_batch=2048",
        "training.precision=bf16", "simulation.fold=1"}},
  };
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 1;
  size_t n = sizeof scenarios / sizeof scenarios[0];
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (quick && strstr(scenarios[i].name, "unfolded")) continue;
    rc = run(ctx, &scenarios[i]);
  }
  sc_ctx_free(ctx);
  return rc;
}
