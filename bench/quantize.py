"""The benchmark's int8 models: quantizes one fp32 export of bench/models.py with ONNX
Runtime's quantizer, run as its own process by bench/bench.py.

The recipe is tests/models/test_quantized_models.py's quantize(), so the benchmark's
int8 files are the ones the correctness test checks (at the benchmark's batch):
quant_pre_process (ONNX shape inference + ORT's basic optimisations), then
quantize_static in QDQ format, per-channel QInt8 weights, QUInt8 activations, MinMax
calibration on the test's N_CALIB seeded standard-normal images (fed in batches of the
export's static batch size; MinMax over the same images gives the same ranges at any
batch). Writes OUT_DIR/model.onnx and copies the export's x.npy beside it (the
benchmark feeds the int8 model the fp32 model's input).

onnx and onnxruntime come from the test's pinned venv (test_quantized_models.PINS,
made on first use from PyPI by tests/python/run_tests.py's rerun_in_venv): --venv DIR,
else build-venvs/quant-venv -- the same one `ctest -R quantized` uses. This script
re-runs itself inside it.

Usage: /usr/bin/python3 bench/quantize.py --kiln KILN [--venv DIR] NET FP32_DIR OUT_DIR
"""

import argparse
import os
import shutil
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'models'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'python'))
import test_quantized_models as quant_tests  # noqa: E402  (quantize(), PINS, VENV_NAME)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--inner', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--kiln', required=True, help='the kiln binary (its directory holds the venv)')
    ap.add_argument('--venv', help='the venv of test_quantized_models.PINS')
    ap.add_argument('net', help='the fp32 network (bench/models.py name): resnet50, mobilenet_v2, ...')
    ap.add_argument('fp32_dir', help="bench/models.py's export directory (model.onnx, x.npy)")
    ap.add_argument('out_dir')
    return ap.parse_args(argv)


def inner(argv):
    args = parse(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    # Written under temporary names and renamed last, like bench/models.py's exports.
    partial = os.path.join(args.out_dir, 'model.onnx.partial')
    quant_tests.quantize('qdq', os.path.join(args.fp32_dir, 'model.onnx'), partial, args.net, tmp_dir=args.out_dir)
    shutil.copyfile(os.path.join(args.fp32_dir, 'x.npy'), os.path.join(args.out_dir, 'x.npy.partial'))
    os.replace(os.path.join(args.out_dir, 'x.npy.partial'), os.path.join(args.out_dir, 'x.npy'))
    os.replace(partial, os.path.join(args.out_dir, 'model.onnx'))
    return 0


def main(argv):
    if '--inner' in argv:
        return inner(argv)
    parse(argv)  # usage errors here, before any venv is made
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    return run_tests.rerun_in_venv(__file__, argv, quant_tests.PINS, quant_tests.VENV_NAME, 'bench-quantize')


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
