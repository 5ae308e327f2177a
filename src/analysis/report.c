/*
 * report.c: turns a simulation result into what a user reads: the human
 * summary, one JSON object, or CSV, with the memory estimate per stage
 * (memory.c) and the time-to-train and cost of the whole run. Last stage of
 * the pipeline; the Chrome trace is streamed by the engine itself while it
 * runs, the HTML report is html.c. A result's JSON can be read back and two
 * results compared category by category (`stepcast diff`).
 */
#include "analysis/simulate_int.h"
#include "base/json_int.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#define GIB 1073741824.0

/* Stages the text summary lists: every one up to this many, else the first,
 * the peak and the last (the JSON always has every stage). */
#define TEXT_STAGES_MAX 8

typedef struct stage_sink {
  sc_write_fn w;
  void *ud;
  int64_t pp, peak; /* stages, the peak stage */
  int64_t n;        /* stages seen */
  unsigned feat;    /* SC_MEM_FEAT_* of the config: optional terms shown */
} stage_sink;

static int stage_text(void *ud, const sc_memory_stage *st) {
  stage_sink *o = ud;
  int64_t s = o->n++;
  if (o->pp > TEXT_STAGES_MAX && s != 0 && s != o->peak && s != o->pp - 1) return 0;
  int rc = sc__writef(o->w, o->ud, "    %5lld", (long long)st->stage);
#define SC_X_TEXT(key, label, expr) SC_WRITE(rc, sc__writef(o->w, o->ud, " %7.2f", (expr) / GIB));
  SC_MEMORY_TERMS(SC_X_TEXT)
#undef SC_X_TEXT
  SC_WRITE(rc, sc__writef(o->w, o->ud, " %7.2f", st->total_bytes / GIB));
#define SC_X_OPT(key, label, expr, flag) \
  if (o->feat & (flag)) SC_WRITE(rc, sc__writef(o->w, o->ud, " %8.2f", (expr) / GIB));
  SC_MEMORY_OPT_TERMS(SC_X_OPT)
#undef SC_X_OPT
  SC_WRITE(rc, sc__writef(o->w, o->ud, "%s\n", s == o->peak ? "  peak" : ""));
  return rc;
}

static int stage_json(void *ud, const sc_memory_stage *st) {
  stage_sink *o = ud;
  int rc = sc__writef(o->w, o->ud, "%s{\"stage\":%lld", o->n++ ? "," : "", (long long)st->stage);
#define SC_X_JSON(key, label, expr) SC_WRITE(rc, sc__writef(o->w, o->ud, ",\"" key "\":%.6g", (expr) / GIB));
  SC_MEMORY_TERMS(SC_X_JSON)
#undef SC_X_JSON
#define SC_X_OPT(key, label, expr, flag) \
  if (o->feat & (flag)) SC_WRITE(rc, sc__writef(o->w, o->ud, ",\"" key "\":%.6g", (expr) / GIB));
  SC_MEMORY_OPT_TERMS(SC_X_OPT)
#undef SC_X_OPT
  SC_WRITE(rc, sc__writef(o->w, o->ud, ",\"peak_gib\":%.6g}", st->total_bytes / GIB));
  return rc;
}

/* The per-stage terms of a resolved config through fn, on a context of
 * its own, since formatting has none (ZB-V's estimate allocates its
 * schedule). */
static int each_stage(const sc_config *cfg, int (*fn)(void *, const sc_memory_stage *),
                      stage_sink *o) {
  sc_ctx *scratch;
  if (sc_ctx_new(NULL, NULL, &scratch)) return SC_ENOMEM;
  int rc = sc__memory_each_stage(scratch, cfg, fn, o);
  sc_ctx_free(scratch);
  return rc == SC_EINVAL && o->n == 0 ? SC_OK : rc; /* no shape: nothing to list */
}

/* The critical path section of the text summary (when recorded). */
static int critical_text(const sc_result *r, sc_write_fn w, void *ud) {
  int rc = 0;
  if (r->critical_path_ops <= 0) return 0;
  SC_WRITE(rc, sc__writef(w, ud, "\n  critical path (%lld ops, each started by the end of the one "
                          "before)\n", (long long)r->critical_path_ops));
  for (int c = 0; c < SC_CAT_COUNT; c++)
    if (r->critical_path_s[c] > 0)
      SC_WRITE(rc, sc__writef(w, ud, "    %-18s %9.3f s  %5.1f %%\n", sc_category_key(c),
                              r->critical_path_s[c],
                              r->step_time_s > 0 ? 100.0 * r->critical_path_s[c] / r->step_time_s
                                                 : 0.0));
  SC_WRITE(rc, sc__writef(w, ud, "    most of it on"));
  for (int i = 0; i < SC_CPATH_TOP && r->critical_path_top[i].stream; i++)
    SC_WRITE(rc, sc__writef(w, ud, "%s stage %lld %s %.3f s", i ? "," : "",
                            (long long)r->critical_path_top[i].stage,
                            r->critical_path_top[i].stream, r->critical_path_top[i].seconds));
  SC_WRITE(rc, sc__writef(w, ud, "\n"));
  /* Which ranks set the step: telling only where a rank is not just its
   * stage's class (a variation, or an unfolded run). */
  if (r->varied_ranks > 0 || r->simulated_ranks == r->num_gpus) {
    SC_WRITE(rc, sc__writef(w, ud, "    ranks setting it"));
    for (int i = 0; i < SC_CPATH_TOP && r->critical_path_ranks[i].ranks; i++) {
      SC_WRITE(rc, sc__writef(w, ud, "%s rank %lld %.3f s", i ? "," : "",
                              (long long)r->critical_path_ranks[i].rank,
                              r->critical_path_ranks[i].seconds));
      if (r->critical_path_ranks[i].ranks > 1)
        SC_WRITE(rc, sc__writef(w, ud, " (standing for %lld ranks)",
                                (long long)r->critical_path_ranks[i].ranks));
    }
    SC_WRITE(rc, sc__writef(w, ud, "\n"));
  }
  return rc;
}

/* The what-if variation and goodput sections of the text summary. */
static int variation_text(const sc_result *r, sc_write_fn w, void *ud) {
  int rc = 0;
  if (r->varied_ranks > 0) {
    SC_WRITE(rc, sc__writef(w, ud, "\n  what-if variation (docs/WHATIF.md)\n"));
    SC_WRITE(rc, sc__writef(w, ud, "    varied ranks       %lld of %lld, slowest GPU speed %.3g\n",
                            (long long)r->varied_ranks, (long long)r->num_gpus,
                            r->slowest_gpu_speed));
    if (r->step_time_nominal_s > 0)
      SC_WRITE(rc, sc__writef(w, ud, "    nominal step       %.3f s (varied %.3f s, %+.1f %%)\n",
                              r->step_time_nominal_s, r->step_time_s,
                              100.0 * (r->step_time_s / r->step_time_nominal_s - 1.0)));
    if (r->gpu_mix_ranks > 0)
      SC_WRITE(rc, sc__writef(w, ud, "    gpu mix            %lld ranks on %s, %s\n",
                              (long long)r->gpu_mix_ranks, r->gpu_mix,
                              r->gpu_mix_oom ? "a stage on it does not fit its memory (OOM)"
                                             : "its stages fit its memory"));
  }
  if (r->run_steps > 0)
    SC_WRITE(rc, sc__writef(w, ud,
                            "\n  goodput              %.1f %% over %lld steps (%.3g failures), run "
                            "%.3g days\n",
                            100.0 * r->goodput, (long long)r->run_steps, r->failures,
                            r->run_days));
  return rc;
}

/* The time-to-train lines, when training.tokens is given. */
static int training_text(const sc_config *cfg, const sc_result *r, sc_write_fn w, void *ud) {
  int rc = 0;
  if (r->time_to_train_days <= 0) return 0;
  SC_WRITE(rc, sc__writef(w, ud, "  time to train    %10.2f days for %.4g tokens, %.0f GPU-hours\n",
                          r->time_to_train_days, cfg->training.tokens, r->gpu_hours));
  if (cfg->cluster.price_per_gpu_hour > 0)
    SC_WRITE(rc, sc__writef(w, ud, "  cost             %10.0f at %g per GPU-hour\n", r->cost,
                            cfg->cluster.price_per_gpu_hour));
  return rc;
}

/* The header lines listing the values nothing in the config gave: the
 * documented defaults, then what resolution derived ("  defaults   a 1,
 * b true" wrapped under itself at TEXT_WIDTH columns). */
#define TEXT_WIDTH 100
static int unstated_text(const sc_config *cfg, int state, const char *label, sc_write_fn w,
                         void *ud) {
  int rc = 0, col = 0, n = 0;
  for (int i = 0; i < sc_config_field_count(); i++) {
    if (sc_config_field_state(cfg, i) != state) continue;
    char v[96];
    if (sc_config_field_value(cfg, i, v, sizeof v)) continue;
    const char *key = strchr(sc_config_field_name(i), '.') + 1;
    /* etp 0 keeps following tp (sweep): say so */
    if (!strcmp(key, "etp") && !strcmp(v, "0")) snprintf(v, sizeof v, "= tp");
    int len = (int)(strlen(key) + 1 + strlen(v));
    if (!n) {
      SC_WRITE(rc, sc__writef(w, ud, "  %-10s %s %s", label, key, v));
      col = 13 + len;
    } else if (col + 2 + len > TEXT_WIDTH) {
      SC_WRITE(rc, sc__writef(w, ud, ",\n             %s %s", key, v));
      col = 13 + len;
    } else {
      SC_WRITE(rc, sc__writef(w, ud, ", %s %s", key, v));
      col += 2 + len;
    }
    n++;
  }
  if (n) SC_WRITE(rc, sc__writef(w, ud, "\n"));
  return rc;
}

/* The same as JSON members: "defaulted":{"training.precision":"bf16",...}. */
static int unstated_json(const sc_config *cfg, int state, const char *name, sc_write_fn w,
                         void *ud) {
  int rc = 0, n = 0;
  SC_WRITE(rc, sc__writef(w, ud, "\"%s\":{", name));
  for (int i = 0; i < sc_config_field_count(); i++) {
    if (sc_config_field_state(cfg, i) != state) continue;
    char v[96];
    if (sc_config_field_value(cfg, i, v, sizeof v)) continue;
    /* numbers and booleans as they are; enum names quoted */
    char *end;
    (void)strtod(v, &end);
    int bare = (v[0] && !*end) || !strcmp(v, "true") || !strcmp(v, "false") || v[0] == '"';
    SC_WRITE(rc, sc__writef(w, ud, "%s\"%s\":%s%s%s", n++ ? "," : "", sc_config_field_name(i),
                            bare ? "" : "\"", v, bare ? "" : "\""));
  }
  SC_WRITE(rc, sc__writef(w, ud, "},"));
  return rc;
}

/* The schedule a config runs: interleaved whenever vpp > 1, but for the
 * two-chunk V schedules (zbv, dualpipev). */
static const char *schedule_name(const sc_config *cfg) {
  sc_schedule k = cfg->parallel.schedule;
  int v = k == SC_SCHED_ZBV || k == SC_SCHED_DUALPIPEV;
  return sc_enum_label(SC_ENUM_SCHEDULE, cfg->parallel.vpp > 1 && !v ? SC_SCHED_INTERLEAVED : k);
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
  SC_WRITE(rc, unstated_text(cfg, SC_FIELD_DEFAULTED, "defaults", w, ud));
  SC_WRITE(rc, unstated_text(cfg, SC_FIELD_DERIVED, "derived", w, ud));
  SC_WRITE(rc, sc__writef(w, ud, "\n  step time        %10.3f s", r->step_time_s));
  if (r->step_time_hi_s > 0)
    SC_WRITE(rc, sc__writef(w, ud, "   90 %% interval %.3f .. %.3f s", r->step_time_lo_s,
                            r->step_time_hi_s));
  SC_WRITE(rc, sc__writef(w, ud, "\n"));
  SC_WRITE(rc, sc__writef(w, ud, "  tokens/s         %10.0f\n", r->tokens_per_s));
  SC_WRITE(rc, sc__writef(w, ud, "  TFLOP/s per GPU  %10.1f model   %6.1f hardware (with recompute)\n",
                   r->tflops_per_gpu, r->hw_tflops_per_gpu));
  SC_WRITE(rc, sc__writef(w, ud, "  MFU              %9.1f %%   (HFU %.1f %%)\n", 100.0 * r->mfu,
                   100.0 * r->hfu));
  SC_WRITE(rc, training_text(cfg, r, w, ud));
  SC_WRITE(rc, sc__writef(w, ud, "  memory per GPU   %10.1f GiB of %.0f GiB (estimate)%s\n",
                   r->memory_gib, r->memory_capacity_gib, r->oom ? "  OUT OF MEMORY" : ""));
  if (r->memory_usable_gib < r->memory_capacity_gib)
    SC_WRITE(rc, sc__writef(w, ud, "                   %10.1f GiB usable (cluster.mem_headroom %g)\n",
                            r->memory_usable_gib, cfg->cluster.mem_headroom));
  stage_sink so = {w, ud, cfg->parallel.pp, r->memory_peak_stage, 0, sc__memory_features(cfg)};
  SC_WRITE(rc, sc__writef(w, ud, "\n  memory per stage (GiB, one GPU%s)\n    stage",
                          so.pp > TEXT_STAGES_MAX ? "; first, peak and last stage" : ""));
#define SC_X_HEAD(key, label, expr) SC_WRITE(rc, sc__writef(w, ud, " %7s", label));
  SC_MEMORY_TERMS(SC_X_HEAD)
#undef SC_X_HEAD
  SC_WRITE(rc, sc__writef(w, ud, " %7s", "total"));
#define SC_X_OPT(key, label, expr, flag) \
  if (so.feat & (flag)) SC_WRITE(rc, sc__writef(w, ud, " %8s", label));
  SC_MEMORY_OPT_TERMS(SC_X_OPT)
#undef SC_X_OPT
  SC_WRITE(rc, sc__writef(w, ud, "\n"));
  SC_WRITE(rc, each_stage(cfg, stage_text, &so));
  if (so.feat & SC_MEM_FEAT_PP_OUTPUTS)
    SC_WRITE(rc, sc__writef(w, ud, "    pp-outs: of activ, the last stage's outputs kept to the "
                                   "step's end (parallel.pp_keep_outputs)\n"));
  if (so.feat & SC_MEM_FEAT_HOST)
    SC_WRITE(rc, sc__writef(w, ud, "    host-opt, host-act: in host memory, not in total "
                                   "(offloaded optimizer states, activations)\n"));
  SC_WRITE(rc, variation_text(r, w, ud));
  SC_WRITE(rc, sc__writef(w, ud, "\n  where the step goes (mean over ranks)\n"));
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    double s = r->breakdown_s[c];
    /* context and expert parallel exist only in some jobs: shown when used */
    if ((c == SC_CAT_CP || c == SC_CAT_EP) && s == 0) continue;
    SC_WRITE(rc, sc__writef(w, ud, "    %-18s %9.3f s  %5.1f %%\n", sc_category_label(c), s,
                     r->step_time_s > 0 ? 100.0 * s / r->step_time_s : 0.0));
    if (c == SC_CAT_BUBBLE && s > 0) /* the schedule's and the stage imbalance's shares */
      SC_WRITE(rc, sc__writef(w, ud, "      %-16s %9.3f s  schedule, %.3f s stage imbalance\n",
                              "of which", s - r->bubble_imbalance_s, r->bubble_imbalance_s));
  }
  SC_WRITE(rc, critical_text(r, w, ud));
  SC_WRITE(rc, sc__writef(w, ud, "\n  simulated %lld of %lld ranks%s, %lld ops, %lld events\n",
                   (long long)r->simulated_ranks, (long long)r->num_gpus,
                   r->varied_ranks > 0 && r->simulated_ranks < r->num_gpus
                       ? " (the classes the variation splits)"
                   : r->simulated_ranks < r->num_gpus ? " (folded)"
                                                      : "",
                   (long long)r->ops, (long long)r->events));
  return rc;
}

static int format_json(const sc_config *cfg, const sc_result *r, sc_write_fn w, void *ud) {
  int rc = 0;
  SC_WRITE(rc, sc__writef(w, ud,
                   "{\"step_time_s\":%.9g,\"step_time_interval_s\":[%.9g,%.9g],"
                   "\"tokens_per_s\":%.9g,\"tflops_per_gpu\":%.9g,"
                   "\"hw_tflops_per_gpu\":%.9g,\"mfu\":%.6g,\"hfu\":%.6g,",
                   r->step_time_s, r->step_time_lo_s, r->step_time_hi_s, r->tokens_per_s,
                   r->tflops_per_gpu, r->hw_tflops_per_gpu, r->mfu, r->hfu));
  SC_WRITE(rc, sc__writef(w, ud, "\"model_flops_per_step\":%.9g,\"hardware_flops_per_step\":%.9g,",
                   r->model_flops, r->hardware_flops));
  SC_WRITE(rc, sc__writef(w, ud, "\"breakdown\":{"));
  for (int c = 0; c < SC_CAT_COUNT; c++)
    SC_WRITE(rc, sc__writef(w, ud, "%s\"%s\":%.9g", c ? "," : "", sc_category_key(c), r->breakdown_s[c]));
  SC_WRITE(rc, sc__writef(w, ud, "},\"bubble_split\":{\"schedule_s\":%.9g,\"imbalance_s\":%.9g}",
                          r->breakdown_s[SC_CAT_BUBBLE] - r->bubble_imbalance_s,
                          r->bubble_imbalance_s));
  SC_WRITE(rc, sc__writef(w, ud, ",\"memory_gib\":%.6g,\"memory_capacity_gib\":%.6g,\"oom\":%s,",
                   r->memory_gib, r->memory_capacity_gib, r->oom ? "true" : "false"));
  SC_WRITE(rc, sc__writef(w, ud, "\"memory_usable_gib\":%.6g,\"memory_peak_stage\":%lld,"
                          "\"memory_breakdown\":[",
                          r->memory_usable_gib, (long long)r->memory_peak_stage));
  stage_sink so = {w, ud, cfg->parallel.pp, r->memory_peak_stage, 0, sc__memory_features(cfg)};
  SC_WRITE(rc, each_stage(cfg, stage_json, &so));
  SC_WRITE(rc, sc__writef(w, ud, "],"));
  /* Time to train and cost: null where training.tokens or the price is not given. */
  if (r->time_to_train_days > 0)
    SC_WRITE(rc, sc__writef(w, ud, "\"training_tokens\":%.9g,\"time_to_train_days\":%.9g,"
                            "\"gpu_hours\":%.9g,", cfg->training.tokens, r->time_to_train_days,
                            r->gpu_hours));
  else
    SC_WRITE(rc, sc__writef(w, ud, "\"training_tokens\":null,\"time_to_train_days\":null,"
                            "\"gpu_hours\":null,"));
  if (cfg->cluster.price_per_gpu_hour > 0)
    SC_WRITE(rc, sc__writef(w, ud, "\"price_per_gpu_hour\":%.9g,", cfg->cluster.price_per_gpu_hour));
  else
    SC_WRITE(rc, sc__writef(w, ud, "\"price_per_gpu_hour\":null,"));
  if (r->time_to_train_days > 0 && cfg->cluster.price_per_gpu_hour > 0)
    SC_WRITE(rc, sc__writef(w, ud, "\"cost\":%.9g,", r->cost));
  else
    SC_WRITE(rc, sc__writef(w, ud, "\"cost\":null,"));
  if (r->critical_path_ops > 0) {
    SC_WRITE(rc, sc__writef(w, ud, "\"critical_path\":{\"ops\":%lld,\"breakdown\":{",
                            (long long)r->critical_path_ops));
    for (int c = 0; c < SC_CAT_COUNT; c++)
      SC_WRITE(rc, sc__writef(w, ud, "%s\"%s\":%.9g", c ? "," : "", sc_category_key(c),
                              r->critical_path_s[c]));
    SC_WRITE(rc, sc__writef(w, ud, "},\"top\":["));
    for (int i = 0; i < SC_CPATH_TOP && r->critical_path_top[i].stream; i++)
      SC_WRITE(rc, sc__writef(w, ud, "%s{\"stage\":%lld,\"stream\":\"%s\",\"seconds\":%.9g}",
                              i ? "," : "", (long long)r->critical_path_top[i].stage,
                              r->critical_path_top[i].stream, r->critical_path_top[i].seconds));
    SC_WRITE(rc, sc__writef(w, ud, "],\"ranks\":["));
    for (int i = 0; i < SC_CPATH_TOP && r->critical_path_ranks[i].ranks; i++)
      SC_WRITE(rc, sc__writef(w, ud, "%s{\"rank\":%lld,\"ranks\":%lld,\"seconds\":%.9g}",
                              i ? "," : "", (long long)r->critical_path_ranks[i].rank,
                              (long long)r->critical_path_ranks[i].ranks,
                              r->critical_path_ranks[i].seconds));
    SC_WRITE(rc, sc__writef(w, ud, "]},"));
  } else {
    SC_WRITE(rc, sc__writef(w, ud, "\"critical_path\":null,"));
  }
  if (r->varied_ranks > 0) {
    SC_WRITE(rc, sc__writef(w, ud, "\"variation\":{\"varied_ranks\":%lld,\"slowest_gpu_speed\":%.9g,",
                            (long long)r->varied_ranks, r->slowest_gpu_speed));
    if (r->step_time_nominal_s > 0)
      SC_WRITE(rc, sc__writef(w, ud, "\"step_time_nominal_s\":%.9g,\"slowdown\":%.9g,",
                              r->step_time_nominal_s, r->step_time_s / r->step_time_nominal_s));
    else
      SC_WRITE(rc, sc__writef(w, ud, "\"step_time_nominal_s\":null,\"slowdown\":null,"));
    if (r->gpu_mix_ranks > 0)
      SC_WRITE(rc, sc__writef(w, ud, "\"gpu_mix\":{\"gpu\":\"%s\",\"ranks\":%lld,\"oom\":%s}},",
                              r->gpu_mix, (long long)r->gpu_mix_ranks,
                              r->gpu_mix_oom ? "true" : "false"));
    else
      SC_WRITE(rc, sc__writef(w, ud, "\"gpu_mix\":null},"));
  } else {
    SC_WRITE(rc, sc__writef(w, ud, "\"variation\":null,"));
  }
  if (r->run_steps > 0)
    SC_WRITE(rc, sc__writef(w, ud, "\"goodput\":{\"steps\":%lld,\"failures\":%.9g,\"goodput\":%.9g,"
                            "\"run_days\":%.9g},",
                            (long long)r->run_steps, r->failures, r->goodput, r->run_days));
  else
    SC_WRITE(rc, sc__writef(w, ud, "\"goodput\":null,"));
  SC_WRITE(rc, unstated_json(cfg, SC_FIELD_DEFAULTED, "defaulted", w, ud));
  SC_WRITE(rc, unstated_json(cfg, SC_FIELD_DERIVED, "derived", w, ud));
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

/* ------------------------------------------------------------ reading back, diff */

/* X(key, member): the top-level numbers of a result's JSON read back. */
#define RESULT_KEYS(X)                                                                \
  X("step_time_s", step_time_s) X("tokens_per_s", tokens_per_s)                       \
  X("tflops_per_gpu", tflops_per_gpu) X("hw_tflops_per_gpu", hw_tflops_per_gpu)      \
  X("mfu", mfu) X("hfu", hfu) X("model_flops_per_step", model_flops)                  \
  X("hardware_flops_per_step", hardware_flops) X("memory_gib", memory_gib)            \
  X("memory_capacity_gib", memory_capacity_gib) X("memory_usable_gib", memory_usable_gib) \
  X("time_to_train_days", time_to_train_days) X("gpu_hours", gpu_hours) X("cost", cost)

typedef struct result_reader {
  sc_result *out;
  int have_step;
} result_reader;

/* One member of a saved result (sc_json_member_fn): the numbers of
 * RESULT_KEYS at the top level and the breakdown's categories. */
static int read_member(void *ud, const char *parent, const char *key, const sc_jtok *t,
                       int line) {
  (void)line;
  result_reader *R = ud;
  double v;
  if (t->type != SC_JT_NUMBER || sc__json_double(t->s, t->n, &v)) return SC_OK;
  if (parent[0]) {
    for (int c = 0; c < SC_CAT_COUNT; c++)
      if (!strcmp(key, sc_category_key(c))) R->out->breakdown_s[c] = v;
    return SC_OK;
  }
#define SC_X_READ(k, member) \
  if (!strcmp(key, k)) R->out->member = v;
  RESULT_KEYS(SC_X_READ)
#undef SC_X_READ
  if (!strcmp(key, "num_gpus")) R->out->num_gpus = (int64_t)v;
  if (!strcmp(key, "step_time_s")) R->have_step = 1;
  return SC_OK;
}

int sc_result_read_json(sc_ctx *ctx, const char *name, const char *text, size_t len,
                        sc_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!name || !text || !out) return sc__error(ctx, SC_EINVAL, "sc_result_read_json: no input");
  memset(out, 0, sizeof *out);
  result_reader R = {out, 0};
  int rc = sc__json_members(ctx, name, "stepcast run --format json", text, len, "breakdown",
                            read_member, &R);
  if (!rc && !R.have_step)
    rc = sc__error_at(ctx, SC_EINVAL, name, 1,
                      "no step_time_s: not a stepcast result (run --format json, -o DIR)");
  return rc;
}

/* X(label, unit scale, expression over a result *r): the rows of a diff. */
#define DIFF_ROWS(X)                                          \
  X("step time (s)", "step_time_s", r->step_time_s)           \
  X("tokens/s", "tokens_per_s", r->tokens_per_s)              \
  X("TFLOP/s per GPU", "tflops_per_gpu", r->tflops_per_gpu)   \
  X("MFU (%)", "mfu_pct", 100 * r->mfu)                       \
  X("memory per GPU (GiB)", "memory_gib", r->memory_gib)      \
  X("time to train (days)", "time_to_train_days", r->time_to_train_days) \
  X("cost", "cost", r->cost)

static int diff_row(sc_write_fn w, void *ud, sc_format fmt, int first, const char *label,
                    const char *key, double a, double b) {
  double d = b - a, pct = a != 0 ? 100.0 * d / a : 0.0;
  if (fmt == SC_FORMAT_JSON)
    return a != 0 ? sc__writef(w, ud, "%s\"%s\":{\"a\":%.9g,\"b\":%.9g,\"delta\":%.9g,\"pct\":%.6g}",
                               first ? "" : ",", key, a, b, d, pct)
                  : sc__writef(w, ud, "%s\"%s\":{\"a\":%.9g,\"b\":%.9g,\"delta\":%.9g,\"pct\":null}",
                               first ? "" : ",", key, a, b, d);
  if (a == 0 && b == 0) return 0;
  if (a != 0)
    return sc__writef(w, ud, "  %-24s %14.6g %14.6g %+14.6g %+8.1f %%\n", label, a, b, d, pct);
  return sc__writef(w, ud, "  %-24s %14.6g %14.6g %+14.6g %10s\n", label, a, b, d, "");
}

int sc_result_diff_format(const sc_result *a, const sc_result *b, const char *name_a,
                          const char *name_b, sc_format fmt, sc_write_fn w, void *ud) {
  if (!a || !b || !w) return SC_EINVAL;
  int rc = 0, first = 1;
  if (fmt == SC_FORMAT_JSON) /* the names are the caller's: not repeated */
    SC_WRITE(rc, sc__writef(w, ud, "{"));
  else
    SC_WRITE(rc, sc__writef(w, ud, "stepcast diff: A = %s, B = %s\n\n  %-24s %14s %14s %14s %10s\n",
                            name_a ? name_a : "A", name_b ? name_b : "B", "", "A", "B", "B - A",
                            "change"));
#define SC_X_ROW(label, key, expr)                                                           \
  {                                                                                          \
    const sc_result *r = a;                                                                  \
    double va = (expr);                                                                      \
    r = b;                                                                                   \
    SC_WRITE(rc, diff_row(w, ud, fmt, first, label, key, va, (expr)));                       \
    first = 0;                                                                               \
  }
  DIFF_ROWS(SC_X_ROW)
#undef SC_X_ROW
  if (fmt == SC_FORMAT_JSON) SC_WRITE(rc, sc__writef(w, ud, ",\"breakdown\":{"));
  else SC_WRITE(rc, sc__writef(w, ud, "\n  where the step goes (s, mean over ranks)\n"));
  for (int c = 0; c < SC_CAT_COUNT; c++)
    SC_WRITE(rc, diff_row(w, ud, fmt, c == 0, sc_category_label(c), sc_category_key(c),
                          a->breakdown_s[c], b->breakdown_s[c]));
  if (fmt == SC_FORMAT_JSON) SC_WRITE(rc, sc__writef(w, ud, "}}\n"));
  return rc;
}
