/*
 * comm_int.h: internals of the "nccl" collective model (comm_nccl.c): its
 * parameter set (what `stepcast calibrate --nccl-tests` fits, with defaults
 * per GPU generation), the machine description it reads, and the entry point
 * shared by the engine's vtable, `stepcast comm` and the calibration. Not API.
 */
#ifndef SC_COMM_INT_H
#define SC_COMM_INT_H

#include "stepcast/comm.h"

#include "cost_int.h"

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

/* Descriptor of one parameter (from the list above). */
typedef struct sc_comm_param_info {
  const char *key;
  size_t offset; /* into sc_comm_params */
  double lo, hi;
  int fitted;
  const char *unit, *doc;
} sc_comm_param_info;

extern const sc_comm_param_info sc__comm_param_info[SC_COMM_PARAM_COUNT];

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

enum {
  SC_ALGO_RING = 0,
  SC_ALGO_TREE,
  SC_ALGO_NVLS,
  SC_ALGO_NVLS_TREE,
  SC_ALGO_COLLNET,
  SC_ALGO_PAT,
  SC_ALGO_P2P,
  SC_ALGO_COUNT
};
enum { SC_PROTO_LL = 0, SC_PROTO_LL128, SC_PROTO_SIMPLE, SC_PROTO_COUNT };

sc_arch sc__comm_arch(const sc_hw *hw);
/* Defaults of the model for a GPU (docs/COMM.md gives each source). */
void sc__comm_params_default(const sc_hw *hw, sc_comm_params *p);
/* The parameters the engine's vtable uses: the defaults, and p2p_latency_us
 * from the cost parameters (the only key the two share). */
void sc__comm_params_from_cost(const sc_cost *c, sc_comm_params *p);
void sc__comm_topo_from_cost(const sc_cost *c, sc_comm_topo *t);

/* Time in microseconds of collective `op` (SC_COMM_*) of `bytes` over the
 * placement; NCCL's choice (fastest algorithm and protocol) in *algo and *proto
 * (either may be NULL). 0 for one rank or no bytes. */
double sc__comm_time_us(const sc_comm_topo *t, const sc_comm_params *p, int op, double bytes,
                        const sc_placement *pl, int *algo, int *proto);

/* Sets one parameter by YAML key; returns 1 if the key is this model's, 0
 * if not, -1 if the value is out of bounds. For config.c's `calibration:`. */
int sc__comm_params_set(sc_comm_params *p, const char *key, double value);
/* Index of a parameter key in sc__comm_param_info (and sc_cost_params.nccl),
 * or -1. Keys shared with sc_cost_params (p2p_latency_us) are not counted:
 * they have their own config field. */
int sc__comm_param_index(const char *key);
/* Loads the top-level `calibration:` mapping of a YAML file into *p: keys of
 * this model are applied (checked against their bounds), other keys are left
 * for other models. Errors "file:line: message". */
int sc__comm_params_load_yaml(sc_ctx *ctx, sc_comm_params *p, const char *path);

/* A model instance (stepcast/comm.h): one machine, its parameters. */
struct sc_comm {
  sc_ctx *ctx;
  const sc_hw *hw;
  sc_comm_topo topo;
  sc_comm_params params;
  int64_t gpus_per_node;
};

/* The placement an nccl-tests file ran on: its device lines, or the caller's
 * numbers (gpus > 0; gpus_per_node > 0 overrides the per-node count), or the
 * ranks its bus factor implies. SC_EINVAL when none says. */
int sc__comm_file_placement(const sc_comm *m, const sc_nccltests *t, int64_t gpus,
                            int64_t gpus_per_node, sc_placement *pl);

/* Reads a whole file through the context allocator (NUL-terminated; *cap is
 * the allocation size for sc__free). SC_EIO with "path: cannot open: why". */
int sc__comm_read_file(sc_ctx *ctx, const char *path, size_t max_bytes, char **out, size_t *len,
                       size_t *cap);

/* The registered model ("nccl", version 2). */
extern const sc_comm_model sc__comm_nccl_model;

#endif /* SC_COMM_INT_H */
