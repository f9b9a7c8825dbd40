#!/usr/bin/env python3
"""classify: runs an image classifier with kiln from Python and prints the top classes
(the Python twin of examples/c/classify.c: same preprocessing, same output).

    python3 classify.py MODEL IMAGE [-k K] [--device NAME]

MODEL is anything kiln loads (ONNX, TensorFlow GraphDef, TF.js model.json) that takes
one float32 image batch, NCHW or NHWC (the dimension that is 3 decides), and gives class
scores. IMAGE is a binary PPM (P6) or an 8-bit PNG, read with numpy and zlib only;
it is resized (nearest neighbour) to the model's input size and normalised with the
ImageNet mean and standard deviation. Prints K (default 5) lines "CLASS_INDEX SCORE",
best first; the scores are probabilities (softmax applied unless the model already
outputs a distribution).
"""

import argparse
import struct
import sys
import zlib

import numpy as np

import kiln

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def read_ppm(path):
    """A binary PPM (P6, maxval <= 255) as an HxWx3 uint8 array."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"P6":
        raise ValueError("%s: not a binary PPM (P6)" % path)
    fields, pos = [], 2
    while len(fields) < 3:  # width, height, maxval; whitespace and # comments between
        while pos < len(data) and (data[pos:pos + 1].isspace() or data[pos:pos + 1] == b"#"):
            if data[pos:pos + 1] == b"#":
                pos = data.index(b"\n", pos)
            pos += 1
        end = pos
        while end < len(data) and data[end:end + 1].isdigit():
            end += 1
        if end == pos:
            raise ValueError("%s: bad PPM header" % path)
        fields.append(int(data[pos:end]))
        pos = end
    w, h, maxval = fields
    if not (0 < maxval <= 255):
        raise ValueError("%s: PPM maxval %d is not 8-bit" % (path, maxval))
    pixels = np.frombuffer(data, np.uint8, count=w * h * 3, offset=pos + 1)  # one whitespace byte
    return pixels.reshape(h, w, 3)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def read_png(path):
    """An 8-bit, non-interlaced PNG (gray, RGB, palette, with or without alpha) as an
    HxWx3 uint8 array (alpha dropped)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s: not a PNG" % path)
    pos, idat, palette, header = 8, [], None, None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if depth != 8 or interlace or channels is None:
        raise ValueError("%s: only 8-bit non-interlaced PNGs are read (depth %d, color type %d, interlace %d)"
                         % (path, depth, color, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    rows = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if kind == 0:  # None
            cur = line
        elif kind == 2:  # Up
            cur = (line + prev) & 0xFF
        elif kind in (1, 3, 4):  # Sub, Average, Paeth: each byte needs the one to its left
            cur = line.copy()
            for i in range(stride):
                left = cur[i - channels] if i >= channels else 0
                if kind == 1:
                    cur[i] = (line[i] + left) & 0xFF
                elif kind == 3:
                    cur[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
                else:
                    upleft = prev[i - channels] if i >= channels else 0
                    cur[i] = (line[i] + _paeth(left, prev[i], upleft)) & 0xFF
        else:
            raise ValueError("%s: bad PNG filter type %d in row %d" % (path, kind, y))
        rows[y] = cur
        prev = cur
    img = rows.reshape(h, w, channels)
    if color == 3:
        return palette[img[..., 0]]
    if color in (0, 4):
        return np.repeat(img[..., :1], 3, axis=2)
    return img[..., :3]


def read_image(path):
    with open(path, "rb") as f:
        magic = f.read(8)
    return read_png(path) if magic.startswith(b"\x89PNG") else read_ppm(path)


def preprocess(rgb, info):
    """The batch-1 float32 input for a model input (a kiln.TensorInfo): nearest-
    neighbour resize to its spatial size (224 where dynamic), (x / 255 - mean) / std,
    in NCHW or NHWC order."""
    shape = info.shape
    if shape is None or len(shape) != 4 or info.dtype != np.float32:
        raise ValueError("expected one float32 input of rank 4, the model takes %r" % (info,))
    nchw = shape[1] == 3
    if not nchw and shape[3] != 3:
        raise ValueError("input %s has no dimension of 3 channels at 1 or 3" % info.name)
    dims = [d if d is not None else (1 if i == 0 else 224) for i, d in enumerate(shape)]
    oh, ow = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
    ih, iw = rgb.shape[:2]
    sy = (2 * np.arange(oh) + 1) * ih // (2 * oh)  # the source pixel whose centre is nearest
    sx = (2 * np.arange(ow) + 1) * iw // (2 * ow)
    x = (rgb[sy][:, sx].astype(np.float32) / np.float32(255) - MEAN) / STD
    x = x.transpose(2, 0, 1) if nchw else x
    return np.ascontiguousarray(x[None], np.float32)


def probabilities(scores):
    scores = np.asarray(scores, np.float64).ravel()
    if scores.size and (scores >= 0).all() and (scores <= 1).all() and abs(scores.sum() - 1) <= 1e-3:
        return scores
    e = np.exp(scores - scores.max())
    return e / e.sum()


def top_k(p, k):
    """(index, probability) of the k largest, best first (ties: lower index first)."""
    order = np.argsort(-p, kind="stable")[:k]
    return [(int(i), float(p[i])) for i in order]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("image")
    ap.add_argument("-k", type=int, default=5, help="how many classes to print (5)")
    ap.add_argument("--device", help="a kiln.devices() name (default: kiln's choice)")
    args = ap.parse_args(argv)
    model = kiln.Model(args.model, device=args.device)
    x = preprocess(read_image(args.image), model.inputs[0])
    first = model.outputs[0].name
    scores = model.run({model.inputs[0].name: x}, [first])[first]
    for index, p in top_k(probabilities(scores), args.k):
        print("%d %.6f" % (index, p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
