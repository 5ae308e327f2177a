/*
 * engine.c: the discrete-event engine. Replays the per-rank programs of a
 * workload: an op starts when its stream is free and its dependencies are done;
 * collectives start on all members when the last one arrives (rendezvous);
 * send/recv pairs start when both sides are ready. Running ops progress at a
 * rate that changes whenever the set of running ops on their ranks changes
 * (interference, NIC sharing): remaining work is kept and rescaled (fluid
 * model). Events are ordered by (time, push order), so runs are deterministic.
 */
#include "engine/engine_int.h"
#include "cost/interf_int.h"
#include "engine/traceout_int.h"

#include <stdio.h>
#include <string.h>

#define NONE UINT32_MAX

/* Streams a rank's state has room for. The engine is compiled twice: here
 * with every stream, and by engine_narrow.c with the first 8 (compute, TP,
 * DP, the four pipeline ones, CP), which is what most runs use; a smaller
 * rstate is what the largest unfolded runs are bound by
 * (docs/PERFORMANCE.md, section 1). sc__engine_run hands a workload whose
 * programs stay within 8 streams to the narrow one. */
#define SC_ENGINE_NARROW_NS 8
#ifndef SC_ENGINE_NS
#define SC_ENGINE_NS SC_ST_COUNT
#define SC_ENGINE_WIDE 1
#define SC_ENGINE_ENTRY sc__engine_run
#endif
_Static_assert(SC_ENGINE_NS <= SC_ST_COUNT, "a rank holds at most every stream");
#define NO_STREAM 0xffu /* ends a list of streams (rstate.first_waiter) */

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
/* Off the hot loop's frame: its callers keep fewer registers live. */
#define NOINLINE __attribute__((noinline))
/* Into its one hot caller, whose frame already holds the registers it needs. */
#define INLINE_HOT inline __attribute__((always_inline))
/* Off the per-op path: kept out of line so its callers stay small and cheap. */
#define RARE __attribute__((noinline, cold))
#else
#define PREFETCH(p) ((void)(p))
#define NOINLINE
#define INLINE_HOT inline
#define RARE
#endif

/* Index of the lowest set bit of x != 0. */
static int lowest_bit(unsigned x) {
#if defined(__GNUC__)
  return __builtin_ctz(x);
#else
  int i = 0;
  while (!(x & 1u)) x >>= 1, i++;
  return i;
#endif
}

enum { ST_IDLE = 0, ST_WAIT, ST_RUN };
enum { ACT_COMPUTE = 0, ACT_COLL, ACT_P2P };

typedef struct ginst {
  uint32_t mem_off, nmem; /* simulated members in sim.members */
  /* Members waiting at the group's next collective, per stream: one group
   * can have collectives pending on several streams at once (FSDP gathers
   * on one, reduce-scatters on another), each a rendezvous of its own. */
  uint32_t arrived[SC_ST_COUNT];
  const sc_op *op[SC_ST_COUNT]; /* the collective running on each stream (act_op) */
  sc_placement pl;        /* placement of the full logical group */
} ginst;

/* Per simulated rank. The fields that every compute op's end and the next
 * op's start touch come first, to share cache lines: the ranks array does not
 * fit L1. Small, because the largest unfolded runs stream it from memory
 * (docs/PERFORMANCE.md, section 2, fifth round): 256 bytes narrow (4 lines),
 * counters in 16 bits (at most one op a stream), the global rank beside it
 * (sim.rglobal) and the step's end the last event's time. */
typedef struct rstate {
  uint32_t head[SC_ENGINE_NS]; /* next op per stream; ops before it are done */
  uint8_t st[SC_ENGINE_NS];
  /* A stream's head op can only become startable when a stream of the same
   * rank completes an op: its own (it goes idle) or the one its head op waits
   * on. Most idle streams wait on a compute op several ops ahead (unfolded
   * default: 94% of the dependency checks of a full rescan fail), so a blocked
   * stream records the exact op it waits on and is only looked at again once
   * that op is done; try_advance examines just the streams marked ready. */
  uint16_t ready;             /* bit s: stream s may be able to start its head op */
  uint16_t running;           /* bit s: stream s runs an activity (st[s] == ST_RUN) */
  uint8_t compute_cat;        /* category of the op on the compute stream, if any */
  int16_t n_comp, n_net, n_comm;
  int8_t n_cat[SC_CAT_COUNT]; /* running ops per category */
  uint32_t stage;
  const sc_program *prog;     /* &wl->progs[stage], read by every op's start */
  int64_t last_ns;            /* breakdown accounted up to here */
  double acc[SC_CAT_COUNT];   /* ns per category */
  uint32_t act[SC_ENGINE_NS];  /* running activity per stream (valid where running) */
  uint32_t wake_head[SC_ENGINE_NS]; /* head[d] that frees the first waiter of d, or NONE */
  /* The streams waiting on an op of stream d, as a list in ascending order
   * of that op (wait_idx), so that a wake-up takes the ones due from its
   * front and looks at no other: first_waiter[d] and each one's next_waiter
   * (NO_STREAM ends it). A stream waits on one op at a time. */
  uint8_t first_waiter[SC_ENGINE_NS];
  uint8_t next_waiter[SC_ENGINE_NS];
  uint32_t wait_idx[SC_ENGINE_NS]; /* index in stream d of the op stream s waits on */
} rstate;
_Static_assert(SC_ENGINE_NS > 8 || sizeof(rstate) == 256, "the narrow rstate is 4 lines");
_Static_assert(SC_ST_COUNT < 128, "rstate's counters hold a count of streams");

/* 40 bytes: the op it runs is its owner's head op (act_op), and when it
 * started is kept only by runs that record (sim.act_t0). */
typedef struct activity { /* fields an event's pop reads come first */
  uint32_t version;
  uint8_t type, sa, sb, net;
  uint32_t a, b;    /* compute: rank a; coll: group instance a, its load histogram b
                     * (NONE: none, see loadhist); p2p: ranks a -> b */
  double remaining; /* ns of work left at rate 1 */
  double rate;
  int64_t last_ns;
} activity;

/* The rate of a collective is the smallest factor over its members
 * (member_factor), which depends only on a member's *load*: its network
 * transfers n_net and whether compute runs there. A DP group of 1,024
 * simulated ranks made a scan of the members per rate computation cost
 * O(group) on every start and end of anything on any member, O(group^2) per
 * collective: 71% of the instructions of Llama-3 405B on 65,536 GPUs
 * unfolded. So a large collective keeps the count of its members per load
 * instead, moved as a member's load changes (load_moved), and its rate is
 * the factor of the heaviest load present with compute and without
 * (coll_rate): the factor falls monotonically with n_net, so that is the
 * same minimum, bit for bit. */
#define LOAD_HIST_MIN 16 /* members above which a collective keeps one; below, a
                          * scan reads no more counters than the histogram's 30 */
typedef struct loadhist {
  uint32_t n[2][SC_ST_COUNT + 1]; /* [compute runs][n_net]: members with that load */
  /* Bit k of present[comp]: n[comp][k] > 0, so the heaviest load is its top
   * bit. A free entry chains the next free one (or NONE) through present[0]. */
  uint32_t present[2];
} loadhist;
_Static_assert(SC_ST_COUNT < 32, "loadhist.present has a bit per n_net");

static inline void hist_add(loadhist *h, int comp, int32_t n_net) {
  if (h->n[comp][n_net]++ == 0) h->present[comp] |= 1u << n_net;
}

static inline void hist_remove(loadhist *h, int comp, int32_t n_net) {
  if (--h->n[comp][n_net] == 0) h->present[comp] &= ~(1u << n_net);
}

/* Index of the highest set bit of x != 0. */
static inline int highest_bit(unsigned x) {
#if defined(__GNUC__)
  return 31 - __builtin_clz(x);
#else
  int i = 0;
  while (x >>= 1) i++;
  return i;
#endif
}

typedef struct event {   /* a pending end of activity `act` */
  uint32_t act, version; /* stale once the activity's version moved on */
} event;

/* Events due at one time sit in chunks of EV_PER_CHUNK, so that consecutive
 * pops read consecutive memory (and the next event is known in advance). */
#define EV_PER_CHUNK 7 /* fills 64 bytes, one cache line */

typedef struct evchunk {
  uint32_t next;        /* next chunk of the same time, or NONE; free-list link */
  uint32_t n;           /* events written */
  event ev[EV_PER_CHUNK];
} evchunk;

typedef struct evlist { /* the events due at one time, in push order */
  uint32_t head, tail;  /* chunks; head doubles as the free-list link */
  uint32_t pos;         /* next event to pop in the head chunk */
} evlist;

typedef struct tkey {   /* a pending time: heap entry and map entry */
  int64_t t;
  uint32_t list;        /* in sim.lists; NONE marks an empty map entry */
} tkey;

/* Memory counter track of a traced run: bytes allocated per simulated rank
 * along the step (memory.c's model), so the trace shows activations piling
 * up through the warm-up and draining in the cool-down. */
typedef struct memtrack {
  const sc_mem_track *hook; /* the caller's memory model; NULL: no track */
  double *bytes;      /* per simulated rank */
  uint64_t *fwd_item; /* per rank: last forward item seen, mb << 16 | chunk, +1 */
} memtrack;

/* A traced run's state: the writer (out.vt NULL when only the memory sink
 * is wanted), which simulated ranks go into the timeline, the memory track. */
typedef struct tracebuf {
  sc__trace_out out;
  uint8_t *traced; /* per simulated rank: 1 if in the timeline; NULL: every rank */
  char *note;      /* the trace's metadata on the chosen ranks; NULL: none */
  size_t note_cap;
  const sc_rank_range *ranks; /* sc_engine_opts.trace_ranks */
  size_t nranks;
  memtrack mem;
} tracebuf;

/* Collective costs repeat (every layer and micro-batch issues the same TP
 * collectives), so they are memoised per (collective, bytes, placement). */
#define COLL_MEMO 256
typedef struct coll_memo {
  double bytes, ns;
  sc_placement pl;
  int coll;
} coll_memo;

typedef struct sim {
  sc_ctx *ctx;
  const sc_workload *wl;
  const sc_cost *cost;
  int fold, interf, share;
  int learned;        /* interference model `learned` or `tree` (else `constant`) */
  int tree;           /* `tree`: gradient-boosted trees (cost->interf_tree) */
  int explicit_wl;    /* the workload names its ranks, groups and peers */
  int merged;         /* SC_WL_MERGE workload: compute ops carry tp_ns */
  int64_t stride;     /* ranks per pipeline stage: tp*cp*dp */
  uint32_t nsim;
  rstate *ranks;
  int64_t *rglobal;   /* global rank of each simulated rank */
  ginst *inst;
  uint32_t ninst;
  size_t inst_cap;    /* entries allocated for inst (at least 1 for explicit ones) */
  uint32_t *inst_of;  /* [nsim * SC_GRP_COUNT]; NULL for explicit workloads */
  uint32_t *members;
  size_t nmembers;    /* entries of members */
  activity *acts;     /* [nsim * act_stride], see act_claim */
  int64_t *act_t0;    /* per activity slot, when it started: runs that record only */
  uint32_t act_stride; /* activity slots per rank: 1 + the highest stream with ops */
  evchunk *chunks;     /* chunk pool; free ones are chained through next */
  size_t nchunks, chunks_cap;
  uint32_t free_chunk;
  evlist *lists;       /* one per pending time; free ones chained through head */
  size_t nlists, lists_cap;
  uint32_t free_list;
  tkey *times;         /* min-heap of the pending times */
  size_t ntimes, times_cap;
  tkey *tmap;          /* open-addressing map time -> list, 2^tmap_bits entries */
  unsigned tmap_bits;
  tkey last_push;      /* time and list of the last push; list NONE once dropped */
  int64_t now;
  int64_t events, ops;
  tracebuf *trace;
  sc_op_sink_fn op_sink; /* engine_int.h; NULL: none */
  void *op_sink_ud;
  /* Critical path (sc_engine_opts.critical_path): per op, by cp_off[rank *
   * SC_ST_COUNT + stream] + index, when it started and the op whose end
   * started it (CP_ID; CP_NONE: started at time 0); per rank the last op it
   * ended; cp_cur the op being finished. NULL when not recorded. */
  size_t *cp_off;
  int64_t *cp_start;
  uint64_t *cp_cause, *cp_last;
  int64_t *cp_end;       /* per rank, when its last op ended (with cp_last) */
  uint64_t cp_cur;
  int cp_want;           /* sc_engine_opts.critical_path */
  int record;            /* trace or op_sink: every op's end is noted (record_end) */
  /* No critical path, trace, op sink, merged ops or variation: the run takes
   * event_loop_plain, a copy of the per-op path in which the tests for them
   * are constants (`plain` in occupy, release, advance, finish). */
  int plain;
  sc_mem_sink_fn mem_sink; /* engine_int.h; NULL: none */
  void *mem_sink_ud;
  /* Rates the interference and NIC-sharing models give, computed once by the
   * expressions below (load_factor, compute_rate) so that a look-up returns
   * the very double the expression would: factor[net][comp][n_net] is
   * load_factor's value, comp_rate[kind] the `constant` model's rate of a
   * compute op while communication runs on its rank. */
  double factor[2][2][SC_ST_COUNT + 1];
  double comp_rate[SC_OP_KIND_COUNT];
  loadhist *hist;       /* load histograms of the running large collectives */
  size_t nhist, hist_cap;
  uint32_t free_hist;   /* free entries of hist, chained through present[0] */
  uint32_t live_hist;   /* entries in use: load_moved has nothing to do at 0 */
  coll_memo coll_memo[COLL_MEMO]; /* zeroed: n = 0 matches no real placement */
  double p2p_bytes[3], p2p_ns[3]; /* last transfer priced, by tier (SC_TIER_*); bytes -1: none */
  const sc_engine_vary *vary; /* what-if variation; NULL: none */
  int rc;
} sim;

/* A simulated rank's global rank (sim.rglobal), from its state. */
static inline int64_t rank_global(const sim *S, const rstate *r) { return S->rglobal[r - S->ranks]; }

/* ------------------------------------------------------------ event queue */

/* Events are ordered by (time, push order), which makes runs deterministic.
 * Symmetric ranks end their ops at exactly the same nanosecond, so the queue
 * holds few distinct times: unfolded, the default example keeps ~880 pending
 * events at ~14 times, and 98% of pops share the previous pop's time (counted
 * on the 48-layer, batch-384 variant). So instead of one binary heap of events
 * keyed on (time, sequence), the queue is a binary heap of distinct times, each
 * holding a FIFO list of the events due then, plus a hash map from a time to
 * its list. Appending to a FIFO keeps push order within a time, so events pop
 * in exactly the order of the (time, sequence) heap; a push or pop only
 * touches the heap when it creates or empties a time. */

/* Fibonacci hashing multiplier, 2^64 / golden ratio (Knuth, TAOCP vol. 3, 6.4). */
#define TMAP_MUL 0x9E3779B97F4A7C15ull

static size_t tmap_home(const sim *S, int64_t t) {
  return (size_t)(((uint64_t)t * TMAP_MUL) >> (64 - S->tmap_bits));
}

/* Position of time t in the map (linear probing): its entry, or the empty
 * entry where it would go. */
static size_t tmap_pos(const sim *S, int64_t t) {
  size_t mask = ((size_t)1 << S->tmap_bits) - 1, i = tmap_home(S, t);
  while (S->tmap[i].list != NONE && S->tmap[i].t != t) i = (i + 1) & mask;
  return i;
}

/* Doubles the map (it is kept at most half full, so probes stay short). */
static int tmap_grow(sim *S) {
  unsigned bits = S->tmap ? S->tmap_bits + 1 : 6;
  size_t n = (size_t)1 << bits, old_n = S->tmap ? (size_t)1 << S->tmap_bits : 0;
  tkey *old = S->tmap, *map = sc__malloc(S->ctx, n * sizeof(tkey));
  if (!map) return SC_ENOMEM;
  for (size_t i = 0; i < n; i++) map[i].list = NONE;
  S->tmap = map;
  S->tmap_bits = bits;
  for (size_t i = 0; i < old_n; i++)
    if (old[i].list != NONE) S->tmap[tmap_pos(S, old[i].t)] = old[i];
  sc__free(S->ctx, old, old_n * sizeof(tkey));
  return SC_OK;
}

/* Removes the entry at position i by shifting later entries of its probe run
 * back (no tombstones, so lookups never slow down over a long run). */
static void tmap_erase(sim *S, size_t i) {
  size_t mask = ((size_t)1 << S->tmap_bits) - 1;
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    if (S->tmap[j].list == NONE) break;
    size_t home = tmap_home(S, S->tmap[j].t);
    /* Entry j may move to the hole at i unless its home lies cyclically in (i, j]. */
    if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
      S->tmap[i] = S->tmap[j];
      i = j;
    }
  }
  S->tmap[i].list = NONE;
}

static void theap_push(sim *S, tkey k) {
  size_t i = S->ntimes++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (S->times[p].t <= k.t) break;
    S->times[i] = S->times[p];
    i = p;
  }
  S->times[i] = k;
}

static INLINE_HOT void theap_pop(sim *S) {
  tkey last = S->times[--S->ntimes];
  size_t i = 0, n = S->ntimes;
  for (;;) {
    size_t l = 2 * i + 1, m = l;
    if (l >= n) break;
    if (l + 1 < n && S->times[l + 1].t < S->times[l].t) m = l + 1;
    if (last.t <= S->times[m].t) break;
    S->times[i] = S->times[m];
    i = m;
  }
  if (n) S->times[i] = last;
}

static uint32_t chunk_new(sim *S) {
  uint32_t c = S->free_chunk;
  if (c != NONE) S->free_chunk = S->chunks[c].next;
  else {
    if (sc__grow(S->ctx, (void **)&S->chunks, sizeof(evchunk), &S->chunks_cap, S->nchunks + 1)) {
      S->rc = SC_ENOMEM;
      return NONE;
    }
    c = (uint32_t)S->nchunks++;
  }
  S->chunks[c].next = NONE;
  S->chunks[c].n = 0;
  return c;
}

/* An event past SC_TIME_MAX: the step would not be representable. */
RARE static int time_overflow(const sim *S) {
  return sc__error(S->ctx, SC_EUNSUPPORTED,
                   "the simulated step exceeds %lld ns (73 years): an op's duration or size is "
                   "out of any physical range",
                   (long long)SC_TIME_MAX);
}

/* An op longer than SC_WORK_MAX (see ir_int.h). */
RARE static int work_overflow(const sim *S, const char *what, double ns) {
  return sc__error(S->ctx, SC_EUNSUPPORTED,
                   "%s would take %.3g ns, more than %.3g ns (13 days): its size is out of any "
                   "physical range",
                   what, ns, SC_WORK_MAX);
}

/* A list for the new time t_ns, whose map entry is to go at pos, entered in
 * the map and the heap; NONE when out of memory. */
static uint32_t list_new(sim *S, int64_t t_ns, size_t pos) {
  /* Every queued time goes through here once (later pushes of the same time
   * find its list), so this bounds every event time: see SC_TIME_MAX. */
  if (SC_UNLIKELY(t_ns > SC_TIME_MAX)) {
    S->rc = time_overflow(S);
    return NONE;
  }
  if (2 * (S->ntimes + 1) > ((size_t)1 << S->tmap_bits)) {
    if (tmap_grow(S)) {
      S->rc = SC_ENOMEM;
      return NONE;
    }
    pos = tmap_pos(S, t_ns);
  }
  if (sc__grow(S->ctx, (void **)&S->times, sizeof(tkey), &S->times_cap, S->ntimes + 1)) {
    S->rc = SC_ENOMEM;
    return NONE;
  }
  uint32_t l = S->free_list;
  if (l != NONE) S->free_list = S->lists[l].head;
  else {
    if (sc__grow(S->ctx, (void **)&S->lists, sizeof(evlist), &S->lists_cap, S->nlists + 1)) {
      S->rc = SC_ENOMEM;
      return NONE;
    }
    l = (uint32_t)S->nlists++;
  }
  uint32_t c = chunk_new(S);
  if (c == NONE) {
    S->lists[l].head = S->free_list;
    S->free_list = l;
    return NONE;
  }
  S->lists[l] = (evlist){c, c, 0};
  S->tmap[pos] = (tkey){t_ns, l};
  theap_push(S, (tkey){t_ns, l});
  return l;
}

/* Queues the end of activity act (at its current version) at time t_ns. */
static INLINE_HOT void queue_push(sim *S, int64_t t_ns, uint32_t act, uint32_t version) {
  /* Symmetric ranks pop one after another and push the same end times, so
   * most pushes go to the list of the previous push: skip the map then. */
  uint32_t l = S->last_push.list;
  if (l == NONE || S->last_push.t != t_ns) {
    size_t pos = tmap_pos(S, t_ns);
    l = S->tmap[pos].list;
    if (l == NONE && (l = list_new(S, t_ns, pos)) == NONE) return;
    S->last_push = (tkey){t_ns, l};
  }
  uint32_t c = S->lists[l].tail;
  if (S->chunks[c].n == EV_PER_CHUNK) {
    uint32_t c2 = chunk_new(S);
    if (c2 == NONE) return;
    S->chunks[c].next = c2;
    S->lists[l].tail = c = c2;
  }
  evchunk *ch = &S->chunks[c];
  ch->ev[ch->n++] = (event){act, version};
}

/* The events of time top are all popped: its list, map entry and heap entry
 * go. */
static INLINE_HOT void time_spent(sim *S, tkey top) {
  tmap_erase(S, tmap_pos(S, top.t));
  theap_pop(S);
  if (S->last_push.list == top.list) S->last_push.list = NONE;
  S->lists[top.list].head = S->free_list;
  S->free_list = top.list;
}

/* time_spent out of line, for the plain event loop (see sim.plain), whose
 * frame it would crowd: there symmetric ranks end at few distinct times. */
NOINLINE static void time_spent_call(sim *S, tkey top) { time_spent(S, top); }

/* Removes the earliest event into *t_ns and *e. *next_act is the activity of
 * the event after it when that is at hand (else NONE), for prefetching. The
 * queue must not be empty; `plain` as in occupy. */
static INLINE_HOT void queue_pop(sim *S, int64_t *t_ns, event *e, uint32_t *next_act,
                                 int plain) {
  tkey top = S->times[0];
  evlist *l = &S->lists[top.list];
  uint32_t c = l->head;
  evchunk *ch = &S->chunks[c];
  *t_ns = top.t;
  *e = ch->ev[l->pos++];
  *next_act = l->pos < ch->n ? ch->ev[l->pos].act : NONE;
  if (l->pos < ch->n) return;
  /* The head chunk is drained: on to the next one, or the time is spent. */
  uint32_t next = ch->next;
  ch->next = S->free_chunk;
  S->free_chunk = c;
  if (next != NONE) {
    l->head = next;
    l->pos = 0;
    return;
  }
  if (plain) time_spent_call(S, top);
  else time_spent(S, top);
}

/* ------------------------------------------------------------ trace output */

static int64_t stage_of(const sim *S, int64_t global) { return global / S->stride; }

/* The writer of rank i's timeline, or NULL when it is not traced. */
static inline sc__trace_out *trace_to(const sim *S, uint32_t i) {
  const tracebuf *tb = S->trace;
  if (!tb->out.vt || (tb->traced && !tb->traced[i])) return NULL;
  return (sc__trace_out *)&tb->out;
}

static void trace_memory(sim *S, uint32_t rank, int64_t t_ns);

/* Appends "first-last" (or "first") to a note of cap bytes. */
static void note_range(char *note, size_t cap, int64_t first, int64_t last) {
  size_t n = strlen(note);
  if (n + 48 >= cap) { /* the note stays short: "..." marks what is left out */
    if (n + 4 < cap && strcmp(note + (n >= 3 ? n - 3 : 0), "...")) strcat(note, "...");
    return;
  }
  snprintf(note + n, cap - n, first == last ? "%s%lld" : "%s%lld-%lld", n ? "," : "",
           (long long)first, (long long)last);
}

/* Which simulated ranks the chosen ranges hold (a folded run's simulated
 * rank stands for its stage's class, explicit workloads name theirs) and the
 * note the trace's metadata carries about it. */
static int trace_select(sim *S) {
  tracebuf *tb = S->trace;
  if (!tb->ranks || !tb->nranks) return SC_OK;
  tb->traced = sc__calloc(S->ctx, S->nsim ? S->nsim : 1, 1);
  tb->note_cap = 512;
  tb->note = sc__calloc(S->ctx, tb->note_cap, 1);
  if (!tb->traced || !tb->note) return SC_ENOMEM;
  int fold = S->fold && !S->explicit_wl;
  for (size_t k = 0; k < tb->nranks; k++) {
    sc_rank_range g = tb->ranks[k];
    note_range(tb->note, 200, g.first, g.last);
    for (uint32_t i = 0; i < S->nsim; i++) {
      const rstate *r = &S->ranks[i];
      if (fold ? (int64_t)r->stage >= stage_of(S, g.first) && (int64_t)r->stage <= stage_of(S, g.last)
               : rank_global(S, r) >= g.first && rank_global(S, r) <= g.last)
        tb->traced[i] = 1;
    }
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < S->nsim; i++) n += tb->traced[i];
  size_t len = strlen(tb->note);
  if (fold)
    snprintf(tb->note + len, tb->note_cap - len,
             " of ranks 0-%lld; the run is folded (simulation.fold), so each rank is traced as "
             "its rank class: its pipeline stage's one simulated rank (stage s holds ranks "
             "s*%lld to s*%lld+%lld and is traced as rank s*%lld); %u of %u classes traced",
             (long long)(S->wl->map.world - 1), (long long)S->stride, (long long)S->stride,
             (long long)(S->stride - 1), (long long)S->stride, n, S->nsim);
  else
    snprintf(tb->note + len, tb->note_cap - len, " of ranks 0-%lld; %u of %u simulated ranks traced",
             (long long)(S->wl->map.world - 1), n, S->nsim);
  return SC_OK;
}

static int trace_begin(sim *S) {
  tracebuf *tb = S->trace;
  memtrack *mt = &tb->mem;
  const sc_workload *wl = S->wl;
  if (mt->hook) { /* synthesised workloads: the memory model knows their stages */
    mt->bytes = sc__calloc(S->ctx, S->nsim, sizeof(double));
    mt->fwd_item = sc__calloc(S->ctx, S->nsim, sizeof(uint64_t));
    if (!mt->bytes || !mt->fwd_item) return SC_ENOMEM;
  }
  int rc = trace_select(S);
  if (rc) return rc;
  for (uint32_t i = 0; i < S->nsim; i++) {
    const rstate *r = &S->ranks[i];
    sc__trace_out *o = trace_to(S, i);
    if (o) {
      char name[96];
      if (S->explicit_wl) snprintf(name, sizeof name, "rank %lld", (long long)rank_global(S, r));
      else snprintf(name, sizeof name, "rank %lld (stage %u)", (long long)rank_global(S, r), r->stage);
      o->vt->process(o, rank_global(S, r), name, mt->hook != NULL);
      for (int s = 0; s < SC_ST_COUNT; s++)
        if (s < SC_ST_BWD_RECV + 1 || r->prog->nops[s]) /* the streams it uses */
          o->vt->thread(o, rank_global(S, r), s,
                        wl->stream_name ? wl->stream_name(wl->names_ud, r->stage, s)
                                        : sc__stream_name(s));
    }
    if (!mt->hook) continue;
    mt->bytes[i] = mt->hook->static_bytes(mt->hook->ud, r->stage);
    trace_memory(S, i, 0);
  }
  return SC_OK;
}

RARE static void trace_op(sim *S, uint32_t rank, int stream, const sc_op *op, int64_t start,
                          int64_t end) {
  static const char *const phase[] = {"fwd", "bwd", "wgrad", "recompute", "step"};
  sc__trace_out *o = trace_to(S, rank);
  if (!o) return;
  const rstate *r = &S->ranks[rank];
  sc__trace_slice sl = {rank_global(S, r), stream, start, end, NULL, sc_category_key(op->cat), 0, 0, 0, 0,
                        -1.0, op->kind == SC_OP_COLL ? sc__coll_name(op->coll) : NULL};
  if (S->wl->op_name) { /* explicit workloads: the op's own name */
    sl.explicit_op = 1;
    sl.name = S->wl->op_name(S->wl->names_ud, op);
    sl.group = op->peer;
    o->vt->slice(o, &sl);
    return;
  }
  char name[64], layer[24] = "";
  if (op->layer != SC_NO_LAYER) snprintf(layer, sizeof layer, " L%u", op->layer);
  snprintf(name, sizeof name, "%s %s%s", phase[op->phase], sc__label_name(op->label), layer);
  sl.name = name;
  sl.mb = op->mb;
  sl.chunk = op->chunk;
  if (!sc__opkind_is_compute(op->kind)) sl.bytes = op->work;
  o->vt->slice(o, &sl);
}

static void trace_memory(sim *S, uint32_t rank, int64_t t_ns) {
  if (S->mem_sink)
    S->mem_sink(S->mem_sink_ud, S->rglobal[rank], S->ranks[rank].stage, t_ns,
                S->trace->mem.bytes[rank]);
  sc__trace_out *o = trace_to(S, rank);
  if (o) o->vt->counter(o, S->rglobal[rank], t_ns, S->trace->mem.bytes[rank]);
}

/* A forward item (micro-batch, chunk) allocates its stored activations when
 * its first compute op starts; its backward frees them when its last compute
 * op (backward, weight-grad or recompute phase) ends. A split backward
 * (item_wgrad_bytes > 0) frees them in two steps, as memory.c counts them:
 * all but the weight-grad inputs when its input-grad pass ends, those when
 * its weight-grad pass (the weight-grad phase ops) ends. What the item keeps
 * to the step's end (item_kept_bytes) is never freed. */
static void trace_memory_op(sim *S, uint32_t rank, const sc_op *op, int64_t start) {
  memtrack *mt = &S->trace->mem;
  rstate *r = &S->ranks[rank];
  uint64_t item = ((uint64_t)op->mb << 16 | op->chunk) + 1;
  if (op->phase == SC_PH_FWD) {
    if (mt->fwd_item[rank] == item) return;
    mt->fwd_item[rank] = item;
    mt->bytes[rank] += mt->hook->item_bytes(mt->hook->ud, r->stage, op->chunk);
    trace_memory(S, rank, start);
    return;
  }
  if (op->phase == SC_PH_STEP) return;
  double wgrad = mt->hook->item_wgrad_bytes
                     ? mt->hook->item_wgrad_bytes(mt->hook->ud, r->stage, op->chunk)
                     : 0.0;
  int w_pass = wgrad > 0 && op->phase == SC_PH_WGRAD;
  const sc_program *p = r->prog;
  uint32_t next = r->head[SC_ST_COMPUTE] + 1;
  if (next < p->nops[SC_ST_COMPUTE]) {
    const sc_op *n = &p->ops[SC_ST_COMPUTE][next];
    if (n->phase != SC_PH_FWD && n->phase != SC_PH_STEP && n->mb == op->mb &&
        n->chunk == op->chunk && (wgrad <= 0 || (n->phase == SC_PH_WGRAD) == w_pass))
      return;
  }
  double item_bytes = mt->hook->item_bytes(mt->hook->ud, r->stage, op->chunk);
  if (mt->hook->item_kept_bytes) /* kept to the step's end */
    item_bytes -= mt->hook->item_kept_bytes(mt->hook->ud, r->stage, op->chunk);
  mt->bytes[rank] -= wgrad <= 0 ? item_bytes : w_pass ? wgrad : item_bytes - wgrad;
  trace_memory(S, rank, S->now);
}

static void trace_end(sim *S) {
  sc__trace_out *o = &S->trace->out;
  if (o->vt) o->vt->end(o, S->trace->note);
}

/* ------------------------------------------------------------ mapping, groups */

static int64_t node_of(const sim *S, int64_t global) {
  return global / S->wl->map.gpus_per_node;
}

/* The group instance of `kind` that global rank r belongs to: its key (-1:
 * r is in none), and its members as first + i * step, i < n (ascending, so
 * nodes change monotonically). Ranks are tp fastest, then cp, dp, pp; j is
 * the rank's index in the stage's dp x cp block, c and d its cp and dp
 * indices (see SC_GROUP_LIST). */
typedef struct gspan {
  int64_t key, first, step, n;
} gspan;

static gspan group_of(const sim *S, int kind, int64_t r) {
  const sc_mapping *m = &S->wl->map;
  int64_t tp = m->tp, cp = m->cp, dp = m->dp, stage = stage_of(S, r), base = stage * S->stride;
  int64_t tpi = r % tp, j = (r % S->stride) / tp, c = j % cp, d = j / cp;
  int64_t k = m->cp_in, F = m->shard * cp; /* shard block in dp x cp indices */
  gspan g = {-1, 0, 1, 1};
  switch (kind) {
  case SC_GRP_TP:
    g = (gspan){r / tp, r - tpi, 1, tp};
    break;
  case SC_GRP_DP:
    g = (gspan){stage * tp + tpi, base + tpi, tp, cp * dp};
    break;
  case SC_GRP_CP:
    g = (gspan){(stage * dp + d) * tp + tpi, base + d * cp * tp + tpi, tp, cp};
    break;
  case SC_GRP_CP_IN: {
    int64_t cb = c / k;
    g = (gspan){((stage * dp + d) * (cp / k) + cb) * tp + tpi, base + (d * cp + cb * k) * tp + tpi,
                tp, k};
    break;
  }
  case SC_GRP_CP_OUT: {
    int64_t ci = c % k;
    g = (gspan){((stage * dp + d) * k + ci) * tp + tpi, base + (d * cp + ci) * tp + tpi, k * tp,
                cp / k};
    break;
  }
  case SC_GRP_SHARD: {
    int64_t blk = j / F;
    g = (gspan){(stage * (dp * cp / F) + blk) * tp + tpi, base + blk * F * tp + tpi, tp, F};
    break;
  }
  case SC_GRP_REPLICA: {
    int64_t pos = j % F;
    g = (gspan){(stage * F + pos) * tp + tpi, base + pos * tp + tpi, F * tp, dp * cp / F};
    break;
  }
  /* The expert grid (Megatron-Core): a stage's tp x cp x dp ranks, index jj,
   * as etp fastest, then ep, then expert-data-parallel. */
  case SC_GRP_EP: {
    int64_t jj = r % S->stride, e = m->etp, n = m->ep, et = jj % e, ed = jj / (e * n);
    g = (gspan){stage * (S->stride / n) + ed * e + et, base + ed * e * n + et, e, n};
    break;
  }
  case SC_GRP_ETP: {
    int64_t et = (r % S->stride) % m->etp;
    g = (gspan){r / m->etp, r - et, 1, m->etp};
    break;
  }
  case SC_GRP_EDP: {
    int64_t jj = r % S->stride, blk = m->ep * m->etp;
    g = (gspan){stage * blk + jj % blk, base + jj % blk, blk, S->stride / blk};
    break;
  }
  case SC_GRP_EMBED: /* same position in the first and last stage */
    if (!S->wl->tied_embed_sync || (stage != 0 && stage != m->pp - 1)) break;
    g = (gspan){r % S->stride, r % S->stride, (m->pp - 1) * S->stride, m->pp > 1 ? 2 : 1};
    if (g.step == 0) g.step = 1;
    break;
  case SC_GRP_MIRROR: { /* stage s and pp - 1 - s (DualPipe: pp even) */
    int64_t lo = stage < m->pp - 1 - stage ? stage : m->pp - 1 - stage;
    if (m->pp < 2 || m->pp % 2) break;
    g = (gspan){lo * S->stride + r % S->stride, lo * S->stride + r % S->stride,
                (m->pp - 1 - 2 * lo) * S->stride, 2};
    break;
  }
  }
  return g;
}

/* Key of the group instance of `kind` that global rank r belongs to, or -1. */
static int64_t group_key(const sim *S, int kind, int64_t r) { return group_of(S, kind, r).key; }

/* Number of instances of group kind `kind` (keys are below it). */
static int64_t group_nkeys(const sim *S, int kind) {
  const sc_mapping *m = &S->wl->map;
  int64_t tp = m->tp, cp = m->cp, dp = m->dp, pp = m->pp;
  switch (kind) {
  case SC_GRP_TP: return m->world / tp;
  case SC_GRP_DP: return pp * tp;
  case SC_GRP_CP: return pp * dp * tp;
  case SC_GRP_CP_IN: return pp * dp * (cp / m->cp_in) * tp;
  case SC_GRP_CP_OUT: return pp * dp * m->cp_in * tp;
  case SC_GRP_SHARD: return pp * (dp / m->shard) * tp;
  case SC_GRP_REPLICA: return pp * m->shard * cp * tp;
  case SC_GRP_EP: return pp * (S->stride / m->ep);
  case SC_GRP_ETP: return m->world / m->etp;
  case SC_GRP_EDP: return pp * m->ep * m->etp;
  case SC_GRP_MIRROR: return pp / 2 * S->stride;
  default: return S->stride;
  }
}

/* Placement of the full logical group of `kind` containing global rank r. */
static sc_placement group_placement(const sim *S, int kind, int64_t r) {
  gspan g = group_of(S, kind, r);
  sc_placement_acc acc;
  sc__placement_begin(&acc, S->cost->nodes_per_leaf);
  for (int64_t i = 0; i < g.n; i++) sc__placement_add(&acc, node_of(S, g.first + i * g.step));
  return acc.pl;
}

/* Explicit workloads: the groups as given (members are simulated ranks). */
static int copy_groups(sim *S) {
  const sc_workload *wl = S->wl;
  S->ninst = wl->ngroups;
  S->inst_cap = wl->ngroups ? wl->ngroups : 1;
  S->inst = sc__calloc(S->ctx, S->inst_cap, sizeof(ginst));
  size_t n = 0;
  for (uint32_t g = 0; g < wl->ngroups; g++) {
    size_t end = (size_t)wl->groups[g].mem_off + wl->groups[g].nmem;
    if (end > n) n = end;
  }
  S->nmembers = n ? n : 1;
  S->members = sc__malloc(S->ctx, sizeof(uint32_t) * S->nmembers);
  if (!S->inst || !S->members) return SC_ENOMEM;
  if (n) memcpy(S->members, wl->group_members, sizeof(uint32_t) * n);
  for (uint32_t g = 0; g < wl->ngroups; g++) {
    const sc_xgroup *x = &wl->groups[g];
    for (uint32_t i = 0; i < x->nmem; i++)
      if (S->members[x->mem_off + i] >= S->nsim)
        return sc__error(S->ctx, SC_EINVAL, "group %u names simulated rank %u of %u", g,
                         S->members[x->mem_off + i], S->nsim);
    S->inst[g].mem_off = x->mem_off;
    S->inst[g].nmem = x->nmem;
    S->inst[g].pl = (sc_placement){x->n, x->nodes, x->per_node, x->leaves};
  }
  return SC_OK;
}

static int build_groups(sim *S) {
  if (S->explicit_wl) return copy_groups(S);
  size_t total_inst = 0;
  int64_t base[SC_GRP_COUNT];
  unsigned used = 0; /* group kinds some collective names: only those get instances */
  for (int64_t s = 0; s < S->wl->nprogs; s++) used |= S->wl->progs[s].groups_used;
  for (int k = 0; k < SC_GRP_COUNT; k++) {
    base[k] = (int64_t)total_inst;
    if (used & (1u << k)) total_inst += (size_t)group_nkeys(S, k);
  }
  S->ninst = (uint32_t)total_inst;
  S->inst_cap = total_inst ? total_inst : 1; /* no collective at all: one unused */
  S->inst = sc__calloc(S->ctx, S->inst_cap, sizeof(ginst));
  S->inst_of = sc__malloc(S->ctx, sizeof(uint32_t) * S->nsim * SC_GRP_COUNT);
  S->nmembers = (size_t)S->nsim * SC_GRP_COUNT;
  S->members = sc__malloc(S->ctx, sizeof(uint32_t) * S->nmembers);
  if (!S->inst || !S->inst_of || !S->members) return SC_ENOMEM;
  for (uint32_t i = 0; i < S->nsim; i++) {
    for (int k = 0; k < SC_GRP_COUNT; k++) {
      int64_t key = used & (1u << k) ? group_key(S, k, S->rglobal[i]) : -1;
      uint32_t id = key < 0 ? NONE : (uint32_t)(base[k] + key);
      S->inst_of[(size_t)i * SC_GRP_COUNT + k] = id;
      if (id != NONE) S->inst[id].nmem++;
    }
  }
  uint32_t off = 0;
  for (uint32_t g = 0; g < S->ninst; g++) {
    S->inst[g].mem_off = off;
    off += S->inst[g].nmem;
    S->inst[g].nmem = 0;
  }
  for (uint32_t i = 0; i < S->nsim; i++) {
    for (int k = 0; k < SC_GRP_COUNT; k++) {
      uint32_t id = S->inst_of[(size_t)i * SC_GRP_COUNT + k];
      if (id == NONE) continue;
      ginst *g = &S->inst[id];
      if (g->nmem == 0) g->pl = group_placement(S, k, S->rglobal[i]);
      S->members[g->mem_off + g->nmem++] = i;
    }
  }
  return SC_OK;
}

/* ------------------------------------------------------------ activities */

/* A new activity of `type` (fields a, b, sb and net as in activity) for op,
 * that occupies `stream` of `rank` (for a collective, of its first member;
 * for a transfer, of the sender). A stream runs one activity at a time, so
 * every (rank, stream) owns one fixed slot: no allocation, and an op's
 * activity sits next to its rank's previous ones. The version goes up on
 * every claim and release, so events of earlier activities no longer match.
 * Its work, rate and times are start's to set. */
static inline uint32_t act_claim(sim *S, uint32_t rank, int stream, int type, uint32_t a,
                                 uint32_t b, int sb, int net) {
  uint32_t id = rank * S->act_stride + (uint32_t)stream;
  activity *x = &S->acts[id];
  x->version++;
  x->type = (uint8_t)type;
  x->sa = (uint8_t)stream;
  x->sb = (uint8_t)sb;
  x->net = (uint8_t)net;
  x->a = a;
  x->b = b;
  return id;
}

/* The op at the head of stream s of simulated rank `rank`: the one it runs
 * or waits at. */
static inline const sc_op *head_op(const sim *S, uint32_t rank, int s) {
  const rstate *r = &S->ranks[rank];
  return &r->prog->ops[s][r->head[s]];
}

/* The op activity a runs: its owner's head op on its stream (a transfer's
 * is its sender's), or for a collective the one its instance started. */
static inline const sc_op *act_op(const sim *S, const activity *a) {
  return a->type == ACT_COLL ? S->inst[a->a].op[a->sa] : head_op(S, a->a, a->sa);
}

static void act_release(sim *S, uint32_t id) { S->acts[id].version++; }

/* sc__opkind_is_compute, as a table here: the engine asks twice per op. */
static const unsigned char op_kind_compute[SC_OP_KIND_COUNT] = {
#define SC_X_C(id, name, c) c,
    SC_OPKIND_LIST(SC_X_C)
#undef SC_X_C
};
/* Op kinds are valid wherever an op is built (the builders set them from
 * the enum; sc__workload_check verifies them), so no bounds test here. */
static inline int op_is_compute(uint8_t kind) { return op_kind_compute[kind]; }

/* Off-GPU work: host time (replayed traces, the CPU optimizer step) and
 * copies to and from host memory (a copy engine). Neither is a kernel nor
 * NCCL traffic, so neither slows nor is slowed by one, and a slower GPU
 * (variation) does not stretch them. */
static inline int op_off_gpu(uint8_t kind) { return kind == SC_OP_HOST || kind == SC_OP_MEMCPY; }

/* Category rank r's time counts under right now. */
static int rank_category(const rstate *r) {
  if (r->n_comp > 0) return r->compute_cat;
  if (r->n_cat[SC_CAT_TP]) return SC_CAT_TP;
  if (r->n_cat[SC_CAT_CP]) return SC_CAT_CP;
  if (r->n_cat[SC_CAT_EP]) return SC_CAT_EP;
  if (r->n_cat[SC_CAT_PP]) return SC_CAT_PP;
  if (r->n_cat[SC_CAT_DP]) return SC_CAT_DP;
  /* Only off-GPU ops (host-memory offload, synth/offload.c) carry these
   * categories off the compute stream: an exposed optimizer copy or CPU
   * step is optimizer time, an exposed activation copy compute time. */
  if (r->n_cat[SC_CAT_OPTIMIZER]) return SC_CAT_OPTIMIZER;
  if (r->n_cat[SC_CAT_COMPUTE]) return SC_CAT_COMPUTE;
  return SC_CAT_BUBBLE;
}

static inline void account(sim *S, rstate *r) {
  if (S->now > r->last_ns) {
    r->acc[rank_category(r)] += (double)(S->now - r->last_ns);
    r->last_ns = S->now;
  }
}

/* The factor a member with n_net network transfers (and compute running
 * there when comp) puts on the rate of a transfer (net) or of an activity off
 * the network. Non-increasing in n_net (see loadhist). */
static inline double load_factor(const sim *S, int32_t n_net, int comp, int net) {
  double f = 1.0;
  if (net && S->share && n_net > 1) f /= (double)n_net;
  if (S->interf && comp) f /= 1.0 + S->cost->p.interference_comm;
  return f;
}

static inline double member_factor(const sim *S, const rstate *r, int net) {
  return S->factor[net][r->n_comp > 0][r->n_net];
}

/* The rate of a collective with a load histogram: the smallest factor of the
 * loads present (the heaviest with compute and the heaviest without). */
static double coll_rate(const sim *S, const loadhist *h, int net) {
  double rate = 1.0;
  for (int comp = 0; comp < 2; comp++) {
    if (!h->present[comp]) continue;
    double f = S->factor[net][comp][highest_bit(h->present[comp])];
    if (f < rate) rate = f;
  }
  return rate;
}

/* Slowdown s of compute op `op` on rank r while communication runs there: the
 * `constant` model's value for its kernel class, or the `learned` model's,
 * the largest over the communication ops running on r (interf.c). */
static double compute_slowdown(const sim *S, const rstate *r, const sc_op *op) {
  const sc_cost_params *p = &S->cost->p;
  if (!S->learned)
    return sc__interf_constant_s(p, op->kind);
  double s = 0;
  for (unsigned run = r->running; run; run &= run - 1) {
    const activity *c = &S->acts[r->act[lowest_bit(run)]];
    const sc_op *cop = act_op(S, c);
    if (c->type == ACT_COMPUTE || op_off_gpu(cop->kind)) continue;
    sc_interf_comm comm = {SC_ICOLL_P2P, cop->work, c->net, 2};
    if (c->type == ACT_COLL) {
      comm.coll = sc__interf_coll_of(cop->coll);
      comm.group = S->inst[c->a].pl.n;
    }
    double v = S->tree ? sc__interf_tree_s(S->cost->interf_tree, op->kind, op->work, &comm)
                       : sc__interf_learned_s(S->cost->interf_w, op->kind, op->work, &comm);
    if (v > s) s = v;
  }
  return s;
}

/* The rate of compute op `op` on rank r while communication runs there. */
static double compute_rate(const sim *S, const rstate *r, const sc_op *op) {
  return 1.0 / (1.0 + compute_slowdown(S, r, op));
}

/* The rate tables (sim.factor, sim.comp_rate); a NULL rank is enough for
 * the `constant` model, which looks at the op's kind only. */
static void rate_tables(sim *S) {
  for (int net = 0; net < 2; net++)
    for (int comp = 0; comp < 2; comp++)
      for (int n = 0; n <= SC_ST_COUNT; n++) S->factor[net][comp][n] = load_factor(S, n, comp, net);
  for (int k = 0; k < SC_OP_KIND_COUNT; k++) {
    sc_op op = {0};
    op.kind = (uint8_t)k;
    S->comp_rate[k] = S->learned ? 0.0 : compute_rate(S, NULL, &op);
  }
}

RARE static double learned_rate(const sim *S, const rstate *r, const sc_op *op) {
  return compute_rate(S, r, op);
}

static inline double act_rate(const sim *S, const activity *a) {
  switch (a->type) {
  case ACT_COMPUTE: {
    const rstate *r = &S->ranks[a->a];
    if (!S->interf || r->n_comm <= 0) return 1.0;
    const sc_op *op = act_op(S, a);
    if (op->kind == SC_OP_MEMCPY) return 1.0;
    return S->learned ? learned_rate(S, r, op) : S->comp_rate[op->kind];
  }
  case ACT_COLL: {
    /* Off the network without interference, every factor is 1. */
    if (!S->interf && !(a->net && S->share)) return 1.0;
    if (a->b != NONE) return coll_rate(S, &S->hist[a->b], a->net);
    const ginst *g = &S->inst[a->a];
    double rate = 1.0;
    for (uint32_t i = 0; i < g->nmem; i++) {
      double f = member_factor(S, &S->ranks[S->members[g->mem_off + i]], a->net);
      if (f < rate) rate = f;
    }
    return rate;
  }
  default: {
    double fa = member_factor(S, &S->ranks[a->a], a->net);
    double fb = member_factor(S, &S->ranks[a->b], a->net);
    return fa < fb ? fa : fb;
  }
  }
}

static INLINE_HOT void schedule_end(sim *S, uint32_t id) {
  activity *a = &S->acts[id];
  /* Most activities run at rate 1, where the quotient is remaining itself. */
  double dt = a->rate == 1.0 ? a->remaining : a->remaining / a->rate;
  queue_push(S, S->now + sc__duration_ns(dt), id, a->version);
}

/* Activity id runs at `rate` from now on: its work so far at the old rate is
 * done, and its end is queued again (the old event goes stale). Out of line:
 * most rescales find the rate unchanged, and keeping the queue push out of
 * rescale_rank keeps that loop's frame small. */
NOINLINE static void rerate(sim *S, uint32_t id, double rate) {
  activity *a = &S->acts[id];
  a->remaining -= (double)(S->now - a->last_ns) * a->rate;
  if (a->remaining < 0) a->remaining = 0;
  a->last_ns = S->now;
  a->rate = rate;
  a->version++;
  schedule_end(S, id);
}

/* The work of refresh_rates on rank r: re-rates and re-queues what changed
 * among the running activities of the streams in `run` (bits). */
NOINLINE static void rescale_rank(sim *S, const rstate *r, unsigned run) {
  for (; run; run &= run - 1) {
    uint32_t id = r->act[lowest_bit(run)];
    const activity *a = &S->acts[id];
    if (!S->interf && !a->net) continue;
    double rate = act_rate(S, a);
    if (rate != a->rate) rerate(S, id, rate);
  }
}

/* Rescales every running activity on rank r whose rate changed, but the one
 * on stream `self` (SC_ST_COUNT: none), which has just been started and rated
 * (start) after every counter it depends on was set: looking at it again
 * would find the same rate. Called after the counters of r changed. Without
 * interference an activity's rate can only differ from 1 through NIC sharing,
 * so activities off the network keep rate 1 and are skipped (rescale_rank),
 * and so is the whole rank when nothing of it is on the network: the common
 * case, hence the inlined test. Skipping an activity whose rate cannot have
 * changed leaves every re-queue, and so the order of events, as it was.
 * Compute ops refresh only when compute on the rank starts or stops (see
 * refresh_compute). */
static inline void refresh_rates(sim *S, uint32_t rank, int self) {
  rstate *r = &S->ranks[rank];
  unsigned run = r->running & ~(1u << self);
  if (run && (S->interf || (r->n_net > 0 && S->share))) rescale_rank(S, r, run);
}

/* After an ACT_COMPUTE activity of op (a kernel, host time or a host copy)
 * started on `stream` of rank r (its bit set) or ended there (stream
 * SC_ST_COUNT; its bit cleared). Of the inputs of any rate such an op changes
 * only whether compute runs on r (member factors): no compute rate depends on
 * another compute op (`constant` looks at n_comm, `learned` at the
 * communication running), and off-GPU ops change no counter a rate reads. So
 * only a kernel that is now the rank's only one (n_comp 1 after a start, 0
 * after an end) can change a rate, and only with interference: without it,
 * only n_net matters, and every change of n_net is followed by a refresh of
 * each rank involved before any other op starts or ends. */
static inline void refresh_compute(sim *S, uint32_t rank, int stream, const sc_op *op) {
  if (S->interf && op_is_compute(op->kind) &&
      S->ranks[rank].n_comp == (stream != SC_ST_COUNT))
    refresh_rates(S, rank, stream);
}

/* Rank r's load went from (old_net, old_comp) to its current one: moves it
 * in the histograms of the large collectives running on r. */
static void load_moved(sim *S, const rstate *r, int32_t old_net, int old_comp) {
  int comp = r->n_comp > 0;
  for (unsigned run = r->running; run; run &= run - 1) {
    const activity *a = &S->acts[r->act[lowest_bit(run)]];
    if (a->type != ACT_COLL || a->b == NONE) continue;
    loadhist *h = &S->hist[a->b];
    hist_remove(h, old_comp, old_net);
    hist_add(h, comp, r->n_net);
  }
}

/* After a change of r's counters from (old_net, old_comp). */
static inline void load_check(sim *S, const rstate *r, int32_t old_net, int old_comp) {
  if (SC_UNLIKELY(S->live_hist) && (r->n_net != old_net || (r->n_comp > 0) != old_comp))
    load_moved(S, r, old_net, old_comp);
}

/* Gives collective activity a (just started on all its members) a load
 * histogram of its members when it is large and its rate can vary. */
static void hist_attach(sim *S, activity *a, const ginst *g) {
  if (g->nmem <= LOAD_HIST_MIN || (!S->interf && !(a->net && S->share))) return;
  uint32_t h = S->free_hist;
  if (h != NONE) S->free_hist = S->hist[h].present[0];
  else {
    if (sc__grow(S->ctx, (void **)&S->hist, sizeof(loadhist), &S->hist_cap, S->nhist + 1)) {
      S->rc = SC_ENOMEM;
      return;
    }
    h = (uint32_t)S->nhist++;
  }
  loadhist *lh = &S->hist[h];
  memset(lh, 0, sizeof *lh);
  for (uint32_t i = 0; i < g->nmem; i++) {
    const rstate *r = &S->ranks[S->members[g->mem_off + i]];
    hist_add(lh, r->n_comp > 0, r->n_net);
  }
  a->b = h;
  S->live_hist++;
}

static void hist_detach(sim *S, activity *a) {
  if (a->b == NONE) return;
  S->hist[a->b].present[0] = S->free_hist;
  S->free_hist = a->b;
  a->b = NONE;
  S->live_hist--;
}

/* Marks (rank, stream) as running activity id and updates its counters. */
/* An op's identity on the critical path: simulated rank, stream, index. */
#define CP_NONE UINT64_MAX
#define CP_ID(rank, stream, idx) \
  (((uint64_t)(rank) << 32) | ((uint64_t)(stream) << 28) | (uint64_t)(idx))

/* `plain` (a constant in each caller) says the run is sim.plain: the tests
 * for what it has none of fold away. */
static inline void occupy(sim *S, uint32_t rank, int stream, uint32_t id, const sc_op *op,
                          int net, int plain) {
  rstate *r = &S->ranks[rank];
  if (!plain && S->cp_start) { /* started now, by the end of the op being finished */
    size_t k = S->cp_off[(size_t)rank * SC_ST_COUNT + (size_t)stream] + r->head[stream];
    S->cp_start[k] = S->now;
    S->cp_cause[k] = S->cp_cur;
  }
  account(S, r);
  r->st[stream] = ST_RUN;
  r->running |= (uint16_t)(1u << stream);
  r->act[stream] = id;
  /* Cached for rank_category: the category of the op this stream runs. */
  if (stream == SC_ST_COMPUTE) r->compute_cat = op->cat;
  int32_t old_net = r->n_net;
  int old_comp = r->n_comp > 0;
  if (op_is_compute(op->kind)) r->n_comp++;
  else {
    /* Host time (replayed traces) is neither: it slows no kernel. */
    r->n_comm += !op_off_gpu(op->kind);
    r->n_cat[op->cat]++;
    if (net) r->n_net++;
  }
  /* A collective being started has no histogram yet (hist_attach). */
  load_check(S, r, old_net, old_comp);
}

/* Stream s of r waits on op idx of stream d: enters d's waiters in order of
 * the op waited on. */
static void wait_on(rstate *r, int s, uint32_t d, uint32_t idx) {
  uint8_t *link = &r->first_waiter[d];
  while (*link != NO_STREAM && r->wait_idx[*link] <= idx) link = &r->next_waiter[*link];
  r->next_waiter[s] = *link;
  *link = (uint8_t)s;
  r->wait_idx[s] = idx;
  r->wake_head[d] = r->wait_idx[r->first_waiter[d]] + 1;
}

/* Marks ready the streams of r that wait on stream d and whose op is done
 * (head[d] >= wake_head[d]: at least the first one's). */
static inline void wake_waiters(rstate *r, int d) {
  int s = r->first_waiter[d];
  do {
    r->ready |= (uint16_t)(1u << s);
    s = r->next_waiter[s];
  } while (s != NO_STREAM && r->head[d] > r->wait_idx[s]);
  r->first_waiter[d] = (uint8_t)s;
  r->wake_head[d] = s == NO_STREAM ? NONE : r->wait_idx[s] + 1;
}

/* What a recording run notes of an op that ends now (see sim.record): its
 * slice and memory in the trace, the op sink. */
RARE static void record_end(sim *S, uint32_t rank, int stream, const sc_op *op, int64_t start) {
  const rstate *r = &S->ranks[rank];
  if (S->trace) {
    trace_op(S, rank, stream, op, start, S->now);
    if (stream == SC_ST_COMPUTE && S->trace->mem.hook) trace_memory_op(S, rank, op, start);
  }
  if (S->op_sink) S->op_sink(S->op_sink_ud, rank_global(S, r), r->stage, stream, op->cat, start, S->now);
}

static INLINE_HOT void release(sim *S, uint32_t rank, int stream, const sc_op *op, int net,
                               int64_t start, int plain) {
  rstate *r = &S->ranks[rank];
  account(S, r);
  if (!plain && SC_UNLIKELY(S->record)) record_end(S, rank, stream, op, start);
  if (!plain && S->cp_last) {
    S->cp_last[rank] = CP_ID(rank, stream, r->head[stream]);
    S->cp_end[rank] = S->now;
  }
  r->st[stream] = ST_IDLE;
  r->running &= (uint16_t)~(1u << stream);
  r->head[stream]++;
  r->ready |= (uint16_t)(1u << stream);
  if (r->head[stream] >= r->wake_head[stream]) wake_waiters(r, stream);
  S->ops++;
  int32_t old_net = r->n_net;
  int old_comp = r->n_comp > 0;
  if (op_is_compute(op->kind)) {
    r->n_comp--;
    /* A merged op spent tp_ns waiting for inlined TP collectives: exposed
     * TP time, counted as the op's category while it ran. Whole ns, so the
     * sums stay exact. */
    if (!plain && S->merged && op->tp_ns) {
      r->acc[op->cat] -= (double)op->tp_ns;
      r->acc[SC_CAT_TP] += (double)op->tp_ns;
    }
  } else {
    r->n_comm -= !op_off_gpu(op->kind);
    r->n_cat[op->cat]--;
    if (net) r->n_net--;
  }
  /* An ending collective has left the histograms (hist_detach). */
  load_check(S, r, old_net, old_comp);
}

static INLINE_HOT void start(sim *S, uint32_t id, double work_ns) {
  activity *a = &S->acts[id];
  a->remaining = work_ns;
  a->last_ns = S->now;
  if (S->act_t0) S->act_t0[id] = S->now;
  a->rate = act_rate(S, a);
  schedule_end(S, id);
}

/* What-if variation: rank i's compute speed for an op of `kind` (its speed
 * factor, times the other GPU's speed for the kind under gpu_mix), and the
 * speed of its link of the given tier (the NIC across nodes, else NVLink). A
 * static factor on the work is the same as one on the rate. */
static double vary_compute(const sc_engine_vary *v, uint32_t i, int kind) {
  double f = v->speed[i];
  if (v->mix && v->mix[i]) f *= v->mix_speed[kind];
  return f;
}

static double vary_link(const sc_engine_vary *v, uint32_t i, int net) {
  return net ? v->nic[i] : v->nvlink[i];
}

static INLINE_HOT void start_compute(sim *S, uint32_t rank, int stream, const sc_op *op,
                                     int plain) {
  uint32_t id = act_claim(S, rank, stream, ACT_COMPUTE, rank, NONE, 0, 0);
  occupy(S, rank, stream, id, op, 0, plain);
  start(S, id,
        !plain && S->vary && !op_off_gpu(op->kind)
            ? op->work / vary_compute(S->vary, rank, op->kind)
            : op->work);
  refresh_compute(S, rank, stream, op);
}

static double collective_ns(sim *S, int coll, double bytes, const sc_placement *pl) {
  uint64_t bits; /* the value's bits: a conversion of a huge size would be undefined */
  memcpy(&bits, &bytes, sizeof bits);
  uint64_t h = bits * 0x9E3779B97F4A7C15ull ^ (uint64_t)pl->n * 0xC2B2AE3D27D4EB4Full ^
               (uint64_t)pl->nodes * 0x165667B19E3779F9ull ^ (uint64_t)pl->per_node * 31u ^
               (uint64_t)coll ^ (uint64_t)pl->leaves * 0x27D4EB2F165667C5ull;
  /* Mix the low bits (coll, per_node) into the high ones the index uses:
   * without it an all-gather and a reduce-scatter of one size (every SP
   * layer) shared a slot and evicted each other (SplitMix64's finaliser). */
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  coll_memo *e = &S->coll_memo[(h >> 40) % COLL_MEMO];
  if (e->coll == coll && e->bytes == bytes && e->pl.n == pl->n && e->pl.nodes == pl->nodes &&
      e->pl.per_node == pl->per_node && e->pl.leaves == pl->leaves)
    return e->ns;
  e->coll = coll;
  e->bytes = bytes;
  e->pl = *pl;
  e->ns = coll == SC_COLL_COUNT ? sc__ep_deepep_ns(S->cost, bytes, pl)
                                : S->cost->comm->coll_ns(S->cost, coll, bytes, pl);
  if (SC_UNLIKELY(!(e->ns <= SC_WORK_MAX))) { /* a size beyond any physical range */
    S->rc = work_overflow(S, "a collective", e->ns);
    e->ns = 0;
  }
  return e->ns;
}

static void start_collective(sim *S, uint32_t gid, int stream, const sc_op *op) {
  ginst *g = &S->inst[gid];
  uint32_t id = act_claim(S, S->members[g->mem_off], stream, ACT_COLL, gid, NONE, 0,
                          g->pl.nodes > 1);
  g->op[stream] = op; /* act_op */
  activity *a = &S->acts[id];
  for (uint32_t i = 0; i < g->nmem; i++)
    occupy(S, S->members[g->mem_off + i], stream, id, op, a->net, 0);
  hist_attach(S, a, g);
  /* MoE dispatch / combine with DeepEP: its own price (cost/comm_ep.c),
   * memoised under the one value no collective kind has. */
  int coll = op->coll == SC_COLL_ALLTOALL && op->group == SC_GRP_EP && S->cost->moe_deepep
                 ? SC_COLL_COUNT
                 : op->coll;
  double ns = collective_ns(S, coll, op->work, &g->pl);
  if (S->vary) { /* the slowest link of a simulated member sets the pace */
    double f = 1.0;
    for (uint32_t i = 0; i < g->nmem; i++) {
      double x = vary_link(S->vary, S->members[g->mem_off + i], a->net);
      if (x < f) f = x;
    }
    ns /= f;
  }
  start(S, id, ns);
  for (uint32_t i = 0; i < g->nmem; i++) refresh_rates(S, S->members[g->mem_off + i], stream);
}

/* Simulated index of the rank `delta` stages away (with wrap-around). */
static uint32_t peer_of(const sim *S, uint32_t rank, int delta) {
  int64_t pp = S->wl->map.pp;
  int64_t st = S->ranks[rank].stage;
  int64_t st2 = ((st + delta) % pp + pp) % pp;
  if (S->fold) return (uint32_t)st2;
  int64_t g = S->rglobal[rank] + (st2 - st) * S->stride;
  if (S->vary && S->vary->n != (size_t)S->wl->map.world) {
    /* A variation's ranks are closed under the pipeline replica: the peer is
     * simulated (sc__variation_plan); find it among the ascending ranks. */
    size_t lo = 0, hi = S->vary->n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (S->vary->global[mid] < g) lo = mid + 1;
      else hi = mid;
    }
    return (uint32_t)lo;
  }
  return (uint32_t)g;
}

static void start_p2p(sim *S, uint32_t snd, int ss, uint32_t rcv, int rs, const sc_op *op) {
  int64_t node_s = node_of(S, S->rglobal[snd]), node_r = node_of(S, S->rglobal[rcv]);
  uint32_t id = act_claim(S, snd, ss, ACT_P2P, snd, rcv, rs, node_s != node_r);
  activity *a = &S->acts[id];
  occupy(S, snd, ss, id, op, a->net, 0);
  occupy(S, rcv, rs, id, head_op(S, rcv, rs), a->net, 0);
  /* The tier the transfer crosses: a node's NVLink, a leaf, or the spine. */
  int tier = SC_TIER_NODE;
  if (a->net) {
    int64_t npl = S->cost->nodes_per_leaf;
    tier = npl > 0 && node_s / npl != node_r / npl ? SC_TIER_SPINE : SC_TIER_LEAF;
  }
  /* A job's pipeline messages all have one size: remember the last price. */
  if (S->p2p_bytes[tier] != op->work) {
    S->p2p_bytes[tier] = op->work;
    S->p2p_ns[tier] = S->cost->comm->p2p_ns(S->cost, op->work, tier);
    if (SC_UNLIKELY(!(S->p2p_ns[tier] <= SC_WORK_MAX))) {
      S->rc = work_overflow(S, "a point-to-point transfer", S->p2p_ns[tier]);
      S->p2p_ns[tier] = 0;
    }
  }
  double ns = S->p2p_ns[tier];
  if (S->vary) {
    double fs = vary_link(S->vary, snd, a->net), fr = vary_link(S->vary, rcv, a->net);
    ns /= fs < fr ? fs : fr;
  }
  start(S, id, ns);
  refresh_rates(S, snd, ss);
  refresh_rates(S, rcv, rs);
}

/* Rank `rank`'s stream s reaches collective op: it waits there until every
 * simulated member of the group instance has arrived, and the last one
 * starts it. Out of line, as arrive_p2p: try_advance mostly starts compute
 * ops, and keeps fewer values live without these. */
NOINLINE static void arrive_collective(sim *S, uint32_t rank, int s, const sc_op *op) {
  rstate *r = &S->ranks[rank];
  uint32_t gid = S->explicit_wl ? (op->peer < S->ninst ? op->peer : NONE)
                                : S->inst_of[(size_t)rank * SC_GRP_COUNT + op->group];
  if (gid == NONE) { /* not a member: the op is a no-op for this rank */
    S->rc = sc__error(S->ctx, SC_EINVAL, "rank %lld is not in the %s group",
                      (long long)rank_global(S, r), op->group == SC_GRP_EMBED ? "embedding" : "?");
    return;
  }
  ginst *g = &S->inst[gid];
  r->st[s] = ST_WAIT;
  if (++g->arrived[s] == g->nmem) {
    g->arrived[s] = 0;
    start_collective(S, gid, s, op);
  }
}

/* Rank `rank`'s stream s reaches send or receive op: it waits there, and the
 * transfer starts once its peer waits at the matching op. */
NOINLINE static void arrive_p2p(sim *S, uint32_t rank, int s, const sc_op *op) {
  rstate *r = &S->ranks[rank];
  int is_send = op->kind == SC_OP_SEND;
  int ps = sc__p2p_streams[s].peer;
  uint32_t peer;
  if (!S->explicit_wl) peer = peer_of(S, rank, sc__p2p_streams[s].delta);
  else { /* the op names its peer and the peer's stream */
    peer = SC_DEP_INDEX(op->peer);
    ps = (int)SC_DEP_STREAM(op->peer);
    if (peer >= S->nsim || ps >= SC_ENGINE_NS) {
      S->rc = sc__error(S->ctx, SC_EINVAL, "rank %lld: p2p peer %u out of range",
                        (long long)rank_global(S, r), peer);
      return;
    }
  }
  r->st[s] = ST_WAIT;
  if (S->ranks[peer].st[ps] == ST_WAIT) {
    if (is_send) start_p2p(S, rank, s, peer, ps, op);
    else start_p2p(S, peer, ps, rank, s,
                   head_op(S, peer, ps));
  }
}

/* The first dependency (an SC_DEP handle) of op not yet done on rank r, or NONE. */
static uint32_t unmet_dep(const rstate *r, const sc_program *p, const sc_op *op) {
  for (uint32_t d = 0; d < op->ndeps; d++) {
    uint32_t dep = p->deps[op->dep_off + d];
    if (SC_DEP_INDEX(dep) >= r->head[SC_DEP_STREAM(dep)]) return dep;
  }
  return NONE;
}

/* Starts every op of rank `rank` whose stream is free and deps are done, in
 * stream order. Only streams marked ready can qualify (see rstate.ready), and
 * starting an op never readies another stream, so visiting the ready ones in
 * ascending order starts the same ops in the same order as a full scan. */
static INLINE_HOT void advance(sim *S, uint32_t rank, int plain) {
  rstate *r = &S->ranks[rank];
  const sc_program *p = r->prog;
  if (S->rc) return;
  unsigned todo = r->ready;
  r->ready = 0;
  for (; todo; todo &= todo - 1) {
    int s = lowest_bit(todo);
    if (r->st[s] != ST_IDLE || r->head[s] >= p->nops[s]) continue;
    const sc_op *op = &p->ops[s][r->head[s]];
    if (op->ndeps) {
      uint32_t dep = unmet_dep(r, p, op);
      if (dep != NONE) { /* look again once that op is done (see release) */
        wait_on(r, s, SC_DEP_STREAM(dep), SC_DEP_INDEX(dep));
        continue;
      }
    }
    switch (op->kind) {
    case SC_OP_COLL:
      arrive_collective(S, rank, s, op);
      break;
    case SC_OP_SEND:
    case SC_OP_RECV:
      arrive_p2p(S, rank, s, op);
      break;
    default:
      start_compute(S, rank, s, op, plain);
      break;
    }
    if (S->rc) return; /* only starting an op can fail */
  }
}

/* advance out of line, for the callers other than a compute op's end. */
NOINLINE static void try_advance(sim *S, uint32_t rank) { advance(S, rank, 0); }
NOINLINE static void try_advance_plain(sim *S, uint32_t rank) { advance(S, rank, 1); }

/* try_advance of the plain or the general path (`plain` as in occupy). */
static inline void advance_out(sim *S, uint32_t rank, int plain) {
  if (plain) try_advance_plain(S, rank);
  else try_advance(S, rank);
}

/* The end of kernel activity id (running op, a plain run) when its stream's
 * next op is a kernel that can start now and nothing else runs on its rank:
 * the next op starts in the same activity, and returns 1; else returns 0 and
 * changes nothing. What release, refresh_compute and advance would do there,
 * in short: no waiter is due, no stream but this one becomes ready, the
 * counters (n_comp, running, st) come back to what they were, no other
 * activity's rate can change (none runs) and the new op runs at rate 1
 * (n_comm is 0). */
static INLINE_HOT int next_kernel(sim *S, uint32_t id, const sc_op *op) {
  activity *a = &S->acts[id];
  rstate *r = &S->ranks[a->a];
  int s = a->sa;
  uint32_t h = r->head[s] + 1;
  const sc_program *p = r->prog;
  if (r->running != 1u << s || r->ready || h >= p->nops[s] || h >= r->wake_head[s] ||
      !op_is_compute(op->kind))
    return 0;
  const sc_op *next = &p->ops[s][h];
  /* A dependency on the op ending now is unmet here: release decides it. */
  if (!op_is_compute(next->kind) || (next->ndeps && unmet_dep(r, p, next) != NONE)) return 0;
  /* account(): compute runs (n_comp > 0), so the category is compute_cat. */
  if (S->now > r->last_ns) {
    r->acc[r->compute_cat] += (double)(S->now - r->last_ns);
    r->last_ns = S->now;
  }
  r->head[s] = h;
  S->ops++;
  a->version += 2; /* its release and its claim; its op is the head's, next */
  if (s == SC_ST_COMPUTE) r->compute_cat = next->cat;
  /* start() at rate 1 without asking act_rate: only this stream runs, so
   * n_comm is 0, and schedule_end would take `remaining` itself. */
  a->remaining = next->work;
  a->last_ns = S->now; /* act_t0: a plain run records nothing */
  a->rate = 1.0;
  queue_push(S, S->now + sc__duration_ns(next->work), id, a->version);
  return 1;
}

/* The end of activity id, now; `plain` as in occupy. */
static INLINE_HOT void finish(sim *S, uint32_t id, int plain) {
  activity *a = &S->acts[id];
  const sc_op *op = act_op(S, a);
  int64_t t0 = S->act_t0 ? S->act_t0[id] : 0;
  if (!plain && S->cp_start) { /* what starts now was started by this op's end */
    uint32_t rank = a->type == ACT_COLL ? S->members[S->inst[a->a].mem_off] : a->a;
    S->cp_cur = CP_ID(rank, a->sa, S->ranks[rank].head[a->sa]);
  }
  switch (a->type) {
  case ACT_COMPUTE: {
    uint32_t rank = a->a;
    if (plain && next_kernel(S, id, op)) break;
    release(S, rank, a->sa, op, 0, t0, plain);
    act_release(S, id);
    refresh_compute(S, rank, SC_ST_COUNT, op);
    advance(S, rank, plain);
    break;
  }
  case ACT_COLL: {
    const ginst *g = &S->inst[a->a];
    int s = a->sa, net = a->net;
    hist_detach(S, a);
    act_release(S, id);
    for (uint32_t i = 0; i < g->nmem; i++)
      release(S, S->members[g->mem_off + i], s, op, net, t0, plain);
    for (uint32_t i = 0; i < g->nmem; i++) refresh_rates(S, S->members[g->mem_off + i], SC_ST_COUNT);
    for (uint32_t i = 0; i < g->nmem; i++) advance_out(S, S->members[g->mem_off + i], plain);
    break;
  }
  default: {
    uint32_t snd = a->a, rcv = a->b;
    int ss = a->sa, rs = a->sb, net = a->net;
    const sc_op *rop = head_op(S, rcv, rs);
    act_release(S, id);
    release(S, snd, ss, op, net, t0, plain);
    release(S, rcv, rs, rop, net, t0, plain);
    refresh_rates(S, snd, SC_ST_COUNT);
    refresh_rates(S, rcv, SC_ST_COUNT);
    advance_out(S, snd, plain);
    advance_out(S, rcv, plain);
    break;
  }
  }
}

/* ------------------------------------------------------------ driver */

static void sim_free(sim *S) {
  sc_ctx *ctx = S->ctx;
  sc__free(ctx, S->ranks, sizeof(rstate) * S->nsim);
  sc__free(ctx, S->rglobal, sizeof(int64_t) * S->nsim);
  sc__free(ctx, S->inst, sizeof(ginst) * S->inst_cap);
  sc__free(ctx, S->inst_of, sizeof(uint32_t) * S->nsim * SC_GRP_COUNT);
  sc__free(ctx, S->members, sizeof(uint32_t) * S->nmembers);
  sc__free(ctx, S->acts, sizeof(activity) * S->nsim * S->act_stride);
  sc__free(ctx, S->act_t0, sizeof(int64_t) * S->nsim * S->act_stride);
  sc__free(ctx, S->chunks, sizeof(evchunk) * S->chunks_cap);
  sc__free(ctx, S->lists, sizeof(evlist) * S->lists_cap);
  sc__free(ctx, S->times, sizeof(tkey) * S->times_cap);
  sc__free(ctx, S->hist, sizeof(loadhist) * S->hist_cap);
  if (S->tmap) sc__free(ctx, S->tmap, sizeof(tkey) << S->tmap_bits);
  if (S->trace) {
    sc__trace_out_free(&S->trace->out);
    sc__free(ctx, S->trace->traced, S->trace->traced ? (S->nsim ? S->nsim : 1) : 0);
    sc__free(ctx, S->trace->note, S->trace->note_cap);
    sc__free(ctx, S->trace->mem.bytes, sizeof(double) * S->nsim);
    sc__free(ctx, S->trace->mem.fwd_item, sizeof(uint64_t) * S->nsim);
  }
  sc__free(ctx, S->trace, sizeof(tracebuf));
  if (S->cp_off) {
    size_t n = S->cp_off[(size_t)S->nsim * SC_ST_COUNT];
    sc__free(ctx, S->cp_start, (n ? n : 1) * sizeof(int64_t));
    sc__free(ctx, S->cp_cause, (n ? n : 1) * sizeof(uint64_t));
  }
  sc__free(ctx, S->cp_off, ((size_t)S->nsim * SC_ST_COUNT + 1) * sizeof(size_t));
  sc__free(ctx, S->cp_last, (size_t)S->nsim * sizeof(uint64_t));
  sc__free(ctx, S->cp_end, (size_t)S->nsim * sizeof(int64_t));
}

/* Ops the critical path is recorded for at most: 16 bytes each, so at most
 * 256 MiB on top of the simulation (a folded run of the largest benchmark
 * configurations has ~2M unmerged ops, a variation of the default example
 * 6M; unfolded ones can have far more). */
#define CP_MAX_OPS 16000000

/* Allocates the critical-path record when asked and small enough; 0 or
 * SC_ENOMEM. Not recording is not an error (out->cpath_ops stays 0). */
static int cp_begin(sim *S) {
  size_t total = 0;
  for (uint32_t i = 0; i < S->nsim; i++)
    for (int s = 0; s < SC_ST_COUNT; s++) total += S->ranks[i].prog->nops[s];
  if (total > CP_MAX_OPS) return SC_OK;
  S->cp_off = sc__malloc(S->ctx, ((size_t)S->nsim * SC_ST_COUNT + 1) * sizeof(size_t));
  if (!S->cp_off) return SC_ENOMEM;
  S->cp_off[(size_t)S->nsim * SC_ST_COUNT] = 0; /* sim_free reads the total */
  S->cp_last = sc__malloc(S->ctx, (size_t)S->nsim * sizeof(uint64_t));
  S->cp_end = sc__calloc(S->ctx, S->nsim, sizeof(int64_t));
  if (!S->cp_last || !S->cp_end) return SC_ENOMEM;
  size_t k = 0;
  for (uint32_t i = 0; i < S->nsim; i++) {
    S->cp_last[i] = CP_NONE;
    for (int s = 0; s < SC_ST_COUNT; s++) {
      S->cp_off[(size_t)i * SC_ST_COUNT + (size_t)s] = k;
      k += S->ranks[i].prog->nops[s];
    }
  }
  S->cp_off[(size_t)S->nsim * SC_ST_COUNT] = k;
  S->cp_start = sc__malloc(S->ctx, (k ? k : 1) * sizeof(int64_t));
  S->cp_cause = sc__malloc(S->ctx, (k ? k : 1) * sizeof(uint64_t));
  if (!S->cp_start || !S->cp_cause) return SC_ENOMEM;
  S->cp_cur = CP_NONE;
  return SC_OK;
}

/* Walks the critical path back from the op that ends the step: each op was
 * started by the end of the one before it (its cause), so the ops' times add
 * up to the step. Sums them per category (a merged op's waits for inlined TP
 * collectives count as TP) and per stage and stream, keeping the largest
 * SC_ENGINE_CPATH_TOP of those. Returns 0 or SC_ENOMEM. */
static int cp_walk(sim *S, int64_t step_ns, sc_engine_result *out) {
  uint32_t last = NONE;
  for (uint32_t i = 0; i < S->nsim; i++)
    if (S->cp_end[i] == step_ns && S->cp_last[i] != CP_NONE) {
      last = i;
      break;
    }
  if (last == NONE) return SC_OK;
  size_t cells = (size_t)S->wl->nprogs * SC_ST_COUNT;
  double *per = sc__calloc(S->ctx, cells ? cells : 1, sizeof(double));
  if (!per) return SC_ENOMEM;
  double *rk = sc__calloc(S->ctx, S->nsim, sizeof(double)); /* nsim >= 1 here */
  if (!rk) {
    sc__free(S->ctx, per, (cells ? cells : 1) * sizeof(double));
    return SC_ENOMEM;
  }
  size_t total = S->cp_off[(size_t)S->nsim * SC_ST_COUNT];
  int64_t end = step_ns, nops = 0;
  for (uint64_t cur = S->cp_last[last]; cur != CP_NONE && (size_t)nops < total; nops++) {
    uint32_t rank = (uint32_t)(cur >> 32), stream = (uint32_t)(cur >> 28) & 15u;
    uint32_t idx = (uint32_t)cur & 0x0fffffffu;
    size_t k = S->cp_off[(size_t)rank * SC_ST_COUNT + stream] + idx;
    const rstate *r = &S->ranks[rank];
    const sc_op *op = &r->prog->ops[stream][idx];
    double dur = (double)(end - S->cp_start[k]) / 1e9;
    double tp = S->merged && op_is_compute(op->kind) ? (double)op->tp_ns / 1e9 : 0.0;
    if (tp > dur) tp = dur;
    out->cpath_s[op->cat] += dur - tp;
    out->cpath_s[SC_CAT_TP] += tp;
    per[(size_t)r->stage * SC_ST_COUNT + stream] += dur;
    rk[rank] += dur;
    end = S->cp_start[k];
    cur = S->cp_cause[k];
  }
  out->cpath_ops = nops;
  for (int t = 0; t < SC_ENGINE_CPATH_TOP; t++) {
    size_t best = cells;
    for (size_t c = 0; c < cells; c++)
      if (per[c] > 0 && (best == cells || per[c] > per[best])) best = c;
    if (best == cells) break;
    out->cpath_top[t].stage = (int64_t)(best / SC_ST_COUNT);
    out->cpath_top[t].stream = (int)(best % SC_ST_COUNT);
    out->cpath_top[t].s = per[best];
    per[best] = 0;
  }
  for (int t = 0; t < SC_ENGINE_CPATH_TOP; t++) {
    uint32_t best = NONE;
    for (uint32_t i = 0; i < S->nsim; i++)
      if (rk[i] > 0 && (best == NONE || rk[i] > rk[best])) best = i;
    if (best == NONE) break;
    out->cpath_rank[t].rank = S->rglobal[best];
    out->cpath_rank[t].weight = S->vary ? (int64_t)S->vary->weight[best]
                                : S->fold ? S->stride
                                          : 1;
    out->cpath_rank[t].s = rk[best];
    rk[best] = 0;
  }
  sc__free(S->ctx, rk, S->nsim * sizeof(double));
  sc__free(S->ctx, per, (cells ? cells : 1) * sizeof(double));
  return SC_OK;
}

/* Pops and finishes events until the queue is empty or a step failed;
 * `plain` as in occupy (the caller passes sim.plain as a constant). */
static INLINE_HOT void event_loop(sim *S, int plain) {
  while (S->ntimes && !S->rc) {
    int64_t t;
    event e;
    uint32_t next_act;
    queue_pop(S, &t, &e, &next_act, plain);
    /* The next event's activity is not in L1 by now: fetch it meanwhile. */
    if (next_act != NONE) PREFETCH(&S->acts[next_act]);
    if (S->acts[e.act].version != e.version) continue; /* superseded by a rate change */
    S->now = t;
    S->events++;
    finish(S, e.act, plain);
  }
}

/* The two event loops, each a function of its own so that each gets the
 * compiler's whole inlining budget (one function holding both inlined
 * fewer of the queue's and the op's helpers). */
NOINLINE static void event_loop_plain(sim *S) { event_loop(S, 1); }
NOINLINE static void event_loop_any(sim *S) { event_loop(S, 0); }

static int run(sim *S) {
  const sc_mapping *m = &S->wl->map;
  S->stride = m->tp * m->cp * m->dp;
  int64_t n = S->explicit_wl ? (int64_t)S->wl->nranks
              : S->vary        ? (int64_t)S->vary->n
              : S->fold        ? m->pp
                               : m->world;
  /* A slot per (rank, stream) for the streams up to the highest one any
   * program uses (most runs use the first 7 of 15): the slots of one rank,
   * and of neighbouring ranks, lie closer together (issue 19's 131,072-GPU
   * rows). */
  S->act_stride = 1;
  for (int64_t i = 0; i < S->wl->nprogs; i++)
    for (uint32_t st = S->act_stride; st < SC_ENGINE_NS; st++)
      if (S->wl->progs[i].nops[st]) S->act_stride = st + 1;
  /* Activity ids are rank * act_stride + stream; group tables hold
   * nsim * SC_GRP_COUNT entries: both must fit uint32_t. */
  if (n > (int64_t)UINT32_MAX / SC_ST_COUNT || n > (int64_t)UINT32_MAX / SC_GRP_COUNT)
    return sc__error(S->ctx, SC_EUNSUPPORTED, "too many ranks to simulate unfolded");
  S->nsim = (uint32_t)n;
  S->free_chunk = S->free_list = S->last_push.list = S->free_hist = NONE;
  if (tmap_grow(S)) return SC_ENOMEM;
  S->ranks = sc__calloc(S->ctx, S->nsim, sizeof(rstate));
  S->rglobal = sc__calloc(S->ctx, S->nsim, sizeof(int64_t));
  S->acts = sc__calloc(S->ctx, (size_t)S->nsim * S->act_stride, sizeof(activity));
  if (!S->ranks || !S->rglobal || !S->acts) return SC_ENOMEM;
  for (uint32_t i = 0; i < S->nsim; i++) {
    rstate *r = &S->ranks[i];
    if (S->explicit_wl) { /* stage holds the program index */
      S->rglobal[i] = S->wl->rank_global[i];
      r->stage = S->wl->rank_prog[i];
      if ((int64_t)r->stage >= S->wl->nprogs)
        return sc__error(S->ctx, SC_EINVAL, "simulated rank %u runs program %u of %lld", i, r->stage,
                         (long long)S->wl->nprogs);
    } else {
      S->rglobal[i] = S->vary ? S->vary->global[i] : S->fold ? (int64_t)i * S->stride : (int64_t)i;
      r->stage = (uint32_t)stage_of(S, S->rglobal[i]);
    }
    r->prog = &S->wl->progs[r->stage];
    for (int s = 0; s < SC_ENGINE_NS; s++) {
      r->wake_head[s] = NONE;
      r->first_waiter[s] = NO_STREAM;
    }
    r->ready = (uint16_t)((1u << SC_ENGINE_NS) - 1);
  }
  int rc = build_groups(S);
  if (rc) return rc;
  if (S->trace && (rc = trace_begin(S))) return rc;
  if (S->cp_want && !S->explicit_wl && (rc = cp_begin(S))) return rc;
  S->record = S->trace || S->op_sink;
  /* When each activity started: what a recording run notes at its end. */
  if (S->record &&
      !(S->act_t0 = sc__calloc(S->ctx, (size_t)S->nsim * S->act_stride, sizeof(int64_t))))
    return SC_ENOMEM;
  S->plain = !S->record && !S->cp_start && !S->merged && !S->vary;
  for (uint32_t i = 0; i < S->nsim && !S->rc; i++) try_advance(S, i);
  if (S->plain) event_loop_plain(S);
  else event_loop_any(S);
  if (S->rc) return S->rc;
  /* Every stream must have drained; otherwise the programs deadlocked. */
  for (uint32_t i = 0; i < S->nsim; i++) {
    const rstate *r = &S->ranks[i];
    const sc_program *p = r->prog;
    for (int s = 0; s < SC_ENGINE_NS; s++)
      if (r->head[s] < p->nops[s]) {
        const sc_op *op = &p->ops[s][r->head[s]];
        if (S->wl->op_name)
          return sc__error(S->ctx, SC_EDEADLOCK, "simulation deadlock: rank %lld stream %d stuck at op %u (%.200s)",
                           (long long)rank_global(S, r), s, r->head[s], S->wl->op_name(S->wl->names_ud, op));
        return sc__error(S->ctx, SC_EDEADLOCK,
                         "simulation deadlock: rank %lld stream %s stuck at op %u (%s, mb %u)",
                         (long long)rank_global(S, r), sc__stream_name(s), r->head[s],
                         sc__label_name(op->label), op->mb);
      }
  }
  if (S->trace) {
    trace_end(S);
    int trc = S->trace->out.rc;
    if (trc == SC_ENOMEM) return sc__error(S->ctx, trc, "out of memory writing the trace");
    if (trc) return sc__error(S->ctx, trc, "cannot write the trace");
  }
  return SC_OK;
}

#if SC_ENGINE_WIDE
int sc__engine_run_narrow(sc_ctx *ctx, const sc_workload *wl, const sc_cost *cost,
                          const sc_engine_opts *opts, sc_engine_result *out);

/* 1 when no program has an op past the narrow engine's streams. */
static int fits_narrow(const sc_workload *wl) {
  for (int64_t i = 0; i < wl->nprogs; i++)
    for (int s = SC_ENGINE_NARROW_NS; s < SC_ST_COUNT; s++)
      if (wl->progs[i].nops[s]) return 0;
  return 1;
}
#endif

int SC_ENGINE_ENTRY(sc_ctx *ctx, const sc_workload *wl, const sc_cost *cost,
                    const sc_engine_opts *opts, sc_engine_result *out) {
#if SC_ENGINE_WIDE
  if (fits_narrow(wl)) return sc__engine_run_narrow(ctx, wl, cost, opts, out);
#endif
  memset(out, 0, sizeof *out);
  int rc = SC_OK;
  sim S;
  memset(&S, 0, sizeof S);
  S.ctx = ctx;
  S.wl = wl;
  S.cost = cost;
  S.explicit_wl = wl->nranks > 0;
  S.vary = S.explicit_wl ? NULL : opts->vary;
  S.fold = opts->fold && !S.vary;
  if (S.vary && wl->inlined)
    return sc__error(ctx, SC_EINTERNAL, "a variation needs a workload built without inlined TP");
  S.merged = wl->merged;
  S.p2p_bytes[0] = S.p2p_bytes[1] = S.p2p_bytes[2] = -1;
  S.interf = opts->interference != SC_INTERF_NONE;
  S.learned = opts->interference == SC_INTERF_LEARNED || opts->interference == SC_INTERF_TREE;
  S.tree = opts->interference == SC_INTERF_TREE && cost->interf_tree;
  if (opts->interference == SC_INTERF_TREE && !cost->interf_tree)
    return sc__error(ctx, SC_EINVAL, "interference model tree: no model loaded");
  S.share = opts->share_links;
  rate_tables(&S);
  /* A merged workload's op boundaries are gone: exact only at rate-1 compute
   * and invisible only without a trace (sc__workload_build_ex). */
  if (wl->merged && (S.interf || opts->trace || opts->op_sink || opts->mem_sink))
    return sc__error(ctx, SC_EINTERNAL,
                     "a merged workload cannot run with interference or a trace");
  S.op_sink = opts->op_sink;
  S.op_sink_ud = opts->op_sink_ud;
  S.cp_want = opts->critical_path;
  S.mem_sink_ud = opts->mem_sink_ud;
  S.mem_sink = S.explicit_wl ? NULL : opts->mem_sink;
  if (opts->trace || S.mem_sink) { /* a mem_sink alone: the track without the JSON */
    S.trace = sc__calloc(ctx, 1, sizeof(tracebuf));
    if (!S.trace) rc = SC_ENOMEM;
    else {
      S.trace->ranks = opts->trace_ranks;
      S.trace->nranks = opts->ntrace_ranks;
      if (opts->trace)
        rc = sc__trace_out_init(&S.trace->out, ctx, opts->trace_format, opts->trace, opts->trace_ud);
      S.trace->mem.hook = S.explicit_wl ? NULL : opts->mem;
    }
  }
  if (!rc) rc = run(&S);
  if (!rc) {
    /* The last op's end: every event the loop did not pass over as stale
     * ended an op, at S.now. */
    int64_t step_ns = S.now;
    double idle_min = -1, wsum = 0;
    for (uint32_t i = 0; i < S.nsim; i++) wsum += S.vary ? S.vary->weight[i] : 1.0;
    for (uint32_t i = 0; i < S.nsim; i++) {
      rstate *r = &S.ranks[i];
      account(&S, r); /* tail: waiting for the slowest rank */
      if (S.vary) /* a simulated rank stands for weight ranks */
        for (int c = 0; c < SC_CAT_COUNT; c++)
          out->breakdown_s[c] += r->acc[c] / 1e9 * S.vary->weight[i] / wsum;
      else
        for (int c = 0; c < SC_CAT_COUNT; c++) out->breakdown_s[c] += r->acc[c] / 1e9 / S.nsim;
      if (idle_min < 0 || r->acc[SC_CAT_BUBBLE] < idle_min) idle_min = r->acc[SC_CAT_BUBBLE];
    }
    /* The busiest rank's idle time is the bubble every rank has; the rest
     * of a rank's idle time is how much less it has to do. */
    if (idle_min >= 0) {
      double extra = out->breakdown_s[SC_CAT_BUBBLE] - idle_min / 1e9;
      out->bubble_imbalance_s = extra > 0 ? extra : 0;
    }
    out->step_ns = step_ns;
    out->world = wl->map.world;
    out->simulated_ranks = S.nsim;
    /* Ops a merged workload does without (sc_program.nmerged) would each
     * have ended in exactly one event: report the unmerged counts. */
    int64_t merged = 0;
    for (uint32_t i = 0; i < S.nsim; i++) merged += S.ranks[i].prog->nmerged;
    out->ops = S.ops + merged;
    out->events = S.events + merged;
    if (S.cp_start) rc = cp_walk(&S, step_ns, out);
  }
  sim_free(&S);
  return rc;
}
