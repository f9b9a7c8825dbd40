/* HLO shapes: an element type with dimensions and an optional minor-to-major layout, or
 * a tuple of shapes, or a token.
 *
 * Array shapes are plain values (fixed-capacity dims) so they can be copied with `=`;
 * only tuple shapes point at element shapes, which live in the owning arena (IR) or are
 * owned by the literal that carries them. Layout is kept exactly as written so printing
 * reproduces it; semantics never depend on it (literals are always row-major). */
#ifndef KILN_HLO_SHAPE_H
#define KILN_HLO_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/strbuf.h"
#include "hlo/types.h"

#define HLO_MAX_RANK 16

typedef struct hlo_shape {
  hlo_type type;
  int rank;
  int64_t dims[HLO_MAX_RANK];
  bool dynamic[HLO_MAX_RANK]; /* "<=N": bounded dynamic dimension, N is the bound */
  bool has_layout;
  int64_t minor_to_major[HLO_MAX_RANK];
  const char *layout_extra; /* anything after the dims in a layout, e.g. ":T(8,128)"; NULL if none */
  int n_elems;              /* tuple arity */
  struct hlo_shape *elems;  /* tuple element shapes */
} hlo_shape;

hlo_shape shape_make(hlo_type type, int rank, const int64_t *dims);
hlo_shape shape_scalar(hlo_type type);
/* Tuple shape whose element array is copied into A. */
hlo_shape shape_tuple(arena *a, int n, const hlo_shape *elems);
/* Deep copy of a tuple shape's element arrays into A (array shapes copy by value). */
hlo_shape shape_clone(arena *a, const hlo_shape *s);

bool shape_is_array(const hlo_shape *s);
bool shape_is_tuple(const hlo_shape *s);
/* Product of dims (1 for scalars). Returns -1 on overflow past INT64_MAX. */
int64_t shape_elements(const hlo_shape *s);
/* elements * element size, -1 on overflow. */
int64_t shape_byte_size(const hlo_shape *s);
/* Equal types and dims (and tuple structure); layouts ignored. */
bool shape_compatible(const hlo_shape *a, const hlo_shape *b);
/* Equal including layouts. */
bool shape_equal(const hlo_shape *a, const hlo_shape *b);
bool shape_same_dims(const hlo_shape *a, const hlo_shape *b);
/* Sets the default (descending, row-major) layout on arrays, recursively on tuples. */
void shape_set_default_layout(hlo_shape *s);

/* Prints XLA syntax: f32[2,3]{1,0}, (f32[], s32[4]), token[]. with_layout=false omits
 * layouts. */
void shape_print(strbuf *b, const hlo_shape *s, bool with_layout);
/* Convenience for error messages: malloc'ed string. */
char *shape_to_string(const hlo_shape *s);

/* Row-major strides of an array shape, in elements. */
void shape_strides(const hlo_shape *s, int64_t *strides);

#endif
