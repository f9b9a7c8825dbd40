#!/usr/bin/python3
"""TensorFlow op semantics: kiln against TensorFlow.js.

Every case is a tiny TF.js graph model (model.json + weights.bin) around one op (or a
few), written here from TF's op definitions: Placeholders for the inputs, Const nodes
whose values live in the weight shard (as the TF.js converter stores them), and the op
with its TF attributes. The same model runs in TensorFlow.js (tests/ops/tfjs_run.js, cpu
backend, one node process for all cases) and in `kiln run model.json`; outputs must
agree: max|a-b| <= 1e-4 + 1e-3*|b| for floats, exactly for ints and bools.

Usage: /usr/bin/python3 tests/ops/test_tf_ops.py --kiln build/kiln [-k SUBSTRING] [--keep]
Needs node and @tensorflow/tfjs (npm install --ignore-scripts --prefix build-ref-npm
@tensorflow/tfjs@4.22.0); without them the test reports itself skipped.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DT = {np.dtype(np.float32): ('DT_FLOAT', 'float32'), np.dtype(np.int32): ('DT_INT32', 'int32'),
      np.dtype(np.bool_): ('DT_BOOL', 'bool')}


class Ty:
    """A type attribute value."""

    def __init__(self, np_type):
        self.dt = DT[np.dtype(np_type)][0]


F32, I32, BOOL = Ty(np.float32), Ty(np.int32), Ty(np.bool_)


def shape_proto(shape):
    return {'dim': [{'size': str(d)} for d in shape]}


def attr(v):
    if isinstance(v, Ty):
        return {'type': v.dt}
    if isinstance(v, bool):
        return {'b': v}
    if isinstance(v, int):
        return {'i': str(v)}
    if isinstance(v, float):
        return {'f': v}
    if isinstance(v, str):
        return {'s': base64.b64encode(v.encode()).decode()}
    if isinstance(v, (list, tuple)):
        if not v:
            return {'list': {}}
        if all(isinstance(x, str) for x in v):
            return {'list': {'s': [base64.b64encode(x.encode()).decode() for x in v]}}
        return {'list': {'i': [str(int(x)) for x in v]}}
    raise TypeError(v)


class Model:
    def __init__(self, name):
        self.name = name
        self.nodes = []
        self.inputs = {}
        self.consts = []
        self.outputs = {}
        self.expect = {}  # key -> numpy value, for semantics TF.js gets wrong or lacks
        self.n = 0

    def input(self, arr, name=None):
        name = name or 'in%d' % len(self.inputs)
        arr = np.asarray(arr)
        self.inputs[name] = arr
        self.nodes.append({'name': name, 'op': 'Placeholder',
                           'attr': {'dtype': {'type': DT[arr.dtype][0]}, 'shape': {'shape': shape_proto(arr.shape)}}})
        return name

    def const(self, arr, dtype=None):
        arr = np.asarray(arr, dtype=dtype)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        if arr.dtype == np.int64:
            arr = arr.astype(np.int32)
        name = 'c%d' % len(self.consts)
        self.consts.append((name, arr))
        dt = DT[arr.dtype][0]
        self.nodes.append({'name': name, 'op': 'Const',
                           'attr': {'dtype': {'type': dt},
                                    'value': {'tensor': {'dtype': dt, 'tensorShape': shape_proto(arr.shape)}}}})
        return name

    def op(self, op, inputs, **attrs):
        self.n += 1
        name = '%s_%d' % (op.strip('_').lower(), self.n)
        self.nodes.append({'name': name, 'op': op, 'input': list(inputs),
                           'attr': {k: attr(v) for k, v in attrs.items()}})
        return name

    def out(self, ref):
        key = 'out%d' % len(self.outputs)
        self.outputs[key] = ref if ':' in ref else ref + ':0'
        return key

    def write(self, d):
        os.makedirs(d, exist_ok=True)
        data = b''.join(np.ascontiguousarray(a).astype(a.dtype.newbyteorder('<')).tobytes() for _, a in self.consts)
        with open(os.path.join(d, 'weights.bin'), 'wb') as f:
            f.write(data)
        model = {
            'format': 'graph-model', 'generatedBy': 'kiln-test', 'convertedBy': 'kiln',
            'modelTopology': {'node': self.nodes, 'library': {}, 'versions': {'producer': 1286}},
            'signature': {
                'inputs': {n: {'name': n + ':0', 'dtype': DT[a.dtype][0], 'tensorShape': shape_proto(a.shape)}
                           for n, a in self.inputs.items()},
                'outputs': {k: {'name': v} for k, v in self.outputs.items()},
            },
            'weightsManifest': [{'paths': ['weights.bin'],
                                 'weights': [{'name': n, 'shape': list(a.shape), 'dtype': DT[a.dtype][1]}
                                             for n, a in self.consts]}],
        }
        with open(os.path.join(d, 'model.json'), 'w') as f:
            json.dump(model, f, indent=1)
        for n, a in self.inputs.items():
            np.save(os.path.join(d, n + '.npy'), a)


RNG = np.random.default_rng(7)


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def ints(*shape, lo=-5, hi=5):
    return RNG.integers(lo, hi, size=shape).astype(np.int32)


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


# ------------------------------------------------------------------ builders ----

def unary(op, x, **attrs):
    m = Model(op)
    m.out(m.op(op, [m.input(x)], T=F32 if x.dtype == np.float32 else I32, **attrs))
    return m


def binary(op, a, b, **attrs):
    m = Model(op)
    t = {np.dtype(np.float32): F32, np.dtype(np.int32): I32, np.dtype(np.bool_): BOOL}[a.dtype]
    m.out(m.op(op, [m.input(a), m.input(b)], T=t, **attrs))
    return m


@case
def elementwise():
    ms = []
    a, b = rand(2, 3, 4), rand(3, 1)
    for op in ['Add', 'AddV2', 'Sub', 'Mul', 'Maximum', 'Minimum', 'SquaredDifference', 'Atan2']:
        ms.append((op, binary(op, a, b)))
    ms.append(('RealDiv', binary('RealDiv', a, rand(4, lo=0.5, hi=2))))
    ms.append(('Div', binary('Div', a, rand(4, lo=0.5, hi=2))))
    ms.append(('DivNoNan', binary('DivNoNan', a, np.array([0, 1, 2, 0], np.float32))))
    ms.append(('Pow', binary('Pow', rand(5, lo=0.1, hi=3), rand(5, lo=-2, hi=2))))
    ms.append(('FloorDiv_f', binary('FloorDiv', rand(8, lo=-9, hi=9), rand(8, lo=0.5, hi=3))))
    ms.append(('FloorMod_f', binary('FloorMod', rand(8, lo=-9, hi=9), rand(8, lo=0.5, hi=3))))
    ia, ib = ints(12, lo=-20, hi=20), np.array([3, -3, 4, -4, 5, 7, -7, 2, 3, -2, 6, 1], np.int32)
    ms.append(('FloorDiv_i', binary('FloorDiv', ia, ib)))
    ms.append(('FloorMod_i', binary('FloorMod', ia, ib)))
    ms.append(('Mod_i', binary('Mod', np.abs(ia), np.abs(ib))))
    ms.append(('Add_i', binary('AddV2', ia, ib)))
    ms.append(('Maximum_i', binary('Maximum', ia, ib)))
    for op in ['Equal', 'NotEqual', 'Less', 'LessEqual', 'Greater', 'GreaterEqual']:
        ms.append((op, binary(op, ints(3, 4, lo=0, hi=3).astype(np.float32), ints(4, lo=0, hi=3).astype(np.float32))))
    p, q = RNG.integers(0, 2, (2, 5)).astype(bool), RNG.integers(0, 2, (5,)).astype(bool)
    ms.append(('LogicalAnd', binary('LogicalAnd', p, q)))
    ms.append(('LogicalOr', binary('LogicalOr', p, q)))
    m = Model('LogicalNot')
    m.out(m.op('LogicalNot', [m.input(p)]))
    ms.append(('LogicalNot', m))
    x = rand(3, 7, lo=-4, hi=4)
    for op in ['Neg', 'Abs', 'Exp', 'Expm1', 'Sigmoid', 'Tanh', 'Relu', 'Relu6', 'Elu', 'Selu', 'Softplus',
               'Erf', 'Sin', 'Cos', 'Floor', 'Ceil', 'Round', 'Sign', 'Square', 'Atan', 'Sinh', 'Cosh',
               'Asinh', 'Reciprocal']:
        ms.append((op, unary(op, x)))
    ms.append(('LeakyRelu', unary('LeakyRelu', x, alpha=0.3)))
    pos = rand(9, lo=0.05, hi=5)
    for op in ['Log', 'Log1p', 'Sqrt', 'Rsqrt', 'Acosh']:
        ms.append((op, unary(op, pos + (1 if op == 'Acosh' else 0))))
    small = rand(9, lo=-0.95, hi=0.95)
    for op in ['Asin', 'Acos', 'Atanh', 'Tan']:
        ms.append((op, unary(op, small)))
    ms.append(('Round_half', unary('Round', np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49], np.float32))))
    special = np.array([0, np.nan, np.inf, -np.inf, 1.5], np.float32)
    for op in ['IsNan', 'IsFinite', 'IsInf']:
        ms.append((op, unary(op, special)))
    for src, dst in [(x, I32), (ia, F32), (x, BOOL), (p, F32), (ia, BOOL)]:
        m = Model('Cast')
        st = {np.dtype(np.float32): F32, np.dtype(np.int32): I32, np.dtype(np.bool_): BOOL}[src.dtype]
        m.out(m.op('Cast', [m.input(src)], SrcT=st, DstT=dst))
        ms.append(('Cast', m))
    for op, n_in in [('Select', 3), ('SelectV2', 3)]:
        m = Model(op)
        cond = RNG.integers(0, 2, (2, 3) if op == 'Select' else (3,)).astype(bool)
        m.out(m.op(op, [m.input(cond), m.input(rand(2, 3)), m.input(rand(2, 3))], T=F32))
        ms.append((op, m))
    m = Model('AddN')
    m.out(m.op('AddN', [m.input(rand(2, 3)), m.input(rand(2, 3)), m.input(rand(2, 3))], T=F32, N=3))
    ms.append(('AddN', m))
    m = Model('ClipByValue')
    m.out(m.op('ClipByValue', [m.input(rand(4, 5, lo=-3, hi=3)), m.const(np.float32(-1)), m.const(np.float32(1.5))],
               T=F32))
    ms.append(('ClipByValue', m))
    for fmt, shape in [('NHWC', (2, 3, 3, 4))]:  # TF.js has no NCHW BiasAdd
        m = Model('BiasAdd')
        m.out(m.op('BiasAdd', [m.input(rand(*shape)), m.const(rand(4))], T=F32, data_format=fmt))
        ms.append(('BiasAdd_' + fmt, m))
    m = Model('Prelu')
    m.out(m.op('Prelu', [m.input(rand(2, 3, 3, 4)), m.const(rand(4))], T=F32))
    ms.append(('Prelu', m))
    return ms


def conv(op, x, w, **attrs):
    attrs.setdefault('dilations', [1] * x.ndim)  # the TF.js converter always writes it
    m = Model(op)
    m.out(m.op(op, [m.input(x), m.const(w)], T=F32, **attrs))
    return m


@case
def nn():
    ms = []
    x = rand(2, 9, 8, 3)
    for pad in ['SAME', 'VALID']:
        for s in [1, 2]:
            ms.append(('Conv2D_%s_s%d' % (pad, s),
                       conv('Conv2D', x, rand(3, 3, 3, 5), strides=[1, s, s, 1], padding=pad, data_format='NHWC',
                            dilations=[1, 1, 1, 1])))
    ms.append(('Conv2D_dil', conv('Conv2D', x, rand(3, 2, 3, 4), strides=[1, 1, 1, 1], padding='SAME',
                                  dilations=[1, 2, 2, 1])))
    ms.append(('Conv2D_1x1', conv('Conv2D', x, rand(1, 1, 3, 6), strides=[1, 1, 1, 1], padding='VALID')))
    ms.append(('Conv2D_explicit', conv('Conv2D', x, rand(3, 3, 3, 2), strides=[1, 2, 1, 1], padding='EXPLICIT',
                                       explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0])))
    ms.append(('Depthwise_same_s2', conv('DepthwiseConv2dNative', x, rand(3, 3, 3, 2), strides=[1, 2, 2, 1],
                                         padding='SAME')))
    ms.append(('Depthwise_valid', conv('DepthwiseConv2dNative', x, rand(2, 3, 3, 1), strides=[1, 1, 1, 1],
                                       padding='VALID', dilations=[1, 2, 2, 1])))
    for pad, s in [('SAME', 2), ('VALID', 2), ('SAME', 1)]:
        m = Model('Conv2DBackpropInput')
        ih, iw = 7, 8
        oh = -(-ih // s) if pad == 'SAME' else (ih - 3) // s + 1
        ow = -(-iw // s) if pad == 'SAME' else (iw - 3) // s + 1
        m.out(m.op('Conv2DBackpropInput', [m.const(np.array([2, ih, iw, 3], np.int32)), m.const(rand(3, 3, 3, 4)),
                                           m.input(rand(2, oh, ow, 4))], T=F32, strides=[1, s, s, 1], padding=pad))
        ms.append(('Conv2DBackpropInput_%s_%d' % (pad, s), m))
    m = Model('Conv3D')
    m.out(m.op('Conv3D', [m.input(rand(1, 5, 6, 4, 2)), m.const(rand(3, 2, 2, 2, 3))], T=F32,
               strides=[1, 2, 1, 1, 1], padding='SAME', dilations=[1, 1, 1, 1, 1], data_format='NDHWC'))
    ms.append(('Conv3D', m))
    for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
        a = rand(4, 3) if ta else rand(3, 4)
        b = rand(5, 4) if tb else rand(4, 5)
        m = Model('MatMul')
        m.out(m.op('MatMul', [m.input(a), m.input(b)], T=F32, transpose_a=ta, transpose_b=tb))
        ms.append(('MatMul_%d%d' % (ta, tb), m))
    # (TF.js 4.22 miscomputes some batch broadcasts, e.g. [2,1,3,4] x [3,5,4]; these it gets right)
    for sa, sb in [((3, 3, 4), (2, 3, 5, 4)), ((1, 3, 4), (2, 5, 4)), ((2, 3, 3, 4), (5, 4))]:
        m = Model('BatchMatMulV2')
        m.out(m.op('BatchMatMulV2', [m.input(rand(*sa)), m.input(rand(*sb))], T=F32, adj_x=False, adj_y=True))
        ms.append(('BatchMatMulV2_%dx%d' % (len(sa), len(sb)), m))
    m = Model('BatchMatMul')
    m.out(m.op('BatchMatMul', [m.input(rand(2, 4, 3)), m.input(rand(2, 4, 5))], T=F32, adj_x=True))
    ms.append(('BatchMatMul', m))
    for fmt in ['NHWC']:
        m = Model('FusedBatchNormV3')
        y = m.op('FusedBatchNormV3', [m.input(rand(2, 4, 4, 3)), m.const(rand(3)), m.const(rand(3)), m.const(rand(3)),
                                      m.const(rand(3, lo=0.1, hi=2))], T=F32, U=F32, epsilon=0.001, is_training=False,
                 data_format=fmt)
        m.out(y)
        ms.append(('FusedBatchNormV3', m))
    # Training mode with empty statistics normalises with the batch's own (numpy reference).
    xb = rand(2, 4, 4, 3)
    sc, of = rand(3), rand(3)
    m = Model('FusedBatchNormV3_train')
    y = m.op('FusedBatchNormV3', [m.input(xb), m.const(sc), m.const(of), m.const(np.zeros(0, np.float32)),
                                  m.const(np.zeros(0, np.float32))], T=F32, U=F32, epsilon=0.01, is_training=True)
    m.out(y)
    mu, var = xb.mean((0, 1, 2)), xb.var((0, 1, 2))
    m.expect['out0'] = ((xb - mu) / np.sqrt(var + 0.01) * sc + of).astype(np.float32)
    ms.append(('FusedBatchNormV3_train', m))
    for op in ['MaxPool', 'AvgPool']:
        for pad in ['SAME', 'VALID']:
            for k, s in [(2, 2), (3, 2), (3, 1)]:
                m = Model(op)
                m.out(m.op(op, [m.input(rand(2, 7, 6, 3))], T=F32, ksize=[1, k, k, 1], strides=[1, s, s, 1],
                           padding=pad, data_format='NHWC'))
                ms.append(('%s_%s_k%d_s%d' % (op, pad, k, s), m))
    for op in ['Softmax', 'LogSoftmax']:
        m = Model(op)
        m.out(m.op(op, [m.input(rand(3, 7, lo=-5, hi=5))], T=F32))
        ms.append((op, m))
    m = Model('LRN')
    m.out(m.op('LRN', [m.input(rand(1, 3, 3, 8))], T=F32, depth_radius=2, bias=1.0, alpha=0.5, beta=0.75))
    ms.append(('LRN', m))
    x = rand(1, 6, 6, 3)
    # (TF.js 4.22 lacks a fused Tanh and drops leakyrelu_alpha in the depthwise form)
    for ops, extra in [(['BiasAdd'], 1), (['BiasAdd', 'Relu'], 1), (['BiasAdd', 'Relu6'], 1),
                       (['BiasAdd', 'LeakyRelu'], 1), (['BiasAdd', 'Elu'], 1), (['BiasAdd', 'Prelu'], 2),
                       (['BiasAdd', 'Sigmoid'], 1)]:
        for base in ['_FusedConv2D', 'FusedDepthwiseConv2dNative']:
            if base != '_FusedConv2D' and 'LeakyRelu' in ops:
                continue
            m = Model(base)
            w = rand(3, 3, 3, 4) if base == '_FusedConv2D' else rand(3, 3, 3, 2)
            oc = 4 if base == '_FusedConv2D' else 6
            args = [m.const(rand(oc))] + ([m.const(rand(oc))] if extra == 2 else [])
            m.out(m.op(base, [m.input(x), m.const(w)] + args, T=F32, strides=[1, 2, 2, 1], padding='SAME',
                       fused_ops=ops, num_args=extra, epsilon=0.0, leakyrelu_alpha=0.25, dilations=[1, 1, 1, 1],
                       data_format='NHWC'))
            ms.append(('%s_%s' % (base, '_'.join(ops)), m))
    for ops in [['BiasAdd'], ['BiasAdd', 'Relu']]:
        m = Model('_FusedMatMul')
        m.out(m.op('_FusedMatMul', [m.input(rand(3, 4)), m.const(rand(5, 4)), m.const(rand(5))], T=F32,
                   fused_ops=ops, num_args=1, transpose_b=True, transpose_a=False, epsilon=0.0))
        ms.append(('_FusedMatMul_' + '_'.join(ops), m))
    return ms


def with_consts(op, x, consts, n_out=1, **attrs):
    m = Model(op)
    ins = [m.input(x)] + [m.const(c) for c in consts]
    node = m.op(op, ins, **attrs)
    for i in range(n_out):
        m.out('%s:%d' % (node, i))
    return m


@case
def array():
    ms = []
    x = rand(2, 3, 4, 5)
    ms.append(('Reshape', with_consts('Reshape', x, [np.array([6, -1, 2], np.int32)], T=F32)))
    ms.append(('Squeeze', with_consts('Squeeze', rand(1, 3, 1, 2), [], T=F32, squeeze_dims=[0, -2])))
    ms.append(('Squeeze_all', with_consts('Squeeze', rand(1, 3, 1, 2), [], T=F32, squeeze_dims=[])))
    ms.append(('ExpandDims', with_consts('ExpandDims', x, [np.int32(-2)], T=F32)))
    ms.append(('Transpose', with_consts('Transpose', x, [np.array([2, 0, 3, 1], np.int32)], T=F32)))
    m = Model('ConcatV2')
    m.out(m.op('ConcatV2', [m.input(rand(2, 3)), m.input(rand(2, 1)), m.input(rand(2, 2)), m.const(np.int32(-1))],
               T=F32, N=3))
    ms.append(('ConcatV2', m))
    m = Model('Pack')
    m.out(m.op('Pack', [m.input(rand(2, 3)), m.input(rand(2, 3))], T=F32, N=2, axis=1))
    ms.append(('Pack', m))
    ms.append(('Unpack', with_consts('Unpack', x, [], n_out=4, T=F32, num=4, axis=2)))
    m = Model('Split')
    node = m.op('Split', [m.const(np.int32(1)), m.input(rand(2, 6))], T=F32, num_split=3)
    for i in range(3):
        m.out('%s:%d' % (node, i))
    ms.append(('Split', m))
    ms.append(('SplitV', with_consts('SplitV', rand(7, 2), [np.array([2, -1, 1], np.int32), np.int32(0)], n_out=3,
                                     T=F32, num_split=3)))
    ms.append(('Slice', with_consts('Slice', x, [np.array([1, 0, 1, 2], np.int32), np.array([1, -1, 2, 3], np.int32)],
                                    T=F32, Index=I32)))
    # StridedSlice against numpy's indexing, which TF's masks spell out (TF.js 4.22 gets
    # several ellipsis / new-axis combinations wrong).
    na_ = np.newaxis
    specs = [
        # begin, end, strides, begin_mask, end_mask, ellipsis, new_axis, shrink, numpy index
        ([1, 0, 0, 3], [0, 0, 0, 4], [1, -2, 1, 1], 2, 3, 4, 0, 8, (slice(1, None), slice(None, None, -2), Ellipsis, 3)),
        ([0, 0, 1, -1], [0, 0, 2, 0], [1, 1, 1, -1], 1, 1, 0, 2, 4, (slice(None), na_, 1, slice(-1, 0, -1))),
        ([-1, 0, -2], [0, 0, 100], [1, 1, 1], 0, 0, 2, 0, 1, (-1, Ellipsis, slice(-2, 100))),
        ([0, 1], [2, -1], [1, 1], 0, 0, 0, 0, 0, (slice(0, 2), slice(1, -1))),
        ([-1, -1, -1, -1], [-10, -10, -10, -10], [-1, -2, -3, -2], 0, 0, 0, 0, 0,
         (slice(-1, -10, -1), slice(-1, -10, -2), slice(-1, -10, -3), slice(-1, -10, -2))),
        ([0, 0], [1, 3], [1, 2], 0, 0, 0, 1, 0, (na_, slice(0, 3, 2))),
        ([1], [2], [1], 0, 0, 0, 0, 1, (1,)),
        ([0, 2, 1], [0, 0, 4], [1, 1, 2], 1, 3, 0, 0, 0, (slice(None), slice(2, None), slice(1, 4, 2))),
        ([0, 0], [0, 0], [1, 1], 0, 0, 1, 0, 2, (Ellipsis, 0)),
        ([0, 0, 2], [0, 0, 3], [1, 1, 1], 0, 0, 2, 1, 4, (na_, Ellipsis, 2)),
        ([3, 0], [1, 0], [1, 1], 0, 2, 0, 0, 0, (slice(3, 1), slice(None))),
    ]
    for i, (b, e, st, bm, em, el, nam, sh, idx) in enumerate(specs):
        m = with_consts('StridedSlice', x, [np.array(b, np.int32), np.array(e, np.int32), np.array(st, np.int32)],
                        T=F32, Index=I32, begin_mask=bm, end_mask=em, ellipsis_mask=el, new_axis_mask=nam,
                        shrink_axis_mask=sh)
        m.expect['out0'] = x[idx]
        ms.append(('StridedSlice_%d' % i, m))
    ms.append(('Tile', with_consts('Tile', rand(2, 1, 3), [np.array([2, 3, 1], np.int32)], T=F32)))
    ms.append(('Pad', with_consts('Pad', rand(2, 3), [np.array([[1, 0], [2, 1]], np.int32)], T=F32)))
    ms.append(('PadV2', with_consts('PadV2', rand(2, 3), [np.array([[0, 2], [1, 1]], np.int32), np.float32(-3)],
                                    T=F32)))
    for mode in ['REFLECT', 'SYMMETRIC']:
        ms.append(('MirrorPad_' + mode, with_consts('MirrorPad', rand(1, 4, 5, 2),
                                                    [np.array([[0, 0], [2, 3], [1, 2], [0, 0]], np.int32)], T=F32,
                                                    mode=mode)))
    m = Model('Fill')
    m.out(m.op('Fill', [m.const(np.array([2, 3], np.int32)), m.input(np.float32(2.5))], T=F32))
    ms.append(('Fill', m))
    ms.append(('ZerosLike', with_consts('ZerosLike', x, [], T=F32)))
    ms.append(('OnesLike', with_consts('OnesLike', x, [], T=F32)))
    for op in ['Shape', 'Size', 'Rank']:
        ms.append((op, with_consts(op, x, [], T=F32, out_type=I32)))
    m = Model('Range')
    m.out(m.op('Range', [m.const(np.float32(-1)), m.const(np.float32(2)), m.const(np.float32(0.3))], Tidx=F32))
    m.out(m.op('Range', [m.const(np.int32(10)), m.const(np.int32(0)), m.const(np.int32(-3))], Tidx=I32))
    ms.append(('Range', m))
    m = Model('LinSpace')
    m.out(m.op('LinSpace', [m.const(np.float32(-1)), m.const(np.float32(3)), m.const(np.int32(7))], T=F32, Tidx=I32))
    ms.append(('LinSpace', m))
    ms.append(('ReverseV2', with_consts('ReverseV2', x, [np.array([1, -1], np.int32)], T=F32, Tidx=I32)))
    ms.append(('BroadcastTo', with_consts('BroadcastTo', rand(3, 1), [np.array([2, 3, 4], np.int32)], T=F32)))
    m = Model('BroadcastArgs')
    m.out(m.op('BroadcastArgs', [m.const(np.array([2, 1, 4], np.int32)), m.const(np.array([3, 1], np.int32))], T=I32))
    ms.append(('BroadcastArgs', m))
    ms.append(('DepthToSpace', with_consts('DepthToSpace', rand(2, 2, 3, 8), [], T=F32, block_size=2,
                                           data_format='NHWC')))
    src = rand(2, 4, 6, 3)  # TF.js has no SpaceToDepth: numpy's reshape/transpose is the reference
    m = with_consts('SpaceToDepth', src, [], T=F32, block_size=2, data_format='NHWC')
    m.expect['out0'] = src.reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(2, 2, 3, 12)
    ms.append(('SpaceToDepth', m))
    ms.append(('SpaceToBatchND', with_consts('SpaceToBatchND', rand(2, 3, 5, 2),
                                             [np.array([2, 3], np.int32), np.array([[1, 0], [0, 1]], np.int32)],
                                             T=F32)))
    ms.append(('BatchToSpaceND', with_consts('BatchToSpaceND', rand(12, 2, 3, 2),
                                             [np.array([2, 3], np.int32), np.array([[1, 0], [0, 2]], np.int32)],
                                             T=F32)))
    # (TF.js 4.22's converter reads num_lower for both bounds: numpy is the reference)
    for lo, hi in [(1, 0), (-1, 1), (0, -1), (-1, -1)]:
        xb = rand(2, 4, 5)
        m = with_consts('MatrixBandPart', xb, [np.int32(lo), np.int32(hi)], T=F32, Tindex=I32)
        r, c = np.arange(4)[:, None], np.arange(5)[None, :]
        band = ((lo < 0) | (r - c <= lo)) & ((hi < 0) | (c - r <= hi))
        m.expect['out0'] = np.where(band, xb, 0).astype(np.float32)
        ms.append(('MatrixBandPart_%d_%d' % (lo, hi), m))
    m = Model('Identity')
    i = m.input(x)
    m.out(m.op('Identity', [i], T=F32))
    m.out(m.op('StopGradient', [i], T=F32))
    ms.append(('Identity', m))
    return ms


@case
def index_ops():
    ms = []
    p = rand(4, 5, 3)
    ms.append(('GatherV2', with_consts('GatherV2', p, [np.array([[3, 0], [1, 1]], np.int32), np.int32(1)],
                                       Tparams=F32, Tindices=I32, Taxis=I32, batch_dims=0)))
    ms.append(('GatherV2_bd', with_consts('GatherV2', p, [np.array([[3, 0], [1, 4], [2, 2], [0, 1]], np.int32),
                                                          np.int32(1)], Tparams=F32, Tindices=I32, batch_dims=1)))
    ms.append(('GatherV2_ax0', with_consts('GatherV2', p, [np.array([3, 3, 0], np.int32), np.int32(0)],
                                           Tparams=F32, Tindices=I32)))
    # An empty detection list gathered by an empty index list (NMS that kept no box).
    ms.append(('GatherV2_empty', with_consts('GatherV2', np.zeros((0, 4), np.float32),
                                             [np.zeros((0,), np.int32), np.int32(0)], Tparams=F32, Tindices=I32)))
    ms.append(('GatherNd', with_consts('GatherNd', p, [np.array([[[1, 2], [3, 4]], [[0, 0], [2, 1]]], np.int32)],
                                       Tparams=F32, Tindices=I32)))
    m = Model('ScatterNd')
    m.out(m.op('ScatterNd', [m.const(np.array([[1], [3], [1]], np.int32)), m.input(rand(3, 4)),
                             m.const(np.array([5, 4], np.int32))], T=F32, Tindices=I32))
    ms.append(('ScatterNd', m))
    m = Model('TensorScatterUpdate')
    m.out(m.op('TensorScatterUpdate', [m.input(rand(4, 3)), m.const(np.array([[2], [0]], np.int32)),
                                       m.input(rand(2, 3))], T=F32, Tindices=I32))
    ms.append(('TensorScatterUpdate', m))
    for axis in [-1, 0]:  # TF.js ignores axis: numpy for axis 0
        m = Model('OneHot')
        idx = np.array([[2, -1], [0, 4]], np.int32)
        m.out(m.op('OneHot', [m.input(idx), m.const(np.int32(4)), m.const(np.float32(3)), m.const(np.float32(-1))],
                   T=F32, TI=I32, axis=axis))
        if axis == 0:
            m.expect['out0'] = np.where(np.arange(4)[:, None, None] == idx[None], 3, -1).astype(np.float32)
        ms.append(('OneHot_%d' % axis, m))
    return ms


@case
def reductions():
    ms = []
    x = rand(3, 4, 5)
    for op in ['Sum', 'Mean', 'Max', 'Min', 'Prod']:
        for axes, keep in [([1], False), ([0, 2], True), ([-1], False)]:
            ms.append(('%s_%s_%d' % (op, axes, keep),
                       with_consts(op, x, [np.array(axes, np.int32)], T=F32, Tidx=I32, keep_dims=keep)))
    b = RNG.integers(0, 2, (3, 4)).astype(bool)
    for op in ['All', 'Any']:
        ms.append((op, with_consts(op, b, [np.array([1], np.int32)], Tidx=I32, keep_dims=False)))
    ms.append(('Sum_int', with_consts('Sum', ints(3, 4), [np.array([0], np.int32)], T=I32, keep_dims=False)))
    xi = ints(3, 4, lo=0, hi=9)  # TF truncates integer means; TF.js returns floats
    m = with_consts('Mean', xi, [np.array([1], np.int32)], T=I32, keep_dims=False)
    m.expect['out0'] = xi.sum(1) // 4
    ms.append(('Mean_int', m))
    for op in ['ArgMax', 'ArgMin']:
        ms.append((op, with_consts(op, x, [np.int32(1)], T=F32, Tidx=I32, output_type=I32)))
    for excl in [False, True]:
        for rev in [False, True]:
            ms.append(('Cumsum_%d%d' % (excl, rev), with_consts('Cumsum', x, [np.int32(1)], T=F32, Tidx=I32,
                                                              exclusive=excl, reverse=rev)))
    # (axis 1, not -1: TF.js 4.22's cumprod loses the shape for negative axes)
    ms.append(('Cumprod', with_consts('Cumprod', rand(3, 4, lo=0.5, hi=1.5), [np.int32(1)], T=F32, Tidx=I32)))
    ms.append(('TopKV2', with_consts('TopKV2', rand(3, 10), [np.int32(4)], n_out=2, T=F32, sorted=True)))
    m = Model('Einsum')
    m.out(m.op('Einsum', [m.input(rand(2, 3, 4)), m.input(rand(2, 5, 4))], T=F32, N=2, equation='bij,bkj->bik'))
    m.out(m.op('Einsum', [m.input(rand(3, 4)), m.input(rand(4, 5))], T=F32, N=2, equation='ij,jk->ik'))
    m.out(m.op('Einsum', [m.input(rand(2, 3))], T=F32, N=1, equation='ij->ji'))
    ms.append(('Einsum', m))
    return ms


@case
def image():
    ms = []
    x = rand(2, 5, 7, 3)
    for op in ['ResizeBilinear', 'ResizeNearestNeighbor']:
        for align, half in [(False, False), (True, False), (False, True)]:
            for size in [(8, 11), (3, 4), (5, 7)]:
                ms.append(('%s_%d%d_%dx%d' % (op, align, half, size[0], size[1]),
                           with_consts(op, x, [np.array(size, np.int32)], T=F32, align_corners=align,
                                       half_pixel_centers=half)))
    m = Model('CropAndResize')
    boxes = np.array([[0, 0, 1, 1], [0.2, 0.1, 0.9, 0.7], [-0.2, 0.3, 0.5, 1.4], [0.5, 0.5, 0.5, 0.5]], np.float32)
    for method in ['bilinear', 'nearest']:
        m.out(m.op('CropAndResize', [m.input(x) if method == 'bilinear' else 'in0', m.const(boxes),
                                     m.const(np.array([0, 1, 1, 0], np.int32)), m.const(np.array([4, 3], np.int32))],
                   T=F32, method=method, extrapolation_value=-1.0))
    ms.append(('CropAndResize', m))
    # NMS: clustered random boxes with ties.
    n = 40
    ctr = RNG.uniform(0, 1, (n, 2))
    size = RNG.uniform(0.05, 0.3, (n, 2))
    boxes = np.concatenate([ctr - size / 2, ctr + size / 2], axis=1).astype(np.float32)
    boxes[::7] = boxes[::7][:, [2, 3, 0, 1]]  # some boxes with flipped corners
    scores = np.round(RNG.uniform(0, 1, n), 1).astype(np.float32)  # many ties
    for ver, extra in [('V3', [np.float32(0.3)]), ('V4', [np.float32(0.2)]), ('V5', [np.float32(0.1), np.float32(0.0)]),
                       ('V5soft', [np.float32(0.1), np.float32(0.5)])]:
        op = 'NonMaxSuppression' + ver[:2]
        m = Model(op)
        attrs = {'T': F32}
        if ver == 'V4':
            attrs['pad_to_max_output_size'] = False
        if ver.startswith('V5'):
            attrs['pad_to_max_output_size'] = False
        node = m.op(op, [m.input(boxes), m.input(scores), m.const(np.int32(12)), m.const(np.float32(0.45))] +
                    [m.const(e) for e in extra], **attrs)
        m.out(node + ':0')
        if ver.startswith('V5'):
            m.out(node + ':1')  # (TF.js's V5 has no valid_outputs)
        elif ver == 'V4':
            m.out(node + ':1')
        ms.append(('NMS' + ver, m))
    m = Model('Where')
    m.out(m.op('Where', [m.input(RNG.integers(0, 2, (3, 4, 2)).astype(bool))], T=BOOL))
    ms.append(('Where', m))
    m = Model('Unique')
    u = m.op('Unique', [m.input(np.array([4, 1, 4, 2, 1, 7, 4, -3], np.int32))], T=I32, out_idx=I32)
    m.out(u + ':0')
    m.out(u + ':1')
    ms.append(('Unique', m))
    m = Model('SparseToDense')
    m.out(m.op('SparseToDense', [m.const(np.array([[0, 1], [2, 3]], np.int32)), m.const(np.array([3, 4], np.int32)),
                                 m.input(rand(2)), m.const(np.float32(-1))], T=F32, Tindices=I32,
               validate_indices=True))
    ms.append(('SparseToDense', m))
    return ms


# --------------------------------------------------------------------- driver ----

def compare(name, key, got, want):
    if got.shape != want.shape:
        return '%s %s: shape %s, TF.js %s' % (name, key, got.shape, want.shape)
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        if not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
            bad = np.argwhere(got.astype(np.int64) != want.astype(np.int64))[0]
            return '%s %s: at %s kiln %s, TF.js %s' % (name, key, tuple(bad), got[tuple(bad)], want[tuple(bad)])
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    err = np.where(both_nan, 0, np.abs(g - w))
    err = np.where(np.isinf(w) & (g == w), 0, err)
    tol = 1e-4 + 1e-3 * np.abs(np.where(np.isinf(w), 0, w))
    bad = ~(err <= tol)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return '%s %s: at %s kiln %r, TF.js %r (max err %.3g)' % (name, key, i, g[i], w[i], np.nanmax(err))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    ap.add_argument('-k', default='')
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    tfjs = os.path.join(ROOT, 'build-ref-npm', 'node_modules', '@tensorflow', 'tfjs')
    if not shutil.which('node') or not (os.path.isdir(tfjs) or os.environ.get('KILN_TFJS_MODULE')):
        print('skipping: node or @tensorflow/tfjs is missing (npm install --ignore-scripts --prefix build-ref-npm '
              '@tensorflow/tfjs@4.22.0)')
        print('0 passed, 0 failed, 1 skipped')
        return 0
    work = tempfile.mkdtemp(prefix='kiln_tfops_')
    models = []
    for fn in CASES:
        for name, m in fn():
            if args.k in name:
                models.append((name, m))
    jobs = []
    for i, (name, m) in enumerate(models):
        d = os.path.join(work, '%03d_%s' % (i, name))
        m.write(d)
        outs = {k: v for k, v in m.outputs.items() if k not in m.expect}
        jobs.append({'dir': d, 'inputs': {n: os.path.join(d, n + '.npy') for n in m.inputs}, 'outputs': outs})
    with open(os.path.join(work, 'jobs.json'), 'w') as f:
        json.dump([j for j in jobs if j['outputs']], f)
    r = subprocess.run(['node', os.path.join(ROOT, 'tests', 'ops', 'tfjs_run.js'), '--batch',
                        os.path.join(work, 'jobs.json')], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        print('tfjs_run.js failed:\n' + r.stderr)
        print('0 passed, 1 failed')
        return 1
    passed = failed = 0
    for (name, m), job in zip(models, jobs):
        d = job['dir']
        err = os.path.join(d, 'tfjs', 'ERROR.txt')
        if os.path.exists(err):
            print('FAIL %s: TF.js could not run the reference: %s' % (name, open(err).read().splitlines()[0]))
            failed += 1
            continue
        cmd = [args.kiln, 'run', os.path.join(d, 'model.json'), '-o', os.path.join(d, 'kiln')]
        for n in m.inputs:
            cmd += ['-i', '%s=%s' % (n, os.path.join(d, n + '.npy'))]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print('FAIL %s: kiln: %s' % (name, (r.stderr or r.stdout).strip().splitlines()[-1:]))
            failed += 1
            continue
        problems = []
        for key in m.outputs:
            try:
                got = np.load(os.path.join(d, 'kiln', key + '.npy'))
                want = m.expect[key] if key in m.expect else np.load(os.path.join(d, 'tfjs', key + '.npy'))
            except (OSError, ValueError) as e:
                problems.append('%s %s: %s' % (name, key, e))
                continue
            p = compare(name, key, got, want)
            if p:
                problems.append(p)
        if problems:
            print('FAIL ' + '; '.join(problems))
            failed += 1
        else:
            passed += 1
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print('kept', work)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
