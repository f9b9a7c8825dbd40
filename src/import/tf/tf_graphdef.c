/* Binary GraphDef reader: protobuf wire records -> the neutral form of tf_def.h, then
 * the shared builder. Field numbers are those of tensorflow/core/framework/graph.proto,
 * node_def.proto, attr_value.proto, tensor.proto, tensor_shape.proto, function.proto,
 * op_def.proto and versions.proto. Unknown fields are skipped, as protobuf requires;
 * a known field with the wrong wire type is an error. Every error says which node (or
 * function) it is in, and the byte offset of the bad record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "import/tf/pb_wire.h"
#include "import/tf/tf_def.h"

/* GraphDef */
enum { GD_NODE = 1, GD_LIBRARY = 2, GD_VERSIONS = 4 };
/* NodeDef */
enum { ND_NAME = 1, ND_OP = 2, ND_INPUT = 3, ND_DEVICE = 4, ND_ATTR = 5 };
/* AttrValue and its ListValue */
enum {
  AV_LIST = 1, AV_S = 2, AV_I = 3, AV_F = 4, AV_B = 5, AV_TYPE = 6, AV_SHAPE = 7, AV_TENSOR = 8,
  AV_PLACEHOLDER = 9, AV_FUNC = 10, LV_FUNC = 9
};
/* TensorShapeProto */
enum { TS_DIM = 2, TS_UNKNOWN_RANK = 3, DIM_SIZE = 1 };
/* TensorProto */
enum { TP_DTYPE = 1, TP_SHAPE = 2, TP_CONTENT = 4 };
/* FunctionDefLibrary, FunctionDef, OpDef, ArgDef */
enum { LIB_FUNCTION = 1, FD_SIGNATURE = 1, FD_NODE_DEF = 3, FD_RET = 4 };
enum { OD_NAME = 1, OD_INPUT_ARG = 2, OD_OUTPUT_ARG = 3 };
enum { AD_NAME = 1, AD_TYPE = 3, AD_NUMBER_ATTR = 5, AD_TYPE_LIST_ATTR = 6 };
/* VersionDef */
enum { VD_PRODUCER = 1, VD_MIN_CONSUMER = 2 };

/* A string field as a NUL-terminated arena copy; embedded NULs are errors because the
 * value is a name. */

static kiln_status parse_attr_value(tf_ctx *c, const pb_reader *r, graph_attr_value *out);

/* ---- shapes ---- */

static kiln_status parse_dim(const pb_reader *r, int64_t *size) {
  pb_reader d = *r;
  pb_field f;
  bool done;
  *size = 0;
  for (;;) {
    TRY(pb_next(&d, &f, &done));
    if (done) return NULL;
    if (f.number == DIM_SIZE) {
      TRY(pb_expect_wire(&f, PB_VARINT, "TensorShapeProto.Dim"));
      *size = pb_int64(&f);
    }
  }
}

static kiln_status parse_shape(const pb_reader *r, graph_shape *out) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  bool unknown_rank = false;
  graph_shape sh = graph_shape_scalar();
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == TS_DIM) {
      pb_reader d;
      TRY(pb_sub(&s, &f, &d));
      if (sh.rank >= GRAPH_MAX_RANK)
        return ERR_INVALID("byte %zu: shape has more than %d dimensions", f.offset, GRAPH_MAX_RANK);
      int64_t size;
      TRY(parse_dim(&d, &size));
      if (size < -1) return ERR_INVALID("byte %zu: shape dimension %d is %lld", f.offset, sh.rank, (long long)size);
      sh.dims[sh.rank++] = size;
    } else if (f.number == TS_UNKNOWN_RANK) {
      TRY(pb_expect_wire(&f, PB_VARINT, "TensorShapeProto"));
      unknown_rank = pb_bool(&f);
    }
  }
  *out = unknown_rank ? graph_shape_unknown() : sh;
  return NULL;
}

/* ---- tensors ---- */

typedef struct push_ctx {
  tf_ctx *c;
  tf_values *v;
} push_ctx;

static kiln_status push_value(void *ctx, uint64_t bits) {
  push_ctx *p = ctx;
  tf_values_push(p->c, p->v, bits);
  return NULL;
}

static pb_wire_type tensor_field_wire(uint32_t number) {
  switch (number) {
    case TF_TP_FLOAT:
    case TF_TP_SCOMPLEX: return PB_I32;
    case TF_TP_DOUBLE:
    case TF_TP_DCOMPLEX: return PB_I64;
    default: return PB_VARINT;
  }
}

static kiln_status parse_tensor(tf_ctx *c, const pb_reader *r, graph_tensor **out) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  tf_tensor_def t;
  tf_tensor_def_init(&t);
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    switch (f.number) {
      case TP_DTYPE:
        TRY(pb_expect_wire(&f, PB_VARINT, "TensorProto"));
        t.dtype = pb_int32(&f);
        break;
      case TP_SHAPE: {
        pb_reader sh;
        TRY(pb_sub(&s, &f, &sh));
        TRY(parse_shape(&sh, &t.shape));
        break;
      }
      case TP_CONTENT:
        TRY(pb_expect_wire(&f, PB_LEN, "TensorProto"));
        t.content = f.data;
        t.content_len = f.len;
        break;
      case TF_TP_STRING:
        TRY(pb_expect_wire(&f, PB_LEN, "TensorProto"));
        tf_tensor_add_string(c, &t, (const char *)f.data, f.len);
        break;
      case TF_TP_RESOURCE:
      case TF_TP_VARIANT:
        TRY(pb_expect_wire(&f, PB_LEN, "TensorProto"));
        t.n_handles++;
        break;
      case TF_TP_FLOAT:
      case TF_TP_DOUBLE:
      case TF_TP_INT:
      case TF_TP_SCOMPLEX:
      case TF_TP_INT64:
      case TF_TP_BOOL:
      case TF_TP_DCOMPLEX:
      case TF_TP_HALF:
      case TF_TP_UINT32:
      case TF_TP_UINT64: {
        push_ctx p = {c, &t.vals[f.number]};
        TRY(pb_packed_each(&f, tensor_field_wire(f.number), push_value, &p));
        break;
      }
      default: break;
    }
  }
  return tf_tensor_make(c, &t, "tensor", out);
}

/* ---- attribute values ---- */

static int attr_cmp(const void *a, const void *b) {
  const graph_attr *x = a, *y = b;
  int k = strcmp(x->name, y->name);
  if (k) return k;
  /* Equal names: the later one sorts last so that dedupe keeps it. */
  return x < y ? -1 : x > y;
}

/* Sorts attrs by name and keeps the last of each name, as a protobuf map does. */
static int sort_attrs(graph_attr *a, int n) {
  if (n < 2) return n;
  qsort(a, (size_t)n, sizeof *a, attr_cmp);
  int w = 0;
  for (int i = 0; i < n; i++) {
    if (w && strcmp(a[w - 1].name, a[i].name) == 0) a[w - 1] = a[i];
    else a[w++] = a[i];
  }
  return w;
}

/* map<string, AttrValue> entry: key = 1, value = 2. */
static kiln_status parse_attr_entry(tf_ctx *c, const pb_reader *r, const char **name, graph_attr_value *v) {
  pb_reader e = *r;
  pb_field f;
  bool done;
  *name = "";
  memset(v, 0, sizeof *v);
  for (;;) {
    TRY(pb_next(&e, &f, &done));
    if (done) break;
    if (f.number == 1) {
      TRY(pb_string(&f, c->scratch, "attribute name", name));
    } else if (f.number == 2) {
      pb_reader a;
      TRY(pb_sub(&e, &f, &a));
      kiln_status s = parse_attr_value(c, &a, v);
      if (s) return status_wrap(s, "attribute '%s'", *name);
    }
  }
  return NULL;
}

static kiln_status parse_func(tf_ctx *c, const pb_reader *r, graph_func_ref *out) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  memset(out, 0, sizeof *out);
  out->name = "";
  int cap = 0;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == 1) {
      TRY(pb_string(&f, c->scratch, "function name", &out->name));
    } else if (f.number == 2) {
      pb_reader e;
      TRY(pb_sub(&s, &f, &e));
      const char *name = NULL;
      graph_attr_value v;
      TRY(parse_attr_entry(c, &e, &name, &v));
      if (v.kind == GRAPH_ATTR_NONE) continue;
      tf_grow(c->scratch, (void **)&out->attrs, &cap, out->n_attrs + 1, sizeof *out->attrs);
      out->attrs[out->n_attrs++] = (graph_attr){name, v};
    }
  }
  out->n_attrs = sort_attrs(out->attrs, out->n_attrs);
  return NULL;
}

typedef struct list_builder {
  tf_ctx *c;
  graph_attr_kind elem;
  int n, cap;
  graph_attr_value *items;
  uint32_t field; /* ListValue field number, for messages */
} list_builder;

static kiln_status list_add(list_builder *b, const graph_attr_value *v) {
  if (b->n && b->elem != v->kind) return ERR_INVALID("list attribute mixes values of different kinds");
  if (b->n == INT32_MAX / 2) return ERR_INVALID("list attribute is too long");
  b->elem = v->kind;
  tf_grow(b->c->scratch, (void **)&b->items, &b->cap, b->n + 1, sizeof *b->items);
  b->items[b->n++] = *v;
  return NULL;
}

static kiln_status list_scalar(void *ctx, uint64_t bits) {
  list_builder *b = ctx;
  graph_attr_value v;
  memset(&v, 0, sizeof v);
  switch (b->field) {
    case AV_I: v.kind = GRAPH_ATTR_INT; v.i = (int64_t)bits; break;
    case AV_F: {
      uint32_t u = (uint32_t)bits;
      v.kind = GRAPH_ATTR_FLOAT;
      memcpy(&v.f, &u, 4);
      break;
    }
    case AV_B: v.kind = GRAPH_ATTR_BOOL; v.b = bits != 0; break;
    default: v.kind = GRAPH_ATTR_TYPE; v.type = graph_dtype_from_tf((int32_t)(uint32_t)bits); break;
  }
  return list_add(b, &v);
}

static kiln_status parse_list(tf_ctx *c, const pb_reader *r, graph_attr_value *out) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  list_builder b = {.c = c};
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    graph_attr_value v;
    memset(&v, 0, sizeof v);
    b.field = f.number;
    switch (f.number) {
      case AV_S: {
        TRY(pb_expect_wire(&f, PB_LEN, "AttrValue.ListValue"));
        v.kind = GRAPH_ATTR_STRING;
        v.s.data = arena_strndup(c->scratch, (const char *)f.data, f.len);
        v.s.len = f.len;
        TRY(list_add(&b, &v));
        break;
      }
      case AV_I:
      case AV_B:
      case AV_TYPE: TRY(pb_packed_each(&f, PB_VARINT, list_scalar, &b)); break;
      case AV_F: TRY(pb_packed_each(&f, PB_I32, list_scalar, &b)); break;
      case AV_SHAPE: {
        pb_reader sh;
        TRY(pb_sub(&s, &f, &sh));
        v.kind = GRAPH_ATTR_SHAPE;
        v.shape = arena_alloc(c->scratch, sizeof *v.shape);
        TRY(parse_shape(&sh, v.shape));
        TRY(list_add(&b, &v));
        break;
      }
      case AV_TENSOR: {
        pb_reader t;
        TRY(pb_sub(&s, &f, &t));
        v.kind = GRAPH_ATTR_TENSOR;
        TRY(parse_tensor(c, &t, &v.tensor));
        TRY(list_add(&b, &v));
        break;
      }
      case LV_FUNC: {
        pb_reader fn;
        TRY(pb_sub(&s, &f, &fn));
        v.kind = GRAPH_ATTR_FUNC;
        TRY(parse_func(c, &fn, &v.func));
        TRY(list_add(&b, &v));
        break;
      }
      default: break;
    }
  }
  memset(out, 0, sizeof *out);
  out->kind = GRAPH_ATTR_LIST;
  out->list.elem = b.n ? b.elem : GRAPH_ATTR_NONE;
  out->list.n = b.n;
  out->list.items = b.items;
  return NULL;
}

/* The oneof: the last field present decides (protobuf semantics). An AttrValue with
 * none set stays GRAPH_ATTR_NONE and the caller drops it. */
static kiln_status parse_attr_value(tf_ctx *c, const pb_reader *r, graph_attr_value *out) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  memset(out, 0, sizeof *out);
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    graph_attr_value v;
    memset(&v, 0, sizeof v);
    switch (f.number) {
      case AV_LIST: {
        pb_reader l;
        TRY(pb_sub(&s, &f, &l));
        TRY(parse_list(c, &l, &v));
        break;
      }
      case AV_S:
        TRY(pb_expect_wire(&f, PB_LEN, "AttrValue"));
        v.kind = GRAPH_ATTR_STRING;
        v.s.data = arena_strndup(c->scratch, (const char *)f.data, f.len);
        v.s.len = f.len;
        break;
      case AV_I:
        TRY(pb_expect_wire(&f, PB_VARINT, "AttrValue"));
        v.kind = GRAPH_ATTR_INT;
        v.i = pb_int64(&f);
        break;
      case AV_F:
        TRY(pb_expect_wire(&f, PB_I32, "AttrValue"));
        v.kind = GRAPH_ATTR_FLOAT;
        v.f = pb_float(&f);
        break;
      case AV_B:
        TRY(pb_expect_wire(&f, PB_VARINT, "AttrValue"));
        v.kind = GRAPH_ATTR_BOOL;
        v.b = pb_bool(&f);
        break;
      case AV_TYPE:
        TRY(pb_expect_wire(&f, PB_VARINT, "AttrValue"));
        v.kind = GRAPH_ATTR_TYPE;
        v.type = graph_dtype_from_tf(pb_int32(&f));
        break;
      case AV_SHAPE: {
        pb_reader sh;
        TRY(pb_sub(&s, &f, &sh));
        v.kind = GRAPH_ATTR_SHAPE;
        v.shape = arena_alloc(c->scratch, sizeof *v.shape);
        TRY(parse_shape(&sh, v.shape));
        break;
      }
      case AV_TENSOR: {
        pb_reader t;
        TRY(pb_sub(&s, &f, &t));
        v.kind = GRAPH_ATTR_TENSOR;
        TRY(parse_tensor(c, &t, &v.tensor));
        break;
      }
      case AV_PLACEHOLDER: {
        const char *name = NULL;
        TRY(pb_string(&f, c->scratch, "attribute placeholder", &name));
        v.kind = GRAPH_ATTR_STRING;
        v.s.data = arena_printf(c->scratch, "$%s", name);
        v.s.len = strlen(v.s.data);
        break;
      }
      case AV_FUNC: {
        pb_reader fn;
        TRY(pb_sub(&s, &f, &fn));
        v.kind = GRAPH_ATTR_FUNC;
        TRY(parse_func(c, &fn, &v.func));
        break;
      }
      default: continue;
    }
    *out = v;
  }
}

/* ---- nodes ---- */

static kiln_status parse_node_fields(tf_ctx *c, const pb_reader *r, tf_node_def *n) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    switch (f.number) {
      case ND_NAME: TRY(pb_string(&f, c->scratch, "NodeDef.name", &n->name)); break;
      case ND_OP: TRY(pb_string(&f, c->scratch, "NodeDef.op", &n->op)); break;
      case ND_DEVICE: TRY(pb_string(&f, c->scratch, "NodeDef.device", &n->device)); break;
      case ND_INPUT: {
        const char *in = NULL;
        TRY(pb_string(&f, c->scratch, "NodeDef.input", &in));
        tf_node_add_input(c, n, in);
        break;
      }
      case ND_ATTR: {
        pb_reader e;
        TRY(pb_sub(&s, &f, &e));
        const char *name = NULL;
        graph_attr_value v;
        TRY(parse_attr_entry(c, &e, &name, &v));
        if (v.kind != GRAPH_ATTR_NONE) tf_node_add_attr(c, n, name, &v);
        break;
      }
      default: break;
    }
  }
}

static kiln_status parse_node(tf_ctx *c, const pb_reader *r, int index, tf_node_def *n) {
  kiln_status s = parse_node_fields(c, r, n);
  if (s) {
    if (n->name) return status_wrap(s, "node %d ('%s')", index, n->name);
    return status_wrap(s, "node %d", index);
  }
  return NULL;
}

/* ---- functions ---- */

static kiln_status parse_arg(tf_ctx *c, const pb_reader *r, tf_arg_def *a) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  a->name = "";
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == AD_NAME) {
      TRY(pb_string(&f, c->scratch, "ArgDef.name", &a->name));
    } else if (f.number == AD_TYPE) {
      TRY(pb_expect_wire(&f, PB_VARINT, "ArgDef"));
      a->type = pb_int32(&f);
    } else if (f.number == AD_NUMBER_ATTR || f.number == AD_TYPE_LIST_ATTR) {
      TRY(pb_expect_wire(&f, PB_LEN, "ArgDef"));
      if (f.len) a->is_list = true;
    }
  }
}

static kiln_status parse_signature(tf_ctx *c, const pb_reader *r, tf_function_def *fd) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == OD_NAME) {
      TRY(pb_string(&f, c->scratch, "OpDef.name", &fd->name));
    } else if (f.number == OD_INPUT_ARG || f.number == OD_OUTPUT_ARG) {
      pb_reader a;
      TRY(pb_sub(&s, &f, &a));
      bool in = f.number == OD_INPUT_ARG;
      int *n = in ? &fd->n_in : &fd->n_out;
      tf_arg_def **arr = in ? &fd->in : &fd->out;
      tf_grow(c->scratch, (void **)arr, in ? &fd->cap_in : &fd->cap_out, *n + 1, sizeof **arr);
      TRY(parse_arg(c, &a, &(*arr)[*n]));
      (*n)++;
    }
  }
}

static kiln_status parse_string_entry(tf_ctx *c, const pb_reader *r, tf_string_pair *p) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  p->key = p->value = "";
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == 1) TRY(pb_string(&f, c->scratch, "map key", &p->key));
    else if (f.number == 2) TRY(pb_string(&f, c->scratch, "map value", &p->value));
  }
}

static kiln_status parse_function_fields(tf_ctx *c, const pb_reader *r, tf_function_def *fd) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == FD_SIGNATURE) {
      pb_reader sig;
      TRY(pb_sub(&s, &f, &sig));
      TRY(parse_signature(c, &sig, fd));
    } else if (f.number == FD_NODE_DEF) {
      pb_reader nd;
      TRY(pb_sub(&s, &f, &nd));
      tf_node_def *n = tf_function_add_node(c, fd);
      TRY(parse_node(c, &nd, fd->n_nodes - 1, n));
    } else if (f.number == FD_RET) {
      pb_reader e;
      TRY(pb_sub(&s, &f, &e));
      tf_grow(c->scratch, (void **)&fd->ret, &fd->cap_ret, fd->n_ret + 1, sizeof *fd->ret);
      TRY(parse_string_entry(c, &e, &fd->ret[fd->n_ret]));
      fd->n_ret++;
    }
  }
}

static kiln_status parse_library(tf_ctx *c, const pb_reader *r, tf_graph_def *def) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number != LIB_FUNCTION) continue;
    pb_reader fr;
    TRY(pb_sub(&s, &f, &fr));
    tf_function_def *fd = tf_graph_add_function(c, def);
    kiln_status st = parse_function_fields(c, &fr, fd);
    if (st) {
      if (fd->name) return status_wrap(st, "function '%s'", fd->name);
      return status_wrap(st, "function %d", def->n_functions - 1);
    }
  }
}

static kiln_status parse_versions(tf_ctx *c, const pb_reader *r) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == VD_PRODUCER || f.number == VD_MIN_CONSUMER) {
      TRY(pb_expect_wire(&f, PB_VARINT, "VersionDef"));
      if (f.number == VD_PRODUCER) c->info.producer = pb_int32(&f);
      else c->info.min_consumer = pb_int32(&f);
    }
  }
}

static kiln_status parse_graphdef(tf_ctx *c, const void *data, size_t len, tf_graph_def *def) {
  pb_reader r = pb_reader_init(data, len);
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&r, &f, &done));
    if (done) return NULL;
    if (f.number == GD_NODE) {
      pb_reader nd;
      TRY(pb_sub(&r, &f, &nd));
      tf_node_def *n = tf_graph_add_node(c, def);
      TRY(parse_node(c, &nd, def->n_nodes - 1, n));
    } else if (f.number == GD_LIBRARY) {
      pb_reader lib;
      TRY(pb_sub(&r, &f, &lib));
      TRY(parse_library(c, &lib, def));
    } else if (f.number == GD_VERSIONS) {
      pb_reader v;
      TRY(pb_sub(&r, &f, &v));
      TRY(parse_versions(c, &v));
    }
  }
}

kiln_status tf_parse_graphdef(tf_ctx *c, const void *data, size_t len, tf_graph_def *def) {
  return parse_graphdef(c, data ? data : "", len, def);
}

kiln_status tf_import_graphdef_buffer_ex(const void *data, size_t len, const char *name, graph **out,
                                         tf_import_info *info) {
  *out = NULL;
  if (!name) name = "<graphdef>";
  if (!data && len) return ERR_INVALID("%s: no data", name);
  tf_ctx c;
  tf_ctx_init(&c, name);
  tf_graph_def def;
  memset(&def, 0, sizeof def);
  kiln_status s = parse_graphdef(&c, data ? data : "", len, &def);
  if (!s) s = tf_build_graph(&c, &def, NULL, out);
  if (!s && info) *info = c.info;
  tf_ctx_release(&c);
  return s ? status_wrap(s, "%s", name) : NULL;
}

kiln_status tf_import_graphdef_buffer(const void *data, size_t len, const char *name, graph **out) {
  return tf_import_graphdef_buffer_ex(data, len, name, out, NULL);
}

kiln_status tf_import_graphdef_file_ex(const char *path, graph **out, tf_import_info *info) {
  *out = NULL;
  char *data;
  size_t len;
  TRY(file_read_all(path, "GraphDef", 0, &data, &len));
  kiln_status s = tf_import_graphdef_buffer_ex(data, len, path, out, info);
  free(data);
  return s;
}

kiln_status tf_import_graphdef_file(const char *path, graph **out) {
  return tf_import_graphdef_file_ex(path, out, NULL);
}
