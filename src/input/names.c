/*
 * names.c: the one table of names of the config's enums (activation,
 * precision, recompute, schedule, interference, attention, context-parallel
 * exchange, fp8 recipe, MoE dispatcher): the YAML spelling
 * the loader accepts and the label reports print. Config loading, docs,
 * reports, the memory table and the sweep all read it.
 */
#include "base/sc_int.h"

#include <string.h>

/* X(value, yaml name, report label) per enum, in value order. */
#define ACTIVATION_NAMES(X) \
  X(SC_ACT_GELU, "gelu", "gelu") X(SC_ACT_SWIGLU, "swiglu", "swiglu") X(SC_ACT_RELU2, "relu2", "relu2")
#define PRECISION_NAMES(X)                                                          \
  X(SC_PREC_BF16, "bf16", "bf16") X(SC_PREC_FP16, "fp16", "fp16")                   \
  X(SC_PREC_FP8, "fp8", "fp8") X(SC_PREC_FP32, "fp32", "fp32")
#define RECOMPUTE_NAMES(X)                                                          \
  X(SC_RECOMPUTE_NONE, "none", "none") X(SC_RECOMPUTE_SELECTIVE, "selective", "selective") \
  X(SC_RECOMPUTE_FULL, "full", "full") X(SC_RECOMPUTE_OP_SAC, "op_sac", "op-sac")
#define SCHEDULE_NAMES(X)                                                           \
  X(SC_SCHED_1F1B, "1f1b", "1f1b") X(SC_SCHED_GPIPE, "gpipe", "gpipe")              \
  X(SC_SCHED_INTERLEAVED, "interleaved", "interleaved-1f1b")                        \
  X(SC_SCHED_ZB_H1, "zb-h1", "zb-h1") X(SC_SCHED_ZBV, "zbv", "zb-v")                 \
  X(SC_SCHED_DUALPIPE, "dualpipe", "dualpipe") X(SC_SCHED_DUALPIPEV, "dualpipev", "dualpipe-v")
#define INTERFERENCE_NAMES(X)                                                       \
  X(SC_INTERF_NONE, "none", "none") X(SC_INTERF_CONSTANT, "constant", "constant")   \
  X(SC_INTERF_LEARNED, "learned", "learned") X(SC_INTERF_TREE, "tree", "tree")
#define ATTENTION_NAMES(X)                                                          \
  X(SC_ATTN_FLASH, "flash", "flash") X(SC_ATTN_UNFUSED, "unfused", "unfused")       \
  X(SC_ATTN_CUDNN, "cudnn", "cudnn")
#define CP_COMM_NAMES(X)                                                            \
  X(SC_CP_P2P, "p2p", "p2p") X(SC_CP_A2A, "a2a", "a2a")                             \
  X(SC_CP_ALLGATHER, "allgather", "allgather") X(SC_CP_A2A_P2P, "a2a+p2p", "a2a+p2p")
#define FP8_RECIPE_NAMES(X)                                                         \
  X(SC_FP8_DELAYED, "delayed", "delayed") X(SC_FP8_TENSORWISE, "tensorwise", "tensorwise") \
  X(SC_FP8_ROWWISE, "rowwise", "rowwise")
#define MOE_DISPATCHER_NAMES(X)                                                     \
  X(SC_MOE_ALLTOALL, "alltoall", "alltoall") X(SC_MOE_ALLGATHER, "allgather", "allgather") \
  X(SC_MOE_DEEPEP, "deepep", "deepep")

typedef struct enum_name {
  int value;
  const char *name, *label;
} enum_name;

#define SC_X_ROW(v, n, l) {v, n, l},
static const enum_name activation[] = {ACTIVATION_NAMES(SC_X_ROW)};
static const enum_name precision[] = {PRECISION_NAMES(SC_X_ROW)};
static const enum_name recompute[] = {RECOMPUTE_NAMES(SC_X_ROW)};
static const enum_name schedule[] = {SCHEDULE_NAMES(SC_X_ROW)};
static const enum_name interference[] = {INTERFERENCE_NAMES(SC_X_ROW)};
static const enum_name attention[] = {ATTENTION_NAMES(SC_X_ROW)};
static const enum_name cp_comm[] = {CP_COMM_NAMES(SC_X_ROW)};
static const enum_name fp8_recipe[] = {FP8_RECIPE_NAMES(SC_X_ROW)};
static const enum_name moe_dispatcher[] = {MOE_DISPATCHER_NAMES(SC_X_ROW)};
#undef SC_X_ROW

static const struct {
  const enum_name *rows;
  int n;
} tables[SC_ENUM_COUNT] = {
#define N(t) {t, (int)(sizeof t / sizeof t[0])}
    [SC_ENUM_ACTIVATION] = N(activation), [SC_ENUM_PRECISION] = N(precision),
    [SC_ENUM_RECOMPUTE] = N(recompute),   [SC_ENUM_SCHEDULE] = N(schedule),
    [SC_ENUM_INTERFERENCE] = N(interference), [SC_ENUM_ATTENTION] = N(attention),
    [SC_ENUM_CP_COMM] = N(cp_comm),           [SC_ENUM_FP8_RECIPE] = N(fp8_recipe),
    [SC_ENUM_MOE_DISPATCHER] = N(moe_dispatcher),
#undef N
};

/* Rows are in value order (checked by the unit tests), so a value indexes
 * its row. */
static const enum_name *row(sc_enum e, int v) {
  if ((int)e < 0 || e >= SC_ENUM_COUNT || v < 0 || v >= tables[e].n) return NULL;
  return &tables[e].rows[v];
}

const char *sc_enum_name(sc_enum e, int v) {
  const enum_name *r = row(e, v);
  return r ? r->name : NULL;
}

const char *sc_enum_label(sc_enum e, int v) {
  const enum_name *r = row(e, v);
  return r ? r->label : NULL;
}

int sc_enum_parse(sc_enum e, const char *name) {
  if ((int)e < 0 || e >= SC_ENUM_COUNT || !name) return -1;
  for (int i = 0; i < tables[e].n; i++)
    if (!strcmp(tables[e].rows[i].name, name)) return tables[e].rows[i].value;
  return -1;
}

int sc_enum_count(sc_enum e) { return (int)e >= 0 && e < SC_ENUM_COUNT ? tables[e].n : 0; }
