/* The HLO IR: modules of computations of instructions, as in XLA.
 *
 * A module owns one arena; every instruction, computation, name, attribute array and
 * tuple shape lives in it and is freed with hlo_module_free (constants' literals too).
 * Instructions carry the op-specific attributes XLA defines as typed fields below; any
 * attribute the parser does not interpret (sharding, backend_config, metadata,
 * frontend_attributes, …) is kept verbatim in `raw_attrs` and printed back, so a dump
 * survives a round trip through kiln unchanged.
 *
 * Operand order and called computations follow XLA exactly (e.g. while: called[0] is the
 * condition, called[1] the body; conditional: called[] are the branch computations in
 * order, true_computation first for the predicate form). */
#ifndef KILN_HLO_IR_H
#define KILN_HLO_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "hlo/literal.h"
#include "hlo/opcode.h"
#include "hlo/shape.h"

typedef struct hlo_module hlo_module;
typedef struct hlo_computation hlo_computation;
typedef struct hlo_instr hlo_instr;

/* An arena-owned list of integers: dimensions={…} and friends. */
typedef struct hlo_ints {
  int n;
  int64_t *v;
} hlo_ints;

/* One spatial dimension of window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=…
 * rhs_dilate=… rhs_reversal=…}. Defaults: stride 1, pads 0, dilations 1. */
typedef struct hlo_window_dim {
  int64_t size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate;
  bool reversal;
} hlo_window_dim;

typedef struct hlo_window {
  int rank; /* 0: no window attribute */
  hlo_window_dim dims[HLO_MAX_RANK];
} hlo_window;

/* dim_labels=b01f_01io->b01f. Spatial entries are indexed by spatial dimension number
 * (the digit in the label). */
typedef struct hlo_conv_dnums {
  int n_spatial;
  int64_t input_batch, input_feature, input_spatial[HLO_MAX_RANK];
  int64_t kernel_input_feature, kernel_output_feature, kernel_spatial[HLO_MAX_RANK];
  int64_t output_batch, output_feature, output_spatial[HLO_MAX_RANK];
} hlo_conv_dnums;

typedef struct hlo_dot_dnums {
  hlo_ints lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
} hlo_dot_dnums;

typedef struct hlo_gather_dnums {
  hlo_ints offset_dims, collapsed_slice_dims, start_index_map;
  hlo_ints operand_batching_dims, start_indices_batching_dims;
  int64_t index_vector_dim;
} hlo_gather_dnums;

typedef struct hlo_scatter_dnums {
  hlo_ints update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  hlo_ints input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim;
} hlo_scatter_dnums;

typedef enum hlo_direction {
  HLO_DIR_EQ, HLO_DIR_NE, HLO_DIR_LT, HLO_DIR_LE, HLO_DIR_GT, HLO_DIR_GE
} hlo_direction;

/* compare's type=…; DEFAULT means "not written" (XLA infers FLOAT / SIGNED / UNSIGNED
 * from the operand type). */
typedef enum hlo_compare_type {
  HLO_CMP_DEFAULT, HLO_CMP_FLOAT, HLO_CMP_TOTALORDER, HLO_CMP_SIGNED, HLO_CMP_UNSIGNED
} hlo_compare_type;

/* An attribute kept as text: key=value exactly as written (value without the key). */
typedef struct hlo_raw_attr {
  const char *key;
  const char *value;
} hlo_raw_attr;

struct hlo_instr {
  int id;                 /* unique in the module, assigned in creation order */
  const char *name;       /* without the leading '%' */
  hlo_opcode op;
  hlo_shape shape;
  hlo_computation *parent;

  int n_operands;
  hlo_instr **operands;
  int n_called;
  hlo_computation **called; /* to_apply / calls / condition,body / branches / comparator */

  /* --- op-specific attributes (zero unless the op uses them) --- */
  hlo_literal *literal;     /* constant (owned; freed with the module) */
  int64_t parameter_number; /* parameter */
  int64_t tuple_index;      /* get-tuple-element index= */
  hlo_ints dimensions;      /* dimensions={…}: broadcast, transpose, reduce, reverse,
                               concatenate (1 entry), sort (1 entry), map */
  int64_t iota_dimension;
  hlo_ints slice_start, slice_limit, slice_stride; /* slice={[a:b:s], …} */
  hlo_ints dynamic_slice_sizes;
  hlo_ints pad_lo, pad_hi, pad_interior;          /* padding=0_0_0x1_1_0 */
  hlo_window window;
  hlo_conv_dnums conv;
  bool has_conv_dnums;
  int64_t feature_group_count; /* 1 when absent */
  int64_t batch_group_count;   /* 1 when absent */
  hlo_dot_dnums dot;
  hlo_gather_dnums gather;
  hlo_ints gather_slice_sizes;
  hlo_scatter_dnums scatter;
  bool indices_are_sorted, unique_indices;
  hlo_direction direction;
  hlo_compare_type compare_type;
  int64_t exponent_bits, mantissa_bits; /* reduce-precision */
  bool is_stable;                       /* sort */
  const char *custom_call_target;
  const char *fusion_kind; /* kLoop / kInput / kOutput / kCustom */
  int64_t k;               /* topk */
  bool largest;            /* topk */

  int n_raw_attrs;
  hlo_raw_attr *raw_attrs;
  const char *metadata; /* text inside metadata={…}, NULL if none (also kept here, not in raw_attrs) */

  void *user_data; /* scratch for passes and backends; never printed */
};

struct hlo_computation {
  const char *name;
  hlo_module *module;
  int n_instrs, cap_instrs;
  hlo_instr **instrs; /* definition order: every operand precedes its users */
  hlo_instr *root;
  int n_params;
  hlo_instr **params; /* indexed by parameter_number */
  bool is_entry;
  bool is_fusion_computation; /* printed as a fused computation; semantics unchanged */
};

struct hlo_module {
  arena *arena;
  const char *name;
  int n_comps, cap_comps;
  hlo_computation **comps; /* print order: callees before callers, entry last */
  hlo_computation *entry;
  int next_id;
  /* Instructions made in the current arena, dead ones included (hlo_module_compact). */
  int64_t arena_instrs;
  /* Header attributes other than entry_computation_layout (which is recomputed from
   * the entry's parameters and root when printing), kept verbatim. */
  int n_raw_attrs;
  hlo_raw_attr *raw_attrs;
  /* Constant literals owned by instructions, freed with the module. */
  int n_owned_literals, cap_owned_literals;
  hlo_literal **owned_literals;
  /* Newer XLA dumps carry a stack-frame index (FileNames / FunctionNames /
   * FileLocations / StackFrames sections) between the header and the computations;
   * metadata refers to it by stack_frame_id. Kept verbatim, NULL if none. */
  const char *stack_frames;
  /* private: the instruction-name index behind hlo_module_name_taken */
  struct hlo_name_index *name_index;
};

/* Whether an instruction of m other than `except` (may be NULL) is named `name`.
 * Backed by a hash index that is rebuilt whenever instructions were added or removed
 * behind its back (counts differ), so builders creating thousands of instructions do
 * not rescan the module per name; a rename in place is not noticed until the next
 * rebuild. hlo_module_note_name records a name the caller just gave an instruction
 * it appended (keeping the index current). */
bool hlo_module_name_taken(hlo_module *m, const char *name, const hlo_instr *except);
void hlo_module_note_name(hlo_module *m, const char *name);

/* ---- construction (used by the parser and the builder) ---- */
hlo_module *hlo_module_new(const char *name);
void hlo_module_free(hlo_module *m);
hlo_computation *hlo_computation_new(hlo_module *m, const char *name);
/* Appends to the computation; gives the instruction a fresh id. Name may be NULL: a
 * unique name "<opcode>.<id>" is made. */
hlo_instr *hlo_instr_new(hlo_computation *c, hlo_opcode op, const hlo_shape *shape, const char *name);
void hlo_instr_set_operands(hlo_instr *ins, int n, hlo_instr *const *ops);
void hlo_instr_set_called(hlo_instr *ins, int n, hlo_computation *const *comps);
/* Takes ownership of lit (freed with the module). */
void hlo_instr_set_literal(hlo_instr *ins, hlo_literal *lit);
void hlo_instr_add_raw_attr(hlo_instr *ins, const char *key, const char *value);
hlo_ints hlo_ints_make(arena *a, int n, const int64_t *v);
/* Rebuilds c->params from the parameter instructions in c. Error if numbers have gaps
 * or repeat. */
kiln_status hlo_computation_index_params(hlo_computation *c);

/* ---- queries ---- */
hlo_computation *hlo_module_find_computation(const hlo_module *m, const char *name);
hlo_instr *hlo_computation_find_instr(const hlo_computation *c, const char *name);
/* Removes instructions of c with no users that are not the root and not parameters;
 * returns how many were removed. */
int hlo_computation_remove_dead(hlo_computation *c);
/* Instructions that use ins as an operand (computed by scanning; for passes). */
int hlo_instr_count_users(const hlo_instr *ins);

#endif
