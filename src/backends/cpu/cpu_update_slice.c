/* dynamic-update-slice as a native kernel: copy the operand into the result (nothing to
 * do when buffer assignment gave the result the operand's own block, the usual case
 * for a loop carrying a buffer it writes one row of per step), then copy the update
 * into its window row by row with memcpy. The elemental form would compute every
 * element of the result on each run; here the work is the update's size when in place.
 *
 * Start indices follow XLA: each is clamped to [0, dim - update_dim] so the window lies
 * inside the operand. Rows are the update's longest contiguous runs: its minor dims
 * where it spans the whole operand dim, times the next one in. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_native.h"
#include "hlo/literal.h"

typedef struct update_slice {
  int rank;
  int64_t dims[HLO_MAX_RANK], upd[HLO_MAX_RANK];
  hlo_type index_type;
  size_t elem;   /* bytes per element */
  int64_t bytes; /* the whole operand */
  int inner;     /* dims >= inner form one contiguous run of the update */
  int64_t run;   /* elements per run */
} update_slice;

static bool us_supports(const hlo_instr *ins, strbuf *why) {
  if (ins->op != HLO_OP_DYNAMIC_UPDATE_SLICE) return false;
  const hlo_shape *s = &ins->shape;
  if (!shape_is_array(s) || ins->n_operands != 2 + s->rank) return false;
  for (int k = 0; k < ins->n_operands; k++)
    if (!shape_is_array(&ins->operands[k]->shape)) return false;
  const hlo_shape *o = &ins->operands[0]->shape, *u = &ins->operands[1]->shape;
  if (o->type != s->type || u->type != s->type || o->rank != s->rank || u->rank != s->rank) return false;
  for (int d = 0; d < s->rank; d++)
    if (o->dims[d] != s->dims[d] || u->dims[d] > s->dims[d] || u->dims[d] < 0) return false;
  hlo_type it = ins->operands[2 < ins->n_operands ? 2 : 0]->shape.type;
  for (int k = 2; k < ins->n_operands; k++) {
    const hlo_shape *is = &ins->operands[k]->shape;
    if (is->rank != 0 || !hlo_type_is_int(is->type) || is->type != it) {
      if (why) strbuf_printf(why, "%s: start indices must be integer scalars of one type", ins->name);
      return false;
    }
  }
  return true;
}

static kiln_status us_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                             bool *uses_jit) {
  (void)jm;
  (void)prefix;
  *uses_jit = false;
  update_slice *u = calloc(1, sizeof *u);
  if (!u) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  const hlo_shape *s = &ins->shape, *us = &ins->operands[1]->shape;
  u->rank = s->rank;
  u->elem = hlo_type_size(s->type);
  u->bytes = shape_byte_size(s);
  u->index_type = s->rank ? ins->operands[2]->shape.type : HLO_S32;
  for (int d = 0; d < s->rank; d++) {
    u->dims[d] = s->dims[d];
    u->upd[d] = us->dims[d];
  }
  /* The longest suffix of dims the update spans completely, plus the dim before it. */
  u->inner = u->rank;
  u->run = 1;
  while (u->inner > 0 && u->upd[u->inner - 1] == u->dims[u->inner - 1]) u->run *= u->upd[--u->inner];
  if (u->inner > 0) u->run *= u->upd[--u->inner];
  *state = u;
  return NULL;
}

static kiln_status us_run(void *state, char *const *out, char *const *in) {
  const update_slice *u = state;
  if (out[0] != in[0] && u->bytes > 0) memcpy(out[0], in[0], (size_t)u->bytes);
  int64_t start[HLO_MAX_RANK], strides[HLO_MAX_RANK], n_upd = 1;
  int64_t st = 1;
  for (int d = u->rank - 1; d >= 0; d--) {
    strides[d] = st;
    st *= u->dims[d];
    n_upd *= u->upd[d];
  }
  if (n_upd == 0) return NULL;
  for (int d = 0; d < u->rank; d++) {
    int64_t v = hlo_index_at(u->index_type, in[2 + d], 0), hi = u->dims[d] - u->upd[d];
    start[d] = v < 0 ? 0 : v > hi ? hi : v;
  }
  /* Walk the update's outer dims (< inner) like an odometer; each step copies one run. */
  int64_t pos[HLO_MAX_RANK] = {0};
  const char *src = in[1];
  size_t run_bytes = (size_t)u->run * u->elem;
  for (int64_t done = 0; done < n_upd; done += u->run) {
    int64_t at = 0;
    for (int d = 0; d < u->rank; d++) at += (start[d] + (d < u->inner ? pos[d] : 0)) * strides[d];
    memmove(out[0] + at * (int64_t)u->elem, src, run_bytes);
    src += run_bytes;
    for (int d = u->inner - 1; d >= 0; d--) {
      if (++pos[d] < u->upd[d]) break;
      pos[d] = 0;
    }
  }
  return NULL;
}

static void us_destroy(void *state) { free(state); }

const cpu_native_kind cpu_native_update_slice = {
    .name = "dynamic-update-slice",
    .supports = us_supports,
    .create = us_create,
    .run = us_run,
    .destroy = us_destroy,
};
