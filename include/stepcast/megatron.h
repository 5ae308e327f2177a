/*
 * megatron.h: Megatron-LM launch lines in and out. A launch line (the flags
 * of pretrain_gpt.py, optionally behind torchrun or in a shell script with
 * backslash continuations) is read onto a config: the model shape, the
 * parallel layout, batch sizes, precision, recomputation, the overlap flags,
 * uneven pipeline stages, context and expert parallelism; flags that do not
 * change a step's timing (paths, logging, learning rate ...) are counted and
 * listed, not errors. A resolved config is written back as the flags that
 * give it, so that reading them back simulates identically
 * (docs/MEGATRON.md has the table of flags).
 */
#ifndef STEPCAST_MEGATRON_H
#define STEPCAST_MEGATRON_H

#include "stepcast/stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_megatron_info {
  int flags;         /* flags read */
  int mapped;        /* of them, mapped onto config fields */
  int ignored;       /* of them, not timing-relevant (listed in ignored_names) */
  char ignored_names[2048]; /* "--lr --save ..." (truncated with "...") */
  int have_cluster;  /* 1: torchrun's --nnodes / --nproc-per-node gave the GPUs */
} sc_megatron_info;

/* Reads the launch line in text (len bytes; name is used in messages,
 * "args.txt:3: --tensor-model-parallel-size: ...") onto cfg. Flags Megatron-LM
 * defaults that differ from stepcast's are made explicit (tied embeddings,
 * GeLU, fp32 without --bf16/--fp16, dropout 0.1, the overlap flags off).
 * A flag value that is a shell variable ($TP) is an error asking to expand
 * it; a timing-relevant flag stepcast does not model is SC_EUNSUPPORTED.
 * info may be NULL. cfg is unchanged on error. */
int sc_config_load_megatron(sc_ctx *ctx, sc_config *cfg, const char *name, const char *text,
                            size_t len, sc_megatron_info *info);
int sc_config_load_megatron_file(sc_ctx *ctx, sc_config *cfg, const char *path,
                                 sc_megatron_info *info);

/* Writes the launch line of a resolved config: `torchrun --nnodes N
 * --nproc-per-node G pretrain_gpt.py \` and one flag per line. What has no
 * Megatron-LM flag (ZeRO-2, the zero-bubble schedules, GPipe) is
 * SC_EUNSUPPORTED with a message in ctx. */
int sc_config_write_megatron(sc_ctx *ctx, const sc_config *cfg, sc_write_fn w, void *ud);

/* Writes the YAML of the fields a source set (field_line not
 * SC_LINE_DEFAULT), section by section: what `import megatron -o` saves. */
int sc_config_write_yaml_given(const sc_config *cfg, sc_write_fn w, void *ud);

#ifdef __cplusplus
}
#endif

#endif /* STEPCAST_MEGATRON_H */
