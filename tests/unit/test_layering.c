/* Layering rule: the command-line flags belong to the `kiln` command. No library code
 * reads kiln_flags or includes base/flags.h -- only src/tools (which maps flags onto the
 * option structs the libraries take) and the flags module itself -- so an embedder's
 * options can never be overridden by a global it cannot see. The test scans the source
 * tree (CTest runs unit tests from the source root) and names every file that breaks the
 * rule. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

typedef struct scan {
  int files;       /* scanned */
  int exempt_hits; /* mentions in the allowed files: proves the matcher sees them */
} scan;

static bool exempt(const char *path) {
  return strncmp(path, "src/tools/", 10) == 0 || strcmp(path, "src/base/flags.c") == 0 ||
         strcmp(path, "src/base/flags.h") == 0;
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      cap *= 2;
      char *grown = realloc(buf, cap + 1);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

static void check_file(const char *path, scan *sc) {
  char *text = read_all(path);
  if (!text) {
    check_fail(__FILE__, __LINE__, "read", path);
    return;
  }
  sc->files++;
  static const char *const needles[] = {"kiln_flags", "base/flags.h"};
  for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) {
    const char *hit = strstr(text, needles[i]);
    if (!hit) continue;
    if (exempt(path)) {
      sc->exempt_hits++;
      continue;
    }
    int line = 1;
    for (const char *p = text; p < hit; p++) line += *p == '\n';
    char detail[4200];
    snprintf(detail, sizeof detail, "%s:%d mentions %s; library code takes options, only src/tools maps flags",
             path, line, needles[i]);
    check_fail(__FILE__, __LINE__, "no flags outside src/tools", detail);
  }
  free(text);
}

static void walk(const char *dir, scan *sc) {
  DIR *d = opendir(dir);
  if (!d) {
    check_fail(__FILE__, __LINE__, "opendir", dir);
    return;
  }
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) walk(path, sc);
    else if (S_ISREG(st.st_mode)) check_file(path, sc);
  }
  closedir(d);
}

static void test_only_tools_read_flags(void) {
  scan sc = {0, 0};
  walk("src", &sc);
  CHECK(sc.files > 100);     /* the whole tree was seen (run from the source root) */
  CHECK(sc.exempt_hits > 0); /* src/tools and flags.c do mention them */
}

TEST_MAIN(TEST(test_only_tools_read_flags))
