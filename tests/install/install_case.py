"""The model, image and reference for tests/install/check_install.sh.

  install_case.py make DIR
      DIR/model.onnx  a small convnet (random weights, fixed seed): input "input"
                      [1,3,32,32] float32 -> output "logits" [1,10]
      DIR/image.ppm   a 45x37 binary PPM (random pixels, fixed seed): not the model's
                      size, so examples/c/classify resizes it
      DIR/input.npy   the tensor classify builds from image.ppm: nearest-neighbour resize
                      to 32x32, (x / 255 - mean) / std with ImageNet's values, NCHW;
                      computed here in float32 the way classify.c does in C
  install_case.py top LOGITS.npy K
      prints classify's output for those logits: the top K "INDEX PROBABILITY" lines
      (softmax in float64, best first, ties by lower index)
  install_case.py compare EXPECTED GOT LABEL
      fails unless GOT's lines name the same classes in the same order as EXPECTED's and
      every probability is within 2e-6 (both print 6 decimals)
"""
import sys

import numpy as np


def make(d):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(20240611)

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init('w1', (8, 3, 3, 3), 0.4), init('b1', (8,), 0.1),
             init('w2', (16, 8, 3, 3), 0.25), init('b2', (16,), 0.1),
             init('w3', (10, 16), 0.25), init('b3', (10,), 0.2)]
    nodes = [
        helper.make_node('Conv', ['input', 'w1', 'b1'], ['c1'], pads=[1, 1, 1, 1]),
        helper.make_node('Relu', ['c1'], ['r1']),
        helper.make_node('MaxPool', ['r1'], ['p1'], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node('Conv', ['p1', 'w2', 'b2'], ['c2'], pads=[1, 1, 1, 1]),
        helper.make_node('Relu', ['c2'], ['r2']),
        helper.make_node('GlobalAveragePool', ['r2'], ['g']),
        helper.make_node('Flatten', ['g'], ['f']),
        helper.make_node('Gemm', ['f', 'w3', 'b3'], ['logits'], transB=1),
    ]
    graph = helper.make_graph(
        nodes, 'install_convnet',
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='kiln-test')
    model.ir_version = 8
    with open(d + '/model.onnx', 'wb') as f:
        f.write(model.SerializeToString())

    ih, iw = 37, 45
    rgb = rng.integers(0, 256, size=(ih, iw, 3), dtype=np.uint8)
    with open(d + '/image.ppm', 'wb') as f:
        f.write(b'P6\n# kiln install test\n%d %d\n255\n' % (iw, ih))
        f.write(rgb.tobytes())

    oh = ow = 32
    sy = (2 * np.arange(oh) + 1) * ih // (2 * oh)
    sx = (2 * np.arange(ow) + 1) * iw // (2 * ow)
    resized = rgb[sy][:, sx].astype(np.float32)  # [oh, ow, 3]
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    x = (resized / np.float32(255.0) - mean) / std
    np.save(d + '/input.npy', np.ascontiguousarray(x.transpose(2, 0, 1)[None]).astype(np.float32))


def top(path, k):
    s = np.load(path).astype(np.float64).reshape(-1)
    e = np.exp(s - s.max())
    p = e / e.sum()
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))[:k]
    for i in order:
        print('%d %.6f' % (i, p[i]))


def compare(expected_path, got_path, label):
    def rows(path):
        with open(path) as f:
            return [(int(a), float(b)) for a, b in (line.split() for line in f if line.strip())]

    want, got = rows(expected_path), rows(got_path)
    ok = len(want) == len(got) and len(want) > 0 and all(
        wi == gi and abs(wp - gp) <= 2e-6 for (wi, wp), (gi, gp) in zip(want, got))
    if not ok:
        sys.exit('%s: top classes differ from the kiln CLI\n  expected: %s\n  got:      %s' % (label, want, got))
    print('%s: top-%d matches the kiln CLI: %s' % (label, len(got), ' '.join('%d:%.6f' % r for r in got)))


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else ''
    if cmd == 'make' and len(sys.argv) == 3:
        make(sys.argv[2])
    elif cmd == 'top' and len(sys.argv) == 4:
        top(sys.argv[2], int(sys.argv[3]))
    elif cmd == 'compare' and len(sys.argv) == 5:
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
