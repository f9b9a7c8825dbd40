/* The example plugin (ABI 2): a device named `example`, built the way an outside vendor
 * would build one — against include/kiln/plugin.h only, with kiln's HLO layer and
 * evaluator linked in statically and hidden, so the library exports nothing but
 * kiln_plugin_init. It is the reference vendors read, so it shows every part of the ABI
 * in its simplest form:
 *   - all state lives in the client (kiln_plugin_client), none in globals, so a process
 *     may hold several clients; the host's log callback is kept there too;
 *   - every entry takes its *_args struct and reads only fields within struct_size;
 *   - "device memory" is host memory here: a buffer is a literal, and execute runs on
 *     the buffers' literals without copying them;
 *   - donation: a donated argument whose shape is exactly a result's becomes that
 *     result (its memory is reused instead of allocating a new literal);
 *   - error codes: UNIMPLEMENTED for "not on this device" (outside the supported subset,
 *     or refused by the example.reject_opcodes compile option), other codes for
 *     failures.
 * It supports a deliberate subset of HLO (elementwise, reduce, dot,
 * broadcast/reshape/transpose, constant/parameter/tuple/get-tuple-element, and not
 * convolution among others), and its op_supported matrix says exactly that, so the
 * host's placer and `kiln conformance` see "unsupported" rather than "wrong" for the
 * rest. Execution parses the HLO text the host sends and runs kiln's evaluator on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "kiln/plugin.h"

struct kiln_plugin_error {
  int code;
  char *message;
};

/* The plugin's whole state: one per client_create. */
struct kiln_plugin_client {
  kiln_plugin_host host; /* a copy of what the host offered (fields beyond its struct_size zero) */
};

struct kiln_plugin_executable {
  hlo_module *module;
};

/* A device buffer; literal is NULL once donated away. */
struct kiln_plugin_buffer {
  hlo_literal *literal;
};

static kiln_plugin_error *make_error(int code, const char *msg) {
  kiln_plugin_error *e = malloc(sizeof *e);
  if (!e) return NULL; /* the host then sees "no error"; only on out-of-memory */
  e->code = code;
  size_t n = strlen(msg);
  e->message = malloc(n + 1);
  if (e->message) memcpy(e->message, msg, n + 1);
  return e;
}

static kiln_plugin_error *from_status(kiln_status s) {
  int code;
  switch (kiln_status_code(s)) {
  case KILN_INVALID_ARGUMENT: code = KILN_PLUGIN_ERR_INVALID_ARGUMENT; break;
  case KILN_NOT_FOUND: code = KILN_PLUGIN_ERR_NOT_FOUND; break;
  case KILN_UNIMPLEMENTED: code = KILN_PLUGIN_ERR_UNIMPLEMENTED; break;
  case KILN_OUT_OF_RANGE: code = KILN_PLUGIN_ERR_OUT_OF_RANGE; break;
  case KILN_RESOURCE_EXHAUSTED: code = KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED; break;
  default: code = KILN_PLUGIN_ERR_INTERNAL; break;
  }
  kiln_plugin_error *e = make_error(code, kiln_status_message(s));
  kiln_status_free(s);
  return e;
}

static int ex_error_code(const kiln_plugin_error *e) { return e->code; }
static const char *ex_error_message(const kiln_plugin_error *e) { return e->message ? e->message : ""; }
static void ex_error_destroy(kiln_plugin_error *e) {
  if (!e) return;
  free(e->message);
  free(e);
}

/* Sends a message to the host's log, if it offered one. */
static void say(const kiln_plugin_client *c, int level, const char *message) {
  if (c->host.log) c->host.log(c->host.host_data, level, message);
}

/* ---- the client ---- */

static kiln_plugin_error *ex_client_create(kiln_plugin_client_create_args *a) {
  kiln_plugin_client *c = calloc(1, sizeof *c);
  if (!c) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  /* Copy only what the host's struct holds: an older host's is shorter. */
  if (a->host) {
    size_t n = a->host->struct_size < sizeof c->host ? a->host->struct_size : sizeof c->host;
    memcpy(&c->host, a->host, n);
  }
  a->client = c;
  say(c, KILN_PLUGIN_LOG_DEBUG, "example client created");
  return NULL;
}

static void ex_client_destroy(kiln_plugin_client *c) { free(c); }

static kiln_plugin_error *ex_device_count(kiln_plugin_device_count_args *a) {
  a->n_devices = 1;
  return NULL;
}

static kiln_plugin_error *ex_device_info(kiln_plugin_device_info_args *a) {
  if (a->device != 0) return make_error(KILN_PLUGIN_ERR_NOT_FOUND, "no such device");
  a->name = "example";
  a->description = "example plugin (kiln evaluator inside; no convolution)";
  /* memory_bytes is the last field: write it only when the host's struct has it. */
  if (a->struct_size >= offsetof(kiln_plugin_device_info_args, memory_bytes) + sizeof a->memory_bytes)
    a->memory_bytes = 0; /* host memory: no fixed size */
  return NULL;
}

/* ---- the supported subset ---- */

static bool type_from_dtype(int dtype, hlo_type *out) {
  static const hlo_type map[] = {HLO_PRED, HLO_S8,  HLO_S16, HLO_S32,  HLO_S64, HLO_U8, HLO_U16,
                                 HLO_U32,  HLO_U64, HLO_F16, HLO_BF16, HLO_F32, HLO_F64};
  if (dtype < KILN_DTYPE_PRED || dtype > KILN_DTYPE_F64) return false;
  *out = map[dtype - KILN_DTYPE_PRED];
  return true;
}

static int dtype_from_type(hlo_type t) {
  for (int d = KILN_DTYPE_PRED; d <= KILN_DTYPE_F64; d++) {
    hlo_type x;
    if (type_from_dtype(d, &x) && x == t) return d;
  }
  return 0;
}

static const char *const float_unary[] = {"exponential", "log", "sqrt", "rsqrt", "tanh", "sine", "cosine",
                                          "logistic", "floor", "ceil", "exponential-minus-one", "log-plus-one",
                                          "round-nearest-even", "round-nearest-afz", "cbrt", "tan", "erf"};
static const char *const numeric_unary[] = {"abs", "negate", "sign"};
static const char *const numeric_binary[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum",
                                             "power", "remainder"};
static const char *const float_binary[] = {"atan2"};
static const char *const logical[] = {"and", "or", "xor", "not"};
static const char *const any_type[] = {"broadcast", "reshape", "transpose", "constant", "parameter", "tuple",
                                       "get-tuple-element", "select", "convert", "copy", "reduce", "compare",
                                       "clamp"};
static const char *const numeric_other[] = {"dot"};

static bool in_list(const char *op, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(op, list[i]) == 0) return true;
  return false;
}
#define IN(op, list) in_list(op, list, sizeof list / sizeof list[0])

static int op_supported(int device, const char *opcode, int dtype) {
  if (device != 0) return 0;
  /* Tuple-shaped results (tuple, a tuple parameter) have no element type: dtype 0. */
  if (dtype == 0) return strcmp(opcode, "tuple") == 0 || strcmp(opcode, "parameter") == 0 ||
                         strcmp(opcode, "get-tuple-element") == 0 || strcmp(opcode, "reduce") == 0;
  hlo_type t;
  if (!type_from_dtype(dtype, &t)) return 0;
  bool is_float = hlo_type_is_float(t), is_int = hlo_type_is_int(t), is_pred = t == HLO_PRED;
  if (IN(opcode, any_type)) return 1;
  if (IN(opcode, float_unary) || IN(opcode, float_binary)) return is_float;
  if (IN(opcode, numeric_unary) || IN(opcode, numeric_binary) || IN(opcode, numeric_other))
    return is_float || is_int;
  if (IN(opcode, logical)) return is_int || is_pred;
  return 0;
}

static kiln_plugin_error *ex_op_supported(kiln_plugin_op_supported_args *a) {
  a->supported = op_supported(a->device, a->opcode, a->dtype);
  return NULL;
}

/* Whether `op` is one of the comma-separated names in `list` (NULL: none). */
static int listed(const char *list, const char *op) {
  size_t n = strlen(op);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, op, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* rejected: the value of compile option example.reject_opcodes, a vendor-style knob
 * that makes compile refuse some opcodes (the host then falls back). */
static kiln_status check_subset(const hlo_module *m, const char *rejected) {
  for (int c = 0; c < m->n_comps; c++) {
    const hlo_computation *comp = m->comps[c];
    for (int i = 0; i < comp->n_instrs; i++) {
      const hlo_instr *ins = comp->instrs[i];
      const char *op = hlo_opcode_name(ins->op);
      if (!op_supported(0, op, dtype_from_type(ins->shape.type)) || !eval_supports(ins))
        return status_error(KILN_UNIMPLEMENTED, "example plugin: %s: %s of %s is outside the supported subset",
                            ins->name, op, hlo_type_name(ins->shape.type));
      if (listed(rejected, op))
        return status_error(KILN_UNIMPLEMENTED, "example plugin: %s: %s is rejected by compile option "
                                                "example.reject_opcodes",
                            ins->name, op);
    }
  }
  return NULL;
}

/* ---- compile / execute ---- */

static kiln_plugin_error *ex_compile(kiln_plugin_compile_args *a) {
  const char *rejected = NULL;
  for (size_t i = 0; i < a->n_options; i++)
    if (a->options[i].struct_size >= sizeof(kiln_plugin_option) &&
        strcmp(a->options[i].key, "example.reject_opcodes") == 0)
      rejected = a->options[i].value;
  if (a->device != 0) return make_error(KILN_PLUGIN_ERR_NOT_FOUND, "no such device");
  if (strcmp(a->format, KILN_PLUGIN_FORMAT_HLO_TEXT) != 0)
    return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "only hlo-text modules are accepted");
  hlo_module *m = NULL;
  kiln_status s = hlo_parse(a->module, a->module_len, "<plugin module>", &m);
  if (!s) s = hlo_verify_module(m);
  if (!s) s = check_subset(m, rejected);
  if (s) {
    hlo_module_free(m);
    return from_status(s);
  }
  kiln_plugin_executable *e = malloc(sizeof *e);
  if (!e) {
    hlo_module_free(m);
    return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  e->module = m;
  a->executable = e;
  return NULL;
}

static void ex_executable_destroy(kiln_plugin_client *c, kiln_plugin_executable *e) {
  (void)c;
  if (!e) return;
  hlo_module_free(e->module);
  free(e);
}

static kiln_plugin_buffer *wrap(hlo_literal *l) {
  kiln_plugin_buffer *b = malloc(sizeof *b);
  if (!b) {
    literal_free(l);
    return NULL;
  }
  b->literal = l;
  return b;
}

static void ex_buffer_destroy(kiln_plugin_client *c, kiln_plugin_buffer *b) {
  (void)c;
  if (!b) return;
  literal_free(b->literal);
  free(b);
}

/* Makes the result buffer for value v (taken). Donation: the first donated argument
 * still holding its memory whose shape is exactly v's gives its literal, which v is
 * copied into, and the argument's handle is left empty (the host only destroys it).
 * The evaluator allocates its own result, so here this saves nothing; a real device
 * would have written the result into the donated memory directly. */
static kiln_plugin_buffer *result_buffer(kiln_plugin_client *c, hlo_literal *v, const kiln_plugin_execute_args *a) {
  for (size_t i = 0; a->donated && i < a->n_args; i++) {
    kiln_plugin_buffer *arg = a->args[i];
    if (!a->donated[i] || !arg->literal || !shape_equal(&arg->literal->shape, &v->shape)) continue;
    kiln_plugin_buffer *b = malloc(sizeof *b);
    if (!b) break;
    memcpy(arg->literal->data, v->data, (size_t)shape_byte_size(&v->shape));
    b->literal = arg->literal;
    arg->literal = NULL;
    literal_free(v);
    char msg[96];
    snprintf(msg, sizeof msg, "execute: a result reuses donated argument %zu", i);
    say(c, KILN_PLUGIN_LOG_DEBUG, msg);
    return b;
  }
  return wrap(v);
}

static kiln_plugin_error *ex_execute(kiln_plugin_execute_args *a) {
  a->n_results = 0;
  kiln_plugin_executable *e = a->executable;
  hlo_literal **lits = malloc((a->n_args ? a->n_args : 1) * sizeof *lits);
  if (!lits) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < a->n_args; i++) {
    lits[i] = a->args[i]->literal;
    if (!lits[i]) {
      free(lits);
      return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "an argument was donated to an earlier execute");
    }
  }
  hlo_literal *out = NULL;
  kiln_status s = eval_module(e->module, lits, (int)a->n_args, &out);
  free(lits);
  if (s) return from_status(s);
  /* An array result is handed over (result_buffer takes it); a tuple's elements are
   * copied out and the tuple freed here. */
  bool tuple = shape_is_tuple(&out->shape);
  size_t n = tuple ? (size_t)out->shape.n_elems : 1;
  if (n > a->max_results) {
    literal_free(out);
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "more results than the host has room for");
  }
  for (size_t i = 0; i < n; i++) {
    hlo_literal *v = tuple ? literal_clone(out->tuple[i]) : out;
    a->results[i] = v ? result_buffer(a->client, v, a) : NULL;
    if (!a->results[i]) {
      for (size_t k = 0; k < i; k++) ex_buffer_destroy(a->client, a->results[k]);
      if (tuple) literal_free(out);
      return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  if (tuple) literal_free(out);
  a->n_results = n;
  return NULL;
}

/* ---- buffers ---- */

static kiln_plugin_error *ex_buffer_from_host(kiln_plugin_buffer_from_host_args *a) {
  hlo_type t;
  if (a->device != 0) return make_error(KILN_PLUGIN_ERR_NOT_FOUND, "no such device");
  if (!type_from_dtype(a->dtype, &t)) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "unknown dtype");
  if (a->rank > KILN_PLUGIN_MAX_RANK || a->rank > HLO_MAX_RANK)
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "rank too large");
  int64_t d[HLO_MAX_RANK];
  for (size_t i = 0; i < a->rank; i++) d[i] = (int64_t)a->dims[i];
  hlo_shape shape = shape_make(t, (int)a->rank, d);
  if ((size_t)shape_byte_size(&shape) != a->n_bytes)
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "byte size does not match the shape");
  hlo_literal *l;
  kiln_status s = literal_create(&shape, &l);
  if (s) return from_status(s);
  if (a->n_bytes && a->data) memcpy(l->data, a->data, a->n_bytes);
  kiln_plugin_buffer *b = wrap(l);
  if (!b) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  a->buffer = b;
  return NULL;
}

static kiln_plugin_error *ex_buffer_shape(kiln_plugin_buffer_shape_args *a) {
  if (!a->buffer->literal) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "the buffer was donated");
  const hlo_shape *s = &a->buffer->literal->shape;
  a->dtype = dtype_from_type(s->type);
  a->rank = (size_t)s->rank;
  for (int i = 0; i < s->rank; i++) a->dims[i] = (size_t)s->dims[i];
  a->device = 0;
  return NULL;
}

static kiln_plugin_error *ex_buffer_to_host(kiln_plugin_buffer_to_host_args *a) {
  const hlo_literal *l = a->buffer->literal;
  if (!l) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "the buffer was donated");
  if ((size_t)shape_byte_size(&l->shape) != a->n_bytes)
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "byte size does not match the buffer");
  if (a->n_bytes) memcpy(a->dst, l->data, a->n_bytes);
  return NULL;
}

static const kiln_plugin_api example_api = {
    sizeof(kiln_plugin_api),
    KILN_PLUGIN_API_MAJOR,
    KILN_PLUGIN_API_MINOR,
    "example",
    "2.0",
    ex_error_code,
    ex_error_message,
    ex_error_destroy,
    ex_client_create,
    ex_client_destroy,
    ex_device_count,
    ex_device_info,
    ex_compile,
    ex_executable_destroy,
    ex_execute,
    ex_buffer_from_host,
    ex_buffer_to_host,
    ex_buffer_shape,
    ex_buffer_destroy,
    ex_op_supported,
    NULL, /* instruction_supported: the matrix is exact for this subset */
};

/* Nothing to check or discover here: the host has judged the manifest's ABI already,
 * and device discovery belongs in client_create. */
KILN_PLUGIN_EXPORT kiln_plugin_error *kiln_plugin_init(const kiln_plugin_api **api) {
  *api = &example_api;
  return NULL;
}
