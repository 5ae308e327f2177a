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

/* Interference defaults (sc__cost_defaults): the cited constant table,
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

/* The context and the training pairs of a data set. */
sc_ctx *sc__interf_data_ctx(const sc_interf_data *d);
const sc_interf_sample *sc__interf_data_samples(const sc_interf_data *d, size_t *n);

/* Appends samples to the data set (interf_kineto.c's output; tests add
 * synthetic ones). Returns 0 or SC_ENOMEM. */
int sc__interf_data_add(sc_interf_data *d, const sc_interf_sample *s, size_t n);

#endif /* SC_INTERF_INT_H */
