/* NumPy .npy files of strings <-> kiln STRING tensors: how `kiln run` takes and writes
 * string values (hlo/npy.h does numbers; HLO has no strings).
 *
 * numpy stores text as fixed-width arrays: '<U<n>' holds n UCS-4 code points per
 * element (little-endian; '>U' big-endian), 'S<n>' (or '|S<n>') n bytes; shorter
 * elements are padded with NULs, which numpy strips on reading, and so does kiln.
 * Reading a 'U' array gives UTF-8 strings (a surrogate or a value past U+10FFFF is an
 * error naming the element); an 'S' array gives its bytes as they are. An object array
 * ('|O', what np.array([...], dtype=object) makes, and what onnx's numpy_helper gives
 * for STRING tensors) can only be read with pickle, which kiln never runs: it is
 * refused with a message saying to save the array with dtype=str. Header syntax,
 * versions 1.0-3.0, C order only (fortran_order True with rank > 1 is refused) and the
 * size checks against the bytes present follow hlo/npy.h.
 *
 * Writing makes '<U<n>' with n the longest element in code points (at least 1, as
 * numpy does), version 1.0 (2.0 for huge headers), the header padded to 64 bytes
 * like np.save's. Elements must be valid UTF-8: an invalid one is an error naming
 * `what` (the output) and the element. A trailing U+0000 in an element does not survive
 * (numpy's padding rule), so such strings are refused too. */
#ifndef KILN_GRAPH_NPY_STRINGS_H
#define KILN_GRAPH_NPY_STRINGS_H

#include <stddef.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "graph/tensor.h"

/* Reads a .npy image of strings into a new STRING tensor. When the image holds some
 * other element type (numbers, bools), *out is left NULL and NULL is returned, so the
 * caller can read it as numbers (hlo/npy.h) instead; a malformed image, an object
 * array or an unreadable element is an error naming `what` (the file). */
kiln_status npy_strings_read_buffer(const void *data, size_t len, const char *what, graph_tensor **out);
/* The same for a file; a numeric file is recognised from its header without reading
 * its payload. */
kiln_status npy_strings_read_file(const char *path, graph_tensor **out);

/* Appends the .npy image of STRING tensor t to *out; `what` names t in errors
 * ("output y"). */
kiln_status npy_strings_write_buffer(const graph_tensor *t, const char *what, strbuf *out);
kiln_status npy_strings_write_file(const char *path, const graph_tensor *t, const char *what);

#endif
