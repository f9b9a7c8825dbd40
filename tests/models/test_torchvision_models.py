"""Real-world ONNX models: torchvision networks exported with torch.onnx.export, run by
kiln and by ONNX Runtime.

The models come from Debian's python3-torch / python3-torchvision (torch 1.13,
torchvision 0.14; installed by scripts/install-deps.sh) and are built and exported at
test time into a temporary directory -- nothing downloaded is committed and no
pretrained weights are fetched (weights=None; torch.manual_seed fixes the random
initialisation). Every model is put in eval() mode and exported with batch 1 at opset
13 and at opset 17:
  resnet50, mobilenet_v3_small, efficientnet_b0, vit_b_16   (1x3x224x224 images)
  transformer_encoder: nn.TransformerEncoder, 4 layers (ReLU feed-forward, the
    default), batch_first, batch 1, seq 128. The benchmark size is d_model=768 (12 heads, ffn 3072); the
    default test uses d_model=256 (8 heads, ffn 1024) so the evaluator finishes in
    seconds -- the graph is the same, only the widths shrink. --full uses d=768.
Random init alone gives degenerate outputs (logits ~1e-10 or all zero), so calibrate()
re-seeds Linear layers and measures BatchNorm statistics first -- see there.
The input is a fixed-seed standard-normal tensor. ONNX Runtime (npm onnxruntime-node,
CPU, graph optimisations off) runs through tests/ops/ort_run.js; kiln runs
`kiln run model.onnx -i NAME=x.npy -o DIR`. Outputs must agree per element within
|kiln - ort| <= 1e-4 + 1e-3*|ort| (f32); no model needs a wider bound.

Each model x opset prints one line: max abs error, max rel error (|a-b|/|b| over |b| >= 0.1),
err/tol, max |ref|, kiln's and the export's wall times (a kiln run over 60 s is marked
slow), pass/fail; then "N passed, N failed". Exit 1 on any failure.

Usage: /usr/bin/python3 tests/models/test_torchvision_models.py --kiln build/kiln
       [-k SUBSTR] [--quick] [--full] [--dynamic] [--opset 13|17] [--keep] [--plugin MANIFEST]
  --quick: mobilenet_v3_small and the transformer encoder, opset 17 only.
  --full:  the transformer encoder at its benchmark size (d_model=768).
  --dynamic: also export every model with a dynamic batch axis and run it at batch 2.
The default set (what CTest runs) is every model at both opsets plus vit_b_16 at opset
17 with a dynamic batch axis (batch 2); about 2 minutes on 2 cores, most of it in
torch.onnx.export (kiln's slowest model, vit_b_16, takes ~10 s).
Per-line "err/tol" is max |a-b| / (1e-4 + 1e-3|b|): the tolerance used, <= 1 passes.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from plugin_checks import check_transfers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPM_DIR = os.path.join(ROOT, 'build-ref-npm')
ORT_RUN = os.path.join(ROOT, 'tests', 'ops', 'ort_run.js')
SEED = 1234
ATOL, RTOL = 1e-4, 1e-3
SLOW_SECONDS = 60


def build_model(name, full):
    """(torch module, example input shape) for one named model, seeded."""
    import torch
    import torchvision
    torch.manual_seed(SEED)
    if name == 'transformer_encoder':
        d, heads, ffn = (768, 12, 3072) if full else (256, 8, 1024)
        layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=ffn, dropout=0.0,
                                                 batch_first=True)
        m = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
        return m.eval(), (1, 128, d)
    ctor = getattr(torchvision.models, name)
    return calibrate(ctor(weights=None)), (1, 3, 224, 224)


def calibrate(m):
    """Gives a randomly initialised network outputs of a useful size. torchvision's
    init leaves BatchNorm running stats at mean 0 / var 1, which do not match the real
    activations, so deep convnets end with logits ~1e-10 (every output would pass an
    absolute tolerance of 1e-4 vacuously); ViT's head is zero-initialised (all logits 0)
    and the convnets' classifiers use std 0.01 (logits ~0.01). So: Linear layers get
    seeded N(0, 1/fan_in) weights (unit-scale logits), and BatchNorm running
    statistics are measured on a seeded random batch (momentum None: a plain average)
    before eval()."""
    import torch
    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear):
            torch.nn.init.normal_(mod.weight, std=mod.in_features ** -0.5)
            if mod.bias is not None:
                torch.nn.init.normal_(mod.bias, std=0.1)
    bns = [mod for mod in m.modules() if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None
        m.train()
        gen = torch.Generator().manual_seed(SEED + 1)
        with torch.no_grad():
            m(torch.randn(4, 3, 224, 224, generator=gen))
    return m.eval()


MODELS = ['resnet50', 'mobilenet_v3_small', 'efficientnet_b0', 'vit_b_16', 'transformer_encoder']
QUICK = ['mobilenet_v3_small', 'transformer_encoder']
# Besides the batch-1 exports: one model with a dynamic batch axis, run at batch 2
# (--dynamic runs every model that way).
DYNAMIC_DEFAULT = [('vit_b_16', 17)]


def export(name, opset, full, path, batch):
    """Exports one model; batch > 1 also marks the batch dimension dynamic, so the
    graph computes its reshape targets from Shape at run time (ViT, Flatten)."""
    import torch
    m, shape = build_model(name, full)
    shape = (batch,) + tuple(shape[1:])
    dynamic = {'x': {0: 'N'}, 'y': {0: 'N'}} if batch > 1 else None
    x = torch.from_numpy(np.random.default_rng(SEED).standard_normal(shape).astype(np.float32))
    # Not under torch.no_grad(): with autograd off an eval()-mode TransformerEncoderLayer
    # takes its fused fast path (aten::_transformer_encoder_layer_fwd), which torch 1.13
    # cannot export.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(m, (x,), path, opset_version=opset, input_names=['x'], output_names=['y'],
                          do_constant_folding=True, dynamic_axes=dynamic)
    return x.numpy()


def label_of(name, opset, batch):
    return '%s/opset%d' % (name, opset) + ('/dynbatch%d' % batch if batch > 1 else '')


def ensure_ort():
    mod = os.path.join(NPM_DIR, 'node_modules', 'onnxruntime-node')
    if os.path.isdir(mod):
        return True
    cmd = ['npm', 'install', '--ignore-scripts', '--no-save', '--prefix', NPM_DIR, 'onnxruntime-node@1.30.0']
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    return r.returncode == 0 and os.path.isdir(mod)


def compare(got, want, atol, rtol):
    """(max abs err, max rel err, max err/tolerance, failure message or None)."""
    if got.shape != want.shape:
        return float('nan'), float('nan'), float('nan'), 'shape %s, reference %s' % (got.shape, want.shape)
    if got.dtype != want.dtype:
        return float('nan'), float('nan'), float('nan'), 'dtype %s, reference %s' % (got.dtype, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    diff = np.abs(g - w)
    diff[np.isnan(g) & np.isnan(w)] = 0
    diff[np.isnan(g) != np.isnan(w)] = np.inf
    max_abs = float(diff.max()) if diff.size else 0.0
    margin = float((diff / (atol + rtol * np.abs(w))).max()) if diff.size else 0.0
    # Relative error only where it means something: |b| >= atol/rtol (below that the
    # absolute term dominates the tolerance).
    big = np.abs(w) >= ATOL / RTOL
    max_rel = float((diff[big] / np.abs(w[big])).max()) if big.any() else 0.0
    bad = ~(diff <= atol + rtol * np.abs(w))
    if bad.any():
        i = np.unravel_index(np.argmax(bad), bad.shape)
        return max_abs, max_rel, margin, '%d of %d values out of tolerance; first at %s: kiln %r, reference %r' % (
            int(bad.sum()), bad.size, tuple(int(k) for k in i), float(g[i]), float(w[i]))
    return max_abs, max_rel, margin, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    ap.add_argument('-k', default='')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--full', action='store_true')
    ap.add_argument('--opset', type=int, choices=[13, 17])
    ap.add_argument('--dynamic', action='store_true')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--plugin', default=None,
                    help='a plugin manifest to load: the placer puts each node on the highest-priority device '
                         'that takes it (hybrid); the run must use the plugin\'s device and move its weights once '
                         '(three iterations; see check_transfers)')
    args = ap.parse_args()
    kiln = os.path.abspath(args.kiln)
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        print('test_torchvision_models: python3-torch / python3-torchvision are missing '
              '(scripts/install-deps.sh installs them)')
        print('0 passed, 1 failed')
        return 1
    if not ensure_ort():
        print('test_torchvision_models: cannot install onnxruntime-node into build-ref-npm')
        print('0 passed, 1 failed')
        return 1
    torch.set_num_threads(2)
    names = QUICK if args.quick else MODELS
    opsets = [17] if args.quick else [13, 17]
    if args.opset:
        opsets = [args.opset]
    runs = [(n, o, 1) for n in names for o in opsets]
    if args.dynamic:
        runs += [(n, o, 2) for n in names for o in opsets]
    elif not args.quick and not args.opset:
        runs += [(n, o, 2) for n, o in DYNAMIC_DEFAULT]
    runs = [r for r in runs if args.k in label_of(*r)]
    tmp = tempfile.mkdtemp(prefix='kiln_tv_models_')
    jobs, cases = [], []
    for name, opset, batch in runs:
        d = os.path.join(tmp, label_of(name, opset, batch).replace('/', '_'))
        os.makedirs(d)
        path = os.path.join(d, 'model.onnx')
        t0 = time.time()
        x = export(name, opset, args.full, path, batch)
        xp = os.path.join(d, 'x.npy')
        np.save(xp, x)
        jobs.append({'model': path, 'out': os.path.join(d, 'ref'), 'inputs': {'x': xp}})
        cases.append((label_of(name, opset, batch), d, path, xp, time.time() - t0))
    with open(os.path.join(tmp, 'jobs.json'), 'w') as f:
        json.dump(jobs, f)
    r = subprocess.run(['node', ORT_RUN, '--batch', os.path.join(tmp, 'jobs.json')], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=900)
    if r.returncode != 0:
        print('test_torchvision_models: the ONNX Runtime runner failed:\n' + r.stdout.decode(errors='replace'))
        print('0 passed, 1 failed')
        return 1
    passed = failed = 0
    for label, d, path, xp, export_s in cases:
        max_abs = max_rel = margin = ref_max = float('nan')
        err = None
        t0 = time.time()
        ref_err = os.path.join(d, 'ref', 'ERROR.txt')
        if os.path.exists(ref_err):
            err = 'reference failed: ' + open(ref_err).read()
        else:
            cmd = [kiln, 'run', path, '-i', 'x=' + xp, '-o', os.path.join(d, 'kiln')]
            if args.plugin:
                cmd += ['--plugin', args.plugin, '--iters', '3', '--json']
            kr = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
            if kr.returncode != 0:
                err = 'kiln failed (exit %d): %s' % (kr.returncode, kr.stdout.decode(errors='replace').strip()[-2000:])
            elif args.plugin:
                stats = json.loads(kr.stdout.decode().strip().splitlines()[-1])
                err = check_transfers(stats)
                print('     to device: %d bytes in all, %d in the last run; clusters %d, fallback runs %d' % (
                    stats['bytes_to_device'], stats['last_run_bytes_to_device'], stats['clusters'],
                    stats['cluster_fallback_runs']))
            if kr.returncode == 0 and not err:
                got = np.load(os.path.join(d, 'kiln', 'y.npy'))
                want = np.load(os.path.join(d, 'ref', 'y.npy'))
                ref_max = float(np.abs(want).max())
                max_abs, max_rel, margin, err = compare(got, want, ATOL, RTOL)
        kiln_s = time.time() - t0
        slow = '  (slow: > %d s)' % SLOW_SECONDS if kiln_s > SLOW_SECONDS else ''
        status = 'FAIL' if err else 'ok  '
        print('%s %-36s max_abs %.3g  max_rel %.3g  err/tol %.2f  (max|ref| %.3g)  kiln %.1f s  export %.1f s%s' % (
            status, label, max_abs, max_rel, margin, ref_max, kiln_s, export_s, slow))
        if err:
            print('     %s' % err)
            failed += 1
        else:
            passed += 1
        sys.stdout.flush()
    if not args.keep and not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print('files kept in %s' % tmp)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
