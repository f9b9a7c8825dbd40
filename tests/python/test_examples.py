"""The scripts of examples/python, run as a user runs them (a subprocess of the test
environment's python), on inputs made here: classify.py on a small seeded ONNX
classifier and images written as PPM and as PNG (every PNG filter type, RGB, gray and
palette), checked against ONNX Runtime on the same preprocessed pixels; jax_to_kiln.py
with JAX present (every program must match) and absent (it says so and exits 0)."""

import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ROOT, load_module

EXAMPLES = os.path.join(ROOT, "examples", "python")
classify = load_module("kiln_example_classify", "examples/python/classify.py")


def run_example(script, *args, env=None):
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, script)] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                          env=env)


def classifier(path, layout="nchw"):
    """A seeded convnet: image [1,3,20,24] (or NHWC) -> 12 class logits."""
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((6, 3, 3, 3)) * 0.5).astype(np.float32)
    fc = (rng.standard_normal((12, 6)) * 0.5).astype(np.float32)
    fcb = rng.standard_normal(12).astype(np.float32)
    nodes = []
    x = "image"
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]))
        x = "nchw"
    nodes += [
        helper.make_node("Conv", [x, "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1),
    ]
    shape = [1, 3, 20, 24] if layout == "nchw" else [1, 20, 24, 3]
    g = helper.make_graph(nodes, "classifier", [helper.make_tensor_value_info("image", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 12])],
                          initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(fc, "fc"),
                                       numpy_helper.from_array(fcb, "fcb")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return m.SerializeToString()


def write_ppm(path, rgb, comment=True):
    h, w = rgb.shape[:2]
    head = b"P6\n" + (b"# made by test_examples\n" if comment else b"") + b"%d %d\n255\n" % (w, h)
    path.write_bytes(head + rgb.astype(np.uint8).tobytes())


def png_bytes(img, color, palette=None):
    """PNG encoding of img (HxWxC uint8), each row with the next filter type 0..4."""
    h, w = img.shape[:2]
    ch = img.shape[2]
    raw = img.reshape(h, w * ch).astype(np.int32)
    out, prev = bytearray(), np.zeros(w * ch, np.int32)
    zeros = np.zeros(ch, np.int32)
    for y in range(h):
        f, cur = y % 5, raw[y]
        left = np.concatenate([zeros, cur[:-ch]])
        upleft = np.concatenate([zeros, prev[:-ch]])
        if f == 0:
            line = cur
        elif f == 1:
            line = cur - left
        elif f == 2:
            line = cur - prev
        elif f == 3:
            line = cur - ((left + prev) >> 1)
        else:
            p = left + prev - upleft
            pa, pb, pc = np.abs(p - left), np.abs(p - prev), np.abs(p - upleft)
            line = cur - np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
        out += bytes([f]) + (line & 0xFF).astype(np.uint8).tobytes()
        prev = cur

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
    if palette is not None:
        data += chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    return data + chunk(b"IDAT", zlib.compress(bytes(out))) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def image():
    return np.random.default_rng(5).integers(0, 256, size=(30, 41, 3)).astype(np.uint8)


def test_image_readers(tmp_path, image):
    write_ppm(tmp_path / "a.ppm", image)
    np.testing.assert_array_equal(classify.read_image(str(tmp_path / "a.ppm")), image)
    (tmp_path / "rgb.png").write_bytes(png_bytes(image, 2))
    np.testing.assert_array_equal(classify.read_image(str(tmp_path / "rgb.png")), image)
    rgba = np.concatenate([image, np.full(image.shape[:2] + (1,), 200, np.uint8)], axis=2)
    (tmp_path / "rgba.png").write_bytes(png_bytes(rgba, 6))
    np.testing.assert_array_equal(classify.read_image(str(tmp_path / "rgba.png")), image)
    gray = image[..., :1]
    (tmp_path / "gray.png").write_bytes(png_bytes(gray, 0))
    np.testing.assert_array_equal(classify.read_image(str(tmp_path / "gray.png")), np.repeat(gray, 3, axis=2))
    palette = np.random.default_rng(1).integers(0, 256, size=(16, 3))
    index = (image[..., :1] % 16).astype(np.uint8)
    (tmp_path / "pal.png").write_bytes(png_bytes(index, 3, palette))
    np.testing.assert_array_equal(classify.read_image(str(tmp_path / "pal.png")), palette[index[..., 0]])
    (tmp_path / "bad.ppm").write_bytes(b"P3\n1 1\n255\n0 0 0\n")
    with pytest.raises(ValueError, match="P6"):
        classify.read_image(str(tmp_path / "bad.ppm"))


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_classify_example(tmp_path, image, layout):
    data = classifier(tmp_path / "classifier.onnx", layout)
    write_ppm(tmp_path / "img.ppm", image)
    (tmp_path / "img.png").write_bytes(png_bytes(image, 2))
    outputs = []
    for img in ("img.ppm", "img.png"):
        r = run_example("classify.py", tmp_path / "classifier.onnx", tmp_path / img, "-k", "4")
        assert r.returncode == 0, r.stderr
        outputs.append(r.stdout)
    assert outputs[0] == outputs[1]  # the same pixels whatever the file format
    lines = [ln.split() for ln in outputs[0].splitlines()]
    assert len(lines) == 4 and all(len(ln) == 2 for ln in lines)
    got = [(int(i), float(p)) for i, p in lines]
    # ONNX Runtime on the same preprocessed input.
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = classify.preprocess(image, classify.kiln.Model(data).inputs[0])
    want = classify.top_k(classify.probabilities(sess.run(None, {"image": x})[0]), 4)
    assert [i for i, _ in got] == [i for i, _ in want]
    np.testing.assert_allclose([p for _, p in got], [p for _, p in want], atol=2e-6)
    assert all(a[1] >= b[1] for a, b in zip(got, got[1:]))


def test_classify_example_errors(tmp_path):
    r = run_example("classify.py", tmp_path / "missing.onnx", tmp_path / "missing.ppm")
    assert r.returncode != 0 and "missing.onnx" in r.stderr and "NotFoundError" in r.stderr


def test_jax_to_kiln_example():
    r = run_example("jax_to_kiln.py")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and all(ln.endswith(" ok") for ln in lines), r.stdout


def test_jax_to_kiln_example_without_jax(tmp_path):
    fake = tmp_path / "nojax" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no jax here')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "nojax"))
    r = run_example("jax_to_kiln.py", env=env)
    assert r.returncode == 0 and "not installed" in r.stdout, r.stdout + r.stderr
