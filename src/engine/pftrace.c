/*
 * pftrace.c: the engine's timeline as a Perfetto protobuf trace (.pftrace),
 * the native format of ui.perfetto.dev and trace_processor. The messages are
 * our subset of Perfetto's schema (perfetto_trace.proto, compiled by
 * protoc-c); each TracePacket is packed on its own and framed as field 1 of
 * Trace, so the file streams through traceout.c's buffer in constant memory.
 *
 * Tracks: a process track per traced rank (pid = rank + 1: to a trace
 * processor pid 0 is the kernel's idle task), a thread track per stream
 * under it (tids unique across the trace, as the kernel's are), a "memory"
 * counter track in bytes. Ops are TYPE_SLICE_BEGIN / TYPE_SLICE_END pairs
 * on their stream's track, names, categories and argument names interned on
 * the one packet sequence, timestamps in ns.
 */
#include "engine/traceout_int.h"

#include "perfetto_trace.pb-c.h"

#include <stdio.h>
#include <string.h>

/* The one packet sequence of the file (0 is not a valid id). */
#define SEQ_ID 1

/* Track uuids: the rank's process track, its streams (1 + stream, below
 * UUID_MEMORY) and its memory counter. */
#define UUID_SHIFT 5
#define UUID_MEMORY 31u
static uint64_t uuid_of(int64_t pid, unsigned sub) {
  return ((uint64_t)pid + 1) << UUID_SHIFT | sub;
}
/* Thread ids: above every pid, unique per (rank, stream). */
static int32_t tid_of(int64_t pid, int tid) {
  return (int32_t)((1 << 24) + (pid << UUID_SHIFT) + tid);
}

/* ------------------------------------------------------------ interning */

enum { IK_NAME = 0, IK_CAT, IK_ARG, IK_COUNT };

typedef struct intern_ent {
  char *s; /* owned, len + 1 bytes; NULL: empty slot */
  size_t len;
  uint64_t hash;
  uint64_t iid;
  int kind;
} intern_ent;

typedef struct pf_state {
  intern_ent *tab;
  size_t cap, used; /* cap a power of two, used <= cap / 2 */
  uint64_t next_iid[IK_COUNT];
} pf_state;

/* FNV-1a over the kind and the bytes. */
static uint64_t str_hash(int kind, const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static intern_ent *slot_of(intern_ent *tab, size_t cap, uint64_t h, int kind,
                           const char *s, size_t len) {
  size_t i = (size_t)h & (cap - 1);
  while (tab[i].s && !(tab[i].hash == h && tab[i].kind == kind &&
                       tab[i].len == len && !memcmp(tab[i].s, s, len)))
    i = (i + 1) & (cap - 1);
  return &tab[i];
}

static int intern_grow(sc_ctx *ctx, pf_state *st) {
  size_t cap = st->cap ? st->cap * 2 : 256;
  intern_ent *tab = sc__calloc(ctx, cap, sizeof *tab);
  if (!tab)
    return SC_ENOMEM;
  for (size_t i = 0; i < st->cap; i++)
    if (st->tab[i].s)
      *slot_of(tab, cap, st->tab[i].hash, st->tab[i].kind, st->tab[i].s,
               st->tab[i].len) = st->tab[i];
  sc__free(ctx, st->tab, st->cap * sizeof *st->tab);
  st->tab = tab;
  st->cap = cap;
  return SC_OK;
}

/* The iid of (kind, s); *fresh: first seen now, so the packet must carry
 * its definition. 0 on allocation failure (o->rc set). */
static uint64_t intern(sc__trace_out *o, int kind, const char *s, int *fresh) {
  pf_state *st = o->state;
  size_t len = strlen(s);
  uint64_t h = str_hash(kind, s, len);
  *fresh = 0;
  if (st->cap) {
    intern_ent *e = slot_of(st->tab, st->cap, h, kind, s, len);
    if (e->s)
      return e->iid;
  }
  if ((st->used + 1) * 2 > st->cap && intern_grow(o->ctx, st)) {
    o->rc = SC_ENOMEM;
    return 0;
  }
  intern_ent *e = slot_of(st->tab, st->cap, h, kind, s, len);
  e->s = sc__malloc(o->ctx, len + 1);
  if (!e->s) {
    o->rc = SC_ENOMEM;
    return 0;
  }
  memcpy(e->s, s, len + 1);
  e->len = len;
  e->hash = h;
  e->kind = kind;
  e->iid = ++st->next_iid[kind];
  st->used++;
  *fresh = 1;
  return e->iid;
}

static void pf_free(sc__trace_out *o) {
  pf_state *st = o->state;
  if (!st)
    return;
  for (size_t i = 0; i < st->cap; i++)
    if (st->tab[i].s)
      sc__free(o->ctx, st->tab[i].s, st->tab[i].len + 1);
  sc__free(o->ctx, st->tab, st->cap * sizeof *st->tab);
  sc__free(o->ctx, st, sizeof *st);
  o->state = NULL;
}

static pf_state *state_of(sc__trace_out *o) {
  if (!o->state && !o->rc) {
    o->state = sc__calloc(o->ctx, 1, sizeof(pf_state));
    if (!o->state)
      o->rc = SC_ENOMEM;
  }
  return o->state;
}

/* ------------------------------------------------------------ packets */

/* Frames and buffers one packet as Trace field 1 (tag 0x0a, varint length).
 * The first packet clears the sequence's incremental state. */
static void emit(sc__trace_out *o, ScPf__TracePacket *p) {
  if (o->rc)
    return;
  p->has_trusted_packet_sequence_id = 1;
  p->trusted_packet_sequence_id = SEQ_ID;
  if (o->first) {
    p->has_sequence_flags = 1;
    p->sequence_flags |= SC_PF__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
    o->first = 0;
  }
  size_t n = sc_pf__trace_packet__get_packed_size(p);
  if (!sc__trace_out_reserve(o, n + 11)) {
    if (!o->rc)
      o->rc = sc__error(o->ctx, SC_EINTERNAL, "trace packet of %zu bytes", n);
    return;
  }
  uint8_t *b = (uint8_t *)o->buf + o->len;
  size_t k = 0;
  b[k++] = 0x0a;
  for (uint64_t v = n;; v >>= 7) {
    b[k++] = (uint8_t)(v < 0x80 ? v : (v & 0x7f) | 0x80);
    if (v < 0x80)
      break;
  }
  k += sc_pf__trace_packet__pack(p, b + k);
  o->len += k;
}

static void pf_process(sc__trace_out *o, int64_t pid, const char *name,
                       int memory) {
  if (!state_of(o))
    return;
  ScPf__ProcessDescriptor pd = SC_PF__PROCESS_DESCRIPTOR__INIT;
  pd.has_pid = 1;
  pd.pid = (int32_t)(pid + 1);
  pd.process_name = (char *)name;
  ScPf__TrackDescriptor td = SC_PF__TRACK_DESCRIPTOR__INIT;
  td.has_uuid = 1;
  td.uuid = uuid_of(pid, 0);
  td.name = (char *)name;
  td.process = &pd;
  ScPf__TracePacket p = SC_PF__TRACE_PACKET__INIT;
  p.track_descriptor = &td;
  emit(o, &p);
  if (!memory)
    return;
  ScPf__CounterDescriptor cd = SC_PF__COUNTER_DESCRIPTOR__INIT;
  cd.has_unit = 1;
  cd.unit = SC_PF__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
  ScPf__TrackDescriptor ct = SC_PF__TRACK_DESCRIPTOR__INIT;
  ct.has_uuid = ct.has_parent_uuid = 1;
  ct.uuid = uuid_of(pid, UUID_MEMORY);
  ct.parent_uuid = uuid_of(pid, 0);
  ct.name = "memory";
  ct.counter = &cd;
  ScPf__TracePacket q = SC_PF__TRACE_PACKET__INIT;
  q.track_descriptor = &ct;
  emit(o, &q);
}

static void pf_thread(sc__trace_out *o, int64_t pid, int tid,
                      const char *name) {
  ScPf__ThreadDescriptor thd = SC_PF__THREAD_DESCRIPTOR__INIT;
  thd.has_pid = thd.has_tid = 1;
  thd.pid = (int32_t)(pid + 1);
  thd.tid = tid_of(pid, tid);
  thd.thread_name = (char *)name;
  ScPf__TrackDescriptor td = SC_PF__TRACK_DESCRIPTOR__INIT;
  td.has_uuid = td.has_parent_uuid = 1;
  td.uuid = uuid_of(pid, 1u + (unsigned)tid);
  td.parent_uuid = uuid_of(pid, 0);
  td.name = (char *)name;
  td.thread = &thd;
  ScPf__TracePacket p = SC_PF__TRACE_PACKET__INIT;
  p.track_descriptor = &td;
  emit(o, &p);
}

/* Up to five arguments, as in the JSON's "args". */
#define MAX_ARGS 5

typedef struct arg_set {
  ScPf__DebugAnnotation ann[MAX_ARGS];
  ScPf__DebugAnnotation *annp[MAX_ARGS];
  size_t n;
} arg_set;

static ScPf__DebugAnnotation *arg_add(sc__trace_out *o, arg_set *a,
                                      const char *key,
                                      ScPf__InternedString *defs,
                                      ScPf__InternedString **defp,
                                      size_t *ndefs) {
  int fresh;
  uint64_t iid = intern(o, IK_ARG, key, &fresh);
  if (fresh) {
    ScPf__InternedString *d = &defs[*ndefs];
    sc_pf__interned_string__init(d);
    d->has_iid = 1;
    d->iid = iid;
    d->name = (char *)key;
    defp[(*ndefs)++] = d;
  }
  ScPf__DebugAnnotation *x = &a->ann[a->n];
  sc_pf__debug_annotation__init(x);
  x->has_name_iid = 1;
  x->name_iid = iid;
  a->annp[a->n++] = x;
  return x;
}

static void arg_int(sc__trace_out *o, arg_set *a, const char *key, int64_t v,
                    ScPf__InternedString *defs, ScPf__InternedString **defp,
                    size_t *ndefs) {
  ScPf__DebugAnnotation *x = arg_add(o, a, key, defs, defp, ndefs);
  x->has_int_value = 1;
  x->int_value = v;
}

static void pf_slice(sc__trace_out *o, const sc__trace_slice *s) {
  if (!state_of(o))
    return;
  char name[SC_TRACE_NAME_MAX + 1];
  snprintf(name, sizeof name, "%s", s->name);
  ScPf__InternedString names[1], cats[1], args[MAX_ARGS];
  ScPf__InternedString *namep[1], *catp[1], *argp[MAX_ARGS];
  size_t nnames = 0, ncats = 0, nargs = 0;
  int fresh;
  uint64_t name_iid = intern(o, IK_NAME, name, &fresh);
  if (fresh) {
    sc_pf__interned_string__init(&names[0]);
    names[0].has_iid = 1;
    names[0].iid = name_iid;
    names[0].name = name;
    namep[nnames++] = &names[0];
  }
  uint64_t cat_iid = intern(o, IK_CAT, s->cat, &fresh);
  if (fresh) {
    sc_pf__interned_string__init(&cats[0]);
    cats[0].has_iid = 1;
    cats[0].iid = cat_iid;
    cats[0].name = (char *)s->cat;
    catp[ncats++] = &cats[0];
  }
  arg_set a = {.n = 0};
  if (!s->explicit_op) {
    arg_int(o, &a, "mb", s->mb, args, argp, &nargs);
    arg_int(o, &a, "chunk", s->chunk, args, argp, &nargs);
    if (s->bytes >= 0)
      arg_int(o, &a, "bytes", (int64_t)(s->bytes + 0.5), args, argp, &nargs);
  }
  if (s->coll) {
    ScPf__DebugAnnotation *x = arg_add(o, &a, "collective", args, argp, &nargs);
    x->string_value = (char *)s->coll;
    if (s->explicit_op)
      arg_int(o, &a, "group", s->group, args, argp, &nargs);
  }
  if (o->rc)
    return;

  ScPf__InternedData idata = SC_PF__INTERNED_DATA__INIT;
  idata.n_event_names = nnames;
  idata.event_names = namep;
  idata.n_event_categories = ncats;
  idata.event_categories = catp;
  idata.n_debug_annotation_names = nargs;
  idata.debug_annotation_names = argp;
  uint64_t track = uuid_of(s->pid, 1u + (unsigned)s->tid);
  ScPf__TrackEvent begin = SC_PF__TRACK_EVENT__INIT;
  begin.has_type = begin.has_track_uuid = begin.has_name_iid = 1;
  begin.type = SC_PF__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
  begin.track_uuid = track;
  begin.name_iid = name_iid;
  begin.n_category_iids = 1;
  begin.category_iids = &cat_iid;
  begin.n_debug_annotations = a.n;
  begin.debug_annotations = a.annp;
  ScPf__TracePacket p = SC_PF__TRACE_PACKET__INIT;
  p.has_timestamp = 1;
  p.timestamp = (uint64_t)s->start_ns;
  p.track_event = &begin;
  if (nnames || ncats || nargs)
    p.interned_data = &idata;
  p.has_sequence_flags = 1;
  p.sequence_flags = SC_PF__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
  emit(o, &p);

  ScPf__TrackEvent end = SC_PF__TRACK_EVENT__INIT;
  end.has_type = end.has_track_uuid = 1;
  end.type = SC_PF__TRACK_EVENT__TYPE__TYPE_SLICE_END;
  end.track_uuid = track;
  ScPf__TracePacket q = SC_PF__TRACE_PACKET__INIT;
  q.has_timestamp = 1;
  q.timestamp = (uint64_t)s->end_ns;
  q.track_event = &end;
  emit(o, &q);
}

static void pf_counter(sc__trace_out *o, int64_t pid, int64_t t_ns,
                       double bytes) {
  ScPf__TrackEvent ev = SC_PF__TRACK_EVENT__INIT;
  ev.has_type = ev.has_track_uuid = ev.has_double_counter_value = 1;
  ev.type = SC_PF__TRACK_EVENT__TYPE__TYPE_COUNTER;
  ev.track_uuid = uuid_of(pid, UUID_MEMORY);
  ev.double_counter_value = bytes;
  ScPf__TracePacket p = SC_PF__TRACE_PACKET__INIT;
  p.has_timestamp = 1;
  p.timestamp = (uint64_t)t_ns;
  p.track_event = &ev;
  emit(o, &p);
}

/* The note rides in a ChromeEventBundle's metadata, which trace_processor
 * keeps as trace metadata. */
static void pf_end(sc__trace_out *o, const char *note) {
  if (note) {
    ScPf__ChromeMetadata md = SC_PF__CHROME_METADATA__INIT;
    md.name = "stepcast_trace_ranks";
    md.string_value = (char *)note;
    ScPf__ChromeMetadata *mdp = &md;
    ScPf__ChromeEventBundle bundle = SC_PF__CHROME_EVENT_BUNDLE__INIT;
    bundle.n_metadata = 1;
    bundle.metadata = &mdp;
    ScPf__TracePacket p = SC_PF__TRACE_PACKET__INIT;
    p.chrome_events = &bundle;
    emit(o, &p);
  }
  sc__trace_out_flush(o);
}

const sc__trace_vt sc__trace_perfetto = {
    "perfetto", pf_process, pf_thread, pf_slice, pf_counter, pf_end, pf_free};
