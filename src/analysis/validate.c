/*
 * validate.c: accuracy against published runs. Reads case files (CSV in the
 * format of validation/SCHEMA.md, RFC 4180 quoting) into configurations,
 * simulates each supported case, and reports signed errors, MAPE, median and
 * worst error per file and split. Sits beside the CLI's `run`: config ->
 * simulate -> compare; calibrate.c fits parameters on the same case sets.
 */
#include "stepcast/validate.h"

#include "input/config_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

#define WARN_MAX 256
#define MAX_CASE_FILE_BYTES ((size_t)16 << 20)

typedef struct file_entry {
  char path[256];
  char base[256]; /* base config path, "" when none */
} file_entry;

struct sc_caseset {
  sc_ctx *ctx;
  sc_case *cases;
  size_t n, cap;
  file_entry *files;
  size_t nfiles, files_cap;
  char (*warn)[WARN_MAX];
  size_t nwarn, warn_cap;
};

/* ------------------------------------------------------------ CSV reader */

/* Reads RFC 4180 records from memory: fields separated by commas, records by
 * LF, CRLF or CR; a field starting with a double quote runs to the matching
 * quote, may hold commas and line breaks, and spells a quote as two. Field
 * texts are unescaped into one buffer (NUL after each). */
typedef struct csv {
  sc_ctx *ctx;
  const char *name;
  const char *p, *end;
  int line;              /* line of the next unread character, 1-based */
  char *text;            /* unescaped fields */
  size_t text_len, text_cap;
  size_t *field;         /* offset of each field in text */
  size_t nfield, field_cap;
  unsigned char *quoted; /* per field: it was quoted */
  size_t quoted_cap;
} csv;

static int csv_put(csv *r, char c) {
  if (sc__grow(r->ctx, (void **)&r->text, 1, &r->text_cap, r->text_len + 1)) return SC_ENOMEM;
  r->text[r->text_len++] = c;
  return SC_OK;
}

static int csv_begin_field(csv *r, int quoted) {
  if (sc__grow(r->ctx, (void **)&r->field, sizeof(size_t), &r->field_cap, r->nfield + 1) ||
      sc__grow(r->ctx, (void **)&r->quoted, 1, &r->quoted_cap, r->nfield + 1))
    return SC_ENOMEM;
  r->field[r->nfield] = r->text_len;
  r->quoted[r->nfield] = (unsigned char)quoted;
  r->nfield++;
  return SC_OK;
}

static void csv_free(csv *r) {
  sc__free(r->ctx, r->text, r->text_cap);
  sc__free(r->ctx, r->field, r->field_cap * sizeof(size_t));
  sc__free(r->ctx, r->quoted, r->quoted_cap);
}

static const char *csv_cell(const csv *r, size_t i) { return r->text + r->field[i]; }

/* A reader over text[0, len) named `name` in messages; a UTF-8 byte-order
 * mark is skipped. Free with csv_free. */
static void csv_open(csv *r, sc_ctx *ctx, const char *name, const char *text, size_t len) {
  memset(r, 0, sizeof *r);
  r->ctx = ctx;
  r->name = name;
  r->p = text;
  r->end = text + len;
  r->line = 1;
  if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) r->p += 3;
}

/* Reads the next record. Returns 1 (record read; *rec_line = its first
 * line), 0 at end of input, or a negative SC_E code with the message
 * "name:line: ...". Empty lines are skipped. */
static int csv_record(csv *r, int *rec_line) {
  for (;;) {
    if (r->p >= r->end) return 0;
    r->nfield = r->text_len = 0;
    *rec_line = r->line;
    int rc;
    for (;;) { /* one field */
      if (r->p < r->end && *r->p == '"') {
        int open_line = r->line;
        if ((rc = csv_begin_field(r, 1))) return rc;
        r->p++;
        for (;;) {
          if (r->p >= r->end)
            return sc__error(r->ctx, SC_EINVAL, "%s:%d: unterminated quoted field", r->name,
                             open_line);
          char c = *r->p;
          if (c == '"') {
            if (r->p + 1 < r->end && r->p[1] == '"') {
              if ((rc = csv_put(r, '"'))) return rc;
              r->p += 2;
              continue;
            }
            r->p++;
            break;
          }
          if (c == '\0')
            return sc__error(r->ctx, SC_EINVAL, "%s:%d: NUL byte in a field", r->name, r->line);
          if (c == '\n') r->line++;
          if ((rc = csv_put(r, c))) return rc;
          r->p++;
        }
        if (r->p < r->end && *r->p != ',' && *r->p != '\n' && *r->p != '\r')
          return sc__error(r->ctx, SC_EINVAL,
                           "%s:%d: unexpected character '%c' after a closing quote (a quote "
                           "inside a quoted field is written \"\")",
                           r->name, r->line, *r->p);
      } else {
        if ((rc = csv_begin_field(r, 0))) return rc;
        while (r->p < r->end && *r->p != ',' && *r->p != '\n' && *r->p != '\r') {
          if (*r->p == '"')
            return sc__error(r->ctx, SC_EINVAL,
                             "%s:%d: quote inside an unquoted field (quote the whole field "
                             "and double the quote)",
                             r->name, r->line);
          if (*r->p == '\0')
            return sc__error(r->ctx, SC_EINVAL, "%s:%d: NUL byte in a field", r->name, r->line);
          if ((rc = csv_put(r, *r->p))) return rc;
          r->p++;
        }
      }
      if ((rc = csv_put(r, '\0'))) return rc;
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      break; /* end of line or input */
    }
    if (r->p < r->end) { /* consume the line break */
      if (*r->p == '\r') r->p++;
      if (r->p < r->end && *r->p == '\n') r->p++;
      r->line++;
    }
    if (r->nfield == 1 && !r->quoted[0] && !csv_cell(r, 0)[0]) continue; /* empty line */
    return 1;
  }
}

/* ------------------------------------------------------------ columns */

/* When a blank cell's default is listed in sc_case.defaults: always, or only
 * where the field matters for the resolved row (a default without effect on
 * the row is not worth a line). */
enum {
  SHOW_NEVER = 0,
  SHOW_ALWAYS,
  SHOW_PP,        /* pipeline parallelism: pp > 1 */
  SHOW_CP,        /* context parallelism: cp > 1 */
  SHOW_DP,        /* data parallelism: dp > 1 */
  SHOW_ZERO0,     /* no ZeRO stage and no distributed optimizer */
  SHOW_NO_ZERO,   /* no ZeRO stage (which would imply the distributed optimizer) */
  SHOW_ZERO3,     /* parameter sharding */
  SHOW_DIST_OPT,  /* distributed optimizer (or any ZeRO stage) */
  SHOW_TP_SP,     /* sequence parallelism over tp > 1 */
  SHOW_MULTI_GPU, /* more than one GPU */
  SHOW_MOE,       /* a mixture-of-experts model */
  SHOW_MLA        /* multi-head latent attention */
};

/* X(column, required, config key or NULL, default text or NULL, why, show):
 * columns of the case-file format (validation/SCHEMA.md). Columns with a
 * config key are copied into the field; when blank, the default text is
 * applied (unless the file's base config gives the field; NULL: the config's
 * own default or derivation stays) and listed with `why` when `show` says
 * so. Columns without a key are handled in row_to_case (identity and
 * measurement), check_moe (cross checks of the MoE and MLA cells) and
 * build_config. Required columns without a key are the row's identity: a
 * blank one is an error of the file; a blank required config column is an
 * error of the row. The columns added with issue 14 come last, so the
 * defaults of the older columns keep their order. */
#define SC_CASE_COLUMNS(X)                                                                      \
  X(id, 1, NULL, NULL, "", SHOW_NEVER)                                                          \
  X(split, 0, NULL, NULL, "", SHOW_NEVER)                                                       \
  X(gpu, 1, NULL, NULL, "", SHOW_NEVER)                                                         \
  X(num_gpus, 1, "cluster.num_gpus", "", "", SHOW_NEVER)                                        \
  X(gpus_per_node, 0, "cluster.gpus_per_node", "0", "gpu preset", SHOW_ALWAYS)                  \
  X(nic_gbps, 0, "cluster.nic_gbps", "0", "gpu preset", SHOW_ALWAYS)                            \
  X(network, 0, NULL, NULL, "", SHOW_NEVER)                                                     \
  X(layers, 1, "model.layers", "", "", SHOW_NEVER)                                              \
  X(hidden, 1, "model.hidden", "", "", SHOW_NEVER)                                              \
  X(heads, 1, "model.heads", "", "", SHOW_NEVER)                                                \
  X(seq_len, 1, "model.seq_len", "", "", SHOW_NEVER)                                            \
  X(vocab, 1, "model.vocab", "", "", SHOW_NEVER)                                                \
  X(kv_heads, 0, "model.kv_heads", "0", "= heads, no GQA", SHOW_ALWAYS)                         \
  X(ffn_hidden, 0, "model.ffn_hidden", "0", "4h for gelu", SHOW_ALWAYS)                         \
  X(activation, 0, "model.activation", "gelu", "schema default", SHOW_ALWAYS)                   \
  X(moe_experts, 0, "model.moe_experts", "0", "dense", SHOW_NEVER)                              \
  X(moe_topk, 0, "model.moe_topk", "0", "Megatron-LM's default", SHOW_MOE)                      \
  X(moe_ffn_hidden, 0, "model.moe_ffn_hidden", "0", "= ffn_hidden", SHOW_MOE)                   \
  X(global_batch, 1, "training.global_batch", "", "", SHOW_NEVER)                               \
  X(micro_batch, 0, "training.micro_batch", "1", "", SHOW_ALWAYS)                               \
  X(tp, 1, "parallel.tp", "", "", SHOW_NEVER)                                                   \
  X(pp, 1, "parallel.pp", "", "", SHOW_NEVER)                                                   \
  X(dp, 0, "parallel.dp", "0", "num_gpus / (tp pp cp)", SHOW_ALWAYS)                            \
  X(cp, 0, "parallel.cp", "1", "schema default", SHOW_ALWAYS)                                   \
  X(ep, 0, "parallel.ep", "1", "schema default", SHOW_MOE)                                     \
  X(vpp, 0, "parallel.vpp", "1", "", SHOW_ALWAYS)                                               \
  X(sequence_parallel, 0, "parallel.sequence_parallel", "0", "schema default", SHOW_ALWAYS)     \
  X(recompute, 0, "training.recompute", "none", "schema default", SHOW_ALWAYS)                  \
  X(precision, 0, "training.precision", "bf16", "schema default", SHOW_ALWAYS)                  \
  X(zero_stage, 0, "parallel.zero_stage", "0", "schema default", SHOW_ZERO0)                    \
  X(distributed_optimizer, 0, "parallel.distributed_optimizer", "0", "schema default",          \
    SHOW_NO_ZERO)                                                                               \
  X(framework, 0, NULL, NULL, "", SHOW_NEVER)                                                   \
  X(measured_step_s, 1, NULL, NULL, "", SHOW_NEVER)                                             \
  X(measured_tflops_per_gpu, 0, NULL, NULL, "", SHOW_NEVER)                                     \
  X(flops_convention, 0, NULL, NULL, "", SHOW_NEVER)                                            \
  X(source, 1, NULL, NULL, "", SHOW_NEVER)                                                      \
  X(notes, 0, NULL, NULL, "", SHOW_NEVER)                                                       \
  X(fsdp_shard, 0, "parallel.fsdp_shard", "0", "= dp, full sharding", SHOW_ZERO3)               \
  X(schedule, 0, "parallel.schedule", NULL, "not stated; interleaved when vpp > 1, else 1f1b",  \
    SHOW_PP)                                                                                    \
  X(pp_first_layers, 0, "parallel.pp_first_layers", "0",                                        \
    "even, or derived when pp does not divide the layers", SHOW_PP)                       \
  X(pp_last_layers, 0, "parallel.pp_last_layers", "0",                                          \
    "even, or derived when pp does not divide the layers", SHOW_PP)                       \
  X(pp_embedding_in_split, 0, "parallel.pp_embedding_in_split", "0", "schema default", SHOW_PP) \
  X(pp_loss_in_split, 0, "parallel.pp_loss_in_split", "0", "schema default", SHOW_PP)           \
  X(cp_comm, 0, "parallel.cp_comm", "p2p", "schema default", SHOW_CP)                           \
  X(etp, 0, "parallel.etp", "1", "schema default", SHOW_MOE)                                   \
  X(head_dim, 0, "model.head_dim", "0", "= hidden / heads", SHOW_ALWAYS)                        \
  X(moe_shared_experts, 0, "model.moe_shared_experts", "0", "schema default", SHOW_MOE)        \
  X(moe_dense_layers, 0, "model.moe_dense_layers", "0", "schema default", SHOW_MOE)            \
  X(mla_kv_lora_rank, 0, "model.mla_kv_lora_rank", "0", "ordinary attention", SHOW_NEVER)      \
  X(mla_q_lora_rank, 0, "model.mla_q_lora_rank", "0", "no query compression", SHOW_MLA)         \
  X(mla_rope_dim, 0, "model.mla_rope_dim", "0", "DeepSeek's 64", SHOW_MLA)                      \
  X(mla_v_head_dim, 0, "model.mla_v_head_dim", "0", "= head_dim", SHOW_MLA)                     \
  X(attention, 0, "training.attention", "flash", "schema default", SHOW_ALWAYS)                 \
  X(tp_comm_overlap, 0, "parallel.tp_comm_overlap", NULL, "not stated; stepcast default",       \
    SHOW_TP_SP)                                                                                 \
  X(overlap_grad_reduce, 0, "parallel.overlap_grad_reduce", "1",                               \
    "not stated; on, as the published recipes run", SHOW_DP)                                                    \
  X(overlap_param_gather, 0, "parallel.overlap_param_gather", NULL,                             \
    "not stated; stepcast default", SHOW_DIST_OPT)                                              \
  X(nvlink_gbps, 0, "cluster.nvlink_gbps", "0", "gpu preset", SHOW_MULTI_GPU)

enum {
#define SC_X_COL(name, req, key, def, why, show) COL_##name,
  SC_CASE_COLUMNS(SC_X_COL)
#undef SC_X_COL
      COL_COUNT
};

typedef struct column_def {
  const char *name;
  int required;
  const char *key; /* "parallel.tp" or NULL */
  const char *def; /* NULL: leave the config's default */
  const char *why;
  int show;
} column_def;

static const column_def columns[COL_COUNT] = {
#define SC_X_COL(name, req, key, def, why, show) {#name, req, key, def, why, show},
    SC_CASE_COLUMNS(SC_X_COL)
#undef SC_X_COL
};

/* Whether a blank column's default is listed for the resolved row r. */
static int default_shown(int show, const sc_config *r) {
  const sc_parallel_cfg *p = &r->parallel;
  switch (show) {
  case SHOW_ALWAYS: return 1;
  case SHOW_PP: return p->pp > 1;
  case SHOW_CP: return p->cp > 1;
  case SHOW_DP: return p->dp > 1;
  case SHOW_ZERO0: return p->zero_stage == 0 && !p->distributed_optimizer;
  case SHOW_NO_ZERO: return p->zero_stage == 0;
  case SHOW_ZERO3: return p->zero_stage >= 3;
  case SHOW_DIST_OPT: return p->distributed_optimizer || p->zero_stage >= 1;
  case SHOW_TP_SP: return p->tp > 1 && p->sequence_parallel;
  case SHOW_MULTI_GPU: return r->cluster.num_gpus > 1;
  case SHOW_MOE: return r->model.moe_experts > 0;
  case SHOW_MLA: return r->model.mla_kv_lora_rank > 0;
  default: return 0;
  }
}

/* ------------------------------------------------------------ set bookkeeping */

int sc_caseset_new(sc_ctx *ctx, sc_caseset **out) {
  if (!ctx || !out) return SC_EINVAL;
  *out = sc__calloc(ctx, 1, sizeof **out);
  if (!*out) return SC_ENOMEM;
  (*out)->ctx = ctx;
  return SC_OK;
}

void sc_caseset_free(sc_caseset *set) {
  if (!set) return;
  sc_ctx *ctx = set->ctx;
  sc__free(ctx, set->cases, set->cap * sizeof(sc_case));
  sc__free(ctx, set->files, set->files_cap * sizeof(file_entry));
  sc__free(ctx, set->warn, set->warn_cap * sizeof *set->warn);
  sc__free(ctx, set, sizeof *set);
}

size_t sc_caseset_count(const sc_caseset *set) { return set ? set->n : 0; }

const sc_case *sc_caseset_case(const sc_caseset *set, size_t i) {
  return set && i < set->n ? &set->cases[i] : NULL;
}

size_t sc_caseset_file_count(const sc_caseset *set) { return set ? set->nfiles : 0; }

const char *sc_caseset_file(const sc_caseset *set, size_t i) {
  return set && i < set->nfiles ? set->files[i].path : NULL;
}

const char *sc_caseset_file_base(const sc_caseset *set, size_t i) {
  return set && i < set->nfiles ? set->files[i].base : NULL;
}

size_t sc_caseset_warning_count(const sc_caseset *set) { return set ? set->nwarn : 0; }

const char *sc_caseset_warning(const sc_caseset *set, size_t i) {
  return set && i < set->nwarn ? set->warn[i] : NULL;
}

static int add_warning(sc_caseset *set, const char *fmt, ...) SC_PRINTF(2, 3);
static int add_warning(sc_caseset *set, const char *fmt, ...) {
  if (sc__grow(set->ctx, (void **)&set->warn, sizeof *set->warn, &set->warn_cap, set->nwarn + 1))
    return SC_ENOMEM;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(set->warn[set->nwarn], WARN_MAX, fmt, ap);
  va_end(ap);
  set->nwarn++;
  return SC_OK;
}

/* ------------------------------------------------------------ rows */

typedef struct row_ctx {
  sc_caseset *set;
  const char *name;      /* file name for messages */
  const csv *r;
  int col[COL_COUNT];    /* field index of each known column, -1 if absent */
  const sc_config *base; /* default config with the file's base config loaded */
  const char *base_name; /* "" when none */
  int line;
} row_ctx;

/* Cell text with surrounding blanks removed, copied into buf; "" if the
 * column is absent. */
static const char *cell(const row_ctx *rc, int col, char *buf, size_t n) {
  buf[0] = 0;
  if (rc->col[col] < 0) return buf;
  const char *s = csv_cell(rc->r, (size_t)rc->col[col]);
  while (*s == ' ' || *s == '\t') s++;
  size_t len = strlen(s);
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' ||
                 s[len - 1] == '\n'))
    len--;
  if (len >= n) len = n - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  return buf;
}

static int row_error(const row_ctx *rc, int col, const char *fmt, ...) SC_PRINTF(3, 4);
static int row_error(const row_ctx *rc, int col, const char *fmt, ...) {
  char msg[SC_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (col >= 0)
    return sc__error_at(rc->set->ctx, SC_EINVAL, rc->name, rc->line, "column %s: %s",
                        columns[col].name, msg);
  return sc__error_at(rc->set->ctx, SC_EINVAL, rc->name, rc->line, "%s", msg);
}

/* Parses a non-negative integer cell; blank gives *out = dflt. */
static int cell_count(const row_ctx *rc, int col, int64_t dflt, int64_t *out) {
  char buf[64], *end;
  cell(rc, col, buf, sizeof buf);
  if (!buf[0]) {
    *out = dflt;
    return SC_OK;
  }
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (*end || errno || v < 0 || v > SC_CONFIG_INT_MAX)
    return row_error(rc, col, "expected a non-negative integer, got \"%s\"", buf);
  *out = v;
  return SC_OK;
}

/* Parses a finite real cell (> 0 when positive is set); blank gives 0. */
static int cell_real(const row_ctx *rc, int col, int positive, double *out) {
  char buf[64], *end;
  cell(rc, col, buf, sizeof buf);
  *out = 0;
  if (!buf[0]) return SC_OK;
  errno = 0;
  double v = strtod(buf, &end);
  if (*end || errno || !isfinite(v) || v < 0 || (positive && v <= 0))
    return row_error(rc, col, "expected a %s number, got \"%s\"",
                     positive ? "positive" : "non-negative", buf);
  *out = v;
  return SC_OK;
}

static void append(char *buf, size_t n, const char *fmt, ...) SC_PRINTF(3, 4);
static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* Applies "key=value" to cfg; a failure becomes "file:line: column C: why". */
static int set_field(const row_ctx *rc, sc_config *cfg, int col, const char *key,
                     const char *value) {
  char assign[320];
  snprintf(assign, sizeof assign, "%s=%s", key, value);
  int rc_set = sc_config_set(rc->set->ctx, cfg, assign);
  if (!rc_set) return SC_OK;
  if (rc_set == SC_ENOMEM) return rc_set;
  char msg[SC_ERRMSG_MAX];
  const char *m = sc_errmsg(rc->set->ctx);
  if (!strncmp(m, "--set: ", 7)) m += 7;
  size_t kl = strlen(key);
  if (!strncmp(m, key, kl) && !strncmp(m + kl, ": ", 2)) m += kl + 2;
  sc__strlcpy(msg, m, sizeof msg);
  return row_error(rc, col, "%s", msg);
}

static const sc_case *find_case(const sc_caseset *set, const char *id, size_t upto) {
  for (size_t i = 0; i < upto; i++)
    if (!strcmp(set->cases[i].id, id)) return &set->cases[i];
  return NULL;
}

/* ------------------------------------------------------------ MoE and MLA */

/* Parses an optional integer cell in [lo, hi]; blank gives *out = 0 and
 * *given = 0. */
static int cell_range(const row_ctx *rc, int col, int64_t lo, int64_t hi, int64_t *out,
                      int *given) {
  char buf[64];
  *given = cell(rc, col, buf, sizeof buf)[0] != 0;
  int e = cell_count(rc, col, 0, out);
  if (e) return e;
  if (*given && (*out < lo || *out > hi))
    return row_error(rc, col, "%lld out of range [%lld, %lld]", (long long)*out, (long long)lo,
                     (long long)hi);
  return SC_OK;
}

/* The MoE and MLA columns (issue 15): parsed and range-checked, then copied
 * into their config fields (the column table). The bounds are those of the config fields
 * the columns stand beside (experts as GPUs, widths as model.ffn_hidden,
 * ranks and head dims as model.head_dim) so that any published layout fits;
 * the cross-field rules are Megatron-LM's (--expert-model-parallel-size
 * divides --num-experts; topk <= experts). Returns 0 or a cell's error. */
static int check_moe(const row_ctx *rc) {
  int64_t experts = 0, topk = 0, ffn = 0, shared = 0, dense = 0, ep = 0, etp = 0, kv = 0, q = 0, rope = 0, vdim = 0;
  int g_experts, g_topk, g_ffn, g_shared, g_dense, g_ep, g_etp, g_kv, g_q, g_rope, g_vdim;
  int e;
  if ((e = cell_range(rc, COL_moe_experts, 0, 16777216, &experts, &g_experts)) ||
      (e = cell_range(rc, COL_moe_topk, 1, 16777216, &topk, &g_topk)) ||
      (e = cell_range(rc, COL_moe_ffn_hidden, 1, 1048576, &ffn, &g_ffn)) ||
      (e = cell_range(rc, COL_moe_shared_experts, 0, 16777216, &shared, &g_shared)) ||
      (e = cell_range(rc, COL_moe_dense_layers, 0, 4096, &dense, &g_dense)) ||
      (e = cell_range(rc, COL_ep, 1, 16777216, &ep, &g_ep)) ||
      (e = cell_range(rc, COL_etp, 1, 1024, &etp, &g_etp)) ||
      (e = cell_range(rc, COL_mla_kv_lora_rank, 1, 65536, &kv, &g_kv)) ||
      (e = cell_range(rc, COL_mla_q_lora_rank, 0, 65536, &q, &g_q)) ||
      (e = cell_range(rc, COL_mla_rope_dim, 1, 4096, &rope, &g_rope)) ||
      (e = cell_range(rc, COL_mla_v_head_dim, 1, 4096, &vdim, &g_vdim)))
    return e;
  /* Columns that only mean something in an MoE layer. */
  static const int moe_only[] = {COL_moe_topk, COL_moe_ffn_hidden, COL_moe_shared_experts,
                                 COL_moe_dense_layers};
  const int64_t moe_val[] = {topk, ffn, shared, dense};
  for (size_t i = 0; i < sizeof moe_only / sizeof moe_only[0]; i++)
    if (!experts && moe_val[i] > 0)
      return row_error(rc, moe_only[i], "needs moe_experts (the row describes a dense model)");
  if (!experts && ep > 1)
    return row_error(rc, COL_ep, "expert parallelism needs moe_experts");
  if (!experts && etp > 1)
    return row_error(rc, COL_etp, "expert tensor parallelism needs moe_experts");
  if (experts && topk > experts)
    return row_error(rc, COL_moe_topk, "%lld exceeds moe_experts=%lld", (long long)topk,
                     (long long)experts);
  if (experts && g_ep && experts % ep)
    return row_error(rc, COL_ep, "%lld does not divide moe_experts=%lld", (long long)ep,
                     (long long)experts);
  char buf[64], *end;
  long long layers = strtoll(cell(rc, COL_layers, buf, sizeof buf), &end, 10);
  if (dense > 0 && !*end && dense > layers) /* a bad layers cell is the config's to report */
    return row_error(rc, COL_moe_dense_layers, "%lld exceeds layers=%lld", (long long)dense,
                     layers);
  static const int mla_only[] = {COL_mla_q_lora_rank, COL_mla_rope_dim, COL_mla_v_head_dim};
  const int mla_given[] = {g_q, g_rope, g_vdim};
  for (size_t i = 0; i < sizeof mla_only / sizeof mla_only[0]; i++)
    if (!g_kv && mla_given[i] && (mla_only[i] != COL_mla_q_lora_rank || q > 0))
      return row_error(rc, mla_only[i], "needs mla_kv_lora_rank (multi-head latent attention)");
  return SC_OK;
}

/* ------------------------------------------------------------ the row's configuration */

/* Resolves a scratch copy of cfg for a decision. */
static int resolve_copy(const row_ctx *rc, const sc_config *cfg, sc_config *out) {
  *out = *cfg;
  return sc_config_resolve(rc->set->ctx, out);
}

/* Micro-batch size when the source does not state it. Published runs are
 * tuned for throughput, and the micro-batch trades two costs:
 *   pp > 1: each stage idles (pp - 1) micro-batch times per step, so tuned
 *     pipelines use the smallest micro-batch: b = 1;
 *   pp = 1: there is no bubble, and a larger b only makes GEMMs larger and
 *     lets the data-parallel reduction hide behind the whole backward (it
 *     overlaps only the last micro-batch's backward): one micro-batch per
 *     replica (b = global_batch / dp), halved while the memory estimate
 *     exceeds the GPU.
 * (The artifact scripts of SC21 Table 1, Megatron-LM examples/sc21, follow
 * this pattern: b = 8-16 without pipelining, 1-4 with it.) */
static int choose_micro_batch(const row_ctx *rc, sc_config *cfg, char *why, size_t whyn) {
  sc_config r;
  cfg->training.micro_batch = 1;
  int e = resolve_copy(rc, cfg, &r);
  if (e) return e;
  if (r.parallel.pp > 1) {
    snprintf(why, whyn, "not stated; pp > 1: smallest pipeline bubble");
    return SC_OK;
  }
  int64_t per_replica = r.training.global_batch / r.parallel.dp, b = per_replica;
  for (;;) {
    sc_config t = r;
    sc_result res;
    t.training.micro_batch = b;
    if (!(e = resolve_copy(rc, &t, &t))) e = sc_simulate_ex(rc->set->ctx, &t, 0, NULL, NULL, &res);
    if (e) return e;
    if (res.memory_gib <= res.memory_capacity_gib || b % 2 || b == 1) break;
    b /= 2;
  }
  cfg->training.micro_batch = b;
  if (b == per_replica)
    snprintf(why, whyn, "not stated; pp = 1: one micro-batch per replica");
  else
    snprintf(why, whyn, "not stated; pp = 1: largest share of the %lld sequences per replica "
             "that fits in memory", (long long)per_replica);
  return SC_OK;
}

/* The identity columns: a blank one is an error of the file. */
static int identity_column(int k) {
  return k == COL_id || k == COL_measured_step_s || k == COL_source;
}

/* A row's own config file: PATH.rows/ID.yaml beside PATH.csv, when it
 * exists, for cited facts of that row alone that no column carries (an MoE
 * run's token dispatcher, its all-to-all overlap, its routing: the case
 * format has no columns for them). "" when there is none. */
static void row_config_path(const row_ctx *rc, const char *id, char *out, size_t n) {
  out[0] = 0;
  size_t len = strlen(rc->name);
  if (len < 4 || strcasecmp(rc->name + len - 4, ".csv")) return;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '-' || *p == '_' || *p == '.'))
      return;
  int k = snprintf(out, n, "%.*s.rows/%s.yaml", (int)(len - 4), rc->name, id);
  struct stat st;
  if (k < 0 || (size_t)k >= n || stat(out, &st) || !S_ISREG(st.st_mode)) out[0] = 0;
}

/* 1 for the GPU presets of Hopper (sm90) and Blackwell (sm100). */
static int hopper_or_newer(const char *gpu) {
  static const char *const names[] = {"h100", "h800", "h200", "h20", "gh200", "b200", "gb200"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strncasecmp(gpu, names[i], strlen(names[i]))) return 1;
  return 0;
}

/* Builds c->cfg, c->resolved and c->defaults from the row's configuration
 * cells. Returns 0, or the first reason the row cannot be simulated, with
 * its message on the context: SC_EUNSUPPORTED (a feature not modelled) or an
 * error ("file:line: ..."); SC_ENOMEM stops the load. */
static int build_config(const row_ctx *rc, sc_case *c) {
  char buf[SC_CASE_TEXT_MAX];
  int e;
  /* The configuration: defaults, the file's base config, then the row. */
  sc_config *cfg = &c->cfg;
  *cfg = *rc->base;
  char rowcfg[512];
  row_config_path(rc, c->id, rowcfg, sizeof rowcfg);
  if (rowcfg[0] && (e = sc_config_load_file(rc->set->ctx, cfg, rowcfg)))
    return e == SC_ENOMEM ? e : SC_EINVAL;
  /* What the base config and the row's own config give: a blank cell then
   * takes their value, not the column's default. */
  unsigned char given[SC_FIELD_COUNT];
  for (int i = 0; i < SC_FIELD_COUNT; i++) given[i] = cfg->field_line[i] != 0;
  c->resolved = *cfg;
  for (int k = 0; k < COL_COUNT; k++)
    if (columns[k].required && !identity_column(k) && !cell(rc, k, buf, sizeof buf)[0])
      return row_error(rc, k, "required value is blank");
  cell(rc, COL_network, buf, sizeof buf);
  if (buf[0] && strcmp(buf, "ib") && strcmp(buf, "roce") && strcmp(buf, "opa") &&
      strcmp(buf, "ethernet"))
    return row_error(rc, COL_network, "expected ib, roce, opa or ethernet, got \"%s\"", buf);
  if ((e = check_moe(rc))) return e;

  sc__strlcpy(cfg->model.name, c->id, sizeof cfg->model.name);
  /* GPT convention of Megatron-LM: the LM head shares the input embedding,
   * and hidden and attention dropout are Megatron-LM's 0.1 (resolution
   * drops it for gated FFNs). */
  if (!cfg->field_line[SC_FIELD_model_tied_embeddings]) cfg->model.tied_embeddings = 1;
  if (!cfg->field_line[SC_FIELD_model_dropout]) cfg->model.dropout = 0.1;
  cell(rc, COL_gpu, buf, sizeof buf);
  if ((e = set_field(rc, cfg, COL_gpu, "cluster.gpu", buf))) return e;
  char *d = c->defaults;
  size_t dn = sizeof c->defaults;
  if (rowcfg[0]) append(d, dn, "row config %s", rowcfg);
  for (int k = 0; k < COL_COUNT; k++) {
    if (!columns[k].key) continue;
    cell(rc, k, buf, sizeof buf);
    if (buf[0]) {
      if ((e = set_field(rc, cfg, k, columns[k].key, buf))) return e;
      continue;
    }
    int fi = sc_config_field_index(columns[k].key);
    if (fi >= 0 && given[fi]) {
      char v[64];
      if (sc__config_format_field(cfg, fi, v, sizeof v)) v[0] = 0;
      append(d, dn, "%s%s=%s (%s config)", d[0] ? "; " : "", columns[k].name, v,
             rc->base->field_line[fi] ? "base" : "row");
      continue;
    }
    if (columns[k].def && (e = set_field(rc, cfg, k, columns[k].key, columns[k].def))) return e;
  }
  /* Which fused attention kernel a blank attention cell means: Megatron-LM
   * and NeMo run attention in Transformer Engine, which prefers cuDNN fused
   * attention over FlashAttention on Hopper and newer GPUs when both apply
   * (NeMo docs, "Flash Attention": "Transformer Engine prefers cuDNN flash
   * attention on Hopper+ architectures"); other frameworks' rows (PyTorch
   * SDPA, the flash-attn package) and older GPUs keep FlashAttention-2. */
  char att_why[96] = "";
  if (!cell(rc, COL_attention, buf, sizeof buf)[0] &&
      !given[SC_FIELD_training_attention] &&
      (!strcasecmp(c->framework, "megatron") || !strcasecmp(c->framework, "nemo")) &&
      hopper_or_newer(cfg->cluster.gpu)) {
    cfg->training.attention = SC_ATTN_CUDNN;
    snprintf(att_why, sizeof att_why, "Transformer Engine on %s: cuDNN fused attention",
             cfg->cluster.gpu);
  }
  /* torchtitan's rows: its "selective" activation checkpointing is the
   * op-level SAC of its 8B and larger configs (selective_ac_option "op":
   * matmul, attention and reduce-scatter outputs kept, every second matmul
   * re-run), recompute op_sac, not Megatron-LM's selective recompute; and
   * its cross-entropy runs on the logits cast to fp32 (fp32_loss_grads);
   * with pp > 1 it pipelines with torch.distributed.pipelining, whose last
   * stage keeps every micro-batch's output to the step's end
   * (pp_keep_outputs). A base or row config that sets one keeps its value. */
  char sac_why[96] = "", loss_why[96] = "", keep_why[96] = "";
  if (!strcasecmp(c->framework, "torchtitan")) {
    if (cfg->training.recompute == SC_RECOMPUTE_SELECTIVE &&
        cell(rc, COL_recompute, buf, sizeof buf)[0]) {
      cfg->training.recompute = SC_RECOMPUTE_OP_SAC;
      snprintf(sac_why, sizeof sac_why, "torchtitan: selective AC is op-level SAC");
    }
    if (!given[SC_FIELD_training_fp32_loss_grads]) {
      cfg->training.fp32_loss_grads = 1;
      snprintf(loss_why, sizeof loss_why, "torchtitan: cross-entropy on fp32 logits");
    }
    if (cfg->parallel.pp > 1 && !given[SC_FIELD_parallel_pp_keep_outputs]) {
      cfg->parallel.pp_keep_outputs = 1;
      snprintf(keep_why, sizeof keep_why,
               "torchtitan: torch pipelining keeps the last stage's outputs");
    }
  }
  /* Messages cite the row: fields the row (or base config) gave point at
   * its line; the rest keep 0 ("default"), which resolution relies on. */
  sc__strlcpy(cfg->origin, rc->name, sizeof cfg->origin);
  for (int i = 0; i < SC_FIELD_COUNT; i++)
    if (cfg->field_line[i]) cfg->field_line[i] = rc->line;

  /* Interleaving depth: when the row or the base config says the source ran
   * the interleaved schedule but gives no depth, one layer per model chunk
   * (the deepest Megatron-LM allows; with a prime number of layers per
   * stage the only one). Without pipelining there is nothing to
   * interleave. */
  char vpp_why[160] = "", mb_why[160] = "";
  int sched_cell = cell(rc, COL_schedule, buf, sizeof buf)[0] != 0;
  int vpp_blank = !cell(rc, COL_vpp, buf, sizeof buf)[0] &&
                  !given[SC_FIELD_parallel_vpp];
  if (vpp_blank && cfg->parallel.schedule == SC_SCHED_INTERLEAVED) {
    if (cfg->parallel.pp > 1 && cfg->model.layers % cfg->parallel.pp == 0) {
      cfg->parallel.vpp = cfg->model.layers / cfg->parallel.pp;
      snprintf(vpp_why, sizeof vpp_why,
               "not stated; interleaved schedule (%s): one layer per chunk",
               sched_cell ? "schedule column" : "base config");
    } else if (cfg->parallel.pp == 1 && !sched_cell) {
      cfg->parallel.schedule = SC_SCHED_1F1B;
      snprintf(vpp_why, sizeof vpp_why, "pp = 1: no interleaving");
    }
  } else if (vpp_blank) {
    snprintf(vpp_why, sizeof vpp_why, "not stated; schema default");
  } else if (!sched_cell && cfg->parallel.vpp == 1 &&
             cfg->parallel.schedule == SC_SCHED_INTERLEAVED) {
    cfg->parallel.schedule = SC_SCHED_1F1B; /* the row's vpp = 1 wins over the base config */
  }
  if (!cell(rc, COL_micro_batch, buf, sizeof buf)[0] &&
      !given[SC_FIELD_training_micro_batch] &&
      (e = choose_micro_batch(rc, cfg, mb_why, sizeof mb_why)))
    return e;

  c->resolved = *cfg;
  if ((e = sc_config_resolve(rc->set->ctx, &c->resolved))) return e;

  /* Defaults applied to blank cells, with their resolved values. */
  const sc_config *r = &c->resolved;
  for (int k = 0; k < COL_COUNT; k++) {
    if (!columns[k].key || cell(rc, k, buf, sizeof buf)[0]) continue;
    int fi = sc_config_field_index(columns[k].key);
    if (fi < 0 || given[fi] || !default_shown(columns[k].show, r)) continue;
    char v[64];
    if (sc__config_format_field(r, fi, v, sizeof v)) v[0] = 0;
    const char *why = k == COL_micro_batch ? mb_why
                      : k == COL_vpp           ? vpp_why
                      : k == COL_attention && att_why[0] ? att_why
                                                         : columns[k].why;
    append(d, dn, "%s%s=%s (%s)", d[0] ? "; " : "", columns[k].name, v, why);
  }
  if (sac_why[0]) append(d, dn, "%srecompute=op_sac (%s)", d[0] ? "; " : "", sac_why);
  if (loss_why[0]) append(d, dn, "%sfp32_loss_grads=true (%s)", d[0] ? "; " : "", loss_why);
  if (keep_why[0]) append(d, dn, "%spp_keep_outputs=true (%s)", d[0] ? "; " : "", keep_why);
  return SC_OK;
}

/* The reason a case is not simulated, from the library's message msg for
 * code: for SC_EUNSUPPORTED the feature alone (the "file:" or "file:line:"
 * the library puts before it dropped); for an error the message located at
 * the row: as it is when it starts with "file:line:", else with the row's
 * "file:line: " before it. */
static void failure_reason(const sc_case *c, int code, const char *msg, char *out, size_t n) {
  size_t fl = strlen(c->file);
  const char *rest = msg;
  int located = 0;
  if (fl && !strncmp(msg, c->file, fl) && msg[fl] == ':') {
    const char *q = msg + fl + 1;
    if (*q >= '0' && *q <= '9') {
      while (*q >= '0' && *q <= '9') q++;
      if (*q == ':') located = 1, rest = q + 1;
    } else {
      rest = q;
    }
    while (*rest == ' ') rest++;
  }
  if (code == SC_EUNSUPPORTED) snprintf(out, n, "%s", rest);
  else if (located) snprintf(out, n, "%s", msg);
  else snprintf(out, n, "%s:%d: %s", c->file, c->line, rest);
}

/* Builds the case of the current row into *c. Returns 0 (the row is kept,
 * simulated or not: c->status), or an error of the file itself (the row's
 * identity or measurement is invalid) or SC_ENOMEM. */
static int row_to_case(const row_ctx *rc, sc_case *c) {
  char buf[SC_CASE_TEXT_MAX];
  int e;
  memset(c, 0, sizeof *c);
  c->line = rc->line;
  sc__strlcpy(c->file, rc->name, sizeof c->file);

  /* Identity and measurement first: without them there is no row to list. */
  for (int k = 0; k < COL_COUNT; k++)
    if (columns[k].required && identity_column(k) && !cell(rc, k, buf, sizeof buf)[0])
      return row_error(rc, k, "required value is blank");

  cell(rc, COL_id, buf, sizeof buf);
  if (strlen(buf) >= sizeof c->id)
    return row_error(rc, COL_id, "longer than %zu bytes", sizeof c->id - 1);
  sc__strlcpy(c->id, buf, sizeof c->id);
  const sc_case *dup = find_case(rc->set, c->id, rc->set->n);
  if (dup) return row_error(rc, COL_id, "duplicate id \"%s\" (first at %s:%d)", c->id,
                            dup->file, dup->line);

  cell(rc, COL_split, buf, sizeof buf);
  if (!buf[0] || !strcmp(buf, "validation")) c->split = SC_SPLIT_VALIDATION;
  else if (!strcmp(buf, "calibration")) c->split = SC_SPLIT_CALIBRATION;
  else return row_error(rc, COL_split, "expected calibration or validation, got \"%s\"", buf);

  if ((e = cell_real(rc, COL_measured_step_s, 1, &c->measured_step_s)) ||
      (e = cell_real(rc, COL_measured_tflops_per_gpu, 0, &c->measured_tflops_per_gpu)))
    return e;
  cell(rc, COL_framework, buf, sizeof buf);
  sc__strlcpy(c->framework, buf, sizeof c->framework);
  cell(rc, COL_flops_convention, buf, sizeof buf);
  if (buf[0] && strcmp(buf, "model") && strcmp(buf, "hardware"))
    return row_error(rc, COL_flops_convention, "expected model or hardware, got \"%s\"", buf);
  sc__strlcpy(c->flops_convention, buf, sizeof c->flops_convention);

  /* The configuration: any failure is the row's, listed with its reason. */
  e = build_config(rc, c);
  if (!e || e == SC_ENOMEM) return e;
  c->status = e;
  failure_reason(c, e, sc_errmsg(rc->set->ctx),
                 e == SC_EUNSUPPORTED ? c->unsupported : c->error, SC_CASE_TEXT_MAX);
  c->resolved = c->cfg; /* as far as it was built */
  c->defaults[0] = 0;
  return SC_OK;
}

/* ------------------------------------------------------------ loading */

static int read_whole(sc_ctx *ctx, const char *path, char **out, size_t *len, size_t *cap) {
  return sc__read_file(ctx, path, NULL, NULL, MAX_CASE_FILE_BYTES, out, len, cap);
}

/* Maps header cells to known columns; unknown ones become warnings. */
static int read_header(sc_caseset *set, const csv *r, int line, int col[COL_COUNT]) {
  for (int k = 0; k < COL_COUNT; k++) col[k] = -1;
  for (size_t i = 0; i < r->nfield; i++) {
    const char *h = csv_cell(r, i);
    while (*h == ' ' || *h == '\t') h++;
    char name[64];
    size_t len = strlen(h);
    while (len && (h[len - 1] == ' ' || h[len - 1] == '\t')) len--;
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, h, len);
    name[len] = 0;
    int k;
    for (k = 0; k < COL_COUNT; k++)
      if (!strcmp(columns[k].name, name)) break;
    if (k == COL_COUNT) {
      int e = add_warning(set, "%s:%d: unknown column \"%s\" ignored", r->name, line, name);
      if (e) return e;
      continue;
    }
    if (col[k] >= 0)
      return sc__error(set->ctx, SC_EINVAL, "%s:%d: duplicate column \"%s\"", r->name, line,
                       name);
    col[k] = (int)i;
  }
  for (int k = 0; k < COL_COUNT; k++)
    if (columns[k].required && col[k] < 0)
      return sc__error(set->ctx, SC_EINVAL, "%s:%d: missing required column \"%s\"", r->name,
                       line, columns[k].name);
  return SC_OK;
}

static int load_rows(sc_caseset *set, const char *name, const char *text, size_t len,
                     const sc_config *base, const char *base_name) {
  csv r;
  csv_open(&r, set->ctx, name, text, len);
  row_ctx rc;
  memset(&rc, 0, sizeof rc);
  rc.set = set;
  rc.name = name;
  rc.r = &r;
  rc.base = base;
  rc.base_name = base_name;
  int line, e = csv_record(&r, &line);
  if (e == 0) e = sc__error(set->ctx, SC_EINVAL, "%s:1: empty case file (no header row)", name);
  if (e < 0) goto done;
  if ((e = read_header(set, &r, line, rc.col))) goto done;
  size_t ncols = r.nfield;
  size_t rows = 0;
  while ((e = csv_record(&r, &line)) == 1) {
    rc.line = line;
    if (r.nfield != ncols) {
      e = sc__error(set->ctx, SC_EINVAL, "%s:%d: row has %zu fields, the header has %zu", name,
                    line, r.nfield, ncols);
      goto done;
    }
    if (sc__grow(set->ctx, (void **)&set->cases, sizeof(sc_case), &set->cap, set->n + 1)) {
      e = SC_ENOMEM;
      goto done;
    }
    if ((e = row_to_case(&rc, &set->cases[set->n]))) goto done;
    set->n++;
    rows++;
  }
  if (e < 0) goto done;
  if (!rows) e = add_warning(set, "%s: no cases (header only)", name);
done:
  csv_free(&r);
  return e;
}

/* PATH.csv -> PATH.yaml when that file exists; "" otherwise. */
static void sibling_base(const char *path, char *out, size_t n) {
  out[0] = 0;
  size_t len = strlen(path);
  if (len < 4 || strcasecmp(path + len - 4, ".csv") || len + 2 >= n) return;
  snprintf(out, n, "%.*s.yaml", (int)(len - 4), path);
  struct stat st;
  if (stat(out, &st) || !S_ISREG(st.st_mode)) out[0] = 0;
}

static int load_common(sc_caseset *set, const char *name, const char *text, size_t len,
                       const char *base_path) {
  sc_ctx *ctx = set->ctx;
  size_t n0 = set->n, w0 = set->nwarn;
  if (strlen(name) >= sizeof set->files[0].path ||
      (base_path && strlen(base_path) >= sizeof set->files[0].base))
    return sc__error(ctx, SC_EINVAL, "%s: path too long", name);
  sc_config base;
  sc_config_default(&base);
  int e = SC_OK;
  if (base_path && base_path[0]) {
    e = sc_config_load_file(ctx, &base, base_path);
    if (e) return e == SC_ENOMEM ? e : (e == SC_EREAD ? SC_EREAD : SC_EINVAL);
  }
  if (sc__grow(ctx, (void **)&set->files, sizeof(file_entry), &set->files_cap, set->nfiles + 1))
    return SC_ENOMEM;
  e = load_rows(set, name, text, len, &base, base_path ? base_path : "");
  if (e) {
    set->n = n0;
    set->nwarn = w0;
    return e;
  }
  file_entry *f = &set->files[set->nfiles++];
  sc__strlcpy(f->path, name, sizeof f->path);
  sc__strlcpy(f->base, base_path ? base_path : "", sizeof f->base);
  return SC_OK;
}

int sc_caseset_load_string(sc_caseset *set, const char *name, const char *text, size_t len,
                           const char *base) {
  if (!set) return SC_EINVAL;
  if (!name || !text) return sc__error(set->ctx, SC_EINVAL, "case file: no name or text");
  return load_common(set, name, text, len, base);
}

int sc_caseset_load_file(sc_caseset *set, const char *path) {
  if (!set) return SC_EINVAL;
  if (!path) return sc__error(set->ctx, SC_EINVAL, "case file: no path");
  char *text;
  size_t len, cap;
  int e = read_whole(set->ctx, path, &text, &len, &cap);
  if (e) return e;
  char base[256];
  sibling_base(path, base, sizeof base);
  e = load_common(set, path, text, len, base);
  sc__free(set->ctx, text, cap);
  return e;
}

/* ------------------------------------------------------------ prediction */

/* Where case_config failed. */
enum { AT_NONE = 0, AT_OVERRIDE, AT_RESOLVE };

/* The case's configuration with the options applied, resolved; *at says
 * which step failed. */
static int case_config(sc_ctx *ctx, const sc_case *c, const sc_validate_options *opt,
                       sc_config *out, int *at) {
  *at = AT_NONE;
  sc_config cfg = c->cfg;
  if (opt && opt->calibration) {
    double *dst = (double *)&cfg.costs;
    const double *src = (const double *)opt->calibration;
    for (size_t i = 0; i < sizeof cfg.costs / sizeof(double); i++)
      if (src[i] != 0) dst[i] = src[i];
  }
  int e;
  for (size_t i = 0; opt && i < opt->nsets; i++)
    if ((e = sc_config_set(ctx, &cfg, opt->sets[i]))) {
      *at = AT_OVERRIDE;
      return e;
    }
  if ((e = sc_config_resolve(ctx, &cfg))) {
    *at = AT_RESOLVE;
    return e;
  }
  *out = cfg;
  return SC_OK;
}

int sc_case_config(sc_ctx *ctx, const sc_case *c, const sc_validate_options *opt,
                   sc_config *out) {
  if (!ctx) return SC_EINVAL;
  if (!c || !out) return sc__error(ctx, SC_EINVAL, "sc_case_config: no case or output");
  if (c->status == SC_EUNSUPPORTED)
    return sc__error(ctx, SC_EUNSUPPORTED, "%s:%d: case %s: %s", c->file, c->line, c->id,
                     c->unsupported);
  if (c->status) return sc__error(ctx, c->status, "%s", c->error);
  int at, e = case_config(ctx, c, opt, out, &at);
  if (e && at == AT_RESOLVE) {
    char msg[SC_ERRMSG_MAX];
    sc__strlcpy(msg, sc_errmsg(ctx), sizeof msg);
    return sc__error(ctx, e, "%s (case %s)", msg, c->id);
  }
  return e;
}

int sc_validate_run(sc_ctx *ctx, const sc_caseset *set, const sc_validate_options *opt,
                    sc_case_result *out) {
  if (!ctx) return SC_EINVAL;
  if (!set || !out) return sc__error(ctx, SC_EINVAL, "sc_validate_run: no cases or output");
  for (size_t i = 0; i < set->n; i++) {
    const sc_case *c = &set->cases[i];
    sc_case_result *r = &out[i];
    memset(r, 0, sizeof *r);
    if (c->status) { /* not built when the file was read */
      r->status = c->status;
      sc__strlcpy(r->reason, c->status == SC_EUNSUPPORTED ? c->unsupported : c->error,
                  sizeof r->reason);
      continue;
    }
    sc_config cfg;
    int at, e = case_config(ctx, c, opt, &cfg, &at);
    if (e && at == AT_OVERRIDE) { /* an override that applies to no row: the options' error */
      char msg[SC_ERRMSG_MAX];
      sc__strlcpy(msg, sc_errmsg(ctx), sizeof msg);
      return sc__error(ctx, e, "%s:%d: case %s: %s", c->file, c->line, c->id, msg);
    }
    if (!e) e = sc_simulate(ctx, &cfg, NULL, NULL, &r->result);
    if (e == SC_ENOMEM) return e;
    if (e) { /* this row only: listed with its reason, the batch goes on */
      r->status = e;
      failure_reason(c, e, sc_errmsg(ctx), r->reason, sizeof r->reason);
      memset(&r->result, 0, sizeof r->result);
      continue;
    }
    r->predicted_step_s = r->result.step_time_s;
    r->error_pct = 100.0 * (r->predicted_step_s - c->measured_step_s) / c->measured_step_s;
  }
  return SC_OK;
}

/* ------------------------------------------------------------ statistics */

/* k-th smallest (0-based) of the selected absolute errors, by counting:
 * O(n^2) but allocation-free; case sets hold tens to hundreds of rows. */
void sc_case_mix(const sc_case *c, char *out, size_t n) {
  const sc_parallel_cfg *p = &c->resolved.parallel;
  out[0] = 0;
  if (n == 0) return;
  if (p->zero_stage == 3) append(out, n, p->fsdp_shard > 0 && p->fsdp_shard < p->dp * p->cp
                                             ? "HSDP" : "FSDP");
  else if (p->dp > 1) append(out, n, "DP");
  static const char *const dims[] = {"TP", "PP", "CP", "EP"};
  const int64_t deg[] = {p->tp, p->pp, p->cp, p->ep};
  for (int k = 0; k < 4; k++)
    if (deg[k] > 1) append(out, n, "%s%s", out[0] ? "+" : "", dims[k]);
  if (!out[0]) append(out, n, "1 GPU");
}

/* 1 when case i belongs to group `key` of kind `by` (NULL key: every case)
 * and to split `split` (-1: any). */
static int selected(const sc_caseset *set, size_t i, sc_validate_group by, const char *key,
                    int split) {
  const sc_case *c = &set->cases[i];
  if (split >= 0 && (int)c->split != split) return 0;
  if (!key) return 1;
  if (by == SC_VALIDATE_BY_GPU) return !strcmp(c->resolved.cluster.gpu, key);
  if (by == SC_VALIDATE_BY_MIX) {
    char mix[SC_CASE_MIX_MAX];
    sc_case_mix(c, mix, sizeof mix);
    return !strcmp(mix, key);
  }
  return !strcmp(c->file, key);
}

static double kth_abs(const sc_caseset *set, const sc_case_result *res, sc_validate_group by,
                      const char *key, int split, size_t k) {
  for (size_t i = 0; i < set->n; i++) {
    if (res[i].status || !selected(set, i, by, key, split)) continue;
    double v = fabs(res[i].error_pct);
    size_t less = 0, equal = 0;
    for (size_t j = 0; j < set->n; j++) {
      if (res[j].status || !selected(set, j, by, key, split)) continue;
      double u = fabs(res[j].error_pct);
      if (u < v) less++;
      else if (u == v) equal++;
    }
    if (less <= k && k < less + equal) return v;
  }
  return 0;
}

void sc_validate_stats_by(const sc_caseset *set, const sc_case_result *res, sc_validate_group by,
                          const char *key, int split, sc_error_stats *out) {
  memset(out, 0, sizeof *out);
  if (!set || !res) return;
  double sum = 0, bias = 0;
  for (size_t i = 0; i < set->n; i++) {
    const sc_case *c = &set->cases[i];
    if (!selected(set, i, by, key, split)) continue;
    if (res[i].status) {
      if (res[i].status == SC_EUNSUPPORTED) out->unsupported++;
      else out->errors++;
      continue;
    }
    double a = fabs(res[i].error_pct);
    const sc_result *r = &res[i].result;
    if (r->step_time_hi_s > 0 && c->measured_step_s >= r->step_time_lo_s &&
        c->measured_step_s <= r->step_time_hi_s)
      out->in_interval++;
    if (!out->n || a > out->max_abs_pct) {
      out->max_abs_pct = a;
      out->worst = i;
    }
    out->n++;
    sum += a;
    bias += res[i].error_pct;
  }
  if (!out->n) return;
  out->mape_pct = sum / (double)out->n;
  out->bias_pct = bias / (double)out->n;
  out->coverage_pct = 100.0 * (double)out->in_interval / (double)out->n;
  size_t lo = (out->n - 1) / 2, hi = out->n / 2;
  out->median_abs_pct =
      0.5 * (kth_abs(set, res, by, key, split, lo) + kth_abs(set, res, by, key, split, hi));
}

void sc_validate_stats(const sc_caseset *set, const sc_case_result *res, const char *file,
                       int split, sc_error_stats *out) {
  sc_validate_stats_by(set, res, SC_VALIDATE_BY_FILE, file, split, out);
}

/* 90 % in tenths: the nominal level of the prediction interval. */
#define INTERVAL_LEVEL_TENTHS 9

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The split-conformal half-width of n absolute errors a (sorted here): the
 * k-th smallest with k = ceil((n + 1) * 0.9), the rank at which a new
 * error exchangeable with these falls inside with probability >= 90 %
 * (Vovk, Gammerman and Shafer 2005; Lei et al. 2018, JASA 113:1094).
 * 0 when k > n (fewer than 9 errors: no finite 90 % width). */
static double conformal_width(double *a, size_t n) {
  size_t k = (INTERVAL_LEVEL_TENTHS * (n + 1) + 9) / 10;
  if (!n || k > n) return 0;
  qsort(a, n, sizeof *a, cmp_double);
  return a[k - 1];
}

int sc_validate_fit_interval(const sc_caseset *set, const sc_case_result *res,
                             const double *held_out_s, sc_interval_fit *out) {
  if (!out) return SC_EINVAL;
  memset(out, 0, sizeof *out);
  if (!set || !res) return SC_EINVAL;
  double *a[3]; /* absolute log errors: dense, MoE, every row */
  size_t bytes = (set->n ? set->n : 1) * sizeof(double);
  for (int g = 0; g < 3; g++)
    if (!(a[g] = sc__malloc(set->ctx, bytes))) {
      for (int h = 0; h < g; h++) sc__free(set->ctx, a[h], bytes);
      return SC_ENOMEM;
    }
  double ss[2] = {0, 0};
  size_t n[3] = {0, 0, 0};
  for (size_t i = 0; i < set->n; i++) {
    const sc_case *c = &set->cases[i];
    if (res[i].status || c->split != SC_SPLIT_CALIBRATION || res[i].predicted_step_s <= 0)
      continue;
    double p = res[i].predicted_step_s;
    if (held_out_s && held_out_s[i] > 0) {
      p = held_out_s[i];
      out->held_out++;
    }
    int g = c->resolved.model.moe_experts > 0;
    double e = log(c->measured_step_s / p);
    ss[g] += e * e;
    a[g][n[g]++] = fabs(e);
    a[2][n[2]++] = fabs(e);
  }
  out->dense_n = n[0];
  out->moe_n = n[1];
  if (n[0]) out->dense_rms = sqrt(ss[0] / (double)n[0]);
  if (n[1]) out->moe_rms = sqrt(ss[1] / (double)n[1]);
  out->dense = conformal_width(a[0], n[0]);
  out->moe = conformal_width(a[1], n[1]);
  /* Too few MoE rows for a 90 % rank: the rank over every calibration row
   * (pooled). An MoE step has every term of a dense one plus routing and
   * dispatch: its interval is never narrower than the dense one (a few MoE
   * rows that happen to fit well say little about the rest). */
  if (n[1] && !out->moe) {
    out->moe = conformal_width(a[2], n[2]);
    out->moe_pooled = 1;
  }
  if (out->moe > 0 && out->moe < out->dense) out->moe = out->dense;
  for (int g = 0; g < 3; g++) sc__free(set->ctx, a[g], bytes);
  return SC_OK;
}

int sc_validate_load_held_out(const sc_caseset *set, const char *path, double *predicted_s,
                              double *held_out_s) {
  if (!set) return SC_EINVAL;
  if (!path || !held_out_s) return sc__error(set->ctx, SC_EINVAL, "held-out file: no path");
  for (size_t i = 0; i < set->n; i++) {
    held_out_s[i] = 0;
    if (predicted_s) predicted_s[i] = 0;
  }
  char *text;
  size_t len, cap;
  int e = read_whole(set->ctx, path, &text, &len, &cap);
  if (e) return e;
  csv r;
  csv_open(&r, set->ctx, path, text, len);
  static const char *const head[4] = {"id", "file", "predicted_s", "loo_predicted_s"};
  int line, got, first = 1;
  while ((got = csv_record(&r, &line)) > 0) {
    if (r.nfield != 4) {
      e = sc__error(set->ctx, SC_EINVAL, "%s:%d: expected 4 cells (%s,%s,%s,%s), got %zu",
                    path, line, head[0], head[1], head[2], head[3], r.nfield);
      break;
    }
    if (first) {
      first = 0;
      for (int k = 0; k < 4 && !e; k++)
        if (strcmp(csv_cell(&r, (size_t)k), head[k]))
          e = sc__error(set->ctx, SC_EINVAL, "%s:%d: column %d is \"%s\", expected \"%s\"",
                        path, line, k + 1, csv_cell(&r, (size_t)k), head[k]);
      if (e) break;
      continue;
    }
    double v[2];
    for (int k = 0; k < 2 && !e; k++) {
      char *end;
      errno = 0;
      v[k] = strtod(csv_cell(&r, (size_t)k + 2), &end);
      if (*end || errno || !isfinite(v[k]) || v[k] <= 0)
        e = sc__error(set->ctx, SC_EINVAL, "%s:%d: %s: expected a positive number, got \"%s\"",
                      path, line, head[k + 2], csv_cell(&r, (size_t)k + 2));
    }
    if (e) break;
    /* A row of a file not loaded is no error: the set may hold fewer files. */
    for (size_t i = 0; i < set->n; i++) {
      const char *b = strrchr(set->cases[i].file, '/');
      if (strcmp(set->cases[i].id, csv_cell(&r, 0)) ||
          strcmp(b ? b + 1 : set->cases[i].file, csv_cell(&r, 1)))
        continue;
      if (predicted_s) predicted_s[i] = v[0];
      held_out_s[i] = v[1];
    }
  }
  if (got < 0) e = got;
  csv_free(&r);
  sc__free(set->ctx, text, cap);
  return e;
}

/* ------------------------------------------------------------ output */

static const char *split_name(sc_split s) {
  return s == SC_SPLIT_CALIBRATION ? "calibration" : "validation";
}

/* Last path component, for compact tables. */
static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static int write_json_string(sc_write_fn w, void *ud, const char *s) {
  int rc = w(ud, "\"", 1);
  for (; *s && !rc; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') rc = sc__writef(w, ud, "\\%c", ch);
    else if (ch < 0x20) rc = sc__writef(w, ud, "\\u%04x", ch);
    else rc = w(ud, s, 1);
  }
  return rc ? rc : w(ud, "\"", 1);
}

static int write_csv_field(sc_write_fn w, void *ud, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) return sc__writef(w, ud, "%s", s);
  int rc = w(ud, "\"", 1);
  for (; *s && !rc; s++) rc = *s == '"' ? w(ud, "\"\"", 2) : w(ud, s, 1);
  return rc ? rc : w(ud, "\"", 1);
}

/* Scopes of the summary: each group (file, GPU or parallelism mix, in the
 * order of first appearance) by split, then all cases by split. */
typedef struct scope {
  char key[SC_CASE_MIX_MAX > 64 ? SC_CASE_MIX_MAX : 64]; /* "" = all cases */
  int split;                                              /* -1 = any */
} scope;

static const char *scope_key(const scope *s) { return s->key[0] ? s->key : NULL; }

/* The group key of case i. */
static void case_key(const sc_caseset *set, size_t i, sc_validate_group by, char *out, size_t n) {
  const sc_case *c = &set->cases[i];
  if (by == SC_VALIDATE_BY_GPU) sc__strlcpy(out, c->resolved.cluster.gpu, n);
  else if (by == SC_VALIDATE_BY_MIX) sc_case_mix(c, out, n);
  else sc__strlcpy(out, c->file, n);
}

static size_t scopes(const sc_caseset *set, sc_validate_group by, scope *out, size_t max) {
  size_t n = 0, keys = 0;
  if (by == SC_VALIDATE_BY_FILE) {
    for (size_t f = 0; f < set->nfiles; f++)
      for (int s = SC_SPLIT_CALIBRATION; s >= SC_SPLIT_VALIDATION; s--)
        if (n < max) {
          sc__strlcpy(out[n].key, set->files[f].path, sizeof out[n].key);
          out[n++].split = s;
        }
  } else {
    for (size_t i = 0; i < set->n; i++) {
      char k[sizeof out->key];
      case_key(set, i, by, k, sizeof k);
      int seen = 0;
      for (size_t j = 0; j < n && !seen; j++) seen = !strcmp(out[j].key, k);
      if (seen || n + 2 > max) continue;
      for (int s = SC_SPLIT_CALIBRATION; s >= SC_SPLIT_VALIDATION; s--) {
        sc__strlcpy(out[n].key, k, sizeof out[n].key);
        out[n++].split = s;
      }
      keys++;
    }
  }
  (void)keys;
  for (int s = SC_SPLIT_CALIBRATION; s >= -1; s--)
    if (n < max) {
      out[n].key[0] = 0;
      out[n++].split = s;
    }
  return n;
}

static const char *group_title(sc_validate_group by) {
  return by == SC_VALIDATE_BY_GPU ? "gpu" : by == SC_VALIDATE_BY_MIX ? "parallelism" : "file";
}

static const char *all_title(sc_validate_group by) {
  return by == SC_VALIDATE_BY_FILE ? "all files" : "all cases";
}

/* A scope's label: a file's last path component, a GPU or mix as it is. */
static const char *scope_label(const scope *s, sc_validate_group by) {
  if (!s->key[0]) return all_title(by);
  if (by != SC_VALIDATE_BY_FILE) return s->key;
  const char *b = strrchr(s->key, '/');
  return b ? b + 1 : s->key;
}

#define MAX_SCOPES 256

static const char *scope_split(int s) {
  return s < 0 ? "all" : split_name((sc_split)s);
}

/* "(+3 unsupported, 1 error)" style suffix of the rows without a prediction;
 * "" when there are none. */
static void without_text(const sc_error_stats *st, const char *lead, char *buf, size_t n) {
  buf[0] = 0;
  if (!st->unsupported && !st->errors) return;
  snprintf(buf, n, " (%s", lead);
  if (st->unsupported) append(buf, n, "%zu unsupported", st->unsupported);
  if (st->errors)
    append(buf, n, "%s%zu error%s", st->unsupported ? ", " : "", st->errors,
           st->errors == 1 ? "" : "s");
  append(buf, n, ")");
}

static int write_text(const sc_caseset *set, const sc_case_result *res, sc_validate_group by,
                      sc_write_fn w, void *ud) {
  int rc = 0;
  sc_error_stats all;
  sc_validate_stats(set, res, NULL, -1, &all);
  SC_WRITE(rc, sc__writef(w, ud,
                          "stepcast validate: %zu cases in %zu file%s: %zu simulated, %zu "
                          "unsupported, %zu error%s\n",
                          set->n, set->nfiles, set->nfiles == 1 ? "" : "s", all.n,
                          all.unsupported, all.errors, all.errors == 1 ? "" : "s"));
  for (size_t f = 0; f < set->nfiles; f++) {
    sc_error_stats fs;
    sc_validate_stats(set, res, set->files[f].path, -1, &fs);
    SC_WRITE(rc, sc__writef(w, ud, "\n%s", set->files[f].path));
    if (set->files[f].base[0])
      SC_WRITE(rc, sc__writef(w, ud, "  (base config %s)", set->files[f].base));
    SC_WRITE(rc, sc__writef(w, ud, "\n  %zu rows: %zu simulated, %zu unsupported, %zu error%s\n",
                            fs.n + fs.unsupported + fs.errors, fs.n, fs.unsupported,
                            fs.errors, fs.errors == 1 ? "" : "s"));
    SC_WRITE(rc, sc__writef(w, ud, "  %-34s %-11s %11s %11s %8s\n", "id", "split", "measured s",
                            "predicted s", "error %"));
    for (size_t i = 0; i < set->n; i++) {
      const sc_case *c = &set->cases[i];
      if (strcmp(c->file, set->files[f].path)) continue;
      if (res[i].status)
        SC_WRITE(rc, sc__writef(w, ud, "  %-34s %-11s %11.4g %11s   %s: %s\n", c->id,
                                split_name(c->split), c->measured_step_s, "-",
                                res[i].status == SC_EUNSUPPORTED ? "unsupported" : "error",
                                res[i].reason));
      else
        SC_WRITE(rc, sc__writef(w, ud, "  %-34s %-11s %11.4g %11.4g %+8.1f\n", c->id,
                                split_name(c->split), c->measured_step_s,
                                res[i].predicted_step_s, res[i].error_pct));
      if (c->defaults[0] && !res[i].status)
        SC_WRITE(rc, sc__writef(w, ud, "      defaults: %s\n", c->defaults));
    }
  }
  SC_WRITE(rc, sc__writef(w, ud,
                          "\nsummary (|error| in %%, over the simulated cases: n; in90: "
                          "measured inside the 90 %% prediction interval)\n"
                          "  %-34s %-11s %4s %7s %7s %7s %7s %5s  %s\n",
                          group_title(by), "split", "n", "MAPE", "median", "worst", "bias",
                          "in90", "worst case"));
  scope sc[MAX_SCOPES];
  size_t ns = scopes(set, by, sc, MAX_SCOPES);
  for (size_t k = 0; k < ns; k++) {
    sc_error_stats st;
    sc_validate_stats_by(set, res, by, scope_key(&sc[k]), sc[k].split, &st);
    if (!st.n && !st.unsupported && !st.errors) continue;
    const char *fname = scope_label(&sc[k], by);
    char without[96];
    if (!st.n) {
      without_text(&st, "", without, sizeof without);
      SC_WRITE(rc, sc__writef(w, ud, "  %-34s %-11s %4zu %7s %7s %7s %7s %5s %s\n", fname,
                              scope_split(sc[k].split), st.n, "-", "-", "-", "-", "-", without));
      continue;
    }
    without_text(&st, "+", without, sizeof without);
    SC_WRITE(rc, sc__writef(w, ud, "  %-34s %-11s %4zu %7.1f %7.1f %7.1f %+7.1f %4.0f%%  %s%s\n",
                            fname, scope_split(sc[k].split), st.n, st.mape_pct,
                            st.median_abs_pct, st.max_abs_pct, st.bias_pct, st.coverage_pct,
                            set->cases[st.worst].id, without));
  }
  sc_error_stats v;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &v);
  if (v.n)
    SC_WRITE(rc, sc__writef(w, ud,
                            "\nvalidation rows: MAPE %.1f %%, median %.1f %%, worst %.1f %% (%s) "
                            "over %zu simulated case%s; %zu unsupported, %zu error%s\n"
                            "  measured inside the 90 %% prediction interval: %zu of %zu "
                            "(%.0f %%)\n",
                            v.mape_pct, v.median_abs_pct, v.max_abs_pct,
                            set->cases[v.worst].id, v.n, v.n == 1 ? "" : "s", v.unsupported,
                            v.errors, v.errors == 1 ? "" : "s", v.in_interval, v.n,
                            v.coverage_pct));
  else
    SC_WRITE(rc, sc__writef(w, ud,
                            "\nvalidation rows: none simulated (%zu unsupported, %zu error%s)\n",
                            v.unsupported, v.errors, v.errors == 1 ? "" : "s"));
  return rc;
}

static int write_json_stats(sc_write_fn w, void *ud, const sc_error_stats *st) {
  if (!st->n)
    return sc__writef(w, ud,
                      "\"n\":0,\"unsupported\":%zu,\"errors\":%zu,\"mape_pct\":null,"
                      "\"median_abs_error_pct\":null,\"max_abs_error_pct\":null,"
                      "\"bias_pct\":null,\"interval_coverage_pct\":null",
                      st->unsupported, st->errors);
  return sc__writef(w, ud,
                    "\"n\":%zu,\"unsupported\":%zu,\"errors\":%zu,\"mape_pct\":%.6g,"
                    "\"median_abs_error_pct\":%.6g,\"max_abs_error_pct\":%.6g,"
                    "\"bias_pct\":%.6g,\"interval_coverage_pct\":%.6g",
                    st->n, st->unsupported, st->errors, st->mape_pct, st->median_abs_pct,
                    st->max_abs_pct, st->bias_pct, st->coverage_pct);
}

static int write_json(const sc_caseset *set, const sc_case_result *res, sc_validate_group by,
                      sc_write_fn w, void *ud) {
  int rc = sc__writef(w, ud, "{\"cases\":[");
  for (size_t i = 0; i < set->n && !rc; i++) {
    const sc_case *c = &set->cases[i];
    SC_WRITE(rc, sc__writef(w, ud, "%s{\"id\":", i ? "," : ""));
    SC_WRITE(rc, write_json_string(w, ud, c->id));
    SC_WRITE(rc, sc__writef(w, ud, ",\"file\":"));
    SC_WRITE(rc, write_json_string(w, ud, c->file));
    SC_WRITE(rc, sc__writef(w, ud, ",\"line\":%d,\"split\":\"%s\",\"measured_step_s\":%.9g",
                            c->line, split_name(c->split), c->measured_step_s));
    if (res[i].status) {
      SC_WRITE(rc, sc__writef(w, ud, ",\"predicted_step_s\":null,\"error_pct\":null,\"%s\":",
                              res[i].status == SC_EUNSUPPORTED ? "unsupported" : "error"));
      SC_WRITE(rc, write_json_string(w, ud, res[i].reason));
      SC_WRITE(rc, sc__writef(w, ud, "}"));
    } else {
      SC_WRITE(rc, sc__writef(w, ud, ",\"predicted_step_s\":%.9g,\"error_pct\":%.6g}",
                              res[i].predicted_step_s, res[i].error_pct));
    }
  }
  sc_error_stats v;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &v);
  SC_WRITE(rc, sc__writef(w, ud, "],"));
  if (v.n)
    SC_WRITE(rc, sc__writef(w, ud,
                            "\"mape_pct\":%.6g,\"median_abs_error_pct\":%.6g,"
                            "\"max_abs_error_pct\":%.6g,",
                            v.mape_pct, v.median_abs_pct, v.max_abs_pct));
  else
    SC_WRITE(rc, sc__writef(w, ud,
                            "\"mape_pct\":null,\"median_abs_error_pct\":null,"
                            "\"max_abs_error_pct\":null,"));
  SC_WRITE(rc, sc__writef(w, ud,
                          "\"validation_cases\":%zu,\"unsupported_cases\":%zu,"
                          "\"error_cases\":%zu,\"files\":[",
                          v.n, v.unsupported, v.errors));
  for (size_t f = 0; f < set->nfiles && !rc; f++) {
    sc_error_stats fs;
    sc_validate_stats(set, res, set->files[f].path, -1, &fs);
    SC_WRITE(rc, sc__writef(w, ud, "%s{\"file\":", f ? "," : ""));
    SC_WRITE(rc, write_json_string(w, ud, set->files[f].path));
    SC_WRITE(rc, sc__writef(w, ud,
                            ",\"rows\":%zu,\"simulated\":%zu,\"unsupported\":%zu,"
                            "\"errors\":%zu}",
                            fs.n + fs.unsupported + fs.errors, fs.n, fs.unsupported, fs.errors));
  }
  SC_WRITE(rc, sc__writef(w, ud, "],\"groups\":["));
  scope sc[MAX_SCOPES];
  size_t ns = scopes(set, by, sc, MAX_SCOPES);
  int first = 1;
  for (size_t k = 0; k < ns && !rc; k++) {
    sc_error_stats st;
    sc_validate_stats_by(set, res, by, scope_key(&sc[k]), sc[k].split, &st);
    if (!st.n && !st.unsupported && !st.errors) continue;
    SC_WRITE(rc, sc__writef(w, ud, "%s{\"%s\":", first ? "" : ",",
                            by == SC_VALIDATE_BY_MIX ? "parallelism" : group_title(by)));
    first = 0;
    if (sc[k].key[0]) SC_WRITE(rc, write_json_string(w, ud, sc[k].key));
    else SC_WRITE(rc, sc__writef(w, ud, "null"));
    SC_WRITE(rc, sc__writef(w, ud, ",\"split\":\"%s\",", scope_split(sc[k].split)));
    SC_WRITE(rc, write_json_stats(w, ud, &st));
    SC_WRITE(rc, sc__writef(w, ud, "}"));
  }
  SC_WRITE(rc, sc__writef(w, ud, "]}\n"));
  return rc;
}

static int write_csv(const sc_caseset *set, const sc_case_result *res, sc_write_fn w, void *ud) {
  int rc = sc__writef(w, ud, "file,id,split,measured_step_s,predicted_step_s,error_pct,"
                             "unsupported,error\n");
  for (size_t i = 0; i < set->n && !rc; i++) {
    const sc_case *c = &set->cases[i];
    SC_WRITE(rc, write_csv_field(w, ud, c->file));
    SC_WRITE(rc, sc__writef(w, ud, ","));
    SC_WRITE(rc, write_csv_field(w, ud, c->id));
    SC_WRITE(rc, sc__writef(w, ud, ",%s,%.9g,", split_name(c->split), c->measured_step_s));
    if (res[i].status == SC_EUNSUPPORTED) {
      SC_WRITE(rc, sc__writef(w, ud, ",,"));
      SC_WRITE(rc, write_csv_field(w, ud, res[i].reason));
      SC_WRITE(rc, sc__writef(w, ud, ",\n"));
    } else if (res[i].status) {
      SC_WRITE(rc, sc__writef(w, ud, ",,,"));
      SC_WRITE(rc, write_csv_field(w, ud, res[i].reason));
      SC_WRITE(rc, sc__writef(w, ud, "\n"));
    } else {
      SC_WRITE(rc, sc__writef(w, ud, "%.9g,%.6g,,\n", res[i].predicted_step_s, res[i].error_pct));
    }
  }
  return rc;
}

/* A table cell: '|' would end it. */
static int write_md_cell(sc_write_fn w, void *ud, const char *s) {
  int rc = 0;
  for (; *s && !rc; s++) rc = *s == '|' ? w(ud, "\\|", 2) : w(ud, s, 1);
  return rc;
}

static int write_markdown(const sc_caseset *set, const sc_case_result *res, sc_validate_group by,
                          sc_write_fn w, void *ud) {
  int rc = sc__writef(w, ud,
                      "| file | case | split | GPUs | measured s | predicted s | error %% |\n"
                      "|---|---|---|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < set->n; i++) {
    const sc_case *c = &set->cases[i];
    SC_WRITE(rc, sc__writef(w, ud, "| %s | %s | %s | ", base_name(c->file), c->id,
                            split_name(c->split)));
    if (res[i].status) {
      SC_WRITE(rc, sc__writef(w, ud, "- | %.4g | - | %s: ", c->measured_step_s,
                              res[i].status == SC_EUNSUPPORTED ? "unsupported" : "error"));
      SC_WRITE(rc, write_md_cell(w, ud, res[i].reason));
      SC_WRITE(rc, sc__writef(w, ud, " |\n"));
    } else {
      SC_WRITE(rc, sc__writef(w, ud, "%lld | %.4g | %.4g | %+.1f |\n",
                              (long long)c->resolved.cluster.num_gpus, c->measured_step_s,
                              res[i].predicted_step_s, res[i].error_pct));
    }
  }
  SC_WRITE(rc, sc__writef(w, ud,
                          "\n| %s | split | cases | MAPE %% | median %% | worst %% | bias %% | "
                          "in 90 %% interval | worst case |\n|---|---|---:|---:|---:|---:|---:|---:|"
                          "---|\n",
                          group_title(by)));
  scope sc[MAX_SCOPES];
  size_t ns = scopes(set, by, sc, MAX_SCOPES);
  for (size_t k = 0; k < ns; k++) {
    sc_error_stats st;
    sc_validate_stats_by(set, res, by, scope_key(&sc[k]), sc[k].split, &st);
    if (!st.n) continue;
    SC_WRITE(rc, sc__writef(w, ud, "| %s | %s | %zu | %.1f | %.1f | %.1f | %+.1f | %.0f %% | %s |\n",
                            sc[k].key[0]               ? scope_label(&sc[k], by)
                            : by == SC_VALIDATE_BY_FILE ? "**all files**"
                                                        : "**all cases**",
                            scope_split(sc[k].split), st.n, st.mape_pct, st.median_abs_pct,
                            st.max_abs_pct, st.bias_pct, st.coverage_pct,
                            set->cases[st.worst].id));
  }
  return rc;
}

int sc_validate_write_by(const sc_caseset *set, const sc_case_result *res,
                         sc_validate_format fmt, sc_validate_group by, sc_write_fn w, void *ud) {
  if (!set || !res || !w || by < SC_VALIDATE_BY_FILE || by > SC_VALIDATE_BY_MIX) return SC_EINVAL;
  switch (fmt) {
  case SC_VALIDATE_JSON:
    return write_json(set, res, by, w, ud);
  case SC_VALIDATE_CSV:
    return write_csv(set, res, w, ud);
  case SC_VALIDATE_MARKDOWN:
    return write_markdown(set, res, by, w, ud);
  default:
    return write_text(set, res, by, w, ud);
  }
}

int sc_validate_write(const sc_caseset *set, const sc_case_result *res, sc_validate_format fmt,
                      sc_write_fn w, void *ud) {
  return sc_validate_write_by(set, res, fmt, SC_VALIDATE_BY_FILE, w, ud);
}
