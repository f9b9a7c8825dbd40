/* Importing a large ONNX model without holding its weights twice.
 *
 * protobuf-c copies every bytes field while it decodes, so decoding a model read into
 * memory holds the weights twice (the file's bytes and the decoded raw_data), and
 * converting the initializers into graph tensors holds them twice again. Here the file
 * is mapped instead of read, and a "lean" copy of its wire bytes is made in which the
 * raw_data payload of every large top-level initializer (ModelProto.graph ->
 * GraphProto.initializer -> TensorProto.raw_data) is cut to zero bytes, with every
 * enclosing length rewritten; protobuf-c decodes that small copy. The decoded
 * initializers' raw_data then point into the mapping, the converter copies each one
 * into its tensor and drops the mapped pages it read (onnx_lean_release), so at any
 * time the process holds about one copy of the weights. Anything unexpected in the
 * wire bytes (a malformed field, a group) makes the lean copy give up and the importer
 * decode the mapping as it is, which reports the problem as before. */
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "import/onnx/onnx_internal.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };
enum { MODEL_GRAPH = 7, GRAPH_INITIALIZER = 5, TENSOR_RAW_DATA = 9 };

typedef struct out_buf {
  uint8_t *p;
  size_t n, cap;
} out_buf;

static void put(out_buf *o, const void *src, size_t n) {
  if (o->n + n > o->cap) {
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->n + n) cap *= 2;
    uint8_t *q = realloc(o->p, cap);
    if (!q) abort();
    o->p = q;
    o->cap = cap;
  }
  memcpy(o->p + o->n, src, n);
  o->n += n;
}

static void put_varint(out_buf *o, uint64_t v) {
  uint8_t b[10];
  int n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  put(o, b, (size_t)n);
}

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

typedef struct lean_state {
  const uint8_t *base; /* the mapped file, for offsets */
  size_t min_bytes;
  onnx_lean *lean;
  size_t initializer; /* index of the next top-level initializer */
} lean_state;

static void add_lifted(onnx_lean *l, size_t index, size_t offset, size_t len) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 64;
    onnx_lifted *q = realloc(l->lifted, l->cap * sizeof *q);
    if (!q) abort();
    l->lifted = q;
  }
  l->lifted[l->n++] = (onnx_lifted){.initializer = index, .offset = offset, .len = len};
}

/* Copies the message [p, end) of nesting level `level` (0 model, 1 graph, 2 initializer
 * tensor) into o, cutting the payloads described above. */
static bool rewrite(lean_state *st, const uint8_t *p, const uint8_t *end, int level, out_buf *o) {
  while (p < end) {
    const uint8_t *field_start = p;
    uint64_t key;
    if (!get_varint(&p, end, &key)) return false;
    uint64_t field = key >> 3;
    int wire = (int)(key & 7);
    switch (wire) {
      case WIRE_VARINT: {
        uint64_t v;
        if (!get_varint(&p, end, &v)) return false;
        put(o, field_start, (size_t)(p - field_start));
        break;
      }
      case WIRE_I64:
      case WIRE_I32: {
        size_t n = wire == WIRE_I64 ? 8 : 4;
        if ((size_t)(end - p) < n) return false;
        p += n;
        put(o, field_start, (size_t)(p - field_start));
        break;
      }
      case WIRE_LEN: {
        uint64_t n;
        if (!get_varint(&p, end, &n) || n > (uint64_t)(end - p)) return false;
        const uint8_t *payload = p;
        p += n;
        bool descend = (level == 0 && field == MODEL_GRAPH) || (level == 1 && field == GRAPH_INITIALIZER);
        if (level == 2 && field == TENSOR_RAW_DATA && n >= st->min_bytes) {
          add_lifted(st->lean, st->initializer, (size_t)(payload - st->base), (size_t)n);
          put_varint(o, key);
          put_varint(o, 0);
        } else if (descend) {
          out_buf sub = {0};
          bool ok = rewrite(st, payload, payload + n, level + 1, &sub);
          if (level == 1) st->initializer++;
          if (!ok) {
            free(sub.p);
            return false;
          }
          put_varint(o, key);
          put_varint(o, sub.n);
          if (sub.n) put(o, sub.p, sub.n);
          free(sub.p);
        } else {
          put(o, field_start, (size_t)(p - field_start));
        }
        break;
      }
      default:
        return false; /* groups: not in onnx.proto */
    }
  }
  return true;
}

bool onnx_lean_build(const uint8_t *data, size_t len, size_t min_bytes, onnx_lean *out) {
  memset(out, 0, sizeof *out);
  lean_state st = {.base = data, .min_bytes = min_bytes, .lean = out};
  out_buf o = {0};
  if (!rewrite(&st, data, data + len, 0, &o) || out->n == 0) {
    free(o.p);
    free(out->lifted);
    memset(out, 0, sizeof *out);
    return false;
  }
  out->wire = o.p;
  out->wire_len = o.n;
  return true;
}

bool onnx_lean_attach(onnx_lean *l, Onnx__ModelProto *m, const uint8_t *base) {
  Onnx__GraphProto *g = m->graph;
  for (size_t i = 0; i < l->n; i++) {
    onnx_lifted *f = &l->lifted[i];
    if (!g || f->initializer >= g->n_initializer || !g->initializer[f->initializer]->has_raw_data ||
        g->initializer[f->initializer]->raw_data.len != 0) {
      onnx_lean_detach(l, m);
      return false;
    }
    Onnx__TensorProto *tp = g->initializer[f->initializer];
    f->saved = tp->raw_data.data;
    tp->raw_data.data = (uint8_t *)(base + f->offset);
    tp->raw_data.len = f->len;
    f->attached = true;
  }
  return true;
}

void onnx_lean_detach(onnx_lean *l, Onnx__ModelProto *m) {
  for (size_t i = 0; i < l->n; i++) {
    onnx_lifted *f = &l->lifted[i];
    if (!f->attached) continue;
    Onnx__TensorProto *tp = m->graph->initializer[f->initializer];
    tp->raw_data.data = f->saved;
    tp->raw_data.len = 0;
    f->attached = false;
  }
}

void onnx_lean_free(onnx_lean *l) {
  free(l->wire);
  free(l->lifted);
  memset(l, 0, sizeof *l);
}

void onnx_lean_release(const onnx_ctx *ctx, const void *data, size_t len) {
  const uint8_t *p = data, *map = ctx->map;
  if (!map || p < map || len > ctx->map_len || (size_t)(p - map) > ctx->map_len - len) return;
  file_drop_mapped_pages(p, len); /* the file still backs them */
}

bool onnx_lean_is_mapped(const onnx_ctx *ctx, const void *p) {
  const uint8_t *q = p;
  return ctx->map && q >= ctx->map && q < ctx->map + ctx->map_len;
}
