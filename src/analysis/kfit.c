/*
 * kfit.c: `stepcast calibrate --kernels` (sc_calibrate_kernels): the compute
 * model's efficiencies fitted to a GPU trace's own kernels. A trace imported
 * with `import cpu --gpu-trace` keeps, for each priced operator, the kernel
 * time it measured (sc_jrank.ref_ns); here the operators' priced times are
 * compared with those, class by class, and each class's efficiency is moved
 * to where the class's priced total equals its measured total (per-operator
 * errors are reported, not fitted: an operator whose bytes or shape the
 * trace leaves unknown, priced near the bare launch overhead, would pull a
 * per-operator fit far off, as a foreign trace's thousands of small kernels
 * did in trials with a log-error fit). This calibrates on
 * the kernels of a real step (their clocks, power and software), which
 * kernel benchmarks run back to back do not show (docs/VALIDATION.md, "H200
 * measured by this project").
 */
#include "analysis/replay_int.h"
#include "base/sc_int.h"
#include "cost/cost_int.h"
#include "trace/job_int.h"

#include <math.h>
#include <string.h>


/* One operator: its class, measured kernel time, and the ops priced for it
 * (a rank, the first op index and the count). */
typedef struct kgroup {
  int cls;
  double meas_ns;
  const sc_jrank *r;
  size_t first, n;
} kgroup;

typedef struct kfit {
  sc_cost cost;
  int fp8_recipe;
  kgroup *g;
  size_t ng, gcap;
} kfit;

static int class_of(int shape_cls) {
  switch (shape_cls) {
  case SC_JSHAPE_GEMM:
  case SC_JSHAPE_CONV: return SC_KFIT_GEMM;
  case SC_JSHAPE_MEM: return SC_KFIT_MEM;
  case SC_JSHAPE_ATTN: return SC_KFIT_ATTN;
  case SC_JSHAPE_ATTN_CUDNN: return SC_KFIT_CUDNN;
  default: return -1; /* normalisations, FP8 GEMMs, host */
  }
}

static double group_ns(const kfit *k, const kgroup *g) {
  double t = 0;
  for (size_t i = 0; i < g->n; i++) {
    const sc_jop *op = &g->r->ops[g->first + i];
    if (op->kind == SC_JOP_KERNEL && op->shape) t += sc__replay_priced_ns(&k->cost, g->r, op, k->fp8_recipe);
  }
  return t;
}

/* The parameter a class fits, in the cost (attention: also the derived
 * efficiency the attention model reads). */
static void set_param(kfit *k, const sc_config *cfg, int cls, double v) {
  sc_cost_params *p = &k->cost.p;
  if (cls == SC_KFIT_GEMM) p->gemm_eff = v;
  else if (cls == SC_KFIT_MEM) p->mem_eff = v;
  else if (cls == SC_KFIT_ATTN) p->attn_eff = v;
  else p->cudnn_attn_eff = v;
  k->cost.attn_eff = sc__cost_attn_eff(p, cfg);
}

static double get_param(const kfit *k, int cls) {
  const sc_cost_params *p = &k->cost.p;
  return cls == SC_KFIT_GEMM ? p->gemm_eff : cls == SC_KFIT_MEM ? p->mem_eff
                                         : cls == SC_KFIT_ATTN  ? p->attn_eff
                                                                : p->cudnn_attn_eff;
}

/* The priced total of one class (ns) and its per-operator MAPE. */
static double class_priced(const kfit *k, int cls, double *mape) {
  double sum = 0, ape = 0;
  size_t n = 0;
  for (size_t i = 0; i < k->ng; i++) {
    const kgroup *g = &k->g[i];
    if (g->cls != cls) continue;
    double t = group_ns(k, g);
    sum += t;
    ape += fabs(t / g->meas_ns - 1.0);
    n++;
  }
  if (mape) *mape = n ? 100.0 * ape / (double)n : 0;
  return sum;
}

/* Collects the operators with a measured time: a kernel op whose ref_ns is
 * positive starts one; the kernel ops after it marked -1 (and the host ops
 * between) belong to it. */
static int collect(sc_ctx *ctx, kfit *k, const sc_job *job, int64_t *unmatched) {
  for (size_t ri = 0; ri < job->nranks; ri++) {
    const sc_jrank *r = &job->ranks[ri];
    size_t nref = r->ref_ns ? (r->ref_cap < r->nops ? r->ref_cap : r->nops) : 0;
    for (size_t q = 0; q < nref; q++) {
      const sc_jop *op = &r->ops[q];
      if (op->kind != SC_JOP_KERNEL || !op->shape || r->ref_ns[q] == -1) continue;
      if (r->ref_ns[q] <= 0) {
        (*unmatched)++;
        continue;
      }
      int cls = class_of(r->shapes[op->shape - 1].cls);
      size_t end = q + 1;
      while (end < nref && (r->ops[end].kind == SC_JOP_HOST || r->ref_ns[end] == -1)) end++;
      if (cls < 0) continue;
      kgroup g = {cls, (double)r->ref_ns[q], r, q, end - q};
      if (k->ng == k->gcap && sc__grow(ctx, (void **)&k->g, sizeof *k->g, &k->gcap, k->ng + 1)) return SC_ENOMEM;
      k->g[k->ng++] = g;
    }
  }
  return SC_OK;
}

int sc_calibrate_kernels(sc_ctx *ctx, const sc_job *job, const sc_config *cfg, sc_kernel_fit *out) {
  memset(out, 0, sizeof *out);
  kfit k;
  memset(&k, 0, sizeof k);
  k.fp8_recipe = (int)cfg->training.fp8_recipe;
  int rc = sc__cost_init(ctx, cfg, &k.cost);
  if (rc) return rc;
  out->gpu = k.cost.hw->name;
  out->gemm_dim_half = k.cost.p.gemm_dim_half;
  out->kernel_overhead_us = k.cost.p.kernel_overhead_us;
  out->fp8_gemm_eff = k.cost.p.fp8_gemm_eff;
  out->scores_mem_eff = k.cost.p.scores_mem_eff;
  rc = collect(ctx, &k, job, &out->unmatched);
  if (!rc && !k.ng)
    rc = sc__error(ctx, SC_EINVAL,
                   "no operator with a measured kernel time: give GPU traces (Kineto, record_shapes) "
                   "imported as `import cpu --gpu-trace` does");
  /* Memory-bound first (GEMMs take the slower of FLOPs and bytes), then
   * GEMMs, attention, cuDNN attention. */
  static const int order[SC_KFIT_COUNT] = {SC_KFIT_MEM, SC_KFIT_GEMM, SC_KFIT_ATTN, SC_KFIT_CUDNN};
  for (int oi = 0; !rc && oi < SC_KFIT_COUNT; oi++) {
    int c = order[oi];
    sc_kernel_fit_class *fc = &out->cls[c];
    for (size_t i = 0; i < k.ng; i++)
      if (k.g[i].cls == c) fc->ops++, fc->measured_s += k.g[i].meas_ns / 1e9;
    fc->before = fc->after = get_param(&k, c);
    double meas = fc->measured_s * 1e9;
    fc->before_s = class_priced(&k, c, &fc->mape_before) / 1e9;
    if (fc->ops < 3) {
      fc->after_s = fc->before_s, fc->mape_after = fc->mape_before;
      continue;
    }
    /* Bisection: the priced total falls as the efficiency rises (to the
     * launch overheads' floor); at a bound when no value in [0.05, 1]
     * reaches the measured total. */
    double a = 0.05, b = 1.0;
    set_param(&k, cfg, c, a);
    if (class_priced(&k, c, NULL) <= meas) b = a, fc->at_bound = 1;
    set_param(&k, cfg, c, b);
    if (b > a && class_priced(&k, c, NULL) >= meas) a = b, fc->at_bound = 1;
    for (int it = 0; it < 60 && b - a > 1e-7; it++) {
      double m = 0.5 * (a + b);
      set_param(&k, cfg, c, m);
      if (class_priced(&k, c, NULL) > meas) a = m;
      else b = m;
    }
    double best = 0.5 * (a + b);
    set_param(&k, cfg, c, best);
    fc->after = best;
    fc->after_s = class_priced(&k, c, &fc->mape_after) / 1e9;
  }
  sc__free(ctx, k.g, k.gcap * sizeof *k.g);
  sc__cost_release(ctx, &k.cost);
  return rc;
}

static const char *const class_key[SC_KFIT_COUNT] = {"gemm_eff", "mem_eff", "attn_eff", "cudnn_attn_eff"};
static const char *const class_text[SC_KFIT_COUNT] = {"GEMMs", "memory-bound", "attention", "cuDNN attention"};

int sc_kernel_fit_report(const sc_kernel_fit *f, sc_write_fn w, void *ud) {
  int rc = sc__writef(w, ud,
                      "kernel fit on %s: per class the operators with a measured kernel time\n"
                      "class              ops  measured ms  priced before  after ms   MAPE before  after  "
                      "parameter          before    after\n",
                      f->gpu ? f->gpu : "?");
  for (int c = 0; !rc && c < SC_KFIT_COUNT; c++) {
    const sc_kernel_fit_class *k = &f->cls[c];
    if (!k->ops) continue;
    rc = sc__writef(w, ud, "%-16s %5lld %12.3f %14.3f %9.3f %11.1f %% %5.1f %%  %-16s %8.4f %8.4f%s\n",
                    class_text[c], (long long)k->ops, k->measured_s * 1e3, k->before_s * 1e3, k->after_s * 1e3,
                    k->mape_before, k->mape_after, class_key[c], k->before, k->after,
                    k->ops < 3 ? "  (too few: kept)" : k->at_bound ? "  (at a bound of [0.05, 1])" : "");
  }
  if (!rc && f->unmatched)
    rc = sc__writef(w, ud, "%lld priced operator(s) without a measured kernel time (not fitted)\n",
                    (long long)f->unmatched);
  return rc;
}

int sc_kernel_fit_write_calibration(const sc_kernel_fit *f, const char *note, sc_write_fn w, void *ud) {
  /* fit.gpu: a run or replay on another GPU is warned (sc_config_warnings). */
  int rc = sc__writef(w, ud, "# %s\n# `stepcast calibrate --kernels` (docs/TRACE.md)\n", note ? note : "");
  if (!rc && f->gpu) rc = sc__writef(w, ud, "fit:\n  gpu: %s\n  source: calibrate --kernels\n", f->gpu);
  if (!rc) rc = sc__writef(w, ud, "calibration:\n");
  for (int c = 0; !rc && c < SC_KFIT_COUNT; c++)
    rc = sc__writef(w, ud, "  %s: %.6g%s\n", class_key[c], f->cls[c].after,
                    f->cls[c].ops >= 3 ? "" : "   # kept: fewer than 3 operators of its class");
  if (!rc)
    rc = sc__writef(w, ud,
                    "  # kept from the starting calibration:\n  gemm_dim_half: %.6g\n  kernel_overhead_us: %.6g\n"
                    "  fp8_gemm_eff: %.6g\n  scores_mem_eff: %.6g\n",
                    f->gemm_dim_half, f->kernel_overhead_us, f->fp8_gemm_eff, f->scores_mem_eff);
  return rc;
}
