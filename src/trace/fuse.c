/*
 * fuse.c: torch.compile's fusion of an eager ex-situ trace (`replay
 * --compile`). An eager step launches one kernel per elementwise or
 * reduction operator; TorchInductor, compiling each transformer block (as
 * torchtitan does), fuses the pointwise and reduction operators between two
 * GEMMs, attention kernels or collectives into generated kernels that read
 * their inputs and write their outputs once. The trace does not record
 * which tensors are intermediates, so the model is coarse: within one
 * layer's pass (forward, backward or recomputation) on one GPU stream, each
 * maximal run of memory-bound kernels (shape classes MEM and NORM) with no
 * other kernel between becomes one kernel moving the bytes of the run's
 * largest member (a fused RMSNorm reads x and writes y, what its widest
 * eager step, the product with the inverse root, moves; a fused SwiGLU
 * reads the gate and the up projection and writes their product, what the
 * eager product moves; the run keeps its first kernel's shape class, so a
 * run that starts with a normalisation is priced as one). Outside the
 * layers (embedding, loss, optimizer)
 * nothing is fused: torchtitan compiles the blocks only. sc__job_fused
 * applies it to a copy of the job before any re-target: an absorbed kernel
 * moves 0 bytes (priced at 0), the run's first the run's bytes.
 */
#include "trace/shard_int.h"

#include <math.h>
#include <stdlib.h>

static int jrank_fuse(const sc_job *job, const sc_jrank *r, double *bytes) {
  sc_ctx *ctx = job->ctx;
  size_t nm = r->nmodules ? r->nmodules : 1, ns = r->nstreams ? r->nstreams : 1;
  int32_t *mod_layer = sc__malloc(ctx, nm * sizeof *mod_layer);
  /* Per stream: the open run's head (SIZE_MAX none), its layer and pass. */
  size_t *head = sc__malloc(ctx, ns * sizeof *head);
  int32_t *layer = sc__malloc(ctx, ns * sizeof *layer);
  uint8_t *pass = sc__malloc(ctx, ns);
  if (!mod_layer || !head || !layer || !pass) {
    sc__free(ctx, mod_layer, nm * sizeof *mod_layer);
    sc__free(ctx, head, ns * sizeof *head);
    sc__free(ctx, layer, ns * sizeof *layer);
    sc__free(ctx, pass, ns);
    return SC_ENOMEM;
  }
  if (r->nmodules) sc__shard_layers(job, r, mod_layer, NULL);
  for (size_t s = 0; s < ns; s++) head[s] = SIZE_MAX;
  for (size_t k = 0; k < r->nops; k++) {
    bytes[k] = -1;
    const sc_jop *op = &r->ops[k];
    if (op->kind == SC_JOP_HOST || op->kind == SC_JOP_SYNC || op->kind == SC_JOP_GRAD) continue;
    size_t s = op->stream < ns ? op->stream : 0;
    sc_jopmod om = sc__jrank_opmod(r, k);
    int cls = op->kind == SC_JOP_KERNEL && op->shape ? r->shapes[op->shape - 1].cls : -1;
    int32_t l = om.module && r->nmodules ? mod_layer[om.module - 1] : -1;
    int act = om.pass == SC_JPASS_FWD || om.pass == SC_JPASS_BWD || om.pass == SC_JPASS_RECOMP;
    if ((cls != SC_JSHAPE_MEM && cls != SC_JSHAPE_NORM) || l < 0 || !act || om.param) {
      head[s] = SIZE_MAX; /* a GEMM, attention, collective, or work outside the blocks */
      continue;
    }
    if (head[s] != SIZE_MAX && layer[s] == l && pass[s] == om.pass) { /* joins the run */
      size_t h = head[s];
      bytes[h] = fmax(bytes[h], op->bytes);
      bytes[k] = 0;
      continue;
    }
    head[s] = k, layer[s] = l, pass[s] = om.pass;
    bytes[k] = op->bytes;
  }
  sc__free(ctx, mod_layer, nm * sizeof *mod_layer);
  sc__free(ctx, head, ns * sizeof *head);
  sc__free(ctx, layer, ns * sizeof *layer);
  sc__free(ctx, pass, ns);
  return SC_OK;
}

/* A growable image for the copy (sc_job_write into memory). */
typedef struct img {
  sc_ctx *ctx;
  char *p;
  size_t n, cap;
} img;

static int img_write(void *ud, const char *s, size_t n) {
  img *b = ud;
  if (sc__grow(b->ctx, (void **)&b->p, 1, &b->cap, b->n + n)) return SC_ENOMEM;
  memcpy(b->p + b->n, s, n);
  b->n += n;
  return SC_OK;
}

int sc__job_clone(const sc_job *in, sc_job **out) {
  img b = {in->ctx, NULL, 0, 0};
  *out = NULL;
  int rc = sc_job_write(in, img_write, &b);
  if (!rc) rc = sc_job_read(in->ctx, "the job", b.p, b.n, out);
  sc__free(in->ctx, b.p, b.cap);
  return rc;
}

int sc__job_fused(const sc_job *in, sc_job **out, int64_t *absorbed) {
  sc_ctx *ctx = in->ctx;
  *out = NULL;
  *absorbed = 0;
  int rc = sc__job_need_modules(in, "--compile");
  if (rc) return rc;
  sc_job *job = NULL;
  rc = sc__job_clone(in, &job);
  for (size_t i = 0; !rc && i < job->nranks; i++) {
    sc_jrank *r = &job->ranks[i];
    size_t n = r->nops ? r->nops : 1;
    double *bytes = sc__malloc(ctx, n * sizeof *bytes);
    rc = bytes ? jrank_fuse(job, r, bytes) : SC_ENOMEM;
    for (size_t k = 0; !rc && k < r->nops; k++)
      if (bytes[k] >= 0) {
        r->ops[k].bytes = bytes[k];
        *absorbed += bytes[k] == 0;
      }
    sc__free(ctx, bytes, n * sizeof *bytes);
  }
  if (rc) {
    sc_job_free(job);
    return rc;
  }
  *out = job;
  return SC_OK;
}
