/* Literal storage, typed element access, equality and XLA-style value printing. */
#include "hlo/literal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"

int64_t literal_max_bytes = (int64_t)8 << 30;

static kiln_status create(const hlo_shape *shape, bool zero, hlo_literal **out) {
  *out = NULL;
  if (shape->type == HLO_TUPLE) return ERR_INTERNAL("literal_create called with a tuple shape");
  int64_t bytes = shape_byte_size(shape);
  if (bytes < 0 || bytes > literal_max_bytes) {
    char *s = shape_to_string(shape);
    kiln_status st = status_error(KILN_RESOURCE_EXHAUSTED,
                                  "shape %s needs %s bytes, over the %lld-byte limit for one value", s,
                                  bytes < 0 ? "more than 2^63" : "too many", (long long)literal_max_bytes);
    free(s);
    return st;
  }
  hlo_literal *l = calloc(1, sizeof *l);
  if (!l) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  l->shape = *shape;
  l->shape.layout_extra = NULL;
  l->shape.elems = NULL;
  l->shape.n_elems = 0;
  l->n = shape_elements(shape);
  if (shape->type != HLO_TOKEN) {
    l->data = zero ? calloc(1, bytes ? (size_t)bytes : 1) : malloc(bytes ? (size_t)bytes : 1);
    if (!l->data) {
      free(l);
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory allocating %lld bytes", (long long)bytes);
    }
  }
  *out = l;
  return NULL;
}

kiln_status literal_create(const hlo_shape *shape, hlo_literal **out) { return create(shape, true, out); }

kiln_status literal_create_uninit(const hlo_shape *shape, hlo_literal **out) { return create(shape, false, out); }

hlo_literal *literal_tuple(int n, hlo_literal **elems) {
  hlo_literal *l = calloc(1, sizeof *l);
  if (!l) abort();
  l->shape.type = HLO_TUPLE;
  l->shape.n_elems = n;
  l->shape.elems = calloc(n ? (size_t)n : 1, sizeof(hlo_shape));
  l->tuple = calloc(n ? (size_t)n : 1, sizeof(hlo_literal *));
  if (!l->shape.elems || !l->tuple) abort();
  for (int i = 0; i < n; i++) {
    l->tuple[i] = elems[i];
    l->shape.elems[i] = elems[i]->shape; /* shares nested element arrays with the child */
  }
  return l;
}

hlo_literal *literal_clone(const hlo_literal *l) {
  if (l->shape.type == HLO_TUPLE) {
    hlo_literal **e = calloc(l->shape.n_elems ? (size_t)l->shape.n_elems : 1, sizeof *e);
    if (!e) abort();
    for (int i = 0; i < l->shape.n_elems; i++) e[i] = literal_clone(l->tuple[i]);
    hlo_literal *t = literal_tuple(l->shape.n_elems, e);
    free(e);
    return t;
  }
  hlo_literal *c = NULL;
  kiln_status s = literal_create(&l->shape, &c);
  if (s) abort(); /* same size as an existing literal: cannot exceed the cap */
  if (l->data) memcpy(c->data, l->data, (size_t)shape_byte_size(&l->shape));
  return c;
}

/* Ends l's counted borrow, telling the lender when it was the last. */
static void end_borrow(hlo_literal *l) {
  literal_owner *o = l->counted ? l->owner : NULL;
  l->counted = false;
  l->owner = NULL;
  if (o && --o->borrowers == 0) o->unneeded(o);
}

void literal_free(hlo_literal *l) {
  if (!l) return;
  end_borrow(l);
  if (l->shape.type == HLO_TUPLE) {
    for (int i = 0; i < l->shape.n_elems; i++) literal_free(l->tuple[i]);
    free(l->tuple);
    free(l->shape.elems);
  }
  if (!l->borrowed) free(l->data);
  free(l);
}

int64_t literal_array_bytes(const hlo_literal *l) {
  if (!l) return 0;
  if (l->shape.type != HLO_TUPLE) return shape_is_array(&l->shape) ? shape_byte_size(&l->shape) : 0;
  int64_t n = 0;
  for (int i = 0; i < l->shape.n_elems; i++) n += literal_array_bytes(l->tuple[i]);
  return n;
}

hlo_literal *literal_borrow(const hlo_shape *shape, const void *data) {
  hlo_literal *l = calloc(1, sizeof *l);
  if (!l) abort();
  l->shape = *shape;
  l->data = (void *)data; /* never written: `borrowed` */
  l->n = shape_elements(shape);
  l->borrowed = true;
  return l;
}

void literal_own(hlo_literal *l) {
  if (!l->borrowed) return;
  if (l->data) {
    size_t n = (size_t)shape_byte_size(&l->shape);
    void *own = malloc(n ? n : 1);
    if (!own) abort();
    memcpy(own, l->data, n);
    l->data = own;
  }
  l->borrowed = false;
  end_borrow(l); /* the lender may be gone once the borrower no longer needs it */
}

void literal_drop_data(hlo_literal *l) {
  if (!l->borrowed) free(l->data);
  l->data = NULL;
  l->borrowed = false;
  end_borrow(l);
}

hlo_literal *literal_borrow_owned(const hlo_shape *shape, const void *data, literal_owner *owner) {
  hlo_literal *l = literal_borrow(shape, data);
  l->owner = owner;
  return l;
}

hlo_literal *literal_borrow_counted(const hlo_shape *shape, const void *data, literal_owner *owner) {
  hlo_literal *l = literal_borrow_owned(shape, data, owner);
  if (owner) {
    l->counted = true;
    owner->borrowers++;
  }
  return l;
}

double literal_get_f64(const hlo_literal *l, int64_t i) {
  const void *d = l->data;
  switch (l->shape.type) {
    case HLO_PRED: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    case HLO_S8: return ((const int8_t *)d)[i];
    case HLO_S16: return ((const int16_t *)d)[i];
    case HLO_S32: return ((const int32_t *)d)[i];
    case HLO_S64: return (double)((const int64_t *)d)[i];
    case HLO_U8: return ((const uint8_t *)d)[i];
    case HLO_U16: return ((const uint16_t *)d)[i];
    case HLO_U32: return ((const uint32_t *)d)[i];
    case HLO_U64: return (double)((const uint64_t *)d)[i];
    case HLO_F16: return f16_to_f32(((const uint16_t *)d)[i]);
    case HLO_BF16: return bf16_to_f32(((const uint16_t *)d)[i]);
    case HLO_F32: return ((const float *)d)[i];
    case HLO_F64: return ((const double *)d)[i];
    case HLO_S4: return ((const int8_t *)d)[i];
    case HLO_U4: return ((const uint8_t *)d)[i];
    case HLO_S2: return ((const int8_t *)d)[i];
    case HLO_U2: return ((const uint8_t *)d)[i];
    default: {
      minifloat_format f;
      return hlo_type_minifloat(l->shape.type, &f) ? minifloat_to_f32(f, ((const uint8_t *)d)[i]) : 0;
    }
  }
}

int64_t hlo_index_at(hlo_type t, const void *d, int64_t i) {
  switch (t) {
    case HLO_S8: case HLO_S4: case HLO_S2: return ((const int8_t *)d)[i]; /* sub-byte types: a byte each */
    case HLO_U8: case HLO_U4: case HLO_U2: return ((const uint8_t *)d)[i];
    case HLO_S16: return ((const int16_t *)d)[i];
    case HLO_S32: return ((const int32_t *)d)[i];
    case HLO_S64: return ((const int64_t *)d)[i];
    case HLO_U16: return ((const uint16_t *)d)[i];
    case HLO_U32: return ((const uint32_t *)d)[i];
    case HLO_U64: {
      uint64_t v = ((const uint64_t *)d)[i];
      return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default: return 0;
  }
}

int64_t literal_get_s64(const hlo_literal *l, int64_t i) {
  const void *d = l->data;
  switch (l->shape.type) {
    case HLO_PRED: return ((const uint8_t *)d)[i] != 0;
    case HLO_S8: return ((const int8_t *)d)[i];
    case HLO_S16: return ((const int16_t *)d)[i];
    case HLO_S32: return ((const int32_t *)d)[i];
    case HLO_S64: return ((const int64_t *)d)[i];
    case HLO_U8: return ((const uint8_t *)d)[i];
    case HLO_U16: return ((const uint16_t *)d)[i];
    case HLO_U32: return ((const uint32_t *)d)[i];
    case HLO_U64: return (int64_t)((const uint64_t *)d)[i];
    case HLO_S4: return ((const int8_t *)d)[i];
    case HLO_U4: return ((const uint8_t *)d)[i];
    case HLO_S2: return ((const int8_t *)d)[i];
    case HLO_U2: return ((const uint8_t *)d)[i];
    default: {
      double v = literal_get_f64(l, i);
      if (isnan(v)) return 0;
      if (v >= 9223372036854775807.0) return INT64_MAX;
      if (v <= -9223372036854775808.0) return INT64_MIN;
      return (int64_t)v;
    }
  }
}

uint64_t literal_get_u64(const hlo_literal *l, int64_t i) {
  if (l->shape.type == HLO_U64) return ((const uint64_t *)l->data)[i];
  return (uint64_t)literal_get_s64(l, i);
}

/* Floats round once, directly from double (via float would round twice); the narrow
 * floats overflow as XLA's convert does (minifloat.h). Integers get XLA's convert
 * semantics: truncation toward zero, saturating, NaN -> 0 (a plain C cast of an
 * out-of-range double is undefined behaviour). */
void literal_set_f64(hlo_literal *l, int64_t i, double v) {
  void *d = l->data;
  minifloat_format mf;
  if (hlo_type_minifloat(l->shape.type, &mf)) {
    ((uint8_t *)d)[i] = minifloat_from_f64(mf, v);
    return;
  }
  switch (l->shape.type) {
    case HLO_F16: ((uint16_t *)d)[i] = f64_to_f16(v); return;
    case HLO_BF16: ((uint16_t *)d)[i] = f64_to_bf16(v); return;
    case HLO_F32: ((float *)d)[i] = (float)v; return;
    case HLO_F64: ((double *)d)[i] = v; return;
    case HLO_PRED: ((uint8_t *)d)[i] = v != 0; return;
    case HLO_TUPLE:
    case HLO_TOKEN: return; /* no elements */
    case HLO_U64:
      ((uint64_t *)d)[i] = isnan(v) || v <= 0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
      return;
    default: {
      int64_t lo, hi;
      switch (l->shape.type) {
        case HLO_S8: lo = INT8_MIN, hi = INT8_MAX; break;
        case HLO_S16: lo = INT16_MIN, hi = INT16_MAX; break;
        case HLO_S32: lo = INT32_MIN, hi = INT32_MAX; break;
        case HLO_U8: lo = 0, hi = UINT8_MAX; break;
        case HLO_U16: lo = 0, hi = UINT16_MAX; break;
        case HLO_U32: lo = 0, hi = UINT32_MAX; break;
        case HLO_S4: lo = -8, hi = 7; break;
        case HLO_U4: lo = 0, hi = 15; break;
        case HLO_S2: lo = -2, hi = 1; break;
        case HLO_U2: lo = 0, hi = 3; break;
        default: lo = INT64_MIN, hi = INT64_MAX; break;
      }
      int64_t r = isnan(v) ? 0 : v <= (double)lo ? lo : v >= (double)hi ? hi : (int64_t)v;
      literal_set_s64(l, i, r);
      return;
    }
  }
}

void literal_set_s64(hlo_literal *l, int64_t i, int64_t v) {
  void *d = l->data;
  switch (l->shape.type) {
    case HLO_PRED: ((uint8_t *)d)[i] = v != 0; return;
    case HLO_S8: ((int8_t *)d)[i] = (int8_t)v; return;
    case HLO_S16: ((int16_t *)d)[i] = (int16_t)v; return;
    case HLO_S32: ((int32_t *)d)[i] = (int32_t)v; return;
    case HLO_S64: ((int64_t *)d)[i] = v; return;
    case HLO_U8: ((uint8_t *)d)[i] = (uint8_t)v; return;
    case HLO_U16: ((uint16_t *)d)[i] = (uint16_t)v; return;
    case HLO_U32: ((uint32_t *)d)[i] = (uint32_t)v; return;
    case HLO_U64: ((uint64_t *)d)[i] = (uint64_t)v; return;
    /* Wrap to 4 (2) bits, kept sign-extended (s4, s2) or zero-extended (u4, u2) in their byte. */
    case HLO_S4: ((int8_t *)d)[i] = (int8_t)((((uint64_t)v & 15) ^ 8) - 8); return;
    case HLO_U4: ((uint8_t *)d)[i] = (uint8_t)((uint64_t)v & 15); return;
    case HLO_S2: ((int8_t *)d)[i] = (int8_t)((((uint64_t)v & 3) ^ 2) - 2); return;
    case HLO_U2: ((uint8_t *)d)[i] = (uint8_t)((uint64_t)v & 3); return;
    default: literal_set_f64(l, i, (double)v); return;
  }
}

void literal_set_u64(hlo_literal *l, int64_t i, uint64_t v) {
  if (l->shape.type == HLO_U64) {
    ((uint64_t *)l->data)[i] = v;
    return;
  }
  if (hlo_type_is_float(l->shape.type)) {
    literal_set_f64(l, i, (double)v);
    return;
  }
  literal_set_s64(l, i, (int64_t)v);
}

bool literal_equal(const hlo_literal *a, const hlo_literal *b) {
  if (!shape_compatible(&a->shape, &b->shape)) return false;
  if (a->shape.type == HLO_TUPLE) {
    for (int i = 0; i < a->shape.n_elems; i++)
      if (!literal_equal(a->tuple[i], b->tuple[i])) return false;
    return true;
  }
  if (!a->data || !b->data) return a->data == b->data;
  return memcmp(a->data, b->data, (size_t)shape_byte_size(&a->shape)) == 0;
}

/* A decimal that reads back to the same value at the given precision. */
static void print_float(strbuf *b, double v, hlo_type t) {
  if (isnan(v)) {
    strbuf_append(b, signbit(v) ? "-nan" : "nan");
    return;
  }
  if (isinf(v)) {
    strbuf_append(b, v < 0 ? "-inf" : "inf");
    return;
  }
  /* XLA's RoundTripFpToString: the type's digits10 when that reads back exactly, else
   * max_digits10 (f32: %.6g, else %.9g), so constants print as XLA prints them. */
  minifloat_format mf;
  bool mini = hlo_type_minifloat(t, &mf);
  int short_prec = t == HLO_F64 ? 15 : t == HLO_F32 ? 6 : t == HLO_F16 ? 5 : mini ? 1 : 4;
  int long_prec = t == HLO_F64 ? 17 : mini ? 3 : 9;
  char buf[64];
  for (int prec = short_prec; prec <= 17; prec = prec < long_prec ? long_prec : prec + 1) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    double r = strtod(buf, NULL);
    bool same;
    switch (t) {
      case HLO_F64: same = r == v; break;
      case HLO_F32: same = (float)r == (float)v; break;
      case HLO_F16: same = f32_to_f16((float)r) == f32_to_f16((float)v); break;
      case HLO_BF16: same = f32_to_bf16((float)r) == f32_to_bf16((float)v); break;
      default: same = !mini || minifloat_from_f64(mf, r) == minifloat_from_f64(mf, v); break;
    }
    if (same) break;
  }
  strbuf_append(b, buf);
}

static void print_element(strbuf *b, const hlo_literal *l, int64_t i) {
  hlo_type t = l->shape.type;
  if (t == HLO_PRED) {
    strbuf_append(b, ((const uint8_t *)l->data)[i] ? "true" : "false");
  } else if (hlo_type_is_float(t)) {
    print_float(b, literal_get_f64(l, i), t);
  } else if (t == HLO_U64) {
    strbuf_printf(b, "%llu", (unsigned long long)literal_get_u64(l, i));
  } else {
    strbuf_printf(b, "%lld", (long long)literal_get_s64(l, i));
  }
}

static void print_dim(strbuf *b, const hlo_literal *l, int dim, int64_t *index) {
  const hlo_shape *s = &l->shape;
  if (dim == s->rank) {
    print_element(b, l, *index);
    (*index)++;
    return;
  }
  /* XLA's one-line form: "{1, 2}" for vectors, "{ { 1, 2 }, { 3, 4 } }" above rank 1. */
  bool spaced = s->rank > 1 && s->dims[dim] > 0;
  strbuf_append(b, spaced ? "{ " : "{");
  for (int64_t k = 0; k < s->dims[dim]; k++) {
    if (k) strbuf_append(b, ", ");
    print_dim(b, l, dim + 1, index);
  }
  strbuf_append(b, spaced ? " }" : "}");
}

void literal_print_values(strbuf *b, const hlo_literal *l) {
  if (l->shape.type == HLO_TUPLE) {
    strbuf_append(b, "( ");
    for (int i = 0; i < l->shape.n_elems; i++) {
      if (i) strbuf_append(b, ", ");
      literal_print_values(b, l->tuple[i]);
    }
    strbuf_append(b, " )");
    return;
  }
  if (l->shape.type == HLO_TOKEN) return;
  int64_t index = 0;
  if (l->shape.rank == 0) {
    print_element(b, l, 0);
    return;
  }
  print_dim(b, l, 0, &index);
}

/* splitmix64: tiny, good enough, and identical on every platform. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void literal_fill_pseudo_random(hlo_literal *l, uint64_t seed) {
  if (l->shape.type == HLO_TUPLE) {
    for (int i = 0; i < l->shape.n_elems; i++) literal_fill_pseudo_random(l->tuple[i], seed + (uint64_t)i + 1);
    return;
  }
  if (!l->data) return;
  uint64_t st = seed;
  hlo_type t = l->shape.type;
  for (int64_t i = 0; i < l->n; i++) {
    uint64_t r = splitmix64(&st);
    if (t == HLO_PRED)
      literal_set_s64(l, i, (int64_t)(r & 1));
    else if (hlo_type_is_float(t))
      literal_set_f64(l, i, (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    else if (hlo_type_is_unsigned_int(t))
      literal_set_s64(l, i, (int64_t)(r % 16));
    else
      literal_set_s64(l, i, (int64_t)(r % 16) - 8);
  }
}
