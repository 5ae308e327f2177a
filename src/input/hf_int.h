/*
 * hf_int.h: HuggingFace transformers `config.json` files as model shapes.
 * sc__hf_read parses the file (base/json.c's tokenizer) and maps the fields
 * of the supported model types onto stepcast keys ("model.layers" = "32"),
 * each with the config.json line it came from; config.c applies them through
 * the same parser as YAML values (model.hf_config, `run --hf`). The mapping
 * is a table here; docs/CONFIG.md (section HuggingFace config.json) lists
 * it. Not API.
 */
#ifndef SC_HF_INT_H
#define SC_HF_INT_H

#include "base/sc_int.h"

#include <stddef.h>

/* At most this many stepcast keys come from one config.json. */
#define SC_HF_MAX_SETS 24

typedef struct sc_hf_set {
  const char *key;   /* stepcast key, "model.layers" */
  char value[96];    /* its text, "32" */
  const char *from;  /* the config.json field, "num_hidden_layers" */
  int line;          /* of that field in config.json (1-based) */
  int optional_key;  /* 1: a key of a feature this build may lack (MoE, MLA):
                        unknown to the config, it is a "not modelled" error */
} sc_hf_set;

typedef struct sc_hf_model {
  char model_type[48]; /* as the file says ("llama", "qwen3_moe") */
  char name[64];       /* model.name: _name_or_path, else model_type */
  int max_positions;   /* max_position_embeddings (0: absent), for messages only */
  size_t nsets;
  sc_hf_set sets[SC_HF_MAX_SETS];
} sc_hf_model;

/* Reads config.json at path and maps it. `from` names the referrer for
 * messages about opening the file ("job.yaml:3"). Errors are "PATH:LINE:
 * message": malformed JSON, a missing required field, a value of the wrong
 * kind, an unknown model_type (the message lists the supported ones).
 * Returns SC_OK, SC_EINVAL, SC_EREAD or SC_ENOMEM. */
int sc__hf_read(sc_ctx *ctx, const char *path, const char *from, sc_hf_model *out);

/* The supported model_type values, in a line ("llama, mistral, ..."). */
const char *sc__hf_model_types(void);

#endif /* SC_HF_INT_H */
