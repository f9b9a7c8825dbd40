/* The table of native kernel kinds and the dispatch over it (see cpu_native.h). The
 * first kind whose supports() accepts an instruction runs it. */
#include "backends/cpu/cpu_native.h"

#include <stdlib.h>

struct cpu_native {
  const cpu_native_kind *kind;
  void *state;
};

static const cpu_native_kind *const kinds[] = {
    &cpu_native_update_slice,
    &cpu_native_dynamic_slice,
    &cpu_native_scan,
    &cpu_native_sort,
    &cpu_native_topk,
    &cpu_native_scatter,
    &cpu_native_select_and_scatter,
    &cpu_native_reduce_window,
    &cpu_native_lapack,
    NULL, /* end of the table */
};

static const cpu_native_kind *kind_for(const hlo_instr *ins) {
  for (int i = 0; kinds[i]; i++)
    if (kinds[i]->supports(ins, NULL)) return kinds[i];
  return NULL;
}

bool cpu_native_supports(const hlo_instr *ins, strbuf *why) {
  if (kind_for(ins)) return true;
  /* Let the kinds that handle this opcode say why not. */
  for (int i = 0; kinds[i]; i++) kinds[i]->supports(ins, why);
  return false;
}

kiln_status cpu_native_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, cpu_native **out,
                              bool *uses_jit) {
  *out = NULL;
  *uses_jit = false;
  const cpu_native_kind *k = kind_for(ins);
  if (!k) return ERR_UNIMPLEMENTED("cpu: %s (%s) has no native kernel", ins->name, hlo_opcode_name(ins->op));
  cpu_native *n = calloc(1, sizeof *n);
  if (!n) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  n->kind = k;
  kiln_status st = k->create(ins, jm, prefix, &n->state, uses_jit);
  if (st) {
    free(n);
    return status_wrap(st, "cpu: %s", ins->name);
  }
  *out = n;
  return NULL;
}

kiln_status cpu_native_link(cpu_native *n, cpu_jit *jit) { return n->kind->link ? n->kind->link(n->state, jit) : NULL; }

kiln_status cpu_native_run(const cpu_native *n, char *const *out, char *const *in) {
  return n->kind->run(n->state, out, in);
}

void cpu_native_destroy(cpu_native *n) {
  if (!n) return;
  if (n->kind->destroy) n->kind->destroy(n->state);
  free(n);
}
