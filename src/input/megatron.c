/*
 * megatron.c: Megatron-LM launch lines in and out (stepcast/megatron.h).
 * Reading: the text is split into words as a shell would for a plain launch
 * script (quotes, backslash-newline continuations, # comments, VAR=value
 * prefixes), each word keeps its line, and the flags of the table below
 * become config assignments applied through sc_config_set, so every value is
 * checked against the field's range. Megatron-LM's own defaults that differ
 * from stepcast's are made explicit at the end. Writing: the flags that give
 * a resolved config, in the table's vocabulary, so that reading them back
 * simulates identically.
 */
#include "stepcast/megatron.h"

#include "input/config_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS_BYTES ((size_t)1 << 20)
#define MAX_WORDS 4096

/* ------------------------------------------------------------ words */

typedef struct word {
  char *s;  /* NUL-terminated, in the reader's buffer */
  int line;
} word;

typedef struct words {
  word w[MAX_WORDS];
  size_t n;
  char *buf; /* the unquoted text of every word */
  size_t cap;
} words;

/* Splits text into shell words. Returns SC_OK, SC_EINVAL (unterminated
 * quote, too many words) or SC_ENOMEM. */
static int split(sc_ctx *ctx, const char *name, const char *text, size_t len, words *W) {
  W->cap = len + 1;
  W->buf = sc__malloc(ctx, W->cap);
  if (!W->buf) return SC_ENOMEM;
  size_t o = 0;
  int line = 1;
  size_t i = 0;
  while (i < len) {
    char c = text[i];
    if (c == '\\' && i + 1 < len && text[i + 1] == '\n') { /* continuation */
      i += 2;
      line++;
      continue;
    }
    if (c == '\n') {
      line++;
      i++;
      continue;
    }
    if (isspace((unsigned char)c)) {
      i++;
      continue;
    }
    if (c == '#') { /* comment to the end of the line */
      while (i < len && text[i] != '\n') i++;
      continue;
    }
    if (W->n >= MAX_WORDS)
      return sc__error_at(ctx, SC_EINVAL, name, line, "more than %d words: not a launch line",
                          MAX_WORDS);
    word *wd = &W->w[W->n++];
    wd->s = W->buf + o;
    wd->line = line;
    while (i < len && !isspace((unsigned char)text[i])) {
      c = text[i];
      if (c == '\\' && i + 1 < len && text[i + 1] == '\n') break;
      if (c == '\'' || c == '"') {
        char q = c;
        int start = line;
        i++;
        while (i < len && text[i] != q) {
          if (text[i] == '\n') line++;
          if (q == '"' && text[i] == '\\' && i + 1 < len) i++;
          W->buf[o++] = text[i++];
        }
        if (i >= len)
          return sc__error_at(ctx, SC_EINVAL, name, start, "unterminated %s quote",
                              q == '"' ? "double" : "single");
        i++;
        continue;
      }
      if (c == '\\' && i + 1 < len) i++;
      W->buf[o++] = text[i++];
    }
    W->buf[o++] = 0;
  }
  return SC_OK;
}

/* ------------------------------------------------------------ the flags */

enum {
  K_VAL = 1,  /* key = the flag's value */
  K_SET,      /* key = val, no value */
  K_SPECIAL,  /* handled by id */
};

enum {
  S_NONE = 0,
  S_GQA,            /* --group-query-attention */
  S_GROUPS,         /* --num-query-groups N */
  S_VPP_LAYERS,     /* --num-layers-per-virtual-pipeline-stage N */
  S_FP8_FORMAT,     /* --fp8-format e4m3|hybrid */
  S_FP8_RECIPE,     /* --fp8-recipe delayed|tensorwise|... */
  S_RECOMPUTE,      /* --recompute-granularity full|selective */
  S_RECOMPUTE_METHOD,
  S_RECOMPUTE_NUM,
  S_SHARED_SIZE,    /* --moe-shared-expert-intermediate-size */
  S_DISPATCHER,     /* --moe-token-dispatcher-type */
  S_NNODES,         /* torchrun */
  S_NPROC,
  S_IMPL,           /* --transformer-impl */
  S_FLASH,          /* --use-flash-attn */
  S_ATTN_BACKEND,   /* --attention-backend */
  S_DP_SHARDING,    /* --data-parallel-sharding-strategy */
  S_MOE_FREQ,       /* --moe-layer-freq */
  S_OPT_OFFLOAD,    /* --optimizer-cpu-offload */
  S_OPT_FRACTION,   /* --optimizer-offload-fraction F */
  S_ACT_OFFLOAD,    /* --cpu-offloading */
  S_ACT_LAYERS,     /* --cpu-offloading-num-layers N */
};

typedef struct mflag {
  const char *flag;
  int kind;
  const char *key; /* config key (K_VAL, K_SET) */
  const char *val; /* K_SET value; K_SPECIAL: NULL */
  int special;
  int optional;    /* the key belongs to a feature this build may lack (MoE) */
} mflag;

static const mflag flags[] = {
    /* model */
    {"--num-layers", K_VAL, "model.layers", NULL, 0, 0},
    {"--hidden-size", K_VAL, "model.hidden", NULL, 0, 0},
    {"--num-attention-heads", K_VAL, "model.heads", NULL, 0, 0},
    {"--ffn-hidden-size", K_VAL, "model.ffn_hidden", NULL, 0, 0},
    {"--seq-length", K_VAL, "model.seq_len", NULL, 0, 0},
    {"--vocab-size", K_VAL, "model.vocab", NULL, 0, 0},
    {"--kv-channels", K_VAL, "model.head_dim", NULL, 0, 0},
    {"--hidden-dropout", K_VAL, "model.dropout", NULL, 0, 0},
    {"--swiglu", K_SET, "model.activation", "swiglu", 0, 0},
    {"--squared-relu", K_SET, "model.activation", "relu2", 0, 0},
    {"--untie-embeddings-and-output-weights", K_SET, "model.tied_embeddings", "false", 0, 0},
    {"--group-query-attention", K_SPECIAL, NULL, NULL, S_GQA, 0},
    {"--num-query-groups", K_SPECIAL, NULL, NULL, S_GROUPS, 0},
    /* MoE */
    {"--num-experts", K_VAL, "model.moe_experts", NULL, 0, 1},
    {"--moe-router-topk", K_VAL, "model.moe_topk", NULL, 0, 1},
    {"--moe-ffn-hidden-size", K_VAL, "model.moe_ffn_hidden", NULL, 0, 1},
    {"--moe-expert-capacity-factor", K_VAL, "model.moe_capacity_factor", NULL, 0, 1},
    {"--moe-shared-expert-intermediate-size", K_SPECIAL, NULL, NULL, S_SHARED_SIZE, 1},
    {"--moe-layer-freq", K_SPECIAL, NULL, NULL, S_MOE_FREQ, 1},
    {"--moe-token-dispatcher-type", K_SPECIAL, NULL, NULL, S_DISPATCHER, 1},
    {"--expert-model-parallel-size", K_VAL, "parallel.ep", NULL, 0, 1},
    {"--expert-tensor-parallel-size", K_VAL, "parallel.etp", NULL, 0, 1},
    /* training */
    {"--micro-batch-size", K_VAL, "training.micro_batch", NULL, 0, 0},
    {"--global-batch-size", K_VAL, "training.global_batch", NULL, 0, 0},
    {"--bf16", K_SET, "training.precision", "bf16", 0, 0},
    {"--fp16", K_SET, "training.precision", "fp16", 0, 0},
    {"--fp8-format", K_SPECIAL, NULL, NULL, S_FP8_FORMAT, 0},
    {"--fp8-recipe", K_SPECIAL, NULL, NULL, S_FP8_RECIPE, 0},
    {"--recompute-activations", K_SET, "training.recompute", "selective", 0, 0},
    {"--recompute-granularity", K_SPECIAL, NULL, NULL, S_RECOMPUTE, 0},
    {"--recompute-method", K_SPECIAL, NULL, NULL, S_RECOMPUTE_METHOD, 0},
    {"--recompute-num-layers", K_SPECIAL, NULL, NULL, S_RECOMPUTE_NUM, 0},
    {"--use-flash-attn", K_SPECIAL, NULL, NULL, S_FLASH, 0},
    /* host-memory offload: each fraction or count applies with its switch */
    {"--optimizer-cpu-offload", K_SPECIAL, NULL, NULL, S_OPT_OFFLOAD, 0},
    {"--optimizer-offload-fraction", K_SPECIAL, NULL, NULL, S_OPT_FRACTION, 0},
    {"--cpu-offloading", K_SPECIAL, NULL, NULL, S_ACT_OFFLOAD, 0},
    {"--cpu-offloading-num-layers", K_SPECIAL, NULL, NULL, S_ACT_LAYERS, 0},
    {"--transformer-impl", K_SPECIAL, NULL, NULL, S_IMPL, 0},
    {"--attention-backend", K_SPECIAL, NULL, NULL, S_ATTN_BACKEND, 0},
    /* parallel */
    {"--tensor-model-parallel-size", K_VAL, "parallel.tp", NULL, 0, 0},
    {"--pipeline-model-parallel-size", K_VAL, "parallel.pp", NULL, 0, 0},
    {"--context-parallel-size", K_VAL, "parallel.cp", NULL, 0, 0},
    {"--num-layers-per-virtual-pipeline-stage", K_SPECIAL, NULL, NULL, S_VPP_LAYERS, 0},
    {"--num-virtual-stages-per-pipeline-rank", K_VAL, "parallel.vpp", NULL, 0, 0},
    {"--sequence-parallel", K_SET, "parallel.sequence_parallel", "true", 0, 0},
    {"--use-distributed-optimizer", K_SET, "parallel.distributed_optimizer", "true", 0, 0},
    {"--overlap-grad-reduce", K_SET, "parallel.overlap_grad_reduce", "true", 0, 0},
    {"--overlap-param-gather", K_SET, "parallel.overlap_param_gather", "true", 0, 0},
    {"--tp-comm-overlap", K_SET, "parallel.tp_comm_overlap", "true", 0, 0},
    {"--decoder-first-pipeline-num-layers", K_VAL, "parallel.pp_first_layers", NULL, 0, 0},
    {"--decoder-last-pipeline-num-layers", K_VAL, "parallel.pp_last_layers", NULL, 0, 0},
    {"--account-for-embedding-in-pipeline-split", K_SET, "parallel.pp_embedding_in_split", "true",
     0, 0},
    {"--account-for-loss-in-pipeline-split", K_SET, "parallel.pp_loss_in_split", "true", 0, 0},
    {"--cp-comm-type", K_VAL, "parallel.cp_comm", NULL, 0, 0},
    {"--use-torch-fsdp2", K_SET, "parallel.zero_stage", "3", 0, 0},
    {"--data-parallel-sharding-strategy", K_SPECIAL, NULL, NULL, S_DP_SHARDING, 0},
    /* torchrun */
    {"--nnodes", K_SPECIAL, NULL, NULL, S_NNODES, 0},
    {"--nproc-per-node", K_SPECIAL, NULL, NULL, S_NPROC, 0},
    {"--nproc_per_node", K_SPECIAL, NULL, NULL, S_NPROC, 0},
};

static const mflag *find_flag(const char *f) {
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (!strcmp(flags[i].flag, f)) return &flags[i];
  return NULL;
}

/* Flags whose value is taken although they are not timing-relevant (so the
 * value is not read as the next flag); everything else starting with "--"
 * and followed by a word that does not is taken as FLAG VALUE too. */

/* ------------------------------------------------------------ reading */

typedef struct importer {
  sc_ctx *ctx;
  const char *name;
  sc_config work;
  sc_megatron_info *info;
  size_t ign_len;
  int given[SC_CONFIG_MAX_FIELDS]; /* set by a flag (1) */
  /* Specials resolved at the end. */
  int gqa, groups, groups_line;
  int64_t vpp_layers;
  int vpp_line;
  int recompute_full, recompute_sel, recompute_line;
  char recompute_method[16];
  int64_t recompute_num;
  int64_t shared_size;
  int shared_line;
  int64_t nnodes, nproc;
  int flash, impl_local, impl_line;
  const char *backend; /* --attention-backend's stepcast name; NULL = auto */
  int backend_line;
  /* --optimizer-cpu-offload [--optimizer-offload-fraction F], --cpu-offloading
   * [--cpu-offloading-num-layers N]: the lines of each (0: not given) */
  int opt_offload_line, opt_fraction_line, act_offload_line, act_layers_line;
  char opt_fraction[32];
  int64_t act_layers;
} importer;

/* Applies key=value, naming the flag and line on failure. */
static int assign(importer *I, int line, const char *flag, const char *key, const char *value,
                  int optional) {
  int fi = sc_config_field_index(key);
  if (fi < 0)
    return sc__error_at(I->ctx, optional ? SC_EUNSUPPORTED : SC_EINTERNAL, I->name, line,
                        "%s %s: %s is not modelled yet (mixture of experts, issue 15)", flag,
                        value, key);
  char a[512];
  snprintf(a, sizeof a, "%s=%s", key, value);
  int rc = sc_config_set(I->ctx, &I->work, a);
  if (rc) {
    const char *m = sc_errmsg(I->ctx);
    if (!strncmp(m, "--set: ", 7)) m += 7;
    char msg[SC_ERRMSG_MAX];
    sc__strlcpy(msg, m, sizeof msg);
    return sc__error_at(I->ctx, rc, I->name, line, "%s %s: %s", flag, value, msg);
  }
  I->given[fi] = 1;
  I->work.field_line[fi] = line; /* messages name the launch line's line */
  if (I->info) I->info->mapped++;
  return SC_OK;
}

static int parse_count(importer *I, int line, const char *flag, const char *v, int64_t *out) {
  char *end;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < 1 || x > (1LL << 24))
    return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                        "%s: expected a positive integer, got \"%s\"", flag, v);
  *out = x;
  return SC_OK;
}

static void note_ignored(importer *I, const char *flag) {
  if (!I->info) return;
  I->info->ignored++;
  char *b = I->info->ignored_names;
  size_t cap = sizeof I->info->ignored_names;
  if (I->ign_len + strlen(flag) + 5 >= cap) {
    if (I->ign_len + 4 < cap && !strstr(b, "...")) {
      memcpy(b + I->ign_len, " ...", 5);
      I->ign_len += 4;
    }
    return;
  }
  I->ign_len += (size_t)snprintf(b + I->ign_len, cap - I->ign_len, "%s%s", I->ign_len ? " " : "",
                                 flag);
}

/* The special flags that take no value. */
static int special_switch(int id) {
  return id == S_GQA || id == S_FLASH || id == S_OPT_OFFLOAD || id == S_ACT_OFFLOAD;
}

static int special(importer *I, const mflag *f, int line, const char *v) {
  int64_t n = 0;
  int rc;
  switch (f->special) {
  case S_GQA: I->gqa = 1; return SC_OK;
  case S_GROUPS:
    if ((rc = parse_count(I, line, f->flag, v, &n))) return rc;
    I->groups = (int)n, I->groups_line = line;
    return SC_OK;
  case S_VPP_LAYERS:
    if ((rc = parse_count(I, line, f->flag, v, &I->vpp_layers))) return rc;
    I->vpp_line = line;
    return SC_OK;
  case S_FP8_FORMAT:
    if (strcmp(v, "e4m3") && strcmp(v, "hybrid"))
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected e4m3 or hybrid, got \"%s\"", f->flag, v);
    return assign(I, line, f->flag, "training.precision", "fp8", 0);
  case S_FP8_RECIPE:
    if (!strcmp(v, "delayed") || !strcmp(v, "tensorwise"))
      return assign(I, line, f->flag, "training.fp8_recipe", v, 0);
    return sc__error_at(I->ctx, SC_EUNSUPPORTED, I->name, line,
                        "%s %s: stepcast models the delayed and tensorwise FP8 recipes", f->flag,
                        v);
  case S_RECOMPUTE:
    if (strcmp(v, "full") && strcmp(v, "selective"))
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected full or selective, got \"%s\"", f->flag, v);
    I->recompute_line = line;
    return assign(I, line, f->flag, "training.recompute", v, 0);
  case S_RECOMPUTE_METHOD:
    if (strcmp(v, "uniform") && strcmp(v, "block"))
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected uniform or block, got \"%s\"", f->flag, v);
    sc__strlcpy(I->recompute_method, v, sizeof I->recompute_method);
    return SC_OK;
  case S_RECOMPUTE_NUM: return parse_count(I, line, f->flag, v, &I->recompute_num);
  case S_SHARED_SIZE:
    if ((rc = parse_count(I, line, f->flag, v, &I->shared_size))) return rc;
    I->shared_line = line;
    return SC_OK;
  case S_DISPATCHER: {
    const char *d = !strcmp(v, "flex") ? "deepep" : v;
    if (strcmp(d, "alltoall") && strcmp(d, "allgather") && strcmp(d, "deepep"))
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected alltoall, allgather or flex, got \"%s\"", f->flag, v);
    return assign(I, line, f->flag, "parallel.moe_dispatcher", d, 1);
  }
  case S_MOE_FREQ:
    if ((rc = parse_count(I, line, f->flag, v, &n)))
      return sc__error_at(I->ctx, SC_EUNSUPPORTED, I->name, line,
                          "%s %s: only an integer (an MoE layer every N layers) is read", f->flag,
                          v);
    if (n == 1) return SC_OK;
    /* Megatron puts the MoE layers at 0, N, 2N ...; model.moe_layer_freq
     * follows HuggingFace's decoder_sparse_step (N-1, 2N-1 ...). */
    return sc__error_at(I->ctx, SC_EUNSUPPORTED, I->name, line,
                        "%s %s: Megatron-LM's MoE layers 0, %s, ... differ from "
                        "model.moe_layer_freq's (every %s-th layer, HuggingFace's "
                        "decoder_sparse_step); give the layout as model keys",
                        f->flag, v, v, v);
  case S_NNODES:
    if ((rc = parse_count(I, line, f->flag, v, &I->nnodes))) return rc;
    return SC_OK;
  case S_NPROC:
    if ((rc = parse_count(I, line, f->flag, v, &I->nproc))) return rc;
    return SC_OK;
  case S_IMPL:
    if (strcmp(v, "local") && strcmp(v, "transformer_engine"))
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected local or transformer_engine, got \"%s\"", f->flag, v);
    I->impl_local = !strcmp(v, "local");
    I->impl_line = line;
    return SC_OK;
  case S_FLASH: I->flash = 1; return SC_OK;
  case S_OPT_OFFLOAD: I->opt_offload_line = line; return SC_OK;
  case S_OPT_FRACTION:
    if (strlen(v) >= sizeof I->opt_fraction)
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line, "%s: value too long", f->flag);
    sc__strlcpy(I->opt_fraction, v, sizeof I->opt_fraction);
    I->opt_fraction_line = line;
    return SC_OK;
  case S_ACT_OFFLOAD: I->act_offload_line = line; return SC_OK;
  case S_ACT_LAYERS:
    if ((rc = parse_count(I, line, f->flag, v, &I->act_layers))) return rc;
    I->act_layers_line = line;
    return SC_OK;
  case S_ATTN_BACKEND: /* Megatron-Core's AttnBackend: fused is cuDNN's */
    if (!strcmp(v, "auto")) I->backend = NULL;
    else if (!strcmp(v, "flash")) I->backend = "flash";
    else if (!strcmp(v, "fused")) I->backend = "cudnn";
    else if (!strcmp(v, "unfused") || !strcmp(v, "local")) I->backend = "unfused";
    else
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected flash, fused, unfused, local or auto, got \"%s\"",
                          f->flag, v);
    I->backend_line = line;
    return SC_OK;
  case S_DP_SHARDING: {
    const char *z = !strcmp(v, "no_shard") ? "0" : !strcmp(v, "optim") ? "1"
                    : !strcmp(v, "optim_grads") ? "2" : !strcmp(v, "optim_grads_params") ? "3"
                                                                                       : NULL;
    if (!z)
      return sc__error_at(I->ctx, SC_EINVAL, I->name, line,
                          "%s: expected no_shard, optim, optim_grads or optim_grads_params, got "
                          "\"%s\"",
                          f->flag, v);
    return assign(I, line, f->flag, "parallel.zero_stage", z, 0);
  }
  default: return SC_OK;
  }
}

/* Megatron-LM's defaults for what the line does not say, where they differ
 * from stepcast's, and the flags that combine. */
static int finish(importer *I, int last_line) {
  int rc;
  char v[64];
  sc_config *c = &I->work;
#define DEFAULT(key, val)                                                                  \
  do {                                                                                     \
    int fi_ = sc_config_field_index(key);                                                  \
    if (fi_ >= 0 && !I->given[fi_]) {                                                      \
      if ((rc = assign(I, last_line, "(Megatron-LM default)", key, val, 0))) return rc;     \
      if (I->info) I->info->mapped--; /* a default, not a flag */                          \
    }                                                                                      \
  } while (0)
  static const char *const required[] = {"model.layers", "model.hidden", "model.heads",
                                         "model.seq_len", "model.vocab"};
  static const char *const required_flag[] = {"--num-layers", "--hidden-size",
                                              "--num-attention-heads", "--seq-length",
                                              "--vocab-size"};
  char missing[256] = "";
  size_t ml = 0;
  for (size_t i = 0; i < 5; i++)
    if (!I->given[sc_config_field_index(required[i])])
      ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%s", ml ? ", " : "",
                             required_flag[i]);
  if (ml)
    return sc__error_at(I->ctx, SC_EINVAL, I->name, SC_AT_NONE,
                        "the launch line does not give the model: missing %s (Megatron-LM takes "
                        "the vocabulary from the tokenizer: give --vocab-size)",
                        missing);
  /* The model: GQA only with its flag; Megatron's SwiGLU width. */
  if (I->gqa) {
    snprintf(v, sizeof v, "%d", I->groups ? I->groups : 1);
    if ((rc = assign(I, I->groups_line ? I->groups_line : last_line, "--num-query-groups",
                     "model.kv_heads", v, 0)))
      return rc;
  } else {
    DEFAULT("model.kv_heads", "0");
  }
  DEFAULT("model.activation", "gelu");
  if (!I->given[SC_FIELD_model_ffn_hidden]) {
    int64_t h = c->model.hidden;
    int64_t f = c->model.activation == SC_ACT_SWIGLU ? (4 * h * 2 / 3) / 64 * 64 : 4 * h;
    snprintf(v, sizeof v, "%" PRId64, f);
    DEFAULT("model.ffn_hidden", v);
  }
  DEFAULT("model.head_dim", "0");
  DEFAULT("model.tied_embeddings", "true");
  DEFAULT("model.dropout", "0.1");
  DEFAULT("training.precision", "fp32");
  DEFAULT("training.recompute", "none");
  DEFAULT("training.micro_batch", "1");
  /* Offload: Megatron's fraction defaults to 1 and only counts with
   * --optimizer-cpu-offload, whose HybridDeviceOptimizer steps the offloaded
   * part on the CPU; --cpu-offloading-num-layers only with --cpu-offloading
   * (TransformerConfig's default: 0 layers). */
  if (I->opt_offload_line) {
    if ((rc = assign(I, I->opt_fraction_line ? I->opt_fraction_line : I->opt_offload_line,
                     I->opt_fraction_line ? "--optimizer-offload-fraction"
                                          : "--optimizer-cpu-offload",
                     "training.optimizer_offload", I->opt_fraction[0] ? I->opt_fraction : "1",
                     0)))
      return rc;
  } else {
    DEFAULT("training.optimizer_offload", "0");
  }
  DEFAULT("training.optimizer_offload_cpu_step", "true");
  snprintf(v, sizeof v, "%" PRId64, I->act_offload_line ? I->act_layers : 0);
  if (I->act_offload_line && I->act_layers > 0) {
    if ((rc = assign(I, I->act_layers_line, "--cpu-offloading-num-layers",
                     "training.activation_offload_layers", v, 0)))
      return rc;
  } else {
    DEFAULT("training.activation_offload_layers", "0");
  }
  /* Flash attention: Transformer Engine's (the default implementation) or
   * --use-flash-attn; the local implementation without it is unfused; an
   * explicit --attention-backend other than auto names the kernel (fused =
   * cuDNN fused attention). */
  if (I->backend) rc = assign(I, I->backend_line, "--attention-backend", "training.attention",
                              I->backend, 0);
  else
    rc = assign(I, I->impl_line ? I->impl_line : last_line, "--transformer-impl",
                "training.attention", I->impl_local && !I->flash ? "unfused" : "flash", 0);
  if (rc) return rc;
  if (I->recompute_method[0] && !strcmp(I->recompute_method, "block") &&
      c->training.recompute == SC_RECOMPUTE_FULL && I->recompute_num > 0) {
    int64_t per_stage = c->model.layers / (c->parallel.pp > 0 ? c->parallel.pp : 1);
    if (I->recompute_num < per_stage)
      return sc__error_at(I->ctx, SC_EUNSUPPORTED, I->name, I->recompute_line,
                          "--recompute-method block --recompute-num-layers %" PRId64
                          ": recomputing part of a stage's layers is not modelled (full "
                          "recompute is every layer)",
                          I->recompute_num);
  }
  if (I->shared_size) {
    int fi = sc_config_field_index("model.moe_ffn_hidden");
    int64_t moe_ffn = 0;
    if (fi >= 0 && sc__config_format_field(c, fi, v, sizeof v) == SC_OK) moe_ffn = atoll(v);
    if (moe_ffn <= 0 || I->shared_size % moe_ffn)
      return sc__error_at(I->ctx, SC_EUNSUPPORTED, I->name, I->shared_line,
                          "--moe-shared-expert-intermediate-size %" PRId64
                          ": expected a multiple of --moe-ffn-hidden-size",
                          I->shared_size);
    snprintf(v, sizeof v, "%" PRId64, I->shared_size / moe_ffn);
    if ((rc = assign(I, I->shared_line, "--moe-shared-expert-intermediate-size",
                     "model.moe_shared_experts", v, 1)))
      return rc;
  }
  DEFAULT("parallel.tp", "1");
  DEFAULT("parallel.pp", "1");
  DEFAULT("parallel.cp", "1");
  DEFAULT("parallel.sequence_parallel", "false");
  DEFAULT("parallel.distributed_optimizer", "false");
  DEFAULT("parallel.overlap_grad_reduce", "false");
  DEFAULT("parallel.overlap_param_gather", "false");
  DEFAULT("parallel.tp_comm_overlap", "false");
  DEFAULT("parallel.zero_stage", "0");
  DEFAULT("parallel.pp_first_layers", "0");
  DEFAULT("parallel.pp_last_layers", "0");
  DEFAULT("parallel.pp_embedding_in_split", "false");
  DEFAULT("parallel.pp_loss_in_split", "false");
  if (I->vpp_layers) {
    int64_t per = c->model.layers / c->parallel.pp;
    if (c->model.layers % c->parallel.pp || per % I->vpp_layers)
      return sc__error_at(I->ctx, SC_EINVAL, I->name, I->vpp_line,
                          "--num-layers-per-virtual-pipeline-stage %" PRId64
                          " does not divide the %" PRId64 " layers per pipeline stage",
                          I->vpp_layers, per);
    snprintf(v, sizeof v, "%" PRId64, per / I->vpp_layers);
    if ((rc = assign(I, I->vpp_line, "--num-layers-per-virtual-pipeline-stage", "parallel.vpp",
                     v, 0)))
      return rc;
  }
  DEFAULT("parallel.vpp", "1");
  DEFAULT("parallel.schedule", c->parallel.vpp > 1 ? "interleaved" : "1f1b");
  if (I->nnodes || I->nproc) {
    int64_t nodes = I->nnodes ? I->nnodes : 1, g = I->nproc ? I->nproc : 8;
    snprintf(v, sizeof v, "%" PRId64, g);
    if ((rc = assign(I, last_line, "--nproc-per-node", "cluster.gpus_per_node", v, 0))) return rc;
    snprintf(v, sizeof v, "%" PRId64, nodes * g);
    if ((rc = assign(I, last_line, "--nnodes", "cluster.num_gpus", v, 0))) return rc;
    if (I->info) I->info->have_cluster = 1;
  }
  DEFAULT("parallel.dp", "0");
  if (!I->given[SC_FIELD_training_global_batch]) {
    /* Megatron: micro-batch x data-parallel size. */
    int64_t mp = c->parallel.tp * c->parallel.pp * c->parallel.cp;
    int64_t dp = mp > 0 && c->cluster.num_gpus % mp == 0 ? c->cluster.num_gpus / mp : 1;
    snprintf(v, sizeof v, "%" PRId64, c->training.micro_batch * dp);
    DEFAULT("training.global_batch", v);
  }
#undef DEFAULT
  return SC_OK;
}

int sc_config_load_megatron(sc_ctx *ctx, sc_config *cfg, const char *name, const char *text,
                            size_t len, sc_megatron_info *info) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !text) return sc__error(ctx, SC_EINVAL, "sc_config_load_megatron: no input");
  if (!name) name = "<megatron>";
  if (info) memset(info, 0, sizeof *info);
  if (memchr(text, 0, len))
    return sc__error_at(ctx, SC_EINVAL, name, SC_AT_NONE, "NUL byte: not a launch line");
  words *W = sc__calloc(ctx, 1, sizeof *W);
  importer *I = sc__calloc(ctx, 1, sizeof *I);
  int rc = W && I ? SC_OK : SC_ENOMEM;
  if (!rc) rc = split(ctx, name, text, len, W);
  if (!rc) {
    I->ctx = ctx;
    I->name = name;
    I->work = *cfg;
    sc__strlcpy(I->work.origin, name, sizeof I->work.origin);
    I->info = info;
  }
  int last_line = 1;
  for (size_t i = 0; !rc && i < W->n; i++) {
    char *wd = W->w[i].s;
    int line = W->w[i].line;
    last_line = line;
    if (strncmp(wd, "--", 2) || !wd[2]) continue; /* programs, scripts, VAR=value */
    char *eq = strchr(wd, '=');
    const char *value = NULL;
    if (eq) *eq = 0, value = eq + 1;
    const mflag *f = find_flag(wd);
    int takes = f ? f->kind == K_VAL || (f->kind == K_SPECIAL && !special_switch(f->special))
                  : 0;
    if (!f) { /* not timing-relevant: its value (if any) goes with it */
      if (info) info->flags++;
      note_ignored(I, wd);
      if (!value && i + 1 < W->n && strncmp(W->w[i + 1].s, "--", 2)) i++;
      continue;
    }
    if (info) info->flags++;
    if (takes && !value) {
      if (i + 1 >= W->n || !strncmp(W->w[i + 1].s, "--", 2)) {
        rc = sc__error_at(ctx, SC_EINVAL, name, line, "%s: expected a value", wd);
        break;
      }
      value = W->w[++i].s;
    }
    if (value && value[0] == '$') {
      rc = sc__error_at(ctx, SC_EINVAL, name, line,
                        "%s %s: a shell variable; expand the script first (bash -x, or echo the "
                        "command line)",
                        wd, value);
      break;
    }
    if (f->kind == K_VAL) rc = assign(I, line, wd, f->key, value, f->optional);
    else if (f->kind == K_SET) rc = assign(I, line, wd, f->key, f->val, f->optional);
    else rc = special(I, f, line, value ? value : "");
  }
  if (!rc) rc = finish(I, last_line);
  if (!rc) *cfg = I->work;
  if (W) {
    if (W->buf) sc__free(ctx, W->buf, W->cap);
    sc__free(ctx, W, sizeof *W);
  }
  if (I) sc__free(ctx, I, sizeof *I);
  return rc;
}

int sc_config_load_megatron_file(sc_ctx *ctx, sc_config *cfg, const char *path,
                                 sc_megatron_info *info) {
  if (!ctx) return SC_EINVAL;
  char *text;
  size_t len, cap;
  int rc = sc__read_file(ctx, path, NULL, "launch line", MAX_ARGS_BYTES, &text, &len, &cap);
  if (rc) return rc;
  rc = sc_config_load_megatron(ctx, cfg, path, text, len, info);
  sc__free(ctx, text, cap);
  return rc;
}

/* ------------------------------------------------------------ writing */

/* The shortest of %.15g / %.17g that reads back as x. */
static void real_text(char *buf, size_t n, double x) {
  snprintf(buf, n, "%.15g", x);
  if (strtod(buf, NULL) != x) snprintf(buf, n, "%.17g", x);
}

int sc_config_write_megatron(sc_ctx *ctx, const sc_config *cfg, sc_write_fn w, void *ud) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !w) return sc__error(ctx, SC_EINVAL, "sc_config_write_megatron: no config");
  const sc_model_cfg *m = &cfg->model;
  const sc_training_cfg *t = &cfg->training;
  const sc_parallel_cfg *p = &cfg->parallel;
  if (p->zero_stage == 2)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "parallel.zero_stage=2 has no Megatron-LM flag that gives it alone "
                     "(--data-parallel-sharding-strategy optim_grads runs it under Megatron "
                     "FSDP)");
  if (p->zero_stage >= 3 && p->fsdp_shard > 0 && p->fsdp_shard < p->dp)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "parallel.fsdp_shard=%" PRId64 " of dp=%" PRId64
                     " (hybrid sharding) has no flag in this mapping (--use-torch-fsdp2 shards "
                     "over all data-parallel ranks)",
                     p->fsdp_shard, p->dp);
  if (p->schedule == SC_SCHED_GPIPE || p->schedule == SC_SCHED_ZB_H1 ||
      p->schedule == SC_SCHED_ZBV || p->schedule == SC_SCHED_DUALPIPE ||
      p->schedule == SC_SCHED_DUALPIPEV)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "parallel.schedule=%s is not a Megatron-LM schedule (1f1b, interleaved)",
                     sc_enum_name(SC_ENUM_SCHEDULE, (int)p->schedule));
  if (t->optimizer_offload > 0 && !t->optimizer_offload_cpu_step)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "training.optimizer_offload_cpu_step=false (a GPU step of streamed states) "
                     "has no Megatron-LM flag: --optimizer-cpu-offload steps on the CPU");
  if (t->recompute == SC_RECOMPUTE_OP_SAC)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "training.recompute=op_sac (torchtitan's op-level selective activation "
                     "checkpointing) has no Megatron-LM --recompute-granularity");
  if (t->eager)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "training.eager=true (eager PyTorch kernels) has no Megatron-LM flag: "
                     "Megatron-LM runs fused ones");
  if (!t->fused_projections)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "training.fused_projections=false (separate q/k/v and gate/up linears) has "
                     "no Megatron-LM flag: Megatron-LM fuses them");
  if (p->tp_fp8_allgather && t->precision == SC_PREC_FP8 && p->tp > 1 && p->sequence_parallel)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "parallel.tp_fp8_allgather=true (torchao's float8 TP gathers) has no "
                     "Megatron-LM flag in this mapping");
  if (t->precision == SC_PREC_FP8 && t->fp8_recipe != SC_FP8_DELAYED &&
      t->fp8_recipe != SC_FP8_TENSORWISE)
    return sc__error(ctx, SC_EUNSUPPORTED,
                     "training.fp8_recipe=%s has no Megatron-LM --fp8-recipe in this mapping",
                     sc_enum_name(SC_ENUM_FP8_RECIPE, (int)t->fp8_recipe));
  int rc;
#define W(...)                                                  \
  do {                                                          \
    if ((rc = sc__writef(w, ud, __VA_ARGS__))) return rc;       \
  } while (0)
  int64_t nodes = cfg->cluster.num_gpus / cfg->cluster.gpus_per_node;
  if (cfg->cluster.num_gpus % cfg->cluster.gpus_per_node) nodes = 0;
  W("# stepcast export megatron: %s on %" PRId64 " x %s (cluster.gpu is not a Megatron-LM "
    "flag)\n",
    m->name, cfg->cluster.num_gpus, cfg->cluster.gpu);
  if (nodes)
    W("torchrun --nnodes %" PRId64 " --nproc-per-node %" PRId64 " pretrain_gpt.py \\\n", nodes,
      cfg->cluster.gpus_per_node);
  else
    W("# %" PRId64 " GPUs are not whole nodes of %" PRId64 "\npretrain_gpt.py \\\n",
      cfg->cluster.num_gpus, cfg->cluster.gpus_per_node);
  W("  --num-layers %" PRId64 " --hidden-size %" PRId64 " --num-attention-heads %" PRId64 " \\\n",
    m->layers, m->hidden, m->heads);
  if (m->kv_heads && m->kv_heads != m->heads)
    W("  --group-query-attention --num-query-groups %" PRId64 " \\\n", m->kv_heads);
  W("  --ffn-hidden-size %" PRId64 " --seq-length %" PRId64
    " --max-position-embeddings %" PRId64 " --vocab-size %" PRId64 " \\\n",
    m->ffn_hidden, m->seq_len, m->seq_len, m->vocab);
  if (m->head_dim && m->head_dim * m->heads != m->hidden)
    W("  --kv-channels %" PRId64 " \\\n", m->head_dim);
  if (m->activation == SC_ACT_SWIGLU) W("  --swiglu \\\n");
  if (m->activation == SC_ACT_RELU2) W("  --squared-relu \\\n");
  if (!m->tied_embeddings) W("  --untie-embeddings-and-output-weights \\\n");
  char drop[40];
  real_text(drop, sizeof drop, m->dropout);
  W("  --hidden-dropout %s --attention-dropout %s \\\n", drop, drop);
  W("  --micro-batch-size %" PRId64 " --global-batch-size %" PRId64 " \\\n", t->micro_batch,
    t->global_batch);
  if (t->precision == SC_PREC_BF16 || t->precision == SC_PREC_FP8) W("  --bf16 \\\n");
  if (t->precision == SC_PREC_FP16) W("  --fp16 \\\n");
  if (t->precision == SC_PREC_FP8)
    W("  --fp8-format hybrid --fp8-recipe %s \\\n",
      t->fp8_recipe == SC_FP8_TENSORWISE ? "tensorwise" : "delayed");
  if (t->recompute == SC_RECOMPUTE_FULL)
    W("  --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \\\n");
  if (t->recompute == SC_RECOMPUTE_SELECTIVE) W("  --recompute-granularity selective \\\n");
  if (t->optimizer_offload > 0) {
    char frac[40];
    real_text(frac, sizeof frac, t->optimizer_offload);
    W("  --optimizer-cpu-offload --optimizer-offload-fraction %s \\\n", frac);
  }
  if (t->activation_offload_layers > 0)
    W("  --cpu-offloading --cpu-offloading-num-layers %" PRId64 " \\\n",
      t->activation_offload_layers);
  W("  --transformer-impl %s \\\n",
    t->attention == SC_ATTN_UNFUSED ? "local" : "transformer_engine");
  if (t->attention == SC_ATTN_CUDNN) W("  --attention-backend fused \\\n");
  W("  --tensor-model-parallel-size %" PRId64 " --pipeline-model-parallel-size %" PRId64
    " --context-parallel-size %" PRId64 " \\\n",
    p->tp, p->pp, p->cp);
  if (p->vpp > 1) W("  --num-virtual-stages-per-pipeline-rank %" PRId64 " \\\n", p->vpp);
  if (p->cp > 1)
    W("  --cp-comm-type %s \\\n", sc_enum_name(SC_ENUM_CP_COMM, (int)p->cp_comm));
  if (p->pp_first_layers || p->pp_last_layers)
    W("  --decoder-first-pipeline-num-layers %" PRId64
      " --decoder-last-pipeline-num-layers %" PRId64 " \\\n",
      p->pp_first_layers, p->pp_last_layers);
  if (p->pp_embedding_in_split) W("  --account-for-embedding-in-pipeline-split \\\n");
  if (p->pp_loss_in_split) W("  --account-for-loss-in-pipeline-split \\\n");
  if (p->sequence_parallel) W("  --sequence-parallel \\\n");
  if (p->zero_stage >= 3) W("  --use-torch-fsdp2 \\\n");
  else if (p->distributed_optimizer) W("  --use-distributed-optimizer \\\n");
  if (p->overlap_grad_reduce) W("  --overlap-grad-reduce \\\n");
  if (p->overlap_param_gather) W("  --overlap-param-gather \\\n");
  if (p->tp_comm_overlap) W("  --tp-comm-overlap \\\n");
  /* Mixture of experts (docs/MOE.md). */
  if (m->moe_experts > 0) {
    if (m->moe_dense_layers > 0 || m->moe_layer_freq > 1)
      return sc__error(ctx, SC_EUNSUPPORTED,
                       "model.moe_dense_layers / moe_layer_freq: Megatron-LM gives the MoE layer "
                       "pattern as a list (--moe-layer-freq \"([0]*3+[1]*58)\"), which this "
                       "mapping does not write");
    int64_t moe_ffn = m->moe_ffn_hidden > 0 ? m->moe_ffn_hidden : m->ffn_hidden;
    W("  --num-experts %" PRId64 " --moe-router-topk %" PRId64 " --moe-ffn-hidden-size %" PRId64
      " \\\n",
      m->moe_experts, m->moe_topk > 0 ? m->moe_topk : 2, moe_ffn);
    if (m->moe_shared_experts > 0)
      W("  --moe-shared-expert-intermediate-size %" PRId64 " \\\n", m->moe_shared_experts * moe_ffn);
    if (m->moe_capacity_factor > 0) {
      char cf[40];
      real_text(cf, sizeof cf, m->moe_capacity_factor);
      W("  --moe-expert-capacity-factor %s \\\n", cf);
    }
    W("  --moe-token-dispatcher-type %s --expert-model-parallel-size %" PRId64 " \\\n",
      p->moe_dispatcher == SC_MOE_DEEPEP ? "flex"
      : p->moe_dispatcher == SC_MOE_ALLGATHER ? "allgather" : "alltoall",
      p->ep > 0 ? p->ep : 1);
    if (p->etp > 0 && p->etp != p->tp) W("  --expert-tensor-parallel-size %" PRId64 " \\\n", p->etp);
  }
  W("  --distributed-backend nccl\n");
  /* Assumptions with no launch flag: comments after the line (they do not
   * round-trip). */
  if (m->moe_experts > 0 && m->moe_router_balance > 1)
    W("# model.moe_router_balance %g: a load assumption, not a launch flag\n",
      m->moe_router_balance);
  if (m->moe_experts > 0 && p->moe_a2a_overlap)
    W("# parallel.moe_a2a_overlap: no launch flag in this mapping\n");
#undef W
  return SC_OK;
}

int sc_config_write_yaml_given(const sc_config *cfg, sc_write_fn w, void *ud) {
  if (!cfg || !w) return SC_EINVAL;
  char val[320], sec[32] = "";
  int rc;
  for (int i = 0; i < sc_config_field_count(); i++) {
    if (cfg->field_line[i] == SC_LINE_DEFAULT) continue;
    const char *name = sc_config_field_name(i);
    const char *dot = strchr(name, '.');
    if (!dot) continue;
    if (strncmp(sec, name, (size_t)(dot - name)) || sec[dot - name]) {
      snprintf(sec, sizeof sec, "%.*s", (int)(dot - name), name);
      if ((rc = sc__writef(w, ud, "%s:\n", sec))) return rc;
    }
    if ((rc = sc__config_format_field(cfg, i, val, sizeof val))) return rc;
    if ((rc = sc__writef(w, ud, "  %s: %s\n", dot + 1, val))) return rc;
  }
  return SC_OK;
}
