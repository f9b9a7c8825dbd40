/* Literals: concrete values of an HLO shape.
 *
 * An array literal is a shape plus a dense buffer in row-major order (the logical order
 * of the dims, whatever the shape's layout says). pred is one byte (0/1), f16/bf16 are
 * their raw 16-bit patterns, the narrow types one byte each (types.h). A tuple literal owns its element literals. Literals are
 * heap objects (not arena) because the evaluator creates and drops them freely;
 * literal_free releases everything. Constants in the IR own their literal and free it
 * with the module. */
#ifndef KILN_HLO_LITERAL_H
#define KILN_HLO_LITERAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "hlo/shape.h"

/* Whoever lent a borrowed literal its data and would free its own copy once a compile
 * no longer needs it (a model's weight that can be read back from its file). The
 * lender's own module holds an uncounted borrow (literal_borrow_owned); a compile's
 * copy of that module borrows counted (literal_borrow_counted), and each counted borrow
 * ends when its literal gives the data up (packed into a primitive, copied, dropped with
 * a dead instruction, freed). When the last one ends, `unneeded` is called and the
 * lender decides whether to free. Not thread-safe: one compile per lender at a time. */
typedef struct literal_owner {
  void (*unneeded)(struct literal_owner *self);
  int borrowers; /* counted borrows alive */
} literal_owner;

typedef struct hlo_literal {
  hlo_shape shape; /* for tuples, shape.elems is owned by the literal */
  void *data;      /* arrays: shape_byte_size bytes, row-major; NULL for tuple/token */
  int64_t n;       /* element count of an array literal */
  struct hlo_literal **tuple; /* tuples: n_elems owned literals */
  /* Arrays: data belongs to someone else (literal_borrow), who keeps it alive and
   * unchanged for the literal's life; literal_free leaves it alone, nothing writes it. */
  bool borrowed;
  literal_owner *owner; /* borrowed arrays: the lender (NULL: none) */
  bool counted;         /* a counted borrow of owner's data (see literal_owner) */
} hlo_literal;

/* Upper bound on a single literal's size; larger requests are RESOURCE_EXHAUSTED errors,
 * never an abort. Settable so tests can provoke the error cheaply. */
extern int64_t literal_max_bytes;

/* Zero-filled array literal (token shapes allowed: no data). */
kiln_status literal_create(const hlo_shape *shape, hlo_literal **out);
/* The same with the data left uninitialised, for a caller that writes every byte: for
 * a result of megabytes copied out of a backend's buffers, zeroing first touched the
 * whole block twice. */
kiln_status literal_create_uninit(const hlo_shape *shape, hlo_literal **out);
/* Takes ownership of elems[0..n). */
hlo_literal *literal_tuple(int n, hlo_literal **elems);
hlo_literal *literal_clone(const hlo_literal *l);
/* An array literal over data it does not own (see `borrowed`): a module built only to be
 * compiled can hold large constants without copying them; the clone a backend keeps owns
 * its copy. */
hlo_literal *literal_borrow(const hlo_shape *shape, const void *data);
/* The same, naming the lender (see literal_owner); uncounted. */
hlo_literal *literal_borrow_owned(const hlo_shape *shape, const void *data, literal_owner *owner);
/* A counted borrow of owner's data (owner NULL: a plain borrow): what a module clone
 * that borrows its source's constants makes of a literal with a lender. */
hlo_literal *literal_borrow_counted(const hlo_shape *shape, const void *data, literal_owner *owner);
/* Gives up a borrowed literal's data (data NULL): its holder no longer reads it (a
 * primitive packed its own copy, or its instruction died). Owned data is freed. */
void literal_drop_data(hlo_literal *l);
/* Makes a borrowed array literal own a copy of its data (no-op when it owns it):
 * for a holder that must outlive the lender, such as compiled code that reads the
 * data at its address. */
void literal_own(hlo_literal *l);
/* Bytes of a literal's array data, a tuple's elements summed (0 for tokens). */
int64_t literal_array_bytes(const hlo_literal *l);
void literal_free(hlo_literal *l);

/* Element access by linear (row-major) index, converting through double / int64. Slow
 * but exact for every type (int64 values beyond 2^53 via literal_get_s64). */
double literal_get_f64(const hlo_literal *l, int64_t i);
int64_t literal_get_s64(const hlo_literal *l, int64_t i);
uint64_t literal_get_u64(const hlo_literal *l, int64_t i);
/* Element i of a row-major integer array of type t as a start index: unsigned values
 * past INT64_MAX saturate (so they still count as too large, to be clamped or skipped,
 * rather than wrapping negative); 0 for a non-integer type. For literals and for the raw
 * buffers compiled code works on alike. */
int64_t hlo_index_at(hlo_type t, const void *data, int64_t i);
void literal_set_f64(hlo_literal *l, int64_t i, double v);  /* rounds per element type */
void literal_set_s64(hlo_literal *l, int64_t i, int64_t v); /* wraps like a C cast */
void literal_set_u64(hlo_literal *l, int64_t i, uint64_t v);

/* Bitwise equality of shape and data (NaNs with equal bits compare equal). */
bool literal_equal(const hlo_literal *a, const hlo_literal *b);

/* XLA text form of the values, as after "constant(": scalars "1.5", arrays
 * "{ { 1, 2 }, { 3, 4 } }", tuples "( {1, 2}, 3 )". Floats print so that they parse back to
 * the same bits (shortest round-trip), with inf/-inf/nan spelled as XLA does. */
void literal_print_values(strbuf *b, const hlo_literal *l);

/* Deterministic pseudo-random contents (for elided constants "{...}"): floats in
 * [-1, 1), ints in a small range, preds 0/1. Same shape + seed, same values. */
void literal_fill_pseudo_random(hlo_literal *l, uint64_t seed);

#endif
