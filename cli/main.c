/*
 * main.c: the stepcast command-line front end's entry point: finds the
 * command in the usage table (cli/commands.c) and calls its handler, and
 * implements the small commands about the CLI itself (help, version, man).
 * No simulation logic lives in cli/; exit codes are the library's.
 */
#include "stepcast/stepcast.h"

#include "commands.h"
#include "outfile.h"

#include <stdio.h>
#include <string.h>

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* A group named without a member ("hw", "import", "calibrate" without its
 * mode flag): its usage, to stdout when asked for, else as an error. */
static int group(const sc_cli_cmd *g, int argc, char **argv) {
  size_t glen = strlen(g->name);
  char members[256] = "";
  size_t len = 0;
  int modes = 0, flags = 0;
  for (size_t i = 0; i < sc_cli_ncommands; i++) {
    const char *n = sc_cli_commands[i].name;
    if (strncmp(n, g->name, glen) || n[glen] != ' ' || sc_cli_commands[i].hidden) continue;
    modes += n[glen + 1] == '-';
    for (int j = 0; j < argc; j++) flags += !strcmp(argv[j], n + glen + 1);
    if (len < sizeof members)
      len += (size_t)snprintf(members + len, sizeof members - len, "%s%s", len ? ", " : "",
                              n + glen + 1);
  }
  for (int j = 0; j < (modes ? argc : argc > 0); j++)
    if (is_help(argv[j])) {
      sc_cli_usage(g, stdout);
      return 0;
    }
  if (modes)
    return sc_cli_usage_error(g, flags ? "give only one of %s" : "give one of %s", members);
  if (!argc) return sc_cli_usage_error(g, "missing subcommand (%s)", members);
  return sc_cli_usage_error(g, "unknown subcommand \"%s\" (%s)", argv[0], members);
}

int sc_cli_help(const sc_cli_cmd *cmd, int argc, char **argv) {
  if (!argc) {
    sc_cli_usage_all(stdout);
    return 0;
  }
  if (argc == 1 && is_help(argv[0])) {
    sc_cli_usage(cmd, stdout);
    return 0;
  }
  int used;
  const sc_cli_cmd *c = sc_cli_lookup(argc, argv, &used);
  char name[256];
  size_t len = 0;
  for (int i = 0; i < argc && len < sizeof name; i++)
    len += (size_t)snprintf(name + len, sizeof name - len, "%s%s", i ? " " : "", argv[i]);
  if (!c || strcmp(c->name, name)) {
    fprintf(stderr, "stepcast: help: unknown command \"%s\"\n", name);
    sc_cli_usage_all(stderr);
    return SC_CLI_EXIT_USAGE;
  }
  sc_cli_usage(c, stdout);
  return 0;
}

/* Commands that take no arguments: a reason to stop (--help, a stray
 * argument), else -1. */
static int no_arguments(const sc_cli_cmd *cmd, int argc, char **argv) {
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r = sc_cli_next(&a);
  if (r < 0) return a.exit;
  if (r > 0) return sc_cli_usage_error(cmd, "unexpected argument %s", a.value);
  return -1;
}

int sc_cli_version(const sc_cli_cmd *cmd, int argc, char **argv) {
  int code = no_arguments(cmd, argc, argv);
  if (code >= 0) return code;
  printf("stepcast %s\n", SC_VERSION);
  return 0;
}

int sc_cli_man_cmd(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *path = NULL;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r;
  while ((r = sc_cli_next(&a)) > 0)
    if (!a.opt) return sc_cli_usage_error(cmd, "unexpected argument %s", a.value);
    else if (sc_cli_is(&a, "-o")) path = a.value;
    else return sc_cli_unhandled(&a);
  if (r < 0) return a.exit;
  sc_cli_out o;
  int code = sc_cli_out_open(&o, path);
  if (code) return code;
  int rc = sc_cli_man(o.f);
  code = sc_cli_out_close(&o, rc != 0);
  return rc ? sc_cli_write_error(path ? path : "stdout", 1) : code;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    sc_cli_usage_all(stderr);
    return SC_CLI_EXIT_USAGE;
  }
  if (is_help(argv[1])) {
    sc_cli_usage_all(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) return sc_cli_version(sc_cli_find("version"), 0, NULL);
  int used;
  const sc_cli_cmd *cmd = sc_cli_lookup(argc - 1, argv + 1, &used);
  if (!cmd) {
    fprintf(stderr, "stepcast: unknown command \"%s\"\n", argv[1]);
    sc_cli_usage_all(stderr);
    return SC_CLI_EXIT_USAGE;
  }
  if (!cmd->run) return group(cmd, argc - 1 - used, argv + 1 + used);
  return cmd->run(cmd, argc - 1 - used, argv + 1 + used);
}
