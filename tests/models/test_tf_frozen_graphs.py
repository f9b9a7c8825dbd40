#!/usr/bin/env python3
"""TensorFlow 2.21 frozen GraphDefs with control flow, run by kiln and checked against TF.

Each graph is built here, at test time, from a tf.function with random weights (Keras
layers get keras.utils.set_random_seed; nothing is downloaded), frozen the way
TensorFlow's tools freeze a model -- convert_variables_to_constants_v2, which also
lowers functional control flow to TF1's Switch / Merge / Enter / Exit / NextIteration /
LoopCond -- and written as a binary GraphDef. A GraphDef has no signature, so kiln
finds the outputs itself (nodes whose data nothing reads, minus control-only helpers
such as while/loop_body_control and cond/pivot_t); the test checks that it finds exactly
TF's outputs and that their values match what TF computes for the same inputs:
  * while_cond:   tf.while_loop whose body holds a tf.cond
  * tensor_array: a tf.while_loop writing a TensorArray, stacked (TF2: TensorList ops)
  * tensor_array_v1: the same with TF1 control flow, where a TensorArray is the
                  TensorArrayV3 family (Unstack/Scatter, Read, Write, Gather)
  * lstm, gru:    Keras 3 Embedding -> LSTM / GRU (seq 20) -> Dense softmax
  * nms:          tf.image.non_max_suppression (V3/V4) and _padded (a while loop of its
                  own) with the selected boxes gathered
  * convnet:      a plain Keras Conv2D / MaxPool / Dense model, the control
Each runs with `kiln run --jit off` (op by op through the executor's frames) and
`--jit auto` (clusters compiled by the bridge).

Tolerances. Float outputs: 1e-5 relative to the largest |value| of TF's output (at
least 1e-6 absolute): every graph is a float32 chain, and kiln's kernels may sum or fuse
in another order than Eigen's, which moves the last bits (about 1e-7 relative per op;
the LSTM/GRU run 20 steps). Integer outputs (NMS indices, valid counts): exactly.

Then the naming flags: `--outputs` picks an internal tensor (the LSTM's Softmax input
and output; the logits are compared with a TF session's, since the near-uniform softmax
of small random logits would hide errors), `--inputs` feeds an internal tensor of the convnet (its Flatten output,
compared with a TF session fed the same values), and a name that matches nothing must
fail with exit status 1 and a message naming it.

Prints one line per check and "N passed, N failed"; exits 1 on any failure.

The packages (PINS) live in a virtual environment of their own, made once and reused
(tests/python/run_tests.py's rerun_in_venv; default build-venvs/tf-venv); this script
re-runs itself inside it.

Usage: test_tf_frozen_graphs.py --kiln PATH [--venv DIR] [--work DIR] [-k SUBSTR]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PINS = ["tensorflow-cpu==2.21.0", "numpy==2.4.6", "keras==3.15.1", "ml_dtypes==0.6.0"]

KILN_TIMEOUT_S = 300
FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6


def log(msg):
    print("tf_frozen_graphs: " + msg, flush=True)


def outer(argv):
    """Makes (or reuses) the reference environment and re-runs this script inside it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    return run_tests.rerun_in_venv(__file__, argv, PINS, "tf-venv", "tf_frozen_graphs")


# ----------------------------------------------------------------- inside the venv ---

def build_models():
    """name -> (tf.function, input specs, input values). Fixed seeds throughout."""
    import numpy as np
    import tensorflow as tf
    import keras
    rng = np.random.default_rng(0)
    models = {}

    @tf.function
    def while_cond(x):
        def body(i, acc):
            acc = tf.cond(tf.reduce_sum(acc) > 0.0, lambda: acc * 0.5 + 1.0, lambda: acc + 2.0)
            return i + 1, acc
        _, r = tf.while_loop(lambda i, a: i < 7, body, [tf.constant(0), x])
        return r
    models["while_cond"] = (while_cond, [tf.TensorSpec([4, 3], tf.float32)],
                            [rng.standard_normal((4, 3)).astype(np.float32)])

    @tf.function
    def tensor_array(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=n)

        def body(i, ta):
            return i + 1, ta.write(i, tf.reduce_sum(x[: i + 1], axis=0) * tf.cast(i, tf.float32))
        _, ta = tf.while_loop(lambda i, ta: i < n, body, [0, ta])
        return ta.stack()
    models["tensor_array"] = (tensor_array, [tf.TensorSpec([None, 5], tf.float32)],
                              [rng.standard_normal((6, 5)).astype(np.float32)])

    def text_model(layer, seed):
        keras.utils.set_random_seed(seed)
        m = keras.Sequential([keras.Input((20,), dtype="int32"), keras.layers.Embedding(50, 8), layer(16),
                              keras.layers.Dense(3, activation="softmax")])
        return tf.function(lambda x: m(x, training=False))
    for name, layer, seed in [("lstm", keras.layers.LSTM, 1), ("gru", keras.layers.GRU, 2)]:
        models[name] = (text_model(layer, seed), [tf.TensorSpec([2, 20], tf.int32)],
                        [rng.integers(0, 50, (2, 20)).astype(np.int32)])

    @tf.function
    def nms(boxes, scores):
        sel = tf.image.non_max_suppression(boxes, scores, 10, iou_threshold=0.5, score_threshold=0.1)
        padded, valid = tf.image.non_max_suppression_padded(boxes, scores, 10, iou_threshold=0.5,
                                                            pad_to_max_output_size=True)
        return tf.gather(boxes, sel), sel, padded, valid
    corners = rng.uniform(0, 1, (30, 4)).astype(np.float32)
    boxes = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])], 1)
    models["nms"] = (nms, [tf.TensorSpec([30, 4], tf.float32), tf.TensorSpec([30], tf.float32)],
                     [boxes, rng.uniform(0, 1, 30).astype(np.float32)])

    keras.utils.set_random_seed(3)
    conv = keras.Sequential([keras.Input((16, 16, 3)), keras.layers.Conv2D(8, 3, activation="relu"),
                             keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(4)])
    models["convnet"] = (tf.function(lambda x: conv(x, training=False)), [tf.TensorSpec([1, 16, 16, 3], tf.float32)],
                         [rng.standard_normal((1, 16, 16, 3)).astype(np.float32)])
    return models


def freeze(fn, specs, values, path):
    """Writes the frozen GraphDef; returns (input names, output names, TF's outputs)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    frozen = convert_variables_to_constants_v2(fn.get_concrete_function(*specs))
    with open(path, "wb") as f:
        f.write(frozen.graph.as_graph_def().SerializeToString())
    res = frozen(*[tf.constant(v) for v in values])
    if not isinstance(res, (list, tuple)):
        res = [res]
    return ([t.name for t in frozen.inputs], [t.name for t in frozen.outputs], [r.numpy() for r in res])


def tensor_array_v1(path, value):
    """TF1 control flow (tf.compat.v1.disable_control_flow_v2 while tracing), where
    tf.TensorArray is the TensorArrayV3 family (TF2's functions use TensorLists): unstack
    x, scale row i by i inside a while loop, stack. No variables, so the graph is
    already frozen. Returns what freeze() returns, TF's outputs from a v1 Session."""
    import tensorflow as tf
    tf.compat.v1.disable_control_flow_v2()
    g = tf.Graph()
    try:
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 5], name="x")
            n = tf.shape(x)[0]
            rows = tf.TensorArray(tf.float32, size=n).unstack(x)

            def body(i, ta):
                return i + 1, ta.write(i, rows.read(i) * tf.cast(i, tf.float32) + 1.0)
            _, ta = tf.while_loop(lambda i, ta: i < n, body, [0, tf.TensorArray(tf.float32, size=n)])
            tf.identity(ta.stack(), name="y")
    finally:
        tf.compat.v1.enable_control_flow_v2()
    gd = g.as_graph_def()
    with open(path, "wb") as f:
        f.write(gd.SerializeToString())
    with tf.compat.v1.Session(graph=g) as sess:
        y = sess.run("y:0", {"x:0": value})
    return ["x:0"], ["y:0"], [y]


def file_name(result):
    """cmd_run.c's output file name for a result name."""
    if result.endswith(":0"):
        result = result[:-2]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", result) + ".npy"


def run_kiln(kiln, model, feeds, outdir, extra):
    """Runs `kiln run`; returns (exit status, stderr, {result file: array}, JSON line)."""
    import numpy as np
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    cmd = [kiln, "run", model, "-o", outdir, "--json"] + extra
    for name, path in feeds:
        cmd += ["-i", "%s=%s" % (name, path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
    stats = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            stats = json.loads(line)
    outs = {f: np.load(os.path.join(outdir, f)) for f in os.listdir(outdir) if f.endswith(".npy")}
    return p.returncode, p.stderr, outs, stats


def compare(got, want):
    """None when got matches want within the tolerance, else what differs."""
    import numpy as np
    if got.shape != want.shape:
        return "shape %s, TF %s" % (got.shape, want.shape)
    if want.dtype.kind in "iub":
        if got.dtype != want.dtype or not np.array_equal(got, want):
            return "%s differs from TF's %s (exact expected)" % (got.dtype, want.dtype)
        return None
    if not want.size:
        return None
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    tol = max(FLOAT_ATOL, FLOAT_RTOL * float(np.max(np.abs(want))))
    return None if err <= tol else "max |error| %.3g > %.3g" % (err, tol)


def max_error(got, want):
    import numpy as np
    if got.shape != want.shape or not want.size:
        return 0.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))


def node_ops(pb):
    import tensorflow as tf
    gd = tf.compat.v1.GraphDef()
    with open(pb, "rb") as f:
        gd.ParseFromString(f.read())
    return gd


def session_run(pb, fetch, feed_dict):
    """TF's value of any tensor of the frozen graph: a v1 Session over the GraphDef."""
    import tensorflow as tf
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(node_ops(pb), name="")
    with tf.compat.v1.Session(graph=g) as sess:
        return sess.run(fetch, feed_dict=feed_dict)


def inner(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--venv")
    ap.add_argument("--work", help="keep the models and outputs here (default: a temporary folder)")
    ap.add_argument("-k", help="only the models whose name contains this")
    args = ap.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    kiln = os.path.abspath(args.kiln)
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="kiln-tf-frozen-")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0

    def report(ok, msg):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
        log(("ok    " if ok else "FAIL  ") + msg)

    models = build_models()
    frozen = {}
    models["tensor_array_v1"] = (None, None, [np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)])
    # The v1 loop's counter leaves the loop through an Exit nothing reads: by the output
    # rule it is an output too (as TF's tools would list it), beside TF's y.
    extra_outputs = {"tensor_array_v1": ["while_Exit.npy"]}
    for name, (fn, specs, values) in models.items():
        if args.k and args.k not in name:
            continue
        pb = os.path.join(work, name + ".pb")
        if fn is None:
            ins, outs, refs = tensor_array_v1(pb, values[0])
        else:
            ins, outs, refs = freeze(fn, specs, values, pb)
        feeds = []
        for tname, v in zip(ins, values):
            path = os.path.join(work, "%s.%s.npy" % (name, tname.split(":")[0]))
            np.save(path, v)
            feeds.append((tname.split(":")[0], path))
        frozen[name] = (pb, feeds, outs, refs)
        for jit in ["off", "auto"]:
            rc, err, got, stats = run_kiln(kiln, pb, feeds, os.path.join(work, "%s.%s" % (name, jit)), ["--jit", jit])
            what = "%-15s --jit %-4s" % (name, jit)
            if rc != 0:
                report(False, "%s: kiln exited %d: %s" % (what, rc, err.strip()[-400:]))
                continue
            want_files = sorted([file_name(o) for o in outs] + extra_outputs.get(name, []))
            if sorted(got) != want_files:
                report(False, "%s: outputs %s, TF's %s" % (what, sorted(got), want_files))
                continue
            problems, worst = [], 0.0
            for o, ref in zip(outs, refs):
                p = compare(got[file_name(o)], ref)
                worst = max(worst, max_error(got[file_name(o)], ref))
                if p:
                    problems.append("%s: %s" % (o, p))
            report(not problems, "%s: %d output(s), max |error| %.3g, %s clusters, first run %.1f ms%s" % (
                what, len(outs), worst, stats.get("clusters", "?"), stats.get("first_ms", -1.0),
                "; " + "; ".join(problems) if problems else ""))

    if "lstm" in frozen:
        # --outputs: the Softmax's input (an internal tensor) and output, by TF names.
        pb, feeds, outs, refs = frozen["lstm"]
        softmax = [n for n in node_ops(pb).node if n.op == "Softmax"]
        if len(softmax) != 1:
            report(False, "--outputs: expected one Softmax in the LSTM graph, found %d" % len(softmax))
        else:
            logits = softmax[0].input[0]
            rc, err, got, _ = run_kiln(kiln, pb, feeds, os.path.join(work, "lstm.outputs"),
                                       ["--outputs", "%s:0,%s" % (softmax[0].name, logits)])
            want = sorted([file_name(softmax[0].name), file_name(logits)])
            ok = rc == 0 and sorted(got) == want
            p = compare(got[file_name(softmax[0].name)], refs[0]) if ok else "exit %d, files %s" % (rc, sorted(got))
            if ok and not p:
                # The logits, unlike the near-uniform softmax, show the LSTM's own error.
                p = compare(got[file_name(logits)], session_run(pb, logits + ":0", {"x:0": np.load(feeds[0][1])}))
            ok = ok and not p
            report(ok, "--outputs %s:0,%s: the named tensors only%s" % (
                softmax[0].name, logits, "" if ok else ": " + (p or err.strip()[-300:])))
        rc, err, got, _ = run_kiln(kiln, pb, feeds, os.path.join(work, "lstm.bad"),
                                   ["--outputs", "Identity,no_such_node:0"])
        ok = rc == 1 and "no_such_node:0" in err and not got
        report(ok, "--outputs naming a missing tensor: exit %d, %s" % (rc, err.strip()[-200:]))

    if "convnet" in frozen:
        # --inputs: feed the Flatten output, as a TF session's feed_dict does.
        pb, _, outs, _ = frozen["convnet"]
        gd = node_ops(pb)
        flat = [n.name for n in gd.node if n.op == "Reshape" and "flatten" in n.name]
        if len(flat) != 1:
            report(False, "--inputs: expected one Flatten Reshape in the convnet, found %s" % flat)
        else:
            width = 7 * 7 * 8
            value = np.random.default_rng(4).standard_normal((1, width)).astype(np.float32)
            want = session_run(pb, outs[0], {flat[0] + ":0": value})
            path = os.path.join(work, "convnet.flat.npy")
            np.save(path, value)
            rc, err, got, _ = run_kiln(kiln, pb, [(flat[0], path)], os.path.join(work, "convnet.inputs"),
                                       ["--inputs", flat[0], "--outputs", outs[0]])
            p = compare(got[file_name(outs[0])], want) if rc == 0 and file_name(outs[0]) in got else \
                "exit %d: %s" % (rc, err.strip()[-300:])
            report(not p, "--inputs %s (fed like TF's feed_dict)%s" % (flat[0], ": " + p if p else ""))

    log("%d passed, %d failed" % (passed, failed))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        sys.exit(inner(sys.argv[2:]))
    sys.exit(outer(sys.argv[1:]))
