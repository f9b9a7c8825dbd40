"""The kiln Python API, entry point by entry point, including misuse: every error is
the kiln.Error subclass for its kiln_code (also the matching builtin exception) with a
message that names the input, output, option or file involved."""

import gc
import io
import os
import pathlib
import sys
import threading
import time

import numpy as np
import pytest

import kiln
from conftest import ROOT, SPIN_HLO, load_module, spin_reference

onnx_models = load_module("kiln_ref_onnx_models", "tests/models/test_onnx_models.py")
from onnx import TensorProto, helper  # noqa: E402  (the reference module needs onnx too)

ADD_HLO = """HloModule add_mul
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  s = f32[2,3] add(a, b)
  m = f32[2,3] multiply(a, b)
  ROOT t = (f32[2,3], f32[2,3]) tuple(s, m)
}
"""

# map has no compiled form on cpu: it runs through the evaluator, and kiln warns so.
EVALUATED_HLO = """HloModule mapped
add1 {
  a = f32[] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[] add(a, one)
}
ENTRY main {
  x = f32[5] parameter(0)
  ROOT m = f32[5] map(x), dimensions={0}, to_apply=add1
}
"""

HLO_TYPES = {  # HLO element type -> numpy dtype (bf16: see test_bfloat16)
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
    "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32,
    "f64": np.float64,
}


def twice_hlo(t, shape="3"):
    op = "or" if t == "pred" else "add"
    return ("HloModule twice\nENTRY main {\n  x = %s[%s] parameter(0)\n  ROOT y = %s[%s] %s(x, x)\n}\n"
            % (t, shape, t, shape, op))


def mlp_model():
    m, feeds = onnx_models.mlp()
    return m.SerializeToString(), feeds


def dynamic_model():
    """x: float[N, 4] (N dynamic) and u: unknown rank -> y = x * 2, z = -u."""
    F = TensorProto.FLOAT
    nodes = [helper.make_node("Add", ["x", "x"], ["y"]), helper.make_node("Neg", ["u"], ["z"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["N", 4]),
                                      helper.make_tensor_value_info("u", F, None)],
                          [helper.make_tensor_value_info("y", F, ["N", 4]),
                           helper.make_tensor_value_info("z", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


# ------------------------------------------------------------ module level ----

def test_version():
    assert isinstance(kiln.version, str) and kiln.version == kiln.__version__
    assert kiln.version_info == tuple(int(p) for p in kiln.version.split("."))
    assert kiln.version_info >= (0, 2, 0)


def test_devices():
    devs = kiln.devices()
    names = [d.name for d in devs]
    assert "cpu" in names and "interpreter" in names
    assert [d.priority for d in devs] == sorted((d.priority for d in devs), reverse=True)
    for d in devs:
        assert isinstance(d.priority, int) and isinstance(d.description, str) and d.description
        assert d.available in (True, False) and d.source
        assert (d.reason is None) == d.available
        assert d["name"] == d.name
    cpu = devs[names.index("cpu")]
    assert cpu.available and cpu.source == "built-in"
    with pytest.raises(KeyError):
        cpu["nope"]


def test_option_keys():
    keys = kiln.option_keys()
    for k in ("device", "jit", "threads", "log_level", "format", "dump_to"):
        assert k in keys and isinstance(keys[k], str)


def test_error_hierarchy():
    pairs = {kiln.InvalidArgumentError: (ValueError, "INVALID_ARGUMENT"),
             kiln.NotFoundError: (LookupError, "NOT_FOUND"),
             kiln.UnimplementedError: (NotImplementedError, "UNIMPLEMENTED"),
             kiln.OutOfRangeError: (IndexError, "OUT_OF_RANGE"),
             kiln.ResourceExhaustedError: (MemoryError, "RESOURCE_EXHAUSTED"),
             kiln.InternalError: (Exception, "INTERNAL"),
             kiln.KilnIOError: (OSError, "IO_ERROR")}
    for cls, (builtin, code) in pairs.items():
        assert issubclass(cls, kiln.Error) and issubclass(cls, builtin)
        assert cls.code == code and cls.__module__ == "kiln"
        e = cls("message")
        assert str(e) == "message" and e.code == code
    assert not issubclass(kiln.NotFoundError, KeyError)  # str() of a KeyError quotes the message
    assert issubclass(kiln.Error, Exception)


# ------------------------------------------------------------------ loading ----

def test_load_path_bytes_and_pathlike(tmp_path):
    data, feeds = mlp_model()
    p = tmp_path / "mlp.onnx"
    p.write_bytes(data)
    want = kiln.Model(data).run(feeds)
    for src in (str(p), p, data, bytearray(data), memoryview(data)):
        m = kiln.Model(src)
        assert m.format == "ONNX"
        got = m.run(feeds)
        assert list(got) == ["logits", "probs"]
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])
    assert "ONNX" in repr(m)


def test_format_option(tmp_path):
    m = kiln.Model(ADD_HLO.encode(), format="hlo")
    assert m.format == "HLO text"
    p = tmp_path / "module.txt"  # no telling extension: the format option decides
    p.write_text(ADD_HLO)
    assert kiln.Model(p, format="hlo").format == "HLO text"
    with pytest.raises(kiln.InvalidArgumentError, match="format"):
        kiln.Model(ADD_HLO.encode(), format="caffe")


def test_load_errors(tmp_path):
    data, _ = mlp_model()
    with pytest.raises(kiln.InvalidArgumentError, match="ONNX") as e:
        kiln.Model(data[:len(data) // 2])  # truncated bytes
    assert e.value.code == "INVALID_ARGUMENT" and isinstance(e.value, ValueError)
    missing = tmp_path / "missing.onnx"
    with pytest.raises(kiln.NotFoundError, match="missing.onnx"):
        kiln.Model(missing)
    with pytest.raises(kiln.KilnIOError) as e:
        kiln.Model(str(tmp_path), format="hlo")  # a directory
    assert isinstance(e.value, OSError) and str(tmp_path) in str(e.value)
    with pytest.raises(kiln.InvalidArgumentError):
        kiln.Model(b"HloModule broken\nENTRY main {\n  ROOT x = f32[2] parameter(0\n}\n", format="hlo")
    with pytest.raises(TypeError):
        kiln.Model(12345)
    with pytest.raises(kiln.InvalidArgumentError, match="NUL"):
        kiln.Model("bad\0path.onnx")


def test_option_errors():
    with pytest.raises(kiln.Error, match="bogus_option") as e:
        kiln.Model(ADD_HLO.encode(), format="hlo", bogus_option=1)
    assert e.value.code in ("INVALID_ARGUMENT", "NOT_FOUND")
    with pytest.raises(kiln.InvalidArgumentError, match="jit"):
        kiln.Model(ADD_HLO.encode(), format="hlo", jit="sometimes")
    with pytest.raises(kiln.InvalidArgumentError, match="threads"):
        kiln.Model(ADD_HLO.encode(), format="hlo", threads="many")
    with pytest.raises(kiln.NotFoundError, match="tpu"):
        kiln.Model(ADD_HLO.encode(), format="hlo", device="tpu")
    with pytest.raises(kiln.KilnIOError, match="/dev/null/x") as e:
        kiln.Model(os.path.join(ROOT, "examples", "mlp.hlo"), dump_to="/dev/null/x")  # dumps need a directory
    assert isinstance(e.value, OSError)


def test_option_values(tmp_path):
    # bools as true/false, lists joined by ',', PathLike as text, threads as an int.
    m = kiln.Model(mlp_model()[0], jit="off", threads=1, log_placement=False, no_host_fallback=False,
                   jit_exclude_ops=["Softmax", "Relu"], dump_to=tmp_path / "dumps", min_cluster_size=2)
    assert m.stats()["jit"] == "off"
    m.run(mlp_model()[1])
    assert (tmp_path / "dumps").is_dir()


# ------------------------------------------------------------ introspection ----

def test_introspection_onnx():
    m = kiln.Model(dynamic_model())
    assert [i.name for i in m.inputs] == ["x", "u"] and [o.name for o in m.outputs] == ["y", "z"]
    x, u = m.inputs
    assert x.dtype == np.float32 and isinstance(x.dtype, np.dtype) and x.shape == (None, 4)
    assert u.shape is None  # unknown rank
    assert x.type == "tensor(float)"
    assert m.get_inputs() == m.inputs and m.get_outputs() == m.outputs
    assert "TensorInfo(name='x', dtype=float32, shape=(None, 4))" == repr(x)
    out = m.run({"x": np.ones((3, 4), np.float32), "u": np.arange(6, dtype=np.float32).reshape(1, 2, 3)})
    np.testing.assert_array_equal(out["y"], np.full((3, 4), 2, np.float32))
    np.testing.assert_array_equal(out["z"], -np.arange(6, dtype=np.float32).reshape(1, 2, 3))


def test_introspection_hlo():
    f = kiln.compile_hlo(ADD_HLO)
    assert [(i.name, i.dtype, i.shape) for i in f.inputs] == [("a", np.float32, (2, 3)), ("b", np.float32, (2, 3))]
    assert [o.name for o in f.outputs] == ["output_0", "output_1"]
    assert f.model.format == "HLO text"
    st = f.model.stats()
    assert st["device"] == "cpu" and st["runs"] == 0


def test_cache_dir_persists_compiled_code(tmp_path):
    """The option cache_dir (a path object too) keeps the cpu backend's object code on
    disk: another process compiling the same module links it ("compile cache: loaded"
    at log level info) and computes bit-identical results."""
    import subprocess
    hlo = ADD_HLO.replace("add_mul", "add_mul_cache_dir")  # not in this process's memory cache
    cache = tmp_path / "cache"
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = a * 0.25 - 1
    got = [np.asarray(o) for o in kiln.compile_hlo(hlo, cache_dir=cache)(a, b)]
    assert len(list(cache.glob("*.kiln-obj"))) == 1
    code = ("import sys, numpy as np, kiln\n"
            "msgs = []\n"
            "f = kiln.compile_hlo(sys.argv[1], cache_dir=sys.argv[2], log_level='info',\n"
            "                     log=lambda level, m: msgs.append(m))\n"
            "a = np.arange(6, dtype=np.float32).reshape(2, 3)\n"
            "outs = f(a, a * 0.25 - 1)\n"
            "assert any('compile cache: loaded' in m for m in msgs), msgs\n"
            "np.save(sys.argv[3], np.stack([np.asarray(o) for o in outs]))\n")
    out = tmp_path / "out.npy"
    subprocess.run([sys.executable, "-c", code, hlo, str(cache), str(out)], check=True, env=dict(os.environ))
    np.testing.assert_array_equal(np.load(out).view(np.uint32), np.stack(got).view(np.uint32))


def test_stats_count_runs():
    data, feeds = mlp_model()
    m = kiln.Model(data)
    for _ in range(3):
        m.run(feeds)
    st = m.stats()
    assert st["runs"] == 3 and st["jit"] == "auto" and st["nodes"] > 0
    assert set(st) >= {"clusters", "cluster_runs", "cluster_compiles", "cluster_cache_hits",
                       "cluster_fallback_runs", "cluster_compile_ms", "op_compiles", "op_cache_hits", "device"}


# --------------------------------------------------------------------- runs ----

def test_run_outputs_select_and_order():
    data, feeds = mlp_model()
    m = kiln.Model(data)
    full = m.run(feeds)
    assert list(m.run(feeds, ["probs", "logits"])) == ["probs", "logits"]
    only = m.run(feeds, "probs")
    assert list(only) == ["probs"]
    np.testing.assert_array_equal(only["probs"], full["probs"])
    lst = m.run_ort(["probs", "logits"], feeds)
    assert isinstance(lst, list)
    np.testing.assert_array_equal(lst[0], full["probs"])
    np.testing.assert_array_equal(lst[1], full["logits"])
    for everything in (None, []):  # ONNX Runtime: None or [] is every output
        got = m.run_ort(everything, feeds)
        assert len(got) == 2
        np.testing.assert_array_equal(got[0], full["logits"])


def test_outputs_are_numpy_views_of_kiln_memory():
    data, feeds = mlp_model()
    m = kiln.Model(data)
    out = m.run(feeds)["probs"]
    assert type(out) is np.ndarray and out.flags.c_contiguous and not out.flags.owndata
    assert out.flags.writeable
    assert type(out.base).__name__ == "memoryview" and type(out.base.obj).__name__ == "TensorBuffer"
    out[0, 0] = 7  # the caller owns it now
    del m
    gc.collect()  # outputs do not depend on the model's life
    assert out[0, 0] == 7 and np.isfinite(out).all()
    np.testing.assert_allclose(out[1:].sum(axis=1), 1, rtol=1e-5)


def test_feeds_not_copied_or_leaked():
    f = kiln.compile_hlo(ADD_HLO)
    a = np.ones((2, 3), np.float32)
    before = sys.getrefcount(a)
    for _ in range(100):
        f(a, a)
    assert sys.getrefcount(a) == before  # every buffer view was released


@pytest.mark.parametrize("t", sorted(HLO_TYPES))
def test_dtypes(t):
    dt = np.dtype(HLO_TYPES[t])
    f = kiln.compile_hlo(twice_hlo(t), device="interpreter")
    assert f.inputs[0].dtype == dt
    rng = np.random.default_rng(5)
    if dt.kind == "b":
        x = np.array([True, False, True])
    elif dt.kind == "f":
        x = rng.standard_normal(3).astype(dt)
    else:
        x = np.array([1, np.iinfo(dt).max, np.iinfo(dt).min], dt)
    y = f(x)
    assert y.dtype == dt and y.shape == (3,)
    np.testing.assert_array_equal(y, (x | x) if dt.kind == "b" else (x + x))


def test_bfloat16():
    f = kiln.compile_hlo(twice_hlo("bf16"), device="interpreter")
    assert f.inputs[0].dtype == "bfloat16" and f.outputs[0].dtype == "bfloat16"
    x32 = np.array([1.0, 2.5, -3.0078125], np.float32)  # float32 in: rounded to bfloat16 (nearest even)
    y = f(x32)
    try:
        import ml_dtypes
    except ImportError:
        assert y.dtype == np.float32  # without ml_dtypes: widened exactly to float32
    else:
        assert y.dtype == ml_dtypes.bfloat16
        xb = x32.astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(f(xb).astype(np.float32), (xb.astype(np.float32) * 2))
    np.testing.assert_array_equal(np.asarray(y, np.float32), np.array([2.0, 5.0, -6.0], np.float32))
    with pytest.raises(kiln.InvalidArgumentError, match="x"):
        f(np.array([1, 2, 3], np.uint16))  # raw bits are not bfloat16


def onnx_model(nodes, inputs, outputs, opset):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m.SerializeToString()


def test_string_tensors_in_and_out():
    S = TensorProto.STRING
    model = kiln.Model(onnx_model([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")],
                                  [helper.make_tensor_value_info("x", S, [None])],
                                  [helper.make_tensor_value_info("y", S, [None])], 21))
    assert model.inputs[0].dtype == np.dtype(object) and model.inputs[0].type == "tensor(string)"
    want = np.array(["ABC", "STRASSE", "ÉTÉ"], dtype=object)  # UTF-8 both ways
    for feed in (np.array(["abc", "Strasse", "été"]), ["abc", "Strasse", "été"],
                 np.array(["abc", "Strasse", "été"], dtype=object), [b"abc", b"Strasse", "été".encode()]):
        y = model.run({"x": feed})["y"]
        assert y.dtype == object and y.shape == (3,) and all(isinstance(e, str) for e in y)
        np.testing.assert_array_equal(y, want)
    with pytest.raises(kiln.InvalidArgumentError, match="input x.*string\\[1,2\\]"):
        model.run({"x": np.array([["a", "b"]])})  # the shape travels with the text
    with pytest.raises(kiln.InvalidArgumentError, match="x.*NUL"):
        model.run({"x": ["a\0b"]})
    with pytest.raises(kiln.InvalidArgumentError, match="x"):
        model.run({"x": np.array([1.0, 2.0], np.float32)})
    with pytest.raises(kiln.InvalidArgumentError, match="x.*element 1"):
        model.run({"x": np.array(["a", 3], dtype=object)})


def test_narrow_types_round_trip_as_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kinds = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
             "float8_e5m2": TensorProto.FLOAT8E5M2, "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
             "int4": TensorProto.INT4, "uint4": TensorProto.UINT4,
             # by number: older onnx packages predate the names
             "float8_e8m0fnu": 24, "uint2": 25, "int2": 26}
    for name, t in kinds.items():
        if not hasattr(ml_dtypes, name):
            continue  # an ml_dtypes older than the type
        dt = np.dtype(getattr(ml_dtypes, name))
        model = kiln.Model(onnx_model([helper.make_node("Identity", ["x"], ["y"]),
                                       helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT)],
                                      [helper.make_tensor_value_info("x", t, [2, 3])],
                                      [helper.make_tensor_value_info("y", t, [2, 3]),
                                       helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 3])], 21))
        assert model.inputs[0].dtype == name
        x = np.array([[-2, -1, 0], [1, 2, 3]], np.float32)
        if name in ("uint4", "uint2"):
            x = np.abs(x)
        elif name == "int2":
            x = np.array([[-2, -1, 0], [1, -2, 1]], np.float32)
        elif name == "float8_e8m0fnu":  # powers of two only
            x = np.array([[0.25, 0.5, 1], [2, 4, 8]], np.float32)
        x = x.astype(dt)
        out = model.run({"x": x})
        assert out["y"].dtype == dt, name
        np.testing.assert_array_equal(out["y"].view(np.uint8), x.view(np.uint8))  # bit for bit
        np.testing.assert_array_equal(out["f"], x.astype(np.float32))  # ml_dtypes' widening is the reference
        np.testing.assert_array_equal(model.run({"x": x.astype(np.float32).tolist()})["y"].view(np.uint8),
                                      x.view(np.uint8))  # a list takes the declared type


def test_sequences_optionals_and_maps_in_and_out():
    F, I = TensorProto.FLOAT, TensorProto.INT64
    seq_f = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    opt_f = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2]))
    nodes = [helper.make_node("SequenceInsert", ["s", "x"], ["s2"]),  # appended at the back
             helper.make_node("SequenceLength", ["s2"], ["n"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["o"], ["o2"])]
    g = helper.make_graph(nodes, "g", [helper.make_value_info("s", seq_f), helper.make_tensor_value_info("x", F, [2]),
                                      helper.make_value_info("o", opt_f)],
                          [helper.make_value_info("s2", seq_f), helper.make_tensor_value_info("n", I, []),
                           helper.make_tensor_value_info("has", TensorProto.BOOL, []),
                           helper.make_value_info("o2", opt_f)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    model = kiln.Model(m.SerializeToString())
    assert [i.kind for i in model.inputs] == ["sequence", "tensor", "optional"]
    assert model.inputs[0].dtype == np.float32 and model.inputs[0].type == "seq(tensor(float))"
    a, b, x = np.ones(3, np.float32), np.arange(4, dtype=np.float32).reshape(2, 2), np.array([5, 6], np.float32)
    out = model.run({"s": [a, b], "x": x, "o": np.array([7, 8], np.float32)})
    assert isinstance(out["s2"], list) and len(out["s2"]) == 3 and out["n"] == 3 and out["has"]
    for got, want in zip(out["s2"], [a, b, x]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out["o2"], [7, 8])
    out = model.run({"s": [], "x": x, "o": None})  # an empty sequence and an empty optional
    assert len(out["s2"]) == 1 and out["n"] == 1 and not out["has"] and out["o2"] is None
    del model
    gc.collect()
    np.testing.assert_array_equal(out["s2"][0], x)  # items outlive the model, over kiln's memory
    with pytest.raises(kiln.InvalidArgumentError, match="input s.*sequence"):
        kiln.Model(m.SerializeToString()).run({"s": a, "x": x, "o": None})
    with pytest.raises(kiln.InvalidArgumentError, match="s"):
        kiln.Model(m.SerializeToString()).run({"s": [a, np.ones(2, np.int64)], "x": x, "o": None})


def test_map_in_and_out_as_dict():
    text = ('framework onnx\ninput m[_onnx_type="map(int64,tensor(float))"]: ?\n'
            'r = Identity(m)\noutput r = r:0\n')
    model = kiln.Model(text.encode(), format="graph")
    assert model.inputs[0].kind == "map" and model.inputs[0].dtype == np.float32
    assert model.run({"m": {5: 1.5, 6: -2.0, 7: 0.25}})["r"] == {5: 1.5, 6: -2.0, 7: 0.25}
    with pytest.raises(kiln.InvalidArgumentError, match="input m.*map"):
        model.run({"m": [1.0, 2.0]})


def test_zipmap_gives_dicts():
    ml = helper.make_opsetid("ai.onnx.ml", 1)
    seq_map = helper.make_sequence_type_proto(helper.make_map_type_proto(TensorProto.STRING,
                                                                        helper.make_tensor_type_proto(1, [])))
    g = helper.make_graph([helper.make_node("ZipMap", ["p"], ["z"], domain="ai.onnx.ml",
                                            classlabels_strings=["cat", "dog"])], "g",
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 2])],
                          [helper.make_value_info("z", seq_map)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), ml])
    m.ir_version = 8
    p = np.array([[0.25, 0.75], [0.5, 0.5]], np.float32)
    z = kiln.Model(m.SerializeToString()).run({"p": p})["z"]
    assert z == [{"cat": 0.25, "dog": 0.75}, {"cat": 0.5, "dog": 0.5}]  # ONNX Runtime's form


def test_lists_scalars_and_zero_d():
    f = kiln.compile_hlo(ADD_HLO)
    s, m = f([[1, 2, 3], [4, 5, 6]], np.ones((2, 3), np.float32))  # a list takes the declared dtype
    np.testing.assert_array_equal(s, [[2, 3, 4], [5, 6, 7]])
    assert s.dtype == np.float32
    g = kiln.compile_hlo("HloModule s\nENTRY main {\n  x = s64[] parameter(0)\n  ROOT y = s64[] negate(x)\n}\n")
    assert g(5) == -5 and g(5).shape == () and g(5).dtype == np.int64
    assert g(np.int64(7)) == -7 and g(np.array(9)) == -9


def test_dlpack_input():
    class OnlyDLPack:  # exposes __dlpack__ but not the buffer protocol
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, **kw):
            return self._a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    f = kiln.compile_hlo(ADD_HLO)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    s, m = f(OnlyDLPack(a), OnlyDLPack(a))
    np.testing.assert_array_equal(s, a + a)
    np.testing.assert_array_equal(m, a * a)
    with pytest.raises(kiln.InvalidArgumentError, match="C-contiguous"):
        f(OnlyDLPack(np.arange(6, dtype=np.float32).reshape(3, 2).T), a)


def test_memoryview_and_bytes_like_inputs():
    f = kiln.compile_hlo(twice_hlo("u8", "4"))
    np.testing.assert_array_equal(f(bytearray(b"\x01\x02\x03\x04")), [2, 4, 6, 8])
    np.testing.assert_array_equal(f(memoryview(b"\x05\x06\x07\x08")), [10, 12, 14, 16])


def test_feed_errors_name_the_input():
    data, feeds = mlp_model()
    m = kiln.Model(data)
    x = feeds["x"]
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*float32.*float64") as e:
        m.run({"x": x.astype(np.float64)})  # wrong dtype: never converted silently
    assert isinstance(e.value, ValueError)
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*\[4,16\].*\[3,16\]"):
        m.run({"x": x[:3]})  # wrong shape
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*\[4,16\].*\[4,16,1\]"):
        m.run({"x": x[..., None]})  # wrong rank
    with pytest.raises(kiln.InvalidArgumentError, match=r"missing input.*x \(float32\[4,16\]\)"):
        m.run({})
    with pytest.raises(kiln.NotFoundError, match=r"unknown input 'nope'.*x \(float32\[4,16\]\)") as e:
        m.run({"x": x, "nope": x})
    assert isinstance(e.value, LookupError)
    with pytest.raises(kiln.NotFoundError, match=r"unknown output 'nope'.*logits.*probs"):
        m.run(feeds, ["probs", "nope"])
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*C-contiguous"):
        m.run({"x": np.asfortranarray(x)})
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*C-contiguous"):
        m.run({"x": np.zeros((4, 32), np.float32)[:, ::2]})
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*byte order"):
        m.run({"x": x.astype(">f4")})
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: .*dtype object"):
        m.run({"x": np.array([object()] * 64, dtype=object).reshape(4, 16)})
    with pytest.raises(kiln.InvalidArgumentError, match=r"input x: "):
        m.run({"x": [[1, 2], [3]]})  # ragged list
    with pytest.raises(TypeError, match="dict"):
        m.run([("x", x)])
    with pytest.raises(TypeError, match="str"):
        m.run({0: x})
    with pytest.raises(TypeError, match="str"):
        m.run(feeds, [0])
    with pytest.raises(kiln.InvalidArgumentError, match="threads"):
        m.run(feeds, threads=-1)
    # A model that still works after every error.
    np.testing.assert_allclose(m.run(feeds)["probs"].sum(axis=1), 1, rtol=1e-5)


def test_tensorflow_style_names():
    # ":0" suffixes and HLO parameters as pN resolve as in `kiln run -i`.
    f = kiln.compile_hlo(ADD_HLO)
    a = np.ones((2, 3), np.float32)
    out = f.model.run({"p0": a, "p1": a})
    np.testing.assert_array_equal(out["output_0"], a + a)
    data, feeds = mlp_model()
    m = kiln.Model(data)
    out = m.run({"x:0": feeds["x"]}, ["probs:0"])
    np.testing.assert_array_equal(out["probs:0"], m.run(feeds)["probs"])


def test_hlo_function_calls():
    f = kiln.compile_hlo(ADD_HLO.encode())  # bytes too
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    s, m = f(a, a)
    np.testing.assert_array_equal(s, a + a)
    with pytest.raises(TypeError, match="2 parameters"):
        f(a)
    single = kiln.compile_hlo(twice_hlo("f32"))
    assert isinstance(single(np.ones(3, np.float32)), np.ndarray)
    assert "HloFunction" in repr(single)


def test_jit_modes_and_devices_agree():
    data, feeds = mlp_model()
    ref = kiln.Model(data, device="interpreter", jit="off").run(feeds)
    auto = kiln.Model(data, device="interpreter", jit="auto").run(feeds)
    for k in ref:  # clustering never changes a bit on the interpreter
        np.testing.assert_array_equal(auto[k], ref[k])
    cpu = kiln.Model(data, device="cpu", threads=1).run(feeds, threads=1)
    for k in ref:
        np.testing.assert_allclose(cpu[k], ref[k], rtol=1e-5, atol=1e-6)
    assert kiln.Model(data, device="interpreter").stats()["device"] == "interpreter"


def test_unimplemented_is_not_implemented_error():
    text = ("HloModule cc\nENTRY main {\n  x = f32[2] parameter(0)\n"
            "  ROOT y = f32[2] custom-call(x), custom_call_target=\"no_such_target\"\n}\n")
    with pytest.raises(kiln.UnimplementedError, match="custom-call") as e:
        kiln.compile_hlo(text)
    assert isinstance(e.value, NotImplementedError) and e.value.code == "UNIMPLEMENTED"


# ------------------------------------------------------------------- logging ----

def test_log_callback_receives_warnings():
    logs = []
    f = kiln.compile_hlo(EVALUATED_HLO, log=lambda level, msg: logs.append((level, msg)))
    # The cpu device does not compile map: kiln warns that it runs it through the
    # interpreter's evaluator (one thunk of the cpu executable).
    assert any(level == kiln.LogLevel.WARNING and "interpreter" in msg for level, msg in logs), logs
    assert all(isinstance(level, kiln.LogLevel) and isinstance(msg, str) for level, msg in logs)
    np.testing.assert_array_equal(f(np.array([3, 1, 2, 5, 4], np.float32)), [4, 2, 3, 6, 5])
    assert f.model.stats()["evaluated_instructions"] == 1


def test_log_level_info_and_run_thread():
    data, feeds = mlp_model()
    logs = []
    m = kiln.Model(data, log_level="info",
                   log=lambda level, msg: logs.append((level, msg, threading.get_ident())))
    n_load = len(logs)
    box = {}

    def worker():
        box["ident"] = threading.get_ident()
        box["out"] = m.run(feeds)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "out" in box
    assert any(level == kiln.LogLevel.INFO for level, _, _ in logs), logs
    # The cluster compiles at its first run: its messages come on the running thread,
    # which held no GIL while kiln ran (the callback took it).
    run_logs = logs[n_load:]
    assert run_logs and all(ident == box["ident"] for _, _, ident in run_logs), run_logs[:3]


def test_log_callback_errors_are_unraisable(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def bad(level, msg):
        raise RuntimeError("callback failed")

    f = kiln.compile_hlo(EVALUATED_HLO, log=bad)  # the load still succeeds
    assert seen and isinstance(seen[0], RuntimeError)
    np.testing.assert_array_equal(f(np.array([2, 1, 3, 5, 4], np.float32)), [3, 2, 4, 6, 5])
    with pytest.raises(TypeError):
        kiln.compile_hlo(EVALUATED_HLO, log="not callable")


def test_default_log_goes_to_stderr(capfd):
    kiln.compile_hlo(EVALUATED_HLO)
    assert "interpreter" in capfd.readouterr().err


# ------------------------------------------------------------------- threads ----

@pytest.fixture(scope="module")
def spin():
    """(model, n): the spin module on the interpreter and a trip count that runs for
    at least 0.4 s here."""
    m = kiln.Model(SPIN_HLO.encode(), format="hlo", device="interpreter")
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    n = 2000
    while True:
        t0 = time.perf_counter()
        m.run({"x": x, "n": np.int32(n)})
        if time.perf_counter() - t0 >= 0.4 or n >= 1 << 26:
            return m, n
        n *= 4


def test_gil_released_during_run(spin):
    """While one thread is inside a long run, the main thread keeps executing Python and
    finishes short runs of the same model: kiln_model_run holds no GIL."""
    m, n = spin
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    span = {}

    def long_run():
        span["t0"] = time.perf_counter()
        span["out"] = m.run({"x": x, "n": np.int32(n)})
        span["t1"] = time.perf_counter()

    t = threading.Thread(target=long_run)
    ticks, short_runs = [], []
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        short = m.run({"x": x, "n": np.int32(3)})["output_0"]
        short_runs.append(time.perf_counter())
    t.join()
    np.testing.assert_allclose(short, spin_reference(x, 3), rtol=1e-6)
    lo, hi = span["t0"] + 0.05, span["t1"] - 0.05
    inside = [s for s in short_runs if lo < s < hi]
    assert span["t1"] - span["t0"] >= 0.3
    # With the GIL held for the whole run the main thread could not run at all in there.
    assert len(inside) >= 10, (len(inside), len(short_runs), span["t1"] - span["t0"])
    np.testing.assert_allclose(span["out"]["output_0"], spin_reference(x, n), rtol=1e-5, atol=1e-6)


def test_concurrent_runs_match_sequential():
    data, _ = mlp_model()
    m = kiln.Model(data)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((4, 16)).astype(np.float32) for _ in range(8)]
    want = [m.run({"x": x})["probs"] for x in xs]
    got = [None] * len(xs)
    errors = []
    barrier = threading.Barrier(4)

    def worker(k):
        try:
            barrier.wait()
            for rep in range(5):
                for i in range(k, len(xs), 4):
                    got[i] = m.run({"x": xs[i]})["probs"]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)  # bit for bit, as the header promises
    assert m.stats()["runs"] == 8 + 8 * 5
