/* HLO text printer in XLA's modern dump style.
 *
 * Output is what XLA's own printer writes for the same module, as far as the IR knows
 * it: typed attributes in XLA's order and spelling, then computation references, then
 * the attributes kept verbatim (in their original order), metadata, and backend_config
 * last, as XLA places them. The parser reads everything printed here back to an equal
 * module, so print(parse(print(m))) == print(m) byte for byte; every choice below that
 * XLA leaves open (which optional attributes to show) depends only on the IR, never on
 * how the text was originally written. */
#include "hlo/printer.h"

#include <stdlib.h>
#include <string.h>

/* XLA annotates long operand and parameter lists every 5 entries. */
enum { INDEX_ANNOTATION_INTERVAL = 5, ELIDE_CONSTANTS_OVER = 10 };

hlo_print_options hlo_print_options_default(void) {
  hlo_print_options o;
  o.print_percent = true;
  o.print_operand_shapes = true;
  o.print_layouts = true;
  o.print_metadata = true;
  o.print_large_constants = true;
  return o;
}

static void print_name(strbuf *b, const char *name, const hlo_print_options *o) {
  if (o->print_percent) strbuf_putc(b, '%');
  strbuf_append(b, name);
}

static void print_list_separator(strbuf *b, int i) {
  if (i == 0) return;
  strbuf_append(b, ", ");
  if (i % INDEX_ANNOTATION_INTERVAL == 0) strbuf_printf(b, "/*index=%d*/", i);
}

/* Shapes as XLA prints them: tuples annotated every 5 elements, scalars never with "{}"
 * (XLA's parser rejects it), default layouts optionally supplied for arrays that have
 * none (entry_computation_layout always carries layouts). */
static void print_shape_ex(strbuf *b, const hlo_shape *s, bool with_layout, bool default_layout) {
  if (s->type == HLO_TUPLE) {
    strbuf_putc(b, '(');
    for (int i = 0; i < s->n_elems; i++) {
      print_list_separator(b, i);
      print_shape_ex(b, &s->elems[i], with_layout, default_layout);
    }
    strbuf_putc(b, ')');
    return;
  }
  strbuf_append(b, hlo_type_name(s->type));
  strbuf_putc(b, '[');
  for (int i = 0; i < s->rank; i++)
    strbuf_printf(b, "%s%s%lld", i ? "," : "", s->dynamic[i] ? "<=" : "", (long long)s->dims[i]);
  strbuf_putc(b, ']');
  if (!with_layout || s->type == HLO_TOKEN) return;
  if (s->has_layout && (s->rank > 0 || s->layout_extra)) {
    strbuf_putc(b, '{');
    for (int i = 0; i < s->rank; i++) strbuf_printf(b, "%s%lld", i ? "," : "", (long long)s->minor_to_major[i]);
    if (s->layout_extra) strbuf_append(b, s->layout_extra);
    strbuf_putc(b, '}');
  } else if (!s->has_layout && default_layout && s->rank > 0) {
    strbuf_putc(b, '{');
    for (int i = 0; i < s->rank; i++) strbuf_printf(b, "%s%d", i ? "," : "", s->rank - 1 - i);
    strbuf_putc(b, '}');
  }
}

static void print_shape(strbuf *b, const hlo_shape *s, bool with_layout) { print_shape_ex(b, s, with_layout, false); }

static void print_ints(strbuf *b, const hlo_ints *v) {
  strbuf_putc(b, '{');
  for (int i = 0; i < v->n; i++) strbuf_printf(b, "%s%lld", i ? "," : "", (long long)v->v[i]);
  strbuf_putc(b, '}');
}

static void print_ints_attr(strbuf *b, const char *key, const hlo_ints *v) {
  strbuf_printf(b, ", %s=", key);
  print_ints(b, v);
}

/* C-style escaping, the inverse of the lexer's string decoding. */
static void print_quoted(strbuf *b, const char *s) {
  strbuf_putc(b, '"');
  for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
    switch (*q) {
      case '"': strbuf_append(b, "\\\""); break;
      case '\\': strbuf_append(b, "\\\\"); break;
      case '\n': strbuf_append(b, "\\n"); break;
      case '\t': strbuf_append(b, "\\t"); break;
      case '\r': strbuf_append(b, "\\r"); break;
      default:
        if (*q < 0x20 || *q == 0x7f) strbuf_printf(b, "\\%03o", *q);
        else strbuf_putc(b, (char)*q);
    }
  }
  strbuf_putc(b, '"');
}

static void print_window(strbuf *b, const hlo_window *w) {
  bool stride = false, pad = false, lhs = false, rhs = false, rev = false;
  for (int i = 0; i < w->rank; i++) {
    const hlo_window_dim *d = &w->dims[i];
    stride |= d->stride != 1;
    pad |= d->pad_lo != 0 || d->pad_hi != 0;
    lhs |= d->lhs_dilate != 1;
    rhs |= d->rhs_dilate != 1;
    rev |= d->reversal;
  }
  strbuf_append(b, ", window={");
  if (w->rank > 0) {
    strbuf_append(b, "size=");
    for (int i = 0; i < w->rank; i++) strbuf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].size);
  }
  if (stride) {
    strbuf_append(b, " stride=");
    for (int i = 0; i < w->rank; i++) strbuf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].stride);
  }
  if (pad) {
    strbuf_append(b, " pad=");
    for (int i = 0; i < w->rank; i++)
      strbuf_printf(b, "%s%lld_%lld", i ? "x" : "", (long long)w->dims[i].pad_lo, (long long)w->dims[i].pad_hi);
  }
  if (lhs) {
    strbuf_append(b, " lhs_dilate=");
    for (int i = 0; i < w->rank; i++) strbuf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].lhs_dilate);
  }
  if (rhs) {
    strbuf_append(b, " rhs_dilate=");
    for (int i = 0; i < w->rank; i++) strbuf_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].rhs_dilate);
  }
  if (rev) {
    strbuf_append(b, " rhs_reversal=");
    for (int i = 0; i < w->rank; i++) strbuf_printf(b, "%s%d", i ? "x" : "", w->dims[i].reversal ? 1 : 0);
  }
  strbuf_putc(b, '}');
}

/* One label group ("b01f"); a malformed dnums struct prints '?' where nothing fits. */
static void print_label_group(strbuf *b, int n_spatial, int64_t first, char c1, int64_t second, char c2,
                              const int64_t *spatial) {
  char buf[HLO_MAX_RANK + 3];
  int n = n_spatial + 2;
  if (n > HLO_MAX_RANK + 2) n = HLO_MAX_RANK + 2;
  memset(buf, '?', (size_t)n);
  buf[n] = 0;
  if (first >= 0 && first < n) buf[first] = c1;
  if (second >= 0 && second < n) buf[second] = c2;
  for (int d = 0; d < n_spatial && d < 10; d++)
    if (spatial[d] >= 0 && spatial[d] < n) buf[spatial[d]] = (char)('0' + d);
  strbuf_append(b, buf);
}

static void print_dim_labels(strbuf *b, const hlo_conv_dnums *dn) {
  strbuf_append(b, ", dim_labels=");
  print_label_group(b, dn->n_spatial, dn->input_batch, 'b', dn->input_feature, 'f', dn->input_spatial);
  strbuf_putc(b, '_');
  print_label_group(b, dn->n_spatial, dn->kernel_input_feature, 'i', dn->kernel_output_feature, 'o', dn->kernel_spatial);
  strbuf_append(b, "->");
  print_label_group(b, dn->n_spatial, dn->output_batch, 'b', dn->output_feature, 'f', dn->output_spatial);
}

static void print_conv_like(strbuf *b, const hlo_instr *ins, bool always_labels) {
  if (ins->window.rank > 0) print_window(b, &ins->window);
  if (always_labels || ins->has_conv_dnums) print_dim_labels(b, &ins->conv);
  if (ins->feature_group_count != 1) strbuf_printf(b, ", feature_group_count=%lld", (long long)ins->feature_group_count);
  if (ins->batch_group_count != 1) strbuf_printf(b, ", batch_group_count=%lld", (long long)ins->batch_group_count);
}

/* The op-specific attributes, in the order XLA prints them. */
static void print_typed_attrs(strbuf *b, const hlo_instr *ins) {
  static const char *const directions[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  static const char *const cmp_types[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
  switch (ins->op) {
    case HLO_OP_GET_TUPLE_ELEMENT:
      strbuf_printf(b, ", index=%lld", (long long)ins->tuple_index);
      break;
    case HLO_OP_IOTA:
      strbuf_printf(b, ", iota_dimension=%lld", (long long)ins->iota_dimension);
      break;
    case HLO_OP_BROADCAST: case HLO_OP_TRANSPOSE: case HLO_OP_REVERSE: case HLO_OP_REDUCE:
    case HLO_OP_CONCATENATE: case HLO_OP_MAP: case HLO_OP_ALL_GATHER: case HLO_OP_REDUCE_SCATTER:
    case HLO_OP_GET_DIMENSION_SIZE: case HLO_OP_SET_DIMENSION_SIZE:
      print_ints_attr(b, "dimensions", &ins->dimensions);
      break;
    case HLO_OP_ALL_TO_ALL:
      if (ins->dimensions.v) print_ints_attr(b, "dimensions", &ins->dimensions);
      break;
    case HLO_OP_SORT:
      print_ints_attr(b, "dimensions", &ins->dimensions);
      if (ins->is_stable) strbuf_append(b, ", is_stable=true");
      break;
    case HLO_OP_SLICE: {
      bool strides = false;
      for (int i = 0; i < ins->slice_stride.n; i++) strides |= ins->slice_stride.v[i] != 1;
      strbuf_append(b, ", slice={");
      for (int i = 0; i < ins->slice_start.n; i++) {
        strbuf_printf(b, "%s[%lld:%lld", i ? ", " : "", (long long)ins->slice_start.v[i],
                      (long long)(i < ins->slice_limit.n ? ins->slice_limit.v[i] : 0));
        if (strides) strbuf_printf(b, ":%lld", (long long)(i < ins->slice_stride.n ? ins->slice_stride.v[i] : 1));
        strbuf_putc(b, ']');
      }
      strbuf_putc(b, '}');
      break;
    }
    case HLO_OP_DYNAMIC_SLICE:
      print_ints_attr(b, "dynamic_slice_sizes", &ins->dynamic_slice_sizes);
      break;
    case HLO_OP_PAD: {
      bool interior = false;
      for (int i = 0; i < ins->pad_interior.n; i++) interior |= ins->pad_interior.v[i] != 0;
      strbuf_append(b, ", padding=");
      for (int i = 0; i < ins->pad_lo.n; i++) {
        strbuf_printf(b, "%s%lld_%lld", i ? "x" : "", (long long)ins->pad_lo.v[i],
                      (long long)(i < ins->pad_hi.n ? ins->pad_hi.v[i] : 0));
        if (interior) strbuf_printf(b, "_%lld", (long long)(i < ins->pad_interior.n ? ins->pad_interior.v[i] : 0));
      }
      break;
    }
    case HLO_OP_COMPARE:
      strbuf_printf(b, ", direction=%s", (unsigned)ins->direction < 6 ? directions[ins->direction] : "EQ");
      if (ins->compare_type != HLO_CMP_DEFAULT && (unsigned)ins->compare_type < 5)
        strbuf_printf(b, ", type=%s", cmp_types[ins->compare_type]);
      break;
    case HLO_OP_REDUCE_PRECISION:
      strbuf_printf(b, ", exponent_bits=%lld, mantissa_bits=%lld", (long long)ins->exponent_bits,
                    (long long)ins->mantissa_bits);
      break;
    case HLO_OP_CONVOLUTION:
      print_conv_like(b, ins, true);
      break;
    case HLO_OP_DOT:
      if (ins->dot.lhs_batch.n) print_ints_attr(b, "lhs_batch_dims", &ins->dot.lhs_batch);
      print_ints_attr(b, "lhs_contracting_dims", &ins->dot.lhs_contracting);
      if (ins->dot.rhs_batch.n) print_ints_attr(b, "rhs_batch_dims", &ins->dot.rhs_batch);
      print_ints_attr(b, "rhs_contracting_dims", &ins->dot.rhs_contracting);
      break;
    case HLO_OP_GATHER: {
      const hlo_gather_dnums *g = &ins->gather;
      print_ints_attr(b, "offset_dims", &g->offset_dims);
      print_ints_attr(b, "collapsed_slice_dims", &g->collapsed_slice_dims);
      print_ints_attr(b, "start_index_map", &g->start_index_map);
      if (g->operand_batching_dims.n) print_ints_attr(b, "operand_batching_dims", &g->operand_batching_dims);
      if (g->start_indices_batching_dims.n)
        print_ints_attr(b, "start_indices_batching_dims", &g->start_indices_batching_dims);
      strbuf_printf(b, ", index_vector_dim=%lld", (long long)g->index_vector_dim);
      print_ints_attr(b, "slice_sizes", &ins->gather_slice_sizes);
      if (ins->indices_are_sorted) strbuf_append(b, ", indices_are_sorted=true");
      break;
    }
    case HLO_OP_SCATTER: {
      const hlo_scatter_dnums *s = &ins->scatter;
      print_ints_attr(b, "update_window_dims", &s->update_window_dims);
      print_ints_attr(b, "inserted_window_dims", &s->inserted_window_dims);
      print_ints_attr(b, "scatter_dims_to_operand_dims", &s->scatter_dims_to_operand_dims);
      if (s->input_batching_dims.n) print_ints_attr(b, "input_batching_dims", &s->input_batching_dims);
      if (s->scatter_indices_batching_dims.n)
        print_ints_attr(b, "scatter_indices_batching_dims", &s->scatter_indices_batching_dims);
      strbuf_printf(b, ", index_vector_dim=%lld", (long long)s->index_vector_dim);
      if (ins->indices_are_sorted) strbuf_append(b, ", indices_are_sorted=true");
      if (ins->unique_indices) strbuf_append(b, ", unique_indices=true");
      break;
    }
    case HLO_OP_REDUCE_WINDOW:
    case HLO_OP_SELECT_AND_SCATTER:
      print_window(b, &ins->window);
      break;
    case HLO_OP_CUSTOM_CALL:
      print_conv_like(b, ins, false);
      strbuf_append(b, ", custom_call_target=");
      print_quoted(b, ins->custom_call_target ? ins->custom_call_target : "");
      break;
    case HLO_OP_FUSION:
      strbuf_printf(b, ", kind=%s", ins->fusion_kind ? ins->fusion_kind : "kLoop");
      break;
    case HLO_OP_TOPK:
      strbuf_printf(b, ", k=%lld, largest=%s", (long long)ins->k, ins->largest ? "true" : "false");
      break;
    default:
      break;
  }
}

static void print_called(strbuf *b, const hlo_instr *ins, const hlo_print_options *o) {
  int n = ins->n_called;
  if (n == 0) return;
  hlo_computation *const *c = ins->called;
  switch (ins->op) {
    case HLO_OP_WHILE:
      if (n == 2) {
        strbuf_append(b, ", condition=");
        print_name(b, c[0]->name, o);
        strbuf_append(b, ", body=");
        print_name(b, c[1]->name, o);
        return;
      }
      break;
    case HLO_OP_SELECT_AND_SCATTER:
      if (n == 2) {
        strbuf_append(b, ", select=");
        print_name(b, c[0]->name, o);
        strbuf_append(b, ", scatter=");
        print_name(b, c[1]->name, o);
        return;
      }
      break;
    case HLO_OP_CONDITIONAL:
      if (n == 2 && ins->n_operands > 0 && ins->operands[0]->shape.type == HLO_PRED) {
        strbuf_append(b, ", true_computation=");
        print_name(b, c[0]->name, o);
        strbuf_append(b, ", false_computation=");
        print_name(b, c[1]->name, o);
      } else {
        strbuf_append(b, ", branch_computations={");
        for (int i = 0; i < n; i++) {
          if (i) strbuf_append(b, ", ");
          print_name(b, c[i]->name, o);
        }
        strbuf_putc(b, '}');
      }
      return;
    case HLO_OP_CUSTOM_CALL:
      strbuf_append(b, ", called_computations={");
      for (int i = 0; i < n; i++) {
        if (i) strbuf_append(b, ", ");
        print_name(b, c[i]->name, o);
      }
      strbuf_putc(b, '}');
      return;
    case HLO_OP_CALL: case HLO_OP_MAP: case HLO_OP_REDUCE_WINDOW: case HLO_OP_REDUCE: case HLO_OP_ALL_REDUCE:
    case HLO_OP_REDUCE_SCATTER: case HLO_OP_SCATTER: case HLO_OP_SORT: case HLO_OP_TOPK:
      if (n == 1) {
        strbuf_append(b, ", to_apply=");
        print_name(b, c[0]->name, o);
        return;
      }
      break;
    default:
      break;
  }
  strbuf_append(b, ", calls=");
  for (int i = 0; i < n; i++) {
    if (i) strbuf_append(b, ", ");
    print_name(b, c[i]->name, o);
  }
}

static void print_operand_list(strbuf *b, const hlo_instr *ins, const hlo_print_options *o) {
  for (int i = 0; i < ins->n_operands; i++) {
    print_list_separator(b, i);
    const hlo_instr *op = ins->operands[i];
    if (o->print_operand_shapes) {
      print_shape(b, &op->shape, o->print_layouts);
      strbuf_putc(b, ' ');
    }
    print_name(b, op->name, o);
  }
}

static void print_constant_value(strbuf *b, const hlo_instr *ins, const hlo_print_options *o) {
  const hlo_literal *l = ins->literal;
  if (!l || (!o->print_large_constants && l->shape.type != HLO_TUPLE && l->shape.rank > 0 &&
             l->n > ELIDE_CONSTANTS_OVER)) {
    strbuf_append(b, "{...}");
    return;
  }
  literal_print_values(b, l);
}

void hlo_print_instr(strbuf *b, const hlo_instr *ins, const hlo_print_options *opts) {
  hlo_print_options def = hlo_print_options_default();
  const hlo_print_options *o = opts ? opts : &def;
  if (ins->parent && ins->parent->root == ins) strbuf_append(b, "ROOT ");
  print_name(b, ins->name, o);
  strbuf_append(b, " = ");
  print_shape(b, &ins->shape, o->print_layouts);
  strbuf_printf(b, " %s(", hlo_opcode_name(ins->op));
  if (ins->op == HLO_OP_PARAMETER) strbuf_printf(b, "%lld", (long long)ins->parameter_number);
  else if (ins->op == HLO_OP_CONSTANT) print_constant_value(b, ins, o);
  else print_operand_list(b, ins, o);
  strbuf_putc(b, ')');
  print_typed_attrs(b, ins);
  print_called(b, ins, o);
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (strcmp(ins->raw_attrs[i].key, "backend_config") != 0)
      strbuf_printf(b, ", %s=%s", ins->raw_attrs[i].key, ins->raw_attrs[i].value);
  if (o->print_metadata && ins->metadata) strbuf_printf(b, ", metadata={%s}", ins->metadata);
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (strcmp(ins->raw_attrs[i].key, "backend_config") == 0)
      strbuf_printf(b, ", %s=%s", ins->raw_attrs[i].key, ins->raw_attrs[i].value);
}

/* Parameters in number order; falls back to definition order if params are not indexed. */
static const hlo_instr *param_at(const hlo_computation *c, int i, int *count) {
  int n = 0;
  for (int k = 0; k < c->n_instrs; k++) n += c->instrs[k]->op == HLO_OP_PARAMETER;
  *count = n;
  if (c->params && c->n_params == n && i < n && c->params[i]) return c->params[i];
  for (int k = 0, seen = 0; k < c->n_instrs; k++)
    if (c->instrs[k]->op == HLO_OP_PARAMETER && seen++ == i) return c->instrs[k];
  return NULL;
}

static const hlo_instr *root_of(const hlo_computation *c) {
  if (c->root) return c->root;
  return c->n_instrs ? c->instrs[c->n_instrs - 1] : NULL;
}

char *hlo_module_to_dump_string(const hlo_module *m, bool large_constants) {
  hlo_print_options o = hlo_print_options_default();
  o.print_large_constants = large_constants;
  return hlo_module_to_string(m, &o);
}

void hlo_print_computation(strbuf *b, const hlo_computation *c, const hlo_print_options *opts) {
  hlo_print_options def = hlo_print_options_default();
  const hlo_print_options *o = opts ? opts : &def;
  if (c->is_entry) strbuf_append(b, "ENTRY ");
  print_name(b, c->name, o);
  strbuf_append(b, " (");
  int n_params = 0;
  param_at(c, 0, &n_params);
  for (int i = 0; i < n_params; i++) {
    const hlo_instr *p = param_at(c, i, &n_params);
    if (i) strbuf_append(b, ", ");
    strbuf_printf(b, "%s: ", p->name);
    print_shape(b, &p->shape, false);
  }
  strbuf_append(b, ") -> ");
  const hlo_instr *root = root_of(c);
  if (root) print_shape(b, &root->shape, false);
  else strbuf_append(b, "()");
  strbuf_append(b, " {\n");
  for (int i = 0; i < c->n_instrs; i++) {
    strbuf_append(b, "  ");
    hlo_print_instr(b, c->instrs[i], o);
    strbuf_putc(b, '\n');
  }
  strbuf_putc(b, '}');
}

/* Entry layouts always carry layouts, as in XLA: arrays written without one get the
 * default (descending) layout. */
static void print_layout_shape(strbuf *b, const hlo_shape *s, bool with_layout) {
  print_shape_ex(b, s, with_layout, true);
}

static void print_entry_layout(strbuf *b, const hlo_computation *e, const hlo_print_options *o) {
  strbuf_append(b, ", entry_computation_layout={(");
  int n_params = 0;
  param_at(e, 0, &n_params);
  for (int i = 0; i < n_params; i++) {
    print_list_separator(b, i);
    print_layout_shape(b, &param_at(e, i, &n_params)->shape, o->print_layouts);
  }
  strbuf_append(b, ")->");
  const hlo_instr *root = root_of(e);
  if (root) print_layout_shape(b, &root->shape, o->print_layouts);
  else strbuf_append(b, "()");
  strbuf_putc(b, '}');
}

/* Header attributes XLA prints before entry_computation_layout. */
static bool precedes_entry_layout(const char *key) {
  return strcmp(key, "is_scheduled") == 0 || strcmp(key, "input_output_alias") == 0 ||
         strcmp(key, "buffer_donor") == 0 || strcmp(key, "alias_passthrough_params") == 0;
}

char *hlo_module_to_string(const hlo_module *m, const hlo_print_options *opts) {
  hlo_print_options def = hlo_print_options_default();
  const hlo_print_options *o = opts ? opts : &def;
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "HloModule %s", m->name);
  for (int i = 0; i < m->n_raw_attrs; i++)
    if (precedes_entry_layout(m->raw_attrs[i].key))
      strbuf_printf(&b, ", %s=%s", m->raw_attrs[i].key, m->raw_attrs[i].value);
  if (m->entry) print_entry_layout(&b, m->entry, o);
  for (int i = 0; i < m->n_raw_attrs; i++)
    if (!precedes_entry_layout(m->raw_attrs[i].key))
      strbuf_printf(&b, ", %s=%s", m->raw_attrs[i].key, m->raw_attrs[i].value);
  strbuf_append(&b, "\n\n");
  if (m->stack_frames && m->stack_frames[0]) {
    strbuf_append(&b, m->stack_frames);
    strbuf_append(&b, "\n\n");
  }
  for (int i = 0; i < m->n_comps; i++) {
    if (i) strbuf_append(&b, "\n\n");
    hlo_print_computation(&b, m->comps[i], o);
  }
  strbuf_putc(&b, '\n');
  return strbuf_take(&b);
}
