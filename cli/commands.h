/*
 * commands.h: subcommands of the stepcast CLI that live in their own files
 * (cli/cmd_<name>.c). Each receives the arguments after its name and returns
 * the process exit code: 0 success, 1 runtime failure, 2 bad usage or input.
 */
#ifndef SC_CLI_COMMANDS_H
#define SC_CLI_COMMANDS_H

#include <stdio.h>

/* Shared by commands: fwrite-backed sc_write_fn for a FILE *. */
int sc_cli_write_file(void *ud, const char *buf, size_t len);

/* cmd_validate.c: `validate CASES.csv ...`, and the case-file part of
 * `calibrate` (--cases ...), to be dispatched by the `calibrate` command. */
int sc_cli_validate(int argc, char **argv);
int sc_cli_calibrate_cases(int argc, char **argv);

/* cmd_sweep.c: `sweep [CONFIG] --gpus N ...`, configuration search (also
 * under mpirun when built with SC_MPI). */
int sc_cli_sweep(int argc, char **argv);

/* cmd_comm.c: `comm` (predicted collective times in the nccl-tests layout,
 * or predicted vs measured with --compare) and `calibrate`, which fits the
 * collective model to nccl-tests outputs (--nccl-tests) and hands --cases to
 * sc_cli_calibrate_cases. */
int sc_cli_comm(int argc, char **argv);
int sc_cli_calibrate(int argc, char **argv);

/* cmd_trace.c: `import kineto|chakra FILE... -o JOB.scw` (profiler traces to
 * a workload file) and `replay JOB.scw [--scale dp=N] ...` (simulate it as
 * traced or re-targeted, compared with the traced step time). */
int sc_cli_import(int argc, char **argv);
int sc_cli_replay(int argc, char **argv);

#endif /* SC_CLI_COMMANDS_H */
