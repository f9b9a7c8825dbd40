/* Shape inference for every HLO opcode, following XLA's operation semantics and its
 * ShapeInference/HloVerifier rules. One function per opcode family computes the result
 * shape from operand shapes, attributes and called computations' signatures; each
 * rejects what XLA rejects (mismatched dims or types, out-of-range or repeated
 * dimension numbers, bad windows, reducers with the wrong signature) with a message that
 * starts "NAME (OPCODE): " and quotes the shapes involved. Nothing here trusts the
 * instruction: operand counts, attribute list lengths and called computations are all
 * checked before they are indexed, and size arithmetic is overflow-checked, because
 * every field can come straight from a user's HLO file. Where XLA's shape inference is
 * looser than the HLO verifier (implicit broadcasting, mixed precision in elementwise
 * ops) we follow the verifier: elementwise operands must agree exactly; likewise a
 * reducer's accumulator, input and init types must be equal (XLA tolerates a different
 * float precision there), and broadcast dimensions need only be distinct, not sorted,
 * as XLA's HLO verifier allows. */
#include "hlo/shape_inference.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

typedef struct infer_ctx {
  arena *a;
  const hlo_instr *ins;
} infer_ctx;

/* ------------------------------------------------------------------ messages ---- */

static kiln_status fail(const infer_ctx *x, const char *fmt, ...) KILN_PRINTF(2, 3);
static kiln_status fail(const infer_ctx *x, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *msg = malloc(n > 0 ? (size_t)n + 1 : 1);
  if (!msg) abort();
  vsnprintf(msg, n > 0 ? (size_t)n + 1 : 1, fmt, ap2);
  va_end(ap2);
  const hlo_instr *ins = x->ins;
  kiln_status s = status_error(KILN_INVALID_ARGUMENT, "%s (%s): %s", ins->name ? ins->name : "<unnamed>",
                               hlo_opcode_name(ins->op), msg);
  free(msg);
  return s;
}

/* Shapes print without layouts: layouts never change what an op computes, and they
 * would only clutter a dims mismatch. Strings live in the arena (error paths only). */
static const char *shp(const infer_ctx *x, const hlo_shape *s) {
  strbuf b;
  strbuf_init(&b);
  shape_print(&b, s, false);
  char *r = arena_strdup(x->a, strbuf_cstr(&b));
  strbuf_free(&b);
  return r;
}

static const char *ints_str(const infer_ctx *x, const int64_t *v, int n) {
  strbuf b;
  strbuf_init(&b);
  strbuf_putc(&b, '{');
  for (int i = 0; i < n; i++) strbuf_printf(&b, "%s%lld", i ? "," : "", (long long)v[i]);
  strbuf_putc(&b, '}');
  char *r = arena_strdup(x->a, strbuf_cstr(&b));
  strbuf_free(&b);
  return r;
}

static const char *list_str(const infer_ctx *x, const hlo_ints *l) { return ints_str(x, l->v, l->n); }

/* ------------------------------------------------------------ shape helpers ---- */

/* Dims are zero when DIMS is NULL (filled in by the caller). */
static hlo_shape array_shape(hlo_type type, int rank, const int64_t *dims) {
  hlo_shape s = shape_make(type, 0, NULL);
  s.rank = rank;
  if (dims)
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
  return s;
}

/* Same dims and dynamic flags as S, another element type, no layout. */
static hlo_shape with_type(const hlo_shape *s, hlo_type type) {
  hlo_shape r = shape_make(type, s->rank, s->dims);
  for (int i = 0; i < s->rank; i++) r.dynamic[i] = s->dynamic[i];
  return r;
}

static hlo_shape strip_layout(arena *a, const hlo_shape *s) {
  hlo_shape r = shape_clone(a, s);
  r.has_layout = false;
  r.layout_extra = NULL;
  if (r.type == HLO_TUPLE)
    for (int i = 0; i < r.n_elems; i++) r.elems[i] = strip_layout(a, &s->elems[i]);
  return r;
}

/* Tuple shape over N shapes whose pointers are given; elements deep-copied into A. */
static hlo_shape make_tuple(arena *a, int n, const hlo_shape *const *elems) {
  hlo_shape t;
  memset(&t, 0, sizeof t);
  t.type = HLO_TUPLE;
  t.n_elems = n;
  t.elems = arena_calloc(a, n ? (size_t)n : 1, sizeof(hlo_shape));
  for (int i = 0; i < n; i++) t.elems[i] = strip_layout(a, elems[i]);
  return t;
}

/* Indices are integers kiln computes with: s4/u4 are storage types (types.h). */
static bool is_index_type(hlo_type t) { return hlo_type_is_int(t) && !hlo_type_is_narrow(t); }

static bool is_scalar_of(const hlo_shape *s, hlo_type t) { return s->type == t && s->rank == 0; }
static bool is_scalar(const hlo_shape *s) { return shape_is_array(s) && s->rank == 0; }

hlo_type hlo_higher_precision_type(hlo_type a, hlo_type b) {
  if (a == b) return a;
  if (hlo_type_is_float(a) != hlo_type_is_float(b)) return hlo_type_is_float(a) ? a : b;
  if ((a == HLO_PRED) != (b == HLO_PRED)) return a == HLO_PRED ? b : a;
  if (hlo_type_is_float(a) && hlo_type_exponent_bits(a) != hlo_type_exponent_bits(b))
    return hlo_type_exponent_bits(a) > hlo_type_exponent_bits(b) ? a : b;
  return hlo_type_size(b) > hlo_type_size(a) ? b : a;
}

static kiln_status validate(const hlo_shape *s, bool check_layout, int depth) {
  if ((unsigned)s->type >= HLO_TYPE_COUNT) return ERR_INVALID("shape has an unknown element type (%d)", (int)s->type);
  if (s->type == HLO_TUPLE) {
    if (depth > 64) return ERR_INVALID("tuple shape nested more than 64 deep");
    if (s->n_elems < 0 || (s->n_elems > 0 && !s->elems))
      return ERR_INVALID("malformed tuple shape (%d elements)", s->n_elems);
    for (int i = 0; i < s->n_elems; i++) {
      kiln_status st = validate(&s->elems[i], check_layout, depth + 1);
      if (st) return status_wrap(st, "tuple element %d", i);
    }
    return NULL;
  }
  if (s->rank < 0 || s->rank > HLO_MAX_RANK)
    return ERR_INVALID("rank %d is outside [0, %d]", s->rank, HLO_MAX_RANK);
  if (s->type == HLO_TOKEN) {
    if (s->rank != 0) return ERR_INVALID("a token shape cannot have dimensions (rank %d)", s->rank);
    return NULL;
  }
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) return ERR_INVALID("dimension %d has negative size %lld", i, (long long)s->dims[i]);
  if (shape_elements(s) < 0) return ERR_INVALID("element count overflows 64 bits");
  if (check_layout && s->has_layout) {
    bool seen[HLO_MAX_RANK] = {false};
    for (int i = 0; i < s->rank; i++) {
      int64_t d = s->minor_to_major[i];
      if (d < 0 || d >= s->rank || seen[d]) {
        char *t = shape_to_string(s);
        kiln_status st = ERR_INVALID("layout of %s is not a permutation of 0..%d", t, s->rank - 1);
        free(t);
        return st;
      }
      seen[d] = true;
    }
  }
  return NULL;
}

kiln_status hlo_shape_validate(const hlo_shape *s, bool check_layout) { return validate(s, check_layout, 0); }

/* ---------------------------------------------------------- checked arithmetic ---- */

static bool add_ovf(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static bool mul_ovf(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

/* ---------------------------------------------------------- operand checks ---- */

static const hlo_shape *opnd(const infer_ctx *x, int i) { return &x->ins->operands[i]->shape; }

static kiln_status expect_array(const infer_ctx *x, const hlo_shape *s, const char *what) {
  if (!shape_is_array(s)) return fail(x, "%s must be an array, got %s", what, shp(x, s));
  return NULL;
}

static kiln_status expect_operands(const infer_ctx *x, int n) {
  if (x->ins->n_operands != n) return fail(x, "expects %d operands, got %d", n, x->ins->n_operands);
  return NULL;
}

static kiln_status expect_min_operands(const infer_ctx *x, int n) {
  if (x->ins->n_operands < n) return fail(x, "expects at least %d operands, got %d", n, x->ins->n_operands);
  return NULL;
}

static kiln_status expect_called(const infer_ctx *x, int n) {
  if (x->ins->n_called != n)
    return fail(x, "expects %d called computation%s, got %d", n, n == 1 ? "" : "s", x->ins->n_called);
  return NULL;
}

typedef enum type_class {
  TC_ANY, TC_FLOAT, TC_INT, TC_SIGNED, TC_NUMERIC, TC_PRED_OR_INT
} type_class;

static bool in_class(hlo_type t, type_class c) {
  switch (c) {
    case TC_ANY: return hlo_type_is_array(t);
    case TC_FLOAT: return hlo_type_is_float(t);
    case TC_INT: return hlo_type_is_int(t);
    case TC_SIGNED: return hlo_type_is_signed_int(t) || hlo_type_is_float(t);
    case TC_NUMERIC: return hlo_type_is_int(t) || hlo_type_is_float(t);
    case TC_PRED_OR_INT: return t == HLO_PRED || hlo_type_is_int(t);
  }
  return false;
}

static const char *class_desc(type_class c) {
  switch (c) {
    case TC_ANY: return "an array type";
    case TC_FLOAT: return "a floating-point type (f16, bf16, f32, f64)";
    case TC_INT: return "an integer type";
    case TC_SIGNED: return "a signed integer or floating-point type";
    case TC_NUMERIC: return "an integer or floating-point type (not pred)";
    case TC_PRED_OR_INT: return "pred or an integer type";
  }
  return "?";
}

static kiln_status expect_class(const infer_ctx *x, const hlo_shape *s, type_class c, const char *what) {
  if (!in_class(s->type, c))
    return fail(x, "%s has element type %s, but the op needs %s", what, hlo_type_name(s->type), class_desc(c));
  return NULL;
}

static bool list_contains(const hlo_ints *l, int64_t v) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v) return true;
  return false;
}

/* Every entry in [0, bound), no repeats, and ascending when `sorted`. */
static kiln_status check_dim_list(const infer_ctx *x, const hlo_ints *l, int64_t bound, const char *what,
                                  bool sorted) {
  if (l->n < 0 || (l->n > 0 && !l->v)) return fail(x, "%s is malformed", what);
  for (int i = 0; i < l->n; i++) {
    if (l->v[i] < 0 || l->v[i] >= bound)
      return fail(x, "%s=%s: dimension %lld is out of range [0, %lld)", what, list_str(x, l), (long long)l->v[i],
                  (long long)bound);
    for (int j = 0; j < i; j++)
      if (l->v[j] == l->v[i]) return fail(x, "%s=%s repeats dimension %lld", what, list_str(x, l), (long long)l->v[i]);
    if (sorted && i > 0 && l->v[i - 1] > l->v[i]) return fail(x, "%s=%s must be sorted", what, list_str(x, l));
  }
  return NULL;
}

static kiln_status check_disjoint(const infer_ctx *x, const hlo_ints *a, const char *an, const hlo_ints *b,
                                  const char *bn) {
  for (int i = 0; i < a->n; i++)
    if (list_contains(b, a->v[i]))
      return fail(x, "dimension %lld is in both %s=%s and %s=%s", (long long)a->v[i], an, list_str(x, a), bn,
                  list_str(x, b));
  return NULL;
}

/* --------------------------------------------------- called computations ---- */

static kiln_status check_comp(const infer_ctx *x, const hlo_computation *c, const char *role) {
  if (!c) return fail(x, "%s computation is missing", role);
  if (!c->root) return fail(x, "%s computation %s has no root instruction", role, c->name);
  if (c->n_params < 0 || (c->n_params > 0 && !c->params))
    return fail(x, "%s computation %s has malformed parameters", role, c->name);
  for (int i = 0; i < c->n_params; i++)
    if (!c->params[i]) return fail(x, "%s computation %s has no parameter %d", role, c->name, i);
  return NULL;
}

static const hlo_shape *param_shape(const hlo_computation *c, int i) { return &c->params[i]->shape; }

/* XLA's reducer contract, shared by reduce, reduce-window, scatter and
 * select-and-scatter: (acc_0..acc_{n-1}, x_0..x_{n-1}) -> acc scalar (n == 1) or tuple
 * of n scalars; every accumulator and input of slot i has element type types[i]. On
 * success *tuple_result says whether the root is a tuple. */
static kiln_status check_reducer(const infer_ctx *x, const hlo_computation *c, int n, const hlo_type *acc_types,
                                 const hlo_type *in_types, const char *role, bool *tuple_result) {
  TRY(check_comp(x, c, role));
  if (c->n_params != 2 * n)
    return fail(x, "%s computation %s must take %d parameters (%d accumulator%s, then %d input%s), takes %d", role,
                c->name, 2 * n, n, n == 1 ? "" : "s", n, n == 1 ? "" : "s", c->n_params);
  const hlo_shape *root = &c->root->shape;
  if (root->type == HLO_TUPLE) {
    if (root->n_elems != n)
      return fail(x, "%s computation %s must return %d value%s, returns %s", role, c->name, n, n == 1 ? "" : "s",
                  shp(x, root));
  } else if (n != 1 || !shape_is_array(root)) {
    return fail(x, "%s computation %s must return a tuple of %d scalars, returns %s", role, c->name, n, shp(x, root));
  }
  *tuple_result = root->type == HLO_TUPLE;
  for (int i = 0; i < n; i++) {
    const hlo_shape *acc = root->type == HLO_TUPLE ? &root->elems[i] : root;
    if (!is_scalar(acc))
      return fail(x, "%s computation %s must return scalars, returns %s", role, c->name, shp(x, root));
    if (acc->type != acc_types[i])
      return fail(x, "%s computation %s returns %s for slot %d, but the init value is %s", role, c->name,
                  shp(x, acc), i, hlo_type_name(acc_types[i]));
    if (!is_scalar_of(param_shape(c, i), acc->type))
      return fail(x, "%s computation %s: accumulator parameter %d is %s, expected %s[]", role, c->name, i,
                  shp(x, param_shape(c, i)), hlo_type_name(acc->type));
    if (!is_scalar_of(param_shape(c, n + i), in_types[i]))
      return fail(x, "%s computation %s: input parameter %d is %s, expected %s[]", role, c->name, n + i,
                  shp(x, param_shape(c, n + i)), hlo_type_name(in_types[i]));
    if (in_types[i] != acc_types[i])
      return fail(x, "%s computation %s: input %d has type %s but its accumulator is %s", role, c->name, i,
                  hlo_type_name(in_types[i]), hlo_type_name(acc_types[i]));
  }
  return NULL;
}

/* ---------------------------------------------------------------- windows ---- */

static kiln_status window_out_dim(const infer_ctx *x, int64_t base, const hlo_window_dim *w, int i,
                                  int64_t *out) {
  if (w->size <= 0) return fail(x, "window dimension %d has size %lld; it must be positive", i, (long long)w->size);
  if (w->stride <= 0)
    return fail(x, "window dimension %d has stride %lld; it must be positive", i, (long long)w->stride);
  if (w->lhs_dilate < 1 || w->rhs_dilate < 1)
    return fail(x, "window dimension %d has dilation lhs=%lld rhs=%lld; dilations must be >= 1", i,
                (long long)w->lhs_dilate, (long long)w->rhs_dilate);
  int64_t dilated_base = 0, padded, dilated_window;
  if (base > 0) {
    if (mul_ovf(base - 1, w->lhs_dilate, &dilated_base) || add_ovf(dilated_base, 1, &dilated_base))
      return fail(x, "window dimension %d: dilated size overflows", i);
  }
  if (add_ovf(dilated_base, w->pad_lo, &padded) || add_ovf(padded, w->pad_hi, &padded))
    return fail(x, "window dimension %d: padded size overflows", i);
  if (padded < 0)
    return fail(x, "window dimension %d: padding %lld_%lld makes size %lld negative", i, (long long)w->pad_lo,
                (long long)w->pad_hi, (long long)dilated_base);
  if (mul_ovf(w->size - 1, w->rhs_dilate, &dilated_window) || add_ovf(dilated_window, 1, &dilated_window))
    return fail(x, "window dimension %d: dilated window size overflows", i);
  *out = dilated_window > padded ? 0 : (padded - dilated_window) / w->stride + 1;
  return NULL;
}

static kiln_status window_output(const infer_ctx *x, const hlo_shape *base, const hlo_window *w, hlo_type type,
                                 hlo_shape *out) {
  if (w->rank != base->rank)
    return fail(x, "window has %d dimensions but the operand %s has rank %d", w->rank, shp(x, base), base->rank);
  int64_t dims[HLO_MAX_RANK];
  for (int i = 0; i < base->rank; i++) TRY(window_out_dim(x, base->dims[i], &w->dims[i], i, &dims[i]));
  *out = array_shape(type, base->rank, dims);
  return NULL;
}

/* ---------------------------------------------------------- raw attributes ---- */

static const char *raw_attr(const hlo_instr *ins, const char *key) {
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (ins->raw_attrs[i].key && strcmp(ins->raw_attrs[i].key, key) == 0) return ins->raw_attrs[i].value;
  return NULL;
}

static kiln_status raw_int_attr(const infer_ctx *x, const char *key, int64_t *out) {
  const char *v = raw_attr(x->ins, key);
  if (!v) return fail(x, "missing attribute %s", key);
  char *end;
  long long r = strtoll(v, &end, 10);
  if (end == v || *end) return fail(x, "attribute %s=%s is not an integer", key, v);
  *out = r;
  return NULL;
}

/* ------------------------------------------------------ elementwise ops ---- */

static bool unary_class(hlo_opcode op, type_class *c) {
  switch (op) {
    case HLO_OP_ABS: case HLO_OP_SIGN:
      *c = TC_SIGNED; return true;
    case HLO_OP_NEGATE:
      *c = TC_NUMERIC; return true;
    case HLO_OP_CEIL: case HLO_OP_FLOOR: case HLO_OP_ROUND_NEAREST_AFZ: case HLO_OP_ROUND_NEAREST_EVEN:
    case HLO_OP_COSINE: case HLO_OP_SINE: case HLO_OP_TAN: case HLO_OP_EXP: case HLO_OP_EXPM1:
    case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC: case HLO_OP_RSQRT: case HLO_OP_SQRT:
    case HLO_OP_CBRT: case HLO_OP_TANH: case HLO_OP_ERF: case HLO_OP_IS_FINITE:
      *c = TC_FLOAT; return true;
    case HLO_OP_NOT:
      *c = TC_PRED_OR_INT; return true;
    case HLO_OP_CLZ: case HLO_OP_POPCNT:
      *c = TC_INT; return true;
    default:
      return false;
  }
}

static bool binary_class(hlo_opcode op, type_class *c) {
  switch (op) {
    case HLO_OP_ADD: case HLO_OP_MULTIPLY: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_COMPARE:
      *c = TC_ANY; return true;
    case HLO_OP_SUBTRACT: case HLO_OP_DIVIDE: case HLO_OP_REMAINDER: case HLO_OP_POWER:
      *c = TC_NUMERIC; return true;
    case HLO_OP_ATAN2:
      *c = TC_FLOAT; return true;
    case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR:
      *c = TC_PRED_OR_INT; return true;
    case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_ARITHMETIC: case HLO_OP_SHIFT_RIGHT_LOGICAL:
      *c = TC_INT; return true;
    default:
      return false;
  }
}

static kiln_status infer_unary(const infer_ctx *x, type_class c, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_class(x, s, c, "operand"));
  *out = with_type(s, x->ins->op == HLO_OP_IS_FINITE ? HLO_PRED : s->type);
  return NULL;
}

static kiln_status check_compare_type(const infer_ctx *x, hlo_type t) {
  switch (x->ins->compare_type) {
    case HLO_CMP_DEFAULT:
      return NULL;
    case HLO_CMP_FLOAT:
    case HLO_CMP_TOTALORDER:
      if (!hlo_type_is_float(t))
        return fail(x, "comparison type FLOAT/TOTALORDER needs floating-point operands, got %s", hlo_type_name(t));
      return NULL;
    case HLO_CMP_SIGNED:
      if (!hlo_type_is_signed_int(t))
        return fail(x, "comparison type SIGNED needs signed integer operands, got %s", hlo_type_name(t));
      return NULL;
    case HLO_CMP_UNSIGNED:
      if (!hlo_type_is_unsigned_int(t) && t != HLO_PRED)
        return fail(x, "comparison type UNSIGNED needs unsigned integer or pred operands, got %s", hlo_type_name(t));
      return NULL;
  }
  return fail(x, "unknown comparison type %d", (int)x->ins->compare_type);
}

static kiln_status infer_binary(const infer_ctx *x, type_class c, hlo_shape *out) {
  const hlo_shape *l = opnd(x, 0), *r = opnd(x, 1);
  TRY(expect_array(x, l, "lhs"));
  TRY(expect_array(x, r, "rhs"));
  if (l->type != r->type) return fail(x, "operand element types differ: %s and %s", shp(x, l), shp(x, r));
  if (!shape_same_dims(l, r)) return fail(x, "operand shapes %s and %s differ", shp(x, l), shp(x, r));
  TRY(expect_class(x, l, c, "operand"));
  if (x->ins->op == HLO_OP_COMPARE) {
    if ((unsigned)x->ins->direction > HLO_DIR_GE)
      return fail(x, "unknown comparison direction %d", (int)x->ins->direction);
    TRY(check_compare_type(x, l->type));
  }
  *out = with_type(l, x->ins->op == HLO_OP_COMPARE ? HLO_PRED : l->type);
  return NULL;
}

static kiln_status infer_select(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *p = opnd(x, 0), *t = opnd(x, 1), *f = opnd(x, 2);
  TRY(expect_array(x, p, "predicate"));
  TRY(expect_array(x, t, "on_true"));
  TRY(expect_array(x, f, "on_false"));
  if (p->type != HLO_PRED) return fail(x, "predicate must have element type pred, got %s", shp(x, p));
  if (!shape_compatible(t, f)) return fail(x, "on_true %s and on_false %s differ", shp(x, t), shp(x, f));
  if (p->rank != 0 && !shape_same_dims(p, t))
    return fail(x, "predicate %s must be a scalar or have the dims of %s", shp(x, p), shp(x, t));
  *out = with_type(t, t->type);
  return NULL;
}

static kiln_status infer_clamp(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *lo = opnd(x, 0), *v = opnd(x, 1), *hi = opnd(x, 2);
  TRY(expect_array(x, lo, "min"));
  TRY(expect_array(x, v, "operand"));
  TRY(expect_array(x, hi, "max"));
  if (lo->type != v->type || hi->type != v->type)
    return fail(x, "element types of min %s, operand %s and max %s differ", shp(x, lo), shp(x, v), shp(x, hi));
  if ((lo->rank != 0 && !shape_same_dims(lo, v)) || (hi->rank != 0 && !shape_same_dims(hi, v)))
    return fail(x, "min %s and max %s must be scalars or have the dims of the operand %s", shp(x, lo), shp(x, hi),
                shp(x, v));
  *out = with_type(v, v->type);
  return NULL;
}

static kiln_status infer_convert(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  hlo_type t = x->ins->shape.type;
  if (!hlo_type_is_array(t)) return fail(x, "cannot convert %s to %s", shp(x, s), hlo_type_name(t));
  *out = with_type(s, t);
  return NULL;
}

static kiln_status infer_bitcast_convert(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  hlo_type t = x->ins->shape.type;
  if (!hlo_type_is_array(t)) return fail(x, "cannot bitcast-convert %s to %s", shp(x, s), hlo_type_name(t));
  if (hlo_type_bit_width(s->type) < 8 || hlo_type_bit_width(t) < 8)
    return fail(x, "cannot bitcast-convert %s to %s: kiln stores 4- and 2-bit types one per byte, where XLA packs them",
                shp(x, s), hlo_type_name(t));
  size_t in = hlo_type_size(s->type), outsz = hlo_type_size(t);
  *out = with_type(s, t);
  if (in == outsz) return NULL;
  size_t big = in > outsz ? in : outsz, small = in > outsz ? outsz : in;
  if (big % small) return fail(x, "cannot bitcast %s to %s: bit widths do not divide", shp(x, s), hlo_type_name(t));
  int64_t ratio = (int64_t)(big / small);
  if (in > outsz) {
    if (s->rank >= HLO_MAX_RANK)
      return fail(x, "bitcast of %s to %s would exceed rank %d", shp(x, s), hlo_type_name(t), HLO_MAX_RANK);
    out->dims[out->rank] = ratio;
    out->dynamic[out->rank] = false;
    out->rank++;
  } else {
    if (s->rank < 1 || s->dims[s->rank - 1] != ratio)
      return fail(x, "bitcast of %s to the wider %s needs a last dimension of size %lld", shp(x, s), hlo_type_name(t),
                  (long long)ratio);
    out->rank--;
  }
  return NULL;
}

static kiln_status infer_reduce_precision(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_class(x, s, TC_FLOAT, "operand"));
  if (x->ins->exponent_bits < 1) return fail(x, "exponent_bits=%lld must be >= 1", (long long)x->ins->exponent_bits);
  if (x->ins->mantissa_bits < 0) return fail(x, "mantissa_bits=%lld must be >= 0", (long long)x->ins->mantissa_bits);
  *out = with_type(s, s->type);
  return NULL;
}

/* ------------------------------------------------------- shape-changing ops ---- */

static kiln_status infer_broadcast(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0), *target = &x->ins->shape;
  TRY(expect_array(x, s, "operand"));
  if (!shape_is_array(target)) return fail(x, "result shape %s must be an array", shp(x, target));
  const hlo_ints *d = &x->ins->dimensions;
  if (d->n != s->rank)
    return fail(x, "dimensions=%s has %d entries but the operand %s has rank %d", list_str(x, d), d->n, shp(x, s),
                s->rank);
  TRY(check_dim_list(x, d, target->rank, "dimensions", false));
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] != target->dims[d->v[i]])
      return fail(x,
                  "operand dimension %d (size %lld) maps to result dimension %lld (size %lld): "
                  "operand %s, result %s",
                  i, (long long)s->dims[i], (long long)d->v[i], (long long)target->dims[d->v[i]], shp(x, s),
                  shp(x, target));
  *out = with_type(target, s->type);
  return NULL;
}

static kiln_status infer_reshape(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0), *target = &x->ins->shape;
  TRY(expect_array(x, s, "operand"));
  if (!shape_is_array(target)) return fail(x, "result shape %s must be an array", shp(x, target));
  if (shape_elements(s) != shape_elements(target))
    return fail(x, "cannot reshape %s (%lld elements) to %s (%lld elements)", shp(x, s), (long long)shape_elements(s),
                shp(x, target), (long long)shape_elements(target));
  *out = with_type(target, s->type);
  return NULL;
}

static kiln_status infer_dynamic_reshape(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  const hlo_shape *s = opnd(x, 0), *target = &x->ins->shape;
  TRY(expect_array(x, s, "operand"));
  if (!shape_is_array(target)) return fail(x, "result shape %s must be an array", shp(x, target));
  if (x->ins->n_operands != 1 + target->rank)
    return fail(x, "expects the operand and %d dimension sizes, got %d operands", target->rank, x->ins->n_operands);
  for (int i = 1; i < x->ins->n_operands; i++)
    if (!is_scalar_of(opnd(x, i), HLO_S32))
      return fail(x, "dimension size operand %d must be s32[], got %s", i, shp(x, opnd(x, i)));
  if (shape_elements(s) != shape_elements(target))
    return fail(x, "cannot reshape %s to the bounds %s", shp(x, s), shp(x, target));
  *out = with_type(target, s->type);
  return NULL;
}

static kiln_status infer_transpose(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  const hlo_ints *p = &x->ins->dimensions;
  if (p->n != s->rank)
    return fail(x, "dimensions=%s is not a permutation of the dimensions of %s", list_str(x, p), shp(x, s));
  TRY(check_dim_list(x, p, s->rank, "dimensions", false));
  *out = array_shape(s->type, s->rank, NULL);
  for (int i = 0; i < s->rank; i++) {
    out->dims[i] = s->dims[p->v[i]];
    out->dynamic[i] = s->dynamic[p->v[i]];
  }
  return NULL;
}

static kiln_status infer_slice(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  const hlo_instr *ins = x->ins;
  TRY(expect_array(x, s, "operand"));
  if (ins->slice_start.n != s->rank || ins->slice_limit.n != s->rank ||
      (ins->slice_stride.n != s->rank && ins->slice_stride.n != 0))
    return fail(x, "slice has %d starts, %d limits and %d strides for the operand %s of rank %d", ins->slice_start.n,
                ins->slice_limit.n, ins->slice_stride.n, shp(x, s), s->rank);
  *out = array_shape(s->type, s->rank, NULL);
  for (int i = 0; i < s->rank; i++) {
    int64_t st = ins->slice_start.v[i], li = ins->slice_limit.v[i];
    int64_t stride = ins->slice_stride.n ? ins->slice_stride.v[i] : 1;
    if (stride <= 0) return fail(x, "slice stride %lld in dimension %d must be positive", (long long)stride, i);
    if (st < 0 || st > li || li > s->dims[i])
      return fail(x, "slice [%lld:%lld] in dimension %d is outside [0:%lld] of %s", (long long)st, (long long)li, i,
                  (long long)s->dims[i], shp(x, s));
    out->dims[i] = (li - st) / stride + ((li - st) % stride != 0);
    out->dynamic[i] = out->dims[i] != 1 && s->dynamic[i];
  }
  return NULL;
}

static kiln_status check_scalar_indices(const infer_ctx *x, int first, int count) {
  const hlo_shape *t0 = NULL;
  for (int i = first; i < first + count; i++) {
    const hlo_shape *s = opnd(x, i);
    if (!shape_is_array(s) || s->rank != 0 || !is_index_type(s->type))
      return fail(x, "start index operand %d must be an integer scalar, got %s", i, shp(x, s));
    if (t0 && s->type != t0->type)
      return fail(x, "start index operands must share one type, got %s and %s", shp(x, t0), shp(x, s));
    t0 = s;
  }
  return NULL;
}

static kiln_status infer_dynamic_slice(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  if (x->ins->n_operands != 1 + s->rank)
    return fail(x, "expects the operand and %d scalar start indices for %s, got %d operands", s->rank, shp(x, s),
                x->ins->n_operands);
  TRY(check_scalar_indices(x, 1, s->rank));
  const hlo_ints *sz = &x->ins->dynamic_slice_sizes;
  if (sz->n != s->rank)
    return fail(x, "dynamic_slice_sizes=%s has %d entries for the operand %s of rank %d", list_str(x, sz), sz->n,
                shp(x, s), s->rank);
  for (int i = 0; i < s->rank; i++)
    if (sz->v[i] < 0 || sz->v[i] > s->dims[i])
      return fail(x, "dynamic_slice_sizes=%s: size %lld of dimension %d is outside [0, %lld]", list_str(x, sz),
                  (long long)sz->v[i], i, (long long)s->dims[i]);
  *out = array_shape(s->type, s->rank, sz->v);
  return NULL;
}

static kiln_status infer_dynamic_update_slice(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 2));
  const hlo_shape *s = opnd(x, 0), *u = opnd(x, 1);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_array(x, u, "update"));
  if (x->ins->n_operands != 2 + s->rank)
    return fail(x, "expects the operand, the update and %d scalar start indices, got %d operands", s->rank,
                x->ins->n_operands);
  TRY(check_scalar_indices(x, 2, s->rank));
  if (u->type != s->type) return fail(x, "update %s and operand %s element types differ", shp(x, u), shp(x, s));
  if (u->rank != s->rank) return fail(x, "update %s and operand %s ranks differ", shp(x, u), shp(x, s));
  for (int i = 0; i < s->rank; i++)
    if (u->dims[i] > s->dims[i])
      return fail(x, "update %s is larger than the operand %s in dimension %d", shp(x, u), shp(x, s), i);
  *out = with_type(s, s->type);
  return NULL;
}

static kiln_status infer_concatenate(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  const hlo_ints *d = &x->ins->dimensions;
  const hlo_shape *s0 = opnd(x, 0);
  TRY(expect_array(x, s0, "operand 0"));
  if (d->n != 1) return fail(x, "dimensions=%s must name exactly one dimension", list_str(x, d));
  int64_t cd = d->v[0];
  if (cd < 0 || cd >= s0->rank)
    return fail(x, "concatenate dimension %lld is out of range for %s", (long long)cd, shp(x, s0));
  *out = with_type(s0, s0->type);
  for (int i = 1; i < x->ins->n_operands; i++) {
    const hlo_shape *s = opnd(x, i);
    TRY(expect_array(x, s, "operand"));
    if (s->type != s0->type) return fail(x, "operand element types differ: %s and %s", shp(x, s0), shp(x, s));
    if (s->rank != s0->rank) return fail(x, "operand ranks differ: %s and %s", shp(x, s0), shp(x, s));
    for (int k = 0; k < s->rank; k++)
      if (k != cd && s->dims[k] != s0->dims[k])
        return fail(x, "operands %s and %s differ in dimension %d, which is not the concatenate dimension %lld",
                    shp(x, s0), shp(x, s), k, (long long)cd);
    if (add_ovf(out->dims[cd], s->dims[cd], &out->dims[cd])) return fail(x, "concatenated size overflows");
    out->dynamic[cd] |= s->dynamic[cd];
  }
  return NULL;
}

static kiln_status infer_pad(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0), *pv = opnd(x, 1);
  const hlo_instr *ins = x->ins;
  TRY(expect_array(x, s, "operand"));
  if (!is_scalar(pv)) return fail(x, "padding value must be a scalar, got %s", shp(x, pv));
  if (pv->type != s->type)
    return fail(x, "padding value %s and operand %s element types differ", shp(x, pv), shp(x, s));
  if (ins->pad_lo.n != s->rank || ins->pad_hi.n != s->rank || (ins->pad_interior.n != s->rank && ins->pad_interior.n))
    return fail(x, "padding has %d/%d/%d low/high/interior entries for the operand %s of rank %d", ins->pad_lo.n,
                ins->pad_hi.n, ins->pad_interior.n, shp(x, s), s->rank);
  *out = array_shape(s->type, s->rank, NULL);
  for (int i = 0; i < s->rank; i++) {
    int64_t lo = ins->pad_lo.v[i], hi = ins->pad_hi.v[i], in = ins->pad_interior.n ? ins->pad_interior.v[i] : 0;
    if (in < 0) return fail(x, "interior padding %lld in dimension %d must be >= 0", (long long)in, i);
    int64_t sz, interior = 0;
    if (s->dims[i] > 0 && mul_ovf(s->dims[i] - 1, in, &interior)) return fail(x, "padded size overflows");
    if (add_ovf(s->dims[i], interior, &sz) || add_ovf(sz, lo, &sz) || add_ovf(sz, hi, &sz))
      return fail(x, "padded size overflows");
    if (sz < 0)
      return fail(x, "padding %lld_%lld_%lld makes dimension %d of %s negative (%lld)", (long long)lo, (long long)hi,
                  (long long)in, i, shp(x, s), (long long)sz);
    out->dims[i] = sz;
    out->dynamic[i] = s->dynamic[i];
  }
  return NULL;
}

static kiln_status infer_reverse(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  TRY(check_dim_list(x, &x->ins->dimensions, s->rank, "dimensions", false));
  *out = with_type(s, s->type);
  return NULL;
}

static kiln_status infer_iota(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = &x->ins->shape;
  if (!shape_is_array(s) || s->rank < 1) return fail(x, "iota needs an array shape of rank >= 1, got %s", shp(x, s));
  if (s->type == HLO_PRED) return fail(x, "iota does not support element type pred");
  if (x->ins->iota_dimension < 0 || x->ins->iota_dimension >= s->rank)
    return fail(x, "iota_dimension=%lld is out of range for %s", (long long)x->ins->iota_dimension, shp(x, s));
  *out = with_type(s, s->type);
  return NULL;
}

/* ----------------------------------------------------------------- tuples ---- */

static kiln_status infer_tuple(const infer_ctx *x, hlo_shape *out) {
  int n = x->ins->n_operands;
  const hlo_shape **elems = arena_calloc(x->a, n ? (size_t)n : 1, sizeof *elems);
  for (int i = 0; i < n; i++) elems[i] = opnd(x, i);
  *out = make_tuple(x->a, n, elems);
  return NULL;
}

static kiln_status infer_gte(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  if (!shape_is_tuple(s)) return fail(x, "operand must be a tuple, got %s", shp(x, s));
  int64_t k = x->ins->tuple_index;
  if (k < 0 || k >= s->n_elems) return fail(x, "index=%lld is out of range for %s", (long long)k, shp(x, s));
  *out = strip_layout(x->a, &s->elems[k]);
  return NULL;
}

/* ------------------------------------------------------------- reductions ---- */

static kiln_status reduce_inputs(const infer_ctx *x, int *n_out) {
  int n = x->ins->n_operands;
  if (n < 2 || n % 2) return fail(x, "expects N inputs and N init values (an even count >= 2), got %d operands", n);
  n /= 2;
  const hlo_shape *s0 = opnd(x, 0);
  for (int i = 0; i < n; i++) {
    const hlo_shape *s = opnd(x, i), *init = opnd(x, n + i);
    TRY(expect_array(x, s, "input"));
    if (!shape_same_dims(s, s0)) return fail(x, "inputs %s and %s have different dims", shp(x, s0), shp(x, s));
    if (!is_scalar(init)) return fail(x, "init value %d must be a scalar, got %s", i, shp(x, init));
    if (init->type != s->type)
      return fail(x, "init value %d %s does not match the element type of input %s", i, shp(x, init), shp(x, s));
  }
  *n_out = n;
  return NULL;
}

static kiln_status reducer_types(const infer_ctx *x, int n, const char *role, bool *tuple_result) {
  hlo_type *acc = arena_calloc(x->a, (size_t)n, sizeof *acc);
  hlo_type *in = arena_calloc(x->a, (size_t)n, sizeof *in);
  for (int i = 0; i < n; i++) {
    acc[i] = opnd(x, n + i)->type;
    in[i] = opnd(x, i)->type;
  }
  return check_reducer(x, x->ins->called[0], n, acc, in, role, tuple_result);
}

static hlo_shape tuple_or_single(const infer_ctx *x, int n, hlo_shape *shapes, bool tuple) {
  if (!tuple) return shapes[0];
  const hlo_shape **p = arena_calloc(x->a, (size_t)n, sizeof *p);
  for (int i = 0; i < n; i++) p[i] = &shapes[i];
  return make_tuple(x->a, n, p);
}

static kiln_status infer_reduce(const infer_ctx *x, hlo_shape *out) {
  int n;
  TRY(expect_called(x, 1));
  TRY(reduce_inputs(x, &n));
  const hlo_shape *s0 = opnd(x, 0);
  const hlo_ints *d = &x->ins->dimensions;
  TRY(check_dim_list(x, d, s0->rank, "dimensions", false));
  bool tuple;
  TRY(reducer_types(x, n, "to_apply", &tuple));
  hlo_shape *res = arena_calloc(x->a, (size_t)n, sizeof *res);
  for (int i = 0; i < n; i++) {
    res[i] = array_shape(opnd(x, n + i)->type, 0, NULL);
    for (int k = 0; k < s0->rank; k++) {
      if (list_contains(d, k)) continue;
      res[i].dims[res[i].rank] = s0->dims[k];
      res[i].dynamic[res[i].rank] = s0->dynamic[k];
      res[i].rank++;
    }
  }
  *out = tuple_or_single(x, n, res, tuple);
  return NULL;
}

static kiln_status infer_reduce_window(const infer_ctx *x, hlo_shape *out) {
  int n;
  TRY(expect_called(x, 1));
  TRY(reduce_inputs(x, &n));
  bool tuple;
  TRY(reducer_types(x, n, "to_apply", &tuple));
  hlo_shape *res = arena_calloc(x->a, (size_t)n, sizeof *res);
  for (int i = 0; i < n; i++) TRY(window_output(x, opnd(x, i), &x->ins->window, opnd(x, n + i)->type, &res[i]));
  *out = tuple_or_single(x, n, res, tuple);
  return NULL;
}

static kiln_status infer_select_and_scatter(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_called(x, 2));
  const hlo_shape *s = opnd(x, 0), *src = opnd(x, 1), *init = opnd(x, 2);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_array(x, src, "source"));
  if (!is_scalar(init)) return fail(x, "init value must be a scalar, got %s", shp(x, init));
  const hlo_computation *sel = x->ins->called[0];
  TRY(check_comp(x, sel, "select"));
  if (sel->n_params != 2 || !is_scalar_of(param_shape(sel, 0), s->type) || !is_scalar_of(param_shape(sel, 1),
      s->type) ||
      !is_scalar_of(&sel->root->shape, HLO_PRED))
    return fail(x, "select computation %s must be (%s[], %s[]) -> pred[]", sel->name, hlo_type_name(s->type),
                hlo_type_name(s->type));
  if (init->type != src->type)
    return fail(x, "init value %s and source %s element types differ", shp(x, init), shp(x, src));
  bool tuple;
  hlo_type t = src->type;
  TRY(check_reducer(x, x->ins->called[1], 1, &t, &t, "scatter", &tuple));
  if (tuple) return fail(x, "scatter computation must return a scalar");
  hlo_shape w;
  TRY(window_output(x, s, &x->ins->window, s->type, &w));
  if (!shape_compatible(&w, src))
    return fail(x, "source %s does not match the windowed operand shape %s", shp(x, src), shp(x, &w));
  *out = with_type(s, s->type);
  return NULL;
}

/* --------------------------------------------------------- dot and conv ---- */

/* Result element type of dot/convolution: the declared one (preferred_element_type)
 * when it is an array type, else the higher-precision operand type. */
static kiln_status contraction_type(const infer_ctx *x, hlo_type lt, hlo_type rt, hlo_type *out) {
  hlo_type t = hlo_higher_precision_type(lt, rt), want = x->ins->shape.type;
  if ((unsigned)want < HLO_TYPE_COUNT && hlo_type_is_array(want) && want != t) {
    if (want == HLO_PRED) return fail(x, "result element type pred is invalid for %s operands", hlo_type_name(t));
    if (!hlo_type_is_float(t) && hlo_type_is_int(want) && hlo_type_size(want) < hlo_type_size(t))
      return fail(x, "result element type %s is narrower than the operand type %s", hlo_type_name(want),
                  hlo_type_name(t));
    t = want;
  }
  *out = t;
  return NULL;
}

static kiln_status infer_dot(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *l = opnd(x, 0), *r = opnd(x, 1);
  const hlo_dot_dnums *d = &x->ins->dot;
  TRY(expect_array(x, l, "lhs"));
  TRY(expect_array(x, r, "rhs"));
  if (d->lhs_batch.n != d->rhs_batch.n)
    return fail(x, "lhs_batch_dims=%s and rhs_batch_dims=%s differ in length", list_str(x, &d->lhs_batch),
                list_str(x, &d->rhs_batch));
  if (d->lhs_contracting.n != d->rhs_contracting.n)
    return fail(x, "lhs_contracting_dims=%s and rhs_contracting_dims=%s differ in length",
                list_str(x, &d->lhs_contracting), list_str(x, &d->rhs_contracting));
  TRY(check_dim_list(x, &d->lhs_batch, l->rank, "lhs_batch_dims", false));
  TRY(check_dim_list(x, &d->rhs_batch, r->rank, "rhs_batch_dims", false));
  TRY(check_dim_list(x, &d->lhs_contracting, l->rank, "lhs_contracting_dims", false));
  TRY(check_dim_list(x, &d->rhs_contracting, r->rank, "rhs_contracting_dims", false));
  TRY(check_disjoint(x, &d->lhs_batch, "lhs_batch_dims", &d->lhs_contracting, "lhs_contracting_dims"));
  TRY(check_disjoint(x, &d->rhs_batch, "rhs_batch_dims", &d->rhs_contracting, "rhs_contracting_dims"));
  for (int i = 0; i < d->lhs_batch.n; i++)
    if (l->dims[d->lhs_batch.v[i]] != r->dims[d->rhs_batch.v[i]])
      return fail(x, "batch dimension sizes differ: lhs %s dimension %lld vs rhs %s dimension %lld", shp(x, l),
                  (long long)d->lhs_batch.v[i], shp(x, r), (long long)d->rhs_batch.v[i]);
  for (int i = 0; i < d->lhs_contracting.n; i++)
    if (l->dims[d->lhs_contracting.v[i]] != r->dims[d->rhs_contracting.v[i]])
      return fail(x, "contracting dimension sizes differ: lhs %s dimension %lld vs rhs %s dimension %lld", shp(x, l),
                  (long long)d->lhs_contracting.v[i], shp(x, r), (long long)d->rhs_contracting.v[i]);
  int rank = l->rank - d->lhs_contracting.n + r->rank - d->rhs_contracting.n - d->rhs_batch.n;
  if (rank > HLO_MAX_RANK) return fail(x, "result rank %d exceeds %d", rank, HLO_MAX_RANK);
  hlo_type t;
  TRY(contraction_type(x, l->type, r->type, &t));
  *out = array_shape(t, 0, NULL);
  for (int i = 0; i < d->lhs_batch.n; i++) {
    out->dims[out->rank] = l->dims[d->lhs_batch.v[i]];
    out->dynamic[out->rank++] = l->dynamic[d->lhs_batch.v[i]];
  }
  for (int k = 0; k < l->rank; k++)
    if (!list_contains(&d->lhs_batch, k) && !list_contains(&d->lhs_contracting, k)) {
      out->dims[out->rank] = l->dims[k];
      out->dynamic[out->rank++] = l->dynamic[k];
    }
  for (int k = 0; k < r->rank; k++)
    if (!list_contains(&d->rhs_batch, k) && !list_contains(&d->rhs_contracting, k)) {
      out->dims[out->rank] = r->dims[k];
      out->dynamic[out->rank++] = r->dynamic[k];
    }
  return NULL;
}

/* Checks that b, f and the spatial dims are a permutation of 0..n-1. */
static kiln_status check_conv_perm(const infer_ctx *x, const char *which, int64_t b, int64_t f, const int64_t *sp,
                                   int ns) {
  bool seen[HLO_MAX_RANK] = {false};
  int n = ns + 2;
  for (int i = -2; i < ns; i++) {
    int64_t v = i == -2 ? b : i == -1 ? f : sp[i];
    if (v < 0 || v >= n || seen[v])
      return fail(x, "%s dimension numbers are not a permutation of 0..%d (dimension %lld)", which, n - 1,
                  (long long)v);
    seen[v] = true;
  }
  return NULL;
}

static kiln_status infer_convolution(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *l = opnd(x, 0), *r = opnd(x, 1);
  const hlo_instr *ins = x->ins;
  TRY(expect_array(x, l, "lhs"));
  TRY(expect_array(x, r, "rhs"));
  hlo_conv_dnums d;
  if (ins->has_conv_dnums) {
    d = ins->conv;
  } else {
    /* XLA's default numbering: b f 0 1 …, o i 0 1 …, b f 0 1 … */
    memset(&d, 0, sizeof d);
    d.n_spatial = l->rank >= 2 ? l->rank - 2 : 0;
    d.input_batch = 0, d.input_feature = 1;
    d.kernel_output_feature = 0, d.kernel_input_feature = 1;
    d.output_batch = 0, d.output_feature = 1;
    for (int i = 0; i < d.n_spatial; i++) d.input_spatial[i] = d.kernel_spatial[i] = d.output_spatial[i] = i + 2;
  }
  int ns = d.n_spatial;
  if (ns < 0 || ns > HLO_MAX_RANK - 2) return fail(x, "invalid number of spatial dimensions %d", ns);
  if (l->rank != ns + 2 || r->rank != ns + 2)
    return fail(x, "lhs %s and rhs %s must both have rank %d for %d spatial dimensions", shp(x, l), shp(x, r), ns + 2,
                ns);
  if (ins->window.rank != ns)
    return fail(x, "window has %d dimensions but the convolution has %d spatial dimensions", ins->window.rank, ns);
  TRY(check_conv_perm(x, "input", d.input_batch, d.input_feature, d.input_spatial, ns));
  TRY(check_conv_perm(x, "kernel", d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial, ns));
  TRY(check_conv_perm(x, "output", d.output_batch, d.output_feature, d.output_spatial, ns));
  int64_t fgc = ins->feature_group_count, bgc = ins->batch_group_count;
  if (fgc < 1 || bgc < 1)
    return fail(x, "feature_group_count=%lld and batch_group_count=%lld must be positive", (long long)fgc,
                (long long)bgc);
  if (fgc > 1 && bgc > 1) return fail(x, "feature_group_count and batch_group_count cannot both exceed 1");
  int64_t in_batch = l->dims[d.input_batch], in_feat = l->dims[d.input_feature];
  int64_t k_in = r->dims[d.kernel_input_feature], k_out = r->dims[d.kernel_output_feature];
  if (in_feat % fgc != 0 || in_feat / fgc != k_in)
    return fail(x,
                "input feature size %lld must equal kernel input feature size %lld times feature_group_count %lld "
                "(lhs %s, rhs %s)",
                (long long)in_feat, (long long)k_in, (long long)fgc, shp(x, l), shp(x, r));
  if (k_out % fgc != 0)
    return fail(x, "kernel output feature size %lld is not divisible by feature_group_count %lld", (long long)k_out,
                (long long)fgc);
  if (k_out % bgc != 0)
    return fail(x, "kernel output feature size %lld is not divisible by batch_group_count %lld", (long long)k_out,
                (long long)bgc);
  if (in_batch % bgc != 0)
    return fail(x, "input batch size %lld is not divisible by batch_group_count %lld", (long long)in_batch,
                (long long)bgc);
  hlo_type t;
  TRY(contraction_type(x, l->type, r->type, &t));
  *out = array_shape(t, ns + 2, NULL);
  out->dims[d.output_batch] = in_batch / bgc;
  out->dims[d.output_feature] = k_out;
  for (int i = 0; i < ns; i++) {
    const hlo_window_dim *w = &ins->window.dims[i];
    if (w->size != r->dims[d.kernel_spatial[i]])
      return fail(x, "window size %lld in spatial dimension %d does not match the kernel %s (size %lld)",
                  (long long)w->size, i, shp(x, r), (long long)r->dims[d.kernel_spatial[i]]);
    TRY(window_out_dim(x, l->dims[d.input_spatial[i]], w, i, &out->dims[d.output_spatial[i]]));
  }
  return NULL;
}

/* --------------------------------------------------------- gather/scatter ---- */

static kiln_status infer_gather(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0), *idx = opnd(x, 1);
  const hlo_gather_dnums *g = &x->ins->gather;
  const hlo_ints *ss = &x->ins->gather_slice_sizes;
  TRY(expect_array(x, s, "operand"));
  TRY(expect_array(x, idx, "start_indices"));
  if (!is_index_type(idx->type)) return fail(x, "start_indices must be integers, got %s", shp(x, idx));
  int ir = idx->rank;
  int64_t ivd = g->index_vector_dim;
  if (ivd < 0 || ivd > ir)
    return fail(x, "index_vector_dim=%lld is out of range [0, %d] for start_indices %s", (long long)ivd, ir,
                shp(x, idx));
  int64_t index_len = ivd < ir ? idx->dims[ivd] : 1;
  int batch_count = ir - (ivd < ir ? 1 : 0);
  int out_rank = g->offset_dims.n + batch_count;
  if (out_rank > HLO_MAX_RANK) return fail(x, "result rank %d exceeds %d", out_rank, HLO_MAX_RANK);
  TRY(check_dim_list(x, &g->offset_dims, out_rank, "offset_dims", true));
  TRY(check_dim_list(x, &g->collapsed_slice_dims, s->rank, "collapsed_slice_dims", true));
  TRY(check_dim_list(x, &g->operand_batching_dims, s->rank, "operand_batching_dims", true));
  TRY(check_disjoint(x, &g->collapsed_slice_dims, "collapsed_slice_dims", &g->operand_batching_dims,
                     "operand_batching_dims"));
  TRY(check_dim_list(x, &g->start_indices_batching_dims, ir, "start_indices_batching_dims", false));
  if (list_contains(&g->start_indices_batching_dims, ivd))
    return fail(x, "start_indices_batching_dims=%s contains index_vector_dim=%lld",
                list_str(x, &g->start_indices_batching_dims), (long long)ivd);
  if (g->operand_batching_dims.n != g->start_indices_batching_dims.n)
    return fail(x, "operand_batching_dims=%s and start_indices_batching_dims=%s differ in length",
                list_str(x, &g->operand_batching_dims), list_str(x, &g->start_indices_batching_dims));
  for (int i = 0; i < g->operand_batching_dims.n; i++)
    if (s->dims[g->operand_batching_dims.v[i]] != idx->dims[g->start_indices_batching_dims.v[i]])
      return fail(x, "batching dimension sizes differ: operand %s dimension %lld vs start_indices %s dimension %lld",
                  shp(x, s), (long long)g->operand_batching_dims.v[i], shp(x, idx),
                  (long long)g->start_indices_batching_dims.v[i]);
  if (g->start_index_map.n != index_len)
    return fail(x, "start_index_map=%s has %d entries but the index vector of %s has %lld",
                list_str(x, &g->start_index_map), g->start_index_map.n, shp(x, idx), (long long)index_len);
  TRY(check_dim_list(x, &g->start_index_map, s->rank, "start_index_map", false));
  TRY(check_disjoint(x, &g->start_index_map, "start_index_map", &g->operand_batching_dims, "operand_batching_dims"));
  if (ss->n != s->rank)
    return fail(x, "slice_sizes=%s has %d entries for the operand %s of rank %d", list_str(x, ss), ss->n, shp(x, s),
                s->rank);
  for (int i = 0; i < s->rank; i++)
    if (ss->v[i] < 0 || ss->v[i] > s->dims[i])
      return fail(x, "slice_sizes=%s: size %lld of dimension %d is outside [0, %lld]", list_str(x, ss),
                  (long long)ss->v[i], i, (long long)s->dims[i]);
  for (int i = 0; i < s->rank; i++)
    if ((list_contains(&g->collapsed_slice_dims, i) || list_contains(&g->operand_batching_dims, i)) && ss->v[i] > 1)
      return fail(x, "slice size %lld of collapsed or batching dimension %d must be 0 or 1", (long long)ss->v[i], i);
  if (g->offset_dims.n + g->collapsed_slice_dims.n + g->operand_batching_dims.n != s->rank)
    return fail(x,
                "offset_dims (%d) + collapsed_slice_dims (%d) + operand_batching_dims (%d) must equal "
                "the rank %d of %s",
                g->offset_dims.n, g->collapsed_slice_dims.n, g->operand_batching_dims.n, s->rank, shp(x, s));
  *out = array_shape(s->type, out_rank, NULL);
  int op_dim = 0, idx_dim = 0;
  for (int i = 0; i < out_rank; i++) {
    if (list_contains(&g->offset_dims, i)) {
      while (list_contains(&g->collapsed_slice_dims, op_dim) || list_contains(&g->operand_batching_dims, op_dim))
        op_dim++;
      out->dims[i] = ss->v[op_dim++];
    } else {
      if (idx_dim == ivd) idx_dim++;
      out->dims[i] = idx->dims[idx_dim];
      out->dynamic[i] = idx->dynamic[idx_dim];
      idx_dim++;
    }
  }
  return NULL;
}

static kiln_status infer_scatter(const infer_ctx *x, hlo_shape *out) {
  int n = x->ins->n_operands;
  TRY(expect_called(x, 1));
  if (n < 3 || n % 2 == 0)
    return fail(x, "expects N inputs, the indices and N updates (an odd count >= 3), got %d operands", n);
  n = (n - 1) / 2;
  const hlo_scatter_dnums *sd = &x->ins->scatter;
  const hlo_shape *s = opnd(x, 0), *idx = opnd(x, n), *u0 = opnd(x, n + 1);
  for (int i = 0; i < n; i++) {
    const hlo_shape *in = opnd(x, i), *up = opnd(x, n + 1 + i);
    TRY(expect_array(x, in, "input"));
    TRY(expect_array(x, up, "update"));
    if (!shape_same_dims(in, s)) return fail(x, "inputs %s and %s have different dims", shp(x, s), shp(x, in));
    if (!shape_same_dims(up, u0)) return fail(x, "updates %s and %s have different dims", shp(x, u0), shp(x, up));
    if (up->type != in->type)
      return fail(x, "update %s and input %s element types differ", shp(x, up), shp(x, in));
  }
  TRY(expect_array(x, idx, "scatter_indices"));
  if (!is_index_type(idx->type)) return fail(x, "scatter_indices must be integers, got %s", shp(x, idx));
  int ir = idx->rank;
  int64_t ivd = sd->index_vector_dim;
  if (ivd < 0 || ivd > ir)
    return fail(x, "index_vector_dim=%lld is out of range [0, %d] for scatter_indices %s", (long long)ivd, ir,
                shp(x, idx));
  int64_t index_len = ivd < ir ? idx->dims[ivd] : 1;
  int batch_count = ir - (ivd < ir ? 1 : 0);
  TRY(check_dim_list(x, &sd->update_window_dims, u0->rank, "update_window_dims", true));
  TRY(check_dim_list(x, &sd->inserted_window_dims, s->rank, "inserted_window_dims", true));
  TRY(check_dim_list(x, &sd->input_batching_dims, s->rank, "input_batching_dims", true));
  TRY(check_disjoint(x, &sd->inserted_window_dims, "inserted_window_dims", &sd->input_batching_dims,
                     "input_batching_dims"));
  TRY(check_dim_list(x, &sd->scatter_indices_batching_dims, ir, "scatter_indices_batching_dims", false));
  if (list_contains(&sd->scatter_indices_batching_dims, ivd))
    return fail(x, "scatter_indices_batching_dims=%s contains index_vector_dim=%lld",
                list_str(x, &sd->scatter_indices_batching_dims), (long long)ivd);
  if (sd->input_batching_dims.n != sd->scatter_indices_batching_dims.n)
    return fail(x, "input_batching_dims=%s and scatter_indices_batching_dims=%s differ in length",
                list_str(x, &sd->input_batching_dims), list_str(x, &sd->scatter_indices_batching_dims));
  for (int i = 0; i < sd->input_batching_dims.n; i++)
    if (s->dims[sd->input_batching_dims.v[i]] != idx->dims[sd->scatter_indices_batching_dims.v[i]])
      return fail(x, "batching dimension sizes differ: input %s dimension %lld vs scatter_indices %s dimension %lld",
                  shp(x, s), (long long)sd->input_batching_dims.v[i], shp(x, idx),
                  (long long)sd->scatter_indices_batching_dims.v[i]);
  if (sd->scatter_dims_to_operand_dims.n != index_len)
    return fail(x, "scatter_dims_to_operand_dims=%s has %d entries but the index vector of %s has %lld",
                list_str(x, &sd->scatter_dims_to_operand_dims), sd->scatter_dims_to_operand_dims.n, shp(x, idx),
                (long long)index_len);
  TRY(check_dim_list(x, &sd->scatter_dims_to_operand_dims, s->rank, "scatter_dims_to_operand_dims", false));
  TRY(check_disjoint(x, &sd->scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims", &sd->input_batching_dims,
                     "input_batching_dims"));
  if (sd->update_window_dims.n + sd->inserted_window_dims.n + sd->input_batching_dims.n != s->rank)
    return fail(x,
                "update_window_dims (%d) + inserted_window_dims (%d) + input_batching_dims (%d) must equal the rank %d "
                "of %s",
                sd->update_window_dims.n, sd->inserted_window_dims.n, sd->input_batching_dims.n, s->rank, shp(x, s));
  if (u0->rank != sd->update_window_dims.n + batch_count)
    return fail(x, "updates %s must have rank %d (%d window + %d scatter dimensions)", shp(x, u0),
                sd->update_window_dims.n + batch_count, sd->update_window_dims.n, batch_count);
  int op_dim = 0, idx_dim = 0;
  for (int i = 0; i < u0->rank; i++) {
    if (list_contains(&sd->update_window_dims, i)) {
      while (list_contains(&sd->inserted_window_dims, op_dim) || list_contains(&sd->input_batching_dims, op_dim))
        op_dim++;
      if (u0->dims[i] > s->dims[op_dim])
        return fail(x,
                    "update window dimension %d (size %lld) exceeds input dimension %d (size %lld): "
                    "updates %s, input %s",
                    i, (long long)u0->dims[i], op_dim, (long long)s->dims[op_dim], shp(x, u0), shp(x, s));
      op_dim++;
    } else {
      if (idx_dim == ivd) idx_dim++;
      if (u0->dims[i] != idx->dims[idx_dim])
        return fail(x,
                    "update scatter dimension %d (size %lld) must match scatter_indices dimension %d "
                    "(size %lld): updates %s, indices %s",
                    i, (long long)u0->dims[i], idx_dim, (long long)idx->dims[idx_dim], shp(x, u0), shp(x, idx));
      idx_dim++;
    }
  }
  hlo_type *acc = arena_calloc(x->a, (size_t)n, sizeof *acc);
  hlo_type *in = arena_calloc(x->a, (size_t)n, sizeof *in);
  for (int i = 0; i < n; i++) {
    acc[i] = opnd(x, i)->type;
    in[i] = opnd(x, n + 1 + i)->type;
  }
  bool tuple;
  TRY(check_reducer(x, x->ins->called[0], n, acc, in, "to_apply", &tuple));
  if (n == 1) {
    *out = with_type(s, s->type);
  } else {
    const hlo_shape **p = arena_calloc(x->a, (size_t)n, sizeof *p);
    for (int i = 0; i < n; i++) p[i] = opnd(x, i);
    *out = make_tuple(x->a, n, p);
  }
  return NULL;
}

/* ----------------------------------------------------------- sort, topk ---- */

static kiln_status infer_sort(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  TRY(expect_called(x, 1));
  int n = x->ins->n_operands;
  const hlo_shape *s0 = opnd(x, 0);
  for (int i = 0; i < n; i++) {
    TRY(expect_array(x, opnd(x, i), "operand"));
    if (!shape_same_dims(opnd(x, i), s0))
      return fail(x, "operands %s and %s have different dims", shp(x, s0), shp(x, opnd(x, i)));
  }
  const hlo_ints *d = &x->ins->dimensions;
  if (d->n != 1) return fail(x, "dimensions=%s must name exactly one dimension", list_str(x, d));
  TRY(check_dim_list(x, d, s0->rank, "dimensions", false));
  const hlo_computation *c = x->ins->called[0];
  TRY(check_comp(x, c, "comparator"));
  if (c->n_params != 2 * n)
    return fail(x, "comparator computation %s must take %d parameters, takes %d", c->name, 2 * n, c->n_params);
  for (int i = 0; i < 2 * n; i++)
    if (!is_scalar_of(param_shape(c, i), opnd(x, i / 2)->type))
      return fail(x, "comparator computation %s: parameter %d is %s, expected %s[]", c->name, i,
                  shp(x, param_shape(c, i)), hlo_type_name(opnd(x, i / 2)->type));
  if (!is_scalar_of(&c->root->shape, HLO_PRED))
    return fail(x, "comparator computation %s must return pred[], returns %s", c->name, shp(x, &c->root->shape));
  if (n == 1) {
    *out = with_type(s0, s0->type);
  } else {
    const hlo_shape **p = arena_calloc(x->a, (size_t)n, sizeof *p);
    for (int i = 0; i < n; i++) p[i] = opnd(x, i);
    *out = make_tuple(x->a, n, p);
  }
  return NULL;
}

static kiln_status infer_topk(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  if (s->rank < 1) return fail(x, "operand must have rank >= 1, got %s", shp(x, s));
  int64_t k = x->ins->k;
  if (k < 0 || k > s->dims[s->rank - 1])
    return fail(x, "k=%lld is outside [0, %lld] for %s", (long long)k, (long long)s->dims[s->rank - 1], shp(x, s));
  hlo_shape v = with_type(s, s->type), i = with_type(s, HLO_S32);
  v.dims[s->rank - 1] = i.dims[s->rank - 1] = k;
  const hlo_shape *p[2] = {&v, &i};
  *out = make_tuple(x->a, 2, p);
  return NULL;
}

/* --------------------------------------------------------- control flow ---- */

static kiln_status infer_while(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_called(x, 2));
  const hlo_shape *init = opnd(x, 0);
  const hlo_computation *cond = x->ins->called[0], *body = x->ins->called[1];
  TRY(check_comp(x, cond, "condition"));
  TRY(check_comp(x, body, "body"));
  if (cond->n_params != 1)
    return fail(x, "condition computation %s must take 1 parameter, takes %d", cond->name, cond->n_params);
  if (body->n_params != 1)
    return fail(x, "body computation %s must take 1 parameter, takes %d", body->name, body->n_params);
  if (!is_scalar_of(&cond->root->shape, HLO_PRED))
    return fail(x, "condition computation %s must return pred[], returns %s", cond->name, shp(x, &cond->root->shape));
  if (!shape_compatible(param_shape(cond, 0), init))
    return fail(x, "condition computation %s takes %s but the loop state is %s", cond->name,
                shp(x, param_shape(cond, 0)), shp(x, init));
  if (!shape_compatible(param_shape(body, 0), init))
    return fail(x, "body computation %s takes %s but the loop state is %s", body->name, shp(x, param_shape(body, 0)),
                shp(x, init));
  if (!shape_compatible(&body->root->shape, init))
    return fail(x, "body computation %s returns %s but the loop state is %s", body->name, shp(x, &body->root->shape),
                shp(x, init));
  *out = strip_layout(x->a, init);
  return NULL;
}

static kiln_status infer_conditional(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  const hlo_shape *bi = opnd(x, 0);
  int nb = x->ins->n_called;
  if (is_scalar_of(bi, HLO_PRED)) {
    if (nb != 2) return fail(x, "a pred-indexed conditional needs 2 branches, got %d", nb);
  } else if (is_scalar_of(bi, HLO_S32)) {
    if (nb < 1) return fail(x, "an s32-indexed conditional needs at least 1 branch");
  } else {
    return fail(x, "branch index must be pred[] or s32[], got %s", shp(x, bi));
  }
  if (x->ins->n_operands != nb + 1)
    return fail(x, "expects the branch index and %d branch operands, got %d operands", nb, x->ins->n_operands);
  for (int i = 0; i < nb; i++) {
    const hlo_computation *b = x->ins->called[i];
    TRY(check_comp(x, b, "branch"));
    if (b->n_params != 1) return fail(x, "branch computation %s must take 1 parameter, takes %d", b->name, b->n_params);
    if (!shape_compatible(param_shape(b, 0), opnd(x, i + 1)))
      return fail(x, "branch computation %s takes %s but its operand is %s", b->name, shp(x, param_shape(b, 0)),
                  shp(x, opnd(x, i + 1)));
    if (!shape_compatible(&b->root->shape, &x->ins->called[0]->root->shape))
      return fail(x, "branch computations %s and %s return different shapes: %s and %s", x->ins->called[0]->name,
                  b->name, shp(x, &x->ins->called[0]->root->shape), shp(x, &b->root->shape));
  }
  *out = strip_layout(x->a, &x->ins->called[0]->root->shape);
  return NULL;
}

static kiln_status infer_call(const infer_ctx *x, const char *role, hlo_shape *out) {
  TRY(expect_called(x, 1));
  const hlo_computation *c = x->ins->called[0];
  TRY(check_comp(x, c, role));
  if (c->n_params != x->ins->n_operands)
    return fail(x, "%s computation %s takes %d parameters but %d operands are passed", role, c->name, c->n_params,
                x->ins->n_operands);
  for (int i = 0; i < c->n_params; i++)
    if (!shape_compatible(param_shape(c, i), opnd(x, i)))
      return fail(x, "%s computation %s: parameter %d is %s but the operand is %s", role, c->name, i,
                  shp(x, param_shape(c, i)), shp(x, opnd(x, i)));
  *out = strip_layout(x->a, &c->root->shape);
  return NULL;
}

static kiln_status infer_map(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  TRY(expect_called(x, 1));
  int n = x->ins->n_operands;
  const hlo_shape *s0 = opnd(x, 0);
  for (int i = 0; i < n; i++) {
    TRY(expect_array(x, opnd(x, i), "operand"));
    if (!shape_same_dims(opnd(x, i), s0))
      return fail(x, "operands %s and %s have different dims", shp(x, s0), shp(x, opnd(x, i)));
  }
  const hlo_ints *d = &x->ins->dimensions;
  if (d->n != 0) {
    if (d->n != s0->rank) return fail(x, "dimensions=%s must list every dimension of %s", list_str(x, d), shp(x, s0));
    for (int i = 0; i < d->n; i++)
      if (d->v[i] != i) return fail(x, "dimensions=%s must be 0..%d in order", list_str(x, d), s0->rank - 1);
  }
  const hlo_computation *c = x->ins->called[0];
  TRY(check_comp(x, c, "to_apply"));
  if (c->n_params != n)
    return fail(x, "to_apply computation %s takes %d parameters for %d operands", c->name, c->n_params, n);
  for (int i = 0; i < n; i++)
    if (!is_scalar_of(param_shape(c, i), opnd(x, i)->type))
      return fail(x, "to_apply computation %s: parameter %d is %s, expected %s[]", c->name, i,
                  shp(x, param_shape(c, i)), hlo_type_name(opnd(x, i)->type));
  if (!is_scalar(&c->root->shape))
    return fail(x, "to_apply computation %s must return a scalar, returns %s", c->name, shp(x, &c->root->shape));
  *out = with_type(s0, c->root->shape.type);
  return NULL;
}

/* ----------------------------------------------------------- linear algebra ---- */

static kiln_status infer_batch_norm(const infer_ctx *x, hlo_shape *out) {
  const hlo_instr *ins = x->ins;
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_class(x, s, TC_FLOAT, "operand"));
  int64_t fi = 0;
  TRY(raw_int_attr(x, "feature_index", &fi));
  if (fi < 0 || fi >= s->rank) return fail(x, "feature_index=%lld is out of range for %s", (long long)fi, shp(x, s));
  int64_t feat = s->dims[fi];
  /* Operands after the first: vectors of the feature size, except batch-norm-grad's
   * last operand (grad_output), which has the operand's shape. */
  static const char *const names_train[] = {"operand", "scale", "offset"};
  static const char *const names_inf[] = {"operand", "scale", "offset", "mean", "variance"};
  static const char *const names_grad[] = {"operand", "scale", "mean", "variance", "grad_output"};
  const char *const *names = ins->op == HLO_OP_BATCH_NORM_TRAINING ? names_train
                             : ins->op == HLO_OP_BATCH_NORM_INFERENCE ? names_inf : names_grad;
  for (int i = 1; i < ins->n_operands; i++) {
    const hlo_shape *v = opnd(x, i);
    TRY(expect_array(x, v, names[i]));
    if (v->type != s->type) return fail(x, "%s %s and operand %s element types differ", names[i], shp(x, v), shp(x, s));
    if (ins->op == HLO_OP_BATCH_NORM_GRAD && i == 4) {
      if (!shape_same_dims(v, s))
        return fail(x, "grad_output %s must have the dims of the operand %s", shp(x, v), shp(x, s));
    } else if (v->rank != 1 || v->dims[0] != feat) {
      return fail(x, "%s must be %s[%lld] (the feature size of %s), got %s", names[i], hlo_type_name(s->type),
                  (long long)feat, shp(x, s), shp(x, v));
    }
  }
  if (ins->op == HLO_OP_BATCH_NORM_INFERENCE) {
    *out = with_type(s, s->type);
  } else {
    hlo_shape a = with_type(s, s->type), f = array_shape(s->type, 1, &feat);
    const hlo_shape *p[3] = {&a, &f, &f};
    *out = make_tuple(x->a, 3, p);
  }
  return NULL;
}

static kiln_status infer_cholesky(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_class(x, s, TC_FLOAT, "operand"));
  if (s->rank < 2 || s->dims[s->rank - 1] != s->dims[s->rank - 2])
    return fail(x, "operand %s must be a (batch of) square matrices", shp(x, s));
  *out = with_type(s, s->type);
  return NULL;
}

static kiln_status infer_triangular_solve(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *a = opnd(x, 0), *b = opnd(x, 1);
  TRY(expect_array(x, a, "a"));
  TRY(expect_array(x, b, "b"));
  TRY(expect_class(x, a, TC_FLOAT, "a"));
  if (a->type != b->type) return fail(x, "a %s and b %s element types differ", shp(x, a), shp(x, b));
  if (a->rank < 2 || a->dims[a->rank - 1] != a->dims[a->rank - 2])
    return fail(x, "a %s must be a (batch of) square matrices", shp(x, a));
  if (b->rank != a->rank) return fail(x, "a %s and b %s ranks differ", shp(x, a), shp(x, b));
  for (int i = 0; i < a->rank - 2; i++)
    if (a->dims[i] != b->dims[i]) return fail(x, "batch dimensions of a %s and b %s differ", shp(x, a), shp(x, b));
  const char *ls = raw_attr(x->ins, "left_side");
  bool left = ls && strcmp(ls, "true") == 0;
  if (b->dims[b->rank - (left ? 2 : 1)] != a->dims[a->rank - 1])
    return fail(x, "shared dimension of a %s and b %s (left_side=%s) does not match", shp(x, a), shp(x, b),
                left ? "true" : "false");
  *out = with_type(b, b->type);
  return NULL;
}

/* ------------------------------------------------ given shapes, misc ops ---- */

static kiln_status infer_given(const infer_ctx *x, hlo_shape *out) {
  kiln_status st = hlo_shape_validate(&x->ins->shape, false);
  if (st) {
    kiln_status r = fail(x, "invalid result shape: %s", kiln_status_message(st));
    kiln_status_free(st);
    return r;
  }
  *out = shape_clone(x->a, &x->ins->shape);
  return NULL;
}

static kiln_status infer_rng(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *a = opnd(x, 0), *b = opnd(x, 1), *target = &x->ins->shape;
  if (!is_scalar(a) || !is_scalar(b) || a->type != b->type)
    return fail(x, "parameters must be scalars of one type, got %s and %s", shp(x, a), shp(x, b));
  if (!shape_is_array(target)) return fail(x, "result shape %s must be an array", shp(x, target));
  *out = with_type(target, a->type);
  return NULL;
}

static kiln_status infer_stochastic_convert(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0), *r = opnd(x, 1);
  TRY(expect_array(x, s, "operand"));
  TRY(expect_array(x, r, "random"));
  TRY(expect_class(x, s, TC_FLOAT, "operand"));
  if (!hlo_type_is_unsigned_int(r->type) || hlo_type_size(r->type) != hlo_type_size(s->type))
    return fail(x, "random bits %s must be unsigned integers as wide as %s", shp(x, r), hlo_type_name(s->type));
  if (!shape_same_dims(s, r)) return fail(x, "operand %s and random bits %s have different dims", shp(x, s), shp(x, r));
  hlo_type t = x->ins->shape.type;
  if (!hlo_type_is_array(t)) return fail(x, "cannot convert %s to %s", shp(x, s), hlo_type_name(t));
  *out = with_type(s, t);
  return NULL;
}

static kiln_status infer_bitcast(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  TRY(infer_given(x, out));
  if (shape_is_array(s) && shape_is_array(out) && shape_byte_size(s) != shape_byte_size(out))
    return fail(x, "bitcast from %s to %s changes the byte size", shp(x, s), shp(x, out));
  return NULL;
}

static kiln_status infer_dimension_size(const infer_ctx *x, hlo_shape *out) {
  const hlo_shape *s = opnd(x, 0);
  const hlo_ints *d = &x->ins->dimensions;
  TRY(expect_array(x, s, "operand"));
  if (d->n != 1 || d->v[0] < 0 || d->v[0] >= s->rank)
    return fail(x, "dimensions=%s must name one dimension of %s", list_str(x, d), shp(x, s));
  if (x->ins->op == HLO_OP_GET_DIMENSION_SIZE) {
    *out = shape_scalar(HLO_S32);
    return NULL;
  }
  if (!is_scalar_of(opnd(x, 1), HLO_S32)) return fail(x, "the size operand must be s32[], got %s", shp(x, opnd(x, 1)));
  *out = with_type(s, s->type);
  out->dynamic[d->v[0]] = true;
  return NULL;
}

static kiln_status infer_all_reduce(const infer_ctx *x, hlo_shape *out) {
  TRY(expect_min_operands(x, 1));
  int n = x->ins->n_operands;
  for (int i = 0; i < n; i++) TRY(expect_array(x, opnd(x, i), "operand"));
  if (n == 1) {
    *out = with_type(opnd(x, 0), opnd(x, 0)->type);
    return NULL;
  }
  return infer_tuple(x, out);
}

/* Ops that only move, convert or pass along element values: the ones that may take or
 * give the narrow storage types (types.h). Everything else computes on the values and
 * needs them converted to a wider type first. */
static bool moves_values_only(hlo_opcode op) {
  switch (op) {
    case HLO_OP_PARAMETER: case HLO_OP_CONSTANT: case HLO_OP_CONVERT: case HLO_OP_BITCAST_CONVERT:
    case HLO_OP_BROADCAST: case HLO_OP_RESHAPE: case HLO_OP_DYNAMIC_RESHAPE: case HLO_OP_TRANSPOSE:
    case HLO_OP_SLICE: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_DYNAMIC_UPDATE_SLICE: case HLO_OP_CONCATENATE:
    case HLO_OP_PAD: case HLO_OP_REVERSE: case HLO_OP_COPY: case HLO_OP_COPY_START: case HLO_OP_COPY_DONE:
    case HLO_OP_SELECT: case HLO_OP_GATHER: case HLO_OP_TUPLE: case HLO_OP_GET_TUPLE_ELEMENT: case HLO_OP_CALL:
    case HLO_OP_FUSION: case HLO_OP_WHILE: case HLO_OP_CONDITIONAL: case HLO_OP_BITCAST:
    case HLO_OP_OPTIMIZATION_BARRIER: case HLO_OP_DOMAIN: case HLO_OP_ADD_DEPENDENCY: case HLO_OP_GET_DIMENSION_SIZE:
    case HLO_OP_SET_DIMENSION_SIZE:
      return true;
    default:
      return false;
  }
}

/* The first narrow element type in s (tuples searched), HLO_TYPE_COUNT if none. */
static hlo_type narrow_type_in(const hlo_shape *s) {
  if (s->type != HLO_TUPLE) return hlo_type_is_narrow(s->type) ? s->type : HLO_TYPE_COUNT;
  for (int i = 0; i < s->n_elems; i++) {
    hlo_type t = narrow_type_in(&s->elems[i]);
    if (t != HLO_TYPE_COUNT) return t;
  }
  return HLO_TYPE_COUNT;
}

static kiln_status check_narrow_types(const infer_ctx *x) {
  if (moves_values_only(x->ins->op)) return NULL;
  hlo_type t = narrow_type_in(&x->ins->shape);
  for (int i = 0; t == HLO_TYPE_COUNT && i < x->ins->n_operands; i++) t = narrow_type_in(opnd(x, i));
  if (t == HLO_TYPE_COUNT) return NULL;
  return fail(x,
              "computes on %s values; kiln stores f8*, f4e2m1fn, s4, u4, s2 and u2 but computes on them only after "
              "a convert to a wider type",
              hlo_type_name(t));
}

/* Ops that may legitimately carry called computations. */
static bool may_call(hlo_opcode op) {
  switch (op) {
    case HLO_OP_REDUCE: case HLO_OP_REDUCE_WINDOW: case HLO_OP_SCATTER: case HLO_OP_SELECT_AND_SCATTER:
    case HLO_OP_SORT: case HLO_OP_MAP: case HLO_OP_CALL: case HLO_OP_FUSION: case HLO_OP_WHILE:
    case HLO_OP_CONDITIONAL: case HLO_OP_CUSTOM_CALL: case HLO_OP_ALL_REDUCE: case HLO_OP_REDUCE_SCATTER:
    case HLO_OP_ASYNC_START: case HLO_OP_ASYNC_UPDATE: case HLO_OP_ASYNC_DONE: case HLO_OP_ALL_GATHER:
    case HLO_OP_ALL_TO_ALL: case HLO_OP_COLLECTIVE_PERMUTE:
      return true;
    default:
      return false;
  }
}

static kiln_status dispatch(const infer_ctx *x, hlo_shape *out) {
  const hlo_instr *ins = x->ins;
  type_class c;
  if (unary_class(ins->op, &c)) return infer_unary(x, c, out);
  if (binary_class(ins->op, &c)) return infer_binary(x, c, out);
  switch (ins->op) {
    case HLO_OP_COPY: case HLO_OP_DOMAIN: case HLO_OP_OPTIMIZATION_BARRIER:
      *out = strip_layout(x->a, opnd(x, 0));
      return NULL;
    case HLO_OP_SELECT: return infer_select(x, out);
    case HLO_OP_CLAMP: return infer_clamp(x, out);
    case HLO_OP_CONVERT: return infer_convert(x, out);
    case HLO_OP_BITCAST_CONVERT: return infer_bitcast_convert(x, out);
    case HLO_OP_REDUCE_PRECISION: return infer_reduce_precision(x, out);
    case HLO_OP_BROADCAST: return infer_broadcast(x, out);
    case HLO_OP_RESHAPE: return infer_reshape(x, out);
    case HLO_OP_DYNAMIC_RESHAPE: return infer_dynamic_reshape(x, out);
    case HLO_OP_TRANSPOSE: return infer_transpose(x, out);
    case HLO_OP_SLICE: return infer_slice(x, out);
    case HLO_OP_DYNAMIC_SLICE: return infer_dynamic_slice(x, out);
    case HLO_OP_DYNAMIC_UPDATE_SLICE: return infer_dynamic_update_slice(x, out);
    case HLO_OP_CONCATENATE: return infer_concatenate(x, out);
    case HLO_OP_PAD: return infer_pad(x, out);
    case HLO_OP_REVERSE: return infer_reverse(x, out);
    case HLO_OP_IOTA: return infer_iota(x, out);
    case HLO_OP_CONSTANT:
      if (!ins->literal) return fail(x, "constant has no literal");
      *out = strip_layout(x->a, &ins->literal->shape);
      return NULL;
    case HLO_OP_PARAMETER:
      if (ins->parameter_number < 0)
        return fail(x, "parameter number %lld is negative", (long long)ins->parameter_number);
      return infer_given(x, out);
    case HLO_OP_TUPLE: return infer_tuple(x, out);
    case HLO_OP_GET_TUPLE_ELEMENT: return infer_gte(x, out);
    case HLO_OP_REDUCE: return infer_reduce(x, out);
    case HLO_OP_REDUCE_WINDOW: return infer_reduce_window(x, out);
    case HLO_OP_SELECT_AND_SCATTER: return infer_select_and_scatter(x, out);
    case HLO_OP_DOT: return infer_dot(x, out);
    case HLO_OP_CONVOLUTION: return infer_convolution(x, out);
    case HLO_OP_GATHER: return infer_gather(x, out);
    case HLO_OP_SCATTER: return infer_scatter(x, out);
    case HLO_OP_SORT: return infer_sort(x, out);
    case HLO_OP_TOPK: return infer_topk(x, out);
    case HLO_OP_WHILE: return infer_while(x, out);
    case HLO_OP_CONDITIONAL: return infer_conditional(x, out);
    case HLO_OP_CALL: return infer_call(x, "called", out);
    case HLO_OP_FUSION: return infer_call(x, "fused", out);
    case HLO_OP_MAP: return infer_map(x, out);
    case HLO_OP_BATCH_NORM_TRAINING: case HLO_OP_BATCH_NORM_INFERENCE: case HLO_OP_BATCH_NORM_GRAD:
      return infer_batch_norm(x, out);
    case HLO_OP_CHOLESKY: return infer_cholesky(x, out);
    case HLO_OP_TRIANGULAR_SOLVE: return infer_triangular_solve(x, out);
    case HLO_OP_GET_DIMENSION_SIZE: case HLO_OP_SET_DIMENSION_SIZE: return infer_dimension_size(x, out);
    case HLO_OP_RNG: return infer_rng(x, out);
    case HLO_OP_STOCHASTIC_CONVERT: return infer_stochastic_convert(x, out);
    case HLO_OP_BITCAST: return infer_bitcast(x, out);
    case HLO_OP_ALL_REDUCE: return infer_all_reduce(x, out);
    case HLO_OP_ADD_DEPENDENCY:
      if (opnd(x, 1)->type != HLO_TOKEN) return fail(x, "second operand must be a token, got %s", shp(x, opnd(x, 1)));
      *out = strip_layout(x->a, opnd(x, 0));
      return NULL;
    case HLO_OP_AFTER_ALL:
      for (int i = 0; i < ins->n_operands; i++)
        if (opnd(x, i)->type != HLO_TOKEN) return fail(x, "operand %d must be a token, got %s", i, shp(x, opnd(x, i)));
      *out = shape_scalar(HLO_TOKEN);
      return NULL;
    case HLO_OP_OUTFEED:
      if (opnd(x, 1)->type != HLO_TOKEN) return fail(x, "second operand must be a token, got %s", shp(x, opnd(x, 1)));
      *out = shape_scalar(HLO_TOKEN);
      return NULL;
    case HLO_OP_SEND_DONE:
      *out = shape_scalar(HLO_TOKEN);
      return NULL;
    case HLO_OP_PARTITION_ID: case HLO_OP_REPLICA_ID:
      *out = shape_scalar(HLO_U32);
      return NULL;
    case HLO_OP_COPY_START: {
      hlo_shape u32 = shape_scalar(HLO_U32);
      const hlo_shape *p[3] = {opnd(x, 0), opnd(x, 0), &u32};
      *out = make_tuple(x->a, 3, p);
      return NULL;
    }
    case HLO_OP_COPY_DONE:
      if (!shape_is_tuple(opnd(x, 0)) || opnd(x, 0)->n_elems < 1)
        return fail(x, "operand must be the tuple from copy-start, got %s", shp(x, opnd(x, 0)));
      *out = strip_layout(x->a, &opnd(x, 0)->elems[0]);
      return NULL;
    case HLO_OP_COLLECTIVE_PERMUTE:
      if (ins->n_operands == 1 && shape_is_array(opnd(x, 0))) {
        *out = strip_layout(x->a, opnd(x, 0));
        return NULL;
      }
      return infer_given(x, out);
    case HLO_OP_ALL_GATHER: case HLO_OP_ALL_TO_ALL: case HLO_OP_ASYNC_START: case HLO_OP_ASYNC_UPDATE:
    case HLO_OP_ASYNC_DONE: case HLO_OP_CUSTOM_CALL: case HLO_OP_FFT: case HLO_OP_INFEED: case HLO_OP_RECV:
    case HLO_OP_RECV_DONE: case HLO_OP_REDUCE_SCATTER: case HLO_OP_RNG_BIT_GENERATOR:
    case HLO_OP_RNG_GET_AND_UPDATE_STATE: case HLO_OP_SEND:
      return infer_given(x, out);
    default:
      return fail(x, "no shape inference for this opcode");
  }
}

kiln_status hlo_infer_shape(arena *a, const hlo_instr *ins, hlo_shape *out) {
  infer_ctx x = {a, ins};
  if ((unsigned)ins->op >= HLO_OP_COUNT) return ERR_INVALID("%s: unknown opcode %d", ins->name, (int)ins->op);
  int arity = hlo_opcode_arity(ins->op);
  if (ins->n_operands < 0 || (ins->n_operands > 0 && !ins->operands)) return fail(&x, "malformed operand list");
  if (arity >= 0 && ins->n_operands != arity) TRY(expect_operands(&x, arity));
  for (int i = 0; i < ins->n_operands; i++) {
    if (!ins->operands[i]) return fail(&x, "operand %d is missing", i);
    kiln_status st = hlo_shape_validate(&ins->operands[i]->shape, false);
    if (st) {
      kiln_status r = fail(&x, "operand %d (%s) has an invalid shape: %s", i, ins->operands[i]->name,
                           kiln_status_message(st));
      kiln_status_free(st);
      return r;
    }
  }
  if (ins->n_called < 0 || (ins->n_called > 0 && !ins->called)) return fail(&x, "malformed called computation list");
  if (ins->n_called && !may_call(ins->op))
    return fail(&x, "takes no called computations, got %d", ins->n_called);
  for (int i = 0; i < ins->n_called; i++)
    if (!ins->called[i]) return fail(&x, "called computation %d is missing", i);
  TRY(check_narrow_types(&x));
  hlo_shape r;
  memset(&r, 0, sizeof r);
  TRY(dispatch(&x, &r));
  kiln_status st = hlo_shape_validate(&r, false);
  if (st) {
    kiln_status e = fail(&x, "inferred an invalid shape: %s", kiln_status_message(st));
    kiln_status_free(st);
    return e;
  }
  *out = r;
  return NULL;
}
