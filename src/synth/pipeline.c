/*
 * pipeline.c: one pipeline stage's program. Walks the stage's schedule
 * (model/schedule.c: GPipe, 1F1B, interleaved 1F1B, the zero-bubble ones,
 * DualPipe and DualPipe-V) and emits each pass
 * with its blocking p2p receive and send (Megatron's default pipeline
 * communication), the layers of its model chunk, the embedding or LM head
 * where the chunk holds them, and the gradient buckets as they become final.
 */
#include "synth/build_int.h"

/* Emits a send or receive; returns its dep handle. Megatron's default
 * pipeline p2p is blocking: a receive is posted when the compute stream gets
 * to the pass that needs it, and the next pass waits for the last send. */
static uint32_t p2p_op(builder *B, int stream, int label, uint32_t mb, uint16_t chunk,
                       double bytes, uint32_t after) {
  sc_op op = {0};
  op.work = bytes;
  int send = stream == SC_ST_FWD_SEND || stream == SC_ST_BWD_SEND || stream == SC_ST_RFWD_SEND ||
             stream == SC_ST_RBWD_SEND;
  op.kind = send ? SC_OP_SEND : SC_OP_RECV;
  op.cat = SC_CAT_PP;
  op.label = (uint8_t)label;
  op.layer = SC_NO_LAYER;
  op.chunk = chunk;
  op.mb = mb;
  op.phase = (stream == SC_ST_FWD_SEND || stream == SC_ST_FWD_RECV || stream == SC_ST_RFWD_SEND ||
              stream == SC_ST_RFWD_RECV)
                 ? SC_PH_FWD
                 : SC_PH_BWD;
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

/* The p2p streams of a model chunk: forward receive and send, backward
 * receive and send. Chunk 1 of ZB-V and DualPipe-V, and DualPipe's mirrored
 * copy, run from the last stage back to the first, so use the reverse pair. */
typedef struct chunk_streams {
  int frecv, fsend, brecv, bsend;
} chunk_streams;

static chunk_streams streams_of(const builder *B, int64_t chunk) {
  if (sc__shape_reverse_chunk(B->sh, chunk))
    return (chunk_streams){SC_ST_RFWD_RECV, SC_ST_RFWD_SEND, SC_ST_RBWD_RECV, SC_ST_RBWD_SEND};
  return (chunk_streams){SC_ST_FWD_RECV, SC_ST_FWD_SEND, SC_ST_BWD_RECV, SC_ST_BWD_SEND};
}

/* Whether the neighbour of virtual stage vs in the pipeline order runs on
 * this stage too (ZB-V's turn on the last stage): then activations and
 * gradients pass through memory, not p2p. */
static int local_turn(const builder *B, int64_t vs, int next) {
  return B->sh->vshape && (next ? vs == B->pp - 1 : vs == B->pp);
}

/* Reduces the chunk's last partial bucket once its gradients are final. */
static void close_bucket(builder *B, bucketer *bk) {
  if (bk->fill > 0 && bk->overlap)
    sc__syn_dp_reduce(B, bk->group, bk->fill, sc__syn_last_compute(B));
  bk->fill = 0;
}

/* A layer's gradients are final: its dense part into the dp x cp bucket,
 * its routed experts' into the expert-data-parallel one. */
static void layer_grads(builder *B, bucketer *bk, bucketer *ek, int64_t layer) {
  sc__syn_bucket_add(B, bk, sc__syn_layer_dense_params(B, layer));
  double e = sc__syn_layer_expert_params(B, layer);
  if (e > 0) sc__syn_bucket_add(B, ek, e);
}

int sc__syn_build_stage(builder *B, const item *sched, size_t nsched, double *stage_params) {
  const sc_shape *sh = B->sh;
  const sc_config *cfg = B->cfg;
  int64_t stage = B->stage, v = sc__shape_chunks(sh);
  int64_t last_vs = B->pp * B->vpp - 1;
  int split = B->bw_input;
  int dualpipe = cfg->parallel.schedule == SC_SCHED_DUALPIPE ||
                 cfg->parallel.schedule == SC_SCHED_DUALPIPEV;
  /* Pipeline messages are split over the TP ranks of a stage, each sending
   * b*s*h/t over its own NIC: with SP the activations are already scattered;
   * without it Megatron-LM's scatter/gather optimisation (SC21 section 4.1,
   * on by default) sends a 1/t slice and all-gathers it over NVLink on the
   * receiving stage (receive_activation). */
  double p2p_bytes = sc__syn_tokens(B) * sh->h * sh->elem_bytes / sh->t;
  double emb_params = sh->v * sh->h / sh->t;
  int tied = cfg->model.tied_embeddings;
  int overlap = cfg->parallel.overlap_grad_reduce;

  /* Parameters held by this stage (per TP rank). */
  double params = sc__shape_stage_params(sh, stage);
  double expert_params = sc__shape_stage_expert_params(sh, stage);
  *stage_params = params;

  sc__syn_dp_param_gathers(B);

  /* Index in sched of the pass after which each chunk's gradients are
   * final: its last backward, or its last weight-grad pass when split. */
  size_t last_b[64];
  for (int64_t c = 0; c < v && c < 64; c++) last_b[c] = 0;
  for (size_t i = 0; i < nsched; i++)
    if (sched[i].pass == (split ? SC_PASS_W : SC_PASS_B)) last_b[sched[i].chunk] = i;
  uint8_t *first_fwd_seen = sc__calloc(B->ctx, (size_t)v, 1);
  if (!first_fwd_seen) return SC_ENOMEM;

  bucketer bk = {0, (double)cfg->parallel.dp_bucket_elems, overlap, SC_GRP_DP};
  bucketer ek = {0, (double)cfg->parallel.dp_bucket_elems, overlap, SC_GRP_EDP};

  for (size_t i = 0; i < nsched && !B->rc; i++) {
    const item *it = &sched[i];
    int64_t vs = sc__shape_vstage(sh, stage, it->chunk);
    int64_t nl = sc__shape_vs_layers(sh, vs), l0 = sc__shape_vs_first_layer(sh, vs);
    chunk_streams cs = streams_of(B, it->chunk);
    where w = {SC_NO_LAYER, it->chunk, it->mb, it->pass == SC_PASS_F ? SC_PH_FWD : SC_PH_BWD};
    uint32_t posted = NONE; /* lag 0: receives posted ahead, sends never waited for */
    if (B->lag > 0 && i >= (size_t)B->lag) {
      posted = B->item_end[i - (size_t)B->lag];
      sc__syn_add_wait(B, B->item_send[i - (size_t)B->lag]);
    }
    B->item_send[i] = NONE;
    /* MoE all-to-alls hidden behind compute (moe_a2a_overlap) are done
     * before the next pass starts; in a DualPipe F&B chunk only before the
     * pass after it: the backward's compute runs under the forward's
     * dispatches and combines (another micro-batch's, no data between them),
     * and its own all-to-alls follow them on the EP stream. */
    int fb_second = dualpipe && it->fb && it->pass == SC_PASS_B && i > 0 && sched[i - 1].fb;
    if (!fb_second) {
      sc__syn_add_wait(B, B->ep_pending);
      B->ep_pending = NONE;
    }
    /* Megatron's 1F1B all-to-all overlap (--overlap-moe-expert-parallel-comm)
     * runs a forward and a backward of different micro-batches together, so
     * a pass hides its EP communication only where the schedule alternates
     * forwards and backwards (the steady phase), not in the warm-up and
     * cool-down runs of one kind. */
    B->ep_overlap = cfg->parallel.moe_a2a_overlap &&
                    ((i > 0 && sched[i - 1].pass != it->pass) ||
                     (i + 1 < nsched && sched[i + 1].pass != it->pass));
    /* DualPipe and DualPipe-V overlap exactly their F&B chunks (the
     * DeepSeek-V3 report's figure 4: the forward's dispatch and combine run
     * under the paired backward's compute and the other way round), with or
     * without moe_a2a_overlap. */
    if (dualpipe) B->ep_overlap = it->fb;
    int final = (i == last_b[it->chunk]);
    sc__syn_fsdp_pass(B, &w, vs, it->pass);
    if (it->pass == SC_PASS_F) {
      if (vs > 0 && !local_turn(B, vs, 0))
        receive_activation(B, &w, cs.frecv, SC_L_RECV_ACT, it, p2p_bytes, posted);
      if (vs == 0) {
        sc__syn_fsdp_unit_begin(B, &w);
        sc__syn_embedding_forward(B, &w);
        sc__syn_fsdp_unit_end(B, &w, 0);
      }
      int first = !first_fwd_seen[it->chunk];
      first_fwd_seen[it->chunk] = 1;
      for (int64_t j = 0; j < nl; j++) {
        w.layer = (uint16_t)(l0 + j);
        if (first) sc__syn_add_wait(B, B->param_ag[w.layer]);
        if (B->offload_d2h) sc__syn_offload_forward_begin(B, w.layer);
        sc__syn_fsdp_unit_begin(B, &w);
        sc__syn_layer_forward(B, &w);
        sc__syn_fsdp_unit_end(B, &w, 0);
        if (B->offload_d2h) sc__syn_offload_forward_end(B, &w, w.layer);
      }
      w.layer = SC_NO_LAYER;
      if (vs == last_vs) {
        sc__syn_fsdp_unit_begin(B, &w);
        sc__syn_head_forward(B, &w);
        sc__syn_fsdp_unit_end(B, &w, 0);
      }
      else if (!local_turn(B, vs, 1))
        B->item_send[i] = p2p_op(B, cs.fsend, SC_L_SEND_ACT, it->mb, it->chunk, p2p_bytes,
                                 sc__syn_last_compute(B));
    } else if (it->pass == SC_PASS_B) {
      if (vs < last_vs && !local_turn(B, vs, 1))
        receive_activation(B, &w, cs.brecv, SC_L_RECV_GRAD, it, p2p_bytes, posted);
      if (vs == last_vs) {
        sc__syn_fsdp_unit_begin(B, &w);
        sc__syn_head_backward(B, &w);
        sc__syn_fsdp_unit_end(B, &w, !split);
        if (final && (!tied || !sc__shape_ends_together(sh))) sc__syn_bucket_add(B, &bk, emb_params);
        if (final) sc__syn_bucket_add(B, &bk, 2.0 * sh->h);
      }
      for (int64_t j = nl - 1; j >= 0; j--) {
        w.layer = (uint16_t)(l0 + j);
        if (B->offload_d2h) sc__syn_offload_backward_begin(B, &w, w.layer);
        sc__syn_fsdp_unit_begin(B, &w);
        sc__syn_layer_backward(B, &w);
        sc__syn_fsdp_unit_end(B, &w, !split);
        if (final) layer_grads(B, &bk, &ek, w.layer);
      }
      w.layer = SC_NO_LAYER;
      if (vs == 0) {
        sc__syn_fsdp_unit_begin(B, &w);
        sc__syn_embedding_backward(B, &w);
        sc__syn_fsdp_unit_end(B, &w, 1); /* its grads are complete after the B pass */
        if (final) sc__syn_bucket_add(B, &bk, emb_params);
      }
      if (final) close_bucket(B, &bk), close_bucket(B, &ek);
      if (vs > 0 && !local_turn(B, vs, 0))
        B->item_send[i] = p2p_op(B, cs.bsend, SC_L_SEND_GRAD, it->mb, it->chunk, p2p_bytes,
                                 sc__syn_last_compute(B));
    } else { /* the weight grads of a split backward */
      w.phase = SC_PH_WGRAD;
      if (vs == last_vs) {
        sc__syn_head_weight_grads(B, &w);
        sc__syn_fsdp_unit_end(B, &w, 1);
        if (final && (!tied || !sc__shape_ends_together(sh))) sc__syn_bucket_add(B, &bk, emb_params);
        if (final) sc__syn_bucket_add(B, &bk, 2.0 * sh->h);
      }
      for (int64_t j = nl - 1; j >= 0; j--) {
        w.layer = (uint16_t)(l0 + j);
        sc__syn_layer_weight_grads(B, &w);
        sc__syn_fsdp_unit_end(B, &w, 1);
        if (final) layer_grads(B, &bk, &ek, w.layer);
      }
      w.layer = SC_NO_LAYER;
      if (vs == 0 && final) sc__syn_bucket_add(B, &bk, emb_params);
      if (final) close_bucket(B, &bk), close_bucket(B, &ek);
    }
    B->item_end[i] = sc__syn_last_compute(B);
  }
  sc__free(B->ctx, first_fwd_seen, (size_t)v);
  if (B->rc) return B->rc;

  /* The optimizer waits for the gradients and for the last sends. */
  sc__syn_add_wait(B, B->ep_pending);
  B->ep_pending = NONE;
  sc__syn_add_wait(B, sc__syn_dp_grads_done(B, params, expert_params));
  for (size_t k = nsched > (size_t)B->lag ? nsched - (size_t)B->lag : 0; k < nsched; k++)
    sc__syn_add_wait(B, B->item_send[k]);
  sc__syn_dp_optimizer(B, params, expert_params);
  return B->rc;
}
