/*
 * interference.h: learning how overlapping communication slows computation.
 * Kineto traces (PyTorch profiler Chrome-trace JSON: plain, gzip or zstd) are fed
 * through a streaming reader that pairs each compute kernel overlapped by an
 * NCCL kernel with the same kernel's runs alone; a robust ridge regression
 * fits the `learned` interference model on those pairs and reports its error
 * on held-out kernels and held-out traces; the result is a `calibration:` YAML
 * (`stepcast calibrate --interference`, docs/INTERFERENCE.md).
 *
 * Ownership: sc_interf_data is opaque, created by sc_interf_data_new and freed
 * by sc_interf_data_free; it borrows the sc_ctx it was created with, which
 * must outlive it. Units: nanoseconds, bytes; errors in percent.
 */
#ifndef STEPCAST_INTERFERENCE_H
#define STEPCAST_INTERFERENCE_H

#include "stepcast/stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How training pairs are extracted from a trace. Zero fields take the
 * defaults in brackets. */
typedef struct sc_interf_extract_options {
  double min_kernel_us; /* shortest median duration alone of a kernel used [10] */
  int min_alone;        /* runs without overlap a kernel needs [3] */
  double max_spread;    /* largest (q3 - q1) / median of those runs [0.25] */
  double min_overlap;   /* least fraction of a run's work done overlapped [0.2] */
  double shape_tol;     /* overlapped runs faster than (1 - tol) x the fastest
                         * run alone are another launch shape, dropped [0.1] */
} sc_interf_extract_options;

/* What the reader saw, over every trace fed so far. */
typedef struct sc_interf_stats {
  int64_t traces;
  int64_t kernels;       /* compute kernels */
  int64_t nccl_kernels;  /* ncclKernel_* / ncclDevKernel_* */
  int64_t overlapped;    /* compute kernels overlapped by an NCCL kernel of another stream */
  int64_t pairs;         /* training pairs kept */
  int64_t dropped_short; /* overlapped runs of kernels shorter than min_kernel_us */
  int64_t dropped_alone; /* ... of kernels with too few or too spread runs alone */
  int64_t dropped_overlap; /* ... overlapped for less than min_overlap of their work */
  int64_t dropped_shape; /* ... faster than their runs alone (another launch shape) */
} sc_interf_stats;

typedef struct sc_interf_data sc_interf_data;

/* Creates an empty data set (opt may be NULL). Returns 0 or SC_ENOMEM. */
int sc_interf_data_new(sc_ctx *ctx, const sc_interf_extract_options *opt, sc_interf_data **out);
void sc_interf_data_free(sc_interf_data *d);

/* Starts reading one trace (name is used in messages). */
int sc_interf_trace_begin(sc_interf_data *d, const char *name);
/* Feeds the trace's next bytes exactly as stored; gzip and zstd are
 * recognised by their magic numbers and decompressed on the fly. Buffers may split the data anywhere.
 * Returns 0 or SC_EINVAL / SC_EREAD / SC_ENOMEM ("name:offset: message"). */
int sc_interf_trace_feed(sc_interf_data *d, const void *buf, size_t len);
/* Ends the trace and adds its training pairs to the set. */
int sc_interf_trace_end(sc_interf_data *d);
/* Reads a whole trace file through begin / feed / end. */
int sc_interf_load_file(sc_interf_data *d, const char *path);

void sc_interf_data_stats(const sc_interf_data *d, sc_interf_stats *out);

/* The fit. Zero fields take the defaults in brackets. */
typedef struct sc_interf_fit_options {
  double ridge;      /* pull of each class intercept towards the pooled
                      * intercept (fitted on every pair), and of the other
                      * coefficients towards 0 [2] */
  double huber;      /* scale of the robust loss, in relative error of the
                      * predicted duration [0.05] */
  int folds;         /* held-out evaluation over kernels: K > 1 folds by name
                      * hash; 0: leave one kernel out (each kernel predicted
                      * by the fit on all others), or 10 folds beyond 200
                      * kernels; -1: no held-out evaluation (neither split) */
  int model;         /* what sc_interf_fit keeps besides the linear
                      * coefficients: SC_INTERF_MODEL_LINEAR [0] or
                      * SC_INTERF_MODEL_TREE (the booster, tree_model) */
  int tree_rounds;   /* boosted trees [60] */
  int tree_depth;    /* largest depth of a tree [3] */
  double tree_eta;   /* learning rate [0.1] */
  double tree_min_child; /* least summed pair weight (about pairs) in a leaf [5] */
} sc_interf_fit_options;

enum { SC_INTERF_MODEL_LINEAR = 0, SC_INTERF_MODEL_TREE = 1 };
struct sc_interf_tree;

/* Accuracy of one predictor of overlapped kernel durations,
 * T = T_alone * (1 + r * s), over a set of pairs. */
typedef struct sc_interf_eval {
  int64_t n;
  double within_pct[3]; /* share of kernels predicted within 5, 10, 15 % */
  double mape_pct;      /* mean absolute percentage error per kernel */
  double sum_err_pct;   /* error of the summed durations, signed */
} sc_interf_eval;

typedef struct sc_interf_fit_result {
  int nfeat;
  sc_interf_coefs w;             /* fitted on every pair (what is written) */
  int64_t kernels;               /* distinct kernels (name + launch shape) */
  int folds;                     /* groups of the held-out split over kernels */
  int leave_one_out;             /* 1: one kernel per group */
  /* Over every pair: the learned model held out (each pair predicted by the
   * fit without its kernel's fold), the same fitted on all pairs (in
   * sample), the cited constant table, and no interference (s = 0). */
  sc_interf_eval learned, learned_fit, constant, none;
  double ridge, huber;
  /* Held out by trace: each pair predicted by the fit on the other traces'
   * pairs (traces > 1 and folds != -1; else n = 0). */
  int64_t traces;                /* traces that gave pairs */
  sc_interf_eval learned_by_trace;
  /* The tree model (XGBoost, simulation.interference: tree) on the same
   * splits: held out by kernel, by trace, in sample. */
  sc_interf_eval tree, tree_by_trace, tree_fit;
  int tree_rounds, tree_depth;
  double tree_eta, tree_min_child;
  /* The constant table refitted on the pairs (per class the weighted median
   * slowdown): held out by kernel, by trace, in sample; and the table fitted
   * on every pair, by SC_OP_* class (gemm, attn, elementwise, norm,
   * optimizer). */
  sc_interf_eval constant_fit, constant_fit_by_trace, constant_fit_in;
  double constant_s[5];
  /* With model SC_INTERF_MODEL_TREE: the booster fitted on every pair (owned;
   * sc_interf_fit_result_release frees it), else NULL. */
  struct sc_interf_tree *tree_model;
  /* File name the calibration YAML gives as calibration.interference_tree
   * (relative to the YAML), set by the caller before
   * sc_interf_write_calibration; "" writes no such key. */
  char tree_file[256];
} sc_interf_fit_result;

/* Frees what a fit result owns (the booster); the struct itself is the
 * caller's. */
void sc_interf_fit_result_release(sc_interf_fit_result *r);
/* Writes the booster of a tree fit as XGBoost JSON (the file
 * calibration.interference_tree names). SC_EINVAL without one. */
int sc_interf_write_tree(const sc_interf_fit_result *r, sc_write_fn w, void *ud);

/* Fits the learned model on the pairs gathered so far. Deterministic.
 * Returns 0, SC_EINVAL (no pairs) or SC_ENOMEM. */
int sc_interf_fit(sc_interf_data *d, const sc_interf_fit_options *opt, sc_interf_fit_result *out);

/* Writes the fit as a `calibration:` YAML mapping of interference_w_* keys,
 * with note (provenance lines) and the accuracy report as comments. */
int sc_interf_write_calibration(const sc_interf_fit_result *r, const sc_interf_stats *st,
                                const char *note, sc_write_fn w, void *ud);
/* Writes the human-readable accuracy report. */
int sc_interf_write_report(const sc_interf_fit_result *r, const sc_interf_stats *st,
                           sc_write_fn w, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_INTERFERENCE_H */
