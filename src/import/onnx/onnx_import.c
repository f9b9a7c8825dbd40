/* ONNX importer entry points: file reading, protobuf decoding and model-level checks.
 *
 * The model is decoded whole with protobuf-c (code generated at build time from the
 * system's onnx.proto, see cmake/import_deps.cmake) after a wire-format walk has
 * bounded its nesting (onnx_wire.c). The ModelProto is checked for what the graph
 * converter relies on -- a main graph, a supported default-domain opset -- and every
 * error leaves with the model's path in front, so a user sees which file, then which
 * node, attribute or tensor. */
#include "import/onnx/onnx_import.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/strbuf.h"
#include "import/onnx/onnx_internal.h"

/* Model files over this size are refused before reading (protobuf caps a message at
 * 2 GiB; bigger weights belong in external data). */
#define ONNX_MAX_FILE_BYTES ((int64_t)2 << 30)

int64_t onnx_import_lean_min_file = (int64_t)8 << 20;
int64_t onnx_import_lean_min_payload = (int64_t)64 << 10;

int64_t onnx_import_max_inlined_nodes = (int64_t)1 << 20;

static kiln_status collect_opsets(onnx_ctx *ctx) {
  const Onnx__ModelProto *m = ctx->model;
  ctx->domains = calloc(m->n_opset_import + 1, sizeof *ctx->domains);
  if (!ctx->domains) abort();
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    const char *domain = onnx_str(o->domain);
    int64_t version = o->has_version ? o->version : 0;
    if (!*domain || strcmp(domain, "ai.onnx") == 0) {
      if (ctx->opset && ctx->opset != version)
        return ERR_INVALID("opset_import names the default domain twice (versions %" PRId64 " and %" PRId64 ")",
                           ctx->opset, version);
      if (version < ONNX_IMPORT_MIN_OPSET || version > ONNX_IMPORT_MAX_OPSET)
        return ERR_UNIMPLEMENTED("default-domain opset %" PRId64 " is not supported (kiln knows the ops of opsets %d to %d)",
                                 version, ONNX_IMPORT_MIN_OPSET, ONNX_IMPORT_MAX_OPSET);
      ctx->opset = version;
    } else {
      ctx->domains[ctx->n_domains++] = (onnx_domain_opset){domain, version};
    }
  }
  /* Before IR version 3 a model named no opsets: its ops are opset 1's. */
  if (!m->n_opset_import && m->has_ir_version && m->ir_version < 3) ctx->opset = 1;
  return NULL;
}

/* *owned (may be NULL) is the caller's heap copy of data, freed (and cleared) once protobuf-c
 * has copied what it needs, so a big model is not held three times over. */
static kiln_status import_model(onnx_ctx *ctx, const void *data, size_t len, void **owned, onnx_lean *lean,
                                graph **out) {
  if (len == 0) return ERR_INVALID("empty file: not an ONNX model");
  kiln_status s = onnx_check_nesting(data, len);
  if (s) return status_wrap(s, "not a valid ONNX model");
  /* A mapped file: decode the lean copy, the weights stay in the mapping (onnx_lean.c). */
  if (ctx->map && onnx_lean_build(data, len, (size_t)onnx_import_lean_min_payload, lean)) {
    ctx->model = onnx__model_proto__unpack(NULL, lean->wire_len, lean->wire);
    free(lean->wire);
    lean->wire = NULL;
    if (ctx->model && !onnx_lean_attach(lean, ctx->model, data)) {
      onnx__model_proto__free_unpacked(ctx->model, NULL);
      ctx->model = NULL;
    }
  }
  if (!ctx->model) ctx->model = onnx__model_proto__unpack(NULL, len, data);
  free(*owned);
  *owned = NULL;
  if (!ctx->model) return ERR_INVALID("not a valid ONNX model (protobuf decoding of ModelProto failed)");
  if (!ctx->model->graph) return ERR_INVALID("the model has no graph");
  TRY(collect_opsets(ctx));
  ctx->root = graph_new("onnx");
  ctx->root->opset = ctx->opset;
  TRY(onnx_convert_main_graph(ctx, ctx->model->graph));
  s = graph_validate(ctx->root);
  if (s) return status_wrap(s, "internal error: the imported graph does not validate");
  *out = ctx->root;
  ctx->root = NULL;
  return NULL;
}

/* source: the mapped file data[0..len) is (NULL: data is a buffer). */
static kiln_status import_with_ctx(const void *data, size_t len, void *owned, tensor_source *source,
                                   const char *model_path, graph **out) {
  *out = NULL;
  onnx_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  if (source) {
    ctx.map = data;
    ctx.map_len = len;
    ctx.source = source;
  }
  onnx_lean lean;
  memset(&lean, 0, sizeof lean);
  ctx.path = model_path ? model_path : "<buffer>";
  char *dir = NULL;
  if (model_path) {
    const char *slash = strrchr(model_path, '/');
    dir = slash ? strndup(model_path, slash == model_path ? 1 : (size_t)(slash - model_path)) : strdup(".");
    if (!dir) abort();
    ctx.dir = dir;
  }
  void *to_free = owned;
  kiln_status s = import_model(&ctx, data, len, &to_free, &lean, out);
  free(to_free);
  if (ctx.model) {
    onnx_lean_detach(&lean, ctx.model);
    onnx__model_proto__free_unpacked(ctx.model, NULL);
  }
  onnx_lean_free(&lean);
  graph_free(ctx.root);
  free(ctx.domains);
  free(dir);
  return s ? status_wrap(s, "%s", ctx.path) : NULL;
}

kiln_status onnx_import_buffer(const void *data, size_t len, const char *model_path, graph **out) {
  return import_with_ctx(data, len, NULL, NULL, model_path, out);
}

kiln_status onnx_import_file(const char *path, graph **out) {
  *out = NULL;
  /* Large regular files are mapped so their weights are held once (onnx_lean.c), and
   * the mapping stays (a tensor_source, with the file open) as long as a weight read
   * from it may be dropped after compiling and read back. */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= onnx_import_lean_min_file &&
      st.st_size <= ONNX_MAX_FILE_BYTES) {
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    tensor_source *src = map != MAP_FAILED ? tensor_source_new(path, fd, map, (size_t)st.st_size) : NULL;
    if (src) {
      kiln_status s = import_with_ctx(map, (size_t)st.st_size, NULL, src, path, out);
      tensor_source_release(src); /* the weights hold their own references */
      return s;
    }
    if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
    close(fd);
  } else if (fd >= 0) {
    close(fd);
  }
  char *data;
  size_t len;
  TRY(file_read_all(path, "ONNX model", ONNX_MAX_FILE_BYTES, &data, &len));
  return import_with_ctx(data, len, data, false, path, out);
}
