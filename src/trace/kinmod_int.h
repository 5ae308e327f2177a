/*
 * kinmod_int.h: the nn.Module structure of a Kineto trace (kinmod.c), for
 * the importer (kineto.c). A trace recorded with the profiler's
 * with_stack / with_modules options has a `python_function` range
 * "nn.Module: <Class>_<n>" around every module call (n numbers the
 * instances of a class in the order first called); forward operators carry
 * a "Sequence number", and the autograd engine's backward nodes
 * ("autograd::engine::evaluate_function: ...") the sequence number of the
 * forward operator that made them. kineto.c keeps those ranges as it reads
 * (sc__kinmod_keep_*) and, once it knows each GPU op's launch call, asks
 * sc__kinmod_tag for every op's module, pass and the rank's module table
 * (docs/TRACE.md, "Module annotations in GPU traces").
 */
#ifndef SC_KINMOD_INT_H
#define SC_KINMOD_INT_H

#include "trace/job_int.h"

/* A time range on a thread, ns. */
typedef struct sc_kmrange {
  int64_t ts, end, tid;
  int64_t a;   /* module ranges: instance number; sequence ranges: the sequence number (-1 none) */
  uint32_t b;  /* module ranges: class (string id); sequence ranges: 1 a backward node */
} sc_kmrange;

typedef struct sc_kinmod {
  sc_kmrange *mods, *seqs, *opts; /* module calls, operators with a sequence number / backward nodes, optimizer */
  size_t nmods, mods_cap, nseqs, seqs_cap, nopts, opts_cap;
} sc_kinmod;

/* Keeps an event of name s[0..n) on thread tid over [ts, ts + dur) if it
 * is a module call, an operator with a sequence number (has_seq) or a
 * backward node, or the optimizer's step or zero_grad range; other events
 * are left alone. 0, SC_ENOMEM or SC_EINVAL (past max records: the
 * caller's message). */
int sc__kinmod_keep(sc_ctx *ctx, sc_job *job, sc_kinmod *km, const char *s, size_t n, int64_t ts, int64_t dur,
                    int64_t tid, int has_seq, int64_t seq, size_t max_records);

/* 1 when the trace had module calls. */
int sc__kinmod_any(const sc_kinmod *km);

/* Tags n GPU ops by their launch call (launch_ts / launch_tid; tid
 * INT64_MIN: no launch record): out[i] gets the module (1 + index in
 * jr's module table, which this fills), the pass and no parameter. A
 * launch inside the optimizer's range is SC_JPASS_OPT; inside a backward
 * node SC_JPASS_BWD with the module of the forward operator of its
 * sequence number, or SC_JPASS_RECOMP with the module called inside that
 * node (activation checkpointing's re-run forward); inside a module call
 * SC_JPASS_FWD; else none. */
int sc__kinmod_tag(sc_ctx *ctx, sc_job *job, sc_jrank *jr, sc_kinmod *km, const int64_t *launch_ts,
                   const int64_t *launch_tid, size_t n, sc_jopmod *out);

void sc__kinmod_free(sc_ctx *ctx, sc_kinmod *km);

#endif
