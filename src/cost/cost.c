/*
 * cost.c: the first cost models. "roofline" prices kernels as the slower of
 * their FLOPs at a shape-dependent efficiency and their HBM bytes; "nccl-ring-tree"
 * prices collectives as latency + bus-factor * bytes / bus bandwidth, with the
 * bandwidth set by where the group's members sit (NVLink inside a node, the
 * NICs of the node otherwise) and NCCL's ring-vs-tree choice for all-reduce.
 * Every default below cites the measurement it came from.
 */
#include "cost/cost_int.h"
#include "cost/comm_int.h"
#include "analysis/calibrate_int.h"
#include "cost/interf_int.h"
#include "input/config_int.h"

#include <math.h>
#include <strings.h>

/* ------------------------------------------------------------ defaults */

/* Best-shape GEMM throughput / dense peak, from the "maximum achievable matmul
 * FLOPS" table (validation/kernels/gemm_mamf.csv, BF16): A100 SXM 271.2/312,
 * H100 SXM 794.5/989 (H200 "the same"), B200 SXM 1745/2250. V100 has no row:
 * 0.80 is assumed. */
static double default_gemm_eff(const sc_hw *hw) {
  if (!strncasecmp(hw->name, "a100", 4)) return 271.2 / 312.0;
  if (!strncasecmp(hw->name, "h100", 4) || !strncasecmp(hw->name, "h800", 4) ||
      !strncasecmp(hw->name, "h200", 4))
    return 794.5 / 989.0;
  if (!strncasecmp(hw->name, "b200", 4)) return 1745.0 / 2250.0;
  return 0.80;
}

/* FlashAttention-2 fwd+bwd, causal, head dim 128, fit of
 * validation/kernels/flashattention_kernel_tflops.csv to
 * eff = E * s/(s + 520) * d/(d + 16): A100 189 TFLOP/s at s=16k -> E = 0.70;
 * H100 328 TFLOP/s at s=16k -> E = 0.385. Other GPUs reuse the A100 value. */
static double default_attn_eff(const sc_hw *hw) {
  if (!strncasecmp(hw->name, "h100", 4) || !strncasecmp(hw->name, "h800", 4) ||
      !strncasecmp(hw->name, "h200", 4))
    return 0.385;
  return 0.70;
}
#define ATTN_SEQ_HALF 520.0 /* fit above */
#define ATTN_DIM_HALF 16.0  /* head dim 64 runs ~0.9x of 128 in the same data */

/* NCCL all-reduce bus bandwidth inside one node / NVLink per direction:
 * A100: 230.9 GB/s at 1 GiB on 8 GPUs (validation/nccl/azure-ndv4-a100/
 * all_reduce_8gpu.log) / 300 GB/s; H100: ~370 GB/s measured / 450. */
static double default_nvlink_eff(const sc_hw *hw) {
  if (!strncasecmp(hw->name, "a100", 4)) return 230.9 / 300.0;
  return 370.0 / 450.0;
}

/* Compute parameters from kernel measurements alone, before any fit to step
 * times: the start and prior centre of calibrate.c. */
void sc__cost_compute_priors(const sc_hw *hw, sc_cost_params *p) {
  p->gemm_eff = default_gemm_eff(hw);
  p->gemm_dim_half = 64.0; /* modelling choice: a 64-wide dim loses half; calibrated */
  p->attn_eff = default_attn_eff(hw);
  p->mem_eff = 0.80; /* streaming kernels typically reach ~80% of HBM peak */
  p->kernel_overhead_us = 2.0; /* launch gap between dependent kernels, ~1-3 us */
}

/* Shipped compute defaults: the kernel-data priors, replaced for the GPUs
 * that have published step times by the fit on their split=calibration rows
 * (never validation rows); regenerate with tools/calibrate_defaults.sh,
 * which writes validation/calibration/{a100,h100}.yaml, and copy the values
 * here (test_validate checks that they agree).
 *   A100: 6 rows (SC21 Table 1 on <= 256 GPUs, Korthikanti et al. 22B),
 *     calibration MAPE 17.6 % -> 2.2 %; attn_eff keeps the kernel value
 *     (those runs predate FlashAttention, so no row constrains it).
 *   H100 (and H800 / H200, the same GH100 compute die): 3 rows (Megatron-Core
 *     r0.8 on <= 192 GPUs), MAPE 23.7 % -> 1.1 %. The fitted attn_eff sits
 *     below the FlashAttention-2 kernel value: it also carries what the
 *     attention block costs around the kernel in those runs. */
static void compute_defaults(const sc_hw *hw, sc_cost_params *p) {
  sc__cost_compute_priors(hw, p);
  if (!strncasecmp(hw->name, "a100", 4)) {
    p->gemm_eff = 0.675732;
    p->gemm_dim_half = 86.7266;
    p->mem_eff = 0.740299;
    p->kernel_overhead_us = 1.8585;
  } else if (!strncasecmp(hw->name, "h100", 4) || !strncasecmp(hw->name, "h800", 4) ||
             !strncasecmp(hw->name, "h200", 4)) {
    p->gemm_eff = 0.604987;
    p->gemm_dim_half = 74.3807;
    p->attn_eff = 0.257367;
    p->mem_eff = 0.776195;
    p->kernel_overhead_us = 2.0714;
  }
}

void sc__cost_defaults(const sc_hw *hw, sc_cost_params *p) {
  memset(p, 0, sizeof *p);
  compute_defaults(hw, p);
  p->nvlink_eff = default_nvlink_eff(hw);
  /* 124.5-128.5 GB/s busbw at 1 GiB on 16-128 A100s with 8 x 200 Gb/s HDR per
   * node (azure-ndv4-a100 logs) over the 8 x 25 GB/s NIC line rate. */
  p->nic_eff = 125.0 / 200.0;
  p->coll_latency_us = 30.0; /* ~31 us small all-reduce on 8 A100s (same logs) */
  /* Ex-situ traces (import cpu): eager PyTorch's host time per dispatched
   * operator (from Python; from the C++ autograd engine), per layer called
   * from Python (the nn.Module call), and the speed of convolutions and
   * batch/layer norms relative to GEMMs and streaming kernels. Fitted by
   * tools/calibrate_ddp.sh on the 20 one-GPU rows of validation/ddp
   * (A100-40GB hosts of 2021, PyTorch 1.x; grid search, MAPE 4.7 %); the
   * 140 multi-GPU rows are held out (docs/VALIDATION.md). */
  p->host_op_us = 4.0;
  p->host_autograd_us = 4.0;
  p->host_module_us = 80.0;
  p->conv_eff = 1.0;
  p->norm_eff = 0.6;
  /* 36 / 54 / 92 us small all-reduce on 2 / 4 / 16 nodes: ~7 us per tree level */
  p->net_latency_us = 7.0;
  p->p2p_latency_us = 10.0; /* assumed; no sendrecv measurement shipped yet */
  p->optimizer_bytes_per_param = 18.0; /* Adam: 16-20 B/param read+written */
  sc__interf_defaults(p); /* interf.c: the cited table and the shipped learned model */
}

/* ------------------------------------------------------------ compute: roofline */

/* Efficiency of tiling an M x N output over the SMs: useful outputs over what
 * the launched waves of tiles could compute, so both the last partial wave
 * and the padding of edge tiles count. cuBLAS-like kernels pick the tile that
 * wastes least; smaller tiles cost some efficiency. The set is symmetric in
 * M and N (a kernel and its transpose). */
static double tile_efficiency(double m, double n, int sms) {
  static const struct { double tm, tn, eff; } tiles[] = {
      {256, 128, 1.00}, {128, 256, 1.00}, {128, 128, 0.95},
      {64, 128, 0.85},  {128, 64, 0.85},  {64, 64, 0.70}};
  double best = 0;
  for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
    double ntiles = ceil(m / tiles[i].tm) * ceil(n / tiles[i].tn);
    double waves = ceil(ntiles / sms);
    double e = tiles[i].eff * (m * n) / (waves * sms * tiles[i].tm * tiles[i].tn);
    if (e > best) best = e;
  }
  return best;
}

static double overhead_ns(const sc_cost *c) { return c->p.kernel_overhead_us * 1e3; }

/* GEMM time: the slower of FLOPs at the shape's efficiency and HBM bytes,
 * plus the kernel overhead. Efficiency = best-shape efficiency x tile/wave
 * quantisation of the M x N output x K / (K + gemm_dim_half): every output
 * tile pays a fixed prologue/epilogue (fill the operand pipeline, write C)
 * that only the K loop amortises, so short reductions lose efficiency while
 * M and N matter through the tiles alone (a tall-skinny M x N is not slower
 * per FLOP once its tiles fill the SMs). */
static double roofline_gemm_ns(const sc_cost *c, double m, double n, double k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  double h = c->p.gemm_dim_half;
  double eff = c->p.gemm_eff * tile_efficiency(m, n, c->hw->sms) * (k / (k + h));
  double flops = 2.0 * m * n * k;
  double t_compute = flops / (c->peak_flops * eff) * 1e9;
  double bytes = c->elem_bytes * (m * k + k * n + m * n);
  double t_mem = bytes / (c->hbm_bytes_per_ns * c->p.mem_eff);
  return fmax(t_compute, t_mem) + overhead_ns(c);
}

static double roofline_attn_ns(const sc_cost *c, double flops, double seq, double head_dim) {
  if (flops <= 0) return 0;
  double eff = c->p.attn_eff * seq / (seq + ATTN_SEQ_HALF) * head_dim / (head_dim + ATTN_DIM_HALF);
  return flops / (c->peak_flops * eff) * 1e9 + overhead_ns(c);
}

static double roofline_mem_ns(const sc_cost *c, double bytes) {
  if (bytes <= 0) return 0;
  return bytes / (c->hbm_bytes_per_ns * c->p.mem_eff) + overhead_ns(c);
}

static const sc_compute_model roofline_model = {"roofline", 1, roofline_gemm_ns,
                                                roofline_attn_ns, roofline_mem_ns};

/* ------------------------------------------------------------ comm: NCCL ring/tree */

/* Bytes each rank moves per byte of `size`, the nccl-tests bus factor. */
static double bus_factor(int coll, double n) {
  switch (coll) {
  case SC_COLL_ALLREDUCE:
    return 2.0 * (n - 1) / n;
  case SC_COLL_BROADCAST:
    return 1.0;
  default: /* all-gather, reduce-scatter, all-to-all */
    return (n - 1) / n;
  }
}

/* Bus bandwidth (bytes/ns) of a ring over the placement: NVLink inside a node;
 * across nodes NCCL runs one ring per NIC, so min(per_node, NICs) rails carry
 * the traffic of each rank, capped by NVLink. */
static double ring_busbw(const sc_cost *c, const sc_placement *pl) {
  double nvl = c->nvlink_bytes_per_ns * c->p.nvlink_eff;
  if (pl->nodes <= 1) return nvl;
  double rails = (double)(pl->per_node < c->gpus_per_node ? pl->per_node : c->gpus_per_node);
  double net = rails * c->nic_bytes_per_ns * c->p.nic_eff;
  return net < nvl ? net : nvl;
}

static double nccl_coll_ns(const sc_cost *c, int coll, double bytes, const sc_placement *pl) {
  double n = (double)pl->n;
  if (n <= 1 || bytes <= 0) return 0;
  double busbw = ring_busbw(c, pl);
  double base = c->p.coll_latency_us * 1e3;
  double hop = (pl->nodes > 1 ? c->p.net_latency_us : 0.0) * 1e3;
  double steps = coll == SC_COLL_ALLREDUCE ? 2.0 * (n - 1) : (n - 1);
  /* Ring: every step waits on the slowest edge; with nodes > 1 that is the
   * network, so the pipeline fill costs one network hop per step. */
  double ring = base + (pl->nodes > 1 ? steps * hop / 4.0 : 0.0) +
                bus_factor(coll, n) * bytes / busbw;
  if (coll != SC_COLL_ALLREDUCE || pl->nodes <= 1) return ring;
  /* Tree (double binary tree between nodes, chain inside): latency grows with
   * log2(nodes); every rank sends and receives the whole buffer once. */
  double levels = ceil(log2((double)pl->nodes));
  /* NCCL's tuning model discounts tree all-reduce bandwidth to ~0.92 of the
   * ring's (src/graph/tuning.cc), which makes rings win for large buffers. */
  double tree = base + 2.0 * levels * hop + 2.0 * bytes / (0.92 * busbw);
  return tree < ring ? tree : ring;
}

static double nccl_p2p_ns(const sc_cost *c, double bytes, int inter) {
  if (bytes <= 0) return 0;
  double bw = inter ? c->nic_bytes_per_ns * c->p.nic_eff
                    : c->nvlink_bytes_per_ns * c->p.nvlink_eff;
  return c->p.p2p_latency_us * 1e3 + bytes / bw;
}

static const sc_comm_model nccl_model = {"nccl-ring-tree", 1, nccl_coll_ns, nccl_p2p_ns};

/* ------------------------------------------------------------ registry */

static const sc_compute_model *const compute_models[] = {&roofline_model};
static const sc_comm_model *const comm_models[] = {&nccl_model, &sc__comm_nccl_model};

const sc_compute_model *sc__compute_model_find(const char *name) {
  for (size_t i = 0; i < sizeof compute_models / sizeof compute_models[0]; i++)
    if (!strcmp(compute_models[i]->name, name)) return compute_models[i];
  return NULL;
}

const sc_comm_model *sc__comm_model_find(const char *name) {
  for (size_t i = 0; i < sizeof comm_models / sizeof comm_models[0]; i++)
    if (!strcmp(comm_models[i]->name, name)) return comm_models[i];
  return NULL;
}

static double peak_tflops(const sc_hw *hw, sc_precision prec) {
  switch (prec) {
  case SC_PREC_FP8:
    return hw->fp8_tflops;
  case SC_PREC_FP32:
    return hw->tf32_tflops > 0 ? hw->tf32_tflops : hw->fp32_tflops;
  default:
    return hw->bf16_tflops;
  }
}

int sc__cost_init(sc_ctx *ctx, const sc_config *cfg, sc_cost *cost) {
  memset(cost, 0, sizeof *cost);
  cost->hw = sc__config_gpu(cfg);
  if (!cost->hw)
    return sc__error(ctx, SC_EINVAL, "%s: unknown gpu \"%s\"", cfg->origin, cfg->cluster.gpu);
  sc_cost_params def;
  sc__cost_defaults(cost->hw, &def);
  cost->p = cfg->costs;
  /* Zero means "default" for every parameter: walk the struct as doubles. */
  double *dst = (double *)&cost->p;
  const double *src = (const double *)&def;
  for (size_t i = 0; i < sizeof def / sizeof(double); i++)
    if (dst[i] == 0) dst[i] = src[i];
  /* The learned interference model is one vector: given anywhere, it is used
   * whole (a fitted coefficient may be exactly 0); else the shipped one. */
  for (int i = 0; i < SC_INTERF_COEFS_MAX; i++)
    if (cfg->costs.interference_w[i] != 0) {
      memcpy(cost->p.interference_w, cfg->costs.interference_w, sizeof cost->p.interference_w);
      break;
    }
  double tflops = peak_tflops(cost->hw, cfg->training.precision);
  if (tflops <= 0)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s: gpu %s has no peak for the chosen precision",
                     cfg->origin, cost->hw->name);
  cost->peak_flops = tflops * 1e12;
  /* GEMM operand bytes: 4 for fp32 (TF32 math); 2 otherwise (fp8 GEMMs
   * keep 16-bit outputs and the calibration was fitted this way). */
  cost->elem_bytes = cfg->training.precision == SC_PREC_FP32 ? 4.0 : 2.0;
  cost->hbm_bytes_per_ns = cost->hw->hbm_gbps; /* GB/s == bytes/ns */
  cost->nvlink_bytes_per_ns =
      cfg->cluster.nvlink_gbps > 0 ? cfg->cluster.nvlink_gbps : cost->hw->nvlink_gbps;
  double nic_gbit = cfg->cluster.nic_gbps > 0 ? cfg->cluster.nic_gbps : cost->hw->nic_gbps;
  cost->nic_bytes_per_ns = nic_gbit / 8.0;
  cost->gpus_per_node = cfg->cluster.gpus_per_node > 0 ? cfg->cluster.gpus_per_node
                                                       : cost->hw->gpus_per_node;
  cost->compute = &roofline_model;
  cost->comm = &sc__comm_nccl_model; /* "nccl" v3, comm_nccl.c; "nccl-ring-tree" stays findable */
  sc__comm_params_from_cost(cost, &cost->comm_params);
  sc__comm_topo_from_cost(cost, &cost->comm_topo);
  return SC_OK;
}
