/*
 * interf_fit.c: learning the `learned` interference model: the robust
 * hierarchical ridge fit over the pairs that analysis/interf_kineto.c takes
 * from traces, its held-out evaluation (by kernel, by trace) next to the
 * constant table and no interference, and the report and calibration YAML of
 * `stepcast calibrate --interference` (docs/INTERFERENCE.md).
 */
#include "cost/interf_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ fit */

/* Solves A x = b for symmetric positive definite A (n x n, row-major) by
 * Cholesky in place. Returns 0, or -1 when A is not positive definite. */
static int cholesky_solve(double *A, double *b, int n) {
  for (int j = 0; j < n; j++) {
    double d = A[j * n + j];
    for (int k = 0; k < j; k++) d -= A[j * n + k] * A[j * n + k];
    if (!(d > 0)) return -1;
    d = sqrt(d);
    A[j * n + j] = d;
    for (int i = j + 1; i < n; i++) {
      double v = A[i * n + j];
      for (int k = 0; k < j; k++) v -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = v / d;
    }
  }
  for (int i = 0; i < n; i++) { /* L y = b */
    double v = b[i];
    for (int k = 0; k < i; k++) v -= A[i * n + k] * b[k];
    b[i] = v / A[i * n + i];
  }
  for (int i = n - 1; i >= 0; i--) { /* L^T x = y */
    double v = b[i];
    for (int k = i + 1; k < n; k++) v -= A[k * n + i] * b[k];
    b[i] = v / A[i * n + i];
  }
  return 0;
}

/* The pooled intercept is set by every pair: its pull towards 0 only keeps
 * the system definite (so a class without pairs gets the mean of the
 * others' intercepts, not a fraction of it). */
#define POOLED_RIDGE 1e-6

int sc__interf_fit(sc_ctx *ctx, const sc_interf_sample *s, size_t n, double ridge, double huber,
                   double *w) {
  /* Unknowns: the SC_INTERF_NFEAT coefficients, with the class intercepts
   * as deviations from the pooled intercept m, then m. */
  enum { F = SC_INTERF_NFEAT, C = SC_OP_OPTIMIZER + 1, U = F + 1 };
  if (!n) return sc__error(ctx, SC_EINVAL, "interference fit: no training pairs");
  if (!(ridge > 0)) ridge = 1e-9;
  if (!(huber > 0)) huber = 0.05;
  double *z = sc__malloc(ctx, n * U * sizeof(double)); /* d e_i / d unknowns */
  double *t = sc__malloc(ctx, n * sizeof(double));     /* -e_i at w = 0 */
  double *wt = sc__malloc(ctx, n * sizeof(double));
  if (!z || !t || !wt) {
    sc__free(ctx, z, z ? n * U * sizeof(double) : 0);
    sc__free(ctx, t, t ? n * sizeof(double) : 0);
    sc__free(ctx, wt, wt ? n * sizeof(double) : 0);
    return SC_ENOMEM;
  }
  /* e_i = alone_i r_i / dur_i * (w . x_i) - (1 - alone_i / dur_i): linear
   * in w. Pairs without two positive durations weigh nothing. */
  for (size_t i = 0; i < n; i++) {
    double *zi = z + i * U;
    int ok = s[i].alone_ns > 0 && s[i].dur_ns > 0;
    double c = ok ? s[i].alone_ns * s[i].r / s[i].dur_ns : 0;
    sc__interf_features(s[i].kind, s[i].alone_ns, &s[i].comm, zi);
    zi[F] = 0;
    for (int k = 0; k < F; k++) {
      zi[k] *= c;
      if (k < C) zi[F] += zi[k];
    }
    t[i] = ok ? 1.0 - s[i].alone_ns / s[i].dur_ns : 0;
    wt[i] = ok ? 1.0 : 0.0;
  }
  double v[U] = {0};
  int rc = SC_OK;
  /* Iteratively reweighted least squares for the Huber loss: weight 1 inside
   * the scale, scale/|residual| outside. Stops when the weights settle. */
  for (int it = 0; it < 100; it++) {
    double A[U * U], b[U];
    for (int k = 0; k < U; k++) {
      b[k] = 0;
      for (int l = 0; l < U; l++) A[k * U + l] = 0;
      A[k * U + k] = k == F ? POOLED_RIDGE * ridge : ridge;
    }
    for (size_t i = 0; i < n; i++) {
      const double *zi = z + i * U;
      if (wt[i] == 0) continue;
      for (int k = 0; k < U; k++) {
        if (zi[k] == 0) continue;
        b[k] += wt[i] * zi[k] * t[i];
        for (int l = 0; l < U; l++) A[k * U + l] += wt[i] * zi[k] * zi[l];
      }
    }
    if (cholesky_solve(A, b, U)) {
      rc = sc__error(ctx, SC_EINVAL, "interference fit: singular system");
      break;
    }
    memcpy(v, b, sizeof v);
    double change = 0;
    for (size_t i = 0; i < n; i++) {
      if (!(s[i].alone_ns > 0 && s[i].dur_ns > 0)) continue;
      double pred = 0;
      for (int k = 0; k < U; k++) pred += z[i * U + k] * v[k];
      double res = fabs(pred - t[i]);
      double nw = res <= huber ? 1.0 : huber / res;
      change = fmax(change, fabs(nw - wt[i]));
      wt[i] = nw;
    }
    if (change < 1e-9) break;
  }
  for (int k = 0; k < F; k++) w[k] = v[k] + (k < C ? v[F] : 0);
  sc__free(ctx, z, n * U * sizeof(double));
  sc__free(ctx, t, n * sizeof(double));
  sc__free(ctx, wt, n * sizeof(double));
  return rc;
}

/* ------------------------------------------------------------ evaluation */

/* Accuracy of predicted durations pred[i] against the samples. */
static void evaluate(const sc_interf_sample *s, const double *pred, size_t n, sc_interf_eval *e) {
  memset(e, 0, sizeof *e);
  double sum_pred = 0, sum_meas = 0, ape = 0;
  int64_t within[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    double err = fabs(pred[i] - s[i].dur_ns) / s[i].dur_ns;
    ape += err;
    for (int k = 0; k < 3; k++) within[k] += err <= 0.05 * (k + 1) + 1e-12;
    sum_pred += pred[i];
    sum_meas += s[i].dur_ns;
  }
  e->n = (int64_t)n;
  if (!n) return;
  for (int k = 0; k < 3; k++) e->within_pct[k] = 100.0 * (double)within[k] / (double)n;
  e->mape_pct = 100.0 * ape / (double)n;
  e->sum_err_pct = 100.0 * (sum_pred - sum_meas) / sum_meas;
}

/* Held out by default: leave one kernel out up to this many kernels (each
 * costs a fit), else DEFAULT_FOLDS folds by name hash. */
#define LOKO_MAX_KERNELS 200
#define DEFAULT_FOLDS 10

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* How pairs are grouped for held-out prediction. */
enum { SPLIT_KERNEL, SPLIT_FOLD, SPLIT_TRACE };

/* Group of a pair: its kernel, its kernel's fold (k folds by name hash) or
 * its trace. */
static uint64_t group_of(const sc_interf_sample *s, int split, uint64_t k) {
  switch (split) {
  case SPLIT_KERNEL: return s->key;
  case SPLIT_FOLD: return s->key % k;
  default: return (uint64_t)(uint32_t)s->trace;
  }
}

/* The models the held-out splits compare. */
enum { MODEL_LINEAR, MODEL_TREE, MODEL_CONSTANT };

typedef struct fit_setup {
  double ridge, huber;          /* linear */
  sc_interf_tree_params tree;   /* tree */
} fit_setup;

/* Fits model `m` on tr[0..nt) and writes its predicted durations of the
 * pairs of s in group g (all pairs when all is set) into pred. */
static int fit_predict(sc_ctx *ctx, int m, const fit_setup *fs, const sc_interf_sample *tr,
                       size_t nt, const sc_interf_sample *s, size_t n, int split, uint64_t k,
                       uint64_t g, int all, double *pred) {
  double w[SC_INTERF_NFEAT] = {0}, cs[SC_OP_OPTIMIZER + 1] = {0};
  sc_interf_tree *t = NULL;
  int rc = SC_OK;
  if (nt) {
    if (m == MODEL_LINEAR) rc = sc__interf_fit(ctx, tr, nt, fs->ridge, fs->huber, w);
    else if (m == MODEL_TREE) rc = sc__interf_tree_train(ctx, tr, nt, &fs->tree, &t);
    else rc = sc__interf_constant_fit(ctx, tr, nt, cs);
  }
  for (size_t i = 0; !rc && i < n; i++) {
    if (!all && group_of(&s[i], split, k) != g) continue;
    double v = 0;
    if (m == MODEL_LINEAR) v = sc__interf_learned_s(w, s[i].kind, s[i].alone_ns, &s[i].comm);
    else if (m == MODEL_TREE) v = t ? sc__interf_tree_s(t, s[i].kind, s[i].alone_ns, &s[i].comm) : 0;
    else if (s[i].kind >= SC_OP_GEMM && s[i].kind <= SC_OP_OPTIMIZER) v = cs[s[i].kind];
    pred[i] = s[i].alone_ns * (1.0 + s[i].r * v);
  }
  sc__interf_tree_free(ctx, t);
  return rc;
}

/* Predicts the pairs of every group by model m fitted on the pairs of the
 * other groups (none: s = 0). groups[0..ng) are the distinct groups; tr is
 * scratch for n pairs. */
static int predict_held_out(sc_ctx *ctx, int m, const fit_setup *fs, const sc_interf_sample *s,
                            size_t n, int split, uint64_t k, const uint64_t *groups, size_t ng,
                            sc_interf_sample *tr, double *pred) {
  for (size_t g = 0; g < ng; g++) {
    size_t nt = 0;
    for (size_t i = 0; i < n; i++)
      if (group_of(&s[i], split, k) != groups[g]) tr[nt++] = s[i];
    int rc = fit_predict(ctx, m, fs, tr, nt, s, n, split, k, groups[g], 0, pred);
    if (rc) return rc;
  }
  return SC_OK;
}

/* ------------------------------------------------------------ constant fit */

typedef struct wval {
  double v, w;
} wval;

static int cmp_wval(const void *a, const void *b) {
  double x = ((const wval *)a)->v, y = ((const wval *)b)->v;
  return x < y ? -1 : x > y;
}

/* Weighted median of v[0..n) (sorted in place): the smallest value whose
 * cumulative weight reaches half the total. */
static double weighted_median(wval *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_wval);
  double tot = 0, acc = 0;
  for (size_t i = 0; i < n; i++) tot += v[i].w;
  for (size_t i = 0; i < n; i++)
    if ((acc += v[i].w) >= 0.5 * tot) return v[i].v;
  return v[n - 1].v;
}

int sc__interf_constant_fit(sc_ctx *ctx, const sc_interf_sample *smp, size_t n,
                            double s[SC_OP_OPTIMIZER + 1]) {
  wval *v = sc__malloc(ctx, (n ? n : 1) * sizeof *v);
  if (!v) return SC_ENOMEM;
  /* s_i = (dur / alone - 1) / r with weight alone r / dur: the weighted
   * absolute deviation of s is the summed |relative duration error|. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (smp[i].alone_ns > 0 && smp[i].dur_ns > 0 && smp[i].r > 0)
      v[m++] = (wval){(smp[i].dur_ns / smp[i].alone_ns - 1.0) / smp[i].r,
                      smp[i].alone_ns * smp[i].r / smp[i].dur_ns};
  double pooled = weighted_median(v, m);
  for (int c = SC_OP_GEMM; c <= SC_OP_OPTIMIZER; c++) {
    size_t mc = 0;
    for (size_t i = 0; i < n; i++)
      if (smp[i].kind == c && smp[i].alone_ns > 0 && smp[i].dur_ns > 0 && smp[i].r > 0)
        v[mc++] = (wval){(smp[i].dur_ns / smp[i].alone_ns - 1.0) / smp[i].r,
                         smp[i].alone_ns * smp[i].r / smp[i].dur_ns};
    s[c] = mc ? weighted_median(v, mc) : pooled;
    if (s[c] < 0) s[c] = 0; /* a slowdown, never a speed-up */
  }
  sc__free(ctx, v, (n ? n : 1) * sizeof *v);
  return SC_OK;
}

/* Writes the distinct groups of the pairs, ascending, to groups (room for n);
 * returns their number. */
static size_t distinct_groups(const sc_interf_sample *s, size_t n, int split, uint64_t k,
                              uint64_t *groups) {
  size_t ng = 0;
  for (size_t i = 0; i < n; i++) groups[i] = group_of(&s[i], split, k);
  qsort(groups, n, sizeof *groups, cmp_u64);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || groups[i] != groups[i - 1]) groups[ng++] = groups[i];
  return ng;
}

/* Boosting defaults: few shallow trees, since the shipped data sets hold a
 * few hundred pairs of a few dozen kernels (held-out figures in
 * docs/INTERFERENCE.md were measured with these). */
#define TREE_ROUNDS 60
#define TREE_DEPTH 3
#define TREE_ETA 0.1
#define TREE_MIN_CHILD_WEIGHT 5.0
#define TREE_LAMBDA 1.0

int sc_interf_fit(sc_interf_data *d, const sc_interf_fit_options *opt, sc_interf_fit_result *out) {
  if (!d || !out) return SC_EINVAL;
  sc_ctx *ctx = sc__interf_data_ctx(d);
  size_t n;
  const sc_interf_sample *s = sc__interf_data_samples(d, &n);
  memset(out, 0, sizeof *out);
  out->nfeat = SC_INTERF_NFEAT;
  out->ridge = opt && opt->ridge > 0 ? opt->ridge : 2.0;
  out->huber = opt && opt->huber > 0 ? opt->huber : 0.05;
  out->folds = opt && (opt->folds > 1 || opt->folds == -1) ? opt->folds : 0;
  out->tree_rounds = opt && opt->tree_rounds > 0 ? opt->tree_rounds : TREE_ROUNDS;
  out->tree_depth = opt && opt->tree_depth > 0 ? opt->tree_depth : TREE_DEPTH;
  out->tree_eta = opt && opt->tree_eta > 0 ? opt->tree_eta : TREE_ETA;
  out->tree_min_child = opt && opt->tree_min_child > 0 ? opt->tree_min_child : TREE_MIN_CHILD_WEIGHT;
  fit_setup fs = {out->ridge, out->huber,
                  {out->tree_rounds, out->tree_depth, out->tree_eta, out->tree_min_child, TREE_LAMBDA}};
  if (!n) return sc__error(ctx, SC_EINVAL, "interference fit: no training pairs in the traces");
  sc_cost_params table; /* the shipped constant table, for comparison */
  memset(&table, 0, sizeof table);
  sc__interf_defaults(&table);
  double *pred = sc__malloc(ctx, n * sizeof *pred);
  sc_interf_sample *tr = sc__malloc(ctx, n * sizeof *tr);
  uint64_t *keys = sc__malloc(ctx, n * sizeof *keys);
  int rc = pred && tr && keys ? SC_OK : SC_ENOMEM;
  if (!rc) out->kernels = (int64_t)distinct_groups(s, n, SPLIT_KERNEL, 0, keys);
  /* Held out by kernel (name + launch shape): with at most
   * LOKO_MAX_KERNELS kernels and no fold count given, each kernel is
   * predicted by the model fitted on all the others (leave one kernel out:
   * no dependence on how a hash happens to deal a few dozen kernels into
   * folds); otherwise kernels are dealt into folds by name hash. */
  static const int models[3] = {MODEL_LINEAR, MODEL_TREE, MODEL_CONSTANT};
  sc_interf_eval *by_kernel[3] = {&out->learned, &out->tree, &out->constant_fit};
  sc_interf_eval *by_trace[3] = {&out->learned_by_trace, &out->tree_by_trace,
                                 &out->constant_fit_by_trace};
  sc_interf_eval *in_sample[3] = {&out->learned_fit, &out->tree_fit, &out->constant_fit_in};
  if (!rc && out->folds != -1) {
    int split = out->folds > 1 ? SPLIT_FOLD : SPLIT_KERNEL;
    if (split == SPLIT_KERNEL && out->kernels > LOKO_MAX_KERNELS) {
      split = SPLIT_FOLD;
      out->folds = DEFAULT_FOLDS;
    }
    uint64_t k = split == SPLIT_FOLD ? (uint64_t)out->folds : 0;
    size_t ng = distinct_groups(s, n, split, k, keys);
    if (split == SPLIT_KERNEL) {
      out->folds = (int)ng;
      out->leave_one_out = 1;
    }
    for (int m = 0; !rc && m < 3; m++) {
      rc = predict_held_out(ctx, models[m], &fs, s, n, split, k, keys, ng, tr, pred);
      if (!rc) evaluate(s, pred, n, by_kernel[m]);
    }
  }
  /* Leave one trace out, a harder split (another model, job and NCCL setup). */
  if (!rc) {
    size_t ng = distinct_groups(s, n, SPLIT_TRACE, 0, keys);
    out->traces = (int64_t)ng;
    for (int m = 0; !rc && out->folds != -1 && ng > 1 && m < 3; m++) {
      rc = predict_held_out(ctx, models[m], &fs, s, n, SPLIT_TRACE, 0, keys, ng, tr, pred);
      if (!rc) evaluate(s, pred, n, by_trace[m]);
    }
  }
  /* What ships: the same fits on every pair. */
  double w[SC_INTERF_NFEAT];
  if (!rc) rc = sc__interf_fit(ctx, s, n, out->ridge, out->huber, w);
  if (!rc) sc__interf_coefs_from_array(w, &out->w);
  if (!rc) rc = sc__interf_constant_fit(ctx, s, n, out->constant_s);
  for (int m = 0; !rc && m < 3; m++) {
    rc = fit_predict(ctx, models[m], &fs, s, n, s, n, SPLIT_KERNEL, 0, 0, 1, pred);
    if (!rc) evaluate(s, pred, n, in_sample[m]);
  }
  if (!rc && opt && opt->model == SC_INTERF_MODEL_TREE)
    rc = sc__interf_tree_train(ctx, s, n, &fs.tree, &out->tree_model);
  if (!rc) {
    for (size_t i = 0; i < n; i++)
      pred[i] = s[i].alone_ns * (1.0 + s[i].r * sc__interf_constant_s(&table, s[i].kind));
    evaluate(s, pred, n, &out->constant);
    for (size_t i = 0; i < n; i++) pred[i] = s[i].alone_ns;
    evaluate(s, pred, n, &out->none);
  }
  sc__free(ctx, pred, pred ? n * sizeof *pred : 0);
  sc__free(ctx, tr, tr ? n * sizeof *tr : 0);
  sc__free(ctx, keys, keys ? n * sizeof *keys : 0);
  if (rc) sc_interf_fit_result_release(out);
  return rc;
}

void sc_interf_fit_result_release(sc_interf_fit_result *r) {
  if (!r || !r->tree_model) return;
  sc__interf_tree_free(sc__interf_tree_ctx(r->tree_model), r->tree_model);
  r->tree_model = NULL;
}

int sc_interf_write_tree(const sc_interf_fit_result *r, sc_write_fn w, void *ud) {
  if (!r || !r->tree_model || !w) return SC_EINVAL;
  return sc__interf_tree_write(sc__interf_tree_ctx(r->tree_model), r->tree_model, w, ud);
}

/* ------------------------------------------------------------ output */

static int write_eval(sc_write_fn w, void *ud, const char *prefix, const char *what,
                      const sc_interf_eval *e) {
  return sc__writef(w, ud,
                    "%s%-34s %6lld  %5.1f %5.1f %5.1f  %7.1f  %+7.1f\n", prefix, what,
                    (long long)e->n, e->within_pct[0], e->within_pct[1], e->within_pct[2],
                    e->mape_pct, e->sum_err_pct);
}

static int write_report(const sc_interf_fit_result *r, const sc_interf_stats *st, sc_write_fn w,
                        void *ud, const char *prefix) {
  int rc = 0;
  if (st)
    SC_WRITE(rc, sc__writef(w, ud,
                     "%straces %lld: %lld compute kernels, %lld NCCL kernels, %lld overlapped "
                     "-> %lld pairs\n%s  dropped: %lld short (< min_kernel_us), %lld without "
                     "steady runs alone, %lld overlapped < min_overlap, %lld another shape\n",
                     prefix, (long long)st->traces, (long long)st->kernels,
                     (long long)st->nccl_kernels, (long long)st->overlapped,
                     (long long)st->pairs, prefix, (long long)st->dropped_short,
                     (long long)st->dropped_alone, (long long)st->dropped_overlap,
                     (long long)st->dropped_shape));
  SC_WRITE(rc, sc__writef(w, ud,
                   "%sfit: T = T_alone * (1 + r * s), Huber loss (scale %.3g) of the relative "
                   "error of T, ridge %.3g: class intercepts towards the pooled one, the other "
                   "coefficients towards 0\n",
                   prefix, r->huber, r->ridge));
  SC_WRITE(rc, sc__writef(w, ud,
                   "%stree: XGBoost, %d trees of depth <= %d, eta %.3g, min child weight %.3g, "
                   "absolute error of s weighted by T_alone r / T; constant refit: per class "
                   "the weighted median s\n",
                   prefix, r->tree_rounds, r->tree_depth, r->tree_eta, r->tree_min_child));
  SC_WRITE(rc, sc__writef(w, ud, "%s%-34s %6s  %5s %5s %5s  %7s  %7s\n", prefix,
                   "overlapped kernel durations", "pairs", "<=5%", "<=10%", "<=15%", "MAPE %",
                   "sum %"));
  if (r->learned.n) {
    char what[64];
    if (r->leave_one_out) snprintf(what, sizeof what, "learned, held-out kernels (each)");
    else snprintf(what, sizeof what, "learned, held-out kernels (%d folds)", r->folds);
    SC_WRITE(rc, write_eval(w, ud, prefix, what, &r->learned));
  }
  if (r->learned_by_trace.n) {
    char what[64];
    snprintf(what, sizeof what, "learned, held-out traces (%lld)", (long long)r->traces);
    SC_WRITE(rc, write_eval(w, ud, prefix, what, &r->learned_by_trace));
  }
  SC_WRITE(rc, write_eval(w, ud, prefix, "learned, in sample", &r->learned_fit));
  if (r->tree.n) SC_WRITE(rc, write_eval(w, ud, prefix, "tree, held-out kernels", &r->tree));
  if (r->tree_by_trace.n)
    SC_WRITE(rc, write_eval(w, ud, prefix, "tree, held-out traces", &r->tree_by_trace));
  SC_WRITE(rc, write_eval(w, ud, prefix, "tree, in sample", &r->tree_fit));
  if (r->constant_fit.n)
    SC_WRITE(rc, write_eval(w, ud, prefix, "constant refit, held-out kernels", &r->constant_fit));
  if (r->constant_fit_by_trace.n)
    SC_WRITE(rc, write_eval(w, ud, prefix, "constant refit, held-out traces",
                            &r->constant_fit_by_trace));
  SC_WRITE(rc, write_eval(w, ud, prefix, "constant refit, in sample", &r->constant_fit_in));
  SC_WRITE(rc, write_eval(w, ud, prefix, "constant table (shipped)", &r->constant));
  SC_WRITE(rc, write_eval(w, ud, prefix, "no interference (s = 0)", &r->none));
  if (r->learned.n && r->leave_one_out)
    SC_WRITE(rc, sc__writef(w, ud,
                     "%sheld-out kernels: each of the %lld kernels (name + grid + block) is "
                     "predicted by the model fitted on the pairs of all the others\n",
                     prefix, (long long)r->kernels));
  else if (r->learned.n)
    SC_WRITE(rc, sc__writef(w, ud,
                     "%sheld-out kernels: the %lld kernels (name + grid + block) are split in %d "
                     "folds by name hash; each pair is predicted by the model fitted on the other "
                     "folds\n",
                     prefix, (long long)r->kernels, r->folds));
  if (r->learned_by_trace.n)
    SC_WRITE(rc, sc__writef(w, ud,
                     "%sheld-out traces: each pair is predicted by the model fitted on the pairs "
                     "of the other traces\n",
                     prefix));
  return rc;
}

int sc_interf_write_report(const sc_interf_fit_result *r, const sc_interf_stats *st,
                           sc_write_fn w, void *ud) {
  if (!r || !w) return SC_EINVAL;
  return write_report(r, st, w, ud, "");
}

int sc_interf_write_calibration(const sc_interf_fit_result *r, const sc_interf_stats *st,
                                const char *note, sc_write_fn w, void *ud) {
  if (!r || !w) return SC_EINVAL;
  int rc = 0;
  SC_WRITE(rc, sc__writef(w, ud, "# stepcast calibration: learned interference model "
                          "(simulation.interference: learned, docs/INTERFERENCE.md).\n"));
  for (const char *s = note; s && *s;) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    SC_WRITE(rc, sc__writef(w, ud, "# %.*s\n", (int)len, s));
    s += len + (e ? 1 : 0);
  }
  SC_WRITE(rc, write_report(r, st, w, ud, "# "));
  SC_WRITE(rc, sc__writef(w, ud, "calibration:\n"));
  /* The constant table refitted on the same pairs (keys must be positive:
   * a class that is not slowed gets the smallest value the key takes). */
  static const char *const table_keys[5] = {"interference_gemm", "interference_attn",
                                             "interference_elementwise", "interference_norm",
                                             "interference_optimizer"};
  for (int k = 0; k < 5; k++) {
    double lo = sc__calib_keys[sc__calib_key_find(table_keys[k])].lo;
    SC_WRITE(rc, sc__writef(w, ud, "  %s: %.6g\n", table_keys[k],
                            r->constant_s[k] > lo ? r->constant_s[k] : lo));
  }
  if (r->tree_file[0]) SC_WRITE(rc, sc__writef(w, ud, "  interference_tree: %s\n", r->tree_file));
  double c[SC_INTERF_NFEAT];
  sc__interf_coefs_to_array(&r->w, c);
  for (int i = 0; i < r->nfeat && i < SC_INTERF_NFEAT; i++)
    SC_WRITE(rc, sc__writef(w, ud, "  %s: %.6g\n",
                            sc__calib_keys[SC_CALIB_INTERF_FIRST + i].key, c[i]));
  return rc;
}
