"""Type conversions of kiln's evaluator against numpy: convert between every ordered pair
of element types, bitcast-convert between same-width types and between different widths
(which adds or drops a minor dimension), and reduce-precision for several
(exponent_bits, mantissa_bits) settings; sweeps convert every f16, bf16, 8- and 16-bit
value and random f32 / f64 bit patterns to every type.

References follow XLA's definitions, transcribed where numpy differs or is undefined:
float -> int truncates toward zero and saturates at the integer range, NaN -> 0; int ->
int wraps (two's complement); anything -> pred is x != 0 (NaN -> true); int and float ->
float round once to nearest even from the exact source value (IEEE / StableHLO convert;
dedicated cases probe the double rounding an intermediate type would introduce);
bitcasts reinterpret the little-endian bytes, element k of a new minor dimension being
the k-th least significant chunk; reduce-precision is the bit-level algorithm of XLA's
evaluator (round the mantissa to nearest even with a rounding bias, then flush values
whose exponent falls outside the reduced range to +-0 / +-inf; NaN stays NaN, or
becomes +inf with 0 mantissa bits; f16/bf16 are reduced in f32).

Every comparison here is exact (bitwise for integers, value and zero sign for floats,
NaN for NaN; bit for bit for bitcast-convert): conversions are exactly rounded or
bit-exact by definition.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S  # noqa: E402

g = kt.Gen(777001)
suite = kt.Suite('kiln evaluator: convert, bitcast-convert, reduce-precision vs numpy')

SHAPES = [(), (5,), (3, 0), (2, 3, 2), (1, 2, 1, 3)]


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


# --------------------------------------------------------------------------------------
# convert

def edge_values(dst):
    """Values (as float64 / Python ints) around the interesting points of dst."""
    if dst == 'pred':
        return [0.0, -0.0, 0.5, -1.0, math.nan, math.inf]
    if kt.is_int(dst):
        lo, hi = kt.int_range(dst)
        return [lo - 1.0, lo - 0.5, float(lo), lo + 0.5, hi - 0.5, float(hi), hi + 1.0,
                hi + 0.75, 0.5, -0.5, 0.9, -0.9, 1.5, -1.5, 2.5, -2.5, -0.0,
                math.nan, -math.nan, math.inf, -math.inf, 1e30, -1e30, 3.0e9, -3.0e9]
    m = kt.MANT_BITS[dst]
    mx = kt.float_max(dst)
    ulp_top = 2.0 ** (math.floor(math.log2(mx)) - m)
    den = 2.0 ** (kt.MIN_EXP[dst] - m)
    return [mx, -mx, mx + ulp_top / 4, mx + ulp_top / 2, mx + ulp_top,
            den, den / 2, den * 0.75, den * 1.5, den * 2.5, -den / 2,
            2.0 ** kt.MIN_EXP[dst], 2.0 ** kt.MIN_EXP[dst] * (1 - 2.0 ** -(m + 1)),
            1 + 2.0 ** -(m + 1), 1 + 3 * 2.0 ** -(m + 1), 1 + 2.0 ** -(m + 2), -(1 + 2.0 ** -(m + 1)),
            math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0 / 3]


def convert_inputs(src, dst, shape):
    n = kt.nelems(shape)
    if src == 'pred':
        return g.array('pred', shape)
    if kt.is_float(src):
        x = g.array(src, shape)
        if kt.is_int(dst):
            lo, hi = kt.int_range(dst)
            vals = g.rng.uniform(lo * 1.2 - 3, hi * 1.2 + 3, n)
            x = kt.round_to(vals, src)
            mixed = np.where(g.rng.integers(0, 3, n) == 0, g.array(src, (n,)).astype(np.float64),
                             x.astype(np.float64))
            x = kt.round_to(mixed, src).reshape(shape)
        edges = kt.round_to(edge_values(dst), src)
        xf = x.reshape(-1)
        for i in range(min(n, len(edges))):
            xf[i] = edges[(i * 7 + n) % len(edges)] if n < len(edges) else edges[i]
        return x
    # integer source
    lo, hi = kt.int_range(src)
    x = g.array(src, shape)
    xf = x.reshape(-1)
    if kt.is_float(dst) and n >= 6:
        # Integers that sit exactly between two floats of dst (ties to even) and just
        # beside such midpoints.
        m = kt.MANT_BITS[dst]
        for k, v in enumerate([(1 << (m + 1)) + 1, (1 << (m + 1)) + 3, (1 << (m + 1)) - 1,
                               (1 << (m + 2)) + 2, -((1 << (m + 1)) + 1), 65519]):
            if lo <= v <= hi:
                xf[k] = v
    return x


def int_to_float(v, dst):
    """Integer -> float type dst, rounded once to nearest even from the exact integer.
    Returns a Python float exactly representable in dst (or +-inf on overflow)."""
    if v == 0:
        return 0.0
    sign = -1.0 if v < 0 else 1.0
    a = abs(v)
    keep = kt.MANT_BITS[dst] + 1
    n = a.bit_length()
    if n > keep:
        shift = n - keep
        q, r = divmod(a, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        a = q << shift
    f = float(a)            # exact: at most `keep` significant bits
    if f > kt.float_max(dst):
        return sign * float('inf')
    return sign * f


def convert_ref(x, src, dst):
    if src == dst:
        return x.copy()
    if dst == 'pred':
        return np.asarray(x != 0)
    if src == 'pred':
        ints = x.astype(np.int64)
        return kt.round_to(ints.astype(np.float64), dst) if kt.is_float(dst) else ints.astype(kt.np_dtype(dst))
    if kt.is_int(src) and kt.is_int(dst):
        return kt.wrap_int(kt.to_pyint(x), dst)
    if kt.is_int(src):
        vals = [int_to_float(int(v), dst) for v in x.reshape(-1)]
        with np.errstate(over='ignore'):
            return np.array(vals, dtype=np.float64).astype(kt.np_dtype(dst)).reshape(x.shape)
    if kt.is_int(dst):
        lo, hi = kt.int_range(dst)
        out = []
        for v in x.reshape(-1):
            f = float(v)
            if math.isnan(f):
                out.append(0)
            elif f >= hi:
                out.append(hi)
            elif f <= lo:
                out.append(lo)
            else:
                out.append(int(math.trunc(f)))
        return kt.wrap_int(out, dst).reshape(x.shape)
    return kt.round_to(x.astype(np.float64), dst)


def add_convert():
    k = 0
    for src in kt.ALL_TYPES:
        for dst in kt.ALL_TYPES:
            for shape in [(37,), SHAPES[k % len(SHAPES)]]:
                k += 1
                c = kt.Case('convert/%s_to_%s/%s' % (src, dst, sname(shape)))
                x = convert_inputs(src, dst, shape)
                r = c.op('convert', S(dst, shape), [c.param(x, src)])
                c.out(r, convert_ref(x, src, dst))
                suite.add(c)


# --------------------------------------------------------------------------------------
# bitcast-convert

UNSIGNED_OF_WIDTH = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
BITCAST_TYPES = kt.INTS + kt.FLOATS


def raw_bits(x, t):
    if t == 'bf16':
        return (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return x.view(UNSIGNED_OF_WIDTH[kt.BITS[t]])


def from_bits(u, t):
    if t == 'bf16':
        return (u.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return u.view(kt.np_dtype(t))


def random_bits(t, shape):
    """Arbitrary bit patterns of type t; bf16 signalling NaNs are quietened because the
    kiln command narrows bf16 inputs from f32 (a NaN may legitimately be quietened)."""
    w = kt.BITS[t]
    u = kt.wrap_int(g.ints(0, (1 << w) - 1, shape), 'u%d' % w).astype(UNSIGNED_OF_WIDTH[w])
    if t == 'bf16':
        nan = ((u & 0x7f80) == 0x7f80) & ((u & 0x7f) != 0)
        u = np.where(nan, u | np.uint16(0x40), u).astype(np.uint16)
    if kt.is_float(t) and u.size >= 4:
        sp = kt.round_to([0.0, -0.0, math.inf, 1.0], t)
        uf = u.reshape(-1)
        for i in range(4):
            uf[i] = raw_bits(np.asarray(sp[i]).reshape(1), t)[0]
    return from_bits(u, t)


def add_bitcast():
    k = 0
    for src in BITCAST_TYPES:
        for dst in BITCAST_TYPES:
            ws, wd = kt.BITS[src], kt.BITS[dst]
            if ws == wd:
                shape = SHAPES[k % len(SHAPES)] if k % 2 else (29,)
            elif ws > wd:
                # Different widths: keep the matrix of pairs affordable.
                if (k % 3) and not (src in ('f32', 'bf16') or dst in ('f32', 'bf16')):
                    k += 1
                    continue
                shape = [(), (6,), (2, 3)][k % 3]
            else:
                if (k % 3) and not (src in ('f32', 'bf16') or dst in ('f32', 'bf16')):
                    k += 1
                    continue
                shape = [(ws and wd // ws,), (4, wd // ws), (2, 3, wd // ws)][k % 3]
            k += 1
            x = random_bits(src, shape)
            bits = raw_bits(x, src)
            if ws == wd:
                out_bits = bits.view(UNSIGNED_OF_WIDTH[wd])
            elif ws > wd:
                out_bits = bits.reshape(-1).view(UNSIGNED_OF_WIDTH[wd]).reshape(shape + (ws // wd,))
            else:
                out_bits = bits.copy().reshape(-1).view(UNSIGNED_OF_WIDTH[wd]).reshape(shape[:-1])
            exp = from_bits(out_bits.copy(), dst)
            c = kt.Case('bitcast-convert/%s_to_%s/%s' % (src, dst, sname(shape)))
            r = c.op('bitcast-convert', S(dst, exp.shape), [c.param(x, src)])
            c.out(r, exp, kt.BITWISE)
            suite.add(c)


# --------------------------------------------------------------------------------------
# reduce-precision

def reduce_precision_bits(v, nbits, src_e, src_m, e_bits, m_bits):
    allones = (1 << nbits) - 1
    if m_bits < src_m:
        last = 1 << (src_m - m_bits)
        base_bias = (last >> 1) - 1
        x_last = (v & last) >> (src_m - m_bits)
        v = ((v + x_last + base_bias) & allones) & ~(last - 1)
    if e_bits < src_e:
        sign = v & (1 << (nbits - 1))
        exp_mask = ((1 << src_e) - 1) << src_m
        bias = (1 << (src_e - 1)) - 1
        rbias = (1 << (e_bits - 1)) - 1
        xe = v & exp_mask
        if xe > (bias + rbias) << src_m:
            v = sign | exp_mask
        elif xe <= (bias - rbias) << src_m:
            v = sign
    return v


def reduce_precision_ref(x, t, e_bits, m_bits):
    wt = 'f32' if t in ('f16', 'bf16') else t
    work = x.astype(kt.np_dtype(wt))
    nbits = kt.BITS[wt]
    ut = UNSIGNED_OF_WIDTH[nbits]
    flat = work.reshape(-1)
    out = np.empty_like(flat)
    for i, f in enumerate(flat):
        if np.isnan(f):
            out[i] = f if m_bits > 0 else np.inf
            continue
        v = int(np.asarray(f).view(ut))
        v = reduce_precision_bits(v, nbits, kt.EXP_BITS[wt], kt.MANT_BITS[wt], e_bits, m_bits)
        out[i] = np.array([v], dtype=ut).view(kt.np_dtype(wt))[0]
    out = out.reshape(x.shape)
    if t == 'f16':
        return out.astype(np.float16)
    if t == 'bf16':
        return kt.bf16_round(out)
    return out


def rp_inputs(t, shape):
    x = g.array(t, shape, scale=3.0)
    xf = x.reshape(-1)
    n = xf.size
    # Wide range of magnitudes, including values at rounding midpoints of small formats.
    mags = g.rng.uniform(kt.MIN_EXP[t] - kt.MANT_BITS[t], -kt.MIN_EXP[t], n)
    signs = np.where(g.rng.integers(0, 2, n) == 1, -1.0, 1.0)
    wide = kt.round_to(signs * np.exp2(mags) * g.rng.uniform(1, 2, n), t)
    pick = g.rng.integers(0, 2, n) == 1
    xf[pick] = wide[pick]
    extras = [1 + 2.0 ** -4, 1 + 3 * 2.0 ** -4, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
              65504.0, 65520.0, 2.0 ** -14, 2.0 ** -15, 2.0 ** -24, 3.0 * 2 ** -25,
              -1.75, 2.0 ** 15, 2.0 ** 16 * 1.5]
    ex = kt.round_to(extras, t)
    for i in range(min(n, len(ex))):
        xf[(i * 5) % n] = ex[i]
    return x


def add_reduce_precision():
    settings = {
        'f32': [(8, 23), (8, 10), (5, 10), (8, 7), (4, 3), (5, 2), (2, 1), (3, 0), (1, 4),
                (11, 52), (8, 30), (6, 23)],
        'f64': [(11, 52), (8, 23), (5, 10), (8, 7), (11, 10), (4, 3), (2, 0), (15, 60), (11, 30)],
        # f16/bf16 are reduced in f32 (as XLA's evaluator does); the settings stay where
        # reducing in f32 and in the narrow format agree (fewer exponent bits than f16).
        'f16': [(4, 10), (4, 3), (3, 7), (2, 1), (4, 0), (3, 12)],
        'bf16': [(8, 7), (5, 10), (8, 3), (5, 2), (4, 0), (7, 5)],
    }
    k = 0
    for t, sets in settings.items():
        for e_bits, m_bits in sets:
            shape = [(64,), (4, 8), (3, 2, 5)][k % 3]
            k += 1
            c = kt.Case('reduce-precision/%s/e%d_m%d/%s' % (t, e_bits, m_bits, sname(shape)))
            x = rp_inputs(t, shape)
            if m_bits == 0:
                x[np.isnan(x)] = 0
            if m_bits > 0 and x.size >= 3:
                # With no mantissa bits a format has no NaN; XLA's implementations
                # disagree there (evaluator: +inf, CPU: NaN), so NaNs are only fed to
                # settings that can keep them.
                x.reshape(-1)[1] = kt.nan_of(t, negative=True)
                x.reshape(-1)[2] = kt.nan_of(t)
            r = c.op('reduce-precision', S(t, shape), [c.param(x, t)],
                     'exponent_bits=%d, mantissa_bits=%d' % (e_bits, m_bits))
            c.out(r, reduce_precision_ref(x, t, e_bits, m_bits))
            suite.add(c)
    # Zero-size and scalar operands.
    for t, shape, e_bits in (('f32', (), 5), ('f64', (0, 3), 5), ('f16', (), 4)):
        c = kt.Case('reduce-precision/%s/e%d_m10/%s' % (t, e_bits, sname(shape)))
        x = g.array(t, shape)
        r = c.op('reduce-precision', S(t, shape), [c.param(x, t)],
                 'exponent_bits=%d, mantissa_bits=10' % e_bits)
        c.out(r, reduce_precision_ref(x, t, e_bits, 10))
        suite.add(c)


# --------------------------------------------------------------------------------------
# Sweeps: every f16 / bf16 / 8-bit / 16-bit value, and random f32 / f64 bit patterns
# (all exponents, denormals, NaN payloads), converted to every type.

def sweep_source(t):
    if t in ('f16', 'bf16', 's16', 'u16'):
        bits = np.arange(1 << 16, dtype=np.uint32)
        if t == 'f16':
            return bits.astype(np.uint16).view(np.float16)
        if t == 'bf16':
            return (bits << np.uint32(16)).view(np.float32)
        return bits.astype(np.uint16).view(kt.np_dtype(t))
    if t in ('s8', 'u8'):
        return np.arange(256, dtype=np.uint16).astype(np.uint8).view(kt.np_dtype(t))
    if t == 'f32':
        bits = g.rng.integers(0, 1 << 32, size=1 << 14, dtype=np.uint64).astype(np.uint32)
        return bits.view(np.float32)
    if t == 'f64':
        bits = g.rng.integers(0, 1 << 63, size=1 << 14, dtype=np.uint64)
        sign = g.rng.integers(0, 2, size=1 << 14, dtype=np.uint64) << np.uint64(63)
        # Exponents concentrated where f32/f16/bf16/int conversions change behaviour.
        exps = g.rng.integers(1023 - 160, 1023 + 140, size=1 << 14, dtype=np.uint64)
        mixed = (bits & np.uint64((1 << 52) - 1)) | (exps << np.uint64(52)) | sign
        pick = g.rng.integers(0, 4, size=1 << 14) == 0
        return np.where(pick, bits | sign, mixed).astype(np.uint64).view(np.float64)
    lo, hi = kt.int_range(t)
    vals = kt.wrap_int(g.ints(lo, hi, (1 << 12,)), t)
    return vals


def add_convert_sweeps():
    for src in ('f16', 'bf16', 'f32', 'f64', 's8', 'u8', 's16', 'u16', 's32', 'u32', 's64', 'u64'):
        x = sweep_source(src)
        for dst in kt.ALL_TYPES:
            if dst == src:
                continue
            xs = x
            c = kt.Case('sweep/convert/%s_to_%s' % (src, dst))
            r = c.op('convert', S(dst, xs.shape), [c.param(xs, src)])
            c.out(r, convert_ref(xs, src, dst))
            suite.add(c)


def add_reduce_precision_sweeps():
    for t in ('f32', 'f64'):
        x = sweep_source(t)
        x = np.where(np.isnan(x), np.asarray(np.nan, dtype=x.dtype), x).astype(x.dtype)
        for e_bits, m_bits in [(5, 10), (8, 7), (4, 3), (11, 23) if t == 'f64' else (6, 12), (3, 1)]:
            c = kt.Case('sweep/reduce-precision/%s/e%d_m%d' % (t, e_bits, m_bits))
            r = c.op('reduce-precision', S(t, x.shape), [c.param(x, t)],
                     'exponent_bits=%d, mantissa_bits=%d' % (e_bits, m_bits))
            c.out(r, reduce_precision_ref(x, t, e_bits, m_bits))
            suite.add(c)
    for t, (e_bits, m_bits) in (('f16', (4, 5)), ('bf16', (5, 4)), ('f16', (3, 9)), ('bf16', (8, 2))):
        x = sweep_source(t)
        c = kt.Case('sweep/reduce-precision/%s/e%d_m%d' % (t, e_bits, m_bits))
        r = c.op('reduce-precision', S(t, x.shape), [c.param(x, t)],
                 'exponent_bits=%d, mantissa_bits=%d' % (e_bits, m_bits))
        c.out(r, reduce_precision_ref(x, t, e_bits, m_bits))
        suite.add(c)


# --------------------------------------------------------------------------------------
# Double rounding: values just beside a rounding midpoint of the destination whose
# rounding through an intermediate type (f64 -> f32 -> f16/bf16, s64 -> f64 -> f32,
# s32 -> f32 -> bf16) lands exactly on that midpoint and then rounds the wrong way.
# Converting rounds once (IEEE / StableHLO convert; XLA's CPU and GPU backends).

def add_double_rounding():
    def near_midpoints(dst, lead):
        # lead: the exponent of the leading bit; midpoint = 2**lead + half an ulp.
        m = kt.MANT_BITS[dst]
        ulp = 2 ** (lead - m)
        return [(2 ** lead + ulp // 2 + 1), (2 ** lead + ulp // 2 - 1), (2 ** lead + 3 * ulp // 2 + 1),
                -(2 ** lead + ulp // 2 + 1), 2 ** lead + ulp // 2]
    for src in ('s32', 'u32', 's64', 'u64'):
        lo, hi = kt.int_range(src)
        for dst in ('bf16', 'f32', 'f16'):
            vals = []
            for lead in (24, 28, 30, 40, 52, 60, 62):
                vals += [v for v in near_midpoints(dst, lead) if lo <= v <= hi]
            if dst == 'f16':
                vals = [2049, 2051, 4097, 65519, 65520, -65521, -2051]
                vals = [v for v in vals if lo <= v <= hi]
            x = kt.wrap_int(vals, src)
            c = kt.Case('convert/double_rounding/%s_to_%s' % (src, dst))
            c.out(c.op('convert', S(dst, x.shape), [c.param(x, src)]), convert_ref(x, src, dst))
            suite.add(c)
    for dst in ('f16', 'bf16'):
        m = kt.MANT_BITS[dst]
        vals = []
        for e in (0, 5, -3, kt.MIN_EXP[dst]):
            base = 2.0 ** e
            mid = base + base * 2.0 ** -(m + 1)
            vals += [mid + base * 2.0 ** -40, mid - base * 2.0 ** -40, -(mid + base * 2.0 ** -40), mid]
        den = 2.0 ** (kt.MIN_EXP[dst] - m)
        vals += [den / 2 + den * 2.0 ** -35, den / 2, 1.5 * den + den * 2.0 ** -35]
        x = np.array(vals, dtype=np.float64)
        c = kt.Case('convert/double_rounding/f64_to_%s' % dst)
        c.out(c.op('convert', S(dst, x.shape), [c.param(x, 'f64')]), convert_ref(x, 'f64', dst))
        suite.add(c)


add_convert()
add_double_rounding()
add_bitcast()
add_reduce_precision()
add_convert_sweeps()
add_reduce_precision_sweeps()

if __name__ == '__main__':
    sys.exit(suite.main())
