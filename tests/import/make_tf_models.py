#!/usr/bin/python3
"""Writes small TensorFlow models for the importer's fuzz seeds and for hand checks,
without TensorFlow or a protobuf library: GraphDefs are encoded here with a minimal
protobuf writer (field numbers from tensorflow/core/framework/*.proto) and TF.js graph
models are written as model.json + a shard.

    /usr/bin/python3 tests/import/make_tf_models.py [OUT_DIR]

Without OUT_DIR the files go to tests/fuzz/seeds/fuzz_tf_import (GraphDefs, .pb) and
tests/fuzz/seeds/fuzz_tfjs_import (model.json, a NUL byte, then the weight bytes: the
input format of fuzz_tfjs_import). With OUT_DIR, each TF.js model is written there as
NAME.json + NAME.bin, the layout tfjs_import_file reads."""

import json
import os
import struct
import sys

# ---- protobuf wire format ----


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint((field << 3) | wire)


def f_int(field, v):
    return tag(field, 0) + varint(v)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return tag(field, 2) + varint(len(data)) + data


def f_float(field, v):
    return tag(field, 5) + struct.pack("<f", v)


def f_double(field, v):
    return tag(field, 1) + struct.pack("<d", v)


# DataType numbers (types.proto).
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_STRING, DT_INT64, DT_BOOL, DT_HALF = 1, 2, 3, 4, 7, 9, 10, 19
DT_VARIANT = 21


def shape(dims):
    if dims is None:
        return f_int(3, 1)  # unknown_rank
    return b"".join(f_bytes(2, f_int(1, d)) for d in dims)


def tensor(dtype, dims, content=None, **vals):
    t = f_int(1, dtype) + f_bytes(2, shape(dims))
    if content is not None:
        t += f_bytes(4, content)
    for name, values in vals.items():
        if name == "float_val":
            t += f_bytes(5, b"".join(struct.pack("<f", v) for v in values))
        elif name == "int_val":
            t += f_bytes(7, b"".join(varint(v) for v in values))
        elif name == "int64_val":
            t += f_bytes(10, b"".join(varint(v) for v in values))
        elif name == "bool_val":
            t += f_bytes(11, b"".join(varint(int(v)) for v in values))
        elif name == "half_val":
            t += f_bytes(13, b"".join(varint(v) for v in values))
        elif name == "double_val":
            t += b"".join(f_double(6, v) for v in values)
        elif name == "string_val":
            t += b"".join(f_bytes(8, v) for v in values)
        else:
            raise ValueError(name)
    return t


# AttrValue
def a_s(v):
    return f_bytes(2, v)


def a_i(v):
    return f_int(3, v)


def a_f(v):
    return f_float(4, v)


def a_b(v):
    return f_int(5, int(v))


def a_type(v):
    return f_int(6, v)


def a_shape(dims):
    return f_bytes(7, shape(dims))


def a_tensor(t):
    return f_bytes(8, t)


def a_func(name, attrs=None):
    return f_bytes(10, name_attr_list(name, attrs or {}))


def a_list(i=(), s=(), f=(), types=(), shapes=()):
    body = b""
    if i:
        body += f_bytes(3, b"".join(varint(v) for v in i))
    if f:
        body += f_bytes(4, b"".join(struct.pack("<f", v) for v in f))
    if types:
        body += f_bytes(6, b"".join(varint(v) for v in types))
    body += b"".join(f_bytes(2, v) for v in s)
    body += b"".join(f_bytes(7, shape(d)) for d in shapes)
    return f_bytes(1, body)


def attr_entries(field, attrs):
    return b"".join(f_bytes(field, f_bytes(1, k) + f_bytes(2, v)) for k, v in attrs.items())


def name_attr_list(name, attrs):
    return f_bytes(1, name) + attr_entries(2, attrs)


def node(name, op, inputs=(), device=None, **attrs):
    n = f_bytes(1, name) + f_bytes(2, op)
    n += b"".join(f_bytes(3, i) for i in inputs)
    if device:
        n += f_bytes(4, device)
    return n + attr_entries(5, attrs)


def graphdef(nodes, functions=(), producer=1234):
    g = b"".join(f_bytes(1, n) for n in nodes)
    if functions:
        g += f_bytes(2, b"".join(f_bytes(1, fn) for fn in functions))
    g += f_bytes(4, f_int(1, producer))
    return g


def argdef(name, dtype):
    return f_bytes(1, name) + f_int(3, dtype)


def function(name, inputs, outputs, nodes, ret):
    sig = f_bytes(1, name)
    sig += b"".join(f_bytes(2, argdef(n, t)) for n, t in inputs)
    sig += b"".join(f_bytes(3, argdef(n, t)) for n, t in outputs)
    fd = f_bytes(1, sig) + b"".join(f_bytes(3, n) for n in nodes)
    fd += b"".join(f_bytes(4, f_bytes(1, k) + f_bytes(2, v)) for k, v in ret.items())
    return fd


def const(name, t, dtype):
    return node(name, "Const", value=a_tensor(t), dtype=a_type(dtype))


# ---- models ----


def basic():
    return graphdef([
        node("x", "Placeholder", dtype=a_type(DT_FLOAT), shape=a_shape([-1, 3])),
        const("w", tensor(DT_FLOAT, [3], content=struct.pack("<3f", 1, 2, 3)), DT_FLOAT),
        node("mul", "Mul", ["x", "w:0"], device="/device:CPU:0", T=a_type(DT_FLOAT)),
        node("conv", "Conv2D", ["mul", "w"], strides=a_list(i=[1, 2, 2, 1]), padding=a_s("SAME"),
             data_format=a_s("NHWC"), dilations=a_list(i=[1, 1, 1, 1]), T=a_type(DT_FLOAT)),
        node("out", "Identity", ["conv", "^w"]),
        node("side", "NoOp", ["^out"]),
    ])


def tensors():
    return graphdef([
        const("f", tensor(DT_FLOAT, [4], float_val=[1.0, 2.0]), DT_FLOAT),
        const("d", tensor(DT_DOUBLE, [], double_val=[0.5]), DT_DOUBLE),
        const("i", tensor(DT_INT32, [2, 2], int_val=[-1]), DT_INT32),
        const("u8", tensor(DT_UINT8, [3], int_val=[255, 1]), DT_UINT8),
        const("l", tensor(DT_INT64, [2], int64_val=[-(1 << 62), 7]), DT_INT64),
        const("b", tensor(DT_BOOL, [3], bool_val=[True, False]), DT_BOOL),
        const("h", tensor(DT_HALF, [2], half_val=[0x3C00]), DT_HALF),
        const("s", tensor(DT_STRING, [2], string_val=[b"ab", b"c"]), DT_STRING),
        const("sc", tensor(DT_STRING, [2], content=b"\x01\x02xyz"), DT_STRING),
        const("v", tensor(DT_VARIANT, [1]), DT_VARIANT),
        node("k", "Custom", f=a_f(0.25), b=a_b(True), s=a_s("x"), i=a_i(-3), sh=a_shape(None),
             lf=a_list(f=[1.5, 2.5]), lt=a_list(types=[DT_FLOAT, DT_INT32]), ls=a_list(s=[b"a", b""]),
             lsh=a_list(shapes=[[1, -1], None]), e=a_list()),
    ])


def loop():
    return graphdef([
        const("zero", tensor(DT_INT32, [], int_val=[0]), DT_INT32),
        const("ten", tensor(DT_INT32, [], int_val=[10]), DT_INT32),
        const("one", tensor(DT_INT32, [], int_val=[1]), DT_INT32),
        node("enter", "Enter", ["zero"], frame_name=a_s("while"), is_constant=a_b(False), parallel_iterations=a_i(10)),
        node("merge", "Merge", ["enter", "next"], N=a_i(2)),
        node("limit", "Enter", ["ten"], frame_name=a_s("while"), is_constant=a_b(True)),
        node("less", "Less", ["merge", "limit"]),
        node("cond", "LoopCond", ["less"]),
        node("switch", "Switch", ["merge", "cond"]),
        node("body", "Identity", ["switch:1"]),
        node("step", "Enter", ["one"], frame_name=a_s("while"), is_constant=a_b(True)),
        node("add", "AddV2", ["body", "step"]),
        node("next", "NextIteration", ["add"]),
        node("exit", "Exit", ["switch"]),
        node("ta", "TensorArrayV3", ["ten"], dtype=a_type(DT_FLOAT)),
        node("ta_size", "TensorArraySizeV3", ["ta", "ta:1"]),
    ])


def functions():
    pick = function("pick", [("x", DT_FLOAT), ("p", DT_BOOL)], [("y", DT_FLOAT), ("idx", DT_INT32)], [
        const("one", tensor(DT_FLOAT, [], float_val=[1.0]), DT_FLOAT),
        node("sw", "Switch", ["x", "p"], T=a_type(DT_FLOAT)),
        node("add", "AddV2", ["sw:output_true:0", "one:output:0"]),
        const("k", tensor(DT_INT32, [], int_val=[2]), DT_INT32),
        node("top", "TopKV2", ["x", "k:output:0"]),
    ], {"y": "add:z:0", "idx": "top:indices:0"})
    wrap = function("wrap", [("x", DT_FLOAT)], [("out", DT_INT32)], [
        const("yes", tensor(DT_BOOL, [], bool_val=[True]), DT_BOOL),
        node("call", "pick", ["x", "yes:output:0"]),
    ], {"out": "call:idx:0"})
    return graphdef([
        node("in", "Placeholder", dtype=a_type(DT_FLOAT)),
        node("pc", "StatefulPartitionedCall", ["in"], f=a_func("wrap", {"T": a_type(DT_FLOAT)}),
             Tout=a_list(types=[DT_INT32])),
    ], functions=[pick, wrap])


def tfjs_model():
    """A TF.js graph model and its weight bytes (one group, two weights)."""
    weights = bytes([0, 64, 128, 255]) + struct.pack("<2e", 1.0, -2.5)
    model = {
        "format": "graph-model",
        "generatedBy": "make_tf_models.py",
        "convertedBy": "hand",
        "modelTopology": {
            "versions": {"producer": 808},
            "node": [
                {"name": "x", "op": "Placeholder",
                 "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": "-1"}, {"size": "2"}]}}}},
                {"name": "w", "op": "Const",
                 "attr": {"value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": {"dim": [{"size": "2"}, {"size": "2"}]}}},
                          "dtype": {"type": "DT_FLOAT"}}},
                {"name": "b", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}}},
                {"name": "k", "op": "Const",
                 "attr": {"value": {"tensor": {"dtype": "DT_INT32", "tensorShape": {"dim": [{"size": "2"}]}, "intVal": [3]}}}},
                {"name": "mm", "op": "MatMul", "input": ["x", "w"],
                 "attr": {"transpose_a": {"b": False}, "transpose_b": {"b": False}, "T": {"type": "DT_FLOAT"}}},
                {"name": "add", "op": "BiasAdd", "input": ["mm", "b:0"],
                 "attr": {"data_format": {"s": "TkhXQw=="}, "T": {"type": "DT_FLOAT"}}},
                {"name": "out", "op": "Identity", "input": ["add", "^k"], "attr": {"T": {"type": "DT_FLOAT"}}},
            ],
            "library": {},
        },
        "signature": {"inputs": {"x:0": {"name": "x:0", "dtype": "DT_FLOAT"}},
                      "outputs": {"out:0": {"name": "out:0", "dtype": "DT_FLOAT"}}},
        "weightsManifest": [{
            "paths": ["model.bin"],
            "weights": [
                {"name": "w", "shape": [2, 2], "dtype": "float32",
                 "quantization": {"dtype": "uint8", "min": -1.0, "scale": 0.0078125, "original_dtype": "float32"}},
                {"name": "b", "shape": [2], "dtype": "float32",
                 "quantization": {"dtype": "float16", "original_dtype": "float32"}},
            ],
        }],
    }
    return json.dumps(model, indent=1).encode(), weights


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graphdefs = {"basic.pb": basic(), "tensors.pb": tensors(), "loop.pb": loop(), "functions.pb": functions()}
    text, weights = tfjs_model()
    if len(sys.argv) > 1:
        out = sys.argv[1]
        os.makedirs(out, exist_ok=True)
        for name, data in graphdefs.items():
            open(os.path.join(out, name), "wb").write(data)
        open(os.path.join(out, "model.json"), "wb").write(text)
        open(os.path.join(out, "model.bin"), "wb").write(weights)
        return
    pb_dir = os.path.join(root, "fuzz", "seeds", "fuzz_tf_import")
    js_dir = os.path.join(root, "fuzz", "seeds", "fuzz_tfjs_import")
    os.makedirs(pb_dir, exist_ok=True)
    os.makedirs(js_dir, exist_ok=True)
    for name, data in graphdefs.items():
        open(os.path.join(pb_dir, name), "wb").write(data)
    open(os.path.join(js_dir, "model.seed"), "wb").write(text + b"\0" + weights)


if __name__ == "__main__":
    main()
