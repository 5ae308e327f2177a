/*
 * calib_int.h: the calibration key table (calib_keys.h) compiled into one
 * array: every key of the `calibration:` section with its bounds, unit,
 * meaning and where it lands in sc_cost_params. Config loading, --set, the
 * docs, the collective model's fit and the calibration writers all use it.
 */
#ifndef SC_CALIB_INT_H
#define SC_CALIB_INT_H

#include "input/calib_keys.h"

#include "base/sc_int.h"

#include <stddef.h>

/* Which struct a key's member belongs to. */
enum { SC_CK_COST = 0, SC_CK_NCCL, SC_CK_INTERF };

typedef struct sc_calib_key {
  const char *key;     /* "gemm_eff", "nccl_ll_frac", "interference_w_gemm" */
  int group;           /* SC_CK_* */
  size_t offset;       /* of the double in sc_cost_params */
  size_t member;       /* of the double in its group's struct (sc_cost_params,
                          sc_nccl_params or sc_interf_coefs) */
  double lo, hi;       /* bounds of an explicit value (0 = default is always accepted) */
  int fitted;          /* nccl keys: moved by `calibrate --nccl-tests` */
  double prior;        /* nccl keys: centre of the fit's weak pull */
  const char *unit, *doc;
} sc_calib_key;

#define SC_X_ONE1(k, lo, hi, u, d) +1
#define SC_X_ONE2(k, m, lo, hi, f, p, u, d) +1
#define SC_X_ONE3(n, d) +1
enum {
  SC_CALIB_COST_COUNT = 0 SC_CALIB_KEYS(SC_X_ONE1),
  SC_NCCL_KEY_COUNT = 0 SC_NCCL_KEYS(SC_X_ONE2),
  SC_INTERF_NFEAT = 0 SC_INTERF_FEATURES(SC_X_ONE3),
  SC_CALIB_NCCL_FIRST = SC_CALIB_COST_COUNT,
  SC_CALIB_INTERF_FIRST = SC_CALIB_COST_COUNT + SC_NCCL_KEY_COUNT,
  SC_CALIB_KEY_COUNT = SC_CALIB_COST_COUNT + SC_NCCL_KEY_COUNT + SC_INTERF_NFEAT
};
#undef SC_X_ONE1
#undef SC_X_ONE2
#undef SC_X_ONE3

/* Feature indices of the learned interference model: SC_IF_gemm, ... */
enum {
#define SC_X_ENUM(name, doc) SC_IF_##name,
  SC_INTERF_FEATURES(SC_X_ENUM)
#undef SC_X_ENUM
  SC_IF_END_
};

extern const sc_calib_key sc__calib_keys[SC_CALIB_KEY_COUNT];

/* The NCCL model's keys: sc__nccl_keys[i] is sc__calib_keys[SC_CALIB_NCCL_FIRST + i]. */
#define sc__nccl_keys (sc__calib_keys + SC_CALIB_NCCL_FIRST)

/* Index of a key ("nccl_ll_frac") in sc__calib_keys, or -1. */
int sc__calib_key_find(const char *key);

/* Checks value v for key i: SC_OK (0 = default, or within [lo, hi]) or
 * SC_EINVAL with "calibration.KEY: V out of range [LO, HI]" in err. */
int sc__calib_key_check(int i, double v, char *err, size_t errn);

/* The value of key i in p / where it goes. */
static inline double *sc__calib_slot(sc_cost_params *p, int i) {
  return (double *)((char *)p + sc__calib_keys[i].offset);
}
static inline double sc__calib_get(const sc_cost_params *p, int i) {
  return *(const double *)((const char *)p + sc__calib_keys[i].offset);
}

/* The learned model's coefficients as an array in feature order. */
void sc__interf_coefs_to_array(const sc_interf_coefs *c, double *w);
void sc__interf_coefs_from_array(const double *w, sc_interf_coefs *c);

#endif /* SC_CALIB_INT_H */
