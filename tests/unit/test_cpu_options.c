/* Compile options through the cpu backend (backend_compile_options): they reach the
 * pass pipeline (dumps, disabled passes), the options that change the compiled code are
 * part of the executable cache's key (a profiled compile and a plain one of the same
 * module are two executables), and the worker-thread count is per calling thread. Its
 * own program, so the cache starts empty and its size counts exactly. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "check.h"
#include "check_util.h"
#include "hlo/literal.h"

/* The dump of DIR whose name ends in `suffix` (malloc'ed text), or NULL; *n_matching
 * counts the files whose name contains `part`. Removes every file it looks at. */
static char *take_dump(const char *dir, const char *suffix, const char *part, int *n_matching) {
  char *found = NULL;
  *n_matching = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    if (strstr(ent->d_name, part)) (*n_matching)++;
    size_t l = strlen(ent->d_name), sl = strlen(suffix);
    if (!found && l >= sl && strcmp(ent->d_name + l - sl, suffix) == 0) {
      FILE *f = fopen(path, "r");
      if (f) {
        found = calloc(1, 1 << 16);
        if (found && fread(found, 1, (1 << 16) - 1, f) == 0) found[0] = 0;
        fclose(f);
      }
    }
    unlink(path);
  }
  closedir(d);
  return found;
}

/* Compile options reach the cpu pipeline: dumps land in dump_to (per-pass ones only for
 * passes matching dump_pass_re), and disabled_passes skips fusion -- which also makes it
 * a different executable from the fused one, with the same results. */
static void test_compile_options_reach_pipeline(void) {
  const char *text = "HloModule options_probe\n\nENTRY main {\n  a = f32[64] parameter(0)\n"
                     "  b = f32[64] parameter(1)\n  m = f32[64] multiply(a, b)\n"
                     "  ROOT r = f32[64] add(m, a)\n}\n";
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  char dir[] = "/tmp/kiln_test_cpu_options_XXXXXX";
  if (!mkdtemp(dir)) abort();
  const backend *cpu = backend_find("cpu");
  backend_compile_options o = backend_compile_options_default();
  o.dump_to = dir;
  o.dump_pass_re = "^fusion$";
  o.disabled_passes = "fusion";
  backend_executable *plain = NULL, *fused = NULL;
  int before = cpu_backend_cache_size();
  CHECK_OK(cpu->compile(cpu, m, &o, &plain));
  int n_fusion_dumps = 0;
  char *after = take_dump(dir, ".after_optimizations.hlo", "after_fusion", &n_fusion_dumps);
  CHECK(after && strstr(after, "kind=kLoop") == NULL);
  CHECK(n_fusion_dumps == 0); /* the disabled pass did not run, so nothing dumped after it */
  free(after);
  o.disabled_passes = NULL;
  CHECK_OK(cpu->compile(cpu, m, &o, &fused));
  CHECK(cpu_backend_cache_size() == before + 2); /* not the unfused executable again */
  after = take_dump(dir, ".after_optimizations.hlo", "after_fusion", &n_fusion_dumps);
  CHECK(after && strstr(after, "kind=kLoop") != NULL);
  CHECK(n_fusion_dumps == 1);
  free(after);
  CHECK(rmdir(dir) == 0);
  hlo_literal *args[2] = {NULL, NULL}, *got_plain = NULL, *got_fused = NULL;
  for (int i = 0; i < 2; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
    literal_fill_pseudo_random(args[i], 77 + (uint64_t)i);
  }
  if (plain && fused) {
    CHECK_OK(cpu->execute(plain, args, 2, &got_plain));
    CHECK_OK(cpu->execute(fused, args, 2, &got_fused));
    CHECK(got_plain && got_fused && memcmp(got_plain->data, got_fused->data, 64 * sizeof(float)) == 0);
  }
  literal_free(got_plain);
  literal_free(got_fused);
  for (int i = 0; i < 2; i++) literal_free(args[i]);
  if (plain) cpu->destroy(plain);
  if (fused) cpu->destroy(fused);
  hlo_module_free(m);
}

static const backend *profiled_cpu;
static backend_executable *profiled_exe;
static void release_profiled(void) { profiled_cpu->destroy(profiled_exe); }


/* profile is part of the cache key: a profiled compile never hands out (or gets) the
 * executable of an unprofiled one, and only the profiled one prints its summary when
 * released. */
static void test_profile_in_cache_key(void) {
  const char *text = "HloModule profile_probe\n\nENTRY main {\n  a = f32[4096] parameter(0)\n"
                     "  ROOT r = f32[4096] exponential(a)\n}\n";
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  backend_compile_options profiled = backend_compile_options_default();
  profiled.profile = true;
  backend_executable *plain = NULL, *prof = NULL, *prof_again = NULL, *plain_again = NULL;
  int before = cpu_backend_cache_size();
  CHECK_OK(cpu->compile(cpu, m, NULL, &plain));
  CHECK(cpu_backend_cache_size() == before + 1);
  CHECK_OK(cpu->compile(cpu, m, &profiled, &prof));
  CHECK(cpu_backend_cache_size() == before + 2); /* two executables */
  CHECK_OK(cpu->compile(cpu, m, &profiled, &prof_again));
  CHECK_OK(cpu->compile(cpu, m, NULL, &plain_again));
  CHECK(cpu_backend_cache_size() == before + 2); /* each found its own again */
  hlo_literal *arg = NULL, *out = NULL;
  CHECK_OK(literal_create(&m->entry->params[0]->shape, &arg));
  literal_fill_pseudo_random(arg, 5);
  /* Released in this order, the profiled executable prints its summary when its last
   * user (prof_again) lets go; the unprofiled one never prints. */
  backend_executable *order[4] = {plain, prof, prof_again, plain_again};
  for (int i = 0; i < 4; i++) {
    if (!order[i]) continue;
    CHECK_OK(cpu->execute(order[i], &arg, 1, &out));
    literal_free(out);
    out = NULL;
  }
  literal_free(arg);
  profiled_cpu = cpu;
  for (int i = 0; i < 4; i++) {
    if (!order[i]) continue;
    profiled_exe = order[i];
    char *err = check_capture_stderr(release_profiled);
    if (i == 2) CHECK(strstr(err, "cpu profile of profile_probe") != NULL);
    else CHECK(err[0] == 0);
    free(err);
  }
  hlo_module_free(m);
}

static int thread_count_seen;
static void *read_threads(void *arg) {
  (void)arg;
  thread_count_seen = cpu_backend_threads();
  return NULL;
}

/* The worker-thread count is per calling thread; n <= 0 restores the default. */
static void test_threads_per_calling_thread(void) {
  int def = cpu_backend_threads();
  CHECK(def >= 1);
  cpu_backend_set_threads(def + 2);
  CHECK(cpu_backend_threads() == def + 2);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, read_threads, NULL) == 0);
  pthread_join(t, NULL);
  CHECK(thread_count_seen == def); /* another thread keeps the default */
  cpu_backend_set_threads(0);
  CHECK(cpu_backend_threads() == def);
}

TEST_MAIN(TEST(test_compile_options_reach_pipeline), TEST(test_profile_in_cache_key),
          TEST(test_threads_per_calling_thread))
