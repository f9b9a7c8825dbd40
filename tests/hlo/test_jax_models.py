#!/usr/bin/env python3
"""Tests kiln against the original system: real HLO that JAX/XLA emits for the programs
in jax_models.py, evaluated by kiln and compared with JAX's own results.

For every case the script lowers the JAX function with jax.jit and takes two modules:
the unoptimized HLO JAX hands to XLA, and the module XLA:CPU actually compiled (after
fusion, layout assignment, algebraic simplification...). kiln runs both on the same
inputs (`kiln run M.hlo -i p0=... -o OUT --device interpreter`) and each output is
compared with what JAX computed on CPU, within the case's tolerance (see jax_models.py
for why each tolerance is what it is). Real XLA text must parse, so parse errors fail.
The one accepted gap: when the optimized or unoptimized module calls a custom-call target
(LAPACK, oneDNN...) and kiln answers UNIMPLEMENTED for it, that variant is reported as
"skipped (custom-call TARGET)", never as passed.

The pinned JAX lives in build-ref-env/ (made by scripts/install-ref-env.sh). Run under any
python3: the script re-executes itself with build-ref-env/bin/python.

With --device cpu the modules run on the cpu backend instead, and a variant fails unless
kiln's --json says it ran on cpu with evaluated_instructions 0 (no instruction run
through the evaluator instead of compiled code): that is the check that kiln compiles
all of JAX's HLO (CTest: hlo.test_jax_models_cpu). A case computing in bf16 then runs its
unoptimized module a third way, "rounded": with --allow_excess_precision=false, every bf16
op rounded as the evaluator does, where kiln's HLO default keeps bf16 chains inside a
kernel in f32 as XLA:CPU does; both must be within the case's tolerance of JAX.

Usage: test_jax_models.py --kiln PATH [-k SUBSTRING] [--keep] [--write-corpus DIR] [--device cpu]
Prints one line per case and "N passed, N failed, N skipped" over case variants
(unoptimized and optimized module of each case); exits 1 if anything failed.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ENV_DIR = os.path.join(ROOT, 'build-ref-env')
ENV_PYTHON = os.path.join(ENV_DIR, 'bin', 'python')


def ensure_reference_env():
    """JAX is only in build-ref-env; CTest starts this file with /usr/bin/python3, so hop
    over to the environment's interpreter (once; the marker stops a loop)."""
    if os.path.realpath(sys.prefix) == os.path.realpath(ENV_DIR):
        return
    if not os.access(ENV_PYTHON, os.X_OK):
        sys.stderr.write('test_jax_models: error: reference environment %s is missing; '
                         'create it with: bash scripts/install-ref-env.sh\n' % ENV_DIR)
        sys.exit(1)
    if os.environ.get('KILN_JAX_REEXEC') == '1':
        sys.stderr.write('test_jax_models: error: %s does not run inside %s\n' % (ENV_PYTHON, ENV_DIR))
        sys.exit(1)
    os.environ['KILN_JAX_REEXEC'] = '1'
    os.execv(ENV_PYTHON, [ENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


ensure_reference_env()

# JAX is the reference on CPU only; keep it from probing for accelerators.
os.environ.setdefault('JAX_PLATFORMS', 'cpu')

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, HERE)
import jax  # noqa: E402
import jax_models  # noqa: E402
from jax_models import compare_output, storage_array  # noqa: E402

KILN_TIMEOUT_S = 120
VARIANTS = ('unopt', 'opt')


def hlo_texts(lowered):
    """(unoptimized, optimized) HLO text of a lowered JAX function."""
    try:
        unopt = lowered.as_text(dialect='hlo')
    except Exception:  # older JAX: no hlo dialect in as_text
        unopt = lowered.compiler_ir('hlo').as_hlo_text()
    return unopt, lowered.compile().as_text()


def custom_call_targets(text):
    return sorted(set(re.findall(r'custom_call_target="([^"]*)"', text)))


class Outcome:
    """Result of one variant: status is 'ok', 'FAIL' or 'skip'; detail says why or how
    close; ratio is the largest error as a fraction of the tolerance (float outputs)."""

    def __init__(self, status, detail='', ratio=0.0):
        self.status, self.detail, self.ratio = status, detail, ratio

    def __str__(self):
        return '%s%s' % (self.status, ' (%s)' % self.detail if self.detail else '')


def run_kiln(kiln, hlo_path, input_paths, out_dir, device, extra=()):
    cmd = [kiln, 'run', hlo_path, '-o', out_dir, '--device', device, '--json'] + list(extra)
    for i, p in enumerate(input_paths):
        cmd += ['-i', 'p%d=%s' % (i, p)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=KILN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, 'timed out after %ds' % KILN_TIMEOUT_S, ''
    return proc.returncode, proc.stderr.decode(errors='replace').strip(), proc.stdout.decode(errors='replace')


# On cpu every instruction must be compiled: --json's device must be cpu (not the
# interpreter fallback) and its evaluated_instructions 0; the compile warning
# (cpu_backend.c) names the evaluated ones for the failure message.
EVALUATED_RE = re.compile(r'device cpu runs \d+ instructions? of .* through the evaluator.*')


def uncompiled(stdout, err):
    """Why a cpu run was not wholly compiled, or None."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith('{')]
    if not lines:
        return 'kiln printed no --json line'
    stats = json.loads(lines[-1])
    if stats.get('device') != 'cpu':
        return 'ran on %s, not cpu' % stats.get('device')
    if stats.get('evaluated_instructions', -1) != 0:
        m = EVALUATED_RE.search(err)
        return '%s evaluated: %s' % (stats.get('evaluated_instructions'), m.group(0)[len('device cpu '):] if m else '?')
    return None


def check_variant(kiln, text, name, work, input_paths, expected, tol, device, extra=()):
    hlo_path = os.path.join(work, name + '.hlo')
    with open(hlo_path, 'w') as f:
        f.write(text)
    out_dir = os.path.join(work, 'out_' + name)
    rc, err, stdout = run_kiln(kiln, hlo_path, input_paths, out_dir, device, extra)
    if rc is None:
        return Outcome('FAIL', err)
    if rc != 0:
        first = err.splitlines()[-1] if err else 'exit %d, no message' % rc
        targets = custom_call_targets(text)
        # kiln names the custom-call's instruction ("interpreter: NAME: opcode custom-call
        # is not supported") or its target; either way the module's targets are listed.
        if targets and re.search(r'custom-call( target "[^"]*")? is not supported|UNIMPLEMENTED.*custom-call', err):
            return Outcome('skip', 'custom-call %s' % ', '.join(targets))
        return Outcome('FAIL', 'kiln exit %d: %s' % (rc, first[:300]))
    why = uncompiled(stdout, err) if device == 'cpu' else None
    if why:
        return Outcome('FAIL', why[:300])
    worst, details = 0.0, []
    for i, want in enumerate(expected):
        path = os.path.join(out_dir, 'output_%d.npy' % i)
        if not os.path.exists(path):
            return Outcome('FAIL', 'kiln wrote no output_%d.npy (%d expected)' % (i, len(expected)))
        ok, detail, ratio = compare_output(np.load(path), want, tol)
        if not ok:
            details.append('output_%d: %s' % (i, detail))
        worst = max(worst, ratio)
    extra = os.path.join(out_dir, 'output_%d.npy' % len(expected))
    if os.path.exists(extra):
        details.append('kiln wrote more than %d outputs' % len(expected))
    if details:
        return Outcome('FAIL', '; '.join(details[:3]) + (' ...' if len(details) > 3 else ''))
    if tol.exact:
        return Outcome('ok', 'exact')
    return Outcome('ok', '%.2f of tol' % worst, worst)


def run_case(kiln, c, keep_root, corpus_dir, device):
    """Returns {variant: Outcome} for one case (or {'jax': Outcome} if JAX itself fails)."""
    previous_x64 = jax.config.jax_enable_x64
    jax.config.update('jax_enable_x64', c.x64)
    try:
        fn, args = c.build()
        jitted = jax.jit(fn, keep_unused=True)
        lowered = jitted.lower(*args)
        texts = dict(zip(VARIANTS, hlo_texts(lowered)))
        expected = [storage_array(v) for v in jax.tree_util.tree_leaves(jitted(*args))]
    finally:
        jax.config.update('jax_enable_x64', previous_x64)
    if corpus_dir:
        for v, text in texts.items():
            # Source locations in the metadata name this checkout; keep them relative.
            with open(os.path.join(corpus_dir, 'jax_%s_%s.hlo' % (c.name, v)), 'w') as f:
                f.write(text.replace(ROOT + os.sep, ''))
    work = tempfile.mkdtemp(prefix='jax_%s_' % c.name, dir=keep_root)
    input_paths = []
    for i, a in enumerate(jax.tree_util.tree_leaves(args)):
        p = os.path.join(work, 'p%d.npy' % i)
        np.save(p, storage_array(a))
        input_paths.append(p)
    for i, want in enumerate(expected):
        np.save(os.path.join(work, 'expected_%d.npy' % i), want)
    results = {v: check_variant(kiln, texts[v], v, work, input_paths, expected, c.tol, device) for v in VARIANTS}
    if device == 'cpu' and 'bf16[' in texts['unopt']:
        results['rounded'] = check_variant(kiln, texts['unopt'], 'rounded', work, input_paths, expected, c.tol, device,
                                           ('--allow_excess_precision=false',))
    if keep_root is None and all(r.status != 'FAIL' for r in results.values()):
        shutil.rmtree(work, ignore_errors=True)
    else:
        results['dir'] = work
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kiln', required=True, help='path to the kiln executable')
    ap.add_argument('-k', dest='filter', default='', help='run only cases whose name contains this')
    ap.add_argument('--keep', action='store_true', help='keep every case directory (HLO, inputs, outputs)')
    ap.add_argument('--write-corpus', metavar='DIR', help='write each case HLO as DIR/jax_NAME_{unopt,opt}.hlo')
    ap.add_argument('--list', action='store_true', help='print the case names and exit')
    ap.add_argument('--device', default='interpreter', choices=('interpreter', 'cpu'),
                    help='kiln device to run on; on cpu an instruction run through the evaluator fails the variant')
    opts = ap.parse_args()
    cases = [c for c in jax_models.CASES if opts.filter in c.name]
    if opts.list:
        for c in cases:
            print('%-28s %s' % (c.name, c.tol))
        return 0
    kiln = os.path.abspath(opts.kiln)
    if not os.access(kiln, os.X_OK):
        sys.stderr.write('test_jax_models: error: kiln executable %s not found\n' % kiln)
        return 1
    keep_root = tempfile.mkdtemp(prefix='kiln_jax_') if opts.keep else None
    if opts.write_corpus:
        os.makedirs(opts.write_corpus, exist_ok=True)
    print('kiln vs JAX %s (jaxlib %s) on %s; %d cases' % (jax.__version__, jax.lib.__version__ if hasattr(
        jax.lib, '__version__') else '?', jax.devices()[0].platform, len(cases)))
    counts = {'ok': 0, 'FAIL': 0, 'skip': 0}
    failed_dirs = []
    start = time.time()
    for c in cases:
        try:
            results = run_case(kiln, c, keep_root, opts.write_corpus, opts.device)
        except Exception as e:  # JAX could not build the case: a broken test, so a failure
            results = {v: Outcome('FAIL', 'JAX: %s: %s' % (type(e).__name__, str(e).splitlines()[0][:200]))
                       for v in VARIANTS}
        statuses = [results[v].status for v in VARIANTS + ('rounded',) if v in results]
        for s in statuses:
            counts[s] += 1
        overall = 'FAIL' if 'FAIL' in statuses else 'SKIP' if 'skip' in statuses else 'PASS'
        rounded = '  rounded: %s' % results['rounded'] if 'rounded' in results else ''
        print('%-4s %-30s unopt: %-24s opt: %s%s' % (overall, c.name, results['unopt'], results['opt'], rounded),
              flush=True)
        if overall == 'FAIL' and 'dir' in results:
            failed_dirs.append((c.name, results['dir']))
    for name, d in failed_dirs:
        print('  %s: HLO, inputs (pN.npy) and JAX outputs (expected_N.npy) kept in %s' % (name, d))
    if keep_root:
        print('case directories kept under %s' % keep_root)
    print('variants = unoptimized + XLA-optimized module of %d cases (+ rounded bf16 on cpu); %.1fs'
          % (len(cases), time.time() - start))
    print('%d passed, %d failed, %d skipped' % (counts['ok'], counts['FAIL'], counts['skip']))
    return 1 if counts['FAIL'] else 0


if __name__ == '__main__':
    sys.exit(main())
