/*
 * interf_int.h: interference of communication with computation on one GPU.
 * The engine asks here for the slowdown s of a compute op while communication
 * runs on its rank (models `constant` and `learned`, docs/INTERFERENCE.md);
 * `stepcast calibrate --interference` fits the learned model (interf.c) on
 * pairs of kernel durations that interf_kineto.c extracts from Kineto traces.
 */
#ifndef SC_INTERF_INT_H
#define SC_INTERF_INT_H

#include "stepcast/interference.h"

#include "input/calib_int.h"
#include "ir/ir_int.h"

/* Largest slowdown a model returns: a kernel runs at most 1 + S_MAX times
 * longer than alone (guards the learned model far from its data). */
#define SC_INTERF_S_MAX 4.0

/* Kinds of overlapping communication the learned model tells apart. NCCL
 * runs all-to-all as grouped send/recv kernels, so it counts as p2p. */
enum { SC_ICOLL_ALLREDUCE = 0, SC_ICOLL_ALLGATHER, SC_ICOLL_REDUCESCATTER, SC_ICOLL_P2P,
       SC_ICOLL_OTHER };

/* The communication op overlapping a kernel, as the learned model sees it. */
typedef struct sc_interf_comm {
  int coll;         /* SC_ICOLL_* */
  double bytes;     /* nccl-tests size of the op; <= 0: unknown */
  int inter_node;   /* 1: the group spans nodes */
  int64_t group;    /* ranks in the group; <= 0: unknown */
} sc_interf_comm;

/* The learned model's features are the calibration key table's
 * (SC_INTERF_FEATURES, input/calib_keys.h): indices SC_IF_*, count
 * SC_INTERF_NFEAT. */
_Static_assert((int)SC_OP_GEMM == (int)SC_IF_gemm && (int)SC_OP_ATTN == (int)SC_IF_attn &&
                   (int)SC_OP_ELEMWISE == (int)SC_IF_elementwise &&
                   (int)SC_OP_NORM == (int)SC_IF_norm &&
                   (int)SC_OP_OPTIMIZER == (int)SC_IF_optimizer,
               "the class features must follow the compute op kinds");

/* Fills x[SC_INTERF_NFEAT] for a compute kernel of SC_OP_* kind that takes
 * dur_ns alone, overlapped by comm. */
void sc__interf_features(int kind, double dur_ns, const sc_interf_comm *comm, double *x);

/* Slowdown of the learned model with coefficients w: max(0, w . x), at most
 * SC_INTERF_S_MAX. */
double sc__interf_learned_s(const double *w, int kind, double dur_ns, const sc_interf_comm *comm);

/* SC_ICOLL_* of a workload collective (SC_COLL_*). */
int sc__interf_coll_of(int coll);

/* Slowdown of the constant model for a compute op of SC_OP_* kind (the
 * interference_<class> parameter; 0 for non-compute kinds). */
double sc__interf_constant_s(const sc_cost_params *p, int kind);

/* Interference defaults (sc__cost_defaults): the constant table fitted on the HTA traces,
 * interference_comm and the shipped learned coefficients. */
void sc__interf_defaults(sc_cost_params *p);

/* One training pair: an occurrence of a kernel overlapped by communication,
 * with the duration of the same kernel alone. */
typedef struct sc_interf_sample {
  int kind;            /* SC_OP_* compute kind */
  double alone_ns;     /* median duration of the kernel's occurrences alone */
  double dur_ns;       /* this occurrence's duration */
  double r;            /* fraction of its work done while overlapped, (0, 1] */
  sc_interf_comm comm; /* the op overlapping it longest */
  uint64_t key;        /* hash of the kernel's name and launch shape: the split */
  int trace;           /* index of the trace in its data set: the other split */
} sc_interf_sample;

/* Robust hierarchical ridge regression of the learned model. The residual of
 * pair i is the relative error of its predicted duration, the quantity the
 * per-kernel MAPE averages:
 *   e_i = (alone_i * (1 + r_i * (w . x_i)) - dur_i) / dur_i,
 * and the fit minimises
 *   sum_i huber(e_i) + ridge * (sum_c (w_c - m)^2 + sum_k w_k^2)
 * over the class intercepts w_c, a pooled intercept m and the other
 * coefficients w_k: a class with few pairs is shrunk towards the pooled
 * slowdown m, which every pair informs, and a class without pairs gets m,
 * the mean of the fitted classes' intercepts (Huber scale `huber`;
 * iteratively reweighted least squares, deterministic). Writes
 * w[SC_INTERF_NFEAT] (w_c with m folded in). Returns 0, SC_EINVAL (no
 * samples) or SC_ENOMEM. */
int sc__interf_fit(sc_ctx *ctx, const sc_interf_sample *s, size_t n, double ridge, double huber,
                   double *w);

/* ------------------------------------------------------------ tree model
 * (interf_tree.c): gradient-boosted trees over the same features, trained
 * with XGBoost on s per pair (pseudo-Huber loss weighted by alone r / dur, the
 * factor from s to the pair's relative duration error), evaluated by a flat copy of the
 * trees. Ownership: every sc_interf_tree is owned by its caller and freed
 * with sc__interf_tree_free. */
typedef struct sc_interf_tree sc_interf_tree;

/* Boosting parameters (defaults: SC_INTERF_TREE_DEFAULTS). */
typedef struct sc_interf_tree_params {
  int rounds;              /* boosting rounds (trees) */
  int depth;               /* largest tree depth */
  double eta;              /* learning rate */
  double min_child_weight; /* least summed pair weight in a leaf */
  double lambda;           /* L2 penalty of the leaf values */
} sc_interf_tree_params;

/* Trains on the samples with positive durations and overlap. Deterministic
 * (one thread, no sampling). Returns 0, SC_EINVAL (no pairs, an XGBoost
 * error: "interference tree: message") or SC_ENOMEM. */
int sc__interf_tree_train(sc_ctx *ctx, const sc_interf_sample *s, size_t n,
                          const sc_interf_tree_params *prm, sc_interf_tree **out);
/* Loads an XGBoost JSON model (what XGBoosterSaveModel writes as .json);
 * `what` names it in messages ("what: message", SC_EINVAL). */
int sc__interf_tree_load(sc_ctx *ctx, const void *buf, size_t len, const char *what,
                         sc_interf_tree **out);
/* The same from a file; from is the "file:line" that named it (or NULL). */
int sc__interf_tree_load_file(sc_ctx *ctx, const char *path, const char *from,
                              sc_interf_tree **out);
/* Writes the booster as XGBoost JSON. */
int sc__interf_tree_write(sc_ctx *ctx, const sc_interf_tree *t, sc_write_fn w, void *ud);
void sc__interf_tree_free(sc_ctx *ctx, sc_interf_tree *t);
/* Slowdown s of a kernel of SC_OP_* kind taking dur_ns alone, overlapped by
 * comm: the forest's prediction clamped to [0, SC_INTERF_S_MAX]. Pure and
 * allocation-free (the engine's hot path). */
double sc__interf_tree_s(const sc_interf_tree *t, int kind, double dur_ns,
                         const sc_interf_comm *comm);
/* The context a tree was allocated with. */
sc_ctx *sc__interf_tree_ctx(const sc_interf_tree *t);
/* Trees in the model. */
size_t sc__interf_tree_count(const sc_interf_tree *t);
/* XGBoost's own prediction (unclamped) for the same input: tests check the
 * flat forest against it. */
int sc__interf_tree_booster_s(sc_ctx *ctx, const sc_interf_tree *t, int kind, double dur_ns,
                              const sc_interf_comm *comm, double *s);

/* The constant table fitted on pairs: per class the weighted median of s
 * (weights alone r / dur), which minimises the summed relative duration
 * error of that class's pairs; a class without pairs gets the median over
 * all pairs. s[SC_OP_GEMM..SC_OP_OPTIMIZER]. Returns 0 or SC_ENOMEM. */
int sc__interf_constant_fit(sc_ctx *ctx, const sc_interf_sample *smp, size_t n,
                            double s[SC_OP_OPTIMIZER + 1]);

/* The context and the training pairs of a data set. */
sc_ctx *sc__interf_data_ctx(const sc_interf_data *d);
const sc_interf_sample *sc__interf_data_samples(const sc_interf_data *d, size_t *n);

/* Appends samples to the data set (interf_kineto.c's output; tests add
 * synthetic ones). Returns 0 or SC_ENOMEM. */
int sc__interf_data_add(sc_interf_data *d, const sc_interf_sample *s, size_t n);

#endif /* SC_INTERF_INT_H */
