"""The model zoo for test_jax_models.py: small real JAX programs whose HLO kiln must read
and evaluate, each with fixed-seed inputs and a stated tolerance.

A case is registered with @case(name, tol): the decorated function receives a seeded
numpy Generator and returns (fn, args) -- a JAX-traceable function and the numpy arrays
it is called with (each array becomes one entry parameter, p0, p1, ... in order). The
functions cover what JAX programs actually emit: dense layers, convolutions in several
layouts, pooling, normalisation, attention, control flow (while/conditional from fori,
while_loop, cond, switch, scan), sort, gather/scatter from indexing, pads and dynamic
slices, integer corner cases, f16/bf16 arithmetic, conversions, gradients (transposed
convolutions, select-and-scatter) and PRNG bit mixing.

Tolerances compare kiln with JAX's own results on XLA:CPU. Integer, pred and
data-movement outputs must match exactly (bit for bit, NaNs matching NaNs) -- they involve
no rounding choices. Float outputs of arithmetic allow |kiln - jax| <= atol + rtol*|jax|,
where rtol reflects what may legitimately differ: XLA:CPU evaluates transcendental
functions with its own polynomial approximations (a few ulp apart from a correctly
rounded result) and sums/dots/convolutions in f32 in an order of its choosing, while
kiln's evaluator accumulates in double. Values near zero produced by cancellation get
the absolute term, sized to the magnitude of the summed terms.
"""

import math
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


class Tol:
    """How a float output is compared: exact (bit equality, NaN == NaN) or
    |got - want| <= atol + rtol * |want| with NaN/inf positions matching exactly."""

    def __init__(self, rtol=0.0, atol=0.0, exact=False, why=''):
        self.rtol, self.atol, self.exact, self.why = rtol, atol, exact, why

    def __str__(self):
        return 'exact' if self.exact else 'rtol=%g atol=%g' % (self.rtol, self.atol)


EXACT = Tol(exact=True, why='integer/pred/data movement: no rounding involved')
# A few ulp of f32 (2^-24 = 6e-8): XLA:CPU's vectorised exp/log/tanh/erf/... are
# polynomial approximations accurate to ~1-4 ulp; kiln uses libm in double.
ELEMENTWISE_F32 = Tol(rtol=1e-6, atol=1e-7, why='f32 transcendentals: XLA:CPU approximations within a few ulp')
# Dots, convolutions and reductions: XLA:CPU sums in f32 in a vectorised/blocked order of
# its choosing; kiln accumulates dots and convolutions in double (rounded once) and folds
# reduce/reduce-window sequentially through the f32 reducer (row-major order, as XLA's own
# HloEvaluator does). For K terms of magnitude ~1 either f32 order errs by ~K * 2^-24.
REDUCE_F32 = Tol(rtol=1e-5, atol=1e-5, why='f32 sums/dots/convs: XLA:CPU f32 accumulation order vs kiln double')
# Deep chains (loops, attention, gradients) compound the per-step differences above.
DEEP_F32 = Tol(rtol=1e-4, atol=1e-5, why='chains of f32 dots/transcendentals: per-step differences compound')
# f64 factorizations (LU, QR, Cholesky) of well-conditioned 5x5 matrices: different
# elimination orders differ by a few hundred ulp of 2^-53 at most.
F64 = Tol(rtol=1e-11, atol=1e-12, why='f64 factorizations: elimination order differences of ~100 ulp')
# f16 has 11 significant bits (ulp 2^-10 ~ 1e-3 relative); allow two ulp.
F16 = Tol(rtol=2e-3, atol=1e-3, why='f16: two ulp (2^-10 relative each)')
# bf16 has 8 significant bits (ulp up to 2^-7 relative); allow two ulp.
BF16 = Tol(rtol=1.6e-2, atol=1e-2, why='bf16: two ulp (up to 2^-7 relative each)')


def storage_array(a):
    """JAX value -> the array kiln reads/writes for it (bf16 travels as f32)."""
    a = np.asarray(a)
    if a.dtype == jnp.bfloat16:
        return a.astype(np.float32)
    return a


def compare_output(got, want, tol):
    """Returns (ok, detail, ratio) for one output array."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, 'got %s%s, want %s%s' % (got.dtype, list(got.shape), want.dtype, list(want.shape)), 0.0
    if want.dtype.kind != 'f':
        bad = int(np.count_nonzero(got != want))
        return bad == 0, '' if bad == 0 else '%d of %d elements differ' % (bad, want.size), 0.0
    gn, wn = np.isnan(got), np.isnan(want)
    if not np.array_equal(gn, wn):
        return False, 'NaN positions differ at %d elements' % int(np.count_nonzero(gn != wn)), 0.0
    if tol.exact:
        ubits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
        bad = int(np.count_nonzero((got.view(ubits) != want.view(ubits)) & ~wn))
        return bad == 0, '' if bad == 0 else '%d of %d elements differ bitwise' % (bad, want.size), 0.0
    g = got[~wn].astype(np.float64)
    w = want[~wn].astype(np.float64)
    ginf, winf = np.isinf(g), np.isinf(w)
    if not np.array_equal(ginf, winf) or not np.array_equal(g[winf], w[winf]):
        return False, 'infinities differ', 0.0
    g, w = g[~winf], w[~winf]
    if g.size == 0:
        return True, '', 0.0
    err = np.abs(g - w)
    ratio = float(np.max(err / (tol.atol + tol.rtol * np.abs(w))))
    detail = 'max|err| %.3g, %.2f of tol' % (float(np.max(err)), ratio)
    return ratio <= 1.0, detail, ratio


class Case:
    def __init__(self, name, make, tol, x64=False):
        self.name, self.make, self.tol, self.x64 = name, make, tol, x64

    def build(self):
        """Returns (fn, args) with inputs drawn from a generator seeded by the case name,
        so adding or filtering cases never changes another case's data."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return self.make(rng)


CASES = []


def case(name, tol, x64=False):
    def register(make):
        CASES.append(Case(name, make, tol, x64))
        return make
    return register


def f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def i32(rng, lo, hi, *shape):
    return rng.integers(lo, hi, size=shape, dtype=np.int64).astype(np.int32)


def bf16(a):
    return np.asarray(a, dtype=np.float32).astype(jnp.bfloat16)


NHWC = ('NHWC', 'HWIO', 'NHWC')


# --------------------------------------------------------------------------------------
# Networks

@case('mlp_softmax', REDUCE_F32)
def _(rng):
    def mlp(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        return jax.nn.softmax(h @ w2 + b2, axis=-1)
    return mlp, [f32(rng, 8, 16), f32(rng, 16, 32, scale=0.25), f32(rng, 32),
                 f32(rng, 32, 10, scale=0.25), f32(rng, 10)]


@case('mlp_grad', DEEP_F32)
def _(rng):
    def loss(params, x, labels):
        w1, b1, w2, b2 = params
        h = jnp.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, 5) * logp, axis=-1))

    def step(w1, b1, w2, b2, x, labels):
        value, grads = jax.value_and_grad(loss)((w1, b1, w2, b2), x, labels)
        return (value,) + tuple(grads)
    return step, [f32(rng, 6, 12, scale=0.3), f32(rng, 12), f32(rng, 12, 5, scale=0.3),
                  f32(rng, 5), f32(rng, 4, 6), i32(rng, 0, 5, 4)]


@case('cnn_small', REDUCE_F32)
def _(rng):
    def cnn(x, k1, k2, w):
        y = lax.conv_general_dilated(x, k1, (1, 1), 'SAME', dimension_numbers=NHWC)
        y = jax.nn.relu(y)
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID')
        y = lax.conv_general_dilated(y, k2, (2, 2), 'VALID', dimension_numbers=NHWC)
        y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), 'SAME') / 4.0
        return y.reshape(y.shape[0], -1) @ w
    return cnn, [f32(rng, 2, 12, 12, 3), f32(rng, 3, 3, 3, 8, scale=0.3),
                 f32(rng, 3, 3, 8, 6, scale=0.2), f32(rng, 24, 5, scale=0.3)]


@case('conv_grouped_strided', REDUCE_F32)
def _(rng):
    def conv(x, k):
        return lax.conv_general_dilated(x, k, (2, 1), ((1, 2), (0, 1)), dimension_numbers=NHWC,
                                        feature_group_count=2)
    return conv, [f32(rng, 1, 7, 7, 4), f32(rng, 3, 3, 2, 6)]


@case('conv_depthwise_nchw', REDUCE_F32)
def _(rng):
    def conv(x, k):
        return lax.conv_general_dilated(x, k, (1, 1), 'SAME', feature_group_count=3,
                                        dimension_numbers=('NCHW', 'OIHW', 'NCHW'))
    return conv, [f32(rng, 2, 3, 8, 8), f32(rng, 6, 1, 3, 3)]


@case('conv_transpose', REDUCE_F32)
def _(rng):
    def deconv(x, k):
        return lax.conv_transpose(x, k, (2, 2), 'SAME', dimension_numbers=NHWC)
    return deconv, [f32(rng, 1, 5, 5, 4), f32(rng, 3, 3, 4, 2)]


@case('conv_dilated', REDUCE_F32)
def _(rng):
    def conv(x, k, x1, k1):
        a = lax.conv_general_dilated(x, k, (1, 1), 'SAME', rhs_dilation=(2, 2), dimension_numbers=NHWC)
        b = lax.conv_general_dilated(x1, k1, (3,), ((2, 1),), lhs_dilation=(2,), rhs_dilation=(3,),
                                     dimension_numbers=('NWC', 'WIO', 'NWC'))
        return a, b
    return conv, [f32(rng, 2, 9, 9, 2), f32(rng, 3, 3, 2, 3), f32(rng, 2, 20, 3), f32(rng, 3, 3, 4)]


@case('conv_grad_grouped', DEEP_F32)
def _(rng):
    # The weight gradient of a grouped convolution is a convolution with
    # batch_group_count; the input gradient one with lhs_dilation and reversed kernels.
    def loss(x, k):
        y = lax.conv_general_dilated(x, k, (2, 2), 'SAME', dimension_numbers=NHWC, feature_group_count=2)
        return jnp.sum(jnp.sin(y))
    return jax.grad(loss, argnums=(0, 1)), [f32(rng, 2, 6, 6, 4), f32(rng, 3, 3, 2, 4, scale=0.5)]


@case('pools_and_grad', REDUCE_F32)
def _(rng):
    def pools(x):
        maxpool = lambda v: lax.reduce_window(v, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME')
        avg = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID') * 0.25
        dilated = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), 'VALID',
                                    window_dilation=(1, 2, 1, 1))
        # The gradient of max pooling is select-and-scatter.
        grad = jax.grad(lambda v: jnp.sum(maxpool(v) ** 2))(x)
        return maxpool(x), avg, dilated, grad
    return pools, [f32(rng, 2, 7, 7, 3)]


@case('layer_norm', REDUCE_F32)
def _(rng):
    def layer_norm(x, gamma, beta):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * lax.rsqrt(var + 1e-5) * gamma + beta
    return layer_norm, [f32(rng, 4, 6, 32, scale=3.0) + 1.0, f32(rng, 32), f32(rng, 32)]


@case('attention_block', DEEP_F32)
def _(rng):
    def block(x, wq, wk, wv, wo):
        b, t, d = x.shape
        h = 4
        q = (x @ wq).reshape(b, t, h, d // h)
        k = (x @ wk).reshape(b, t, h, d // h)
        v = (x @ wv).reshape(b, t, h, d // h)
        s = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(d // h)
        causal = jnp.tril(jnp.ones((t, t), bool))
        s = jnp.where(causal, s, -1e9)
        p = jax.nn.softmax(s, axis=-1)
        o = jnp.einsum('bhqk,bkhd->bqhd', p, v).reshape(b, t, d)
        y = x + o @ wo
        mu = y.mean(-1, keepdims=True)
        return (y - mu) / jnp.sqrt(y.var(-1, keepdims=True) + 1e-6)
    return block, [f32(rng, 2, 8, 16)] + [f32(rng, 16, 16, scale=0.25) for _ in range(4)]


@case('rnn_scan', DEEP_F32)
def _(rng):
    def rnn(xs, h0, wx, wh):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h.sum()
        h, sums = lax.scan(step, h0, xs)
        back, _ = lax.scan(lambda c, x: (c * 0.5 + x, None), jnp.zeros_like(xs[0]), xs, reverse=True)
        return h, sums, back
    return rnn, [f32(rng, 10, 2, 3), f32(rng, 2, 4), f32(rng, 3, 4, scale=0.5), f32(rng, 4, 4, scale=0.5)]


@case('vmap_batched', REDUCE_F32)
def _(rng):
    def per_example(x, i, w):
        y = jnp.tanh(w @ x)[i] + lax.dynamic_slice(x, (i,), (2,)).sum()
        return y, x.at[i].add(1.0), jnp.outer(x, x)[i]
    return jax.vmap(per_example, in_axes=(0, 0, None)), [f32(rng, 6, 5), i32(rng, 0, 5, 6), f32(rng, 5, 5)]


# --------------------------------------------------------------------------------------
# Elementwise math

@case('activations', Tol(rtol=1e-6, atol=1e-6, why='as ELEMENTWISE_F32, but gelu/silu-style x*(1+tanh(u)) '
                         'cancel for negative x: absolute error ~|x|*ulp(1), and XLA saturates tanh to -1 early'))
def _(rng):
    def acts(x):
        return (jax.nn.gelu(x, approximate=False), jax.nn.gelu(x, approximate=True), jnp.tanh(x),
                lax.erf(x), jax.nn.sigmoid(x), jax.nn.softplus(x), jax.nn.silu(x),
                jax.nn.elu(x), jax.nn.leaky_relu(x), jax.nn.relu6(x))
    x = np.concatenate([f32(rng, 40, scale=3.0), np.linspace(-9, 9, 24, dtype=np.float32)])
    return acts, [x]


@case('math_unary', ELEMENTWISE_F32)
def _(rng):
    # arcsin gets tanh(x)*0.8, not tanh(x): near +-1 its slope amplifies the inputs' ulp
    # differences tenfold.
    def math_fns(x, y):
        ax = jnp.abs(x)
        return (jnp.exp(x), jnp.log(ax), jnp.log1p(ax), jnp.expm1(x), jnp.sin(x), jnp.cos(x),
                jnp.tan(x * 0.4), lax.atan2(x, y), jnp.sqrt(ax), lax.rsqrt(ax + 0.5), lax.cbrt(x),
                jnp.power(ax, y), x / y, lax.integer_pow(x, 3), jnp.arctan(x), jnp.arcsin(jnp.tanh(x) * 0.8),
                jnp.sinh(x), jnp.cosh(x))
    return math_fns, [f32(rng, 48, scale=2.0), f32(rng, 48, scale=2.0)]


@case('special_values', ELEMENTWISE_F32)
def _(rng):
    # Signed zeros, infinities and NaNs through the arithmetic JAX programs use most.
    def specials(x, y):
        return (x + y, x * y, x / y, jnp.maximum(x, y), jnp.minimum(x, y), jnp.exp(x), jnp.tanh(x),
                jnp.sqrt(x), jnp.log(x), jax.nn.relu(x), jnp.sign(x), jnp.abs(x), jnp.floor(x),
                jnp.round(x), jnp.isnan(x), jnp.isfinite(x), x == y, x < y, jnp.nan_to_num(x))
    vals = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5, -2.5, 0.5, 1e30, -1e-30],
                    dtype=np.float32)
    x = np.repeat(vals, len(vals))
    y = np.tile(vals, len(vals))
    return specials, [x, y]


@case('rounding', EXACT)
def _(rng):
    def rounding(x):
        return (jnp.floor(x), jnp.ceil(x), jnp.round(x), lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                jnp.trunc(x), jnp.fmod(x, 1.5), jnp.remainder(x, 1.5), jnp.abs(x), -x)
    x = np.concatenate([np.arange(-3, 3.25, 0.25, dtype=np.float32), f32(rng, 16, scale=4.0)])
    # fmod/remainder of values with few significant bits are exact in any order.
    x = np.round(x * 8) / 8
    return rounding, [x.astype(np.float32)]


# --------------------------------------------------------------------------------------
# Reductions, indices

@case('reductions_multi_axis', REDUCE_F32)
def _(rng):
    def reds(x, i):
        return (x.sum(axis=(0, 2)), x.max(axis=1), x.min(), jnp.prod(x * 0.5 + 1.0, axis=(1, 2)),
                x.mean(axis=0), x.var(axis=1), jnp.any(x > 1.5, axis=0), jnp.all(x > -2.5, axis=(1, 2)),
                i.sum(axis=1), i.max(axis=(0, 1)), i.min(axis=0), jax.nn.logsumexp(x, axis=-1),
                jnp.linalg.norm(x, axis=-1))
    return reds, [f32(rng, 3, 4, 5), i32(rng, -1000, 1000, 6, 7)]


@case('argmax_argmin', EXACT)
def _(rng):
    def arg(x, xn, xi):
        return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(xn, axis=1),
                jnp.argmin(xn, axis=1), jnp.argmax(xi, axis=0), jnp.argmin(xi, axis=1), jnp.argmax(x))
    xn = f32(rng, 4, 6)
    xn[1, 2] = np.nan
    xn[3, 0] = np.nan
    xn[3, 4] = np.nan
    return arg, [f32(rng, 5, 7), xn, i32(rng, 0, 3, 5, 7)]


@case('cumulative', REDUCE_F32)
def _(rng):
    def cums(x, xi):
        n = x.shape[0]
        window_cumsum = lax.reduce_window(x, 0.0, lax.add, (n, 1), (1, 1), ((n - 1, 0), (0, 0)))
        return (jnp.cumsum(x, axis=0), jnp.cumprod(x * 0.2 + 1.0, axis=1), lax.cummax(x, axis=1),
                lax.cummin(x, axis=0, reverse=True), jnp.cumsum(xi, axis=1), window_cumsum)
    return cums, [f32(rng, 9, 5), i32(rng, -50, 50, 4, 11)]


# --------------------------------------------------------------------------------------
# Control flow

@case('fori_loop', DEEP_F32)
def _(rng):
    def fori(m, v):
        def body(i, carry):
            v, acc = carry
            v = m @ v
            v = v / jnp.linalg.norm(v)
            return v, acc + i * v[0]
        return lax.fori_loop(0, 12, body, (v, jnp.float32(0.0)))
    return fori, [f32(rng, 5, 5), f32(rng, 5)]


@case('while_loop', EXACT)
def _(rng):
    def collatz(x):
        def cond(c):
            return jnp.any(c[0] != 1)

        def body(c):
            v, steps = c
            done = v == 1
            nxt = jnp.where(v % 2 == 0, v // 2, 3 * v + 1)
            return jnp.where(done, v, nxt), steps + (~done).astype(jnp.int32)
        return lax.while_loop(cond, body, (x, jnp.zeros_like(x)))
    return collatz, [np.array([1, 2, 3, 6, 7, 9, 27, 16], np.int32)]


@case('while_newton', ELEMENTWISE_F32)
def _(rng):
    def newton_sqrt(a):
        def cond(c):
            x, i = c
            return (jnp.max(jnp.abs(x * x - a)) > 1e-5 * jnp.max(a)) & (i < 50)
        return lax.while_loop(cond, lambda c: (0.5 * (c[0] + a / c[0]), c[1] + 1), (a, 0))
    return newton_sqrt, [np.abs(f32(rng, 10, scale=5.0)) + 0.5]


@case('cond_switch', ELEMENTWISE_F32)
def _(rng):
    def branches(x, i):
        a = lax.cond(x.sum() > 0, jnp.sin, lambda v: jnp.cos(v) * 2.0, x)
        b = lax.cond(x.sum() < 0, jnp.sin, lambda v: jnp.cos(v) * 2.0, x)
        fns = [lambda v: v + 1.0, lambda v: v * v, lambda v: -jnp.exp(v)]
        # switch clamps out-of-range indices into the branch range.
        return a, b, lax.switch(i[0], fns, x), lax.switch(i[1], fns, x), lax.switch(i[2], fns, x)
    return branches, [f32(rng, 6), np.array([1, 7, -3], np.int32)]


# --------------------------------------------------------------------------------------
# Sort, gather, scatter

@case('sort_argsort', EXACT)
def _(rng):
    def sorts(x, keys, vals):
        ks, vs = lax.sort((keys, vals), num_keys=1)
        return (jnp.sort(x, axis=-1), jnp.argsort(x, axis=0), ks, vs, jnp.sort(x, axis=0, descending=True),
                jnp.argsort(keys, descending=True))
    x = f32(rng, 5, 8)
    x[0, :4] = [np.nan, -0.0, 0.0, np.inf]
    x[2, 1:4] = [-np.inf, 0.0, -0.0]
    return sorts, [x, i32(rng, 0, 4, 12), f32(rng, 12)]


@case('top_k', EXACT)
def _(rng):
    # Unoptimized: the topk opcode; XLA:CPU turns it into a "TopK" custom-call.
    def top(x):
        return lax.top_k(x, 3)
    return top, [f32(rng, 4, 10)]


@case('gather_indexing', EXACT)
def _(rng):
    def gathers(x, idx, pts, oob):
        return (jnp.take(x, idx, axis=0), x[pts[:, 0], pts[:, 1]], x[1:5, idx[:2]],
                jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1),
                jnp.take(x, oob, axis=1, mode='clip'), jnp.take(x, oob, axis=1, mode='fill', fill_value=-1.0),
                x[idx[:, None], idx[None, :2]])
    return gathers, [f32(rng, 6, 5), np.array([3, -1, 0, 5], np.int32), i32(rng, 0, 5, 7, 2),
                     np.array([-7, 0, 4, 5, 100], np.int32)]


@case('scatter_updates', EXACT)
def _(rng):
    def scatters(x, xi, idx, uniq, upd, updi, oob):
        return (xi.at[idx].add(updi), x.at[uniq].set(upd[:3]), xi.at[idx].max(updi), xi.at[idx].mul(updi),
                x.at[1:4, ::2].set(-1.0), xi.at[oob].add(updi[:3], mode='drop'), x.at[uniq, 1].min(upd[:3, 0]),
                x.at[jnp.array([0, 2]), jnp.array([1, 1])].set(7.0))
    return scatters, [f32(rng, 5, 4), i32(rng, -9, 9, 5, 4), np.array([0, 2, 0, 4, 2], np.int32),
                      np.array([3, 1, 4], np.int32), f32(rng, 5, 4), i32(rng, -3, 4, 5, 4),
                      np.array([1, 9, -9], np.int32)]


@case('scatter_add_float', REDUCE_F32)
def _(rng):
    # Duplicate indices: the order of the additions is unspecified.
    def seg(data, seg_ids):
        return jax.ops.segment_sum(data, seg_ids, num_segments=4), jnp.zeros(6).at[seg_ids].add(1.0)
    return seg, [f32(rng, 10, 3), i32(rng, 0, 4, 10)]


# --------------------------------------------------------------------------------------
# Data movement

@case('pad_lax_and_modes', EXACT)
def _(rng):
    def pads(x):
        return (lax.pad(x, 0.0, ((1, -1, 1), (-2, 3, 2))), lax.pad(x, -1.0, ((-1, -1, 0), (0, 0, 3))),
                jnp.pad(x, ((1, 2), (0, 3)), mode='reflect'), jnp.pad(x, 2, mode='edge'),
                jnp.pad(x, ((0, 1), (2, 0)), mode='wrap'))
    return pads, [f32(rng, 5, 6)]


@case('dynamic_slices', EXACT)
def _(rng):
    def dyn(x, u, i, j):
        return (lax.dynamic_slice(x, (i, j), (3, 2)), lax.dynamic_update_slice(x, u, (i, j)),
                lax.dynamic_slice_in_dim(x, j, 2, axis=1), lax.dynamic_update_slice(x, u, (j, i)),
                lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False))
    return dyn, [f32(rng, 6, 5), f32(rng, 2, 3), np.int32(5), np.int32(-2)]


@case('data_movement', EXACT)
def _(rng):
    def move(x, y, z):
        return (jnp.concatenate([x, y, x[:1]], axis=0), jnp.transpose(z, (2, 0, 1)), z.reshape(6, -1),
                jnp.broadcast_to(x[:, None, :], (2, 3, 4)), x[::-1, 1::2], jnp.tile(x, (2, 1)),
                jnp.repeat(y, 2, axis=1), jnp.stack([x, x * 0 + 1], axis=-1), jnp.flip(z, axis=(0, 2)),
                z[:, 1, ::-2], jnp.moveaxis(z, 0, -1).reshape(-1), jnp.expand_dims(y, 0),
                jnp.roll(x, 1, axis=1), jnp.triu(z[0]), jnp.eye(3, 4, k=1))
    return move, [f32(rng, 2, 4), f32(rng, 3, 4), f32(rng, 2, 3, 4)]


# --------------------------------------------------------------------------------------
# Integers, types, conversions

@case('int_ops', EXACT)
def _(rng):
    def ints(a, b, s):
        big = jnp.int32(-2147483648)
        u, v = a.astype(jnp.uint32), b.astype(jnp.uint32)
        return (lax.div(a, b), lax.rem(a, b), a // jnp.where(b == 0, 1, b), a % jnp.where(b == 0, 1, b),
                lax.div(big, jnp.int32(-1)), lax.rem(big, jnp.int32(-1)),
                lax.shift_left(a, s), lax.shift_right_arithmetic(a, s), lax.shift_right_logical(a, s),
                a & b, a | b, a ^ b, ~a, lax.population_count(a), lax.clz(a), jnp.abs(a), jnp.sign(a),
                a * b * 65537, a + 2147483000, jnp.maximum(a, b), lax.integer_pow(a, 3),
                u // jnp.maximum(v, 1), u % jnp.maximum(v, 1), u >> 3, (a.astype(jnp.int8) * 3),
                (u.astype(jnp.uint8) + 200), a.astype(jnp.int16) // 7, u < v, a < b)
    a = np.concatenate([i32(rng, -100000, 100000, 20), np.array([0, -1, 1, 7, -7, 2147483647, -2147483648,
                                                                  -9, 9, 100], np.int32)])
    b = np.concatenate([i32(rng, -50, 50, 20), np.array([3, 3, -3, 0, 0, -1, 2, 4, -4, 0], np.int32)])
    s = np.concatenate([i32(rng, 0, 31, 20), np.array([0, 31, 32, 33, -1, -32, 1, 100, 5, 16], np.int32)])
    return ints, [a, b, s]


@case('f16_arith', F16)
def _(rng):
    def half(h, g):
        return (h * g + h, jnp.exp(h * 0.5), jnp.tanh(g), h / (jnp.abs(g) + 1), h @ g.T, jnp.sum(h, axis=1),
                jnp.maximum(h, g), jnp.sqrt(jnp.abs(h)), (h * 1000) * (g * 1000))
    return half, [f32(rng, 4, 8).astype(np.float16), f32(rng, 4, 8).astype(np.float16)]


@case('bf16_arith', BF16)
def _(rng):
    def bhalf(b, c, w):
        return (b * c - b, jnp.exp(b), jax.nn.gelu(c), b @ w, jnp.mean(b, axis=0),
                jnp.dot(b, w, preferred_element_type=jnp.float32), jax.nn.softmax(b, axis=-1),
                b.astype(jnp.float16), (b.astype(jnp.float32) + 1e-3).astype(jnp.bfloat16))
    return bhalf, [bf16(f32(rng, 4, 8)), bf16(f32(rng, 4, 8)), bf16(f32(rng, 8, 3, scale=0.3))]


@case('conversions', EXACT)
def _(rng):
    def conv(x, i, bits):
        return (x.astype(jnp.int32), jnp.abs(x * 20).astype(jnp.uint8), x.astype(jnp.bfloat16),
                x.astype(jnp.float16), i.astype(jnp.float32), i.astype(jnp.bool_), (x > 0).astype(jnp.float32),
                lax.bitcast_convert_type(x, jnp.int32), lax.bitcast_convert_type(bits, jnp.float32),
                lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10), i.astype(jnp.float16),
                i.astype(jnp.int8), i.astype(jnp.uint16), (i > 0).astype(jnp.int32),
                lax.bitcast_convert_type(x, jnp.uint16), x.astype(jnp.bfloat16).astype(jnp.float16))
    # bf16 ties (1 + 2^-8, 1 + 3*2^-8) check round-half-to-even; 70000 overflows f16.
    x = np.concatenate([f32(rng, 12, scale=10.0), np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 0.5, 65519.0,
                                                             70000.0, -1e-8, 3.999999], np.float32)])
    i = np.concatenate([i32(rng, -300, 300, 12), np.array([16777217, -16777219, 70000, 0, 1, -1, 255, 256],
                                                           np.int32)])
    bits = rng.integers(0, 0x7f000000, size=20, dtype=np.int64).astype(np.int32)
    return conv, [x, i, bits]


@case('compare_select_clamp_iota', EXACT)
def _(rng):
    def misc(x, y, n):
        return (lax.clamp(-0.5, x, 0.5), jnp.clip(x, y - 1.0, y + 1.0), jnp.where(x > y, x, y * 2.0),
                lax.iota(jnp.int32, 7), lax.broadcasted_iota(jnp.float32, (3, 4), 1), x == y, x != x, x < y,
                x >= y, n.astype(jnp.uint32) < 5, lax.select(n > 0, n, -n), lax.clamp(-3, n, 4),
                jnp.logical_xor(x > 0, n > 0), jnp.isclose(x, y, atol=0.5))
    x = f32(rng, 10)
    x[3] = np.nan
    y = x.copy()
    y[::2] = f32(rng, 5)
    return misc, [x, y, i32(rng, -6, 6, 10)]


@case('einsum_dot_general', REDUCE_F32)
def _(rng):
    def dots(a, b, q, k, u, v):
        return (jnp.einsum('bij,bjk->bik', a, b), jnp.einsum('bhqd,bhkd->bhqk', q, k), jnp.einsum('i,j->ij', u, v),
                jnp.einsum('ij,ij->', a[0], a[1]),
                lax.dot_general(q, k, (((1, 3), (1, 3)), ((0,), (0,)))), jnp.einsum('bhqd->bqhd', q),
                jnp.tensordot(a, b, axes=([1], [2])), u @ v)
    return dots, [f32(rng, 3, 4, 5), f32(rng, 3, 5, 4), f32(rng, 2, 3, 6, 4), f32(rng, 2, 3, 5, 4),
                  f32(rng, 7), f32(rng, 7)]


@case('prng_threefry', Tol(rtol=2e-6, atol=1e-6, why='uniform/normal: float transforms of exact random bits'))
def _(rng):
    def rand(key):
        k1, k2 = jax.random.split(key)
        return (jax.random.bits(k1, (8,)), jax.random.uniform(k2, (4, 4)), jax.random.normal(k1, (16,)),
                jax.random.randint(k2, (6,), -5, 5), jax.random.permutation(k1, 8))
    return rand, [np.array([0, 42], np.uint32)]


@case('x64_types', REDUCE_F32, x64=True)
def _(rng):
    def wide(d, l, u):
        return (d * d + 1.0, jnp.exp(d), d @ d.T, l // 3, l * 3037000493, u >> 33, u * 6364136223846793005,
                l.astype(jnp.float64), d.astype(jnp.int64), jnp.sum(l), d.astype(jnp.float32),
                lax.population_count(u), jnp.cumsum(d, axis=1))
    d = rng.standard_normal((3, 4))
    l = rng.integers(-(1 << 62), 1 << 62, size=5, dtype=np.int64)
    u = rng.integers(0, 1 << 63, size=5, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    return wide, [d, l, u]


@case('linalg_lapack', DEEP_F32)
def _(rng):
    # On CPU these lower to jaxlib's LAPACK custom-calls (lapack_{s,d}{potrf,getrf,trsm,
    # geqrf,orgqr,syevd,gesdd}_ffi): kiln's evaluator implements them itself, the cpu backend calls the
    # system LAPACK. Batched, every trsm flag JAX sets here, and f64 through x64 below.
    import jax.scipy.linalg as sl

    def linalg(a, b):
        spd = a @ jnp.swapaxes(a, -1, -2) + 4 * jnp.eye(4, dtype=a.dtype)
        q, r = jnp.linalg.qr(a)
        return (jnp.linalg.solve(a, b), jnp.linalg.cholesky(spd), jnp.linalg.inv(a), jnp.linalg.det(a),
                sl.solve_triangular(a, b, lower=True), sl.solve_triangular(a, b, trans=1, unit_diagonal=True),
                q, r)
    return linalg, [f32(rng, 3, 4, 4) + 3 * np.eye(4, dtype=np.float32), f32(rng, 3, 4, 2)]


@case('linalg_eigh_svd', DEEP_F32)
def _(rng):
    # lapack_ssyevd_ffi and lapack_sgesdd_ffi (thin, full and values-only). Eigen- and
    # singular vectors are unique only up to sign, so the outputs are the values and the
    # vectors' magnitudes (the inputs have distinct values, so nothing else is free).
    def decomp(a, x):
        sym = a + jnp.swapaxes(a, -1, -2)
        w, v = jnp.linalg.eigh(sym)
        u, s, vt = jnp.linalg.svd(x, full_matrices=False)
        uf, _, vtf = jnp.linalg.svd(x, full_matrices=True)
        # full u's last columns span x's left null space in no particular basis: only its
        # first min(m, n) columns are determined
        return (w, jnp.abs(v), s, jnp.abs(u), jnp.abs(vt), jnp.abs(uf[..., :3]), jnp.abs(vtf),
                jnp.linalg.svd(x, compute_uv=False))
    return decomp, [f32(rng, 2, 4, 4), f32(rng, 3, 5, 3)]


@case('linalg_lapack_f64', F64, x64=True)
def _(rng):
    def linalg(a, b):
        return jnp.linalg.solve(a, b), jnp.linalg.qr(a[:, :3])[0], jnp.linalg.slogdet(a)[1]
    return linalg, [rng.standard_normal((2, 5, 5)) + 3 * np.eye(5), rng.standard_normal((2, 5, 3))]


# --------------------------------------------------------------------------------------
# Library functions that expand into many HLO ops

@case('remat_opt_barrier', DEEP_F32)
def _(rng):
    # jax.checkpoint puts optimization barriers around the recomputed forward pass.
    def loss(w, x):
        layer = jax.checkpoint(lambda h, w: jnp.sin(h @ w))
        return jnp.sum(layer(layer(x, w), w) ** 2)
    return jax.grad(loss), [f32(rng, 6, 6, scale=0.4), f32(rng, 3, 6)]


@case('search_unique_quantile', REDUCE_F32)
def _(rng):
    def stats(sorted_vals, q, x, labels):
        return (jnp.searchsorted(sorted_vals, q), jnp.searchsorted(sorted_vals, q, side='right', method='sort'),
                jnp.searchsorted(sorted_vals, q, method='compare_all'),
                jnp.unique(labels, size=6, fill_value=-1), jnp.bincount(labels, length=8),
                jnp.median(x, axis=0), jnp.quantile(x, 0.3), jnp.nanmax(jnp.where(x > 1, jnp.nan, x), axis=1),
                jnp.histogram(x, bins=4, range=(-2.0, 2.0))[0])
    sv = np.sort(np.round(f32(rng, 12) * 4) / 4).astype(np.float32)
    q = np.concatenate([sv[::3], f32(rng, 5)]).astype(np.float32)
    return stats, [sv, q, f32(rng, 7, 5), i32(rng, 0, 5, 20)]


@case('nested_control_flow', DEEP_F32)
def _(rng):
    def nested(xs, n):
        def step(carry, x):
            def halve_until_small(v):
                return lax.while_loop(lambda c: jnp.max(jnp.abs(c[0])) > 0.5,
                                      lambda c: (c[0] * 0.5, c[1] + 1), (v, 0))
            v, k = lax.cond(x.sum() > 0, halve_until_small, lambda v: (jnp.tanh(v), -1), carry + x)
            buf = lax.fori_loop(0, n, lambda i, b: b.at[i].set(v[i] * i), jnp.zeros_like(v))
            return v + 0.1, (k, buf)
        return lax.scan(step, jnp.zeros(xs.shape[1], jnp.float32), xs)
    return nested, [f32(rng, 6, 4, scale=3.0), np.int32(3)]


@case('select_n_piecewise', ELEMENTWISE_F32)
def _(rng):
    def pick(x, which):
        return (lax.select_n(which, x, -x, x * 2.0), jnp.piecewise(x, [x < -1, x > 1], [jnp.exp, jnp.log, 0.5]),
                jnp.select([x < 0, x < 1], [x * x, -x], default=7.0), lax.select_n(which > 0, x, x + 1))
    return pick, [f32(rng, 12, scale=2.0), i32(rng, 0, 3, 12)]


@case('sort_multikey_halfs', EXACT)
def _(rng):
    def sorts(a, b, h, g, i):
        k1, k2, payload = lax.sort((a, b, i), num_keys=2)
        return (k1, k2, payload, jnp.sort(h), jnp.argsort(g, stable=True), jnp.sort(i, descending=True),
                lax.sort(g.astype(jnp.float32) * 0 + h.astype(jnp.float32), dimension=0, is_stable=False))
    h = f32(rng, 10).astype(np.float16)
    h[:3] = [np.nan, -0.0, -np.inf]
    g = bf16(np.round(f32(rng, 10) * 2) / 2)
    return sorts, [i32(rng, 0, 3, 10), i32(rng, 0, 3, 10), h, g, i32(rng, -5, 5, 10)]


@case('int_dot_conv', EXACT)
def _(rng):
    # Integer dots and convolutions wrap modulo 2^32 and are exact in any order.
    def idot(a, b, c, k):
        return (a @ b, jnp.einsum('ij,jk->ik', c, c.T, preferred_element_type=jnp.int32),
                lax.conv_general_dilated(a[None, :, :, None].astype(jnp.float32), k, (1, 1), 'SAME',
                                         dimension_numbers=NHWC), jnp.dot(a, b * 100000))
    return idot, [i32(rng, -50, 50, 4, 5), i32(rng, -50, 50, 5, 3), rng.integers(-128, 127, (3, 6)).astype(np.int8),
                  np.round(f32(rng, 3, 3, 1, 2) * 4).astype(np.float32)]


@case('half_conv', F16)
def _(rng):
    def convs(x, k, xb, kb):
        h = lax.conv_general_dilated(x, k, (1, 1), 'SAME', dimension_numbers=NHWC)
        b = lax.conv_general_dilated(xb, kb, (2, 2), 'VALID', dimension_numbers=NHWC)
        return h, b.astype(jnp.float32) * 0.1
    return convs, [f32(rng, 1, 6, 6, 3).astype(np.float16), f32(rng, 3, 3, 3, 4, scale=0.3).astype(np.float16),
                   bf16(f32(rng, 1, 7, 7, 2)), bf16(f32(rng, 3, 3, 2, 2, scale=0.3))]


@case('scatter_apply_variadic_reduce', EXACT)
def _(rng):
    def fancy(x, idx, w):
        def argmax_count(a, b):
            (va, ia, ca), (vb, ib, cb) = a, b
            take_b = (vb > va) | ((vb == va) & (ib < ia))
            return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia), ca + cb
        iota = lax.broadcasted_iota(jnp.int32, x.shape, 1)
        ones = jnp.ones_like(iota)
        v, i, c = lax.reduce((x, iota, ones), (-jnp.inf, jnp.int32(2 ** 30), jnp.int32(0)), argmax_count, (1,))
        return (x.at[idx].apply(lambda t: t * t), v, i, c, w.at[idx[:2], 0].get(mode='fill', fill_value=9.0),
                x.at[idx].divide(2.0), x.at[idx].power(2))
    return fancy, [np.round(f32(rng, 4, 6) * 8) / 8, np.array([2, 0, 3], np.int32), f32(rng, 3, 2)]


@case('dot_product_attention', DEEP_F32)
def _(rng):
    def attn(q, k, v, bias):
        return (jax.nn.dot_product_attention(q, k, v, is_causal=True),
                jax.nn.dot_product_attention(q, k, v, bias=bias))
    b, t, n, h = 2, 6, 2, 8
    return attn, [f32(rng, b, t, n, h), f32(rng, b, t, n, h), f32(rng, b, t, n, h), f32(rng, b, n, t, t)]


@case('special_functions', Tol(rtol=5e-6, atol=1e-6, why='lgamma/digamma/erf_inv/igamma/bessel expand into '
                                                          'long f32 polynomial chains; a few ulp per step'))
def _(rng):
    def special(x, a):
        return (lax.lgamma(x), lax.digamma(x), lax.erf_inv(jnp.tanh(x - 2.0)), lax.igamma(a, x),
                lax.bessel_i0e(x), lax.bessel_i1e(x), jax.scipy.special.logit(jax.nn.sigmoid(x - 2.0)),
                jax.scipy.special.xlogy(x, a), lax.nextafter(x, a))
    return special, [np.abs(f32(rng, 20, scale=2.0)) + 0.1, np.abs(f32(rng, 20, scale=2.0)) + 0.5]


@case('small_int_types', EXACT)
def _(rng):
    def small(a, b, s):
        u8, u16 = a.astype(jnp.uint8), b.astype(jnp.uint16)
        return (a * b, a + b, lax.div(a, b), lax.rem(a, b), a >> 1, lax.shift_right_logical(a, jnp.int8(2)),
                lax.shift_left(a, s), lax.population_count(a), lax.clz(u8), u8 * 3, u8 // 7, u16 * u16,
                jnp.abs(a), -a, a.astype(jnp.int32) + 1000, jnp.max(a), jnp.sum(a, dtype=jnp.int8),
                b.astype(jnp.int16) * 300, u8.astype(jnp.float32), (u16 >> s.astype(jnp.uint16)))
    a = np.array([-128, -1, 0, 1, 127, 100, -100, 55, -3, 7], np.int8)
    b = np.array([-1, -1, 3, 0, 2, -7, 9, 0, 2, -3], np.int8)
    s = np.array([0, 1, 7, 8, 9, -1, 3, 2, 100, 4], np.int8)
    return small, [a, b, s]


@case('big_reduction', Tol(rtol=1e-4, atol=1e-6, why='sums of 2^16 positive terms: kiln folds sequentially in '
                                                     'f32 (random-walk error ~sqrt(n)*ulp(sum), observed 1.3e-5 '
                                                     'relative); XLA:CPU uses vectorised partial sums'))
def _(rng):
    def big(x):
        return x.sum(), x.reshape(256, 256).sum(axis=0), jnp.max(x), x.mean(), jnp.sum(x * x)
    return big, [rng.random(65536).astype(np.float32)]


@case('windows_variadic_dilated', REDUCE_F32)
def _(rng):
    def windows(x, xi):
        iota = lax.broadcasted_iota(jnp.int32, x.shape, 1)

        def argmax_pair(a, b):
            take_b = b[0] > a[0]
            return jnp.where(take_b, b[0], a[0]), jnp.where(take_b, b[1], a[1])
        vals, where = lax.reduce_window((x, iota), (-jnp.inf, jnp.int32(-1)), argmax_pair, (1, 3), (1, 2), 'SAME')
        based = lax.reduce_window(xi, jnp.int32(-1000), lax.max, (2, 2), (1, 1), ((1, 1), (0, 1)),
                                  base_dilation=(2, 1))
        prod = lax.reduce_window(x * 0.5 + 1.0, 1.0, lax.mul, (2, 3), (2, 1), 'VALID', window_dilation=(1, 2))
        return vals, where, based, prod, jnp.convolve(x[0], x[1, :3]), jnp.correlate(x[1], x[2, :4], mode='same')
    return windows, [f32(rng, 4, 9), i32(rng, -99, 99, 4, 5)]


@case('image_resize_interp', REDUCE_F32)
def _(rng):
    def resize(img, xp, fp, xq):
        return (jax.image.resize(img, (1, 7, 9, 2), 'bilinear'), jax.image.resize(img, (1, 3, 8, 2), 'nearest'),
                jax.image.resize(img, (1, 2, 3, 2), 'linear', antialias=True), jnp.interp(xq, xp, fp),
                jax.image.resize(img, (1, 8, 10, 2), 'cubic'))
    xp = np.sort(f32(rng, 8))
    return resize, [f32(rng, 1, 4, 5, 2), xp, f32(rng, 8), f32(rng, 10, scale=1.5)]


@case('dot_precision_algorithms', REDUCE_F32)
def _(rng):
    def dots(a, b, c):
        return (jnp.dot(a, b, precision=lax.Precision.HIGHEST), jnp.dot(a, b, precision='bfloat16'),
                lax.dot(a, b, precision=lax.DotAlgorithmPreset.F32_F32_F32),
                lax.dot_general(a, c, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32),
                jnp.einsum('ij,jk->ik', a, b, precision=lax.Precision.HIGH))
    # Inputs exactly representable in bf16, so a bf16-precision dot equals the f32 one.
    return dots, [np.asarray(bf16(f32(rng, 3, 8)), np.float32), np.asarray(bf16(f32(rng, 8, 4)), np.float32),
                  f32(rng, 5, 8)]


@case('diag_trace_kron', EXACT)
def _(rng):
    def lin(m, v, a):
        return (jnp.diag(m), jnp.diag(v), jnp.trace(a), jnp.diagonal(m, offset=1), jnp.kron(a[:2, :2], a[:2, :3]),
                jnp.einsum('ii->i', m), jnp.tril(m, -1), jnp.fliplr(m), jnp.rot90(m), jnp.outer(v, v[:2]))
    return lin, [f32(rng, 4, 4), f32(rng, 3), i32(rng, -9, 9, 3, 3)]
