/* `kiln ops [NAMESPACE]`: what kiln can run, per framework.
 *
 * The list merges the op library (ops/ops.h: ops with an HLO lowering and/or a host
 * kernel) with the ops the host executor interprets itself (control flow, resources,
 * functional ops), grouped by namespace ("onnx", "tf", "com.microsoft", ...). It is
 * the list that "kiln cannot run op X" errors point to, so it prints one op per line
 * with fixed-width marks that grep and eyes both read easily. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/executor.h"
#include "ops/ops.h"
#include "tools/tool.h"

typedef struct op_row {
  const char *name;
  size_t ns_len; /* namespace = name[0..ns_len) */
  bool lower, host, exec;
} op_row;

static size_t namespace_len(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot ? (size_t)(dot - name) : 0;
}

static int by_namespace_then_name(const void *a, const void *b) {
  const op_row *x = a, *y = b;
  size_t n = x->ns_len < y->ns_len ? x->ns_len : y->ns_len;
  int c = strncmp(x->name, y->name, n);
  if (c) return c;
  if (x->ns_len != y->ns_len) return x->ns_len < y->ns_len ? -1 : 1;
  return strcmp(x->name + x->ns_len, y->name + y->ns_len);
}

int cmd_ops(int argc, char **argv) {
  if (argc > 1) return tool_usage_error("kiln ops takes at most one namespace (got '%s' after '%s')", argv[1], argv[0]);
  const char *only = argc == 1 ? argv[0] : NULL;
  int n_lib = op_count(), n_exec = executor_native_op_count();
  op_row *rows = calloc((size_t)(n_lib + n_exec) + 1, sizeof *rows);
  if (!rows) {
    fprintf(stderr, "kiln: error: out of memory\n");
    return TOOL_FAILED;
  }
  int n = 0;
  for (int i = 0; i < n_lib; i++) {
    const op_def *d = op_at(i);
    rows[n++] = (op_row){d->name, namespace_len(d->name), d->lower != NULL, d->host != NULL, false};
  }
  for (int i = 0; i < n_exec; i++) {
    const char *name = executor_native_op_at(i);
    int k = 0;
    while (k < n && strcmp(rows[k].name, name) != 0) k++;
    if (k == n) rows[n++] = (op_row){name, namespace_len(name), false, false, false};
    rows[k].exec = true;
  }
  qsort(rows, (size_t)n, sizeof *rows, by_namespace_then_name);

  bool found = false;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && rows[j].ns_len == rows[i].ns_len && strncmp(rows[j].name, rows[i].name, rows[i].ns_len) == 0) j++;
    if (!only || (strlen(only) == rows[i].ns_len && strncmp(only, rows[i].name, rows[i].ns_len) == 0)) {
      int n_lower = 0, n_host = 0, n_ex = 0;
      for (int k = i; k < j; k++) {
        n_lower += rows[k].lower;
        n_host += rows[k].host;
        n_ex += rows[k].exec;
      }
      printf("%s%.*s: %d ops (%d with an HLO lowering, %d with a host kernel, %d run by the executor)\n",
             found ? "\n" : "", (int)rows[i].ns_len, rows[i].name, j - i, n_lower, n_host, n_ex);
      for (int k = i; k < j; k++)
        printf("  %c%c%c  %s\n", rows[k].lower ? 'L' : '-', rows[k].host ? 'H' : '-', rows[k].exec ? 'E' : '-',
               rows[k].name + rows[k].ns_len + (rows[k].ns_len ? 1 : 0));
      found = true;
    }
    i = j;
  }
  if (found) printf("\nL = lowered to HLO and compiled for the device, H = host kernel, E = interpreted by the "
                    "executor (E wins where both exist)\n");
  free(rows);
  if (!found && only) return tool_usage_error("no ops in namespace '%s' (try `kiln ops` for all of them)", only);
  return TOOL_OK;
}
