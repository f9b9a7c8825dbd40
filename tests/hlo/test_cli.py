"""End-to-end tests of the `kiln` command, with numpy as the independent reference.

Covers `kiln run` (inputs of every dtype written by numpy, named and numbered
parameters, tuple roots flattened to output_N.npy, --iters, --json, KILN_FLAGS, string
.npy files in and out, optional inputs of graph models, ONNX sequences, optionals and
maps as directories and NAME.none files in and out), every
user-facing error with its exit code and message (missing/unknown/mismatched inputs,
unknown device or flag, malformed HLO with line:col, unknown opcode, verifier errors,
truncated / fortran-order / absurdly large .npy files, missing files), modules with
calls compiled on the cpu device without the interpreter fallback, `kiln compile`
with --dump_to, and `kiln flags` / `kiln devices` / `kiln help`.

Usage: /usr/bin/python3 tests/hlo/test_cli.py --kiln PATH [-k SUBSTRING] [--keep]
Prints "N passed, N failed" and exits 1 if anything failed.
"""

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

KILN = None
TMP = None
TESTS = []

ALL_TYPES = ['pred', 's8', 's16', 's32', 's64', 'u8', 'u16', 'u32', 'u64',
             'f16', 'bf16', 'f32', 'f64']
NP_DTYPE = {'pred': np.bool_, 's8': np.int8, 's16': np.int16, 's32': np.int32,
            's64': np.int64, 'u8': np.uint8, 'u16': np.uint16, 'u32': np.uint32,
            'u64': np.uint64, 'f16': np.float16, 'bf16': np.float32, 'f32': np.float32,
            'f64': np.float64}


def test(fn):
    TESTS.append(fn)
    return fn


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout.decode('utf-8', 'replace')
        self.err = proc.stderr.decode('utf-8', 'replace')

    def __repr__(self):
        return 'exit %d\nstdout: %s\nstderr: %s' % (self.rc, self.out[-1500:], self.err[-1500:])


def kiln(*args, env_flags=None, timeout=120):
    env = dict(os.environ)
    env.pop('KILN_FLAGS', None)
    if env_flags is not None:
        env['KILN_FLAGS'] = env_flags
    proc = subprocess.run([KILN] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=timeout)
    return Result(proc)


def check(cond, msg, res=None):
    if not cond:
        raise AssertionError(msg + ('\n' + repr(res) if res is not None else ''))


def expect_ok(res):
    check(res.rc == 0, 'expected exit 0', res)
    return res


def expect_fail(res, code, *needles):
    check(res.rc == code, 'expected exit %d' % code, res)
    check(res.err.startswith('kiln: error: '), 'stderr lacks the "kiln: error: " prefix', res)
    for n in needles:
        if isinstance(n, re.Pattern):
            check(n.search(res.err), 'stderr does not match /%s/' % n.pattern, res)
        else:
            check(n in res.err, 'stderr lacks %r' % n, res)
    check('AddressSanitizer' not in res.err and 'LeakSanitizer' not in res.err,
          'sanitizer report', res)
    return res


_seq = [0]


def tmpdir(name='t'):
    _seq[0] += 1
    d = os.path.join(TMP, '%s_%03d' % (name, _seq[0]))
    os.makedirs(d)
    return d


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)
    return path


def save(d, name, array):
    p = os.path.join(d, name)
    np.save(p, array)
    return p


def load(d, i):
    return np.load(os.path.join(d, 'output_%d.npy' % i), allow_pickle=False)


def bf16_round(x):
    """float32 -> nearest bfloat16 (ties to even), as float32."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    lsb = (u >> np.uint64(16)) & np.uint64(1)
    r = ((u + np.uint64(0x7fff) + lsb) & np.uint64(0xffff0000)).astype(np.uint32)
    return r.view(np.float32).reshape(x.shape)


def random_array(rng, t, shape):
    if t == 'pred':
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    dt = np.dtype(NP_DTYPE[t])
    if dt.kind in 'iu':
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    vals = rng.standard_normal(size=shape) * 10
    return np.asarray(vals).astype(dt)


def binary_module(t, dims, op='add', name='m'):
    shape = '%s[%s]' % (t, ','.join(str(d) for d in dims))
    return ('HloModule %s\n\nENTRY %%main (p0: %s, p1: %s) -> %s {\n'
            '  %%p0 = %s parameter(0)\n  %%p1 = %s parameter(1)\n'
            '  ROOT %%r = %s %s(%%p0, %%p1)\n}\n') % (name, shape, shape, shape, shape, shape, shape, op)


ADD_F32 = binary_module('f32', (2, 3), name='add_f32')


# ----------------------------------------------------------------------------- run

@test
def run_binary_every_dtype():
    rng = np.random.default_rng(1)
    for t in ALL_TYPES:
        for dims in [(2, 3), (), (0, 4)]:
            d = tmpdir('dtype_%s' % t)
            op = 'or' if t == 'pred' else 'add'
            hlo = write(os.path.join(d, 'm.hlo'), binary_module(t, dims, op, 'bin_%s' % t))
            a = random_array(rng, t, dims)
            b = random_array(rng, t, dims)
            if t == 'bf16':
                a, b = bf16_round(a), bf16_round(b)
            out = os.path.join(d, 'out')
            expect_ok(kiln('run', hlo, '-i', 'p0=' + save(d, 'a.npy', a),
                           '-i', 'p1=' + save(d, 'b.npy', b), '-o', out))
            got = load(out, 0)
            with np.errstate(all='ignore'):
                if t == 'pred':
                    want = a | b
                elif t == 'bf16':
                    want = bf16_round(a + b)
                else:
                    want = (a + b).astype(NP_DTYPE[t])
            check(got.dtype == np.dtype(NP_DTYPE[t]), '%s: output dtype %s' % (t, got.dtype))
            check(got.shape == tuple(dims), '%s: output shape %s' % (t, got.shape))
            check(np.array_equal(got, want), '%s%s: got %s want %s' % (t, dims, got, want))


@test
def output_bytes_match_np_save():
    d = tmpdir('bytes')
    hlo = write(os.path.join(d, 'm.hlo'), binary_module('s32', (3, 4), 'add', 'bytes'))
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = os.path.join(d, 'out')
    expect_ok(kiln('run', hlo, '-i', 'p0=' + save(d, 'a.npy', a), '-i', 'p1=' + save(d, 'b.npy', a),
                   '-o', out))
    buf = io.BytesIO()
    np.save(buf, a + a)
    with open(os.path.join(out, 'output_0.npy'), 'rb') as f:
        check(f.read() == buf.getvalue(), 'kiln output is not byte-identical to np.save')


@test
def tuple_root_flattened_depth_first():
    d = tmpdir('tuple')
    hlo = write(os.path.join(d, 'm.hlo'), """HloModule tuples

ENTRY main {
  x = f32[3] parameter(0)
  n = s32[] parameter(1)
  neg = f32[3] negate(x)
  twice = s32[] add(n, n)
  inner = (s32[], f32[3]) tuple(twice, x)
  b = pred[] compare(n, n), direction=EQ
  ROOT t = (f32[3], (s32[], f32[3]), pred[]) tuple(neg, inner, b)
}
""")
    x = np.array([1.5, -2, 0.25], np.float32)
    out = os.path.join(d, 'out')
    expect_ok(kiln('run', hlo, '-i', 'p0=' + save(d, 'x.npy', x),
                   '-i', 'n=' + save(d, 'n.npy', np.int32(21)), '-o', out))
    check(np.array_equal(load(out, 0), -x), 'output_0')
    o1 = load(out, 1)
    check(o1.shape == () and o1.dtype == np.int32 and int(o1) == 42, 'output_1 %r' % o1)
    check(np.array_equal(load(out, 2), x), 'output_2')
    o3 = load(out, 3)
    check(o3.dtype == np.bool_ and bool(o3), 'output_3 %r' % o3)
    check(not os.path.exists(os.path.join(out, 'output_4.npy')), 'extra output')


@test
def named_parameters():
    d = tmpdir('named')
    hlo = write(os.path.join(d, 'm.hlo'), """HloModule named, entry_computation_layout={(f32[4]{0}, f32[4]{0}, f32[])->f32[4]{0}}

ENTRY %main.7 (weights: f32[4], bias: f32[4], scale: f32[]) -> f32[4] {
  %weights = f32[4]{0} parameter(0), metadata={op_name="w"}
  %bias = f32[4]{0} parameter(1)
  %scale = f32[] parameter(2)
  %b = f32[4]{0} broadcast(f32[] %scale), dimensions={}
  %m = f32[4]{0} multiply(f32[4]{0} %weights, f32[4]{0} %b)
  ROOT %s = f32[4]{0} subtract(f32[4]{0} %m, f32[4]{0} %bias)
}
""")
    w = np.array([1, 2, 3, 4], np.float32)
    b = np.array([0.5, 0.25, -1, 8], np.float32)
    out = os.path.join(d, 'out')
    # Names, a pN alias and any order.
    expect_ok(kiln('run', hlo, '-i', 'bias=' + save(d, 'b.npy', b), '-i', 'p2=' + save(d, 's.npy', np.float32(3)),
                   '-i', 'weights=' + save(d, 'w.npy', w), '-o', out))
    check(np.array_equal(load(out, 0), w * np.float32(3) - b), 'named result')
    # Giving the same parameter twice is an error.
    expect_fail(kiln('run', hlo, '-i', 'bias=' + os.path.join(d, 'b.npy'), '-i', 'p1=' + os.path.join(d, 'b.npy'),
                     '-i', 'p2=' + os.path.join(d, 's.npy'), '-i', 'p0=' + os.path.join(d, 'w.npy'), '-o', out),
                1, 'given twice')


@test
def input_encodings():
    """Big-endian data and .npy format versions 2.0 and 3.0 written by numpy itself."""
    d = tmpdir('enc')
    hlo = write(os.path.join(d, 'm.hlo'), binary_module('f64', (5,), 'multiply', 'enc'))
    a = np.linspace(-2, 2, 5)
    big = a.astype('>f8')
    p_big = save(d, 'big.npy', big)
    p_v2 = os.path.join(d, 'v2.npy')
    with open(p_v2, 'wb') as f:
        np.lib.format.write_array(f, a, version=(2, 0))
    p_v3 = os.path.join(d, 'v3.npy')
    with open(p_v3, 'wb') as f:
        np.lib.format.write_array(f, a, version=(3, 0))
    for p in (p_big, p_v2, p_v3):
        out = os.path.join(d, 'out_' + os.path.basename(p))
        expect_ok(kiln('run', hlo, '-i', 'p0=' + p, '-i', 'p1=' + p, '-o', out))
        check(np.array_equal(load(out, 0), a * a), 'result for %s' % p)


@test
def bf16_parameters_round_to_nearest_even():
    d = tmpdir('bf16')
    hlo = write(os.path.join(d, 'm.hlo'), """HloModule bf16
ENTRY main {
  p0 = bf16[4] parameter(0)
  ROOT c = bf16[4] copy(p0)
}
""")
    x = np.array([1.00390625, 1.01171875, 3.14159, -1e-3], np.float32)
    out = os.path.join(d, 'out')
    expect_ok(kiln('run', hlo, '-i', 'p0=' + save(d, 'x.npy', x), '-o', out))
    got = load(out, 0)
    check(got.dtype == np.float32, 'bf16 output written as float32')
    check(np.array_equal(got, bf16_round(x)), 'got %r want %r' % (got, bf16_round(x)))
    # A bf16 parameter given float64 is an error that explains what to pass.
    expect_fail(kiln('run', hlo, '-i', 'p0=' + save(d, 'y.npy', x.astype(np.float64)), '-o', out), 1,
                'bfloat16[4]', 'float64[4]', 'float32')


@test
def iters_and_json():
    d = tmpdir('json')
    hlo = write(os.path.join(d, 'm.hlo'), ADD_F32)
    a = np.ones((2, 3), np.float32)
    pa = save(d, 'a.npy', a)
    out = os.path.join(d, 'deep', 'er', 'out')  # created on demand
    res = expect_ok(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '-o', out, '--iters', '5', '--json'))
    lines = res.out.splitlines()
    check(len(lines) == 1, 'expected exactly one stdout line', res)
    j = json.loads(lines[0])
    check(set(j) == {'device', 'first_ms', 'median_ms', 'iters', 'evaluated_instructions', 'bytes_to_device',
                     'bytes_to_host', 'last_run_bytes_to_device', 'last_run_bytes_to_host'}, 'keys %s' % sorted(j))
    check(j['evaluated_instructions'] == 0, 'an add is compiled, not evaluated: %r' % j)
    # cpu has no memory of its own: nothing crosses a host/device boundary.
    check(all(j[k] == 0 for k in ('bytes_to_device', 'bytes_to_host', 'last_run_bytes_to_device',
                                  'last_run_bytes_to_host')), 'no transfers on cpu: %r' % j)
    default = re.search(r'^(\S+)\s.*\(default\)$', kiln('devices').out, re.M)
    check(default and j['device'] == default.group(1) and j['iters'] == 5, 'values %r' % j)
    check(isinstance(j['first_ms'], float) and j['first_ms'] >= 0 and j['median_ms'] >= 0, 'times %r' % j)
    check(np.array_equal(load(out, 0), a + a), 'result')
    # Without --json: a readable report naming each output and the timing.
    res = expect_ok(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '-o', out, '--iters=3'))
    check('output_0.npy' in res.out and 'f32[2,3]' in res.out and 'median' in res.out, 'report', res)
    expect_fail(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '--iters=0'), 2, '--iters')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '--iters=abc'), 2, '--iters', 'abc')


def chain_module(n, length=1024):
    """One long chain of n elementwise instructions (bench/compile_chain.py's shape):
    LLVM's time grows with it, so it shows what the persistent cache saves."""
    t = 'f32[%d]' % length
    lines = ['HloModule cache_chain_%d' % n, '', 'ENTRY main {',
             '  p0 = %s parameter(0)' % t, '  p1 = %s parameter(1)' % t]
    prev = 'p0'
    ops = ['add', 'multiply', 'tanh', 'subtract']
    for i in range(n):
        op = ops[i % 4]
        name = 'v%d' % i
        if op == 'tanh':
            lines.append('  %s = %s tanh(%s)' % (name, t, prev))
        else:
            lines.append('  %s = %s %s(%s, p1)' % (name, t, op, prev))
        prev = name
    lines.append('  ROOT r = %s add(%s, p0)' % (t, prev))
    lines.append('}')
    return '\n'.join(lines) + '\n'


@test
def cache_dir_second_process_links_stored_code():
    d = tmpdir('cache_dir')
    hlo = write(os.path.join(d, 'chain.hlo'), chain_module(600))
    rng = np.random.default_rng(3)
    pa = save(d, 'a.npy', rng.standard_normal(1024).astype(np.float32))
    pb = save(d, 'b.npy', (0.5 * rng.standard_normal(1024)).astype(np.float32))
    cache = os.path.join(d, 'cache', 'sub')  # created on demand
    times, outs = [], []
    for i in range(2):
        out = os.path.join(d, 'out%d' % i)
        t0 = time.monotonic()
        res = expect_ok(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pb, '-o', out, '--cache_dir', cache,
                             '--v=1', '--json'))
        times.append(time.monotonic() - t0)
        outs.append(load(out, 0))
        j = json.loads(res.out.splitlines()[-1])
        want = (0, 1, 1) if i == 0 else (1, 0, 0)
        got = (j.get('compile_cache_hits'), j.get('compile_cache_misses'), j.get('compile_cache_writes'))
        check(got == want, '--json cache counts %r, want %r' % (got, want), res)
        if i == 0:
            check('compile cache: wrote' in res.err, 'first process writes an entry', res)
        else:
            check('compile cache: loaded' in res.err, 'second process loads the entry', res)
    entries = [f for f in os.listdir(cache) if f.endswith('.kiln-obj')]
    check(len(entries) == 1, 'one entry, got %r' % entries)
    check(np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32)), 'bit-identical outputs')
    check(times[1] < times[0], 'second process faster: %.3f s then %.3f s' % tuple(times))
    print('    cache_dir: chain of 600 -- first process %.3f s, second %.3f s' % tuple(times))
    # A corrupted entry is noticed, recompiled and rewritten; the run still succeeds.
    path = os.path.join(cache, entries[0])
    with open(path, 'r+b') as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xff]))
    out = os.path.join(d, 'out2')
    res = expect_ok(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pb, '-o', out, '--cache_dir', cache, '--v=1'))
    check('checksum mismatch' in res.err and 'compile cache: wrote' in res.err, 'corruption noticed', res)
    check(np.array_equal(load(out, 0).view(np.uint32), outs[0].view(np.uint32)), 'same outputs after recompiling')
    # The flag is also read from KILN_FLAGS, and an unusable directory is only a warning.
    blocker = write(os.path.join(d, 'a_file'), 'not a directory')
    small = write(os.path.join(d, 'small.hlo'), chain_module(4))
    res = expect_ok(kiln('run', small, '-i', 'p0=' + pa, '-i', 'p1=' + pb, '-o', out,
                         env_flags='--cache_dir=' + os.path.join(blocker, 'cache')))
    check('kiln: warning: cpu: compile cache: cannot create the directory' in res.err, 'warning', res)
    check('--cache_dir' in kiln('help').out, 'kiln help names --cache_dir')


# JAX-style HLO: a named function as a call (nested, called twice) and a reducer whose
# parameter names repeat the entry's, as XLA's own tests write them.
CALLS = """HloModule jit_f

relu.1 {
  x = f32[2,3] parameter(0)
  z = f32[] constant(0)
  zb = f32[2,3] broadcast(z), dimensions={}
  ROOT m = f32[2,3] maximum(x, zb)
}

shifted_relu {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  s = f32[2,3] subtract(x, y)
  ROOT r = f32[2,3] call(s), to_apply=relu.1
}

add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}

ENTRY main {
  lhs = f32[2,3] parameter(0)
  rhs = f32[2,3] parameter(1)
  a = f32[2,3] call(lhs, rhs), to_apply=shifted_relu
  b = f32[2,3] call(rhs), to_apply=relu.1
  m = f32[2,3] multiply(a, b)
  z = f32[] constant(0)
  ROOT s = f32[2] reduce(m, z), dimensions={1}, to_apply=add
}
"""


@test
def calls_compile_on_cpu():
    """A module with calls runs on the cpu device itself (the call inliner removes them),
    never through the interpreter fallback; the entry keeps its parameter names."""
    d = tmpdir('calls')
    hlo = write(os.path.join(d, 'calls.hlo'), CALLS)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    px, py = save(d, 'x.npy', x), save(d, 'y.npy', y)
    want = (np.maximum(x - y, 0) * np.maximum(y, 0)).sum(axis=1, dtype=np.float32)
    for inputs in (('p0=' + px, 'p1=' + py), ('lhs=' + px, 'rhs=' + py)):
        out = os.path.join(d, 'out_' + inputs[0][:1])
        args = ['run', hlo, '--device', 'cpu', '--json', '-o', out]
        for i in inputs:
            args += ['-i', i]
        res = expect_ok(kiln(*args))
        check(json.loads(res.out)['device'] == 'cpu', 'ran on %s' % res.out.strip(), res)
        check('running it on' not in res.err and 'cannot compile' not in res.err, 'fell back', res)
        check(np.allclose(load(out, 0), want, rtol=1e-6, atol=1e-6), 'result %r want %r' % (load(out, 0), want))
    # What the pipeline leaves: no call, no callee; the reducer stays.
    res = expect_ok(kiln('compile', hlo))
    check(' call(' not in res.out and 'relu' not in res.out, 'calls left after compile', res)
    check(re.search(r'^%add \(lhs\.1: f32\[\], rhs\.1: f32\[\]\) -> f32\[\] \{$', res.out, re.M),
          'the reducer (its names made unique)', res)


@test
def kiln_flags_environment():
    d = tmpdir('env')
    hlo = write(os.path.join(d, 'm.hlo'), ADD_F32)
    pa = save(d, 'a.npy', np.ones((2, 3), np.float32))
    out = os.path.join(d, 'out')
    res = expect_ok(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '-o', out,
                         env_flags='--json --iters=2 --device=interpreter'))
    check(json.loads(res.out)['iters'] == 2, 'KILN_FLAGS iters', res)
    res = expect_ok(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '-o', out, '--iters=4',
                         env_flags='--json --iters=2'))
    check(json.loads(res.out)['iters'] == 4, 'the command line wins over KILN_FLAGS', res)
    # Inputs can come from the environment too.
    res = expect_ok(kiln('run', hlo, '-o', out, '--json', env_flags='-i p0=%s -i p1=%s' % (pa, pa)))
    expect_fail(kiln('run', hlo, env_flags='--bogus_flag=1'), 2, 'KILN_FLAGS', '--bogus_flag')
    expect_fail(kiln('run', hlo, env_flags='--iters=x'), 2, 'KILN_FLAGS', '--iters')
    res = expect_ok(kiln('flags', env_flags='--iters=9'))
    check(re.search(r'--iters .*\[now: 9\]', res.out), 'kiln flags shows the environment value', res)


# -------------------------------------------------------------------------- errors

@test
def missing_inputs_listed():
    d = tmpdir('missing')
    hlo = write(os.path.join(d, 'm.hlo'), """HloModule three
ENTRY main {
  a = f32[2] parameter(0)
  b = s32[3,1] parameter(1)
  c = f32[2] parameter(2)
  ROOT r = f32[2] add(a, c)
}
""")
    pa = save(d, 'a.npy', np.zeros(2, np.float32))
    res = expect_fail(kiln('run', hlo, '-i', 'a=' + pa, '-o', d), 1, 'missing inputs')
    for needle in ('-i a (float32[2])', 'b (int32[3,1])', 'c (float32[2])'):
        check(needle in res.err, 'message lacks %s' % needle, res)
    res = expect_fail(kiln('run', hlo, '-o', d), 1, 'missing inputs: a (float32[2]), b (int32[3,1]), c (float32[2])')


@test
def mismatched_inputs():
    d = tmpdir('mismatch')
    hlo = write(os.path.join(d, 'm.hlo'), ADD_F32)
    good = save(d, 'good.npy', np.zeros((2, 3), np.float32))
    wrong_t = save(d, 'ints.npy', np.zeros((2, 3), np.int32))
    wrong_s = save(d, 'tall.npy', np.zeros((3, 2), np.float32))
    expect_fail(kiln('run', hlo, '-i', 'p0=' + good, '-i', 'p1=' + wrong_t), 1, 'float32[2,3]', 'int32[2,3]', 'ints.npy')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + wrong_s, '-i', 'p1=' + good), 1, 'float32[2,3]', 'float32[3,2]', 'tall.npy')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + good, '-i', 'p1=' + good, '-i', 'weights=' + good), 1,
                "unknown input 'weights'", '-i p0 (float32[2,3])')
    expect_fail(kiln('run', hlo, '-i', 'p7=' + good), 1, "unknown input 'p7'")
    expect_fail(kiln('run', hlo, '-i', 'p0'), 2, 'NAME=PATH')


@test
def bad_npy_files():
    d = tmpdir('badnpy')
    hlo = write(os.path.join(d, 'm.hlo'), ADD_F32)
    good = save(d, 'good.npy', np.zeros((2, 3), np.float32))
    with open(good, 'rb') as f:
        data = f.read()
    trunc = os.path.join(d, 'trunc.npy')
    with open(trunc, 'wb') as f:
        f.write(data[:-5])
    expect_fail(kiln('run', hlo, '-i', 'p0=' + good, '-i', 'p1=' + trunc), 1, 'trunc.npy', 'truncated')
    with open(trunc, 'wb') as f:
        f.write(data[:30])
    expect_fail(kiln('run', hlo, '-i', 'p0=' + good, '-i', 'p1=' + trunc), 1, 'trunc.npy', 'truncated')
    fortran = save(d, 'fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    expect_fail(kiln('run', hlo, '-i', 'p0=' + good, '-i', 'p1=' + fortran), 1, 'fortran.npy', 'fortran_order')
    # A header claiming 10 GB, on a file of a few bytes: refused at once, nothing allocated.
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (50000, 50000), }"
    header += ' ' * (63 - (10 + len(header)) % 64) + '\n'
    giant = os.path.join(d, 'giant.npy')
    with open(giant, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + len(header).to_bytes(2, 'little') + header.encode() + b'\0' * 16)
    t0 = time.time()
    expect_fail(kiln('run', hlo, '-i', 'p0=' + giant, '-i', 'p1=' + good), 1, 'giant.npy', '10000000000 bytes')
    check(time.time() - t0 < 10, 'the giant header took too long to refuse')
    notnpy = write(os.path.join(d, 'text.npy'), 'hello, world\n')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + notnpy, '-i', 'p1=' + good), 1, 'text.npy', 'magic')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + os.path.join(d, 'nope.npy'), '-i', 'p1=' + good), 1, 'nope.npy')
    cplx = save(d, 'complex.npy', np.zeros((2, 3), np.complex64))
    expect_fail(kiln('run', hlo, '-i', 'p0=' + cplx, '-i', 'p1=' + good), 1, 'complex.npy', 'not supported')


@test
def bad_hlo_files():
    d = tmpdir('badhlo')
    pa = save(d, 'a.npy', np.zeros((2, 3), np.float32))
    inputs = ['-i', 'p0=' + pa, '-i', 'p1=' + pa]
    malformed = write(os.path.join(d, 'malformed.hlo'), 'HloModule m\nENTRY main {\n  p0 = f32[2,3] parameter(0\n}\n')
    for cmd in ('run', 'compile'):
        expect_fail(kiln(cmd, malformed, *(inputs if cmd == 'run' else [])), 1, 'malformed.hlo',
                    re.compile(r'\d+:\d+'))
    unknown_op = write(os.path.join(d, 'op.hlo'),
                       'HloModule m\nENTRY main {\n  p0 = f32[2,3] parameter(0)\n'
                       '  p1 = f32[2,3] parameter(1)\n  ROOT r = f32[2,3] frobnicate(p0, p1)\n}\n')
    expect_fail(kiln('run', unknown_op, *inputs), 1, 'frobnicate', re.compile(r'\d+:\d+'))
    mismatch = write(os.path.join(d, 'shapes.hlo'),
                     'HloModule m\nENTRY main {\n  p0 = f32[2,3] parameter(0)\n'
                     '  p1 = f32[3,2] parameter(1)\n  ROOT r = f32[2,3] add(p0, p1)\n}\n')
    pb = save(d, 'b.npy', np.zeros((3, 2), np.float32))
    expect_fail(kiln('run', mismatch, '-i', 'p0=' + pa, '-i', 'p1=' + pb), 1, 'f32[3,2]')
    expect_fail(kiln('compile', mismatch), 1, 'f32[3,2]')
    expect_fail(kiln('run', os.path.join(d, 'does_not_exist.hlo'), *inputs), 1, 'does_not_exist.hlo')
    tuple_param = write(os.path.join(d, 'tp.hlo'),
                        'HloModule m\nENTRY main {\n  p0 = (f32[2], f32[2]) parameter(0)\n'
                        '  ROOT g = f32[2] get-tuple-element(p0), index=0\n}\n')
    expect_fail(kiln('run', tuple_param), 1, 'tuple')


@test
def usage_errors():
    res = kiln()
    check(res.rc == 2 and 'usage: kiln' in res.err, 'no arguments: usage, exit 2', res)
    res = expect_ok(kiln('help'))
    check('usage: kiln' in res.out, 'kiln help', res)
    res = expect_ok(kiln('--help'))
    check('usage: kiln' in res.out, 'kiln --help', res)
    expect_fail(kiln('frobnicate'), 2, "unknown command 'frobnicate'")
    expect_fail(kiln('run'), 2, 'HLO file')
    expect_fail(kiln('run', 'a.hlo', 'b.hlo'), 2, 'b.hlo')
    expect_fail(kiln('compile'), 2, 'HLO file')
    expect_fail(kiln('run', 'x.hlo', '--bogus'), 2, 'unknown flag --bogus')
    expect_fail(kiln('run', 'x.hlo', '-q'), 2, 'unknown flag -q')
    expect_fail(kiln('run', 'x.hlo', '--device'), 2, '--device', 'needs a value')
    expect_fail(kiln('run', 'x.hlo', '--json=perhaps'), 2, '--json')
    res = expect_fail(kiln('run', 'x.hlo', '--device=tpu'), 2, "unknown device 'tpu'", 'interpreter')


# ------------------------------------------------------------------------- compile

DEAD_CODE = """HloModule dead_code, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

unused_region {
  ua = f32[] parameter(0)
  ub = f32[] parameter(1)
  ROOT um = f32[] multiply(ua, ub)
}

region_add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  zero = f32[] constant(0)
  total = f32[] reduce(x, zero), dimensions={0}, to_apply=region_add
  wasted = f32[] reduce(x, zero), dimensions={0}, to_apply=unused_region
  spread = f32[4] broadcast(total), dimensions={}
  dead_mul = f32[4] multiply(x, x)
  ROOT r = f32[4] subtract(x, spread)
}
"""


@test
def compile_dumps_and_dce():
    d = tmpdir('compile')
    hlo = write(os.path.join(d, 'dead.hlo'), DEAD_CODE)
    dumps = os.path.join(d, 'dumps')
    res = expect_ok(kiln('compile', hlo, '--dump_to', dumps))
    for gone in ('dead_mul', 'wasted', 'unused_region'):
        check(gone not in res.out, '%s survived DCE' % gone, res)
    for kept in ('region_add', 'total', 'spread'):
        check(kept in res.out, '%s was removed' % kept, res)
    files = sorted(os.listdir(dumps))
    # XLA's naming: module_NNNN.NAME.before_optimizations.hlo, one NNNN.after_PASS.hlo per
    # pass that ran (the pipeline's exact pass list is not this test's business), and
    # after_optimizations.hlo.
    ends = ['module_0000.dead_code.after_optimizations.hlo', 'module_0000.dead_code.before_optimizations.hlo']
    check(all(e in files for e in ends), 'dump files %s' % files)
    per_pass = [f for f in files if f not in ends]
    check(per_pass and all(re.fullmatch(r'module_0000\.dead_code\.\d{4}\.after_[a-z0-9_-]+\.hlo', f)
                           for f in per_pass), 'per-pass dump names %s' % per_pass)
    check(any(f.endswith('.after_dce.hlo') for f in per_pass), 'no after_dce dump in %s' % per_pass)
    with open(os.path.join(dumps, 'module_0000.dead_code.before_optimizations.hlo')) as f:
        check('dead_mul' in f.read(), 'before_optimizations keeps the input')
    # The printed module runs and gives the same answer as the original.
    compiled = write(os.path.join(d, 'compiled.hlo'), res.out)
    x = np.array([1, 2, 3, 4.5], np.float32)
    px = save(d, 'x.npy', x)
    for i, f in enumerate((hlo, compiled)):
        out = os.path.join(d, 'out%d' % i)
        expect_ok(kiln('run', f, '-i', 'x=' + px, '-o', out))
        check(np.allclose(load(out, 0), x - x.sum(), rtol=0, atol=1e-6), 'result of %s' % f)
    # --dump_pass_re filters the per-pass dumps.
    dumps2 = os.path.join(d, 'dumps2')
    expect_ok(kiln('compile', hlo, '--dump_to=' + dumps2, '--dump_pass_re=^fusion$'))
    check(sorted(os.listdir(dumps2)) == ends, 'filtered dumps %s' % sorted(os.listdir(dumps2)))
    dumps3 = os.path.join(d, 'dumps3')
    expect_ok(kiln('compile', hlo, '--dump_to=' + dumps3, '--dump_pass_re=^dce$'))
    only_dce = [f for f in sorted(os.listdir(dumps3)) if f not in ends]
    check(only_dce and all(f.endswith('.after_dce.hlo') for f in only_dce), 'dce-only dumps %s' % only_dce)
    expect_fail(kiln('compile', hlo, '--dump_to=' + dumps2, '--dump_pass_re=(['), 1, 'dump_pass_re')
    # --disable_passes turns DCE off.
    res = expect_ok(kiln('compile', hlo, '--disable_passes=dce,simplification'))
    check('dead_mul' in res.out, 'DCE ran although disabled', res)


# --------------------------------------------------------------------------- lists

@test
def flags_and_devices():
    res = expect_ok(kiln('flags'))
    for name in ('device', 'iters', 'json', 'dump_to', 'dump_pass_re', 'v', 'output_dir', 'input',
                 'disable_passes', 'max_literal_bytes'):
        check(re.search(r'^--%s\b' % name, res.out, re.M), 'kiln flags lacks --%s' % name, res)
    check(re.search(r'^--device\s+string\s+""\s+\S', res.out, re.M), 'device row', res)
    check(re.search(r'^--iters\s+int\s+1\s', res.out, re.M), 'iters row', res)
    check(re.search(r'^--json\s+bool\s+false\s', res.out, re.M), 'json row', res)
    check(re.search(r'^--output_dir, -o\s', res.out, re.M), 'output_dir alias', res)
    res = expect_ok(kiln('devices'))
    check(re.search(r'^interpreter\s+\d+\s+\S', res.out, re.M), 'kiln devices', res)
    check(re.search(r'^cpu\s+50\s+available\s', res.out, re.M), 'kiln devices: cpu', res)
    check(len(re.findall(r'\(default\)$', res.out, re.M)) == 1, 'kiln devices: one default', res)
    expect_fail(kiln('flags', 'extra'), 2, 'extra')


@test
def max_literal_bytes_flag():
    d = tmpdir('cap')
    hlo = write(os.path.join(d, 'm.hlo'), ADD_F32)
    pa = save(d, 'a.npy', np.zeros((2, 3), np.float32))
    expect_fail(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '--max_literal_bytes=16'), 1,
                'a.npy', 'limit')
    expect_fail(kiln('run', hlo, '--max_literal_bytes=-1'), 2, 'max_literal_bytes')


@test
def output_dir_errors():
    d = tmpdir('outdir')
    hlo = write(os.path.join(d, 'm.hlo'), ADD_F32)
    pa = save(d, 'a.npy', np.zeros((2, 3), np.float32))
    blocker = write(os.path.join(d, 'file'), 'x')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '-o', blocker), 1, 'file')
    expect_fail(kiln('run', hlo, '-i', 'p0=' + pa, '-i', 'p1=' + pa, '-o', os.path.join(blocker, 'sub')), 1)


STRING_GRAPH = """framework onnx
input x: string[?]
input y: string[2]
input like: float[3]
z = StringConcat(x, y)
output z = z:0
"""


@test
def string_npy_files_and_optional_inputs():
    """String inputs from numpy text ('<U') and bytes ('S') files, string outputs as
    '<U' files numpy reads back (byte-identical to np.save's), object arrays refused
    with the fix in the message, invalid UTF-8 outputs named; a declared input the
    graph never reads is optional: listed, accepted when given and checked."""
    d = tmpdir('strings')
    g = write(os.path.join(d, 'm.graph'), STRING_GRAPH)
    x = save(d, 'x.npy', np.array(['h\u00e9llo ', 'a']))
    y = save(d, 'y.npy', np.array(['w\u00f6rld'.encode(), b'b c']))
    like = save(d, 'like.npy', np.zeros(3, np.float32))
    out = os.path.join(d, 'out')
    res = expect_ok(kiln('run', g, '-i', 'x=' + x, '-i', 'y=' + y, '-o', out))
    check('z.npy: string[2]' in res.out, 'report lacks the string output', res)
    z = np.load(os.path.join(out, 'z.npy'), allow_pickle=False)
    check(z.dtype.kind == 'U' and z.tolist() == ['h\u00e9llo w\u00f6rld', 'ab c'], 'z is %r' % z)
    buf = io.BytesIO()
    np.save(buf, z)
    with open(os.path.join(out, 'z.npy'), 'rb') as f:
        check(f.read() == buf.getvalue(), 'z.npy differs from what np.save writes')
    expect_ok(kiln('run', g, '-i', 'x=' + x, '-i', 'y=' + y, '-i', 'like=' + like, '-o', out))
    like4 = save(d, 'like4.npy', np.zeros(4, np.float32))
    expect_fail(kiln('run', g, '-i', 'x=' + x, '-i', 'y=' + y, '-i', 'like=' + like4, '-o', out), 1,
                'input like: the model takes float32[3] but', 'like4.npy holds float32[4]')
    expect_fail(kiln('run', g, '-i', 'x=' + x, '-o', out), 1, 'missing input: y (string[2])',
                'optional: -i like (float32[3])')
    objs = os.path.join(d, 'objects.npy')
    np.save(objs, np.array(['a', 'b'], dtype=object), allow_pickle=True)
    expect_fail(kiln('run', g, '-i', 'x=' + objs, '-i', 'y=' + y, '-o', out), 1, 'objects.npy', 'object array',
                'dtype=str')
    expect_fail(kiln('run', g, '-i', 'x=' + like, '-i', 'y=' + y, '-o', out), 1,
                'input x: the model takes string[?]', '(element types differ)')
    bad = write(os.path.join(d, 'bad.graph'), 'framework onnx\ninput x: string[?]\n'
                'c = Constant[value=tensor<string[1]>{"\\xff"}]()\noutput c = c:0\n')
    expect_fail(kiln('run', bad, '-i', 'x=' + x, '-o', out), 1, 'output c: element 0 is not valid UTF-8')


SEQUENCE_GRAPH = """framework onnx
input s[_onnx_type="sequence(tensor(float))"]: ?
input o[_onnx_type="optional(tensor(int64))"]: ?
input p: float[?,2]
n = SequenceLength(s)
s2 = Identity(s)
h = OptionalHasElement(o)
o2 = Identity(o)
z = ai.onnx.ml.ZipMap[classlabels_strings=["a","b"]](p)
output s2 = s2:0
output n = n:0
output h = h:0
output o2 = o2:0
output z = z:0
"""


@test
def sequences_optionals_and_maps_as_files():
    """A sequence is a directory of 0.npy, 1.npy, ... (empty directory: empty sequence),
    an empty optional a path ending in .none (written as NAME.none), a map a directory
    of keys.npy and values.npy (ZipMap's sequence of maps: NAME/0/keys.npy, ...); what
    kiln writes reads back as the same input; a stale element of an earlier run is
    removed; bad inputs are errors naming the input and the file."""
    d = tmpdir('sequences')
    g = write(os.path.join(d, 'm.graph'), SEQUENCE_GRAPH)
    seq = os.path.join(d, 's')
    os.makedirs(seq)
    e0 = np.arange(3, dtype=np.float32)
    e1 = np.ones((2, 2), np.float32)
    np.save(os.path.join(seq, '0.npy'), e0)
    np.save(os.path.join(seq, '1.npy'), e1)
    p = save(d, 'p.npy', np.array([[0.25, 0.75], [1, 0]], np.float32))
    seven = save(d, 'seven.npy', np.array([7], np.int64))
    out = os.path.join(d, 'out')
    res = expect_ok(kiln('run', g, '-i', 's=' + seq, '-i', 'o=' + seven, '-i', 'p=' + p, '-o', out))
    check('s2/1.npy: f32[2,2]' in res.out and 'z/1/keys.npy: string[2]' in res.out, 'report', res)
    check(sorted(os.listdir(os.path.join(out, 's2'))) == ['0.npy', '1.npy'], 'sequence directory')
    check(np.array_equal(np.load(os.path.join(out, 's2', '1.npy')), e1), 'element 1')
    check(np.load(os.path.join(out, 'n.npy')) == 2 and np.load(os.path.join(out, 'h.npy')), 'n, h')
    check(np.load(os.path.join(out, 'o2.npy')).tolist() == [7], 'a present optional is what it holds')
    check(np.load(os.path.join(out, 'z', '1', 'keys.npy')).tolist() == ['a', 'b'], 'ZipMap keys')
    check(np.load(os.path.join(out, 'z', '0', 'values.npy')).tolist() == [0.25, 0.75], 'ZipMap values')
    # Round trip: the output directory back in, an empty sequence and an empty optional.
    empty = os.path.join(d, 'empty')
    os.makedirs(empty)
    res = expect_ok(kiln('run', g, '-i', 's=' + empty, '-i', 'o=' + os.path.join(d, 'nothing.none'), '-i', 'p=' + p,
                         '-o', out))
    check('s2/: empty sequence' in res.out and 'o2.none: empty optional' in res.out, 'report', res)
    check(os.listdir(os.path.join(out, 's2')) == [], 'the earlier run\'s elements are gone')
    check(os.path.isfile(os.path.join(out, 'o2.none')) and not os.path.exists(os.path.join(out, 'o2.npy')), 'o2')
    check(not np.load(os.path.join(out, 'h.npy')), 'h')
    out2 = os.path.join(d, 'out2')
    expect_ok(kiln('run', g, '-i', 's=' + os.path.join(out, 's2'), '-i', 'o=' + os.path.join(out, 'o2.none'),
                   '-i', 'p=' + p, '-o', out2))
    # Errors name the input and the file.
    bad = os.path.join(d, 'bad')
    os.makedirs(bad)
    np.save(os.path.join(bad, '0.npy'), e0)
    np.save(os.path.join(bad, '1.npy'), np.arange(3))
    expect_fail(kiln('run', g, '-i', 's=' + bad, '-i', 'o=' + seven, '-i', 'p=' + p, '-o', out), 1,
                'input s: the model takes float32 but', 'bad/1.npy holds int64[3] (element types differ)')
    os.remove(os.path.join(bad, '1.npy'))
    np.save(os.path.join(bad, '2.npy'), e0)
    expect_fail(kiln('run', g, '-i', 's=' + bad, '-i', 'o=' + seven, '-i', 'p=' + p, '-o', out), 1,
                'input s: element 1 of the sequence', 'is missing', '2.npy is there')
    os.remove(os.path.join(bad, '2.npy'))
    write(os.path.join(bad, 'notes.txt'), 'x')
    expect_fail(kiln('run', g, '-i', 's=' + bad, '-i', 'o=' + seven, '-i', 'p=' + p, '-o', out), 1,
                'notes.txt is not an element of the sequence')
    expect_fail(kiln('run', g, '-i', 's=' + seven, '-i', 'o=' + seven, '-i', 'p=' + p, '-o', out), 1,
                'input s is a sequence: give a directory', 'seven.npy')
    expect_fail(kiln('run', g, '-i', 's=' + seq, '-i', 'o=' + seven, '-i', 'p=' + seq, '-o', out), 1,
                'input p is a tensor, but', 'is a sequence directory')
    expect_fail(kiln('run', g, '-i', 's=x.none', '-i', 'o=' + seven, '-i', 'p=' + p, '-o', out), 1,
                'input s: x.none marks an empty optional, but s is a sequence')
    expect_fail(kiln('run', g, '-i', 's=' + os.path.join(d, 'absent'), '-i', 'o=' + seven, '-i', 'p=' + p,
                     '-o', out), 1, 'input s: cannot read', 'absent')


def main():
    global KILN, TMP
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kiln', required=True)
    ap.add_argument('-k', dest='filter')
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    KILN = os.path.abspath(args.kiln)
    if not os.access(KILN, os.X_OK):
        print('kiln executable not found: %s' % KILN)
        return 2
    TMP = tempfile.mkdtemp(prefix='kiln-test-cli-')
    passed = failed = 0
    t0 = time.time()
    for fn in TESTS:
        if args.filter and args.filter not in fn.__name__:
            continue
        try:
            fn()
            passed += 1
        except Exception:
            failed += 1
            print('FAIL %s\n  %s' % (fn.__name__, traceback.format_exc().strip().replace('\n', '\n  ')))
    if args.keep:
        print('temporary files kept in %s' % TMP)
    else:
        shutil.rmtree(TMP, ignore_errors=True)
    print('test_cli: %d passed, %d failed (%.1fs)' % (passed, failed, time.time() - t0))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
