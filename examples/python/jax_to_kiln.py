#!/usr/bin/env python3
"""jax_to_kiln: a JAX function lowered to XLA HLO text, compiled and run by kiln, and
checked against JAX itself.

    python3 jax_to_kiln.py

jax.jit(f).lower(*args).as_text(dialect="hlo") is the HLO module JAX hands XLA;
kiln.compile_hlo parses, optimizes and compiles it (for the cpu device; a module the
cpu device cannot compile runs on the interpreter, with a warning) and returns a
function taking the same arguments. Prints each program's largest difference from
JAX and exits 1 if one is outside the tolerance (0 with a note when JAX is not
installed: pip install jax).
"""

import os
import sys

import numpy as np

import kiln


def programs(jax, jnp):
    """(name, function, arguments, rtol, atol) of each demonstrated program."""
    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def mlp(x, w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        return jax.nn.softmax(h @ w2 + b2, axis=-1)

    def layer_norm(x, gamma, beta):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * gamma + beta

    def power_iteration(a, v):  # a fori_loop: an HLO while loop
        def step(_, v):
            v = a @ v
            return v / jnp.linalg.norm(v)
        v = jax.lax.fori_loop(0, 20, step, v)
        return v, v @ a @ v

    return [
        ("mlp", mlp, (f32(8, 16), f32(16, 32) * 0.25, f32(32), f32(32, 10) * 0.25, f32(10)), 1e-5, 1e-6),
        ("layer_norm", layer_norm, (f32(4, 32) * 3 + 1, f32(32), f32(32)), 1e-5, 1e-5),
        ("power_iteration", power_iteration, (np.eye(6, dtype=np.float32) * 2 + f32(6, 6) * 0.1, f32(6)),
         1e-4, 1e-5),
    ]


def main():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("jax_to_kiln: JAX is not installed (pip install jax); nothing to do")
        return 0
    failed = 0
    for name, fn, args, rtol, atol in programs(jax, jnp):
        jitted = jax.jit(fn)
        hlo_text = jitted.lower(*args).as_text(dialect="hlo")
        f = kiln.compile_hlo(hlo_text)  # kiln.compile_hlo(hlo_text, device="interpreter") works too
        got = f(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = [np.asarray(v) for v in jax.tree_util.tree_leaves(jitted(*args))]
        worst = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
        ok = all(np.allclose(g, w, rtol=rtol, atol=atol) for g, w in zip(got, want))
        failed += not ok
        print("%-16s %d outputs, max |kiln - jax| = %.3g  %s" % (name, len(want), worst, "ok" if ok else "MISMATCH"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
