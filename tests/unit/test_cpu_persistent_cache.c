/* The cpu backend's persistent compilation cache (backend_compile_options.cache_dir,
 * cpu_persist.h): a compile writes an entry, a later compile that misses the in-memory
 * cache (dropped here with cpu_backend_cache_drop_idle, as a new process would start
 * without it) links the stored objects and computes bit-identical results, and every
 * kind of damaged entry (truncated, a flipped byte, a foreign file, another module's
 * entry under this name) is noticed, logged, recompiled and rewritten. A directory that
 * cannot be written is a warning only. Messages are caught with a thread log sink. Its
 * own program, so the counters start at zero. */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_persist.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "check.h"
#include "check_util.h"
#include "hlo/literal.h"

static const char *const MODULE_A =
    "HloModule persist_a\n\nENTRY main {\n  a = f32[256] parameter(0)\n  b = f32[256] parameter(1)\n"
    "  e = f32[256] exponential(a)\n  m = f32[256] multiply(e, b)\n  t = f32[256] tanh(m)\n"
    "  z = f32[] constant(0)\n  s = f32[] reduce(t, z), dimensions={0}, to_apply=sum\n"
    "  bs = f32[256] broadcast(s), dimensions={}\n  ROOT r = f32[256] add(t, bs)\n}\n\n"
    "sum {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n";
static const char *const MODULE_B =
    "HloModule persist_b\n\nENTRY main {\n  a = f32[256] parameter(0)\n  b = f32[256] parameter(1)\n"
    "  l = f32[256] log(a)\n  ROOT r = f32[256] subtract(l, b)\n}\n";

/* A constant array fused into a kernel: the kernel reads it through its address in
 * this process, so the executable must never be persisted. */
static const char *const MODULE_FUSED_CONSTANT =
    "HloModule persist_fused_constant\n\nfused {\n  p0 = f32[256] parameter(0)\n"
    "  k = f32[256] constant({...})\n  m = f32[256] multiply(p0, k)\n  ROOT x = f32[256] exponential(m)\n}\n\n"
    "ENTRY main {\n  a = f32[256] parameter(0)\n  b = f32[256] parameter(1)\n"
    "  f = f32[256] fusion(a), kind=kLoop, calls=fused\n  ROOT r = f32[256] add(f, b)\n}\n";

static strbuf logged;
static void catch_log(void *user, log_level level, const char *message) {
  (void)user;
  strbuf_printf(&logged, "%s: %s\n", level == LOG_WARNING ? "warning" : level == LOG_ERROR ? "error" : "info",
                message);
}

static void logging_on(void) {
  strbuf_free(&logged);
  strbuf_init(&logged);
  log_sink s = {catch_log, NULL, LOG_INFO};
  log_set_thread_sink(&s, NULL, NULL);
}
static void logging_off(void) { log_set_thread_sink(NULL, NULL, NULL); }

typedef struct counts {
  int64_t hits, misses, writes;
} counts;
static counts now(void) {
  counts c;
  cpu_backend_persistent_counts(&c.hits, &c.misses, &c.writes);
  return c;
}

/* Compiles text with the cache in dir (after dropping the in-memory cache, so the
 * compile looks on disk) and runs it on fixed pseudo-random arguments. */
static hlo_literal *compile_and_run(const char *text, const char *dir) {
  hlo_module *m = check_parse_hlo(text);
  if (!m) return NULL;
  cpu_backend_cache_drop_idle();
  const backend *cpu = backend_find("cpu");
  backend_compile_options o = backend_compile_options_default();
  o.cache_dir = dir;
  backend_executable *x = NULL;
  hlo_literal *args[2] = {NULL, NULL}, *out = NULL;
  CHECK_OK(cpu->compile(cpu, m, &o, &x));
  for (int i = 0; x && i < 2; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
    literal_fill_pseudo_random(args[i], 11 + (uint64_t)i);
    /* log's argument must be positive */
    float *f = args[i]->data;
    for (int k = 0; k < 256; k++) f[k] = f[k] < 0 ? -f[k] + 0.5f : f[k] + 0.5f;
  }
  if (x) CHECK_OK(cpu->execute(x, args, 2, &out));
  for (int i = 0; i < 2; i++) literal_free(args[i]);
  if (x) cpu->destroy(x);
  hlo_module_free(m);
  cpu_backend_cache_drop_idle();
  return out;
}

static bool same(const hlo_literal *a, const hlo_literal *b) {
  return a && b && memcmp(a->data, b->data, 256 * sizeof(float)) == 0;
}

/* The entries in dir: how many, and the path of the first (static buffer). */
static int entries(const char *dir, char *first, size_t cap) {
  int n = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    size_t l = strlen(ent->d_name);
    if (l < 9 || strcmp(ent->d_name + l - 9, ".kiln-obj") != 0) continue;
    if (n++ == 0 && first) snprintf(first, cap, "%s/%s", dir, ent->d_name);
  }
  closedir(d);
  return n;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(path);
    else unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)len + 1);
  *n = p ? fread(p, 1, (size_t)len, f) : 0;
  fclose(f);
  return p;
}

static void spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (n) CHECK(fwrite(p, 1, n, f) == n);
  fclose(f);
}

static char base_dir[64], cache_dir[128];
static hlo_literal *reference; /* MODULE_A's result compiled without the cache */

static void setup(void) {
  snprintf(base_dir, sizeof base_dir, "/tmp/kiln_test_persist_XXXXXX");
  if (!mkdtemp(base_dir)) abort();
  snprintf(cache_dir, sizeof cache_dir, "%s/not/yet/there", base_dir); /* created by the first store */
  reference = compile_and_run(MODULE_A, NULL);
  CHECK(reference != NULL);
}

/* A damaged entry: noticed (the log says why), recompiled with the right results,
 * rewritten -- the next compile hits again. */
static void check_recovers(const char *why) {
  counts c0 = now();
  logging_on();
  hlo_literal *out = compile_and_run(MODULE_A, cache_dir);
  logging_off();
  counts c1 = now();
  CHECK(same(out, reference));
  CHECK(c1.misses == c0.misses + 1 && c1.hits == c0.hits && c1.writes == c0.writes + 1);
  if (!strstr(strbuf_cstr(&logged), why)) {
    fprintf(stderr, "expected \"%s\" in the log:\n%s", why, strbuf_cstr(&logged));
    CHECK(!"the log names the damage");
  }
  literal_free(out);
  out = compile_and_run(MODULE_A, cache_dir);
  CHECK(same(out, reference));
  CHECK(now().hits == c1.hits + 1);
  literal_free(out);
}

static void test_first_compile_writes_an_entry_creating_the_directory(void) {
  setup();
  counts c0 = now();
  hlo_literal *out = compile_and_run(MODULE_A, cache_dir);
  counts c1 = now();
  CHECK(same(out, reference));
  CHECK(c1.misses == c0.misses + 1 && c1.writes == c0.writes + 1 && c1.hits == c0.hits);
  CHECK(entries(cache_dir, NULL, 0) == 1);
  literal_free(out);
}

static void test_second_compile_links_stored_objects_with_identical_results(void) {
  counts c0 = now();
  logging_on();
  hlo_literal *out = compile_and_run(MODULE_A, cache_dir);
  logging_off();
  counts c1 = now();
  CHECK(c1.hits == c0.hits + 1 && c1.misses == c0.misses && c1.writes == c0.writes);
  CHECK(strstr(strbuf_cstr(&logged), "compile cache: loaded") != NULL);
  CHECK(same(out, reference));
  CHECK(entries(cache_dir, NULL, 0) == 1);
  literal_free(out);
}

static void test_truncated_entry_is_recompiled_and_rewritten(void) {
  char path[4400];
  CHECK(entries(cache_dir, path, sizeof path) == 1);
  size_t n;
  unsigned char *p = slurp(path, &n);
  if (!p) return;
  spit(path, p, n / 2);
  free(p);
  check_recovers("checksum mismatch");
  spit(path, "KILN", 4); /* shorter than any header */
  check_recovers("truncated");
}

static void test_flipped_byte_is_recompiled_and_rewritten(void) {
  char path[4400];
  CHECK(entries(cache_dir, path, sizeof path) == 1);
  size_t n;
  unsigned char *p = slurp(path, &n);
  if (!p) return;
  p[n / 2] ^= 0x40;
  spit(path, p, n);
  free(p);
  check_recovers("checksum mismatch");
}

static void test_foreign_file_is_recompiled_and_rewritten(void) {
  char path[4400];
  CHECK(entries(cache_dir, path, sizeof path) == 1);
  const char junk[] = "this is not a kiln object cache entry, just some text of some length\n";
  spit(path, junk, sizeof junk - 1);
  check_recovers("bad magic");
}

/* Another module's whole, valid entry under this module's name (as a digest collision
 * would leave it): the full key is compared, so its code is never used. */
static void test_entry_of_another_key_is_not_trusted(void) {
  hlo_literal *out = compile_and_run(MODULE_B, cache_dir);
  literal_free(out);
  CHECK(entries(cache_dir, NULL, 0) == 2); /* two modules, two entries */
  DIR *d = opendir(cache_dir);
  if (!d) return;
  char a_path[4400] = "", b_path[4400] = "";
  size_t n_a = 0, n_b = 0;
  struct dirent *ent;
  unsigned char *ea = NULL, *eb = NULL;
  while ((ent = readdir(d)) != NULL) {
    if (!strstr(ent->d_name, ".kiln-obj")) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", cache_dir, ent->d_name);
    size_t n;
    unsigned char *p = slurp(path, &n);
    if (!p) continue;
    bool is_a = memmem(p, n, "persist_a", 9) != NULL;
    if (is_a) {
      snprintf(a_path, sizeof a_path, "%s", path);
      ea = p;
      n_a = n;
    } else {
      snprintf(b_path, sizeof b_path, "%s", path);
      eb = p;
      n_b = n;
    }
  }
  closedir(d);
  CHECK(ea && eb);
  if (ea && eb) {
    spit(a_path, eb, n_b);
    check_recovers("key mismatch");
    (void)n_a;
  }
  free(ea);
  free(eb);
}

static void test_unwritable_directory_is_a_warning_not_an_error(void) {
  /* A path through a regular file cannot become a directory, root or not. */
  char file[160], under_file[200];
  snprintf(file, sizeof file, "%s/a_file", base_dir);
  spit(file, "x", 1);
  snprintf(under_file, sizeof under_file, "%s/cache", file);
  counts c0 = now();
  logging_on();
  hlo_literal *out = compile_and_run(MODULE_A, under_file);
  logging_off();
  CHECK(same(out, reference));
  CHECK(now().writes == c0.writes);
  CHECK(strstr(strbuf_cstr(&logged), "warning: cpu: compile cache: cannot create the directory") != NULL);
  literal_free(out);
  if (geteuid() == 0) {
    fprintf(stderr, "  (skipped: root ignores directory permissions)\n");
    return;
  }
  char ro[160];
  snprintf(ro, sizeof ro, "%s/read_only", base_dir);
  CHECK(mkdir(ro, 0500) == 0);
  c0 = now();
  logging_on();
  out = compile_and_run(MODULE_A, ro);
  logging_off();
  CHECK(same(out, reference));
  CHECK(now().writes == c0.writes);
  CHECK(strstr(strbuf_cstr(&logged), "warning: cpu: compile cache: cannot write") != NULL);
  literal_free(out);
  char sub[200];
  snprintf(sub, sizeof sub, "%s/sub", ro); /* cannot be created */
  logging_on();
  out = compile_and_run(MODULE_A, sub);
  logging_off();
  CHECK(same(out, reference));
  CHECK(strstr(strbuf_cstr(&logged), "warning: cpu: compile cache: cannot create the directory") != NULL);
  literal_free(out);
  chmod(ro, 0700);
}

static void test_code_embedding_process_addresses_is_never_persisted(void) {
  char dir[160];
  snprintf(dir, sizeof dir, "%s/fused_constant", base_dir);
  counts c0 = now();
  logging_on();
  hlo_literal *first = compile_and_run(MODULE_FUSED_CONSTANT, dir);
  hlo_literal *second = compile_and_run(MODULE_FUSED_CONSTANT, dir);
  logging_off();
  counts c1 = now();
  CHECK(first && second && memcmp(first->data, second->data, 256 * sizeof(float)) == 0);
  CHECK(c1.writes == c0.writes && c1.hits == c0.hits);
  CHECK(entries(dir, NULL, 0) == 0);
  CHECK(strstr(strbuf_cstr(&logged), "embeds addresses of this process") != NULL);
  literal_free(first);
  literal_free(second);
}

/* Two live executables with one key would define the same symbols: only one holds the
 * key-derived names at a time; the name is free again once released. */
static void test_symbol_names_are_claimed_once_per_process(void) {
  uint64_t h = 0x1234567890abcdefull;
  CHECK(cpu_persist_claim(h));
  CHECK(!cpu_persist_claim(h));
  CHECK(cpu_persist_claim(h + 1));
  cpu_persist_release(h);
  CHECK(cpu_persist_claim(h));
  cpu_persist_release(h);
  cpu_persist_release(h + 1);
}

/* The entry reader on every prefix of a real entry and on single-byte corruptions:
 * each is an error, none is trusted, nothing crashes (ASan watches). */
static void test_reader_rejects_every_prefix_and_corruption(void) {
  char path[4400];
  CHECK(entries(cache_dir, path, sizeof path) >= 1);
  size_t n;
  unsigned char *p = slurp(path, &n);
  if (!p) return;
  cpu_jit_object *objs;
  int n_objs;
  CHECK_OK(cpu_persist_parse(p, n, NULL, &objs, &n_objs));
  CHECK(n_objs >= 1);
  cpu_jit_objects_free(objs, n_objs);
  size_t step = n / 997 + 1;
  for (size_t len = 0; len < n; len += step) {
    unsigned char *copy = malloc(len + 1); /* exactly len bytes readable for ASan */
    memcpy(copy, p, len);
    kiln_status st = cpu_persist_parse(copy, len, NULL, &objs, &n_objs);
    CHECK(st != NULL && objs == NULL);
    kiln_status_free(st);
    free(copy);
  }
  for (size_t at = 0; at < n; at += step) {
    p[at] ^= 0x01;
    kiln_status st = cpu_persist_parse(p, n, NULL, &objs, &n_objs);
    CHECK(st != NULL && objs == NULL);
    kiln_status_free(st);
    p[at] ^= 0x01;
  }
  free(p);
}

static void test_cleanup(void) {
  literal_free(reference);
  reference = NULL;
  strbuf_free(&logged);
  remove_tree(base_dir);
}

TEST_MAIN(TEST(test_first_compile_writes_an_entry_creating_the_directory),
          TEST(test_second_compile_links_stored_objects_with_identical_results),
          TEST(test_truncated_entry_is_recompiled_and_rewritten), TEST(test_flipped_byte_is_recompiled_and_rewritten),
          TEST(test_foreign_file_is_recompiled_and_rewritten), TEST(test_entry_of_another_key_is_not_trusted),
          TEST(test_unwritable_directory_is_a_warning_not_an_error),
          TEST(test_code_embedding_process_addresses_is_never_persisted),
          TEST(test_symbol_names_are_claimed_once_per_process), TEST(test_reader_rejects_every_prefix_and_corruption), TEST(test_cleanup))
