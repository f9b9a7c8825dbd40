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
