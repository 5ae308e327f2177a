/*
 * roofline.c: the "roofline" compute model: a kernel costs the slower of its
 * FLOPs at a shape-dependent efficiency and its HBM bytes, plus a fixed
 * per-kernel overhead. Parameters from params.c or the calibration.
 */
#include "cost/cost_int.h"

#include <math.h>

/* The FlashAttention efficiency curve eff = attn_eff * s/(s + 520) * d/(d + 16),
 * fitted to validation/kernels/flashattention_kernel_tflops.csv (params.c,
 * default_attn_eff): head dim 64 runs ~0.9x of 128 in the same data. */
#define ATTN_SEQ_HALF 520.0
#define ATTN_DIM_HALF 16.0

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
static double gemm_at_ns(const sc_cost *c, double m, double n, double k, double mem_eff) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  double h = c->p.gemm_dim_half;
  double eff = c->p.gemm_eff * tile_efficiency(m, n, c->hw->sms) * (k / (k + h));
  double flops = 2.0 * m * n * k;
  double t_compute = flops / (c->peak_flops * eff) * 1e9;
  double bytes = c->elem_bytes * (m * k + k * n + m * n);
  double t_mem = bytes / (c->hbm_bytes_per_ns * mem_eff);
  return fmax(t_compute, t_mem) + overhead_ns(c);
}

static double roofline_gemm_ns(const sc_cost *c, double m, double n, double k) {
  return gemm_at_ns(c, m, n, k, c->p.mem_eff);
}

/* The batched score GEMMs of unfused attention (Q K^T and dP write the s x s
 * scores at K = head_dim; P V, dV, dQ and dK read them): memory-bound at
 * the scores' bandwidth (scores_mem_eff, from the kernel data of the
 * PyTorch attention rows, params.c). */
static double roofline_scores_gemm_ns(const sc_cost *c, double m, double n, double k) {
  return gemm_at_ns(c, m, n, k, c->p.scores_mem_eff);
}

/* An FP8 GEMM: the same tiles at fp8_gemm_eff of the FP8 peak, 1-byte
 * operands and a 16-bit output. Its K loop runs at the FP8 rate while a
 * tile's prologue and epilogue (the same 16-bit output to write) take the
 * same time as in BF16, so the K that amortises them is gemm_dim_half
 * scaled by the ratio of the two best-shape rates: on this project's H200
 * (validation/h200/gemm.csv, 32 tensor-wise e4m3 rows, kernel-h200.yaml's
 * values) the BF16 K-half leaves the K = 128-512 rows 16-36 % slower than
 * predicted (MAPE 10.8 %); the scaled one (1.8 x 128) 3-28 % (10.3 %). */
static double roofline_fp8_gemm_ns(const sc_cost *c, double m, double n, double k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  double h = c->p.gemm_dim_half * (c->fp8_peak_flops * c->p.fp8_gemm_eff) /
             (c->peak_flops * c->p.gemm_eff);
  double eff = c->p.fp8_gemm_eff * tile_efficiency(m, n, c->hw->sms) * (k / (k + h));
  double t_compute = 2.0 * m * n * k / (c->fp8_peak_flops * eff) * 1e9;
  double bytes = m * k + k * n + 2.0 * m * n;
  double t_mem = bytes / (c->hbm_bytes_per_ns * c->p.mem_eff);
  return fmax(t_compute, t_mem) + overhead_ns(c);
}

static double roofline_attn_ns(const sc_cost *c, double flops, double seq, double head_dim) {
  if (flops <= 0) return 0;
  double eff = c->attn_eff * seq / (seq + ATTN_SEQ_HALF) * head_dim / (head_dim + ATTN_DIM_HALF);
  return flops / (c->attn_peak_flops * eff) * 1e9 + overhead_ns(c);
}

static double roofline_mem_ns(const sc_cost *c, double bytes) {
  if (bytes <= 0) return 0;
  return bytes / (c->hbm_bytes_per_ns * c->p.mem_eff) + overhead_ns(c);
}

static double roofline_scores_mem_ns(const sc_cost *c, double bytes) {
  if (bytes <= 0) return 0;
  return bytes / (c->hbm_bytes_per_ns * c->p.scores_mem_eff) + overhead_ns(c);
}

const sc_compute_model sc__roofline_model = {
    "roofline",          3,
    roofline_gemm_ns,    roofline_fp8_gemm_ns,    roofline_attn_ns, roofline_mem_ns,
    roofline_scores_gemm_ns, roofline_scores_mem_ns};

