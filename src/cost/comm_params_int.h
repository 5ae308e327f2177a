/*
 * comm_params_int.h: the parameter set and link description of the "nccl"
 * collective model, split from comm_int.h so that sc_cost (cost_int.h) can
 * hold them prepared once per run instead of rebuilding them per collective.
 * The parameters' keys, bounds and priors are the calibration key table's.
 */
#ifndef SC_COMM_PARAMS_INT_H
#define SC_COMM_PARAMS_INT_H

#include "input/calib_int.h"

#include <stdint.h>

/* The "nccl" model's working parameters: the members of sc_nccl_params (the
 * calibration keys of SC_NCCL_KEYS, input/calib_keys.h) in the same order,
 * then the point-to-point latency (the cost key p2p_latency_us). */
typedef struct sc_comm_params {
#define SC_X_MEMBER(key, member, lo, hi, fit, prior, unit, doc) double member;
  SC_NCCL_KEYS(SC_X_MEMBER)
#undef SC_X_MEMBER
  double p2p_latency_us;
} sc_comm_params;

enum { SC_COMM_PARAM_COUNT = SC_NCCL_KEY_COUNT };

/* GPU generations whose NCCL tuning constants differ. */
typedef enum { SC_ARCH_VOLTA = 0, SC_ARCH_AMPERE, SC_ARCH_HOPPER, SC_ARCH_BLACKWELL } sc_arch;

/* The links a collective can use, per GPU. */
typedef struct sc_comm_topo {
  sc_arch arch;
  double nvlink_gbps;    /* per direction, GB/s */
  double nic_gbps;       /* GB/s (bytes) per GPU */
  double hbm_gbps;       /* GB/s */
  int64_t nics_per_node; /* rail design: one NIC per GPU of a full node */
  /* Network tiers above the node (docs/COMM.md, "Network tiers"); zeros
   * (and spine_oversub <= 1) describe one non-blocking leaf. */
  int64_t nodes_per_leaf;  /* 0: every node under one leaf */
  double spine_oversub;    /* leaf downlink : uplink bandwidth */
  double leaf_latency_us;  /* extra per network step */
  double spine_latency_us; /* extra per network step crossing the spine */
  int rail_optimized;      /* with nodes_per_leaf: rail leaves, PXN forwarding */
} sc_comm_topo;

#endif /* SC_COMM_PARAMS_INT_H */
