"""Control flow and computation calls of kiln's evaluator against numpy: while loops
(counted loops with 0, 1 and many trips, data-dependent exit, integer recurrences that
wrap, nested loops, a loop body calling a reducer), conditional (predicate form with
different operand types per branch, index form with in-range, negative and too-large
indices -- which run the last branch), call (nested chains 40 and 100 deep, no
operands), map (one to three operands, scalar operands) and tuple / get-tuple-element
(nested tuples, parameters passed through). Loops also run with a non-tuple state and
for 20000 trips.

References replay the same steps in numpy with the same element types; every step is a
single IEEE-exact operation (add, multiply, negate, convert) or integer arithmetic, so
every comparison is exact.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, Shape  # noqa: E402

g = kt.Gen(112358)
suite = kt.Suite('kiln evaluator: control flow vs numpy')
T = Shape.tuple


def comp(case, name):
    """A computation private to `case` (unique name), registered with it."""
    c = kt.Computation('%s%s' % (case.b.prefix.replace('.', '_'), name))
    case.use(c)
    return c


# --------------------------------------------------------------------------------------
# while

def add_counted_loops():
    for trips in (0, 1, 2, 5, 17):
        for t in ('f32', 'f64', 's32', 'bf16'):
            n = 3 if t != 'f64' else 4
            c = kt.Case('while/counted/%s/trips%d' % (t, trips))
            state = T([S('s32'), S('s32'), S(t, (n,)), S(t, (n,))])
            x = g.array(t, (n,), special=False, lo=-2, hi=2) if kt.is_float(t) else g.array(t, (n,), lo=-50, hi=50)
            acc0 = g.array(t, (n,), special=False, lo=-2, hi=2) if kt.is_float(t) else g.array(t, (n,), lo=-5, hi=5)
            scale = kt.storage(0.5, t) if kt.is_float(t) else np.array(3, dtype=np.int32)
            cond = comp(c, 'cond')
            p = cond.param(state)
            i = cond.op('get-tuple-element', S('s32'), [p], 'index=0')
            lim = cond.op('get-tuple-element', S('s32'), [p], 'index=1')
            cond.finish(cond.op('compare', S('pred'), [i, lim], 'direction=LT'))
            body = comp(c, 'body')
            p = body.param(state)
            i = body.op('get-tuple-element', S('s32'), [p], 'index=0')
            lim = body.op('get-tuple-element', S('s32'), [p], 'index=1')
            acc = body.op('get-tuple-element', S(t, (n,)), [p], 'index=2')
            xv = body.op('get-tuple-element', S(t, (n,)), [p], 'index=3')
            one = body.constant(np.int32(1), 's32')
            i2 = body.op('add', S('s32'), [i, one])
            sc = body.constant(scale, t)
            scb = body.op('broadcast', S(t, (n,)), [sc], 'dimensions={}')
            m = body.op('multiply', S(t, (n,)), [acc, scb])
            acc2 = body.op('add', S(t, (n,)), [m, xv])
            body.finish(body.op('tuple', state, [i2, lim, acc2, xv]))
            pi = c.constant(np.int32(0), 's32')
            plim = c.param(np.array(trips, dtype=np.int32), 's32')
            pacc = c.param(acc0, t)
            px = c.param(x, t)
            init = c.op('tuple', state, [pi, plim, pacc, px])
            w = c.op('while', state, [init], 'condition=%%%s, body=%%%s' % (cond.name, body.name))
            # Reference: the same steps, each rounded to t.
            a = acc0.copy()
            for _ in range(trips):
                if kt.is_float(t):
                    a = kt.round_to(kt.round_to(a.astype(np.float64) * float(scale), t).astype(np.float64)
                                    + x.astype(np.float64), t)
                else:
                    a = (a * np.int32(3) + x).astype(np.int32)
            c.out(c.op('get-tuple-element', S('s32'), [w], 'index=0'), np.array(trips, dtype=np.int32))
            c.out(c.op('get-tuple-element', S(t, (n,)), [w], 'index=2'), a)
            suite.add(c)


def add_data_dependent_loop():
    for start, limit in ((1.0, 1000.0), (3.0, 2.0), (0.1, 0.2), (-1.0, 7.0)):
        c = kt.Case('while/until_greater/start%g_limit%g' % (start, limit))
        state = T([S('f32'), S('f32'), S('s32')])
        cond = comp(c, 'cond')
        p = cond.param(state)
        v = cond.op('get-tuple-element', S('f32'), [p], 'index=0')
        lim = cond.op('get-tuple-element', S('f32'), [p], 'index=1')
        cond.finish(cond.op('compare', S('pred'), [v, lim], 'direction=LT'))
        body = comp(c, 'body')
        p = body.param(state)
        v = body.op('get-tuple-element', S('f32'), [p], 'index=0')
        lim = body.op('get-tuple-element', S('f32'), [p], 'index=1')
        k = body.op('get-tuple-element', S('s32'), [p], 'index=2')
        two = body.constant(np.float32(2), 'f32')
        three = body.constant(np.float32(3), 'f32')
        v2 = body.op('add', S('f32'), [body.op('multiply', S('f32'), [v, two]), three])
        k2 = body.op('add', S('s32'), [k, body.constant(np.int32(1), 's32')])
        body.finish(body.op('tuple', state, [v2, lim, k2]))
        init = c.op('tuple', state, [c.param(np.float32(start), 'f32'), c.param(np.float32(limit), 'f32'),
                                     c.constant(np.int32(0), 's32')])
        w = c.op('while', state, [init], 'condition=%%%s, body=%%%s' % (cond.name, body.name))
        vv, kk = np.float32(start), 0
        while vv < np.float32(limit):
            vv = np.float32(np.float32(vv * np.float32(2)) + np.float32(3))
            kk += 1
        c.out(c.op('get-tuple-element', S('f32'), [w], 'index=0'), np.float32(vv))
        c.out(c.op('get-tuple-element', S('s32'), [w], 'index=2'), np.int32(kk))
        suite.add(c)


def add_fibonacci():
    for t, n in (('s64', 100), ('u8', 20), ('s16', 40), ('u64', 95), ('s32', 0)):
        c = kt.Case('while/fibonacci/%s/n%d' % (t, n))
        state = T([S(t), S(t), S('s32'), S('s32')])
        cond = comp(c, 'cond')
        p = cond.param(state)
        i = cond.op('get-tuple-element', S('s32'), [p], 'index=2')
        lim = cond.op('get-tuple-element', S('s32'), [p], 'index=3')
        cond.finish(cond.op('compare', S('pred'), [i, lim], 'direction=LT'))
        body = comp(c, 'body')
        p = body.param(state)
        a = body.op('get-tuple-element', S(t), [p], 'index=0')
        b = body.op('get-tuple-element', S(t), [p], 'index=1')
        i = body.op('get-tuple-element', S('s32'), [p], 'index=2')
        lim = body.op('get-tuple-element', S('s32'), [p], 'index=3')
        s = body.op('add', S(t), [a, b])
        i2 = body.op('add', S('s32'), [i, body.constant(np.int32(1), 's32')])
        body.finish(body.op('tuple', state, [b, s, i2, lim]))
        zero = np.zeros((), dtype=kt.np_dtype(t))
        one = np.ones((), dtype=kt.np_dtype(t))
        init = c.op('tuple', state, [c.param(zero, t), c.param(one, t), c.constant(np.int32(0), 's32'),
                                     c.param(np.array(n, dtype=np.int32), 's32')])
        w = c.op('while', state, [init], 'condition=%%%s, body=%%%s' % (cond.name, body.name))
        fa, fb = 0, 1
        for _ in range(n):
            fa, fb = fb, fa + fb
        c.out(c.op('get-tuple-element', S(t), [w], 'index=0'), kt.wrap_int([fa], t).reshape(()))
        c.out(c.op('get-tuple-element', S(t), [w], 'index=1'), kt.wrap_int([fb], t).reshape(()))
        suite.add(c)


def add_nested_loop():
    for outer, inner in ((3, 4), (0, 5), (6, 0), (2, 7)):
        c = kt.Case('while/nested/outer%d_inner%d' % (outer, inner))
        st_in = T([S('s32'), S('s32'), S('s32')])          # j, inner limit, total
        st_out = T([S('s32'), S('s32'), S('s32'), S('s32')])  # i, outer limit, inner limit, total
        icond = comp(c, 'inner_cond')
        p = icond.param(st_in)
        icond.finish(icond.op('compare', S('pred'), [icond.op('get-tuple-element', S('s32'), [p], 'index=0'),
                                                     icond.op('get-tuple-element', S('s32'), [p], 'index=1')],
                              'direction=LT'))
        ibody = comp(c, 'inner_body')
        p = ibody.param(st_in)
        j = ibody.op('get-tuple-element', S('s32'), [p], 'index=0')
        lim = ibody.op('get-tuple-element', S('s32'), [p], 'index=1')
        tot = ibody.op('get-tuple-element', S('s32'), [p], 'index=2')
        one = ibody.constant(np.int32(1), 's32')
        ibody.finish(ibody.op('tuple', st_in, [ibody.op('add', S('s32'), [j, one]), lim,
                                               ibody.op('add', S('s32'), [tot, j])]))
        ocond = comp(c, 'outer_cond')
        p = ocond.param(st_out)
        ocond.finish(ocond.op('compare', S('pred'), [ocond.op('get-tuple-element', S('s32'), [p], 'index=0'),
                                                     ocond.op('get-tuple-element', S('s32'), [p], 'index=1')],
                              'direction=LT'))
        obody = comp(c, 'outer_body')
        obody.use(icond)
        obody.use(ibody)
        p = obody.param(st_out)
        i = obody.op('get-tuple-element', S('s32'), [p], 'index=0')
        olim = obody.op('get-tuple-element', S('s32'), [p], 'index=1')
        ilim = obody.op('get-tuple-element', S('s32'), [p], 'index=2')
        tot = obody.op('get-tuple-element', S('s32'), [p], 'index=3')
        zero = obody.constant(np.int32(0), 's32')
        iw = obody.op('while', st_in, [obody.op('tuple', st_in, [zero, ilim, tot])],
                      'condition=%%%s, body=%%%s' % (icond.name, ibody.name))
        tot2 = obody.op('get-tuple-element', S('s32'), [iw], 'index=2')
        one = obody.constant(np.int32(1), 's32')
        obody.finish(obody.op('tuple', st_out, [obody.op('add', S('s32'), [i, one]), olim, ilim, tot2]))
        init = c.op('tuple', st_out, [c.constant(np.int32(0), 's32'), c.param(np.int32(outer), 's32'),
                                      c.param(np.int32(inner), 's32'), c.constant(np.int32(0), 's32')])
        w = c.op('while', st_out, [init], 'condition=%%%s, body=%%%s' % (ocond.name, obody.name))
        c.out(c.op('get-tuple-element', S('s32'), [w], 'index=3'),
              np.int32(outer * sum(range(inner))))
        suite.add(c)


def add_loop_with_reduce():
    # Body reduces a matrix row-wise and feeds the sums back: x <- x + rowsum(M) * 1.
    for trips in (0, 3):
        c = kt.Case('while/body_calls_reducer/trips%d' % trips)
        m = g.array('s32', (3, 4), lo=-9, hi=9)
        state = T([S('s32'), S('s32', (3,)), S('s32', (3, 4))])
        cond = comp(c, 'cond')
        p = cond.param(state)
        cond.finish(cond.op('compare', S('pred'), [cond.op('get-tuple-element', S('s32'), [p], 'index=0'),
                                                   cond.constant(np.int32(trips), 's32')], 'direction=LT'))
        body = comp(c, 'body')
        add = body.use(kt.binary_comp('add', 's32'))
        p = body.param(state)
        i = body.op('get-tuple-element', S('s32'), [p], 'index=0')
        x = body.op('get-tuple-element', S('s32', (3,)), [p], 'index=1')
        mm = body.op('get-tuple-element', S('s32', (3, 4)), [p], 'index=2')
        rs = body.op('reduce', S('s32', (3,)), [mm, body.constant(np.int32(0), 's32')],
                     'dimensions={1}, to_apply=%%%s' % add.name)
        body.finish(body.op('tuple', state, [body.op('add', S('s32'), [i, body.constant(np.int32(1), 's32')]),
                                             body.op('add', S('s32', (3,)), [x, rs]), mm]))
        x0 = g.array('s32', (3,), lo=-9, hi=9)
        init = c.op('tuple', state, [c.constant(np.int32(0), 's32'), c.param(x0, 's32'), c.param(m, 's32')])
        w = c.op('while', state, [init], 'condition=%%%s, body=%%%s' % (cond.name, body.name))
        c.out(c.op('get-tuple-element', S('s32', (3,)), [w], 'index=1'),
              (x0 + trips * m.sum(axis=1)).astype(np.int32))
        suite.add(c)


# --------------------------------------------------------------------------------------
# conditional

def add_conditional_pred():
    for val in (True, False):
        for shape in ((4,), (2, 3), ()):
            c = kt.Case('conditional/pred_%s/%s' % ('true' if val else 'false', 'x'.join(map(str, shape)) or 'scalar'))
            a = g.array('f32', shape, special=False)
            b = g.array('s32', shape, lo=-100, hi=100)
            tc = comp(c, 'on_true')
            p = tc.param(S('f32', shape))
            two = tc.op('broadcast', S('f32', shape), [tc.constant(np.float32(2), 'f32')], 'dimensions={}')
            tc.finish(tc.op('multiply', S('f32', shape), [p, two]))
            fc = comp(c, 'on_false')
            p = fc.param(S('s32', shape))
            fc.finish(fc.op('negate', S('f32', shape), [fc.op('convert', S('f32', shape), [p])]))
            r = c.op('conditional', S('f32', shape), [c.param(np.array(val), 'pred'), c.param(a, 'f32'), c.param(b, 's32')],
                     'true_computation=%%%s, false_computation=%%%s' % (tc.name, fc.name))
            exp = (a * np.float32(2)).astype(np.float32) if val else (-b.astype(np.float32)).astype(np.float32)
            c.out(r, exp)
            suite.add(c)


def add_conditional_index():
    lo, hi = kt.int_range('s32')
    for idx in (0, 1, 2, 3, -1, 100, lo, hi):
        c = kt.Case('conditional/index_%d' % idx)
        x = g.array('f32', (5,), special=False)
        y = g.array('s32', (5,), lo=-50, hi=50)
        z = g.array('f32', (5,), special=False)
        b0 = comp(c, 'branch0')
        p = b0.param(S('f32', (5,)))
        one = b0.op('broadcast', S('f32', (5,)), [b0.constant(np.float32(1), 'f32')], 'dimensions={}')
        b0.finish(b0.op('add', S('f32', (5,)), [p, one]))
        b1 = comp(c, 'branch1')
        p = b1.param(S('s32', (5,)))
        cv = b1.op('convert', S('f32', (5,)), [p])
        b1.finish(b1.op('multiply', S('f32', (5,)), [cv, cv]))
        b2 = comp(c, 'branch2')
        p = b2.param(S('f32', (5,)))
        b2.finish(b2.op('negate', S('f32', (5,)), [p]))
        r = c.op('conditional', S('f32', (5,)),
                 [c.param(np.int32(idx), 's32'), c.param(x, 'f32'), c.param(y, 's32'), c.param(z, 'f32')],
                 'branch_computations={%%%s, %%%s, %%%s}' % (b0.name, b1.name, b2.name))
        branch = idx if 0 <= idx < 3 else 2      # out of range runs the last branch
        if branch == 0:
            exp = (x + np.float32(1)).astype(np.float32)
        elif branch == 1:
            yf = y.astype(np.float32)
            exp = (yf * yf).astype(np.float32)
        else:
            exp = (-z).astype(np.float32)
        c.out(r, exp)
        suite.add(c)


def add_conditional_tuple_result():
    for val in (True, False):
        c = kt.Case('conditional/tuple_result/%s' % ('true' if val else 'false'))
        a = g.array('s32', (3,), lo=-9, hi=9)
        rt = T([S('s32', (3,)), S('f32')])
        tc = comp(c, 'on_true')
        p = tc.param(S('s32', (3,)))
        tc.finish(tc.op('tuple', rt, [p, tc.constant(np.float32(1.5), 'f32')]))
        fc = comp(c, 'on_false')
        p = fc.param(S('s32', (3,)))
        fc.finish(fc.op('tuple', rt, [fc.op('negate', S('s32', (3,)), [p]), fc.constant(np.float32(-2), 'f32')]))
        pa = c.param(a, 's32')
        r = c.op('conditional', rt, [c.param(np.array(val), 'pred'), pa, pa],
                 'true_computation=%%%s, false_computation=%%%s' % (tc.name, fc.name))
        c.out(c.op('get-tuple-element', S('s32', (3,)), [r], 'index=0'), a.copy() if val else (-a).astype(np.int32))
        c.out(c.op('get-tuple-element', S('f32'), [r], 'index=1'), np.float32(1.5 if val else -2))
        suite.add(c)


# --------------------------------------------------------------------------------------
# call, map, tuple

def add_call():
    for t in ('f32', 's32', 'f64', 'u8'):
        c = kt.Case('call/fma_like/%s' % t)
        shape = (2, 3)
        f = comp(c, 'f')
        a, b, cc = f.param(S(t, shape)), f.param(S(t, shape)), f.param(S(t, shape))
        f.finish(f.op('add', S(t, shape), [f.op('multiply', S(t, shape), [a, b]), cc]))
        outer = comp(c, 'outer')
        outer.use(f)
        x, y = outer.param(S(t, shape)), outer.param(S(t, shape))
        r1 = outer.op('call', S(t, shape), [x, y, y], 'to_apply=%%%s' % f.name)
        outer.finish(outer.op('call', S(t, shape), [r1, x, x], 'to_apply=%%%s' % f.name))
        xa = g.array(t, shape, special=False, lo=-3, hi=3) if kt.is_float(t) else g.array(t, shape, lo=-20, hi=20)
        ya = g.array(t, shape, special=False, lo=-3, hi=3) if kt.is_float(t) else g.array(t, shape, lo=-20, hi=20)
        r = c.op('call', S(t, shape), [c.param(xa, t), c.param(ya, t)], 'to_apply=%%%s' % outer.name)
        if kt.is_float(t):
            x64, y64 = xa.astype(np.float64), ya.astype(np.float64)
            r1v = kt.round_to(kt.round_to(x64 * y64, t).astype(np.float64) + y64, t).astype(np.float64)
            exp = kt.round_to(kt.round_to(r1v * x64, t).astype(np.float64) + x64, t)
        else:
            with np.errstate(all='ignore'):
                r1v = (xa * ya + ya).astype(kt.np_dtype(t))
                exp = (r1v * xa + xa).astype(kt.np_dtype(t))
        c.out(r, exp)
        suite.add(c)


def add_map():
    for t, shape in (('f32', (3, 4)), ('s32', (5,)), ('f64', ()), ('s8', (2, 2, 3)), ('f16', (0, 3))):
        c = kt.Case('map/binary/%s/%s' % (t, 'x'.join(map(str, shape)) or 'scalar'))
        f = comp(c, 'f')
        a, b = f.param(S(t)), f.param(S(t))
        mx = f.op('maximum', S(t), [a, b])
        f.finish(f.op('subtract', S(t), [f.op('add', S(t), [mx, mx]), b]))
        xa = g.array(t, shape, special=False, lo=-9, hi=9) if kt.is_float(t) else g.array(t, shape, lo=-30, hi=30)
        ya = g.array(t, shape, special=False, lo=-9, hi=9) if kt.is_float(t) else g.array(t, shape, lo=-30, hi=30)
        r = c.op('map', S(t, shape), [c.param(xa, t), c.param(ya, t)],
                 'dimensions=%s, to_apply=%%%s' % (kt.ints_attr(range(len(shape))), f.name))
        with np.errstate(all='ignore'):
            if kt.is_float(t):
                m = np.maximum(xa, ya).astype(np.float64)
                exp = kt.round_to(kt.round_to(m + m, t).astype(np.float64) - ya.astype(np.float64), t)
            else:
                m = np.maximum(xa, ya)
                exp = (m + m - ya).astype(kt.np_dtype(t))
        c.out(r, exp)
        suite.add(c)
    # Unary map changing the element type.
    c = kt.Case('map/unary_convert/s32_to_f32')
    f = comp(c, 'f')
    a = f.param(S('s32'))
    f.finish(f.op('convert', S('f32'), [f.op('multiply', S('s32'), [a, a])]))
    xa = g.array('s32', (7,), lo=-1000, hi=1000)
    r = c.op('map', S('f32', (7,)), [c.param(xa, 's32')], 'dimensions={0}, to_apply=%%%s' % f.name)
    c.out(r, (xa * xa).astype(np.float32))
    suite.add(c)


def add_tuples():
    c = kt.Case('tuple/nested_get_tuple_element')
    a = g.array('f32', (2, 3))
    b = g.array('s64', (4,))
    d = g.array('pred', ())
    pa, pb, pd = c.param(a, 'f32'), c.param(b, 's64'), c.param(d, 'pred')
    inner = c.op('tuple', T([S('f32', (2, 3)), S('s64', (4,))]), [pa, pb])
    outer = c.op('tuple', T([T([S('f32', (2, 3)), S('s64', (4,))]), S('pred')]), [inner, pd])
    g0 = c.op('get-tuple-element', T([S('f32', (2, 3)), S('s64', (4,))]), [outer], 'index=0')
    c.out(c.op('get-tuple-element', S('s64', (4,)), [g0], 'index=1'), b.copy())
    c.out(c.op('get-tuple-element', S('f32', (2, 3)), [g0], 'index=0'), a.copy())
    c.out(c.op('get-tuple-element', S('pred'), [outer], 'index=1'), d.copy())
    suite.add(c)
    # Parameters passed straight to the outputs, twice, next to a computed value.
    c = kt.Case('tuple/parameter_passthrough')
    a = g.array('u16', (3,))
    pa = c.param(a, 'u16')
    c.out(pa, a.copy())
    c.out(c.op('add', S('u16', (3,)), [pa, pa]), (a + a).astype(np.uint16))
    c.out(pa, a.copy())
    suite.add(c)
    # An empty tuple is a legal value; only its existence is checked here.
    c = kt.Case('tuple/empty_tuple_alongside')
    a = g.array('f32', (2,))
    pa = c.param(a, 'f32')
    c.op('tuple', T([]), [])
    c.out(c.op('negate', S('f32', (2,)), [pa]), -a)
    suite.add(c)


def add_more_loops():
    # Non-tuple loop state.
    for start in (1.0, 100.0, 0.75):
        c = kt.Case('while/array_state/start%g' % start)
        cond = comp(c, 'cond')
        p = cond.param(S('f32', (2,)))
        first = cond.op('slice', S('f32', (1,)), [p], kt.slice_attr([0], [1], [1]))
        v = cond.op('reshape', S('f32'), [first])
        cond.finish(cond.op('compare', S('pred'), [v, cond.constant(np.float32(50), 'f32')], 'direction=LT'))
        body = comp(c, 'body')
        p = body.param(S('f32', (2,)))
        two = body.op('broadcast', S('f32', (2,)), [body.constant(np.float32(2), 'f32')], 'dimensions={}')
        body.finish(body.op('multiply', S('f32', (2,)), [p, two]))
        x = np.array([start, -start], dtype=np.float32)
        w = c.op('while', S('f32', (2,)), [c.param(x, 'f32')], 'condition=%%%s, body=%%%s' % (cond.name, body.name))
        y = x.copy()
        while y[0] < 50:
            y = (y * np.float32(2)).astype(np.float32)
        c.out(w, y)
        suite.add(c)
    # Many iterations (the evaluator must not be quadratic or leak per trip).
    c = kt.Case('while/many_trips/20000')
    state = T([S('s32'), S('s64')])
    cond = comp(c, 'cond')
    p = cond.param(state)
    cond.finish(cond.op('compare', S('pred'), [cond.op('get-tuple-element', S('s32'), [p], 'index=0'),
                                               cond.constant(np.int32(20000), 's32')], 'direction=LT'))
    body = comp(c, 'body')
    p = body.param(state)
    i = body.op('get-tuple-element', S('s32'), [p], 'index=0')
    acc = body.op('get-tuple-element', S('s64'), [p], 'index=1')
    i64 = body.op('convert', S('s64'), [i])
    body.finish(body.op('tuple', state, [body.op('add', S('s32'), [i, body.constant(np.int32(1), 's32')]),
                                         body.op('add', S('s64'), [acc, body.op('multiply', S('s64'), [i64, i64])])]))
    init = c.op('tuple', state, [c.constant(np.int32(0), 's32'), c.constant(np.int64(0), 's64')])
    w = c.op('while', state, [init], 'condition=%%%s, body=%%%s' % (cond.name, body.name))
    c.out(c.op('get-tuple-element', S('s64'), [w], 'index=1'), np.int64(sum(k * k for k in range(20000))))
    suite.add(c)


def add_deep_calls():
    # Chains of nested calls, each adding its depth: legal HLO at any depth (the call
    # graph is acyclic; the parser rejects recursion), so they must evaluate.
    for depth in (40, 100):
        add_call_chain(depth)
    # A call with no operands.
    c = kt.Case('call/no_operands')
    f = comp(c, 'const')
    f.finish(f.op('iota', S('u8', (4,)), [], 'iota_dimension=0'))
    c.out(c.op('call', S('u8', (4,)), [], 'to_apply=%%%s' % f.name), np.arange(4, dtype=np.uint8))
    suite.add(c)


def add_call_chain(depth):
    c = kt.Case('call/nested_chain/%d' % depth)
    prev = None
    for d in range(depth):
        f = comp(c, 'level%d' % d)
        if prev is not None:
            f.use(prev)
        x = f.param(S('s32'))
        y = f.op('add', S('s32'), [x, f.constant(np.int32(d), 's32')])
        if prev is not None:
            y = f.op('call', S('s32'), [y], 'to_apply=%%%s' % prev.name)
        f.finish(y)
        prev = f
    r = c.op('call', S('s32'), [c.param(np.int32(5), 's32')], 'to_apply=%%%s' % prev.name)
    c.out(r, np.int32(5 + sum(range(depth))))
    suite.add(c)


def add_map_three():
    c = kt.Case('map/ternary/f64')
    f = comp(c, 'f')
    a, b, d = f.param(S('f64')), f.param(S('f64')), f.param(S('f64'))
    f.finish(f.op('select', S('f64'), [f.op('compare', S('pred'), [a, b], 'direction=GT'), d,
                                       f.op('subtract', S('f64'), [a, b])]))
    xs = [g.array('f64', (4, 5), special=False) for _ in range(3)]
    r = c.op('map', S('f64', (4, 5)), [c.param(x, 'f64') for x in xs], 'dimensions={0,1}, to_apply=%%%s' % f.name)
    c.out(r, np.where(xs[0] > xs[1], xs[2], xs[0] - xs[1]))
    suite.add(c)


add_counted_loops()
add_data_dependent_loop()
add_fibonacci()
add_nested_loop()
add_loop_with_reduce()
add_conditional_pred()
add_conditional_index()
add_conditional_tuple_result()
add_call()
add_map()
add_tuples()
add_more_loops()
add_deep_calls()
add_map_three()

if __name__ == '__main__':
    sys.exit(suite.main())
