/*
 * comm_api_int.h: the instance behind the public collective-model API
 * (stepcast/comm.h, analysis/comm.c): one machine and its calibrated
 * parameters, shared by the comparison with nccl-tests and the fit
 * (analysis/comm_fit.c). Not API.
 */
#ifndef SC_COMM_API_INT_H
#define SC_COMM_API_INT_H

#include "cost/comm_int.h"

/* A model instance (stepcast/comm.h): one machine, its parameters. */
struct sc_comm {
  sc_ctx *ctx;
  const sc_hw *hw;
  sc_comm_topo topo;
  sc_comm_params params;
  int64_t gpus_per_node;
  int fit_only;                            /* 1: fit only the keys fit_key marks */
  unsigned char fit_key[SC_COMM_PARAM_COUNT]; /* sc_comm_fit_only */
};

/* The placement an nccl-tests file ran on: its device lines, or the caller's
 * numbers (gpus > 0; gpus_per_node > 0 overrides the per-node count), or the
 * ranks its bus factor implies. SC_EINVAL when none says. */
int sc__comm_file_placement(const sc_comm *m, const sc_nccltests *t, int64_t gpus,
                            int64_t gpus_per_node, sc_placement *pl);

/* GPUs one host thread of an nccl-tests run drives (its "nGpus"), >= 1. */
int64_t sc__comm_file_gpus_per_thread(const sc_nccltests *t);
/* Iterations nccl-tests averaged a row over (its -n, 20 when the header
 * does not say). */
int64_t sc__comm_file_iters(const sc_nccltests *t);

#endif /* SC_COMM_API_INT_H */
