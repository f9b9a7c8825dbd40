/* Strict UTF-8 (RFC 3629) decoding and encoding; see utf8.h. */
#include "base/utf8.h"

bool utf8_decode(const char *s, size_t len, size_t *pos, uint32_t *cp) {
  size_t i = *pos;
  if (i >= len) return false;
  const unsigned char *u = (const unsigned char *)s;
  unsigned char c = u[i];
  int n;
  uint32_t v, min;
  if (c < 0x80) {
    *cp = c;
    *pos = i + 1;
    return true;
  }
  if (c >= 0xC2 && c <= 0xDF) n = 1, v = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 2, v = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 3, v = c & 0x07, min = 0x10000;
  else return false; /* continuation byte, C0/C1 (always overlong) or F5..FF */
  if (len - i - 1 < (size_t)n) return false;
  for (int k = 1; k <= n; k++) {
    unsigned char t = u[i + (size_t)k];
    if ((t & 0xC0) != 0x80) return false;
    v = (v << 6) | (t & 0x3F);
  }
  /* Overlong forms, surrogates and values past the last plane have no UTF-8 form. */
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return false;
  *cp = v;
  *pos = i + 1 + (size_t)n;
  return true;
}

int utf8_encode(uint32_t cp, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  if (cp > 0x10FFFF) return 0;
  o[0] = (unsigned char)(0xF0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

bool utf8_valid(const char *s, size_t len, size_t *bad_at) {
  size_t pos = 0;
  uint32_t cp;
  while (pos < len)
    if (!utf8_decode(s, len, &pos, &cp)) {
      if (bad_at) *bad_at = pos;
      return false;
    }
  return true;
}
