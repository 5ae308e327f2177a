/*
 * vary.c: the parser of the what-if variation keys' text (vary_int.h).
 */
#include "input/vary_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vparse {
  int kind;
  const char *name;
  char *err;
  size_t n;
} vparse;

static int fail(const vparse *P, const char *fmt, ...) {
  int k = snprintf(P->err, P->n, "%s: ", P->name);
  if (k > 0 && (size_t)k < P->n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err + k, P->n - (size_t)k, fmt, ap);
    va_end(ap);
  }
  return SC_EINVAL;
}

/* A whole decimal integer in [0, 2^31) from s (len bytes). */
static int parse_int(const char *s, size_t len, int64_t *out) {
  if (!len || len > 10) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v > INT64_C(2147483647)) return -1;
  *out = v;
  return 0;
}

static int parse_real(const char *s, size_t len, double *out) {
  char buf[64];
  if (!len || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (*end || errno || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* "0,17,100-107" into it->sel. */
static int parse_list(const vparse *P, const char *what, const char *s, size_t len,
                      sc_vary_item *it) {
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && s[j] != ',') j++;
    const char *dash = memchr(s + i, '-', j - i);
    int64_t a, b;
    if (dash ? parse_int(s + i, (size_t)(dash - (s + i)), &a) ||
                   parse_int(dash + 1, (size_t)(s + j - dash - 1), &b)
             : parse_int(s + i, j - i, &a))
      return fail(P, "%s: expected numbers or ranges such as 0,17,100-107, got \"%.*s\"", what,
                  (int)(j - i), s + i);
    if (!dash) b = a;
    if (b < a) return fail(P, "%s: %lld-%lld is an empty range", what, (long long)a, (long long)b);
    if (it->nsel == SC_VARY_MAX_RANGES)
      return fail(P, "%s: more than %d ranges in one item", what, SC_VARY_MAX_RANGES);
    it->sel[it->nsel++] = (sc_rank_range){a, b};
    i = j + 1;
    if (j + 1 == len) return fail(P, "%s: a list ends with a comma", what);
  }
  return SC_OK;
}

static int factor(const vparse *P, const char *key, const char *v, size_t vl, double *out) {
  if (parse_real(v, vl, out) || !(*out > 0) || *out > 4)
    return fail(P, "%s=%.*s: expected a speed factor in (0, 4] (1 = nominal)", key, (int)vl, v);
  return SC_OK;
}

/* One item's KEY=VALUE words. */
static int parse_item(const vparse *P, const char *s, size_t len, sc_vary_item *it) {
  memset(it, 0, sizeof *it);
  it->speed = it->nic = it->nvlink = 1.0;
  int have_sel = 0, have_factor = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && isspace((unsigned char)s[i])) i++;
    if (i == len) break;
    size_t j = i;
    while (j < len && !isspace((unsigned char)s[j])) j++;
    const char *eq = memchr(s + i, '=', j - i);
    if (!eq) return fail(P, "expected KEY=VALUE, got \"%.*s\"", (int)(j - i), s + i);
    size_t kl = (size_t)(eq - (s + i));
    const char *v = eq + 1;
    size_t vl = (size_t)(s + j - v);
    char key[24];
    if (kl == 0 || kl >= sizeof key) return fail(P, "bad key in \"%.*s\"", (int)(j - i), s + i);
    memcpy(key, s + i, kl);
    key[kl] = 0;
    int sel = P->kind == SC_VARY_GPUS ? !strcmp(key, "ranks") : !strcmp(key, "nodes");
    int rc;
    if (sel) {
      if ((rc = parse_list(P, key, v, vl, it))) return rc;
      have_sel = 1;
    } else if (!strcmp(key, "count")) {
      if (parse_int(v, vl, &it->count) || it->count < 1)
        return fail(P, "count=%.*s: expected an integer >= 1", (int)vl, v);
      have_sel = 1;
    } else if (P->kind == SC_VARY_GPUS && !strcmp(key, "speed")) {
      if ((rc = factor(P, key, v, vl, &it->speed))) return rc;
      have_factor = 1;
    } else if (P->kind == SC_VARY_LINKS && !strcmp(key, "nic_speed")) {
      if ((rc = factor(P, key, v, vl, &it->nic))) return rc;
      have_factor = 1;
    } else if (P->kind == SC_VARY_LINKS && !strcmp(key, "nvlink_speed")) {
      if ((rc = factor(P, key, v, vl, &it->nvlink))) return rc;
      have_factor = 1;
    } else if (P->kind == SC_VARY_MIX && !strcmp(key, "gpu")) {
      if (!vl || vl >= sizeof it->gpu) return fail(P, "gpu=%.*s: bad GPU name", (int)vl, v);
      memcpy(it->gpu, v, vl);
      it->gpu[vl] = 0;
      have_factor = 1;
    } else {
      static const char *known[] = {"ranks, count, speed", "nodes, count, nic_speed, nvlink_speed",
                                    "gpu, nodes, count"};
      return fail(P, "unknown key \"%s\" (known: %s)", key, known[P->kind]);
    }
    if (have_sel && it->count && it->nsel)
      return fail(P, "an item gives both %s and count", P->kind == SC_VARY_GPUS ? "ranks" : "nodes");
    i = j;
  }
  static const char *sel_name[] = {"ranks or count", "nodes or count", "nodes or count"};
  static const char *fac_name[] = {"speed", "nic_speed or nvlink_speed", "gpu"};
  if (!have_sel) return fail(P, "an item needs %s", sel_name[P->kind]);
  if (!have_factor) return fail(P, "an item needs %s", fac_name[P->kind]);
  return SC_OK;
}

int sc__vary_parse(int kind, const char *name, const char *text, sc_vary_item_fn fn, void *ud,
                   char *err, size_t n) {
  vparse P = {kind, name, err, n};
  size_t len = strlen(text);
  sc_vary_item it;
  if (kind == SC_VARY_FAILURES) {
    memset(&it, 0, sizeof it);
    size_t a = 0, b = len;
    while (a < b && isspace((unsigned char)text[a])) a++;
    while (b > a && isspace((unsigned char)text[b - 1])) b--;
    if (a == b) return SC_OK;
    int rc = parse_list(&P, "steps", text + a, b - a, &it);
    if (rc) return rc;
    for (size_t k = 0; k < it.nsel; k++)
      if (it.sel[k].first < 1) return fail(&P, "steps count from 1");
    return fn ? fn(ud, &it) : SC_OK;
  }
  size_t i = 0, items = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && text[j] != ';') j++;
    size_t a = i;
    while (a < j && isspace((unsigned char)text[a])) a++;
    if (a < j) {
      int rc = parse_item(&P, text + a, j - a, &it);
      if (rc) return rc;
      if (kind == SC_VARY_MIX && items > 0) return fail(&P, "one other GPU at most (one item)");
      items++;
      if (fn && (rc = fn(ud, &it))) return rc;
    }
    i = j + 1;
  }
  return SC_OK;
}

int sc__vary_seeded(const sc_vary_cfg *v) {
  return v->gpu_speed_sigma > 0 || strstr(v->slow_gpus, "count=") || strstr(v->slow_links, "count=");
}

void sc__vary_clear(sc_vary_cfg *v) {
  v->slow_gpus[0] = v->slow_links[0] = v->gpu_mix[0] = 0;
  v->gpu_speed_sigma = 0;
}

int sc__vary_active(const sc_config *cfg) {
  const sc_vary_cfg *v = &cfg->variation;
  return v->slow_gpus[0] || v->gpu_speed_sigma > 0 || v->slow_links[0] || v->gpu_mix[0];
}
