/*
 * exsitu.c: ex-situ traces (`stepcast import cpu`): one training step of a
 * PyTorch model profiled on a CPU (tools/trace_torch.py, or any Kineto-layout
 * trace with "cpu_op" events carrying "Input Dims"). No kernel ran on a GPU,
 * so nothing is measured: each aten operator becomes the GPU kernel(s) it
 * would launch, described by its shape (a GEMM m x n x k, a convolution as
 * implicit GEMM, or the bytes of a memory-bound kernel) and priced at replay
 * for the target GPU; the host launches them one after another, paying a
 * calibrated time per dispatched operator (one for operators called from
 * Python: forward, optimizer; another for those the C++ autograd engine runs:
 * backward). AccumulateGrad events mark where
 * each parameter's gradient is complete (GRAD ops), for DDP at replay.
 *
 * Which events become kernels. Operators nest (aten::linear calls
 * aten::addmm; an autograd node calls its backward operators). A *priced*
 * operator (GEMM, convolution, a known memory-bound kernel) becomes kernels
 * unless an enclosing operator is itself priced (its children are its
 * implementation: the CPU's, which a GPU replaces by one cuDNN / cuBLAS
 * call). Composite and view operators launch nothing themselves. An unknown
 * aten operator with tensor inputs and no children is priced as a memory-bound
 * kernel with a counted warning. Operators whose tensors are all 0-dim are
 * host-side scalars (optimizer step counters) and launch nothing.
 */
#include "trace/chrome_int.h"
#include "trace/shard_int.h"
#include "trace/trace_int.h"
#include "cost/cost_int.h"
#include "ir/ir_int.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ operator table */

enum {
  H_ZERO = 0,  /* view / metadata / allocation: no kernel */
  H_COMPOSITE, /* calls other operators; launches nothing itself */
  H_GEMM_MM,   /* mm(A[m,k], B[k,n]) */
  H_GEMM_ADDMM,/* addmm(C, A, B) */
  H_GEMM_BMM,  /* bmm(A[b,m,k], B[b,k,n]) */
  H_GEMM_BADDBMM,
  H_CONV,      /* convolution(x, w, bias, stride, padding, dilation, transposed, out_pad, groups) */
  H_CONV_BWD,  /* convolution_backward(gy, x, w, bias_sizes, stride, ..., groups, output_mask) */
  H_MEM,       /* inputs read, largest input written */
  H_WRITE,     /* fill / zero / RNG in place: input 0 written */
  H_COPY,      /* copy_(dst, src) */
  H_NORM_FWD,  /* layer norm: x read, y written */
  H_NORM_BWD,  /* layer norm backward: gy, x read, gx written */
  H_BN_FWD,    /* batch norm training: statistics pass + normalise pass */
  H_BN_BWD,    /* batch norm backward: reduction pass + elementwise pass */
  H_SOFTMAX,   /* x read, y written */
  H_SOFTMAX_BWD,
  H_REDUCE,    /* x read, small output */
  H_DROPOUT,   /* fused dropout: x read, y and a byte mask written */
  H_POOL,      /* max_pool2d(x, kernel, stride, padding, dilation, ceil) */
  H_POOL_BWD,  /* max_pool2d_with_indices_backward(gy, x, ..., indices) */
  H_EMBED,     /* embedding(weight, indices): rows gathered */
  H_EMBED_BWD, /* embedding_dense_backward(gy, indices, ...) */
  H_NLL_FWD,   /* nll_loss_forward(x[N,C], target[N]): N elements */
  H_NLL_BWD,   /* nll_loss_backward(gy, x[N,C], target): gx written */
  H_ACCGRAD,   /* torch::autograd::AccumulateGrad(grad): in-place add, gradient ready */
  H_ATTN_FWD,  /* fused attention (PyTorch 2's SDPA kernels): q, k, v [b, heads, s, d] */
  H_ATTN_BWD,  /* its backward: grad_out, q, k, v, ... */
  H_FUSED_ADAM /* torch.optim.Adam(W)(fused=True): one kernel over TensorLists, which the
                * profiler records without shapes: sized by the step's gradients */
};

/* The fused attention operators SDPA records (PyTorch 2.x,
 * native_functions.yaml): q, k, v (after grad_out in backward) as
 * [batch, heads, sequence, head dim], and the position of `is_causal`
 * among the arguments ("Concrete Inputs"). */
static const struct attn_op { const char *name; uint8_t causal_arg; } attn_ops[] = {
    {"aten::_scaled_dot_product_cudnn_attention", 6},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 14},
    {"aten::_scaled_dot_product_efficient_attention", 6},
    {"aten::_scaled_dot_product_efficient_attention_backward", 11},
    {"aten::_scaled_dot_product_flash_attention", 4},
    {"aten::_scaled_dot_product_flash_attention_backward", 11},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", 4},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", 7},
};

typedef struct xop { const char *name; uint8_t h; } xop;

/* Sorted by name (bsearch). */
static const xop ops[] = {
    {"aten::_adaptive_avg_pool2d", H_MEM},
    {"aten::_adaptive_avg_pool2d_backward", H_MEM},
    {"aten::_batch_norm_impl_index", H_COMPOSITE},
    {"aten::_convolution", H_CONV},
    {"aten::_fused_adam", H_FUSED_ADAM},
    {"aten::_fused_adam_", H_FUSED_ADAM},
    {"aten::_fused_adamw", H_FUSED_ADAM},
    {"aten::_fused_adamw_", H_FUSED_ADAM},
    {"aten::_fused_dropout", H_DROPOUT},
    {"aten::_has_compatible_shallow_copy_type", H_ZERO},
    {"aten::_local_scalar_dense", H_ZERO},
    {"aten::_log_softmax", H_SOFTMAX},
    {"aten::_log_softmax_backward_data", H_SOFTMAX_BWD},
    {"aten::_reshape_alias", H_ZERO},
    {"aten::_scaled_dot_product_cudnn_attention", H_ATTN_FWD},
    {"aten::_scaled_dot_product_cudnn_attention_backward", H_ATTN_BWD},
    {"aten::_scaled_dot_product_efficient_attention", H_ATTN_FWD},
    {"aten::_scaled_dot_product_efficient_attention_backward", H_ATTN_BWD},
    {"aten::_scaled_dot_product_flash_attention", H_ATTN_FWD},
    {"aten::_scaled_dot_product_flash_attention_backward", H_ATTN_BWD},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", H_ATTN_FWD},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", H_ATTN_BWD},
    {"aten::_softmax", H_SOFTMAX},
    {"aten::_softmax_backward_data", H_SOFTMAX_BWD},
    {"aten::_to_copy", H_COMPOSITE},
    {"aten::_unsafe_view", H_ZERO},
    {"aten::abs", H_MEM},
    {"aten::adaptive_avg_pool2d", H_COMPOSITE},
    {"aten::add", H_MEM},
    {"aten::add_", H_MEM},
    {"aten::addbmm", H_GEMM_BADDBMM},
    {"aten::addcdiv", H_MEM},
    {"aten::addcdiv_", H_MEM},
    {"aten::addcmul", H_MEM},
    {"aten::addcmul_", H_MEM},
    {"aten::addmm", H_GEMM_ADDMM},
    {"aten::alias", H_ZERO},
    {"aten::arange", H_ZERO},
    {"aten::as_strided", H_ZERO},
    {"aten::as_strided_", H_ZERO},
    {"aten::baddbmm", H_GEMM_BADDBMM},
    {"aten::batch_norm", H_COMPOSITE},
    {"aten::bernoulli_", H_WRITE},
    {"aten::bmm", H_GEMM_BMM},
    {"aten::chunk", H_ZERO},
    {"aten::clamp", H_MEM},
    {"aten::clamp_", H_MEM},
    {"aten::clamp_min", H_MEM},
    {"aten::clamp_min_", H_MEM},
    {"aten::clone", H_COMPOSITE},
    {"aten::contiguous", H_COMPOSITE},
    {"aten::conv2d", H_COMPOSITE},
    {"aten::convolution", H_CONV},
    {"aten::convolution_backward", H_CONV_BWD},
    {"aten::copy_", H_COPY},
    {"aten::cos", H_MEM},
    {"aten::cross_entropy_loss", H_COMPOSITE},
    {"aten::cudnn_batch_norm", H_BN_FWD},
    {"aten::cudnn_batch_norm_backward", H_BN_BWD},
    {"aten::cudnn_convolution", H_CONV},
    {"aten::cumsum", H_MEM},
    {"aten::detach", H_ZERO},
    {"aten::detach_", H_ZERO},
    {"aten::div", H_MEM},
    {"aten::div_", H_MEM},
    {"aten::dropout", H_DROPOUT},
    {"aten::embedding", H_EMBED},
    {"aten::embedding_backward", H_COMPOSITE},
    {"aten::embedding_dense_backward", H_EMBED_BWD},
    {"aten::empty", H_ZERO},
    {"aten::empty_like", H_ZERO},
    {"aten::empty_strided", H_ZERO},
    {"aten::eq", H_MEM},
    {"aten::erf", H_MEM},
    {"aten::exp", H_MEM},
    {"aten::expand", H_ZERO},
    {"aten::expand_as", H_ZERO},
    {"aten::feature_dropout", H_DROPOUT},
    {"aten::fill_", H_WRITE},
    {"aten::flatten", H_ZERO},
    {"aten::full", H_COMPOSITE},
    {"aten::gather", H_MEM},
    {"aten::ge", H_MEM},
    {"aten::gelu", H_MEM},
    {"aten::gelu_backward", H_MEM},
    {"aten::gt", H_MEM},
    {"aten::hardtanh", H_MEM},
    {"aten::hardtanh_", H_MEM},
    {"aten::index_add_", H_MEM},
    {"aten::index_select", H_MEM},
    {"aten::is_nonzero", H_ZERO},
    {"aten::is_same_size", H_ZERO}, /* a metadata check (custom autograd Functions' backward) */
    {"aten::item", H_ZERO},
    {"aten::layer_norm", H_COMPOSITE},
    {"aten::le", H_MEM},
    {"aten::lerp_", H_MEM},
    {"aten::lift", H_ZERO},
    {"aten::lift_fresh", H_ZERO},
    {"aten::linear", H_COMPOSITE},
    {"aten::log", H_MEM},
    {"aten::log_softmax", H_COMPOSITE},
    {"aten::logical_not", H_MEM},
    {"aten::lt", H_MEM},
    {"aten::masked_fill", H_MEM},
    {"aten::masked_fill_", H_MEM},
    {"aten::matmul", H_COMPOSITE},
    {"aten::max_pool2d", H_POOL},
    {"aten::max_pool2d_with_indices", H_POOL},
    {"aten::max_pool2d_with_indices_backward", H_POOL_BWD},
    {"aten::maximum", H_MEM},
    {"aten::mean", H_REDUCE},
    {"aten::minimum", H_MEM},
    {"aten::mkldnn_convolution", H_CONV},
    {"aten::mm", H_GEMM_MM},
    {"aten::mse_loss", H_MEM},
    {"aten::mse_loss_backward", H_MEM},
    {"aten::mul", H_MEM},
    {"aten::mul_", H_MEM},
    {"aten::narrow", H_ZERO},
    {"aten::native_batch_norm", H_BN_FWD},
    {"aten::native_batch_norm_backward", H_BN_BWD},
    {"aten::native_dropout", H_DROPOUT},
    {"aten::native_dropout_backward", H_MEM},
    {"aten::native_layer_norm", H_NORM_FWD},
    {"aten::native_layer_norm_backward", H_NORM_BWD},
    {"aten::ne", H_MEM},
    {"aten::neg", H_MEM},
    {"aten::new_empty", H_ZERO},
    {"aten::new_empty_strided", H_ZERO},
    {"aten::new_zeros", H_COMPOSITE},
    {"aten::nll_loss", H_COMPOSITE},
    {"aten::nll_loss_backward", H_NLL_BWD},
    {"aten::nll_loss_forward", H_NLL_FWD},
    {"aten::nll_loss_nd", H_COMPOSITE},
    {"aten::norm", H_MEM},
    {"aten::normal_", H_WRITE},
    {"aten::numel", H_ZERO},
    {"aten::ones", H_COMPOSITE},
    {"aten::ones_like", H_COMPOSITE},
    {"aten::permute", H_ZERO},
    {"aten::pow", H_MEM},
    {"aten::reciprocal", H_MEM},
    {"aten::relu", H_MEM},
    {"aten::relu_", H_MEM},
    {"aten::reshape", H_COMPOSITE},
    {"aten::resize_", H_ZERO},
    {"aten::resolve_conj", H_ZERO},
    {"aten::resolve_neg", H_ZERO},
    {"aten::result_type", H_ZERO},
    {"aten::rsqrt", H_MEM},
    {"aten::rsub", H_MEM},
    {"aten::scalar_tensor", H_ZERO},
    {"aten::scaled_dot_product_attention", H_COMPOSITE},
    {"aten::scatter_add_", H_MEM},
    {"aten::select", H_ZERO},
    {"aten::set_", H_ZERO},
    {"aten::sgn", H_MEM},
    {"aten::sigmoid", H_MEM},
    {"aten::sigmoid_backward", H_MEM},
    {"aten::sign", H_MEM},
    {"aten::silu", H_MEM},
    {"aten::silu_backward", H_MEM},
    {"aten::sin", H_MEM},
    {"aten::size", H_ZERO},
    {"aten::slice", H_ZERO},
    {"aten::softmax", H_COMPOSITE},
    {"aten::split", H_ZERO},
    {"aten::split_with_sizes", H_ZERO},
    {"aten::sqrt", H_MEM},
    {"aten::square", H_MEM},
    {"aten::squeeze", H_ZERO},
    {"aten::stride", H_ZERO},
    {"aten::sub", H_MEM},
    {"aten::sub_", H_MEM},
    {"aten::sum", H_REDUCE},
    {"aten::sum_to_size", H_MEM},
    {"aten::t", H_ZERO},
    {"aten::tanh", H_MEM},
    {"aten::tanh_backward", H_MEM},
    {"aten::threshold", H_MEM},
    {"aten::threshold_backward", H_MEM},
    {"aten::to", H_COMPOSITE},
    {"aten::transpose", H_ZERO},
    {"aten::unbind", H_ZERO},
    {"aten::unflatten", H_ZERO},
    {"aten::uniform_", H_WRITE},
    {"aten::unsqueeze", H_ZERO},
    {"aten::view", H_ZERO},
    {"aten::view_as", H_ZERO},
    {"aten::where", H_MEM},
    {"aten::zero_", H_WRITE},
    {"aten::zeros", H_COMPOSITE},
    {"aten::zeros_like", H_COMPOSITE},
    {"detach", H_ZERO},
    {"detach_", H_ZERO},
    {"torch::autograd::AccumulateGrad", H_ACCGRAD},
};

static int cmp_xop(const void *key, const void *e) { return strcmp(key, ((const xop *)e)->name); }

/* Handler of an operator name; -1 unknown. Non-aten names (autograd nodes,
 * record_function ranges) are composite. */
static int op_handler(const char *name) {
  const xop *o = bsearch(name, ops, sizeof ops / sizeof ops[0], sizeof ops[0], cmp_xop);
  if (o) return o->h;
  return strncmp(name, "aten::", 6) ? H_COMPOSITE : -1;
}

/* ------------------------------------------------------------ reading */

typedef struct xev {
  int64_t ts, dur, tid;
  uint64_t off;          /* file offset, for messages */
  uint32_t name;         /* interned */
  uint32_t dims_off;     /* x->dims: per input its rank, then its sizes */
  uint32_t ninputs;
  uint32_t eb_off;       /* x->eb: bytes per element per input (0 unknown) */
  uint32_t conc_off, nconc; /* x->conc: string ids of "Concrete Inputs" */
  uint32_t mod, mtype;   /* "Module", "Module Type" (string ids; has_mod) */
  uint32_t heads;        /* "Module Heads" (0 unknown) */
  uint8_t has_mod;
  uint8_t pass;          /* "Pass": SC_JPASS_* */
  uint8_t param;         /* "Parameter": SC_JPARAM_* */
  uint8_t step;          /* a ProfilerStep range */
  uint8_t has_list;      /* an input is a tensor list ("Input type" TensorList) */
  /* pass 2 */
  int32_t parent;
  int8_t h;              /* handler */
  uint8_t priced_above;  /* an enclosing operator is priced */
  uint8_t has_children;  /* 1: some; 3: one is not H_ZERO */
  uint8_t in_autograd;   /* runs inside an autograd node (the C++ engine) */
} xev;

/* Members of args we read (member ids, in arg_keys order) and the
 * distributedInfo members. */
enum { A_DIMS = SC_CHROME_ARG, A_TYPES, A_CONC, A_MOD, A_MTYPE, A_PASS, A_PARAM, A_HEADS, A_CORR };
static const char *const arg_keys[] = {"Input Dims", "Input type", "Concrete Inputs", "Module", "Module Type",
                                       "Pass", "Parameter", "Module Heads", "correlation", NULL};
/* tp, pp, pp_stage: a per-rank shard trace (tools/trace_torch.py --tp N
 * --pp-stage K/P): which TP degree, pipeline and stage it was traced for. */
enum { D_RANK = 0, D_WORLD, D_TP, D_PP, D_STAGE, D_COUNT };
static const char *const dist_keys[] = {"rank", "world_size", "tp", "pp", "pp_stage", NULL};
static const char *const meta_keys[] = {"deviceProperties", NULL};

/* A CUDA runtime or driver call of a GPU trace (SC_TRACE_CPU_OF_GPU): a
 * launch (kernel, copy, memset, graph) or a call that blocks the host
 * until the GPU is done (device / stream / event synchronisation). */
enum { RT_LAUNCH = 1, RT_SYNC };
typedef struct rtev { int64_t ts, dur, tid, corr; uint8_t kind; } rtev;
/* A GPU trace's kernel (or copy, memset): its launch's correlation id and
 * its duration. */
typedef struct gkev { int64_t corr, dur; } gkev;

typedef struct xin {
  sc_chrome c;
  /* the event being read */
  char ph;
  int is_cpu_op, is_step, is_gpu, is_rt;
  int has_ts, has_dur, has_name;
  int64_t ts, dur, tid;
  uint32_t name;
  uint64_t off;
  uint32_t mod, mtype, heads; /* module of the event (has_mod) */
  int has_mod;
  uint8_t pass, param;
  int64_t *cur_dims;     /* this event's Input Dims, in the dims layout */
  size_t ncur_dims, cur_dims_cap;
  uint32_t cur_inputs;
  size_t cur_rank_at;    /* index of the current input's rank slot; SIZE_MAX none */
  int cur_bad_input;
  int cur_list;          /* "Input type" named a TensorList */
  uint8_t *cur_eb;
  size_t ncur_eb, cur_eb_cap;
  uint32_t *cur_conc;
  size_t ncur_conc, cur_conc_cap;
  /* distributedInfo */
  int64_t rank, world;
  int have_rank;
  int64_t shard[3];      /* tp, pp, pp_stage (D_TP - D_TP ...); -1 not given */
  uint64_t shard_off[3]; /* ... where each was read */
  /* records */
  xev *ev;
  size_t nev, ev_cap;
  int64_t *dims;
  size_t ndims, dims_cap;
  uint8_t *eb;
  size_t neb, eb_cap;
  uint32_t *conc;
  size_t nconc, conc_cap;
  int64_t gpu_events;
  rtev *rt;              /* runtime calls, GPU traces only */
  size_t nrt, rt_cap;
  gkev *gk;              /* kernels, GPU traces only */
  size_t ngk, gk_cap;
  int64_t corr;          /* the event's "correlation" (has_corr) */
  int has_corr;
  int64_t dev_id;        /* deviceProperties: the lowest id and its name (GPU traces) */
  uint32_t dev_name;
} xin;

/* Raw string s[0..n) equal to lit. */
#define IS(s, n, lit) ((n) == sizeof(lit) - 1 && !memcmp(s, lit, sizeof(lit) - 1))

static xin *X(sc_trace_reader *r) { return r->state; }

static int on_event(void *ud, const sc_chrome_event *ce);
static int on_item(void *ud, const sc_chrome_item *it);

/* Names and thread ids are members: interned in document order with the
 * concrete inputs. */
static const sc_chrome_spec exsitu_spec = {
    .members = 1u << SC_CHROME_NAME | 1u << SC_CHROME_TID,
    .arg_keys = arg_keys,
    .dist_keys = dist_keys,
    .meta_keys = meta_keys,
    .not_object = "not a trace: the top level is not an object",
    .ts_range = "timestamp out of range",
    .dur_range = "duration out of range",
    .event = on_event,
    .item = on_item};

static int xs_open(sc_trace_reader *r) {
  xin *x = sc__calloc(r->ctx, 1, sizeof *x);
  if (!x) return SC_ENOMEM;
  int rc = sc__chrome_init(&x->c, r->ctx, &exsitu_spec, r);
  if (rc) {
    sc__free(r->ctx, x, sizeof *x);
    return rc;
  }
  x->rank = -1;
  x->dev_id = -1;
  for (int i = 0; i < 3; i++) x->shard[i] = -1;
  r->state = x;
  return SC_OK;
}

#define FREE_ARR(ctx, p, cap) sc__free(ctx, p, (cap) * sizeof *(p))

static void xs_close(sc_trace_reader *r) {
  xin *x = X(r);
  sc_ctx *ctx = r->ctx;
  sc__chrome_free(&x->c);
  FREE_ARR(ctx, x->cur_dims, x->cur_dims_cap);
  FREE_ARR(ctx, x->cur_eb, x->cur_eb_cap);
  FREE_ARR(ctx, x->cur_conc, x->cur_conc_cap);
  FREE_ARR(ctx, x->ev, x->ev_cap);
  FREE_ARR(ctx, x->rt, x->rt_cap);
  FREE_ARR(ctx, x->gk, x->gk_cap);
  FREE_ARR(ctx, x->dims, x->dims_cap);
  FREE_ARR(ctx, x->eb, x->eb_cap);
  FREE_ARR(ctx, x->conc, x->conc_cap);
  sc__free(ctx, x, sizeof *x);
  r->state = NULL;
}


static int intern_tok(sc_trace_reader *r, const sc_jtok *t, uint32_t *id) {
  char buf[512];
  size_t n;
  if (!t->escaped) {
    n = t->n < sizeof buf - 1 ? t->n : sizeof buf - 1;
    memcpy(buf, t->s, n);
  } else {
    n = sc__json_unescape(t->s, t->n, buf, sizeof buf);
    if (n > sizeof buf - 1) n = sizeof buf - 1;
  }
  return sc__job_intern(r->job, buf, n, id);
}

static void reset_event(xin *x, uint64_t off) {
  x->ph = 0;
  x->is_cpu_op = x->is_step = x->is_gpu = x->is_rt = 0;
  x->has_ts = x->has_dur = x->has_name = x->has_corr = 0;
  x->ts = x->dur = x->tid = 0;
  x->off = off;
  x->mod = x->mtype = x->heads = 0;
  x->has_mod = 0;
  x->pass = x->param = 0;
  x->ncur_dims = x->ncur_eb = x->ncur_conc = 0;
  x->cur_list = 0;
  x->cur_inputs = 0;
  x->cur_rank_at = SIZE_MAX;
}

/* The kind of a runtime call by its name; 0 one that neither launches
 * nor waits (attribute queries, event records, ...). */
static uint8_t rt_kind(const char *nm) {
  if (strstr(nm, "Synchronize")) return RT_SYNC; /* cudaDeviceSynchronize, cudaStreamSynchronize, ... */
  if (strstr(nm, "Launch") || !strncmp(nm, "cudaMemcpy", 10) || !strncmp(nm, "cudaMemset", 10) ||
      !strncmp(nm, "cuMemcpy", 8) || !strncmp(nm, "cuMemset", 8))
    return RT_LAUNCH;
  return 0;
}

static int end_event(sc_trace_reader *r) {
  xin *x = X(r);
  if (x->is_gpu) {
    x->gpu_events++;
    if (r->fmt != SC_TRACE_CPU_OF_GPU || !x->has_corr || !x->has_dur || x->dur < 0 || (double)x->dur > SC_WORK_MAX)
      return SC_OK;
    if ((int64_t)x->ngk >= SC_TRACE_MAX_RECORDS)
      return sc__trace_fail(r, SC_EINVAL, x->off, "more than %lld GPU kernels: too many for one rank's trace",
                            (long long)SC_TRACE_MAX_RECORDS);
    gkev g = {x->corr, x->dur};
    return sc__trace_push(r->ctx, (void **)&x->gk, sizeof g, &x->ngk, &x->gk_cap, &g);
  }
  if (x->is_rt) { /* kept for a GPU trace's host timeline (xs_build) */
    if (r->fmt != SC_TRACE_CPU_OF_GPU || x->ph != 'X' || !x->has_name || !x->has_ts || !x->has_dur ||
        x->dur < 0 || (double)x->dur > SC_WORK_MAX || x->ts < -((int64_t)1 << 62) || x->ts > ((int64_t)1 << 62))
      return SC_OK;
    rtev v = {x->ts, x->dur, x->tid, x->has_corr ? x->corr : -1, rt_kind(sc__job_str(r->job, x->name))};
    if (!v.kind) return SC_OK;
    if ((int64_t)x->nrt >= SC_TRACE_MAX_RECORDS)
      return sc__trace_fail(r, SC_EINVAL, x->off, "more than %lld CUDA runtime calls: too many for one rank's trace",
                            (long long)SC_TRACE_MAX_RECORDS);
    return sc__trace_push(r->ctx, (void **)&x->rt, sizeof v, &x->nrt, &x->rt_cap, &v);
  }
  if (x->ph != 'X' || !(x->is_cpu_op || x->is_step)) return SC_OK;
  if (!x->has_name || !x->has_ts || !x->has_dur)
    return sc__trace_fail(r, SC_EINVAL, x->off, "operator event without %s",
                          !x->has_name ? "a name" : !x->has_ts ? "\"ts\"" : "\"dur\"");
  if (x->dur < 0) return sc__trace_fail(r, SC_EINVAL, x->off, "negative duration");
  /* Times in bounds, so that sums and differences stay in int64 (as in
   * kineto.c): |ts| <= 2^62 ns, dur <= SC_WORK_MAX (2^50 ns, 13 days). */
  if (x->ts < -((int64_t)1 << 62) || x->ts > ((int64_t)1 << 62))
    return sc__trace_fail(r, SC_EINVAL, x->off, "ts: %lld ns out of range [%lld, %lld]", (long long)x->ts,
                          -((long long)1 << 62), (long long)1 << 62);
  if ((double)x->dur > SC_WORK_MAX)
    return sc__trace_fail(r, SC_EINVAL, x->off, "dur: %lld ns out of range [0, %lld]", (long long)x->dur,
                          (long long)SC_WORK_MAX);
  if ((int64_t)x->nev >= SC_TRACE_MAX_RECORDS)
    return sc__trace_fail(r, SC_EINVAL, x->off, "more than %lld operator events: too many for one rank's trace",
                          (long long)SC_TRACE_MAX_RECORDS);
  xev e;
  memset(&e, 0, sizeof e);
  e.ts = x->ts;
  e.dur = x->dur;
  e.tid = x->tid;
  e.off = x->off;
  e.name = x->name;
  e.step = (uint8_t)x->is_step;
  e.has_list = (uint8_t)x->cur_list;
  e.mod = x->mod;
  e.mtype = x->mtype;
  e.heads = x->heads;
  e.has_mod = (uint8_t)x->has_mod;
  e.pass = x->pass;
  e.param = x->param;
  e.parent = -1;
  e.dims_off = (uint32_t)x->ndims;
  e.ninputs = x->cur_inputs;
  e.eb_off = (uint32_t)x->neb;
  e.conc_off = (uint32_t)x->nconc;
  e.nconc = (uint32_t)x->ncur_conc;
  sc_ctx *ctx = r->ctx;
  /* Element sizes per input: from "Input type" when it lines up. */
  for (uint32_t i = 0; i < e.ninputs; i++) {
    uint8_t b = i < x->ncur_eb ? x->cur_eb[i] : 0;
    if (sc__trace_push(ctx, (void **)&x->eb, 1, &x->neb, &x->eb_cap, &b)) return SC_ENOMEM;
  }
  for (size_t i = 0; i < x->ncur_dims; i++)
    if (sc__trace_push(ctx, (void **)&x->dims, sizeof *x->dims, &x->ndims, &x->dims_cap, &x->cur_dims[i]))
      return SC_ENOMEM;
  for (size_t i = 0; i < x->ncur_conc; i++)
    if (sc__trace_push(ctx, (void **)&x->conc, sizeof *x->conc, &x->nconc, &x->conc_cap, &x->cur_conc[i]))
      return SC_ENOMEM;
  return sc__trace_push(ctx, (void **)&x->ev, sizeof e, &x->nev, &x->ev_cap, &e);
}

static int push_dim(sc_ctx *ctx, xin *x, int64_t v) {
  return sc__trace_push(ctx, (void **)&x->cur_dims, sizeof *x->cur_dims, &x->ncur_dims, &x->cur_dims_cap, &v);
}

/* "Input Dims" (v, n tokens): per input its rank then its sizes, in the
 * dims layout. An entry that is not an array (null: a scalar argument) has
 * no shape; one with nested arrays (a tensor list) or a size that is not a
 * non-negative integer has an unknown shape (rank 0); object entries are
 * passed over. */
static int input_dims(sc_trace_reader *r, xin *x, const sc_jtok *v, size_t n) {
  sc_ctx *ctx = r->ctx;
  if (v[0].type != SC_JT_ARR_BEGIN) return SC_OK;
  x->ncur_dims = 0;
  x->cur_inputs = 0;
  for (size_t i = 1; i < n;) {
    const sc_jtok *t = &v[i];
    int begin = t->type == SC_JT_OBJ_BEGIN || t->type == SC_JT_ARR_BEGIN;
    if (t->depth == 1 && t->type == SC_JT_ARR_BEGIN) { /* one input */
      if (push_dim(ctx, x, 0)) return SC_ENOMEM;
      x->cur_rank_at = x->ncur_dims - 1;
      x->cur_bad_input = 0;
      x->cur_inputs++;
    } else if (t->depth == 1 && t->type == SC_JT_ARR_END) {
      if (x->cur_bad_input) { /* a tensor list (nested arrays): shape unknown */
        x->ncur_dims = x->cur_rank_at + 1;
        x->cur_dims[x->cur_rank_at] = 0;
      }
      x->cur_rank_at = SIZE_MAX;
    } else if (t->depth == 2 && t->type == SC_JT_NUMBER && x->cur_rank_at != SIZE_MAX) {
      int64_t d;
      if (sc__json_int(t->s, t->n, &d) || d < 0) {
        x->cur_bad_input = 1;
      } else {
        if (push_dim(ctx, x, d)) return SC_ENOMEM;
        x->cur_dims[x->cur_rank_at]++;
      }
    } else if (t->depth == 1 && !begin) { /* a non-array input (null): no shape */
      if (push_dim(ctx, x, 0)) return SC_ENOMEM;
      x->cur_inputs++;
    } else if (begin && t->depth > 0) {
      x->cur_bad_input = 1;
      i = sc__chrome_next(v, n, i);
      continue;
    }
    i++;
  }
  return SC_OK;
}

/* "Input type" / "Concrete Inputs" (v, n tokens): their string entries, as
 * element sizes or interned strings. */
static int input_strings(sc_trace_reader *r, xin *x, int key, const sc_jtok *v, size_t n) {
  sc_ctx *ctx = r->ctx;
  if (v[0].type != SC_JT_ARR_BEGIN) return SC_OK;
  for (size_t i = 1; i < n; i = sc__chrome_next(v, n, i)) {
    const sc_jtok *t = &v[i];
    if (t->depth != 1 || t->type != SC_JT_STRING) continue;
    if (key == A_TYPES) {
      char buf[64];
      size_t len = t->n < sizeof buf - 1 ? t->n : sizeof buf - 1;
      memcpy(buf, t->s, len);
      if (IS(t->s, t->n, "TensorList")) x->cur_list = 1;
      double b = sc__dtype_bytes(buf, len);
      uint8_t eb = (uint8_t)(b > 0 && b < 255 ? b : 0);
      if (sc__trace_push(ctx, (void **)&x->cur_eb, 1, &x->ncur_eb, &x->cur_eb_cap, &eb)) return SC_ENOMEM;
    } else {
      uint32_t id;
      if (intern_tok(r, t, &id) ||
          sc__trace_push(ctx, (void **)&x->cur_conc, sizeof *x->cur_conc, &x->ncur_conc, &x->cur_conc_cap, &id))
        return SC_ENOMEM;
    }
  }
  return SC_OK;
}

/* A completed event from the Chrome-trace reader. Its members are taken in
 * document order: names, string thread ids and concrete inputs are interned
 * as they come, which fixes the string ids of the job. */
static int on_event(void *ud, const sc_chrome_event *ce) {
  sc_trace_reader *r = ud;
  xin *x = X(r);
  reset_event(x, ce->offset);
  x->ph = ce->ph;
  if (ce->cat.s) {
    const char *c = ce->cat.s;
    size_t n = ce->cat.n;
    x->is_cpu_op = IS(c, n, "cpu_op") || IS(c, n, "Operator");
    x->is_step = IS(c, n, "user_annotation") || IS(c, n, "python_function");
    x->is_rt = IS(c, n, "cuda_runtime") || IS(c, n, "cuda_driver");
    x->is_gpu = IS(c, n, "kernel") || IS(c, n, "Kernel") || IS(c, n, "gpu_memcpy") || IS(c, n, "gpu_memset") ||
                IS(c, n, "Memcpy") || IS(c, n, "Memset");
  }
  /* Any number gives the event a time (one out of range failed the import). */
  x->has_ts = ce->has_ts;
  x->ts = ce->ts_ns;
  x->has_dur = ce->has_dur;
  x->dur = ce->dur_ns;
  for (size_t i = 0; i < ce->nm; i++) {
    const sc_chrome_member *m = &ce->m[i];
    const sc_jtok *t = sc__chrome_value(ce, m);
    int rc = SC_OK;
    switch (m->key) {
    case SC_CHROME_NAME:
      if (t->type == SC_JT_STRING) {
        rc = intern_tok(r, t, &x->name);
        x->has_name = 1;
      }
      break;
    case SC_CHROME_TID:
      if (t->type == SC_JT_NUMBER) {
        if (sc__json_int(t->s, t->n, &x->tid)) x->tid = 0;
      } else if (t->type == SC_JT_STRING) {
        uint32_t id;
        rc = intern_tok(r, t, &id);
        x->tid = -1 - (int64_t)id;
      }
      break;
    case A_DIMS:
      rc = input_dims(r, x, t, m->count);
      break;
    case A_TYPES:
    case A_CONC:
      rc = input_strings(r, x, m->key, t, m->count);
      break;
    case A_MOD:
    case A_MTYPE:
      if (t->type == SC_JT_STRING) {
        rc = intern_tok(r, t, m->key == A_MOD ? &x->mod : &x->mtype);
        if (m->key == A_MOD) x->has_mod = 1;
      }
      break;
    case A_PASS:
      if (t->type == SC_JT_STRING)
        x->pass = IS(t->s, t->n, "forward")    ? SC_JPASS_FWD
                  : IS(t->s, t->n, "backward") ? SC_JPASS_BWD
                  : IS(t->s, t->n, "optimizer") ? SC_JPASS_OPT
                  : IS(t->s, t->n, "recompute") ? SC_JPASS_RECOMP
                                               : SC_JPASS_NONE;
      break;
    case A_PARAM:
      if (t->type == SC_JT_STRING)
        x->param = IS(t->s, t->n, "weight") ? SC_JPARAM_WEIGHT : IS(t->s, t->n, "bias") ? SC_JPARAM_BIAS
                                                                                        : SC_JPARAM_OTHER;
      break;
    case A_CORR:
      if (t->type == SC_JT_NUMBER && !sc__json_int(t->s, t->n, &x->corr)) x->has_corr = 1;
      break;
    case A_HEADS: {
      int64_t v;
      if (t->type == SC_JT_NUMBER && !sc__json_int(t->s, t->n, &v) && v > 0 && v <= SC_JOB_MAX_HEADS)
        x->heads = (uint32_t)v;
      break;
    }
    default:
      break;
    }
    if (rc) return SC_ENOMEM;
  }
  return end_event(r);
}

/* A deviceProperties entry: the GPU of the lowest id names a GPU trace's
 * device (xs_build). */
static int on_device(void *ud, int64_t id, uint32_t name) {
  xin *x = ud;
  if (name && id >= 0 && (x->dev_id < 0 || id < x->dev_id)) x->dev_id = id, x->dev_name = name;
  return SC_OK;
}

/* distributedInfo: rank and world_size (integers); deviceProperties. */
static int on_item(void *ud, const sc_chrome_item *it) {
  xin *x = X(ud);
  if (it->section == SC_CHROME_META) return sc__trace_devices(ud, it->tok, it->ntok, on_device, x);
  const sc_jtok *t = it->tok;
  int64_t v;
  if (it->key >= D_TP && it->key < D_COUNT) { /* checked in xs_build: any value, -2 not an integer */
    x->shard[it->key - D_TP] = t->type == SC_JT_NUMBER && !sc__json_int(t->s, t->n, &v) && v >= 0 ? v : -2;
    x->shard_off[it->key - D_TP] = t->offset;
  } else if (t->type == SC_JT_NUMBER && !sc__json_int(t->s, t->n, &v)) {
    if (it->key == D_RANK) x->rank = v, x->have_rank = 1;
    else x->world = v;
  }
  return SC_OK;
}

static int xs_data(sc_trace_reader *r, const char *buf, size_t len) {
  sc_chrome *c = &X(r)->c;
  int rc = sc__chrome_feed(c, buf, len);
  return rc ? sc__trace_chrome_fail(r, c, rc) : SC_OK;
}

/* ------------------------------------------------------------ shapes */

typedef struct shp {     /* one input's shape */
  const int64_t *d;
  int64_t rank;          /* 0: none or 0-dim */
  double numel, eb;
} shp;

/* Input i of e, whose entry in the dims layout starts at p. */
static shp input_at(const xin *x, const xev *e, uint32_t i, const int64_t *p) {
  shp s = {NULL, 0, 0, 4};
  s.rank = p[0];
  s.d = p + 1;
  s.numel = s.rank > 0 ? 1 : 0;
  for (int64_t k = 0; k < s.rank; k++) s.numel *= (double)s.d[k];
  uint8_t b = x->eb[e->eb_off + i];
  s.eb = b ? b : 4;
  return s;
}

static shp input(const xin *x, const xev *e, uint32_t i) {
  shp s = {NULL, 0, 0, 4};
  if (i >= e->ninputs) return s;
  const int64_t *p = x->dims + e->dims_off;
  for (uint32_t k = 0; k < i; k++) p += 1 + p[0];
  return input_at(x, e, i, p);
}

/* Integers of "Concrete Inputs" entry i ("[2, 2]", "1", "False"): up to 4. */
static int concrete(const sc_trace_reader *r, const xin *x, const xev *e, uint32_t i, int64_t *v, int max) {
  if (i >= e->nconc) return -1;
  const char *s = sc__job_str(r->job, x->conc[e->conc_off + i]);
  if (!*s) return -1;
  if (!strcmp(s, "False")) return v[0] = 0, 1;
  if (!strcmp(s, "True")) return v[0] = 1, 1;
  int n = 0;
  while (*s && n < max) {
    if ((*s >= '0' && *s <= '9') || *s == '-') {
      v[n++] = strtoll(s, (char **)&s, 10);
      continue;
    }
    s++;
  }
  return n ? n : -1;
}

/* The output mask of convolution_backward ("[False, True, True]"). */
static int conv_input_grad(const sc_trace_reader *r, const xin *x, const xev *e) {
  if (e->nconc <= 10) return 1;
  const char *s = sc__job_str(r->job, x->conc[e->conc_off + 10]);
  while (*s == '[' || *s == ' ') s++;
  return strncmp(s, "False", 5) != 0;
}

/* ------------------------------------------------------------ build */

typedef struct kern { sc_jshape sh; double flops, bytes; } kern;

/* Fused Adam(W)'s streaming rate relative to a copy's (kernels_of). */
#define FUSED_ADAM_STREAM 0.83
/* A widening cast's rate relative to a copy's (kernels_of, H_COPY). */
#define WIDEN_COPY_STREAM 0.50

/* Passes over its input of a (log-)softmax or its backward along the last
 * dimension: rows of up to 1024 elements run PyTorch's persistent kernel,
 * one read and one write (backward: two reads, one write); longer rows run
 * the block-per-row kernel, which reads a row once for the maximum, once for
 * the sum and once to write: 3 reads and a write, backward too (the H200
 * traces' log-softmax over 8192 x 128256 fp32 logits: 3.94 and 4.25 ms
 * measured, 4.4 ms at four passes, 2.2 and 3.3 ms at two and three). */
/* A GPU trace's operator on tensor lists (aten::cat, _foreach_*: the
 * profiler records no dtype for them, and no shapes for long ones)
 * launched kernels nothing here can price: counted, not hidden. */
static void warn_list(sc_trace_reader *r, const xev *e, const char *name) {
  if (e->has_list && r->fmt == SC_TRACE_CPU_OF_GPU)
    sc__job_warn(r->job, "%s: %s has tensor-list inputs, whose dtype the profiler does not record: not priced",
                 r->name, name);
}

static double softmax_passes(shp x, double short_rows) {
  return x.rank > 0 && x.d[x.rank - 1] > 1024 ? 4.0 : short_rows;
}

typedef struct bld {
  sc_trace_reader *r;
  xin *x;
  sc_jrank *jr;
  int host_stream, gpu_stream;
  uint32_t name_host;
  int64_t pending;        /* operators dispatched from Python since the last launch */
  int64_t pending_cpp;    /* ... from the C++ autograd engine (backward) */
  int64_t pending_mod;    /* ... of them, module-level operators called from Python */
  int64_t kernels, grads;
  /* A GPU trace's host timeline: its launches and synchronisations by time,
   * the prefix sums of the synchronisations' durations, and the host's
   * position (the last launch priced so far). NULL for a CPU trace. */
  const rtev *launch, *sync;
  size_t nlaunch, nsync;
  const gkev *gk;         /* its kernels by correlation id */
  size_t ngk;
  double *sync_sum;       /* (double: a hostile trace's sums would overflow int64) */
  int64_t host_t;
  double grad_bytes;      /* the gradients that became ready so far (AccumulateGrad) */
  /* Per-rank shards: the stage (-1: a trace of a whole process), the TP
   * degree and stages, the TP stream and group made for the first
   * all-reduce marker, the last kernel, where the search for a backward
   * all-reduce's GEMM stops, and the pipeline markers seen (forward send,
   * forward receive, backward send, backward receive). */
  int64_t stage, tp, pp;
  int tp_stream;
  uint32_t tp_group, nm_tp_ar, nm_send, nm_recv;
  int64_t last_kernel, search_from;
  int64_t pp_marks[4];
} bld;

/* The first of n records of `size` bytes, sorted by the int64 key at
 * offset `off`, whose key is at least `key`; n when none. */
static size_t first_at_least(const void *v, size_t n, size_t size, size_t off, int64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int64_t k;
    memcpy(&k, (const char *)v + mid * size + off, sizeof k);
    if (k < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The first of n runtime calls (sorted by time) at or after t. */
static size_t rt_at(const rtev *v, size_t n, int64_t t) {
  return first_at_least(v, n, sizeof *v, offsetof(rtev, ts), t);
}

/* The first of n kernels (sorted by correlation id) of id corr or above. */
static size_t gk_at(const gkev *v, size_t n, int64_t corr) {
  return first_at_least(v, n, sizeof *v, offsetof(gkev, corr), corr);
}

/* Host time of a GPU trace between t0 and t1 that it did not spend blocked
 * in a synchronisation (they do not overlap: one host thread waits at a
 * time). */
static int64_t host_busy(const bld *b, int64_t t0, int64_t t1) {
  if (t1 <= t0) return 0;
  size_t a = rt_at(b->sync, b->nsync, t0), lo = rt_at(b->sync, b->nsync, t1);
  double waited = b->sync_sum[lo] - b->sync_sum[a], T0 = (double)t0, T1 = (double)t1;
  if (lo > a) { /* the last one may run past t1 */
    double end = (double)b->sync[lo - 1].ts + (double)b->sync[lo - 1].dur;
    if (end > T1) waited -= end - T1;
  }
  if (a > 0) { /* one that started before t0 may run into the interval */
    double end = (double)b->sync[a - 1].ts + (double)b->sync[a - 1].dur;
    if (end > T0) waited += (end < T1 ? end : T1) - T0;
  }
  double busy = T1 - T0 - waited;
  return busy <= 0 ? 0 : busy < SC_WORK_MAX ? (int64_t)busy : (int64_t)SC_WORK_MAX;
}

/* The launch calls inside operator e on its thread (its own and its
 * children's; at most 4096 looked at) in one walk: the first one's time
 * (*first; e's start when there is none) and their kernels' measured time,
 * by correlation id (the return). */
static int64_t launches_of(const bld *b, const xev *e, int64_t *first) {
  double sum = 0;
  *first = -1;
  for (size_t i = rt_at(b->launch, b->nlaunch, e->ts), n = 0;
       i < b->nlaunch && b->launch[i].ts <= e->ts + e->dur && n < 4096; i++, n++) {
    if (b->launch[i].tid != e->tid) continue;
    if (*first < 0) *first = b->launch[i].ts;
    if (b->launch[i].corr < 0) continue;
    for (size_t a = gk_at(b->gk, b->ngk, b->launch[i].corr); a < b->ngk && b->gk[a].corr == b->launch[i].corr; a++)
      sum += (double)b->gk[a].dur;
  }
  if (*first < 0) *first = e->ts;
  return sum < SC_WORK_MAX ? (int64_t)sum : (int64_t)SC_WORK_MAX;
}

/* The host op before a kernel: for a CPU trace the operators dispatched
 * since the last launch, priced at replay (host_op_us, ...); for a GPU trace
 * (dur_ns >= 0) the host time the trace measured. */
static int emit_host(bld *b, int64_t dur_ns) {
  sc_job *job = b->r->job;
  int64_t si = -1;
  if (dur_ns < 0) {
    sc_jshape sh = {(double)b->pending, (double)b->pending_cpp, (double)b->pending_mod, 0, SC_JSHAPE_HOST};
    si = sc__jrank_shape(job, b->jr, &sh);
    if (si < 0) return SC_ENOMEM;
  }
  sc_jop op;
  memset(&op, 0, sizeof op);
  op.start_ns = -1;
  op.name = b->name_host;
  op.group = SC_JOB_NONE;
  op.peer = -1;
  op.stream = (uint16_t)b->host_stream;
  op.kind = SC_JOP_HOST;
  if (dur_ns >= 0) op.dur_ns = dur_ns;
  else op.shape = (uint32_t)si + 1;
  if (sc__jrank_op(job, b->jr, &op) < 0) return SC_ENOMEM;
  b->pending = b->pending_cpp = b->pending_mod = 0;
  return SC_OK;
}

/* Appends the kernels of operator e (each after one host launch op); a
 * kernel whose shape, bytes or FLOPs leave the job's bounds (job_int.h: a
 * size beyond any GPU's memory) is an error at e. */
/* Records the module (and pass, parameter) of event e on the rank's last
 * op, when the trace gives one (tools/trace_torch.py: "Module", ...). */
static int tag_module(bld *b, const xev *e) {
  if (!e->has_mod && !e->pass) return SC_OK;
  sc_jopmod m = {0, e->pass, e->param};
  if (e->has_mod) {
    int64_t mi = sc__jrank_module(b->r->job, b->jr, e->mod, e->mtype, e->heads);
    if (mi < 0) return SC_ENOMEM;
    m.module = (uint32_t)mi + 1;
  }
  return sc__jrank_set_opmod(b->r->job, b->jr, b->jr->nops - 1, &m);
}

static int emit_kernels(bld *b, const xev *e, const kern *k, int n) {
  sc_job *job = b->r->job;
  uint32_t name = e->name;
  for (int i = 0; i < n; i++) {
    const double dims[4] = {k[i].sh.m, k[i].sh.n, k[i].sh.k, k[i].sh.batch};
    int bad = !(k[i].bytes >= 0 && k[i].bytes <= SC_JOB_MAX_BYTES) ||
              !(k[i].flops >= 0 && k[i].flops <= SC_JOB_MAX_FLOPS);
    for (int f = 0; f < 4; f++) bad |= !(dims[f] >= 0 && dims[f] <= SC_JOB_MAX_DIM);
    if (bad)
      return sc__trace_fail(b->r, SC_EINVAL, e->off,
                            "operator %.200s: kernel of %.4g x %.4g x %.4g (x %.4g), %.4g bytes, %.4g FLOPs "
                            "out of range (dimensions at most 2^40, bytes 2^50, FLOPs 1e24)",
                            sc__job_str(job, name), dims[0], dims[1], dims[2], dims[3], k[i].bytes, k[i].flops);
  }
  /* A GPU trace: the host time up to the operator's first launch comes
   * before its first kernel, and its measured kernel time goes on that
   * kernel (ref_ns; -1 on its other kernels, 0 when nothing was found). */
  int64_t first_ts = 0, meas = b->launch ? launches_of(b, e, &first_ts) : 0;
  for (int i = 0; i < n; i++) {
    int64_t host = -1;
    if (b->launch) {
      int64_t t = i == 0 ? first_ts : b->host_t;
      if (t < b->host_t) t = b->host_t;
      host = host_busy(b, b->host_t, t);
      b->host_t = t;
    }
    if (emit_host(b, host)) return SC_ENOMEM;
    int64_t launch = (int64_t)b->jr->nops - 1;
    int64_t si = sc__jrank_shape(job, b->jr, &k[i].sh);
    if (si < 0) return SC_ENOMEM;
    sc_jop op;
    memset(&op, 0, sizeof op);
    op.start_ns = -1;
    op.flops = k[i].flops;
    op.bytes = k[i].bytes;
    op.name = name;
    op.group = SC_JOB_NONE;
    op.peer = -1;
    op.stream = (uint16_t)b->gpu_stream;
    op.kind = SC_JOP_KERNEL;
    op.shape = (uint32_t)si + 1;
    if (sc__jrank_op(job, b->jr, &op) < 0) return SC_ENOMEM;
    if (sc__jrank_dep(job, b->jr, (uint32_t)launch)) return SC_ENOMEM;
    if (tag_module(b, e)) return SC_ENOMEM;
    b->last_kernel = (int64_t)b->jr->nops - 1;
    b->kernels++;
    if (b->launch && sc__jrank_set_ref(job, b->jr, b->jr->nops - 1, i == 0 ? meas : -1)) return SC_ENOMEM;
  }
  return SC_OK;
}

static kern gemm(double m, double n, double k, double batch, double eb, int cls) {
  kern g;
  memset(&g, 0, sizeof g);
  g.sh = (sc_jshape){m, n, k, batch, (uint8_t)cls};
  g.flops = 2.0 * m * n * k * batch;
  g.bytes = eb * (m * k + k * n + m * n) * batch;
  return g;
}

static kern mem(double bytes) {
  kern g;
  memset(&g, 0, sizeof g);
  g.sh = (sc_jshape){0, 0, 0, 1, SC_JSHAPE_MEM};
  g.bytes = bytes;
  return g;
}

static kern norm(double bytes) {
  kern g = mem(bytes);
  g.sh.cls = SC_JSHAPE_NORM;
  return g;
}

/* The kernels operator e launches on a GPU (0: none). */
static int kernels_of(bld *b, const xev *e, kern *k) {
  sc_trace_reader *r = b->r;
  xin *x = b->x;
  shp in[4];
  for (uint32_t i = 0; i < 4; i++) in[i] = input(x, e, i);
  double sum = 0, big = 0, big_eb = 4, small = 0, eb0 = 0;
  int tensors = 0, mixed = 0;
  const int64_t *p = e->ninputs ? x->dims + e->dims_off : NULL;
  for (uint32_t i = 0; i < e->ninputs; p += 1 + p[0], i++) { /* one walk: inputs may be many */
    shp s = input_at(x, e, i, p);
    if (s.rank > 0) {
      tensors++;
      if (s.numel > 1 && (small == 0 || s.numel < small)) small = s.numel;
      if (s.eb > 0 && eb0 > 0 && s.eb != eb0) mixed = 1;
      if (s.eb > 0) eb0 = s.eb;
    }
    sum += s.numel * s.eb;
    if (s.numel > big) big = s.numel, big_eb = s.eb;
  }
  const char *name = sc__job_str(r->job, e->name);
  if (e->h == H_FUSED_ADAM) {
    /* Its TensorLists have no "Input Dims": the parameters are those whose
     * gradients this step made ready (each AccumulateGrad's gradient; the
     * states share the parameters' dtype). Per parameter, param, grad,
     * exp_avg and exp_avg_sq read, param and both moments written (7
     * passes; amsgrad, argument 11: max_exp_avg_sq read and written, 9).
     * Its multi-tensor kernel streams seven arrays at 0.83 of what a copy
     * or an add reaches (validation/h200/mem.csv: 3191 GB/s against 3756
     * and 3897): the bytes are counted at that rate, so that replay prices
     * it at mem_eff. Gradient accumulation over micro-batches in one trace
     * would count the gradients once per micro-batch. */
    if (b->grad_bytes <= 0) {
      sc__job_warn(r->job, "%s: %s before any gradient (AccumulateGrad with shapes): not priced", r->name, name);
      return 0;
    }
    int64_t ams = 0;
    int passes = concrete(r, x, e, 11, &ams, 1) == 1 && ams ? 9 : 7;
    k[0] = mem(passes * b->grad_bytes / FUSED_ADAM_STREAM);
    return 1;
  }
  if (!tensors) { /* 0-dim tensors and scalars: host-side; tensor lists (warn_list) */
    warn_list(r, e, name);
    return 0;
  }
  switch (e->h) {
  case H_GEMM_MM:
  case H_GEMM_ADDMM: {
    shp a = e->h == H_GEMM_MM ? in[0] : in[1], c = e->h == H_GEMM_MM ? in[1] : in[2];
    if (a.rank != 2 || c.rank != 2) break;
    k[0] = gemm((double)a.d[0], (double)c.d[1], (double)a.d[1], 1, a.eb, SC_JSHAPE_GEMM);
    return 1;
  }
  case H_GEMM_BMM:
  case H_GEMM_BADDBMM: {
    shp a = e->h == H_GEMM_BMM ? in[0] : in[1], c = e->h == H_GEMM_BMM ? in[1] : in[2];
    if (a.rank != 3 || c.rank != 3) break;
    k[0] = gemm((double)a.d[1], (double)c.d[2], (double)a.d[2], (double)a.d[0], a.eb, SC_JSHAPE_GEMM);
    return 1;
  }
  case H_CONV:
  case H_CONV_BWD: {
    int bwd = e->h == H_CONV_BWD;
    shp xs = bwd ? in[1] : in[0], w = bwd ? in[2] : in[1];
    if (xs.rank != 4 || w.rank != 4) break;
    double N = (double)xs.d[0], C = (double)xs.d[1], H = (double)xs.d[2], W = (double)xs.d[3];
    double K = (double)w.d[0], Cg = (double)w.d[1], R = (double)w.d[2], S = (double)w.d[3];
    double g = Cg > 0 ? C / Cg : 1;
    if (g < 1) g = 1;
    double P, Q;
    if (bwd) {
      if (in[0].rank != 4) break;
      P = (double)in[0].d[2], Q = (double)in[0].d[3];
    } else {
      int64_t st[4] = {1, 1}, pd[4] = {0, 0}, dl[4] = {1, 1}, gr[4] = {0};
      int ns = concrete(r, x, e, 3, st, 2), np = concrete(r, x, e, 4, pd, 2), nd = concrete(r, x, e, 5, dl, 2);
      if (concrete(r, x, e, 8, gr, 1) == 1 && gr[0] > 0) g = (double)gr[0];
      if (ns < 0 || np < 0) {
        sc__job_warn(r->job, "%s: convolution without \"Concrete Inputs\": stride 1 and same-size output assumed",
                     r->name);
        P = H, Q = W;
      } else {
        if (ns == 1) st[1] = st[0];
        if (np == 1) pd[1] = pd[0];
        if (nd == 1) dl[1] = dl[0];
        if (st[0] < 1 || st[1] < 1) st[0] = st[1] = 1;
        P = floor((H + 2.0 * (double)pd[0] - (double)dl[0] * (R - 1) - 1) / (double)st[0]) + 1;
        Q = floor((W + 2.0 * (double)pd[1] - (double)dl[1] * (S - 1) - 1) / (double)st[1]) + 1;
        if (P < 1) P = 1;
        if (Q < 1) Q = 1;
      }
    }
    double Kg = K / g;
    if (!bwd) {
      k[0] = gemm(N * P * Q, Kg, Cg * R * S, g, xs.eb, SC_JSHAPE_CONV);
      k[0].bytes = xs.eb * (N * C * H * W + K * Cg * R * S + N * K * P * Q);
      return 1;
    }
    int n = 0;
    if (conv_input_grad(r, x, e)) { /* data gradient: gy * w^T */
      k[n] = gemm(N * H * W, Cg, Kg * R * S, g, xs.eb, SC_JSHAPE_CONV);
      k[n].bytes = xs.eb * (N * K * P * Q + K * Cg * R * S + N * C * H * W);
      n++;
    }
    k[n] = gemm(Kg, Cg * R * S, N * P * Q, g, xs.eb, SC_JSHAPE_CONV); /* weight gradient */
    k[n].bytes = xs.eb * (N * K * P * Q + N * C * H * W + K * Cg * R * S);
    return n + 1;
  }
  case H_WRITE:
    k[0] = mem(in[0].numel * in[0].eb);
    return 1;
  case H_COPY: { /* copy_(self, src): src read, self written */
    double bytes = in[0].numel * in[0].eb + in[1].numel * in[1].eb;
    /* A widening cast (a 16-bit source into an fp32 destination: autocast's
     * weight-gradient casts) runs PyTorch's unrolled, dynamically casting
     * copy kernel at half a plain copy's rate (validation/traces/h200: 1894
     * and 2064 GB/s over 59 and 31 such copies, against 3756 GB/s for
     * copy_ in validation/h200/mem.csv; the narrowing casts, vectorised,
     * reach 4269-4318) */
    if (in[0].eb > in[1].eb && in[1].eb > 0) bytes /= WIDEN_COPY_STREAM;
    k[0] = mem(bytes);
    return 1;
  }
  case H_NORM_FWD:
    k[0] = norm(2 * in[0].numel * in[0].eb);
    return 1;
  case H_SOFTMAX:
    k[0] = mem(softmax_passes(in[0], 2) * in[0].numel * in[0].eb);
    return 1;
  case H_NORM_BWD:
    k[0] = norm(3 * in[0].numel * in[0].eb);
    return 1;
  case H_SOFTMAX_BWD:
    k[0] = mem(softmax_passes(in[0], 3) * in[0].numel * in[0].eb);
    return 1;
  case H_BN_FWD:
    k[0] = norm(3 * in[0].numel * in[0].eb);
    return 1;
  case H_BN_BWD:
    k[0] = norm(5 * in[0].numel * in[0].eb);
    return 1;
  case H_REDUCE:
    k[0] = mem(in[0].numel * in[0].eb);
    return 1;
  case H_DROPOUT:
    k[0] = mem(in[0].numel * (2 * in[0].eb + 1));
    return 1;
  case H_POOL: {
    if (in[0].rank != 4) break;
    int64_t ks[4] = {2, 2}, st[4] = {0, 0}, pd[4] = {0, 0};
    int nk = concrete(r, x, e, 1, ks, 2), ns = concrete(r, x, e, 2, st, 2), np = concrete(r, x, e, 3, pd, 2);
    if (nk == 1) ks[1] = ks[0];
    if (ns < 1) st[0] = ks[0], st[1] = ks[1];
    else if (ns == 1) st[1] = st[0];
    if (np == 1) pd[1] = pd[0];
    if (st[0] < 1 || st[1] < 1) st[0] = st[1] = 2;
    double H = (double)in[0].d[2], W = (double)in[0].d[3];
    double P = floor((H + 2.0 * (double)pd[0] - (double)ks[0]) / (double)st[0]) + 1;
    double Q = floor((W + 2.0 * (double)pd[1] - (double)ks[1]) / (double)st[1]) + 1;
    if (P < 1) P = 1;
    if (Q < 1) Q = 1;
    double out = (double)in[0].d[0] * (double)in[0].d[1] * P * Q;
    k[0] = mem(in[0].numel * in[0].eb + out * (in[0].eb + 8)); /* values + int64 indices */
    return 1;
  }
  case H_POOL_BWD: /* gy and indices read; gx zeroed and scattered */
    k[0] = mem(in[0].numel * (in[0].eb + 8) + 2 * in[1].numel * in[1].eb);
    return 1;
  case H_EMBED: { /* rows gathered: indices x row width, read and written */
    if (in[0].rank != 2) break;
    k[0] = mem(2 * in[1].numel * (double)in[0].d[1] * in[0].eb + in[1].numel * 8);
    return 1;
  }
  case H_EMBED_BWD:
    k[0] = mem(3 * in[0].numel * in[0].eb);
    return 1;
  case H_NLL_FWD:
    k[0] = mem(in[1].numel * (in[0].eb + 8));
    return 1;
  case H_NLL_BWD:
    k[0] = mem(in[1].numel * in[1].eb);
    return 1;
  case H_ATTN_FWD:
  case H_ATTN_BWD: {
    /* FlashAttention: 2 b h s_q s_kv (d_qk + d_v) FLOPs forward (scores,
     * then output), half of it causal (blocks above the diagonal skipped);
     * backward ~2.5x (synth/layers.c's convention). Priced at replay by the
     * attention model for the query length and head dimension. */
    int bwd = e->h == H_ATTN_BWD;
    shp q = in[bwd], kk = in[bwd + 1], v = in[bwd + 2];
    if (q.rank != 4 || kk.rank != 4 || v.rank != 4) break;
    double B = (double)q.d[0], H = (double)q.d[1], S = (double)q.d[2], D = (double)q.d[3];
    double Skv = (double)kk.d[2], Dv = (double)v.d[3];
    int64_t causal = 0;
    for (size_t i = 0; i < sizeof attn_ops / sizeof attn_ops[0]; i++)
      if (!strcmp(name, attn_ops[i].name) && concrete(r, x, e, attn_ops[i].causal_arg, &causal, 1) < 0) {
        sc__job_warn(r->job, "%s: %s without \"Concrete Inputs\" (is_causal): not causal assumed", r->name, name);
        causal = 0;
      }
    double fl = 2.0 * B * H * S * Skv * (D + Dv) * (causal && S == Skv ? 0.5 : 1.0);
    memset(&k[0], 0, sizeof k[0]);
    k[0].sh = (sc_jshape){S, D, Skv, B * H, strstr(name, "cudnn") ? SC_JSHAPE_ATTN_CUDNN : SC_JSHAPE_ATTN};
    k[0].flops = bwd ? 2.5 * fl : fl;
    /* q, k, v and the output read or written once (backward: and their
     * gradients), the fp32 log-sum-exp per query */
    double io = q.eb * (q.numel + kk.numel + v.numel + q.numel) + 4.0 * B * H * S;
    k[0].bytes = bwd ? 2.0 * io : io;
    return 1;
  }
  case H_ACCGRAD: /* grad += new: both read, one written */
    /* No gradient yet (zero_grad(set_to_none=True)): the new one is handed
     * over, its only children views (detach): no kernel. */
    if (e->has_children == 1) return 0;
    k[0] = mem(3 * in[0].numel * in[0].eb);
    return 1;
  case H_MEM: {
    /* PyTorch's elementwise kernels stream at a copy's rate only when every
     * tensor operand has the output's shape and dtype (the vectorised
     * path); a broadcast operand (a tensor of more than one element, fewer
     * than the largest) or a mixed dtype takes the indexed or casting
     * kernels (SC_ELEM_*_RATE, cost_int.h) */
    int bcast = small > 0 && small < big;
    double rate = bcast && mixed ? SC_ELEM_BOTH_RATE : bcast ? SC_ELEM_BCAST_RATE : mixed ? SC_ELEM_MIXED_RATE : 1.0;
    k[0] = mem((sum + big * big_eb) / rate);
    return 1;
  }
  case -1:
    sc__job_warn(r->job, "%s: unknown operator %s priced as a memory-bound kernel", r->name, name);
    k[0] = mem(sum + big * big_eb);
    return 1;
  default:
    return 0;
  }
  sc__job_warn(r->job, "%s: %s with unexpected input shapes: not priced", r->name, name);
  return 0;
}

/* Operators that an nn.Module's forward calls from Python (a layer): the
 * module call itself costs host time on top of the dispatch. */
static int is_module_op(const char *name) {
  static const char *const mod[] = {"aten::conv2d", "aten::batch_norm", "aten::linear", "aten::layer_norm",
                                    "aten::dropout", "aten::relu", "aten::relu_", "aten::embedding",
                                    "aten::max_pool2d", "aten::adaptive_avg_pool2d", "aten::gelu",
                                    "aten::softmax", "aten::cross_entropy_loss", "aten::tanh"};
  for (size_t i = 0; i < sizeof mod / sizeof mod[0]; i++)
    if (!strcmp(name, mod[i])) return 1;
  return 0;
}

static int is_autograd_node(const char *name) {
  return !strncmp(name, "autograd::engine::evaluate_function", 35);
}

static int cmp_gk(const void *p, const void *q) {
  const gkev *a = p, *c = q;
  return (a->corr > c->corr) - (a->corr < c->corr);
}

static int cmp_rt(const void *p, const void *q) {
  const rtev *a = p, *c = q;
  return (a->ts > c->ts) - (a->ts < c->ts);
}

static int cmp_nest(const void *p, const void *q) { /* by thread, start, longest first */
  const xev *a = *(xev *const *)p, *b = *(xev *const *)q;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->dur != b->dur) return a->dur > b->dur ? -1 : 1;
  return a < b ? -1 : a > b;
}

typedef struct item { int64_t t; uint32_t seq; uint32_t ev; uint8_t grad; } item;

static int cmp_item(const void *p, const void *q) {
  const item *a = p, *b = q;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* ------------------------------------------------------------ shard markers */

/* Per-rank shard traces (tools/trace_torch.py --tp N --pp-stage K/P; docs/
 * TRACE.md, "Per-rank shards") mark where the GPU run communicates with
 * operator events named "stepcast::KIND[bytes=N]": tp_all_reduce (an
 * all-reduce of N bytes over the stage's TP group: Megatron's g in
 * forward, f's backward), pp_send and pp_recv (the activation to / from the
 * next / previous stage in forward, its gradient the other way in
 * backward). Each becomes an op of the rank; shard.c's builder turns them
 * into the stage program's collectives and p2p. */

enum { MK_TP_AR = 0, MK_PP_SEND, MK_PP_RECV };

/* Parses a marker name (after "stepcast::"): its kind and bytes. 0, or
 * SC_EINVAL with the message at e's offset. */
static int marker_parse(sc_trace_reader *r, const xev *e, const char *nm, int *kind, double *bytes) {
  static const char *const kinds[] = {"tp_all_reduce", "pp_send", "pp_recv"};
  const char *k = nm + 10, *br = strchr(k, '[');
  size_t kl = br ? (size_t)(br - k) : strlen(k);
  *kind = -1;
  for (int i = 0; i < 3; i++)
    if (strlen(kinds[i]) == kl && !strncmp(k, kinds[i], kl)) *kind = i;
  if (*kind < 0)
    return sc__trace_fail(r, SC_EINVAL, e->off, "marker %.200s: unknown (tp_all_reduce, pp_send or pp_recv)", nm);
  const char *p = br ? br + 1 : NULL;
  int64_t v = 0;
  int digits = 0;
  if (p && !strncmp(p, "bytes=", 6))
    for (p += 6; *p >= '0' && *p <= '9' && digits < 17; p++, digits++) v = v * 10 + (*p - '0');
  if (!p || !digits || strcmp(p, "]"))
    return sc__trace_fail(r, SC_EINVAL, e->off, "marker %.200s: no size (stepcast::%s[bytes=N])", nm, kinds[*kind]);
  if (v < 1 || (double)v > SC_JOB_MAX_BYTES)
    return sc__trace_fail(r, SC_EINVAL, e->off, "marker %.200s: bytes out of range [1, 2^50]", nm);
  *bytes = (double)v;
  return SC_OK;
}

/* Output bytes of GEMM op k (m x n x batch at the element size of its
 * bytes), 0 when it is not a GEMM. */
static double gemm_out_bytes(const sc_jrank *jr, int64_t k) {
  const sc_jop *op = &jr->ops[k];
  if (op->kind != SC_JOP_KERNEL || !op->shape) return 0;
  const sc_jshape *sh = &jr->shapes[op->shape - 1];
  if (!sc__jshape_gemm(sh->cls)) return 0;
  double b = sh->batch > 0 ? sh->batch : 1, all = (sh->m * sh->k + sh->k * sh->n + sh->m * sh->n) * b;
  return all > 0 ? sh->m * sh->n * b * (op->bytes / all) : 0;
}

/* Marker event e: a TP all-reduce on the TP stream after the GPU op that
 * produced its tensor (forward: the last kernel; backward: the last GEMM
 * since the previous all-reduce whose output has the marker's size, the
 * input gradient, so that the weight-gradient GEMM after it overlaps the
 * all-reduce as in Megatron's column-parallel backward), or a p2p op. */
static int emit_marker(bld *b, const xev *e, const char *nm) {
  sc_trace_reader *r = b->r;
  sc_job *job = r->job;
  int kind = -1;
  double bytes = 0;
  int rc = marker_parse(r, e, nm, &kind, &bytes);
  if (rc) return rc;
  if (b->stage < 0)
    return sc__trace_fail(r, SC_EINVAL, e->off,
                          "marker %.200s in a trace without distributedInfo tp, pp and pp_stage (not a shard trace "
                          "of tools/trace_torch.py --tp / --pp-stage)", nm);
  if (e->pass != SC_JPASS_FWD && e->pass != SC_JPASS_BWD)
    return sc__trace_fail(r, SC_EINVAL, e->off, "marker %.200s: \"Pass\" must be forward or backward", nm);
  int fwd = e->pass == SC_JPASS_FWD;
  sc_jop op;
  memset(&op, 0, sizeof op);
  op.start_ns = -1;
  op.bytes = bytes;
  op.group = SC_JOB_NONE;
  op.peer = -1;
  op.coll = SC_JCOLL_UNKNOWN;
  int64_t after = b->last_kernel;
  if (kind == MK_TP_AR) {
    if (b->tp < 2)
      return sc__trace_fail(r, SC_EINVAL, e->off, "marker %.200s in a trace of tp %lld: no TP group", nm,
                            (long long)b->tp);
    if (b->tp_stream < 0) {
      uint32_t nm_st, nm_grp;
      int64_t m[4096];
      for (int64_t t = 0; t < b->tp; t++) m[t] = b->stage * b->tp + t;
      if (sc__job_intern(job, "tp comm", 7, &nm_st) ||
          sc__job_intern(job, "tp: all_reduce", 14, &b->nm_tp_ar) ||
          sc__job_intern(job, SC_JOB_TP_GROUP, strlen(SC_JOB_TP_GROUP), &nm_grp))
        return SC_ENOMEM;
      if ((rc = sc__job_group_named(job, m, (size_t)b->tp, nm_grp, &b->tp_group))) return rc;
      if ((b->tp_stream = sc__jrank_stream(job, b->jr, 8, nm_st, 0)) < 0) return SC_ENOMEM;
    }
    if (!fwd)
      for (int64_t k = (int64_t)b->jr->nops - 1; k >= b->search_from; k--)
        if (fabs(gemm_out_bytes(b->jr, k) - bytes) < 0.5) {
          after = k;
          break;
        }
    op.kind = SC_JOP_COLL;
    op.coll = SC_COLL_ALLREDUCE;
    op.group = b->tp_group;
    op.name = b->nm_tp_ar;
    op.stream = (uint16_t)b->tp_stream;
  } else {
    int send = kind == MK_PP_SEND;
    /* Forward: send to the next stage, receive from the previous; backward
     * the other way round. */
    int64_t to = send == fwd ? b->stage + 1 : b->stage - 1;
    if (b->pp < 2 || to < 0 || to >= b->pp)
      return sc__trace_fail(r, SC_EINVAL, e->off, "marker %.200s in %s on stage %lld of %lld: no stage %lld", nm,
                            fwd ? "forward" : "backward", (long long)b->stage, (long long)b->pp, (long long)to);
    b->pp_marks[(fwd ? 0 : 2) + !send]++;
    op.kind = send ? SC_JOP_SEND : SC_JOP_RECV;
    op.name = send ? b->nm_send : b->nm_recv;
    op.peer = (int32_t)(to * b->tp);
    op.stream = (uint16_t)b->gpu_stream;
    if (!send) after = -1;
  }
  if (sc__jrank_op(job, b->jr, &op) < 0) return SC_ENOMEM;
  if (after >= 0 && sc__jrank_dep(job, b->jr, (uint32_t)after)) return SC_ENOMEM;
  if (tag_module(b, e)) return SC_ENOMEM;
  if (kind == MK_TP_AR) b->search_from = (int64_t)b->jr->nops;
  return SC_OK;
}

/* The shard a trace declares (distributedInfo tp, pp, pp_stage), checked
 * against its rank and world size and the job's earlier traces; sets
 * b->stage, tp, pp (stage -1: none declared) and *rank. */
static int shard_info(bld *b, int64_t *rank) {
  sc_trace_reader *r = b->r;
  xin *x = b->x;
  sc_job *job = r->job;
  static const char *const what[3] = {"tp", "pp", "pp_stage"};
  int given = 0;
  b->stage = -1;
  b->tp = b->pp = 1;
  for (int i = 0; i < 3; i++) given += x->shard[i] != -1;
  if (!given) {
    if (job->shard_tp)
      return sc__trace_fail(r, SC_EINVAL, 0,
                            "not a shard trace (no distributedInfo tp, pp, pp_stage), imported with the shards of "
                            "%s: a job is one or the other", sc__job_str(job, job->shard_src));
    return SC_OK;
  }
  for (int i = 0; i < 3; i++) {
    int64_t v = x->shard[i], hi = i == 2 ? x->shard[1] - 1 : 4096;
    if (v == -1)
      return sc__trace_fail(r, SC_EINVAL, x->shard_off[x->shard[0] != -1 ? 0 : x->shard[1] != -1 ? 1 : 2],
                            "distributedInfo: a shard trace gives tp, pp and pp_stage; %s is missing", what[i]);
    if (v == -2)
      return sc__trace_fail(r, SC_EINVAL, x->shard_off[i], "distributedInfo.%s: not a non-negative integer",
                            what[i]);
    if (v < (i == 2 ? 0 : 1) || v > hi)
      return sc__trace_fail(r, SC_EINVAL, x->shard_off[i], "distributedInfo.%s: %lld out of range [%d, %lld]",
                            what[i], (long long)v, i == 2 ? 0 : 1, (long long)hi);
  }
  b->tp = x->shard[0], b->pp = x->shard[1], b->stage = x->shard[2];
  if (job->nranks && !job->shard_tp)
    return sc__trace_fail(r, SC_EINVAL, x->shard_off[0],
                          "a shard trace imported with traces of whole processes (%s): a job is one or the other",
                          sc__job_str(job, job->ranks[0].source));
  for (int i = 0; i < 2 && job->shard_tp; i++) {
    int64_t had = i ? job->shard_pp : job->shard_tp;
    if (x->shard[i] != had)
      return sc__trace_fail(r, SC_EINVAL, x->shard_off[i],
                            "distributedInfo.%s: %lld differs from %s %lld of %s (the shards of one job share "
                            "their TP degree and stages)", what[i], (long long)x->shard[i], what[i],
                            (long long)had, sc__job_str(job, job->shard_src));
  }
  if (x->world > 0 && x->world != b->tp * b->pp)
    return sc__trace_fail(r, SC_EINVAL, x->shard_off[1], "distributedInfo.world_size %lld is not tp x pp = %lld",
                          (long long)x->world, (long long)(b->tp * b->pp));
  if (x->have_rank && x->rank != b->stage * b->tp)
    return sc__trace_fail(r, SC_EINVAL, x->shard_off[2],
                          "distributedInfo.rank %lld is not pp_stage x tp = %lld (the stage's first TP rank)",
                          (long long)x->rank, (long long)(b->stage * b->tp));
  if (!job->shard_tp) {
    job->shard_tp = b->tp;
    job->shard_pp = b->pp;
    job->shard_src = r->name_id;
    job->shard_off = x->shard_off[1];
  }
  job->world = b->tp * b->pp;
  *rank = b->stage * b->tp;
  return SC_OK;
}

static int xs_build(sc_trace_reader *r) {
  xin *x = X(r);
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  if (!x->c.saw_events) return sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes, "no traceEvents array: not a trace");
  if (x->gpu_events && r->fmt != SC_TRACE_CPU_OF_GPU)
    return sc__trace_fail(r, SC_EINVAL, 0,
                          "%lld GPU kernel/copy events: this trace ran on a GPU, import it with `import kineto` "
                          "(or price its operators ex-situ with `import cpu --gpu-trace`)",
                          (long long)x->gpu_events);
  size_t n = x->nev;
  /* The profiler step ranges bound the step; without them the whole trace. */
  int64_t w0 = INT64_MAX, w1 = INT64_MIN, steps = 0;
  for (size_t i = 0; i < n; i++) {
    const char *nm = sc__job_str(job, x->ev[i].name);
    if (x->ev[i].step && !strncmp(nm, "ProfilerStep", 12)) {
      steps++;
      if (x->ev[i].ts < w0) w0 = x->ev[i].ts;
      if (x->ev[i].ts + x->ev[i].dur > w1) w1 = x->ev[i].ts + x->ev[i].dur;
    }
  }
  int64_t marked = steps; /* profiler step ranges (not the whole trace) */
  if (!steps) {
    for (size_t i = 0; i < n; i++) {
      if (x->ev[i].ts < w0) w0 = x->ev[i].ts;
      if (x->ev[i].ts + x->ev[i].dur > w1) w1 = x->ev[i].ts + x->ev[i].dur;
    }
    steps = 1;
  }
  xev **byt = sc__malloc(ctx, (n ? n : 1) * sizeof *byt);
  item *it = sc__malloc(ctx, (2 * n + 1) * sizeof *it);
  int32_t *stack = sc__malloc(ctx, (n ? n : 1) * sizeof *stack);
  int rc = byt && it && stack ? SC_OK : SC_ENOMEM;
  size_t nops_priced = 0;
  if (!rc) {
    for (size_t i = 0; i < n; i++) byt[i] = &x->ev[i];
    qsort(byt, n, sizeof *byt, cmp_nest);
    /* Nesting per thread: a stack of open ranges. An operator that starts
     * inside another is its child; clocks that tick in whole microseconds
     * can make it end a tick later, so its end is clamped (counted when it
     * overhangs by more than a microsecond). */
    size_t sp = 0;
    int64_t tid = 0;
    int64_t overlap = 0;
    for (size_t i = 0; i < n; i++) {
      xev *e = byt[i];
      if (i == 0 || e->tid != tid) sp = 0, tid = e->tid;
      while (sp && e->ts >= x->ev[stack[sp - 1]].ts + x->ev[stack[sp - 1]].dur) sp--;
      if (sp) {
        xev *p = &x->ev[stack[sp - 1]];
        int64_t over = e->ts + e->dur - (p->ts + p->dur);
        if (over > 0) {
          if (over > 1000) overlap++;
          e->dur -= over;
        }
      }
      e->parent = sp ? stack[sp - 1] : -1;
      e->h = e->step ? H_COMPOSITE : (int8_t)op_handler(sc__job_str(job, e->name));
      if (e->parent >= 0) {
        xev *p = &x->ev[e->parent];
        p->has_children |= e->h == H_ZERO ? 1 : 3; /* 2: a child that is not a view or metadata */
        int ph = p->h;
        int p_priced = ph != H_ZERO && ph != H_COMPOSITE && ph != -1;
        e->priced_above = p->priced_above || p_priced;
        e->in_autograd = p->in_autograd || is_autograd_node(sc__job_str(job, p->name));
      }
      stack[sp++] = (int32_t)(e - x->ev);
    }
    if (overlap) sc__job_warn_n(job, overlap, "%s: operators that end after their parent (clamped)", r->name);
  }
  /* Items in time order: operators at their start, gradients when their
   * AccumulateGrad ends (after whatever it launched). */
  size_t ni = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    xev *e = &x->ev[i];
    if (e->step || e->ts < w0 || e->ts >= w1) continue;
    it[ni++] = (item){e->ts, (uint32_t)i * 2, (uint32_t)i, 0};
    if (e->h == H_ACCGRAD) it[ni++] = (item){e->ts + e->dur, (uint32_t)i * 2 + 1, (uint32_t)i, 1};
  }
  if (!rc) qsort(it, ni, sizeof *it, cmp_item);

  int64_t rank = x->have_rank ? x->rank : r->rank_hint;
  bld b;
  memset(&b, 0, sizeof b);
  b.r = r;
  b.x = x;
  b.tp_stream = -1;
  b.last_kernel = -1;
  /* A GPU trace's launches and synchronisations, by time, for its
   * measured host timeline (emit_kernels). */
  rtev *rts = NULL;
  size_t nrts = x->nrt;
  if (!rc && r->fmt == SC_TRACE_CPU_OF_GPU && nrts) {
    rts = sc__malloc(ctx, nrts * sizeof *rts);
    b.sync_sum = sc__malloc(ctx, (nrts + 1) * sizeof *b.sync_sum);
    if (!rts || !b.sync_sum) rc = SC_ENOMEM;
    else {
      size_t nl = 0, ns = 0;
      for (size_t i = 0; i < nrts; i++)
        if (x->rt[i].kind == RT_LAUNCH) rts[nl++] = x->rt[i];
      for (size_t i = 0; i < nrts; i++)
        if (x->rt[i].kind == RT_SYNC) rts[nl + ns++] = x->rt[i];
      qsort(rts, nl, sizeof *rts, cmp_rt);
      qsort(rts + nl, ns, sizeof *rts, cmp_rt);
      b.launch = rts, b.nlaunch = nl;
      if (x->ngk) qsort(x->gk, x->ngk, sizeof *x->gk, cmp_gk);
      b.gk = x->gk, b.ngk = x->ngk;
      b.sync = rts + nl, b.nsync = ns;
      b.sync_sum[0] = 0;
      for (size_t i = 0; i < ns; i++) b.sync_sum[i + 1] = b.sync_sum[i] + (double)b.sync[i].dur;
      b.host_t = w0;
    }
  }
  /* A shard trace's layout first: its world size and rank follow from it. */
  if (!rc) rc = shard_info(&b, &rank);
  if (!rc && b.stage >= 0) x->world = b.tp * b.pp, x->have_rank = 0;
  if (!rc && (rank < 0 || rank >= SC_JOB_MAX_WORLD))
    rc = sc__trace_fail(r, SC_EINVAL, 0, "distributedInfo.rank: %lld out of range [0, %lld]", (long long)rank,
                        (long long)SC_JOB_MAX_WORLD - 1);
  if (!rc && (x->world < 0 || x->world > SC_JOB_MAX_WORLD)) /* 0: not given */
    rc = sc__trace_fail(r, SC_EINVAL, 0, "distributedInfo.world_size: %lld out of range [1, %lld]",
                        (long long)x->world, (long long)SC_JOB_MAX_WORLD);
  if (!rc && x->world > 0) {
    if (job->world && job->world != x->world)
      rc = sc__trace_fail(r, SC_EINVAL, 0, "world_size %lld differs from %lld in earlier traces",
                          (long long)x->world, (long long)job->world);
    else job->world = x->world;
  }
  if (!rc && (sc__job_intern(job, "pp: send", 8, &b.nm_send) || sc__job_intern(job, "pp: recv", 8, &b.nm_recv)))
    rc = SC_ENOMEM;
  if (!rc) {
    b.jr = sc__job_add_rank(job, rank);
    if (!b.jr) rc = SC_ENOMEM;
  }
  uint32_t nm_host = 0, nm_gpu = 0, nm_grad = 0, nm_dev = 0;
  if (!rc && (sc__job_intern(job, "host", 4, &nm_host) || sc__job_intern(job, "stream 7", 8, &nm_gpu) ||
              sc__job_intern(job, "grad ready", 10, &nm_grad) || sc__job_intern(job, "", 0, &nm_dev)))
    rc = SC_ENOMEM;
  if (!rc) {
    b.jr->source = r->name_id;
    /* A GPU trace names its GPU (deviceProperties): the replay's default,
     * and a replay on another GPU is not compared with its measured step. */
    b.jr->gpu = r->fmt == SC_TRACE_CPU_OF_GPU && x->dev_name ? x->dev_name : nm_dev;
    b.jr->iterations = steps;
    /* A CPU trace measured no GPU step; a GPU trace's profiler step ranges
     * (the host's view, which ends when the step's work is synchronised or
     * the next step is enqueued) are its measured step, kept to compare. */
    b.jr->span_ns = x->gpu_events && marked && w1 > w0 ? w1 - w0 : 0;
    b.name_host = nm_host;
    b.host_stream = sc__jrank_stream(job, b.jr, -1, nm_host, 1);
    b.gpu_stream = sc__jrank_stream(job, b.jr, 7, nm_gpu, 0);
    if (b.host_stream < 0 || b.gpu_stream < 0) rc = SC_ENOMEM;
  }
  for (size_t q = 0; !rc && q < ni; q++) {
    xev *e = &x->ev[it[q].ev];
    if (it[q].grad) {
      shp g = input(x, e, 0);
      if (g.numel <= 0) {
        sc__job_warn(job, "%s: AccumulateGrad without the gradient's shape: not a DDP bucket member", r->name);
        continue;
      }
      sc_jop op;
      memset(&op, 0, sizeof op);
      op.start_ns = -1;
      op.bytes = g.numel * g.eb;
      op.name = nm_grad;
      op.group = SC_JOB_NONE;
      op.peer = -1;
      op.stream = (uint16_t)b.gpu_stream;
      op.kind = SC_JOP_GRAD;
      if (sc__jrank_op(job, b.jr, &op) < 0 || tag_module(&b, e)) rc = SC_ENOMEM;
      b.grads++;
      b.grad_bytes += op.bytes;
      continue;
    }
    const char *nm = sc__job_str(job, e->name);
    if (!strncmp(nm, "stepcast::", 10)) {
      rc = emit_marker(&b, e, nm);
      continue;
    }
    /* Host dispatch: an aten operator called from outside aten (Python,
     * an autograd node, the optimizer), or an autograd node itself. */
    const char *pn = e->parent >= 0 ? sc__job_str(job, x->ev[e->parent].name) : "";
    if ((!strncmp(nm, "aten::", 6) && strncmp(pn, "aten::", 6)) || is_autograd_node(nm)) {
      if (e->in_autograd || is_autograd_node(nm)) b.pending_cpp++;
      else {
        b.pending++;
        b.pending_mod += is_module_op(nm);
      }
    }
    if (e->priced_above) continue;
    if (e->h == H_ZERO || e->h == H_COMPOSITE) continue;
    if (e->h == -1 && e->has_children) { /* an unknown composite */
      warn_list(r, e, nm); /* an aten::cat whose children are views */
      continue;
    }
    kern k[3];
    int nk = kernels_of(&b, e, k);
    if (nk > 0) {
      rc = emit_kernels(&b, e, k, nk);
      nops_priced++;
    }
  }
  if (!rc && b.launch) { /* the host's tail up to the step's end */
    int64_t t = w1 > b.host_t ? w1 : b.host_t;
    rc = emit_host(&b, host_busy(&b, b.host_t, t));
  } else if (!rc && (b.pending || b.pending_cpp)) rc = emit_host(&b, -1);
  /* A stage talks to its neighbours: the activation in forward (received
   * after the first stage, sent before the last). */
  if (!rc && b.stage >= 0 && ((b.stage > 0 && !b.pp_marks[1]) || (b.stage < b.pp - 1 && !b.pp_marks[0])))
    rc = sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes,
                        "stage %lld of %lld: no stepcast::%s marker in forward (trace the stage with "
                        "tools/trace_torch.py --pp-stage %lld/%lld)", (long long)b.stage, (long long)b.pp,
                        b.stage > 0 && !b.pp_marks[1] ? "pp_recv" : "pp_send", (long long)b.stage, (long long)b.pp);
  if (!rc && !b.kernels)
    rc = sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes,
                        "no operators with input shapes (profile with record_shapes=True)");
  if (!rc && !b.grads)
    sc__job_warn(job, "%s: no AccumulateGrad events: no gradients for data parallelism", r->name);
  if (rc && b.jr) {
    sc__jrank_free(ctx, &job->ranks[job->nranks - 1]);
    job->nranks--;
  }
  if (rts) sc__free(ctx, rts, nrts * sizeof *rts);
  if (b.sync_sum) sc__free(ctx, b.sync_sum, (nrts + 1) * sizeof *b.sync_sum);
  sc__free(ctx, byt, (n ? n : 1) * sizeof *byt);
  sc__free(ctx, it, (2 * n + 1) * sizeof *it);
  sc__free(ctx, stack, (n ? n : 1) * sizeof *stack);
  (void)nops_priced;
  return rc;
}

static int xs_finish(sc_trace_reader *r) {
  sc_chrome *c = &X(r)->c;
  int rc = sc__chrome_end(c);
  if (rc) return sc__trace_chrome_fail(r, c, rc);
  return xs_build(r);
}

const sc_trace_handler sc__exsitu_handler = {"cpu", xs_open, xs_data, xs_finish, xs_close};
