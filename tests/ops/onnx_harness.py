"""Shared harness of the ONNX op tests (test_onnx_ops.py, test_onnx_rnn_ops.py).

A test file registers cases with add() (a single node fed random inputs) or by
appending Case objects to CASES, and cases that kiln must refuse with bad(); main()
then runs them all twice:
  * ONNX Runtime (npm onnxruntime-node, CPU, graph optimisations off) through
    tests/ops/ort_run.js -- all cases in one node process (--batch);
  * kiln: `KILN run MODEL.onnx -i NAME=PATH.npy ... -o OUTDIR`, which imports the model
    and runs it on the host executor (ops lowered to HLO one by one, or host kernels).
Outputs must agree: same shape and dtype, ints and bools exactly, floats within
max|a-b| <= atol + rtol*|b| (b = ONNX Runtime; 1e-4 and 1e-3 unless a case says
otherwise). A refused case must exit 1 with its expected message.

Command line of every test file: --kiln PATH [-k SUBSTR] [-j N] [--keep] [--list]
[--node NODE]. Prints "N passed, N failed" and exits 1 on failure, 77 when a
reference tool is missing (CTest counts that as a failure: the references are
installed by scripts/install-deps.sh).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

np.seterr(all='ignore')

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover
    print('skipped: python3-onnx is not installed')
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int16): TensorProto.INT16, np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64, np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.uint32): TensorProto.UINT32,
    np.dtype(np.uint64): TensorProto.UINT64, np.dtype(np.bool_): TensorProto.BOOL,
}


class Feed:
    """A graph input fed at run time."""
    def __init__(self, value):
        self.value = np.asarray(value)


class Init:
    """An initializer (a compile-time constant for kiln)."""
    def __init__(self, value):
        self.value = np.asarray(value)


class Case:
    def __init__(self, name, nodes, inputs, n_out=1, opset=17, atol=1e-4, rtol=1e-3, outputs=None, out_types=None):
        self.name = name
        self.nodes = nodes
        self.inputs = inputs  # list of (name, Feed|Init)
        self.outputs = outputs or ['out%d' % i for i in range(n_out)]
        self.opset = opset
        self.atol = atol
        self.rtol = rtol
        # ONNX element types of the outputs when shape inference cannot tell (ops newer
        # than the installed onnx package); None: the first input's type.
        self.out_types = out_types
        # Nodes of the model ONNX Runtime runs instead, when it lacks the case's form
        # (None: the same model as kiln).
        self.ref_nodes = None


CASES = []
ERROR_CASES = []  # (Case, substring of kiln's message)
_rng = np.random.default_rng(1234)


def rnd(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return _rng.uniform(lo, hi, size=shape).astype(dtype)


def rint(*shape, lo=-5, hi=5, dtype=np.int64):
    return _rng.integers(lo, hi, size=shape).astype(dtype)


def F(v):
    return Feed(v)


def K(v):
    return Init(v)


def i64(*v):
    return np.array(v, dtype=np.int64)


def i32(*v):
    return np.array(v, dtype=np.int32)


def _single_node_case(name, op, ins, attrs, n_out, opset, **kw):
    """One node `op` whose inputs are `ins`: Feed/Init values, or None for an absent
    optional input (written as "")."""
    names, inputs = [], []
    for i, v in enumerate(ins):
        if v is None:
            names.append('')
            continue
        names.append('in%d' % i)
        inputs.append(('in%d' % i, v))
    node = helper.make_node(op, names, ['out%d' % i for i in range(n_out)], **(attrs or {}))
    return Case(name, [node], inputs, n_out=n_out, opset=opset, **kw)


def add(name, op, ins, attrs=None, n_out=1, opset=17, **kw):
    CASES.append(_single_node_case(name, op, ins, attrs, n_out, opset, **kw))


def bad(name, op, ins, attrs, needle, opset=17, n_out=1):
    """A malformed node kiln must refuse: exit 1 with `needle` in its message."""
    ERROR_CASES.append((_single_node_case('error/' + name, op, ins, attrs, n_out, opset), needle))


def build_model(case, path, nodes=None, infer=True):
    inputs, inits = [], []
    for name, v in case.inputs:
        if isinstance(v, Init):
            inits.append(numpy_helper.from_array(v.value, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[v.value.dtype], list(v.value.shape)))
    outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in case.outputs]
    graph = helper.make_graph(nodes or case.nodes, 'case', inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', case.opset)])
    model.ir_version = 8 if case.opset <= 17 else 9
    # ONNX Runtime insists on typed graph outputs: take them from ONNX's shape inference,
    # else from the case (ops newer than the installed onnx package), else the first
    # input's type. Shape inference can crash on malformed nodes: infer=False skips it.
    known = {}
    if infer:
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
            known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
        except Exception:
            pass
    first = NP_TO_ONNX[case.inputs[0][1].value.dtype] if case.inputs else TensorProto.FLOAT
    for i, o in enumerate(case.outputs):
        vi = known.get(o)
        t = vi.type.tensor_type.elem_type if vi is not None else 0
        if not t:
            t = case.out_types[i] if case.out_types else first
        model.graph.output[i].type.tensor_type.elem_type = t
    onnx.save(model, path)


def compare(case, got_dir, want_dir):
    for o in case.outputs:
        wp, gp = os.path.join(want_dir, o + '.npy'), os.path.join(got_dir, o + '.npy')
        if not os.path.exists(wp):
            return 'ONNX Runtime wrote no %s' % o
        if not os.path.exists(gp):
            return 'kiln wrote no %s' % o
        w, g = np.load(wp), np.load(gp)
        if w.shape != g.shape:
            return '%s: shape %s, ONNX Runtime %s' % (o, g.shape, w.shape)
        if w.dtype != g.dtype:
            return '%s: dtype %s, ONNX Runtime %s' % (o, g.dtype, w.dtype)
        if w.dtype.kind in 'fc':
            wf, gf = w.astype(np.float64), g.astype(np.float64)
            both_nan = np.isnan(wf) & np.isnan(gf)
            same_inf = np.isinf(wf) & (wf == gf)
            err = np.abs(gf - wf)
            bad_mask = ~(both_nan | same_inf | (err <= case.atol + case.rtol * np.abs(wf)))
            if bad_mask.any():
                i = np.argwhere(bad_mask)[0]
                return '%s: at %s got %r, ONNX Runtime %r (%d bad of %d)' % (
                    o, tuple(i), gf[tuple(i)], wf[tuple(i)], int(bad_mask.sum()), bad_mask.size)
        elif not np.array_equal(w, g):
            i = np.argwhere(w != g)[0]
            return '%s: at %s got %r, ONNX Runtime %r' % (o, tuple(i), g[tuple(i)], w[tuple(i)])
    return None


def _save_feeds(case, d):
    feeds = {}
    for name, v in case.inputs:
        if isinstance(v, Feed):
            p = os.path.join(d, name + '.npy')
            np.save(p, v.value)
            feeds[name] = p
    return feeds


def _kiln_cmd(kiln, model, feeds, out_dir):
    cmd = [kiln, 'run', model, '-o', out_dir]
    for name, p in feeds.items():
        cmd += ['-i', '%s=%s' % (name, p)]
    return cmd


def main(doc):
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    ap.add_argument('--kiln', required=True)
    ap.add_argument('-k', default='')
    ap.add_argument('-j', type=int, default=2)
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--node', default=shutil.which('node') or 'node')
    args = ap.parse_args()
    cases = [c for c in CASES if args.k in c.name]
    error_cases = [(c, needle) for c, needle in ERROR_CASES if args.k in c.name]
    if args.list:
        for c in cases + [c for c, _ in error_cases]:
            print(c.name)
        return 0
    if not shutil.which(args.node) and not os.path.exists(args.node):
        print('skipped: node is not installed')
        return 77
    tmp = tempfile.mkdtemp(prefix='kiln_onnx_ops_')
    jobs = []
    for i, c in enumerate(cases):
        c.dir = os.path.join(tmp, '%04d' % i)
        os.makedirs(c.dir)
        model = os.path.join(c.dir, 'model.onnx')
        build_model(c, model)
        ref_model = model
        if c.ref_nodes:
            ref_model = os.path.join(c.dir, 'ref_model.onnx')
            build_model(c, ref_model, c.ref_nodes)
        c.feeds = _save_feeds(c, c.dir)
        jobs.append({'model': ref_model, 'out': os.path.join(c.dir, 'ort'), 'inputs': c.feeds})
    with open(os.path.join(tmp, 'jobs.json'), 'w') as f:
        json.dump(jobs, f)
    r = subprocess.run([args.node, os.path.join(HERE, 'ort_run.js'), '--batch', os.path.join(tmp, 'jobs.json')],
                       capture_output=True, text=True)
    if r.returncode != 0:
        if 'no ONNX Runtime module found' in r.stderr:
            print('skipped: ' + r.stderr.strip())
            return 77
        print('ONNX Runtime batch failed:\n' + r.stderr)
        return 1

    def run_kiln(c):
        os.makedirs(os.path.join(c.dir, 'kiln'), exist_ok=True)
        cmd = _kiln_cmd(args.kiln, os.path.join(c.dir, 'model.onnx'), c.feeds, os.path.join(c.dir, 'kiln'))
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return None

    with ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
        results = list(ex.map(run_kiln, cases))
    passed = failed = 0
    for c, res in zip(cases, results):
        ort_err = os.path.join(c.dir, 'ort', 'ERROR.txt')
        if os.path.exists(ort_err):
            msg = 'ONNX Runtime could not run the reference: ' + open(ort_err).read().strip().split('\n')[0]
        elif res is None:
            msg = 'kiln timed out'
        elif res.returncode != 0:
            msg = 'kiln failed (exit %d): %s' % (res.returncode, (res.stderr or res.stdout).strip()[-600:])
        else:
            msg = compare(c, os.path.join(c.dir, 'kiln'), os.path.join(c.dir, 'ort'))
        if msg:
            failed += 1
            print('FAIL %s: %s  [%s]' % (c.name, msg, c.dir))
        else:
            passed += 1
    for c, needle in error_cases:
        d = tempfile.mkdtemp(prefix='err_', dir=tmp)
        build_model(c, os.path.join(d, 'model.onnx'), infer=False)
        cmd = _kiln_cmd(args.kiln, os.path.join(d, 'model.onnx'), _save_feeds(c, d), os.path.join(d, 'kiln'))
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        text = res.stdout + res.stderr
        if res.returncode != 1 or needle not in text:
            failed += 1
            print('FAIL %s: expected exit 1 with %r, got exit %d: %s' % (c.name, needle, res.returncode,
                                                                         text.strip()[-400:]))
        else:
            passed += 1
    print('%d passed, %d failed' % (passed, failed))
    if not args.keep and not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0
