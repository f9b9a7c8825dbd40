/* Private interface between the parts of the OpenCL code generator: the generator state
 * (the plan being built, the source text, an arena for the many short strings, the
 * per-instruction materialization facts), the emission context of one kernel body or
 * reducer function (its output index, buffer arguments, memo table of values already
 * computed in the current block), and the functions the parts share: ocl_emit.c (string
 * helpers and the value emitter for elementwise and data-movement instructions),
 * ocl_contract.c (reductions, dot, convolution, reduce-window, the tiled and work-group
 * kernels), ocl_support.c (what the generator accepts) and ocl_codegen.c (which
 * instructions get kernels, kernel assembly). */
#ifndef KILN_OPENCL_OCL_GEN_H
#define KILN_OPENCL_OCL_GEN_H

#include <stdarg.h>

#include "ocl_internal.h"

/* A growing string. */
typedef struct sb {
  char *p;
  size_t n, cap;
  int oom;
} sb;

/* Arena block of strings and index vectors, freed with the generator. */
typedef struct arena_blk {
  struct arena_blk *next;
  char data[];
} arena_blk;

/* What the generator knows about one entry instruction (ocl_instr.user). */
typedef struct info {
  int uses;
  int size; /* operations inlined when this value is emitted */
  int materialized;
  int kernel;    /* when materialized */
  int const_idx; /* non-scalar constants: index in plan->consts */
} info;

typedef struct reducer_fn {
  const ocl_comp *comp;
  int dtype;
  char name[24];
} reducer_fn;

typedef struct gen {
  const ocl_module *m;
  const ocl_caps *caps;
  ocl_plan *plan;
  sb src;
  arena_blk *arena;
  reducer_fn *reducers;
  int n_reducers;
  info *infos;
  int code; /* first failure (KILN_PLUGIN_ERR_*), 0 while fine */
  char *err;
  size_t err_cap;
  int tmp; /* counter for fresh variable names */
} gen;

static inline info *inf(const ocl_instr *ins) { return (info *)ins->user; }

typedef struct memo {
  const ocl_instr *ins;
  char *key;
  char *var;
} memo;

/* Emission context: one kernel body or one reducer function. */
typedef struct ectx {
  gen *g;
  sb *out;
  int depth;           /* indentation */
  ocl_kernel_plan *kp; /* NULL in reducer functions */
  int ref_cap;
  int *ref_dtypes;
  const ocl_instr *self;
  const ocl_comp *comp; /* computation whose parameters are bound to variables (reducers) */
  char **param_vars;
  int out_rank;
  const int64_t *out_dims;
  memo *memo;
  int n_memo, memo_cap;
  /* Fusion instructions being emitted (innermost last): a parameter of a fused
   * computation is the innermost fusion's operand. */
  const ocl_instr *fus[16];
  int n_fus;
} ectx;

/* ---- ocl_emit.c: strings ---- */
void sb_vf(sb *b, const char *fmt, va_list ap);
void sbf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *gstr(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fail(gen *g, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char **idxv(gen *g, int n);
/* One indented statement line of the current body. */
void line(ectx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void open_block(ectx *c, const char *head);
void close_block(ectx *c, const char *tail);
/* Declares a fresh variable of dtype's compute type holding expr; returns its name. */
char *newvar(ectx *c, int dtype, const char *expr);

/* ---- ocl_emit.c: values ---- */
const char *suffix(int dtype); /* helper-function suffix: "s32", "f32" (f16/bf16 too), ... */
char *rnd(gen *g, int dtype, const char *e);
char *linear(gen *g, int rank, const int64_t *dims, char **idx);
int same_dims(int ra, const int64_t *a, int rb, const int64_t *b);
char *convert_expr(gen *g, int from, int to, const char *v);
int memo_mark(ectx *c);
void memo_reset(ectx *c, int mark);
/* The value of ins at multi-index idx (rank strings), as a variable name. */
char *emit(ectx *c, const ocl_instr *ins, char **idx);
int int_attr_list(const ocl_instr *ins, const char *key, int64_t *out);
/* Position of x in v[0..n), or -1. */
int in_list(const int64_t *v, int n, int64_t x);
/* An integer value of x at idx as a long variable (u64 saturating). */
char *index_value(ectx *c, const ocl_instr *x, char **idx);

/* ---- ocl_contract.c ---- */
const char *reducer_name(gen *g, const ocl_comp *comp, int dtype);
char *emit_reducer_call(ectx *c, const ocl_comp *comp, int dtype, const char *acc, const char *v);
char *emit_reduce(ectx *c, const ocl_instr *ins, char **idx, int j);
char *emit_dot(ectx *c, const ocl_instr *ins, char **idx);
char *emit_conv(ectx *c, const ocl_instr *ins, char **idx);
char *emit_reduce_window(ectx *c, const ocl_instr *ins, char **idx);
char *emit_scatter(ectx *c, const ocl_instr *ins, char **idx);
char *emit_select_and_scatter(ectx *c, const ocl_instr *ins, char **idx);
/* A comparator-like computation (2n scalars -> pred) as an OpenCL function. */
const char *comparator_name(gen *g, const ocl_comp *comp);
enum { TILE = 16, RED_THRESHOLD = 1024 };
int gen_tiled_dot(gen *g, const ocl_instr *ins, ocl_kernel_plan *kp, ectx *c);
int gen_tree_reduce(gen *g, const ocl_instr *ins, ocl_kernel_plan *kp, ectx *c);
/* Sort's component j (a scatter-style kernel: each element's stable rank is its place). */
void gen_sort(gen *g, const ocl_instr *ins, int j, ectx *c);

/* ---- ocl_support.c ---- */
enum { OP_UNKNOWN = -1, OP_UNARY = 0, OP_BINARY = 1, OP_OTHER = 2 };
int op_kind(const char *opcode);
/* compare's direction attribute (direction= or comparison_direction=). */
const char *direction_of(const ocl_instr *ins);

#endif
