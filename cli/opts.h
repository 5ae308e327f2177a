/*
 * opts.h: what every stepcast command shares: the shape of a command's entry
 * in the usage table (cli/commands.c), the argument iterator that table
 * drives (options with values, --name=value, flags, positionals), choice and
 * number parsing, error printing and exit codes (cli/opts.c).
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

/* ------------------------------------------------------------ values */

/* Each parses the value v of option opt; on a bad value prints
 * "stepcast: OPT: expected ..., got "V"" and returns 0, else 1. */
/* A decimal integer in [min, max]. */
int sc_cli_int(const char *opt, const char *v, int64_t min, int64_t max, int64_t *out);
/* A finite number above min (at least min when min_inclusive) and below
 * max (pass HUGE_VAL for no bound). */
int sc_cli_real(const char *opt, const char *v, double min, int min_inclusive, double max,
                double *out);

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

/* ------------------------------------------------------------ usage (cli/usage.c) */

/* Prints cmd's usage: synopsis, description and options (a group: its
 * members' synopses and summaries). */
void sc_cli_usage(const sc_cli_cmd *cmd, FILE *f);
/* Prints `stepcast`'s usage: every command with its summary. */
void sc_cli_usage_all(FILE *f);
/* Writes the man page stepcast(1), troff -man, from the usage table. */
int sc_cli_man(FILE *f);

#endif /* SC_CLI_OPTS_H */
