/* UTF-8 decoding and encoding for kiln's string tensors.
 *
 * Framework string tensors are byte strings; ONNX says they hold UTF-8, and the places
 * where kiln must look at characters rather than bytes (numpy's UCS-4 '<U' arrays in
 * .npy files, case mapping in StringNormalizer) decode them here. Decoding is strict
 * (RFC 3629): overlong forms, surrogates (U+D800..U+DFFF), code points past U+10FFFF
 * and truncated sequences are errors, so a value that decodes also round-trips through
 * UCS-4 bit for bit. */
#ifndef KILN_BASE_UTF8_H
#define KILN_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes the code point starting at s[*pos] (len bytes in all) and advances *pos past
 * it. False (and *pos unchanged) when the bytes there are not well-formed UTF-8. */
bool utf8_decode(const char *s, size_t len, size_t *pos, uint32_t *cp);
/* Writes cp's UTF-8 form to out (room for 4 bytes) and returns its length; 0 for a
 * surrogate or a value past U+10FFFF. */
int utf8_encode(uint32_t cp, char *out);
/* Whether s[0..len) is well-formed UTF-8; *bad_at (may be NULL) gets the offset of the
 * first byte that is not. */
bool utf8_valid(const char *s, size_t len, size_t *bad_at);

#endif
