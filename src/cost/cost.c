/*
 * cost.c: the registry of cost models (const vtables found by name) and
 * sc__cost_init, which prepares one run's pricing: the GPU, every parameter
 * (calibration values over the defaults of params.c), the peak and byte
 * widths of the working dtype, the links, and the collective model's
 * parameters prepared once so that pricing a collective does no lookups.
 */
#include "cost/cost_int.h"
#include "cost/comm_int.h"
#include "cost/interf_int.h"
#include "input/config_int.h"

/* ------------------------------------------------------------ registry */

static const sc_compute_model *const compute_models[] = {&sc__roofline_model};
static const sc_comm_model *const comm_models[] = {&sc__comm_nccl_model};

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

void sc__cost_release(sc_ctx *ctx, sc_cost *cost) {
  sc__interf_tree_free(ctx, cost->interf_tree);
  cost->interf_tree = NULL;
}

int sc__cost_init(sc_ctx *ctx, const sc_config *cfg, sc_cost *cost) {
  memset(cost, 0, sizeof *cost);
  cost->hw = sc__config_gpu(cfg, &cost->hw_own);
  if (!cost->hw)
    return sc__error(ctx, SC_EINVAL, "%s: unknown gpu \"%s\"", cfg->origin, cfg->cluster.gpu);
  sc_cost_params def;
  sc__cost_defaults(cost->hw, &def);
  cost->p = cfg->costs;
  /* Zero means "default" for every parameter of the key table. */
  for (int i = 0; i < SC_CALIB_COST_COUNT; i++)
    if (sc__calib_get(&cost->p, i) == 0) *sc__calib_slot(&cost->p, i) = sc__calib_get(&def, i);
  /* The learned interference model is one vector: given anywhere, it is used
   * whole (a fitted coefficient may be exactly 0); else the shipped one. */
  double given[SC_INTERF_NFEAT];
  int any = 0;
  sc__interf_coefs_to_array(&cfg->costs.interference_w, given);
  for (int i = 0; i < SC_INTERF_NFEAT; i++) any |= given[i] != 0;
  if (!any) cost->p.interference_w = def.interference_w;
  sc__interf_coefs_to_array(&cost->p.interference_w, cost->interf_w);
  if (cfg->simulation.interference == SC_INTERF_TREE) {
    if (!cfg->interference_tree[0])
      return sc__error(ctx, SC_EINVAL,
                       "%s: simulation.interference: tree needs calibration.interference_tree "
                       "(the model file `stepcast calibrate --interference --model tree -o FILE` "
                       "writes, named in FILE)",
                       cfg->origin);
    int rc = sc__interf_tree_load_file(ctx, cfg->interference_tree, NULL, &cost->interf_tree);
    if (rc) return rc;
  }
  double tflops = peak_tflops(cost->hw, cfg->training.precision);
  if (tflops <= 0)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s: gpu %s has no peak for the chosen precision",
                     cfg->origin, cost->hw->name);
  /* FP8 training (Transformer Engine, torchao): the linear layers' GEMMs run
   * on FP8 operands at the FP8 peak; attention, norms and the rest in bf16
   * (fp8_attention moves attention to FP8 too). */
  int fp8 = cfg->training.precision == SC_PREC_FP8;
  cost->fp8_peak_flops = cost->hw->fp8_tflops * 1e12;
  cost->peak_flops = (fp8 ? peak_tflops(cost->hw, SC_PREC_BF16) : tflops) * 1e12;
  cost->attn_peak_flops = fp8 && cfg->training.fp8_attention ? cost->fp8_peak_flops
                                                             : cost->peak_flops;
  cost->attn_eff = sc__cost_attn_eff(&cost->p, cfg);
  /* GEMM operand bytes: 4 for fp32 (TF32 math); 2 otherwise (fp8 GEMMs
   * keep 16-bit outputs and the calibration was fitted this way). */
  cost->elem_bytes = sc__precision_elem_bytes(cfg->training.precision);
  cost->hbm_bytes_per_ns = cost->hw->hbm_gbps; /* GB/s == bytes/ns */
  cost->nvlink_bytes_per_ns =
      cfg->cluster.nvlink_gbps > 0 ? cfg->cluster.nvlink_gbps : cost->hw->nvlink_gbps;
  double nic_gbit = cfg->cluster.nic_gbps > 0 ? cfg->cluster.nic_gbps : cost->hw->nic_gbps;
  cost->nic_bytes_per_ns = nic_gbit / 8.0;
  cost->gpus_per_node = cfg->cluster.gpus_per_node > 0 ? cfg->cluster.gpus_per_node
                                                       : cost->hw->gpus_per_node;
  /* Network tiers (docs/COMM.md, "Network tiers"): the leaf a node sits
   * under is node / nodes_per_leaf; 0 = one leaf for all. */
  cost->nodes_per_leaf = cfg->cluster.leaf_gpus > 0 && cost->gpus_per_node > 0
                             ? cfg->cluster.leaf_gpus / cost->gpus_per_node
                             : 0;
  cost->spine_oversub =
      cfg->cluster.spine_oversubscription > 1 ? cfg->cluster.spine_oversubscription : 1;
  cost->leaf_latency_us = cfg->cluster.leaf_latency_us;
  cost->spine_latency_us = cfg->cluster.spine_latency_us;
  cost->rail_optimized = cfg->cluster.rail_optimized;
  cost->compute = &sc__roofline_model;
  cost->comm = &sc__comm_nccl_model; /* "nccl" v4, comm_nccl.c */
  sc__comm_params_from_cost(cost, &cost->comm_params);
  sc__comm_topo_from_cost(cost, &cost->comm_topo);
  cost->moe_deepep = cfg->model.moe_experts > 0 && cfg->parallel.moe_dispatcher == SC_MOE_DEEPEP;
  cost->moe_experts = (double)cfg->model.moe_experts;
  cost->moe_topk = (double)(cfg->model.moe_topk > 0 ? cfg->model.moe_topk : 2);
  return SC_OK;
}
