"""End-to-end ONNX model tests: `kiln run MODEL.onnx` against ONNX Runtime.

Each case is a small ONNX model built here with Debian's python3-onnx (onnx.helper):
MLPs and convnets, dynamic shapes computed in the graph (Shape/Gather/Concat/Reshape),
integer index ops, and the control-flow ops the host executor runs itself (If, Loop and
Scan with captured outer values, nested bodies). Inputs are seeded random numpy arrays.
kiln runs every model through the importer and the host executor
(`kiln run model.onnx -i NAME=x.npy -o OUT`); ONNX Runtime (npm onnxruntime-node,
CPU provider, graph optimizations off; installed with --ignore-scripts into
build-ref-npm/ when missing) runs the same model through tests/ops/ort_run.js. Outputs
must match: floats within max|a-b| <= 1e-4 + 1e-3*|b|, integers and bools exactly.

Usage: /usr/bin/python3 tests/models/test_onnx_models.py --kiln build/kiln [-k SUBSTR]
[--keep]. Prints "N passed, N failed" and exits 1 on any failure (2 when no reference
runtime can be set up).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover
    print('test_onnx_models: python3-onnx is missing (apt-get install python3-onnx)')
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPM_DIR = os.path.join(ROOT, 'build-ref-npm')
ORT_RUN = os.path.join(ROOT, 'tests', 'ops', 'ort_run.js')
OPSET = 17

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(nodes, inputs, outputs, inits=(), opset=OPSET, name='g'):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='kiln-test')
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


RNG = np.random.default_rng(1234)


def randf(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# ----------------------------------------------------------------------------- cases

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def mlp():
    w1, b1, w2, b2 = randf(16, 32, scale=0.3), randf(32), randf(32, 10, scale=0.3), randf(10)
    nodes = [
        helper.make_node('MatMul', ['x', 'w1'], ['h0']),
        helper.make_node('Add', ['h0', 'b1'], ['h1']),
        helper.make_node('Relu', ['h1'], ['h2']),
        helper.make_node('Gemm', ['h2', 'w2', 'b2'], ['logits']),
        helper.make_node('Softmax', ['logits'], ['probs'], axis=-1),
    ]
    m = model(nodes, [vi('x', F, [4, 16])], [vi('logits', F, [4, 10]), vi('probs', F, [4, 10])],
              [init('w1', w1), init('b1', b1), init('w2', w2), init('b2', b2)])
    return m, {'x': randf(4, 16)}


@case
def convnet():
    c1, bn_s, bn_b, bn_m, bn_v = randf(8, 3, 3, 3, scale=0.3), randf(8), randf(8), randf(8), np.abs(randf(8)) + 0.5
    c2 = randf(16, 8, 3, 3, scale=0.2)
    fc, fcb = randf(10, 16, scale=0.3), randf(10)
    nodes = [
        helper.make_node('Conv', ['x', 'c1'], ['y1'], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node('BatchNormalization', ['y1', 's', 'b', 'm', 'v'], ['y2'], epsilon=1e-5),
        helper.make_node('Relu', ['y2'], ['y3']),
        helper.make_node('MaxPool', ['y3'], ['y4'], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node('Conv', ['y4', 'c2'], ['y5'], pads=[1, 1, 1, 1], strides=[2, 2], group=1),
        helper.make_node('Clip', ['y5', 'lo', 'hi'], ['y6']),
        helper.make_node('GlobalAveragePool', ['y6'], ['y7']),
        helper.make_node('Flatten', ['y7'], ['y8'], axis=1),
        helper.make_node('Gemm', ['y8', 'fc', 'fcb'], ['out'], transB=1),
    ]
    m = model(nodes, [vi('x', F, [2, 3, 16, 16])], [vi('out', F, [2, 10])],
              [init('c1', c1), init('s', bn_s), init('b', bn_b), init('m', bn_m), init('v', bn_v), init('c2', c2),
               init('lo', np.float32(0)), init('hi', np.float32(6)), init('fc', fc), init('fcb', fcb)])
    return m, {'x': randf(2, 3, 16, 16)}


@case
def depthwise_and_pool():
    dw = randf(6, 1, 3, 3, scale=0.5)
    nodes = [
        helper.make_node('Conv', ['x', 'dw'], ['y1'], pads=[1, 1, 1, 1], group=6),
        helper.make_node('Sigmoid', ['y1'], ['y2']),
        helper.make_node('Mul', ['y1', 'y2'], ['y3']),  # swish
        helper.make_node('AveragePool', ['y3'], ['y4'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         count_include_pad=0),
        helper.make_node('Transpose', ['y4'], ['out'], perm=[0, 2, 3, 1]),
    ]
    m = model(nodes, [vi('x', F, [1, 6, 9, 9])], [vi('out', F, [1, 5, 5, 6])], [init('dw', dw)])
    return m, {'x': randf(1, 6, 9, 9)}


@case
def dynamic_reshape():
    # The target shape is computed in the graph from the input's own shape.
    nodes = [
        helper.make_node('Shape', ['x'], ['s']),
        helper.make_node('Gather', ['s', 'i0'], ['batch'], axis=0),
        helper.make_node('Unsqueeze', ['batch', 'ax0'], ['batch1']),
        helper.make_node('Concat', ['batch1', 'minus1'], ['newshape'], axis=0),
        helper.make_node('Reshape', ['x', 'newshape'], ['flat']),
        helper.make_node('ReduceSum', ['flat', 'ax1'], ['sum'], keepdims=0),
        helper.make_node('Slice', ['x', 'starts', 'ends', 'axes'], ['sl']),
        helper.make_node('Split', ['sl', 'split'], ['sa', 'sb'], axis=1),
    ]
    m = model(nodes, [vi('x', F, ['N', 4, 5])],
              [vi('flat', F, ['N', 20]), vi('sum', F, ['N']), vi('sa', F, ['N', 1, 4]), vi('sb', F, ['N', 2, 4])],
              [init('i0', np.int64(0)), init('ax0', np.array([0], np.int64)), init('minus1', np.array([-1], np.int64)),
               init('ax1', np.array([1], np.int64)), init('starts', np.array([1, 0], np.int64)),
               init('ends', np.array([4, 4], np.int64)), init('axes', np.array([1, 2], np.int64)),
               init('split', np.array([1, 2], np.int64))])
    return m, {'x': randf(3, 4, 5)}


@case
def index_ops():
    nodes = [
        helper.make_node('ArgMax', ['x'], ['am'], axis=1, keepdims=0),
        helper.make_node('TopK', ['x', 'k'], ['tv', 'ti'], axis=-1),
        helper.make_node('Cast', ['ti'], ['tif'], to=F),
        helper.make_node('Greater', ['x', 'zero'], ['pos']),
        helper.make_node('Where', ['pos', 'x', 'zero'], ['relu']),
        helper.make_node('Equal', ['am', 'two'], ['is2']),
    ]
    m = model(nodes, [vi('x', F, [3, 7])],
              [vi('am', I64, [3]), vi('tv', F, [3, 3]), vi('ti', I64, [3, 3]), vi('tif', F, [3, 3]),
               vi('relu', F, [3, 7]), vi('is2', B, [3])],
              [init('k', np.array([3], np.int64)), init('zero', np.float32(0)), init('two', np.int64(2))])
    return m, {'x': randf(3, 7)}


@case
def if_with_captures():
    then_g = helper.make_graph([helper.make_node('Mul', ['x', 'w'], ['t'])], 'then', [], [vi('t', F, [4])])
    else_g = helper.make_graph([helper.make_node('Sub', ['x', 'w'], ['e0']), helper.make_node('Neg', ['e0'], ['e'])],
                               'else', [], [vi('e', F, [4])])
    nodes = [
        helper.make_node('ReduceSum', ['x'], ['s'], keepdims=0),
        helper.make_node('Greater', ['s', 'zero'], ['c']),
        helper.make_node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g),
        helper.make_node('Add', ['y', 'x'], ['out']),
    ]
    m = model(nodes, [vi('x', F, [4])], [vi('out', F, [4])], [init('zero', np.float32(0)), init('w', randf(4))])
    return m, {'x': randf(4)}


@case
def loop_with_scan_outputs():
    # for i in range(M) while cond: v = v * a + i; scan v
    body = helper.make_graph(
        [
            helper.make_node('Cast', ['i'], ['fi'], to=F),
            helper.make_node('Mul', ['v_in', 'a'], ['va']),
            helper.make_node('Add', ['va', 'fi'], ['v_out']),
            helper.make_node('ReduceMax', ['v_out'], ['mx'], keepdims=0),
            helper.make_node('Less', ['mx', 'limit'], ['c_out']),
            helper.make_node('Identity', ['v_out'], ['scan']),
        ],
        'body', [vi('i', I64, []), vi('c_in', B, []), vi('v_in', F, [3])],
        [vi('c_out', B, []), vi('v_out', F, [3]), vi('scan', F, [3])])
    nodes = [helper.make_node('Loop', ['M', 'cond', 'v0'], ['v', 'scans'], body=body)]
    m = model(nodes, [vi('M', I64, []), vi('cond', B, []), vi('v0', F, [3])],
              [vi('v', F, [3]), vi('scans', F, [None, 3])],
              [init('a', np.array([1.5, 0.5, -1.0], np.float32)), init('limit', np.float32(50))])
    return m, {'M': np.int64(10), 'cond': np.bool_(True), 'v0': np.array([1, 2, 3], np.float32)}


@case
def loop_without_trip_count():
    # while (cond): counter += 1; cond = counter < n  (M absent: "")
    body = helper.make_graph(
        [
            helper.make_node('Add', ['cnt_in', 'one'], ['cnt_out']),
            helper.make_node('Less', ['cnt_out', 'n'], ['c_out']),
        ],
        'body', [vi('i', I64, []), vi('c_in', B, []), vi('cnt_in', I64, [])],
        [vi('c_out', B, []), vi('cnt_out', I64, [])])
    nodes = [helper.make_node('Loop', ['', 'cond', 'c0'], ['cnt'], body=body)]
    m = model(nodes, [vi('cond', B, []), vi('c0', I64, []), vi('n', I64, [])], [vi('cnt', I64, [])],
              [init('one', np.int64(1))])
    return m, {'cond': np.bool_(True), 'c0': np.int64(0), 'n': np.int64(7)}


@case
def nested_loop_and_if():
    # Outer loop over M; an If inside picks how to update, capturing outer-outer values.
    then_g = helper.make_graph([helper.make_node('Add', ['acc_in', 'x'], ['t'])], 'then', [], [vi('t', F, [2])])
    else_g = helper.make_graph([helper.make_node('Mul', ['acc_in', 'x'], ['e'])], 'else', [], [vi('e', F, [2])])
    body = helper.make_graph(
        [
            helper.make_node('Mod', ['i', 'two'], ['r']),
            helper.make_node('Equal', ['r', 'zero'], ['even']),
            helper.make_node('If', ['even'], ['acc_out'], then_branch=then_g, else_branch=else_g),
            helper.make_node('Identity', ['c_in'], ['c_out']),
        ],
        'body', [vi('i', I64, []), vi('c_in', B, []), vi('acc_in', F, [2])],
        [vi('c_out', B, []), vi('acc_out', F, [2])])
    nodes = [helper.make_node('Loop', ['M', '', 'acc0'], ['acc'], body=body)]
    m = model(nodes, [vi('M', I64, []), vi('acc0', F, [2]), vi('x', F, [2])], [vi('acc', F, [2])],
              [init('two', np.int64(2)), init('zero', np.int64(0))])
    return m, {'M': np.int64(5), 'acc0': np.array([1, -1], np.float32), 'x': np.array([0.5, 2], np.float32)}


@case
def scan_cumsum():
    body = helper.make_graph(
        [helper.make_node('Add', ['s_in', 'x_t'], ['s_out']), helper.make_node('Mul', ['s_out', 'w'], ['y_t'])],
        'body', [vi('s_in', F, [2]), vi('x_t', F, [2])], [vi('s_out', F, [2]), vi('y_t', F, [2])])
    nodes = [helper.make_node('Scan', ['s0', 'xs'], ['s', 'ys'], body=body, num_scan_inputs=1,
                              scan_input_directions=[1], scan_output_axes=[1])]
    m = model(nodes, [vi('s0', F, [2]), vi('xs', F, [5, 2]), vi('w', F, [2])], [vi('s', F, [2]), vi('ys', F, [2, 5])])
    return m, {'s0': randf(2), 'xs': randf(5, 2), 'w': randf(2)}


@case
def shared_weights_cache():
    # Many identical nodes: the executor compiles each signature once.
    w = randf(8, 8, scale=0.3)
    nodes, prev = [], 'x'
    for i in range(6):
        nodes.append(helper.make_node('MatMul', [prev, 'w'], ['m%d' % i]))
        nodes.append(helper.make_node('Tanh', ['m%d' % i], ['t%d' % i]))
        prev = 't%d' % i
    m = model(nodes, [vi('x', F, [2, 8])], [vi(prev, F, [2, 8])], [init('w', w)])
    return m, {'x': randf(2, 8)}


@case
def resize_and_pad():
    nodes = [
        helper.make_node('Pad', ['x', 'pads'], ['p'], mode='constant'),
        helper.make_node('Resize', ['p', '', 'scales'], ['r'], mode='nearest'),
        helper.make_node('LeakyRelu', ['r'], ['out'], alpha=0.2),
    ]
    m = model(nodes, [vi('x', F, [1, 2, 3, 3])], [vi('out', F, [1, 2, 10, 10])],
              [init('pads', np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
               init('scales', np.array([1, 1, 2, 2], np.float32))])
    return m, {'x': randf(1, 2, 3, 3)}


# ------------------------------------------------------------------- CLI behaviour

def cli_checks(kiln, tmp):
    """`kiln run MODEL` contract: output file names, missing/unknown inputs, --json,
    --jit, unknown ops. Returns a list of failure messages."""
    d = os.path.join(tmp, 'cli')
    os.makedirs(d)
    fails = []
    nodes = [helper.make_node('Neg', ['in:put/x'], ['out/y:0']), helper.make_node('Abs', ['in:put/x'], ['plain'])]
    path = os.path.join(d, 'names.onnx')
    onnx.save(model(nodes, [vi('in:put/x', F, [2, 'n'])], [vi('out/y:0', F, [2, 'n']), vi('plain', F, [2, 'n'])]), path)
    x = os.path.join(d, 'x.npy')
    np.save(x, np.array([[1, -2, 3], [4, 5, -6]], np.float32))

    def run(*a):
        return subprocess.run([kiln, 'run'] + list(a), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)

    def expect(r, rc, *needles):
        text = r.stdout.decode(errors='replace') + r.stderr.decode(errors='replace')
        if r.returncode != rc:
            fails.append('expected exit %d, got %d: %s' % (rc, r.returncode, text.strip()))
            return text
        for n in needles:
            if n not in text:
                fails.append('output lacks %r: %s' % (n, text.strip()))
        return text

    out = os.path.join(d, 'o1')
    expect(run(path, '-i', 'in:put/x=' + x, '-o', out), 0, 'out_y_0.npy', 'plain.npy')
    if os.path.exists(os.path.join(out, 'out_y_0.npy')):
        if not np.array_equal(np.load(os.path.join(out, 'out_y_0.npy')), -np.load(x)):
            fails.append('out_y_0.npy has the wrong values')
    else:
        fails.append('no out_y_0.npy written')
    expect(run(path, '-o', out), 1, 'missing input', 'in:put/x (float32[2,?])')
    expect(run(path, '-i', 'nope=' + x, '-o', out), 1, "unknown input 'nope'", '-i in:put/x (float32[2,?])')
    bad = os.path.join(d, 'bad.npy')
    np.save(bad, np.zeros((3, 3), np.float32))
    expect(run(path, '-i', 'in:put/x=' + bad, '-o', out), 1, 'float32[2,?]', 'bad.npy', 'dimensions differ')
    np.save(bad, np.zeros((2, 3), np.int32))
    expect(run(path, '-i', 'in:put/x=' + bad, '-o', out), 1, 'element types differ')
    text = expect(run(path, '-i', 'in:put/x=' + x, '-o', out, '--json', '--iters', '3'), 0)
    try:
        j = json.loads(text.strip().splitlines()[-1])
        devices = subprocess.run([kiln, 'devices'], stdout=subprocess.PIPE).stdout.decode()
        default = re.search(r'^(\S+)\s.*\(default\)$', devices, re.M)
        if (j.get('nodes') != 3 or j.get('iters') != 3 or 'median_ms' not in j or not default
                or j.get('device') != default.group(1)):
            fails.append('--json: unexpected %r' % j)
    except (ValueError, IndexError):
        fails.append('--json printed no JSON: %r' % text)
    expect(run(path, '-i', 'in:put/x=' + x, '-o', out, '--jit', 'off'), 0)
    expect(run(path, '-i', 'in:put/x=' + x, '-o', out, '--jit=auto'), 0)
    expect(run(path, '-i', 'in:put/x=' + x, '-o', out, '--jit=sometimes'), 2, '--jit')
    unk = os.path.join(d, 'unknown.onnx')
    m = helper.make_model(
        helper.make_graph([helper.make_node('Frobnicate', ['a'], ['b'], domain='com.example')], 'g',
                          [vi('a', F, [2])], [vi('b', F, [2])]),
        opset_imports=[helper.make_opsetid('', OPSET), helper.make_opsetid('com.example', 1)])
    m.ir_version = 8
    onnx.save(m, unk)
    expect(run(unk, '-i', 'a=' + os.path.join(d, 'x.npy'), '-o', out), 1, 'com.example.Frobnicate', 'kiln ops')
    return fails


# ---------------------------------------------------------------------------- runner

def ensure_ort():
    mod = os.path.join(NPM_DIR, 'node_modules', 'onnxruntime-node')
    if os.path.isdir(mod):
        return True
    cmd = ['npm', 'install', '--ignore-scripts', '--no-save', '--prefix', NPM_DIR, 'onnxruntime-node@1.30.0']
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    return r.returncode == 0 and os.path.isdir(mod)


def compare(name, got, want):
    if got.shape != want.shape:
        return '%s: shape %s, reference %s' % (name, got.shape, want.shape)
    if want.dtype.kind == 'f':
        if got.dtype.kind != 'f':
            return '%s: dtype %s, reference %s' % (name, got.dtype, want.dtype)
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        bad = ~both_nan & ~(np.abs(g - w) <= 1e-4 + 1e-3 * np.abs(w))
        if bad.any():
            i = np.unravel_index(np.argmax(bad), bad.shape)
            return '%s: %d of %d values differ; first at %s: kiln %r, reference %r' % (
                name, int(bad.sum()), bad.size, tuple(int(k) for k in i), float(g[i]), float(w[i]))
        return None
    if got.dtype != want.dtype:
        return '%s: dtype %s, reference %s' % (name, got.dtype, want.dtype)
    if not np.array_equal(got, want):
        return '%s: values differ (kiln %s, reference %s)' % (name, got.ravel()[:8], want.ravel()[:8])
    return None


def safe_name(name):
    return re.sub(r'[^A-Za-z0-9_.-]', '_', name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    ap.add_argument('-k', default='')
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    kiln = os.path.abspath(args.kiln)
    if not ensure_ort():
        print('test_onnx_models: cannot install onnxruntime-node into build-ref-npm')
        print('0 passed, 1 failed')
        return 2
    tmp = tempfile.mkdtemp(prefix='kiln_onnx_models_')
    jobs, runs = [], []
    for fn in CASES:
        if args.k not in fn.__name__:
            continue
        d = os.path.join(tmp, fn.__name__)
        os.makedirs(d)
        m, feeds = fn()
        path = os.path.join(d, 'model.onnx')
        onnx.save(m, path)
        inputs = {}
        for k, v in feeds.items():
            p = os.path.join(d, 'in_%s.npy' % safe_name(k))
            np.save(p, np.asarray(v))
            inputs[k] = p
        jobs.append({'model': path, 'out': os.path.join(d, 'ref'), 'inputs': inputs})
        runs.append((fn.__name__, d, path, inputs, [o.name for o in m.graph.output]))
    with open(os.path.join(tmp, 'jobs.json'), 'w') as f:
        json.dump(jobs, f)
    r = subprocess.run(['node', ORT_RUN, '--batch', os.path.join(tmp, 'jobs.json')], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=900)
    if r.returncode != 0:
        print('test_onnx_models: the ONNX Runtime runner failed:\n' + r.stdout.decode(errors='replace'))
        print('0 passed, 1 failed')
        return 1
    passed = failed = 0
    for name, d, path, inputs, outs in runs:
        err = None
        ref_err = os.path.join(d, 'ref', 'ERROR.txt')
        if os.path.exists(ref_err):
            err = 'reference failed: ' + open(ref_err).read()
        else:
            cmd = [kiln, 'run', path, '-o', os.path.join(d, 'kiln')]
            for k, p in inputs.items():
                cmd += ['-i', '%s=%s' % (k, p)]
            kr = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            if kr.returncode != 0:
                err = 'kiln failed (exit %d): %s' % (kr.returncode, kr.stdout.decode(errors='replace').strip())
            else:
                for o in outs:
                    got = np.load(os.path.join(d, 'kiln', safe_name(o) + '.npy'))
                    want = np.load(os.path.join(d, 'ref', o + '.npy'))
                    err = compare(o, got, want)
                    if err:
                        break
        if err:
            failed += 1
            print('FAIL %s: %s' % (name, err))
        else:
            passed += 1
            print('ok   %s' % name)
    if not args.k:
        cli_fails = cli_checks(kiln, tmp)
        for msg in cli_fails:
            print('FAIL cli: %s' % msg)
        if cli_fails:
            failed += 1
        else:
            passed += 1
            print('ok   cli')
    if not args.keep and not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print('files kept in %s' % tmp)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
