/*
 * tensor.c: Megatron tensor parallelism in the synthesised workload:
 * column-parallel GEMMs whose input is all-gathered (sequence parallelism) and
 * row-parallel GEMMs whose output is reduce-scattered or all-reduced, forward
 * and backward, with Transformer Engine's chunked overlap (tp_comm_overlap).
 */
#include "synth/build_int.h"

/* A TP collective on the critical path: after the last compute op, and the
 * next compute op waits for it. */
void sc__syn_tp_blocking(builder *B, const where *w, int coll, int label, double bytes) {
  if (B->sh->t <= 1) return;
  sc__syn_add_wait(B, sc__syn_tp_after_compute(B, w, coll, label, bytes));
}

/* A GEMM C[m,n] = A[m,k] B[k,n] whose input A is all-gathered over the TP
 * group first (sequence parallelism; `bytes` = the gathered input). Plain
 * Megatron blocks on the gather. With tp_comm_overlap (Transformer Engine's
 * userbuffers ring exchange) the GEMM runs as t chunks of m/t rows, chunk i
 * while chunk i+1 arrives: t-1 chunks overlap the gather, the last waits. */
void sc__syn_gathered_gemm(builder *B, const where *w, int label, double m, double n, double k,
                          double bytes) {
  const sc_shape *sh = B->sh;
  if (!sh->sp) {
    sc__syn_compute(B, w, SC_OP_GEMM, label, sc__syn_gemm(B, m, n, k));
    return;
  }
  if (!B->cfg->parallel.tp_comm_overlap) {
    sc__syn_tp_blocking(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, bytes);
    sc__syn_compute(B, w, SC_OP_GEMM, label, sc__syn_gemm(B, m, n, k));
    return;
  }
  uint32_t ag = sc__syn_tp_after_compute(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, bytes);
  double chunk = sc__syn_gemm(B, m / sh->t, n, k);
  sc__syn_compute(B, w, SC_OP_GEMM, label, (sh->t - 1.0) * chunk);
  sc__syn_add_wait(B, ag);
  sc__syn_compute(B, w, SC_OP_GEMM, label, chunk);
}

/* A row-parallel GEMM whose partial output is reduce-scattered (SP) or
 * all-reduced (TP only) before the next op. With tp_comm_overlap the
 * reduce-scatter of chunk i runs while chunk i+1 is computed: only the first
 * chunk's GEMM and the tail of the collective stay exposed. */
void sc__syn_reduced_gemm(builder *B, const where *w, int label, double m, double n, double k,
                         double bytes) {
  const sc_shape *sh = B->sh;
  if (sh->t <= 1 || !sh->sp || !B->cfg->parallel.tp_comm_overlap) {
    sc__syn_compute(B, w, SC_OP_GEMM, label, sc__syn_gemm(B, m, n, k));
    sc__syn_tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                sh->sp ? SC_L_TP_RS : SC_L_TP_AR, bytes);
    return;
  }
  double chunk = sc__syn_gemm(B, m / sh->t, n, k);
  sc__syn_compute(B, w, SC_OP_GEMM, label, chunk);
  uint32_t rs = sc__syn_tp_after_compute(B, w, SC_COLL_REDUCESCATTER, SC_L_TP_RS, bytes);
  sc__syn_compute(B, w, SC_OP_GEMM, label, (sh->t - 1.0) * chunk);
  sc__syn_add_wait(B, rs);
}

/* Backward of a column-parallel linear (QKV, FC1, logits) as Megatron runs
 * it: with SP the input all-gather overlaps the data-grad GEMM; the grad
 * reduce-scatter (SP) or all-reduce (TP only) overlaps the weight-grad GEMM.
 * A split backward (B->bw_input, zero-bubble schedules) runs the data-grad
 * GEMM and its reduction only; the weight grads come in the W pass, from
 * the input kept since the forward (sc__syn_weight_grad). */
void sc__syn_column_parallel_backward(builder *B, const where *w, int label, double n_out) {
  const sc_shape *sh = B->sh;
  double T = sc__syn_tokens(B);
  double act = T * sh->h * sh->elem_bytes;
  if (B->bw_input) {
    sc__syn_compute(B, w, SC_OP_GEMM, label, sc__syn_gemm(B, T, sh->h, n_out));
    sc__syn_tp_blocking(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                        sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
    return;
  }
  uint32_t ag = NONE;
  if (sh->sp) ag = sc__syn_tp_after_compute(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, act);
  sc__syn_compute(B, w, SC_OP_GEMM, label, sc__syn_gemm(B, T, sh->h, n_out));
  uint32_t red = NONE;
  if (sh->t > 1)
    red = sc__syn_tp_after_compute(B, w, sh->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE,
                           sh->sp ? SC_L_TP_RS : SC_L_TP_AR, act);
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  sc__syn_add_wait(B, ag);
  sc__syn_compute(B, &ww, SC_OP_GEMM, label, sc__syn_gemm(B, n_out, sh->h, T));
  sc__syn_add_wait(B, red);
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
  sc__syn_compute(B, &ww, SC_OP_GEMM, label, sc__syn_gemm(B, k_in, sh->h, T));
}


/* The weight-grad GEMM of a linear with n_in x n_out weights on this TP
 * rank, in a zero-bubble schedule's W pass. */
void sc__syn_weight_grad(builder *B, const where *w, int label, double n) {
  where ww = *w;
  ww.phase = SC_PH_WGRAD;
  sc__syn_compute(B, &ww, SC_OP_GEMM, label, sc__syn_gemm(B, n, B->sh->h, sc__syn_tokens(B)));
}
