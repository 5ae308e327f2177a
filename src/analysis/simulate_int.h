/*
 * simulate_int.h: the pipeline driver behind sc_simulate. A *plan* is a
 * resolved config with what is derived from it once: the model shape and its
 * memory estimate (enough for a sweep to prune a candidate before anything is
 * built); simulating a plan prices it (cost models), synthesises its workload,
 * runs the engine and assembles the sc_result (throughput, FLOPs, MFU,
 * memory) that the engine itself knows nothing of.
 */
#ifndef SC_SIMULATE_INT_H
#define SC_SIMULATE_INT_H

#include "model/memory_int.h"
#include "model/shape_int.h"
#include "engine/engine_int.h"

typedef struct sc_plan {
  const sc_config *cfg;    /* resolved (borrowed; must outlive the plan) */
  sc_shape shape;
  double memory_peak_bytes; /* fullest stage (memory.c) */
  int64_t memory_peak_stage;
  double memory_capacity_bytes;
  double memory_usable_bytes; /* capacity less cluster.mem_headroom: the OOM line */
} sc_plan;

/* Bytes cluster.mem_headroom keeps free on a GPU of capacity_bytes: the
 * value in GiB when >= 1, else that fraction of the capacity. */
double sc__memory_headroom_bytes(const sc_config *cfg, double capacity_bytes);

/* SC_EINVAL ("FILE:LINE: cluster.mem_headroom: ...") when the headroom
 * leaves nothing of capacity_bytes, else 0. */
int sc__memory_headroom_check(sc_ctx *ctx, const sc_config *cfg, double capacity_bytes);

/* X(key, label, expression over a const sc_memory_stage *st, bytes): the
 * terms of a stage's memory as the reports show them (JSON key, short text
 * label), in output order; they add up to st->total_bytes. */
#define SC_MEMORY_TERMS(X)                                                   \
  X("weights_gib", "weights", st->weights_bytes)                             \
  X("gradients_gib", "grads", st->grads_bytes)                               \
  X("optimizer_states_gib", "optim", st->optimizer_bytes)                    \
  X("activations_gib", "activ", st->activations_bytes)                       \
  X("workspace_gib", "workspc", st->transient_bytes)                         \
  X("comm_buffers_gib", "comm", st->comm_buffer_bytes)                       \
  X("framework_gib", "frame", st->framework_bytes - st->fragmentation_bytes) \
  X("fragmentation_gib", "frag", st->fragmentation_bytes)

/* X(key, label, expression, feature): terms only some configs have, shown
 * after the total where the config uses the feature (sc__memory_features):
 * the last stage's kept pipeline outputs (part of the activations) and what
 * offload keeps in host memory (not in the total). */
enum { SC_MEM_FEAT_PP_OUTPUTS = 1u, SC_MEM_FEAT_HOST = 2u };
#define SC_MEMORY_OPT_TERMS(X)                                                             \
  X("pp_outputs_gib", "pp-outs", st->pp_outputs_bytes, SC_MEM_FEAT_PP_OUTPUTS)             \
  X("host_optimizer_gib", "host-opt", st->host_optimizer_bytes, SC_MEM_FEAT_HOST)          \
  X("host_activations_gib", "host-act", st->host_activation_bytes, SC_MEM_FEAT_HOST)

/* The SC_MEM_FEAT_* a resolved config uses. */
static inline unsigned sc__memory_features(const sc_config *cfg) {
  unsigned f = 0;
  if (cfg->parallel.pp_keep_outputs && cfg->parallel.pp > 1) f |= SC_MEM_FEAT_PP_OUTPUTS;
  if (cfg->training.optimizer_offload > 0 || cfg->training.activation_offload_layers > 0)
    f |= SC_MEM_FEAT_HOST;
  return f;
}

/* Calls fn for each pipeline stage's memory estimate of a resolved config
 * (memory.c), in stage order; stops at fn's first non-zero return and
 * returns it. ctx may be a scratch context: nothing is allocated. */
int sc__memory_each_stage(sc_ctx *ctx, const sc_config *cfg,
                          int (*fn)(void *ud, const sc_memory_stage *st), void *ud);

/* Fills the result's time-to-train and cost from training.tokens and
 * cluster.price_per_gpu_hour (zero where not given); needs tokens_per_s and
 * num_gpus. */
void sc__result_training_cost(const sc_config *cfg, sc_result *res);

/* Derives the plan of a resolved config: shape and memory estimate. Returns
 * 0 or SC_EINVAL (a config sc_config_resolve did not accept). */
int sc__plan_init(sc_ctx *ctx, const sc_config *cfg, sc_plan *plan);

/* Bytes simulating the plan would take at most (workload and engine state),
 * estimated without building anything; sc__plan_simulate refuses plans
 * above its limit. */
double sc__plan_estimate_bytes(const sc_plan *plan);
/* Ops of the unmerged programs (one per stage), the estimate's upper bound
 * of 24 per layer pass and 16 around it. */
double sc__plan_estimate_ops(const sc_plan *plan);

/* Simulates one step of a plan (see sc_simulate for trace and out). */
int sc__plan_simulate(sc_ctx *ctx, const sc_plan *plan, sc_write_fn trace, void *trace_ud,
                      sc_result *out);
/* A lower bound on the step time sc__plan_simulate gives this plan, in ns,
 * cheaper than the simulation: no memory track, no events. quick = 0: the
 * replay of the workload it would build (sc__engine_lower_bound); quick =
 * 1: one stage's compute (sc__engine_compute_bound on that stage alone,
 * sc__workload_build_stage), looser but about pp times cheaper and never
 * above the first. 0 (no bound) for variations and unfolded runs. Needs only
 * the plan's cfg and shape. Returns 0 or the build's SC_E code (the
 * simulation would fail the same way). */
int sc__plan_bound(sc_ctx *ctx, const sc_plan *plan, int quick, int64_t *bound_ns);

/* What a simulation hands out besides its result (engine_int.h): every op
 * as it ends, the memory counter track as it changes (either makes the
 * workload unmerged, as a trace does; the result is the same), and the
 * critical path in the result (sc_simulate asks for it; the sweep does not). */
typedef struct sc_sim_hooks {
  sc_op_sink_fn op_sink;
  void *op_sink_ud;
  sc_mem_sink_fn mem_sink;
  void *mem_sink_ud;
  int critical_path;
  const sc_trace_opts *trace_opts; /* format and ranks of the trace; NULL: JSON, every rank */
} sc_sim_hooks;

/* sc__plan_simulate with hooks (NULL: none). */
int sc__plan_simulate_ex(sc_ctx *ctx, const sc_plan *plan, sc_write_fn trace, void *trace_ud,
                         const sc_sim_hooks *hooks, sc_result *out);

#endif /* SC_SIMULATE_INT_H */
