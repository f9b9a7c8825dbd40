"""sort and topk on the cpu backend's native kernels (src/backends/cpu/cpu_sort.c), each
module run twice (kilntest's multi-device suite): on --device interpreter and on
--device cpu. Every output must match the numpy reference on both, and cpu's must equal
the interpreter's bit for bit where the tolerance is exact; the cpu run must not run
any instruction through the evaluator.

Covered: stable sorts with many ties (payload order kept), f32 keys with NaNs of both
signs, -0.0 and infinities under JAX's comparator (NaNs made one NaN and -0 made +0,
then TOTALORDER LT) and under plain TOTALORDER, key + payload sorts, lexicographic
sorts (two and three keys, mixed directions, NaN rows), sorts along a non-minor
dimension (tiles of rows: partial, short, none), computed comparators (GT on |x|, a
comparator that is no key order and takes the merge sort), IEEE LT with NaNs (which is
no strict weak order: the reference replays the evaluator's merge sort), f16 / bf16 /
s8 / u64 / s64 keys, empty and length-1 rows, rows long enough for the radix sort,
a 1M-element sort, and topk with k=1, k=n, NaNs, ties and largest=false.

References: stable argsort of integer ranks derived from the keys (total-order bit
keys for TOTALORDER, np.unique ranks for IEEE so that -0 and +0 rank equal).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, BITWISE, EXACT_ANY_ZERO  # noqa: E402

g = kt.Gen(4242)
# Every pack runs on the interpreter and on cpu (kilntest: cpu must compile everything
# and match the interpreter bit for bit where the tolerance is exact).
suite = kt.Suite('kiln cpu backend: native sort and topk vs numpy and the interpreter', pack_elements=400000,
                 devices=('interpreter', 'cpu'))




# --------------------------------------------------------------------------------------
# Comparators

def key_comparator(t, n_ops, direction, cmp_type=None, key=0, name=None):
    """compare(lhs_key, rhs_key) over n_ops operands of types t (a list)."""
    name = name or 'cmp_%s_%s_%s_k%d' % (direction.lower(), '_'.join(t), (cmp_type or 'default').lower(), key)

    def build(cm):
        ps = [(cm.param(S(x)), cm.param(S(x))) for x in t]
        extra = ', type=%s' % cmp_type if cmp_type else ''
        return cm.op('compare', S('pred'), [ps[key][0], ps[key][1]], 'direction=%s%s' % (direction, extra))
    return kt.shared(name, build)


def jax_comparator(t, rest=()):
    """JAX's float comparator: NaNs become one NaN, -0 becomes +0, then TOTALORDER LT."""
    def build(cm):
        a, b = cm.param(S(t)), cm.param(S(t))
        for x in rest:
            cm.param(S(x))
            cm.param(S(x))
        nan = cm.constant(float('nan'), t)
        zero = cm.constant(0.0, t)

        def canon(v):
            ne = cm.op('compare', S('pred'), [v, v], 'direction=NE')
            eq = cm.op('compare', S('pred'), [v, zero], 'direction=EQ')
            s0 = cm.op('select', S(t), [eq, zero, v])
            return cm.op('select', S(t), [ne, nan, s0])
        return cm.op('compare', S('pred'), [canon(a), canon(b)], 'direction=LT, type=TOTALORDER')
    return kt.shared('jax_lt_%s_%s' % (t, '_'.join(rest)), build)


def lexicographic(t1, t2, rest=()):
    """(k1, k2) ascending: k1 LT, ties broken by k2 LT (the generic merge-sort path)."""
    def build(cm):
        a1, b1 = cm.param(S(t1)), cm.param(S(t1))
        a2, b2 = cm.param(S(t2)), cm.param(S(t2))
        for x in rest:
            cm.param(S(x))
            cm.param(S(x))
        lt1 = cm.op('compare', S('pred'), [a1, b1], 'direction=LT')
        eq1 = cm.op('compare', S('pred'), [a1, b1], 'direction=EQ')
        lt2 = cm.op('compare', S('pred'), [a2, b2], 'direction=LT')
        return cm.op('or', S('pred'), [lt1, cm.op('and', S('pred'), [eq1, lt2])])
    return kt.shared('lex_%s_%s_%s' % (t1, t2, '_'.join(rest)), build)


def lexicographic_n(types, directions, cmp_types, rest=(), canon_nan=False):
    """Lexicographic over the first len(directions) operands, as JAX writes num_keys > 1:
    or(lt1, and(eq1, or(lt2, and(eq2, ...)))), each key with its own direction and
    compare type; canon_nan maps NaNs to one NaN and -0 to +0 first (JAX's floats)."""
    name = 'lexn_%s_%s_%s_%s%s' % ('_'.join(types), ''.join(d[0] for d in directions),
                                   '_'.join((c or 'd').lower() for c in cmp_types), '_'.join(rest),
                                   '_canon' if canon_nan else '')

    def build(cm):
        ps = [(cm.param(S(t)), cm.param(S(t))) for t in types]
        for x in rest:
            cm.param(S(x))
            cm.param(S(x))

        def canon(v, t):
            if not (canon_nan and kt.is_float(t)):
                return v
            nan, zero = cm.constant(float('nan'), t), cm.constant(0.0, t)
            ne = cm.op('compare', S('pred'), [v, v], 'direction=NE')
            eq = cm.op('compare', S('pred'), [v, zero], 'direction=EQ')
            return cm.op('select', S(t), [ne, nan, cm.op('select', S(t), [eq, zero, v])])

        def chain(i):
            t = types[i]
            a, b = canon(ps[i][0], t), canon(ps[i][1], t)
            extra = ', type=%s' % cmp_types[i] if cmp_types[i] else ''
            lt = cm.op('compare', S('pred'), [a, b], 'direction=%s%s' % (directions[i], extra))
            if i == len(directions) - 1:
                return lt
            eq = cm.op('compare', S('pred'), [a, b], 'direction=EQ%s' % extra)
            return cm.op('or', S('pred'), [lt, cm.op('and', S('pred'), [eq, chain(i + 1)])])
        return chain(0)
    return kt.shared(name, build)


def add_lexicographic_keys():
    # JAX's num_keys=3 sort: canonicalized floats under TOTALORDER, NaNs included.
    shape = (5, 300)
    a = tie_keys('s32', shape, pool=(0, 1))
    b = special_f('f32', shape)
    c = tie_keys('u8', shape, pool=(3, 9, 200))
    r = (ranks(a, 's32', 'ieee') * 100 + ranks(b, 'f32', 'jax')) * 1000 + ranks(c, 'u8', 'ieee')
    add_sort('sort_three_keys_jax_canonical_totalorder/s32_f32_u8', [a, b, c, iota(shape)], ['s32', 'f32', 'u8', 's32'],
             1, lexicographic_n(['s32', 'f32', 'u8'], ['LT'] * 3, [None, 'TOTALORDER', None], ('s32',), True),
             stable_perm(r, 1))
    # Mixed directions: first key descending, second ascending.
    a = tie_keys('s16', (4, 90), pool=(-2, 5, 7))
    b = kt.storage(tie_keys('s32', (4, 90), pool=(-1, 0, 2, 6)), 'bf16')
    r = -ranks(a, 's16', 'ieee') * 100 + ranks(b, 'bf16', 'ieee')
    add_sort('sort_two_keys_mixed_directions/s16_bf16', [a, b, iota((4, 90))], ['s16', 'bf16', 's32'], 1,
             lexicographic_n(['s16', 'bf16'], ['GT', 'LT'], [None, None], ('s32',)), stable_perm(r, 1))
    # IEEE keys with NaNs: such rows leave the key path for the merge sort.
    a = special_f('f32', (3, 40))
    b = tie_keys('s32', (3, 40), pool=(1, 2, 3))
    perm = np.zeros(a.shape, dtype=np.int64)
    for i in range(3):
        x, y = a[i].astype(np.float64), b[i]
        perm[i] = evaluator_merge_perm(40, lambda p, q: x[p] < x[q] or (x[p] == x[q] and y[p] < y[q]))
    add_sort('sort_two_keys_ieee_nans_match_evaluator_merge/f32_s32', [a, b], ['f32', 's32'], 1,
             lexicographic_n(['f32', 's32'], ['LT', 'LT'], [None, None]), perm)


def abs_gt(t, rest=()):
    def build(cm):
        a, b = cm.param(S(t)), cm.param(S(t))
        for x in rest:
            cm.param(S(x))
            cm.param(S(x))
        return cm.op('compare', S('pred'), [cm.op('abs', S(t), [a]), cm.op('abs', S(t), [b])], 'direction=GT')
    return kt.shared('abs_gt_%s_%s' % (t, '_'.join(rest)), build)


def plus_one_lt(t):
    """lhs + 1 < rhs: both sides are functions of one parameter but different ones, so
    no key order: the kernel must take the merge sort."""
    def build(cm):
        a, b = cm.param(S(t)), cm.param(S(t))
        one = cm.constant(1, t)
        return cm.op('compare', S('pred'), [cm.op('add', S(t), [a, one]), b], 'direction=LT')
    return kt.shared('plus_one_lt_%s' % t, build)


# --------------------------------------------------------------------------------------
# References

def ranks(x, t, mode):
    """Integer ranks whose order is the comparator's on x. mode: 'total' (TOTALORDER bit
    keys), 'jax' (NaNs one value above everything, -0 == +0), 'ieee' (no NaNs)."""
    if kt.is_float(t) and mode == 'total':
        key = kt.total_order_key(x, t)
    elif kt.is_float(t) and mode == 'jax':
        f = x.astype(np.float64)
        f = np.where(f == 0, 0.0, f)
        key = np.where(np.isnan(f), np.inf, f)
        _, inv = np.unique(key.reshape(-1), return_inverse=True)
        inv = inv.reshape(x.shape).astype(np.int64)
        return np.where(np.isnan(f), inv.max(initial=0) + 1, inv)
    elif kt.is_float(t):
        key = x.astype(np.float64) + 0.0  # -0 -> +0
    else:
        key = x
    _, inv = np.unique(key.reshape(-1), return_inverse=True)
    return inv.reshape(x.shape).astype(np.int64)


def stable_perm(r, dim, descending=False):
    return np.argsort(-r if descending else r, axis=dim, kind='stable')


def evaluator_merge_perm(n, less):
    """The permutation the evaluator's bottom-up merge sort makes (src/eval/sort.c), for
    comparators that are no strict weak order."""
    src = list(range(n))
    width = 1
    while width < n:
        dst = [0] * n
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            if mid >= hi or not less(src[mid], src[mid - 1]):
                dst[lo:hi] = src[lo:hi]
                continue
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if less(src[j], src[i]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            dst[k:hi] = src[i:mid] + src[j:hi]
        src = dst
        width *= 2
    return src


def sname(shape):
    return 'x'.join(map(str, shape))


def add_sort(name, operands, types, dim, comp, perm, stable=True, tol=BITWISE):
    c = kt.Case(name)
    shape = operands[0].shape
    c.use(comp)
    ps = [c.param(x, t) for x, t in zip(operands, types)]
    attrs = 'dimensions={%d}, %sto_apply=%%%s' % (dim, 'is_stable=true, ' if stable else '', comp.name)
    exps = [np.take_along_axis(x, perm, axis=dim) for x in operands]
    if len(operands) == 1:
        c.out(c.op('sort', S(types[0], *shape), ps, attrs), exps[0], tol)
    else:
        r = c.op('sort', kt.Shape.tuple([S(t, *shape) for t in types]), ps, attrs)
        for i, (t, e) in enumerate(zip(types, exps)):
            c.out(c.op('get-tuple-element', S(t, *shape), [r], 'index=%d' % i), e, tol)
    suite.add(c)


def iota(shape, t='s32'):
    return np.arange(kt.nelems(shape)).reshape(shape).astype(kt.np_dtype(t))


def tie_keys(t, shape, pool=(0, 1, 2, 3)):
    return np.array(pool)[g.rng.integers(0, len(pool), shape)].astype(kt.np_dtype(t))


def special_f(t, shape, nan=True):
    """Floats drawn from a small pool with signed zeros and infinities (many ties), plus
    NaNs of both signs when asked."""
    pool = [1.0, -2.5, 0.0, -0.0, 7.0, -1.0, 3.25, np.inf, -np.inf, 1e-3]
    v = kt.storage(np.array(pool)[g.rng.integers(0, len(pool), shape)], t)
    flat = v.reshape(-1)
    if nan:
        for _ in range(max(2, flat.size // 16)):
            flat[g.randint(0, flat.size - 1)] = kt.nan_of(t, negative=bool(g.randint(0, 1)))
    # np.array keeps -0.0's sign through storage(); make sure some -0 exist.
    return v


# --------------------------------------------------------------------------------------
# Cases

def add_stable_ties():
    for t, shape, dim, direction in [('s32', (8, 300), 1, 'LT'), ('s32', (8, 300), 1, 'GT'),
                                     ('u8', (3, 40), 1, 'LT'), ('s64', (5, 17), 1, 'GT'),
                                     ('s32', (1000,), 0, 'LT')]:
        keys = tie_keys(t, shape)
        payload = iota(shape)
        perm = stable_perm(ranks(keys, t, 'ieee'), dim, direction == 'GT')
        add_sort('sort_stable_many_ties_keeps_payload_order/%s/%s/%s' % (t, direction.lower(), sname(shape)),
                 [keys, payload], [t, 's32'], dim, key_comparator([t, 's32'], 2, direction), perm)


def add_float_orders():
    for t in kt.FLOATS:
        for shape in [(6, 50), (3, 7), (2000,)]:
            x = special_f(t, shape)
            dim = len(shape) - 1
            add_sort('sort_jax_comparator_nan_negzero_inf/%s/%s' % (t, sname(shape)), [x, iota(shape)], [t, 's32'],
                     dim, jax_comparator(t, ('s32',)), stable_perm(ranks(x, t, 'jax'), dim))
            add_sort('sort_totalorder_orders_nan_signs_and_zeros/%s/%s' % (t, sname(shape)), [x], [t], dim,
                     key_comparator([t], 1, 'LT', 'TOTALORDER'), stable_perm(ranks(x, t, 'total'), dim))
            add_sort('sort_totalorder_descending/%s/%s' % (t, sname(shape)), [x], [t], dim,
                     key_comparator([t], 1, 'GT', 'TOTALORDER'), stable_perm(ranks(x, t, 'total'), dim, True))
        # IEEE LT without NaNs: -0 and +0 are equal, so the stable sort keeps their order.
        x = special_f(t, (4, 64), nan=False)
        add_sort('sort_ieee_lt_negzero_equals_zero/%s' % t, [x, iota(x.shape)], [t, 's32'], 1,
                 key_comparator([t, 's32'], 2, 'LT'), stable_perm(ranks(x, t, 'ieee'), 1))


def add_ieee_nan_merge():
    # IEEE LT with NaNs is no strict weak order: rows with NaNs take the merge sort and
    # must reproduce the evaluator's permutation exactly.
    for t in ('f32', 'f16'):
        x = special_f(t, (3, 45))
        perm = np.zeros(x.shape, dtype=np.int64)
        for r in range(x.shape[0]):
            row = x[r].astype(np.float64)
            perm[r] = evaluator_merge_perm(x.shape[1], lambda i, j: row[i] < row[j])
        add_sort('sort_ieee_lt_with_nans_matches_evaluator_merge/%s' % t, [x, iota(x.shape)], [t, 's32'], 1,
                 key_comparator([t, 's32'], 2, 'LT'), perm)


def add_multi_operand():
    shape = (5, 77)
    k = g.array('f32', shape, special=False)
    add_sort('sort_key_and_payloads/f32_s32_f64', [k, iota(shape), iota(shape, 'f64')], ['f32', 's32', 'f64'], 1,
             key_comparator(['f32', 's32', 'f64'], 3, 'LT'), stable_perm(ranks(k, 'f32', 'ieee'), 1))
    # The key is the second operand.
    k2 = tie_keys('s16', shape, pool=(-5, 0, 9, 300))
    add_sort('sort_key_is_second_operand/f32_s16', [k, k2], ['f32', 's16'], 1,
             key_comparator(['f32', 's16'], 2, 'GT', key=1), stable_perm(ranks(k2, 's16', 'ieee'), 1, True))
    for t1, t2, shape in [('s32', 'f32', (4, 90)), ('u8', 'bf16', (3, 33)), ('f64', 's8', (200,))]:
        a = tie_keys(t1, shape, pool=(0, 1, 2))
        b = tie_keys('s32' if kt.is_float(t2) else t2, shape, pool=(-3, 0, 4, 8))
        if kt.is_float(t2):
            b = kt.storage(b, t2)
        if kt.is_float(t1):
            a = kt.storage(a, t1)
        r = ranks(a, t1, 'ieee') * 1000 + ranks(b, t2, 'ieee')
        dim = len(shape) - 1
        add_sort('sort_two_keys_lexicographic/%s_%s/%s' % (t1, t2, sname(shape)), [a, b, iota(shape)],
                 [t1, t2, 's32'], dim, lexicographic(t1, t2, ('s32',)), stable_perm(r, dim))


def add_non_minor():
    for shape, dim in [((50, 3, 7), 0), ((4, 64, 5), 1), ((300, 2), 0)]:
        x = special_f('f32', shape)
        add_sort('sort_along_non_minor_dimension/jax_f32/%s/dim%d' % (sname(shape), dim), [x, iota(shape)],
                 ['f32', 's32'], dim, jax_comparator('f32', ('s32',)), stable_perm(ranks(x, 'f32', 'jax'), dim))
        y = tie_keys('s32', shape, pool=(7, -1, 3))
        add_sort('sort_along_non_minor_dimension/s32/%s/dim%d' % (sname(shape), dim), [y, iota(shape)],
                 ['s32', 's32'], dim, key_comparator(['s32', 's32'], 2, 'GT'),
                 stable_perm(ranks(y, 's32', 'ieee'), dim, True))
        z = special_f('f32', shape, nan=False)
        add_sort('sort_along_non_minor_dimension/lexicographic/%s/dim%d' % (sname(shape), dim), [y, z],
                 ['s32', 'f32'], dim, lexicographic('s32', 'f32'),
                 stable_perm(ranks(y, 's32', 'ieee') * 100000 + ranks(z, 'f32', 'ieee'), dim))


def add_tiles():
    # Non-minor sorts run on tiles of up to 16 adjacent rows, fewer when rows are long
    # (at most ~1 MiB of tile rows): a partial last tile, mixed element sizes, a tile of
    # 3 rows and rows too long for any tile.
    for shape, kt_, vt in [((40, 37), 's8', 'f64'), ((20000, 3), 'f32', 's32'), ((70000, 2), 'f32', 's32')]:
        k = (tie_keys(kt_, shape, pool=(-4, 0, 5, 9)) if not kt.is_float(kt_)
             else g.rng.standard_normal(shape).astype(np.float32))
        v = iota(shape, vt)
        add_sort('sort_non_minor_tiles/%s_%s/%s' % (kt_, vt, sname(shape)), [k, v], [kt_, vt], 0,
                 key_comparator([kt_, vt], 2, 'LT'), stable_perm(ranks(k, kt_, 'ieee'), 0))
    y = tie_keys('s32', (33, 19), pool=(1, 2, 3))
    z = special_f('f32', (33, 19), nan=False)
    add_sort('sort_non_minor_tiles/lexicographic/33x19', [y, z], ['s32', 'f32'], 0, lexicographic('s32', 'f32'),
             stable_perm(ranks(y, 's32', 'ieee') * 100000 + ranks(z, 'f32', 'ieee'), 0))


def add_custom():
    for t, shape in [('f32', (6, 100)), ('s32', (3, 31)), ('f16', (2, 20)), ('s8', (500,))]:
        x = (kt.storage(tie_keys('s32', shape, pool=(-3, 3, 2, -2, 0, 5)), t) if kt.is_float(t)
             else tie_keys(t, shape, pool=(-3, 3, 2, -2, 0, 5)))
        r = ranks(np.abs(x.astype(np.float64)), 'f64', 'ieee')
        dim = len(shape) - 1
        add_sort('sort_custom_comparator_gt_on_abs/%s/%s' % (t, sname(shape)), [x, iota(shape)], [t, 's32'], dim,
                 abs_gt(t, ('s32',)), stable_perm(r, dim, True))
    # |x| with NaNs under IEEE GT: rows with NaNs fall back to the merge sort.
    x = special_f('f32', (2, 40))
    perm = np.zeros(x.shape, dtype=np.int64)
    for r in range(2):
        row = np.abs(x[r].astype(np.float64))
        perm[r] = evaluator_merge_perm(40, lambda i, j: row[i] > row[j])
    add_sort('sort_custom_comparator_abs_with_nans_matches_evaluator_merge/f32', [x, iota(x.shape)], ['f32', 's32'],
             1, abs_gt('f32', ('s32',)), perm)
    for shape in [(4, 30), (100,)]:
        x = tie_keys('s32', shape, pool=(0, 1, 2, 3, 4, 5, 6))
        perm = np.zeros(shape, dtype=np.int64)
        rows = x.reshape(-1, shape[-1])
        pr = perm.reshape(-1, shape[-1])
        for r in range(rows.shape[0]):
            row = rows[r].astype(np.int64)
            pr[r] = evaluator_merge_perm(shape[-1], lambda i, j: row[i] + 1 < row[j])
        add_sort('sort_comparator_without_key_order_takes_merge_sort/s32/%s' % sname(shape), [x], ['s32'],
                 len(shape) - 1, plus_one_lt('s32'), perm)


def add_types():
    for t in ('f16', 'bf16', 's8', 'u64', 's64', 'u16', 'pred'):
        for shape in [(3, 20), (2, 700)]:
            if t == 'u64':
                x = g.rng.integers(0, 2 ** 63, shape, dtype=np.uint64) * np.uint64(2) + \
                    g.rng.integers(0, 2, shape, dtype=np.uint64)
                x[0, :3] = [0, 2 ** 64 - 1, 2 ** 63]
            elif t == 's64':
                x = g.rng.integers(-2 ** 63, 2 ** 63 - 1, shape, dtype=np.int64)
                x[0, :2] = [-2 ** 63, 2 ** 63 - 1]
            elif t == 'pred':
                x = g.rng.integers(0, 2, shape).astype(np.bool_)
            elif kt.is_float(t):
                x = special_f(t, shape, nan=False)
            else:
                lo, hi = kt.int_range(t)
                x = g.rng.integers(lo, hi + 1, shape).astype(kt.np_dtype(t))
            for direction in ('LT', 'GT'):
                add_sort('sort_element_type/%s/%s/%s' % (t, direction.lower(), sname(shape)), [x, iota(shape)],
                         [t, 's32'], 1, key_comparator([t, 's32'], 2, direction),
                         stable_perm(ranks(x, t, 'ieee'), 1, direction == 'GT'))


def add_edges():
    for shape, dim in [((6, 1), 1), ((1, 6), 0), ((1,), 0), ((2, 1, 3), 1), ((5, 2), 1)]:
        x = g.array('f32', shape, special=False)
        add_sort('sort_length_one_and_two_rows/%s/dim%d' % (sname(shape), dim), [x, iota(shape)], ['f32', 's32'],
                 dim, jax_comparator('f32', ('s32',)), stable_perm(ranks(x, 'f32', 'jax'), dim))
    # Empty operands: nothing to run, but the sort must still compile (with a non-empty
    # output next to it, so that the module has something to run).
    c = kt.Case('sort_empty_rows_compile_and_run')
    comp = c.use(key_comparator(['f32'], 1, 'LT'))
    e = c.param(np.zeros((4, 0), np.float32), 'f32')
    c.op('sort', S('f32', 4, 0), [e], 'dimensions={1}, to_apply=%%%s' % comp.name)
    one = c.param(np.array([3.0, 1.0], np.float32), 'f32')
    c.out(c.op('sort', S('f32', 2), [one], 'dimensions={0}, to_apply=%%%s' % comp.name),
          np.array([1.0, 3.0], np.float32), BITWISE)
    suite.add(c)


def add_big():
    n = 1 << 20
    x = g.rng.standard_normal(n).astype(np.float32)
    x[::1000] = 0.0
    add_sort('sort_one_million_f32_totalorder_with_payload', [x, iota((n,))], ['f32', 's32'], 0,
             key_comparator(['f32', 's32'], 2, 'LT', 'TOTALORDER'), stable_perm(ranks(x, 'f32', 'total'), 0))
    y = g.rng.standard_normal((64, 1000)).astype(np.float32)
    add_sort('sort_jax_comparator_rows_in_parallel/64x1000', [y], ['f32'], 1, jax_comparator('f32'),
             stable_perm(ranks(y, 'f32', 'jax'), 1))


# --- topk ---

def add_topk(name, x, t, k, largest=True):
    c = kt.Case(name)
    shape = x.shape
    p = c.param(x, t)
    oshape = shape[:-1] + (k,)
    attrs = 'k=%d%s' % (k, '' if largest else ', largest=false')
    r = c.op('topk', kt.Shape.tuple([S(t, *oshape), S('s32', *oshape)]), [p], attrs)
    rk = ranks(x, t, 'total') if kt.is_float(t) else ranks(x, t, 'ieee')
    perm = stable_perm(rk, len(shape) - 1, largest)[..., :k]
    c.out(c.op('get-tuple-element', S(t, *oshape), [r], 'index=0'), np.take_along_axis(x, perm, axis=-1), BITWISE)
    c.out(c.op('get-tuple-element', S('s32', *oshape), [r], 'index=1'), perm.astype(np.int32), BITWISE)
    suite.add(c)


def add_topks():
    for t in ('f32', 'f16', 'bf16', 'f64'):
        for shape in [(5, 300), (3, 10)]:
            x = special_f(t, shape)
            n = shape[-1]
            for k in sorted({1, 4, n // 2, n}):
                add_topk('topk_nans_largest_ties_lower_index_first/%s/%s/k%d' % (t, sname(shape), k), x, t, k)
            add_topk('topk_smallest/%s/%s/k3' % (t, sname(shape)), x, t, 3, largest=False)
    for t in ('s32', 'u8', 's8', 'u64', 's64'):
        x = tie_keys(t, (4, 500), pool=(0, 1, 2, 100) if t[0] == 'u' else (-7, 0, 1, 2, 100))
        for k in (1, 16, 500):
            add_topk('topk_integer_ties/%s/k%d' % (t, k), x, t, k)
        add_topk('topk_integer_smallest/%s/k5' % t, x, t, 5, largest=False)
    x = g.rng.standard_normal((2, 3, 1000)).astype(np.float32)
    add_topk('topk_rank3_heap_path/f32/k10', x, 'f32', 10)
    add_topk('topk_k_equals_n/f32', x[:, :, :50].copy(), 'f32', 50)
    add_topk('topk_length_one_rows/f32', x[:, :, :1].copy(), 'f32', 1)


add_stable_ties()
add_float_orders()
add_ieee_nan_merge()
add_multi_operand()
add_non_minor()
add_tiles()
add_lexicographic_keys()
add_custom()
add_types()
add_edges()
add_big()
add_topks()

if __name__ == '__main__':
    sys.exit(suite.main())
