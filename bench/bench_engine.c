/*
 * bench_engine.c: speed and memory of the simulator on the scale targets
 * (BLUEPRINT section 7). Not a test: prints wall time, CPU time, peak RSS,
 * ops/s, events/s and ns per event for each scenario so figures can be
 * recorded in notes (docs/PERFORMANCE.md).
 *   bench_engine [--quick]       the scenarios (--quick: the folded ones)
 *   bench_engine --scaling [MAX] Llama-3 405B unfolded from 1,024 GPUs to MAX
 *                                (default 131,072): time per simulated rank
 *   bench_engine --scaling-at N  one row of its first series (N GPUs), best
 *                                of 3 runs: for A/B pairs of one size
 *   bench_engine --events [GB]   ns per event with interference (no merging);
 *                                GB: a smaller global batch (default 1536) for
 *                                callgrind, the same ops per micro-batch, no
 *                                critical path (as the full run: over 16M ops)
 *   bench_engine --variation     what-if variations (docs/WHATIF.md): one slow
 *                                GPU against the folded run, per-GPU variability
 * Each scaling row runs in a child process, so its peak RSS is its own. The
 * scaling rows simulate without the critical path (sc_simulate_ex); column
 * `cp us/rank` is the same with it, where it is recorded (up to 4M ops).
 */
#include "stepcast/stepcast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SETS 12

typedef struct scenario {
  const char *name;
  const char *sets[MAX_SETS];
  unsigned flags; /* sc_simulate_ex: SC_SIM_CRITICAL_PATH as `run` records it, or 0 */
} scenario;

typedef struct measure {
  sc_result r;
  double wall_s, cpu_s;
} measure;

static double now_s(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Simulates sc's config into *m; 0 or 1 (message on stderr). */
static int simulate(sc_ctx *ctx, const scenario *sc, measure *m) {
  sc_config cfg;
  if (sc_config_example(ctx, &cfg)) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  for (int i = 0; i < MAX_SETS && sc->sets[i]; i++)
    if (sc_config_set(ctx, &cfg, sc->sets[i])) {
      fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
      return 1;
    }
  if (sc_config_resolve(ctx, &cfg)) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
  int rc = sc_simulate_ex(ctx, &cfg, sc->flags, NULL, NULL, &m->r);
  m->wall_s = now_s(CLOCK_MONOTONIC) - w0;
  m->cpu_s = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (rc) {
    fprintf(stderr, "%s: %s\n", sc->name, sc_errmsg(ctx));
    return 1;
  }
  return 0;
}

static double peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

static int run(sc_ctx *ctx, const scenario *sc) {
  measure m;
  if (simulate(ctx, sc, &m)) return 1;
  printf("%-44s ranks %6lld  step %8.3f s  wall %7.3f s  cpu %7.3f s  ops %10lld  events %10lld  "
         "%6.1f M ops/s  %6.1f M events/s  %5.1f ns/event  peak RSS %7.1f MB\n",
         sc->name, (long long)m.r.simulated_ranks, m.r.step_time_s, m.wall_s, m.cpu_s,
         (long long)m.r.ops, (long long)m.r.events, (double)m.r.ops / m.wall_s / 1e6, (double)m.r.events / m.wall_s / 1e6,
         m.cpu_s / (double)m.r.events * 1e9, peak_rss_mb());
  fflush(stdout);
  return 0;
}

/* Llama-3 405B as Meta trained it (TP8 PP16; 126 layers rounded to 128
 * because stages must be even here) on gpus H100s, unfolded. */
static scenario llama405(char bufs[3][48], long gpus, long global_batch, const char *interf) {
  snprintf(bufs[0], 48, "cluster.num_gpus=%ld", gpus);
  snprintf(bufs[1], 48, "training.global_batch=%ld", global_batch);
  snprintf(bufs[2], 48, "simulation.interference=%s", interf);
  scenario sc = {"llama3-405b",
                 {"model.preset=llama3-405b", "model.layers=128", "cluster.gpu=h100-sxm",
                  "parallel.pp=16", "training.precision=bf16", "simulation.fold=0", bufs[0],
                  bufs[1], bufs[2]},
                 0};
  return sc;
}

/* One row of a scaling table, simulated in a child process (its own peak
 * RSS; a big run's heap does not linger into the next). The best of `reps`
 * CPU times: the machine is shared, and the smallest rows last ~0.1 s. */
static int scaling_row(const scenario *sc, long gpus, int reps) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    sc_ctx *ctx;
    if (sc_ctx_new(NULL, NULL, &ctx)) _exit(1);
    measure best, m;
    int rc = 0;
    for (int i = 0; i < reps && !rc; i++) {
      rc = simulate(ctx, sc, &m);
      if (!rc && (i == 0 || m.cpu_s < best.cpu_s)) best = m;
    }
    double rss = peak_rss_mb(), ranks = (double)best.r.simulated_ranks;
    /* The same with the critical path recorded, as `run` does (only up to
     * 4M simulated ops, so only on the small rows; else "-"). */
    char cp[32] = "-";
    scenario with = *sc;
    with.flags = SC_SIM_CRITICAL_PATH;
    measure cbest;
    for (int i = 0; i < reps && !rc && gpus <= 8192; i++) {
      rc = simulate(ctx, &with, &m);
      if (!rc && (i == 0 || m.cpu_s < cbest.cpu_s)) cbest = m;
      if (!rc && cbest.r.critical_path_ops > 0)
        snprintf(cp, sizeof cp, "%.2f", cbest.cpu_s / ranks * 1e6);
    }
    if (!rc)
      printf("%8ld %8lld %12lld %12lld %9.3f %9.3f %10.2f %8.1f %9.1f %11s\n", gpus,
             (long long)best.r.simulated_ranks, (long long)best.r.ops, (long long)best.r.events,
             best.wall_s, best.cpu_s, best.cpu_s / ranks * 1e6,
             best.cpu_s / (double)best.r.events * 1e9, rss, cp);
    fflush(stdout);
    sc_ctx_free(ctx);
    _exit(rc);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) return 1;
  return 0;
}

static void scaling_header(const char *title) {
  printf("\n%s\n%8s %8s %12s %12s %9s %9s %10s %8s %9s %11s\n", title, "GPUs", "ranks", "ops",
         "events", "wall s", "cpu s", "us/rank", "ns/event", "RSS MB", "cp us/rank");
}

/* Two series over DP 8 ... max_gpus / 128: the same work per rank (16
 * micro-batches per replica: global batch 16 x dp), where time per
 * simulated rank should stay flat, and the fixed global batch of
 * 2048 (the ops stay ~86M while the ranks grow). */
static int scaling(long max_gpus) {
  char bufs[3][48];
  int rc = 0;
  scaling_header("llama3-405b(128 layers) TP8 PP16 H100 unfolded, 16 micro-batches per replica");
  for (long dp = 8; !rc && dp * 128 <= max_gpus; dp *= 2) {
    scenario sc = llama405(bufs, dp * 128, 16 * dp, "none");
    rc = scaling_row(&sc, dp * 128, dp * 128 <= 8192 ? 3 : 1);
  }
  scaling_header("llama3-405b(128 layers) TP8 PP16 H100 unfolded, global batch 2048");
  for (long dp = 8; !rc && dp * 128 <= max_gpus; dp *= 2) {
    scenario sc = llama405(bufs, dp * 128, 2048, "none");
    rc = scaling_row(&sc, dp * 128, 1);
  }
  return rc;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  int events = argc > 1 && !strcmp(argv[1], "--events");
  int variation = argc > 1 && !strcmp(argv[1], "--variation");
  if (argc > 2 && !strcmp(argv[1], "--scaling-at")) { /* one row of the first series, 3 runs */
    long gpus = strtol(argv[2], NULL, 10);
    if (gpus < 1024 || gpus % 128) return 2;
    char bufs[3][48];
    scaling_header("llama3-405b(128 layers) TP8 PP16 H100 unfolded, 16 micro-batches per replica");
    scenario sc = llama405(bufs, gpus, 16 * (gpus / 128), "none");
    return scaling_row(&sc, gpus, 3);
  }
  if (argc > 1 && !strcmp(argv[1], "--scaling")) {
    long max_gpus = argc > 2 ? strtol(argv[2], NULL, 10) : 131072;
    return scaling(max_gpus > 0 ? max_gpus : 131072);
  }
  static const scenario scenarios[] = {
      {"gpt3-175b 1024 A100 folded", {"simulation.fold=1"}, SC_SIM_CRITICAL_PATH},
      {"gpt3-175b 1024 A100 unfolded", {"simulation.fold=0"}, SC_SIM_CRITICAL_PATH},
      /* No merging: every op is an event, at rates that change (the
       * ns-per-event target of issue 19). */
      {"gpt3-175b 1024 A100 unfolded interference",
       {"simulation.fold=0", "simulation.interference=constant"},
       SC_SIM_CRITICAL_PATH},
      {"gpt3-175b 1024 A100 unfolded interleaved v2",
       {"simulation.fold=0", "parallel.vpp=2"},
       SC_SIM_CRITICAL_PATH},
      /* Llama-3 405B as Meta trained it on 16K H100s (TP8 PP16 DP128); 126
       * layers are rounded to 128 because stages must be even here. */
      {"llama3-405b(128 layers) 16384 H100 folded",
       {"model.preset=llama3-405b", "model.layers=128", "cluster.gpu=h100-sxm",
        "cluster.num_gpus=16384", "parallel.pp=16", "training.global_batch=2048",
        "training.precision=bf16", "simulation.fold=1"},
       SC_SIM_CRITICAL_PATH},
      /* What-if variation: one slow GPU splits only its replica's classes
       * (256 simulated ranks of 131,072); per-GPU variability simulates
       * every rank. */
      {"variation: llama3-405b 131072 H100 folded, none",
       {"model.preset=llama3-405b", "model.layers=128", "cluster.gpu=h100-sxm",
        "cluster.num_gpus=131072", "parallel.pp=16", "training.global_batch=16384",
        "training.precision=bf16", "simulation.fold=1"},
       SC_SIM_CRITICAL_PATH},
      {"variation: llama3-405b 131072 H100 one slow GPU",
       {"model.preset=llama3-405b", "model.layers=128", "cluster.gpu=h100-sxm",
        "cluster.num_gpus=131072", "parallel.pp=16", "training.global_batch=16384",
        "training.precision=bf16", "simulation.fold=1",
        "variation.slow_gpus=ranks=70000 speed=0.9"},
       SC_SIM_CRITICAL_PATH},
      {"variation: gpt3-175b 1024 A100 one slow GPU",
       {"variation.slow_gpus=ranks=5 speed=0.8"}, SC_SIM_CRITICAL_PATH},
      {"variation: gpt3-175b 1024 A100 gpu_speed_sigma 0.03 (every rank, unfolded)",
       {"variation.gpu_speed_sigma=0.03"}, SC_SIM_CRITICAL_PATH},
  };
  sc_ctx *ctx;
  if (sc_ctx_new(NULL, NULL, &ctx)) return 1;
  /* Fewer micro-batches: a run callgrind takes in seconds. Without the
   * critical path, as the full run (48M ops, over the 16M it is kept for). */
  if (events && argc > 2) {
    char batch[48];
    snprintf(batch, sizeof batch, "training.global_batch=%ld", strtol(argv[2], NULL, 10));
    scenario small = {"gpt3-175b 1024 A100 unfolded interference",
                      {"simulation.fold=0", "simulation.interference=constant", batch},
                      0};
    int rc = run(ctx, &small);
    sc_ctx_free(ctx);
    return rc;
  }
  size_t n = sizeof scenarios / sizeof scenarios[0];
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    int unfolded = strstr(scenarios[i].name, "unfolded") != NULL;
    int interf = strstr(scenarios[i].name, "interference") != NULL;
    int vary = !strncmp(scenarios[i].name, "variation", 9);
    if ((quick && unfolded) || (events && !interf) || variation != vary) continue;
    rc = run(ctx, &scenarios[i]);
  }
  sc_ctx_free(ctx);
  return rc;
}
