"""The JAX program set of kiln's benchmark: JAX programs, each a function and its
fixed-seed inputs (weights are arguments, as JAX passes them), lowered at bench time with
`jax.jit(f, keep_unused=True).lower(*args).as_text(dialect="hlo")` -- the HLO text JAX
hands to XLA -- which kiln runs with `kiln run`, next to XLA:CPU running the same jitted
function through JAX (bench/peers/jax_bench.py). Runs in the reference environment
build-ref-env/ (pinned JAX, scripts/install-ref-env.sh), the one tests/hlo/
test_jax_models.py checks kiln's reading of JAX's HLO with.

Each program is registered with @program(name, batch): the decorated function receives a
numpy Generator seeded by the program's name and returns (fn, args), a JAX-traceable
function and the numpy arrays it is called with (argument i is the module's parameter
p_i). `batch` is what the benchmark's tables call the batch (1 where the program has
none). NAMES and BATCH are importable without JAX (bench/bench.py reads them under
Debian's python3); JAX is imported when a program is built.

Command line (what bench/bench.py runs, with build-ref-env/bin/python):
    jax_models.py NAME OUT_DIR
writes OUT_DIR/module.hlo, the inputs p0.npy, p1.npy, ..., JAX's outputs for them
(ref_0.npy, ... in the order of the module's root tuple, which kiln writes as
output_0.npy, ...) and, last, meta.json (so a directory with meta.json is complete).
"""

import json
import math
import os
import sys
import zlib

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
ENV_DIR = os.path.join(ROOT, 'build-ref-env')  # scripts/install-ref-env.sh makes it
ENV_PYTHON = os.path.join(ENV_DIR, 'bin', 'python')

PROGRAMS = {}  # name -> make(rng) -> (fn, [numpy args])
BATCH = {}     # name -> the batch size the tables show


def program(name, batch=1):
    def register(make):
        PROGRAMS[name] = make
        BATCH[name] = batch
        return make
    return register


def _jax():
    """(jax, jax.numpy, jax.lax), imported on first use: NAMES must not need JAX."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    return jax, jnp, lax


def f32(rng, *shape, scale=1.0):
    import numpy as np
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def dense_init(rng, n_in, n_out):
    """A (n_in, n_out) weight with variance 1/n_in (activations stay O(1) through depth)."""
    return f32(rng, n_in, n_out, scale=1.0 / math.sqrt(n_in))


NHWC = ('NHWC', 'HWIO', 'NHWC')


def folded_conv(rng, kh, kw, cin, cout, depthwise=False):
    """A convolution kernel (HWIO; depthwise: HW1C) and bias with a batch norm of random
    statistics folded in (w * gamma / sqrt(var + eps), beta - mean * gamma / sqrt(var + eps)),
    as an inference export does."""
    import numpy as np
    fan_in = kh * kw * (1 if depthwise else cin)
    w = f32(rng, kh, kw, 1 if depthwise else cin, cout, scale=math.sqrt(2.0 / fan_in))
    gamma = rng.uniform(0.5, 1.5, cout)
    beta = rng.standard_normal(cout) * 0.1
    mean = rng.standard_normal(cout) * 0.1
    var = rng.uniform(0.5, 1.5, cout)
    scale = gamma / np.sqrt(var + 1e-5)
    return (w * scale).astype(np.float32), (beta - mean * scale).astype(np.float32)


# ------------------------------------------------------------------------ programs --

@program('jax_convnet')
def _convnet(rng):
    """A small ResNet on 112x112x3 images: a stride-2 3x3 stem (32), two basic residual
    blocks at 56x56x32, a stride-2 block to 28x28x64 and one to 14x14x128 (1x1 projection
    shortcuts), each conv with its batch norm folded into kernel and bias, ReLU; global
    average pool and a dense layer to 10 logits."""
    jax, jnp, lax = _jax()
    plan = [(3, 32, 2)] + [(32, 32, 1)] * 4 + [(32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1)]
    params = []
    for cin, cout, _ in plan:
        params += list(folded_conv(rng, 3, 3, cin, cout))
    proj = [folded_conv(rng, 1, 1, 32, 64), folded_conv(rng, 1, 1, 64, 128)]
    params += [a for p in proj for a in p]
    params += [dense_init(rng, 128, 10), f32(rng, 10, scale=0.1)]

    def conv(x, w, b, stride):
        y = lax.conv_general_dilated(x, w, (stride, stride), 'SAME', dimension_numbers=NHWC)
        return y + b

    def net(x, *p):
        convs = [(p[2 * i], p[2 * i + 1]) for i in range(len(plan))]
        shortcuts = [None, None, (p[2 * len(plan)], p[2 * len(plan) + 1]),
                     (p[2 * len(plan) + 2], p[2 * len(plan) + 3])]
        h = jax.nn.relu(conv(x, *convs[0], plan[0][2]))
        for block, shortcut in enumerate(shortcuts):
            i = 1 + 2 * block
            y = jax.nn.relu(conv(h, *convs[i], plan[i][2]))
            y = conv(y, *convs[i + 1], plan[i + 1][2])
            skip = h if shortcut is None else conv(h, *shortcut, plan[i][2])
            h = jax.nn.relu(y + skip)
        return jnp.mean(h, axis=(1, 2)) @ p[-2] + p[-1]

    return net, [f32(rng, 1, 112, 112, 3)] + params


def layer_norm(jnp, lax, x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + eps) * g + b


@program('jax_transformer')
def _transformer(rng):
    """A 2-layer post-norm transformer encoder (BERT-base sized layers): d_model 768,
    12 heads, feed-forward 3072 with GELU, seq 128, batch 1."""
    jax, jnp, lax = _jax()
    import numpy as np
    d, heads, ff, seq, layers = 768, 12, 3072, 128, 2
    params = []
    for _ in range(layers):
        params += [dense_init(rng, d, 3 * d), np.zeros(3 * d, np.float32), dense_init(rng, d, d),
                   np.zeros(d, np.float32), np.ones(d, np.float32), np.zeros(d, np.float32),
                   dense_init(rng, d, ff), f32(rng, ff, scale=0.02), dense_init(rng, ff, d),
                   f32(rng, d, scale=0.02), np.ones(d, np.float32), np.zeros(d, np.float32)]

    def encoder(x, *p):
        b, t, _ = x.shape
        for layer in range(layers):
            wqkv, bqkv, wo, bo, g1, b1, w1, bf1, w2, bf2, g2, b2 = p[12 * layer:12 * layer + 12]
            qkv = (x @ wqkv + bqkv).reshape(b, t, 3, heads, d // heads)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            s = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(d // heads)
            a = jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(s, axis=-1), v).reshape(b, t, d)
            x = layer_norm(jnp, lax, x + a @ wo + bo, g1, b1)
            f = jax.nn.gelu(x @ w1 + bf1) @ w2 + bf2
            x = layer_norm(jnp, lax, x + f, g2, b2)
        return x

    return encoder, [f32(rng, 1, seq, d)] + params


@program('jax_mlp', batch=64)
def _mlp(rng):
    """784-2048-2048-10 with ReLU at batch 64, softmax over the logits."""
    jax, jnp, lax = _jax()

    def mlp(x, w1, b1, w2, b2, w3, b3):
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return jax.nn.softmax(h @ w3 + b3, axis=-1)

    return mlp, [f32(rng, 64, 784), dense_init(rng, 784, 2048), f32(rng, 2048, scale=0.1),
                 dense_init(rng, 2048, 2048), f32(rng, 2048, scale=0.1), dense_init(rng, 2048, 10),
                 f32(rng, 10, scale=0.1)]


@program('jax_rnn_fori', batch=16)
def _rnn_fori(rng):
    """An Elman RNN cell, h = tanh(x_t Wx + h Wh + b), 64 steps in lax.fori_loop (a while
    loop in HLO; x_t by dynamic_slice), batch 16, input 128, hidden 256."""
    jax, jnp, lax = _jax()
    steps, batch, n_in, hidden = 64, 16, 128, 256

    def rnn(xs, h0, wx, wh, b):
        def step(t, h):
            x = lax.dynamic_index_in_dim(xs, t, axis=0, keepdims=False)
            return jnp.tanh(x @ wx + h @ wh + b)
        return lax.fori_loop(0, steps, step, h0)

    return rnn, [f32(rng, steps, batch, n_in), f32(rng, batch, hidden, scale=0.1), dense_init(rng, n_in, hidden),
                 dense_init(rng, hidden, hidden), f32(rng, hidden, scale=0.1)]


@program('jax_lstm_scan', batch=8)
def _lstm_scan(rng):
    """An LSTM (fused 4-gate weights, sigmoid/tanh) over 100 steps in lax.scan, batch 8,
    input 128, hidden 256; returns every step's hidden state and the final cell."""
    jax, jnp, lax = _jax()
    steps, batch, n_in, hidden = 100, 8, 128, 256

    def lstm(xs, h0, c0, wx, wh, b):
        def step(carry, x):
            h, c = carry
            z = x @ wx + h @ wh + b
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        (_, c), hs = lax.scan(step, (h0, c0), xs)
        return hs, c

    return lstm, [f32(rng, steps, batch, n_in), f32(rng, batch, hidden, scale=0.1), f32(rng, batch, hidden, scale=0.1),
                  dense_init(rng, n_in, 4 * hidden), dense_init(rng, hidden, 4 * hidden),
                  f32(rng, 4 * hidden, scale=0.1)]


@program('jax_sort_topk')
def _sort_topk(rng):
    """On a (512, 4096) f32 array: a full sort of every row, lax.top_k (k 64; values and
    indices) and a cumulative sum along the rows."""
    jax, jnp, lax = _jax()

    def f(x):
        values, indices = lax.top_k(x, 64)
        return jnp.sort(x, axis=-1), values, indices, jnp.cumsum(x, axis=-1)

    return f, [f32(rng, 512, 4096)]


@program('jax_gather_scatter')
def _gather_scatter(rng):
    """Embedding-style: 200000 rows gathered from a (100000, 64) table (t[idx]), scored
    against a query vector, and their tanh scattered back into a zero table with
    .at[idx].add (repeated indices accumulate, as an embedding gradient does)."""
    jax, jnp, lax = _jax()
    import numpy as np
    n_rows, dim, n_idx = 100000, 64, 200000

    def f(t, idx, q):
        rows = t[idx]
        scores = rows @ q
        grad = jnp.zeros_like(t).at[idx].add(jnp.tanh(rows))
        return scores, grad

    idx = rng.integers(0, n_rows, n_idx).astype(np.int32)
    return f, [f32(rng, n_rows, dim), idx, f32(rng, dim)]


@program('jax_layernorm_softmax', batch=8)
def _layernorm_softmax(rng):
    """A transformer's non-matmul work at batch 8: layer norm of (8, 128, 768) activations
    (with scale and shift) and a softmax over (8, 12, 128, 128) attention scores."""
    jax, jnp, lax = _jax()
    import numpy as np

    def f(x, g, b, s):
        return layer_norm(jnp, lax, x, g, b), jax.nn.softmax(s, axis=-1)

    return f, [f32(rng, 8, 128, 768, scale=2.0) + 0.5, (1.0 + f32(rng, 768, scale=0.1)).astype(np.float32),
               f32(rng, 768, scale=0.1), f32(rng, 8, 12, 128, 128, scale=3.0)]


@program('jax_depthwise')
def _depthwise(rng):
    """A MobileNet-style net on 112x112x32 features: four depthwise-separable blocks
    (3x3 depthwise, feature_group_count = channels, then 1x1 pointwise; batch norm folded,
    ReLU6; strides 1, 2, 1, 2 to 28x28x128), global average pool, dense to 10 logits."""
    jax, jnp, lax = _jax()
    plan = [(32, 64, 1), (64, 64, 2), (64, 128, 1), (128, 128, 2)]
    params = []
    for cin, cout, _ in plan:
        params += list(folded_conv(rng, 3, 3, cin, cin, depthwise=True)) + list(folded_conv(rng, 1, 1, cin, cout))
    params += [dense_init(rng, 128, 10), f32(rng, 10, scale=0.1)]

    def net(x, *p):
        h = x
        for i, (cin, _, stride) in enumerate(plan):
            dw, db, pw, pb = p[4 * i:4 * i + 4]
            h = lax.conv_general_dilated(h, dw, (stride, stride), 'SAME', dimension_numbers=NHWC,
                                         feature_group_count=cin) + db
            h = jnp.clip(h, 0.0, 6.0)
            h = jnp.clip(lax.conv_general_dilated(h, pw, (1, 1), 'SAME', dimension_numbers=NHWC) + pb, 0.0, 6.0)
        return jnp.mean(h, axis=(1, 2)) @ p[-2] + p[-1]

    return net, [f32(rng, 1, 112, 112, 32)] + params


@program('jax_argsort_rank', batch=64)
def _argsort_rank(rng):
    """Ranking 64 rows of 8192 scores: the descending order (jnp.argsort, stable) and each
    item's rank (the inverse permutation, a scatter of iota by the order). The scores are
    distinct within a row (a permutation of 0..8191, scaled), so the order has no ties and
    the integer outputs must match exactly."""
    jax, jnp, lax = _jax()
    import numpy as np
    rows, n = 64, 8192

    def f(scores):
        order = jnp.argsort(-scores, axis=-1)
        ranks = jnp.zeros_like(order).at[jnp.arange(rows)[:, None], order].set(
            jnp.broadcast_to(jnp.arange(n, dtype=order.dtype), order.shape))
        return order, ranks

    scores = np.stack([rng.permutation(n) for _ in range(rows)]).astype(np.float32) / n
    return f, [scores]


@program('jax_while_collatz')
def _while_collatz(rng):
    """A lax.while_loop with a data-dependent trip count: Collatz steps on 65536 int32
    starting values below 100000 (no trajectory leaves int32) until every one has reached
    1; returns each value's step count and the number of loop iterations."""
    jax, jnp, lax = _jax()
    import numpy as np

    def f(x0):
        def cond(state):
            x, _, _ = state
            return jnp.any(x != 1)

        def body(state):
            x, steps, it = state
            done = x == 1
            nxt = jnp.where(x % 2 == 0, x // 2, 3 * x + 1)
            return jnp.where(done, x, nxt), steps + jnp.where(done, 0, 1).astype(steps.dtype), it + 1

        _, steps, it = lax.while_loop(cond, body, (x0, jnp.zeros_like(x0), jnp.int32(0)))
        return steps, it

    return f, [rng.integers(1, 100000, 65536).astype(np.int32)]


@program('jax_vmap_matmul', batch=64)
def _vmap_matmul(rng):
    """jax.vmap of a per-example two-layer product, tanh(a @ b) @ c, over 64 examples of
    (128, 256) @ (256, 128) @ (128, 64): batched dot_generals in HLO."""
    jax, jnp, lax = _jax()

    def per_example(a, b, c):
        return jnp.tanh(a @ b) @ c

    return jax.vmap(per_example), [f32(rng, 64, 128, 256), f32(rng, 64, 256, 128, scale=1 / 16),
                                   f32(rng, 64, 128, 64, scale=1 / math.sqrt(128))]



# ------------------------------------------------- XLA's own CPU benchmark programs --
#
# XLA keeps end-to-end benchmarks for its CPU backend as HLO files
# (xla/backends/cpu/benchmarks/hlo/ in openxla/xla, listed in hlo_files.bzl). Those
# files cannot be fetched here, so the programs below are written from what each
# file's name states -- the operation, its shape and its element type -- and lowered by
# JAX like the rest of the set; each docstring names the file it stands for. The .npy
# inputs and outputs hold no bf16, so a bf16 program takes f32 arguments, converts them
# to bf16 on entry and its results back to f32 on exit (two cheap converts, in both
# kiln's and XLA's module). Their outputs are compared with RTOL's bf16 tolerance.

XLA_BENCH = []  # the names of this group, in order (bench.py's set `xla`)


def xla_program(name, batch=1, rtol=None):
    def register(make):
        program(name, batch)(make)
        XLA_BENCH.append(name)
        if rtol is not None:
            RTOL[name] = rtol
        return make
    return register


# bf16 keeps 8 significant bits: kiln and XLA may round an intermediate differently
# (another summation order, or f32 where the other stays in bf16), so an output may
# differ by a couple of bf16 ulps, 2^-7 relative each: 1.6e-2 of the largest output.
BF16_RTOL = 1.6e-2
RTOL = {}  # name -> relative tolerance (of the largest |output|) where 1e-3 is too tight


def _bf16(jnp, *xs):
    return [x.astype(jnp.bfloat16) for x in xs]


def _f32(jnp, *ys):
    out = [y.astype(jnp.float32) if y.dtype == jnp.bfloat16 else y for y in ys]
    return out[0] if len(out) == 1 else tuple(out)


@xla_program('xla_layer_norm_bf16', rtol=BF16_RTOL)
def _xla_layer_norm(rng):
    """layer_norm_1x4096x768_bf16.hlo: layer norm over the last axis of a (1, 4096, 768)
    bf16 tensor, with bf16 scale and shift."""
    jax, jnp, lax = _jax()

    def f(x, g, b):
        x, g, b = _bf16(jnp, x, g, b)
        return _f32(jnp, layer_norm(jnp, lax, x, g, b))

    return f, [f32(rng, 1, 4096, 768, scale=2.0) + 0.5, 1.0 + f32(rng, 768, scale=0.1), f32(rng, 768, scale=0.1)]


@xla_program('xla_mean_axis_bf16', rtol=BF16_RTOL)
def _xla_mean_axis(rng):
    """mean_axis_1x4096x1024_bf16.hlo: the mean over the last axis of a (1, 4096, 1024)
    bf16 tensor (JAX accumulates a bf16 mean in f32)."""
    jax, jnp, lax = _jax()

    def f(x):
        (x,) = _bf16(jnp, x)
        return _f32(jnp, jnp.mean(x, axis=-1))

    return f, [f32(rng, 1, 4096, 1024) + 1.0]


@xla_program('xla_sum_axis_bf16', rtol=BF16_RTOL)
def _xla_sum_axis(rng):
    """sum_axis_1x4096x1024_bf16.hlo: the sum over the middle (4096-long) axis of a
    (1, 4096, 1024) bf16 tensor -- a column reduction, where the mean above is a row one."""
    jax, jnp, lax = _jax()

    def f(x):
        (x,) = _bf16(jnp, x)
        return _f32(jnp, jnp.sum(x, axis=1))

    return f, [f32(rng, 1, 4096, 1024)]


@xla_program('xla_topk_logits_k10_bf16')
def _xla_topk(rng):
    """topk_logits_k10_1x50000_bf16.hlo: lax.top_k with k 10 over (1, 50000) bf16 logits,
    values and indices. The ten largest logits are planted far apart (3.0, 3.25, ...) over
    noise below 3, so no two of them tie in bf16 and the indices must match exactly."""
    jax, jnp, lax = _jax()
    import numpy as np
    n = 50000
    x = np.clip(f32(rng, 1, n), -3.0, 2.9)
    x[0, rng.choice(n, 10, replace=False)] = 3.0 + 0.25 * np.arange(10, dtype=np.float32)

    def f(x):
        (x,) = _bf16(jnp, x)
        values, indices = lax.top_k(x, 10)
        return _f32(jnp, values), indices

    return f, [x]


def _distinct_bf16(rng, rows, n):
    """(rows, n) f32 values, each row a permutation of n distinct bf16 numbers (the bit
    patterns 0x3f80 upward: 1.0 and the next n-1 representable values), so a sort of the
    bf16 values has no ties and an argsort is one answer."""
    import numpy as np
    bits = (0x3F80 + np.arange(n, dtype=np.uint32)) << 16
    vals = bits.view(np.float32)
    return np.stack([vals[rng.permutation(n)] for _ in range(rows)])


@xla_program('xla_sort_full_bf16', rtol=BF16_RTOL)
def _xla_sort_full(rng):
    """sort_full_1024x4096_bf16.hlo: every row of a (1024, 4096) bf16 array sorted."""
    jax, jnp, lax = _jax()

    def f(x):
        (x,) = _bf16(jnp, x)
        return _f32(jnp, jnp.sort(x, axis=-1))

    return f, [f32(rng, 1024, 4096)]


@xla_program('xla_argsort_axis_bf16')
def _xla_argsort(rng):
    """argsort_axis_1024x512_bf16.hlo: jnp.argsort along the rows of a (1024, 512) bf16
    array; each row a permutation of 512 distinct bf16 values, so the order is exact."""
    jax, jnp, lax = _jax()

    def f(x):
        (x,) = _bf16(jnp, x)
        return jnp.argsort(x, axis=-1)

    return f, [_distinct_bf16(rng, 1024, 512)]


@xla_program('xla_depthwise_conv_3x3_bf16', rtol=BF16_RTOL)
def _xla_depthwise(rng):
    """depthwise_conv_3x3_1x256x56x56_bf16.hlo: a 3x3 depthwise convolution (feature group
    per channel, SAME padding) of a (1, 256, 56, 56) NCHW bf16 tensor."""
    jax, jnp, lax = _jax()

    def f(x, w):
        x, w = _bf16(jnp, x, w)
        y = lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NCHW', 'OIHW', 'NCHW'),
                                     feature_group_count=256)
        return _f32(jnp, y)

    return f, [f32(rng, 1, 256, 56, 56), f32(rng, 256, 1, 3, 3, scale=1.0 / 3)]


@xla_program('xla_mha_block_bf16', rtol=BF16_RTOL)
def _xla_mha(rng):
    """mha_block_1x12x128x64_bf16.hlo: scaled dot-product attention, softmax(q k^T / 8) v,
    with q, k, v of (1, 12, 128, 64) in bf16 (batch, heads, sequence, head size)."""
    jax, jnp, lax = _jax()

    def f(q, k, v):
        q, k, v = _bf16(jnp, q, k, v)
        s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / 8.0
        return _f32(jnp, jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s, axis=-1), v))

    return f, [f32(rng, 1, 12, 128, 64), f32(rng, 1, 12, 128, 64), f32(rng, 1, 12, 128, 64)]


@xla_program('xla_dynamic_slice_loop_bf16', rtol=BF16_RTOL)
def _xla_dynamic_slice_loop(rng):
    """dynamic_slice_loop_1x2048x768_bf16.hlo: a fori_loop over the 2048 positions of a
    (1, 2048, 768) bf16 tensor, each step reading one row with a dynamic slice into an f32
    exponential moving average -- a loop whose body is one small slice and update."""
    jax, jnp, lax = _jax()

    def f(x):
        (x,) = _bf16(jnp, x)

        def step(i, acc):
            row = lax.dynamic_slice(x, (0, i, 0), (1, 1, 768)).reshape(768)
            return 0.99 * acc + row.astype(jnp.float32)

        return lax.fori_loop(0, 2048, step, jnp.zeros(768, jnp.float32))

    return f, [f32(rng, 1, 2048, 768)]


@xla_program('xla_bench_scan_N2000_M3')
def _xla_scan(rng):
    """bench_scan_N2000_M3.hlo: lax.scan over 2000 steps with a 3-vector state, a linear
    recurrence s' = tanh(A s + u_t) returning every state -- a loop whose body is a handful
    of scalar-sized operations, so the per-iteration overhead is what is measured."""
    jax, jnp, lax = _jax()

    def f(a, u, s0):
        def step(s, ut):
            s = jnp.tanh(a @ s + ut)
            return s, s
        _, states = lax.scan(step, s0, u)
        return states

    return f, [f32(rng, 3, 3, scale=0.5), f32(rng, 2000, 3), f32(rng, 3)]


@xla_program('xla_pairwise_gravity_f64')
def _xla_gravity(rng):
    """pairwise_gravity_4096_f64.hlo: the gravitational acceleration on each of 4096 bodies
    from all the others, sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps)^(3/2), in f64 (JAX
    with jax_enable_x64)."""
    jax, jnp, lax = _jax()
    import numpy as np
    jax.config.update('jax_enable_x64', True)
    n = 4096

    def f(r, m):
        d = r[None, :, :] - r[:, None, :]
        inv = (jnp.sum(d * d, axis=-1) + 1e-3) ** -1.5
        return jnp.sum(d * (m[None, :] * inv)[:, :, None], axis=1)

    return f, [rng.standard_normal((n, 3)), rng.uniform(0.5, 1.5, n)]


@xla_program('xla_pairwise_rbf_gradient_f32')
def _xla_rbf_grad(rng):
    """pairwise_rbf_gradient_4096_f32.hlo: the gradient (jax.grad) with respect to the
    points of the summed RBF kernel sum_ij exp(-|x_i - x_j|^2 / 2) over 4096 points in 3-D,
    f32."""
    jax, jnp, lax = _jax()

    def energy(x):
        d = x[None, :, :] - x[:, None, :]
        return jnp.sum(jnp.exp(-0.5 * jnp.sum(d * d, axis=-1)))

    return jax.grad(energy), [f32(rng, 4096, 3)]

NAMES = tuple(PROGRAMS)


# ------------------------------------------------------------------------- building --

def build(name):
    """(fn, args) of program NAME, its inputs from a generator seeded by the name (adding
    or changing one program never changes another's data)."""
    import numpy as np
    return PROGRAMS[name](np.random.default_rng(zlib.crc32(name.encode())))


def source_tag():
    """A short hash of this file: part of the cache key, so an edited program is rebuilt."""
    with open(os.path.abspath(__file__), 'rb') as f:
        return '%08x' % zlib.crc32(f.read())


def hlo_text(name, fn, args):
    import jax
    return jax.jit(fn, keep_unused=True).lower(*args).as_text(dialect='hlo')


def main(argv):
    if len(argv) != 2 or argv[0] not in PROGRAMS:
        sys.stderr.write('usage: jax_models.py NAME OUT_DIR  (NAME: %s)\n' % ', '.join(NAMES))
        return 2
    name, out_dir = argv
    os.environ.setdefault('JAX_PLATFORMS', 'cpu')
    try:
        import jax
        import numpy as np
    except ImportError as e:
        sys.stderr.write('jax_models: %s; run it with %s (bash scripts/install-ref-env.sh makes it)\n'
                         % (e, ENV_PYTHON))
        return 2
    os.makedirs(out_dir, exist_ok=True)
    meta_path = os.path.join(out_dir, 'meta.json')
    if os.path.exists(meta_path):
        os.remove(meta_path)
    fn, args = build(name)
    text = hlo_text(name, fn, args)
    with open(os.path.join(out_dir, 'module.hlo'), 'w') as f:
        # Source locations in the metadata name this checkout; keep them relative.
        f.write(text.replace(ROOT + os.sep, ''))
    outs = jax.tree_util.tree_leaves(jax.jit(fn, keep_unused=True)(*args))
    meta = {'inputs': {}, 'refs': {}, 'jax': jax.__version__, 'source': source_tag(), 'batch': BATCH[name],
            'doc': ' '.join((PROGRAMS[name].__doc__ or '').split())}
    for i, a in enumerate(args):
        np.save(os.path.join(out_dir, 'p%d.npy' % i), a)
        meta['inputs']['p%d' % i] = 'p%d.npy' % i
    for i, v in enumerate(outs):
        np.save(os.path.join(out_dir, 'ref_%d.npy' % i), np.asarray(v))
        meta['refs']['output_%d' % i] = 'ref_%d.npy' % i
    with open(meta_path + '.partial', 'w') as f:
        json.dump(meta, f, indent=1)
    os.replace(meta_path + '.partial', meta_path)  # written last: the cache is complete
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
