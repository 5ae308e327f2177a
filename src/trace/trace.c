/*
 * trace.c: the feed-style trace reader (sc_trace_open/feed/finish): the
 * compression feed (feed.c) in front of the format handler (kineto.c,
 * exsitu.c, chakra.c), so every encoding takes the same path. Also the small
 * vocabulary the handlers share: dtype sizes, collective names, and the
 * wording of JSON and Chrome-trace reader errors.
 */
#include "trace/trace_int.h"

#include "base/json_int.h"
#include "trace/chrome_int.h"

#include "ir/ir_int.h"

#include <stdio.h>

int sc__trace_fail(sc_trace_reader *r, int code, uint64_t offset, const char *fmt, ...) {
  if (!r->err) {
    va_list ap;
    va_start(ap, fmt);
    r->err = sc__error_atv(r->ctx, code, r->name, (int64_t)offset, fmt, ap);
    va_end(ap);
  }
  return r->err;
}

/* The feed's sink: decompressed bytes to the handler, whose error becomes
 * the reader's. */
static int to_handler(void *ud, const char *buf, size_t len) {
  sc_trace_reader *r = ud;
  int rc = r->h->data(r, buf, len);
  if (rc && !r->err) r->err = rc;
  return rc;
}

/* A failed feed call: its own errors (corrupt, truncated, ...) worded with
 * the file name and stored-byte offset; the handler's are already set. */
static int feed_failed(sc_trace_reader *r, int rc) {
  if (r->feed.errmsg[0]) return sc__trace_fail(r, rc, r->feed.err_off, "%s", r->feed.errmsg);
  return rc;
}

int sc_trace_open(sc_job *job, sc_trace_format fmt, const char *name, int64_t rank_hint,
                  sc_trace_reader **out) {
  sc_ctx *ctx = job->ctx;
  *out = NULL;
  sc_trace_reader *r = sc__calloc(ctx, 1, sizeof *r);
  if (!r) return SC_ENOMEM;
  r->ctx = ctx;
  r->job = job;
  sc__strlcpy(r->name, name ? name : "trace", sizeof r->name);
  r->rank_hint = rank_hint >= 0 ? rank_hint : job->opened;
  job->opened++;
  r->fmt = fmt;
  r->h = fmt == SC_TRACE_CHAKRA                           ? &sc__chakra_handler
         : fmt == SC_TRACE_CPU || fmt == SC_TRACE_CPU_OF_GPU ? &sc__exsitu_handler
                                                             : &sc__kineto_handler;
  int rc = sc__feed_init(&r->feed, ctx, to_handler, r);
  if (!rc) rc = sc__job_intern(job, r->name, strlen(r->name), &r->name_id);
  if (!rc) rc = r->h->open(r);
  if (rc) {
    sc_trace_free(r);
    return rc;
  }
  *out = r;
  return SC_OK;
}

void sc_trace_free(sc_trace_reader *r) {
  if (!r) return;
  if (r->state) r->h->close(r);
  sc__feed_free(&r->feed);
  sc__free(r->ctx, r, sizeof *r);
}

uint64_t sc_trace_bytes(const sc_trace_reader *r) { return r->feed.out_bytes; }

int sc_trace_feed(sc_trace_reader *r, const void *buf, size_t len) {
  if (r->err) return r->err;
  int rc = sc__feed_put(&r->feed, buf, len);
  return rc ? feed_failed(r, rc) : SC_OK;
}

int sc_trace_finish(sc_trace_reader *r) {
  if (r->err) return r->err;
  int rc = sc__feed_end(&r->feed);
  if (rc) return feed_failed(r, rc);
  rc = r->h->finish(r);
  if (rc && !r->err) r->err = rc;
  return rc;
}

/* ------------------------------------------------------------ vocabulary */

static int eq(const char *s, size_t n, const char *lit) {
  size_t k = strlen(lit);
  if (n != k) return 0;
  for (size_t i = 0; i < n; i++) {
    char a = s[i], b = lit[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

int sc__trace_pump(sc_trace_reader *r, sc_json *j, int (*on_token)(sc_trace_reader *r, const sc_jtok *t)) {
  sc_jtok t;
  int rc;
  while ((rc = sc__json_next(j, &t)) == 1) {
    int e = on_token(r, &t);
    if (e) return r->err ? r->err : (r->err = e);
  }
  if (rc == SC_ENOMEM) return sc__trace_fail(r, SC_ENOMEM, j->err_off, "out of memory");
  if (rc < 0) return sc__trace_fail(r, SC_EINVAL, j->err_off, "invalid JSON: %s", j->errmsg);
  return SC_OK;
}

int sc__trace_chrome_fail(sc_trace_reader *r, const sc_chrome *c, int rc) {
  switch (c->err_kind) {
  case SC_CHROME_EJSON:
    if (rc == SC_ENOMEM) return sc__trace_fail(r, SC_ENOMEM, c->err_off, "out of memory");
    return sc__trace_fail(r, SC_EINVAL, c->err_off, "invalid JSON: %s", c->errmsg);
  case SC_CHROME_EFORMAT:
    return sc__trace_fail(r, rc, c->err_off, "%s", c->errmsg);
  default:
    return r->err ? r->err : (r->err = rc);
  }
}

int sc__trace_devices(sc_trace_reader *r, const sc_jtok *v, size_t n,
                      int (*dev)(void *ud, int64_t id, uint32_t name), void *ud) {
  if (!n || v[0].type != SC_JT_ARR_BEGIN) return SC_OK;
  int key = 0; /* 1 id, 2 name, 0 another member */
  int64_t id = -1;
  uint32_t name = 0;
  int have_id = 0;
  for (size_t i = 1; i < n;) {
    const sc_jtok *t = &v[i];
    int rc = SC_OK;
    if (t->depth == 1 && t->type == SC_JT_OBJ_BEGIN) {
      id = -1, name = 0, have_id = 0;
    } else if (t->depth == 1 && t->type == SC_JT_OBJ_END) {
      if (have_id) rc = dev(ud, id, name);
    } else if (t->depth == 2 && t->type == SC_JT_KEY) {
      key = t->n == 2 && !memcmp(t->s, "id", 2) ? 1 : t->n == 4 && !memcmp(t->s, "name", 4) ? 2 : 0;
    } else if (t->depth == 2 && t->type == SC_JT_NUMBER && key == 1) {
      if (sc__json_int(t->s, t->n, &id)) sc__job_warn(r->job, "%s: non-integer \"id\" ignored", r->name);
      else have_id = 1;
    } else if (t->depth == 2 && t->type == SC_JT_STRING && key == 2) {
      char buf[128];
      size_t len = t->escaped ? sc__json_unescape(t->s, t->n, buf, sizeof buf) : t->n;
      if (!t->escaped) memcpy(buf, t->s, len < sizeof buf ? len : sizeof buf - 1);
      if (len > sizeof buf - 1) len = sizeof buf - 1;
      rc = sc__job_intern(r->job, buf, len, &name) ? SC_ENOMEM : SC_OK;
    } else if (t->depth > 0 && (t->type == SC_JT_OBJ_BEGIN || t->type == SC_JT_ARR_BEGIN)) {
      i = sc__chrome_next(v, n, i); /* a nested value (or a non-object entry): passed over whole */
      continue;
    }
    if (rc) return rc;
    i++;
  }
  return SC_OK;
}

int sc__trace_push(sc_ctx *ctx, void **arr, size_t size, size_t *n, size_t *cap, const void *item) {
  if (*n >= UINT32_MAX - 1 || sc__grow(ctx, arr, size, cap, *n + 1)) return SC_ENOMEM;
  memcpy((char *)*arr + *n * size, item, size);
  (*n)++;
  return SC_OK;
}

double sc__dtype_bytes(const char *s, size_t n) {
  /* Strip a "c10::" or "at::" namespace and a trailing '*'. */
  if (n > 5 && !memcmp(s, "c10::", 5)) s += 5, n -= 5;
  static const struct {
    const char *name;
    double bytes;
  } t[] = {{"float", 4},       {"float32", 4},     {"int", 4},         {"int32", 4},
           {"int32_t", 4},     {"uint32_t", 4},    {"unsigned int", 4}, {"half", 2},
           {"float16", 2},     {"bfloat16", 2},    {"__nv_bfloat16", 2}, {"bf16", 2},
           {"__half", 2},      {"short", 2},       {"int16", 2},       {"double", 8},
           {"float64", 8},     {"long", 8},        {"long int", 8},    {"int64", 8},
           {"int64_t", 8},     {"uint64_t", 8},    {"long long", 8},   {"byte", 1},
           {"char", 1},        {"bool", 1},        {"int8", 1},        {"int8_t", 1},
           {"uint8", 1},       {"uint8_t", 1},     {"unsigned char", 1}, {"signed char", 1},
           {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"fp8", 1},       {"complexfloat", 8},
           {"complexdouble", 16}, {"complexhalf", 4}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (eq(s, n, t[i].name)) return t[i].bytes;
  return 0;
}

int sc__coll_from_name(const char *s, size_t n) {
  /* Drop "nccl:", "c10d::", leading underscores and a trailing '_' (c10d's
   * in-place op names). */
  if (n > 5 && !memcmp(s, "nccl:", 5)) s += 5, n -= 5;
  if (n > 6 && !memcmp(s, "c10d::", 6)) s += 6, n -= 6;
  while (n && *s == '_') s++, n--;
  while (n && s[n - 1] == '_') n--;
  static const struct {
    const char *name;
    int coll;
  } t[] = {{"allreduce", SC_COLL_ALLREDUCE},
           {"all_reduce", SC_COLL_ALLREDUCE},
           {"allreduce_coalesced", SC_COLL_ALLREDUCE},
           {"all_reduce_coalesced", SC_COLL_ALLREDUCE},
           {"allreduce_sparse", SC_COLL_ALLREDUCE},
           {"barrier", SC_COLL_ALLREDUCE}, /* c10d's barrier is a 1-element all-reduce */
           {"allgather", SC_COLL_ALLGATHER},
           {"all_gather", SC_COLL_ALLGATHER},
           {"allgather_base", SC_COLL_ALLGATHER},
           {"all_gather_base", SC_COLL_ALLGATHER},
           {"allgather_into_tensor", SC_COLL_ALLGATHER},
           {"all_gather_into_tensor", SC_COLL_ALLGATHER},
           {"allgather_into_tensor_coalesced", SC_COLL_ALLGATHER},
           {"allgather_coalesced", SC_COLL_ALLGATHER},
           {"reducescatter", SC_COLL_REDUCESCATTER},
           {"reduce_scatter", SC_COLL_REDUCESCATTER},
           {"reduce_scatter_base", SC_COLL_REDUCESCATTER},
           {"reduce_scatter_tensor", SC_COLL_REDUCESCATTER},
           {"reduce_scatter_tensor_coalesced", SC_COLL_REDUCESCATTER},
           {"alltoall", SC_COLL_ALLTOALL},
           {"all_to_all", SC_COLL_ALLTOALL},
           {"alltoall_base", SC_COLL_ALLTOALL},
           {"all_to_all_single", SC_COLL_ALLTOALL},
           {"all_to_allv", SC_COLL_ALLTOALL},
           {"broadcast", SC_COLL_BROADCAST},
           /* NCCL's ring reduce moves the same bytes per link as its ring
            * broadcast (nccl-tests doc/PERFORMANCE.md: bus factor 1 for
            * both), so reduce is priced as a broadcast. */
           {"reduce", SC_COLL_BROADCAST},
           {"send", -1},
           {"recv", -1},
           {"sendrecv", -1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (eq(s, n, t[i].name)) return t[i].coll;
  return -2;
}
