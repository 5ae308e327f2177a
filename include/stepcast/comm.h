/*
 * comm.h: collective communication on its own: a reader of nccl-tests output
 * (all_reduce_perf and friends), the NCCL-faithful collective cost model the
 * simulator uses ("nccl" v5, docs/COMM.md), its calibration from nccl-tests
 * rows, and the tables behind `stepcast comm` and `stepcast calibrate`.
 *
 * Ownership: sc_nccltests is a caller-owned struct whose rows array belongs to
 * the library (sc_nccltests_free). sc_comm is opaque, created by sc_comm_new
 * and freed by sc_comm_free; both borrow the sc_ctx they were made with.
 * Units: bytes, microseconds, GB/s (1e9 bytes/s) as nccl-tests prints them.
 */
#ifndef STEPCAST_COMM_H
#define STEPCAST_COMM_H

#include "stepcast/stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- operations */

/* X(id, name, perf binary): the collectives nccl-tests measures. The first
 * five are in the order of the simulator's internal collective list. */
#define SC_COMM_OP_LIST(X)                                                                         \
  X(SC_COMM_ALL_REDUCE, "all_reduce", "all_reduce_perf")                                           \
  X(SC_COMM_ALL_GATHER, "all_gather", "all_gather_perf")                                           \
  X(SC_COMM_REDUCE_SCATTER, "reduce_scatter", "reduce_scatter_perf")                               \
  X(SC_COMM_ALL_TO_ALL, "all_to_all", "alltoall_perf")                                             \
  X(SC_COMM_BROADCAST, "broadcast", "broadcast_perf")                                              \
  X(SC_COMM_SEND_RECV, "send_recv", "sendrecv_perf")

typedef enum {
#define SC_X_ENUM(id, name, perf) id,
  SC_COMM_OP_LIST(SC_X_ENUM)
#undef SC_X_ENUM
      SC_COMM_OP_COUNT
} sc_comm_op;

const char *sc_comm_op_name(int op); /* "all_reduce"; "?" when out of range */
/* Finds an operation by name, forgiving spelling: "all_reduce", "allreduce",
 * "all_reduce_perf", "all-reduce", "alltoall", "sendrecv". -1 if unknown. */
int sc_comm_op_find(const char *name);
/* nccl-tests bus-bandwidth factor: busbw = algbw * factor for n ranks. */
double sc_comm_bus_factor(int op, int64_t n);

/* ---------------------------------------------------------------- nccl-tests */

#define SC_NCCLTESTS_NAME_MAX 16

/* One row of an nccl-tests table. Cells printed "N/A" (or absent from the
 * layout) are NAN; [0] is out-of-place, [1] in-place. */
typedef struct sc_nccltests_row {
  int64_t bytes;                     /* "size" column */
  int64_t count;                     /* "count" column, elements */
  char type[SC_NCCLTESTS_NAME_MAX];  /* "float", "bfloat16", ... */
  char redop[SC_NCCLTESTS_NAME_MAX]; /* "sum", "none"; "" when the layout has none */
  int64_t root;                      /* root column; -1 when absent or printed -1 */
  double time_us[2];
  double algbw_gbps[2];
  double busbw_gbps[2];
  double wrong[2]; /* "#wrong" (new) or "error" (old, a float) */
  int line;        /* 1-based source line */
} sc_nccltests_row;

typedef struct sc_nccltests {
  char origin[256];             /* name given to the parser, for messages */
  int op;                       /* SC_COMM_*; -1 when neither the output nor the name says */
  int64_t ranks;                /* "# Using devices" lines; 0 when the output has none */
  int64_t nodes;                /* distinct host names among them */
  int64_t per_node;             /* most ranks on one host */
  char gpu[64];                 /* device name of the lowest rank ("A100-SXM4-40GB") */
  int mixed_gpus;               /* 1 when ranks report different device names */
  int64_t nthread, ngpus;       /* from "# nThread N nGpus G ..."; 0 if absent */
  int64_t min_bytes, max_bytes; /* idem */
  int64_t warmup_iters, iters;  /* "warmup iters: W iters: I"; 0 if absent */
  double avg_busbw_gbps;        /* "# Avg bus bandwidth"; NAN if absent */
  size_t nrows;
  sc_nccltests_row *rows;       /* nrows entries, owned: sc_nccltests_free */
} sc_nccltests;

/* Parses nccl-tests output (any of the *_perf binaries, old 2.x layouts
 * without the root column and with a float "error" column, new ones with
 * root and "#wrong", per-iteration and timestamp columns, "N/A" cells,
 * mpirun "[1,0]<stdout>:" tags anywhere in a line, CRLF). Lines that are
 * neither comments nor start with an integer (NCCL INFO logs) are skipped.
 * `name` is used in messages ("name:line: message") and to guess the
 * operation when the text does not say ("all_gather_8gpu.log"). On error
 * returns SC_EINVAL (or SC_ENOMEM) and leaves *out empty. */
int sc_nccltests_parse(sc_ctx *ctx, const char *name, const char *text, size_t len, sc_nccltests *out);
/* Reads and parses a file (SC_EREAD when it cannot be read). */
int sc_nccltests_load(sc_ctx *ctx, const char *path, sc_nccltests *out);
void sc_nccltests_free(sc_ctx *ctx, sc_nccltests *t);
/* The measured time of a row: the smaller of out-of-place and in-place (one
 * when the other is missing); NAN if neither. */
double sc_nccltests_row_time_us(const sc_nccltests_row *r);

/* 1 when row i is a warm-up row: the first row with a measured time, whose
 * time is more than twice that of the next row with one, a larger message.
 * At the smallest sizes every algorithm is latency-bound, so half the bytes
 * cannot take twice the time: such a row measured something else (the run's
 * first calls setting up connections and buffers), in both columns since
 * the smaller of the two is taken. Comparisons report it but leave it out of
 * their error; the fit leaves it out. */
int sc_nccltests_row_is_warmup(const sc_nccltests *t, size_t i);
/* 1 when row i is a run's first row (with a size and an out-of-place
 * time) and that out-of-place time, the first call the run timed, is more
 * than twice the time of the next row: the call paid a one-time setup (NCCL
 * connecting peers on first use) that nccl-tests spreads over its
 * iterations. The 64- and 128-GPU Azure logs have one (315 and 1242 us for
 * 1 KiB, against 73 and 92 us for 2 KiB). */
int sc_nccltests_row_is_first_call(const sc_nccltests *t, size_t i);
/* Ranks implied by busbw/algbw of the rows for t->op (nccl-tests prints
 * busbw = algbw * factor(n)); 0 when the op has no n-dependent factor, the
 * rows disagree, or no row has both numbers. For outputs without device
 * lines. */
int64_t sc_nccltests_infer_ranks(const sc_nccltests *t);

/* ---------------------------------------------------------------- model */

/* The machine a collective runs on. Zero fields take the GPU preset's values
 * (cluster.* in docs/CONFIG.md). */
typedef struct sc_comm_cluster {
  char gpu[32];          /* hardware preset ("a100-80gb") */
  int64_t gpus_per_node; /* GPUs (and NICs, rail design) per node */
  double nic_gbps;       /* scale-out per GPU, Gbit/s */
  double nvlink_gbps;    /* NVLink per GPU per direction, GB/s */
  int sharp;             /* 1: in-network reduction (CollNet/SHARP) available */
  /* Network tiers (docs/COMM.md, "Network tiers"); zeros: one non-blocking
   * leaf. The group's nodes fill leaves from the first; rail leaves. */
  int64_t leaf_gpus;     /* GPUs under one leaf, a multiple of gpus_per_node; 0: one leaf */
  double spine_oversubscription; /* leaf downlink : uplink, >= 1; 0 = 1 */
  double leaf_latency_us, spine_latency_us; /* extra per network step / spine crossing */
} sc_comm_cluster;

typedef struct sc_comm sc_comm;

int sc_comm_new(sc_ctx *ctx, const sc_comm_cluster *cluster, sc_comm **out);
void sc_comm_free(sc_comm *m);
/* Loads the top-level `calibration:` mapping written by sc_comm_write_calibration
 * (keys of docs/COMM.md; keys of other cost models are ignored). */
int sc_comm_load_calibration(sc_comm *m, const char *path);

/* NCCL's algorithms and protocols, for reporting which one a size uses. */
const char *sc_comm_algo_name(int algo);   /* "ring", "tree", "nvls", ... */
const char *sc_comm_proto_name(int proto); /* "LL", "LL128", "Simple" */

typedef struct sc_comm_estimate {
  double time_us;
  double algbw_gbps, busbw_gbps;
  int algo, proto; /* NCCL's pick: its own tuning model (Volta/Ampere), else the fastest */
  double reduce_us; /* the part of time_us the GPUs spend reducing (nccl_reduce_passes) */
  double setup_us;  /* one-time first-call setup, not in time_us (nccl_setup_us) */
} sc_comm_estimate;

/* Predicts one collective of `bytes` (nccl-tests size) over `gpus` ranks
 * placed gpus_per_node to a node (the cluster's when 0; the last node may be
 * partial). SC_EINVAL for an unknown op or gpus < 1. */
int sc_comm_predict(const sc_comm *m, int op, double bytes, int64_t gpus, int64_t gpus_per_node,
                    sc_comm_estimate *out);

/* One nccl-tests row against the model. */
typedef struct sc_comm_compare_row {
  double bytes;
  double measured_us; /* sc_nccltests_row_time_us */
  double predicted_us;
  double error_pct; /* 100 * (predicted - measured) / measured */
  int warmup;       /* sc_nccltests_row_is_warmup: reported, not in the MAPE */
  /* A first-call row (sc_nccltests_row_is_first_call): its out-of-place
   * time, and the prediction with the one-time setup spread over the run's
   * iterations (setup_us / iters) added; NAN for other rows. */
  double first_call_us, first_call_predicted_us;
  double setup_share_us; /* setup_us / iters added to this row; 0 for other rows */
} sc_comm_compare_row;

/* Predicts every row of t with a measured time (op = t->op unless op >= 0;
 * ranks/placement from t unless gpus > 0), as nccl-tests would report it:
 * a run driving several GPUs from one thread (its nGpus) cannot be faster
 * than that many kernel launches. rows must hold t->nrows entries; *nout
 * gets the count written, *mape_pct their mean absolute error over the rows
 * that are not warm-up rows (a warm-up row always has a counted row after
 * it). */
int sc_comm_compare(const sc_comm *m, const sc_nccltests *t, int op, int64_t gpus,
                    int64_t gpus_per_node, sc_comm_compare_row *rows, size_t *nout,
                    double *mape_pct);

/* Fits the model's free parameters to nccl-tests files (each with its op,
 * ranks and placement known: from the output, or set by the caller in the
 * struct) by a robust least-squares fit of log time. Deterministic. On
 * success the model holds the fitted parameters; *mape_pct (may be NULL) gets
 * the in-sample mean absolute error over the rows used. */
int sc_comm_calibrate(sc_comm *m, const sc_nccltests *files, size_t nfiles, double *mape_pct);
/* Restricts what the next sc_comm_calibrate moves to the named keys
 * ("nccl_nic_eff", ...), each one the fit moves by default; the others keep
 * the model's current values. keys NULL or n 0: every fitted key again.
 * SC_EINVAL (nothing changed) for a name that is not such a key. */
int sc_comm_fit_only(sc_comm *m, const char *const *keys, size_t n);

/* Writes the parameters as YAML: a `calibration:` mapping (plus comments on
 * provenance given in `note`, may be NULL). */
int sc_comm_write_calibration(const sc_comm *m, const char *note, sc_write_fn out, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_COMM_H */
