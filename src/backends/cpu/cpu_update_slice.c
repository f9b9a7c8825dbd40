/* dynamic-update-slice and dynamic-slice as native kernels, both copying the window
 * row by row with memcpy.
 *
 * dynamic-update-slice: copy the operand into the result (nothing to do when buffer
 * assignment gave the result the operand's own block, the usual case for a loop
 * carrying a buffer it writes one row of per step), then the update into its window.
 * The elemental form would compute every element of the result on each run; here the
 * work is the update's size when in place.
 *
 * dynamic-slice: the window out of the operand. The elemental form clamps the start
 * indices again for every element and copies element by element (~1 us for a bf16 row
 * of 768, a loop over rows paying that per step); here it is one memcpy per row. Only
 * windows whose rows are long enough for memcpy to win and that are small enough not to
 * want the kernel's thread split are taken.
 *
 * Start indices follow XLA: each is clamped to [0, dim - window_dim] so the window lies
 * inside the operand. Rows are the window's longest contiguous runs: its minor dims
 * where it spans the whole operand dim, times the next one in. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_native.h"
#include "hlo/literal.h"

/* Both kinds' state: upd is the window (the update's or the slice's dims). */
typedef struct update_slice {
  int rank;
  int64_t dims[HLO_MAX_RANK], upd[HLO_MAX_RANK];
  hlo_type index_type;
  size_t elem;   /* bytes per element */
  int64_t bytes; /* the whole operand */
  int inner;     /* dims >= inner form one contiguous run of the window */
  int64_t run;   /* elements per run */
  int64_t rows;  /* runs in the window (0 when it is empty) */
  int64_t strides[HLO_MAX_RANK]; /* the operand's, in elements */
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

void cpu_window_runs(const hlo_shape *s, const int64_t *window, int *inner, int64_t *run) {
  *inner = s->rank;
  *run = 1;
  while (*inner > 0 && window[*inner - 1] == s->dims[*inner - 1]) *run *= window[--*inner];
  if (*inner > 0) *run *= window[--*inner];
}

/* A window of dims `window` inside an operand of shape s, its start indices of type
 * index_type. */
static update_slice *window_of(const hlo_shape *s, const int64_t *window, hlo_type index_type) {
  update_slice *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->rank = s->rank;
  u->elem = hlo_type_size(s->type);
  u->bytes = shape_byte_size(s);
  u->index_type = index_type;
  for (int d = 0; d < s->rank; d++) {
    u->dims[d] = s->dims[d];
    u->upd[d] = window[d];
  }
  cpu_window_runs(s, window, &u->inner, &u->run);
  int64_t n = 1, stride = 1;
  for (int d = u->rank - 1; d >= 0; d--) {
    u->strides[d] = stride;
    stride *= u->dims[d];
    n *= u->upd[d];
  }
  u->rows = n ? n / u->run : 0;
  return u;
}

static kiln_status us_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                             bool *uses_jit) {
  (void)jm;
  (void)prefix;
  *uses_jit = false;
  const hlo_shape *s = &ins->shape;
  *state = window_of(s, ins->operands[1]->shape.dims, s->rank ? ins->operands[2]->shape.type : HLO_S32);
  return *state ? NULL : status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
}

/* The clamped start of the window, from the index scalars idx[0 .. rank). */
static void window_start(const update_slice *u, char *const *idx, int64_t *start) {
  for (int d = 0; d < u->rank; d++) {
    int64_t v = hlo_index_at(u->index_type, idx[d], 0), hi = u->dims[d] - u->upd[d];
    start[d] = v < 0 ? 0 : v > hi ? hi : v;
  }
}

/* The byte offset in the operand of the window row at pos (dims < inner; the rest 0). */
static int64_t row_at(const update_slice *u, const int64_t *start, const int64_t *pos) {
  int64_t at = 0;
  for (int d = 0; d < u->rank; d++) at += (start[d] + (d < u->inner ? pos[d] : 0)) * u->strides[d];
  return at * (int64_t)u->elem;
}

/* Steps pos to the next row, the window's outer dims (< inner) counting like an odometer. */
static void next_row(const update_slice *u, int64_t *pos) {
  for (int d = u->inner - 1; d >= 0; d--) {
    if (++pos[d] < u->upd[d]) return;
    pos[d] = 0;
  }
}

static kiln_status us_run(void *state, char *const *out, char *const *in) {
  const update_slice *u = state;
  if (out[0] != in[0] && u->bytes > 0) memcpy(out[0], in[0], (size_t)u->bytes);
  int64_t start[HLO_MAX_RANK];
  window_start(u, in + 2, start);
  size_t run_bytes = (size_t)u->run * u->elem;
  int64_t pos[HLO_MAX_RANK] = {0};
  const char *src = in[1];
  for (int64_t row = 0; row < u->rows; row++, src += run_bytes, next_row(u, pos))
    memmove(out[0] + row_at(u, start, pos), src, run_bytes);
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

/* dynamic-slice windows taken natively: rows of at least this many elements, up to this
 * many elements in all. Shorter rows stay kernels (a scan step's f32[1,3] slice took
 * ~25 ns longer through the native call than as the kernel), and so do bigger windows,
 * which the kernel splits across the threads. */
#define DS_MIN_ROW 16
#define DS_MAX_WINDOW 32768

static bool ds_supports(const hlo_instr *ins, strbuf *why) {
  (void)why; /* the kernel takes whatever this leaves */
  if (ins->op != HLO_OP_DYNAMIC_SLICE) return false;
  const hlo_shape *s = &ins->shape;
  if (!shape_is_array(s) || ins->n_operands != 1 + s->rank || s->rank == 0) return false;
  for (int k = 0; k < ins->n_operands; k++)
    if (!shape_is_array(&ins->operands[k]->shape)) return false;
  const hlo_shape *o = &ins->operands[0]->shape;
  if (o->type != s->type || o->rank != s->rank) return false;
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] > o->dims[d] || s->dims[d] < 0) return false;
  hlo_type it = ins->operands[1]->shape.type;
  for (int k = 1; k < ins->n_operands; k++) {
    const hlo_shape *is = &ins->operands[k]->shape;
    if (is->rank != 0 || !hlo_type_is_int(is->type) || is->type != it) return false;
  }
  int64_t n = shape_elements(s);
  if (n == 0 || n > DS_MAX_WINDOW) return false;
  update_slice *u = window_of(o, s->dims, it);
  bool ok = u && u->run >= DS_MIN_ROW;
  free(u);
  return ok;
}

static kiln_status ds_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                             bool *uses_jit) {
  (void)jm;
  (void)prefix;
  *uses_jit = false;
  *state = window_of(&ins->operands[0]->shape, ins->shape.dims, ins->operands[1]->shape.type);
  return *state ? NULL : status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
}

static kiln_status ds_run(void *state, char *const *out, char *const *in) {
  const update_slice *u = state;
  int64_t start[HLO_MAX_RANK];
  window_start(u, in + 1, start);
  size_t run_bytes = (size_t)u->run * u->elem;
  int64_t pos[HLO_MAX_RANK] = {0};
  char *dst = out[0];
  for (int64_t row = 0; row < u->rows; row++, dst += run_bytes, next_row(u, pos))
    memcpy(dst, in[0] + row_at(u, start, pos), run_bytes);
  return NULL;
}

const cpu_native_kind cpu_native_dynamic_slice = {
    .name = "dynamic-slice",
    .supports = ds_supports,
    .create = ds_create,
    .run = ds_run,
    .destroy = us_destroy,
};
