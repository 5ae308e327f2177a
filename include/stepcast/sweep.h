/*
 * sweep.h: configuration search. From a base config and a GPU count, a sweep
 * enumerates the parallel layouts and training knobs (TP, PP, DP, interleaving,
 * micro-batch, sequence parallelism, recompute, distributed optimizer), prunes
 * those that violate divisibility or do not fit memory (counting each reason),
 * simulates the rest (folded) and ranks them by throughput. Results can be
 * appended to a CSV file row by row and a killed sweep resumed from it. Built
 * with SC_MPI, the same call splits the work over MPI processes and gives the
 * same ranking and file as one process.
 *
 * Ownership: sc_sweep_result.rows is allocated through the context hook and
 * released with sc_sweep_result_free. The options struct is borrowed.
 * Determinism: enumeration order, ranking (ties broken by the enumeration
 * order of the config) and the CSV file are independent of timing, process
 * count and interruptions.
 */
#ifndef STEPCAST_SWEEP_H
#define STEPCAST_SWEEP_H

#include "stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(id, key, text): why a candidate was not simulated, in the order the
 * checks run (a candidate counts under its first failing reason). */
#define SC_SWEEP_REASON_LIST(X)                                                          \
  X(SC_SWEEP_TP_SHAPE, "tp_shape", "tp does not divide heads, ffn or kv heads")          \
  X(SC_SWEEP_PP_LAYERS, "pp_layers", "pp does not divide layers")                        \
  X(SC_SWEEP_BATCH, "batch", "global batch not divisible by micro_batch*dp")              \
  X(SC_SWEEP_INTERLEAVE, "interleave", "interleaving needs micro-batches divisible by pp") \
  X(SC_SWEEP_SP_SEQ, "sp_seq", "seq_len not divisible by tp (sequence parallel)")         \
  X(SC_SWEEP_INVALID, "invalid", "rejected by config validation")                         \
  X(SC_SWEEP_MEMORY, "memory", "does not fit GPU memory")                                 \
  X(SC_SWEEP_SIM_ERROR, "sim_error", "simulation failed")

typedef enum {
#define SC_X_ENUM(id, key, text) id,
  SC_SWEEP_REASON_LIST(SC_X_ENUM)
#undef SC_X_ENUM
  SC_SWEEP_REASON_COUNT
} sc_sweep_reason;

const char *sc_sweep_reason_key(int reason);  /* "memory" */
const char *sc_sweep_reason_text(int reason); /* "does not fit GPU memory" */

/* A list of allowed values for one dimension of the search; n == 0 means
 * the default set (see sc_sweep_opts). */
#define SC_SWEEP_DIM_MAX 32
typedef struct sc_sweep_dim {
  int n;
  int64_t v[SC_SWEEP_DIM_MAX];
} sc_sweep_dim;

typedef struct sc_sweep_opts {
  int64_t gpus;            /* cluster.num_gpus of every candidate; 0 = the base's */
  const char *out_path;    /* CSV appended one row per simulated config; NULL = none */
  int resume;              /* 1: reuse rows already in out_path, simulate the rest.
                              0: out_path must not exist or be empty */
  /* Search space (a value listed twice counts once); default sets: tp the divisors of gpus_per_node (and of
   * gpus), pp the divisors of gpus/tp, vpp the divisors of layers/pp,
   * micro_batch {1,2,4,8}, sequence_parallel {0,1} when tp > 1, recompute
   * {none, selective, full}, distributed_optimizer {0,1} when dp > 1. */
  sc_sweep_dim tp, pp, vpp, micro_batch;
  sc_sweep_dim sequence_parallel;     /* values 0/1 */
  sc_sweep_dim recompute;             /* sc_recompute values */
  sc_sweep_dim distributed_optimizer; /* values 0/1 */
  /* Testing aid: stop as if killed after appending this many new rows to
   * out_path (sc_sweep_run returns SC_ESTOPPED); 0 = never. */
  int64_t stop_after;
  /* Progress on the process that gathers results (rank 0): called after
   * every simulated config with done (including resumed rows) and total. */
  void (*progress)(void *ud, int64_t done, int64_t total);
  void *progress_ud;
} sc_sweep_opts;

/* One simulated configuration. Values are as written to (and read back
 * from) the CSV file, so fresh, resumed and multi-process sweeps rank and
 * print identical numbers. */
typedef struct sc_sweep_row {
  int64_t index;           /* position in the enumeration (stable key) */
  int64_t tp, pp, dp, vpp, micro_batch;
  int sequence_parallel, distributed_optimizer;
  sc_recompute recompute;
  double step_time_s, tokens_per_s, tflops_per_gpu, mfu;
  double breakdown_s[SC_CAT_COUNT];
  double memory_gib;       /* peak over stages (memory model) */
} sc_sweep_row;

typedef struct sc_sweep_result {
  int is_root;             /* 0 on MPI ranks other than 0: nothing to report */
  int64_t gpus;
  int64_t candidates;      /* configurations enumerated */
  int64_t excluded[SC_SWEEP_REASON_COUNT];
  int64_t simulated;       /* rows ranked (including resumed ones) */
  int64_t resumed;         /* rows read back from out_path */
  sc_sweep_row *rows;      /* simulated rows, best first; owned */
  double capacity_gib;     /* GPU memory the pruning used */
} sc_sweep_result;

/* Runs a sweep over a base config (loaded, not necessarily resolved; its
 * parallel and training knobs are overridden). On MPI builds every process
 * must call it with the same arguments; only rank 0 reads and writes
 * out_path and gets rows (is_root). Returns 0, SC_EINVAL (bad base config or
 * options), SC_EWRITE (out_path cannot be written), SC_ESTOPPED (stop_after reached) or SC_ENOMEM. */
int sc_sweep_run(sc_ctx *ctx, const sc_config *base, const sc_sweep_opts *opts,
                 sc_sweep_result *out);
void sc_sweep_result_free(sc_ctx *ctx, sc_sweep_result *r);

/* Writes the ranking (top_k rows with breakdown and memory) and the summary
 * of exclusions as text or one JSON object. Deterministic. Returns the
 * sink's status. */
int sc_sweep_format(const sc_config *base, const sc_sweep_result *r, int top_k, sc_format fmt,
                    sc_write_fn out, void *ud);

/* Key of a row ("tp8-pp16-vpp1-mb1-sp1-full-do1"), as in the CSV's first
 * column. Returns buf. */
const char *sc_sweep_row_key(const sc_sweep_row *row, char *buf, size_t n);

/* Process group of multi-process sweeps. Serial builds: one process, the
 * calls do nothing. MPI builds: sc_sweep_procs_init initialises MPI (once
 * per process, before the first sweep) and sc_sweep_procs_finalize shuts it
 * down (after the last). Return 0 or SC_EINTERNAL. */
int sc_sweep_procs_init(int *argc, char ***argv);
void sc_sweep_procs_finalize(void);
int sc_sweep_procs_rank(void);  /* 0 in serial builds */
int sc_sweep_procs_count(void); /* 1 in serial builds */

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_SWEEP_H */
