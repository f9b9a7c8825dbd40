"""The benchmark's TF SavedModel set: builds one model with random weights (fixed seeds,
nothing downloaded) in TensorFlow 2.21's venv, saves it with tf.saved_model.save and an
explicit serving_default signature at batch 1, and writes beside it the seeded inputs
and TensorFlow's own outputs for them (the reference kiln's outputs are checked
against). Run as its own process by bench/bench.py.

Models (NAME):
  mobilenetv2_tf, resnet50_tf, efficientnetb0_tf
      keras.applications MobileNetV2 / ResNet50 / EfficientNetB0, weights=None,
      224x224x3, 1000 logits (classifier_activation=None). Batch-norm moving statistics
      are set from one training-mode call on 4 seeded images with momentum 0 (as
      tests/models/test_tf_savedmodels.py does for its MobileNetV2): freshly
      initialised statistics leave the deep activations ~1e-10 and the logits all but
      equal. Input x: [1, 224, 224, 3] float32, standard normal.
  bert_tf
      a BERT-like encoder in Keras 3: token + position embeddings (vocab 8000, d 256),
      4 post-norm layers of MultiHeadAttention (4 heads, key dim 64, the padding mask
      as attention_mask) + a GELU feed-forward of 1024, LayerNorm; output the last
      hidden state [1, 128, 256]. Inputs input_ids [1, 128] int32 (seeded ids) and
      attention_mask [1, 128] int32 (the last 28 positions are padding).
  lstm_tf
      a Keras text classifier: Embedding(20000, 128) -> LSTM(256) -> Dense(2 logits)
      over 100 token ids; input ids [1, 100] int32.
  nms_tf
      an SSD-style detector head: 1917 anchors x 91 classes; box deltas decoded against
      fixed anchors (tf.exp / center-size arithmetic), sigmoid class scores, each box's
      best class, then tf.image.non_max_suppression_padded (100 boxes, IoU 0.5, score
      threshold 0.3) and the selected boxes, scores and classes gathered. Inputs
      box_deltas [1, 1917, 4] and class_logits [1, 1917, 91] float32, standard normal.

Writes OUT_DIR/saved_model/, OUT_DIR/in_KEY.npy per signature input, OUT_DIR/ref_KEY.npy
per signature output (TensorFlow's outputs from the reloaded SavedModel) and, last,
OUT_DIR/meta.json ({"inputs": {key: file}, "refs": {key: file}, "tf": version}).

The packages are tests/models/test_tf_savedmodels.py's PINS, in its venv: --venv DIR,
else build-venvs/tf-venv (the one `ctest -R tf_` uses); this script re-runs itself
inside it.

Usage: /usr/bin/python3 bench/tf_models.py --kiln KILN [--venv DIR] NAME OUT_DIR
"""

import argparse
import json
import os
import shutil
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
# The pins of tests/models/test_tf_savedmodels.py and test_tf_frozen_graphs.py: one venv.
PINS = ["tensorflow-cpu==2.21.0", "numpy==2.4.6", "keras==3.15.1", "ml_dtypes==0.6.0"]
VENV_NAME = 'tf-venv'
NAMES = ('mobilenetv2_tf', 'resnet50_tf', 'efficientnetb0_tf', 'bert_tf', 'lstm_tf', 'nms_tf')
SEED = 0


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--inner', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--kiln', required=True, help='the kiln binary (its directory holds the venv)')
    ap.add_argument('--venv', help='the venv of PINS (default: build-venvs/tf-venv)')
    ap.add_argument('name', choices=NAMES)
    ap.add_argument('out_dir')
    return ap.parse_args(argv)


def calibrate_bn(keras, net, x):
    """Moving statistics of every BatchNormalization from one training-mode call."""
    for layer in net.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.0
    net(x, training=True)


def build(name, rng):
    """(trackable to save, tf.function signature, {key: input array})."""
    import numpy as np
    import tensorflow as tf
    import keras
    keras.utils.set_random_seed(SEED)
    tf.random.set_seed(SEED)

    if name in ('mobilenetv2_tf', 'resnet50_tf', 'efficientnetb0_tf'):
        ctor = {'mobilenetv2_tf': keras.applications.MobileNetV2, 'resnet50_tf': keras.applications.ResNet50,
                'efficientnetb0_tf': keras.applications.EfficientNetB0}[name]
        net = ctor(input_shape=(224, 224, 3), weights=None, classes=1000, classifier_activation=None)
        calibrate_bn(keras, net, rng.standard_normal((4, 224, 224, 3)).astype(np.float32))
        fn = tf.function(lambda x: {'logits': net(x, training=False)},
                         input_signature=[tf.TensorSpec([1, 224, 224, 3], tf.float32, name='x')])
        return net, fn, {'x': rng.standard_normal((1, 224, 224, 3)).astype(np.float32)}

    if name == 'bert_tf':
        vocab, seq, d, heads, ff, n_layers = 8000, 128, 256, 4, 1024, 4
        ids = keras.Input((seq,), dtype='int32', name='input_ids')
        mask = keras.Input((seq,), dtype='int32', name='attention_mask')

        class AddPositions(keras.layers.Layer):
            def build(self, shape):
                self.table = self.add_weight(shape=(shape[1], shape[2]), initializer='random_normal')

            def call(self, x):
                return x + self.table[None]

        h = AddPositions()(keras.layers.Embedding(vocab, d)(ids))
        h = keras.layers.LayerNormalization(epsilon=1e-12)(h)
        att_mask = keras.ops.cast(mask[:, None, :], 'bool')  # [B, 1(query), seq(key)]
        for _ in range(n_layers):
            a = keras.layers.MultiHeadAttention(heads, d // heads)(h, h, attention_mask=att_mask)
            h = keras.layers.LayerNormalization(epsilon=1e-12)(h + a)
            f = keras.layers.Dense(ff, activation='gelu')(h)
            f = keras.layers.Dense(d)(f)
            h = keras.layers.LayerNormalization(epsilon=1e-12)(h + f)
        net = keras.Model([ids, mask], h)
        fn = tf.function(lambda input_ids, attention_mask: {'hidden': net([input_ids, attention_mask],
                                                                          training=False)},
                         input_signature=[tf.TensorSpec([1, seq], tf.int32, name='input_ids'),
                                          tf.TensorSpec([1, seq], tf.int32, name='attention_mask')])
        m = np.ones((1, seq), np.int32)
        m[:, 100:] = 0
        return net, fn, {'input_ids': rng.integers(0, vocab, (1, seq)).astype(np.int32), 'attention_mask': m}

    if name == 'lstm_tf':
        net = keras.Sequential([keras.Input((100,), dtype='int32'), keras.layers.Embedding(20000, 128),
                                keras.layers.LSTM(256), keras.layers.Dense(2)])
        fn = tf.function(lambda ids: {'logits': net(ids, training=False)},
                         input_signature=[tf.TensorSpec([1, 100], tf.int32, name='ids')])
        return net, fn, {'ids': rng.integers(0, 20000, (1, 100)).astype(np.int32)}

    if name == 'nms_tf':
        n, classes = 1917, 91
        centers = rng.uniform(0.05, 0.95, (n, 2)).astype(np.float32)
        sizes = rng.uniform(0.05, 0.4, (n, 2)).astype(np.float32)

        class Head(tf.Module):
            def __init__(self):
                super().__init__()
                self.anchors = tf.Variable(np.concatenate([centers, sizes], 1), trainable=False)

            @tf.function(input_signature=[tf.TensorSpec([1, n, 4], tf.float32, name='box_deltas'),
                                          tf.TensorSpec([1, n, classes], tf.float32, name='class_logits')])
            def detect(self, box_deltas, class_logits):
                d = box_deltas[0]
                a = self.anchors
                cyx = a[:, :2] + d[:, :2] * 0.1 * a[:, 2:]
                hw = a[:, 2:] * tf.exp(d[:, 2:] * 0.2)
                boxes = tf.concat([cyx - 0.5 * hw, cyx + 0.5 * hw], axis=1)
                probs = tf.sigmoid(class_logits[0])
                scores = tf.reduce_max(probs, axis=1)
                labels = tf.argmax(probs, axis=1, output_type=tf.int32)
                sel, valid = tf.image.non_max_suppression_padded(boxes, scores, 100, iou_threshold=0.5,
                                                                 score_threshold=0.3, pad_to_max_output_size=True)
                return {'boxes': tf.gather(boxes, sel), 'scores': tf.gather(scores, sel),
                        'classes': tf.gather(labels, sel), 'num_detections': valid}

        head = Head()
        return head, head.detect, {'box_deltas': rng.standard_normal((1, n, 4)).astype(np.float32),
                                   'class_logits': rng.standard_normal((1, n, classes)).astype(np.float32)}
    raise ValueError(name)


def inner(argv):
    args = parse(argv)
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import numpy as np
    import tensorflow as tf
    rng = np.random.default_rng(SEED)
    os.makedirs(args.out_dir, exist_ok=True)
    meta_path = os.path.join(args.out_dir, 'meta.json')
    if os.path.exists(meta_path):
        os.remove(meta_path)
    obj, fn, xs = build(args.name, rng)
    sm = os.path.join(args.out_dir, 'saved_model')
    shutil.rmtree(sm, ignore_errors=True)
    tf.saved_model.save(obj, sm, signatures={'serving_default': fn.get_concrete_function()})
    # The reference: the reloaded SavedModel's signature, as the TensorFlow peer runs it.
    sig = tf.saved_model.load(sm).signatures['serving_default']
    ys = sig(**{k: tf.constant(v) for k, v in xs.items()})
    meta = {'inputs': {}, 'refs': {}, 'tf': tf.__version__}
    for k, v in xs.items():
        np.save(os.path.join(args.out_dir, 'in_%s.npy' % k), v)
        meta['inputs'][k] = 'in_%s.npy' % k
    for k, v in ys.items():
        np.save(os.path.join(args.out_dir, 'ref_%s.npy' % k), v.numpy())
        meta['refs'][k] = 'ref_%s.npy' % k
    with open(meta_path + '.partial', 'w') as f:
        json.dump(meta, f, indent=1)
    os.replace(meta_path + '.partial', meta_path)  # written last: the cache is complete
    return 0


def main(argv):
    if '--inner' in argv:
        return inner(argv)
    parse(argv)  # usage errors here, before any venv is made
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'python'))
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    return run_tests.rerun_in_venv(__file__, argv, PINS, VENV_NAME, 'bench-tf-models')


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
