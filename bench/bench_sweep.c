/*
 * bench_sweep.c: speed of configuration sweeps (BLUEPRINT section 7: "sweeps
 * of thousands of configs per minute"). Not a test: runs the sweeps of the
 * scale targets, exhaustive (every candidate that fits is simulated) and
 * bounded for a top 10 (sc_sweep_opts.top_k: dominated candidates are
 * skipped), and prints the candidate, pruning, dominated and simulated
 * counts, and per CPU-second of process 0 the candidates decided (every
 * enumerated one: pruned, dominated or simulated) and those that fit
 * (simulated or dominated).
 *   bench_sweep [--quick]                      one process
 *   mpirun -np 2 bench_sweep [--quick]         MPI build (SC_MPI): 2 processes
 * --quick restricts each sweep to TP 8 and two recompute modes.
 */
#include "stepcast/sweep.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct scenario {
  const char *name;
  const char *sets[8];
  int64_t gpus;
} scenario;

static double now_s(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run(sc_ctx *ctx, const scenario *sc, int quick, int64_t top_k, int procs, int root) {
  sc_config cfg;
  if (sc_config_example(ctx, &cfg)) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  for (int i = 0; i < 8 && sc->sets[i]; i++)
    if (sc_config_set(ctx, &cfg, sc->sets[i])) {
      if (root) fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
      return 1;
    }
  sc_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.gpus = sc->gpus;
  o.top_k = top_k;
  if (quick) {
    o.tp.n = 1;
    o.tp.v[0] = 8;
    o.recompute.n = 2;
    o.recompute.v[0] = SC_RECOMPUTE_SELECTIVE;
    o.recompute.v[1] = SC_RECOMPUTE_FULL;
  }
  sc_sweep_result r;
  double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
  int rc = sc_sweep_run(ctx, &cfg, &o, &r);
  double wall = now_s(CLOCK_MONOTONIC) - w0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (rc) {
    if (root) fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  if (root) {
    int64_t dominated = r.excluded[SC_SWEEP_DOMINATED], pruned = -dominated;
    for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++) pruned += r.excluded[i];
    int64_t fit = r.simulated + dominated;
    printf("%-34s %s %s procs %d  candidates %6" PRId64 "  pruned %6" PRId64
           "  dominated %5" PRId64 "  refined %5" PRId64 "  simulated %5" PRId64 "  wall %6.2f s  cpu %6.2f s"
           "  decided %7.0f/cpu-s  fitting %7.0f/cpu-s\n",
           sc->name, quick ? "quick" : "full ", top_k ? "top10" : "all  ", procs, r.candidates,
           pruned, dominated, r.refined, r.simulated, wall, cpu, (double)r.candidates / cpu,
           (double)fit / cpu);
    fflush(stdout);
  } else {
    /* CPU per process shows the balance (wall times on a shared machine
     * do not): process 0's figure is on its line above. */
    fprintf(stderr, "  %s: process %d cpu %.2f s\n", sc->name, sc_sweep_procs_rank(), cpu);
  }
  sc_sweep_result_free(ctx, &r);
  return 0;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  if (sc_sweep_procs_init(&argc, &argv)) {
    fprintf(stderr, "bench_sweep: cannot start MPI\n");
    return 1;
  }
  int procs = sc_sweep_procs_count(), root = sc_sweep_procs_rank() == 0;
  static const scenario scenarios[] = {
      {"gpt3-175b 1024 A100 (SC21 batch)", {NULL}, 1024},
      {"llama3-70b 512 H100 batch 512",
       {"model.preset=llama3-70b", "cluster.gpu=h100-sxm", "training.precision=bf16",
        "training.global_batch=512", "cluster.num_gpus=512"},
       512},
  };
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 1;
  int rc = 0;
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0] && !rc; i++)
    for (int b = 0; b < 2 && !rc; b++) rc = run(ctx, &scenarios[i], quick, b ? 10 : 0, procs, root);
  sc_ctx_free(ctx);
  sc_sweep_procs_finalize();
  return rc;
}
