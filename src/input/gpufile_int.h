/*
 * gpufile_int.h: GPU description files (`cluster.gpu: FILE.yaml`): the
 * reader behind the config loader and the bridge from a description to the
 * sc_hw the cost models read. The writer is public (sc_hw_write_yaml). Not
 * API.
 */
#ifndef SC_GPUFILE_INT_H
#define SC_GPUFILE_INT_H

#include "base/sc_int.h"

/* Whether a cluster.gpu value names a file rather than a preset: it ends in
 * .yaml or .yml, or holds a '/'. */
int sc__gpu_is_file(const char *value);

/* Reads the GPU file at path into *out (set = 1, path kept). `from` names
 * the referrer for a file that cannot be opened ("job.yaml:7"). Errors are
 * "PATH:LINE: message": a missing or out-of-range figure, an unknown key, a
 * name that is empty or too long. SC_OK, SC_EINVAL, SC_EREAD or SC_ENOMEM. */
int sc__gpu_file_load(sc_ctx *ctx, const char *path, const char *from, sc_gpu_desc *out);

/* The sc_hw of a description; its strings point into d. */
void sc__gpu_desc_hw(const sc_gpu_desc *d, sc_hw *out);

#endif /* SC_GPUFILE_INT_H */
