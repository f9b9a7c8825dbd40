"""kilntest: a small framework for checking kiln's reference evaluator against numpy.

Each test file (tests/hlo/test_eval_*.py) builds many *cases*. A case is a fragment of an
ENTRY computation -- parameters fed from numpy arrays, a few HLO instructions, and outputs
with expected values that the test computed with numpy (or with a numpy transcription of
XLA's documented semantics) at test time; nothing expected is typed in by hand. The
runner packs consecutive cases into one HLO module whose ROOT is a tuple of every case's
outputs, runs `kiln run MODULE.hlo -i p0=a.npy ... -o OUT --device interpreter` once per
pack, and compares each output with its case's tolerance. When a pack fails as a whole
(kiln exits non-zero, crashes or writes too few outputs), its cases are re-run one by one
so every failure is pinned on the case that caused it. Each failing case's standalone
module, inputs and expected outputs are kept on disk for reproduction.

Command line of every test file: --kiln PATH (required), -k SUBSTRING (run only cases
whose name contains it), --keep (keep all temporary files), -j N (parallel kiln runs),
--list (print case names), --device NAME (repeatable: run every pack on these devices
instead of the suite's own list, the interpreter unless the suite names others; see
Suite). Prints "N passed, N failed" and exits 1 if anything failed.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# References deliberately compute with infinities, NaNs (signalling ones included) and
# overflowing values; numpy's floating-point warnings would only be noise.
np.seterr(all='ignore')

# --------------------------------------------------------------------------------------
# Element types

# Storage dtype of each HLO element type in .npy files. bf16 travels as float32 (the
# kiln command narrows f32 inputs to bf16 with round-to-nearest-even and widens bf16
# outputs exactly), so bf16 test values are always f32 numbers exactly representable in
# bf16.
NP_DTYPE = {
    'pred': np.dtype(np.bool_),
    's8': np.dtype(np.int8), 's16': np.dtype(np.int16),
    's32': np.dtype(np.int32), 's64': np.dtype(np.int64),
    'u8': np.dtype(np.uint8), 'u16': np.dtype(np.uint16),
    'u32': np.dtype(np.uint32), 'u64': np.dtype(np.uint64),
    'f16': np.dtype(np.float16), 'bf16': np.dtype(np.float32),
    'f32': np.dtype(np.float32), 'f64': np.dtype(np.float64),
}
SINT = ['s8', 's16', 's32', 's64']
UINT = ['u8', 'u16', 'u32', 'u64']
INTS = SINT + UINT
FLOATS = ['f16', 'bf16', 'f32', 'f64']
ALL_TYPES = ['pred'] + INTS + FLOATS
BITS = {'pred': 8, 's8': 8, 's16': 16, 's32': 32, 's64': 64, 'u8': 8, 'u16': 16,
        'u32': 32, 'u64': 64, 'f16': 16, 'bf16': 16, 'f32': 32, 'f64': 64}
MANT_BITS = {'f16': 10, 'bf16': 7, 'f32': 23, 'f64': 52}
EXP_BITS = {'f16': 5, 'bf16': 8, 'f32': 8, 'f64': 11}
# Exponent of the smallest normal number.
MIN_EXP = {'f16': -14, 'bf16': -126, 'f32': -126, 'f64': -1022}
# Unit roundoff (half an ulp of 1.0).
UNIT_ROUNDOFF = {t: 2.0 ** -(MANT_BITS[t] + 1) for t in FLOATS}


def np_dtype(t):
    return NP_DTYPE[t]


def is_float(t):
    return t in FLOATS


def is_int(t):
    return t in INTS


def is_signed(t):
    return t in SINT


def int_range(t):
    b = BITS[t]
    if t in SINT:
        return -(1 << (b - 1)), (1 << (b - 1)) - 1
    return 0, (1 << b) - 1


def float_max(t):
    if t == 'bf16':
        return float(np.uint32(0x7f7f0000).view(np.float32))
    return float(np.finfo(np_dtype(t)).max)


def bf16_round(x):
    """Rounds float32 values to the nearest bfloat16 (ties to even), returned as float32.
    NaNs stay NaN (quieted, sign kept), overflow goes to infinity as IEEE rounding does."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    lsb = (u >> np.uint64(16)) & np.uint64(1)
    rounded = (u + np.uint64(0x7fff) + lsb) & np.uint64(0xffff0000)
    quiet = (u | np.uint64(0x00400000)) & np.uint64(0xffff0000)
    out = np.where(np.isnan(x), quiet, rounded).astype(np.uint32)
    return out.view(np.float32).reshape(x.shape)


def f64_to_f32_round_to_odd(x):
    """float64 -> float32 rounding to odd: an inexact result gets an odd last bit. Rounding
    that to any format with at least two fewer bits (bf16) then gives the correctly
    rounded result -- plain round-to-nearest twice would not."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all='ignore'):
        f = x.astype(np.float32)
        inexact = (f.astype(np.float64) != x) & ~np.isnan(x)
        even = (f.view(np.uint32) & np.uint32(1)) == 0
        # The odd neighbour lies between f and x (toward x); an overflow to inf is
        # pulled back to the largest finite value, which is odd.
        toward = np.nextafter(f, np.where(x > f, np.float32(np.inf), np.float32(-np.inf)))
        f = np.where(inexact & even, toward, f).astype(np.float32)
    return f


def round_to(x, t):
    """Rounds float64 values to float type t, correctly (one rounding of the float64
    value, ties to even); returns the storage array."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all='ignore'):
        if t == 'f64':
            return x.copy()
        if t == 'f32':
            return x.astype(np.float32)
        if t == 'f16':
            return x.astype(np.float16)   # numpy rounds float64 -> half directly
        if t == 'bf16':
            return bf16_round(f64_to_f32_round_to_odd(x))
    raise ValueError(t)


def wrap_int(values, t):
    """Python ints (any iterable / object array) -> array of int type t, wrapping modulo
    2**bits like a two's-complement C cast."""
    b = BITS[t]
    mask = (1 << b) - 1
    arr = np.asarray(values, dtype=object)
    flat = []
    for v in arr.reshape(-1):
        v = int(v) & mask
        if t in SINT and v >> (b - 1):
            v -= 1 << b
        flat.append(v)
    return np.array(flat, dtype=np_dtype(t)).reshape(arr.shape)


def to_pyint(a):
    """numpy integer/bool array -> object array of Python ints (exact arithmetic)."""
    a = np.asarray(a)
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        flat[i] = int(v)
    return out


def storage(values, t):
    """Values (numbers or arrays) -> the exact storage array of type t. Floats are rounded
    to t; ints must fit."""
    if is_float(t):
        return round_to(np.asarray(values, dtype=np.float64), t)
    return np.asarray(values).astype(np_dtype(t))


def float_bits_dtype(t):
    return {16: np.uint16, 32: np.uint32, 64: np.uint64}[BITS[t] if t != 'bf16' else 32]


def total_order_key(x, t):
    """Keys whose unsigned order is XLA's TOTALORDER on float type t:
    -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN."""
    x = np.asarray(x, dtype=np_dtype(t))
    udt = float_bits_dtype(t)
    u = x.view(udt).astype(np.uint64)
    nbits = 32 if t == 'bf16' else BITS[t]
    sign = np.uint64(1 << (nbits - 1))
    allones = np.uint64((1 << nbits) - 1)
    return np.where(u & sign, (~u) & allones, u | sign)


# --------------------------------------------------------------------------------------
# Random data

class Gen:
    """Deterministic random test data. Every test file makes one with a fixed seed; as
    cases are always all built (filtering happens afterwards), values never depend on -k.
    """

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def ints(self, lo, hi, size):
        """Uniform Python ints in [lo, hi] (inclusive) as an object array; any range, up
        to the full 64-bit ones."""
        size = tuple(size)
        n = int(np.prod(size)) if size else 1
        span = hi - lo + 1
        out = np.empty(n, dtype=object)
        words = self.rng.integers(0, 1 << 32, size=(n, 3), dtype=np.uint64)
        for i in range(n):
            r = (int(words[i, 0]) << 64) | (int(words[i, 1]) << 32) | int(words[i, 2])
            out[i] = lo + r % span
        return out.reshape(size)

    def array(self, t, shape, special=True, lo=None, hi=None, scale=None):
        """Random array of type t (storage dtype). Floats: normal-ish values of varied
        magnitude, with special values (+-0, +-inf, NaN, denormals, extremes) mixed in
        when `special`. Ints: full range (or [lo, hi]) with 0, +-1, min, max mixed in."""
        shape = tuple(shape)
        n = int(np.prod(shape)) if shape else 1
        if t == 'pred':
            return (self.rng.integers(0, 2, size=shape) == 1)
        if is_int(t):
            tlo, thi = int_range(t)
            lo = tlo if lo is None else max(lo, tlo)
            hi = thi if hi is None else min(hi, thi)
            vals = self.ints(lo, hi, (n,))
            if special and n >= 4:
                specials = [v for v in (0, 1, -1, tlo, thi, tlo + 1, thi - 1) if lo <= v <= hi]
                k = max(1, n // 5)
                pos = self.rng.choice(n, size=min(k, n), replace=False)
                for p in pos:
                    vals[p] = specials[int(self.rng.integers(0, len(specials)))]
            return wrap_int(vals, t).reshape(shape)
        # floats
        if scale is None:
            scale = 4.0
        mag = self.rng.standard_normal(n) * scale
        if lo is not None or hi is not None:
            a = -scale if lo is None else lo
            b = scale if hi is None else hi
            mag = self.rng.uniform(a, b, n)
        vals = mag.astype(np.float64)
        if special and n >= 4:
            sp = special_floats(t)
            k = max(1, n // 5)
            pos = self.rng.choice(n, size=min(k, n), replace=False)
            for p in pos:
                vals[p] = sp[int(self.rng.integers(0, len(sp)))]
        out = round_to(vals, t).reshape(shape)
        if special and n >= 12:
            flat = out.reshape(-1)
            for i, nan in enumerate(payload_nans(t)):
                flat[int(self.rng.integers(0, n))] = nan
        return out

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def perm(self, n):
        return [int(v) for v in self.rng.permutation(n)]

    def randint(self, lo, hi):
        """Inclusive."""
        return int(self.rng.integers(lo, hi + 1))


def special_floats(t):
    """Interesting float values of type t (as float64, exactly representable in t)."""
    mx = float_max(t)
    tiny = 2.0 ** MIN_EXP[t]
    denorm = 2.0 ** (MIN_EXP[t] - MANT_BITS[t])
    return [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, math.inf, -math.inf, math.nan,
            mx, -mx, tiny, -tiny, denorm, -3 * denorm, 1e-3, 100.0, -7.0]


def payload_nans(t):
    """Quiet NaNs of type t (storage scalars) with a sign and a non-zero payload; data
    movement must keep their bits. bf16 gets none with a payload: bf16 parameters are
    narrowed from f32 by the kiln command, and how a NaN payload survives that narrowing
    is the command's business, not the evaluator's."""
    if t == 'bf16':
        return [nan_of(t, negative=True)]
    return [nan_of(t, negative=True), nan_of(t, payload=5), nan_of(t, negative=True, payload=3)]


def nan_of(t, negative=False, payload=None):
    """A NaN of type t with a chosen sign (storage scalar)."""
    if t == 'f16':
        bits = 0x7e00 | (payload or 0)
        if negative:
            bits |= 0x8000
        return np.array([bits], dtype=np.uint16).view(np.float16)[0]
    if t in ('f32', 'bf16'):
        bits = 0x7fc00000 | ((payload or 0) << (16 if t == 'bf16' else 0))
        if negative:
            bits |= 0x80000000
        return np.array([bits], dtype=np.uint32).view(np.float32)[0]
    bits = 0x7ff8000000000000 | (payload or 0)
    if negative:
        bits |= 0x8000000000000000
    return np.array([bits], dtype=np.uint64).view(np.float64)[0]


# --------------------------------------------------------------------------------------
# Shapes and HLO values

def layout_str(rank):
    return '{' + ','.join(str(d) for d in reversed(range(rank))) + '}' if rank else ''


class Shape:
    """An array shape (type, dims, optional minor-to-major layout) or a tuple shape
    (elems). Without an explicit layout the default {rank-1,...,0} is printed."""

    def __init__(self, t=None, dims=(), elems=None, layout=None):
        self.t = t
        self.dims = tuple(int(d) for d in dims)
        self.elems = elems
        self.layout = tuple(layout) if layout is not None else None

    @staticmethod
    def tuple(elems):
        return Shape(elems=list(elems))

    def is_tuple(self):
        return self.elems is not None

    def text(self, layout=True):
        if self.is_tuple():
            return '(' + ', '.join(e.text(layout) for e in self.elems) + ')'
        s = '%s[%s]' % (self.t, ','.join(str(d) for d in self.dims))
        if not layout:
            return s
        if self.layout is not None and self.dims:
            return s + '{' + ','.join(str(d) for d in self.layout) + '}'
        return s + layout_str(len(self.dims))

    def __repr__(self):
        return self.text()


def S(t, *dims):
    """Shape shorthand: S('f32', 2, 3)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return Shape(t, dims)


class V:
    """An HLO value: an instruction of a computation being built."""

    def __init__(self, name, shape):
        self.name = name
        self.shape = shape

    @property
    def t(self):
        return self.shape.t

    @property
    def dims(self):
        return self.shape.dims

    def ref(self):
        return '%s %%%s' % (self.shape.text(), self.name)


def ints_attr(v):
    return '{' + ','.join(str(int(x)) for x in v) + '}'


def window_attr(size, stride=None, pad=None, lhs_dilate=None, rhs_dilate=None,
                reversal=None):
    """window={...} in XLA's spelling, defaults omitted as XLA prints them."""
    n = len(size)
    parts = []
    if n == 0:
        return 'window={}'
    parts.append('size=' + 'x'.join(str(s) for s in size))
    if stride is not None and any(s != 1 for s in stride):
        parts.append('stride=' + 'x'.join(str(s) for s in stride))
    if pad is not None and any(p != (0, 0) for p in pad):
        parts.append('pad=' + 'x'.join('%d_%d' % (lo, hi) for lo, hi in pad))
    if lhs_dilate is not None and any(d != 1 for d in lhs_dilate):
        parts.append('lhs_dilate=' + 'x'.join(str(d) for d in lhs_dilate))
    if rhs_dilate is not None and any(d != 1 for d in rhs_dilate):
        parts.append('rhs_dilate=' + 'x'.join(str(d) for d in rhs_dilate))
    if reversal is not None and any(reversal):
        parts.append('rhs_reversal=' + 'x'.join('1' if r else '0' for r in reversal))
    return 'window={%s}' % ' '.join(parts)


def padding_attr(lo, hi, interior):
    if any(interior):
        return 'padding=' + 'x'.join('%d_%d_%d' % t for t in zip(lo, hi, interior))
    return 'padding=' + 'x'.join('%d_%d' % t for t in zip(lo, hi))


def slice_attr(starts, limits, strides):
    parts = []
    for a, b, s in zip(starts, limits, strides):
        parts.append('[%d:%d]' % (a, b) if s == 1 else '[%d:%d:%d]' % (a, b, s))
    return 'slice={%s}' % ', '.join(parts)


def literal_text(values, t):
    """XLA constant literal text for a numpy array / scalar of type t."""
    a = np.asarray(values)

    def one(v):
        if t == 'pred':
            return 'true' if bool(v) else 'false'
        if is_int(t):
            return str(int(v))
        f = float(v)
        if math.isnan(f):
            # XLA's spelling: [-]nan, with "(0x<mantissa bits>)" unless the NaN is the
            # plain quiet one.
            if t == 'bf16':
                bits = int(np.asarray(v, dtype=np.float32).view(np.uint32)) >> 16
            else:
                bits = int(np.asarray(v, dtype=np_dtype(t)).view(float_bits_dtype(t)))
            nb = 16 if t == 'bf16' else BITS[t]
            mant = bits & ((1 << MANT_BITS[t]) - 1)
            text = ('-' if bits >> (nb - 1) else '') + 'nan'
            if mant != 1 << (MANT_BITS[t] - 1):
                text += '(0x%x)' % mant
            return text
        if math.isinf(f):
            return 'inf' if f > 0 else '-inf'
        return repr(f)

    def rec(x):
        if x.ndim == 0:
            return one(x[()])
        return '{' + ', '.join(rec(x[i]) for i in range(x.shape[0])) + '}'

    return rec(a)


class Builder:
    """Instructions of one computation. Parameter instructions get their final number
    (and, in the entry, their final name) when the module is assembled."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.instrs = []  # dicts: v, op, operands, attrs, param_local
        self.params = []
        self.count = 0

    def _name(self, hint):
        self.count += 1
        return '%s%s.%d' % (self.prefix, hint.replace('-', '_'), self.count)

    def param(self, shape, name=None):
        v = V(name or self._name('param'), shape)
        v.param_local = len(self.params)
        self.params.append(v)
        self.instrs.append({'v': v, 'op': 'parameter', 'operands': [], 'attrs': '',
                            'param': v.param_local})
        return v

    def op(self, opcode, shape, operands, attrs='', name=None):
        if isinstance(shape, str):
            raise TypeError('shape must be a Shape')
        v = V(name or self._name(opcode), shape)
        self.instrs.append({'v': v, 'op': opcode, 'operands': list(operands),
                            'attrs': attrs})
        return v

    def constant(self, values, t):
        a = np.asarray(values)
        return self.op('constant', Shape(t, a.shape), [], literal_text(a, t))

    def render(self, param_offset=0, root=None, indent='  '):
        lines = []
        for ins in self.instrs:
            v = ins['v']
            if ins['op'] == 'parameter':
                body = 'parameter(%d)' % (ins['param'] + param_offset)
            elif ins['op'] == 'constant':
                body = 'constant(%s)' % ins['attrs']
            else:
                body = '%s(%s)' % (ins['op'], ', '.join(o.ref() for o in ins['operands']))
                if ins['attrs']:
                    body += ', ' + ins['attrs']
            prefix = 'ROOT ' if v is root else ''
            lines.append('%s%s%%%s = %s %s' % (indent, prefix, v.name, v.shape.text(), body))
        return lines


class Computation:
    """A called computation (reducer, comparator, loop body...). Build it with `b`, then
    `finish(root)`. Its name must be unique in the module; helpers below give shared
    computations deterministic names so identical ones merge across cases."""

    def __init__(self, name):
        self.name = name
        self.b = Builder(name + '.')
        self.root = None
        self._text = None
        self.deps = []  # computations this one calls (printed before it)

    def use(self, comp):
        """Declares that this computation calls `comp`; returns comp."""
        if comp not in self.deps:
            self.deps.append(comp)
        return comp

    def param(self, shape):
        return self.b.param(shape)

    def op(self, *a, **k):
        return self.b.op(*a, **k)

    def constant(self, values, t):
        return self.b.constant(values, t)

    def finish(self, root):
        self.root = root
        return self

    def text(self):
        if self._text is None:
            ps = ', '.join('%s: %s' % (p.name, p.shape.text(False)) for p in self.b.params)
            head = '%%%s (%s) -> %s {' % (self.name, ps, self.root.shape.text(False))
            self._text = '\n'.join([head] + self.b.render(root=self.root) + ['}'])
        return self._text


# --------------------------------------------------------------------------------------
# Tolerances

class Tol:
    """How an output is compared with its expected value.

    kind 'exact': bitwise for integers and pred; for floats equal values, equal zero
        signs (unless signed_zero=False) and NaN where NaN is expected (any payload).
    kind 'ulp': floats within n units in the last place of the expected value in the
        output type, or within atol (a floor for results near zero / in the denormal
        range); infinities and NaNs must match exactly.
    kind 'close': |got - expected| <= atol + rtol * |expected|, atol may be an array
        (error bounds scaled per element); infinities and NaNs must match exactly.
    """

    def __init__(self, kind, n=0, rtol=0.0, atol=0.0, signed_zero=True):
        self.kind = kind
        self.n = n
        self.rtol = rtol
        self.atol = atol
        self.signed_zero = signed_zero

    def __repr__(self):
        if self.kind == 'bitwise':
            return 'bitwise'
        if self.kind == 'exact':
            return 'exact' + ('' if self.signed_zero else '(+-0 equal)')
        if self.kind == 'ulp':
            return '%g ulp' % self.n
        return 'rtol=%g atol=%s' % (self.rtol, 'per-element' if np.ndim(self.atol) else self.atol)


EXACT = Tol('exact')
EXACT_ANY_ZERO = Tol('exact', signed_zero=False)
# Bit-for-bit equality, NaN payloads and signs included: for ops that only move or
# reinterpret values (data movement, gather, sort, bitcast-convert).
BITWISE = Tol('bitwise')


def ULP(n, atol=None):
    return Tol('ulp', n=n, atol=atol)


def CLOSE(rtol, atol=0.0):
    return Tol('close', rtol=rtol, atol=atol)


def ulp_of(e, t):
    """Size of one ulp of |e| in float type t (float64 array)."""
    a = np.abs(np.asarray(e, dtype=np.float64))
    with np.errstate(all='ignore'):
        _, ex = np.frexp(np.where(np.isfinite(a) & (a > 0), a, 1.0))
    ex = np.maximum(ex - 1, MIN_EXP[t])
    u = np.ldexp(1.0, ex - MANT_BITS[t])
    return np.where(a == 0, 2.0 ** (MIN_EXP[t] - MANT_BITS[t]), u)


def compare(got, exp, t, tol):
    """Returns None if `got` matches `exp` (storage arrays of HLO type t), else a message
    with the mismatch count, max error and the first mismatching index."""
    want_dtype = np_dtype(t)
    if got.dtype != want_dtype:
        return 'dtype %s, expected %s (%s)' % (got.dtype, want_dtype, t)
    if got.shape != exp.shape:
        return 'shape %s, expected %s' % (got.shape, exp.shape)
    if exp.size == 0:
        return None
    err = None
    if tol.kind == 'bitwise' and is_float(t):
        udt = float_bits_dtype(t)
        bad = got.view(udt) != exp.view(udt)
    elif is_float(t):
        g = got.astype(np.float64)
        e = exp.astype(np.float64)
        gn, en = np.isnan(g), np.isnan(e)
        bad = gn != en
        both = ~gn & ~en
        with np.errstate(all='ignore'):
            err = np.where(both, np.abs(g - e), 0.0)
            err = np.where(both & (g == e), 0.0, err)
            if tol.kind == 'exact':
                bad |= both & (g != e)
                if tol.signed_zero:
                    bad |= both & (g == 0) & (e == 0) & (np.signbit(g) != np.signbit(e))
            else:
                inf_mismatch = both & (np.isinf(g) | np.isinf(e)) & (g != e)
                bad |= inf_mismatch
                fin = both & np.isfinite(g) & np.isfinite(e)
                if tol.kind == 'ulp':
                    allowed = tol.n * ulp_of(e, t)
                    if tol.atol is not None:
                        allowed = np.maximum(allowed, tol.atol)
                else:
                    allowed = tol.atol + tol.rtol * np.abs(e)
                bad |= fin & (err > allowed)
    else:
        bad = got != exp
    nbad = int(np.count_nonzero(bad))
    if nbad == 0:
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    msg = '%d of %d elements differ (%r)' % (nbad, exp.size, tol)
    if err is not None:
        finite_err = err[bad & np.isfinite(err)] if np.any(bad & np.isfinite(err)) else np.array([0.0])
        msg += ', max abs error %.6g' % float(np.max(finite_err))
    gv = got[first] if first else got[()]
    ev = exp[first] if first else exp[()]
    msg += '; first at index %s: got %s expected %s' % (list(first), fmt_val(gv, t), fmt_val(ev, t))
    return msg


def fmt_val(v, t):
    if is_float(t):
        f = float(v)
        bits = np.asarray(v).view(float_bits_dtype(t)) if t != 'bf16' else np.asarray(np.float32(v)).view(np.uint32)
        return '%r (0x%x)' % (f, int(bits))
    return repr(v.item() if hasattr(v, 'item') else v)


# --------------------------------------------------------------------------------------
# Cases

class Case:
    """One test case: parameters with their numpy values, instructions, outputs with
    expected values and tolerances. Called computations go in `comps`."""

    _counter = 0

    def __init__(self, name):
        Case._counter += 1
        self.name = name
        self.uid = Case._counter
        self.b = Builder('c%d.' % self.uid)
        self.inputs = []     # storage arrays, one per parameter
        self.outputs = []    # (V, expected storage array, Tol)
        self.comps = []      # Computation objects (shared ones dedupe by name)

    # parameters and instructions
    def param(self, array, t, layout=None):
        a = np.asarray(array)
        if a.dtype != np_dtype(t):
            raise TypeError('%s: parameter of %s given dtype %s' % (self.name, t, a.dtype))
        v = self.b.param(Shape(t, a.shape, layout=layout))
        self.inputs.append(a)
        return v

    def op(self, opcode, shape, operands, attrs='', name=None):
        return self.b.op(opcode, shape, operands, attrs, name)

    def constant(self, values, t):
        return self.b.constant(values, t)

    def use(self, comp):
        if comp not in self.comps:
            self.comps.append(comp)
        return comp

    # Tolerance of outputs added without one; a test file may set kt.Case.default_tol.
    default_tol = EXACT

    def out(self, v, expected, tol=None):
        tol = tol or self.default_tol
        if v.shape.is_tuple():
            raise TypeError('outputs must be arrays; use get-tuple-element')
        exp = np.asarray(expected)
        want = np_dtype(v.t)
        if exp.dtype != want:
            raise TypeError('%s: expected value for %s has dtype %s' % (self.name, v.t, exp.dtype))
        if exp.shape != v.dims:
            raise ValueError('%s: expected shape %s but instruction shape %s'
                             % (self.name, exp.shape, v.dims))
        self.outputs.append((v, exp, tol))


def assemble(cases, module_name='kilntest'):
    """Module text for a list of cases, plus the flat input and output lists. Entry
    parameters are numbered (and named p0, p1, ...) by position across all cases. The
    ROOT is a tuple of every output, except that a lone output that is the module's last
    instruction becomes a non-tuple ROOT (both forms get exercised)."""
    comps, order = {}, []
    for c in cases:
        for comp in c.comps:
            _collect(comp, comps, order)
    inputs, outputs, param_shapes = [], [], []
    body = []
    for c in cases:
        base = len(inputs)
        for i, p in enumerate(c.b.params):
            p.name = 'p%d' % (base + i)
            param_shapes.append(p.shape)
        inputs.extend(c.inputs)
        outputs.extend(c.outputs)
    single = (len(outputs) == 1 and cases[-1].b.instrs
              and cases[-1].b.instrs[-1]['v'] is outputs[0][0])
    base = 0
    for c in cases:
        body.extend(c.b.render(param_offset=base, root=outputs[0][0] if single else None))
        base += len(c.inputs)
    if single:
        result_shape = outputs[0][0].shape
    else:
        result_shape = Shape.tuple([o[0].shape for o in outputs])
        body.append('  ROOT %%root = %s tuple(%s)' % (
            result_shape.text(), ', '.join(o[0].ref() for o in outputs)))
    layout = 'entry_computation_layout={(%s)->%s}' % (
        ', '.join(s.text() for s in param_shapes), result_shape.text())
    lines = ['HloModule %s, %s' % (module_name, layout), '']
    for name in order:
        lines.append(comps[name].text())
        lines.append('')
    params_text = ', '.join('p%d: %s' % (i, s.text(False)) for i, s in enumerate(param_shapes))
    lines.append('ENTRY %%main (%s) -> %s {' % (params_text, result_shape.text(False)))
    lines.extend(body)
    lines.append('}')
    return '\n'.join(lines) + '\n', inputs, outputs


def _collect(comp, comps, order):
    # Called computations may call others (a while body calling a reducer): those are
    # registered through comp.deps and printed first.
    for dep in comp.deps:
        _collect(dep, comps, order)
    if comp.name in comps:
        if comps[comp.name] is not comp and comps[comp.name].text() != comp.text():
            raise ValueError('two different computations named %s' % comp.name)
        return
    comps[comp.name] = comp
    order.append(comp.name)


# --------------------------------------------------------------------------------------
# Shared computations

_shared = {}


def shared(name, build):
    """Computation `name`, built once by build(Computation) -> root."""
    if name not in _shared:
        c = Computation(name)
        c.finish(build(c))
        _shared[name] = c
    return _shared[name]


def binary_comp(opcode, t, out_t=None, attrs='', name=None):
    """(x: t[], y: t[]) -> opcode(x, y): reducers and combiners."""
    out_t = out_t or t
    name = name or '%s_%s' % (opcode.replace('-', '_'), t)

    def build(c):
        x = c.param(S(t))
        y = c.param(S(t))
        return c.op(opcode, S(out_t), [x, y], attrs)

    return shared(name, build)


def compare_comp(direction, t, cmp_type=None):
    """(x: t[], y: t[]) -> pred[] compare(x, y), direction=..."""
    attrs = 'direction=%s' % direction
    if cmp_type:
        attrs += ', type=%s' % cmp_type
    return binary_comp('compare', t, 'pred', attrs,
                       name='cmp_%s_%s%s' % (direction.lower(), t,
                                             '_' + cmp_type.lower() if cmp_type else ''))


def overwrite_comp(t):
    """(x, y) -> y: scatter's overwrite combiner."""

    def build(c):
        c.param(S(t))
        y = c.param(S(t))
        return c.op('copy', S(t), [y])

    return shared('overwrite_%s' % t, build)


# --------------------------------------------------------------------------------------
# Running

class Suite:
    def __init__(self, title, pack_cases=48, pack_elements=60000, devices=('interpreter',)):
        """devices: the kiln devices every pack runs on (--device overrides). With more
        than one, each device's outputs are checked against the expected values, and
        outputs with an exact tolerance (EXACT, BITWISE; not EXACT_ANY_ZERO) also against the first
        device's outputs bit for bit (NaN payloads included); on any device but the
        interpreter, an instruction run through the evaluator fails the pack. Every device
        rounds each bf16 op (--allow_excess_precision=false)."""
        self.title = title
        self.devices = tuple(devices)
        self.cases = []
        self.pack_cases = pack_cases
        self.pack_elements = pack_elements

    def add(self, case):
        if not case.outputs:
            raise ValueError('case %s has no outputs' % case.name)
        self.cases.append(case)
        return case

    def main(self):
        ap = argparse.ArgumentParser(description=self.title)
        ap.add_argument('--kiln', required=True, help='path to the kiln executable')
        ap.add_argument('-k', dest='filter', default=None, help='only cases whose name contains this')
        ap.add_argument('--keep', action='store_true', help='keep temporary files')
        ap.add_argument('-j', type=int, default=1, help='parallel kiln runs')
        ap.add_argument('--list', action='store_true', help='list case names and exit')
        ap.add_argument('--no-pack', action='store_true', help='one kiln run per case')
        ap.add_argument('--device', dest='devices', action='append', default=None,
                        help='kiln device to run on (repeatable; default: %s)' % ', '.join(self.devices))
        args = ap.parse_args()
        cases = [c for c in self.cases if args.filter is None or args.filter in c.name]
        names = [c.name for c in self.cases]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            print('internal error: duplicate case names: %s' % sorted(dup)[:5])
            return 2
        if args.list:
            for c in cases:
                print(c.name)
            return 0
        kiln = os.path.abspath(args.kiln)
        if not os.access(kiln, os.X_OK):
            print('kiln executable not found: %s' % kiln)
            return 2
        script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        tmp_root = tempfile.mkdtemp(prefix='kilntest-%s-' % script)
        fail_root = os.path.join(tempfile.gettempdir(), 'kilntest-failures', script)
        shutil.rmtree(fail_root, ignore_errors=True)
        runner = _Runner(kiln, tmp_root, fail_root, args.keep, args.devices or self.devices)
        packs = self._packs(cases, 1 if args.no_pack else self.pack_cases)
        t0 = time.time()
        results = {}
        with ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
            for res in ex.map(runner.run_pack, packs):
                results.update(res)
        failed = [c for c in cases if results[c.uid] is not None]
        for c in failed:
            print('FAIL %s\n  %s' % (c.name, results[c.uid].replace('\n', '\n  ')))
        if not args.keep:
            shutil.rmtree(tmp_root, ignore_errors=True)
        else:
            print('temporary files kept in %s' % tmp_root)
        if failed:
            print('failing cases (module, inputs, expected outputs) kept in %s' % fail_root)
        print('%s: %d passed, %d failed (%d kiln runs, %.1fs)' % (
            script, len(cases) - len(failed), len(failed), runner.runs, time.time() - t0))
        return 1 if failed else 0

    def _packs(self, cases, limit):
        packs, cur, elems = [], [], 0
        for c in cases:
            n = sum(a.size for a in c.inputs) + sum(o[1].size for o in c.outputs)
            if cur and (len(cur) >= limit or elems + n > self.pack_elements):
                packs.append(cur)
                cur, elems = [], 0
            cur.append(c)
            elems += n
        if cur:
            packs.append(cur)
        return packs


# The warning a compiling device prints when it runs instructions through the evaluator.
EVALUATED_MARK = 'through the evaluator'


class _Runner:
    def __init__(self, kiln, tmp_root, fail_root, keep, devices=('interpreter',)):
        self.kiln = kiln
        self.devices = tuple(devices)
        self.tmp_root = tmp_root
        self.fail_root = fail_root
        self.keep = keep
        self.runs = 0
        self.lock = threading.Lock()   # packs run on several threads with -j

    def _exec(self, cases, device='interpreter'):
        """Runs one module made of `cases` on `device`. Returns (outputs list or None,
        error text)."""
        with self.lock:
            self.runs += 1
            d = os.path.join(self.tmp_root, 'run%05d' % self.runs)
        os.makedirs(d)
        text, inputs, outputs = assemble(cases)
        hlo = os.path.join(d, 'module.hlo')
        with open(hlo, 'w') as f:
            f.write(text)
        cmd = [self.kiln, 'run', hlo]
        for i, a in enumerate(inputs):
            p = os.path.join(d, 'p%d.npy' % i)
            np.save(p, a)
            cmd += ['-i', 'p%d=%s' % (i, p)]
        outdir = os.path.join(d, 'out')
        # Every bf16 op rounded, as the interpreter does: the packs compare devices bit for
        # bit (an HLO module's default lets a cpu kernel keep bf16 chains in f32).
        cmd += ['-o', outdir, '--device', device, '--allow_excess_precision=false']
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=120)
        except subprocess.TimeoutExpired:
            return None, 'kiln timed out after 120s'
        err = proc.stderr.decode('utf-8', 'replace').strip()
        if proc.returncode != 0:
            why = ('killed by signal %d' % -proc.returncode if proc.returncode < 0
                   else 'exit status %d' % proc.returncode)
            return None, 'kiln %s: %s' % (why, err[-2000:] or '(no message)')
        if device != 'interpreter' and EVALUATED_MARK in err:
            lines = [ln for ln in err.splitlines() if EVALUATED_MARK in ln]
            return None, 'device %s did not compile everything: %s' % (device, lines[0][-2000:])
        got = []
        for i in range(len(outputs)):
            p = os.path.join(outdir, 'output_%d.npy' % i)
            if not os.path.exists(p):
                return None, 'kiln exited 0 but did not write %s' % os.path.basename(p)
            try:
                got.append(np.load(p, allow_pickle=False))
            except Exception as e:  # a malformed .npy is a kiln bug worth reporting
                return None, 'cannot load %s: %s' % (os.path.basename(p), e)
        extra = os.path.join(outdir, 'output_%d.npy' % len(outputs))
        if os.path.exists(extra):
            return None, 'kiln wrote more outputs than the ROOT has (%s)' % os.path.basename(extra)
        if not self.keep:
            shutil.rmtree(d, ignore_errors=True)
        return got, None

    def run_pack(self, cases):
        runs, err = [], None
        several = len(self.devices) > 1
        for dev in self.devices:
            got, e = self._exec(cases, dev)
            if got is None:
                err = '%s: %s' % (dev, e) if several else e
                break
            runs.append((dev, got))
        if err is not None and len(cases) > 1:
            res = {}
            for c in cases:
                res.update(self.run_pack([c]))
            return res
        got = runs[0][1] if runs else None
        res = {}
        k = 0
        for c in cases:
            if err is not None:
                res[c.uid] = err
                self._save_failure(c)
                continue
            msgs = []
            for dev, dgot in runs:
                where = '%s: ' % dev if several else ''
                for j, (v, exp, tol) in enumerate(c.outputs):
                    m = compare(dgot[k + j], exp, v.t, tol)
                    if m:
                        msgs.append('%soutput %d (%s): %s' % (where, j, v.shape.text(False), m))
                    elif dev != runs[0][0] and (tol.kind == 'bitwise' or (tol.kind == 'exact' and tol.signed_zero)):
                        m = compare(dgot[k + j], got[k + j], v.t, BITWISE)
                        if m:
                            msgs.append('%soutput %d (%s) differs from %s bit for bit: %s'
                                        % (where, j, v.shape.text(False), runs[0][0], m))
            k += len(c.outputs)
            res[c.uid] = '\n'.join(msgs) if msgs else None
            if msgs:
                self._save_failure(c, got[k - len(c.outputs):k])
        return res

    def _save_failure(self, case, got=None):
        safe = ''.join(ch if ch.isalnum() or ch in '._-' else '_' for ch in case.name)
        d = os.path.join(self.fail_root, safe)
        os.makedirs(d, exist_ok=True)
        text, inputs, outputs = assemble([case], module_name=safe.replace('.', '_').replace('-', '_'))
        with open(os.path.join(d, 'module.hlo'), 'w') as f:
            f.write(text)
        args = []
        for i, a in enumerate(inputs):
            np.save(os.path.join(d, 'p%d.npy' % i), a)
            args.append('-i p%d=%s/p%d.npy' % (i, d, i))
        for i, (v, exp, tol) in enumerate(outputs):
            np.save(os.path.join(d, 'expected_%d.npy' % i), exp)
            if got is not None:
                np.save(os.path.join(d, 'got_%d.npy' % i), got[i])
        with open(os.path.join(d, 'run.sh'), 'w') as f:
            for dev in self.devices:
                f.write('%s run %s/module.hlo %s -o %s/out_%s --device %s --allow_excess_precision=false\n'
                        % (self.kiln, d, ' '.join(args), d, dev, dev))


# --------------------------------------------------------------------------------------
# Small helpers shared by the test files

def nelems(dims):
    return int(np.prod(dims)) if len(dims) else 1


def float_sum_tol(t, terms, magnitude):
    """Tolerance for a float result that sums `terms` products/values whose absolute
    values sum to `magnitude` (array): the worst-case bound of sequential accumulation in
    type t, (terms + 2) * u * magnitude, plus one rounding of the result. Accumulating in
    a wider type (double) only makes the error smaller, so any summation order passes."""
    u = UNIT_ROUNDOFF[t]
    atol = (terms + 2) * u * np.asarray(magnitude, dtype=np.float64) + 2.0 ** (MIN_EXP[t] - MANT_BITS[t])
    return CLOSE(2 * u, atol)
