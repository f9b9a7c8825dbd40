"""kiln's compile time of an HLO module, for the benchmark's JAX set: the wall time of one
kiln_model_load (libkiln's C API through ctypes) on MODULE.hlo, which parses, verifies,
runs the pass pipeline and compiles the module for the device (the cpu backend's LLVM JIT
and oneDNN primitives) -- everything before the first run. `kiln run --json` cannot say
this for HLO: it compiles at load, before its timed iterations, and reports no compile
time for HLO modules. One load per process, so kiln's in-process executable cache is
empty (kiln keeps no cache on disk).

The library is the libkiln.so beside --kiln (the build tree's; the kiln binary is built
from the same sources). Prints one JSON line: compile_ms, device (the device asked for,
"" for kiln's default).

Usage: /usr/bin/python3 bench/kiln_compile_time.py --kiln PATH MODULE.hlo [--device D]
"""

import argparse
import ctypes
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--kiln', required=True, help='the kiln binary; libkiln.so is beside it')
    ap.add_argument('--device', default='', help="kiln device (default: kiln's default)")
    ap.add_argument('module')
    args = ap.parse_args()
    lib_path = os.path.join(os.path.dirname(os.path.abspath(args.kiln)), 'libkiln.so')
    if not os.path.exists(lib_path):
        sys.exit('kiln_compile_time: %s is missing (the build tree of --kiln has no libkiln.so)' % lib_path)
    lib = ctypes.CDLL(lib_path)
    vp = ctypes.c_void_p
    lib.kiln_status_message.restype = ctypes.c_char_p
    lib.kiln_status_message.argtypes = [vp]
    lib.kiln_status_free.argtypes = [vp]
    lib.kiln_options_create.restype = vp
    lib.kiln_options_create.argtypes = [ctypes.POINTER(vp)]
    lib.kiln_options_set.restype = vp
    lib.kiln_options_set.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p]
    lib.kiln_options_free.argtypes = [vp]
    lib.kiln_model_load.restype = vp
    lib.kiln_model_load.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
    lib.kiln_model_free.argtypes = [vp]

    def check(status, what):
        if status:
            msg = lib.kiln_status_message(status).decode(errors='replace')
            lib.kiln_status_free(status)
            sys.exit('kiln_compile_time: %s: %s' % (what, msg))

    opts = vp()
    check(lib.kiln_options_create(ctypes.byref(opts)), 'kiln_options_create')
    if args.device:
        check(lib.kiln_options_set(opts, b'device', args.device.encode()), 'kiln_options_set device')
    model = vp()
    path = os.path.abspath(args.module).encode()
    t0 = time.perf_counter()
    status = lib.kiln_model_load(path, opts, ctypes.byref(model))
    compile_ms = (time.perf_counter() - t0) * 1e3
    check(status, 'kiln_model_load %s' % args.module)
    lib.kiln_model_free(model)
    lib.kiln_options_free(opts)
    print(json.dumps({'compile_ms': compile_ms, 'device': args.device}))


if __name__ == '__main__':
    main()
