/*
 * gpufile.c: GPU description files (gpufile_int.h, docs/HARDWARE.md). A file
 * is one YAML mapping `gpu:` with the figures of an sc_hw: name,
 * description, the dense peaks per precision (TFLOP/s; 0 = the precision is
 * not supported), HBM capacity and bandwidth, SMs, NVLink bandwidth per GPU
 * per direction, the scale-out NIC per GPU, GPUs per node (the NVLink
 * domain), and the source of the figures. Every figure has a physical range;
 * `stepcast hw show NAME --format yaml` prints a preset in this format with
 * each number written so that it reads back exactly.
 */
#include "input/gpufile_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_GPU_FILE_BYTES ((size_t)1 << 20)

int sc__gpu_is_file(const char *v) {
  size_t n = strlen(v);
  return strchr(v, '/') || (n > 5 && !strcmp(v + n - 5, ".yaml")) ||
         (n > 4 && !strcmp(v + n - 4, ".yml"));
}

/* The keys of a file: X(key, kind, lo, hi, required). kind: 'r' real, 'i'
 * integer, 's' string. Ranges as the config's (docs/CONFIG.md). */
#define GPU_KEYS(X)                                   \
  X(name, 's', 0, 0, 1)                               \
  X(description, 's', 0, 0, 0)                        \
  X(fp32_tflops, 'r', 0, 1e6, 1)                      \
  X(tf32_tflops, 'r', 0, 1e6, 0)                      \
  X(bf16_tflops, 'r', 0.001, 1e6, 1)                  \
  X(fp8_tflops, 'r', 0, 1e6, 0)                       \
  X(hbm_gib, 'r', 0.001, 1e5, 1)                      \
  X(hbm_gbps, 'r', 0.001, 1e6, 1)                     \
  X(sms, 'i', 1, 100000, 1)                           \
  X(nvlink_gbps, 'r', 0.1, 1e5, 1)                    \
  X(nic_gbps, 'r', 0.1, 1e5, 1)                       \
  X(gpus_per_node, 'i', 1, 1024, 1)                   \
  X(source, 's', 0, 0, 0)                             \
  X(host_link_gbps, 'r', 0.1, 1e4, 0)                 \
  X(host_mem_gbps, 'r', 0.1, 1e5, 0)

enum {
#define X(k, kind, lo, hi, req) K_##k,
  GPU_KEYS(X)
#undef X
  K_COUNT
};

static const struct {
  const char *key;
  char kind;
  double lo, hi;
  int required;
} keys[K_COUNT] = {
#define X(k, kind, lo, hi, req) {#k, kind, lo, hi, req},
    GPU_KEYS(X)
#undef X
};

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static int store(sc_ctx *ctx, const char *path, int k, const yaml_node_t *v, sc_gpu_desc *d) {
  int line = line_of(v);
  if (v->type != YAML_SCALAR_NODE)
    return sc__error_at(ctx, SC_EINVAL, path, line, "gpu.%s: expected a value", keys[k].key);
  const char *s = (const char *)v->data.scalar.value;
  if (keys[k].kind == 's') {
    char *dst = k == K_name ? d->name : k == K_description ? d->description : d->source;
    size_t cap = k == K_name ? sizeof d->name
                 : k == K_description ? sizeof d->description : sizeof d->source;
    if (strlen(s) >= cap || (k == K_name && !*s))
      return sc__error_at(ctx, SC_EINVAL, path, line, "gpu.%s: %s", keys[k].key,
                          *s ? "too long" : "empty");
    sc__strlcpy(dst, s, cap);
    return SC_OK;
  }
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(x))
    return sc__error_at(ctx, SC_EINVAL, path, line, "gpu.%s: expected a number, got \"%s\"",
                        keys[k].key, s);
  if (keys[k].kind == 'i' && x != floor(x))
    return sc__error_at(ctx, SC_EINVAL, path, line, "gpu.%s: expected an integer, got %s",
                        keys[k].key, s);
  /* 0 is "not supported" for the optional peaks. */
  int zero_ok = !keys[k].required && keys[k].kind == 'r' && x == 0;
  if (!zero_ok && (x < keys[k].lo || x > keys[k].hi))
    return sc__error_at(ctx, SC_EINVAL, path, line, "gpu.%s: %s out of range [%g, %g]",
                        keys[k].key, s, keys[k].lo, keys[k].hi);
  switch (k) {
  case K_fp32_tflops: d->fp32_tflops = x; break;
  case K_tf32_tflops: d->tf32_tflops = x; break;
  case K_bf16_tflops: d->bf16_tflops = x; break;
  case K_fp8_tflops: d->fp8_tflops = x; break;
  case K_hbm_gib: d->hbm_gib = x; break;
  case K_hbm_gbps: d->hbm_gbps = x; break;
  case K_sms: d->sms = (int)x; break;
  case K_nvlink_gbps: d->nvlink_gbps = x; break;
  case K_nic_gbps: d->nic_gbps = x; break;
  case K_gpus_per_node: d->gpus_per_node = (int)x; break;
  case K_host_link_gbps: d->host_link_gbps = x; break;
  case K_host_mem_gbps: d->host_mem_gbps = x; break;
  default: break;
  }
  return SC_OK;
}

static int load_doc(sc_ctx *ctx, const char *path, yaml_document_t *doc, sc_gpu_desc *d) {
  yaml_node_t *root = yaml_document_get_root_node(doc);
  if (!root || root->type != YAML_MAPPING_NODE)
    return sc__error_at(ctx, SC_EINVAL, path, root ? line_of(root) : 1,
                        "expected a mapping with one key, gpu");
  const yaml_node_t *gpu = NULL;
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
       p++) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    const char *ks = k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
    if (strcmp(ks, "gpu"))
      return sc__error_at(ctx, SC_EINVAL, path, k ? line_of(k) : 1,
                          "unknown section \"%s\" (a GPU file has one section, gpu)", ks);
    gpu = yaml_document_get_node(doc, p->value);
  }
  if (!gpu || gpu->type != YAML_MAPPING_NODE)
    return sc__error_at(ctx, SC_EINVAL, path, gpu ? line_of(gpu) : 1,
                        "gpu: expected a mapping of the GPU's figures");
  int seen[K_COUNT] = {0};
  for (yaml_node_pair_t *p = gpu->data.mapping.pairs.start; p < gpu->data.mapping.pairs.top;
       p++) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    const char *ks = k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
    int idx = -1;
    for (int i = 0; i < K_COUNT; i++)
      if (!strcmp(keys[i].key, ks)) idx = i;
    if (idx < 0) {
      char known[512];
      size_t n = 0;
      for (int i = 0; i < K_COUNT; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", keys[i].key);
      return sc__error_at(ctx, SC_EINVAL, path, k ? line_of(k) : 1,
                          "unknown key \"gpu.%s\" (known: %s)", ks, known);
    }
    if (seen[idx])
      return sc__error_at(ctx, SC_EINVAL, path, line_of(k),
                          "duplicate key \"gpu.%s\" (first given on line %d)", ks, seen[idx]);
    seen[idx] = line_of(k);
    int rc = store(ctx, path, idx, yaml_document_get_node(doc, p->value), d);
    if (rc) return rc;
  }
  char missing[256] = "";
  size_t n = 0;
  for (int i = 0; i < K_COUNT; i++)
    if (keys[i].required && !seen[i])
      n += (size_t)snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", keys[i].key);
  if (n)
    return sc__error_at(ctx, SC_EINVAL, path, line_of(gpu), "gpu: missing %s", missing);
  return SC_OK;
}

int sc__gpu_file_load(sc_ctx *ctx, const char *path, const char *from, sc_gpu_desc *out) {
  sc_gpu_desc d;
  memset(&d, 0, sizeof d);
  if (strlen(path) >= sizeof d.path)
    return sc__error(ctx, SC_EINVAL, "%s: GPU file path too long", from ? from : path);
  char *text;
  size_t len, cap;
  int rc = sc__read_file(ctx, path, from, "GPU file", MAX_GPU_FILE_BYTES, &text, &len, &cap);
  if (rc) return rc;
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) {
    sc__free(ctx, text, cap);
    return sc__error(ctx, SC_ENOMEM, "%s: out of memory while parsing YAML", path);
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = sc__error_at(ctx, SC_EINVAL, path, (int64_t)parser.problem_mark.line + 1, "%s",
                      parser.problem ? parser.problem : "malformed YAML");
    yaml_parser_delete(&parser);
    sc__free(ctx, text, cap);
    return rc;
  }
  rc = load_doc(ctx, path, &doc, &d);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  sc__free(ctx, text, cap);
  if (rc) return rc;
  d.set = 1;
  sc__strlcpy(d.path, path, sizeof d.path);
  *out = d;
  return SC_OK;
}

void sc__gpu_desc_hw(const sc_gpu_desc *d, sc_hw *o) {
  memset(o, 0, sizeof *o);
  o->name = d->name;
  o->description = d->description[0] ? d->description : d->name;
  o->fp32_tflops = d->fp32_tflops;
  o->tf32_tflops = d->tf32_tflops;
  o->bf16_tflops = d->bf16_tflops;
  o->fp8_tflops = d->fp8_tflops;
  o->hbm_gib = d->hbm_gib;
  o->hbm_gbps = d->hbm_gbps;
  o->sms = d->sms;
  o->nvlink_gbps = d->nvlink_gbps;
  o->nic_gbps = d->nic_gbps;
  o->gpus_per_node = d->gpus_per_node;
  o->source = d->source[0] ? d->source : d->path;
  o->host_link_gbps = d->host_link_gbps;
  o->host_mem_gbps = d->host_mem_gbps;
}

/* A number written so that it reads back as the same double. */
static void num(char *buf, size_t n, double x) {
  snprintf(buf, n, "%.15g", x);
  if (strtod(buf, NULL) != x) snprintf(buf, n, "%.17g", x);
}

/* A YAML double-quoted string. */
static int quoted(sc_write_fn w, void *ud, const char *s) {
  char buf[512];
  size_t n = 0;
  buf[n++] = '"';
  for (; *s && n + 3 < sizeof buf; s++) {
    if (*s == '"' || *s == '\\') buf[n++] = '\\';
    buf[n++] = *s;
  }
  buf[n++] = '"';
  buf[n] = 0;
  return sc__writef(w, ud, "%s", buf);
}

int sc_hw_write_yaml(const sc_hw *hw, sc_write_fn w, void *ud) {
  if (!hw || !w) return SC_EINVAL;
  char a[64];
  int rc;
#define NUM(key, v)                                                        \
  do {                                                                     \
    num(a, sizeof a, (v));                                                 \
    if ((rc = sc__writef(w, ud, "  " key ": %s\n", a))) return rc;       \
  } while (0)
  if ((rc = sc__writef(w, ud, "# stepcast GPU file: cluster.gpu: THIS.yaml (docs/HARDWARE.md)\n"
                              "gpu:\n  name: ")) ||
      (rc = quoted(w, ud, hw->name)) || (rc = sc__writef(w, ud, "\n  description: ")) ||
      (rc = quoted(w, ud, hw->description ? hw->description : "")) ||
      (rc = sc__writef(w, ud, "\n")))
    return rc;
  NUM("fp32_tflops", hw->fp32_tflops);
  NUM("tf32_tflops", hw->tf32_tflops);
  NUM("bf16_tflops", hw->bf16_tflops);
  NUM("fp8_tflops", hw->fp8_tflops);
  NUM("hbm_gib", hw->hbm_gib);
  NUM("hbm_gbps", hw->hbm_gbps);
  if ((rc = sc__writef(w, ud, "  sms: %d\n", hw->sms))) return rc;
  NUM("nvlink_gbps", hw->nvlink_gbps);
  NUM("nic_gbps", hw->nic_gbps);
  if ((rc = sc__writef(w, ud, "  gpus_per_node: %d\n  source: ", hw->gpus_per_node)) ||
      (rc = quoted(w, ud, hw->source ? hw->source : "")) || (rc = sc__writef(w, ud, "\n")))
    return rc;
  /* 0: not known (a GPU file may leave them out; offload then needs the
   * config's cluster.host_link_gbps / host_mem_gbps) */
  if (hw->host_link_gbps > 0) NUM("host_link_gbps", hw->host_link_gbps);
  if (hw->host_mem_gbps > 0) NUM("host_mem_gbps", hw->host_mem_gbps);
#undef NUM
  return SC_OK;
}
