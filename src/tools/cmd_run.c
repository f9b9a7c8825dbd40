/* `kiln run FILE`: run an HLO module or a framework model on .npy inputs (and ONNX
 * sequences, optionals and maps in directory forms, below), through the
 * public C API (include/kiln/kiln.h), the same path every embedder takes.
 *
 * The flags become a kiln_options object; kiln_model_load reads the file (HLO text, an
 * ONNX model, a GraphDef .pb, a TF.js model.json, kiln's graph text; see import.h for
 * how the format is found), runs the bridge or compiles the module; each -i NAME=PATH
 * is read as .npy and fed by name; the model runs --iters times; the outputs are
 * written as .npy files.
 *
 * Inputs bind by the API's name rules (kiln_model_find_input): the input's name, "pN"
 * for HLO parameter N, "x" or "x:0" for TensorFlow tensors. Every file is checked
 * against its input before anything runs, and all missing inputs are reported at once
 * together with what the model takes, so one failed attempt tells the user the whole
 * signature. bfloat16 inputs take float32 .npy files (rounded to nearest even), and
 * bfloat16 outputs are written as float32 (numpy has no bfloat16); the float8/float4
 * types travel as uint8 bit patterns, int4 as int8 and uint4 as uint8 values (see
 * hlo/npy.h for both mappings). String inputs take numpy text ('<U') or bytes ('S')
 * .npy files, and string outputs are written as '<U' text (graph/npy_strings.h); object
 * arrays need pickle and are refused. -i may also name an optional input (kiln.h: one
 * the model declares but never reads, checked and then ignored), which is listed, never
 * required.
 *
 * Outputs: an HLO module's root leaves depth-first as OUTDIR/output_N.npy; a model's
 * results as OUTDIR/NAME.npy, NAME being the result's name with a TensorFlow ":0"
 * dropped and every character outside [A-Za-z0-9_.-] replaced by '_' (clashes get _1,
 * _2, ...). --json prints one line with the device, timings, how many instructions the
 * device runs through the evaluator instead of compiled code, and, for models, the
 * bridge's counters.
 *
 * ONNX sequences, optionals and maps (kiln.h's kiln_kind) have one form for -i and -o
 * alike, so an output can be fed back: a sequence is a directory of its elements
 * 0.npy, 1.npy, ... numbered from 0 without gaps (nested sequences and maps as
 * subdirectories 0/, 1/, ...; an empty directory is an empty sequence), a map a
 * directory holding keys.npy and values.npy, an optional what it holds or, when empty,
 * a path ending in ".none" (written as an empty file NAME.none). Plain files and
 * directories need no marker beyond that: a directory with keys.npy is a map, any
 * other a sequence. Before writing an output, what an earlier run may have left under
 * the same name in these forms is removed, so a directory read back holds this run's
 * elements only. Input checks name the input and the file: the kind against the
 * declaration (a .npy where a sequence is declared), each element against the declared
 * element dtype, and the numbering (a gap, or a stray file). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/cpu_backend.h"
#include "base/file.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "graph/npy_strings.h"
#include "hlo/npy.h"
#include "kiln/kiln.h"
#include "tools/tool.h"

/* What one -i path (or one element under it) was read into: a tensor's storage (the
 * file's literal, or for a file of strings a STRING tensor and the element pointers
 * its kiln_value passes), or a container's items: kids[i] holds the storage items[i]
 * (what the run reads) points into. */
typedef struct in_node {
  hlo_literal *lit;
  graph_tensor *strs;
  const char **ptrs;
  int n;
  struct in_node *kids;
  kiln_value *items;
} in_node;

/* One -i, bound to model input `index`. */
typedef struct run_input {
  int index;
  const char *spec;
  in_node node;
} run_input;

static void in_node_clear(in_node *n) {
  literal_free(n->lit);
  tensor_free(n->strs);
  free(n->ptrs);
  for (int i = 0; i < n->n; i++) in_node_clear(&n->kids[i]);
  free(n->kids);
  free(n->items);
  memset(n, 0, sizeof *n);
}

typedef struct run_state {
  kiln_model *model;
  int n_in;
  run_input *in;
  kiln_value *values;
  int n_out;
  kiln_tensor **out;
  double *times_ms;
  /* Transfer totals before the last iteration, so --json can say what one warm run
   * moves (on a device with memory: the inputs and outputs only). */
  int64_t to_device_before_last, to_host_before_last;
} run_state;

static void run_state_free(run_state *r) {
  for (int i = 0; i < r->n_in; i++) in_node_clear(&r->in[i].node);
  free(r->in);
  free(r->values);
  if (r->out)
    for (int i = 0; i < r->n_out; i++) kiln_tensor_free(r->out[i]);
  free(r->out);
  free(r->times_ms);
  kiln_model_free(r->model);
}

/* ------------------------------------------------------------------- inputs ---- */

static const struct {
  kiln_dtype k;
  hlo_type h;
} dtype_map[] = {{KILN_BOOL, HLO_PRED},  {KILN_INT8, HLO_S8},      {KILN_INT16, HLO_S16},     {KILN_INT32, HLO_S32},
                 {KILN_INT64, HLO_S64},  {KILN_UINT8, HLO_U8},     {KILN_UINT16, HLO_U16},    {KILN_UINT32, HLO_U32},
                 {KILN_UINT64, HLO_U64}, {KILN_FLOAT16, HLO_F16},  {KILN_BFLOAT16, HLO_BF16}, {KILN_FLOAT32, HLO_F32},
                 {KILN_FLOAT64, HLO_F64}, {KILN_FLOAT8E4M3FN, HLO_F8E4M3FN}, {KILN_FLOAT8E4M3FNUZ, HLO_F8E4M3FNUZ},
                 {KILN_FLOAT8E5M2, HLO_F8E5M2}, {KILN_FLOAT8E5M2FNUZ, HLO_F8E5M2FNUZ},
                 {KILN_FLOAT4E2M1FN, HLO_F4E2M1FN}, {KILN_INT4, HLO_S4}, {KILN_UINT4, HLO_U4},
                 {KILN_INT2, HLO_S2}, {KILN_UINT2, HLO_U2}, {KILN_FLOAT8E8M0FNU, HLO_F8E8M0FNU}};

static bool hlo_type_of(kiln_dtype d, hlo_type *out) {
  for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
    if (dtype_map[i].k == d) {
      *out = dtype_map[i].h;
      return true;
    }
  return false;
}

static kiln_dtype kiln_dtype_of(hlo_type t) {
  for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
    if (dtype_map[i].h == t) return dtype_map[i].k;
  return KILN_DTYPE_INVALID;
}

static void print_value_type(strbuf *b, kiln_dtype dtype, int rank, const int64_t *dims) {
  strbuf_append(b, kiln_dtype_name(dtype));
  if (rank < 0) return;
  strbuf_putc(b, '[');
  for (int i = 0; i < rank; i++) {
    if (i) strbuf_putc(b, ',');
    if (dims[i] < 0) strbuf_putc(b, '?');
    else strbuf_printf(b, "%lld", (long long)dims[i]);
  }
  strbuf_putc(b, ']');
}

static void describe_input(strbuf *b, const kiln_model *m, int i) {
  kiln_value v = KILN_VALUE_INIT;
  kiln_status_free(kiln_model_input(m, i, &v));
  strbuf_printf(b, "%s (", v.name);
  if (v.kind == KILN_KIND_TENSOR) print_value_type(b, v.dtype, v.rank, v.dims);
  else strbuf_printf(b, "%s of %s", kiln_kind_name(v.kind), kiln_dtype_name(v.dtype));
  strbuf_putc(b, ')');
}

static kiln_status with_signature(const kiln_model *m, strbuf *msg) {
  int n = kiln_model_num_inputs(m);
  strbuf_append(msg, n ? "; the model takes" : "; the model takes no inputs");
  for (int i = 0; i < n; i++) {
    strbuf_append(msg, i ? ", -i " : " -i ");
    describe_input(msg, m, i);
  }
  int n_opt = kiln_model_num_optional_inputs(m);
  for (int i = 0; i < n_opt; i++) {
    strbuf_append(msg, i ? ", -i " : "; optional: -i ");
    describe_input(msg, m, n + i);
  }
  kiln_status s = ERR_INVALID("%s", strbuf_cstr(msg));
  strbuf_free(msg);
  return s;
}

/* Reads one numeric .npy and checks it against want (an input's declaration, or for
 * an element of a sequence its element dtype); may narrow f32 to bf16, and
 * uint8/int8 to a narrow type (npy.h's mappings). */
static kiln_status load_input(kiln_value want, const char *path, hlo_literal **out) {
  hlo_literal *l;
  TRY(npy_read_file(path, &l));
  hlo_type want_t = HLO_TYPE_COUNT; /* set when narrow */
  bool narrow = hlo_type_of(want.dtype, &want_t) && hlo_type_is_narrow(want_t);
  if ((want.dtype == KILN_BFLOAT16 && l->shape.type == HLO_F32) ||
      (narrow && (l->shape.type == HLO_U8 || ((want_t == HLO_S4 || want_t == HLO_S2) && l->shape.type == HLO_S8)))) {
    hlo_literal *narrowed;
    kiln_status s = narrow ? npy_convert_to_narrow(l, want_t, &narrowed) : npy_convert_f32_to_bf16(l, &narrowed);
    literal_free(l);
    TRY(status_wrap(s, "input %s (%s)", want.name, path));
    l = narrowed;
  }
  kiln_dtype got = kiln_dtype_of(l->shape.type);
  bool type_ok = want.dtype == KILN_DTYPE_INVALID || want.dtype == got;
  bool dims_ok = want.rank < 0 || want.rank == l->shape.rank;
  for (int i = 0; dims_ok && want.rank >= 0 && i < want.rank; i++)
    dims_ok = want.dims[i] < 0 || want.dims[i] == l->shape.dims[i];
  if (got != KILN_DTYPE_INVALID && type_ok && dims_ok) {
    *out = l;
    return NULL;
  }
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "input %s: the model takes ", want.name);
  print_value_type(&b, want.dtype, want.rank, want.dims);
  strbuf_printf(&b, " but %s holds ", path);
  print_value_type(&b, got, l->shape.rank, l->shape.dims);
  strbuf_append(&b, !type_ok || got == KILN_DTYPE_INVALID ? " (element types differ)" : " (dimensions differ)");
  if (want.dtype == KILN_BFLOAT16) strbuf_append(&b, "; bfloat16 inputs take float32 .npy files");
  if (narrow)
    strbuf_printf(&b, "; %s inputs take %s .npy files", kiln_dtype_name(want.dtype),
                  want_t == HLO_S4   ? "int8 (values) or uint8 (4-bit patterns)"
                  : want_t == HLO_S2 ? "int8 (values) or uint8 (2-bit patterns)"
                  : want_t == HLO_U4 || want_t == HLO_U2 ? "uint8" : "uint8 (bit patterns)");
  literal_free(l);
  kiln_status s = ERR_INVALID("%s", strbuf_cstr(&b));
  strbuf_free(&b);
  return s;
}

/* Checks a string file against input `index` and makes the element pointers the
 * run passes (kiln.h's KILN_STRING form; they point into t). */
static kiln_status check_string_input(kiln_value want, const char *path, const graph_tensor *t, const char ***ptrs) {
  bool type_ok = want.dtype == KILN_DTYPE_INVALID || want.dtype == KILN_STRING;
  bool dims_ok = want.rank < 0 || want.rank == t->rank;
  for (int i = 0; dims_ok && want.rank >= 0 && i < want.rank; i++)
    dims_ok = want.dims[i] < 0 || want.dims[i] == t->dims[i];
  if (!type_ok || !dims_ok) {
    strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b, "input %s: the model takes ", want.name);
    print_value_type(&b, want.dtype, want.rank, want.dims);
    strbuf_printf(&b, " but %s holds ", path);
    print_value_type(&b, KILN_STRING, t->rank, t->dims);
    strbuf_append(&b, type_ok ? " (dimensions differ)" : " (element types differ)");
    kiln_status s = ERR_INVALID("%s", strbuf_cstr(&b));
    strbuf_free(&b);
    return s;
  }
  *ptrs = calloc((size_t)t->n + 1, sizeof **ptrs);
  if (!*ptrs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t i = 0; i < t->n; i++) {
    const graph_bytes *e = tensor_string(t, i);
    if (strlen(e->data) != e->len)
      return ERR_INVALID("input %s: element %lld of %s holds a NUL character, which kiln's NUL-terminated string "
                         "inputs cannot carry",
                         want.name, (long long)i, path);
    (*ptrs)[i] = e->data;
  }
  return NULL;
}

/* A tensor file: a .npy of strings (numpy 'U'/'S' arrays) is a string tensor; any
 * other goes to the numeric reader. */
static kiln_status read_tensor(kiln_value want, const char *path, in_node *n, kiln_value *v) {
  TRY(npy_strings_read_file(path, &n->strs));
  if (n->strs) {
    TRY(check_string_input(want, path, n->strs, &n->ptrs));
    const graph_tensor *t = n->strs;
    v->dtype = KILN_STRING;
    v->rank = t->rank;
    v->dims = t->dims;
    v->data = (void *)n->ptrs;
    v->byte_size = (size_t)t->n * sizeof(const char *);
    return NULL;
  }
  TRY(load_input(want, path, &n->lit));
  const hlo_literal *l = n->lit;
  v->dtype = kiln_dtype_of(l->shape.type);
  v->rank = l->shape.rank;
  v->dims = l->shape.dims;
  v->data = l->data;
  v->byte_size = (size_t)shape_byte_size(&l->shape);
  return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static char *path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p) abort();
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Whether name is how a sequence directory names element k or more: "K", "K.npy". */
static bool element_name(const char *name, long *k) {
  char *end = NULL;
  if (name[0] < '0' || name[0] > '9') return false;
  *k = strtol(name, &end, 10);
  return !*end || strcmp(end, ".npy") == 0;
}

static kiln_status read_value(kiln_value want, const char *path, int depth, in_node *n, kiln_value *v);

/* A sequence directory: elements 0.npy, 1.npy, ... (or 0/, 1/, ... for nested
 * sequences and maps) numbered without gaps; nothing else may be there. */
static kiln_status read_sequence(kiln_value want, const char *path, int depth, in_node *n, kiln_value *v) {
  v->kind = KILN_KIND_SEQUENCE;
  int cap = 0;
  for (int k = 0;; k++) {
    char name[32];
    snprintf(name, sizeof name, "%d.npy", k);
    char *file = path_join(path, name);
    snprintf(name, sizeof name, "%d", k);
    char *dir = path_join(path, name);
    const char *at = is_file(file) ? file : is_dir(dir) ? dir : NULL;
    if (!at) {
      free(file);
      free(dir);
      break;
    }
    if (n->n == cap) {
      cap = cap ? 2 * cap : 8;
      n->kids = realloc(n->kids, (size_t)cap * sizeof *n->kids);
      n->items = realloc(n->items, (size_t)cap * sizeof *n->items);
      if (!n->kids || !n->items) abort();
    }
    memset(&n->kids[n->n], 0, sizeof *n->kids);
    n->n++;
    kiln_value elem = want;
    elem.rank = -1; /* a sequence's elements may differ in shape */
    kiln_status s = read_value(elem, at, depth + 1, &n->kids[n->n - 1], &n->items[n->n - 1]);
    free(file);
    free(dir);
    TRY(s);
  }
  v->n_items = n->n;
  v->items = n->items;
  DIR *d = opendir(path);
  if (!d) return status_error(KILN_IO_ERROR, "input %s: cannot list %s: %s", want.name, path, strerror(errno));
  kiln_status s = NULL;
  for (struct dirent *e; !s && (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    long k = 0;
    if (element_name(e->d_name, &k) && k < n->n) continue;
    if (element_name(e->d_name, &k))
      s = ERR_INVALID("input %s: element %d of the sequence %s is missing (%s/%d.npy), but %s/%s is there; elements "
                      "are numbered from 0 without gaps",
                      want.name, n->n, path, path, n->n, path, e->d_name);
    else
      s = ERR_INVALID("input %s: %s/%s is not an element of the sequence %s (a sequence directory holds 0.npy, "
                      "1.npy, ..., or 0/, 1/, ... for nested values; a map directory keys.npy and values.npy)",
                      want.name, path, e->d_name, path);
  }
  closedir(d);
  return s;
}

/* A map directory: keys.npy and values.npy, 1-D and of one length. */
static kiln_status read_map(kiln_value want, const char *path, int depth, in_node *n, kiln_value *v) {
  v->kind = KILN_KIND_MAP;
  n->kids = calloc(2, sizeof *n->kids);
  n->items = calloc(2, sizeof *n->items);
  if (!n->kids || !n->items) abort();
  n->n = 2;
  v->n_items = 2;
  v->items = n->items;
  const char *names[2] = {"keys.npy", "values.npy"};
  for (int i = 0; i < 2; i++) {
    char *file = path_join(path, names[i]);
    kiln_value part = want;
    part.rank = -1;
    if (i == 0) part.dtype = KILN_DTYPE_INVALID; /* the keys' type is the executor's to check */
    n->items[i] = (kiln_value)KILN_VALUE_INIT;
    kiln_status s = is_file(file) ? read_tensor(part, file, &n->kids[i], &n->items[i])
                                  : ERR_INVALID("input %s: the map %s has no %s", want.name, path, names[i]);
    free(file);
    TRY(s);
  }
  return NULL;
}

/* One -i path (or an element under it) as what the run reads (see the header). */
static kiln_status read_value(kiln_value want, const char *path, int depth, in_node *n, kiln_value *v) {
  const char *name = want.name;
  kiln_kind declared = want.kind;
  *v = (kiln_value)KILN_VALUE_INIT;
  v->name = name;
  if (depth > 32) return ERR_INVALID("input %s: %s nests deeper than 32 levels", name, path);
  if (ends_with(path, ".none")) { /* an empty optional */
    if (depth == 0 && declared != KILN_KIND_OPTIONAL)
      return ERR_INVALID("input %s: %s marks an empty optional, but %s is a %s", name, path, name,
                         kiln_kind_name(declared));
    v->kind = KILN_KIND_OPTIONAL;
    return NULL;
  }
  if (is_dir(path)) {
    char *keys = path_join(path, "keys.npy");
    bool map = is_file(keys);
    free(keys);
    if (depth == 0 && (declared == KILN_KIND_TENSOR || (declared == KILN_KIND_MAP) != map))
      return ERR_INVALID("input %s is a %s, but %s is a %s directory (see kiln help)", name,
                         kiln_kind_name(declared), path, map ? "map" : "sequence");
    return map ? read_map(want, path, depth, n, v) : read_sequence(want, path, depth, n, v);
  }
  if (!is_file(path)) return status_error(KILN_IO_ERROR, "input %s: cannot read %s: %s", name, path, strerror(ENOENT));
  if (depth == 0 && (declared == KILN_KIND_SEQUENCE || declared == KILN_KIND_MAP))
    return ERR_INVALID("input %s is a %s: give a directory (%s), not the file %s", name, kiln_kind_name(declared),
                       declared == KILN_KIND_MAP ? "keys.npy and values.npy" : "0.npy, 1.npy, ...", path);
  return read_tensor(want, path, n, v);
}

static kiln_status bind_inputs(run_state *r) {
  const flag_list *specs = &kiln_flags.input;
  r->in = calloc((size_t)specs->n + 1, sizeof *r->in);
  r->values = calloc((size_t)specs->n + 1, sizeof *r->values);
  if (!r->in || !r->values) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < specs->n; k++) {
    const char *spec = specs->v[k];
    const char *eq = strchr(spec, '=');
    char *name = strndup(spec, (size_t)(eq - spec));
    if (!name) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    int index = -1;
    kiln_status s = kiln_model_find_input(r->model, name, &index);
    free(name);
    if (s) {
      kiln_status_free(s);
      strbuf b;
      strbuf_init(&b);
      strbuf_printf(&b, "unknown input '%.*s' (in -i %s)", (int)(eq - spec), spec, spec);
      return with_signature(r->model, &b);
    }
    for (int j = 0; j < r->n_in; j++)
      if (r->in[j].index == index) {
        strbuf b;
        strbuf_init(&b);
        describe_input(&b, r->model, index);
        s = ERR_INVALID("input %s is given twice (-i %s and -i %s)", strbuf_cstr(&b), r->in[j].spec, spec);
        strbuf_free(&b);
        return s;
      }
    run_input *in = &r->in[r->n_in++];
    in->index = index;
    in->spec = spec;
    kiln_value want = KILN_VALUE_INIT;
    TRY(kiln_model_input(r->model, index, &want));
    TRY(read_value(want, eq + 1, 0, &in->node, &r->values[r->n_in - 1]));
  }
  strbuf missing;
  strbuf_init(&missing);
  int n_missing = 0;
  for (int i = 0; i < kiln_model_num_inputs(r->model); i++) {
    bool given = false;
    for (int j = 0; j < r->n_in && !given; j++) given = r->in[j].index == i;
    if (given) continue;
    if (n_missing++) strbuf_append(&missing, ", ");
    describe_input(&missing, r->model, i);
  }
  if (!n_missing) {
    strbuf_free(&missing);
  } else {
    strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b, "missing input%s: %s", n_missing > 1 ? "s" : "", strbuf_cstr(&missing));
    strbuf_free(&missing);
    return with_signature(r->model, &b);
  }
  return NULL;
}

/* ------------------------------------------------------------------ outputs ---- */

/* OUTDIR/NAME.npy for a model result: TF's ":0" dropped, unsafe characters made '_'. */
static char *output_file_name(kiln_format format, const char *name) {
  size_t len = strlen(name);
  bool tf = format != KILN_FORMAT_ONNX;
  if (tf && len > 2 && strcmp(name + len - 2, ":0") == 0) len -= 2;
  char *s = malloc(len + 16);
  if (!s) abort();
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    s[i] = ok ? c : '_';
  }
  s[len] = 0;
  if (len == 0 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) snprintf(s, len + 16, "output");
  return s;
}

/* DIR/NAME.npy of a string output, as numpy '<U' text (graph/npy_strings.h). */
static kiln_status write_string_output(kiln_tensor *t, const char *output, const char *dir, const char *name,
                                       strbuf *report) {
  graph_tensor *g;
  TRY(tensor_create(GRAPH_DT_STRING, kiln_tensor_rank(t), kiln_tensor_dims(t), &g));
  const char *const *ptrs = kiln_tensor_data(t);
  for (int64_t i = 0; i < g->n; i++) tensor_set_string(g, i, ptrs[i], strlen(ptrs[i]));
  size_t n = strlen(dir) + strlen(name) + 8;
  char *path = malloc(n);
  if (!path) abort();
  snprintf(path, n, "%s/%s.npy", dir, name);
  char what[512];
  snprintf(what, sizeof what, "output %s", output);
  kiln_status s = npy_strings_write_file(path, g, what);
  if (!s) {
    strbuf_printf(report, "%s: ", path);
    print_value_type(report, KILN_STRING, g->rank, g->dims);
    strbuf_putc(report, '\n');
  }
  free(path);
  tensor_free(g);
  return s;
}

/* Removes what an earlier run may have left at DIR/NAME in these forms (NAME.npy,
 * NAME.none, and the element files of a NAME/ directory), so that what is read back
 * is this run's value only. Anything else is left alone. */
static void clear_value_at(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 8;
  char *p = malloc(n);
  if (!p) abort();
  snprintf(p, n, "%s/%s.npy", dir, name);
  remove(p);
  snprintf(p, n, "%s/%s.none", dir, name);
  remove(p);
  snprintf(p, n, "%s/%s", dir, name);
  DIR *d = is_dir(p) ? opendir(p) : NULL;
  for (struct dirent *e; d && (e = readdir(d));) {
    long k;
    char entry[300];
    snprintf(entry, sizeof entry, "%s", e->d_name);
    size_t len = strlen(entry);
    if (len > 5 && strcmp(entry + len - 5, ".none") == 0) entry[len - 5] = 0;
    else if (len > 4 && strcmp(entry + len - 4, ".npy") == 0) entry[len - 4] = 0;
    if (element_name(entry, &k) || strcmp(entry, "keys") == 0 || strcmp(entry, "values") == 0)
      clear_value_at(p, entry);
  }
  if (d) {
    closedir(d);
    rmdir(p); /* fails, harmlessly, when something else is still there */
  }
  free(p);
}

/* DIR/NAME.npy of a tensor output. */
static kiln_status write_tensor(kiln_tensor *t, const char *output, const char *dir, const char *name,
                                strbuf *report) {
  if (kiln_tensor_dtype(t) == KILN_STRING) return write_string_output(t, output, dir, name, report);
  hlo_type ht;
  if (!hlo_type_of(kiln_tensor_dtype(t), &ht))
    return status_error(KILN_UNIMPLEMENTED, "output %s has dtype %s; .npy outputs hold numbers and bools only", output,
                        kiln_dtype_name(kiln_tensor_dtype(t)));
  hlo_literal view;
  memset(&view, 0, sizeof view);
  view.shape = shape_make(ht, kiln_tensor_rank(t), kiln_tensor_dims(t));
  view.data = kiln_tensor_data(t);
  view.n = kiln_tensor_element_count(t);
  size_t n = strlen(dir) + strlen(name) + 8;
  char *path = malloc(n);
  if (!path) abort();
  snprintf(path, n, "%s/%s.npy", dir, name);
  kiln_status s = npy_write_file(path, &view);
  if (!s) {
    char *shape = shape_to_string(&view.shape);
    strbuf_printf(report, "%s: %s%s\n", path, shape,
                  ht == HLO_BF16                              ? " (written as f32)"
                  : ht == HLO_S4 || ht == HLO_S2              ? " (written as s8)"
                  : ht == HLO_U4 || ht == HLO_U2              ? " (written as u8)"
                  : hlo_type_is_narrow(ht)                    ? " (written as u8 bit patterns)"
                                                              : "");
    free(shape);
  }
  free(path);
  return s;
}

/* An output in the -i forms (see the header): a tensor as DIR/NAME.npy, a sequence as
 * the directory DIR/NAME/ of its elements 0, 1, ..., a map as DIR/NAME/ holding
 * keys.npy and values.npy, an optional as what it holds or, when empty, the empty
 * file DIR/NAME.none. */
static kiln_status write_value(kiln_tensor *t, const char *output, const char *dir, const char *name,
                               strbuf *report) {
  clear_value_at(dir, name);
  kiln_kind kind = kiln_tensor_kind(t);
  if (kind == KILN_KIND_TENSOR) return write_tensor(t, output, dir, name, report);
  if (kind == KILN_KIND_OPTIONAL) {
    if (kiln_tensor_item_count(t)) return write_value(kiln_tensor_item(t, 0), output, dir, name, report);
    size_t n = strlen(dir) + strlen(name) + 8;
    char *path = malloc(n);
    if (!path) abort();
    snprintf(path, n, "%s/%s.none", dir, name);
    FILE *f = fopen(path, "wb");
    kiln_status s = f ? NULL : status_error(KILN_IO_ERROR, "output %s: cannot write %s: %s", output, path, strerror(errno));
    if (f && fclose(f) != 0) s = status_error(KILN_IO_ERROR, "output %s: cannot write %s", output, path);
    if (!s) strbuf_printf(report, "%s: empty optional\n", path);
    free(path);
    return s;
  }
  char *sub = path_join(dir, name);
  kiln_status s = file_make_dirs(sub);
  int n = kiln_tensor_item_count(t);
  if (!s && kind == KILN_KIND_SEQUENCE && !n) strbuf_printf(report, "%s/: empty sequence\n", sub);
  for (int i = 0; i < n && !s; i++) {
    char item[32];
    if (kind == KILN_KIND_MAP) snprintf(item, sizeof item, "%s", i ? "values" : "keys");
    else snprintf(item, sizeof item, "%d", i);
    s = write_value(kiln_tensor_item(t, i), output, sub, item, report);
  }
  free(sub);
  return s;
}

static kiln_status write_outputs(const run_state *r, const char *dir, strbuf *report) {
  kiln_format format = kiln_model_format(r->model);
  char **used = calloc((size_t)r->n_out + 1, sizeof *used);
  if (!used) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status s = NULL;
  for (int i = 0; i < r->n_out && !s; i++) {
    kiln_value o = KILN_VALUE_INIT;
    s = kiln_model_output(r->model, i, &o);
    if (s) break;
    char *base = format == KILN_FORMAT_HLO ? strdup(o.name) : output_file_name(format, o.name);
    if (!base) abort();
    /* Distinct results whose names sanitise alike get _1, _2, ... */
    char *name = base;
    for (int k = 1;; k++) {
      bool clash = false;
      for (int j = 0; j < i && !clash; j++) clash = strcmp(used[j], name) == 0;
      if (!clash) break;
      if (name != base) free(name);
      size_t n = strlen(base) + 24;
      name = malloc(n);
      if (!name) abort();
      snprintf(name, n, "%s_%d", base, k);
    }
    if (name != base) free(base);
    used[i] = name;
    s = write_value(r->out[i], o.name, dir, name, report);
  }
  for (int i = 0; i < r->n_out; i++) free(used[i]);
  free(used);
  return s;
}

/* -------------------------------------------------------------------- timing ---- */

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

static void print_summary(const run_state *r, int iters) {
  kiln_model_stats st = KILN_MODEL_STATS_INIT;
  kiln_status_free(kiln_model_get_stats(r->model, &st));
  bool model = kiln_model_format(r->model) != KILN_FORMAT_HLO;
  double first = r->times_ms[0], med = median(r->times_ms, iters);
  if (model)
    log_info("executor: %lld modules compiled, %lld cache hits; clusters: %lld runs, %lld compiles, %lld fallback runs",
             (long long)st.op_compiles, (long long)st.op_cache_hits, (long long)st.cluster_runs,
             (long long)st.cluster_compiles, (long long)st.cluster_fallback_runs);
  if (!kiln_flags.json) {
    if (model)
      printf("%s: %d iteration%s, first %.3f ms, median %.3f ms (jit %s: %d cluster%s)\n", st.device, iters,
             iters == 1 ? "" : "s", first, med, st.jit, st.clusters, st.clusters == 1 ? "" : "s");
    else
      printf("%s: %d iteration%s, first %.3f ms, median %.3f ms\n", st.device, iters, iters == 1 ? "" : "s", first,
             med);
    return;
  }
  strbuf j;
  strbuf_init(&j);
  strbuf_append(&j, "{\"device\":");
  json_string(&j, st.device);
  strbuf_printf(&j, ",\"first_ms\":%.6f,\"median_ms\":%.6f,\"iters\":%d,\"evaluated_instructions\":%lld", first,
                med, iters, (long long)st.evaluated_instructions);
  strbuf_printf(&j, ",\"bytes_to_device\":%lld,\"bytes_to_host\":%lld,\"last_run_bytes_to_device\":%lld,"
                    "\"last_run_bytes_to_host\":%lld",
                (long long)st.bytes_to_device, (long long)st.bytes_to_host,
                (long long)(st.bytes_to_device - r->to_device_before_last),
                (long long)(st.bytes_to_host - r->to_host_before_last));
  if (model)
    strbuf_printf(&j, ",\"nodes\":%d,\"jit\":\"%s\",\"clusters\":%d,\"cluster_runs\":%lld,\"cluster_compiles\":%lld,"
                      "\"cluster_cache_hits\":%lld,\"cluster_fallback_runs\":%lld,\"cluster_compile_ms\":%.3f,"
                      "\"op_compiles\":%lld,\"op_cache_hits\":%lld",
                  st.nodes, st.jit, st.clusters, (long long)st.cluster_runs, (long long)st.cluster_compiles,
                  (long long)st.cluster_cache_hits, (long long)st.cluster_fallback_runs, st.cluster_compile_ms,
                  (long long)st.op_compiles, (long long)st.op_cache_hits);
  if (kiln_flags.cache_dir && *kiln_flags.cache_dir) {
    /* The process's persistent-cache counts: `kiln run` compiles one model. */
    int64_t hits, misses, writes;
    cpu_backend_persistent_counts(&hits, &misses, &writes);
    strbuf_printf(&j, ",\"compile_cache_hits\":%lld,\"compile_cache_misses\":%lld,\"compile_cache_writes\":%lld",
                  (long long)hits, (long long)misses, (long long)writes);
  }
  strbuf_append(&j, "}\n");
  fputs(strbuf_cstr(&j), stdout);
  strbuf_free(&j);
}

/* ------------------------------------------------------------------ command ---- */

/* Problems with the command line itself (exit 2), found before anything is loaded. */
static int check_usage(int argc, char **argv) {
  if (argc < 1)
    return tool_usage_error("kiln run needs an HLO file or a model: kiln run FILE.hlo|MODEL.onnx|MODEL.pb|model.json "
                            "[-i NAME=PATH.npy]...");
  if (argc > 1) return tool_usage_error("kiln run takes one HLO file or model (unexpected '%s'; inputs go in -i NAME=PATH)", argv[1]);
  if (kiln_flags.iters < 1) return tool_usage_error("--iters must be at least 1 (got %lld)", (long long)kiln_flags.iters);
  if (kiln_flags.iters > 1000000) return tool_usage_error("--iters is at most 1000000 (got %lld)", (long long)kiln_flags.iters);
  if (strcmp(kiln_flags.jit, "off") != 0 && strcmp(kiln_flags.jit, "auto") != 0)
    return tool_usage_error("--jit is off or auto (got '%s')", kiln_flags.jit);
  for (int k = 0; k < kiln_flags.input.n; k++) {
    const char *spec = kiln_flags.input.v[k];
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
      return tool_usage_error("-i expects NAME=PATH (a .npy, a sequence or map directory, or NAME.none), got '%s'",
                              spec);
  }
  if (kiln_flags.device[0]) {
    strbuf b;
    strbuf_init(&b);
    bool found = false;
    for (int i = 0; i < kiln_device_count(); i++) {
      kiln_device_info d = KILN_DEVICE_INFO_INIT;
      kiln_status_free(kiln_device_info_at(i, &d));
      if (!d.available) continue;
      found = found || strcmp(d.name, kiln_flags.device) == 0;
      strbuf_printf(&b, "%s%s", b.len ? ", " : "", d.name);
    }
    int rc = found ? TOOL_OK : tool_usage_error("unknown device '%s' (available devices: %s)", kiln_flags.device, strbuf_cstr(&b));
    strbuf_free(&b);
    if (rc) return rc;
  }
  return TOOL_OK;
}

int cmd_run(int argc, char **argv) {
  int rc = check_usage(argc, argv);
  if (rc) return rc;
  run_state r;
  memset(&r, 0, sizeof r);
  int iters = (int)kiln_flags.iters;
  kiln_options *opts = NULL;
  kiln_status s = tool_kiln_options(&opts);
  if (!s) s = kiln_model_load(argv[0], opts, &r.model);
  kiln_options_free(opts);
  if (!s) s = bind_inputs(&r);
  if (!s) {
    r.n_out = kiln_model_num_outputs(r.model);
    r.out = calloc((size_t)r.n_out + 1, sizeof *r.out);
    r.times_ms = calloc((size_t)iters, sizeof *r.times_ms);
    if (!r.out || !r.times_ms) s = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int i = 0; !s && i < iters; i++) {
    for (int k = 0; k < r.n_out; k++) {
      kiln_tensor_free(r.out[k]);
      r.out[k] = NULL;
    }
    if (i == iters - 1) {
      kiln_model_stats st = KILN_MODEL_STATS_INIT;
      kiln_status_free(kiln_model_get_stats(r.model, &st));
      r.to_device_before_last = st.bytes_to_device;
      r.to_host_before_last = st.bytes_to_host;
    }
    double t0 = now_ms();
    s = kiln_model_run(r.model, NULL, r.n_in, r.values, r.n_out, NULL, r.out);
    r.times_ms[i] = now_ms() - t0;
  }
  strbuf report;
  strbuf_init(&report);
  if (!s) s = file_make_dirs(kiln_flags.output_dir);
  if (!s) s = write_outputs(&r, kiln_flags.output_dir, &report);
  if (s) {
    strbuf_free(&report);
    run_state_free(&r);
    return tool_fail(s);
  }
  if (!kiln_flags.json) fputs(strbuf_cstr(&report), stdout);
  print_summary(&r, iters);
  log_info("wrote %d output%s to %s", r.n_out, r.n_out == 1 ? "" : "s", kiln_flags.output_dir);
  strbuf_free(&report);
  run_state_free(&r);
  return TOOL_OK;
}
