/* Common subexpression elimination, as XLA's HloCSE: within one computation, an
 * instruction identical to an earlier one (same opcode, same operands after earlier
 * merges, same shape including layout, same called computations and every attribute,
 * raw attributes included; constants compared by value) is replaced by the earlier one.
 * Merging is exact because HLO ops are pure functions of operands and attributes —
 * except the side-effecting or nondeterministic ones (rng, custom-call, infeed/outfeed,
 * send/recv, collectives, …), which are never merged. Metadata is ignored, as in XLA.
 * Instructions are visited in definition order, so by the time one is hashed its
 * operands are already canonical and one pass finds every chain of duplicates. */
#include <stdlib.h>
#include <string.h>

#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

static bool ints_eq(hlo_ints a, hlo_ints b) {
  return a.n == b.n && (a.n == 0 || memcmp(a.v, b.v, (size_t)a.n * sizeof(int64_t)) == 0);
}

static bool str_eq(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return strcmp(a, b) == 0;
}

static bool window_eq(const hlo_window *a, const hlo_window *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++) {
    const hlo_window_dim *x = &a->dims[i], *y = &b->dims[i];
    if (x->size != y->size || x->stride != y->stride || x->pad_lo != y->pad_lo || x->pad_hi != y->pad_hi ||
        x->lhs_dilate != y->lhs_dilate || x->rhs_dilate != y->rhs_dilate || x->reversal != y->reversal)
      return false;
  }
  return true;
}

static bool conv_eq(const hlo_conv_dnums *a, const hlo_conv_dnums *b) {
  if (a->n_spatial != b->n_spatial || a->input_batch != b->input_batch || a->input_feature != b->input_feature ||
      a->kernel_input_feature != b->kernel_input_feature || a->kernel_output_feature != b->kernel_output_feature ||
      a->output_batch != b->output_batch || a->output_feature != b->output_feature)
    return false;
  for (int i = 0; i < a->n_spatial && i < HLO_MAX_RANK; i++)
    if (a->input_spatial[i] != b->input_spatial[i] || a->kernel_spatial[i] != b->kernel_spatial[i] ||
        a->output_spatial[i] != b->output_spatial[i])
      return false;
  return true;
}

static bool attrs_eq(const hlo_instr *a, const hlo_instr *b) {
  if (a->parameter_number != b->parameter_number || a->tuple_index != b->tuple_index ||
      !ints_eq(a->dimensions, b->dimensions) || a->iota_dimension != b->iota_dimension ||
      !ints_eq(a->slice_start, b->slice_start) || !ints_eq(a->slice_limit, b->slice_limit) ||
      !ints_eq(a->slice_stride, b->slice_stride) || !ints_eq(a->dynamic_slice_sizes, b->dynamic_slice_sizes) ||
      !ints_eq(a->pad_lo, b->pad_lo) || !ints_eq(a->pad_hi, b->pad_hi) || !ints_eq(a->pad_interior, b->pad_interior) ||
      !window_eq(&a->window, &b->window) || a->has_conv_dnums != b->has_conv_dnums ||
      (a->has_conv_dnums && !conv_eq(&a->conv, &b->conv)) || a->feature_group_count != b->feature_group_count ||
      a->batch_group_count != b->batch_group_count)
    return false;
  if (!ints_eq(a->dot.lhs_batch, b->dot.lhs_batch) || !ints_eq(a->dot.rhs_batch, b->dot.rhs_batch) ||
      !ints_eq(a->dot.lhs_contracting, b->dot.lhs_contracting) ||
      !ints_eq(a->dot.rhs_contracting, b->dot.rhs_contracting))
    return false;
  const hlo_gather_dnums *ga = &a->gather, *gb = &b->gather;
  if (!ints_eq(ga->offset_dims, gb->offset_dims) || !ints_eq(ga->collapsed_slice_dims, gb->collapsed_slice_dims) ||
      !ints_eq(ga->start_index_map, gb->start_index_map) ||
      !ints_eq(ga->operand_batching_dims, gb->operand_batching_dims) ||
      !ints_eq(ga->start_indices_batching_dims, gb->start_indices_batching_dims) ||
      ga->index_vector_dim != gb->index_vector_dim || !ints_eq(a->gather_slice_sizes, b->gather_slice_sizes))
    return false;
  const hlo_scatter_dnums *sa = &a->scatter, *sb = &b->scatter;
  if (!ints_eq(sa->update_window_dims, sb->update_window_dims) ||
      !ints_eq(sa->inserted_window_dims, sb->inserted_window_dims) ||
      !ints_eq(sa->scatter_dims_to_operand_dims, sb->scatter_dims_to_operand_dims) ||
      !ints_eq(sa->input_batching_dims, sb->input_batching_dims) ||
      !ints_eq(sa->scatter_indices_batching_dims, sb->scatter_indices_batching_dims) ||
      sa->index_vector_dim != sb->index_vector_dim)
    return false;
  if (a->indices_are_sorted != b->indices_are_sorted || a->unique_indices != b->unique_indices ||
      a->direction != b->direction || a->compare_type != b->compare_type || a->exponent_bits != b->exponent_bits ||
      a->mantissa_bits != b->mantissa_bits || a->is_stable != b->is_stable ||
      !str_eq(a->custom_call_target, b->custom_call_target) || !str_eq(a->fusion_kind, b->fusion_kind) ||
      a->k != b->k || a->largest != b->largest)
    return false;
  if (a->n_raw_attrs != b->n_raw_attrs) return false;
  for (int i = 0; i < a->n_raw_attrs; i++)
    if (!str_eq(a->raw_attrs[i].key, b->raw_attrs[i].key) || !str_eq(a->raw_attrs[i].value, b->raw_attrs[i].value))
      return false;
  return true;
}

static bool instrs_equal(const hlo_instr *a, const hlo_instr *b) {
  if (a->op != b->op || a->n_operands != b->n_operands || a->n_called != b->n_called) return false;
  if (!shape_equal(&a->shape, &b->shape)) return false;
  for (int k = 0; k < a->n_operands; k++)
    if (a->operands[k] != b->operands[k]) return false;
  for (int k = 0; k < a->n_called; k++)
    if (a->called[k] != b->called[k]) return false;
  if (a->op == HLO_OP_CONSTANT) {
    if (!a->literal || !b->literal || !literal_equal(a->literal, b->literal)) return false;
  }
  return attrs_eq(a, b);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

/* Hashes what is cheap and decisive; attrs_eq settles the rest. */
static uint64_t instr_hash(const hlo_instr *ins) {
  uint64_t h = mix(0, (uint64_t)ins->op);
  h = mix(h, (uint64_t)ins->shape.type);
  for (int d = 0; d < ins->shape.rank; d++) h = mix(h, (uint64_t)ins->shape.dims[d]);
  for (int k = 0; k < ins->n_operands; k++) h = mix(h, (uint64_t)ins->operands[k]->id);
  if (ins->op == HLO_OP_CONSTANT && ins->literal && ins->literal->data) {
    const unsigned char *d = ins->literal->data;
    int64_t bytes = shape_byte_size(&ins->literal->shape);
    for (int64_t i = 0; i < bytes && i < 256; i++) h = mix(h, d[i]);
  }
  return h;
}

static bool cse_candidate(const hlo_instr *ins) {
  if (ins->op == HLO_OP_PARAMETER) return false;
  return !hlo_pass_has_side_effect(ins);
}

static int cse_computation(hlo_computation *c) {
  int n = c->n_instrs;
  if (n < 2) return 0;
  size_t cap = 1;
  while (cap < (size_t)n * 2) cap <<= 1;
  int max_id = 0;
  for (int i = 0; i < n; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  /* Open addressing over instruction pointers; equal hashes are chained by probing. */
  hlo_instr **table = calloc(cap, sizeof *table);
  uint64_t *hashes = calloc(cap, sizeof *hashes);
  /* Duplicate id -> the instruction it merges into, and whether anything read it. Users
   * follow their operands, so each instruction's operands are redirected just before it
   * is hashed: one scan in all, where hlo_pass_replace_uses per merge would rescan the
   * computation for every duplicate (JAX modules repeat broadcasts of constants by the
   * thousand). */
  hlo_instr **merged_into = calloc((size_t)max_id + 1, sizeof *merged_into);
  bool *live = calloc((size_t)max_id + 1, sizeof *live);
  if (!table || !hashes || !merged_into || !live) abort();
  for (int i = 0; i < n; i++) {
    hlo_instr *ins = c->instrs[i];
    for (int k = 0; k < ins->n_operands; k++) {
      int id = ins->operands[k]->id;
      if (id < 0 || id > max_id || !merged_into[id]) continue;
      ins->operands[k] = merged_into[id];
      live[id] = true;
    }
    if (!cse_candidate(ins)) continue;
    uint64_t h = instr_hash(ins);
    size_t slot = (size_t)h & (cap - 1);
    hlo_instr *found = NULL;
    while (table[slot]) {
      if (hashes[slot] == h && instrs_equal(table[slot], ins)) {
        found = table[slot];
        break;
      }
      slot = (slot + 1) & (cap - 1);
    }
    if (found) {
      if (ins->id >= 0 && ins->id <= max_id) merged_into[ins->id] = found;
    } else {
      table[slot] = ins;
      hashes[slot] = h;
    }
  }
  if (c->root && c->root->id >= 0 && c->root->id <= max_id && merged_into[c->root->id]) {
    live[c->root->id] = true;
    c->root = merged_into[c->root->id];
  }
  /* A duplicate merged by an earlier run has no users left; only live merges count, so a
   * fix() loop around CSE terminates before DCE has removed the leftovers. */
  int merged = 0;
  for (int id = 0; id <= max_id; id++) merged += merged_into[id] && live[id];
  free(table);
  free(hashes);
  free(merged_into);
  free(live);
  return merged;
}

kiln_status hlo_pass_cse(hlo_module *m, bool *changed) {
  *changed = false;
  for (int i = 0; i < m->n_comps; i++)
    if (cse_computation(m->comps[i]) > 0) *changed = true;
  return NULL;
}
