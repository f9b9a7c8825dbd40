/* Tests for the HLO text parser and printer: print/parse round trips on every corpus
 * file (under several print options), typed attribute fields, the ordering the parser
 * guarantees, literal values, deterministic elided constants, and located errors for
 * malformed input (run under ASan/LSan in CI, so error paths must not leak). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

#define CORPUS_DIR "tests/hlo/corpus"

static hlo_module *parse_ok(const char *text) {
  hlo_module *m = NULL;
  kiln_status s = hlo_parse(text, strlen(text), "test.hlo", &m);
  if (s) {
    check_fail(__FILE__, __LINE__, "parse", kiln_status_message(s));
    fprintf(stderr, "---- input ----\n%s\n", text);
    kiln_status_free(s);
    return NULL;
  }
  return m;
}

static hlo_instr *find(hlo_module *m, const char *name) {
  for (int c = 0; c < m->n_comps; c++) {
    hlo_instr *i = hlo_computation_find_instr(m->comps[c], name);
    if (i) return i;
  }
  return NULL;
}

static bool has_raw(const hlo_instr *ins, const char *key, const char *value) {
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (strcmp(ins->raw_attrs[i].key, key) == 0) return strcmp(ins->raw_attrs[i].value, value) == 0;
  return false;
}

static bool ints_eq(const hlo_ints *v, int n, const int64_t *want) {
  if (v->n != n) return false;
  for (int i = 0; i < n; i++)
    if (v->v[i] != want[i]) return false;
  return true;
}
#define INTS(v, ...) ints_eq(&(v), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* Structural invariants every parsed module must satisfy (ir.h). */
static void check_structure(const hlo_module *m, const char *what) {
  CHECK(m->n_comps > 0);
  CHECK(m->entry != NULL);
  if (!m->entry) return;
  CHECK(m->comps[m->n_comps - 1] == m->entry);
  CHECK(m->entry->is_entry);
  for (int c = 0; c < m->n_comps; c++) {
    const hlo_computation *comp = m->comps[c];
    CHECK(comp->root != NULL);
    CHECK(comp->is_entry == (comp == m->entry));
    for (int p = 0; p < comp->n_params; p++) CHECK(comp->params[p] && comp->params[p]->parameter_number == p);
    for (int i = 0; i < comp->n_instrs; i++) {
      const hlo_instr *ins = comp->instrs[i];
      CHECK(ins->parent == comp);
      for (int k = 0; k < ins->n_operands; k++) {
        bool before = false;
        for (int j = 0; j < i; j++) before |= comp->instrs[j] == ins->operands[k];
        if (!before) fprintf(stderr, "%s: operand %s of %s does not precede it\n", what, ins->operands[k]->name, ins->name);
        CHECK(before);
      }
      for (int k = 0; k < ins->n_called; k++) {
        bool callee_first = false;
        for (int j = 0; j < c; j++) callee_first |= m->comps[j] == ins->called[k];
        CHECK(callee_first);
      }
    }
  }
}

/* print(parse(print(m))) == print(m) under the given options. */
static void check_round_trip(const hlo_module *m, const hlo_print_options *o, const char *what) {
  char *t1 = hlo_module_to_string(m, o);
  hlo_module *m2 = NULL;
  kiln_status s = hlo_parse(t1, strlen(t1), what, &m2);
  if (s) {
    check_fail(__FILE__, __LINE__, what, kiln_status_message(s));
    kiln_status_free(s);
    free(t1);
    return;
  }
  check_structure(m2, what);
  char *t2 = hlo_module_to_string(m2, o);
  if (strcmp(t1, t2) != 0) {
    check_fail(__FILE__, __LINE__, "print(parse(print(m))) == print(m)", what);
    size_t i = 0;
    while (t1[i] && t1[i] == t2[i]) i++;
    fprintf(stderr, "first difference at byte %zu:\n< %.120s\n> %.120s\n", i, t1 + i, t2 + i);
  }
  free(t1);
  free(t2);
  hlo_module_free(m2);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_corpus_round_trip(void) {
  DIR *d = opendir(CORPUS_DIR);
  CHECK(d != NULL);
  if (!d) return;
  char *names[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 256) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".hlo") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  CHECK(n >= 15);
  hlo_print_options variants[5];
  for (int v = 0; v < 5; v++) variants[v] = hlo_print_options_default();
  variants[1].print_percent = false;
  variants[2].print_operand_shapes = false;
  variants[3].print_layouts = false;
  variants[3].print_metadata = false;
  variants[4].print_large_constants = false;
  for (int i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, names[i]);
    hlo_module *m = NULL;
    kiln_status s = hlo_parse_file(path, &m);
    if (s) {
      check_fail(__FILE__, __LINE__, path, kiln_status_message(s));
      kiln_status_free(s);
    } else {
      check_structure(m, path);
      for (int v = 0; v < 5; v++) check_round_trip(m, &variants[v], path);
      hlo_module_free(m);
    }
    free(names[i]);
  }
}

static void test_window_and_dim_labels(void) {
  hlo_module *m = parse_ok(
      "HloModule w\n"
      "add { x = f32[] parameter(0) y = f32[] parameter(1) ROOT s = f32[] add(x, y) }\n"
      "ENTRY e {\n"
      "  in = f32[1,5,5,3] parameter(0)\n"
      "  k = f32[3,3,3,4] parameter(1)\n"
      "  c = f32[1,3,3,4] convolution(in, k), window={size=3x3 stride=2x2 pad=1_1x0_2 lhs_dilate=1x2 rhs_dilate=2x1 "
      "rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1\n"
      "  n = f32[2,4,7,7] parameter(2)\n"
      "  ok = f32[6,2,3,3] parameter(3)\n"
      "  c2 = f32[2,6,5,5] convolution(n, ok), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2\n"
      "  s = f32[2,10,3] parameter(4)\n"
      "  k1 = f32[4,3,5] parameter(5)\n"
      "  c3 = f32[2,3,5] convolution(s, k1), window={size=4 stride=3 pad=0_2}, dim_labels=b0f_0io->b0f\n"
      "  v = f32[1,4,4,4,2] parameter(6)\n"
      "  k3 = f32[2,2,2,2,3] parameter(7)\n"
      "  c4 = f32[1,3,3,3,3] convolution(v, k3), window={size=2x2x2}, dim_labels=b012f_012io->b012f\n"
      "  z = f32[] constant(0)\n"
      "  rw = f32[1,3,3,4] reduce-window(c, z), window={size=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=add\n"
      "  ROOT t = (f32[1,3,3,4], f32[2,6,5,5], f32[2,3,5], f32[1,3,3,3,3], f32[1,3,3,4]) tuple(c, c2, c3, c4, rw)\n"
      "}\n");
  if (!m) return;
  check_structure(m, "window");
  hlo_instr *c = find(m, "c");
  CHECK(c->window.rank == 2);
  CHECK(c->window.dims[0].size == 3 && c->window.dims[0].stride == 2);
  CHECK(c->window.dims[0].pad_lo == 1 && c->window.dims[0].pad_hi == 1);
  CHECK(c->window.dims[1].pad_lo == 0 && c->window.dims[1].pad_hi == 2);
  CHECK(c->window.dims[0].lhs_dilate == 1 && c->window.dims[1].lhs_dilate == 2);
  CHECK(c->window.dims[0].rhs_dilate == 2 && c->window.dims[1].rhs_dilate == 1);
  CHECK(!c->window.dims[0].reversal && c->window.dims[1].reversal);
  CHECK(c->has_conv_dnums && c->conv.n_spatial == 2);
  CHECK(c->conv.input_batch == 0 && c->conv.input_feature == 3);
  CHECK(c->conv.input_spatial[0] == 1 && c->conv.input_spatial[1] == 2);
  CHECK(c->conv.kernel_input_feature == 2 && c->conv.kernel_output_feature == 3);
  CHECK(c->conv.kernel_spatial[0] == 0 && c->conv.kernel_spatial[1] == 1);
  CHECK(c->conv.output_batch == 0 && c->conv.output_feature == 3);
  CHECK(c->feature_group_count == 1 && c->batch_group_count == 1);
  hlo_instr *c2 = find(m, "c2");
  CHECK(c2->conv.input_batch == 0 && c2->conv.input_feature == 1);
  CHECK(c2->conv.input_spatial[0] == 2 && c2->conv.input_spatial[1] == 3);
  CHECK(c2->conv.kernel_output_feature == 0 && c2->conv.kernel_input_feature == 1);
  CHECK(c2->conv.kernel_spatial[0] == 2 && c2->conv.kernel_spatial[1] == 3);
  CHECK(c2->feature_group_count == 2);
  CHECK(c2->window.dims[1].stride == 1 && c2->window.dims[1].pad_hi == 0 && c2->window.dims[1].rhs_dilate == 1);
  hlo_instr *c3 = find(m, "c3");
  CHECK(c3->conv.n_spatial == 1 && c3->window.rank == 1 && c3->conv.input_feature == 2 && c3->conv.kernel_input_feature == 1);
  hlo_instr *c4 = find(m, "c4");
  CHECK(c4->conv.n_spatial == 3 && c4->conv.output_spatial[2] == 3 && c4->conv.output_feature == 4);
  hlo_instr *rw = find(m, "rw");
  CHECK(rw->window.rank == 4 && rw->window.dims[2].pad_hi == 1 && rw->window.dims[2].pad_lo == 0);
  CHECK(rw->n_called == 1 && strcmp(rw->called[0]->name, "add") == 0);
  /* Default fields print only when they differ from the default. */
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strstr(t, "window={size=3x3 stride=2x2 pad=1_1x0_2 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, "
                  "dim_labels=b01f_01io->b01f\n") != NULL);
  CHECK(strstr(t, "window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2") != NULL);
  CHECK(strstr(t, "dim_labels=b012f_012io->b012f") != NULL);
  CHECK(strstr(t, "batch_group_count") == NULL);
  free(t);
  hlo_module_free(m);
}

static void test_slice_pad_and_friends(void) {
  hlo_module *m = parse_ok(
      "HloModule s\n"
      "ENTRY e {\n"
      "  a = f32[4,6] parameter(0)\n"
      "  s1 = f32[2,3] slice(a), slice={[1:3], [0:6:2]}\n"
      "  s2 = f32[2,6] slice(a), slice={[0:2], [0:6]}\n"
      "  z = f32[] constant(0)\n"
      "  p = f32[8,7] pad(s2, z), padding=1_2_1x-1_2\n"
      "  i = s32[] parameter(1)\n"
      "  ds = f32[2,3] dynamic-slice(a, i, i), dynamic_slice_sizes={2,3}\n"
      "  io = s32[3,4] iota(), iota_dimension=1\n"
      "  b = f32[3,4,6] broadcast(a), dimensions={1,2}\n"
      "  tr = f32[6,4] transpose(a), dimensions={1,0}\n"
      "  rp = f32[4,6] reduce-precision(a), exponent_bits=5, mantissa_bits=10\n"
      "  cmp = pred[4,6] compare(a, a), direction=GE, type=TOTALORDER\n"
      "  cmp2 = pred[4,6] compare(a, a), direction=NE\n"
      "  ROOT t = (f32[2,3], f32[8,7], f32[2,3], s32[3,4], f32[3,4,6], f32[6,4], f32[4,6], pred[4,6], pred[4,6]) "
      "tuple(s1, p, ds, io, b, tr, rp, cmp, cmp2)\n"
      "}\n");
  if (!m) return;
  check_structure(m, "slice");
  hlo_instr *s1 = find(m, "s1");
  CHECK(INTS(s1->slice_start, 1, 0) && INTS(s1->slice_limit, 3, 6) && INTS(s1->slice_stride, 1, 2));
  hlo_instr *s2 = find(m, "s2");
  CHECK(INTS(s2->slice_stride, 1, 1));
  hlo_instr *p = find(m, "p");
  CHECK(INTS(p->pad_lo, 1, -1) && INTS(p->pad_hi, 2, 2) && INTS(p->pad_interior, 1, 0));
  CHECK(INTS(find(m, "ds")->dynamic_slice_sizes, 2, 3));
  CHECK(find(m, "io")->iota_dimension == 1);
  CHECK(INTS(find(m, "b")->dimensions, 1, 2));
  CHECK(find(m, "rp")->exponent_bits == 5 && find(m, "rp")->mantissa_bits == 10);
  CHECK(find(m, "cmp")->direction == HLO_DIR_GE && find(m, "cmp")->compare_type == HLO_CMP_TOTALORDER);
  CHECK(find(m, "cmp2")->direction == HLO_DIR_NE && find(m, "cmp2")->compare_type == HLO_CMP_DEFAULT);
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strstr(t, "slice={[1:3:1], [0:6:2]}") != NULL);
  CHECK(strstr(t, "slice={[0:2], [0:6]}") != NULL);
  CHECK(strstr(t, "padding=1_2_1x-1_2_0") != NULL);
  CHECK(strstr(t, "direction=GE, type=TOTALORDER") != NULL);
  CHECK(strstr(t, "direction=NE)") == NULL && strstr(t, "direction=NE\n") != NULL);
  free(t);
  hlo_module_free(m);
}

static void test_gather_scatter_dot(void) {
  hlo_module *m = parse_ok(
      "HloModule g\n"
      "add { x = f32[] parameter(0) y = f32[] parameter(1) ROOT s = f32[] add(x, y) }\n"
      "ENTRY e {\n"
      "  a = f32[2,5,3] parameter(0)\n"
      "  i = s32[2,4,1] parameter(1)\n"
      "  g = f32[2,4,3] gather(a, i), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, "
      "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,3}, "
      "indices_are_sorted=true\n"
      "  u = f32[2,4,3] parameter(2)\n"
      "  sc = f32[2,5,3] scatter(a, i, u), update_window_dims={2}, inserted_window_dims={1}, "
      "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, "
      "index_vector_dim=2, unique_indices=true, to_apply=add\n"
      "  l = f32[4,2,3] parameter(3)\n"
      "  r = f32[4,3,5] parameter(4)\n"
      "  d = f32[4,2,5] dot(l, r), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
      "rhs_contracting_dims={1}, operand_precision={highest,default}\n"
      "  ROOT t = (f32[2,4,3], f32[2,5,3], f32[4,2,5]) tuple(g, sc, d)\n"
      "}\n");
  if (!m) return;
  hlo_instr *g = find(m, "g");
  CHECK(INTS(g->gather.offset_dims, 2) && INTS(g->gather.collapsed_slice_dims, 1) && INTS(g->gather.start_index_map, 1));
  CHECK(INTS(g->gather.operand_batching_dims, 0) && INTS(g->gather.start_indices_batching_dims, 0));
  CHECK(g->gather.index_vector_dim == 2 && INTS(g->gather_slice_sizes, 1, 1, 3) && g->indices_are_sorted);
  hlo_instr *sc = find(m, "sc");
  CHECK(INTS(sc->scatter.update_window_dims, 2) && INTS(sc->scatter.inserted_window_dims, 1));
  CHECK(INTS(sc->scatter.scatter_dims_to_operand_dims, 1) && INTS(sc->scatter.input_batching_dims, 0));
  CHECK(INTS(sc->scatter.scatter_indices_batching_dims, 0) && sc->scatter.index_vector_dim == 2);
  CHECK(sc->unique_indices && !sc->indices_are_sorted);
  CHECK(sc->n_called == 1 && strcmp(sc->called[0]->name, "add") == 0);
  hlo_instr *d = find(m, "d");
  CHECK(INTS(d->dot.lhs_batch, 0) && INTS(d->dot.rhs_batch, 0));
  CHECK(INTS(d->dot.lhs_contracting, 2) && INTS(d->dot.rhs_contracting, 1));
  CHECK(has_raw(d, "operand_precision", "{highest,default}"));
  hlo_module_free(m);
}

static void test_called_computations(void) {
  hlo_module *m = parse_ok(
      "HloModule c\n"
      "cond { p = (s32[], f32[2]) parameter(0) i = s32[] get-tuple-element(p), index=0 "
      "n = s32[] constant(3) ROOT lt = pred[] compare(i, n), direction=LT }\n"
      "body { p = (s32[], f32[2]) parameter(0) i = s32[] get-tuple-element(p), index=0 one = s32[] constant(1) "
      "j = s32[] add(i, one) v = f32[2] get-tuple-element(p), index=1 ROOT t = (s32[], f32[2]) tuple(j, v) }\n"
      "t_br { p = f32[2] parameter(0) ROOT n = f32[2] negate(p) }\n"
      "f_br { p = f32[2] parameter(0) ROOT n = f32[2] abs(p) }\n"
      "ge { a = f32[] parameter(0) b = f32[] parameter(1) ROOT c = pred[] compare(a, b), direction=GE }\n"
      "add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT c = f32[] add(a, b) }\n"
      "lt { a = f32[] parameter(0) b = f32[] parameter(1) ROOT c = pred[] compare(a, b), direction=LT }\n"
      "fused { p0 = f32[2] parameter(0) ROOT e = f32[2] exponential(p0) }\n"
      "ENTRY main {\n"
      "  x = f32[2] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  init = (s32[], f32[2]) tuple(z, x)\n"
      "  w = (s32[], f32[2]) while(init), condition=cond, body=body\n"
      "  pr = pred[] parameter(1)\n"
      "  c1 = f32[2] conditional(pr, x, x), true_computation=t_br, false_computation=f_br\n"
      "  c2 = f32[2] conditional(z, x, x), branch_computations={f_br, t_br}\n"
      "  src = f32[1,2] parameter(2)\n"
      "  fz = f32[] constant(0)\n"
      "  sas = f32[2] select-and-scatter(x, src, fz), window={size=2}, select=ge, scatter=add\n"
      "  so = f32[2] sort(x), dimensions={0}, is_stable=true, comparator=lt\n"
      "  fu = f32[2] fusion(x), kind=kLoop, calls=fused\n"
      "  tk = (f32[1], s32[1]) topk(x), k=1, largest=false\n"
      "  ROOT t = ((s32[], f32[2]), f32[2], f32[2], f32[2], f32[2], f32[2], (f32[1], s32[1])) tuple(w, c1, c2, sas, so, fu, tk)\n"
      "}\n");
  if (!m) return;
  check_structure(m, "called");
  hlo_instr *w = find(m, "w");
  CHECK(w->n_called == 2 && strcmp(w->called[0]->name, "cond") == 0 && strcmp(w->called[1]->name, "body") == 0);
  hlo_instr *c1 = find(m, "c1");
  CHECK(c1->n_called == 2 && strcmp(c1->called[0]->name, "t_br") == 0 && strcmp(c1->called[1]->name, "f_br") == 0);
  hlo_instr *c2 = find(m, "c2");
  CHECK(c2->n_called == 2 && strcmp(c2->called[0]->name, "f_br") == 0 && strcmp(c2->called[1]->name, "t_br") == 0);
  hlo_instr *sas = find(m, "sas");
  CHECK(sas->n_called == 2 && strcmp(sas->called[0]->name, "ge") == 0 && strcmp(sas->called[1]->name, "add") == 0);
  hlo_instr *so = find(m, "so");
  CHECK(so->n_called == 1 && strcmp(so->called[0]->name, "lt") == 0 && so->is_stable && INTS(so->dimensions, 0));
  hlo_instr *fu = find(m, "fu");
  CHECK(fu->n_called == 1 && fu->called[0]->is_fusion_computation && strcmp(fu->fusion_kind, "kLoop") == 0);
  CHECK(!hlo_module_find_computation(m, "add")->is_fusion_computation);
  hlo_instr *tk = find(m, "tk");
  CHECK(tk->k == 1 && !tk->largest);
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strstr(t, "condition=%cond, body=%body") != NULL);
  CHECK(strstr(t, "true_computation=%t_br, false_computation=%f_br") != NULL);
  CHECK(strstr(t, "branch_computations={%f_br, %t_br}") != NULL);
  CHECK(strstr(t, "select=%ge, scatter=%add") != NULL);
  CHECK(strstr(t, "dimensions={0}, is_stable=true, to_apply=%lt") != NULL);
  CHECK(strstr(t, "kind=kLoop, calls=%fused") != NULL);
  CHECK(strstr(t, "k=1, largest=false") != NULL);
  free(t);
  hlo_module_free(m);
}

static void test_attributes_verbatim(void) {
  hlo_module *m = parse_ok(
      "HloModule v, is_scheduled=true, replica_count=2, entry_computation_layout={(f32[2]{0})->f32[2]{0}}, "
      "input_output_alias={ {0}: (0, {}, may-alias) }\n"
      "ENTRY e {\n"
      "  /* a comment */ p = f32[2]{0} parameter(0), sharding={devices=[2]0,1}, metadata={op_type=\"Add\" "
      "op_name=\"a/b{c}\" source_file=\"x.py\" source_line=3}\n"
      "  q = f32[2]{0:T(128)} negate(p), backend_config=\"{\\\"a\\\": \\\"}\\\"}\", frontend_attributes={k=\"v,w\"}, "
      "replica_groups=[2,2]<=[4] // trailing comment\n"
      "  ROOT r = f32[2]{0} custom-call(q), custom_call_target=\"foo\\tbar\", api_version=API_VERSION_TYPED_FFI, "
      "backend_config={\"x\":[1,{\"y\":\"]\"}]}, output_to_operand_aliasing={{}: (0, {})}, literal=f32[] 1.5 \n"
      "}\n");
  if (!m) return;
  CHECK(m->n_raw_attrs == 3);
  CHECK(strcmp(m->raw_attrs[0].key, "is_scheduled") == 0 && strcmp(m->raw_attrs[0].value, "true") == 0);
  CHECK(strcmp(m->raw_attrs[2].value, "{ {0}: (0, {}, may-alias) }") == 0);
  hlo_instr *p = find(m, "p");
  CHECK(has_raw(p, "sharding", "{devices=[2]0,1}"));
  CHECK(strcmp(p->metadata, "op_type=\"Add\" op_name=\"a/b{c}\" source_file=\"x.py\" source_line=3") == 0);
  hlo_instr *q = find(m, "q");
  CHECK(q->shape.has_layout && q->shape.layout_extra && strcmp(q->shape.layout_extra, ":T(128)") == 0);
  CHECK(q->n_raw_attrs == 3 && strcmp(q->raw_attrs[0].key, "backend_config") == 0);
  CHECK(has_raw(q, "backend_config", "\"{\\\"a\\\": \\\"}\\\"}\""));
  CHECK(has_raw(q, "frontend_attributes", "{k=\"v,w\"}"));
  CHECK(has_raw(q, "replica_groups", "[2,2]<=[4]"));
  hlo_instr *r = find(m, "r");
  CHECK(strcmp(r->custom_call_target, "foo\tbar") == 0);
  CHECK(has_raw(r, "backend_config", "{\"x\":[1,{\"y\":\"]\"}]}"));
  CHECK(has_raw(r, "output_to_operand_aliasing", "{{}: (0, {})}"));
  CHECK(has_raw(r, "literal", "f32[] 1.5"));
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strncmp(t, "HloModule v, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }, "
                   "entry_computation_layout={(f32[2]{0})->f32[2]{0}}, replica_count=2\n", 140) == 0);
  /* backend_config moves after metadata, as XLA prints it; other raw attributes keep their order. */
  CHECK(strstr(t, "negate(f32[2]{0} %p), frontend_attributes={k=\"v,w\"}, replica_groups=[2,2]<=[4], "
                  "backend_config=\"{\\\"a\\\": \\\"}\\\"}\"") != NULL);
  CHECK(strstr(t, "custom_call_target=\"foo\\tbar\", api_version=API_VERSION_TYPED_FFI, "
                  "output_to_operand_aliasing={{}: (0, {})}, literal=f32[] 1.5, backend_config={\"x\":[1,{\"y\":\"]\"}]}") != NULL);
  free(t);
  hlo_print_options o = hlo_print_options_default();
  o.print_percent = false;
  o.print_operand_shapes = false;
  o.print_layouts = false;
  o.print_metadata = false;
  t = hlo_module_to_string(m, &o);
  CHECK(strchr(t, '%') == NULL);
  CHECK(strstr(t, "metadata") == NULL);
  CHECK(strstr(t, "  q = f32[2] negate(p)") != NULL);
  free(t);
  hlo_module_free(m);
}

static void test_shapes(void) {
  hlo_module *m = parse_ok(
      "HloModule sh\n"
      "ENTRY e (p: (f32[<=4,3], token[]), q: pred[]) -> (f32[<=4,3], (s8[], u64[2])) {\n"
      "  p = (f32[<=4,3]{1,0}, token[]) parameter(0)\n"
      "  q = pred[] parameter(1)\n"
      "  a = f32[<=4,3]{0,1} get-tuple-element(p), index=0\n"
      "  b = s8[] constant(-7)\n"
      "  c = u64[2]{0} constant({1, 18446744073709551615})\n"
      "  d = (s8[], u64[2]) tuple(b, c)\n"
      "  ROOT t = (f32[<=4,3], (s8[], u64[2])) tuple(a, d)\n"
      "}\n");
  if (!m) return;
  hlo_instr *p = find(m, "p");
  CHECK(p->shape.type == HLO_TUPLE && p->shape.n_elems == 2);
  CHECK(p->shape.elems[0].dynamic[0] && !p->shape.elems[0].dynamic[1] && p->shape.elems[0].dims[0] == 4);
  CHECK(p->shape.elems[1].type == HLO_TOKEN);
  hlo_instr *a = find(m, "a");
  CHECK(a->shape.has_layout && a->shape.minor_to_major[0] == 0 && a->shape.minor_to_major[1] == 1);
  CHECK(literal_get_s64(find(m, "b")->literal, 0) == -7);
  CHECK(literal_get_u64(find(m, "c")->literal, 1) == UINT64_MAX);
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strstr(t, "ENTRY %e (p: (f32[<=4,3], token[]), q: pred[]) -> (f32[<=4,3], (s8[], u64[2])) {") != NULL);
  CHECK(strstr(t, "entry_computation_layout={((f32[<=4,3]{1,0}, token[]), pred[])->(f32[<=4,3]{1,0}, (s8[], u64[2]{0}))}") != NULL);
  free(t);
  hlo_module_free(m);
}

static void test_literal_values(void) {
  hlo_module *m = parse_ok(
      "HloModule lit\n"
      "ENTRY e {\n"
      "  a = f32[2,2] constant({ { 1.5, -inf }, { nan, 0x1p-3 } })\n"
      "  b = pred[3] constant({true, 0, 1})\n"
      "  c = f16[2] constant({65504, -0.5})\n"
      "  d = bf16[] constant(-2.5)\n"
      "  e = f64[] constant(0.1)\n"
      "  f = s64[] constant(-9223372036854775808)\n"
      "  g = f32[] constant(nan(0x123))\n"
      "  h = (f32[2], (s32[], pred[])) constant(( {1, 2}, ( 3, true ) ))\n"
      "  ROOT t = (f32[2,2], pred[3], f16[2], bf16[], f64[], s64[], f32[], (f32[2], (s32[], pred[]))) "
      "tuple(a, b, c, d, e, f, g, h)\n"
      "}\n");
  if (!m) return;
  hlo_literal *a = find(m, "a")->literal;
  CHECK(literal_get_f64(a, 0) == 1.5 && isinf(literal_get_f64(a, 1)) && literal_get_f64(a, 1) < 0);
  CHECK(isnan(literal_get_f64(a, 2)) && literal_get_f64(a, 3) == 0.125);
  hlo_literal *b = find(m, "b")->literal;
  CHECK(literal_get_s64(b, 0) == 1 && literal_get_s64(b, 1) == 0 && literal_get_s64(b, 2) == 1);
  hlo_literal *c = find(m, "c")->literal;
  CHECK(((uint16_t *)c->data)[0] == 0x7bff && literal_get_f64(c, 1) == -0.5);
  CHECK(literal_get_f64(find(m, "d")->literal, 0) == -2.5);
  CHECK(literal_get_f64(find(m, "e")->literal, 0) == 0.1);
  CHECK(literal_get_s64(find(m, "f")->literal, 0) == INT64_MIN);
  uint32_t gbits;
  memcpy(&gbits, find(m, "g")->literal->data, 4);
  CHECK(gbits == 0x7f800123u);
  hlo_literal *h = find(m, "h")->literal;
  CHECK(h->shape.type == HLO_TUPLE && h->shape.n_elems == 2 && h->tuple[1]->shape.n_elems == 2);
  CHECK(literal_get_s64(h->tuple[1]->tuple[0], 0) == 3 && literal_get_s64(h->tuple[1]->tuple[1], 0) == 1);
  hlo_module_free(m);
}

static void test_elided_constants_are_deterministic(void) {
  const char *text =
      "HloModule el\n"
      "ENTRY e {\n"
      "  w = f32[16,4] constant({...})\n"
      "  v = f32[16,4] constant({ ... })\n"
      "  i = s32[5] constant({...})\n"
      "  ROOT t = (f32[16,4], f32[16,4], s32[5]) tuple(w, v, i)\n"
      "}\n";
  hlo_module *m1 = parse_ok(text), *m2 = parse_ok(text);
  if (!m1 || !m2) {
    hlo_module_free(m1);
    hlo_module_free(m2);
    return;
  }
  hlo_literal *w1 = find(m1, "w")->literal, *w2 = find(m2, "w")->literal, *v1 = find(m1, "v")->literal;
  CHECK(literal_equal(w1, w2));
  CHECK(!literal_equal(w1, v1)); /* seeded by the instruction name */
  bool in_range = true, varied = false;
  for (int64_t k = 0; k < w1->n; k++) {
    double x = literal_get_f64(w1, k);
    in_range &= x >= -1 && x < 1;
    varied |= x != literal_get_f64(w1, 0);
  }
  CHECK(in_range && varied);
  /* Printing without large constants elides them again and reparses to the same data. */
  hlo_print_options o = hlo_print_options_default();
  o.print_large_constants = false;
  char *t = hlo_module_to_string(m1, &o);
  CHECK(strstr(t, "constant({...})") != NULL);
  CHECK(strstr(t, "s32[5] constant({") != NULL && strstr(t, "s32[5] constant({...})") == NULL);
  hlo_module *m3 = parse_ok(t);
  if (m3) CHECK(literal_equal(find(m3, "w")->literal, w1));
  free(t);
  hlo_module_free(m1);
  hlo_module_free(m2);
  hlo_module_free(m3);
}

static void test_order_and_entry(void) {
  /* Operands defined later, callee after caller, ENTRY not last. */
  hlo_module *m = parse_ok(
      "HloModule o\n"
      "helper {\n"
      "  ROOT r = f32[2] add(y, x)\n"
      "  y = f32[2] multiply(x, x)\n"
      "  x = f32[2] parameter(0)\n"
      "}\n"
      "ENTRY main {\n"
      "  c = f32[2] call(b), to_apply=sq\n"
      "  b = f32[2] call(a), to_apply=helper\n"
      "  a = f32[2] parameter(0)\n"
      "  ROOT d = f32[2] negate(c)\n"
      "  e = f32[2] abs(d)\n"
      "}\n"
      "sq {\n"
      "  p = f32[2] parameter(0)\n"
      "  ROOT s = f32[2] multiply(p, p)\n"
      "}\n");
  if (!m) return;
  check_structure(m, "order");
  CHECK(strcmp(m->entry->name, "main") == 0 && m->n_comps == 3);
  CHECK(strcmp(m->comps[0]->name, "helper") == 0 && strcmp(m->comps[1]->name, "sq") == 0);
  hlo_computation *h = m->comps[0];
  CHECK(strcmp(h->root->name, "r") == 0 && h->n_params == 1);
  CHECK(strcmp(h->instrs[0]->name, "x") == 0 && strcmp(h->instrs[2]->name, "r") == 0);
  CHECK(strcmp(m->entry->root->name, "d") == 0);
  check_round_trip(m, NULL, "order");
  hlo_module_free(m);

  /* Without ENTRY, the last computation is the entry; without ROOT, the last
   * instruction is the root. */
  m = parse_ok("HloModule n\nadd { a = f32[] parameter(0) ROOT b = f32[] add(a, a) }\n"
               "last { p = f32[] parameter(0) c = f32[] call(p), to_apply=add }\n");
  if (!m) return;
  CHECK(strcmp(m->entry->name, "last") == 0 && m->entry->is_entry && !m->comps[0]->is_entry);
  CHECK(strcmp(m->entry->root->name, "c") == 0);
  hlo_module_free(m);

  /* Stack-frame tables of newer dumps are kept verbatim. */
  m = parse_ok(
      "HloModule sf, entry_computation_layout={(f32[]{:T(256)})->f32[]}\n\n"
      "FileNames\n1 \"a.py\"\n\nFunctionNames\n1 \"f\"\n\nFileLocations\n"
      "1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=9}\n\n"
      "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n\n"
      "ENTRY %main.1 (x.1: f32[]) -> f32[] {\n"
      "  ROOT %x.1 = f32[]{:T(256)} parameter(0), metadata={op_name=\"x\" stack_frame_id=1}\n"
      "}\n");
  if (!m) return;
  CHECK(m->stack_frames && strncmp(m->stack_frames, "FileNames\n1 \"a.py\"", 18) == 0);
  CHECK(m->stack_frames && strstr(m->stack_frames, "parent_frame_id=1}") != NULL);
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strstr(t, "\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=1}\n\nENTRY %main.1") != NULL);
  CHECK(strstr(t, "%x.1 = f32[]{:T(256)} parameter(0)") != NULL);
  free(t);
  check_round_trip(m, NULL, "stack frames");
  hlo_module_free(m);
}

/* ---- instruction names are scoped per computation ---- */

/* As in XLA's parser, a name may repeat in different computations (hand-written modules
 * reuse lhs/rhs in every reducer); operands are looked up in their own computation. The
 * IR keeps names module-unique, so the later ones are renamed (the entry's first: its
 * parameters are the names `kiln run -i NAME=` takes), to names no instruction of the
 * module has, and the result verifies and round-trips. */
static void test_parser_accepts_names_repeated_across_computations(void) {
  hlo_module *m = parse_ok(
      "HloModule m\n"
      "add {\n"
      "  lhs = f32[] parameter(0)\n"
      "  rhs = f32[] parameter(1)\n"
      "  ROOT add = f32[] add(lhs, rhs)\n"
      "}\n"
      "mul {\n"
      "  lhs = f32[] parameter(0)\n"
      "  rhs = f32[] parameter(1)\n"
      "  ROOT mul = f32[] multiply(rhs, lhs)\n"
      "}\n"
      "ENTRY e {\n"
      "  lhs = f32[4] parameter(0)\n"
      "  rhs = f32[4] parameter(1)\n"
      "  lhs.1 = f32[4] add(lhs, rhs)\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[] reduce(lhs.1, z), dimensions={0}, to_apply=add\n"
      "  o = f32[] constant(1)\n"
      "  ROOT p = f32[] reduce(rhs, o), dimensions={0}, to_apply=mul\n"
      "}\n");
  if (!m) return;
  CHECK_OK(hlo_verify_module(m));
  check_structure(m, "repeated names");
  /* The entry keeps its names. */
  CHECK(strcmp(m->entry->params[0]->name, "lhs") == 0 && strcmp(m->entry->params[1]->name, "rhs") == 0);
  hlo_computation *add = hlo_module_find_computation(m, "add"), *mul = hlo_module_find_computation(m, "mul");
  CHECK(add && mul);
  if (!add || !mul) {
    hlo_module_free(m);
    return;
  }
  /* The others are renamed past every name of the module (lhs.1 is the entry's). */
  CHECK(strcmp(add->params[0]->name, "lhs.2") == 0 && strcmp(add->params[1]->name, "rhs.1") == 0);
  CHECK(strcmp(mul->params[0]->name, "lhs.3") == 0 && strcmp(mul->params[1]->name, "rhs.2") == 0);
  /* Operands were resolved in their own computation. */
  CHECK(add->root->operands[0] == add->params[0] && add->root->operands[1] == add->params[1]);
  CHECK(mul->root->operands[0] == mul->params[1] && mul->root->operands[1] == mul->params[0]);
  CHECK(find(m, "lhs.1") && find(m, "lhs.1")->parent == m->entry);
  char *t = hlo_module_to_string(m, NULL);
  CHECK(strstr(t, "%add (lhs.2: f32[], rhs.1: f32[]) -> f32[]") != NULL);
  free(t);
  check_round_trip(m, NULL, "repeated names");
  hlo_module_free(m);
}

static void test_parser_refuses_name_repeated_in_one_computation(void) {
  hlo_module *m = NULL;
  const char *text =
      "HloModule m\n"
      "add {\n"
      "  x = f32[] parameter(0)\n"
      "  x = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, x)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[4] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add\n"
      "}\n";
  CHECK_ERR(hlo_parse(text, strlen(text), "test.hlo", &m),
            "test.hlo:4:3: duplicate instruction name 'x' (first defined at 3:3)");
  CHECK(m == NULL);
  /* The entry too, where the name also appears in another computation. */
  text =
      "HloModule m\n"
      "neg {\n"
      "  y = f32[4] parameter(0)\n"
      "  ROOT n = f32[4] negate(y)\n"
      "}\n"
      "ENTRY e {\n"
      "  y = f32[4] parameter(0)\n"
      "  n = f32[4] call(y), to_apply=neg\n"
      "  ROOT n = f32[4] negate(n)\n"
      "}\n";
  CHECK_ERR(hlo_parse(text, strlen(text), "test.hlo", &m),
            "test.hlo:9:8: duplicate instruction name 'n' (first defined at 8:3)");
  CHECK(m == NULL);
}

/* ---- malformed input ---- */

typedef struct bad_case {
  const char *text;
  const char *where; /* "test.hlo:L:C" */
  const char *hint;
} bad_case;

static const bad_case bad_cases[] = {
    {"", "test.hlo:1:1", "expected 'HloModule' or a computation, got end of input"},
    {"HloModule m\n", "test.hlo:2:1", "expected a computation"},
    {"\x01\x02garbage", "test.hlo:1:1", "got '\\x01'"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n", "test.hlo:4:1", "expected '}' closing the computation body"},
    {"HloModule m\nENTRY e (p: f32[]) -> f32[]\n", "test.hlo:3:1", "expected '{' opening the computation body"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[2] frobnicate(p)\n}\n", "test.hlo:4:19",
     "unknown opcode 'frobnicate'"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[2] negate(pp)\n}\n", "test.hlo:4:26",
     "unknown operand 'pp'"},
    {"HloModule m\nENTRY e {\n  p = f32[2 parameter(0)\n}\n", "test.hlo:3:13", "expected ',' or ']' in the dimensions"},
    {"HloModule m\nENTRY e {\n  p = f32[2,3]{1,1} parameter(0)\n}\n", "test.hlo:3:15", "bad layout: dimension 1 appears twice"},
    {"HloModule m\nENTRY e {\n  p = f32[2,3]{0} parameter(0)\n}\n", "test.hlo:3:15", "bad layout: 1 minor-to-major"},
    {"HloModule m\nENTRY e {\n  p = f32[-2] parameter(0)\n}\n", "test.hlo:3:11", "expected a dimension size"},
    {"HloModule m\nENTRY e {\n  p = f32[4294967296,4294967296,4294967296] parameter(0)\n}\n", "test.hlo:3:7",
     "too large"},
    {"HloModule m\nENTRY e {\n  p = c64[2] parameter(0)\n}\n", "test.hlo:3:7", "unsupported element type 'c64'"},
    {"HloModule m\nENTRY e {\n  ROOT c = f32[3] constant({1, 2})\n}\n", "test.hlo:3:28", "constant has 2 values"},
    {"HloModule m\nENTRY e {\n  ROOT c = f32[2,2] constant({1, 2, 3, 4})\n}\n", "test.hlo:3:31",
     "expected '{' opening a dimension"},
    {"HloModule m\nENTRY e {\n  ROOT c = s8[2] constant({1, 300})\n}\n", "test.hlo:3:31", "out of range for s8"},
    {"HloModule m\nENTRY e {\n  ROOT c = s32[] constant(1.5)\n}\n", "test.hlo:3:27", "expected an integer for s32"},
    {"HloModule m\nENTRY e {\n  ROOT c = f16[] constant(1e6)\n}\n", "test.hlo:3:27", "out of range for f16"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  p = f32[2] negate(p)\n}\n", "test.hlo:4:3",
     "duplicate instruction name 'p' (first defined at 3:3)"},
    {"HloModule m\nENTRY e {\n  a = f32[2] negate(b)\n  b = f32[2] negate(a)\n}\n", "test.hlo:4:21", "cycle"},
    {"HloModule m\nENTRY e {\n  a = f32[2] negate(a)\n}\n", "test.hlo:3:21", "cycle"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0), sharding={replicated\n}\n", "test.hlo:5:1",
     "expected '}' closing the computation body"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0), sharding={replicated\n", "test.hlo:4:1",
     "expected '}' (to close 3:37), got end of input"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0), sharding={replicated)}\n}\n", "test.hlo:3:48",
     "expected '}' (to close 3:37)"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0), backend_config=\"abc\n}\n", "test.hlo:3:43",
     "unterminated string"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] reduce(p, p), dimensions={0}, to_apply=nope\n}\n",
     "test.hlo:4:58", "unknown computation 'nope'"},
    {"HloModule m\nENTRY e {\n  p = (f32[2], s32[]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p)\n}\n",
     "test.hlo:4:8", "missing required attribute 'index'"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT w = f32[2] while(p), condition=c\n}\n", "test.hlo:4:8",
     "missing required attribute 'body'"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[2] negate(p), body=x\n}\n", "test.hlo:4:30",
     "attribute 'body' is not valid for negate"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = f32[1] convolution(p, p), window={size=3 "
     "stride=1x1}, dim_labels=b0f_0io->b0f\n}\n",
     "test.hlo:4:45", "window field 'stride' has 2 entries but size= has 1"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = f32[1] convolution(p, p), dim_labels=b0f_0ii->b0f\n}\n",
     "test.hlo:4:55", "dim_labels: 'i' appears twice"},
    {"HloModule m\nENTRY e (a: f32[3]) -> f32[2] {\n  ROOT a = f32[2] parameter(0)\n}\n", "test.hlo:2:10",
     "gives parameter 0 shape f32[3]"},
    {"HloModule m, entry_computation_layout={(f32[2]{0}, f32[2]{0})->f32[2]{0}}\nENTRY e {\n  ROOT a = f32[2] "
     "parameter(0)\n}\n",
     "test.hlo:1:39", "lists 2 parameters"},
    {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(0)\n  ROOT c = f32[2] add(a, b)\n}\n",
     "test.hlo:2:7", "parameter number 0 used by both"},
    {"HloModule m\nc1 {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c2\n}\nc2 {\n  p = f32[] "
     "parameter(0)\n  ROOT r = f32[] call(p), to_apply=c1\n}\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] "
     "call(p), to_apply=c1\n}\n",
     "test.hlo:", "calls itself"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT q = f32[3] negate(f32[3] p)\n}\n", "test.hlo:4:33",
     "operand 'p' is written with shape f32[3], but 'p' has shape f32[2]"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0) /* never closed\n}\n", "test.hlo:3:27", "unterminated comment"},
    {"HloModule m\nENTRY e {\n  p = f32[2] parameter(0), metadata={op_name=\"x\"}, metadata={}\n}\n", "test.hlo:3:52",
     "attribute 'metadata' given twice"},
    {"HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n  ROOT q = f32[2] negate(p)\n}\n", "test.hlo:4:3",
     "more than one ROOT"},
    {"HloModule m\nENTRY a {\n  ROOT p = f32[] parameter(0)\n}\nENTRY b {\n  ROOT p = f32[] parameter(0)\n}\n",
     "test.hlo:5:1", "second ENTRY"},
    {"HloModule m\nENTRY e {\n  ROOT p = f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] parameter(0)\n}\n", "test.hlo:3:12",
     "more than 16 dimensions"},
    {"HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\0trailing", "test.hlo:4:2", "NUL byte"},
};

static void test_malformed_inputs(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *bc = &bad_cases[i];
    size_t len = strlen(bc->text);
    if (strstr(bc->hint, "NUL")) len += 1 + strlen(bc->text + len + 1);
    hlo_module *m = (hlo_module *)1;
    kiln_status s = hlo_parse(bc->text, len, "test.hlo", &m);
    if (!s) {
      fprintf(stderr, "case %zu parsed but should not:\n%s\n", i, bc->text);
      check_fail(__FILE__, __LINE__, "malformed input rejected", bc->hint);
      hlo_module_free(m);
      continue;
    }
    CHECK(m == NULL);
    const char *msg = kiln_status_message(s);
    if (!strstr(msg, bc->where) || !strstr(msg, bc->hint)) {
      fprintf(stderr, "case %zu: message \"%s\" lacks \"%s\" / \"%s\"\n", i, msg, bc->where, bc->hint);
      check_fail(__FILE__, __LINE__, "error names line:col and a hint", bc->hint);
    }
    CHECK(kiln_status_code(s) == KILN_INVALID_ARGUMENT);
    kiln_status_free(s);
  }
}

static void test_size_limits(void) {
  int64_t saved = literal_max_bytes;
  literal_max_bytes = 1024;
  hlo_module *m = NULL;
  const char *big = "HloModule m\nENTRY e {\n  ROOT c = f32[1000] constant({...})\n}\n";
  CHECK_ERR(hlo_parse(big, strlen(big), "t.hlo", &m), "t.hlo:3:31: constant 'c' of shape f32[1000]");
  CHECK(m == NULL);
  /* A parameter may be larger than one literal; only constants hold data. */
  const char *param = "HloModule m\nENTRY e {\n  ROOT p = f32[1000000] parameter(0)\n}\n";
  CHECK_OK(hlo_parse(param, strlen(param), "t.hlo", &m));
  hlo_module_free(m);
  literal_max_bytes = saved;
  CHECK_ERR(hlo_parse_file("tests/hlo/corpus/does_not_exist.hlo", &m), "cannot open");
}

TEST_MAIN(TEST(test_corpus_round_trip), TEST(test_window_and_dim_labels), TEST(test_slice_pad_and_friends),
          TEST(test_gather_scatter_dot), TEST(test_called_computations), TEST(test_attributes_verbatim),
          TEST(test_shapes), TEST(test_literal_values), TEST(test_elided_constants_are_deterministic),
          TEST(test_order_and_entry), TEST(test_malformed_inputs), TEST(test_size_limits),
          TEST(test_parser_accepts_names_repeated_across_computations),
          TEST(test_parser_refuses_name_repeated_in_one_computation))
