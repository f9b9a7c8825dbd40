#!/usr/bin/python3
"""Writes the small ONNX models that tests/unit/test_onnx_import.c imports.

Usage: /usr/bin/python3 tests/import/make_onnx_models.py OUT_DIR

Built with Debian's python3-onnx (onnx.helper), so the bytes are what the reference
implementation serializes; a few models are edited by hand afterwards to hold what
onnx.helper will not write (typed-field encodings chosen on purpose, broken data,
external-data paths that escape). The C test knows the exact contents of each model;
change both together. Models are written without running onnx.checker on purpose:
several are invalid by design.
"""
import os
import struct
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def model(graph, opset=13, ir_version=8, extra_opsets=(), functions=None):
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    kwargs = dict(opset_imports=opsets, producer_name="kiln-tests")
    if functions:
        kwargs["functions"] = functions
    m = helper.make_model(graph, **kwargs)
    m.ir_version = ir_version
    return m


def save(out, name, m):
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def conv_relu(out):
    w = numpy_helper.from_array(np.arange(4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3) / 100, "W")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 1.0, 0.0], dtype=np.float32), "B")
    conv = helper.make_node("Conv", ["X", "W", "B"], ["conv_out"], name="conv1", kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1], strides=[1, 1], auto_pad="NOTSET")
    relu = helper.make_node("Relu", ["conv_out"], ["Y"], name="relu1")
    g = helper.make_graph([conv, relu], "conv_relu", [vi("X", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [vi("Y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[w, b],
                          value_info=[vi("conv_out", TensorProto.FLOAT, [1, 4, 8, 8])])
    save(out, "conv_relu.onnx", model(g, opset=13))


def init_as_input(out):
    # IR version 3 style: every initializer is also listed as a graph input.
    w = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], dtype=np.float32), "W")
    add = helper.make_node("Add", ["X", "W"], ["Y"])
    g = helper.make_graph([add], "old", [vi("X", TensorProto.FLOAT, [3]), vi("W", TensorProto.FLOAT, [3])],
                          [vi("Y", TensorProto.FLOAT, [3])], initializer=[w])
    save(out, "init_as_input.onnx", model(g, opset=7, ir_version=3))


def all_dtypes(out):
    inits = []
    # raw_data encodings of every numeric type (numpy_helper writes raw_data)
    arrays = {
        "f32": np.array([1.5, -2.0, 3.25], dtype=np.float32),
        "u8": np.array([0, 7, 255], dtype=np.uint8),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u16": np.array([0, 1000, 65535], dtype=np.uint16),
        "i16": np.array([-32768, 5, 32767], dtype=np.int16),
        "i32": np.array([-2147483648, 42, 2147483647], dtype=np.int32),
        "i64": np.array([-(2 ** 63), 1, 2 ** 40], dtype=np.int64),
        "bool": np.array([True, False, True]),
        "f16": np.array([1.0, -0.5, 65504.0], dtype=np.float16),
        "f64": np.array([1e300, -0.25, 3.0], dtype=np.float64),
        "u32": np.array([0, 123456, 4294967295], dtype=np.uint32),
        "u64": np.array([0, 2 ** 63, 2 ** 64 - 1], dtype=np.uint64),
        "c64": np.array([1 + 2j, -3.5 - 4j, 0j], dtype=np.complex64),
        "c128": np.array([1 + 2j, -3.5 - 4j, 0.5j], dtype=np.complex128),
    }
    for name, a in arrays.items():
        inits.append(numpy_helper.from_array(a, "raw_" + name))
    # bfloat16 by bits: 1.0 = 0x3f80, -2.0 = 0xc000, 0.5 = 0x3f00
    bf = TensorProto(name="raw_bf16", data_type=TensorProto.BFLOAT16, dims=[3])
    bf.raw_data = struct.pack("<3H", 0x3F80, 0xC000, 0x3F00)
    inits.append(bf)
    # typed-field encodings
    def typed(name, dtype, field, values, dims=(3,)):
        t = TensorProto(name=name, data_type=dtype, dims=list(dims))
        getattr(t, field).extend(values)
        inits.append(t)
    typed("t_f32", TensorProto.FLOAT, "float_data", [1.5, -2.0, 3.25])
    typed("t_u8", TensorProto.UINT8, "int32_data", [0, 7, 255])
    typed("t_i8", TensorProto.INT8, "int32_data", [-128, 0, 127])
    typed("t_u16", TensorProto.UINT16, "int32_data", [0, 1000, 65535])
    typed("t_i16", TensorProto.INT16, "int32_data", [-32768, 5, 32767])
    typed("t_i32", TensorProto.INT32, "int32_data", [-2147483648, 42, 2147483647])
    typed("t_i64", TensorProto.INT64, "int64_data", [-(2 ** 63), 1, 2 ** 40])
    typed("t_bool", TensorProto.BOOL, "int32_data", [1, 0, 1])
    typed("t_f16", TensorProto.FLOAT16, "int32_data", [0x3C00, 0xB800, 0x7BFF])  # 1, -0.5, 65504
    typed("t_bf16", TensorProto.BFLOAT16, "int32_data", [0x3F80, 0xC000, 0x3F00])
    typed("t_f64", TensorProto.DOUBLE, "double_data", [1e300, -0.25, 3.0])
    typed("t_u32", TensorProto.UINT32, "uint64_data", [0, 123456, 4294967295])
    typed("t_u64", TensorProto.UINT64, "uint64_data", [0, 2 ** 63, 2 ** 64 - 1])
    typed("t_c64", TensorProto.COMPLEX64, "float_data", [1, 2, -3.5, -4, 0, 0])
    typed("t_c128", TensorProto.COMPLEX128, "double_data", [1, 2, -3.5, -4, 0, 0.5])
    typed("t_str", TensorProto.STRING, "string_data", [b"hello", b"", b"a\x00b"])
    typed("t_scalar", TensorProto.INT64, "int64_data", [9], dims=())
    typed("t_empty", TensorProto.FLOAT, "float_data", [], dims=(0, 4))
    g = helper.make_graph([], "dtypes", [], [vi(t.name, t.data_type, None) for t in inits], initializer=inits)
    save(out, "all_dtypes.onnx", model(g))


def narrow_dtypes(out):
    # The float8 / 4-bit types by number (Debian's onnx predates their names): raw_data and
    # int32_data of the same values. 4-bit elements pack two per byte, first in the low
    # nibble; an int32_data entry holds one packed byte, and an odd count pads the last.
    # 2-bit elements pack four per byte, first in the low two bits.
    FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, UINT4, INT4, FLOAT4E2M1 = range(17, 24)
    FLOAT8E8M0, UINT2, INT2 = range(24, 27)
    tensors = {
        # 1.0, -448, NaN
        "e4m3fn": (FLOAT8E4M3FN, [3], [0x38, 0xFE, 0x7F]),
        # 1.0, 240 (largest), NaN (0x80)
        "e4m3fnuz": (FLOAT8E4M3FNUZ, [3], [0x40, 0x7F, 0x80]),
        # 1.0, -inf, the smallest subnormal 2^-16
        "e5m2": (FLOAT8E5M2, [3], [0x3C, 0xFC, 0x01]),
        # 1.0, 57344, NaN
        "e5m2fnuz": (FLOAT8E5M2FNUZ, [3], [0x40, 0x7F, 0x80]),
        # int4 -8, 7, 0, -1, 3 as nibbles 8, 7, 0, 15, 3
        "i4": (INT4, [5], [0x78, 0xF0, 0x03]),
        # uint4 0, 15, 8, 1, 9
        "u4": (UINT4, [5], [0xF0, 0x18, 0x09]),
        # float4 0.5, -6, 1.5 (patterns 1, 15, 3)
        "f4": (FLOAT4E2M1, [3], [0xF1, 0x03]),
        # int2 -2, 1, 0, -1, 1 as 2-bit patterns 2, 1, 0, 3, 1
        "i2": (INT2, [5], [0xC6, 0x01]),
        # uint2 0, 3, 2, 1, 3
        "u2": (UINT2, [5], [0x6C, 0x03]),
        # float8e8m0 1.0, 2^-127 (the smallest), NaN
        "e8m0": (FLOAT8E8M0, [3], [0x7F, 0x00, 0xFF]),
    }
    inits = []
    for name, (dtype, dims, data) in tensors.items():
        raw = TensorProto(name="raw_" + name, data_type=dtype, dims=dims)
        raw.raw_data = bytes(data)
        typed = TensorProto(name="t_" + name, data_type=dtype, dims=dims)
        typed.int32_data.extend(data)
        inits += [raw, typed]
    # A graph input and output of a narrow type: Cast float -> int4 -> float.
    to_i4 = helper.make_node("Cast", ["X"], ["X4"], to=INT4)
    back = helper.make_node("Cast", ["X4"], ["Y"], to=TensorProto.FLOAT)
    g = helper.make_graph([to_i4, back], "narrow", [vi("X", TensorProto.FLOAT, [4]), vi("F8", FLOAT8E4M3FN, [2])],
                          [vi("Y", TensorProto.FLOAT, [4]), vi("X4", INT4, [4])] +
                          [vi(t.name, t.data_type, None) for t in inits], initializer=inits)
    save(out, "narrow_dtypes.onnx", model(g, opset=21))
    # 5 int4 elements need 3 packed bytes, not 5.
    short = TensorProto(name="short_i4", data_type=INT4, dims=[5])
    short.raw_data = bytes([0x78, 0xF0, 0x03, 0x00, 0x00])
    g = helper.make_graph([], "short", [], [vi("short_i4", INT4, None)], initializer=[short])
    save(out, "narrow_bad_length.onnx", model(g, opset=21))
    # FLOAT6E2M3 (27) is an element type kiln does not have.
    g = helper.make_graph([], "float6", [vi("X", 27, [4])], [vi("X", 27, [4])])
    save(out, "narrow_float6.onnx", model(g, opset=25))


def external_data(out):
    data = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    os.makedirs(os.path.join(out, "weights"), exist_ok=True)
    with open(os.path.join(out, "weights", "w.bin"), "wb") as f:
        f.write(b"\xff" * 16)  # padding before the tensor, skipped by offset
        f.write(data.tobytes())

    def build(location, offset="16", length=str(data.nbytes)):
        t = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2, 2])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", offset), ("length", length)):
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, v
        mm = helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")
        g = helper.make_graph([mm], "ext", [vi("X", TensorProto.FLOAT, [2, 2])], [vi("Y", TensorProto.FLOAT, [2, 2])],
                              initializer=[t])
        return model(g)

    save(out, "external_data.onnx", build("weights/w.bin"))
    save(out, "external_escape.onnx", build("../w.bin"))
    save(out, "external_escape2.onnx", build("weights/../../w.bin"))
    save(out, "external_absolute.onnx", build("/etc/passwd"))
    save(out, "external_missing.onnx", build("weights/nope.bin"))
    save(out, "external_short.onnx", build("weights/w.bin", offset="24"))
    save(out, "external_bad_length.onnx", build("weights/w.bin", length="12"))


def if_capture(out):
    # Outer: A = X + X; B is an initializer. then: A * X. else: (A - B) then a nested If
    # whose branches read X (two scopes up) and the else-branch's own value D.
    b = numpy_helper.from_array(np.array([10.0, 20.0], dtype=np.float32), "B")
    add = helper.make_node("Add", ["X", "X"], ["A"], name="add")
    then_g = helper.make_graph([helper.make_node("Mul", ["A", "X"], ["t_out"], name="mul")], "then_b", [],
                               [vi("t_out", TensorProto.FLOAT, [2])])
    inner_then = helper.make_graph([helper.make_node("Add", ["D", "X"], ["it_out"], name="inner_add")], "inner_then",
                                   [], [vi("it_out", TensorProto.FLOAT, [2])])
    inner_else = helper.make_graph([], "inner_else", [], [vi("D", TensorProto.FLOAT, [2])])  # outer value as output
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["A", "B"], ["D"], name="sub"),
         helper.make_node("If", ["cond"], ["e_out"], name="inner_if", then_branch=inner_then, else_branch=inner_else)],
        "else_b", [], [vi("e_out", TensorProto.FLOAT, [2])])
    if_node = helper.make_node("If", ["cond"], ["Y"], name="if1", then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([add, if_node], "if_capture",
                          [vi("cond", TensorProto.BOOL, []), vi("X", TensorProto.FLOAT, [2])],
                          [vi("Y", TensorProto.FLOAT, [2])], initializer=[b])
    save(out, "if_capture.onnx", model(g, opset=16))


def loop(out):
    # for i in range(M): v = v + W (W captured); scan output i.
    w = numpy_helper.from_array(np.array([0.5], dtype=np.float32), "W")
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "W"], ["v_out"], name="acc"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Identity", ["iter"], ["scan_i"], name="record")],
        "body",
        [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", TensorProto.FLOAT, [1])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [1]),
         vi("scan_i", TensorProto.INT64, [])])
    node = helper.make_node("Loop", ["M", "", "v0"], ["v_final", "iters"], name="loop", body=body)
    g = helper.make_graph([node], "loop",
                          [vi("M", TensorProto.INT64, []), vi("v0", TensorProto.FLOAT, [1])],
                          [vi("v_final", TensorProto.FLOAT, [1]), vi("iters", TensorProto.INT64, [None])],
                          initializer=[w])
    save(out, "loop.onnx", model(g, opset=21))


def scan(out):
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="sum"),
         helper.make_node("Mul", ["x_t", "k"], ["y_t"], name="scale")],
        "scan_body", [vi("s_in", TensorProto.FLOAT, [2]), vi("x_t", TensorProto.FLOAT, [2])],
        [vi("s_out", TensorProto.FLOAT, [2]), vi("y_t", TensorProto.FLOAT, [2])])
    k = numpy_helper.from_array(np.array([2.0, 3.0], dtype=np.float32), "k")
    node = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan", body=body, num_scan_inputs=1)
    g = helper.make_graph([node], "scan", [vi("s0", TensorProto.FLOAT, [2]), vi("xs", TensorProto.FLOAT, [5, 2])],
                          [vi("s_final", TensorProto.FLOAT, [2]), vi("ys", TensorProto.FLOAT, [5, 2])],
                          initializer=[k])
    save(out, "scan.onnx", model(g, opset=11))


def symbolic_dims(out):
    x = vi("X", TensorProto.FLOAT, ["batch", 3, None, "seq"])
    y = vi("Y", TensorProto.FLOAT, ["batch", 3, None, "seq"])
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "sym", [x], [y])
    save(out, "symbolic_dims.onnx", model(g))


def empty_names(out):
    nodes = [
        helper.make_node("Relu", ["X"], ["r"]),                # unnamed -> "r"
        helper.make_node("Neg", ["r"], ["n1"], name="dup"),     # "dup"
        helper.make_node("Abs", ["n1"], ["n2"], name="dup"),    # duplicate -> "dup_1"
        helper.make_node("Exp", ["n2"], ["X_out"]),              # unnamed -> "X_out"
        helper.make_node("Log", ["X_out"], ["r_1"], name=""),   # unnamed -> "r_1"
    ]
    g = helper.make_graph(nodes, "names", [vi("X", TensorProto.FLOAT, [2])], [vi("r_1", TensorProto.FLOAT, [2])])
    save(out, "empty_names.onnx", model(g))


def optional_inputs(out):
    mx = numpy_helper.from_array(np.array(6.0, dtype=np.float32), "max")
    clip = helper.make_node("Clip", ["X", "", "max"], ["c"], name="clip")
    # Dropout with the optional mask output omitted; trailing "" inputs
    drop = helper.make_node("Dropout", ["c", "", ""], ["Y", ""], name="drop")
    g = helper.make_graph([clip, drop], "opt", [vi("X", TensorProto.FLOAT, [4])], [vi("Y", TensorProto.FLOAT, [4])],
                          initializer=[mx])
    save(out, "optional_inputs.onnx", model(g, opset=13))


def constants(out):
    nodes = [
        helper.make_node("Constant", [], ["cf"], name="cf", value_floats=[1.0, 2.5, -3.0]),
        helper.make_node("Constant", [], ["ci"], name="ci", value_int=7),
        helper.make_node("Constant", [], ["cs"], name="cs", value_strings=["ab", "c"]),
        helper.make_node("Constant", [], ["ct"], name="ct",
                         value=numpy_helper.from_array(np.array([[1, 2]], dtype=np.int32), "ct_value")),
        helper.make_node("Constant", [], ["cfs"], name="cfs", value_float=0.25),
    ]
    g = helper.make_graph(nodes, "consts", [], [vi(n, TensorProto.UNDEFINED, None) for n in
                                                  ("cf", "ci", "cs", "ct", "cfs")])
    save(out, "constants.onnx", model(g, opset=13))


def attrs(out):
    t = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.int64), "tv")
    t2 = numpy_helper.from_array(np.array([4.0], dtype=np.float32), "tv2")
    node = helper.make_node("CustomThing", ["X"], ["Y"], name="custom", domain="com.example",
                            i=5, f=1.5, s="str", t=t, ints=[1, -2], floats=[0.5], strings=["x", "yz"],
                            tensors=[t, t2], empty_ints=[])
    tp = helper.make_attribute("tp", helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    node.attribute.append(tp)
    fused = helper.make_node("FusedConv", ["X"], ["Z"], name="fused", domain="com.microsoft", activation="Relu")
    g = helper.make_graph([node, fused], "attrs", [vi("X", TensorProto.FLOAT, [2])],
                          [vi("Y", TensorProto.FLOAT, [2]), vi("Z", TensorProto.FLOAT, [2])])
    save(out, "attrs.onnx", model(g, opset=14, extra_opsets=[("com.microsoft", 1), ("com.example", 3)]))


def unsorted(out):
    nodes = [
        helper.make_node("Exp", ["b"], ["Y"], name="last"),
        helper.make_node("Neg", ["a"], ["b"], name="middle"),
        helper.make_node("Relu", ["X"], ["a"], name="first"),
    ]
    g = helper.make_graph(nodes, "unsorted", [vi("X", TensorProto.FLOAT, [2])], [vi("Y", TensorProto.FLOAT, [2])])
    save(out, "unsorted.onnx", model(g))


def function_model(out):
    # Model-local function: Scaled(x, s) = Mul(x, s) + Constant(alpha), alpha from the caller.
    fnodes = [
        helper.make_node("Mul", ["x", "s"], ["m"]),
        helper.make_node("Constant", [], ["a"]),
        helper.make_node("Add", ["m", "a"], ["y"]),
    ]
    ref = helper.make_attribute("value_float", 0.0)
    ref.ClearField("f")
    ref.ref_attr_name = "alpha"
    fnodes[1].attribute.append(ref)
    f = helper.make_function("kiln.test", "Scaled", ["x", "s"], ["y"], fnodes, [helper.make_opsetid("", 13)],
                             attributes=["alpha"])
    call = helper.make_node("Scaled", ["X", "S"], ["Y"], name="call", domain="kiln.test", alpha=0.5)
    g = helper.make_graph([call], "fn", [vi("X", TensorProto.FLOAT, [2]), vi("S", TensorProto.FLOAT, [2])],
                          [vi("Y", TensorProto.FLOAT, [2])])
    save(out, "function.onnx", model(g, extra_opsets=[("kiln.test", 1)], functions=[f]))


def function_bombs(out):
    # F0 calls F1 twice, F1 calls F2 twice, ... : 2^30 nodes if inlined blindly.
    fs = []
    depth = 30
    for i in range(depth):
        nodes = [helper.make_node("F%d" % (i + 1), ["x"], ["h"], domain="bomb"),
                 helper.make_node("F%d" % (i + 1), ["h"], ["y"], domain="bomb")]
        fs.append(helper.make_function("bomb", "F%d" % i, ["x"], ["y"], nodes, [helper.make_opsetid("", 13),
                                       helper.make_opsetid("bomb", 1)]))
    fs.append(helper.make_function("bomb", "F%d" % depth, ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
                                   [helper.make_opsetid("", 13)]))
    g = helper.make_graph([helper.make_node("F0", ["X"], ["Y"], name="boom", domain="bomb")], "bomb",
                          [vi("X", TensorProto.FLOAT, [2])], [vi("Y", TensorProto.FLOAT, [2])])
    save(out, "function_bomb.onnx", model(g, extra_opsets=[("bomb", 1)], functions=fs))
    rec = helper.make_function("rec", "R", ["x"], ["y"], [helper.make_node("R", ["x"], ["y"], domain="rec")],
                               [helper.make_opsetid("rec", 1)])
    g = helper.make_graph([helper.make_node("R", ["X"], ["Y"], name="again", domain="rec")], "rec",
                          [vi("X", TensorProto.FLOAT, [2])], [vi("Y", TensorProto.FLOAT, [2])])
    save(out, "function_recursive.onnx", model(g, extra_opsets=[("rec", 1)], functions=[rec]))


def broken(out):
    relu = lambda i, o, **kw: helper.make_node("Relu", [i], [o], **kw)
    x, y = vi("X", TensorProto.FLOAT, [2]), vi("Y", TensorProto.FLOAT, [2])
    # a cycle: a -> b -> a
    g = helper.make_graph([relu("b", "a", name="ra"), relu("a", "b", name="rb"), relu("X", "Y", name="ry")], "cyc",
                          [x], [y])
    save(out, "cycle.onnx", model(g))
    g = helper.make_graph([relu("nope", "Y", name="lost")], "unknown", [x], [y])
    save(out, "unknown_input.onnx", model(g))
    g = helper.make_graph([relu("X", "Y", name="one"), relu("X", "Y", name="two")], "ssa", [x], [y])
    save(out, "defined_twice.onnx", model(g))
    bad = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2])
    bad.raw_data = b"\x00" * 7
    g = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], "raw", [x], [y],
                          initializer=[bad])
    save(out, "bad_raw_size.onnx", model(g))
    nodata = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2])
    g = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], "nodata", [x], [y],
                          initializer=[nodata])
    save(out, "missing_init_data.onnx", model(g))
    g = helper.make_graph([relu("X", "Y", name="r")], "new", [x], [y])
    save(out, "opset29.onnx", model(g, opset=29))
    g = helper.make_graph([relu("X", "Y", name="r")], "old", [x], [y])
    save(out, "opset6.onnx", model(g, opset=6))
    sparse = helper.make_node("Constant", [], ["Y"], name="sp")
    st = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], dtype=np.float32), "v"),
                                   numpy_helper.from_array(np.array([0], dtype=np.int64), "i"), [2])
    sparse.attribute.append(helper.make_attribute("sparse_value", st))
    g = helper.make_graph([sparse], "sparse", [], [y])
    save(out, "sparse_attr.onnx", model(g))
    # If branch reading a value no scope defines
    then_g = helper.make_graph([relu("ghost", "t", name="haunted")], "then", [], [vi("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([], "else", [], [vi("X", TensorProto.FLOAT, [2])])
    g = helper.make_graph([helper.make_node("If", ["c"], ["Y"], name="if1", then_branch=then_g, else_branch=else_g)],
                          "ifbad", [vi("c", TensorProto.BOOL, []), x], [y])
    save(out, "if_unknown.onnx", model(g))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_onnx_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in (conv_relu, init_as_input, all_dtypes, narrow_dtypes, external_data, if_capture, loop, scan, symbolic_dims,
                 empty_names, optional_inputs, constants, attrs, unsorted, function_model, function_bombs, broken):
        make(out)


if __name__ == "__main__":
    main()
