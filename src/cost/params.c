/*
 * params.c: the documented defaults of every cost-model parameter (the
 * calibration keys, input/calib_keys.h) per GPU: kernel-data priors, the
 * compute values fitted on the calibration rows, the ex-situ host costs and
 * the interference table. Each value cites the measurement it came from.
 */
#include "cost/cost_int.h"
#include "cost/interf_int.h"

#include <stdio.h>
#include <strings.h>

/* ------------------------------------------------------------ defaults */

/* The GH100 compute die (H100, H800, H200 and the 500 W H100): one set of
 * kernel data and one fit. */
static int gh100(const sc_hw *hw) {
  return !strncasecmp(hw->name, "h100", 4) || !strncasecmp(hw->name, "h800", 4) ||
         !strncasecmp(hw->name, "h200", 4);
}

/* Best-shape GEMM throughput / dense peak, from the "maximum achievable matmul
 * FLOPS" table (validation/kernels/gemm_mamf.csv, BF16): A100 SXM 271.2/312,
 * H100 SXM 794.5/989 (H200 "the same"), B200 SXM 1745/2250. V100 has no row:
 * 0.80 is assumed. */
static double default_gemm_eff(const sc_hw *hw) {
  if (!strncasecmp(hw->name, "a100", 4)) return 271.2 / 312.0;
  if (gh100(hw))
    return 794.5 / 989.0;
  if (!strncasecmp(hw->name, "b200", 4) || !strncasecmp(hw->name, "gb200", 5))
    return 1745.0 / 2250.0; /* GB200: the B200 die */
  return 0.80;
}

/* Best-shape FP8 (e4m3) GEMM throughput / FP8 dense peak, same table, FP8
 * rows: H200 SXM 1453.4/1979 (the H100's die and clocks), B200 SXM
 * 3432.5/4500. GPUs without FP8 never use it. */
static double default_fp8_gemm_eff(const sc_hw *hw) {
  if (!strncasecmp(hw->name, "b200", 4) || !strncasecmp(hw->name, "gb200", 5))
    return 3432.5 / 4500.0;
  return 1453.4 / 1979.0;
}

/* FlashAttention-2 fwd+bwd, causal, head dim 128, fit of
 * validation/kernels/flashattention_kernel_tflops.csv to
 * eff = E * s/(s + 520) * d/(d + 16): A100 189 TFLOP/s at s=16k -> E = 0.70;
 * H100 328 TFLOP/s at s=16k -> E = 0.385. Other GPUs reuse the A100 value. */
static double default_attn_eff(const sc_hw *hw) {
  if (gh100(hw))
    return 0.385;
  return 0.70;
}

/* cuDNN fused attention (Transformer Engine's FusedAttention backend): the
 * same table's H100 forward rows (cuDNN 9, from the FlashAttention-3 paper)
 * run 1.58-1.65x FlashAttention-2 at head dim 128, causal and not, s =
 * 1K-16K (1.61x at 16K causal: 539 against 335 TFLOP/s); the fwd+bwd
 * efficiency is FlashAttention-2's scaled by that ratio, 0.385 * 1.60. At
 * head dim 64 the ratio is only 1.27 (the curve's d/(d + 16) keeps
 * FlashAttention-2's head-dim dependence). Off Hopper cuDNN's kernels are
 * slower: 0.82x FlashAttention on an A100 in the SDPA benchmark of
 * huggingface/transformers pull request 48163 (2026-08), which keeps
 * FlashAttention first everywhere but Hopper; other GPUs have no cuDNN
 * figure and keep their FlashAttention-2 value. */
static double default_cudnn_attn_eff(const sc_hw *hw) {
  if (gh100(hw))
    return 0.385 * 1.60;
  if (!strncasecmp(hw->name, "a100", 4)) return default_attn_eff(hw) * 0.82;
  return default_attn_eff(hw);
}

/* The unfused attention core's bandwidth: the PyTorch rows of
 * validation/kernels/flashattention_kernel_tflops.csv (the FlashAttention-2
 * benchmark's reference attention: baddbmm, softmax, einsum with V; fwd+bwd,
 * causal and not, head dim 64 and 128, s = 512-8K) priced as those kernels
 * (the score GEMMs, softmax, its backward, the causal mask's add, the q/k/v
 * layout copies at mem_eff) with the other kernel-data priors, the scores'
 * traffic at scores_mem_eff: least squares in log time over the 20 rows of
 * each GPU gives A100 0.50 (MAPE 5.5 %, worst +17.6 % at s = 512; at s = 2048
 * -7.8 % to +1.8 %) and H100 0.56 (7.2 %, worst +22.2 % at s = 512). The
 * roofline's 80 % (mem_eff) prices these kernels 1.3-1.6x too fast: GEMMs
 * that write or read an s x s matrix at K or N = head_dim and row-wise
 * softmax passes do not stream like a copy. Other GPUs reuse the A100's. */
static double default_scores_mem_eff(const sc_hw *hw) { return gh100(hw) ? 0.56 : 0.50; }

/* The H200 (SXM, 141 GB, 700 W): this project's own kernel measurements on
 * one such GPU (validation/h200, tools/measure_gpu.py, 2026-12-04; the fit
 * is recorded in validation/calibration/kernel-h200.yaml): bf16 GEMMs through
 * F.linear 0.725 of the dense peak with gemm_dim_half 128 and 2 us per kernel
 * (61 shapes, MAPE 4.7 %; sustained GEMMs hold the 700 W limit at ~1.5 GHz,
 * the power-bound rate: inside a training step, between memory-bound
 * kernels, the same GEMMs ran 4-23 % faster), FP8 tensor-wise 0.65 of the
 * FP8 peak, SDPA flash 0.37 and cuDNN 0.62 on the attention curve (the H100's
 * kernel values 0.385 and 0.616 within 4 %), streaming kernels 0.80 of
 * 4.8 TB/s. The scores' bandwidth keeps the H100's (not measured). */
static int h200(const sc_hw *hw) { return !strncasecmp(hw->name, "h200", 4); }
static void h200_priors(sc_cost_params *p) {
  p->gemm_eff = 0.725;
  p->gemm_dim_half = 128.0;
  p->fp8_gemm_eff = 0.65;
  p->attn_eff = 0.37;
  p->cudnn_attn_eff = 0.62;
  p->mem_eff = 0.80;
  p->kernel_overhead_us = 2.0;
}

/* Compute parameters from kernel measurements alone, before any fit to step
 * times: the start and prior centre of calibrate.c. */
void sc__cost_compute_priors(const sc_hw *hw, sc_cost_params *p) {
  p->gemm_eff = default_gemm_eff(hw);
  p->fp8_gemm_eff = default_fp8_gemm_eff(hw);
  p->gemm_dim_half = 64.0; /* modelling choice: a 64-wide dim loses half; calibrated */
  p->attn_eff = default_attn_eff(hw);
  p->cudnn_attn_eff = default_cudnn_attn_eff(hw);
  p->mem_eff = 0.80; /* streaming kernels typically reach ~80% of HBM peak */
  p->scores_mem_eff = default_scores_mem_eff(hw);
  p->kernel_overhead_us = 2.0; /* launch gap between dependent kernels, ~1-3 us */
  if (h200(hw)) h200_priors(p);
}

/* Shipped compute defaults: the kernel-data priors, replaced for the GPUs
 * that have published step times by the fit on their split=calibration rows
 * (never validation rows); regenerate with tools/calibrate_defaults.sh,
 * which writes validation/calibration/{a100,h100}.yaml, and copy the values
 * here (test_validate checks that they agree).
 *   A100 (and the 40 GB part), in two stages: the 6 Megatron rows (SC21
 *     Table 1 on <= 256 GPUs, Korthikanti et al. 22B), which predate
 *     FlashAttention, fit gemm_eff, gemm_dim_half, mem_eff and
 *     kernel_overhead_us (MAPE 7.0 % -> 3.9 %; their unfused attention core
 *     is priced at the kernel-data scores_mem_eff, which the fit never
 *     moves); then the 5 llm-foundry A100 rows (the flash-attn package) fit
 *     attn_eff alone (10.5 % -> 7.0 %). Like the H100's, the fitted attn_eff
 *     (0.31) lies well below the kernel value (0.70): at s = 2048 attention
 *     is 5-10 % of those rows' compute, so it also carries what else in
 *     that stack the GEMM fit does not price.
 *   H100 (and H800 / H200 / the 500 W H100, the same GH100 compute die), in
 *     two stages: the 7 Megatron-Core rows (3 dense on <= 192 GPUs, 4 MoE),
 *     which run cuDNN fused attention, fit gemm_eff, gemm_dim_half,
 *     cudnn_attn_eff, mem_eff and kernel_overhead_us (MAPE 22.4 % -> 3.9 %);
 *     then the 12 FlashAttention-2 rows (torchtitan, llm-foundry) fit attn_eff
 *     alone with those held (13.3 % -> 8.7 %). The fitted attn_eff sits below
 *     the FlashAttention-2 kernel value: in those PyTorch stacks it also
 *     carries what the attention block costs around the kernel. */
static void compute_defaults(const sc_hw *hw, sc_cost_params *p) {
  sc__cost_compute_priors(hw, p);
  /* The H200 runs the H100's fit below, from the H100's kernel values: its
   * own (h200_priors) describe its kernels, while the fit also carries what
   * the H100 rows' stacks cost around them. validation/h200 shows both: its
   * kernels at the H100's attention rates, its GEMMs power-bound. */
  if (h200(hw)) p->fp8_gemm_eff = default_fp8_gemm_eff(hw);
  if (!strncasecmp(hw->name, "a100", 4)) {
    p->gemm_eff = 0.776141;
    p->gemm_dim_half = 76.5416;
    p->mem_eff = 0.775419;
    p->kernel_overhead_us = 2.07535;
    p->attn_eff = 0.308959;
  } else if (gh100(hw)) {
    p->gemm_eff = 0.547834;
    p->gemm_dim_half = 82.3204;
    p->cudnn_attn_eff = 0.655035;
    p->mem_eff = 0.635616;
    p->kernel_overhead_us = 2.12168;
    p->attn_eff = 0.268248;
  }
  /* No FP8 row calibrates the FP8 efficiency yet: it keeps the kernel value
   * scaled by what the fit did to the BF16 one (whatever costs around the
   * GEMMs in a training step costs around FP8 ones too). */
  p->fp8_gemm_eff *= p->gemm_eff / default_gemm_eff(hw);
}

int sc__cost_fitted(const sc_hw *hw) {
  return hw && (!strncasecmp(hw->name, "a100", 4) || gh100(hw));
}

void sc__cost_prior_sources(const sc_hw *hw, char *out, size_t n) {
  int gemm_data = !strncasecmp(hw->name, "a100", 4) || gh100(hw) ||
                  !strncasecmp(hw->name, "b200", 4) || !strncasecmp(hw->name, "gb200", 5);
  int attn_data = !strncasecmp(hw->name, "a100", 4) || gh100(hw);
  if (h200(hw)) {
    snprintf(out, n, "GEMM, attention and memory-bound kernel efficiencies from this project's H200 "
                     "measurements (validation/h200)");
    return;
  }
  snprintf(out, n,
           "GEMM efficiency %s; attention efficiency %s; memory-bound kernels at an assumed "
           "80 %% of HBM bandwidth",
           gemm_data ? "from its kernel data (gemm_mamf.csv)" : "an assumed 0.80 (no kernel data)",
           attn_data ? "from its kernel data"
                     : "the A100's FlashAttention-2 value (no kernel data for this GPU)");
}

int sc__cost_same_defaults(const sc_hw *a, const sc_hw *b) {
  sc_cost_params pa, pb;
  memset(&pa, 0, sizeof pa);
  memset(&pb, 0, sizeof pb);
  compute_defaults(a, &pa);
  compute_defaults(b, &pb);
  return pa.gemm_eff == pb.gemm_eff && pa.fp8_gemm_eff == pb.fp8_gemm_eff &&
         pa.gemm_dim_half == pb.gemm_dim_half && pa.attn_eff == pb.attn_eff &&
         pa.cudnn_attn_eff == pb.cudnn_attn_eff && pa.mem_eff == pb.mem_eff &&
         pa.scores_mem_eff == pb.scores_mem_eff &&
         pa.kernel_overhead_us == pb.kernel_overhead_us;
}

void sc__cost_defaults(const sc_hw *hw, sc_cost_params *p) {
  memset(p, 0, sizeof *p);
  compute_defaults(hw, p);
  /* Ex-situ traces (import cpu): eager PyTorch's host time per dispatched
   * operator (from Python; from the C++ autograd engine), per layer called
   * from Python (the nn.Module call), and the speed of convolutions and
   * batch/layer norms relative to GEMMs and streaming kernels. Fitted by
   * tools/calibrate_ddp.sh on the 20 one-GPU rows of validation/ddp
   * (A100-40GB hosts of 2021, PyTorch 1.x; grid search, MAPE 4.3 %,
   * refitted after the A100 compute refit of 2026-12-03); the 140 multi-GPU
   * rows are held out (docs/VALIDATION.md). */
  p->host_op_us = 2.0;
  p->host_autograd_us = 4.0;
  p->host_module_us = 80.0;
  p->conv_eff = 0.9;
  p->norm_eff = 0.5;
  p->p2p_latency_us = SC_P2P_LATENCY_US_DEFAULT;
  p->optimizer_bytes_per_param = 18.0; /* Adam: 16-20 B/param read+written */
  /* 90 % prediction intervals: `stepcast validate --fit-interval` on the
   * held-out errors of the split=calibration rows of every shipped case file
   * (tools/interval_loo.sh; never the validation rows), docs/VALIDATION.md. */
  p->interval_dense = SC_INTERVAL_DENSE_DEFAULT;
  p->interval_moe = SC_INTERVAL_MOE_DEFAULT;
  sc__interf_defaults(p); /* interf.c: the cited table and the shipped learned model */
}

