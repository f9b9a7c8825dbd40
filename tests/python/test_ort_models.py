"""kiln.Model against ONNX Runtime (the PyPI wheel, pinned to the version of the npm
onnxruntime-node the CLI tests use; CPU provider, graph optimizations off) on the ONNX
models of the CLI model tests: tests/models/test_onnx_models.py builds them with
onnx.helper from seeded random data, and its compare() is the tolerance: floats within
|kiln - ort| <= 1e-4 + 1e-3*|ort|, integers and bools exactly. Every model runs with
--jit auto (through run_ort, ONNX Runtime's calling convention) and --jit off (run)."""

import functools

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import kiln
from conftest import load_module
from pins import ort_pin

onnx_models = load_module("kiln_ref_onnx_models", "tests/models/test_onnx_models.py")

pytestmark = pytest.mark.reference


def names_case():
    """The CLI test's model with names that need quoting in a file system and a dynamic
    dimension (tests/models/test_onnx_models.py, cli_checks)."""
    F = TensorProto.FLOAT
    nodes = [helper.make_node("Neg", ["in:put/x"], ["out/y:0"]), helper.make_node("Abs", ["in:put/x"], ["plain"])]
    m = onnx_models.model(nodes, [helper.make_tensor_value_info("in:put/x", F, [2, "n"])],
                          [helper.make_tensor_value_info("out/y:0", F, [2, "n"]),
                           helper.make_tensor_value_info("plain", F, [2, "n"])])
    return m, {"in:put/x": np.array([[1, -2, 3], [4, 5, -6]], np.float32)}


CASES = {fn.__name__: fn for fn in onnx_models.CASES}
CASES["odd_names_dynamic_dims"] = names_case


@functools.lru_cache(maxsize=None)
def reference(name):
    """(model bytes, feeds, output names, ONNX Runtime's outputs) of one case."""
    m, feeds = CASES[name]()
    data = m.SerializeToString()
    feeds = {k: np.asarray(v) for k, v in feeds.items()}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    return data, feeds, outs, [np.asarray(v) for v in sess.run(None, feeds)]


def test_onnxruntime_is_the_pinned_reference():
    assert "onnxruntime==" + ort.__version__ == ort_pin()


@pytest.mark.parametrize("jit", ["auto", "off"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_model_vs_onnxruntime(name, jit):
    data, feeds, outs, want = reference(name)
    model = kiln.Model(data, jit=jit)
    assert [o.name for o in model.outputs] == outs
    if jit == "auto":
        got = model.run_ort(None, feeds)
    else:
        d = model.run(feeds)
        assert list(d) == outs
        got = [d[o] for o in outs]
    assert len(got) == len(want)
    for o, g, w in zip(outs, got, want):
        err = onnx_models.compare(o, g, w)
        assert err is None, err
