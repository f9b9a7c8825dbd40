/* The flag table and its parsers (see flags.h for the accepted syntax).
 *
 * The runtime table is generated from KILN_FLAG_LIST together with the offset of each
 * flag's field in `kiln_flags`, so parsing is one generic loop over typed storage. Every
 * parsed string is copied into storage this module owns (a flat list of allocations),
 * which lets KILN_FLAGS be tokenized into temporaries and lets flags_reset release
 * everything at once. Defaults are parsed with the same code as user values, so a
 * malformed default is caught the first time the program starts. */
#include "base/flags.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

kiln_flags_t kiln_flags;

typedef struct flag_row {
  flag_info info;
  size_t offset; /* of the value in kiln_flags */
} flag_row;

static const flag_row flag_rows[] = {
#define X(name, alias, type, def, help) {{#name, alias, FLAG_##type, def, help}, offsetof(kiln_flags_t, name)},
    KILN_FLAG_LIST(X)
#undef X
};

#define N_FLAGS ((int)(sizeof flag_rows / sizeof flag_rows[0]))

/* Every string handed out through kiln_flags, freed by flags_reset. */
static char **owned;
static int n_owned, cap_owned;
static bool initialized;

static void *oom(void *p) {
  if (!p) {
    fputs("kiln: out of memory while parsing flags\n", stderr);
    abort();
  }
  return p;
}

static void *own(void *p) {
  if (n_owned == cap_owned) {
    cap_owned = cap_owned ? cap_owned * 2 : 16;
    owned = oom(realloc(owned, (size_t)cap_owned * sizeof *owned));
  }
  owned[n_owned++] = p;
  return p;
}

static const char *own_string(const char *s, size_t n) {
  char *copy = own(oom(malloc(n + 1)));
  memcpy(copy, s, n);
  copy[n] = 0;
  return copy;
}

int flags_count(void) { return N_FLAGS; }
const flag_info *flags_at(int i) { return i >= 0 && i < N_FLAGS ? &flag_rows[i].info : NULL; }

const flag_info *flags_find(const char *name) {
  for (int i = 0; i < N_FLAGS; i++)
    if (strcmp(flag_rows[i].info.name, name) == 0) return &flag_rows[i].info;
  return NULL;
}

const char *flag_type_name(flag_type t) {
  switch (t) {
    case FLAG_BOOL: return "bool";
    case FLAG_INT: return "int";
    case FLAG_DOUBLE: return "double";
    case FLAG_STRING: return "string";
    case FLAG_LIST: return "list";
  }
  return "?";
}

static const flag_row *find_row(const char *name, size_t len) {
  for (int i = 0; i < N_FLAGS; i++)
    if (strlen(flag_rows[i].info.name) == len && strncmp(flag_rows[i].info.name, name, len) == 0)
      return &flag_rows[i];
  return NULL;
}

static const flag_row *find_alias(char alias) {
  for (int i = 0; i < N_FLAGS; i++)
    if (alias && flag_rows[i].info.alias == alias) return &flag_rows[i];
  return NULL;
}

static void *field(const flag_row *r) { return (char *)&kiln_flags + r->offset; }

/* Stores VALUE into the flag's field, checking it fully (no trailing junk, no
 * overflow). `spelled` is how the user wrote the flag, for messages. */
static kiln_status set_value(const flag_row *r, const char *spelled, const char *value) {
  switch (r->info.type) {
    case FLAG_BOOL: {
      bool v;
      if (!value || strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
        v = true;
      else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
        v = false;
      else
        return ERR_INVALID("flag %s: expected true/false/1/0, got '%s'", spelled, value);
      *(bool *)field(r) = v;
      return NULL;
    }
    case FLAG_INT: {
      if (!value || !*value) return ERR_INVALID("flag %s needs an integer value", spelled);
      char *end;
      errno = 0;
      long long v = strtoll(value, &end, 10);
      if (*end || errno == ERANGE || end == value)
        return ERR_INVALID("flag %s: expected an integer, got '%s'", spelled, value);
      *(int64_t *)field(r) = (int64_t)v;
      return NULL;
    }
    case FLAG_DOUBLE: {
      if (!value || !*value) return ERR_INVALID("flag %s needs a number", spelled);
      char *end;
      errno = 0;
      double v = strtod(value, &end);
      if (*end || end == value || errno == ERANGE || isnan(v))
        return ERR_INVALID("flag %s: expected a number, got '%s'", spelled, value);
      *(double *)field(r) = v;
      return NULL;
    }
    case FLAG_STRING:
      if (!value) return ERR_INVALID("flag %s needs a value", spelled);
      *(const char **)field(r) = own_string(value, strlen(value));
      return NULL;
    case FLAG_LIST: {
      if (!value) return ERR_INVALID("flag %s needs a value", spelled);
      flag_list *l = field(r);
      const char **nv = own(oom(malloc((size_t)(l->n + 1) * sizeof *nv)));
      if (l->n) memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
      nv[l->n] = own_string(value, strlen(value));
      /* The old array stays owned until reset: lists are short, so waste is negligible. */
      l->v = nv;
      l->n++;
      return NULL;
    }
  }
  return ERR_INTERNAL("flag %s has an unknown type", spelled);
}

void flags_reset(void) {
  for (int i = 0; i < n_owned; i++) free(owned[i]);
  free(owned);
  owned = NULL;
  n_owned = cap_owned = 0;
  memset(&kiln_flags, 0, sizeof kiln_flags);
  for (int i = 0; i < N_FLAGS; i++) {
    const flag_row *r = &flag_rows[i];
    if (r->info.type == FLAG_LIST) continue; /* empty */
    if (r->info.type == FLAG_STRING) {
      *(const char **)field(r) = r->info.default_value;
      continue;
    }
    kiln_status s = set_value(r, r->info.name, r->info.default_value);
    if (s) { /* a typo in KILN_FLAG_LIST: an internal invariant */
      fprintf(stderr, "kiln: internal error: bad default: %s\n", kiln_status_message(s));
      abort();
    }
  }
  initialized = true;
}

static void ensure_initialized(void) {
  if (!initialized) flags_reset();
}

kiln_status flags_set(const char *name, const char *value) {
  ensure_initialized();
  const flag_row *r = find_row(name, strlen(name));
  if (!r) return ERR_INVALID("unknown flag --%s (see `kiln flags`)", name);
  char spelled[128];
  snprintf(spelled, sizeof spelled, "--%s", name);
  return set_value(r, spelled, value);
}

/* The shared loop. `allow_positional` is false for KILN_FLAGS. */
static kiln_status parse_words(int argc, char **argv, bool allow_positional, int *n_positional, char ***positional) {
  ensure_initialized();
  bool flags_done = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const flag_row *r = NULL;
    const char *value = NULL;
    char spelled[128];
    bool is_flag = !flags_done && a[0] == '-' && a[1] != 0;
    if (is_flag && strcmp(a, "--") == 0) {
      flags_done = true;
      continue;
    }
    if (!is_flag) {
      if (!allow_positional) return ERR_INVALID("'%s' is not a flag (flags look like --name=value)", a);
      (*positional)[(*n_positional)++] = argv[i];
      continue;
    }
    if (a[1] == '-') {
      const char *name = a + 2;
      const char *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      snprintf(spelled, sizeof spelled, "--%.*s", (int)(len > 100 ? 100 : len), name);
      r = find_row(name, len);
      if (eq) value = eq + 1;
    } else {
      snprintf(spelled, sizeof spelled, "-%c", a[1]);
      r = find_alias(a[1]);
      if (a[2] == '=')
        value = a + 3;
      else if (a[2])
        value = a + 2; /* -oDIR */
    }
    if (!r) return ERR_INVALID("unknown flag %s (see `kiln flags`)", spelled);
    if (!value && r->info.type != FLAG_BOOL) {
      if (i + 1 >= argc) return ERR_INVALID("flag %s needs a value", spelled);
      value = argv[++i];
    }
    TRY(set_value(r, spelled, value));
  }
  return NULL;
}

kiln_status flags_parse_args(int argc, char **argv, int *n_positional, char ***positional) {
  *n_positional = 0;
  *positional = oom(calloc((size_t)argc + 1, sizeof(char *)));
  kiln_status s = parse_words(argc, argv, true, n_positional, positional);
  if (s) {
    free(*positional);
    *positional = NULL;
    *n_positional = 0;
  }
  return s;
}

kiln_status flags_parse_env(const char *text) {
  if (!text) return NULL;
  /* Tokenize into a scratch buffer: quotes group, backslash is literal (paths). */
  size_t len = strlen(text);
  char *buf = oom(malloc(len + 1));
  char **words = oom(calloc(len / 2 + 2, sizeof(char *)));
  int n = 0;
  size_t w = 0;
  const char *p = text;
  kiln_status s = NULL;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    words[n++] = buf + w;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      if (*p == '\'' || *p == '"') {
        char q = *p++;
        while (*p && *p != q) buf[w++] = *p++;
        if (!*p) {
          s = ERR_INVALID("unterminated %c quote", q);
          break;
        }
        p++;
      } else {
        buf[w++] = *p++;
      }
    }
    buf[w++] = 0;
    if (s) break;
  }
  if (!s) s = parse_words(n, words, false, NULL, NULL);
  free(words);
  free(buf);
  return status_wrap(s, "in KILN_FLAGS");
}

char *flags_value_string(int i) {
  strbuf b;
  strbuf_init(&b);
  const flag_row *r = &flag_rows[i];
  ensure_initialized();
  switch (r->info.type) {
    case FLAG_BOOL: strbuf_append(&b, *(bool *)field(r) ? "true" : "false"); break;
    case FLAG_INT: strbuf_printf(&b, "%lld", (long long)*(int64_t *)field(r)); break;
    case FLAG_DOUBLE: strbuf_printf(&b, "%.17g", *(double *)field(r)); break;
    case FLAG_STRING: strbuf_append(&b, *(const char **)field(r)); break;
    case FLAG_LIST: {
      const flag_list *l = field(r);
      for (int k = 0; k < l->n; k++) {
        if (k) strbuf_putc(&b, ' ');
        strbuf_append(&b, l->v[k]);
      }
      break;
    }
  }
  return strbuf_take(&b);
}
