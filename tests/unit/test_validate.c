/* test_validate.c: the case-file reader (RFC 4180 quoting, blanks, unknown
 * columns, malformed files as file:line errors), every column of the schema
 * (parse, range, mapping to the config, blank defaults), rows that cannot be
 * simulated (listed with their reason while the batch goes on), MoE/MLA rows
 * listed unsupported, the report formats, calibration (split discipline,
 * bounds, YAML round trip), the shipped default calibration, and the
 * accuracy regression guard on the shipped case files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sctest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "stepcast/validate.h"

#include "cost/cost_int.h"

/* Accuracy regression guards (validation rows, shipped default calibration),
 * set from the best honest result (2026-12-02, the two-stage H100 fit):
 * the three Megatron files 7.5 % over their 18 validation rows
 * (megatron_sc21_table1 5.9 %, korthikanti2022 12.0 %, megatron_core_h100
 * 4.8 %), worst 16.7 %; per file below (GUARDS); all six files 10.2 % over
 * 87 rows (10.1 % after torchtitan's selective AC became op_sac,
 * torchtitan_h100 11.5 -> 11.0 %, its guard lowered from 13.0 to 12.5); 2026-12-03:
 * the SC21 rows' micro-batch, interleaving and DDP from the artifact (row
 * configs), megatron_sc21_table1 5.9 -> 3.8 %, its guard 7.5 -> 5.0, the
 * three files 7.5 -> 6.9 %, the six 10.1 -> 9.9 %; later that day the
 * unfused attention core at its kernel-data bandwidth (scores_mem_eff) and
 * the two-stage A100 fit: korthikanti2022 12.0 -> 2.6 % (guard 13.5 -> 4.0),
 * megatron_sc21_table1 3.8 -> 6.1 % (guard 5.0 -> 7.0: the 2021 software
 * ran ~8 % slower than the 2022 one on the same layouts, and one A100 fit
 * now sits between them), llm_foundry_mpt 9.3 -> 7.6 % (guard 10.8 -> 8.5),
 * the three files 6.9 -> 4.5 % (worst 13.6 %), the six 9.9 -> 8.9 %;
 * 2026-12-04: torchtitan's separate projections (fused_projections false),
 * its FP8 recipes and float8 TP gathers (base and row configs):
 * torchtitan_h100 10.9 -> 8.8 % (guard 12.5 -> 10.5), the six 8.9 -> 8.2 %
 * (guard 10.0 -> 9.5). The limits leave 1-1.5 points for other models (communication, engine) to
 * move. */
#define MAX_MAPE_ALL_PCT 6.0
#define MAX_WORST_PCT 15.0
#define MAX_MAPE_SIX_FILES_PCT 9.5
#define MIN_COVERAGE_SIX_FILES_PCT 92.0
static const struct {
  const char *file;
  double max_mape_pct; /* validation rows */
} GUARDS[] = {{"megatron_sc21_table1.csv", 7.0}, {"korthikanti2022.csv", 4.0},
              {"megatron_core_h100.csv", 6.5},   {"torchtitan_h100.csv", 10.5},
              {"llm_foundry_mpt.csv", 8.5},      {"megatron_moe_h100.csv", 14.5}};

/* The guard of file path (its last component), or fails. */
static double guard_for(const char *path) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  for (size_t i = 0; i < sizeof GUARDS / sizeof GUARDS[0]; i++)
    if (!strcmp(GUARDS[i].file, b)) return GUARDS[i].max_mape_pct;
  fail_msg("no accuracy guard for %s", path);
  return 0;
}

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


/* Path under the source tree (SC_SOURCE_DIR, set by ctest; else "."). */
static const char *src_path(char *buf, size_t n, const char *rel) {
  const char *root = sc_test_source_dir();
  snprintf(buf, n, "%s/%s", root, rel);
  return buf;
}

#define HEADER                                                                                  \
  "id,split,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,micro_batch,tp,pp,"     \
  "cp,moe_experts,zero_stage,sequence_parallel,recompute,measured_step_s,source,notes\n"

/* A small model that simulates in milliseconds: 8 GPUs, TP2 PP2 DP2. */
#define ROW(id, split, extra_mb, cp, notes)                                                     \
  id "," split ",a100-80gb,8,4,1024,16,1024,32000,16," extra_mb ",2,2," cp ",,,0,full,0.5,"     \
     "test," notes "\n"

static int load(sc_caseset **set, const char *text) {
  int rc = sc_caseset_new(ctx, set);
  if (rc) return rc;
  return sc_caseset_load_string(*set, "t.csv", text, strlen(text), NULL);
}

static void test_quoted_fields_and_lines(void **state) {
  (void)state;
  const char *text = "\xef\xbb\xbf" HEADER
      ROW("a", "calibration", "1", "", "\"plain, with comma\"")
      ROW("b", "", "2", "1", "\"two\nlines, \"\"quoted\"\"\"")
      "\r\n"
      ROW("\"c\"", "validation", "", "", "x");
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  assert_int_equal(sc_caseset_count(set), 3);
  const sc_case *a = sc_caseset_case(set, 0), *b = sc_caseset_case(set, 1),
                *c = sc_caseset_case(set, 2);
  assert_string_equal(a->id, "a");
  assert_int_equal(a->split, SC_SPLIT_CALIBRATION);
  assert_int_equal(a->line, 2);
  assert_string_equal(b->id, "b");
  assert_int_equal(b->split, SC_SPLIT_VALIDATION); /* blank = validation */
  assert_int_equal(b->line, 3);
  assert_int_equal(b->resolved.training.micro_batch, 2);
  assert_string_equal(c->id, "c"); /* a quoted id */
  assert_int_equal(c->line, 6);   /* the quoted newline and the blank line count */
  assert_int_equal(sc_caseset_warning_count(set), 0);
  assert_null(sc_caseset_case(set, 3));
  sc_caseset_free(set);
}

/* Writes text to path, or fails the test. */
static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) fail_msg("cannot write %s", path);
}

/* A row's own config (PATH.rows/ID.yaml) fills the blank cells it gives:
 * its micro-batch, interleaving and overlap flag win over the columns'
 * defaults (before, a blank micro_batch cell took validate's choice over
 * the row config's value); a cell the row states still wins over it. */
static void test_row_config_fills_blank_cells(void **state) {
  (void)state;
  char dir[] = "/tmp/sc_test_rows_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char csv[64], rows[64], yaml[96], yaml_b[96];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  snprintf(rows, sizeof rows, "%s/t.rows", dir);
  snprintf(yaml, sizeof yaml, "%s/a.yaml", rows);
  snprintf(yaml_b, sizeof yaml_b, "%s/b.yaml", rows);
  write_file(csv, HEADER ROW("a", "", "", "", "x") ROW("b", "", "2", "", "x")
                      ROW("c", "", "", "", "x"));
  assert_int_equal(mkdir(rows, 0700), 0);
  const char *text = "training:\n  micro_batch: 4\nparallel:\n  vpp: 2\n"
                     "  overlap_grad_reduce: false\n";
  write_file(yaml, text);
  write_file(yaml_b, text);
  sc_caseset *set;
  assert_int_equal(sc_caseset_new(ctx, &set), 0);
  if (sc_caseset_load_file(set, csv)) fail_msg("%s", sc_errmsg(ctx));
  const sc_case *a = sc_caseset_case(set, 0), *b = sc_caseset_case(set, 1),
                *c = sc_caseset_case(set, 2);
  assert_int_equal(a->status, SC_OK);
  assert_int_equal(a->resolved.training.micro_batch, 4);
  assert_int_equal(a->resolved.parallel.vpp, 2);
  assert_int_equal(a->resolved.parallel.schedule, SC_SCHED_INTERLEAVED);
  assert_int_equal(a->resolved.parallel.overlap_grad_reduce, 0);
  assert_non_null(strstr(a->defaults, "micro_batch=4 (row config)"));
  assert_int_equal(b->resolved.training.micro_batch, 2); /* the cell wins */
  assert_int_equal(c->resolved.parallel.vpp, 1);         /* no row config */
  assert_int_equal(c->resolved.parallel.overlap_grad_reduce, 1);
  sc_caseset_free(set);
  remove(yaml);
  remove(yaml_b);
  rmdir(rows);
  remove(csv);
  rmdir(dir);
}

static void test_blank_cells_get_documented_defaults(void **state) {
  (void)state;
  sc_caseset *set;
  /* pp = 2: a blank micro-batch is 1 (smallest bubble). */
  assert_int_equal(load(&set, HEADER ROW("a", "", "", "", "")), 0);
  const sc_case *a = sc_caseset_case(set, 0);
  assert_int_equal(a->resolved.training.micro_batch, 1);
  assert_int_equal(a->resolved.model.kv_heads, 16);
  assert_int_equal(a->resolved.model.ffn_hidden, 4096);
  assert_int_equal(a->resolved.training.precision, SC_PREC_BF16);
  assert_int_equal(a->resolved.parallel.dp, 2);
  assert_non_null(strstr(a->defaults, "micro_batch=1 (not stated; pp > 1"));
  assert_non_null(strstr(a->defaults, "kv_heads=16"));
  assert_non_null(strstr(a->defaults, "precision=bf16"));
  sc_caseset_free(set);
  /* pp = 1: one micro-batch per replica when it fits (16 / dp 4 = 4). */
  const char *pp1 = "id,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,tp,pp,"
                    "measured_step_s,source\n"
                    "x,a100-80gb,8,4,1024,16,1024,32000,16,2,1,0.5,test\n";
  assert_int_equal(load(&set, pp1), 0);
  assert_int_equal(sc_caseset_case(set, 0)->resolved.training.micro_batch, 4);
  assert_non_null(strstr(sc_caseset_case(set, 0)->defaults, "one micro-batch per replica"));
  sc_caseset_free(set);
}

static void test_unknown_columns_warn(void **state) {
  (void)state;
  const char *text = "id,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,tp,pp,"
                     "measured_step_s,source,comment\n"
                     "x,a100-80gb,8,4,1024,16,1024,32000,16,2,2,0.5,test,hello\n";
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  assert_int_equal(sc_caseset_count(set), 1);
  assert_int_equal(sc_caseset_warning_count(set), 1);
  assert_string_equal(sc_caseset_warning(set, 0), "t.csv:1: unknown column \"comment\" ignored");
  sc_caseset_free(set);
}

/* Each malformed input gives SC_EINVAL and exactly this message. */
static void test_malformed(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {HEADER "\"unterminated,x\n", "t.csv:2: unterminated quoted field"},
      {HEADER ROW("a", "", "1", "", "\"x\"y"),
       "t.csv:2: unexpected character 'y' after a closing quote (a quote inside a quoted "
       "field is written \"\")"},
      {HEADER ROW("a", "", "1", "", "say \"hi\""),
       "t.csv:2: quote inside an unquoted field (quote the whole field and double the quote)"},
      {HEADER "a,b,c\n", "t.csv:2: row has 3 fields, the header has 21"},
      {HEADER ROW("a", "train", "1", "", ""),
       "t.csv:2: column split: expected calibration or validation, got \"train\""},
      {HEADER ROW("", "", "1", "", ""), "t.csv:2: column id: required value is blank"},
      {HEADER ROW("a", "", "1", "", "") ROW("a", "", "1", "", ""),
       "t.csv:3: column id: duplicate id \"a\" (first at t.csv:2)"},
      {"id,gpu\nx,a100-80gb\n", "t.csv:1: missing required column \"num_gpus\""},
      {"id,id\n", "t.csv:1: duplicate column \"id\""},
      {"", "t.csv:1: empty case file (no header row)"},
      /* the row's identity and measurement: no row to list without them */
      {"id,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,tp,pp,"
       "measured_step_s,source\nx,a100-80gb,8,4,1024,16,1024,32000,16,2,2,0.5,\n",
       "t.csv:2: column source: required value is blank"},
      {HEADER ROW("a", "", "1", "", "") "b,,a100-80gb,8,4,1024,16,1024,32000,16,1,2,2,,,,0,full,"
              "0.5,test,\n" "c,,a100-80gb,8,4,1024,16,1024,32000,16,1,2,2,,,,0,full,,test,\n",
       "t.csv:4: column measured_step_s: required value is blank"},
      {"id,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,tp,pp,"
       "measured_step_s,source,flops_convention\n"
       "x,a100-80gb,8,4,1024,16,1024,32000,16,2,2,0.5,test,peak\n",
       "t.csv:2: column flops_convention: expected model or hardware, got \"peak\""},
      {"id,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,tp,pp,"
       "measured_step_s,source\nx,a100-80gb,8,4,1024,16,1024,32000,16,2,2,-1,test\n",
       "t.csv:2: column measured_step_s: expected a positive number, got \"-1\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sc_caseset *set;
    assert_int_equal(sc_caseset_new(ctx, &set), 0);
    int rc = sc_caseset_load_string(set, "t.csv", bad[i].text, strlen(bad[i].text), NULL);
    if (rc != SC_EINVAL || strcmp(sc_errmsg(ctx), bad[i].msg))
      fail_msg("case %zu: rc %d, message \"%s\", expected \"%s\"", i, rc, sc_errmsg(ctx),
               bad[i].msg);
    assert_int_equal(sc_caseset_count(set), 0); /* nothing half-loaded */
    sc_caseset_free(set);
  }
}

static void test_unsupported_listed_not_dropped(void **state) {
  (void)state;
  /* cp 2, zero_stage 3 and MoE are configurations now: they reach the
   * library, which simulates them or says what it does not model; an
   * unknown GPU is decided while the file is read. */
  const char *text = HEADER ROW("dense", "", "1", "", "")
      "cp2,,a100-80gb,8,4,1024,16,1024,32000,16,1,2,2,2,,,0,full,0.5,test,\n"
      "moe,,a100-80gb,8,4,1024,16,1024,32000,16,1,2,2,,8,,1,full,0.5,test,\n"
      "z3,,a100-80gb,8,4,1024,16,1024,32000,16,1,2,1,,,3,0,full,0.5,test,\n"
      "tpu,,tpu-v5p,8,4,1024,16,1024,32000,16,1,2,2,,,,0,full,0.5,test,\n";
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  assert_int_equal(sc_caseset_count(set), 5);
  const sc_case *cp2 = sc_caseset_case(set, 1), *moe = sc_caseset_case(set, 2),
                *z3 = sc_caseset_case(set, 3), *tpu = sc_caseset_case(set, 4);
  assert_int_equal(cp2->status, SC_OK);
  assert_int_equal(cp2->resolved.parallel.cp, 2);
  assert_int_equal(cp2->resolved.parallel.dp, 1);
  assert_int_equal(z3->status, SC_OK);
  assert_int_equal(z3->resolved.parallel.zero_stage, 3);
  assert_int_equal(z3->resolved.parallel.distributed_optimizer, 1);
  assert_int_equal(z3->resolved.parallel.fsdp_shard, 4); /* = dp */
  assert_int_equal(moe->status, SC_OK);
  assert_int_equal(moe->resolved.model.moe_experts, 8);
  assert_int_equal(moe->resolved.model.moe_topk, 2); /* Megatron-LM's default */
  assert_int_equal(tpu->status, SC_EINVAL);
  assert_true(!strncmp(tpu->error, "t.csv:6: column gpu: unknown gpu \"tpu-v5p\"", 42));
  sc_case_result res[5];
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  assert_int_equal(res[0].status, SC_OK);
  assert_true(res[0].predicted_step_s > 0);
  for (int i = 1; i < 4; i += 2) /* cp2, z3: simulated, or not modelled by this build */
    assert_true(res[i].status == SC_OK ? res[i].predicted_step_s > 0
                                       : res[i].status == SC_EUNSUPPORTED && res[i].reason[0]);
  assert_int_equal(res[2].status, SC_OK);
  assert_true(res[2].predicted_step_s > 0);
  assert_int_equal(res[4].status, SC_EINVAL);
  assert_string_equal(res[4].reason, tpu->error);
  sc_error_stats st;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &st);
  assert_int_equal(st.n + st.unsupported + st.errors, 5);
  assert_int_equal(st.errors, 1);
  sc_test_buf s = {0};
  assert_int_equal(sc_validate_write(set, res, SC_VALIDATE_JSON, sc_test_buf_write, &s), 0);
  assert_non_null(strstr(s.p, "{\"id\":\"tpu\",\"file\":\"t.csv\",\"line\":6,\"split\":\"validation\","
                                "\"measured_step_s\":0.5,\"predicted_step_s\":null,"
                                "\"error_pct\":null,\"error\":\"t.csv:6: column gpu: unknown gpu"));
  assert_non_null(strstr(s.p, "\"error_cases\":1,\"files\":[{\"file\":\"t.csv\",\"rows\":5,"));
  free(s.p);
  sc_config cfg;
  assert_int_equal(sc_case_config(ctx, moe, NULL, &cfg), SC_OK);
  assert_int_equal(cfg.model.moe_experts, 8);
  assert_int_equal(sc_case_config(ctx, tpu, NULL, &cfg), SC_EINVAL);
  assert_string_equal(sc_errmsg(ctx), tpu->error);
  sc_caseset_free(set);
}

/* A row whose configuration cannot be built (a cell the config refuses, a
 * cross-field error, an override that breaks only it) or whose simulation
 * fails is listed with its reason; the other rows still run. */
static void test_failing_rows_listed(void **state) {
  (void)state;
  const char *text =
      "id,gpu,num_gpus,layers,hidden,heads,seq_len,vocab,global_batch,micro_batch,tp,pp,"
      "measured_step_s,source\n"
      "ok,a100-80gb,8,4,1024,16,1024,32000,16,1,2,1,0.5,test\n"
      "tp3,a100-80gb,6,4,1024,16,1024,32000,16,1,3,2,0.5,test\n"
      "twenty,a100-80gb,8,twenty,1024,16,1024,32000,16,1,2,2,0.5,test\n"
      "blank,a100-80gb,8,4,,16,1024,32000,16,1,2,2,0.5,test\n"
      "world,a100-80gb,8,4,1024,16,1024,32000,16,1,2,3,0.5,test\n"
      "huge,a100-80gb,8,4,1024,16,1024,32000,16777216,1,2,2,0.5,test\n"
      "h12,a100-80gb,8,4,768,12,1024,32000,16,1,2,1,0.5,test\n";
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  assert_int_equal(sc_caseset_count(set), 7);
  static const struct {
    int status;
    const char *error;
  } want[] = {
      {SC_OK, ""},
      {SC_EINVAL, "t.csv:3: parallel.tp=3 does not divide model.heads=16"},
      {SC_EINVAL, "t.csv:4: column layers: expected a positive integer, got \"twenty\""},
      {SC_EINVAL, "t.csv:5: column hidden: required value is blank"},
      {SC_EINVAL, "t.csv:6: world size mismatch"},
      {SC_OK, ""}, /* fails only when simulated */
      {SC_OK, ""},
  };
  for (size_t i = 0; i < 7; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    if (c->status != want[i].status || strncmp(c->error, want[i].error, strlen(want[i].error)))
      fail_msg("row %zu: status %d, error \"%s\"", i, c->status, c->error);
    assert_int_equal(c->line, (int)i + 2);
  }
  sc_case_result res[7];
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  assert_int_equal(res[0].status, SC_OK);
  assert_true(res[0].predicted_step_s > 0);
  for (size_t i = 1; i < 5; i++) {
    assert_int_equal(res[i].status, SC_EINVAL);
    assert_string_equal(res[i].reason, sc_caseset_case(set, i)->error);
    assert_true(res[i].predicted_step_s == 0);
  }
  assert_int_equal(res[5].status, SC_EUNSUPPORTED); /* the simulation size limit */
  assert_non_null(strstr(res[5].reason, "simulating this step would take"));
  assert_true(strncmp(res[5].reason, "t.csv", 5)); /* the feature, not a location */
  assert_int_equal(res[6].status, SC_OK);
  sc_error_stats st;
  sc_validate_stats(set, res, "t.csv", -1, &st);
  assert_int_equal(st.n, 2);
  assert_int_equal(st.unsupported, 1);
  assert_int_equal(st.errors, 4);
  assert_true(fabs(st.mape_pct - 0.5 * (fabs(res[0].error_pct) + fabs(res[6].error_pct))) < 1e-9);

  /* All formats list every row and the counts. */
  sc_test_buf t = {0}, j = {0}, c = {0}, m = {0};
  assert_int_equal(sc_validate_write(set, res, SC_VALIDATE_TEXT, sc_test_buf_write, &t), 0);
  assert_int_equal(sc_validate_write(set, res, SC_VALIDATE_JSON, sc_test_buf_write, &j), 0);
  assert_int_equal(sc_validate_write(set, res, SC_VALIDATE_CSV, sc_test_buf_write, &c), 0);
  assert_int_equal(sc_validate_write(set, res, SC_VALIDATE_MARKDOWN, sc_test_buf_write, &m), 0);
  assert_non_null(strstr(t.p, "7 cases in 1 file: 2 simulated, 1 unsupported, 4 errors\n"));
  assert_non_null(strstr(t.p, "  7 rows: 2 simulated, 1 unsupported, 4 errors\n"));
  assert_non_null(strstr(t.p, "   error: t.csv:3: parallel.tp=3 does not divide model.heads=16\n"));
  assert_non_null(strstr(t.p, "   unsupported: simulating this step would take"));
  assert_non_null(strstr(t.p, "over 2 simulated cases; 1 unsupported, 4 errors\n"));
  assert_non_null(strstr(t.p, "(+1 unsupported, 4 errors)\n"));
  assert_non_null(strstr(j.p, "{\"id\":\"tp3\",\"file\":\"t.csv\",\"line\":3,\"split\":\"validation\","
                                "\"measured_step_s\":0.5,\"predicted_step_s\":null,"
                                "\"error_pct\":null,\"error\":\"t.csv:3: parallel.tp=3 does not "
                                "divide model.heads=16\"}"));
  assert_non_null(strstr(j.p, "\"validation_cases\":2,\"unsupported_cases\":1,\"error_cases\":4,"
                                "\"files\":[{\"file\":\"t.csv\",\"rows\":7,\"simulated\":2,"
                                "\"unsupported\":1,\"errors\":4}]"));
  assert_non_null(strstr(j.p, "\"n\":2,\"unsupported\":1,\"errors\":4,\"mape_pct\":"));
  assert_non_null(strstr(c.p, "t.csv,tp3,validation,0.5,,,,t.csv:3: parallel.tp=3 does not divide "
                                "model.heads=16\n"));
  assert_non_null(strstr(c.p, "t.csv,huge,validation,0.5,,,simulating this step"));
  assert_non_null(strstr(m.p, "| t.csv | twenty | validation | - | 0.5 | - | error: t.csv:4: "));
  free(t.p);
  free(j.p);
  free(c.p);
  free(m.p);

  /* An override that breaks one row (12 heads over tp 8) lists it; one that
   * cannot apply to any row is the options' error. */
  const char *tp8[] = {"parallel.tp=8"};
  sc_validate_options o = {NULL, tp8, 1};
  assert_int_equal(sc_validate_run(ctx, set, &o, res), 0);
  assert_int_equal(res[0].status, SC_OK);
  assert_int_equal(res[6].status, SC_EINVAL);
  assert_non_null(strstr(res[6].reason, "t.csv:8: "));
  assert_non_null(strstr(res[6].reason, "parallel.tp=8 does not divide model.heads=12"));
  const char *bad[] = {"model.layers=0"};
  sc_validate_options ob = {NULL, bad, 1};
  assert_int_equal(sc_validate_run(ctx, set, &ob, res), SC_EINVAL);
  assert_string_equal(sc_errmsg(ctx),
                      "t.csv:2: case ok: --set: model.layers: 0 out of range [1, 4096]");
  sc_caseset_free(set);
}

/* Base columns of the one-row files below (every required one but gpu,
 * num_gpus, tp and pp, which each row gives). */
#define ONE_COLS "id,layers,hidden,heads,seq_len,vocab,global_batch,measured_step_s,source,"
#define ONE_VALS "x,8,1024,16,4096,32000,16,0.5,test,"

/* Loads a one-row file of ONE_COLS + cols; the row must load. */
static const sc_case *one_row(sc_caseset **set, const char *cols, const char *vals) {
  char text[2048];
  snprintf(text, sizeof text, ONE_COLS "%s\n" ONE_VALS "%s\n", cols, vals);
  int rc = load(set, text);
  if (rc) fail_msg("%s: %s", cols, sc_errmsg(ctx));
  assert_int_equal(sc_caseset_count(*set), 1);
  assert_int_equal(sc_caseset_warning_count(*set), 0); /* every column is known */
  return sc_caseset_case(*set, 0);
}

static const sc_case *one_ok(sc_caseset **set, const char *cols, const char *vals) {
  const sc_case *c = one_row(set, cols, vals);
  if (c->status) fail_msg("%s = %s: status %d: %s%s", cols, vals, c->status, c->error,
                          c->unsupported);
  return c;
}

/* Every new column reaches its config field. */
static void test_new_columns_map(void **state) {
  (void)state;
  sc_caseset *set;
  const sc_case *c = one_ok(&set,
      "gpu,num_gpus,gpus_per_node,nic_gbps,network,tp,pp,dp,micro_batch,zero_stage,fsdp_shard,"
      "precision,activation,head_dim,attention,nvlink_gbps,overlap_grad_reduce,"
      "overlap_param_gather,etp,ep,moe_experts,mla_q_lora_rank",
      "h100-96gb-500w,8,8,400,roce,1,1,8,1,3,4,fp8,relu2,128,unfused,300,0,1,1,1,,0");
  const sc_config *r = &c->resolved;
  assert_string_equal(r->cluster.gpu, "h100-96gb-500w");
  assert_int_equal(r->parallel.zero_stage, 3);
  assert_int_equal(r->parallel.fsdp_shard, 4);
  assert_int_equal(r->parallel.distributed_optimizer, 1);
  assert_int_equal(r->training.precision, SC_PREC_FP8);
  assert_int_equal(r->model.activation, SC_ACT_RELU2);
  assert_int_equal(r->model.head_dim, 128);
  assert_int_equal(r->training.attention, SC_ATTN_UNFUSED);
  assert_true(r->cluster.nvlink_gbps == 300);
  assert_true(r->cluster.nic_gbps == 400);
  assert_int_equal(r->parallel.overlap_grad_reduce, 0);
  assert_int_equal(r->parallel.overlap_param_gather, 1);
  sc_caseset_free(set);

  /* Uneven stages given, zero-bubble schedule. */
  c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,schedule,pp_first_layers,pp_last_layers",
             "a100-80gb,8,1,4,1,zb-h1,1,1");
  assert_int_equal(c->resolved.parallel.schedule, SC_SCHED_ZB_H1);
  assert_int_equal(c->resolved.parallel.pp_first_layers, 1);
  assert_int_equal(c->resolved.parallel.pp_last_layers, 1);
  assert_int_equal(c->resolved.parallel.dp, 2);
  sc_caseset_free(set);
  /* Embedding and loss counted as layers: 8 + 2 units over 2 stages. */
  c = one_ok(&set,
             "gpu,num_gpus,tp,pp,micro_batch,vpp,schedule,pp_embedding_in_split,pp_loss_in_split",
             "a100-80gb,8,1,2,1,1,1f1b,1,1");
  assert_int_equal(c->resolved.parallel.pp_embedding_in_split, 1);
  assert_int_equal(c->resolved.parallel.pp_loss_in_split, 1);
  assert_int_equal(c->resolved.parallel.schedule, SC_SCHED_1F1B);
  sc_caseset_free(set);
  c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,vpp,schedule", "a100-80gb,8,1,2,1,2,zbv");
  assert_int_equal(c->resolved.parallel.schedule, SC_SCHED_ZBV);
  assert_int_equal(c->resolved.parallel.vpp, 2);
  sc_caseset_free(set);
  /* Context parallelism with Ulysses all-to-all, TP with its overlap. */
  c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,cp,cp_comm,sequence_parallel,tp_comm_overlap",
             "h100-sxm,8,2,1,1,2,a2a,1,1");
  assert_int_equal(c->resolved.parallel.cp, 2);
  assert_int_equal(c->resolved.parallel.dp, 2);
  assert_int_equal(c->resolved.parallel.cp_comm, SC_CP_A2A);
  assert_int_equal(c->resolved.parallel.tp_comm_overlap, 1);
  assert_string_equal(c->defaults, "gpus_per_node=8 (gpu preset); nic_gbps=400 (gpu preset); "
                                   "kv_heads=16 (= heads, no GQA); ffn_hidden=4096 (4h for gelu); "
                                   "activation=gelu (schema default); dp=2 (num_gpus / (tp pp "
                                   "cp)); vpp=1 (not stated; schema default); recompute=none "
                                   "(schema default); precision=bf16 (schema default); "
                                   "zero_stage=0 (schema default); distributed_optimizer=false "
                                   "(schema default); head_dim=64 (= hidden / heads); "
                                   "attention=flash (schema default); overlap_grad_reduce=true "
                                   "(not stated; on, as the published recipes run); "
                                   "nvlink_gbps=450 (gpu preset)");
  sc_caseset_free(set);
}

/* A blank attention cell is the fused kernel the row's framework runs:
 * Megatron-LM / NeMo (Transformer Engine) on Hopper: cudnn, listed with its
 * reason; other frameworks, older GPUs and a given cell: as stated. */
static void test_framework_attention(void **state) {
  (void)state;
  static const struct {
    const char *vals;
    sc_attention want;
  } rows[] = {{"h100-sxm,8,1,1,1,megatron,", SC_ATTN_CUDNN},
              {"h800,8,1,1,1,nemo,", SC_ATTN_CUDNN},
              {"a100-80gb,8,1,1,1,megatron,", SC_ATTN_FLASH},
              {"h100-96gb-500w,8,1,1,1,torchtitan,", SC_ATTN_FLASH},
              {"h100-sxm,8,1,1,1,llm-foundry,", SC_ATTN_FLASH},
              {"h100-sxm,8,1,1,1,megatron,flash", SC_ATTN_FLASH},
              {"h100-sxm,8,1,1,1,megatron,unfused", SC_ATTN_UNFUSED},
              {"a100-80gb,8,1,1,1,megatron,cudnn", SC_ATTN_CUDNN}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sc_caseset *set;
    const sc_case *c =
        one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,framework,attention", rows[i].vals);
    assert_int_equal(c->resolved.training.attention, rows[i].want);
    int noted = strstr(c->defaults, "attention=cudnn (Transformer Engine on ") != NULL;
    assert_int_equal(noted, i < 2);
    sc_caseset_free(set);
  }
}

/* Grouping by GPU and by parallelism mix: the labels, and per-group
 * statistics that add up to the whole. */
static void test_group_by(void **state) {
  (void)state;
  static const struct {
    const char *vals, *mix;
  } rows[] = {{"a100-80gb,8,2,2,1,0,1,1,0", "DP+TP+PP"}, {"h100-sxm,8,1,1,1,3,1,1,0", "FSDP"},
              {"h100-sxm,8,2,1,1,3,1,1,2", "HSDP+TP"},  {"h100-sxm,8,1,1,1,0,8,1,0", "CP"},
              {"a100-80gb,1,1,1,1,0,1,1,0", "1 GPU"}};
  char text[4096];
  int k = snprintf(text, sizeof text, ONE_COLS "gpu,num_gpus,tp,pp,micro_batch,zero_stage,cp,ep,"
                                      "fsdp_shard\n");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    k += snprintf(text + k, sizeof text - (size_t)k, "x%zu,8,1024,16,4096,32000,16,0.5,test,%s\n",
                  i, rows[i].vals);
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  size_t n = sc_caseset_count(set);
  assert_int_equal(n, 5);
  for (size_t i = 0; i < n; i++) {
    char mix[SC_CASE_MIX_MAX];
    sc_case_mix(sc_caseset_case(set, i), mix, sizeof mix);
    assert_string_equal(mix, rows[i].mix);
  }
  sc_case_result res[5];
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  sc_error_stats all, a100, h100, fsdp;
  sc_validate_stats(set, res, NULL, -1, &all);
  sc_validate_stats_by(set, res, SC_VALIDATE_BY_GPU, "a100-80gb", -1, &a100);
  sc_validate_stats_by(set, res, SC_VALIDATE_BY_GPU, "h100-sxm", -1, &h100);
  sc_validate_stats_by(set, res, SC_VALIDATE_BY_MIX, "FSDP", -1, &fsdp);
  assert_int_equal(all.n + all.unsupported + all.errors, 5);
  assert_int_equal(a100.n + a100.unsupported + a100.errors, 2);
  assert_int_equal(h100.n + h100.unsupported + h100.errors, 3);
  assert_int_equal(fsdp.n + fsdp.unsupported + fsdp.errors, 1);
  assert_true(fabs(a100.mape_pct * (double)a100.n + h100.mape_pct * (double)h100.n -
                   all.mape_pct * (double)all.n) < 1e-9 * all.mape_pct * (double)all.n + 1e-12);
  sc_test_buf b = {0};
  assert_int_equal(
      sc_validate_write_by(set, res, SC_VALIDATE_TEXT, SC_VALIDATE_BY_MIX, sc_test_buf_write, &b),
      0);
  assert_non_null(strstr(b.p, "  parallelism "));
  assert_non_null(strstr(b.p, "  HSDP+TP "));
  assert_non_null(strstr(b.p, "  all cases "));
  free(b.p);
  assert_int_equal(sc_validate_write_by(set, res, SC_VALIDATE_TEXT, (sc_validate_group)7,
                                        sc_test_buf_write, &b),
                   SC_EINVAL);
  sc_caseset_free(set);
}

/* Blank new columns: documented defaults, listed where they matter. */
static void test_blank_new_columns_defaults(void **state) {
  (void)state;
  sc_caseset *set;
  const sc_case *c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch", "a100-80gb,8,2,2,1");
  const sc_config *r = &c->resolved;
  assert_int_equal(r->parallel.schedule, SC_SCHED_1F1B);
  assert_int_equal(r->parallel.pp_first_layers, 0); /* even */
  assert_int_equal(r->parallel.cp, 1);
  assert_int_equal(r->parallel.cp_comm, SC_CP_P2P);
  assert_int_equal(r->parallel.zero_stage, 0);
  assert_int_equal(r->parallel.fsdp_shard, 0);
  assert_int_equal(r->training.attention, SC_ATTN_FLASH);
  assert_int_equal(r->parallel.tp_comm_overlap, 0);
  assert_int_equal(r->model.activation, SC_ACT_GELU);
  assert_int_equal(r->training.precision, SC_PREC_BF16);
  assert_true(r->cluster.nvlink_gbps == sc_hw_find("a100-80gb")->nvlink_gbps);
  static const char *const listed[] = {
      "schedule=1f1b (not stated; interleaved when vpp > 1, else 1f1b)",
      "pp_first_layers=0 (even, or derived when pp does not divide the layers)",
      "pp_embedding_in_split=false (schema default)", "cp=1 (schema default)",
      "attention=flash (schema default)", "head_dim=64 (= hidden / heads)",
      "zero_stage=0 (schema default)", "nvlink_gbps="};
  for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++)
    if (!strstr(c->defaults, listed[i])) fail_msg("\"%s\" not in \"%s\"", listed[i], c->defaults);
  assert_null(strstr(c->defaults, "cp_comm")); /* cp = 1 */
  assert_null(strstr(c->defaults, "fsdp_shard")); /* no ZeRO-3 */
  assert_null(strstr(c->defaults, "tp_comm_overlap")); /* no sequence parallelism */
  sc_caseset_free(set);

  /* ZeRO-3 without a shard size: full sharding, listed; cp 2: p2p. */
  c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,zero_stage,cp", "a100-80gb,8,2,1,1,3,2");
  assert_int_equal(c->resolved.parallel.fsdp_shard, 2);
  assert_non_null(strstr(c->defaults, "fsdp_shard=2 (= dp, full sharding)"));
  assert_non_null(strstr(c->defaults, "cp_comm=p2p (schema default)"));
  assert_null(strstr(c->defaults, "schedule=")); /* pp = 1 */
  assert_null(strstr(c->defaults, "zero_stage"));
  sc_caseset_free(set);

  /* pp = 3 does not divide 8 layers: the derived uneven split. */
  c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch", "a100-80gb,6,1,3,1");
  int64_t F = c->resolved.parallel.pp_first_layers, Z = c->resolved.parallel.pp_last_layers;
  assert_true(F > 0 && Z > 0 && F + Z < 8);
  char want[64];
  snprintf(want, sizeof want, "pp_first_layers=%lld (even, or derived", (long long)F);
  assert_non_null(strstr(c->defaults, want));
  sc_caseset_free(set);
}

/* Each column's bad values: the row is listed with a file:line message
 * naming the column (or the cross-field rule), never half-loaded. */
static void test_column_ranges(void **state) {
  (void)state;
  static const struct {
    const char *cols, *vals, *msg;
  } bad[] = {
      {"fsdp_shard", "-1", "column fsdp_shard: "},
      {"schedule", "zero-bubble", "column schedule: unknown value \"zero-bubble\""},
      {"pp_first_layers", "5000", "column pp_first_layers: 5000 out of range"},
      {"pp_last_layers", "x", "column pp_last_layers: "},
      {"pp_embedding_in_split", "2", "column pp_embedding_in_split: "},
      {"pp_loss_in_split", "maybe", "column pp_loss_in_split: "},
      {"cp_comm", "ring", "column cp_comm: unknown value \"ring\""},
      {"cp", "0", "column cp: 0 out of range"},
      {"head_dim", "5000", "column head_dim: 5000 out of range"},
      {"attention", "paged", "column attention: unknown value \"paged\""},
      {"tp_comm_overlap", "sometimes", "column tp_comm_overlap: "},
      {"overlap_grad_reduce", "2", "column overlap_grad_reduce: "},
      {"overlap_param_gather", "x", "column overlap_param_gather: "},
      {"nvlink_gbps", "-5", "column nvlink_gbps: "},
      {"network", "wifi", "column network: expected ib, roce, opa or ethernet, got \"wifi\""},
      {"activation", "relu3", "column activation: unknown value \"relu3\""},
      {"precision", "fp4", "column precision: unknown value \"fp4\""},
      {"zero_stage", "4", "column zero_stage: 4 out of range"},
      {"etp", "0", "column etp: 0 out of range [1, 1024]"},
      {"etp", "2", "column etp: expert tensor parallelism needs moe_experts"},
      {"ep", "0", "column ep: 0 out of range [1, 16777216]"},
      {"ep", "2", "column ep: expert parallelism needs moe_experts"},
      {"moe_experts", "abc", "column moe_experts: expected a non-negative integer, got \"abc\""},
      {"moe_topk", "2", "column moe_topk: needs moe_experts (the row describes a dense model)"},
      {"moe_ffn_hidden", "0", "column moe_ffn_hidden: 0 out of range [1, 1048576]"},
      {"moe_shared_experts", "1", "column moe_shared_experts: needs moe_experts"},
      {"moe_dense_layers", "1", "column moe_dense_layers: needs moe_experts"},
      {"moe_experts,moe_topk", "8,9", "column moe_topk: 9 exceeds moe_experts=8"},
      {"moe_experts,ep", "8,3", "column ep: 3 does not divide moe_experts=8"},
      {"moe_experts,moe_dense_layers", "8,9", "column moe_dense_layers: 9 exceeds layers=8"},
      {"mla_kv_lora_rank", "0", "column mla_kv_lora_rank: 0 out of range [1, 65536]"},
      {"mla_q_lora_rank", "64", "column mla_q_lora_rank: needs mla_kv_lora_rank"},
      {"mla_rope_dim", "0", "column mla_rope_dim: 0 out of range [1, 4096]"},
      {"mla_v_head_dim", "128", "column mla_v_head_dim: needs mla_kv_lora_rank"},
      /* cross-field rules of the config, at the row's line */
      {"zero_stage,fsdp_shard", "0,2", "fsdp_shard=2 needs parallel.zero_stage=3"},
      {"zero_stage,fsdp_shard", "3,3", "fsdp_shard=3 does not divide parallel.dp=2"},
      {"cp", "3", "world size mismatch: cluster.num_gpus=8 is not divisible by parallel.tp*pp*cp"},
      {"pp_first_layers,pp_last_layers", "5,5", "pp_first_layers + pp_last_layers = 5 + 5"},
      {"schedule,vpp", "zb-h1,2", "schedule=zb-h1 runs one model chunk per stage"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char cols[256], vals[256];
    snprintf(cols, sizeof cols, "gpu,num_gpus,tp,pp,micro_batch,%s", bad[i].cols);
    snprintf(vals, sizeof vals, "a100-80gb,8,2,2,1,%s", bad[i].vals);
    sc_caseset *set;
    const sc_case *c = one_row(&set, cols, vals);
    if (c->status != SC_EINVAL || strncmp(c->error, "t.csv:2: ", 9) ||
        !strstr(c->error, bad[i].msg))
      fail_msg("%s = %s: status %d, error \"%s\", expected \"%s\"", bad[i].cols, bad[i].vals,
               c->status, c->error, bad[i].msg);
    sc_caseset_free(set);
  }
  /* q rank 0 alone means "no Q compression": a dense row. */
  sc_caseset *set;
  one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,mla_q_lora_rank,moe_experts,ep,etp",
         "a100-80gb,8,2,2,1,0,0,1,1");
  sc_caseset_free(set);
}

/* MoE and MLA rows map their columns onto the config fields and simulate. */
static void test_moe_mla_rows_unsupported(void **state) {
  (void)state;
  static const struct {
    const char *cols, *vals;
    int mla;
  } moe[] = {
      {"moe_experts,moe_topk,moe_ffn_hidden,ep,etp", "8,2,512,2,1", 0},
      {"moe_experts,moe_topk,moe_shared_experts,moe_dense_layers", "16,4,1,1", 0},
      {"moe_experts,moe_topk", "1,1", 0},
      {"mla_kv_lora_rank,mla_q_lora_rank,mla_rope_dim,mla_v_head_dim", "512,1536,64,128", 1},
      {"moe_experts,cp,zero_stage", "8,2,3", 0},
  };
  for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
    char cols[256], vals[256];
    snprintf(cols, sizeof cols, "gpu,num_gpus,tp,pp,micro_batch,sequence_parallel,%s",
             moe[i].cols);
    snprintf(vals, sizeof vals, "h100-sxm,8,2,2,1,1,%s", moe[i].vals);
    sc_caseset *set;
    const sc_case *c = one_row(&set, cols, vals);
    sc_case_result r;
    assert_int_equal(sc_validate_run(ctx, set, NULL, &r), 0);
    if (c->status) fail_msg("%s: %s", moe[i].cols, c->error);
    if (moe[i].mla)
      assert_int_equal(c->resolved.model.mla_kv_lora_rank, 512);
    else
      assert_true(c->resolved.model.moe_experts > 0);
    assert_int_equal(r.status, SC_OK);
    assert_true(r.predicted_step_s > 0);
    sc_caseset_free(set);
  }
  /* ep and etp reach their fields (etp blank: the schema's 1). */
  sc_caseset *set;
  const sc_case *c = one_ok(&set, "gpu,num_gpus,tp,pp,micro_batch,sequence_parallel,moe_experts,ep",
                            "h100-sxm,8,2,2,1,1,8,2");
  assert_int_equal(c->resolved.parallel.ep, 2);
  assert_int_equal(c->resolved.parallel.etp, 1);
  sc_caseset_free(set);
}

static void test_stats_and_formats(void **state) {
  (void)state;
  const char *text = HEADER ROW("a", "calibration", "1", "", "") ROW("b", "", "1", "", "")
      ROW("c", "", "2", "", "") ROW("d", "", "4", "", "");
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  sc_case_result res[4];
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  /* Replace the predictions to check the arithmetic. */
  const double err[4] = {50, -10, 20, 30};
  for (int i = 0; i < 4; i++) res[i].error_pct = err[i];
  sc_error_stats st;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &st);
  assert_int_equal(st.n, 3);
  assert_true(fabs(st.mape_pct - 20.0) < 1e-12);
  assert_true(fabs(st.median_abs_pct - 20.0) < 1e-12);
  assert_true(fabs(st.max_abs_pct - 30.0) < 1e-12);
  assert_true(fabs(st.bias_pct - 40.0 / 3.0) < 1e-12);
  assert_int_equal(st.worst, 3);
  sc_validate_stats(set, res, "t.csv", -1, &st);
  assert_int_equal(st.n, 4);
  assert_true(fabs(st.median_abs_pct - 25.0) < 1e-12); /* mean of the middle two */
  sc_validate_stats(set, res, "other.csv", -1, &st);
  assert_int_equal(st.n, 0);

  static const sc_validate_format fmts[] = {SC_VALIDATE_TEXT, SC_VALIDATE_JSON, SC_VALIDATE_CSV,
                                            SC_VALIDATE_MARKDOWN};
  for (size_t f = 0; f < 4; f++) {
    sc_test_buf s = {0};
    assert_int_equal(sc_validate_write(set, res, fmts[f], sc_test_buf_write, &s), 0);
    assert_non_null(strstr(s.p, "d"));
    if (fmts[f] == SC_VALIDATE_JSON) {
      assert_non_null(strstr(s.p, "\"mape_pct\":20,"));
      assert_non_null(strstr(s.p, "\"max_abs_error_pct\":30,"));
    }
    if (fmts[f] == SC_VALIDATE_CSV) {
      assert_true(!strncmp(s.p, "file,id,split,measured_step_s,predicted_step_s,error_pct,"
                                  "unsupported,error\n", 73));
    }
    if (fmts[f] == SC_VALIDATE_TEXT)
      assert_non_null(strstr(s.p, "validation rows: MAPE 20.0 %, median 20.0 %, worst 30.0 %"));
    free(s.p);
  }
  sc_caseset_free(set);
}

/* The 90 % prediction interval: the conformal rank on hand-set errors, the
 * held-out predictions replacing the fit's own, the coverage count, the
 * result's interval, the held-out file being current, and the shipped
 * widths being the fit over the shipped case files' calibration rows. */
static void test_prediction_interval(void **state) {
  (void)state;
  const char *text = HEADER ROW("a", "calibration", "1", "", "") ROW("b", "calibration", "1", "", "")
      ROW("c", "calibration", "1", "", "") ROW("d", "calibration", "1", "", "")
      ROW("e", "calibration", "1", "", "") ROW("f", "calibration", "1", "", "")
      ROW("g", "calibration", "1", "", "") ROW("h", "calibration", "1", "", "")
      ROW("i", "calibration", "1", "", "") ROW("j", "calibration", "1", "", "")
      ROW("k", "", "4", "", "");
  sc_caseset *set;
  assert_int_equal(load(&set, text), 0);
  sc_case_result res[11];
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  /* a simulated result carries [t e^-w, t e^w] with the shipped dense w */
  const sc_result *r = &res[0].result;
  assert_true(fabs(r->step_time_hi_s / r->step_time_s - exp(SC_INTERVAL_DENSE_DEFAULT)) < 1e-12);
  assert_true(fabs(r->step_time_lo_s * r->step_time_hi_s / (r->step_time_s * r->step_time_s) - 1) <
              1e-12);
  /* errors log(measured / predicted) of +-0.01 .. +-0.10 (measured is 0.5 s):
   * n = 10, rank ceil(11 * 0.9) = 10, the largest |e| */
  for (int i = 0; i < 10; i++)
    res[i].predicted_step_s = 0.5 * exp((i % 2 ? 1 : -1) * 0.01 * (i + 1));
  sc_interval_fit fit;
  assert_int_equal(sc_validate_fit_interval(set, res, NULL, &fit), 0);
  assert_int_equal(fit.dense_n, 10);
  assert_int_equal(fit.moe_n, 0);
  assert_int_equal(fit.held_out, 0);
  assert_true(fit.moe == 0);
  assert_true(fabs(fit.dense - 0.10) < 1e-12);
  /* a held-out prediction replaces the row's own: e_j = 0.3 becomes the
   * largest, and e_a = 0.001 pushes 0.01 out of the ranks below */
  double held[11] = {0};
  held[0] = 0.5 * exp(-0.001);
  held[9] = 0.5 * exp(-0.3);
  assert_int_equal(sc_validate_fit_interval(set, res, held, &fit), 0);
  assert_int_equal(fit.held_out, 2);
  assert_true(fabs(fit.dense - 0.3) < 1e-12);
  /* fewer than 9 rows: no 90 % rank */
  res[0].status = res[1].status = SC_EUNSUPPORTED;
  assert_int_equal(sc_validate_fit_interval(set, res, NULL, &fit), 0);
  assert_int_equal(fit.dense_n, 8);
  assert_true(fit.dense == 0);
  res[0].status = res[1].status = SC_OK;
  /* coverage: the validation row's measurement (0.5 s) inside, then outside */
  res[10].result.step_time_lo_s = 0.4;
  res[10].result.step_time_hi_s = 0.6;
  sc_error_stats st;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &st);
  assert_int_equal(st.in_interval, 1);
  assert_true(st.coverage_pct == 100);
  res[10].result.step_time_hi_s = 0.45;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &st);
  assert_int_equal(st.in_interval, 0);
  /* the held-out file: rows by id and file name, others left at 0 */
  char tmp[64];
  snprintf(tmp, sizeof tmp, "/tmp/sc_test_loo_XXXXXX");
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fputs("id,file,predicted_s,loo_predicted_s\nb,t.csv,0.5,0.25\nb,other.csv,1,1\nz,t.csv,1,1\n", f);
  fclose(f);
  double pred[11];
  assert_int_equal(sc_validate_load_held_out(set, tmp, pred, held), 0);
  for (int i = 0; i < 11; i++) {
    assert_true(held[i] == (i == 1 ? 0.25 : 0));
    assert_true(pred[i] == (i == 1 ? 0.5 : 0));
  }
  f = fopen(tmp, "w");
  assert_non_null(f);
  fputs("id,file,predicted_s,loo_predicted_s\nb,t.csv,0.5,-1\n", f);
  fclose(f);
  assert_int_equal(sc_validate_load_held_out(set, tmp, NULL, held), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), ":2: loo_predicted_s: expected a positive number"));
  remove(tmp);
  sc_caseset_free(set);

  static const char *const files[] = {
      "validation/cases/korthikanti2022.csv",     "validation/cases/llm_foundry_mpt.csv",
      "validation/cases/megatron_core_h100.csv",  "validation/cases/megatron_moe_h100.csv",
      "validation/cases/megatron_sc21_table1.csv", "validation/cases/torchtitan_h100.csv"};
  assert_int_equal(sc_caseset_new(ctx, &set), 0);
  char path[1024];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    if (sc_caseset_load_file(set, src_path(path, sizeof path, files[i])))
      fail_msg("%s", sc_errmsg(ctx));
  size_t n = sc_caseset_count(set);
  sc_case_result *all = calloc(n, sizeof *all);
  double *loo = calloc(n, sizeof *loo), *made = calloc(n, sizeof *made);
  assert_non_null(all);
  assert_non_null(loo);
  assert_non_null(made);
  assert_int_equal(sc_validate_run(ctx, set, NULL, all), 0);
  if (sc_validate_load_held_out(set, src_path(path, sizeof path, "validation/calibration/loo.csv"),
                                made, loo))
    fail_msg("%s", sc_errmsg(ctx));
  /* Every calibration row is held out, with the model as it is now. */
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    if (c->split != SC_SPLIT_CALIBRATION) continue;
    if (!loo[i]) fail_msg("%s: not in validation/calibration/loo.csv", c->id);
    if (fabs(made[i] / all[i].predicted_step_s - 1) > 1e-6)
      fail_msg("%s: validation/calibration/loo.csv was made with prediction %.9g s, now %.9g s; "
               "rerun tools/interval_loo.sh",
               c->id, made[i], all[i].predicted_step_s);
  }
  assert_int_equal(sc_validate_fit_interval(set, all, loo, &fit), 0);
  print_message("  interval fit: dense %.4g (%zu rows), moe %.4g (%zu rows), %zu held out\n",
                fit.dense, fit.dense_n, fit.moe, fit.moe_n, fit.held_out);
  if (fabs(fit.dense - SC_INTERVAL_DENSE_DEFAULT) > 1e-4 ||
      fabs(fit.moe - SC_INTERVAL_MOE_DEFAULT) > 1e-4)
    fail_msg("the shipped interval widths (src/cost/cost_int.h) are not the fit: dense %.4g, "
             "moe %.4g; rerun `stepcast validate validation/cases/*.csv --held-out "
             "validation/calibration/loo.csv --fit-interval FILE`",
             fit.dense, fit.moe);
  free(made);
  free(loo);
  free(all);
  sc_caseset_free(set);
}

static void test_overrides_apply(void **state) {
  (void)state;
  sc_caseset *set;
  assert_int_equal(load(&set, HEADER ROW("a", "", "1", "", "")), 0);
  sc_case_result base, slow;
  assert_int_equal(sc_validate_run(ctx, set, NULL, &base), 0);
  sc_cost_params cal;
  memset(&cal, 0, sizeof cal);
  cal.gemm_eff = 0.2; /* a much slower GPU */
  sc_validate_options opt = {&cal, NULL, 0};
  assert_int_equal(sc_validate_run(ctx, set, &opt, &slow), 0);
  assert_true(slow.predicted_step_s > 1.5 * base.predicted_step_s);
  const char *sets[] = {"parallel.vpp=2"};
  sc_validate_options o2 = {NULL, sets, 1};
  sc_config cfg;
  assert_int_equal(sc_case_config(ctx, sc_caseset_case(set, 0), &o2, &cfg), 0);
  assert_int_equal(cfg.parallel.vpp, 2);
  const char *bad[] = {"parallel.nope=1"};
  sc_validate_options o3 = {NULL, bad, 1};
  assert_int_equal(sc_validate_run(ctx, set, &o3, &slow), SC_EINVAL);
  sc_caseset_free(set);
}

/* Every shipped case file loads; the run is deterministic; the validation
 * rows stay under the accuracy guard with the default calibration. */
static void test_shipped_cases_accuracy(void **state) {
  (void)state;
  static const char *const files[] = {"validation/cases/megatron_sc21_table1.csv",
                                      "validation/cases/korthikanti2022.csv",
                                      "validation/cases/megatron_core_h100.csv"};
  sc_caseset *set;
  assert_int_equal(sc_caseset_new(ctx, &set), 0);
  char path[1024];
  for (size_t i = 0; i < 3; i++) {
    int rc = sc_caseset_load_file(set, src_path(path, sizeof path, files[i]));
    if (rc) fail_msg("%s", sc_errmsg(ctx));
  }
  assert_int_equal(sc_caseset_warning_count(set), 0);
  size_t n = sc_caseset_count(set);
  assert_int_equal(n, 27);
  sc_case_result *res = calloc(n, sizeof *res);
  assert_non_null(res);
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  /* Deterministic: the H100 file alone predicts bit-identical step times. */
  sc_caseset *h;
  sc_case_result again[9];
  assert_int_equal(sc_caseset_new(ctx, &h), 0);
  assert_int_equal(sc_caseset_load_file(h, src_path(path, sizeof path, files[2])), 0);
  assert_int_equal(sc_caseset_count(h), 9);
  assert_int_equal(sc_validate_run(ctx, h, NULL, again), 0);
  for (size_t i = 0; i < 9; i++)
    assert_true(again[i].predicted_step_s == res[n - 9 + i].predicted_step_s);
  sc_caseset_free(h);

  sc_error_stats all;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &all);
  print_message("validation rows: MAPE %.2f %%, worst %.2f %% (%s)\n", all.mape_pct,
                all.max_abs_pct, sc_caseset_case(set, all.worst)->id);
  assert_int_equal(all.n, 18);
  assert_true(all.mape_pct < MAX_MAPE_ALL_PCT);
  assert_true(all.max_abs_pct < MAX_WORST_PCT);
  for (size_t f = 0; f < sc_caseset_file_count(set); f++) {
    sc_error_stats st;
    sc_validate_stats(set, res, sc_caseset_file(set, f), SC_SPLIT_VALIDATION, &st);
    print_message("  %s: MAPE %.2f %%\n", sc_caseset_file(set, f), st.mape_pct);
    assert_true(st.mape_pct < guard_for(sc_caseset_file(set, f)));
  }
  free(res);
  sc_caseset_free(set);
}

/* The case files of issue 14 load with every column known; their rows are
 * simulated or listed with a reason, never dropped; each file's validation
 * rows stay under its guard, and all six files under theirs. */
static void test_shipped_new_files(void **state) {
  (void)state;
  static const struct {
    const char *file;
    size_t rows;
  } files[] = {{"validation/cases/torchtitan_h100.csv", 33},
               {"validation/cases/llm_foundry_mpt.csv", 39},
               {"validation/cases/megatron_moe_h100.csv", 18}};
  sc_caseset *set;
  assert_int_equal(sc_caseset_new(ctx, &set), 0);
  char path[1024];
  for (size_t i = 0; i < 3; i++)
    if (sc_caseset_load_file(set, src_path(path, sizeof path, files[i].file)))
      fail_msg("%s", sc_errmsg(ctx));
  for (size_t i = 0; i < sc_caseset_warning_count(set); i++)
    print_message("%s\n", sc_caseset_warning(set, i));
  assert_int_equal(sc_caseset_warning_count(set), 0);
  size_t n = sc_caseset_count(set);
  assert_int_equal(n, 33 + 39 + 18);
  sc_case_result *res = calloc(n, sizeof *res);
  assert_non_null(res);
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    if (res[i].status == SC_OK) assert_true(res[i].predicted_step_s > 0);
    else assert_true(res[i].reason[0] != 0);
    /* Every MoE row simulates, FSDP over expert parallelism included. */
    if (strstr(c->file, "megatron_moe_h100")) assert_int_equal(res[i].status, SC_OK);
  }
  for (size_t f = 0; f < 3; f++) {
    sc_error_stats st;
    sc_validate_stats(set, res, sc_caseset_file(set, f), -1, &st);
    assert_int_equal(st.n + st.unsupported + st.errors, files[f].rows);
    print_message("  %s: %zu simulated (MAPE %.1f %%), %zu unsupported, %zu errors\n",
                  files[f].file, st.n, st.mape_pct, st.unsupported, st.errors);
    sc_validate_stats(set, res, sc_caseset_file(set, f), SC_SPLIT_VALIDATION, &st);
    if (st.mape_pct >= guard_for(files[f].file))
      fail_msg("%s: validation MAPE %.2f %% over its guard %.1f %%", files[f].file, st.mape_pct,
               guard_for(files[f].file));
  }
  free(res);
  /* All six files together. */
  static const char *const three[] = {"validation/cases/megatron_sc21_table1.csv",
                                      "validation/cases/korthikanti2022.csv",
                                      "validation/cases/megatron_core_h100.csv"};
  for (size_t i = 0; i < 3; i++)
    if (sc_caseset_load_file(set, src_path(path, sizeof path, three[i])))
      fail_msg("%s", sc_errmsg(ctx));
  n = sc_caseset_count(set);
  res = calloc(n, sizeof *res);
  assert_non_null(res);
  assert_int_equal(sc_validate_run(ctx, set, NULL, res), 0);
  sc_error_stats six;
  sc_validate_stats(set, res, NULL, SC_SPLIT_VALIDATION, &six);
  print_message("  six files: MAPE %.2f %% over %zu validation rows\n", six.mape_pct, six.n);
  assert_true(six.mape_pct < MAX_MAPE_SIX_FILES_PCT);
  /* The 90 % interval (held-out conformal widths) covers 94 % of them. */
  print_message("  six files: %zu of %zu inside the 90 %% interval\n", six.in_interval, six.n);
  assert_true(six.coverage_pct >= MIN_COVERAGE_SIX_FILES_PCT);
  free(res);
  sc_caseset_free(set);
}

/* The compute defaults in cost.c are the shipped fit, value for value, and
 * the kernel-*.yaml records are the fit's starting point. */
static void test_default_calibration_matches_files(void **state) {
  (void)state;
  static const struct {
    const char *file, *gpu;
    int priors;
  } fits[] = {{"validation/calibration/a100.yaml", "a100-80gb", 0},
              {"validation/calibration/h100.yaml", "h100-sxm", 0},
              {"validation/calibration/kernel-a100.yaml", "a100-80gb", 1},
              {"validation/calibration/kernel-h100.yaml", "h100-sxm", 1},
              {"validation/calibration/kernel-h200.yaml", "h200", 1}};
  for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
    char path[1024], assign[1100];
    sc_config cfg;
    sc_test_example(&cfg);
    snprintf(assign, sizeof assign, "calibration=%s", src_path(path, sizeof path, fits[i].file));
    if (sc_config_set(ctx, &cfg, assign)) fail_msg("%s", sc_errmsg(ctx));
    sc_cost_params def;
    sc__cost_defaults(sc_hw_find(fits[i].gpu), &def);
    if (fits[i].priors) sc__cost_compute_priors(sc_hw_find(fits[i].gpu), &def);
    const double *f = (const double *)&cfg.costs, *d = (const double *)&def;
    int fitted = 0;
    for (size_t k = 0; k < sizeof def / sizeof(double); k++) {
      if (f[k] == 0) continue;
      fitted++;
      if (fabs(f[k] - d[k]) > 1e-6 * fabs(d[k])) fail_msg("%s field %zu: file %.9g, cost.c %.9g",
                                                         fits[i].file, k, f[k], d[k]);
    }
    assert_true(fitted >= 4);
  }
}

/* Calibration fits on calibration rows only, stays in bounds, and writes a
 * YAML that loads back as a calibration file. */
static void test_calibration(void **state) {
  (void)state;
  /* The validation row claims an absurd step time: it must not matter. */
  const char *with_outlier = HEADER ROW("a", "calibration", "1", "", "")
      ROW("b", "calibration", "2", "", "")
      "v,validation,a100-80gb,8,4,1024,16,1024,32000,16,1,2,2,,,,0,full,500,test,\n";
  const char *without = HEADER ROW("a", "calibration", "1", "", "")
      ROW("b", "calibration", "2", "", "");
  const char *params[] = {"gemm_eff"};
  sc_calibration_options opt = {NULL, params, 1, NULL, NULL, 0, -1, 40};
  sc_caseset *s1, *s2;
  sc_calibration_result r1, r2;
  assert_int_equal(load(&s1, with_outlier), 0);
  assert_int_equal(load(&s2, without), 0);
  assert_int_equal(sc_calibrate_cases(ctx, s1, &opt, &r1), 0);
  assert_int_equal(sc_calibrate_cases(ctx, s2, &opt, &r2), 0);
  assert_int_equal(r1.rows, 2);
  assert_true(r1.params.gemm_eff == r2.params.gemm_eff); /* deterministic, validation unused */
  assert_true(r1.params.gemm_eff > 0.3 && r1.params.gemm_eff <= 1.0);
  assert_int_equal(r1.nfitted, 1);
  assert_string_equal(r1.fitted[0], "gemm_eff");
  assert_string_equal(r1.gpu, "a100-80gb");
  /* measured 0.5 s is far slower than the tiny model runs: the fit slows it */
  assert_true(r1.mape_after_pct < r1.mape_before_pct);

  sc_test_buf s = {0};
  assert_int_equal(sc_calibration_write_yaml(&r1, "note line 1\nline 2", sc_test_buf_write, &s), 0);
  assert_non_null(strstr(s.p, "# note line 1\n# line 2\ncalibration:\n  gemm_eff: "));
  char tmp[] = "/tmp/sc_calib_XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  FILE *fp = fdopen(fd, "w");
  fputs(s.p, fp);
  fclose(fp);
  sc_config cfg;
  sc_test_example(&cfg);
  char assign[64];
  snprintf(assign, sizeof assign, "calibration=%s", tmp);
  assert_int_equal(sc_config_set(ctx, &cfg, assign), 0);
  assert_true(fabs(cfg.costs.gemm_eff - r1.params.gemm_eff) < 1e-5);
  remove(tmp);
  free(s.p);

  /* Errors: unknown parameter, no calibration rows, mixed GPUs. */
  const char *nope[] = {"warp_speed"};
  sc_calibration_options bad = {NULL, nope, 1, NULL, NULL, 0, -1, 10};
  assert_int_equal(sc_calibrate_cases(ctx, s1, &bad, &r1), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "cannot fit \"warp_speed\""));
  sc_caseset *s3;
  assert_int_equal(load(&s3, HEADER ROW("v", "validation", "1", "", "")), 0);
  assert_int_equal(sc_calibrate_cases(ctx, s3, &opt, &r1), SC_EINVAL);
  sc_caseset_free(s3);
  const char *mixed = HEADER ROW("a", "calibration", "1", "", "")
      "h,calibration,h100-sxm,8,4,1024,16,1024,32000,16,1,2,2,,,,0,full,0.5,test,\n";
  assert_int_equal(load(&s3, mixed), 0);
  assert_int_equal(sc_calibrate_cases(ctx, s3, &opt, &r1), SC_EINVAL);
  assert_non_null(strstr(sc_errmsg(ctx), "choose one with --gpu"));
  opt.gpu = "h100-sxm";
  assert_int_equal(sc_calibrate_cases(ctx, s3, &opt, &r1), 0);
  assert_int_equal(r1.rows, 1);
  sc_caseset_free(s3);
  /* One compute die, one fit: an H100 SXM row and a 500 W H100 row fit
   * together; the default parameters add each attention kernel the rows
   * run (cudnn for the Megatron row on Hopper, flash for the other). */
  const char *die = ONE_COLS "gpu,num_gpus,tp,pp,micro_batch,split,framework\n"
                    ONE_VALS "h100-sxm,8,1,1,1,calibration,megatron\n"
                    "y,8,1024,16,4096,32000,16,0.6,test,h100-96gb-500w,8,1,1,1,calibration,"
                    "torchtitan\n";
  assert_int_equal(load(&s3, die), 0);
  sc_calibration_options dopt = {NULL, NULL, 0, NULL, NULL, 0, -1, 8};
  assert_int_equal(sc_calibrate_cases(ctx, s3, &dopt, &r1), 0);
  assert_int_equal(r1.rows, 2);
  assert_int_equal(r1.nfitted, 6);
  assert_string_equal(r1.fitted[4], "attn_eff");
  assert_string_equal(r1.fitted[5], "cudnn_attn_eff");
  sc_caseset_free(s3);
  sc_caseset_free(s1);
  sc_caseset_free(s2);
}

/* Allocation failures while loading are reported, never crash or leak. */
static void test_allocation_failures(void **state) {
  (void)state;
  const char *text = HEADER ROW("a", "calibration", "1", "", "\"q, \"\"x\"\"\"")
      ROW("b", "", "2", "", "");
  for (int n = 0; n < 400; n++) {
    sc_test_heap b = sc_test_heap_failing(n + 1, 1); /* n succeed, then all fail */
    sc_ctx *c;
    assert_int_equal(sc_test_ctx_on(&b, &c), 0);
    sc_caseset *set = NULL;
    int rc = sc_caseset_new(c, &set);
    if (!rc) rc = sc_caseset_load_string(set, "t.csv", text, strlen(text), NULL);
    sc_caseset_free(set);
    sc_ctx_free(c);
    assert_int_equal(b.live, 0);
    if (rc == 0) return; /* enough allocations to succeed */
    assert_int_equal(rc, SC_ENOMEM);
  }
  fail_msg("never succeeded");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quoted_fields_and_lines),
      cmocka_unit_test(test_blank_cells_get_documented_defaults),
      cmocka_unit_test(test_row_config_fills_blank_cells),
      cmocka_unit_test(test_unknown_columns_warn),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_unsupported_listed_not_dropped),
      cmocka_unit_test(test_failing_rows_listed),
      cmocka_unit_test(test_new_columns_map),
      cmocka_unit_test(test_blank_new_columns_defaults),
      cmocka_unit_test(test_column_ranges),
      cmocka_unit_test(test_moe_mla_rows_unsupported),
      cmocka_unit_test(test_stats_and_formats),
      cmocka_unit_test(test_overrides_apply),
      cmocka_unit_test(test_shipped_cases_accuracy),
      cmocka_unit_test(test_shipped_new_files),
      cmocka_unit_test(test_default_calibration_matches_files),
      cmocka_unit_test(test_calibration),
      cmocka_unit_test(test_prediction_interval),
      cmocka_unit_test(test_framework_attention),
      cmocka_unit_test(test_group_by),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
