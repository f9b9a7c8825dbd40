"""kiln.compile_hlo against JAX (pinned jax/jaxlib, the versions scripts/install-ref-env.sh
installs for the CLI tests) on every program of tests/hlo/jax_models.py: matmul + bias +
relu + softmax, convolutions in several layouts, pooling, reductions, layer norm,
attention, gather/scatter, cumulative sums, sort/top-k, dynamic slices, while/fori
loops, cond/switch, f16/bf16, PRNG, ... The HLO is what the JAX user gets from
jax.jit(f).lower(*args).as_text(dialect="hlo"); kiln compiles it for the default
device (cpu, which runs the instructions it cannot compile through the evaluator one
by one, with a warning, and falls back to the interpreter for what it cannot take at all)
and for the interpreter, and each output must match JAX's own result on XLA:CPU within
the case's stated tolerance (jax_models.py says why each is what it is; compare_output
is the CLI test's). JAX's LAPACK custom-calls (solve, cholesky, qr, eigh, svd, ...) are
kiln's too; a custom-call target kiln does not know would be an UnimplementedError
naming the target, and no program here may be refused."""

import functools
import re

import numpy as np
import pytest

import kiln
from conftest import load_module

jax_models = load_module("jax_models", "tests/hlo/jax_models.py")
import jax  # noqa: E402

pytestmark = pytest.mark.reference
CASES = {c.name: c for c in jax_models.CASES}


@functools.lru_cache(maxsize=None)
def lowered(name):
    """(HLO text, numpy arguments, JAX's outputs as numpy arrays) of one case."""
    c = CASES[name]
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", c.x64)
    try:
        fn, args = c.build()
        jitted = jax.jit(fn, keep_unused=True)
        text = jitted.lower(*args).as_text(dialect="hlo")
        want = [np.asarray(v) for v in jax.tree_util.tree_leaves(jitted(*args))]
    finally:
        jax.config.update("jax_enable_x64", previous)
    return text, [np.asarray(a) for a in jax.tree_util.tree_leaves(args)], want


def test_jax_is_the_pinned_reference():
    from pins import ref_env_pins
    pins = dict(p.split("==") for p in ref_env_pins())
    assert jax.__version__ == pins["jax"] and np.__version__ == pins["numpy"]


@pytest.mark.parametrize("device", [None, "interpreter"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compile_hlo_vs_jax(name, device):
    text, args, want = lowered(name)
    targets = sorted(set(re.findall(r'custom_call_target="([^"]*)"', text)))
    logs = []
    try:
        f = kiln.compile_hlo(text, device=device, log=lambda level, msg: logs.append(msg))
    except kiln.UnimplementedError as e:
        pytest.fail("refused (custom-call targets %s): %s" % (targets, e))
    got = f(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    tol = CASES[name].tol
    for i, (g, w) in enumerate(zip(got, want)):
        ok, detail, _ = jax_models.compare_output(jax_models.storage_array(g), jax_models.storage_array(w), tol)
        assert ok, "output %d: %s (tolerance %s; kiln log: %s)" % (i, detail, tol, logs)


def test_lapack_programs_call_lapack_and_unknown_targets_are_named():
    """The LAPACK programs really exercise custom-calls (so the test above covers them),
    and a target kiln does not implement is refused with its name in the error."""
    lapack = [n for n in sorted(CASES) if "lapack_" in lowered(n)[0]]
    assert {"linalg_lapack", "linalg_eigh_svd", "linalg_lapack_f64"} <= set(lapack), lapack
    text = ('HloModule geev\n\nENTRY main {\n  a = f32[4,4] parameter(0)\n'
            '  ROOT e = (f32[4,4], f32[4], f32[4], f32[4,4], f32[4,4], s32[]) custom-call(a), '
            'custom_call_target="lapack_sgeev_ffi", api_version=API_VERSION_TYPED_FFI\n}\n')
    for device in (None, "interpreter"):
        with pytest.raises(kiln.UnimplementedError, match="lapack_sgeev_ffi"):
            kiln.compile_hlo(text, device=device)
