/*
 * chakra.c: importer of MLCommons Chakra execution traces, one rank per
 * file. Two encodings: the Chakra ET protobuf (varint-delimited
 * GlobalMetadata then Node messages, decoded with protobuf-c from
 * chakra_et.proto) and the PyTorch host execution-trace JSON that Chakra's
 * converter starts from (streamed with the JSON tokenizer; it has no
 * durations, so only its collectives and waits become ops). The first
 * non-blank byte picks the encoding.
 */
#include "chakra_et.pb-c.h"
#include "base/json_int.h"
#include "trace/trace_int.h"
#include "ir/ir_int.h"

#include <stdio.h>
#include <stdlib.h>

/* qsort/bsearch that accept an empty array (the C library's do not take a
 * NULL base, even for zero items). */
static void sort_items(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}
static void *find_item(const void *key, const void *base, size_t n, size_t size,
                       int (*cmp)(const void *, const void *)) {
  return n ? bsearch(key, base, n, size, cmp) : NULL;
}

/* Largest single protobuf message accepted (a node carries its tensor
 * lists as text; real ones stay under a few hundred KiB). */
#define MAX_MSG_BYTES (64u << 20)
/* The reader ends on any input, by content: a node message is never empty
 * (a node has at least an id or a type), so a run of zero bytes (/dev/zero,
 * a zeroed file) stops at its second byte; a length varint has at most 10
 * bytes; at most MAX_MESSAGES messages (kept or ignored), 2^25, and
 * SC_TRACE_MAX_RECORDS nodes, SC_JOB_MAX_DEPS dependencies are read. */
#define MAX_MESSAGES ((int64_t)1 << 25)

typedef struct cnode {  /* a node, compacted */
  uint64_t id;
  int64_t dur_ns, start_ns; /* start -1: not recorded */
  double bytes, flops;
  uint32_t name;
  uint32_t dep_off, ndeps;  /* ids in cdeps */
  int64_t tid;              /* stream (GPU) or thread (CPU) */
  uint8_t kind;             /* SC_JOP_* */
  uint8_t coll;
  uint8_t cpu;
} cnode;

/* protobuf-c's allocator: through the context hook; a failure is noted so
 * that a NULL from unpack reads as "out of memory", not "invalid". */
typedef struct pa_state {
  sc_ctx *ctx;
  int oom;
} pa_state;
typedef struct chk {
  int mode;               /* 0 undecided, 1 protobuf, 2 JSON */
  /* protobuf framing */
  uint64_t msg_len;
  int len_shift;          /* varint bytes read so far (7 bits each) */
  int in_msg;
  unsigned char *msg;
  size_t msg_have, msg_cap;
  uint64_t msg_off;       /* stream offset of the message */
  int64_t nmsg;
  ProtobufCAllocator pa;
  pa_state pas;
  /* nodes */
  cnode *nodes;
  size_t nnodes, nodes_cap;
  uint64_t *deps;
  size_t ndeps, deps_cap;
  int64_t world;          /* from the trace, 0 unknown */
  /* host ET JSON */
  sc_json j;
  int jstate;             /* see on_json */
  int jkey;
  int skip;
  int64_t j_id;
  char j_name[128];
  int in_inputs, in_outputs;
  char coll_name[64];
  int64_t last_int;
  double in_bytes, out_bytes;
  int64_t tensor[5];      /* a candidate tensor descriptor being read */
  int tensor_n, tensor_ok;
  int pg_init;
} chk;

static chk *C(sc_trace_reader *r) { return r->state; }

#define KEY(t, lit) ((t)->n == sizeof(lit) - 1 && !memcmp((t)->s, lit, sizeof(lit) - 1))

static void *pa_alloc(void *ud, size_t n) {
  pa_state *s = ud;
  void *p = sc__trace_alloc(s->ctx, n);
  if (!p) s->oom = 1;
  return p;
}
static void pa_free(void *ud, void *p) { sc__trace_free_block(((pa_state *)ud)->ctx, p); }


static int chk_open(sc_trace_reader *r) {
  chk *c = sc__calloc(r->ctx, 1, sizeof *c);
  if (!c) return SC_ENOMEM;
  c->pa.alloc = pa_alloc;
  c->pa.free = pa_free;
  c->pas.ctx = r->ctx;
  c->pa.allocator_data = &c->pas;
  c->skip = -1;
  sc__json_init(&c->j, r->ctx);
  r->state = c;
  return SC_OK;
}

static void chk_close(sc_trace_reader *r) {
  chk *c = C(r);
  sc__json_free(&c->j);
  sc__free(r->ctx, c->msg, c->msg_cap);
  sc__free(r->ctx, c->nodes, c->nodes_cap * sizeof *c->nodes);
  sc__free(r->ctx, c->deps, c->deps_cap * sizeof *c->deps);
  sc__free(r->ctx, c, sizeof *c);
  r->state = NULL;
}

static int add_node(sc_trace_reader *r, const cnode *n) {
  chk *c = C(r);
  if ((int64_t)c->nnodes >= SC_TRACE_MAX_RECORDS)
    return sc__trace_fail(r, SC_EINVAL, c->msg_off, "more than %lld Chakra nodes: too many for one rank",
                          (long long)SC_TRACE_MAX_RECORDS);
  if (sc__grow(r->ctx, (void **)&c->nodes, sizeof *c->nodes, &c->nodes_cap, c->nnodes + 1)) return SC_ENOMEM;
  c->nodes[c->nnodes++] = *n;
  return SC_OK;
}

static int add_dep(sc_trace_reader *r, uint64_t id) {
  chk *c = C(r);
  if ((int64_t)c->ndeps >= SC_JOB_MAX_DEPS)
    return sc__trace_fail(r, SC_EINVAL, c->msg_off, "more than %lld dependencies: too many for one rank",
                          (long long)SC_JOB_MAX_DEPS);
  if (sc__grow(r->ctx, (void **)&c->deps, sizeof *c->deps, &c->deps_cap, c->ndeps + 1)) return SC_ENOMEM;
  c->deps[c->ndeps++] = id;
  c->nodes[c->nnodes - 1].ndeps++;
  return SC_OK;
}

/* ------------------------------------------------------------ protobuf */

static int chakra_coll(int64_t t) {
  switch (t) {
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__ALL_REDUCE:
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__BARRIER:
    return SC_COLL_ALLREDUCE;
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__ALL_GATHER:
    return SC_COLL_ALLGATHER;
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER_BLOCK:
    return SC_COLL_REDUCESCATTER;
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__ALL_TO_ALL:
    return SC_COLL_ALLTOALL;
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__BROADCAST:
  case SC_CHAKRA__COLLECTIVE_COMM_TYPE__REDUCE: /* same ring traffic as broadcast */
    return SC_COLL_BROADCAST;
  default:
    return SC_JCOLL_UNKNOWN; /* gather, scatter: priced as traced */
  }
}

static int attr_int(const ScChakra__Attribute *a, int64_t *v) {
  switch (a->value_case) {
  case SC_CHAKRA__ATTRIBUTE__VALUE_INT32_VAL: *v = a->int32_val; return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_INT64_VAL: *v = a->int64_val; return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_UINT32_VAL: *v = a->uint32_val; return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_UINT64_VAL:
    *v = a->uint64_val > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->uint64_val;
    return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_SINT32_VAL: *v = a->sint32_val; return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_SINT64_VAL: *v = a->sint64_val; return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_BOOL_VAL: *v = a->bool_val; return 1;
  case SC_CHAKRA__ATTRIBUTE__VALUE_DOUBLE_VAL: *v = (int64_t)a->double_val; return 1;
  default: return 0;
  }
}

static int on_message(sc_trace_reader *r) {
  chk *c = C(r);
  if (c->nmsg++ == 0) {
    ScChakra__GlobalMetadata *m = sc_chakra__global_metadata__unpack(&c->pa, c->msg_have, c->msg);
    if (!m && c->pas.oom) return sc__trace_fail(r, SC_ENOMEM, c->msg_off, "out of memory");
    if (!m) return sc__trace_fail(r, SC_EINVAL, c->msg_off, "invalid Chakra global metadata message");
    sc_chakra__global_metadata__free_unpacked(m, &c->pa);
    return SC_OK;
  }
  if (c->msg_have == 0) return sc__trace_fail(r, SC_EINVAL, c->msg_off, "empty Chakra node message");
  if (c->nmsg > MAX_MESSAGES)
    return sc__trace_fail(r, SC_EINVAL, c->msg_off, "more than %lld Chakra messages: too many for one rank",
                          (long long)MAX_MESSAGES);
  ScChakra__Node *m = sc_chakra__node__unpack(&c->pa, c->msg_have, c->msg);
  if (!m && c->pas.oom) return sc__trace_fail(r, SC_ENOMEM, c->msg_off, "out of memory");
  if (!m) return sc__trace_fail(r, SC_EINVAL, c->msg_off, "invalid Chakra node message");
  cnode n;
  memset(&n, 0, sizeof n);
  n.id = m->id;
  /* Times in the job's bounds (job_int.h): a duration at most SC_WORK_MAX
   * (2^50 ns), a start at most SC_TIME_MAX (2^61 ns), in microseconds. */
  if ((double)m->duration_micros * 1000 > SC_WORK_MAX || (double)m->start_time_micros * 1000 > (double)SC_TIME_MAX) {
    int dur = (double)m->duration_micros * 1000 > SC_WORK_MAX;
    unsigned long long id = (unsigned long long)m->id, v = dur ? m->duration_micros : m->start_time_micros;
    sc_chakra__node__free_unpacked(m, &c->pa);
    return sc__trace_fail(r, SC_EINVAL, c->msg_off, "node %llu: %s: %llu us out of range [0, %lld]", id,
                          dur ? "duration_micros" : "start_time_micros", v,
                          (long long)(dur ? (int64_t)SC_WORK_MAX : SC_TIME_MAX) / 1000);
  }
  n.dur_ns = (int64_t)m->duration_micros * 1000;
  n.start_ns = m->start_time_micros ? (int64_t)m->start_time_micros * 1000 : -1;
  n.coll = SC_JCOLL_UNKNOWN;
  n.cpu = 1;
  int64_t comm_type = -1;
  for (size_t i = 0; i < m->n_attr; i++) {
    const ScChakra__Attribute *a = m->attr[i];
    int64_t v;
    if (!a->name || !attr_int(a, &v)) continue;
    if (!strcmp(a->name, "is_cpu_op")) n.cpu = v != 0;
    else if (!strcmp(a->name, "tid")) n.tid = v;
    else if (!strcmp(a->name, "comm_type")) comm_type = v;
    else if (!strcmp(a->name, "comm_size") && v > 0) n.bytes = (double)v > SC_JOB_MAX_BYTES ? -1 : (double)v;
    else if (!strcmp(a->name, "num_ops") && v > 0) n.flops = (double)v;
  }
  if (n.bytes < 0) {
    unsigned long long id = (unsigned long long)m->id;
    sc_chakra__node__free_unpacked(m, &c->pa);
    return sc__trace_fail(r, SC_EINVAL, c->msg_off, "node %llu: comm_size out of range [0, %.0f]", id,
                          SC_JOB_MAX_BYTES);
  }
  int rc = SC_OK;
  switch (m->type) {
  case SC_CHAKRA__NODE_TYPE__COMP_NODE:
  case SC_CHAKRA__NODE_TYPE__MEM_LOAD_NODE:
  case SC_CHAKRA__NODE_TYPE__MEM_STORE_NODE:
    n.kind = n.cpu ? SC_JOP_HOST : SC_JOP_KERNEL;
    break;
  case SC_CHAKRA__NODE_TYPE__COMM_COLL_NODE:
    /* The CPU side of a collective (c10d::allgather_ ...) is host time; the
     * GPU side (the NCCL kernel) is the collective. */
    n.kind = n.cpu ? SC_JOP_HOST : SC_JOP_COLL;
    if (!n.cpu) n.coll = comm_type >= 0 ? (uint8_t)chakra_coll(comm_type) : SC_JCOLL_UNKNOWN;
    break;
  case SC_CHAKRA__NODE_TYPE__COMM_SEND_NODE:
    n.kind = n.cpu ? SC_JOP_HOST : SC_JOP_SEND;
    break;
  case SC_CHAKRA__NODE_TYPE__COMM_RECV_NODE:
    n.kind = n.cpu ? SC_JOP_HOST : SC_JOP_RECV;
    break;
  default:
    sc__job_warn(r->job, "%s: Chakra nodes of unsupported type ignored", r->name);
    sc_chakra__node__free_unpacked(m, &c->pa);
    return SC_OK;
  }
  rc = sc__job_intern(r->job, m->name ? m->name : "", m->name ? strlen(m->name) : 0, &n.name);
  if (!rc) rc = add_node(r, &n);
  for (size_t i = 0; !rc && i < m->n_ctrl_deps; i++) rc = add_dep(r, m->ctrl_deps[i]);
  for (size_t i = 0; !rc && i < m->n_data_deps; i++) rc = add_dep(r, m->data_deps[i]);
  sc_chakra__node__free_unpacked(m, &c->pa);
  return rc;
}

/* Splits the byte stream into varint-delimited messages. */
static int proto_data(sc_trace_reader *r, const unsigned char *p, size_t n, uint64_t base) {
  chk *c = C(r);
  size_t i = 0;
  while (i < n) {
    if (!c->in_msg) {
      unsigned char b = p[i++];
      if (c->len_shift == 0) c->msg_off = base + i - 1;
      if (c->len_shift >= 63) return sc__trace_fail(r, SC_EINVAL, c->msg_off, "invalid message length");
      c->msg_len |= (uint64_t)(b & 0x7f) << c->len_shift;
      c->len_shift += 7;
      if (b & 0x80) continue;
      if (c->msg_len > MAX_MSG_BYTES)
        return sc__trace_fail(r, SC_EINVAL, c->msg_off, "message of %llu bytes is too large",
                              (unsigned long long)c->msg_len);
      c->in_msg = 1;
      c->msg_have = 0;
      if (sc__grow(r->ctx, (void **)&c->msg, 1, &c->msg_cap, c->msg_len ? c->msg_len : 1)) return SC_ENOMEM;
    }
    size_t want = (size_t)c->msg_len - c->msg_have, take = n - i < want ? n - i : want;
    memcpy(c->msg + c->msg_have, p + i, take);
    c->msg_have += take;
    i += take;
    if (c->msg_have == c->msg_len) {
      int rc = on_message(r);
      if (rc) return rc;
      c->in_msg = 0;
      c->msg_len = 0;
      c->len_shift = 0;
    }
  }
  return SC_OK;
}

/* ------------------------------------------------------------ host ET JSON */

/* Layout: {"schema":..., "nodes":[{"id":N, "name":S, "inputs":{"values":
 * [...]}, "outputs":{"values":[...]}, ...}, ...]}. A record_param_comms
 * node carries (c10d's RECORD_PARAM_COMMS) the tensors, then scalars and the
 * collective's name; tensors are lists [id, storage, offset, numel,
 * elem_bytes, device]. */
enum { JK_NONE = 0, JK_ID, JK_NAME, JK_INPUTS, JK_OUTPUTS, JK_VALUES };

static int json_end_node(sc_trace_reader *r) {
  chk *c = C(r);
  if (c->pg_init) return SC_OK;
  if (strcmp(c->j_name, "record_param_comms") || !c->coll_name[0]) return SC_OK;
  cnode n;
  memset(&n, 0, sizeof n);
  n.id = (uint64_t)c->j_id;
  n.start_ns = -1;
  int coll = sc__coll_from_name(c->coll_name, strlen(c->coll_name));
  if (!strcmp(c->coll_name, "wait")) {
    n.kind = SC_JOP_SYNC; /* the host waits for the last collective */
  } else {
    n.kind = coll == -1 ? SC_JOP_SEND : SC_JOP_COLL;
    n.coll = coll >= 0 ? (uint8_t)coll : SC_JCOLL_UNKNOWN;
    if (!strcmp(c->coll_name, "recv")) n.kind = SC_JOP_RECV;
    /* nccl-tests size: the output of an all-gather, else the input. */
    n.bytes = coll == SC_COLL_ALLGATHER ? c->out_bytes : c->in_bytes;
    n.cpu = 0;
    if (c->last_int > 1 && c->last_int > c->world) c->world = c->last_int;
  }
  if (coll == -2 && n.kind != SC_JOP_SYNC) {
    sc__job_warn(r->job, "%s: record_param_comms \"%s\" of unknown type", r->name, c->coll_name);
    n.coll = SC_JCOLL_UNKNOWN;
  }
  if (sc__job_intern(r->job, c->coll_name, strlen(c->coll_name), &n.name)) return SC_ENOMEM;
  return add_node(r, &n);
}

static int on_json(sc_trace_reader *r, const sc_jtok *t) {
  chk *c = C(r);
  int d = t->depth;
  if (c->skip >= 0) {
    if ((t->type == SC_JT_OBJ_END || t->type == SC_JT_ARR_END) && d == c->skip) c->skip = -1;
    return SC_OK;
  }
  int begin = t->type == SC_JT_OBJ_BEGIN || t->type == SC_JT_ARR_BEGIN;
  if (d == 0) return SC_OK;
  if (d == 1) { /* root members */
    if (t->type == SC_JT_KEY) c->jstate = KEY(t, "nodes");
    else if (c->jstate == 1 && t->type == SC_JT_ARR_BEGIN) c->jstate = 2;
    else if (t->type == SC_JT_ARR_END) c->jstate = 0;
    else if (begin) c->skip = d;
    return SC_OK;
  }
  if (c->jstate != 2) {
    if (begin) c->skip = d;
    return SC_OK;
  }
  if (d == 2) { /* a node */
    if (t->type == SC_JT_OBJ_BEGIN) {
      c->j_id = -1;
      c->j_name[0] = c->coll_name[0] = 0;
      c->in_bytes = c->out_bytes = 0;
      c->last_int = 0;
      c->pg_init = 0;
    } else if (t->type == SC_JT_OBJ_END) return json_end_node(r);
    return SC_OK;
  }
  if (d == 3) {
    if (t->type == SC_JT_KEY) {
      c->jkey = KEY(t, "id") ? JK_ID : KEY(t, "name") ? JK_NAME : KEY(t, "inputs") ? JK_INPUTS
                : KEY(t, "outputs") ? JK_OUTPUTS : JK_NONE;
      return SC_OK;
    }
    if (c->jkey == JK_ID && t->type == SC_JT_NUMBER) sc__json_int(t->s, t->n, &c->j_id);
    else if (c->jkey == JK_NAME && t->type == SC_JT_STRING) {
      size_t n = t->n < sizeof c->j_name - 1 ? t->n : sizeof c->j_name - 1;
      memcpy(c->j_name, t->s, n);
      c->j_name[n] = 0;
      c->pg_init = !strcmp(c->j_name, "## process_group:init ##");
    } else if ((c->jkey == JK_INPUTS || c->jkey == JK_OUTPUTS) && t->type == SC_JT_OBJ_BEGIN) {
      c->in_inputs = c->jkey == JK_INPUTS;
      c->in_outputs = c->jkey == JK_OUTPUTS;
    } else if (t->type == SC_JT_OBJ_END) {
      c->in_inputs = c->in_outputs = 0;
    } else if (begin) c->skip = d;
    return SC_OK;
  }
  if (!c->in_inputs && !c->in_outputs) {
    if (begin) c->skip = d;
    return SC_OK;
  }
  if (d == 4) {
    if (t->type == SC_JT_KEY) c->jkey = KEY(t, "values") ? JK_VALUES : JK_NONE;
    else if (begin && !(c->jkey == JK_VALUES && t->type == SC_JT_ARR_BEGIN)) c->skip = d;
    return SC_OK;
  }
  if (c->jkey != JK_VALUES) return SC_OK;
  /* Inside inputs.values / outputs.values (depth >= 5). */
  if (t->type == SC_JT_ARR_BEGIN) {
    c->tensor_n = 0;
    c->tensor_ok = 1;
    return SC_OK;
  }
  if (t->type == SC_JT_NUMBER) {
    int64_t v = 0;
    int ok = !sc__json_int(t->s, t->n, &v);
    if (d == 5 && ok) c->last_int = v;
    if (d > 5) {
      if (c->tensor_n < 5 && ok) c->tensor[c->tensor_n] = v;
      else c->tensor_ok = 0;
      c->tensor_n++;
    }
    return SC_OK;
  }
  if (t->type == SC_JT_STRING) {
    if (d == 5 && c->in_inputs && !c->coll_name[0]) {
      size_t n = t->n < sizeof c->coll_name - 1 ? t->n : sizeof c->coll_name - 1;
      memcpy(c->coll_name, t->s, n);
      c->coll_name[n] = 0;
    }
    if (c->pg_init && d == 5) {
      /* process_group:init describes the groups as JSON text. */
      const char *p = t->s, *end = t->s + t->n;
      for (; p + 12 < end; p++)
        if (!memcmp(p, "group_size", 10)) {
          const char *q = p + 10;
          while (q < end && (*q < '0' || *q > '9')) q++;
          int64_t v = 0;
          while (q < end && *q >= '0' && *q <= '9' && v < (int64_t)1 << 40) v = v * 10 + (*q++ - '0');
          if (v > c->world) c->world = v;
        }
    }
    if (d > 5) {
      if (c->tensor_n == 5 && c->tensor_ok && c->tensor[3] >= 0 && c->tensor[4] > 0) {
        double bytes = (double)c->tensor[3] * (double)c->tensor[4];
        if (c->in_inputs) c->in_bytes += bytes;
        else c->out_bytes += bytes;
      }
      c->tensor_n++;
    }
    return SC_OK;
  }
  return SC_OK;
}

static int json_data(sc_trace_reader *r, const char *buf, size_t len) {
  chk *c = C(r);
  sc__json_feed(&c->j, buf, len);
  sc_jtok t;
  int rc;
  while ((rc = sc__json_next(&c->j, &t)) == 1)
    if ((rc = on_json(r, &t))) return rc;
  if (rc == SC_ENOMEM) return sc__trace_fail(r, SC_ENOMEM, c->j.err_off, "out of memory");
  if (rc < 0) return sc__trace_fail(r, SC_EINVAL, c->j.err_off, "invalid JSON: %s", c->j.errmsg);
  return SC_OK;
}

/* ------------------------------------------------------------ handler */

static int chk_data(sc_trace_reader *r, const char *buf, size_t len) {
  chk *c = C(r);
  if (c->mode == 0) {
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) i++;
    if (i == len) return SC_OK; /* only blanks so far: the JSON path would skip them too */
    c->mode = buf[i] == '{' ? 2 : 1;
  }
  if (c->mode == 2) return json_data(r, buf, len);
  return proto_data(r, (const unsigned char *)buf, len, r->feed.out_bytes);
}

typedef struct ikey { int64_t stream; uint64_t id; uint32_t i; } ikey;
static int cmp_ikey(const void *a, const void *b) {
  const ikey *x = a, *y = b;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

typedef struct idmap { uint64_t id; uint32_t op; } idmap;
static int cmp_idmap(const void *a, const void *b) {
  const idmap *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* The rank of a file named *.<rank>.et (PyTorch's Chakra tooling), else hint. */
static int64_t rank_from_name(const char *name, int64_t hint) {
  const char *dot = strrchr(name, '.'), *p = dot;
  if (!dot || strcmp(dot, ".et")) return hint;
  while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;
  if (p == dot || p == name || p[-1] != '.') return hint;
  int64_t v = 0;
  for (const char *q = p; q < dot && v < (int64_t)1 << 40; q++) v = v * 10 + (*q - '0');
  return v;
}

static sc_jop blank_op(void) {
  sc_jop op;
  memset(&op, 0, sizeof op);
  op.start_ns = -1;
  op.group = SC_JOB_NONE;
  op.peer = -1;
  op.coll = SC_JCOLL_UNKNOWN;
  return op;
}

/* Host ET JSON: per node in trace order a host op (a zero-time launch, or
 * the wait); collectives on one communication stream after their launch;
 * a wait syncs on the collective issued before it. */
static int build_json(sc_trace_reader *r, sc_jrank *jr, uint32_t wgroup) {
  chk *c = C(r);
  sc_job *job = r->job;
  uint32_t n_launch, n_comm;
  int rc = sc__job_intern(job, "launch", 6, &n_launch);
  if (!rc) rc = sc__job_intern(job, "comm", 4, &n_comm);
  int si = rc ? 0 : sc__jrank_stream(job, jr, 0, n_comm, 0);
  if (si < 0) rc = si;
  size_t nh = c->nnodes, ci = nh;
  int64_t last_coll = -1;
  for (size_t i = 0; !rc && i < c->nnodes; i++) {
    const cnode *x = &c->nodes[i];
    sc_jop op = blank_op();
    int sync = x->kind == SC_JOP_SYNC;
    op.name = sync ? x->name : n_launch;
    op.kind = sync ? SC_JOP_SYNC : SC_JOP_HOST;
    if (sc__jrank_op(job, jr, &op) < 0) rc = SC_ENOMEM;
    if (!rc && sync && last_coll >= 0) rc = sc__jrank_dep(job, jr, (uint32_t)last_coll);
    if (!sync) last_coll = (int64_t)ci++;
  }
  for (size_t i = 0; !rc && i < c->nnodes; i++) {
    const cnode *x = &c->nodes[i];
    if (x->kind == SC_JOP_SYNC) continue;
    sc_jop op = blank_op();
    op.bytes = x->bytes;
    op.name = x->name;
    op.kind = x->kind;
    op.coll = x->kind == SC_JOP_COLL ? x->coll : SC_JCOLL_UNKNOWN;
    op.group = x->kind == SC_JOP_COLL ? wgroup : SC_JOB_NONE;
    op.stream = 1;
    if (sc__jrank_op(job, jr, &op) < 0) rc = SC_ENOMEM;
    if (!rc) rc = sc__jrank_dep(job, jr, (uint32_t)i);
  }
  if (!rc)
    sc__job_warn(job, "%s: PyTorch host execution trace: no durations, only collectives and "
                      "waits imported (replay prices them with the comm model)", r->name);
  return rc;
}

/* Protobuf ET: the host stream (CPU nodes, id order), one stream per GPU
 * tid (id order); ctrl and data deps become dependencies, except those on
 * an earlier node of the same stream (implied by stream order). */
static int build_proto(sc_trace_reader *r, sc_jrank *jr, uint32_t wgroup) {
  chk *c = C(r);
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  size_t n = c->nnodes;
  ikey *order = sc__malloc(ctx, n * sizeof *order);
  idmap *map = sc__malloc(ctx, n * sizeof *map);
  uint16_t *sidx = sc__malloc(ctx, n * sizeof *sidx);
  int rc = order && map && sidx ? SC_OK : SC_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++) {
    const cnode *x = &c->nodes[i];
    int host = x->kind == SC_JOP_HOST || x->kind == SC_JOP_SYNC;
    order[i] = (ikey){host ? -1 : x->tid, x->id, (uint32_t)i};
  }
  if (!rc) sort_items(order, n, sizeof *order, cmp_ikey);
  int64_t have_start = 0, t0 = INT64_MAX, t1 = INT64_MIN;
  for (size_t i = 0; !rc && i < n; i++) {
    if (i == 0 || order[i].stream != order[i - 1].stream) {
      char nm[48];
      uint32_t id;
      if (order[i].stream == -1) snprintf(nm, sizeof nm, "host");
      else snprintf(nm, sizeof nm, "stream %lld", (long long)order[i].stream);
      rc = sc__job_intern(job, nm, strlen(nm), &id);
      /* The host stream is always index 0: a rank without CPU nodes gets
       * an empty one first. */
      if (!rc && i == 0 && order[i].stream != -1) {
        uint32_t hn;
        rc = sc__job_intern(job, "host", 4, &hn);
        int si = rc ? 0 : sc__jrank_stream(job, jr, -1, hn, 1);
        if (si < 0) rc = si;
      }
      int si = rc ? 0 : sc__jrank_stream(job, jr, order[i].stream, id, order[i].stream == -1);
      if (si < 0) rc = si;
    }
    sidx[i] = (uint16_t)(jr->nstreams - 1);
    map[i] = (idmap){order[i].id, (uint32_t)i};
    const cnode *x = &c->nodes[order[i].i];
    if (x->start_ns >= 0) {
      have_start++;
      if (x->start_ns < t0) t0 = x->start_ns;
      if (x->start_ns + x->dur_ns > t1) t1 = x->start_ns + x->dur_ns;
    }
  }
  if (!rc) {
    sort_items(map, n, sizeof *map, cmp_idmap);
    for (size_t i = 1; i < n; i++)
      if (map[i].id == map[i - 1].id) {
        rc = sc__trace_fail(r, SC_EINVAL, 0, "duplicate node id %llu", (unsigned long long)map[i].id);
        break;
      }
  }
  int64_t missing = 0, forward = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    const cnode *x = &c->nodes[order[i].i];
    sc_jop op = blank_op();
    op.dur_ns = x->dur_ns;
    op.start_ns = x->start_ns >= 0 ? x->start_ns - t0 : -1;
    op.flops = x->flops;
    op.bytes = x->bytes;
    op.name = x->name;
    op.kind = x->kind;
    op.coll = x->kind == SC_JOP_COLL ? x->coll : SC_JCOLL_UNKNOWN;
    op.group = x->kind == SC_JOP_COLL ? wgroup : SC_JOB_NONE;
    op.stream = sidx[i];
    if (sc__jrank_op(job, jr, &op) < 0) {
      rc = SC_ENOMEM;
      break;
    }
    for (uint32_t d = 0; !rc && d < x->ndeps; d++) {
      idmap key = {c->deps[x->dep_off + d], 0};
      const idmap *hit = find_item(&key, map, n, sizeof *map, cmp_idmap);
      if (!hit) {
        missing++;
        continue;
      }
      uint32_t t = hit->op;
      if (t == i) continue;
      if (sidx[t] == sidx[i]) {
        if (t > i) forward++;
        continue; /* same stream: implied by order (or contradicting it) */
      }
      rc = sc__jrank_dep(job, jr, t);
    }
  }
  if (missing) sc__job_warn_n(job, missing, "%s: dependencies on nodes not in the trace ignored", r->name);
  if (forward)
    sc__job_warn_n(job, forward, "%s: dependencies on a later node of the same stream ignored (node ids "
                      "are taken as execution order)", r->name);
  if (!rc && have_start) jr->span_ns = t1 - t0;
  sc__free(ctx, order, n * sizeof *order);
  sc__free(ctx, map, n * sizeof *map);
  sc__free(ctx, sidx, n * sizeof *sidx);
  return rc;
}

static int chk_build(sc_trace_reader *r) {
  chk *c = C(r);
  sc_ctx *ctx = r->ctx;
  sc_job *job = r->job;
  if (c->mode == 1 && (c->in_msg || c->len_shift))
    return sc__trace_fail(r, SC_EINVAL, c->msg_off, "truncated Chakra trace (the file ends inside a message)");
  if (c->mode == 0) return sc__trace_fail(r, SC_EINVAL, 0, "empty Chakra trace");
  if (!c->nnodes) return sc__trace_fail(r, SC_EINVAL, r->feed.out_bytes, "no Chakra nodes to import");
  int64_t rank = rank_from_name(r->name, r->rank_hint);
  if (c->world > 0 && job->world < c->world) job->world = c->world;
  int64_t world = job->world > rank ? job->world : rank + 1;
  if (world > SC_JOB_MAX_WORLD) return sc__trace_fail(r, SC_EINVAL, 0, "world of %lld ranks is too large", (long long)world);
  /* Chakra nodes name no process group: collectives span the world, which
   * the host JSON states and the protobuf leaves to sc_job_finish (all
   * ranks imported). */
  uint32_t wgroup = SC_JOB_WORLD, wname;
  int rc = SC_OK;
  if (c->world > 0) {
    int64_t *ranks = sc__malloc(ctx, (size_t)world * sizeof *ranks);
    if (!ranks) return SC_ENOMEM;
    for (int64_t i = 0; i < world; i++) ranks[i] = i;
    rc = sc__job_intern(job, "world", 5, &wname);
    if (!rc) rc = sc__job_group(job, ranks, (size_t)world, wname, &wgroup);
    sc__free(ctx, ranks, (size_t)world * sizeof *ranks);
    if (rc) return rc;
  }
  sc_jrank *jr = sc__job_add_rank(job, rank);
  if (!jr) return SC_ENOMEM;
  jr->source = r->name_id;
  if (c->mode == 2) {
    uint32_t hn;
    rc = sc__job_intern(job, "host", 4, &hn);
    int si = rc ? 0 : sc__jrank_stream(job, jr, -1, hn, 1);
    if (si < 0) rc = si;
    if (!rc) rc = build_json(r, jr, wgroup);
  } else {
    rc = build_proto(r, jr, wgroup);
  }
  if (rc) {
    sc__jrank_free(ctx, &job->ranks[job->nranks - 1]);
    job->nranks--;
  }
  return rc;
}

static int chk_finish(sc_trace_reader *r) {
  chk *c = C(r);
  if (c->mode == 2) {
    sc__json_end(&c->j);
    int rc = json_data(r, "", 0);
    if (rc) return rc;
  }
  return chk_build(r);
}

const sc_trace_handler sc__chakra_handler = {"chakra", chk_open, chk_data, chk_finish, chk_close};
