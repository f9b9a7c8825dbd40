/* Helpers the unit tests share: parse-and-verify HLO text, parse graph text, evaluate a
 * module on deterministic pseudo-random arguments, compare two modules' results bit for
 * bit, run one HLO pass under those checks, count instructions by opcode, compare the cpu
 * backend with the evaluator. */
#ifndef KILN_TESTS_CHECK_UTIL_H
#define KILN_TESTS_CHECK_UTIL_H

#include <stdint.h>

#include "graph/graph.h"
#include "hlo/ir.h"
#include "hlo/passes/pipeline.h"

/* Parses and verifies text; on failure reports it and aborts the test program (every
 * later check would only crash on the missing module). */
hlo_module *check_parse_hlo(const char *text);

/* Parses graph text (graph/graph.h); on failure reports it and aborts, as above. */
graph *check_parse_graph(const char *text);

/* Evaluates the entry on arguments filled by literal_fill_pseudo_random with seeds
 * seed, seed + 1, ... . An evaluator error goes to *err when err is given (the result
 * is then NULL), else it is a failed check. */
hlo_literal *check_eval_random(const hlo_module *m, uint64_t seed, kiln_status *err);

/* Both modules evaluate (same seed) to bitwise-equal results. */
void check_same_eval(const hlo_module *a, const hlo_module *b, uint64_t seed);

/* Runs pass then DCE on a fresh parse of text; checks `changed`, verification after each
 * and that the results match the module as written bit for bit (seed 17). Returns the
 * rewritten module. */
hlo_module *check_run_pass(const char *text, hlo_pass_fn pass, bool expect_changed);

/* How many instructions of c have opcode op. */
int check_count_op(const hlo_computation *c, hlo_opcode op);
/* Runs fn with stderr going to a temporary file and returns what it wrote (malloc'ed). */
char *check_capture_stderr(void (*fn)(void));

/* Compiles text on the cpu backend with profiling (must succeed), runs it twice on
 * pseudo-random arguments for three seeds and checks the results equal the evaluator's
 * bit for bit; the stderr of the first seed (compile warning, profile) must contain
 * every string of expect (NULL-terminated; one starting with '!' must be absent
 * instead) and no "error". */
void check_cpu_like_evaluator(const char *text, const char *const *expect);
/* The cpu backend's supports() refuses the entry instruction named `name` of text. */
void check_cpu_refuses(const char *text, const char *name);

#endif
