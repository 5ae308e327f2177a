/*
 * memory.h: the per-rank memory model of libstepcast. For each pipeline stage
 * of a resolved config it estimates what one GPU holds at its peak: weights,
 * gradients, optimizer states, stored activations (by recompute mode, sequence
 * parallelism and the schedule's in-flight micro-batches), transient working
 * buffers, communication buffers and a framework overhead; and whether that
 * fits the GPU. Byte counts and their sources: docs/MEMORY.md.
 *
 * Ownership: sc_memory_report is filled by sc_memory_estimate; its `stages`
 * array is allocated through the context's allocator hook and released with
 * sc_memory_report_free. Units: bytes unless a name says GiB (2^30 bytes).
 */
#ifndef STEPCAST_MEMORY_H
#define STEPCAST_MEMORY_H

#include "stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one rank of a pipeline stage holds at that stage's memory peak. The
 * parts add up: total = weights + grads + optimizer + activations + transient
 * + comm_buffer + framework. */
typedef struct sc_memory_stage {
  int64_t stage;             /* pipeline stage, 0 = first */
  double params;             /* parameters held by one rank (its TP shard), elements */
  double weights_bytes;      /* model weights in the working dtype */
  double grads_bytes;        /* gradient buffers (fp32 main grads with bf16) */
  double optimizer_bytes;    /* fp32 master copy and Adam moments (sharded over DP
                                with the distributed optimizer) */
  double act_layer_bytes;    /* stored activations of one layer, one micro-batch */
  double inflight;           /* micro-batch passes whose activations are held at the
                                peak (per model chunk for interleaved schedules) */
  double activations_bytes;  /* stored activations at the peak: transformer
                                layers, embedding and LM head */
  double embed_head_bytes;   /* part of activations_bytes from the embedding and
                                LM head (fp32 logits on the last stage) */
  double pp_outputs_bytes;   /* part of activations_bytes: the micro-batches'
                                last-stage outputs kept to the step's end
                                (parallel.pp_keep_outputs; 0 without) */
  double transient_bytes;    /* short-lived buffers on top of the stored peak:
                                recompute working set, sequence-parallel gather,
                                16-bit logits */
  double comm_buffer_bytes;  /* NCCL communicator buffers */
  double framework_bytes;    /* CUDA context, library workspaces, allocator
                                fragmentation */
  double fragmentation_bytes; /* part of framework_bytes: the caching allocator's
                                fragmentation allowance (5 % of activations and
                                transients; docs/MEMORY.md) */
  double total_bytes;
  int oom;                   /* 1: total exceeds the GPU's capacity */
  /* Host memory (training.optimizer_offload, activation_offload_layers), not
   * in total_bytes: the offloaded optimizer states and fp32 master weights,
   * and the offloaded layers' activations of the micro-batches held at the
   * device peak. 0 without offload. */
  double host_optimizer_bytes;
  double host_activation_bytes;
} sc_memory_stage;

typedef struct sc_memory_report {
  int64_t nstages;           /* = parallel.pp */
  sc_memory_stage *stages;   /* nstages entries, owned (sc_memory_report_free) */
  int64_t peak_stage;        /* stage with the largest total (first on ties) */
  double peak_bytes;         /* its total */
  double peak_gib;
  double capacity_gib;       /* HBM of cluster.gpu (sc_hw.hbm_gib) */
  int oom;                   /* 1: some stage does not fit */
} sc_memory_report;

/* Estimates memory per stage for a resolved config (sc_config_resolve).
 * Returns 0, SC_EINVAL (unresolved or unknown GPU) or SC_ENOMEM; on error
 * out->stages is NULL. */
int sc_memory_estimate(sc_ctx *ctx, const sc_config *cfg, sc_memory_report *out);

/* Releases out->stages; safe on a zeroed or already freed report. */
void sc_memory_report_free(sc_ctx *ctx, sc_memory_report *out);

/* Writes the report as a text table (one row per stage, GiB) or one JSON
 * object (bytes). SC_FORMAT_CSV writes a header and one row per stage.
 * Returns the sink's status. */
int sc_memory_format(const sc_config *cfg, const sc_memory_report *r, sc_format fmt,
                     sc_write_fn out, void *ud);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_MEMORY_H */
