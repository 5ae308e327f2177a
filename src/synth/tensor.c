/*
 * tensor.c: Megatron tensor parallelism in the synthesised workload:
 * column-parallel GEMMs whose input is all-gathered (sequence parallelism) and
 * row-parallel GEMMs whose output is reduce-scattered or all-reduced, forward
 * and backward, with Transformer Engine's chunked overlap (tp_comm_overlap).
 */
#include "synth/build_int.h"

/* ------------------------------------------------------------ FP8 */

/* FP8 training runs the linear layers' GEMMs on FP8 operands; the LM head
 * stays in bf16 (Transformer Engine and torchao leave it out). */
static int fp8_linear(const builder *B, int label) { return B->fp8 && label != SC_L_LOGITS; }

static double lin_ns(builder *B, int label, double m, double n, double k) {
  return fp8_linear(B, label) ? sc__syn_gemm_fp8(B, m, n, k) : sc__syn_gemm(B, m, n, k);
}

/* The quantisation an FP8 GEMM C[m,n] = A[m,k] B[k,n] needs before it runs,
 * as one memory-bound kernel (label fp8-cast), by training.fp8_recipe:
 *   delayed (Transformer Engine): the activation (forward: the input, m x k;
 *     backward: the output grad) read in bf16, written in FP8 and FP8
 *     transposed for the weight grads (4 bytes per element, scales from the
 *     amax history); the weight's cast is cached for the step, so each
 *     micro-batch pays 1/m of it;
 *   tensorwise (current scaling, torchao's default): the tensor's amax
 *     first, and the weight is cast every forward (6 bytes per element). An
 *     activation's amax is its own pass (+2 bytes) only with
 *     training.eager: a fused stack (torch.compile) reduces it in the kernel
 *     that produces the activation (the norm, the activation function), so
 *     the cast reads it once, 4 bytes as under delayed scaling;
 *   rowwise: per-row scales, a cast of 3 bytes per element, the weight cast
 *     row- and column-wise every forward, and the weight-grad GEMM quantises
 *     both its operands column-wise again (3 bytes per element).
 * Forward, data-grad and weight-grad passes are told apart by the phase. */
static void fp8_casts_rows(builder *B, const where *w, int label, double m, double n, double k,
                           double cast_m) {
  if (!fp8_linear(B, label)) return;
  sc_fp8_recipe r = B->cfg->training.fp8_recipe;
  double act = r == SC_FP8_ROWWISE                                ? 3.0
               : r == SC_FP8_TENSORWISE && B->cfg->training.eager ? 6.0
                                                                  : 4.0;
  double weight = r == SC_FP8_DELAYED ? 4.0 / (double)B->m : 6.0;
  double bytes;
  if (w->phase == SC_PH_WGRAD) bytes = r == SC_FP8_ROWWISE ? 3.0 * (m * k + k * n) : 0.0;
  else if (w->phase == SC_PH_BWD) bytes = act * cast_m * k;
  else bytes = act * cast_m * k + weight * k * n;
  if (bytes > 0) sc__syn_compute(B, w, SC_OP_ELEMWISE, SC_L_FP8_CAST, sc__syn_mem(B, bytes));
}

static void fp8_casts(builder *B, const where *w, int label, double m, double n, double k) {
  fp8_casts_rows(B, w, label, m, n, k, m);
}

/* parallel.tp_fp8_allgather: the input A of a sequence-parallel gathered GEMM
 * (a column-parallel linear's forward input, a row-parallel linear's output
 * grad in backward) is cast to FP8 on this rank's m/t rows before the
 * all-gather, which then moves one byte per element: torchao's
 * Float8ColwiseParallel / Float8RowwiseParallel, and the one cast of the
 * attention and FFN inputs that its PrepareFloat8ModuleInput shares between
 * their projections. */
static int fp8_gather(const builder *B, int label) {
  return fp8_linear(B, label) && B->sh->sp && B->cfg->parallel.tp_fp8_allgather;
}

/* A linear layer's GEMM on the compute stream: its FP8 casts, then itself. */
static void linear(builder *B, const where *w, int label, double m, double n, double k) {
  fp8_casts(B, w, label, m, n, k);
  sc__syn_compute(B, w, SC_OP_GEMM, label, lin_ns(B, label, m, n, k));
}

void sc__syn_linear(builder *B, const where *w, int label, double m, double n, double k) {
  linear(B, w, label, m, n, k);
}

void sc__syn_fp8_casts(builder *B, const where *w, int label, double m, double n, double k) {
  fp8_casts(B, w, label, m, n, k);
}

/* ------------------------------------------------------------ tensor parallelism */

/* A TP collective on the critical path: after the last compute op, and the
 * next compute op waits for it. */
void sc__syn_tp_blocking(builder *B, const where *w, int coll, int label, double bytes) {
  if (B->sh->t <= 1) return;
  sc__syn_add_wait(B, sc__syn_tp_after_compute(B, w, coll, label, bytes));
}

/* GEMMs C_i[m,n_i] = A[m,k] B_i[k,n_i] (i < parts) that share their input A,
 * all-gathered over the TP group first (sequence parallelism; `bytes` = the
 * gathered input): one GEMM (a fused projection) or the separate linears of
 * training.fused_projections=false, which each read A. Plain Megatron
 * blocks on the gather. With tp_comm_overlap (Transformer Engine's
 * userbuffers ring exchange, torchtitan's async TP) the GEMMs run as t
 * chunks of m/t rows, chunk i while chunk i+1 arrives: t-1 chunks overlap
 * the gather, the last waits. The FP8 casts are those of one GEMM of the
 * summed width: one cast of A, the weights' casts. */
void sc__syn_gathered_gemms(builder *B, const where *w, int label, double m, const double *n,
                            int parts, double k, double bytes) {
  const sc_shape *sh = B->sh;
  double nt = 0;
  for (int i = 0; i < parts; i++) nt += n[i];
  if (!sh->sp) {
    fp8_casts(B, w, label, m, nt, k);
    for (int i = 0; i < parts; i++) sc__syn_compute(B, w, SC_OP_GEMM, label, lin_ns(B, label, m, n[i], k));
    return;
  }
  /* fp8 gather: the shard's cast, then its gather; else the gather, then
   * the cast of the whole input */
  int fg = fp8_gather(B, label);
  if (fg) {
    fp8_casts_rows(B, w, label, m, nt, k, m / sh->t);
    bytes /= sh->elem_bytes;
  }
  if (!B->cfg->parallel.tp_comm_overlap) {
    sc__syn_tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, bytes);
    if (!fg) fp8_casts(B, w, label, m, nt, k);
    for (int i = 0; i < parts; i++) sc__syn_compute(B, w, SC_OP_GEMM, label, lin_ns(B, label, m, n[i], k));
    return;
  }
  uint32_t ag = sc__syn_tp_after_compute(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, bytes);
  if (!fg) fp8_casts(B, w, label, m, nt, k);
  double chunk = 0;
  for (int i = 0; i < parts; i++) chunk += lin_ns(B, label, m / sh->t, n[i], k);
  sc__syn_compute(B, w, SC_OP_GEMM, label, (sh->t - 1.0) * chunk);
  sc__syn_add_wait(B, ag);
  sc__syn_compute(B, w, SC_OP_GEMM, label, chunk);
}

void sc__syn_gathered_gemm(builder *B, const where *w, int label, double m, double n, double k,
                          double bytes) {
  sc__syn_gathered_gemms(B, w, label, m, &n, 1, k, bytes);
}

/* A row-parallel GEMM whose partial output is reduce-scattered (SP) or
 * all-reduced (TP only) before the next op. With tp_comm_overlap the
 * reduce-scatter of chunk i runs while chunk i+1 is computed: only the first
 * chunk's GEMM and the tail of the collective stay exposed. */
void sc__syn_reduced_gemm(builder *B, const where *w, int label, double m, double n, double k,
                         double bytes) {
  const sc_shape *sh = B->sh;
  if (sh->t <= 1 || !sh->sp || !B->cfg->parallel.tp_comm_overlap) {
    linear(B, w, label, m, n, k);
    sc__syn_tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                sh->sp ? SC_L_TP_RS : SC_L_TP_AR, bytes);
    return;
  }
  fp8_casts(B, w, label, m, n, k);
  double chunk = lin_ns(B, label, m / sh->t, n, k);
  sc__syn_compute(B, w, SC_OP_GEMM, label, chunk);
  uint32_t rs = sc__syn_tp_after_compute(B, w, SC_COLL_REDUCESCATTER, SC_L_TP_RS, bytes);
  sc__syn_compute(B, w, SC_OP_GEMM, label, (sh->t - 1.0) * chunk);
  sc__syn_add_wait(B, rs);
}

/* The input grads of `parts` > 1 linears that read one input are summed
 * before they flow on (autograd accumulates them): one kernel reading the
 * parts and writing the sum in a fused stack, an add per extra part under
 * training.eager. */
static void input_grads_sum(builder *B, const where *w, int label, int parts, double elems) {
  if (parts <= 1) return;
  double e = B->sh->elem_bytes;
  double bytes = B->cfg->training.eager ? 3.0 * (parts - 1) * elems * e : (parts + 1.0) * elems * e;
  sc__syn_compute(B, w, SC_OP_ELEMWISE, label, sc__syn_mem(B, bytes));
}

/* Backward of column-parallel linears sharing one input (QKV, FC1, logits;
 * `parts` widths n_out[i], as sc__syn_gathered_gemms) as Megatron runs it:
 * with SP the input all-gather overlaps the data-grad GEMMs; the grad
 * reduce-scatter (SP) or all-reduce (TP only) overlaps the weight-grad
 * GEMMs. A split backward (B->bw_input, zero-bubble schedules) runs the
 * data-grad GEMMs and their reduction only; the weight grads come in the W
 * pass, from the input kept since the forward (sc__syn_weight_grads). */
void sc__syn_column_parallel_backwards(builder *B, const where *w, int label, const double *n_out,
                                       int parts) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  double act = T * sh->h * sh->elem_bytes;
  if (B->bw_input) {
    for (int i = 0; i < parts; i++) linear(B, w, label, T, sh->h, n_out[i]);
    input_grads_sum(B, w, label, parts, T * sh->h);
    sc__syn_tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                        sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
    return;
  }
  uint32_t ag = NONE; /* the input again, for the weight grads: fp8 if gathered so */
  if (sh->sp)
    ag = sc__syn_tp_after_compute(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG,
                                  fp8_gather(B, label) ? act / sh->elem_bytes : act);
  for (int i = 0; i < parts; i++) linear(B, w, label, T, sh->h, n_out[i]);
  input_grads_sum(B, w, label, parts, T * sh->h);
  uint32_t red = NONE;
  if (sh->t > 1)
    red = sc__syn_tp_after_compute(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                           sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  sc__syn_add_wait(B, ag);
  for (int i = 0; i < parts; i++) linear(B, &ww, label, n_out[i], sh->h, T);
  sc__syn_add_wait(B, red);
}

void sc__syn_column_parallel_backward(builder *B, const where *w, int label, double n_out) {
  sc__syn_column_parallel_backwards(B, w, label, &n_out, 1);
}

/* Backward of a row-parallel linear (attention projection, FC2): the output
 * grad is all-gathered (SP; the mirror of the forward reduce-scatter) into
 * the input-grad GEMM, then the weight-grad GEMM (in the W pass when split). */
void sc__syn_row_parallel_backward(builder *B, const where *w, int label, double k_in) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  sc__syn_gathered_gemm(B, w, label, T, k_in, sh->h, T * sh->h * sh->elem_bytes);
  if (B->bw_input) return;
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  linear(B, &ww, label, k_in, sh->h, T);
}


/* The weight-grad GEMM of a linear with n_in x n_out weights on this TP
 * rank, in a zero-bubble schedule's W pass. */
void sc__syn_weight_grads(builder *B, const where *w, int label, const double *n, int parts) {
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  for (int i = 0; i < parts; i++) linear(B, &ww, label, n[i], B->sh->h, sc__syn_tokens(B));
}

void sc__syn_weight_grad(builder *B, const where *w, int label, double n) {
  sc__syn_weight_grads(B, w, label, &n, 1);
}
