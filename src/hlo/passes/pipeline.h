/* HLO pass pipelines, in the shape of XLA's HloPassPipeline and HloPassFix.
 *
 * A pipeline is a named, ordered list of entries; an entry is either a pass (a name and
 * a function that rewrites the module and says whether it changed anything) or a nested
 * sub-pipeline that is rerun until none of its passes changes the module, up to an
 * iteration cap (fix). Running a pipeline:
 *   - skips passes named in options.disabled_passes;
 *   - runs the verifier after every pass that reported a change, and reports a failure
 *     as "after pass NAME: <verifier message>" so a broken pass names itself;
 *   - when options.dump_to is set, writes DIR/module_NNNN.MODULE.before_optimizations.hlo
 *     before the first pass, DIR/module_NNNN.MODULE.SSSS.after_PASS.hlo after each pass
 *     whose name matches options.dump_pass_re (POSIX extended regex, searched anywhere in
 *     the name, like XLA's --xla_dump_hlo_pass_re), and
 *     DIR/module_NNNN.MODULE.after_optimizations.hlo at the end. NNNN is
 *     options.module_id and SSSS counts the dumps of this run, both zero-padded to 4.
 *
 * Passes come in two signatures: the plain `kiln_status (*)(hlo_module*, bool *changed)`
 * and one with a context pointer for passes configured by their caller (a backend's
 * layout or fusion policy); the pipeline never owns a pass's context. */
#ifndef KILN_HLO_PASSES_PIPELINE_H
#define KILN_HLO_PASSES_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "hlo/ir.h"

typedef kiln_status (*hlo_pass_fn)(hlo_module *m, bool *changed);
typedef kiln_status (*hlo_pass_ctx_fn)(hlo_module *m, void *ctx, bool *changed);

typedef struct hlo_pipeline hlo_pipeline;

typedef struct hlo_pipeline_options {
  const char *dump_to;        /* NULL or "": no dumps */
  const char *dump_pass_re;   /* NULL: ".*" */
  bool dump_large_constants;  /* false: constants over 10 elements dump as {...} */
  const char *disabled_passes; /* comma-separated pass names; NULL: none */
  bool verify;                /* run hlo_verify_module after each changing pass */
  int module_id;              /* NNNN in dump file names */
  /* Between passes (at any depth), compact the module (hlo_module_compact) once more of
   * its instructions are dead than live: for a caller that owns the module and holds no
   * pointer into it across the run. Off by default. */
  bool compact;
} hlo_pipeline_options;

/* Defaults: no dumps, verify on, module_id 0. */
hlo_pipeline_options hlo_pipeline_options_default(void);

/* The default fix() cap, as XLA's HloPassFix uses. */
#define HLO_FIX_DEFAULT_MAX_ITERS 25

hlo_pipeline *hlo_pipeline_new(const char *name);
void hlo_pipeline_free(hlo_pipeline *p);
void hlo_pipeline_add_pass(hlo_pipeline *p, const char *name, hlo_pass_fn run);
void hlo_pipeline_add_pass_ctx(hlo_pipeline *p, const char *name, hlo_pass_ctx_fn run, void *ctx);
/* Appends `sub` (ownership moves to p), rerun until no pass in it changes the module or
 * max_iters runs have happened (then the pipeline moves on, as HloPassFix does; with
 * --v=1 a note says the cap was hit). max_iters 1 nests a sub-pipeline without
 * iterating. */
void hlo_pipeline_add_fix(hlo_pipeline *p, hlo_pipeline *sub, int max_iters);
const char *hlo_pipeline_name(const hlo_pipeline *p);

/* Runs every entry in order. *changed (may be NULL) tells whether any pass changed the
 * module. On error the module may be partially rewritten; callers discard it. */
kiln_status hlo_pipeline_run(const hlo_pipeline *p, hlo_module *m, const hlo_pipeline_options *opts, bool *changed);

/* The minimal target-independent pipeline: fix(dce). `kiln compile` runs the full one
 * below; backends build their own pipelines and may start from either. */
hlo_pipeline *hlo_pipeline_new_default(void);

/* The full target-independent optimization pipeline:
 *   call-inliner, batchnorm-expander, fix(algsimp, constant-folding, cse, dce),
 *   transpose-folding, fix(algsimp, cse, dce).
 * constant_folding is the folding pass (eval_pass_constant_folding from
 * eval/constant_folding.h) or NULL to leave it out: kiln_hlo cannot call the evaluator
 * itself, so whoever links kiln_eval passes it in. */
hlo_pipeline *hlo_pipeline_new_optimize(hlo_pass_fn constant_folding);

/* ---- passes defined in src/hlo/passes ---- */

/* Call inlining (call_inliner.c), as XLA's CallInliner: every call instruction, in
 * every computation, nested calls included, is replaced by a copy of its callee's
 * instructions (fresh module-unique names, definition order restored); callees no
 * longer reachable from the entry are removed from the module. Afterwards the module
 * has no call instructions; the evaluator still runs them when no pipeline does. */
kiln_status hlo_pass_call_inliner(hlo_module *m, bool *changed);

/* Dead code elimination: removes instructions that do not reach a computation's root
 * (keeping parameters and side-effecting instructions), then computations no longer
 * reachable from the entry. */
kiln_status hlo_pass_dce(hlo_module *m, bool *changed);

/* Common subexpression elimination (cse.c): merges identical side-effect-free
 * instructions of a computation; constants compare by value. */
kiln_status hlo_pass_cse(hlo_module *m, bool *changed);

/* Bit-exact algebraic identities (algebraic_simplifier.c; each rule documented there). */
kiln_status hlo_pass_algebraic_simplifier(hlo_module *m, bool *changed);

/* batch-norm-inference -> elementwise ops, bit-identical to the evaluator's kernel. */
kiln_status hlo_pass_batchnorm_expander(hlo_module *m, bool *changed);

/* dot(transpose(a), b) -> dot(a, b) with renamed dimension numbers, when exact. */
kiln_status hlo_pass_transpose_folding(hlo_module *m, bool *changed);

/* Instruction fusion (fusion.c): kLoop / kInput (reduce root) / kOutput (dot or
 * convolution + elementwise post-op chain) / kCustom (a softmax over the minor
 * dimension) fusion instructions calling fused computations; bit-identical, originals
 * left for DCE. What a product's epilogue may end with beyond plain elementwise ops
 * (an activation one post-op applies) and which softmaxes become kCustom groups is the
 * backend's policy; hlo_pass_fusion has none (no activations, no kCustom groups). */
#define HLO_FUSION_MAX_ACTIVATION_INNER 4
#define HLO_FUSION_SOFTMAX_INNER 6
typedef struct hlo_fusion_policy {
  /* An activation ending at multiply m: sets *x to the activated value and
   * inner[0 .. *n_inner) (at most HLO_FUSION_MAX_ACTIVATION_INNER) to the instructions
   * between, the one reading x first. NULL: none. */
  bool (*match_activation)(const hlo_instr *m, const hlo_instr **x, const hlo_instr **inner, int *n_inner);
  /* A softmax ending at d: sets *x and the HLO_FUSION_SOFTMAX_INNER instructions between. NULL: none. */
  bool (*match_softmax)(const hlo_instr *d, const hlo_instr **x, const hlo_instr **inner);
  /* An op cheap in general that the backend computes at a cost per element (a
   * conversion it rounds in software): like the expensive ops it is not fused into a
   * group that would compute it again for every element a broadcast makes of it, and
   * stays a kernel of its own. NULL: none. */
  bool (*costly_per_element)(const hlo_instr *ins);
} hlo_fusion_policy;
kiln_status hlo_pass_fusion(hlo_module *m, bool *changed);
kiln_status hlo_pass_fusion_with(hlo_module *m, const hlo_fusion_policy *policy, bool *changed);

/* The most code a kLoop / kInput fusion grows to, in hlo_pass_fusion_code_cost units
 * summed over its instructions. LLVM's optimiser and register allocator take time
 * super-linear in a function's size (a 1,000-instruction elementwise chain fused whole
 * compiles ~10x slower than as 128-unit kernels, 2,000 ~30x), while materialising a
 * value every ~50 instructions costs a negligible store and load, so a longer group is
 * split into several kernels, as XLA bounds its fusions. A group's growth stops at the
 * first producer that brings it to this cost or past it. */
#define HLO_FUSION_MAX_COST 128
int hlo_pass_fusion_code_cost(const hlo_instr *ins);

/* Steps the last hlo_pass_fusion on the calling thread took: candidate producers queued
 * and examined, users scanned when a member joins, members and inputs of the groups
 * built. A debug counter for tests that check the pass stays linear in the module's
 * size without timing it. */
uint64_t hlo_pass_fusion_last_work(void);

/* Removes every opt-barrier, its uses redirected to its operand (get-tuple-elements of a
 * tuple through it read the tuple's elements), as XLA does at the end of optimization
 * (opt_barrier_expander.c). */
kiln_status hlo_pass_opt_barrier_expander(hlo_module *m, bool *changed);

/* custom-call "TopK" (XLA's optimised form of top-k) whose comparator is a plain GT or
 * LT of the values (total order for floats) -> topk(x), k, largest, in place
 * (topk_custom_call.c). */
kiln_status hlo_pass_topk_custom_call(hlo_module *m, bool *changed);

/* Rewrites every dot to [batch..., M, K] x [batch..., K, N] -> [batch..., M, N] with one
 * contracting dimension, plus reshapes/transposes around it (dot_canonicalize.c). */
kiln_status hlo_pass_dot_canonicalize(hlo_module *m, bool *changed);

/* Layout-changing bitcasts -> transpose / reshape / transpose (the reshape a
 * default-layout bitcast when the element type changes) with the evaluator's
 * physical-order semantics (bitcast_layouts.c); bitcasts with default layouts on both
 * sides stay. Afterwards no instruction's meaning depends on a layout. */
kiln_status hlo_pass_bitcast_layouts(hlo_module *m, bool *changed);

/* Building blocks for backends' pipelines (src/backends/cpu/cpu_pipeline.c): the
 * optimize pipeline's passes appended to p, and fix(algsimp, constant-folding when
 * given, cse, dce) named `name` appended to p. */
void hlo_pipeline_add_optimize_passes(hlo_pipeline *p, hlo_pass_fn constant_folding);
void hlo_pipeline_add_simplification(hlo_pipeline *p, const char *name, hlo_pass_fn constant_folding);

#endif
