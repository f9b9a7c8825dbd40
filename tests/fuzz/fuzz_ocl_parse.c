/* libFuzzer target for the OpenCL plugin's own HLO text parser (plugins/opencl/ocl_parse.c).
 * Any input must either fail with a located message ("line:col: ...") or parse into a
 * module whose invariants hold (operands earlier in the same computation, called
 * computations and parameters present, constants exactly as many bytes as their shape);
 * every attribute value is then fed to every decoder, and the raw input is decoded too.
 * Differentially, when kiln's own parser and verifier accept the input, the text kiln
 * prints for it (what a plugin receives) must parse here as well, unless it uses something the
 * plugin documents as unsupported (narrow or complex element types, dynamic
 * dimensions). A crash, leak, hang or broken invariant (abort) is a bug. Built by the
 * KILN_FUZZ loop in tests/CMakeLists.txt with ocl_parse.c added; seeded by
 * scripts/fuzz.sh from tests/hlo/corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/literal.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "ocl_hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int cond, const char *what) {
  if (!cond) {
    fprintf(stderr, "fuzz_ocl_parse: invariant broken: %s\n", what);
    abort();
  }
}

static void decode_all(const char *v) {
  int64_t a[OCL_MAX_RANK], b[OCL_MAX_RANK], c[OCL_MAX_RANK];
  ocl_window_dim w[OCL_MAX_RANK];
  ocl_pad_dim pd[OCL_MAX_RANK];
  ocl_conv_dnums dn;
  int n = ocl_parse_int_list(v, a, OCL_MAX_RANK);
  require(n >= -1 && n <= OCL_MAX_RANK, "int list count");
  n = ocl_parse_slice(v, a, b, c, OCL_MAX_RANK);
  require(n >= -1 && n <= OCL_MAX_RANK, "slice count");
  n = ocl_parse_window(v, w, OCL_MAX_RANK);
  require(n >= -1 && n <= OCL_MAX_RANK, "window count");
  n = ocl_parse_padding(v, pd, OCL_MAX_RANK);
  require(n >= -1 && n <= OCL_MAX_RANK, "padding count");
  if (ocl_parse_conv_dnums(v, &dn) == 0) require(dn.n_spatial >= 0 && dn.n_spatial <= 10, "dnums spatial count");
  /* Small caps must be respected too. */
  ocl_parse_int_list(v, a, 1);
  ocl_parse_window(v, w, 1);
  ocl_parse_padding(v, pd, 1);
}

static int64_t literal_bytes_of(const ocl_shape *s) {
  if (s->dtype == 0) {
    int64_t t = 0;
    for (int i = 0; i < s->n_elems; i++) t += literal_bytes_of(&s->elems[i]);
    return t;
  }
  return ocl_shape_elems(s) * (int64_t)ocl_dtype_size(s->dtype);
}

static void check_module(const ocl_module *m) {
  require(m->n_comps > 0 && m->entry && m->entry->is_entry && m->name, "module");
  for (int ci = 0; ci < m->n_comps; ci++) {
    const ocl_comp *c = m->comps[ci];
    require(c && c->name && c->n_instrs > 0 && c->root && c->root->is_root, "computation");
    require(c->is_entry == (c == m->entry), "one entry");
    for (int i = 0; i < c->n_params; i++)
      require(c->params[i] && c->params[i]->parameter_number == i, "params by number");
    for (int i = 0; i < c->n_instrs; i++) {
      const ocl_instr *ins = c->instrs[i];
      require(ins->index == i && ins->name && ins->opcode, "instruction");
      require(ins->is_root == (ins == c->root), "one root");
      for (int k = 0; k < ins->n_operands; k++)
        require(ins->operands[k] && ins->operands[k]->index < i && c->instrs[ins->operands[k]->index] == ins->operands[k],
                "operand earlier in the same computation");
      for (int k = 0; k < ins->n_called; k++) {
        int found = 0;
        for (int j = 0; j < m->n_comps; j++) found |= m->comps[j] == ins->called[k];
        require(found, "called computation in the module");
      }
      if (strcmp(ins->opcode, "constant") == 0)
        require(ins->literal && (int64_t)ins->literal_bytes == literal_bytes_of(&ins->shape), "constant size");
      if (strcmp(ins->opcode, "get-tuple-element") == 0)
        require(ins->n_operands == 1 && ins->int_payload >= 0 &&
                    ins->int_payload < ins->operands[0]->shape.n_elems,
                "get-tuple-element index");
      for (int k = 0; k < ins->n_attrs; k++) {
        require(ocl_attr(ins, ins->attr_keys[k]) == ins->attr_values[k], "attribute lookup");
        decode_all(ins->attr_values[k]);
      }
    }
  }
}

static void check_error(int rc, const char *err) {
  int line, col, k = 0;
  require(rc != 0, "failure returns nonzero");
  require(sscanf(err, "%d:%d: %n", &line, &col, &k) == 2 && k > 0 && line >= 1 && col >= 1, "located error message");
}

/* Errors the plugin reports on purpose for text kiln accepts. */
static int documented_rejection(const char *err) {
  static const char *const ok[] = {"unsupported element type", "dynamic dimensions", "nested more than",
                                   "more than 256 attributes", "too large"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strstr(err, ok[i])) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ocl_module *m = NULL;
  char err[512];
  int rc = ocl_parse_module((const char *)data, size, &m, err, sizeof err);
  if (rc == 0) {
    check_module(m);
    ocl_module_free(m);
  } else {
    require(m == NULL, "no module on failure");
    check_error(rc, err);
  }

  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  decode_all(s);
  free(s);

  /* Differential: what kiln prints for text it accepts must parse here. */
  literal_max_bytes = 64 * 1024;
  hlo_module *km = NULL;
  kiln_status st = hlo_parse((const char *)data, size, "fuzz.hlo", &km);
  /* Only modules kiln's verifier passes reach a plugin. */
  if (!st) {
    st = hlo_verify_module(km);
    if (st) hlo_module_free(km);
  }
  if (st) {
    kiln_status_free(st);
    return 0;
  }
  char *printed = hlo_module_to_string(km, NULL);
  hlo_module_free(km);
  rc = ocl_parse_module(printed, strlen(printed), &m, err, sizeof err);
  if (rc == 0) {
    check_module(m);
    ocl_module_free(m);
  } else if (!documented_rejection(err)) {
    fprintf(stderr, "kiln-printed module does not parse: %s\n----\n%s\n", err, printed);
    abort();
  }
  free(printed);
  return 0;
}
