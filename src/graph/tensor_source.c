/* Weights read back from their mapped model file (see tensor_source.h). */
#include "graph/tensor_source.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

struct tensor_source {
  atomic_int refs;
  char *path;
  int fd;
  const unsigned char *map;
  size_t len;
  struct stat loaded; /* the file as it was when mapped */
};

/* One lock for dropping and loading: a drop must see every reference a concurrent
 * loader takes, and two loaders of one tensor must not both allocate. */
static pthread_mutex_t source_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t stat_dropped, stat_loaded;

tensor_source *tensor_source_new(const char *path, int fd, const void *map, size_t len) {
  tensor_source *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  if (fstat(fd, &s->loaded) != 0 || !(s->path = strdup(path ? path : "(model)"))) {
    free(s);
    return NULL;
  }
  atomic_init(&s->refs, 1);
  s->fd = fd;
  s->map = map;
  s->len = len;
  return s;
}

void tensor_source_release(tensor_source *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  munmap((void *)s->map, s->len);
  close(s->fd);
  free(s->path);
  free(s);
}

void tensor_attach_source(graph_tensor *t, tensor_source *s, size_t offset) {
  size_t bytes = tensor_byte_size(t);
  if (!s || t->borrowed || t->dtype == GRAPH_DT_STRING || offset > s->len || bytes > s->len - offset) return;
  if (t->source) tensor_source_release(t->source);
  atomic_fetch_add(&s->refs, 1);
  t->source = s;
  t->source_offset = offset;
}

bool tensor_drop_data(graph_tensor *t, int other_refs) {
  if (!t || !t->source) return false;
  pthread_mutex_lock(&source_lock);
  bool drop = t->data && atomic_load(&t->refs) - atomic_load(&t->graph_refs) <= other_refs;
  if (drop) {
    stat_dropped += tensor_byte_size(t);
    free(t->data);
    t->data = NULL;
  }
  pthread_mutex_unlock(&source_lock);
  return drop;
}

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Under source_lock: t's buffer read back from its file. */
static kiln_status load(graph_tensor *t) {
  const tensor_source *s = t->source;
  struct stat now;
  if (fstat(s->fd, &now) != 0 || !same_file(&now, &s->loaded))
    return status_error(KILN_IO_ERROR,
                        "%s changed since it was loaded: a weight dropped after compiling (%zu bytes at offset %zu) "
                        "cannot be read back; load the model again",
                        s->path, tensor_byte_size(t), t->source_offset);
  size_t bytes = tensor_byte_size(t);
  void *data = malloc(bytes ? bytes : 1);
  if (!data) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory reading back %zu bytes of %s", bytes, s->path);
  memcpy(data, s->map + t->source_offset, bytes);
  file_drop_mapped_pages(s->map + t->source_offset, bytes);
  t->data = data;
  stat_loaded += bytes;
  return NULL;
}

kiln_status tensor_ref_loaded(graph_tensor *t, graph_tensor **out) {
  *out = NULL;
  if (!t->source) {
    *out = tensor_ref(t);
    return NULL;
  }
  pthread_mutex_lock(&source_lock);
  kiln_status s = t->data ? NULL : load(t);
  if (!s) *out = tensor_ref(t);
  pthread_mutex_unlock(&source_lock);
  return s;
}

void tensor_source_stats(size_t *dropped_bytes, size_t *loaded_bytes) {
  pthread_mutex_lock(&source_lock);
  if (dropped_bytes) *dropped_bytes = stat_dropped;
  if (loaded_bytes) *loaded_bytes = stat_loaded;
  pthread_mutex_unlock(&source_lock);
}
