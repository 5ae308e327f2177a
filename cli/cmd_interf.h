/*
 * cmd_interf.h: `stepcast calibrate --interference TRACES... -o site.yaml`
 * (cli/cmd_interf.c), dispatched by the `calibrate` command (cmd_comm.c).
 */
#ifndef SC_CLI_CMD_INTERF_H
#define SC_CLI_CMD_INTERF_H

/* Receives calibrate's arguments; returns the exit code (0, 1 failure,
 * 2 bad usage or input). */
int sc_cli_calibrate_interference(int argc, char **argv);

#endif /* SC_CLI_CMD_INTERF_H */
