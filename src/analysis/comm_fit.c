/*
 * comm_fit.c: calibration of the collective model from nccl-tests rows
 * (`stepcast calibrate --nccl-tests`). A robust least-squares fit of log
 * time over the model's free parameters (sc__nccl_keys[].fitted),
 * with a weak prior towards each parameter's prior (NCCL's figure or a
 * physical estimate) for what the rows cannot identify, minimised by a
 * deterministic Nelder-Mead simplex with restarts. Rows are predicted as
 * nccl-tests reports them (sc__comm_bench_time_us: one thread may drive
 * several GPUs).
 */
#include "analysis/comm_api_int.h"
#include "base/optim_int.h"

#include <math.h>

/* Residuals are log(predicted / measured). Huber's loss with a 20% knee
 * keeps single noisy rows (the first size of a run often includes warm-up
 * effects: 1242 us for 1 KiB on 128 GPUs in the Azure logs) from steering
 * the fit. */
#define HUBER_KNEE 0.2
/* Weight of the prior (per parameter, in the unbounded coordinates): small
 * against a typical squared log residual (~0.01), so it only decides
 * directions the data leave flat. Its centre is the parameter's prior, not
 * the starting point, so the result does not depend on where the fit
 * starts: the shipped defaults are their own fit. */
#define PRIOR_WEIGHT 1e-4
#define NM_MAX_EVALS 4000
#define NM_RESTARTS 30

typedef struct fit_row {
  double bytes, measured_us;
  int op;
  sc_placement pl;
  int64_t gpus_per_thread; /* nccl-tests -g */
} fit_row;

typedef struct fit {
  const sc_comm_topo *topo;
  sc_comm_params base;
  int idx[SC_COMM_PARAM_COUNT]; /* fitted parameter -> info index */
  int k;
  double x0[SC_COMM_PARAM_COUNT]; /* the priors, in unbounded coordinates */
  const fit_row *rows;
  size_t nrows;
  long evals;
} fit;

/* The bounded parameter value of an unbounded coordinate, and back. */
static double to_value(const sc_calib_key *d, double x) {
  return d->lo + (d->hi - d->lo) / (1.0 + exp(-x));
}

static double to_coord(const sc_calib_key *d, double v) {
  double span = d->hi - d->lo, u = (v - d->lo) / span;
  if (u < 1e-9) u = 1e-9;
  if (u > 1 - 1e-9) u = 1 - 1e-9;
  return log(u / (1 - u));
}

static void apply(const fit *F, const double *x, sc_comm_params *p) {
  *p = F->base;
  for (int j = 0; j < F->k; j++) {
    const sc_calib_key *d = &sc__nccl_keys[F->idx[j]];
    *(double *)((char *)p + d->member) = to_value(d, x[j]);
  }
}

static double huber(double r) {
  double a = fabs(r);
  return a <= HUBER_KNEE ? 0.5 * r * r : HUBER_KNEE * (a - 0.5 * HUBER_KNEE);
}

static double objective(fit *F, const double *x) {
  sc_comm_params p;
  apply(F, x, &p);
  F->evals++;
  double loss = 0;
  for (size_t i = 0; i < F->nrows; i++) {
    const fit_row *r = &F->rows[i];
    double t = sc__comm_bench_time_us(F->topo, &p, r->op, r->bytes, &r->pl, r->gpus_per_thread,
                                      NULL, NULL);
    if (!(t > 0) || !isfinite(t)) return INFINITY;
    loss += huber(log(t / r->measured_us));
  }
  loss /= (double)F->nrows;
  double prior = 0;
  for (int j = 0; j < F->k; j++) prior += (x[j] - F->x0[j]) * (x[j] - F->x0[j]);
  return loss + PRIOR_WEIGHT * prior;
}

static double objective_cb(void *ud, const double *x) { return objective(ud, x); }

/* Nelder-Mead (base/optim.c) from x with initial steps `step`, at most
 * NM_MAX_EVALS evaluations beyond the start simplex; x receives the best
 * vertex. Converged when the simplex's values agree to 1e-12. */
static double nelder_mead(fit *F, double *x, double step) {
  sc_nm_opts o = {step, NM_MAX_EVALS + F->k + 1, 1e-12, 1e-12, INFINITY, NULL};
  return sc__nelder_mead(objective_cb, F, F->k, x, &o, NULL);
}

/* The first-call setup (nccl_setup_us) from the files' first-call rows
 * (sc_nccltests_row_is_first_call) across nodes, in closed form once the
 * steady-state parameters are fitted: each such row's out-of-place excess
 * over the steady prediction, times the iterations nccl-tests spread it
 * over, per rank and remote node (sc__comm_setup_us); their mean. Files
 * without one leave the parameter as it was: it is what they cannot tell. */
static void fit_setup(sc_comm *m, const sc_nccltests *files, size_t nfiles) {
  double sum = 0;
  int cnt = 0;
  for (size_t f = 0; f < nfiles; f++) {
    const sc_nccltests *t = &files[f];
    sc_placement pl;
    if (t->op < 0 || sc__comm_file_placement(m, t, 0, 0, &pl) || pl.nodes <= 1) continue;
    for (size_t r = 0; r < t->nrows; r++) {
      if (!sc_nccltests_row_is_first_call(t, r)) continue;
      double steady = sc__comm_bench_time_us(&m->topo, &m->params, t->op,
                                             (double)t->rows[r].bytes, &pl,
                                             sc__comm_file_gpus_per_thread(t), NULL, NULL);
      double excess = (t->rows[r].time_us[0] - steady) * (double)sc__comm_file_iters(t);
      if (excess > 0) sum += excess / ((double)pl.n * (double)(pl.nodes - 1)), cnt++;
    }
  }
  if (cnt) m->params.setup_us = sum / cnt;
}

int sc_comm_fit_only(sc_comm *m, const char *const *keys, size_t n) {
  unsigned char mark[SC_COMM_PARAM_COUNT];
  memset(mark, 0, sizeof mark);
  for (size_t j = 0; keys && j < n; j++) {
    int found = -1;
    for (int i = 0; i < SC_COMM_PARAM_COUNT; i++)
      if (!strcmp(keys[j], sc__nccl_keys[i].key)) found = i;
    if (found < 0 || !sc__nccl_keys[found].fitted)
      return sc__error(m->ctx, SC_EINVAL, "\"%s\" is not a fitted key of the collective model "
                                          "(docs/COMM.md section 2)",
                       keys[j]);
    mark[found] = 1;
  }
  memcpy(m->fit_key, mark, sizeof mark);
  m->fit_only = keys && n > 0;
  return SC_OK;
}

int sc_comm_calibrate(sc_comm *m, const sc_nccltests *files, size_t nfiles, double *mape_pct) {
  sc_ctx *ctx = m->ctx;
  size_t total = 0;
  for (size_t i = 0; i < nfiles; i++) total += files[i].nrows;
  if (!total) return sc__error(ctx, SC_EINVAL, "calibration needs at least one nccl-tests row");
  fit_row *rows = sc__calloc(ctx, total, sizeof *rows);
  if (!rows) return SC_ENOMEM;
  size_t n = 0;
  int rc = SC_OK;
  for (size_t i = 0; i < nfiles && !rc; i++) {
    const sc_nccltests *t = &files[i];
    if (t->op < 0) {
      rc = sc__error(ctx, SC_EINVAL,
                     "%s: the output does not say which collective it measured; name the file "
                     "after it (all_gather_...) or set the op",
                     t->origin);
      break;
    }
    sc_placement pl;
    if ((rc = sc__comm_file_placement(m, t, 0, 0, &pl))) break;
    if (pl.n < 2) continue; /* one rank communicates nothing */
    for (size_t r = 0; r < t->nrows; r++) {
      double meas = sc_nccltests_row_time_us(&t->rows[r]);
      if (!(meas > 0) || t->rows[r].bytes <= 0 || sc_nccltests_row_is_warmup(t, r)) continue;
      rows[n].bytes = (double)t->rows[r].bytes;
      rows[n].measured_us = meas;
      rows[n].op = t->op;
      rows[n].pl = pl;
      rows[n].gpus_per_thread = sc__comm_file_gpus_per_thread(t);
      n++;
    }
  }
  if (!rc && !n) rc = sc__error(ctx, SC_EINVAL, "no usable rows: every file has a single rank");
  if (rc) {
    sc__free(ctx, rows, total * sizeof *rows);
    return rc;
  }

  fit F;
  memset(&F, 0, sizeof F);
  F.topo = &m->topo;
  F.base = m->params;
  F.rows = rows;
  F.nrows = n;
  double x[SC_COMM_PARAM_COUNT];
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++) {
    if (!sc__nccl_keys[i].fitted || (m->fit_only && !m->fit_key[i])) continue;
    const sc_calib_key *d = &sc__nccl_keys[i];
    F.idx[F.k] = i;
    F.x0[F.k] = to_coord(d, d->prior);
    x[F.k] = to_coord(d, *(const double *)((const char *)&m->params + d->member));
    F.k++;
  }
  double best = objective(&F, x);
  /* Nelder-Mead collapses early in a dozen dimensions: restart from the best
   * point with a fresh simplex until a restart no longer improves */
  for (int r = 0; r < NM_RESTARTS; r++) {
    double f = nelder_mead(&F, x, r % 2 ? 0.3 : 1.0);
    int stalled = f > best - 1e-9 * fabs(best);
    best = fmin(best, f);
    if (stalled && r >= 2) break;
  }
  apply(&F, x, &m->params);
  fit_setup(m, files, nfiles);

  if (mape_pct) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
      double t = sc__comm_bench_time_us(&m->topo, &m->params, rows[i].op, rows[i].bytes,
                                        &rows[i].pl, rows[i].gpus_per_thread, NULL, NULL);
      sum += fabs(t - rows[i].measured_us) / rows[i].measured_us;
    }
    *mape_pct = 100.0 * sum / (double)n;
  }
  sc__free(ctx, rows, total * sizeof *rows);
  return SC_OK;
}
