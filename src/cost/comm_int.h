/*
 * comm_int.h: internals of the "nccl" collective model (comm_nccl.c): its
 * parameter set (what `stepcast calibrate --nccl-tests` fits, with defaults
 * per GPU generation), the machine description it reads, and the entry point
 * shared by the engine's vtable, `stepcast comm` and the calibration. Not API.
 */
#ifndef SC_COMM_INT_H
#define SC_COMM_INT_H

#include "stepcast/comm.h"

#include "cost/cost_int.h"

/* Descriptor of one parameter (from the list above). */
typedef struct sc_comm_param_info {
  const char *key;
  size_t offset; /* into sc_comm_params */
  double lo, hi;
  int fitted;
  double prior; /* centre of the fit's weak pull (fitted parameters) */
  const char *unit, *doc;
} sc_comm_param_info;

extern const sc_comm_param_info sc__comm_param_info[SC_COMM_PARAM_COUNT];

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
 * placement, of the algorithm and protocol NCCL would run (p->select: its
 * own tuning model's pick, or the fastest), returned in *algo and *proto
 * (either may be NULL). 0 for one rank or no bytes. */
double sc__comm_time_us(const sc_comm_topo *t, const sc_comm_params *p, int op, double bytes,
                        const sc_placement *pl, int *algo, int *proto);
/* The time nccl-tests reports for it when one host thread drives
 * gpus_per_thread GPUs (its -g; 1 for one process per GPU): at least that
 * many host launches (host_launch_us). For comparing with and fitting to
 * nccl-tests output only; the engine uses sc__comm_time_us. */
double sc__comm_bench_time_us(const sc_comm_topo *t, const sc_comm_params *p, int op,
                              double bytes, const sc_placement *pl, int64_t gpus_per_thread,
                              int *algo, int *proto);

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

/* GPUs one host thread of an nccl-tests run drives (its "nGpus"), >= 1. */
int64_t sc__comm_file_gpus_per_thread(const sc_nccltests *t);

/* Reads a whole file through the context allocator (NUL-terminated; *cap is
 * the allocation size for sc__free). SC_EREAD with "path: cannot open: why". */
int sc__comm_read_file(sc_ctx *ctx, const char *path, size_t max_bytes, char **out, size_t *len,
                       size_t *cap);

/* The registered model ("nccl", version 3). */
extern const sc_comm_model sc__comm_nccl_model;

#endif /* SC_COMM_INT_H */
