/* Table-driven tests of hlo_infer_shape. Each case names an opcode, its operand shapes,
 * its attributes (a tiny key=list language below), the signatures of its called
 * computations and either the shape XLA's rules give (as text) or a fragment of the
 * error expected. Instructions are made directly through ir.h so these tests depend on
 * nothing but the IR; the expectations were worked out by hand from XLA's operation
 * semantics. A coverage test makes sure every opcode has at least one accepted case. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hlo/ir.h"
#include "hlo/shape_inference.h"

/* ---------------------------------------------------------- shape text ---- */

static const char *skip_ws(const char *p) {
  while (*p == ' ') p++;
  return p;
}

/* Parses "f32[2,<=3]", "token[]" or "(f32[], (s32[2]))"; returns the end or NULL. */
static const char *parse_shape(arena *a, const char *p, hlo_shape *out) {
  p = skip_ws(p);
  memset(out, 0, sizeof *out);
  if (*p == '(') {
    hlo_shape elems[32];
    int n = 0;
    p = skip_ws(p + 1);
    while (*p != ')') {
      if (n == 32) return NULL;
      p = parse_shape(a, p, &elems[n++]);
      if (!p) return NULL;
      p = skip_ws(p);
      if (*p == ',') p = skip_ws(p + 1);
    }
    *out = shape_tuple(a, n, elems);
    return p + 1;
  }
  const char *t = p;
  while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) p++;
  if (!hlo_type_from_name(t, (size_t)(p - t), &out->type) || *p != '[') return NULL;
  p++;
  while (*p != ']') {
    if (out->rank == HLO_MAX_RANK) return NULL;
    if (p[0] == '<' && p[1] == '=') {
      out->dynamic[out->rank] = true;
      p += 2;
    }
    char *end;
    out->dims[out->rank++] = strtoll(p, &end, 10);
    if (end == p) return NULL;
    p = end;
    if (*p == ',') p++;
  }
  return p + 1;
}

static hlo_shape shape_of(arena *a, const char *text) {
  hlo_shape s;
  const char *end = parse_shape(a, text, &s);
  if (!end) {
    fprintf(stderr, "bad shape text in test: %s\n", text);
    abort();
  }
  return s;
}

static char *print_shape(const hlo_shape *s) {
  strbuf b;
  strbuf_init(&b);
  shape_print(&b, s, false);
  return strbuf_take(&b);
}

/* ------------------------------------------------------- attribute text ---- */

static hlo_ints ints_of(arena *a, const char *v, int *count) {
  int64_t buf[64];
  int n = 0;
  while (*v && *v != ' ') {
    char *end;
    buf[n++] = strtoll(v, &end, 10);
    v = end;
    if (*v == ',') v++;
  }
  if (count) *count = n;
  return hlo_ints_make(a, n, buf);
}

/* Applies "key=1,2 key2=3 ..." to ins. Window keys (wsize, wstride, wlo, whi, wld, wrd)
 * fill the window; conv keys (ib if is ki ko ks ob of os) set conv dnums. */
static void apply_attrs(hlo_instr *ins, const char *attrs) {
  arena *a = ins->parent->module->arena;
  const char *p = attrs ? attrs : "";
  bool window_seen = false;
  while (*(p = skip_ws(p))) {
    const char *eq = strchr(p, '=');
    if (!eq) abort();
    char key[16];
    size_t kn = (size_t)(eq - p);
    if (kn >= sizeof key) abort();
    memcpy(key, p, kn);
    key[kn] = 0;
    const char *v = eq + 1;
    int n;
    hlo_ints l = ints_of(a, v, &n);
    int64_t v0 = n ? l.v[0] : 0;
#define K(name) (strcmp(key, name) == 0)
    if (K("dims")) ins->dimensions = l;
    else if (K("start")) ins->slice_start = l;
    else if (K("limit")) ins->slice_limit = l;
    else if (K("stride")) ins->slice_stride = l;
    else if (K("sizes")) ins->dynamic_slice_sizes = l;
    else if (K("lo")) ins->pad_lo = l;
    else if (K("hi")) ins->pad_hi = l;
    else if (K("int")) ins->pad_interior = l;
    else if (K("iota")) ins->iota_dimension = v0;
    else if (K("index")) ins->tuple_index = v0;
    else if (K("k")) ins->k = v0;
    else if (K("eb")) ins->exponent_bits = v0;
    else if (K("mb")) ins->mantissa_bits = v0;
    else if (K("dir")) ins->direction = (hlo_direction)v0;
    else if (K("ctype")) ins->compare_type = (hlo_compare_type)v0;
    else if (K("pn")) ins->parameter_number = v0;
    else if (K("lb")) ins->dot.lhs_batch = l;
    else if (K("rb")) ins->dot.rhs_batch = l;
    else if (K("lc")) ins->dot.lhs_contracting = l;
    else if (K("rc")) ins->dot.rhs_contracting = l;
    else if (K("fgc")) ins->feature_group_count = v0;
    else if (K("bgc")) ins->batch_group_count = v0;
    else if (K("offset")) ins->gather.offset_dims = l;
    else if (K("collapsed")) ins->gather.collapsed_slice_dims = l;
    else if (K("sim")) ins->gather.start_index_map = l;
    else if (K("obd")) ins->gather.operand_batching_dims = l;
    else if (K("sibd")) ins->gather.start_indices_batching_dims = ins->scatter.scatter_indices_batching_dims = l;
    else if (K("ivd")) ins->gather.index_vector_dim = ins->scatter.index_vector_dim = v0;
    else if (K("ss")) ins->gather_slice_sizes = l;
    else if (K("uwd")) ins->scatter.update_window_dims = l;
    else if (K("iwd")) ins->scatter.inserted_window_dims = l;
    else if (K("sdod")) ins->scatter.scatter_dims_to_operand_dims = l;
    else if (K("ibd")) ins->scatter.input_batching_dims = l;
    else if (K("fi")) hlo_instr_add_raw_attr(ins, "feature_index", n ? arena_printf(a, "%lld", (long long)v0) : "");
    else if (K("left")) hlo_instr_add_raw_attr(ins, "left_side", v0 ? "true" : "false");
    else if (key[0] == 'w') {
      if (!window_seen) {
        window_seen = true;
        for (int i = 0; i < HLO_MAX_RANK; i++) {
          ins->window.dims[i].stride = ins->window.dims[i].lhs_dilate = ins->window.dims[i].rhs_dilate = 1;
        }
      }
      for (int i = 0; i < n; i++) {
        hlo_window_dim *d = &ins->window.dims[i];
        if (K("wsize")) d->size = l.v[i], ins->window.rank = n;
        else if (K("wstride")) d->stride = l.v[i];
        else if (K("wlo")) d->pad_lo = l.v[i];
        else if (K("whi")) d->pad_hi = l.v[i];
        else if (K("wld")) d->lhs_dilate = l.v[i];
        else if (K("wrd")) d->rhs_dilate = l.v[i];
        else abort();
      }
    } else {
      hlo_conv_dnums *c = &ins->conv;
      ins->has_conv_dnums = true;
      if (K("ib")) c->input_batch = v0;
      else if (K("if")) c->input_feature = v0;
      else if (K("ki")) c->kernel_input_feature = v0;
      else if (K("ko")) c->kernel_output_feature = v0;
      else if (K("ob")) c->output_batch = v0;
      else if (K("of")) c->output_feature = v0;
      else if (K("is") || K("ks") || K("os")) {
        int64_t *dst = K("is") ? c->input_spatial : K("ks") ? c->kernel_spatial : c->output_spatial;
        for (int i = 0; i < n; i++) dst[i] = l.v[i];
        c->n_spatial = n;
      } else {
        fprintf(stderr, "unknown test attribute %s\n", key);
        abort();
      }
    }
#undef K
    while (*p && *p != ' ') p++;
  }
}

/* --------------------------------------------------- called computations ---- */

/* A computation with the given signature "(P0, P1, ...)->R": parameters of those
 * shapes and a root of shape R (a zero constant, or a tuple of them). Shape inference
 * only looks at the signature. */
static hlo_computation *comp_from_signature(hlo_module *m, const char *sig, int k) {
  arena *a = m->arena;
  hlo_shape params;
  const char *p = parse_shape(a, sig, &params);
  if (!p || params.type != HLO_TUPLE) abort();
  p = skip_ws(p);
  if (p[0] != '-' || p[1] != '>') abort();
  hlo_shape result = shape_of(a, p + 2);
  hlo_computation *c = hlo_computation_new(m, arena_printf(a, "comp%d", k));
  for (int i = 0; i < params.n_elems; i++) {
    hlo_instr *pi = hlo_instr_new(c, HLO_OP_PARAMETER, &params.elems[i], arena_printf(a, "comp%d.p%d", k, i));
    pi->parameter_number = i;
  }
  int n_leaves = result.type == HLO_TUPLE ? result.n_elems : 1;
  hlo_instr *leaves[16];
  for (int i = 0; i < n_leaves; i++) {
    const hlo_shape *s = result.type == HLO_TUPLE ? &result.elems[i] : &result;
    hlo_literal *lit;
    if (literal_create(s, &lit)) abort();
    leaves[i] = hlo_instr_new(c, HLO_OP_CONSTANT, s, arena_printf(a, "comp%d.c%d", k, i));
    hlo_instr_set_literal(leaves[i], lit);
  }
  if (result.type == HLO_TUPLE) {
    c->root = hlo_instr_new(c, HLO_OP_TUPLE, &result, arena_printf(a, "comp%d.t", k));
    hlo_instr_set_operands(c->root, n_leaves, leaves);
  } else {
    c->root = leaves[0];
  }
  if (hlo_computation_index_params(c)) abort();
  return c;
}

/* -------------------------------------------------------------- the runner ---- */

typedef struct infer_case {
  hlo_opcode op;
  const char *operands; /* shapes separated by ';' */
  const char *attrs;
  const char *called; /* signatures separated by '|' */
  const char *given;  /* ins->shape; NULL means token[] ("not given") */
  const char *expect; /* the inferred shape, or NULL when an error is expected */
  const char *err;    /* fragment of the expected error */
} infer_case;

static void run_case(const infer_case *tc, int index) {
  hlo_module *m = hlo_module_new("test");
  arena *a = m->arena;
  hlo_computation *entry = hlo_computation_new(m, "entry");
  hlo_instr *ops[16];
  int n_ops = 0;
  if (tc->operands) {
    const char *p = tc->operands;
    while (*(p = skip_ws(p))) {
      hlo_shape s;
      p = parse_shape(a, p, &s);
      if (!p) abort();
      ops[n_ops] = hlo_instr_new(entry, HLO_OP_PARAMETER, &s, arena_printf(a, "arg%d", n_ops));
      ops[n_ops]->parameter_number = n_ops;
      n_ops++;
      p = skip_ws(p);
      if (*p == ';') p++;
    }
  }
  hlo_computation *called[8];
  int n_called = 0;
  if (tc->called) {
    const char *p = tc->called;
    while (*p) {
      const char *bar = strchr(p, '|');
      size_t len = bar ? (size_t)(bar - p) : strlen(p);
      char *sig = arena_strndup(a, p, len);
      called[n_called] = comp_from_signature(m, sig, n_called);
      n_called++;
      p += len;
      if (*p == '|') p++;
    }
  }
  hlo_shape given = tc->given ? shape_of(a, tc->given) : shape_scalar(HLO_TOKEN);
  hlo_instr *ins = hlo_instr_new(entry, tc->op, &given, "x");
  if (tc->op == HLO_OP_CONSTANT && tc->given) {
    hlo_literal *lit;
    if (literal_create(&given, &lit)) abort();
    hlo_instr_set_literal(ins, lit);
  }
  apply_attrs(ins, tc->attrs);
  hlo_instr_set_operands(ins, n_ops, ops);
  hlo_instr_set_called(ins, n_called, called);

  hlo_shape out;
  kiln_status st = hlo_infer_shape(a, ins, &out);
  char detail[2048];
  if (tc->expect) {
    if (st) {
      snprintf(detail, sizeof detail, "case %d (%s): expected %s, got error: %s", index, hlo_opcode_name(tc->op),
               tc->expect, kiln_status_message(st));
      check_fail(__FILE__, __LINE__, "inference succeeds", detail);
      kiln_status_free(st);
    } else {
      char *got = print_shape(&out);
      if (strcmp(got, tc->expect) != 0) {
        snprintf(detail, sizeof detail, "case %d (%s): expected %s, got %s", index, hlo_opcode_name(tc->op), tc->expect,
                 got);
        check_fail(__FILE__, __LINE__, "inferred shape", detail);
      }
      free(got);
    }
  } else {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "x (%s): ", hlo_opcode_name(tc->op));
    if (!st) {
      char *got = print_shape(&out);
      snprintf(detail, sizeof detail, "case %d (%s): expected an error containing \"%s\", got %s", index,
               hlo_opcode_name(tc->op), tc->err, got);
      check_fail(__FILE__, __LINE__, "inference fails", detail);
      free(got);
    } else {
      const char *msg = kiln_status_message(st);
      if (!strstr(msg, tc->err) || strncmp(msg, prefix, strlen(prefix)) != 0) {
        snprintf(detail, sizeof detail, "case %d (%s): error \"%s\" lacks \"%s\" or the prefix \"%s\"", index,
                 hlo_opcode_name(tc->op), msg, tc->err, prefix);
        check_fail(__FILE__, __LINE__, "error message", detail);
      }
      if (kiln_status_code(st) != KILN_INVALID_ARGUMENT)
        check_fail(__FILE__, __LINE__, "error code", kiln_status_message(st));
      kiln_status_free(st);
    }
  }
  hlo_module_free(m);
}

static void run_table(const infer_case *cases, int n) {
  for (int i = 0; i < n; i++) run_case(&cases[i], i);
}

#define RUN(table) run_table(table, (int)(sizeof table / sizeof table[0]))
#define OK(op, operands, attrs, called, given, expect) {HLO_OP_##op, operands, attrs, called, given, expect, NULL}
#define BAD(op, operands, attrs, called, given, err) {HLO_OP_##op, operands, attrs, called, given, NULL, err}

/* ------------------------------------------------------------ elementwise ---- */

static const infer_case unary_cases[] = {
    OK(ABS, "f32[2,3]", 0, 0, 0, "f32[2,3]"),
    OK(ABS, "s32[4]", 0, 0, 0, "s32[4]"),
    BAD(ABS, "u32[4]", 0, 0, 0, "signed integer or floating-point"),
    BAD(ABS, "(f32[2])", 0, 0, 0, "operand must be an array, got (f32[2])"),
    OK(NEGATE, "u8[3]", 0, 0, 0, "u8[3]"),
    BAD(NEGATE, "pred[3]", 0, 0, 0, "has element type pred"),
    OK(SIGN, "s8[2]", 0, 0, 0, "s8[2]"),
    BAD(SIGN, "u8[2]", 0, 0, 0, "u8"),
    OK(EXP, "f32[]", 0, 0, 0, "f32[]"),
    BAD(EXP, "s32[2]", 0, 0, 0, "floating-point"),
    OK(EXPM1, "f64[2]", 0, 0, 0, "f64[2]"),
    OK(LOG, "bf16[2,2]", 0, 0, 0, "bf16[2,2]"),
    OK(LOG1P, "f16[1]", 0, 0, 0, "f16[1]"),
    OK(LOGISTIC, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(SQRT, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(RSQRT, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(CBRT, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(SINE, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(COSINE, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(TAN, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(TANH, "f16[3]", 0, 0, 0, "f16[3]"),
    OK(ERF, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(CEIL, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(FLOOR, "f32[3]", 0, 0, 0, "f32[3]"),
    BAD(FLOOR, "s32[3]", 0, 0, 0, "floating-point"),
    OK(ROUND_NEAREST_AFZ, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(ROUND_NEAREST_EVEN, "f32[3]", 0, 0, 0, "f32[3]"),
    OK(IS_FINITE, "bf16[2]", 0, 0, 0, "pred[2]"),
    BAD(IS_FINITE, "s32[2]", 0, 0, 0, "floating-point"),
    OK(NOT, "pred[2]", 0, 0, 0, "pred[2]"),
    OK(NOT, "s8[2]", 0, 0, 0, "s8[2]"),
    BAD(NOT, "f32[2]", 0, 0, 0, "pred or an integer type"),
    OK(POPCNT, "u32[2]", 0, 0, 0, "u32[2]"),
    BAD(POPCNT, "f32[2]", 0, 0, 0, "an integer type"),
    OK(CLZ, "s64[2]", 0, 0, 0, "s64[2]"),
    BAD(CLZ, "pred[2]", 0, 0, 0, "an integer type"),
    OK(COPY, "(f32[2], s32[])", 0, 0, 0, "(f32[2], s32[])"),
    OK(REDUCE_PRECISION, "f32[4]", "eb=5 mb=10", 0, 0, "f32[4]"),
    BAD(REDUCE_PRECISION, "s32[4]", "eb=5 mb=10", 0, 0, "floating-point"),
    BAD(REDUCE_PRECISION, "f32[4]", "eb=0 mb=10", 0, 0, "exponent_bits=0"),
    BAD(REDUCE_PRECISION, "f32[4]", "eb=5 mb=-1", 0, 0, "mantissa_bits=-1"),
    BAD(NEGATE, "f32[2]; f32[2]", 0, 0, 0, "expects 1 operands, got 2"),
};

static const infer_case binary_cases[] = {
    OK(ADD, "f32[2,3]; f32[2,3]", 0, 0, 0, "f32[2,3]"),
    BAD(ADD, "f32[2,3]; f32[3,2]", 0, 0, 0, "operand shapes f32[2,3] and f32[3,2] differ"),
    BAD(ADD, "f32[]; f32[2]", 0, 0, 0, "operand shapes f32[] and f32[2] differ"),
    BAD(ADD, "f32[2]; s32[2]", 0, 0, 0, "element types differ: f32[2] and s32[2]"),
    BAD(ADD, "f32[2]; (f32[2])", 0, 0, 0, "rhs must be an array"),
    BAD(ADD, "f32[2]", 0, 0, 0, "expects 2 operands, got 1"),
    BAD(ADD, "f32[]; f32[]", 0, "(f32[], f32[])->f32[]", 0, "takes no called computations"),
    OK(ADD, "pred[2]; pred[2]", 0, 0, 0, "pred[2]"),
    OK(MULTIPLY, "u16[2]; u16[2]", 0, 0, 0, "u16[2]"),
    OK(MAXIMUM, "f32[2]; f32[2]", 0, 0, 0, "f32[2]"),
    OK(MINIMUM, "s32[2]; s32[2]", 0, 0, 0, "s32[2]"),
    OK(SUBTRACT, "s32[2]; s32[2]", 0, 0, 0, "s32[2]"),
    BAD(SUBTRACT, "pred[2]; pred[2]", 0, 0, 0, "(not pred)"),
    OK(DIVIDE, "f32[2]; f32[2]", 0, 0, 0, "f32[2]"),
    OK(REMAINDER, "s32[2]; s32[2]", 0, 0, 0, "s32[2]"),
    OK(POWER, "s32[2]; s32[2]", 0, 0, 0, "s32[2]"),
    OK(ATAN2, "f32[2]; f32[2]", 0, 0, 0, "f32[2]"),
    BAD(ATAN2, "s32[2]; s32[2]", 0, 0, 0, "floating-point"),
    OK(AND, "s32[2]; s32[2]", 0, 0, 0, "s32[2]"),
    OK(OR, "pred[2]; pred[2]", 0, 0, 0, "pred[2]"),
    OK(XOR, "u8[]; u8[]", 0, 0, 0, "u8[]"),
    BAD(AND, "f32[2]; f32[2]", 0, 0, 0, "pred or an integer type"),
    OK(SHIFT_LEFT, "s32[2]; s32[2]", 0, 0, 0, "s32[2]"),
    OK(SHIFT_RIGHT_ARITHMETIC, "s16[2]; s16[2]", 0, 0, 0, "s16[2]"),
    OK(SHIFT_RIGHT_LOGICAL, "u32[2]; u32[2]", 0, 0, 0, "u32[2]"),
    BAD(SHIFT_LEFT, "f32[2]; f32[2]", 0, 0, 0, "an integer type"),
    BAD(SHIFT_RIGHT_LOGICAL, "pred[2]; pred[2]", 0, 0, 0, "an integer type"),
    OK(COMPARE, "f32[2,3]; f32[2,3]", "dir=2", 0, 0, "pred[2,3]"),
    OK(COMPARE, "u8[2]; u8[2]", "ctype=4", 0, 0, "pred[2]"),
    BAD(COMPARE, "s32[2]; s32[2]", "ctype=1", 0, 0, "FLOAT/TOTALORDER"),
    BAD(COMPARE, "f32[2]; f32[3]", 0, 0, 0, "differ"),
};

static const infer_case ternary_cases[] = {
    OK(SELECT, "pred[2,3]; f32[2,3]; f32[2,3]", 0, 0, 0, "f32[2,3]"),
    OK(SELECT, "pred[]; f32[2,3]; f32[2,3]", 0, 0, 0, "f32[2,3]"),
    BAD(SELECT, "s32[2,3]; f32[2,3]; f32[2,3]", 0, 0, 0, "element type pred"),
    BAD(SELECT, "pred[3,2]; f32[2,3]; f32[2,3]", 0, 0, 0, "must be a scalar or have the dims"),
    BAD(SELECT, "pred[2]; f32[2]; s32[2]", 0, 0, 0, "on_true f32[2] and on_false s32[2] differ"),
    OK(CLAMP, "f32[]; f32[4]; f32[]", 0, 0, 0, "f32[4]"),
    OK(CLAMP, "s32[4]; s32[4]; s32[4]", 0, 0, 0, "s32[4]"),
    BAD(CLAMP, "f32[3]; f32[4]; f32[]", 0, 0, 0, "must be scalars or have the dims"),
    BAD(CLAMP, "s32[]; f32[4]; f32[]", 0, 0, 0, "element types"),
    OK(CONVERT, "f32[2,3]", 0, 0, "s32[]", "s32[2,3]"),
    OK(CONVERT, "pred[2]", 0, 0, "bf16[7]", "bf16[2]"),
    BAD(CONVERT, "f32[2,3]", 0, 0, "()", "cannot convert f32[2,3] to tuple"),
    BAD(CONVERT, "(f32[2])", 0, 0, "f32[]", "must be an array"),
    OK(BITCAST_CONVERT, "f32[2]", 0, 0, "s32[]", "s32[2]"),
    OK(BITCAST_CONVERT, "f32[2]", 0, 0, "u8[]", "u8[2,4]"),
    OK(BITCAST_CONVERT, "u8[3,4]", 0, 0, "f32[]", "f32[3]"),
    OK(BITCAST_CONVERT, "f64[2]", 0, 0, "f32[]", "f32[2,2]"),
    BAD(BITCAST_CONVERT, "u8[3,2]", 0, 0, "f32[]", "needs a last dimension of size 4"),
    OK(STOCHASTIC_CONVERT, "f32[4]; u32[4]", 0, 0, "bf16[]", "bf16[4]"),
    BAD(STOCHASTIC_CONVERT, "f32[4]; u16[4]", 0, 0, "bf16[]", "unsigned integers as wide as f32"),
};

/* --------------------------------------------------------- shape changes ---- */

static const infer_case shape_cases[] = {
    OK(BROADCAST, "f32[3]", "dims=1", 0, "f32[2,3]", "f32[2,3]"),
    OK(BROADCAST, "f32[]", "dims=", 0, "f32[2,2]", "f32[2,2]"),
    OK(BROADCAST, "f32[2,3]", "dims=1,0", 0, "f32[3,2]", "f32[3,2]"),
    OK(BROADCAST, "s32[3]", "dims=1", 0, "f32[2,3]", "s32[2,3]"),
    BAD(BROADCAST, "f32[3]", "dims=0", 0, "f32[2,3]", "maps to result dimension 0 (size 2)"),
    BAD(BROADCAST, "f32[3]", "dims=5", 0, "f32[2,3]", "dimension 5 is out of range"),
    BAD(BROADCAST, "f32[3,3]", "dims=1,1", 0, "f32[3,3]", "repeats dimension 1"),
    BAD(BROADCAST, "f32[3]", "dims=", 0, "f32[2,3]", "has 0 entries but the operand f32[3] has rank 1"),
    OK(RESHAPE, "f32[2,3]", 0, 0, "f32[3,2]", "f32[3,2]"),
    OK(RESHAPE, "f32[1]", 0, 0, "f32[]", "f32[]"),
    OK(RESHAPE, "f32[6]", 0, 0, "s32[6,1]", "f32[6,1]"),
    BAD(RESHAPE, "f32[6]", 0, 0, "f32[4]", "cannot reshape f32[6] (6 elements) to f32[4] (4 elements)"),
    OK(DYNAMIC_RESHAPE, "f32[6]; s32[]; s32[]", 0, 0, "f32[2,3]", "f32[2,3]"),
    BAD(DYNAMIC_RESHAPE, "f32[6]; s32[]", 0, 0, "f32[2,3]", "dimension sizes"),
    OK(TRANSPOSE, "f32[2,3,4]", "dims=2,0,1", 0, 0, "f32[4,2,3]"),
    BAD(TRANSPOSE, "f32[2,3,4]", "dims=0,0,1", 0, 0, "repeats dimension 0"),
    BAD(TRANSPOSE, "f32[2,3,4]", "dims=0,1", 0, 0, "not a permutation"),
    OK(SLICE, "f32[10,8]", "start=2,0 limit=8,8 stride=3,2", 0, 0, "f32[2,4]"),
    OK(SLICE, "f32[10]", "start=1 limit=8 stride=3", 0, 0, "f32[3]"),
    OK(SLICE, "f32[10]", "start=4 limit=4 stride=1", 0, 0, "f32[0]"),
    OK(SLICE, "f32[10]", "start=1 limit=3", 0, 0, "f32[2]"),
    BAD(SLICE, "f32[10]", "start=5 limit=3 stride=1", 0, 0, "slice [5:3] in dimension 0 is outside [0:10]"),
    BAD(SLICE, "f32[10]", "start=0 limit=11 stride=1", 0, 0, "outside [0:10]"),
    BAD(SLICE, "f32[10]", "start=0 limit=10 stride=0", 0, 0, "stride 0"),
    BAD(SLICE, "f32[10,2]", "start=0 limit=10 stride=1", 0, 0, "1 starts"),
    OK(DYNAMIC_SLICE, "f32[10,8]; s32[]; s32[]", "sizes=2,8", 0, 0, "f32[2,8]"),
    BAD(DYNAMIC_SLICE, "f32[10,8]; s32[]; s32[]", "sizes=11,1", 0, 0, "size 11 of dimension 0 is outside [0, 10]"),
    BAD(DYNAMIC_SLICE, "f32[10,8]; s32[]", "sizes=2,8", 0, 0, "2 scalar start indices"),
    BAD(DYNAMIC_SLICE, "f32[10,8]; f32[]; f32[]", "sizes=2,8", 0, 0, "must be an integer scalar"),
    BAD(DYNAMIC_SLICE, "f32[10,8]; s32[]; s64[]", "sizes=2,8", 0, 0, "share one type"),
    BAD(DYNAMIC_SLICE, "f32[10]; s32[1]", "sizes=2", 0, 0, "integer scalar, got s32[1]"),
    OK(DYNAMIC_UPDATE_SLICE, "f32[10,8]; f32[2,8]; s32[]; s32[]", 0, 0, 0, "f32[10,8]"),
    BAD(DYNAMIC_UPDATE_SLICE, "f32[10,8]; f32[11,8]; s32[]; s32[]", 0, 0, 0, "larger than the operand"),
    BAD(DYNAMIC_UPDATE_SLICE, "f32[10,8]; s32[2,8]; s32[]; s32[]", 0, 0, 0, "element types differ"),
    BAD(DYNAMIC_UPDATE_SLICE, "f32[10,8]; f32[2,8]; s32[]", 0, 0, 0, "2 scalar start indices"),
    OK(CONCATENATE, "f32[2,3]; f32[4,3]", "dims=0", 0, 0, "f32[6,3]"),
    OK(CONCATENATE, "f32[2,3]; f32[2,5]; f32[2,1]", "dims=1", 0, 0, "f32[2,9]"),
    BAD(CONCATENATE, "f32[2,3]; f32[4,4]", "dims=0", 0, 0, "differ in dimension 1"),
    BAD(CONCATENATE, "f32[2,3]; f32[4,3]", "dims=2", 0, 0, "out of range"),
    BAD(CONCATENATE, "f32[2,3]; s32[4,3]", "dims=0", 0, 0, "element types differ"),
    BAD(CONCATENATE, "f32[2,3]; f32[4,3,1]", "dims=0", 0, 0, "ranks differ"),
    BAD(CONCATENATE, "", "dims=0", 0, 0, "at least 1 operands"),
    OK(PAD, "f32[4,5]; f32[]", "lo=1,-1 hi=2,0 int=0,1", 0, 0, "f32[7,8]"),
    OK(PAD, "f32[]; f32[]", "lo= hi= int=", 0, 0, "f32[]"),
    OK(PAD, "f32[0]; f32[]", "lo=1 hi=1 int=3", 0, 0, "f32[2]"),
    BAD(PAD, "f32[2]; f32[]", "lo=-3 hi=0 int=0", 0, 0, "negative (-1)"),
    BAD(PAD, "f32[2]; f32[]", "lo=0 hi=0 int=-1", 0, 0, "interior padding -1"),
    BAD(PAD, "f32[2]; f32[1]", "lo=0 hi=0 int=0", 0, 0, "padding value must be a scalar"),
    BAD(PAD, "f32[2]; s32[]", "lo=0 hi=0 int=0", 0, 0, "element types differ"),
    OK(REVERSE, "f32[2,3]", "dims=0,1", 0, 0, "f32[2,3]"),
    BAD(REVERSE, "f32[2,3]", "dims=2", 0, 0, "out of range"),
    OK(IOTA, 0, "iota=1", 0, "s32[4,5]", "s32[4,5]"),
    BAD(IOTA, 0, "iota=2", 0, "s32[4,5]", "iota_dimension=2 is out of range"),
    BAD(IOTA, 0, "iota=0", 0, "pred[3]", "pred"),
    BAD(IOTA, 0, "iota=0", 0, "f32[]", "rank >= 1"),
    OK(CONSTANT, 0, 0, 0, "f32[2,2]", "f32[2,2]"),
    BAD(CONSTANT, 0, 0, 0, 0, "constant has no literal"),
    OK(PARAMETER, 0, "pn=0", 0, "(f32[2], s32[])", "(f32[2], s32[])"),
    BAD(PARAMETER, 0, "pn=-1", 0, "f32[]", "negative"),
    BAD(PARAMETER, 0, 0, 0, "f32[-1]", "negative size -1"),
    OK(TUPLE, "f32[2]; s32[]", 0, 0, 0, "(f32[2], s32[])"),
    OK(TUPLE, 0, 0, 0, 0, "()"),
    OK(GET_TUPLE_ELEMENT, "(f32[2], s32[])", "index=1", 0, 0, "s32[]"),
    OK(GET_TUPLE_ELEMENT, "((f32[2]), s32[])", "index=0", 0, 0, "(f32[2])"),
    BAD(GET_TUPLE_ELEMENT, "(f32[2], s32[])", "index=2", 0, 0, "index=2 is out of range"),
    BAD(GET_TUPLE_ELEMENT, "f32[2]", "index=0", 0, 0, "must be a tuple"),
};

/* ------------------------------------------------------------ reductions ---- */

static const infer_case reduce_cases[] = {
    OK(REDUCE, "f32[2,3,4]; f32[]", "dims=1", "(f32[], f32[])->f32[]", 0, "f32[2,4]"),
    OK(REDUCE, "f32[2,3,4]; f32[]", "dims=0,1,2", "(f32[], f32[])->f32[]", 0, "f32[]"),
    OK(REDUCE, "f32[2,3]; f32[]", "dims=", "(f32[], f32[])->f32[]", 0, "f32[2,3]"),
    OK(REDUCE, "f32[5,3]; s32[5,3]; f32[]; s32[]", "dims=0", "(f32[], s32[], f32[], s32[])->(f32[], s32[])", 0,
       "(f32[3], s32[3])"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=2", "(f32[], f32[])->f32[]", 0, "dimension 2 is out of range"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=0,0", "(f32[], f32[])->f32[]", 0, "repeats dimension 0"),
    BAD(REDUCE, "f32[2,3]; f32[2]", "dims=0", "(f32[], f32[])->f32[]", 0, "init value 0 must be a scalar"),
    BAD(REDUCE, "f32[2,3]; s32[]", "dims=0", "(f32[], f32[])->f32[]", 0, "does not match the element type"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=0", "(f32[])->f32[]", 0, "must take 2 parameters"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=0", "(f32[], f32[])->s32[]", 0, "returns s32[] for slot 0"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=0", "(f32[], s32[])->f32[]", 0, "input parameter 1 is s32[]"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=0", "(f32[], f32[])->f32[1]", 0, "must return scalars"),
    BAD(REDUCE, "f32[2,3]; f32[]; f32[]", "dims=0", "(f32[], f32[])->f32[]", 0, "even count"),
    BAD(REDUCE, "f32[2,3]; f32[]", "dims=0", 0, 0, "expects 1 called computation, got 0"),
    BAD(REDUCE, "f32[5,3]; s32[5,2]; f32[]; s32[]", "dims=0", "(f32[], s32[], f32[], s32[])->(f32[], s32[])", 0,
        "different dims"),
    BAD(REDUCE, "f32[5,3]; s32[5,3]; f32[]; s32[]", "dims=0", "(f32[], s32[], f32[], s32[])->f32[]", 0,
        "must return a tuple of 2 scalars"),
    OK(REDUCE_WINDOW, "f32[4,6]; f32[]", "wsize=2,3 wstride=2,3", "(f32[], f32[])->f32[]", 0, "f32[2,2]"),
    OK(REDUCE_WINDOW, "f32[4,6]; f32[]", "wsize=2,3 wstride=2,3 wlo=1,0 whi=1,0", "(f32[], f32[])->f32[]", 0,
       "f32[3,2]"),
    OK(REDUCE_WINDOW, "f32[4,6]; f32[]", "wsize=2,3 wld=2,1 wrd=1,2", "(f32[], f32[])->f32[]", 0, "f32[6,2]"),
    OK(REDUCE_WINDOW, "f32[2]; f32[]", "wsize=5", "(f32[], f32[])->f32[]", 0, "f32[0]"),
    OK(REDUCE_WINDOW, "f32[4]; s32[4]; f32[]; s32[]", "wsize=2 wstride=2",
       "(f32[], s32[], f32[], s32[])->(f32[], s32[])", 0, "(f32[2], s32[2])"),
    BAD(REDUCE_WINDOW, "f32[4,6]; f32[]", "wsize=2", "(f32[], f32[])->f32[]", 0, "window has 1 dimensions"),
    BAD(REDUCE_WINDOW, "f32[4]; f32[]", "wsize=2 wstride=0", "(f32[], f32[])->f32[]", 0, "stride 0"),
    BAD(REDUCE_WINDOW, "f32[4]; f32[]", "wsize=0", "(f32[], f32[])->f32[]", 0, "size 0"),
    BAD(REDUCE_WINDOW, "f32[2]; f32[]", "wsize=1 wlo=-3", "(f32[], f32[])->f32[]", 0, "negative"),
    BAD(REDUCE_WINDOW, "f32[2]; f32[]", "wsize=1 wld=0", "(f32[], f32[])->f32[]", 0, "dilations must be >= 1"),
    OK(SELECT_AND_SCATTER, "f32[4,6]; f32[2,2]; f32[]", "wsize=2,3 wstride=2,3",
       "(f32[], f32[])->pred[] | (f32[], f32[])->f32[]", 0, "f32[4,6]"),
    BAD(SELECT_AND_SCATTER, "f32[4,6]; f32[2,3]; f32[]", "wsize=2,3 wstride=2,3",
        "(f32[], f32[])->pred[] | (f32[], f32[])->f32[]", 0, "source f32[2,3] does not match"),
    BAD(SELECT_AND_SCATTER, "f32[4,6]; f32[2,2]; f32[]", "wsize=2,3 wstride=2,3",
        "(f32[], f32[])->f32[] | (f32[], f32[])->f32[]", 0,
        "select computation comp0 must be (f32[], f32[]) -> pred[]"),
    BAD(SELECT_AND_SCATTER, "f32[4,6]; f32[2,2]; f32[]", "wsize=2,3 wstride=2,3", "(f32[], f32[])->pred[]", 0,
        "expects 2 called computations, got 1"),
};

/* --------------------------------------------------------- dot and conv ---- */

#define NHWC "ib=0 is=1,2 if=3 ks=0,1 ki=2 ko=3 ob=0 os=1,2 of=3"

static const infer_case dot_conv_cases[] = {
    OK(DOT, "f32[2,3]; f32[3,4]", "lc=1 rc=0", 0, 0, "f32[2,4]"),
    OK(DOT, "f32[5,2,3]; f32[5,3,4]", "lb=0 rb=0 lc=2 rc=1", 0, 0, "f32[5,2,4]"),
    OK(DOT, "f32[2,5,3]; f32[3,5,4]", "lb=1 rb=1 lc=2 rc=0", 0, 0, "f32[5,2,4]"),
    OK(DOT, "f32[2]; f32[3]", 0, 0, 0, "f32[2,3]"),
    OK(DOT, "f32[3]; f32[3]", "lc=0 rc=0", 0, 0, "f32[]"),
    OK(DOT, "s8[2,3]; s8[3,4]", "lc=1 rc=0", 0, "s32[]", "s32[2,4]"),
    OK(DOT, "bf16[2,3]; bf16[3,4]", "lc=1 rc=0", 0, "f32[2,4]", "f32[2,4]"),
    BAD(DOT, "s32[2,3]; s32[3,4]", "lc=1 rc=0", 0, "s8[]", "narrower"),
    BAD(DOT, "f32[2,3]; f32[4,4]", "lc=1 rc=0", 0, 0, "contracting dimension sizes differ"),
    BAD(DOT, "f32[2,3]; f32[3,4]", "lc=2 rc=0", 0, 0, "lhs_contracting_dims={2}: dimension 2 is out of range"),
    BAD(DOT, "f32[2,3]; f32[3,4]", "lc=1 rc=", 0, 0, "differ in length"),
    BAD(DOT, "f32[2,3]; f32[2,3]", "lb=0 rb=0 lc=0 rc=1", 0, 0,
        "in both lhs_batch_dims={0} and lhs_contracting_dims={0}"),
    BAD(DOT, "f32[5,2,3]; f32[6,3,4]", "lb=0 rb=0 lc=2 rc=1", 0, 0, "batch dimension sizes differ"),
    OK(CONVOLUTION, "f32[1,5,5,3]; f32[3,3,3,8]", NHWC " wsize=3,3", 0, 0, "f32[1,3,3,8]"),
    OK(CONVOLUTION, "f32[1,7,7,3]; f32[3,3,3,8]", NHWC " wsize=3,3 wstride=2,2 wlo=1,1 whi=1,1", 0, 0,
       "f32[1,4,4,8]"),
    OK(CONVOLUTION, "f32[2,3,5,5]; f32[8,3,3,3]", "wsize=3,3", 0, 0, "f32[2,8,3,3]"),
    OK(CONVOLUTION, "f32[1,5,5,4]; f32[3,3,2,8]", NHWC " wsize=3,3 fgc=2", 0, 0, "f32[1,3,3,8]"),
    OK(CONVOLUTION, "f32[4,5,5,3]; f32[3,3,3,8]", NHWC " wsize=3,3 bgc=2", 0, 0, "f32[2,3,3,8]"),
    OK(CONVOLUTION, "f32[1,5,5,3]; f32[3,3,3,8]", NHWC " wsize=3,3 wld=2,2", 0, 0, "f32[1,7,7,8]"),
    OK(CONVOLUTION, "f32[1,5,5,3]; f32[3,3,3,8]", NHWC " wsize=3,3 wrd=2,2", 0, 0, "f32[1,1,1,8]"),
    OK(CONVOLUTION, "f32[1,5,3]; f32[3,3,8]", "ib=0 is=1 if=2 ks=0 ki=1 ko=2 ob=0 os=1 of=2 wsize=3", 0, "f64[]",
       "f64[1,3,8]"),
    OK(CONVOLUTION, "f32[2,3]; f32[3,4]", "ib=0 if=1 ki=0 ko=1 ob=0 of=1", 0, 0, "f32[2,4]"),
    BAD(CONVOLUTION, "f32[1,5,5,4]; f32[3,3,3,8]", NHWC " wsize=3,3 fgc=2", 0, 0, "feature_group_count 2"),
    BAD(CONVOLUTION, "f32[4,5,5,3]; f32[3,3,3,8]", NHWC " wsize=3,3 bgc=3", 0, 0, "batch_group_count 3"),
    BAD(CONVOLUTION, "f32[4,5,5,4]; f32[3,3,2,8]", NHWC " wsize=3,3 fgc=2 bgc=2", 0, 0, "cannot both exceed 1"),
    BAD(CONVOLUTION, "f32[1,5,5,3]; f32[3,3,3,8]", NHWC " wsize=2,2", 0, 0, "window size 2 in spatial dimension 0"),
    BAD(CONVOLUTION, "f32[1,5,5,3]; f32[3,3,3,8]", NHWC " wsize=3", 0, 0, "window has 1 dimensions"),
    BAD(CONVOLUTION, "f32[1,5,5,3]; f32[3,3,3,8]", "ib=0 is=1,2 if=1 ks=0,1 ki=2 ko=3 ob=0 os=1,2 of=3 wsize=3,3", 0,
        0, "input dimension numbers are not a permutation"),
    BAD(CONVOLUTION, "f32[1,5,5]; f32[3,3,3,8]", NHWC " wsize=3,3", 0, 0, "must both have rank 4"),
};

/* ------------------------------------------------------- gather/scatter ---- */

static const infer_case gather_scatter_cases[] = {
    OK(GATHER, "f32[10,4]; s32[3]", "offset=1 collapsed=0 sim=0 ivd=1 ss=1,4", 0, 0, "f32[3,4]"),
    OK(GATHER, "f32[10,4]; s32[3,1]", "offset=1 collapsed=0 sim=0 ivd=1 ss=1,4", 0, 0, "f32[3,4]"),
    OK(GATHER, "f32[8,6,4]; s32[5,2]", "offset=1,2 collapsed=0 sim=0,1 ivd=1 ss=1,3,4", 0, 0, "f32[5,3,4]"),
    OK(GATHER, "f32[8,6,4]; s32[5,2]", "offset=0,2 collapsed=0 sim=0,1 ivd=1 ss=1,3,4", 0, 0, "f32[3,5,4]"),
    OK(GATHER, "f32[8,6,4]; s32[2,5]", "offset=1,2 collapsed=0 sim=0,1 ivd=0 ss=1,3,4", 0, 0, "f32[5,3,4]"),
    OK(GATHER, "f32[2,8,4]; s32[2,5,1]", "offset=2 collapsed=1 obd=0 sibd=0 sim=1 ivd=2 ss=1,1,4", 0, 0,
       "f32[2,5,4]"),
    BAD(GATHER, "f32[10,4]; s32[3,1]", "offset=1 collapsed=0 sim=0 ivd=1 ss=1,5", 0, 0, "size 5 of dimension 1"),
    BAD(GATHER, "f32[10,4]; s32[3,1]", "offset=1 collapsed=0 sim=0 ivd=1 ss=2,4", 0, 0, "must be 0 or 1"),
    BAD(GATHER, "f32[10,4]; s32[3,2]", "offset=1 collapsed=0 sim=0 ivd=1 ss=1,4", 0, 0,
        "start_index_map={0} has 1 entries but the index vector of s32[3,2] has 2"),
    BAD(GATHER, "f32[8,6,4]; s32[5,2]", "offset=2,1 collapsed=0 sim=0,1 ivd=1 ss=1,3,4", 0, 0, "must be sorted"),
    BAD(GATHER, "f32[10,4]; f32[3,1]", "offset=1 collapsed=0 sim=0 ivd=1 ss=1,4", 0, 0, "must be integers"),
    BAD(GATHER, "f32[10,4]; s32[3,1]", "offset=1 collapsed=0 sim=0 ivd=3 ss=1,4", 0, 0, "index_vector_dim=3"),
    BAD(GATHER, "f32[10,4]; s32[3,1]", "offset=1 collapsed= sim=0 ivd=1 ss=1,4", 0, 0,
        "offset_dims (1) + collapsed_slice_dims (0) + operand_batching_dims (0) must equal the rank 2"),
    BAD(GATHER, "f32[3,8,4]; s32[2,5,1]", "offset=2 collapsed=1 obd=0 sibd=0 sim=1 ivd=2 ss=1,1,4", 0, 0,
        "batching dimension sizes differ"),
    BAD(GATHER, "f32[2,8,4]; s32[2,5,1]", "offset=2 collapsed=1 obd=0 sibd=0 sim=0 ivd=2 ss=1,1,4", 0, 0,
        "in both start_index_map={0} and operand_batching_dims={0}"),
    BAD(GATHER, "f32[2,8,4]; s32[2,5,1]", "offset=2 collapsed=1 obd=0 sibd=2 sim=1 ivd=2 ss=1,1,4", 0, 0,
        "contains index_vector_dim=2"),
    OK(SCATTER, "f32[10,4]; s32[3,1]; f32[3,4]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0, "f32[10,4]"),
    OK(SCATTER, "f32[10]; s32[10]; s32[3,1]; f32[3]; s32[3]", "uwd= iwd=0 sdod=0 ivd=1",
       "(f32[], s32[], f32[], s32[])->(f32[], s32[])", 0, "(f32[10], s32[10])"),
    OK(SCATTER, "f32[2,10,4]; s32[2,3,1]; f32[2,3,4]", "uwd=2 iwd=1 ibd=0 sibd=0 sdod=1 ivd=2",
       "(f32[], f32[])->f32[]", 0, "f32[2,10,4]"),
    OK(SCATTER, "f32[10,4]; s32[3]; f32[3,2]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0, "f32[10,4]"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]; f32[3,5]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0,
        "update window dimension 1 (size 5) exceeds input dimension 1 (size 4)"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]; f32[2,4]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0,
        "must match scatter_indices dimension 0"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]; f32[3,4,1]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0,
        "must have rank 2"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]; s32[3,4]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0,
        "element types differ"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->f32[]", 0, "odd count >= 3"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]; f32[3,4]", "uwd=1 iwd=0 sdod=0,1 ivd=1", "(f32[], f32[])->f32[]", 0,
        "scatter_dims_to_operand_dims={0,1} has 2 entries"),
    BAD(SCATTER, "f32[10,4]; s32[3,1]; f32[3,4]", "uwd=1 iwd=0 sdod=0 ivd=1", "(f32[], f32[])->pred[]", 0,
        "returns pred[] for slot 0"),
    BAD(SCATTER, "f32[2,10,4]; s32[3,3,1]; f32[2,3,4]", "uwd=2 iwd=1 ibd=0 sibd=0 sdod=1 ivd=2",
        "(f32[], f32[])->f32[]", 0, "batching dimension sizes differ"),
};

/* ------------------------------------------------- sort, control flow, calls ---- */

static const infer_case control_cases[] = {
    OK(SORT, "f32[5,3]", "dims=0", "(f32[], f32[])->pred[]", 0, "f32[5,3]"),
    OK(SORT, "f32[5]; s32[5]", "dims=0", "(f32[], f32[], s32[], s32[])->pred[]", 0, "(f32[5], s32[5])"),
    BAD(SORT, "f32[5]; s32[5]", "dims=0", "(f32[], f32[], f32[], f32[])->pred[]", 0,
        "parameter 2 is f32[], expected s32[]"),
    BAD(SORT, "f32[5]", "dims=0", "(f32[], f32[])->f32[]", 0, "must return pred[]"),
    BAD(SORT, "f32[5]; s32[4]", "dims=0", "(f32[], f32[], s32[], s32[])->pred[]", 0, "different dims"),
    BAD(SORT, "f32[5]", "dims=1", "(f32[], f32[])->pred[]", 0, "out of range"),
    BAD(SORT, "f32[5]", "dims=0", "(f32[], f32[], f32[])->pred[]", 0, "must take 2 parameters"),
    OK(TOPK, "f32[3,10]", "k=4", 0, 0, "(f32[3,4], s32[3,4])"),
    BAD(TOPK, "f32[3,10]", "k=11", 0, 0, "k=11 is outside [0, 10]"),
    BAD(TOPK, "f32[]", "k=1", 0, 0, "rank >= 1"),
    OK(WHILE, "(s32[], f32[4])", 0, "((s32[], f32[4]))->pred[] | ((s32[], f32[4]))->(s32[], f32[4])", 0,
       "(s32[], f32[4])"),
    BAD(WHILE, "(s32[], f32[4])", 0, "((s32[], f32[4]))->pred[] | ((s32[], f32[4]))->(s32[], f32[3])", 0,
        "body computation comp1 returns (s32[], f32[3]) but the loop state is (s32[], f32[4])"),
    BAD(WHILE, "(s32[], f32[4])", 0, "((s32[], f32[4]))->s32[] | ((s32[], f32[4]))->(s32[], f32[4])", 0,
        "must return pred[]"),
    BAD(WHILE, "(s32[], f32[4])", 0, "(s32[])->pred[] | ((s32[], f32[4]))->(s32[], f32[4])", 0,
        "condition computation comp0 takes s32[]"),
    BAD(WHILE, "(s32[], f32[4])", 0, "((s32[], f32[4]))->pred[]", 0, "expects 2 called computations"),
    OK(CONDITIONAL, "pred[]; f32[2]; s32[]", 0, "(f32[2])->f32[3] | (s32[])->f32[3]", 0, "f32[3]"),
    OK(CONDITIONAL, "s32[]; f32[2]; s32[]; f32[]", 0, "(f32[2])->(f32[3]) | (s32[])->(f32[3]) | (f32[])->(f32[3])", 0,
       "(f32[3])"),
    BAD(CONDITIONAL, "pred[]; f32[2]; s32[]", 0, "(f32[2])->f32[3] | (s32[])->f32[4]", 0, "return different shapes"),
    BAD(CONDITIONAL, "f32[]; f32[2]; s32[]", 0, "(f32[2])->f32[3] | (s32[])->f32[3]", 0,
        "branch index must be pred[] or s32[]"),
    BAD(CONDITIONAL, "pred[]; f32[2]; s32[]; s32[]", 0, "(f32[2])->f32[3] | (s32[])->f32[3] | (s32[])->f32[3]", 0,
        "needs 2 branches, got 3"),
    BAD(CONDITIONAL, "s32[]; f32[2]", 0, "(f32[2])->f32[3] | (s32[])->f32[3]", 0, "expects the branch index and 2"),
    BAD(CONDITIONAL, "pred[]; f32[2]; s32[]", 0, "(f32[2])->f32[3] | (f32[])->f32[3]", 0,
        "takes f32[] but its operand is s32[]"),
    OK(CALL, "f32[2]; s32[]", 0, "(f32[2], s32[])->(f32[2])", 0, "(f32[2])"),
    BAD(CALL, "f32[2]; s32[]", 0, "(f32[2], f32[])->(f32[2])", 0, "parameter 1 is f32[] but the operand is s32[]"),
    BAD(CALL, "f32[2]", 0, "(f32[2], f32[])->(f32[2])", 0, "takes 2 parameters but 1 operands"),
    OK(FUSION, "f32[2]; f32[2]", 0, "(f32[2], f32[2])->f32[2]", 0, "f32[2]"),
    BAD(FUSION, "f32[2]", 0, "(f32[3])->f32[2]", 0, "fused computation comp0"),
    OK(MAP, "f32[4]; f32[4]", "dims=0", "(f32[], f32[])->s32[]", 0, "s32[4]"),
    OK(MAP, "f32[2,3]", 0, "(f32[])->f32[]", 0, "f32[2,3]"),
    BAD(MAP, "f32[4]; f32[3]", 0, "(f32[], f32[])->f32[]", 0, "different dims"),
    BAD(MAP, "f32[4]; s32[4]", 0, "(f32[], f32[])->f32[]", 0, "parameter 1 is f32[], expected s32[]"),
    BAD(MAP, "f32[4]", "dims=1", "(f32[])->f32[]", 0, "must be 0..0 in order"),
    BAD(MAP, "f32[4]", 0, "(f32[])->f32[2]", 0, "must return a scalar"),
};

/* ------------------------------------------------------------- the rest ---- */

static const infer_case misc_cases[] = {
    OK(BATCH_NORM_TRAINING, "f32[2,3,4]; f32[3]; f32[3]", "fi=1", 0, 0, "(f32[2,3,4], f32[3], f32[3])"),
    OK(BATCH_NORM_INFERENCE, "f32[2,3,4]; f32[4]; f32[4]; f32[4]; f32[4]", "fi=2", 0, 0, "f32[2,3,4]"),
    OK(BATCH_NORM_GRAD, "f32[2,3]; f32[3]; f32[3]; f32[3]; f32[2,3]", "fi=1", 0, 0, "(f32[2,3], f32[3], f32[3])"),
    BAD(BATCH_NORM_TRAINING, "f32[2,3,4]; f32[3]; f32[3]", 0, 0, 0, "missing attribute feature_index"),
    BAD(BATCH_NORM_TRAINING, "f32[2,3,4]; f32[4]; f32[3]", "fi=1", 0, 0, "scale must be f32[3]"),
    BAD(BATCH_NORM_TRAINING, "s32[2,3,4]; s32[3]; s32[3]", "fi=1", 0, 0, "floating-point"),
    BAD(BATCH_NORM_INFERENCE, "f32[2,3]; f32[3]; f32[3]; f32[3]; f32[3]", "fi=2", 0, 0,
        "feature_index=2 is out of range"),
    BAD(BATCH_NORM_GRAD, "f32[2,3]; f32[3]; f32[3]; f32[3]; f32[3,2]", "fi=1", 0, 0, "grad_output f32[3,2]"),
    OK(GET_DIMENSION_SIZE, "f32[2,5]", "dims=1", 0, 0, "s32[]"),
    BAD(GET_DIMENSION_SIZE, "f32[2,5]", "dims=2", 0, 0, "must name one dimension"),
    OK(SET_DIMENSION_SIZE, "f32[2,5]; s32[]", "dims=1", 0, 0, "f32[2,<=5]"),
    BAD(SET_DIMENSION_SIZE, "f32[2,5]; f32[]", "dims=1", 0, 0, "must be s32[]"),
    OK(CHOLESKY, "f32[3,4,4]", 0, 0, 0, "f32[3,4,4]"),
    BAD(CHOLESKY, "f32[3,4]", 0, 0, 0, "square"),
    OK(TRIANGULAR_SOLVE, "f32[4,4]; f32[4,3]", "left=1", 0, 0, "f32[4,3]"),
    OK(TRIANGULAR_SOLVE, "f32[2,4,4]; f32[2,3,4]", 0, 0, 0, "f32[2,3,4]"),
    BAD(TRIANGULAR_SOLVE, "f32[4,4]; f32[4,3]", 0, 0, 0, "shared dimension"),
    BAD(TRIANGULAR_SOLVE, "f32[4,3]; f32[4,3]", "left=1", 0, 0, "square"),
    OK(RNG, "f32[]; f32[]", 0, 0, "f32[3,2]", "f32[3,2]"),
    BAD(RNG, "f32[]; s32[]", 0, 0, "f32[3,2]", "scalars of one type"),
    OK(RNG_BIT_GENERATOR, "u64[2]", 0, 0, "(u64[2], u32[4])", "(u64[2], u32[4])"),
    OK(RNG_GET_AND_UPDATE_STATE, 0, 0, 0, "u64[2]", "u64[2]"),
    OK(CUSTOM_CALL, "f32[2]; s32[]", 0, 0, "(f32[2], s32[])", "(f32[2], s32[])"),
    BAD(CUSTOM_CALL, "f32[2]", 0, 0, "f32[-1]", "invalid result shape"),
    OK(AFTER_ALL, "token[]; token[]", 0, 0, 0, "token[]"),
    OK(AFTER_ALL, 0, 0, 0, 0, "token[]"),
    BAD(AFTER_ALL, "f32[]", 0, 0, 0, "operand 0 must be a token"),
    OK(ADD_DEPENDENCY, "f32[2]; token[]", 0, 0, 0, "f32[2]"),
    BAD(ADD_DEPENDENCY, "f32[2]; f32[]", 0, 0, 0, "must be a token"),
    OK(OUTFEED, "f32[2]; token[]", 0, 0, 0, "token[]"),
    OK(INFEED, "token[]", 0, 0, "((f32[2]), token[])", "((f32[2]), token[])"),
    OK(SEND, "f32[2]; token[]", 0, 0, "(f32[2], u32[], token[])", "(f32[2], u32[], token[])"),
    OK(SEND_DONE, "(f32[2], u32[], token[])", 0, 0, 0, "token[]"),
    OK(RECV, "token[]", 0, 0, "(f32[2], u32[], token[])", "(f32[2], u32[], token[])"),
    OK(RECV_DONE, "(f32[2], u32[], token[])", 0, 0, "(f32[2], token[])", "(f32[2], token[])"),
    OK(PARTITION_ID, 0, 0, 0, 0, "u32[]"),
    OK(REPLICA_ID, 0, 0, 0, 0, "u32[]"),
    OK(COPY_START, "f32[2]", 0, 0, 0, "(f32[2], f32[2], u32[])"),
    OK(COPY_DONE, "(f32[2], f32[2], u32[])", 0, 0, 0, "f32[2]"),
    BAD(COPY_DONE, "f32[2]", 0, 0, 0, "tuple from copy-start"),
    OK(ALL_REDUCE, "f32[2]", 0, "(f32[], f32[])->f32[]", 0, "f32[2]"),
    OK(ALL_REDUCE, "f32[2]; s32[3]", 0, "(f32[], f32[])->f32[]", 0, "(f32[2], s32[3])"),
    OK(ALL_GATHER, "f32[2]", "dims=0", 0, "f32[8]", "f32[8]"),
    OK(ALL_TO_ALL, "f32[4]", 0, 0, "f32[4]", "f32[4]"),
    OK(REDUCE_SCATTER, "f32[8]", "dims=0", "(f32[], f32[])->f32[]", "f32[2]", "f32[2]"),
    OK(COLLECTIVE_PERMUTE, "f32[2]", 0, 0, 0, "f32[2]"),
    OK(ASYNC_START, "f32[2]", 0, "(f32[2])->f32[2]", "((f32[2]), f32[2], s32[])", "((f32[2]), f32[2], s32[])"),
    OK(ASYNC_UPDATE, "((f32[2]), f32[2], s32[])", 0, 0, "((f32[2]), f32[2], s32[])", "((f32[2]), f32[2], s32[])"),
    OK(ASYNC_DONE, "((f32[2]), f32[2], s32[])", 0, 0, "f32[2]", "f32[2]"),
    OK(FFT, "f32[8]", 0, 0, "f32[8]", "f32[8]"),
    OK(OPTIMIZATION_BARRIER, "(f32[2], s32[])", 0, 0, 0, "(f32[2], s32[])"),
    OK(DOMAIN, "f32[2]", 0, 0, 0, "f32[2]"),
    OK(BITCAST, "f32[2,3]", 0, 0, "s32[6]", "s32[6]"),
    BAD(BITCAST, "f32[2,3]", 0, 0, "f32[7]", "changes the byte size"),
};

static void test_unary(void) { RUN(unary_cases); }
static void test_binary(void) { RUN(binary_cases); }
static void test_ternary_and_conversions(void) { RUN(ternary_cases); }
static void test_shape_ops(void) { RUN(shape_cases); }
static void test_reductions(void) { RUN(reduce_cases); }
static void test_dot_and_convolution(void) { RUN(dot_conv_cases); }
static void test_gather_and_scatter(void) { RUN(gather_scatter_cases); }
static void test_control_flow(void) { RUN(control_cases); }
static void test_misc(void) { RUN(misc_cases); }

/* Every opcode must have at least one accepted case in the tables above. */
static void test_every_opcode_covered(void) {
  bool covered[HLO_OP_COUNT] = {false};
  const struct {
    const infer_case *c;
    int n;
  } tables[] = {
#define T(t) {t, (int)(sizeof t / sizeof t[0])}
      T(unary_cases), T(binary_cases), T(ternary_cases), T(shape_cases), T(reduce_cases),
      T(dot_conv_cases), T(gather_scatter_cases), T(control_cases), T(misc_cases),
#undef T
  };
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (int i = 0; i < tables[t].n; i++)
      if (tables[t].c[i].expect) covered[tables[t].c[i].op] = true;
  for (int op = 0; op < HLO_OP_COUNT; op++)
    if (!covered[op]) check_fail(__FILE__, __LINE__, "opcode has an accepted case", hlo_opcode_name((hlo_opcode)op));
}

/* Instructions that are malformed in ways no file should produce still get errors. */
static void test_malformed_instructions(void) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *c = hlo_computation_new(m, "c");
  hlo_shape f2 = shape_make(HLO_F32, 1, (int64_t[]){2});
  hlo_instr *p = hlo_instr_new(c, HLO_OP_PARAMETER, &f2, "p");
  hlo_instr *ins = hlo_instr_new(c, HLO_OP_ADD, &f2, "bad");
  hlo_instr *ops[2] = {p, NULL};
  hlo_instr_set_operands(ins, 2, ops);
  hlo_shape out;
  CHECK_ERR(hlo_infer_shape(m->arena, ins, &out), "bad (add): operand 1 is missing");
  hlo_shape f0 = shape_scalar(HLO_F32);
  hlo_instr *zero = hlo_instr_new(c, HLO_OP_PARAMETER, &f0, "zero");
  hlo_instr *r = hlo_instr_new(c, HLO_OP_REDUCE, &f2, "r");
  hlo_instr *rops[2] = {p, zero};
  hlo_instr_set_operands(r, 2, rops);
  hlo_computation *empty = hlo_computation_new(m, "empty");
  hlo_instr_set_called(r, 1, &empty);
  CHECK_ERR(hlo_infer_shape(m->arena, r, &out), "to_apply computation empty has no root");
  /* A rank beyond HLO_MAX_RANK in an operand is reported, not read past. */
  p->shape.rank = HLO_MAX_RANK + 1;
  hlo_instr *neg = hlo_instr_new(c, HLO_OP_NEGATE, &f2, "neg");
  hlo_instr_set_operands(neg, 1, &p);
  CHECK_ERR(hlo_infer_shape(m->arena, neg, &out), "operand 0 (p) has an invalid shape");
  hlo_module_free(m);
}

static void test_shape_validate(void) {
  hlo_shape s = shape_make(HLO_F32, 2, (int64_t[]){2, 3});
  CHECK_OK(hlo_shape_validate(&s, true));
  s.has_layout = true;
  s.minor_to_major[0] = 1, s.minor_to_major[1] = 0;
  CHECK_OK(hlo_shape_validate(&s, true));
  s.minor_to_major[1] = 1;
  CHECK_ERR(hlo_shape_validate(&s, true), "not a permutation of 0..1");
  CHECK_OK(hlo_shape_validate(&s, false));
  s.has_layout = false;
  s.dims[1] = -2;
  CHECK_ERR(hlo_shape_validate(&s, false), "negative size -2");
  s.dims[1] = INT64_MAX;
  s.dims[0] = 4;
  CHECK_ERR(hlo_shape_validate(&s, false), "overflows");
  hlo_shape t = shape_scalar(HLO_TOKEN);
  t.rank = 1;
  CHECK_ERR(hlo_shape_validate(&t, false), "token");
}

static void test_higher_precision(void) {
  CHECK(hlo_higher_precision_type(HLO_F32, HLO_S32) == HLO_F32);
  CHECK(hlo_higher_precision_type(HLO_S8, HLO_S32) == HLO_S32);
  CHECK(hlo_higher_precision_type(HLO_PRED, HLO_U8) == HLO_U8);
  CHECK(hlo_higher_precision_type(HLO_F16, HLO_BF16) == HLO_BF16);
  CHECK(hlo_higher_precision_type(HLO_F64, HLO_F32) == HLO_F64);
}

TEST_MAIN(TEST(test_unary), TEST(test_binary), TEST(test_ternary_and_conversions), TEST(test_shape_ops),
          TEST(test_reductions), TEST(test_dot_and_convolution), TEST(test_gather_and_scatter),
          TEST(test_control_flow), TEST(test_misc), TEST(test_every_opcode_covered),
          TEST(test_malformed_instructions), TEST(test_shape_validate), TEST(test_higher_precision))
