"""Optimization passes must never change a result bit.

For every module in tests/hlo/corpus/*.hlo and examples/*.hlo, plus a few modules
written below that exercise each pass (batch-norm in every float type, transposes into
dots, the simplifier's rules, CSE and folding): draw random inputs with
numpy for the entry parameters, run the module as written with `kiln run` (the reference
evaluator), run `kiln compile` to get the optimized module text, run that on the same
inputs, and require every output to be bitwise identical (dtype, shape and bytes; NaNs
compare by their bits). The evaluator is the judge here, not numpy: the point is that the
pipeline (algebraic simplifier, constant folding, CSE, batch-norm expansion, transpose
folding, DCE) preserves exactly what the unoptimized module computes. Modules the
evaluator cannot run as written (custom-calls, tuple-shaped parameters, ...) are skipped
with the reason. Usage: /usr/bin/python3 tests/hlo/test_passes_equivalence.py --kiln PATH
[-k SUBSTRING] [--seeds N] [--chains N]. Prints "N passed, N failed" and exits 1 on any failure.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

np.seterr(all='ignore')

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DTYPES = {
    'pred': np.bool_, 's8': np.int8, 's16': np.int16, 's32': np.int32, 's64': np.int64,
    'u8': np.uint8, 'u16': np.uint16, 'u32': np.uint32, 'u64': np.uint64,
    'f16': np.float16, 'bf16': np.float32, 'f32': np.float32, 'f64': np.float64,
}

# "%name = f32[2,3]{1,0} parameter(0)" (the '%' and the layout are optional)
PARAM_RE = re.compile(r'^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\w+)\[([^\]]*)\](?:\{[^}]*\})?\s+parameter\((\d+)\)')


# Modules that exercise every pass on shapes and types the corpus lacks; they go through
# the same check as the corpus files.
EXTRA_MODULES = {}
for _t in ['f32', 'f16', 'bf16', 'f64']:
    EXTRA_MODULES['batchnorm_%s' % _t] = """HloModule bn_T
ENTRY main {
  x = T[2,3,5] parameter(0)
  s = T[3] parameter(1)
  o = T[3] parameter(2)
  m = T[3] parameter(3)
  v0 = T[3] parameter(4)
  v = T[3] multiply(v0, v0)
  bn0 = T[2,3,5] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
  bn2 = T[2,3,5] batch-norm-inference(x, o, s, m, v), epsilon=1e-05, feature_index=1
  ROOT r = (T[2,3,5], T[2,3,5]) tuple(bn0, bn2)
}
""".replace('T[', _t + '[')
EXTRA_MODULES['transpose_dots'] = """HloModule tdots
ENTRY main {
  a = f32[3,2] parameter(0)
  b = f32[4,3] parameter(1)
  c = f32[3,5,2] parameter(2)
  d = f32[5,3,4] parameter(3)
  e = f32[4,2,3] parameter(4)
  at = f32[2,3] transpose(a), dimensions={1,0}
  bt = f32[3,4] transpose(b), dimensions={1,0}
  d1 = f32[2,4] dot(at, bt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ct = f32[5,2,3] transpose(c), dimensions={1,2,0}
  d2 = f32[5,2,4] dot(ct, d), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  et = f32[2,4,3] transpose(e), dimensions={1,0,2}
  d3 = f32[2,4,4] dot(et, b), lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT r = (f32[2,4], f32[5,2,4], f32[2,4,4]) tuple(d1, d2, d3)
}
"""
EXTRA_MODULES['algsimp_rules'] = """HloModule rules
ENTRY main {
  x = f32[4,6] parameter(0)
  h = f16[4,6] parameter(1)
  i = s32[4,6] parameter(2)
  nz = f32[] constant(-0)
  nzb = f32[4,6] broadcast(nz), dimensions={}
  one = f32[] constant(1)
  oneb = f32[4,6] broadcast(one), dimensions={}
  pz = f32[] constant(0)
  pzb = f32[4,6] broadcast(pz), dimensions={}
  a = f32[4,6] add(x, nzb)
  b = f32[4,6] multiply(a, oneb)
  c = f32[4,6] divide(b, oneb)
  d = f32[4,6] subtract(c, pzb)
  e = f32[4,6] add(d, pzb)
  f = f32[4,6] multiply(e, pzb)
  hw = f32[4,6] convert(h)
  hn = f16[4,6] convert(hw)
  xn = f16[4,6] convert(x)
  xw = f32[4,6] convert(xn)
  r1 = f32[24] reshape(xw)
  r2 = f32[6,4] reshape(r1)
  t1 = f32[4,6] transpose(r2), dimensions={1,0}
  t2 = f32[6,4] transpose(t1), dimensions={1,0}
  s1 = f32[5,3] slice(t2), slice={[1:6], [0:3]}
  s2 = f32[2,2] slice(s1), slice={[1:5:2], [0:3:2]}
  iz = s32[] constant(0)
  izb = s32[4,6] broadcast(iz), dimensions={}
  im = s32[4,6] multiply(i, izb)
  ia = s32[4,6] add(im, i)
  in1 = s32[4,6] negate(ia)
  in2 = s32[4,6] negate(in1)
  cmp = pred[4,6] compare(in2, in2), direction=LE
  fcmp = pred[4,6] compare(x, x), direction=EQ
  sel = f32[4,6] select(cmp, f, x)
  k1 = s32[] constant(7)
  k2 = s32[] constant(-1)
  ds = f32[2,3] dynamic-slice(x, k1, k2), dynamic_slice_sizes={2,3}
  cc = f32[4,6] concatenate(sel), dimensions={1}
  pd = f32[4,6] pad(cc, pz), padding=0_0x0_0
  bb = f32[3,4,6] broadcast(pd), dimensions={1,2}
  bbb = f32[2,3,4,6] broadcast(bb), dimensions={1,2,3}
  ROOT r = (f32[2,3,4,6], f16[4,6], f32[2,2], s32[4,6], pred[4,6], f32[2,3], pred[4,6]) tuple(bbb, hn, s2, in2, cmp, ds, fcmp)
}
"""
EXTRA_MODULES['int_reduce_of_broadcast'] = """HloModule rb
add_s8 {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT s = s8[] add(a, b)
}
min_u16 {
  c = u16[] parameter(0)
  d = u16[] parameter(1)
  ROOT m = u16[] minimum(c, d)
}
ENTRY main {
  x = s8[3,4] parameter(0)
  i = s8[] parameter(1)
  u = u16[4] parameter(2)
  j = u16[] parameter(3)
  bx = s8[3,50,4,3] broadcast(x), dimensions={0,2}
  r1 = s8[3,4] reduce(bx, i), dimensions={1,3}, to_apply=add_s8
  ub = u16[2,4] broadcast(u), dimensions={1}
  r2 = u16[4] reduce(ub, j), dimensions={0}, to_apply=min_u16
  ROOT r = (s8[3,4], u16[4]) tuple(r1, r2)
}
"""
EXTRA_MODULES['cse_and_folding'] = """HloModule cf
add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY main {
  x = s32[8] parameter(0)
  io = s32[8] iota(), iota_dimension=0
  c = s32[8] constant({3, -1, 4, 1, -5, 9, 2, -6})
  m = s32[8] multiply(c, c)
  z = s32[] constant(0)
  rs = s32[] reduce(m, z), dimensions={0}, to_apply=add_s32
  rb = s32[8] broadcast(rs), dimensions={}
  a1 = s32[8] add(x, rb)
  a2 = s32[8] add(x, rb)
  p1 = s32[8] multiply(a1, io)
  p2 = s32[8] multiply(a2, io)
  ROOT r = s32[8] subtract(p1, p2)
}
"""


def random_chain_module(seed):
    """A random chain of shape ops and identity-like arithmetic on one f32 parameter:
    the simplifier's composition rules (reshape/transpose/slice/broadcast chains,
    convert round trips, negate pairs, x*1, x+(-0)) meet each other in orders no
    hand-written case covers."""
    rng = np.random.default_rng(seed)
    dims = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
    lines = ['  v0 = f32[%s] parameter(0)' % ','.join(map(str, dims))]
    outs = []
    cur, cur_dims, n = 'v0', dims, 0

    def shape(d):
        return 'f32[%s]' % ','.join(map(str, d))

    def emit(text, new_dims):
        nonlocal cur, cur_dims, n
        n += 1
        lines.append('  v%d = %s %s' % (n, shape(new_dims), text))
        cur, cur_dims = 'v%d' % n, new_dims

    for _ in range(int(rng.integers(4, 12))):
        k = int(rng.integers(0, 9))
        r = len(cur_dims)
        if k == 0 and r > 0:
            perm = [int(p) for p in rng.permutation(r)]
            emit('transpose(%s), dimensions={%s}' % (cur, ','.join(map(str, perm))),
                 [cur_dims[p] for p in perm])
        elif k == 1:
            total = int(np.prod(cur_dims)) if cur_dims else 1
            new = [total] if rng.integers(0, 2) else list(reversed(cur_dims))
            emit('reshape(%s)' % cur, new)
        elif k == 2 and r > 0:
            sl, nd = [], []
            for d in cur_dims:
                st = int(rng.integers(0, d))
                lim = int(rng.integers(st + 1, d + 1))
                stride = int(rng.integers(1, 3))
                sl.append('[%d:%d:%d]' % (st, lim, stride))
                nd.append((lim - st + stride - 1) // stride)
            emit('slice(%s), slice={%s}' % (cur, ', '.join(sl)), nd)
        elif k == 3 and r < 4:
            pos = int(rng.integers(0, r + 1))
            new = cur_dims[:pos] + [int(rng.integers(1, 4))] + cur_dims[pos:]
            bd = [i if i < pos else i + 1 for i in range(r)]
            emit('broadcast(%s), dimensions={%s}' % (cur, ','.join(map(str, bd))), new)
        elif k == 4:
            emit('negate(%s)' % cur, cur_dims)
        elif k == 5:
            wide = 'f64' if rng.integers(0, 2) else 'f16'
            n += 1
            lines.append('  v%d = %s[%s] convert(%s)' % (n, wide, ','.join(map(str, cur_dims)), cur))
            emit('convert(v%d)' % n, cur_dims)
        elif k in (6, 7):
            const, op = [('-0', 'add'), ('1', 'multiply'), ('0', 'subtract'), ('1', 'divide'),
                         ('0', 'add')][int(rng.integers(0, 5))]
            n += 1
            lines.append('  v%d = f32[] constant(%s)' % (n, const))
            n += 1
            lines.append('  v%d = %s broadcast(v%d), dimensions={}' % (n, shape(cur_dims), n - 1))
            emit('%s(%s, v%d)' % (op, cur, n), cur_dims)
        else:
            outs.append((cur, shape(cur_dims)))
    outs.append((cur, shape(cur_dims)))
    root = '  ROOT out = (%s) tuple(%s)' % (', '.join(o[1] for o in outs), ', '.join(o[0] for o in outs))
    return 'HloModule chain_%d\nENTRY main {\n%s\n%s\n}\n' % (seed, '\n'.join(lines), root)




def entry_params(text):
    """[(number, type, dims)] of the ENTRY computation, or a reason string."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('ENTRY')), None)
    if start is None:
        return 'no ENTRY computation'
    params = []
    for line in lines[start + 1:]:
        if line.startswith('}'):
            break
        if 'parameter(' not in line:
            continue
        m = PARAM_RE.match(line)
        if not m:
            return 'entry parameter that is not an array: ' + line.strip()[:80]
        t, dims, num = m.group(1), m.group(2), int(m.group(3))
        if t not in DTYPES:
            return 'parameter of unsupported type ' + t
        dims = [int(d.replace('<=', '')) for d in dims.split(',') if d.strip()]
        params.append((num, t, dims))
    params.sort()
    return params


def random_input(rng, t, dims):
    if t == 'pred':
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    if t.startswith('s'):
        return rng.integers(-4, 5, size=dims).astype(DTYPES[t])
    if t.startswith('u'):
        return rng.integers(0, 5, size=dims).astype(DTYPES[t])
    x = rng.standard_normal(size=dims) * 2.0
    if t == 'bf16':  # travels as f32; keep values exactly representable in bf16
        x = (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.asarray(x, dtype=DTYPES[t])


def run_kiln(kiln, hlo_path, inputs, out_dir):
    cmd = [kiln, 'run', hlo_path, '-o', out_dir, '--device', 'interpreter']
    for name, path in inputs:
        cmd += ['-i', '%s=%s' % (name, path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:] or ['exit %d' % p.returncode]
    outs = []
    i = 0
    while os.path.exists(os.path.join(out_dir, 'output_%d.npy' % i)):
        outs.append(np.load(os.path.join(out_dir, 'output_%d.npy' % i)))
        i += 1
    return outs, None


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check_module(kiln, path, seeds, tmp):
    """Returns ('pass'|'fail'|'skip', message)."""
    with open(path) as f:
        text = f.read()
    params = entry_params(text)
    if isinstance(params, str):
        return 'skip', params
    base = os.path.join(tmp, os.path.basename(path).replace('.hlo', ''))
    os.makedirs(base, exist_ok=True)
    p = subprocess.run([kiln, 'compile', path], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return 'fail', 'kiln compile failed: ' + p.stderr.strip()[-300:]
    opt_path = os.path.join(base, 'optimized.hlo')
    with open(opt_path, 'w') as f:
        f.write(p.stdout)
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        inputs = []
        for num, t, dims in params:
            ip = os.path.join(base, 'p%d_s%d.npy' % (num, seed))
            np.save(ip, random_input(rng, t, dims))
            inputs.append(('p%d' % num, ip))
        ref, err = run_kiln(kiln, path, inputs, os.path.join(base, 'ref%d' % seed))
        if ref is None:
            return 'skip', 'evaluator cannot run it as written: ' + ' '.join(err)[:200]
        got, err = run_kiln(kiln, opt_path, inputs, os.path.join(base, 'opt%d' % seed))
        if got is None:
            return 'fail', 'optimized module failed to run: ' + ' '.join(err)[:300]
        if len(got) != len(ref):
            return 'fail', 'optimized module has %d outputs, original %d' % (len(got), len(ref))
        for i, (a, b) in enumerate(zip(ref, got)):
            if not same_bits(a, b):
                return 'fail', 'output %d differs (seed %d): %s vs %s' % (
                    i, seed, a.ravel()[:6], b.ravel()[:6])
    return 'pass', '%d -> %d lines' % (text.count('\n'), p.stdout.count('\n'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kiln', required=True)
    ap.add_argument('-k', default='')
    ap.add_argument('--seeds', type=int, default=2)
    ap.add_argument('--chains', type=int, default=24, help='random chain modules to add')
    args = ap.parse_args()
    for seed in range(args.chains):
        EXTRA_MODULES['random_chain_%03d' % seed] = random_chain_module(seed)
    kiln = os.path.abspath(args.kiln)
    files = sorted(glob.glob(os.path.join(ROOT, 'tests/hlo/corpus/*.hlo'))) + \
        sorted(glob.glob(os.path.join(ROOT, 'examples/*.hlo')))
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory(prefix='kiln_passes_eq_') as tmp:
        extra_dir = os.path.join(tmp, 'extra')
        os.makedirs(extra_dir)
        for name, text in sorted(EXTRA_MODULES.items()):
            path = os.path.join(extra_dir, name + '.hlo')
            with open(path, 'w') as f:
                f.write(text)
            files.append(path)
        files = [f for f in files if args.k in os.path.basename(f)]
        for path in files:
            rel = os.path.relpath(path, ROOT) if path.startswith(ROOT) else 'extra:' + os.path.basename(path)
            try:
                status, msg = check_module(kiln, path, args.seeds, tmp)
            except subprocess.TimeoutExpired:
                status, msg = 'fail', 'timed out'
            if status == 'pass':
                passed += 1
                print('PASS %s (%s)' % (rel, msg))
            elif status == 'skip':
                skipped += 1
                print('SKIP %s: %s' % (rel, msg))
            else:
                failed += 1
                print('FAIL %s: %s' % (rel, msg))
    print('%d passed, %d failed (%d skipped)' % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
