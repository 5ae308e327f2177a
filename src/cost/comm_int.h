/*
 * comm_int.h: internals of the "nccl" collective model (comm_nccl.c): its
 * defaults per GPU generation, the machine description it reads, and the
 * entry point shared by the engine's vtable, `stepcast comm` and the
 * calibration (analysis/comm.c, comm_fit.c). Not API.
 */
#ifndef SC_COMM_INT_H
#define SC_COMM_INT_H

#include "stepcast/comm.h"

#include "cost/cost_int.h"

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
/* Replaces the parameters that cp gives (non-zero nccl.* and p2p_latency_us)
 * in p. */
void sc__comm_params_apply(const sc_cost_params *cp, sc_comm_params *p);
/* The parameters the engine's vtable uses: the GPU's defaults with the
 * config's calibration applied. */
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

/* The reduction term of a candidate (us): reduce_passes HBM passes over the
 * bytes the GPU reduces with algorithm `algo` (0 for collectives that
 * reduce nothing and for NVLS / CollNet, whose switches reduce). Included
 * in sc__comm_time_us; returned on its own for reporting. */
double sc__comm_reduce_us(const sc_comm_topo *t, const sc_comm_params *p, int op, double bytes,
                          const sc_placement *pl, int algo);
/* One-time first-call setup of a collective over the placement (us):
 * setup_us x ranks x (nodes - 1); 0 inside a node. Benchmarks only. */
double sc__comm_setup_us(const sc_comm_params *p, const sc_placement *pl);

/* Network tiers (docs/COMM.md, "Network tiers"): the share of the NIC rate
 * left when a fraction `crossing` of every GPU's network bytes crosses the
 * spine and every GPU of the leaf sends at once (1 without oversubscription);
 * the extra latency (us) of `steps` network steps, `xsteps` of them across
 * the spine. */
double sc__comm_spine_crossing_share(const sc_comm_topo *t, double crossing);
double sc__comm_tier_lat_us(const sc_comm_topo *t, double steps, double xsteps);

/* The registered model ("nccl", version 4). */
extern const sc_comm_model sc__comm_nccl_model;

#endif /* SC_COMM_INT_H */
