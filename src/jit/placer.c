/* Placement pass: a device for every node, written to node->assigned_device.
 *
 * The candidates for a node are the device named by --device (the user overrides
 * what the exporter wrote), else the device the node asked for (node->requested_device,
 * TF's "/device:CPU:0" spelling or a kiln device name) when that device exists, else
 * every usable device by priority (built-in cpu, plugins by their declared priority,
 * the interpreter). A lowered op goes to the first
 * candidate whose supports() accepts every instruction of its lowering (static-shapes
 * asked each of them); the host — host kernels and executor-interpreted ops, spelled
 * "host" — is always last. A node no candidate can run goes to the host with a note,
 * which is TensorFlow's soft placement; --no_host_fallback turns that into an error,
 * as ONNX Runtime's disable_cpu_ep_fallback does. Control flow, feeds and the
 * executor's stateful ops (TensorArray, functional calls) live on the host by nature
 * and are never an error.
 *
 * Const and Identity-like nodes follow their consumers (TF's colocation): they take
 * the device all their placed consumers agree on, so a plugin's cluster keeps its
 * weights as compile-time constants; resource ops take the first candidate.
 * --log_placement prints one line per node. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "jit/jit_internal.h"

/* The kiln device a requested-device string names, or NULL: "/job:x/device:CPU:0"
 * -> "cpu", "interpreter" -> "interpreter". *unknown says a device was named but
 * none by that name is usable. */
static const backend *requested_backend(const graph_node *n, bool *unknown) {
  char name[64];
  *unknown = false;
  const char *r = n->requested_device;
  if (!r || !r[0]) return NULL;
  const char *d = strstr(r, "device:");
  if (d) r = d + strlen("device:");
  size_t k = 0;
  for (; r[k] && r[k] != ':' && r[k] != '/' && k + 1 < sizeof name; k++) name[k] = (char)tolower((unsigned char)r[k]);
  name[k] = 0;
  if (!k) return NULL;
  const backend *b = backend_find(name);
  if (!b) *unknown = true;
  return b;
}

static int device_index(const jit_state *st, const backend *b) {
  for (int d = 0; d < st->n_devices; d++)
    if (st->devices[d] == b) return d;
  return -1;
}

/* The device for a lowered node, or NULL (host) with *note saying why. */
static const backend *place_lowered(jit_state *st, const jit_node_state *ns, const backend *req, const char **note) {
  if (req) {
    int d = device_index(st, req);
    /* A requested device outside the candidate list was not asked statically: trust
     * it until its compile says otherwise. */
    if (d < 0 || !ns->unsupported || !ns->unsupported[d]) return req;
    *note = ns->unsupported[d];
    return NULL;
  }
  for (int d = 0; d < st->n_devices; d++)
    if (!ns->unsupported || !ns->unsupported[d]) return st->devices[d];
  *note = st->n_devices ? ns->unsupported[0] : "no device";
  return NULL;
}

/* Const / Identity-like: the device every placed data consumer agrees on. */
static const backend *colocate(jit_state *st, const graph_node *n) {
  const backend *agreed = NULL;
  for (int port = 0; port < n->n_outputs; port++) {
    const graph_use *uses;
    int nu = graph_consumers(n, port, &uses);
    for (int u = 0; u < nu; u++) {
      const jit_node_state *cs = jit_node(st, uses[u].node);
      if (!cs->device) continue;
      if (agreed && agreed != cs->device) return NULL;
      agreed = cs->device;
    }
  }
  return agreed;
}

kiln_status jit_pass_placer(jit_state *st) {
  const jit_options *o = st->opts;
  const char **notes = arena_calloc(st->arena, (size_t)st->id_limit + 1, sizeof *notes);
  /* Lowered ops first (their placement is what others follow), then the followers in
   * reverse topological order so Identity chains see their consumers placed. */
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    jit_node_state *ns = jit_node(st, n);
    bool unknown;
    const backend *req = st->device_named ? st->devices[0] : requested_backend(n, &unknown);
    if (st->device_named) unknown = false;
    const char *note = NULL;
    if (unknown) note = arena_printf(st->arena, "requested device '%s' is not available", n->requested_device);
    if (ns->kind == JIT_KIND_LOWERED) {
      const char *why = NULL;
      ns->device = place_lowered(st, ns, req, &why);
      if (!ns->device) note = why;
    } else if (ns->kind == JIT_KIND_RESOURCE || ns->kind == JIT_KIND_FUNCTIONAL ||
               ns->kind == JIT_KIND_TENSOR_LIST) {
      ns->device = req ? req : st->n_devices ? st->devices[0] : NULL;
    } else if (ns->kind == JIT_KIND_HOST_ONLY) {
      note = "the op has only a host kernel";
    }
    notes[n->id] = note;
    bool fallback = !ns->device && (ns->kind == JIT_KIND_LOWERED || ns->kind == JIT_KIND_HOST_ONLY);
    if (fallback && o->no_host_fallback)
      return status_error(KILN_UNIMPLEMENTED,
                          "node %s (%s) cannot run on device %s: %s; --no_host_fallback forbids the host fallback",
                          n->name, n->op, req ? req->name : st->n_devices ? st->devices[0]->name : "?",
                          note ? note : "unsupported");
  }
  for (int t = st->n_topo - 1; t >= 0; t--) {
    graph_node *n = st->topo[t];
    jit_node_state *ns = jit_node(st, n);
    if (ns->kind != JIT_KIND_CONST && ns->kind != JIT_KIND_IDENTITY) continue;
    bool unknown;
    const backend *req = st->device_named ? NULL : requested_backend(n, &unknown);
    const backend *c = colocate(st, n);
    ns->device = req ? req : c ? c : st->n_devices ? st->devices[0] : NULL;
  }
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    const jit_node_state *ns = jit_node(st, n);
    graph_node_set_assigned_device(n, ns->device ? ns->device->name : "host");
    if (!o->log_placement) continue;
    printf("placement: %s (%s) -> %s", n->name, n->op, ns->device ? ns->device->name : "host");
    if (notes[n->id])
      printf("  [%s%s]", !ns->device && ns->kind != JIT_KIND_OTHER ? "host fallback: " : "", notes[n->id]);
    printf("\n");
  }
  if (o->log_placement) fflush(stdout);
  return NULL;
}
