/*
 * config.c: the front of the pipeline. Builds an sc_config from the built-in
 * default, model presets, YAML files (libyaml) and --set overrides, then
 * derives the implied values and validates the whole config before synthesis.
 * Every field is described once, in SC_CONFIG_FIELDS (config_int.h); parsing,
 * overrides, line bookkeeping, YAML output and docs/CONFIG.md all walk it.
 */
#include "input/config_int.h"
#include "input/gpufile_int.h"
#include "input/hf_int.h"
#include "input/vary_int.h"

#include "input/calib_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <yaml.h>

/* ---------------------------------------------------------------- types */

enum {
  T_POSINT,
  T_COUNT,
  T_BOOL,
  T_REAL,
  T_FRAC,
  T_LABEL,
  T_GPU,
  T_PRESET,
  T_HF,
  T_ACTIVATION,
  T_PRECISION,
  T_RECOMPUTE,
  T_SCHEDULE,
  T_INTERFERENCE,
  T_ATTENTION,
  T_CP_COMM,
  T_FP8_RECIPE,
  T_MOE_DISPATCHER,
  T_VARY,
  T_TYPE_COUNT
};

typedef struct type_info {
  const char *doc;          /* docs: the "type" column */
  const char *expect;       /* messages: "expected <expect>, got ..." */
  int en;                   /* sc_enum of an enum type (names: input/names.c), else -1 */
} type_info;

static const type_info types[T_TYPE_COUNT] = {
    [T_POSINT] = {"integer >= 1", "a positive integer", -1},
    [T_COUNT] = {"integer >= 0", "a non-negative integer", -1},
    [T_BOOL] = {"bool", "true, false, 1 or 0", -1},
    [T_REAL] = {"real >= 0", "a non-negative number", -1},
    [T_FRAC] = {"real in [0, 1]", "a number in [0, 1]", -1},
    [T_LABEL] = {"string", "a string", -1},
    [T_GPU] = {"GPU preset", "a GPU preset name", -1},
    [T_PRESET] = {"model preset", "a model preset name", -1},
    [T_HF] = {"file path", "a HuggingFace config.json path", -1},
    [T_ACTIVATION] = {"enum", "an activation", SC_ENUM_ACTIVATION},
    [T_PRECISION] = {"enum", "a precision", SC_ENUM_PRECISION},
    [T_RECOMPUTE] = {"enum", "a recompute mode", SC_ENUM_RECOMPUTE},
    [T_SCHEDULE] = {"enum", "a pipeline schedule", SC_ENUM_SCHEDULE},
    [T_INTERFERENCE] = {"enum", "an interference model", SC_ENUM_INTERFERENCE},
    [T_ATTENTION] = {"enum", "an attention implementation", SC_ENUM_ATTENTION},
    [T_CP_COMM] = {"enum", "a context-parallel exchange", SC_ENUM_CP_COMM},
    [T_FP8_RECIPE] = {"enum", "an fp8 recipe", SC_ENUM_FP8_RECIPE},
    [T_MOE_DISPATCHER] = {"enum", "an MoE token dispatcher", SC_ENUM_MOE_DISPATCHER},
    [T_VARY] = {"list (text or YAML)", "a variation list", -1},
};

/* Storage sizes per type, checked against the struct members at compile time
 * so the table cannot drift from stepcast.h. REAL and int64 share a size; the
 * docs test loads every field back, which catches a swap. */
#define SIZE_OK_POSINT(s) ((s) == sizeof(int64_t))
#define SIZE_OK_COUNT(s) ((s) == sizeof(int64_t))
#define SIZE_OK_BOOL(s) ((s) == sizeof(int))
#define SIZE_OK_REAL(s) ((s) == sizeof(double))
#define SIZE_OK_FRAC(s) ((s) == sizeof(double))
#define SIZE_OK_LABEL(s) ((s) >= 2)
#define SIZE_OK_VARY(s) ((s) >= 2)
#define SIZE_OK_GPU(s) ((s) >= 2)
#define SIZE_OK_PRESET(s) ((s) >= 2)
#define SIZE_OK_HF(s) ((s) >= 2)
#define SIZE_OK_ACTIVATION(s) ((s) == sizeof(sc_activation) && (s) == sizeof(int))
#define SIZE_OK_PRECISION(s) ((s) == sizeof(sc_precision) && (s) == sizeof(int))
#define SIZE_OK_RECOMPUTE(s) ((s) == sizeof(sc_recompute) && (s) == sizeof(int))
#define SIZE_OK_SCHEDULE(s) ((s) == sizeof(sc_schedule) && (s) == sizeof(int))
#define SIZE_OK_INTERFERENCE(s) ((s) == sizeof(sc_interference) && (s) == sizeof(int))
#define SIZE_OK_ATTENTION(s) ((s) == sizeof(sc_attention) && (s) == sizeof(int))
#define SIZE_OK_CP_COMM(s) ((s) == sizeof(sc_cp_comm) && (s) == sizeof(int))
#define SIZE_OK_FP8_RECIPE(s) ((s) == sizeof(sc_fp8_recipe) && (s) == sizeof(int))
#define SIZE_OK_MOE_DISPATCHER(s) ((s) == sizeof(sc_moe_dispatcher) && (s) == sizeof(int))

#define SC_X_CHECK(sec, key, type, member, unit, def, lo, hi, doc) \
  _Static_assert(SIZE_OK_##type(sizeof(((sc_config *)0)->member)), \
                 #sec "." #key ": table type does not match the member");
SC_CONFIG_FIELDS(SC_X_CHECK)
#undef SC_X_CHECK

_Static_assert(SC_FIELD_COUNT <= SC_CONFIG_MAX_FIELDS, "raise SC_CONFIG_MAX_FIELDS");

/* ---------------------------------------------------------------- the table */

typedef struct field {
  const char *section; /* "parallel" */
  const char *key;     /* "tp" */
  const char *name;    /* "parallel.tp" */
  int type;            /* T_... */
  size_t offset;       /* into sc_config */
  size_t size;         /* of the member */
  const char *unit;
  const char *def; /* default text; "" = set by the model preset */
  double lo, hi;   /* physical range of a number (0 of COUNT/REAL: derived) */
  const char *doc;
} field_def;

/* clang-format off */
static const field_def fields[SC_FIELD_COUNT] = {
#define SC_X_ROW(sec, key, type, member, unit, def, lo, hi, doc)            \
  {#sec, #key, #sec "." #key, T_##type, offsetof(sc_config, member),        \
   sizeof(((sc_config *)0)->member), unit, def, lo, hi, doc},
    SC_CONFIG_FIELDS(SC_X_ROW)
#undef SC_X_ROW
};
/* clang-format on */

typedef struct section {
  const char *name;
  const char *doc;
} section_def;

/* In the order they appear in the table and in written YAML. */
static const section_def sections[] = {
    {"model", "Transformer shape. A `preset` fills every key; the others override it."},
    {"training", "Batch, precision and activation recomputation."},
    {"parallel", "Megatron-LM style 3D parallelism and its communication options."},
    {"cluster", "GPU type and count, node layout and network bandwidths."},
    {"simulation", "Engine options."},
    {"variation",
     "What-if variation (docs/WHATIF.md): slow GPUs, per-GPU variability, degraded links, a second "
     "GPU type, failures. Folding splits only the rank classes a variation touches; the result "
     "gives the nominal step next to the varied one and the ranks on the critical path."},
    {"calibration",
     "Cost-model parameters (sc_cost_params): what `stepcast calibrate` fits. 0 means the "
     "documented default of the cost model (src/cost/cost.c). Instead of a mapping, `calibration:` "
     "may be a path (relative to the config file's directory) to a YAML file whose top-level "
     "`calibration:` mapping is loaded. Keys `nccl_*` set the NCCL collective model's "
     "parameters (docs/COMM.md), as written by `stepcast calibrate --nccl-tests`. Keys "
     "`interference_w_*` are the coefficients of the learned interference model "
     "(docs/INTERFERENCE.md), as written by `stepcast calibrate --interference`: numbers in "
     "[-10, 10]; given at all, the vector is used whole (features not named weigh 0), else the "
     "shipped model."},
};
#define SECTION_COUNT (sizeof sections / sizeof sections[0])
#define SECTION_CALIBRATION 6

/* ---------------------------------------------------------------- model presets */

/* X(name, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, activation, tied).
 * kv_heads/ffn_hidden 0 = derived by sc_config_resolve (heads; 4h for gelu), so
 * overriding `hidden` on a GPT preset scales the FFN with it.
 *
 * GPT-3: Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1
 * (n_layers, d_model, n_heads), context 2048, FFN 4 * d_model and tied input /
 * output embeddings as in GPT-2. Vocabulary: the 50,257-token GPT-2 BPE padded
 * to 51,200 as in Narayanan et al. 2021 (SC21, "Efficient Large-Scale Language
 * Model Training on GPU Clusters Using Megatron-LM"), Table 1.
 * Two rows deviate from Table 2.1 on purpose: the 1.3B model lists 24 heads of
 * d_head 128 for d_model 2048 (24 * 128 != 2048), so we keep d_model and d_head
 * and use 16 heads; the 13B model lists d_model 5140, a misprint for 40 heads *
 * 128 = 5120 (the width Megatron-LM's GPT-3 13B configs use).
 *
 * Llama 2: Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat
 * Models", Table 1 (4k context, GQA for 70B) and the released model cards /
 * config.json (hidden_size, num_attention_heads, num_key_value_heads,
 * intermediate_size, vocab_size 32000). SwiGLU, untied embeddings.
 *
 * Llama 3: Llama Team 2024, "The Llama 3 Herd of Models", Table 3 (layers,
 * model dimension, FFN dimension, attention heads, key/value heads, vocabulary
 * 128K = 128,256 in config.json); pre-training sequence length 8,192 (Sec.
 * 3.4). SwiGLU, untied embeddings.
 *
 * Dropout: Megatron-LM's default hidden and attention dropout, 0.1, for the
 * GPT-3 runs of SC21 and Korthikanti et al. 2022; none for Llama (the
 * released configs and Megatron's Llama recipes set both to 0). */
#define SC_MODEL_PRESETS(X)                                                    \
  X("gpt3-125m", 12, 768, 12, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)          \
  X("gpt3-350m", 24, 1024, 16, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)         \
  X("gpt3-760m", 24, 1536, 16, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)         \
  X("gpt3-1.3b", 24, 2048, 16, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)         \
  X("gpt3-2.7b", 32, 2560, 32, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)         \
  X("gpt3-6.7b", 32, 4096, 32, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)         \
  X("gpt3-13b", 40, 5120, 40, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)          \
  X("gpt3-175b", 96, 12288, 96, 0, 0, 51200, 2048, SC_ACT_GELU, 1, 0.1)        \
  X("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, SC_ACT_SWIGLU, 0, 0.0)  \
  X("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, SC_ACT_SWIGLU, 0, 0.0)  \
  X("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, SC_ACT_SWIGLU, 0, 0.0)  \
  X("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, SC_ACT_SWIGLU, 0, 0.0) \
  X("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, SC_ACT_SWIGLU, 0, 0.0) \
  X("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096, SC_ACT_SWIGLU, 0, 0.0)    \
  X("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32000, 4096, SC_ACT_SWIGLU, 0, 0.0)   \
  X("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 4096, SC_ACT_SWIGLU, 0, 0.0)   \
  X("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 151936, 4096, SC_ACT_SWIGLU, 0, 0.0) \
  X("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096, SC_ACT_SWIGLU, 0, 0.0) \
  X("gpt-oss-120b", 36, 2880, 64, 8, 2880, 201088, 4096, SC_ACT_SWIGLU, 0, 0.0)

/* The mixture-of-experts presets' MoE shape, applied on top of their row
 * above: X(name, head_dim, experts, topk, moe_ffn_hidden, shared, dense,
 * mla q_lora_rank, kv_lora_rank, rope dim, v head dim).
 * Sources: each model's released config.json on Hugging Face (hidden_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
 * intermediate_size, moe_intermediate_size, num_(local_)experts,
 * num_experts_per_tok, n_shared_experts, first_k_dense_replace,
 * vocab_size):
 *   mistralai/Mixtral-8x7B-v0.1 and Mixtral-8x22B-v0.1 (8 experts, top 2,
 *     each expert the full intermediate_size; Jiang et al. 2024, "Mixtral of
 *     Experts", Table 1);
 *   Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B (128 experts, top 8, head_dim
 *     128 with a query width of heads x 128 != hidden; Qwen3 Technical
 *     Report 2025, Table 2; intermediate_size is the unused dense width);
 *   deepseek-ai/DeepSeek-V3 (256 routed + 1 shared expert of 2048, top 8,
 *     first 3 layers dense with 18432; multi-head latent attention with
 *     q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128 (head_dim),
 *     qk_rope_head_dim 64, v_head_dim 128; DeepSeek-V3 Technical Report,
 *     arXiv 2412.19437, section 4.2). Not modelled: multi-token prediction
 *     and node-limited routing (DeepEP's dedup assumes uniform routing);
 *   openai/gpt-oss-120b (128 experts of 2880, top 4, head_dim 64, 8 KV
 *     heads; gpt-oss model card 2025). Not modelled: its alternating
 *     128-token sliding-window layers (every layer runs full causal
 *     attention here), the attention sinks, the biases and the clamped
 *     SwiGLU; initial_context_length 4096.
 * Sequence lengths: 4096 for Mixtral and Qwen3 as the Megatron-MoE model zoo
 * benchmarks them (validation/cases/megatron_moe_h100.csv), DeepSeek-V3's
 * pre-training length (report section 4.2) and gpt-oss's initial context. */
#define SC_MOE_PRESETS(X)                                      \
  X("mixtral-8x7b", 0, 8, 2, 14336, 0, 0, 0, 0, 0, 0)          \
  X("mixtral-8x22b", 0, 8, 2, 16384, 0, 0, 0, 0, 0, 0)         \
  X("qwen3-30b-a3b", 128, 128, 8, 768, 0, 0, 0, 0, 0, 0)       \
  X("qwen3-235b-a22b", 128, 128, 8, 1536, 0, 0, 0, 0, 0, 0)    \
  X("deepseek-v3", 128, 256, 8, 2048, 1, 3, 1536, 512, 64, 128) \
  X("gpt-oss-120b", 64, 128, 4, 2880, 0, 0, 0, 0, 0, 0)

typedef struct moe_preset {
  const char *name;
  int64_t head_dim, experts, topk, ffn, shared, dense, q_lora, kv_lora, rope, v_dim;
} moe_preset;

static const moe_preset moe_presets[] = {
#define SC_X_MOE(name, d, e, k, f, sh, dl, ql, kl, r, v) {name, d, e, k, f, sh, dl, ql, kl, r, v},
    SC_MOE_PRESETS(SC_X_MOE)
#undef SC_X_MOE
};

typedef struct model_preset {
  const char *name;
  int64_t layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len;
  sc_activation activation;
  int tied_embeddings;
  double dropout;
} model_preset;

static const model_preset model_presets[] = {
#define SC_X_PRESET(name, l, h, a, g, f, v, s, act, tied, drop) \
  {name, l, h, a, g, f, v, s, act, tied, drop},
    SC_MODEL_PRESETS(SC_X_PRESET)
#undef SC_X_PRESET
};
#define MODEL_PRESET_COUNT (sizeof model_presets / sizeof model_presets[0])

size_t sc_model_preset_count(void) { return MODEL_PRESET_COUNT; }

const char *sc_model_preset_name(size_t i) {
  return i < MODEL_PRESET_COUNT ? model_presets[i].name : NULL;
}

static const model_preset *find_model_preset(const char *name) {
  for (size_t i = 0; i < MODEL_PRESET_COUNT; i++)
    if (!strcmp(model_presets[i].name, name)) return &model_presets[i];
  return NULL;
}

static void apply_model_preset(sc_model_cfg *m, const model_preset *p) {
  memset(m, 0, sizeof *m);
  sc__strlcpy(m->name, p->name, sizeof m->name);
  m->layers = p->layers;
  m->hidden = p->hidden;
  m->heads = p->heads;
  m->kv_heads = p->kv_heads;
  m->ffn_hidden = p->ffn_hidden;
  m->vocab = p->vocab;
  m->seq_len = p->seq_len;
  m->activation = p->activation;
  m->tied_embeddings = p->tied_embeddings;
  m->dropout = p->dropout;
  for (size_t i = 0; i < sizeof moe_presets / sizeof moe_presets[0]; i++) {
    const moe_preset *e = &moe_presets[i];
    if (strcmp(e->name, p->name)) continue;
    m->head_dim = e->head_dim;
    m->moe_experts = e->experts;
    m->moe_topk = e->topk;
    m->moe_ffn_hidden = e->ffn;
    m->moe_shared_experts = e->shared;
    m->moe_dense_layers = e->dense;
    m->mla_q_lora_rank = e->q_lora;
    m->mla_kv_lora_rank = e->kv_lora;
    m->mla_rope_dim = e->rope;
    m->mla_v_head_dim = e->v_dim;
  }
}

/* The FFN width implied by ffn_hidden = 0: 4h for gelu (Vaswani et al. 2017,
 * GPT-2/3); for swiglu 2/3 of 4h (Shazeer 2020 keeps the parameter count) rounded
 * up to a multiple of 256 as Llama's `multiple_of` and Megatron-LM do (4096 ->
 * 11008 for Llama 2 7B). */
static int64_t default_ffn_hidden(int64_t hidden, sc_activation act) {
  if (act != SC_ACT_SWIGLU) return 4 * hidden;
  int64_t f = (8 * hidden + 2) / 3;
  return (f + 255) / 256 * 256;
}

/* ---------------------------------------------------------------- small helpers */

/* The enum of an enum-typed field (names.c). */
static sc_enum enum_of(int type) { return (sc_enum)types[type].en; }

static int64_t get_i64(const sc_config *cfg, const field_def *f) {
  int64_t v;
  memcpy(&v, (const char *)cfg + f->offset, sizeof v);
  return v;
}
static void set_i64(sc_config *cfg, const field_def *f, int64_t v) {
  memcpy((char *)cfg + f->offset, &v, sizeof v);
}
static int get_int(const sc_config *cfg, const field_def *f) {
  int v;
  memcpy(&v, (const char *)cfg + f->offset, sizeof v);
  return v;
}
static void set_int(sc_config *cfg, const field_def *f, int v) {
  memcpy((char *)cfg + f->offset, &v, sizeof v);
}
static double get_real(const sc_config *cfg, const field_def *f) {
  double v;
  memcpy(&v, (const char *)cfg + f->offset, sizeof v);
  return v;
}
static void set_real(sc_config *cfg, const field_def *f, double v) {
  memcpy((char *)cfg + f->offset, &v, sizeof v);
}
static char *str_ptr(sc_config *cfg, const field_def *f) { return (char *)cfg + f->offset; }
static const char *cstr_ptr(const sc_config *cfg, const field_def *f) {
  return (const char *)cfg + f->offset;
}

/* Appends printf text to buf[*len..n); never overflows, always terminates. */
static void appendf(char *buf, size_t n, size_t *len, const char *fmt, ...) SC_PRINTF(4, 5);
static void appendf(char *buf, size_t n, size_t *len, const char *fmt, ...) {
  if (*len >= n) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *len, n - *len, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  *len += (size_t)k < n - *len ? (size_t)k : n - *len - 1;
}

/* Writes s as a double-quoted, escaped and length-limited string for error
 * messages ("abc", "a\x01b", "aaaa..."). */
static const char *quote(char *buf, size_t n, const char *s, size_t slen) {
  size_t len = 0;
  appendf(buf, n, &len, "\"");
  for (size_t i = 0; i < slen; i++) {
    if (i == 48) {
      appendf(buf, n, &len, "...");
      break;
    }
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      appendf(buf, n, &len, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      appendf(buf, n, &len, "\\x%02x", c);
    else
      appendf(buf, n, &len, "%c", c);
  }
  appendf(buf, n, &len, "\"");
  return buf;
}


/* Optimal-string-alignment edit distance (insert, delete, substitute, swap
 * neighbours), for "did you mean" hints. Long strings count as far apart. */
static int edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 63 || m > 63) return 1000;
  int d[64][64];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    for (size_t j = 1; j <= m; j++) {
      int cost = a[i - 1] != b[j - 1];
      int best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  }
  return d[n][m];
}

/* Suggestion threshold: at most two edits, and fewer than the word's length
 * so that "x" does not suggest "tp". */
static int close_enough(const char *typed, int dist) {
  return dist <= 2 && (size_t)dist < strlen(typed);
}

static int find_section(const char *name) {
  for (size_t i = 0; i < SECTION_COUNT; i++)
    if (!strcmp(sections[i].name, name)) return (int)i;
  return -1;
}

static int find_field(int sec, const char *key) {
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if (!strcmp(fields[i].section, sections[sec].name) && !strcmp(fields[i].key, key)) return i;
  return -1;
}

double sc__precision_elem_bytes(sc_precision p) { return p == SC_PREC_FP32 ? 4.0 : 2.0; }

int sc__recompute_modules_parse(const char *list, unsigned *mask, char *bad, size_t n) {
  static const struct {
    const char *name;
    unsigned bit;
  } mods[] = {{"core_attn", SC_RC_CORE_ATTN},
              {"layernorm", SC_RC_LAYERNORM},
              {"moe_act", SC_RC_MOE_ACT},
              {"moe", SC_RC_MOE},
              {"mla_up_proj", SC_RC_MLA_UP_PROJ}};
  *mask = 0;
  const char *p = list;
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    const char *q = p;
    while (*q && *q != ',' && *q != ' ') q++;
    if (q == p) break;
    size_t len = (size_t)(q - p), i;
    for (i = 0; i < sizeof mods / sizeof mods[0]; i++)
      if (strlen(mods[i].name) == len && !strncmp(mods[i].name, p, len)) break;
    if (i == sizeof mods / sizeof mods[0]) {
      if (n) snprintf(bad, n, "%.*s", (int)(len < 48 ? len : 48), p);
      return SC_EINVAL;
    }
    *mask |= mods[i].bit;
    p = q;
  }
  return SC_OK;
}

unsigned sc__recompute_modules(const sc_config *cfg) {
  unsigned mask = 0;
  char bad[8];
  if (sc__recompute_modules_parse(cfg->training.recompute_modules, &mask, bad, sizeof bad))
    return SC_RC_CORE_ATTN;
  return mask;
}

/* Whether cluster.gpu names the config's GPU file. */
static int uses_gpu_file(const sc_config *cfg) {
  return cfg->cluster.gpu_file.set && !strcmp(cfg->cluster.gpu, cfg->cluster.gpu_file.name);
}

const sc_hw *sc__config_gpu(const sc_config *cfg, sc_hw *own) {
  if (uses_gpu_file(cfg)) {
    sc__gpu_desc_hw(&cfg->cluster.gpu_file, own);
    return own;
  }
  return sc_hw_find(cfg->cluster.gpu);
}

int sc_config_field_count(void) { return SC_FIELD_COUNT; }

const char *sc_config_field_name(int field) {
  return field >= 0 && field < SC_FIELD_COUNT ? fields[field].name : NULL;
}

int sc_config_field_index(const char *dotted) {
  if (!dotted) return -1;
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if (!strcmp(fields[i].name, dotted)) return i;
  return -1;
}

/* Builds the tail of an "unknown key" message: a close key of the section,
 * else the same key in another section, else the section's keys. */
static void key_hint(char *buf, size_t n, int sec, const char *key) {
  size_t len = 0;
  int best = -1, best_d = 1000;
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    if (strcmp(fields[i].section, sections[sec].name)) continue;
    int d = edit_distance(key, fields[i].key);
    if (d < best_d) best_d = d, best = i;
  }
  buf[0] = 0;
  if (best >= 0 && close_enough(key, best_d)) {
    appendf(buf, n, &len, " (did you mean \"%s\"?)", fields[best].name);
    return;
  }
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    if (!strcmp(fields[i].key, key)) {
      appendf(buf, n, &len, " (did you mean \"%s\"?)", fields[i].name);
      return;
    }
  }
  appendf(buf, n, &len, " (valid keys:");
  const char *sep = " ";
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    if (strcmp(fields[i].section, sections[sec].name)) continue;
    appendf(buf, n, &len, "%s%s", sep, fields[i].key);
    sep = ", ";
  }
  appendf(buf, n, &len, ")");
}

static void section_hint(char *buf, size_t n, const char *name) {
  size_t len = 0;
  int best = -1, best_d = 1000;
  for (size_t i = 0; i < SECTION_COUNT; i++) {
    int d = edit_distance(name, sections[i].name);
    if (d < best_d) best_d = d, best = (int)i;
  }
  buf[0] = 0;
  if (best >= 0 && close_enough(name, best_d)) {
    appendf(buf, n, &len, " (did you mean \"%s\"?)", sections[best].name);
    return;
  }
  appendf(buf, n, &len, " (valid sections:");
  for (size_t i = 0; i < SECTION_COUNT; i++)
    appendf(buf, n, &len, "%s%s", i ? ", " : " ", sections[i].name);
  appendf(buf, n, &len, ")");
}

/* ---------------------------------------------------------------- scalar parsing */

/* Decimal integer with optional sign and '_' digit separators (YAML 1.1). */
static int parse_i64(const char *s, int64_t *out) {
  int neg = 0;
  int64_t v = 0;
  size_t digits = 0;
  if (*s == '+' || *s == '-') neg = *s++ == '-';
  for (; *s; s++) {
    if (*s == '_' && digits) continue;
    if (*s < '0' || *s > '9') return -1;
    int d = *s - '0';
    if (v > (INT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
    digits++;
  }
  if (!digits) return -1;
  *out = neg ? -v : v;
  return 0;
}

/* A finite decimal number ("2", "0.85", "1e-3"); rejects inf/nan/hex. */
static int parse_double(const char *s, double *out) {
  if (!*s) return -1;
  for (const char *p = s; *p; p++)
    if (!strchr("0123456789+-.eE", *p)) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

static int parse_bool(const char *s, int *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "1"};
  static const char *const no[] = {"false", "False", "FALSE", "0"};
  for (size_t i = 0; i < 4; i++) {
    if (!strcmp(s, yes[i])) return *out = 1, 0;
    if (!strcmp(s, no[i])) return *out = 0, 0;
  }
  return -1;
}

static void list_names(char *buf, size_t n, size_t *len, sc_enum e) {
  for (int i = 0; i < sc_enum_count(e); i++)
    appendf(buf, n, len, "%s%s", i ? ", " : "", sc_enum_name(e, i));
}

/* Shortest "%.*g" text that reads back as exactly v. */
static void format_real(char *buf, size_t n, double v) {
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* Writes "KEY: V out of range [LO, HI]" into err and returns 1 when v lies
 * outside the field's physical range (0 of a COUNT or REAL field whose range
 * starts above 0 means "derived" and is always accepted); else 0. */
static int range_error(const field_def *f, double v, char *err, size_t errn) {
  int zero_ok = (f->type == T_COUNT || f->type == T_REAL) && f->lo > 0;
  if (v >= f->lo && v <= f->hi) return 0;
  if (zero_ok && v == 0) return 0;
  size_t len = 0;
  char vs[40], lo[40], hi[40];
  if (f->type == T_POSINT || f->type == T_COUNT) { /* integers: every digit */
    snprintf(vs, sizeof vs, "%.0f", v);
    snprintf(lo, sizeof lo, "%.0f", f->lo);
    snprintf(hi, sizeof hi, "%.0f", f->hi);
  } else {
    format_real(vs, sizeof vs, v);
    format_real(lo, sizeof lo, f->lo);
    format_real(hi, sizeof hi, f->hi);
  }
  err[0] = 0;
  appendf(err, errn, &len, "%s: %s out of range [%s, %s]", f->name, vs, lo, hi);
  if (zero_ok) appendf(err, errn, &len, " (0 = derived)");
  return 1;
}

/* The vary_int.h kind of a T_VARY field. */
static int vary_kind(int fi) {
  switch (fi) {
  case SC_FIELD_variation_slow_links: return SC_VARY_LINKS;
  case SC_FIELD_variation_gpu_mix: return SC_VARY_MIX;
  case SC_FIELD_variation_failures: return SC_VARY_FAILURES;
  default: return SC_VARY_GPUS;
  }
}

/* Parses `text` as the value of field fi and stores it in cfg (model.preset
 * loads the whole preset shape). On failure writes "KEY: reason" into err and
 * returns SC_EINVAL; cfg may then be partly written (callers work on copies). */
static int parse_field(sc_config *cfg, int fi, const char *text, size_t text_len, char *err,
                       size_t errn) {
  const field_def *f = &fields[fi];
  char q[256];
  size_t len = 0;
  err[0] = 0;
  if (strlen(text) != text_len) {
    appendf(err, errn, &len, "%s: value contains a NUL byte", f->name);
    return SC_EINVAL;
  }
  if (!text_len)
    snprintf(q, sizeof q, "an empty value");
  else
    quote(q, sizeof q, text, text_len);
  switch (f->type) {
  case T_POSINT:
  case T_COUNT: {
    int64_t v;
    if (parse_i64(text, &v)) {
      appendf(err, errn, &len, "%s: expected %s, got %s", f->name, types[f->type].expect, q);
      return SC_EINVAL;
    }
    if (range_error(f, (double)v, err, errn)) return SC_EINVAL;
    set_i64(cfg, f, v);
    return SC_OK;
  }
  case T_BOOL: {
    int v;
    if (parse_bool(text, &v)) {
      appendf(err, errn, &len, "%s: expected %s, got %s", f->name, types[f->type].expect, q);
      return SC_EINVAL;
    }
    set_int(cfg, f, v);
    return SC_OK;
  }
  case T_REAL:
  case T_FRAC: {
    double v;
    if (parse_double(text, &v)) {
      appendf(err, errn, &len, "%s: expected %s, got %s", f->name, types[f->type].expect, q);
      return SC_EINVAL;
    }
    if (range_error(f, v, err, errn)) return SC_EINVAL;
    set_real(cfg, f, v);
    return SC_OK;
  }
  case T_LABEL:
    if (text_len >= f->size) {
      appendf(err, errn, &len, "%s: longer than %zu bytes: %s", f->name, f->size - 1, q);
      return SC_EINVAL;
    }
    sc__strlcpy(str_ptr(cfg, f), text, f->size);
    return SC_OK;
  case T_VARY: {
    if (text_len >= f->size) {
      appendf(err, errn, &len, "%s: longer than %zu bytes", f->name, f->size - 1);
      return SC_EINVAL;
    }
    int rc = sc__vary_parse(vary_kind(fi), f->name, text, NULL, NULL, err, errn);
    if (rc) return rc;
    sc__strlcpy(str_ptr(cfg, f), text, f->size);
    return SC_OK;
  }
  case T_GPU: {
    const sc_hw *hw = sc_hw_find(text);
    if (uses_gpu_file(cfg) && !strcmp(text, cfg->cluster.gpu_file.name)) return SC_OK;
    if (sc__gpu_is_file(text)) { /* read where the config is loaded (apply_gpu_file) */
      appendf(err, errn, &len, "%s: a GPU file is read by sc_config_load / sc_config_set",
              f->name);
      return SC_EINVAL;
    }
    if (!hw || strlen(hw->name) >= f->size) {
      appendf(err, errn, &len, "%s: unknown gpu %s (a GPU file ends in .yaml; known:", f->name,
              q);
      for (size_t i = 0; i < sc_hw_count(); i++)
        appendf(err, errn, &len, "%s%s", i ? ", " : " ", sc_hw_at(i)->name);
      appendf(err, errn, &len, ")");
      return SC_EINVAL;
    }
    sc__strlcpy(str_ptr(cfg, f), hw->name, f->size);
    cfg->cluster.gpu_file.set = 0; /* a preset replaces a file */
    return SC_OK;
  }
  case T_PRESET: {
    const model_preset *p = find_model_preset(text);
    if (!p) {
      appendf(err, errn, &len, "%s: unknown preset %s (known:", f->name, q);
      for (size_t i = 0; i < MODEL_PRESET_COUNT; i++)
        appendf(err, errn, &len, "%s%s", i ? ", " : " ", model_presets[i].name);
      appendf(err, errn, &len, ")");
      return SC_EINVAL;
    }
    apply_model_preset(&cfg->model, p);
    cfg->model.hf_config[0] = 0; /* a preset replaces a config.json */
    return SC_OK;
  }
  case T_HF: /* read where the config is loaded (apply_hf), which knows the paths */
    appendf(err, errn, &len, "%s: a config.json is read by sc_config_load / sc_config_set",
            f->name);
    return SC_EINVAL;
  default: {
    int v = sc_enum_parse(enum_of(f->type), text);
    if (v >= 0) {
      set_int(cfg, f, v);
      return SC_OK;
    }
    appendf(err, errn, &len, "%s: unknown value %s (allowed: ", f->name, q);
    list_names(err, errn, &len, enum_of(f->type));
    appendf(err, errn, &len, ")");
    return SC_EINVAL;
  }
  }
}

/* Checks a stored value against its type (for configs filled in by code, and
 * as the first step of resolve). Writes "KEY: reason" into err on failure. */
static int check_field(const sc_config *cfg, int fi, char *err, size_t errn) {
  const field_def *f = &fields[fi];
  size_t len = 0;
  err[0] = 0;
  switch (f->type) {
  case T_POSINT:
  case T_COUNT:
    return range_error(f, (double)get_i64(cfg, f), err, errn) ? SC_EINVAL : SC_OK;
  case T_BOOL: {
    int v = get_int(cfg, f);
    if (v != 0 && v != 1) {
      appendf(err, errn, &len, "%s: expected 0 or 1, got %d", f->name, v);
      return SC_EINVAL;
    }
    return SC_OK;
  }
  case T_REAL:
  case T_FRAC:
    return range_error(f, get_real(cfg, f), err, errn) ? SC_EINVAL : SC_OK;
  case T_PRESET: return SC_OK; /* shares model.name with the LABEL row, which checks it */
  case T_HF:
    if (!memchr(cstr_ptr(cfg, f), 0, f->size)) {
      appendf(err, errn, &len, "%s: string is not terminated", f->name);
      return SC_EINVAL;
    }
    return SC_OK;
  case T_VARY: {
    const char *s = cstr_ptr(cfg, f);
    if (!memchr(s, 0, f->size)) {
      appendf(err, errn, &len, "%s: string is not terminated", f->name);
      return SC_EINVAL;
    }
    return sc__vary_parse(vary_kind(fi), f->name, s, NULL, NULL, err, errn);
  }
  case T_LABEL:
  case T_GPU: {
    const char *s = cstr_ptr(cfg, f);
    if (!memchr(s, 0, f->size)) {
      appendf(err, errn, &len, "%s: string is not terminated", f->name);
      return SC_EINVAL;
    }
    if (f->type == T_GPU && !uses_gpu_file(cfg)) {
      /* Reuse the parser's message, which lists the known GPUs. */
      sc_config scratch;
      memset(&scratch, 0, sizeof scratch);
      return parse_field(&scratch, fi, s, strlen(s), err, errn);
    }
    return SC_OK;
  }
  default: {
    int v = get_int(cfg, f);
    if (!sc_enum_name(enum_of(f->type), v)) {
      appendf(err, errn, &len, "%s: invalid enum value %d (allowed: ", f->name, v);
      list_names(err, errn, &len, enum_of(f->type));
      appendf(err, errn, &len, ")");
      return SC_EINVAL;
    }
    return SC_OK;
  }
  }
}

/* Records where field fi was given; a preset also accounts for every model
 * key it fills, so later messages about the shape point at the preset. */
static void mark_line(sc_config *cfg, int fi, int line) {
  cfg->field_line[fi] = line;
  if (fi == SC_FIELD_model_preset)
    for (int i = 0; i < SC_FIELD_COUNT; i++)
      if (!strcmp(fields[i].section, "model")) cfg->field_line[i] = line;
}

/* model.hf_config: reads the config.json at path (input/hf.c) and applies
 * the shape it maps to through the field parser. The shape is the file's:
 * the FFN width and head dim it does not give go back to derived. Every
 * field it sets is recorded at `line` (the hf_config key, or --set), as a
 * preset's are, so later messages about the shape point there; a key the
 * file needs that this build lacks (MoE, MLA) is SC_EUNSUPPORTED. */
static int apply_hf(sc_ctx *ctx, sc_config *cfg, const char *path, const char *from, int line) {
  sc_hf_model *hf = sc__malloc(ctx, sizeof *hf);
  if (!hf) return SC_ENOMEM;
  int rc = sc__hf_read(ctx, path, from, hf);
  if (!rc) cfg->model.ffn_hidden = cfg->model.head_dim = 0;
  for (size_t i = 0; !rc && i < hf->nsets; i++) {
    const sc_hf_set *st = &hf->sets[i];
    int64_t at = st->line > 0 ? st->line : SC_AT_NONE;
    int fi = sc_config_field_index(st->key);
    if (fi < 0) {
      rc = sc__error_at(ctx, st->optional_key ? SC_EUNSUPPORTED : SC_EINTERNAL, path, at,
                        "%s = %s: %s is not modelled yet (%s, issue 15)", st->from, st->value,
                        st->key,
                        strstr(st->key, ".mla_") ? "multi-head latent attention"
                                                 : "mixture of experts");
      break;
    }
    char err[SC_ERRMSG_MAX];
    if ((rc = parse_field(cfg, fi, st->value, strlen(st->value), err, sizeof err))) {
      rc = sc__error_at(ctx, rc, path, at, "%s: %s", st->from, err);
      break;
    }
    mark_line(cfg, fi, line);
  }
  if (!rc) {
    sc__strlcpy(cfg->model.hf_config, path, sizeof cfg->model.hf_config);
    mark_line(cfg, SC_FIELD_model_hf_config, line);
  }
  sc__free(ctx, hf, sizeof *hf);
  return rc;
}

/* num_gpus and nodes describe the same thing; when one source (a file's
 * cluster section, one --set) gives only one of them, the other is
 * re-derived so that `cluster: {nodes: 64}` on top of the default works. */
static void rederive_cluster(sc_config *cfg, int gave_num_gpus, int gave_nodes) {
  if (gave_nodes && !gave_num_gpus) {
    cfg->cluster.num_gpus = 0;
    cfg->field_line[SC_FIELD_cluster_num_gpus] = cfg->field_line[SC_FIELD_cluster_nodes];
  }
  if (gave_num_gpus && !gave_nodes) {
    cfg->cluster.nodes = 0;
    cfg->field_line[SC_FIELD_cluster_nodes] = cfg->field_line[SC_FIELD_cluster_num_gpus];
  }
}

/* ---------------------------------------------------------------- defaults, presets */

void sc_config_default(sc_config *cfg) {
  char err[SC_ERRMSG_MAX];
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  sc__strlcpy(cfg->origin, "<default>", sizeof cfg->origin);
  /* Every default is table text through the same parser as files; the unit
   * tests check that each one parses. */
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if (fields[i].def[0])
      (void)parse_field(cfg, i, fields[i].def, strlen(fields[i].def), err, sizeof err);
}

/* The built-in example, examples/gpt3-175b-1024.yaml compiled in
 * (cmake/embed.cmake). */
#include "example_config.h"

const char *sc_config_example_text(size_t *len) {
  if (len) *len = sc_example_yaml_len;
  return (const char *)sc_example_yaml;
}

int sc_config_example(sc_ctx *ctx, sc_config *cfg) {
  if (!ctx) return SC_EINVAL;
  if (!cfg) return sc__error(ctx, SC_EINVAL, "sc_config_example: no config");
  sc_config_default(cfg);
  return sc_config_load_string(ctx, cfg, SC_EXAMPLE_NAME, (const char *)sc_example_yaml,
                               sc_example_yaml_len);
}

int sc_model_preset(sc_ctx *ctx, sc_config *cfg, const char *name) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !name) return sc__error(ctx, SC_EINVAL, "sc_model_preset: no config or name");
  char err[SC_ERRMSG_MAX];
  sc_config work = *cfg;
  int rc = parse_field(&work, SC_FIELD_model_preset, name, strlen(name), err, sizeof err);
  if (rc) return sc__error(ctx, rc, "%s", err);
  *cfg = work;
  return SC_OK;
}

/* ---------------------------------------------------------------- YAML loading */

/* Config files are a few hundred bytes; the cap keeps a wrong path (a
 * dataset, /dev/zero) from exhausting memory. */
#define MAX_CONFIG_BYTES ((size_t)16 << 20)

/* Whole-file read for configs and calibration includes: messages name the
 * including file and line ("gpt.yaml:9: cannot open calibration file PATH:
 * reason") when `from` is given. */
static int read_file(sc_ctx *ctx, const char *path, const char *from, char **out, size_t *len,
                     size_t *cap) {
  return sc__read_file(ctx, path, from, "calibration file", MAX_CONFIG_BYTES, out, len, cap);
}

typedef struct loader {
  sc_ctx *ctx;
  sc_config *cfg;   /* working copy; the caller commits it on success */
  const char *file; /* name used in messages */
  yaml_document_t *doc;
  int calibration_file;     /* 1: only the top-level calibration mapping counts */
  int include_line;         /* != 0: record this line for every field (included file) */
  int seen[SC_FIELD_COUNT]; /* line of each key in this document; 0 = not given */
  int calib_seen[SC_CALIB_KEY_COUNT]; /* the same for the calibration keys */
} loader;

static int load_text(sc_ctx *ctx, sc_config *work, const char *file, const char *text, size_t len,
                     int calibration_file, int include_line);

static int node_line(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

static const char *node_kind(const yaml_node_t *node) {
  switch (node->type) {
  case YAML_MAPPING_NODE: return "a mapping";
  case YAML_SEQUENCE_NODE: return "a sequence";
  case YAML_SCALAR_NODE: return "a scalar";
  default: return "nothing";
  }
}

/* A plain empty / ~ / null scalar: an omitted value. */
static int is_null(const yaml_node_t *node) {
  if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 0;
  const char *s = (const char *)node->data.scalar.value;
  return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* The text of a key node, or an error naming what was found instead. */
static int key_text(loader *L, const yaml_node_t *key, const char *where, const char **out) {
  if (!key || key->type != YAML_SCALAR_NODE)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, key ? node_line(key) : SC_AT_NONE,
                   "%s: keys must be plain names, got %s", where, key ? node_kind(key) : "nothing");
  const char *s = (const char *)key->data.scalar.value;
  if (strlen(s) != key->data.scalar.length)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(key), "%s: key contains a NUL byte",
                   where);
  *out = s;
  return SC_OK;
}

/* A calibration key (input/calib_keys.h: every key of the section, with its
 * bounds and the sc_cost_params member it sets). Returns SC_OK or an error
 * with text in err. */
static int parse_calib(sc_config *cfg, int idx, const char *text, size_t text_len, char *err,
                       size_t errn) {
  const sc_calib_key *d = &sc__calib_keys[idx];
  double v;
  if (strlen(text) != text_len || parse_double(text, &v)) {
    char q[256];
    snprintf(err, errn, "calibration.%s: expected a number, got %s", d->key,
             text_len ? quote(q, sizeof q, text, text_len) : "an empty value");
    return SC_EINVAL;
  }
  int rc = sc__calib_key_check(idx, v, err, errn);
  if (rc) return rc;
  *sc__calib_slot(&cfg->costs, idx) = v;
  return SC_OK;
}

/* " (did you mean ...)" for an unknown calibration key. */
static void calib_hint(char *buf, size_t n, const char *key) {
  size_t len = 0;
  int best = -1, best_d = 1000;
  buf[0] = 0;
  for (int i = 0; i < SC_CALIB_KEY_COUNT; i++) {
    int d = edit_distance(key, sc__calib_keys[i].key);
    if (d < best_d) best_d = d, best = i;
  }
  char nccl[128];
  snprintf(nccl, sizeof nccl, "nccl_%s", key); /* the removed ring/tree model's knobs */
  if (best >= 0 && close_enough(key, best_d))
    appendf(buf, n, &len, " (did you mean \"calibration.%s\"?)", sc__calib_keys[best].key);
  else if (sc__calib_key_find(nccl) >= 0)
    appendf(buf, n, &len, " (did you mean \"calibration.%s\"?)", nccl);
  else
    appendf(buf, n, &len, " (keys: docs/CONFIG.md, section calibration)");
}

/* A variation list given as a YAML sequence (of mappings, or of numbers for
 * failures) in the text form of vary_int.h: "k=v k=v; k=v" with a
 * sequence value joined by commas. */
static int vary_text(loader *L, int fi, const yaml_node_t *seq, char *out, size_t n) {
  const field_def *f = &fields[fi];
  size_t len = 0;
  out[0] = 0;
  for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
       it++) {
    const yaml_node_t *e = yaml_document_get_node(L->doc, *it);
    int el = node_line(e);
    if (e && e->type == YAML_SCALAR_NODE && fi == SC_FIELD_variation_failures) {
      appendf(out, n, &len, "%s%s", len ? "," : "", (const char *)e->data.scalar.value);
      continue;
    }
    if (!e || e->type != YAML_MAPPING_NODE || fi == SC_FIELD_variation_failures)
      return sc__error_at(L->ctx, SC_EINVAL, L->file, el, "%s: expected %s, got %s", f->name,
                          fi == SC_FIELD_variation_failures ? "a step number" : "a mapping",
                          e ? node_kind(e) : "nothing");
    if (len) appendf(out, n, &len, "; ");
    for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
      if (p > e->data.mapping.pairs.start) appendf(out, n, &len, " ");
      const yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
      const yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
      if (!k || k->type != YAML_SCALAR_NODE || !v)
        return sc__error_at(L->ctx, SC_EINVAL, L->file, el, "%s: bad item", f->name);
      appendf(out, n, &len, "%s=", (const char *)k->data.scalar.value);
      if (v->type == YAML_SCALAR_NODE) {
        appendf(out, n, &len, "%s", (const char *)v->data.scalar.value);
      } else if (v->type == YAML_SEQUENCE_NODE) {
        int first = 1;
        for (yaml_node_item_t *q = v->data.sequence.items.start; q < v->data.sequence.items.top;
             q++) {
          const yaml_node_t *x = yaml_document_get_node(L->doc, *q);
          if (!x || x->type != YAML_SCALAR_NODE)
            return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(v),
                                "%s: %s: expected a list of numbers", f->name,
                                (const char *)k->data.scalar.value);
          appendf(out, n, &len, "%s%s", first ? "" : ",", (const char *)x->data.scalar.value);
          first = 0;
        }
      } else {
        return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(v), "%s: %s: got %s", f->name,
                            (const char *)k->data.scalar.value, node_kind(v));
      }
    }
  }
  if (len + 1 >= n)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(seq), "%s: longer than %zu bytes",
                        f->name, n - 2);
  return SC_OK;
}

static int apply_node(loader *L, int fi, const yaml_node_t *value, int line) {
  const field_def *f = &fields[fi];
  char err[SC_ERRMSG_MAX];
  if (value && value->type == YAML_SEQUENCE_NODE && f->type == T_VARY) {
    char text[1024];
    int rc = vary_text(L, fi, value, text, sizeof text);
    if (rc) return rc;
    if ((rc = parse_field(L->cfg, fi, text, strlen(text), err, sizeof err)))
      return sc__error_at(L->ctx, rc, L->file, line, "%s", err);
    mark_line(L->cfg, fi, L->include_line ? L->include_line : line);
    return SC_OK;
  }
  if (!value || value->type != YAML_SCALAR_NODE)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line, "%s: expected %s, got %s", f->name,
                   types[f->type].expect, value ? node_kind(value) : "nothing");
  int rc = parse_field(L->cfg, fi, (const char *)value->data.scalar.value,
                       value->data.scalar.length, err, sizeof err);
  if (rc) return sc__error_at(L->ctx, rc, L->file, line, "%s", err);
  mark_line(L->cfg, fi, L->include_line ? L->include_line : line);
  return SC_OK;
}

/* `calibration: PATH`: loads PATH's top-level calibration mapping. Relative
 * paths are taken from the directory of the including file. */
static int include_calibration(loader *L, const yaml_node_t *value, int line) {
  const char *rel = (const char *)value->data.scalar.value;
  if (strlen(rel) != value->data.scalar.length || !*rel)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line,
                   "calibration: expected a mapping or a file path");
  char path[4096];
  const char *slash = strrchr(L->file, '/');
  int k;
  if (rel[0] == '/' || !slash)
    k = snprintf(path, sizeof path, "%s", rel);
  else
    k = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - L->file), L->file, rel);
  if (k < 0 || (size_t)k >= sizeof path)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line, "calibration: path too long");
  char from[320], *text;
  size_t len, cap;
  if (L->include_line == SC_CONFIG_LINE_SET)
    snprintf(from, sizeof from, "--set");
  else
    snprintf(from, sizeof from, "%s:%d", L->file, line);
  int rc = read_file(L->ctx, path, from, &text, &len, &cap);
  if (rc) return rc;
  rc = load_text(L->ctx, L->cfg, path, text, len, 1, L->include_line ? L->include_line : line);
  sc__free(L->ctx, text, cap);
  return rc;
}

/* `calibration: {interference_tree: PATH}`: the `tree` interference model's
 * XGBoost file, relative to the directory of the file naming it; loaded
 * (and checked) when a run uses it (cost/interf_tree.c). */
static int set_interference_tree(loader *L, const yaml_node_t *value, int line) {
  const char *rel = value && value->type == YAML_SCALAR_NODE ? (const char *)value->data.scalar.value
                                                             : NULL;
  if (!rel || strlen(rel) != value->data.scalar.length || !*rel)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line,
                        "calibration.interference_tree: expected the path of a model file");
  const char *slash = strrchr(L->file, '/');
  char *dst = L->cfg->interference_tree;
  size_t cap = sizeof L->cfg->interference_tree;
  int k = rel[0] == '/' || !slash ? snprintf(dst, cap, "%s", rel)
                                  : snprintf(dst, cap, "%.*s/%s", (int)(slash - L->file), L->file, rel);
  if (k < 0 || (size_t)k >= cap) {
    dst[0] = 0;
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line, "calibration.interference_tree: path too long");
  }
  return SC_OK;
}

/* `model: {hf_config: PATH}`: a HuggingFace config.json, relative to the
 * directory of the including file. */
static int include_hf(loader *L, const yaml_node_t *value, int line) {
  const char *rel = value && value->type == YAML_SCALAR_NODE ? (const char *)value->data.scalar.value
                                                             : NULL;
  if (!rel || strlen(rel) != value->data.scalar.length || !*rel)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line,
                        "model.hf_config: expected the path of a config.json");
  char path[4096], from[320];
  const char *slash = strrchr(L->file, '/');
  int k = rel[0] == '/' || !slash
              ? snprintf(path, sizeof path, "%s", rel)
              : snprintf(path, sizeof path, "%.*s/%s", (int)(slash - L->file), L->file, rel);
  if (k < 0 || (size_t)k >= sizeof path)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line, "model.hf_config: path too long");
  snprintf(from, sizeof from, "%s:%d", L->file, line);
  return apply_hf(L->ctx, L->cfg, path, from, L->include_line ? L->include_line : line);
}

/* cluster.gpu: PATH (relative to the including file's directory when the
 * config is a file, to the working directory for --set): a GPU file. */
static int apply_gpu_file(sc_ctx *ctx, sc_config *cfg, const char *path, const char *from,
                          int line) {
  sc_gpu_desc d;
  int rc = sc__gpu_file_load(ctx, path, from, &d);
  if (rc) return rc;
  cfg->cluster.gpu_file = d;
  sc__strlcpy(cfg->cluster.gpu, d.name, sizeof cfg->cluster.gpu);
  mark_line(cfg, SC_FIELD_cluster_gpu, line);
  return SC_OK;
}

static int include_gpu_file(loader *L, const char *rel, int line) {
  char path[4096], from[320];
  const char *slash = strrchr(L->file, '/');
  int k = rel[0] == '/' || !slash
              ? snprintf(path, sizeof path, "%s", rel)
              : snprintf(path, sizeof path, "%.*s/%s", (int)(slash - L->file), L->file, rel);
  if (k < 0 || (size_t)k >= sizeof path)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, line, "cluster.gpu: path too long");
  snprintf(from, sizeof from, "%s:%d", L->file, line);
  return apply_gpu_file(L->ctx, L->cfg, path, from, L->include_line ? L->include_line : line);
}

/* One section's mapping. In `model`, a preset is applied before the other
 * keys whatever its position, so that they override it. */
static int load_section(loader *L, int sec, const yaml_node_t *node, int line) {
  const char *sname = sections[sec].name;
  if (is_null(node)) return SC_OK;
  if (sec == SECTION_CALIBRATION && node->type == YAML_SCALAR_NODE && !L->calibration_file)
    return include_calibration(L, node, line);
  if (node->type != YAML_MAPPING_NODE)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(node),
                   "%s: expected a mapping of keys, got %s", sname, node_kind(node));
  yaml_node_pair_t *begin = node->data.mapping.pairs.start;
  yaml_node_pair_t *end = node->data.mapping.pairs.top;
  yaml_node_pair_t *preset_pair = NULL, *hf_pair = NULL;
  int rc;
  if (!strcmp(sname, "model")) {
    for (yaml_node_pair_t *p = begin; p < end; p++) {
      yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
      if (!k || k->type != YAML_SCALAR_NODE) continue;
      const char *kt = (const char *)k->data.scalar.value;
      if (!strcmp(kt, "preset") && !preset_pair) preset_pair = p;
      if (!strcmp(kt, "hf_config") && !hf_pair) hf_pair = p;
    }
    if (preset_pair && hf_pair)
      return sc__error_at(L->ctx, SC_EINVAL, L->file,
                          node_line(yaml_document_get_node(L->doc, hf_pair->key)),
                          "model.hf_config and model.preset both give the shape: keep one");
    if (preset_pair) {
      int kl = node_line(yaml_document_get_node(L->doc, preset_pair->key));
      if ((rc = apply_node(L, SC_FIELD_model_preset,
                           yaml_document_get_node(L->doc, preset_pair->value), kl)))
        return rc;
      L->seen[SC_FIELD_model_preset] = kl;
    }
    if (hf_pair) {
      int kl = node_line(yaml_document_get_node(L->doc, hf_pair->key));
      if ((rc = include_hf(L, yaml_document_get_node(L->doc, hf_pair->value), kl))) return rc;
      L->seen[SC_FIELD_model_hf_config] = kl;
      preset_pair = hf_pair; /* skipped below like a preset */
    }
  }
  for (yaml_node_pair_t *p = begin; p < end; p++) {
    yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
    const char *key;
    if ((rc = key_text(L, k, sname, &key))) return rc;
    int kl = node_line(k);
    if (p == preset_pair) continue;
    if (sec == SECTION_CALIBRATION && !strcmp(key, "interference_tree")) {
      if ((rc = set_interference_tree(L, yaml_document_get_node(L->doc, p->value), kl))) return rc;
      continue;
    }
    if (sec == SECTION_CALIBRATION) {
      char err[SC_ERRMSG_MAX];
      int ci = sc__calib_key_find(key);
      const yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
      if (ci < 0) {
        char hint[SC_ERRMSG_MAX], q[256], dotted[128];
        snprintf(dotted, sizeof dotted, "calibration.%s", key);
        calib_hint(hint, sizeof hint, key);
        return sc__error_at(L->ctx, SC_EINVAL, L->file, kl, "unknown key %s%s",
                       quote(q, sizeof q, dotted, strlen(dotted)), hint);
      }
      if (L->calib_seen[ci])
        return sc__error_at(L->ctx, SC_EINVAL, L->file, kl,
                       "duplicate key \"calibration.%s\" (first given on line %d)", key,
                       L->calib_seen[ci]);
      L->calib_seen[ci] = kl;
      if (!vn || vn->type != YAML_SCALAR_NODE)
        return sc__error_at(L->ctx, SC_EINVAL, L->file, kl, "calibration.%s: expected a number, got %s",
                       key, vn ? node_kind(vn) : "nothing");
      if ((rc = parse_calib(L->cfg, ci, (const char *)vn->data.scalar.value,
                            vn->data.scalar.length, err, sizeof err)))
        return sc__error_at(L->ctx, rc, L->file, kl, "%s", err);
      continue;
    }
    int fi = find_field(sec, key);
    if (fi < 0) {
      char hint[SC_ERRMSG_MAX], q[256], dotted[128];
      snprintf(dotted, sizeof dotted, "%s.%s", sname, key);
      key_hint(hint, sizeof hint, sec, key);
      return sc__error_at(L->ctx, SC_EINVAL, L->file, kl, "unknown key %s%s",
                     quote(q, sizeof q, dotted, strlen(dotted)), hint);
    }
    if (L->seen[fi])
      return sc__error_at(L->ctx, SC_EINVAL, L->file, kl,
                     "duplicate key \"%s\" (first given on line %d)", fields[fi].name, L->seen[fi]);
    L->seen[fi] = kl;
    const yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
    if (fi == SC_FIELD_cluster_gpu && vn && vn->type == YAML_SCALAR_NODE &&
        sc__gpu_is_file((const char *)vn->data.scalar.value)) {
      if ((rc = include_gpu_file(L, (const char *)vn->data.scalar.value, kl))) return rc;
      continue;
    }
    if ((rc = apply_node(L, fi, vn, kl))) return rc;
  }
  if (!strcmp(sname, "cluster"))
    rederive_cluster(L->cfg, L->seen[SC_FIELD_cluster_num_gpus] != 0,
                     L->seen[SC_FIELD_cluster_nodes] != 0);
  return SC_OK;
}

/* The GPU a fit's provenance mapping names (`fit: {gpu: ...}`), kept in
 * cfg->calibration_gpu. */
static void fit_gpu(loader *L, const yaml_node_t *v) {
  for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
    yaml_node_t *fk = yaml_document_get_node(L->doc, q->key);
    yaml_node_t *fv = yaml_document_get_node(L->doc, q->value);
    if (fk && fv && fk->type == YAML_SCALAR_NODE && fv->type == YAML_SCALAR_NODE &&
        !strcmp((const char *)fk->data.scalar.value, "gpu"))
      sc__strlcpy(L->cfg->calibration_gpu, (const char *)fv->data.scalar.value,
                  sizeof L->cfg->calibration_gpu);
  }
}

static int load_root(loader *L, const yaml_node_t *root) {
  int sec_line[SECTION_COUNT] = {0};
  int rc;
  if (root->type != YAML_MAPPING_NODE) {
    if (is_null(root))
      return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(root),
                     "empty config (expected a mapping with sections such as model, training, "
                     "parallel, cluster)");
    return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(root),
                   "top level must be a mapping of sections (model, training, parallel, cluster, "
                   "simulation, calibration), got %s",
                   node_kind(root));
  }
  int found_calibration = 0;
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
       p++) {
    yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
    const char *key;
    if ((rc = key_text(L, k, "top level", &key))) return rc;
    int kl = node_line(k);
    int sec = find_section(key);
    /* A fit's provenance (the `fit:` mapping calibrate writes beside its
     * calibration): the GPU it was made for is kept for a warning
     * (sc_config_warnings), the rest is for the reader. A calibration file
     * may carry any other top-level data; a config file this one only. */
    if (!strcmp(key, "fit") && v && v->type == YAML_MAPPING_NODE) {
      fit_gpu(L, v);
      continue;
    }
    if (!strcmp(key, "fit") && !L->calibration_file)
      return sc__error_at(L->ctx, SC_EINVAL, L->file, kl,
                          "fit: expected a mapping (a calibration's provenance: gpu: NAME), got %s",
                          v ? node_kind(v) : "nothing");
    if (L->calibration_file) {
      if (sec != SECTION_CALIBRATION) continue;
      if (found_calibration)
        return sc__error_at(L->ctx, SC_EINVAL, L->file, kl,
                       "duplicate key \"calibration\" (first given on line %d)", found_calibration);
      found_calibration = kl;
      if (!v || v->type != YAML_MAPPING_NODE)
        return sc__error_at(L->ctx, SC_EINVAL, L->file, kl,
                       "calibration: expected a mapping of keys, got %s",
                       v ? node_kind(v) : "nothing");
      if ((rc = load_section(L, sec, v, kl))) return rc;
      continue;
    }
    if (sec < 0) {
      char hint[SC_ERRMSG_MAX], q[256];
      section_hint(hint, sizeof hint, key);
      return sc__error_at(L->ctx, SC_EINVAL, L->file, kl, "unknown section %s%s",
                     quote(q, sizeof q, key, strlen(key)), hint);
    }
    if (sec_line[sec])
      return sc__error_at(L->ctx, SC_EINVAL, L->file, kl,
                     "duplicate key \"%s\" (first given on line %d)", key, sec_line[sec]);
    sec_line[sec] = kl;
    if (!v) return sc__error_at(L->ctx, SC_EINVAL, L->file, kl, "%s: missing value", key);
    if ((rc = load_section(L, sec, v, kl))) return rc;
  }
  if (L->calibration_file && !found_calibration)
    return sc__error_at(L->ctx, SC_EINVAL, L->file, node_line(root),
                   "no top-level \"calibration:\" mapping in calibration file");
  return SC_OK;
}

/* Line (1-based) of a byte offset, for reader errors that carry only an
 * offset. */
static int line_of_offset(const char *text, size_t len, size_t offset) {
  int line = 1;
  for (size_t i = 0; i < offset && i < len; i++)
    if (text[i] == '\n') line++;
  return line;
}

static int yaml_failure(sc_ctx *ctx, const char *file, const yaml_parser_t *p, const char *text,
                        size_t len) {
  const char *problem = p->problem ? p->problem : "unknown error";
  switch (p->error) {
  case YAML_MEMORY_ERROR:
    return sc__error(ctx, SC_ENOMEM, "%s: out of memory while parsing YAML", file);
  case YAML_READER_ERROR:
    if (p->problem_value >= 0)
      return sc__error_at(ctx, SC_EINVAL, file, line_of_offset(text, len, p->problem_offset),
                     "invalid YAML input: %s (byte 0x%02x at offset %zu)", problem,
                     (unsigned)p->problem_value & 0xffu, p->problem_offset);
    return sc__error_at(ctx, SC_EINVAL, file, line_of_offset(text, len, p->problem_offset),
                   "invalid YAML input: %s", problem);
  default: {
    int line = (int)p->problem_mark.line + 1;
    int col = (int)p->problem_mark.column + 1;
    if (p->context)
      return sc__error_at(ctx, SC_EINVAL, file, line,
                     "YAML syntax error: %s at column %d (%s at line %d)", problem, col, p->context,
                     (int)p->context_mark.line + 1);
    return sc__error_at(ctx, SC_EINVAL, file, line, "YAML syntax error: %s at column %d", problem, col);
  }
  }
}

/* Configs nest three levels (section, key, value); anything deeper than this
 * is not a config, and libyaml's document loader takes time quadratic in the
 * depth (seconds at 40,000 levels), so the depth is checked first with the
 * event parser, which is linear. */
#define MAX_YAML_DEPTH 32

/* 0 when text nests at most MAX_YAML_DEPTH deep (or does not parse: the
 * loader then reports the syntax error), else SC_EINVAL with the line. */
static int check_depth(sc_ctx *ctx, const char *file, const char *text, size_t len) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return sc__error(ctx, SC_ENOMEM, "%s: out of memory while parsing YAML", file);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int depth = 0, rc = SC_OK;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) break;
    yaml_event_type_t type = ev.type;
    int line = (int)ev.start_mark.line + 1;
    yaml_event_delete(&ev);
    if (type == YAML_STREAM_END_EVENT) break;
    if (type == YAML_MAPPING_START_EVENT || type == YAML_SEQUENCE_START_EVENT) {
      if (++depth > MAX_YAML_DEPTH) {
        rc = sc__error_at(ctx, SC_EINVAL, file, line,
                          "YAML nested deeper than %d levels (a config has sections, keys "
                          "and values)",
                          MAX_YAML_DEPTH);
        break;
      }
    } else if (type == YAML_MAPPING_END_EVENT || type == YAML_SEQUENCE_END_EVENT) {
      depth--;
    }
  }
  yaml_parser_delete(&parser);
  return rc;
}

/* Parses one YAML text into *work (see loader). The text must be one
 * document whose root is a mapping. */
static int load_text(sc_ctx *ctx, sc_config *work, const char *file, const char *text, size_t len,
                     int calibration_file, int include_line) {
  yaml_parser_t parser;
  yaml_document_t doc;
  int drc = check_depth(ctx, file, text, len);
  if (drc) return drc;
  if (!yaml_parser_initialize(&parser))
    return sc__error(ctx, SC_ENOMEM, "%s: out of memory while parsing YAML", file);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    int rc = yaml_failure(ctx, file, &parser, text, len);
    yaml_parser_delete(&parser);
    return rc;
  }
  int rc = SC_OK;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root) {
    rc = sc__error_at(ctx, SC_EINVAL, file, 1,
                 "empty config (expected a mapping with sections such as model, training, "
                 "parallel, cluster)");
  } else {
    loader L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.cfg = work;
    L.file = file;
    L.doc = &doc;
    L.calibration_file = calibration_file;
    L.include_line = include_line;
    rc = load_root(&L, root);
  }
  yaml_document_delete(&doc);
  if (rc == SC_OK) {
    /* A second document would be silently ignored otherwise. */
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
      rc = yaml_failure(ctx, file, &parser, text, len);
    } else {
      yaml_node_t *r2 = yaml_document_get_root_node(&extra);
      if (r2)
        rc = sc__error_at(ctx, SC_EINVAL, file, node_line(r2),
                     "more than one YAML document (a config is a single mapping)");
      yaml_document_delete(&extra);
    }
  }
  yaml_parser_delete(&parser);
  return rc;
}

int sc_config_load_string(sc_ctx *ctx, sc_config *cfg, const char *name, const char *text,
                          size_t len) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || (!text && len)) return sc__error(ctx, SC_EINVAL, "sc_config_load_string: no input");
  if (!name) name = "<string>";
  sc_config work = *cfg;
  sc__strlcpy(work.origin, name, sizeof work.origin);
  int rc = load_text(ctx, &work, name, text ? text : "", len, 0, 0);
  if (rc) return rc;
  *cfg = work;
  return SC_OK;
}

int sc_config_load_file(sc_ctx *ctx, sc_config *cfg, const char *path) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !path) return sc__error(ctx, SC_EINVAL, "sc_config_load_file: no path");
  char *text;
  size_t len, cap;
  int rc = read_file(ctx, path, NULL, &text, &len, &cap);
  if (rc) return rc;
  rc = sc_config_load_string(ctx, cfg, path, text, len);
  sc__free(ctx, text, cap);
  return rc;
}

int sc_config_load_calibration(sc_ctx *ctx, sc_config *cfg, const char *path) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !path) return sc__error(ctx, SC_EINVAL, "sc_config_load_calibration: no path");
  char *text;
  size_t len, cap;
  int rc = read_file(ctx, path, NULL, &text, &len, &cap);
  if (rc) return rc;
  sc_config work = *cfg;
  rc = load_text(ctx, &work, path, text, len, 1, 0);
  sc__free(ctx, text, cap);
  if (!rc) *cfg = work;
  return rc;
}

/* ---------------------------------------------------------------- --set */

static void trim(const char **s, size_t *n) {
  while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\n' ||
                (*s)[*n - 1] == '\r'))
    (*n)--;
}

/* " (did you mean ...)" for an unknown dotted --set key. */
static void dotted_hint(char *buf, size_t n, const char *dotted) {
  size_t len = 0;
  int best = -1, best_d = 1000;
  buf[0] = 0;
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    int d = edit_distance(dotted, fields[i].name);
    if (d < best_d) best_d = d, best = i;
  }
  if (best >= 0 && close_enough(dotted, best_d)) {
    appendf(buf, n, &len, " (did you mean \"%s\"?)", fields[best].name);
    return;
  }
  const char *dot = strrchr(dotted, '.');
  const char *key = dot ? dot + 1 : dotted;
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    if (!strcmp(fields[i].key, key)) {
      appendf(buf, n, &len, " (did you mean \"%s\"?)", fields[i].name);
      return;
    }
  }
}

int sc_config_set(sc_ctx *ctx, sc_config *cfg, const char *assignment) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !assignment) return sc__error(ctx, SC_EINVAL, "--set: no assignment");
  char q[256], err[SC_ERRMSG_MAX];
  const char *eq = strchr(assignment, '=');
  if (!eq)
    return sc__error(ctx, SC_EINVAL, "--set: expected SECTION.KEY=VALUE, got %s",
                     quote(q, sizeof q, assignment, strlen(assignment)));
  const char *k = assignment, *v = eq + 1;
  size_t kn = (size_t)(eq - assignment), vn = strlen(v);
  trim(&k, &kn);
  trim(&v, &vn);
  char key[128], value[4096];
  if (kn >= sizeof key)
    return sc__error(ctx, SC_EINVAL, "--set: unknown key %s", quote(q, sizeof q, k, kn));
  if (vn >= sizeof value)
    return sc__error(ctx, SC_EINVAL, "--set: value of %.*s too long", (int)kn, k);
  memcpy(key, k, kn);
  key[kn] = 0;
  memcpy(value, v, vn);
  value[vn] = 0;
  sc_config work = *cfg;
  int rc;
  if (!strcmp(key, "calibration")) {
    /* --set calibration=site.yaml: a calibration file, relative to the cwd. */
    char *text;
    size_t len, cap;
    if (!vn) return sc__error(ctx, SC_EINVAL, "--set: calibration: expected a file path");
    if ((rc = read_file(ctx, value, "--set", &text, &len, &cap))) return rc;
    rc = load_text(ctx, &work, value, text, len, 1, SC_CONFIG_LINE_SET);
    sc__free(ctx, text, cap);
    if (rc) return rc;
    *cfg = work;
    return SC_OK;
  }
  if (!strncmp(key, "calibration.", 12)) {
    int ci = sc__calib_key_find(key + 12);
    if (ci < 0) {
      char hint[SC_ERRMSG_MAX];
      calib_hint(hint, sizeof hint, key + 12);
      return sc__error(ctx, SC_EINVAL, "--set: unknown key %s%s", quote(q, sizeof q, key, kn),
                       hint);
    }
    if ((rc = parse_calib(&work, ci, value, vn, err, sizeof err)))
      return sc__error(ctx, rc, "--set: %s", err);
    *cfg = work;
    return SC_OK;
  }
  int fi = sc_config_field_index(key);
  if (fi < 0) {
    char hint[SC_ERRMSG_MAX];
    dotted_hint(hint, sizeof hint, key);
    return sc__error(ctx, SC_EINVAL, "--set: unknown key %s%s", quote(q, sizeof q, key, kn), hint);
  }
  if (fi == SC_FIELD_cluster_gpu && sc__gpu_is_file(value)) { /* relative to the cwd */
    if ((rc = apply_gpu_file(ctx, &work, value, "--set", SC_CONFIG_LINE_SET))) return rc;
    *cfg = work;
    return SC_OK;
  }
  if (fi == SC_FIELD_model_hf_config) { /* a config.json, relative to the cwd */
    if (!vn) return sc__error(ctx, SC_EINVAL, "--set: model.hf_config: expected a file path");
    if ((rc = apply_hf(ctx, &work, value, "--set", SC_CONFIG_LINE_SET))) return rc;
    *cfg = work;
    return SC_OK;
  }
  if ((rc = parse_field(&work, fi, value, vn, err, sizeof err)))
    return sc__error(ctx, rc, "--set: %s", err);
  mark_line(&work, fi, SC_CONFIG_LINE_SET);
  rederive_cluster(&work, fi == SC_FIELD_cluster_num_gpus, fi == SC_FIELD_cluster_nodes);
  *cfg = work;
  return SC_OK;
}

/* ---------------------------------------------------------------- resolve */

const char *sc__config_where(const sc_config *cfg, int field, char *buf, size_t n) {
  if (!n) return buf;
  int line = field >= 0 && field < SC_FIELD_COUNT ? cfg->field_line[field] : 0;
  int olen = (int)strnlen(cfg->origin, sizeof cfg->origin);
  const char *origin = olen ? cfg->origin : "<config>";
  if (!olen) olen = (int)strlen(origin);
  if (line == SC_CONFIG_LINE_SET)
    snprintf(buf, n, "--set");
  else if (line > 0)
    snprintf(buf, n, "%.*s:%d", olen, origin, line);
  else
    snprintf(buf, n, "%.*s", olen, origin);
  return buf;
}

/* The location of the first of up to three fields that was given somewhere
 * (file line or --set); the origin when all are defaults. */
static const char *where_any(const sc_config *cfg, char *buf, size_t n, int a, int b, int c) {
  int list[3] = {a, b, c};
  for (int i = 0; i < 3; i++)
    if (list[i] >= 0 && cfg->field_line[list[i]] != 0)
      return sc__config_where(cfg, list[i], buf, n);
  return sc__config_where(cfg, -1, buf, n);
}

/* Product that saturates at INT64_MAX instead of overflowing (inputs >= 0). */
static int64_t mul_sat(int64_t a, int64_t b) {
  if (a && b > INT64_MAX / a) return INT64_MAX;
  return a * b;
}

static double precision_peak(const sc_hw *hw, sc_precision p) {
  switch (p) {
  case SC_PREC_FP32: return hw->fp32_tflops;
  case SC_PREC_FP8: return hw->fp8_tflops;
  default: return hw->bf16_tflops; /* fp16 equals bf16 on every preset (stepcast.h) */
  }
}

/* All derivations and cross-field checks; *c is a working copy. */
/* Layers per pipeline stage. Even when pp * vpp divides the layers (or the
 * units, counting the embedding / loss as layers); otherwise first and last
 * stages as given or derived (equal middle stages of ceil(layers / pp),
 * rounded up to whole chunks, the rest split between the ends). Every
 * stage's layers must split into its vpp chunks. Fills pp_first_layers and
 * pp_last_layers when the split is uneven. */
static int resolve_pipeline_split(sc_ctx *ctx, sc_config *c) {
  const sc_model_cfg *m = &c->model;
  sc_parallel_cfg *p = &c->parallel;
  char w[320];
  int64_t L = m->layers, pp = p->pp, v = p->vpp, F = p->pp_first_layers, Z = p->pp_last_layers;
  int counted = p->pp_embedding_in_split || p->pp_loss_in_split;
  if (counted && (F || Z))
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.pp_first_layers / pp_last_layers and "
                     "pp_embedding_in_split / pp_loss_in_split are two ways to balance the "
                     "stages: give one",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_pp_first_layers,
                               SC_FIELD_parallel_pp_last_layers,
                               SC_FIELD_parallel_pp_embedding_in_split));
  if (pp == 1) {
    if ((F && F != L) || (Z && Z != L) || counted) {
      if (!counted)
        return sc__error(ctx, SC_EINVAL,
                         "%s: parallel.pp_first_layers / pp_last_layers need parallel.pp > 1",
                         where_any(c, w, sizeof w, SC_FIELD_parallel_pp_first_layers,
                                   SC_FIELD_parallel_pp_last_layers, -1));
    }
    p->pp_first_layers = p->pp_last_layers = 0;
    if (L % v)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.vpp=%" PRId64 " does not divide model.layers=%" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_parallel_vpp, SC_FIELD_model_layers, -1),
                       v, L);
    return SC_OK;
  }
  if (counted) {
    int64_t units = L + p->pp_embedding_in_split + p->pp_loss_in_split;
    if (units % mul_sat(pp, v))
      return sc__error(ctx, SC_EINVAL,
                       "%s: model.layers=%" PRId64 " plus the embedding / loss counted as layers "
                       "(%" PRId64 " units) do not split over parallel.pp*vpp = %" PRId64
                       "*%" PRId64 " model chunks",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp_embedding_in_split,
                                 SC_FIELD_parallel_pp_loss_in_split, SC_FIELD_parallel_pp),
                       L, units, pp, v);
    return SC_OK;
  }
  int given = F || Z;
  if (!given && L % mul_sat(pp, v) == 0 && L >= pp * v) return SC_OK;
  if (!given && (p->schedule == SC_SCHED_ZBV || p->schedule == SC_SCHED_DUALPIPEV))
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.schedule=%s splits model.layers=%" PRId64
                     " evenly over 2 * pp = %" PRId64 " model chunks: it must divide them",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_schedule, SC_FIELD_parallel_pp,
                               SC_FIELD_model_layers),
                     sc_enum_name(SC_ENUM_SCHEDULE, p->schedule), L, 2 * pp);
  if (!given) { /* derive: equal middle stages, the rest at the ends */
    int64_t mid = (L + pp - 1) / pp;
    mid = (mid + v - 1) / v * v;
    int64_t rest = L - (pp - 2) * mid;
    F = rest / 2 / v * v;
    Z = rest - F;
    if (pp == 2) F = L / 2 / v * v, Z = L - F;
    if (F < v || Z < v || Z % v || (pp > 2 && mid * (pp - 2) + F + Z != L))
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.pp*vpp = %" PRId64 "*%" PRId64
                       " does not divide model.layers=%" PRId64
                       " and no split with equal middle stages fits; give "
                       "parallel.pp_first_layers and pp_last_layers",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp, SC_FIELD_model_layers,
                                 SC_FIELD_parallel_vpp),
                       pp, v, L);
  } else {
    /* One end given: the other stages (the other end included) share the
     * rest evenly. */
    int64_t others = pp - (F ? 1 : 0) - (Z ? 1 : 0);
    int64_t rest = L - F - Z;
    if (rest < 0 || (others == 0 && rest != 0) || (others > 0 && rest < others))
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.pp_first_layers + pp_last_layers = %" PRId64 " + %" PRId64
                       " leave %" PRId64 " of model.layers=%" PRId64 " for %" PRId64
                       " other stages (each needs at least one)",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp_first_layers,
                                 SC_FIELD_parallel_pp_last_layers, SC_FIELD_model_layers),
                       F, Z, rest, L, others);
    if (others > 0 && rest % others)
      return sc__error(ctx, SC_EINVAL,
                       "%s: the %" PRId64 " layers left by parallel.pp_first_layers / "
                       "pp_last_layers do not split evenly over the other %" PRId64 " stages",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp_first_layers,
                                 SC_FIELD_parallel_pp_last_layers, SC_FIELD_parallel_pp),
                       rest, others);
    int64_t each = others > 0 ? rest / others : 0;
    if (!F) F = each;
    if (!Z) Z = each;
    int64_t mid = pp > 2 ? (L - F - Z) / (pp - 2) : 0;
    /* Megatron divides each stage's layers evenly over its chunks. When the
     * ends do not divide, torchtitan's split (generate_split_points: equal
     * virtual stages except the very first and last) is the one that
     * fits: every chunk holds mid / vpp layers but the first stage's chunk
     * 0 and the last stage's last chunk, which hold fewer (Llama 3 405B, 126
     * layers over pp 8 x vpp 2: 7 + 8 x 14 + 7, i.e. 15 / 16 / 15). */
    int short_ends = pp > 2 && v > 1 && mid % v == 0 && (F % v || Z % v) &&
                     F <= mid && Z <= mid && F > mid - mid / v && Z > mid - mid / v;
    if (!short_ends && (F % v || Z % v || mid % v))
      return sc__error(ctx, SC_EINVAL,
                       "%s: stage layers %" PRId64 " (first), %" PRId64 " (middle), %" PRId64
                       " (last) do not split into parallel.vpp=%" PRId64 " model chunks",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp_first_layers,
                                 SC_FIELD_parallel_pp_last_layers, SC_FIELD_parallel_vpp),
                       F, mid, Z, v);
  }
  p->pp_first_layers = F;
  p->pp_last_layers = Z;
  return SC_OK;
}

/* Mixture of experts (docs/MOE.md): derived defaults and Megatron-Core's
 * rules. A dense model takes no MoE keys and ep = 1; an MoE model's ep
 * divides the experts, etp the expert FFN, and the expert grid (etp
 * fastest, then ep, then expert-data-parallel ranks) must tile the
 * tp * cp * dp ranks of a stage. Megatron-Core requires sequence
 * parallelism for MoE with tp > 1 (its token dispatchers take SP-split
 * tokens). */
static int resolve_moe(sc_ctx *ctx, sc_config *c) {
  sc_model_cfg *m = &c->model;
  sc_parallel_cfg *p = &c->parallel;
  char w[320];
  if (!m->moe_experts) {
    static const int moe_keys[] = {SC_FIELD_model_moe_topk, SC_FIELD_model_moe_ffn_hidden,
                                   SC_FIELD_model_moe_shared_experts,
                                   SC_FIELD_model_moe_dense_layers,
                                   SC_FIELD_model_moe_capacity_factor,
                                   SC_FIELD_model_moe_router_balance,
                                   SC_FIELD_model_moe_layer_freq};
    const double vals[] = {(double)m->moe_topk,           (double)m->moe_ffn_hidden,
                           (double)m->moe_shared_experts, (double)m->moe_dense_layers,
                           m->moe_capacity_factor,        m->moe_router_balance,
                           (double)m->moe_layer_freq};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
      if (vals[i] != 0)
        return sc__error(ctx, SC_EINVAL, "%s: %s needs model.moe_experts (a dense model)",
                         sc__config_where(c, moe_keys[i], w, sizeof w),
                         sc_config_field_name(moe_keys[i]));
    if (p->ep > 1)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.ep=%" PRId64 " needs model.moe_experts (expert parallelism)",
                       sc__config_where(c, SC_FIELD_parallel_ep, w, sizeof w), p->ep);
    /* parallel.etp and the MoE overlap flags have no effect on a dense model;
     * they stay accepted so that one file can switch MoE on and off. */
    return SC_OK;
  }
  if (!m->moe_topk) m->moe_topk = 2;
  if (!m->moe_ffn_hidden) m->moe_ffn_hidden = m->ffn_hidden;
  if (m->moe_router_balance == 0) m->moe_router_balance = 1.0;
  /* etp 0 stays 0 (= tp, derived where it is used: sc__shape_init), so a
   * config resolved once keeps following tp when tp changes (sweep). */
  int64_t etp = p->etp ? p->etp : p->tp;
  if (m->moe_topk > m->moe_experts)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.moe_topk=%" PRId64 " exceeds model.moe_experts=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_model_moe_topk,
                               SC_FIELD_model_moe_experts, -1),
                     m->moe_topk, m->moe_experts);
  if (m->moe_dense_layers > m->layers)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.moe_dense_layers=%" PRId64 " exceeds model.layers=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_model_moe_dense_layers,
                               SC_FIELD_model_layers, -1),
                     m->moe_dense_layers, m->layers);
  if (m->moe_experts % p->ep)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.ep=%" PRId64 " does not divide model.moe_experts=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_parallel_ep, SC_FIELD_model_moe_experts,
                               -1),
                     p->ep, m->moe_experts);
  if (m->moe_ffn_hidden % etp)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.etp=%" PRId64 " does not divide model.moe_ffn_hidden=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_parallel_etp,
                               SC_FIELD_model_moe_ffn_hidden, -1),
                     etp, m->moe_ffn_hidden);
  if ((m->moe_shared_experts * m->moe_ffn_hidden) % p->tp)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.tp=%" PRId64 " does not divide the shared experts' width "
                     "model.moe_shared_experts*moe_ffn_hidden = %" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_model_moe_shared_experts,
                               SC_FIELD_parallel_tp, -1),
                     p->tp, m->moe_shared_experts * m->moe_ffn_hidden);
  int64_t block = mul_sat(mul_sat(p->tp, p->cp), p->dp), grid = mul_sat(p->ep, etp);
  if (grid > block || block % grid)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.ep*etp = %" PRId64 "*%" PRId64 " = %" PRId64
                     " does not divide the ranks of a pipeline stage, tp*cp*dp = %" PRId64
                     "*%" PRId64 "*%" PRId64 " = %" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_parallel_ep, SC_FIELD_parallel_etp,
                               SC_FIELD_parallel_tp),
                     p->ep, etp, grid, p->tp, p->cp, p->dp, block);
  /* Megatron-Core's MoE layers take sequence-parallel tokens: on unless
   * the config turned it off. */
  if (p->tp > 1 && !p->sequence_parallel && !c->field_line[SC_FIELD_parallel_sequence_parallel])
    p->sequence_parallel = 1;
  if (p->tp > 1 && !p->sequence_parallel)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.moe_experts with parallel.tp=%" PRId64
                     " needs parallel.sequence_parallel (Megatron-Core's MoE layers take "
                     "sequence-parallel tokens)",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_sequence_parallel,
                               SC_FIELD_parallel_tp, SC_FIELD_model_moe_experts),
                     p->tp);
  return SC_OK;
}

/* Multi-head latent attention (docs/MOE.md): its keys need the K/V rank;
 * every head has its own K and V after the up-projection (kv_heads =
 * heads); it runs on fused attention, and context parallelism over it is
 * not modelled. */
static int resolve_mla(sc_ctx *ctx, sc_config *c) {
  sc_model_cfg *m = &c->model;
  char w[320];
  if (!m->mla_kv_lora_rank) {
    static const int keys[] = {SC_FIELD_model_mla_q_lora_rank, SC_FIELD_model_mla_rope_dim,
                               SC_FIELD_model_mla_v_head_dim};
    const int64_t vals[] = {m->mla_q_lora_rank, m->mla_rope_dim, m->mla_v_head_dim};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
      if (vals[i])
        return sc__error(ctx, SC_EINVAL,
                         "%s: %s needs model.mla_kv_lora_rank (multi-head latent attention)",
                         sc__config_where(c, keys[i], w, sizeof w), sc_config_field_name(keys[i]));
    return SC_OK;
  }
  if (!m->mla_rope_dim) m->mla_rope_dim = 64;
  if (!m->mla_v_head_dim) m->mla_v_head_dim = m->head_dim;
  if (m->kv_heads != m->heads)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.mla_kv_lora_rank (multi-head latent attention) gives every head "
                     "its own keys and values: model.kv_heads=%" PRId64
                     " must equal model.heads=%" PRId64 " or be left out",
                     where_any(c, w, sizeof w, SC_FIELD_model_kv_heads,
                               SC_FIELD_model_mla_kv_lora_rank, -1),
                     m->kv_heads, m->heads);
  if (c->training.attention == SC_ATTN_UNFUSED)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.mla_kv_lora_rank needs fused attention (training.attention=flash "
                     "or cudnn)",
                     where_any(c, w, sizeof w, SC_FIELD_training_attention,
                               SC_FIELD_model_mla_kv_lora_rank, -1));
  return SC_OK;
}

/* training.recompute=op_sac (torchtitan's op-level selective activation
 * checkpointing) is modelled for what torchtitan runs it on: dense blocks
 * (MoE FFNs and multi-head latent attention change the matmul order the
 * policy counts, and are not modelled under it), a fused attention kernel
 * (the policy keeps SDPA's output; the unfused path is separate ops) and,
 * with tp > 1, sequence parallelism (torchtitan's TP plan; its policy
 * saves reduce-scatter outputs, an all-reduce would be re-run). */
static int check_op_sac(sc_ctx *ctx, const sc_config *c) {
  if (c->training.recompute != SC_RECOMPUTE_OP_SAC) return SC_OK;
  char w[320], why[200];
  int at = -1, also = -1;
  if (c->model.moe_experts > 0 || c->model.mla_kv_lora_rank > 0) {
    int moe = c->model.moe_experts > 0;
    at = moe ? SC_FIELD_model_moe_experts : SC_FIELD_model_mla_kv_lora_rank;
    snprintf(why, sizeof why, "is modelled for dense models only, not for %s (use selective or full)",
             moe ? "mixture-of-experts layers" : "multi-head latent attention");
  } else if (c->training.attention == SC_ATTN_UNFUSED) {
    at = SC_FIELD_training_attention;
    snprintf(why, sizeof why, "needs fused attention (training.attention=flash or cudnn): its "
             "policy keeps the attention kernel's output");
  } else if (c->parallel.tp > 1 && !c->parallel.sequence_parallel) {
    at = SC_FIELD_parallel_tp, also = SC_FIELD_parallel_sequence_parallel;
    snprintf(why, sizeof why, "with parallel.tp=%" PRId64 " needs parallel.sequence_parallel "
             "(torchtitan's TP plan; its policy keeps reduce-scatter outputs, not all-reduce ones)",
             c->parallel.tp);
  } else {
    return SC_OK;
  }
  return sc__error(ctx, SC_EINVAL, "%s: training.recompute=op_sac %s",
                   where_any(c, w, sizeof w, SC_FIELD_training_recompute, at, also), why);
}

/* Offload to host memory (training.optimizer_offload,
 * activation_offload_layers) is modelled where its sources run it.
 * Activation offload as Megatron-Core's TransformerConfig allows it: fewer
 * layers than the model has ("CPU offloading can be done only for layers
 * less than num_layers"), no pipeline parallelism ("no support for Pipeline
 * parallelism with CPU offloading"), no recomputation ("CPU offloading does
 * not work when activation recomputation is enabled"); not with FSDP, whose
 * per-unit gathers the copies would interleave with (not modelled). The
 * optimizer's offload not with FSDP either (FSDP2's CPUOffloadPolicy moves
 * parameters and gradients too). Both need a host link, and a CPU step the
 * host's memory bandwidth (a GPU file may not give them). */
static int check_offload(sc_ctx *ctx, const sc_config *c) {
  const sc_training_cfg *t = &c->training;
  char w[320];
  if (t->activation_offload_layers > 0) {
    char why[240];
    int at = -1;
    if (t->activation_offload_layers >= c->model.layers) {
      at = SC_FIELD_model_layers;
      snprintf(why, sizeof why, "=%" PRId64 " must be fewer than model.layers=%" PRId64
               " (Megatron-Core offloads at most num_layers - 1: the last layer's activations "
               "are the first the backward needs)", t->activation_offload_layers,
               c->model.layers);
    } else if (c->parallel.pp > 1) {
      at = SC_FIELD_parallel_pp;
      snprintf(why, sizeof why, " needs parallel.pp=1, not %" PRId64 " (Megatron-Core: no CPU "
               "offloading with pipeline parallelism; training.optimizer_offload works with it)",
               c->parallel.pp);
    } else if (t->recompute != SC_RECOMPUTE_NONE) {
      at = SC_FIELD_training_recompute;
      snprintf(why, sizeof why, " needs training.recompute=none, not %s (Megatron-Core: CPU "
               "offloading does not work with activation recomputation)",
               sc_enum_name(SC_ENUM_RECOMPUTE, t->recompute));
    } else if (c->parallel.zero_stage >= 3) {
      at = SC_FIELD_parallel_zero_stage;
      snprintf(why, sizeof why, " is not modelled with parallel.zero_stage=3 (FSDP)");
    } else if (c->parallel.schedule != SC_SCHED_1F1B && c->parallel.schedule != SC_SCHED_GPIPE) {
      at = SC_FIELD_parallel_schedule;
      snprintf(why, sizeof why, " is not modelled with parallel.schedule=%s (a split backward "
               "keeps the weight-gradient inputs past the reload)",
               sc_enum_name(SC_ENUM_SCHEDULE, (int)c->parallel.schedule));
    }
    if (at >= 0)
      return sc__error(ctx, SC_EINVAL, "%s: training.activation_offload_layers%s",
                       where_any(c, w, sizeof w, SC_FIELD_training_activation_offload_layers, at,
                                 -1),
                       why);
  }
  if (t->optimizer_offload > 0 && c->parallel.zero_stage >= 3)
    return sc__error(ctx, SC_EINVAL,
                     "%s: training.optimizer_offload is not modelled with parallel.zero_stage=3 "
                     "(FSDP's CPU offload also moves parameters and gradients)",
                     where_any(c, w, sizeof w, SC_FIELD_training_optimizer_offload,
                               SC_FIELD_parallel_zero_stage, -1));
  /* the host figures a GPU file may leave out */
  int offload = t->optimizer_offload > 0 || t->activation_offload_layers > 0;
  int cpu_step = t->optimizer_offload > 0 && t->optimizer_offload_cpu_step;
  const char *need = NULL, *what = NULL;
  if (offload && c->cluster.host_link_gbps <= 0)
    need = "cluster.host_link_gbps", what = "offload to host memory";
  else if (cpu_step && c->cluster.host_mem_gbps <= 0)
    need = "cluster.host_mem_gbps", what = "a CPU optimizer step";
  if (need)
    return sc__error(ctx, SC_EINVAL, "%s: %s needs %s (the GPU %s gives no value)",
                     where_any(c, w, sizeof w, SC_FIELD_training_optimizer_offload,
                               SC_FIELD_training_activation_offload_layers, SC_FIELD_cluster_gpu),
                     what, need, c->cluster.gpu);
  return SC_OK;
}

/* The fields nothing can stand in for: the model's shape (from a preset, a
 * config.json or the keys themselves) and the GPU. All the missing ones are
 * named in one message, at the first line of the model section the config
 * gave (or its file). */
static int first_given(const sc_config *c, const char *section) {
  int first = -1;
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if (!strcmp(fields[i].section, section) && c->field_line[i] > 0 &&
        (first < 0 || c->field_line[i] < c->field_line[first]))
      first = i;
  return first;
}

static int check_required(sc_ctx *ctx, const sc_config *c) {
  static const int shape[] = {SC_FIELD_model_layers, SC_FIELD_model_hidden, SC_FIELD_model_heads,
                              SC_FIELD_model_vocab, SC_FIELD_model_seq_len};
  char missing[160] = "", w[320];
  size_t len = 0;
  int nmiss = 0, first = first_given(c, "model");
  for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
    if (get_i64(c, &fields[shape[i]]) == 0)
      appendf(missing, sizeof missing, &len, "%s%s", nmiss++ ? ", " : "", fields[shape[i]].key);
  }
  if (nmiss) {
    const char *where = first >= 0 ? sc__config_where(c, first, w, sizeof w) : c->origin;
    int gave_model = first >= 0 || c->field_line[SC_FIELD_model_hf_config] != SC_LINE_DEFAULT;
    return sc__error(ctx, SC_EINVAL,
                     "%s: model: %s %s missing: give %s, or a model.preset or model.hf_config "
                     "(docs/CONFIG.md)",
                     where, missing, nmiss > 1 ? "are" : "is",
                     gave_model ? "them" : "model.layers, hidden, heads, vocab and seq_len");
  }
  if (!c->cluster.gpu[0] && !uses_gpu_file(c)) {
    int cl = first_given(c, "cluster");
    return sc__error(ctx, SC_EINVAL,
                     "%s: cluster.gpu is missing: give a preset name (stepcast hw list) or a GPU "
                     "file (stepcast hw show NAME --format yaml)",
                     cl >= 0 ? sc__config_where(c, cl, w, sizeof w) : c->origin);
  }
  return SC_OK;
}

static int resolve(sc_ctx *ctx, sc_config *c) {
  char w[320], err[SC_ERRMSG_MAX];
  int rc;
  /* A config.json gives the shape, never the training length. */
  if (c->field_line[SC_FIELD_model_hf_config] != SC_LINE_DEFAULT &&
      c->field_line[SC_FIELD_model_seq_len] == SC_LINE_DEFAULT)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.hf_config gives the model's shape: give model.seq_len, the "
                     "sequence length the run trains on (a config.json's "
                     "max_position_embeddings is the longest the model supports)",
                     sc__config_where(c, SC_FIELD_model_hf_config, w, sizeof w));
  if ((rc = check_required(ctx, c))) return rc;
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if ((rc = check_field(c, i, err, sizeof err)))
      return sc__error(ctx, rc, "%s: %s", sc__config_where(c, i, w, sizeof w), err);
  for (int i = 0; i < SC_CALIB_KEY_COUNT; i++) {
    double v = sc__calib_get(&c->costs, i);
    if (!isfinite(v)) rc = sc__calib_key_check(i, NAN, err, sizeof err);
    else rc = sc__calib_key_check(i, v, err, sizeof err);
    if (rc) return sc__error(ctx, rc, "%s: %s", sc__config_where(c, -1, w, sizeof w), err);
  }
  sc_model_cfg *m = &c->model;
  sc_parallel_cfg *p = &c->parallel;
  sc_cluster_cfg *cl = &c->cluster;
  sc_training_cfg *t = &c->training;

  /* Model shape. Without a head dim Megatron-LM requires hidden % heads == 0
   * (head dim h/a); with one (kv_channels) the query width a*d is free. */
  if (!m->kv_heads) m->kv_heads = m->heads;
  if (!m->ffn_hidden) m->ffn_hidden = default_ffn_hidden(m->hidden, m->activation);
  if (!m->head_dim && m->hidden % m->heads)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.hidden=%" PRId64 " is not a multiple of model.heads=%" PRId64
                     " (or give model.head_dim)",
                     where_any(c, w, sizeof w, SC_FIELD_model_hidden, SC_FIELD_model_heads, -1),
                     m->hidden, m->heads);
  if (!m->head_dim) m->head_dim = m->hidden / m->heads;
  /* Gated and squared-ReLU models are trained without dropout unless told. */
  if (m->activation != SC_ACT_GELU && c->field_line[SC_FIELD_model_dropout] == 0) m->dropout = 0;
  if (m->kv_heads > m->heads || m->heads % m->kv_heads)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.kv_heads=%" PRId64 " does not divide model.heads=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_model_kv_heads, SC_FIELD_model_heads, -1),
                     m->kv_heads, m->heads);

  /* Cluster: hardware defaults, then num_gpus <-> nodes. */
  sc_hw hw_own;
  const sc_hw *hw = sc__config_gpu(c, &hw_own); /* known: check_field passed */
  if (!hw) return sc__error(ctx, SC_EINVAL, "%s: unknown gpu", c->origin);
  int gpn_derived = cl->gpus_per_node == 0;
  if (gpn_derived) cl->gpus_per_node = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
  if (cl->nic_gbps == 0) cl->nic_gbps = hw->nic_gbps;
  if (cl->nvlink_gbps == 0) cl->nvlink_gbps = hw->nvlink_gbps;
  /* Host-memory offload: the host link and, for a CPU optimizer step, the
   * host's memory bandwidth from the GPU preset (left 0 without offload). */
  if (c->training.optimizer_offload > 0 || c->training.activation_offload_layers > 0) {
    if (cl->host_link_gbps == 0) cl->host_link_gbps = hw->host_link_gbps;
    if (c->training.optimizer_offload > 0 && c->training.optimizer_offload_cpu_step &&
        cl->host_mem_gbps == 0)
      cl->host_mem_gbps = hw->host_mem_gbps;
  }
  /* Without a cluster size, a given data-parallel degree sizes the job. */
  if (!cl->num_gpus && !cl->nodes && p->dp)
    cl->num_gpus = mul_sat(mul_sat(mul_sat(p->tp, p->pp), p->cp), p->dp);
  if (!cl->num_gpus && !cl->nodes) {
    int at = first_given(c, "cluster");
    return sc__error(
        ctx, SC_EINVAL, "%s: cluster: give cluster.num_gpus or cluster.nodes (or parallel.dp)",
        at >= 0 ? sc__config_where(c, at, w, sizeof w)
                : where_any(c, w, sizeof w, SC_FIELD_cluster_num_gpus, SC_FIELD_cluster_nodes, -1));
  }
  if (!cl->num_gpus) {
    cl->num_gpus = mul_sat(cl->nodes, cl->gpus_per_node);
    if (cl->num_gpus > (int64_t)fields[SC_FIELD_cluster_num_gpus].hi)
      return sc__error(
          ctx, SC_EINVAL, "%s: cluster.nodes*gpus_per_node = %" PRId64 "*%" PRId64 " is too large",
          where_any(c, w, sizeof w, SC_FIELD_cluster_nodes, -1, -1), cl->nodes, cl->gpus_per_node);
  } else if (!cl->nodes) {
    if (gpn_derived && cl->num_gpus < cl->gpus_per_node) {
      /* Fewer GPUs than a baseboard holds: one partly used node. */
      cl->gpus_per_node = cl->num_gpus;
      cl->nodes = 1;
    } else if (cl->num_gpus % cl->gpus_per_node) {
      /* A job smaller than a node, or whose last node is partly used, is
       * valid when no tensor-parallel group straddles two nodes. */
      int64_t rem = cl->num_gpus % cl->gpus_per_node;
      if (rem % p->tp || cl->gpus_per_node % p->tp)
        return sc__error(
            ctx, SC_EINVAL,
            "%s: cluster.num_gpus=%" PRId64 " is not a multiple of cluster.gpus_per_node=%" PRId64
            " and its last node's %" PRId64 " GPUs do not hold whole parallel.tp=%" PRId64
            " groups",
            where_any(c, w, sizeof w, SC_FIELD_cluster_num_gpus, SC_FIELD_cluster_gpus_per_node,
                      -1),
            cl->num_gpus, cl->gpus_per_node, rem, p->tp);
      cl->nodes = cl->num_gpus / cl->gpus_per_node + 1;
    } else {
      cl->nodes = cl->num_gpus / cl->gpus_per_node;
    }
  } else if (mul_sat(cl->nodes, cl->gpus_per_node) != cl->num_gpus) {
    return sc__error(
        ctx, SC_EINVAL,
        "%s: cluster.num_gpus=%" PRId64 " does not match cluster.nodes*gpus_per_node = %" PRId64
        "*%" PRId64 " = %" PRId64,
        where_any(c, w, sizeof w, SC_FIELD_cluster_num_gpus, SC_FIELD_cluster_nodes,
                  SC_FIELD_cluster_gpus_per_node),
        cl->num_gpus, cl->nodes, cl->gpus_per_node, mul_sat(cl->nodes, cl->gpus_per_node));
  }
  /* Network tiers: a leaf holds whole nodes (a node's NICs sit under one
   * leaf, or one rail leaf each of one leaf group); no spine = non-blocking. */
  if (cl->spine_oversubscription == 0) cl->spine_oversubscription = 1;
  if (cl->leaf_gpus > 0 && cl->leaf_gpus % cl->gpus_per_node)
    return sc__error(ctx, SC_EINVAL,
                     "%s: cluster.leaf_gpus=%" PRId64
                     " is not a multiple of cluster.gpus_per_node=%" PRId64
                     " (a leaf holds whole nodes)",
                     where_any(c, w, sizeof w, SC_FIELD_cluster_leaf_gpus,
                               SC_FIELD_cluster_gpus_per_node, -1),
                     cl->leaf_gpus, cl->gpus_per_node);
  if (precision_peak(hw, t->precision) <= 0)
    return sc__error(
        ctx, SC_EINVAL, "%s: training.precision=%s is not supported by cluster.gpu=%s",
        where_any(c, w, sizeof w, SC_FIELD_training_precision, SC_FIELD_cluster_gpu, -1),
        sc_enum_name(SC_ENUM_PRECISION, t->precision), hw->name);

  /* World size: tp * pp * dp * cp == num_gpus. */
  int64_t tpc = mul_sat(mul_sat(p->tp, p->pp), p->cp);
  if (!p->dp) {
    if (tpc > cl->num_gpus || cl->num_gpus % tpc)
      return sc__error(ctx, SC_EINVAL,
                       "%s: world size mismatch: cluster.num_gpus=%" PRId64
                       " is not divisible by parallel.tp*pp*cp = %" PRId64 "*%" PRId64 "*%" PRId64
                       " = %" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_parallel_tp, SC_FIELD_parallel_pp,
                                 SC_FIELD_cluster_num_gpus),
                       cl->num_gpus, p->tp, p->pp, p->cp, tpc);
    p->dp = cl->num_gpus / tpc;
  } else if (mul_sat(tpc, p->dp) != cl->num_gpus) {
    return sc__error(ctx, SC_EINVAL,
                     "%s: world size mismatch: parallel.tp*pp*dp*cp = %" PRId64 "*%" PRId64
                     "*%" PRId64 "*%" PRId64 " = %" PRId64 " but cluster.num_gpus=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_parallel_dp, SC_FIELD_cluster_num_gpus,
                               SC_FIELD_parallel_tp),
                     p->tp, p->pp, p->dp, p->cp, mul_sat(tpc, p->dp), cl->num_gpus);
  }

  /* Tensor parallelism splits heads, KV heads (or replicates them when
   * kv_heads < tp, as Megatron-LM does for GQA) and the FFN. */
  if (m->heads % p->tp)
    return sc__error(
        ctx, SC_EINVAL, "%s: parallel.tp=%" PRId64 " does not divide model.heads=%" PRId64,
        where_any(c, w, sizeof w, SC_FIELD_parallel_tp, SC_FIELD_model_heads, -1), p->tp, m->heads);
  if (m->kv_heads % p->tp && p->tp % m->kv_heads)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.tp=%" PRId64 " and model.kv_heads=%" PRId64
                     ": one must divide the other",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_tp, SC_FIELD_model_kv_heads, -1),
                     p->tp, m->kv_heads);
  if (m->ffn_hidden % p->tp)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.tp=%" PRId64 " does not divide model.ffn_hidden=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_parallel_tp, SC_FIELD_model_ffn_hidden, -1),
                     p->tp, m->ffn_hidden);

  /* Schedules and model chunks: vpp > 1 means interleaved unless zbv or
   * dualpipev is named; those are always two chunks per stage (the V). */
  int vsched = p->schedule == SC_SCHED_ZBV || p->schedule == SC_SCHED_DUALPIPEV;
  const char *sname = sc_enum_name(SC_ENUM_SCHEDULE, p->schedule);
  if (vsched) {
    if (p->vpp > 2)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.schedule=%s places two model chunks per stage: "
                       "parallel.vpp must be 2 or unset, got %" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_parallel_vpp, SC_FIELD_parallel_schedule,
                                 -1),
                       sname, p->vpp);
    if (p->pp < 2)
      return sc__error(ctx, SC_EINVAL, "%s: parallel.schedule=%s requires parallel.pp > 1",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_schedule, SC_FIELD_parallel_pp,
                                 -1),
                       sname);
    if (p->pp_first_layers || p->pp_last_layers || p->pp_embedding_in_split ||
        p->pp_loss_in_split)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.schedule=%s puts the first and last layers on one stage: "
                       "it takes an even split (no pp_first_layers, pp_last_layers, "
                       "pp_embedding_in_split or pp_loss_in_split)",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp_first_layers,
                                 SC_FIELD_parallel_pp_last_layers, SC_FIELD_parallel_schedule),
                       sname);
    p->vpp = 2;
  }
  /* DualPipe (DeepSeek-V3 report section 3.2.1; deepseek-ai/DualPipe's
   * dualpipe.py asserts an even rank count): two mirrored copies of a
   * pp-stage pipeline, one model chunk of each per stage. */
  if (p->schedule == SC_SCHED_DUALPIPE) {
    if (p->vpp > 1)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.schedule=dualpipe holds one stage of each of two model "
                       "copies: parallel.vpp must be 1 or unset, got %" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_parallel_vpp, SC_FIELD_parallel_schedule,
                                 -1),
                       p->vpp);
    if (p->pp < 2 || p->pp % 2)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.schedule=dualpipe needs an even parallel.pp >= 2, got %" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_parallel_pp, SC_FIELD_parallel_schedule,
                                 -1),
                       p->pp);
  }
  if (p->schedule == SC_SCHED_ZB_H1 && p->vpp > 1)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.schedule=zb-h1 runs one model chunk per stage: parallel.vpp=%" PRId64
                     " needs schedule interleaved (or zbv for two chunks in a V)",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_vpp, SC_FIELD_parallel_schedule, -1),
                     p->vpp);
  if (p->vpp > 1 && p->schedule != SC_SCHED_INTERLEAVED && !vsched) {
    if (c->field_line[SC_FIELD_parallel_schedule] != 0)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.vpp=%" PRId64
                       " requires parallel.schedule=interleaved, got %s",
                       sc__config_where(c, SC_FIELD_parallel_schedule, w, sizeof w), p->vpp,
                       sc_enum_name(SC_ENUM_SCHEDULE, p->schedule));
    p->schedule = SC_SCHED_INTERLEAVED;
  }
  if (p->schedule == SC_SCHED_INTERLEAVED && p->vpp < 2)
    return sc__error(
        ctx, SC_EINVAL, "%s: parallel.schedule=interleaved requires parallel.vpp > 1",
        where_any(c, w, sizeof w, SC_FIELD_parallel_schedule, SC_FIELD_parallel_vpp, -1));
  if (p->schedule == SC_SCHED_INTERLEAVED && p->pp < 2)
    return sc__error(ctx, SC_EINVAL, "%s: parallel.schedule=interleaved requires parallel.pp > 1",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_schedule, SC_FIELD_parallel_pp,
                               SC_FIELD_parallel_vpp));
  if ((rc = resolve_pipeline_split(ctx, c))) return rc;

  /* Batch: every DP replica runs the same number of whole micro-batches;
   * without a global batch, one each (Megatron-LM's default). */
  int64_t per_step = mul_sat(t->micro_batch, p->dp);
  if (!t->global_batch) {
    if (per_step > (int64_t)fields[SC_FIELD_training_global_batch].hi)
      return sc__error(ctx, SC_EINVAL,
                       "%s: training.global_batch = micro_batch*dp = %" PRId64 " is too large",
                       where_any(c, w, sizeof w, SC_FIELD_training_micro_batch,
                                 SC_FIELD_parallel_dp, -1),
                       per_step);
    t->global_batch = per_step;
  }
  if (t->global_batch % per_step || per_step > t->global_batch)
    return sc__error(ctx, SC_EINVAL,
                     "%s: training.global_batch=%" PRId64
                     " is not divisible by training.micro_batch*parallel.dp = %" PRId64 "*%" PRId64
                     " = %" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_training_global_batch,
                               SC_FIELD_training_micro_batch, SC_FIELD_parallel_dp),
                     t->global_batch, t->micro_batch, p->dp, per_step);
  /* DualPipe and DualPipe-V need at least two micro-batches per rank
   * (deepseek-ai/DualPipe asserts num_chunks >= 2 * num_ranks), DualPipe an
   * even count, half fed from each end. */
  if (p->schedule == SC_SCHED_DUALPIPE || p->schedule == SC_SCHED_DUALPIPEV) {
    int64_t mb = t->global_batch / per_step;
    int dual = p->schedule == SC_SCHED_DUALPIPE;
    if (mb < 2 * p->pp || (dual && mb % 2))
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.schedule=%s needs at least 2 * pp = %" PRId64
                       " micro-batches per replica%s, got global_batch / (micro_batch * dp) = "
                       "%" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_training_global_batch,
                                 SC_FIELD_parallel_schedule, SC_FIELD_parallel_pp),
                       sc_enum_name(SC_ENUM_SCHEDULE, p->schedule), 2 * p->pp,
                       dual ? ", an even number" : "", mb);
  }

  /* ZeRO stages: 1 and up shard the optimizer state like Megatron's
   * distributed optimizer (the same reduce-scatter / all-gather traffic). */
  if (p->zero_stage > 3)
    return sc__error(ctx, SC_EINVAL, "%s: parallel.zero_stage=%" PRId64 " must be 0, 1, 2 or 3",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_zero_stage, -1, -1),
                     p->zero_stage);
  if (p->zero_stage >= 1) p->distributed_optimizer = 1;
  /* FSDP / ZeRO-3 shard groups: a divisor of dp (hybrid sharding below dp). */
  if (p->zero_stage < 3 && p->fsdp_shard)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.fsdp_shard=%" PRId64 " needs parallel.zero_stage=3 (parameter "
                     "sharding), got zero_stage=%" PRId64,
                     where_any(c, w, sizeof w, SC_FIELD_parallel_fsdp_shard,
                               SC_FIELD_parallel_zero_stage, -1),
                     p->fsdp_shard, p->zero_stage);
  if (p->zero_stage >= 3) {
    if (!p->fsdp_shard) p->fsdp_shard = p->dp;
    if (p->fsdp_shard > p->dp || p->dp % p->fsdp_shard)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.fsdp_shard=%" PRId64 " does not divide parallel.dp=%" PRId64,
                       where_any(c, w, sizeof w, SC_FIELD_parallel_fsdp_shard,
                                 SC_FIELD_parallel_dp, SC_FIELD_cluster_num_gpus),
                       p->fsdp_shard, p->dp);
  }
  if (p->fsdp_fp8_allgather && (p->zero_stage < 3 || t->precision != SC_PREC_FP8))
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.fsdp_fp8_allgather needs parallel.zero_stage=3 and "
                     "training.precision=fp8",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_fsdp_fp8_allgather,
                               SC_FIELD_training_precision, SC_FIELD_parallel_zero_stage));
  if (t->fp8_attention && t->precision != SC_PREC_FP8)
    return sc__error(ctx, SC_EINVAL, "%s: training.fp8_attention needs training.precision=fp8",
                     where_any(c, w, sizeof w, SC_FIELD_training_fp8_attention,
                               SC_FIELD_training_precision, -1));

  /* Context parallelism: every CP rank holds two load-balanced chunks of
   * the sequence (Megatron / Transformer Engine), so seq_len splits into
   * 2 * cp; Ulysses all-to-all splits the heads of a TP rank instead. */
  if (p->cp > 1) {
    if (t->attention == SC_ATTN_UNFUSED)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.cp=%" PRId64 " needs training.attention=flash or cudnn (context "
                       "parallelism runs on fused attention kernels)",
                       where_any(c, w, sizeof w, SC_FIELD_training_attention, SC_FIELD_parallel_cp,
                                 -1),
                       p->cp);
    int64_t split = p->cp_comm == SC_CP_A2A ? p->cp : 2 * p->cp;
    if (m->seq_len % split)
      return sc__error(ctx, SC_EINVAL,
                       "%s: model.seq_len=%" PRId64 " is not divisible by %s%" PRId64
                       " (parallel.cp=%" PRId64 ", cp_comm %s)",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_cp, SC_FIELD_model_seq_len,
                                 SC_FIELD_parallel_cp_comm),
                       m->seq_len, p->cp_comm == SC_CP_A2A ? "cp = " : "2 * cp = ", split,
                       p->cp, sc_enum_name(SC_ENUM_CP_COMM, p->cp_comm));
    if ((p->cp_comm == SC_CP_A2A) && (m->heads / p->tp) % p->cp)
      return sc__error(ctx, SC_EINVAL,
                       "%s: parallel.cp_comm=a2a splits the %" PRId64
                       " heads of a TP rank over parallel.cp=%" PRId64 ": cp must divide them",
                       where_any(c, w, sizeof w, SC_FIELD_parallel_cp_comm, SC_FIELD_parallel_cp,
                                 SC_FIELD_model_heads),
                       m->heads / p->tp, p->cp);
  }

  /* Sequence parallelism shards the sequence over the TP group. */
  if (p->sequence_parallel && p->tp == 1) p->sequence_parallel = 0;
  if (p->tp == 1) p->tp_comm_overlap = 0; /* nothing to overlap */
  if (p->tp_comm_overlap && !p->sequence_parallel)
    return sc__error(ctx, SC_EINVAL,
                     "%s: parallel.tp_comm_overlap needs parallel.sequence_parallel (as "
                     "Megatron-LM's --tp-comm-overlap does)",
                     where_any(c, w, sizeof w, SC_FIELD_parallel_tp_comm_overlap,
                               SC_FIELD_parallel_sequence_parallel, -1));
  if (p->sequence_parallel && (m->seq_len / p->cp) % p->tp)
    return sc__error(ctx, SC_EINVAL,
                     "%s: model.seq_len=%" PRId64 " per context-parallel rank (cp=%" PRId64
                     ") is not divisible by parallel.tp=%" PRId64 " (needed by sequence_parallel)",
                     where_any(c, w, sizeof w, SC_FIELD_model_seq_len, SC_FIELD_parallel_tp,
                               SC_FIELD_parallel_sequence_parallel),
                     m->seq_len, p->cp, p->tp);
  if ((rc = resolve_moe(ctx, c))) return rc;
  if ((rc = resolve_mla(ctx, c))) return rc;
  if ((rc = check_op_sac(ctx, c))) return rc;
  if ((rc = check_offload(ctx, c))) return rc;
  {
    unsigned mask;
    char bad[64];
    if (sc__recompute_modules_parse(t->recompute_modules, &mask, bad, sizeof bad))
      return sc__error(ctx, SC_EINVAL,
                       "%s: training.recompute_modules: unknown module \"%s\" (known: core_attn, "
                       "layernorm, moe_act, moe, mla_up_proj)",
                       sc__config_where(c, SC_FIELD_training_recompute_modules, w, sizeof w), bad);
    if ((mask & SC_RC_MLA_UP_PROJ) && m->mla_kv_lora_rank <= 0)
      return sc__error(ctx, SC_EINVAL,
                       "%s: training.recompute_modules: mla_up_proj needs multi-head latent "
                       "attention (model.mla_kv_lora_rank)",
                       where_any(c, w, sizeof w, SC_FIELD_training_recompute_modules,
                                 SC_FIELD_model_mla_kv_lora_rank, -1));
  }
  /* Derived values (dp, nodes, num_gpus, ...) within their ranges too. */
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if ((rc = check_field(c, i, err, sizeof err)))
      return sc__error(ctx, rc, "%s: %s (derived)", sc__config_where(c, i, w, sizeof w), err);
  return SC_OK;
}

int sc_config_resolve(sc_ctx *ctx, sc_config *cfg) {
  if (!ctx) return SC_EINVAL;
  if (!cfg) return sc__error(ctx, SC_EINVAL, "sc_config_resolve: no config");
  sc_config work = *cfg;
  int rc = resolve(ctx, &work);
  if (rc) return rc;
  /* What resolution filled in (a 0 = derived, the schedule vpp implies):
   * sticky, so resolving a resolved config keeps the marks. */
  for (int i = 0; i < SC_FIELD_COUNT; i++) {
    const field_def *f = &fields[i];
    if (f->type == T_LABEL || f->type == T_GPU || f->type == T_PRESET || f->type == T_HF) continue;
    if (memcmp((const char *)&work + f->offset, (const char *)cfg + f->offset, f->size))
      work.field_derived[i] = 1;
  }
  *cfg = work;
  return SC_OK;
}

/* Whether a field matters to a resolved config: the settings of features
 * it does not use (MoE keys of a dense model, FSDP keys without ZeRO-3,
 * the schedule without a pipeline ...) are not listed as defaults. */
static int field_used(const sc_config *c, int fi) {
  const sc_parallel_cfg *p = &c->parallel;
  int moe = c->model.moe_experts > 0, mla = c->model.mla_kv_lora_rank > 0;
  int dp = p->dp * p->cp > 1, pp = p->pp > 1, sp = p->sequence_parallel && p->tp > 1;
  int fp8 = c->training.precision == SC_PREC_FP8, z3 = p->zero_stage == 3;
  switch (fi) {
  case SC_FIELD_model_preset:
  case SC_FIELD_model_hf_config:
  case SC_FIELD_model_name:
  case SC_FIELD_model_layers:
  case SC_FIELD_model_hidden:
  case SC_FIELD_model_heads:
  case SC_FIELD_model_vocab:
  case SC_FIELD_model_seq_len:
  case SC_FIELD_model_moe_experts:
  case SC_FIELD_model_mla_kv_lora_rank:
  case SC_FIELD_training_tokens:
  case SC_FIELD_cluster_gpu:
  case SC_FIELD_cluster_mem_headroom:
  case SC_FIELD_cluster_price_per_gpu_hour:
  case SC_FIELD_simulation_fold:
  case SC_FIELD_simulation_share_links:
  /* what-if variation: listed when set; the seed where something draws */
  case SC_FIELD_variation_slow_gpus:
  case SC_FIELD_variation_gpu_speed_sigma:
  case SC_FIELD_variation_slow_links:
  case SC_FIELD_variation_gpu_mix:
  case SC_FIELD_variation_failures:
  case SC_FIELD_variation_gpu_mtbf_hours: return 0;
  case SC_FIELD_variation_seed: return sc__vary_seeded(&c->variation);
  case SC_FIELD_variation_steps:
  case SC_FIELD_training_checkpoint_interval:
  case SC_FIELD_training_restart_s:
  case SC_FIELD_training_checkpoint_load_s:
  case SC_FIELD_training_checkpoint_save_s:
    return c->variation.failures[0] || c->variation.gpu_mtbf_hours > 0;
  case SC_FIELD_model_moe_topk:
  case SC_FIELD_model_moe_ffn_hidden:
  case SC_FIELD_model_moe_shared_experts:
  case SC_FIELD_model_moe_dense_layers:
  case SC_FIELD_model_moe_layer_freq:
  case SC_FIELD_model_moe_capacity_factor:
  case SC_FIELD_model_moe_router_balance:
  case SC_FIELD_parallel_ep:
  case SC_FIELD_parallel_etp:
  case SC_FIELD_parallel_moe_dispatcher:
  case SC_FIELD_parallel_moe_a2a_overlap: return moe;
  case SC_FIELD_parallel_moe_shared_expert_overlap: return moe && c->model.moe_shared_experts > 0;
  case SC_FIELD_model_mla_q_lora_rank:
  case SC_FIELD_model_mla_rope_dim:
  case SC_FIELD_model_mla_v_head_dim: return mla;
  case SC_FIELD_training_recompute_modules:
    return c->training.recompute == SC_RECOMPUTE_SELECTIVE;
  case SC_FIELD_training_fp8_recipe:
  case SC_FIELD_training_fp8_attention: return fp8;
  /* opt-in knobs: listed when set, on a model they change */
  case SC_FIELD_training_eager: return c->training.eager && c->model.activation == SC_ACT_SWIGLU;
  case SC_FIELD_training_fused_projections: return !mla && !c->training.fused_projections;
  /* the split's knobs are listed when set or derived (an uneven split) */
  case SC_FIELD_parallel_pp_first_layers: return pp && p->pp_first_layers;
  case SC_FIELD_parallel_pp_last_layers: return pp && p->pp_last_layers;
  case SC_FIELD_parallel_pp_embedding_in_split: return pp && p->pp_embedding_in_split;
  case SC_FIELD_parallel_pp_loss_in_split: return pp && p->pp_loss_in_split;
  case SC_FIELD_parallel_pp_keep_outputs: return pp && p->pp_keep_outputs;
  /* host-memory offload: listed when used */
  case SC_FIELD_training_optimizer_offload: return c->training.optimizer_offload > 0;
  case SC_FIELD_training_optimizer_offload_cpu_step: return c->training.optimizer_offload > 0;
  case SC_FIELD_training_activation_offload_layers:
    return c->training.activation_offload_layers > 0;
  case SC_FIELD_cluster_host_link_gbps:
    return c->training.optimizer_offload > 0 || c->training.activation_offload_layers > 0;
  case SC_FIELD_cluster_host_mem_gbps:
    return c->training.optimizer_offload > 0 && c->training.optimizer_offload_cpu_step;
  case SC_FIELD_parallel_vpp:
  case SC_FIELD_parallel_schedule: return pp;
  case SC_FIELD_parallel_cp_comm: return p->cp > 1;
  case SC_FIELD_parallel_sequence_parallel: return p->tp > 1;
  case SC_FIELD_parallel_tp_comm_overlap: return sp;
  case SC_FIELD_parallel_distributed_optimizer:
  case SC_FIELD_parallel_zero_stage: return dp;
  case SC_FIELD_parallel_overlap_grad_reduce:
  case SC_FIELD_parallel_dp_bucket_elems: return dp && !z3;
  case SC_FIELD_parallel_overlap_param_gather: return dp && p->distributed_optimizer && !z3;
  case SC_FIELD_parallel_fsdp_shard:
  case SC_FIELD_parallel_fsdp_reshard_after_forward:
  case SC_FIELD_parallel_fsdp_prefetch: return dp && z3;
  case SC_FIELD_parallel_fsdp_fp8_allgather: return dp && z3 && fp8;
  case SC_FIELD_parallel_tp_fp8_allgather: return sp && fp8;
  case SC_FIELD_cluster_nic_gbps:
  case SC_FIELD_cluster_leaf_gpus: return c->cluster.nodes > 1;
  /* the spine's knobs matter once there are leaves */
  case SC_FIELD_cluster_spine_oversubscription:
  case SC_FIELD_cluster_leaf_latency_us:
  case SC_FIELD_cluster_spine_latency_us:
  case SC_FIELD_cluster_rail_optimized:
    return c->cluster.nodes > 1 && c->cluster.leaf_gpus > 0;
  case SC_FIELD_cluster_nvlink_gbps: return c->cluster.gpus_per_node > 1;
  default: return 1;
  }
}

int sc_config_field_state(const sc_config *cfg, int field) {
  if (!cfg || field < 0 || field >= SC_FIELD_COUNT) return SC_FIELD_UNUSED;
  if (!field_used(cfg, field)) return SC_FIELD_UNUSED;
  if (cfg->field_derived[field]) return SC_FIELD_DERIVED;
  return cfg->field_line[field] != SC_LINE_DEFAULT ? SC_FIELD_GIVEN : SC_FIELD_DEFAULTED;
}

int sc_config_field_value(const sc_config *cfg, int field, char *buf, size_t n) {
  if (!buf || !n) return SC_EINVAL;
  int rc = sc__config_format_field(cfg, field, buf, n);
  if (rc) buf[0] = 0;
  return rc;
}

/* ---------------------------------------------------------------- writing */

int sc__config_format_field(const sc_config *cfg, int fi, char *buf, size_t n) {
  if (!cfg || !buf || !n || fi < 0 || fi >= SC_FIELD_COUNT) return SC_EINVAL;
  const field_def *f = &fields[fi];
  size_t len = 0;
  buf[0] = 0;
  switch (f->type) {
  case T_POSINT:
  case T_COUNT: appendf(buf, n, &len, "%" PRId64, get_i64(cfg, f)); break;
  case T_BOOL: appendf(buf, n, &len, "%s", get_int(cfg, f) ? "true" : "false"); break;
  case T_REAL:
  case T_FRAC: format_real(buf, n, get_real(cfg, f)); break;
  case T_LABEL:
  case T_VARY:
  case T_GPU:
  case T_PRESET:
  case T_HF: {
    /* A GPU file is written as its path, so the YAML reloads it. */
    const char *s = f->type == T_GPU && uses_gpu_file(cfg) ? cfg->cluster.gpu_file.path
                                                           : cstr_ptr(cfg, f);
    size_t sl = strnlen(s, f->size);
    appendf(buf, n, &len, "\"");
    for (size_t i = 0; i < sl; i++) {
      unsigned char ch = (unsigned char)s[i];
      if (ch == '"' || ch == '\\')
        appendf(buf, n, &len, "\\%c", ch);
      else if (ch < 0x20 || ch == 0x7f)
        appendf(buf, n, &len, "\\x%02x", ch);
      else
        appendf(buf, n, &len, "%c", ch);
    }
    appendf(buf, n, &len, "\"");
    break;
  }
  default: {
    const char *name = sc_enum_name(enum_of(f->type), get_int(cfg, f));
    if (!name) return SC_EINVAL;
    appendf(buf, n, &len, "%s", name);
    break;
  }
  }
  return SC_OK;
}

int sc_config_write_yaml(const sc_config *cfg, sc_write_fn w, void *ud) {
  char val[320];
  int rc;
  for (size_t s = 0; s < SECTION_COUNT; s++) {
    if ((rc = sc__writef(w, ud, "%s:\n", sections[s].name))) return rc;
    for (int i = 0; i < SC_FIELD_COUNT; i++) {
      /* The shape is spelled out, so the preset and config.json keys would be
       * redundant. */
      if (strcmp(fields[i].section, sections[s].name) || i == SC_FIELD_model_preset ||
          i == SC_FIELD_model_hf_config)
        continue;
      if ((rc = sc__config_format_field(cfg, i, val, sizeof val))) return rc;
      if ((rc = sc__writef(w, ud, "  %s: %s\n", fields[i].key, val))) return rc;
    }
    if (s != SECTION_CALIBRATION) continue;
    /* Every cost key; the collective and interference models' only where
     * given (a config names few of them). */
    for (int i = 0; i < SC_CALIB_KEY_COUNT; i++) {
      double v = sc__calib_get(&cfg->costs, i);
      if (i < SC_CALIB_COST_COUNT) {
        format_real(val, sizeof val, v);
        if ((rc = sc__writef(w, ud, "  %s: %s\n", sc__calib_keys[i].key, val))) return rc;
      } else if (v != 0 && (rc = sc__writef(w, ud, "  %s: %.17g\n", sc__calib_keys[i].key, v))) {
        return rc;
      }
    }
  }
  return SC_OK;
}

/* docs/CONFIG.md: static prose around tables generated from SC_CONFIG_FIELDS,
 * the model presets and the GPU presets, so the reference cannot drift. */
static int write_docs(sc_write_fn w, void *ud) {
  int rc;
#define OUT(...) \
  if ((rc = sc__writef(w, ud, __VA_ARGS__))) return rc
  OUT("# stepcast configuration reference\n\n");
  OUT("<!-- Generated from the field table in src/input/config_int.h by "
      "`stepcast config-docs > docs/CONFIG.md`; edit the table, not this file. -->\n\n");
  OUT("A config is one YAML mapping with the sections below. A job must say what it trains and "
      "on what: the model (a `model.preset`, a `model.hf_config`, or all of `layers`, `hidden`, "
      "`heads`, `vocab` and `seq_len`; the missing ones are named in one error) and "
      "`cluster.gpu` with `cluster.num_gpus` or `cluster.nodes` (or `parallel.dp`). Every other "
      "key is optional and takes the neutral default below (bf16, no recomputation, tp = pp = cp "
      "= 1, Megatron-LM's overlap flags, a global batch of one micro-batch per data-parallel "
      "rank); `run` prints each value that was defaulted or derived under the header "
      "(`defaults` and `derived` lines; the `defaulted` and `derived` members of `--format "
      "json`). `stepcast run CONFIG.yaml` reads these defaults, then the file, then each `--set "
      "SECTION.KEY=VALUE` in order, then derives the implied values and validates the result. "
      "Without a CONFIG (and without `--hf`) `run` and `sweep` simulate the built-in example, "
      "examples/gpt3-175b-1024.yaml compiled in (GPT-3 175B on 1,024 A100-80GB, TP8 PP16 DP8, "
      "Narayanan et al. 2021; `stepcast run --print-config` prints it), and `--set` edits "
      "it.\n\n");
  OUT("Rules:\n\n");
  OUT("- Keys are the field names below. Unknown sections and keys, duplicate keys, values of the "
      "wrong type, zero or negative sizes and unknown enum / preset / GPU names are errors of the "
      "form `FILE:LINE: message` (`--set: message` for overrides).\n");
  OUT("- `model.preset` loads a preset's whole shape first; the other `model` keys override it, "
      "whatever their order.\n");
  OUT("- Booleans are `true`, `false`, `1` or `0`. Integers are decimal (`_` separators allowed) "
      "and at most %" PRId64 ".\n",
      SC_CONFIG_INT_MAX);
  OUT("- Giving only one of `cluster.num_gpus` and `cluster.nodes` in a file (or one `--set`) "
      "re-derives the other.\n");
  OUT("- `calibration: PATH` (a string instead of a mapping) loads the top-level `calibration:` "
      "mapping of PATH, relative to the config file's directory; `--set calibration=PATH` does "
      "the same relative to the working directory.\n");
  OUT("- A top-level `fit:` mapping is a calibration's provenance, as `stepcast calibrate` writes "
      "it beside `calibration:`: ignored but for `fit.gpu`, the GPU it was fitted for; a run "
      "or replay on another GPU is warned that its efficiencies may not carry over.\n\n");
  for (size_t s = 0; s < SECTION_COUNT; s++) {
    OUT("## %s\n\n%s\n\n", sections[s].name, sections[s].doc);
    OUT("| key | type | unit | default | meaning |\n|---|---|---|---|---|\n");
    for (int i = 0; i < SC_FIELD_COUNT; i++) {
      const field_def *f = &fields[i];
      if (strcmp(f->section, sections[s].name)) continue;
      char type[128];
      size_t len = 0;
      type[0] = 0;
      if (types[f->type].en >= 0) {
        appendf(type, sizeof type, &len, "one of ");
        for (int k = 0; k < sc_enum_count(enum_of(f->type)); k++)
          appendf(type, sizeof type, &len, "%s`%s`", k ? ", " : "",
                  sc_enum_name(enum_of(f->type), k));
      } else {
        appendf(type, sizeof type, &len, "%s", types[f->type].doc);
        if (f->hi > 0)
          appendf(type, sizeof type, &len, ", in [%.15g, %.15g]%s", f->lo, f->hi,
                  (f->type == T_COUNT || f->type == T_REAL) && f->lo > 0 ? " or 0 (derived)"
                                                                          : "");
      }
      const char *none = f->type == T_POSINT || f->type == T_GPU ? "required" : "none";
      OUT("| `%s` | %s | %s | %s%s%s | %s |\n", f->name, type, f->unit[0] ? f->unit : "-",
          f->def[0] ? "`" : "", f->def[0] ? f->def : none, f->def[0] ? "`" : "", f->doc);
    }
    for (int i = 0; s == SECTION_CALIBRATION && i < SC_CALIB_KEY_COUNT; i++) {
      const sc_calib_key *k = &sc__calib_keys[i];
      OUT("| `calibration.%s` | real in [%g, %g] | %s | `0` (the model's) | %s%s%s |\n", k->key,
          k->lo, k->hi, k->unit[0] ? k->unit : "-",
          k->group == SC_CK_NCCL ? (k->fitted ? "Collective model, fitted by `calibrate "
                                                "--nccl-tests`: "
                                              : "Collective model: ")
          : k->group == SC_CK_INTERF ? "Learned interference coefficient: "
                                     : "",
          k->doc, k->group == SC_CK_COST ? "" : ".");
    }
    OUT("\n");
  }
  OUT("## Derived values and checks\n\n");
  OUT("`sc_config_resolve` (run by the CLI after loading) fills in:\n\n");
  OUT("- `model.kv_heads` = `model.heads`; `model.ffn_hidden` = 4h (gelu) or 8h/3 rounded up to a "
      "multiple of 256 (swiglu);\n");
  OUT("- `cluster.gpus_per_node`, `cluster.nic_gbps`, `cluster.nvlink_gbps` from the GPU preset; "
      "`cluster.num_gpus` = nodes * gpus_per_node or `cluster.nodes` = num_gpus / "
      "gpus_per_node;\n");
  OUT("- `cluster.num_gpus` = tp * pp * cp * dp when neither it nor `cluster.nodes` is given but "
      "`parallel.dp` is;\n");
  OUT("- `parallel.dp` = num_gpus / (tp * pp * cp); `parallel.schedule` = interleaved when vpp > 1 "
      "and no schedule was given; `parallel.sequence_parallel` = 0 when tp = 1;\n");
  OUT("- `training.global_batch` = micro_batch * dp (Megatron-LM's default).\n\n");
  OUT("It then requires: the model's layers, hidden, heads, vocab and seq_len (from a preset, a "
      "config.json or the keys) and cluster.gpu; model.hidden a multiple of model.heads (unless "
      "a head_dim is given); kv_heads dividing heads; tp dividing heads and ffn_hidden, and tp "
      "and kv_heads dividing one another; a pipeline split of the layers (even, or uneven as "
      "parallel.pp_first_layers says); tp * pp * dp * cp = num_gpus; num_gpus = nodes * "
      "gpus_per_node when both are given; global_batch divisible by micro_batch * dp; for the "
      "interleaved schedule vpp > 1 and pp > 1; seq_len divisible by tp with sequence "
      "parallelism; a GPU with a peak for the chosen precision. Messages name the field and the "
      "line where it was set: `gpt.yaml:12: parallel.tp=3 does not divide model.heads=96`.\n\n");
  OUT("## Model presets\n\n");
  OUT("Sources: GPT-3, Brown et al. 2020 Table 2.1 (vocabulary padded to 51,200 as in Narayanan "
      "et al. 2021; 1.3B uses 16 heads of 128 and 13B a width of 5,120, see src/input/config.c); "
      "Llama 2, Touvron et al. 2023 Table 1 and model cards; Llama 3, \"The Llama 3 Herd of "
      "Models\" 2024 Table 3; the MoE models below. kv_heads and ffn_hidden are shown resolved.\n\n");
  OUT("| preset | layers | hidden | heads | kv_heads | ffn_hidden | vocab | seq_len | activation "
      "| tied embeddings |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < MODEL_PRESET_COUNT; i++) {
    const model_preset *p = &model_presets[i];
    int64_t kv = p->kv_heads ? p->kv_heads : p->heads;
    int64_t ffn = p->ffn_hidden ? p->ffn_hidden : default_ffn_hidden(p->hidden, p->activation);
    OUT("| `%s` | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64
        " | %" PRId64 " | %s | %s |\n",
        p->name, p->layers, p->hidden, p->heads, kv, ffn, p->vocab, p->seq_len,
        sc_enum_name(SC_ENUM_ACTIVATION, p->activation), p->tied_embeddings ? "yes" : "no");
  }
  OUT("\nMixture-of-experts presets (docs/MOE.md; sources: each model's released config.json, "
      "see src/input/config.c; DeepSeek-V3 with its multi-head latent attention, gpt-oss without "
      "its sliding windows and sinks):\n\n");
  OUT("| preset | head_dim | moe_experts | moe_topk | moe_ffn_hidden | moe_shared_experts "
      "| moe_dense_layers |\n|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof moe_presets / sizeof moe_presets[0]; i++) {
    const moe_preset *e = &moe_presets[i];
    const model_preset *b = find_model_preset(e->name);
    int64_t d = e->head_dim ? e->head_dim : b ? b->hidden / b->heads : 0;
    OUT("| `%s` | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64
        " |\n",
        e->name, d, e->experts, e->topk, e->ffn, e->shared, e->dense);
  }
  OUT("\n## HuggingFace config.json\n\n");
  OUT("`model: {hf_config: config.json}` (relative to the YAML file), `--set "
      "model.hf_config=PATH` or `stepcast run --hf PATH` (relative to the working directory) "
      "reads a transformers config.json for the model types %s. It sets:\n\n",
      sc__hf_model_types());
  OUT("| config.json | stepcast |\n|---|---|\n"
      "| `num_hidden_layers`, `hidden_size`, `num_attention_heads`, `vocab_size` (required) | "
      "`model.layers`, `hidden`, `heads`, `vocab` |\n"
      "| `num_key_value_heads` (absent: multi-head attention) | `model.kv_heads` |\n"
      "| `intermediate_size` (Mixtral, gpt-oss: the experts' width) | `model.ffn_hidden` |\n"
      "| `head_dim`, where heads x head_dim differs from hidden (Qwen3, Gemma) | "
      "`model.head_dim` |\n"
      "| `hidden_act` / `hidden_activation`: silu, swish, gelu* | `model.activation: swiglu` "
      "(every supported type gates its MLP; GELU-gated MLPs have the same three GEMMs and are "
      "priced as SwiGLU) |\n"
      "| `tie_word_embeddings` (absent: the type's transformers default, true for Gemma) | "
      "`model.tied_embeddings` |\n"
      "| `attention_dropout` (absent: 0) | `model.dropout` |\n"
      "| `_name_or_path`, else `model_type` | `model.name` |\n"
      "| `num_local_experts` / `n_routed_experts` / `num_experts`, `num_experts_per_tok`, "
      "`moe_intermediate_size`, `n_shared_experts`, `first_k_dense_replace`, "
      "`decoder_sparse_step` | `model.moe_*` (refused as not modelled where the build lacks "
      "them) |\n"
      "| `kv_lora_rank`, `q_lora_rank`, `qk_rope_head_dim`, `v_head_dim`, `qk_nope_head_dim` | "
      "`model.mla_*`, `model.head_dim` (the same) |\n\n");
  OUT("A multimodal wrapper's `text_config` (Gemma 3) is read in place of the top level. "
      "Everything else is ignored: sliding windows, soft-capping, RoPE scaling and "
      "quantization do not change a training step's kernels as stepcast prices them (sliding "
      "windows would: they are not modelled, attention is priced causal over the whole "
      "sequence). The sequence length is never read: `max_position_embeddings` is the longest "
      "context the model supports, so `model.seq_len` must be given. Keys beside `hf_config` "
      "override the file; `hf_config` and `preset` exclude each other. Errors name the "
      "config.json line (`config.json:7: num_hidden_layers: expected a positive integer, got "
      "\"two\"`), exit 2.\n");
  OUT("\n## GPU presets (`cluster.gpu`)\n\nSee docs/HARDWARE.md for the figures and sources.\n\n");
  OUT("| gpu | description | GPUs per node | NVLink GB/s | NIC Gbit/s |\n|---|---|---|---|---|\n");
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    OUT("| `%s` | %s | %d | %g | %g |\n", hw->name, hw->description, hw->gpus_per_node,
        hw->nvlink_gbps, hw->nic_gbps);
  }
  OUT("\n## Examples\n\nA short config built on presets (see examples/ for more):\n\n");
  OUT("```yaml\nmodel:\n  preset: llama3-8b\ntraining:\n  global_batch: 256\n  precision: bf16\n"
      "  recompute: selective\nparallel:\n  tp: 4\n  pp: 2\n  sequence_parallel: true\n"
      "cluster:\n  gpu: h100-sxm\n  nodes: 4\n```\n\n");
  OUT("The built-in example, examples/gpt3-175b-1024.yaml (`stepcast run --print-config`):\n\n"
      "```yaml\n");
  size_t exlen;
  const char *ex = sc_config_example_text(&exlen);
  if ((rc = w(ud, ex, exlen))) return rc;
  OUT("```\n");
#undef OUT
  return SC_OK;
}

int sc_config_write_docs(sc_write_fn w, void *ud) { return write_docs(w, ud); }
