/*
 * test_comm.c: the "nccl" collective model (src/comm_nccl.c) and its
 * calibration (src/comm_fit.c, src/comm.c): monotone in size (where NCCL's
 * choice does not change), bounded by the links, NCCL's algorithm and
 * protocol choices (its own tuner on Ampere), the one-thread benchmark
 * floor, the calibration YAML, and a held-out accuracy guard (fit on
 * 8/16/32 Azure A100 GPUs, predict 2/4/64/128).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/comm_api_int.h"
#include "ir/ir_int.h"
#include "sctest.h"

static sc_ctx *ctx;

static int setup(void **state) {
  (void)state;
  return sc_test_ctx_new(&ctx);
}

static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

static sc_comm *model(const char *gpu, int sharp) {
  sc_comm_cluster cl;
  memset(&cl, 0, sizeof cl);
  snprintf(cl.gpu, sizeof cl.gpu, "%s", gpu);
  cl.sharp = sharp;
  sc_comm *m;
  if (sc_comm_new(ctx, &cl, &m)) fail_msg("%s", sc_errmsg(ctx));
  return m;
}

static sc_comm_estimate predict(const sc_comm *m, int op, double bytes, int64_t gpus,
                                int64_t per_node) {
  sc_comm_estimate e;
  if (sc_comm_predict(m, op, bytes, gpus, per_node, &e)) fail_msg("%s", sc_errmsg(ctx));
  return e;
}

static void load(sc_nccltests *t, const char *rel) {
  const char *root = sc_test_source_dir();
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  if (sc_nccltests_load(ctx, p, t)) fail_msg("%s", sc_errmsg(ctx));
}

/* ------------------------------------------------------------ registry */

static void test_registry_and_default(void **state) {
  (void)state;
  const sc_comm_model *m = sc__comm_model_find("nccl");
  assert_non_null(m);
  assert_int_equal(m->version, 5);
  assert_null(sc__comm_model_find("nccl-ring-tree")); /* the legacy alpha-beta model is gone */
  sc_config cfg;
  sc_test_example(&cfg);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(ctx, &cfg, &cost), 0);
  assert_string_equal(cost.comm->name, "nccl");

  /* the vtable is the same model as the public API, in ns */
  sc_comm *api = model(cfg.cluster.gpu, 0);
  sc_placement pl = {64, 8, 8, 1};
  double ns = cost.comm->coll_ns(&cost, SC_COLL_ALLREDUCE, 1 << 26, &pl);
  sc_comm_estimate e = predict(api, SC_COMM_ALL_REDUCE, 1 << 26, 64, 8);
  assert_true(fabs(ns - e.time_us * 1e3) < 1e-6 * ns);
  sc_placement one = {1, 1, 1, 1};
  assert_true(cost.comm->coll_ns(&cost, SC_COLL_ALLREDUCE, 1 << 26, &one) == 0);
  assert_true(cost.comm->coll_ns(&cost, SC_COLL_ALLGATHER, 0, &pl) == 0);
  double intra = cost.comm->p2p_ns(&cost, 1e8, 0), inter = cost.comm->p2p_ns(&cost, 1e8, 1);
  assert_true(inter > intra && intra > 0);
  assert_true(cost.comm->p2p_ns(&cost, 0, 1) == 0);
  /* p2p latency is the cost parameter's */
  double base = cost.comm->p2p_ns(&cost, 1, 0);
  cost.p.p2p_latency_us += 5;
  sc__comm_params_from_cost(&cost, &cost.comm_params); /* as sc__cost_init prepares it */
  assert_true(fabs(cost.comm->p2p_ns(&cost, 1, 0) - base - 5e3) < 1e-6);
  sc_comm_free(api);
}

/* ------------------------------------------------------------ properties */

/* With the ideal tuner (select = 1, the fastest calibrated candidate) the
 * time never falls as the size grows. With NCCL 2.8-2.12's own tuner (the
 * Volta/Ampere default) NCCL may run a slower candidate than the next size's
 * (as the Azure logs show), so there it may fall only where the algorithm
 * or protocol changes. */
static void test_monotone_in_size(void **state) {
  (void)state;
  static const struct {
    const char *gpu;
    int sharp;
  } machines[] = {{"a100-80gb", 0}, {"h100-sxm", 0}, {"h100-sxm", 1}, {"v100-32gb", 0},
                  {"b200", 1},      {"a100-40gb", 0}};
  static const int64_t groups[][2] = {{2, 8},    {8, 8}, {16, 8}, {64, 8},
                                      {1024, 8}, {8, 1}, {12, 4}, {3, 8}};
  for (size_t k = 0; k < sizeof machines / sizeof machines[0]; k++)
    for (int ideal = 0; ideal < 2; ideal++) {
      sc_comm *m = model(machines[k].gpu, machines[k].sharp);
      if (ideal) m->params.select = 1;
      for (int op = 0; op < SC_COMM_OP_COUNT; op++)
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
          sc_comm_estimate prev = {0};
          for (double b = 1; b <= 64e9; b *= 2) {
            sc_comm_estimate e = predict(m, op, b, groups[g][0], groups[g][1]);
            int same = e.algo == prev.algo && e.proto == prev.proto;
            if (!isfinite(e.time_us) || (e.time_us < prev.time_us && (ideal || same)))
              fail_msg("%s select=%g %s n=%lld: %g us at %g B after %g", machines[k].gpu,
                       m->params.select, sc_comm_op_name(op), (long long)groups[g][0], e.time_us,
                       b, prev.time_us);
            prev = e;
          }
        }
      sc_comm_free(m);
    }
}

/* NCCL's own tuner on the Azure A100 placement (8 GPUs and NICs per node):
 * on 64 GPUs it keeps the tree LL up to 128 KiB, which then costs more than
 * the tree LL128 it picks at 256 KiB (measured 249 vs 129 us); the ideal
 * tuner switches earlier. One host thread driving G GPUs (nccl-tests -g)
 * floors a benchmark iteration at G launches, the engine's time not. */
static void test_nccl_tuner_and_bench(void **state) {
  (void)state;
  sc_comm *m = model("a100-40gb", 0);
  assert_true(m->params.select == 2);
  sc_comm_estimate a = predict(m, SC_COMM_ALL_REDUCE, 128 * 1024, 64, 8);
  sc_comm_estimate b = predict(m, SC_COMM_ALL_REDUCE, 256 * 1024, 64, 8);
  assert_int_equal(a.algo, SC_ALGO_TREE);
  assert_int_equal(a.proto, SC_PROTO_LL);
  assert_int_equal(b.algo, SC_ALGO_TREE);
  assert_int_equal(b.proto, SC_PROTO_LL128);
  assert_true(a.time_us > 1.3 * b.time_us);
  /* 32 GPUs: the tuner already moves to LL128 at 128 KiB (measured 95 us
   * after 107 us at 64 KiB) */
  assert_int_equal(predict(m, SC_COMM_ALL_REDUCE, 128 * 1024, 32, 8).proto, SC_PROTO_LL128);
  m->params.select = 1;
  sc_comm_estimate c = predict(m, SC_COMM_ALL_REDUCE, 128 * 1024, 64, 8);
  assert_true(c.time_us < a.time_us && c.time_us <= b.time_us);
  m->params.select = 2;
  /* Hopper keeps the fastest candidate (its NCCL has NVLS, PAT, ...) */
  sc_comm *h = model("h100-sxm", 0);
  assert_true(h->params.select == 1);
  sc_comm_free(h);

  /* the benchmark floor: nccl-tests -g 8 on one node, tiny messages */
  sc_placement pl = {8, 1, 8, 1};
  double gpu = sc__comm_time_us(&m->topo, &m->params, SC_COMM_ALL_REDUCE, 8, &pl, NULL, NULL);
  double bench = sc__comm_bench_time_us(&m->topo, &m->params, SC_COMM_ALL_REDUCE, 8, &pl, 8,
                                        NULL, NULL);
  assert_true(gpu < bench && bench == 8 * m->params.host_launch_us);
  assert_true(sc__comm_bench_time_us(&m->topo, &m->params, SC_COMM_ALL_REDUCE, 1e9, &pl, 8, NULL,
                                     NULL) == sc__comm_time_us(&m->topo, &m->params,
                                                               SC_COMM_ALL_REDUCE, 1e9, &pl,
                                                               NULL, NULL));
  sc_nccltests t1, t16;
  load(&t1, "validation/nccl/azure-ndv4-a100/all_reduce_2gpu.log");
  load(&t16, "validation/nccl/azure-ndv4-a100/all_reduce_16gpu.log");
  assert_int_equal(sc__comm_file_gpus_per_thread(&t1), 2);
  assert_int_equal(sc__comm_file_gpus_per_thread(&t16), 1);
  sc_nccltests_free(ctx, &t1);
  sc_nccltests_free(ctx, &t16);
  sc_comm_free(m);
}

static void test_busbw_bounded_by_links(void **state) {
  (void)state;
  sc_comm *m = model("a100-80gb", 0);
  const sc_hw *hw = sc_hw_find("a100-80gb");
  double nic = hw->nic_gbps / 8;
  for (double b = 1024; b <= 64e9; b *= 4) {
    for (int op = 0; op < SC_COMM_OP_COUNT; op++) {
      /* inside a node: NVLink per direction */
      assert_true(predict(m, op, b, 8, 8).busbw_gbps <= hw->nvlink_gbps);
      /* across nodes with 8 NICs per node: 8 NICs; with one GPU a node: one */
      assert_true(predict(m, op, b, 64, 8).busbw_gbps <= 8 * nic);
      if (op != SC_COMM_SEND_RECV) assert_true(predict(m, op, b, 16, 1).busbw_gbps <= nic);
    }
  }
  /* large transfers get close: at least half the bound */
  assert_true(predict(m, SC_COMM_ALL_REDUCE, 8e9, 8, 8).busbw_gbps > 0.6 * hw->nvlink_gbps);
  assert_true(predict(m, SC_COMM_ALL_REDUCE, 8e9, 64, 8).busbw_gbps > 0.5 * 8 * nic);
  /* spreading a group over more nodes never helps a large all-gather */
  assert_true(predict(m, SC_COMM_ALL_GATHER, 1e9, 8, 1).time_us >
              predict(m, SC_COMM_ALL_GATHER, 1e9, 8, 8).time_us);
  sc_comm_free(m);

  /* NVLS: the switch reduces, so the bound is NVLS's rate */
  m = model("h100-sxm", 0);
  hw = sc_hw_find("h100-sxm");
  sc_comm_estimate e = predict(m, SC_COMM_ALL_REDUCE, 8e9, 8, 8);
  assert_int_equal(e.algo, SC_ALGO_NVLS);
  assert_true(e.busbw_gbps <= hw->nvlink_gbps * 480.0 / 450.0);
  assert_true(e.busbw_gbps > 400); /* ~480 GB/s measured (BLUEPRINT section 4) */
  sc_comm_free(m);
}

/* Trees win small all-reduces across nodes, rings the large ones. */
static void test_ring_tree_crossover(void **state) {
  (void)state;
  sc_comm *m = model("a100-80gb", 0);
  sc_comm_estimate small = predict(m, SC_COMM_ALL_REDUCE, 1024, 128, 8);
  sc_comm_estimate large = predict(m, SC_COMM_ALL_REDUCE, 4e9, 128, 8);
  assert_int_equal(small.algo, SC_ALGO_TREE);
  assert_int_equal(large.algo, SC_ALGO_RING);
  double cross = 0;
  int prev = SC_ALGO_TREE;
  for (double b = 1024; b <= 4e9; b *= 2) {
    int a = predict(m, SC_COMM_ALL_REDUCE, b, 128, 8).algo;
    if (a == SC_ALGO_RING && prev == SC_ALGO_TREE && cross == 0 && b > 1e6) cross = b;
    prev = a;
  }
  /* where NCCL moves to rings on 16 nodes: tens of MB to a GB */
  assert_true(cross >= 8e6 && cross <= 1.1e9);
  /* one node: rings only (trees need nodes to span) */
  for (double b = 1024; b <= 4e9; b *= 8)
    assert_int_equal(predict(m, SC_COMM_ALL_REDUCE, b, 8, 8).algo, SC_ALGO_RING);
  sc_comm_free(m);
}

/* LL for small messages, LL128 in the middle, Simple for the largest; the
 * protocol never steps back as the size grows. */
static void test_protocol_switch_points(void **state) {
  (void)state;
  sc_comm *m = model("a100-80gb", 0);
  double ll_to_ll128 = 0, to_simple = 0;
  int prev = SC_PROTO_LL;
  for (double b = 8; b <= 16e9; b *= 2) {
    int p = predict(m, SC_COMM_ALL_REDUCE, b, 8, 8).proto;
    assert_true(p >= prev);
    if (p == SC_PROTO_LL128 && prev == SC_PROTO_LL) ll_to_ll128 = b;
    if (p == SC_PROTO_SIMPLE && prev != SC_PROTO_SIMPLE) to_simple = b;
    prev = p;
  }
  assert_int_equal(predict(m, SC_COMM_ALL_REDUCE, 4096, 8, 8).proto, SC_PROTO_LL);
  assert_true(ll_to_ll128 >= 32768 && ll_to_ll128 <= 4 * 1048576.0);
  assert_true(to_simple >= 4 * 1048576.0 && to_simple <= 4e9);
  /* on many nodes the LL ceiling (20.4 GB/s) hands over earlier */
  assert_int_equal(predict(m, SC_COMM_ALL_REDUCE, 8, 128, 8).proto, SC_PROTO_LL);
  assert_true(predict(m, SC_COMM_ALL_REDUCE, 16e6, 128, 8).proto != SC_PROTO_LL);
  sc_comm_free(m);
}

static void test_nvls_collnet_pat(void **state) {
  (void)state;
  sc_comm *a100 = model("a100-80gb", 0), *h100 = model("h100-sxm", 0),
          *sharp = model("h100-sxm", 1);
  for (double b = 1024; b <= 16e9; b *= 8) {
    assert_true(predict(a100, SC_COMM_ALL_REDUCE, b, 8, 8).algo != SC_ALGO_NVLS);
    int a = predict(a100, SC_COMM_ALL_REDUCE, b, 64, 8).algo;
    assert_true(a == SC_ALGO_RING || a == SC_ALGO_TREE);
  }
  /* NVLS only pays off once its 25 us switch latency is amortised */
  assert_true(predict(h100, SC_COMM_ALL_REDUCE, 1024, 8, 8).algo != SC_ALGO_NVLS);
  /* multi-node Hopper: NVLS inside nodes, a tree between them */
  assert_int_equal(predict(h100, SC_COMM_ALL_REDUCE, 4e9, 16, 8).algo, SC_ALGO_NVLS_TREE);
  /* with SHARP the network reduces: faster than without for large buffers */
  sc_comm_estimate with = predict(sharp, SC_COMM_ALL_REDUCE, 4e9, 64, 8);
  sc_comm_estimate without = predict(h100, SC_COMM_ALL_REDUCE, 4e9, 64, 8);
  assert_true(with.algo == SC_ALGO_COLLNET || with.algo == SC_ALGO_NVLS);
  assert_true(with.time_us < without.time_us);
  /* PAT: all-gather with one GPU per node, small messages */
  assert_int_equal(predict(a100, SC_COMM_ALL_GATHER, 4096, 64, 1).algo, SC_ALGO_PAT);
  assert_string_equal(sc_comm_algo_name(SC_ALGO_NVLS_TREE), "nvls_tree");
  assert_string_equal(sc_comm_proto_name(SC_PROTO_LL128), "LL128");
  assert_string_equal(sc_comm_algo_name(-1), "?");
  sc_comm_free(a100);
  sc_comm_free(h100);
  sc_comm_free(sharp);
}

static void test_collectives_relate(void **state) {
  (void)state;
  sc_comm *m = model("a100-80gb", 0);
  double b = 1 << 28;
  double ar = predict(m, SC_COMM_ALL_REDUCE, b, 16, 8).time_us;
  double ag = predict(m, SC_COMM_ALL_GATHER, b, 16, 8).time_us;
  double rs = predict(m, SC_COMM_REDUCE_SCATTER, b, 16, 8).time_us;
  /* ring all-reduce = reduce-scatter + all-gather */
  assert_true(ar > ag && ar < 2.5 * ag);
  /* reduce-scatter moves what all-gather moves and also reduces: the
   * difference is its reduction term, reduce_passes x (n-1)/n x S over HBM */
  sc_comm_estimate rse = predict(m, SC_COMM_REDUCE_SCATTER, b, 16, 8);
  assert_true(predict(m, SC_COMM_ALL_GATHER, b, 16, 8).reduce_us == 0);
  assert_true(rse.reduce_us > 0 && fabs(rs - ag - rse.reduce_us) < 1e-9 * ag);
  assert_true(fabs(rse.reduce_us - 0.519 * 15.0 / 16.0 * b / (2039.0 * 1e3)) < 1e-6 * rse.reduce_us);
  assert_true(predict(m, SC_COMM_ALL_REDUCE, b, 16, 8).reduce_us > 0);
  /* the first-call setup grows with ranks x remote nodes; none in a node */
  assert_true(predict(m, SC_COMM_ALL_REDUCE, b, 8, 8).setup_us == 0);
  assert_true(fabs(predict(m, SC_COMM_ALL_REDUCE, b, 16, 8).setup_us - 27.0 * 16 * 1) < 1e-9);
  /* NVLS reduces in the switch: no reduction on the GPUs */
  sc_comm *h = model("h100-sxm", 0);
  sc_comm_estimate nv = predict(h, SC_COMM_ALL_REDUCE, 1e9, 8, 8);
  assert_int_equal(nv.algo, SC_ALGO_NVLS);
  assert_true(nv.reduce_us == 0);
  /* NVLS moves (1 + 1/n) S through every port: 4 GPUs run at (1 + 1/8) /
   * (1 + 1/4) = 0.9 of the 8-GPU algorithm bandwidth (measured on H100:
   * 245 / 275 = 0.89), the latency aside */
  sc_comm_estimate nv4 = predict(h, SC_COMM_ALL_REDUCE, 1e9, 4, 4);
  assert_true(nv4.algo == SC_ALGO_NVLS && fabs(nv4.algbw_gbps / nv.algbw_gbps - 0.9) < 0.01);
  sc_comm_free(h);
  /* all-to-all across nodes costs more than inside one */
  assert_true(predict(m, SC_COMM_ALL_TO_ALL, b, 16, 8).time_us >
              predict(m, SC_COMM_ALL_TO_ALL, b, 8, 8).time_us);
  assert_true(predict(m, SC_COMM_SEND_RECV, b, 16, 8).time_us >
              predict(m, SC_COMM_SEND_RECV, b, 8, 8).time_us);
  /* broadcast moves the buffer once: busbw = algbw */
  sc_comm_estimate bc = predict(m, SC_COMM_BROADCAST, b, 8, 8);
  assert_true(fabs(bc.algbw_gbps - bc.busbw_gbps) < 1e-9);
  /* bad requests */
  sc_comm_estimate e;
  assert_int_equal(sc_comm_predict(m, 42, b, 8, 8, &e), SC_EINVAL);
  assert_int_equal(sc_comm_predict(m, SC_COMM_ALL_REDUCE, b, 0, 8, &e), SC_EINVAL);
  assert_true(predict(m, SC_COMM_ALL_REDUCE, b, 1, 8).time_us == 0);
  sc_comm_free(m);
  sc_comm_cluster cl;
  memset(&cl, 0, sizeof cl);
  strcpy(cl.gpu, "tpu-v9");
  sc_comm *bad;
  assert_int_equal(sc_comm_new(ctx, &cl, &bad), SC_EINVAL);
  assert_null(bad);
}

/* ------------------------------------------------------------ parameters */

static int write_file(void *ud, const char *buf, size_t len) {
  return fwrite(buf, 1, len, (FILE *)ud) == len ? 0 : SC_EWRITE;
}

static void temp_yaml(char *path, size_t cap, const char *text) {
  snprintf(path, cap, "/tmp/sc_test_comm_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void expect_load_error(const char *text, const char *suffix) {
  char path[64];
  temp_yaml(path, sizeof path, text);
  sc_comm *m = model("a100-80gb", 0);
  sc_comm_params before = m->params;
  assert_int_equal(sc_comm_load_calibration(m, path), SC_EINVAL);
  const char *msg = sc_errmsg(ctx);
  if (strncmp(msg, path, strlen(path)) || strcmp(msg + strlen(path), suffix))
    fail_msg("message \"%s\", expected \"%s%s\"", msg, path, suffix);
  assert_memory_equal(&m->params, &before, sizeof before); /* all or nothing */
  sc_comm_free(m);
  unlink(path);
}

static void test_params_yaml(void **state) {
  (void)state;
  sc_comm_params p;
  sc__comm_params_default(sc_hw_find("a100-80gb"), &p);
  /* every default is inside its bounds (0 = no such feature, e.g. nvls_eff) */
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++) {
    const sc_calib_key *d = &sc__nccl_keys[i];
    double v = *(const double *)((const char *)&p + d->member);
    assert_true(v == 0 || (v >= d->lo && v <= d->hi));
    assert_non_null(d->doc);
  }

  /* write, read back */
  sc_comm *m = model("a100-40gb", 0);
  m->params.ll_frac = 0.123456789;
  m->params.pipe_kib = 1234.5;
  char path[64];
  temp_yaml(path, sizeof path, "");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(sc_comm_write_calibration(m, "line one\nline two", write_file, f), 0);
  fclose(f);
  sc_comm *back = model("a100-40gb", 0);
  assert_int_equal(sc_comm_load_calibration(back, path), 0);
  for (int i = 0; i < SC_COMM_PARAM_COUNT; i++) {
    size_t off = sc__nccl_keys[i].member;
    double a = *(const double *)((const char *)&m->params + off);
    double b = *(const double *)((const char *)&back->params + off);
    assert_true(fabs(a - b) <= 1e-5 * fabs(a));
  }
  unlink(path);
  sc_comm_free(m);
  sc_comm_free(back);

  /* keys of other models are left to them; other top-level data is fine */
  temp_yaml(path, sizeof path,
            "provenance: {by: test}\ncalibration:\n  gemm_eff: 0.5\n  nccl_tree_frac: 0.5\n");
  m = model("a100-80gb", 0);
  assert_int_equal(sc_comm_load_calibration(m, path), 0);
  assert_true(m->params.tree_frac == 0.5);
  unlink(path);

  expect_load_error("calibration:\n  nccl_ll_frac: 2\n",
                    ":2: calibration.nccl_ll_frac: 2 out of range [0.01, 1] (0 = the default)");
  expect_load_error("calibration:\n  nccl_tree_frac: 0.5\n  nccl_pipe_kib: lots\n",
                    ":3: calibration.nccl_pipe_kib: expected a number, got \"lots\"");
  expect_load_error("calibration:\n  nccl_ll_frac: [1]\n",
                    ":2: calibration.nccl_ll_frac: expected a number, got a sequence");
  expect_load_error("calibration:\n  nccl_bogus: 1\n",
                    ":2: unknown key \"calibration.nccl_bogus\" (keys: docs/CONFIG.md, section "
                    "calibration)");
  expect_load_error("calibration:\n  nccl_pipe_kb: 1\n",
                    ":2: unknown key \"calibration.nccl_pipe_kb\" (did you mean "
                    "\"calibration.nccl_pipe_kib\"?)");
  expect_load_error("model: {}\n", ":1: no top-level \"calibration:\" mapping in calibration file");
  expect_load_error("calibration: 3\n", ":1: calibration: expected a mapping of keys, got a scalar");
  expect_load_error("calibration:\n  a: [\n",
                    ":3: YAML syntax error: did not find expected node content at column 1 (while "
                    "parsing a flow node at line 3)");
  assert_int_equal(sc_comm_load_calibration(m, "/nonexistent/site.yaml"), SC_EREAD);
  sc_comm_free(m);
}

/* ------------------------------------------------------------ calibration */

static void test_calibration_deterministic(void **state) {
  (void)state;
  sc_nccltests t[2];
  load(&t[0], "validation/nccl/azure-ndv4-a100/all_reduce_8gpu.log");
  load(&t[1], "validation/nccl/azure-ndv4-a100/all_reduce_16gpu.log");
  sc_comm *a = model("a100-40gb", 0), *b = model("a100-40gb", 0);
  double ma, mb;
  assert_int_equal(sc_comm_calibrate(a, t, 2, &ma), 0);
  assert_int_equal(sc_comm_calibrate(b, t, 2, &mb), 0);
  assert_memory_equal(&a->params, &b->params, sizeof a->params);
  assert_true(ma == mb && ma < 10);
  /* parameters that were not fitted stay where they were */
  assert_true(a->params.p2p_latency_us == b->params.p2p_latency_us);
  assert_true(a->params.channels == 24);
  sc_comm_free(a);
  sc_comm_free(b);

  /* a file whose collective nobody names cannot be used */
  int op = t[0].op;
  t[0].op = -1;
  sc_comm *c = model("a100-40gb", 0);
  assert_int_equal(sc_comm_calibrate(c, t, 1, NULL), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "does not say which collective"));
  t[0].op = op;
  /* one rank communicates nothing */
  sc_nccltests one;
  load(&one, "validation/nccl/azure-ndv4-a100/all_reduce_1gpu.log");
  assert_int_equal(sc_comm_calibrate(c, &one, 1, NULL), SC_EINVAL);
  assert_string_equal(sc_errmsg(ctx), "no usable rows: every file has a single rank");
  sc_comm_free(c);
  sc_nccltests_free(ctx, &one);
  for (int i = 0; i < 2; i++) sc_nccltests_free(ctx, &t[i]);
}

/* Output without device lines: ranks from the bus factor, or the caller's. */
static void test_compare_without_devices(void **state) {
  (void)state;
  sc_nccltests t;
  load(&t, "validation/nccl/h200_2node_16gpu_allreduce_roce.txt");
  sc_comm *m = model("h200", 0);
  sc_comm_compare_row rows[64];
  size_t n;
  double mape;
  assert_int_equal(sc_comm_compare(m, &t, -1, 0, 8, rows, &n, &mape), 0);
  assert_int_equal(n, t.nrows);
  /* transfer check: fitted on A100 logs, still within 15% on H200 */
  assert_true(mape < 15);
  int op = t.op;
  t.op = -1;
  assert_int_equal(sc_comm_compare(m, &t, -1, 0, 8, rows, &n, &mape), SC_EINVAL);
  t.op = op;
  sc_comm_free(m);
  sc_nccltests_free(ctx, &t);
}

/* The held-out guard: calibrate on the 8-, 16- and 32-GPU Azure A100 logs,
 * predict 2, 4, 64 and 128 GPUs. Thresholds are the result when this test
 * was last changed (docs/COMM.md section 4, tools/comm_heldout.sh) plus 1.5
 * points: a regression guard, not a target. The fit is deterministic and
 * gives the same bands at -O0 and with -ffast-math. Measured =
 * min(out-of-place, in-place), warm-up rows left out as sc_comm_compare
 * leaves them out of its MAPE; the 2- to 8-GPU logs drive all GPUs from one
 * thread (nccl-tests -g), which sc_comm_compare models. */
static void test_heldout_accuracy(void **state) {
  (void)state;
  static const char dir[] = "validation/nccl/azure-ndv4-a100/";
  static const int train[] = {8, 16, 32};
  static const struct {
    int gpus;
    double max_mape[3]; /* < 64 KiB, 64 KiB - 16 MiB, > 16 MiB */
  } heldout[] = {
      {2, {7.0 + 1.5, 3.0 + 1.5, 6.9 + 1.5}},
      {4, {4.3 + 1.5, 2.8 + 1.5, 2.1 + 1.5}},
      /* small band: without the warm-up row (1 KiB, 294 us in both
       * columns; 20.2 % with it); the rest is a step at 16-32 KiB the
       * model does not have */
      {64, {9.2 + 1.5, 7.1 + 1.5, 5.1 + 1.5}},
      {128, {8.6 + 1.5, 6.5 + 1.5, 3.4 + 1.5}},
  };
  char rel[256];
  sc_nccltests t[3];
  for (int i = 0; i < 3; i++) {
    snprintf(rel, sizeof rel, "%sall_reduce_%dgpu.log", dir, train[i]);
    load(&t[i], rel);
  }
  sc_comm *m = model("a100-40gb", 0);
  double fit_mape;
  assert_int_equal(sc_comm_calibrate(m, t, 3, &fit_mape), 0);
  print_message("in-sample MAPE on 8/16/32 GPUs: %.1f%%\n", fit_mape);
  assert_true(fit_mape < 3.9 + 1.0);
  print_message("GPUs  <64KiB  64KiB-16MiB  >16MiB   (MAPE %% of time)\n");
  for (size_t h = 0; h < sizeof heldout / sizeof heldout[0]; h++) {
    sc_nccltests v;
    snprintf(rel, sizeof rel, "%sall_reduce_%dgpu.log", dir, heldout[h].gpus);
    load(&v, rel);
    sc_comm_compare_row rows[64];
    size_t n;
    double mape;
    assert_int_equal(sc_comm_compare(m, &v, -1, 0, 0, rows, &n, &mape), 0);
    double sum[3] = {0, 0, 0};
    int cnt[3] = {0, 0, 0};
    for (size_t r = 0; r < n; r++) {
      if (rows[r].warmup) continue; /* only the 64-GPU log has one */
      int band = rows[r].bytes < 65536 ? 0 : rows[r].bytes <= 16777216 ? 1 : 2;
      sum[band] += fabs(rows[r].error_pct);
      cnt[band]++;
    }
    double band_mape[3];
    for (int b = 0; b < 3; b++) band_mape[b] = cnt[b] ? sum[b] / cnt[b] : 0;
    print_message("%4d  %6.1f  %11.1f  %6.1f\n", heldout[h].gpus, band_mape[0], band_mape[1],
                  band_mape[2]);
    for (int b = 0; b < 3; b++) {
      assert_true(cnt[b] > 0);
      if (band_mape[b] > heldout[h].max_mape[b])
        fail_msg("%d GPUs, band %d: MAPE %.1f%% above the guard %.1f%%", heldout[h].gpus, b,
                 band_mape[b], heldout[h].max_mape[b]);
    }
    sc_nccltests_free(ctx, &v);
  }
  sc_comm_free(m);
  for (int i = 0; i < 3; i++) sc_nccltests_free(ctx, &t[i]);
}

/* The first-call setup: on the Azure logs the first out-of-place call of
 * 64 GPUs fixes nccl_setup_us (closed form after the steady-state fit), and
 * the shipped value predicts the held-out first call of 128 GPUs within
 * 10% (1129 against 1242 us; docs/COMM.md section 4). */
static void test_first_call_setup(void **state) {
  (void)state;
  sc_nccltests t64, t128;
  load(&t64, "validation/nccl/azure-ndv4-a100/all_reduce_64gpu.log");
  load(&t128, "validation/nccl/azure-ndv4-a100/all_reduce_128gpu.log");
  assert_int_equal(t64.iters, 50);
  assert_int_equal(t64.warmup_iters, 20);
  assert_true(sc_nccltests_row_is_first_call(&t64, 0) && !sc_nccltests_row_is_first_call(&t64, 1));
  assert_true(sc_nccltests_row_is_first_call(&t128, 0));
  /* 128 GPUs: only the out-of-place column paid it; not a warm-up row */
  assert_false(sc_nccltests_row_is_warmup(&t128, 0));
  sc_comm *m = model("a100-40gb", 0);
  sc_comm_compare_row rows[64];
  size_t n;
  double mape;
  assert_int_equal(sc_comm_compare(m, &t128, -1, 0, 0, rows, &n, &mape), 0);
  assert_true(!isnan(rows[0].first_call_us) && isnan(rows[1].first_call_us));
  double err = (rows[0].first_call_predicted_us - rows[0].first_call_us) / rows[0].first_call_us;
  print_message("128 GPUs first call: %.1f us measured, %.1f predicted (%+.1f%%)\n",
                rows[0].first_call_us, rows[0].first_call_predicted_us, 100 * err);
  assert_true(fabs(err) < 0.10 + 0.015);
  /* fitting the 64-GPU log gives the setup back (only its steady keys
   * refitted, to keep the test quick) */
  static const char *const keys[] = {"nccl_nvlink_eff"};
  assert_int_equal(sc_comm_fit_only(m, keys, 1), 0);
  m->params.setup_us = 1;
  assert_int_equal(sc_comm_calibrate(m, &t64, 1, NULL), 0);
  assert_true(fabs(m->params.setup_us - 27.0) < 1.0);
  static const char *const bad[] = {"nccl_channels"};
  assert_int_equal(sc_comm_fit_only(m, bad, 1), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "\"nccl_channels\" is not a fitted key"));
  sc_comm_free(m);
  sc_nccltests_free(ctx, &t64);
  sc_nccltests_free(ctx, &t128);
}

/* The held-out guard of the other collectives (H100, docs/COMM.md section
 * 4, tools/comm_heldout.sh): fit the keys the H100 logs identify on the
 * calibration GPU counts (8 on one node, 40 on 10 nodes), predict every
 * held-out log; each guard is the MAPE when this test was last changed plus
 * 1.5 points. The cluster's logs start at 32 MiB, so they are one band
 * (> 16 MiB). The 10-node send/recv logs are a known miss: that job's
 * network carried p2p at half the NIC rate its own 2-node run reaches. */
static void test_heldout_collectives(void **state) {
  (void)state;
  static const char dir[] = "validation/nccl/";
  static const char *const train[] = {
      "h100-together/all_gather_8gpu.log",      "h100-together/reduce_scatter_8gpu.log",
      "h100-cluster01/all_gather_8gpu.log",     "h100-cluster01/reduce_scatter_8gpu.log",
      "h100-cluster01/all_reduce_8gpu.log",     "h100-cluster01/alltoall_8gpu.log",
      "h100-cluster01/sendrecv_8gpu.log",       "h100-cluster01/all_gather_40gpu.log",
      "h100-cluster01/reduce_scatter_40gpu.log", "h100-cluster01/all_reduce_40gpu.log",
      "h100-cluster01/alltoall_40gpu.log"};
  static const char *const keys[] = {
      "nccl_nvlink_eff", "nccl_nic_eff",         "nccl_channel_us",         "nccl_base_scale",
      "nccl_tree_hop_scale", "nccl_net_bulk_hop_scale", "nccl_ll128_frac", "nccl_pipe_kib",
      "nccl_mem_passes", "nccl_host_launch_us", "nccl_reduce_passes",      "nccl_ring_mix"};
  static const struct {
    const char *file;
    double max_mape;
  } heldout[] = {
      {"all_gather_4gpu.log", 4.2},          {"all_gather_10gpu.log", 5.8},
      {"all_gather_20gpu.log", 10.7},        {"all_gather_80gpu.log", 20.2},
      {"reduce_scatter_4gpu.log", 4.2},      {"reduce_scatter_10gpu.log", 6.2},
      {"reduce_scatter_20gpu.log", 10.4},    {"reduce_scatter_80gpu.log", 20.0},
      {"all_reduce_4gpu.log", 2.8},          {"all_reduce_10gpu.log", 7.1},
      {"all_reduce_20gpu.log", 6.2},         {"all_reduce_80gpu.log", 17.3},
      {"alltoall_4gpu.log", 6.8},            {"alltoall_10gpu.log", 9.0},
      {"alltoall_20gpu.log", 8.6},           {"alltoall_80gpu.log", 8.9},
      {"alltoall_2gpu_2nodes.log", 9.4},     {"alltoall_16gpu_2nodes.log", 1.7},
      {"sendrecv_4gpu.log", 19.2},           {"sendrecv_2gpu_2nodes.log", 9.3},
      {"sendrecv_16gpu_2nodes.log", 4.9},    {"sendrecv_10gpu.log", 48.5},
      {"sendrecv_20gpu.log", 47.7},          {"sendrecv_80gpu.log", 68.4},
  };
  enum { NTRAIN = sizeof train / sizeof train[0] };
  char rel[256];
  sc_nccltests t[NTRAIN];
  for (int i = 0; i < NTRAIN; i++) {
    snprintf(rel, sizeof rel, "%s%s", dir, train[i]);
    load(&t[i], rel);
  }
  sc_comm *m = model("h100-sxm", 0);
  assert_int_equal(sc_comm_fit_only(m, keys, sizeof keys / sizeof keys[0]), 0);
  double fit_mape;
  assert_int_equal(sc_comm_calibrate(m, t, NTRAIN, &fit_mape), 0);
  print_message("H100 in-sample MAPE: %.1f%%\n", fit_mape);
  assert_true(fit_mape < 7.2 + 1.0);
  /* the fit is the shipped Hopper defaults */
  sc_comm *def = model("h100-sxm", 0);
  assert_true(fabs(m->params.nic_eff - def->params.nic_eff) < 0.001);
  assert_true(fabs(m->params.nvlink_eff - def->params.nvlink_eff) < 0.001);
  sc_comm_free(def);
  for (size_t h = 0; h < sizeof heldout / sizeof heldout[0]; h++) {
    sc_nccltests v;
    snprintf(rel, sizeof rel, "%sh100-cluster01/%s", dir, heldout[h].file);
    load(&v, rel);
    sc_comm_compare_row rows[64];
    size_t n;
    double mape;
    assert_int_equal(sc_comm_compare(m, &v, -1, 0, 0, rows, &n, &mape), 0);
    assert_true(n > 0 && rows[0].bytes > 16777216);
    print_message("%-28s %6.1f\n", heldout[h].file, mape);
    if (mape > heldout[h].max_mape + 1.5)
      fail_msg("%s: MAPE %.1f%% above the guard %.1f%%", heldout[h].file, mape,
               heldout[h].max_mape + 1.5);
    sc_nccltests_free(ctx, &v);
  }
  sc_comm_free(m);
  for (int i = 0; i < NTRAIN; i++) sc_nccltests_free(ctx, &t[i]);
}

/* `calibration: nccl_*` keys in a config reach the model the engine uses;
 * duplicates and out-of-range values are input errors with a line. */
static void test_config_wiring(void **state) {
  (void)state;
  sc_ctx *c;
  assert_int_equal(sc_test_ctx_new(&c), 0);
  sc_config cfg;
  sc_test_example(&cfg);
  static const char yaml[] = "calibration:\n  nccl_nic_eff: 0.5\n  nccl_ll_frac: 0.25\n";
  assert_int_equal(sc_config_load_string(c, &cfg, "w.yaml", yaml, sizeof yaml - 1), 0);
  assert_int_equal(sc_config_set(c, &cfg, "calibration.nccl_tree_frac=0.8"), 0);
  assert_int_equal(sc_config_resolve(c, &cfg), 0);
  sc_cost cost;
  assert_int_equal(sc__cost_init(c, &cfg, &cost), 0);
  sc_comm_params p;
  sc__comm_params_from_cost(&cost, &p);
  assert_true(p.nic_eff == 0.5 && p.ll_frac == 0.25 && p.tree_frac == 0.8);
  /* the value changes collective times */
  sc_comm_topo t;
  sc__comm_topo_from_cost(&cost, &t);
  sc_placement pl = {64, 8, 8, 1};
  sc_comm_params def;
  sc__comm_params_default(cost.hw, &def);
  def.p2p_latency_us = p.p2p_latency_us;
  assert_true(sc__comm_time_us(&t, &p, SC_COLL_ALLREDUCE, 1e9, &pl, NULL, NULL) >
              sc__comm_time_us(&t, &def, SC_COLL_ALLREDUCE, 1e9, &pl, NULL, NULL));
  static const char dup[] = "calibration:\n  nccl_nic_eff: 0.5\n  nccl_nic_eff: 0.6\n";
  assert_int_equal(sc_config_load_string(c, &cfg, "d.yaml", dup, sizeof dup - 1), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(c), "d.yaml:3: duplicate key"));
  static const char bad[] = "calibration:\n  nccl_nic_eff: 7\n";
  assert_int_equal(sc_config_load_string(c, &cfg, "b.yaml", bad, sizeof bad - 1), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(c), "b.yaml:2: calibration.nccl_nic_eff: 7 out of range [0.05, 1]"));
  assert_int_equal(sc_config_set(c, &cfg, "calibration.nccl_bogus=1"), SC_EINVAL);
  sc_ctx_free(c);
}

/* ------------------------------------------------------------ network tiers */

/* The NCCL model's links for a GPU from a resolved default config with
 * `sets` (--set assignments, NULL-terminated) applied. */
static void tier_cost(sc_cost *cost, const char *const *sets) {
  sc_config cfg;
  sc_test_example(&cfg);
  for (size_t i = 0; sets && sets[i]; i++)
    if (sc_config_set(ctx, &cfg, sets[i])) fail_msg("%s", sc_errmsg(ctx));
  if (sc_config_resolve(ctx, &cfg)) fail_msg("%s", sc_errmsg(ctx));
  if (sc__cost_init(ctx, &cfg, cost)) fail_msg("%s", sc_errmsg(ctx));
}

/* Placement of ranks first, first + step, ... (n of them) on nodes of gpn
 * GPUs under leaves of npl nodes. */
static sc_placement strided(int64_t first, int64_t step, int64_t n, int64_t gpn, int64_t npl) {
  sc_placement_acc acc;
  sc__placement_begin(&acc, npl);
  for (int64_t i = 0; i < n; i++) sc__placement_add(&acc, (first + i * step) / gpn);
  return acc.pl;
}

/* Defaults are neutral: a placement that spans leaves prices exactly as
 * before while the spine is non-blocking and the tiers add no latency, and
 * the placement counts leaves from the rank order. */
static void test_tiers_neutral(void **state) {
  (void)state;
  sc_cost flat, tiers;
  tier_cost(&flat, NULL);
  static const char *const set[] = {"cluster.leaf_gpus=256", "cluster.rail_optimized=false",
                                    NULL};
  tier_cost(&tiers, set);
  assert_int_equal(flat.nodes_per_leaf, 0);
  assert_int_equal(tiers.nodes_per_leaf, 32);
  sc_placement dp = strided(0, 8, 128, 8, 32); /* one GPU per node, 128 nodes */
  assert_int_equal(dp.nodes, 128);
  assert_int_equal(dp.leaves, 4);
  assert_int_equal(strided(0, 8, 128, 8, 0).leaves, 1);
  assert_int_equal(strided(24, 1, 16, 8, 4).leaves, 2); /* nodes 3 and 4 straddle a leaf */
  for (int op = 0; op < SC_COLL_COUNT; op++)
    for (double b = 1024; b <= 4e9; b *= 16) {
      sc_placement flat_dp = dp;
      flat_dp.leaves = 1;
      assert_true(flat.comm->coll_ns(&flat, op, b, &flat_dp) ==
                  tiers.comm->coll_ns(&tiers, op, b, &dp));
    }
  for (int tier = SC_TIER_NODE; tier <= SC_TIER_SPINE; tier++)
    assert_true(tiers.comm->p2p_ns(&tiers, 1e8, tier) ==
                flat.comm->p2p_ns(&flat, 1e8, tier == SC_TIER_NODE ? 0 : 1));
}

/* A 2:1 spine and a DP all-reduce across it (A100, NCCL's own tuner, whose
 * choice the spine does not change). A ring's links across the spine get
 * NIC x min(1, g / ratio), g = the group's nodes per leaf:
 * - a DP group with one GPU on each of 64 nodes, one node per leaf (a group
 *   strided across leaves, e.g. TP 8 x CP 32 filling a 256-GPU leaf): every
 *   ring link crosses at NIC / 2, so the link and pipeline-fill terms of the
 *   ring double. Hand-computed: ring Simple of S = 1 GiB over n = 64 ranks
 *   moves 2 (n-1)/n S plus 2 (n-1) fill chunks of min(S/n, pipe_kib) at the
 *   rail's nic x nic_eff; the time grows by exactly that and the ratio is
 *   1 + that / T(1:1), about 1.9 (latency, reduction and memory passes do
 *   not change);
 * - the same group on contiguous nodes under leaves of 32 nodes (2 leaves):
 *   g = 32 >= 2, so the uplinks suffice and nothing changes;
 * - a group inside one leaf: nothing changes. */
static void test_spine_slows_cross_leaf_allreduce(void **state) {
  (void)state;
  sc_cost flat, one_node_leaves, su;
  tier_cost(&flat, NULL);
  static const char *const set1[] = {"cluster.leaf_gpus=8", "cluster.spine_oversubscription=2",
                                     NULL};
  static const char *const set32[] = {"cluster.leaf_gpus=256",
                                      "cluster.spine_oversubscription=2", NULL};
  tier_cost(&one_node_leaves, set1);
  tier_cost(&su, set32);
  const double S = 1024.0 * 1024 * 1024, n = 64;
  sc_placement pl_flat = strided(0, 8, 64, 8, 0);
  sc_placement pl_strided = strided(0, 8, 64, 8, one_node_leaves.nodes_per_leaf);
  assert_int_equal(pl_strided.leaves, 64);
  int a1, p1, a2, p2;
  double t1 = sc__comm_time_us(&flat.comm_topo, &flat.comm_params, SC_COMM_ALL_REDUCE, S,
                               &pl_flat, &a1, &p1);
  double t2 = sc__comm_time_us(&one_node_leaves.comm_topo, &one_node_leaves.comm_params,
                               SC_COMM_ALL_REDUCE, S, &pl_strided, &a2, &p2);
  assert_int_equal(a1, a2);
  assert_int_equal(p1, p2);
  assert_int_equal(a1, 0 /* SC_ALGO_RING */);
  assert_int_equal(p1, 2 /* SC_PROTO_SIMPLE */);
  const sc_comm_params *cp = &flat.comm_params;
  double b_net = flat.comm_topo.nic_gbps * cp->nic_eff; /* GB/s, one rail */
  double moved = 2 * (n - 1) / n * S + 2 * (n - 1) * fmin(S / n, cp->pipe_kib * 1024.0);
  double link_us = moved / (b_net * 1e3); /* at NIC; at NIC / 2 it takes twice */
  double expect = 1 + link_us / t1;
  double ratio = t2 / t1;
  assert_true(fabs(ratio - expect) < 0.01 * expect);
  assert_true(fabs((t2 - t1) - link_us) < 1e-9 * t2);
  assert_true(ratio > 1.9 && ratio < 2.0);
  /* contiguous nodes filling 32-node leaves: unchanged */
  sc_placement pl_su = strided(0, 8, 64, 8, su.nodes_per_leaf);
  assert_int_equal(pl_su.leaves, 2);
  assert_true(sc__comm_time_us(&su.comm_topo, &su.comm_params, SC_COMM_ALL_REDUCE, S, &pl_su,
                               NULL, NULL) == t1);
  /* ... until the oversubscription exceeds the group's nodes per leaf */
  sc_comm_topo t64 = su.comm_topo;
  t64.spine_oversub = 64;
  double t64us = sc__comm_time_us(&t64, &su.comm_params, SC_COMM_ALL_REDUCE, S, &pl_su, NULL,
                                  NULL);
  assert_true(fabs((t64us - t1) - link_us * (64.0 / 32 - 1)) < 1e-9 * t64us);
  /* a TP group and a node-local DP group stay under one leaf */
  sc_placement in_leaf = strided(0, 8, 4, 8, one_node_leaves.nodes_per_leaf * 4);
  sc_placement in_leaf_flat = in_leaf;
  in_leaf_flat.leaves = 1;
  assert_int_equal(in_leaf.leaves, 1);
  assert_true(one_node_leaves.comm->coll_ns(&one_node_leaves, SC_COLL_ALLREDUCE, S, &in_leaf) ==
              flat.comm->coll_ns(&flat, SC_COLL_ALLREDUCE, S, &in_leaf_flat));
  /* every collective is at least as slow across an oversubscribed spine */
  sc_placement node8 = strided(0, 1, 64, 8, 1); /* 8 GPUs on each of 8 nodes, a leaf each */
  sc_placement node8_flat = node8;
  node8_flat.leaves = 1;
  for (int op = 0; op < SC_COLL_COUNT; op++)
    for (double b = 4096; b <= 4e9; b *= 8)
      assert_true(one_node_leaves.comm->coll_ns(&one_node_leaves, op, b, &node8) >=
                  flat.comm->coll_ns(&flat, op, b, &node8_flat));
}

/* The tiers' latencies: a ring all-reduce over nodes adds leaf_latency_us
 * per network step (2 (nodes - 1)) and spine_latency_us per crossing of a
 * leaf boundary (2 (leaves - 1)); a p2p across the spine both, at NIC /
 * ratio. */
static void test_spine_latency_and_p2p(void **state) {
  (void)state;
  sc_cost base, lat;
  static const char *const set0[] = {"cluster.leaf_gpus=32", NULL};
  static const char *const set1[] = {"cluster.leaf_gpus=32", "cluster.leaf_latency_us=0.5",
                                     "cluster.spine_latency_us=2",
                                     "cluster.spine_oversubscription=4", NULL};
  tier_cost(&base, set0);
  tier_cost(&lat, set1);
  sc_placement pl = strided(0, 8, 16, 8, 4); /* 16 nodes, 4 leaves; g = 4 = ratio */
  assert_int_equal(pl.leaves, 4);
  int a0, p0, a1, p1;
  double t0 = sc__comm_time_us(&base.comm_topo, &base.comm_params, SC_COMM_ALL_REDUCE, 4096, &pl,
                               &a0, &p0);
  double t1 = sc__comm_time_us(&lat.comm_topo, &lat.comm_params, SC_COMM_ALL_REDUCE, 4096, &pl,
                               &a1, &p1);
  assert_int_equal(a0, a1);
  assert_int_equal(p0, p1);
  if (a0 == 0) /* ring */
    assert_true(fabs(t1 - t0 - (2 * 15 * 0.5 + 2 * 3 * 2.0)) < 1e-9);
  else /* tree: 2 x (depth 4 x leaf + 2 levels above the leaves x spine) */
    assert_true(fabs(t1 - t0 - 2 * (4 * 0.5 + 2 * 2.0)) < 1e-9);
  double b = 1e8;
  double leaf0 = base.comm->p2p_ns(&base, b, SC_TIER_LEAF);
  double spine0 = base.comm->p2p_ns(&base, b, SC_TIER_SPINE);
  double spine1 = lat.comm->p2p_ns(&lat, b, SC_TIER_SPINE);
  assert_true(leaf0 == spine0); /* non-blocking: the spine costs nothing */
  double wire_ns = b / (base.comm_topo.nic_gbps * base.comm_params.nic_eff);
  assert_true(fabs(spine1 - spine0 - (3 * wire_ns + 2.5e3)) < 1e-6 * spine1);
  assert_true(lat.comm->p2p_ns(&lat, b, SC_TIER_LEAF) - leaf0 - 0.5e3 < 1e-6 * leaf0);
}

/* All-to-all (EP) across leaves: a fraction c = (n - n / leaves) / (n - ppn)
 * of every GPU's network bytes crosses the spine, so the network part runs
 * at NIC x min(1, 1 / (ratio x c)); rail leaves add NCCL's PXN forwarding
 * over NVLink, which the NIC term hides here. */
static void test_spine_alltoall(void **state) {
  (void)state;
  sc_cost flat, tor, rails;
  tier_cost(&flat, NULL);
  static const char *const set_tor[] = {"cluster.leaf_gpus=16", "cluster.spine_oversubscription=2",
                                        "cluster.rail_optimized=false", NULL};
  static const char *const set_rails[] = {"cluster.leaf_gpus=16",
                                          "cluster.spine_oversubscription=2", NULL};
  tier_cost(&tor, set_tor);
  tier_cost(&rails, set_rails);
  sc_placement pl = strided(0, 1, 64, 8, 2); /* 8 nodes of 8, 4 leaves */
  sc_placement pl_flat = pl;
  pl_flat.leaves = 1;
  double S = 256.0 * 1024 * 1024;
  double t1 = flat.comm->coll_ns(&flat, SC_COLL_ALLTOALL, S, &pl_flat);
  double t2 = tor.comm->coll_ns(&tor, SC_COLL_ALLTOALL, S, &pl);
  const sc_comm_params *cp = &flat.comm_params;
  double n = 64, ppn = 8, c = (n - n / 4) / (n - ppn);
  double share = fmin(1, 1 / (2 * c));
  double b_nic = flat.comm_topo.nic_gbps * cp->nic_eff;
  double inter = (n - ppn) / n * S;
  double lat_ns = (cp->launch_us + cp->p2p_latency_us + (n - 1) * cp->a2a_peer_us) * 1e3;
  assert_true(fabs(t1 - (lat_ns + inter / b_nic)) < 1e-9 * t1); /* the NIC bounds it */
  assert_true(fabs(t2 - (lat_ns + inter / (b_nic * share))) < 1e-9 * t2);
  assert_true(t2 / t1 > 1.7 && t2 / t1 < 1.72); /* 2 x 6/7 */
  double t3 = rails.comm->coll_ns(&rails, SC_COLL_ALLTOALL, S, &pl);
  assert_true(t3 == t2); /* forwarding: (7 + 7 x 7/8) / 64 S over NVLink, under the NIC's */
  /* DeepEP's RDMA copies cross alike */
  flat.moe_topk = tor.moe_topk = 8;
  flat.moe_experts = tor.moe_experts = 256;
  double d1 = sc__ep_deepep_ns(&flat, S, &pl_flat), d2 = sc__ep_deepep_ns(&tor, S, &pl);
  assert_true(d2 > d1);
}

/* GB200 NVL72: the node is the 72-GPU NVLink domain, so a 64-GPU EP or TP
 * group runs at NVLink speed, and the same group on 8-GPU nodes would go
 * over the NICs. */
static void test_nvl72_domain(void **state) {
  (void)state;
  sc_cost nvl72, hgx;
  static const char *const set72[] = {"cluster.gpu=gb200", "cluster.num_gpus=576",
                                      "parallel.tp=8",     "parallel.pp=1",
                                      "training.global_batch=576", NULL};
  static const char *const set8[] = {"cluster.gpu=gb200",         "cluster.num_gpus=576",
                                     "cluster.gpus_per_node=8",   "parallel.tp=8",
                                     "parallel.pp=1",             "training.global_batch=576",
                                     NULL};
  tier_cost(&nvl72, set72);
  tier_cost(&hgx, set8);
  assert_int_equal(nvl72.gpus_per_node, 72);
  sc_placement in72 = strided(0, 1, 64, 72, 0), in8 = strided(0, 1, 64, 8, 0);
  assert_int_equal(in72.nodes, 1);
  assert_int_equal(in8.nodes, 8);
  double S = 1024.0 * 1024 * 1024;
  for (int op = SC_COLL_ALLREDUCE; op <= SC_COLL_ALLTOALL; op++) {
    double t72 = nvl72.comm->coll_ns(&nvl72, op, S, &in72);
    double t8 = hgx.comm->coll_ns(&hgx, op, S, &in8);
    double bus_gbps = sc_comm_bus_factor(op, 64) * S / t72; /* bytes/ns */
    assert_true(bus_gbps > 4 * nvl72.nic_bytes_per_ns); /* far above a NIC */
    assert_true(t8 > 2 * t72);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_and_default),
      cmocka_unit_test(test_monotone_in_size),
      cmocka_unit_test(test_nccl_tuner_and_bench),
      cmocka_unit_test(test_busbw_bounded_by_links),
      cmocka_unit_test(test_ring_tree_crossover),
      cmocka_unit_test(test_protocol_switch_points),
      cmocka_unit_test(test_nvls_collnet_pat),
      cmocka_unit_test(test_collectives_relate),
      cmocka_unit_test(test_params_yaml),
      cmocka_unit_test(test_calibration_deterministic),
      cmocka_unit_test(test_compare_without_devices),
      cmocka_unit_test(test_heldout_accuracy),
      cmocka_unit_test(test_first_call_setup),
      cmocka_unit_test(test_heldout_collectives),
      cmocka_unit_test(test_config_wiring),
      cmocka_unit_test(test_tiers_neutral),
      cmocka_unit_test(test_spine_slows_cross_leaf_allreduce),
      cmocka_unit_test(test_spine_latency_and_p2p),
      cmocka_unit_test(test_spine_alltoall),
      cmocka_unit_test(test_nvl72_domain),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
