/*
 * par_int.h: process-level parallelism for sweeps, behind one interface with
 * two build-time backends: par_serial.c (one process; the default build) and
 * par_mpi.c (Open MPI; CMake option SC_MPI defines SC_HAVE_MPI). Exactly one
 * of the two files compiles to code. Nothing else in the library knows MPI.
 */
#ifndef SC_PAR_INT_H
#define SC_PAR_INT_H

#include "base/sc_int.h"

/* Computes work item `item` into rec (rec_size bytes, zeroed). Runs on any
 * process. Returns 0; a nonzero return is reported to deliver as the item's
 * status (the record is then whatever work left in it). */
typedef int (*sc_par_work_fn)(void *ud, int64_t item, void *rec);

/* Receives the result of one item on process 0, exactly once per item, in
 * any order. status: work's return. A nonzero return stops the run: no
 * further items are handed out and sc__par_run returns that code. */
typedef int (*sc_par_deliver_fn)(void *ud, int64_t item, int status, const void *rec);

int sc__par_init(int *argc, char ***argv); /* 0 or SC_EINTERNAL */
void sc__par_finalize(void);
int sc__par_rank(void);
int sc__par_size(void);

/* Agreement on the processes' rc before the work starts (a collective):
 * 0 when every process passes 0, else the lowest (SC_E codes are negative)
 * code, on every process; so all stop together when one fails (e.g. process
 * 0's results file is unusable). Serial: returns rc. */
int sc__par_agree(int rc);

/* Process 0's v on every process (a collective), so that all agree on
 * whether another sc__par_run follows. Serial: returns v. SC_EINTERNAL on
 * communication failure. */
int sc__par_share(int v);

/* Runs items[0..n) over the process group with dynamic load balancing:
 * process 0 hands items out one at a time (each worker keeps one queued so
 * it never waits for the next), computes items itself between servicing
 * messages, and calls deliver for every result. items and n are read on
 * process 0 only; other processes compute what they are sent. A collective:
 * every process calls it. Returns 0 or the first nonzero deliver return (on
 * process 0; others return 0 or SC_EINTERNAL on communication failure). */
int sc__par_run(sc_ctx *ctx, const int64_t *items, int64_t n, size_t rec_size,
                sc_par_work_fn work, sc_par_deliver_fn deliver, void *ud);

#endif /* SC_PAR_INT_H */
