/*
 * report.c: turns a simulation result into what a user reads: the human
 * summary, one JSON object, or CSV. Last stage of the pipeline; the Chrome
 * trace is streamed by the engine itself while it runs.
 */
#include "base/sc_int.h"

#include <stdio.h>

/* The schedule a config runs: interleaved whenever vpp > 1. */
static const char *schedule_name(const sc_config *cfg) {
  return sc_enum_label(SC_ENUM_SCHEDULE,
                       cfg->parallel.vpp > 1 ? SC_SCHED_INTERLEAVED : cfg->parallel.schedule);
}

static int format_text(const sc_config *cfg, const sc_result *r, sc_write_fn w, void *ud) {
  const sc_model_cfg *m = &cfg->model;
  const sc_parallel_cfg *p = &cfg->parallel;
  int rc = 0;
  SC_WRITE(rc, sc__writef(w, ud, "stepcast %s: %s on %lld x %s\n", SC_VERSION,
                   m->name[0] ? m->name : "model", (long long)r->num_gpus, cfg->cluster.gpu));
  SC_WRITE(rc, sc__writef(w, ud,
                   "  model      L=%lld h=%lld heads=%lld seq=%lld vocab=%lld, batch %lld x "
                   "micro %lld, recompute %s\n",
                   (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                   (long long)m->seq_len, (long long)m->vocab,
                   (long long)cfg->training.global_batch, (long long)cfg->training.micro_batch,
                   sc_enum_name(SC_ENUM_RECOMPUTE, cfg->training.recompute)));
  SC_WRITE(rc, sc__writef(w, ud, "  parallel   TP=%lld PP=%lld DP=%lld vpp=%lld %s%s%s\n",
                   (long long)p->tp, (long long)p->pp, (long long)p->dp,
                   (long long)(p->vpp > 0 ? p->vpp : 1), schedule_name(cfg),
                   p->sequence_parallel && p->tp > 1 ? " +SP" : "",
                   p->distributed_optimizer ? " +dist-opt" : ""));
  SC_WRITE(rc, sc__writef(w, ud, "\n  step time        %10.3f s\n", r->step_time_s));
  SC_WRITE(rc, sc__writef(w, ud, "  tokens/s         %10.0f\n", r->tokens_per_s));
  SC_WRITE(rc, sc__writef(w, ud, "  TFLOP/s per GPU  %10.1f model   %6.1f hardware (with recompute)\n",
                   r->tflops_per_gpu, r->hw_tflops_per_gpu));
  SC_WRITE(rc, sc__writef(w, ud, "  MFU              %9.1f %%   (HFU %.1f %%)\n", 100.0 * r->mfu,
                   100.0 * r->hfu));
  SC_WRITE(rc, sc__writef(w, ud, "  memory per GPU   %10.1f GiB of %.0f GiB (estimate)%s\n",
                   r->memory_gib, r->memory_capacity_gib,
                   r->memory_gib > r->memory_capacity_gib ? "  OUT OF MEMORY" : ""));
  SC_WRITE(rc, sc__writef(w, ud, "\n  where the step goes (mean over ranks)\n"));
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    double s = r->breakdown_s[c];
    /* context and expert parallel exist only in some jobs: shown when used */
    if ((c == SC_CAT_CP || c == SC_CAT_EP) && s == 0) continue;
    SC_WRITE(rc, sc__writef(w, ud, "    %-18s %9.3f s  %5.1f %%\n", sc_category_label(c), s,
                     r->step_time_s > 0 ? 100.0 * s / r->step_time_s : 0.0));
  }
  SC_WRITE(rc, sc__writef(w, ud, "\n  simulated %lld of %lld ranks%s, %lld ops, %lld events\n",
                   (long long)r->simulated_ranks, (long long)r->num_gpus,
                   cfg->simulation.fold ? " (folded)" : "", (long long)r->ops,
                   (long long)r->events));
  return rc;
}

static int format_json(const sc_config *cfg, const sc_result *r, sc_write_fn w, void *ud) {
  int rc = 0;
  SC_WRITE(rc, sc__writef(w, ud,
                   "{\"step_time_s\":%.9g,\"tokens_per_s\":%.9g,\"tflops_per_gpu\":%.9g,"
                   "\"hw_tflops_per_gpu\":%.9g,\"mfu\":%.6g,\"hfu\":%.6g,",
                   r->step_time_s, r->tokens_per_s, r->tflops_per_gpu, r->hw_tflops_per_gpu,
                   r->mfu, r->hfu));
  SC_WRITE(rc, sc__writef(w, ud, "\"model_flops_per_step\":%.9g,\"hardware_flops_per_step\":%.9g,",
                   r->model_flops, r->hardware_flops));
  SC_WRITE(rc, sc__writef(w, ud, "\"breakdown\":{"));
  for (int c = 0; c < SC_CAT_COUNT; c++)
    SC_WRITE(rc, sc__writef(w, ud, "%s\"%s\":%.9g", c ? "," : "", sc_category_key(c), r->breakdown_s[c]));
  SC_WRITE(rc, sc__writef(w, ud, "},\"memory_gib\":%.6g,\"memory_capacity_gib\":%.6g,\"oom\":%s,",
                   r->memory_gib, r->memory_capacity_gib,
                   r->memory_gib > r->memory_capacity_gib ? "true" : "false"));
  SC_WRITE(rc, sc__writef(w, ud,
                   "\"num_gpus\":%lld,\"tp\":%lld,\"pp\":%lld,\"dp\":%lld,\"vpp\":%lld,"
                   "\"simulated_ranks\":%lld,\"ops\":%lld,\"events\":%lld}\n",
                   (long long)r->num_gpus, (long long)cfg->parallel.tp,
                   (long long)cfg->parallel.pp, (long long)cfg->parallel.dp,
                   (long long)(cfg->parallel.vpp > 0 ? cfg->parallel.vpp : 1),
                   (long long)r->simulated_ranks, (long long)r->ops, (long long)r->events));
  return rc;
}

static int format_csv(const sc_config *cfg, const sc_result *r, sc_write_fn w, void *ud) {
  int rc = 0;
  SC_WRITE(rc, sc__writef(w, ud, "step_time_s,tokens_per_s,tflops_per_gpu,hw_tflops_per_gpu,mfu,hfu"));
  for (int c = 0; c < SC_CAT_COUNT; c++) SC_WRITE(rc, sc__writef(w, ud, ",%s_s", sc_category_key(c)));
  SC_WRITE(rc, sc__writef(w, ud, ",memory_gib,num_gpus,tp,pp,dp,vpp\n"));
  SC_WRITE(rc, sc__writef(w, ud, "%.9g,%.9g,%.9g,%.9g,%.6g,%.6g", r->step_time_s, r->tokens_per_s,
                   r->tflops_per_gpu, r->hw_tflops_per_gpu, r->mfu, r->hfu));
  for (int c = 0; c < SC_CAT_COUNT; c++) SC_WRITE(rc, sc__writef(w, ud, ",%.9g", r->breakdown_s[c]));
  SC_WRITE(rc, sc__writef(w, ud, ",%.6g,%lld,%lld,%lld,%lld,%lld\n", r->memory_gib,
                   (long long)r->num_gpus, (long long)cfg->parallel.tp,
                   (long long)cfg->parallel.pp, (long long)cfg->parallel.dp,
                   (long long)(cfg->parallel.vpp > 0 ? cfg->parallel.vpp : 1)));
  return rc;
}

int sc_result_format(const sc_config *cfg, const sc_result *res, sc_format fmt, sc_write_fn out,
                     void *ud) {
  switch (fmt) {
  case SC_FORMAT_JSON:
    return format_json(cfg, res, out, ud);
  case SC_FORMAT_CSV:
    return format_csv(cfg, res, out, ud);
  default:
    return format_text(cfg, res, out, ud);
  }
}
