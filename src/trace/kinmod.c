/*
 * kinmod.c: the nn.Module hierarchy of a Kineto trace recorded with module
 * annotations (kinmod_int.h), turned into the job's module paths and each
 * GPU op's pass, so that a GPU trace of a few layers takes the layer
 * extrapolation ex-situ traces take (layers.c).
 *
 * Paths. A module instance is its class and instance number (the
 * profiler's "Linear_12"), the same wherever it is called: the forward,
 * or activation checkpointing's re-run inside the backward. Its parent is
 * the module around its first call (ranges on one thread nest). Its path
 * is its parent's, a dot, and its class; among a parent's children the
 * class with the most instances (at least 2; ties to one whose modules
 * have children) is the layer list, whose components also carry the
 * instance number as a component of its own ("Transformer.
 * TransformerBlock.3", the layer index layers.c and shard.c look for);
 * other repeated classes append it to the class ("Attention.Linear_12"),
 * which is not a layer index.
 */
#include "trace/kinmod_int.h"

#include <stdio.h>
#include <stdlib.h>

#define MOD_PREFIX "nn.Module: "
#define BWD_PREFIX "autograd::engine::evaluate_function: "

static int starts(const char *s, size_t n, const char *p) {
  size_t l = strlen(p);
  return n >= l && !memcmp(s, p, l);
}

static int keep(sc_ctx *ctx, sc_kmrange **v, size_t *nv, size_t *cap, const sc_kmrange *x, size_t max) {
  if (*nv >= max) return SC_EINVAL;
  if (sc__grow(ctx, (void **)v, sizeof **v, cap, *nv + 1)) return SC_ENOMEM;
  (*v)[(*nv)++] = *x;
  return SC_OK;
}

int sc__kinmod_keep(sc_ctx *ctx, sc_job *job, sc_kinmod *km, const char *s, size_t n, int64_t ts, int64_t dur,
                    int64_t tid, int has_seq, int64_t seq, size_t max_records) {
  sc_kmrange x = {ts, ts + (dur > 0 ? dur : 0), tid, -1, 0};
  if (starts(s, n, MOD_PREFIX)) {
    /* "nn.Module: <Class>_<n>": the class, and n when it is a number. */
    const char *c = s + strlen(MOD_PREFIX);
    size_t cn = n - strlen(MOD_PREFIX), u = cn;
    while (u > 0 && c[u - 1] >= '0' && c[u - 1] <= '9') u--;
    if (u > 1 && u < cn && c[u - 1] == '_' && cn - u < 10) {
      x.a = strtoll(c + u, NULL, 10);
      cn = u - 1;
    } else x.a = 0;
    if (!cn) return SC_OK;
    if (sc__job_intern(job, c, cn, &x.b)) return SC_ENOMEM;
    return keep(ctx, &km->mods, &km->nmods, &km->mods_cap, &x, max_records);
  }
  if (starts(s, n, "Optimizer.step#") || starts(s, n, "Optimizer.zero_grad#"))
    return keep(ctx, &km->opts, &km->nopts, &km->opts_cap, &x, max_records);
  int bwd = starts(s, n, BWD_PREFIX);
  if (!bwd && !has_seq) return SC_OK;
  x.a = has_seq && seq >= 0 ? seq : -1;
  x.b = (uint32_t)bwd;
  return keep(ctx, &km->seqs, &km->nseqs, &km->seqs_cap, &x, max_records);
}

int sc__kinmod_any(const sc_kinmod *km) { return km->nmods > 0; }

void sc__kinmod_free(sc_ctx *ctx, sc_kinmod *km) {
  sc__free(ctx, km->mods, km->mods_cap * sizeof *km->mods);
  sc__free(ctx, km->seqs, km->seqs_cap * sizeof *km->seqs);
  sc__free(ctx, km->opts, km->opts_cap * sizeof *km->opts);
  memset(km, 0, sizeof *km);
}

/* ------------------------------------------------------------ containment */

/* Ranges by thread, then start, the longer (enclosing) first. */
static int cmp_range(const void *p, const void *q) {
  const sc_kmrange *a = p, *b = q;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return (a->end < b->end) - (a->end > b->end);
}

typedef struct query {
  int64_t tid, t;
  uint32_t i; /* the caller's index */
} query;

static int cmp_query(const void *p, const void *q) {
  const query *a = p, *b = q;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* For each query (sorted), the innermost range of r (sorted by cmp_range)
 * on its thread that contains its time: out[query.i], -1 none. Ranges on
 * a thread nest or follow each other; one sweep with a stack. */
static int innermost(sc_ctx *ctx, const sc_kmrange *r, size_t nr, const query *q, size_t nq, int32_t *out) {
  int32_t *stack = sc__malloc(ctx, (nr ? nr : 1) * sizeof *stack);
  if (!stack) return SC_ENOMEM;
  size_t sp = 0, j = 0;
  int64_t tid = INT64_MIN;
  for (size_t k = 0; k < nq; k++) {
    if (q[k].tid != tid) {
      tid = q[k].tid;
      sp = 0;
      while (j < nr && r[j].tid < tid) j++; /* both are sorted by thread: no rewind */
    }
    while (j < nr && r[j].tid == tid && r[j].ts <= q[k].t) {
      while (sp && r[stack[sp - 1]].end < r[j].end) sp--; /* ended before it: not around it */
      stack[sp++] = (int32_t)j++;
    }
    while (sp && r[stack[sp - 1]].end < q[k].t) sp--;
    out[q[k].i] = sp ? stack[sp - 1] : -1;
  }
  sc__free(ctx, stack, (nr ? nr : 1) * sizeof *stack);
  return SC_OK;
}

/* ------------------------------------------------------------ modules */

typedef struct mnode {
  uint32_t cls;
  int64_t inst;
  int32_t parent;     /* node, -1 root */
  int32_t module;     /* index in the rank's module table */
  uint8_t numbered;   /* the layer list's: the instance is a path component */
  uint8_t has_children;
} mnode;

typedef struct mtab {
  mnode *n;
  size_t nn, cap;
  uint32_t *hash;     /* (cls, inst) -> 1 + node, open addressing */
  size_t hcap;
} mtab;

static size_t hkey(uint32_t cls, int64_t inst, size_t cap) {
  uint64_t h = ((uint64_t)cls * 0x9E3779B97F4A7C15u) ^ ((uint64_t)inst * 0xC2B2AE3D27D4EB4Fu);
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* The node of (cls, inst), created under parent when new; -1 on ENOMEM. */
static int32_t node_of(sc_ctx *ctx, mtab *t, uint32_t cls, int64_t inst, int32_t parent) {
  size_t i = hkey(cls, inst, t->hcap);
  while (t->hash[i]) {
    const mnode *m = &t->n[t->hash[i] - 1];
    if (m->cls == cls && m->inst == inst) return (int32_t)(t->hash[i] - 1);
    i = (i + 1) & (t->hcap - 1);
  }
  if (sc__grow(ctx, (void **)&t->n, sizeof *t->n, &t->cap, t->nn + 1)) return -1;
  t->n[t->nn] = (mnode){cls, inst, parent, -1, 0, 0};
  if (parent >= 0) t->n[parent].has_children = 1;
  t->hash[i] = (uint32_t)++t->nn;
  return (int32_t)(t->nn - 1);
}

typedef struct ckey {
  int32_t parent;
  uint32_t cls, i;
} ckey;

static int cmp_ckey(const void *p, const void *q) {
  const ckey *a = p, *b = q;
  if (a->parent != b->parent) return a->parent < b->parent ? -1 : 1;
  if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Siblings of a class: dup[i] when node i shares its parent with another
 * node of its class; numbered on the layer list of each parent: among its
 * children's classes the one with the most instances (>= 2; ties to one
 * whose nodes have children). */
static int mark_layers(sc_ctx *ctx, mtab *t, uint8_t *dup) {
  size_t nn = t->nn;
  ckey *ix = sc__malloc(ctx, (nn ? nn : 1) * sizeof *ix);
  if (!ix) return SC_ENOMEM;
  for (size_t i = 0; i < nn; i++) ix[i] = (ckey){t->n[i].parent, t->n[i].cls, (uint32_t)i};
  if (nn > 1) qsort(ix, nn, sizeof *ix, cmp_ckey);
  for (size_t i = 0; i < nn;) {
    size_t pe = i;
    while (pe < nn && ix[pe].parent == ix[i].parent) pe++;
    size_t best = SIZE_MAX, best_n = 1;
    int best_kids = 0;
    for (size_t c = i; c < pe;) {
      size_t ce = c;
      int kids = 0;
      while (ce < pe && ix[ce].cls == ix[c].cls) kids |= t->n[ix[ce++].i].has_children;
      size_t cnt = ce - c;
      for (size_t d = c; cnt > 1 && d < ce; d++) dup[ix[d].i] = 1;
      if (cnt >= 2 && (cnt > best_n || (cnt == best_n && kids && !best_kids))) best = c, best_n = cnt, best_kids = kids;
      c = ce;
    }
    for (size_t c = best; best != SIZE_MAX && c < pe && ix[c].cls == ix[best].cls; c++) t->n[ix[c].i].numbered = 1;
    i = pe;
  }
  sc__free(ctx, ix, (nn ? nn : 1) * sizeof *ix);
  return SC_OK;
}

/* Node k's path into buf (cap bytes); its length, or -1 if too long. */
static int path_of(const sc_job *job, const mtab *t, int32_t k, char *buf, size_t cap, const uint8_t *dup) {
  int32_t chain[64];
  int n = 0;
  int32_t q = k;
  for (; q >= 0 && n < 64; q = t->n[q].parent) chain[n++] = q;
  if (q >= 0) return -1; /* deeper than 64 */
  size_t len = 0;
  for (int i = n - 1; i >= 0; i--) {
    const mnode *m = &t->n[chain[i]];
    const char *cls = sc__job_str(job, m->cls);
    int w = m->numbered ? snprintf(buf + len, cap - len, "%s%s.%lld", len ? "." : "", cls, (long long)m->inst)
            : dup[chain[i]] ? snprintf(buf + len, cap - len, "%s%s_%lld", len ? "." : "", cls, (long long)m->inst)
                            : snprintf(buf + len, cap - len, "%s%s", len ? "." : "", cls);
    if (w < 0 || (size_t)w >= cap - len) return -1;
    len += (size_t)w;
  }
  return (int)len;
}

/* Module table of the rank: one module per node, by path. */
static int register_modules(sc_ctx *ctx, sc_job *job, sc_jrank *jr, mtab *t) {
  size_t nn = t->nn;
  uint8_t *dup = sc__calloc(ctx, nn ? nn : 1, 1);
  if (!dup) return SC_ENOMEM;
  int rc = mark_layers(ctx, t, dup);
  char buf[1024];
  for (size_t i = 0; !rc && i < nn; i++) {
    int len = path_of(job, t, (int32_t)i, buf, sizeof buf, dup);
    if (len < 0) {
      rc = sc__error(ctx, SC_EINVAL, "module path of %s_%lld: longer than %zu bytes or deeper than 64",
                     sc__job_str(job, t->n[i].cls), (long long)t->n[i].inst, sizeof buf - 1);
      break;
    }
    uint32_t id;
    if (sc__job_intern(job, buf, (size_t)len, &id)) rc = SC_ENOMEM;
    int64_t mi = rc ? -1 : sc__jrank_module(job, jr, id, t->n[i].cls, 0);
    if (!rc && mi < 0) rc = SC_ENOMEM;
    if (!rc) t->n[i].module = (int32_t)mi;
  }
  sc__free(ctx, dup, nn ? nn : 1);
  return rc;
}

/* ------------------------------------------------------------ tagging */

typedef struct seqmod {
  int64_t seq;
  int32_t module; /* node, -1 none */
} seqmod;

static int cmp_seqmod(const void *p, const void *q) {
  const seqmod *a = p, *b = q;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_start(const void *p, const void *q) {
  const sc_kmrange *a = *(const sc_kmrange *const *)p, *b = *(const sc_kmrange *const *)q;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return (a->end < b->end) - (a->end > b->end);
}

int sc__kinmod_tag(sc_ctx *ctx, sc_job *job, sc_jrank *jr, sc_kinmod *km, const int64_t *launch_ts,
                   const int64_t *launch_tid, size_t n, sc_jopmod *out) {
  for (size_t i = 0; i < n; i++) out[i] = (sc_jopmod){0, SC_JPASS_NONE, SC_JPARAM_NONE};
  if (!km->nmods) return SC_OK;
  size_t nm = km->nmods, ns = km->nseqs, no = km->nopts;
  if (nm > 1) qsort(km->mods, nm, sizeof *km->mods, cmp_range);
  if (ns > 1) qsort(km->seqs, ns, sizeof *km->seqs, cmp_range);
  if (no > 1) qsort(km->opts, no, sizeof *km->opts, cmp_range);
  int rc = SC_OK;
  /* Each module call's enclosing call: queries at their own start, on the
   * calls themselves (innermost other than itself: query just inside). */
  int32_t *parent = sc__malloc(ctx, (nm ? nm : 1) * sizeof *parent);
  int32_t *node = sc__malloc(ctx, (nm ? nm : 1) * sizeof *node);
  const sc_kmrange **order = sc__malloc(ctx, (nm ? nm : 1) * sizeof *order);
  mtab t;
  memset(&t, 0, sizeof t);
  t.hcap = 64;
  while (t.hcap < 2 * nm) t.hcap *= 2;
  t.hash = sc__calloc(ctx, t.hcap, sizeof *t.hash);
  if (!parent || !node || !order || !t.hash) rc = SC_ENOMEM;
  /* Parent call: the stack of the sweep, per thread (calls sorted). */
  int32_t *stack = rc ? NULL : sc__malloc(ctx, (nm ? nm : 1) * sizeof *stack);
  if (!rc && !stack) rc = SC_ENOMEM;
  size_t sp = 0;
  for (size_t i = 0; !rc && i < nm; i++) {
    if (i && km->mods[i].tid != km->mods[i - 1].tid) sp = 0;
    while (sp && km->mods[stack[sp - 1]].end < km->mods[i].end) sp--;
    parent[i] = sp ? stack[sp - 1] : -1;
    stack[sp++] = (int32_t)i;
  }
  /* Nodes in time order of first call, so a parent's comes first. */
  for (size_t i = 0; !rc && i < nm; i++) order[i] = &km->mods[i];
  if (!rc && nm > 1) qsort(order, nm, sizeof *order, cmp_start);
  for (size_t q = 0; !rc && q < nm; q++) {
    size_t i = (size_t)(order[q] - km->mods);
    int32_t p = parent[i] >= 0 ? node[parent[i]] : -1;
    node[i] = node_of(ctx, &t, km->mods[i].b, km->mods[i].a, p);
    if (node[i] < 0) rc = SC_ENOMEM;
  }
  if (!rc) rc = register_modules(ctx, job, jr, &t);
  /* Forward operators: their module (the innermost call around them). */
  size_t nfw = 0;
  for (size_t i = 0; i < ns; i++) nfw += !km->seqs[i].b && km->seqs[i].a >= 0;
  query *q = rc ? NULL : sc__malloc(ctx, ((nfw > n ? nfw : n) + 1) * sizeof *q);
  int32_t *hit = rc ? NULL : sc__malloc(ctx, ((nfw > n ? nfw : n) + 1) * sizeof *hit);
  seqmod *sm = rc ? NULL : sc__malloc(ctx, (nfw + 1) * sizeof *sm);
  if (!rc && (!q || !hit || !sm)) rc = SC_ENOMEM;
  size_t nq = 0;
  for (size_t i = 0; !rc && i < ns; i++)
    if (!km->seqs[i].b && km->seqs[i].a >= 0) {
      sm[nq].seq = km->seqs[i].a;
      q[nq] = (query){km->seqs[i].tid, km->seqs[i].ts, (uint32_t)nq};
      nq++;
    }
  if (!rc) {
    qsort(q, nq, sizeof *q, cmp_query);
    rc = innermost(ctx, km->mods, nm, q, nq, hit);
  }
  for (size_t i = 0; !rc && i < nq; i++) sm[i].module = hit[i] >= 0 ? node[hit[i]] : -1;
  if (!rc && nq > 1) qsort(sm, nq, sizeof *sm, cmp_seqmod);
  /* The launches: optimizer, backward node, module call around each. */
  int32_t *in_opt = rc ? NULL : sc__malloc(ctx, (n + 1) * sizeof *in_opt);
  int32_t *in_bwd = rc ? NULL : sc__malloc(ctx, (n + 1) * sizeof *in_bwd);
  if (!rc && (!in_opt || !in_bwd)) rc = SC_ENOMEM;
  size_t nl = 0;
  for (size_t i = 0; !rc && i < n; i++)
    if (launch_tid[i] != INT64_MIN) q[nl++] = (query){launch_tid[i], launch_ts[i], (uint32_t)i};
  if (!rc) {
    qsort(q, nl, sizeof *q, cmp_query);
    for (size_t i = 0; i < n; i++) hit[i] = in_opt[i] = in_bwd[i] = -1;
    rc = innermost(ctx, km->mods, nm, q, nl, hit);
  }
  if (!rc) rc = innermost(ctx, km->opts, no, q, nl, in_opt);
  /* Backward nodes only (the operators with a sequence number inside one
   * are not nodes): the innermost node around the launch. */
  sc_kmrange *bw = NULL;
  size_t nbw = 0;
  if (!rc) {
    bw = sc__malloc(ctx, (ns + 1) * sizeof *bw);
    if (!bw) rc = SC_ENOMEM;
    for (size_t i = 0; bw && i < ns; i++)
      if (km->seqs[i].b) bw[nbw++] = km->seqs[i];
  }
  if (!rc) rc = innermost(ctx, bw, nbw, q, nl, in_bwd);
  for (size_t i = 0; !rc && i < n; i++) {
    sc_jopmod *o = &out[i];
    if (launch_tid[i] == INT64_MIN) continue;
    if (in_opt[i] >= 0) {
      o->pass = SC_JPASS_OPT;
      continue;
    }
    int32_t m = hit[i] >= 0 ? node[hit[i]] : -1;
    if (in_bwd[i] >= 0) {
      const sc_kmrange *b = &bw[in_bwd[i]];
      if (m >= 0 && km->mods[hit[i]].ts >= b->ts) { /* a module called inside the node: recomputation */
        o->pass = SC_JPASS_RECOMP;
        o->module = (uint32_t)t.n[m].module + 1;
        continue;
      }
      o->pass = SC_JPASS_BWD;
      if (b->a >= 0) {
        seqmod key = {b->a, -1};
        const seqmod *f = nq ? bsearch(&key, sm, nq, sizeof *sm, cmp_seqmod) : NULL;
        if (f && f->module >= 0) o->module = (uint32_t)t.n[f->module].module + 1;
      }
      continue;
    }
    if (m >= 0) {
      o->pass = SC_JPASS_FWD;
      o->module = (uint32_t)t.n[m].module + 1;
    }
  }
  sc__free(ctx, bw, (ns + 1) * sizeof *bw);
  sc__free(ctx, in_opt, (n + 1) * sizeof *in_opt);
  sc__free(ctx, in_bwd, (n + 1) * sizeof *in_bwd);
  sc__free(ctx, q, ((nfw > n ? nfw : n) + 1) * sizeof *q);
  sc__free(ctx, hit, ((nfw > n ? nfw : n) + 1) * sizeof *hit);
  sc__free(ctx, sm, (nfw + 1) * sizeof *sm);
  sc__free(ctx, stack, (nm ? nm : 1) * sizeof *stack);
  sc__free(ctx, parent, (nm ? nm : 1) * sizeof *parent);
  sc__free(ctx, node, (nm ? nm : 1) * sizeof *node);
  sc__free(ctx, order, (nm ? nm : 1) * sizeof *order);
  sc__free(ctx, t.n, t.cap * sizeof *t.n);
  sc__free(ctx, t.hash, t.hcap * sizeof *t.hash);
  return rc;
}
