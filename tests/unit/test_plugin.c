/* Plugin loader tests against the throwaway plugins of tests/plugin (built next to this
 * executable, in ./plugin/; the tiny ones are ABI-1 plugins the host adapts, cxx is an
 * ABI-2 plugin): every way a plugin can be incompatible or misbehave must end as an
 * unavailable device with a reason, a compile error that keeps its code (only
 * UNIMPLEMENTED lets the caller fall back, unless allow_plugin_fallback) or a clean
 * execute error — and the process must keep working afterwards. Manifests for the
 * incompatible cases are written to a temporary directory at run time. */
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "backends/backend.h"
#include "backends/plugin/plugin.h"
#include "check.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "kiln/plugin_v1.h"

static char plugin_dir[4096];
static char tmp_dir[] = "/tmp/kiln_test_plugin_XXXXXX";

static void find_dirs(void) {
  if (plugin_dir[0]) return;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) abort();
  exe[n] = 0;
  snprintf(plugin_dir, sizeof plugin_dir, "%s/plugin", dirname(exe));
  if (!mkdtemp(tmp_dir)) abort();
}

static const char *lib_path(const char *mode) {
  static char buf[4][4200];
  static int next;
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], "%s/libtiny_%s.so", plugin_dir, mode);
  return b;
}

static const char *built_manifest(const char *mode) {
  static char buf[4200];
  snprintf(buf, sizeof buf, "%s/tiny_%s.kiln-plugin.json", plugin_dir, mode);
  return buf;
}

/* Writes tmp_dir/NAME.kiln-plugin.json with the given body; returns its path. */
static const char *write_manifest(const char *name, const char *body) {
  static char path[4300];
  snprintf(path, sizeof path, "%s/%s.kiln-plugin.json", tmp_dir, name);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(body, f);
  fclose(f);
  return path;
}

static const char *manifest_for(const char *name, const char *library, int major, int minor) {
  char body[8192];
  snprintf(body, sizeof body,
           "{\"name\": \"%s\", \"library\": \"%s\", \"abi\": {\"major\": %d, \"minor\": %d}, "
           "\"devices\": [\"%s_dev\"], \"priority\": 40}",
           name, library, major, minor, name);
  return write_manifest(name, body);
}

static bool contains(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

static bool library_is_loaded(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

static hlo_module *add_module(void) {
  static const char text[] =
      "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
      "  ROOT r = f32[4] add(a, b)\n}\n";
  hlo_module *m = NULL;
  CHECK_OK(hlo_parse(text, strlen(text), "add", &m));
  CHECK_OK(hlo_verify_module(m));
  return m;
}

static hlo_literal *vec4(float base) {
  hlo_shape s = shape_make(HLO_F32, 1, (int64_t[]){4});
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(&s, &l));
  for (int i = 0; i < 4; i++) literal_set_f64(l, i, base + i);
  return l;
}

/* Compiles (with opts, NULL: defaults) and runs add(a, b) on b; returns the status of
 * the whole run. */
static kiln_status run_add_with(const backend *b, const backend_compile_options *opts, hlo_literal **out) {
  hlo_module *m = add_module();
  backend_executable *e = NULL;
  kiln_status s = b->compile(b, m, opts, &e);
  if (!s) {
    hlo_literal *args[2] = {vec4(0), vec4(10)};
    s = b->execute(e, args, 2, out);
    literal_free(args[0]);
    literal_free(args[1]);
    b->destroy(e);
  }
  hlo_module_free(m);
  return s;
}

static kiln_status run_add(const backend *b, hlo_literal **out) { return run_add_with(b, NULL, out); }

static void test_working_plugin(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("ok"));
  CHECK(plugin_reason(p) == NULL);
  CHECK(plugin_device_count(p) == 1);
  CHECK(strcmp(plugin_device_name(p, 0), "tiny_ok") == 0);
  const backend *b = plugin_device_backend(p, 0);
  CHECK(b && b->priority == 30);
  CHECK(plugin_note(p) == NULL);
  CHECK(strcmp(plugin_abi(p), "1.0 (adapted)") == 0);
  hlo_module *m = add_module();
  CHECK(b->supports(b, m->entry->root));                 /* add f32 */
  hlo_module_free(m);
  static const char vetoed[] =
      "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT veto = f32[4] add(a, a)\n}\n";
  static const char multiply[] =
      "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT r = f32[4] multiply(a, a)\n}\n";
  CHECK_OK(hlo_parse(vetoed, strlen(vetoed), "vetoed", &m));
  CHECK(!b->supports(b, m->entry->root)); /* instruction_supported said no */
  CHECK(b->supports(b, m->entry->params[0]));
  hlo_module_free(m);
  CHECK_OK(hlo_parse(multiply, strlen(multiply), "multiply", &m));
  CHECK(!b->supports(b, m->entry->root)); /* not in the op matrix */
  hlo_module_free(m);
  hlo_literal *out = NULL;
  CHECK_OK(run_add(b, &out));
  CHECK(out && literal_get_f64(out, 3) == 16.0);
  literal_free(out);
  plugin_free(p);
}

static void test_abi_major_mismatch_never_opens_library(void) {
  find_dirs();
  const char *lib = lib_path("extra_export");
  plugin *p = plugin_load(manifest_for("major", lib, 3, 0));
  CHECK(contains(plugin_reason(p), "incompatible ABI major 3"));
  CHECK(strcmp(plugin_abi(p), "3.0") == 0);
  CHECK(plugin_device_backend(p, 0) == NULL);
  CHECK(plugin_device_count(p) == 1 && strcmp(plugin_device_name(p, 0), "major_dev") == 0);
  CHECK(!library_is_loaded(lib));
  plugin_free(p);
}

static void test_newer_minor_rejected(void) {
  find_dirs();
  const char *lib = lib_path("extra_export");
  plugin *p = plugin_load(manifest_for("minor", lib, 1, KILN_PLUGIN_V1_API_MINOR + 1));
  CHECK(contains(plugin_reason(p), "newer than the host"));
  CHECK(!library_is_loaded(lib));
  plugin_free(p);
  p = plugin_load(manifest_for("minor2", lib, 2, KILN_PLUGIN_API_MINOR + 1));
  CHECK(contains(plugin_reason(p), "newer than the host"));
  CHECK(!library_is_loaded(lib));
  plugin_free(p);
  /* An older (or equal) minor is fine. */
  p = plugin_load(manifest_for("same_minor", lib_path("ok"), 1, 0));
  CHECK(plugin_reason(p) == NULL);
  plugin_free(p);
}

static void test_missing_library(void) {
  find_dirs();
  plugin *p = plugin_load(manifest_for("gone", "libdoes_not_exist.so", 1, 0));
  CHECK(contains(plugin_reason(p), "missing"));
  CHECK(plugin_device_backend(p, 0) == NULL);
  plugin_free(p);
}

static void test_bad_manifests(void) {
  find_dirs();
  plugin *p = plugin_load(write_manifest("syntax", "{\"name\": \"x\",}"));
  CHECK(contains(plugin_reason(p), "bad manifest"));
  CHECK(plugin_device_count(p) == 0);
  plugin_free(p);
  p = plugin_load(write_manifest("types", "{\"name\": \"x\", \"library\": 3, \"abi\": {\"major\": 1, \"minor\": 0}, "
                                          "\"devices\": [\"d\"]}"));
  CHECK(contains(plugin_reason(p), "library"));
  plugin_free(p);
  p = plugin_load(write_manifest("nodev", "{\"name\": \"x\", \"library\": \"l.so\", \"abi\": {\"major\": 1, "
                                          "\"minor\": 0}, \"devices\": []}"));
  CHECK(contains(plugin_reason(p), "at least one device"));
  plugin_free(p);
  p = plugin_load("/nonexistent/dir/x.kiln-plugin.json");
  CHECK(contains(plugin_reason(p), "cannot open manifest"));
  plugin_free(p);
}

static void test_missing_entry_symbol(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("no_entry"));
  CHECK(contains(plugin_reason(p), "does not export kiln_plugin_init"));
  CHECK(plugin_device_backend(p, 0) == NULL);
  plugin_free(p);
}

static void test_init_error(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("init_error"));
  CHECK(contains(plugin_reason(p), "init failed: no tiny device present"));
  CHECK(plugin_device_backend(p, 0) == NULL);
  plugin_free(p);
}

static void test_older_table_works(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("old_table"));
  CHECK(plugin_reason(p) == NULL);
  CHECK(contains(plugin_note(p), "older plugin table"));
  const backend *b = plugin_device_backend(p, 0);
  CHECK(b != NULL);
  if (b) {
    /* op_supported lies beyond the old table: unused, so everything is "supported". */
    static const char multiply[] =
        "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT veto = f32[4] multiply(a, a)\n}\n";
    hlo_module *m = NULL;
    CHECK_OK(hlo_parse(multiply, strlen(multiply), "multiply", &m));
    CHECK(b->supports(b, m->entry->root));
    hlo_module_free(m);
    hlo_literal *out = NULL;
    CHECK_OK(run_add(b, &out));
    CHECK(out && literal_get_f64(out, 0) == 10.0);
    literal_free(out);
  }
  plugin_free(p);
}

/* A compile failing with INTERNAL keeps its code (the run fails); with
 * allow_plugin_fallback it becomes UNIMPLEMENTED so the caller places the work
 * elsewhere. */
static void test_internal_compile_error_keeps_its_code(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("compile_error"));
  const backend *b = plugin_device_backend(p, 0);
  CHECK(b != NULL);
  if (b) {
    hlo_literal *out = NULL;
    kiln_status s = run_add(b, &out);
    CHECK(s && kiln_status_code(s) == KILN_INTERNAL);
    CHECK(s && strcmp(kiln_status_message(s),
                      "device tiny_compile_error: compile failed: tiny compiler crashed politely") == 0);
    kiln_status_free(s);
    CHECK(out == NULL);
    backend_compile_options o = backend_compile_options_default();
    o.allow_plugin_fallback = true;
    s = run_add_with(b, &o, &out);
    CHECK(s && kiln_status_code(s) == KILN_UNIMPLEMENTED);
    CHECK(s && contains(kiln_status_message(s), "compile failed (INTERNAL)"));
    CHECK(s && contains(kiln_status_message(s), "tiny compiler crashed politely"));
    kiln_status_free(s);
    CHECK(out == NULL);
  }
  plugin_free(p);
}

/* UNIMPLEMENTED from the plugin's compile stays UNIMPLEMENTED: "not on this device". */
static void test_unimplemented_compile_falls_back(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("compile_unimplemented"));
  const backend *b = plugin_device_backend(p, 0);
  CHECK(b != NULL);
  if (b) {
    hlo_literal *out = NULL;
    kiln_status s = run_add(b, &out);
    CHECK(s && kiln_status_code(s) == KILN_UNIMPLEMENTED);
    CHECK(s && contains(kiln_status_message(s), "tiny device does not do this module"));
    kiln_status_free(s);
    CHECK(out == NULL);
  }
  plugin_free(p);
}

/* The C++ ABI-2 plugin loads as ABI 2.0 and runs add; two loads are two clients in one
 * process, each with its own state. */
static void test_abi2_cxx_plugin(void) {
  find_dirs();
  char manifest[4200];
  snprintf(manifest, sizeof manifest, "%s/cxx.kiln-plugin.json", plugin_dir);
  if (access(manifest, R_OK) != 0) return; /* no C++ compiler in this build */
  plugin *p = plugin_load(manifest), *q = plugin_load(manifest);
  CHECK(plugin_reason(p) == NULL && plugin_reason(q) == NULL);
  CHECK(strcmp(plugin_abi(p), "2.0") == 0);
  for (int k = 0; k < 2; k++) {
    const backend *b = plugin_device_backend(k ? q : p, 0);
    hlo_literal *out = NULL;
    CHECK_OK(run_add(b, &out));
    CHECK(out && literal_get_f64(out, 3) == 16.0);
    literal_free(out);
  }
  plugin_free(q);
  plugin_free(p);
}

/* A large constant is uploaded at compile time; the plugin refusing the upload is a
 * compile failure judged by its code (tiny answers UNIMPLEMENTED for non-f32 buffers),
 * and nothing leaks on the way out. */
static void test_resident_constant_upload_failure(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("ok"));
  const backend *b = plugin_device_backend(p, 0);
  CHECK(b != NULL);
  if (b) {
    char text[16384];
    int n = snprintf(text, sizeof text, "HloModule m\nENTRY e {\n  a = s32[1024] parameter(0)\n  c = s32[1024] constant({");
    for (int i = 0; i < 1024; i++) n += snprintf(text + n, sizeof text - (size_t)n, "%s%d", i ? "," : "", i % 10);
    snprintf(text + n, sizeof text - (size_t)n, "})\n  ROOT r = s32[1024] add(a, c)\n}\n");
    hlo_module *m = NULL;
    CHECK_OK(hlo_parse(text, strlen(text), "big", &m));
    backend_executable *e = NULL;
    kiln_status s = m ? b->compile(b, m, NULL, &e) : NULL;
    CHECK(s && kiln_status_code(s) == KILN_UNIMPLEMENTED);
    CHECK(s && contains(kiln_status_message(s), "tiny speaks f32 only"));
    kiln_status_free(s);
    CHECK(e == NULL);
    hlo_module_free(m);
  }
  plugin_free(p);
}

/* The public API's allow_plugin_fallback option reaches the compile options. */
static void test_allow_plugin_fallback_option(void) {
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  if (!o) return;
  CHECK(!api_compile_options(o).allow_plugin_fallback);
  CHECK_OK(kiln_options_set(o, "allow_plugin_fallback", "true"));
  CHECK(api_compile_options(o).allow_plugin_fallback);
  const char *v = NULL;
  CHECK_OK(kiln_options_get(o, "allow_plugin_fallback", &v));
  CHECK(v && strcmp(v, "true") == 0);
  kiln_options_free(o);
}

/* An ABI-2 table with a NULL mandatory entry is refused and the library unloaded. */
static void test_abi2_null_mandatory_entry_refused(void) {
  find_dirs();
  char manifest[4200], lib[4200];
  snprintf(manifest, sizeof manifest, "%s/cxx_null_entry.kiln-plugin.json", plugin_dir);
  snprintf(lib, sizeof lib, "%s/libcxx_null_entry.so", plugin_dir);
  if (access(manifest, R_OK) != 0) return; /* no C++ compiler in this build */
  plugin *p = plugin_load(manifest);
  CHECK(contains(plugin_reason(p), "mandatory entry buffer_shape is NULL"));
  CHECK(plugin_device_backend(p, 0) == NULL);
  CHECK(!library_is_loaded(lib));
  plugin_free(p);
}

static void test_execute_error_is_clean(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("exec_error"));
  const backend *b = plugin_device_backend(p, 0);
  CHECK(b != NULL);
  if (b) {
    hlo_literal *out = NULL;
    CHECK_ERR(run_add(b, &out), "device tiny_exec_error: execute failed: tiny device fell over");
    CHECK(out == NULL);
  }
  plugin_free(p);
  /* The process is still healthy: another plugin still runs. */
  p = plugin_load(built_manifest("ok"));
  hlo_literal *out = NULL;
  CHECK_OK(run_add(plugin_device_backend(p, 0), &out));
  literal_free(out);
  plugin_free(p);
}

static void test_registry_lists_unavailable_and_orders_by_priority(void) {
  find_dirs();
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/reg", tmp_dir);
  CHECK(mkdir(dir, 0777) == 0);
  char path[4400], body[8192];
  snprintf(path, sizeof path, "%s/ok.kiln-plugin.json", dir);
  snprintf(body, sizeof body,
           "{\"name\": \"ok\", \"library\": \"%s\", \"abi\": {\"major\": 1, \"minor\": 0}, \"devices\": [\"tiny_ok\"], "
           "\"priority\": 30}",
           lib_path("ok"));
  FILE *f = fopen(path, "w");
  fputs(body, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/bad.kiln-plugin.json", dir);
  snprintf(body, sizeof body,
           "{\"name\": \"bad\", \"library\": \"%s\", \"abi\": {\"major\": 9, \"minor\": 0}, \"devices\": [\"nine\"], "
           "\"priority\": 5}",
           lib_path("ok"));
  f = fopen(path, "w");
  fputs(body, f);
  fclose(f);
  setenv("KILN_PLUGIN_PATH", dir, 1);
  backend_registry_reset();
  CHECK(backend_entry_count() == 4);
  CHECK(strcmp(backend_entry_at(0)->name, "cpu") == 0);         /* built-in, priority 50 */
  CHECK(strcmp(backend_entry_at(1)->name, "tiny_ok") == 0);     /* priority 30 */
  CHECK(strcmp(backend_entry_at(2)->name, "interpreter") == 0); /* 10 */
  const backend_entry *e = backend_entry_find("nine");
  CHECK(e && e->backend == NULL && contains(e->reason, "incompatible ABI major 9"));
  CHECK(backend_find("nine") == NULL);
  CHECK(backend_find("tiny_ok") != NULL);
  CHECK(backend_count() == 3 && backend_at(1) == backend_find("tiny_ok"));
  CHECK(plugin_registry_count() == 2);
  unsetenv("KILN_PLUGIN_PATH");
  backend_registry_reset();
  CHECK(backend_entry_count() == 2); /* the built-ins: cpu and interpreter */
  backend_registry_reset();
}

static void test_extra_exports_flagged(void) {
  find_dirs();
  plugin *p = plugin_load(built_manifest("extra_export"));
  CHECK(plugin_reason(p) == NULL); /* still usable under RTLD_LOCAL, but flagged */
  CHECK(contains(plugin_note(p), "exports 1 symbol besides kiln_plugin_init (first: tiny_leaked_helper)"));
  plugin_free(p);
}

/* backend_registry_add_plugins after discovery: a manifest makes its device findable,
 * adding it again (or under another spelling of its path) registers nothing, a
 * directory adds its manifests, and entries handed out earlier stay valid when an added
 * device sorts before them. */
static void test_add_plugins(void) {
  find_dirs();
  unsetenv("KILN_PLUGIN_PATH");
  backend_registry_reset();
  CHECK(backend_entry_count() == 2); /* discovered: the built-ins only */
  const backend_entry *cpu_entry = backend_entry_find("cpu");
  const backend *interpreter = backend_find("interpreter");
  CHECK(backend_find("tiny_ok") == NULL);
  const char *ok = built_manifest("ok");
  backend_registry_add_plugins(0, NULL, 1, &ok);
  CHECK(backend_find("tiny_ok") != NULL);
  CHECK(plugin_registry_count() == 1 && backend_entry_count() == 3);
  char again[4400];
  snprintf(again, sizeof again, "%s/./tiny_ok.kiln-plugin.json", plugin_dir);
  const char *twice[2] = {ok, again};
  backend_registry_add_plugins(0, NULL, 2, twice);
  CHECK(plugin_registry_count() == 1 && backend_entry_count() == 3);

  /* A directory with one manifest whose device outranks cpu. */
  char dir[4300], path[4400], body[8192];
  snprintf(dir, sizeof dir, "%s/add", tmp_dir);
  CHECK(mkdir(dir, 0777) == 0);
  snprintf(path, sizeof path, "%s/first.kiln-plugin.json", dir);
  snprintf(body, sizeof body,
           "{\"name\": \"first\", \"library\": \"%s\", \"abi\": {\"major\": 1, \"minor\": 0}, "
           "\"devices\": [\"tiny_exec_error\"], \"priority\": 60}",
           lib_path("exec_error"));
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(body, f);
  fclose(f);
  const char *dirs[1] = {dir};
  backend_registry_add_plugins(1, dirs, 0, NULL);
  CHECK(plugin_registry_count() == 2 && backend_entry_count() == 4);
  CHECK(strcmp(backend_entry_at(0)->name, "tiny_exec_error") == 0);
  CHECK(backend_at(0) == backend_find("tiny_exec_error"));
  CHECK(backend_entry_find("cpu") == cpu_entry && strcmp(cpu_entry->name, "cpu") == 0);
  CHECK(backend_find("interpreter") == interpreter);
  backend_registry_add_plugins(1, dirs, 1, &ok);
  CHECK(plugin_registry_count() == 2);
  backend_registry_reset();
  unlink(path);
  rmdir(dir);
}

static void *add_ok_concurrently(void *arg) {
  const char *ok = arg;
  for (int i = 0; i < 20; i++) {
    backend_registry_add_plugins(0, NULL, 1, &ok);
    if (!backend_find("tiny_ok") || backend_count() != 3) return "tiny_ok missing";
  }
  return NULL;
}

/* Threads discovering and adding the same manifest at once register it once. */
static void test_add_plugins_from_threads(void) {
  find_dirs();
  unsetenv("KILN_PLUGIN_PATH");
  backend_registry_reset();
  pthread_t t[4];
  for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, add_ok_concurrently, (void *)built_manifest("ok")) == 0);
  for (int i = 0; i < 4; i++) {
    void *err = NULL;
    pthread_join(t[i], &err);
    CHECK(err == NULL);
  }
  CHECK(plugin_registry_count() == 1);
  backend_registry_reset();
}

/* Removes what the tests wrote under tmp_dir. */
static void test_cleanup(void) {
  find_dirs();
  static const char *const names[] = {"major", "minor", "minor2", "same_minor", "gone", "syntax", "types", "nodev",
                                      "reg/ok", "reg/bad"};
  char path[4400];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s.kiln-plugin.json", tmp_dir, names[i]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/reg", tmp_dir);
  rmdir(path);
  CHECK(rmdir(tmp_dir) == 0);
}

TEST_MAIN(TEST(test_working_plugin), TEST(test_abi_major_mismatch_never_opens_library),
          TEST(test_newer_minor_rejected), TEST(test_missing_library), TEST(test_bad_manifests),
          TEST(test_missing_entry_symbol), TEST(test_init_error), TEST(test_older_table_works),
          TEST(test_internal_compile_error_keeps_its_code), TEST(test_unimplemented_compile_falls_back),
          TEST(test_abi2_cxx_plugin), TEST(test_abi2_null_mandatory_entry_refused),
          TEST(test_resident_constant_upload_failure), TEST(test_allow_plugin_fallback_option), TEST(test_execute_error_is_clean),
          TEST(test_registry_lists_unavailable_and_orders_by_priority), TEST(test_extra_exports_flagged),
          TEST(test_add_plugins), TEST(test_add_plugins_from_threads), TEST(test_cleanup))
