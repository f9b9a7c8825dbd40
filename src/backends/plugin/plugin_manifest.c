/* Plugin manifests: NAME.kiln-plugin.json beside each plugin library. The host decides
 * from the manifest alone whether a library may be opened, so this reader is strict
 * about types and quotes the offending field in every error. Layout:
 *   {"name": "example", "library": "libkiln_example.so", "abi": {"major": 1, "minor": 0},
 *    "devices": ["example"], "priority": 20, "build": {...free-form...}} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin/plugin.h"
#include "base/arena.h"
#include "base/file.h"
#include "base/json.h"
#include "base/strbuf.h"

static char *dup_string(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (!d) abort();
  memcpy(d, s, n + 1);
  return d;
}

static kiln_status read_small_int(const json_value *v, int lo, int hi, int *out) {
  int64_t i;
  TRY(json_expect_int64(v, &i));
  if (i < lo || i > hi) return json_error_at(v, KILN_INVALID_ARGUMENT, "expected an integer in [%d, %d]", lo, hi);
  *out = (int)i;
  return NULL;
}

static kiln_status parse_manifest(const json_value *root, const char *path, plugin_manifest *m) {
  TRY(json_expect_object(root));
  const json_value *v;
  const char *s;
  TRY(json_expect_member(root, "name", &v));
  TRY(json_expect_string(v, &s, NULL));
  if (!*s) return json_error_at(v, KILN_INVALID_ARGUMENT, "plugin name is empty");
  m->name = dup_string(s);

  TRY(json_expect_member(root, "library", &v));
  TRY(json_expect_string(v, &s, NULL));
  if (!*s) return json_error_at(v, KILN_INVALID_ARGUMENT, "library is empty");
  if (s[0] == '/') {
    m->library = dup_string(s);
  } else {
    const char *slash = strrchr(path, '/');
    strbuf b;
    strbuf_init(&b);
    if (slash) strbuf_appendn(&b, path, (size_t)(slash - path + 1));
    strbuf_append(&b, s);
    m->library = strbuf_take(&b);
  }

  const json_value *abi;
  TRY(json_expect_member(root, "abi", &abi));
  TRY(json_expect_object(abi));
  TRY(json_expect_member(abi, "major", &v));
  TRY(read_small_int(v, 0, 1000000, &m->abi_major));
  TRY(json_expect_member(abi, "minor", &v));
  TRY(read_small_int(v, 0, 1000000, &m->abi_minor));

  const json_value *devs;
  size_t n;
  TRY(json_expect_member(root, "devices", &devs));
  TRY(json_expect_array(devs, &n));
  if (n == 0) return json_error_at(devs, KILN_INVALID_ARGUMENT, "a plugin must declare at least one device");
  if (n > 1024) return json_error_at(devs, KILN_INVALID_ARGUMENT, "too many devices");
  m->devices = calloc(n, sizeof *m->devices);
  if (!m->devices) abort();
  for (size_t i = 0; i < n; i++) {
    TRY(json_expect_string(json_array_at(devs, i), &s, NULL));
    if (!*s) return json_error_at(json_array_at(devs, i), KILN_INVALID_ARGUMENT, "device name is empty");
    m->devices[i] = dup_string(s);
    m->n_devices = (int)i + 1;
  }

  v = json_get(root, "priority");
  m->priority = 0;
  if (v) TRY(read_small_int(v, -1000000, 1000000, &m->priority));

  v = json_get(root, "build");
  if (v) {
    strbuf b;
    strbuf_init(&b);
    kiln_status s2 = json_write(&b, v, false);
    if (s2) {
      strbuf_free(&b);
      return s2;
    }
    m->build_info = strbuf_take(&b);
  }
  return NULL;
}

kiln_status plugin_manifest_read(const char *path, plugin_manifest *out) {
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t len = 0;
  TRY(file_read_all(path, "manifest", 1 << 20, &text, &len));
  arena *a = arena_new();
  json_value *root = NULL;
  kiln_status s = json_parse(a, text, len, path, &root);
  free(text);
  if (!s) s = parse_manifest(root, path, out);
  arena_free(a);
  if (s) {
    plugin_manifest_free(out);
    return s;
  }
  out->path = dup_string(path);
  return NULL;
}

void plugin_manifest_free(plugin_manifest *m) {
  free(m->path);
  free(m->name);
  free(m->library);
  for (int i = 0; i < m->n_devices; i++) free(m->devices[i]);
  free(m->devices);
  free(m->build_info);
  memset(m, 0, sizeof *m);
}
