"""Data-movement ops of kiln's evaluator against numpy: broadcast, reshape, transpose
(random permutations), slice (with strides), dynamic-slice and dynamic-update-slice
(start indices of every integer type, in range, negative and too large -- XLA clamps
them so the slice stays inside the operand), concatenate (2-4 operands along each
dimension, zero-size operands), pad (negative edge padding, interior padding), reverse,
iota (each dimension, each type), bitcast, constants of every type (special values and
NaN payloads in XLA's spelling), ranks up to 11, million-element arrays, and chains of
ops whose parameters, instructions and outputs carry non-default layouts (values are
logical whatever the layout).

Moving values never changes them, so every comparison is bit for bit (NaN payloads and
signs included).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S  # noqa: E402

g = kt.Gen(31337)
# Moving values must keep their bits, NaN payloads and signs included.
kt.Case.default_tol = kt.BITWISE
suite = kt.Suite('kiln evaluator: data movement vs numpy')
TYPES = kt.ALL_TYPES


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


def type_for(i):
    return TYPES[i % len(TYPES)]


def rand_shape(rank, lo=0, hi=4):
    return tuple(g.randint(lo, hi) for _ in range(rank))


# --------------------------------------------------------------------------------------

def add_broadcast():
    configs = [((), (2, 3), ()), ((3,), (2, 3), (1,)), ((2,), (2, 3), (0,)),
               ((2, 3), (4, 2, 5, 3), (1, 3)), ((2, 3), (2, 3), (0, 1)),
               ((0, 3), (2, 0, 3), (1, 2)), ((3,), (3, 0), (0,)),
               ((2, 3, 4), (2, 5, 3, 4), (0, 2, 3)), ((), (), ()), ((5,), (5, 1, 2), (0,)),
               ((1,), (3, 1), (1,)), ((2, 2), (2, 3, 2, 1), (0, 2))]
    for i, (src, dst, dims) in enumerate(configs):
        for j in range(2):
            t = type_for(i * 2 + j)
            c = kt.Case('broadcast/%s/%s_to_%s/%d' % (t, sname(src), sname(dst), j))
            x = g.array(t, src)
            r = c.op('broadcast', S(t, dst), [c.param(x, t)], 'dimensions=' + kt.ints_attr(dims))
            shaped = [1] * len(dst)
            for k, d in enumerate(dims):
                shaped[d] = src[k]
            c.out(r, np.broadcast_to(x.reshape(shaped), dst).copy())
            suite.add(c)


def add_reshape():
    configs = [((2, 3), (6,)), ((6,), (3, 2)), ((2, 3, 4), (4, 6)), ((2, 3, 4), (2, 12)),
               ((1, 1), ()), ((), (1, 1, 1)), ((4, 1, 3), (3, 4)), ((0, 4), (2, 0)),
               ((24,), (2, 3, 2, 2)), ((2, 3, 1, 4), (1, 6, 4, 1)), ((5,), (5,)),
               ((3, 0, 2), (0,)), ((2, 2, 2, 2, 2), (4, 8))]
    for i, (src, dst) in enumerate(configs):
        for j in range(2):
            t = type_for(i * 3 + j)
            c = kt.Case('reshape/%s/%s_to_%s' % (t, sname(src), sname(dst)))
            x = g.array(t, src)
            c.out(c.op('reshape', S(t, dst), [c.param(x, t)]), x.reshape(dst))
            suite.add(c)


def add_transpose():
    for i in range(40):
        rank = 1 + i % 5
        shape = rand_shape(rank, 1, 4)
        if i % 9 == 4:
            shape = shape[:-1] + (0,)
        perm = g.perm(rank)
        t = type_for(i)
        c = kt.Case('transpose/%s/%s/perm%s' % (t, sname(shape), ''.join(map(str, perm))))
        x = g.array(t, shape)
        out_dims = tuple(shape[p] for p in perm)
        r = c.op('transpose', S(t, out_dims), [c.param(x, t)], 'dimensions=' + kt.ints_attr(perm))
        c.out(r, np.transpose(x, perm).copy())
        suite.add(c)


def add_slice():
    for i in range(45):
        rank = 1 + i % 4
        shape = rand_shape(rank, 1, 7)
        if i % 11 == 5:
            shape = (0,) + shape[1:]
        starts, limits, strides = [], [], []
        for n in shape:
            a = g.randint(0, n)
            b = g.randint(a, n)
            starts.append(a)
            limits.append(b)
            strides.append(g.randint(1, 3))
        t = type_for(i)
        x = g.array(t, shape)
        exp = x[tuple(slice(a, b, s) for a, b, s in zip(starts, limits, strides))].copy()
        c = kt.Case('slice/%s/%s/%d' % (t, sname(shape), i))
        r = c.op('slice', S(t, exp.shape), [c.param(x, t)], kt.slice_attr(starts, limits, strides))
        c.out(r, exp)
        suite.add(c)


def index_value(t, want):
    """A start index of type t close to `want` (negative wants become huge for unsigned
    types, which XLA reads as unsigned and clamps to the top)."""
    lo, hi = kt.int_range(t)
    return max(lo, min(hi, want)) if kt.is_signed(t) else (want % (hi + 1))


def clamp_start(v, n, size):
    return max(0, min(int(v), n - size))


def add_dynamic_slice():
    i = 0
    for it in kt.INTS:
        for j in range(5):
            i += 1
            rank = 1 + (i % 3)
            shape = rand_shape(rank, 1, 6)
            sizes = [g.randint(0 if (i % 7 == 0) else 1, n) for n in shape]
            starts = [index_value(it, g.randint(-3, n + 3)) for n in shape]
            if j == 4:
                lo, hi = kt.int_range(it)
                starts = [hi if k % 2 else lo for k in range(rank)]
            t = type_for(i)
            x = g.array(t, shape)
            eff = [clamp_start(s, n, z) for s, n, z in zip(starts, shape, sizes)]
            exp = x[tuple(slice(e, e + z) for e, z in zip(eff, sizes))].copy()
            c = kt.Case('dynamic-slice/%s/idx_%s/%s/%d' % (t, it, sname(shape), j))
            ops = [c.param(x, t)]
            for s in starts:
                ops.append(c.param(np.array(s, dtype=kt.np_dtype(it)), it))
            r = c.op('dynamic-slice', S(t, sizes), ops, 'dynamic_slice_sizes=' + kt.ints_attr(sizes))
            c.out(r, exp)
            suite.add(c)
    # Rank 0: no start indices at all.
    c = kt.Case('dynamic-slice/f32/scalar')
    x = g.array('f32', ())
    c.out(c.op('dynamic-slice', S('f32'), [c.param(x, 'f32')], 'dynamic_slice_sizes={}'), x.copy())
    suite.add(c)


def add_dynamic_update_slice():
    i = 0
    for it in kt.INTS:
        for j in range(5):
            i += 1
            rank = 1 + (i % 3)
            shape = rand_shape(rank, 1, 6)
            usizes = [g.randint(1, n) for n in shape]
            starts = [index_value(it, g.randint(-3, n + 3)) for n in shape]
            if j == 4:
                lo, hi = kt.int_range(it)
                starts = [lo if k % 2 else hi for k in range(rank)]
            t = type_for(i + 5)
            x = g.array(t, shape)
            u = g.array(t, usizes)
            eff = [clamp_start(s, n, z) for s, n, z in zip(starts, shape, usizes)]
            exp = x.copy()
            exp[tuple(slice(e, e + z) for e, z in zip(eff, usizes))] = u
            c = kt.Case('dynamic-update-slice/%s/idx_%s/%s/%d' % (t, it, sname(shape), j))
            ops = [c.param(x, t), c.param(u, t)]
            for s in starts:
                ops.append(c.param(np.array(s, dtype=kt.np_dtype(it)), it))
            c.out(c.op('dynamic-update-slice', S(t, shape), ops), exp)
            suite.add(c)


def add_concatenate():
    i = 0
    for nops in (1, 2, 3, 4):
        for rank in (1, 2, 3, 4):
            for d in range(rank):
                i += 1
                if nops == 1 and d > 0:
                    continue
                base = list(rand_shape(rank, 1, 3))
                t = type_for(i)
                xs = []
                for k in range(nops):
                    s = list(base)
                    s[d] = g.randint(0, 3) if (i + k) % 4 == 0 else g.randint(1, 3)
                    xs.append(g.array(t, s))
                exp = np.concatenate(xs, axis=d)
                c = kt.Case('concatenate/%s/%dops/rank%d/dim%d' % (t, nops, rank, d))
                ps = [c.param(x, t) for x in xs]
                r = c.op('concatenate', S(t, exp.shape), ps, 'dimensions={%d}' % d)
                c.out(r, exp)
                suite.add(c)


def pad_ref(x, value, lo, hi, interior):
    # Input element i of a dimension lands at lo + i * (interior + 1) of the output (of
    # size lo + hi + n + (n - 1) * interior); elements landing outside are dropped,
    # every other output element is the padding value.
    sizes = [a + b + n + max(n - 1, 0) * e for a, b, n, e in zip(lo, hi, x.shape, interior)]
    out = np.full(sizes, value, dtype=x.dtype)
    src_idx, dst_idx = [], []
    for d, n in enumerate(x.shape):
        tgt = lo[d] + np.arange(n) * (interior[d] + 1)
        keep = (tgt >= 0) & (tgt < sizes[d])
        src_idx.append(np.arange(n)[keep])
        dst_idx.append(tgt[keep])
    out[np.ix_(*dst_idx)] = x[np.ix_(*src_idx)]
    return out


def add_pad():
    for i in range(48):
        rank = [1, 2, 3, 4][i % 4]  # a rank-0 pad has no text form in XLA
        shape = rand_shape(rank, 0 if i % 5 == 0 else 1, 4)
        while True:
            lo = [g.randint(-2, 3) for _ in shape]
            hi = [g.randint(-2, 3) for _ in shape]
            interior = [g.randint(0, 2) if i % 3 else 0 for _ in shape]
            sizes = [a + b + n + max(n - 1, 0) * e for a, b, n, e in zip(lo, hi, shape, interior)]
            if all(s >= 0 for s in sizes):
                break
        t = type_for(i)
        x = g.array(t, shape)
        v = g.array(t, ())
        exp = pad_ref(x, v[()], lo, hi, interior)
        c = kt.Case('pad/%s/%s/%d' % (t, sname(shape), i))
        pv = c.constant(v, t) if i % 2 else c.param(v, t)
        r = c.op('pad', S(t, exp.shape), [c.param(x, t), pv], kt.padding_attr(lo, hi, interior))
        c.out(r, exp)
        suite.add(c)


def add_reverse():
    for i in range(30):
        rank = i % 5
        shape = rand_shape(rank, 1, 4)
        if i % 8 == 3 and rank:
            shape = (0,) + shape[1:]
        dims = [d for d in range(rank) if g.randint(0, 1)]
        t = type_for(i)
        x = g.array(t, shape)
        exp = np.flip(x, axis=tuple(dims)).copy() if dims else x.copy()
        c = kt.Case('reverse/%s/%s/dims%s' % (t, sname(shape), ''.join(map(str, dims)) or '_none'))
        r = c.op('reverse', S(t, shape), [c.param(x, t)], 'dimensions=' + kt.ints_attr(dims))
        c.out(r, exp)
        suite.add(c)


def add_iota():
    i = 0
    for t in kt.INTS + kt.FLOATS:
        for shape in [(5,), (3, 4), (2, 3, 4), (0, 3)]:
            for d in range(len(shape)):
                i += 1
                if len(shape) == 3 and d != i % 3:
                    continue
                c = kt.Case('iota/%s/%s/dim%d' % (t, sname(shape), d))
                idx = np.indices(shape)[d] if shape else np.zeros(())
                exp = kt.storage(idx.astype(np.float64), t) if kt.is_float(t) else idx.astype(kt.np_dtype(t))
                # iota has no operands; the case still needs a parameter-free output.
                c.out(c.op('iota', S(t, shape), [], 'iota_dimension=%d' % d), exp)
                suite.add(c)
    # A long iota whose values are not all exact in f16 / bf16 (they round to nearest).
    for t in ('f16', 'bf16'):
        c = kt.Case('iota/%s/long' % t)
        exp = kt.round_to(np.arange(3000, dtype=np.float64), t)
        c.out(c.op('iota', S(t, (3000,)), [], 'iota_dimension=0'), exp)
        suite.add(c)


def add_constants():
    for i, t in enumerate(TYPES):
        for shape in [(), (4,), (2, 3), (0, 2), (3, 5)]:
            c = kt.Case('constant/%s/%s' % (t, sname(shape)))
            x = g.array(t, shape)
            c.out(c.constant(x, t), x.copy())
            suite.add(c)
    # Every special float value, NaN payloads and signs included (XLA spells them
    # -nan, nan(0x...)), must come out of a constant bit for bit.
    for t in kt.FLOATS:
        c = kt.Case('constant/%s/specials' % t)
        x = np.concatenate([kt.round_to(kt.special_floats(t), t),
                            np.array(kt.payload_nans(t), dtype=kt.np_dtype(t))])
        c.out(c.constant(x, t), x.copy())
        suite.add(c)
    for t in kt.INTS:
        c = kt.Case('constant/%s/extremes' % t)
        lo, hi = kt.int_range(t)
        x = kt.wrap_int([lo, hi, 0, -1, 1, lo + 1, hi - 1], t)
        c.out(c.constant(x, t), x.copy())
        suite.add(c)


# --------------------------------------------------------------------------------------
# Layouts: a layout is only the physical order of a shape's elements; values are logical.
# Chains of ops whose instructions (and parameters / outputs) carry non-default
# minor-to-major layouts must give the same logical results as with default layouts.

def rand_layout(rank):
    return g.perm(rank)


def add_layouts():
    for n in range(12):
        t = ['f32', 's32', 'f64', 'u8', 'bf16', 's64', 'f16', 'u16', 'pred', 's8', 'u32', 'u64'][n]
        c = kt.Case('layout/chain/%d/%s' % (n, t))
        x = g.array(t, (2, 3, 4))
        px = c.param(x, t, layout=rand_layout(3) if n % 2 else None)
        t1 = c.op('transpose', kt.Shape(t, (4, 2, 3), layout=rand_layout(3)), [px], 'dimensions={2,0,1}')
        e1 = np.transpose(x, (2, 0, 1))
        if t == 'pred':
            t2, e2 = c.op('or', kt.Shape(t, (4, 2, 3), layout=rand_layout(3)), [t1, t1]), e1 | e1
        else:
            t2 = c.op('maximum', kt.Shape(t, (4, 2, 3), layout=rand_layout(3)), [t1, t1])
            e2 = np.maximum(e1, e1)
        t3 = c.op('reshape', kt.Shape(t, (8, 3), layout=(0, 1)), [t2])
        e3 = e2.reshape(8, 3)
        t6 = c.op('slice', kt.Shape(t, (3, 2), layout=(0, 1)), [t3], kt.slice_attr([0, 1], [5, 3], [2, 1]))
        e6 = e3[0:5:2, 1:3]
        t7 = c.op('concatenate', kt.Shape(t, (6, 2), layout=(0, 1)), [t6, t6], 'dimensions={0}')
        e7 = np.concatenate([e6, e6], axis=0)
        t8 = c.op('reverse', kt.Shape(t, (8, 3), layout=(0, 1)), [t3], 'dimensions={0}')
        t9 = c.op('copy', kt.Shape(t, (8, 3), layout=(1, 0)), [t8])
        e9 = e3[::-1]
        t10 = c.op('broadcast', kt.Shape(t, (2, 6, 2), layout=rand_layout(3)), [t7], 'dimensions={1,2}')
        e10 = np.broadcast_to(e7, (2, 6, 2))
        t11 = c.op('pad', kt.Shape(t, (10, 5), layout=(0, 1)), [t3, c.constant(x.reshape(-1)[0], t)],
                   kt.padding_attr([1, 0], [1, 2], [0, 0]))
        e11 = np.full((10, 5), x.reshape(-1)[0], dtype=x.dtype)
        e11[1:9, 0:3] = e3
        c.out(t3, e3.copy())
        c.out(t7, e7.copy())
        c.out(t9, e9.copy())
        c.out(t10, e10.copy())
        c.out(t11, e11)
        if t != 'pred':
            comp = c.use(kt.binary_comp('add', t))
            t4 = c.op('reduce', kt.Shape(t, (3,)), [t3, c.constant(np.zeros((), dtype=kt.np_dtype(t)), t)],
                      'dimensions={0}, to_apply=%%%s' % comp.name)
            with np.errstate(all='ignore'):
                if kt.is_float(t):
                    e4 = np.zeros(3)
                    for i in range(8):
                        e4 = kt.round_to(e4 + e3[i].astype(np.float64), t).astype(np.float64)
                    e4 = kt.round_to(e4, t)
                else:
                    e4 = e3.sum(axis=0, dtype=kt.np_dtype(t))
            tol = kt.float_sum_tol(t, 8, np.abs(e3.astype(np.float64)).sum(axis=0)) if kt.is_float(t) else kt.EXACT
            c.out(t4, e4.astype(kt.np_dtype(t)), tol)
        suite.add(c)
    # dot, iota, dynamic-slice and gather with non-default layouts everywhere.
    for n, t in enumerate(['f32', 's32', 'f64']):
        c = kt.Case('layout/dot_iota_gather/%s' % t)
        a = g.array(t, (3, 4), special=False) if kt.is_float(t) else g.array(t, (3, 4), lo=-50, hi=50)
        b = g.array(t, (4, 5), special=False) if kt.is_float(t) else g.array(t, (4, 5), lo=-50, hi=50)
        pa = c.param(a, t, layout=(0, 1))
        pb = c.param(b, t, layout=(0, 1))
        d = c.op('dot', kt.Shape(t, (3, 5), layout=(0, 1)), [pa, pb], 'lhs_contracting_dims={1}, rhs_contracting_dims={0}')
        if kt.is_float(t):
            exp = kt.round_to(a.astype(np.float64) @ b.astype(np.float64), t)
            tol = kt.float_sum_tol(t, 4, np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
        else:
            exp, tol = (a.astype(np.int64) @ b.astype(np.int64)).astype(kt.np_dtype(t)), kt.EXACT
        c.out(d, exp, tol)
        io = c.op('iota', kt.Shape('s32', (3, 4), layout=(0, 1)), [], 'iota_dimension=1')
        c.out(io, np.indices((3, 4))[1].astype(np.int32))
        i0 = c.param(np.int32(1), 's32')
        ds = c.op('dynamic-slice', kt.Shape(t, (2, 2), layout=(0, 1)), [pa, i0, i0], 'dynamic_slice_sizes={2,2}')
        c.out(ds, a[1:3, 1:3].copy())
        idx = np.array([2, 0, 1, 2], dtype=np.int32)
        gth = c.op('gather', kt.Shape(t, (4, 4), layout=(0, 1)), [pa, c.param(idx, 's32')],
                   'offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}')
        c.out(gth, a[idx].copy())
        suite.add(c)
    # bitcast with default layouts is a reshape of the row-major data.
    for n, (src_shape, dst_shape) in enumerate([((2, 3), (6,)), ((6,), (3, 2)), ((2, 3, 4), (4, 6)), ((1, 4), (4,))]):
        t = ['f32', 's8', 'u64', 'bf16'][n]
        c = kt.Case('bitcast/reshape_like/%s/%s_to_%s' % (t, sname(src_shape), sname(dst_shape)))
        x = g.array(t, src_shape)
        c.out(c.op('bitcast', S(t, dst_shape), [c.param(x, t)]), x.reshape(dst_shape))
        suite.add(c)


def add_high_rank():
    # Ranks up to 9 (HLO allows many more dimensions than numpy kernels usually see).
    for n in range(10):
        rank = 5 + n % 5
        shape = tuple(g.randint(1, 3) for _ in range(rank))
        t = type_for(n)
        x = g.array(t, shape)
        perm = g.perm(rank)
        c = kt.Case('high_rank/transpose/rank%d/%s' % (rank, t))
        c.out(c.op('transpose', S(t, tuple(shape[p] for p in perm)), [c.param(x, t)], 'dimensions=' + kt.ints_attr(perm)),
              np.transpose(x, perm).copy())
        suite.add(c)
        starts = [g.randint(0, s - 1) for s in shape]
        limits = [g.randint(a + 1, s) for a, s in zip(starts, shape)]
        strides = [g.randint(1, 2) for _ in shape]
        exp = x[tuple(slice(a, b, s) for a, b, s in zip(starts, limits, strides))].copy()
        c = kt.Case('high_rank/slice/rank%d/%s' % (rank, t))
        c.out(c.op('slice', S(t, exp.shape), [c.param(x, t)], kt.slice_attr(starts, limits, strides)), exp)
        suite.add(c)
        dims = sorted(d for d in range(rank) if g.randint(0, 1))
        c = kt.Case('high_rank/reverse/rank%d/%s' % (rank, t))
        c.out(c.op('reverse', S(t, shape), [c.param(x, t)], 'dimensions=' + kt.ints_attr(dims)),
              np.flip(x, axis=tuple(dims)).copy() if dims else x.copy())
        suite.add(c)
        out_shape = (2,) + shape[:2] + (3,) + shape[2:]
        bdims = [1, 2] + list(range(4, rank + 2))
        c = kt.Case('high_rank/broadcast/rank%d/%s' % (rank + 2, t))
        c.out(c.op('broadcast', S(t, out_shape), [c.param(x, t)], 'dimensions=' + kt.ints_attr(bdims)),
              np.broadcast_to(x.reshape((1,) + shape[:2] + (1,) + shape[2:]), out_shape).copy())
        suite.add(c)
        d = g.randint(0, rank - 1)
        y = g.array(t, shape)
        c = kt.Case('high_rank/concatenate/rank%d/dim%d/%s' % (rank, d, t))
        exp = np.concatenate([x, y], axis=d)
        c.out(c.op('concatenate', S(t, exp.shape), [c.param(x, t), c.param(y, t)], 'dimensions={%d}' % d), exp)
        suite.add(c)


def add_large_arrays():
    # A million elements through the data-movement paths.
    x = g.array('f32', (100, 100, 100), special=False)
    c = kt.Case('large/transpose_1m')
    c.out(c.op('transpose', S('f32', (100, 100, 100)), [c.param(x, 'f32')], 'dimensions={2,0,1}'),
          np.transpose(x, (2, 0, 1)).copy())
    suite.add(c)
    c = kt.Case('large/pad_reverse_1m')
    p = c.param(x, 'f32')
    r = c.op('reverse', S('f32', (100, 100, 100)), [p], 'dimensions={0,2}')
    z = c.constant(np.float32(0), 'f32')
    pd = c.op('pad', S('f32', (101, 100, 99)), [r, z], kt.padding_attr([1, 0, 0], [0, 0, -1], [0, 0, 0]))
    e = np.zeros((101, 100, 99), dtype=np.float32)
    e[1:, :, :] = x[::-1, :, ::-1][:, :, :99]
    c.out(pd, e)
    suite.add(c)


add_broadcast()
add_reshape()
add_transpose()
add_slice()
add_dynamic_slice()
add_dynamic_update_slice()
add_concatenate()
add_pad()
add_reverse()
add_iota()
add_constants()
add_layouts()
add_high_rank()
add_large_arrays()

if __name__ == '__main__':
    sys.exit(suite.main())
