/* The `interpreter` backend: the reference evaluator behind the backend vtable. Compile
 * only checks that every opcode is one the evaluator implements and keeps a copy of the
 * module (callers may release theirs right after compiling, as the cluster runner does:
 * its modules borrow the graph's weights for the compile only). */
#include <stdlib.h>

#include "backends/backend.h"
#include "eval/eval.h"
#include "hlo/clone.h"

struct backend_executable {
  hlo_module *module;
};

static bool interp_supports(const backend *b, const hlo_instr *ins) { return eval_supports(ins); }

/* Nothing the evaluator does depends on compile options. */
static kiln_status interp_compile(const backend *b, const hlo_module *m, const backend_compile_options *opts,
                                  backend_executable **out) {
  for (int c = 0; c < m->n_comps; c++) {
    const hlo_computation *comp = m->comps[c];
    for (int i = 0; i < comp->n_instrs; i++) {
      const hlo_instr *ins = comp->instrs[i];
      if (eval_supports(ins)) continue;
      if (ins->op == HLO_OP_CUSTOM_CALL) /* the target is what the user needs to know */
        return status_error(KILN_UNIMPLEMENTED, "interpreter: %s: custom-call target \"%s\" is not supported by the evaluator",
                            ins->name, ins->custom_call_target ? ins->custom_call_target : "");
      return status_error(KILN_UNIMPLEMENTED, "interpreter: %s: opcode %s is not supported by the evaluator",
                          ins->name, hlo_opcode_name(ins->op));
    }
  }
  backend_executable *e = malloc(sizeof *e);
  if (!e) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status s = hlo_module_clone(m, &e->module);
  if (s) {
    free(e);
    return s;
  }
  *out = e;
  return NULL;
}

static kiln_status interp_execute(backend_executable *e, hlo_literal *const *args, int n_args, hlo_literal **out) {
  return eval_module(e->module, args, n_args, out);
}

static void interp_destroy(backend_executable *e) {
  if (!e) return;
  hlo_module_free(e->module);
  free(e);
}

const backend interpreter_backend = {
    .name = "interpreter",
    .priority = 10,
    .description = "reference evaluator (exact XLA semantics, slow)",
    .supports = interp_supports,
    .compile = interp_compile,
    .execute = interp_execute,
    .destroy = interp_destroy,
};
