/* kiln._kiln: the CPython extension under the `kiln` package, written against nothing
 * but kiln's public C API (include/kiln/kiln.h) and the CPython API.
 *
 * What lives here is what must be fast or must touch kiln handles: loading a model
 * (with the GIL released), the run path (feeds taken through the buffer protocol in
 * place, the GIL released around kiln_model_run, every output handed to numpy without
 * a copy: a TensorBuffer object owns the kiln_tensor and exports its memory, and the
 * numpy array keeps it alive through its base), the exception classes, the log
 * callback trampoline, and the device / version / option-key queries. Everything
 * else -- keyword options to strings, the TensorInfo objects, DLPack and list inputs,
 * the element types numpy lacks (bfloat16, float8, float4, int4, int2) and text -- is Python
 * in kiln/__init__.py, which hands this module two hooks at import (_set_hooks): one
 * converting feeds the fast path cannot take, one giving outputs of those types their
 * numpy form. numpy is imported on first use only. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <kiln/kiln.h>
#include <string.h>

#define N_CODES 8 /* KILN_OK .. KILN_IO_ERROR */

static PyObject *g_error;               /* kiln.Error */
static PyObject *g_errors[N_CODES];     /* by kiln_code; [KILN_OK] unused */
static PyObject *g_asarray;             /* numpy.asarray */
static PyObject *g_convert_feed; /* hook: (name, value, dtype code) -> (array, dtype code) */
static PyObject *g_wrap_output;  /* hook: (raw output, dtype code, shape) -> array, for the types below */

/* ----------------------------------------------------------------- errors ---- */

static PyObject *error_class(kiln_code code) {
  if ((int)code > 0 && (int)code < N_CODES && g_errors[code]) return g_errors[code];
  return g_error;
}

/* Raises the error a kiln status carries (message intact) and frees the status. */
static PyObject *raise_status(kiln_status s) {
  kiln_code code = kiln_status_code(s);
  const char *msg = kiln_status_message(s);
  PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  kiln_status_free(s);
  if (!text) return NULL;
  PyObject *cls = error_class(code);
  PyObject *exc = PyObject_CallOneArg(cls, text);
  Py_DECREF(text);
  if (!exc) return NULL;
  if (cls == g_error) { /* a code this module does not know: keep its name */
    PyObject *name = PyUnicode_FromString(kiln_code_name(code));
    if (!name || PyObject_SetAttrString(exc, "code", name) < 0) {
      Py_XDECREF(name);
      Py_DECREF(exc);
      return NULL;
    }
    Py_DECREF(name);
  }
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
  return NULL;
}

/* Raises kiln error class `code` with a formatted message (PyUnicode_FromFormat). */
static PyObject *raise_error(kiln_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (!msg) return NULL;
  PyErr_SetObject(error_class(code), msg);
  Py_DECREF(msg);
  return NULL;
}

/* Creates kiln.Error and one subclass per code, each also deriving from the builtin
 * exception a Python caller would catch for that kind of failure. */
static int make_errors(PyObject *m) {
  static const struct {
    kiln_code code;
    const char *name;
    const char *doc;
  } specs[] = {
      {KILN_INVALID_ARGUMENT, "InvalidArgumentError", "Bad input: a malformed model, wrong dtype or shape, bad option."},
      {KILN_NOT_FOUND, "NotFoundError", "A named thing (file, input, output, device) does not exist."},
      {KILN_UNIMPLEMENTED, "UnimplementedError", "Valid input that this build of kiln does not support."},
      {KILN_OUT_OF_RANGE, "OutOfRangeError", "An index or size beyond what is representable."},
      {KILN_RESOURCE_EXHAUSTED, "ResourceExhaustedError", "An allocation failed or a size is over a configured cap."},
      {KILN_INTERNAL, "InternalError", "A kiln bug: an internal invariant did not hold."},
      {KILN_IO_ERROR, "KilnIOError", "The operating system refused a read or write."},
  };
  PyObject *builtin[N_CODES] = {0};
  builtin[KILN_INVALID_ARGUMENT] = PyExc_ValueError;
  builtin[KILN_NOT_FOUND] = PyExc_LookupError;
  builtin[KILN_UNIMPLEMENTED] = PyExc_NotImplementedError;
  builtin[KILN_OUT_OF_RANGE] = PyExc_IndexError;
  builtin[KILN_RESOURCE_EXHAUSTED] = PyExc_MemoryError;
  builtin[KILN_IO_ERROR] = PyExc_OSError;

  PyObject *dict = Py_BuildValue("{s:O}", "code", Py_None);
  if (!dict) return -1;
  g_error = PyErr_NewExceptionWithDoc("kiln.Error",
                                      "Base class of every error kiln reports; .code is the kiln_code name "
                                      "(\"INVALID_ARGUMENT\", ...) and str(e) is kiln's message.",
                                      PyExc_Exception, dict);
  Py_DECREF(dict);
  if (!g_error || PyModule_AddObjectRef(m, "Error", g_error) < 0) return -1;
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    kiln_code code = specs[i].code;
    char qualname[64];
    PyOS_snprintf(qualname, sizeof qualname, "kiln.%s", specs[i].name);
    PyObject *bases = builtin[code] ? PyTuple_Pack(2, g_error, builtin[code]) : PyTuple_Pack(1, g_error);
    PyObject *d = Py_BuildValue("{s:s}", "code", kiln_code_name(code));
    if (!bases || !d) {
      Py_XDECREF(bases);
      Py_XDECREF(d);
      return -1;
    }
    g_errors[code] = PyErr_NewExceptionWithDoc(qualname, specs[i].doc, bases, d);
    Py_DECREF(bases);
    Py_DECREF(d);
    if (!g_errors[code] || PyModule_AddObjectRef(m, specs[i].name, g_errors[code]) < 0) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- helpers ---- */

static PyObject *numpy_asarray(void) {
  if (!g_asarray) {
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return NULL;
    g_asarray = PyObject_GetAttrString(np, "asarray");
    Py_DECREF(np);
  }
  return g_asarray;
}

/* The kiln dtype a PEP 3118 format string describes (native byte order only); 0 when
 * it is not one kiln takes. */
static kiln_dtype dtype_of_format(const char *fmt, Py_ssize_t itemsize) {
  if (!fmt) return KILN_UINT8; /* no format: unsigned bytes */
  if (*fmt == '@' || *fmt == '=' || *fmt == (PY_LITTLE_ENDIAN ? '<' : '>')) fmt++;
  if (fmt[0] == 'Z' && fmt[1] && !fmt[2]) {
    if (fmt[1] == 'f') return KILN_COMPLEX64;
    if (fmt[1] == 'd') return KILN_COMPLEX128;
    return KILN_DTYPE_INVALID;
  }
  if (!fmt[0] || fmt[1]) return KILN_DTYPE_INVALID;
  switch (fmt[0]) {
    case '?': return KILN_BOOL;
    case 'e': return KILN_FLOAT16;
    case 'f': return KILN_FLOAT32;
    case 'd': return KILN_FLOAT64;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
      switch (itemsize) {
        case 1: return KILN_INT8;
        case 2: return KILN_INT16;
        case 4: return KILN_INT32;
        case 8: return KILN_INT64;
        default: return KILN_DTYPE_INVALID;
      }
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
      switch (itemsize) {
        case 1: return KILN_UINT8;
        case 2: return KILN_UINT16;
        case 4: return KILN_UINT32;
        case 8: return KILN_UINT64;
        default: return KILN_DTYPE_INVALID;
      }
    default: return KILN_DTYPE_INVALID;
  }
}

/* Outputs whose element type numpy lacks leave this module in their storage form
 * (kiln.h: bfloat16 as uint16 bits, the narrow types one byte each, text as a list of
 * str) and the wrap-output hook gives them their numpy form. */
static int needs_wrap(kiln_dtype dtype) {
  return dtype == KILN_BFLOAT16 || (dtype >= KILN_FLOAT8E4M3FN && dtype <= KILN_FLOAT8E8M0FNU) || dtype == KILN_STRING;
}

/* The format an output of `dtype` is exported with (bfloat16 as its uint16 bits, the
 * narrow types as the bytes kiln stores them in). */
static const char *format_of_dtype(kiln_dtype dtype) {
  switch (dtype) {
    case KILN_BOOL: return "?";
    case KILN_INT8: return "b";
    case KILN_INT16: return "h";
    case KILN_INT32: return "i";
    case KILN_INT64: return sizeof(long) == 8 ? "l" : "q";
    case KILN_UINT8: return "B";
    case KILN_UINT16: return "H";
    case KILN_UINT32: return "I";
    case KILN_UINT64: return sizeof(long) == 8 ? "L" : "Q";
    case KILN_FLOAT16: return "e";
    case KILN_BFLOAT16: return "H";
    case KILN_FLOAT32: return "f";
    case KILN_FLOAT64: return "d";
    case KILN_COMPLEX64: return "Zf";
    case KILN_COMPLEX128: return "Zd";
    case KILN_INT4: case KILN_INT2: return "b";
    case KILN_FLOAT8E4M3FN: case KILN_FLOAT8E4M3FNUZ: case KILN_FLOAT8E5M2: case KILN_FLOAT8E5M2FNUZ:
    case KILN_FLOAT8E8M0FNU: case KILN_FLOAT4E2M1FN: case KILN_UINT4: case KILN_UINT2: return "B";
    default: return NULL;
  }
}

/* ----------------------------------------------------------- TensorBuffer ---- */

/* Owns one kiln output tensor and exports its memory (writable) through the buffer
 * protocol; the numpy array made from it holds it alive, so outputs are never copied.
 * An item of a sequence, optional or map output belongs to its root output: owner then
 * holds the root (a capsule that frees it) instead of the buffer freeing the item. */
typedef struct {
  PyObject_HEAD
  kiln_tensor *tensor;
  PyObject *owner;
  const char *format;
  Py_ssize_t itemsize;
  int ndim;
  Py_ssize_t *shape; /* ndim shape entries, then ndim strides */
} TensorBufferObject;

static void TensorBuffer_dealloc(TensorBufferObject *self) {
  if (self->owner) Py_DECREF(self->owner);
  else kiln_tensor_free(self->tensor);
  PyMem_Free(self->shape);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int TensorBuffer_getbuffer(TensorBufferObject *self, Py_buffer *view, int flags) {
  view->obj = Py_NewRef(self);
  view->buf = kiln_tensor_data(self->tensor);
  view->len = (Py_ssize_t)kiln_tensor_byte_size(self->tensor);
  view->readonly = 0;
  view->itemsize = self->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? (char *)self->format : NULL;
  view->ndim = self->ndim;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->shape + self->ndim : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  if (!(flags & PyBUF_ND)) view->ndim = 1; /* a plain byte view */
  return 0;
}

static PyBufferProcs TensorBuffer_as_buffer = {(getbufferproc)TensorBuffer_getbuffer, NULL};

static PyTypeObject TensorBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._kiln.TensorBuffer",
    .tp_basicsize = sizeof(TensorBufferObject),
    .tp_dealloc = (destructor)TensorBuffer_dealloc,
    .tp_as_buffer = &TensorBuffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The memory of one kiln output tensor (the base of the numpy array kiln returns).",
};

/* Hands an output in its storage form to the wrap-output hook (steals raw). */
static PyObject *wrap_output(PyObject *raw, kiln_dtype dtype, int rank, const int64_t *dims) {
  if (!raw || !g_wrap_output) return raw;
  PyObject *shape = PyTuple_New(rank);
  for (int d = 0; shape && d < rank; d++) {
    PyObject *n = PyLong_FromLongLong((long long)dims[d]);
    if (!n) Py_CLEAR(shape);
    else PyTuple_SET_ITEM(shape, d, n);
  }
  PyObject *r = shape ? PyObject_CallFunction(g_wrap_output, "OiO", raw, (int)dtype, shape) : NULL;
  Py_XDECREF(shape);
  Py_DECREF(raw);
  return r;
}

/* A string output as a flat list of str (the elements in row-major order); copies the
 * text, then frees t unless an owner holds it. Invalid UTF-8 is replaced, not an
 * error: the graph made it. */
static PyObject *texts_of_tensor(kiln_tensor *t, PyObject *owner) {
  const char *const *p = kiln_tensor_data(t);
  int64_t n = 1;
  for (int d = 0; d < kiln_tensor_rank(t); d++) n *= kiln_tensor_dims(t)[d];
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list && i < n; i++) {
    PyObject *u = PyUnicode_DecodeUTF8(p[i], (Py_ssize_t)strlen(p[i]), "replace");
    if (!u) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, u);
  }
  PyObject *r = wrap_output(list, KILN_STRING, kiln_tensor_rank(t), kiln_tensor_dims(t));
  if (!owner) kiln_tensor_free(t);
  return r;
}

static void free_root_tensor(PyObject *capsule) {
  kiln_tensor_free(PyCapsule_GetPointer(capsule, "kiln_tensor"));
}

static PyObject *value_of_tensor(kiln_tensor *t, const char *what, PyObject *owner);

/* A sequence (list), optional (None or what it holds) or map (dict) output; its items
 * become values of their own, numpy arrays among them over the root's memory. */
static PyObject *value_of_items(kiln_tensor *t, const char *what, PyObject *owner) {
  kiln_kind kind = kiln_tensor_kind(t);
  int n = kiln_tensor_item_count(t);
  if (kind == KILN_KIND_OPTIONAL)
    return n == 0 ? Py_NewRef(Py_None) : value_of_tensor(kiln_tensor_item(t, 0), what, owner);
  if (kind == KILN_KIND_MAP) { /* {key: value}, as ONNX Runtime gives ZipMap's maps */
    PyObject *k = n == 2 ? value_of_tensor(kiln_tensor_item(t, 0), what, owner) : NULL;
    PyObject *v = k ? value_of_tensor(kiln_tensor_item(t, 1), what, owner) : NULL;
    PyObject *kl = v ? PyObject_CallMethod(k, "tolist", NULL) : NULL;
    PyObject *vl = kl ? PyObject_CallMethod(v, "tolist", NULL) : NULL;
    PyObject *d = vl ? PyDict_New() : NULL;
    for (Py_ssize_t i = 0; d && i < PyList_GET_SIZE(kl) && i < PyList_GET_SIZE(vl); i++)
      if (PyDict_SetItem(d, PyList_GET_ITEM(kl, i), PyList_GET_ITEM(vl, i)) < 0) Py_CLEAR(d);
    if (!d && !PyErr_Occurred()) raise_error(KILN_INTERNAL, "output '%s': a map without keys and values", what);
    Py_XDECREF(k);
    Py_XDECREF(v);
    Py_XDECREF(kl);
    Py_XDECREF(vl);
    return d;
  }
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    PyObject *item = value_of_tensor(kiln_tensor_item(t, i), what, owner);
    if (!item) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, item);
  }
  return list;
}

/* The Python value of output t: a numpy array over its memory, or a list / None /
 * dict for a sequence, optional or map. With owner NULL, t is a root output this call
 * takes over (freed here on failure too); otherwise t is an item owner keeps alive. */
static PyObject *value_of_tensor(kiln_tensor *t, const char *what, PyObject *owner) {
  if (kiln_tensor_kind(t) != KILN_KIND_TENSOR) {
    if (owner) return value_of_items(t, what, owner);
    PyObject *root = PyCapsule_New(t, "kiln_tensor", free_root_tensor);
    if (!root) {
      kiln_tensor_free(t);
      return NULL;
    }
    PyObject *r = value_of_items(t, what, root);
    Py_DECREF(root);
    return r;
  }
  kiln_dtype dtype = kiln_tensor_dtype(t);
  if (dtype == KILN_STRING) return texts_of_tensor(t, owner);
  const char *fmt = format_of_dtype(dtype);
  if (!fmt) {
    if (!owner) kiln_tensor_free(t);
    return raise_error(KILN_UNIMPLEMENTED, "output '%s' has element type %s, which numpy cannot hold", what,
                       kiln_dtype_name(dtype));
  }
  PyObject *asarray = numpy_asarray();
  if (!asarray) {
    if (!owner) kiln_tensor_free(t);
    return NULL;
  }
  TensorBufferObject *tb = PyObject_New(TensorBufferObject, &TensorBufferType);
  if (!tb) {
    if (!owner) kiln_tensor_free(t);
    return NULL;
  }
  tb->tensor = t;
  tb->owner = owner ? Py_NewRef(owner) : NULL;
  tb->format = fmt;
  tb->itemsize = (Py_ssize_t)kiln_dtype_size(dtype);
  tb->ndim = kiln_tensor_rank(t);
  tb->shape = PyMem_Calloc((size_t)(2 * tb->ndim + 1), sizeof(Py_ssize_t));
  if (!tb->shape) {
    Py_DECREF(tb);
    return PyErr_NoMemory();
  }
  const int64_t *dims = kiln_tensor_dims(t);
  Py_ssize_t stride = tb->itemsize;
  for (int d = tb->ndim - 1; d >= 0; d--) {
    tb->shape[d] = (Py_ssize_t)dims[d];
    tb->shape[tb->ndim + d] = stride;
    stride *= dims[d] > 0 ? (Py_ssize_t)dims[d] : 1;
  }
  int rank = tb->ndim;
  const int64_t *out_dims = kiln_tensor_dims(t);
  PyObject *arr = PyObject_CallOneArg(asarray, (PyObject *)tb);
  if (arr && needs_wrap(dtype)) arr = wrap_output(arr, dtype, rank, out_dims); /* tb keeps dims alive */
  Py_DECREF(tb);
  return arr;
}

/* ------------------------------------------------------------------ Model ---- */

typedef struct {
  PyObject_HEAD
  kiln_model *model;
  PyObject *log;        /* the log callable; the model's callback user pointer */
  int n_in, n_out;
  kiln_value *in_info;  /* introspection; strings and dims owned by the model */
  kiln_value *out_info;
  PyObject *in_index;   /* {input name: index} */
  PyObject *out_names;  /* tuple of output names in model order */
  PyObject *colon0;     /* ":0" */
} ModelObject;

static void Model_dealloc(ModelObject *self) {
  kiln_model_free(self->model); /* may still log through self->log */
  PyMem_Free(self->in_info);
  PyMem_Free(self->out_info);
  Py_XDECREF(self->in_index);
  Py_XDECREF(self->colon0);
  Py_XDECREF(self->out_names);
  Py_XDECREF(self->log);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* kiln_log_fn: the callback runs on the thread that made the kiln call, which may hold
 * the GIL (loading) or not (a run): PyGILState_Ensure covers both. A callback that
 * raises cannot stop kiln; its exception is reported as unraisable. */
static void log_trampoline(void *user, kiln_log_level level, const char *message) {
  if (!Py_IsInitialized()) {
    fprintf(stderr, "kiln: %s\n", message);
    return;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
#if PY_VERSION_HEX >= 0x030C0000
  PyObject *pending = PyErr_GetRaisedException();
#else
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
#endif
  PyObject *msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
  PyObject *r = msg ? PyObject_CallFunction((PyObject *)user, "iO", (int)level, msg) : NULL;
  if (!r) PyErr_WriteUnraisable((PyObject *)user);
  Py_XDECREF(r);
  Py_XDECREF(msg);
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(pending);
#else
  PyErr_Restore(et, ev, tb);
#endif
  PyGILState_Release(gil);
}

static int fill_info(ModelObject *self) {
  self->n_in = kiln_model_num_inputs(self->model);
  self->n_out = kiln_model_num_outputs(self->model);
  self->in_info = PyMem_Calloc((size_t)self->n_in + 1, sizeof(kiln_value));
  self->out_info = PyMem_Calloc((size_t)self->n_out + 1, sizeof(kiln_value));
  self->in_index = PyDict_New();
  self->out_names = PyTuple_New(self->n_out);
  self->colon0 = PyUnicode_FromString(":0");
  if (!self->in_info || !self->out_info) {
    PyErr_NoMemory();
    return -1;
  }
  if (!self->in_index || !self->out_names || !self->colon0) return -1;
  for (int io = 0; io < 2; io++) {
    int n = io ? self->n_out : self->n_in;
    kiln_value *info = io ? self->out_info : self->in_info;
    for (int i = 0; i < n; i++) {
      kiln_value v = KILN_VALUE_INIT;
      kiln_status s = io ? kiln_model_output(self->model, i, &v) : kiln_model_input(self->model, i, &v);
      if (s) {
        raise_status(s);
        return -1;
      }
      if (!v.name) v.name = "";
      info[i] = v;
      PyObject *name = PyUnicode_DecodeUTF8(v.name, (Py_ssize_t)strlen(v.name), "replace");
      if (!name) return -1;
      if (io) {
        PyTuple_SET_ITEM(self->out_names, i, name);
        continue;
      }
      PyObject *idx = PyLong_FromLong(i);
      int bad = !idx || PyDict_SetItem(self->in_index, name, idx) < 0;
      Py_XDECREF(idx);
      Py_DECREF(name);
      if (bad) return -1;
    }
  }
  return 0;
}

static PyTypeObject ModelType;

/* _kiln.load(source, is_path, format, options, log) -> Model. source: a path as
 * bytes (is_path) or the model's bytes (any buffer); options: (key, value) str pairs
 * given to kiln_options_set in order; log: a callable(level: int, message: str) or
 * None. */
static PyObject *mod_load(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *source, *options, *log;
  int is_path, format;
  if (!PyArg_ParseTuple(args, "OpiOO:load", &source, &is_path, &format, &options, &log)) return NULL;
  if (log != Py_None && !PyCallable_Check(log)) {
    PyErr_SetString(PyExc_TypeError, "log must be a callable(level, message) or None");
    return NULL;
  }
  PyObject *seq = PySequence_Fast(options, "options must be a sequence of (key, value) pairs");
  if (!seq) return NULL;
  ModelObject *self = PyObject_New(ModelObject, &ModelType);
  if (!self) {
    Py_DECREF(seq);
    return NULL;
  }
  self->model = NULL;
  self->in_info = self->out_info = NULL;
  self->in_index = self->out_names = self->colon0 = NULL;
  self->n_in = self->n_out = 0;
  self->log = log == Py_None ? NULL : Py_NewRef(log);

  kiln_options *opts = NULL;
  kiln_status s = kiln_options_create(&opts);
  if (s) goto fail_status;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    const char *key, *value;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss:option", &key, &value)) goto fail;
    if ((s = kiln_options_set(opts, key, value))) goto fail_status;
  }
  if (self->log && (s = kiln_options_set_log_callback(opts, log_trampoline, self->log))) goto fail_status;

  Py_buffer data = {0};
  const char *path = NULL;
  if (is_path) {
    if (!PyBytes_Check(source)) {
      PyErr_SetString(PyExc_TypeError, "a path must be given as bytes (os.fsencode)");
      goto fail;
    }
    path = PyBytes_AS_STRING(source);
    if ((size_t)PyBytes_GET_SIZE(source) != strlen(path)) {
      raise_error(KILN_INVALID_ARGUMENT, "the model path contains a NUL byte");
      goto fail;
    }
  } else if (PyObject_GetBuffer(source, &data, PyBUF_SIMPLE) < 0) {
    goto fail;
  }
  kiln_model *model = NULL;
  Py_BEGIN_ALLOW_THREADS
  s = is_path ? kiln_model_load(path, opts, &model)
              : kiln_model_load_from_memory(data.buf, (size_t)data.len, (kiln_format)format, opts, &model);
  Py_END_ALLOW_THREADS
  if (!is_path) PyBuffer_Release(&data);
  kiln_options_free(opts);
  opts = NULL;
  if (s) goto fail_status;
  self->model = model;
  if (fill_info(self) < 0) goto fail;
  Py_DECREF(seq);
  return (PyObject *)self;

fail_status:
  raise_status(s);
fail:
  kiln_options_free(opts);
  Py_DECREF(seq);
  Py_DECREF(self);
  return NULL;
}

static PyObject *info_list(const kiln_value *info, int n) {
  PyObject *list = PyList_New(n);
  if (!list) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *shape;
    if (info[i].rank < 0) {
      shape = Py_NewRef(Py_None);
    } else {
      shape = PyTuple_New(info[i].rank);
      for (int d = 0; shape && d < info[i].rank; d++) {
        PyObject *dim = info[i].dims[d] < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(info[i].dims[d]);
        if (!dim) Py_CLEAR(shape);
        else PyTuple_SET_ITEM(shape, d, dim);
      }
    }
    PyObject *item = shape ? Py_BuildValue("(siNs)", info[i].name, (int)info[i].dtype, shape,
                                           kiln_kind_name(info[i].kind))
                           : NULL;
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject *Model_inputs(ModelObject *self, PyObject *unused) {
  (void)unused;
  return info_list(self->in_info, self->n_in);
}

static PyObject *Model_outputs(ModelObject *self, PyObject *unused) {
  (void)unused;
  return info_list(self->out_info, self->n_out);
}

static PyObject *Model_format(ModelObject *self, PyObject *unused) {
  (void)unused;
  kiln_format f = kiln_model_format(self->model);
  return Py_BuildValue("(is)", (int)f, kiln_format_name(f));
}

static PyObject *Model_stats(ModelObject *self, PyObject *unused) {
  (void)unused;
  kiln_model_stats st = KILN_MODEL_STATS_INIT;
  kiln_status s;
  Py_BEGIN_ALLOW_THREADS
  s = kiln_model_get_stats(self->model, &st);
  Py_END_ALLOW_THREADS
  if (s) return raise_status(s);
  return Py_BuildValue("{s:L,s:i,s:i,s:L,s:L,s:L,s:L,s:d,s:L,s:L,s:s,s:s,s:L,s:L,s:L}", "runs", (long long)st.runs, "nodes",
                       st.nodes, "clusters", st.clusters, "cluster_runs", (long long)st.cluster_runs,
                       "cluster_compiles", (long long)st.cluster_compiles, "cluster_cache_hits",
                       (long long)st.cluster_cache_hits, "cluster_fallback_runs", (long long)st.cluster_fallback_runs,
                       "cluster_compile_ms", st.cluster_compile_ms, "op_compiles", (long long)st.op_compiles,
                       "op_cache_hits", (long long)st.op_cache_hits, "device", st.device ? st.device : "", "jit",
                       st.jit ? st.jit : "", "evaluated_instructions", (long long)st.evaluated_instructions, "bytes_to_device",
                       (long long)st.bytes_to_device, "bytes_to_host", (long long)st.bytes_to_host);
}

/* A text feed: the hook gave (flat list of UTF-8 bytes, shape); view is filled by hand
 * (buf: *texts, the element pointers into the bytes objects, which the caller keeps
 * alive; shape: allocated after them) and has no owner, so PyBuffer_Release leaves it
 * alone and the caller frees *texts. */
static int take_texts(const kiln_value *decl, PyObject *pair, Py_buffer *view, kiln_dtype *dtype,
                      const char ***texts) {
  PyObject *list, *shape;
  if (!PyArg_ParseTuple(pair, "OO:convert_feed text", &list, &shape) || !PyList_Check(list) ||
      !PyTuple_Check(shape)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the feed hook gave text in a form this module does not take");
    return -1;
  }
  Py_ssize_t n = PyList_GET_SIZE(list), rank = PyTuple_GET_SIZE(shape);
  const char **p = PyMem_Calloc((size_t)n + 1, sizeof(char *));
  Py_ssize_t *dims = PyMem_Calloc((size_t)rank + 1, sizeof(Py_ssize_t));
  if (!p || !dims) {
    PyMem_Free(p);
    PyMem_Free(dims);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t d = 0; d < rank; d++) dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *b = PyList_GET_ITEM(list, i);
    if (!PyBytes_Check(b) || (size_t)PyBytes_GET_SIZE(b) != strlen(PyBytes_AS_STRING(b))) {
      PyMem_Free(p);
      PyMem_Free(dims);
      raise_error(KILN_INVALID_ARGUMENT, "input %s: string element %zd %s", decl->name, i,
                  PyBytes_Check(b) ? "holds a NUL character, which kiln's text elements cannot" : "is not text");
      return -1;
    }
    p[i] = PyBytes_AS_STRING(b);
  }
  memset(view, 0, sizeof *view);
  view->buf = (void *)p;
  view->len = n * (Py_ssize_t)sizeof(char *);
  view->itemsize = (Py_ssize_t)sizeof(char *);
  view->ndim = (int)rank;
  view->shape = dims;
  *texts = p;
  *dtype = KILN_STRING;
  return 0;
}

/* One feed: its buffer (C-contiguous; the caller releases it) and its kiln dtype. A
 * buffer of a dtype kiln knows is taken as it is, in place (a dtype other than the
 * declared one is kiln's error to report); anything else -- DLPack, lists and
 * scalars, ml_dtypes arrays (bfloat16, float8, float4, int4), float32 for a bfloat16
 * input, text for a string input -- goes through the convert-feed hook, which
 * converts it or raises an error naming the input. */
static int take_feed(const kiln_value *decl, PyObject *value, Py_buffer *view, kiln_dtype *dtype,
                     PyObject **keep, const char ***texts) {
  *keep = NULL;
  *texts = NULL;
  if (decl->dtype != KILN_STRING && PyObject_CheckBuffer(value)) {
    if (PyObject_GetBuffer(value, view, PyBUF_RECORDS_RO) == 0) {
      kiln_dtype got = dtype_of_format(view->format, view->itemsize);
      if (got != KILN_DTYPE_INVALID && (size_t)view->itemsize == kiln_dtype_size(got) &&
          !(decl->dtype == KILN_BFLOAT16 && got == KILN_FLOAT32)) {
        if (!PyBuffer_IsContiguous(view, 'C')) {
          PyBuffer_Release(view);
          raise_error(KILN_INVALID_ARGUMENT,
                      "input %s: the array is not C-contiguous (pass numpy.ascontiguousarray(x))", decl->name);
          return -1;
        }
        *dtype = got;
        return 0;
      }
      PyBuffer_Release(view);
    } else {
      PyErr_Clear(); /* e.g. an ml_dtypes array numpy cannot export: the hook handles it */
    }
  }
  if (!g_convert_feed) {
    PyErr_SetString(PyExc_RuntimeError, "kiln._kiln used without the kiln package (no feed hook)");
    return -1;
  }
  PyObject *r = PyObject_CallFunction(g_convert_feed, "sOi", decl->name, value, (int)decl->dtype);
  if (!r) return -1;
  PyObject *arr;
  int code;
  if (!PyArg_ParseTuple(r, "Oi:convert_feed result", &arr, &code)) {
    Py_DECREF(r);
    return -1;
  }
  *keep = Py_NewRef(arr);
  Py_DECREF(r);
  if (code == KILN_STRING) return take_texts(decl, *keep, view, dtype, texts);
  if (PyObject_GetBuffer(*keep, view, PyBUF_RECORDS_RO) < 0) return -1;
  if (!PyBuffer_IsContiguous(view, 'C') || (size_t)view->itemsize != kiln_dtype_size((kiln_dtype)code)) {
    PyBuffer_Release(view);
    PyErr_Format(PyExc_RuntimeError, "input '%s': the feed hook returned a non-contiguous or mis-sized array",
                 decl->name);
    return -1;
  }
  *dtype = (kiln_dtype)code;
  return 0;
}

/* The declared input a feed name refers to: the exact name, else with ":0" added or
 * dropped (TF tensor names); NULL when neither is an input (kiln then resolves the
 * name itself: HLO parameters also answer to pN, and an unknown name is its
 * NOT_FOUND error listing the inputs). */
static const kiln_value *declared_input(ModelObject *self, PyObject *key) {
  PyObject *idx = PyDict_GetItemWithError(self->in_index, key);
  if (!idx && !PyErr_Occurred()) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    PyObject *alt = NULL;
    if (PyUnicode_Tailmatch(key, self->colon0, 0, n, 1) > 0) alt = PyUnicode_Substring(key, 0, n - 2);
    else alt = PyUnicode_Concat(key, self->colon0);
    if (alt) idx = PyDict_GetItemWithError(self->in_index, alt);
    Py_XDECREF(alt);
  }
  PyErr_Clear();
  return idx ? &self->in_info[PyLong_AsLong(idx)] : NULL;
}

/* What one run's feeds borrow until kiln_model_run returns: buffer views to release,
 * PyMem blocks (dims, item arrays, text pointers and hand-made text shapes) to free,
 * objects made by the feed hook to drop. */
typedef struct {
  Py_buffer **views;
  void **blocks;
  PyObject **refs;
  Py_ssize_t n_views, n_blocks, n_refs, cap_views, cap_blocks, cap_refs;
} feed_holder;

static int grow(void *arr, Py_ssize_t *cap, Py_ssize_t n, size_t size) {
  if (n < *cap) return 0;
  Py_ssize_t c = *cap ? 2 * *cap : 8;
  void *p = PyMem_Realloc(*(void **)arr, (size_t)c * size);
  if (!p) {
    PyErr_NoMemory();
    return -1;
  }
  *(void **)arr = p;
  *cap = c;
  return 0;
}

static void *hold_block(feed_holder *h, size_t bytes) {
  void *p = PyMem_Calloc(1, bytes ? bytes : 1);
  if (!p) {
    PyErr_NoMemory();
    return NULL;
  }
  if (grow(&h->blocks, &h->cap_blocks, h->n_blocks, sizeof(void *)) < 0) {
    PyMem_Free(p);
    return NULL;
  }
  h->blocks[h->n_blocks++] = p;
  return p;
}

static int hold_ref(feed_holder *h, PyObject *o) { /* steals o */
  if (!o) return 0;
  if (grow(&h->refs, &h->cap_refs, h->n_refs, sizeof(PyObject *)) < 0) {
    Py_DECREF(o);
    return -1;
  }
  h->refs[h->n_refs++] = o;
  return 0;
}

static void holder_release(feed_holder *h) {
  for (Py_ssize_t i = 0; i < h->n_views; i++) {
    PyBuffer_Release(h->views[i]);
    PyMem_Free(h->views[i]);
  }
  for (Py_ssize_t i = 0; i < h->n_blocks; i++) PyMem_Free(h->blocks[i]);
  for (Py_ssize_t i = 0; i < h->n_refs; i++) Py_DECREF(h->refs[i]);
  PyMem_Free(h->views);
  PyMem_Free(h->blocks);
  PyMem_Free(h->refs);
  memset(h, 0, sizeof *h);
}

/* One tensor feed into *out (name and dtype from decl; the buffer, dims and anything
 * the hook made held by h). */
static int take_tensor(feed_holder *h, const kiln_value *decl, PyObject *value, kiln_value *out) {
  Py_buffer *view = PyMem_Calloc(1, sizeof *view);
  if (!view) {
    PyErr_NoMemory();
    return -1;
  }
  PyObject *keep = NULL;
  const char **texts = NULL;
  kiln_dtype dt;
  if (take_feed(decl, value, view, &dt, &keep, &texts) < 0) {
    PyMem_Free(view);
    Py_XDECREF(keep);
    return -1;
  }
  if (texts) { /* a hand-made view: its pointers and shape are blocks, nothing to release */
    if (grow(&h->blocks, &h->cap_blocks, h->n_blocks + 1, sizeof(void *)) < 0) {
      PyMem_Free(texts);
      PyMem_Free(view->shape);
      PyMem_Free(view);
      Py_XDECREF(keep);
      return -1;
    }
    h->blocks[h->n_blocks++] = texts;
    h->blocks[h->n_blocks++] = view->shape;
  }
  if (grow(&h->views, &h->cap_views, h->n_views, sizeof(Py_buffer *)) < 0) {
    if (!texts) PyBuffer_Release(view);
    PyMem_Free(view);
    Py_XDECREF(keep);
    return -1;
  }
  h->views[h->n_views++] = view;
  if (hold_ref(h, keep) < 0) return -1;
  int64_t *dims = hold_block(h, (size_t)view->ndim * sizeof(int64_t));
  if (!dims) return -1;
  for (int d = 0; d < view->ndim; d++) dims[d] = (int64_t)view->shape[d];
  out->struct_size = sizeof(kiln_value);
  out->name = decl->name;
  out->dtype = dt;
  out->rank = view->ndim;
  out->dims = dims;
  out->data = view->buf;
  out->byte_size = (size_t)view->len;
  out->kind = KILN_KIND_TENSOR;
  return 0;
}

/* A map feed from a dict: keys (int -> int64, str -> string) and values (the declared
 * dtype) as two 1-D tensor items. */
static int take_map(feed_holder *h, const kiln_value *decl, PyObject *value, kiln_value *out) {
  PyObject *keys = PyDict_Keys(value), *vals = keys ? PyDict_Values(value) : NULL;
  if (hold_ref(h, keys) < 0 || hold_ref(h, vals) < 0 || !keys || !vals) return -1;
  kiln_value *items = hold_block(h, 2 * sizeof(kiln_value));
  if (!items) return -1;
  int text_keys = PyList_GET_SIZE(keys) > 0 && PyUnicode_Check(PyList_GET_ITEM(keys, 0));
  kiln_value kd = {sizeof(kiln_value), decl->name, text_keys ? KILN_STRING : KILN_INT64, -1, NULL, NULL, 0,
                   KILN_KIND_TENSOR, 0, NULL};
  kiln_value vd = {sizeof(kiln_value), decl->name, decl->dtype, -1, NULL, NULL, 0, KILN_KIND_TENSOR, 0, NULL};
  if (take_tensor(h, &kd, keys, &items[0]) < 0 || take_tensor(h, &vd, vals, &items[1]) < 0) return -1;
  out->struct_size = sizeof(kiln_value);
  out->name = decl->name;
  out->kind = KILN_KIND_MAP;
  out->n_items = 2;
  out->items = items;
  return 0;
}

/* One feed of any kind into *out. The declared kind decides: a sequence takes a list
 * or tuple (its elements tensors, or dicts for maps), an optional None (empty) or what
 * it holds, a map a dict; anything else is a tensor. */
static int take_value(feed_holder *h, const kiln_value *decl, PyObject *value, kiln_value *out) {
  kiln_kind kind = decl->struct_size > offsetof(kiln_value, kind) ? decl->kind : KILN_KIND_TENSOR;
  if (kind == KILN_KIND_OPTIONAL) {
    if (value != Py_None) return take_tensor(h, decl, value, out); /* kiln.h: a held tensor passes as itself */
    out->struct_size = sizeof(kiln_value);
    out->name = decl->name;
    out->dtype = decl->dtype;
    out->kind = KILN_KIND_OPTIONAL;
    return 0;
  }
  if (kind == KILN_KIND_MAP || (kind == KILN_KIND_SEQUENCE && PyDict_Check(value))) {
    if (!PyDict_Check(value)) {
      raise_error(KILN_INVALID_ARGUMENT, "input %s: takes a map (a dict), not %s", decl->name, Py_TYPE(value)->tp_name);
      return -1;
    }
    return take_map(h, decl, value, out);
  }
  if (kind != KILN_KIND_SEQUENCE) return take_tensor(h, decl, value, out);
  if (!PyList_Check(value) && !PyTuple_Check(value)) {
    raise_error(KILN_INVALID_ARGUMENT, "input %s: takes a sequence (a list of arrays), not %s", decl->name,
                Py_TYPE(value)->tp_name);
    return -1;
  }
  PyObject *seq = PySequence_Fast(value, "a sequence");
  if (hold_ref(h, seq) < 0 || !seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  kiln_value *items = hold_block(h, (size_t)n * sizeof(kiln_value));
  if (!items) return -1;
  kiln_value element = {sizeof(kiln_value), decl->name, decl->dtype, -1, NULL, NULL, 0, KILN_KIND_TENSOR, 0, NULL};
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
    if ((PyDict_Check(v) ? take_map(h, &element, v, &items[i]) : take_tensor(h, &element, v, &items[i])) < 0)
      return -1;
  }
  out->struct_size = sizeof(kiln_value);
  out->name = decl->name;
  out->dtype = decl->dtype;
  out->kind = KILN_KIND_SEQUENCE;
  out->n_items = (int)n;
  out->items = items;
  return 0;
}

/* Model.run(feeds, outputs=None, threads=0, as_list=False): feeds maps input names to
 * arrays; outputs selects and orders the outputs (None or empty: all, in model order).
 * Returns {name: array} (or the arrays in order with as_list). Names, dtypes, shapes
 * and missing inputs are kiln's to check: its errors name the input and list what the
 * model takes. */
static PyObject *Model_run(ModelObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"feeds", "outputs", "threads", "as_list", NULL};
  PyObject *feeds, *outputs = Py_None;
  int threads = 0, as_list = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Oip:run", kwlist, &feeds, &outputs, &threads, &as_list))
    return NULL;
  if (!PyDict_Check(feeds) && !PyObject_HasAttrString(feeds, "items")) {
    PyErr_Format(PyExc_TypeError, "feeds must be a dict of input name -> array, not %s", Py_TYPE(feeds)->tp_name);
    return NULL;
  }
  if (threads < 0) return raise_error(KILN_INVALID_ARGUMENT, "threads must be >= 0, got %d", threads);

  PyObject *result = NULL, *items = NULL, *out_keys = NULL;
  feed_holder held = {0};
  kiln_value *vals = NULL;
  const char **names = NULL;
  kiln_tensor **outs = NULL;
  Py_ssize_t n = 0, n_out = 0;

  items = PyMapping_Items(feeds);
  if (!items) goto done;
  n = PyList_GET_SIZE(items);
  vals = PyMem_Calloc((size_t)n + 1, sizeof(kiln_value));
  if (!vals) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyList_GET_ITEM(items, i);
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
      PyErr_SetString(PyExc_TypeError, "feeds.items() must give (name, array) pairs");
      goto done;
    }
    PyObject *key = PyTuple_GET_ITEM(item, 0);
    if (!PyUnicode_Check(key)) {
      PyErr_Format(PyExc_TypeError, "feed names must be str, not %s", Py_TYPE(key)->tp_name);
      goto done;
    }
    const char *name = PyUnicode_AsUTF8(key);
    if (!name) goto done;
    const kiln_value *decl = declared_input(self, key);
    kiln_value named = KILN_VALUE_INIT;
    if (decl) named = *decl;
    else named.rank = -1;
    named.name = name; /* the feed's own spelling (a declared name may differ by ":0") */
    if (take_value(&held, &named, PyTuple_GET_ITEM(item, 1), &vals[i]) < 0) goto done;
  }

  /* Outputs: None (or empty) means all of them in model order; a str is one name. */
  if (outputs == Py_None) out_keys = NULL;
  else if (PyUnicode_Check(outputs)) out_keys = PyTuple_Pack(1, outputs);
  else if (!(out_keys = PySequence_Tuple(outputs))) goto done;
  if (out_keys && PyTuple_GET_SIZE(out_keys) == 0) Py_CLEAR(out_keys);
  n_out = out_keys ? PyTuple_GET_SIZE(out_keys) : self->n_out;
  outs = PyMem_Calloc((size_t)n_out + 1, sizeof(kiln_tensor *));
  names = PyMem_Calloc((size_t)n_out + 1, sizeof(char *));
  if (!outs || !names) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t j = 0; out_keys && j < n_out; j++) {
    PyObject *key = PyTuple_GET_ITEM(out_keys, j);
    if (!PyUnicode_Check(key)) {
      PyErr_Format(PyExc_TypeError, "output names must be str, not %s", Py_TYPE(key)->tp_name);
      goto done;
    }
    if (!(names[j] = PyUnicode_AsUTF8(key))) goto done;
  }
  if (!out_keys) {
    out_keys = Py_NewRef(self->out_names);
    for (Py_ssize_t j = 0; j < n_out; j++) names[j] = self->out_info[j].name;
  }

  kiln_run_options ro = KILN_RUN_OPTIONS_INIT;
  ro.threads = threads;
  kiln_status s;
  kiln_model *model = self->model;
  const char *const *run_names = out_keys == self->out_names ? NULL : names;
  Py_INCREF(self); /* the model must outlive the run whatever other threads drop */
  Py_BEGIN_ALLOW_THREADS
  s = kiln_model_run(model, threads ? &ro : NULL, (int)n, vals, (int)n_out, run_names, outs);
  Py_END_ALLOW_THREADS
  Py_DECREF(self);
  holder_release(&held);
  if (s) {
    raise_status(s);
    goto done;
  }
  result = as_list ? PyList_New(n_out) : PyDict_New();
  for (Py_ssize_t j = 0; j < n_out; j++) {
    PyObject *arr = result ? value_of_tensor(outs[j], names[j], NULL) : NULL;
    if (!result) kiln_tensor_free(outs[j]);
    outs[j] = NULL;
    if (!arr) {
      Py_CLEAR(result);
    } else if (as_list) {
      PyList_SET_ITEM(result, j, arr);
    } else {
      if (PyDict_SetItem(result, PyTuple_GET_ITEM(out_keys, j), arr) < 0) Py_CLEAR(result);
      Py_DECREF(arr);
    }
  }

done:
  holder_release(&held);
  Py_XDECREF(items);
  Py_XDECREF(out_keys);
  PyMem_Free(vals);
  PyMem_Free(names);
  PyMem_Free(outs);
  return result;
}

static PyMethodDef Model_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Model_run, METH_VARARGS | METH_KEYWORDS,
     "run(feeds, outputs=None, threads=0, as_list=False): run the model once."},
    {"inputs", (PyCFunction)Model_inputs, METH_NOARGS, "[(name, dtype code, shape or None, kind name)] of the inputs."},
    {"outputs", (PyCFunction)Model_outputs, METH_NOARGS, "[(name, dtype code, shape or None, kind name)] of the outputs."},
    {"format", (PyCFunction)Model_format, METH_NOARGS, "(format code, format name) of what was loaded."},
    {"stats", (PyCFunction)Model_stats, METH_NOARGS, "kiln_model_get_stats as a dict."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._kiln.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded kiln model (made by _kiln.load; use kiln.Model).",
    .tp_methods = Model_methods,
};

/* --------------------------------------------------------- module functions ---- */

/* kiln calls that may wait on a lock some other kiln call holds while it logs (through
 * a callback that needs the GIL) run without the GIL: loads, runs, stats, devices. */
static PyObject *mod_devices(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  int n = 0;
  kiln_device_info *infos = NULL;
  kiln_status s = NULL;
  Py_BEGIN_ALLOW_THREADS
  n = kiln_device_count();
  infos = PyMem_RawCalloc((size_t)(n > 0 ? n : 0) + 1, sizeof *infos);
  for (int i = 0; infos && i < n && !s; i++) {
    kiln_device_info d = KILN_DEVICE_INFO_INIT;
    s = kiln_device_info_at(i, &d);
    infos[i] = d;
  }
  Py_END_ALLOW_THREADS
  if (!infos) return PyErr_NoMemory();
  if (s) {
    PyMem_RawFree(infos);
    return raise_status(s);
  }
  PyObject *list = PyList_New(0);
  for (int i = 0; list && i < n; i++) {
    const kiln_device_info *d = &infos[i];
    PyObject *item = Py_BuildValue("(sisNzs)", d->name ? d->name : "", d->priority,
                                   d->description ? d->description : "", PyBool_FromLong(d->available), d->reason,
                                   d->source ? d->source : "");
    if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
    Py_XDECREF(item);
  }
  PyMem_RawFree(infos);
  return list;
}

static PyObject *mod_option_keys(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  int n = kiln_options_key_count();
  PyObject *list = PyList_New(0);
  for (int i = 0; list && i < n; i++) {
    const char *help = NULL;
    const char *key = kiln_options_key(i, &help);
    if (!key) continue;
    PyObject *item = Py_BuildValue("(ss)", key, help ? help : "");
    if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
    Py_XDECREF(item);
  }
  return list;
}

static PyObject *mod_dtype_info(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  /* {code: (name, itemsize)} for every kiln dtype, so Python needs no copy of the enum. */
  PyObject *d = PyDict_New();
  static const int codes[] = {KILN_BOOL,           KILN_INT8,           KILN_INT16,          KILN_INT32,
                               KILN_INT64,          KILN_UINT8,          KILN_UINT16,         KILN_UINT32,
                               KILN_UINT64,         KILN_FLOAT16,        KILN_BFLOAT16,       KILN_FLOAT32,
                               KILN_FLOAT64,        KILN_COMPLEX64,      KILN_COMPLEX128,     KILN_FLOAT8E4M3FN,
                               KILN_FLOAT8E4M3FNUZ, KILN_FLOAT8E5M2,     KILN_FLOAT8E5M2FNUZ, KILN_FLOAT4E2M1FN,
                               KILN_INT4,           KILN_UINT4,          KILN_INT2,           KILN_UINT2,
                               KILN_FLOAT8E8M0FNU,  KILN_STRING};
  for (size_t i = 0; d && i < sizeof codes / sizeof codes[0]; i++) {
    int c = codes[i];
    PyObject *k = PyLong_FromLong(c);
    PyObject *v = Py_BuildValue("(sn)", kiln_dtype_name((kiln_dtype)c), (Py_ssize_t)kiln_dtype_size((kiln_dtype)c));
    if (!k || !v || PyDict_SetItem(d, k, v) < 0) Py_CLEAR(d);
    Py_XDECREF(k);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *mod_set_hooks(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *convert, *wrap;
  if (!PyArg_ParseTuple(args, "OO:_set_hooks", &convert, &wrap)) return NULL;
  Py_XSETREF(g_convert_feed, Py_NewRef(convert));
  Py_XSETREF(g_wrap_output, Py_NewRef(wrap));
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"load", mod_load, METH_VARARGS, "load(source, is_path, format, options, log) -> Model"},
    {"devices", mod_devices, METH_NOARGS, "[(name, priority, description, available, reason, source)]"},
    {"option_keys", mod_option_keys, METH_NOARGS, "[(key, help)] of every kiln_options_set key"},
    {"dtype_info", mod_dtype_info, METH_NOARGS, "{dtype code: (name, itemsize)}"},
    {"_set_hooks", mod_set_hooks, METH_VARARGS, "_set_hooks(convert_feed, wrap_output)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kiln._kiln", "kiln's C API for Python (use the kiln package).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kiln(void) {
  if (PyType_Ready(&ModelType) < 0 || PyType_Ready(&TensorBufferType) < 0) return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (make_errors(m) < 0 || PyModule_AddStringConstant(m, "version", kiln_version()) < 0 ||
      PyModule_AddIntConstant(m, "version_number", kiln_version_number()) < 0 ||
      PyModule_AddIntConstant(m, "header_version_number",
                              KILN_VERSION_MAJOR * 10000 + KILN_VERSION_MINOR * 100 + KILN_VERSION_PATCH) < 0 ||
      PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
