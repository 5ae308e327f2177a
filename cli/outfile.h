/*
 * outfile.h: atomic output files for every command that writes one (traces,
 * result.json, .scw jobs, calibration YAML, validation reports): the output
 * is written to a temporary file in the target's directory, flushed to disk
 * and renamed over the target only when complete, so a failed or killed run
 * never leaves a truncated file or destroys the one that was there. (The
 * sweep's results file is the exception: it is appended row by row so that
 * --resume can continue it; see docs/SWEEP.md.)
 */
#ifndef SC_CLI_OUTFILE_H
#define SC_CLI_OUTFILE_H

#include <stdio.h>

typedef struct sc_cli_out {
  FILE *f;            /* write here (stdout when the target is stdout) */
  const char *path;   /* the target; NULL for stdout */
  char tmp[4200];     /* the temporary file, "" once renamed or removed */
} sc_cli_out;

/* Opens an output for path (NULL or "-": stdout). Returns 0, or prints
 * "stepcast: PATH: cannot open: REASON" and returns the output-failure exit
 * code. */
int sc_cli_out_open(sc_cli_out *o, const char *path);
/* Finishes o: flushes, syncs and renames the temporary file over the target
 * (stdout: flushes). With failed != 0 (the writer reported an error) it is
 * discarded instead. Returns 0, or prints the failure and returns the
 * output-failure exit code; the target is untouched on every failure. */
int sc_cli_out_close(sc_cli_out *o, int failed);

/* Creates directory dir (and its parents) unless it exists, and checks that
 * files can be created in it; for -o DIR before anything is simulated.
 * Returns 0 or prints why not and returns the output-failure exit code. */
int sc_cli_out_dir(const char *dir);

#endif /* SC_CLI_OUTFILE_H */
