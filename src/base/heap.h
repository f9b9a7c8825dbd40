/* The process heap as a whole. A compile frees tens of megabytes of intermediate IR
 * just before the phases that need the most memory (oneDNN's packed weights, LLVM's
 * code generation on threads of its own, whose allocations come from other malloc
 * arenas and cannot reuse the main one's free space); handing those pages back first
 * keeps them out of the peak resident set. */
#ifndef KILN_BASE_HEAP_H
#define KILN_BASE_HEAP_H

/* Returns the C library's free heap pages to the system (glibc: malloc_trim); nothing
 * elsewhere. Costs a walk over the free lists: call it after a large release, not in a
 * loop. */
void heap_release_free_pages(void);

#endif
