/* Buffer assignment for the entry computation of a compiled module (after fusion), in
 * the spirit of XLA's BufferAssignment with a heap simulator: decides where every
 * instruction's value lives so the backend can run the whole program out of one temp
 * arena whose size is known at compile time.
 *
 * Kinds of storage (one slot per entry instruction, slots[i] for entry->instrs[i]):
 *   ARENA     [offset, offset+size) of the temp arena; offsets are multiples of the
 *             alignment. A tuple-shaped result of a real op (while, sort, variadic
 *             reduce, call, conditional, tuple-shaped fusion) is one ARENA block holding
 *             its leaf arrays packed in order, each at an aligned offset inside it.
 *   PARAMETER the caller's argument param_index; never written. A tuple-shaped
 *             parameter is expected in the same packed form, so get-tuple-element
 *             offsets into it mean the same thing.
 *   CONSTANT  the instruction's own literal; never written.
 *   ALIAS     the bytes of operand 0 starting `offset` bytes into its storage: bitcast
 *             and reshape (literals are row-major, so a reshape moves no data) at offset
 *             0, get-tuple-element of a packed tuple at the element's offset, and
 *             get-tuple-element of a `tuple` instruction (offset 0; the bytes are those
 *             of the tuple's operand, see hlo_buffer_resolve).
 *   NONE      `tuple` instructions: a tuple only groups its operands' storage.
 * Liveness runs over the entry's instruction order (a topological order; when the list
 * is not one, a stable topological order is used instead): a value is live from its
 * definition to its last reader, readers through aliases and tuples included; the
 * entry's outputs live to the end. Arena offsets are chosen best-fit among ranges freed
 * so far (first lowest offset on ties), growing the arena only when nothing fits.
 * In place: an elementwise op, or a kLoop or kOutput fusion whose fused computation maps
 * the operand's element i only to result element i (every instruction depending on that
 * parameter is elementwise with the result's dimensions: in a kOutput fusion, the
 * residual of the epilogue, never an operand of the dot/convolution), or a
 * dynamic-update-slice for its operand 0 (it rewrites only its window), writes into operand k's
 * ARENA block when that block has the same byte size and this op is its last reader;
 * the slot is then marked in_place with the operand's offset.
 * Which outputs a backend may hand to its caller without a copy is the backend's
 * decision (an output resolving to a PARAMETER or CONSTANT, or to storage an earlier
 * output names, is not fresh): the cpu backend's is build_outputs in cpu_compiler.c. */
#ifndef KILN_HLO_BUFFER_ASSIGNMENT_H
#define KILN_HLO_BUFFER_ASSIGNMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "hlo/ir.h"

typedef enum hlo_buffer_kind {
  HLO_BUFFER_ARENA,     /* a slice [offset, offset+size) of one temp arena */
  HLO_BUFFER_PARAMETER, /* the entry parameter param_index (caller's memory) */
  HLO_BUFFER_CONSTANT,  /* the instruction's own literal, read-only */
  HLO_BUFFER_ALIAS,     /* same bytes as operand 0 (bitcast, reshape in row-major, get-tuple-element of a tuple ... ) */
  HLO_BUFFER_NONE       /* tuples: no storage of their own */
} hlo_buffer_kind;

typedef struct hlo_buffer_slot {
  hlo_buffer_kind kind;
  int64_t offset, size; /* ARENA: arena range; ALIAS: byte offset into operand 0's storage */
  int param_index;      /* PARAMETER only */
  bool in_place;        /* ARENA: reuses the block of an operand read for the last time here */
} hlo_buffer_slot;

typedef struct hlo_buffer_assignment {
  int64_t arena_bytes; /* total temp arena size */
  int n_slots;         /* = entry->n_instrs; slots[i] belongs to entry->instrs[i] */
  hlo_buffer_slot *slots;
} hlo_buffer_assignment;

/* alignment: a power of two (64 for the CPU backend). Errors name the instruction whose
 * size cannot be represented or whose operands are not in the computation. */
kiln_status hlo_assign_buffers(const hlo_computation *entry, int64_t alignment, hlo_buffer_assignment **out);
/* The packing a tuple-shaped value gets in its block, for the backends that read and
 * write such blocks: the bytes of a value of shape s (arrays as they are, tuple elements
 * one after the other, each at an aligned offset; -1 on overflow), and the offset of
 * tuple element `index` inside it. */
int64_t hlo_buffer_packed_bytes(const hlo_shape *s, int64_t alignment);
int64_t hlo_buffer_packed_element_offset(const hlo_shape *s, int64_t index, int64_t alignment);
void hlo_buffer_assignment_free(hlo_buffer_assignment *a);

/* Independent re-check: recomputes live ranges and verifies that no two arena buffers
 * live at the same time overlap (an in-place result may take over the block of the
 * operand it reads last), that every block is aligned, inside the arena and big enough,
 * and that parameters and constants are never written. */
bool hlo_buffer_assignment_check(const hlo_computation *entry, const hlo_buffer_assignment *a);

/* Follows ALIAS slots down to the storage that holds instruction i's bytes: writes the
 * index of the PARAMETER / CONSTANT / ARENA instruction and the byte offset into it.
 * False when i has no storage of its own (a tuple). */
bool hlo_buffer_resolve(const hlo_computation *entry, const hlo_buffer_assignment *a, int i, int *base,
                        int64_t *offset);

/* Whether ins may write its result over operand k's storage (the in-place rule above:
 * element i of that operand feeds only element i of the result, or it is a
 * dynamic-update-slice's operand 0). Backends use it for storage they place themselves,
 * such as a loop body writing straight into the loop state. */
bool hlo_buffer_in_place_operand(const hlo_instr *ins, int k);

#endif
