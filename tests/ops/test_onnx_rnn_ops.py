"""ONNX recurrent and signal op conformance: kiln against ONNX Runtime.

Single-node models for LSTM, GRU and RNN (src/ops/ops_onnx_rnn.c): every direction,
layout 0 and 1, batch > 1, with and without the optional inputs (B, sequence_lens,
initial_h, initial_c, P), clip, input_forget, linear_before_reset, non-default
activations, and outputs left out; and for DFT (opsets 17 and 20), STFT and the
Hann/Hamming/Blackman window ops (src/ops/ops_onnx_signal.c): onesided or not, real and complex signals, window
and/or frame_length, constant and fed windows. Driven by the shared harness tests/ops/onnx_harness.py:
ONNX Runtime (npm onnxruntime-node, one node process for all cases through
tests/ops/ort_run.js) and `kiln run`; outputs must agree within
max|a-b| <= 1e-4 + 1e-3*|b| (b = ONNX Runtime).

Usage: /usr/bin/python3 tests/ops/test_onnx_rnn_ops.py --kiln build/kiln [-k SUBSTR] [-j N]
       [--keep] [--list] [--node NODE]
Prints "N passed, N failed" and exits 1 on failure; 77 (skipped) when a reference tool
is missing.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_harness import (CASES, Case, F, K, TensorProto, add, bad, helper, i32, i64, main,  # noqa: E402
                          rnd)



# ---- recurrent layers ----------------------------------------------------------------
GATES = {'LSTM': 4, 'GRU': 3, 'RNN': 1}


def rnn_case(name, op, T=3, B=2, I=4, H=5, direction='forward', layout=0, bias=False, lens=None, init_h=False,
             init_c=False, peep=False, attrs=None, outs=None, weights=K, dtype=np.float32, opset=14):
    """One recurrent node. `outs` lists the output positions to produce (the others
    are written as ""); lens: sequence_lens values or None."""
    D = 2 if direction == 'bidirectional' else 1
    G = GATES[op]
    x = rnd(T, B, I, dtype=dtype) if layout == 0 else rnd(B, T, I, dtype=dtype)
    ins = [F(x), weights(rnd(D, G * H, I, dtype=dtype)), weights(rnd(D, G * H, H, dtype=dtype))]
    ins.append(weights(rnd(D, 2 * G * H, dtype=dtype)) if bias else None)
    ins.append(F(i32(*lens)) if lens is not None else None)
    sshape = (D, B, H) if layout == 0 else (B, D, H)
    ins.append(F(rnd(*sshape, dtype=dtype)) if init_h else None)
    if op == 'LSTM':
        ins.append(F(rnd(*sshape, dtype=dtype)) if init_c else None)
        ins.append(weights(rnd(D, 3 * H, dtype=dtype)) if peep else None)
    while ins and ins[-1] is None:
        ins.pop()
    a = {'hidden_size': H, 'direction': direction}
    if layout:
        a['layout'] = layout
    a.update(attrs or {})
    names, inputs = [], []
    for i, v in enumerate(ins):
        if v is None:
            names.append('')
            continue
        names.append('in%d' % i)
        inputs.append(('in%d' % i, v))
    n_out = 3 if op == 'LSTM' else 2
    if outs is None:
        outs = tuple(range(n_out))
    node_outs = [('out%d' % i if i in outs else '') for i in range(n_out)]
    while node_outs and node_outs[-1] == '':
        node_outs.pop()
    node = helper.make_node(op, names, node_outs, **a)
    case = Case('%s/%s' % (op.lower(), name), [node], inputs, opset=opset, outputs=['out%d' % i for i in outs])
    if layout:
        # ONNX Runtime's CPU kernels reject layout 1 ("batchwise recurrent operations are
        # not supported"), so its reference runs the layout-0 node between transposes.
        ref_in = list(names)
        ref = []
        for i in [0, 5, 6]:
            if i < len(names) and names[i]:
                ref.append(helper.make_node('Transpose', [names[i]], [names[i] + '_t'], perm=[1, 0, 2]))
                ref_in[i] = names[i] + '_t'
        a0 = dict(a)
        del a0['layout']
        ref_outs = [(o + '_t' if o else '') for o in node_outs]
        ref.append(helper.make_node(op, ref_in, ref_outs, **a0))
        for i, o in enumerate(node_outs):
            if o:
                perm = [2, 0, 1, 3] if i == 0 else [1, 0, 2]
                ref.append(helper.make_node('Transpose', [o + '_t'], [o], perm=perm))
        case.ref_nodes = ref
    CASES.append(case)


def lstm_cases():
    for d in ['forward', 'reverse', 'bidirectional']:
        rnn_case('%s_plain' % d, 'LSTM', direction=d)
        rnn_case('%s_all_inputs' % d, 'LSTM', direction=d, bias=True, init_h=True, init_c=True, peep=True)
        rnn_case('%s_seq_lens' % d, 'LSTM', direction=d, bias=True, init_h=True, init_c=True, lens=[3, 1, 2],
                 B=3)
        rnn_case('%s_layout1' % d, 'LSTM', direction=d, layout=1, bias=True, init_h=True, init_c=True, B=3)
        rnn_case('%s_layout1_seq_lens' % d, 'LSTM', direction=d, layout=1, bias=True, lens=[2, 3], peep=True)
    rnn_case('batch1_seq1', 'LSTM', T=1, B=1, I=6, H=4, bias=True, init_h=True, init_c=True)
    rnn_case('batch4_long', 'LSTM', T=7, B=4, I=3, H=6, bias=True, init_h=True, init_c=True,
             direction='bidirectional')
    rnn_case('bias_only', 'LSTM', bias=True)
    rnn_case('init_h_only', 'LSTM', init_h=True)
    rnn_case('peephole_only', 'LSTM', peep=True, direction='bidirectional')
    rnn_case('only_y_h', 'LSTM', outs=(1,), bias=True)
    rnn_case('only_y_c', 'LSTM', outs=(2,), bias=True, direction='reverse')
    rnn_case('y_only', 'LSTM', outs=(0,), bias=True, direction='bidirectional')
    rnn_case('weights_fed', 'LSTM', weights=F, bias=True, init_h=True, init_c=True, peep=True)
    rnn_case('clip', 'LSTM', bias=True, init_h=True, attrs={'clip': 0.5}, direction='bidirectional')
    rnn_case('input_forget', 'LSTM', bias=True, init_c=True, attrs={'input_forget': 1})
    rnn_case('activations', 'LSTM', bias=True, init_h=True, init_c=True,
             attrs={'activations': ['HardSigmoid', 'Tanh', 'Relu']})
    rnn_case('activations_bidi', 'LSTM', bias=True, direction='bidirectional',
             attrs={'activations': ['Sigmoid', 'Softsign', 'Tanh', 'Sigmoid', 'Tanh', 'Softsign']})
    # (ONNX Runtime's CPU LSTM/GRU/RNN have no float64 kernels: f64 goes untested.)
    rnn_case('activation_params', 'LSTM', bias=True, init_h=True, init_c=True,
             attrs={'activations': ['HardSigmoid', 'ScaledTanh', 'LeakyRelu'], 'activation_alpha': [0.3, 0.9, 0.05],
                    'activation_beta': [0.6, 1.1]})
    rnn_case('activation_params_bidi', 'LSTM', bias=True, direction='bidirectional',
             attrs={'activations': ['Sigmoid', 'Elu', 'Softplus', 'HardSigmoid', 'ThresholdedRelu', 'Affine'],
                    'activation_alpha': [0.7, 0.25, 0.1, 0.8], 'activation_beta': [0.45, 0.2]})
    rnn_case('float32_all_bidi', 'LSTM', dtype=np.float32, bias=True, init_h=True, init_c=True, peep=True,
             direction='bidirectional')
    rnn_case('opset7', 'LSTM', bias=True, init_h=True, opset=7)


def gru_cases():
    for d in ['forward', 'reverse', 'bidirectional']:
        rnn_case('%s_plain' % d, 'GRU', direction=d)
        rnn_case('%s_bias_h' % d, 'GRU', direction=d, bias=True, init_h=True)
        rnn_case('%s_lbr' % d, 'GRU', direction=d, bias=True, init_h=True, attrs={'linear_before_reset': 1})
        rnn_case('%s_seq_lens' % d, 'GRU', direction=d, bias=True, lens=[1, 3, 2], B=3)
        rnn_case('%s_layout1' % d, 'GRU', direction=d, layout=1, bias=True, init_h=True,
                 attrs={'linear_before_reset': 1})
    rnn_case('lbr_no_bias', 'GRU', attrs={'linear_before_reset': 1})
    rnn_case('clip', 'GRU', bias=True, attrs={'clip': 0.3})
    rnn_case('only_y_h', 'GRU', outs=(1,), bias=True)


def simple_rnn_cases():
    for d in ['forward', 'reverse', 'bidirectional']:
        rnn_case('%s_plain' % d, 'RNN', direction=d)
        rnn_case('%s_bias_h' % d, 'RNN', direction=d, bias=True, init_h=True)
        rnn_case('%s_seq_lens' % d, 'RNN', direction=d, bias=True, lens=[2, 3])
        rnn_case('%s_layout1' % d, 'RNN', direction=d, layout=1, bias=True, init_h=True)
    rnn_case('relu', 'RNN', bias=True, attrs={'activations': ['Relu']})
    rnn_case('relu_tanh_bidi', 'RNN', bias=True, direction='bidirectional', attrs={'activations': ['Relu', 'Tanh']})
    rnn_case('clip', 'RNN', bias=True, attrs={'clip': 0.4})


lstm_cases()
gru_cases()
simple_rnn_cases()


# ---- signal ------------------------------------------------------------------------
def s64(v):
    return np.array(v, dtype=np.int64)


def complex_stft_case(name, x, step, window=None, frame_length=None):
    """STFT of a complex signal. ONNX Runtime 1.30's CPU STFT returns garbage for complex
    input, so its reference is linear: STFT(xr + i*xi) = STFT(xr) + i*STFT(xi), two real
    two-sided STFTs recombined (re = Re Sr - Im Si, im = Im Sr + Re Si)."""
    ins = [('x', F(x)), ('step', K(s64(step)))]
    stft_in = ['x', 'step', '', '']
    if window is not None:
        ins.append(('win', K(window)))
        stft_in[2] = 'win'
    if frame_length is not None:
        ins.append(('flen', K(s64(frame_length))))
        stft_in[3] = 'flen'
    while stft_in[-1] == '':
        stft_in.pop()
    case = Case('signal/' + name, [helper.make_node('STFT', stft_in, ['out0'], onesided=0)], ins, opset=17)
    ins += [('c0', K(i64(0))), ('c1', K(i64(1))), ('c2', K(i64(2))), ('ax', K(i64(-1)))]
    ref = [helper.make_node('Slice', ['x', 'c0', 'c1', 'ax'], ['xr']),
           helper.make_node('Slice', ['x', 'c1', 'c2', 'ax'], ['xi'])]
    for part in ['xr', 'xi']:
        ref.append(helper.make_node('STFT', [part] + stft_in[1:], ['S' + part], onesided=0))
        ref.append(helper.make_node('Slice', ['S' + part, 'c0', 'c1', 'ax'], ['S%s_re' % part]))
        ref.append(helper.make_node('Slice', ['S' + part, 'c1', 'c2', 'ax'], ['S%s_im' % part]))
    ref += [helper.make_node('Sub', ['Sxr_re', 'Sxi_im'], ['re']),
            helper.make_node('Add', ['Sxr_im', 'Sxi_re'], ['im']),
            helper.make_node('Concat', ['re', 'im'], ['out0'], axis=-1)]
    case.inputs = ins
    case.ref_nodes = ref
    CASES.append(case)


def signal_cases():
    for op in ['HannWindow', 'HammingWindow', 'BlackmanWindow']:
        for periodic in [0, 1]:
            add('signal/%s_p%d' % (op, periodic), op, [K(s64(10))], {'periodic': periodic}, opset=17,
                out_types=[TensorProto.FLOAT])
        add('signal/%s_f64' % op, op, [K(s64(7))], {'output_datatype': TensorProto.DOUBLE}, opset=17,
            out_types=[TensorProto.DOUBLE])
    step8 = K(s64(8))
    real = rnd(2, 64, 1)
    hann16 = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)).astype(np.float32)
    add('signal/stft_onesided_window', 'STFT', [F(real), step8, K(hann16)], opset=17)
    add('signal/stft_twosided_window', 'STFT', [F(real), step8, K(hann16)], {'onesided': 0}, opset=17)
    add('signal/stft_window_fed', 'STFT', [F(real), step8, F(hann16)], opset=17)
    add('signal/stft_frame_length_only', 'STFT', [F(real), step8, None, K(s64(16))], opset=17)
    add('signal/stft_window_and_length', 'STFT', [F(real), K(s64(5)), K(rnd(12)), K(s64(12))], opset=17)
    add('signal/stft_odd_length', 'STFT', [F(rnd(1, 47, 1)), K(s64(3)), K(rnd(15))], opset=17)
    add('signal/stft_odd_length_twosided', 'STFT', [F(rnd(1, 47, 1)), K(s64(4)), K(rnd(9))], {'onesided': 0},
        opset=17)
    complex_stft_case('stft_complex', rnd(2, 50, 2), 6, window=rnd(10))
    complex_stft_case('stft_complex_no_window', rnd(1, 40, 2), 7, frame_length=8)
    add('signal/stft_int32_step', 'STFT', [F(real), K(np.array(16, np.int32)), K(hann16)], opset=17)
    add('signal/stft_f64', 'STFT', [F(rnd(1, 80, 1, dtype=np.float64)), K(s64(10)),
                                    K(rnd(20, dtype=np.float64))], opset=17)
    add('signal/stft_silero_like', 'STFT', [F(rnd(1, 640, 1)), K(s64(128)),
                                            K((0.5 - 0.5 * np.cos(2 * np.pi * np.arange(256) / 256))
                                              .astype(np.float32))], opset=17)
    for opset in [17, 20]:
        def dft(name, x, attrs=None, length=None, axis=None):
            ins = [F(x), K(s64(length)) if length is not None else None]
            a = dict(attrs or {})
            if axis is not None:
                if opset >= 20:
                    ins.append(K(s64(axis)))
                else:
                    a['axis'] = axis
            while ins[-1] is None:
                ins.pop()
            add('signal/dft%d_%s' % (opset, name), 'DFT', ins, a, opset=opset)
        dft('real', rnd(2, 12, 1), axis=1)
        dft('complex', rnd(3, 10, 2), axis=1)
        dft('real_onesided', rnd(2, 12, 1), {'onesided': 1}, axis=1)
        dft('real_onesided_odd', rnd(2, 9, 1), {'onesided': 1}, axis=1)
        dft('inverse_complex', rnd(2, 8, 2), {'inverse': 1}, axis=1)
        dft('inverse_real', rnd(2, 7, 1), {'inverse': 1}, axis=1)
        dft('length_pad', rnd(2, 6, 2), length=10, axis=1)
        dft('length_crop', rnd(2, 12, 1), length=8, axis=1)
        dft('axis_inner', rnd(2, 3, 5, 2), axis=2)
        dft('axis_outer', rnd(4, 3, 5, 1), axis=0)
        dft('axis_negative', rnd(2, 6, 3, 2), axis=-3)
        dft('default_axis', rnd(2, 6, 4, 2))
    # A window made by a window op, feeding STFT.
    nodes = [helper.make_node('HannWindow', ['n'], ['w']),
             helper.make_node('STFT', ['x', 'step', 'w'], ['out0'])]
    CASES.append(Case('signal/hann_into_stft', nodes, [('x', F(rnd(1, 96, 1))), ('n', K(s64(32))),
                                                       ('step', K(s64(16)))], opset=17))


signal_cases()

# ---- malformed nodes: kiln must refuse them with an error naming the problem ---------
def error_cases():
    x = F(rnd(3, 2, 4))
    w, r = K(rnd(1, 20, 4)), K(rnd(1, 20, 5))
    bad('lstm_w_shape', 'LSTM', [x, K(rnd(1, 20, 3)), r], {'hidden_size': 5}, 'W has shape', n_out=3)
    bad('lstm_hidden_size', 'LSTM', [x, w, r], {'hidden_size': 6}, 'W has shape', n_out=3)
    bad('lstm_r_shape', 'LSTM', [x, w, K(rnd(1, 20, 4))], {'hidden_size': 5}, 'R must have shape', n_out=3)
    bad('lstm_b_shape', 'LSTM', [x, w, r, K(rnd(1, 20))], {'hidden_size': 5}, 'B must have shape', n_out=3)
    bad('lstm_direction', 'LSTM', [x, w, r], {'hidden_size': 5, 'direction': 'sideways'}, 'direction', n_out=3)
    bad('lstm_bidi_weights', 'LSTM', [x, w, r], {'hidden_size': 5, 'direction': 'bidirectional'}, 'W has shape',
        n_out=3)
    bad('lstm_activation_count', 'LSTM', [x, w, r], {'hidden_size': 5, 'activations': ['Sigmoid', 'Tanh']},
        'activations has 2 entries', n_out=3)
    bad('lstm_activation_name', 'LSTM', [x, w, r], {'hidden_size': 5, 'activations': ['Sigmoid', 'Tanh', 'Nope']},
        'unsupported activation', n_out=3)
    bad('lstm_seq_lens_shape', 'LSTM', [x, w, r, None, F(np.array([1, 2, 3], np.int32))], {'hidden_size': 5},
        'sequence_lens', n_out=3)
    bad('lstm_initial_h_shape', 'LSTM', [x, w, r, None, None, F(rnd(1, 3, 5))], {'hidden_size': 5},
        'initial_h', n_out=3)
    bad('lstm_rank', 'LSTM', [F(rnd(3, 4)), w, r], {'hidden_size': 5}, '3-D', n_out=3)
    bad('gru_clip', 'GRU', [x, K(rnd(1, 15, 4)), K(rnd(1, 15, 5))], {'hidden_size': 5, 'clip': -1.0}, 'clip',
        n_out=2)
    sig = F(rnd(1, 32, 1))
    bad('stft_step_zero', 'STFT', [sig, K(np.array(0, np.int64)), K(rnd(8))], {}, 'frame_step')
    bad('stft_frame_too_long', 'STFT', [sig, K(np.array(4, np.int64)), K(rnd(40))], {}, 'exceeds')
    bad('stft_no_length', 'STFT', [sig, K(np.array(4, np.int64))], {}, 'frame_length')
    bad('stft_window_mismatch', 'STFT', [sig, K(np.array(4, np.int64)), K(rnd(8)), K(np.array(6, np.int64))], {},
        'window has 8 entries')
    bad('stft_complex_onesided', 'STFT', [F(rnd(1, 32, 2)), K(np.array(4, np.int64)), K(rnd(8))], {},
        'onesided')
    bad('stft_rank', 'STFT', [F(rnd(32)), K(np.array(4, np.int64)), K(rnd(8))], {}, 'signal must be')
    bad('window_negative', 'HannWindow', [K(np.array(-3, np.int64))], {}, 'size')
    bad('dft_axis_range', 'DFT', [F(rnd(2, 8, 2))], {'axis': 2}, 'axis is out of range')
    bad('dft_last_dim', 'DFT', [F(rnd(2, 8, 3))], {'axis': 1}, 'input must be')
    bad('dft_length_zero', 'DFT', [F(rnd(2, 8, 1)), K(np.array(0, np.int64))], {'axis': 1}, 'dft_length')


error_cases()


if __name__ == '__main__':
    sys.exit(main(__doc__))
