"""Elementwise ops of kiln's evaluator against numpy: every unary and binary elementwise
opcode XLA defines, on every element type XLA allows it for, over scalars, ranks 1-4 and
zero-size shapes, with special values (+-0, +-inf, NaN, denormals, INT_MIN, max) mixed
in; compare in all directions and comparison types; select; clamp. Sweeps run every
f16 and bf16 bit pattern through every unary op, random 16-bit pairs through every
binary op and comparison, and every 8-bit pair (random 16-bit pairs) through every
integer op.

References are computed at test time. Where numpy's behaviour is undefined or differs
from XLA's definition, the reference transcribes XLA's semantics explicitly with Python
integers: integer division by zero gives -1 (signed) / all ones (unsigned), x % 0 = x,
INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0, shifts by >= the bit width (amount read as
unsigned) give 0 or the sign fill, integer pow with a negative exponent truncates to 0,
clz/popcnt count the bits of the two's-complement pattern.

Tolerances (the reason for each is next to where it is used): exact for integer, pred,
comparison, selection and the IEEE-exact float ops; a few ulp for transcendentals.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, EXACT, EXACT_ANY_ZERO, ULP  # noqa: E402

g = kt.Gen(20240611)
suite = kt.Suite('kiln evaluator: elementwise ops vs numpy')

# Shapes cycle through the cases of an op so every op meets scalars, each rank and
# zero-size arrays somewhere; the larger ones make room for the special values.
SHAPES = [(), (33,), (3, 11), (2, 3, 4), (2, 1, 3, 5), (0,), (3, 0, 2), (1,), (4, 16)]
SHAPES_NONEMPTY = [(), (33,), (3, 11), (2, 3, 4), (2, 1, 3, 5), (1,), (4, 16)]


def shapes_for(i, count):
    return [SHAPES[(i * 3 + j) % len(SHAPES)] for j in range(count)]


# --------------------------------------------------------------------------------------
# Float unary ops

def afz(x):
    # Round half away from zero (XLA round-nearest-afz, C round()); x - trunc(x) is exact.
    t = np.trunc(x)
    with np.errstate(invalid='ignore'):
        d = np.abs(x - t)
    return np.where(d >= 0.5, t + np.copysign(1.0, x), t)


def float_sign(x):
    return np.where(np.isnan(x), x, np.where(x == 0, x, np.copysign(1.0, x)))


_erf = np.vectorize(math.erf, otypes=[np.float64])

# Transcendentals: libm (what kiln calls) and numpy's SIMD kernels differ by an ulp or
# two, so f32/f64 get 4 ulp; f16/bf16 get 1 ulp because XLA evaluates them in f32 and
# rounds, which can land one f16/bf16 ulp away from rounding the exact value.
TRANSCENDENTAL = 'transcendental'
# IEEE-exact ops: numpy computes the correctly rounded result, and so does any correct
# evaluator (double rounding through f32/f64 is innocuous for sqrt, see Figueroa 1995).
EXACT_OP = 'exact'

FLOAT_UNARY = {
    'abs': (np.abs, EXACT_OP),
    'negate': (np.negative, EXACT_OP),
    'sign': (float_sign, EXACT_OP),
    'floor': (np.floor, EXACT_OP),
    'ceil': (np.ceil, EXACT_OP),
    'round-nearest-afz': (afz, EXACT_OP),
    'round-nearest-even': (np.rint, EXACT_OP),
    'sqrt': (np.sqrt, EXACT_OP),
    # rsqrt is 1/sqrt(x) in XLA: two roundings in f32, so up to an ulp from the
    # correctly rounded value.
    'rsqrt': (lambda x: 1.0 / np.sqrt(x), 'rsqrt'),
    'cbrt': (np.cbrt, TRANSCENDENTAL),
    'exponential': (np.exp, TRANSCENDENTAL),
    'exponential-minus-one': (np.expm1, TRANSCENDENTAL),
    'log': (np.log, TRANSCENDENTAL),
    'log-plus-one': (np.log1p, TRANSCENDENTAL),
    'tanh': (np.tanh, TRANSCENDENTAL),
    'sine': (np.sin, TRANSCENDENTAL),
    'cosine': (np.cos, TRANSCENDENTAL),
    'tan': (np.tan, TRANSCENDENTAL),
    'erf': (_erf, TRANSCENDENTAL),
    # XLA defines logistic as 1 / (1 + exp(-x)); for large negative x the f32
    # evaluation underflows to 0 where the exact value is a denormal, hence the
    # absolute floor of one smallest normal.
    'logistic': (lambda x: 1.0 / (1.0 + np.exp(-x)), 'logistic'),
    'copy': (lambda x: x, 'copy'),
}


def float_tol(kind, t):
    if kind == 'copy':
        # A copy keeps every bit, NaN payloads included -- except that bf16 inputs are
        # narrowed from f32 by the kiln command, which may quieten signalling NaNs.
        return kt.BITWISE if t != 'bf16' else EXACT
    if kind == EXACT_OP:
        return EXACT
    if kind == 'rsqrt':
        return ULP(2)
    n = 1 if t in ('f16', 'bf16') else 4
    if kind == 'logistic':
        return ULP(max(n, 2), atol=2.0 ** kt.MIN_EXP[t])
    return ULP(n)


def add_float_unary():
    for i, (op, (fn, kind)) in enumerate(sorted(FLOAT_UNARY.items())):
        for t in kt.FLOATS:
            for shape in shapes_for(i + kt.FLOATS.index(t), 2):
                c = kt.Case('unary/%s/%s/%s' % (op, t, 'x'.join(map(str, shape)) or 'scalar'))
                x = g.array(t, shape)
                if op in ('exponential', 'tanh', 'logistic', 'erf', 'exponential-minus-one'):
                    x = g.array(t, shape, scale=8.0)
                p = c.param(x, t)
                r = c.op(op, S(t, shape), [p])
                with np.errstate(all='ignore'):
                    exp = kt.round_to(fn(x.astype(np.float64)), t)
                c.out(r, exp, float_tol(kind, t))
                suite.add(c)


# is-finite: float -> pred.
def add_is_finite():
    for i, t in enumerate(kt.FLOATS):
        for shape in shapes_for(i, 3):
            c = kt.Case('unary/is-finite/%s/%s' % (t, 'x'.join(map(str, shape)) or 'scalar'))
            x = g.array(t, shape)
            p = c.param(x, t)
            c.out(c.op('is-finite', S('pred', shape), [p]), np.isfinite(x))
            suite.add(c)


# --------------------------------------------------------------------------------------
# Integer / pred unary ops (exact, Python-int transcriptions of XLA's semantics)

def int_unary_ref(op, x, t):
    bits = kt.BITS[t]
    mask = (1 << bits) - 1
    vals = kt.to_pyint(x).reshape(-1)
    if op == 'abs':
        out = [abs(v) for v in vals]
    elif op == 'negate':
        out = [-v for v in vals]
    elif op == 'sign':
        out = [(v > 0) - (v < 0) for v in vals]
    elif op == 'not':
        out = [~v for v in vals]
    elif op == 'popcnt':
        out = [bin(v & mask).count('1') for v in vals]
    elif op == 'count-leading-zeros':
        out = [bits - (v & mask).bit_length() for v in vals]
    elif op == 'copy':
        out = list(vals)
    else:
        raise ValueError(op)
    return kt.wrap_int(out, t).reshape(x.shape)


# XLA allows abs and sign on signed integers only; negate, not, popcnt, clz on all.
INT_UNARY = {'abs': kt.SINT, 'sign': kt.SINT, 'negate': kt.INTS, 'not': kt.INTS,
             'popcnt': kt.INTS, 'count-leading-zeros': kt.INTS, 'copy': kt.INTS}


def add_int_unary():
    for i, (op, types) in enumerate(sorted(INT_UNARY.items())):
        for t in types:
            for shape in shapes_for(i + kt.INTS.index(t), 2):
                c = kt.Case('unary/%s/%s/%s' % (op, t, 'x'.join(map(str, shape)) or 'scalar'))
                x = g.array(t, shape)
                p = c.param(x, t)
                c.out(c.op(op, S(t, shape), [p]), int_unary_ref(op, x, t))
                suite.add(c)
    for op in ('not', 'copy'):
        for shape in [(), (9,), (2, 5), (0, 3)]:
            c = kt.Case('unary/%s/pred/%s' % (op, 'x'.join(map(str, shape)) or 'scalar'))
            x = g.array('pred', shape)
            p = c.param(x, 'pred')
            c.out(c.op(op, S('pred', shape), [p]), np.logical_not(x) if op == 'not' else x)
            suite.add(c)


# --------------------------------------------------------------------------------------
# Binary ops

def c_div(a, b):
    # C (truncating) integer division on Python ints.
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def int_binary_ref(op, x, y, t):
    bits = kt.BITS[t]
    mask = (1 << bits) - 1
    lo, hi = kt.int_range(t)
    signed = kt.is_signed(t)
    xs = kt.to_pyint(x).reshape(-1)
    ys = kt.to_pyint(y).reshape(-1)
    out = []
    for a, b in zip(xs, ys):
        if op == 'add':
            r = a + b
        elif op == 'subtract':
            r = a - b
        elif op == 'multiply':
            r = a * b
        elif op == 'divide':
            if b == 0:
                r = -1 if signed else hi          # XLA: x / 0 = -1 or all ones
            elif signed and a == lo and b == -1:
                r = lo                             # XLA: INT_MIN / -1 = INT_MIN
            else:
                r = c_div(a, b)
        elif op == 'remainder':
            if b == 0:
                r = a                              # XLA: x % 0 = x
            elif signed and a == lo and b == -1:
                r = 0
            else:
                r = a - c_div(a, b) * b           # sign of the dividend
        elif op == 'maximum':
            r = max(a, b)
        elif op == 'minimum':
            r = min(a, b)
        elif op == 'and':
            r = a & b
        elif op == 'or':
            r = a | b
        elif op == 'xor':
            r = a ^ b
        elif op == 'power':
            if a == 1 or b == 0:
                r = 1
            elif b < 0:
                r = 0                              # 1 / a^n truncated, |a| >= 2
            else:
                r = pow(a, b, 1 << bits)
        elif op in ('shift-left', 'shift-right-logical', 'shift-right-arithmetic'):
            amount = b & mask                      # the amount is read as unsigned
            as_signed = (a & mask) - ((a & mask) >> (bits - 1) << bits)
            if amount >= bits:
                if op == 'shift-right-arithmetic':
                    r = -1 if as_signed < 0 else 0
                else:
                    r = 0
            elif op == 'shift-left':
                r = a << amount
            elif op == 'shift-right-logical':
                r = (a & mask) >> amount
            else:
                r = as_signed >> amount
        else:
            raise ValueError(op)
        out.append(r)
    return kt.wrap_int(out, t).reshape(x.shape)


def float_binary_ref(op, x, y, t):
    a = x.astype(np.float64)
    b = y.astype(np.float64)
    with np.errstate(all='ignore'):
        if op == 'add':
            r = a + b
        elif op == 'subtract':
            r = a - b
        elif op == 'multiply':
            r = a * b
        elif op == 'divide':
            r = a / b
        elif op == 'remainder':
            r = np.fmod(a, b)
        elif op == 'maximum':
            r = np.maximum(a, b)
        elif op == 'minimum':
            r = np.minimum(a, b)
        elif op == 'power':
            r = np.power(a, b)
        elif op == 'atan2':
            r = np.arctan2(a, b)
        else:
            raise ValueError(op)
    return kt.round_to(r, t)


# +, -, *, / and fmod are exact (computed in f64 then rounded once: innocuous double
# rounding); max/min are exact but XLA leaves the sign of max(-0, +0) to the
# implementation; pow and atan2 are libm functions (4 ulp / 1 ulp as for unary).
FLOAT_BINARY = {'add': EXACT, 'subtract': EXACT, 'multiply': EXACT, 'divide': EXACT,
                'remainder': EXACT, 'maximum': EXACT_ANY_ZERO, 'minimum': EXACT_ANY_ZERO,
                'power': TRANSCENDENTAL, 'atan2': TRANSCENDENTAL}
INT_BINARY = ['add', 'subtract', 'multiply', 'divide', 'remainder', 'maximum', 'minimum',
              'and', 'or', 'xor', 'power', 'shift-left', 'shift-right-logical',
              'shift-right-arithmetic']


def binary_inputs(op, t, shape):
    if kt.is_float(t):
        if op == 'power':
            # Moderate bases and exponents (integers among them) keep results away from
            # the overflow threshold, where an ulp of rounding decides finite vs inf.
            x = g.array(t, shape, scale=2.0)
            y = g.array(t, shape, scale=2.0)
            yf = y.reshape(-1)
            for k in range(0, yf.size, 3):
                yf[k] = kt.round_to(np.round(yf[k].astype(np.float64)), t)
            return x, y
        x = g.array(t, shape)
        y = g.array(t, shape)
        if op in ('maximum', 'minimum', 'add', 'subtract') and x.size >= 2:
            y.reshape(-1)[0] = x.reshape(-1)[0]   # equal operands
        return x, y
    bits = kt.BITS[t]
    lo, hi = kt.int_range(t)
    if op.startswith('shift'):
        x = g.array(t, shape)
        y = g.array(t, shape, lo=max(lo, -3), hi=min(hi, bits + 3))
        yf = y.reshape(-1)
        for k in range(0, yf.size, 7):
            yf[k] = kt.wrap_int([g.randint(bits, 4 * bits) * g.choice([1, -1])], t)[0]
        return x, y
    if op == 'power':
        x = g.array(t, shape, lo=-5, hi=5)
        y = g.array(t, shape, lo=0, hi=2 * bits)
        xf, yf = x.reshape(-1), y.reshape(-1)
        if kt.is_signed(t):
            for k in range(0, xf.size, 5):
                # Negative exponents only where XLA's result is unambiguous.
                if abs(int(xf[k])) >= 2 or int(xf[k]) == 1:
                    yf[k] = -g.randint(1, 3)
        for k in range(1, xf.size, 6):
            xf[k] = kt.wrap_int([g.ints(lo, hi, (1,))[0]], t)[0]
        return x, y
    x = g.array(t, shape)
    if op in ('divide', 'remainder'):
        y = g.array(t, shape, lo=max(lo, -40), hi=min(hi, 40))
        yf, xf = y.reshape(-1), x.reshape(-1)
        for k in range(0, yf.size, 5):
            yf[k] = kt.wrap_int([g.ints(lo, hi, (1,))[0]], t)[0]
        if xf.size >= 4:
            xf[0], yf[0] = lo, (-1 if kt.is_signed(t) else 1)
            yf[1] = 0
            xf[2], yf[2] = hi, 0
            xf[3], yf[3] = g.choice([-7, 7]) if kt.is_signed(t) else 7, 2
        return x, y
    return x, g.array(t, shape)


def add_binary():
    for i, op in enumerate(sorted(set(FLOAT_BINARY) | set(INT_BINARY))):
        types = []
        if op in FLOAT_BINARY:
            types += kt.FLOATS
        if op in INT_BINARY:
            types += kt.INTS
        for j, t in enumerate(types):
            for shape in shapes_for(i + j, 2):
                c = kt.Case('binary/%s/%s/%s' % (op, t, 'x'.join(map(str, shape)) or 'scalar'))
                x, y = binary_inputs(op, t, shape)
                px, py = c.param(x, t), c.param(y, t)
                r = c.op(op, S(t, shape), [px, py])
                if kt.is_float(t):
                    tol = FLOAT_BINARY[op]
                    if tol == TRANSCENDENTAL:
                        tol = float_tol(TRANSCENDENTAL, t)
                    c.out(r, float_binary_ref(op, x, y, t), tol)
                else:
                    c.out(r, int_binary_ref(op, x, y, t))
                suite.add(c)
    # Logical ops on pred.
    fns = {'and': np.logical_and, 'or': np.logical_or, 'xor': np.logical_xor}
    for op, fn in sorted(fns.items()):
        for shape in [(), (13,), (3, 4), (2, 0)]:
            c = kt.Case('binary/%s/pred/%s' % (op, 'x'.join(map(str, shape)) or 'scalar'))
            x, y = g.array('pred', shape), g.array('pred', shape)
            r = c.op(op, S('pred', shape), [c.param(x, 'pred'), c.param(y, 'pred')])
            c.out(r, fn(x, y))
            suite.add(c)


# --------------------------------------------------------------------------------------
# Compare

DIRECTIONS = {'EQ': np.equal, 'NE': np.not_equal, 'LT': np.less, 'LE': np.less_equal,
              'GT': np.greater, 'GE': np.greater_equal}


def compare_inputs(t, shape):
    """Values drawn from a small pool so equal pairs are common; floats include both
    zeros, infinities and NaNs of both signs."""
    n = kt.nelems(shape)
    if t == 'pred':
        return g.array('pred', shape), g.array('pred', shape)
    if kt.is_float(t):
        pool = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, math.inf, -math.inf, 1e-3, 7.0]
        pool = list(kt.round_to(pool, t)) + [kt.nan_of(t), kt.nan_of(t, negative=True)]
    else:
        lo, hi = kt.int_range(t)
        pool = list(kt.wrap_int([0, 1, -1, 2, lo, hi, lo + 1, hi - 1, 100], t))
    pool = np.array(pool, dtype=kt.np_dtype(t))
    xi = g.rng.integers(0, len(pool), size=n)
    yi = g.rng.integers(0, len(pool), size=n)
    return pool[xi].reshape(shape), pool[yi].reshape(shape)


def add_compare():
    k = 0
    for t in kt.ALL_TYPES:
        if kt.is_float(t):
            kinds = [None, 'FLOAT', 'TOTALORDER']
        elif kt.is_signed(t):
            kinds = [None, 'SIGNED']
        else:
            kinds = [None, 'UNSIGNED']
        for d, fn in DIRECTIONS.items():
            for kind in kinds:
                k += 1
                shape = SHAPES[k % len(SHAPES)]
                if kt.nelems(shape) < 8 and k % 3:
                    shape = (5, 8)
                c = kt.Case('compare/%s/%s/%s/%s' % (t, d, kind or 'default',
                                                    'x'.join(map(str, shape)) or 'scalar'))
                x, y = compare_inputs(t, shape)
                attrs = 'direction=%s' % d + (', type=%s' % kind if kind else '')
                r = c.op('compare', S('pred', shape), [c.param(x, t), c.param(y, t)], attrs)
                if kind == 'TOTALORDER':
                    exp = fn(kt.total_order_key(x, t), kt.total_order_key(y, t))
                else:
                    exp = fn(x, y)
                c.out(r, np.asarray(exp, dtype=bool))
                suite.add(c)


# --------------------------------------------------------------------------------------
# Select and clamp

def add_select():
    for i, t in enumerate(kt.ALL_TYPES):
        for shape in shapes_for(i, 2):
            c = kt.Case('select/%s/%s' % (t, 'x'.join(map(str, shape)) or 'scalar'))
            pr = g.array('pred', shape)
            x, y = g.array(t, shape), g.array(t, shape)
            r = c.op('select', S(t, shape), [c.param(pr, 'pred'), c.param(x, t), c.param(y, t)])
            c.out(r, np.where(pr, x, y), kt.BITWISE)    # select moves bits
            suite.add(c)
        # Scalar predicate (XLA's restricted broadcast form of select).
        for val in (True, False):
            shape = (3, 4)
            c = kt.Case('select/%s/scalar_pred_%s' % (t, 'true' if val else 'false'))
            pr = np.array(val)
            x, y = g.array(t, shape), g.array(t, shape)
            r = c.op('select', S(t, shape), [c.param(pr, 'pred'), c.param(x, t), c.param(y, t)])
            c.out(r, x.copy() if val else y.copy(), kt.BITWISE)
            suite.add(c)


def add_clamp():
    for i, t in enumerate(kt.INTS + kt.FLOATS):
        for form in ('arrays', 'scalar_bounds', 'scalar_min', 'scalar_max'):
            shape = [(4, 6), (17,), (2, 3, 2), (0, 5)][(i + len(form)) % 4]
            c = kt.Case('clamp/%s/%s/%s' % (t, form, 'x'.join(map(str, shape))))
            x = g.array(t, shape)
            if kt.is_float(t):
                lo = g.array(t, () if form in ('scalar_bounds', 'scalar_min') else shape,
                             special=False, lo=-6, hi=0)
                hi = g.array(t, () if form in ('scalar_bounds', 'scalar_max') else shape,
                             special=False, lo=-1, hi=6)
            else:
                tlo, thi = kt.int_range(t)
                mid = (tlo + thi) // 2
                lo = g.array(t, () if form in ('scalar_bounds', 'scalar_min') else shape,
                             special=False, lo=tlo, hi=mid)
                hi = g.array(t, () if form in ('scalar_bounds', 'scalar_max') else shape,
                             special=False, lo=mid - 5, hi=thi)
            r = c.op('clamp', S(t, shape), [c.param(lo, t), c.param(x, t), c.param(hi, t)])
            # clamp(lo, x, hi) = min(max(x, lo), hi), NaN in any operand propagates
            # (np.maximum/np.minimum propagate NaN). The sign of a zero result when
            # x and a bound are +-0 is left to the implementation.
            exp = np.minimum(np.maximum(x, lo), hi).astype(kt.np_dtype(t))
            c.out(r, exp, EXACT_ANY_ZERO)
            suite.add(c)


# --------------------------------------------------------------------------------------
# Exhaustive 16-bit sweeps: every f16 and bf16 bit pattern through every unary op, and
# many random pairs through every binary op (cheap, and they reach every denormal,
# rounding boundary and NaN encoding).

def all_16bit(t):
    bits = np.arange(1 << 16, dtype=np.uint32)
    if t == 'f16':
        return bits.astype(np.uint16).view(np.float16).reshape(256, 256)
    return (bits << np.uint32(16)).view(np.float32).reshape(256, 256)


def random_16bit(t, n):
    bits = g.rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    if t == 'f16':
        return bits.astype(np.uint16).view(np.float16)
    return (bits << np.uint32(16)).view(np.float32)


def add_exhaustive_16bit():
    for t in ('f16', 'bf16'):
        x = all_16bit(t)
        for op, (fn, kind) in sorted(FLOAT_UNARY.items()):
            c = kt.Case('exhaustive/unary/%s/%s' % (op, t))
            r = c.op(op, S(t, x.shape), [c.param(x, t)])
            with np.errstate(all='ignore'):
                exp = kt.round_to(fn(x.astype(np.float64)), t)
            c.out(r, exp, float_tol(kind, t))
            suite.add(c)
        c = kt.Case('exhaustive/unary/is-finite/%s' % t)
        c.out(c.op('is-finite', S('pred', x.shape), [c.param(x, t)]), np.isfinite(x))
        suite.add(c)
        for op in sorted(FLOAT_BINARY):
            a, b = random_16bit(t, 1 << 14), random_16bit(t, 1 << 14)
            c = kt.Case('exhaustive/binary/%s/%s' % (op, t))
            r = c.op(op, S(t, a.shape), [c.param(a, t), c.param(b, t)])
            tol = FLOAT_BINARY[op]
            if tol == TRANSCENDENTAL:
                tol = float_tol(TRANSCENDENTAL, t)
            c.out(r, float_binary_ref(op, a, b, t), tol)
            suite.add(c)
        for d, fn in sorted(DIRECTIONS.items()):
            for kind in ('FLOAT', 'TOTALORDER'):
                a, b = random_16bit(t, 1 << 12), random_16bit(t, 1 << 12)
                b[::3] = a[::3]
                c = kt.Case('exhaustive/compare/%s/%s/%s' % (t, d, kind))
                r = c.op('compare', S('pred', a.shape), [c.param(a, t), c.param(b, t)],
                         'direction=%s, type=%s' % (d, kind))
                if kind == 'TOTALORDER':
                    # The kiln command narrows bf16 inputs from f32, which may quieten
                    # signalling NaNs; TOTALORDER sees NaN payloads, so compare the
                    # payload-insensitive part only for bf16 NaNs.
                    exp = fn(kt.total_order_key(a, t), kt.total_order_key(b, t))
                    if t == 'bf16':
                        keep = ~(np.isnan(a) | np.isnan(b))
                        a, b, exp = a[keep], b[keep], exp[keep]
                        c = kt.Case('exhaustive/compare/%s/%s/%s' % (t, d, kind))
                        r = c.op('compare', S('pred', a.shape), [c.param(a, t), c.param(b, t)],
                                 'direction=%s, type=%s' % (d, kind))
                else:
                    exp = fn(a, b)
                c.out(r, np.asarray(exp, dtype=bool))
                suite.add(c)


# Integer ops over random values of the 8- and 16-bit types against every shift
# amount / divisor.
def add_int_sweeps():
    for t in ('s8', 'u8', 's16', 'u16'):
        lo, hi = kt.int_range(t)
        if kt.BITS[t] == 8:
            a = np.repeat(np.arange(lo, hi + 1), 256)
            b = np.tile(np.arange(lo, hi + 1), 256)
        else:
            a = g.ints(lo, hi, (1 << 16,))
            b = g.ints(lo, hi, (1 << 16,))
        a = kt.wrap_int(a, t)
        b = kt.wrap_int(b, t)
        for op in INT_BINARY:
            c = kt.Case('exhaustive/binary/%s/%s' % (op, t))
            r = c.op(op, S(t, a.shape), [c.param(a, t), c.param(b, t)])
            c.out(r, int_binary_ref(op, a, b, t))
            suite.add(c)
        for op, types in sorted(INT_UNARY.items()):
            if t in types:
                c = kt.Case('exhaustive/unary/%s/%s' % (op, t))
                c.out(c.op(op, S(t, a.shape), [c.param(a, t)]), int_unary_ref(op, a, t))
                suite.add(c)


add_float_unary()
add_is_finite()
add_int_unary()
add_binary()
add_compare()
add_select()
add_clamp()
add_exhaustive_16bit()
add_int_sweeps()

if __name__ == '__main__':
    sys.exit(suite.main())
