"""dot and convolution of kiln's evaluator against numpy.

dot: matrix-matrix, matrix-vector, vector-vector, batch dimensions in any position, one
and several contracting dimensions in any position, no contracting dimension (outer
products), zero-size contracting and batch dimensions, integer types (wrapping), and
mixed-precision results (s8 x s8 -> s32, f16/bf16 -> f32). The reference is np.einsum in
float64 (int64/uint64 for integers, whose wrap-around arithmetic equals the wrapped
result of any accumulation order).

convolution: 0-D to 3-D, NHWC / NCHW / unusual dim_labels, strides, positive and negative
padding, lhs (base) dilation, rhs (window) dilation, window reversal, feature groups
(grouped and depthwise) and batch groups. The reference is a direct numpy transcription
of XLA's definition: canonicalise to [batch, feature, spatial...], dilate and pad the
input, then for each kernel position add the strided input patch times the kernel
column; feature group g of the output features reads input features [g*I, (g+1)*I) and
batch group g reads input batches [g*N', (g+1)*N'), N' the output batch.

Tolerances: integers are exact (wrapping for dot; conv inputs are small so nothing
overflows -- XLA leaves integer conv overflow unspecified). f32/f64 results may be
accumulated in any order and precision, so each output element gets the worst-case bound
of a K-term sum in the result type, (K + 2) * u * sum|a*b| (K = contraction size, u the
unit roundoff), computed per element from the absolute values. f16/bf16 results must be
accumulated in at least f32 and rounded once: one ulp plus the f32 K-term bound.
Random configurations (dimension numbers, dim_labels, windows, groups) add breadth.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kilntest as kt  # noqa: E402
from kilntest import S, EXACT  # noqa: E402

g = kt.Gen(5150)
suite = kt.Suite('kiln evaluator: dot and convolution vs numpy')


def sname(shape):
    return 'x'.join(map(str, shape)) or 'scalar'


def operand(t, shape, small=False):
    if kt.is_float(t):
        return g.array(t, shape, special=False, scale=2.0)
    if small:
        lo, hi = kt.int_range(t)
        return g.array(t, shape, special=False, lo=max(lo, -3), hi=min(hi, 3))
    return g.array(t, shape)


def compute_dtype(t):
    if kt.is_float(t):
        return np.float64
    return np.uint64 if t in kt.UINT else np.int64


def finish(acc, t):
    """float64 / int64 accumulator -> storage of result type t."""
    if kt.is_float(t):
        return kt.round_to(acc, t)
    return acc.astype(kt.np_dtype(t))      # truncation = two's-complement wrap


def acc_tol(t, terms, mag, exp):
    """Tolerance of a float dot/conv result. f16 and bf16 products are accumulated in a
    wider type (f32 in XLA's evaluator and CPU backend, double in kiln's) and rounded once
    to the result type, so they must land within one ulp of the correctly rounded value
    plus the f32 accumulation bound; f32 / f64 get the K-term bound in their own type."""
    if t in ('f16', 'bf16'):
        atol = (terms + 2) * kt.UNIT_ROUNDOFF['f32'] * np.asarray(mag, dtype=np.float64) + kt.ulp_of(exp, t)
        return kt.CLOSE(0.0, atol)
    return kt.float_sum_tol(t, terms, mag)


# --------------------------------------------------------------------------------------
# dot

LETTERS = 'abcdefghijklmnopqrstuvwxyz'


def dot_einsum(lhs_rank, rhs_rank, lb, lc, rb, rc):
    letters = iter(LETTERS)
    ls = [None] * lhs_rank
    rs = [None] * rhs_rank
    batch = []
    for a, b in zip(lb, rb):
        ch = next(letters)
        ls[a] = rs[b] = ch
        batch.append(ch)
    for a, b in zip(lc, rc):
        ch = next(letters)
        ls[a] = rs[b] = ch
    lfree, rfree = [], []
    for i in range(lhs_rank):
        if ls[i] is None:
            ls[i] = next(letters)
            lfree.append(ls[i])
    for i in range(rhs_rank):
        if rs[i] is None:
            rs[i] = next(letters)
            rfree.append(rs[i])
    return '%s,%s->%s' % (''.join(ls), ''.join(rs), ''.join(batch + lfree + rfree))


def dot_attrs(lb, lc, rb, rc):
    parts = []
    if lb:
        parts.append('lhs_batch_dims=' + kt.ints_attr(lb))
    parts.append('lhs_contracting_dims=' + kt.ints_attr(lc))
    if rb:
        parts.append('rhs_batch_dims=' + kt.ints_attr(rb))
    parts.append('rhs_contracting_dims=' + kt.ints_attr(rc))
    return ', '.join(parts)


DOT_CONFIGS = [
    # (lhs shape, rhs shape, lhs_batch, lhs_contracting, rhs_batch, rhs_contracting)
    ((3, 4), (4, 5), [], [1], [], [0]),
    ((1, 7), (7, 1), [], [1], [], [0]),
    ((16, 9), (9, 16), [], [1], [], [0]),
    ((6,), (6,), [], [0], [], [0]),
    ((4, 6), (6,), [], [1], [], [0]),
    ((6,), (6, 3), [], [0], [], [0]),
    ((2, 3, 4), (2, 4, 5), [0], [2], [0], [1]),
    ((3, 2, 4), (4, 2, 5), [1], [2], [1], [0]),
    ((3, 4, 5), (5, 2, 4), [], [1, 2], [], [2, 0]),
    ((5,), (3,), [], [], [], []),
    ((2, 5), (2, 3), [0], [], [0], []),
    ((4, 3), (4, 5), [], [0], [], [0]),
    ((2, 2, 3, 4), (2, 2, 4, 3), [0, 1], [3], [0, 1], [2]),
    ((3, 0), (0, 4), [], [1], [], [0]),
    ((0, 3, 4), (0, 4, 2), [0], [2], [0], [1]),
    ((2, 3, 4, 5), (5, 4, 2), [0], [2, 3], [2], [1, 0]),
    ((4, 1, 3), (3, 1, 2), [1], [2], [1], [0]),
    ((33, 40), (40, 20), [], [1], [], [0]),
]


def add_dot():
    types = ['f32', 'f64', 'f16', 'bf16', 's32', 'u32', 's64', 'u64', 's8', 'u8', 's16', 'u16']
    k = 0
    for ci, (ls, rs, lb, lc, rb, rc) in enumerate(DOT_CONFIGS):
        for j in range(3 if ci < 13 else 2):
            t = types[k % len(types)]
            k += 1
            add_dot_case('dot/%s/%s_%s/%d' % (t, sname(ls), sname(rs), ci), t, t, ls, rs, lb, lc, rb, rc)
    # Mixed precision: operands converted to the result type before multiplying.
    for it, ot in [('s8', 's32'), ('u8', 'u32'), ('f16', 'f32'), ('bf16', 'f32'), ('s32', 's64'), ('f32', 'f64')]:
        for ci in (0, 6, 8):
            ls, rs, lb, lc, rb, rc = DOT_CONFIGS[ci]
            add_dot_case('dot/%s_to_%s/%s_%s/%d' % (it, ot, sname(ls), sname(rs), ci), it, ot, ls, rs, lb, lc, rb, rc)


def add_dot_case(name, it, ot, ls, rs, lb, lc, rb, rc):
    a = operand(it, ls, small=(it != ot))
    b = operand(it, rs, small=(it != ot))
    spec = dot_einsum(len(ls), len(rs), lb, lc, rb, rc)
    cd = compute_dtype(ot)
    with np.errstate(all='ignore'):
        acc = np.einsum(spec, a.astype(cd), b.astype(cd))
    exp = finish(acc, ot)
    if kt.is_float(ot):
        mag = np.einsum(spec, np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        kdim = kt.nelems([ls[d] for d in lc])
        tol = acc_tol(ot, kdim, mag, exp)
    else:
        tol = EXACT
    c = kt.Case(name)
    r = c.op('dot', S(ot, exp.shape), [c.param(a, it), c.param(b, it)], dot_attrs(lb, lc, rb, rc))
    c.out(r, exp, tol)
    suite.add(c)


# --------------------------------------------------------------------------------------
# convolution

def parse_labels(labels, n):
    lhs, rest = labels.split('_', 1)
    rhs, out = rest.split('->')
    sp = [str(i) for i in range(n)]
    return ([lhs.index('b'), lhs.index('f')] + [lhs.index(s) for s in sp],
            [rhs.index('o'), rhs.index('i')] + [rhs.index(s) for s in sp],
            [out.index('b'), out.index('f')] + [out.index(s) for s in sp])


def conv_output_spatial(in_sp, k_sp, stride, pad, lhs_dil, rhs_dil):
    out = []
    for n, k, s, (lo, hi), ld, rd in zip(in_sp, k_sp, stride, pad, lhs_dil, rhs_dil):
        padded = ((n - 1) * ld + 1 if n > 0 else 0) + lo + hi
        eff = (k - 1) * rd + 1 if k > 0 else 0
        out.append((padded - eff) // s + 1 if padded >= eff else 0)
    return out


def conv_ref(lhs, rhs, labels, stride, pad, lhs_dil, rhs_dil, reversal, fgc, bgc, cd):
    n = len(stride)
    lperm, rperm, operm = parse_labels(labels, n)
    L = np.transpose(lhs, lperm).astype(cd)
    R = np.transpose(rhs, rperm).astype(cd)
    N, C = L.shape[:2]
    O, I = R.shape[:2]
    ks = R.shape[2:]
    in_sp = L.shape[2:]
    out_sp = conv_output_spatial(in_sp, ks, stride, pad, lhs_dil, rhs_dil)
    # Dilated, padded input (negative padding crops).
    psz = [((s - 1) * d + 1 if s > 0 else 0) + lo + hi for s, d, (lo, hi) in zip(in_sp, lhs_dil, pad)]
    Lp = np.zeros([N, C] + [max(p, 0) for p in psz], dtype=cd)
    src_idx, dst_idx = [np.arange(N), np.arange(C)], [np.arange(N), np.arange(C)]
    for d in range(n):
        tgt = pad[d][0] + np.arange(in_sp[d]) * lhs_dil[d]
        keep = (tgt >= 0) & (tgt < max(psz[d], 0))
        src_idx.append(np.arange(in_sp[d])[keep])
        dst_idx.append(tgt[keep])
    if all(len(i) for i in src_idx):
        Lp[np.ix_(*dst_idx)] = L[np.ix_(*src_idx)]
    n_out = N // bgc
    out = np.zeros([n_out, O] + out_sp, dtype=cd)
    if all(s > 0 for s in out_sp) and n_out > 0:
        o_fg = O // fgc
        o_bg = O // bgc
        for o in range(O):
            fg, bg = o // o_fg, o // o_bg
            block = Lp[bg * n_out:(bg + 1) * n_out, fg * I:(fg + 1) * I]
            for kidx in np.ndindex(*ks):
                kk = tuple(ks[d] - 1 - kidx[d] if reversal[d] else kidx[d] for d in range(n))
                w = R[(o, slice(None)) + kk]
                sl = tuple(slice(kidx[d] * rhs_dil[d], kidx[d] * rhs_dil[d] + stride[d] * (out_sp[d] - 1) + 1,
                                 stride[d]) for d in range(n))
                patch = block[(slice(None), slice(None)) + sl]
                with np.errstate(all='ignore'):
                    out[:, o] += np.tensordot(w, patch, axes=([0], [1]))
    return np.transpose(out, np.argsort(operm))


CONV_CONFIGS = [
    # name, labels, lhs canonical [N, C, spatial...], kernel [O, I, spatial...], stride,
    # pad, lhs_dilate, rhs_dilate, reversal, feature_group_count, batch_group_count
    ('1d_nwc', 'b0f_0io->b0f', [2, 3, 9], [4, 3, 3], [1], [(0, 0)], [1], [1], [0], 1, 1),
    ('1d_stride_pad_dil', 'b0f_0io->b0f', [1, 2, 11], [3, 2, 3], [2], [(1, 2)], [1], [2], [0], 1, 1),
    ('2d_nhwc_same', 'b01f_01io->b01f', [1, 2, 5, 5], [4, 2, 3, 3], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('2d_nchw_stride', 'bf01_oi01->bf01', [2, 3, 6, 5], [4, 3, 2, 3], [2, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('2d_negative_pad', 'b01f_01io->b01f', [2, 2, 6, 6], [3, 2, 2, 2], [1, 1], [(-1, 0), (0, -2)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('2d_lhs_dilate', 'b01f_01io->b01f', [1, 2, 4, 3], [2, 2, 3, 2], [1, 1], [(2, 2), (1, 1)], [2, 3], [1, 1], [0, 0], 1, 1),
    ('2d_rhs_dilate', 'bf01_oi01->bf01', [2, 2, 7, 7], [3, 2, 2, 3], [1, 2], [(0, 1), (1, 0)], [1, 1], [2, 2], [0, 0], 1, 1),
    ('2d_reversal', 'b01f_01io->b01f', [1, 3, 5, 4], [2, 3, 3, 2], [1, 1], [(1, 1), (0, 1)], [1, 1], [1, 1], [1, 0], 1, 1),
    ('2d_reversal_both', 'bf01_oi01->bf01', [2, 1, 4, 4], [2, 1, 2, 3], [1, 1], [(0, 0), (1, 1)], [1, 1], [1, 1], [1, 1], 1, 1),
    ('2d_feature_groups', 'b01f_01io->b01f', [2, 4, 5, 5], [6, 2, 3, 3], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], [0, 0], 2, 1),
    ('2d_depthwise', 'b01f_01io->b01f', [1, 3, 6, 6], [6, 1, 3, 3], [2, 2], [(1, 1), (1, 1)], [1, 1], [1, 1], [0, 0], 3, 1),
    ('2d_batch_groups', 'b01f_01io->b01f', [4, 2, 5, 4], [6, 2, 2, 2], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 2),
    ('2d_batch_groups_all', 'bf01_oi01->bf01', [3, 2, 4, 4], [3, 2, 3, 3], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], [0, 0], 1, 3),
    ('3d', 'b012f_012io->b012f', [1, 2, 4, 4, 3], [3, 2, 2, 2, 2], [1, 2, 1], [(0, 0), (1, 0), (0, 1)], [1, 1, 1], [1, 1, 1], [0, 0, 0], 1, 1),
    ('2d_odd_labels', 'fb01_01oi->01bf', [2, 3, 5, 4], [2, 3, 2, 2], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('2d_labels_f0b1', 'f0b1_i1o0->1bf0', [2, 2, 4, 5], [3, 2, 3, 2], [1, 2], [(1, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('0d', 'bf_io->bf', [3, 5], [4, 5], [], [], [], [], [], 1, 1),
    ('2d_big_stride', 'b01f_01io->b01f', [1, 1, 5, 5], [1, 1, 2, 2], [4, 3], [(0, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('2d_everything', 'b01f_01io->b01f', [2, 2, 5, 4], [2, 2, 3, 2], [2, 1], [(2, -1), (1, 2)], [2, 1], [1, 2], [1, 0], 1, 1),
    ('2d_empty_output', 'b01f_01io->b01f', [1, 1, 2, 2], [1, 1, 3, 3], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 1),
    ('1d_groups_stride_dil', 'b0f_0io->b0f', [2, 6, 10], [4, 3, 3], [2], [(1, 1)], [1], [2], [1], 2, 1),
    ('2d_zero_batch', 'b01f_01io->b01f', [0, 2, 3, 3], [2, 2, 2, 2], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], [0, 0], 1, 1),
]


def to_labels(canon, labels_part, letters):
    """Physical shape from a canonical [x, y, spatial...] shape and a label string."""
    n = len(canon) - 2
    pos = [labels_part.index(letters[0]), labels_part.index(letters[1])] + \
        [labels_part.index(str(i)) for i in range(n)]
    shape = [0] * len(canon)
    for p, s in zip(pos, canon):
        shape[p] = s
    return shape


def add_convolution():
    types = ['f32', 'f64', 'f16', 'bf16', 's32', 's64', 'f32', 's8']
    k = 0
    for (name, labels, lcanon, kcanon, stride, pad, ld, rd, rev, fgc, bgc) in CONV_CONFIGS:
        for j in range(2):
            t = types[k % len(types)]
            k += 1
            n = len(stride)
            lhs_l, rest = labels.split('_', 1)
            rhs_l, out_l = rest.split('->')
            lshape = to_labels(lcanon, lhs_l, 'bf')
            kshape = to_labels(kcanon, rhs_l, 'oi')
            a = operand(t, lshape, small=True)
            b = operand(t, kshape, small=True)
            cd = compute_dtype(t)
            exp = finish(conv_ref(a, b, labels, stride, pad, ld, rd, rev, fgc, bgc, cd), t)
            if kt.is_float(t):
                mag = conv_ref(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)), labels,
                               stride, pad, ld, rd, rev, fgc, bgc, np.float64)
                tol = acc_tol(t, kcanon[1] * kt.nelems(kcanon[2:]), mag, exp)
            else:
                tol = EXACT
            attrs = []
            if n:
                attrs.append(kt.window_attr(kcanon[2:], stride, pad, ld, rd, rev))
            attrs.append('dim_labels=' + labels)
            if fgc != 1:
                attrs.append('feature_group_count=%d' % fgc)
            if bgc != 1:
                attrs.append('batch_group_count=%d' % bgc)
            c = kt.Case('convolution/%s/%s' % (name, t))
            r = c.op('convolution', S(t, exp.shape), [c.param(a, t), c.param(b, t)], ', '.join(attrs))
            c.out(r, exp, tol)
            suite.add(c)
    # Mixed precision: s8 operands, s32 result; f16 operands, f32 result.
    for it, ot in [('s8', 's32'), ('f16', 'f32'), ('bf16', 'f32')]:
        name, labels, lcanon, kcanon, stride, pad, ld, rd, rev, fgc, bgc = CONV_CONFIGS[2]
        lhs_l, rest = labels.split('_', 1)
        rhs_l, _ = rest.split('->')
        a = operand(it, to_labels(lcanon, lhs_l, 'bf'), small=True)
        b = operand(it, to_labels(kcanon, rhs_l, 'oi'), small=True)
        cd = compute_dtype(ot)
        exp = finish(conv_ref(a, b, labels, stride, pad, ld, rd, rev, fgc, bgc, cd), ot)
        tol = EXACT
        if kt.is_float(ot):
            mag = conv_ref(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)), labels,
                           stride, pad, ld, rd, rev, fgc, bgc, np.float64)
            tol = acc_tol(ot, kcanon[1] * kt.nelems(kcanon[2:]), mag, exp)
        c = kt.Case('convolution/%s/%s_to_%s' % (name, it, ot))
        r = c.op('convolution', S(ot, exp.shape), [c.param(a, it), c.param(b, it)],
                 '%s, dim_labels=%s' % (kt.window_attr(kcanon[2:], stride, pad, ld, rd, rev), labels))
        c.out(r, exp, tol)
        suite.add(c)


# --------------------------------------------------------------------------------------
# Random configurations.

def add_random_dots(count):
    types = ['f32', 's32', 'f64', 'u8', 'bf16', 's64', 'f16', 'u32', 's16']
    for n in range(count):
        nb, nc, nl, nr = g.randint(0, 2), g.randint(0, 2), g.randint(0, 2), g.randint(0, 2)
        bs = [g.randint(1, 3) for _ in range(nb)]
        cs = [g.randint(0 if n % 13 == 0 else 1, 5) for _ in range(nc)]
        lf = [g.randint(1, 4) for _ in range(nl)]
        rf = [g.randint(1, 4) for _ in range(nr)]
        lorder = g.perm(nb + nc + nl)
        rorder = g.perm(nb + nc + nr)
        # Logical dims (batch..., contracting..., free...) placed at random positions.
        lshape = [0] * (nb + nc + nl)
        rshape = [0] * (nb + nc + nr)
        for i, s in enumerate(bs + cs + lf):
            lshape[lorder[i]] = s
        for i, s in enumerate(bs + cs + rf):
            rshape[rorder[i]] = s
        lb = [lorder[i] for i in range(nb)]
        lc = [lorder[nb + i] for i in range(nc)]
        rb = [rorder[i] for i in range(nb)]
        rc = [rorder[nb + i] for i in range(nc)]
        t = types[n % len(types)]
        add_dot_case('dot/random/%d/%s' % (n, t), t, t, lshape, rshape, lb, lc, rb, rc)


def random_labels(n):
    sp = [str(i) for i in range(n)]
    lhs = ['b', 'f'] + sp
    rhs = ['o', 'i'] + sp
    out = ['b', 'f'] + sp
    return '%s_%s->%s' % (''.join(lhs[i] for i in g.perm(n + 2)), ''.join(rhs[i] for i in g.perm(n + 2)),
                          ''.join(out[i] for i in g.perm(n + 2)))


def add_random_convolutions(count):
    types = ['f32', 's32', 'f64', 'bf16', 'f16', 's64', 's16']
    for m in range(count):
        n = g.randint(1, 3)
        labels = random_labels(n)
        mode = g.randint(0, 4)
        fgc, bgc = (2, 1) if mode == 3 else ((1, 2) if mode == 4 else (1, 1))
        if mode == 2 and n > 0:
            fgc = g.randint(2, 3)                     # depthwise-like
        while True:
            N = bgc * g.randint(1, 2)
            I = g.randint(1, 3) if fgc < 3 else 1
            C = I * fgc
            O = fgc * bgc * g.randint(1, 2)
            in_sp = [g.randint(1, 6) for _ in range(n)]
            k_sp = [g.randint(1, 3) for _ in range(n)]
            stride = [g.randint(1, 3) for _ in range(n)]
            pad = [(g.randint(-1, 2), g.randint(-1, 2)) for _ in range(n)]
            ld = [g.randint(1, 2) for _ in range(n)]
            rd = [g.randint(1, 2) for _ in range(n)]
            rev = [g.randint(0, 1) for _ in range(n)]
            padded = [(s - 1) * a + 1 + lo + hi for s, a, (lo, hi) in zip(in_sp, ld, pad)]
            if all(p >= 0 for p in padded):
                break
        t = types[m % len(types)]
        lhs_l, rest = labels.split('_', 1)
        rhs_l, out_l = rest.split('->')
        lcanon, kcanon = [N, C] + in_sp, [O, I] + k_sp
        a = operand(t, to_labels(lcanon, lhs_l, 'bf'), small=True)
        b = operand(t, to_labels(kcanon, rhs_l, 'oi'), small=True)
        cd = compute_dtype(t)
        exp = finish(conv_ref(a, b, labels, stride, pad, ld, rd, rev, fgc, bgc, cd), t)
        tol = EXACT
        if kt.is_float(t):
            mag = conv_ref(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)), labels,
                           stride, pad, ld, rd, rev, fgc, bgc, np.float64)
            tol = acc_tol(t, I * kt.nelems(k_sp), mag, exp)
        attrs = [kt.window_attr(k_sp, stride, pad, ld, rd, rev), 'dim_labels=' + labels]
        if fgc != 1:
            attrs.append('feature_group_count=%d' % fgc)
        if bgc != 1:
            attrs.append('batch_group_count=%d' % bgc)
        c = kt.Case('convolution/random/%d/%s' % (m, t))
        r = c.op('convolution', S(t, exp.shape), [c.param(a, t), c.param(b, t)], ', '.join(attrs))
        c.out(r, exp, tol)
        suite.add(c)


def add_large():
    # Sizes a real model uses, to catch evaluators that are correct but unusably slow.
    a = g.array('f32', (128, 256), special=False)
    b = g.array('f32', (256, 96), special=False)
    add_dot_case_arrays('dot/large/128x256x96', 'f32', a, b, [], [1], [], [0])
    name, labels = 'convolution/large/1x32x32x16_3x3x16x16', 'b01f_01io->b01f'
    x = g.array('f32', (1, 32, 32, 16), special=False)
    w = g.array('f32', (3, 3, 16, 16), special=False)
    pad = [(1, 1), (1, 1)]
    exp = kt.round_to(conv_ref(x, w, labels, [1, 1], pad, [1, 1], [1, 1], [0, 0], 1, 1, np.float64), 'f32')
    mag = conv_ref(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), labels, [1, 1], pad,
                   [1, 1], [1, 1], [0, 0], 1, 1, np.float64)
    c = kt.Case(name)
    r = c.op('convolution', S('f32', exp.shape), [c.param(x, 'f32'), c.param(w, 'f32')],
             '%s, dim_labels=%s' % (kt.window_attr([3, 3], [1, 1], pad), labels))
    c.out(r, exp, kt.float_sum_tol('f32', 16 * 9, mag))
    suite.add(c)


def add_dot_case_arrays(name, t, a, b, lb, lc, rb, rc):
    spec = dot_einsum(a.ndim, b.ndim, lb, lc, rb, rc)
    exp = finish(np.einsum(spec, a.astype(np.float64), b.astype(np.float64)), t)
    mag = np.einsum(spec, np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    c = kt.Case(name)
    r = c.op('dot', S(t, exp.shape), [c.param(a, t), c.param(b, t)], dot_attrs(lb, lc, rb, rc))
    c.out(r, exp, kt.float_sum_tol(t, kt.nelems([a.shape[d] for d in lc]), mag))
    suite.add(c)


add_dot()
add_convolution()
add_random_dots(200)
add_random_convolutions(300)
add_large()

if __name__ == '__main__':
    sys.exit(suite.main())
