"""scatter, select-and-scatter and variadic reduce-window on the cpu backend's native
kernels (src/backends/cpu/cpu_scatter.c), against numpy and against the interpreter.

Every pack runs on the interpreter and on cpu (kilntest's multi-device mode): both must
equal the numpy reference exactly, cpu must equal the interpreter bit for bit, and the
cpu run must not fall back to the evaluator. Values are mostly small integers, so sums
and products are exact in every type; what depends on order (overwrite with duplicate
indices, the first of tied maxima, float sums of duplicate rows) is fixed by the
semantics and the references follow it (numpy's add.at adds in index order, in f32).

scatter: add with duplicate indices, overwrite (unique, and duplicates where the last
update wins), multiply / maximum / minimum, a combiner that is no single op
(x + 2*y), windows that do not fit skipped whole (negative and too large starts),
index_vector_dim in the middle and implicit, update window dims before the scatter
dims, batching dims, a variadic scatter of two operands with an argmax combiner,
s64 / u8 / u64 indices (huge unsigned values are out of bounds), f16 / bf16 / s32 / u8 /
pred data, a scatter-add of 1M updates, and rows of random floats with duplicate
indices split across threads (each row still gets its updates in order).
select-and-scatter: max-pool gradients with padding and overlapping windows (ties
select the first element of the window), min selection, bf16 / s32 data; big ones with
disjoint windows (split across threads) and overlapping ones (sequential).
reduce-window: a variadic argmax window (value, index) with padding, strides, base and
window dilation, three operands, and a big argmax pool split across threads.

kiln runs with OMP_NUM_THREADS=4, so the thread splits run even on a small machine.
Command line as every kilntest file (--kiln PATH, -k, --keep, -j, --device ...).
"""

import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S  # noqa: E402

# Several OpenMP threads even on a small machine, so that the thread splits run (kiln
# inherits the environment).
os.environ['OMP_NUM_THREADS'] = '4'

rng = np.random.default_rng(20261127)
suite = kt.Suite('cpu native scatter kernels vs numpy and the interpreter', devices=('interpreter', 'cpu'))


def values(t, shape, lo=-3, hi=5):
    """Small integers of type t (storage dtype), exact under + and * here."""
    if t == 'pred':
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if t.startswith('u'):
        lo = 0
    v = rng.integers(lo, hi, size=shape)
    return v.astype(kt.np_dtype(t))


def combine(op, a, b, t):
    if op == 'overwrite':
        return b
    if t == 'pred':
        return {'or': a or b, 'and': a and b}[op]
    if kt.is_float(t):
        a, b = float(a), float(b)
    else:
        a, b = int(a), int(b)
    r = {'add': lambda: a + b, 'multiply': lambda: a * b, 'maximum': lambda: max(a, b),
         'minimum': lambda: min(a, b), 'x_plus_2y': lambda: a + 2 * b}[op]()
    if kt.is_float(t):
        return kt.round_to(r, t)[()]
    return kt.wrap_int([r], t)[0]


def index_vector(indices, ivd, pos):
    ind = indices if ivd < indices.ndim else indices[..., None]
    sel = list(pos)
    sel.insert(ivd, slice(None))
    return [int(v) for v in ind[tuple(sel)]]


def scatter_ref(operands, indices, updates, uwd, iwd, sdod, ivd, fn, ibd=(), sibd=()):
    """XLA's scatter, update element by update element in row-major order; fn maps
    (operand values, update values) to the new operand values."""
    outs = [x.copy() for x in operands]
    x0, u0 = operands[0], updates[0]
    usd = [d for d in range(u0.ndim) if d not in uwd]
    wod = [d for d in range(x0.ndim) if d not in iwd and d not in ibd]
    wsize = [1] * x0.ndim
    for k, d in enumerate(wod):
        wsize[d] = u0.shape[uwd[k]]
    index_dims = [d for d in range(max(indices.ndim, ivd + 1)) if d != ivd]
    for U in np.ndindex(*u0.shape):
        G = [U[d] for d in usd]
        vec = index_vector(indices, ivd, G)
        start = [0] * x0.ndim
        for k, d in enumerate(sdod):
            start[d] = vec[k]
        for i, d in enumerate(ibd):
            start[d] = G[index_dims.index(sibd[i])]
        if any(start[d] < 0 or start[d] > x0.shape[d] - wsize[d] for d in range(x0.ndim)):
            continue
        at = list(start)
        for k, d in enumerate(wod):
            at[d] += U[uwd[k]]
        at = tuple(at)
        new = fn([o[at] for o in outs], [u[U] for u in updates])
        for o, v in zip(outs, new):
            o[at] = v
    return outs


def scatter_attrs(uwd, iwd, sdod, ivd, comp, ibd=(), sibd=()):
    parts = ['update_window_dims=' + kt.ints_attr(uwd), 'inserted_window_dims=' + kt.ints_attr(iwd),
             'scatter_dims_to_operand_dims=' + kt.ints_attr(sdod)]
    if ibd:
        parts += ['input_batching_dims=' + kt.ints_attr(ibd), 'scatter_indices_batching_dims=' + kt.ints_attr(sibd)]
    parts += ['index_vector_dim=%d' % ivd, 'to_apply=%%%s' % comp.name]
    return ', '.join(parts)


def x_plus_2y_comp(t):
    def build(c):
        x = c.param(S(t))
        y = c.param(S(t))
        two = c.constant(2, t)
        return c.op('add', S(t), [x, c.op('multiply', S(t), [y, two])])
    return kt.shared('x_plus_2y_%s' % t, build)


def scatter_comp(op, t):
    if op == 'overwrite':
        return kt.overwrite_comp(t)
    if op == 'x_plus_2y':
        return x_plus_2y_comp(t)
    return kt.binary_comp(op, t)


def add_scatter(name, op, t, it, oshape, indices, ushape, uwd, iwd, sdod, ivd, ibd=(), sibd=(), x=None, u=None):
    x = values(t, oshape) if x is None else x
    u = values(t, ushape) if u is None else u
    idx = kt.wrap_int(indices, it)
    exp = scatter_ref([x], np.asarray(idx).astype(object), [u], uwd, iwd, sdod, ivd,
                      lambda a, b: [combine(op, a[0], b[0], t)], ibd, sibd)[0]
    c = kt.Case('scatter/' + name)
    comp = c.use(scatter_comp(op, t))
    r = c.op('scatter', S(t, oshape), [c.param(x, t), c.param(idx, it), c.param(u, t)],
             scatter_attrs(uwd, iwd, sdod, ivd, comp, ibd, sibd))
    c.out(r, exp)
    suite.add(c)


def argmax_comp(tv, ti):
    """(a_v, a_i, b_v, b_i) -> the larger value with its index, the smaller index on
    ties: scatter's variadic combiner and reduce-window's variadic reducer alike."""
    def build(c):
        av, ai, bv, bi = c.param(S(tv)), c.param(S(ti)), c.param(S(tv)), c.param(S(ti))
        gt = c.op('compare', S('pred'), [bv, av], 'direction=GT')
        eq = c.op('compare', S('pred'), [bv, av], 'direction=EQ')
        lt = c.op('compare', S('pred'), [bi, ai], 'direction=LT')
        take = c.op('or', S('pred'), [gt, c.op('and', S('pred'), [eq, lt])])
        rv = c.op('select', S(tv), [take, bv, av])
        ri = c.op('select', S(ti), [take, bi, ai])
        return c.op('tuple', kt.Shape.tuple([S(tv), S(ti)]), [rv, ri])
    return kt.shared('argmax_%s_%s' % (tv, ti), build)


def argmax_py(a, b):
    (av, ai), (bv, bi) = a, b
    take = bv > av or (bv == av and bi < ai)
    return [bv, bi] if take else [av, ai]


def add_scatters():
    # Duplicate indices: every update lands, in order.
    for t, it in [('f32', 's32'), ('s32', 's64'), ('f16', 'u8'), ('bf16', 's32'), ('u8', 's16')]:
        add_scatter('add_duplicate_indices/%s_%s' % (t, it), 'add', t, it, [5, 3],
                    rng.integers(0, 5, size=(9,)), [9, 3], [1], [0], [0], 1)
    add_scatter('overwrite_unique_indices/f32', 'overwrite', 'f32', 's32', [6, 2], rng.permutation(6)[:4], [4, 2],
                [1], [0], [0], 1)
    add_scatter('overwrite_duplicates_last_wins/s32', 'overwrite', 's32', 's32', [4, 2], [1, 3, 1, 1, 3], [5, 2],
                [1], [0], [0], 1)
    add_scatter('overwrite_pred', 'overwrite', 'pred', 's32', [6], [5, 0, 2], [3], [], [0], [0], 1)
    add_scatter('or_pred_duplicates', 'or', 'pred', 's32', [4], [1, 1, 2, 3, 1], [5], [], [0], [0], 1)
    for op, t in [('multiply', 's32'), ('multiply', 'f32'), ('maximum', 'f32'), ('minimum', 'f16'),
                  ('maximum', 'bf16'), ('minimum', 'u8'), ('x_plus_2y', 'f32'), ('x_plus_2y', 's32')]:
        add_scatter('%s_duplicate_indices/%s' % (op, t), op, t, 's32', [4, 3], rng.integers(0, 4, size=(7,)),
                    [7, 3], [1], [0], [0], 1)
    # Windows of 2x3 at (row, col) starts: those not entirely inside are skipped whole.
    starts = [[0, 0], [5, 4], [-1, 0], [0, -1], [4, 4], [5, 5], [2, 3], [3, 1], [4, 5], [100, 0]]
    add_scatter('out_of_bounds_windows_skipped/f32', 'add', 'f32', 's32', [6, 7], starts, [10, 2, 3],
                [1, 2], [], [0, 1], 1)
    add_scatter('negative_indices_skipped/s32_s8', 'add', 's32', 's8', [5, 2], [-1, 0, -128, 4, -5, 2], [6, 2],
                [1], [0], [0], 1)
    for it in ['u8', 'u64', 's64']:
        lo, hi = kt.int_range(it)
        add_scatter('extreme_indices_skipped/%s' % it, 'add', 's32', it, [5, 2], [0, hi, lo, 4, hi - 1, 2],
                    [6, 2], [1], [0], [0], 1)
    # index_vector_dim in the middle: indices [3, 2, 4] hold 2-vectors along dim 1.
    add_scatter('index_vector_dim_middle/f32', 'add', 'f32', 's32', [4, 5, 3], rng.integers(0, 4, size=(3, 2, 4)),
                [3, 4, 3], [2], [0, 1], [0, 1], 1)
    add_scatter('index_vector_dim_implicit/s32', 'add', 's32', 's64', [6, 3], rng.integers(0, 6, size=(2, 4)),
                [2, 4, 3], [2], [0], [0], 2)
    # A window dim before the scatter dims (update_window_dims={0}): row-major order of
    # updates alternates between windows.
    add_scatter('window_dim_before_scatter_dim/f32', 'overwrite', 'f32', 's32', [3, 6], [[1], [1], [4], [1]],
                [3, 4], [0], [1], [1], 1)
    add_scatter('window_dims_around_scatter_dim/f32', 'add', 'f32', 's32', [4, 5, 6], [[0], [2], [2]],
                [4, 3, 2], [0, 2], [1], [2], 1)
    # Batching dims: row b of the indices scatters into operand slice b.
    add_scatter('batching_dims/f32', 'add', 'f32', 's32', [3, 5, 4], rng.integers(-1, 6, size=(3, 2, 1)),
                [3, 2, 4], [2], [1], [1], 2, ibd=[0], sibd=[0])
    add_scatter('batching_dims_two/s32', 'add', 's32', 's64', [2, 4, 3, 5], rng.integers(0, 3, size=(4, 2, 1)),
                [4, 2, 5], [2], [2], [2], 2, ibd=[0, 1], sibd=[1, 0])
    add_scatter('scalar_updates_scatter_nd/f32', 'add', 'f32', 'u8', [3, 4], [[0, 1], [2, 3], [0, 1], [3, 0]],
                [4], [], [0, 1], [0, 1], 1)
    # Variadic: values and their indices scattered together with an argmax combiner.
    xv, xi = values('f32', [6]), np.arange(6, dtype=np.int32) + 100
    uv, ui = values('f32', [8]), rng.integers(0, 50, size=(8,)).astype(np.int32)
    idx = rng.integers(-1, 7, size=(8, 1)).astype(np.int32)
    ev, ei = scatter_ref([xv, xi], idx, [uv, ui], [], [0], [0], 1, argmax_py)
    c = kt.Case('scatter/variadic_two_operands_argmax/f32_s32')
    comp = c.use(argmax_comp('f32', 's32'))
    r = c.op('scatter', kt.Shape.tuple([S('f32', 6), S('s32', 6)]),
             [c.param(xv, 'f32'), c.param(xi, 's32'), c.param(idx, 's32'), c.param(uv, 'f32'), c.param(ui, 's32')],
             scatter_attrs([], [0], [0], 1, comp))
    c.out(c.op('get-tuple-element', S('f32', 6), [r], 'index=0'), ev)
    c.out(c.op('get-tuple-element', S('s32', 6), [r], 'index=1'), ei)
    suite.add(c)
    # 1M updates of 4-element rows into 1000 rows (many duplicates); np.add.at applies
    # them in order, in f32.
    n, rows = 250000, 1000
    x = values('f32', [rows, 4])
    u = values('f32', [n, 4])
    idx = rng.integers(-2, rows + 2, size=(n,)).astype(np.int32)
    exp = x.copy()
    ok = (idx >= 0) & (idx < rows)
    np.add.at(exp, idx[ok], u[ok])
    c = kt.Case('scatter/big_1m_updates_add/f32')
    comp = c.use(kt.binary_comp('add', 'f32'))
    r = c.op('scatter', S('f32', rows, 4), [c.param(x, 'f32'), c.param(idx, 's32'), c.param(u, 'f32')],
             scatter_attrs([1], [0], [0], 1, comp))
    c.out(r, exp)
    suite.add(c)
    # Rows of 32 (whole trailing blocks): big enough for the thread split by operand
    # rows. Random floats make the order of duplicate updates visible in the bits:
    # every row must still get its updates in order, as numpy's add.at adds them.
    n, rows, w = 8192, 300, 32
    x = rng.standard_normal((rows, w)).astype(np.float32)
    u = rng.standard_normal((n, w)).astype(np.float32)
    idx = rng.integers(-1, rows + 1, size=(n, 1)).astype(np.int64)
    exp = x.copy()
    ok = (idx[:, 0] >= 0) & (idx[:, 0] < rows)
    np.add.at(exp, idx[ok, 0], u[ok])
    c = kt.Case('scatter/big_rows_threads_keep_update_order/f32')
    comp = c.use(kt.binary_comp('add', 'f32'))
    r = c.op('scatter', S('f32', rows, w), [c.param(x, 'f32'), c.param(idx, 's64'), c.param(u, 'f32')],
             scatter_attrs([1], [0], [0], 1, comp))
    c.out(r, exp)
    suite.add(c)


def pooled_windows(x, k, stride, pad, oh, ow):
    """(h, w, x[:, h, w, :]) for the valid positions of NHWC window (oh, ow) in window
    order (row-major over the k x k window)."""
    for kh in range(k):
        for kw in range(k):
            h, w = oh * stride - pad + kh, ow * stride - pad + kw
            if 0 <= h < x.shape[1] and 0 <= w < x.shape[2]:
                yield h, w, x[:, h, w, :]


def maxpool_grad_ref(x, src, k, stride, pad):
    """select-and-scatter with select GE (the first of tied maxima) and scatter add, as
    a loop over window positions vectorized over batch and channels; the sums of
    overlapping windows are added in source order, in f32."""
    out = np.zeros_like(x)
    n, c = np.ogrid[:x.shape[0], :x.shape[3]]
    for oh in range(src.shape[1]):
        for ow in range(src.shape[2]):
            best = None
            for h, w, v in pooled_windows(x, k, stride, pad, oh, ow):
                if best is None:
                    best, bh, bw = v, np.full(v.shape, h), np.full(v.shape, w)
                    continue
                take = ~(best >= v)
                best, bh, bw = np.where(take, v, best), np.where(take, h, bh), np.where(take, w, bw)
            if best is not None:
                out[n, bh, bw, c] += src[:, oh, ow, :]
    return out


def add_maxpool_grad(name, x, k, stride, pad):
    oh = (x.shape[1] + 2 * pad - k) // stride + 1
    ow = (x.shape[2] + 2 * pad - k) // stride + 1
    src = rng.standard_normal((x.shape[0], oh, ow, x.shape[3])).astype(np.float32)
    c = kt.Case('select_and_scatter/' + name)
    sel = c.use(kt.compare_comp('GE', 'f32'))
    add = c.use(kt.binary_comp('add', 'f32'))
    attrs = '%s, select=%%%s, scatter=%%%s' % (
        kt.window_attr([1, k, k, 1], [1, stride, stride, 1], [(0, 0), (pad, pad), (pad, pad), (0, 0)]),
        sel.name, add.name)
    r = c.op('select-and-scatter', S('f32', x.shape), [c.param(x, 'f32'), c.param(src, 'f32'),
                                                       c.param(np.float32(0), 'f32')], attrs)
    c.out(r, maxpool_grad_ref(x, src, k, stride, pad))
    suite.add(c)


def add_big_windows():
    # 2x2 windows, stride 2: disjoint, so source rows run on several threads.
    x = rng.standard_normal((8, 64, 64, 8)).astype(np.float32)
    x[:, ::3, ::2, :] = 0.5  # ties inside some windows
    add_maxpool_grad('big_disjoint_windows_threads/f32', x, 2, 2, 0)
    # 3x3 windows, stride 2, padded: overlapping, so one thread in order.
    x = rng.integers(-2, 3, size=(4, 33, 33, 8)).astype(np.float32)
    add_maxpool_grad('big_overlapping_windows_in_order/f32', x, 3, 2, 1)
    # A variadic argmax pool big enough for the thread split of reduce-window.
    xv = rng.integers(-3, 4, size=(8, 40, 40, 16)).astype(np.float32)
    xi = np.arange(xv.size, dtype=np.int32).reshape(xv.shape)
    sh = [8, 20, 20, 16]
    ev, ei = np.full(sh, -np.inf, np.float32), np.full(sh, -1, np.int32)
    for oh in range(20):
        for ow in range(20):
            av, ai = ev[:, oh, ow, :], ei[:, oh, ow, :]
            for h, w, bv in pooled_windows(xv, 3, 2, 1, oh, ow):
                bi = xi[:, h, w, :]
                take = (bv > av) | ((bv == av) & (bi < ai))
                av, ai = np.where(take, bv, av), np.where(take, bi, ai)
            ev[:, oh, ow, :], ei[:, oh, ow, :] = av, ai
    c = kt.Case('reduce_window/big_variadic_argmax_threads/f32_s32')
    comp = c.use(argmax_comp('f32', 's32'))
    attrs = '%s, to_apply=%%%s' % (kt.window_attr([1, 3, 3, 1], [1, 2, 2, 1], [(0, 0), (1, 1), (1, 1), (0, 0)]),
                                   comp.name)
    r = c.op('reduce-window', kt.Shape.tuple([S('f32', sh), S('s32', sh)]),
             [c.param(xv, 'f32'), c.param(xi, 's32'), c.param(np.float32(-np.inf), 'f32'),
              c.param(np.int32(-1), 's32')], attrs)
    c.out(c.op('get-tuple-element', S('f32', sh), [r], 'index=0'), ev)
    c.out(c.op('get-tuple-element', S('s32', sh), [r], 'index=1'), ei)
    suite.add(c)


def window_positions(d_in, o, size, stride, pad_lo, ld, rd):
    """Input indices covered by window position o along one dim, in window order."""
    out = []
    for k in range(size):
        p = o * stride - pad_lo + k * rd
        if 0 <= p <= (d_in - 1) * ld and p % ld == 0:
            out.append(p // ld)
    return out


def window_elems(shape, o, size, stride, pad, ld, rd):
    lists = [window_positions(shape[d], o[d], size[d], stride[d], pad[d][0], ld[d], rd[d]) for d in range(len(shape))]
    return list(itertools.product(*lists))


def out_dim(d_in, size, stride, pad, ld, rd):
    padded = (d_in - 1) * ld + 1 + pad[0] + pad[1] if d_in else pad[0] + pad[1]
    return max(0, (padded - ((size - 1) * rd + 1)) // stride + 1)


def add_select_and_scatter(name, t, shape, size, stride, pad, select='GE', init=0):
    r = len(shape)
    ones = [1] * r
    sshape = [out_dim(shape[d], size[d], stride[d], pad[d], 1, 1) for d in range(r)]
    x = values(t, shape, -2, 3)  # few distinct values: many ties
    src = values(t, sshape)
    initv = np.asarray(init).astype(kt.np_dtype(t))
    exp = np.full(shape, initv, dtype=kt.np_dtype(t))
    for s in np.ndindex(*sshape):
        chosen = None
        for p in window_elems(shape, s, size, stride, pad, ones, ones):
            if chosen is None:
                chosen = p
                continue
            keep = x[chosen] >= x[p] if select == 'GE' else x[chosen] <= x[p]
            if not keep:
                chosen = p
        if chosen is not None:
            exp[chosen] = combine('add', src[s], exp[chosen], t)
    c = kt.Case('select_and_scatter/' + name)
    sel = c.use(kt.compare_comp(select, t))
    add = c.use(kt.binary_comp('add', t))
    attrs = '%s, select=%%%s, scatter=%%%s' % (kt.window_attr(size, stride, pad), sel.name, add.name)
    res = c.op('select-and-scatter', S(t, shape), [c.param(x, t), c.param(src, t), c.param(initv, t)], attrs)
    c.out(res, exp)
    suite.add(c)


def add_selects():
    add_select_and_scatter('maxpool_grad_overlapping_padded_ties_first/f32', 'f32', [2, 7, 6, 3], [1, 3, 3, 1],
                           [1, 2, 2, 1], [(0, 0), (1, 1), (1, 1), (0, 0)])
    add_select_and_scatter('maxpool_grad_stride1_overlap/s32', 's32', [6, 5], [3, 2], [1, 1], [(0, 0), (0, 0)])
    add_select_and_scatter('maxpool_grad_padding_only_windows/bf16', 'bf16', [4, 4], [3, 3], [2, 2],
                           [(3, 3), (3, 3)])
    add_select_and_scatter('minpool_grad_le/f16', 'f16', [5, 6], [2, 3], [2, 1], [(1, 0), (0, 2)], select='LE',
                           init=1)


def add_reduce_window(name, types, shape, size, stride, pad, ld, rd):
    """A variadic argmax window over (values, iota) — and with three operands also a
    running sum — checked element by element."""
    r = len(shape)
    oshape = [out_dim(shape[d], size[d], stride[d], pad[d], ld[d], rd[d]) for d in range(r)]
    tv, ti = types
    xv = values(tv, shape)
    xi = np.arange(int(np.prod(shape)), dtype=kt.np_dtype(ti)).reshape(shape)
    init_v = np.asarray(-100).astype(kt.np_dtype(tv))
    init_i = np.asarray(-1).astype(kt.np_dtype(ti))
    ev = np.full(oshape, init_v, dtype=kt.np_dtype(tv))
    ei = np.full(oshape, init_i, dtype=kt.np_dtype(ti))
    for o in np.ndindex(*oshape):
        acc = [init_v[()], init_i[()]]
        for p in window_elems(shape, o, size, stride, pad, ld, rd):
            acc = argmax_py(acc, [xv[p], xi[p]])
        ev[o], ei[o] = acc
    c = kt.Case('reduce_window/' + name)
    comp = c.use(argmax_comp(tv, ti))
    attrs = '%s, to_apply=%%%s' % (kt.window_attr(size, stride, pad, ld, rd), comp.name)
    res = c.op('reduce-window', kt.Shape.tuple([S(tv, oshape), S(ti, oshape)]),
               [c.param(xv, tv), c.param(xi, ti), c.param(init_v, tv), c.param(init_i, ti)], attrs)
    c.out(c.op('get-tuple-element', S(tv, oshape), [res], 'index=0'), ev)
    c.out(c.op('get-tuple-element', S(ti, oshape), [res], 'index=1'), ei)
    suite.add(c)


def sum_max_min_comp(t):
    def build(c):
        a = [c.param(S(t)) for _ in range(3)]
        b = [c.param(S(t)) for _ in range(3)]
        outs = [c.op('add', S(t), [a[0], b[0]]), c.op('maximum', S(t), [a[1], b[1]]),
                c.op('minimum', S(t), [a[2], b[2]])]
        return c.op('tuple', kt.Shape.tuple([S(t)] * 3), outs)
    return kt.shared('sum_max_min_%s' % t, build)


def add_reduce_windows():
    add_reduce_window('argmax_padded_strided/f32_s32', ('f32', 's32'), [5, 7], [3, 2], [2, 2], [(1, 1), (0, 1)],
                      [1, 1], [1, 1])
    add_reduce_window('argmax_base_and_window_dilation/f32_s32', ('f32', 's32'), [4, 5], [2, 3], [1, 2],
                      [(1, 0), (2, 1)], [2, 1], [1, 2])
    add_reduce_window('argmax_3d_window_dilation/bf16_s64', ('bf16', 's64'), [3, 4, 6], [1, 2, 3], [1, 1, 2],
                      [(0, 0), (1, 1), (0, 0)], [1, 1, 1], [1, 2, 2])
    # Three operands, one reducer per operand.
    t, shape, size, stride, pad = 's32', [6, 5], [2, 3], [1, 2], [(1, 1), (1, 0)]
    ones = [1, 1]
    xs = [values(t, shape) for _ in range(3)]
    inits = [np.asarray(v, dtype=np.int32) for v in (0, -1000, 1000)]
    oshape = [out_dim(shape[d], size[d], stride[d], pad[d], 1, 1) for d in range(2)]
    exps = [np.zeros(oshape, np.int32) for _ in range(3)]
    for o in np.ndindex(*oshape):
        ps = window_elems(shape, o, size, stride, pad, ones, ones)
        exps[0][o] = sum(int(xs[0][p]) for p in ps)
        exps[1][o] = max([-1000] + [int(xs[1][p]) for p in ps])
        exps[2][o] = min([1000] + [int(xs[2][p]) for p in ps])
    c = kt.Case('reduce_window/three_operands_sum_max_min/s32')
    comp = c.use(sum_max_min_comp(t))
    res = c.op('reduce-window', kt.Shape.tuple([S(t, oshape)] * 3),
               [c.param(x, t) for x in xs] + [c.param(v, t) for v in inits],
               '%s, to_apply=%%%s' % (kt.window_attr(size, stride, pad), comp.name))
    for i in range(3):
        c.out(c.op('get-tuple-element', S(t, oshape), [res], 'index=%d' % i), exps[i])
    suite.add(c)


add_scatters()
add_selects()
add_reduce_windows()
add_big_windows()

if __name__ == '__main__':
    sys.exit(suite.main())
