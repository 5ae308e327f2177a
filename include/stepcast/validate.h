/*
 * validate.h: accuracy against published runs. Case files (CSV, one published
 * training run per row, format in validation/SCHEMA.md) are loaded into a
 * case set; each supported case is simulated and its predicted step time is
 * compared with the measured one; calibration fits free cost-model
 * parameters on the rows marked `split=calibration` only.
 *
 * Ownership: sc_caseset is created by sc_caseset_new and freed with
 * sc_caseset_free; it borrows the sc_ctx it was created with (which must
 * outlive it) and owns its cases. sc_case pointers returned by
 * sc_caseset_case are borrowed and valid until the set is freed or more files
 * are loaded. sc_case_result arrays are owned by the caller.
 * Units: seconds for step times, percent for errors.
 */
#ifndef STEPCAST_VALIDATE_H
#define STEPCAST_VALIDATE_H

#include "stepcast/stepcast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- cases */

typedef enum { SC_SPLIT_VALIDATION = 0, SC_SPLIT_CALIBRATION } sc_split;

#define SC_CASE_ID_MAX 96
#define SC_CASE_TEXT_MAX 768
#define SC_CASE_DEFAULTS_MAX 2048

/* One published run. cfg is the configuration the row describes, before
 * sc_config_resolve (so that overrides can still change derived values);
 * resolved is the same after resolution, for display. Blank optional cells
 * get documented defaults, listed in `defaults` ("micro_batch=1 (not stated);
 * ..."). A row is never dropped: one that needs a feature stepcast does not
 * model (MoE/MLA, or anything the library answers with SC_EUNSUPPORTED while
 * the row is read) keeps its measurement, has status SC_EUNSUPPORTED and
 * `unsupported` set to the feature; one whose configuration cannot be built
 * (a cell the config refuses, a cross-field validation error) has status set
 * to that error code and `error` to the library's "file:line: message".
 * Neither is simulated. */
typedef struct sc_case {
  char id[SC_CASE_ID_MAX];
  char file[256];          /* case file path as loaded */
  int line;                /* line where the row starts, 1-based */
  sc_split split;
  double measured_step_s;
  double measured_tflops_per_gpu; /* as published; 0 when blank */
  char framework[32];      /* "" when blank */
  char flops_convention[16];
  int status;              /* SC_OK, SC_EUNSUPPORTED, or the error that stops the row */
  char unsupported[SC_CASE_TEXT_MAX]; /* "" when modelled, else the missing feature */
  char error[SC_CASE_TEXT_MAX];       /* "" or "file:line: message" */
  char defaults[SC_CASE_DEFAULTS_MAX]; /* defaults applied to blank cells */
  sc_config cfg;           /* unresolved; valid when status is SC_OK */
  sc_config resolved;      /* resolved copy of cfg (as far as it was built otherwise) */
} sc_case;

typedef struct sc_caseset sc_caseset;

/* Creates an empty set bound to ctx. Returns 0 or SC_ENOMEM. */
int sc_caseset_new(sc_ctx *ctx, sc_caseset **out);
void sc_caseset_free(sc_caseset *set);

/* Appends the rows of a case file. If PATH.csv has a sibling PATH.yaml, that
 * file is the *base config* of every row of the file (software facts the
 * source states but the CSV has no column for); row cells override it.
 * Errors ("file:line: message", SC_EINVAL or SC_EREAD) leave the set as it
 * was; they are the file's own: unreadable, malformed CSV, a header without a
 * required column or with one twice, a row with the wrong number of cells, or
 * a row that cannot be told apart or compared (id blank, too long or
 * duplicate; split, measured_step_s, measured_tflops_per_gpu,
 * flops_convention or source invalid). Everything about the configuration a
 * row describes is the row's: it is kept with its status (see sc_case).
 * Unknown columns are accepted and reported through sc_caseset_warning. */
int sc_caseset_load_file(sc_caseset *set, const char *path);
/* Same from memory; name is used in messages; base may be NULL (no base
 * config) or the path of a YAML base config. */
int sc_caseset_load_string(sc_caseset *set, const char *name, const char *text, size_t len,
                           const char *base);

size_t sc_caseset_count(const sc_caseset *set);
const sc_case *sc_caseset_case(const sc_caseset *set, size_t i); /* NULL if out of range */
/* Files loaded, in order, and the base config each used ("" when none). */
size_t sc_caseset_file_count(const sc_caseset *set);
const char *sc_caseset_file(const sc_caseset *set, size_t i);
const char *sc_caseset_file_base(const sc_caseset *set, size_t i);
/* Non-fatal findings ("cases.csv:1: unknown column \"foo\" ignored"). */
size_t sc_caseset_warning_count(const sc_caseset *set);
const char *sc_caseset_warning(const sc_caseset *set, size_t i);

/* ---------------------------------------------------------------- prediction */

/* Applied to every case before it is resolved and simulated: non-zero
 * fields of *calibration override the case's cost parameters, then each
 * "section.key=value" of sets is applied (sc_config_set). */
typedef struct sc_validate_options {
  const sc_cost_params *calibration; /* NULL: none */
  const char *const *sets;
  size_t nsets;
} sc_validate_options;

typedef struct sc_case_result {
  int status;              /* SC_OK, SC_EUNSUPPORTED, or the error of the row */
  double predicted_step_s; /* 0 unless status == SC_OK */
  double error_pct;        /* 100 * (predicted - measured) / measured; negative = too fast */
  /* status SC_EUNSUPPORTED: the feature not modelled ("context parallelism is
   * not modelled yet"); another error: "file:line: message"; "" when SC_OK */
  char reason[SC_CASE_TEXT_MAX];
  sc_result result;        /* the full simulation result */
} sc_case_result;

/* Builds the configuration of one case with the options applied and
 * resolves it. Returns 0; for a case that was not built (status != SC_OK)
 * that status, with its feature or error as the message; or the error of an
 * override or of resolution. */
int sc_case_config(sc_ctx *ctx, const sc_case *c, const sc_validate_options *opt,
                   sc_config *out);

/* Simulates case i of set into out[i] for every case (out has
 * sc_caseset_count entries). One row never stops the batch: a case that was
 * not built, does not resolve with the options, or whose simulation fails
 * gets that status and reason, and the others still run. Returns 0, or an
 * error that would stop every row: SC_ENOMEM, or an override (--set) that
 * cannot be applied at all (message names the first case). */
int sc_validate_run(sc_ctx *ctx, const sc_caseset *set, const sc_validate_options *opt,
                    sc_case_result *out);

/* Error statistics over a selection of cases (absolute errors in percent). */
typedef struct sc_error_stats {
  size_t n;               /* cases with a prediction (simulated) */
  size_t unsupported;     /* cases without one: a feature not modelled */
  size_t errors;          /* cases without one: their configuration or simulation failed */
  double mape_pct;        /* mean |error| */
  double median_abs_pct;  /* median |error| */
  double max_abs_pct;     /* worst |error| */
  double bias_pct;        /* mean signed error */
  size_t worst;           /* index of the worst case in the set */
  size_t in_interval;     /* cases whose measurement lies in the 90 % prediction interval */
  double coverage_pct;    /* 100 * in_interval / n */
} sc_error_stats;

/* Statistics over the cases of `file` (NULL: every file) whose split is
 * `split` (-1: any split). */
void sc_validate_stats(const sc_caseset *set, const sc_case_result *res, const char *file,
                       int split, sc_error_stats *out);

/* How the summary groups cases: by case file, by GPU preset, or by
 * parallelism mix (sc_case_mix). */
typedef enum {
  SC_VALIDATE_BY_FILE = 0,
  SC_VALIDATE_BY_GPU,
  SC_VALIDATE_BY_MIX
} sc_validate_group;

/* The parallelism mix of a case's resolved layout: the degrees above 1 in
 * the order data (DP, or FSDP / HSDP with ZeRO-3), TP, PP, CP, EP, joined by
 * '+' ("FSDP+TP", "DP+TP+PP+EP"); "1 GPU" when none is. */
#define SC_CASE_MIX_MAX 32
void sc_case_mix(const sc_case *c, char *out, size_t n);

/* sc_validate_stats over the cases of group `key` of kind `by` (a file
 * path, a GPU preset name or a mix label; NULL: every case). */
void sc_validate_stats_by(const sc_caseset *set, const sc_case_result *res, sc_validate_group by,
                          const char *key, int split, sc_error_stats *out);

/* The 90 % prediction-interval half-widths (calibration keys interval_dense
 * and interval_moe) fitted on the simulated split=calibration cases
 * (docs/VALIDATION.md, section Prediction intervals). Each case's error is
 * e_i = log(measured / p_i), p_i its held-out prediction where held_out_s
 * (NULL, or one entry per case; 0 = none) has one, else its prediction in
 * res: held out, a case the compute fit used is predicted by the fit redone
 * without it (tools/interval_loo.sh), so the errors are those of a new
 * workload, not the fit's own residuals. The half-width of a group of n
 * cases is split-conformal: the ceil((n + 1) * 0.9)-th smallest |e_i|, 0
 * when that rank exceeds n (fewer than 9 cases). MoE cases too few for it
 * take the rank over every calibration case (moe_pooled); the MoE width is
 * at least the dense one: an MoE step has every dense term and more.
 * Returns 0, SC_EINVAL (no set, results or output) or SC_ENOMEM. */
typedef struct sc_interval_fit {
  double dense, moe;          /* half-widths, log space */
  size_t dense_n, moe_n;      /* cases used */
  double dense_rms, moe_rms;  /* rms log error */
  size_t held_out;            /* cases whose held-out prediction was used */
  int moe_pooled;             /* 1: the MoE width is the rank over every case */
} sc_interval_fit;
int sc_validate_fit_interval(const sc_caseset *set, const sc_case_result *res,
                             const double *held_out_s, sc_interval_fit *out);

/* Reads a held-out prediction file (tools/interval_loo.sh writes
 * validation/calibration/loo.csv): header id,file,predicted_s,loo_predicted_s,
 * then one row per case, file being the case file's last path component.
 * Fills held_out_s[i] (and predicted_s[i], the prediction the file was made
 * with, when predicted_s is not NULL; both arrays have sc_caseset_count
 * entries) for every case of the set the file names, 0 for the others;
 * rows of cases not in the set are skipped. Returns 0, SC_EREAD, SC_EINVAL
 * ("file:line: message") or SC_ENOMEM. */
int sc_validate_load_held_out(const sc_caseset *set, const char *path, double *predicted_s,
                              double *held_out_s);

typedef enum {
  SC_VALIDATE_TEXT = 0, /* table per file, defaults applied, summaries */
  SC_VALIDATE_JSON,     /* one object: cases, mape_pct, max_abs_error_pct, groups */
  SC_VALIDATE_CSV,      /* one row per case */
  SC_VALIDATE_MARKDOWN  /* tables for docs/VALIDATION.md */
} sc_validate_format;

/* Writes the report: every case, simulated or not (with its reason), the
 * per-file counts of simulated, unsupported and failed rows, and the error
 * statistics, which cover simulated rows only and say how many. The
 * headline figures (JSON mape_pct and max_abs_error_pct, the text
 * "validation rows" line) cover validation rows only. */
int sc_validate_write(const sc_caseset *set, const sc_case_result *res, sc_validate_format fmt,
                      sc_write_fn w, void *ud);
/* The same with the summary (text, JSON groups, markdown summary table)
 * grouped by `by` instead of by file; the case listing stays per file. */
int sc_validate_write_by(const sc_caseset *set, const sc_case_result *res,
                         sc_validate_format fmt, sc_validate_group by, sc_write_fn w, void *ud);

/* ---------------------------------------------------------------- calibration */

#define SC_CALIB_MAX_PARAMS 8

typedef struct sc_calibration_options {
  const char *gpu;          /* fit rows on this GPU preset; NULL: the rows must share one */
  const char *const *params;/* sc_cost_params field names to fit; NULL: the default set */
  size_t nparams;           /* (gemm_eff gemm_dim_half attn_eff mem_eff kernel_overhead_us) */
  const sc_cost_params *start; /* prior centre and start; 0 fields (or NULL) = kernel data */
  const char *const *sets;  /* overrides applied to every row, as for validation */
  size_t nsets;
  double prior_weight;      /* weight of the pull towards the start; < 0: default (1) */
  int max_evaluations;      /* objective evaluations; <= 0: default (600) */
} sc_calibration_options;

typedef struct sc_calibration_result {
  char gpu[32];
  sc_cost_params params;    /* start values with the fitted ones replaced */
  size_t nfitted;
  const char *fitted[SC_CALIB_MAX_PARAMS]; /* names of the fitted fields (static strings) */
  size_t rows;              /* calibration rows used */
  double mape_before_pct, mape_after_pct; /* on the calibration rows */
  double max_before_pct, max_after_pct;
  int evaluations;
} sc_calibration_result;

/* Fits the chosen cost-model parameters on the set's split=calibration rows
 * (never validation rows) by minimising a robust (soft-L1, 5 % scale) loss
 * of log(predicted / measured) plus a Gaussian pull of the transformed
 * parameters towards the start (kernel-data values), with a bounded
 * Nelder-Mead search; efficiencies stay in (0, 1], sizes and latencies > 0.
 * Deterministic. Returns 0, SC_EINVAL (no calibration rows, mixed GPUs
 * without opt->gpu, unknown parameter name), or a simulation error. */
int sc_calibrate_cases(sc_ctx *ctx, const sc_caseset *set, const sc_calibration_options *opt,
                       sc_calibration_result *out);

/* Writes the result as YAML: a top-level `calibration:` mapping of the fitted
 * fields (loadable with `calibration: FILE` or --set calibration=FILE) and a
 * `fit:` mapping with provenance. `note` (may be NULL) becomes a comment. */
int sc_calibration_write_yaml(const sc_calibration_result *r, const char *note, sc_write_fn w,
                              void *ud);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_VALIDATE_H */
