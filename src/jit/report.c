/* What clustering decided, for people: the `kiln cluster` summary and a DOT picture.
 *
 * The summary lists each cluster with its device, size, share of the graph's nodes,
 * argument counts and an op histogram, then every node left out with the reason the
 * first excluding rule gave, grouped by reason so a model with thousands of nodes
 * still reads in a screen. The DOT file draws the graph as it was before
 * encapsulation, each cluster a filled subgraph of its own colour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"

typedef struct count {
  const char *key;
  int n;
} count;

static int by_count(const void *a, const void *b) {
  const count *x = a, *y = b;
  if (x->n != y->n) return y->n - x->n;
  return strcmp(x->key, y->key);
}

/* Adds key to a small histogram (linear: histograms have tens of entries). */
static void bump(count *h, int *n, const char *key) {
  for (int i = 0; i < *n; i++)
    if (strcmp(h[i].key, key) == 0) {
      h[i].n++;
      return;
    }
  h[(*n)++] = (count){key, 1};
}

void jit_report_print(strbuf *b, const jit_report *r) {
  int clustered = 0;
  for (int i = 0; i < r->n_nodes; i++) clustered += r->nodes[i].cluster >= 0;
  double pct = r->n_nodes ? 100.0 * clustered / r->n_nodes : 0.0;
  strbuf_printf(b, "%d nodes, %d cluster%s holding %d nodes (%.1f%%), %d partially declustered\n", r->n_nodes,
                r->n_clusters, r->n_clusters == 1 ? "" : "s", clustered, pct, r->n_declustered);
  count *h = malloc(((size_t)r->n_nodes + 1) * sizeof *h);
  if (!h) abort();
  for (int c = 0; c < r->n_clusters; c++) {
    const jit_cluster_report *cr = &r->clusters[c];
    strbuf_printf(b, "\n%s on %s%s%s%s: %d nodes (%.1f%%), %d counted%s; %d constant, %d arg, %d resource input%s, %d output%s\n",
                  cr->name, cr->device, cr->frame ? " in loop frame '" : "", cr->frame ? cr->frame : "",
                  cr->frame ? "'" : "", cr->n_nodes, r->n_nodes ? 100.0 * cr->n_nodes / r->n_nodes : 0.0,
                  cr->n_counted, cr->must_compile ? ", explicit compile scope" : "", cr->n_constants, cr->n_args,
                  cr->n_resources, cr->n_constants + cr->n_args + cr->n_resources == 1 ? "" : "s", cr->n_outputs,
                  cr->n_outputs == 1 ? "" : "s");
    int nh = 0;
    for (int i = 0; i < r->n_nodes; i++)
      if (r->nodes[i].cluster == c) bump(h, &nh, r->nodes[i].op);
    qsort(h, (size_t)nh, sizeof *h, by_count);
    strbuf_append(b, "  ops:");
    for (int i = 0; i < nh; i++) strbuf_printf(b, " %s x%d%s", h[i].key, h[i].n, i + 1 < nh ? "," : "");
    strbuf_append(b, "\n");
  }
  int nh = 0;
  for (int i = 0; i < r->n_nodes; i++)
    if (r->nodes[i].cluster < 0) bump(h, &nh, r->nodes[i].reason ? r->nodes[i].reason : "?");
  qsort(h, (size_t)nh, sizeof *h, by_count);
  if (nh) strbuf_printf(b, "\nunclustered: %d nodes\n", r->n_nodes - clustered);
  for (int k = 0; k < nh; k++) {
    strbuf_printf(b, "  %d x %s:\n   ", h[k].n, h[k].key);
    int shown = 0;
    for (int i = 0; i < r->n_nodes; i++) {
      const jit_node_report *nr = &r->nodes[i];
      if (nr->cluster >= 0 || strcmp(nr->reason ? nr->reason : "?", h[k].key) != 0) continue;
      strbuf_printf(b, " %s (%s)", nr->name, nr->op);
      shown++;
    }
    strbuf_append(b, "\n");
  }
  free(h);
}

static void dot_id(strbuf *b, const char *s) {
  strbuf_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') strbuf_putc(b, '\\');
    strbuf_putc(b, *s);
  }
  strbuf_putc(b, '"');
}

/* The report entry of original->nodes[i]: the report lists the graph's nodes in order
 * and `original` is a clone taken before the rewrite, so the positions agree; the
 * search only serves a graph that does not match. */
static const jit_node_report *find_report(const jit_report *r, int i, const char *name) {
  if (i < r->n_nodes && strcmp(r->nodes[i].name, name) == 0) return &r->nodes[i];
  for (int k = 0; k < r->n_nodes; k++)
    if (strcmp(r->nodes[k].name, name) == 0) return &r->nodes[k];
  return NULL;
}

void jit_report_dot(strbuf *f, const jit_report *r, const graph *original) {
  static const char *const colours[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                        "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  const int n_colours = (int)(sizeof colours / sizeof colours[0]);
  strbuf_printf(f, "digraph kiln {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n");
  for (int c = -1; c < r->n_clusters; c++) {
    if (c >= 0) {
      strbuf_printf(f, "  subgraph \"cluster_%d\" {\n    style=filled; color=\"%s\"; label=", c, colours[c % n_colours]);
      dot_id(f, r->clusters[c].name);
      strbuf_printf(f, ";\n");
    }
    for (int i = 0; i < original->n_nodes; i++) {
      const graph_node *n = original->nodes[i];
      const jit_node_report *nr = find_report(r, i, n->name);
      if ((nr ? nr->cluster : -1) != c) continue;
      strbuf_printf(f, "    ");
      dot_id(f, n->name);
      strbuf_printf(f, " [label=");
      char label[512];
      snprintf(label, sizeof label, "%s\\n%s", n->name, n->op);
      strbuf_printf(f, "\"%s\"", label);
      if (c < 0) strbuf_printf(f, ", style=dashed");
      strbuf_printf(f, "];\n");
    }
    if (c >= 0) strbuf_printf(f, "  }\n");
  }
  for (int i = 0; i < original->n_nodes; i++) {
    const graph_node *n = original->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
      strbuf_printf(f, "  ");
      dot_id(f, n->inputs[k].node->name);
      strbuf_printf(f, " -> ");
      dot_id(f, n->name);
      strbuf_printf(f, ";\n");
    }
    for (int k = 0; k < n->n_control; k++) {
      strbuf_printf(f, "  ");
      dot_id(f, n->control_inputs[k]->name);
      strbuf_printf(f, " -> ");
      dot_id(f, n->name);
      strbuf_printf(f, " [style=dotted];\n");
    }
  }
  strbuf_append(f, "}\n");
}
