/* .npy string arrays (format and choices documented in npy_strings.h).
 *
 * The header parser is separate from hlo/npy.c's on purpose: it has to recognise the
 * string descrs ('<U7', '|S3', '|O') that the numeric reader rejects, and everything
 * it does not recognise as a string array it hands back untouched ("not strings"), so
 * numeric files keep exactly the numeric reader's behaviour and messages. Files are
 * read header first, so a numeric input costs one extra header read, never a second
 * read of its payload. */
#include "graph/npy_strings.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "hlo/literal.h"

#define NPYS_MAX_HEADER_BYTES (1u << 20)

static const unsigned char npys_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef enum npys_kind { NPYS_OTHER = 0, NPYS_UNICODE, NPYS_BYTES, NPYS_OBJECT } npys_kind;

typedef struct npys_header {
  npys_kind kind;
  bool big_endian; /* 'U' payload byte order */
  int64_t width;   /* code points ('U') or bytes ('S') per element */
  bool fortran_order;
  int rank;
  int64_t dims[GRAPH_MAX_RANK];
  bool have_descr, have_fortran, have_shape;
} npys_header;

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* ---- preamble and header ---- */

/* Magic and version; false when the bytes are not a .npy preamble (the numeric reader
 * then reports it in its own words). */
static bool parse_preamble(const unsigned char *p, size_t avail, size_t *header_start, size_t *header_len) {
  if (avail < 10 || memcmp(p, npys_magic, sizeof npys_magic) != 0) return false;
  int major = p[6];
  if (major == 1) {
    *header_start = 10;
    *header_len = (size_t)p[8] | (size_t)p[9] << 8;
    return true;
  }
  if ((major == 2 || major == 3) && avail >= 12) {
    *header_start = 12;
    *header_len = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
    return true;
  }
  return false;
}

typedef struct hparser {
  const char *p, *end;
} hparser;

static void skip_ws(hparser *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static bool eat(hparser *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted Python string into buf (truncated values never match anything). */
static bool quoted(hparser *h, char *buf, size_t cap) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  size_t n = 0;
  while (h->p < h->end && *h->p != q) {
    if (n + 1 < cap) buf[n++] = *h->p;
    h->p++;
  }
  buf[n] = 0;
  if (h->p >= h->end) return false;
  h->p++;
  return true;
}

static bool word(hparser *h, const char *w) {
  skip_ws(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0) return false;
  h->p += n;
  return true;
}

/* Skips one value we do not interpret (a structured descr's list). */
static bool skip_value(hparser *h) {
  int depth = 0;
  skip_ws(h);
  while (h->p < h->end) {
    char c = *h->p;
    if (c == '\'' || c == '"') {
      char tmp[2];
      if (!quoted(h, tmp, sizeof tmp)) return false;
      if (depth == 0) return true;
      continue;
    }
    if (c == '[' || c == '(' || c == '{') depth++;
    else if (c == ']' || c == ')' || c == '}') {
      if (depth == 0) return true;
      if (--depth == 0) {
        h->p++;
        return true;
      }
    } else if (c == ',' && depth == 0) {
      return true;
    }
    h->p++;
  }
  return false;
}

static void classify_descr(const char *d, npys_header *hd) {
  bool big = !host_is_little_endian(); /* '=' and '|' (and no mark): native order */
  if (*d == '<') big = false;
  else if (*d == '>') big = true;
  if (*d == '<' || *d == '>' || *d == '|' || *d == '=') d++;
  char k = *d++;
  if (k == 'O' && (*d == 0 || strcmp(d, "8") == 0)) {
    hd->kind = NPYS_OBJECT;
    return;
  }
  if (k != 'U' && k != 'S' && k != 'a') return;
  if (*d < '0' || *d > '9') return;
  int64_t w = 0;
  for (; *d >= '0' && *d <= '9'; d++) {
    if (w > (INT64_MAX - 9) / 10) return;
    w = w * 10 + (*d - '0');
  }
  if (*d) return;
  hd->kind = k == 'U' ? NPYS_UNICODE : NPYS_BYTES;
  hd->big_endian = big;
  hd->width = w;
}

static bool parse_shape_tuple(hparser *h, npys_header *hd) {
  if (!eat(h, '(')) return false;
  hd->rank = 0;
  for (;;) {
    skip_ws(h);
    if (eat(h, ')')) return true;
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return false;
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (*h->p++ - '0');
    }
    if (h->p < h->end && *h->p == 'L') h->p++; /* Python 2 longs */
    if (hd->rank == GRAPH_MAX_RANK) return false;
    hd->dims[hd->rank++] = v;
    if (!eat(h, ',')) {
      if (!eat(h, ')')) return false;
      return true;
    }
  }
}

/* False when the header is not one we understand; hd->kind says whether it at least
 * named a string descr. */
static bool parse_header(const char *text, size_t len, npys_header *hd) {
  hparser h = {text, text + len};
  memset(hd, 0, sizeof *hd);
  if (!eat(&h, '{')) return false;
  for (;;) {
    if (eat(&h, '}')) break;
    char key[32];
    if (!quoted(&h, key, sizeof key) || !eat(&h, ':')) return false;
    if (strcmp(key, "descr") == 0) {
      char d[64];
      skip_ws(&h);
      if (h.p < h.end && (*h.p == '\'' || *h.p == '"')) {
        if (!quoted(&h, d, sizeof d)) return false;
        classify_descr(d, hd);
      } else if (!skip_value(&h)) {
        return false;
      }
      hd->have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (word(&h, "True")) hd->fortran_order = true;
      else if (word(&h, "False")) hd->fortran_order = false;
      else return false;
      hd->have_fortran = true;
    } else if (strcmp(key, "shape") == 0) {
      if (!parse_shape_tuple(&h, hd)) return false;
      hd->have_shape = true;
    } else {
      return false;
    }
    if (!eat(&h, ',')) {
      if (!eat(&h, '}')) return false;
      break;
    }
  }
  return hd->have_descr && hd->have_fortran && hd->have_shape;
}

/* The header's verdict: *is_strings false for numeric files (left to hlo/npy.c). */
static kiln_status check_header(const char *text, size_t len, const char *what, npys_header *hd, bool *is_strings) {
  bool ok = parse_header(text, len, hd);
  *is_strings = hd->kind != NPYS_OTHER;
  if (!*is_strings) return NULL;
  if (hd->kind == NPYS_OBJECT)
    return ERR_INVALID("%s holds a numpy object array (dtype object); reading one needs pickle, which kiln does not "
                       "run: save string arrays with dtype=str (np.save(path, np.asarray(values, dtype=str)))",
                       what);
  if (!ok) return ERR_INVALID("%s: bad .npy header for a string array (expected descr, fortran_order and shape)", what);
  if (hd->fortran_order && hd->rank > 1)
    return ERR_INVALID("%s: fortran_order=True (column-major) arrays are not supported; save "
                       "np.ascontiguousarray(x) instead",
                       what);
  return NULL;
}

/* ---- payload ---- */

static kiln_status element_bytes(const npys_header *hd, const char *what, int64_t *n, size_t *elem, size_t *total) {
  int64_t count = 1;
  for (int i = 0; i < hd->rank; i++) {
    if (hd->dims[i] && count > INT64_MAX / hd->dims[i])
      return status_error(KILN_RESOURCE_EXHAUSTED, "%s: the shape has more than 2^63 elements", what);
    count *= hd->dims[i];
  }
  int64_t per = hd->kind == NPYS_UNICODE ? 4 : 1;
  if (hd->width > INT64_MAX / per)
    return status_error(KILN_RESOURCE_EXHAUSTED, "%s: elements of %lld characters are too wide", what,
                        (long long)hd->width);
  int64_t eb = hd->width * per;
  if (eb && count > literal_max_bytes / eb)
    return status_error(KILN_RESOURCE_EXHAUSTED,
                        "%s: %lld strings of %lld bytes are over the %lld-byte limit for one value",
                        what, (long long)count, (long long)eb, (long long)literal_max_bytes);
  *n = count;
  *elem = (size_t)eb;
  *total = (size_t)(count * eb);
  return NULL;
}

static uint32_t load_u32(const unsigned char *p, bool big) {
  return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static kiln_status decode_payload(const npys_header *hd, const unsigned char *payload, size_t avail, const char *what,
                                  graph_tensor **out) {
  int64_t n;
  size_t elem, total;
  TRY(element_bytes(hd, what, &n, &elem, &total));
  if (avail < total)
    return ERR_INVALID("%s: the header promises %zu bytes of strings but the file holds %zu", what, total, avail);
  graph_tensor *t;
  TRY(tensor_create(GRAPH_DT_STRING, hd->rank, hd->dims, &t));
  char *buf = malloc(hd->kind == NPYS_UNICODE ? (size_t)hd->width * 4 + 1 : 1);
  if (!buf) abort();
  for (int64_t i = 0; i < n; i++) {
    const unsigned char *e = payload + (size_t)i * elem;
    if (hd->kind == NPYS_BYTES) {
      size_t len = (size_t)hd->width;
      while (len && e[len - 1] == 0) len--; /* numpy's padding */
      tensor_set_string(t, i, (const char *)e, len);
      continue;
    }
    int64_t chars = hd->width;
    while (chars && load_u32(e + (size_t)(chars - 1) * 4, hd->big_endian) == 0) chars--;
    size_t len = 0;
    for (int64_t k = 0; k < chars; k++) {
      uint32_t cp = load_u32(e + (size_t)k * 4, hd->big_endian);
      int w = utf8_encode(cp, buf + len);
      if (!w) {
        free(buf);
        tensor_free(t);
        return ERR_INVALID("%s: element %lld holds U+%04X at character %lld, which is not a Unicode scalar value",
                           what, (long long)i, (unsigned)cp, (long long)k);
      }
      len += (size_t)w;
    }
    tensor_set_string(t, i, buf, len);
  }
  free(buf);
  *out = t;
  return NULL;
}

kiln_status npy_strings_read_buffer(const void *data, size_t len, const char *what, graph_tensor **out) {
  *out = NULL;
  const unsigned char *p = data;
  size_t start, hlen;
  if (!parse_preamble(p, len, &start, &hlen) || hlen > len - start) return NULL; /* the numeric reader says why */
  npys_header hd;
  bool strings;
  TRY(check_header((const char *)p + start, hlen, what, &hd, &strings));
  if (!strings) return NULL;
  return decode_payload(&hd, p + start + hlen, len - start - hlen, what, out);
}

kiln_status npy_strings_read_file(const char *path, graph_tensor **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int err = errno;
    return status_error(err == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "%s: cannot open: %s", path, strerror(err));
  }
  unsigned char pre[12];
  size_t got = fread(pre, 1, sizeof pre, f);
  size_t start, hlen;
  if (!parse_preamble(pre, got, &start, &hlen) || hlen > NPYS_MAX_HEADER_BYTES) {
    fclose(f);
    return NULL;
  }
  char *header = malloc(hlen + 1);
  if (!header) abort();
  kiln_status s = NULL;
  if (fseek(f, (long)start, SEEK_SET) != 0 || fread(header, 1, hlen, f) != hlen) {
    free(header);
    fclose(f);
    return NULL; /* truncated: the numeric reader reports it */
  }
  npys_header hd;
  bool strings;
  s = check_header(header, hlen, path, &hd, &strings);
  free(header);
  if (s || !strings) {
    fclose(f);
    return s;
  }
  int64_t n;
  size_t elem, total;
  s = element_bytes(&hd, path, &n, &elem, &total);
  unsigned char *payload = NULL;
  size_t have = 0;
  if (!s) {
    payload = malloc(total ? total : 1);
    if (!payload) abort();
    have = fread(payload, 1, total, f);
    if (have < total && ferror(f)) s = status_error(KILN_IO_ERROR, "%s: read failed", path);
  }
  fclose(f);
  if (!s) s = decode_payload(&hd, payload, have, path, out);
  free(payload);
  return s;
}

/* ---- writing ---- */

typedef struct npys_sink {
  strbuf *buf;
  FILE *file;
  const char *path;
} npys_sink;

static kiln_status sink_write(npys_sink *k, const void *p, size_t n) {
  if (k->buf) {
    strbuf_appendn(k->buf, p, n);
    return NULL;
  }
  if (n && fwrite(p, 1, n, k->file) != n) return status_error(KILN_IO_ERROR, "%s: write failed", k->path);
  return NULL;
}

static kiln_status write_image(const graph_tensor *t, const char *what, npys_sink *k) {
  if (t->dtype != GRAPH_DT_STRING)
    return ERR_INVALID("%s: a %s tensor is not a string array", what, graph_dtype_name(t->dtype));
  /* Every element is checked (and measured) before a byte is written. */
  int64_t width = 1;
  for (int64_t i = 0; i < t->n; i++) {
    const graph_bytes *s = tensor_string(t, i);
    size_t pos = 0;
    int64_t chars = 0;
    uint32_t cp = 1;
    while (pos < s->len) {
      if (!utf8_decode(s->data, s->len, &pos, &cp))
        return ERR_INVALID("%s: element %lld is not valid UTF-8 (at byte %zu of %zu); .npy string outputs hold "
                           "Unicode text",
                           what, (long long)i, pos, s->len);
      chars++;
    }
    if (s->len && cp == 0)
      return ERR_INVALID("%s: element %lld ends with a NUL character, which numpy's fixed-width strings cannot hold",
                         what, (long long)i);
    if (chars > width) width = chars;
  }
  if (t->n && width > literal_max_bytes / 4 / t->n)
    return status_error(KILN_RESOURCE_EXHAUSTED,
                        "%s: %lld strings of up to %lld characters are over the %lld-byte limit",
                        what, (long long)t->n, (long long)width, (long long)literal_max_bytes);
  strbuf h;
  strbuf_init(&h);
  strbuf_printf(&h, "{'descr': '<U%lld', 'fortran_order': False, 'shape': (", (long long)width);
  for (int i = 0; i < t->rank; i++) strbuf_printf(&h, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  strbuf_append(&h, t->rank == 1 ? ",), }" : "), }");
  /* numpy's room for dims[0] to grow, then spaces up to a multiple of 64 (hlo/npy.c). */
  if (t->rank > 0) {
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%lld", (long long)t->dims[0]);
    for (int i = nd; i < 21; i++) strbuf_putc(&h, ' ');
  }
  size_t pre = h.len + 64 <= 65535 ? 10 : 12;
  while ((pre + h.len + 1) % 64) strbuf_putc(&h, ' ');
  strbuf_putc(&h, '\n');
  unsigned char preamble[12];
  memcpy(preamble, npys_magic, 6);
  preamble[6] = pre == 10 ? 1 : 2;
  preamble[7] = 0;
  size_t hl = h.len;
  for (int i = 0; i < 4; i++) preamble[8 + i] = (unsigned char)(hl >> (8 * i) & 0xff);
  kiln_status s = sink_write(k, preamble, pre);
  if (!s) s = sink_write(k, h.data, h.len);
  strbuf_free(&h);
  TRY(s);
  unsigned char *row = calloc((size_t)width, 4);
  if (!row) abort();
  for (int64_t i = 0; i < t->n && !s; i++) {
    const graph_bytes *e = tensor_string(t, i);
    memset(row, 0, (size_t)width * 4);
    size_t pos = 0;
    uint32_t cp;
    for (int64_t c = 0; pos < e->len && utf8_decode(e->data, e->len, &pos, &cp); c++)
      for (int b = 0; b < 4; b++) row[c * 4 + b] = (unsigned char)(cp >> (8 * b));
    s = sink_write(k, row, (size_t)width * 4);
  }
  free(row);
  return s;
}

kiln_status npy_strings_write_buffer(const graph_tensor *t, const char *what, strbuf *out) {
  npys_sink k = {out, NULL, NULL};
  return write_image(t, what, &k);
}

kiln_status npy_strings_write_file(const char *path, const graph_tensor *t, const char *what) {
  FILE *f = fopen(path, "wb");
  if (!f) return status_error(KILN_IO_ERROR, "%s: cannot create: %s", path, strerror(errno));
  npys_sink k = {NULL, f, path};
  kiln_status s = write_image(t, what, &k);
  if (fclose(f) != 0 && !s) s = status_error(KILN_IO_ERROR, "%s: write failed", path);
  if (s) remove(path);
  return s;
}
