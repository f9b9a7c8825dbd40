"""The cpu code generator on the element-type corners JAX's HLO reaches, against numpy and
against kiln's interpreter bit for bit: reduce-precision (bf16-, f16-, e5m2- and
e4m3-like formats on f32 and f64 inputs, with NaN, infinities, denormals, ties and
overflow), bitcast-convert between element types of different widths in both directions
(f32 <-> u8[4], f64 <-> s32[2], f16 -> u8[2], s64 -> u16[4]) and between equal widths
(u16 <-> bf16, u8 -> pred made canonical), dots and convolutions whose operands differ
from the result type (bf16 x bf16 -> f32, f16 x f16 -> f32, s8 x s8 -> s32, s8 x s8 ->
s16 wrapping, s32 and s64 dots wrapping, u8 x s8 -> s32), and opt-barrier, which the cpu
pipeline removes.

Every pack runs on --device interpreter and --device cpu (kilntest's Suite devices): each
output must equal the numpy reference exactly, the cpu's must equal the interpreter's
bit for bit (NaN payloads included), and the cpu must compile every instruction (its
"through the evaluator" warning fails the pack). The references are independent
transcriptions of the semantics: reduce-precision is the bit recipe of XLA's evaluator
(round the mantissa to nearest even, then exponents past the reduced range go to inf and
those at or below its smallest normal exponent to a signed zero; NaN stays the input NaN,
or +inf with no mantissa bits; f16/bf16 are reduced in f32, as kiln's evaluator does);
bitcasts read little-endian bytes through numpy views; float dots use values whose
products and sums are exact even in float32, so the one rounding to the result type is
the whole error and any summation order or accumulator width gives the same bits (a
bf16 x bf16 -> f32 dot runs on oneDNN's bf16 matmul, f32 accumulators).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S  # noqa: E402

g = kt.Gen(424242)
suite = kt.Suite('kiln cpu code generator: reduce-precision, bitcast-convert, mixed-type dots vs numpy and '
                 'the interpreter', devices=('interpreter', 'cpu'))

UINT_OF_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


# --------------------------------------------------------------------------------------
# reduce-precision

def rp_ref(x, t, e_bits, m_bits):
    """reduce-precision of storage array x (type t) in numpy integer arithmetic."""
    wt = 'f32' if t in ('f16', 'bf16') else t
    w = np.asarray(x).astype(kt.np_dtype(wt))
    nbits, src_m, src_e = kt.BITS[wt], kt.MANT_BITS[wt], kt.EXP_BITS[wt]
    ut = UINT_OF_BITS[nbits]
    u = w.view(ut).copy()
    one = ut(1)
    if m_bits < src_m:
        sh = ut(src_m - m_bits)
        last = one << sh
        bias = (last >> one) - one + ((u >> sh) & one)
        u = (u + bias) & ~(last - one)   # wraps like the C unsigned add
    if e_bits < src_e:
        exp_mask = ut(((1 << src_e) - 1) << src_m)
        sign = u & ut(1 << (nbits - 1))
        src_bias, red_bias = (1 << (src_e - 1)) - 1, (1 << (e_bits - 1)) - 1
        e = u & exp_mask
        over = e > ut((src_bias + red_bias) << src_m)
        under = e <= ut((src_bias - red_bias) << src_m)
        u = np.where(over, sign | exp_mask, np.where(under, sign, u)).astype(ut)
    r = u.view(kt.np_dtype(wt))
    nan = np.isnan(w)
    r = np.where(nan, w if m_bits > 0 else np.asarray(np.inf, dtype=w.dtype), r).astype(w.dtype)
    if t == 'f16':
        return r.astype(np.float16)
    if t == 'bf16':
        return kt.bf16_round(r)
    return r


def from_bits(bits, t):
    return np.asarray(bits, dtype=UINT_OF_BITS[kt.BITS[t]]).view(kt.np_dtype(t))


def rp_inputs(t, n, lo_exp, hi_exp):
    """n values of type t: random magnitudes 2^[lo_exp, hi_exp] of both signs, then the
    corners every format meets (zeros, infinities, NaNs with sign and payload, the
    source type's denormals and extremes)."""
    mags = g.rng.uniform(lo_exp, hi_exp, n)
    signs = np.where(g.rng.integers(0, 2, n) == 1, -1.0, 1.0)
    x = kt.round_to(signs * np.exp2(mags) * g.rng.uniform(1, 2, n), t)
    corners = [0.0, -0.0, np.inf, -np.inf, kt.float_max(t), -kt.float_max(t),
               2.0 ** kt.MIN_EXP[t], 2.0 ** (kt.MIN_EXP[t] - kt.MANT_BITS[t]),
               -3 * 2.0 ** (kt.MIN_EXP[t] - kt.MANT_BITS[t])]
    c = kt.round_to(corners, t)
    x[:len(c)] = c
    return x


def with_nans(x, t):
    """x with NaNs of both signs and (where the type carries one) a payload."""
    x = x.copy()
    for i, v in enumerate(kt.payload_nans(t)):
        x[-1 - i] = v
    return x


def ties(t, m_bits):
    """Values exactly halfway between two neighbours at m_bits of mantissa, with even and
    odd lower neighbours, and one ulp (of t) to either side of such a midpoint."""
    half = 2.0 ** -(m_bits + 1)
    base = [1.0, 1.0 + 2.0 ** -m_bits, 1.5, -1.0 - 2.0 ** -m_bits]
    vals = []
    for b in base:
        mid = b + np.copysign(half, b)
        vals += [mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)]
    return kt.round_to(vals, t)


# (name, exponent_bits, mantissa_bits): the formats JAX and XLA reduce to.
RP_FORMATS = [('bf16', 8, 7), ('f16', 5, 10), ('e5m2', 5, 2), ('e4m3', 4, 3), ('e3m0', 3, 0)]


def add_reduce_precision():
    for t in ('f32', 'f64'):
        for fname, eb, mb in RP_FORMATS:
            red_bias = (1 << (eb - 1)) - 1
            # magnitudes from well under the reduced format's smallest normal to past its
            # largest finite value: both flushes and both overflows happen
            x = rp_inputs(t, 96, -red_bias - 6, red_bias + 4)
            x[20:32] = ties(t, mb) if mb > 0 else x[20:32]
            if mb > 0:
                x = with_nans(x, t)
                what = 'rounds_ties_to_even_flushes_denormals_overflows_to_inf_keeps_nan'
            else:
                x[-1] = kt.nan_of(t, negative=True)
                what = 'nan_becomes_inf_without_mantissa_bits'
            c = kt.Case('reduce_precision/%s_to_%s_format/%s' % (t, fname, what))
            r = c.op('reduce-precision', S(t, x.shape), [c.param(x, t)],
                     'exponent_bits=%d, mantissa_bits=%d' % (eb, mb))
            c.out(r, rp_ref(x, t, eb, mb), kt.BITWISE)
            suite.add(c)
    # no-ops: as many bits as the source format (or more) change nothing but NaN-free bits
    for t, eb, mb in (('f32', 8, 23), ('f64', 11, 52), ('f32', 11, 40)):
        x = with_nans(rp_inputs(t, 40, -140 if t == 'f32' else -1000, 100), t)
        c = kt.Case('reduce_precision/%s_e%d_m%d/is_identity_with_the_full_format' % (t, eb, mb))
        r = c.op('reduce-precision', S(t, x.shape), [c.param(x, t)], 'exponent_bits=%d, mantissa_bits=%d' % (eb, mb))
        c.out(r, rp_ref(x, t, eb, mb), kt.BITWISE)
        suite.add(c)
    # halves go through f32, reduced there and rounded back
    for t, eb, mb in (('bf16', 5, 2), ('f16', 4, 3), ('bf16', 8, 3)):
        x = rp_inputs(t, 48, -12, 12)
        c = kt.Case('reduce_precision/%s_e%d_m%d/reduces_halves_through_f32' % (t, eb, mb))
        r = c.op('reduce-precision', S(t, x.shape), [c.param(x, t)], 'exponent_bits=%d, mantissa_bits=%d' % (eb, mb))
        c.out(r, rp_ref(x, t, eb, mb), kt.BITWISE)
        suite.add(c)
    # inside a fusion with its neighbours: the cpu pipeline fuses multiply,
    # reduce-precision and add into one kernel (before, such a fusion was split and the
    # reduce-precision evaluated)
    x = rp_inputs('f32', 64, -10, 10)
    y = rp_inputs('f32', 64, -3, 3)
    x[np.isnan(x)], y[np.isnan(y)] = 1.0, 1.0
    c = kt.Case('reduce_precision/fused_between_multiply_and_add/compiles_and_matches')
    px, py = c.param(x, 'f32'), c.param(y, 'f32')
    m = c.op('multiply', S('f32', 64), [px, py])
    rp = c.op('reduce-precision', S('f32', 64), [m], 'exponent_bits=5, mantissa_bits=10')
    a = c.op('add', S('f32', 64), [rp, py])
    with np.errstate(all='ignore'):
        exp = (rp_ref((x * y).astype(np.float32), 'f32', 5, 10) + y).astype(np.float32)
    c.out(a, exp, kt.EXACT)
    suite.add(c)


# --------------------------------------------------------------------------------------
# bitcast-convert

def random_bits(t, shape):
    """Arbitrary bit patterns of type t (NaN payloads, denormals, everything)."""
    w = kt.BITS[t]
    u = g.rng.integers(0, 1 << w, size=shape, dtype=np.uint64) if w < 64 else \
        g.rng.integers(0, 1 << 63, size=shape, dtype=np.uint64) * np.uint64(2) + \
        g.rng.integers(0, 2, size=shape, dtype=np.uint64)
    return u.astype(UINT_OF_BITS[w]).view(kt.np_dtype(t))


def add_bitcast():
    # wide -> narrow: a new minor dimension, least significant piece first
    for src, dst, shape in (('f32', 'u8', (6,)), ('f64', 's32', (2, 3)), ('f16', 'u8', (5,)),
                            ('s64', 'u16', (3,)), ('f32', 'u8', ()), ('u32', 's16', (2, 2))):
        x = random_bits(src, shape)
        ratio = kt.BITS[src] // kt.BITS[dst]
        exp = np.ascontiguousarray(x).reshape(-1).view(kt.np_dtype(dst)).reshape(shape + (ratio,))
        c = kt.Case('bitcast_convert/%s_to_%s/%s/adds_a_minor_dim_little_endian' % (src, dst, 'x'.join(map(str, shape)) or 'scalar'))
        r = c.op('bitcast-convert', S(dst, exp.shape), [c.param(x, src)])
        c.out(r, exp, kt.BITWISE)
        suite.add(c)
    # narrow -> wide: the minor dimension of the width ratio goes
    for src, dst, shape in (('u8', 'f32', (6, 4)), ('s32', 'f64', (2, 3, 2)), ('u8', 'f16', (5, 2)),
                            ('u16', 's64', (3, 4)), ('u8', 'f32', (4,)), ('s16', 'u32', (2, 2))):
        x = random_bits(src, shape)
        exp = np.ascontiguousarray(x).reshape(-1).view(kt.np_dtype(dst)).reshape(shape[:-1])
        c = kt.Case('bitcast_convert/%s_to_%s/%s/drops_the_minor_dim_little_endian' % (src, dst, 'x'.join(map(str, shape))))
        r = c.op('bitcast-convert', S(dst, exp.shape), [c.param(x, src)])
        c.out(r, exp, kt.BITWISE)
        suite.add(c)
    # equal widths, bf16 both ways (bf16 travels as f32 in .npy: bits << 16)
    u = random_bits('u16', (16,))
    nan_bf16 = ((u & 0x7f80) == 0x7f80) & ((u & 0x7f) != 0)
    c = kt.Case('bitcast_convert/u16_to_bf16/reinterprets_the_bits')
    r = c.op('bitcast-convert', S('bf16', 16), [c.param(u, 'u16')])
    c.out(r, (u.astype(np.uint32) << np.uint32(16)).view(np.float32), kt.BITWISE)
    suite.add(c)
    # bf16 parameters are narrowed from f32 by the kiln command, which may quiet a
    # signalling NaN: those patterns stay out of the input
    ub = np.where(nan_bf16, u | np.uint16(0x40), u).astype(np.uint16)
    c = kt.Case('bitcast_convert/bf16_to_u16/reinterprets_the_bits')
    r = c.op('bitcast-convert', S('u16', 16), [c.param((ub.astype(np.uint32) << np.uint32(16)).view(np.float32), 'bf16')])
    c.out(r, ub, kt.BITWISE)
    suite.add(c)
    # to pred: any non-zero byte is true, stored canonically as 1
    b = np.array([0, 1, 2, 255, 128, 0, 7, 1], dtype=np.uint8)
    c = kt.Case('bitcast_convert/u8_to_pred/makes_pred_canonical')
    p = c.op('bitcast-convert', S('pred', 8), [c.param(b, 'u8')])
    # a select reads the pred: a non-canonical true must still pick the first operand
    ones, zeros = np.ones(8, np.int32), np.zeros(8, np.int32)
    sel = c.op('select', S('s32', 8), [p, c.constant(ones, 's32'), c.constant(zeros, 's32')])
    c.out(p, b != 0, kt.BITWISE)
    c.out(sel, (b != 0).astype(np.int32), kt.BITWISE)
    suite.add(c)
    s = np.array([0, 1, 256, 0x101, -1, 0x7f00], dtype=np.int16)
    c = kt.Case('bitcast_convert/s16_to_pred2/makes_each_byte_canonical')
    p = c.op('bitcast-convert', S('pred', 6, 2), [c.param(s, 's16')])
    c.out(p, s.view(np.uint8).reshape(6, 2) != 0, kt.BITWISE)
    suite.add(c)


# --------------------------------------------------------------------------------------
# dots and convolutions with mixed element types

def dot_attrs(lb, lc, rb, rc):
    a = []
    if lb:
        a.append('lhs_batch_dims=%s' % kt.ints_attr(lb))
    a.append('lhs_contracting_dims=%s' % kt.ints_attr(lc))
    if rb:
        a.append('rhs_batch_dims=%s' % kt.ints_attr(rb))
    a.append('rhs_contracting_dims=%s' % kt.ints_attr(rc))
    return ', '.join(a)


def exact_floats(t, shape):
    """Values of type t with 4 significant bits and exponents in [-2, 2]: products of two
    are multiples of 2^-11 below 2^6, so sums of up to 64 of them fit 23 bits and are
    exact even in float32 -- oneDNN's bf16 matmul (f32 accumulators, its own order) and
    the code generator (double) must then give the same bits."""
    n = int(np.prod(shape)) if shape else 1
    sig = g.rng.integers(8, 16, n) / 8.0
    exp = np.exp2(g.rng.integers(-2, 3, n))
    sign = np.where(g.rng.integers(0, 2, n) == 1, -1.0, 1.0)
    return kt.round_to((sig * exp * sign).reshape(shape), t)


def add_dot():
    # (name, lhs type, rhs type, result type, lhs shape, rhs shape, lb, lc, rb, rc, values)
    mm = ((4, 16), (16, 3), [], [1], [], [0])
    batched = ((2, 5, 3), (2, 3, 4), [0], [2], [0], [1])
    minor_both = ((3, 7), (5, 7), [], [1], [], [1])
    cases = [
        ('bf16_x_bf16_to_f32', 'bf16', 'bf16', 'f32', mm),
        ('bf16_x_bf16_to_f32_batched', 'bf16', 'bf16', 'f32', batched),
        ('bf16_x_bf16_to_f32_k64', 'bf16', 'bf16', 'f32', ((24, 64), (64, 40), [], [1], [], [0])),
        ('f16_x_f16_to_f32', 'f16', 'f16', 'f32', minor_both),
        ('bf16_x_f32_to_f32', 'bf16', 'f32', 'f32', mm),
        ('s8_x_s8_to_s32', 's8', 's8', 's32', mm),
        ('s8_x_s8_to_s16_wraps', 's8', 's8', 's16', mm),
        ('s32_x_s32_to_s32_wraps', 's32', 's32', 's32', batched),
        ('s64_x_s64_to_s64_wraps', 's64', 's64', 's64', minor_both),
        ('u8_x_s8_to_s32', 'u8', 's8', 's32', mm),
        ('u8_x_u8_to_u32', 'u8', 'u8', 'u32', minor_both),
        ('s16_x_s16_to_s32', 's16', 's16', 's32', batched),
        ('s8_x_s8_to_f32', 's8', 's8', 'f32', mm),
    ]
    for name, lt, rt, ot, (ls, rs, lb, lc, rb, rc) in cases:
        if kt.is_float(lt):
            a = exact_floats(lt, ls)
        else:
            a = g.array(lt, ls)
        b = exact_floats(rt, rs) if kt.is_float(rt) else g.array(rt, rs)
        spec = einsum_spec(len(ls), len(rs), lb, lc, rb, rc)
        if kt.is_float(ot):
            acc = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))  # exact: see exact_floats
            exp = kt.round_to(acc, ot)
        else:
            # the operands in the result type, products and sums wrapping in 64 bits,
            # then the low bits: wrapping arithmetic in the result type
            ca = a.astype(kt.np_dtype(ot)).astype(np.int64)
            cb = b.astype(kt.np_dtype(ot)).astype(np.int64)
            with np.errstate(all='ignore'):
                acc = np.einsum(spec, ca, cb)
            exp = acc.astype(kt.np_dtype(ot))
        c = kt.Case('dot/%s/matches_the_converted_operands_product' % name)
        r = c.op('dot', S(ot, exp.shape), [c.param(a, lt), c.param(b, rt)], dot_attrs(lb, lc, rb, rc))
        c.out(r, exp, kt.EXACT)
        suite.add(c)


def einsum_spec(lr, rr, lb, lc, rb, rc):
    letters = iter('abcdefghijklmnop')
    L = [None] * lr
    R = [None] * rr
    for x, y in zip(lb, rb):
        L[x] = R[y] = next(letters)
    for x, y in zip(lc, rc):
        L[x] = R[y] = next(letters)
    for i in range(lr):
        if L[i] is None:
            L[i] = next(letters)
    for i in range(rr):
        if R[i] is None:
            R[i] = next(letters)
    out = [L[x] for x in lb] + [L[i] for i in range(lr) if i not in lb and i not in lc] + \
          [R[i] for i in range(rr) if i not in rb and i not in rc]
    return '%s,%s->%s' % (''.join(L), ''.join(R), ''.join(out))


def conv1d_ref(x, w, cd):
    """x [b, w, f], kernel [k, i, o], VALID, stride 1 -> [b, w-k+1, o] in dtype cd."""
    b, n, _ = x.shape
    k, _, o = w.shape
    out = np.zeros((b, n - k + 1, o), dtype=cd)
    xc, wc = x.astype(cd), w.astype(cd)
    with np.errstate(all='ignore'):
        for p in range(n - k + 1):
            out[:, p, :] = np.einsum('bki,kio->bo', xc[:, p:p + k, :], wc)
    return out


def add_conv():
    for name, it, ot in (('bf16_x_bf16_to_f32', 'bf16', 'f32'), ('s8_x_s8_to_s32', 's8', 's32'),
                         ('s8_x_s8_to_s16_wraps', 's8', 's16')):
        xs, ws = (2, 9, 3), (3, 3, 4)
        if kt.is_float(it):
            x, w = exact_floats(it, xs), exact_floats(it, ws)
            exp = kt.round_to(conv1d_ref(x, w, np.float64), ot)
        else:
            x, w = g.array(it, xs), g.array(it, ws)
            exp = conv1d_ref(x, w, np.int64).astype(kt.np_dtype(ot))
        c = kt.Case('convolution/%s/matches_the_converted_operands_product' % name)
        r = c.op('convolution', S(ot, exp.shape), [c.param(x, it), c.param(w, it)],
                 'window={size=3}, dim_labels=b0f_0io->b0f')
        c.out(r, exp, kt.EXACT)
        suite.add(c)


# --------------------------------------------------------------------------------------
# opt-barrier

def add_opt_barrier():
    x = g.array('f32', (8,), special=False)
    y = g.array('s32', (8,))
    c = kt.Case('opt_barrier/values_pass_through_unchanged')
    px, py = c.param(x, 'f32'), c.param(y, 's32')
    tshape = kt.Shape.tuple([S('f32', 8), S('s32', 8)])
    t = c.op('tuple', tshape, [px, py])
    b = c.op('opt-barrier', tshape, [t])
    gx = c.op('get-tuple-element', S('f32', 8), [b], 'index=0')
    gy = c.op('get-tuple-element', S('s32', 8), [b], 'index=1')
    n = c.op('negate', S('f32', 8), [gx])
    c.out(n, -x, kt.BITWISE)
    c.out(gy, y, kt.BITWISE)
    suite.add(c)


add_reduce_precision()
add_bitcast()
add_dot()
add_conv()
add_opt_barrier()

if __name__ == '__main__':
    sys.exit(suite.main())
