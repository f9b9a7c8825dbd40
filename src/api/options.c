/* kiln_options: the embedder's equivalent of the `kiln` command's flags.
 *
 * One table lists every key with its type, its field and a line of help; set, get,
 * clone and the key listing all walk it, so a key cannot be settable and missing from
 * the listing. Keys use the flag names (`kiln flags`), values the flag syntax, so a
 * program can pass a user's `--jit_ops=...` straight through. The options end up in
 * the internal option structs (jit_options for the bridge, backend_compile_options for
 * the pass pipeline and plugins) that the libraries take instead of reading flags. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_internal.h"
#include "base/status.h"
#include "base/strbuf.h"

typedef enum opt_type { OPT_STRING, OPT_INT, OPT_BOOL, OPT_LIST, OPT_JIT, OPT_LOG_LEVEL, OPT_FORMAT } opt_type;

typedef struct opt_key {
  const char *name;
  opt_type type;
  size_t offset;
  int64_t min, max; /* OPT_INT */
  const char *help;
} opt_key;

#define F(field) offsetof(kiln_options, field)
static const opt_key keys[] = {
    {"device", OPT_STRING, F(device), 0, 0,
     "device to run on; \"\": HLO on cpu, a model's nodes on the highest-priority device that supports them"},
    {"jit", OPT_JIT, F(jit), 0, 0, "auto (cluster and compile just in time) or off (op by op)"},
    {"threads", OPT_INT, F(threads), 0, 4096, "cpu worker threads; 0: all cores"},
    {"dump_to", OPT_STRING, F(dump_to), 0, 0, "directory for module and graph dumps; \"\": none"},
    {"dump_pass_re", OPT_STRING, F(dump_pass_re), 0, 0, "POSIX extended regex: dump after the passes it matches"},
    {"dump_large_constants", OPT_BOOL, F(dump_large_constants), 0, 0, "print constants over 10 elements in full"},
    {"disable_passes", OPT_STRING, F(disable_passes), 0, 0, "comma-separated HLO pass names to skip"},
    {"jit_ops", OPT_STRING, F(jit_ops), 0, 0, "comma-separated ops the bridge may cluster; \"\": all"},
    {"jit_exclude_ops", OPT_STRING, F(jit_exclude_ops), 0, 0, "comma-separated ops the bridge never clusters"},
    {"min_cluster_size", OPT_INT, F(min_cluster_size), 1, 1000000000, "smallest cluster the bridge keeps"},
    {"max_cluster_size", OPT_INT, F(max_cluster_size), 1, 1000000000, "largest cluster the bridge builds"},
    {"clustering_debug", OPT_BOOL, F(clustering_debug), 0, 0, "log every merge the bridge refuses"},
    {"log_placement", OPT_BOOL, F(log_placement), 0, 0, "print the device each node was placed on"},
    {"no_host_fallback", OPT_BOOL, F(no_host_fallback), 0, 0, "a node its device cannot run is an error"},
    {"profile", OPT_BOOL, F(profile), 0, 0, "cpu: print where each compiled module's time went when released"},
    {"cache_dir", OPT_STRING, F(cache_dir), 0, 0,
     "cpu: directory of the persistent compilation cache (object code reused across processes); \"\": off"},
    {"allow_excess_precision", OPT_BOOL, F(allow_excess_precision), 0, 0,
     "HLO modules on cpu: bf16 arithmetic inside a kernel may skip rounding its intermediates; default true, as "
     "XLA's xla_allow_excess_precision; false: every op rounds, as the evaluator; a model's clusters always round"},
    {"plugin_path", OPT_STRING, F(plugin_path), 0, 0, "colon-separated directories of *.kiln-plugin.json"},
    {"plugin", OPT_LIST, F(plugins), 0, 0, "a plugin manifest to load (adds one per call)"},
    {"plugin_option", OPT_LIST, F(plugin_options), 0, 0, "KEY=VALUE for every plugin compile (adds one per call)"},
    {"allow_plugin_fallback", OPT_BOOL, F(allow_plugin_fallback), 0, 0,
     "a plugin compile failure other than UNIMPLEMENTED falls back to the next device (with a warning)"},
    {"log_level", OPT_LOG_LEVEL, F(log_level), 0, 0, "least severe message delivered: info, warning or error"},
    {"format", OPT_FORMAT, F(format), 0, 0, "auto, onnx, graphdef, tfjs, hlo or graph"},
    {"report", OPT_BOOL, F(report), 0, 0, "keep what the bridge decided, for kiln_model_report"},
    {"inputs", OPT_STRING, F(inputs), 0, 0,
     "comma-separated tensors to feed (name or name:index); \"\": the model's own inputs"},
    {"outputs", OPT_STRING, F(outputs), 0, 0,
     "comma-separated tensors to return (name or name:index); \"\": the model's own outputs"},
    {"signature", OPT_STRING, F(signature), 0, 0, "a SavedModel's SignatureDef to run; \"\": serving_default"},
};
#undef F
#define N_KEYS ((int)(sizeof keys / sizeof keys[0]))

static const char *const format_names[] = {"auto", "onnx", "graphdef", "tfjs", "hlo", "graph", "savedmodel"};
static const char *const level_names[] = {"info", "warning", "error"};

static void *field(kiln_options *o, const opt_key *k) { return (char *)o + k->offset; }
static const void *cfield(const kiln_options *o, const opt_key *k) { return (const char *)o + k->offset; }

static char *dup_or_null(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static bool list_add(api_strlist *l, const char *s) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 4;
    char **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return false;
    l->v = v;
    l->cap = cap;
  }
  char *d = dup_or_null(s);
  if (!d) return false;
  l->v[l->n++] = d;
  return true;
}

static void list_free(api_strlist *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

void kiln_options_free(kiln_options *o) {
  if (!o) return;
  for (int i = 0; i < N_KEYS; i++) {
    if (keys[i].type == OPT_STRING) free(*(char **)field(o, &keys[i]));
    if (keys[i].type == OPT_LIST) list_free(field(o, &keys[i]));
  }
  free(o->get_text);
  free(o);
}

kiln_status kiln_options_create(kiln_options **out) {
  if (!out) return ERR_INVALID("kiln_options_create: out is NULL");
  *out = NULL;
  kiln_options *o = calloc(1, sizeof *o);
  if (!o) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  o->jit = JIT_AUTO;
  o->min_cluster_size = JIT_DEFAULT_MIN_CLUSTER_SIZE;
  o->max_cluster_size = JIT_DEFAULT_MAX_CLUSTER_SIZE;
  o->log_level = LOG_WARNING;
  o->format = KILN_FORMAT_AUTO;
  o->allow_excess_precision = true; /* XLA:CPU's default for the HLO it compiles */
  bool ok = true;
  for (int i = 0; i < N_KEYS && ok; i++) {
    if (keys[i].type != OPT_STRING) continue;
    char **p = field(o, &keys[i]);
    *p = dup_or_null(strcmp(keys[i].name, "dump_pass_re") == 0 ? ".*" : "");
    ok = *p != NULL;
  }
  if (!ok) {
    kiln_options_free(o);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  *out = o;
  return NULL;
}

kiln_status kiln_options_clone(const kiln_options *src, kiln_options **out) {
  if (!out) return ERR_INVALID("kiln_options_clone: out is NULL");
  *out = NULL;
  if (!src) return ERR_INVALID("kiln_options_clone: options handle is NULL");
  kiln_options *o = calloc(1, sizeof *o);
  if (!o) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  *o = *src;
  o->get_text = NULL;
  bool ok = true;
  for (int i = 0; i < N_KEYS; i++) {
    const opt_key *k = &keys[i];
    if (k->type == OPT_STRING) {
      char **p = field(o, k);
      *p = ok ? dup_or_null(*p) : NULL;
      ok = ok && *p;
    } else if (k->type == OPT_LIST) {
      const api_strlist *from = cfield(src, k);
      api_strlist *to = field(o, k);
      memset(to, 0, sizeof *to);
      for (int j = 0; j < from->n && ok; j++) ok = list_add(to, from->v[j]);
    }
  }
  if (!ok) {
    kiln_options_free(o);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  *out = o;
  return NULL;
}

static const opt_key *find_key(const char *name) {
  for (int i = 0; i < N_KEYS; i++)
    if (strcmp(keys[i].name, name) == 0) return &keys[i];
  return NULL;
}

static kiln_status unknown_key(const char *name) {
  strbuf b;
  strbuf_init(&b);
  for (int i = 0; i < N_KEYS; i++) strbuf_printf(&b, "%s%s", i ? ", " : "", keys[i].name);
  kiln_status s = status_error(KILN_NOT_FOUND, "unknown option '%s' (options: %s)", name, strbuf_cstr(&b));
  strbuf_free(&b);
  return s;
}

static int pick(const char *value, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(value, names[i]) == 0) return i;
  return -1;
}

kiln_status kiln_options_set(kiln_options *o, const char *key, const char *value) {
  if (!o) return ERR_INVALID("kiln_options_set: options handle is NULL");
  if (!key) return ERR_INVALID("kiln_options_set: key is NULL");
  const opt_key *k = find_key(key);
  if (!k) return unknown_key(key);
  if (!value) {
    if (k->type != OPT_BOOL) return ERR_INVALID("option %s: value is NULL", key);
    value = "true";
  }
  switch (k->type) {
    case OPT_STRING: {
      char *d = dup_or_null(value);
      if (!d) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
      char **p = field(o, k);
      free(*p);
      *p = d;
      return NULL;
    }
    case OPT_INT: {
      char *end = NULL;
      errno = 0;
      long long v = strtoll(value, &end, 10);
      if (!*value || *end || errno || v < k->min || v > k->max)
        return ERR_INVALID("option %s takes an integer in %lld..%lld (got '%s')", key, (long long)k->min,
                           (long long)k->max, value);
      *(int *)field(o, k) = (int)v;
      return NULL;
    }
    case OPT_BOOL: {
      static const char *const truthy[] = {"true", "1", "yes", "on"};
      static const char *const falsy[] = {"false", "0", "no", "off"};
      if (pick(value, truthy, 4) >= 0) *(bool *)field(o, k) = true;
      else if (pick(value, falsy, 4) >= 0) *(bool *)field(o, k) = false;
      else return ERR_INVALID("option %s takes true or false (got '%s')", key, value);
      return NULL;
    }
    case OPT_LIST:
      if (!*value) return ERR_INVALID("option %s: empty value", key);
      if (k->offset == offsetof(kiln_options, plugin_options) && (!strchr(value, '=') || value[0] == '='))
        return ERR_INVALID("option plugin_option takes KEY=VALUE (got '%s')", value);
      if (!list_add(field(o, k), value)) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    case OPT_JIT:
      if (strcmp(value, "auto") == 0) o->jit = JIT_AUTO;
      else if (strcmp(value, "off") == 0) o->jit = JIT_OFF;
      else return ERR_INVALID("option jit takes auto or off (got '%s')", value);
      return NULL;
    case OPT_LOG_LEVEL: {
      int i = pick(value, level_names, 3);
      if (i < 0) return ERR_INVALID("option log_level takes info, warning or error (got '%s')", value);
      o->log_level = (log_level)i;
      return NULL;
    }
    case OPT_FORMAT: {
      int i = pick(value, format_names, 7);
      if (i < 0)
        return ERR_INVALID("option format takes auto, onnx, graphdef, tfjs, hlo, graph or savedmodel (got '%s')", value);
      o->format = (kiln_format)i;
      return NULL;
    }
  }
  return ERR_INTERNAL("option %s has no type", key);
}

kiln_status kiln_options_get(const kiln_options *o, const char *key, const char **value) {
  if (!o || !key || !value) return ERR_INVALID("kiln_options_get: a NULL argument");
  *value = NULL;
  const opt_key *k = find_key(key);
  if (!k) return unknown_key(key);
  strbuf b;
  strbuf_init(&b);
  switch (k->type) {
    case OPT_STRING: strbuf_append(&b, *(char *const *)cfield(o, k)); break;
    case OPT_INT: strbuf_printf(&b, "%d", *(const int *)cfield(o, k)); break;
    case OPT_BOOL: strbuf_append(&b, *(const bool *)cfield(o, k) ? "true" : "false"); break;
    case OPT_LIST: {
      const api_strlist *l = cfield(o, k);
      for (int i = 0; i < l->n; i++) strbuf_printf(&b, "%s%s", i ? "," : "", l->v[i]);
      break;
    }
    case OPT_JIT: strbuf_append(&b, o->jit == JIT_OFF ? "off" : "auto"); break;
    case OPT_LOG_LEVEL: strbuf_append(&b, level_names[o->log_level]); break;
    case OPT_FORMAT: strbuf_append(&b, format_names[o->format]); break;
  }
  /* The answer lives in the options object (the header promises that), which is why
   * this const getter updates a cache field. */
  kiln_options *w = (kiln_options *)o;
  free(w->get_text);
  w->get_text = strbuf_take(&b);
  *value = w->get_text;
  return NULL;
}

int kiln_options_key_count(void) { return N_KEYS; }

const char *kiln_options_key(int i, const char **help) {
  if (i < 0 || i >= N_KEYS) {
    if (help) *help = NULL;
    return NULL;
  }
  if (help) *help = keys[i].help;
  return keys[i].name;
}

kiln_status kiln_options_set_log_callback(kiln_options *o, kiln_log_fn fn, void *user) {
  if (!o) return ERR_INVALID("kiln_options_set_log_callback: options handle is NULL");
  o->log_fn = fn;
  o->log_user = user;
  return NULL;
}

backend_compile_options api_compile_options(const kiln_options *o) {
  backend_compile_options c = backend_compile_options_default();
  c.dump_to = o->dump_to;
  c.dump_pass_re = o->dump_pass_re;
  c.dump_large_constants = o->dump_large_constants;
  c.disabled_passes = o->disable_passes;
  c.profile = o->profile;
  c.cache_dir = o->cache_dir;
  c.n_plugin_options = o->plugin_options.n;
  c.plugin_options = (const char *const *)o->plugin_options.v;
  c.allow_plugin_fallback = o->allow_plugin_fallback;
  return c;
}

jit_options api_jit_options(const kiln_options *o) {
  jit_options j = jit_options_default();
  j.mode = o->jit;
  j.device = o->device;
  j.jit_ops = o->jit_ops;
  j.jit_exclude_ops = o->jit_exclude_ops;
  j.min_cluster_size = o->min_cluster_size;
  j.max_cluster_size = o->max_cluster_size;
  j.dump_to = o->dump_to;
  j.dump_large_constants = o->dump_large_constants;
  j.clustering_debug = o->clustering_debug;
  j.log_placement = o->log_placement;
  j.no_host_fallback = o->no_host_fallback;
  return j;
}

/* Log messages reach the embedder as kiln_log_level values: the internal levels are
 * the same numbers (checked here once, at compile time). */
_Static_assert((int)LOG_INFO == (int)KILN_LOG_INFO && (int)LOG_WARNING == (int)KILN_LOG_WARNING &&
                   (int)LOG_ERROR == (int)KILN_LOG_ERROR,
               "log levels must match");

static void deliver(void *user, log_level level, const char *message) {
  const kiln_options *o = user;
  o->log_fn(o->log_user, (kiln_log_level)level, message);
}

void api_log_begin(const kiln_options *o, api_log_scope *scope) {
  log_sink s = {o->log_fn ? deliver : NULL, (void *)o, o->log_level};
  log_set_thread_sink(&s, &scope->prev, &scope->had_sink);
}

void api_log_end(const api_log_scope *scope) { log_set_thread_sink(scope->had_sink ? &scope->prev : NULL, NULL, NULL); }
