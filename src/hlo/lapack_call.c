/* Reading jaxlib's LAPACK custom-calls (see lapack_call.h). The backend_config of a
 * typed-FFI call is an MLIR attribute dictionary, {diag = 78 : ui8, side = 76 : ui8},
 * whose values are the LAPACK character flags as integers ('L' = 76, 'U' = 85,
 * 'N' = 78, 'T' = 84, 'C' = 67, 'R' = 82). */
#include "hlo/lapack_call.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *target_of(const hlo_instr *ins) {
  return ins->op == HLO_OP_CUSTOM_CALL && ins->custom_call_target ? ins->custom_call_target : NULL;
}

bool hlo_is_lapack_call(const hlo_instr *ins) {
  const char *t = target_of(ins);
  return t && strncmp(t, "lapack_", 7) == 0;
}

static const char *backend_config(const hlo_instr *ins) {
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (strcmp(ins->raw_attrs[i].key, "backend_config") == 0) return ins->raw_attrs[i].value;
  return NULL;
}

/* The integer value of KEY in the attribute dictionary CONFIG; DEF when absent. */
static int config_flag(const char *config, const char *key, int def) {
  if (!config) return def;
  size_t kn = strlen(key);
  for (const char *p = config; (p = strstr(p, key)) != NULL; p += kn) {
    bool starts = p == config || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    const char *q = p + kn;
    while (*q == ' ') q++;
    if (!starts || *q != '=') continue;
    q++;
    while (*q == ' ') q++;
    if (*q == '"' && q[1] && q[2] == '"') return (unsigned char)q[1]; /* a string form: "L" */
    char *end = NULL;
    long v = strtol(q, &end, 10);
    if (end != q) return (int)v;
  }
  return def;
}

static kiln_status bad(const hlo_instr *ins, const char *why) {
  return ERR_INVALID("%s (custom-call \"%s\"): %s", ins->name, target_of(ins), why);
}

/* A matrix operand or result: rank >= 2, of the call's type; *batch and rows/cols. */
static bool matrix(const hlo_shape *s, hlo_type t, int64_t *batch, int64_t *rows, int64_t *cols) {
  if (!shape_is_array(s) || s->type != t || s->rank < 2) return false;
  int64_t b = 1;
  for (int d = 0; d < s->rank - 2; d++) b *= s->dims[d];
  *batch = b, *rows = s->dims[s->rank - 2], *cols = s->dims[s->rank - 1];
  return true;
}

/* An array of type T whose dims are SHAPE's batch dims followed by LAST (LAST < 0: none). */
static bool batch_vector(const hlo_shape *s, hlo_type t, const hlo_shape *of, int64_t last) {
  int r = of->rank - 2 + (last >= 0 ? 1 : 0);
  if (!shape_is_array(s) || s->type != t || s->rank != r) return false;
  for (int d = 0; d < of->rank - 2; d++)
    if (s->dims[d] != of->dims[d]) return false;
  return last < 0 || s->dims[r - 1] == last;
}

/* Whether matrices A and B (rank >= 2) have the same batch dimensions, not only as many
 * batch elements: b[2,3,..] does not pair with a[3,2,..] or a[6,..]. */
static bool same_batch_dims(const hlo_shape *a, const hlo_shape *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank - 2; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static const hlo_shape *result(const hlo_instr *ins, int i, int n) {
  if (n == 1) return shape_is_array(&ins->shape) ? &ins->shape : NULL;
  if (!shape_is_tuple(&ins->shape) || ins->shape.n_elems != n) return NULL;
  return &ins->shape.elems[i];
}

kiln_status hlo_lapack_call_read(const hlo_instr *ins, hlo_lapack_call *out) {
  memset(out, 0, sizeof *out);
  const char *t = target_of(ins);
  if (!hlo_is_lapack_call(ins)) return bad(ins, "not a LAPACK custom-call");
  static const struct {
    const char *name;
    hlo_lapack_routine r;
  } routines[] = {{"potrf", HLO_LAPACK_POTRF}, {"getrf", HLO_LAPACK_GETRF}, {"trsm", HLO_LAPACK_TRSM},
                  {"geqrf", HLO_LAPACK_GEQRF}, {"orgqr", HLO_LAPACK_ORGQR}, {"syevd", HLO_LAPACK_SYEVD},
                  {"gesdd", HLO_LAPACK_GESDD}};
  char prefix = t[7];
  const char *routine = prefix ? t + 8 : t + 7; /* "lapack_" alone: an empty routine, not past its end */
  int found = -1;
  for (size_t i = 0; i < sizeof routines / sizeof routines[0]; i++) {
    size_t n = strlen(routines[i].name);
    if (strncmp(routine, routines[i].name, n) == 0 && strcmp(routine + n, "_ffi") == 0) found = (int)i;
  }
  if (prefix != 's' && prefix != 'd') {
    if (prefix == 'c' || prefix == 'z')
      return ERR_UNIMPLEMENTED("%s (custom-call \"%s\"): complex LAPACK routines are not supported", ins->name, t);
    found = -1;
  }
  if (found < 0)
    return ERR_UNIMPLEMENTED("%s (custom-call \"%s\"): LAPACK routine not supported (supported: "
                             "lapack_{s,d}{potrf,getrf,trsm,geqrf,orgqr,syevd,gesdd}_ffi)",
                             ins->name, t);
  out->routine = routines[found].r;
  out->type = prefix == 's' ? HLO_F32 : HLO_F64;
  hlo_type ft = out->type;
  const char *cfg = backend_config(ins);
  const hlo_shape *r0, *r1, *r2;
  switch (out->routine) {
    case HLO_LAPACK_POTRF:
      r0 = result(ins, 0, 2), r1 = result(ins, 1, 2);
      if (ins->n_operands != 1 || !r0 || !r1 || !matrix(&ins->operands[0]->shape, ft, &out->batch, &out->m, &out->n) ||
          out->m != out->n || !shape_same_dims(r0, &ins->operands[0]->shape) || r0->type != ft ||
          !batch_vector(r1, HLO_S32, r0, -1))
        return bad(ins, "expects one square matrix operand and a (matrix, s32 info) result");
      out->lower = config_flag(cfg, "uplo", 'L') == 'L';
      return NULL;
    case HLO_LAPACK_GETRF: {
      r0 = result(ins, 0, 3), r1 = result(ins, 1, 3), r2 = result(ins, 2, 3);
      if (ins->n_operands != 1 || !r0 || !r1 || !r2 ||
          !matrix(&ins->operands[0]->shape, ft, &out->batch, &out->m, &out->n) ||
          !shape_same_dims(r0, &ins->operands[0]->shape) || r0->type != ft ||
          !batch_vector(r1, HLO_S32, r0, out->m < out->n ? out->m : out->n) || !batch_vector(r2, HLO_S32, r0, -1))
        return bad(ins, "expects one matrix operand and a (matrix, s32 pivots, s32 info) result");
      return NULL;
    }
    case HLO_LAPACK_TRSM: {
      int64_t ba, ka, ka2;
      r0 = result(ins, 0, 1);
      if (ins->n_operands < 2 || ins->n_operands > 3 || !r0 ||
          !matrix(&ins->operands[0]->shape, ft, &ba, &ka, &ka2) ||
          !matrix(&ins->operands[1]->shape, ft, &out->batch, &out->m, &out->n) || ka != ka2 || ba != out->batch ||
          !same_batch_dims(&ins->operands[0]->shape, &ins->operands[1]->shape) ||
          !shape_same_dims(r0, &ins->operands[1]->shape) || r0->type != ft)
        return bad(ins, "expects a square matrix a, a matrix b and a result shaped like b");
      out->k = ka;
      out->left = config_flag(cfg, "side", 'L') == 'L';
      out->lower = config_flag(cfg, "uplo", 'L') == 'L';
      int tr = config_flag(cfg, "trans_x", 'N');
      out->transpose = tr == 'T' || tr == 'C';
      out->unit_diagonal = config_flag(cfg, "diag", 'N') == 'U';
      if (out->k != (out->left ? out->m : out->n)) return bad(ins, "a's order does not match b's side");
      if (ins->n_operands == 3) return bad(ins, "an alpha operand is not supported (jaxlib's FFI call has none)");
      return NULL;
    }
    case HLO_LAPACK_GEQRF:
      r0 = result(ins, 0, 2), r1 = result(ins, 1, 2);
      if (ins->n_operands != 1 || !r0 || !r1 || !matrix(&ins->operands[0]->shape, ft, &out->batch, &out->m, &out->n) ||
          !shape_same_dims(r0, &ins->operands[0]->shape) || r0->type != ft ||
          !batch_vector(r1, ft, r0, out->m < out->n ? out->m : out->n))
        return bad(ins, "expects one matrix operand and a (matrix, tau) result");
      return NULL;
    case HLO_LAPACK_ORGQR:
      r0 = result(ins, 0, 1);
      if (ins->n_operands != 2 || !r0 || !matrix(&ins->operands[0]->shape, ft, &out->batch, &out->m, &out->n) ||
          out->n > out->m || !shape_same_dims(r0, &ins->operands[0]->shape) || r0->type != ft ||
          ins->operands[1]->shape.rank < 1 ||
          !batch_vector(&ins->operands[1]->shape, ft, r0, ins->operands[1]->shape.dims[ins->operands[1]->shape.rank - 1]))
        return bad(ins, "expects a matrix with m >= n, a tau vector and a result shaped like the matrix");
      out->k = ins->operands[1]->shape.dims[ins->operands[1]->shape.rank - 1];
      if (out->k > out->n) return bad(ins, "more reflectors than columns");
      return NULL;
    case HLO_LAPACK_SYEVD: {
      const hlo_shape *r2s;
      r0 = result(ins, 0, 3), r1 = result(ins, 1, 3), r2s = result(ins, 2, 3);
      if (ins->n_operands != 1 || !r0 || !r1 || !r2s ||
          !matrix(&ins->operands[0]->shape, ft, &out->batch, &out->m, &out->n) || out->m != out->n ||
          !shape_same_dims(r0, &ins->operands[0]->shape) || r0->type != ft || !batch_vector(r1, ft, r0, out->n) ||
          !batch_vector(r2s, HLO_S32, r0, -1))
        return bad(ins, "expects one square matrix operand and a (vectors, values, s32 info) result");
      out->lower = config_flag(cfg, "uplo", 'L') == 'L';
      int mode = config_flag(cfg, "mode", 'V');
      if (mode != 'V' && mode != 'N') return bad(ins, "mode is neither 'V' nor 'N'");
      out->vectors = mode == 'V';
      return NULL;
    }
    case HLO_LAPACK_GESDD: {
      const hlo_shape *r[5];
      for (int i = 0; i < 5; i++) r[i] = result(ins, i, 5);
      if (ins->n_operands != 1 || !r[0] || !r[1] || !r[2] || !r[3] || !r[4] ||
          !matrix(&ins->operands[0]->shape, ft, &out->batch, &out->m, &out->n))
        return bad(ins, "expects one matrix operand and an (a, s, u, vt, s32 info) result");
      int mode = config_flag(cfg, "mode", 'S');
      if (mode != 'A' && mode != 'S' && mode != 'N') return bad(ins, "mode is not 'A', 'S' or 'N'");
      out->vectors = mode != 'N';
      out->full = mode == 'A';
      int64_t p = out->m < out->n ? out->m : out->n;
      const hlo_shape *a = &ins->operands[0]->shape;
      /* u and vt keep their shapes in mode 'N' (unspecified contents): either form */
      bool u_full = r[2]->rank == a->rank && r[2]->dims[a->rank - 2] == out->m && r[2]->dims[a->rank - 1] == out->m;
      bool u_thin = r[2]->rank == a->rank && r[2]->dims[a->rank - 2] == out->m && r[2]->dims[a->rank - 1] == p;
      bool v_full = r[3]->rank == a->rank && r[3]->dims[a->rank - 2] == out->n && r[3]->dims[a->rank - 1] == out->n;
      bool v_thin = r[3]->rank == a->rank && r[3]->dims[a->rank - 2] == p && r[3]->dims[a->rank - 1] == out->n;
      bool u_ok = r[2]->type == ft && same_batch_dims(r[2], a) && (out->full ? u_full : mode == 'S' ? u_thin : u_full || u_thin);
      bool v_ok = r[3]->type == ft && same_batch_dims(r[3], a) && (out->full ? v_full : mode == 'S' ? v_thin : v_full || v_thin);
      if (!shape_same_dims(r[0], a) || r[0]->type != ft || !batch_vector(r[1], ft, a, p) || !u_ok || !v_ok ||
          !batch_vector(r[4], HLO_S32, a, -1))
        return bad(ins, "result shapes do not match the mode's (a, s, u, vt, info)");
      out->full = out->full || (mode == 'N' && u_full);
      return NULL;
    }
  }
  return bad(ins, "unknown routine");
}
