/*
 * usage.c: prints the usage table (cli/commands.c) three ways: one command's
 * usage (--help, `stepcast help CMD`, usage errors), the list of every
 * command (`stepcast help`), and the man page stepcast(1) in troff -man
 * (`stepcast man`, written to build/stepcast.1 by the build).
 */
#include "commands.h"

#include <ctype.h>
#include <string.h>

#define WIDTH 79   /* terminal text is wrapped to this many columns */
#define OPT_COL 28 /* option descriptions start here (longer names: next line) */

/* Writes words of s from column col, continuation lines indented to indent
 * columns, none past WIDTH. */
static void wrap(FILE *f, const char *s, int col, int indent) {
  int start = col;
  while (*s) {
    size_t w = strcspn(s, " ");
    if (col > start && col + 1 + (int)w > WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      col = start = indent;
    } else if (col > start) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", (int)w, s);
    col += (int)w;
    s += w;
    while (*s == ' ') s++;
  }
  fputc('\n', f);
}

static int is_group(const sc_cli_cmd *c) { return c->run == NULL; }

/* Whether c is a member of group g ("hw show" of "hw"). */
static int member_of(const sc_cli_cmd *c, const sc_cli_cmd *g) {
  size_t n = strlen(g->name);
  return c != g && !strncmp(c->name, g->name, n) && c->name[n] == ' ';
}

/* "usage: stepcast NAME FORM" for every form of the synopsis; *first says
 * whether the "usage:" line is still to come. */
static void synopsis(const sc_cli_cmd *c, FILE *f, int *first) {
  const char *s = c->synopsis;
  do {
    size_t n = strcspn(s, "\n");
    fprintf(f, "%s stepcast %s%s%.*s\n", *first ? "usage:" : "      ", c->name, n ? " " : "",
            (int)n, s);
    *first = 0;
    s += n;
  } while (*s++ == '\n');
}

/* A row's description, or its summary as a sentence when it has none. */
static void description(const sc_cli_cmd *c, FILE *f) {
  if (c->text) fprintf(f, "%s\n", c->text);
  else fprintf(f, "%c%s.\n", toupper((unsigned char)c->summary[0]), c->summary + 1);
}

static void option_list(const sc_cli_opt *o, FILE *f) {
  if (!o || !o->name) return;
  fprintf(f, "\noptions:\n");
  for (; o->name; o++) {
    int n = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    if (n + 2 > OPT_COL) fprintf(f, "\n%*s", OPT_COL, "");
    else fprintf(f, "%*s", OPT_COL - n, "");
    wrap(f, o->help, OPT_COL, OPT_COL);
  }
}

/* The summaries of rows (a group's members, or every command), names in a
 * column. */
static void command_list(FILE *f, const sc_cli_cmd *group) {
  for (size_t i = 0; i < sc_cli_ncommands; i++) {
    const sc_cli_cmd *c = &sc_cli_commands[i];
    if (c->hidden || is_group(c) || (group && !member_of(c, group))) continue;
    int n = fprintf(f, "  %s", c->name);
    fprintf(f, "%*s", n + 2 > OPT_COL ? 2 : OPT_COL - n, "");
    wrap(f, c->summary, n + 2 > OPT_COL ? n + 2 : OPT_COL, OPT_COL);
  }
}

void sc_cli_usage(const sc_cli_cmd *cmd, FILE *f) {
  int first = 1;
  if (!is_group(cmd)) {
    synopsis(cmd, f, &first);
    description(cmd, f);
    option_list(cmd->opts, f);
    return;
  }
  const sc_cli_cmd *one = NULL;
  for (size_t i = 0; i < sc_cli_ncommands; i++)
    if (member_of(&sc_cli_commands[i], cmd)) {
      synopsis(&sc_cli_commands[i], f, &first);
      if (!one) one = &sc_cli_commands[i];
    }
  description(cmd, f);
  fprintf(f, "\ncommands:\n");
  command_list(f, cmd);
  if (!one) return;
  char s[256];
  snprintf(s, sizeof s, "`stepcast help %s` or `stepcast %s --help` prints its usage and options.",
           one->name, one->name);
  wrap(f, s, 0, 0);
}

void sc_cli_usage_all(FILE *f) {
  fprintf(f, "usage: stepcast COMMAND [ARGS...]\n"
             "Predicts the step time, throughput, MFU, memory and time breakdown of\n"
             "distributed training jobs. Commands:\n\n");
  command_list(f, NULL);
  fprintf(f, "\n`stepcast help COMMAND` or `stepcast COMMAND --help` (-h) prints a command's\n"
             "usage and options. Without CONFIG, `run` simulates the built-in example:\n"
             "GPT-3 175B on 1,024 A100-80GB (TP8 PP16 DP8, batch 1536, full recompute;\n"
             "Megatron SC21).\n");
}

/* ------------------------------------------------------------ man page */

/* Writes s as troff text: backslashes and hyphens escaped, a leading . or '
 * neutralised, `code` in bold. Lines of s stay lines (troff fills them; one
 * starting with a space breaks). */
static void roff(FILE *f, const char *s) {
  int bol = 1, bold = 0;
  for (; *s; s++) {
    if (bol && (*s == '.' || *s == '\'')) fputs("\\&", f);
    bol = *s == '\n';
    if (*s == '\\') fputs("\\e", f);
    else if (*s == '-') fputs("\\-", f);
    else if (*s == '`') fputs((bold = !bold) ? "\\fB" : "\\fR", f);
    else fputc(*s, f);
  }
  if (bold) fputs("\\fR", f);
  fputc('\n', f);
}

/* Writes s with hyphens and backslashes escaped, nothing else. */
static void roff_word(FILE *f, const char *s, size_t n) {
  for (size_t i = 0; i < n && s[i]; i++) {
    if (s[i] == '-') fputs("\\-", f);
    else if (s[i] == '\\') fputs("\\e", f);
    else fputc(s[i], f);
  }
}

static void man_synopsis(FILE *f, const sc_cli_cmd *c) {
  const char *s = c->synopsis;
  do {
    size_t n = strcspn(s, "\n");
    fputs("\\fBstepcast ", f);
    roff_word(f, c->name, strlen(c->name));
    fputs("\\fR", f);
    if (n) fputc(' ', f);
    roff_word(f, s, n);
    fputs("\n.br\n", f);
    s += n;
  } while (*s++ == '\n');
}

static void man_options(FILE *f, const sc_cli_opt *o) {
  for (; o && o->name; o++) {
    fputs(".TP\n\\fB", f);
    roff_word(f, o->name, strlen(o->name));
    fputs("\\fR", f);
    if (o->arg) {
      fputs(" \\fI", f);
      roff_word(f, o->arg, strlen(o->arg));
      fputs("\\fR", f);
    }
    fputc('\n', f);
    roff(f, o->help);
  }
}

/* The library's exit-code table (stepcast.h's SC_ERROR_LIST). */
static const struct {
  int exit;
  const char *text;
} exit_codes[] = {
#define SC_X_EXIT(name, value, exit, text) {exit, text},
    SC_ERROR_LIST(SC_X_EXIT)
#undef SC_X_EXIT
};

int sc_cli_man(FILE *f) {
  fprintf(f,
          ".\\\" stepcast(1), generated by `stepcast man` from cli/commands.c; do not edit.\n"
          ".TH STEPCAST 1 \"\" \"stepcast %s\" \"User Commands\"\n"
          ".SH NAME\n"
          "stepcast \\- predict the step time of distributed training jobs\n"
          ".SH SYNOPSIS\n",
          SC_VERSION);
  for (size_t i = 0; i < sc_cli_ncommands; i++)
    if (!sc_cli_commands[i].hidden && !is_group(&sc_cli_commands[i]))
      man_synopsis(f, &sc_cli_commands[i]);
  fputs(".SH DESCRIPTION\n", f);
  roff(f, "stepcast predicts how fast a large distributed training job runs: the time\n"
          "of one training step, tokens/s, TFLOP/s per GPU, MFU, memory per GPU and\n"
          "where the time goes (compute, exposed tensor-, pipeline- and data-parallel\n"
          "communication, pipeline bubble, optimizer). It builds the operations every\n"
          "GPU rank executes in one step and replays them with a deterministic\n"
          "discrete-event engine over calibrated cost models.");
  fputs(".PP\n", f);
  roff(f, "Every command takes -h or --help, which prints its usage. An option's value\n"
          "may follow it or be joined by = (`--format=json`); -- ends the options.");
  fputs(".SH COMMANDS\n", f);
  for (size_t i = 0; i < sc_cli_ncommands; i++) {
    const sc_cli_cmd *c = &sc_cli_commands[i];
    if (c->hidden) continue;
    fputs(".SS \"", f);
    roff_word(f, c->name, strlen(c->name));
    fputs("\"\n", f);
    if (is_group(c)) {
      roff(f, c->text);
      continue;
    }
    man_synopsis(f, c);
    fputs(".PP\n", f);
    if (c->text) roff(f, c->text);
    else {
      char s[256];
      snprintf(s, sizeof s, "%c%s.", toupper((unsigned char)c->summary[0]), c->summary + 1);
      roff(f, s);
    }
    man_options(f, c->opts);
  }
  fputs(".SH \"EXIT STATUS\"\n", f);
  for (int code = 0; code <= 4; code++) {
    fprintf(f, ".TP\n.B %d\n", code);
    int n = 0;
    for (size_t i = 0; i < sizeof exit_codes / sizeof exit_codes[0]; i++)
      if (exit_codes[i].exit == code) fprintf(f, "%s%s", n++ ? "; " : "", exit_codes[i].text);
    if (code == SC_CLI_EXIT_USAGE)
      fprintf(f, "; bad usage (unknown option, missing value or argument)");
    fputc('\n', f);
  }
  fputs(".SH FILES\n", f);
  roff(f, "Configs are YAML with sections model, training, parallel, cluster,\n"
          "simulation and calibration; `stepcast config-docs` prints every field.\n"
          "Invalid input is reported as file:line: message.");
  fputs(".SH \"SEE ALSO\"\n", f);
  roff(f, "README.md, docs/ARCHITECTURE.md, docs/CONFIG.md, docs/COMM.md, docs/SWEEP.md,\n"
          "docs/TRACE.md, docs/INTERFERENCE.md, docs/VALIDATION.md in the source tree.");
  return ferror(f) ? SC_EWRITE : SC_OK;
}
