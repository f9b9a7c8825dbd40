/* Loading the OpenCL drivers so they keep their own symbols. Drivers that compile kernels
 * with LLVM (PoCL, Mesa's rusticl/clover, ...) link a libLLVM of their own; a program
 * that links kiln's layers with the shared libLLVM-14.so (the tests, a static libkiln.a
 * consumer) has another one in the process's global scope (the kiln tool and
 * libkiln.so carry a private static copy, see cmake/cpu_deps.cmake). Loaded the usual way (by
 * the ICD loader, dlopen without RTLD_DEEPBIND), the driver's libLLVM then binds part of
 * its references to the host's copy, and the first kernel it compiles crashes inside
 * LLVM. So, before the ICD loader first looks for platforms, this file dlopens every
 * driver listed in the ICD vendor directory (OCL_ICD_VENDORS, else /etc/OpenCL/vendors)
 * with RTLD_DEEPBIND, which makes the driver and the libraries it pulls in resolve
 * against themselves first; the ICD loader's own dlopen later returns the same, already
 * loaded, objects. Done once per process, and only when an LLVM library is already
 * loaded (option opencl.deepbind=1 forces it, =0 disables it); never under
 * AddressSanitizer, which refuses RTLD_DEEPBIND. */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  const char *want = data;
  return info->dlpi_name && strstr(info->dlpi_name, want) ? 1 : 0;
}

static int loaded(const char *name) { return dl_iterate_phdr(find_loaded, (void *)name) != 0; }

static void load_vendor_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char lib[4096];
  if (fgets(lib, sizeof lib, f)) {
    size_t n = strlen(lib);
    while (n && (lib[n - 1] == '\n' || lib[n - 1] == '\r' || lib[n - 1] == ' ')) lib[--n] = 0;
#ifdef RTLD_DEEPBIND
    if (n) (void)dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND); /* kept loaded for the process */
#endif
  }
  fclose(f);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void preload(void) {
  const char *dir = getenv("OCL_ICD_VENDORS");
  if (!dir || !*dir) dir = "/etc/OpenCL/vendors";
  DIR *d = opendir(dir);
  if (!d) {
    /* OCL_ICD_VENDORS may also name one .icd file. */
    size_t n = strlen(dir);
    if (n > 4 && !strcmp(dir + n - 4, ".icd")) load_vendor_file(dir);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n <= 4 || strcmp(e->d_name + n - 4, ".icd")) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    load_vendor_file(path);
  }
  closedir(d);
}

void ocl_preload_drivers(const char *mode) {
  if (mode && !strcmp(mode, "0")) return;
  if (loaded("libasan") || loaded("libclang_rt.asan")) return;
  if (!(mode && !strcmp(mode, "1")) && !loaded("libLLVM")) return;
  pthread_once(&once, preload);
}
