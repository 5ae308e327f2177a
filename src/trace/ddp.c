/*
 * ddp.c: PyTorch DistributedDataParallel added to a job of one replica.
 * An ex-situ job (`import cpu`) marks where each parameter's gradient is
 * complete (GRAD ops, in the order backward produces them). DDP as PyTorch
 * 1.x runs it (torch/csrc/distributed/c10d/reducer.cpp, behaviour as
 * documented for DistributedDataParallel):
 *  - gradients are grouped into buckets in the order they become ready
 *    (the reducer rebuilds its buckets in that order after the first
 *    iteration); a bucket closes once it holds at least bucket_cap bytes
 *    (25 MiB by default), the first one at 1 MiB;
 *  - when a gradient is ready, the autograd hook copies it, scaled by
 *    1/world, into its bucket (one kernel on the compute stream);
 *  - when its last gradient is in, the bucket is all-reduced on the
 *    communication stream; buckets are launched in order;
 *  - at the end of backward the compute stream waits for every all-reduce
 *    and the averaged bucket is copied back into the gradients (one kernel
 *    per parameter), before the optimizer step.
 * The result is a new job whose collectives span each rank's data-parallel
 * group: the ranks at its position in every replica of replica_ranks ranks
 * (1: all ranks of the world); replay's --scale dp=N re-prices them for N
 * replicas. A gradient mark that names a group (shard.c's experts under
 * expert parallelism: their expert-data-parallel group) is bucketed apart,
 * in buckets of its own reduced over that group, as Megatron-Core keeps
 * expert and dense gradients in separate buffers.
 */
#include "trace/job_int.h"

#include "ir/ir_int.h"

typedef struct dctx {
  sc_job *job;
  sc_jrank *r;
  int host, gpu, comm;
  uint32_t nm_launch, nm_copy_in, nm_ar, nm_wait, nm_copy_out;
} dctx;

static int64_t add_op(dctx *d, int kind, int stream, uint32_t name, double bytes, int shape_cls,
                      const uint32_t *deps, int ndeps) {
  sc_jop op;
  memset(&op, 0, sizeof op);
  op.start_ns = -1;
  op.name = name;
  op.group = SC_JOB_NONE;
  op.peer = -1;
  op.kind = (uint8_t)kind;
  op.stream = (uint16_t)stream;
  op.bytes = bytes;
  op.coll = SC_JCOLL_UNKNOWN;
  if (shape_cls >= 0) {
    /* Host work of the reducer: C++ called from autograd hooks. */
    sc_jshape sh = {0, shape_cls == SC_JSHAPE_HOST ? 1.0 : 0, 0, 1, (uint8_t)shape_cls};
    int64_t si = sc__jrank_shape(d->job, d->r, &sh);
    if (si < 0) return -1;
    op.shape = (uint32_t)si + 1;
  }
  int64_t k = sc__jrank_op(d->job, d->r, &op);
  if (k < 0) return -1;
  for (int i = 0; i < ndeps; i++)
    if (sc__jrank_dep(d->job, d->r, deps[i])) return -1;
  return k;
}

/* A kernel of `bytes` memory traffic on the compute stream, launched by one
 * dispatched operator on the host. Returns the kernel's index or -1. */
static int64_t add_kernel(dctx *d, uint32_t name, double bytes) {
  int64_t h = add_op(d, SC_JOP_HOST, d->host, d->nm_launch, 0, SC_JSHAPE_HOST, NULL, 0);
  if (h < 0) return -1;
  uint32_t dep = (uint32_t)h;
  return add_op(d, SC_JOP_KERNEL, d->gpu, name, bytes, SC_JSHAPE_MEM, &dep, 1);
}

int sc__job_ddp(const sc_job *in, double bucket_bytes, double first_bytes, int64_t replica_ranks, int64_t cp_ranks,
                int64_t cp_stride, sc_job **out) {
  sc_ctx *ctx = in->ctx;
  *out = NULL;
  sc_job *job;
  int rc = sc_job_new(ctx, &job);
  if (rc) return rc;
  job->world = in->world > 0 ? in->world : (int64_t)in->nranks;
  rc = sc__job_copy_tables(in, job, 1);
  uint32_t grp = 0, grp_name = 0;
  dctx d;
  memset(&d, 0, sizeof d);
  d.job = job;
  int64_t R = replica_ranks > 0 ? replica_ranks : 1;
  if (!rc && job->world % R)
    rc = sc__error(ctx, SC_EINVAL, "ranks per replica (%lld) do not divide the world (%lld)", (long long)R,
                   (long long)job->world);
  if (!rc) rc = sc__job_intern(job, "ddp", 3, &grp_name);
  uint32_t nm_stream = 0;
  if (!rc && (sc__job_intern(job, "launch", 6, &d.nm_launch) ||
              sc__job_intern(job, "ddp: copy gradient into bucket", 30, &d.nm_copy_in) ||
              sc__job_intern(job, "ddp: all_reduce bucket", 22, &d.nm_ar) ||
              sc__job_intern(job, "ddp: wait for all-reduces", 25, &d.nm_wait) ||
              sc__job_intern(job, "ddp: copy bucket into gradient", 30, &d.nm_copy_out) ||
              sc__job_intern(job, "ddp comm", 8, &nm_stream)))
    rc = SC_ENOMEM;
  uint32_t *map = NULL;
  size_t map_cap = 0;
  double *grads = NULL;
  size_t grads_cap = 0;
  for (size_t i = 0; !rc && i < in->nranks; i++) {
    const sc_jrank *src = &in->ranks[i];
    sc_jrank *r = sc__job_add_rank(job, src->rank);
    if (!r) {
      rc = SC_ENOMEM;
      break;
    }
    r->source = src->source;
    r->gpu = src->gpu;
    r->iterations = src->iterations;
    r->span_ns = src->span_ns;
    d.r = r;
    d.host = d.gpu = -1;
    for (size_t s = 0; !rc && s < src->nstreams; s++) {
      int k = sc__jrank_stream(job, r, src->streams[s].id, src->streams[s].name, src->streams[s].host);
      if (k < 0) rc = k;
      if (src->streams[s].host && d.host < 0) d.host = k;
    }
    if (rc) break;
    /* The compute stream: the one the gradients are marked on. */
    size_t last_grad = SIZE_MAX, ngrad = 0;
    for (size_t k = 0; k < src->nops; k++)
      if (src->ops[k].kind == SC_JOP_GRAD) {
        d.gpu = src->ops[k].stream;
        last_grad = k;
        ngrad++;
      }
    if (d.host < 0) {
      uint32_t hn;
      if (sc__job_intern(job, "host", 4, &hn) || (d.host = sc__jrank_stream(job, r, -1, hn, 1)) < 0) {
        rc = SC_ENOMEM;
        break;
      }
    }
    if (ngrad) { /* the rank's data-parallel group: one rank per replica */
      int64_t n = job->world / R, c = cp_ranks > 1 ? cp_ranks : 1;
      int64_t *m = sc__malloc(ctx, (size_t)(n * c) * sizeof *m);
      if (!m) {
        rc = SC_ENOMEM;
        break;
      }
      /* Replica-major, the rank's CP peers inside a replica (ascending). */
      for (int64_t q = 0; q < n; q++)
        for (int64_t j = 0; j < c; j++) m[q * c + j] = src->rank % R + j * cp_stride + q * R;
      rc = sc__job_group_named(job, m, (size_t)(n * c), grp_name, &grp);
      sc__free(ctx, m, (size_t)(n * c) * sizeof *m);
      if (rc) break;
      d.comm = sc__jrank_stream(job, r, 13, nm_stream, 0);
      if (d.comm < 0) {
        rc = d.comm;
        break;
      }
    }
    if (sc__grow(ctx, (void **)&map, sizeof *map, &map_cap, src->nops ? src->nops : 1) ||
        sc__grow(ctx, (void **)&grads, sizeof *grads, &grads_cap, ngrad ? ngrad : 1)) {
      rc = SC_ENOMEM;
      break;
    }
    for (size_t k = 0; !rc && k < src->nshapes; k++)
      if (sc__jrank_shape(job, r, &src->shapes[k]) < 0) rc = SC_ENOMEM;
    /* Buckets: [0] the data-parallel one, [1] of marks naming a group. */
    double cap[2] = {first_bytes, first_bytes}, fill[2] = {0, 0};
    uint32_t bgroup[2] = {grp, SC_JOB_NONE};
    size_t last_of[2] = {SIZE_MAX, SIZE_MAX};
    for (size_t k = 0; k < src->nops; k++)
      if (src->ops[k].kind == SC_JOP_GRAD) last_of[src->ops[k].group != SC_JOB_NONE] = k;
    size_t ng = 0;
    int64_t last_ar = -1;
    for (size_t k = 0; !rc && k < src->nops; k++) {
      sc_jop op = src->ops[k];
      int64_t nk = sc__jrank_op(job, r, &op);
      if (nk < 0) {
        rc = SC_ENOMEM;
        break;
      }
      map[k] = (uint32_t)nk;
      /* The source index for now: a dependency may name a later op (a
       * host sync waits for GPU ops after it), whose new index is known
       * only once every op is copied (remapped below). */
      for (uint32_t q = 0; !rc && q < op.ndeps; q++) rc = sc__jrank_dep(job, r, src->deps[op.dep_off + q]);
      if (rc || op.kind != SC_JOP_GRAD) continue;
      /* Copy (scaled) into the bucket; all-reduce a full bucket. */
      int b = op.group != SC_JOB_NONE;
      if (b) bgroup[1] = op.group, r->ops[nk].group = SC_JOB_NONE; /* a mark, no collective */
      grads[ng++] = op.bytes;
      int64_t cp = add_kernel(&d, d.nm_copy_in, 2 * op.bytes);
      if (cp < 0) {
        rc = SC_ENOMEM;
        break;
      }
      fill[b] += op.bytes;
      if (fill[b] >= cap[b] || k == last_of[b]) {
        int64_t h = add_op(&d, SC_JOP_HOST, d.host, d.nm_launch, 0, SC_JSHAPE_HOST, NULL, 0);
        uint32_t deps[2] = {(uint32_t)cp, (uint32_t)h};
        int64_t ar = h < 0 ? -1 : add_op(&d, SC_JOP_COLL, d.comm, d.nm_ar, fill[b], -1, deps, 2);
        if (ar < 0) {
          rc = SC_ENOMEM;
          break;
        }
        r->ops[ar].group = bgroup[b];
        r->ops[ar].coll = SC_COLL_ALLREDUCE;
        last_ar = ar;
        fill[b] = 0;
        cap[b] = bucket_bytes;
      }
      if (k == last_grad) { /* end of backward: wait, then copy back */
        uint32_t dep = (uint32_t)last_ar;
        if (add_op(&d, SC_JOP_IDLE, d.gpu, d.nm_wait, 0, -1, &dep, 1) < 0) rc = SC_ENOMEM;
        for (size_t g = 0; !rc && g < ng; g++)
          if (add_kernel(&d, d.nm_copy_out, 2 * grads[g]) < 0) rc = SC_ENOMEM;
      }
    }
    for (size_t k = 0; !rc && k < src->nops; k++) {
      const sc_jop *op = &r->ops[map[k]];
      for (uint32_t q = 0; q < op->ndeps; q++) r->deps[op->dep_off + q] = map[r->deps[op->dep_off + q]];
    }
  }
  sc__free(ctx, map, map_cap * sizeof *map);
  sc__free(ctx, grads, grads_cap * sizeof *grads);
  if (rc) {
    sc_job_free(job);
    return rc;
  }
  *out = job;
  return SC_OK;
}
