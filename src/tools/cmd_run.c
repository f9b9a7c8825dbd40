/* `kiln run FILE`: run an HLO module or a framework model on .npy inputs.
 *
 * HLO text (FILE.hlo, or anything that is not a model): parse, verify, compile for
 * --device, bind .npy inputs to the entry parameters, execute --iters times and write
 * the outputs as .npy. Inputs bind by name: `pN` is parameter number N, and a parameter
 * instruction's own name also works (an exact name match wins over the pN reading, so a
 * parameter literally called "p1" is found by its name). Every input is checked against
 * its parameter before anything runs, and all missing inputs are reported at once
 * together with the list of what the module needs, so one failed attempt tells the user
 * the whole signature. Tuple-shaped entry parameters are not supported (an error says
 * so); token parameters need no input. bf16 parameters take float32 .npy files (rounded
 * to nearest even), and bf16 outputs are written as float32 (see hlo/npy.h). Outputs are
 * the root's leaves, depth-first: a non-tuple root is output_0.npy; token leaves are
 * skipped.
 *
 * Models (.onnx, a GraphDef .pb, a TF.js model.json; see import/import.h): import, then
 * run with the host executor (exec/executor.h) op by op -- the only mode until the
 * bridge lands, so --jit auto means --jit off for now. -i NAME=PATH.npy feeds the graph
 * input NAME (an ONNX input name or a TF Placeholder's node name); outputs go to
 * OUTDIR/NAME.npy, NAME being the graph result's name with a trailing ":0" dropped and
 * every character outside [A-Za-z0-9_.-] replaced by '_'. --json adds the node count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "exec/executor.h"
#include "hlo/npy.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "import/import.h"
#include "jit/jit.h"
#include "tools/tool.h"

typedef struct run_ctx {
  hlo_module *module;
  const backend *device;
  backend_executable *exe;
  int n_params;
  hlo_literal **args; /* one per entry parameter, owned */
  double *times_ms;
  hlo_literal *result;
} run_ctx;

static void run_ctx_free(run_ctx *r) {
  if (r->args)
    for (int i = 0; i < r->n_params; i++) literal_free(r->args[i]);
  free(r->args);
  free(r->times_ms);
  literal_free(r->result);
  if (r->exe) r->device->destroy(r->exe);
  hlo_module_free(r->module);
}

static void describe_param(strbuf *b, const hlo_instr *p) {
  char *s = shape_to_string(&p->shape);
  strbuf_printf(b, "p%lld (%s: %s)", (long long)p->parameter_number, p->name, s);
  free(s);
}

/* The list of required inputs, for "missing input" and "unknown input" messages. */
static void list_required(strbuf *b, const hlo_computation *entry) {
  strbuf_append(b, "; the module takes");
  int listed = 0;
  for (int i = 0; i < entry->n_params; i++) {
    const hlo_instr *p = entry->params[i];
    if (p->shape.type == HLO_TOKEN) continue;
    strbuf_append(b, listed++ ? ", " : " ");
    strbuf_append(b, "-i ");
    describe_param(b, p);
  }
  if (!listed) strbuf_append(b, " no inputs");
}

static kiln_status error_with_inputs(const hlo_computation *entry, strbuf *msg) {
  list_required(msg, entry);
  kiln_status s = ERR_INVALID("%s", strbuf_cstr(msg));
  strbuf_free(msg);
  return s;
}

static const hlo_instr *find_param(const hlo_computation *entry, const char *name, size_t len) {
  for (int i = 0; i < entry->n_params; i++) {
    const hlo_instr *p = entry->params[i];
    if (strlen(p->name) == len && strncmp(p->name, name, len) == 0) return p;
  }
  if (len >= 2 && name[0] == 'p') {
    long long n = 0;
    for (size_t k = 1; k < len; k++) {
      if (name[k] < '0' || name[k] > '9' || n > 1000000000) return NULL;
      n = n * 10 + (name[k] - '0');
    }
    if (len > 2 && name[1] == '0') return NULL; /* "p01" is not a parameter number */
    if (n < entry->n_params) return entry->params[n];
  }
  return NULL;
}

/* Checks a loaded input against its parameter; may replace *lit (bf16 narrowing). */
static kiln_status match_input(const hlo_instr *p, const char *path, hlo_literal **lit) {
  hlo_literal *l = *lit;
  if (p->shape.type == HLO_BF16 && l->shape.type == HLO_F32 && shape_same_dims(&p->shape, &l->shape)) {
    hlo_literal *narrowed;
    TRY(npy_convert_f32_to_bf16(l, &narrowed));
    literal_free(l);
    *lit = narrowed;
    return NULL;
  }
  if (p->shape.type == l->shape.type && shape_same_dims(&p->shape, &l->shape)) return NULL;
  char *want = shape_to_string(&p->shape);
  char *got = shape_to_string(&l->shape);
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "input p%lld (%s): the parameter is %s but %s holds %s", (long long)p->parameter_number, p->name,
                want, path, got);
  if (p->shape.type != l->shape.type) strbuf_append(&b, " (element types differ)");
  else strbuf_append(&b, " (dimensions differ)");
  if (p->shape.type == HLO_BF16) strbuf_append(&b, "; bf16 parameters take float32 .npy files");
  free(want);
  free(got);
  kiln_status s = ERR_INVALID("%s", strbuf_cstr(&b));
  strbuf_free(&b);
  return s;
}

/* Reads and binds every -i; reports usage problems (no '=') through *usage. */
static kiln_status bind_inputs(run_ctx *r, bool *usage) {
  const hlo_computation *entry = r->module->entry;
  r->n_params = entry->n_params;
  r->args = calloc((size_t)r->n_params + 1, sizeof *r->args);
  if (!r->args) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < entry->n_params; i++) {
    const hlo_instr *p = entry->params[i];
    if (shape_is_tuple(&p->shape)) {
      char *s = shape_to_string(&p->shape);
      kiln_status st = ERR_UNIMPLEMENTED("entry parameter p%d (%s) has tuple shape %s; kiln run takes array "
                                         "parameters only (flatten the tuple into separate parameters)",
                                         i, p->name, s);
      free(s);
      return st;
    }
    if (p->shape.type == HLO_TOKEN) TRY(literal_create(&p->shape, &r->args[i]));
  }
  const flag_list *inputs = &kiln_flags.input;
  for (int k = 0; k < inputs->n; k++) {
    const char *spec = inputs->v[k];
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
      *usage = true;
      return ERR_INVALID("-i expects NAME=PATH.npy, got '%s'", spec);
    }
    const hlo_instr *p = find_param(entry, spec, (size_t)(eq - spec));
    if (!p || p->shape.type == HLO_TOKEN) {
      strbuf b;
      strbuf_init(&b);
      strbuf_printf(&b, "unknown input '%.*s' (in -i %s)", (int)(eq - spec), spec, spec);
      return error_with_inputs(entry, &b);
    }
    if (r->args[p->parameter_number]) {
      kiln_status st = ERR_INVALID("input p%lld (%s) is given twice (second: -i %s)", (long long)p->parameter_number,
                                   p->name, spec);
      return st;
    }
    hlo_literal *l;
    TRY(npy_read_file(eq + 1, &l));
    kiln_status st = match_input(p, eq + 1, &l);
    if (st) {
      literal_free(l);
      return st;
    }
    r->args[p->parameter_number] = l;
  }
  strbuf missing;
  strbuf_init(&missing);
  int n_missing = 0;
  for (int i = 0; i < entry->n_params; i++) {
    if (r->args[i]) continue;
    strbuf_append(&missing, n_missing++ ? ", " : "");
    describe_param(&missing, entry->params[i]);
  }
  if (!n_missing) {
    strbuf_free(&missing);
    return NULL;
  }
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "missing input%s: %s", n_missing > 1 ? "s" : "", strbuf_cstr(&missing));
  strbuf_free(&missing);
  return error_with_inputs(entry, &b);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  double *s = malloc((size_t)n * sizeof *s);
  if (!s) abort();
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  free(s);
  return m;
}

static kiln_status write_leaves(const hlo_literal *l, const char *dir, int *index, strbuf *report) {
  if (l->shape.type == HLO_TUPLE) {
    for (int i = 0; i < l->shape.n_elems; i++) TRY(write_leaves(l->tuple[i], dir, index, report));
    return NULL;
  }
  if (l->shape.type == HLO_TOKEN) return NULL;
  size_t n = strlen(dir) + 32;
  char *path = malloc(n);
  if (!path) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  snprintf(path, n, "%s/output_%d.npy", dir, (*index)++);
  kiln_status s = npy_write_file(path, l);
  if (!s) {
    char *shape = shape_to_string(&l->shape);
    strbuf_printf(report, "%s: %s%s\n", path, shape, l->shape.type == HLO_BF16 ? " (written as f32)" : "");
    free(shape);
  }
  free(path);
  return s;
}

static void json_string(strbuf *b, const char *s) {
  strbuf_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') strbuf_printf(b, "\\%c", c);
    else if (c < 0x20) strbuf_printf(b, "\\u%04x", c);
    else strbuf_putc(b, (char)c);
  }
  strbuf_putc(b, '"');
}

static int run_model(const char *path, const backend *device);

/* A device that answers UNIMPLEMENTED cannot compile this module (an op outside a
 * plugin's subset, say); the module then runs on the host evaluator, with a warning,
 * as DESIGN.md's placement rule asks. Any other compile error is a real failure. */
static kiln_status compile_with_host_fallback(run_ctx *r) {
  kiln_status s = r->device->compile(r->device, r->module, &r->exe);
  const backend *host = &interpreter_backend;
  if (s && kiln_status_code(s) == KILN_UNIMPLEMENTED && r->device != host) {
    log_warning("device %s cannot compile this module (%s); running it on %s instead", r->device->name,
                kiln_status_message(s), host->name);
    kiln_status_free(s);
    r->device = host;
    s = host->compile(host, r->module, &r->exe);
  }
  return status_wrap(s, "compiling for device %s", r->device->name);
}

int cmd_run(int argc, char **argv) {
  if (argc < 1)
    return tool_usage_error("kiln run needs an HLO file or a model: kiln run FILE.hlo|MODEL.onnx|MODEL.pb|model.json "
                            "[-i NAME=PATH.npy]...");
  if (argc > 1) return tool_usage_error("kiln run takes one HLO file or model (unexpected '%s'; inputs go in -i NAME=PATH)", argv[1]);
  if (kiln_flags.iters < 1) return tool_usage_error("--iters must be at least 1 (got %lld)", (long long)kiln_flags.iters);
  if (kiln_flags.iters > 1000000) return tool_usage_error("--iters is at most 1000000 (got %lld)", (long long)kiln_flags.iters);

  run_ctx r;
  memset(&r, 0, sizeof r);
  /* No --device: an HLO module runs on the default device; a model's nodes and
   * clusters each go to the highest-priority device that supports them (the placer). */
  r.device = kiln_flags.device[0] ? backend_find(kiln_flags.device) : backend_default();
  if (!r.device) {
    strbuf b;
    strbuf_init(&b);
    for (int i = 0; i < backend_count(); i++) strbuf_printf(&b, "%s%s", i ? ", " : "", backend_at(i)->name);
    int rc = tool_usage_error("unknown device '%s' (available devices: %s)", kiln_flags.device, strbuf_cstr(&b));
    strbuf_free(&b);
    return rc;
  }
  if (import_detect_format(argv[0]) != IMPORT_FORMAT_UNKNOWN) return run_model(argv[0], r.device);

  kiln_status s = hlo_parse_file(argv[0], &r.module);
  if (!s) s = hlo_verify_module(r.module);
  if (!s && !r.module->entry) s = ERR_INVALID("%s: the module has no entry computation", argv[0]);
  bool usage = false;
  if (!s) s = bind_inputs(&r, &usage);
  if (!s) s = compile_with_host_fallback(&r);
  int iters = (int)kiln_flags.iters;
  if (!s) {
    r.times_ms = calloc((size_t)iters, sizeof *r.times_ms);
    if (!r.times_ms) s = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int i = 0; !s && i < iters; i++) {
    hlo_literal *out = NULL;
    double t0 = now_ms();
    s = r.device->execute(r.exe, r.args, r.n_params, &out);
    r.times_ms[i] = now_ms() - t0;
    literal_free(r.result);
    r.result = out;
    if (s) s = status_wrap(s, "running on device %s", r.device->name);
  }
  strbuf report;
  strbuf_init(&report);
  if (!s) s = tool_make_dirs(kiln_flags.output_dir);
  int n_outputs = 0;
  if (!s) s = write_leaves(r.result, kiln_flags.output_dir, &n_outputs, &report);
  if (s) {
    strbuf_free(&report);
    run_ctx_free(&r);
    if (usage) {
      int rc = tool_usage_error("%s", kiln_status_message(s));
      kiln_status_free(s);
      return rc;
    }
    return tool_fail(s);
  }

  double first = r.times_ms[0], med = median(r.times_ms, iters);
  if (kiln_flags.json) {
    strbuf j;
    strbuf_init(&j);
    strbuf_append(&j, "{\"device\":");
    json_string(&j, r.device->name);
    strbuf_printf(&j, ",\"first_ms\":%.6f,\"median_ms\":%.6f,\"iters\":%d}\n", first, med, iters);
    fputs(strbuf_cstr(&j), stdout);
    strbuf_free(&j);
  } else {
    fputs(strbuf_cstr(&report), stdout);
    printf("%s: %d iteration%s, first %.3f ms, median %.3f ms\n", r.device->name, iters, iters == 1 ? "" : "s", first,
           med);
  }
  log_info("wrote %d output%s to %s", n_outputs, n_outputs == 1 ? "" : "s", kiln_flags.output_dir);
  strbuf_free(&report);
  run_ctx_free(&r);
  return TOOL_OK;
}

/* ================================================================== models ====== */

typedef struct model_run {
  graph *g;
  executor *ex;
  int n_in;
  const char **names;    /* graph input names, borrowed from the graph */
  graph_tensor **inputs; /* owned */
  graph_tensor **outputs; /* g->n_results, owned */
  double *times_ms;
} model_run;

static void model_run_free(model_run *m) {
  if (m->inputs)
    for (int i = 0; i < m->n_in; i++) tensor_free(m->inputs[i]);
  free(m->inputs);
  free(m->names);
  if (m->outputs && m->g)
    for (int r = 0; r < m->g->n_results; r++) tensor_free(m->outputs[r]);
  free(m->outputs);
  free(m->times_ms);
  executor_free(m->ex);
  graph_free(m->g);
}

static void print_signature(strbuf *b, const graph_node *n) {
  graph_dtype dt;
  graph_shape s;
  executor_feed_signature(n, &dt, &s);
  strbuf_append(b, graph_dtype_name(dt));
  if (s.rank == GRAPH_UNKNOWN) return;
  strbuf_putc(b, '[');
  for (int i = 0; i < s.rank; i++) {
    if (i) strbuf_putc(b, ',');
    if (s.dims[i] == GRAPH_UNKNOWN) strbuf_putc(b, '?');
    else strbuf_printf(b, "%lld", (long long)s.dims[i]);
  }
  strbuf_putc(b, ']');
}

static void list_model_inputs(strbuf *b, const executor *ex) {
  int n = executor_num_feeds(ex);
  if (!n) {
    strbuf_append(b, "; the model takes no inputs");
    return;
  }
  strbuf_append(b, "; the model takes");
  for (int i = 0; i < n; i++) {
    const graph_node *f = executor_feed(ex, i);
    strbuf_printf(b, "%s-i %s (", i ? ", " : " ", f->name);
    print_signature(b, f);
    strbuf_putc(b, ')');
  }
}

/* A graph input or fed Placeholder by name; "NAME:0" (TF's tensor name) also works. */
static const graph_node *find_model_input(const model_run *m, const char *name, size_t len) {
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      if (len < 3 || strncmp(name + len - 2, ":0", 2) != 0) break;
      len -= 2;
    }
    for (int i = 0; i < m->g->n_inputs; i++) {
      const graph_node *n = m->g->inputs[i];
      if (strlen(n->name) == len && strncmp(n->name, name, len) == 0) return n;
    }
    for (int i = 0; i < executor_num_feeds(m->ex); i++) {
      const graph_node *n = executor_feed(m->ex, i);
      if (strlen(n->name) == len && strncmp(n->name, name, len) == 0) return n;
    }
  }
  return NULL;
}

static bool signature_accepts(const graph_node *n, const graph_tensor *t) {
  graph_dtype dt;
  graph_shape s;
  executor_feed_signature(n, &dt, &s);
  if (dt != GRAPH_DT_INVALID && dt != t->dtype) return false;
  if (s.rank == GRAPH_UNKNOWN) return true;
  if (s.rank != t->rank) return false;
  for (int i = 0; i < s.rank; i++)
    if (s.dims[i] != GRAPH_UNKNOWN && s.dims[i] != t->dims[i]) return false;
  return true;
}

static kiln_status load_model_input(const graph_node *n, const char *path, graph_tensor **out) {
  hlo_literal *l;
  TRY(npy_read_file(path, &l));
  graph_dtype dt;
  graph_shape s;
  executor_feed_signature(n, &dt, &s);
  if (dt == GRAPH_DT_BFLOAT16 && l->shape.type == HLO_F32) {
    hlo_literal *narrowed;
    kiln_status st = npy_convert_f32_to_bf16(l, &narrowed);
    literal_free(l);
    TRY(st);
    l = narrowed;
  }
  kiln_status st = tensor_adopt_literal(l, out);
  if (st) {
    literal_free(l);
    return status_wrap(st, "%s", path);
  }
  if (signature_accepts(n, *out)) return NULL;
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "input %s: the model takes ", n->name);
  print_signature(&b, n);
  strbuf_printf(&b, " but %s holds %s[", path, graph_dtype_name((*out)->dtype));
  for (int i = 0; i < (*out)->rank; i++) strbuf_printf(&b, "%s%lld", i ? "," : "", (long long)(*out)->dims[i]);
  strbuf_printf(&b, "] (%s)", dt != GRAPH_DT_INVALID && dt != (*out)->dtype ? "element types differ" : "dimensions differ");
  if (dt == GRAPH_DT_BFLOAT16) strbuf_append(&b, "; bfloat16 inputs take float32 .npy files");
  st = ERR_INVALID("%s", strbuf_cstr(&b));
  strbuf_free(&b);
  tensor_free(*out);
  *out = NULL;
  return st;
}

static kiln_status bind_model_inputs(model_run *m, bool *usage) {
  const flag_list *inputs = &kiln_flags.input;
  m->names = calloc((size_t)inputs->n + 1, sizeof *m->names);
  m->inputs = calloc((size_t)inputs->n + 1, sizeof *m->inputs);
  if (!m->names || !m->inputs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < inputs->n; k++) {
    const char *spec = inputs->v[k];
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
      *usage = true;
      return ERR_INVALID("-i expects NAME=PATH.npy, got '%s'", spec);
    }
    const graph_node *n = find_model_input(m, spec, (size_t)(eq - spec));
    if (!n) {
      strbuf b;
      strbuf_init(&b);
      strbuf_printf(&b, "unknown input '%.*s' (in -i %s)", (int)(eq - spec), spec, spec);
      list_model_inputs(&b, m->ex);
      kiln_status s = ERR_INVALID("%s", strbuf_cstr(&b));
      strbuf_free(&b);
      return s;
    }
    for (int j = 0; j < m->n_in; j++)
      if (m->names[j] == n->name) return ERR_INVALID("input %s is given twice (second: -i %s)", n->name, spec);
    TRY(load_model_input(n, eq + 1, &m->inputs[m->n_in]));
    m->names[m->n_in++] = n->name;
  }
  strbuf missing;
  strbuf_init(&missing);
  int n_missing = 0;
  for (int i = 0; i < executor_num_feeds(m->ex); i++) {
    const graph_node *f = executor_feed(m->ex, i);
    bool given = false;
    for (int j = 0; j < m->n_in && !given; j++) given = m->names[j] == f->name;
    if (given) continue;
    strbuf_printf(&missing, "%s%s (", n_missing++ ? ", " : "", f->name);
    print_signature(&missing, f);
    strbuf_putc(&missing, ')');
  }
  if (!n_missing) {
    strbuf_free(&missing);
    return NULL;
  }
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "missing input%s: %s", n_missing > 1 ? "s" : "", strbuf_cstr(&missing));
  list_model_inputs(&b, m->ex);
  kiln_status s = ERR_INVALID("%s", strbuf_cstr(&b));
  strbuf_free(&b);
  strbuf_free(&missing);
  return s;
}

/* OUTDIR/NAME.npy for a graph result: TF's ":0" dropped, unsafe characters made '_'. */
static char *output_file_name(const graph *g, const char *name) {
  size_t len = strlen(name);
  bool tf = g->framework && strcmp(g->framework, "tf") == 0;
  if (tf && len > 2 && strcmp(name + len - 2, ":0") == 0) len -= 2;
  char *s = malloc(len + 1);
  if (!s) abort();
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    s[i] = ok ? c : '_';
  }
  s[len] = 0;
  if (len == 0 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
    free(s);
    s = malloc(16);
    if (!s) abort();
    snprintf(s, 16, "output");
  }
  return s;
}

static kiln_status write_model_outputs(const model_run *m, const char *dir, strbuf *report) {
  const graph *g = m->g;
  char **used = calloc((size_t)g->n_results + 1, sizeof *used);
  if (!used) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status s = NULL;
  for (int r = 0; r < g->n_results && !s; r++) {
    char *base = output_file_name(g, g->results[r].name);
    /* Distinct results whose names sanitise alike get _1, _2, ... */
    char *name = base;
    for (int k = 1;; k++) {
      bool clash = false;
      for (int j = 0; j < r && !clash; j++) clash = strcmp(used[j], name) == 0;
      if (!clash) break;
      if (name != base) free(name);
      size_t n = strlen(base) + 24;
      name = malloc(n);
      if (!name) abort();
      snprintf(name, n, "%s_%d", base, k);
    }
    if (name != base) free(base);
    used[r] = name;
    const graph_tensor *t = m->outputs[r];
    hlo_literal view;
    if (!tensor_literal_view(t, &view)) {
      s = status_error(KILN_UNIMPLEMENTED, "output %s has dtype %s; .npy outputs hold numbers and bools only",
                       g->results[r].name, graph_dtype_name(t->dtype));
      break;
    }
    size_t n = strlen(dir) + strlen(name) + 8;
    char *path = malloc(n);
    if (!path) abort();
    snprintf(path, n, "%s/%s.npy", dir, name);
    s = npy_write_file(path, &view);
    if (!s) {
      char *shape = shape_to_string(&view.shape);
      strbuf_printf(report, "%s: %s%s\n", path, shape, view.shape.type == HLO_BF16 ? " (written as f32)" : "");
      free(shape);
    }
    free(path);
  }
  for (int r = 0; r < g->n_results; r++) free(used[r]);
  free(used);
  return s;
}

static int run_model(const char *path, const backend *device) {
  if (strcmp(kiln_flags.jit, "off") != 0 && strcmp(kiln_flags.jit, "auto") != 0)
    return tool_usage_error("--jit is off or auto (got '%s')", kiln_flags.jit);
  model_run m;
  memset(&m, 0, sizeof m);
  bool usage = false;
  int iters = (int)kiln_flags.iters;
  kiln_status s = import_model_file(path, &m.g);
  if (!s && kiln_flags.dump_to[0]) s = tool_make_dirs(kiln_flags.dump_to);
  int n_clusters = 0;
  if (!s) {
    /* The bridge: placement always (--log_placement works with --jit off too),
     * clustering with --jit auto. */
    jit_options jo = jit_options_from_flags();
    jit_report *jr = NULL;
    s = jit_run(m.g, &jo, &jr);
    if (s) s = status_wrap(s, "%s", path);
    if (jr) n_clusters = jr->n_clusters;
    jit_report_free(jr);
  }
  if (!s) {
    executor_options opts = {.device = device->name, .dump_dir = kiln_flags.dump_to};
    s = executor_new(m.g, &opts, &m.ex);
    if (s) s = status_wrap(s, "%s", path);
  }
  if (!s) s = bind_model_inputs(&m, &usage);
  if (!s) {
    m.outputs = calloc((size_t)m.g->n_results + 1, sizeof *m.outputs);
    m.times_ms = calloc((size_t)iters, sizeof *m.times_ms);
    if (!m.outputs || !m.times_ms) s = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  graph_tensor **fresh = NULL;
  if (!s) {
    fresh = calloc((size_t)m.g->n_results + 1, sizeof *fresh);
    if (!fresh) s = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int i = 0; !s && i < iters; i++) {
    double t0 = now_ms();
    s = executor_run(m.ex, m.n_in, m.names, m.inputs, fresh);
    m.times_ms[i] = now_ms() - t0;
    if (s) break;
    for (int r = 0; r < m.g->n_results; r++) {
      tensor_free(m.outputs[r]);
      m.outputs[r] = fresh[r];
      fresh[r] = NULL;
    }
  }
  free(fresh);
  strbuf report;
  strbuf_init(&report);
  if (!s) s = tool_make_dirs(kiln_flags.output_dir);
  if (!s) s = write_model_outputs(&m, kiln_flags.output_dir, &report);
  if (s) {
    strbuf_free(&report);
    model_run_free(&m);
    if (usage) {
      int rc = tool_usage_error("%s", kiln_status_message(s));
      kiln_status_free(s);
      return rc;
    }
    return tool_fail(s);
  }
  const executor_stats *st = executor_get_stats(m.ex);
  log_info("executor: %lld modules compiled, %lld cache hits, %lld lowered op runs, %lld host kernel runs, %lld "
           "executor-interpreted nodes, %lld dead nodes",
           (long long)st->compiles, (long long)st->cache_hits, (long long)st->lowered_runs, (long long)st->host_runs,
           (long long)st->native_runs, (long long)st->dead_nodes);
  double first = m.times_ms[0], med = median(m.times_ms, iters);
  if (kiln_flags.json) {
    strbuf j;
    strbuf_init(&j);
    strbuf_append(&j, "{\"device\":");
    json_string(&j, device->name);
    strbuf_printf(&j, ",\"first_ms\":%.6f,\"median_ms\":%.6f,\"iters\":%d,\"nodes\":%d", first, med, iters,
                  m.g->n_nodes);
    strbuf_printf(&j, ",\"jit\":\"%s\",\"clusters\":%d,\"cluster_runs\":%lld,\"cluster_compiles\":%lld,"
                      "\"cluster_cache_hits\":%lld,\"cluster_fallback_runs\":%lld,\"cluster_compile_ms\":%.3f,"
                      "\"op_compiles\":%lld,\"op_cache_hits\":%lld}\n",
                  kiln_flags.jit, n_clusters, (long long)st->cluster_runs, (long long)st->cluster_compiles,
                  (long long)st->cluster_cache_hits, (long long)st->cluster_fallback_runs, st->cluster_compile_ms,
                  (long long)st->compiles, (long long)st->cache_hits);
    fputs(strbuf_cstr(&j), stdout);
    strbuf_free(&j);
  } else {
    fputs(strbuf_cstr(&report), stdout);
    printf("%s: %d iteration%s, first %.3f ms, median %.3f ms (jit %s: %d cluster%s)\n", device->name, iters,
           iters == 1 ? "" : "s", first, med, kiln_flags.jit, n_clusters, n_clusters == 1 ? "" : "s");
  }
  log_info("wrote %d output%s to %s", m.g->n_results, m.g->n_results == 1 ? "" : "s", kiln_flags.output_dir);
  strbuf_free(&report);
  model_run_free(&m);
  return TOOL_OK;
}
