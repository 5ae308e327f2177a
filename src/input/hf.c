/*
 * hf.c: HuggingFace transformers config.json files (hf_int.h). The file is
 * read whole (a config.json is a few KiB; 4 MiB at most), tokenized by
 * base/json.c, and its top-level members are kept with their lines, plus the
 * members of a `text_config` object, which multimodal wrappers (Gemma 3)
 * hold the language model's shape in. The mapping below turns them into
 * stepcast keys; everything else in the file is ignored. A sequence length
 * never comes from the file: max_position_embeddings is the longest context
 * the model supports, not what a run trains on.
 */
#include "input/hf_int.h"

#include "base/json_int.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HF_BYTES ((size_t)4 << 20)
/* Members kept; a config.json has about 30-80. */
#define MAX_MEMBERS 512

enum { V_STRING = 1, V_NUMBER, V_TRUE, V_FALSE, V_NULL, V_CONTAINER };

typedef struct member {
  char key[64];
  char val[96];
  int kind;  /* V_* */
  int line;
  int inner; /* 1: inside text_config */
} member;

typedef struct reader {
  sc_ctx *ctx;
  const char *path;
  const char *text;
  size_t nmembers;
  member m[MAX_MEMBERS];
  int has_text_config;
} reader;

/* Keeps one member (sc_json_member_fn): top level and text_config. */
static int keep(void *ud, const char *parent, const char *key, const sc_jtok *t, int line) {
  reader *R = ud;
  if (R->nmembers >= MAX_MEMBERS)
    return sc__error_at(R->ctx, SC_EINVAL, R->path, line, "more than %d members: not a config.json",
                        MAX_MEMBERS);
  member *m = &R->m[R->nmembers++];
  memset(m, 0, sizeof *m);
  sc__strlcpy(m->key, key, sizeof m->key);
  m->line = line;
  m->inner = parent[0] != 0;
  R->has_text_config |= m->inner;
  switch (t->type) {
  case SC_JT_STRING: m->kind = V_STRING; sc__json_unescape(t->s, t->n, m->val, sizeof m->val); break;
  case SC_JT_NUMBER: {
    size_t n = t->n < sizeof m->val ? t->n : sizeof m->val - 1;
    m->kind = V_NUMBER;
    memcpy(m->val, t->s, n);
    m->val[n] = 0;
    break;
  }
  case SC_JT_TRUE: m->kind = V_TRUE; break;
  case SC_JT_FALSE: m->kind = V_FALSE; break;
  case SC_JT_NULL: m->kind = V_NULL; break;
  default: m->kind = V_CONTAINER; break;
  }
  return SC_OK;
}

static int scan(reader *R, size_t len) {
  return sc__json_members(R->ctx, R->path, "a HuggingFace config.json", R->text, len,
                          "text_config", keep, R);
}

/* The member called key: the text_config one when the file has both. */
static const member *get(const reader *R, const char *key) {
  const member *top = NULL;
  for (size_t i = 0; i < R->nmembers; i++) {
    if (strcmp(R->m[i].key, key)) continue;
    if (R->m[i].inner) return &R->m[i];
    if (!top) top = &R->m[i];
  }
  return top;
}

/* ------------------------------------------------------------ mapping */

/* Model types whose shape this mapping knows. All of them are decoder-only
 * transformers with a gated MLP (gate, up and down projections), RMSNorm and
 * rotary positions. */
typedef struct hf_type {
  const char *name;
  int tied_default; /* transformers' default of tie_word_embeddings for it */
} hf_type;

static const hf_type types[] = {
    {"llama", 0},  {"mistral", 0}, {"mixtral", 0}, {"qwen2", 0},       {"qwen3", 0},
    {"qwen3_moe", 0}, {"deepseek_v3", 0}, {"gemma2", 1}, {"gemma3", 1}, {"gemma3_text", 1},
    {"gpt_oss", 0}, {"phi3", 0},
};

const char *sc__hf_model_types(void) {
  return "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v3, gemma2, gemma3, "
         "gpt_oss, phi3";
}

typedef struct mapper {
  reader *R;
  sc_hf_model *out;
  int rc;
} mapper;

static void add(mapper *M, const char *key, const char *from, int line, int optional,
                const char *fmt, ...) SC_PRINTF(6, 7);
static void add(mapper *M, const char *key, const char *from, int line, int optional,
                const char *fmt, ...) {
  if (M->rc || M->out->nsets >= SC_HF_MAX_SETS) return;
  sc_hf_set *s = &M->out->sets[M->out->nsets++];
  s->key = key;
  s->from = from;
  s->line = line;
  s->optional_key = optional;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->value, sizeof s->value, fmt, ap);
  va_end(ap);
}

/* A positive integer member: 0 when absent (and not required). */
static int64_t get_int(mapper *M, const char *key, int required, int *line) {
  *line = 0;
  if (M->rc) return 0;
  const member *m = get(M->R, key);
  if (!m || m->kind == V_NULL) {
    if (required)
      M->rc = sc__error_at(M->R->ctx, SC_EINVAL, M->R->path, SC_AT_NONE,
                           "missing \"%s\" (model_type %s needs it)", key, M->out->model_type);
    return 0;
  }
  *line = m->line;
  int64_t v = 0;
  if (m->kind != V_NUMBER || sc__json_int(m->val, strlen(m->val), &v) || v < 1) {
    M->rc = sc__error_at(M->R->ctx, SC_EINVAL, M->R->path, m->line,
                         "%s: expected a positive integer, got %s", key,
                         m->kind == V_NUMBER || m->kind == V_STRING ? m->val : "another kind");
    return 0;
  }
  return v;
}

/* Copies one positive integer member to a stepcast key. */
static int64_t map_int(mapper *M, const char *from, const char *key, int required, int optional) {
  int line;
  int64_t v = get_int(M, from, required, &line);
  if (v > 0) add(M, key, from, line, optional, "%" PRId64, v);
  return v;
}

static int map(reader *R, sc_hf_model *out) {
  mapper M = {R, out, SC_OK};
  const member *mt = get(R, "model_type");
  const member *outer = NULL;
  for (size_t i = 0; i < R->nmembers; i++)
    if (!R->m[i].inner && !strcmp(R->m[i].key, "model_type")) outer = &R->m[i];
  if (!mt || mt->kind != V_STRING)
    return sc__error_at(R->ctx, SC_EINVAL, R->path, mt ? mt->line : SC_AT_NONE,
                        "missing \"model_type\" (a string): not a transformers config.json");
  /* A wrapper's own type names the family ("gemma3" around "gemma3_text"). */
  const member *fam = outer && outer->kind == V_STRING ? outer : mt;
  const hf_type *ty = NULL;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(types[i].name, fam->val) || !strcmp(types[i].name, mt->val)) ty = &types[i];
  sc__strlcpy(out->model_type, fam->val, sizeof out->model_type);
  if (!ty)
    return sc__error_at(R->ctx, SC_EUNSUPPORTED, R->path, fam->line,
                        "model_type \"%s\" is not supported (supported: %s); write the shape "
                        "as model keys instead",
                        fam->val, sc__hf_model_types());
  const member *nm = get(R, "_name_or_path");
  sc__strlcpy(out->name, nm && nm->kind == V_STRING && nm->val[0] ? nm->val : fam->val,
              sizeof out->name);
  add(&M, "model.name", nm ? "_name_or_path" : "model_type", nm ? nm->line : fam->line, 0, "%s",
      out->name);

  int64_t heads = map_int(&M, "num_attention_heads", "model.heads", 1, 0);
  int64_t hidden = map_int(&M, "hidden_size", "model.hidden", 1, 0);
  map_int(&M, "num_hidden_layers", "model.layers", 1, 0);
  map_int(&M, "vocab_size", "model.vocab", 1, 0);
  int line;
  int64_t kv = get_int(&M, "num_key_value_heads", 0, &line);
  if (kv > 0) add(&M, "model.kv_heads", "num_key_value_heads", line, 0, "%" PRId64, kv);
  else add(&M, "model.kv_heads", "num_attention_heads", 0, 0, "0"); /* multi-head */

  /* Experts: the routed count under the family's name. */
  static const char *const expert_keys[] = {"num_local_experts", "n_routed_experts",
                                            "num_experts"};
  int64_t experts = 0;
  const char *expert_key = NULL;
  for (size_t i = 0; i < 3 && !experts; i++) {
    experts = get_int(&M, expert_keys[i], 0, &line);
    if (experts) expert_key = expert_keys[i];
  }
  /* The dense FFN: intermediate_size. Mixtral and gpt-oss have no dense
   * layer; their intermediate_size is the expert's width. */
  int moe_only_ffn = !strcmp(fam->val, "mixtral") || !strcmp(fam->val, "gpt_oss");
  int64_t ffn = get_int(&M, "intermediate_size", 1, &line);
  if (ffn && !(experts && moe_only_ffn))
    add(&M, "model.ffn_hidden", "intermediate_size", line, 0, "%" PRId64, ffn);

  int hd_line;
  int64_t head_dim = get_int(&M, "head_dim", 0, &hd_line);
  if (head_dim && heads && hidden && head_dim * heads != hidden)
    add(&M, "model.head_dim", "head_dim", hd_line, 0, "%" PRId64, head_dim);
  else add(&M, "model.head_dim", "head_dim", hd_line, 0, "0");

  const member *act = get(R, "hidden_act");
  if (!act) act = get(R, "hidden_activation"); /* Gemma */
  if (act && act->kind == V_STRING) {
    const char *a = act->val;
    /* Every supported type gates its MLP: SiLU is SwiGLU; GELU variants
     * (Gemma's GeGLU) have the same three GEMMs and are priced as SwiGLU. */
    if (!strcmp(a, "silu") || !strcmp(a, "swish") || !strncmp(a, "gelu", 4))
      add(&M, "model.activation", act->key, act->line, 0, "swiglu");
    else
      return sc__error_at(R->ctx, SC_EUNSUPPORTED, R->path, act->line,
                          "%s: \"%s\" is not a gated SiLU or GELU MLP that stepcast models", act->key,
                          a);
  } else {
    add(&M, "model.activation", "hidden_act", 0, 0, "swiglu");
  }
  const member *tie = get(R, "tie_word_embeddings");
  int tied = ty->tied_default;
  if (tie && (tie->kind == V_TRUE || tie->kind == V_FALSE)) tied = tie->kind == V_TRUE;
  add(&M, "model.tied_embeddings", "tie_word_embeddings", tie ? tie->line : 0, 0, "%s",
      tied ? "true" : "false");
  const member *drop = get(R, "attention_dropout");
  double p = 0;
  if (drop && drop->kind == V_NUMBER) {
    char *end;
    errno = 0;
    p = strtod(drop->val, &end);
    if (errno || *end || !(p >= 0 && p <= 1))
      return sc__error_at(R->ctx, SC_EINVAL, R->path, drop->line,
                          "attention_dropout: expected a probability in [0, 1], got %s", drop->val);
  }
  add(&M, "model.dropout", "attention_dropout", drop ? drop->line : 0, 0, "%.17g", p);

  if (experts) {
    add(&M, "model.moe_experts", expert_key, line, 1, "%" PRId64, experts);
    map_int(&M, "num_experts_per_tok", "model.moe_topk", 1, 1);
    if (moe_only_ffn) {
      map_int(&M, "intermediate_size", "model.moe_ffn_hidden", 1, 1);
    } else {
      map_int(&M, "moe_intermediate_size", "model.moe_ffn_hidden", 1, 1);
    }
    map_int(&M, "n_shared_experts", "model.moe_shared_experts", 0, 1);
    map_int(&M, "first_k_dense_replace", "model.moe_dense_layers", 0, 1);
    int step_line;
    int64_t step = get_int(&M, "decoder_sparse_step", 0, &step_line);
    if (step > 1)
      add(&M, "model.moe_layer_freq", "decoder_sparse_step", step_line, 1, "%" PRId64, step);
  }
  /* Multi-head latent attention (DeepSeek-V3). */
  int lora_line;
  int64_t kv_lora = get_int(&M, "kv_lora_rank", 0, &lora_line);
  if (kv_lora) {
    add(&M, "model.mla_kv_lora_rank", "kv_lora_rank", lora_line, 1, "%" PRId64, kv_lora);
    map_int(&M, "q_lora_rank", "model.mla_q_lora_rank", 0, 1);
    map_int(&M, "qk_rope_head_dim", "model.mla_rope_dim", 1, 1);
    map_int(&M, "v_head_dim", "model.mla_v_head_dim", 1, 1);
    int nope_line;
    int64_t nope = get_int(&M, "qk_nope_head_dim", 1, &nope_line);
    /* head_dim is the query/key width without the decoupled RoPE part. */
    for (size_t i = 0; i < out->nsets; i++)
      if (!strcmp(out->sets[i].key, "model.head_dim")) {
        snprintf(out->sets[i].value, sizeof out->sets[i].value, "%" PRId64, nope);
        out->sets[i].from = "qk_nope_head_dim";
        out->sets[i].line = nope_line;
      }
  }
  int mp_line;
  out->max_positions = (int)get_int(&M, "max_position_embeddings", 0, &mp_line);
  if (M.rc) return M.rc;
  if (out->nsets >= SC_HF_MAX_SETS)
    return sc__error(R->ctx, SC_EINTERNAL, "%s: too many mapped keys", R->path);
  return SC_OK;
}

int sc__hf_read(sc_ctx *ctx, const char *path, const char *from, sc_hf_model *out) {
  memset(out, 0, sizeof *out);
  char *text;
  size_t len, cap;
  int rc = sc__read_file(ctx, path, from, "HuggingFace config", MAX_HF_BYTES, &text, &len, &cap);
  if (rc) return rc;
  reader *R = sc__calloc(ctx, 1, sizeof *R);
  if (!R) {
    sc__free(ctx, text, cap);
    return SC_ENOMEM;
  }
  R->ctx = ctx;
  R->path = path;
  R->text = text;
  rc = scan(R, len);
  if (!rc) rc = map(R, out);
  sc__free(ctx, R, sizeof *R);
  sc__free(ctx, text, cap);
  return rc;
}
