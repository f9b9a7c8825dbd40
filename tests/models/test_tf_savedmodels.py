#!/usr/bin/env python3
"""TensorFlow SavedModels (saved_model.pb + variables checkpoint), run by kiln and checked
against TensorFlow's own outputs.

Every model is built here, at test time, with random weights (fixed seeds), saved with
TensorFlow 2.21 and loaded back with tf.saved_model.load for the reference: the
signature is called on random float32 inputs and each output key is compared with
`kiln run DIR [--signature NAME] -i KEY=x.npy -o OUT --jit off|auto`, whose outputs are
OUT/KEY.npy. The models:
  * module: a tf.Module with unfrozen tf.Variables and two signatures (serving_default
    and "other", two inputs and two outputs);
  * keras_export: a small Keras model saved with model.export (signatures "serve" and
    "serving_default", two checkpoint keys per variable);
  * mobilenet_v2: keras.applications.MobileNetV2(weights=None, 96x96, alpha 0.35, 10
    logits) with batch-norm statistics from one random batch, saved with
    tf.saved_model.save and an explicit serving signature;
  * stateful: a module whose signature adds to a variable before reading it (the
    importer keeps such variables as variables instead of freezing them);
  * tf1_ref, tf1_resource: TF1 graphs saved with tf.compat.v1.saved_model.simple_save,
    with reference variables (VariableV2, checkpoint keys are the op names) and with
    resource variables (VarHandleOp keyed by shared_name, no object graph);
  * sharded: a module whose variables are split over several data shards, one
    variable cut into slices across shards (SaveOptions' experimental_sharding_callback
    with tf.train.experimental.MaxShardSizePolicy);
  * encoder: a BERT-like Keras encoder with two int32 inputs (token ids and an
    attention mask), embeddings, two attention + feed-forward blocks with layer norm;
  * efficientnet_b0: keras.applications.EfficientNetB0(weights=None, 64x64, 10
    logits), batch-norm statistics from one random batch, like mobilenet_v2;
  * big_variable: a module with one 105.6 MB variable (6.6M x 4 float32), read whole
    (a column max) and by rows;
  * lstm, gru: Keras text classifiers (int32 token ids, vocabulary 100, embedding 16,
    an LSTM or GRU of 32 units over 20 steps, 4 logits) whose recurrent loop stays a
    functional While reading and writing TensorLists;
  * while_cond: a tf.function with a tf.while_loop (an RNN step, 10 iterations) holding
    a tf.cond, saved as functional While/If;
  * nms_padded: tf.image.non_max_suppression_padded (64 boxes, 16 kept): a
    StatelessWhile whose body slices a tile at a loop-counter offset (a runtime Slice
    begin, lowered as a dynamic-slice) of a size from the captured tile size (a
    loop-invariant constant), and StatelessIfs whose ranges need shape-derived operands
    as constants. Selected indices and the valid count must match exactly.
The functional-control-flow models (FUNCTIONAL) are also run with --iters 50 --json:
with --jit auto no cluster may fall back op by op, `kiln cluster DIR` must show the
While in a cluster (for the RNNs with the TensorLists around it), and a "perf" line
prints kiln's median time with --jit off and auto next to TensorFlow's own (a call of
the loaded signature).
Tolerance: |kiln - tf| <= 1e-5 + 1e-5 * max|tf| for the small models, and
1e-4 * max(1, max|tf|) for MobileNetV2, EfficientNetB0 and the encoder (dozens of
float32 convolutions, matmuls and softmaxes summed in another order than TF's oneDNN
kernels). Integer inputs (the encoder's) are ids in 0..49 and a 0/1 mask.

Bad inputs, each must exit 1 with a message naming the culprit: a missing data shard
(the file name), a truncated shard ("truncated" and the file), a flipped byte in a
shard ("bad CRC" and the tensor key), an unknown --signature (the name asked for
and the ones there are) and a lookup table (the node and its op).

The C API (ctypes on libkiln.so beside the kiln binary) loads the module's directory
with kiln_model_load and the "signature" option: inputs and outputs are found by
their signature keys, and an unknown signature is an error naming it.

The packages (PINS) live in a virtual environment of their own (tests/python/
run_tests.py's rerun_in_venv; default build-venvs/tf-venv); this script re-runs itself
inside it. Prints one line per check and "N passed, N failed"; exits 1 on any failure.

Usage: test_tf_savedmodels.py --kiln PATH [--venv DIR] [--work DIR] [-k SUBSTR]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name -> what `kiln cluster DIR` must say about the model's While node.
FUNCTIONAL = {"lstm": "in a cluster", "gru": "in a cluster", "while_cond": "in a cluster",
              "nms_padded": "in a cluster"}
PERF_ITERS = 50

PINS = ["tensorflow-cpu==2.21.0", "numpy==2.4.6", "keras==3.15.1", "ml_dtypes==0.6.0"]
KILN_TIMEOUT_S = 300


def outer(argv):
    """Makes (or reuses) the reference environment and re-runs this script inside it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    return run_tests.rerun_in_venv(__file__, argv, PINS, "tf-venv", "tf_savedmodels")


# ----------------------------------------------------------------- inside the venv ---

def build_models(work):
    """Saves each model under work/NAME; returns [(name, dir, signature, rtol_kind)]."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    import keras

    tf.random.set_seed(0)
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    made = []

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32))
            self.b = tf.Variable(rng.standard_normal((3,)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def f(self, x):
            return {"y": tf.nn.relu(tf.matmul(x, self.w) + self.b)}

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x"),
                                      tf.TensorSpec([None, 3], tf.float32, name="z")])
        def g(self, x, z):
            return {"s": tf.matmul(x, self.w) * z, "t": tf.reduce_sum(z + self.b, axis=1)}

    m = Module()
    d = os.path.join(work, "module")
    tf.saved_model.save(m, d, signatures={"serving_default": m.f, "other": m.g})
    made += [("module", d, None, "small"), ("module", d, "other", "small")]

    km = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(2)])
    d = os.path.join(work, "keras_export")
    km.export(d, verbose=False)
    made += [("keras_export", d, None, "small"), ("keras_export", d, "serve", "small")]

    def save_classifier(name, net, size):
        """A keras.applications network saved with a serving signature returning logits.
        Freshly initialised batch norms leave the activations ~1e-10 by the last block
        (and the logits all but equal); one training-mode call with momentum 0 sets the
        moving statistics to a random batch's, so the outputs are of order 1."""
        for layer in net.layers:
            if isinstance(layer, keras.layers.BatchNormalization):
                layer.momentum = 0.0
        net(rng.standard_normal((8, size, size, 3)).astype(np.float32), training=True)
        serve = tf.function(lambda x: {"logits": net(x, training=False)},
                            input_signature=[tf.TensorSpec([None, size, size, 3], tf.float32, name="x")])
        d = os.path.join(work, name)
        tf.saved_model.save(net, d, signatures={"serving_default": serve.get_concrete_function()})
        made.append((name, d, None, "deep"))

    save_classifier("mobilenet_v2", keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None,
                                                                   classes=10, classifier_activation=None), 96)

    class Big(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.standard_normal((200, 32)).astype(np.float32))
            self.v = tf.Variable(rng.standard_normal((32,)).astype(np.float32))
            self.u = tf.Variable(rng.standard_normal((32, 5)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 200], tf.float32, name="x")])
        def f(self, x):
            return {"y": tf.matmul(tf.matmul(x, self.w) + self.v, self.u)}

    class Counter(tf.Module):
        """Writes a variable each call: the import keeps it a variable (not frozen)."""

        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.standard_normal((3,)).astype(np.float32))
            self.n = tf.Variable(0.0)

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def f(self, x):
            self.n.assign_add(1.5)
            return {"y": x * self.w + self.n.read_value()}

    counter = Counter()
    d = os.path.join(work, "stateful")
    tf.saved_model.save(counter, d, signatures=counter.f)
    made.append(("stateful", d, None, "small"))

    tf1 = tf.compat.v1
    for use_resource in (False, True):
        name = "tf1_" + ("resource" if use_resource else "ref")
        with tf.Graph().as_default() as g, tf1.Session(graph=g) as sess:
            x = tf1.placeholder(tf.float32, [None, 4], name="x")
            w = tf1.get_variable("w", initializer=rng.standard_normal((4, 3)).astype(np.float32),
                                 use_resource=use_resource)
            b = tf1.get_variable("b", initializer=rng.standard_normal((3,)).astype(np.float32),
                                 use_resource=use_resource)
            y = tf.add(tf.matmul(x, w), b, name="y")
            sess.run(tf1.global_variables_initializer())
            d = os.path.join(work, name)
            tf1.saved_model.simple_save(sess, d, {"x": x}, {"y": y})
        made.append((name, d, None, "small"))

    big = Big()
    d = os.path.join(work, "sharded")
    policy = tf.train.experimental.MaxShardSizePolicy(max_shard_size=2048)
    tf.saved_model.save(big, d, signatures=big.f,
                        options=tf.saved_model.SaveOptions(experimental_sharding_callback=policy))
    shards = [f for f in os.listdir(os.path.join(d, "variables")) if ".data-" in f]
    if len(shards) < 2:
        raise RuntimeError("the sharding policy wrote %d shard(s); the test needs several" % len(shards))
    made.append(("sharded", d, None, "small"))

    ids = keras.Input((16,), dtype="int32", name="input_ids")
    mask = keras.Input((16,), dtype="int32", name="attention_mask")
    h = keras.layers.Embedding(50, 64)(ids)
    attn_mask = keras.ops.cast(mask[:, None, :], "bool")
    for _ in range(2):
        a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=16)(h, h, attention_mask=attn_mask)
        h = keras.layers.LayerNormalization()(h + a)
        f = keras.layers.Dense(64)(keras.layers.Dense(128, activation="gelu")(h))
        h = keras.layers.LayerNormalization()(h + f)
    enc = keras.Model([ids, mask], {"pooled": keras.layers.Dense(8, activation="tanh")(h[:, 0]), "seq": h})
    serve = tf.function(lambda input_ids, attention_mask: enc([input_ids, attention_mask]),
                        input_signature=[tf.TensorSpec([None, 16], tf.int32, name="input_ids"),
                                         tf.TensorSpec([None, 16], tf.int32, name="attention_mask")])
    d = os.path.join(work, "encoder")
    tf.saved_model.save(enc, d, signatures={"serving_default": serve.get_concrete_function()})
    made.append(("encoder", d, None, "deep"))

    save_classifier("efficientnet_b0", keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None,
                                                                         classes=10, classifier_activation=None), 64)

    class Huge(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.standard_normal((6_600_000, 4)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def f(self, x):
            # max, not sum: a sum of 6.6M floats differs with the summation order
            return {"y": x * self.w[123456] + tf.reduce_max(self.w, axis=0)}

    huge = Huge()
    d = os.path.join(work, "big_variable")
    tf.saved_model.save(huge, d, signatures=huge.f)
    made.append(("big_variable", d, None, "small"))

    for name, rnn in (("lstm", keras.layers.LSTM), ("gru", keras.layers.GRU)):
        tokens = keras.Input((20,), dtype="int32", name="tokens")
        net = keras.Model(tokens, keras.layers.Dense(4)(rnn(32)(keras.layers.Embedding(100, 16)(tokens))))
        serve = tf.function(lambda tokens, net=net: {"logits": net(tokens)},
                            input_signature=[tf.TensorSpec([None, 20], tf.int32, name="tokens")])
        d = os.path.join(work, name)
        tf.saved_model.save(net, d, signatures={"serving_default": serve.get_concrete_function()})
        made.append((name, d, None, "small"))

    class Loop(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(0.3 * rng.standard_normal((8, 8)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name="x")])
        def f(self, x):
            def body(i, h):
                h = tf.tanh(tf.matmul(h, self.w) + x)
                h = tf.cond(tf.reduce_sum(h) > 0, lambda: h * 0.5, lambda: -h)
                return i + 1, h
            _, h = tf.while_loop(lambda i, h: i < 10, body, (tf.constant(0), tf.zeros_like(x)))
            return {"y": h}

    loop = Loop()
    d = os.path.join(work, "while_cond")
    tf.saved_model.save(loop, d, signatures=loop.f)
    made.append(("while_cond", d, None, "small"))

    class Nms(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([64, 4], tf.float32, name="boxes"),
                                      tf.TensorSpec([64], tf.float32, name="scores")])
        def f(self, boxes, scores):
            sel, valid = tf.image.non_max_suppression_padded(boxes, scores, 16, iou_threshold=0.5,
                                                             pad_to_max_output_size=True)
            return {"selected": sel, "valid": valid}

    nms = Nms()
    d = os.path.join(work, "nms_padded")
    tf.saved_model.save(nms, d, signatures=nms.f)
    made.append(("nms_padded", d, None, "small"))
    return made


def tf_median_ms(d, signature, xs, iters):
    """TensorFlow's median time of one call of the loaded signature on xs (ms)."""
    import time
    import numpy as np
    import tensorflow as tf
    fn = tf.saved_model.load(d).signatures[signature or "serving_default"]
    args = {k: tf.constant(v) for k, v in xs.items()}
    fn(**args)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn(**args)
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def functional_checks(kiln, name, d, outs):
    """[(what, ok, detail)] for a FUNCTIONAL model: no op-by-op fallback of a cluster
    with --jit auto, and what `kiln cluster` says about the While."""
    import json
    stats = {}
    for jit, out in outs.items():
        with open(os.path.join(out, "run.json")) as f:
            stats[jit] = json.loads(f.read().strip().splitlines()[-1])
    auto = stats["auto"]
    results = [("%s: no cluster fallback" % name, auto.get("cluster_fallback_runs") == 0,
                "cluster_runs %s, compiles %s, fallback_runs %s" % (auto.get("cluster_runs"),
                                                                  auto.get("cluster_compiles"),
                                                                  auto.get("cluster_fallback_runs")))]
    r = subprocess.run([kiln, "cluster", d], capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
    text = r.stdout
    clustered = any(line.strip().startswith("ops:") and ("tf.While" in line or "tf.StatelessWhile" in line)
                    for line in text.splitlines())
    refusal = [line for line in text.splitlines() if line.strip().startswith(("1 x While", "1 x StatelessWhile"))]
    want = FUNCTIONAL[name]
    if want == "in a cluster":
        ok, detail = r.returncode == 0 and clustered, "the While is in a cluster" if clustered else text[-300:]
    else:
        ok = r.returncode == 0 and not clustered and any(want in line for line in refusal)
        detail = (refusal or [text[-300:]])[0].strip()
    results.append(("%s: kiln cluster" % name, ok, detail))
    return results, stats


def reference(d, signature, seed):
    """Random inputs for the signature and TF's outputs: ({key: x}, {key: y})."""
    import numpy as np
    import tensorflow as tf
    loaded = tf.saved_model.load(d)
    fn = loaded.signatures[signature or "serving_default"]
    specs = fn.structured_input_signature[1]
    rng = np.random.default_rng(seed)
    xs = {}
    for key, spec in sorted(specs.items()):
        shape = [2 if s is None else s for s in spec.shape.as_list()]
        if spec.dtype.is_integer:  # token ids and attention masks
            xs[key] = rng.integers(0, 2 if "mask" in key else 50, shape).astype(spec.dtype.as_numpy_dtype)
        else:
            xs[key] = rng.standard_normal(shape).astype(spec.dtype.as_numpy_dtype)
    ys = {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in xs.items()}).items()}
    return xs, ys


def run_kiln(kiln, d, signature, xs, out, jit, extra=()):
    import numpy as np
    os.makedirs(out, exist_ok=True)
    cmd = [kiln, "run", d, "-o", out, "--jit", jit] + list(extra)
    if signature:
        cmd += ["--signature", signature]
    for k, v in xs.items():
        p = os.path.join(out, "in_%s.npy" % k)
        np.save(p, v)
        cmd += ["-i", "%s=%s" % (k, p)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
    if r.returncode != 0:
        return "kiln exit %d: %s" % (r.returncode, (r.stderr.strip().splitlines() or ["?"])[-1][:300])
    if "--json" in extra:
        with open(os.path.join(out, "run.json"), "w") as f:
            f.write(r.stdout)
    return out


def safe(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def compare(ys, out, kind):
    """(ok, worst |d|, note)."""
    import numpy as np
    worst = 0.0
    for k, ref in ys.items():
        p = os.path.join(out, safe(k) + ".npy")
        if not os.path.exists(p):
            return False, None, "no output %s" % k
        got = np.load(p)
        if got.shape != ref.shape:
            return False, None, "%s: shape %s, want %s" % (k, got.shape, ref.shape)
        d = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
        m = float(np.max(np.abs(ref))) if ref.size else 0.0
        tol = 1e-4 * max(1.0, m) if kind == "deep" else 1e-5 + 1e-5 * m
        worst = max(worst, d)
        if not d <= tol:
            return False, d, "%s: max|d| %.3g > %.3g" % (k, d, tol)
    return True, worst, ""


def bad_cases(kiln, work, module_dir):
    """[(name, ok, detail)] for damaged copies of the module."""
    results = []
    xs_path = os.path.join(work, "bad_x.npy")
    import numpy as np
    np.save(xs_path, np.ones((2, 4), np.float32))

    def run(d, extra=()):
        r = subprocess.run([kiln, "run", d, "-i", "x=" + xs_path, "-o", os.path.join(work, "bad_out")] + list(extra),
                           capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
        return r.returncode, r.stderr.strip()

    def damaged(name, how):
        d = os.path.join(work, "bad_" + name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(module_dir, d)
        shard = os.path.join(d, "variables", "variables.data-00000-of-00001")
        how(shard)
        return d, shard

    def truncate(p):
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) // 2)

    def flip(p):
        # Byte 0 belongs to a variable: keys sort "VARIABLE_VALUE" paths of "b", "w"
        # after "_CHECKPOINTABLE_OBJECT_GRAPH", but the writer puts variables first.
        with open(p, "r+b") as f:
            b = f.read(1)
            f.seek(0)
            f.write(bytes([b[0] ^ 0x40]))

    d, shard = damaged("missing", os.remove)
    rc, err = run(d)
    results.append(("missing shard", rc == 1 and os.path.basename(shard) in err and "missing" in err, err))
    d, shard = damaged("truncated", truncate)
    rc, err = run(d)
    results.append(("truncated shard", rc == 1 and os.path.basename(shard) in err and "truncated" in err, err))
    d, shard = damaged("flipped", flip)
    rc, err = run(d)
    results.append(("flipped byte", rc == 1 and "bad CRC" in err and "/.ATTRIBUTES/VARIABLE_VALUE" in err, err))
    # A lookup table: refused naming the node and the op, not crashed on.
    import tensorflow as tf

    class Table(tf.Module):
        def __init__(self):
            super().__init__()
            init = tf.lookup.KeyValueTensorInitializer(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64))
            self.t = tf.lookup.StaticHashTable(init, -1)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="s")])
        def f(self, s):
            return {"id": self.t.lookup(s)}

    table = Table()
    d = os.path.join(work, "bad_table")
    tf.saved_model.save(table, d, signatures=table.f)
    s_path = os.path.join(work, "bad_s.npy")
    np.save(s_path, np.array(["a", "c"]))
    r = subprocess.run([kiln, "run", d, "-i", "s=" + s_path, "-o", os.path.join(work, "bad_out")],
                       capture_output=True, text=True, timeout=KILN_TIMEOUT_S)
    err = r.stderr.strip()
    results.append(("lookup table", r.returncode == 1 and "HashTableV2" in err and "not supported" in err, err))
    rc, err = run(module_dir, ["--signature", "nope"])
    results.append(("unknown signature", rc == 1 and "'nope'" in err and "'other'" in err and "'serving_default'" in err,
                    err))
    return results


def api_cases(kiln, module_dir):
    """kiln_model_load(DIR) through the C API (ctypes): the signature option picks the
    SignatureDef and the model's inputs and outputs are its keys."""
    import ctypes
    lib = ctypes.CDLL(os.path.join(os.path.dirname(kiln), "libkiln.so"))
    vp = ctypes.c_void_p
    for f in ("kiln_options_create", "kiln_options_set", "kiln_model_load", "kiln_model_find_input",
              "kiln_model_find_output"):
        getattr(lib, f).restype = vp
    lib.kiln_status_message.restype = ctypes.c_char_p
    lib.kiln_status_message.argtypes = [vp]
    lib.kiln_status_free.argtypes = [vp]
    lib.kiln_model_free.argtypes = [vp]
    lib.kiln_options_free.argtypes = [vp]
    lib.kiln_model_num_outputs.argtypes = [vp]
    lib.kiln_model_format.argtypes = [vp]
    lib.kiln_options_set.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p]
    lib.kiln_model_load.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
    lib.kiln_model_find_input.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    lib.kiln_model_find_output.argtypes = lib.kiln_model_find_input.argtypes

    def load(signature):
        opts = vp()
        lib.kiln_options_create(ctypes.byref(opts))
        if signature is not None:
            lib.kiln_options_set(opts, b"signature", signature.encode())
        m = vp()
        st = lib.kiln_model_load(module_dir.encode(), opts, ctypes.byref(m))
        lib.kiln_options_free(opts)
        msg = None
        if st:
            msg = lib.kiln_status_message(st).decode()
            lib.kiln_status_free(st)
        return m, msg

    results = []
    m, msg = load("other")
    ok = msg is None and lib.kiln_model_format(m) == 6 and lib.kiln_model_num_outputs(m) == 2
    idx = ctypes.c_int()
    for name, fn in ((b"x", lib.kiln_model_find_input), (b"z", lib.kiln_model_find_input),
                     (b"s", lib.kiln_model_find_output), (b"t", lib.kiln_model_find_output)):
        if ok:
            st = fn(m, name, ctypes.byref(idx))
            ok = not st
            if st:
                lib.kiln_status_free(st)
    if m:
        lib.kiln_model_free(m)
    results.append(("api: signature other", ok, msg or "inputs x, z; outputs s, t"))
    m, msg = load(None)
    ok = msg is None and lib.kiln_model_num_outputs(m) == 1
    if m:
        lib.kiln_model_free(m)
    results.append(("api: default", ok, msg or "serving_default, one output"))
    m, msg = load("nope")
    results.append(("api: unknown signature", not m and msg is not None and "'nope'" in msg, msg or "loaded?"))
    return results


def inner(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--inner", action="store_true")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--venv")
    ap.add_argument("--work")
    ap.add_argument("-k", default="")
    args = ap.parse_args(argv)
    kiln = os.path.abspath(args.kiln)
    work = args.work or tempfile.mkdtemp(prefix="kiln_tf_savedmodels_")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    models = build_models(work)
    for i, (name, d, sig, kind) in enumerate(models):
        label = name + (":" + sig if sig else "")
        if args.k not in label:
            continue
        xs, ys = reference(d, sig, seed=100 + i)
        extra = ["--iters", str(PERF_ITERS), "--json"] if name in FUNCTIONAL else []
        outs = {}
        for jit in ("off", "auto"):
            out = run_kiln(kiln, d, sig, xs, os.path.join(work, "out_%d_%s" % (i, jit)), jit, extra)
            outs[jit] = out
            if not os.path.isdir(out):
                ok, diff, note = False, None, out
            else:
                ok, diff, note = compare(ys, out, kind)
            scale = max(float(abs(y).max()) if y.size else 0.0 for y in ys.values())
            print("%s %-28s jit %-4s %s (max|tf| %.3g)" % ("PASS" if ok else "FAIL", label, jit,
                                                         "max|d|=%.3g" % diff if ok else note, scale), flush=True)
            passed += ok
            failed += not ok
        if name in FUNCTIONAL and all(os.path.isdir(o) for o in outs.values()):
            results, stats = functional_checks(kiln, name, d, outs)
            for what, ok, detail in results:
                print("%s %-28s %s" % ("PASS" if ok else "FAIL", what, detail), flush=True)
                passed += ok
                failed += not ok
            print("perf %-28s median of %d: kiln --jit off %.3f ms, --jit auto %.3f ms, tensorflow %.3f ms"
                  % (label, PERF_ITERS, stats["off"]["median_ms"], stats["auto"]["median_ms"],
                     tf_median_ms(d, sig, xs, PERF_ITERS)), flush=True)
    if "bad" in args.k or not args.k:
        for what, ok, err in bad_cases(kiln, work, os.path.join(work, "module")):
            print("%s bad input: %-18s %s" % ("PASS" if ok else "FAIL", what, err.splitlines()[-1] if err else ""),
                  flush=True)
            passed += ok
            failed += not ok
    if "api" in args.k or not args.k:
        # In a process of its own: libkiln.so and TensorFlow's libraries in one process
        # do not agree at exit about who frees what.
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--api", kiln, os.path.join(work, "module")],
                           capture_output=True, text=True, timeout=KILN_TIMEOUT_S, env=api_env(kiln))
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("PASS", "FAIL"))]
        print("\n".join(lines), flush=True)
        ok_all = r.returncode == 0 and len(lines) == 3
        if not ok_all:
            print("FAIL api cases: exit %d %s" % (r.returncode, r.stderr.strip()[-300:]), flush=True)
        passed += sum(ln.startswith("PASS") for ln in lines)
        failed += sum(ln.startswith("FAIL") for ln in lines) + (not ok_all)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def api_env(kiln):
    """The environment of the ctypes process. A sanitizer build's libkiln.so needs its
    ASan runtime loaded first in a Python that is not instrumented (make asan): it is
    preloaded, as tests/python does, and leak checking is off (CPython keeps its objects
    to the end; kiln's own leaks are the C tests' to find)."""
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(kiln), "libkiln.so")
    r = subprocess.run(["ldd", lib], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libasan.so") and len(parts) >= 3 and parts[2].startswith("/"):
            env["LD_PRELOAD"] = parts[2]
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def api_main(kiln, module_dir):
    bad = 0
    for what, ok, detail in api_cases(kiln, module_dir):
        print("%s %-24s %s" % ("PASS" if ok else "FAIL", what, detail), flush=True)
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--api"]:
        sys.exit(api_main(sys.argv[2], sys.argv[3]))
    if "--inner" in sys.argv[1:]:
        sys.exit(inner(sys.argv[1:]))
    sys.exit(outer(sys.argv[1:]))
