/* The pass pipeline runner: ordered passes, fixed-point sub-pipelines, verification
 * after every change and XLA-style dumps between passes (contract in pipeline.h).
 *
 * One run keeps its state (compiled dump regex, dump counter, options) in a struct that
 * nested sub-pipelines share, so the dump numbering runs through fix() iterations and the
 * before/after-optimizations files are written once per top-level run. */
#include "hlo/passes/pipeline.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "hlo/clone.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

typedef enum entry_kind { ENTRY_PASS, ENTRY_PASS_CTX, ENTRY_FIX } entry_kind;

typedef struct pipeline_entry {
  entry_kind kind;
  char *name;
  hlo_pass_fn run;
  hlo_pass_ctx_fn run_ctx;
  void *ctx;
  hlo_pipeline *sub;
  int max_iters;
} pipeline_entry;

struct hlo_pipeline {
  char *name;
  int n, cap;
  pipeline_entry *entries;
};

static void *xalloc(void *p) {
  if (!p) {
    fputs("kiln: out of memory building a pass pipeline\n", stderr);
    abort();
  }
  return p;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xalloc(malloc(n)), s, n);
}

hlo_pipeline_options hlo_pipeline_options_default(void) {
  hlo_pipeline_options o;
  memset(&o, 0, sizeof o);
  o.verify = true;
  return o;
}

hlo_pipeline *hlo_pipeline_new(const char *name) {
  hlo_pipeline *p = xalloc(calloc(1, sizeof *p));
  p->name = xstrdup(name ? name : "pipeline");
  return p;
}

void hlo_pipeline_free(hlo_pipeline *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) {
    free(p->entries[i].name);
    hlo_pipeline_free(p->entries[i].sub);
  }
  free(p->entries);
  free(p->name);
  free(p);
}

static pipeline_entry *append(hlo_pipeline *p, entry_kind kind, const char *name) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 8;
    p->entries = xalloc(realloc(p->entries, (size_t)p->cap * sizeof *p->entries));
  }
  pipeline_entry *e = &p->entries[p->n++];
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->name = xstrdup(name);
  return e;
}

void hlo_pipeline_add_pass(hlo_pipeline *p, const char *name, hlo_pass_fn run) {
  append(p, ENTRY_PASS, name)->run = run;
}

void hlo_pipeline_add_pass_ctx(hlo_pipeline *p, const char *name, hlo_pass_ctx_fn run, void *ctx) {
  pipeline_entry *e = append(p, ENTRY_PASS_CTX, name);
  e->run_ctx = run;
  e->ctx = ctx;
}

void hlo_pipeline_add_fix(hlo_pipeline *p, hlo_pipeline *sub, int max_iters) {
  pipeline_entry *e = append(p, ENTRY_FIX, sub->name);
  e->sub = sub;
  e->max_iters = max_iters < 1 ? 1 : max_iters;
}

const char *hlo_pipeline_name(const hlo_pipeline *p) { return p->name; }

/* ---- running ---- */

typedef struct run_state {
  const hlo_pipeline_options *opts;
  bool dumping;
  regex_t dump_re;
  int dump_step;
  char *module_tag; /* "module_0000.NAME", sanitized */
} run_state;

/* mkdir -p: dump directories are usually given fresh. */
static kiln_status make_dirs(const char *path) {
  char *p = xstrdup(path);
  kiln_status s = NULL;
  for (char *c = p + 1;; c++) {
    if (*c == '/' || *c == 0) {
      char saved = *c;
      *c = 0;
      if (mkdir(p, 0777) != 0 && errno != EEXIST)
        s = status_error(KILN_IO_ERROR, "cannot create directory %s: %s", p, strerror(errno));
      *c = saved;
      if (s || saved == 0) break;
    }
  }
  free(p);
  if (s) return s;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return status_error(KILN_IO_ERROR, "dump directory %s is not a directory", path);
  return NULL;
}

static kiln_status write_dump(run_state *rs, const hlo_module *m, const char *suffix) {
  char *text = hlo_module_to_dump_string(m, rs->opts->dump_large_constants);
  size_t n = strlen(rs->opts->dump_to) + strlen(rs->module_tag) + strlen(suffix) + 16;
  char *path = xalloc(malloc(n));
  snprintf(path, n, "%s/%s.%s.hlo", rs->opts->dump_to, rs->module_tag, suffix);
  kiln_status s = NULL;
  FILE *f = fopen(path, "w");
  if (!f) {
    s = status_error(KILN_IO_ERROR, "cannot write dump %s: %s", path, strerror(errno));
  } else {
    size_t len = strlen(text);
    if (fwrite(text, 1, len, f) != len) s = status_error(KILN_IO_ERROR, "cannot write dump %s: %s", path, strerror(errno));
    if (fclose(f) != 0 && !s) s = status_error(KILN_IO_ERROR, "cannot write dump %s: %s", path, strerror(errno));
  }
  if (!s) log_info("dumped %s", path);
  free(path);
  free(text);
  return s;
}

static bool pass_disabled(const run_state *rs, const char *name) {
  const char *list = rs->opts->disabled_passes;
  if (!list) return false;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return true;
    if (!comma) break;
    p = comma + 1;
  }
  return false;
}

/* A module's arena keeps what passes replaced until the module is freed: on a
 * quantized mobilenet the cpu pipeline leaves 23 MiB of arena for 3.7 MiB of live
 * instructions, and more than the live size again in constants nothing holds. */
#define COMPACT_MIN_DEAD 1024

static kiln_status after_pass(run_state *rs, hlo_module *m, const char *name, bool changed) {
  if (changed && rs->opts->verify) TRY(status_wrap(hlo_verify_module(m), "after pass %s", name));
  if (changed && rs->opts->compact) {
    int64_t dead = hlo_module_dead_instrs(m);
    if (dead >= COMPACT_MIN_DEAD && dead > m->arena_instrs - dead)
      TRY(status_wrap(hlo_module_compact(m), "compacting after pass %s", name));
  }
  if (rs->dumping && regexec(&rs->dump_re, name, 0, NULL, 0) == 0) {
    char suffix[256];
    snprintf(suffix, sizeof suffix, "%04d.after_%s", rs->dump_step++, name);
    TRY(write_dump(rs, m, suffix));
  }
  return NULL;
}

static kiln_status run_entries(run_state *rs, const hlo_pipeline *p, hlo_module *m, bool *changed) {
  for (int i = 0; i < p->n; i++) {
    const pipeline_entry *e = &p->entries[i];
    if (pass_disabled(rs, e->name)) {
      log_info("pipeline %s: pass %s disabled", p->name, e->name);
      continue;
    }
    if (e->kind == ENTRY_FIX) {
      int iter = 0;
      for (;;) {
        bool sub_changed = false;
        TRY(run_entries(rs, e->sub, m, &sub_changed));
        iter++;
        if (sub_changed) *changed = true;
        if (!sub_changed) break;
        if (iter >= e->max_iters) {
          if (e->max_iters > 1)
            log_info("pipeline %s: fix(%s) still changing after %d iterations; moving on", p->name, e->name, iter);
          break;
        }
      }
      continue;
    }
    bool pass_changed = false;
    log_info("pipeline %s: running %s", p->name, e->name);
    kiln_status s = e->kind == ENTRY_PASS ? e->run(m, &pass_changed) : e->run_ctx(m, e->ctx, &pass_changed);
    TRY(status_wrap(s, "pass %s", e->name));
    if (pass_changed) *changed = true;
    TRY(after_pass(rs, m, e->name, pass_changed));
  }
  return NULL;
}

static char *module_tag(const hlo_module *m, int id) {
  const char *name = m->name ? m->name : "module";
  size_t n = strlen(name);
  char *tag = xalloc(malloc(n + 32));
  int k = snprintf(tag, n + 32, "module_%04d.", id);
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.';
    tag[k++] = ok ? c : '_';
  }
  tag[k] = 0;
  return tag;
}

kiln_status hlo_pipeline_run(const hlo_pipeline *p, hlo_module *m, const hlo_pipeline_options *opts, bool *changed) {
  hlo_pipeline_options defaults = hlo_pipeline_options_default();
  if (!opts) opts = &defaults;
  bool local_changed = false;
  if (!changed) changed = &local_changed;
  *changed = false;

  run_state rs;
  memset(&rs, 0, sizeof rs);
  rs.opts = opts;
  if (opts->dump_to && *opts->dump_to) {
    const char *re = opts->dump_pass_re && *opts->dump_pass_re ? opts->dump_pass_re : ".*";
    int rc = regcomp(&rs.dump_re, re, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[256];
      regerror(rc, &rs.dump_re, msg, sizeof msg);
      return ERR_INVALID("bad --dump_pass_re '%s': %s", re, msg);
    }
    rs.dumping = true;
    rs.module_tag = module_tag(m, opts->module_id);
  }

  kiln_status s = NULL;
  if (rs.dumping) {
    s = make_dirs(opts->dump_to);
    if (!s) s = write_dump(&rs, m, "before_optimizations");
  }
  if (!s) s = run_entries(&rs, p, m, changed);
  if (!s && rs.dumping) s = write_dump(&rs, m, "after_optimizations");
  if (rs.dumping) {
    regfree(&rs.dump_re);
    free(rs.module_tag);
  }
  return status_wrap(s, "pipeline %s", p->name);
}

hlo_pipeline *hlo_pipeline_new_default(void) {
  hlo_pipeline *p = hlo_pipeline_new("optimizations");
  hlo_pipeline *simplify = hlo_pipeline_new("simplification");
  hlo_pipeline_add_pass(simplify, "dce", hlo_pass_dce);
  hlo_pipeline_add_fix(p, simplify, HLO_FIX_DEFAULT_MAX_ITERS);
  return p;
}

/* fix(algsimp, constant-folding when given, cse, dce) named `name`, appended to p. */
void hlo_pipeline_add_simplification(hlo_pipeline *p, const char *name, hlo_pass_fn constant_folding) {
  hlo_pipeline *simplify = hlo_pipeline_new(name);
  hlo_pipeline_add_pass(simplify, "algsimp", hlo_pass_algebraic_simplifier);
  if (constant_folding) hlo_pipeline_add_pass(simplify, "constant-folding", constant_folding);
  hlo_pipeline_add_pass(simplify, "cse", hlo_pass_cse);
  hlo_pipeline_add_pass(simplify, "dce", hlo_pass_dce);
  hlo_pipeline_add_fix(p, simplify, HLO_FIX_DEFAULT_MAX_ITERS);
}

/* The optimize pipeline's passes, appended to p. */
void hlo_pipeline_add_optimize_passes(hlo_pipeline *p, hlo_pass_fn constant_folding) {
  /* First: JAX wraps every named function in a call, and no later pass or backend
   * looks inside calls (the cpu code generator refuses them). */
  hlo_pipeline_add_pass(p, "call-inliner", hlo_pass_call_inliner);
  hlo_pipeline_add_pass(p, "batchnorm-expander", hlo_pass_batchnorm_expander);
  hlo_pipeline_add_simplification(p, "simplification", constant_folding);
  hlo_pipeline_add_pass(p, "transpose-folding", hlo_pass_transpose_folding);
  hlo_pipeline *cleanup = hlo_pipeline_new("cleanup");
  hlo_pipeline_add_pass(cleanup, "algsimp", hlo_pass_algebraic_simplifier);
  hlo_pipeline_add_pass(cleanup, "cse", hlo_pass_cse);
  hlo_pipeline_add_pass(cleanup, "dce", hlo_pass_dce);
  hlo_pipeline_add_fix(p, cleanup, HLO_FIX_DEFAULT_MAX_ITERS);
}

hlo_pipeline *hlo_pipeline_new_optimize(hlo_pass_fn constant_folding) {
  hlo_pipeline *p = hlo_pipeline_new("optimizations");
  hlo_pipeline_add_optimize_passes(p, constant_folding);
  return p;
}
