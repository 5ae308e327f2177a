/*
 * comm_nccl.c: the "nccl" collective model (version 2). For every algorithm
 * NCCL could run (ring, tree, NVLS, NVLS-tree, CollNet, PAT, p2p) and every
 * protocol (LL, LL128, Simple) it prices latency + bytes / bandwidth from the
 * group's placement and the links, then takes the fastest, as NCCL's tuner
 * does. The structure and constants follow NCCL's tuning model (NVIDIA/nccl,
 * src/graph/tuning.cc, read for facts only); the scales are calibrated from
 * nccl-tests output (comm_fit.c). docs/COMM.md explains every term.
 */
#include "comm_int.h"
#include "workload_int.h"

#include <math.h>
#include <stddef.h>
#include <strings.h>

_Static_assert((int)SC_COMM_ALL_REDUCE == (int)SC_COLL_ALLREDUCE &&
                   (int)SC_COMM_ALL_GATHER == (int)SC_COLL_ALLGATHER &&
                   (int)SC_COMM_REDUCE_SCATTER == (int)SC_COLL_REDUCESCATTER &&
                   (int)SC_COMM_ALL_TO_ALL == (int)SC_COLL_ALLTOALL &&
                   (int)SC_COMM_BROADCAST == (int)SC_COLL_BROADCAST,
               "sc_comm_op must start with the SC_COLL_* list in the same order");

const sc_comm_param_info sc__comm_param_info[SC_COMM_PARAM_COUNT] = {
#define SC_X_ROW(key, member, lo, hi, fit, unit, doc)                                              \
  {#key, offsetof(sc_comm_params, member), lo, hi, fit, unit, doc},
    SC_COMM_PARAM_LIST(SC_X_ROW)
#undef SC_X_ROW
};

/* ------------------------------------------------------------ NCCL facts */

/* Per GPU generation, from the default tuner constants of NCCL 2.2x
 * (src/graph/tuning.cc): the LL bus-bandwidth ceiling on one node
 * (Volta 39, Ampere 87.7, Hopper 141, Blackwell 282 GB/s), the per-channel
 * ceilings of ring LL128 and of tree Simple / LL128 / NVLS-tree for 1, 2 and
 * more nodes, and NVLS's efficiency. `channels` is our assumption of what
 * NCCL's topology search settles on for an 8-GPU NVSwitch node with one NIC
 * per GPU (it only matters through the per-channel ceilings). nvls_eff is
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
    [SC_ARCH_AMPERE] = {87.7, 20.0, {24.0, 23.6, 17.8}, {20.0, 20.0, 20.0}, {0, 0, 0}, 0.0, 16},
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
   * held-out error on 2, 4, 64 and 128 GPUs, and its transfer to H200. */
  p->nvlink_eff = 0.865;
  p->nic_eff = 0.696;
  p->launch_us = 0.0;  /* NCCL's base latencies include the launch */
  p->base_scale = 1.0; /* NCCL's base latencies as they are */
  p->intra_hop_scale = 2.75;
  p->tree_hop_scale = 1.11;
  p->net_hop_scale = 2.14;
  p->ll_frac = 0.136;
  p->ll128_frac = 0.961;
  p->tree_frac = 0.789;
  p->pipe_kib = 2290;
  p->mem_passes = 0.797;
  p->nvls_eff = facts[arch].nvls_eff;
  p->a2a_peer_us = 0.5;     /* assumed; no all-to-all measurement shipped */
  p->net_overhead_us = 1.0; /* NCCL's default for Intel hosts */
  p->channels = facts[arch].channels;
  p->sharp = 0;
}

void sc__comm_params_default(const sc_hw *hw, sc_comm_params *p) {
  model_defaults(sc__comm_arch(hw), p);
  sc_cost_params cp;
  sc__cost_defaults(hw, &cp);
  p->p2p_latency_us = cp.p2p_latency_us;
}

_Static_assert(SC_COMM_PARAM_COUNT <= SC_NCCL_PARAMS_MAX, "sc_cost_params.nccl too small");

void sc__comm_params_from_cost(const sc_cost *c, sc_comm_params *p) {
  model_defaults(sc__comm_arch(c->hw), p);
  /* Calibrated values (config `calibration: nccl_*`) replace the defaults. */
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++)
    if (c->p.nccl[i] != 0) *(double *)((char *)p + sc__comm_param_info[i].offset) = c->p.nccl[i];
  p->p2p_latency_us = c->p.p2p_latency_us;
}

int sc__comm_param_index(const char *key) {
  if (strncmp(key, "nccl_", 5)) return -1;
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++)
    if (!strcmp(sc__comm_param_info[i].key, key)) return i;
  return -1;
}

void sc__comm_topo_from_cost(const sc_cost *c, sc_comm_topo *t) {
  t->arch = sc__comm_arch(c->hw);
  t->nvlink_gbps = c->nvlink_bytes_per_ns; /* bytes/ns == GB/s */
  t->nic_gbps = c->nic_bytes_per_ns;
  t->hbm_gbps = c->hbm_bytes_per_ns;
  t->nics_per_node = c->gpus_per_node;
}

int sc__comm_params_set(sc_comm_params *p, const char *key, double value) {
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++) {
    const sc_comm_param_info *d = &sc__comm_param_info[i];
    if (strcmp(d->key, key)) continue;
    if (!(value >= d->lo && value <= d->hi)) return -1;
    *(double *)((char *)p + d->offset) = value;
    return 1;
  }
  return 0;
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
} env;

/* microseconds to move `bytes` at `gbps` */
static double xfer_us(double bytes, double gbps) {
  return gbps > 0 ? bytes / (gbps * 1e3) : INFINITY;
}

static double hop_us(const env *e, int algo, int proto, int net) {
  const sc_comm_params *p = e->p;
  if (net) return lat_us[algo].net[proto] * p->net_hop_scale;
  return lat_us[algo].nvlink[proto] *
         (algo == SC_ALGO_TREE ? p->tree_hop_scale : p->intra_hop_scale);
}

static double base_us(const env *e, int algo, int proto) {
  return e->p->launch_us + e->p->base_scale * lat_us[algo].base[proto];
}

/* Bus bandwidth of a ring or tree for a protocol: Simple runs at the link
 * rate; LL sends 8 bytes of flags per 8 of data and NCCL's tuner counts it at
 * a fraction of Simple under a ceiling; LL128 keeps 120 of every 128 bytes,
 * under a per-channel ceiling. */
static double proto_bw(const env *e, double simple, int proto, double ll_scale,
                       double ll128_ch_gbps) {
  const sc_comm_params *p = e->p;
  switch (proto) {
  case SC_PROTO_LL:
    return fmin(simple * p->ll_frac * ll_scale, ll_max_gbps(e->t, (int64_t)e->nodes));
  case SC_PROTO_LL128:
    return fmin(simple * p->ll128_frac, p->channels * ll128_ch_gbps);
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
  double simple = e->b_ring;
  double bw = proto_bw(e, simple, proto, 1.0, e->f->ll128_ch_gbps);
  double t = lat + xfer_us(sc_comm_bus_factor(op, (int64_t)n) * bytes, bw);
  if (proto == SC_PROTO_SIMPLE) t += fill_us(e, steps, share, bw);
  return t;
}

/* Double binary tree between nodes, a chain inside each (all-reduce): the
 * latency grows with the chain length and log2(nodes); every rank sends and
 * receives the buffer twice (reduce up, broadcast down), so the time is
 * 2 * bytes / bus bandwidth at tree_frac of the ring's link rate. */
static double tree_us(const env *e, int proto, double bytes) {
  double hops = (e->ppn - 1) + e->depth;
  double lat =
      base_us(e, SC_ALGO_TREE, proto) + 2 * ((e->ppn - 1) * hop_us(e, SC_ALGO_TREE, proto, 0) +
                                             e->depth * hop_us(e, SC_ALGO_TREE, proto, 1));
  double simple = e->p->tree_frac * fmin(e->b_nvl, e->b_net);
  simple = fmin(simple, e->p->channels * e->f->tree_ch_gbps[e->ncat]);
  /* NCCL's tuner: tree LL runs at 1/3.8 of Simple, ring LL at 1/2 */
  double bw = proto_bw(e, simple, proto, 0.5 / 1.9, e->f->tree_ll128_ch_gbps[e->ncat]);
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
    lat += hop_us(e, SC_ALGO_NVLS, SC_PROTO_SIMPLE, 1);
    bw = fmin(bw, 2.0 * e->b_net); /* the switch reduces: one crossing each way */
  }
  return lat + xfer_us(sc_comm_bus_factor(op, (int64_t)e->n) * bytes, bw);
}

/* NVLS inside nodes, a tree between them (Hopper+ all-reduce). On two nodes
 * each node only exchanges its reduced half, which NCCL's tuner counts as
 * twice the network rate. */
static double nvls_tree_us(const env *e, double bytes) {
  double lat = e->p->launch_us + hop_us(e, SC_ALGO_NVLS_TREE, SC_PROTO_SIMPLE, 0) +
               2 * e->depth * hop_us(e, SC_ALGO_NVLS_TREE, SC_PROTO_SIMPLE, 1);
  double bw = fmin(e->t->nvlink_gbps * e->p->nvls_eff, e->b_net * (e->nodes <= 2 ? 2.0 : 1.0));
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
      hop_us(e, SC_ALGO_COLLNET, SC_PROTO_SIMPLE, 1);
  double bw = 0.9 * fmin(e->b_nvl, 2.0 * e->b_net);
  return lat + xfer_us(sc_comm_bus_factor(SC_COMM_ALL_REDUCE, (int64_t)e->n) * bytes, bw);
}

/* PAT (NCCL >= 2.23), all-gather / reduce-scatter with one rank per node:
 * logarithmic latency plus NCCL's linear 2.8 us per rank, 0.75 of the ring
 * rate. */
static double pat_us(const env *e, int op, double bytes) {
  double lat = base_us(e, SC_ALGO_PAT, SC_PROTO_SIMPLE) +
               log2(e->nodes) * hop_us(e, SC_ALGO_PAT, SC_PROTO_SIMPLE, 1) / 3.5 + e->n * 2.8;
  return lat + xfer_us(sc_comm_bus_factor(op, (int64_t)e->n) * bytes, 0.75 * e->b_ring);
}

/* Point-to-point (send/recv): NCCL's p2p runs the Simple protocol over the
 * direct link (NVLink inside a node, the GPU's own NIC across nodes); its
 * latency is p2p_latency_us, shared with the cost parameters. */
static double p2p_us(const env *e, double bytes, int inter) {
  double lat = e->p->launch_us + e->p->p2p_latency_us;
  double bw = inter ? e->t->nic_gbps * e->p->nic_eff : e->b_nvl;
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
  return lat + fmax(xfer_us(intra_bytes, e->b_nvl), xfer_us(inter_bytes, b_nic));
}

static void consider(double t, int algo, int proto, double *best, int *ba, int *bp) {
  if (t < *best) *best = t, *ba = algo, *bp = proto;
}

double sc__comm_time_us(const sc_comm_topo *t, const sc_comm_params *p, int op, double bytes,
                        const sc_placement *pl, int *algo, int *proto) {
  int ba = SC_ALGO_RING, bp = SC_PROTO_SIMPLE;
  double best = INFINITY;
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
  e.b_ring = e.nodes > 1 ? (e.ppn > 1 ? fmin(e.b_nvl, e.b_net) : e.b_net) : e.b_nvl;
  e.depth = e.nodes > 1 ? ceil(log2(e.nodes)) : 0;
  int hopper = t->arch >= SC_ARCH_HOPPER && p->nvls_eff > 0;
  int sharp = p->sharp >= 0.5;

  switch (op) {
  case SC_COMM_ALL_REDUCE:
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++) {
      consider(ring_us(&e, op, pr, bytes), SC_ALGO_RING, pr, &best, &ba, &bp);
      if (e.nodes > 1) consider(tree_us(&e, pr, bytes), SC_ALGO_TREE, pr, &best, &ba, &bp);
    }
    if (hopper && e.ppn > 1) {
      if (e.nodes <= 1 || sharp)
        consider(nvls_us(&e, op, bytes), SC_ALGO_NVLS, SC_PROTO_SIMPLE, &best, &ba, &bp);
      if (e.nodes > 1)
        consider(nvls_tree_us(&e, bytes), SC_ALGO_NVLS_TREE, SC_PROTO_SIMPLE, &best, &ba, &bp);
    }
    if (sharp && e.nodes > 1)
      consider(collnet_us(&e, bytes), SC_ALGO_COLLNET, SC_PROTO_SIMPLE, &best, &ba, &bp);
    break;
  case SC_COMM_ALL_GATHER:
  case SC_COMM_REDUCE_SCATTER:
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++)
      consider(ring_us(&e, op, pr, bytes), SC_ALGO_RING, pr, &best, &ba, &bp);
    if (hopper && e.nodes <= 1)
      consider(nvls_us(&e, op, bytes), SC_ALGO_NVLS, SC_PROTO_SIMPLE, &best, &ba, &bp);
    if (e.nodes > 1 && e.ppn <= 1)
      consider(pat_us(&e, op, bytes), SC_ALGO_PAT, SC_PROTO_SIMPLE, &best, &ba, &bp);
    break;
  case SC_COMM_BROADCAST:
    for (int pr = 0; pr < SC_PROTO_COUNT; pr++)
      consider(ring_us(&e, op, pr, bytes), SC_ALGO_RING, pr, &best, &ba, &bp);
    break;
  case SC_COMM_ALL_TO_ALL:
    consider(alltoall_us(&e, bytes), SC_ALGO_P2P, SC_PROTO_SIMPLE, &best, &ba, &bp);
    break;
  case SC_COMM_SEND_RECV:
    /* every rank sends to the next and receives from the previous: the
     * slowest pair crosses nodes as soon as the group does */
    consider(p2p_us(&e, bytes, e.nodes > 1), SC_ALGO_P2P, SC_PROTO_SIMPLE, &best, &ba, &bp);
    break;
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

/* ------------------------------------------------------------ vtable */

/* The engine's entry points use the parameters and links sc__cost_init
 * prepared in the sc_cost (sc__comm_params_from_cost, sc__comm_topo_from_cost). */
static double nccl_coll_ns(const sc_cost *c, int coll, double bytes, const sc_placement *pl) {
  return sc__comm_time_us(&c->comm_topo, &c->comm_params, coll, bytes, pl, NULL, NULL) * 1e3;
}

static double nccl_p2p_ns(const sc_cost *c, double bytes, int inter) {
  sc_placement pl = {2, inter ? 2 : 1, inter ? 1 : 2};
  return sc__comm_time_us(&c->comm_topo, &c->comm_params, SC_COMM_SEND_RECV, bytes, &pl, NULL,
                          NULL) *
         1e3;
}

const sc_comm_model sc__comm_nccl_model = {"nccl", 2, nccl_coll_ns, nccl_p2p_ns};
