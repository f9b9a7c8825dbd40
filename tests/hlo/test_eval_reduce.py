"""Reductions of kiln's evaluator against numpy: reduce (add, multiply, maximum, minimum,
and, or over one, several, all or no dimensions, zero-size dimensions, every type),
variadic reduce (argmax with an index tie-break, two different accumulators at once),
reduce-window (max/avg-pool style: strides, padding incl. negative, base and window
dilation) and
select-and-scatter (the max-pool gradient, with first- and last-maximum selection),
plus hundreds of random configurations of each.

References are sequential transcriptions of the operations' definitions: accumulate from
the init value over the reduced elements in row-major order, rounding to the element
type after every step; windows skip padding and dilation holes (the init values used are
identities, so skipping them and reducing them agree).

Tolerances: exact for integers (wrapping), pred, max/min (but for the sign of a zero
result, which depends on the order of application) and select-and-scatter (whose
scattered sums are of small integers, exact in every float type). Float add/multiply
reductions may be evaluated in another order or in a wider accumulator, so they get the
worst-case bound of a K-term sequential sum, (K + 2) * u * sum|x_i| (u the unit roundoff
of the type), which any correct order satisfies and any indexing bug exceeds by far.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, EXACT  # noqa: E402

g = kt.Gen(4242)
suite = kt.Suite('kiln evaluator: reduce, reduce-window, select-and-scatter vs numpy')


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


def identity(op, t):
    if t == 'pred':
        return {'and': True, 'or': False}[op]
    if kt.is_float(t):
        return {'add': 0.0, 'multiply': 1.0, 'maximum': -math.inf, 'minimum': math.inf}[op]
    lo, hi = kt.int_range(t)
    return {'add': 0, 'multiply': 1, 'maximum': lo, 'minimum': hi,
            'and': -1 if kt.is_signed(t) else hi, 'or': 0, 'xor': 0}[op]


def apply_op(op, a, b, t):
    """One reducer step on arrays of type t, rounded to t."""
    if t == 'pred':
        return {'and': np.logical_and, 'or': np.logical_or}[op](a, b)
    if kt.is_float(t):
        x, y = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all='ignore'):
            r = {'add': np.add, 'multiply': np.multiply, 'maximum': np.maximum,
                 'minimum': np.minimum}[op](x, y)
        return kt.round_to(r, t)
    fn = {'add': np.add, 'multiply': np.multiply, 'maximum': np.maximum,
          'minimum': np.minimum, 'and': np.bitwise_and, 'or': np.bitwise_or,
          'xor': np.bitwise_xor}[op]
    with np.errstate(all='ignore'):
        return fn(a, b).astype(kt.np_dtype(t))   # numpy integer arithmetic wraps


def reduce_ref(x, dims, init, op, t):
    keep = [d for d in range(x.ndim) if d not in dims]
    xt = np.transpose(x, keep + sorted(dims))
    out_shape = [x.shape[d] for d in keep]
    k = kt.nelems([x.shape[d] for d in dims])
    flat = xt.reshape(out_shape + [k])
    acc = np.full(out_shape, init, dtype=kt.np_dtype(t))
    for i in range(k):
        acc = apply_op(op, acc, flat[..., i], t)
    return np.asarray(acc, dtype=kt.np_dtype(t)).reshape(out_shape)


def reduce_tol(op, t, x, dims):
    if not kt.is_float(t):
        return EXACT
    if op in ('maximum', 'minimum'):
        # Which of -0 and +0 a max/min keeps depends on the order of application,
        # which reductions leave to the implementation.
        return kt.EXACT_ANY_ZERO
    k = kt.nelems([x.shape[d] for d in dims])
    if op == 'add':
        return kt.float_sum_tol(t, k, reduce_ref(np.abs(x).astype(np.float64), dims, 0.0, 'add', 'f64'))
    u = kt.UNIT_ROUNDOFF[t]
    return kt.CLOSE((k + 2) * u, 2.0 ** (kt.MIN_EXP[t] - kt.MANT_BITS[t]))


def reduce_inputs(op, t, shape):
    if t == 'pred':
        return g.array('pred', shape)
    if op == 'multiply':
        if kt.is_float(t):
            # Factors near 1 keep long products away from overflow and underflow.
            return g.array(t, shape, special=False, lo=0.5, hi=2.0) * kt.storage(
                np.where(g.rng.integers(0, 2, shape) == 1, -1.0, 1.0), t)
        return g.array(t, shape)
    if op == 'add' and kt.is_float(t):
        return g.array(t, shape, special=False)
    return g.array(t, shape)


def add_reduce():
    shapes_dims = [((7,), [0]), ((3, 5), [1]), ((3, 5), [0]), ((3, 5), [0, 1]), ((3, 5), []),
                   ((2, 3, 4), [0, 2]), ((2, 3, 4), [1]), ((2, 3, 4), [2, 0, 1]),
                   ((2, 3, 2, 3), [1, 3]), ((3, 0), [1]), ((0, 4), [1]), ((0, 4), [0]), ((), []),
                   ((50,), [0]), ((4, 40), [1])]
    ops_types = [('add', kt.INTS + kt.FLOATS), ('multiply', kt.INTS + kt.FLOATS),
                 ('maximum', kt.INTS + kt.FLOATS), ('minimum', kt.INTS + kt.FLOATS),
                 ('and', ['pred'] + kt.INTS), ('or', ['pred'] + kt.INTS)]
    k = 0
    for op, types in ops_types:
        for t in types:
            for j in range(3):
                shape, dims = shapes_dims[k % len(shapes_dims)]
                k += 1
                x = reduce_inputs(op, t, shape)
                init = identity(op, t)
                out_shape = [shape[d] for d in range(len(shape)) if d not in dims]
                c = kt.Case('reduce/%s/%s/%s/dims%s' % (op, t, sname(shape),
                                                       ''.join(map(str, dims)) or '_none'))
                px = c.param(x, t)
                initv = kt.storage(init, t) if t != 'pred' else np.array(init)
                pinit = c.constant(initv, t) if j % 2 else c.param(np.asarray(initv), t)
                comp = c.use(kt.binary_comp(op, t))
                r = c.op('reduce', S(t, out_shape), [px, pinit],
                         'dimensions=%s, to_apply=%%%s' % (kt.ints_attr(dims), comp.name))
                c.out(r, reduce_ref(x, dims, initv, op, t), reduce_tol(op, t, x, dims))
                suite.add(c)


def argmax_comp(t, it):
    """(v0, i0, v1, i1) -> the larger value with its index; ties pick the smaller index."""
    def build(cm):
        a = cm.param(S(t))
        ai = cm.param(S(it))
        b = cm.param(S(t))
        bi = cm.param(S(it))
        gt = cm.op('compare', S('pred'), [a, b], 'direction=GT')
        eq = cm.op('compare', S('pred'), [a, b], 'direction=EQ')
        lt = cm.op('compare', S('pred'), [ai, bi], 'direction=LT')
        tie = cm.op('and', S('pred'), [eq, lt])
        pick = cm.op('or', S('pred'), [gt, tie])
        v = cm.op('select', S(t), [pick, a, b])
        i = cm.op('select', S(it), [pick, ai, bi])
        return cm.op('tuple', kt.Shape.tuple([S(t), S(it)]), [v, i])
    return kt.shared('argmax_%s_%s' % (t, it), build)


def add_argmax():
    k = 0
    for t in ['f32', 'f64', 'f16', 'bf16', 's32', 'u8', 's64']:
        for shape, dim in [((12,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 5), 2), ((3, 0), 1)]:
            k += 1
            it = 's32' if k % 2 else 's64'
            c = kt.Case('reduce/argmax/%s_%s/%s/dim%d' % (t, it, sname(shape), dim))
            # Values from a small pool: ties are common, so the index tie-break matters.
            pool = kt.storage([1.0, 2.0, 3.0, -1.0, 7.0, 7.0], t) if kt.is_float(t) else \
                np.array([1, 2, 3, 7, 7, 0], dtype=kt.np_dtype(t))
            x = pool[g.rng.integers(0, len(pool), size=shape)]
            out_shape = [n for d, n in enumerate(shape) if d != dim]
            comp = c.use(argmax_comp(t, it))
            px = c.param(x, t)
            iota = c.op('iota', S(it, shape), [], 'iota_dimension=%d' % dim)
            lowest = kt.storage(-math.inf, t) if kt.is_float(t) else np.array(kt.int_range(t)[0], dtype=kt.np_dtype(t))
            vinit = c.constant(lowest, t)
            iinit = c.constant(np.array(-1, dtype=kt.np_dtype(it)), it)
            tup = kt.Shape.tuple([S(t, out_shape), S(it, out_shape)])
            r = c.op('reduce', tup, [px, iota, vinit, iinit],
                     'dimensions={%d}, to_apply=%%%s' % (dim, comp.name))
            v = c.op('get-tuple-element', S(t, out_shape), [r], 'index=0')
            i = c.op('get-tuple-element', S(it, out_shape), [r], 'index=1')
            if shape[dim] == 0:
                ev = np.full(out_shape, lowest, dtype=kt.np_dtype(t))
                ei = np.full(out_shape, -1, dtype=kt.np_dtype(it))
            else:
                ev = np.max(x, axis=dim).astype(kt.np_dtype(t))
                ei = np.argmax(x, axis=dim).astype(kt.np_dtype(it))   # first maximum
            c.out(v, ev)
            c.out(i, ei)
            suite.add(c)


def sum_and_max_comp():
    """Variadic reducer over (f32, s32): sums the f32s, takes the max of the s32s."""
    def build(cm):
        a = cm.param(S('f32'))
        ai = cm.param(S('s32'))
        b = cm.param(S('f32'))
        bi = cm.param(S('s32'))
        s = cm.op('add', S('f32'), [a, b])
        m = cm.op('maximum', S('s32'), [ai, bi])
        return cm.op('tuple', kt.Shape.tuple([S('f32'), S('s32')]), [s, m])
    return kt.shared('sum_f32_max_s32', build)


def add_variadic_two_accumulators():
    for shape, dims in [((5, 6), [1]), ((2, 3, 4), [0, 2]), ((4,), [0]), ((3, 2), [])]:
        c = kt.Case('reduce/variadic_sum_max/%s/dims%s' % (sname(shape), ''.join(map(str, dims)) or '_none'))
        x = g.array('f32', shape, special=False)
        y = g.array('s32', shape)
        out_shape = [n for d, n in enumerate(shape) if d not in dims]
        comp = c.use(sum_and_max_comp())
        tup = kt.Shape.tuple([S('f32', out_shape), S('s32', out_shape)])
        r = c.op('reduce', tup, [c.param(x, 'f32'), c.param(y, 's32'),
                                 c.constant(np.float32(0), 'f32'),
                                 c.constant(np.int32(kt.int_range('s32')[0]), 's32')],
                 'dimensions=%s, to_apply=%%%s' % (kt.ints_attr(dims), comp.name))
        c.out(c.op('get-tuple-element', S('f32', out_shape), [r], 'index=0'),
              reduce_ref(x, dims, np.float32(0), 'add', 'f32'), reduce_tol('add', 'f32', x, dims))
        c.out(c.op('get-tuple-element', S('s32', out_shape), [r], 'index=1'),
              reduce_ref(y, dims, np.int32(kt.int_range('s32')[0]), 'maximum', 's32'))
        suite.add(c)


# --------------------------------------------------------------------------------------
# reduce-window

def window_positions(in_shape, size, stride, pad, base_dil, win_dil):
    """Output shape and, for every output index, the list of operand indices (row-major
    over the window) that fall on real elements (not padding, not dilation holes)."""
    rank = len(in_shape)
    dil = [(n - 1) * b + 1 if n > 0 else 0 for n, b in zip(in_shape, base_dil)]
    padded = [d + lo + hi for d, (lo, hi) in zip(dil, pad)]
    eff = [(w - 1) * wd + 1 for w, wd in zip(size, win_dil)]
    out_shape = tuple(max(0, (p - e) // s + 1) if p >= e else 0
                      for p, e, s in zip(padded, eff, stride))
    result = {}
    for o in np.ndindex(*out_shape):
        elems = []
        for k in np.ndindex(*size):
            idx = []
            ok = True
            for d in range(rank):
                pos = o[d] * stride[d] + k[d] * win_dil[d] - pad[d][0]
                if pos < 0 or pos % base_dil[d] != 0:
                    ok = False
                    break
                q = pos // base_dil[d]
                if q >= in_shape[d]:
                    ok = False
                    break
                idx.append(q)
            if ok:
                elems.append(tuple(idx))
        result[o] = elems
    return out_shape, result


def reduce_window_ref(x, init, op, t, size, stride, pad, base_dil, win_dil):
    out_shape, pos = window_positions(x.shape, size, stride, pad, base_dil, win_dil)
    out = np.full(out_shape, init, dtype=kt.np_dtype(t))
    mag = np.zeros(out_shape)
    counts = np.zeros(out_shape, dtype=np.int64)
    for o, elems in pos.items():
        acc = np.full((), init, dtype=kt.np_dtype(t))
        for e in elems:
            acc = apply_op(op, acc, np.asarray(x[e]), t)
            if kt.is_float(t) and op == 'add':
                mag[o] += abs(float(x[e]))
        out[o] = acc
        counts[o] = len(elems)
    return out, mag, int(counts.max()) if counts.size else 0


def add_reduce_window():
    configs = [
        # (shape, size, stride, pad, base_dilation, window_dilation)
        ((4, 6), (2, 3), (2, 3), ((0, 0), (0, 0)), (1, 1), (1, 1)),
        ((5, 5), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)),
        ((5, 7), (2, 2), (2, 2), ((0, 1), (1, 0)), (1, 1), (1, 1)),
        ((1, 6, 6, 2), (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)), (1, 1, 1, 1), (1, 1, 1, 1)),
        ((2, 3, 5, 5), (1, 1, 2, 2), (1, 1, 1, 1), ((0, 0), (0, 0), (0, 1), (0, 1)), (1, 1, 1, 1), (1, 1, 1, 1)),
        ((9,), (3,), (2,), ((1, 2),), (1,), (2,)),
        ((4, 4), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2), (1, 1)),
        ((3, 5), (2, 3), (1, 2), ((1, 0), (2, 2)), (2, 1), (1, 2)),
        ((6,), (6,), (1,), ((0, 0),), (1,), (1,)),
        ((7,), (2,), (3,), ((2, 2),), (3,), (1,)),
        ((2, 0), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
        ((3, 3), (4, 4), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),   # window larger: empty output
        ((2, 3, 4), (2, 2, 2), (1, 2, 1), ((0, 1), (1, 1), (0, 0)), (1, 2, 1), (2, 1, 1)),
    ]
    k = 0
    for ci, (shape, size, stride, pad, bd, wd) in enumerate(configs):
        for op, t in [('maximum', ['f32', 'f16', 's32', 'u8', 'f64', 'bf16'][ci % 6]),
                      ('add', ['f32', 's64', 'bf16', 'f64', 's8', 'f16'][ci % 6]),
                      ('minimum', ['s16', 'f32', 'u32', 'f16'][ci % 4])]:
            k += 1
            x = g.array(t, shape, special=(op != 'add'))
            init = kt.storage(identity(op, t), t) if kt.is_float(t) else np.array(identity(op, t), dtype=kt.np_dtype(t))
            exp, mag, terms = reduce_window_ref(x, init, op, t, size, stride, pad, bd, wd)
            tol = EXACT if not kt.is_float(t) else kt.EXACT_ANY_ZERO
            if op == 'add' and kt.is_float(t):
                tol = kt.float_sum_tol(t, terms, mag)
            c = kt.Case('reduce-window/%s/%s/%s/%d' % (op, t, sname(shape), ci))
            comp = c.use(kt.binary_comp(op, t))
            pinit = c.constant(init, t) if k % 2 else c.param(init, t)
            r = c.op('reduce-window', S(t, exp.shape), [c.param(x, t), pinit],
                     '%s, to_apply=%%%s' % (kt.window_attr(size, stride, pad, bd, wd), comp.name))
            c.out(r, exp, tol)
            suite.add(c)


def add_reduce_window_variadic():
    # Two operands reduced together: (sum of f32, max of s32) over 2x2 windows.
    shape, size, stride = (4, 5), (2, 2), (1, 2)
    pad = ((0, 0), (0, 0))
    c = kt.Case('reduce-window/variadic_sum_max/4x5')
    x = g.array('f32', shape, special=False)
    y = g.array('s32', shape)
    ex, mag, terms = reduce_window_ref(x, np.float32(0), 'add', 'f32', size, stride, pad, (1, 1), (1, 1))
    ey, _, _ = reduce_window_ref(y, np.int32(kt.int_range('s32')[0]), 'maximum', 's32', size, stride, pad, (1, 1), (1, 1))
    comp = c.use(sum_and_max_comp())
    tup = kt.Shape.tuple([S('f32', ex.shape), S('s32', ey.shape)])
    r = c.op('reduce-window', tup, [c.param(x, 'f32'), c.param(y, 's32'),
                                    c.constant(np.float32(0), 'f32'),
                                    c.constant(np.int32(kt.int_range('s32')[0]), 's32')],
             '%s, to_apply=%%%s' % (kt.window_attr(size, stride), comp.name))
    c.out(c.op('get-tuple-element', S('f32', ex.shape), [r], 'index=0'), ex, kt.float_sum_tol('f32', terms, mag))
    c.out(c.op('get-tuple-element', S('s32', ey.shape), [r], 'index=1'), ey)
    suite.add(c)


# --------------------------------------------------------------------------------------
# select-and-scatter

SELECT_FNS = {'GE': lambda a, b: a >= b, 'GT': lambda a, b: a > b,
              'LE': lambda a, b: a <= b, 'LT': lambda a, b: a < b}


def select_and_scatter_ref(x, source, init, direction, size, stride, pad, t):
    out_shape, pos = window_positions(x.shape, size, stride, pad, (1,) * x.ndim, (1,) * x.ndim)
    assert out_shape == source.shape, (out_shape, source.shape)
    out = np.full(x.shape, init, dtype=kt.np_dtype(t))
    sel = SELECT_FNS[direction]
    for o, elems in pos.items():
        chosen = None
        for e in elems:
            # select(current, candidate) true keeps the current selection.
            if chosen is None or not sel(x[chosen], x[e]):
                chosen = e
        if chosen is not None:
            out[chosen] = apply_op('add', np.asarray(out[chosen]), np.asarray(source[o]), t)
    return out


def add_select_and_scatter():
    configs = [
        ((4, 6), (2, 3), (2, 3), ((0, 0), (0, 0))),
        ((5, 5), (3, 3), (1, 1), ((1, 1), (1, 1))),
        ((1, 6, 6, 2), (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0))),
        ((7,), (3,), (2,), ((1, 1),)),
        ((4, 4), (2, 2), (1, 1), ((0, 0), (0, 0))),
        ((3, 5), (2, 2), (1, 2), ((1, 0), (0, 1))),
        ((2, 3, 4), (2, 2, 2), (1, 1, 2), ((0, 0), (0, 1), (1, 0))),
        ((0, 3), (1, 2), (1, 1), ((0, 0), (0, 0))),
    ]
    k = 0
    for ci, (shape, size, stride, pad) in enumerate(configs):
        for direction in ('GE', 'GT', 'LE'):
            t = ['f32', 's32', 'f16', 'bf16', 'f64', 'u16', 's8'][k % 7]
            k += 1
            # Few distinct operand values so windows contain ties; small integer sources
            # so the scattered sums are exact in every type.
            pool = kt.storage([1.0, 2.0, 5.0, -3.0, 5.0], t) if kt.is_float(t) else \
                np.array([1, 2, 5, 3, 5], dtype=kt.np_dtype(t))
            x = pool[g.rng.integers(0, len(pool), size=shape)]
            out_shape, _ = window_positions(shape, size, stride, pad, (1,) * len(shape), (1,) * len(shape))
            src = kt.storage(g.rng.integers(0, 9, size=out_shape).astype(np.float64), t) if kt.is_float(t) \
                else g.rng.integers(0, 9, size=out_shape).astype(kt.np_dtype(t))
            init = kt.storage(0.0, t) if kt.is_float(t) else np.array(0, dtype=kt.np_dtype(t))
            exp = select_and_scatter_ref(x, src, init, direction, size, stride, pad, t)
            c = kt.Case('select-and-scatter/%s/%s/%s/%d' % (direction, t, sname(shape), ci))
            sel = c.use(kt.compare_comp(direction, t))
            sca = c.use(kt.binary_comp('add', t))
            r = c.op('select-and-scatter', S(t, shape),
                     [c.param(x, t), c.param(src, t), c.constant(init, t)],
                     '%s, select=%%%s, scatter=%%%s' % (kt.window_attr(size, stride, pad), sel.name, sca.name))
            c.out(r, exp)
            suite.add(c)


# --------------------------------------------------------------------------------------
# Random configurations.

def add_random_reduces(count):
    ops = ['add', 'maximum', 'minimum', 'multiply', 'and', 'or']
    for n in range(count):
        rank = g.randint(0, 4)
        shape = tuple(g.randint(0 if n % 11 == 0 else 1, 4) for _ in range(rank))
        dims = sorted(d for d in range(rank) if g.randint(0, 1))
        op = ops[n % len(ops)]
        t = (kt.INTS + kt.FLOATS)[(n * 7) % 12] if op not in ('and', 'or') else (['pred'] + kt.INTS)[n % 9]
        x = reduce_inputs(op, t, shape)
        init = kt.storage(identity(op, t), t) if t != 'pred' else np.array(identity(op, t))
        c = kt.Case('reduce/random/%d/%s/%s/%s/dims%s' % (n, op, t, sname(shape), ''.join(map(str, dims)) or '_none'))
        comp = c.use(kt.binary_comp(op, t))
        r = c.op('reduce', S(t, [shape[d] for d in range(rank) if d not in dims]), [c.param(x, t), c.constant(init, t)],
                 'dimensions=%s, to_apply=%%%s' % (kt.ints_attr(dims), comp.name))
        c.out(r, reduce_ref(x, dims, init, op, t), reduce_tol(op, t, x, dims))
        suite.add(c)


def add_random_reduce_windows(count):
    for n in range(count):
        rank = g.randint(1, 3)
        shape = [g.randint(1, 6) for _ in range(rank)]
        size = [g.randint(1, 3) for _ in range(rank)]
        stride = [g.randint(1, 3) for _ in range(rank)]
        bd = [g.randint(1, 2) for _ in range(rank)]
        wd = [g.randint(1, 2) for _ in range(rank)]
        while True:
            # Negative padding crops the (dilated) base area.
            pad = [(g.randint(-1, 2), g.randint(-1, 2)) for _ in range(rank)]
            if all((s - 1) * b + 1 + lo + hi >= 0 for s, b, (lo, hi) in zip(shape, bd, pad)):
                break
        op = ['maximum', 'add', 'minimum'][n % 3]
        t = ['f32', 's32', 'f16', 'bf16', 'f64', 'u8', 's64', 'u16'][n % 8]
        x = g.array(t, shape, special=(op != 'add'))
        init = kt.storage(identity(op, t), t) if kt.is_float(t) else np.array(identity(op, t), dtype=kt.np_dtype(t))
        exp, mag, terms = reduce_window_ref(x, init, op, t, size, stride, pad, bd, wd)
        tol = kt.float_sum_tol(t, terms, mag) if (op == 'add' and kt.is_float(t)) else \
            (kt.EXACT_ANY_ZERO if kt.is_float(t) else EXACT)
        c = kt.Case('reduce-window/random/%d/%s/%s/%s' % (n, op, t, sname(shape)))
        comp = c.use(kt.binary_comp(op, t))
        r = c.op('reduce-window', S(t, exp.shape), [c.param(x, t), c.constant(init, t)],
                 '%s, to_apply=%%%s' % (kt.window_attr(size, stride, pad, bd, wd), comp.name))
        c.out(r, exp, tol)
        suite.add(c)


def add_random_select_and_scatter(count):
    for n in range(count):
        rank = g.randint(1, 3)
        shape = [g.randint(1, 6) for _ in range(rank)]
        size = [g.randint(1, min(3, s + 1)) for s in shape]
        stride = [g.randint(1, 3) for _ in range(rank)]
        pad = [(g.randint(0, 1), g.randint(0, 1)) for _ in range(rank)]
        direction = ['GE', 'GT', 'LE', 'LT'][n % 4]
        t = ['f32', 's32', 'f16', 'bf16', 'f64', 'u8', 's16'][n % 7]
        pool = kt.storage([1.0, 2.0, 5.0, -3.0, 5.0, 0.5], t) if kt.is_float(t) else \
            np.array([1, 2, 5, 3, 5, 0], dtype=kt.np_dtype(t))
        x = pool[g.rng.integers(0, len(pool), size=shape)]
        out_shape, _ = window_positions(shape, size, stride, pad, (1,) * rank, (1,) * rank)
        src = kt.storage(g.rng.integers(0, 9, size=out_shape).astype(np.float64), t) if kt.is_float(t) \
            else g.rng.integers(0, 9, size=out_shape).astype(kt.np_dtype(t))
        init = kt.storage(0.0, t) if kt.is_float(t) else np.array(0, dtype=kt.np_dtype(t))
        exp = select_and_scatter_ref(x, src, init, direction, size, stride, pad, t)
        c = kt.Case('select-and-scatter/random/%d/%s/%s/%s' % (n, direction, t, sname(shape)))
        sel = c.use(kt.compare_comp(direction, t))
        sca = c.use(kt.binary_comp('add', t))
        r = c.op('select-and-scatter', S(t, shape), [c.param(x, t), c.param(src, t), c.constant(init, t)],
                 '%s, select=%%%s, scatter=%%%s' % (kt.window_attr(size, stride, pad), sel.name, sca.name))
        c.out(r, exp)
        suite.add(c)


add_reduce()
add_argmax()
add_variadic_two_accumulators()
add_reduce_window()
add_reduce_window_variadic()
add_select_and_scatter()
add_random_reduces(300)
add_random_reduce_windows(300)
add_random_select_and_scatter(150)

if __name__ == '__main__':
    sys.exit(suite.main())
