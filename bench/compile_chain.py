#!/usr/bin/python3
"""Write a JAX-like HLO module that is one long chain of N elementwise instructions.

Issue #15 measures compile time against module size with such chains (2,000 to 16,000
instructions); this is the generator so the series can be rerun: the ops cycle through
add / multiply / tanh / subtract / exponential-of-a-bounded-value so values stay finite,
and two parameters feed the chain every few steps so nothing folds away.

usage: compile_chain.py N OUT.hlo [--len L] [--npy DIR]
  L: elements per f32 vector (default 1024); --npy writes the inputs DIR/a.npy, DIR/b.npy.
Then: /usr/bin/time build/kiln run OUT.hlo -i p0=DIR/a.npy -i p1=DIR/b.npy -o OUTDIR"""
import struct
import sys


def write_npy(path, n, scale):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % n, *[scale * ((i % 17) - 8) / 8.0 for i in range(n)]))


def chain(n, length):
    t = "f32[%d]{0}" % length
    lines = ["HloModule jit_chain_%d, entry_computation_layout={(%s, %s)->%s}" % (n, t, t, t), ""]
    body = ["  %%Arg_0.1 = %s parameter(0)" % t, "  %%Arg_1.2 = %s parameter(1)" % t]
    prev = "%Arg_0.1"
    nid = 3
    for i in range(n):
        k = i % 5
        name = None
        if k == 0:
            name = "%%add.%d" % nid
            body.append("  %s = %s add(%s %s, %s %%Arg_1.2)" % (name, t, t, prev, t))
        elif k == 1:
            name = "%%multiply.%d" % nid
            body.append("  %s = %s multiply(%s %s, %s %%Arg_1.2)" % (name, t, t, prev, t))
        elif k == 2:
            name = "%%tanh.%d" % nid
            body.append("  %s = %s tanh(%s %s)" % (name, t, t, prev))
        elif k == 3:
            name = "%%subtract.%d" % nid
            body.append("  %s = %s subtract(%s %s, %s %%Arg_0.1)" % (name, t, t, prev, t))
        else:
            # exp of tanh-bounded value stays finite; keep the chain one instruction per step
            name = "%%exponential.%d" % nid
            body.append("  %s = %s exponential(%s %s)" % (name, t, t, prev))
        prev = name
        nid += 1
    body[-1] = body[-1].replace("  %", "  ROOT %", 1)
    lines.append("ENTRY %%main.%d (Arg_0.1: %s, Arg_1.2: %s) -> %s {" % (nid, t, t, t))
    lines += body
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    n = int(argv[1])
    length = 1024
    npy_dir = None
    i = 3
    while i < len(argv):
        if argv[i] == "--len":
            length = int(argv[i + 1]); i += 2
        elif argv[i] == "--npy":
            npy_dir = argv[i + 1]; i += 2
        else:
            sys.stderr.write("unknown argument %s\n" % argv[i]); return 2
    with open(argv[2], "w") as f:
        f.write(chain(n, length))
    if npy_dir:
        write_npy(npy_dir + "/a.npy", length, 0.5)
        write_npy(npy_dir + "/b.npy", length, 0.25)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
