"""The bridge from the command line: `kiln cluster`, `--dot`, `--log_placement`,
`--dump_to`, `--jit off|auto`, `--no_host_fallback`, on small graphs in kiln's graph
text form (.graph), with outputs checked against numpy.

Usage: /usr/bin/python3 tests/models/test_cluster_cli.py --kiln build/kiln
Prints "N passed, N failed"; exits 1 on failure.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

GRAPH = """framework tf
input x: float[4,8]
w = Const[dtype=float, value=tensor<float[8,3]>{%s}]()
m = MatMul[T=float, transpose_a=false, transpose_b=false](x, w)
b = Const[dtype=float, value=tensor<float[3]>{0.5, -0.25, 1}]()
a = BiasAdd[T=float](m, b)
r = Relu[T=float](a)
t = Tanh[T=float](r)
n = Where[T=float](t) -> (int64[?,2])
output y = t:0
output idx = n:0
"""


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return r.returncode, r.stdout.decode(errors='replace'), r.stderr.decode(errors='replace')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    args = ap.parse_args()
    kiln = os.path.abspath(args.kiln)
    tmp = tempfile.mkdtemp(prefix='kiln_cluster_cli_')
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    g = os.path.join(tmp, 'mlp.graph')
    with open(g, 'w') as f:
        f.write(GRAPH % ', '.join('%r' % float(v) for v in w.ravel()))
    xp = os.path.join(tmp, 'x.npy')
    np.save(xp, x)
    passed, failed = 0, 0

    def check(name, ok, detail=''):
        nonlocal passed, failed
        if ok:
            passed += 1
            print('ok   ' + name)
        else:
            failed += 1
            print('FAIL %s: %s' % (name, detail[:1500]))

    # kiln cluster: one cluster of the MatMul..Tanh chain with its two constants, Where left out with its reason.
    dot = os.path.join(tmp, 'g.dot')
    rc, out, err = run([kiln, 'cluster', g, '--dot', dot, '--device', 'interpreter'])
    check('cluster summary', rc == 0 and '1 cluster holding 6 nodes' in out and 'tf.MatMul x1' in out
          and 'no HLO lowering: the op has only a host kernel' in out and 'n (tf.Where)' in out, out + err)
    text = open(dot).read() if os.path.exists(dot) else ''
    check('dot file', text.startswith('digraph') and 'subgraph "cluster_0"' in text and 'style=filled' in text
          and '"m" -> "a"' in text, text[:500])

    # --log_placement: every node with its device, the host for Where.
    rc, out, err = run([kiln, 'cluster', g, '--log_placement', '--device', 'interpreter'])
    check('log placement', rc == 0 and 'placement: m (tf.MatMul) -> interpreter' in out
          and 'placement: n (tf.Where) -> host  [host fallback: the op has only a host kernel]' in out
          and 'placement: cluster_0 (kiln.Cluster, 6 nodes) -> interpreter' in out, out + err)

    # --no_host_fallback: Where cannot run on a device.
    rc, out, err = run([kiln, 'run', g, '-i', 'x=' + xp, '-o', tmp, '--no_host_fallback'])
    check('no host fallback', rc == 1 and 'node n (tf.Where) cannot run on device' in err
          and '--no_host_fallback' in err, err)

    # Results: numpy, and --jit auto == --jit off bit for bit on the interpreter.
    want = np.tanh(np.maximum(x.astype(np.float64) @ w + np.array([0.5, -0.25, 1]), 0))
    outs = {}
    for jit in ('auto', 'off'):
        d = os.path.join(tmp, jit)
        rc, out, err = run([kiln, 'run', g, '-i', 'x=' + xp, '-o', d, '--jit', jit, '--json',
                            '--device', 'interpreter'])
        stats = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {}
        outs[jit] = np.load(os.path.join(d, 'y.npy')) if rc == 0 else None
        check('run --jit %s' % jit, rc == 0 and stats.get('clusters') == (1 if jit == 'auto' else 0)
              and np.abs(outs[jit] - want).max() < 1e-5, out + err)
    check('jit auto == off', outs['auto'] is not None and outs['off'] is not None
          and outs['auto'].tobytes() == outs['off'].tobytes())

    # --dump_to: the graph before and after each bridge pass.
    dd = os.path.join(tmp, 'dumps')
    rc, out, err = run([kiln, 'cluster', g, '--dump_to', dd, '--device', 'interpreter'])
    files = sorted(os.listdir(dd)) if os.path.isdir(dd) else []
    after = [f for f in files if f.endswith('encapsulate-clusters.after.txt')]
    check('dumps', rc == 0 and len(files) == 10 and after and 'kiln.Cluster' in open(os.path.join(dd, after[0])).read(),
          ' '.join(files))

    # Bad usage.
    rc, out, err = run([kiln, 'run', g, '-i', 'x=' + xp, '--jit', 'sometimes'])
    check('bad --jit', rc == 2 and '--jit is off or auto' in err, err)
    rc, out, err = run([kiln, 'cluster'])
    check('cluster without model', rc == 2 and 'kiln cluster needs a model' in err, err)

    shutil.rmtree(tmp, ignore_errors=True)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
