/* The importer dispatcher (see import.h): extension first, then a look at the first
 * bytes, then the format's own importer. Sniffing reads at most 64 bytes, so it is
 * cheap and safe on any file. */
#include "import/import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "import/onnx/onnx_import.h"
#include "import/tf/tf_import.h"

static bool has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcasecmp(path + n - e, ext) == 0;
}

import_format import_detect_buffer_format(const void *data, size_t n) {
  const unsigned char *buf = data;
  size_t i = 0;
  while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')) i++;
  if (i < n && buf[i] == '{') return IMPORT_FORMAT_TFJS;
  if (n >= 9 && memcmp(buf, "HloModule", 9) == 0) return IMPORT_FORMAT_UNKNOWN;
  if (n >= 2 && buf[0] == 0x08) return IMPORT_FORMAT_ONNX;        /* field 1, varint */
  if (n >= 2 && buf[0] == 0x0a) return IMPORT_FORMAT_TF_GRAPHDEF; /* field 1, length-delimited */
  return IMPORT_FORMAT_UNKNOWN;
}

static import_format sniff(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return IMPORT_FORMAT_UNKNOWN;
  unsigned char buf[64];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return import_detect_buffer_format(buf, n);
}

/* A SavedModel is a directory; saved_model.pb inside it is named too, as users do. */
static bool is_savedmodel(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return true;
  const char *base = strrchr(path, '/');
  return strcmp(base ? base + 1 : path, "saved_model.pb") == 0;
}

import_format import_detect_format(const char *path) {
  if (is_savedmodel(path)) return IMPORT_FORMAT_TF_SAVEDMODEL;
  if (has_ext(path, ".onnx")) return IMPORT_FORMAT_ONNX;
  if (has_ext(path, ".pb")) return IMPORT_FORMAT_TF_GRAPHDEF;
  if (has_ext(path, ".json")) return IMPORT_FORMAT_TFJS;
  if (has_ext(path, ".graph")) return IMPORT_FORMAT_GRAPH_TEXT;
  if (has_ext(path, ".hlo") || has_ext(path, ".txt")) return IMPORT_FORMAT_UNKNOWN;
  return sniff(path);
}

const char *import_format_name(import_format f) {
  switch (f) {
    case IMPORT_FORMAT_ONNX: return "ONNX";
    case IMPORT_FORMAT_TF_GRAPHDEF: return "TensorFlow GraphDef";
    case IMPORT_FORMAT_TFJS: return "TF.js graph model";
    case IMPORT_FORMAT_GRAPH_TEXT: return "kiln graph text";
    case IMPORT_FORMAT_TF_SAVEDMODEL: return "TensorFlow SavedModel";
    case IMPORT_FORMAT_UNKNOWN: break;
  }
  return "unknown";
}

/* The SavedModel's directory, whether the path names it or its saved_model.pb. */
static kiln_status import_savedmodel(const char *path, const char *signature, graph **out) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return tf_import_savedmodel(path, signature, out, NULL);
  const char *slash = strrchr(path, '/');
  if (!slash) return tf_import_savedmodel(".", signature, out, NULL);
  size_t n = (size_t)(slash - path);
  char *dir = malloc(n + 2);
  if (!dir) abort();
  memcpy(dir, path, n);
  dir[n] = 0;
  if (!n) strcpy(dir, "/");
  kiln_status s = tf_import_savedmodel(dir, signature, out, NULL);
  free(dir);
  return s;
}

kiln_status import_model_file(const char *path, graph **out) { return import_model_file_signature(path, NULL, out); }

kiln_status import_model_file_signature(const char *path, const char *signature, graph **out) {
  *out = NULL;
  switch (import_detect_format(path)) {
    case IMPORT_FORMAT_TF_SAVEDMODEL: return import_savedmodel(path, signature, out);
    case IMPORT_FORMAT_ONNX: return onnx_import_file(path, out);
    case IMPORT_FORMAT_TF_GRAPHDEF: return tf_import_graphdef_file(path, out);
    case IMPORT_FORMAT_TFJS: return tfjs_import_file(path, out);
    case IMPORT_FORMAT_GRAPH_TEXT: return graph_parse_file(path, out);
    case IMPORT_FORMAT_UNKNOWN: break;
  }
  return ERR_INVALID("%s: not a model kiln can read (expected an ONNX model .onnx, a TensorFlow GraphDef .pb, a "
                     "SavedModel directory or a TF.js model.json)",
                     path);
}

kiln_status import_model_buffer(const void *data, size_t len, import_format format, const char *name, graph **out) {
  *out = NULL;
  if (format == IMPORT_FORMAT_UNKNOWN) format = import_detect_buffer_format(data, len);
  switch (format) {
    case IMPORT_FORMAT_ONNX: return onnx_import_buffer(data, len, NULL, out);
    case IMPORT_FORMAT_TF_GRAPHDEF: return tf_import_graphdef_buffer(data, len, name, out);
    case IMPORT_FORMAT_GRAPH_TEXT: return graph_parse(data, len, name, out);
    case IMPORT_FORMAT_TF_SAVEDMODEL:
      return ERR_INVALID("%s: a SavedModel is read from its directory (saved_model.pb and variables/), not from "
                         "memory",
                         name);
    case IMPORT_FORMAT_TFJS:
      return ERR_INVALID("%s: a TF.js graph model is read from its model.json file (it names its weight shards "
                         "beside it), not from memory",
                         name);
    case IMPORT_FORMAT_UNKNOWN: break;
  }
  return ERR_INVALID("%s: %zu bytes that are not a model kiln can read from memory (expected an ONNX ModelProto or a "
                     "TensorFlow GraphDef)",
                     name, len);
}
