/*
 * opts.h: what every stepcast command shares: the shape of a command's entry
 * in the usage table (cli/commands.c), the argument iterator that table
 * drives (options with values, --name=value, flags, positionals), choice and
 * number parsing with the physical range of every numeric option, input
 * files, error printing and exit codes (cli/opts.c).
 */
#ifndef SC_CLI_OPTS_H
#define SC_CLI_OPTS_H

#include "stepcast/stepcast.h"

#include <stdint.h>
#include <stdio.h>

/* Exit code of bad usage (unknown option, missing value or argument): the
 * library's code for invalid input, sc_exit_code(SC_EINVAL). */
#define SC_CLI_EXIT_USAGE 2

/* sc_cli_opt.flags */
enum {
  SC_CLI_CHOICE = 1u << 0, /* arg is "a|b|c": the value must be one of them */
  SC_CLI_LIST = 1u << 1,   /* a flag that the positional FILEs after it belong to; arg
                              names them for usage only */
};

/* One option of a command: name ("--gpus", "-o"), the placeholder of its
 * value (NULL for a flag), a one-line description, SC_CLI_* flags. */
typedef struct sc_cli_opt {
  const char *name;
  const char *arg;
  const char *help;
  unsigned flags;
} sc_cli_opt;

typedef struct sc_cli_cmd sc_cli_cmd;

/* A command's handler: the arguments after its name (for a mode entry such
 * as "calibrate --cases", every argument after "calibrate"); returns the exit
 * code. */
typedef int (*sc_cli_run_fn)(const sc_cli_cmd *cmd, int argc, char **argv);

/* One row of the usage table. name is the words typed after `stepcast`
 * ("run", "hw show", "calibrate --cases": a mode picked by that flag); a row
 * with run == NULL is a group whose members are the rows named "NAME ...".
 * synopsis: what follows the name, one form per line ("\n" between). text:
 * the description, lines of at most 79 characters; a line starting with a
 * space stays a line of its own in the man page. opts ends with {NULL}. */
struct sc_cli_cmd {
  const char *name;
  const char *synopsis;
  const char *summary; /* one line for the command list */
  const char *text;
  const sc_cli_opt *opts;
  sc_cli_run_fn run;
  int tag;    /* handed to run through cmd: import's sc_trace_format */
  int hidden; /* left out of `stepcast help` and the man page */
};

/* ------------------------------------------------------------ arguments */

/* Iterates over a command's arguments against its option table:
 *
 *   sc_cli_args a;
 *   sc_cli_args_init(&a, cmd, argc, argv);
 *   int r;
 *   while ((r = sc_cli_next(&a)) > 0)
 *     if (!a.opt) ... a.value is a positional argument
 *     else if (sc_cli_is(&a, "--gpus")) ... a.value, NULL for a flag
 *   if (r < 0) return a.exit;
 *
 * -h and --help (also where an option's value is due) print the command's
 * usage to stdout and stop with exit 0;
 * an unknown option, a missing value or a flag given a value print the error
 * and the usage to stderr and stop with exit 2; so does a value of an
 * SC_CLI_CHOICE option that is not among its choices (without the usage),
 * else a.choice is its index. "--name=value" equals "--name value"; "--"
 * ends the options; "-" is a positional argument. */
typedef struct sc_cli_args {
  const sc_cli_cmd *cmd;
  int argc, i, opts_done;
  char **argv;
  const sc_cli_opt *opt; /* the option just read, NULL for a positional */
  const char *value;     /* its value (NULL for a flag), or the positional */
  int choice;            /* SC_CLI_CHOICE: index of value in opt->arg */
  int exit;              /* after sc_cli_next returned -1: the exit code */
} sc_cli_args;

void sc_cli_args_init(sc_cli_args *a, const sc_cli_cmd *cmd, int argc, char **argv);
/* 1: one more option or positional in a->opt / a->value; 0: no more;
 * -1: stop and return a->exit. */
int sc_cli_next(sc_cli_args *a);
/* Whether the argument just read is the option called name. */
int sc_cli_is(const sc_cli_args *a, const char *name);
/* For the last branch of a command's loop: an option in its table that its
 * handler does not know, a bug; prints it, returns exit code 1. */
int sc_cli_unhandled(const sc_cli_args *a);

/* Values of a repeated option, or positional arguments, in order. Owns v
 * (not the strings, which are argv's). */
typedef struct sc_cli_list {
  const char **v;
  int n, cap;
} sc_cli_list;

/* Appends s; 0, or the exit code 1 after printing "out of memory". */
int sc_cli_list_add(sc_cli_list *l, const char *s);
void sc_cli_list_free(sc_cli_list *l);

/* The config a command runs: the neutral defaults and CONFIG (NULL: none)
 * or, with neither CONFIG nor --hf, the built-in example; then
 * --calibration FILE, --hf FILE (as model.hf_config) and the --set list, in
 * that order (NULL / empty: skipped). Not resolved. Returns the library's
 * code, its message in ctx. */
int sc_cli_config(sc_ctx *ctx, sc_config *cfg, const char *config, const char *calibration,
                  const char *hf, const sc_cli_list *sets);

/* ------------------------------------------------------------ ranges */

/* The physical range of every numeric option, in one place: each
 * command's parser passes these bounds to the value parsers below, which
 * refuse a value outside with "OPT: V out of range [LO, HI]" (V as typed),
 * exit 2. Where an option sets or mirrors a config field the range is the
 * field's (src/input/config_int.h; tests/cli/usage.sh checks that they
 * agree), else the reason is given. Ranges of sweep's options are here too
 * (cli/cmd_sweep.c). */
/* cluster.num_gpus (and parallel.dp): comm --gpus, sweep --gpus */
#define SC_CLI_GPUS_MAX 16777216
/* cluster.gpus_per_node: comm, calibrate --nccl-tests --gpus-per-node */
#define SC_CLI_GPUS_PER_NODE_MAX 1024
/* cluster.nic_gbps (Gb/s) and cluster.nvlink_gbps (GB/s): --nic-gbps,
 * --nvlink-gbps */
#define SC_CLI_LINK_GBPS_MIN 0.1
#define SC_CLI_LINK_GBPS_MAX 100000.0
/* parallel.tp, parallel.pp (sweep --tp, --pp), parallel.vpp (--vpp),
 * training.micro_batch (--mb) */
#define SC_CLI_TP_PP_MAX 1024
#define SC_CLI_VPP_MAX 64
#define SC_CLI_MICRO_BATCH_MAX 65536
/* The largest world a traced job may describe (docs/SCW.md, "Bounds"):
 * replay --scale dp=N and --replica R, and N x R together */
#define SC_CLI_JOB_WORLD_MAX 1048576
/* Message sizes of comm --min-bytes / --max-bytes: at most 2^50 bytes
 * (1 PiB, the largest transfer a traced job may hold, docs/SCW.md) */
#define SC_CLI_BYTES_MAX 1125899906842624.0
/* comm --step-factor, in (1, 1024]: ten doublings between two rows is
 * already coarser than any nccl-tests run prints */
#define SC_CLI_STEP_FACTOR_MAX 1024.0
/* replay --bucket-mb / --first-bucket-mb, in (0, 1048576] MiB: a bucket of
 * 1 TiB is larger than any GPU's memory (PyTorch DDP's default is 25) */
#define SC_CLI_BUCKET_MB_MAX 1048576.0
/* calibrate --cases --prior-weight in [0, 1e6] (a weight of 1e6 already
 * pins every parameter to its default) and --max-evals in [1, 100000] */
#define SC_CLI_PRIOR_WEIGHT_MAX 1e6
#define SC_CLI_MAX_EVALS_MAX 100000
/* calibrate --interference: --min-kernel-us in [0, 1e6] us (0: the default,
 * 10; a kernel of a second is beyond what overlap changes), --min-alone in
 * [1, 2^20] runs, --max-spread in (0, 10], --min-overlap and --shape-tol in
 * (0, 1] (fractions), --ridge in (0, 1e6], --huber in (0, 100] (relative
 * error), --folds in [-1, 65536] (-1: none, 0: leave one kernel out) */
#define SC_CLI_KERNEL_US_MAX 1e6
#define SC_CLI_RUNS_MAX 1048576
#define SC_CLI_SPREAD_MAX 10.0
#define SC_CLI_RIDGE_MAX 1e6
#define SC_CLI_HUBER_MAX 100.0
#define SC_CLI_FOLDS_MAX 65536
/* Bounds of the tree model's boosting options (calibrate --interference). */
#define SC_CLI_TREE_ROUNDS_MAX 10000
#define SC_CLI_TREE_DEPTH_MAX 12
#define SC_CLI_TREE_CHILD_MAX 1e6
/* sweep --top K in [1, 2^20] rows; sweep --stop-after N in [0, 2^31 - 1] */
#define SC_CLI_TOP_MAX 1048576

/* ------------------------------------------------------------ values */

/* Each parses the value v of option opt; on a bad value prints
 * "stepcast: OPT: expected ..., got "V"" or, for a number outside its
 * range, "stepcast: OPT: V out of range [LO, HI]" (V as typed; "(LO, HI]"
 * when LO itself is excluded) and returns 0, else 1. */
/* A decimal integer in [lo, hi]; one too large for int64 is out of range. */
int sc_cli_int(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out);
/* A finite number in [lo, hi], or (lo, hi] when lo_open. */
int sc_cli_real(const char *opt, const char *v, double lo, int lo_open, double hi, double *out);
/* A size in bytes: a number with an optional binary multiple K, M, G, T or
 * P (2^10 ... 2^50), optionally followed by "i" and/or "B" ("8", "64K",
 * "16GiB", "1MB"), rounded down to whole bytes, in [lo, hi]. */
int sc_cli_size(const char *opt, const char *v, double lo, double hi, double *out);
/* A comma-separated list of at most max values ("4,8", "on,off"), each an
 * integer in [lo, hi] or one of names (NULL-terminated, may be NULL; the
 * i-th name stands for i), into out[0 .. *n - 1]. Errors: "OPT: bad list
 * "V"" (an empty item, an item over 31 bytes, more than max items), "OPT:
 * "W" is not a valid value" (not an integer nor a name), "OPT: W out of
 * range [LO, HI]". For sweep's dimension lists (--tp 4,8 --sp on). */
int sc_cli_int_list(const char *opt, const char *v, int64_t lo, int64_t hi,
                    const char *const *names, int64_t *out, int max, int *n);
/* A comma-separated list of at most max integers and inclusive ranges
 * A-B ("0,7,1000-1015"), each number in [lo, hi], into out[0 .. *n - 1].
 * Errors: "OPT: bad list "V"" (an empty item, more than max items), "OPT:
 * "W" is not a rank or range A-B", "OPT: W out of range [LO, HI]", "OPT:
 * A-B is an empty range" (B < A). For run --trace-ranks. */
int sc_cli_range_list(const char *opt, const char *v, int64_t lo, int64_t hi, sc_rank_range *out,
                      int max, int *n);

/* ------------------------------------------------------------ input files */

/* Inputs are regular files: a FIFO with no writer would block the open
 * forever, a device such as /dev/zero never ends, a directory is no input.
 * Both print "stepcast: PATH: cannot open: REASON" ("Is a directory", "a
 * FIFO, not a regular file", "not a regular file (a device?)", or the
 * system's) when path is anything else. */
/* Opens path for reading, checking the opened file itself (the open does
 * not wait for a FIFO's writer); NULL after printing. */
FILE *sc_cli_open_regular(const char *path);
/* Whether path names a regular file (stat, nothing opened), for inputs the
 * library opens itself; 0 after printing. */
int sc_cli_regular_file(const char *path);

/* ------------------------------------------------------------ errors */

/* Prints "stepcast: " and the message to stderr; returns code. */
int sc_cli_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints "stepcast: CMD: message" and cmd's usage to stderr; returns 2. */
int sc_cli_usage_error(const sc_cli_cmd *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A library failure: prints the context's message (or rc's text when there
 * is none or no context) and returns sc_exit_code(rc). */
int sc_cli_fail(const sc_ctx *ctx, int rc);
/* An output file that could not be opened or written: prints
 * "stepcast: PATH: cannot open: REASON" (errno) or "PATH: write failed"
 * (opened == 1), returns sc_exit_code(SC_EWRITE). */
int sc_cli_write_error(const char *path, int opened);

/* fwrite-backed sc_write_fn for a FILE *. */
int sc_cli_write_file(void *ud, const char *buf, size_t len);
/* Prints the library's warnings about a resolved config (sc_config_warnings)
 * on stderr, "stepcast: warning: " before each line. */
void sc_cli_config_warnings(const sc_config *cfg);
/* The same with sc_config_warnings_ex's flags. */
void sc_cli_config_warnings_ex(const sc_config *cfg, unsigned flags);

/* ------------------------------------------------------------ usage (cli/usage.c) */

/* Prints cmd's usage: synopsis, description and options (a group: its
 * members' synopses and summaries). */
void sc_cli_usage(const sc_cli_cmd *cmd, FILE *f);
/* Prints `stepcast`'s usage: every command with its summary. */
void sc_cli_usage_all(FILE *f);
/* Writes the man page stepcast(1), troff -man, from the usage table. */
int sc_cli_man(FILE *f);

#endif /* SC_CLI_OPTS_H */
