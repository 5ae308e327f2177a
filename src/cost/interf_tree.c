/*
 * interf_tree.c: the `tree` interference model, gradient-boosted regression
 * trees over the learned model's features (SC_INTERF_FEATURES). XGBoost's C
 * API trains, saves and loads the booster; at load the trees are copied into
 * a flat forest that the engine walks itself, so the hot path calls no C++
 * and allocates nothing (docs/INTERFERENCE.md, "tree").
 */
#include "cost/interf_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <xgboost/c_api.h>

/* One node of the flat forest: an inner node sends x[feat] < thr to `yes`,
 * else to `no` (indices into the forest's node array); a leaf has feat -1. */
typedef struct tree_node {
  int32_t feat;
  float thr;     /* split threshold, XGBoost's float */
  int32_t yes, no;
  float leaf;    /* leaf value (feat < 0) */
} tree_node;

struct sc_interf_tree {
  sc_ctx *ctx; /* allocated through it (sc_interf_fit_result_release) */
  BoosterHandle booster;
  tree_node *node;
  size_t nnode, cap;
  uint32_t *root; /* first node of each tree */
  size_t ntree;
  float base;     /* the booster's base score */
};

/* "xgboost: MESSAGE" (or "what: MESSAGE") from XGBoost's last error. */
static int xgb_error(sc_ctx *ctx, const char *what) {
  const char *m = XGBGetLastError();
  /* XGBoost's messages read "[hh:mm:ss] source.h:81: text\nStack trace:...":
   * keep the text's first line only, so the message is the same every run. */
  if (m && m[0] == '[' && strstr(m, "] ")) {
    const char *p = strstr(m, "] ") + 2, *c = strstr(p, ": "), *nl = strchr(p, '\n');
    m = c && (!nl || c < nl) ? c + 2 : p;
  }
  size_t n = m ? strcspn(m, "\n") : 0;
  while (n && m[n - 1] == ' ') n--;
  return sc__error(ctx, SC_EINVAL, "%s: %.*s", what, (int)(n > 400 ? 400 : n),
                   m && n ? m : "XGBoost failed");
}

void sc__interf_tree_free(sc_ctx *ctx, sc_interf_tree *t) {
  if (!t) return;
  if (t->booster) XGBoosterFree(t->booster);
  sc__free(ctx, t->node, t->cap * sizeof *t->node);
  sc__free(ctx, t->root, t->ntree * sizeof *t->root);
  sc__free(ctx, t, sizeof *t);
}

/* Walks the flat forest: the booster's margin (identity link) for x. The
 * sum runs in float in tree order, as XGBoost's CPU predictor adds leaves. */
static float forest_margin(const sc_interf_tree *t, const double *x) {
  float sum = t->base;
  for (size_t k = 0; k < t->ntree; k++) {
    const tree_node *n = &t->node[t->root[k]];
    while (n->feat >= 0) n = &t->node[(float)x[n->feat] < n->thr ? n->yes : n->no];
    sum += n->leaf;
  }
  return sum;
}

/* Parses one tree of XGBoost's text dump ("ID:[fK<THR] yes=A,no=B,missing=C"
 * and "ID:leaf=V", one node a line) into the forest. */
static int parse_tree(sc_ctx *ctx, sc_interf_tree *t, const char *dump, const char *what) {
  size_t first = t->nnode, count = 0;
  for (const char *p = dump; *p; p++) count += *p == '\n';
  count += 1;
  if (sc__grow(ctx, (void **)&t->node, sizeof *t->node, &t->cap, first + count))
    return SC_ENOMEM;
  size_t used = 0;
  for (const char *p = dump; *p;) {
    while (*p == '\t' || *p == ' ' || *p == '\n') p++;
    if (!*p) break;
    unsigned id, f;
    int yes, no, miss, k = 0;
    float v;
    tree_node n = {-1, 0, 0, 0, 0};
    if (sscanf(p, "%u:[f%u<%f] yes=%d,no=%d,missing=%d%n", &id, &f, &v, &yes, &no, &miss, &k) ==
            6 &&
        k > 0) {
      if (f >= SC_INTERF_NFEAT || yes < 0 || no < 0 || (size_t)yes >= count ||
          (size_t)no >= count)
        return sc__error(ctx, SC_EINVAL, "%s: tree node uses feature %u of %d or a bad child",
                         what, f, SC_INTERF_NFEAT);
      n.feat = (int32_t)f;
      n.thr = v;
      n.yes = (int32_t)(first + (size_t)yes);
      n.no = (int32_t)(first + (size_t)no);
    } else if (sscanf(p, "%u:leaf=%f%n", &id, &v, &k) == 2 && k > 0) {
      n.leaf = v;
    } else {
      return sc__error(ctx, SC_EINVAL, "%s: unreadable tree dump line", what);
    }
    if (id >= count) return sc__error(ctx, SC_EINVAL, "%s: tree node id %u out of range", what, id);
    t->node[first + id] = n;
    if (id + 1 > used) used = id + 1;
    p += k;
    while (*p && *p != '\n') p++;
  }
  if (!used) return sc__error(ctx, SC_EINVAL, "%s: empty tree", what);
  /* Every child must lie inside this tree; loops cannot occur since XGBoost
   * numbers children after parents, which is checked here too. */
  for (size_t i = first; i < first + used; i++)
    if (t->node[i].feat >= 0 &&
        ((size_t)t->node[i].yes >= first + used || (size_t)t->node[i].no >= first + used ||
         (size_t)t->node[i].yes <= i || (size_t)t->node[i].no <= i))
      return sc__error(ctx, SC_EINVAL, "%s: inconsistent tree", what);
  t->nnode = first + used;
  return SC_OK;
}

/* Copies the booster's trees into the flat forest and finds its base score
 * (the booster's prediction for x = 0 less the leaves the forest gives). */
static int flatten(sc_ctx *ctx, sc_interf_tree *t, const char *what) {
  bst_ulong ntree = 0;
  const char **dump = NULL;
  if (XGBoosterDumpModelEx(t->booster, "", 0, "text", &ntree, &dump)) return xgb_error(ctx, what);
  if (ntree == 0 || ntree > 100000)
    return sc__error(ctx, SC_EINVAL, "%s: the model holds %llu trees (1 to 100000 expected)",
                     what, (unsigned long long)ntree);
  t->root = sc__malloc(ctx, (size_t)ntree * sizeof *t->root);
  if (!t->root) return SC_ENOMEM;
  t->ntree = (size_t)ntree;
  for (size_t k = 0; k < t->ntree; k++) {
    t->root[k] = (uint32_t)t->nnode;
    int rc = parse_tree(ctx, t, dump[k], what);
    if (rc) return rc;
  }
  /* The model's feature count must be ours. */
  bst_ulong nf = 0;
  if (XGBoosterGetNumFeature(t->booster, &nf)) return xgb_error(ctx, what);
  if (nf != SC_INTERF_NFEAT)
    return sc__error(ctx, SC_EINVAL, "%s: the model has %llu features, the interference model %d",
                     what, (unsigned long long)nf, SC_INTERF_NFEAT);
  float zero[SC_INTERF_NFEAT] = {0};
  DMatrixHandle dm;
  if (XGDMatrixCreateFromMat(zero, 1, SC_INTERF_NFEAT, NAN, &dm)) return xgb_error(ctx, what);
  bst_ulong len = 0;
  const float *out = NULL;
  int bad = XGBoosterPredict(t->booster, dm, 1 /* margin */, 0, 0, &len, &out) || len != 1;
  float margin = bad ? 0 : out[0];
  XGDMatrixFree(dm);
  if (bad) return xgb_error(ctx, what);
  double x0[SC_INTERF_NFEAT] = {0};
  t->base = 0;
  t->base = margin - forest_margin(t, x0);
  return SC_OK;
}

static int new_tree(sc_ctx *ctx, sc_interf_tree **out) {
  *out = sc__malloc(ctx, sizeof **out);
  if (!*out) return SC_ENOMEM;
  memset(*out, 0, sizeof **out);
  (*out)->ctx = ctx;
  return SC_OK;
}

int sc__interf_tree_load(sc_ctx *ctx, const void *buf, size_t len, const char *what,
                         sc_interf_tree **out) {
  *out = NULL;
  sc_interf_tree *t;
  int rc = new_tree(ctx, &t);
  if (rc) return rc;
  if (len == 0 || ((const char *)buf)[0] != '{')
    rc = sc__error(ctx, SC_EINVAL, "%s: not an XGBoost JSON model (expected '{')", what);
  else if (XGBoosterCreate(NULL, 0, &t->booster))
    rc = xgb_error(ctx, what);
  else if (XGBoosterSetParam(t->booster, "nthread", "1") ||
           XGBoosterLoadModelFromBuffer(t->booster, buf, (bst_ulong)len))
    rc = xgb_error(ctx, what);
  else
    rc = flatten(ctx, t, what);
  if (rc) {
    sc__interf_tree_free(ctx, t);
    return rc;
  }
  *out = t;
  return SC_OK;
}

int sc__interf_tree_load_file(sc_ctx *ctx, const char *path, const char *from,
                              sc_interf_tree **out) {
  char *text;
  size_t len, cap;
  /* Models of a few hundred trees are well under a megabyte. */
  int rc = sc__read_file(ctx, path, from, "interference tree model", (size_t)64 << 20, &text,
                         &len, &cap);
  if (rc) return rc;
  rc = sc__interf_tree_load(ctx, text, len, path, out);
  sc__free(ctx, text, cap);
  return rc;
}

/* Training target and weight of a pair. The model predicts s; a pair's
 * relative duration error is e = alone r (s_pred - s) / dur, so the absolute
 * error of s weighted by alone r / dur is exactly |e|, the per-kernel error
 * the accuracy tables average. */
static int pair_target(const sc_interf_sample *s, float *y, float *wt) {
  if (!(s->alone_ns > 0 && s->dur_ns > 0 && s->r > 0)) return 0;
  *y = (float)((s->dur_ns / s->alone_ns - 1.0) / s->r);
  *wt = (float)(s->alone_ns * s->r / s->dur_ns);
  return 1;
}

int sc__interf_tree_train(sc_ctx *ctx, const sc_interf_sample *s, size_t n,
                          const sc_interf_tree_params *prm, sc_interf_tree **out) {
  *out = NULL;
  float *x = sc__malloc(ctx, (n ? n : 1) * SC_INTERF_NFEAT * sizeof *x);
  float *y = sc__malloc(ctx, (n ? n : 1) * sizeof *y);
  float *wt = sc__malloc(ctx, (n ? n : 1) * sizeof *wt);
  sc_interf_tree *t = NULL;
  int rc = x && y && wt ? new_tree(ctx, &t) : SC_ENOMEM;
  size_t m = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    if (!pair_target(&s[i], &y[m], &wt[m])) continue;
    double f[SC_INTERF_NFEAT];
    sc__interf_features(s[i].kind, s[i].alone_ns, &s[i].comm, f);
    for (int k = 0; k < SC_INTERF_NFEAT; k++) x[m * SC_INTERF_NFEAT + k] = (float)f[k];
    m++;
  }
  if (!rc && !m) rc = sc__error(ctx, SC_EINVAL, "interference tree: no training pairs");
  DMatrixHandle dm = NULL;
  const char *what = "interference tree";
  if (!rc && (XGDMatrixCreateFromMat(x, (bst_ulong)m, SC_INTERF_NFEAT, NAN, &dm) ||
              XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)m) ||
              XGDMatrixSetFloatInfo(dm, "weight", wt, (bst_ulong)m)))
    rc = xgb_error(ctx, what);
  if (!rc && XGBoosterCreate(&dm, 1, &t->booster)) rc = xgb_error(ctx, what);
  if (!rc) {
    /* One thread and no sampling: the same pairs give the same trees. The
     * pseudo-Huber loss (slope 0.1 in s) is robust to the heavy tail of
     * slowdowns (docs/INTERFERENCE.md); XGBoost's absolute error was tried
     * first and its sign gradients stalled after one split. */
    char depth[16], eta[32], mcw[32], lambda[32];
    snprintf(depth, sizeof depth, "%d", prm->depth);
    snprintf(eta, sizeof eta, "%.17g", prm->eta);
    snprintf(mcw, sizeof mcw, "%.17g", prm->min_child_weight);
    snprintf(lambda, sizeof lambda, "%.17g", prm->lambda);
    const char *kv[][2] = {{"nthread", "1"},        {"seed", "0"},
                           {"verbosity", "0"},      {"objective", "reg:pseudohubererror"}, {"huber_slope", "0.1"},
                           {"tree_method", "exact"}, {"max_depth", depth},
                           {"eta", eta},            {"min_child_weight", mcw},
                           {"lambda", lambda},      {"base_score", "0"}};
    for (size_t i = 0; !rc && i < sizeof kv / sizeof kv[0]; i++)
      if (XGBoosterSetParam(t->booster, kv[i][0], kv[i][1])) rc = xgb_error(ctx, what);
  }
  for (int it = 0; !rc && it < prm->rounds; it++)
    if (XGBoosterUpdateOneIter(t->booster, it, dm)) rc = xgb_error(ctx, what);
  if (dm) XGDMatrixFree(dm);
  if (!rc) rc = flatten(ctx, t, what);
  sc__free(ctx, x, (n ? n : 1) * SC_INTERF_NFEAT * sizeof *x);
  sc__free(ctx, y, (n ? n : 1) * sizeof *y);
  sc__free(ctx, wt, (n ? n : 1) * sizeof *wt);
  if (rc) {
    sc__interf_tree_free(ctx, t);
    return rc;
  }
  *out = t;
  return SC_OK;
}

int sc__interf_tree_write(sc_ctx *ctx, const sc_interf_tree *t, sc_write_fn w, void *ud) {
  bst_ulong len = 0;
  const char *buf = NULL;
  if (XGBoosterSaveModelToBuffer(t->booster, "{\"format\": \"json\"}", &len, &buf))
    return xgb_error(ctx, "interference tree");
  return w(ud, buf, (size_t)len);
}

double sc__interf_tree_s(const sc_interf_tree *t, int kind, double dur_ns,
                         const sc_interf_comm *c) {
  double x[SC_INTERF_NFEAT];
  sc__interf_features(kind, dur_ns, c, x);
  double s = forest_margin(t, x);
  return s < 0 ? 0 : s > SC_INTERF_S_MAX ? SC_INTERF_S_MAX : s;
}

sc_ctx *sc__interf_tree_ctx(const sc_interf_tree *t) { return t->ctx; }

size_t sc__interf_tree_count(const sc_interf_tree *t) { return t ? t->ntree : 0; }

int sc__interf_tree_booster_s(sc_ctx *ctx, const sc_interf_tree *t, int kind, double dur_ns,
                              const sc_interf_comm *c, double *s) {
  double x[SC_INTERF_NFEAT];
  float xf[SC_INTERF_NFEAT];
  sc__interf_features(kind, dur_ns, c, x);
  for (int k = 0; k < SC_INTERF_NFEAT; k++) xf[k] = (float)x[k];
  DMatrixHandle dm;
  if (XGDMatrixCreateFromMat(xf, 1, SC_INTERF_NFEAT, NAN, &dm))
    return xgb_error(ctx, "interference tree");
  bst_ulong len = 0;
  const float *out = NULL;
  int bad = XGBoosterPredict(t->booster, dm, 1, 0, 0, &len, &out) || len != 1;
  if (!bad) *s = out[0];
  XGDMatrixFree(dm);
  return bad ? xgb_error(ctx, "interference tree") : SC_OK;
}
