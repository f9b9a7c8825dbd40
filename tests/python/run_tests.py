#!/usr/bin/env python3
"""Runs the Python package's test suite (tests/python) the way a user gets the package.

1. A virtual environment of its own under the build directory (python3 -m venv), with
   the pinned packages of pins.py: pytest, numpy, onnx, ONNX Runtime (the PyPI release
   of the npm onnxruntime-node the CLI tests pin) and jax/jaxlib (scripts/
   install-ref-env.sh's pins). An environment that already holds exactly those pins
   (its marker file says so, written only after a complete install) is reused, so a
   second run installs nothing from the network.
2. `pip install ./python` (no dependencies, no build isolation: nothing is fetched) with
   KILN_BUILD_DIR pointing at the directory of the libkiln.so under test; the extension
   is rebuilt every time and finds the library through its rpath.
3. pytest on tests/python; exit 5 (no tests collected) counts as a failure.

--quick runs only the API tests (test_api.py) in an environment without the references:
what a sanitizer build runs, with --preload naming the sanitizer runtime that must come
first in a process that loads an instrumented libkiln.so.

Usage: run_tests.py --build-dir DIR [--venv DIR] [--quick] [--preload LIB] [-- PYTEST ARGS]
Exits with pytest's status (1 for "no tests", 2 when the environment cannot be made).
"""

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pins  # noqa: E402

MARKER = "kiln-test-pins.txt"


def shared_venv(name):
    """Where a reference venv that does not depend on the build under test lives:
    $KILN_VENV_DIR/NAME, else build-venvs/NAME at the repository root. One copy serves
    build/, build-asan/ and the rest: TensorFlow's alone is 1.6 GB, and CI machines
    have little disk to spare."""
    return os.path.join(os.path.abspath(os.environ.get("KILN_VENV_DIR") or os.path.join(ROOT, "build-venvs")), name)


def log(msg):
    print("run_tests: " + msg, flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, **kw).returncode


def ensure_venv(venv, wanted):
    """Makes (or reuses) venv with exactly the pins in wanted; returns its python. Tests
    that share an environment (the TF tests, the ONNX suite's two) run in parallel under
    ctest -j: an exclusive lock on VENV.lock makes one of them build it while the others
    wait, then reuse it."""
    os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
    with open(os.path.abspath(venv) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_venv_locked(venv, wanted)


def _ensure_venv_locked(venv, wanted):
    py = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, MARKER)
    text = "\n".join(wanted) + "\n"
    if os.access(py, os.X_OK) and os.path.isfile(marker) and open(marker).read() == text:
        log("reusing %s (%s)" % (venv, ", ".join(wanted)))
        return py
    if os.path.exists(venv):
        log("%s lacks the pinned packages: making it again" % venv)
        shutil.rmtree(venv)
    t0 = time.time()
    if run([sys.executable, "-m", "venv", venv]) != 0:
        raise RuntimeError("python3 -m venv %s failed (Debian: apt-get install python3-venv)" % venv)
    # --no-cache-dir: the wheels are not kept a second time in ~/.cache/pip.
    if run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-cache-dir"] + wanted) != 0:
        raise RuntimeError("pip could not install %s" % " ".join(wanted))
    with open(marker, "w") as f:  # only now is the environment complete
        f.write(text)
    log("made %s in %.0fs" % (venv, time.time() - t0))
    return py


def rerun_in_venv(script, argv, wanted, venv_name, tag):
    """For test scripts with references of their own (tests/onnx_suite, the scikit-learn
    models): makes (or reuses) the venv with pins `wanted` -- argv's --venv, else
    shared_venv(venv_name) -- and runs `script --inner ARGV` with its python. Returns the
    exit status (2 when no venv can be made)."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--venv")
    args, _ = ap.parse_known_args(argv)
    venv = os.path.abspath(args.venv or shared_venv(venv_name))
    try:
        py = ensure_venv(venv, sorted(wanted))
    except RuntimeError as e:
        print("%s: error: %s" % (tag, e), file=sys.stderr)
        return 2
    return subprocess.run([py, os.path.abspath(script), "--inner"] + argv).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", required=True, help="the directory holding libkiln.so")
    ap.add_argument("--venv", help="the virtual environment (default: BUILD_DIR/python-venv)")
    ap.add_argument("--quick", action="store_true", help="API tests only, no reference packages")
    ap.add_argument("--preload", help="a library to LD_PRELOAD into the test process (sanitizer runtime)")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    venv = os.path.abspath(args.venv or os.path.join(build_dir, "python-venv"))
    try:
        py = ensure_venv(venv, pins.all_pins(quick=args.quick))
    except RuntimeError as e:
        log("error: %s" % e)
        return 2
    env = dict(os.environ, KILN_BUILD_DIR=build_dir, KILN_INCLUDE_DIR=os.path.join(ROOT, "include"))
    env.pop("KILN_USE_PKG_CONFIG", None)
    if run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
            "--no-build-isolation", "--force-reinstall", "./python"], cwd=ROOT, env=env) != 0:
        log("error: pip install ./python failed")
        return 1
    env = dict(os.environ, KILN_TEST_BUILD_DIR=build_dir, PYTHONDONTWRITEBYTECODE="1")
    if args.preload:
        env["LD_PRELOAD"] = args.preload
        # CPython and numpy keep their interned objects to the end: leaks are not kiln's.
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"  # the last setting wins
    targets = [os.path.join(HERE, "test_api.py")] if args.quick else [HERE]
    rc = run([py, "-m", "pytest"] + targets + args.pytest_args, cwd=ROOT, env=env)
    if rc == 5:
        log("error: pytest collected no tests")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
