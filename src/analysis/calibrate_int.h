/*
 * calibrate_int.h: what calibrate.c needs from the compute defaults in
 * cost.c: the uncalibrated, kernel-data values of the compute parameters,
 * which are the start and prior centre of a fit (the shipped defaults are the
 * result of that fit on the calibration rows; see validation/calibration/).
 * Not API.
 */
#ifndef SC_CALIBRATE_INT_H
#define SC_CALIBRATE_INT_H

#include "base/sc_int.h"

/* Overwrites the compute fields of *p (gemm_eff, gemm_dim_half, attn_eff,
 * mem_eff, kernel_overhead_us) with the values derived from kernel
 * measurements alone (validation/kernels/), before any step-time fit. Other
 * fields are left alone. */
void sc__cost_compute_priors(const sc_hw *hw, sc_cost_params *p);

#endif /* SC_CALIBRATE_INT_H */
