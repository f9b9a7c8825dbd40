/* kiln public runtime API.
 *
 * This header is what an embedding program sees of kiln. Today it holds the status
 * object every fallible kiln call returns; the session/tensor API grows here as the
 * bridge lands. A status is a pointer: NULL means success, anything else is an error
 * object owned by the caller, released with kiln_status_free. Errors carry a code and
 * a message that names where things went wrong (file:line:col, node, op, shapes). */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1, /* bad user input: malformed file, wrong shapes, bad flag */
  KILN_NOT_FOUND = 2,        /* a named thing (file, input, device) does not exist */
  KILN_UNIMPLEMENTED = 3,    /* valid input that this build does not support (yet) */
  KILN_OUT_OF_RANGE = 4,     /* an index or size beyond what is representable */
  KILN_RESOURCE_EXHAUSTED = 5, /* allocation failure, size over a configured cap */
  KILN_INTERNAL = 6,         /* a kiln bug: an invariant did not hold */
  KILN_IO_ERROR = 7          /* the operating system refused a read or write */
} kiln_code;

typedef struct kiln_status_t kiln_status_t;
typedef kiln_status_t *kiln_status; /* NULL == OK */

kiln_code kiln_status_code(const kiln_status_t *s);
const char *kiln_status_message(const kiln_status_t *s);
const char *kiln_code_name(kiln_code code);
void kiln_status_free(kiln_status_t *s);

#ifdef __cplusplus
}
#endif
#endif
