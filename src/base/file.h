/* Whole-file reads for the loaders (HLO text, graph text, model files, manifests). One
 * implementation so every loader reports a missing file, a read failure and an
 * oversized file the same way, naming the path; and the page release of mapped model
 * files the ONNX importer and its weight read-back share. */
#ifndef KILN_BASE_FILE_H
#define KILN_BASE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Reads all of `path` into a malloc'ed buffer with a NUL after the last byte (*len
 * excludes it); the caller frees *data. `what` names the file's role in messages
 * ("HLO file", "manifest"). max_bytes > 0 caps the size: a larger file is
 * RESOURCE_EXHAUSTED, found before the whole file is read. A missing file is NOT_FOUND,
 * any other failure IO_ERROR. */
kiln_status file_read_all(const char *path, const char *what, int64_t max_bytes, char **data, size_t *len);
/* mkdir -p: creates path and its missing parents; an existing directory is fine, an
 * existing non-directory is IO_ERROR naming it. */
kiln_status file_make_dirs(const char *path);
/* Hands the whole pages inside [p, p + n) of a private, never-written file mapping back
 * to the file (madvise DONTNEED): they leave the resident set and are read again from
 * the file on the next touch. The partial pages at either end stay. */
void file_drop_mapped_pages(const void *p, size_t n);

#endif
