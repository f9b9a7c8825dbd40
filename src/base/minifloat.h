/* The 8- and 4-bit floating-point formats (OCP / ONNX float8 and float4), bit-exact with
 * round-to-nearest-even, as ml_dtypes (and so XLA and JAX) defines them:
 *
 *   format      exp/man  bias  largest  inf  NaN                 negative zero
 *   E4M3FN       4 / 3     7     448     no   S.1111.111          yes
 *   E4M3FNUZ     4 / 3     8     240     no   1.0000.000 (0x80)   no
 *   E5M2         5 / 2    15   57344    yes   S.11111.xx, xx != 0  yes
 *   E5M2FNUZ     5 / 2    16   57344     no   1.00000.00 (0x80)   no
 *   E2M1FN       2 / 1     1       6     no   none                yes
 *   E8M0FNU      8 / 0   127   2^127     no   0xFF                no sign at all
 *
 * Narrowing is the non-saturating conversion (XLA's convert, ml_dtypes' astype): a value
 * that rounds past the largest finite one becomes inf where the format has it, else
 * NaN, and E2M1FN (neither) saturates; NaN becomes the format's NaN with the input's
 * sign (E2M1FN: ml_dtypes' stand-in, a zero of the opposite sign). ONNX's saturating
 * Cast clamps to +-minifloat_max first. A double rounds once, directly (ml_dtypes rounds
 * a double through float first, which can differ at the 2^-40 level); a float gives
 * exactly ml_dtypes' result. Widening is exact; NaNs widen to the quiet NaN of their
 * sign, as ml_dtypes does. Formats are stored one per byte in the low bits.
 *
 * E8M0FNU (the OCP microscaling scale type) is only an exponent: pattern e is 2^(e-127),
 * 0xFF is NaN, and there is neither zero, sign nor infinity. ml_dtypes narrows to it by
 * rounding to the nearest power of two with ties (1.5 * 2^k) upward, sends zero,
 * negatives, infinities and NaN to NaN, overflow (>= 1.5 * 2^127) to NaN, and below
 * 2^-126 everything up to 2^-127 to 2^-127 (0x00), everything above it to 2^-126.
 * ONNX's Cast, which reads only a float's exponent field and has its own rounding
 * modes, is built from integer ops by the importer (ops_onnx_math.c), not from this
 * conversion. */
#ifndef KILN_BASE_MINIFLOAT_H
#define KILN_BASE_MINIFLOAT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum minifloat_format {
  MINIFLOAT_E4M3FN,
  MINIFLOAT_E4M3FNUZ,
  MINIFLOAT_E5M2,
  MINIFLOAT_E5M2FNUZ,
  MINIFLOAT_E2M1FN,
  MINIFLOAT_E8M0FNU,
} minifloat_format;

float minifloat_to_f32(minifloat_format f, uint8_t bits);
uint8_t minifloat_from_f64(minifloat_format f, double v);
/* Whether v (finite) rounds past the largest finite value of the format. */
bool minifloat_overflows(minifloat_format f, double v);
/* The largest finite value (448, 240, 57344, 57344, 6, 2^127). */
double minifloat_max(minifloat_format f);
bool minifloat_has_inf(minifloat_format f); /* E5M2 only */

#endif
