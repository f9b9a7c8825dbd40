/* Whole-file reads: size hint from fstat, then read to EOF (which also serves pipes and
 * files that change size), growing the buffer by doubling and checking the cap as bytes
 * arrive. */
#include "base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

kiln_status file_read_all(const char *path, const char *what, int64_t max_bytes, char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return status_error(errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "%s: cannot open %s: %s", path, what,
                        strerror(errno));
  struct stat st;
  size_t cap = 1 << 16;
  if (fstat(fileno(f), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      fclose(f);
      return status_error(KILN_IO_ERROR, "%s: cannot read %s: it is a directory", path, what);
    }
    if (S_ISREG(st.st_mode) && max_bytes > 0 && (int64_t)st.st_size > max_bytes) {
      fclose(f);
      return status_error(KILN_RESOURCE_EXHAUSTED, "%s: the %s is %lld bytes, over the %lld-byte limit", path, what,
                          (long long)st.st_size, (long long)max_bytes);
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < SIZE_MAX - 1) cap = (size_t)st.st_size + 1;
  }
  char *buf = malloc(cap);
  size_t n = 0;
  kiln_status s = buf ? NULL : status_error(KILN_RESOURCE_EXHAUSTED, "%s: out of memory reading the %s", path, what);
  while (!s) {
    if (n + 1 >= cap) {
      char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        s = status_error(KILN_RESOURCE_EXHAUSTED, "%s: out of memory reading the %s", path, what);
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (max_bytes > 0 && (int64_t)n > max_bytes)
      s = status_error(KILN_RESOURCE_EXHAUSTED, "%s: the %s is over the %lld-byte limit", path, what,
                       (long long)max_bytes);
    else if (got == 0)
      break;
  }
  if (!s && ferror(f)) s = status_error(KILN_IO_ERROR, "%s: error reading the %s: %s", path, what, strerror(errno));
  fclose(f);
  if (s) {
    free(buf);
    return s;
  }
  buf[n] = 0;
  *data = buf;
  *len = n;
  return NULL;
}

kiln_status file_make_dirs(const char *path) {
  size_t n = strlen(path);
  char *p = malloc(n + 1);
  if (!p) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(p, path, n + 1);
  kiln_status s = NULL;
  for (size_t i = 1; i <= n && !s; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    char saved = p[i];
    p[i] = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      s = status_error(KILN_IO_ERROR, "cannot create directory %s: %s", p, strerror(errno));
    p[i] = saved;
  }
  free(p);
  if (s) return s;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return status_error(KILN_IO_ERROR, "%s exists and is not a directory", path);
  return NULL;
}

void file_drop_mapped_pages(const void *p, size_t n) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}
