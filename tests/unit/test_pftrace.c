/*
 * test_pftrace.c: the Perfetto protobuf timeline (src/engine/pftrace.c) and
 * the rank selection of traces (sc_trace_opts.ranks). A .pftrace is decoded
 * with protoc-c's unpack of our schema (src/engine/perfetto_trace.proto) and
 * compared with the JSON trace of the same step: the same tracks, the same
 * slices (count, rank, stream, name, category, start, duration, in order).
 * No trace_processor here: decoding with our own schema is the check.
 */
// clang-format off: cmocka.h needs these before it
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include <math.h>

#include "perfetto_trace.pb-c.h"
#include "sctest.h"
#include "stepcast/trace.h"
#include "trace/job_int.h"

static sc_ctx *ctx;

/* ------------------------------------------------------------ the JSON side */

typedef struct slice {
  int64_t pid;
  int tid;
  int64_t ts_ns, dur_ns;
  char name[320], cat[32];
} slice;

typedef struct slices {
  slice *v;
  size_t n, cap;
} slices;

static void push(slices *s, const slice *x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 1024;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    assert_non_null(s->v);
  }
  s->v[s->n++] = *x;
}

/* Copies the JSON string value starting at p (after its opening quote). */
static const char *copy_str(const char *p, char *out, size_t cap) {
  size_t i = 0;
  while (*p && *p != '"') {
    assert_true(i + 1 < cap);
    out[i++] = *p++;
  }
  out[i] = 0;
  return p;
}

/* The "X" events of our JSON trace, in file order (traceout.c's layout). */
static slices json_slices(const char *json) {
  slices s = {0};
  for (const char *p = json; (p = strstr(p, "{\"ph\":\"X\",")); p++) {
    slice x;
    long long pid;
    double ts, dur;
    int used = 0;
    assert_int_equal(
        sscanf(
            p,
            "{\"ph\":\"X\",\"pid\":%lld,\"tid\":%d,\"ts\":%lf,\"dur\":%lf,%n",
            &pid, &x.tid, &ts, &dur, &used),
        4);
    x.pid = pid;
    x.ts_ns = llround(ts * 1e3);
    x.dur_ns = llround(dur * 1e3);
    const char *q = strstr(p, "\"name\":\"");
    q = copy_str(q + 8, x.name, sizeof x.name);
    q = strstr(q, "\"cat\":\"");
    copy_str(q + 7, x.cat, sizeof x.cat);
    push(&s, &x);
  }
  return s;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

/* ------------------------------------------------------------ the protobuf
 * side */

typedef struct track {
  uint64_t uuid;
  int64_t pid; /* the rank */
  int tid;     /* stream; -1: the process track, -2: a counter */
  char name[96];
} track;

typedef struct decoded {
  ScPf__Trace *trace;
  track tracks[4096];
  size_t ntracks, nprocess, nthread, ncounter_tracks, ncounters;
  slices sl;
  const char *note; /* the stepcast_trace_ranks metadata; NULL: none */
} decoded;

static const char *interned(char **names, size_t n, uint64_t iid) {
  assert_true(iid >= 1 && iid <= n && names[iid - 1]);
  return names[iid - 1];
}

static void remember(char ***tab, size_t *n, ScPf__InternedString **defs,
                     size_t ndefs) {
  for (size_t i = 0; i < ndefs; i++) {
    assert_true(defs[i]->has_iid);
    assert_int_equal(defs[i]->iid, *n + 1); /* iids are handed out in order */
    *tab = realloc(*tab, (*n + 1) * sizeof **tab);
    (*tab)[(*n)++] = defs[i]->name;
  }
}

static const track *track_of(const decoded *d, uint64_t uuid) {
  for (size_t i = 0; i < d->ntracks; i++)
    if (d->tracks[i].uuid == uuid)
      return &d->tracks[i];
  fail_msg("no track %llu", (unsigned long long)uuid);
  return NULL;
}

/* Unpacks a whole .pftrace and pairs each slice's begin and end packets,
 * which pftrace.c writes back to back. */
static void decode(const sc_test_buf *b, decoded *d) {
  memset(d, 0, sizeof *d);
  d->trace = sc_pf__trace__unpack(NULL, b->len, (const uint8_t *)b->p);
  assert_non_null(d->trace);
  char **names = NULL, **cats = NULL, **args = NULL;
  size_t nnames = 0, ncats = 0, nargs = 0;
  for (size_t i = 0; i < d->trace->n_packet; i++) {
    const ScPf__TracePacket *p = d->trace->packet[i];
    assert_true(p->has_trusted_packet_sequence_id &&
                p->trusted_packet_sequence_id == 1);
    if (i == 0)
      assert_true(p->sequence_flags &
                  SC_PF__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED);
    if (p->interned_data) {
      remember(&names, &nnames, p->interned_data->event_names,
               p->interned_data->n_event_names);
      remember(&cats, &ncats, p->interned_data->event_categories,
               p->interned_data->n_event_categories);
      remember(&args, &nargs, p->interned_data->debug_annotation_names,
               p->interned_data->n_debug_annotation_names);
    }
    if (p->track_descriptor) {
      const ScPf__TrackDescriptor *td = p->track_descriptor;
      assert_true(d->ntracks < sizeof d->tracks / sizeof d->tracks[0]);
      track *t = &d->tracks[d->ntracks++];
      t->uuid = td->uuid;
      snprintf(t->name, sizeof t->name, "%s", td->name);
      if (td->process) {
        t->pid = td->process->pid - 1, t->tid = -1, d->nprocess++;
        assert_string_equal(td->process->process_name, td->name);
      } else if (td->thread) {
        const track *parent = track_of(d, td->parent_uuid);
        assert_int_equal(parent->tid, -1);
        assert_int_equal(td->thread->pid, parent->pid + 1);
        t->pid = parent->pid, t->tid = (int)(td->uuid - parent->uuid - 1),
        d->nthread++;
      } else {
        assert_non_null(td->counter);
        assert_int_equal(td->counter->unit,
                         SC_PF__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES);
        t->pid = track_of(d, td->parent_uuid)->pid, t->tid = -2,
        d->ncounter_tracks++;
      }
      continue;
    }
    if (p->chrome_events) {
      assert_int_equal(p->chrome_events->n_metadata, 1);
      assert_string_equal(p->chrome_events->metadata[0]->name,
                          "stepcast_trace_ranks");
      d->note = p->chrome_events->metadata[0]->string_value;
      continue;
    }
    const ScPf__TrackEvent *ev = p->track_event;
    assert_non_null(ev);
    assert_true(p->has_timestamp);
    if (ev->type == SC_PF__TRACK_EVENT__TYPE__TYPE_COUNTER) {
      assert_int_equal(track_of(d, ev->track_uuid)->tid, -2);
      assert_true(ev->has_double_counter_value && ev->double_counter_value > 0);
      d->ncounters++;
      continue;
    }
    assert_int_equal(ev->type, SC_PF__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN);
    assert_true(i + 1 < d->trace->n_packet);
    const ScPf__TracePacket *e = d->trace->packet[++i];
    assert_non_null(e->track_event);
    assert_int_equal(e->track_event->type,
                     SC_PF__TRACK_EVENT__TYPE__TYPE_SLICE_END);
    assert_int_equal(e->track_event->track_uuid, ev->track_uuid);
    const track *t = track_of(d, ev->track_uuid);
    assert_true(t->tid >= 0);
    slice x = {t->pid,
               t->tid,
               (int64_t)p->timestamp,
               (int64_t)(e->timestamp - p->timestamp),
               "",
               ""};
    snprintf(x.name, sizeof x.name, "%s",
             interned(names, nnames, ev->name_iid));
    assert_int_equal(ev->n_category_iids, 1);
    snprintf(x.cat, sizeof x.cat, "%s",
             interned(cats, ncats, ev->category_iids[0]));
    for (size_t k = 0; k < ev->n_debug_annotations; k++)
      (void)interned(args, nargs, ev->debug_annotations[k]->name_iid);
    push(&d->sl, &x);
  }
  free(names);
  free(cats);
  free(args);
}

static void decoded_free(decoded *d) {
  sc_pf__trace__free_unpacked(d->trace, NULL);
  free(d->sl.v);
}

/* ------------------------------------------------------------ runs */

static void traced(const sc_config *cfg, sc_trace_out_format f,
                   const sc_rank_range *r, size_t nr, sc_test_buf *out,
                   sc_result *res) {
  sc_trace_opts o = {f, r, nr};
  memset(out, 0, sizeof *out);
  assert_int_equal(
      sc_simulate_traced(ctx, cfg, &o, sc_test_buf_write, out, res), SC_OK);
}

static void same_slices(const slices *a, const slices *b) {
  assert_int_equal(a->n, b->n);
  for (size_t i = 0; i < a->n; i++) {
    const slice *x = &a->v[i], *y = &b->v[i];
    assert_int_equal(x->pid, y->pid);
    assert_int_equal(x->tid, y->tid);
    assert_int_equal(x->ts_ns, y->ts_ns);
    assert_int_equal(x->dur_ns, y->dur_ns);
    assert_string_equal(x->name, y->name);
    assert_string_equal(x->cat, y->cat);
  }
}

/* Every track of the JSON (process_name / thread_name metadata) is a track
 * of the .pftrace with the same name. */
static void same_tracks(const char *json, const decoded *d) {
  assert_int_equal(count(json, "\"name\":\"process_name\""), d->nprocess);
  assert_int_equal(count(json, "\"name\":\"thread_name\""), d->nthread);
  for (size_t i = 0; i < d->ntracks; i++) {
    const track *t = &d->tracks[i];
    char key[200];
    if (t->tid == -1)
      snprintf(key, sizeof key,
               "\"process_name\",\"pid\":%lld,\"args\":{\"name\":\"%s\"}",
               (long long)t->pid, t->name);
    else if (t->tid >= 0)
      snprintf(
          key, sizeof key,
          "\"thread_name\",\"pid\":%lld,\"tid\":%d,\"args\":{\"name\":\"%s\"}",
          (long long)t->pid, t->tid, t->name);
    else
      continue;
    assert_non_null(strstr(json, key));
  }
}

/* The small GPT unfolded with interference: every op unmerged on 64 ranks. */
static void test_pftrace_matches_json(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
  cfg.training.global_batch = 16;
  cfg.simulation.fold = 0;
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_test_buf json, pf;
  sc_result rj, rp;
  traced(&cfg, SC_TRACE_OUT_JSON, NULL, 0, &json, &rj);
  traced(&cfg, SC_TRACE_OUT_PERFETTO, NULL, 0, &pf, &rp);
  assert_true(rj.step_time_s == rp.step_time_s);
  decoded d;
  decode(&pf, &d);
  slices js = json_slices(json.p);
  assert_true(js.n > 1000);
  same_slices(&js, &d.sl);
  same_tracks(json.p, &d);
  assert_int_equal(d.nprocess, 64);
  assert_int_equal(d.ncounter_tracks, 64);
  assert_int_equal(d.ncounters, count(json.p, "\"ph\":\"C\""));
  assert_null(d.note);
  /* every packet is a track, a slice's begin or end, or a counter value */
  assert_int_equal(d.trace->n_packet, d.ntracks + 2 * d.sl.n + d.ncounters);
  /* interning and varints: well under half the JSON */
  assert_true(pf.len * 2 < json.len);
  print_message("json %zu bytes, pftrace %zu bytes, %zu slices\n", json.len,
                pf.len, js.n);
  decoded_free(&d);
  free(js.v);
  free(json.p);
  free(pf.p);
}

/* --trace-ranks folded: a rank stands for its stage's class; ranges in any
 * order, overlapping; the note says how they were mapped. */
static void test_trace_ranks_folded(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg),
                   0); /* tp 2 pp 4 dp 8: 16 ranks a stage */
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  assert_true(cfg.simulation.fold);
  sc_rank_range r[] = {
      {40, 47}, {17, 17}, {18, 20}}; /* stage 2, stage 1 twice */
  sc_test_buf json, pf;
  sc_result res;
  traced(&cfg, SC_TRACE_OUT_JSON, r, 3, &json, &res);
  traced(&cfg, SC_TRACE_OUT_PERFETTO, r, 3, &pf, &res);
  assert_int_equal(count(json.p, "\"name\":\"process_name\""), 2);
  assert_non_null(strstr(json.p, "\"args\":{\"name\":\"rank 16 (stage 1)\"}"));
  assert_non_null(strstr(json.p, "\"args\":{\"name\":\"rank 32 (stage 2)\"}"));
  const char *note =
      strstr(json.p, "],\"otherData\":{\"stepcast_trace_ranks\":\"");
  assert_non_null(note);
  assert_non_null(strstr(note, "40-47,17,18-20 of ranks 0-63"));
  assert_non_null(strstr(note, "folded"));
  assert_non_null(strstr(note, "2 of 4 classes traced"));
  slices js = json_slices(json.p);
  for (size_t i = 0; i < js.n; i++)
    assert_true(js.v[i].pid == 16 || js.v[i].pid == 32);
  decoded d;
  decode(&pf, &d);
  same_slices(&js, &d.sl);
  same_tracks(json.p, &d);
  assert_non_null(d.note);
  assert_non_null(strstr(d.note, "2 of 4 classes traced"));
  assert_int_equal(d.trace->n_packet, d.ntracks + 2 * d.sl.n + d.ncounters + 1);
  decoded_free(&d);
  free(js.v);
  free(json.p);
  free(pf.p);
}

/* Unfolded, the chosen ranks themselves; the estimate shrinks with them. */
static void test_trace_ranks_unfolded(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
  cfg.training.global_batch = 16;
  cfg.simulation.fold = 0;
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_rank_range r[] = {{0, 0}, {5, 6}, {6, 6}};
  sc_test_buf json;
  sc_result res;
  traced(&cfg, SC_TRACE_OUT_JSON, r, 3, &json, &res);
  assert_int_equal(count(json.p, "\"name\":\"process_name\""), 3);
  assert_non_null(strstr(json.p, "3 of 64 simulated ranks traced"));
  slices js = json_slices(json.p);
  for (size_t i = 0; i < js.n; i++)
    assert_true(js.v[i].pid == 0 || js.v[i].pid == 5 || js.v[i].pid == 6);
  double all = 0, some = 0, pf = 0;
  sc_trace_opts o = {SC_TRACE_OUT_JSON, r, 3},
                p = {SC_TRACE_OUT_PERFETTO, NULL, 0};
  assert_int_equal(sc_trace_estimate(ctx, &cfg, &all), 0);
  assert_int_equal(sc_trace_estimate_opts(ctx, &cfg, &o, &some), 0);
  assert_int_equal(sc_trace_estimate_opts(ctx, &cfg, &p, &pf), 0);
  assert_true(fabs(some - all * 3.0 / 64.0) < 1e-6 * all);
  assert_true(pf < all / 2);
  free(js.v);
  free(json.p);
}

/* Ranks outside the job: SC_EINVAL before anything is simulated. */
static void test_trace_ranks_out_of_range(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_rank_range bad[][1] = {{{0, 64}}, {{-1, 3}}, {{9, 8}}};
  for (int i = 0; i < 3; i++) {
    sc_trace_opts o = {SC_TRACE_OUT_PERFETTO, bad[i], 1};
    double est;
    assert_int_equal(sc_trace_estimate_opts(ctx, &cfg, &o, &est), SC_EINVAL);
    assert_non_null(strstr(sc_errmsg(ctx), "trace ranks: "));
    sc_test_buf b = {0};
    sc_result res;
    assert_int_equal(
        sc_simulate_traced(ctx, &cfg, &o, sc_test_buf_write, &b, &res),
        SC_EINVAL);
    assert_int_equal(b.len, 0);
    free(b.p);
  }
  assert_non_null(strstr(sc_errmsg(ctx), "9-8 is an empty range"));
}

/* ------------------------------------------------------------ replay */

/* A shipped job (the .scw corpus: one traced rank of a 2-rank Kineto job)
 * and the cluster config the CLI builds for its replay. NULL when the
 * source tree is not at hand. */
static sc_job *shipped_job(sc_config *cfg) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/fuzz/corpus-scw/kineto-small.scw",
           sc_test_source_dir());
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  unsigned char img[1 << 16];
  size_t len = fread(img, 1, sizeof img, f);
  fclose(f);
  assert_true(len > 0 && len < sizeof img);
  sc_job *job;
  assert_int_equal(sc_job_read(ctx, path, img, len, &job), 0);
  sc_job_info info;
  sc_job_get_info(job, &info);
  sc_test_example(cfg);
  assert_int_equal(sc_config_set(ctx, cfg, "cluster.gpu=a100-80gb"), 0);
  cfg->parallel.tp = cfg->parallel.pp = cfg->parallel.cp = cfg->parallel.vpp = 1;
  cfg->parallel.dp = 0;
  cfg->cluster.num_gpus = info.world;
  cfg->cluster.nodes = 0;
  cfg->cluster.gpus_per_node = info.world;
  cfg->training.micro_batch = 1;
  cfg->training.global_batch = info.world;
  assert_int_equal(sc_config_resolve(ctx, cfg), 0);
  return job;
}

static void replayed(const sc_job *job, const sc_config *cfg,
                     sc_trace_out_format f, const sc_rank_range *r, size_t nr,
                     sc_test_buf *out, sc_replay_result *res) {
  sc_trace_opts o = {f, r, nr};
  sc_replay_opts ro = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  memset(out, 0, sizeof *out);
  int rc = sc_replay_traced(ctx, job, cfg, &ro, &o, sc_test_buf_write, out, res);
  if (rc)
    fail_msg("%s", sc_errmsg(ctx));
}

/* A replay's .pftrace decodes to the slices and tracks of its JSON trace,
 * well under its size, and within the estimate's reach; --trace-ranks
 * keeps the note; ranks outside the world, or holding no traced rank, are
 * refused before anything is written. */
static void test_replay_pftrace(void **state) {
  (void)state;
  sc_config cfg;
  sc_job *job = shipped_job(&cfg);
  if (!job) {
    print_message("skipped (run from the source tree or set SC_SOURCE_DIR)\n");
    return;
  }
  sc_test_buf json, pf;
  sc_replay_result rj, rp;
  replayed(job, &cfg, SC_TRACE_OUT_JSON, NULL, 0, &json, &rj);
  replayed(job, &cfg, SC_TRACE_OUT_PERFETTO, NULL, 0, &pf, &rp);
  assert_true(rj.predicted_step_s == rp.predicted_step_s);
  decoded d;
  decode(&pf, &d);
  slices js = json_slices(json.p);
  assert_true(js.n > 10);
  same_slices(&js, &d.sl);
  same_tracks(json.p, &d);
  assert_int_equal(d.nprocess, 1);
  assert_int_equal(d.ncounter_tracks, 0); /* replays have no memory model */
  assert_null(d.note);
  assert_true(pf.len * 2 < json.len);
  sc_replay_opts ro = {.scale_dp = 0, .replica_ranks = 1, .comm = SC_REPLAY_COMM_AUTO};
  double ej, ep;
  sc_trace_opts oj = {SC_TRACE_OUT_JSON, NULL, 0}, op = {SC_TRACE_OUT_PERFETTO, NULL, 0};
  assert_int_equal(sc_replay_trace_estimate(ctx, job, &ro, &oj, &ej), 0);
  assert_int_equal(sc_replay_trace_estimate(ctx, job, &ro, &op, &ep), 0);
  print_message("replay: json %zu bytes (estimate %.0f), pftrace %zu (estimate %.0f)\n",
                json.len, ej, pf.len, ep);
  /* a few hundred ops: the tracks' share makes the estimate coarse */
  assert_true(ej >= (double)json.len && ej <= 2.0 * (double)json.len);
  assert_true(ep >= (double)pf.len && ep <= 2.0 * (double)pf.len);
  decoded_free(&d);
  free(js.v);
  free(json.p);
  free(pf.p);

  /* ranks 0-1 of the 2-rank world hold the traced rank: its timeline, noted */
  int64_t traced = job->ranks[0].rank;
  sc_rank_range all = {0, 1};
  replayed(job, &cfg, SC_TRACE_OUT_PERFETTO, &all, 1, &pf, &rp);
  decode(&pf, &d);
  assert_int_equal(d.nprocess, 1);
  assert_non_null(d.note);
  assert_non_null(strstr(d.note, "0-1 of ranks 0-1; 1 of 1 simulated ranks traced"));
  decoded_free(&d);
  free(pf.p);

  sc_rank_range bad[][1] = {{{0, 2}}, {{1 - traced, 1 - traced}}, {{1, 0}}};
  const char *why[] = {"out of range [0, 1]", "holds none of the 1 traced rank(s)",
                       "is an empty range"};
  for (int i = 0; i < 3; i++) {
    sc_trace_opts o = {SC_TRACE_OUT_PERFETTO, bad[i], 1};
    double est;
    assert_int_equal(sc_replay_trace_estimate(ctx, job, &ro, &o, &est), SC_EINVAL);
    assert_non_null(strstr(sc_errmsg(ctx), why[i]));
    sc_test_buf b = {0};
    assert_int_equal(sc_replay_traced(ctx, job, &cfg, &ro, &o, sc_test_buf_write, &b, &rp),
                     SC_EINVAL);
    assert_int_equal(b.len, 0);
    free(b.p);
  }
  sc_job_free(job);
}

static int failing_sink(void *ud, const char *buf, size_t len) {
  (void)ud, (void)buf, (void)len;
  return SC_EWRITE;
}

static void test_pftrace_write_error(void **state) {
  (void)state;
  sc_config cfg;
  assert_int_equal(sc_test_small_gpt(ctx, &cfg), 0);
  assert_int_equal(sc_config_resolve(ctx, &cfg), 0);
  sc_trace_opts o = {SC_TRACE_OUT_PERFETTO, NULL, 0};
  sc_result res;
  assert_int_equal(sc_simulate_traced(ctx, &cfg, &o, failing_sink, NULL, &res),
                   SC_EWRITE);
}

static int setup(void **state) {
  (void)state;
  return sc_test_ctx_new(&ctx);
}

static int teardown(void **state) {
  (void)state;
  sc_ctx_free(ctx);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pftrace_matches_json),
      cmocka_unit_test(test_trace_ranks_folded),
      cmocka_unit_test(test_trace_ranks_unfolded),
      cmocka_unit_test(test_trace_ranks_out_of_range),
      cmocka_unit_test(test_pftrace_write_error),
      cmocka_unit_test(test_replay_pftrace),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
