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

#endif /* SC_CLI_COMMANDS_H */
