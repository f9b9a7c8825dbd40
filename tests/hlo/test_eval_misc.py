"""Remaining ops kiln's evaluator implements, against numpy: topk (largest / smallest,
ties to the lower index), batch-norm-inference, fusion (a call of its fused
computation), opt-barrier, get-dimension-size, replica-id / partition-id (0 on a single
device), after-all + add-dependency, copy-start / copy-done.

topk, the plumbing ops and get-dimension-size move or count values: exact.
batch-norm-inference is (x - mean) * scale / sqrt(variance + epsilon) + offset evaluated
in the element type, so it gets a bound of a few roundings of its terms:
8 u ((|x| + |mean|) |scale / sqrt(var + eps)| + |offset|), u the unit roundoff.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, Shape  # noqa: E402

g = kt.Gen(271828)
suite = kt.Suite('kiln evaluator: topk, batch-norm-inference, fusion and plumbing ops vs numpy')


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


def add_topk():
    k = 0
    for t in ('f32', 's32', 'f16', 'bf16', 'f64', 'u8', 's64'):
        for shape, kk in (((10,), 3), ((5, 10), 4), ((2, 3, 6), 6), ((4, 7), 1), ((3, 5), 0)):
            for largest in (True, False):
                k += 1
                # Few distinct values: ties are frequent and must go to the lower index.
                pool = kt.storage([1.0, -2.0, 3.5, 7.0, 0.5, 3.5, -8.0], t) if kt.is_float(t) else \
                    np.array([1, 2, 3, 7, 0, 3, 9], dtype=kt.np_dtype(t))
                x = pool[g.rng.integers(0, len(pool), size=shape)]
                key = -x.astype(np.float64) if largest else x.astype(np.float64)
                order = np.argsort(key, axis=-1, kind='stable')[..., :kk]
                vals = np.take_along_axis(x, order, axis=-1)
                out_shape = shape[:-1] + (kk,)
                c = kt.Case('topk/%s/%s/k%d/%s' % (t, sname(shape), kk, 'largest' if largest else 'smallest'))
                tup = Shape.tuple([S(t, out_shape), S('s32', out_shape)])
                r = c.op('topk', tup, [c.param(x, t)], 'k=%d, largest=%s' % (kk, 'true' if largest else 'false'))
                c.out(c.op('get-tuple-element', S(t, out_shape), [r], 'index=0'), vals)
                c.out(c.op('get-tuple-element', S('s32', out_shape), [r], 'index=1'), order.astype(np.int32))
                suite.add(c)


def add_batch_norm_inference():
    for t in ('f32', 'f64', 'f16', 'bf16'):
        for shape, fi in (((2, 3, 4, 5), 3), ((2, 3, 4, 5), 1), ((6, 4), 1), ((7,), 0), ((3, 0, 2), 2)):
            for eps in (0.001, 1.0):
                c = kt.Case('batch-norm-inference/%s/%s/feature%d/eps%g' % (t, sname(shape), fi, eps))
                nf = shape[fi]
                x = g.array(t, shape, special=False)
                scale = g.array(t, (nf,), special=False)
                offset = g.array(t, (nf,), special=False)
                mean = g.array(t, (nf,), special=False)
                var = kt.storage(np.abs(g.array('f64', (nf,), special=False)) + 0.1, t)
                bshape = [1] * len(shape)
                bshape[fi] = nf

                def b(v):
                    return v.astype(np.float64).reshape(bshape)
                # epsilon is an f32 attribute in XLA, whatever the element type.
                factor = b(scale) / np.sqrt(b(var) + float(np.float32(eps)))
                exact = (x.astype(np.float64) - b(mean)) * factor + b(offset)
                u = kt.UNIT_ROUNDOFF[t]
                atol = 8 * u * ((np.abs(x.astype(np.float64)) + np.abs(b(mean))) * np.abs(factor) + np.abs(b(offset)))
                atol = atol + 2.0 ** (kt.MIN_EXP[t] - kt.MANT_BITS[t])
                ps = [c.param(v, t) for v in (x, scale, offset, mean, var)]
                r = c.op('batch-norm-inference', S(t, shape), ps, 'epsilon=%r, feature_index=%d' % (eps, fi))
                c.out(r, kt.round_to(exact, t), kt.CLOSE(0.0, atol))
                suite.add(c)


def add_fusion():
    for t in ('f32', 's32', 'f16'):
        c = kt.Case('fusion/loop/%s' % t)
        shape = (3, 4)
        f = kt.Computation('%sfused' % c.b.prefix.replace('.', '_'))
        a, b2 = f.param(S(t, shape)), f.param(S(t, shape))
        f.finish(f.op('multiply', S(t, shape), [f.op('add', S(t, shape), [a, b2]), b2]))
        c.use(f)
        x = g.array(t, shape, special=False, lo=-4, hi=4) if kt.is_float(t) else g.array(t, shape, lo=-100, hi=100)
        y = g.array(t, shape, special=False, lo=-4, hi=4) if kt.is_float(t) else g.array(t, shape, lo=-100, hi=100)
        r = c.op('fusion', S(t, shape), [c.param(x, t), c.param(y, t)], 'kind=kLoop, calls=%%%s' % f.name)
        if kt.is_float(t):
            s = kt.round_to(x.astype(np.float64) + y.astype(np.float64), t)
            exp = kt.round_to(s.astype(np.float64) * y.astype(np.float64), t)
        else:
            exp = ((x + y) * y).astype(kt.np_dtype(t))
        c.out(r, exp)
        suite.add(c)


def add_plumbing():
    c = kt.Case('opt-barrier/tuple')
    x = g.array('f32', (3,))
    i = g.array('s32', ())
    tup = Shape.tuple([S('f32', (3,)), S('s32')])
    t = c.op('tuple', tup, [c.param(x, 'f32'), c.param(i, 's32')])
    ob = c.op('opt-barrier', tup, [t])
    c.out(c.op('get-tuple-element', S('f32', (3,)), [ob], 'index=0'), x.copy())
    c.out(c.op('get-tuple-element', S('s32'), [ob], 'index=1'), i.copy())
    suite.add(c)
    for shape in ((3, 7), (0, 5, 2), (9,)):
        for d in range(len(shape)):
            c = kt.Case('get-dimension-size/%s/dim%d' % (sname(shape), d))
            x = g.array('f32', shape)
            r = c.op('get-dimension-size', S('s32'), [c.param(x, 'f32')], 'dimensions={%d}' % d)
            c.out(r, np.int32(shape[d]))
            suite.add(c)
    c = kt.Case('replica-id_partition-id')
    c.out(c.op('replica-id', S('u32'), []), np.uint32(0))
    c.out(c.op('partition-id', S('u32'), []), np.uint32(0))
    suite.add(c)
    c = kt.Case('add-dependency/after-all')
    x = g.array('f64', (2, 2))
    tok = c.op('after-all', Shape('token', ()), [])
    c.out(c.op('add-dependency', S('f64', (2, 2)), [c.param(x, 'f64'), tok]), x.copy())
    suite.add(c)
    c = kt.Case('copy-start/copy-done')
    x = g.array('s16', (5,))
    cs = c.op('copy-start', Shape.tuple([S('s16', (5,)), S('s16', (5,)), S('u32')]), [c.param(x, 's16')])
    c.out(c.op('copy-done', S('s16', (5,)), [cs]), x.copy())
    suite.add(c)


add_topk()
add_batch_norm_inference()
add_fusion()
add_plumbing()

if __name__ == '__main__':
    sys.exit(suite.main())
