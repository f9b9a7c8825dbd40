#!/usr/bin/env python3
"""ONNX's own conformance suite, run on kiln and on ONNX Runtime by one harness.

The cases:
  * node: every node test case of the pinned onnx package, generated at test time from
    its case scripts (onnx.backend.test.case.node.collect_testcases(), which is what
    `backend-test-tools generate-data` writes to disk), each data set compared with the
    outputs the case script recorded;
  * the legacy backend test models the onnx wheel ships (onnx/backend/test/data:
    pytorch-converted, pytorch-operator, simple and light; a light model's input is
    onnx's own dummy data, arange/n, and its expected output is shipped beside it).

Each case runs twice: `kiln run model.onnx -i NAME=PATH.npy ... -o DIR` (one process per
data set, so a crash is one failed case; bfloat16 values travel as float32 .npy files,
float8/float4 as uint8 bit patterns, int4/int2 as int8 and uint4/uint2 as uint8 values, the CLI's
documented mappings for the types numpy lacks; string tensors, which onnx gives as object
arrays, as numpy text ('<U') arrays; sequences, optionals and maps in the CLI's forms
for them: a directory of 0.npy, 1.npy, ..., an empty optional as NAME.none, a map as a
directory of keys.npy and values.npy), and ONNX Runtime's CPU provider in this
process. Both are compared with the recorded outputs by onnx's own rule
(onnx.backend.test.runner: same count, shape and dtype; strings and ints exactly;
floats by assert_allclose with the case's rtol/atol, 1e-3/1e-7 unless the case says
otherwise, bfloat16 at two bf16 ULPs).

What fails this test: a case listed in kiln_passes.txt (beside this script) that kiln no
longer passes, or a kiln run that crashes or hangs on any case. Cases kiln newly passes
are printed so the list can grow (--update rewrites it). Counts for both runtimes, per
suite, go to stdout and to BUILD/onnx-suite/summary.md; every case's outcome with the
first line of its reason to BUILD/onnx-suite/results.tsv.

The references (onnx, onnxruntime, numpy, ml_dtypes; pinned in PINS) live in a virtual
environment of their own, made once and reused (tests/python/run_tests.py's
rerun_in_venv); this script re-runs itself inside it.

Usage: run_onnx_suite.py --kiln PATH [--venv DIR] [--work DIR] [-k SUBSTR] [-j N]
                         [--suite node|legacy] [--update] [--failures]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PASS_LIST = os.path.join(HERE, "kiln_passes.txt")

# onnx 1.23.2 defines the default domain up to opset 28; ONNX Runtime 1.31.1 is the
# release its numbers in issue #14 were taken with. numpy and ml_dtypes as in
# scripts/install-ref-env.sh.
PINS = ["onnx==1.23.2", "onnxruntime==1.31.1", "numpy==2.4.6", "ml_dtypes==0.6.0"]

KILN_TIMEOUT_S = 120


def log(msg):
    print("onnx_suite: " + msg, flush=True)


def outer(argv):
    """Makes (or reuses) the reference environment and re-runs this script inside it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    return run_tests.rerun_in_venv(__file__, argv, PINS, "onnx-suite-venv", "onnx_suite")


# ----------------------------------------------------------------- inside the venv ---

class Case:
    """One model with one or more data sets of (inputs, expected outputs)."""
    def __init__(self, suite, name, model_path, data_sets, rtol=1e-3, atol=1e-7):
        self.suite, self.name, self.model_path = suite, name, model_path
        self.data_sets = data_sets  # [(list of input arrays, list of output values)]
        self.rtol, self.atol = rtol, atol


def node_cases(work):
    import onnx
    from onnx.backend.test.case import node as node_cases_mod
    cases = []
    for tc in node_cases_mod.collect_testcases():
        d = os.path.join(work, "node", tc.name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(tc.model, path)
        cases.append(Case("node", tc.name, path, tc.data_sets, tc.rtol, tc.atol))
    return cases


def read_pb_value(path, vtype):
    import onnx
    from onnx import numpy_helper
    with open(path, "rb") as f:
        data = f.read()
    if vtype.HasField("sequence_type"):
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if vtype.HasField("optional_type"):
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    if vtype.HasField("map_type"):
        p = onnx.MapProto()
        p.ParseFromString(data)
        return numpy_helper.to_dict(p)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def legacy_cases():
    import onnx
    from onnx.backend.test.runner import Runner
    data_root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    cases = []
    for suite in ("pytorch-converted", "pytorch-operator", "simple"):
        for name in sorted(os.listdir(os.path.join(data_root, suite))):
            d = os.path.join(data_root, suite, name)
            path = os.path.join(d, "model.onnx")
            if not os.path.isfile(path):
                continue
            m = onnx.load(path, load_external_data=False)
            inits = {i.name for i in m.graph.initializer}
            ins = [v for v in m.graph.input if v.name not in inits]
            sets = []
            for ds in sorted(x for x in os.listdir(d) if x.startswith("test_data_set_")):
                dsd = os.path.join(d, ds)
                n_in = len([f for f in os.listdir(dsd) if f.startswith("input_")])
                n_out = len([f for f in os.listdir(dsd) if f.startswith("output_")])
                inputs = [read_pb_value(os.path.join(dsd, "input_%d.pb" % i), ins[i].type) for i in range(n_in)]
                outputs = [read_pb_value(os.path.join(dsd, "output_%d.pb" % i), m.graph.output[i].type)
                           for i in range(n_out)]
                sets.append((inputs, outputs))
            cases.append(Case(suite, name, path, sets))
    light = os.path.join(data_root, "light")
    for f in sorted(os.listdir(light)):
        if not f.endswith(".onnx"):
            continue
        path = os.path.join(light, f)
        m = onnx.load(path)
        inits = {i.name for i in m.graph.initializer}
        ins = [v for v in m.graph.input if v.name not in inits]
        inputs = [Runner.generate_dummy_data(v, seed=0, name=f, random=False) for v in ins]
        prefix = path[:-len(".onnx")]
        outputs = [read_pb_value("%s_output_%d.pb" % (prefix, i), m.graph.output[i].type)
                   for i in range(len(m.graph.output))]
        cases.append(Case("light", f[:-len(".onnx")], path, [(inputs, outputs)]))
    return cases


def model_io(case):
    import onnx
    m = onnx.load(case.model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    return [v for v in m.graph.input if v.name not in inits], list(m.graph.output)


def as_array(v):
    import numpy as np
    from onnx import TensorProto, numpy_helper
    if isinstance(v, TensorProto):
        return numpy_helper.to_array(v)
    return v if isinstance(v, (list, dict)) or v is None else np.asarray(v)


def compare(expected, got, rtol, atol):
    """None when got matches expected by onnx's runner rule, else why not."""
    import numpy as np
    if len(expected) != len(got):
        return "%d outputs, expected %d" % (len(got), len(expected))
    for i, (ref, out) in enumerate(zip(expected, got)):
        ref = as_array(ref)
        if isinstance(ref, list) or isinstance(out, list):
            if not (isinstance(ref, list) and isinstance(out, list)) or len(ref) != len(out):
                return "output %d: sequence mismatch" % i
            why = compare(ref, out, rtol, atol)
            if why:
                return "output %d: %s" % (i, why)
            continue
        if ref is None or out is None:
            if ref is not out:
                return "output %d: optional presence differs" % i
            continue
        out = np.asarray(out)
        if out.shape != ref.shape:
            return "output %d: shape %s, expected %s" % (i, out.shape, ref.shape)
        if ref.dtype == object or ref.dtype.kind in "SU":
            if not np.array_equal(out.astype(object), ref.astype(object)):
                return "output %d: strings differ" % i
            continue
        if out.dtype != ref.dtype:
            return "output %d: dtype %s, expected %s" % (i, out.dtype, ref.dtype)
        r = rtol
        if ref.dtype.name == "bfloat16" or ref.dtype.kind == "V" or "float8" in ref.dtype.name or \
                "float4" in ref.dtype.name or ref.dtype.name in ("int4", "uint4", "int2", "uint2"):
            if ref.dtype.name == "bfloat16":
                r = max(rtol, 2 ** -6)
            out, ref = out.astype(np.float32), ref.astype(np.float32)
        try:
            np.testing.assert_allclose(out, ref, rtol=r, atol=atol)
        except AssertionError as e:
            lines = [x for x in str(e).splitlines() if x.strip().startswith("Max")]
            return "output %d: values differ (%s)" % (i, "; ".join(x.strip() for x in lines) or "mismatch")
        except TypeError as e:
            return "output %d: cannot compare (%s)" % (i, e)
    return None


def run_ort(case, ins, outs):
    import onnxruntime as ort
    try:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(case.model_path, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 -- any refusal is a failed case
        return "load: " + str(e).strip().splitlines()[0][:300]
    for inputs, expected in case.data_sets:
        feeds = {ins[i].name: as_array(v) for i, v in enumerate(inputs)}
        try:
            got = sess.run([o.name for o in outs[:len(expected)]], feeds)
        except Exception as e:  # noqa: BLE001
            return "run: " + str(e).strip().splitlines()[0][:300]
        why = compare(expected, got, case.rtol, case.atol)
        if why:
            return why
    return None


# ml_dtypes' narrow types and how the kiln CLI's .npy files carry them (src/hlo/npy.h).
NARROW_INTS = ("int4", "uint4", "int2", "uint2")
NARROW = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
          "float4_e2m1fn") + NARROW_INTS


def narrow_to_npy(v):
    import numpy as np
    if v.dtype.name in NARROW_INTS:
        return v.astype(np.int8 if v.dtype.name in ("int4", "int2") else np.uint8)
    return v.view(np.uint8)


def narrow_from_npy(g, dtype):
    return g.astype(dtype) if dtype.name in NARROW_INTS else g.view(dtype)


def safe_name(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def tensor_to_npy(v):
    """A tensor as the kiln CLI's .npy files carry it, or a str saying why it cannot be."""
    import numpy as np
    if v.dtype == object:  # strings: the CLI reads numpy text ('<U') and bytes ('S') arrays
        flat = v.ravel().tolist()
        if all(isinstance(x, str) for x in flat):
            return v.astype(np.str_)
        if all(isinstance(x, bytes) for x in flat):
            return v.astype(np.bytes_)
        return "an object array of other than str or bytes"
    if v.dtype.name == "bfloat16":  # the CLI's documented mapping: bf16 travels as f32
        return v.astype(np.float32)
    if v.dtype.name in NARROW:
        return narrow_to_npy(v)
    return v


def save_value(v, base):
    """Writes v in the kiln CLI's forms (`kiln help`: a tensor BASE.npy, a sequence the
    directory BASE/ of 0, 1, ..., a map BASE/ with keys.npy and values.npy, an empty
    optional BASE.none); returns the path -i takes, or raises ValueError."""
    import numpy as np
    v = as_array(v)
    if v is None:
        open(base + ".none", "w").close()
        return base + ".none"
    if isinstance(v, (list, dict)):
        os.makedirs(base)
        if isinstance(v, dict):
            keys = list(v.keys())
            save_value(np.array(keys), os.path.join(base, "keys"))
            save_value(np.array([v[k] for k in keys]), os.path.join(base, "values"))
        for i, e in enumerate(v if isinstance(v, list) else []):
            save_value(e, os.path.join(base, str(i)))
        return base
    t = tensor_to_npy(v)
    if isinstance(t, str):
        raise ValueError(t)
    np.save(base + ".npy", t)
    return base + ".npy"


def load_value(base, ref):
    """Reads what kiln wrote at BASE in those forms (None when nothing is there: raises
    FileNotFoundError); ref, the expected value, says how narrow types come back."""
    import numpy as np
    if os.path.isfile(base + ".none"):
        return None
    if os.path.isdir(base):
        if os.path.isfile(os.path.join(base, "keys.npy")):
            keys = np.load(os.path.join(base, "keys.npy"), allow_pickle=False)
            vals = np.load(os.path.join(base, "values.npy"), allow_pickle=False)
            return dict(zip(keys.tolist(), vals))
        ref = ref if isinstance(ref, list) else []
        out, i = [], 0
        while any(os.path.exists(os.path.join(base, str(i)) + x) for x in ("", ".npy", ".none")):
            out.append(load_value(os.path.join(base, str(i)), ref[i] if i < len(ref) else None))
            i += 1
        return out
    g = np.load(base + ".npy", allow_pickle=False)
    ref = as_array(ref)
    if isinstance(ref, np.ndarray) and ref.dtype.name == "bfloat16" and g.dtype == np.float32:
        g = g.astype(ref.dtype)  # bf16 outputs are written as f32 (exact: they are bf16 values)
    elif isinstance(ref, np.ndarray) and ref.dtype.name in NARROW and g.dtype in (np.uint8, np.int8):
        g = narrow_from_npy(g, ref.dtype)
    return g


def run_kiln(kiln, case, ins, outs, work):
    """(reason or None, crashed)."""
    d = os.path.join(work, "run", case.suite, case.name)
    for k, (inputs, expected) in enumerate(case.data_sets):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        cmd = [kiln, "run", case.model_path, "-o", os.path.join(d, "out")]
        for i, v in enumerate(inputs):
            try:
                p = save_value(v, os.path.join(d, "in_%d" % i))
            except ValueError as e:
                return "input %s: %s" % (ins[i].name, e), False
            cmd += ["-i", "%s=%s" % (ins[i].name, p)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "timed out after %d s" % KILN_TIMEOUT_S, True
        if r.returncode < 0 or r.returncode > 1:
            return "exit %d: %s" % (r.returncode, (r.stderr.strip().splitlines() or ["?"])[-1][:300]), True
        if r.returncode != 0:
            err = [x for x in r.stderr.strip().splitlines() if x.strip()]
            return (err[0] if err else "exit 1")[:400], False
        got = []
        for j, o in enumerate(outs[:len(expected)]):
            try:
                got.append(load_value(os.path.join(d, "out", safe_name(o.name)), expected[j]))
            except FileNotFoundError:
                return "output %s not written" % o.name, False
            except Exception as e:  # noqa: BLE001
                return "output %s: unreadable (%s)" % (o.name, e), False
        why = compare(expected, got, case.rtol, case.atol)
        if why:
            return ("data set %d: " % k if len(case.data_sets) > 1 else "") + why, False
    shutil.rmtree(d, ignore_errors=True)
    return None, False


def inner(argv):
    import numpy as np
    np.seterr(all="ignore")
    import onnx
    import onnxruntime
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inner", action="store_true")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--venv")
    ap.add_argument("--work", help="scratch and report directory (default: KILN's dir/onnx-suite)")
    ap.add_argument("-k", dest="filter", help="only cases whose name contains this")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--suite", choices=["node", "legacy"], help="one suite only")
    ap.add_argument("--update", action="store_true", help="rewrite kiln_passes.txt with what passes now")
    ap.add_argument("--failures", action="store_true", help="print every case kiln fails, with the reason")
    args = ap.parse_args(argv)
    kiln = os.path.abspath(args.kiln)
    work = os.path.abspath(args.work or os.path.join(os.path.dirname(kiln), "onnx-suite"))
    shutil.rmtree(os.path.join(work, "run"), ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    log("onnx %s (default domain up to opset %d), onnxruntime %s" %
        (onnx.__version__, onnx.defs.onnx_opset_version(), onnxruntime.__version__))

    t0 = time.time()
    cases = []
    if args.suite in (None, "node"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases += node_cases(work)
    if args.suite in (None, "legacy"):
        cases += legacy_cases()
    if args.filter:
        cases = [c for c in cases if args.filter in c.name]
    log("%d cases generated in %.0f s" % (len(cases), time.time() - t0))

    t0 = time.time()
    results = {}

    def one(case):
        key = "%s/%s" % (case.suite, case.name)
        try:
            ins, outs = model_io(case)
        except Exception as e:  # noqa: BLE001
            results[key] = ("model: %s" % e, False, "model: %s" % e)
            return
        kr, crashed = run_kiln(kiln, case, ins, outs, work)
        results[key] = (kr, crashed, run_ort(case, ins, outs))

    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        list(pool.map(one, cases))
    log("ran in %.0f s" % (time.time() - t0))

    suites = sorted({c.suite for c in cases})
    summary = ["| suite | cases | kiln | ONNX Runtime | kiln only | ORT only |", "|---|---|---|---|---|---|"]
    for s in suites + ["all"]:
        keys = [k for k in results if s == "all" or k.split("/")[0] == s]
        kp = {k for k in keys if results[k][0] is None}
        op = {k for k in keys if results[k][2] is None}
        summary.append("| %s | %d | %d | %d | %d | %d |" % (s, len(keys), len(kp), len(op), len(kp - op), len(op - kp)))
    print("\n".join(summary))
    with open(os.path.join(work, "summary.md"), "w") as f:
        f.write("onnx %s, onnxruntime %s\n\n" % (onnx.__version__, onnxruntime.__version__))
        f.write("\n".join(summary) + "\n")
    with open(os.path.join(work, "results.tsv"), "w") as f:
        f.write("case\tkiln\tort\n")
        for k in sorted(results):
            kr, _, orr = results[k]
            f.write("%s\t%s\t%s\n" % (k, "pass" if kr is None else "FAIL: " + kr.replace("\t", " "),
                                        "pass" if orr is None else "FAIL: " + orr.replace("\t", " ")))

    passing = {k for k, v in results.items() if v[0] is None}
    listed = set()
    if os.path.isfile(PASS_LIST):
        with open(PASS_LIST) as f:
            listed = {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
    in_scope = {k for k in listed if k in results}
    regressed = sorted(in_scope - passing)
    new = sorted(passing - listed)
    crashed = sorted(k for k, v in results.items() if v[1])
    if args.failures:
        for k in sorted(results):
            if results[k][0] is not None:
                print("FAIL %s: %s" % (k, results[k][0]))
    for k in new:
        print("newly passing: %s" % k)
    for k in regressed:
        print("REGRESSED: %s: %s" % (k, results[k][0]))
    for k in crashed:
        print("CRASH: %s: %s" % (k, results[k][0]))
    if args.update:
        if args.filter or args.suite:
            print("onnx_suite: error: --update needs the whole suite (no -k, no --suite)", file=sys.stderr)
            return 2
        with open(PASS_LIST, "w") as f:
            f.write("# ONNX conformance cases kiln passes (tests/onnx_suite/run_onnx_suite.py --update);\n"
                    "# a listed case that fails is a regression.\n")
            for k in sorted(passing):
                f.write(k + "\n")
        log("wrote %d cases to %s" % (len(passing), PASS_LIST))
    log("%d of %d cases pass on kiln, %d on ONNX Runtime; %d regressed, %d newly passing, %d crashed" %
        (len(passing), len(results), sum(1 for v in results.values() if v[2] is None), len(regressed), len(new),
         len(crashed)))
    return 1 if regressed or crashed else 0


if __name__ == "__main__":
    if "--inner" in sys.argv[1:]:
        sys.exit(inner(sys.argv[1:]))
    sys.exit(outer(sys.argv[1:]))
