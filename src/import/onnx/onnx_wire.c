/* A pre-flight walk over the protobuf wire format of an ONNX model.
 *
 * protobuf-c decodes nested messages by recursion with no depth limit, and ONNX's schema
 * is recursive (Graph -> Node -> Attribute -> Graph, TypeProto -> Sequence -> TypeProto),
 * so a few kilobytes of crafted bytes could nest deep enough to overflow the stack. This
 * walk knows just enough of onnx.proto -- which fields of the recursive messages hold
 * messages -- to measure the nesting, and refuses a file past ONNX_MAX_MESSAGE_DEPTH
 * before protobuf-c ever sees it. It also stops malformed varints and lengths early with
 * a precise message. Messages outside the recursive cycle (tensors, shapes, opset ids)
 * are skipped as opaque bytes: they nest at most a few levels. */
#include "import/onnx/onnx_internal.h"

#include <string.h>

typedef enum wire_msg {
  MSG_OPAQUE, /* not walked */
  MSG_MODEL,
  MSG_GRAPH,
  MSG_NODE,
  MSG_ATTR,
  MSG_FUNCTION,
  MSG_TRAINING,
  MSG_VALUE_INFO,
  MSG_TYPE,
  MSG_TYPE_ONE_CHILD_1, /* TypeProto.Sequence / Optional: field 1 is a TypeProto */
  MSG_TYPE_MAP          /* TypeProto.Map: field 2 is a TypeProto */
} wire_msg;

/* The walked message kind held by field `field` of a message of kind `parent`. */
static wire_msg child_kind(wire_msg parent, uint64_t field) {
  switch (parent) {
    case MSG_MODEL:
      return field == 7 ? MSG_GRAPH : field == 20 ? MSG_TRAINING : field == 25 ? MSG_FUNCTION : MSG_OPAQUE;
    case MSG_TRAINING:
      return field == 1 || field == 2 ? MSG_GRAPH : MSG_OPAQUE;
    case MSG_FUNCTION:
      return field == 7 ? MSG_NODE : MSG_OPAQUE;
    case MSG_GRAPH:
      if (field == 1) return MSG_NODE;
      if (field == 11 || field == 12 || field == 13) return MSG_VALUE_INFO;
      return MSG_OPAQUE;
    case MSG_NODE:
      return field == 5 ? MSG_ATTR : MSG_OPAQUE;
    case MSG_ATTR:
      if (field == 6 || field == 11) return MSG_GRAPH;
      if (field == 14 || field == 15) return MSG_TYPE;
      return MSG_OPAQUE;
    case MSG_VALUE_INFO:
      return field == 2 ? MSG_TYPE : MSG_OPAQUE;
    case MSG_TYPE:
      if (field == 4 || field == 9) return MSG_TYPE_ONE_CHILD_1;
      if (field == 5) return MSG_TYPE_MAP;
      return MSG_OPAQUE;
    case MSG_TYPE_ONE_CHILD_1:
      return field == 1 ? MSG_TYPE : MSG_OPAQUE;
    case MSG_TYPE_MAP:
      return field == 2 ? MSG_TYPE : MSG_OPAQUE;
    case MSG_OPAQUE:
      break;
  }
  return MSG_OPAQUE;
}

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    if (shift == 63 && (b & 0x7e)) return false; /* more than 64 bits */
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

static kiln_status walk(const uint8_t *p, const uint8_t *end, wire_msg kind, int depth) {
  if (depth > ONNX_MAX_MESSAGE_DEPTH)
    return ERR_INVALID("protobuf messages nest more than %d levels deep", ONNX_MAX_MESSAGE_DEPTH);
  while (p < end) {
    uint64_t key;
    if (!read_varint(&p, end, &key)) return ERR_INVALID("malformed protobuf field key");
    uint64_t field = key >> 3;
    if (field == 0) return ERR_INVALID("malformed protobuf: field number 0");
    switch (key & 7) {
      case 0: {
        uint64_t ignored;
        if (!read_varint(&p, end, &ignored)) return ERR_INVALID("malformed protobuf varint in field %llu", (unsigned long long)field);
        break;
      }
      case 1:
        if (end - p < 8) return ERR_INVALID("truncated protobuf (fixed64 field %llu)", (unsigned long long)field);
        p += 8;
        break;
      case 5:
        if (end - p < 4) return ERR_INVALID("truncated protobuf (fixed32 field %llu)", (unsigned long long)field);
        p += 4;
        break;
      case 2: {
        uint64_t n;
        if (!read_varint(&p, end, &n)) return ERR_INVALID("malformed protobuf length in field %llu", (unsigned long long)field);
        if (n > (uint64_t)(end - p))
          return ERR_INVALID("truncated protobuf: field %llu claims %llu bytes, %zu remain", (unsigned long long)field,
                             (unsigned long long)n, (size_t)(end - p));
        wire_msg child = child_kind(kind, field);
        if (child != MSG_OPAQUE) TRY(walk(p, p + n, child, depth + 1));
        p += n;
        break;
      }
      default:
        return ERR_INVALID("malformed protobuf: wire type %u in field %llu", (unsigned)(key & 7), (unsigned long long)field);
    }
  }
  return NULL;
}

kiln_status onnx_check_nesting(const uint8_t *data, size_t len) { return walk(data, data + len, MSG_MODEL, 1); }
