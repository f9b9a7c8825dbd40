/* NumPy .npy files <-> HLO literals: how `kiln run` takes inputs and writes outputs.
 *
 * Reading accepts format versions 1.0, 2.0 and 3.0, C order only (fortran_order True is
 * an error for rank >= 2; for rank 0 and 1 both orders are the same bytes), little- and
 * big-endian descrs (big-endian data is byte-swapped), and the header dict in any key
 * order with any spacing and an optional trailing comma.
 * Supported descrs and the element types they map to:
 *   '|b1' pred, '|i1' s8, '<i2' s16, '<i4' s32, '<i8' s64, '|u1' u8, '<u2' u16,
 *   '<u4' u32, '<u8' u64, '<f2' f16, '<f4' f32, '<f8' f64, '|V1' u8
 * (with '<', '>', '|' or '=' as the byte-order mark). '|V1' is what np.save writes for
 * an ml_dtypes float8/float4/int4 array: its raw bytes, read as u8 for the narrowing
 * below. Sizes are checked before anything
 * is allocated: rank and dims, the byte count against literal_max_bytes, and the
 * payload against the bytes actually present, so a hostile header cannot make kiln
 * allocate more than the file holds.
 *
 * bf16: numpy has no bfloat16 dtype (ml_dtypes' bfloat16 is pickled by np.save), so
 * kiln stores bf16 as float32: npy_write_* widens a bf16 literal to '<f4' (exact), and
 * callers that need bf16 narrow an f32 literal with npy_convert_f32_to_bf16
 * (round-to-nearest-even). `kiln run` does that for bf16 parameters. Reading never
 * produces a bf16 literal.
 *
 * The narrow types (f8*, f4e2m1fn, s4, u4, s2, u2; numpy has none of them either, and
 * np.save of an ml_dtypes array writes a descr numpy cannot read back) travel one byte
 * per element: the floats as their bit patterns in uint8 ('|u1'; a.view(np.uint8) of an
 * ml_dtypes array, u.view(ml_dtypes.float8_e4m3fn) back; f8e8m0fnu too: its byte is its
 * biased exponent), s4 as int8 values -8..7 and s2 as int8 values -2..1 ('|i1';
 * a.astype(np.int8)), u4 as uint8 values 0..15 and u2 as uint8 values 0..3 ('|u1').
 * npy_write_* writes them so (exactly kiln's storage), and npy_convert_to_narrow turns
 * what was read into the narrow literal: uint8 bit patterns (s4 / s2 as their low four /
 * two bits, which is also ml_dtypes' int4 / int2 storage), or int8 values for s4 and s2.
 * Reading never produces a narrow literal.
 *
 * Writing produces version 1.0 (2.0 when the header would exceed 65535 bytes), C order,
 * little-endian, with the header padded so the data starts at a multiple of 64 bytes, as
 * numpy writes it. Tuples and tokens cannot be written (callers flatten tuples). */
#ifndef KILN_HLO_NPY_H
#define KILN_HLO_NPY_H

#include <stddef.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "hlo/literal.h"

/* Error messages name `path`. *out is owned by the caller (literal_free). */
kiln_status npy_read_file(const char *path, hlo_literal **out);
/* `what` names the buffer in messages (a file name, "<fuzz input>"). */
kiln_status npy_read_buffer(const void *data, size_t len, const char *what, hlo_literal **out);

kiln_status npy_write_file(const char *path, const hlo_literal *lit);
/* Appends the whole .npy image to *out. */
kiln_status npy_write_buffer(const hlo_literal *lit, strbuf *out);

/* The numpy descr kiln writes for an element type ("<f4"; bf16 gives "<f4", the narrow
 * types "|u1", s4 "|i1"), NULL for tuple/token. */
const char *npy_descr_for_type(hlo_type t);

/* New bf16 literal with the dims of `f32` (an f32 literal), each value rounded to
 * nearest even. */
kiln_status npy_convert_f32_to_bf16(const hlo_literal *f32, hlo_literal **out);

/* New literal of narrow type t with the dims and bytes of `in` (u8, or s8 for s4), as
 * described above; a byte the type cannot hold (a float4 pattern over 15, an s4 value
 * outside -8..7, ...) is an error naming its index, never wrapped. */
kiln_status npy_convert_to_narrow(const hlo_literal *in, hlo_type t, hlo_literal **out);

#endif
