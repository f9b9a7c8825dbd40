/* The example plugin: a device named `example`, built the way an outside vendor would
 * build one — against include/kiln/plugin.h only, with kiln's HLO layer and evaluator
 * linked in statically and hidden, so the library exports nothing but
 * kiln_plugin_init. It supports a deliberate subset of HLO (elementwise, reduce, dot,
 * broadcast/reshape/transpose, constant/parameter/tuple/get-tuple-element, and not
 * convolution among others), and its op_supported matrix says exactly that, so the
 * host's placer and `kiln conformance` see "unsupported" rather than "wrong" for the
 * rest. Execution parses the HLO text the host sends and runs kiln's evaluator on it. */
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

struct kiln_plugin_executable {
  hlo_module *module;
};

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

static int ex_device_count(void) { return 1; }

static kiln_plugin_error *ex_device_info(int device, kiln_plugin_device_info *out) {
  if (device != 0) return make_error(KILN_PLUGIN_ERR_NOT_FOUND, "no such device");
  if (out->struct_size >= offsetof(kiln_plugin_device_info, name) + sizeof out->name) out->name = "example";
  if (out->struct_size >= offsetof(kiln_plugin_device_info, description) + sizeof out->description)
    out->description = "example plugin (kiln evaluator inside; no convolution)";
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

static int ex_op_supported(int device, const char *opcode, int dtype) {
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
      if (!ex_op_supported(0, op, dtype_from_type(ins->shape.type)) || !eval_supports(ins))
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

static kiln_plugin_error *ex_compile(int device, const char *format, const char *text, size_t len,
                                     const kiln_plugin_option *options, size_t n_options,
                                     kiln_plugin_executable **out) {
  const char *rejected = NULL;
  for (size_t i = 0; i < n_options; i++)
    if (options[i].struct_size >= sizeof(kiln_plugin_option) && strcmp(options[i].key, "example.reject_opcodes") == 0)
      rejected = options[i].value;
  if (device != 0) return make_error(KILN_PLUGIN_ERR_NOT_FOUND, "no such device");
  if (strcmp(format, KILN_PLUGIN_FORMAT_HLO_TEXT) != 0)
    return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "only hlo-text modules are accepted");
  hlo_module *m = NULL;
  kiln_status s = hlo_parse(text, len, "<plugin module>", &m);
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
  *out = e;
  return NULL;
}

static void ex_executable_destroy(kiln_plugin_executable *e) {
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

static kiln_plugin_error *ex_execute(kiln_plugin_executable *e, kiln_plugin_buffer *const *args, size_t n_args,
                                     kiln_plugin_buffer **results, size_t max_results, size_t *n_results) {
  *n_results = 0;
  hlo_literal **lits = malloc((n_args ? n_args : 1) * sizeof *lits);
  if (!lits) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < n_args; i++) lits[i] = args[i]->literal;
  hlo_literal *out = NULL;
  kiln_status s = eval_module(e->module, lits, (int)n_args, &out);
  free(lits);
  if (s) return from_status(s);
  size_t n = shape_is_tuple(&out->shape) ? (size_t)out->shape.n_elems : 1;
  if (n > max_results) {
    literal_free(out);
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "more results than the host has room for");
  }
  if (shape_is_tuple(&out->shape)) {
    for (size_t i = 0; i < n; i++) {
      results[i] = wrap(literal_clone(out->tuple[i]));
      if (!results[i]) {
        for (size_t k = 0; k < i; k++) {
          literal_free(results[k]->literal);
          free(results[k]);
        }
        literal_free(out);
        return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
      }
    }
    literal_free(out);
  } else {
    results[0] = wrap(out);
    if (!results[0]) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  *n_results = n;
  return NULL;
}

/* ---- buffers ---- */

static kiln_plugin_error *ex_buffer_from_host(int device, int dtype, const size_t *dims, size_t rank,
                                              const void *data, size_t n_bytes, kiln_plugin_buffer **out) {
  hlo_type t;
  if (!type_from_dtype(dtype, &t)) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "unknown dtype");
  if (rank > KILN_PLUGIN_MAX_RANK) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "rank too large");
  int64_t d[HLO_MAX_RANK];
  for (size_t i = 0; i < rank; i++) d[i] = (int64_t)dims[i];
  hlo_shape shape = shape_make(t, (int)rank, d);
  if ((size_t)shape_byte_size(&shape) != n_bytes)
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "byte size does not match the shape");
  hlo_literal *l;
  kiln_status s = literal_create(&shape, &l);
  if (s) return from_status(s);
  if (n_bytes) memcpy(l->data, data, n_bytes);
  kiln_plugin_buffer *b = wrap(l);
  if (!b) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  *out = b;
  return NULL;
}

static kiln_plugin_error *ex_buffer_shape(const kiln_plugin_buffer *b, int *dtype, size_t *dims, size_t *rank) {
  const hlo_shape *s = &b->literal->shape;
  *dtype = dtype_from_type(s->type);
  *rank = (size_t)s->rank;
  for (int i = 0; i < s->rank; i++) dims[i] = (size_t)s->dims[i];
  return NULL;
}

static kiln_plugin_error *ex_buffer_to_host(const kiln_plugin_buffer *b, void *dst, size_t n_bytes) {
  if ((size_t)shape_byte_size(&b->literal->shape) != n_bytes)
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "byte size does not match the buffer");
  if (n_bytes) memcpy(dst, b->literal->data, n_bytes);
  return NULL;
}

static void ex_buffer_destroy(kiln_plugin_buffer *b) {
  if (!b) return;
  literal_free(b->literal);
  free(b);
}

static const kiln_plugin_api example_api = {
    sizeof(kiln_plugin_api),
    KILN_PLUGIN_API_MAJOR,
    KILN_PLUGIN_API_MINOR,
    "example",
    "1.0",
    ex_error_code,
    ex_error_message,
    ex_error_destroy,
    ex_device_count,
    ex_device_info,
    ex_compile,
    ex_executable_destroy,
    ex_execute,
    ex_buffer_from_host,
    ex_buffer_shape,
    ex_buffer_to_host,
    ex_buffer_destroy,
    ex_op_supported,
    NULL, /* instruction_supported: the matrix is exact for this subset */
    NULL, /* shutdown: nothing global to release */
};

KILN_PLUGIN_EXPORT kiln_plugin_error *kiln_plugin_init(const kiln_plugin_host *host, const kiln_plugin_api **api) {
  *api = &example_api;
  if (!host || host->api_major != KILN_PLUGIN_API_MAJOR)
    return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "host speaks a different ABI major");
  return NULL;
}
