/*
 * interf.c: the interference models the engine uses while communication
 * overlaps computation on a GPU (`constant`: one slowdown per kernel class, a
 * cited table; `learned`: a linear model of kernel and communication features
 * fitted on trace pairs) and their defaults. The fit is analysis/interf_fit.c.
 */
#include "cost/interf_int.h"

#include <math.h>

/* ------------------------------------------------------------ features */

static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

void sc__interf_features(int kind, double dur_ns, const sc_interf_comm *c, double *x) {
  for (int i = 0; i < SC_INTERF_NFEAT; i++) x[i] = 0;
  if (kind >= SC_OP_GEMM && kind <= SC_OP_OPTIMIZER) x[kind] = 1;
  x[SC_IF_log_dur] = dur_ns > 0 ? clampd(log10(dur_ns / 1e5), -2, 2) : -2;
  switch (c->coll) {
  case SC_ICOLL_ALLGATHER: x[SC_IF_all_gather] = 1; break;
  case SC_ICOLL_REDUCESCATTER: x[SC_IF_reduce_scatter] = 1; break;
  case SC_ICOLL_P2P: x[SC_IF_p2p] = 1; break;
  case SC_ICOLL_OTHER: x[SC_IF_other_coll] = 1; break;
  default: break;
  }
  if (c->bytes > 0) {
    x[SC_IF_size_known] = 1;
    x[SC_IF_log_bytes] = clampd(log10(c->bytes / 1048576.0), -4, 4);
  }
  x[SC_IF_inter_node] = c->inter_node ? 1 : 0;
  x[SC_IF_log_group] = c->group > 2 ? log2((double)c->group / 2.0) : 0.0;
}

double sc__interf_learned_s(const double *w, int kind, double dur_ns, const sc_interf_comm *c) {
  double x[SC_INTERF_NFEAT], s = 0;
  sc__interf_features(kind, dur_ns, c, x);
  for (int i = 0; i < SC_INTERF_NFEAT; i++) s += w[i] * x[i];
  return clampd(s, 0, SC_INTERF_S_MAX);
}

int sc__interf_coll_of(int coll) {
  switch (coll) {
  case SC_COLL_ALLREDUCE: return SC_ICOLL_ALLREDUCE;
  case SC_COLL_ALLGATHER: return SC_ICOLL_ALLGATHER;
  case SC_COLL_REDUCESCATTER: return SC_ICOLL_REDUCESCATTER;
  case SC_COLL_ALLTOALL: return SC_ICOLL_P2P; /* NCCL: grouped send/recv */
  case SC_COLL_SENDRECV: return SC_ICOLL_P2P;
  default: return SC_ICOLL_OTHER;
  }
}

double sc__interf_constant_s(const sc_cost_params *p, int kind) {
  switch (kind) {
  case SC_OP_GEMM: return p->interference_gemm;
  case SC_OP_ATTN: return p->interference_attn;
  case SC_OP_ELEMWISE: return p->interference_elementwise;
  case SC_OP_NORM: return p->interference_norm;
  case SC_OP_OPTIMIZER: return p->interference_optimizer;
  default: return 0;
  }
}

/* ------------------------------------------------------------ defaults */

/* The `constant` table: slowdown s of a kernel class while NCCL runs on the
 * same GPU (T = T_alone * (1 + r * s)), the per-class weighted median s of
 * the 142 overlapped-kernel pairs of the HTA traces in validation/traces/hta
 * (A100; `stepcast calibrate --interference`, record in
 * validation/calibration/interference-hta-tree.yaml): GEMM 0.0297,
 * elementwise 0.0451, norms 0.0001; fused attention and the optimizer (no
 * pair in the traces) take the pooled value 0.0185. Held out by kernel and by
 * trace it predicts overlapped durations with MAPE 12.8 % (sum -8.6 %),
 * against 12.6 % (-11.1 %) for no model.
 * It replaces a literature table (compute-bound 0.19: Lee et al., "Characterizing
 * Compute-Communication Overlap in GPU-Accelerated Distributed Deep
 * Learning", arXiv:2507.03114, an 18.9 % mean slowdown of overlapped
 * GPT/LLaMA training; memory-bound 0.5, the low end of BLUEPRINT section 4's
 * 1.5-1.9x), which scored 35.9 % on the same pairs, ten times their median
 * slowdown, and ships as validation/calibration/interference-literature.yaml.
 * The HTA pairs are small LL-protocol NCCL kernels: bulk overlap with GB
 * collectives may slow kernels more (the learned model's log_bytes term
 * extrapolates to s ~ 0.1-0.2 there). */
#define INTERF_GEMM 0.0296682
#define INTERF_ATTN 0.0185387
#define INTERF_ELEMENTWISE 0.0451128
#define INTERF_NORM 0.0001
#define INTERF_OPTIMIZER 0.0185387
/* Communication slowed by heavy compute on its GPU: assumed small (no
 * per-kernel measurement shipped; NCCL kernels use few SMs). */
#define INTERF_COMM 0.05

/* Shipped `learned` coefficients, in SC_INTERF_FEATURES order: produced
 * by tools/calibrate_interference.sh (`stepcast calibrate --interference` on
 * the four HTA traces in validation/traces/hta, A100, 142 pairs of 46
 * kernels; record in validation/calibration/interference-hta.yaml, which
 * test_interf checks against these values). The fit minimises the Huber loss
 * of each pair's relative duration error with the class intercepts pooled
 * (sc__interf_fit): the traces hold no fused attention or optimizer kernel
 * overlapped by NCCL, so those two take the pooled intercept (the mean of
 * GEMM, elementwise and norm). Held out (each kernel predicted by the fit
 * on the other 45), the model predicts overlapped durations with MAPE
 * 12.2 % and their sum within -7.2 %; held out by trace 12.4 %, -9.3 %; no
 * interference: 12.6 %, -11.1 %. */
static const double shipped_w[SC_INTERF_NFEAT] = {
    0.0499345, 0.0277007, 0.0270177, 0.00614992, 0.0277007, 0.0321154, 0, 0, -0.0099053, 0,
    0.00990532, 0.0256644, -0.0099053, 0,
};

void sc__interf_defaults(sc_cost_params *p) {
  p->interference_gemm = INTERF_GEMM;
  p->interference_attn = INTERF_ATTN;
  p->interference_elementwise = INTERF_ELEMENTWISE;
  p->interference_norm = INTERF_NORM;
  p->interference_optimizer = INTERF_OPTIMIZER;
  p->interference_comm = INTERF_COMM;
  sc__interf_coefs_from_array(shipped_w, &p->interference_w);
}

