/*
 * ir.c: the workload IR's shared pieces: the names of its X-macro tables (for
 * traces and messages), group placement, the invariant checker that tests and
 * debug builds run on every workload, and freeing.
 */
#include "ir/ir_int.h"

/* ------------------------------------------------------------ tables */

const char *sc__stream_name(int s) {
  static const char *const names[] = {
#define SC_X_NAME(id, name) name,
      SC_STREAM_LIST(SC_X_NAME)
#undef SC_X_NAME
  };
  return s >= 0 && s < SC_ST_COUNT ? names[s] : "?";
}

const char *sc__label_name(int l) {
  static const char *const names[] = {
#define SC_X_NAME(id, name) name,
      SC_LABEL_LIST(SC_X_NAME)
#undef SC_X_NAME
  };
  return l >= 0 && l < SC_L_COUNT ? names[l] : "?";
}

const char *sc__coll_name(int c) {
  static const char *const names[] = {
#define SC_X_NAME(id, name) name,
      SC_COLL_LIST(SC_X_NAME)
#undef SC_X_NAME
  };
  return c >= 0 && c < SC_COLL_COUNT ? names[c] : "?";
}

int sc__opkind_is_compute(int kind) {
  static const unsigned char is_compute[] = {
#define SC_X_C(id, name, c) c,
      SC_OPKIND_LIST(SC_X_C)
#undef SC_X_C
  };
  return kind >= 0 && kind < SC_OP_KIND_COUNT && is_compute[kind];
}

static int contains_any(const char *s, const char *const *needles) {
  for (; *needles; needles++)
    if (sc__contains_nocase(s, *needles)) return 1;
  return 0;
}

/* Substrings of CUDA kernel names per class, tried in this order (an
 * optimizer's multi_tensor_apply kernel is not a GEMM, a fused attention
 * kernel's inner GEMMs make it attention): cuBLAS/CUTLASS GEMM and
 * convolution kernels (xmma, implicit-GEMM fprop/dgrad/wgrad, the mma tile
 * shapes 1688/16816), fused attention (FlashAttention, cuDNN fmha), the
 * reductions (norms, softmax, loss, sort, top-k, scans). */
int sc__kernel_kind(const char *name) {
  static const char *const optimizer[] = {"adam", "multi_tensor_apply", "sgd_", NULL};
  static const char *const attention[] = {"flash", "fmha", "attention", "attn", NULL};
  static const char *const gemm[] = {"gemm", "cutlass", "xmma", "matmul", "cublas", "wgrad",
                                     "dgrad", "fprop", "conv", "1688", "16816", NULL};
  static const char *const norm[] = {"norm", "reduce", "softmax", "bn_", "scan", "sort",
                                     "radix", "histogram", "topk", "entropy", "nll_loss",
                                     "welford", NULL};
  if (contains_any(name, optimizer)) return SC_OP_OPTIMIZER;
  if (contains_any(name, attention)) return SC_OP_ATTN;
  if (contains_any(name, gemm)) return SC_OP_GEMM;
  if (contains_any(name, norm)) return SC_OP_NORM;
  return SC_OP_ELEMWISE;
}

/* The breakdown categories an op's time counts under (public names). */
const char *sc_category_key(int cat) {
  static const char *const keys[] = {
#define SC_X_KEY(id, key, label) key,
      SC_CATEGORY_LIST(SC_X_KEY)
#undef SC_X_KEY
  };
  return cat >= 0 && cat < SC_CAT_COUNT ? keys[cat] : "?";
}

const char *sc_category_label(int cat) {
  static const char *const labels[] = {
#define SC_X_LABEL(id, key, label) label,
      SC_CATEGORY_LIST(SC_X_LABEL)
#undef SC_X_LABEL
  };
  return cat >= 0 && cat < SC_CAT_COUNT ? labels[cat] : "?";
}

/* ------------------------------------------------------------ placement */

void sc__placement_begin(sc_placement_acc *a, int64_t nodes_per_leaf) {
  a->pl = (sc_placement){0, 0, 0, 0};
  a->node = -1;
  a->run = 0;
  a->leaf = -1;
  a->nodes_per_leaf = nodes_per_leaf;
}

void sc__placement_add(sc_placement_acc *a, int64_t node) {
  a->pl.n++;
  if (node != a->node) {
    a->pl.nodes++;
    a->node = node;
    a->run = 0;
    int64_t leaf = a->nodes_per_leaf > 0 ? node / a->nodes_per_leaf : 0;
    if (leaf != a->leaf) {
      a->pl.leaves++;
      a->leaf = leaf;
    }
  }
  if (++a->run > a->pl.per_node) a->pl.per_node = a->run;
}

/* ------------------------------------------------------------ free, check */

void sc__workload_free(sc_ctx *ctx, sc_workload *wl) {
  if (!wl->progs) return;
  for (int64_t s = 0; s < wl->nprogs; s++) {
    sc_program *p = &wl->progs[s];
    for (int st = 0; st < SC_ST_COUNT; st++) sc__free(ctx, p->ops[st], p->cap[st] * sizeof(sc_op));
    sc__free(ctx, p->deps, p->deps_cap * sizeof(uint32_t));
  }
  sc__free(ctx, wl->progs, (size_t)wl->nprogs * sizeof(sc_program));
  wl->progs = NULL;
}

int sc__workload_check(sc_ctx *ctx, const sc_workload *wl) {
  for (int64_t s = 0; s < wl->nprogs; s++) {
    const sc_program *p = &wl->progs[s];
    for (int st = 0; st < SC_ST_COUNT; st++) {
      for (size_t i = 0; i < p->nops[st]; i++) {
        const sc_op *op = &p->ops[st][i];
        if ((size_t)op->dep_off + op->ndeps > p->ndeps)
          return sc__error(ctx, SC_EINVAL, "stage %lld %s op %zu: deps out of range",
                           (long long)s, sc__stream_name(st), i);
        for (int d = 0; d < op->ndeps; d++) {
          uint32_t dep = p->deps[op->dep_off + d];
          uint32_t ds = SC_DEP_STREAM(dep), di = SC_DEP_INDEX(dep);
          if (ds >= SC_ST_COUNT || di >= p->nops[ds] || (int)ds == st)
            return sc__error(ctx, SC_EINVAL, "stage %lld %s op %zu: bad dependency %u/%u",
                             (long long)s, sc__stream_name(st), i, ds, di);
        }
        if (op->kind >= SC_OP_KIND_COUNT || op->cat >= SC_CAT_COUNT ||
            (op->kind == SC_OP_COLL && op->coll >= SC_COLL_COUNT))
          return sc__error(ctx, SC_EINVAL, "stage %lld %s op %zu: kind %u, category %u, "
                           "collective %u out of range",
                           (long long)s, sc__stream_name(st), i, op->kind, op->cat, op->coll);
        if (op->kind == SC_OP_COLL && op->group >= SC_GRP_COUNT)
          return sc__error(ctx, SC_EINVAL, "stage %lld: collective without group", (long long)s);
      }
    }
    /* p2p pairing: every p2p stream matches its peer's stream. */
    for (int st = 0; st < SC_ST_COUNT; st++) {
      const sc_p2p_stream *ps = &sc__p2p_streams[st];
      if (!ps->delta) continue;
      int64_t peer = ((s + ps->delta) % wl->nprogs + wl->nprogs) % wl->nprogs;
      if (p->nops[st] != wl->progs[peer].nops[ps->peer])
        return sc__error(ctx, SC_EINVAL, "stage %lld: %s and stage %lld's %s do not pair up",
                         (long long)s, sc__stream_name(st), (long long)peer,
                         sc__stream_name(ps->peer));
    }
  }
  return SC_OK;
}
