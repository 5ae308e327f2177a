/*
 * pipeline.c: one pipeline stage's program. Walks the stage's schedule
 * (model/schedule.c: GPipe, 1F1B, interleaved 1F1B) and emits each pass
 * with its blocking p2p receive and send (Megatron's default pipeline
 * communication), the layers of its model chunk, the embedding or LM head
 * where the chunk holds them, and the gradient buckets as they become final.
 */
#include "synth/build_int.h"

static int64_t vstage(const builder *B, int64_t stage, int64_t chunk) {
  return chunk * B->pp + stage;
}

/* Emits a send or receive; returns its dep handle. Megatron's default
 * pipeline p2p is blocking: a receive is posted when the compute stream gets
 * to the pass that needs it, and the next pass waits for the last send. */
static uint32_t p2p_op(builder *B, int stream, int label, uint32_t mb, uint16_t chunk,
                       double bytes, uint32_t after) {
  sc_op op = {0};
  op.work = bytes;
  op.kind = (stream == SC_ST_FWD_SEND || stream == SC_ST_BWD_SEND) ? SC_OP_SEND : SC_OP_RECV;
  op.cat = SC_CAT_PP;
  op.label = (uint8_t)label;
  op.layer = SC_NO_LAYER;
  op.chunk = chunk;
  op.mb = mb;
  op.phase = (stream == SC_ST_FWD_SEND || stream == SC_ST_FWD_RECV) ? SC_PH_FWD : SC_PH_BWD;
  uint32_t idx = sc__syn_emit(B, stream, &op, &after, 1);
  return idx == NONE ? NONE : SC_DEP(stream, idx);
}

/* Receives a pipeline message (activation or its grad) for item `it`; the
 * next compute op waits for it. Without SP the 1/t slices are all-gathered
 * over the TP group first (scatter/gather, see build_stage); the gather is
 * pipeline traffic in the breakdown. */
static void receive_activation(builder *B, const where *w, int stream, int label,
                               const item *it, double bytes, uint32_t posted) {
  const sc_shape *sh = B->sh;
  uint32_t r = p2p_op(B, stream, label, it->mb, it->chunk, bytes, posted);
  if (!sh->sp && sh->t > 1)
    r = sc__syn_tp_after_op(B, w, SC_COLL_ALLGATHER, SC_L_TP_AG, SC_CAT_PP, bytes * sh->t, r);
  sc__syn_add_wait(B, r);
}

int sc__syn_build_stage(builder *B, const item *sched, size_t nsched, double *stage_params) {
  const sc_shape *sh = B->sh;
  const sc_config *cfg = B->cfg;
  int64_t stage = B->stage, pp = B->pp, v = B->vpp;
  int64_t last_vs = pp * v - 1;
  /* Pipeline messages are split over the TP ranks of a stage, each sending
   * b*s*h/t over its own NIC: with SP the activations are already scattered;
   * without it Megatron-LM's scatter/gather optimisation (SC21 section 4.1,
   * on by default) sends a 1/t slice and all-gathers it over NVLink on the
   * receiving stage (receive_activation). */
  double p2p_bytes = sc__syn_tokens(B) * sh->h * sh->elem_bytes / sh->t;
  double lparams = B->lparams;
  double emb_params = sh->v * sh->h / sh->t;
  int tied = cfg->model.tied_embeddings;
  int overlap = cfg->parallel.overlap_grad_reduce;

  /* Parameters held by this stage (per TP rank). */
  double params = sc__shape_stage_params(sh, stage);
  *stage_params = params;

  sc__syn_dp_param_gathers(B);

  /* Index in sched of the last backward of each chunk (its grads are final). */
  size_t last_b[64];
  for (int64_t c = 0; c < v && c < 64; c++) last_b[c] = 0;
  for (size_t i = 0; i < nsched; i++)
    if (!sched[i].fwd) last_b[sched[i].chunk] = i;
  uint8_t *first_fwd_seen = sc__calloc(B->ctx, (size_t)v, 1);
  if (!first_fwd_seen) return SC_ENOMEM;

  bucketer bk = {0, (double)cfg->parallel.dp_bucket_elems, overlap};

  for (size_t i = 0; i < nsched && !B->rc; i++) {
    const item *it = &sched[i];
    int64_t vs = vstage(B, stage, it->chunk);
    where w = {SC_NO_LAYER, it->chunk, it->mb, it->fwd ? SC_PH_FWD : SC_PH_BWD};
    uint32_t posted = i >= (size_t)B->lag ? B->item_end[i - (size_t)B->lag] : NONE;
    if (i >= (size_t)B->lag) sc__syn_add_wait(B, B->item_send[i - (size_t)B->lag]);
    B->item_send[i] = NONE;
    if (it->fwd) {
      if (vs > 0)
        receive_activation(B, &w, SC_ST_FWD_RECV, SC_L_RECV_ACT, it, p2p_bytes, posted);
      if (vs == 0) sc__syn_embedding_forward(B, &w);
      int first = !first_fwd_seen[it->chunk];
      first_fwd_seen[it->chunk] = 1;
      for (int64_t j = 0; j < B->lpc; j++) {
        w.layer = (uint16_t)(vs * B->lpc + j);
        if (first) sc__syn_add_wait(B, B->param_ag[w.layer]);
        sc__syn_layer_forward(B, &w);
      }
      w.layer = SC_NO_LAYER;
      if (vs == last_vs) sc__syn_head_forward(B, &w);
      else B->item_send[i] = p2p_op(B, SC_ST_FWD_SEND, SC_L_SEND_ACT, it->mb, it->chunk,
                                    p2p_bytes, sc__syn_last_compute(B));
    } else {
      int final = (i == last_b[it->chunk]);
      if (vs < last_vs)
        receive_activation(B, &w, SC_ST_BWD_RECV, SC_L_RECV_GRAD, it, p2p_bytes, posted);
      if (vs == last_vs) {
        sc__syn_head_backward(B, &w);
        if (final && (!tied || pp > 1 || v > 1)) sc__syn_bucket_add(B, &bk, emb_params);
        if (final) sc__syn_bucket_add(B, &bk, 2.0 * sh->h);
      }
      for (int64_t j = B->lpc - 1; j >= 0; j--) {
        w.layer = (uint16_t)(vs * B->lpc + j);
        sc__syn_layer_backward(B, &w);
        if (final) sc__syn_bucket_add(B, &bk, lparams);
      }
      w.layer = SC_NO_LAYER;
      if (vs == 0) {
        sc__syn_embedding_backward(B, &w);
        if (final) sc__syn_bucket_add(B, &bk, emb_params);
      }
      if (final) { /* close the chunk's last partial bucket */
        if (bk.fill > 0) {
          if (overlap) sc__syn_dp_reduce(B, bk.fill, sc__syn_last_compute(B));
        }
        bk.fill = 0;
      }
      if (vs > 0)
        B->item_send[i] = p2p_op(B, SC_ST_BWD_SEND, SC_L_SEND_GRAD, it->mb, it->chunk,
                                 p2p_bytes, sc__syn_last_compute(B));
    }
    B->item_end[i] = sc__syn_last_compute(B);
  }
  sc__free(B->ctx, first_fwd_seen, (size_t)v);
  if (B->rc) return B->rc;

  /* The optimizer waits for the gradients and for the last sends. */
  sc__syn_add_wait(B, sc__syn_dp_grads_done(B, params));
  for (size_t k = nsched > (size_t)B->lag ? nsched - (size_t)B->lag : 0; k < nsched; k++)
    sc__syn_add_wait(B, B->item_send[k]);
  sc__syn_dp_optimizer(B, params);
  return B->rc;
}

