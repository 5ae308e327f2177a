/*
 * comm_params_int.h: the parameter set and link description of the "nccl"
 * collective model, split from comm_int.h so that sc_cost (cost_int.h) can
 * hold them prepared once per run instead of rebuilding them per collective.
 */
#ifndef SC_COMM_PARAMS_INT_H
#define SC_COMM_PARAMS_INT_H

#include "stepcast/stepcast.h"

#include <stdint.h>

/* X(key, member, lo, hi, fitted, unit, doc): the model's parameters, the
 * single source of the YAML keys (calibration: mapping), their bounds and
 * docs/COMM.md. `fitted` marks what calibration moves; the others are facts
 * or assumptions that nccl-tests all-reduce logs cannot identify. Keys are
 * prefixed nccl_ except p2p_latency_us, which is sc_cost_params' own (same
 * meaning, shared by both communication models). */
#define SC_COMM_PARAM_LIST(X)                                                                      \
  X(nccl_nvlink_eff, nvlink_eff, 0.05, 1.0, 1, "",                                                 \
    "Simple-protocol link efficiency of NVLink: ring bandwidth / NVLink per direction")            \
  X(nccl_nic_eff, nic_eff, 0.05, 1.0, 1, "",                                                       \
    "Simple-protocol link efficiency of the NICs: ring bandwidth / line rate of the rails")        \
  X(nccl_launch_us, launch_us, 0.0, 100.0, 0, "us",                                                \
    "fixed cost of every collective call beyond NCCL's base latency (Echo's alpha)")               \
  X(nccl_base_scale, base_scale, 0.02, 20.0, 0, "",                                                \
    "multiplier of NCCL's base latencies (ring LL 6.6, LL128 14, Simple 8.4 us)")                  \
  X(nccl_intra_hop_scale, intra_hop_scale, 0.02, 50.0, 1, "",                                      \
    "multiplier of NCCL's NVLink step latencies (ring LL 0.6, LL128 1.9, Simple 3.4 us)")          \
  X(nccl_tree_hop_scale, tree_hop_scale, 0.02, 50.0, 1, "",                                        \
    "multiplier of NCCL's NVLink step latencies in a tree's intra-node chain")                     \
  X(nccl_net_hop_scale, net_hop_scale, 0.02, 50.0, 1, "",                                          \
    "multiplier of NCCL's network step latencies (tree LL 5, LL128 8.5, Simple 14 us)")            \
  X(nccl_ll_frac, ll_frac, 0.01, 1.0, 1, "",                                                       \
    "LL bandwidth / Simple (NCCL's tuner: 0.5 for rings; trees 0.5/1.9 of it)")                    \
  X(nccl_ll128_frac, ll128_frac, 0.05, 1.0, 1, "",                                                 \
    "LL128 bandwidth / Simple (NCCL's tuner: 0.92; 120 of 128 bytes are data)")                    \
  X(nccl_tree_frac, tree_frac, 0.05, 1.0, 1, "", "tree bandwidth / ring (NCCL's tuner: 0.92)")     \
  X(nccl_pipe_kib, pipe_kib, 1.0, 65536.0, 1, "KiB",                                               \
    "Simple chunk over all channels: each ring or tree step adds one chunk time")                  \
  X(nccl_mem_passes, mem_passes, 0.0, 20.0, 1, "",                                                 \
    "passes over the buffer through HBM that the links do not hide (input, output)")               \
  X(nccl_nvls_eff, nvls_eff, 0.0, 2.0, 0, "",                                                      \
    "NVLS all-reduce bus bandwidth / NVLink per direction; 0: no NVLS")                            \
  X(p2p_latency_us, p2p_latency_us, 0.0, 1000.0, 0, "us",                                          \
    "latency of a point-to-point transfer (sc_cost_params' own key)")                              \
  X(nccl_a2a_peer_us, a2a_peer_us, 0.0, 100.0, 0, "us",                                            \
    "all-to-all cost per peer (n-1 sends and receives are posted)")                                \
  X(nccl_net_overhead_us, net_overhead_us, 0.0, 100.0, 0, "us",                                    \
    "floor of a ring step across nodes (NCCL: 1 us Intel hosts; x3 Simple)")                       \
  X(nccl_channels, channels, 1.0, 64.0, 0, "",                                                     \
    "NCCL channels; scales the per-channel bandwidth ceilings")                                    \
  X(nccl_sharp, sharp, 0.0, 1.0, 0, "",                                                            \
    "1: in-network reduction (CollNet/SHARP), enables CollNet and multi-node NVLS")

typedef struct sc_comm_params {
#define SC_X_MEMBER(key, member, lo, hi, fit, unit, doc) double member;
  SC_COMM_PARAM_LIST(SC_X_MEMBER)
#undef SC_X_MEMBER
} sc_comm_params;

#define SC_X_ONE(key, member, lo, hi, fit, unit, doc) +1
enum { SC_COMM_PARAM_COUNT = 0 SC_COMM_PARAM_LIST(SC_X_ONE) };
#undef SC_X_ONE

/* GPU generations whose NCCL tuning constants differ. */
typedef enum { SC_ARCH_VOLTA = 0, SC_ARCH_AMPERE, SC_ARCH_HOPPER, SC_ARCH_BLACKWELL } sc_arch;

/* The links a collective can use, per GPU. */
typedef struct sc_comm_topo {
  sc_arch arch;
  double nvlink_gbps;    /* per direction, GB/s */
  double nic_gbps;       /* GB/s (bytes) per GPU */
  double hbm_gbps;       /* GB/s */
  int64_t nics_per_node; /* rail design: one NIC per GPU of a full node */
} sc_comm_topo;

#endif /* SC_COMM_PARAMS_INT_H */
