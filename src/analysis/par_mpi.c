/*
 * par_mpi.c: the MPI backend of par_int.h (built when CMake's SC_MPI option
 * defines SC_HAVE_MPI; otherwise this file is empty and par_serial.c is
 * used). Process 0 is the coordinator and also a worker: it hands out one
 * item per request, keeps every other process one item ahead, computes
 * items itself between servicing messages, and delivers all results.
 * Messages: ITEM (0 -> worker: int64 item, -1 = no more work) and RESULT
 * (worker -> 0: int64 item, int64 status, the record bytes). All processes
 * run the same binary, so records travel as raw bytes.
 */
#include "analysis/par_int.h"

#ifdef SC_HAVE_MPI

#include <mpi.h>

enum { TAG_ITEM = 1, TAG_RESULT = 2 };

/* Items a worker holds at most: the one it computes and one queued. */
#define QUEUE_DEPTH 2

static int we_initialised;

int sc__par_init(int *argc, char ***argv) {
  int inited = 0;
  if (MPI_Initialized(&inited) != MPI_SUCCESS) return SC_EINTERNAL;
  if (inited) return SC_OK;
  if (MPI_Init(argc, argv) != MPI_SUCCESS) return SC_EINTERNAL;
  we_initialised = 1;
  return SC_OK;
}

void sc__par_finalize(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (we_initialised && !fin) MPI_Finalize();
  we_initialised = 0;
}

static int mpi_ready(void) {
  int inited = 0, fin = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&fin);
  return inited && !fin;
}

int sc__par_rank(void) {
  int r = 0;
  if (mpi_ready()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int sc__par_size(void) {
  int n = 1;
  if (mpi_ready()) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int sc__par_agree(int rc) {
  if (sc__par_size() <= 1) return rc;
  int v = rc;
  if (MPI_Allreduce(&rc, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) return SC_EINTERNAL;
  return v;
}

int sc__par_share(int v) {
  if (sc__par_size() <= 1) return v;
  if (MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return SC_EINTERNAL;
  return v;
}

static int send_item(int64_t item, int to) {
  return MPI_Send(&item, 1, MPI_INT64_T, to, TAG_ITEM, MPI_COMM_WORLD) == MPI_SUCCESS ? SC_OK
                                                                                     : SC_EINTERNAL;
}

/* Coordinator state on process 0. */
typedef struct coord {
  const int64_t *items;
  int64_t n, next, outstanding;
  int *held;       /* per worker: items sent and not yet answered */
  uint8_t *stopped;/* per worker: the end marker was sent */
  int rc;          /* first deliver failure; stops handing out */
  int comm_rc;
} coord;

/* Gives worker w its next item, or the end marker when there is none (or
 * the run is stopping) and it has not had it yet. */
static void feed(coord *C, int w) {
  if (!C->rc && C->next < C->n) {
    if (send_item(C->items[C->next], w)) C->comm_rc = SC_EINTERNAL;
    C->next++;
    C->held[w]++;
    C->outstanding++;
  } else if (!C->stopped[w]) {
    if (send_item(-1, w)) C->comm_rc = SC_EINTERNAL;
    C->stopped[w] = 1;
  }
}

/* Receives worker w's result (len bytes at most), delivers it unless the
 * run is stopping, and feeds w again. */
static void take_result(coord *C, int w, unsigned char *buf, size_t len,
                        sc_par_deliver_fn deliver, void *ud) {
  MPI_Status st;
  if (MPI_Recv(buf, (int)len, MPI_BYTE, w, TAG_RESULT, MPI_COMM_WORLD, &st) != MPI_SUCCESS) {
    C->comm_rc = SC_EINTERNAL;
    return;
  }
  int64_t item, status;
  memcpy(&item, buf, 8);
  memcpy(&status, buf + 8, 8);
  C->held[w]--;
  C->outstanding--;
  if (!C->rc) {
    int r = deliver(ud, item, (int)status, buf + 16);
    if (r) C->rc = r;
  }
  feed(C, w);
}

static int run_root(sc_ctx *ctx, const int64_t *items, int64_t n, size_t rec_size,
                    sc_par_work_fn work, sc_par_deliver_fn deliver, void *ud, int size) {
  size_t len = 16 + rec_size;
  coord C;
  memset(&C, 0, sizeof C);
  C.items = items;
  C.n = n;
  C.held = sc__calloc(ctx, (size_t)size, sizeof(int));
  C.stopped = sc__calloc(ctx, (size_t)size, 1);
  unsigned char *buf = sc__malloc(ctx, len);
  void *rec = sc__malloc(ctx, rec_size);
  if (!C.held || !C.stopped || !buf || !rec) {
    /* Still release the workers, or they would wait forever. */
    for (int w = 1; w < size; w++) send_item(-1, w);
    sc__free(ctx, C.held, (size_t)size * sizeof(int));
    sc__free(ctx, C.stopped, (size_t)size);
    sc__free(ctx, buf, len);
    sc__free(ctx, rec, rec_size);
    return SC_ENOMEM;
  }
  /* Prime every worker with QUEUE_DEPTH items, round-robin so small lists
   * spread out. */
  for (int d = 0; d < QUEUE_DEPTH; d++)
    for (int w = 1; w < size; w++)
      if (C.next < C.n) feed(&C, w);
  for (int w = 1; w < size; w++)
    if (!C.held[w]) feed(&C, w); /* nothing for it: end marker */

  while (!C.comm_rc) {
    int flag = 0;
    MPI_Status st;
    /* Answer every worker that is waiting before computing anything. */
    while (!C.comm_rc && MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st) ==
                             MPI_SUCCESS &&
           flag)
      take_result(&C, st.MPI_SOURCE, buf, len, deliver, ud);
    if (C.comm_rc) break;
    if (!C.rc && C.next < C.n) {
      int64_t item = C.items[C.next++];
      memset(rec, 0, rec_size);
      int status = work(ud, item, rec);
      int r = deliver(ud, item, status, rec);
      if (r) C.rc = r;
      continue;
    }
    if (C.outstanding == 0) break;
    if (MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st) != MPI_SUCCESS) {
      C.comm_rc = SC_EINTERNAL;
      break;
    }
    take_result(&C, st.MPI_SOURCE, buf, len, deliver, ud);
  }
  for (int w = 1; w < size && !C.comm_rc; w++)
    if (!C.stopped[w]) feed(&C, w);
  sc__free(ctx, C.held, (size_t)size * sizeof(int));
  sc__free(ctx, C.stopped, (size_t)size);
  sc__free(ctx, buf, len);
  sc__free(ctx, rec, rec_size);
  if (C.comm_rc) return sc__error(ctx, SC_EINTERNAL, "MPI communication failed during the sweep");
  return C.rc;
}

static int run_worker(sc_ctx *ctx, size_t rec_size, sc_par_work_fn work, void *ud) {
  size_t len = 16 + rec_size;
  unsigned char *buf = sc__malloc(ctx, len);
  if (!buf) {
    /* Cannot work: answer every item with SC_ENOMEM (a header-only result;
     * deliver does not read the record of a failed item) so process 0
     * stops the run instead of waiting forever. */
    int64_t hdr[2] = {0, SC_ENOMEM};
    do {
      if (MPI_Recv(&hdr[0], 1, MPI_INT64_T, 0, TAG_ITEM, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS)
        return SC_EINTERNAL;
      if (hdr[0] >= 0) MPI_Send(hdr, 16, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
    } while (hdr[0] >= 0);
    return SC_ENOMEM;
  }
  int64_t queue[QUEUE_DEPTH + 1];
  int qhead = 0, qlen = 0, rc = SC_OK;
  /* The end marker is queued: whatever process 0 sends after it belongs to
   * the next sc__par_run (it may follow at once, with no collective between
   * the two), so nothing more is collected here. */
  int ended = 0;
  for (;;) {
    if (qlen == 0) {
      int64_t item;
      if (MPI_Recv(&item, 1, MPI_INT64_T, 0, TAG_ITEM, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS) {
        rc = SC_EINTERNAL;
        break;
      }
      queue[(qhead + qlen++) % (QUEUE_DEPTH + 1)] = item;
      ended = item < 0;
    }
    int64_t item = queue[qhead];
    qhead = (qhead + 1) % (QUEUE_DEPTH + 1);
    qlen--;
    if (item < 0) break;
    memset(buf, 0, len);
    int64_t status = work(ud, item, buf + 16);
    memcpy(buf, &item, 8);
    memcpy(buf + 8, &status, 8);
    if (MPI_Send(buf, (int)len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD) != MPI_SUCCESS) {
      rc = SC_EINTERNAL;
      break;
    }
    /* Collect items that arrived meanwhile, without waiting. */
    int flag = 0;
    while (!ended && qlen < QUEUE_DEPTH + 1 &&
           MPI_Iprobe(0, TAG_ITEM, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
           flag) {
      int64_t next;
      if (MPI_Recv(&next, 1, MPI_INT64_T, 0, TAG_ITEM, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS) {
        rc = SC_EINTERNAL;
        break;
      }
      queue[(qhead + qlen++) % (QUEUE_DEPTH + 1)] = next;
      ended = next < 0;
    }
    if (rc) break;
  }
  sc__free(ctx, buf, len);
  return rc;
}

int sc__par_run(sc_ctx *ctx, const int64_t *items, int64_t n, size_t rec_size,
                sc_par_work_fn work, sc_par_deliver_fn deliver, void *ud) {
  int size = sc__par_size();
  if (size <= 1) {
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
  if (sc__par_rank() == 0) return run_root(ctx, items, n, rec_size, work, deliver, ud, size);
  return run_worker(ctx, rec_size, work, ud);
}

#else
typedef int sc__par_mpi_unused; /* ISO C: a translation unit is never empty */
#endif
