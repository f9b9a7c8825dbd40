#!/usr/bin/env python3
"""Robustness of the OpenCL plugin's compile and execute on malformed modules: every module
of kiln's HLO corpus and of tests/cases, printed as the host sends it, is mutated a few
times (a line deleted, a dimension added to a shape, an attribute index shifted) and run
through ocl_run. The plugin may refuse a mutant (ocl_run exits 1 or 2) but must never
crash, hang or, under a sanitizer build, report an error. Seeded, so runs are repeatable.

usage: mutants.py --kiln KILN --ocl_run OCL_RUN --lib LIB.so [--per_file N] [--seed S]
Exit status 1 when any mutant crashed the process.
"""
import argparse
import glob
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def mutate(lines, rng):
    out = list(lines)
    k = rng.randrange(1, len(out))
    op = rng.choice(["del", "dims", "attr"])
    if op == "del":
        del out[k]
    elif op == "dims" and "[" in out[k]:
        out[k] = out[k].replace("[", "[3,", 1)
    else:
        out[k] = re.sub(r"=\{([0-9]+)", lambda m: "={" + str(int(m.group(1)) + 2), out[k], count=1)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--ocl_run", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--per_file", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "hlo", "corpus", "*.hlo")))
    files += sorted(glob.glob(os.path.join(HERE, "cases", "*.hlo")))
    tmp = tempfile.mkdtemp(prefix="ocl_mutants_")
    n = bad = 0
    for f in files:
        p = subprocess.run([args.kiln, "compile", f, "--disable_passes", "all"], capture_output=True, text=True)
        if p.returncode:
            continue
        lines = p.stdout.split("\n")
        for _ in range(args.per_file):
            text = mutate(lines, rng)
            path = os.path.join(tmp, "m.hlo")
            with open(path, "w") as fh:
                fh.write(text)
            out = os.path.join(tmp, "o")
            os.makedirs(out, exist_ok=True)
            try:
                r = subprocess.run([args.ocl_run, args.lib, path, out], capture_output=True, text=True, timeout=300)
                crashed = r.returncode not in (0, 1, 2) or "Sanitizer" in r.stderr or "runtime error:" in r.stderr
                why = "exit %d: %s" % (r.returncode, r.stderr[-600:])
            except subprocess.TimeoutExpired:
                crashed, why = True, "timed out"
            n += 1
            if crashed:
                bad += 1
                keep = os.path.join(tmp, "crash%d.hlo" % bad)
                with open(keep, "w") as fh:
                    fh.write(text)
                print("CRASH (from %s, kept as %s): %s" % (os.path.basename(f), keep, why), flush=True)
    print("mutants: %d run, %d crashed" % (n, bad))
    if not bad:
        subprocess.run(["rm", "-rf", tmp])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
