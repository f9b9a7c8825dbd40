"""kiln for Python: load a model (ONNX, TensorFlow GraphDef, TF.js graph model, XLA HLO
text), look at its inputs and outputs, run it on numpy arrays.

    import numpy as np, kiln
    model = kiln.Model("model.onnx")                  # device=, jit=, threads=, **options
    print(model.inputs)                               # [TensorInfo(name='x', dtype=float32, shape=(None, 3, 224, 224))]
    out = model.run({"x": np.zeros((1, 3, 224, 224), np.float32)})   # {output name: numpy array}

    f = kiln.compile_hlo(jax.jit(fn).lower(*args).as_text(dialect="hlo"))
    y = f(*args)                                      # the outputs (a tuple when there are several)

A thin layer over kiln's C API (include/kiln/kiln.h, libkiln.so) in the extension
kiln._kiln: inputs are read in place through the buffer protocol (numpy arrays and
anything exporting a C-contiguous buffer; __dlpack__ objects through numpy.from_dlpack;
lists and scalars through numpy.asarray), outputs are numpy arrays over kiln's own
memory (no copy), and the GIL is released while a model loads or runs, so threads run
one model concurrently. Errors are kiln.Error subclasses carrying kiln's message.
"""

import enum
import functools
import os

import numpy as np

from . import _kiln
from ._kiln import (Error, InternalError, InvalidArgumentError, KilnIOError, NotFoundError, OutOfRangeError,
                    ResourceExhaustedError, UnimplementedError)

__all__ = [
    "Model", "HloFunction", "TensorInfo", "Device", "LogLevel", "compile_hlo", "devices", "option_keys", "version",
    "version_info", "Error", "InvalidArgumentError", "NotFoundError", "UnimplementedError", "OutOfRangeError",
    "ResourceExhaustedError", "InternalError", "KilnIOError",
]

#: The version of the libkiln that is loaded ("0.2.0"), which may be newer than the
#: header this module was built with.
version = _kiln.version
#: (major, minor, patch) of the loaded libkiln.
version_info = (_kiln.version_number // 10000, _kiln.version_number // 100 % 100, _kiln.version_number % 100)
__version__ = version

# kiln_dtype code -> numpy dtype. The types numpy lacks (bfloat16, the float8 and
# float4 variants, int4, uint4, int2, uint2) are their names (ml_dtypes' spelling) in TensorInfo,
# and arrays of ml_dtypes' dtypes in runs when ml_dtypes is importable (JAX and
# TensorFlow bring it); text is numpy's object dtype (each element a str, as ONNX
# Runtime gives it).
_DTYPE_NAMES = {code: name for code, (name, _) in _kiln.dtype_info().items()}
_CODE_OF_NAME = {name: code for code, name in _DTYPE_NAMES.items()}
_BF16 = _CODE_OF_NAME["bfloat16"]
_STRING = _CODE_OF_NAME["string"]
# One byte each in kiln (kiln.h); int4 and int2 are signed.
_NARROW = {_CODE_OF_NAME[n]: np.dtype(np.int8 if n in ("int4", "int2") else np.uint8)
           for n in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                     "float4_e2m1fn", "int4", "uint4", "int2", "uint2")}
# ml_dtypes keeps a sub-byte integer's low bits, kiln its value (kiln.h): the bits' mask
# and, for the signed ones, the sign bit.
_SUBBYTE = {"int4": (0xF, 8), "uint4": (0xF, 0), "int2": (0x3, 2), "uint2": (0x3, 0)}


@functools.lru_cache(maxsize=None)
def _ml_dtype(name):
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(getattr(ml_dtypes, name))


def _np_of_code(code, name):
    if code == _STRING:
        return np.dtype(object)
    if code == _BF16 or code in _NARROW:
        return name
    return np.dtype(name)


_NP_OF_CODE = {code: _np_of_code(code, name) for code, name in _DTYPE_NAMES.items()}
# numpy dtype -> code (text and the ml_dtypes types are handled apart).
_CODE_OF_NP = {dt: code for code, dt in _NP_OF_CODE.items() if isinstance(dt, np.dtype) and code != _STRING}

_FORMATS = {"auto": 0, "onnx": 1, "graphdef": 2, "tfjs": 3, "hlo": 4, "graph": 5, "savedmodel": 6}


class LogLevel(enum.IntEnum):
    """Severity of a kiln log message (kiln_log_level)."""
    INFO = 0
    WARNING = 1
    ERROR = 2


class TensorInfo:
    """A model input or output: name, dtype (a numpy dtype -- object for text --, the
    name of a type numpy lacks: "bfloat16", "float8_e4m3fn", "int4", ..., or None when
    kiln does not know it), shape (a tuple with None for dynamic dimensions, or None
    when even the rank is unknown) and kind: "tensor", or for ONNX inputs "sequence"
    (fed as a list of arrays, returned as a list), "optional" (None when empty) or
    "map" (a dict); dtype is then the innermost element type. Outputs say "tensor"
    until a run shows what they are."""

    __slots__ = ("name", "dtype", "shape", "kind")

    def __init__(self, name, dtype, shape, kind="tensor"):
        self.name, self.dtype, self.shape, self.kind = name, dtype, shape, kind

    @property
    def type(self):
        """ONNX Runtime's spelling of the type: "tensor(float)", "seq(tensor(int64))", ..."""
        if self.dtype is None:
            inner = "tensor(unknown)"
        else:
            name = str(self.dtype)
            inner = "tensor(%s)" % _ORT_TYPE_NAMES.get(name, name)
        return {"sequence": "seq(%s)", "optional": "optional(%s)"}.get(self.kind, "%s") % inner

    def __eq__(self, other):
        return isinstance(other, TensorInfo) and ((self.name, self.dtype, self.shape, self.kind) ==
                                                  (other.name, other.dtype, other.shape, other.kind))

    def __hash__(self):
        return hash((self.name, str(self.dtype), self.shape, self.kind))

    def __repr__(self):
        kind = "" if self.kind == "tensor" else ", kind=%r" % self.kind
        return "TensorInfo(name=%r, dtype=%s, shape=%r%s)" % (self.name, self.dtype, self.shape, kind)


_ORT_TYPE_NAMES = {"float32": "float", "float64": "double", "complex64": "complex64", "complex128": "complex128",
                   "object": "string"}


class Device:
    """One registered device (kiln_device_info)."""

    __slots__ = ("name", "priority", "description", "available", "reason", "source")

    def __init__(self, name, priority, description, available, reason, source):
        self.name, self.priority, self.description = name, priority, description
        self.available, self.reason, self.source = available, reason, source

    def __getitem__(self, key):  # dict-style access too: d["name"]
        if key not in self.__slots__:
            raise KeyError(key)
        return getattr(self, key)

    def __repr__(self):
        return "Device(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__)


def _info(raw):
    return [TensorInfo(name, _NP_OF_CODE.get(code), shape, kind) for name, code, shape, kind in raw]


def _option_text(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)) and key not in ("plugin", "plugin_option"):
        return ",".join(str(v) for v in value)
    return str(value)


def _options(device, jit, threads, options):
    pairs = []
    if device is not None:
        pairs.append(("device", str(device)))
    if jit is not None:
        pairs.append(("jit", _option_text("jit", jit)))
    if threads is not None:
        pairs.append(("threads", str(threads)))
    for key, value in options.items():
        if value is None:
            continue
        # plugin and plugin_option add one entry each time they are set.
        values = value if key in ("plugin", "plugin_option") and isinstance(value, (list, tuple)) else [value]
        pairs.extend((key, _option_text(key, v)) for v in values)
    return pairs


def _log_adapter(log):
    if log is None:
        return None
    if not callable(log):
        raise TypeError("log must be a callable(level, message), not %s" % type(log).__name__)
    return lambda level, message: log(LogLevel(level), message)


class Model:
    """A loaded kiln model.

    Model(path_or_bytes, device=None, jit="auto", threads=None, *, format=None, log=None, **options)

    path_or_bytes: a file path (str or os.PathLike: .onnx, .pb, a TF SavedModel
    directory, TF.js model.json, .hlo, .graph) or the model's bytes (bytes, bytearray, memoryview; a TF.js model needs its
    file). device: a kiln.devices() name (default: each node on the best device that
    supports it; HLO on cpu). jit: "auto" (cluster and compile just in time) or "off"
    (op by op). threads: cpu worker threads (0 or None: all cores). format: "auto",
    "onnx", "graphdef", "savedmodel", "tfjs", "hlo" or "graph" (signature="NAME" picks
    a SavedModel's SignatureDef). log: a callable(level, message) that
    receives this model's log messages instead of stderr (level is a kiln.LogLevel; set
    log_level="info" for progress messages). Every other keyword is a kiln option
    (kiln.option_keys() lists them): its value is passed as text, bools as
    "true"/"false", lists joined by "," (plugin and plugin_option: one entry each).
    """

    def __init__(self, path_or_bytes, device=None, jit="auto", threads=None, *, format=None, log=None, **options):
        if format is not None:
            options["format"] = format
        pairs = _options(device, jit, threads, options)
        fmt = _FORMATS.get(str(format).lower(), 0) if format is not None else 0
        if isinstance(path_or_bytes, (str, os.PathLike)):
            source, is_path = os.fsencode(path_or_bytes), True
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            source, is_path = path_or_bytes, False
        else:
            raise TypeError("Model() takes a path (str or os.PathLike) or the model's bytes, not %s"
                            % type(path_or_bytes).__name__)
        self._log = _log_adapter(log)
        self._m = _kiln.load(source, is_path, fmt, pairs, self._log)
        self._inputs = _info(self._m.inputs())
        self._outputs = _info(self._m.outputs())
        self._format = self._m.format()[1]

    @property
    def inputs(self):
        """The inputs the model takes, in order (a list of TensorInfo)."""
        return list(self._inputs)

    @property
    def outputs(self):
        """The outputs the model gives, in order (a list of TensorInfo)."""
        return list(self._outputs)

    @property
    def format(self):
        """What was loaded: "ONNX", "TensorFlow GraphDef", "TF.js graph model", "HLO text" or "kiln graph"."""
        return self._format

    def stats(self):
        """Counters over the model's life (kiln_model_get_stats) as a dict: runs, nodes,
        clusters, cluster_runs, cluster_compiles, cluster_cache_hits,
        cluster_fallback_runs, cluster_compile_ms, op_compiles, op_cache_hits, device, jit,
        evaluated_instructions (instructions run through kiln's reference evaluator instead
        of compiled code; 0 when everything placed on the device was compiled),
        bytes_to_device and bytes_to_host (bytes copied to and from devices with memory of
        their own, such as the opencl plugin; 0 on cpu)."""
        return self._m.stats()

    def run(self, feeds, outputs=None, *, threads=None):
        """Runs the model once and returns {output name: numpy array}.

        feeds: {input name: array}; an array is anything with the buffer protocol
        (C-contiguous) or __dlpack__, or a list/scalar (converted to the input's dtype).
        ONNX sequence inputs take a list of arrays, optional inputs None (empty) or
        what they hold, map inputs a dict; such outputs come back as a list, None or
        the value held, and a dict ({label: score} per row for ZipMap).
        Every input must be fed with the declared dtype and a shape that fits; kiln's
        errors name the input. outputs: the output names to compute, in order (None: all).
        threads: cpu worker threads for this run (None: the model's setting). The GIL is
        released while kiln runs; one model may run in many threads at once."""
        return self._m.run(feeds, outputs, threads or 0)

    def run_ort(self, output_names, input_feed, run_options=None):
        """ONNX Runtime's InferenceSession.run(output_names, input_feed): returns the
        outputs as a list in the order of output_names (None or []: all, in model order).
        run_options is accepted for compatibility and ignored."""
        return self._m.run(input_feed, output_names, 0, True)

    # ONNX Runtime's introspection spelling.
    def get_inputs(self):
        """The inputs (InferenceSession.get_inputs())."""
        return self.inputs

    def get_outputs(self):
        """The outputs (InferenceSession.get_outputs())."""
        return self.outputs

    def __repr__(self):
        if not hasattr(self, "_m"):
            return "<kiln.Model (not loaded)>"
        return "<kiln.Model %s: %d inputs, %d outputs>" % (self._format, len(self._inputs), len(self._outputs))


class HloFunction:
    """An XLA HLO module compiled by kiln, called like the function it was lowered from:
    f(*arrays) with one array per entry parameter, in order. Returns the single output,
    or a tuple of the outputs (the root tuple's array leaves, depth-first)."""

    def __init__(self, model):
        self.model = model
        self._names = [i.name for i in model.inputs]
        self._single = len(model.outputs) == 1

    @property
    def inputs(self):
        return self.model.inputs

    @property
    def outputs(self):
        return self.model.outputs

    def __call__(self, *args):
        if len(args) != len(self._names):
            raise TypeError("the HLO module takes %d parameters (%s), %d given"
                            % (len(self._names), ", ".join(self._names), len(args)))
        outs = self.model._m.run(dict(zip(self._names, args)), None, 0, True)
        return outs[0] if self._single else tuple(outs)

    def __repr__(self):
        return "<kiln.HloFunction: %d parameters, %d outputs>" % (len(self._names), len(self.model.outputs))


def compile_hlo(text, device=None, **options):
    """Parses, verifies and compiles XLA HLO text (str or bytes), e.g. what
    jax.jit(f).lower(*args).as_text(dialect="hlo") gives, and returns an HloFunction.
    device defaults to cpu; options are Model's (log=, threads=, disable_passes=, ...)."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    return HloFunction(Model(text, device=device, format="hlo", **options))


def devices():
    """Every registered device, highest priority first (a list of Device: name,
    priority, description, available, reason, source)."""
    return [Device(*d) for d in _kiln.devices()]


def option_keys():
    """{key: one-line help} of every option Model and compile_hlo take as keywords."""
    return dict(_kiln.option_keys())


# -------------------------------------------------------------------- hooks ----
# What the C run path cannot take in place comes here.


def _f32_to_bf16_bits(a):
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even; NaNs stay NaN."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    nan = np.isnan(a)
    out = rounded.astype(np.uint16)
    if nan.any():
        out[nan] = ((bits[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return out


def _texts(name, value):
    """((flat list of UTF-8 bytes, shape), string code) for a string input: numpy str,
    bytes or object arrays, lists and scalars; bytes are taken as UTF-8 as they are."""
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if arr.dtype.kind not in "USO":
        raise InvalidArgumentError("input %s: takes text (str), not an array of %s" % (name, arr.dtype))
    flat = []
    for i, e in enumerate(arr.reshape(-1).tolist()):
        if isinstance(e, str):
            flat.append(e.encode("utf-8", "surrogatepass"))
        elif isinstance(e, bytes):
            flat.append(e)
        else:
            raise InvalidArgumentError("input %s: string element %d is a %s, not str" % (name, i, type(e).__name__))
    return (flat, tuple(int(d) for d in arr.shape)), _STRING


def _convert_feed(name, value, code):
    """(array, kiln dtype code) for a feed the C fast path could not take: __dlpack__
    objects, lists and scalars, ml_dtypes arrays (bfloat16, float8, float4, int4),
    float32 for a bfloat16 input; for a string input, the text as _texts gives it."""
    if code == _STRING or (isinstance(value, np.ndarray) and value.dtype.kind in "US"):
        return _texts(name, value)
    want = _NP_OF_CODE.get(code)  # None: the model does not say
    if code in _NARROW:
        want = _ml_dtype(want)  # None without ml_dtypes: kiln then reports the dtype it got
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
    elif hasattr(value, "__dlpack__"):
        try:
            arr = np.from_dlpack(value)
        except (TypeError, ValueError, BufferError, RuntimeError) as e:
            raise InvalidArgumentError("input %s: cannot read the %s through __dlpack__: %s"
                                       % (name, type(value).__name__, e)) from e
    else:
        try:
            arr = np.asarray(value, dtype=np.float32 if code == _BF16 else want)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError("input %s: cannot make an array of %s out of the %s given: %s"
                                       % (name, want or "any dtype", type(value).__name__, e)) from e
    if not arr.flags.c_contiguous:
        raise InvalidArgumentError("input %s: the array is not C-contiguous (pass numpy.ascontiguousarray(x))"
                                   % name)
    if arr.dtype.name == "bfloat16" and arr.dtype.itemsize == 2:
        return arr.view(np.uint16), _BF16
    narrow = _CODE_OF_NAME.get(arr.dtype.name)
    if narrow in _NARROW and arr.dtype.itemsize == 1:
        bits = arr.view(np.uint8)
        if arr.dtype.name in _SUBBYTE:
            mask, sign = _SUBBYTE[arr.dtype.name]
            bits = bits & np.uint8(mask)
            if sign:
                return ((bits ^ np.uint8(sign)).astype(np.int8) - np.int8(sign)), narrow
        return bits.view(_NARROW[narrow]), narrow
    if code == _BF16 and arr.dtype == np.float32:
        return _f32_to_bf16_bits(arr), _BF16
    if not arr.dtype.isnative:
        raise InvalidArgumentError("input %s: the array's byte order is not native (%s); convert it with "
                                   "x.astype(x.dtype.newbyteorder('='))" % (name, arr.dtype.str))
    got = _CODE_OF_NP.get(arr.dtype)
    if got is None:
        raise InvalidArgumentError("input %s: kiln takes no arrays of dtype %s" % (name, arr.dtype))
    return arr, got


def _wrap_output(raw, code, shape):
    """An output whose type numpy lacks, from its storage form (kiln.h): text (a flat
    list of str) as an object array of str; bfloat16 (uint16 bit patterns over kiln's
    memory) as ml_dtypes.bfloat16, else widened exactly to float32; the float8, float4
    and int4/int2 types (one byte each) as ml_dtypes' dtypes, else their storage bytes."""
    if code == _STRING:
        out = np.empty(len(raw), dtype=object)
        out[:] = raw
        return out.reshape(shape)
    dt = _ml_dtype(_DTYPE_NAMES[code])
    if dt is not None:
        if dt.name in _SUBBYTE:  # the value's low bits: a copy
            return (raw.view(np.uint8) & np.uint8(_SUBBYTE[dt.name][0])).view(dt)
        return raw.view(dt)
    if code == _BF16:
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return raw


_kiln._set_hooks(_convert_feed, _wrap_output)
