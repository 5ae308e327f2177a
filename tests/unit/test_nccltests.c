/*
 * test_nccltests.c: the nccl-tests output reader (src/nccltests.c): golden
 * values of every shipped output under validation/nccl/ (rows, first and
 * last values, ranks and nodes), the layouts of other nccl-tests versions and
 * binaries, malformed lines ("file:line: message"), numeric cells out of
 * range or beyond int64, allocation failures.
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

#include "stepcast/comm.h"
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

static void path_of(char *buf, size_t cap, const char *rel) {
  const char *root = sc_test_source_dir();
  snprintf(buf, cap, "%s/%s", root, rel);
}

static void load(sc_nccltests *t, const char *rel) {
  char p[1024];
  path_of(p, sizeof p, rel);
  if (sc_nccltests_load(ctx, p, t)) fail_msg("%s", sc_errmsg(ctx));
}

static void parse(sc_nccltests *t, const char *text) {
  if (sc_nccltests_parse(ctx, "t.log", text, strlen(text), t)) fail_msg("%s", sc_errmsg(ctx));
}

static void expect_error(const char *text, const char *msg) {
  sc_nccltests t;
  int rc = sc_nccltests_parse(ctx, "t.log", text, strlen(text), &t);
  if (rc != SC_EINVAL) fail_msg("expected SC_EINVAL for:\n%s", text);
  if (strcmp(sc_errmsg(ctx), msg)) fail_msg("message \"%s\", expected \"%s\"", sc_errmsg(ctx), msg);
  assert_int_equal(t.nrows, 0);
  assert_null(t.rows);
}

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-12)

/* ------------------------------------------------------------ shipped files */

/* One golden line per shipped output: counts, the first and the last row. */
static const struct golden {
  const char *file;
  int64_t ranks, nodes, per_node, infer;
  size_t rows;
  int first_line;
  int64_t first_bytes;
  double first_oop_us, first_ip_us;
  int last_line;
  int64_t last_bytes;
  double last_oop_us, last_ip_busbw;
  const char *last_type;
} golden[] = {
    {"validation/nccl/azure-ndv4-a100/all_reduce_1gpu.log", 1, 1, 1, 0, 28, 9, 8, 4.47, 0.47, 36,
     1073741824, 1620.4, 0.00, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_2gpu.log", 2, 1, 2, 2, 28, 10, 8, 8.65, 8.51, 37,
     1073741824, 5203.1, 207.16, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_4gpu.log", 4, 1, 4, 4, 28, 12, 8, 16.42, 16.35, 39,
     1073741824, 7173.7, 224.64, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_8gpu.log", 8, 1, 8, 8, 28, 16, 8, 31.44, 32.30, 43,
     1073741824, 8139.2, 230.85, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_16gpu.log", 16, 2, 8, 16, 25, 24, 1024, 34.66,
     34.47, 48, 17179869184LL, 251757, 128.50, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_32gpu.log", 32, 4, 8, 32, 23, 40, 1024, 53.00,
     81.05, 62, 4294967296LL, 67271, 124.82, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_64gpu.log", 64, 8, 8, 64, 23, 72, 1024, 314.8,
     293.7, 94, 4294967296LL, 66444, 127.39, "float"},
    {"validation/nccl/azure-ndv4-a100/all_reduce_128gpu.log", 128, 16, 8, 128, 23, 136, 1024,
     1242.3, 91.97, 158, 4294967296LL, 69831, 122.07, "float"},
    {"validation/nccl/a800_12node_24gpu_allreduce.txt", 0, 0, 0, 24, 3, 5, 536870912, 24942, 24966,
     7, 2147483648LL, 97276, 42.34, "float"},
    {"validation/nccl/h100_8node_64gpu_allreduce_ib_sharp_coreweave.txt", 0, 0, 0, 96, 5, 6,
     536870912, 2984.6, 2979.7, 10, 8589934592LL, 43980, 385.56, "float"},
    {"validation/nccl/h200_2node_16gpu_allreduce_roce.txt", 0, 0, 0, 16, 34, 9, 1024, 45.06, 43.74,
     46, 10737418240LL, 55722.7, 360.98, "f8e4m3"},
};

static void test_shipped_files(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
    const struct golden *g = &golden[i];
    sc_nccltests t;
    load(&t, g->file);
    if (t.nrows != g->rows) fail_msg("%s: %zu rows, expected %zu", g->file, t.nrows, g->rows);
    assert_int_equal(t.op, SC_COMM_ALL_REDUCE); /* from the file names */
    assert_int_equal(t.ranks, g->ranks);
    assert_int_equal(t.nodes, g->nodes);
    assert_int_equal(t.per_node, g->per_node);
    assert_int_equal(sc_nccltests_infer_ranks(&t), g->infer);
    const sc_nccltests_row *f = &t.rows[0], *l = &t.rows[t.nrows - 1];
    assert_int_equal(f->line, g->first_line);
    assert_int_equal(f->bytes, g->first_bytes);
    NEAR(f->time_us[0], g->first_oop_us);
    NEAR(f->time_us[1], g->first_ip_us);
    assert_int_equal(l->line, g->last_line);
    assert_int_equal(l->bytes, g->last_bytes);
    NEAR(l->time_us[0], g->last_oop_us);
    NEAR(l->busbw_gbps[1], g->last_ip_busbw);
    assert_string_equal(l->type, g->last_type);
    assert_string_equal(l->redop, "sum");
    assert_int_equal(l->root, -1);
    /* rows are in file order, sizes never negative, every row has a time */
    for (size_t r = 0; r < t.nrows; r++) {
      assert_true(t.rows[r].bytes >= 0);
      assert_true(sc_nccltests_row_time_us(&t.rows[r]) > 0);
      if (r) assert_true(t.rows[r].line > t.rows[r - 1].line);
    }
    if (g->ranks) {
      assert_string_equal(t.gpu, "A100-SXM4-40GB");
      assert_int_equal(t.mixed_gpus, 0);
      assert_int_equal(t.nthread, 1);
    }
    sc_nccltests_free(ctx, &t);
  }
}

/* The 16-GPU and larger logs: mpirun tags, CRLF, "N/A" #wrong, 16 GiB rows,
 * and the tag in the middle of a device line of the 128-GPU log. */
static void test_azure_details(void **state) {
  (void)state;
  sc_nccltests t;
  load(&t, "validation/nccl/azure-ndv4-a100/all_reduce_16gpu.log");
  assert_int_equal(t.ngpus, 1);
  assert_int_equal(t.min_bytes, 1024);
  assert_int_equal(t.max_bytes, 17179869184LL);
  NEAR(t.avg_busbw_gbps, 60.5716);
  assert_true(isnan(t.rows[0].wrong[0]) && isnan(t.rows[0].wrong[1]));
  NEAR(t.rows[5].time_us[0], 55.79);                 /* 32768 B */
  NEAR(sc_nccltests_row_time_us(&t.rows[5]), 54.79); /* the smaller of the two */
  sc_nccltests_free(ctx, &t);

  load(&t, "validation/nccl/azure-ndv4-a100/all_reduce_8gpu.log");
  assert_int_equal(t.ngpus, 8);
  NEAR(t.rows[0].wrong[0], 1e-7); /* the old float "error" column */
  assert_string_equal(t.rows[0].redop, "sum");
  sc_nccltests_free(ctx, &t);

  load(&t, "validation/nccl/azure-ndv4-a100/all_reduce_128gpu.log");
  assert_int_equal(t.nodes, 16); /* not 17: "node-[1,0]<stdout>:00000C" is node-00000C */
  sc_nccltests_free(ctx, &t);
}

/* ------------------------------------------------------------ layouts */

static void test_new_layout_with_header(void **state) {
  (void)state;
  sc_nccltests t;
  parse(
      &t,
      "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n"
      "# Collective test starting: all_gather_perf\n"
      "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  12345 on    gpu-a01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid  12346 on    gpu-a01 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  2 Group  0 Pid  22345 on    gpu-a02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#\n"
      "#                                                              out-of-place                "
      "       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)       \n"
      "gpu-a01:12345:12345 [0] NCCL INFO comm 0x55d0 rank 0 nranks 3 - Init COMPLETE\n"
      "        1024            64     float    none      -1    20.01    0.05    0.03      0    "
      "19.87    0.05    0.03      0\n"
      "        2048           128     float    none      -1    20.52    0.10    0.07      0    "
      "20.40    0.10    0.07    N/A\n"
      "        4096           256     float    none      -1    21.37    0.19    0.13    N/A      "
      "N/A     N/A     N/A    N/A\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 0.0766667 \n"
      "#\n"
      "# Collective test concluded: all_gather_perf\n");
  assert_int_equal(t.op, SC_COMM_ALL_GATHER);
  assert_int_equal(t.ranks, 3);
  assert_int_equal(t.nodes, 2);
  assert_int_equal(t.per_node, 2);
  assert_string_equal(t.gpu, "NVIDIA H100 80GB HBM3");
  assert_int_equal(t.nrows, 3);
  assert_string_equal(t.rows[0].redop, "none");
  assert_int_equal(t.rows[0].root, -1);
  NEAR(t.rows[1].wrong[0], 0);
  assert_true(isnan(t.rows[1].wrong[1]));
  assert_true(isnan(t.rows[2].time_us[1]));
  NEAR(sc_nccltests_row_time_us(&t.rows[2]), 21.37);
  NEAR(t.avg_busbw_gbps, 0.0766667);
  sc_nccltests_free(ctx, &t);
}

/* nccl-tests before the root column (2020): all_gather printed no redop,
 * broadcast a root but no redop; the error column is a float. */
static void test_old_layouts(void **state) {
  (void)state;
  sc_nccltests t;
  parse(&t,
        "#       size         count    type     time   algbw   busbw  error     time   algbw   "
        "busbw  error\n"
        "       65536          2048   float    21.03    3.12    2.73  0e+00    20.77    3.16    "
        "2.76  0e+00\n");
  assert_int_equal(t.nrows, 1);
  assert_string_equal(t.rows[0].redop, "");
  assert_int_equal(t.rows[0].root, -1);
  NEAR(t.rows[0].busbw_gbps[1], 2.76);
  sc_nccltests_free(ctx, &t);

  /* no header at all: the layout is inferred from the row */
  parse(&t,
        "       65536         16384   float       0    21.03    3.12    3.12  0e+00    20.77    "
        "3.16    3.16  0e+00\n"
        "      131072         32768   float       0    25.50    5.14    5.14  1e-07    25.01    "
        "5.24    5.24  1e-07\n");
  assert_int_equal(t.nrows, 2);
  assert_int_equal(t.rows[0].root, 0);
  assert_string_equal(t.rows[0].redop, "");
  NEAR(t.rows[1].wrong[1], 1e-7);
  sc_nccltests_free(ctx, &t);

  parse(&t, "       65536          2048   float    21.03    3.12    2.73  N/A    20.77    3.16    "
            "2.76  N/A\n");
  assert_true(isnan(t.rows[0].wrong[0]));
  NEAR(t.rows[0].time_us[1], 20.77);
  sc_nccltests_free(ctx, &t);
}

/* -I per-iteration statistics and -t timestamps widen the table. */
static void test_per_iteration_and_timestamp(void **state) {
  (void)state;
  sc_nccltests t;
  parse(&t,
        "#       size         count      type   redop    root     time   algbw   busbw #wrong   "
        "i_min   i_max   i_p99   i_cv%     time   algbw   busbw #wrong   i_min   i_max   i_p99   "
        "i_cv% timestamp\n"
        "        1024           256     float     sum      -1    30.10    0.03    0.06      0   "
        "29.00   31.50   31.40    1.20    30.00    0.03    0.06      0   29.10   31.00   30.90    "
        "1.10 2025-01-01 10:00:00\n");
  assert_int_equal(t.nrows, 1);
  NEAR(t.rows[0].time_us[0], 30.10);
  NEAR(t.rows[0].time_us[1], 30.00);
  NEAR(t.rows[0].busbw_gbps[1], 0.06);
  sc_nccltests_free(ctx, &t);

  /* trace replay prints only the in-place half */
  parse(&t,
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
        "time   algbw   busbw #wrong\n"
        "        1024           256     float     sum      -1    30.00    0.03    0.06      0\n");
  assert_true(isnan(t.rows[0].time_us[0]));
  NEAR(t.rows[0].time_us[1], 30.00);
  sc_nccltests_free(ctx, &t);
}

/* mpirun tags at the start and in the middle of lines, CRLF, tabs. */
static void test_tags_and_line_ends(void **state) {
  (void)state;
  sc_nccltests t;
  parse(&t,
        "[1,0]<stdout>:# Using devices\r\n"
        "[1,0]<stdout>:#   Rank  0 Pid  1 on node-[1,0]<stdout>:0 device  0 [0x00] A100\r\n"
        "[1,0]<stdout>:#   Rank  1 Pid  2 on node-1 device  0 [0x00] A100\r\n"
        "[1,0]<stdout>:\t1024\t256\tfloat\tsum\t30.0\t0.03\t0.06\tN/A\t30.0\t0.03\t0.06\tN/A\r\n"
        "[12,3]<stderr>:some warning\r\n");
  assert_int_equal(t.ranks, 2);
  assert_int_equal(t.nodes, 2);
  assert_int_equal(t.nrows, 1);
  sc_nccltests_free(ctx, &t);
}

static void test_op_names(void **state) {
  (void)state;
  assert_int_equal(sc_comm_op_find("all_reduce"), SC_COMM_ALL_REDUCE);
  assert_int_equal(sc_comm_op_find("AllReduce"), SC_COMM_ALL_REDUCE);
  assert_int_equal(sc_comm_op_find("all_reduce_perf"), SC_COMM_ALL_REDUCE);
  assert_int_equal(sc_comm_op_find("all-gather"), SC_COMM_ALL_GATHER);
  assert_int_equal(sc_comm_op_find("reduce_scatter_perf"), SC_COMM_REDUCE_SCATTER);
  assert_int_equal(sc_comm_op_find("alltoall"), SC_COMM_ALL_TO_ALL);
  assert_int_equal(sc_comm_op_find("sendrecv_perf"), SC_COMM_SEND_RECV);
  assert_int_equal(sc_comm_op_find("bcast"), SC_COMM_BROADCAST);
  assert_int_equal(sc_comm_op_find("reduce"), -1);
  assert_string_equal(sc_comm_op_name(SC_COMM_BROADCAST), "broadcast");
  assert_string_equal(sc_comm_op_name(99), "?");
  NEAR(sc_comm_bus_factor(SC_COMM_ALL_REDUCE, 8), 1.75);
  NEAR(sc_comm_bus_factor(SC_COMM_ALL_GATHER, 8), 0.875);
  NEAR(sc_comm_bus_factor(SC_COMM_SEND_RECV, 8), 1.0);

  /* the op from the file name when the output does not say */
  static const char row[] = "1024 256 float none -1 30.0 0.03 0.03 0 30.0 0.03 0.03 0\n";
  static const struct {
    const char *name;
    int op;
  } names[] = {{"logs/reduce_scatter_8gpu.log", SC_COMM_REDUCE_SCATTER},
               {"alltoall_perf.out", SC_COMM_ALL_TO_ALL},
               {"x/sendrecv.txt", SC_COMM_SEND_RECV},
               {"broadcast.log", SC_COMM_BROADCAST},
               {"run7.log", -1}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    sc_nccltests t;
    assert_int_equal(sc_nccltests_parse(ctx, names[i].name, row, strlen(row), &t), 0);
    assert_int_equal(t.op, names[i].op);
    assert_int_equal(sc_nccltests_infer_ranks(&t), 0); /* no n-dependent factor or no op */
    sc_nccltests_free(ctx, &t);
  }
}

/* ------------------------------------------------------------ errors */

static void test_malformed(void **state) {
  (void)state;
  static const char hdr[] = "#       size         count      type   redop    root     time   algbw "
                            "  busbw #wrong     time   algbw   busbw #wrong\n";
  char text[1024];
  expect_error("", "t.log: no nccl-tests data rows found");
  expect_error("# only comments\nNCCL INFO whatever\n", "t.log: no nccl-tests data rows found");
  expect_error("1024 256 float sum 30.0 0.03\n",
               "t.log:1: data row has 6 columns; expected size count type [redop] [root] and time "
               "algbw busbw #wrong for out-of-place and in-place");
  snprintf(text, sizeof text, "%s1024 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06\n", hdr);
  expect_error(text, "t.log:2: data row has 12 columns, the table header above has 13");
  expect_error("1024 256 float sum 3x.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log:1: out-of-place time \"3x.0\" is not a number");
  expect_error("1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 inf 0\n",
               "t.log:1: in-place busbw \"inf\" is not a number");
  expect_error("1024 256 float sum -3.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log:1: out-of-place time -3.0 is negative");
  expect_error("-1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log:1: size \"-1024\" is not a non-negative integer");
  snprintf(text, sizeof text, "%s1024 2.5 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n", hdr);
  expect_error(text, "t.log:2: count \"2.5\" is not a non-negative integer");
  snprintf(text, sizeof text, "%s1024 256 7 sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n", hdr);
  expect_error(text, "t.log:2: type \"7\" is not a data type name");
  snprintf(text, sizeof text, "%s1024 256 float sum -2 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n", hdr);
  expect_error(text, "t.log:2: root \"-2\" is not a rank or -1");
  expect_error("1024 256 float sum N/A 0.03 0.06 0 N/A 0.03 0.06 0\n",
               "t.log:1: no time in this row (out-of-place and in-place are both N/A)");
  expect_error("# Using devices\n#   Rank zero Pid 1 on h device 0 [0x00] A100\n",
               "t.log:2: malformed device line (expected \"Rank R [Group G] Pid P on HOST device D "
               "[BUS] NAME\")");
  expect_error("#   Rank 0 Pid 1 on a device 0 [0x00] A100\n"
               "#   Rank 0 Pid 1 on b device 0 [0x00] A100\n",
               "t.log:2: rank 0 listed again on another host (b)");
  expect_error("#   Rank 1 Pid 1 on a device 0 [0x00] A100\n"
               "1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log: device lines list 1 ranks but number them up to 1");
  expect_error("1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n1024 256 float sum\n",
               "t.log:2: data row has 4 columns; expected size count type [redop] [root] and time "
               "algbw busbw #wrong for out-of-place and in-place");
  static const char nul[] = "1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n10\0 2\n";
  sc_nccltests t;
  assert_int_equal(sc_nccltests_parse(ctx, "t.log", nul, sizeof nul - 1, &t), SC_EINVAL);
  assert_string_equal(sc_errmsg(ctx), "t.log:2: NUL byte in text");

  /* a data row longer than the line buffer; an overlong comment is fine */
  size_t big = 10000;
  char *s = malloc(big + 64);
  assert_non_null(s);
  memset(s, ' ', big);
  memcpy(s + big, "1\n", 3);
  expect_error(s, "t.log:1: line longer than 8192 bytes");
  s[0] = '#';
  snprintf(s + big, 64, "\n1024 256 float sum 30 0.03 0.06 0 30 0.03 0.06 0\n");
  parse(&t, s);
  assert_int_equal(t.nrows, 1);
  sc_nccltests_free(ctx, &t);
  free(s);

  assert_int_equal(sc_nccltests_load(ctx, "/nonexistent/x.log", &t), SC_EREAD);
  assert_non_null(strstr(sc_errmsg(ctx), "/nonexistent/x.log: cannot open"));
}

/* Every numeric cell is checked for int64 overflow, non-finite values and
 * its physical range (issue 13: a row whose size overflowed int64 was
 * skipped as if it were a log line, and the file read with exit 0). */
static void test_cells_out_of_range(void **state) {
  (void)state;
  static const char hdr[] = "#       size         count      type   redop    root     time   algbw "
                            "  busbw #wrong     time   algbw   busbw #wrong\n";
  static const struct {
    const char *row, *msg;
  } bad[] = {
      {"99999999999999999999999 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: size 99999999999999999999999 out of range [0, 1125899906842624]"},
      {"+99999999999999999999999 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: size +99999999999999999999999 out of range [0, 1125899906842624]"},
      {"-99999999999999999999999 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: size \"-99999999999999999999999\" is not a non-negative integer"},
      {"1125899906842625 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: size 1125899906842625 out of range [0, 1125899906842624]"},
      {"1024 99999999999999999999999 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: count 99999999999999999999999 out of range [0, 1125899906842624]"},
      {"1024 256 float sum 99999999999999999999999 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: root 99999999999999999999999 out of range [-1, 4194303]"},
      {"1024 256 float sum 4194304 30.0 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: root 4194304 out of range [-1, 4194303]"},
      {"1024 256 float sum -1 1e400 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: out-of-place time \"1e400\" is not a number"},
      {"1024 256 float sum -1 3.7e9 0.03 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: out-of-place time 3.7e9 out of range [0, 3600000000]"},
      {"1024 256 float sum -1 30.0 nan 0.06 0 30.0 0.03 0.06 0",
       "t.log:2: out-of-place algbw \"nan\" is not a number"},
      {"1024 256 float sum -1 30.0 0.03 -0.06 0 30.0 0.03 0.06 0",
       "t.log:2: out-of-place busbw -0.06 out of range [0, 1000000000000000]"},
      {"1024 256 float sum -1 30.0 0.03 0.06 0 30.0 1e300 0.06 0",
       "t.log:2: in-place algbw 1e300 out of range [0, 1000000000000000]"},
      {"1024 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 -1",
       "t.log:2: in-place #wrong -1 out of range [0, 1125899906842624]"},
      {"1024 256 float sum -1 30.0 0.03 0.06 0 30.0 0.03 0.06 1e999",
       "t.log:2: in-place #wrong \"1e999\" is not a number"},
  };
  char text[1024];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, "%s%s\n", hdr, bad[i].row);
    expect_error(text, bad[i].msg);
  }
  /* without a header (the layout inferred from the row) the same */
  expect_error("99999999999999999999999 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log:1: size 99999999999999999999999 out of range [0, 1125899906842624]");
  /* the run line's parameters */
  expect_error("# nThread 1 nGpus 99999999999999999999 minBytes 8 maxBytes 1024 step: 2(factor)\n"
               "1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log:1: nGpus 99999999999999999999 out of range [0, 4194304]");
  expect_error("# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 "
               "iters: 4294967296 agg iters: 1\n"
               "1024 256 float sum 30.0 0.03 0.06 0 30.0 0.03 0.06 0\n",
               "t.log:1: iters 4294967296 out of range [0, 2147483647]");
  /* the largest values in range are read */
  sc_nccltests t;
  snprintf(text, sizeof text,
           "%s1125899906842624 281474976710656 float sum 4194303 3600000000 0.03 0.06 0 30.0 "
           "0.03 0.06 0\n",
           hdr);
  parse(&t, text);
  assert_int_equal(t.nrows, 1);
  assert_int_equal(t.rows[0].bytes, 1125899906842624LL);
  assert_int_equal(t.rows[0].root, 4194303);
  sc_nccltests_free(ctx, &t);
}

/* ------------------------------------------------------------ allocation */

/* Every allocation of a parse can fail: SC_ENOMEM, nothing leaked. */
static void test_allocation_failures(void **state) {
  (void)state;
  char p[1024];
  path_of(p, sizeof p, "validation/nccl/azure-ndv4-a100/all_reduce_128gpu.log");
  int ok = 0;
  for (long n = 0; n < 200 && !ok; n++) {
    sc_test_heap f = sc_test_heap_failing(n + 1, 1); /* n succeed, then all fail */
    sc_ctx *c;
    assert_int_equal(sc_test_ctx_on(&f, &c), 0);
    sc_nccltests t;
    int rc = sc_nccltests_load(c, p, &t);
    if (rc == 0) {
      ok = 1;
      assert_int_equal(t.nrows, 23);
      sc_nccltests_free(c, &t);
    } else {
      assert_int_equal(rc, SC_ENOMEM);
    }
    f.fail_at = 0;
    sc_ctx_free(c);
    assert_int_equal(f.live, 0);
  }
  assert_true(ok);
}

/* ------------------------------------------------------------ warm-up rows */

/* Only the first measured row can be a warm-up row, and only when it took
 * over twice the time of the next, larger size; the shipped logs have one
 * (64 GPUs, 1 KiB: 294 us in both columns, 73 us for 2 KiB). */
static void test_warmup_rows(void **state) {
  (void)state;
  sc_nccltests t;
  parse(&t, "        1024   256  float  sum   300.0  0.00  0.00  0   290.0  0.00  0.00  0\n"
            "        2048   512  float  sum    80.0  0.03  0.05  0    73.0  0.03  0.06  0\n"
            "        4096  1024  float  sum   200.0  0.05  0.10  0    77.0  0.05  0.11  0\n"
            "        8192  2048  float  sum    20.0  0.10  0.19  0    21.0  0.10  0.20  0\n");
  assert_int_equal(t.nrows, 4);
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 0), 1);
  /* later rows are never warm-up rows, even when slower than the next */
  for (size_t i = 1; i < t.nrows; i++) assert_int_equal(sc_nccltests_row_is_warmup(&t, i), 0);
  sc_nccltests_free(ctx, &t);

  /* twice the next row's time is not enough; the smaller column counts */
  parse(&t, "        1024   256  float  sum  1242.3  0.00  0.00  0    92.0  0.01  0.02  0\n"
            "        2048   512  float  sum   102.7  0.02  0.04  0    46.0  0.02  0.04  0\n");
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 0), 0);
  sc_nccltests_free(ctx, &t);

  /* a single row, or a next row that is not larger, makes no warm-up row */
  parse(&t, "        1024   256  float  sum   300.0  0.00  0.00  0   290.0  0.00  0.00  0\n");
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 0), 0);
  sc_nccltests_free(ctx, &t);
  parse(&t, "        2048   512  float  sum   300.0  0.00  0.00  0   290.0  0.00  0.00  0\n"
            "        1024   256  float  sum    80.0  0.03  0.05  0    73.0  0.03  0.06  0\n");
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 0), 0);
  sc_nccltests_free(ctx, &t);

  load(&t, "validation/nccl/azure-ndv4-a100/all_reduce_64gpu.log");
  size_t flagged = 0;
  for (size_t i = 0; i < t.nrows; i++) flagged += (size_t)sc_nccltests_row_is_warmup(&t, i);
  assert_int_equal(flagged, 1);
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 0), 1);
  assert_int_equal(t.rows[0].bytes, 1024);
  sc_nccltests_free(ctx, &t);
}

/* First-call rows (the out-of-place column of a run's first sized row),
 * zero-byte rows (nccl-tests -b 0) skipped by both detectors, and the
 * header's iteration counts. */
static void test_first_call_rows(void **state) {
  (void)state;
  sc_nccltests t;
  parse(&t, "# nThread 1 nGpus 8 minBytes 0 maxBytes 4096 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
            "           0     0  float  sum     0.9  0.00  0.00  0     0.9  0.00  0.00  0\n"
            "        1024   256  float  sum  1242.3  0.00  0.00  0    92.0  0.01  0.02  0\n"
            "        2048   512  float  sum   102.7  0.02  0.04  0    91.9  0.02  0.04  0\n"
            "        4096  1024  float  sum   300.0  0.05  0.10  0    95.0  0.05  0.11  0\n");
  assert_int_equal(t.warmup_iters, 5);
  assert_int_equal(t.iters, 20);
  assert_int_equal(sc_nccltests_row_is_first_call(&t, 0), 0);
  assert_int_equal(sc_nccltests_row_is_first_call(&t, 1), 1);
  assert_int_equal(sc_nccltests_row_is_first_call(&t, 3), 0); /* not the first row */
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 1), 0);     /* in-place 92: steady */
  sc_nccltests_free(ctx, &t);
  parse(&t, "           0     0  float  sum     0.9  0.00  0.00  0     0.9  0.00  0.00  0\n"
            "        1024   256  float  sum   300.0  0.00  0.00  0   290.0  0.00  0.00  0\n"
            "        2048   512  float  sum    80.0  0.03  0.05  0    73.0  0.03  0.06  0\n");
  assert_int_equal(t.iters, 0);
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 0), 0);
  assert_int_equal(sc_nccltests_row_is_warmup(&t, 1), 1);
  assert_int_equal(sc_nccltests_row_is_first_call(&t, 1), 1);
  sc_nccltests_free(ctx, &t);
  /* an in-place-only row has no first call */
  parse(&t, "        1024   256  float  sum     N/A   N/A   N/A  0   300.0  0.00  0.00  0\n"
            "        2048   512  float  sum    80.0  0.03  0.05  0    73.0  0.03  0.06  0\n");
  assert_int_equal(sc_nccltests_row_is_first_call(&t, 0), 0);
  sc_nccltests_free(ctx, &t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shipped_files),
      cmocka_unit_test(test_azure_details),
      cmocka_unit_test(test_new_layout_with_header),
      cmocka_unit_test(test_old_layouts),
      cmocka_unit_test(test_per_iteration_and_timestamp),
      cmocka_unit_test(test_tags_and_line_ends),
      cmocka_unit_test(test_op_names),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_cells_out_of_range),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_warmup_rows),
      cmocka_unit_test(test_first_call_rows),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
