/*
 * optim_int.h: the derivative-free minimiser the calibrations share
 * (`calibrate --cases`, analysis/calibrate.c; `calibrate --nccl-tests`,
 * analysis/comm_fit.c): Nelder-Mead over an unbounded coordinate vector (the
 * callers map bounded parameters onto it).
 */
#ifndef SC_OPTIM_INT_H
#define SC_OPTIM_INT_H

#include <stddef.h>

/* The function to minimise at x[0..k). */
typedef double (*sc_objective_fn)(void *ud, const double *x);

#define SC_NM_MAX_DIM 32

typedef struct sc_nm_opts {
  double step;      /* initial simplex: x plus step along each axis */
  long max_evals;   /* objective evaluations at most (the start simplex counts) */
  /* Converged when f(worst) - f(best) <= ftol * (|f(best)| + fscale) and every
   * vertex lies within xtol of the best in every coordinate. */
  double ftol, fscale, xtol;
  const int *stop;  /* when non-NULL and *stop != 0: stop at the next iteration */
} sc_nm_opts;

/* Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5) from
 * x (k <= SC_NM_MAX_DIM coordinates); x receives the best vertex and the
 * return value is its objective. Deterministic: vertices are ordered by an
 * insertion sort, so ties keep the earlier vertex. *evals (may be NULL) gets
 * the number of evaluations. */
double sc__nelder_mead(sc_objective_fn f, void *ud, int k, double *x, const sc_nm_opts *o,
                       long *evals);

#endif /* SC_OPTIM_INT_H */
