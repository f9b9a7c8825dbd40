"""The benchmark's PyTorch models and their ONNX export, run as a separate process by
bench/bench.py so that torch (and its thread pool) never lives in the process that
times the others.

The networks are built exactly as the model tests build them
(tests/models/test_torchvision_models.py: build_model, calibrate -- seeded random
weights, no pretrained download, BatchNorm statistics measured so the outputs are not
degenerate), which keeps the benchmark and the correctness tests on the same graphs:
  resnet50, mobilenet_v2, mobilenet_v3_small, efficientnet_b0, vit_b_16  (Nx3x224x224)
  transformer_encoder: nn.TransformerEncoder, 4 layers, d_model 768, 12 heads, ffn 3072,
      batch_first, input 1x128x768
  mlp: Linear 512->2048, ReLU, Linear 2048->2048, ReLU, Linear 2048->512 (an
      nn.Sequential, so torch.load needs no class of ours), input 64x512
Each export is static-shaped at the batch asked for (opset 17, constant folding on) so
that every runtime sees fixed shapes. Besides model.onnx the export directory holds
module.pt (torch.save of the nn.Module itself, which bench/peers/torch_bench.py loads:
the PyTorch peer runs the very module the ONNX came from) and x.npy (the seeded input).

Usage: /usr/bin/python3 bench/models.py export NAME BATCH OUT_DIR
"""

import os
import sys
import warnings

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'models'))
import test_torchvision_models as tv_tests  # noqa: E402

OPSET = 17
INPUT_SEED = tv_tests.SEED
MLP_WIDTHS = (512, 2048, 2048, 512)
IMAGE_MODELS = ('resnet50', 'mobilenet_v2', 'mobilenet_v3_small', 'efficientnet_b0', 'vit_b_16')
NAMES = IMAGE_MODELS + ('transformer_encoder', 'mlp')


def build(name):
    """(eval-mode nn.Module, example input shape at batch 1), seeded."""
    if name == 'mlp':
        torch.manual_seed(tv_tests.SEED)
        layers = []
        for i in range(len(MLP_WIDTHS) - 1):
            if i:
                layers.append(torch.nn.ReLU())
            layers.append(torch.nn.Linear(MLP_WIDTHS[i], MLP_WIDTHS[i + 1]))
        return tv_tests.calibrate(torch.nn.Sequential(*layers)), (1, MLP_WIDTHS[0])
    if name not in NAMES:
        raise ValueError('unknown model %r (known: %s)' % (name, ', '.join(NAMES)))
    return tv_tests.build_model(name, full=True)


def export(name, batch, out_dir):
    module, shape = build(name)
    shape = (batch,) + tuple(shape[1:])
    x = np.random.default_rng(INPUT_SEED).standard_normal(shape).astype(np.float32)
    os.makedirs(out_dir, exist_ok=True)
    # Written under temporary names and renamed last, so an interrupted export never
    # leaves a directory that looks complete to bench.py's cache check.
    tmp = {f: os.path.join(out_dir, f + '.partial') for f in ('model.onnx', 'module.pt', 'x.npy')}
    # Not under torch.no_grad(): with autograd off, an eval-mode TransformerEncoderLayer
    # takes its fused fast path, which torch 1.13 cannot export.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(module, (torch.from_numpy(x),), tmp['model.onnx'], opset_version=OPSET,
                          input_names=['x'], output_names=['y'], do_constant_folding=True)
    torch.save(module, tmp['module.pt'])
    with open(tmp['x.npy'], 'wb') as f:
        np.save(f, x)
    for final, partial in tmp.items():
        os.replace(partial, os.path.join(out_dir, final))


def main(argv):
    if len(argv) != 4 or argv[0] != 'export':
        print('usage: models.py export NAME BATCH OUT_DIR', file=sys.stderr)
        return 2
    torch.set_num_threads(2)
    export(argv[1], int(argv[2]), argv[3])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
