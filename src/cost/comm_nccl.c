/*
 * comm_nccl.c: the "nccl" collective model (version 5). For every algorithm
 * NCCL could run (ring, tree, NVLS, NVLS-tree, CollNet, PAT, p2p) and every
 * protocol (LL, LL128, Simple) it prices latency + bytes / bandwidth from the
 * group's placement and the links, then picks the candidate NCCL would run:
 * the one NCCL 2.8-2.12's own tuning model ranks first (Volta/Ampere), or
 * the fastest. The structure and constants follow NCCL (NVIDIA/nccl,
 * src/graph/tuning.cc and enqueue.cc, read for facts only); the scales are
 * calibrated from nccl-tests output (comm_fit.c). Version 5 adds the GPUs'
 * reduction (all-reduce, reduce-scatter), a one-time first-call setup for
 * benchmarks, a smooth minimum of NVLink and network rates across nodes,
 * NVLS at its algorithm bandwidth, and Hopper defaults of their own.
 * docs/COMM.md explains every term.
 */
#include "cost/comm_int.h"

#include <math.h>
#include <stddef.h>
#include <strings.h>

_Static_assert((int)SC_COMM_ALL_REDUCE == (int)SC_COLL_ALLREDUCE &&
                   (int)SC_COMM_ALL_GATHER == (int)SC_COLL_ALLGATHER &&
                   (int)SC_COMM_REDUCE_SCATTER == (int)SC_COLL_REDUCESCATTER &&
                   (int)SC_COMM_ALL_TO_ALL == (int)SC_COLL_ALLTOALL &&
                   (int)SC_COMM_BROADCAST == (int)SC_COLL_BROADCAST &&
                   (int)SC_COMM_SEND_RECV == (int)SC_COLL_SENDRECV &&
                   (int)SC_COMM_OP_COUNT == (int)SC_COLL_COUNT,
               "sc_comm_op must be the SC_COLL_* list in the same order");

/* sc_comm_params starts with sc_nccl_params' members, in the same order, so
 * the key table's member offsets serve both. */
_Static_assert(offsetof(sc_comm_params, p2p_latency_us) == sizeof(sc_nccl_params),
               "sc_comm_params must start with sc_nccl_params");

/* ------------------------------------------------------------ NCCL facts */

/* Per GPU generation, from the default tuner constants of NCCL 2.2x
 * (src/graph/tuning.cc): the LL bus-bandwidth ceiling on one node
 * (Volta 39, Ampere 87.7, Hopper 141, Blackwell 282 GB/s), the per-channel
 * ceilings of ring LL128 and of tree Simple / LL128 / NVLS-tree for 1, 2 and
 * more nodes, and NVLS's efficiency. `channels` is what NCCL's
 * communicator runs on an 8-GPU NVSwitch node, twice its topology graph's
 * (env.ch_graph); it sets the per-channel ceilings and how many channels a
 * call starts (channels_used). Ampere: 24 (NCCL 2.8-2.12's search finds 6
 * ring channels over the NVSwitch, doubles them at >= 25 GB/s each, and
 * ncclTopoPostset doubles again; public HGX A100 logs show 24 channels). nvls_eff is
 * the bus bandwidth of an NVLS all-reduce over NVLink per direction: ~480
 * GB/s measured on H100 (450 GB/s) per the blueprint's section 4; Blackwell
 * scaled by NCCL's NVLS efficiency ratio 0.74 / 0.85. */
typedef struct arch_facts {
  double ll_max_gbps;
  double ll128_ch_gbps;
  double tree_ch_gbps[3];
  double tree_ll128_ch_gbps[3];
  double nvls_tree_ch_gbps[3];
  double nvls_eff;
  int channels;
} arch_facts;

static const arch_facts facts[] = {
    [SC_ARCH_VOLTA] = {39.0, 20.0, {26.5, 18.5, 10.0}, {20.0, 20.0, 20.0}, {0, 0, 0}, 0.0, 12},
    [SC_ARCH_AMPERE] = {87.7, 20.0, {24.0, 23.6, 17.8}, {20.0, 20.0, 20.0}, {0, 0, 0}, 0.0, 24},
    [SC_ARCH_HOPPER] =
        {141.0, 36.7, {38.7, 41.4, 36.0}, {36.7, 36.7, 29.0}, {0, 57.7, 45.5}, 480.0 / 450.0, 32},
    [SC_ARCH_BLACKWELL] = {282.0,
                           40.0,
                           {70.0, 42.8, 24.0},
                           {55.6, 31.67, 20.0},
                           {0, 96.0, 80.0},
                           480.0 / 450.0 * 0.74 / 0.85,
                           32},
};

/* LL ceiling across nodes (NCCL keys it on the CPU; Intel hosts): 39 GB/s on
 * two nodes, 20.4 beyond. */
static double ll_max_gbps(const sc_comm_topo *t, int64_t nodes) {
  if (nodes <= 1) return facts[t->arch].ll_max_gbps;
  return nodes == 2 ? 39.0 : 20.4;
}

/* Latencies in microseconds, NCCL's defaults: a base per algorithm and
 * protocol, plus one NVLink or network hop per step of the algorithm.
 * Indexed [algo][LL, LL128, Simple]; 0 where NCCL has no such pair. */
static const struct {
  double base[SC_PROTO_COUNT], nvlink[SC_PROTO_COUNT], net[SC_PROTO_COUNT];
} lat_us[SC_ALGO_COUNT] = {
    [SC_ALGO_RING] = {{6.6, 14.0, 8.4}, {0.6, 1.9, 3.4}, {2.7, 4.0, 14.0}},
    [SC_ALGO_TREE] = {{6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {5.0, 8.5, 14.0}},
    [SC_ALGO_NVLS] = {{0, 0, 0}, {0, 0, 25.0}, {0, 0, 18.0}},
    [SC_ALGO_NVLS_TREE] = {{0, 0, 0}, {0, 0, 25.0}, {0, 0, 20.9}},
    [SC_ALGO_COLLNET] = {{0, 0, 0}, {0, 0, 3.7}, {0, 0, 31.0}},
    [SC_ALGO_PAT] = {{8.0, 8.0, 8.0}, {0, 0, 4.0}, {0, 0, 14.0}},
    [SC_ALGO_P2P] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
};

sc_arch sc__comm_arch(const sc_hw *hw) {
  const char *n = hw ? hw->name : "";
  if (!strncasecmp(n, "v100", 4)) return SC_ARCH_VOLTA;
  if (!strncasecmp(n, "h100", 4) || !strncasecmp(n, "h200", 4) || !strncasecmp(n, "h800", 4) ||
      !strncasecmp(n, "h20", 3) || !strncasecmp(n, "gh200", 5))
    return SC_ARCH_HOPPER;
  if (!strncasecmp(n, "b200", 4) || !strncasecmp(n, "b100", 4) || !strncasecmp(n, "gb200", 5) ||
      !strncasecmp(n, "b300", 4))
    return SC_ARCH_BLACKWELL;
  return SC_ARCH_AMPERE;
}

/* ------------------------------------------------------------ defaults */

/* Everything but p2p_latency_us, which belongs to sc_cost_params. Cheap:
 * the engine's vtable calls it for every collective it prices. */
static void model_defaults(sc_arch arch, sc_comm_params *p) {
  memset(p, 0, sizeof *p);
  /* Fitted (`stepcast calibrate --nccl-tests`, three significant digits) on
   * the 8-, 16- and 32-GPU Azure ND A100 v4 all-reduce logs
   * (validation/nccl/azure-ndv4-a100/); docs/COMM.md has the fit, its
   * held-out error on 2, 4, 64 and 128 GPUs, and its transfer to H200.
   * Volta, Ampere and Blackwell use these; Hopper has its own fit below. */
  p->nvlink_eff = 0.896;
  p->nic_eff = 0.708;
  p->launch_us = 0.0;  /* NCCL's base latencies include the launch */
  p->channel_us = 1.58;
  p->tree_channel_us = 0.793;
  p->base_scale = 1.10;
  /* ring steps over NVLink are priced with the tree's step latencies
   * (hop_us), so one fitted scale serves both */
  p->intra_hop_scale = 1.0;
  p->tree_hop_scale = 1.13;
  p->net_hop_scale = 1.84;
  p->net_bulk_hop_scale = 1.74;
  p->ll_frac = 0.326;
  p->ll128_frac = 0.906;
  p->ll_stream_gbps = 3.92;
  p->ll_net_gbps = 5.73;
  p->tree_frac = 0.886;
  p->pipe_kib = 288;
  p->mem_passes = 1.05;
  p->nvls_eff = facts[arch].nvls_eff;
  p->a2a_peer_us = 0.5;     /* assumed; no all-to-all measurement shipped */
  p->net_overhead_us = 1.0; /* NCCL's default for Intel hosts */
  p->channels = facts[arch].channels;
  p->sharp = 0;
  /* Volta and Ampere clusters ran NCCL 2.8-2.12 in the calibration data's
   * era (the Azure logs); later generations get the fastest candidate */
  p->select = arch <= SC_ARCH_AMPERE ? 2 : 1;
  p->host_launch_us = 3.85;
  p->reduce_passes = 0.519;
  p->setup_us = 27.0;
  p->ring_mix = 7.80;
  if (arch == SC_ARCH_HOPPER) {
    /* Fitted the same way on the H100 calibration logs: 8 GPUs on one node
     * (validation/nccl/h100-together, h100-cluster01 *_8gpu.log, every
     * collective) and 40 GPUs on 10 nodes (h100-cluster01 *_40gpu.log but
     * send/recv, whose network runs at half the NIC in that job); docs/COMM.md
     * section 4 has the held-out 4, 10, 20 and 80 GPUs. Only the keys those
     * logs identify are fitted (`calibrate --params`, tools/comm_heldout.sh):
     * they have no small multi-node call, so LL, the trees and the network
     * latency keep the Azure fit's values, as does setup_us (no H100
     * first-call row is published). */
    p->nvlink_eff = 0.785;
    p->nic_eff = 0.965;
    p->channel_us = 0.447;
    p->base_scale = 0.598;
    p->tree_hop_scale = 0.636;
    p->net_bulk_hop_scale = 1.56;
    p->ll128_frac = 0.944;
    p->pipe_kib = 265;
    p->mem_passes = 0.223;
    p->host_launch_us = 4.52;
    p->reduce_passes = 0.206;
    p->ring_mix = 8.67;
  }
}

void sc__comm_params_default(const sc_hw *hw, sc_comm_params *p) {
  model_defaults(sc__comm_arch(hw), p);
  p->p2p_latency_us = SC_P2P_LATENCY_US_DEFAULT;
}

void sc__comm_params_apply(const sc_cost_params *cp, sc_comm_params *p) {
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++) {
    double v = *(const double *)((const char *)&cp->nccl + sc__nccl_keys[i].member);
    if (v != 0) *(double *)((char *)p + sc__nccl_keys[i].member) = v;
  }
  if (cp->p2p_latency_us != 0) p->p2p_latency_us = cp->p2p_latency_us;
}

void sc__comm_params_from_cost(const sc_cost *c, sc_comm_params *p) {
  sc__comm_params_default(c->hw, p);
  /* Calibrated values (config `calibration: nccl_*`) replace the defaults. */
  sc__comm_params_apply(&c->p, p);
}

void sc__comm_topo_from_cost(const sc_cost *c, sc_comm_topo *t) {
  t->arch = sc__comm_arch(c->hw);
  t->nvlink_gbps = c->nvlink_bytes_per_ns; /* bytes/ns == GB/s */
  t->nic_gbps = c->nic_bytes_per_ns;
  t->hbm_gbps = c->hbm_bytes_per_ns;
  t->nics_per_node = c->gpus_per_node;
  t->nodes_per_leaf = c->nodes_per_leaf;
  t->spine_oversub = c->spine_oversub;
  t->leaf_latency_us = c->leaf_latency_us;
  t->spine_latency_us = c->spine_latency_us;
  t->rail_optimized = c->rail_optimized;
}

/* ------------------------------------------------------------ the model */

/* Everything one evaluation needs about the group and its links. */
typedef struct env {
  const sc_comm_topo *t;
  const sc_comm_params *p;
  const arch_facts *f;
  double n, nodes, ppn; /* ranks, nodes spanned, most ranks per node */
  int ncat;             /* NCCL's node category: 0 one node, 1 two, 2 more */
  double b_nvl, b_net;  /* Simple bus bandwidth of NVLink and of the rails, GB/s */
  double b_ring;        /* of a ring over the placement */
  double depth;         /* levels of the inter-node tree */
  double ch_graph;      /* channels of NCCL's graph: half of `channels` in a node, one per rail
                           across nodes; the communicator runs twice as many (connect.cc) */
  double bytes;         /* the call's size */
  double leaves;        /* leaves the nodes span (network tiers; 1: no spine crossed) */
  double spine;         /* share of the NIC rate left to a ring's or tree's links across the
                           spine (spine_share; 1 inside a leaf) */
} env;

/* ------------------------------------------------------------ network tiers */

/* Network tiers (docs/COMM.md, "Network tiers"): nodes sit under leaves of
 * nodes_per_leaf nodes, leaves meet at a spine whose uplinks carry
 * 1 / spine_oversub of what the leaf's GPUs can inject. Every rank of a
 * training step runs the same collectives at once (SPMD), so all GPUs of a
 * leaf belong to some instance of the group kind and send at once; what a
 * crossing flow gets is the leaf's uplink over the flows that cross it.
 *
 * Ring and tree: each channel of a ring crosses each leaf boundary once (the
 * ring follows the nodes' order, and a job's nodes fill leaves in order), a
 * double binary tree about once per tree; with g = nodes / leaves of the
 * group's nodes under one leaf, a leaf holds nodes_per_leaf / g instances per
 * rail, each with one crossing flow, against nodes_per_leaf x NIC / ratio of
 * uplink per rail: a crossing link runs at NIC x min(1, g / ratio). A DP
 * group filling whole leaves is barely slowed; one with a node per leaf
 * (a group strided across leaves) runs its crossing links at NIC / ratio. */
static double spine_share(const sc_comm_topo *t, double nodes, double leaves) {
  double r = t->spine_oversub;
  if (!(leaves > 1) || !(r > 1)) return 1.0;
  return fmin(1.0, nodes / leaves / r);
}

/* All-to-all and p2p: the share of the NIC rate left when a fraction
 * `crossing` of every GPU's network bytes crosses the spine, every GPU of
 * the leaf sending at once: the uplinks carry crossing x NIC per GPU against
 * NIC / ratio, so all network bytes slow by min(1, 1 / (ratio x crossing)). */
double sc__comm_spine_crossing_share(const sc_comm_topo *t, double crossing) {
  double r = t->spine_oversub;
  if (!(r > 1) || !(crossing > 0)) return 1.0;
  return fmin(1.0, 1.0 / (r * crossing));
}

/* Extra latency (us) of `steps` network steps of which `xsteps` cross the
 * spine (cluster.leaf_latency_us, spine_latency_us). */
double sc__comm_tier_lat_us(const sc_comm_topo *t, double steps, double xsteps) {
  return steps * t->leaf_latency_us + xsteps * t->spine_latency_us;
}

/* The rate of a ring or tree whose steps alternate between NVLink (b_nvl)
 * and the network (b_net), both GB/s: a smooth minimum with exponent
 * ring_mix, since both streams go through the same GPU's memory and copy
 * engines and each slows when the other runs near its limit. The H100
 * 10-node logs (validation/nccl/h100-cluster01) show it: 49 GB/s per
 * 400 Gb/s NIC with 1, 2 or 4 GPUs per node, where the NICs bound the
 * ring, but 40.5 GB/s with 8, where NVLink (~387 GB/s) and the NICs
 * (~392) are both near their limit. */
static double link_mix(const sc_comm_params *p, double b_nvl, double b_net) {
  double k = p->ring_mix > 0 ? p->ring_mix : 64.0;
  double lo = fmin(b_nvl, b_net), hi = fmax(b_nvl, b_net);
  if (!(lo > 0)) return 0;
  return lo * pow(1.0 + pow(lo / hi, k), -1.0 / k);
}

/* microseconds to move `bytes` at `gbps` */
static double xfer_us(double bytes, double gbps) {
  return gbps > 0 ? bytes / (gbps * 1e3) : INFINITY;
}

static double hop_us(const env *e, int algo, int proto, int net) {
  const sc_comm_params *p = e->p;
  if (net)
    return lat_us[algo].net[proto] *
           (proto == SC_PROTO_LL ? p->net_hop_scale : p->net_bulk_hop_scale);
  /* One step over NVLink costs the same whether a ring or a tree's chain
   * takes it: rings are priced with the tree's per-step latencies, whose
   * scale the multi-node logs fit (NCCL's tuner has 1.9 / 3.4 us for a ring's
   * LL128 / Simple step against the tree's 1.25 / 4.0; the single-node logs
   * show the LL128 fixed cost flat from 2 to 8 GPUs) */
  if (algo == SC_ALGO_RING)
    return lat_us[SC_ALGO_TREE].nvlink[proto] * p->tree_hop_scale * p->intra_hop_scale;
  if (algo == SC_ALGO_TREE) return lat_us[algo].nvlink[proto] * p->tree_hop_scale;
  return lat_us[algo].nvlink[proto] * p->intra_hop_scale;
}

/* Channels NCCL 2.8-2.12 runs a ring or tree call on (enqueue.cc,
 * getAlgoInfo): all of the communicator's (twice its graph's, connect.cc),
 * fewer while each would get less than its threads' threshold: 8 bytes per
 * LL thread (times the ranks on a ring), 8 per LL128 thread, 64 per Simple
 * thread, with 512 LL / 640 LL128 / 512 Simple threads. */
static double channels_used(const env *e, int algo, int proto) {
  double per_ch = proto == SC_PROTO_LL ? 8.0 * 512 * (algo == SC_ALGO_RING ? e->n : 1.0)
                  : proto == SC_PROTO_LL128 ? 8.0 * 640
                                            : 64.0 * 512;
  double nc = floor(e->bytes / per_ch);
  return fmax(1.0, fmin(nc, 2 * e->ch_graph));
}

/* Fixed cost of a call (us): NCCL's base latency, LL128's and Simple's
 * times base_scale (LL's as NCCL has it: the 8-GPU benchmark floor hides
 * it), plus channel_us for every channel (thread block) it starts beyond
 * the first, which the base latency already includes. */
static double base_us(const env *e, int algo, int proto) {
  double nc = algo == SC_ALGO_RING || algo == SC_ALGO_TREE ? channels_used(e, algo, proto) : 1;
  double scale = proto == SC_PROTO_LL ? 1.0 : e->p->base_scale;
  double ch_us = algo == SC_ALGO_TREE ? e->p->tree_channel_us : e->p->channel_us;
  return e->p->launch_us + scale * lat_us[algo].base[proto] + (nc - 1) * ch_us;
}

/* Bus bandwidth of a ring or tree for a protocol: Simple runs at the link
 * rate; LL sends 8 bytes of flags per 8 of data and NCCL's tuner counts it at
 * a fraction of Simple under a ceiling; LL128 keeps 120 of every 128 bytes,
 * under NCCL's per-channel ceiling times the graph's channels (160 GB/s on
 * an A100 node; the 8-GPU Azure log's LL128 range runs at ~165). */
static double proto_bw(const env *e, double simple, int proto, double ll_scale,
                       double ll128_ch_gbps) {
  const sc_comm_params *p = e->p;
  switch (proto) {
  case SC_PROTO_LL:
    return fmin(simple * p->ll_frac * ll_scale, ll_max_gbps(e->t, (int64_t)e->nodes));
  case SC_PROTO_LL128:
    return fmin(simple * p->ll128_frac, e->ch_graph * ll128_ch_gbps);
  default:
    return simple;
  }
}

/* Pipeline fill of a Simple ring or tree: a step forwards a chunk only once
 * it has fully arrived (and is reduced), so every one of `steps` steps adds
 * one chunk time before the pipeline streams; the chunk is the step's share
 * of the data, at most pipe_kib over all channels (Echo's chunked pipeline,
 * arXiv:2412.12487; NCCL's tuner approximates it by a 1.4-1.9x "plateau"
 * latency factor on multi-node rings). */
static double fill_us(const env *e, double steps, double share_bytes, double gbps) {
  return steps * xfer_us(fmin(share_bytes, e->p->pipe_kib * 1024.0), gbps);
}

/* The data time of an LL call. LL carries a flag with every 8 bytes and
 * each channel (one thread block) streams its lines at a modest rate,
 * ll_stream_gbps; NCCL starts a channel per 4 KiB (8 bytes per thread,
 * times the ranks on a ring: channels_used), so while the channels ramp up
 * with the size every channel moves the same bytes and the data costs the
 * same time, and the cost of a bigger call is mostly the channels it starts
 * (channel_us). `traffic` is what each rank sends over the links (bus factor
 * x S on a ring, 2S on a tree), `link` the protocol's link-bound rate.
 * Across the network LL moves as messages the proxy posts, so each of
 * `crossings` network hops stores and forwards `share` (S/n on a ring, the
 * buffer on a tree) at ll_net_gbps. */
static double ll_data_us(const env *e, int algo, double traffic, double link, double share,
                         double crossings) {
  double nc = channels_used(e, algo, SC_PROTO_LL);
  return xfer_us(traffic, fmin(link, nc * e->p->ll_stream_gbps)) +
         crossings * xfer_us(share, e->p->ll_net_gbps);
}

/* The reduction a GPU runs (Echo's reduction term, Merak's reduce
 * operation): every reduced byte is read twice (the local and the received
 * operand) and written once through HBM, pipelined with the transfers, so
 * the time that shows is `reduce_passes` passes over the reduced bytes at
 * the HBM rate. A ring all-reduce or reduce-scatter reduces (n-1)/n of the
 * buffer on every rank (one chunk per step of its reduce-scatter phase), a
 * tree's chain the whole buffer; all-gather, broadcast, all-to-all and p2p
 * reduce nothing, nor do NVLS and CollNet, whose switches reduce. */
double sc__comm_reduce_us(const sc_comm_topo *t, const sc_comm_params *p, int op, double bytes,
                          const sc_placement *pl, int algo) {
  if (op != SC_COMM_ALL_REDUCE && op != SC_COMM_REDUCE_SCATTER) return 0;
  if (pl->n <= 1 || !(bytes > 0)) return 0;
  double n = (double)pl->n, reduced;
  if (algo == SC_ALGO_RING)
    reduced = (n - 1) / n * bytes;
  else if (algo == SC_ALGO_TREE)
    reduced = bytes;
  else
    return 0;
  return xfer_us(p->reduce_passes * reduced, t->hbm_gbps);
}

/* First-call setup (us, once): NCCL connects a communicator's peers for an
 * algorithm the first time a call needs them, and the ranks' connections
 * to other nodes go through the bootstrap network one after another, so
 * the cost grows with ranks x (nodes - 1): on the Azure A100 logs the first
 * out-of-place call of 64 GPUs (8 nodes) costs 12.1 ms over nccl-tests' 50
 * iterations and of 128 GPUs (16 nodes) 57.5 ms, 27 and 30 us per rank and
 * remote node. One node shows none (the 1- to 8-GPU logs). Steady-state
 * training never pays it; sc_comm_compare adds it to a run's first row. */
double sc__comm_setup_us(const sc_comm_params *p, const sc_placement *pl) {
  if (pl->n <= 1 || pl->nodes <= 1) return 0;
  return p->setup_us * (double)pl->n * (double)(pl->nodes - 1);
}

static double ring_us(const env *e, int op, int proto, double bytes) {
  double n = e->n, nodes = e->nodes;
  double steps, isteps, share;
  switch (op) {
  case SC_COMM_ALL_REDUCE:
    steps = 2 * (n - 1), isteps = 2 * (nodes - 1), share = bytes / n;
    break;
  case SC_COMM_BROADCAST:
    /* a pipelined chain from the root: n-1 hops, the whole buffer flows */
    steps = n - 1, isteps = nodes - 1, share = bytes;
    break;
  default: /* all-gather, reduce-scatter */
    steps = n - 1, isteps = nodes - 1, share = bytes / n;
    break;
  }
  double intra = hop_us(e, SC_ALGO_RING, proto, 0);
  double net = hop_us(e, SC_ALGO_RING, proto, 1);
  if (nodes > 1) {
    /* every ring step across nodes posts network work: NCCL floors the
     * intra-node step latency at the network overhead (x3 for Simple) and,
     * with one rank per node, charges the tree's network latency */
    intra = fmax(intra, e->p->net_overhead_us * (proto == SC_PROTO_SIMPLE ? 3.0 : 1.0));
    if (e->ppn <= 1) net = hop_us(e, SC_ALGO_TREE, proto, 1);
  }
  double lat = base_us(e, SC_ALGO_RING, proto) + (steps - isteps) * intra + isteps * net;
  /* a chunk crosses every leaf boundary of the ring once per pass */
  if (nodes > 1)
    lat += sc__comm_tier_lat_us(e->t, isteps, isteps * (e->leaves - 1) / (nodes - 1));
  double simple = e->b_ring;
  double bw = proto_bw(e, simple, proto, 1.0, e->f->ll128_ch_gbps);
  double link = xfer_us(sc_comm_bus_factor(op, (int64_t)n) * bytes, bw);
  if (proto == SC_PROTO_LL)
    return lat + ll_data_us(e, SC_ALGO_RING, sc_comm_bus_factor(op, (int64_t)n) * bytes, bw, share,
                            isteps);
  double t = lat + link;
  if (proto == SC_PROTO_SIMPLE) t += fill_us(e, steps, share, bw);
  return t;
}

/* A ring candidate with the reduction its GPUs run (sc__comm_reduce_us). */
static double ring_total_us(const env *e, int op, int proto, double bytes, const sc_placement *pl) {
  return ring_us(e, op, proto, bytes) +
         sc__comm_reduce_us(e->t, e->p, op, bytes, pl, SC_ALGO_RING);
}

/* Levels of the inter-node tree above the leaves: those whose links cross
 * the spine (a tree over leaves of whole subtrees). */
static double xdepth(const env *e) { return e->leaves > 1 ? ceil(log2(e->leaves)) : 0; }

/* Double binary tree between nodes, a chain inside each (all-reduce): the
 * latency grows with the chain length and log2(nodes); every rank sends and
 * receives the buffer twice (reduce up, broadcast down), so the time is
 * 2 * bytes / bus bandwidth at tree_frac of the ring's link rate. */
static double tree_us(const env *e, int proto, double bytes) {
  double hops = (e->ppn - 1) + e->depth;
  double lat =
      base_us(e, SC_ALGO_TREE, proto) + 2 * ((e->ppn - 1) * hop_us(e, SC_ALGO_TREE, proto, 0) +
                                             e->depth * hop_us(e, SC_ALGO_TREE, proto, 1));
  lat += 2 * sc__comm_tier_lat_us(e->t, e->depth, xdepth(e));
  double b_net = e->b_net * e->spine; /* the links across the spine, spine_share */
  double simple = e->p->tree_frac * (e->ppn > 1 ? link_mix(e->p, e->b_nvl, b_net) : b_net);
  simple = fmin(simple, e->ch_graph * e->f->tree_ch_gbps[e->ncat]);
  /* NCCL's tuner: tree LL at 1/3.8 of the tree rate, ring LL at 1/4 (ll_frac's prior) */
  double bw = proto_bw(e, simple, proto, 1.0 / 3.8 / 0.25, e->f->tree_ll128_ch_gbps[e->ncat]);
  if (proto == SC_PROTO_LL)
    return lat + ll_data_us(e, SC_ALGO_TREE, 2.0 * bytes, bw, bytes, 2 * e->depth);
  double t = lat + xfer_us(2.0 * bytes, bw);
  if (proto == SC_PROTO_SIMPLE) t += fill_us(e, 2 * hops, bytes, bw);
  return t;
}

/* NVLink SHARP: the NVSwitch reduces (all-reduce) or multicasts; Simple
 * only. Inside a node; across nodes with in-network reduction (sharp). */
static double nvls_us(const env *e, int op, double bytes) {
  double lat = e->p->launch_us + hop_us(e, SC_ALGO_NVLS, SC_PROTO_SIMPLE, 0);
  double bw = e->t->nvlink_gbps * e->p->nvls_eff;
  /* NCCL's tuner doubles NVLS's rate for all-reduce (two operations in
   * flight); all-gather / reduce-scatter get half of the all-reduce figure */
  if (op != SC_COMM_ALL_REDUCE) bw *= 0.5;
  if (e->nodes > 1) {
    /* the switches reduce, so a leaf sends one reduced stream up the spine
     * whatever its oversubscription: only the latency of the tiers */
    lat += hop_us(e, SC_ALGO_NVLS, SC_PROTO_SIMPLE, 1) +
           sc__comm_tier_lat_us(e->t, 1, e->leaves > 1 ? 1 : 0);
    bw = fmin(bw, 2.0 * e->b_net); /* the switch reduces: one crossing each way */
  }
  /* nvls_eff is a bus bandwidth of a full 8-GPU node. Inside a node an NVLS
   * all-reduce moves (1 + 1/n) S through every GPU's NVLink port each way:
   * the switch's multimem reduce reads each rank's slice of S/n from all n
   * GPUs (S out of every port, the reduced S/n back in), then the multicast
   * store sends each reduced slice to all n (S/n out, S in). The 8-GPU
   * figure therefore carries over at (1 + 1/8) / (1 + 1/n): on H100 4 GPUs
   * reach 245 GB/s algbw against 275 on 8, 0.89, and (1.125 / 1.25) = 0.90
   * (validation/nccl/h100-cluster01/all_reduce_{4,8}gpu.log). All-gather and
   * reduce-scatter move S through the port one way whatever n, as the bus
   * factor of 8 ranks at half the rate gives. */
  if (e->nodes <= 1 && op == SC_COMM_ALL_REDUCE)
    return lat + xfer_us(sc_comm_bus_factor(op, 8) * (1.0 + 1.0 / e->n) / (1.0 + 1.0 / 8.0) * bytes,
                         bw);
  double ranks = e->nodes > 1 ? e->n : fmax(e->n, 8.0);
  return lat + xfer_us(sc_comm_bus_factor(op, (int64_t)ranks) * bytes, bw);
}

/* NVLS inside nodes, a tree between them (Hopper+ all-reduce). On two nodes
 * each node only exchanges its reduced half, which NCCL's tuner counts as
 * twice the network rate. */
static double nvls_tree_us(const env *e, double bytes) {
  double lat = e->p->launch_us + hop_us(e, SC_ALGO_NVLS_TREE, SC_PROTO_SIMPLE, 0) +
               2 * e->depth * hop_us(e, SC_ALGO_NVLS_TREE, SC_PROTO_SIMPLE, 1) +
               2 * sc__comm_tier_lat_us(e->t, e->depth, xdepth(e));
  double bw = fmin(e->t->nvlink_gbps * e->p->nvls_eff,
                   e->b_net * e->spine * (e->nodes <= 2 ? 2.0 : 1.0));
  bw = fmin(bw, e->p->channels * e->f->nvls_tree_ch_gbps[e->ncat]);
  return lat + xfer_us(sc_comm_bus_factor(SC_COMM_ALL_REDUCE, (int64_t)e->n) * bytes, bw);
}

/* CollNet (SHARP in the IB switches), all-reduce: reduce-scatter inside the
 * node, every rank sends its share up once and gets the result once, then an
 * all-gather inside the node. NCCL adds 0.4 us per local rank of arity
 * serialisation and discounts the rate by 0.9. */
static double collnet_us(const env *e, double bytes) {
  double lat =
      e->p->launch_us +
      2 * ((e->ppn > 1 ? hop_us(e, SC_ALGO_COLLNET, SC_PROTO_SIMPLE, 0) : 0) + (e->ppn - 1) * 0.4) +
      hop_us(e, SC_ALGO_COLLNET, SC_PROTO_SIMPLE, 1) +
      sc__comm_tier_lat_us(e->t, 1, e->leaves > 1 ? 1 : 0); /* reduced in the switches, as NVLS */
  double bw = 0.9 * fmin(e->b_nvl, 2.0 * e->b_net);
  return lat + xfer_us(sc_comm_bus_factor(SC_COMM_ALL_REDUCE, (int64_t)e->n) * bytes, bw);
}

/* PAT (NCCL >= 2.23), all-gather / reduce-scatter with one rank per node:
 * logarithmic latency plus NCCL's linear 2.8 us per rank, 0.75 of the ring
 * rate. */
static double pat_us(const env *e, int op, double bytes) {
  double lat = base_us(e, SC_ALGO_PAT, SC_PROTO_SIMPLE) +
               log2(e->nodes) * hop_us(e, SC_ALGO_PAT, SC_PROTO_SIMPLE, 1) / 3.5 + e->n * 2.8 +
               sc__comm_tier_lat_us(e->t, ceil(log2(e->nodes)), xdepth(e));
  return lat + xfer_us(sc_comm_bus_factor(op, (int64_t)e->n) * bytes, 0.75 * e->b_ring);
}

/* Point-to-point (send/recv): NCCL's p2p runs the Simple protocol over the
 * direct link (NVLink inside a node, the GPU's own NIC across nodes); its
 * latency is p2p_latency_us, shared with the cost parameters. */
static double p2p_us(const env *e, double bytes, int inter) {
  double lat = e->p->launch_us + e->p->p2p_latency_us;
  double bw = inter ? e->t->nic_gbps * e->p->nic_eff : e->b_nvl;
  /* across leaves every rank's send is a ring's crossing flow (spine_share):
   * a pipeline pair (one node per leaf) gets NIC / ratio */
  if (inter) {
    lat += sc__comm_tier_lat_us(e->t, 1, e->leaves > 1 ? 1 : 0);
    bw *= e->spine;
  }
  return lat + xfer_us(bytes, bw);
}

/* All-to-all: each rank sends bytes/n to every rank as p2p operations; the
 * NVLink share and the network share (over this GPU's part of the node's
 * NICs) move in parallel, after the p2p latency and a cost per peer. */
static double alltoall_us(const env *e, double bytes) {
  double n = e->n;
  double intra_bytes = (e->ppn - 1) / n * bytes, inter_bytes = (n - e->ppn) / n * bytes;
  double nic_share = fmin(1.0, (double)e->t->nics_per_node / e->ppn);
  double b_nic = e->t->nic_gbps * e->p->nic_eff * nic_share;
  double lat = e->p->launch_us + e->p->p2p_latency_us + (n - 1) * e->p->a2a_peer_us;
  double nvl_bytes = intra_bytes;
  if (e->nodes > 1) {
    /* network tiers: the bytes for ranks under other leaves (n / leaves
     * ranks share a leaf) cross the spine, every GPU of the leaf at once */
    double crossing = (n - n / e->leaves) / (n - e->ppn);
    b_nic *= sc__comm_spine_crossing_share(e->t, crossing);
    lat += sc__comm_tier_lat_us(e->t, 1, e->leaves > 1 ? 1 : 0);
    /* rail leaves: bytes for another local GPU index reach the GPU on the
     * destination's rail over NVLink first (NCCL's PXN, on by default since
     * NCCL 2.12), so NVLink carries (ppn - 1) / ppn of the network bytes too */
    if (e->t->nodes_per_leaf > 0 && e->t->rail_optimized)
      nvl_bytes += inter_bytes * (e->ppn - 1) / e->ppn;
  }
  return lat + fmax(xfer_us(nvl_bytes, e->b_nvl), xfer_us(inter_bytes, b_nic));
}

/* ------------------------------------------------------------ NCCL's choice */

/* NCCL 2.8-2.12's own tuning model (src/graph/tuning.cc of those releases,
 * ncclTopoTuneModel and ncclTopoGetAlgoTime; read for facts only): what
 * NCCL predicts, uncalibrated, for a ring or tree and a protocol. NCCL runs
 * the candidate this model ranks fastest, whatever it really costs: on the
 * Azure A100 logs it keeps the tree LL up to 128 KiB on 64 and 128 GPUs,
 * where the measured time doubles, and switches to LL128 at 256 KiB.
 * Constants [ring, tree][LL, LL128, Simple], microseconds: base latency,
 * NVLink step, network step. */
static const double tune_base[2][SC_PROTO_COUNT] = {{3.6, 10.0, 8.4}, {4.4, 4.4, 0.0}};
static const double tune_nvl[2][SC_PROTO_COUNT] = {{0.47, 1.9, 3.4}, {0.52, 1.25, 28.0}};
static const double tune_net[2][SC_PROTO_COUNT] = {{2.7, 4.0, 9.6}, {5.0, 8.5, 28.0}};
/* tree bandwidth correction per power of two of the size from 64 B
 * ("trees are not perfectly sticking to the model for medium sizes") */
static const double tune_tree_corr[SC_PROTO_COUNT][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

static int log2_floor(double x) {
  int l = 0;
  while (x >= 2.0) x *= 0.5, l++;
  return l;
}

/* NCCL's predicted time (us) of ring or tree `algo` with `proto`. NCCL's
 * graph bandwidth (channels x speed of its topology search) is taken as the
 * links it would find: inside a node the graph's channels (env.ch_graph) at
 * 22 GB/s (NCCL's speed of an Ampere NVLink channel) under NVLink, across
 * nodes the rails (a tree on two nodes may run its intra-node part up to
 * twice the rails), 235 GB/s at most on Ampere. The LL ceilings across
 * nodes are NCCL's for Intel hosts (the model has no CPU vendor). */
static double tuner_us(const env *e, int op, int algo, int proto, double bytes) {
  int tree = algo == SC_ALGO_TREE, volta = e->t->arch == SC_ARCH_VOLTA;
  double n = e->n, nodes = e->nodes;
  double rails = fmin(e->ppn, (double)(e->t->nics_per_node < 1 ? 1 : e->t->nics_per_node));
  double net = rails * e->t->nic_gbps;
  double ch = e->ch_graph;
  double bus = nodes <= 1 ? fmin(e->t->nvlink_gbps, 22.0 * ch)
               : tree && nodes <= 2 ? fmin(e->t->nvlink_gbps, 2 * net)
                                    : net;
  if (!volta) bus = fmin(bus, 235.0);
  /* LL ceiling: one node by GPU (Volta 39, Ampere 87.7), more by CPU (Intel) */
  double ll_max = nodes <= 1 ? (volta ? 39.0 : 87.7) : nodes <= 2 ? 39.0 : 20.4;
  static const double tree_ch[2][3] = {{24.0, 23.6, 17.8}, {26.5, 18.5, 10.0}};
  double steps, isteps;
  if (op == SC_COMM_ALL_REDUCE)
    steps = 2 * (n - 1), isteps = 2 * (nodes - 1);
  else if (op == SC_COMM_BROADCAST)
    steps = n, isteps = nodes;
  else
    steps = n - 1, isteps = nodes - 1;
  if (tree) {
    bus = fmin(bus * 0.92, ch * tree_ch[volta][e->ncat]);
    if (proto == SC_PROTO_LL) bus = fmin(bus / 3.8, ll_max);
    if (proto == SC_PROTO_LL128)
      bus = fmin(bus * (nodes <= 1 ? 7.0 / 9.0 : 120.0 / 128.0), 20.0 * ch);
  } else if (proto == SC_PROTO_LL) {
    bus = fmin(ll_max, bus * (nodes > 1 || op == SC_COMM_ALL_REDUCE ? 0.25 : 1.0 / 3.0));
  } else if (proto == SC_PROTO_LL128) {
    bus = fmin(bus * (e->ppn < 2 ? 0.7 : 0.92), 20.0 * ch);
  }
  double algbw = bus * (tree ? 0.5 : n / steps);
  int ls = log2_floor(bytes / 64);
  if (tree && ls < 23) algbw *= tune_tree_corr[proto][ls];
  double intra = tune_nvl[tree][proto], inter = tune_net[tree][proto];
  if (nodes > 1 && proto == SC_PROTO_LL) intra *= 1.8;
  double lat = tune_base[tree][proto];
  if (tree)
    lat += 2 * ((e->ppn - 1) * intra + log2_floor(nodes) * inter);
  else
    lat += (steps - isteps) * intra + isteps * inter;
  /* the ring's Simple "plateau" across nodes */
  if (!tree && proto == SC_PROTO_SIMPLE && nodes > 1 && op == SC_COMM_ALL_REDUCE &&
      bytes >= n / 16.0 * 65536)
    lat *= 1.9;
  return lat + bytes / (1000.0 * algbw);
}

/* ------------------------------------------------------------ the choice */

double sc__comm_time_us(const sc_comm_topo *t, const sc_comm_params *p, int op, double bytes,
                        const sc_placement *pl, int *algo, int *proto) {
  int ba = SC_ALGO_RING, bp = SC_PROTO_SIMPLE;
  if (pl->n <= 1 || !(bytes > 0) || op < 0 || op >= SC_COMM_OP_COUNT) {
    if (algo) *algo = ba;
    if (proto) *proto = bp;
    return 0;
  }
  env e;
  e.t = t;
  e.p = p;
  e.f = &facts[t->arch];
  e.n = (double)pl->n;
  e.nodes = (double)(pl->nodes < 1 ? 1 : pl->nodes);
  e.ppn = (double)(pl->per_node < 1 ? 1 : pl->per_node);
  if (e.ppn > e.n) e.ppn = e.n;
  e.ncat = e.nodes <= 1 ? 0 : e.nodes <= 2 ? 1 : 2;
  double rails = fmin(e.ppn, (double)(t->nics_per_node < 1 ? 1 : t->nics_per_node));
  e.b_nvl = t->nvlink_gbps * p->nvlink_eff;
  e.b_net = rails * t->nic_gbps * p->nic_eff;
  e.leaves = (double)(pl->leaves > 1 ? pl->leaves : 1);
  if (e.leaves > e.nodes) e.leaves = e.nodes;
  e.spine = spine_share(t, e.nodes, e.leaves);
  /* a ring runs at its slowest link: the one crossing the spine */
  double b_xnet = e.b_net * e.spine;
  e.b_ring = e.nodes > 1 ? (e.ppn > 1 ? link_mix(p, e.b_nvl, b_xnet) : b_xnet) : e.b_nvl;
  e.depth = e.nodes > 1 ? ceil(log2(e.nodes)) : 0;
  e.ch_graph = e.nodes <= 1 ? fmax(1.0, p->channels / 2) : rails;
  e.bytes = bytes;
  int hopper = t->arch >= SC_ARCH_HOPPER && p->nvls_eff > 0;
  int sharp = p->sharp >= 0.5;

  /* the calibrated time of every candidate the collective, hardware and
   * placement have; INFINITY for the others */
  double c[SC_ALGO_COUNT][SC_PROTO_COUNT];
  for (int a = 0; a < SC_ALGO_COUNT; a++)
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++) c[a][pr] = INFINITY;
  int only_ring_tree = 1; /* NCCL 2.8-2.12's tuner knows these */
  switch (op) {
  case SC_COMM_ALL_REDUCE:
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++) {
      c[SC_ALGO_RING][pr] = ring_total_us(&e, op, pr, bytes, pl);
      if (e.nodes > 1)
        c[SC_ALGO_TREE][pr] =
            tree_us(&e, pr, bytes) + sc__comm_reduce_us(t, p, op, bytes, pl, SC_ALGO_TREE);
    }
    if (hopper && e.ppn > 1) {
      if (e.nodes <= 1 || sharp) c[SC_ALGO_NVLS][SC_PROTO_SIMPLE] = nvls_us(&e, op, bytes);
      if (e.nodes > 1) c[SC_ALGO_NVLS_TREE][SC_PROTO_SIMPLE] = nvls_tree_us(&e, bytes);
      only_ring_tree = 0;
    }
    if (sharp && e.nodes > 1) {
      c[SC_ALGO_COLLNET][SC_PROTO_SIMPLE] = collnet_us(&e, bytes);
      only_ring_tree = 0;
    }
    break;
  case SC_COMM_ALL_GATHER:
  case SC_COMM_REDUCE_SCATTER:
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++)
      c[SC_ALGO_RING][pr] = ring_total_us(&e, op, pr, bytes, pl);
    if (hopper && e.nodes <= 1) {
      c[SC_ALGO_NVLS][SC_PROTO_SIMPLE] = nvls_us(&e, op, bytes);
      only_ring_tree = 0;
    }
    if (e.nodes > 1 && e.ppn <= 1) {
      c[SC_ALGO_PAT][SC_PROTO_SIMPLE] = pat_us(&e, op, bytes);
      only_ring_tree = 0;
    }
    break;
  case SC_COMM_BROADCAST:
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++) c[SC_ALGO_RING][pr] = ring_us(&e, op, pr, bytes);
    break;
  case SC_COMM_ALL_TO_ALL:
    c[SC_ALGO_P2P][SC_PROTO_SIMPLE] = alltoall_us(&e, bytes);
    only_ring_tree = 0;
    break;
  case SC_COMM_SEND_RECV:
    /* every rank sends to the next and receives from the previous: the
     * slowest pair crosses nodes as soon as the group does */
    c[SC_ALGO_P2P][SC_PROTO_SIMPLE] = p2p_us(&e, bytes, e.nodes > 1);
    only_ring_tree = 0;
    break;
  }

  /* NCCL's rule: the candidate its tuning model ranks fastest. With
   * select = 2 and only rings and trees on offer, NCCL 2.8-2.12's own
   * (uncalibrated) model ranks them; otherwise the calibrated times do, an
   * ideal tuner */
  int nccl_tuner = p->select >= 1.5 && only_ring_tree;
  double best = INFINITY, rank_best = INFINITY;
  for (int a = 0; a < SC_ALGO_COUNT; a++)
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++) {
      if (!isfinite(c[a][pr])) continue;
      double r = nccl_tuner ? tuner_us(&e, op, a, pr, bytes) : c[a][pr];
      if (r < rank_best) rank_best = r, best = c[a][pr], ba = a, bp = pr;
    }
  if (algo) *algo = ba;
  if (proto) *proto = bp;
  /* the local HBM traffic of a collective (reading the input, writing the
   * output) that the link transfers do not hide; the same for every
   * candidate. Fitted on all-reduce only: point-to-point copies stream
   * straight over the link, so p2p and all-to-all are left without it. */
  if (op == SC_COMM_SEND_RECV || op == SC_COMM_ALL_TO_ALL) return best;
  return best + xfer_us(p->mem_passes * bytes, t->hbm_gbps);
}

/* nccl-tests with -g G drives G GPUs from one host thread: the thread
 * launches every GPU's kernel in turn, so iterations cannot follow each
 * other faster than G launches, whatever the collective costs (the Azure
 * logs on one node: 8.5, 16 and 31 us for 2, 4 and 8 GPUs, 4 us per GPU).
 * Runs with one process per GPU (G = 1), and the engine, never see it. */
double sc__comm_bench_time_us(const sc_comm_topo *t, const sc_comm_params *p, int op,
                              double bytes, const sc_placement *pl, int64_t gpus_per_thread,
                              int *algo, int *proto) {
  double us = sc__comm_time_us(t, p, op, bytes, pl, algo, proto);
  if (gpus_per_thread >= 1 && us > 0) us = fmax(us, (double)gpus_per_thread * p->host_launch_us);
  return us;
}

/* ------------------------------------------------------------ vtable */

/* The engine's entry points use the parameters and links sc__cost_init
 * prepared in the sc_cost (sc__comm_params_from_cost, sc__comm_topo_from_cost). */
static double nccl_coll_ns(const sc_cost *c, int coll, double bytes, const sc_placement *pl) {
  return sc__comm_time_us(&c->comm_topo, &c->comm_params, coll, bytes, pl, NULL, NULL) * 1e3;
}

static double nccl_p2p_ns(const sc_cost *c, double bytes, int tier) {
  int inter = tier != SC_TIER_NODE;
  sc_placement pl = {2, inter ? 2 : 1, inter ? 1 : 2, tier == SC_TIER_SPINE ? 2 : 1};
  return sc__comm_time_us(&c->comm_topo, &c->comm_params, SC_COMM_SEND_RECV, bytes, &pl, NULL,
                          NULL) *
         1e3;
}

const sc_comm_model sc__comm_nccl_model = {"nccl", 5, nccl_coll_ns, nccl_p2p_ns};
