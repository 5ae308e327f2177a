/*
 * comm.c: the public face of the collective model (stepcast/comm.h): a model
 * instance for one machine, predictions per message size, comparison with
 * nccl-tests rows, and the calibration YAML (written by `stepcast calibrate`,
 * read back through the config loader).
 */
#include "analysis/comm_api_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

/* ------------------------------------------------------------ instance */

int sc_comm_new(sc_ctx *ctx, const sc_comm_cluster *cl, sc_comm **out) {
  *out = NULL;
  const sc_hw *hw = sc_hw_find(cl->gpu);
  if (!hw) return sc__error(ctx, SC_EINVAL, "unknown gpu \"%s\" (see `stepcast hw list`)", cl->gpu);
  if (cl->gpus_per_node < 0 || cl->nic_gbps < 0 || cl->nvlink_gbps < 0 || cl->leaf_gpus < 0 ||
      cl->leaf_latency_us < 0 || cl->spine_latency_us < 0)
    return sc__error(ctx, SC_EINVAL, "negative cluster value");
  if (cl->spine_oversubscription != 0 && !(cl->spine_oversubscription >= 1))
    return sc__error(ctx, SC_EINVAL, "spine oversubscription %g is below 1",
                     cl->spine_oversubscription);
  int64_t gpn = cl->gpus_per_node > 0 ? cl->gpus_per_node : hw->gpus_per_node;
  if (cl->leaf_gpus > 0 && cl->leaf_gpus % gpn)
    return sc__error(ctx, SC_EINVAL,
                     "leaf GPUs %" PRId64 " is not a multiple of %" PRId64
                     " GPUs per node (a leaf holds whole nodes)",
                     cl->leaf_gpus, gpn);
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
  m->topo.nodes_per_leaf = cl->leaf_gpus > 0 ? cl->leaf_gpus / gpn : 0;
  m->topo.spine_oversub = cl->spine_oversubscription > 1 ? cl->spine_oversubscription : 1;
  m->topo.leaf_latency_us = cl->leaf_latency_us;
  m->topo.spine_latency_us = cl->spine_latency_us;
  m->topo.rail_optimized = 1;
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
  /* the group's nodes fill leaves from the first (network tiers) */
  int64_t npl = m->topo.nodes_per_leaf;
  pl->leaves = npl > 0 ? (pl->nodes + npl - 1) / npl : 1;
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
  out->reduce_us = sc__comm_reduce_us(&m->topo, &m->params, op, bytes, &pl, out->algo);
  out->setup_us = sc__comm_setup_us(&m->params, &pl);
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
    pl->leaves = 1; /* an nccl-tests file does not say where its nodes sat */
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

int64_t sc__comm_file_iters(const sc_nccltests *t) {
  return t->iters > 0 ? t->iters : 20; /* nccl-tests' default -n */
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
    /* zero-byte rows time an empty call, which NCCL returns from at once */
    if (!(meas > 0) || t->rows[i].bytes <= 0) continue;
    sc_comm_compare_row *r = &rows[(*nout)++];
    r->warmup = sc_nccltests_row_is_warmup(t, i);
    r->bytes = (double)t->rows[i].bytes;
    r->measured_us = meas;
    r->predicted_us = sc__comm_bench_time_us(&m->topo, &m->params, op, r->bytes, &pl,
                                             sc__comm_file_gpus_per_thread(t), NULL, NULL);
    r->error_pct = 100.0 * (r->predicted_us - meas) / meas;
    r->first_call_us = r->first_call_predicted_us = NAN;
    r->setup_share_us = 0;
    if (sc_nccltests_row_is_first_call(t, i)) {
      r->setup_share_us =
          sc__comm_setup_us(&m->params, &pl) / (double)sc__comm_file_iters(t);
      r->first_call_us = t->rows[i].time_us[0];
      r->first_call_predicted_us = r->predicted_us + r->setup_share_us;
    }
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
  /* The model's keys, then its point-to-point latency (a cost key). */
  for (int i = 0; !rc && i <= SC_COMM_PARAM_COUNT; i++) {
    int last = i == SC_COMM_PARAM_COUNT;
    const sc_calib_key *d = last ? &sc__calib_keys[sc__calib_key_find("p2p_latency_us")]
                                 : &sc__nccl_keys[i];
    double v = last ? m->params.p2p_latency_us
                    : *(const double *)((const char *)&m->params + d->member);
    char kv[96];
    int len = snprintf(kv, sizeof kv, "  %s: %.6g", d->key, v);
    size_t dl = strlen(d->doc);
    if (dl && d->doc[dl - 1] == '.') dl--; /* cost keys' docs are sentences */
    rc = sc__writef(out, ud, "%s%*s# %s%.*s%s%s\n", kv, len < 34 ? 34 - len : 1, "",
                    d->fitted ? "fitted; " : "", (int)dl, d->doc, *d->unit ? ", " : "", d->unit);
  }
  return rc;
}

/* A calibration file is read as the `calibration:` section of a config (the
 * config loader's keys, bounds and messages); the collective model takes the
 * values it names. */
int sc_comm_load_calibration(sc_comm *m, const char *path) {
  sc_config c;
  memset(&c, 0, sizeof c);
  int rc = sc_config_load_calibration(m->ctx, &c, path);
  if (!rc) sc__comm_params_apply(&c.costs, &m->params);
  return rc;
}
