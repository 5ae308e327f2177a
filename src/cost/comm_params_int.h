/*
 * comm_params_int.h: the parameter set and link description of the "nccl"
 * collective model, split from comm_int.h so that sc_cost (cost_int.h) can
 * hold them prepared once per run instead of rebuilding them per collective.
 */
#ifndef SC_COMM_PARAMS_INT_H
#define SC_COMM_PARAMS_INT_H

#include "stepcast/stepcast.h"

#include <stdint.h>

/* X(key, member, lo, hi, fitted, prior, unit, doc): the model's parameters,
 * the single source of the YAML keys (calibration: mapping), their bounds
 * and docs/COMM.md. `fitted` marks what calibration moves; the others are
 * facts or assumptions that nccl-tests all-reduce logs cannot identify.
 * `prior` is where the fit's weak pull goes for what the rows leave flat:
 * NCCL's own figure where it has one, else a physical estimate (the doc
 * says which). Keys are prefixed nccl_ except p2p_latency_us, which is
 * sc_cost_params' own (same meaning, shared by both communication models). */
#define SC_COMM_PARAM_LIST(X)                                                                      \
  X(nccl_nvlink_eff, nvlink_eff, 0.05, 1.0, 1, 0.78, "",                                           \
    "Simple-protocol link efficiency of NVLink: ring bandwidth / NVLink per direction (prior: "    \
    "NCCL's A100 ceiling, 235 of 300 GB/s)")                                                       \
  X(nccl_nic_eff, nic_eff, 0.05, 1.0, 1, 0.96, "",                                                 \
    "Simple-protocol link efficiency of the NICs: ring bandwidth / line rate of the rails "        \
    "(prior: NCCL's 24 of 25 GB/s)")                                                               \
  X(nccl_launch_us, launch_us, 0.0, 100.0, 0, 0.0, "us",                                           \
    "fixed cost of every collective call beyond NCCL's base latency (Echo's alpha)")               \
  X(nccl_channel_us, channel_us, 0.0, 20.0, 1, 1.0, "us",                                          \
    "fixed cost per channel (one CTA) a ring call runs on beyond the first; NCCL runs fewer "      \
    "channels for small calls (prior: 1 us)")                                                      \
  X(nccl_tree_channel_us, tree_channel_us, 0.0, 20.0, 1, 1.0, "us",                               \
    "the same for a tree call (prior: 1 us)")                                                      \
  X(nccl_base_scale, base_scale, 0.02, 20.0, 1, 1.0, "",                                           \
    "multiplier of NCCL's LL128 and Simple base latencies (ring 14 / 8.4, tree 14 / 8.4 us); LL "  \
    "keeps NCCL's (6.6, tree 6.8 us)")                                                             \
  X(nccl_intra_hop_scale, intra_hop_scale, 0.02, 50.0, 0, 1.0, "",                                 \
    "extra multiplier of a ring's NVLink steps (priced as a tree's chain steps) and of the "       \
    "NVLink latencies of NVLS and CollNet")                                                        \
  X(nccl_tree_hop_scale, tree_hop_scale, 0.02, 50.0, 1, 1.0, "",                                   \
    "multiplier of NCCL's NVLink step latencies of a tree's chain (LL 0.6, LL128 1.25, Simple 4 "  \
    "us); a ring's steps over NVLink cost the same")                                               \
  X(nccl_net_hop_scale, net_hop_scale, 0.02, 50.0, 1, 1.0, "",                                     \
    "multiplier of NCCL's LL network step latencies (ring 2.7, tree 5 us)")                        \
  X(nccl_net_bulk_hop_scale, net_bulk_hop_scale, 0.02, 50.0, 1, 1.0, "",                           \
    "multiplier of NCCL's LL128 and Simple network step latencies (ring 4 / 14, tree 8.5 / 14 "   \
    "us)")                                                                                         \
  X(nccl_ll_frac, ll_frac, 0.01, 1.0, 1, 0.25, "",                                                 \
    "LL link rate / Simple (prior: NCCL's tuner, 1/4 for rings; trees 1/3.8 of the tree rate)")    \
  X(nccl_ll_stream_gbps, ll_stream_gbps, 0.1, 100.0, 1, 5.0, "GB/s",                               \
    "LL rate of one channel (thread block); a call's LL data moves at most at this times the "     \
    "channels it starts (prior: NCCL's LL rate of one A100 channel, 58.75 GB/s over 12)")          \
  X(nccl_ll_net_gbps, ll_net_gbps, 0.05, 100.0, 1, 5.0, "GB/s",                                    \
    "LL across the network: each crossing stores and forwards the share at this rate (prior: as "  \
    "nccl_ll_stream_gbps)")                                                                        \
  X(nccl_ll128_frac, ll128_frac, 0.05, 1.0, 1, 0.92, "",                                           \
    "LL128 bandwidth / Simple (prior: NCCL's tuner, 0.92; 120 of 128 bytes are data)")             \
  X(nccl_tree_frac, tree_frac, 0.05, 1.0, 1, 0.92, "",                                             \
    "tree bandwidth / ring (prior: NCCL's tuner, 0.92)")                                           \
  X(nccl_pipe_kib, pipe_kib, 1.0, 65536.0, 1, 512.0, "KiB",                                        \
    "Simple chunk over all channels: each ring or tree step adds one chunk time (prior: one "      \
    "NCCL Simple step, 512 KiB)")                                                                  \
  X(nccl_mem_passes, mem_passes, 0.0, 20.0, 1, 1.0, "",                                            \
    "passes over the buffer through HBM that the links do not hide (prior: 1, the output write)")  \
  X(nccl_nvls_eff, nvls_eff, 0.0, 2.0, 0, 0.0, "",                                                 \
    "NVLS all-reduce bus bandwidth / NVLink per direction; 0: no NVLS")                            \
  X(p2p_latency_us, p2p_latency_us, 0.0, 1000.0, 0, 0.0, "us",                                     \
    "latency of a point-to-point transfer (sc_cost_params' own key)")                              \
  X(nccl_a2a_peer_us, a2a_peer_us, 0.0, 100.0, 0, 0.0, "us",                                       \
    "all-to-all cost per peer (n-1 sends and receives are posted)")                                \
  X(nccl_net_overhead_us, net_overhead_us, 0.0, 100.0, 0, 0.0, "us",                               \
    "floor of a ring step across nodes (NCCL: 1 us Intel hosts; x3 Simple)")                       \
  X(nccl_channels, channels, 1.0, 64.0, 0, 0.0, "",                                                \
    "NCCL channels of an 8-GPU node; scales the per-channel bandwidth ceilings")                   \
  X(nccl_sharp, sharp, 0.0, 1.0, 0, 0.0, "",                                                       \
    "1: in-network reduction (CollNet/SHARP), enables CollNet and multi-node NVLS")                \
  X(nccl_select, select, 1.0, 2.0, 0, 0.0, "",                                                     \
    "who picks algorithm and protocol: 1 the fastest calibrated candidate, 2 NCCL 2.8-2.12's "     \
    "own tuning model (the calibrated model prices its pick)")                                     \
  X(nccl_host_launch_us, host_launch_us, 0.0, 50.0, 1, 4.5, "us",                                  \
    "host time to launch one GPU's share of a call: nccl-tests -g G (one thread, G GPUs) cannot "  \
    "go faster than G times it; benchmarks only, not the engine (prior: 4.5 us, the 1-GPU log)")

typedef struct sc_comm_params {
#define SC_X_MEMBER(key, member, lo, hi, fit, prior, unit, doc) double member;
  SC_COMM_PARAM_LIST(SC_X_MEMBER)
#undef SC_X_MEMBER
} sc_comm_params;

#define SC_X_ONE(key, member, lo, hi, fit, prior, unit, doc) +1
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
