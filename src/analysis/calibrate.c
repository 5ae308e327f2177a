/*
 * calibrate.c: fits free cost-model parameters to published step times.
 * Uses only the split=calibration rows of a case set (validate.c), minimises
 * a robust loss of log(predicted / measured) with a pull towards the
 * kernel-data values (sc__cost_compute_priors), by a bounded Nelder-Mead search in
 * transformed coordinates, and writes the result as a `calibration:` YAML
 * mapping that configs and `--calibration` load.
 */
#include "stepcast/validate.h"

#include "base/optim_int.h"
#include "cost/cost_int.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

/* Fittable parameters and their physical bounds. An efficiency stays in
 * (lo, hi] with hi = 1 (never above the datasheet peak); sizes and latencies
 * stay positive on a log scale. */
typedef struct param_def {
  const char *name;
  size_t offset; /* in sc_cost_params */
  double lo, hi;
  int log_scale;
} param_def;

static const param_def param_defs[] = {
    {"gemm_eff", offsetof(sc_cost_params, gemm_eff), 0.30, 1.0, 0},
    {"gemm_dim_half", offsetof(sc_cost_params, gemm_dim_half), 1.0, 1024.0, 1},
    {"attn_eff", offsetof(sc_cost_params, attn_eff), 0.10, 1.0, 0},
    {"cudnn_attn_eff", offsetof(sc_cost_params, cudnn_attn_eff), 0.10, 1.0, 0},
    {"mem_eff", offsetof(sc_cost_params, mem_eff), 0.30, 1.0, 0},
    {"scores_mem_eff", offsetof(sc_cost_params, scores_mem_eff), 0.20, 1.0, 0},
    {"kernel_overhead_us", offsetof(sc_cost_params, kernel_overhead_us), 0.1, 50.0, 1},
    /* Communication is calibrated from nccl-tests output (`calibrate
     * --nccl-tests`, comm_fit.c), not from step times. */
};
#define NPARAM_DEFS (sizeof param_defs / sizeof param_defs[0])

/* Fitted when --params is not given: these, plus the efficiency of each
 * fused attention kernel the calibration rows run (attn_eff for flash,
 * cudnn_attn_eff for cudnn; a kernel no row runs stays at its prior). */
static const char *const default_params[] = {"gemm_eff", "gemm_dim_half", "mem_eff",
                                             "kernel_overhead_us"};

/* Scale of the soft-L1 loss on log(predicted/measured): errors well below 5 %
 * count quadratically, larger ones linearly (robust to outlying rows). */
#define LOSS_SCALE 0.05
#define DEFAULT_PRIOR_WEIGHT 1.0
#define DEFAULT_MAX_EVALS 600

static double *field(sc_cost_params *p, const param_def *d) {
  return (double *)((char *)p + d->offset);
}

/* Transformed coordinate u (unbounded) <-> parameter value in (lo, hi). */
static double to_value(const param_def *d, double u) {
  double s = 1.0 / (1.0 + exp(-u));
  if (d->log_scale) return exp(log(d->lo) + (log(d->hi) - log(d->lo)) * s);
  return d->lo + (d->hi - d->lo) * s;
}

static double to_coord(const param_def *d, double v) {
  double s = d->log_scale ? (log(v) - log(d->lo)) / (log(d->hi) - log(d->lo))
                          : (v - d->lo) / (d->hi - d->lo);
  if (s < 1e-6) s = 1e-6;
  if (s > 1 - 1e-6) s = 1 - 1e-6;
  return log(s / (1 - s));
}

typedef struct fit {
  sc_ctx *ctx;
  const sc_caseset *set;
  const sc_calibration_options *opt;
  const size_t *rows; /* case indices used */
  size_t nrows;
  const param_def *defs[SC_CALIB_MAX_PARAMS];
  size_t k;           /* fitted parameters */
  double u0[SC_CALIB_MAX_PARAMS]; /* prior centre */
  sc_cost_params base; /* user start values (0 = cost-model default) */
  double prior_weight;
  int evals, max_evals;
  int rc;             /* first simulation error */
} fit;

/* Parameters at coordinates u: the user's start values with the fitted
 * fields replaced. */
static void params_at(const fit *F, const double *u, sc_cost_params *p) {
  *p = F->base;
  for (size_t j = 0; j < F->k; j++) *field(p, F->defs[j]) = to_value(F->defs[j], u[j]);
}

/* Simulates every calibration row with parameters p; fills err_pct (may be
 * NULL) and returns the data loss, or NAN after a simulation error. */
static double data_loss(fit *F, const sc_cost_params *p, double *err_pct) {
  sc_validate_options vo = {p, F->opt ? F->opt->sets : NULL, F->opt ? F->opt->nsets : 0};
  double loss = 0;
  for (size_t i = 0; i < F->nrows; i++) {
    const sc_case *c = sc_caseset_case(F->set, F->rows[i]);
    sc_config cfg;
    sc_result res;
    int e = sc_case_config(F->ctx, c, &vo, &cfg);
    if (!e) e = sc_simulate_ex(F->ctx, &cfg, 0, NULL, NULL, &res); /* the step time only */
    if (e) {
      if (!F->rc) F->rc = e;
      return NAN;
    }
    double r = log(res.step_time_s / c->measured_step_s) / LOSS_SCALE;
    loss += 2.0 * (sqrt(1.0 + r * r) - 1.0);
    if (err_pct) err_pct[i] = 100.0 * (res.step_time_s / c->measured_step_s - 1.0);
  }
  return loss;
}

static double objective(fit *F, const double *u) {
  sc_cost_params p;
  params_at(F, u, &p);
  F->evals++;
  double loss = data_loss(F, &p, NULL);
  if (isnan(loss)) return HUGE_VAL;
  for (size_t j = 0; j < F->k; j++) loss += F->prior_weight * (u[j] - F->u0[j]) * (u[j] - F->u0[j]);
  return loss;
}

static double objective_cb(void *ud, const double *u) { return objective(ud, u); }

/* Nelder-Mead (base/optim.c) from u with initial steps `step` and `budget`
 * evaluations beyond the start simplex; u receives the best point. Stops
 * early when a simulation fails (F->rc). */
static double nelder_mead(fit *F, double *u, double step, int budget) {
  sc_nm_opts o = {step, budget + (long)F->k + 1, 1e-9, 1.0, 1e-4, &F->rc};
  return sc__nelder_mead(objective_cb, F, (int)F->k, u, &o, NULL);
}

static const param_def *find_param(const char *name) {
  for (size_t i = 0; i < NPARAM_DEFS; i++)
    if (!strcmp(param_defs[i].name, name)) return &param_defs[i];
  return NULL;
}

static void stats(const double *err, size_t n, double *mape, double *worst) {
  *mape = *worst = 0;
  for (size_t i = 0; i < n; i++) {
    *mape += fabs(err[i]) / (double)n;
    *worst = fmax(*worst, fabs(err[i]));
  }
}

/* The parameters to fit: opt->params, or the defaults with the attention
 * efficiency of each fused kernel the rows run. */
static int choose_params(sc_ctx *ctx, const sc_caseset *set, const sc_calibration_options *opt,
                         const size_t *rows, size_t nrows, fit *F) {
  const char *defaults[sizeof default_params / sizeof default_params[0] + 2];
  size_t ndefaults = 0;
  for (size_t i = 0; i < sizeof default_params / sizeof default_params[0]; i++)
    defaults[ndefaults++] = default_params[i];
  int flash = 0, cudnn = 0;
  for (size_t i = 0; i < nrows; i++) {
    sc_attention a = sc_caseset_case(set, rows[i])->resolved.training.attention;
    flash |= a == SC_ATTN_FLASH;
    cudnn |= a == SC_ATTN_CUDNN;
  }
  if (flash) defaults[ndefaults++] = "attn_eff";
  if (cudnn) defaults[ndefaults++] = "cudnn_attn_eff";
  const char *const *names = opt && opt->params ? opt->params : defaults;
  size_t nnames = opt && opt->params ? opt->nparams : ndefaults;
  if (!nnames || nnames > SC_CALIB_MAX_PARAMS)
    return sc__error(ctx, SC_EINVAL, "calibrate: between 1 and %d parameters can be fitted",
                     SC_CALIB_MAX_PARAMS);
  for (size_t i = 0; i < nnames; i++) {
    const param_def *d = find_param(names[i]);
    if (!d) {
      char known[256] = "";
      for (size_t j = 0; j < NPARAM_DEFS; j++) {
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", j ? ", " : "", param_defs[j].name);
      }
      return sc__error(ctx, SC_EINVAL, "calibrate: cannot fit \"%s\" (fittable: %s)", names[i],
                       known);
    }
    for (size_t j = 0; j < F->k; j++)
      if (F->defs[j] == d)
        return sc__error(ctx, SC_EINVAL, "calibrate: parameter \"%s\" given twice", names[i]);
    F->defs[F->k++] = d;
  }
  return SC_OK;
}

int sc_calibrate_cases(sc_ctx *ctx, const sc_caseset *set, const sc_calibration_options *opt,
                       sc_calibration_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!set || !out) return sc__error(ctx, SC_EINVAL, "calibrate: no cases or output");
  memset(out, 0, sizeof *out);
  fit F;
  memset(&F, 0, sizeof F);
  F.ctx = ctx;
  F.set = set;
  F.opt = opt;
  F.prior_weight = opt && opt->prior_weight >= 0 ? opt->prior_weight : DEFAULT_PRIOR_WEIGHT;
  F.max_evals = opt && opt->max_evaluations > 0 ? opt->max_evaluations : DEFAULT_MAX_EVALS;

  /* Calibration rows, all on GPUs that share one set of default compute
   * parameters (one compute die: an H100 SXM and a 500 W H100 run the same
   * efficiencies at their own peaks, so their rows fit one set). */
  size_t n = sc_caseset_count(set), nrows = 0;
  const char *want = opt ? opt->gpu : NULL;
  const sc_hw *hw = NULL;
  if (want && !(hw = sc_hw_find(want)))
    return sc__error(ctx, SC_EINVAL, "calibrate: unknown gpu \"%s\"", want);
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    if (c->split != SC_SPLIT_CALIBRATION || c->unsupported[0]) continue;
    const sc_hw *g = sc_hw_find(c->resolved.cluster.gpu);
    if (!g) continue; /* a GPU file: not a preset with defaults */
    if (!hw) hw = g;
    else if (!sc__cost_same_defaults(hw, g)) {
      if (want) continue;
      return sc__error(ctx, SC_EINVAL,
                       "calibrate: calibration rows span gpus %s and %s (%s:%d), whose default "
                       "compute parameters differ; choose one with --gpu",
                       hw->name, g->name, c->file, c->line);
    }
    nrows++;
  }
  if (!nrows)
    return sc__error(ctx, SC_EINVAL, "calibrate: no supported split=calibration rows%s%s",
                     want ? " on gpu " : "", want ? want : "");
  sc__strlcpy(out->gpu, hw->name, sizeof out->gpu);
  size_t *rows = sc__malloc(ctx, nrows * sizeof *rows);
  double *err = sc__malloc(ctx, nrows * sizeof *err);
  if (!rows || !err) {
    sc__free(ctx, rows, nrows * sizeof *rows);
    sc__free(ctx, err, nrows * sizeof *err);
    return SC_ENOMEM;
  }
  nrows = 0;
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    const sc_hw *g = sc_hw_find(c->resolved.cluster.gpu);
    if (c->split == SC_SPLIT_CALIBRATION && !c->unsupported[0] && g &&
        sc__cost_same_defaults(hw, g))
      rows[nrows++] = i;
  }
  F.rows = rows;
  F.nrows = nrows;

  int rc = choose_params(ctx, set, opt, rows, nrows, &F);
  if (rc) {
    sc__free(ctx, rows, nrows * sizeof *rows);
    sc__free(ctx, err, nrows * sizeof *err);
    return rc;
  }

  /* Start and prior centre: kernel-data values, or the user's start. */
  sc_cost_params prior;
  sc__cost_defaults(hw, &prior);
  sc__cost_compute_priors(hw, &prior);
  if (opt && opt->start) F.base = *opt->start;
  double u[SC_CALIB_MAX_PARAMS];
  for (size_t j = 0; j < F.k; j++) {
    double v = *field(&F.base, F.defs[j]);
    if (v == 0) v = *field(&prior, F.defs[j]);
    if (v <= F.defs[j]->lo || v > F.defs[j]->hi)
      v = fmin(fmax(v, F.defs[j]->lo * 1.001), F.defs[j]->hi);
    u[j] = F.u0[j] = to_coord(F.defs[j], v);
  }

  sc_cost_params p;
  params_at(&F, u, &p);
  if (isnan(data_loss(&F, &p, err))) goto done;
  stats(err, nrows, &out->mape_before_pct, &out->max_before_pct);
  /* Two passes: a restart from the first optimum guards against a simplex
   * that collapsed early. */
  nelder_mead(&F, u, 0.5, F.max_evals * 2 / 3);
  if (!F.rc) nelder_mead(&F, u, 0.1, F.max_evals - F.evals > 0 ? F.max_evals - F.evals : 1);
  if (F.rc) goto done;
  params_at(&F, u, &p);
  if (isnan(data_loss(&F, &p, err))) goto done;
  stats(err, nrows, &out->mape_after_pct, &out->max_after_pct);
  out->params = p;
  out->nfitted = F.k;
  for (size_t j = 0; j < F.k; j++) out->fitted[j] = F.defs[j]->name;
  out->rows = nrows;
  out->evaluations = F.evals;
done:
  if (F.rc) rc = F.rc;
  sc__free(ctx, rows, nrows * sizeof *rows);
  sc__free(ctx, err, nrows * sizeof *err);
  return rc;
}

int sc_calibration_write_yaml(const sc_calibration_result *r, const char *note, sc_write_fn w,
                              void *ud) {
  if (!r || !w) return SC_EINVAL;
  int rc = 0;
  SC_WRITE(rc, sc__writef(w, ud, "# stepcast calibration: sc_cost_params fields (docs/CONFIG.md).\n"));
  if (note && note[0]) {
    const char *s = note;
    while (*s) {
      const char *e = strchr(s, '\n');
      size_t len = e ? (size_t)(e - s) : strlen(s);
      SC_WRITE(rc, sc__writef(w, ud, "# %.*s\n", (int)len, s));
      s += len + (e ? 1 : 0);
    }
  }
  SC_WRITE(rc, sc__writef(w, ud, "calibration:\n"));
  for (size_t j = 0; j < r->nfitted; j++) {
    const param_def *d = find_param(r->fitted[j]);
    if (!d) continue;
    SC_WRITE(rc, sc__writef(w, ud, "  %s: %.6g\n", d->name,
                     *(const double *)((const char *)&r->params + d->offset)));
  }
  SC_WRITE(rc, sc__writef(w, ud,
                   "fit:\n  gpu: %s\n  calibration_rows: %zu\n  parameters: [",
                   r->gpu, r->rows));
  for (size_t j = 0; j < r->nfitted; j++)
    SC_WRITE(rc, sc__writef(w, ud, "%s%s", j ? ", " : "", r->fitted[j]));
  SC_WRITE(rc, sc__writef(w, ud,
                   "]\n  loss: soft-L1 of log(predicted/measured), scale %.2f, plus a pull "
                   "towards the kernel-data values\n"
                   "  mape_before_pct: %.2f\n  mape_after_pct: %.2f\n"
                   "  max_abs_error_before_pct: %.2f\n  max_abs_error_after_pct: %.2f\n"
                   "  evaluations: %d\n",
                   LOSS_SCALE, r->mape_before_pct, r->mape_after_pct, r->max_before_pct,
                   r->max_after_pct, r->evaluations));
  return rc;
}
