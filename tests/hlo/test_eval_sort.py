"""sort of kiln's evaluator against numpy: one to three operands, along every dimension
of rank 1-3 operands, ascending (LT) and descending (GT) comparators, stable sorts with
many duplicate keys (the payload operand must keep its original order), a
lexicographic two-key comparator, NaNs and signed zeros ordered by TOTALORDER, unstable
sorts of distinct keys, a comparator that computes (|x| < |y|), zero-size, size-1 and
5000-long dimensions.

References are numpy's stable argsort on ranks derived from the keys (np.unique's
inverse, so -0 and +0 rank equal under IEEE comparison, and TOTALORDER ranks come from
the total-order bit key). Results are permutations of the inputs, so every comparison is
exact -- except the zero signs of an unstable sort with both +0 and -0 among equal keys,
which no comparator can tell apart (compared ignoring the zero sign).
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, EXACT, EXACT_ANY_ZERO  # noqa: E402

g = kt.Gen(9001)
suite = kt.Suite('kiln evaluator: sort vs numpy')


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


def comparator(types, direction, cmp_type, nkeys):
    """Comparator over len(types) operands: compares operand 0 (and, lexicographically,
    operand 1 when nkeys == 2) with `direction`."""
    name = 'sort_%s_%s_%s_k%d' % (direction.lower(), '_'.join(types), (cmp_type or 'default').lower(), nkeys)

    def build(cm):
        ps = []
        for t in types:
            ps.append((cm.param(S(t)), cm.param(S(t))))
        extra = (', type=%s' % cmp_type) if cmp_type else ''
        c0 = cm.op('compare', S('pred'), [ps[0][0], ps[0][1]], 'direction=%s%s' % (direction, extra))
        if nkeys == 1:
            return c0
        e0 = cm.op('compare', S('pred'), [ps[0][0], ps[0][1]], 'direction=EQ%s' % extra)
        extra1 = (', type=%s' % cmp_type) if cmp_type and kt.is_float(types[1]) else ''
        c1 = cm.op('compare', S('pred'), [ps[1][0], ps[1][1]], 'direction=%s%s' % (direction, extra1))
        tie = cm.op('and', S('pred'), [e0, c1])
        return cm.op('or', S('pred'), [c0, tie])
    return kt.shared(name, build)


def ranks(x, t, total_order):
    if total_order and kt.is_float(t):
        key = kt.total_order_key(x, t)
    else:
        key = x
    _, inv = np.unique(key.reshape(-1), return_inverse=True)
    return inv.reshape(x.shape).astype(np.int64)


def sort_perm(keys, types, dim, descending, total_order):
    """Stable permutation along dim for lexicographic keys."""
    combined = np.zeros(keys[0].shape, dtype=np.int64)
    for k, t in zip(keys, types):
        r = ranks(k, t, total_order)
        combined = combined * (int(r.max()) + 1 if r.size else 1) + r
    if descending:
        combined = -combined
    return np.argsort(combined, axis=dim, kind='stable')


def key_values(t, shape, dup, nan=False):
    n = kt.nelems(shape)
    if dup:
        if kt.is_float(t):
            pool = [1.0, -2.5, 0.0, 7.0, -1.0, 3.25]
            if nan:
                pool += [math.inf, -math.inf, -0.0]
            vals = kt.storage(np.array(pool)[g.rng.integers(0, len(pool), n)], t)
            if nan and n >= 4:
                vf = vals.reshape(-1)
                vf[g.randint(0, n - 1)] = kt.nan_of(t)
                vf[g.randint(0, n - 1)] = kt.nan_of(t, negative=True)
            return vals.reshape(shape)
        lo, hi = kt.int_range(t)
        pool = [v for v in (0, 1, 5, -3, lo, hi, 2) if lo <= v <= hi]
        return np.array(pool, dtype=object)[g.rng.integers(0, len(pool), n)].astype(kt.np_dtype(t)).reshape(shape)
    # distinct keys
    if kt.is_float(t):
        span = 2000 if t in ('f16', 'bf16') else 10 ** 6
        vals = g.rng.choice(np.arange(-span, span), size=n, replace=False) / 8.0
        return kt.storage(vals, t).reshape(shape)
    lo, hi = kt.int_range(t)
    vals = set()
    out = []
    while len(out) < n:
        v = int(g.ints(lo, hi, (1,))[0])
        if v not in vals:
            vals.add(v)
            out.append(v)
    return kt.wrap_int(out, t).reshape(shape)


def add_case(name, operands, types, dim, descending, cmp_type, nkeys, stable, tol=EXACT):
    c = kt.Case(name)
    shape = operands[0].shape
    comp = c.use(comparator(types, 'GT' if descending else 'LT', cmp_type, nkeys))
    ps = [c.param(x, t) for x, t in zip(operands, types)]
    attrs = 'dimensions={%d}, %sto_apply=%%%s' % (dim, 'is_stable=true, ' if stable else '', comp.name)
    perm = sort_perm(operands[:nkeys], types[:nkeys], dim, descending, cmp_type == 'TOTALORDER')
    exps = [np.take_along_axis(x, perm, axis=dim) for x in operands]
    if len(operands) == 1:
        r = c.op('sort', S(types[0], shape), ps, attrs)
        c.out(r, exps[0], tol)
    else:
        tup = kt.Shape.tuple([S(t, shape) for t in types])
        r = c.op('sort', tup, ps, attrs)
        for i, (t, e) in enumerate(zip(types, exps)):
            c.out(c.op('get-tuple-element', S(t, shape), [r], 'index=%d' % i), e, tol if i == 0 else EXACT)
    suite.add(c)


SHAPES = [(10,), (1,), (0,), (4, 7), (7, 4), (2, 3, 5), (3, 1, 4), (2, 0, 3), (33,)]


def add_single_operand():
    k = 0
    for t in kt.INTS + kt.FLOATS:
        for descending in (False, True):
            for stable in (True, False):
                shape = SHAPES[k % len(SHAPES)]
                dim = k % len(shape)
                k += 1
                x = key_values(t, shape, dup=True)
                # Unstable sorts may swap equal keys: only +0/-0 are equal yet tell apart.
                tol = EXACT if stable or not kt.is_float(t) else EXACT_ANY_ZERO
                add_case('sort/1op/%s/%s/%s/%s/dim%d' % (t, 'desc' if descending else 'asc',
                                                         'stable' if stable else 'unstable', sname(shape), dim),
                         [x], [t], dim, descending, None, 1, stable, tol)


def add_total_order():
    k = 0
    for t in kt.FLOATS:
        for descending in (False, True):
            for shape in [(16,), (3, 9), (2, 4, 5)]:
                dim = k % len(shape)
                k += 1
                x = key_values(t, shape, dup=True, nan=True)
                add_case('sort/totalorder/%s/%s/%s/dim%d' % (t, 'desc' if descending else 'asc', sname(shape), dim),
                         [x], [t], dim, descending, 'TOTALORDER', 1, True)


def add_stable_payload():
    k = 0
    for t in ['s32', 'f32', 'u8', 'f16', 's64', 'bf16', 'f64', 'u32', 's8', 'u64', 's16', 'u16']:
        for descending in (False, True):
            shape = [(20,), (5, 8), (3, 4, 6), (6, 1)][k % 4]
            dim = k % len(shape)
            k += 1
            keys = key_values(t, shape, dup=True)
            vt = ['s32', 'f32', 'u16', 'f64'][k % 4]
            payload = kt.storage(np.arange(kt.nelems(shape)).reshape(shape), vt)
            add_case('sort/2op_stable/%s_%s/%s/%s/dim%d' % (t, vt, 'desc' if descending else 'asc', sname(shape), dim),
                     [keys, payload], [t, vt], dim, descending, None, 1, True)


def add_lexicographic():
    k = 0
    for t1, t2 in [('s32', 'f32'), ('f32', 's32'), ('u8', 'u8'), ('f64', 'f16'), ('s16', 'bf16'), ('bf16', 's64')]:
        for descending in (False, True):
            shape = [(24,), (4, 9), (2, 3, 8)][k % 3]
            dim = k % len(shape)
            k += 1
            k1 = key_values(t1, shape, dup=True)
            k2 = key_values(t2, shape, dup=True)
            payload = np.arange(kt.nelems(shape), dtype=np.int32).reshape(shape)
            add_case('sort/3op_lexicographic/%s_%s/%s/%s/dim%d' % (t1, t2, 'desc' if descending else 'asc',
                                                                  sname(shape), dim),
                     [k1, k2, payload], [t1, t2, 's32'], dim, descending, None, 2, True)


def add_unstable_distinct():
    k = 0
    for t in ['f32', 's32', 'f64', 'u16', 'f16', 's64']:
        for shape in [(17,), (3, 6), (2, 5, 4)]:
            dim = k % len(shape)
            k += 1
            keys = key_values(t, shape, dup=False)
            payload = kt.storage(g.array('f32', shape, special=False), 'f32')
            add_case('sort/2op_unstable_distinct/%s/%s/dim%d' % (t, sname(shape), dim),
                     [keys, payload], [t, 'f32'], dim, k % 2 == 0, None, 1, False)


def abs_comparator(t, it):
    """Sort (x, payload) by |x| ascending; the comparator computes inside itself."""
    def build(cm):
        a, b = cm.param(S(t)), cm.param(S(t))
        cm.param(S(it))
        cm.param(S(it))
        aa = cm.op('abs', S(t), [a])
        ab = cm.op('abs', S(t), [b])
        return cm.op('compare', S('pred'), [aa, ab], 'direction=LT')
    return kt.shared('sort_abs_lt_%s_%s' % (t, it), build)


def add_computed_comparator():
    for t in ('f32', 's32', 'f16', 's64', 'bf16'):
        for shape, dim in (((12,), 0), ((3, 8), 1), ((6, 3), 0)):
            pool = [0, 1, -1, 2, -2, 3, 5, -5]
            keys = kt.storage(np.array(pool)[g.rng.integers(0, len(pool), shape)].astype(np.float64), t) \
                if kt.is_float(t) else np.array(pool)[g.rng.integers(0, len(pool), shape)].astype(kt.np_dtype(t))
            payload = np.arange(kt.nelems(shape), dtype=np.int32).reshape(shape)
            c = kt.Case('sort/abs_comparator/%s/%s/dim%d' % (t, sname(shape), dim))
            comp = c.use(abs_comparator(t, 's32'))
            tup = kt.Shape.tuple([S(t, shape), S('s32', shape)])
            r = c.op('sort', tup, [c.param(keys, t), c.param(payload, 's32')],
                     'dimensions={%d}, is_stable=true, to_apply=%%%s' % (dim, comp.name))
            perm = np.argsort(np.abs(keys.astype(np.float64)), axis=dim, kind='stable')
            c.out(c.op('get-tuple-element', S(t, shape), [r], 'index=0'), np.take_along_axis(keys, perm, axis=dim))
            c.out(c.op('get-tuple-element', S('s32', shape), [r], 'index=1'), np.take_along_axis(payload, perm, axis=dim))
            suite.add(c)


def add_large_sort():
    # Long rows: catches quadratic or recursive sorts that time out or overflow.
    for t in ('f32', 's32'):
        x = key_values(t, (4, 5000), dup=True)
        add_case('sort/large/%s/4x5000' % t, [x, np.arange(20000, dtype=np.int32).reshape(4, 5000)],
                 [t, 's32'], 1, False, None, 1, True)


add_single_operand()
add_total_order()
add_stable_payload()
add_lexicographic()
add_unstable_distinct()
add_computed_comparator()
add_large_sort()

if __name__ == '__main__':
    sys.exit(suite.main())
