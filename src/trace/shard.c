/*
 * shard.c: an ex-situ job re-targeted to tensor and pipeline parallelism
 * (`replay --scale tp=N,pp=M`). The traced process ran the whole model; its
 * operators carry their nn.Module path, pass and parameter (`.scw` version
 * 3, tools/trace_torch.py). The sharding rules give every module a role
 * (Megatron-LM's tensor parallelism, Shoeybi et al. 2019, section 3):
 * column-parallel GEMMs split their output features by tp, row-parallel
 * ones their input features, followed by an all-reduce of the output in
 * forward; a column-parallel layer's input gradient is all-reduced in
 * backward; the attention core and activations between them work on tp-th
 * of the heads / features; the vocabulary of a vocab-parallel embedding is
 * split, its output all-reduced; norms, residuals and dropout outside are
 * replicated. Re-shaped operators keep their shape class, so replay prices
 * them for the target GPU as it prices any ex-situ op. The layer sequence
 * (module paths with a numeric component, `blocks.3`) is cut into pp x vpp
 * virtual stages (chunk c of stage s is virtual stage c x pp + s; ZB-V's V
 * puts virtual stages s and 2 pp - 1 - s on stage s); each stage's program
 * runs model/schedule.c's order (1F1B, GPipe, interleaved, ZB-H1 and ZB-V,
 * whose W passes take the weight-gradient GEMMs and gradient work out of the
 * backward) over the micro-batches, its passes built from the traced
 * operators of the chunk's layers, with blocking p2p receives and sends of
 * the activations between neighbours (as synth/pipeline.c emits them).
 */
#include "trace/shard_int.h"

#include "ir/ir_int.h"
#include "model/schedule_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ rules */

static const char *const role_names[] = {
#define SC_X_NAME(id, name) name,
    SC_SHARD_ROLE_LIST(SC_X_NAME)
#undef SC_X_NAME
};

/* `*` any run of characters (dots included), `?` one character. */
static int glob_match(const char *g, const char *s) {
  const char *star = NULL, *mark = NULL;
  while (*s) {
    if (*g == '*') star = g++, mark = s;
    else if (*g == '?' || *g == *s) g++, s++;
    else if (star) g = star + 1, s = ++mark;
    else return 0;
  }
  while (*g == '*') g++;
  return !*g;
}

int sc__shard_rules_parse(sc_ctx *ctx, const char *name, const char *text, size_t len, sc_shard_rule **out,
                          size_t *n) {
  *out = NULL;
  *n = 0;
  sc_shard_rule *v = NULL;
  size_t cap = 0, cnt = 0;
  int64_t line = 0;
  for (size_t i = 0; i < len;) {
    size_t e = i;
    while (e < len && text[e] != '\n') e++;
    line++;
    char buf[600];
    size_t l = e - i < sizeof buf - 1 ? e - i : sizeof buf - 1;
    memcpy(buf, text + i, l);
    buf[l] = 0;
    i = e + 1;
    char *hash = strchr(buf, '#');
    if (hash) *hash = 0;
    char glob[600], role[600], extra[2];
    int k = sscanf(buf, "%599s %599s %1s", glob, role, extra);
    if (k <= 0) continue;
    int r = -1;
    for (int q = SC_SHARD_COLUMN; q < SC_SHARD_ROLE_COUNT; q++)
      if (q != SC_SHARD_BLOCK && !strcmp(role, role_names[q])) r = q;
    const char *why = k == 1 ? "a module path pattern and a role expected"
                      : k == 3 ? "more than a pattern and a role"
                      : r < 0 ? "role must be column-parallel, row-parallel, replicated, vocab-parallel or expert"
                      : strlen(glob) >= sizeof v->glob ? "pattern longer than 255 bytes" : NULL;
    if (why) {
      sc__free(ctx, v, cap * sizeof *v);
      return sc__error(ctx, SC_EINVAL, "%s:%lld: %s", name, (long long)line, why);
    }
    if (sc__grow(ctx, (void **)&v, sizeof *v, &cap, cnt + 1)) {
      sc__free(ctx, v, cap * sizeof *v);
      return SC_ENOMEM;
    }
    sc__strlcpy(v[cnt].glob, glob, sizeof v[cnt].glob); /* length checked above */
    v[cnt++].role = (uint8_t)r;
  }
  if (!cnt) {
    sc__free(ctx, v, cap * sizeof *v);
    return sc__error(ctx, SC_EINVAL, "%s: no sharding rules", name);
  }
  sc_shard_rule *w = sc__realloc(ctx, v, cap * sizeof *v, cnt * sizeof *v);
  if (!w) {
    sc__free(ctx, v, cap * sizeof *v);
    return SC_ENOMEM;
  }
  *out = w;
  *n = cnt;
  return SC_OK;
}

size_t sc__shard_layer_prefix(const char *p) {
  size_t i = 0;
  while (p[i]) {
    size_t j = i;
    while (p[j] && p[j] != '.') j++;
    int digits = j > i;
    for (size_t q = i; q < j; q++) digits &= p[q] >= '0' && p[q] <= '9';
    if (digits) return j;
    i = p[j] ? j + 1 : j;
  }
  return 0;
}

int64_t sc__shard_layers(const sc_job *job, const sc_jrank *r, int32_t *mod_layer, uint8_t *mod_post) {
  size_t nm = r->nmodules;
  int64_t nl = 0;
  for (size_t i = 0; i < nm; i++) mod_layer[i] = -1;
  int seen_layer = 0;
  for (size_t k = 0; k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    if (!om.module || om.pass != SC_JPASS_FWD) continue;
    size_t m = om.module - 1;
    const char *p = sc__job_str(job, r->modules[m].path);
    size_t pl = sc__shard_layer_prefix(p);
    if (!pl) { /* before or after the layers; the model itself runs on both sides: by position */
      if (mod_post && *p && !mod_post[m]) mod_post[m] = (uint8_t)(seen_layer ? 2 : 1);
      continue;
    }
    seen_layer = 1;
    if (mod_layer[m] >= 0) continue;
    /* Same prefix as a module seen before? */
    int64_t li = -1;
    for (size_t q = 0; q < nm && li < 0; q++) {
      if (q == m || mod_layer[q] < 0) continue;
      const char *pq = sc__job_str(job, r->modules[q].path);
      if (sc__shard_layer_prefix(pq) == pl && !strncmp(pq, p, pl)) li = mod_layer[q];
    }
    mod_layer[m] = (int32_t)(li >= 0 ? li : nl++);
    /* Modules of this layer not yet used in forward get it too (params). */
    for (size_t q = 0; q < nm; q++) {
      const char *pq = sc__job_str(job, r->modules[q].path);
      if (mod_layer[q] < 0 && sc__shard_layer_prefix(pq) == pl && !strncmp(pq, p, pl)) mod_layer[q] = mod_layer[m];
    }
  }
  return nl;
}

static int in_list(const char *s, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(s, *list)) return 1;
  return 0;
}

/* Names of Megatron-style column- and row-parallel linears in common model
 * code (GPT-2, BERT, Llama, GPT-NeoX, Megatron-Core, torchtitan). */
static const char *const col_names[] = {"q", "k", "v", "qkv", "c_attn", "query", "key", "value", "q_proj",
                                        "k_proj", "v_proj", "qkv_proj", "in_proj", "Wqkv", "wq", "wk", "wv",
                                        "c_fc", "fc1", "up_proj", "gate_proj", "w1", "w3", "wi", "fc_in",
                                        "dense_h_to_4h", "linear_fc1", "linear_qkv", "query_key_value", NULL};
static const char *const row_names[] = {"o", "c_proj", "out_proj", "o_proj", "proj", "mlp_proj", "fc2",
                                        "down_proj", "w2", "wo", "fc_out", "dense_4h_to_h", "linear_fc2",
                                        "linear_proj", NULL};
static const char *const head_names[] = {"lm_head", "head", "output", "output_layer", NULL};
/* An MoE layer's router (Mixtral's block_sparse_moe.gate): replicated, as
 * Megatron-Core keeps it (its n_experts outputs split nothing). */
static const char *const router_names[] = {"gate", "router", NULL};
static const char *const vocab_names[] = {"wte", "word", "word_embeddings", "tok_embeddings", "embed_tokens",
                                          "tok", "tokens", "embedding", "embed", NULL};

/* Forward GEMM dimensions of each module: its first forward GEMM's m (tokens),
 * n (output features) and k (input features); 0 when it has none. */
void sc__shard_forward_dims(const sc_jrank *r, double *fm, double *fn, double *fk) {
  for (size_t i = 0; i < r->nmodules; i++) fm[i] = fn[i] = fk[i] = 0;
  for (size_t k = 0; k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    if (!om.module || om.pass != SC_JPASS_FWD || !op->shape) continue;
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    size_t m = om.module - 1;
    if (sc__jshape_gemm(sh->cls) && fm[m] == 0) fm[m] = sh->m, fn[m] = sh->n, fk[m] = sh->k;
  }
}

int sc__shard_is_head(const sc_job *job, const sc_jrank *r, size_t m, double fn) {
  const char *path = sc__job_str(job, r->modules[m].path), *dot = strrchr(path, '.');
  return !sc__shard_layer_prefix(path) && (in_list(dot ? dot + 1 : path, head_names) || fn >= 16384);
}

int sc__job_need_modules(const sc_job *in, const char *what) {
  for (size_t i = 0; i < in->nranks; i++)
    if (!in->ranks[i].opmods || !in->ranks[i].nmodules)
      return sc__error(in->ctx, SC_EINVAL, "%s: %s has no module paths to tell its layers and linears (re-trace it "
                       "with tools/trace_torch.py)", what, sc__job_str(in, in->ranks[i].source));
  return SC_OK;
}

static uint8_t builtin_role(const sc_job *job, const sc_jrank *r, size_t i, double fn, double fk) {
  const char *path = sc__job_str(job, r->modules[i].path), *type = sc__job_str(job, r->modules[i].type);
  const char *dot = strrchr(path, '.');
  const char *leaf = dot ? dot + 1 : path;
  char parent[256] = "";
  if (dot) {
    const char *pd = dot;
    while (pd > path && pd[-1] != '.') pd--;
    size_t l = (size_t)(dot - pd) < sizeof parent - 1 ? (size_t)(dot - pd) : sizeof parent - 1;
    memcpy(parent, pd, l);
    parent[l] = 0;
  }
  int layer = sc__shard_layer_prefix(path) > 0;
  int linear = !strcmp(type, "Linear") || !strcmp(type, "Conv1D") || !strcmp(type, "NonDynamicallyQuantizableLinear");
  /* An MoE layer's expert: a module numbered under `experts` (Mixtral's
   * block_sparse_moe.experts.3, Megatron-Core's SequentialMLP
   * local_experts.3, torchtitan-style experts.3). */
  int digits = *leaf != 0;
  for (const char *c = leaf; *c; c++) digits &= *c >= '0' && *c <= '9';
  if (layer && !linear && digits && (!strcmp(parent, "experts") || !strcmp(parent, "local_experts")))
    return SC_SHARD_EXPERT;
  if (linear) {
    if (!layer) /* an LM head (a vocabulary-sized output) is column-parallel */
      return sc__shard_is_head(job, r, i, fn) ? SC_SHARD_COLUMN : SC_SHARD_REPLICATED;
    if (in_list(leaf, router_names)) return SC_SHARD_REPLICATED;
    if (in_list(leaf, col_names)) return SC_SHARD_COLUMN;
    if (in_list(leaf, row_names)) return SC_SHARD_ROW;
    if (!strcmp(leaf, "dense")) { /* BERT: intermediate.dense, (attention.)output.dense */
      if (!strcmp(parent, "intermediate")) return SC_SHARD_COLUMN;
      if (!strcmp(parent, "output")) return SC_SHARD_ROW;
    }
    /* By shape: widening (d -> 4d, d -> 3d) column, narrowing row. */
    return fn > fk ? SC_SHARD_COLUMN : fn < fk ? SC_SHARD_ROW : SC_SHARD_REPLICATED;
  }
  if (!strcmp(type, "Embedding")) return in_list(leaf, vocab_names) ? SC_SHARD_VOCAB : SC_SHARD_REPLICATED;
  if (strstr(type, "Norm")) return SC_SHARD_REPLICATED;
  return layer ? SC_SHARD_BLOCK : SC_SHARD_REPLICATED;
}

void sc__shard_classify(const sc_job *job, const sc_jrank *r, const sc_shard_rule *rules, size_t nrules,
                        uint8_t *roles) {
  size_t nm = r->nmodules ? r->nmodules : 1;
  double *fm = sc__calloc(job->ctx, 3 * nm, sizeof *fm);
  for (size_t i = 0; i < r->nmodules; i++) {
    roles[i] = SC_SHARD_AUTO;
    const char *path = sc__job_str(job, r->modules[i].path);
    for (size_t q = 0; q < nrules && roles[i] == SC_SHARD_AUTO; q++)
      if (rules[q].glob[0] && glob_match(rules[q].glob, path)) roles[i] = rules[q].role;
  }
  if (fm) sc__shard_forward_dims(r, fm, fm + nm, fm + 2 * nm);
  for (size_t i = 0; i < r->nmodules; i++)
    if (roles[i] == SC_SHARD_AUTO) roles[i] = builtin_role(job, r, i, fm ? fm[nm + i] : 0, fm ? fm[2 * nm + i] : 0);
  sc__free(job->ctx, fm, 3 * nm * sizeof *fm);
}

int sc__shard_stages(sc_ctx *ctx, int64_t layers, int64_t pp, int64_t first, int64_t last, int64_t *first_layer) {
  if (pp < 1) return sc__error(ctx, SC_EINVAL, "pp=%lld: at least 1 stage", (long long)pp);
  if (layers < pp)
    return sc__error(ctx, SC_EINVAL, "pp=%lld: the traced model has %lld layer(s), fewer than the stages", (long long)pp,
                     (long long)layers);
  first_layer[0] = 0;
  if (pp == 1 || (first <= 0 && last <= 0)) {
    for (int64_t s = 0; s < pp; s++) first_layer[s + 1] = first_layer[s] + layers / pp + (s < layers % pp);
    return SC_OK;
  }
  int64_t inner = pp - (first > 0) - (last > 0);
  int64_t rest = layers - (first > 0 ? first : 0) - (last > 0 ? last : 0);
  if (rest < inner || (inner == 0 && rest != 0) || rest < 0)
    return sc__error(ctx, SC_EINVAL,
                     "pp=%lld with %lld first-stage and %lld last-stage layers: %lld layer(s) left for %lld "
                     "stage(s) of the %lld traced",
                     (long long)pp, (long long)first, (long long)last, (long long)rest, (long long)inner,
                     (long long)layers);
  int64_t k = 0;
  for (int64_t s = 0; s < pp; s++) {
    int64_t n;
    if (s == 0 && first > 0) n = first;
    else if (s == pp - 1 && last > 0) n = last;
    else n = rest / inner + (k++ < rest % inner);
    first_layer[s + 1] = first_layer[s] + n;
  }
  return SC_OK;
}

/* ------------------------------------------------------------ analysis */

/* Where an op of the traced step goes. */
enum { U_PRE = 0, U_FWD, U_BWD, U_POST }; /* zero_grad / forward / backward / optimizer step */

typedef struct opinfo {
  int32_t stage;     /* virtual stage: stage + pp x model chunk */
  uint8_t unit;      /* U_* */
  uint8_t wgrad;     /* backward work of the weight gradients (ZB-H1's W pass) */
  uint8_t attn;      /* CP: in its layer's attention core, run once per ring step */
  uint32_t span_first, span_last; /* ... the core's first and last op (source indices) */
  uint8_t ar;        /* 1: an all-reduce over the TP group follows it (a reduce-scatter with SP) */
  uint8_t ag;        /* SP: an all-gather over the TP group comes before it (of act_bytes) */
  double ar_bytes;
  double div[4];     /* factors on m, n, k, batch */
  double bytes_div;  /* factor on bytes and FLOPs of non-GEMM ops */
  uint8_t skip;      /* a shard trace's marker op: rebuilt, not copied */
  uint8_t dropped;   /* EP: an op of another EP rank's expert (not run here) */
  uint8_t expert;    /* EP: an op of one of this rank's experts */
  uint8_t ep_in, ep_out; /* EP: the dispatch all-to-all before it, the combine after it */
} opinfo;

typedef struct shb {  /* building */
  sc_ctx *ctx;
  const sc_job *in;
  const sc_jrank *r;
  const sc_shard_opts *o;
  sc_job *job;
  opinfo *oi;
  uint8_t *roles;
  int32_t *mod_layer;    /* layer index of each module, -1 none */
  uint8_t *mod_post;     /* non-layer module first seen after the layers (forward) */
  double *fm, *fn, *fk;
  int64_t nlayers;
  int64_t vpp;           /* model chunks per stage */
  int vshape;            /* ZB-V: chunk 1 of stage s is virtual stage 2 pp - 1 - s */
  int64_t cp;            /* context-parallel ranks a sequence is split over */
  double seq;            /* the traced sequence length (CP) */
  double act_bytes;      /* one micro-batch's hidden activations (b s h x element size) */
  int32_t fixed;         /* a shard trace (in->shard_tp): its stage; -1 a whole-process trace */
  int32_t *mod_expert;   /* EP: each module's expert (numbered in its layer), -1 none */
  int moe;               /* expert_split found experts: the MoE exchanges are built */
  double *ep_bytes;      /* EP: per layer, one rank's dispatch (and combine) bytes */
} shb;

/* Stage and model chunk of virtual stage vs, and the virtual stage of chunk
 * c of stage s: c x pp + s, or in ZB-V's V (synth's sc__shape_vstage)
 * stage s holds virtual stages s and 2 pp - 1 - s, so the first stage runs
 * both ends of the model and the last turns the forward round. */
static int64_t vs_stage(const shb *B, int64_t vs) {
  int64_t pp = B->o->pp;
  return B->vshape && vs >= pp ? 2 * pp - 1 - vs : vs % pp;
}
static int64_t vs_chunk(const shb *B, int64_t vs) { return vs / B->o->pp; }
static int64_t vstage(const shb *B, int64_t s, int64_t c) {
  return B->vshape && c == 1 ? 2 * B->o->pp - 1 - s : c * B->o->pp + s;
}

/* Forward, backward and activation checkpointing's recomputation (forward
 * operators run in backward): the passes that work on activations. */
static int act_pass(int pass) { return pass == SC_JPASS_FWD || pass == SC_JPASS_BWD || pass == SC_JPASS_RECOMP; }

/* The slot of a layer's pass among its attention cores (3 per layer). */
static size_t core_slot(int32_t layer, int pass) {
  return (size_t)layer * 3 + (pass == SC_JPASS_BWD ? 1 : pass == SC_JPASS_RECOMP ? 2 : 0);
}

/* A GEMM-like shape whose dims divide (FLOPs and bytes with them). */
static int dims_divide(int cls) { return sc__jshape_gemm(cls) || cls == SC_JSHAPE_CONV || sc__jshape_attn(cls); }

static double elem_bytes(const sc_jop *op, const sc_jshape *sh) {
  double b = sh->batch > 0 ? sh->batch : 1, n = (sh->m * sh->k + sh->k * sh->n + sh->m * sh->n) * b;
  double eb = n > 0 ? op->bytes / n : 4;
  return eb > 0 ? eb : 4;
}

/* Divides the first of the GEMM's dims (order: indices into m, n, k) equal
 * to want; failing that the first in the order. */
static void divide_dim(opinfo *x, const sc_jshape *sh, double want, int a, int b, int c, double tp) {
  const double d[3] = {sh->m, sh->n, sh->k};
  int order[3] = {a, b, c}, pick = a;
  for (int i = 0; i < 3; i++)
    if (d[order[i]] == want) {
      pick = order[i];
      break;
    }
  x->div[pick] = tp;
}

/* Whether backward op k computes weight gradients: a module's parameter
 * work (gradient accumulation, grad marks) or a GEMM of a module with a
 * forward GEMM (m tokens, n out, k in) that reduces over the tokens and is
 * not the input gradient (m x k): dW = dY^T X, n x k or k x n. ZB-H1 defers
 * these to its W pass (Qi et al. 2024, section 2). */
static int is_wgrad(const shb *B, const sc_jrank *r, size_t k, const sc_jopmod *om) {
  if (!om->module) return 0;
  if (om->param) return 1;
  const sc_jop *op = &r->ops[k];
  if (!op->shape) return 0;
  const sc_jshape *sh = &r->shapes[op->shape - 1];
  size_t m = om->module - 1;
  double fm = B->fm[m];
  if (!sc__jshape_gemm(sh->cls) || fm <= 0 || sh->batch > 1) return 0;
  return sh->k == fm && !(sh->m == fm && sh->n == B->fk[m]);
}

/* Context parallelism (Megatron-LM / Transformer Engine ring attention, as
 * synth/context.c): every op of forward and backward on the rank's
 * tokens / cp (a GEMM's token dimension, a memory-bound op's bytes); the
 * attention core of each layer (from its first to its last batched GEMM
 * over the sequence, softmax and masking between) runs cp times, once per
 * K/V chunk of the ring, each step on s/cp queries x s/cp keys (dims equal
 * to s / cp, bytes / cp^2). Parameter work (gradients, optimizer) keeps
 * its size. 0 or SC_EINVAL (no attention found, s not divisible by cp). */
static int context_split(shb *B) {
  const sc_jrank *r = B->r;
  double cp = (double)B->cp, T = 0, sq = 0;
  size_t nl = (size_t)B->nlayers;
  for (size_t k = 0; k < r->nops && (T == 0 || sq == 0); k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    if (!om.module || om.pass != SC_JPASS_FWD || !op->shape || B->mod_layer[om.module - 1] < 0) continue;
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    if (sc__jshape_attn(sh->cls) && sq == 0) sq = sh->m; /* fused attention: its queries */
    if (!sc__jshape_gemm(sh->cls)) continue;
    if (sh->batch > 1 && sh->m == sh->n && sq == 0) sq = sh->m; /* Q K^T: s x s scores */
    if (sh->batch <= 1 && T == 0) T = sh->m;
  }
  if (sq <= 0 || T <= 0)
    return sc__error(B->ctx, SC_EINVAL,
                     "cp=%lld: no attention over the sequence found in the traced layers (a batched s x s "
                     "score GEMM, as eager attention runs it, or a fused attention operator)", (long long)B->cp);
  for (size_t i = 0; B->o->cp_comm == SC_CP_A2A && i < r->nmodules; i++) {
    int64_t th = B->o->tp * B->cp;
    if (r->modules[i].heads && r->modules[i].heads % (uint32_t)th)
      return sc__error(B->ctx, SC_EINVAL,
                       "cp=%lld with the a2a exchange: module %s has %u attention heads, not divisible by tp x cp "
                       "= %lld", (long long)B->cp, sc__job_str(B->in, r->modules[i].path), r->modules[i].heads,
                       (long long)th);
  }
  if ((int64_t)sq % B->cp)
    return sc__error(B->ctx, SC_EINVAL, "cp=%lld: the traced sequence of %.0f tokens is not divisible by cp",
                     (long long)B->cp, sq);
  B->seq = sq;
  int64_t *first = sc__malloc(B->ctx, 6 * (nl ? nl : 1) * sizeof *first), *last = first ? first + 3 * nl : NULL;
  if (!first) return SC_ENOMEM;
  for (size_t i = 0; i < 3 * nl; i++) first[i] = last[i] = -1;
  for (size_t k = 0; k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    if (!om.module || !op->shape || !act_pass(om.pass)) continue;
    int32_t l = B->mod_layer[om.module - 1];
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    if (l < 0 || (!sc__jshape_gemm(sh->cls) && !sc__jshape_attn(sh->cls)) || sh->batch <= 1 ||
        (sh->m != sq && sh->n != sq && sh->k != sq))
      continue;
    size_t q = core_slot(l, om.pass);
    if (first[q] < 0) first[q] = (int64_t)k;
    last[q] = (int64_t)k;
  }
  for (size_t k = 0; k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    opinfo *x = &B->oi[k];
    if (op->kind == SC_JOP_HOST || op->kind == SC_JOP_SYNC || om.param) continue;
    if (!act_pass(om.pass)) continue;
    int32_t l = om.module ? B->mod_layer[om.module - 1] : -1;
    size_t q = l >= 0 ? core_slot(l, om.pass) : 0;
    const sc_jshape *sh = op->shape ? &r->shapes[op->shape - 1] : NULL;
    int gemm = sh && dims_divide(sh->cls);
    if (l >= 0 && first[q] >= 0 && (int64_t)k >= first[q] && (int64_t)k <= last[q]) {
      x->attn = 1;
      x->span_first = (uint32_t)first[q];
      x->span_last = (uint32_t)last[q];
      if (B->o->cp_comm == SC_CP_A2A) { /* Ulysses: the whole sequence on heads / cp */
        if (gemm) x->div[3] *= cp;
        else x->bytes_div *= cp;
        continue;
      }
      if (B->o->cp_comm == SC_CP_ALLGATHER) {
        /* The rank's queries against all the keys, once: the first dim
         * that is s (the queries of the forward GEMMs and of a fused
         * attention op, else one of the backward's) splits. */
        if (gemm) {
          const double d[3] = {sh->m, sh->n, sh->k};
          int i = 0;
          while (i < 2 && d[i] != sq) i++;
          x->div[i] *= cp;
        } else x->bytes_div *= cp;
        continue;
      }
      if (gemm) {
        /* Queries x keys: two of the dims are s (the third the head
         * dimension, which may equal s too). */
        const double d[3] = {sh->m, sh->n, sh->k};
        for (int i = 0, n = 0; i < 3 && n < 2; i++)
          if (d[i] == sq) x->div[i] *= cp, n++;
      } else x->bytes_div *= cp * cp;
      continue;
    }
    if (gemm) {
      const double d[3] = {sh->m, sh->n, sh->k};
      /* The tokens: m (forward, input gradient), else k (weight gradient). */
      static const int order[3] = {0, 2, 1};
      int pick = -1;
      for (int i = 0; i < 3 && pick < 0; i++)
        if (d[order[i]] == T) pick = order[i];
      for (int i = 0; i < 3 && pick < 0; i++)
        if (d[i] == sq) pick = i;
      x->div[pick < 0 ? 0 : pick] *= cp;
    } else x->bytes_div *= cp;
  }
  sc__free(B->ctx, first, 6 * (nl ? nl : 1) * sizeof *first);
  return SC_OK;
}

/* The token dimension of GEMM shape sh of module m (m tokens, forward):
 * the first of its m, k, n equal to them (forward and input-gradient m,
 * weight-gradient k); m when none is. An index into opinfo.div. */
static int token_dim(const shb *B, size_t m, const sc_jshape *sh) {
  const double d[3] = {sh->m, sh->k, sh->n};
  static const int dim[3] = {0, 2, 1};
  int pick = 0;
  for (int i = 2; i >= 0; i--)
    if (d[i] == B->fm[m]) pick = dim[i];
  return pick;
}

/* Whether module path q lies in module path p (is it, or under it). */
static int path_in(const char *q, const char *p) {
  size_t n = strlen(p);
  return !strncmp(q, p, n) && (q[n] == 0 || q[n] == '.');
}

/* Expert parallelism (Megatron-Core's MoE with the all-to-all dispatcher,
 * synth/moe.c): the experts of each layer (the modules of role expert not
 * inside another one, numbered in module order; their sub-modules with
 * them) spread over ep ranks, experts [j E / ep, (j + 1) E / ep) on EP rank
 * j. Rank 0 (the one simulated) runs its E / ep experts; the others' ops
 * are dropped. With the traced router's uniform load each of its experts
 * receives the tokens routed to it from all ep ranks, ep times the traced
 * count: its GEMMs' token dimension (the module's forward m: m of the
 * forward and input-gradient GEMMs, k of the weight gradient) and its other
 * ops' bytes times ep; parameter work keeps its size. A layer's dispatch
 * all-to-all goes before its first expert op of a pass (forward,
 * recomputation, the input-gradient part of backward), the combine after
 * its last, each of its experts' tokens x input features x element size
 * summed (tokens x top-k x hidden: one rank's routed copies, as synth/
 * moe.c's a2a_bytes with a uniform router). Under TP with SP (and at ep 1
 * too) the experts' own TP collectives give way to the layer's expert-TP
 * gather after the dispatch and scatter before the combine (emit_unit),
 * and the router works on the rank's s / tp tokens. Sets B->moe when
 * experts were found. 0, SC_ENOMEM, or SC_EINVAL (no experts with ep > 1,
 * a count ep does not divide). */
static int expert_split(shb *B) {
  const sc_jrank *r = B->r;
  const sc_job *job = B->in;
  size_t nm = r->nmodules, nl = (size_t)B->nlayers ? (size_t)B->nlayers : 1;
  int64_t epn = B->o->ep > 1 ? B->o->ep : 1;
  double ep = (double)epn;
  int64_t *nexp = sc__calloc(B->ctx, nl, sizeof *nexp), total = 0;
  int64_t *first = sc__malloc(B->ctx, 6 * nl * sizeof *first), *last = first ? first + 3 * nl : NULL;
  B->ep_bytes = sc__calloc(B->ctx, nl, sizeof *B->ep_bytes);
  uint8_t *seen = sc__calloc(B->ctx, nm ? nm : 1, 1);
  int rc = !nexp || !first || !B->ep_bytes || !seen ? SC_ENOMEM : SC_OK;
  for (size_t i = 0; !rc && i < nm; i++) B->mod_expert[i] = -1;
  for (size_t i = 0; !rc && i < nm; i++) { /* the experts */
    const char *p = sc__job_str(job, r->modules[i].path);
    int top = B->roles[i] == SC_SHARD_EXPERT && B->mod_layer[i] >= 0;
    for (size_t j = 0; top && j < nm; j++)
      top = j == i || B->roles[j] != SC_SHARD_EXPERT || !path_in(p, sc__job_str(job, r->modules[j].path));
    if (top) B->mod_expert[i] = (int32_t)nexp[B->mod_layer[i]]++, total++;
  }
  for (size_t q = 0; !rc && q < nm; q++) /* ... and their sub-modules */
    for (size_t i = 0; B->mod_expert[q] < 0 && i < nm; i++)
      if (B->mod_expert[i] >= 0 && B->roles[i] == SC_SHARD_EXPERT && i != q &&
          path_in(sc__job_str(job, r->modules[q].path), sc__job_str(job, r->modules[i].path)))
        B->mod_expert[q] = B->mod_expert[i];
  if (!rc && !total && epn == 1) goto out; /* SP without EP: nothing to do */
  if (!rc && !total)
    rc = sc__error(B->ctx, SC_EINVAL,
                   "ep=%lld: the traced layers have no experts (modules numbered under `experts`, or given the "
                   "role expert by --shard-rules)", (long long)B->o->ep);
  for (size_t l = 0; !rc && l < nl; l++)
    if (nexp[l] % epn) {
      const char *p = "";
      size_t pl = 0;
      for (size_t i = 0; i < nm && !pl; i++)
        if (B->mod_layer[i] == (int32_t)l) p = sc__job_str(job, r->modules[i].path), pl = sc__shard_layer_prefix(p);
      rc = sc__error(B->ctx, SC_EINVAL, "ep=%lld: layer %.*s has %lld experts, not divisible by ep",
                     (long long)B->o->ep, (int)pl, p, (long long)nexp[l]);
    }
  for (size_t i = 0; !rc && i < 3 * nl; i++) first[i] = last[i] = -1;
  for (size_t k = 0; !rc && k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    opinfo *x = &B->oi[k];
    if (!om.module || B->mod_expert[om.module - 1] < 0) continue;
    size_t m = om.module - 1;
    int32_t l = B->mod_layer[m];
    const sc_jshape *sh = op->shape ? &r->shapes[op->shape - 1] : NULL;
    int gemm = sh && dims_divide(sh->cls);
    /* The layer's dispatch: every expert's first GEMM's tokens x input
     * features (its first linear's input). */
    if (om.pass == SC_JPASS_FWD && gemm && sc__jshape_gemm(sh->cls) && !seen[m]) {
      int fresh = 1;
      for (size_t i = 0; i < nm; i++)
        fresh &= !(seen[i] && B->mod_expert[i] == B->mod_expert[m] && B->mod_layer[i] == l);
      seen[m] = 1;
      if (fresh) B->ep_bytes[l] += sh->m * sh->k * elem_bytes(op, sh);
    }
    x->ag = x->ar = 0; /* with SP its TP collectives are the layer's ETP gather and scatter */
    if (B->mod_expert[m] >= nexp[l] / epn) {
      x->dropped = 1;
      continue;
    }
    x->expert = 1;
    int gpu = op->kind == SC_JOP_KERNEL || op->kind == SC_JOP_MEMCPY || op->kind == SC_JOP_MEMSET;
    if (!gpu || om.param || !act_pass(om.pass)) continue;
    if (gemm) x->div[token_dim(B, m, sh)] /= ep;
    else x->bytes_div /= ep;
    if (om.pass == SC_JPASS_BWD && x->wgrad) continue; /* a W pass: no exchange */
    size_t q = core_slot(l, om.pass);
    if (first[q] < 0) first[q] = (int64_t)k;
    last[q] = (int64_t)k;
  }
  for (size_t q = 0; !rc && q < 3 * nl; q++)
    if (first[q] >= 0) B->oi[first[q]].ep_in = 1, B->oi[last[q]].ep_out = 1;
  /* SP: the router (a replicated linear of an MoE layer) on the rank's
   * s / tp tokens, as the norm before it. */
  for (size_t k = 0; !rc && B->o->sp && k < r->nops; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    const sc_jshape *sh = op->shape ? &r->shapes[op->shape - 1] : NULL;
    if (!om.module || om.param || !act_pass(om.pass) || !sh || !sc__jshape_gemm(sh->cls)) continue;
    size_t m = om.module - 1;
    int32_t l = B->mod_layer[m];
    if (l < 0 || !nexp[l] || B->roles[m] != SC_SHARD_REPLICATED || B->fm[m] <= 0) continue;
    B->oi[k].div[token_dim(B, m, sh)] *= (double)B->o->tp;
  }
  B->moe = !rc;
out:
  sc__free(B->ctx, nexp, nl * sizeof *nexp);
  sc__free(B->ctx, first, 6 * nl * sizeof *first);
  sc__free(B->ctx, seen, nm ? nm : 1);
  return rc;
}

static int analyse(shb *B) {
  const sc_jrank *r = B->r;
  const sc_job *job = B->in;
  /* A shard trace has its shapes already: nothing is divided. */
  double tp = B->fixed >= 0 ? 1 : (double)B->o->tp;
  size_t nm = r->nmodules;
  int64_t nl = B->nlayers = sc__shard_layers(job, r, B->mod_layer, B->mod_post);
  sc__shard_forward_dims(r, B->fm, B->fn, B->fk);
  /* Checks: heads and features divisible by tp. */
  for (size_t i = 0; i < nm && tp > 1; i++) {
    const char *p = sc__job_str(job, r->modules[i].path);
    if (r->modules[i].heads && r->modules[i].heads % (uint32_t)tp)
      return sc__error(B->ctx, SC_EINVAL, "tp=%lld: module %s has %u attention heads, not divisible by tp",
                       (long long)tp, *p ? p : "(the model)", r->modules[i].heads);
    double f = B->roles[i] == SC_SHARD_COLUMN ? B->fn[i] : B->roles[i] == SC_SHARD_ROW ? B->fk[i] : 0;
    if (f > 0 && (int64_t)f % (int64_t)tp)
      return sc__error(B->ctx, SC_EINVAL, "tp=%lld: %s module %s has %.0f %s features, not divisible by tp",
                       (long long)tp, role_names[B->roles[i]], p, f,
                       B->roles[i] == SC_SHARD_COLUMN ? "output" : "input");
  }
  /* Stages and TP factors per op. */
  int fwd_seen_layer = 0, bwd_seen_layer = 0, fwd_seen = 0, region = 0;
  /* The module whose backward input gradient was just found: when tokens
   * equal a feature count (Llama-3-8B's k_proj and v_proj at sequence 1024:
   * 1024 tokens, 1024 KV features) its weight gradient has the same m x n
   * x k; autograd computes the input gradient first (PyTorch's mm
   * backward: self, then mat2), so a second GEMM of that shape in the
   * same module's backward is the weight gradient. */
  size_t dx_mod = SIZE_MAX;
  int32_t last_layer = -1;
  int vocab_bwd_seen = 0, col_open = 0; /* SP: a backward group of column-parallel linears is open */
  size_t col_dx = SIZE_MAX;              /* ... its last input-gradient GEMM so far */
  int32_t recomp_gathered = -2;          /* the layer whose recomputation gathered its inputs */
  int prev_pass = SC_JPASS_NONE;
  /* Per layer, 1 when its recomputation re-runs fewer GEMMs than its
   * forward ran: per-op selective checkpointing (torchtitan's op SAC),
   * whose policy saves the reduce-scatters' outputs, so a recomputed
   * row-parallel linear with SP does not scatter again; a whole-layer
   * recomputation (full checkpointing) re-runs its collectives. */
  uint8_t *selective = B->o->sp && nl > 0 ? sc__calloc(B->ctx, (size_t)nl, 1) : NULL;
  if (B->o->sp && nl > 0) {
    int64_t *cnt = sc__calloc(B->ctx, 2 * (size_t)nl, sizeof *cnt);
    if (!selective || !cnt) {
      sc__free(B->ctx, selective, (size_t)nl);
      sc__free(B->ctx, cnt, 2 * (size_t)nl * sizeof *cnt);
      return SC_ENOMEM;
    }
    for (size_t k = 0; k < r->nops; k++) {
      sc_jopmod om = sc__jrank_opmod(r, k);
      const sc_jop *op = &r->ops[k];
      if (!om.module || om.param || !op->shape || !sc__jshape_gemm(r->shapes[op->shape - 1].cls)) continue;
      int32_t l = B->mod_layer[om.module - 1];
      if (l >= 0 && (om.pass == SC_JPASS_FWD || om.pass == SC_JPASS_RECOMP))
        cnt[2 * (size_t)l + (om.pass == SC_JPASS_RECOMP)]++;
    }
    for (int64_t l = 0; l < nl; l++) selective[l] = cnt[2 * l + 1] > 0 && cnt[2 * l + 1] < cnt[2 * l];
    sc__free(B->ctx, cnt, 2 * (size_t)nl * sizeof *cnt);
  }
  /* Virtual stages: chunk c of stage s is c x pp + s; a shard trace holds
   * one stage. */
  int64_t V = B->fixed >= 0 ? 1 : B->o->pp * B->vpp;
  int64_t *cut = sc__malloc(B->ctx, (size_t)(V + 1) * sizeof *cut);
  if (!cut) {
    sc__free(B->ctx, selective, selective ? (size_t)nl : 0);
    return SC_ENOMEM;
  }
  int rc = SC_OK;
  if (nl && B->vpp > 1 && nl < V)
    rc = sc__error(B->ctx, SC_EINVAL,
                   "pp=%lld with %lld model chunks per stage: the traced model has %lld layer(s), fewer than "
                   "the %lld chunks", (long long)B->o->pp, (long long)B->vpp, (long long)nl, (long long)V);
  if (!rc && nl) rc = sc__shard_stages(B->ctx, nl, V, B->o->first_layers, B->o->last_layers, cut);
  if (!rc && !nl && B->o->pp > 1 && B->fixed < 0)
    rc = sc__error(B->ctx, SC_EINVAL,
                   "pp=%lld: the traced model has no layers (no module path with a numeric component, "
                   "such as blocks.0)", (long long)B->o->pp);
  for (size_t k = 0; !rc && k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    opinfo *x = &B->oi[k];
    x->div[0] = x->div[1] = x->div[2] = x->div[3] = 1;
    x->bytes_div = 1;
    if (op->kind == SC_JOP_HOST) continue; /* placed with the op it launches */
    sc_jopmod om = sc__jrank_opmod(r, k);
    int pass = om.pass;
    if (pass == SC_JPASS_NONE) pass = SC_JPASS_OPT;
    /* Recomputed forward operators run in the backward, shaped as forward. */
    int bwd = pass == SC_JPASS_BWD || pass == SC_JPASS_RECOMP, fwdlike = pass == SC_JPASS_FWD || pass == SC_JPASS_RECOMP;
    x->unit = pass == SC_JPASS_FWD ? U_FWD : bwd ? U_BWD : fwd_seen ? U_POST : U_PRE;
    if (pass == SC_JPASS_FWD) fwd_seen = 1;
    int32_t layer = om.module ? B->mod_layer[om.module - 1] : -1;
    int post;
    if (layer >= 0) post = 0;
    else if (om.module && B->mod_post[om.module - 1]) post = B->mod_post[om.module - 1] == 2;
    else if (pass == SC_JPASS_FWD) post = fwd_seen_layer;
    else if (bwd) post = !bwd_seen_layer;
    else post = 0;
    if (layer >= 0 && pass == SC_JPASS_FWD) fwd_seen_layer = 1;
    if (layer >= 0 && bwd) bwd_seen_layer = 1;
    if (layer >= 0) {
      int32_t s = 0;
      while (s + 1 < V && layer >= cut[s + 1]) s++;
      x->stage = s;
    } else x->stage = post ? (int32_t)(V - 1) : 0;
    x->wgrad = pass == SC_JPASS_BWD && is_wgrad(B, r, k, &om);
    if (layer != last_layer) region = 0, last_layer = layer;
    /* A layer's backward starts outside any region, whatever its
     * recomputation ended in. */
    if (pass == SC_JPASS_BWD && prev_pass == SC_JPASS_RECOMP) region = col_open = 0;
    if (pass != SC_JPASS_NONE) prev_pass = pass;
    if (tp <= 1 || !om.module) continue;
    size_t m = om.module - 1;
    int role = B->roles[m];
    const sc_jshape *sh = op->shape ? &r->shapes[op->shape - 1] : NULL;
    int gemm = sh && dims_divide(sh->cls);
    int param_split = om.param && (role == SC_SHARD_COLUMN || role == SC_SHARD_VOCAB ||
                                   (role == SC_SHARD_ROW && om.param == SC_JPARAM_WEIGHT));
    if (om.param) { /* gradient accumulation, grad marks, optimizer: the parameter's shard */
      if (param_split) x->bytes_div = tp;
      continue;
    }
    /* SP: entering a TP region needs the whole sequence, gathered: the
     * input before a column-parallel linear (forward; in backward again,
     * for the weight gradients of the linears that share it), the output
     * gradient before a row-parallel linear's backward, the embedding's
     * gradient. In backward the region ends where the linears sharing an
     * input end (at the norm before them), and their input gradients are
     * summed, then reduce-scattered once (Megatron's and torchtitan's one
     * collective per shared input). */
    if (B->o->sp && act_pass(pass)) {
      /* (A layer whose forward was recomputed in this backward has its
       * inputs gathered already: the recomputation gathered them.) */
      if (gemm && role == SC_SHARD_COLUMN && (fwdlike ? !region : !col_open && layer != recomp_gathered)) x->ag = 1;
      if (x->ag && pass == SC_JPASS_RECOMP) recomp_gathered = layer;
      if (gemm && role == SC_SHARD_ROW && pass == SC_JPASS_BWD && !region) x->ag = 1;
      if (role == SC_SHARD_VOCAB && pass == SC_JPASS_BWD && op->kind == SC_JOP_KERNEL && !vocab_bwd_seen)
        x->ag = 1, vocab_bwd_seen = 1;
      if (pass == SC_JPASS_BWD && role != SC_SHARD_COLUMN && role != SC_SHARD_ROW && role != SC_SHARD_BLOCK &&
          role != SC_SHARD_EXPERT) {
        region = col_open = 0; /* a norm: the shared input's gradient is whole (s / tp) again */
        col_dx = SIZE_MAX;
      }
    }
    switch (role) {
    case SC_SHARD_COLUMN:
      if (gemm) {
        if (fwdlike) divide_dim(x, sh, B->fn[m], 1, 0, 2, tp);
        else divide_dim(x, sh, B->fn[m], 2, 0, 1, tp);
        /* The input gradient (tokens x input features) is all-reduced. */
        if (pass == SC_JPASS_BWD && sh->m == B->fm[m] && sh->n == B->fk[m] && dx_mod == m) {
          x->wgrad = 1; /* the weight gradient, of the same shape: out features are its m */
          x->div[0] = x->div[1] = x->div[2] = 1;
          x->div[0] = tp;
          dx_mod = SIZE_MAX;
        } else if (pass == SC_JPASS_BWD && sh->m == B->fm[m] && sh->n == B->fk[m]) {
          dx_mod = m;
          x->ar = 1;
          x->ar_bytes = sh->m * sh->n * (sh->batch > 0 ? sh->batch : 1) * elem_bytes(op, sh);
          if (B->o->sp) { /* after the last of the group only */
            if (col_dx != SIZE_MAX) B->oi[col_dx].ar = 0;
            col_dx = k;
          }
        }
        if (B->o->sp && pass == SC_JPASS_BWD) col_open = 1; /* the region goes on to the norm */
        else region = fwdlike;
      } else x->bytes_div = tp;
      break;
    case SC_SHARD_ROW:
      if (gemm) {
        if (fwdlike) { /* recomputed too: the recomputed forward sums its partial outputs again */
          divide_dim(x, sh, B->fk[m], 2, 1, 0, tp);
          x->ar = !(pass == SC_JPASS_RECOMP && layer >= 0 && selective && selective[layer]); /* the partial outputs summed */
          x->ar_bytes = sh->m * sh->n * (sh->batch > 0 ? sh->batch : 1) * elem_bytes(op, sh);
        } else divide_dim(x, sh, B->fk[m], 1, 0, 2, tp);
        region = pass == SC_JPASS_BWD;
        if (pass == SC_JPASS_BWD) col_open = 0;
      }
      break;
    case SC_SHARD_VOCAB:
      if (fwdlike && op->kind == SC_JOP_KERNEL) x->ar = 1, x->ar_bytes = -1; /* act_bytes, below */
      if (pass == SC_JPASS_BWD) x->bytes_div = tp;
      break;
    case SC_SHARD_BLOCK:
    case SC_SHARD_EXPERT: /* an expert's own ops (its activation) split as a layer's */
      if (region) {
        if (gemm) x->div[sh->batch > 1 ? 3 : 1] = tp;
        else x->bytes_div = tp;
      } else if (B->o->sp && !gemm && act_pass(pass)) x->bytes_div = tp; /* s / tp tokens */
      break;
    default: /* replicated: norms, the model's own ops (the loss after a column-parallel head: vocab-parallel) */
      if (!gemm && act_pass(pass) && (region || B->o->sp)) x->bytes_div = tp;
      break;
    }
  }
  /* The hidden activations: the input of the first layer's first GEMM. */
  for (size_t k = 0; k < r->nops && B->act_bytes == 0; k++) {
    sc_jopmod om = sc__jrank_opmod(r, k);
    const sc_jop *op = &r->ops[k];
    if (!om.module || om.pass != SC_JPASS_FWD || !op->shape || B->mod_layer[om.module - 1] != 0) continue;
    const sc_jshape *sh = &r->shapes[op->shape - 1];
    if (sc__jshape_gemm(sh->cls)) B->act_bytes = sh->m * sh->k * (sh->batch > 0 ? sh->batch : 1) * elem_bytes(op, sh);
  }
  for (size_t k = 0; k < r->nops; k++)
    if ((B->oi[k].ar && B->oi[k].ar_bytes < 0) || B->oi[k].ag) B->oi[k].ar_bytes = B->act_bytes;
  /* A shard trace: its markers (exsitu.c) say where the TP all-reduces go
   * (after the op each depends on: the same place the rules above give a
   * whole-model trace's) and how large the pipeline's messages are (the
   * activation at the cut); the schedule's p2p are built as for a cut. */
  int act_marked = 0;
  for (size_t k = 0; B->fixed >= 0 && k < r->nops; k++) {
    const sc_jop *op = &r->ops[k];
    if (op->kind == SC_JOP_COLL && op->group < job->ngroups &&
        !strcmp(sc__job_str(job, job->groups[op->group].name), SC_JOB_TP_GROUP)) {
      B->oi[k].skip = 1;
      if (op->ndeps) {
        opinfo *a = &B->oi[r->deps[op->dep_off]];
        a->ar = 1;
        a->ar_bytes = op->bytes;
      }
    } else if (op->kind == SC_JOP_SEND || op->kind == SC_JOP_RECV) {
      B->oi[k].skip = 1;
      if (!act_marked) B->act_bytes = op->bytes, act_marked = 1;
    }
  }
  /* CP: TP all-reduces and p2p carry the rank's tokens. */
  if (!rc && B->cp > 1) {
    rc = context_split(B);
    for (size_t k = 0; k < r->nops; k++) B->oi[k].ar_bytes /= (double)B->cp;
  }
  /* MoE layers under EP, or under TP with SP (the experts' linears then
   * gather and scatter the routed tokens over the expert-TP group). */
  if (!rc && B->fixed < 0 && (B->o->ep > 1 || (B->o->sp && B->o->tp > 1))) rc = expert_split(B);
  /* Host ops go with the op that waits for them (and are dropped with it). */
  uint8_t *placed = sc__calloc(B->ctx, r->nops ? r->nops : 1, 1);
  if (!rc && !placed) rc = SC_ENOMEM;
  for (size_t k = 0; !rc && k < r->nops; k++) {
    if (r->ops[k].kind == SC_JOP_HOST) continue;
    for (uint32_t d = 0; d < r->ops[k].ndeps; d++) {
      uint32_t h = r->deps[r->ops[k].dep_off + d];
      if (r->ops[h].kind == SC_JOP_HOST && !placed[h]) {
        placed[h] = 1;
        B->oi[h].stage = B->oi[k].stage;
        B->oi[h].unit = B->oi[k].unit;
        B->oi[h].wgrad = B->oi[k].wgrad;
        B->oi[h].dropped = B->oi[k].dropped;
      }
    }
  }
  for (size_t k = 0; !rc && k < r->nops; k++)
    if (r->ops[k].kind == SC_JOP_HOST && !placed[k]) B->oi[k].stage = (int32_t)(V - 1), B->oi[k].unit = U_POST;
  for (size_t k = 0; !rc && B->fixed >= 0 && k < r->nops; k++) B->oi[k].stage = B->fixed;
  sc__free(B->ctx, placed, r->nops ? r->nops : 1);
  sc__free(B->ctx, cut, (size_t)(V + 1) * sizeof *cut);
  sc__free(B->ctx, selective, selective ? (size_t)nl : 0);
  return rc;
}

/* ------------------------------------------------------------ building */

typedef struct stg {   /* one stage's rank being built */
  sc_jrank *jr;
  int host, gpu, tp, fsend, frecv, bsend, brecv;
  int rfsend, rfrecv, rbsend, rbrecv; /* ZB-V's chunk 1, down the stages */
  uint32_t *map;       /* source op -> new op (valid where stamp == unit serial) */
  uint32_t *stamp;
  uint32_t serial;
  int64_t waits[4];    /* deps for the next GPU op (-1 none) */
  int64_t last_gpu;    /* last compute op emitted */
  int64_t bwd_ar;      /* a backward all-reduce waited for after its module's ops (-1 none) */
  uint32_t bwd_ar_mod; /* ... that module */
  uint32_t nm_ar, nm_ag_tp, nm_rs_tp, nm_send, nm_recv, tp_group;
  int64_t rank_of_stage0;
  /* FSDP: the all-gather and reduce-scatter streams, the shard group, the
   * parameter bytes of each (chunk, unit) of the stage (unit: a layer, or
   * nlayers for the root: every module outside the layers), and per pass
   * the units in order of first use, their last op and their gathers. */
  int ag, rs;
  uint32_t fsdp_group, nm_ag, nm_rs;
  uint32_t hsdp_group, nm_hsdp; /* HSDP: the replica group, its all-reduce's name */
  double *unit_bytes;
  int32_t *useq;
  size_t *ulast;
  int64_t *ag_op;
  uint8_t *kept;          /* per (chunk, unit): gathered in this step already */
  int64_t prefetch_after; /* the first AG of the next pass is issued after it */
  int cpst;               /* CP: the ring's stream, group and op name */
  uint32_t cp_group, nm_ring, nm_a2a, nm_cp_ag, nm_cp_rs;
  int64_t last_rs;
  int epst;               /* EP: the all-to-alls' stream, the EP, EDP and ETP groups, op names */
  uint32_t ep_group, edp_group, etp_group, nm_ep, nm_etp_ag, nm_etp_rs;
} stg;

static int64_t emit(shb *B, stg *S, const sc_jop *src, int stream, const uint32_t *deps, int nd) {
  sc_jop op = *src;
  op.stream = (uint16_t)stream;
  op.iter = 0;
  op.start_ns = -1;
  int64_t k = sc__jrank_op(B->job, S->jr, &op);
  if (k < 0) return -1;
  for (int i = 0; i < nd; i++)
    if (sc__jrank_dep(B->job, S->jr, deps[i])) return -1;
  return k;
}

static int add_wait(stg *S, int64_t k) {
  for (int i = 0; i < 4; i++)
    if (S->waits[i] < 0) return S->waits[i] = k, SC_OK;
  return SC_EINTERNAL;
}

/* FSDP unit of op k: its module's layer, else the root (nlayers). */
static int32_t op_unit(const shb *B, size_t k) {
  uint32_t mod = sc__jrank_opmod(B->r, k).module;
  int32_t l = mod ? B->mod_layer[mod - 1] : -1;
  return l >= 0 ? l : (int32_t)B->nlayers;
}

/* A collective `coll` over `group` on `stream` after op `after` (-1: stream
 * order only): the FSDP gathers and reduce-scatters, the CP ring's steps,
 * the TP all-reduces. The op's index, or -1 (out of memory). */
static int64_t coll_op(shb *B, stg *S, int coll, uint32_t group, uint32_t name, double bytes,
                       int stream, int64_t after) {
  sc_jop op;
  memset(&op, 0, sizeof op);
  op.kind = SC_JOP_COLL;
  op.coll = (uint8_t)coll;
  op.group = group;
  op.peer = -1;
  op.name = name;
  op.bytes = bytes;
  uint32_t d = (uint32_t)after;
  return emit(B, S, &op, stream, &d, after >= 0);
}

static int64_t fsdp_coll(shb *B, stg *S, int gather, double bytes, int64_t after) {
  return coll_op(B, S, gather ? SC_COLL_ALLGATHER : SC_COLL_REDUCESCATTER, S->fsdp_group,
                 gather ? S->nm_ag : S->nm_rs, bytes, gather ? S->ag : S->rs, after);
}

/* A send_recv step of the CP ring (the K/V chunk, with dK/dV in backward)
 * on the CP stream after op `after` (-1: stream order only). */
static int64_t ring_coll(shb *B, stg *S, double bytes, int64_t after) {
  return coll_op(B, S, SC_COLL_SENDRECV, S->cp_group, S->nm_ring, bytes, S->cpst, after);
}

/* Emits a pipeline send or receive to / from global rank peer after op
 * `after` (-1 none); a receive is waited for by the next compute op. The op
 * index, or -1 out of memory. */
static int64_t p2p(shb *B, stg *S, int send, int stream, int64_t peer, int64_t after) {
  sc_jop op;
  memset(&op, 0, sizeof op);
  op.kind = send ? SC_JOP_SEND : SC_JOP_RECV;
  op.name = send ? S->nm_send : S->nm_recv;
  op.group = SC_JOB_NONE;
  op.peer = (int32_t)peer;
  op.coll = SC_JCOLL_UNKNOWN;
  /* Megatron-LM's scatter/gather: each TP rank sends its 1/tp slice
   * (synth/pipeline.c prices the same bytes). */
  op.bytes = B->act_bytes / (double)(B->o->tp * B->cp);
  uint32_t d = (uint32_t)after;
  int64_t k = emit(B, S, &op, stream, &d, after >= 0);
  if (k >= 0 && !send && add_wait(S, k)) return -1;
  return k;
}

/* Emits fraction f of GEMM op (its rows, FLOPs and bytes) on the compute
 * stream after deps: one part of an async-TP chunked GEMM. */
static int64_t emit_part(shb *B, stg *S, const sc_jop *op, double f, const uint32_t *deps, int nd) {
  sc_jop p = *op;
  sc_jshape sh = S->jr->shapes[op->shape - 1];
  sh.m *= f;
  p.flops *= f;
  p.bytes *= f;
  int64_t si = sc__jrank_shape(B->job, S->jr, &sh);
  if (si < 0) return -1;
  p.shape = (uint32_t)si + 1;
  return emit(B, S, &p, S->gpu, deps, nd);
}

/* Traced op k as the layout runs it: a shape's dims divided by the op's TP
 * and CP factors (its FLOPs and bytes with them), else its bytes. *op gets
 * the op (its shape index still the traced one), *sh the new shape;
 * returns sh, or NULL for an op without a shape. */
static const sc_jshape *reshaped(const shb *B, size_t k, sc_jop *op, sc_jshape *sh) {
  const sc_jop *src = &B->r->ops[k];
  const opinfo *x = &B->oi[k];
  *op = *src;
  if (!src->shape) {
    op->bytes /= x->bytes_div;
    return NULL;
  }
  *sh = B->r->shapes[src->shape - 1];
  sh->m /= x->div[0], sh->n /= x->div[1], sh->k /= x->div[2], sh->batch /= x->div[3];
  double f = dims_divide(sh->cls) ? x->div[0] * x->div[1] * x->div[2] * x->div[3] : x->bytes_div;
  op->flops /= f;
  op->bytes /= f;
  return sh;
}

/* Part of a backward unit to emit: all of it, the input-gradient pass
 * (weight-gradient work left out) or the weight-gradient pass alone. */
enum { PART_ALL = 0, PART_INPUT, PART_WEIGHT };

/* Emits stage s's ops of one unit: of virtual stage vs (forward and
 * backward passes), or of every chunk of the stage (vs < 0: zero_grad and
 * the optimizer); part selects a split backward's half. */
static int emit_unit(shb *B, stg *S, int32_t s, int64_t vs, int unit, int part, int last_mb) {
  const sc_jrank *r = B->r;
  S->serial++;
  /* FSDP (PyTorch FULL_SHARD): each unit's parameters are all-gathered
   * before its forward and again before its backward (resharded after
   * forward), the next unit's gather issued as a unit starts (forward and
   * backward prefetch); its gradients are reduce-scattered after its last
   * backward op where they are final (the last micro-batch's backward, or
   * W pass). With fsdp_keep a unit is gathered once, at its first use in
   * the step, and stays unsharded (FSDP2 under torch pipelining). */
  int fsdp = B->o->fsdp > 1 && vs >= 0 && (unit == U_FWD || unit == U_BWD);
  int gathers = fsdp && part != PART_WEIGHT, scatters = fsdp && unit == U_BWD && last_mb && part != PART_INPUT;
  size_t nseq = 0, nu = (size_t)B->nlayers + 1;
  const double *ub = fsdp ? S->unit_bytes + (size_t)vs_chunk(B, vs) * nu : NULL;
  if (fsdp) {
    for (size_t u = 0; u < nu; u++) S->ag_op[u] = -2; /* not in this pass */
    for (size_t k = 0; k < r->nops; k++) {
      const opinfo *x = &B->oi[k];
      int kind = r->ops[k].kind;
      if (x->unit != unit || x->stage != vs || kind == SC_JOP_HOST || kind == SC_JOP_SYNC || x->skip || x->dropped)
        continue;
      if ((part == PART_INPUT && x->wgrad) || (part == PART_WEIGHT && !x->wgrad)) continue;
      int32_t u = op_unit(B, k);
      if (ub[u] <= 0) continue;
      if (S->ag_op[u] == -2) {
        S->ag_op[u] = -1;
        uint8_t *kept = &S->kept[(size_t)vs_chunk(B, vs) * nu + (size_t)u];
        if (!(B->o->fsdp_keep && *kept)) S->useq[nseq++] = u; /* else no gather, nothing to wait for */
        if (gathers) *kept = 1;
      }
      S->ulast[u] = k;
    }
    if (gathers && nseq) {
      S->ag_op[S->useq[0]] = fsdp_coll(B, S, 1, ub[S->useq[0]], S->prefetch_after);
      if (S->ag_op[S->useq[0]] < 0) return SC_ENOMEM;
    }
  }
  size_t next_unit = 1;
  /* CP ring over the attention core: step of cp, span, the next chunk. */
  int ring = 0;
  int64_t step = 0, ring_next = -1;
  size_t span_first = 0, span_last = 0;
  double kv = 2.0 * B->act_bytes / (double)(B->o->tp * B->cp); /* K and V of the rank's tokens */
  for (size_t k = 0; k < r->nops; k++) {
    const opinfo *x = &B->oi[k];
    const sc_jop *src = &r->ops[k];
    if (x->unit != unit || (vs >= 0 ? x->stage != vs : vs_stage(B, x->stage) != s) || x->skip || x->dropped)
      continue;
    if ((part == PART_INPUT && x->wgrad) || (part == PART_WEIGHT && !x->wgrad)) continue;
    if (src->kind == SC_JOP_GRAD && !last_mb) continue; /* gradients are final in the last micro-batch */
    uint32_t deps[11]; /* 4 traced, 4 waits, an SP gather, a CP exchange, an EP dispatch */
    int nd = 0;
    for (uint32_t d = 0; d < src->ndeps && nd < 4; d++) {
      uint32_t q = r->deps[src->dep_off + d];
      if (S->stamp[q] == S->serial) deps[nd++] = S->map[q];
    }
    int host = src->kind == SC_JOP_HOST || src->kind == SC_JOP_SYNC;
    if (host && ring && step > 0) continue; /* the launches are not repeated */
    if (x->attn && B->o->cp_comm == SC_CP_ALLGATHER && k == x->span_first && !host) {
      /* K and V of the whole sequence gathered (backward: again) first. */
      int64_t g = coll_op(B, S, SC_COLL_ALLGATHER, S->cp_group, S->nm_cp_ag, kv * (double)B->cp, S->cpst,
                          S->last_gpu);
      if (g < 0) return SC_ENOMEM;
      deps[nd++] = (uint32_t)g;
    }
    if (x->attn && B->o->cp_comm == SC_CP_A2A && k == x->span_first && !host) {
      /* Ulysses: q, k, v (backward: the output's gradient) to heads / cp
       * over the whole sequence first. */
      int64_t a = coll_op(B, S, SC_COLL_ALLTOALL, S->cp_group, S->nm_a2a, unit == U_BWD ? kv / 2 : 1.5 * kv,
                          S->cpst, S->last_gpu);
      if (a < 0) return SC_ENOMEM;
      deps[nd++] = (uint32_t)a;
    }
    if (!ring && B->o->cp_comm == SC_CP_P2P && x->attn && k == x->span_first && B->cp > 1) {
      /* Step 0 computes with the local K/V while chunk 1 travels. */
      ring = 1, step = 0, span_first = x->span_first, span_last = x->span_last;
      if ((ring_next = ring_coll(B, S, unit == U_BWD ? 2 * kv : kv, S->last_gpu)) < 0) return SC_ENOMEM;
    }
    uint32_t mod = sc__jrank_opmod(r, k).module;
    int32_t ou = fsdp && !host ? op_unit(B, k) : -1;
    if (gathers && ou >= 0 && S->ag_op[ou] >= 0) { /* the unit's first op */
      int64_t g = S->ag_op[ou];
      S->ag_op[ou] = -3; /* waited for */
      S->prefetch_after = S->last_gpu;
      if (next_unit < nseq) {
        int32_t nx = S->useq[next_unit++];
        if ((S->ag_op[nx] = fsdp_coll(B, S, 1, ub[nx], S->last_gpu)) < 0) return SC_ENOMEM;
      }
      if (add_wait(S, g)) return SC_EINTERNAL;
    }
    if (!host && S->bwd_ar >= 0 && mod != S->bwd_ar_mod) {
      if (add_wait(S, S->bwd_ar)) return SC_EINTERNAL;
      S->bwd_ar = -1;
    }
    if (!host)
      for (int i = 0; i < 4; i++)
        if (S->waits[i] >= 0) deps[nd++] = (uint32_t)S->waits[i], S->waits[i] = -1;
    /* Async TP (torchtitan's micro-pipelined all-gather matmul and matmul
     * reduce-scatter, synth/tensor.c's tp_comm_overlap): a GEMM next to an
     * SP collective runs as tp chunks of its rows; split in two here. */
    const sc_jshape *ssh = src->shape ? &r->shapes[src->shape - 1] : NULL;
    int split = B->o->async_tp && B->o->sp && !host && ssh && sc__jshape_gemm(ssh->cls) && ssh->batch <= 1;
    int64_t gather = -1;
    if (x->ag && !host) { /* SP: the sequence gathered first */
      int64_t g = coll_op(B, S, SC_COLL_ALLGATHER, S->tp_group, S->nm_ag_tp, x->ar_bytes, S->tp, S->last_gpu);
      if (g < 0) return SC_ENOMEM;
      if (split) gather = g; /* waited for by the last chunk only */
      else deps[nd++] = (uint32_t)g;
    }
    /* One rank's routed copies of its tokens (its s / cp of them). */
    double tp = (double)B->o->tp, epb = x->ep_in || x->ep_out ? B->ep_bytes[B->mod_layer[mod - 1]] / B->cp : 0;
    int a2a = B->o->ep > 1;
    if (x->ep_in && !host) {
      /* EP: the rank's (s / tp tokens') copies to the experts (backward:
       * their outputs' gradients), then with tp > 1 gathered over the
       * expert-TP group (synth/moe.c's exchange). */
      int64_t a = a2a ? coll_op(B, S, SC_COLL_ALLTOALL, S->ep_group, S->nm_ep, epb / tp, S->epst, S->last_gpu)
                      : S->last_gpu;
      if (a >= 0 && tp > 1) a = coll_op(B, S, SC_COLL_ALLGATHER, S->etp_group, S->nm_etp_ag, epb, S->epst, a);
      if (a < 0) return SC_ENOMEM;
      if (a2a || tp > 1) deps[nd++] = (uint32_t)a;
    }
    sc_jop op;
    sc_jshape sh;
    if (reshaped(B, k, &op, &sh)) {
      int64_t si = sc__jrank_shape(B->job, S->jr, &sh);
      if (si < 0) return SC_ENOMEM;
      op.shape = (uint32_t)si + 1;
    }
    /* EP: an expert's gradient is reduced over its expert-data-parallel
     * group (ddp.c buckets it apart from the others). */
    if (src->kind == SC_JOP_GRAD && x->expert && B->o->ep > 1) op.group = S->edp_group;
    /* FSDP: zero_grad and the optimizer step work on the rank's shard
     * (of the fsdp x cp ranks of its shard group). */
    if (B->o->fsdp > 1 && (unit == U_PRE || unit == U_POST) && sc__jrank_opmod(r, k).param) {
      op.bytes /= (double)(B->o->fsdp * B->cp);
      op.flops /= (double)(B->o->fsdp * B->cp);
    }
    int64_t first = -1, nk;
    int rs_split = split && x->ar && unit != U_BWD; /* forward and recomputation: the reduce-scatter */
    if (gather >= 0 || rs_split) {
      /* The gathered input: tp - 1 chunks while the last one arrives; the
       * reduced output: one chunk, then the rest while it is scattered. */
      double t = (double)B->o->tp, f = gather >= 0 ? (t - 1) / t : 1 / t;
      if ((first = emit_part(B, S, &op, f, deps, nd)) < 0) return SC_ENOMEM;
      uint32_t d2[2] = {(uint32_t)first, (uint32_t)gather};
      nk = emit_part(B, S, &op, 1 - f, d2, gather >= 0 ? 2 : 1);
    } else nk = emit(B, S, &op, host ? S->host : S->gpu, deps, nd);
    if (nk < 0) return SC_ENOMEM;
    S->map[k] = (uint32_t)nk;
    S->stamp[k] = S->serial;
    if (!host) S->last_gpu = nk;
    if (x->ep_out && !host) { /* ... and back (scattered first), waited for by the next op */
      int64_t a = tp > 1 ? coll_op(B, S, SC_COLL_REDUCESCATTER, S->etp_group, S->nm_etp_rs, epb, S->epst, nk) : nk;
      if (a >= 0 && a2a) a = coll_op(B, S, SC_COLL_ALLTOALL, S->ep_group, S->nm_ep, epb / tp, S->epst, a);
      if (a < 0 || ((a2a || tp > 1) && add_wait(S, a))) return a < 0 ? SC_ENOMEM : SC_EINTERNAL;
    }
    if (scatters && ou >= 0 && ub[ou] > 0 && S->ulast[ou] == k) {
      if ((S->last_rs = fsdp_coll(B, S, 0, ub[ou], nk)) < 0) return SC_ENOMEM;
      /* HSDP: the reduced shard summed across the replicas, behind it. */
      if (B->o->fsdp < B->o->dp &&
          (S->last_rs = coll_op(B, S, SC_COLL_ALLREDUCE, S->hsdp_group, S->nm_hsdp,
                                ub[ou] / (double)(B->o->fsdp * B->cp), S->rs, S->last_rs)) < 0)
        return SC_ENOMEM;
    }
    if (x->attn && B->o->cp_comm == SC_CP_ALLGATHER && unit == U_BWD && k == x->span_last && !host) {
      /* ... and, backward, dK / dV of the whole sequence reduce-scattered
       * back to their ranks, waited for by the next op. */
      int64_t a = coll_op(B, S, SC_COLL_REDUCESCATTER, S->cp_group, S->nm_cp_rs, kv * (double)B->cp, S->cpst, nk);
      if (a < 0 || add_wait(S, a)) return a < 0 ? SC_ENOMEM : SC_EINTERNAL;
    }
    if (x->attn && B->o->cp_comm == SC_CP_A2A && k == x->span_last && !host) {
      /* ... and the output (backward: dq, dk, dv) back to the rank's tokens. */
      int64_t a = coll_op(B, S, SC_COLL_ALLTOALL, S->cp_group, S->nm_a2a, unit == U_BWD ? 1.5 * kv : kv / 2,
                          S->cpst, nk);
      if (a < 0 || add_wait(S, a)) return a < 0 ? SC_ENOMEM : SC_EINTERNAL;
    }
    if (ring && k == span_last && !x->ar) {
      if (step + 1 < B->cp) { /* the next step waits for its chunk; the one after travels */
        step++;
        if (add_wait(S, ring_next)) return SC_EINTERNAL;
        ring_next = -1;
        if (step + 1 < B->cp && (ring_next = ring_coll(B, S, unit == U_BWD ? 2 * kv : kv, -1)) < 0)
          return SC_ENOMEM;
        k = span_first - 1; /* wraps to span_first - 1 + 1 for span_first 0: size_t arithmetic */
        continue;
      }
      ring = 0;
      /* Backward: the last chunk's dK / dV go home, the next op waits. */
      int64_t home = unit == U_BWD ? ring_coll(B, S, kv, S->last_gpu) : -2;
      if (home == -1) return SC_ENOMEM;
      if (home >= 0 && add_wait(S, home)) return SC_EINTERNAL;
    }
    if (x->ar) { /* the TP all-reduce (SP: reduce-scatter), waited for by the next compute op */
      int64_t a = coll_op(B, S, B->o->sp ? SC_COLL_REDUCESCATTER : SC_COLL_ALLREDUCE, S->tp_group,
                          B->o->sp ? S->nm_rs_tp : S->nm_ar, x->ar_bytes, S->tp, rs_split ? first : nk);
      if (a < 0) return SC_ENOMEM;
      /* Forward: the next op needs the sum. Backward: Megatron runs the
       * input gradient's all-reduce asynchronously behind the layer's
       * weight-gradient GEMM; the module's next ops go on, the ops after
       * them wait. */
      if (unit == U_BWD) {
        if (S->bwd_ar >= 0 && add_wait(S, S->bwd_ar)) return SC_EINTERNAL;
        S->bwd_ar = a, S->bwd_ar_mod = mod;
      } else if (add_wait(S, a)) return SC_EINTERNAL;
    }
  }
  if (S->bwd_ar >= 0) { /* the pass ends with it */
    if (add_wait(S, S->bwd_ar)) return SC_EINTERNAL;
    S->bwd_ar = -1;
  }
  return SC_OK;
}

/* Builds stage s's program (its rank) along its schedule order items[nitems]
 * (model/schedule.c's). */
static int build_stage(shb *B, int32_t s, const sc_sched_item *items, size_t nitems) {
  sc_job *job = B->job;
  const sc_jrank *r = B->r;
  stg S;
  memset(&S, 0, sizeof S);
  S.last_gpu = S.bwd_ar = -1;
  for (int i = 0; i < 4; i++) S.waits[i] = -1;
  int64_t tp = B->o->tp, pp = B->o->pp;
  int64_t base = s * tp * B->cp; /* rank t + tp x (c + cp x (s + pp x d)) for t = c = d = 0 */
  S.jr = sc__job_add_rank(job, base);
  if (!S.jr) return SC_ENOMEM;
  S.jr->source = r->source;
  S.jr->gpu = r->gpu;
  S.jr->iterations = 1;
  S.jr->span_ns = 0;
  uint32_t nm_host, nm_gpu, nm_tp, nm_fs, nm_fr, nm_bs, nm_br, nm_rfs, nm_rfr, nm_rbs, nm_rbr, nm_grp;
  if (sc__job_intern(job, "host", 4, &nm_host) || sc__job_intern(job, "stream 7", 8, &nm_gpu) ||
      sc__job_intern(job, "tp comm", 7, &nm_tp) || sc__job_intern(job, "pp fwd send", 11, &nm_fs) ||
      sc__job_intern(job, "pp fwd recv", 11, &nm_fr) || sc__job_intern(job, "pp bwd send", 11, &nm_bs) ||
      sc__job_intern(job, "pp bwd recv", 11, &nm_br) || sc__job_intern(job, "pp vfwd send", 12, &nm_rfs) ||
      sc__job_intern(job, "pp vfwd recv", 12, &nm_rfr) || sc__job_intern(job, "pp vbwd send", 12, &nm_rbs) ||
      sc__job_intern(job, "pp vbwd recv", 12, &nm_rbr) ||
      sc__job_intern(job, "tp: all_reduce", 14, &S.nm_ar) || sc__job_intern(job, "tp: all_gather", 14, &S.nm_ag_tp) ||
      sc__job_intern(job, "tp: reduce_scatter", 18, &S.nm_rs_tp) || sc__job_intern(job, "pp: send", 8, &S.nm_send) ||
      sc__job_intern(job, "pp: recv", 8, &S.nm_recv) ||
      sc__job_intern(job, SC_JOB_TP_GROUP, strlen(SC_JOB_TP_GROUP), &nm_grp))
    return SC_ENOMEM;
  S.host = sc__jrank_stream(job, S.jr, -1, nm_host, 1);
  S.gpu = sc__jrank_stream(job, S.jr, 7, nm_gpu, 0);
  S.tp = tp > 1 ? sc__jrank_stream(job, S.jr, 8, nm_tp, 0) : S.gpu;
  /* With interleaved model chunks every stage sends and receives both ways
   * (the last stage's chunk c feeds the first stage's chunk c + 1). ZB-V's
   * chunk 1 runs from the last stage back to the first on a stream pair of
   * its own (synth's reverse streams), so that each stream talks to one
   * peer; the last stage turns the V in memory. */
  int64_t v = B->vpp, V = pp * v;
  int wrap = v > 1 && !B->vshape;
  S.fsend = s < pp - 1 || wrap ? sc__jrank_stream(job, S.jr, SC_SHARD_ST_FSEND, nm_fs, 0) : S.gpu;
  S.frecv = s > 0 || wrap ? sc__jrank_stream(job, S.jr, SC_SHARD_ST_FRECV, nm_fr, 0) : S.gpu;
  S.bsend = s > 0 || wrap ? sc__jrank_stream(job, S.jr, SC_SHARD_ST_BSEND, nm_bs, 0) : S.gpu;
  S.brecv = s < pp - 1 || wrap ? sc__jrank_stream(job, S.jr, SC_SHARD_ST_BRECV, nm_br, 0) : S.gpu;
  S.rfsend = S.rfrecv = S.rbsend = S.rbrecv = S.gpu;
  if (B->vshape) {
    if (s > 0) S.rfsend = sc__jrank_stream(job, S.jr, SC_SHARD_ST_RFSEND, nm_rfs, 0);
    if (s < pp - 1) S.rfrecv = sc__jrank_stream(job, S.jr, SC_SHARD_ST_RFRECV, nm_rfr, 0);
    if (s < pp - 1) S.rbsend = sc__jrank_stream(job, S.jr, SC_SHARD_ST_RBSEND, nm_rbs, 0);
    if (s > 0) S.rbrecv = sc__jrank_stream(job, S.jr, SC_SHARD_ST_RBRECV, nm_rbr, 0);
  }
  if (S.host < 0 || S.gpu < 0 || S.tp < 0 || S.fsend < 0 || S.frecv < 0 || S.bsend < 0 || S.brecv < 0 ||
      S.rfsend < 0 || S.rfrecv < 0 || S.rbsend < 0 || S.rbrecv < 0)
    return SC_ENOMEM;
  int rc = SC_OK;
  S.prefetch_after = S.last_rs = -1;
  size_t nu = (size_t)B->nlayers + 1;
  if (B->o->fsdp > 1) {
    uint32_t nm_ags, nm_rss, nm_fg;
    if (sc__job_intern(job, "fsdp all-gather", 15, &nm_ags) || sc__job_intern(job, "fsdp reduce-scatter", 19, &nm_rss) ||
        sc__job_intern(job, "fsdp: all_gather", 16, &S.nm_ag) || sc__job_intern(job, "fsdp: reduce_scatter", 20, &S.nm_rs) ||
        sc__job_intern(job, SC_JOB_FSDP_GROUP, strlen(SC_JOB_FSDP_GROUP), &nm_fg))
      return SC_ENOMEM;
    S.ag = sc__jrank_stream(job, S.jr, 14, nm_ags, 0);
    S.rs = sc__jrank_stream(job, S.jr, 15, nm_rss, 0);
    if (S.ag < 0 || S.rs < 0) return SC_ENOMEM;
    /* The stage's shard group: its rank in each of the first fsdp
     * replicas of tp x cp x pp ranks, with its CP peers (FSDP shards over
     * DP x CP, as torchtitan does); with HSDP the replica group: the same
     * rank in the first replica of every shard group. */
    int64_t dp = B->o->dp, fs = B->o->fsdp, R = tp * B->cp * pp, nc = B->cp, nrep = dp / fs;
    size_t nmem = (size_t)(fs * nc > nrep ? fs * nc : nrep);
    int64_t *m = sc__malloc(B->ctx, nmem * sizeof *m);
    if (!m) return SC_ENOMEM;
    for (int64_t q = 0; q < fs; q++)
      for (int64_t c = 0; c < nc; c++) m[q * nc + c] = base + c * tp + q * R;
    rc = sc__job_group_named(job, m, (size_t)(fs * nc), nm_fg, &S.fsdp_group);
    if (!rc && nrep > 1) {
      uint32_t nm_hg;
      for (int64_t q = 0; q < nrep; q++) m[q] = base + q * fs * R;
      if (sc__job_intern(job, SC_JOB_HSDP_GROUP, strlen(SC_JOB_HSDP_GROUP), &nm_hg) ||
          sc__job_intern(job, "hsdp: all_reduce", 16, &S.nm_hsdp))
        rc = SC_ENOMEM;
      if (!rc) rc = sc__job_group_named(job, m, (size_t)nrep, nm_hg, &S.hsdp_group);
    }
    sc__free(B->ctx, m, nmem * sizeof *m);
    if (rc) return rc;
    S.unit_bytes = sc__calloc(B->ctx, (size_t)B->vpp * nu, sizeof *S.unit_bytes);
    S.useq = sc__calloc(B->ctx, nu, sizeof *S.useq);
    S.ulast = sc__calloc(B->ctx, nu, sizeof *S.ulast);
    S.ag_op = sc__calloc(B->ctx, nu, sizeof *S.ag_op);
    S.kept = sc__calloc(B->ctx, (size_t)B->vpp * nu, 1);
    if (!S.unit_bytes || !S.useq || !S.ulast || !S.ag_op || !S.kept) rc = SC_ENOMEM;
    /* A unit's parameter bytes: its gradient marks' (TP shard; the traced
     * parameters and gradients share their dtype). */
    for (size_t k = 0; !rc && k < r->nops; k++) {
      const opinfo *x = &B->oi[k];
      if (r->ops[k].kind != SC_JOP_GRAD || vs_stage(B, x->stage) != s) continue;
      S.unit_bytes[(size_t)vs_chunk(B, x->stage) * nu + (size_t)op_unit(B, k)] += r->ops[k].bytes / x->bytes_div;
    }
  }
  if (!rc && tp > 1) {
    int64_t *m = sc__malloc(B->ctx, (size_t)tp * sizeof *m);
    if (!m) rc = SC_ENOMEM;
    for (int64_t t = 0; m && t < tp; t++) m[t] = base + t;
    if (m) rc = sc__job_group(job, m, (size_t)tp, nm_grp, &S.tp_group);
    sc__free(B->ctx, m, (size_t)tp * sizeof *m);
  }
  if (!rc && B->cp > 1) { /* the CP group: tp ranks apart */
    uint32_t nm_cs, nm_cg;
    int64_t *m = sc__malloc(B->ctx, (size_t)B->cp * sizeof *m);
    if (!m || sc__job_intern(job, "cp comm", 7, &nm_cs) || sc__job_intern(job, "cp: send_recv K/V", 17, &S.nm_ring) ||
                  sc__job_intern(job, "cp: all_to_all", 14, &S.nm_a2a) ||
                  sc__job_intern(job, "cp: all_gather K/V", 18, &S.nm_cp_ag) ||
                  sc__job_intern(job, "cp: reduce_scatter dK/dV", 24, &S.nm_cp_rs) ||
        sc__job_intern(job, SC_JOB_CP_GROUP, strlen(SC_JOB_CP_GROUP), &nm_cg) ||
        (S.cpst = sc__jrank_stream(job, S.jr, 16, nm_cs, 0)) < 0)
      rc = SC_ENOMEM;
    for (int64_t c = 0; !rc && c < B->cp; c++) m[c] = base + c * tp;
    if (!rc) rc = sc__job_group_named(job, m, (size_t)B->cp, nm_cg, &S.cp_group);
    sc__free(B->ctx, m, (size_t)B->cp * sizeof *m);
  }
  if (!rc && B->moe) {
    /* EP over the data-parallel replicas (Megatron-Core's expert grid with
     * cp = 1 and etp = tp: etp fastest, then ep, then edp): the EP group the
     * stage's rank in replicas 0 .. ep - 1, the EDP group its rank in
     * replicas 0, ep, 2 ep..., the expert-TP group its TP group. */
    int64_t ep = B->o->ep > 1 ? B->o->ep : 1, edp = B->o->dp / ep, R = tp * B->cp * pp, nmem = ep > edp ? ep : edp;
    uint32_t nm_es, nm_eg, nm_edg, nm_etg;
    if (nmem < tp) nmem = tp;
    int64_t *m = sc__malloc(B->ctx, (size_t)nmem * sizeof *m);
    if (!m || sc__job_intern(job, "ep comm", 7, &nm_es) || sc__job_intern(job, "ep: all_to_all", 14, &S.nm_ep) ||
        sc__job_intern(job, "etp: all_gather", 15, &S.nm_etp_ag) ||
        sc__job_intern(job, "etp: reduce_scatter", 19, &S.nm_etp_rs) ||
        sc__job_intern(job, SC_JOB_ETP_GROUP, strlen(SC_JOB_ETP_GROUP), &nm_etg) ||
        sc__job_intern(job, SC_JOB_EP_GROUP, strlen(SC_JOB_EP_GROUP), &nm_eg) ||
        sc__job_intern(job, SC_JOB_EDP_GROUP, strlen(SC_JOB_EDP_GROUP), &nm_edg) ||
        (S.epst = sc__jrank_stream(job, S.jr, 17, nm_es, 0)) < 0)
      rc = SC_ENOMEM;
    for (int64_t j = 0; !rc && j < ep; j++) m[j] = base + j * R;
    if (!rc && ep > 1) rc = sc__job_group_named(job, m, (size_t)ep, nm_eg, &S.ep_group);
    for (int64_t j = 0; !rc && j < edp; j++) m[j] = base + j * ep * R;
    if (!rc && ep > 1) rc = sc__job_group_named(job, m, (size_t)edp, nm_edg, &S.edp_group);
    /* The expert-TP group: the stage's TP ranks (etp = tp). */
    for (int64_t j = 0; !rc && j < tp; j++) m[j] = base + j;
    if (!rc && tp > 1) rc = sc__job_group_named(job, m, (size_t)tp, nm_etg, &S.etp_group);
    sc__free(B->ctx, m, (size_t)nmem * sizeof *m);
  }
  /* Blocking p2p as synth/build.c sets it: a pass posts its receive after
   * the pass `lag` items back and waits for that pass's send; Megatron's
   * interleaved schedule batches a forward with a backward (lag 2); the
   * zero-bubble schedules post receives ahead and never wait (lag 0). */
  int split = B->o->schedule == SC_SCHED_ZB_H1 || B->o->schedule == SC_SCHED_ZBV;
  size_t lag = B->o->schedule == SC_SCHED_INTERLEAVED ? 2 : split ? 0 : 1;
  size_t n = r->nops ? r->nops : 1, nsched = nitems + 1;
  S.map = sc__malloc(B->ctx, n * sizeof *S.map);
  S.stamp = sc__calloc(B->ctx, n, sizeof *S.stamp);
  int64_t *item_end = sc__malloc(B->ctx, 2 * nsched * sizeof *item_end);
  int64_t *item_send = item_end ? item_end + nsched : NULL;
  if (!S.map || !S.stamp || !item_end) rc = SC_ENOMEM;
  if (!rc) rc = emit_unit(B, &S, s, -1, U_PRE, PART_ALL, 0);
  int64_t pre_end = S.last_gpu;
  size_t i = 0;
  for (; !rc && i < nitems; i++) {
    sc_sched_item item = items[i];
    int64_t vs = vstage(B, s, item.chunk);
    int fwd = item.pass == SC_PASS_F, wpass = item.pass == SC_PASS_W, rev = B->vshape && item.chunk == 1;
    /* The stages of the virtual stages before and after; none (no p2p)
     * at the ends of the model and where ZB-V's V turns on this stage. */
    int64_t ps = vs > 0 ? vs_stage(B, vs - 1) : s, ns = vs < V - 1 ? vs_stage(B, vs + 1) : s;
    int64_t prev = ps * tp * B->cp, next = ns * tp * B->cp;
    item_send[i] = -1;
    if (!wpass) {
      int64_t posted = !lag ? -1 : i >= lag ? item_end[i - lag] : pre_end;
      if (lag && i >= lag && item_send[i - lag] >= 0) rc = add_wait(&S, item_send[i - lag]);
      if (!rc && fwd && ps != s && p2p(B, &S, 0, rev ? S.rfrecv : S.frecv, prev, posted) < 0) rc = SC_ENOMEM;
      if (!rc && !fwd && ns != s && p2p(B, &S, 0, rev ? S.rbrecv : S.brecv, next, posted) < 0) rc = SC_ENOMEM;
    }
    if (!rc)
      rc = emit_unit(B, &S, s, vs, fwd ? U_FWD : U_BWD, wpass ? PART_WEIGHT : split ? PART_INPUT : PART_ALL,
                     (int64_t)item.mb == B->o->micro_batches - 1);
    if (!rc && fwd && ns != s && (item_send[i] = p2p(B, &S, 1, rev ? S.rfsend : S.fsend, next, S.last_gpu)) < 0)
      rc = SC_ENOMEM;
    if (!rc && !fwd && !wpass && ps != s &&
        (item_send[i] = p2p(B, &S, 1, rev ? S.rbsend : S.bsend, prev, S.last_gpu)) < 0)
      rc = SC_ENOMEM;
    if (!rc) item_end[i] = S.last_gpu;
  }
  /* The optimizer waits for the gradients' reduce-scatters and for the
   * last sends waited for by no pass. */
  if (!rc && S.last_rs >= 0) rc = add_wait(&S, S.last_rs);
  for (size_t k = i > lag ? i - lag : 0; !rc && k < i; k++)
    if (item_send[k] >= 0) rc = add_wait(&S, item_send[k]);
  if (!rc) rc = emit_unit(B, &S, s, -1, U_POST, PART_ALL, 0);
  sc__free(B->ctx, S.map, n * sizeof *S.map);
  sc__free(B->ctx, S.stamp, n * sizeof *S.stamp);
  sc__free(B->ctx, item_end, 2 * nsched * sizeof *item_end);
  sc__free(B->ctx, S.unit_bytes, (size_t)B->vpp * nu * sizeof *S.unit_bytes);
  sc__free(B->ctx, S.useq, nu * sizeof *S.useq);
  sc__free(B->ctx, S.ulast, nu * sizeof *S.ulast);
  sc__free(B->ctx, S.ag_op, nu * sizeof *S.ag_op);
  sc__free(B->ctx, S.kept, (size_t)B->vpp * nu);
  return rc;
}

/* ZB-V's pass times (model/schedule.c's list schedule): the work of a model
 * chunk's forward, input-gradient and weight-gradient passes, summed over
 * every chunk (the schedule takes the chunks as uniform; only the ratio of
 * the three matters), each GPU op as this layout runs it (reshaped), priced
 * by o->op_ns (replay: the target GPU's kernel times) or else by its FLOPs,
 * the CP ring's attention steps counted cp times. Synthesized workloads
 * estimate the same three from the shape (schedule.c's zbv_times); the
 * traced job's own operators are the closer estimate here, as the paper's
 * scheduler takes profiled pass times (Qi et al. 2024, section 3). */
static void zbv_pass_times(const shb *B, double t[3]) {
  const sc_jrank *r = B->r;
  t[SC_PASS_F] = t[SC_PASS_B] = t[SC_PASS_W] = 0;
  for (size_t k = 0; k < r->nops; k++) {
    const opinfo *x = &B->oi[k];
    int kind = r->ops[k].kind;
    if ((x->unit != U_FWD && x->unit != U_BWD) || x->skip || x->dropped ||
        (kind != SC_JOP_KERNEL && kind != SC_JOP_MEMCPY && kind != SC_JOP_MEMSET))
      continue;
    sc_jop op;
    sc_jshape sh;
    const sc_jshape *p = reshaped(B, k, &op, &sh);
    double ns = B->o->op_ns ? B->o->op_ns(B->o->op_ns_ud, &op, p) : op.flops;
    if (x->attn && B->o->cp_comm == SC_CP_P2P) ns *= (double)B->cp;
    t[x->unit == U_FWD ? SC_PASS_F : x->wgrad ? SC_PASS_W : SC_PASS_B] += ns > 0 ? ns : 0;
  }
}

/* Every stage's schedule order, items[pp * *len] (allocated; sc__free with
 * that many items): model/schedule.c's, from a shape holding only the
 * pipeline's sizes for the schedules that derive from them, from the
 * traced pass times for ZB-V. 0, SC_ENOMEM or SC_EINTERNAL (message set). */
static int schedule_items(const shb *B, sc_sched_item **items, size_t *len) {
  sc_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.parallel.schedule = (sc_schedule)B->o->schedule;
  sc_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.cfg = &cfg;
  sh.pp = B->o->pp;
  sh.m = B->o->micro_batches;
  sh.vpp = B->vpp;
  *len = sc__schedule_len(&sh);
  *items = sc__malloc(B->ctx, (size_t)sh.pp * *len * sizeof **items);
  if (!*items) return SC_ENOMEM;
  if (!B->vshape) return sc__schedule_all(B->ctx, &sh, *items);
  double t[3];
  zbv_pass_times(B, t);
  return sc__schedule_zbv(B->ctx, sh.pp, sh.m, t, *items);
}

/* Allocates B's tables for traced rank r (stage `fixed` of a shard job,
 * -1 the one rank of a whole-process trace) and analyses it. 0, SC_ENOMEM
 * or SC_EINVAL (message set); shb_release frees in any case. */
static int shb_prepare(shb *B, const sc_job *in, const sc_jrank *r, const sc_shard_opts *o, int64_t vpp,
                       int64_t cp, int32_t fixed) {
  sc_ctx *ctx = in->ctx;
  sc_job *job = B->job;
  memset(B, 0, sizeof *B);
  B->job = job;
  B->ctx = ctx;
  B->in = in;
  B->r = r;
  B->o = o;
  B->vpp = vpp;
  B->vshape = o->schedule == SC_SCHED_ZBV;
  B->cp = cp;
  B->fixed = fixed;
  if (!r->opmods || !r->nmodules)
    return sc__error(ctx, SC_EINVAL,
                     "%s: no module paths (a .scw before version 3, or a trace without \"Module\" args): "
                     "tp/pp need them; trace again with tools/trace_torch.py and import it",
                     sc__job_str(in, r->source));
  size_t nm = r->nmodules, n = r->nops ? r->nops : 1;
  B->oi = sc__calloc(ctx, n, sizeof *B->oi);
  B->roles = sc__calloc(ctx, nm, 1);
  B->mod_layer = sc__calloc(ctx, nm, sizeof *B->mod_layer);
  B->mod_post = sc__calloc(ctx, nm, 1);
  B->fm = sc__calloc(ctx, 3 * nm, sizeof *B->fm);
  B->mod_expert = sc__calloc(ctx, nm, sizeof *B->mod_expert);
  if (!B->oi || !B->roles || !B->mod_layer || !B->mod_post || !B->fm || !B->mod_expert) return SC_ENOMEM;
  B->fn = B->fm + nm;
  B->fk = B->fm + 2 * nm;
  sc__shard_classify(in, r, o->rules, o->nrules, B->roles);
  return analyse(B);
}

static void shb_release(shb *B) {
  if (!B->r) return;
  size_t nm = B->r->nmodules, n = B->r->nops ? B->r->nops : 1;
  sc__free(B->ctx, B->oi, n * sizeof *B->oi);
  sc__free(B->ctx, B->roles, nm);
  sc__free(B->ctx, B->mod_layer, nm * sizeof *B->mod_layer);
  sc__free(B->ctx, B->mod_post, nm);
  sc__free(B->ctx, B->fm, 3 * nm * sizeof *B->fm);
  sc__free(B->ctx, B->mod_expert, nm * sizeof *B->mod_expert);
  if (B->ep_bytes) sc__free(B->ctx, B->ep_bytes, (size_t)(B->nlayers ? B->nlayers : 1) * sizeof *B->ep_bytes);
  B->oi = NULL, B->roles = NULL, B->mod_layer = NULL, B->mod_post = NULL, B->fm = NULL, B->mod_expert = NULL;
  B->ep_bytes = NULL;
}

int sc__job_shard(const sc_job *in, const sc_shard_opts *o, sc_job **out) {
  sc_ctx *ctx = in->ctx;
  *out = NULL;
  if (o->tp < 1 || o->pp < 1 || o->dp < 1 || o->micro_batches < 1)
    return sc__error(ctx, SC_EINVAL, "tp, pp, dp and micro-batches must be >= 1");
  int64_t cp = o->cp > 1 ? o->cp : 1;
  if (cp > 4096 || o->tp * o->pp * cp > SC_JOB_MAX_WORLD / o->dp)
    return sc__error(ctx, SC_EINVAL, "tp x cp x pp x dp = %lld x %lld x %lld x %lld ranks: more than %lld",
                     (long long)o->tp, (long long)cp, (long long)o->pp, (long long)o->dp,
                     (long long)SC_JOB_MAX_WORLD);
  if (o->pp > 4096) return sc__error(ctx, SC_EINVAL, "pp=%lld: at most 4096 stages", (long long)o->pp);
  if (o->async_tp && !o->sp)
    return sc__error(ctx, SC_EINVAL, "async TP needs sequence parallelism (its all-gathers and reduce-scatters)");
  if (o->cp_comm < SC_CP_P2P || o->cp_comm > SC_CP_ALLGATHER)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "the CP exchange of a re-targeted job is p2p, a2a or allgather (a2a+p2p is not modelled)");
  int shards = in->shard_tp > 0;
  if (o->sp && (o->tp < 2 || shards))
    return sc__error(ctx, SC_EINVAL,
                     o->tp < 2 ? "sequence parallelism needs tp >= 2 (it splits what tensor parallelism replicates)"
                               : "sequence parallelism of shard traces is not supported (their markers are "
                                 "all-reduces): re-target a whole-model trace");
  if (shards) {
    /* Per-rank shards: each stage's program from its own trace, at the
     * layout it was traced for. */
    if (o->tp != in->shard_tp || o->pp != in->shard_pp)
      return sc__error(ctx, SC_EINVAL,
                       "the job's shard traces are of tp=%lld, pp=%lld; tp=%lld, pp=%lld would need traces of "
                       "those shards (tools/trace_torch.py --tp N --pp-stage K/P), or `--scale` of a "
                       "whole-model trace", (long long)in->shard_tp, (long long)in->shard_pp, (long long)o->tp,
                       (long long)o->pp);
    if (cp > 1 || o->schedule == SC_SCHED_INTERLEAVED || o->schedule == SC_SCHED_ZBV)
      return sc__error(ctx, SC_EUNSUPPORTED,
                       "%s with shard traces is not supported (each trace holds one stage's layers, one "
                       "sequence): re-target a whole-model trace",
                       cp > 1 ? "cp" : o->schedule == SC_SCHED_ZBV ? "the zbv schedule" : "the interleaved schedule");
    if ((int64_t)in->nranks != in->shard_pp)
      return sc__error(ctx, SC_EINVAL, "the shard job has %zu rank(s) for %lld stages", in->nranks,
                       (long long)in->shard_pp);
  } else if (in->nranks != 1 || (in->world > 1))
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "--scale tp/pp re-targets a job of one traced process (an ex-situ trace, `import cpu`); "
                     "this job has %lld rank(s) of %lld", (long long)in->nranks, (long long)in->world);
  int64_t vpp = o->vpp > 1 ? o->vpp : 1;
  if (o->schedule < SC_SCHED_1F1B || o->schedule > SC_SCHED_ZBV)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "schedule %s: a re-targeted job runs 1f1b, gpipe, interleaved, zb-h1 or zbv",
                     sc_enum_name(SC_ENUM_SCHEDULE, o->schedule));
  if (o->schedule == SC_SCHED_ZBV) { /* as the config's checks of a synthesized zbv run */
    if (o->pp < 2)
      return sc__error(ctx, SC_EINVAL,
                       "the zbv schedule needs pp >= 2 (its two model chunks per stage run down the stages and "
                       "back), not pp=%lld", (long long)o->pp);
    if (vpp > 2)
      return sc__error(ctx, SC_EINVAL, "the zbv schedule places two model chunks per stage: vpp must be 2 or "
                       "unset, not %lld", (long long)vpp);
    if (o->first_layers > 0 || o->last_layers > 0)
      return sc__error(ctx, SC_EINVAL,
                       "the zbv schedule puts the first and last layers on one stage: it takes an even split (no "
                       "parallel.pp_first_layers or pp_last_layers)");
    vpp = 2;
  }
  if (o->schedule == SC_SCHED_INTERLEAVED && (o->pp < 2 || vpp < 2))
    return sc__error(ctx, SC_EINVAL,
                     "the interleaved schedule needs pp >= 2 and at least 2 model chunks per stage (vpp), "
                     "not pp=%lld, vpp=%lld", (long long)o->pp, (long long)vpp);
  if (o->schedule != SC_SCHED_INTERLEAVED && o->schedule != SC_SCHED_ZBV && vpp > 1)
    return sc__error(ctx, SC_EINVAL, "vpp=%lld model chunks per stage need the interleaved schedule",
                     (long long)vpp);
  if (o->ep > 1 && (cp > 1 || o->fsdp > 1 || shards))
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "ep=%lld with %s is not modelled for re-targeted jobs yet (expert parallelism goes with dp, "
                     "pp and tp)", (long long)o->ep, cp > 1 ? "cp > 1" : o->fsdp > 1 ? "fsdp" : "shard traces");
  if (o->ep > 1 && o->tp > 1 && !o->sp)
    return sc__error(ctx, SC_EINVAL,
                     "ep=%lld with tp=%lld: an MoE layer under tensor parallelism needs sequence parallelism "
                     "(--sequence-parallel), as Megatron-Core requires", (long long)o->ep, (long long)o->tp);
  if (o->ep > 1 && o->dp % o->ep)
    return sc__error(ctx, SC_EINVAL,
                     "ep=%lld with dp=%lld: the expert-parallel ranks are data-parallel replicas, ep must divide dp",
                     (long long)o->ep, (long long)o->dp);
  if (o->fsdp > 1 && (o->fsdp > o->dp || o->dp % o->fsdp))
    return sc__error(ctx, SC_EINVAL,
                     "fsdp=%lld with dp=%lld: the shard group must divide the data-parallel replicas (fsdp = dp "
                     "shards over all of them, a divisor below dp is HSDP)", (long long)o->fsdp, (long long)o->dp);
  if (vpp > 64) return sc__error(ctx, SC_EINVAL, "vpp=%lld: at most 64 model chunks per stage", (long long)vpp);
  if (o->micro_batches * vpp * (o->pp + 3) > 1 << 20)
    return sc__error(ctx, SC_EINVAL, "%lld micro-batches: too many", (long long)o->micro_batches);
  shb B;
  memset(&B, 0, sizeof B);
  int rc = sc_job_new(ctx, &B.job);
  if (!rc) {
    B.job->world = o->tp * cp * o->pp * o->dp;
    rc = sc__job_copy_tables(in, B.job, 0);
  }
  sc_sched_item *items = NULL;
  size_t len = 0;
  if (!shards) {
    if (!rc) rc = shb_prepare(&B, in, &in->ranks[0], o, vpp, cp, -1);
    if (!rc) rc = schedule_items(&B, &items, &len);
    for (int32_t s = 0; !rc && s < o->pp; s++) rc = build_stage(&B, s, items + (size_t)s * len, len);
    shb_release(&B);
  }
  for (int32_t s = 0; shards && !rc && s < o->pp; s++) { /* stage s: the rank s x tp */
    size_t i = 0;
    while (i + 1 < in->nranks && in->ranks[i].rank != (int64_t)s * in->shard_tp) i++;
    if (in->ranks[i].rank != (int64_t)s * in->shard_tp)
      rc = sc__error(ctx, SC_EINVAL, "the shard job has no trace of stage %d", (int)s);
    if (!rc) rc = shb_prepare(&B, in, &in->ranks[i], o, vpp, cp, s);
    if (!rc && !items) rc = schedule_items(&B, &items, &len);
    if (!rc) rc = build_stage(&B, s, items + (size_t)s * len, len);
    shb_release(&B);
  }
  if (items) sc__free(ctx, items, (size_t)o->pp * len * sizeof *items);
  if (!rc) rc = sc_job_finish(B.job);
  if (rc) {
    sc_job_free(B.job);
    return rc;
  }
  *out = B.job;
  return SC_OK;
}
