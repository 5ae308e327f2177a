/*
 * optim.c: Nelder-Mead, the one minimiser behind both calibrations (case
 * files and nccl-tests logs). See optim_int.h for the contract.
 */
#include "base/optim_int.h"

#include <math.h>
#include <string.h>

double sc__nelder_mead(sc_objective_fn f, void *ud, int k, double *x, const sc_nm_opts *o,
                       long *evals) {
  double v[SC_NM_MAX_DIM + 1][SC_NM_MAX_DIM], fv[SC_NM_MAX_DIM + 1];
  long n = 0;
  if (k > SC_NM_MAX_DIM) k = SC_NM_MAX_DIM;
  for (int i = 0; i <= k; i++) {
    memcpy(v[i], x, sizeof(double) * (size_t)k);
    if (i) v[i][i - 1] += o->step;
    fv[i] = f(ud, v[i]);
    n++;
  }
  while (n < o->max_evals && !(o->stop && *o->stop)) {
    /* order: best first (insertion sort keeps ties stable) */
    for (int i = 1; i <= k; i++)
      for (int m = i; m > 0 && fv[m] < fv[m - 1]; m--) {
        double t = fv[m];
        fv[m] = fv[m - 1], fv[m - 1] = t;
        for (int j = 0; j < k; j++) {
          t = v[m][j];
          v[m][j] = v[m - 1][j], v[m - 1][j] = t;
        }
      }
    double size = 0;
    for (int i = 1; i <= k; i++)
      for (int j = 0; j < k; j++) size = fmax(size, fabs(v[i][j] - v[0][j]));
    if (fv[k] - fv[0] <= o->ftol * (fabs(fv[0]) + o->fscale) && size <= o->xtol) break;
    double c[SC_NM_MAX_DIM], xr[SC_NM_MAX_DIM], xe[SC_NM_MAX_DIM];
    for (int j = 0; j < k; j++) {
      c[j] = 0;
      for (int i = 0; i < k; i++) c[j] += v[i][j] / (double)k;
    }
    for (int j = 0; j < k; j++) xr[j] = c[j] + (c[j] - v[k][j]);
    double fr = f(ud, xr);
    n++;
    if (fr < fv[0]) {
      for (int j = 0; j < k; j++) xe[j] = c[j] + 2.0 * (c[j] - v[k][j]);
      double fe = f(ud, xe);
      n++;
      memcpy(v[k], fe < fr ? xe : xr, sizeof(double) * (size_t)k);
      fv[k] = fe < fr ? fe : fr;
      continue;
    }
    if (fr < fv[k - 1]) {
      memcpy(v[k], xr, sizeof(double) * (size_t)k);
      fv[k] = fr;
      continue;
    }
    /* contraction: outside if the reflection improved on the worst */
    int outside = fr < fv[k];
    for (int j = 0; j < k; j++)
      xe[j] = outside ? c[j] + 0.5 * (xr[j] - c[j]) : c[j] + 0.5 * (v[k][j] - c[j]);
    double fc = f(ud, xe);
    n++;
    if (fc < (outside ? fr : fv[k])) {
      memcpy(v[k], xe, sizeof(double) * (size_t)k);
      fv[k] = fc;
      continue;
    }
    for (int i = 1; i <= k; i++) { /* shrink towards the best */
      for (int j = 0; j < k; j++) v[i][j] = v[0][j] + 0.5 * (v[i][j] - v[0][j]);
      fv[i] = f(ud, v[i]);
      n++;
    }
  }
  int best = 0;
  for (int i = 1; i <= k; i++)
    if (fv[i] < fv[best]) best = i;
  memcpy(x, v[best], sizeof(double) * (size_t)k);
  if (evals) *evals = n;
  return fv[best];
}
