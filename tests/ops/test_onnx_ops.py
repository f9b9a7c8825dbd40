"""ONNX op conformance: kiln against ONNX Runtime, one small model per case.

Each case builds a single-node (or small multi-node) ONNX model with Debian's
python3-onnx (onnx.helper) and random inputs with numpy; the shared harness
(tests/ops/onnx_harness.py) runs it in ONNX Runtime (npm onnxruntime-node, through
tests/ops/ort_run.js) and in `kiln run`, and compares: same shape and dtype, ints and
bools exactly, floats within max|a-b| <= 1e-4 + 1e-3*|b| (b = ONNX Runtime) unless a
case says otherwise.

Constant inputs that ONNX models always give as initializers (shapes, axes, pads,
scales...) are initializers here too, so kiln sees them as compile-time values.

Usage: /usr/bin/python3 tests/ops/test_onnx_ops.py --kiln build/kiln [-k SUBSTR] [-j N]
       [--keep] [--list] [--node NODE]
Needs: /usr/bin/python3 with numpy and onnx (python3-onnx), node, and
  npm install --ignore-scripts --prefix build-ref-npm onnxruntime-node@1.30.0
(onnxruntime-node ships its native libraries inside the package, so --ignore-scripts
loses nothing on linux-x64). Prints "N passed, N failed" and exits 1 on failure; exits
77 (skipped) when a reference tool is missing.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_harness import (CASES, Case, F, K, TensorProto, add, bad, helper, i64, main, numpy_helper,  # noqa: E402
                          rint, rnd)


# ---- math --------------------------------------------------------------------------
def math_cases():
    x = rnd(2, 3, 4)
    pos = rnd(2, 3, 4, lo=0.1, hi=3)
    unit = rnd(2, 3, 4, lo=-0.95, hi=0.95)
    for op in ['Abs', 'Neg', 'Exp', 'Floor', 'Ceil', 'Sign', 'Sin', 'Cos', 'Tan', 'Tanh', 'Erf',
               'Sigmoid', 'Relu', 'Softplus', 'Softsign', 'Atan', 'Sinh', 'Cosh', 'Asinh']:
        add('math/%s' % op, op, [F(x * 3)])
    for op in ['Log', 'Sqrt', 'Reciprocal']:
        add('math/%s' % op, op, [F(pos)])
    for op in ['Asin', 'Acos', 'Atanh']:
        add('math/%s' % op, op, [F(unit)])
    add('math/Acosh', 'Acosh', [F(pos + 1)])
    add('math/Round', 'Round', [F(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], np.float32))])
    add('math/Abs_int', 'Abs', [F(rint(3, 4, dtype=np.int32))])
    add('math/Neg_int', 'Neg', [F(rint(3, 4))])
    add('math/Relu_int', 'Relu', [F(rint(3, 4, dtype=np.int32))], opset=14)
    add('math/LeakyRelu', 'LeakyRelu', [F(x)], {'alpha': 0.2})
    add('math/Elu', 'Elu', [F(x * 2)], {'alpha': 0.7})
    add('math/Selu', 'Selu', [F(x * 2)])
    add('math/Celu', 'Celu', [F(x * 2)], {'alpha': 1.5})
    add('math/HardSigmoid', 'HardSigmoid', [F(x * 4)], {'alpha': 0.3, 'beta': 0.4})
    add('math/HardSwish', 'HardSwish', [F(x * 5)])
    add('math/ThresholdedRelu', 'ThresholdedRelu', [F(x * 2)], {'alpha': 0.5})
    add('math/Shrink', 'Shrink', [F(x * 2)], {'bias': 0.2, 'lambd': 0.6})
    add('math/Mish', 'Mish', [F(x * 3)], opset=18)
    add('math/Gelu', 'Gelu', [F(x * 3)], opset=20)
    add('math/Gelu_tanh', 'Gelu', [F(x * 3)], {'approximate': 'tanh'}, opset=20)
    add('math/PRelu', 'PRelu', [F(rnd(2, 3, 4, 5)), F(rnd(3, 1, 1))])
    y = rnd(3, 4)
    for op in ['Add', 'Sub', 'Mul', 'Div']:
        add('math/%s_bcast' % op, op, [F(x), F(y if op != 'Div' else rnd(3, 4, lo=0.5, hi=2))])
        add('math/%s_scalar' % op, op, [F(x), K(np.array(1.5, np.float32))])
    add('math/Add_int_bcast', 'Add', [F(rint(2, 1, 4)), F(rint(3, 1))])
    add('math/Div_int', 'Div', [F(rint(3, 4, lo=-20, hi=20, dtype=np.int32)),
                                F(np.array([3, -3, 7, -2], np.int32))])
    add('math/Pow', 'Pow', [F(pos), F(rnd(3, 4, lo=-2, hi=2))])
    add('math/Pow_int_exp', 'Pow', [F(x), K(np.array(2, np.int64))])
    add('math/Max3', 'Max', [F(x), F(y), F(rnd(4))])
    add('math/Min2', 'Min', [F(x), F(y)])
    add('math/Sum3', 'Sum', [F(x), F(y), F(rnd(1, 4))])
    add('math/Mean2', 'Mean', [F(x), F(y)])
    a = rint(4, 5, lo=-20, hi=20)
    b = rint(4, 5, lo=-6, hi=6)
    b[b == 0] = 3
    add('math/Mod_int', 'Mod', [F(a), F(b)])
    add('math/Mod_fmod_int', 'Mod', [F(a), F(b)], {'fmod': 1})
    add('math/Mod_fmod_float', 'Mod', [F(x * 5), F(rnd(3, 4, lo=0.5, hi=2))], {'fmod': 1})
    add('math/BitShift_left', 'BitShift', [F(np.array([1, 2, 3, 200], np.uint8)), F(np.array([1, 2, 3, 1], np.uint8))],
        {'direction': 'LEFT'})
    add('math/BitShift_right', 'BitShift', [F(np.array([16, 255, 7, 1], np.uint32)), F(np.array([1, 3, 1, 0], np.uint32))],
        {'direction': 'RIGHT'})
    for op in ['Equal', 'Less', 'Greater', 'LessOrEqual', 'GreaterOrEqual']:
        add('math/%s' % op, op, [F(rint(3, 4, lo=-2, hi=2).astype(np.float32)), F(rint(4, lo=-2, hi=2).astype(np.float32))],
            opset=16)
    add('math/Equal_int', 'Equal', [F(rint(3, 4, lo=-2, hi=2)), F(rint(3, 4, lo=-2, hi=2))])
    p = rint(3, 4, lo=0, hi=2).astype(np.bool_)
    q = rint(4, lo=0, hi=2).astype(np.bool_)
    for op in ['And', 'Or', 'Xor']:
        add('math/%s' % op, op, [F(p), F(q)])
    add('math/Not', 'Not', [F(p)])
    add('math/BitwiseAnd', 'BitwiseAnd', [F(rint(3, 4, lo=0, hi=100, dtype=np.int32)), F(rint(4, lo=0, hi=100, dtype=np.int32))],
        opset=18)
    add('math/BitwiseNot', 'BitwiseNot', [F(rint(3, 4, lo=0, hi=100, dtype=np.uint8))], opset=18)
    add('math/Where', 'Where', [F(p), F(rnd(3, 4)), F(rnd(4))])
    add('math/Clip11', 'Clip', [F(x), K(np.array(-0.3, np.float32)), K(np.array(0.5, np.float32))], opset=11)
    add('math/Clip13_max_only', 'Clip', [F(x), None, K(np.array(0.2, np.float32))], opset=13)
    add('math/Clip13_feed_min', 'Clip', [F(x), F(np.array(-0.1, np.float32))], opset=13)
    add('math/Clip6_attrs', 'Clip', [F(x)], {'min': -0.4, 'max': 0.3}, opset=10)
    add('math/Clip_int', 'Clip', [F(rint(3, 4, lo=-10, hi=10, dtype=np.int32)), K(np.array(-3, np.int32)),
                                  K(np.array(4, np.int32))], opset=13)
    special = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.0], np.float32)
    add('math/IsNaN', 'IsNaN', [F(special)])
    add('math/IsInf', 'IsInf', [F(special)])
    add('math/IsInf_neg_only', 'IsInf', [F(special)], {'detect_positive': 0})
    add('math/Cast_f2i', 'Cast', [F(x * 10)], {'to': TensorProto.INT32})
    add('math/Cast_f2bool', 'Cast', [F(np.array([0, 1.5, -2, 0], np.float32))], {'to': TensorProto.BOOL})
    add('math/Cast_i2f', 'Cast', [F(rint(3, 4))], {'to': TensorProto.FLOAT})
    add('math/Cast_f2f16', 'Cast', [F(x)], {'to': TensorProto.FLOAT16})
    add('math/Cast_bool2i', 'Cast', [F(p)], {'to': TensorProto.INT64})
    h = rnd(3, 4, dtype=np.float16)
    add('math/Add_f16', 'Add', [F(h), F(rnd(4, dtype=np.float16))], atol=1e-3, rtol=2e-3)
    add('math/Mul_f64', 'Mul', [F(rnd(3, 4, dtype=np.float64)), F(rnd(3, 1, dtype=np.float64))])
    add('math/Relu_f16', 'Relu', [F(h)])
    add('math/Sigmoid_f16', 'Sigmoid', [F(h)], atol=1e-3, rtol=2e-3)
    add('math/Exp_f64', 'Exp', [F(rnd(3, 4, dtype=np.float64))])
    add('math/Add_uint8', 'Add', [F(rint(3, 4, lo=0, hi=200, dtype=np.uint8)), F(rint(4, lo=0, hi=200, dtype=np.uint8))])
    add('math/QuantizeLinear_u8', 'QuantizeLinear', [F(x * 4), K(np.array(0.02, np.float32)),
                                                     K(np.array(128, np.uint8))], opset=13)
    add('math/QuantizeLinear_s8_axis', 'QuantizeLinear', [F(x * 4), K(np.array([0.02, 0.05, 0.1], np.float32)),
                                                          K(np.array([0, -3, 5], np.int8))], opset=13)
    add('math/QuantizeLinear_no_zp', 'QuantizeLinear', [F(x), K(np.array(0.01, np.float32))], opset=13)
    add('math/DequantizeLinear_u8', 'DequantizeLinear', [F(rint(3, 4, lo=0, hi=255, dtype=np.uint8)),
                                                         K(np.array(0.1, np.float32)), K(np.array(100, np.uint8))],
        opset=13)
    add('math/DequantizeLinear_axis0', 'DequantizeLinear', [F(rint(3, 4, lo=-128, hi=127, dtype=np.int8)),
                                                            K(np.array([0.1, 0.2, 0.3], np.float32)),
                                                            K(np.array([1, 0, -1], np.int8))], {'axis': 0}, opset=13)
    add('math/DequantizeLinear_i32', 'DequantizeLinear', [F(rint(3, 4, lo=-10 ** 6, hi=10 ** 6, dtype=np.int32)),
                                                          K(np.array(0.001, np.float32))], opset=13)
    # Per-tensor Q/DQ on a rank-1 tensor: the default axis (1) does not exist there, and
    # ONNX ignores axis for a scalar (or one-element) scale.
    v = rnd(7) * 3
    for zp_name, zp in [('u8', np.array(130, np.uint8)), ('s8', np.array(-5, np.int8))]:
        for ax_name, attrs in [('default_axis', None), ('axis1', {'axis': 1})]:
            add('math/QuantizeLinear_rank1_%s_%s' % (zp_name, ax_name), 'QuantizeLinear',
                [F(v), K(np.array(0.02, np.float32)), K(zp)], attrs, opset=13)
            q = rint(7, lo=np.iinfo(zp.dtype).min, hi=np.iinfo(zp.dtype).max, dtype=zp.dtype)
            add('math/DequantizeLinear_rank1_%s_%s' % (zp_name, ax_name), 'DequantizeLinear',
                [F(q), K(np.array(0.05, np.float32)), K(zp)], attrs, opset=13)
    add('math/QuantizeLinear_rank1_one_element_scale', 'QuantizeLinear',
        [F(v), K(np.array([0.03], np.float32)), K(np.array([7], np.uint8))], opset=13)
    add('math/CastLike', 'CastLike', [F(rint(3, 4, dtype=np.int32)), F(np.zeros(1, np.float64))], opset=15)


# ---- nn ----------------------------------------------------------------------------
def nn_cases():
    x = rnd(2, 4, 7, 6)
    add('nn/Conv_basic', 'Conv', [F(x), K(rnd(3, 4, 3, 3)), K(rnd(3))])
    add('nn/Conv_groups_strides_dil_pads', 'Conv', [F(x), K(rnd(6, 2, 3, 2)), K(rnd(6))],
        {'group': 2, 'strides': [2, 1], 'dilations': [1, 2], 'pads': [1, 0, 2, 1]})
    add('nn/Conv_depthwise', 'Conv', [F(x), K(rnd(4, 1, 3, 3))], {'group': 4, 'pads': [1, 1, 1, 1]})
    for ap in ['SAME_UPPER', 'SAME_LOWER', 'VALID']:
        add('nn/Conv_%s' % ap, 'Conv', [F(x), K(rnd(5, 4, 4, 3))], {'auto_pad': ap, 'strides': [2, 2]})
    add('nn/Conv_1d', 'Conv', [F(rnd(2, 3, 10)), K(rnd(4, 3, 3))], {'strides': [2], 'pads': [1, 1]})
    add('nn/Conv_3d', 'Conv', [F(rnd(1, 2, 5, 4, 4)), K(rnd(3, 2, 2, 3, 2))], {'pads': [0, 1, 0, 1, 0, 1]})
    add('nn/Conv_weight_feed', 'Conv', [F(x), F(rnd(3, 4, 1, 1))])
    xt = rnd(1, 4, 3, 4)
    add('nn/ConvTranspose_basic', 'ConvTranspose', [F(xt), K(rnd(4, 3, 3, 3)), K(rnd(3))])
    add('nn/ConvTranspose_stride_pads_outpad', 'ConvTranspose', [F(xt), K(rnd(4, 2, 3, 3))],
        {'strides': [2, 2], 'pads': [1, 0, 1, 1], 'output_padding': [1, 0]})
    add('nn/ConvTranspose_group_dil', 'ConvTranspose', [F(xt), K(rnd(4, 3, 2, 2))],
        {'group': 2, 'dilations': [2, 1], 'strides': [1, 2]})
    add('nn/ConvTranspose_output_shape', 'ConvTranspose', [F(xt), K(rnd(4, 2, 3, 3))],
        {'strides': [2, 2], 'output_shape': [7, 9]})
    add('nn/ConvTranspose_same_upper', 'ConvTranspose', [F(xt), K(rnd(4, 2, 3, 3))],
        {'strides': [2, 2], 'auto_pad': 'SAME_UPPER'})
    add('nn/ConvTranspose_same_lower', 'ConvTranspose', [F(xt), K(rnd(4, 2, 4, 4))],
        {'strides': [2, 2], 'auto_pad': 'SAME_LOWER'})
    add('nn/ConvTranspose_1d', 'ConvTranspose', [F(rnd(2, 3, 5)), K(rnd(3, 2, 3))], {'strides': [3]})
    add('nn/MatMul_2d', 'MatMul', [F(rnd(3, 4)), F(rnd(4, 5))])
    add('nn/MatMul_batch_bcast', 'MatMul', [F(rnd(2, 1, 3, 4)), F(rnd(3, 4, 5))])
    add('nn/MatMul_vec_mat', 'MatMul', [F(rnd(4)), F(rnd(2, 4, 5))])
    add('nn/MatMul_mat_vec', 'MatMul', [F(rnd(2, 3, 4)), F(rnd(4))])
    add('nn/MatMul_weights', 'MatMul', [F(rnd(2, 3, 4)), K(rnd(4, 6))])
    add('nn/MatMul_int', 'MatMul', [F(rint(3, 4, dtype=np.int32)), F(rint(4, 2, dtype=np.int32))])
    add('nn/Gemm_plain', 'Gemm', [F(rnd(3, 4)), K(rnd(4, 5)), K(rnd(5))])
    add('nn/Gemm_trans_alpha_beta', 'Gemm', [F(rnd(4, 3)), K(rnd(5, 4)), K(rnd(3, 5))],
        {'transA': 1, 'transB': 1, 'alpha': 0.5, 'beta': -2.0})
    add('nn/Gemm_no_c', 'Gemm', [F(rnd(3, 4)), F(rnd(4, 2))], opset=13)
    xp = rnd(2, 3, 7, 8)
    add('nn/MaxPool_basic', 'MaxPool', [F(xp)], {'kernel_shape': [2, 2], 'strides': [2, 2]})
    add('nn/MaxPool_pads_ceil', 'MaxPool', [F(xp)], {'kernel_shape': [3, 3], 'strides': [2, 2], 'pads': [1, 1, 1, 0],
                                                     'ceil_mode': 1})
    add('nn/MaxPool_dilations', 'MaxPool', [F(xp)], {'kernel_shape': [2, 3], 'dilations': [2, 2]})
    add('nn/MaxPool_same_upper', 'MaxPool', [F(xp)], {'kernel_shape': [3, 3], 'strides': [2, 2], 'auto_pad': 'SAME_UPPER'})
    add('nn/MaxPool_same_lower', 'MaxPool', [F(xp)], {'kernel_shape': [2, 2], 'strides': [2, 2], 'auto_pad': 'SAME_LOWER'})
    add('nn/MaxPool_indices', 'MaxPool', [F(xp)], {'kernel_shape': [2, 2], 'strides': [2, 2]}, n_out=2)
    add('nn/MaxPool_1d', 'MaxPool', [F(rnd(2, 3, 9))], {'kernel_shape': [3], 'strides': [2]})
    add('nn/AveragePool_basic', 'AveragePool', [F(xp)], {'kernel_shape': [3, 3], 'strides': [2, 2]})
    add('nn/AveragePool_pads_exclude', 'AveragePool', [F(xp)], {'kernel_shape': [3, 3], 'pads': [1, 1, 1, 1]})
    add('nn/AveragePool_pads_include', 'AveragePool', [F(xp)],
        {'kernel_shape': [3, 3], 'pads': [1, 1, 1, 1], 'count_include_pad': 1})
    add('nn/AveragePool_ceil', 'AveragePool', [F(xp)], {'kernel_shape': [3, 3], 'strides': [2, 2], 'ceil_mode': 1})
    add('nn/AveragePool_ceil_include', 'AveragePool', [F(xp)],
        {'kernel_shape': [3, 3], 'strides': [2, 2], 'ceil_mode': 1, 'pads': [1, 1, 0, 0], 'count_include_pad': 1})
    add('nn/AveragePool_same_upper', 'AveragePool', [F(xp)], {'kernel_shape': [3, 2], 'strides': [2, 2],
                                                              'auto_pad': 'SAME_UPPER'})
    add('nn/LpPool', 'LpPool', [F(xp)], {'kernel_shape': [2, 2], 'strides': [2, 2], 'p': 3}, opset=18)
    add('nn/GlobalAveragePool', 'GlobalAveragePool', [F(xp)])
    add('nn/GlobalMaxPool', 'GlobalMaxPool', [F(xp)])
    add('nn/GlobalLpPool', 'GlobalLpPool', [F(xp)], {'p': 2})
    c = 3
    add('nn/BatchNormalization', 'BatchNormalization',
        [F(xp), K(rnd(c)), K(rnd(c)), K(rnd(c)), K(rnd(c, lo=0.5, hi=2))], {'epsilon': 1e-3}, opset=15)
    add('nn/BatchNormalization_2d', 'BatchNormalization',
        [F(rnd(5, c)), K(rnd(c)), K(rnd(c)), K(rnd(c)), K(rnd(c, lo=0.5, hi=2))])
    add('nn/InstanceNormalization', 'InstanceNormalization', [F(xp), K(rnd(c)), K(rnd(c))], {'epsilon': 1e-4})
    add('nn/LayerNormalization', 'LayerNormalization', [F(rnd(2, 3, 8)), K(rnd(8)), K(rnd(8))])
    add('nn/LayerNormalization_axis1_outputs', 'LayerNormalization', [F(rnd(2, 3, 4)), K(rnd(3, 4))],
        {'axis': 1}, n_out=3)
    add('nn/GroupNormalization', 'GroupNormalization', [F(rnd(2, 6, 3, 3)), K(rnd(6)), K(rnd(6))],
        {'num_groups': 3}, opset=21)
    add('nn/MeanVarianceNormalization', 'MeanVarianceNormalization', [F(xp)])
    add('nn/LpNormalization', 'LpNormalization', [F(xp)], {'axis': 1})
    add('nn/LpNormalization_p1', 'LpNormalization', [F(xp)], {'axis': -1, 'p': 1})
    # A vector of zeros has norm 0: ONNX Runtime gives zeros there, not 0/0.
    xz = rnd(3, 5)
    xz[1] = 0
    for p in [1, 2]:
        add('nn/LpNormalization_p%d_zero_row' % p, 'LpNormalization', [F(xz)], {'axis': 1, 'p': p})
    xz4 = rnd(2, 3, 4)
    xz4[:, :, 2] = 0
    add('nn/LpNormalization_p2_zero_axis1', 'LpNormalization', [F(xz4)], {'axis': 1})
    add('nn/LRN', 'LRN', [F(rnd(2, 6, 3, 3))], {'size': 3, 'alpha': 1e-2, 'beta': 0.6, 'bias': 1.5})
    s = rnd(2, 3, 4) * 3
    add('nn/Softmax13_axis1', 'Softmax', [F(s)], {'axis': 1}, opset=13)
    add('nn/Softmax13_default', 'Softmax', [F(s)], opset=13)
    add('nn/Softmax11_coerce', 'Softmax', [F(s)], {'axis': 1}, opset=11)
    add('nn/Softmax11_default', 'Softmax', [F(s)], opset=11)
    add('nn/LogSoftmax13', 'LogSoftmax', [F(s)], {'axis': 0}, opset=13)
    add('nn/LogSoftmax11', 'LogSoftmax', [F(s)], {'axis': 2}, opset=11)
    add('nn/Hardmax13', 'Hardmax', [F(np.round(s))], {'axis': 1}, opset=13)
    add('nn/Dropout_mask', 'Dropout', [F(s)], n_out=2, opset=13)
    add('nn/Dropout_ratio', 'Dropout', [F(s), K(np.array(0.3, np.float32))], opset=13)
    add('nn/Softmax_f16', 'Softmax', [F(s.astype(np.float16))], opset=13, atol=1e-3, rtol=2e-3)
    add('nn/MatMul_f16', 'MatMul', [F(rnd(3, 4, dtype=np.float16)), F(rnd(4, 5, dtype=np.float16))], atol=2e-3,
        rtol=5e-3)
    add('nn/MaxPool_f16', 'MaxPool', [F(rnd(1, 2, 4, 4, dtype=np.float16))], {'kernel_shape': [2, 2]})
    add('nn/Flatten', 'Flatten', [F(s)], {'axis': 2})
    add('nn/Flatten_neg', 'Flatten', [F(s)], {'axis': -3})
    add('nn/Flatten_0', 'Flatten', [F(s)], {'axis': 0})
    add('nn/Einsum_matmul', 'Einsum', [F(rnd(3, 4)), F(rnd(4, 5))], {'equation': 'ij,jk->ik'})
    add('nn/Einsum_batch_transposed', 'Einsum', [F(rnd(2, 3, 4)), F(rnd(2, 5, 4))], {'equation': 'bij,bkj->bik'})
    add('nn/Einsum_trace_free_sum', 'Einsum', [F(rnd(3, 4))], {'equation': 'ij->'})
    add('nn/Einsum_transpose', 'Einsum', [F(rnd(2, 3, 4))], {'equation': 'abc->cab'})
    add('nn/Einsum_outer', 'Einsum', [F(rnd(3)), F(rnd(4))], {'equation': 'i,j->ij'})
    add('nn/Einsum_implicit', 'Einsum', [F(rnd(3, 4)), F(rnd(4, 2))], {'equation': 'ij,jk'})
    add('nn/Einsum_ellipsis', 'Einsum', [F(rnd(2, 3, 4)), F(rnd(4, 5))], {'equation': '...ij,jk->...ik'})
    add('nn/Einsum_three', 'Einsum', [F(rnd(2, 3)), F(rnd(3, 4)), F(rnd(4, 2))], {'equation': 'ab,bc,cd->ad'})
    add('nn/Einsum_attention', 'Einsum', [F(rnd(2, 4, 3, 5)), F(rnd(2, 6, 3, 5))], {'equation': 'bqhd,bkhd->bhqk'})


# ---- tensor ------------------------------------------------------------------------
def tensor_cases():
    x = rnd(2, 3, 4)
    add('tensor/Reshape', 'Reshape', [F(x), K(i64(4, -1))])
    add('tensor/Reshape_zero', 'Reshape', [F(x), K(i64(0, 0, 2, 2))])
    add('tensor/Reshape_allowzero', 'Reshape', [F(np.zeros((0, 3), np.float32)), K(i64(3, 0))], {'allowzero': 1},
        opset=14)
    add('tensor/Transpose_default', 'Transpose', [F(x)])
    add('tensor/Transpose_perm', 'Transpose', [F(x)], {'perm': [1, 2, 0]})
    add('tensor/Concat', 'Concat', [F(x), F(rnd(2, 1, 4)), F(rnd(2, 2, 4))], {'axis': 1})
    add('tensor/Concat_neg', 'Concat', [F(x), F(rnd(2, 3, 2))], {'axis': -1})
    add('tensor/Split11_attr', 'Split', [F(rnd(7, 2))], {'axis': 0, 'split': [2, 5]}, n_out=2, opset=11)
    add('tensor/Split13_input', 'Split', [F(rnd(2, 6)), K(i64(1, 2, 3))], {'axis': 1}, n_out=3, opset=13)
    add('tensor/Split13_equal', 'Split', [F(rnd(2, 6))], {'axis': 1}, n_out=3, opset=13)
    add('tensor/Split18_num_outputs', 'Split', [F(rnd(7, 2))], {'axis': 0, 'num_outputs': 3}, n_out=3, opset=18)
    y = rnd(5, 6, 4)
    add('tensor/Slice_basic', 'Slice', [F(y), K(i64(1, 0)), K(i64(4, 3))])
    add('tensor/Slice_axes_steps', 'Slice', [F(y), K(i64(0, 1)), K(i64(10, 6)), K(i64(2, 1)), K(i64(2, 3))])
    add('tensor/Slice_neg_step', 'Slice', [F(y), K(i64(-1, 4)), K(i64(-10 ** 18, 0)), K(i64(0, 1)), K(i64(-2, -1))])
    add('tensor/Slice_neg_start_clamp', 'Slice', [F(y), K(i64(-100, -3)), K(i64(100, -1)), K(i64(0, 1))])
    add('tensor/Slice_empty', 'Slice', [F(y), K(i64(3)), K(i64(1)), K(i64(0))])
    add('tensor/Slice_absent_axes', 'Slice', [F(y), K(i64(1)), K(i64(4)), None, K(i64(2))])
    add('tensor/Slice_int64_max', 'Slice', [F(y), K(i64(2)), K(i64(2 ** 63 - 1)), K(i64(-1))])
    add('tensor/Slice9_attrs', 'Slice', [F(y)], {'starts': [1, 0], 'ends': [3, -1], 'axes': [0, 2]}, opset=9)
    add('tensor/Squeeze_attr', 'Squeeze', [F(rnd(1, 3, 1, 2))], {'axes': [0, 2]}, opset=11)
    add('tensor/Squeeze_input', 'Squeeze', [F(rnd(1, 3, 1, 2)), K(i64(-2))], opset=13)
    add('tensor/Squeeze_all', 'Squeeze', [F(rnd(1, 3, 1, 2))], opset=13)
    add('tensor/Unsqueeze_attr', 'Unsqueeze', [F(x)], {'axes': [0, 4]}, opset=11)
    add('tensor/Unsqueeze_input', 'Unsqueeze', [F(x), K(i64(1, -1))], opset=13)
    add('tensor/Expand', 'Expand', [F(rnd(3, 1)), K(i64(2, 3, 4))])
    add('tensor/Expand_smaller_shape', 'Expand', [F(rnd(2, 3, 1)), K(i64(1, 5))])
    add('tensor/Tile', 'Tile', [F(x), K(i64(2, 1, 3))])
    add('tensor/Tile_int', 'Tile', [F(rint(2, 2)), K(i64(3, 2))])
    z = rnd(3, 4)
    add('tensor/Pad_constant', 'Pad', [F(z), K(i64(1, 2, 0, 1)), K(np.array(1.5, np.float32))], opset=13)
    add('tensor/Pad_negative', 'Pad', [F(z), K(i64(-1, 1, 1, -2))], opset=13)
    add('tensor/Pad_reflect', 'Pad', [F(z), K(i64(2, 1, 1, 3))], {'mode': 'reflect'}, opset=13)
    add('tensor/Pad_edge', 'Pad', [F(z), K(i64(2, 1, 1, 3))], {'mode': 'edge'}, opset=13)
    add('tensor/Pad_wrap', 'Pad', [F(z), K(i64(2, 1, 1, 3))], {'mode': 'wrap'}, opset=19)
    add('tensor/Pad_axes', 'Pad', [F(x), K(i64(1, 2)), None, K(i64(-1))], opset=18)
    add('tensor/Pad2_attrs', 'Pad', [F(z)], {'pads': [0, 1, 1, 0], 'value': 2.0}, opset=10)
    add('tensor/Shape', 'Shape', [F(x)])
    add('tensor/Shape15_start_end', 'Shape', [F(x)], {'start': 1, 'end': -1}, opset=15)
    add('tensor/Size', 'Size', [F(x)])
    add('tensor/Identity', 'Identity', [F(x)])
    add('tensor/ConstantOfShape', 'ConstantOfShape', [K(i64(2, 3))],
        {'value': numpy_helper.from_array(np.array([7], np.int32))})
    add('tensor/ConstantOfShape_default', 'ConstantOfShape', [K(i64(3))])
    add('tensor/Range_float', 'Range', [K(np.array(0.5, np.float32)), K(np.array(3.2, np.float32)),
                                        K(np.array(0.3, np.float32))])
    add('tensor/Range_int', 'Range', [K(np.array(10, np.int64)), K(np.array(-3, np.int64)), K(np.array(-4, np.int64))])
    d = rnd(1, 8, 2, 3)
    add('tensor/DepthToSpace_DCR', 'DepthToSpace', [F(d)], {'blocksize': 2})
    add('tensor/DepthToSpace_CRD', 'DepthToSpace', [F(d)], {'blocksize': 2, 'mode': 'CRD'})
    add('tensor/SpaceToDepth', 'SpaceToDepth', [F(rnd(2, 2, 4, 6))], {'blocksize': 2})
    add('tensor/EyeLike', 'EyeLike', [F(rnd(3, 5))], {'k': 1})
    add('tensor/EyeLike_dtype', 'EyeLike', [F(rnd(4, 3))], {'k': -1, 'dtype': TensorProto.INT32})
    add('tensor/Trilu_upper', 'Trilu', [F(rnd(2, 4, 5))], opset=14)
    add('tensor/Trilu_lower_k', 'Trilu', [F(rnd(4, 5)), K(np.array(-1, np.int64))], {'upper': 0}, opset=14)
    # A Constant node feeding an op, and a Shape -> Gather -> Reshape chain.
    cnode = helper.make_node('Constant', [], ['c'], value=numpy_helper.from_array(rnd(3, 4)))
    mul = helper.make_node('Mul', ['in0', 'c'], ['out0'])
    CASES.append(Case('tensor/Constant_node', [cnode, mul], [('in0', F(rnd(2, 3, 4)))]))
    nodes = [helper.make_node('Shape', ['in0'], ['s']),
             helper.make_node('Gather', ['s', 'idx'], ['g'], axis=0),
             helper.make_node('Concat', ['g', 'minus1'], ['shp'], axis=0),
             helper.make_node('Reshape', ['in0', 'shp'], ['out0'])]
    CASES.append(Case('tensor/shape_chain', nodes, [('in0', F(rnd(2, 3, 4))), ('idx', K(i64(0))),
                                                    ('minus1', K(i64(-1)))]))


# ---- index -------------------------------------------------------------------------
def index_cases():
    x = rnd(3, 4, 5)
    add('index/Gather_axis0', 'Gather', [F(x), F(i64(2, 0, -1))])
    add('index/Gather_axis1_2d', 'Gather', [F(x), F(np.array([[0, 3], [-2, 1]], np.int32))], {'axis': 1})
    add('index/Gather_scalar', 'Gather', [F(x), F(np.array(-1, np.int64))], {'axis': 2})
    add('index/Gather_const_table', 'Gather', [K(rnd(10, 3)), F(rint(2, 3, lo=0, hi=10))])
    add('index/GatherElements', 'GatherElements', [F(x), F(rint(3, 2, 5, lo=-4, hi=4))], {'axis': 1})
    add('index/GatherND', 'GatherND', [F(x), F(np.array([[0, 1], [2, -1]], np.int64))])
    add('index/GatherND_batch', 'GatherND', [F(x), F(np.array([[1], [3], [0]], np.int64))], {'batch_dims': 1})
    add('index/GatherND_full', 'GatherND', [F(x), F(np.array([[0, 1, 2], [2, 3, 4]], np.int64))])
    data = rnd(4, 3)
    add('index/ScatterND', 'ScatterND', [F(data), F(np.array([[1], [3]], np.int64)), F(rnd(2, 3))])
    add('index/ScatterND_add', 'ScatterND', [F(data), F(np.array([[1], [1], [-1]], np.int64)), F(rnd(3, 3))],
        {'reduction': 'add'}, opset=16)
    add('index/ScatterND_elems', 'ScatterND', [F(data), F(np.array([[0, 2], [3, 1]], np.int64)), F(rnd(2))])
    add('index/ScatterElements', 'ScatterElements', [F(data), F(np.array([[1, 0, 2], [3, 2, 0]], np.int64)),
                                                     F(rnd(2, 3))], {'axis': 0})
    add('index/ScatterElements_mul', 'ScatterElements', [F(data), F(np.array([[1, 1], [0, 0]], np.int64)),
                                                         F(rnd(2, 2))], {'axis': 1, 'reduction': 'mul'}, opset=16)
    add('index/ScatterElements_max', 'ScatterElements', [F(data), F(np.array([[1, 1], [0, -1]], np.int64)),
                                                         F(rnd(2, 2))], {'axis': 1, 'reduction': 'max'}, opset=18)
    add('index/OneHot', 'OneHot', [F(i64(0, 2, -1, 5)), K(np.array(4, np.int64)), K(np.array([0.5, 2.0], np.float32))])
    add('index/OneHot_axis0', 'OneHot', [F(np.array([[1, 0], [2, -3]], np.int64)), K(np.array([3], np.int64)),
                                         K(np.array([0, 1], np.int64))], {'axis': 0})
    add('index/OneHot_float_indices', 'OneHot', [F(np.array([1.7, 0, 2], np.float32)), K(np.array(3, np.int64)),
                                                 K(np.array([0, 1], np.int64))])
    t = np.round(rnd(3, 6) * 3)
    add('index/ArgMax', 'ArgMax', [F(t)], {'axis': 1})
    add('index/ArgMax_last_nokeep', 'ArgMax', [F(t)], {'axis': 1, 'select_last_index': 1, 'keepdims': 0})
    add('index/ArgMin', 'ArgMin', [F(t)], {'axis': 0})
    add('index/ArgMin_last', 'ArgMin', [F(t)], {'axis': -1, 'select_last_index': 1})
    add('index/ArgMax_int', 'ArgMax', [F(rint(4, 5))], {'axis': 0})
    v = rnd(3, 7)
    add('index/TopK_largest', 'TopK', [F(v), K(i64(3))], n_out=2)
    add('index/TopK_smallest_axis0', 'TopK', [F(v), K(i64(2))], {'axis': 0, 'largest': 0}, n_out=2)
    add('index/TopK_ties', 'TopK', [F(np.round(v * 2)), K(i64(4))], n_out=2)
    add('index/TopK_dynamic_k', 'TopK', [F(v), F(i64(5))], n_out=2)
    add('index/CumSum', 'CumSum', [F(x), K(np.array(1, np.int32))])
    add('index/CumSum_exclusive', 'CumSum', [F(x), K(np.array(-1, np.int64))], {'exclusive': 1})
    add('index/CumSum_reverse', 'CumSum', [F(x), K(np.array(0, np.int64))], {'reverse': 1})
    add('index/CumSum_rev_excl_int', 'CumSum', [F(rint(3, 4)), K(np.array(1, np.int64))], {'reverse': 1, 'exclusive': 1})
    add('index/NonZero', 'NonZero', [F(np.array([[1, 0, 3], [0, 0, 2]], np.float32))])
    add('index/NonZero_bool', 'NonZero', [F(rint(2, 3, 4, lo=0, hi=2).astype(np.bool_))])
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                       [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]]], np.float32)
    add('index/NonMaxSuppression', 'NonMaxSuppression',
        [F(boxes), F(scores), K(i64(3)), K(np.array([0.5], np.float32)), K(np.array([0.0], np.float32))])
    add('index/NonMaxSuppression_center', 'NonMaxSuppression',
        [F(np.array([[[0.5, 0.5, 1, 1], [0.5, 0.6, 1, 1], [0.5, 10.5, 1, 1]]], np.float32)),
         F(np.array([[[0.9, 0.8, 0.7]]], np.float32)), K(i64(10)), K(np.array([0.3], np.float32))],
        {'center_point_box': 1})


# ---- reduce ------------------------------------------------------------------------
def reduce_cases():
    x = rnd(2, 3, 4, lo=0.1, hi=2)
    ops = ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2',
           'ReduceLogSum', 'ReduceLogSumExp', 'ReduceSumSquare']
    for op in ops:
        if op == 'ReduceSum':
            add('reduce/%s_axes_input' % op, op, [F(x), K(i64(0, -1))], opset=13)
        else:
            add('reduce/%s_attr' % op, op, [F(x)], {'axes': [0, 2]}, opset=13)
        add('reduce/%s_all_nokeep' % op, op, [F(x)], {'keepdims': 0}, opset=13)
        add('reduce/%s_18_input' % op, op, [F(x), K(i64(1))], opset=18)
    add('reduce/ReduceSum_noop', 'ReduceSum', [F(x), K(np.zeros(0, np.int64))], {'noop_with_empty_axes': 1}, opset=13)
    add('reduce/ReduceSum_int', 'ReduceSum', [F(rint(3, 4)), K(i64(1))], opset=13)
    add('reduce/ReduceMax_int', 'ReduceMax', [F(rint(3, 4, dtype=np.int32))], {'axes': [1], 'keepdims': 0}, opset=13)
    add('reduce/ReduceMean_int', 'ReduceMean', [F(rint(3, 4, lo=0, hi=100, dtype=np.int32))], {'axes': [1]},
        opset=13)


# ---- resize ------------------------------------------------------------------------
def resize_cases():
    x = rnd(1, 2, 4, 5)
    coords = ['half_pixel', 'asymmetric', 'align_corners', 'pytorch_half_pixel', 'tf_half_pixel_for_nn']
    for ct in coords:
        for nm in ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil']:
            add('resize/nearest_%s_%s_up' % (ct, nm), 'Resize',
                [F(x), None, K(np.array([1, 1, 2.0, 1.7], np.float32))],
                {'mode': 'nearest', 'coordinate_transformation_mode': ct, 'nearest_mode': nm}, opset=13)
        add('resize/nearest_%s_down' % ct, 'Resize', [F(x), None, K(np.array([1, 1, 0.5, 0.6], np.float32))],
            {'mode': 'nearest', 'coordinate_transformation_mode': ct}, opset=13)
    for ct in coords[:4] + ['half_pixel_symmetric']:
        add('resize/linear_%s_up' % ct, 'Resize', [F(x), None, K(np.array([1, 1, 2.5, 1.5], np.float32))],
            {'mode': 'linear', 'coordinate_transformation_mode': ct}, opset=19 if ct == 'half_pixel_symmetric' else 13)
        add('resize/linear_%s_sizes_down' % ct, 'Resize', [F(x), None, None, K(i64(1, 2, 3, 2))],
            {'mode': 'linear', 'coordinate_transformation_mode': ct}, opset=19 if ct == 'half_pixel_symmetric' else 13)
        add('resize/cubic_%s' % ct, 'Resize', [F(x), None, K(np.array([1, 1, 1.5, 2.0], np.float32))],
            {'mode': 'cubic', 'coordinate_transformation_mode': ct}, opset=19 if ct == 'half_pixel_symmetric' else 13)
    add('resize/cubic_exclude_outside', 'Resize', [F(x), None, K(np.array([1, 1, 0.8, 1.6], np.float32))],
        {'mode': 'cubic', 'exclude_outside': 1, 'cubic_coeff_a': -0.5}, opset=13)
    add('resize/linear_3d', 'Resize', [F(rnd(1, 2, 3, 4, 4)), None, K(np.array([1, 1, 2, 1.5, 0.5], np.float32))],
        {'mode': 'linear'}, opset=13)
    add('resize/nearest_2d', 'Resize', [F(rnd(4, 6)), None, None, K(i64(7, 3))], {'mode': 'nearest'}, opset=13)
    add('resize/tf_crop_and_resize', 'Resize',
        [F(x), K(np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], np.float32)), None, K(i64(1, 2, 3, 4))],
        {'mode': 'linear', 'coordinate_transformation_mode': 'tf_crop_and_resize', 'extrapolation_value': -1.0},
        opset=13)
    add('resize/axes_keep_aspect', 'Resize', [F(x), None, None, K(i64(7, 7))],
        {'mode': 'linear', 'axes': [2, 3], 'keep_aspect_ratio_policy': 'not_larger'}, opset=18)
    add('resize/opset11_roi_empty', 'Resize', [F(x), K(np.zeros(0, np.float32)), K(np.array([1, 1, 2, 2], np.float32))],
        {'mode': 'nearest'}, opset=11)
    add('resize/opset10_nearest', 'Resize', [F(x), K(np.array([1, 1, 2.0, 1.5], np.float32))], {'mode': 'nearest'},
        opset=10)
    add('resize/opset10_nearest_down', 'Resize', [F(x), K(np.array([1, 1, 0.5, 0.6], np.float32))],
        {'mode': 'nearest'}, opset=10)
    add('resize/opset10_linear', 'Resize', [F(x), K(np.array([1, 1, 2.0, 1.5], np.float32))], {'mode': 'linear'},
        opset=10)
    add('resize/Upsample9', 'Upsample', [F(x), K(np.array([1, 1, 2.0, 3.0], np.float32))], {'mode': 'nearest'},
        opset=9)
    add('resize/Upsample9_linear', 'Upsample', [F(x), K(np.array([1, 1, 2.0, 2.0], np.float32))], {'mode': 'linear'},
        opset=9)
    add('resize/linear_f16', 'Resize', [F(rnd(1, 1, 3, 4, dtype=np.float16)), None,
                                        K(np.array([1, 1, 2, 2], np.float32))], {'mode': 'linear'}, opset=13,
        atol=2e-3, rtol=5e-3)
    add('resize/nearest_int', 'Resize', [F(rint(1, 1, 3, 3, dtype=np.int32)), None,
                                         K(np.array([1, 1, 2, 2], np.float32))], opset=13)


# ---- control flow ------------------------------------------------------------------
def scan8_case(name, lens, directions, batch=2, seq=4):
    """Scan at opset 8: inputs [sequence_lens], state [batch, 2], two scan inputs
    [batch, seq, 2] (the second scanned in `directions`), and an outer value the body
    reads. Body: s' = s * w + x - x2; outputs the new state and x * s."""
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node('Mul', ['s_in', 'w'], ['sw']), helper.make_node('Add', ['sw', 'x_t'], ['a']),
         helper.make_node('Sub', ['a', 'x2_t'], ['s_out']), helper.make_node('Mul', ['x_t', 's_in'], ['y_t'])],
        'body', [vi('s_in', f, [2]), vi('x_t', f, [2]), vi('x2_t', f, [2])], [vi('s_out', f, [2]), vi('y_t', f, [2])])
    ins = ['lens' if lens is not None else '', 's0', 'x', 'x2']
    attrs = {'body': body, 'num_scan_inputs': 2}
    if directions is not None:
        attrs['directions'] = directions
    node = helper.make_node('Scan', ins, ['out0', 'out1'], **attrs)
    inputs = [('lens', F(np.array(lens, np.int64)))] if lens is not None else []
    inputs += [('s0', F(rnd(batch, 2))), ('x', F(rnd(batch, seq, 2))), ('x2', F(rnd(batch, seq, 2))),
               ('w', K(np.array([0.5, -1.5], np.float32)))]
    CASES.append(Case(name, [node], inputs, n_out=2, opset=8))


def control_cases():
    scan8_case('control/Scan8_batch2', None, None)
    scan8_case('control/Scan8_batch2_reverse', None, [0, 1])
    scan8_case('control/Scan8_batch2_sequence_lens', [4, 2], None)
    scan8_case('control/Scan8_batch2_sequence_lens_reverse', [1, 3], [1, 0])
    scan8_case('control/Scan8_batch3_sequence_lens_full', [4, 4, 4], [0, 1], batch=3)
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    body = helper.make_graph([helper.make_node('Add', ['s_in', 'x_t'], ['s_out'])], 'body',
                             [vi('s_in', f, [2]), vi('x_t', f, [2])], [vi('s_out', f, [2])])
    bad('Scan8_sequence_lens_too_long', 'Scan', [F(i64(5, 2)), F(rnd(2, 2)), F(rnd(2, 4, 2))],
        {'body': body, 'num_scan_inputs': 1}, 'sequence_lens[0] = 5 is outside [0, 4]', opset=8)
    bad('Scan8_batch_mismatch', 'Scan', [None, F(rnd(3, 2)), F(rnd(2, 4, 2))],
        {'body': body, 'num_scan_inputs': 1}, 'scan input 0 has batch size 2, the earlier inputs 3', opset=8)


for f in [math_cases, nn_cases, tensor_cases, index_cases, reduce_cases, resize_cases, control_cases]:
    f()

if __name__ == '__main__':
    sys.exit(main(__doc__))
