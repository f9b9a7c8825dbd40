"""The silero VAD v5 model (npm @ricky0123/vad-web@0.0.31, dist/silero_vad_v5.onnx):
kiln against ONNX Runtime over a stream of 512-sample chunks.

The model is a Conv-based STFT front end, a conv encoder, an LSTM decoder and a sigmoid
head behind nested If nodes (one branch per sample rate); it takes input [1,512] f32,
state [2,1,128] f32 and sr (int64 scalar, 16000; 8000 with 256-sample chunks is run
too) and returns output [1,1] (speech
probability) and stateN [2,1,128]. As the VAD library does, each step feeds stateN back
as the next state. Both runtimes are driven step by step, each with its own state (the
kiln chain is fed kiln's stateN, ORT's chain ORT's), so the comparison also checks that
errors do not accumulate through the recurrence. Tolerance: max|a-b| <= 1e-4 + 1e-3*|b|
(b = ONNX Runtime) for every output of every step.

Usage: /usr/bin/python3 tests/models/test_silero_vad.py --kiln build/kiln [--steps N]
Needs: node and build-ref-npm/ with onnxruntime-node@1.30.0 and @ricky0123/vad-web@0.0.31
(scripts/install-ref-npm.sh). Prints max abs/rel error per step and "N passed, N failed";
exits 1 on failure, 77 (skipped) when a reference is missing.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORT_RUN = os.path.join(ROOT, 'tests', 'ops', 'ort_run.js')
MODEL = os.path.join(ROOT, 'build-ref-npm', 'node_modules', '@ricky0123', 'vad-web', 'dist', 'silero_vad_v5.onnx')


def chunk_for(step, rng, n=512, rate=16000):
    """An n-sample chunk: silence, noise and tone-like speech stand-ins, so the
    probability moves and the state carries real content."""
    t = np.arange(n, dtype=np.float64) + n * step
    kind = step % 4
    if kind == 0:
        x = rng.standard_normal(n) * 0.001
    elif kind == 1:
        x = rng.standard_normal(n) * 0.1
    else:
        f0 = 120 + 40 * step
        x = 0.4 * np.sin(2 * np.pi * f0 * t / rate) + 0.2 * np.sin(2 * np.pi * 3 * f0 * t / rate)
        x += rng.standard_normal(n) * 0.02
    return x.astype(np.float32).reshape(1, n)


def run_kiln(kiln, feeds, out, tmp):
    args = [kiln, 'run', MODEL, '-o', out]
    for name, arr in feeds.items():
        p = os.path.join(tmp, 'k_' + name + '.npy')
        np.save(p, arr)
        args += ['-i', name + '=' + p]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    if r.returncode != 0:
        raise RuntimeError('kiln failed: ' + r.stdout.decode(errors='replace')[-2000:])


def run_ort(feeds, out, tmp):
    args = ['node', ORT_RUN, MODEL, out]
    for name, arr in feeds.items():
        p = os.path.join(tmp, 'o_' + name + '.npy')
        np.save(p, arr)
        args.append(name + '=' + p)
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    if r.returncode != 0 or os.path.exists(os.path.join(out, 'ERROR.txt')):
        raise RuntimeError('onnxruntime failed: ' + r.stdout.decode(errors='replace')[-2000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    ap.add_argument('--steps', type=int, default=8)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    if not os.path.exists(MODEL) or shutil.which('node') is None:
        print('skipped: needs node and ' + MODEL + ' (scripts/install-ref-npm.sh)')
        sys.exit(77)
    kiln = os.path.abspath(args.kiln)
    tmp = tempfile.mkdtemp(prefix='kiln_vad_')
    passed = failed = 0
    try:
        # The model branches on sr (If nodes): 16 kHz takes 512-sample chunks, 8 kHz 256.
        for rate, n in ((16000, 512), (8000, 256)):
            rng = np.random.default_rng(1234)
            sr = np.array(rate, dtype=np.int64)
            state_k = np.zeros((2, 1, 128), np.float32)
            state_o = np.zeros((2, 1, 128), np.float32)
            for step in range(args.steps):
                x = chunk_for(step, rng, n, rate)
                ko = os.path.join(tmp, 'kiln%d_%d' % (rate, step))
                oo = os.path.join(tmp, 'ort%d_%d' % (rate, step))
                os.makedirs(oo, exist_ok=True)
                try:
                    run_kiln(kiln, {'input': x, 'state': state_k, 'sr': sr}, ko, tmp)
                    run_ort({'input': x, 'state': state_o, 'sr': sr}, oo, tmp)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print('FAIL %d Hz step %d: %s' % (rate, step, e))
                    failed += 1
                    continue
                ok = True
                parts = []
                for name in ('output', 'stateN'):
                    got = np.load(os.path.join(ko, name + '.npy'))
                    want = np.load(os.path.join(oo, name + '.npy'))
                    if got.shape != want.shape or got.dtype != want.dtype:
                        print('FAIL %d Hz step %d %s: kiln %s %s, onnxruntime %s %s' %
                              (rate, step, name, got.dtype, got.shape, want.dtype, want.shape))
                        ok = False
                        continue
                    g = got.astype(np.float64)
                    w = want.astype(np.float64)
                    err = np.abs(g - w)
                    # rel: the largest error relative to the output's largest magnitude (an
                    # element-wise ratio blows up on entries near 0); tol: the worst
                    # error / tolerance ratio (<= 1 passes).
                    rel = float(err.max() / max(float(np.abs(w).max()), 1e-30))
                    tol = float(np.max(err / (1e-4 + 1e-3 * np.abs(w))))
                    parts.append('%s max abs %.3g rel %.3g tol %.3g' % (name, float(err.max()), rel, tol))
                    if not np.all(err <= 1e-4 + 1e-3 * np.abs(w)) or not np.all(np.isfinite(g)):
                        ok = False
                        parts[-1] += ' OUT OF TOLERANCE'
                prob_k = float(np.load(os.path.join(ko, 'output.npy')).ravel()[0])
                prob_o = float(np.load(os.path.join(oo, 'output.npy')).ravel()[0])
                print('%s %d Hz step %d: p kiln %.6f ort %.6f; %s' %
                      ('ok  ' if ok else 'FAIL', rate, step, prob_k, prob_o, '; '.join(parts)))
                passed += ok
                failed += not ok
                state_k = np.load(os.path.join(ko, 'stateN.npy'))
                state_o = np.load(os.path.join(oo, 'stateN.npy'))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print('%d passed, %d failed' % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
