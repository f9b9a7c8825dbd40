/* SavedModel reader: DIR/saved_model.pb and the checkpoint in DIR/variables -> a kiln
 * graph of framework "tf", for one signature.
 *
 * saved_model.pb is a SavedModel message (tensorflow/core/protobuf/saved_model.proto,
 * meta_graph.proto, saved_object_graph.proto): the MetaGraphDef tagged "serve" is
 * taken, and in it the SignatureDef asked for ("serving_default" unless the caller
 * names another; an unknown name is an error listing the ones there are). Its
 * GraphDef is decoded by the GraphDef reader and cut down, before building, to what
 * the signature's outputs need: the placeholders of other signatures, the save and
 * restore functions and every library function nothing reachable calls go away, so
 * they can neither fail the import nor become inputs. Signature inputs and outputs are
 * named by their signature keys (the placeholder nodes are renamed when the key is
 * free), inputs and outputs each in key order, as TensorFlow flattens the dicts.
 *
 * Variables: TF2 graphs hold one VarHandleOp per variable, passed into the signature's
 * function by a (Stateful)PartitionedCall. The SavedObjectGraph's entry for the called
 * function lists the object ids of those captured inputs (bound_inputs, in order,
 * after the signature's own arguments); the checkpoint's object graph (the
 * _CHECKPOINTABLE_OBJECT_GRAPH tensor) gives each object's checkpoint key, or failing
 * that the path of child names from the root plus "/.ATTRIBUTES/VARIABLE_VALUE" does.
 * A VarHandleOp none of this binds falls back to its shared_name as a key (TF1-style
 * checkpoints). Each bound VarHandleOp gets its value as the "_kiln_value" tensor
 * attribute, which the executor uses as the variable's first value, so the model's
 * ReadVariableOps read the checkpoint and an AssignVariableOp still works as in TF.
 * When nothing reachable can write a variable (or hold another kind of resource), the
 * graph is frozen instead: VarHandleOps become Consts, ReadVariableOps Identities, and
 * the (Stateful)PartitionedCalls are inlined, nested ones too, so the bridge sees one
 * flat graph it can cluster, as it would a frozen GraphDef.
 * Lookup tables and assets are refused by node and op name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "base/strbuf.h"
#include "import/tf/pb_wire.h"
#include "import/tf/tf_bundle.h"
#include "import/tf/tf_def.h"

#define DEFAULT_SIGNATURE "serving_default"
#define INIT_OP_SIGNATURE "__saved_model_init_op"

typedef struct sm_signature {
  const char *key;
  const uint8_t *data;
  size_t len;
} sm_signature;

typedef struct sm_meta {
  int n_tags, cap_tags;
  const char **tags;
  const uint8_t *graph, *objects;
  size_t graph_len, objects_len;
  bool has_graph;
  int n_sigs, cap_sigs;
  sm_signature *sigs;
} sm_meta;

typedef struct sm_child {
  int id;
  const char *name;
} sm_child;

typedef struct sm_object {
  int n_children, cap_children;
  sm_child *children;
} sm_object;

typedef struct sm_function {
  const char *name;
  int n_bound, cap_bound;
  int *bound;
} sm_function;

typedef struct sm_objects {
  int n_nodes, cap_nodes;
  sm_object *nodes;
  int n_fns, cap_fns;
  sm_function *fns;
  const char **ckpt_keys; /* per node id, from the checkpoint's object graph (NULL: none) */
  int n_ckpt_keys;
} sm_objects;

/* ---- SavedModel and MetaGraphDef ---- */

static kiln_status parse_meta_info(tf_ctx *c, const pb_reader *r, sm_meta *m) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number != 4) continue; /* tags */
    tf_grow(c->scratch, (void **)&m->tags, &m->cap_tags, m->n_tags + 1, sizeof *m->tags);
    TRY(pb_string(&f, c->scratch, "MetaInfoDef.tags", &m->tags[m->n_tags]));
    m->n_tags++;
  }
}

static kiln_status parse_sig_entry(tf_ctx *c, const pb_reader *r, sm_meta *m) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  sm_signature sig = {"", (const uint8_t *)"", 0};
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == 1) TRY(pb_string(&f, c->scratch, "signature_def key", &sig.key));
    else if (f.number == 2) {
      TRY(pb_expect_wire(&f, PB_LEN, "signature_def entry"));
      sig.data = f.data;
      sig.len = f.len;
    }
  }
  tf_grow(c->scratch, (void **)&m->sigs, &m->cap_sigs, m->n_sigs + 1, sizeof *m->sigs);
  m->sigs[m->n_sigs++] = sig;
  return NULL;
}

static kiln_status parse_meta(tf_ctx *c, const pb_reader *r, sm_meta *m) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == 1) {
      pb_reader mi;
      TRY(pb_sub(&s, &f, &mi));
      TRY(parse_meta_info(c, &mi, m));
    } else if (f.number == 2 || f.number == 7) {
      TRY(pb_expect_wire(&f, PB_LEN, "MetaGraphDef"));
      if (f.number == 2) {
        m->graph = f.data;
        m->graph_len = f.len;
        m->has_graph = true;
      } else {
        m->objects = f.data;
        m->objects_len = f.len;
      }
    } else if (f.number == 5) {
      pb_reader e;
      TRY(pb_sub(&s, &f, &e));
      TRY(parse_sig_entry(c, &e, m));
    }
  }
}

static bool has_tag(const sm_meta *m, const char *tag) {
  for (int i = 0; i < m->n_tags; i++)
    if (!strcmp(m->tags[i], tag)) return true;
  return false;
}

static kiln_status pick_meta(tf_ctx *c, const uint8_t *data, size_t len, sm_meta *out) {
  pb_reader r = pb_reader_init(data, len);
  pb_field f;
  bool done;
  strbuf seen;
  strbuf_init(&seen);
  int n = 0;
  for (;;) {
    kiln_status e = pb_next(&r, &f, &done);
    if (e || done) {
      if (!e) e = ERR_INVALID(n ? "no MetaGraphDef is tagged \"serve\" (the tag sets are: %s)"
                                : "the file holds no MetaGraphDef%s",
                              strbuf_cstr(&seen));
      strbuf_free(&seen);
      return e;
    }
    if (f.number != 2) continue;
    pb_reader mr;
    sm_meta m;
    memset(&m, 0, sizeof m);
    kiln_status s = pb_sub(&r, &f, &mr);
    if (!s) s = parse_meta(c, &mr, &m);
    if (s) {
      strbuf_free(&seen);
      return status_wrap(s, "MetaGraphDef %d", n);
    }
    if (has_tag(&m, "serve")) {
      strbuf_free(&seen);
      *out = m;
      return NULL;
    }
    strbuf_printf(&seen, "%s{", n ? ", " : "");
    for (int i = 0; i < m.n_tags; i++) strbuf_printf(&seen, "%s%s", i ? "," : "", m.tags[i]);
    strbuf_putc(&seen, '}');
    n++;
  }
}

/* ---- SignatureDef ---- */

static int pair_cmp(const void *a, const void *b) {
  return strcmp(((const tf_string_pair *)a)->key, ((const tf_string_pair *)b)->key);
}

/* map<string, TensorInfo> entry: the key and TensorInfo.name (sparse and composite
 * tensors are refused). */
static kiln_status parse_tensor_info_entry(tf_ctx *c, const pb_reader *r, tf_string_pair *p) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  p->key = "";
  p->value = NULL;
  bool composite = false;
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == 1) TRY(pb_string(&f, c->scratch, "signature key", &p->key));
    else if (f.number == 2) {
      pb_reader ti;
      TRY(pb_sub(&s, &f, &ti));
      for (;;) {
        pb_field g;
        bool end;
        TRY(pb_next(&ti, &g, &end));
        if (end) break;
        if (g.number == 1) TRY(pb_string(&g, c->scratch, "TensorInfo.name", &p->value));
        else if (g.number == 4 || g.number == 5) composite = true;
      }
    }
  }
  if (composite || !p->value)
    return status_error(KILN_UNIMPLEMENTED, "signature tensor '%s' is a sparse or composite tensor", p->key);
  return NULL;
}

static kiln_status parse_signature_def(tf_ctx *c, const sm_signature *sd, tf_signature *sig) {
  pb_reader r = pb_reader_init(sd->data, sd->len);
  pb_field f;
  bool done;
  int cap_in = 0, cap_out = 0;
  memset(sig, 0, sizeof *sig);
  for (;;) {
    TRY(pb_next(&r, &f, &done));
    if (done) break;
    if (f.number != 1 && f.number != 2) continue;
    pb_reader e;
    TRY(pb_sub(&r, &f, &e));
    bool in = f.number == 1;
    tf_string_pair **arr = in ? &sig->inputs : &sig->outputs;
    int *n = in ? &sig->n_inputs : &sig->n_outputs;
    tf_grow(c->scratch, (void **)arr, in ? &cap_in : &cap_out, *n + 1, sizeof **arr);
    TRY(parse_tensor_info_entry(c, &e, &(*arr)[*n]));
    (*n)++;
  }
  if (!sig->n_outputs) return ERR_INVALID("the signature has no outputs");
  if (sig->n_inputs > 1) qsort(sig->inputs, (size_t)sig->n_inputs, sizeof *sig->inputs, pair_cmp);
  if (sig->n_outputs > 1) qsort(sig->outputs, (size_t)sig->n_outputs, sizeof *sig->outputs, pair_cmp);
  return NULL;
}

static kiln_status pick_signature(tf_ctx *c, const sm_meta *m, const char *want, tf_signature *sig) {
  const sm_signature *found = NULL;
  int n_real = 0;
  const sm_signature *only = NULL;
  for (int i = 0; i < m->n_sigs; i++) {
    if (!strcmp(m->sigs[i].key, INIT_OP_SIGNATURE)) continue;
    n_real++;
    only = &m->sigs[i];
    if (!strcmp(m->sigs[i].key, want ? want : DEFAULT_SIGNATURE)) found = &m->sigs[i];
  }
  /* With no name asked for, a SavedModel with one signature under another key uses it. */
  if (!found && !want && n_real == 1) found = only;
  if (!found) {
    strbuf b;
    strbuf_init(&b);
    for (int i = 0, k = 0; i < m->n_sigs; i++)
      if (strcmp(m->sigs[i].key, INIT_OP_SIGNATURE)) strbuf_printf(&b, "%s'%s'", k++ ? ", " : "", m->sigs[i].key);
    kiln_status s = status_error(KILN_NOT_FOUND, "no signature '%s' (the SavedModel has %s)",
                                 want ? want : DEFAULT_SIGNATURE, n_real ? strbuf_cstr(&b) : "none");
    strbuf_free(&b);
    return s;
  }
  kiln_status s = parse_signature_def(c, found, sig);
  return s ? status_wrap(s, "signature '%s'", found->key) : NULL;
}

/* ---- object graphs ---- */

static kiln_status parse_children(tf_ctx *c, const pb_reader *r, sm_object *o) {
  pb_reader s = *r;
  int id = -1;
  const char *name = "";
  for (;;) {
    pb_field f;
    bool done;
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == 1) {
      TRY(pb_expect_wire(&f, PB_VARINT, "ObjectReference"));
      id = pb_int32(&f);
    } else if (f.number == 2) TRY(pb_string(&f, c->scratch, "ObjectReference.local_name", &name));
  }
  tf_grow(c->scratch, (void **)&o->children, &o->cap_children, o->n_children + 1, sizeof *o->children);
  o->children[o->n_children++] = (sm_child){id, name};
  return NULL;
}

/* Nodes of a SavedObjectGraph or a TrackableObjectGraph: both list children as field
 * 1 (ObjectReference). For the checkpoint's graph, attributes (2) give checkpoint keys. */
static kiln_status parse_object_node(tf_ctx *c, const pb_reader *r, sm_object *o, const char **ckpt_key) {
  pb_reader s = *r;
  memset(o, 0, sizeof *o);
  for (;;) {
    pb_field f;
    bool done;
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number == 1) {
      pb_reader ch;
      TRY(pb_sub(&s, &f, &ch));
      TRY(parse_children(c, &ch, o));
    } else if (f.number == 2 && ckpt_key) {
      pb_reader at;
      TRY(pb_sub(&s, &f, &at));
      const char *name = "", *key = NULL;
      for (;;) {
        pb_field g;
        bool end;
        TRY(pb_next(&at, &g, &end));
        if (end) break;
        if (g.number == 1) TRY(pb_string(&g, c->scratch, "SerializedTensor.name", &name));
        else if (g.number == 3) TRY(pb_string(&g, c->scratch, "SerializedTensor.checkpoint_key", &key));
      }
      if (!strcmp(name, "VARIABLE_VALUE") && key) *ckpt_key = key;
    }
  }
}

static kiln_status parse_concrete_entry(tf_ctx *c, const pb_reader *r, sm_objects *g) {
  pb_reader s = *r;
  sm_function fn = {"", 0, 0, NULL};
  for (;;) {
    pb_field f;
    bool done;
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == 1) TRY(pb_string(&f, c->scratch, "concrete_functions key", &fn.name));
    else if (f.number == 2) {
      pb_reader cf;
      TRY(pb_sub(&s, &f, &cf));
      for (;;) {
        pb_field b;
        bool end;
        TRY(pb_next(&cf, &b, &end));
        if (end) break;
        if (b.number != 2) continue; /* bound_inputs */
        if (b.wire == PB_LEN) {
          const uint8_t *p = b.data, *e = b.data + b.len;
          while (p < e) {
            uint64_t v;
            TRY(pb_read_varint(&p, e, &v));
            tf_grow(c->scratch, (void **)&fn.bound, &fn.cap_bound, fn.n_bound + 1, sizeof *fn.bound);
            fn.bound[fn.n_bound++] = (int)(int32_t)v;
          }
        } else {
          TRY(pb_expect_wire(&b, PB_VARINT, "SavedConcreteFunction.bound_inputs"));
          tf_grow(c->scratch, (void **)&fn.bound, &fn.cap_bound, fn.n_bound + 1, sizeof *fn.bound);
          fn.bound[fn.n_bound++] = pb_int32(&b);
        }
      }
    }
  }
  tf_grow(c->scratch, (void **)&g->fns, &g->cap_fns, g->n_fns + 1, sizeof *g->fns);
  g->fns[g->n_fns++] = fn;
  return NULL;
}

static kiln_status parse_saved_objects(tf_ctx *c, const uint8_t *data, size_t len, sm_objects *g) {
  pb_reader r = pb_reader_init(data, len);
  for (;;) {
    pb_field f;
    bool done;
    TRY(pb_next(&r, &f, &done));
    if (done) return NULL;
    pb_reader s;
    if (f.number == 1) {
      TRY(pb_sub(&r, &f, &s));
      tf_grow(c->scratch, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes);
      TRY(parse_object_node(c, &s, &g->nodes[g->n_nodes], NULL));
      g->n_nodes++;
    } else if (f.number == 2) {
      TRY(pb_sub(&r, &f, &s));
      TRY(parse_concrete_entry(c, &s, g));
    }
  }
}

/* The checkpoint's TrackableObjectGraph: node i's VARIABLE_VALUE checkpoint key. */
static kiln_status parse_checkpoint_objects(tf_ctx *c, const graph_tensor *t, sm_objects *g) {
  if (t->dtype != GRAPH_DT_STRING || t->n != 1) return ERR_INVALID("is not a string scalar");
  const graph_bytes *b = tensor_string(t, 0);
  pb_reader r = pb_reader_init(b->data, b->len);
  int cap = 0;
  for (;;) {
    pb_field f;
    bool done;
    TRY(pb_next(&r, &f, &done));
    if (done) return NULL;
    if (f.number != 1) continue;
    pb_reader s;
    TRY(pb_sub(&r, &f, &s));
    sm_object o;
    const char *key = NULL;
    TRY(parse_object_node(c, &s, &o, &key));
    tf_grow(c->scratch, (void **)&g->ckpt_keys, &cap, g->n_ckpt_keys + 1, sizeof *g->ckpt_keys);
    g->ckpt_keys[g->n_ckpt_keys++] = key;
  }
}

/* The checkpoint key of object `id`: the checkpoint's own word, else the path of child
 * names from the root (breadth first, so the shortest path, as TF names objects). */
static const char *object_key(tf_ctx *c, const sm_objects *g, int id) {
  if (id >= 0 && id < g->n_ckpt_keys && g->ckpt_keys[id]) return g->ckpt_keys[id];
  if (id <= 0 || id >= g->n_nodes) return NULL;
  int *parent = malloc((size_t)g->n_nodes * sizeof *parent), *queue = malloc((size_t)g->n_nodes * sizeof *queue);
  const char **via = malloc((size_t)g->n_nodes * sizeof *via);
  if (!parent || !queue || !via) abort();
  for (int i = 0; i < g->n_nodes; i++) parent[i] = -1;
  int head = 0, tail = 0;
  queue[tail++] = 0;
  parent[0] = 0;
  while (head < tail && parent[id] < 0) {
    int v = queue[head++];
    for (int k = 0; k < g->nodes[v].n_children; k++) {
      int ch = g->nodes[v].children[k].id;
      if (ch < 0 || ch >= g->n_nodes || parent[ch] >= 0) continue;
      parent[ch] = v;
      via[ch] = g->nodes[v].children[k].name;
      queue[tail++] = ch;
    }
  }
  const char *key = NULL;
  if (parent[id] >= 0) {
    key = ".ATTRIBUTES/VARIABLE_VALUE";
    for (int v = id; v != 0; v = parent[v]) key = arena_printf(c->scratch, "%s/%s", via[v], key);
  }
  free(parent);
  free(queue);
  free(via);
  return key;
}

/* ---- cutting the GraphDef down to one signature ---- */

typedef struct name_index {
  const char *name;
  int i;
} name_index;

static int name_index_cmp(const void *a, const void *b) {
  return strcmp(((const name_index *)a)->name, ((const name_index *)b)->name);
}

static int find_name(const name_index *idx, int n, const char *name) {
  name_index key = {name, 0};
  const name_index *e = n ? bsearch(&key, idx, (size_t)n, sizeof *idx, name_index_cmp) : NULL;
  return e ? e->i : -1;
}

/* "^node", "node", "node:3", "node:out:0" -> "node" in the arena. */
static const char *input_node(arena *a, const char *in) {
  if (in[0] == '^') in++;
  const char *colon = strchr(in, ':');
  return colon ? arena_strndup(a, in, (size_t)(colon - in)) : in;
}

static const graph_attr_value *node_attr(const tf_node_def *nd, const char *name) {
  const graph_attr_value *v = NULL;
  for (int i = 0; i < nd->n_attrs; i++)
    if (!strcmp(nd->attrs[i].name, name)) v = &nd->attrs[i].value;
  return v;
}

/* Ops that need the asset files or lookup tables kiln does not restore. */
static bool unsupported_op(const char *op) {
  static const char *const ops[] = {"HashTable",   "HashTableV2",  "MutableHashTable", "MutableHashTableV2",
                                    "MutableDenseHashTable", "MutableDenseHashTableV2", "InitializeTable",
                                    "InitializeTableV2", "InitializeTableFromTextFile",
                                    "InitializeTableFromTextFileV2", "LookupTableFindV2", "LookupTableImportV2"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) return true;
  return false;
}

typedef struct cut_state {
  tf_ctx *c;
  const tf_graph_def *def;
  name_index *fn_idx;
  bool *fn_used;
  int *fn_queue, fn_tail;
} cut_state;

static void use_function(cut_state *s, const char *name) {
  int i = find_name(s->fn_idx, s->def->n_functions, name);
  if (i < 0 || s->fn_used[i]) return;
  s->fn_used[i] = true;
  s->fn_queue[s->fn_tail++] = i;
}

static void use_attr_functions(cut_state *s, const graph_attr_value *v, int depth) {
  if (depth > 64) return;
  if (v->kind == GRAPH_ATTR_FUNC) {
    use_function(s, v->func.name);
    for (int i = 0; i < v->func.n_attrs; i++) use_attr_functions(s, &v->func.attrs[i].value, depth + 1);
  } else if (v->kind == GRAPH_ATTR_LIST) {
    for (int i = 0; i < v->list.n; i++) use_attr_functions(s, &v->list.items[i], depth + 1);
  }
}

static kiln_status use_node(cut_state *s, const tf_node_def *nd, const char *where) {
  if (!nd->name || !nd->op) return ERR_INVALID("a %s node has no %s", where, nd->name ? "op" : "name");
  if (unsupported_op(nd->op))
    return status_error(KILN_UNIMPLEMENTED, "%s node '%s' is a %s: lookup tables and assets are not supported",
                        where, nd->name, nd->op);
  use_function(s, nd->op);
  for (int k = 0; k < nd->n_attrs; k++) use_attr_functions(s, &nd->attrs[k].value, 0);
  return NULL;
}

/* Keeps the nodes the signature needs and the functions they call, transitively. */
static kiln_status cut_graph(tf_ctx *c, const tf_graph_def *def, const tf_signature *sig, name_index *node_idx,
                             tf_graph_def *out) {
  int n = def->n_nodes;
  bool *keep = calloc((size_t)n + 1, 1);
  int *stack = malloc(((size_t)n + 1) * sizeof *stack);
  cut_state s = {c, def, NULL, calloc((size_t)def->n_functions + 1, 1), NULL, 0};
  s.fn_idx = arena_alloc(c->scratch, ((size_t)def->n_functions + 1) * sizeof *s.fn_idx);
  s.fn_queue = malloc(((size_t)def->n_functions + 1) * sizeof *s.fn_queue);
  if (!keep || !stack || !s.fn_used || !s.fn_queue) abort();
  for (int i = 0; i < def->n_functions; i++) s.fn_idx[i] = (name_index){def->functions[i]->name ? def->functions[i]->name : "", i};
  if (def->n_functions > 1) qsort(s.fn_idx, (size_t)def->n_functions, sizeof *s.fn_idx, name_index_cmp);
  int top = 0;
  kiln_status st = NULL;
  for (int io = 0; io < 2; io++) {
    int k = io ? sig->n_outputs : sig->n_inputs;
    const tf_string_pair *p = io ? sig->outputs : sig->inputs;
    for (int i = 0; i < k; i++) {
      int j = find_name(node_idx, n, input_node(c->scratch, p[i].value));
      if (j < 0) {
        st = ERR_INVALID("signature %s '%s' is '%s', which names no node of the graph", io ? "output" : "input",
                         p[i].key, p[i].value);
        goto done;
      }
      if (!keep[j]) {
        keep[j] = true;
        stack[top++] = j;
      }
    }
  }
  while (top && !st) {
    const tf_node_def *nd = def->nodes[stack[--top]];
    st = use_node(&s, nd, "graph");
    for (int i = 0; i < nd->n_inputs && !st; i++) {
      int j = find_name(node_idx, n, input_node(c->scratch, nd->inputs[i]));
      if (j >= 0 && !keep[j]) {
        keep[j] = true;
        stack[top++] = j;
      }
    }
  }
  for (int h = 0; h < s.fn_tail && !st; h++) {
    const tf_function_def *fd = def->functions[s.fn_queue[h]];
    for (int i = 0; i < fd->n_nodes && !st; i++) {
      st = use_node(&s, fd->nodes[i], "function");
      if (st) st = status_wrap(st, "function '%s'", fd->name);
    }
  }
  if (!st) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++)
      if (keep[i]) *tf_graph_add_node(c, out) = *def->nodes[i];
    for (int i = 0; i < def->n_functions; i++)
      if (s.fn_used[i]) *tf_graph_add_function(c, out) = *def->functions[i];
  }
done:
  free(keep);
  free(stack);
  free(s.fn_used);
  free(s.fn_queue);
  return st;
}

/* ---- variables ---- */

/* Resource variables (TF2, and TF1 with use_resource) and reference variables (TF1). */
static bool is_variable_op(const char *op) {
  return !strcmp(op, "VarHandleOp") || !strcmp(op, "VariableV2") || !strcmp(op, "Variable");
}

static bool is_ref_variable_op(const char *op) { return !strcmp(op, "VariableV2") || !strcmp(op, "Variable"); }

static bool is_call_op(const char *op) { return !strcmp(op, "StatefulPartitionedCall") || !strcmp(op, "PartitionedCall"); }

static const sm_function *find_concrete(const sm_objects *g, const char *name) {
  for (int i = 0; i < g->n_fns; i++)
    if (!strcmp(g->fns[i].name, name)) return &g->fns[i];
  return NULL;
}

/* Object id of every VarHandleOp the calls capture (-1: unknown). */
static void bind_captures(tf_ctx *c, const tf_graph_def *def, const name_index *idx, const sm_objects *g, int *obj) {
  for (int i = 0; i < def->n_nodes; i++) {
    const tf_node_def *nd = def->nodes[i];
    if (!nd->op || !is_call_op(nd->op)) continue;
    const graph_attr_value *f = node_attr(nd, "f");
    if (!f || f->kind != GRAPH_ATTR_FUNC) continue;
    const sm_function *cf = find_concrete(g, f->func.name);
    if (!cf) continue;
    int n_data = 0;
    for (int k = 0; k < nd->n_inputs; k++) n_data += nd->inputs[k][0] != '^';
    int first = n_data - cf->n_bound, seen = 0;
    for (int k = 0; k < nd->n_inputs; k++) {
      if (nd->inputs[k][0] == '^') continue;
      int pos = seen++;
      if (pos < first || first < 0) continue;
      int j = find_name(idx, def->n_nodes, input_node(c->scratch, nd->inputs[k]));
      if (j >= 0 && !strcmp(def->nodes[j]->op, "VarHandleOp")) obj[j] = cf->bound[pos - first];
    }
  }
}

static kiln_status bind_variables(tf_ctx *c, const char *dir, const sm_meta *m, const tf_graph_def *def,
                                  const name_index *idx, tf_graph_def *cut) {
  int n_vars = 0;
  for (int i = 0; i < cut->n_nodes; i++) n_vars += is_variable_op(cut->nodes[i]->op);
  if (!n_vars) return NULL;
  sm_objects g;
  memset(&g, 0, sizeof g);
  if (m->objects) {
    kiln_status e = parse_saved_objects(c, m->objects, m->objects_len, &g);
    if (e) return status_wrap(e, "object_graph_def");
  }
  if (!dir)
    return status_error(KILN_NOT_FOUND, "the signature reads %d variable%s and there is no variables directory",
                        n_vars, n_vars == 1 ? "" : "s");
  char *prefix = arena_printf(c->scratch, "%s/variables/variables", dir);
  tf_bundle *b;
  kiln_status s = tf_bundle_open(prefix, &b);
  if (s) return status_wrap(s, "the signature reads %d variable%s", n_vars, n_vars == 1 ? "" : "s");
  if (tf_bundle_has(b, "_CHECKPOINTABLE_OBJECT_GRAPH")) {
    graph_tensor *t;
    s = tf_bundle_read(b, "_CHECKPOINTABLE_OBJECT_GRAPH", &t);
    if (!s) {
      s = parse_checkpoint_objects(c, t, &g);
      if (s) s = status_wrap(s, "%s.index: _CHECKPOINTABLE_OBJECT_GRAPH", prefix);
      tensor_free(t);
    }
  }
  int *obj = malloc(((size_t)def->n_nodes + 1) * sizeof *obj);
  if (!obj) abort();
  for (int i = 0; i < def->n_nodes; i++) obj[i] = -1;
  if (!s) bind_captures(c, def, idx, &g, obj);
  for (int i = 0; i < cut->n_nodes && !s; i++) {
    tf_node_def *nd = cut->nodes[i];
    if (!is_variable_op(nd->op)) continue;
    int j = find_name(idx, def->n_nodes, nd->name);
    const char *key = j >= 0 && obj[j] >= 0 ? object_key(c, &g, obj[j]) : NULL;
    const graph_attr_value *sn = node_attr(nd, "shared_name");
    if (!key && sn && sn->kind == GRAPH_ATTR_STRING && sn->s.len) {
      const char *shared = arena_strndup(c->scratch, sn->s.data, sn->s.len);
      if (tf_bundle_has(b, shared)) key = shared;
    }
    /* TF1's Saver keys a variable by its op's name. */
    if (!key && tf_bundle_has(b, nd->name)) key = nd->name;
    if (!key) {
      s = status_error(KILN_NOT_FOUND, "variable '%s' (%s) has no checkpoint key: the object graph does not bind "
                       "it and neither its shared_name nor its name is in %s.index", nd->name, nd->op, prefix);
      break;
    }
    graph_tensor *t;
    s = tf_bundle_read(b, key, &t);
    if (s) {
      s = status_wrap(s, "variable '%s'", nd->name);
      break;
    }
    tf_ctx_own_tensor(c, t);
    const graph_attr_value *dt = node_attr(nd, "dtype"), *sh = node_attr(nd, "shape");
    if (dt && dt->kind == GRAPH_ATTR_TYPE && dt->type != t->dtype) {
      s = ERR_INVALID("variable '%s' is %s but checkpoint tensor '%s' is %s", nd->name, graph_dtype_name(dt->type),
                      key, graph_dtype_name(t->dtype));
      break;
    }
    if (sh && sh->kind == GRAPH_ATTR_SHAPE && sh->shape->rank != GRAPH_UNKNOWN) {
      bool ok = sh->shape->rank == t->rank;
      for (int d = 0; ok && d < t->rank; d++) ok = sh->shape->dims[d] < 0 || sh->shape->dims[d] == t->dims[d];
      if (!ok) {
        s = ERR_INVALID("variable '%s': checkpoint tensor '%s' does not have the variable's shape", nd->name, key);
        break;
      }
    }
    /* The node is shared with the uncut graph: give the kept copy its own attributes. */
    tf_node_def *copy = arena_alloc(c->scratch, sizeof *copy);
    *copy = *nd;
    copy->attrs = arena_memdup(c->scratch, nd->attrs, (size_t)nd->n_attrs * sizeof *nd->attrs);
    copy->cap_attrs = nd->n_attrs;
    graph_attr_value v;
    memset(&v, 0, sizeof v);
    v.kind = GRAPH_ATTR_TENSOR;
    v.tensor = t;
    tf_node_add_attr(c, copy, "_kiln_value", &v);
    cut->nodes[i] = copy;
    c->info.n_weights++;
  }
  free(obj);
  tf_bundle_free(b);
  return s;
}

/* ---- freezing and inlining ----
 * When the signature only reads its variables, the values become constants and the
 * calls are inlined, so the graph is what a frozen GraphDef would be and the bridge
 * can cluster it (it does not look inside function bodies). Freezing is refused as
 * soon as anything could write a variable or carry a resource other than a variable
 * (TensorArrays, stacks, queues, tables): such graphs keep their VarHandleOps. */

static bool resource_op(const char *op) {
  static const char *const prefixes[] = {"Resource", "TensorArray", "Stack", "Queue", "Iterator", "Lookup",
                                         "MutableHashTable", "HashTable", "Apply", "SparseApply"};
  static const char *const ops[] = {"VarHandleOp",  "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                                    "DestroyResourceOp", "VarIsInitializedOp", "VariableShape", "_Arg", "_Retval",
                                    /* writers of TF1 reference variables */
                                    "Assign", "AssignAdd", "AssignSub", "CountUpTo", "ScatterUpdate", "ScatterAdd",
                                    "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax",
                                    "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub", "IsVariableInitialized",
                                    "VariableV2", "Variable"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (!strncmp(op, prefixes[i], strlen(prefixes[i]))) return true;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) return true;
  return false;
}

enum { TF_DT_RESOURCE = 20 };

static bool can_freeze(const tf_graph_def *cut) {
  for (int i = 0; i < cut->n_nodes; i++) {
    const tf_node_def *nd = cut->nodes[i];
    if (is_variable_op(nd->op)) {
      if (!node_attr(nd, "_kiln_value")) return false;
    } else if (resource_op(nd->op)) {
      return false;
    }
  }
  for (int f = 0; f < cut->n_functions; f++)
    for (int i = 0; i < cut->functions[f]->n_nodes; i++)
      if (resource_op(cut->functions[f]->nodes[i]->op)) return false;
  return true;
}

static void make_identity(tf_ctx *c, tf_node_def *nd) {
  const graph_attr_value *dt = node_attr(nd, "dtype");
  nd->op = "Identity";
  if (dt) {
    graph_attr_value t = *dt;
    tf_node_add_attr(c, nd, "T", &t);
  }
}

/* VarHandleOp -> Const of its value; ReadVariableOp -> Identity; resource arguments
 * lose their type (they now carry the values). */
static void freeze(tf_ctx *c, tf_graph_def *cut) {
  for (int i = 0; i < cut->n_nodes; i++) {
    tf_node_def *nd = cut->nodes[i];
    if (!strcmp(nd->op, "ReadVariableOp")) {
      tf_node_def *copy = arena_memdup(c->scratch, nd, sizeof *nd);
      copy->attrs = arena_memdup(c->scratch, nd->attrs, (size_t)nd->n_attrs * sizeof *nd->attrs);
      copy->cap_attrs = nd->n_attrs;
      make_identity(c, copy);
      cut->nodes[i] = copy;
    }
    if (!is_variable_op(nd->op)) continue;
    const graph_attr_value *v = node_attr(nd, "_kiln_value");
    tf_node_def *k = arena_calloc(c->scratch, 1, sizeof *k);
    k->name = nd->name;
    k->op = "Const";
    k->device = nd->device;
    graph_attr_value dt;
    memset(&dt, 0, sizeof dt);
    dt.kind = GRAPH_ATTR_TYPE;
    dt.type = v->tensor->dtype;
    tf_node_add_attr(c, k, "value", v);
    tf_node_add_attr(c, k, "dtype", &dt);
    cut->nodes[i] = k;
  }
  for (int f = 0; f < cut->n_functions; f++) {
    tf_function_def *fd = cut->functions[f];
    for (int i = 0; i < fd->n_in; i++)
      if (fd->in[i].type == TF_DT_RESOURCE) fd->in[i].type = 0;
    for (int i = 0; i < fd->n_nodes; i++)
      if (!strcmp(fd->nodes[i]->op, "ReadVariableOp")) make_identity(c, fd->nodes[i]);
  }
}

/* Bodies inlined into one graph, all rounds together: far beyond any real model, and
 * a bound on a library whose functions call themselves. */
enum { INLINE_NODE_LIMIT = 1 << 22, INLINE_ROUNDS = 64 };

typedef struct port_ref {
  graph_node *node;
  int port;
} port_ref;

/* Replaces call node `call` (in root graph g) by a copy of its function's body. */
static kiln_status inline_call(graph *g, graph_node *call, const graph *body, int64_t *budget) {
  if (body->n_inputs != call->n_inputs)
    return ERR_INVALID("call '%s' passes %d inputs to function '%s', which takes %d", call->name, call->n_inputs,
                       body->name, body->n_inputs);
  if (body->n_results > call->n_outputs && body->n_results > 0) TRY(graph_node_set_num_outputs(call, body->n_results));
  *budget -= body->n_nodes;
  if (*budget < 0) return status_error(KILN_RESOURCE_EXHAUSTED, "inlining the calls makes more than %d nodes",
                                       INLINE_NODE_LIMIT);
  graph_node **made = calloc((size_t)body->n_nodes + 1, sizeof *made);
  port_ref *arg = calloc((size_t)body->n_inputs + 1, sizeof *arg);
  if (!made || !arg) abort();
  for (int i = 0; i < body->n_inputs; i++) arg[i] = (port_ref){call->inputs[i].node, call->inputs[i].port};
  kiln_status s = NULL;
  /* Nodes first (edges may point forward: loops), with the call's name as a scope. */
  for (int i = 0; i < body->n_nodes && !s; i++) {
    graph_node *v = body->nodes[i];
    v->user_data = NULL;
    if (v->is_input) continue;
    const char *name = graph_unique_name(g, arena_printf(g->arena, "%s/%s", call->name, v->name));
    graph_node *n;
    s = graph_add_node(g, name, v->op, &n);
    if (s) break;
    for (int a = 0; a < v->n_attrs; a++) graph_node_set_attr(n, v->attrs[a].name, &v->attrs[a].value);
    if (v->n_outputs > 1) s = graph_node_set_num_outputs(n, v->n_outputs);
    for (int p = 0; p < v->n_outputs && !s; p++)
      graph_node_set_output(n, p, v->outputs[p].dtype, &v->outputs[p].shape);
    if (v->requested_device) graph_node_set_requested_device(n, v->requested_device);
    else if (call->requested_device) graph_node_set_requested_device(n, call->requested_device);
    made[i] = n;
    v->user_data = n;
  }
  /* Where a body tensor now comes from. */
#define SOURCE(src, port, out)                                            \
  do {                                                                    \
    if ((src)->is_input) {                                                \
      int k_ = 0;                                                         \
      while (k_ < body->n_inputs && body->inputs[k_] != (src)) k_++;      \
      (out) = arg[k_];                                                    \
    } else {                                                              \
      (out) = (port_ref){(graph_node *)(src)->user_data, (port)};         \
    }                                                                     \
  } while (0)
  for (int i = 0; i < body->n_nodes && !s; i++) {
    graph_node *v = body->nodes[i];
    if (v->is_input) continue;
    for (int k = 0; k < v->n_inputs && !s; k++) {
      port_ref r;
      SOURCE(v->inputs[k].node, v->inputs[k].port, r);
      s = graph_add_edge(r.node, r.port, made[i]);
    }
    for (int k = 0; k < v->n_control && !s; k++) {
      port_ref r;
      SOURCE(v->control_inputs[k], 0, r);
      s = graph_add_control_edge(r.node, made[i]);
    }
    /* What the call waited for, every node of the body waits for. */
    for (int k = 0; k < call->n_control && !s; k++) s = graph_add_control_edge(call->control_inputs[k], made[i]);
  }
  port_ref *res = calloc((size_t)body->n_results + 1, sizeof *res);
  if (!res) abort();
  for (int j = 0; j < body->n_results && !s; j++) SOURCE(body->results[j].node, body->results[j].port, res[j]);
#undef SOURCE
  if (!s) {
    /* Control consumers of the call now wait for every result. */
    const graph_use *uses;
    int n_ctl = graph_consumers(call, GRAPH_CONTROL, &uses);
    graph_node **ctl = malloc(((size_t)n_ctl + 1) * sizeof *ctl);
    if (!ctl) abort();
    for (int k = 0; k < n_ctl; k++) ctl[k] = uses[k].node;
    for (int k = 0; k < n_ctl && !s; k++)
      for (int j = 0; j < body->n_results && !s; j++) s = graph_add_control_edge(res[j].node, ctl[k]);
    free(ctl);
  }
  for (int j = 0; j < body->n_results && !s; j++) graph_replace_uses(call, j, res[j].node, res[j].port);
  if (!s) s = graph_remove_node(call);
  free(res);
  free(made);
  free(arg);
  for (int i = 0; i < body->n_nodes; i++) body->nodes[i]->user_data = NULL;
  return s;
}

static bool is_call_node(const graph_node *n) {
  return graph_node_is(n, "tf.StatefulPartitionedCall") || graph_node_is(n, "tf.PartitionedCall");
}

static kiln_status inline_calls(graph *g) {
  int64_t budget = INLINE_NODE_LIMIT;
  for (int round = 0;; round++) {
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
      graph_node *n = g->nodes[i];
      if (!is_call_node(n)) continue;
      const graph_attr_value *f = graph_node_attr(n, "f");
      if (!f || f->kind != GRAPH_ATTR_FUNC || !f->func.body) continue;
      if (round == INLINE_ROUNDS)
        return ERR_INVALID("calls still nest %d levels deep (does a function call itself?)", INLINE_ROUNDS);
      kiln_status s = inline_call(g, n, f->func.body, &budget);
      if (s) return status_wrap(s, "inlining call '%s'", n->name);
      any = true;
      i--; /* the call's slot now holds the next node */
    }
    if (!any) break;
  }
  graph_prune(g, NULL, 0);
  return graph_validate(g);
}

/* ---- renaming inputs to their signature keys ---- */

static const char *renamed(tf_ctx *c, const char *in, const char *from, const char *to) {
  const char *p = in[0] == '^' ? in + 1 : in;
  size_t n = strlen(from);
  if (strncmp(p, from, n) || (p[n] && p[n] != ':')) return in;
  return arena_printf(c->scratch, "%s%s%s", in[0] == '^' ? "^" : "", to, p + n);
}

static void rename_inputs(tf_ctx *c, tf_graph_def *g, tf_signature *sig) {
  for (int i = 0; i < sig->n_inputs; i++) {
    const char *from = input_node(c->scratch, sig->inputs[i].value), *to = sig->inputs[i].key;
    if (!strcmp(from, to) || !*to) continue;
    bool taken = false;
    tf_node_def *ph = NULL;
    for (int k = 0; k < g->n_nodes; k++) {
      if (!strcmp(g->nodes[k]->name, to)) taken = true;
      if (!strcmp(g->nodes[k]->name, from)) ph = g->nodes[k];
    }
    if (taken || !ph) continue;
    tf_node_def *copy = arena_alloc(c->scratch, sizeof *copy);
    *copy = *ph;
    copy->name = to;
    for (int k = 0; k < g->n_nodes; k++) {
      if (g->nodes[k] == ph) g->nodes[k] = copy;
      tf_node_def *nd = g->nodes[k];
      bool touched = false;
      for (int j = 0; j < nd->n_inputs && !touched; j++) touched = renamed(c, nd->inputs[j], from, to) != nd->inputs[j];
      if (!touched) continue;
      tf_node_def *nc = nd == copy ? nd : arena_memdup(c->scratch, nd, sizeof *nd);
      nc->inputs = arena_memdup(c->scratch, nd->inputs, (size_t)nd->n_inputs * sizeof *nd->inputs);
      nc->cap_inputs = nd->n_inputs;
      for (int j = 0; j < nd->n_inputs; j++) nc->inputs[j] = renamed(c, nd->inputs[j], from, to);
      g->nodes[k] = nc;
    }
    for (int k = 0; k < sig->n_inputs; k++) sig->inputs[k].value = renamed(c, sig->inputs[k].value, from, to);
    for (int k = 0; k < sig->n_outputs; k++) sig->outputs[k].value = renamed(c, sig->outputs[k].value, from, to);
  }
}

/* ---- the whole import ---- */

static kiln_status import_meta(tf_ctx *c, const char *dir, const void *data, size_t len, const char *signature,
                               graph **out) {
  sm_meta m;
  memset(&m, 0, sizeof m);
  TRY(pick_meta(c, data, len, &m));
  if (!m.has_graph) return ERR_INVALID("the \"serve\" MetaGraphDef has no graph_def");
  tf_signature sig;
  TRY(pick_signature(c, &m, signature, &sig));
  tf_graph_def def;
  memset(&def, 0, sizeof def);
  kiln_status s = tf_parse_graphdef(c, m.graph, m.graph_len, &def);
  if (s) return status_wrap(s, "graph_def");
  name_index *idx = arena_alloc(c->scratch, ((size_t)def.n_nodes + 1) * sizeof *idx);
  for (int i = 0; i < def.n_nodes; i++) {
    if (!def.nodes[i]->name) return ERR_INVALID("graph_def node %d has no name", i);
    idx[i] = (name_index){def.nodes[i]->name, i};
  }
  if (def.n_nodes > 1) qsort(idx, (size_t)def.n_nodes, sizeof *idx, name_index_cmp);
  tf_graph_def cut;
  TRY(cut_graph(c, &def, &sig, idx, &cut));
  TRY(bind_variables(c, dir, &m, &def, idx, &cut));
  bool frozen = can_freeze(&cut);
  if (frozen) freeze(c, &cut);
  rename_inputs(c, &cut, &sig);
  for (int i = 0; i < cut.n_nodes && !frozen; i++)
    if (is_ref_variable_op(cut.nodes[i]->op))
      return status_error(KILN_UNIMPLEMENTED, "'%s' is a TF1 reference variable (%s) that the signature may write; "
                          "kiln reads such variables only as constants", cut.nodes[i]->name, cut.nodes[i]->op);
  TRY(tf_build_graph(c, &cut, &sig, out));
  if (!frozen) return NULL;
  kiln_status s2 = inline_calls(*out);
  if (s2) {
    graph_free(*out);
    *out = NULL;
  }
  return s2;
}

kiln_status tf_import_savedmodel_buffer(const void *data, size_t len, const char *dir, const char *signature,
                                        const char *name, graph **out, tf_import_info *info) {
  *out = NULL;
  if (signature && !*signature) signature = NULL;
  if (!name) name = "<saved_model.pb>";
  tf_ctx c;
  tf_ctx_init(&c, name);
  kiln_status s = import_meta(&c, dir, data ? data : "", data ? len : 0, signature, out);
  if (!s && info) *info = c.info;
  tf_ctx_release(&c);
  return s ? status_wrap(s, "%s", name) : NULL;
}

kiln_status tf_import_savedmodel(const char *dir, const char *signature, graph **out, tf_import_info *info) {
  *out = NULL;
  if (signature && !*signature) signature = NULL;
  char *path = malloc(strlen(dir) + 32);
  if (!path) abort();
  sprintf(path, "%s/saved_model.pb", dir);
  char *data;
  size_t len;
  kiln_status s = file_read_all(path, "SavedModel", 0, &data, &len);
  if (s) {
    struct stat st;
    sprintf(path, "%s/saved_model.pbtxt", dir);
    if (stat(path, &st) == 0)
      s = status_wrap(s, "(%s is the text form, which kiln does not read; save the model in binary form)", path);
    free(path);
    return s;
  }
  s = tf_import_savedmodel_buffer(data, len, dir, signature, path, out, info);
  free(data);
  free(path);
  return s;
}
