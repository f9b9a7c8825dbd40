#!/usr/bin/env python3
"""scikit-learn models converted by skl2onnx, run by kiln and checked against scikit-learn.

Each model is trained here, at test time, with fixed seeds on small synthetic data
(sklearn.datasets.make_classification / make_regression, and load_iris, which ships
inside scikit-learn), converted with skl2onnx (most classifiers with zipmap disabled:
options={id(model): {'zipmap': False}}, so probabilities are one float tensor; the
"+ZipMap" ones with skl2onnx's default, which ends in ai.onnx.ml ZipMap: probabilities
as a sequence of maps from class label, int64 or string, to probability, which kiln
writes as OUTDIR/NAME/0/keys.npy, 0/values.npy, ...), then run with
`kiln run model.onnx -i NAME=x.npy -o OUTDIR` on held-out rows. kiln's
outputs are compared with scikit-learn's own predict / predict_proba /
decision_function; ONNX Runtime runs the same file too and its distance from
scikit-learn is printed beside kiln's, for reference (it is not a pass criterion).

Tolerances. Inputs are float32 values (what the ONNX models take), given to
scikit-learn as the same values in float64, so both see identical inputs.
  * labels: exactly;
  * probabilities: 1e-5 absolute (ZipMap's maps: keys exactly scikit-learn's classes_,
    in order, values 1e-5 absolute);
  * regression values and decision functions: 1e-5 relative to the largest |value| of
    the reference (at least 1e-5 absolute). skl2onnx stores weights, coefficients and
    support vectors as float32 and the outputs are float32, so an output of magnitude
    M carries rounding of order 1e-7 * M; absolute 1e-5 would fail on values ~100 for
    reasons that have nothing to do with kiln.
Tree thresholds are float32 in the ONNX file; a row lying between scikit-learn's
float64 threshold and its float32 rounding would take the other branch. With float32
inputs that cannot happen for thresholds scikit-learn puts midway between float32
training values unless the rounding lands on a training value, which the fixed seeds
here avoid; no looser tolerance is used for trees.

One more model exercises ai.onnx.ml opset 5's TreeEnsemble, which skl2onnx does not
emit: it is written here from a RandomForestRegressor's own tree arrays.

Prints one line per model and "N passed, N failed"; exits 1 on any failure.

The packages (PINS) live in a virtual environment of their own, made once and reused
(tests/python/run_tests.py's rerun_in_venv; default build-venvs/sklearn-venv); this script
re-runs itself inside it.

Usage: test_sklearn_models.py --kiln PATH [--venv DIR] [--work DIR] [-k SUBSTR]
"""

import argparse
import os
import warnings
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PINS = ["scikit-learn==1.9.1", "skl2onnx==1.20.0", "onnx==1.23.2", "onnxruntime==1.31.1", "numpy==2.4.6"]

KILN_TIMEOUT_S = 120
PROBA_ATOL = 1e-5
VALUE_RTOL = 1e-5


def log(msg):
    print("sklearn_models: " + msg, flush=True)


def outer(argv):
    """Makes (or reuses) the reference environment and re-runs this script inside it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    return run_tests.rerun_in_venv(__file__, argv, PINS, "sklearn-venv", "sklearn_models")


# ----------------------------------------------------------------- inside the venv ---

def f32(x):
    import numpy as np
    return np.asarray(x, dtype=np.float32)


def datasets():
    import numpy as np
    from sklearn.datasets import load_iris, make_classification, make_regression
    d = {}
    X, y = make_classification(n_samples=400, n_features=8, n_informative=5, n_redundant=1, n_classes=3,
                               random_state=0)
    d["cls3"] = (f32(X).astype(np.float64), y)
    X, y = make_classification(n_samples=400, n_features=6, n_informative=4, n_classes=2, random_state=1)
    d["cls2"] = (f32(X).astype(np.float64), y)
    X, y = make_regression(n_samples=400, n_features=6, n_informative=4, noise=5.0, random_state=2)
    d["reg"] = (f32(X).astype(np.float64), y)
    iris = load_iris()
    d["iris"] = (f32(iris.data).astype(np.float64), iris.target)
    d["iris-names"] = (d["iris"][0], iris.target_names[iris.target])  # string class labels
    # Mixed: 3 numeric columns (integers, scaled) and 2 int64 categorical columns.
    rng = np.random.RandomState(3)
    num = rng.randint(-50, 50, size=(400, 3))
    cat = np.stack([rng.randint(0, 4, size=400), rng.randint(10, 13, size=400)], axis=1)
    Xm = np.concatenate([num, cat], axis=1).astype(np.int64)
    ym = ((num[:, 0] + 20 * (cat[:, 0] == 2) - 15 * (cat[:, 1] == 11) + rng.randn(400) * 5) > 0).astype(np.int64)
    ym += (num[:, 1] > 25).astype(np.int64)
    d["mixed"] = (Xm, ym)
    return d


def split(X, y):
    """Train on the first 300 rows, test on the rest (the data sets are shuffled)."""
    n = int(len(X) * 0.75)
    return X[:n], y[:n], X[n:], y[n:]


def models():
    """[(name, data set, estimator, kind)] kind: classifier / regressor / svc / zipmap
    (a classifier converted with ZipMap)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier,
                                  RandomForestRegressor)
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.svm import SVC, SVR
    pipe = Pipeline([
        ("prep", ColumnTransformer([("num", StandardScaler(), [0, 1, 2]),
                                    ("cat", OneHotEncoder(handle_unknown="ignore"), [3, 4])])),
        ("lr", LogisticRegression(max_iter=1000)),
    ])
    return [
        ("RandomForestClassifier", "cls3", RandomForestClassifier(n_estimators=12, max_depth=7, random_state=0),
         "classifier"),
        ("RandomForestRegressor", "reg", RandomForestRegressor(n_estimators=12, max_depth=7, random_state=0),
         "regressor"),
        ("GradientBoostingClassifier-binary", "cls2",
         GradientBoostingClassifier(n_estimators=25, max_depth=3, random_state=0), "classifier"),
        ("GradientBoostingClassifier-multiclass", "iris",
         GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0), "classifier"),
        ("GradientBoostingRegressor", "reg", GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0),
         "regressor"),
        ("LogisticRegression-multiclass", "iris", LogisticRegression(max_iter=1000), "classifier"),
        ("LinearRegression", "reg", LinearRegression(), "regressor"),
        ("SVC-binary", "cls2", SVC(probability=False, random_state=0), "svc"),
        ("SVC-multiclass", "iris", SVC(probability=False, random_state=0), "svc"),
        ("SVR", "reg", SVR(C=50.0), "regressor"),
        ("Pipeline(StandardScaler+OneHotEncoder+LogisticRegression)", "mixed", pipe, "classifier"),
        ("LogisticRegression-multiclass+ZipMap", "iris", LogisticRegression(max_iter=1000), "zipmap"),
        ("RandomForestClassifier-string-labels+ZipMap", "iris-names",
         RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0), "zipmap"),
    ]


def convert(est, Xtr, kind):
    import numpy as np
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType
    t = Int64TensorType if Xtr.dtype == np.int64 else FloatTensorType
    opts = {id(est): {"zipmap": False}} if kind in ("classifier", "svc") else None  # "zipmap": skl2onnx's default
    return to_onnx(est, initial_types=[("X", t([None, Xtr.shape[1]]))], options=opts,
                   target_opset={"": 17, "ai.onnx.ml": 3})


def tree_ensemble5(est, n_features):
    """An ai.onnx.ml opset-5 TreeEnsemble equivalent to a RandomForestRegressor
    (AVERAGE of its trees' leaf values), built from scikit-learn's tree arrays."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    feat, split, mode, tid, tleaf, fid, fleaf, roots = [], [], [], [], [], [], [], []
    leaf_w = []
    for e in est.estimators_:
        t = e.tree_
        inner = [i for i in range(t.node_count) if t.children_left[i] >= 0]
        leaves = [i for i in range(t.node_count) if t.children_left[i] < 0]
        pos = {n: len(feat) + k for k, n in enumerate(inner)}
        lpos = {n: len(leaf_w) + k for k, n in enumerate(leaves)}
        roots.append(pos[0])
        for n in inner:
            feat.append(int(t.feature[n]))
            split.append(float(t.threshold[n]))
            mode.append(0)  # BRANCH_LEQ
            for c, ids, lf in ((t.children_left[n], tid, tleaf), (t.children_right[n], fid, fleaf)):
                if c in lpos:
                    ids.append(lpos[c])
                    lf.append(1)
                else:
                    ids.append(pos[c])
                    lf.append(0)
        leaf_w += [float(t.value[n][0][0]) for n in leaves]
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1, aggregate_function=0, post_transform=0,
        tree_roots=roots, nodes_featureids=feat,
        nodes_splits=numpy_helper.from_array(np.array(split, np.float32)),
        nodes_modes=numpy_helper.from_array(np.array(mode, np.uint8)),
        nodes_truenodeids=tid, nodes_trueleafs=tleaf, nodes_falsenodeids=fid, nodes_falseleafs=fleaf,
        leaf_targetids=[0] * len(leaf_w), leaf_weights=numpy_helper.from_array(np.array(leaf_w, np.float32)))
    g = helper.make_graph([node], "te5", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    m.ir_version = 10  # what the pinned ONNX Runtime reads
    return m


def run_kiln(kiln, model_path, x, d):
    """{output name: array} or an error string."""
    import numpy as np
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    xp = os.path.join(d, "x.npy")
    np.save(xp, x)
    out = os.path.join(d, "out")
    try:
        r = subprocess.run([kiln, "run", model_path, "-i", "X=" + xp, "-o", out], capture_output=True, text=True,
                           timeout=KILN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "kiln timed out after %d s" % KILN_TIMEOUT_S
    if r.returncode != 0:
        err = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return "kiln exit %d: %s" % (r.returncode, (err[-1] if err else "?")[:400])
    res = {}
    for f in sorted(os.listdir(out)):
        p = os.path.join(out, f)
        if f.endswith(".npy"):
            res[f[:-4]] = np.load(p, allow_pickle=False)
        elif os.path.isdir(p):  # a sequence of maps (ZipMap): p/0/keys.npy, p/0/values.npy, ...
            maps, i = [], 0
            while os.path.isdir(os.path.join(p, str(i))):
                maps.append((np.load(os.path.join(p, str(i), "keys.npy"), allow_pickle=False),
                             np.load(os.path.join(p, str(i), "values.npy"), allow_pickle=False)))
                i += 1
            res[f] = maps
    return res


def expected_outputs(est, X, kind):
    """[(what, array, how)] in ONNX output order; how: exact / proba / value."""
    if kind == "regressor":
        return [("predict", est.predict(X).reshape(-1, 1), "value")]
    if kind == "svc":
        dec = est.decision_function(X)
        if dec.ndim == 1:
            dec = dec.reshape(-1, 1)
        return [("predict", est.predict(X), "exact"), ("decision_function", dec, "value")]
    if kind == "zipmap":
        return [("predict", est.predict(X), "exact"), ("predict_proba", (est.classes_, est.predict_proba(X)), "zipmap")]
    return [("predict", est.predict(X), "exact"), ("predict_proba", est.predict_proba(X), "proba")]


def compare_maps(ref, got):
    """ZipMap's output, [(keys, values)] per row (kiln) or [dict] (ONNX Runtime), against
    (classes_, predict_proba): (ok, max abs diff or None, note)."""
    import numpy as np
    classes, proba = ref
    if not isinstance(got, list):
        return False, None, "not a sequence of maps"
    if len(got) != len(proba):
        return False, None, "%d maps, expected %d" % (len(got), len(proba))
    rows = []
    for i, m in enumerate(got):
        keys, vals = (list(m.keys()), list(m.values())) if isinstance(m, dict) else (list(m[0]), list(m[1]))
        if keys != list(classes):
            return False, None, "map %d has keys %s, expected %s" % (i, keys, list(classes))
        rows.append(vals)
    diff = float(np.max(np.abs(np.asarray(rows, dtype=np.float64) - proba))) if proba.size else 0.0
    return diff <= PROBA_ATOL, diff, "" if diff <= PROBA_ATOL else "max diff %.3g > %.3g" % (diff, PROBA_ATOL)


def compare(ref, got, how):
    """(ok, max abs diff or None, note)."""
    import numpy as np
    if got is None:
        return False, None, "missing"
    if how == "zipmap":
        return compare_maps(ref, got)
    got = np.asarray(got)
    if how == "value" and ref.ndim == 2 and ref.shape[1] == 1 and got.ndim == 2 and got.shape[1] == 2:
        # Binary SVC: skl2onnx negates the model so that the SVMClassifier's scores
        # [-s, s] hold scikit-learn's decision_function in column 0.
        got = got[:, :1]
    if got.shape != ref.shape and got.size == ref.size:
        got = got.reshape(ref.shape)
    if got.shape != ref.shape:
        return False, None, "shape %s, expected %s" % (got.shape, ref.shape)
    if how == "exact":
        bad = int((got != ref).sum())
        return bad == 0, float(bad), "%d labels differ" % bad if bad else ""
    diff = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    tol = PROBA_ATOL if how == "proba" else max(VALUE_RTOL * float(np.max(np.abs(ref))), 1e-5)
    return diff <= tol, diff, "" if diff <= tol else "max diff %.3g > %.3g" % (diff, tol)


def inner(argv):
    import numpy as np
    import onnxruntime as ort
    warnings.simplefilter("ignore", FutureWarning)  # SVC's probability=False parameter is deprecated in 1.9
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inner", action="store_true")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--venv")
    ap.add_argument("--work", help="scratch directory (default: a temporary one)")
    ap.add_argument("-k", dest="filter", help="only models whose name contains this")
    args = ap.parse_args(argv)
    kiln = os.path.abspath(args.kiln)
    work = args.work or tempfile.mkdtemp(prefix="kiln-sklearn-")
    os.makedirs(work, exist_ok=True)
    data = datasets()
    cases = models() + [("TreeEnsemble-5(RandomForestRegressor)", "reg", None, "te5")]
    passed = failed = 0
    for name, ds, est, kind in cases:
        if args.filter and args.filter not in name:
            continue
        X, y = data[ds]
        Xtr, ytr, Xte, _ = split(X, y)
        safe = "".join(c if c.isalnum() else "_" for c in name)
        d = os.path.join(work, safe)
        try:
            if kind == "te5":
                from sklearn.ensemble import RandomForestRegressor
                est = RandomForestRegressor(n_estimators=8, max_depth=6, random_state=1).fit(Xtr, ytr)
                onx = tree_ensemble5(est, Xtr.shape[1])
                kind = "regressor"
            else:
                est.fit(Xtr, ytr)
                onx = convert(est, Xtr, kind)
            os.makedirs(d, exist_ok=True)
            mp = os.path.join(d, "model.onnx")
            with open(mp, "wb") as f:
                f.write(onx.SerializeToString())
        except Exception as e:  # noqa: BLE001
            print("FAIL %-58s could not train/convert: %s" % (name, str(e).splitlines()[0][:200]), flush=True)
            failed += 1
            continue
        xin = Xte.astype(np.int64 if Xte.dtype == np.int64 else np.float32)
        outs = [o.name for o in onx.graph.output]
        ops = sorted({n.op_type for n in onx.graph.node if n.domain == "ai.onnx.ml"})
        exp = expected_outputs(est, Xte, kind)
        got = run_kiln(kiln, mp, xin, os.path.join(d, "run"))
        try:
            sess = ort.InferenceSession(mp, providers=["CPUExecutionProvider"])
            ort_out = sess.run(None, {"X": xin})
        except Exception as e:  # noqa: BLE001
            ort_out = None
            ort_err = str(e).splitlines()[0][:120]
        ok = not isinstance(got, str)
        parts, ort_parts = [], []
        for j, (what, ref, how) in enumerate(exp):
            if isinstance(got, str):
                break
            g = got.get("".join(c if c.isalnum() or c in "_.-" else "_" for c in outs[j])) if j < len(outs) else None
            good, diff, note = compare(ref, g, how)
            ok = ok and good
            parts.append("%s %s" % (what, ("max|d|=%.2g" % diff if how != "exact" else "exact") if good and diff is not None
                                    else "FAIL(%s)" % note))
            if ort_out is not None and j < len(ort_out):
                og, od, _ = compare(ref, ort_out[j], how)
                ort_parts.append("%s" % ("exact" if how == "exact" and og else
                                         ("%d differ" % od if how == "exact" else "max|d|=%.2g" % od)
                                         if od is not None else "?"))
        detail = got if isinstance(got, str) else "; ".join(parts)
        ref_note = ("ort: " + ", ".join(ort_parts)) if ort_out is not None else "ort: error (%s)" % ort_err
        print("%s %-58s [%s] %s | %s" % ("PASS" if ok else "FAIL", name, ",".join(ops), detail, ref_note), flush=True)
        if ok:
            passed += 1
        else:
            failed += 1
    print("%d passed, %d failed" % (passed, failed), flush=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    if "--inner" in sys.argv[1:]:
        sys.exit(inner(sys.argv[1:]))
    sys.exit(outer(sys.argv[1:]))
