/* Native sort and top-k for the cpu backend (see cpu_native.h).
 *
 * A sort orders every row along its sort dimension by a permutation of row positions,
 * then gathers each operand through that permutation. The comparator is compiled into
 * a small LLVM function, less(bases, stride, x, y), that reads positions x and y of
 * every operand straight from the input rows (bases: one row start per operand; the
 * element at position p of operand i sits p * stride elements further), so no values
 * are copied per comparison. Rows are sorted with exactly the evaluator's algorithm (a
 * stable bottom-up merge sort that skips merging runs already in order, src/eval/sort.c):
 * the sequence of comparator calls is then the same, so even comparators that are no
 * strict weak order (IEEE LT with NaNs) give the evaluator's result bit for bit.
 *
 * Most comparators are "key" comparators, compare(f(lhs_i), f(rhs_i)) with LT or GT
 * on one operand i, where f is any computation of that one parameter (JAX's float sort
 * maps NaNs to one NaN and -0 to +0 before a TOTALORDER LT). For those the order is a
 * strict weak order given by an integer key: the generated key functions compute f for
 * a whole row (once for the lhs side and once for the rhs side of the comparator; the
 * two must agree bit for bit, else the row takes the merge sort), the runtime maps the
 * values to unsigned integers whose order is the comparator's (total-order float bits,
 * signed ints with the sign flipped, complemented for descending), and a stable LSD
 * radix sort of (key, position) pairs gives the one stable order, identical to the
 * merge sort's. IEEE float keys join this path only for rows without NaN (-0 and +0 are
 * made one key, as LT treats them). Lexicographic comparators over several such keys
 * (JAX's num_keys > 1: or(lt1, and(eq1, lt2)) ...) are stable-sorted by the last key,
 * then by each earlier one. Rows along a non-minor dimension (elements `inner`
 * apart) are copied in tiles of adjacent rows into contiguous scratch, sorted there and
 * copied back, so that each cache line read serves the whole tile. Rows (or tiles) are
 * independent and split across the OpenMP pool when the work is large enough.
 *
 * Top-k (the k largest or smallest along the last dimension, ties lower index first,
 * floats in total order so +NaN is the largest) uses the same keys: a max-heap of the k
 * best (key, index) pairs when k is small against the row, a full radix sort otherwise. */
#include "backends/cpu/cpu_native.h"

/* Declared here rather than through <omp.h> (see cpu_codegen.c). */
int omp_get_max_threads(void);

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_elemental.h"

/* Below this many elements in all rows together a sort runs on the calling thread. */
#define SORT_PARALLEL_MIN_ELEMS 16384
/* Rows this short are sorted by insertion rather than radix passes. */
#define SORT_INSERTION_MAX 24
/* Most instructions a key function may have (it is cloned instruction by instruction). */
#define KEY_MAX_INSTRS 256

typedef int8_t (*sort_less_fn)(char *const *bases, int64_t stride, int64_t x, int64_t y);
typedef void (*sort_key_fn)(const char *src, int64_t stride, int64_t n, char *dst);

/* ------------------------------------------------------------------ keys -------- */

typedef enum key_kind { KEY_UNSIGNED, KEY_SIGNED, KEY_FLOAT_TOTAL, KEY_FLOAT_IEEE } key_kind;

typedef struct key_spec {
  hlo_type type; /* the compared values' type */
  key_kind kind;
  bool descending;
} key_spec;

/* Whether values of type t compared with compare type ct have an integer key. */
static bool key_kind_for(hlo_type t, hlo_compare_type ct, key_kind *out) {
  switch (t) {
    case HLO_F16:
    case HLO_BF16:
    case HLO_F32:
    case HLO_F64:
      if (ct == HLO_CMP_TOTALORDER) *out = KEY_FLOAT_TOTAL;
      else if (ct == HLO_CMP_DEFAULT || ct == HLO_CMP_FLOAT) *out = KEY_FLOAT_IEEE;
      else return false;
      return true;
    case HLO_S8:
    case HLO_S16:
    case HLO_S32:
    case HLO_S64:
      *out = KEY_SIGNED;
      return ct == HLO_CMP_DEFAULT || ct == HLO_CMP_SIGNED;
    case HLO_PRED:
    case HLO_U8:
    case HLO_U16:
    case HLO_U32:
    case HLO_U64:
      *out = KEY_UNSIGNED;
      return ct == HLO_CMP_DEFAULT || ct == HLO_CMP_UNSIGNED;
    default: return false;
  }
}

static uint64_t load_bits(const char *p, size_t size) {
  switch (size) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

/* Bits of a float's exponent field (all ones: inf or NaN). */
static uint64_t exponent_mask(hlo_type t) {
  switch (t) {
    case HLO_F16: return 0x7c00;
    case HLO_BF16: return 0x7f80;
    case HLO_F32: return 0x7f800000;
    default: return 0x7ff0000000000000ull;
  }
}

/* Bits of a type's keys: make_keys gives keys below 2^key_bits. */
static int key_bits(hlo_type t) { return (int)hlo_type_size(t) * 8; }

/* Fills out[0..n) with the keys of the n values at src, src + stride elements, ...:
 * unsigned integers below 2^key_bits ordered as the comparator orders the values. False
 * when a value has no place in a strict weak order (an IEEE NaN): the row must be merge
 * sorted. */
static bool make_keys(const key_spec *ks, const char *src, int64_t stride, int64_t n, uint64_t *out) {
  size_t size = hlo_type_size(ks->type);
  int64_t step = stride * (int64_t)size;
  uint64_t sign = (uint64_t)1 << (size * 8 - 1), mag = sign - 1, all = sign | mag;
  uint64_t flip = ks->descending ? all : 0;
  switch (ks->kind) {
    case KEY_UNSIGNED:
      if (ks->type == HLO_PRED) {
        for (int64_t j = 0; j < n; j++) out[j] = (uint64_t)(src[j * step] != 0) ^ flip;
      } else {
        for (int64_t j = 0; j < n; j++) out[j] = load_bits(src + j * step, size) ^ flip;
      }
      return true;
    case KEY_SIGNED:
      /* Flipping the sign bit turns two's complement order into unsigned order. */
      for (int64_t j = 0; j < n; j++) out[j] = load_bits(src + j * step, size) ^ sign ^ flip;
      return true;
    case KEY_FLOAT_TOTAL:
    case KEY_FLOAT_IEEE: {
      /* Total order on the bits: negatives (sign set) reversed below the positives. */
      uint64_t expo = exponent_mask(ks->type);
      if (ks->kind == KEY_FLOAT_TOTAL && size == 4 && stride == 1) {
        /* The common case (JAX's f32 sorts) in a loop the compiler vectorizes. */
        const uint32_t *w = (const uint32_t *)(const void *)src;
        uint32_t f32 = (uint32_t)flip;
        for (int64_t j = 0; j < n; j++) {
          uint32_t b = w[j];
          uint32_t m = (uint32_t)((int32_t)b >> 31) | 0x80000000u; /* negative: all ones */
          out[j] = (uint64_t)((b ^ m) ^ f32);
        }
        return true;
      }
      bool ieee = ks->kind == KEY_FLOAT_IEEE;
      for (int64_t j = 0; j < n; j++) {
        uint64_t b = load_bits(src + j * step, size);
        if (ieee) {
          if ((b & mag) > expo) return false; /* NaN */
          if ((b & mag) == 0) b = 0;          /* -0 == +0 */
        }
        out[j] = ((b & sign) ? (~b & all) : (b | sign)) ^ flip;
      }
      return true;
    }
  }
  return false;
}

/* Stable LSD radix sort of v[0..n) by its bytes [lo, hi), pos moving along; v2/p2 are
 * scratch of n entries. One pass per byte in which the values differ (small integer
 * keys and same-sign floats skip most), every histogram counted in one read beforehand;
 * each pass is a stable counting sort. */
static void radix_sort(uint64_t *v, int64_t *pos, uint64_t *v2, int64_t *p2, int64_t n, int lo, int hi) {
  uint64_t differ = 0;
  for (int64_t j = 1; j < n; j++) differ |= v[j] ^ v[0];
  int bytes[8], n_bytes = 0;
  for (int b = lo; b < hi; b++)
    if ((differ >> (8 * b)) & 0xff) bytes[n_bytes++] = b;
  if (!n_bytes) return;
  uint32_t count[8][256];
  memset(count, 0, (size_t)n_bytes * sizeof count[0]);
  for (int64_t j = 0; j < n; j++)
    for (int q = 0; q < n_bytes; q++) count[q][(v[j] >> (8 * bytes[q])) & 0xff]++;
  uint64_t *vs = v, *vd = v2;
  int64_t *ps = pos, *pd = p2;
  for (int q = 0; q < n_bytes; q++) {
    int shift = 8 * bytes[q];
    uint32_t at = 0, *c = count[q];
    for (int d = 0; d < 256; d++) {
      uint32_t k = c[d];
      c[d] = at;
      at += k;
    }
      for (int64_t j = 0; j < n; j++) {
      uint32_t to = c[(vs[j] >> shift) & 0xff]++;
      vd[to] = vs[j];
      pd[to] = ps[j];
    }
    int64_t *tp = ps;
    ps = pd;
    pd = tp;
    uint64_t *tv = vs;
    vs = vd;
    vd = tv;
  }
  if (vs != v) {
    memcpy(v, vs, (size_t)n * sizeof *v);
    memcpy(pos, ps, (size_t)n * sizeof *pos);
  }
}

/* radix_sort for words key << 32 | position with keys below 2^32: digits of 11 bits
 * (three passes instead of four) for long rows, of 8 bits for short ones (whose passes
 * would otherwise be dominated by the 2048-bucket prefix sums), all histograms counted
 * in one read, and a pass skipped when one bucket holds every word. */
static void radix_sort_packed(uint64_t *v, uint64_t *v2, int64_t n) {
  int digit = n >= 4096 ? 11 : 8, passes = (32 + digit - 1) / digit;
  uint32_t buckets = (uint32_t)1 << digit, mask = buckets - 1;
  uint32_t count[4][1 << 11];
  memset(count, 0, sizeof count);
  if (digit == 11) {
    for (int64_t j = 0; j < n; j++) {
      uint32_t k = (uint32_t)(v[j] >> 32);
      count[0][k & 2047]++;
      count[1][(k >> 11) & 2047]++;
      count[2][k >> 22]++;
    }
  } else {
    for (int64_t j = 0; j < n; j++) {
      uint32_t k = (uint32_t)(v[j] >> 32);
      count[0][k & 255]++;
      count[1][(k >> 8) & 255]++;
      count[2][(k >> 16) & 255]++;
      count[3][k >> 24]++;
    }
  }
  uint64_t *vs = v, *vd = v2;
  for (int q = 0; q < passes; q++) {
    int shift = 32 + q * digit;
    uint32_t *c = count[q];
    if (c[(vs[0] >> shift) & mask] == (uint32_t)n) continue;
    uint32_t at = 0;
    for (uint32_t d = 0; d < buckets; d++) {
      uint32_t k = c[d];
      c[d] = at;
      at += k;
    }
    for (int64_t j = 0; j < n; j++) vd[c[(vs[j] >> shift) & mask]++] = vs[j];
    uint64_t *tv = vs;
    vs = vd;
    vd = tv;
  }
  if (vs != v) memcpy(v, vs, (size_t)n * sizeof *v);
}

/* Orders pairs (key[j], pos[j]) stably by key[j] (below 2^bits); k2/p2 are scratch of
 * n entries. Keys of up to 32 bits travel with their index in one word, key << 32 | j:
 * those words are all distinct and their order is the stable order, so only the key
 * bytes are radix sorted and every pass moves 8 bytes per element instead of 16; pos
 * follows through the indices. Short rows take an insertion sort. */
static void sort_pairs(uint64_t *key, int64_t *pos, uint64_t *k2, int64_t *p2, int64_t n, int bits) {
  if (n <= SORT_INSERTION_MAX) {
    for (int64_t i = 1; i < n; i++) {
      uint64_t k = key[i];
      int64_t p = pos[i], j = i;
      for (; j > 0 && key[j - 1] > k; j--) {
        key[j] = key[j - 1];
        pos[j] = pos[j - 1];
      }
      key[j] = k;
      pos[j] = p;
    }
    return;
  }
  if (bits <= 32 && n <= ((int64_t)1 << 32)) {
    for (int64_t j = 0; j < n; j++) key[j] = key[j] << 32 | (uint64_t)j;
    radix_sort_packed(key, k2, n);
    for (int64_t j = 0; j < n; j++) {
      p2[j] = pos[key[j] & 0xffffffffu];
      key[j] >>= 32;
    }
    memcpy(pos, p2, (size_t)n * sizeof *pos);
    return;
  }
  radix_sort(key, pos, k2, p2, n, 0, bits / 8);
}

/* dst[k * stride] = src[perm[k] * stride] for elements of `size` bytes. */
static void gather_row(char *dst, const char *src, size_t size, int64_t stride, const int64_t *perm, int64_t n) {
  switch (size) {
    case 1:
      for (int64_t k = 0; k < n; k++) dst[k * stride] = src[perm[k] * stride];
      break;
    case 2:
      for (int64_t k = 0; k < n; k++) memcpy(dst + 2 * k * stride, src + 2 * perm[k] * stride, 2);
      break;
    case 4:
      for (int64_t k = 0; k < n; k++) memcpy(dst + 4 * k * stride, src + 4 * perm[k] * stride, 4);
      break;
    case 8:
      for (int64_t k = 0; k < n; k++) memcpy(dst + 8 * k * stride, src + 8 * perm[k] * stride, 8);
      break;
    default:
      for (int64_t k = 0; k < n; k++)
        memcpy(dst + (int64_t)size * k * stride, src + (int64_t)size * perm[k] * stride, size);
      break;
  }
}

/* Whether the scalar type can be a key (see key_kind_for). */
static bool key_type_ok(hlo_type t) {
  key_kind k;
  return key_kind_for(t, t == HLO_F16 || t == HLO_BF16 || t == HLO_F32 || t == HLO_F64 ? HLO_CMP_TOTALORDER
                                                                                      : HLO_CMP_DEFAULT,
                      &k);
}

/* ------------------------------------------------------------------ sort -------- */

/* Most keys of a lexicographic key comparator. */
#define SORT_MAX_KEYS 4

/* One key of a key comparator: operand `op` ordered by the values f(x) (of type ks.type);
 * identity when the compare reads the parameters themselves (no key functions). */
typedef struct sort_key {
  int op;
  key_spec ks;
  bool identity;
  char *names[2];
  sort_key_fn fns[2]; /* f on the lhs side, f on the rhs side */
} sort_key;

typedef struct sort_state {
  int n_ops;
  size_t *esize;             /* per operand */
  int64_t outer, len, inner; /* row element k of row (o, i) is at (o * len + k) * inner + i */
  int64_t tile;              /* rows sorted together when inner > 1 (see sort_tile) */
  char *less_name;
  sort_less_fn less;
  /* key comparators: n_keys keys, compared lexicographically (see sort_key) */
  bool keyed;
  int n_keys;
  sort_key keys[SORT_MAX_KEYS];
} sort_state;

/* Per-thread scratch for rows of len elements. */
typedef struct sort_scratch {
  int64_t *perm, *tmp;
  uint64_t *key, *key2, *raw;
  char *fa, *fb;
  char **bases, **dsts;
  char *tiles; /* tile rows: operand k's input tile, then its output tile (see sort_tile) */
} sort_scratch;

static void scratch_free(sort_scratch *s) {
  free(s->perm);
  free(s->tmp);
  free(s->key);
  free(s->key2);
  free(s->raw);
  free(s->fa);
  free(s->fb);
  free(s->bases);
  free(s->dsts);
  free(s->tiles);
  memset(s, 0, sizeof *s);
}

static bool scratch_alloc(const sort_state *st, sort_scratch *s) {
  memset(s, 0, sizeof *s);
  size_t n = (size_t)st->len + 1;
  s->perm = malloc(n * sizeof *s->perm);
  s->tmp = malloc(n * sizeof *s->tmp);
  s->bases = malloc((size_t)st->n_ops * sizeof *s->bases);
  s->dsts = malloc((size_t)st->n_ops * sizeof *s->dsts);
  bool ok = s->perm && s->tmp && s->bases && s->dsts;
  if (st->tile > 1) {
    size_t bytes = 0;
    for (int k = 0; k < st->n_ops; k++) bytes += 2 * (size_t)st->tile * (size_t)st->len * st->esize[k];
    s->tiles = malloc(bytes);
    ok = ok && s->tiles;
  }
  if (st->keyed) {
    s->key = malloc(n * sizeof *s->key);
    s->key2 = malloc(n * sizeof *s->key2);
    s->raw = malloc(n * sizeof *s->raw);
    s->fa = malloc(n * sizeof(uint64_t)); /* f values of any key type */
    s->fb = malloc(n * sizeof(uint64_t));
    ok = ok && s->key && s->key2 && s->raw && s->fa && s->fb;
  }
  if (!ok) scratch_free(s);
  return ok;
}

/* The evaluator's stable bottom-up merge sort of perm[0..len) (see src/eval/sort.c):
 * on an equal pair the left run's element goes first; runs already in order are copied. */
static void merge_sort(sort_less_fn less, char *const *bases, int64_t stride, int64_t *perm, int64_t *tmp,
                       int64_t len) {
  int64_t *src = perm, *dst = tmp;
  for (int64_t width = 1; width < len; width *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * width) {
      int64_t mid = lo + width < len ? lo + width : len;
      int64_t hi = mid + width < len ? mid + width : len;
      if (mid >= hi || !less(bases, stride, src[mid], src[mid - 1])) {
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *src);
        continue;
      }
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = less(bases, stride, src[j], src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    int64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != perm) memcpy(perm, src, (size_t)len * sizeof *perm);
}

/* Sorts the row whose operand k starts at s->bases[k] (elements `stride` apart) into
 * the rows starting at s->dsts[k] (same stride). */
static void sort_one(const sort_state *st, sort_scratch *s, int64_t stride) {
  int64_t len = st->len;
  for (int64_t k = 0; k < len; k++) s->perm[k] = k;
  bool sorted = st->keyed;
  /* Lexicographic keys: stable sorts by the last key first, then by each earlier one
   * (a stable sort keeps the order of the later keys among equal earlier keys). */
  for (int q = st->n_keys - 1; q >= 0 && sorted; q--) {
    const sort_key *kq = &st->keys[q];
    const char *src = s->bases[kq->op];
    int64_t key_stride = stride;
    if (!kq->identity) {
      kq->fns[0](src, stride, len, s->fa);
      kq->fns[1](src, stride, len, s->fb);
      if (memcmp(s->fa, s->fb, (size_t)len * hlo_type_size(kq->ks.type)) != 0) {
        sorted = false;
        break;
      }
      src = s->fa;
      key_stride = 1;
    }
    bool first = q == st->n_keys - 1; /* perm is still the identity */
    if (!make_keys(&kq->ks, src, key_stride, len, first ? s->key : s->raw)) {
      sorted = false;
      break;
    }
    if (!first)
      for (int64_t j = 0; j < len; j++) s->key[j] = s->raw[s->perm[j]];
    sort_pairs(s->key, s->perm, s->key2, s->tmp, len, key_bits(kq->ks.type));
  }
  if (!sorted) {
    for (int64_t k = 0; k < len; k++) s->perm[k] = k;
    merge_sort(st->less, s->bases, stride, s->perm, s->tmp, len);
  }
  for (int k = 0; k < st->n_ops; k++) gather_row(s->dsts[k], s->bases[k], st->esize[k], stride, s->perm, len);
}

/* Sorts row r (of outer * inner rows) of every operand into the outputs, in place in
 * the strided layout (tile 1). */
static void sort_row(const sort_state *st, sort_scratch *s, char *const *out, char *const *in, int64_t r) {
  int64_t o = r / st->inner, i = r % st->inner;
  int64_t first = o * st->len * st->inner + i; /* element index of the row's position 0 */
  for (int k = 0; k < st->n_ops; k++) {
    s->bases[k] = in[k] + first * (int64_t)st->esize[k];
    s->dsts[k] = out[k] + first * (int64_t)st->esize[k];
  }
  sort_one(st, s, st->inner);
}

/* Copies n rows of len elements of `size` bytes between the strided layout (row t's
 * element p at strided[p * inner + t]) and the packed one (at packed[t * len + p]). */
static void transpose_rows(char *packed, char *strided, size_t size, int64_t len, int64_t inner, int64_t n,
                           bool to_packed) {
  /* One loop per element size, so that every copy is a plain load and store. */
#define TRANSPOSE(S)                                                                   \
  for (int64_t p = 0; p < len; p++)                                                    \
    for (int64_t t = 0; t < n; t++) {                                                  \
      char *a = packed + (t * len + p) * (S), *b = strided + (p * inner + t) * (S); \
      if (to_packed) memcpy(a, b, S);                                                  \
      else memcpy(b, a, S);                                                            \
    }
  switch (size) {
    case 1: TRANSPOSE(1); break;
    case 2: TRANSPOSE(2); break;
    case 4: TRANSPOSE(4); break;
    default: TRANSPOSE(8); break;
  }
#undef TRANSPOSE
}

/* Sorts rows (o, i0) .. (o, i0 + n - 1) along a non-minor dimension. Their elements lie
 * `inner` apart, so each row read alone touches a cache line per element; read together,
 * every line read serves n rows. The rows are copied into contiguous tile rows, sorted
 * there, and copied back. */
static void sort_tile(const sort_state *st, sort_scratch *s, char *const *out, char *const *in, int64_t o, int64_t i0,
                      int64_t n) {
  int64_t len = st->len, first = o * len * st->inner + i0;
  char *tile = s->tiles;
  for (int k = 0; k < st->n_ops; k++) {
    size_t bytes = (size_t)(st->tile * len) * st->esize[k];
    transpose_rows(tile, in[k] + first * (int64_t)st->esize[k], st->esize[k], len, st->inner, n, true);
    tile += 2 * bytes;
  }
  for (int64_t t = 0; t < n; t++) {
    tile = s->tiles;
    for (int k = 0; k < st->n_ops; k++) {
      size_t bytes = (size_t)(st->tile * len) * st->esize[k];
      s->bases[k] = tile + (size_t)(t * len) * st->esize[k];
      s->dsts[k] = tile + bytes + (size_t)(t * len) * st->esize[k];
      tile += 2 * bytes;
    }
    sort_one(st, s, 1);
  }
  tile = s->tiles;
  for (int k = 0; k < st->n_ops; k++) {
    size_t bytes = (size_t)(st->tile * len) * st->esize[k];
    transpose_rows(tile + bytes, out[k] + first * (int64_t)st->esize[k], st->esize[k], len, st->inner, n, false);
    tile += 2 * bytes;
  }
}

/* Work unit u: one row (tile 1) or one tile of rows. */
static void sort_unit(const sort_state *st, sort_scratch *s, char *const *out, char *const *in, int64_t u) {
  if (st->tile <= 1) {
    sort_row(st, s, out, in, u);
    return;
  }
  int64_t blocks = (st->inner + st->tile - 1) / st->tile;
  int64_t o = u / blocks, i0 = (u % blocks) * st->tile;
  int64_t n = st->inner - i0 < st->tile ? st->inner - i0 : st->tile;
  sort_tile(st, s, out, in, o, i0, n);
}

static kiln_status sort_run(void *state, char *const *out, char *const *in) {
  const sort_state *st = state;
  int64_t rows = st->outer * st->inner;
  if (rows == 0) return NULL;
  if (st->len <= 1) {
    for (int k = 0; k < st->n_ops; k++) memcpy(out[k], in[k], (size_t)(rows * st->len) * st->esize[k]);
    return NULL;
  }
  int64_t units = st->tile > 1 ? st->outer * ((st->inner + st->tile - 1) / st->tile) : rows;
  int threads = omp_get_max_threads();
  if (threads <= 1 || units < 2 || rows * st->len < SORT_PARALLEL_MIN_ELEMS) {
    sort_scratch s;
    if (!scratch_alloc(st, &s))
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory sorting rows of %lld elements", (long long)st->len);
    for (int64_t u = 0; u < units; u++) sort_unit(st, &s, out, in, u);
    scratch_free(&s);
    return NULL;
  }
  int failed = 0;
  int64_t chunk = units / ((int64_t)threads * 8);
  if (chunk < 1) chunk = 1;
#pragma omp parallel
  {
    sort_scratch s;
    bool ok = scratch_alloc(st, &s);
#pragma omp for schedule(dynamic, chunk)
    for (int64_t u = 0; u < units; u++)
      if (ok) sort_unit(st, &s, out, in, u);
    if (!ok) {
#pragma omp atomic write
      failed = 1;
    }
    scratch_free(&s);
  }
  if (failed)
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory sorting rows of %lld elements", (long long)st->len);
  return NULL;
}

static void sort_destroy(void *state) {
  sort_state *st = state;
  if (!st) return;
  free(st->esize);
  free(st->less_name);
  for (int q = 0; q < SORT_MAX_KEYS; q++) {
    free(st->keys[q].names[0]);
    free(st->keys[q].names[1]);
  }
  free(st);
}

static bool sort_why_not(strbuf *why, const hlo_instr *ins, const char *reason) {
  if (why) strbuf_printf(why, "%s (sort): %s", ins->name, reason);
  return false;
}

static bool sort_supports(const hlo_instr *ins, strbuf *why) {
  if (ins->op != HLO_OP_SORT) return false;
  int n = ins->n_operands;
  if (n < 1) return sort_why_not(why, ins, "no operands");
  if (ins->n_called < 1 || !ins->called[0]) return sort_why_not(why, ins, "no comparator");
  bool tuple = shape_is_tuple(&ins->shape);
  if (tuple ? ins->shape.n_elems != n : (n != 1 || !shape_is_array(&ins->shape)))
    return sort_why_not(why, ins, "result shape does not match the operands");
  const hlo_shape *s0 = &ins->operands[0]->shape;
  for (int i = 0; i < n; i++) {
    const hlo_shape *si = &ins->operands[i]->shape;
    const hlo_shape *ri = tuple ? &ins->shape.elems[i] : &ins->shape;
    if (!shape_is_array(si) || !shape_same_dims(si, s0) || !shape_is_array(ri) || ri->type != si->type ||
        !shape_same_dims(ri, si))
      return sort_why_not(why, ins, "operands and results differ in dimensions or types");
    size_t size = hlo_type_size(si->type);
    if (size != 1 && size != 2 && size != 4 && size != 8) return sort_why_not(why, ins, "unsupported element size");
  }
  if (s0->rank > 0 && (ins->dimensions.n != 1 || ins->dimensions.v[0] < 0 || ins->dimensions.v[0] >= s0->rank))
    return sort_why_not(why, ins, "bad sort dimension");
  const hlo_computation *c = ins->called[0];
  if (c->n_params != 2 * n) return sort_why_not(why, ins, "comparator arity");
  for (int p = 0; p < 2 * n; p++) {
    const hlo_instr *param = c->params[p];
    if (!param || !shape_is_array(&param->shape) || param->shape.rank != 0 ||
        param->shape.type != ins->operands[p / 2]->shape.type)
      return sort_why_not(why, ins, "comparator parameters do not match the operands");
  }
  if (!shape_is_array(&c->root->shape) || c->root->shape.type != HLO_PRED || c->root->shape.rank != 0)
    return sort_why_not(why, ins, "comparator does not return a pred scalar");
  return cpu_elemental_supports_scalar(ins, c, 2 * n, 1, why);
}

/* --- key comparators --- */

/* The one parameter that x depends on (through operands), or -1 when none or several,
 * when the subgraph calls computations (it could not be cloned) or is too large. Each
 * instruction is visited once (seen[] holds those visited): a subgraph that reuses
 * values costs its size, not the number of its paths. */
static int64_t single_param(const hlo_instr *x, const hlo_instr **seen, int *n_seen) {
  for (int i = 0; i < *n_seen; i++)
    if (seen[i] == x) return -2;
  if (*n_seen == KEY_MAX_INSTRS || x->n_called > 0) return -1;
  seen[(*n_seen)++] = x;
  if (x->op == HLO_OP_PARAMETER) return x->parameter_number;
  int64_t p = -2; /* -2: none yet (or only through instructions already visited) */
  for (int k = 0; k < x->n_operands; k++) {
    int64_t q = single_param(x->operands[k], seen, n_seen);
    if (q == -2) continue;
    if (q < 0 || (p >= 0 && p != q)) return -1;
    p = q;
  }
  return p;
}

/* single_param of the subgraph rooted at x, on its own. */
static int64_t subgraph_param(const hlo_instr *x) {
  const hlo_instr **seen = malloc(KEY_MAX_INSTRS * sizeof *seen);
  if (!seen) return -1;
  int n = 0;
  int64_t p = single_param(x, seen, &n);
  free(seen);
  return p;
}

typedef struct clone_map {
  const hlo_instr *from[KEY_MAX_INSTRS];
  hlo_instr *to[KEY_MAX_INSTRS];
  int n;
} clone_map;

/* Copies x and what it depends on into c; its parameter becomes parameter 0. NULL when
 * the subgraph is too large. */
static hlo_instr *clone_into(hlo_computation *c, const hlo_instr *x, clone_map *m) {
  for (int i = 0; i < m->n; i++)
    if (m->from[i] == x) return m->to[i];
  hlo_instr *ops[8];
  hlo_instr **opv = x->n_operands <= 8 ? ops : malloc((size_t)x->n_operands * sizeof *opv);
  if (!opv) return NULL;
  for (int k = 0; k < x->n_operands; k++) {
    opv[k] = clone_into(c, x->operands[k], m);
    if (!opv[k]) {
      if (opv != ops) free(opv);
      return NULL;
    }
  }
  if (m->n == KEY_MAX_INSTRS) {
    if (opv != ops) free(opv);
    return NULL;
  }
  hlo_instr *y = hlo_instr_new(c, x->op, &x->shape, x->name);
  hlo_instr fresh = *y;
  /* Every attribute as in x (pointers into the original module, which outlives this
   * clone and keeps ownership); identity, shape and links are the clone's own. */
  *y = *x;
  y->id = fresh.id;
  y->name = fresh.name;
  y->shape = fresh.shape;
  y->parent = c;
  y->n_called = 0;
  y->called = NULL;
  y->user_data = NULL;
  if (y->op == HLO_OP_PARAMETER) y->parameter_number = 0;
  hlo_instr_set_operands(y, x->n_operands, opv);
  if (opv != ops) free(opv);
  m->from[m->n] = x;
  m->to[m->n++] = y;
  return y;
}

/* A module holding computation f: the comparator's subgraph x of one parameter, cloned
 * with that parameter as parameter 0 (the emitter binds arguments to a computation's
 * own parameters). NULL when it cannot be made or emitted: the sort then keeps the
 * merge sort alone. */
static hlo_module *key_module(const hlo_instr *sort, const hlo_instr *x) {
  hlo_module *tm = hlo_module_new("sort_key");
  hlo_computation *fc = hlo_computation_new(tm, "key");
  clone_map *map = calloc(1, sizeof *map);
  bool ok = map && (fc->root = clone_into(fc, x, map)) != NULL;
  free(map);
  if (ok) {
    kiln_status st = hlo_computation_index_params(fc);
    ok = !st && cpu_elemental_supports_scalar(sort, fc, 1, 1, NULL);
    kiln_status_free(st);
  }
  if (!ok) {
    hlo_module_free(tm);
    return NULL;
  }
  return tm;
}

/* Emits void NAME(const char *src, int64 stride, int64 n, char *dst): dst[j] = f(src[j *
 * stride]) for f the key computation of tm (its parameter of type in_t). */
static void emit_key_fn(cpu_jit_module *jm, hlo_module *tm, hlo_type in_t, const char *name) {
  hlo_computation *fc = tm->comps[0];
  LLVMContextRef c = jm->ctx;
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef params[4] = {i8p, i64, i64, i8p};
  LLVMValueRef fn = LLVMAddFunction(jm->module, name, LLVMFunctionType(LLVMVoidTypeInContext(c), params, 4, 0));
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  cpu_emitter *e = cpu_emitter_new_scalar(jm->module, fn, b);
  LLVMTypeRef it = cpu_llvm_type(c, in_t), ot = cpu_llvm_type(c, fc->root->shape.type);
  LLVMValueRef src = LLVMBuildBitCast(b, LLVMGetParam(fn, 0), LLVMPointerType(it, 0), "src");
  LLVMValueRef dst = LLVMBuildBitCast(b, LLVMGetParam(fn, 3), LLVMPointerType(ot, 0), "dst");
  cpu_loop l;
  cpu_loop_begin(b, fn, &l, LLVMConstInt(i64, 0, 0), LLVMGetParam(fn, 2), "j");
  LLVMValueRef at = LLVMBuildMul(b, l.index, LLVMGetParam(fn, 1), "");
  LLVMValueRef arg = LLVMBuildLoad2(b, it, LLVMBuildInBoundsGEP2(b, it, src, &at, 1, ""), "x");
  LLVMValueRef v;
  cpu_emit_scalar_call(e, fc, &arg, &v);
  LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, ot, dst, &l.index, 1, ""));
  cpu_loop_end(b, &l);
  LLVMBuildRetVoid(b);
  cpu_emitter_free(e);
  LLVMDisposeBuilder(b);
}

/* Whether x is compare(f(lhs_i), f(rhs_i)) with a strict direction on one operand's
 * pair (see the header); fills k and the two sides. */
static bool key_compare(const hlo_instr *x, sort_key *k, const hlo_instr **sides) {
  if (x->op != HLO_OP_COMPARE || x->n_operands != 2 || x->shape.rank != 0) return false;
  if (x->direction != HLO_DIR_LT && x->direction != HLO_DIR_GT) return false;
  const hlo_instr *a = x->operands[0], *b = x->operands[1];
  hlo_type t = a->shape.type;
  if (b->shape.type != t || a->shape.rank != 0 || b->shape.rank != 0) return false;
  if (!key_kind_for(t, x->compare_type, &k->ks.kind)) return false;
  int64_t pa = subgraph_param(a), pb = subgraph_param(b);
  if (pa < 0 || pb < 0 || pa / 2 != pb / 2 || pa == pb) return false;
  k->ks.type = t;
  /* compare(f(rhs), f(lhs)) LT is "lhs after rhs": descending. */
  k->ks.descending = (x->direction == HLO_DIR_GT) != (pa % 2 == 1);
  k->op = (int)(pa / 2);
  k->identity = a->op == HLO_OP_PARAMETER && b->op == HLO_OP_PARAMETER;
  sides[0] = a;
  sides[1] = b;
  return true;
}

/* Whether e is compare(a, b) EQ on the values key compare c compares (either order). */
static bool equal_sides(const hlo_instr *e, const hlo_instr *c) {
  if (e->op != HLO_OP_COMPARE || e->n_operands != 2 || e->direction != HLO_DIR_EQ ||
      e->compare_type != c->compare_type)
    return false;
  const hlo_instr *a = c->operands[0], *b = c->operands[1];
  return (e->operands[0] == a && e->operands[1] == b) || (e->operands[0] == b && e->operands[1] == a);
}

/* The keys of a key comparator rooted at x, or 0: one key compare, or a lexicographic
 * chain or(key_compare, and(equal on its values, rest)) as JAX writes sorts with
 * num_keys > 1 (any operand order). Equality agrees with the key order for every kind
 * of key (TOTALORDER equality is bit equality; IEEE rows with NaN leave the key path). */
static int find_keys(const hlo_instr *x, sort_key *keys, const hlo_instr *(*sides)[2], int max) {
  if (max < 1) return 0;
  if (key_compare(x, &keys[0], sides[0])) return 1;
  if (max < 2 || x->op != HLO_OP_OR || x->n_operands != 2 || x->shape.type != HLO_PRED) return 0;
  for (int w = 0; w < 2; w++) {
    const hlo_instr *c = x->operands[w], *and = x->operands[1 - w];
    if (and->op != HLO_OP_AND || and->n_operands != 2 || and->shape.type != HLO_PRED) continue;
    for (int v = 0; v < 2; v++) {
      const hlo_instr *e = and->operands[v], *rest = and->operands[1 - v];
      if (!key_compare(c, &keys[0], sides[0]) || !equal_sides(e, c)) continue;
      int n = find_keys(rest, keys + 1, sides + 1, max - 1);
      if (n > 0) return n + 1;
    }
  }
  return 0;
}

static char *name_with(const char *prefix, const char *suffix) {
  size_t n = strlen(prefix) + strlen(suffix) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", prefix, suffix);
  return s;
}

static kiln_status emit_less_fn(cpu_jit_module *jm, const hlo_instr *ins, const char *name) {
  const hlo_computation *cmp = ins->called[0];
  int n = ins->n_operands;
  LLVMContextRef c = jm->ctx;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i8p = LLVMPointerType(i8, 0), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef params[4] = {LLVMPointerType(i8p, 0), i64, i64, i64};
  LLVMValueRef fn = LLVMAddFunction(jm->module, name, LLVMFunctionType(i8, params, 4, 0));
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  LLVMValueRef *args = calloc((size_t)(2 * n), sizeof *args);
  if (!args) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  cpu_emitter *e = cpu_emitter_new_scalar(jm->module, fn, b);
  LLVMValueRef stride = LLVMGetParam(fn, 1);
  LLVMValueRef pos[2] = {LLVMBuildMul(b, LLVMGetParam(fn, 2), stride, "x"),
                         LLVMBuildMul(b, LLVMGetParam(fn, 3), stride, "y")};
  /* Loads of operands the comparator ignores are dead code for the optimiser. */
  for (int k = 0; k < n; k++) {
    LLVMTypeRef t = cpu_llvm_type(c, ins->operands[k]->shape.type);
    LLVMValueRef ix = LLVMConstInt(i64, (unsigned long long)k, 0);
    LLVMValueRef base = LLVMBuildLoad2(b, i8p, LLVMBuildInBoundsGEP2(b, i8p, LLVMGetParam(fn, 0), &ix, 1, ""), "");
    LLVMValueRef typed = LLVMBuildBitCast(b, base, LLVMPointerType(t, 0), "");
    for (int side = 0; side < 2; side++)
      args[2 * k + side] = LLVMBuildLoad2(b, t, LLVMBuildInBoundsGEP2(b, t, typed, &pos[side], 1, ""), "");
  }
  LLVMValueRef r;
  cpu_emit_scalar_call(e, cmp, args, &r);
  LLVMValueRef bit = LLVMBuildICmp(b, LLVMIntNE, r, LLVMConstNull(LLVMTypeOf(r)), "");
  LLVMBuildRet(b, LLVMBuildZExt(b, bit, i8, ""));
  cpu_emitter_free(e);
  LLVMDisposeBuilder(b);
  free(args);
  return NULL;
}

static kiln_status sort_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                               bool *uses_jit) {
  *state = NULL;
  *uses_jit = false;
  if (!sort_supports(ins, NULL)) return ERR_UNIMPLEMENTED("sort: not supported natively");
  sort_state *st = calloc(1, sizeof *st);
  if (!st) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  st->n_ops = ins->n_operands;
  st->esize = calloc((size_t)st->n_ops, sizeof *st->esize);
  st->less_name = name_with(prefix, "less");
  if (!st->esize || !st->less_name) {
    sort_destroy(st);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int k = 0; k < st->n_ops; k++) st->esize[k] = hlo_type_size(ins->operands[k]->shape.type);
  const hlo_shape *s0 = &ins->operands[0]->shape;
  int dim = s0->rank > 0 ? (int)ins->dimensions.v[0] : 0;
  st->outer = st->inner = 1;
  st->len = s0->rank > 0 ? s0->dims[dim] : 1;
  for (int d = 0; d < s0->rank; d++) {
    if (d < dim) st->outer *= s0->dims[d];
    if (d > dim) st->inner *= s0->dims[d];
  }
  /* Tiles of up to 16 rows along a non-minor dimension, at most ~1 MiB of tile rows. */
  st->tile = 1;
  if (st->inner > 1) {
    int64_t row_bytes = 0;
    for (int k = 0; k < st->n_ops; k++) row_bytes += 2 * st->len * (int64_t)st->esize[k];
    st->tile = row_bytes > 0 ? ((int64_t)1 << 20) / row_bytes : 1;
    if (st->tile > 16) st->tile = 16;
    if (st->tile > st->inner) st->tile = st->inner;
    if (st->tile < 1) st->tile = 1;
  }
  kiln_status s = emit_less_fn(jm, ins, st->less_name);
  const hlo_instr *sides[SORT_MAX_KEYS][2];
  st->n_keys = s ? 0 : find_keys(ins->called[0]->root, st->keys, sides, SORT_MAX_KEYS);
  st->keyed = st->n_keys > 0;
  for (int q = 0; q < st->n_keys && st->keyed && !s; q++) {
    sort_key *kq = &st->keys[q];
    if (kq->identity) continue;
    char suffix[2][24];
    snprintf(suffix[0], sizeof suffix[0], "key%d_lhs", q);
    snprintf(suffix[1], sizeof suffix[1], "key%d_rhs", q);
    hlo_module *tm[2] = {key_module(ins, sides[q][0]), key_module(ins, sides[q][1])};
    kq->names[0] = name_with(prefix, suffix[0]);
    kq->names[1] = name_with(prefix, suffix[1]);
    if (!kq->names[0] || !kq->names[1]) s = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    st->keyed = tm[0] && tm[1];
    for (int k = 0; k < 2 && st->keyed && !s; k++)
      emit_key_fn(jm, tm[k], ins->operands[kq->op]->shape.type, kq->names[k]);
    hlo_module_free(tm[0]);
    hlo_module_free(tm[1]);
  }
  if (s) {
    sort_destroy(st);
    return s;
  }
  *uses_jit = true;
  *state = st;
  return NULL;
}

static kiln_status sort_link(void *state, cpu_jit *jit) {
  sort_state *st = state;
  void *p;
  TRY(cpu_jit_lookup(jit, st->less_name, &p));
  st->less = (sort_less_fn)p;
  for (int q = 0; q < st->n_keys && st->keyed; q++)
    for (int k = 0; k < 2 && !st->keys[q].identity; k++) {
      TRY(cpu_jit_lookup(jit, st->keys[q].names[k], &p));
      st->keys[q].fns[k] = (sort_key_fn)p;
    }
  return NULL;
}

const cpu_native_kind cpu_native_sort = {
    .name = "sort",
    .supports = sort_supports,
    .create = sort_create,
    .link = sort_link,
    .run = sort_run,
    .destroy = sort_destroy,
};

/* ------------------------------------------------------------------ topk -------- */

typedef struct topk_state {
  key_spec ks;
  size_t esize;
  int64_t rows, len, k;
} topk_state;

static bool topk_why_not(strbuf *why, const hlo_instr *ins, const char *reason) {
  if (why) strbuf_printf(why, "%s (topk): %s", ins->name, reason);
  return false;
}

static bool topk_supports(const hlo_instr *ins, strbuf *why) {
  if (ins->op != HLO_OP_TOPK) return false;
  if (ins->n_operands != 1 || !shape_is_array(&ins->operands[0]->shape))
    return topk_why_not(why, ins, "needs one array operand");
  const hlo_shape *x = &ins->operands[0]->shape;
  int rank = x->rank;
  if (rank < 1) return topk_why_not(why, ins, "operand of rank 0");
  if (!key_type_ok(x->type)) return topk_why_not(why, ins, "unsupported element type");
  int64_t len = x->dims[rank - 1];
  if (ins->k < 0 || ins->k > len || len > INT32_MAX) return topk_why_not(why, ins, "k out of range");
  if (!shape_is_tuple(&ins->shape) || ins->shape.n_elems != 2) return topk_why_not(why, ins, "result is not a pair");
  const hlo_shape *vs = &ins->shape.elems[0], *is = &ins->shape.elems[1];
  if (!shape_is_array(vs) || !shape_is_array(is) || vs->type != x->type || is->type != HLO_S32 ||
      vs->rank != rank || is->rank != rank)
    return topk_why_not(why, ins, "result types do not match");
  for (int d = 0; d < rank; d++) {
    int64_t want = d == rank - 1 ? ins->k : x->dims[d];
    if (vs->dims[d] != want || is->dims[d] != want) return topk_why_not(why, ins, "result dimensions do not match");
  }
  return true;
}

static kiln_status topk_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                               bool *uses_jit) {
  (void)jm;
  (void)prefix;
  *state = NULL;
  *uses_jit = false;
  if (!topk_supports(ins, NULL)) return ERR_UNIMPLEMENTED("topk: not supported natively");
  topk_state *st = calloc(1, sizeof *st);
  if (!st) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  const hlo_shape *x = &ins->operands[0]->shape;
  hlo_type t = x->type;
  bool is_float = t == HLO_F16 || t == HLO_BF16 || t == HLO_F32 || t == HLO_F64;
  key_kind_for(t, is_float ? HLO_CMP_TOTALORDER : HLO_CMP_DEFAULT, &st->ks.kind);
  st->ks.type = t;
  st->ks.descending = ins->largest;
  st->esize = hlo_type_size(t);
  st->len = x->dims[x->rank - 1];
  st->k = ins->k;
  st->rows = st->len ? shape_elements(x) / st->len : 0;
  *state = st;
  return NULL;
}

typedef struct topk_pair {
  uint64_t key;
  int64_t pos;
} topk_pair;

static bool pair_after(topk_pair a, topk_pair b) { return a.key > b.key || (a.key == b.key && a.pos > b.pos); }

/* Restores the max-heap (by pair_after) below slot i of h[0..n). */
static void sift_down(topk_pair *h, int64_t n, int64_t i) {
  topk_pair x = h[i];
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && pair_after(h[c + 1], h[c])) c++;
    if (!pair_after(h[c], x)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = x;
}

typedef struct topk_scratch {
  uint64_t *key, *key2;
  int64_t *pos, *pos2;
  topk_pair *heap;
} topk_scratch;

static void topk_scratch_free(topk_scratch *s) {
  free(s->key);
  free(s->key2);
  free(s->pos);
  free(s->pos2);
  free(s->heap);
}

static bool topk_scratch_alloc(const topk_state *st, topk_scratch *s) {
  size_t n = (size_t)st->len + 1;
  s->key = malloc(n * sizeof *s->key);
  s->key2 = malloc(n * sizeof *s->key2);
  s->pos = malloc(n * sizeof *s->pos);
  s->pos2 = malloc(n * sizeof *s->pos2);
  s->heap = malloc(((size_t)st->k + 1) * sizeof *s->heap);
  if (s->key && s->key2 && s->pos && s->pos2 && s->heap) return true;
  topk_scratch_free(s);
  memset(s, 0, sizeof *s);
  return false;
}

static void topk_row(const topk_state *st, topk_scratch *s, char *values, int32_t *indices, const char *x,
                     int64_t r) {
  int64_t len = st->len, k = st->k;
  const char *row = x + r * len * (int64_t)st->esize;
  char *vout = values + r * k * (int64_t)st->esize;
  int32_t *iout = indices + r * k;
  make_keys(&st->ks, row, 1, len, s->key); /* total order: never fails */
  if (k * 8 >= len || len <= SORT_INSERTION_MAX) {
    for (int64_t j = 0; j < len; j++) s->pos[j] = j;
    sort_pairs(s->key, s->pos, s->key2, s->pos2, len, key_bits(st->ks.type));
  } else {
    /* The k best so far in a max-heap: the root is the worst of them. A later element
     * with an equal key comes after every heap entry (its index is larger): rejected. */
    topk_pair *h = s->heap;
    for (int64_t j = 0; j < k; j++) h[j] = (topk_pair){s->key[j], j};
    for (int64_t i = k / 2; i-- > 0;) sift_down(h, k, i);
    for (int64_t j = k; j < len; j++)
      if (s->key[j] < h[0].key) {
        h[0] = (topk_pair){s->key[j], j};
        sift_down(h, k, 0);
      }
    /* Heap sort: the worst goes last. */
    for (int64_t n = k; n > 1; n--) {
      topk_pair t = h[0];
      h[0] = h[n - 1];
      h[n - 1] = t;
      sift_down(h, n - 1, 0);
    }
    for (int64_t j = 0; j < k; j++) s->pos[j] = h[j].pos;
  }
  gather_row(vout, row, st->esize, 1, s->pos, k);
  for (int64_t j = 0; j < k; j++) iout[j] = (int32_t)s->pos[j];
}

static kiln_status topk_run(void *state, char *const *out, char *const *in) {
  const topk_state *st = state;
  if (st->rows == 0 || st->k == 0) return NULL;
  int threads = omp_get_max_threads();
  int32_t *indices = (int32_t *)(void *)out[1];
  if (threads <= 1 || st->rows < 2 || st->rows * st->len < SORT_PARALLEL_MIN_ELEMS) {
    topk_scratch s;
    if (!topk_scratch_alloc(st, &s)) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory in topk");
    for (int64_t r = 0; r < st->rows; r++) topk_row(st, &s, out[0], indices, in[0], r);
    topk_scratch_free(&s);
    return NULL;
  }
  int failed = 0;
  int64_t rows = st->rows, chunk = rows / ((int64_t)threads * 8);
  if (chunk < 1) chunk = 1;
#pragma omp parallel
  {
    topk_scratch s;
    bool ok = topk_scratch_alloc(st, &s);
#pragma omp for schedule(dynamic, chunk)
    for (int64_t r = 0; r < rows; r++)
      if (ok) topk_row(st, &s, out[0], indices, in[0], r);
    if (!ok) {
#pragma omp atomic write
      failed = 1;
    }
    if (ok) topk_scratch_free(&s);
  }
  if (failed) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory in topk");
  return NULL;
}

const cpu_native_kind cpu_native_topk = {
    .name = "topk",
    .supports = topk_supports,
    .create = topk_create,
    .link = NULL,
    .run = topk_run,
    .destroy = free,
};
