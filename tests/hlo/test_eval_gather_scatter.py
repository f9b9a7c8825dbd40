"""gather and scatter of kiln's evaluator against numpy.

gather: TF GatherV2 style along each axis (1-D and 2-D index arrays), gather_nd,
windows larger than one element, index_vector_dim in front, offset dimensions before the
batch dimensions, scalar indices, zero-size index batches, operand/start-indices batching
dimensions, every integer index type, out-of-range indices (XLA clamps each start index
to [0, operand_dim - slice_size]; unsigned indices are read as unsigned).

scatter: add with duplicate indices, overwrite with unique indices, multiply / max /
min combiners, multi-dimensional update windows, scatter_nd, index_vector_dim in front,
scalar updates, batching dimensions, two operands scattered together, out-of-bounds
indices (XLA skips an update window entirely unless its start index lies in
[0, operand_dim - window_size] in every dimension).

Hundreds of random dimension-number configurations (batch and window dimensions at
random positions, index_vector_dim anywhere or implicit, batching dimensions) of both
ops add breadth.

The references transcribe the index arithmetic of XLA's operation semantics element by
element. Gathered values are copies and scattered sums are of small integers (exact in
every type), so every comparison is exact.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S  # noqa: E402

g = kt.Gen(60606)
# Moving values must keep their bits, NaN payloads and signs included.
kt.Case.default_tol = kt.BITWISE
suite = kt.Suite('kiln evaluator: gather and scatter vs numpy')


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


def index_array(it, shape, lo, hi):
    """Random indices of type it in [lo, hi]; negative values wrap for unsigned types
    (becoming huge, hence clamped or out of bounds)."""
    vals = g.ints(lo, hi, shape)
    return kt.wrap_int(vals, it)


def index_vector(indices, ivd, g_idx):
    """S: the index vector at batch position g_idx (ivd inserted)."""
    ind = indices
    if ivd == ind.ndim:
        ind = ind[..., None]
    pos = list(g_idx)
    pos.insert(ivd, slice(None))
    return [int(v) for v in ind[tuple(pos)]]


def batch_shape(indices, ivd):
    return [n for d, n in enumerate(indices.shape) if d != ivd]


def gather_ref(operand, indices, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
               obd=(), sibd=()):
    bshape = batch_shape(indices, ivd)
    offset_operand_dims = [d for d in range(operand.ndim) if d not in collapsed and d not in obd]
    out_rank = len(bshape) + len(offset_dims)
    batch_out = [d for d in range(out_rank) if d not in offset_dims]
    out_shape = [0] * out_rank
    for k, d in enumerate(batch_out):
        out_shape[d] = bshape[k]
    for k, d in enumerate(offset_dims):
        out_shape[d] = slice_sizes[offset_operand_dims[k]]
    index_dims = [d for d in range(max(indices.ndim, ivd + 1)) if d != ivd]
    out = np.zeros(out_shape, dtype=operand.dtype)
    for o in np.ndindex(*out_shape):
        G = [o[d] for d in batch_out]
        Svec = index_vector(indices, ivd, G)
        Sin = [0] * operand.ndim
        for k, d in enumerate(start_index_map):
            Sin[d] = min(max(Svec[k], 0), operand.shape[d] - slice_sizes[d])
        for i, d in enumerate(obd):
            Sin[d] = G[index_dims.index(sibd[i])]
        In = list(Sin)
        for k, d in enumerate(offset_operand_dims):
            In[d] += o[offset_dims[k]]
        out[o] = operand[tuple(In)]
    return out


def gather_attrs(offset_dims, collapsed, start_index_map, ivd, slice_sizes, obd=(), sibd=()):
    parts = ['offset_dims=' + kt.ints_attr(offset_dims),
             'collapsed_slice_dims=' + kt.ints_attr(collapsed),
             'start_index_map=' + kt.ints_attr(start_index_map)]
    if obd:
        parts.append('operand_batching_dims=' + kt.ints_attr(obd))
        parts.append('start_indices_batching_dims=' + kt.ints_attr(sibd))
    parts.append('index_vector_dim=%d' % ivd)
    parts.append('slice_sizes=' + kt.ints_attr(slice_sizes))
    return ', '.join(parts)


INDEX_TYPES = ['s32', 's64', 'u32', 's8', 'u8', 's16', 'u64', 'u16']
VALUE_TYPES = ['f32', 's32', 'f16', 'bf16', 'f64', 'u8', 's64', 'pred', 'u16', 's8', 'u64', 's16', 'u32']


def add_gather_case(name, t, it, operand_shape, indices, *dn):
    x = g.array(t, operand_shape)
    exp = gather_ref(x, indices, *dn)
    c = kt.Case(name)
    r = c.op('gather', S(t, exp.shape), [c.param(x, t), c.param(indices, it)], gather_attrs(*dn))
    c.out(r, exp)
    suite.add(c)


def add_gather():
    k = 0
    # GatherV2: operand rank 3, gather along each axis with 1-D and 2-D index arrays.
    for axis in range(3):
        for ishape in [(6,), (2, 3), ()]:
            t, it = VALUE_TYPES[k % len(VALUE_TYPES)], INDEX_TYPES[k % len(INDEX_TYPES)]
            k += 1
            oshape = [5, 4, 3]
            q = len(ishape)
            idx = index_array(it, ishape, -2, oshape[axis] + 2)
            offset = list(range(axis)) + list(range(axis + q, axis + q + 2 - axis))
            sizes = list(oshape)
            sizes[axis] = 1
            add_gather_case('gather/gatherv2/axis%d/idx%s/%s_%s' % (axis, sname(ishape), t, it), t, it, oshape, idx,
                            offset, [axis], [axis], q, sizes)
    # gather_nd: full index vectors select rows.
    for ishape, ivd in [((6, 2), 1), ((2, 3, 2), 2), ((2, 4), 0)]:
        t, it = VALUE_TYPES[k % len(VALUE_TYPES)], INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        oshape = [4, 5, 3]
        nb = len(ishape) - 1
        idx = index_array(it, ishape, -1, 6)
        add_gather_case('gather/gather_nd/idx%s_ivd%d/%s_%s' % (sname(ishape), ivd, t, it), t, it, oshape, idx,
                        [nb], [0, 1], [0, 1], ivd, [1, 1, 3])
    # Windows bigger than one element, start indices clamped.
    for j in range(4):
        t, it = VALUE_TYPES[k % len(VALUE_TYPES)], INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        oshape = [6, 7]
        idx = index_array(it, (4, 2), -3, 9)
        add_gather_case('gather/windows/%d/%s_%s' % (j, t, it), t, it, oshape, idx,
                        [1, 2], [], [0, 1], 1, [2, 3])
    # index_vector_dim = 0 with a reversed start_index_map.
    for j in range(2):
        t, it = VALUE_TYPES[k % len(VALUE_TYPES)], INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        idx = index_array(it, (2, 5), -1, 7)
        add_gather_case('gather/ivd0/%d/%s_%s' % (j, t, it), t, it, [6, 7], idx,
                        [1, 2], [], [1, 0], 0, [2, 2])
    # Offset dimension before the batch dimension.
    for j in range(2):
        t, it = VALUE_TYPES[k % len(VALUE_TYPES)], INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        idx = index_array(it, (3,), -1, 6)
        add_gather_case('gather/offset_first/%d/%s_%s' % (j, t, it), t, it, [5, 4], idx,
                        [0], [0], [0], 1, [1, 4])
    # Mixed collapsed and kept window dimensions.
    t, it = 'f32', 's32'
    idx = index_array(it, (3, 2), 0, 4)
    add_gather_case('gather/mixed_collapse/%s_%s' % (t, it), t, it, [4, 5, 6], idx,
                    [1, 2], [0], [0, 2], 1, [1, 3, 2])
    # Zero-size batch of indices.
    idx = index_array('s32', (0, 1), 0, 3)
    add_gather_case('gather/empty_batch/f32_s32', 'f32', 's32', [4, 3], idx, [1], [0], [0], 1, [1, 3])
    # Every index type with huge out-of-range values.
    for it in kt.INTS:
        lo, hi = kt.int_range(it)
        idx = kt.wrap_int([lo, hi, 0, 2, hi - 1, lo + 1], it)
        add_gather_case('gather/extreme_indices/%s' % it, 's32', it, [5, 3], idx, [1], [0], [0], 1, [1, 3])
    # Zero-size slices and operands; a window as large as the operand (start clamped to 0).
    idx = index_array('s32', (3, 1), -2, 3)
    add_gather_case('gather/zero_slice/f32_s32', 'f32', 's32', [4, 3], idx, [1, 2], [], [0], 1, [0, 3])
    idx = index_array('s32', (2, 1), 0, 2)
    add_gather_case('gather/zero_operand_dim/f32_s32', 'f32', 's32', [0, 3], idx, [1, 2], [], [0], 1, [0, 3])
    idx = index_array('s64', (3, 1), -5, 5)
    add_gather_case('gather/full_window/s16_s64', 's16', 's64', [4, 3], idx, [1, 2], [], [0], 1, [4, 3])
    # Batching dimensions: each batch row gathers from its own operand slice.
    t, it = 'f32', 's32'
    idx = index_array(it, (3, 2), -1, 6)
    add_gather_case('gather/batching/operand0_indices0/%s_%s' % (t, it), t, it, [3, 5, 4], idx,
                    [2], [1], [1], 2, [1, 1, 4], [0], [0])
    idx = index_array('s64', (2, 3, 1), 0, 4)
    add_gather_case('gather/batching/operand1_indices0/s32_s64', 's32', 's64', [5, 2, 4], idx,
                    [2], [0], [0], 2, [1, 1, 4], [1], [0])
    idx = index_array('s32', (4, 2, 1), 0, 2)
    add_gather_case('gather/batching/two_batch_dims/f16_s32', 'f16', 's32', [2, 4, 3, 5], idx,
                    [2], [2], [2], 2, [1, 1, 1, 5], [0, 1], [1, 0])


# --------------------------------------------------------------------------------------
# scatter

def combine(op, a, b, t):
    if t == 'pred':
        return {'or': a or b, 'and': a and b, 'overwrite': b}[op]
    if op == 'overwrite':
        return b
    if kt.is_float(t):
        x, y = float(a), float(b)
        r = {'add': x + y, 'multiply': x * y, 'maximum': max(x, y), 'minimum': min(x, y)}[op]
        return kt.round_to(r, t)[()]
    x, y = int(a), int(b)
    r = {'add': x + y, 'multiply': x * y, 'maximum': max(x, y), 'minimum': min(x, y)}[op]
    return kt.wrap_int([r], t)[0]


def scatter_ref(operands, indices, updates, uwd, iwd, sdod, ivd, op, t_list, ibd=(), sibd=()):
    outs = [x.copy() for x in operands]
    operand = operands[0]
    upd0 = updates[0]
    usd = [d for d in range(upd0.ndim) if d not in uwd]
    window_operand_dims = [d for d in range(operand.ndim) if d not in iwd and d not in ibd]
    wsize = [1] * operand.ndim
    for k, d in enumerate(window_operand_dims):
        wsize[d] = upd0.shape[uwd[k]]
    index_dims = [d for d in range(max(indices.ndim, ivd + 1)) if d != ivd]
    for U in np.ndindex(*upd0.shape):
        G = [U[d] for d in usd]
        Svec = index_vector(indices, ivd, G)
        Sin = [0] * operand.ndim
        for k, d in enumerate(sdod):
            Sin[d] = Svec[k]
        for i, d in enumerate(ibd):
            Sin[d] = G[index_dims.index(sibd[i])]
        if any(Sin[d] < 0 or Sin[d] > operand.shape[d] - wsize[d] for d in range(operand.ndim)):
            continue   # the whole window is skipped
        I = list(Sin)
        for k, d in enumerate(window_operand_dims):
            I[d] += U[uwd[k]]
        I = tuple(I)
        for j, (o, u) in enumerate(zip(outs, updates)):
            o[I] = combine(op, o[I], u[U], t_list[j])
    return outs


def scatter_attrs(uwd, iwd, sdod, ivd, comp, ibd=(), sibd=()):
    parts = ['update_window_dims=' + kt.ints_attr(uwd),
             'inserted_window_dims=' + kt.ints_attr(iwd),
             'scatter_dims_to_operand_dims=' + kt.ints_attr(sdod)]
    if ibd:
        parts.append('input_batching_dims=' + kt.ints_attr(ibd))
        parts.append('scatter_indices_batching_dims=' + kt.ints_attr(sibd))
    parts.append('index_vector_dim=%d' % ivd)
    parts.append('to_apply=%%%s' % comp.name)
    return ', '.join(parts)


def small_values(t, shape):
    """Small integers (exact sums and products in every type)."""
    if t == 'pred':
        return g.array('pred', shape)
    vals = g.rng.integers(-3 if (kt.is_signed(t) or kt.is_float(t)) else 0, 5, size=shape).astype(np.float64)
    return kt.storage(vals, t) if kt.is_float(t) else vals.astype(kt.np_dtype(t))


def scatter_comp(op, t):
    if op == 'overwrite':
        return kt.overwrite_comp(t)
    return kt.binary_comp(op, t)


def add_scatter_case(name, op, t, it, operand_shape, indices, update_shape, uwd, iwd, sdod, ivd,
                     ibd=(), sibd=()):
    x = small_values(t, operand_shape)
    u = small_values(t, update_shape)
    exp = scatter_ref([x], indices, [u], uwd, iwd, sdod, ivd, op, [t], ibd, sibd)[0]
    c = kt.Case(name)
    comp = c.use(scatter_comp(op, t))
    r = c.op('scatter', S(t, operand_shape), [c.param(x, t), c.param(indices, it), c.param(u, t)],
             scatter_attrs(uwd, iwd, sdod, ivd, comp, ibd, sibd))
    c.out(r, exp)
    suite.add(c)


def unique_indices(it, n, hi):
    vals = g.rng.permutation(hi)[:n]
    return kt.wrap_int([int(v) for v in vals], it)


def add_scatter():
    k = 0
    # Row updates with duplicate indices, combiner add (order-independent).
    for t in ['f32', 's32', 'f16', 'bf16', 'f64', 'u8', 's64', 'u32', 's8']:
        it = INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        idx = index_array(it, (7,), 0, 4)
        add_scatter_case('scatter/add_duplicates/%s_%s' % (t, it), 'add', t, it, [5, 3], idx, [7, 3],
                         [1], [0], [0], 1)
    # Overwrite with unique indices.
    for t in ['f32', 's16', 'pred', 'f64', 'u64', 'bf16']:
        it = INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        idx = unique_indices(it, 4, 6)
        add_scatter_case('scatter/overwrite_unique/%s_%s' % (t, it), 'overwrite', t, it, [6, 2], idx, [4, 2],
                         [1], [0], [0], 1)
    # Other combiners with duplicates.
    for op, t in [('multiply', 's32'), ('maximum', 'f32'), ('minimum', 'u16'), ('maximum', 's8'),
                  ('minimum', 'f16'), ('multiply', 'f64')]:
        it = INDEX_TYPES[k % len(INDEX_TYPES)]
        k += 1
        idx = index_array(it, (6,), 0, 3)
        add_scatter_case('scatter/%s_duplicates/%s_%s' % (op, t, it), op, t, it, [4, 3], idx, [6, 3],
                         [1], [0], [0], 1)
    # Out-of-bounds indices: fully outside rows are skipped (negative, too large, huge).
    for it in kt.INTS:
        lo, hi = kt.int_range(it)
        idx = kt.wrap_int([0, 5, -1, 2, 7, hi, lo, 4, 2], it)
        add_scatter_case('scatter/out_of_bounds/%s' % it, 'add', 's32', it, [5, 2], idx, [9, 2],
                         [1], [0], [0], 1)
    # Two-dimensional windows: any window not entirely inside is skipped.
    for j in range(4):
        t = ['f32', 's32', 'bf16', 'u8'][j]
        idx = index_array('s32', (5, 2), -2, 7)
        add_scatter_case('scatter/windows_2d/%d/%s' % (j, t), 'add', t, 's32', [6, 7], idx, [5, 2, 3],
                         [1, 2], [], [0, 1], 1)
    # scatter_nd: full index vectors address single elements' rows.
    idx = index_array('s64', (4, 2), 0, 3)
    add_scatter_case('scatter/scatter_nd/f32_s64', 'add', 'f32', 's64', [4, 5, 6], idx, [4, 6],
                     [1], [0, 1], [0, 1], 1)
    idx = index_array('s32', (3, 2), 0, 3)
    add_scatter_case('scatter/scatter_nd_reversed_map/s32', 'add', 's32', 's32', [4, 5], idx, [3],
                     [], [0, 1], [1, 0], 1)
    # index_vector_dim = 0.
    idx = index_array('s32', (2, 4), 0, 3)
    add_scatter_case('scatter/ivd0/f64', 'add', 'f64', 's32', [5, 6], idx, [4, 2, 2],
                     [1, 2], [], [0, 1], 0)
    # Scalar updates into a vector; scalar index with implicit index vector.
    idx = index_array('u32', (6, 1), 0, 4)
    add_scatter_case('scatter/scalar_updates/f32', 'add', 'f32', 'u32', [5], idx, [6], [], [0], [0], 1)
    idx = kt.wrap_int([2], 's32').reshape(())
    add_scatter_case('scatter/scalar_index/s32', 'add', 's32', 's32', [5, 3], idx, [3], [0], [0], [0], 0)
    # Update window smaller than the operand's window dimension.
    idx = index_array('s32', (3,), -1, 5)
    add_scatter_case('scatter/partial_window/f32', 'add', 'f32', 's32', [5, 4], idx, [3, 2], [1], [0], [0], 1)
    # A window as large as the operand: only start index 0 is in bounds.
    idx = kt.wrap_int([0, 1, -1, 0], 's32')
    add_scatter_case('scatter/full_window/s32', 'add', 's32', 's32', [3, 2], idx, [4, 3, 2], [1, 2], [], [0], 1)
    # Zero updates.
    idx = index_array('s32', (0,), 0, 3)
    add_scatter_case('scatter/empty_updates/f32', 'add', 'f32', 's32', [4, 3], idx, [0, 3], [1], [0], [0], 1)
    # Batching dimensions.
    idx = index_array('s32', (3, 2), -1, 5)
    add_scatter_case('scatter/batching/input0_indices0/f32', 'add', 'f32', 's32', [3, 5, 4], idx, [3, 2, 4],
                     [2], [1], [1], 2, [0], [0])
    idx = index_array('s64', (2, 3, 1), 0, 4)
    add_scatter_case('scatter/batching/input1_indices0/s32', 'add', 's32', 's64', [5, 2, 4], idx, [2, 3, 4],
                     [2], [0], [0], 2, [1], [0])
    # Two operands scattered together by a tuple-valued combiner (add both).
    add_scatter_variadic()


def add_both_comp(t0, t1):
    def build(cm):
        a0 = cm.param(S(t0))
        a1 = cm.param(S(t1))
        b0 = cm.param(S(t0))
        b1 = cm.param(S(t1))
        s0 = cm.op('add', S(t0), [a0, b0])
        s1 = cm.op('add', S(t1), [a1, b1])
        return cm.op('tuple', kt.Shape.tuple([S(t0), S(t1)]), [s0, s1])
    return kt.shared('add_both_%s_%s' % (t0, t1), build)


def add_scatter_variadic():
    t0, t1 = 'f32', 's32'
    x0, x1 = small_values(t0, (5, 3)), small_values(t1, (5, 3))
    u0, u1 = small_values(t0, (6, 3)), small_values(t1, (6, 3))
    idx = index_array('s32', (6,), -1, 5)
    e0, e1 = scatter_ref([x0, x1], idx, [u0, u1], [1], [0], [0], 1, 'add', [t0, t1])
    c = kt.Case('scatter/variadic/f32_s32')
    comp = c.use(add_both_comp(t0, t1))
    tup = kt.Shape.tuple([S(t0, (5, 3)), S(t1, (5, 3))])
    r = c.op('scatter', tup, [c.param(x0, t0), c.param(x1, t1), c.param(idx, 's32'),
                              c.param(u0, t0), c.param(u1, t1)],
             scatter_attrs([1], [0], [0], 1, comp))
    c.out(c.op('get-tuple-element', S(t0, (5, 3)), [r], 'index=0'), e0)
    c.out(c.op('get-tuple-element', S(t1, (5, 3)), [r], 'index=1'), e1)
    suite.add(c)


# --------------------------------------------------------------------------------------
# Random dimension numbers: many configurations generated from the constraints of the
# operation semantics (batch dimensions of any count and position, index_vector_dim
# anywhere or implicit, collapsed / inserted dimensions, batching dimensions, offset and
# window dimensions at random output positions).

def random_index_config():
    rank = g.randint(1, 4)
    oshape = [g.randint(1, 5) for _ in range(rank)]
    obd = []
    if rank >= 2 and g.randint(0, 3) == 0:
        obd = [g.randint(0, rank - 1)]
    rest = [d for d in range(rank) if d not in obd]
    n_map = g.randint(1, len(rest))
    smap = [rest[i] for i in g.perm(len(rest))[:n_map]]
    collapsed = sorted(d for d in rest if g.randint(0, 2) == 0)
    batch = [g.randint(1, 3) for _ in range(g.randint(0, 2))]
    obd_pos = []
    for d in obd:
        p = g.randint(0, len(batch))
        batch.insert(p, oshape[d])
        obd_pos = [q + (1 if q >= p else 0) for q in obd_pos] + [p]
    implicit = n_map == 1 and g.randint(0, 1) == 1
    ivd = len(batch) if implicit else g.randint(0, len(batch))
    ishape = list(batch)
    if not implicit:
        ishape.insert(ivd, n_map)
    sibd = [p if p < ivd else p + 1 for p in obd_pos]
    return oshape, obd, smap, collapsed, batch, ivd, ishape, sibd


def random_indices(it, ishape, ivd, smap, oshape, implicit, lo_extra, hi_extra):
    idx = np.zeros(ishape, dtype=object)
    for pos in np.ndindex(*ishape):
        k = 0 if implicit else pos[ivd]
        d = smap[k]
        idx[pos] = g.randint(-lo_extra, oshape[d] - 1 + hi_extra)
    return kt.wrap_int(idx, it) if ishape else kt.wrap_int([g.randint(-lo_extra, oshape[smap[0]] - 1 + hi_extra)], it).reshape(())


def add_random_gathers(count):
    for n in range(count):
        oshape, obd, smap, collapsed, batch, ivd, ishape, sibd = random_index_config()
        implicit = len(ishape) == len(batch)
        sizes = [1 if (d in obd or d in collapsed) else g.randint(1, oshape[d]) for d in range(len(oshape))]
        n_offset = len(oshape) - len(collapsed) - len(obd)
        out_rank = len(batch) + n_offset
        offset_dims = sorted(g.perm(out_rank)[:n_offset])
        t, it = VALUE_TYPES[n % len(VALUE_TYPES)], INDEX_TYPES[(n * 3) % len(INDEX_TYPES)]
        idx = random_indices(it, ishape, ivd, smap, oshape, implicit, 2, 2)
        add_gather_case('gather/random/%d/%s_%s' % (n, t, it), t, it, oshape, idx,
                        offset_dims, collapsed, smap, ivd, sizes, obd, sibd)


def add_random_scatters(count):
    for n in range(count):
        oshape, obd, smap, inserted, batch, ivd, ishape, sibd = random_index_config()
        implicit = len(ishape) == len(batch)
        wdims = [d for d in range(len(oshape)) if d not in obd and d not in inserted]
        wsizes = [g.randint(1, oshape[d]) for d in wdims]
        u_rank = len(batch) + len(wdims)
        uwd = sorted(g.perm(u_rank)[:len(wdims)])
        ushape = [0] * u_rank
        bi = iter(batch)
        wi = iter(wsizes)
        for d in range(u_rank):
            ushape[d] = next(wi) if d in uwd else next(bi)
        t = ['s32', 'f32', 'u8', 'f16', 's64', 'bf16', 'f64', 'u32', 's16'][n % 9]
        it = INDEX_TYPES[(n * 5) % len(INDEX_TYPES)]
        idx = random_indices(it, ishape, ivd, smap, oshape, implicit, 1, 1)
        op = ['add', 'add', 'maximum', 'multiply', 'minimum'][n % 5]
        add_scatter_case('scatter/random/%d/%s/%s_%s' % (n, op, t, it), op, t, it, oshape, idx, ushape,
                         uwd, inserted, smap, ivd, obd, sibd)


add_gather()
add_scatter()
add_random_gathers(300)
add_random_scatters(300)

if __name__ == '__main__':
    sys.exit(suite.main())
