/* Layout-changing bitcasts as logical ops, for backends that ignore layouts. A bitcast
 * reinterprets the physical bytes, and the physical order is what the layouts say: the
 * evaluator (eval.c, k_bitcast) lays the operand's row-major literal out in the
 * operand's layout and reads the result back through the result's layout. XLA:CPU
 * writes jnp.transpose as f32[4,2,3]{0,2,1} bitcast(f32[2,3,4]{2,1,0}) followed by a
 * copy to the default layout; a backend that treats every bitcast as a reshape of its
 * row-major buffer (the cpu backend: elemental reshape indexing, an aliasing buffer)
 * gets such a module wrong. In kiln's row-major model the bitcast is
 *   transpose(operand, major-to-minor order of its layout)   -- the physical order
 *   reshape to the result's dims in major-to-minor order      -- same bytes
 *   transpose back to the result's logical order
 * and that is what this pass writes, so nothing after it needs to know about layouts.
 * A transpose that keeps the non-degenerate dims in order moves no element (it is a
 * reshape), so it is folded into the reshape; a bitcast whose physical order equals its
 * row-major order on both sides becomes a single reshape and stays an alias in buffer
 * assignment. Bitcasts with default layouts on both sides are left alone. The
 * replacement takes over the bitcast's printed layout (hlo_pass_replace_uses), so a
 * later bitcast of it still sees the layout the evaluator reads. When the element
 * type changes, the middle step is a bitcast between default layouts instead of the
 * reshape (the bytes reinterpreted in place, any width). Runs before the call inliner:
 * inlining would swap a callee parameter's declared layout for the argument's. */
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"
#include "hlo/shape.h"

/* The shape's minor-to-major order; a missing layout (or one that does not fit the
 * rank) is the default, as the evaluator reads it. False when it is not a permutation. */
static bool layout_of(const hlo_shape *s, int64_t *m2m) {
  bool seen[HLO_MAX_RANK] = {false};
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->has_layout ? s->minor_to_major[i] : s->rank - 1 - i;
    if (d < 0 || d >= s->rank || seen[d]) return false;
    seen[d] = true;
    m2m[i] = d;
  }
  return true;
}

static bool is_default(int rank, const int64_t *m2m) {
  for (int i = 0; i < rank; i++)
    if (m2m[i] != rank - 1 - i) return false;
  return true;
}

/* Whether transposing a shape of `dims` by perm keeps the row-major order of the
 * elements: every dim of size > 1 appears in increasing order. */
static bool moves_nothing(int rank, const int64_t *perm, const int64_t *dims) {
  int64_t last = -1;
  for (int i = 0; i < rank; i++) {
    if (dims[perm[i]] == 1) continue;
    if (perm[i] < last) return false;
    last = perm[i];
  }
  return true;
}

static bool same_dims(int ra, const int64_t *a, int rb, const int64_t *b) {
  if (ra != rb) return false;
  for (int i = 0; i < ra; i++)
    if (a[i] != b[i]) return false;
  return true;
}

static kiln_status expand_bitcast(hlo_computation *c, hlo_instr *ins, hlo_instr **out) {
  *out = NULL;
  if (ins->op != HLO_OP_BITCAST || ins->n_operands != 1) return NULL;
  hlo_instr *x = ins->operands[0];
  const hlo_shape *in = &x->shape, *res = &ins->shape;
  if (!shape_is_array(in) || !shape_is_array(res)) return NULL;
  int64_t in_m2m[HLO_MAX_RANK], res_m2m[HLO_MAX_RANK];
  if (!layout_of(in, in_m2m) || !layout_of(res, res_m2m)) return NULL;
  if (is_default(in->rank, in_m2m) && is_default(res->rank, res_m2m)) return NULL;

  /* perm1: the operand's dims major to minor (its physical order); pdims: the result's
   * dims in that order; perm2[d]: where result dim d sits among them. */
  int64_t perm1[HLO_MAX_RANK], pdims[HLO_MAX_RANK], perm2[HLO_MAX_RANK];
  for (int j = 0; j < in->rank; j++) perm1[j] = in_m2m[in->rank - 1 - j];
  for (int j = 0; j < res->rank; j++) {
    int64_t d = res_m2m[res->rank - 1 - j];
    pdims[j] = res->dims[d];
    perm2[d] = j;
  }
  bool first = !moves_nothing(in->rank, perm1, in->dims);
  bool last = !moves_nothing(res->rank, perm2, pdims);

  hlo_instr *y = x;
  if (first) TRY(hlo_build_transpose(c, y, perm1, &y));
  const int64_t *mid = last ? pdims : res->dims;
  if (res->type != in->type) {
    /* The bytes change type (and maybe width) between row-major buffers: a bitcast
     * with default layouts, which the evaluator reads as the buffer itself and the
     * backend keeps as an alias. */
    hlo_instr tmpl = hlo_instr_template(HLO_OP_BITCAST);
    tmpl.shape = shape_make(res->type, res->rank, mid);
    tmpl.operands = &y;
    tmpl.n_operands = 1;
    TRY(hlo_build_instr(c, &tmpl, &y));
  } else if (!same_dims(y->shape.rank, y->shape.dims, res->rank, mid) || y == x) {
    /* (A bitcast that moves nothing still gets a reshape, so its users stop reading
     * the operand's layout through it.) */
    TRY(hlo_build_reshape(c, y, res->rank, mid, &y));
  }
  if (last) TRY(hlo_build_transpose(c, y, perm2, &y));
  *out = y;
  return NULL;
}

kiln_status hlo_pass_bitcast_layouts(hlo_module *m, bool *changed) {
  return hlo_pass_rewrite_each(m, expand_bitcast, changed);
}
