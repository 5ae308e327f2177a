/*
 * fp8.c: FP8 training of an ex-situ job (`replay` with training.precision
 * fp8), as torchao's Float8Linear and Transformer Engine run it: every
 * nn.Linear's GEMMs (forward, input gradient, weight gradient) on FP8
 * operands, the LM head (a vocabulary-wide linear outside the layers) and
 * attention in the compute dtype. The traced GEMMs keep their dims and
 * bytes; their shape class says which of the three GEMMs each is, so that
 * replay prices it on the FP8 peak with the casts training.fp8_recipe
 * needs before it (replay.c), whatever re-target comes after.
 */
#include "trace/shard_int.h"

#include <string.h>

/* Modules a and b under the same parent module (path up to the last dot). */
static int siblings(const sc_job *job, const sc_jrank *r, size_t a, size_t b) {
  const char *pa = sc__job_str(job, r->modules[a].path), *pb = sc__job_str(job, r->modules[b].path);
  const char *da = strrchr(pa, '.'), *db = strrchr(pb, '.');
  size_t la = da ? (size_t)(da - pa) : 0, lb = db ? (size_t)(db - pb) : 0;
  return a != b && la == lb && !strncmp(pa, pb, la);
}

static int fp8_rank(sc_job *job, sc_jrank *r, int64_t *n) {
  sc_ctx *ctx = job->ctx;
  size_t nm = r->nmodules; /* > 0: sc__job_fp8 checked */
  double *fm = sc__calloc(ctx, 3 * nm, sizeof *fm);
  uint8_t *lin = sc__calloc(ctx, nm, 1), *dx = sc__calloc(ctx, nm, 1);
  int rc = fm && lin && dx ? SC_OK : SC_ENOMEM;
  double *fn = rc ? NULL : fm + nm, *fk = rc ? NULL : fm + 2 * nm;
  if (!rc) sc__shard_forward_dims(r, fm, fn, fk); /* each module's forward GEMM: tokens x out x in */
  for (size_t m = 0; !rc && m < nm; m++)
    lin[m] = fm[m] > 0 && !strcmp(sc__job_str(job, r->modules[m].type), "Linear") &&
             !sc__shard_is_head(job, r, m, fn[m]);
  size_t prev_fwd = SIZE_MAX; /* the last forward FP8 GEMM, SIZE_MAX after any other GEMM or attention */
  for (size_t k = 0; !rc && k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    sc_jop *op = &r->ops[k];
    int cls = op->kind == SC_JOP_KERNEL && op->shape ? r->shapes[op->shape - 1].cls : -1;
    int lin_gemm = om.module && op->shape && !om.param && lin[om.module - 1] && cls == SC_JSHAPE_GEMM &&
                   r->shapes[op->shape - 1].batch <= 1;
    if (!lin_gemm) {
      if (cls == SC_JSHAPE_GEMM || sc__jshape_attn(cls) || cls == SC_JSHAPE_CONV || cls == SC_JSHAPE_NORM)
        prev_fwd = SIZE_MAX;
      continue;
    }
    sc_jshape sh = r->shapes[op->shape - 1];
    size_t m = om.module - 1;
    if (om.pass == SC_JPASS_FWD || om.pass == SC_JPASS_RECOMP) {
      /* Linears that share an input (q, k, v; gate, up): siblings under
       * one module, of the same input dims, with no other GEMM, attention
       * or normalisation between. The input is cast once (compiled, the
       * casts are one kernel). */
      int shared = prev_fwd != SIZE_MAX && r->shapes[r->ops[prev_fwd].shape - 1].m == sh.m &&
                   r->shapes[r->ops[prev_fwd].shape - 1].k == sh.k && sc__jrank_opmod(r, prev_fwd).pass == om.pass &&
                   siblings(job, r, sc__jrank_opmod(r, prev_fwd).module - 1, m);
      sh.cls = shared ? SC_JSHAPE_GEMM8_FWD_SHARED : SC_JSHAPE_GEMM8_FWD;
      dx[m] = 0;
    } else if (om.pass == SC_JPASS_BWD) {
      /* The input gradient (tokens x in, over out) first, as PyTorch's mm
       * backward computes it; the weight gradient reduces over the tokens. */
      int input_grad = sh.m == fm[m] && sh.n == fk[m] && sh.k == fn[m] && !dx[m];
      sh.cls = input_grad ? SC_JSHAPE_GEMM8_DGRAD : SC_JSHAPE_GEMM8_WGRAD;
      dx[m] = (uint8_t)input_grad;
    } else continue;
    int64_t si = sc__jrank_shape(job, r, &sh);
    if (si < 0) {
      rc = SC_ENOMEM;
      break;
    }
    op->shape = (uint32_t)si + 1;
    prev_fwd = sh.cls == SC_JSHAPE_GEMM8_FWD || sh.cls == SC_JSHAPE_GEMM8_FWD_SHARED ? k : SIZE_MAX;
    (*n)++;
  }
  sc__free(ctx, fm, 3 * nm * sizeof *fm);
  sc__free(ctx, lin, nm);
  sc__free(ctx, dx, nm);
  return rc;
}

int sc__job_fp8(const sc_job *in, sc_job **out, int64_t *n) {
  *out = NULL;
  *n = 0;
  int rc = sc__job_need_modules(in, "precision fp8");
  if (rc) return rc;
  sc_job *job;
  rc = sc__job_clone(in, &job);
  for (size_t i = 0; !rc && i < job->nranks; i++) rc = fp8_rank(job, &job->ranks[i], n);
  if (rc) {
    sc_job_free(job);
    return rc;
  }
  *out = job;
  return SC_OK;
}
