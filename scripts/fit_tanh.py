#!/usr/bin/env python3
"""Fits the rational f32 tanh of src/backends/cpu/cpu_math.c (tanh_body) and checks it.

tanh(x) ~ x P(t) / Q(t), t = x^2, P and Q of degree 6 with P(0) = Q(0) = 1, on
|x| <= 9.1 (past that tanh rounds to +-1 in f32). Fitted by iterated weighted linear
least squares against mpmath's tanh: each round solves x P(t) - tanh(x) Q(t) = 0 in the
least-squares sense with weights 1 / (tanh(x) Q_prev(t)) (so the residual approximates
the relative error) times Lawson-style weights that grow where the error is largest
(pushing toward minimax). Then the coefficients are evaluated in f64, as the emitted
code does, rounded to f32, and compared with the correctly rounded tanh (numpy's f64
tanh rounded to f32) at 6 million points. Run with Debian's python3 (numpy, mpmath):

    /usr/bin/python3 scripts/fit_tanh.py
"""
import mpmath
import numpy as np

NP = NQ = 6
XMAX = 9.1


def fit():
    mpmath.mp.dps = 30
    x = (1 - np.cos(np.linspace(0, np.pi, 4000))) / 2 * XMAX
    x = x[x > 1e-6]
    f = np.array([float(mpmath.tanh(mpmath.mpf(v))) for v in x])
    t = x * x
    w = np.ones_like(x)
    q_prev = np.ones_like(x)
    cols = [x * t ** k for k in range(1, NP + 1)] + [-f * t ** k for k in range(1, NQ + 1)]
    a = np.array(cols).T
    for _ in range(60):
        sc = w / (np.abs(f) * q_prev)
        c, *_ = np.linalg.lstsq(a * sc[:, None], (f - x) * sc, rcond=None)
        p = np.concatenate([[1.0], c[:NP]])
        q = np.concatenate([[1.0], c[NP:]])
        q_prev = np.polyval(q[::-1], t)
        err = (x * np.polyval(p[::-1], t) / q_prev - f) / f
        w = w * (np.abs(err) / np.abs(err).max() + 1e-3) ** 0.5
        w /= w.mean()
    return p, q, np.abs(err).max()


def check(p, q):
    tt = np.linspace(0, XMAX ** 2, 1000001)
    q_min = np.polyval(q[::-1], tt).min()
    rng = np.random.default_rng(1)
    xs = np.concatenate([np.linspace(0, XMAX + 0.5, 4_000_001).astype(np.float32),
                         (10.0 ** rng.uniform(-30, 1, 2_000_000)).astype(np.float32)])
    xd = xs.astype(np.float64)
    r = (xd * np.polyval(p[::-1], xd * xd) / np.polyval(q[::-1], xd * xd)).astype(np.float32)
    got = np.where(xs > XMAX, np.float32(1), np.minimum(r, np.float32(1)))
    ref = np.tanh(xd).astype(np.float32)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    return q_min, int(ulps.max()), len(xs)


if __name__ == '__main__':
    p, q, rel = fit()
    print('max relative error at the fitting nodes: %.3g' % rel)
    print('p =', repr([float(v) for v in p]))
    print('q =', repr([float(v) for v in q]))
    q_min, worst, n = check(p, q)
    print('min Q on [0, %g^2]: %.6g; max error %d ulp(s) from the correctly rounded tanh at %d points'
          % (XMAX, q_min, worst, n))
