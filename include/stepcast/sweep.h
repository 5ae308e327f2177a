/*
 * sweep.h: configuration search. From a base config and a GPU count, a sweep
 * enumerates the parallel layouts and training knobs (TP, PP, CP, DP,
 * interleaving and pipeline schedule, the layer split over stages,
 * micro-batch, sequence parallelism, recompute, distributed optimizer or
 * ZeRO-3/FSDP with its shard size; for mixture-of-experts models expert
 * parallelism, expert tensor parallelism and the token dispatcher), prunes those that violate divisibility or
 * do not fit memory (counting each reason), simulates the rest (folded),
 * counts the ones the library cannot simulate by reason, and ranks the others
 * by throughput. Results can be
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

/* X(id, key, text): why a candidate was not ranked, in the order the checks
 * run (a candidate counts under its first failing reason): the arithmetic
 * checks, config validation and the memory model before simulating, then
 * what the simulation answered; last the candidates not simulated because
 * they cannot reach the top ranks (sc_sweep_opts.top_k). */
#define SC_SWEEP_REASON_LIST(X)                                                          \
  X(SC_SWEEP_TP_SHAPE, "tp_shape", "tp does not divide heads, ffn or kv heads")          \
  X(SC_SWEEP_PP_LAYERS, "pp_layers", "no split of the layers over pp*vpp model chunks")  \
  X(SC_SWEEP_BATCH, "batch", "global batch not divisible by micro_batch*dp")              \
  X(SC_SWEEP_SP_SEQ, "sp_seq", "seq_len not divisible by tp (sequence parallel)")         \
  X(SC_SWEEP_CP_SEQ, "cp_seq", "seq_len does not split into 2*cp chunks (cp for a2a)")   \
  X(SC_SWEEP_FSDP_SHARD, "fsdp_shard", "fsdp shard size does not divide dp")              \
  X(SC_SWEEP_MOE_GRID, "moe_grid",                                                        \
    "ep does not divide the experts, etp the expert FFN, or ep*etp the tp*cp*dp ranks")   \
  X(SC_SWEEP_INVALID, "invalid", "rejected by config validation")                         \
  X(SC_SWEEP_MEMORY, "memory", "does not fit GPU memory")                                 \
  X(SC_SWEEP_NOT_MODELLED, "unmodelled", "a feature the library does not model")        \
  X(SC_SWEEP_SIM_ERROR, "sim_error", "simulation failed or exceeded a limit")           \
  X(SC_SWEEP_DOMINATED, "dominated", "step-time lower bound above the k-th best step")

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

/* Values of sc_sweep_opts.fsdp besides shard sizes >= 2. */
#define SC_SWEEP_FSDP_OFF 0  /* no parameter sharding (ZeRO-0/1 by distributed_optimizer) */
#define SC_SWEEP_FSDP_FULL 1 /* ZeRO-3 / FSDP FULL_SHARD over all dp ranks */

/* Values of sc_sweep_opts.pp_split. */
#define SC_SWEEP_SPLIT_PLAIN 0   /* layers only: even, or the config's derived uneven split */
#define SC_SWEEP_SPLIT_COUNTED 1 /* embedding and loss count as a layer each (Megatron) */

typedef struct sc_sweep_opts {
  int64_t gpus;            /* cluster.num_gpus of every candidate; 0 = the base's */
  const char *out_path;    /* CSV appended one row per simulated config; NULL = none */
  int resume;              /* 1: reuse rows already in out_path, simulate the rest.
                              0: out_path must not exist or be empty */
  /* Search space (a value listed twice counts once); default sets (docs/SWEEP.md):
   * tp the divisors of gpus_per_node (and of gpus), pp the divisors of gpus/tp,
   * cp 1 plus 2, 4, 8 where seq_len / cp >= 8192 and cp divides gpus/(tp pp),
   * vpp the divisors of layers/pp (of ceil(layers/pp) when pp does not divide
   * the layers), micro_batch {1,2,4,8}, sequence_parallel {0,1} when tp > 1,
   * recompute {none, selective, full}, distributed_optimizer {0,1} when dp > 1. */
  sc_sweep_dim tp, pp, vpp, micro_batch;
  sc_sweep_dim sequence_parallel;     /* values 0/1 */
  sc_sweep_dim recompute;             /* sc_recompute values */
  sc_sweep_dim distributed_optimizer; /* values 0/1 */
  sc_sweep_dim cp;                    /* context-parallel sizes */
  /* sc_schedule values; each (pp, vpp) takes those valid for it: vpp 1 the
   * one-chunk schedules (1f1b, gpipe, zb-h1, and dualpipe for an even pp),
   * vpp > 1 interleaved and, for vpp 2, zbv and dualpipev; pp 1 runs no
   * schedule (one candidate). Default: the base's one-chunk schedule (1f1b
   * unless it says gpipe, zb-h1 or dualpipe) and interleaved, plus zbv or
   * dualpipev when the base says so. */
  sc_sweep_dim schedule;
  /* SC_SWEEP_FSDP_OFF, SC_SWEEP_FSDP_FULL or a shard size >= 2 (hybrid
   * sharding when below dp); tried where dp > 1; a shard size that does not
   * divide dp counts under fsdp_shard. Default: off everywhere, and where
   * pp = 1 also full sharding and sharding within a node (gpus_per_node /
   * (tp cp) ranks, when that is between 2 and dp). */
  sc_sweep_dim fsdp;
  /* SC_SWEEP_SPLIT_*; counted is tried where pp > 1 (for zbv and dualpipev
   * never: they keep an even split). Default: plain, and counted where the layers plus the
   * embedding and the loss split evenly over pp*vpp chunks. */
  sc_sweep_dim pp_split;
  /* Mixture-of-experts models (model.moe_experts > 0) only; a dense model
   * keeps ep 1 (other values count under moe_grid). ep: expert-parallel
   * sizes, default the divisors of moe_experts whose expert grid fits the
   * stage (ep * etp divides tp * cp * dp, Megatron-Core's rule). etp: expert
   * tensor-parallel sizes, default 1 and tp (Megatron-Core's default) where
   * tp divides the expert FFN. dispatcher: sc_moe_dispatcher values, default
   * the base's; with ep = etp = 1 (no expert communication) only the first. */
  sc_sweep_dim ep, etp, dispatcher;
  /* Rows that must come out exactly as an exhaustive sweep ranks them; 0 =
   * simulate every candidate that passes pruning (exhaustive). With K > 0 a
   * lower bound on each candidate's step time (the workload's compute and
   * pipeline dependencies without communication time, docs/SWEEP.md
   * "Bounded sweeps", computed only where the order needs it: a quicker,
   * looser one from one stage's compute comes first) decides the order:
   * the K candidates of lowest bound
   * are simulated first, and of the others those whose bound exceeds the
   * K-th best step among them are not simulated (counted as dominated);
   * they cannot rank among the best K. rows then holds the simulated
   * configurations only, its first K those of an exhaustive sweep. */
  int64_t top_k;
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
  int64_t cp;              /* context-parallel size */
  sc_schedule schedule;
  int64_t zero_stage;      /* 0, 1 (distributed optimizer) or 3 */
  int64_t fsdp_shard;      /* zero_stage 3: ranks a parameter is sharded over; else 0 */
  int64_t pp_first_layers, pp_last_layers; /* as resolved; 0 when the split is even */
  int pp_counted;          /* 1: embedding and loss counted in the split */
  int64_t ep, etp;         /* expert parallel and expert tensor parallel sizes (1, 1 dense) */
  sc_moe_dispatcher moe_dispatcher; /* token dispatcher (alltoall for dense models) */
} sc_sweep_row;

typedef struct sc_sweep_result {
  int is_root;             /* 0 on MPI ranks other than 0: nothing to report */
  int64_t gpus;
  int64_t gpus_per_node;   /* of the resolved base */
  int64_t candidates;      /* configurations enumerated */
  int64_t excluded[SC_SWEEP_REASON_COUNT];
  int64_t simulated;       /* rows ranked (including resumed ones) */
  int64_t bounded;         /* candidates whose quick step-time bound was computed (top_k > 0) */
  int64_t refined;         /* of them, those whose tighter bound was computed too */
  int64_t resumed;         /* rows read back from out_path */
  sc_sweep_row *rows;      /* simulated rows, best first; owned */
  double capacity_gib;     /* GPU memory (the preset's HBM) */
  double usable_gib;       /* capacity_gib less cluster.mem_headroom: the pruning's limit */
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
 * of exclusions as text or one JSON object; with nothing to rank, why
 * (sc_sweep_why_unranked). Deterministic. Returns the sink's status. */
int sc_sweep_format(const sc_config *base, const sc_sweep_result *r, int top_k, sc_format fmt,
                    sc_write_fn out, void *ud);

/* Robustness of the best layouts to stragglers (docs/WHATIF.md): a sweep
 * ranks every layout without variation; sc_sweep_robustness re-simulates
 * the first top_k rows under the base's variation (gpu_speed_sigma, or
 * slow_gpus / slow_links drawn with count=) once per seed, seeds
 * variation.seed + 0 .. seeds - 1, and gives each row's step time quantiles
 * over the seeds, the rows ordered by P50 (then P99). */
typedef struct sc_sweep_robust {
  int64_t row;            /* index into sc_sweep_result.rows (nominal rank - 1) */
  int64_t seeds;
  double nominal_s;       /* the row's step time without variation */
  double p50_s, p99_s;    /* median and 99th percentile (nearest rank) over the seeds */
  double mean_s, worst_s;
} sc_sweep_robust;

/* Fills out[0 .. *n) (out holds top_k entries), *n = min(top_k, rows).
 * SC_EINVAL when the base has no variation that seeds change or seeds < 1;
 * a simulation's error otherwise. */
int sc_sweep_robustness(sc_ctx *ctx, const sc_config *base, const sc_sweep_result *r, int top_k,
                        int seeds, sc_sweep_robust *out, int64_t *n);

/* sc_sweep_format with the robustness table (rb, n; NULL, 0: none) after the
 * ranking, or as the JSON object's "robustness" member. */
int sc_sweep_format_ex(const sc_config *base, const sc_sweep_result *r, int top_k,
                       const sc_sweep_robust *rb, int64_t n, sc_format fmt, sc_write_fn out,
                       void *ud);

/* Why a sweep ranked nothing, in one line: the reasons counted, most
 * frequent first, and a GPU count that is not a multiple of the node size
 * ("1000 GPUs are not a multiple of the node size 8; excluded: batch 2088
 * (global batch not divisible by micro_batch*dp), pp_layers 1068 (...)").
 * Returns buf; "" when r ranked something. */
const char *sc_sweep_why_unranked(const sc_sweep_result *r, char *buf, size_t n);

/* Key of a row ("tp8-pp16-vpp1-mb1-sp1-full-do1", then "-cp2", the schedule
 * when it is not the one vpp implies (1f1b for one chunk, interleaved for
 * more), "-fsdp64" and "-elsplit" where they apply, then
 * "-ep8-etp1-deepep" unless ep = etp = 1 with alltoall), as in the CSV's
 * first column. Returns buf. */
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
