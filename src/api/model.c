/* kiln_model: loading, introspection and runs behind the public API.
 *
 * A model is either a framework graph or an HLO module.
 *
 * Graphs (ONNX, GraphDef, TF.js, kiln graph text) are imported, then the bridge runs
 * once at load (placement, and clustering with jit=auto), exactly as `kiln run` does.
 * Runs go through host executors (exec/executor.h). An executor keeps per-session
 * state while it runs (frames, per-run resources, counters), so one executor serves one
 * run at a time; the model keeps a pool and a run takes an idle executor or creates one
 * more. Compiled code is not duplicated by the pool: each executor lowers a cluster or
 * op to the same HLO module, and the cpu backend's executable cache (keyed by the
 * module's fingerprint, locked) hands every executor the same compiled executable, which
 * serialises its own runs where oneDNN requires it. That is why concurrent runs give
 * the same bits as a single-threaded run. The one exception is a graph that assigns
 * resource variables: its state lives in an executor, so such a model uses one
 * executor and its runs queue for it.
 *
 * HLO modules are parsed, verified and compiled once at load for the device (the
 * interpreter when the device answers UNIMPLEMENTED, with a warning, as `kiln run`
 * does); runs call the backend's execute, which is thread-safe for cpu and the
 * interpreter. Entry parameters are the inputs (by instruction name, or pN), the root's
 * array leaves depth-first the outputs (output_0, output_1, ...).
 *
 * Inputs are never copied on the way in: the caller's buffers are wrapped as borrowed
 * host tensors or literal views (strings excepted: their texts are copied into a
 * string tensor). Outputs move into kiln_tensors without a copy when kiln holds their
 * only reference. A graph's inputs are the feeds its results need, then the optional
 * ones (kiln.h): declared inputs nothing reads, and PlaceholderWithDefault nodes.
 *
 * Sequence, optional and map values (kiln_kind) travel as executor_value trees
 * (exec/executor.h): an input's items are wrapped like tensors (borrowed), and a
 * result's tree becomes a kiln_tensor with items. kiln_value grew kind, n_items and
 * items at its end; a struct_size that ends before them is an older caller's tensor. */
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "backends/cpu/cpu_backend.h"
#include "base/file.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "exec/executor.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "import/import.h"

/* The size of a kiln_value from before kind, n_items and items (kiln.h). */
#define KILN_VALUE_V1_SIZE offsetof(kiln_value, kind)

/* Executors a model keeps at most; runs beyond this many at once wait for one. */
#define API_MAX_EXECUTORS 64

typedef struct api_io {
  char *name;
  kiln_dtype dtype;
  int rank; /* -1: unknown */
  int64_t dims[GRAPH_MAX_RANK];
  const graph_node *feed; /* graphs: the feed node */
  kiln_kind kind;         /* inputs: what the feed is declared as */
  const char *type;       /* inputs of other kinds: the declared type as text (executor_feed_type) */
  int index;              /* HLO: parameter number (inputs) or leaf index (outputs) */
} api_io;

struct kiln_model {
  kiln_format format;
  kiln_options *opts; /* the model's own copy */
  backend_compile_options compile;
  char *source; /* the path, or "<memory>" */
  int n_in, n_out;
  int n_opt; /* optional inputs (kiln.h), in[n_in .. n_in + n_opt) after the required ones */
  api_io *in, *out;
  atomic_llong runs;
  atomic_llong bytes_to_device, bytes_to_host; /* HLO modules on a device with memory (graphs: executor stats) */

  /* graphs */
  graph *g;
  int n_clusters;
  jit_report *report; /* option report: the bridge's decisions and the graph before it */
  graph *original;
  bool serial; /* assigns variables: one executor, runs queue */
  pthread_mutex_t lock;
  pthread_cond_t idle;
  int n_pool;
  executor *pool[API_MAX_EXECUTORS];
  bool busy[API_MAX_EXECUTORS];

  /* HLO */
  hlo_module *module;
  const backend *device;
  backend_executable *exe;
};

/* ------------------------------------------------------------------ helpers ---- */

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (!d) abort();
  return memcpy(d, s, n);
}

static void print_dims(strbuf *b, int rank, const int64_t *dims) {
  if (rank < 0) {
    strbuf_append(b, "[unknown rank]");
    return;
  }
  strbuf_putc(b, '[');
  for (int i = 0; i < rank; i++) {
    if (i) strbuf_putc(b, ',');
    if (dims[i] < 0) strbuf_putc(b, '?');
    else strbuf_printf(b, "%lld", (long long)dims[i]);
  }
  strbuf_putc(b, ']');
}

static void print_io(strbuf *b, const api_io *io) {
  if (io->type) {
    strbuf_printf(b, "%s (%s)", io->name, io->type);
    return;
  }
  strbuf_printf(b, "%s (%s", io->name, kiln_dtype_name(io->dtype));
  print_dims(b, io->rank, io->dims);
  strbuf_putc(b, ')');
}

static void list_ios(strbuf *b, const char *what, int n, const api_io *ios) {
  strbuf_printf(b, "; the model's %s: ", what);
  if (!n) strbuf_append(b, "none");
  for (int i = 0; i < n; i++) {
    if (i) strbuf_append(b, ", ");
    print_io(b, &ios[i]);
  }
}

static kiln_status listing_error(kiln_code code, const kiln_model *m, bool inputs, const char *fmt, ...)
    KILN_PRINTF(4, 5);
static kiln_status listing_error(kiln_code code, const kiln_model *m, bool inputs, const char *fmt, ...) {
  strbuf b;
  strbuf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  char head[1024];
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  strbuf_append(&b, head);
  if (inputs) list_ios(&b, "inputs", m->n_in, m->in);
  else list_ios(&b, "outputs", m->n_out, m->out);
  if (inputs && m->n_opt) {
    strbuf_append(&b, "; optional: ");
    for (int i = 0; i < m->n_opt; i++) {
      if (i) strbuf_append(&b, ", ");
      print_io(&b, &m->in[m->n_in + i]);
    }
  }
  kiln_status s = status_error(code, "%s", strbuf_cstr(&b));
  strbuf_free(&b);
  return s;
}

/* TF tensor names: "x" and "x:0" name the same thing. */
static bool name_matches(const char *have, const char *want) {
  if (strcmp(have, want) == 0) return true;
  size_t h = strlen(have), w = strlen(want);
  if (w == h + 2 && strncmp(want, have, h) == 0 && strcmp(want + h, ":0") == 0) return true;
  if (h == w + 2 && strncmp(have, want, w) == 0 && strcmp(have + w, ":0") == 0) return true;
  return false;
}

static int find_io(int n, const api_io *ios, const char *name, bool hlo_inputs) {
  for (int i = 0; i < n; i++)
    if (name_matches(ios[i].name, name)) return i;
  /* HLO parameters also answer to pN, as `kiln run -i pN=...` does. */
  if (hlo_inputs && name[0] == 'p' && name[1] >= '0' && name[1] <= '9' && (name[1] != '0' || !name[2])) {
    char *end = NULL;
    long k = strtol(name + 1, &end, 10);
    if (!*end)
      for (int i = 0; i < n; i++)
        if (ios[i].index == k) return i;
  }
  return -1;
}

/* Plugins the options name join the process-wide registry. */
static void add_plugins(const kiln_options *o) {
  if (!o->plugin_path[0] && !o->plugins.n) return;
  char *copy = xstrdup(o->plugin_path);
  const char *dirs[256];
  int n_dirs = 0;
  char *save = NULL;
  for (char *d = strtok_r(copy, ":", &save); d && n_dirs < 256; d = strtok_r(NULL, ":", &save))
    if (*d) dirs[n_dirs++] = d;
  backend_registry_add_plugins(n_dirs, dirs, o->plugins.n, (const char *const *)o->plugins.v);
  free(copy);
}

static kiln_status unknown_device(const char *name) {
  strbuf b;
  strbuf_init(&b);
  for (int i = 0; i < backend_count(); i++) strbuf_printf(&b, "%s%s", i ? ", " : "", backend_at(i)->name);
  kiln_status s = status_error(KILN_NOT_FOUND, "unknown device '%s' (available devices: %s)", name, strbuf_cstr(&b));
  strbuf_free(&b);
  return s;
}

/* ------------------------------------------------------------------- graphs ---- */

static bool op_assigns(const char *op) { return strstr(op, "Assign") != NULL || strstr(op, "ScatterUpdate") != NULL; }

static bool graph_assigns_variables(const graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    if (op_assigns(g->nodes[i]->op)) return true;
  for (int f = 0; f < g->n_functions; f++)
    if (graph_assigns_variables(g->functions[f])) return true;
  return false;
}

static executor_options executor_options_of(const kiln_model *m) {
  executor_options eo = {0};
  eo.device = m->opts->device;
  eo.dump_dir = m->opts->dump_to;
  eo.dump_large_constants = m->opts->dump_large_constants;
  eo.compile = &m->compile;
  return eo;
}

/* Kind and innermost element dtype of a feed declared as type text (executor.h's
 * executor_feed_type: "sequence(tensor(float))"); NULL: a tensor. */
static void describe_kind(api_io *io, const char *type) {
  io->kind = KILN_KIND_TENSOR;
  if (!type) return;
  io->type = type;
  io->kind = strncmp(type, "sequence(", 9) == 0   ? KILN_KIND_SEQUENCE
             : strncmp(type, "optional(", 9) == 0 ? KILN_KIND_OPTIONAL
             : strncmp(type, "map(", 4) == 0      ? KILN_KIND_MAP
                                                  : KILN_KIND_TENSOR;
  const char *t = strstr(type, "tensor(");
  if (t) {
    t += 7;
    const char *end = strchr(t, ')');
    char name[32];
    size_t len = end ? (size_t)(end - t) : 0;
    graph_dtype dt;
    if (len && len < sizeof name) {
      memcpy(name, t, len);
      name[len] = 0;
      if (graph_dtype_from_name(name, len, &dt)) io->dtype = api_dtype_from_graph(dt);
    }
  }
}

static void describe_graph_io(kiln_model *m) {
  executor *ex = m->pool[0];
  m->n_in = executor_num_feeds(ex);
  m->n_opt = executor_num_optional_feeds(ex);
  m->in = calloc((size_t)(m->n_in + m->n_opt) + 1, sizeof *m->in);
  if (!m->in) abort();
  for (int i = 0; i < m->n_in + m->n_opt; i++) {
    const graph_node *f = i < m->n_in ? executor_feed(ex, i) : executor_optional_feed(ex, i - m->n_in);
    graph_dtype dt;
    graph_shape sh;
    executor_feed_signature(f, &dt, &sh);
    api_io *io = &m->in[i];
    io->name = xstrdup(f->name);
    io->feed = f;
    io->dtype = api_dtype_from_graph(dt);
    io->rank = sh.rank == GRAPH_UNKNOWN ? -1 : sh.rank;
    for (int k = 0; k < sh.rank; k++) io->dims[k] = sh.dims[k] == GRAPH_UNKNOWN ? -1 : sh.dims[k];
    describe_kind(io, executor_feed_type(f));
  }
  m->n_out = m->g->n_results;
  m->out = calloc((size_t)m->n_out + 1, sizeof *m->out);
  if (!m->out) abort();
  for (int r = 0; r < m->n_out; r++) {
    const graph_result *res = &m->g->results[r];
    api_io *io = &m->out[r];
    io->name = xstrdup(res->name);
    io->index = r;
    io->rank = -1;
    io->dtype = KILN_DTYPE_INVALID;
    if (res->port < res->node->n_outputs) {
      const graph_output_info *info = &res->node->outputs[res->port];
      io->dtype = api_dtype_from_graph(info->dtype);
      io->rank = info->shape.rank == GRAPH_UNKNOWN ? -1 : info->shape.rank;
      for (int k = 0; k < info->shape.rank; k++)
        io->dims[k] = info->shape.dims[k] == GRAPH_UNKNOWN ? -1 : info->shape.dims[k];
    }
  }
}

static kiln_status load_graph(kiln_model *m, graph *g) {
  m->g = g;
  const kiln_options *o = m->opts;
  if (o->device[0] && !backend_find(o->device)) return unknown_device(o->device);
  if (o->dump_to[0]) TRY(file_make_dirs(o->dump_to));
  jit_options jo = api_jit_options(o);
  jit_report *jr = NULL;
  if (o->report) m->original = graph_clone(g);
  kiln_status s = jit_run(g, &jo, &jr);
  if (jr) m->n_clusters = jr->n_clusters;
  if (o->report) m->report = jr;
  else jit_report_free(jr);
  TRY(status_wrap(s, "%s", m->source));
  m->serial = graph_assigns_variables(g);
  executor_options eo = executor_options_of(m);
  TRY(status_wrap(executor_new(g, &eo, &m->pool[0]), "%s", m->source));
  m->n_pool = 1;
  describe_graph_io(m);
  return NULL;
}

/* Takes an idle executor, creating one while fewer than the cap exist. */
static kiln_status acquire(kiln_model *m, int *slot) {
  pthread_mutex_lock(&m->lock);
  kiln_status s = NULL;
  for (;;) {
    int limit = m->serial ? 1 : m->n_pool;
    int found = -1;
    for (int i = 0; i < limit && found < 0; i++)
      if (!m->busy[i]) found = i;
    if (found < 0 && !m->serial && m->n_pool < API_MAX_EXECUTORS) {
      executor_options eo = executor_options_of(m);
      s = executor_new(m->g, &eo, &m->pool[m->n_pool]);
      if (s) break;
      found = m->n_pool++;
    }
    if (found >= 0) {
      m->busy[found] = true;
      *slot = found;
      break;
    }
    pthread_cond_wait(&m->idle, &m->lock);
  }
  pthread_mutex_unlock(&m->lock);
  return s;
}

static void release(kiln_model *m, int slot) {
  pthread_mutex_lock(&m->lock);
  m->busy[slot] = false;
  pthread_cond_signal(&m->idle);
  pthread_mutex_unlock(&m->lock);
}

/* ---------------------------------------------------------------------- HLO ---- */

static kiln_status describe_hlo_io(kiln_model *m) {
  const hlo_computation *entry = m->module->entry;
  m->in = calloc((size_t)entry->n_params + 1, sizeof *m->in);
  if (!m->in) abort();
  for (int i = 0; i < entry->n_params; i++) {
    const hlo_instr *p = entry->params[i];
    if (shape_is_tuple(&p->shape)) {
      char *sh = shape_to_string(&p->shape);
      kiln_status s = ERR_UNIMPLEMENTED("%s: entry parameter p%d (%s) has tuple shape %s; kiln takes array "
                                        "parameters only (flatten the tuple into separate parameters)",
                                        m->source, i, p->name, sh);
      free(sh);
      return s;
    }
    if (p->shape.type == HLO_TOKEN) continue;
    api_io *io = &m->in[m->n_in++];
    io->name = xstrdup(p->name);
    io->index = (int)p->parameter_number;
    io->dtype = api_dtype_from_hlo(p->shape.type);
    io->rank = p->shape.rank;
    for (int k = 0; k < p->shape.rank; k++) io->dims[k] = p->shape.dims[k];
  }
  /* Outputs: the root's array leaves, depth-first. */
  const hlo_shape *stack[64];
  int depth = 0, cap = 8;
  m->out = calloc((size_t)cap, sizeof *m->out);
  if (!m->out) abort();
  stack[depth++] = &entry->root->shape;
  int leaf = 0;
  /* An explicit stack in reverse push order keeps the depth-first, left-to-right order. */
  while (depth) {
    const hlo_shape *sh = stack[--depth];
    if (sh->type == HLO_TUPLE) {
      if (depth + sh->n_elems > 64) return ERR_UNIMPLEMENTED("%s: the result tuple nests too deeply", m->source);
      for (int i = sh->n_elems - 1; i >= 0; i--) stack[depth++] = &sh->elems[i];
      continue;
    }
    if (sh->type == HLO_TOKEN) continue;
    if (m->n_out == cap) {
      cap *= 2;
      m->out = realloc(m->out, (size_t)cap * sizeof *m->out);
      if (!m->out) abort();
    }
    api_io *io = &m->out[m->n_out++];
    memset(io, 0, sizeof *io);
    char name[32];
    snprintf(name, sizeof name, "output_%d", leaf);
    io->name = xstrdup(name);
    io->index = leaf++;
    io->dtype = api_dtype_from_hlo(sh->type);
    io->rank = sh->rank;
    for (int k = 0; k < sh->rank; k++) io->dims[k] = sh->dims[k];
  }
  return NULL;
}

static kiln_status load_hlo(kiln_model *m, const char *text, size_t len) {
  TRY(hlo_parse(text, len, m->source, &m->module));
  TRY(hlo_verify_module(m->module));
  if (!m->module->entry) return ERR_INVALID("%s: the module has no entry computation", m->source);
  TRY(describe_hlo_io(m));
  const kiln_options *o = m->opts;
  m->device = o->device[0] ? backend_find(o->device) : backend_default();
  if (!m->device) return unknown_device(o->device);
  kiln_status s = m->device->compile(m->device, m->module, &m->compile, &m->exe);
  const backend *host = &interpreter_backend;
  if (s && kiln_status_code(s) == KILN_UNIMPLEMENTED && m->device != host) {
    log_warning("device %s cannot compile this module (%s); running it on %s instead", m->device->name,
                kiln_status_message(s), host->name);
    kiln_status_free(s);
    m->device = host;
    s = host->compile(host, m->module, &m->compile, &m->exe);
  }
  return status_wrap(s, "compiling %s for device %s", m->source, m->device->name);
}

/* ------------------------------------------------------------------ loading ---- */

void kiln_model_free(kiln_model *m) {
  if (!m) return;
  for (int i = 0; i < m->n_pool; i++) executor_free(m->pool[i]);
  jit_report_free(m->report);
  graph_free(m->original);
  graph_free(m->g);
  if (m->exe) m->device->destroy(m->exe);
  hlo_module_free(m->module);
  for (int i = 0; i < m->n_in + m->n_opt; i++) free(m->in[i].name);
  for (int i = 0; i < m->n_out; i++) free(m->out[i].name);
  free(m->in);
  free(m->out);
  free(m->source);
  kiln_options_free(m->opts);
  pthread_mutex_destroy(&m->lock);
  pthread_cond_destroy(&m->idle);
  free(m);
}

static kiln_status new_model(const kiln_options *opts, const char *source, kiln_model **out) {
  kiln_model *m = calloc(1, sizeof *m);
  if (!m) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  pthread_mutex_init(&m->lock, NULL);
  pthread_cond_init(&m->idle, NULL);
  m->source = xstrdup(source);
  kiln_status s = opts ? kiln_options_clone(opts, &m->opts) : kiln_options_create(&m->opts);
  if (s) {
    kiln_model_free(m);
    return s;
  }
  m->compile = api_compile_options(m->opts);
  *out = m;
  return NULL;
}

static kiln_format format_of_import(import_format f) {
  switch (f) {
    case IMPORT_FORMAT_ONNX: return KILN_FORMAT_ONNX;
    case IMPORT_FORMAT_TF_GRAPHDEF: return KILN_FORMAT_GRAPHDEF;
    case IMPORT_FORMAT_TFJS: return KILN_FORMAT_TFJS;
    case IMPORT_FORMAT_GRAPH_TEXT: return KILN_FORMAT_GRAPH;
    case IMPORT_FORMAT_TF_SAVEDMODEL: return KILN_FORMAT_SAVEDMODEL;
    case IMPORT_FORMAT_UNKNOWN: break;
  }
  return KILN_FORMAT_HLO;
}

static import_format import_of_format(kiln_format f) {
  switch (f) {
    case KILN_FORMAT_ONNX: return IMPORT_FORMAT_ONNX;
    case KILN_FORMAT_GRAPHDEF: return IMPORT_FORMAT_TF_GRAPHDEF;
    case KILN_FORMAT_TFJS: return IMPORT_FORMAT_TFJS;
    case KILN_FORMAT_GRAPH: return IMPORT_FORMAT_GRAPH_TEXT;
    case KILN_FORMAT_SAVEDMODEL: return IMPORT_FORMAT_TF_SAVEDMODEL;
    default: return IMPORT_FORMAT_UNKNOWN;
  }
}

/* Splits a comma-separated option into its names (in a malloc'ed copy, *buf). */
static int split_names(const char *list, char **buf, const char ***names) {
  *buf = xstrdup(list);
  *names = calloc(strlen(list) / 2 + 2, sizeof **names);
  if (!*names) abort();
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(*buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (*t) (*names)[n++] = t;
  return n;
}

/* The inputs / outputs options: the tensors the caller names instead of the file's. */
static kiln_status select_io(const kiln_options *o, graph *g) {
  if (!o->inputs[0] && !o->outputs[0]) return NULL;
  char *ibuf, *obuf;
  const char **in, **out;
  int n_in = split_names(o->inputs, &ibuf, &in), n_out = split_names(o->outputs, &obuf, &out);
  kiln_status s = import_select_io(g, n_in, in, n_out, out);
  free(ibuf);
  free(obuf);
  free(in);
  free(out);
  return s;
}

static kiln_status load(kiln_model *m, const char *path, const void *data, size_t size, kiln_format format) {
  add_plugins(m->opts);
  if (format == KILN_FORMAT_AUTO) format = m->opts->format;
  if (format == KILN_FORMAT_AUTO)
    format = format_of_import(path ? import_detect_format(path) : import_detect_buffer_format(data, size));
  m->format = format;
  if (format == KILN_FORMAT_HLO && (m->opts->inputs[0] || m->opts->outputs[0]))
    return ERR_INVALID("%s: the inputs and outputs options name a model's tensors; an HLO module's are its "
                       "parameters and root",
                       m->source);
  if (format == KILN_FORMAT_HLO) {
    /* an HLO module's option only: a model's clusters keep the op-by-op results */
    m->compile.allow_excess_precision = m->opts->allow_excess_precision;
    if (!path) return load_hlo(m, data, size);
    char *text = NULL;
    size_t len = 0;
    TRY(file_read_all(path, "HLO file", 0, &text, &len));
    kiln_status s = load_hlo(m, text, len);
    free(text);
    return s;
  }
  graph *g = NULL;
  kiln_status s = NULL;
  if (path && format == (kiln_format)format_of_import(import_detect_format(path)))
    s = import_model_file_signature(path, m->opts->signature, &g);
  else if (path) {
    /* The caller named a format the file's name does not suggest: read the bytes. */
    char *bytes = NULL;
    size_t len = 0;
    if (format == KILN_FORMAT_TFJS) return ERR_INVALID("%s: a TF.js model is read from a file named *.json", path);
    TRY(file_read_all(path, "model file", 0, &bytes, &len));
    s = import_model_buffer(bytes, len, import_of_format(format), path, &g);
    free(bytes);
  } else {
    s = import_model_buffer(data, size, import_of_format(format), m->source, &g);
  }
  if (!s) s = status_wrap(select_io(m->opts, g), "%s", m->source);
  if (s) {
    graph_free(g);
    return s;
  }
  return load_graph(m, g);
}

kiln_status kiln_model_load(const char *path, const kiln_options *opts, kiln_model **out) {
  if (!out) return ERR_INVALID("kiln_model_load: out is NULL");
  *out = NULL;
  if (!path) return ERR_INVALID("kiln_model_load: path is NULL");
  kiln_model *m;
  TRY(new_model(opts, path, &m));
  api_log_scope scope;
  api_log_begin(m->opts, &scope);
  kiln_status s = load(m, path, NULL, 0, KILN_FORMAT_AUTO);
  api_log_end(&scope);
  if (s) {
    kiln_model_free(m);
    return s;
  }
  *out = m;
  return NULL;
}

kiln_status kiln_model_load_from_memory(const void *data, size_t size, kiln_format format, const kiln_options *opts,
                                        kiln_model **out) {
  if (!out) return ERR_INVALID("kiln_model_load_from_memory: out is NULL");
  *out = NULL;
  if (!data && size) return ERR_INVALID("kiln_model_load_from_memory: data is NULL");
  if ((int)format < KILN_FORMAT_AUTO || (int)format > KILN_FORMAT_SAVEDMODEL)
    return ERR_INVALID("kiln_model_load_from_memory: format %d is not a kiln_format", (int)format);
  if (!size) return ERR_INVALID("kiln_model_load_from_memory: the model is empty (0 bytes)");
  kiln_model *m;
  TRY(new_model(opts, "<memory>", &m));
  api_log_scope scope;
  api_log_begin(m->opts, &scope);
  kiln_status s = load(m, NULL, data, size, format);
  api_log_end(&scope);
  if (s) {
    kiln_model_free(m);
    return s;
  }
  *out = m;
  return NULL;
}

kiln_format kiln_model_format(const kiln_model *m) { return m ? m->format : KILN_FORMAT_AUTO; }

const char *kiln_format_name(kiln_format f) {
  switch (f) {
    case KILN_FORMAT_ONNX: return "ONNX";
    case KILN_FORMAT_GRAPHDEF: return "TensorFlow GraphDef";
    case KILN_FORMAT_TFJS: return "TF.js graph model";
    case KILN_FORMAT_HLO: return "HLO text";
    case KILN_FORMAT_GRAPH: return "kiln graph";
    case KILN_FORMAT_SAVEDMODEL: return "TensorFlow SavedModel";
    case KILN_FORMAT_AUTO: return "auto";
  }
  return "unknown";
}

/* ------------------------------------------------------------ introspection ---- */

int kiln_model_num_inputs(const kiln_model *m) { return m ? m->n_in : 0; }
int kiln_model_num_optional_inputs(const kiln_model *m) { return m ? m->n_opt : 0; }
int kiln_model_num_outputs(const kiln_model *m) { return m ? m->n_out : 0; }

static kiln_status describe(const kiln_model *m, int i, kiln_value *out, bool input) {
  const char *fn = input ? "kiln_model_input" : "kiln_model_output";
  if (!m) return ERR_INVALID("%s: model handle is NULL", fn);
  if (!out) return ERR_INVALID("%s: out is NULL", fn);
  if (out->struct_size < KILN_VALUE_V1_SIZE)
    return ERR_INVALID("%s: out->struct_size is %zu, expected at least %zu (use KILN_VALUE_INIT)", fn,
                       out->struct_size, sizeof(kiln_value));
  int n = input ? m->n_in + m->n_opt : m->n_out;
  if (i < 0 || i >= n)
    return status_error(KILN_OUT_OF_RANGE, "%s: index %d is outside 0..%d (the model has %d %s)", fn, i, n - 1, n,
                        input ? "inputs" : "outputs");
  const api_io *io = input ? &m->in[i] : &m->out[i];
  out->name = io->name;
  out->dtype = io->dtype;
  out->rank = io->rank;
  out->dims = io->dims;
  out->data = NULL;
  out->byte_size = 0;
  if (out->struct_size >= sizeof(kiln_value)) {
    out->kind = input ? io->kind : KILN_KIND_TENSOR;
    out->n_items = 0;
    out->items = NULL;
  }
  return NULL;
}

kiln_status kiln_model_input(const kiln_model *m, int i, kiln_value *out) { return describe(m, i, out, true); }
kiln_status kiln_model_output(const kiln_model *m, int i, kiln_value *out) { return describe(m, i, out, false); }

static kiln_status find(const kiln_model *m, const char *name, int *index, bool input) {
  const char *fn = input ? "kiln_model_find_input" : "kiln_model_find_output";
  if (!m) return ERR_INVALID("%s: model handle is NULL", fn);
  if (!name || !index) return ERR_INVALID("%s: name or index is NULL", fn);
  int i = input ? find_io(m->n_in + m->n_opt, m->in, name, m->format == KILN_FORMAT_HLO)
                : find_io(m->n_out, m->out, name, false);
  if (i < 0) return listing_error(KILN_NOT_FOUND, m, input, "unknown %s '%s'", input ? "input" : "output", name);
  *index = i;
  return NULL;
}

kiln_status kiln_model_find_input(const kiln_model *m, const char *name, int *index) { return find(m, name, index, true); }
kiln_status kiln_model_find_output(const kiln_model *m, const char *name, int *index) {
  return find(m, name, index, false);
}

/* --------------------------------------------------------------------- runs ---- */

/* One run's bindings: input i of the model is fed by inputs[feed_of[i]]. */
typedef struct run_plan {
  int *feed_of;     /* m->n_in entries */
  int n_sel;
  int *sel;         /* requested outputs as model output indices */
} run_plan;

static void plan_free(run_plan *p) {
  free(p->feed_of);
  free(p->sel);
}

/* The 4- and 2-bit types must arrive as kiln stores them (kiln.h): a byte outside the
 * type's range would be a value the type cannot have, and every later convert would read
 * it. */
static kiln_status check_4bit(const char *name, kiln_dtype d, const void *data, int64_t n) {
  if (d != KILN_INT4 && d != KILN_UINT4 && d != KILN_FLOAT4E2M1FN && d != KILN_INT2 && d != KILN_UINT2) return NULL;
  bool sgn = d == KILN_INT4 || d == KILN_INT2, two = d == KILN_INT2 || d == KILN_UINT2;
  int lo = sgn ? (two ? -2 : -8) : 0, hi = two ? (sgn ? 1 : 3) : (sgn ? 7 : 15);
  for (int64_t i = 0; i < n; i++) {
    int x = sgn ? ((const int8_t *)data)[i] : ((const uint8_t *)data)[i];
    if (x < lo || x > hi)
      return ERR_INVALID("input %s: element %lld is %d, outside %s's %s", name, (long long)i, x, kiln_dtype_name(d),
                         d == KILN_INT4 ? "-8..7" : d == KILN_UINT4 ? "0..15" : d == KILN_INT2 ? "-2..1"
                         : d == KILN_UINT2 ? "0..3" : "4-bit patterns 0..15");
  }
  return NULL;
}

static kiln_kind kind_of(const kiln_value *v) {
  return v->struct_size >= sizeof(kiln_value) ? v->kind : KILN_KIND_TENSOR;
}

static kiln_status check_tensor(const kiln_model *m, const kiln_value *v, const api_io *io);

/* The items of a sequence / optional / map input, recursively; the element types are
 * the executor's to check against the declaration (values.c). */
static kiln_status check_items(const kiln_model *m, const kiln_value *v, const char *where, int depth) {
  if (depth > 64) return ERR_INVALID("%s nests deeper than 64 levels", where);
  if ((int)v->kind < KILN_KIND_TENSOR || (int)v->kind > KILN_KIND_MAP)
    return ERR_INVALID("%s: kind %d is not a kiln_kind", where, (int)v->kind);
  if (v->n_items < 0 || (v->n_items && !v->items))
    return ERR_INVALID("%s: %d items at %p", where, v->n_items, (const void *)v->items);
  if (v->kind == KILN_KIND_OPTIONAL && v->n_items > 1)
    return ERR_INVALID("%s: an optional holds at most one item, given %d", where, v->n_items);
  if (v->kind == KILN_KIND_MAP && v->n_items != 2)
    return ERR_INVALID("%s: a map is 2 items (keys, values), given %d", where, v->n_items);
  for (int i = 0; i < v->n_items; i++) {
    const kiln_value *it = &v->items[i];
    char inner[300];
    snprintf(inner, sizeof inner, "%.250s item %d", where, i);
    if (it->struct_size < sizeof(kiln_value))
      return ERR_INVALID("%s: struct_size is %zu, expected at least %zu (use KILN_VALUE_INIT)", inner, it->struct_size,
                         sizeof(kiln_value));
    if (it->kind == KILN_KIND_TENSOR) {
      api_io any = {0};
      any.name = inner;
      any.rank = -1;
      TRY(check_tensor(m, it, &any));
    } else {
      TRY(check_items(m, it, inner, depth + 1));
    }
  }
  return NULL;
}

static kiln_status check_value(const kiln_model *m, int k, const kiln_value *v, const api_io *io) {
  if (v->struct_size < KILN_VALUE_V1_SIZE)
    return ERR_INVALID("input %d (%s): struct_size is %zu, expected at least %zu (use KILN_VALUE_INIT)", k, io->name,
                       v->struct_size, sizeof(kiln_value));
  kiln_kind kind = kind_of(v);
  char where[300];
  snprintf(where, sizeof where, "input %.250s", io->name);
  bool tensor_like = io->kind == KILN_KIND_TENSOR || io->kind == KILN_KIND_OPTIONAL;
  if (kind == KILN_KIND_TENSOR && !tensor_like)
    return ERR_INVALID("input %s is declared %s but a tensor was given", io->name, io->type);
  if (kind != KILN_KIND_TENSOR && io->kind == KILN_KIND_TENSOR)
    return listing_error(KILN_INVALID_ARGUMENT, m, true, "input %s is a tensor but a %s was given", io->name,
                         kiln_kind_name(kind));
  if (kind != KILN_KIND_TENSOR) return check_items(m, v, where, 0);
  if (io->kind == KILN_KIND_OPTIONAL) { /* a present optional given as its tensor */
    api_io held = *io;
    held.rank = -1;
    return check_tensor(m, v, &held);
  }
  return check_tensor(m, v, io);
}

/* A tensor value against what io declares. */
static kiln_status check_tensor(const kiln_model *m, const kiln_value *v, const api_io *io) {
  size_t esize = kiln_dtype_size(v->dtype);
  if (!esize) return ERR_INVALID("input %s: dtype %d is not a kiln_dtype", io->name, (int)v->dtype);
  if (io->dtype != KILN_DTYPE_INVALID && v->dtype != io->dtype)
    return listing_error(KILN_INVALID_ARGUMENT, m, true, "input %s: the model takes %s but %s was given", io->name,
                         kiln_dtype_name(io->dtype), kiln_dtype_name(v->dtype));
  if (v->rank < 0 || v->rank > GRAPH_MAX_RANK)
    return ERR_INVALID("input %s: rank %d is outside 0..%d", io->name, v->rank, GRAPH_MAX_RANK);
  if (v->rank && !v->dims) return ERR_INVALID("input %s: dims is NULL for rank %d", io->name, v->rank);
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) {
    if (v->dims[i] < 0) return ERR_INVALID("input %s: dimension %d is negative (%lld)", io->name, i, (long long)v->dims[i]);
    if (v->dims[i] && n > INT64_MAX / v->dims[i] / (int64_t)esize)
      return status_error(KILN_OUT_OF_RANGE, "input %s: the size overflows", io->name);
    n *= v->dims[i];
  }
  bool fits = io->rank < 0 || io->rank == v->rank;
  for (int i = 0; fits && io->rank >= 0 && i < v->rank; i++) fits = io->dims[i] < 0 || io->dims[i] == v->dims[i];
  if (!fits) {
    strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b, "input %s: the model takes %s", io->name, kiln_dtype_name(io->dtype));
    print_dims(&b, io->rank, io->dims);
    strbuf_printf(&b, " but the given tensor is %s", kiln_dtype_name(v->dtype));
    print_dims(&b, v->rank, v->dims);
    strbuf_append(&b, " (dimensions differ)");
    kiln_status s = status_error(KILN_INVALID_ARGUMENT, "%s", strbuf_cstr(&b));
    strbuf_free(&b);
    return s;
  }
  size_t need = (size_t)n * esize;
  if (v->byte_size != need)
    return ERR_INVALID("input %s: %s[%lld elements] takes %zu bytes but byte_size is %zu", io->name,
                       kiln_dtype_name(v->dtype), (long long)n, need, v->byte_size);
  if (need && !v->data) return ERR_INVALID("input %s: data is NULL", io->name);
  if (v->dtype == KILN_STRING)
    for (int64_t i = 0; i < n; i++)
      if (!((const char *const *)v->data)[i])
        return ERR_INVALID("input %s: string element %lld is NULL (KILN_STRING elements point to NUL-terminated "
                           "UTF-8)",
                           io->name, (long long)i);
  return check_4bit(io->name, v->dtype, v->data, n);
}

static kiln_status plan_run(const kiln_model *m, int n_inputs, const kiln_value *inputs, int n_outputs,
                            const char *const *names, run_plan *p) {
  memset(p, 0, sizeof *p);
  if (n_inputs < 0 || (n_inputs && !inputs))
    return ERR_INVALID("kiln_model_run: %d inputs at %p", n_inputs, (const void *)inputs);
  if (n_outputs < 0) return ERR_INVALID("kiln_model_run: n_outputs is %d", n_outputs);
  if (!names && n_outputs != m->n_out)
    return listing_error(KILN_INVALID_ARGUMENT, m, false,
                         "kiln_model_run: without output names n_outputs must be the model's output count %d (got %d)",
                         m->n_out, n_outputs);
  p->feed_of = malloc(((size_t)(m->n_in + m->n_opt) + 1) * sizeof *p->feed_of);
  p->sel = malloc(((size_t)n_outputs + 1) * sizeof *p->sel);
  if (!p->feed_of || !p->sel) abort();
  for (int i = 0; i < m->n_in + m->n_opt; i++) p->feed_of[i] = -1;
  bool hlo = m->format == KILN_FORMAT_HLO;
  for (int k = 0; k < n_inputs; k++) {
    const kiln_value *v = &inputs[k];
    if (!v->name) return listing_error(KILN_INVALID_ARGUMENT, m, true, "input %d has no name", k);
    int i = find_io(m->n_in + m->n_opt, m->in, v->name, hlo);
    if (i < 0) return listing_error(KILN_NOT_FOUND, m, true, "unknown input '%s'", v->name);
    if (p->feed_of[i] >= 0)
      return ERR_INVALID("input %s is given twice (inputs %d and %d)", m->in[i].name, p->feed_of[i], k);
    TRY(check_value(m, k, v, &m->in[i]));
    p->feed_of[i] = k;
  }
  strbuf missing;
  strbuf_init(&missing);
  int n_missing = 0;
  for (int i = 0; i < m->n_in; i++) {
    if (p->feed_of[i] >= 0) continue;
    if (n_missing++) strbuf_append(&missing, ", ");
    print_io(&missing, &m->in[i]);
  }
  if (n_missing) {
    kiln_status s = listing_error(KILN_INVALID_ARGUMENT, m, true, "missing input%s: %s", n_missing > 1 ? "s" : "",
                                  strbuf_cstr(&missing));
    strbuf_free(&missing);
    return s;
  }
  strbuf_free(&missing);
  p->n_sel = n_outputs;
  for (int r = 0; r < n_outputs; r++) {
    if (!names) {
      p->sel[r] = r;
      continue;
    }
    if (!names[r]) return ERR_INVALID("output name %d is NULL", r);
    int i = find_io(m->n_out, m->out, names[r], false);
    if (i < 0) return listing_error(KILN_NOT_FOUND, m, false, "unknown output '%s'", names[r]);
    p->sel[r] = i;
  }
  return NULL;
}

/* A KILN_STRING input as a host tensor: the texts are copied (kiln.h). */
static kiln_status strings_to_tensor(const kiln_value *v, graph_tensor **out) {
  TRY(tensor_create(GRAPH_DT_STRING, v->rank, v->dims, out));
  const char *const *ptrs = v->data;
  for (int64_t i = 0; i < (*out)->n; i++) tensor_set_string(*out, i, ptrs[i], strlen(ptrs[i]));
  return NULL;
}

/* An input (checked by plan_run) as an executor value; tensors wrap the caller's
 * memory. */
static kiln_status value_of(const kiln_value *v, executor_value **out) {
  *out = NULL;
  if (kind_of(v) == KILN_KIND_TENSOR) {
    graph_dtype dt;
    api_dtype_to_graph(v->dtype, &dt);
    graph_tensor *t = NULL;
    TRY(v->dtype == KILN_STRING ? strings_to_tensor(v, &t) : tensor_wrap(dt, v->rank, v->dims, v->data, &t));
    *out = executor_value_tensor(t);
    return NULL;
  }
  graph_dtype elem = GRAPH_DT_INVALID;
  if (v->kind == KILN_KIND_SEQUENCE && v->dtype != KILN_DTYPE_INVALID && !api_dtype_to_graph(v->dtype, &elem))
    return ERR_INVALID("a sequence's dtype %d is not a kiln_dtype", (int)v->dtype);
  executor_value_kind kind = v->kind == KILN_KIND_SEQUENCE   ? EXECUTOR_VALUE_SEQUENCE
                             : v->kind == KILN_KIND_OPTIONAL ? EXECUTOR_VALUE_OPTIONAL
                                                             : EXECUTOR_VALUE_MAP;
  executor_value *c = executor_value_container(kind, elem);
  for (int i = 0; i < v->n_items; i++) {
    executor_value *item;
    kiln_status s = value_of(&v->items[i], &item);
    if (s) {
      executor_value_free(c);
      return s;
    }
    executor_value_append(c, item);
  }
  *out = c;
  return NULL;
}

/* Runs a graph model; all[r] receives every graph result. */
static kiln_status run_graph(kiln_model *m, const kiln_value *inputs, const run_plan *p, executor_value **all) {
  int n_all = m->n_in + m->n_opt, n = 0;
  executor_value **feeds = calloc((size_t)n_all + 1, sizeof *feeds);
  const char **names = calloc((size_t)n_all + 1, sizeof *names);
  if (!feeds || !names) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n_all && !s; i++) {
    if (p->feed_of[i] < 0) continue; /* an optional input left out */
    s = status_wrap(value_of(&inputs[p->feed_of[i]], &feeds[n]), "input %s", m->in[i].name);
    names[n++] = m->in[i].feed->name;
  }
  int slot = -1;
  if (!s) s = acquire(m, &slot);
  if (!s) {
    s = executor_run_values(m->pool[slot], n, names, feeds, all);
    release(m, slot);
  }
  for (int i = 0; i < n; i++) executor_value_free(feeds[i]);
  free(feeds);
  free(names);
  return s;
}

/* A copy of v's tree sharing its tensors (an output may be requested twice). */
static executor_value *share_value(const executor_value *v) {
  if (v->kind == EXECUTOR_VALUE_TENSOR) return executor_value_tensor(tensor_ref(v->tensor));
  executor_value *c = executor_value_container(v->kind, v->elem_dtype);
  for (int i = 0; i < v->n; i++) executor_value_append(c, share_value(v->items[i]));
  return c;
}

/* Runs an HLO module; *result is the root literal. */
static kiln_status run_hlo(kiln_model *m, const kiln_value *inputs, const run_plan *p, hlo_literal **result) {
  const hlo_computation *entry = m->module->entry;
  hlo_literal *views = calloc((size_t)entry->n_params + 1, sizeof *views);
  hlo_literal **args = calloc((size_t)entry->n_params + 1, sizeof *args);
  if (!views || !args) abort();
  for (int i = 0; i < entry->n_params; i++) {
    views[i].shape = entry->params[i]->shape;
    args[i] = &views[i];
  }
  for (int i = 0; i < m->n_in; i++) {
    const kiln_value *v = &inputs[p->feed_of[i]];
    hlo_literal *l = &views[m->in[i].index];
    static char empty[1];
    l->data = v->data ? v->data : empty;
    l->n = shape_elements(&l->shape);
  }
  kiln_status s = m->device->execute(m->exe, args, entry->n_params, result);
  if (backend_has_device_memory(m->device)) {
    /* The literal execute of such a device uploads every argument, downloads the result. */
    int64_t up = 0;
    for (int i = 0; i < entry->n_params; i++) up += shape_is_array(&args[i]->shape) ? shape_byte_size(&args[i]->shape) : 0;
    atomic_fetch_add(&m->bytes_to_device, up);
    if (!s) atomic_fetch_add(&m->bytes_to_host, literal_array_bytes(*result));
  }
  free(args);
  free(views);
  return status_wrap(s, "running %s on device %s", m->source, m->device->name);
}

/* The array leaves of an HLO result, depth-first, moved out of the tuple. */
static void take_leaves(hlo_literal *l, hlo_literal **leaves, int *n) {
  if (l->shape.type == HLO_TUPLE) {
    for (int i = 0; i < l->shape.n_elems; i++) {
      take_leaves(l->tuple[i], leaves, n);
      l->tuple[i] = NULL;
    }
    literal_free(l);
    return;
  }
  if (l->shape.type == HLO_TOKEN) {
    literal_free(l);
    return;
  }
  leaves[(*n)++] = l;
}

/* Runs and converts the requested outputs into tensors[0..p->n_sel). */
static kiln_status run_to_tensors(kiln_model *m, const kiln_run_options *ro, const kiln_value *inputs,
                                  const run_plan *p, kiln_tensor **tensors) {
  if (ro && ro->struct_size < sizeof(kiln_run_options))
    return ERR_INVALID("kiln_run_options: struct_size is %zu, expected at least %zu (use KILN_RUN_OPTIONS_INIT)",
                       ro->struct_size, sizeof(kiln_run_options));
  int threads = ro && ro->threads > 0 ? ro->threads : m->opts->threads;
  int prev_threads = cpu_backend_threads();
  if (threads > 0) cpu_backend_set_threads(threads);
  api_log_scope scope;
  api_log_begin(m->opts, &scope);
  kiln_status s;
  int n_all = m->n_out;
  if (m->format == KILN_FORMAT_HLO) {
    hlo_literal *result = NULL;
    s = run_hlo(m, inputs, p, &result);
    hlo_literal **leaves = calloc((size_t)n_all + 1, sizeof *leaves);
    if (!leaves) abort();
    int n = 0;
    if (!s) take_leaves(result, leaves, &n);
    if (!s && n != n_all) s = ERR_INTERNAL("the result has %d array leaves, the module declares %d", n, n_all);
    /* An output requested twice gets a copy the second time. */
    for (int r = 0; r < p->n_sel && !s; r++) {
      hlo_literal *l = leaves[p->sel[r]];
      if (!l) {
        for (int q = 0; q < r; q++)
          if (p->sel[q] == p->sel[r]) {
            kiln_tensor *t = tensors[q];
            s = kiln_tensor_create(kiln_tensor_dtype(t), kiln_tensor_rank(t), kiln_tensor_dims(t), &tensors[r]);
            if (!s) memcpy(kiln_tensor_data(tensors[r]), kiln_tensor_data(t), kiln_tensor_byte_size(t));
            break;
          }
        continue;
      }
      leaves[p->sel[r]] = NULL;
      s = api_tensor_from_literal(l, &tensors[r]);
    }
    for (int i = 0; i < n; i++) literal_free(leaves[i]);
    free(leaves);
  } else {
    executor_value **all = calloc((size_t)n_all + 1, sizeof *all);
    if (!all) abort();
    s = run_graph(m, inputs, p, all);
    for (int r = 0; r < p->n_sel && !s; r++)
      s = api_tensor_from_value(share_value(all[p->sel[r]]), m->out[p->sel[r]].name, &tensors[r]);
    for (int i = 0; i < n_all; i++) executor_value_free(all[i]);
    free(all);
  }
  api_log_end(&scope);
  if (threads > 0) cpu_backend_set_threads(prev_threads);
  if (s) {
    for (int r = 0; r < p->n_sel; r++) {
      kiln_tensor_free(tensors[r]);
      tensors[r] = NULL;
    }
    return s;
  }
  atomic_fetch_add(&m->runs, 1);
  return NULL;
}

kiln_status kiln_model_run(kiln_model *m, const kiln_run_options *ro, int n_inputs, const kiln_value *inputs,
                           int n_outputs, const char *const *output_names, kiln_tensor **outputs) {
  if (!m) return ERR_INVALID("kiln_model_run: model handle is NULL");
  if (n_outputs > 0 && !outputs) return ERR_INVALID("kiln_model_run: outputs is NULL");
  for (int r = 0; r < n_outputs; r++) outputs[r] = NULL;
  run_plan p;
  kiln_status s = plan_run(m, n_inputs, inputs, n_outputs, output_names, &p);
  if (!s) s = run_to_tensors(m, ro, inputs, &p, outputs);
  plan_free(&p);
  return s;
}

kiln_status kiln_model_run_into(kiln_model *m, const kiln_run_options *ro, int n_inputs, const kiln_value *inputs,
                                int n_outputs, kiln_value *outputs) {
  if (!m) return ERR_INVALID("kiln_model_run_into: model handle is NULL");
  if (n_outputs > 0 && !outputs) return ERR_INVALID("kiln_model_run_into: outputs is NULL");
  const char **names = calloc((size_t)n_outputs + 1, sizeof *names);
  kiln_tensor **tensors = calloc((size_t)n_outputs + 1, sizeof *tensors);
  if (!names || !tensors) abort();
  bool named = n_outputs > 0 && outputs[0].struct_size >= KILN_VALUE_V1_SIZE && outputs[0].name;
  kiln_status s = NULL;
  for (int r = 0; r < n_outputs && !s; r++) {
    if (outputs[r].struct_size < KILN_VALUE_V1_SIZE)
      s = ERR_INVALID("output %d: struct_size is %zu, expected at least %zu (use KILN_VALUE_INIT)", r,
                      outputs[r].struct_size, sizeof(kiln_value));
    else if (named != (outputs[r].name != NULL))
      s = ERR_INVALID("kiln_model_run_into: name every output or none (output %d)", r);
    names[r] = outputs[r].name;
  }
  run_plan p = {0};
  if (!s) s = plan_run(m, n_inputs, inputs, n_outputs, named ? names : NULL, &p);
  if (!s) s = run_to_tensors(m, ro, inputs, &p, tensors);
  /* Every buffer is checked before any is written. */
  for (int r = 0; r < n_outputs && !s; r++) {
    const kiln_tensor *t = tensors[r];
    kiln_value *v = &outputs[r];
    const char *name = m->out[p.sel[r]].name;
    int rank = kiln_tensor_rank(t);
    const int64_t *dims = kiln_tensor_dims(t);
    kiln_dtype dtype = kiln_tensor_dtype(t);
    bool dims_ok = !v->dims || v->rank == rank;
    for (int k = 0; dims_ok && v->dims && k < rank; k++) dims_ok = v->dims[k] == dims[k];
    if (kiln_tensor_kind(t) != KILN_KIND_TENSOR)
      s = ERR_UNIMPLEMENTED("output %s is a %s, which kiln_model_run_into cannot write into caller memory; use "
                            "kiln_model_run",
                            name, kiln_kind_name(kiln_tensor_kind(t)));
    else if (dtype == KILN_STRING) /* pointers into a tensor about to be freed would dangle */
      s = ERR_UNIMPLEMENTED("output %s holds strings, which kiln_model_run_into cannot write into caller memory; use "
                            "kiln_model_run",
                            name);
    else if (v->dtype != KILN_DTYPE_INVALID && v->dtype != dtype)
      s = ERR_INVALID("output %s is %s but the buffer was declared %s", name, kiln_dtype_name(dtype),
                      kiln_dtype_name(v->dtype));
    else if (!dims_ok) {
      strbuf b;
      strbuf_init(&b);
      strbuf_printf(&b, "output %s is %s", name, kiln_dtype_name(dtype));
      print_dims(&b, rank, dims);
      strbuf_append(&b, " but the buffer was declared ");
      print_dims(&b, v->rank, v->dims);
      s = ERR_INVALID("%s", strbuf_cstr(&b));
      strbuf_free(&b);
    } else if (v->byte_size < kiln_tensor_byte_size(t))
      s = ERR_INVALID("output %s needs %zu bytes; the buffer has %zu", name, kiln_tensor_byte_size(t), v->byte_size);
    else if (kiln_tensor_byte_size(t) && !v->data)
      s = ERR_INVALID("output %s: data is NULL", name);
  }
  for (int r = 0; r < n_outputs && !s; r++) {
    size_t bytes = kiln_tensor_byte_size(tensors[r]);
    if (bytes) memcpy(outputs[r].data, kiln_tensor_data(tensors[r]), bytes);
    outputs[r].byte_size = bytes;
  }
  for (int r = 0; r < n_outputs; r++) kiln_tensor_free(tensors[r]);
  free(tensors);
  free(names);
  plan_free(&p);
  return s;
}

kiln_status kiln_model_get_stats(const kiln_model *m, kiln_model_stats *out) {
  if (!m) return ERR_INVALID("kiln_model_get_stats: model handle is NULL");
  if (!out || out->struct_size < offsetof(kiln_model_stats, evaluated_instructions))
    return ERR_INVALID("kiln_model_get_stats: out is NULL or its struct_size is too small (use KILN_MODEL_STATS_INIT)");
  /* Callers built before a field was added pass a smaller struct_size: fill what they have. */
  kiln_model_stats full;
  kiln_model_stats *caller = out;
  size_t size = caller->struct_size < sizeof full ? caller->struct_size : sizeof full;
  out = &full;
  memset(out, 0, sizeof *out);
  out->struct_size = caller->struct_size;
  out->runs = atomic_load(&((kiln_model *)m)->runs);
  out->jit = m->opts->jit == JIT_OFF ? "off" : "auto";
  out->device = m->format == KILN_FORMAT_HLO ? m->device->name : executor_device_name(m->pool[0]);
  if (m->format == KILN_FORMAT_HLO) {
    out->evaluated_instructions = backend_evaluated_instructions(m->device, m->exe);
    out->bytes_to_device = backend_resident_bytes(m->device, m->exe) + atomic_load(&((kiln_model *)m)->bytes_to_device);
    out->bytes_to_host = atomic_load(&((kiln_model *)m)->bytes_to_host);
    memcpy(caller, out, size);
    return NULL;
  }
  out->nodes = m->g->n_nodes;
  out->clusters = m->n_clusters;
  pthread_mutex_lock((pthread_mutex_t *)&m->lock);
  for (int i = 0; i < m->n_pool; i++) {
    const executor_stats *st = executor_get_stats(m->pool[i]);
    out->cluster_runs += st->cluster_runs;
    out->cluster_compiles += st->cluster_compiles;
    out->cluster_cache_hits += st->cluster_cache_hits;
    out->cluster_fallback_runs += st->cluster_fallback_runs;
    out->cluster_compile_ms += st->cluster_compile_ms;
    out->op_compiles += st->compiles;
    out->op_cache_hits += st->cache_hits;
    out->evaluated_instructions += st->evaluated_instructions;
    out->bytes_to_device += st->bytes_to_device;
    out->bytes_to_host += st->bytes_to_host;
  }
  pthread_mutex_unlock((pthread_mutex_t *)&m->lock);
  memcpy(caller, out, size);
  return NULL;
}

kiln_status kiln_model_report(const kiln_model *m, kiln_report_kind kind, char **text) {
  if (!m || !text) return ERR_INVALID("kiln_model_report: model handle or text is NULL");
  *text = NULL;
  if (kind != KILN_REPORT_CLUSTERS && kind != KILN_REPORT_DOT)
    return ERR_INVALID("kiln_model_report: kind %d is not a kiln_report_kind", (int)kind);
  if (m->format == KILN_FORMAT_HLO)
    return ERR_UNIMPLEMENTED("kiln_model_report: %s is an HLO module; only graph models go through the bridge", m->source);
  if (!m->report || !m->original)
    return ERR_INVALID("kiln_model_report: %s was loaded without the option report=true", m->source);
  strbuf b;
  strbuf_init(&b);
  if (kind == KILN_REPORT_CLUSTERS) jit_report_print(&b, m->report);
  else jit_report_dot(&b, m->report, m->original);
  *text = strbuf_take(&b);
  return NULL;
}

void kiln_free(void *p) { free(p); }
