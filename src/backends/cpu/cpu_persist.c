/* The persistent compilation cache's key, entry format and files (see cpu_persist.h).
 *
 * Entry layout (host byte order: the key names the host triple, so an entry is never
 * read on another kind of machine):
 *   "KILNOBJ\0"  magic, 8 bytes
 *   u32          format version
 *   u32          key length, then the key bytes
 *   u32          object count n, then n u64 object lengths
 *   the objects, back to back
 *   u64 u64      digest of every byte before it (cpu_cache_digest) */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "backends/cpu/cpu_persist.h"

#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm/Config/llvm-config.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_cache.h"
#include "backends/cpu/cpu_pipeline.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "kiln/kiln.h"

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)
#define KILN_VERSION_TEXT KILN_STR(KILN_VERSION_MAJOR) "." KILN_STR(KILN_VERSION_MINOR) "." KILN_STR(KILN_VERSION_PATCH)
#define PERSIST_MAGIC "KILNOBJ"
#define PERSIST_VERSION 1u
/* Sanity bounds for a header read from disk: a corrupted count or length must fail the
 * parse, not drive an allocation. */
#define PERSIST_MAX_OBJECTS 4096u

static int64_t n_hits, n_misses, n_writes;

void cpu_backend_persistent_counts(int64_t *hits, int64_t *misses, int64_t *writes) {
  if (hits) *hits = __atomic_load_n(&n_hits, __ATOMIC_RELAXED);
  if (misses) *misses = __atomic_load_n(&n_misses, __ATOMIC_RELAXED);
  if (writes) *writes = __atomic_load_n(&n_writes, __ATOMIC_RELAXED);
}

/* ---- the key ---- */

/* The GNU build id of the ELF object (executable or libkiln.so) this code is in: it
 * changes with every rebuild that changes the code, which kiln's version number alone
 * does not. */
typedef struct build_id_search {
  uintptr_t addr;
  char hex[2 * 64 + 1];
} build_id_search;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  build_id_search *s = arg;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    contains = ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz;
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + 12 <= end) {
      uint32_t namesz, descsz, type;
      memcpy(&namesz, p, 4);
      memcpy(&descsz, p + 4, 4);
      memcpy(&type, p + 8, 4);
      const unsigned char *name = p + 12, *desc = name + ((namesz + 3u) & ~3u);
      if (desc + descsz > end) break;
      if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz <= 64) {
        for (uint32_t k = 0; k < descsz; k++) snprintf(s->hex + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      p = desc + ((descsz + 3u) & ~3u);
    }
  }
  return 1; /* found the object, but it has no build id */
}

static pthread_once_t build_once = PTHREAD_ONCE_INIT;
static char build_text[256];

/* kiln's version, and the build id or, without one, the size and time of the file. */
static void describe_build(void) {
  build_id_search s = {(uintptr_t)&describe_build, ""};
  dl_iterate_phdr(find_build_id, &s);
  if (s.hex[0]) {
    snprintf(build_text, sizeof build_text, "%s build-id %s", KILN_VERSION_TEXT, s.hex);
    return;
  }
  Dl_info dl;
  struct stat st;
  if (dladdr((void *)&describe_build, &dl) && dl.dli_fname && stat(dl.dli_fname, &st) == 0)
    snprintf(build_text, sizeof build_text, "%s file %s %lld %lld", KILN_VERSION_TEXT, dl.dli_fname,
             (long long)st.st_size, (long long)st.st_mtime);
  else
    snprintf(build_text, sizeof build_text, "%s built %s %s", KILN_VERSION_TEXT, __DATE__, __TIME__);
}

char *cpu_persist_key(const char *fingerprint, uint64_t digest[2]) {
  char *host = NULL;
  kiln_status st = cpu_jit_host_description(&host);
  if (st) {
    kiln_status_free(st);
    return NULL;
  }
  pthread_once(&build_once, describe_build);
  strbuf b;
  strbuf_init(&b);
  strbuf_append(&b, fingerprint);
  /* The pipeline's choices that follow oneDNN's ISA, which DNNL_MAX_CPU_ISA may cap
   * below what LLVM's host features say (cpu_pipeline_options_for_host). */
  cpu_pipeline_options po = cpu_pipeline_options_for_host();
  strbuf_printf(&b, "\n#kiln:%s\n#llvm:%s\n#host:%s\n#integer-products:%d\n#entry-format:%u", build_text,
                LLVM_VERSION_STRING, host, po.integer_products ? 1 : 0, PERSIST_VERSION);
  free(host);
  char *key = strbuf_take(&b);
  if (!key) return NULL;
  digest[0] = 0x6b696c6e2d6f626aull;
  digest[1] = 0x243f6a8885a308d3ull;
  cpu_cache_digest(key, strlen(key), &digest[0], &digest[1]);
  return key;
}

/* ---- symbol-name claims ---- */

static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *claims;
static int n_claims, cap_claims;

bool cpu_persist_claim(uint64_t h) {
  bool ok = true;
  pthread_mutex_lock(&claim_lock);
  for (int i = 0; i < n_claims && ok; i++) ok = claims[i] != h;
  if (ok && n_claims == cap_claims) {
    int cap = cap_claims ? 2 * cap_claims : 16;
    uint64_t *grown = realloc(claims, (size_t)cap * sizeof *grown);
    if (grown) {
      claims = grown;
      cap_claims = cap;
    } else {
      ok = false;
    }
  }
  if (ok) claims[n_claims++] = h;
  pthread_mutex_unlock(&claim_lock);
  return ok;
}

void cpu_persist_release(uint64_t h) {
  pthread_mutex_lock(&claim_lock);
  for (int i = 0; i < n_claims; i++)
    if (claims[i] == h) {
      claims[i] = claims[--n_claims];
      break;
    }
  if (n_claims == 0) { /* nothing left: do not hold memory to exit (leak checkers) */
    free(claims);
    claims = NULL;
    cap_claims = 0;
  }
  pthread_mutex_unlock(&claim_lock);
}

/* ---- the entry format ---- */

void cpu_persist_checksum(const void *p, size_t n, uint64_t out[2]) {
  out[0] = 0x6b696c6e2d656e74ull;
  out[1] = 0x13198a2e03707344ull;
  cpu_cache_digest(p, n, &out[0], &out[1]);
}

char *cpu_persist_entry_path(const char *dir, const uint64_t digest[2]) {
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "%s/%016llx%016llx.kiln-obj", dir, (unsigned long long)digest[0], (unsigned long long)digest[1]);
  return strbuf_take(&b);
}

typedef struct reader {
  const unsigned char *p;
  size_t left;
} reader;

static bool take(reader *r, void *out, size_t n) {
  if (r->left < n) return false;
  if (out) memcpy(out, r->p, n);
  r->p += n;
  r->left -= n;
  return true;
}

kiln_status cpu_persist_parse(const unsigned char *data, size_t size, const char *key, cpu_jit_object **objs,
                              int *n) {
  *objs = NULL;
  *n = 0;
  if (size < 8 + 16) return ERR_INVALID("truncated (%zu bytes)", size);
  if (memcmp(data, PERSIST_MAGIC, 8) != 0) return ERR_INVALID("not a kiln object cache entry (bad magic)");
  /* The checksum first: nothing of a corrupted entry is interpreted. */
  uint64_t want[2], got[2];
  memcpy(want, data + size - 16, 16);
  cpu_persist_checksum(data, size - 16, got);
  if (got[0] != want[0] || got[1] != want[1]) return ERR_INVALID("checksum mismatch (truncated or corrupted)");
  reader r = {data + 8, size - 8 - 16};
  uint32_t version, key_len, count;
  if (!take(&r, &version, 4)) return ERR_INVALID("truncated header");
  if (version != PERSIST_VERSION) return ERR_INVALID("entry format %u, this kiln reads %u", version, PERSIST_VERSION);
  if (!take(&r, &key_len, 4) || key_len > r.left) return ERR_INVALID("truncated key");
  const char *stored_key = (const char *)r.p;
  if (key && (strlen(key) != key_len || memcmp(stored_key, key, key_len) != 0))
    return ERR_INVALID("the entry was made for another module, build or host (key mismatch)");
  take(&r, NULL, key_len);
  if (!take(&r, &count, 4) || count > PERSIST_MAX_OBJECTS || (size_t)count * 8 > r.left)
    return ERR_INVALID("bad object count");
  uint64_t total = 0;
  const unsigned char *lengths = r.p;
  take(&r, NULL, (size_t)count * 8);
  for (uint32_t i = 0; i < count; i++) {
    uint64_t len;
    memcpy(&len, lengths + 8 * i, 8);
    if (len > r.left - total) return ERR_INVALID("object %u runs past the end", i);
    total += len;
  }
  if (total != r.left) return ERR_INVALID("%zu stray bytes after the objects", (size_t)(r.left - total));
  cpu_jit_object *o = calloc((size_t)count + 1, sizeof *o);
  if (!o) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; i < count; i++) {
    uint64_t len;
    memcpy(&len, lengths + 8 * i, 8);
    o[i].size = (size_t)len;
    o[i].data = malloc(len ? (size_t)len : 1);
    if (!o[i].data) {
      cpu_jit_objects_free(o, (int)i);
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
    take(&r, o[i].data, (size_t)len);
  }
  *objs = o;
  *n = (int)count;
  return NULL;
}

static bool read_file(const char *path, unsigned char **data, size_t *size) {
  *data = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  strbuf b;
  strbuf_init(&b);
  char buf[1 << 16];
  size_t got;
  bool ok = true;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) strbuf_appendn(&b, buf, got);
  if (ferror(f)) ok = false;
  fclose(f);
  *size = b.len;
  *data = (unsigned char *)strbuf_take(&b);
  if (!*data) ok = false;
  if (!ok) {
    free(*data);
    *data = NULL;
  }
  return ok;
}

bool cpu_persist_load(const char *dir, const char *key, const uint64_t digest[2], cpu_jit_object **objs, int *n) {
  *objs = NULL;
  *n = 0;
  char *path = cpu_persist_entry_path(dir, digest);
  if (!path) return false;
  unsigned char *data;
  size_t size;
  if (!read_file(path, &data, &size)) {
    if (errno != ENOENT) log_info("cpu: compile cache: cannot read %s: %s; compiling", path, strerror(errno));
    __atomic_fetch_add(&n_misses, 1, __ATOMIC_RELAXED);
    free(path);
    return false;
  }
  kiln_status st = cpu_persist_parse(data, size, key, objs, n);
  free(data);
  if (st) {
    log_info("cpu: compile cache: ignoring %s: %s; recompiling", path, kiln_status_message(st));
    kiln_status_free(st);
    __atomic_fetch_add(&n_misses, 1, __ATOMIC_RELAXED);
    free(path);
    return false;
  }
  log_info("cpu: compile cache: loaded %d object file%s from %s", *n, *n == 1 ? "" : "s", path);
  __atomic_fetch_add(&n_hits, 1, __ATOMIC_RELAXED);
  free(path);
  return true;
}

/* mkdir -p, for the cache directory: true when it exists afterwards. */
static bool make_dirs(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode);
  char *copy = strdup(dir);
  if (!copy) return false;
  for (char *p = copy + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
      free(copy);
      return false;
    }
    *p = '/';
  }
  bool ok = mkdir(copy, 0777) == 0 || (errno == EEXIST && stat(copy, &st) == 0 && S_ISDIR(st.st_mode));
  free(copy);
  return ok;
}

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

void cpu_persist_store(const char *dir, const char *key, const uint64_t digest[2], const cpu_jit_object *objs, int n) {
  if (!make_dirs(dir)) {
    log_warning("cpu: compile cache: cannot create the directory %s: %s; compiling without persisting", dir,
                strerror(errno));
    return;
  }
  /* The whole entry in memory (objects are small next to the module: a few MB for
   * resnet50), so the checksum is one pass and the write one call. */
  strbuf b;
  strbuf_init(&b);
  uint32_t version = PERSIST_VERSION, key_len = (uint32_t)strlen(key), count = (uint32_t)n;
  strbuf_appendn(&b, PERSIST_MAGIC, 8);
  strbuf_appendn(&b, (const char *)&version, 4);
  strbuf_appendn(&b, (const char *)&key_len, 4);
  strbuf_appendn(&b, key, key_len);
  strbuf_appendn(&b, (const char *)&count, 4);
  for (int i = 0; i < n; i++) {
    uint64_t len = objs[i].size;
    strbuf_appendn(&b, (const char *)&len, 8);
  }
  for (int i = 0; i < n; i++) strbuf_appendn(&b, objs[i].data, objs[i].size);
  uint64_t sum[2];
  cpu_persist_checksum(strbuf_cstr(&b), b.len, sum);
  strbuf_appendn(&b, (const char *)sum, 16);

  char *path = cpu_persist_entry_path(dir, digest);
  strbuf tmp;
  strbuf_init(&tmp);
  strbuf_printf(&tmp, "%s.%ld.%p.tmp", path ? path : "", (long)getpid(), (void *)&b);
  int fd = path ? open(strbuf_cstr(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666) : -1;
  bool ok = fd >= 0 && write_all(fd, strbuf_cstr(&b), b.len);
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename(strbuf_cstr(&tmp), path) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    if (fd >= 0) unlink(strbuf_cstr(&tmp));
    log_warning("cpu: compile cache: cannot write %s: %s; compiling without persisting", path ? path : dir,
                strerror(err));
  } else {
    log_info("cpu: compile cache: wrote %s", path);
    __atomic_fetch_add(&n_writes, 1, __ATOMIC_RELAXED);
  }
  strbuf_free(&tmp);
  strbuf_free(&b);
  free(path);
}
