/* heap_release_free_pages (see heap.h). */
#include "base/heap.h"

#include <stdlib.h> /* defines __GLIBC__ on glibc */

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void heap_release_free_pages(void) {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}
