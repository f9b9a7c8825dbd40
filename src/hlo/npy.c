/* .npy reading and writing (format and choices documented in npy.h).
 *
 * The reader is split so that files and in-memory buffers share every check: the
 * preamble (magic, version, header length), the header dict (a tiny parser for the
 * Python literal subset numpy writes, including Python 2's "3L" ints), and the size
 * checks that turn the header into an hlo_shape. Files are read in three steps —
 * preamble, header, payload straight into the literal — so nothing is allocated for the
 * payload until its size has been checked against both literal_max_bytes and the file's
 * real size. */
#include "hlo/npy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/half.h"

/* A header longer than this is rejected before it is read; numpy itself refuses headers
 * over 10000 bytes by default, so this only has to be generous, not exact. */
#define NPY_MAX_HEADER_BYTES (1u << 20)

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_header {
  hlo_type type;
  bool swap; /* payload byte order differs from the host's */
  bool fortran_order;
  int rank;
  int64_t dims[HLO_MAX_RANK];
  bool have_descr, have_fortran, have_shape;
} npy_header;

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static kiln_status npy_error(const char *what, const char *fmt, ...) KILN_PRINTF(2, 3);
static kiln_status npy_error(const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = status_verror(KILN_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return status_wrap(s, "%s", what);
}

/* ---- preamble ---- */

/* Checks the magic and version and returns where the header starts and its length. */
static kiln_status parse_preamble(const unsigned char *p, size_t avail, const char *what, size_t *header_start,
                                  size_t *header_len) {
  if (avail < 10)
    return npy_error(what, "not a .npy file: only %zu bytes, shorter than the 10-byte .npy preamble", avail);
  if (memcmp(p, npy_magic, sizeof npy_magic) != 0)
    return npy_error(what, "not a .npy file: bad magic (expected \\x93NUMPY)");
  int major = p[6], minor = p[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return npy_error(what, "unsupported .npy format version %d.%d (kiln reads 1.0, 2.0 and 3.0)", major, minor);
  if (major == 1) {
    *header_start = 10;
    *header_len = (size_t)p[8] | (size_t)p[9] << 8;
  } else {
    if (avail < 12) return npy_error(what, "truncated .npy preamble (%zu bytes; version %d.0 needs 12)", avail, major);
    *header_start = 12;
    *header_len = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
  }
  if (*header_len > NPY_MAX_HEADER_BYTES)
    return npy_error(what, "header length %zu is over kiln's %u-byte limit", *header_len, NPY_MAX_HEADER_BYTES);
  return NULL;
}

/* ---- header dict ---- */

typedef struct hdr_parser {
  const char *p, *start, *end;
  const char *what;
} hdr_parser;

static kiln_status hdr_error(hdr_parser *hp, const char *msg) {
  return npy_error(hp->what, "bad .npy header at offset %d: %s", (int)(hp->p - hp->start), msg);
}

static void hdr_skip_ws(hdr_parser *hp) {
  while (hp->p < hp->end && (*hp->p == ' ' || *hp->p == '\t' || *hp->p == '\n' || *hp->p == '\r')) hp->p++;
}

static bool hdr_eat(hdr_parser *hp, char c) {
  hdr_skip_ws(hp);
  if (hp->p < hp->end && *hp->p == c) {
    hp->p++;
    return true;
  }
  return false;
}

/* A quoted string, copied into buf (truncated to cap-1 bytes; callers only need short
 * keys and descrs, and a truncated value simply fails to match). */
static kiln_status hdr_string(hdr_parser *hp, char *buf, size_t cap) {
  hdr_skip_ws(hp);
  if (hp->p >= hp->end || (*hp->p != '\'' && *hp->p != '"')) return hdr_error(hp, "expected a quoted string");
  char q = *hp->p++;
  size_t n = 0;
  while (hp->p < hp->end && *hp->p != q) {
    if (*hp->p == '\\' && hp->p + 1 < hp->end) hp->p++;
    if (n + 1 < cap) buf[n++] = *hp->p;
    hp->p++;
  }
  if (hp->p >= hp->end) return hdr_error(hp, "unterminated string");
  hp->p++;
  buf[n] = 0;
  return NULL;
}

static bool hdr_word(hdr_parser *hp, const char *w) {
  hdr_skip_ws(hp);
  size_t n = strlen(w);
  if ((size_t)(hp->end - hp->p) >= n && memcmp(hp->p, w, n) == 0) {
    const char *after = hp->p + n;
    if (after < hp->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                            (*after >= '0' && *after <= '9') || *after == '_'))
      return false;
    hp->p = after;
    return true;
  }
  return false;
}

static kiln_status hdr_dim(hdr_parser *hp, int64_t *out) {
  hdr_skip_ws(hp);
  bool negative = false;
  if (hp->p < hp->end && *hp->p == '-') {
    negative = true;
    hp->p++;
  }
  if (hp->p >= hp->end || *hp->p < '0' || *hp->p > '9') return hdr_error(hp, "expected an integer dimension");
  int64_t v = 0;
  bool overflow = false;
  while (hp->p < hp->end && *hp->p >= '0' && *hp->p <= '9') {
    int d = *hp->p++ - '0';
    if (v > (INT64_MAX - d) / 10) overflow = true;
    else v = v * 10 + d;
  }
  if (hp->p < hp->end && (*hp->p == 'L' || *hp->p == 'l')) hp->p++; /* Python 2 long */
  if (negative) return npy_error(hp->what, "negative dimension in the .npy shape");
  if (overflow) return npy_error(hp->what, "dimension in the .npy shape does not fit in 64 bits");
  *out = v;
  return NULL;
}

static kiln_status hdr_shape(hdr_parser *hp, npy_header *h) {
  hdr_skip_ws(hp);
  char close;
  if (hdr_eat(hp, '('))
    close = ')';
  else if (hdr_eat(hp, '['))
    close = ']';
  else
    return hdr_error(hp, "'shape' must be a tuple like (2, 3)");
  h->rank = 0;
  if (hdr_eat(hp, close)) return NULL;
  for (;;) {
    int64_t d = 0;
    TRY(hdr_dim(hp, &d));
    if (h->rank == HLO_MAX_RANK) return npy_error(hp->what, "the .npy shape has more than %d dimensions", HLO_MAX_RANK);
    h->dims[h->rank++] = d;
    if (hdr_eat(hp, close)) return NULL;
    if (!hdr_eat(hp, ',')) return hdr_error(hp, "expected ',' or the end of the shape tuple");
    if (hdr_eat(hp, close)) return NULL;
  }
}

/* Maps a numpy type string ('<f4', '|b1', '?') to an element type. */
static kiln_status descr_to_type(const char *descr, const char *what, npy_header *h) {
  const char *d = descr;
  char order = '|';
  if (*d == '<' || *d == '>' || *d == '|' || *d == '=') order = *d++;
  hlo_type t;
  if (strcmp(d, "?") == 0 || strcmp(d, "b1") == 0) t = HLO_PRED;
  else if (strcmp(d, "i1") == 0 || strcmp(d, "b") == 0) t = HLO_S8;
  else if (strcmp(d, "i2") == 0) t = HLO_S16;
  else if (strcmp(d, "i4") == 0) t = HLO_S32;
  else if (strcmp(d, "i8") == 0) t = HLO_S64;
  else if (strcmp(d, "u1") == 0 || strcmp(d, "B") == 0) t = HLO_U8;
  else if (strcmp(d, "u2") == 0) t = HLO_U16;
  else if (strcmp(d, "u4") == 0) t = HLO_U32;
  else if (strcmp(d, "u8") == 0) t = HLO_U64;
  else if (strcmp(d, "f2") == 0 || strcmp(d, "e") == 0) t = HLO_F16;
  else if (strcmp(d, "f4") == 0) t = HLO_F32;
  else if (strcmp(d, "f8") == 0) t = HLO_F64;
  else if (strcmp(d, "V1") == 0) t = HLO_U8; /* raw bytes: an ml_dtypes array through np.save */
  else
    return npy_error(what,
                     "dtype '%s' is not supported (kiln reads bool, int8..int64, uint8..uint64, float16/32/64; "
                     "store bfloat16 as float32, float8/float4 as uint8 bit patterns, int4 as int8)",
                     descr);
  bool file_little = order == '<' || (order != '>' && host_is_little_endian());
  h->type = t;
  h->swap = hlo_type_size(t) > 1 && file_little != host_is_little_endian();
  return NULL;
}

static kiln_status parse_header_dict(const char *text, size_t len, const char *what, npy_header *h) {
  hdr_parser hp = {text, text, text + len, what};
  memset(h, 0, sizeof *h);
  if (!hdr_eat(&hp, '{')) return hdr_error(&hp, "expected '{' (the header is a Python dict)");
  while (!hdr_eat(&hp, '}')) {
    char key[32];
    TRY(hdr_string(&hp, key, sizeof key));
    if (!hdr_eat(&hp, ':')) return hdr_error(&hp, "expected ':' after a key");
    if (strcmp(key, "descr") == 0) {
      if (h->have_descr) return hdr_error(&hp, "duplicate key 'descr'");
      hdr_skip_ws(&hp);
      if (hp.p < hp.end && (*hp.p == '[' || *hp.p == '('))
        return npy_error(what, "structured dtypes (record arrays) are not supported");
      char descr[32];
      TRY(hdr_string(&hp, descr, sizeof descr));
      TRY(descr_to_type(descr, what, h));
      h->have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (h->have_fortran) return hdr_error(&hp, "duplicate key 'fortran_order'");
      if (hdr_word(&hp, "True")) h->fortran_order = true;
      else if (hdr_word(&hp, "False")) h->fortran_order = false;
      else return hdr_error(&hp, "'fortran_order' must be True or False");
      h->have_fortran = true;
    } else if (strcmp(key, "shape") == 0) {
      if (h->have_shape) return hdr_error(&hp, "duplicate key 'shape'");
      TRY(hdr_shape(&hp, h));
      h->have_shape = true;
    } else {
      return npy_error(what, "bad .npy header: unexpected key '%s' (expected descr, fortran_order, shape)", key);
    }
    if (hdr_eat(&hp, '}')) break;
    if (!hdr_eat(&hp, ',')) return hdr_error(&hp, "expected ',' or '}' in the header dict");
  }
  hdr_skip_ws(&hp);
  while (hp.p < hp.end && *hp.p == 0) hp.p++; /* some writers pad with NULs */
  if (hp.p != hp.end) return hdr_error(&hp, "unexpected text after the header dict");
  if (!h->have_descr) return npy_error(what, "bad .npy header: missing 'descr'");
  if (!h->have_fortran) return npy_error(what, "bad .npy header: missing 'fortran_order'");
  if (!h->have_shape) return npy_error(what, "bad .npy header: missing 'shape'");
  /* Rank <= 1 arrays are laid out identically in both orders, so only real
   * column-major data is refused. */
  if (h->fortran_order && h->rank > 1)
    return npy_error(what, "fortran_order=True (column-major) arrays are not supported; save "
                           "np.ascontiguousarray(a) instead");
  return NULL;
}

/* Shape and payload size, checked against literal_max_bytes before any allocation. */
static kiln_status header_shape(const npy_header *h, const char *what, hlo_shape *shape, size_t *bytes) {
  *shape = shape_make(h->type, h->rank, h->dims);
  int64_t b = shape_byte_size(shape);
  if (b < 0 || b > literal_max_bytes) {
    char *s = shape_to_string(shape);
    char need[32];
    if (b < 0) snprintf(need, sizeof need, "more than 2^63");
    else snprintf(need, sizeof need, "%lld", (long long)b);
    kiln_status st = status_error(KILN_RESOURCE_EXHAUSTED,
                                  "%s: shape %s needs %s bytes, over the %lld-byte limit for one tensor "
                                  "(--max_literal_bytes)", what, s, need, (long long)literal_max_bytes);
    free(s);
    return st;
  }
  *bytes = (size_t)b;
  return NULL;
}

static kiln_status size_mismatch(const char *what, const hlo_shape *shape, size_t need, size_t have) {
  char *s = shape_to_string(shape);
  kiln_status st;
  if (have < need)
    st = npy_error(what, "truncated .npy data: the header says %s (%zu bytes) but only %zu bytes follow the header",
                   s, need, have);
  else
    st = npy_error(what, "%zu unexpected bytes after the %zu bytes of %s data", have - need, need, s);
  free(s);
  return st;
}

/* Byte-swaps and normalises a payload already copied into the literal. */
static void fix_payload(hlo_literal *l, const npy_header *h) {
  size_t esz = hlo_type_size(l->shape.type);
  unsigned char *d = l->data;
  if (h->swap) {
    for (int64_t i = 0; i < l->n; i++) {
      unsigned char *e = d + (size_t)i * esz;
      for (size_t a = 0, b = esz - 1; a < b; a++, b--) {
        unsigned char t = e[a];
        e[a] = e[b];
        e[b] = t;
      }
    }
  }
  if (l->shape.type == HLO_PRED) /* numpy bools are 0/1, but a crafted file may hold 2..255 */
    for (int64_t i = 0; i < l->n; i++) d[i] = d[i] != 0;
}

kiln_status npy_read_buffer(const void *data, size_t len, const char *what, hlo_literal **out) {
  *out = NULL;
  if (!what) what = "<buffer>";
  const unsigned char *p = data;
  size_t hstart = 0, hlen = 0;
  TRY(parse_preamble(p, len, what, &hstart, &hlen));
  if (hlen > len - hstart)
    return npy_error(what, "truncated .npy header: it says %zu bytes but only %zu follow", hlen, len - hstart);
  npy_header h;
  TRY(parse_header_dict((const char *)p + hstart, hlen, what, &h));
  hlo_shape shape;
  size_t bytes;
  TRY(header_shape(&h, what, &shape, &bytes));
  size_t have = len - hstart - hlen;
  if (have != bytes) return size_mismatch(what, &shape, bytes, have);
  hlo_literal *l;
  TRY(status_wrap(literal_create(&shape, &l), "%s", what));
  if (bytes) memcpy(l->data, p + hstart + hlen, bytes);
  fix_payload(l, &h);
  *out = l;
  return NULL;
}

static kiln_status io_error(const char *path, const char *doing) {
  return status_error(errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "%s: %s: %s", path, doing, strerror(errno));
}

/* Reads exactly n bytes; a short read is a truncation error, not an I/O error. */
static kiln_status read_exact(FILE *f, void *buf, size_t n, const char *path, bool *short_read) {
  *short_read = false;
  size_t got = fread(buf, 1, n, f);
  if (got == n) return NULL;
  if (ferror(f)) return io_error(path, "read failed");
  *short_read = true;
  return NULL;
}

static kiln_status read_open_file(FILE *f, const char *path, hlo_literal **out) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0) return io_error(path, "cannot stat");
  if (S_ISDIR(st.st_mode)) return npy_error(path, "is a directory, not a .npy file");
  if (!S_ISREG(st.st_mode)) {
    /* A pipe or device: no size to check up front, so read it whole under a cap. */
    size_t cap = (size_t)(literal_max_bytes < 0 ? 0 : literal_max_bytes) + NPY_MAX_HEADER_BYTES + 16;
    strbuf b;
    strbuf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
      if (b.len + n > cap) {
        strbuf_free(&b);
        return status_error(KILN_RESOURCE_EXHAUSTED, "%s: stream is larger than any tensor kiln accepts", path);
      }
      strbuf_appendn(&b, chunk, n);
    }
    kiln_status s = ferror(f) ? io_error(path, "read failed") : npy_read_buffer(b.data ? b.data : "", b.len, path, out);
    strbuf_free(&b);
    return s;
  }
  size_t file_size = (size_t)st.st_size;
  unsigned char pre[12];
  size_t got = fread(pre, 1, file_size < 12 ? file_size : 12, f);
  if (ferror(f)) return io_error(path, "read failed");
  size_t hstart = 0, hlen = 0;
  TRY(parse_preamble(pre, got, path, &hstart, &hlen));
  if (hlen > file_size - hstart)
    return npy_error(path, "truncated .npy header: it says %zu bytes but the file has only %zu after the preamble",
                     hlen, file_size - hstart);
  char *header = malloc(hlen ? hlen : 1);
  if (!header) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  bool short_read;
  kiln_status s = NULL;
  if (fseek(f, (long)hstart, SEEK_SET) != 0) s = io_error(path, "seek failed");
  if (!s) s = read_exact(f, header, hlen, path, &short_read);
  if (!s && short_read) s = npy_error(path, "the file shrank while it was being read");
  npy_header h;
  if (!s) s = parse_header_dict(header, hlen, path, &h);
  free(header);
  TRY(s);
  hlo_shape shape;
  size_t bytes;
  TRY(header_shape(&h, path, &shape, &bytes));
  size_t have = file_size - hstart - hlen;
  if (have != bytes) return size_mismatch(path, &shape, bytes, have);
  hlo_literal *l;
  TRY(status_wrap(literal_create(&shape, &l), "%s", path));
  s = read_exact(f, l->data, bytes, path, &short_read);
  if (!s && short_read) s = npy_error(path, "the file shrank while it was being read");
  if (s) {
    literal_free(l);
    return s;
  }
  fix_payload(l, &h);
  *out = l;
  return NULL;
}

kiln_status npy_read_file(const char *path, hlo_literal **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return io_error(path, "cannot open");
  kiln_status s = read_open_file(f, path, out);
  fclose(f);
  return s;
}

/* ---- writing ---- */

const char *npy_descr_for_type(hlo_type t) {
  switch (t) {
    case HLO_PRED: return "|b1";
    case HLO_S8: return "|i1";
    case HLO_S16: return "<i2";
    case HLO_S32: return "<i4";
    case HLO_S64: return "<i8";
    case HLO_U8: return "|u1";
    case HLO_U16: return "<u2";
    case HLO_U32: return "<u4";
    case HLO_U64: return "<u8";
    case HLO_F16: return "<f2";
    case HLO_BF16: return "<f4";
    case HLO_F32: return "<f4";
    case HLO_F64: return "<f8";
    case HLO_S4: return "|i1";
    case HLO_S2: return "|i1";
    default: return hlo_type_is_narrow(t) ? "|u1" : NULL;
  }
}

/* Where the image goes: a strbuf or a FILE. */
typedef struct npy_sink {
  strbuf *buf;
  FILE *file;
  const char *path;
} npy_sink;

static kiln_status sink_write(npy_sink *k, const void *p, size_t n) {
  if (!n) return NULL;
  if (k->buf) {
    strbuf_appendn(k->buf, p, n);
    return NULL;
  }
  if (fwrite(p, 1, n, k->file) != n) return io_error(k->path, "write failed");
  return NULL;
}

static kiln_status write_image(const hlo_literal *lit, npy_sink *k) {
  const char *descr = npy_descr_for_type(lit->shape.type);
  if (!descr || (!lit->data && lit->n > 0))
    return ERR_INVALID("cannot write a %s value to .npy (only arrays)", hlo_type_name(lit->shape.type));
  char order_descr[8];
  snprintf(order_descr, sizeof order_descr, "%s", descr);
  if (order_descr[0] == '<' && !host_is_little_endian()) order_descr[0] = '>';

  strbuf h;
  strbuf_init(&h);
  strbuf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", order_descr);
  for (int i = 0; i < lit->shape.rank; i++) strbuf_printf(&h, "%s%lld", i ? ", " : "", (long long)lit->shape.dims[i]);
  strbuf_append(&h, lit->shape.rank == 1 ? ",), }" : "), }");
  /* numpy leaves room for dims[0] to grow to 21 digits (so appenders can rewrite the
   * header in place) and then pads with spaces so that preamble + header + '\n' is a
   * multiple of 64; doing the same makes kiln's files byte-identical to np.save's. */
  if (lit->shape.rank > 0) {
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%lld", (long long)lit->shape.dims[0]);
    for (int i = nd; i < 21; i++) strbuf_putc(&h, ' ');
  }
  size_t pre = h.len + 64 <= 65535 ? 10 : 12;
  while ((pre + h.len + 1) % 64) strbuf_putc(&h, ' ');
  strbuf_putc(&h, '\n');
  unsigned char preamble[12];
  memcpy(preamble, npy_magic, 6);
  preamble[6] = pre == 10 ? 1 : 2;
  preamble[7] = 0;
  size_t hl = h.len;
  preamble[8] = (unsigned char)(hl & 0xff);
  preamble[9] = (unsigned char)(hl >> 8 & 0xff);
  preamble[10] = (unsigned char)(hl >> 16 & 0xff);
  preamble[11] = (unsigned char)(hl >> 24 & 0xff);
  kiln_status s = sink_write(k, preamble, pre);
  if (!s) s = sink_write(k, h.data, h.len);
  strbuf_free(&h);
  TRY(s);

  if (lit->shape.type != HLO_BF16) return sink_write(k, lit->data, (size_t)lit->n * hlo_type_size(lit->shape.type));
  /* bf16 -> f32 in chunks: exact widening, no full-size temporary. */
  float chunk[1024];
  const uint16_t *src = lit->data;
  for (int64_t i = 0; i < lit->n;) {
    int64_t n = lit->n - i < 1024 ? lit->n - i : 1024;
    for (int64_t j = 0; j < n; j++) chunk[j] = bf16_to_f32(src[i + j]);
    TRY(sink_write(k, chunk, (size_t)n * sizeof(float)));
    i += n;
  }
  return NULL;
}

kiln_status npy_write_buffer(const hlo_literal *lit, strbuf *out) {
  npy_sink k = {out, NULL, NULL};
  return write_image(lit, &k);
}

kiln_status npy_write_file(const char *path, const hlo_literal *lit) {
  FILE *f = fopen(path, "wb");
  if (!f) return io_error(path, "cannot create");
  npy_sink k = {NULL, f, path};
  kiln_status s = write_image(lit, &k);
  if (fclose(f) != 0 && !s) s = io_error(path, "write failed");
  if (s) remove(path); /* never leave a half-written file that looks valid */
  return status_wrap(s, "writing %s", path);
}

kiln_status npy_convert_f32_to_bf16(const hlo_literal *f32, hlo_literal **out) {
  *out = NULL;
  if (f32->shape.type != HLO_F32) return ERR_INVALID("expected an f32 value to narrow to bf16");
  hlo_shape s = shape_make(HLO_BF16, f32->shape.rank, f32->shape.dims);
  hlo_literal *l;
  TRY(literal_create(&s, &l));
  const float *src = f32->data;
  uint16_t *dst = l->data;
  for (int64_t i = 0; i < l->n; i++) dst[i] = f32_to_bf16(src[i]);
  *out = l;
  return NULL;
}

kiln_status npy_convert_to_narrow(const hlo_literal *in, hlo_type t, hlo_literal **out) {
  *out = NULL;
  hlo_type from = in->shape.type;
  bool sint = t == HLO_S4 || t == HLO_S2;
  bool bits = from == HLO_U8, values = from == HLO_S8 && sint;
  int width = hlo_type_bit_width(t);
  if (!hlo_type_is_narrow(t) || !(bits || values))
    return ERR_INVALID("a .npy file of %s cannot hold %s values (%s travels as %s)", hlo_type_name(from), hlo_type_name(t),
                       hlo_type_name(t),
                       t == HLO_S4   ? "int8 values or uint8 4-bit patterns"
                       : t == HLO_S2 ? "int8 values or uint8 2-bit patterns"
                                     : "uint8 bytes");
  hlo_shape s = shape_make(t, in->shape.rank, in->shape.dims);
  hlo_literal *l;
  TRY(literal_create(&s, &l));
  const uint8_t *src = in->data;
  uint8_t *dst = l->data;
  unsigned limit = width < 8 ? (1u << width) - 1 : 255, half = (limit + 1) / 2;
  for (int64_t i = 0; i < l->n; i++) {
    int v = values ? (int8_t)src[i] : src[i];
    if (values ? v < -(int)half || v >= (int)half : (unsigned)v > limit) {
      literal_free(l);
      char what[48];
      if (values) snprintf(what, sizeof what, "an %s value (%d..%d)", hlo_type_name(t), -(int)half, (int)half - 1);
      else if (hlo_type_is_unsigned_int(t)) snprintf(what, sizeof what, "a %s value (0..%u)", hlo_type_name(t), limit);
      else snprintf(what, sizeof what, "a %d-bit pattern (0..%u)", width, limit);
      return ERR_INVALID("element %lld is %d, which is not %s", (long long)i, v, what);
    }
    /* An s4 / s2 pattern is sign-extended into kiln's byte (hlo/types.h). */
    dst[i] = sint && bits ? (uint8_t)(((unsigned)v ^ half) - half) : (uint8_t)v;
  }
  *out = l;
  return NULL;
}
