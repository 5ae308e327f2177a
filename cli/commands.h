/*
 * commands.h: the usage table of the stepcast CLI (cli/commands.c: every
 * command's name, synopsis, options and description, which dispatch, --help
 * and the man page read) and the handlers it points to, one file per command
 * family (cli/cmd_<family>.c). Handlers return the process exit code.
 */
#ifndef SC_CLI_COMMANDS_H
#define SC_CLI_COMMANDS_H

#include "opts.h"

#include "stepcast/comm.h"
#include "stepcast/validate.h"

#include <stddef.h>

extern const sc_cli_cmd sc_cli_commands[];
extern const size_t sc_cli_ncommands;

/* The row called name ("hw show", "calibrate --cases"), or NULL. */
const sc_cli_cmd *sc_cli_find(const char *name);
/* The row that argv names: the longest row name made of argv's first words,
 * or for a group whose members are modes ("calibrate --cases"), the member
 * whose flag is among argv. *used: how many words of argv the name took
 * (modes: 1; their handler gets the flag with the other arguments). NULL
 * when argv[0] names no row. */
const sc_cli_cmd *sc_cli_lookup(int argc, char **argv, int *used);

/* main.c */
int sc_cli_help(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_version(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_man_cmd(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_run.c */
int sc_cli_run(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_run.c: report DIR -o FILE (the run report from a saved -o directory) */
int sc_cli_report(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_diff.c */
int sc_cli_diff(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_hw.c: hw list, hw show, presets, config-docs */
int sc_cli_hw_list(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_hw_show(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_presets(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_config_docs(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_sweep.c */
int sc_cli_sweep(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_validate.c */
int sc_cli_validate(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_calibrate.c: calibrate --cases, --nccl-tests, --interference */
int sc_cli_calibrate_cases(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_calibrate_nccl(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_calibrate_interference(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_comm.c */
int sc_cli_comm(const sc_cli_cmd *cmd, int argc, char **argv);
/* cmd_trace.c: import kineto|chakra|cpu (tag: the sc_trace_format), replay */
int sc_cli_import(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_replay(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_calibrate_kernels(const sc_cli_cmd *cmd, int argc, char **argv);
struct sc_job;
/* cmd_trace.c: the config a replay of a job runs under (see there). */
int sc_cli_job_config(sc_ctx *ctx, const struct sc_job *job, int64_t world, const char *path,
                      const char *cluster, const sc_cli_list *sets, sc_config *cfg, int64_t *first_layers,
                      int64_t *last_layers, int *rc_out);
/* cmd_megatron.c: import megatron, export megatron */
int sc_cli_import_megatron(const sc_cli_cmd *cmd, int argc, char **argv);
int sc_cli_export_megatron(const sc_cli_cmd *cmd, int argc, char **argv);

/* Shared by cmd_validate.c and cmd_calibrate.c: loads every case file into
 * set and prints the set's warnings; a library return code. */
int sc_cli_load_cases(sc_caseset *set, const char *const *files, int nfiles);

/* Shared by cmd_comm.c and cmd_calibrate.c (calibrate --nccl-tests). */
/* How many rows are warm-up rows, and the mean absolute error over every
 * row, warm-up rows included (sc_comm_compare's MAPE leaves them out). */
size_t sc_cli_warmup_rows(const sc_comm_compare_row *rows, size_t n, double *mape_all);
/* The GPU preset of an nccl-tests output from its device names; NULL after
 * printing that --gpu is needed. */
const sc_hw *sc_cli_guess_gpu(const char *file, const char *devices);

#endif /* SC_CLI_COMMANDS_H */
