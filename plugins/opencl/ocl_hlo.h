/* The OpenCL plugin's own view of an HLO module: the IR that ocl_parse.c builds from the
 * HLO text kiln hands to compile (kiln/plugin.h, KILN_PLUGIN_FORMAT_HLO_TEXT), and that
 * the code generator reads. The plugin is written as an outside vendor would write it —
 * it sees only kiln/plugin.h and OpenCL — so it parses the text itself instead of
 * linking kiln's HLO library.
 *
 * The IR is deliberately thin: each instruction keeps its opcode as XLA spells it, its
 * shape, its operands, the computations it calls and its attributes as raw text
 * (`dimensions={1}` is key "dimensions", value "{1}"); the ocl_parse_* helpers below
 * decode the attribute forms the generator needs. Element types are kiln/plugin.h's
 * KILN_DTYPE_* values (0 = tuple; OCL_DTYPE_TOKEN for token[]). */
#ifndef KILN_OPENCL_OCL_HLO_H
#define KILN_OPENCL_OCL_HLO_H

#include <stddef.h>
#include <stdint.h>

#define OCL_MAX_RANK 16
#define OCL_DTYPE_TOKEN 100 /* token[]: no data */

typedef struct ocl_shape {
  int dtype;                   /* KILN_DTYPE_*; 0 for a tuple */
  int rank;
  int64_t dims[OCL_MAX_RANK];
  int n_elems;                 /* tuple: element shapes */
  struct ocl_shape *elems;
} ocl_shape;

typedef struct ocl_comp ocl_comp;

typedef struct ocl_instr {
  char *name;                  /* without the leading '%' */
  char *opcode;                /* "add", "get-tuple-element", "custom-call", ... */
  ocl_shape shape;
  int is_root;
  int n_operands;
  struct ocl_instr **operands; /* in the same computation */
  int n_called;                /* to_apply / condition, body / calls / branch_computations / comparator ... */
  ocl_comp **called;           /* in the order the attributes name them */
  int n_attrs;
  char **attr_keys;            /* "dimensions", "slice", "window", "dim_labels", "comparison_direction", ... */
  char **attr_values;          /* raw text after '=', balanced brackets/quotes kept: "{1}", "LT", "%add_f" */
  /* Decoded for convenience: */
  int64_t parameter_number;    /* parameter(N) */
  int64_t int_payload;         /* get-tuple-element index=, iota iota_dimension=, concatenate dimensions={d} */
  void *literal;               /* constant: dense row-major bytes in shape.dtype (pred one byte, f16/bf16 raw bits) */
  size_t literal_bytes;
  int index;                   /* position in its computation */
  void *user;                  /* free for the code generator */
} ocl_instr;

struct ocl_comp {
  char *name;
  int is_entry;
  int n_instrs;
  ocl_instr **instrs;          /* in text order (operands before users in kiln's output) */
  ocl_instr *root;
  int n_params;
  ocl_instr **params;          /* by parameter number */
};

typedef struct ocl_module {
  char *name;
  int n_comps;
  ocl_comp **comps;
  ocl_comp *entry;
} ocl_module;

/* Parses HLO text (text[0..len)). On failure returns nonzero and writes a message
 * naming line:col and what was expected into err[0..err_cap). Never crashes on any
 * input (fuzzed). */
int ocl_parse_module(const char *text, size_t len, ocl_module **out, char *err, size_t err_cap);
void ocl_module_free(ocl_module *m);

/* The raw value of attribute key, or NULL. */
const char *ocl_attr(const ocl_instr *ins, const char *key);
/* Bytes of one element of dtype (pred 1); 0 for tuples/tokens. */
size_t ocl_dtype_size(int dtype);
/* Elements of an array shape. */
int64_t ocl_shape_elems(const ocl_shape *s);

/* Attribute decoders. Each returns the number of entries written (<= cap), or -1 when
 * the text is malformed or has more than cap entries. */
/* "{1,0}", "{}" */
int ocl_parse_int_list(const char *v, int64_t *out, int cap);
/* slice={[0:4], [1:5:2]}: stride 1 when omitted */
int ocl_parse_slice(const char *v, int64_t *start, int64_t *limit, int64_t *stride, int cap);

typedef struct ocl_window_dim {
  int64_t size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate;
  int reversal;
} ocl_window_dim;
/* window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=2x2 rhs_reversal=0x0};
 * missing fields default to size 1, stride 1, pad 0, dilation 1, no reversal. */
int ocl_parse_window(const char *v, ocl_window_dim *out, int cap);

typedef struct ocl_pad_dim {
  int64_t lo, hi, interior;
} ocl_pad_dim;
/* padding=0_0x1_2_1 (lo_hi or lo_hi_interior per dimension; negatives allowed) */
int ocl_parse_padding(const char *v, ocl_pad_dim *out, int cap);

typedef struct ocl_conv_dnums {
  int n_spatial;
  int64_t in_batch, in_feature, in_spatial[OCL_MAX_RANK];
  int64_t k_in_feature, k_out_feature, k_spatial[OCL_MAX_RANK];
  int64_t out_batch, out_feature, out_spatial[OCL_MAX_RANK];
} ocl_conv_dnums;
/* dim_labels=b01f_01io->b01f (dimension numbers: which tensor dimension is which).
 * Returns 0 on success, -1 when malformed. */
int ocl_parse_conv_dnums(const char *v, ocl_conv_dnums *out);

#endif
