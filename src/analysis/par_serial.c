/*
 * par_serial.c: the one-process backend of par_int.h, used unless the build
 * enables MPI (SC_HAVE_MPI, then par_mpi.c takes over and this file is
 * empty). Items run in list order on the calling process.
 */
#include "analysis/par_int.h"

#ifndef SC_HAVE_MPI

int sc__par_init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return SC_OK;
}

void sc__par_finalize(void) {}

int sc__par_rank(void) { return 0; }

int sc__par_size(void) { return 1; }

int sc__par_agree(int rc) { return rc; }

int sc__par_share(int v) { return v; }

int sc__par_run(sc_ctx *ctx, const int64_t *items, int64_t n, size_t rec_size,
                sc_par_work_fn work, sc_par_deliver_fn deliver, void *ud) {
  void *rec = sc__malloc(ctx, rec_size);
  if (!rec) return SC_ENOMEM;
  int rc = SC_OK;
  for (int64_t i = 0; i < n && !rc; i++) {
    memset(rec, 0, rec_size);
    int status = work(ud, items[i], rec);
    rc = deliver(ud, items[i], status, rec);
  }
  sc__free(ctx, rec, rec_size);
  return rc;
}

#else
typedef int sc__par_serial_unused; /* ISO C: a translation unit is never empty */
#endif
