/*
 * layers.c: layer-count extrapolation of an ex-situ job (`replay --layers
 * N`; docs/TRACE.md, "More layers than traced"). A CPU trace of a large
 * model is taken with few layers (tools/trace_torch.py --layers 2): every
 * transformer block runs the same operators on the same shapes, so the
 * job of the full depth is the traced one with the last traced block's
 * operators repeated. Each pass touches a block in one contiguous run of
 * operators (its forward; its backward, gradient marks included; its
 * parameters' share of zero_grad and of the optimizer step, which walk
 * parameters() in order): the run, with the host launch ops just before
 * its first operator, is emitted once as traced and then once per added
 * layer, under copies of the block's modules whose layer index continues
 * the traced numbering (blocks.1 -> blocks.2, blocks.3, ...). Dependencies
 * inside a run stay inside its copy; an operator after the run that
 * depended on it now depends on the last copy; ones before it are shared
 * (the stream order serialises the copies). The sharding rules, the stage
 * cut, FSDP units and DDP buckets then see N layers as if traced.
 */
#include "trace/shard_int.h"

#include "ir/ir_int.h"

#include <stdio.h>
#include <stdlib.h>

/* The most layers an extrapolated job may have (a job also stays within
 * SC_JOB_MAX_OPS ops per rank). */
#define MAX_LAYERS 4096

/* Of a new op: the first new index of the run's emission it is part of
 * (SC_JOB_NONE outside runs), the run's source ops [a, b] and the copy
 * (-1 as traced, else the added layer). */
typedef struct lemit {
  uint32_t base, a, b;
  int32_t copy;
} lemit;

/* A run of the template layer: its source ops [a, b] and the first new
 * index of each emission (adds + 1 of them, as traced first). */
typedef struct lrun {
  uint32_t a, b;
  size_t bases; /* offset of its bases in lrank.bases */
} lrun;

typedef struct lrank {
  sc_ctx *ctx;
  const sc_job *in;
  const sc_jrank *src;
  sc_job *job;
  sc_jrank *r;              /* being built (re-fetched after sc__job_add_rank: one rank at a time) */
  int32_t *mod_layer;       /* [src->nmodules] */
  int64_t nlayers, tmpl;    /* traced layers; the template (last in forward order) */
  uint32_t *copy_mod;       /* [adds x src->nmodules]: 1 + module index of the copy, 0 not in tmpl */
  int64_t adds;             /* layers added */
  uint32_t *outmap;         /* [src->nops]: new index of each source op (the last emission) */
  lemit *em;                /* per new op: the emission it belongs to */
  size_t nem, em_cap;
  uint32_t *srcdep;         /* per new dep: the source op it names (remapped at the end) */
  size_t nsrcdep, srcdep_cap;
  uint32_t *run_of;         /* [src->nops]: the run a source op is in, SC_JOB_NONE none */
  lrun *runs;
  size_t nruns, runs_cap;
  uint32_t *bases;
  size_t nbases, bases_cap;
} lrank;

/* Entries of copy_mod (at least one). */
static size_t copy_mod_len(const lrank *L) {
  return (size_t)(L->adds > 0 ? L->adds : 1) * (L->src->nmodules ? L->src->nmodules : 1);
}

/* In the template layer: 1 + its module, else 0. */
static uint32_t tmpl_mod(const lrank *L, size_t k) {
  sc_jopmod om = sc__jrank_opmod(L->src, k);
  if (!om.module || L->mod_layer[om.module - 1] != L->tmpl) return 0;
  return om.module;
}

/* Copies of the template layer's modules for each added layer: the path's
 * layer index (the last component of its layer prefix) continued after the
 * largest traced one. */
static int copy_modules(lrank *L) {
  const sc_jrank *src = L->src;
  size_t nm = src->nmodules;
  long long top = -1;
  for (size_t m = 0; m < nm; m++) {
    if (L->mod_layer[m] < 0) continue;
    const char *p = sc__job_str(L->in, src->modules[m].path);
    size_t pl = sc__shard_layer_prefix(p), d = pl;
    while (d > 0 && p[d - 1] >= '0' && p[d - 1] <= '9') d--;
    long long v = strtoll(p + d, NULL, 10);
    if (v > top) top = v;
  }
  L->copy_mod = sc__calloc(L->ctx, copy_mod_len(L), sizeof *L->copy_mod);
  if (!L->copy_mod) return SC_ENOMEM;
  for (int64_t c = 0; c < L->adds; c++)
    for (size_t m = 0; m < nm; m++) {
      if (L->mod_layer[m] != L->tmpl) continue;
      const char *p = sc__job_str(L->in, src->modules[m].path);
      size_t pl = sc__shard_layer_prefix(p), d = pl;
      while (d > 0 && p[d - 1] >= '0' && p[d - 1] <= '9') d--;
      char path[1024];
      int n = snprintf(path, sizeof path, "%.*s%lld%s", (int)d, p, top + 1 + (long long)c, p + pl);
      if (n < 0 || (size_t)n >= sizeof path)
        return sc__error(L->ctx, SC_EINVAL, "module path %.200s...: too long to copy", p);
      uint32_t id;
      if (sc__job_intern(L->job, path, (size_t)n, &id)) return SC_ENOMEM;
      int64_t mi = sc__jrank_module(L->job, L->r, id, src->modules[m].type, src->modules[m].heads);
      if (mi < 0) return SC_ENOMEM;
      L->copy_mod[(size_t)c * nm + m] = (uint32_t)mi + 1;
    }
  return SC_OK;
}

/* Emits source op k: of the emission of run [a, b] starting at new op
 * base (c: the added layer, -1 as traced), or outside runs (base
 * SC_JOB_NONE). */
static int emit(lrank *L, size_t k, int64_t c, uint32_t base, uint32_t a, uint32_t b) {
  int32_t copy = base == SC_JOB_NONE ? -1 : (int32_t)c;
  const sc_jrank *src = L->src;
  if (L->r->nops >= SC_JOB_MAX_OPS)
    return sc__error(L->ctx, SC_EINVAL, "layers=%lld: more than %lld ops on rank %lld",
                     (long long)(L->nlayers + L->adds), (long long)SC_JOB_MAX_OPS, (long long)src->rank);
  sc_jop op = src->ops[k];
  int64_t nk = sc__jrank_op(L->job, L->r, &op);
  if (nk < 0) return SC_ENOMEM;
  for (uint32_t q = 0; q < op.ndeps; q++) {
    if (sc__jrank_dep(L->job, L->r, 0)) return SC_ENOMEM; /* rewritten at the end */
    if (sc__grow(L->ctx, (void **)&L->srcdep, sizeof *L->srcdep, &L->srcdep_cap, L->nsrcdep + 1)) return SC_ENOMEM;
    L->srcdep[L->nsrcdep++] = src->deps[op.dep_off + q];
  }
  if (sc__grow(L->ctx, (void **)&L->em, sizeof *L->em, &L->em_cap, L->nem + 1)) return SC_ENOMEM;
  L->em[L->nem++] = (lemit){base, a, b, copy};
  sc_jopmod om = sc__jrank_opmod(src, k);
  if (om.module || om.pass || om.param) {
    if (c >= 0 && tmpl_mod(L, k)) om.module = L->copy_mod[(size_t)c * src->nmodules + (om.module - 1)];
    if (sc__jrank_set_opmod(L->job, L->r, (size_t)nk, &om)) return SC_ENOMEM;
  }
  L->outmap[k] = (uint32_t)nk;
  return SC_OK;
}

/* Passes of one run: a layer's recomputation (activation checkpointing)
 * and its backward are one, the recomputation first. */
static int run_pass(int pass) { return pass == SC_JPASS_RECOMP ? SC_JPASS_BWD : pass; }

/* A host op with no module and no pass (a launch, CPU time before an op). */
static int plain_host(const lrank *L, size_t k) {
  sc_jopmod om = sc__jrank_opmod(L->src, k);
  return L->src->ops[k].kind == SC_JOP_HOST && !om.module && !om.pass;
}

static int build_rank(lrank *L) {
  const sc_jrank *src = L->src;
  size_t n = src->nops;
  int rc = SC_OK;
  for (size_t k = 0; !rc && k < n;) {
    /* A run: the template's ops of one pass, with the plain host ops just
     * before its first (their launches) and any untagged op between them;
     * it ends at the last template op before an op of another module or
     * pass. */
    size_t j = k;
    while (j < n && plain_host(L, j)) j++;
    if (j == n || !tmpl_mod(L, j)) {
      rc = emit(L, k, -1, SC_JOB_NONE, 0, 0);
      k++;
      continue;
    }
    int pass = run_pass(sc__jrank_opmod(src, j).pass);
    size_t a = k, b = j;
    for (size_t q = j + 1; q < n; q++) {
      sc_jopmod om = sc__jrank_opmod(src, q);
      if (!om.module && !om.pass) continue;
      if (!tmpl_mod(L, q) || run_pass(om.pass) != pass) break;
      b = q;
    }
    /* As traced, then once per added layer. */
    if (sc__grow(L->ctx, (void **)&L->runs, sizeof *L->runs, &L->runs_cap, L->nruns + 1) ||
        sc__grow(L->ctx, (void **)&L->bases, sizeof *L->bases, &L->bases_cap, L->nbases + (size_t)L->adds + 1))
      return SC_ENOMEM;
    L->runs[L->nruns] = (lrun){(uint32_t)a, (uint32_t)b, L->nbases};
    for (size_t q = a; q <= b; q++) L->run_of[q] = (uint32_t)L->nruns;
    L->nruns++;
    for (int64_t c = -1; !rc && c < L->adds; c++) {
      uint32_t base = (uint32_t)L->r->nops;
      L->bases[L->nbases++] = base;
      for (size_t q = a; !rc && q <= b; q++) rc = emit(L, q, c, base, (uint32_t)a, (uint32_t)b);
    }
    k = b + 1;
  }
  /* Dependencies: inside a run to the same emission's op; between the
   * host and the GPU side of the layer (a measured trace's launch and its
   * kernel lie in separate runs: the host timeline comes first) to the
   * same copy of the other run; else to the source op's last emission. */
  sc_jrank *r = L->r;
  size_t d = 0;
  for (size_t q = 0; !rc && q < r->nops; q++) {
    const sc_jop *op = &r->ops[q];
    int qhost = op->kind == SC_JOP_HOST || op->kind == SC_JOP_SYNC;
    for (uint32_t e = 0; e < op->ndeps; e++, d++) {
      uint32_t s = L->srcdep[d];
      const lemit *x = &L->em[q];
      int inside = x->base != SC_JOB_NONE && s >= x->a && s <= x->b;
      int shost = src->ops[s].kind == SC_JOP_HOST || src->ops[s].kind == SC_JOP_SYNC;
      uint32_t ru = L->run_of[s];
      if (inside) r->deps[op->dep_off + e] = x->base + (s - x->a);
      else if (x->base != SC_JOB_NONE && ru != SC_JOB_NONE && qhost != shost)
        r->deps[op->dep_off + e] = L->bases[L->runs[ru].bases + (size_t)(x->copy + 1)] + (s - L->runs[ru].a);
      else r->deps[op->dep_off + e] = L->outmap[s];
    }
  }
  return rc;
}

int sc__job_layers(const sc_job *in, int64_t layers, sc_job **out, int64_t *traced) {
  sc_ctx *ctx = in->ctx;
  *out = NULL;
  *traced = 0;
  if (layers < 1 || layers > MAX_LAYERS)
    return sc__error(ctx, SC_EINVAL, "layers: %lld out of range [1, %d]", (long long)layers, MAX_LAYERS);
  if (in->shard_tp > 0)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "layers=%lld: a job of per-rank shard traces is not extrapolated (trace the shards with "
                     "the layers they hold)", (long long)layers);
  if (!in->nranks) return sc__error(ctx, SC_EINVAL, "the job has no ranks to replay");
  sc_job *job;
  int rc = sc_job_new(ctx, &job);
  if (rc) return rc;
  job->world = in->world;
  rc = sc__job_copy_tables(in, job, 1);
  for (size_t w = 0; !rc && w < in->nwarns; w++) sc__job_warn_n(job, in->warns[w].count, "%s", in->warns[w].msg);
  for (size_t i = 0; !rc && i < in->nranks; i++) {
    const sc_jrank *src = &in->ranks[i];
    const char *name = sc__job_str(in, src->source);
    if (!src->opmods || !src->nmodules) {
      rc = sc__error(ctx, SC_EINVAL,
                     "layers=%lld: %s has no module paths (a .scw before version 3, or a trace without module "
                     "annotations): trace it with tools/trace_torch.py, or profile with with_stack=True, "
                     "with_modules=True", (long long)layers, name);
      break;
    }
    lrank L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx, L.in = in, L.src = src, L.job = job;
    L.mod_layer = sc__malloc(ctx, src->nmodules * sizeof *L.mod_layer);
    L.outmap = sc__malloc(ctx, (src->nops ? src->nops : 1) * sizeof *L.outmap);
    L.run_of = sc__malloc(ctx, (src->nops ? src->nops : 1) * sizeof *L.run_of);
    if (!L.mod_layer || !L.outmap || !L.run_of) rc = SC_ENOMEM;
    for (size_t k = 0; !rc && k < src->nops; k++) L.run_of[k] = SC_JOB_NONE;
    if (!rc) {
      L.nlayers = sc__shard_layers(in, src, L.mod_layer, NULL);
      if (!L.nlayers)
        rc = sc__error(ctx, SC_EINVAL,
                       "layers=%lld: %s has no layers (no module path with a numeric component, such as "
                       "blocks.0)", (long long)layers, name);
      else if (layers < L.nlayers)
        rc = sc__error(ctx, SC_EINVAL,
                       "layers=%lld: fewer than the %lld traced in %s (extrapolation only adds layers)",
                       (long long)layers, (long long)L.nlayers, name);
      if (*traced == 0) *traced = L.nlayers;
      else if (!rc && *traced != L.nlayers)
        rc = sc__error(ctx, SC_EINVAL, "layers=%lld: %s has %lld layers, the first rank %lld", (long long)layers,
                       name, (long long)L.nlayers, (long long)*traced);
      L.tmpl = L.nlayers - 1;
      L.adds = layers - L.nlayers;
    }
    if (!rc) {
      L.r = sc__job_add_rank(job, src->rank);
      if (!L.r) rc = SC_ENOMEM;
    }
    if (!rc) {
      L.r->source = src->source;
      L.r->gpu = src->gpu;
      L.r->iterations = src->iterations;
      L.r->span_ns = src->span_ns;
      for (size_t s = 0; !rc && s < src->nstreams; s++) {
        int k = sc__jrank_stream(job, L.r, src->streams[s].id, src->streams[s].name, src->streams[s].host);
        if (k < 0) rc = k;
      }
      for (size_t k = 0; !rc && k < src->nshapes; k++)
        if (sc__jrank_shape(job, L.r, &src->shapes[k]) < 0) rc = SC_ENOMEM;
      for (size_t m = 0; !rc && m < src->nmodules; m++) {
        int64_t got = sc__jrank_module(job, L.r, src->modules[m].path, src->modules[m].type, src->modules[m].heads);
        if (got < 0) rc = SC_ENOMEM; /* sc__jrank_module's only failure */
        else if (got != (int64_t)m) rc = sc__error(ctx, SC_EINVAL, "%s: duplicate module in the job's table", name);
      }
    }
    if (!rc) rc = copy_modules(&L);
    if (!rc) rc = build_rank(&L);
    sc__free(ctx, L.mod_layer, src->nmodules * sizeof *L.mod_layer);
    sc__free(ctx, L.outmap, (src->nops ? src->nops : 1) * sizeof *L.outmap);
    sc__free(ctx, L.run_of, (src->nops ? src->nops : 1) * sizeof *L.run_of);
    sc__free(ctx, L.runs, L.runs_cap * sizeof *L.runs);
    sc__free(ctx, L.bases, L.bases_cap * sizeof *L.bases);
    if (L.copy_mod) sc__free(ctx, L.copy_mod, copy_mod_len(&L) * sizeof *L.copy_mod);
    sc__free(ctx, L.em, L.em_cap * sizeof *L.em);
    sc__free(ctx, L.srcdep, L.srcdep_cap * sizeof *L.srcdep);
  }
  if (rc) {
    sc_job_free(job);
    return rc;
  }
  *out = job;
  return SC_OK;
}
