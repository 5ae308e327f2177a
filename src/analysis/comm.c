/*
 * comm.c: the public face of the collective model (stepcast/comm.h): a model
 * instance for one machine, predictions per message size, comparison with
 * nccl-tests rows, and the calibration YAML (written by `stepcast calibrate`,
 * read back by `stepcast comm --calibration` and sc__comm_params_load_yaml).
 */
#include "cost/comm_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <yaml.h>

/* ------------------------------------------------------------ names */

static const char *const algo_names[SC_ALGO_COUNT] = {"ring",    "tree", "nvls", "nvls_tree",
                                                      "collnet", "pat",  "p2p"};
static const char *const proto_names[SC_PROTO_COUNT] = {"LL", "LL128", "Simple"};

const char *sc_comm_algo_name(int algo) {
  return algo >= 0 && algo < SC_ALGO_COUNT ? algo_names[algo] : "?";
}

const char *sc_comm_proto_name(int proto) {
  return proto >= 0 && proto < SC_PROTO_COUNT ? proto_names[proto] : "?";
}

/* Device names as the CUDA runtime reports them ("A100-SXM4-40GB", "NVIDIA
 * H100 80GB HBM3", "NVIDIA H200"). A800/H20 and other export variants have
 * different links and no preset: NULL, the caller must name one. */
const sc_hw *sc_comm_guess_hw(const char *device_name) {
  char s[96];
  size_t n = 0;
  for (const char *p = device_name ? device_name : ""; *p && n + 1 < sizeof s; p++)
    s[n++] = (char)tolower((unsigned char)*p);
  s[n] = 0;
  const char *key = NULL;
  if (strstr(s, "a100"))
    key = strstr(s, "80g") ? "a100-80gb" : "a100-40gb";
  else if (strstr(s, "h100"))
    key = "h100-sxm";
  else if (strstr(s, "h800"))
    key = "h800";
  else if (strstr(s, "h200"))
    key = "h200";
  else if (strstr(s, "b200"))
    key = "b200";
  else if (strstr(s, "v100"))
    key = "v100-32gb";
  return key ? sc_hw_find(key) : NULL;
}

/* ------------------------------------------------------------ instance */

int sc_comm_new(sc_ctx *ctx, const sc_comm_cluster *cl, sc_comm **out) {
  *out = NULL;
  const sc_hw *hw = sc_hw_find(cl->gpu);
  if (!hw) return sc__error(ctx, SC_EINVAL, "unknown gpu \"%s\" (see `stepcast hw list`)", cl->gpu);
  if (cl->gpus_per_node < 0 || cl->nic_gbps < 0 || cl->nvlink_gbps < 0)
    return sc__error(ctx, SC_EINVAL, "negative cluster value");
  sc_comm *m = sc__calloc(ctx, 1, sizeof *m);
  if (!m) return SC_ENOMEM;
  m->ctx = ctx;
  m->hw = hw;
  m->gpus_per_node = cl->gpus_per_node > 0 ? cl->gpus_per_node : hw->gpus_per_node;
  m->topo.arch = sc__comm_arch(hw);
  m->topo.nvlink_gbps = cl->nvlink_gbps > 0 ? cl->nvlink_gbps : hw->nvlink_gbps;
  m->topo.nic_gbps = (cl->nic_gbps > 0 ? cl->nic_gbps : hw->nic_gbps) / 8.0;
  m->topo.hbm_gbps = hw->hbm_gbps;
  m->topo.nics_per_node = m->gpus_per_node;
  sc__comm_params_default(hw, &m->params);
  m->params.sharp = cl->sharp ? 1 : 0;
  *out = m;
  return SC_OK;
}

void sc_comm_free(sc_comm *m) {
  if (m) sc__free(m->ctx, m, sizeof *m);
}

static void placement(const sc_comm *m, int64_t gpus, int64_t per_node, sc_placement *pl) {
  if (per_node <= 0) per_node = m->gpus_per_node;
  if (per_node > gpus) per_node = gpus;
  pl->n = gpus;
  pl->per_node = per_node;
  pl->nodes = (gpus + per_node - 1) / per_node;
}

int sc_comm_predict(const sc_comm *m, int op, double bytes, int64_t gpus, int64_t gpus_per_node,
                    sc_comm_estimate *out) {
  memset(out, 0, sizeof *out);
  if (op < 0 || op >= SC_COMM_OP_COUNT)
    return sc__error(m->ctx, SC_EINVAL, "unknown collective %d", op);
  if (gpus < 1) return sc__error(m->ctx, SC_EINVAL, "number of GPUs must be at least 1");
  if (!(bytes >= 0)) return sc__error(m->ctx, SC_EINVAL, "negative message size");
  sc_placement pl;
  placement(m, gpus, gpus_per_node, &pl);
  out->time_us = sc__comm_time_us(&m->topo, &m->params, op, bytes, &pl, &out->algo, &out->proto);
  if (out->time_us > 0) {
    out->algbw_gbps = bytes / (out->time_us * 1e3);
    out->busbw_gbps = out->algbw_gbps * sc_comm_bus_factor(op, gpus);
  }
  return SC_OK;
}

int sc__comm_file_placement(const sc_comm *m, const sc_nccltests *t, int64_t gpus,
                            int64_t gpus_per_node, sc_placement *pl) {
  if (gpus <= 0 && t->ranks > 0) {
    pl->n = t->ranks;
    pl->nodes = t->nodes > 0 ? t->nodes : 1;
    pl->per_node = t->per_node > 0 ? t->per_node : t->ranks;
    if (gpus_per_node > 0) placement(m, t->ranks, gpus_per_node, pl);
    return SC_OK;
  }
  if (gpus <= 0) gpus = sc_nccltests_infer_ranks(t);
  if (gpus <= 0)
    return sc__error(m->ctx, SC_EINVAL,
                     "%s: the output lists no devices and its bus bandwidth does not give the "
                     "number of ranks; give the number of GPUs",
                     t->origin);
  placement(m, gpus, gpus_per_node, pl);
  return SC_OK;
}

int64_t sc__comm_file_gpus_per_thread(const sc_nccltests *t) {
  return t->ngpus > 1 ? t->ngpus : 1;
}

int sc_comm_compare(const sc_comm *m, const sc_nccltests *t, int op, int64_t gpus,
                    int64_t gpus_per_node, sc_comm_compare_row *rows, size_t *nout,
                    double *mape_pct) {
  *nout = 0;
  *mape_pct = 0;
  if (op < 0) op = t->op;
  if (op < 0 || op >= SC_COMM_OP_COUNT)
    return sc__error(m->ctx, SC_EINVAL,
                     "%s: the output does not say which collective it measured; give the "
                     "operation",
                     t->origin);
  sc_placement pl;
  int rc = sc__comm_file_placement(m, t, gpus, gpus_per_node, &pl);
  if (rc) return rc;
  double sum = 0;
  size_t counted = 0;
  for (size_t i = 0; i < t->nrows; i++) {
    double meas = sc_nccltests_row_time_us(&t->rows[i]);
    if (!(meas > 0)) continue;
    sc_comm_compare_row *r = &rows[(*nout)++];
    r->warmup = sc_nccltests_row_is_warmup(t, i);
    r->bytes = (double)t->rows[i].bytes;
    r->measured_us = meas;
    r->predicted_us = sc__comm_bench_time_us(&m->topo, &m->params, op, r->bytes, &pl,
                                             sc__comm_file_gpus_per_thread(t), NULL, NULL);
    r->error_pct = 100.0 * (r->predicted_us - meas) / meas;
    if (!r->warmup) sum += fabs(r->error_pct), counted++;
  }
  if (counted) *mape_pct = sum / (double)counted;
  return SC_OK;
}

/* ------------------------------------------------------------ YAML */

int sc_comm_write_calibration(const sc_comm *m, const char *note, sc_write_fn out, void *ud) {
  int rc = sc__writef(out, ud,
                      "# stepcast calibration of the collective model \"%s\" v%d (docs/COMM.md)\n",
                      sc__comm_nccl_model.name, sc__comm_nccl_model.version);
  if (!rc && note) {
    /* one comment line per line of the note */
    const char *p = note;
    while (!rc && *p) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      rc = sc__writef(out, ud, "# %.*s\n", (int)len, p);
      p += len + (e ? 1 : 0);
    }
  }
  if (!rc) rc = sc__writef(out, ud, "calibration:\n");
  for (int i = 0; !rc && i < SC_COMM_PARAM_COUNT; i++) {
    const sc_comm_param_info *d = &sc__comm_param_info[i];
    double v = *(const double *)((const char *)&m->params + d->offset);
    char kv[96];
    int len = snprintf(kv, sizeof kv, "  %s: %.6g", d->key, v);
    rc = sc__writef(out, ud, "%s%*s# %s%s%s%s\n", kv, len < 34 ? 34 - len : 1, "",
                    d->fitted ? "fitted; " : "", d->doc, *d->unit ? ", " : "", d->unit);
  }
  return rc;
}

static int yaml_line(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static int load_mapping(sc_ctx *ctx, const char *path, yaml_document_t *doc, yaml_node_t *map,
                        sc_comm_params *p) {
  for (yaml_node_pair_t *kv = map->data.mapping.pairs.start; kv < map->data.mapping.pairs.top;
       kv++) {
    yaml_node_t *k = yaml_document_get_node(doc, kv->key);
    yaml_node_t *v = yaml_document_get_node(doc, kv->value);
    if (!k || k->type != YAML_SCALAR_NODE) continue;
    const char *key = (const char *)k->data.scalar.value;
    int known = 0;
    for (int i = 0; i < SC_COMM_PARAM_COUNT; i++) known |= !strcmp(sc__comm_param_info[i].key, key);
    if (!known) continue; /* another model's key */
    const sc_comm_param_info *d = NULL;
    for (int i = 0; i < SC_COMM_PARAM_COUNT; i++)
      if (!strcmp(sc__comm_param_info[i].key, key)) d = &sc__comm_param_info[i];
    if (!v || v->type != YAML_SCALAR_NODE)
      return sc__error(ctx, SC_EINVAL, "%s:%d: calibration.%s: expected a number", path,
                       yaml_line(k), key);
    const char *text = (const char *)v->data.scalar.value;
    char *end;
    errno = 0;
    double x = strtod(text, &end);
    if (end == text || *end || errno || sc__comm_params_set(p, key, x) != 1)
      return sc__error(ctx, SC_EINVAL,
                       "%s:%d: calibration.%s: expected a number in [%g, %g], got \"%s\"", path,
                       yaml_line(v), key, d->lo, d->hi, text);
  }
  return SC_OK;
}

int sc__comm_params_load_yaml(sc_ctx *ctx, sc_comm_params *p, const char *path) {
  char *text;
  size_t len, cap;
  int rc = sc__comm_read_file(ctx, path, (size_t)16 << 20, &text, &len, &cap);
  if (rc) return rc;
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) {
    sc__free(ctx, text, cap);
    return sc__error(ctx, SC_ENOMEM, "%s: out of memory while parsing YAML", path);
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = sc__error(ctx, SC_EINVAL, "%s:%d: YAML syntax error: %s", path,
                   (int)parser.problem_mark.line + 1,
                   parser.problem ? parser.problem : "unknown error");
    yaml_parser_delete(&parser);
    sc__free(ctx, text, cap);
    return rc;
  }
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  yaml_node_t *cal = NULL;
  if (root && root->type == YAML_MAPPING_NODE)
    for (yaml_node_pair_t *kv = root->data.mapping.pairs.start; kv < root->data.mapping.pairs.top;
         kv++) {
      yaml_node_t *k = yaml_document_get_node(&doc, kv->key);
      if (k && k->type == YAML_SCALAR_NODE &&
          !strcmp((const char *)k->data.scalar.value, "calibration"))
        cal = yaml_document_get_node(&doc, kv->value);
    }
  if (!cal)
    rc = sc__error(ctx, SC_EINVAL, "%s:1: no top-level \"calibration:\" mapping", path);
  else if (cal->type != YAML_MAPPING_NODE)
    rc = sc__error(ctx, SC_EINVAL, "%s:%d: calibration: expected a mapping of keys", path,
                   yaml_line(cal));
  else {
    sc_comm_params work = *p;
    rc = load_mapping(ctx, path, &doc, cal, &work);
    if (!rc) *p = work;
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  sc__free(ctx, text, cap);
  return rc;
}

int sc_comm_load_calibration(sc_comm *m, const char *path) {
  return sc__comm_params_load_yaml(m->ctx, &m->params, path);
}
