/*
 * calib.c: compiles the calibration key table (calib_keys.h) into
 * sc__calib_keys and checks at compile time that every key names a member of
 * sc_cost_params and that every member of the NCCL and interference structs
 * has a key.
 */
#include "input/calib_int.h"

#include <stdio.h>

/* clang-format off */
const sc_calib_key sc__calib_keys[SC_CALIB_KEY_COUNT] = {
#define SC_X_COST(k, lo, hi, u, d) \
  {#k, SC_CK_COST, offsetof(sc_cost_params, k), offsetof(sc_cost_params, k), lo, hi, 0, 0, u, d},
    SC_CALIB_KEYS(SC_X_COST)
#undef SC_X_COST
#define SC_X_NCCL(k, m, lo, hi, f, p, u, d)                                                     \
  {#k, SC_CK_NCCL, offsetof(sc_cost_params, nccl) + offsetof(sc_nccl_params, m),                \
   offsetof(sc_nccl_params, m), lo, hi, f, p, u, d},
    SC_NCCL_KEYS(SC_X_NCCL)
#undef SC_X_NCCL
#define SC_X_INTERF(n, d)                                                                       \
  {"interference_w_" #n, SC_CK_INTERF,                                                          \
   offsetof(sc_cost_params, interference_w) + offsetof(sc_interf_coefs, n),                     \
   offsetof(sc_interf_coefs, n), SC_INTERF_COEF_LO, SC_INTERF_COEF_HI, 0, 0, "", d},
    SC_INTERF_FEATURES(SC_X_INTERF)
#undef SC_X_INTERF
};
/* clang-format on */

/* Every member of the two structs has a key (members are all doubles; a key
 * naming a missing member does not compile above). */
_Static_assert(sizeof(sc_nccl_params) == SC_NCCL_KEY_COUNT * sizeof(double),
               "sc_nccl_params and SC_NCCL_KEYS disagree");
_Static_assert(sizeof(sc_interf_coefs) == SC_INTERF_NFEAT * sizeof(double),
               "sc_interf_coefs and SC_INTERF_FEATURES disagree");

int sc__calib_key_find(const char *key) {
  for (int i = 0; i < SC_CALIB_KEY_COUNT; i++)
    if (!strcmp(sc__calib_keys[i].key, key)) return i;
  return -1;
}

int sc__calib_key_check(int i, double v, char *err, size_t errn) {
  const sc_calib_key *k = &sc__calib_keys[i];
  if (v == 0 || (v >= k->lo && v <= k->hi)) return SC_OK;
  snprintf(err, errn, "calibration.%s: %.17g out of range [%g, %g] (0 = the default)", k->key, v,
           k->lo, k->hi);
  return SC_EINVAL;
}

void sc__interf_coefs_to_array(const sc_interf_coefs *c, double *w) {
  for (int i = 0; i < SC_INTERF_NFEAT; i++)
    w[i] = *(const double *)((const char *)c + sc__calib_keys[SC_CALIB_INTERF_FIRST + i].member);
}

void sc__interf_coefs_from_array(const double *w, sc_interf_coefs *c) {
  for (int i = 0; i < SC_INTERF_NFEAT; i++)
    *(double *)((char *)c + sc__calib_keys[SC_CALIB_INTERF_FIRST + i].member) = w[i];
}
