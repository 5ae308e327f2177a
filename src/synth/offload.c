/*
 * offload.c: host-memory offload in the synthesised workload
 * (training.activation_offload_layers, training.optimizer_offload): copies
 * between the GPU and host memory on the host-copy stream, priced at
 * cluster.host_link_gbps, and the CPU optimizer step of the offloaded
 * states, priced at cluster.host_mem_gbps. The memory side is memory.c's;
 * docs/MEMORY.md, "Offload to host memory".
 */
#include "model/memory_int.h"
#include "synth/build_int.h"

/* Host-memory bytes CPU Adam streams per parameter (ZeRO-Offload's CPU-Adam,
 * Megatron-LM's HybridDeviceOptimizer on the CPU: a memory-bound loop):
 * the fp32 master weight, its fp32 gradient and the two moments read (16),
 * the master and the moments written (12), and with 16-bit training the
 * updated 16-bit copy the GPU gets back (2). */
#define CPU_ADAM_BYTES 28.0

int sc__syn_offloaded(const builder *B, int64_t layer) {
  return layer >= 0 && layer < B->cfg->training.activation_offload_layers;
}

/* An op of ns on the host-copy stream after deps; its dep handle, or NONE. */
static uint32_t host_op(builder *B, const where *w, int kind, int label, int cat, double ns,
                        const uint32_t *deps, int ndeps) {
  if (SC_UNLIKELY(!(ns <= SC_WORK_MAX))) {
    if (!B->rc)
      B->rc = sc__error(B->ctx, SC_EUNSUPPORTED,
                        "a host-memory copy or CPU step would take %.3g ns, more than %.3g ns "
                        "(13 days): out of any physical range",
                        ns, SC_WORK_MAX);
    return NONE;
  }
  sc_op op = sc__syn_op(w, kind, label, (uint8_t)cat, ns);
  uint32_t idx = sc__syn_emit(B, SC_ST_HOST, &op, deps, ndeps);
  return idx == NONE ? NONE : SC_DEP(SC_ST_HOST, idx);
}

/* A copy of bytes over the host link (GB/s = bytes per ns). */
static uint32_t copy_op(builder *B, const where *w, int label, int cat, double bytes,
                        const uint32_t *deps, int ndeps) {
  return host_op(B, w, SC_OP_MEMCPY, label, cat, bytes / B->cfg->cluster.host_link_gbps, deps,
                 ndeps);
}

/* The stored activations of one layer and micro-batch: what is copied. The
 * config has no recomputation (check_offload), so all of them. */
static double layer_bytes(const builder *B, int64_t layer) {
  int flash = B->cfg->training.attention != SC_ATTN_UNFUSED;
  return sc__shape_is_moe_layer(B->sh, layer)
             ? sc__memory_moe_layer_act(B->sh, SC_RECOMPUTE_NONE, flash)
             : sc__memory_layer_act(B->sh, SC_RECOMPUTE_NONE, flash);
}

/* Megatron-Core's CPU offload (Transformer Engine's double-buffered offload
 * handler) copies a layer's saved tensors out after its forward and lets
 * the forward two layers on wait for that copy before going on, so at most
 * the layer computing and the one being copied are on the device: the
 * forward of `layer` waits for the copy of layer - 2. */
void sc__syn_offload_forward_begin(builder *B, int64_t layer) {
  if (sc__syn_offloaded(B, layer - 2)) sc__syn_add_wait(B, B->offload_d2h[layer - 2]);
}

void sc__syn_offload_forward_end(builder *B, const where *w, int64_t layer) {
  if (!sc__syn_offloaded(B, layer)) return;
  uint32_t after = sc__syn_last_compute(B);
  B->offload_d2h[layer] = copy_op(B, w, SC_L_D2H, SC_CAT_COMPUTE, layer_bytes(B, layer), &after, 1);
}

/* The backward of `layer` waits for its activations back (reloaded while the
 * layer after it ran its backward), and starts the reload of the layer
 * before it. */
void sc__syn_offload_backward_begin(builder *B, const where *w, int64_t layer) {
  if (sc__syn_offloaded(B, layer)) sc__syn_add_wait(B, B->offload_h2d[layer]);
  if (!sc__syn_offloaded(B, layer - 1)) return;
  uint32_t after = sc__syn_last_compute(B);
  where wr = *w;
  wr.layer = (uint16_t)(layer - 1);
  B->offload_h2d[layer - 1] =
      copy_op(B, &wr, SC_L_H2D, SC_CAT_COMPUTE, layer_bytes(B, layer - 1), &after, 1);
}

int sc__syn_offload_grads_ready(builder *B, uint32_t *out) {
  int n = 0;
  for (int i = 0; i < B->nwait; i++) /* ops of real streams, not inlined collectives */
    if (SC_DEP_STREAM(B->wait[i]) < SC_ST_COUNT) out[n++] = B->wait[i];
  uint32_t last = sc__syn_last_compute(B);
  if (last != NONE) out[n++] = last;
  return n;
}

uint32_t sc__syn_offload_optimizer_before(builder *B, const where *w, double elems,
                                          const uint32_t *grads_ready, int nready) {
  const sc_training_cfg *t = &B->cfg->training;
  if (!(t->optimizer_offload > 0) || t->optimizer_offload_cpu_step) return NONE;
  /* A GPU step of the offloaded states: they come over first (fp32 master
   * weights and moments, or the moments alone in fp32 training), once the
   * gradients are ready. */
  double state_bytes = B->cfg->training.precision == SC_PREC_FP32 ? 8.0 : 12.0;
  uint32_t h2d =
      copy_op(B, w, SC_L_H2D, SC_CAT_OPTIMIZER, elems * state_bytes, grads_ready, nready);
  sc__syn_add_wait(B, h2d);
  return h2d;
}

uint32_t sc__syn_offload_optimizer_after(builder *B, const where *w, double elems,
                                         const uint32_t *grads_ready, int nready,
                                         uint32_t gpu_step) {
  const sc_training_cfg *t = &B->cfg->training;
  if (!(t->optimizer_offload > 0)) return gpu_step;
  int fp32 = t->precision == SC_PREC_FP32;
  if (!t->optimizer_offload_cpu_step) { /* the updated states go back */
    double state_bytes = fp32 ? 8.0 : 12.0;
    copy_op(B, w, SC_L_D2H, SC_CAT_OPTIMIZER, elems * state_bytes, &gpu_step, 1);
    return gpu_step;
  }
  /* CPU step: the fp32 gradients of the offloaded part to the host once
   * they are ready, CPU Adam over them, the updated parameters back; the
   * GPU steps its own part meanwhile, and what follows the step (the
   * distributed optimizer's gathers) waits for both: the copy back starts
   * after the GPU's part too. */
  double wbytes = fp32 ? 4.0 : 2.0;
  double cpu_bytes = CPU_ADAM_BYTES + (fp32 ? 0.0 : wbytes);
  copy_op(B, w, SC_L_D2H, SC_CAT_OPTIMIZER, elems * B->sh->grad_bytes, grads_ready, nready);
  host_op(B, w, SC_OP_HOST, SC_L_CPU_OPTIM, SC_CAT_OPTIMIZER,
          elems * cpu_bytes / B->cfg->cluster.host_mem_gbps, NULL, 0);
  return copy_op(B, w, SC_L_H2D, SC_CAT_OPTIMIZER, elems * wbytes, &gpu_step, 1);
}
