/*
 * comm_ep.c: the price of a mixture-of-experts dispatch or combine on
 * DeepEP's normal (training) kernels, the hierarchical all-to-all of
 * parallel.moe_dispatcher deepep. The NCCL all-to-all of the other
 * dispatchers is the collective model's (comm_nccl.c, alltoall_us); this
 * file only knows what DeepEP does differently. docs/MOE.md.
 */
#include "cost/comm_int.h"

#include <math.h>

/* DeepEP (github.com/deepseek-ai/DeepEP, README "Normal kernels with NVLink
 * and RDMA forwarding"), measured on H800 (~160 GB/s NVLink maximum, one
 * CX7 400 Gb/s InfiniBand NIC of ~50 GB/s per GPU) with DeepSeek-V3's
 * pre-training setting (4096 tokens per batch, hidden 7168, top-8):
 * intranode dispatch / combine at 153 / 158 GB/s NVLink bottleneck
 * bandwidth, internode 43 / 43 (EP 16), 58 / 57 (EP 32), 51 / 50 GB/s
 * (EP 64) RDMA bottleneck bandwidth. As fractions of the links: NVLink
 * 155.5 of the H800's 200 GB/s per direction (0.78), RDMA the mean of the
 * six internode figures, 50.3 of 50 GB/s (1.0: the NIC). We assume the
 * same fractions on other GPUs. */
#define DEEPEP_NVLINK_FRAC 0.78
#define DEEPEP_RDMA_FRAC 1.0

/* Probability that none of a token's k experts (chosen uniformly without
 * repetition among E) is one of the `held` experts of a node:
 * C(E - held, k) / C(E, k). */
static double miss_prob(double E, double held, double k) {
  double p = 1.0;
  for (double i = 0; i < k; i++) {
    if (E - held - i <= 0) return 0.0;
    p *= (E - held - i) / (E - i);
  }
  return p;
}

/* DeepEP sends each token once per destination node over RDMA (to the GPU
 * of the same local index there), which forwards it over NVLink to the
 * GPUs whose experts it was routed to; tokens for the sender's own node go
 * over NVLink directly. With bytes = the k routed copies a rank sends
 * (tokens x k x hidden x elem), a group of n ranks on `nodes` nodes with q
 * per node and uniform routing:
 *   RDMA bytes  = bytes / k * (nodes - 1) * (1 - miss(E, E q / n, k)): the
 *                 expected remote nodes a token reaches;
 *   NVLink bytes = bytes * (q - 1) / q: every copy lands on its node's
 *                 receiving GPU and all but 1 / q move on (or start) over
 *                 NVLink.
 * Both run at once; the call takes the slower plus the NCCL model's launch
 * and p2p latency (DeepEP's own is not published for normal kernels).
 * Across leaves (network tiers, docs/COMM.md) the RDMA copies for nodes
 * under other leaves cross the spine, every GPU of the leaf at once, as an
 * NCCL all-to-all's do; DeepEP's RDMA already goes to the same local index
 * (its own rail), so rails change nothing. */
double sc__ep_deepep_ns(const sc_cost *c, double bytes, const sc_placement *pl) {
  double n = (double)pl->n, nodes = (double)pl->nodes, q = (double)pl->per_node;
  double k = c->moe_topk > 0 ? c->moe_topk : 1.0, E = c->moe_experts > 0 ? c->moe_experts : n;
  if (n <= 1 || bytes <= 0) return 0.0;
  double remote = nodes > 1 ? (nodes - 1.0) * (1.0 - miss_prob(E, E * q / n, k)) : 0.0;
  double rdma = bytes / k * remote, nvl = q > 1 ? bytes * (q - 1.0) / q : 0.0;
  double rdma_gbps = c->nic_bytes_per_ns * DEEPEP_RDMA_FRAC; /* bytes/ns == GB/s */
  double lat_us = c->comm_params.launch_us + c->comm_params.p2p_latency_us;
  if (nodes > 1) {
    double leaves = pl->leaves > 1 ? fmin((double)pl->leaves, nodes) : 1.0;
    double crossing = (nodes - nodes / leaves) / (nodes - 1.0); /* of the remote nodes */
    rdma_gbps *= sc__comm_spine_crossing_share(&c->comm_topo, crossing);
    lat_us += sc__comm_tier_lat_us(&c->comm_topo, 1, leaves > 1 ? 1 : 0);
  }
  double nvl_gbps = c->nvlink_bytes_per_ns * DEEPEP_NVLINK_FRAC;
  double t = fmax(rdma > 0 ? rdma / rdma_gbps : 0.0, nvl > 0 ? nvl / nvl_gbps : 0.0);
  return lat_us * 1e3 + t;
}
