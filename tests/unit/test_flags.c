/* Unit tests for the flag table and its parsers: defaults, every accepted spelling,
 * KILN_FLAGS with command-line precedence, list flags, and the errors for unknown flags,
 * bad values and missing values (which `kiln` turns into exit code 2). */
#include <stdlib.h>
#include <string.h>

#include "base/flags.h"
#include "check.h"

static kiln_status parse(int argc, const char **argv, int *n_pos, char ***pos) {
  return flags_parse_args(argc, (char **)argv, n_pos, pos);
}

static void test_defaults(void) {
  flags_reset();
  CHECK(strcmp(kiln_flags.device, "") == 0);
  CHECK(kiln_flags.iters == 1);
  CHECK(!kiln_flags.json);
  CHECK(strcmp(kiln_flags.dump_to, "") == 0);
  CHECK(strcmp(kiln_flags.dump_pass_re, ".*") == 0);
  CHECK(strcmp(kiln_flags.output_dir, ".") == 0);
  CHECK(kiln_flags.v == 0);
  CHECK(kiln_flags.input.n == 0);
  CHECK(kiln_flags.max_literal_bytes == (int64_t)8 << 30);
  flags_reset();
}

static void test_table(void) {
  CHECK(flags_count() >= 10);
  for (int i = 0; i < flags_count(); i++) {
    const flag_info *f = flags_at(i);
    CHECK(f->name && *f->name);
    CHECK(f->help && *f->help);
    CHECK(strcmp(flag_type_name(f->type), "?") != 0);
    CHECK(flags_find(f->name) == f);
  }
  CHECK(flags_find("nonexistent") == NULL);
  CHECK(flags_at(flags_count()) == NULL);
  CHECK(flags_find("output_dir")->alias == 'o');
  CHECK(flags_find("input")->type == FLAG_LIST);
  CHECK(flags_find("json")->type == FLAG_BOOL);
  CHECK(flags_find("iters")->type == FLAG_INT);
  CHECK(flags_find("device")->type == FLAG_STRING);
}

static void test_args_all_forms(void) {
  flags_reset();
  const char *argv[] = {"run",   "--iters=3", "file.hlo", "--json",      "-o",        "out", "-i",
                        "a=b.npy", "-ic=d.npy", "--device", "interpreter", "--v", "2", "-i=e=f.npy"};
  int n = 0;
  char **pos = NULL;
  CHECK_OK(parse((int)(sizeof argv / sizeof argv[0]), argv, &n, &pos));
  CHECK(n == 2);
  if (n == 2) {
    CHECK(strcmp(pos[0], "run") == 0);
    CHECK(strcmp(pos[1], "file.hlo") == 0);
  }
  free(pos);
  CHECK(kiln_flags.iters == 3);
  CHECK(kiln_flags.json);
  CHECK(strcmp(kiln_flags.output_dir, "out") == 0);
  CHECK(strcmp(kiln_flags.device, "interpreter") == 0);
  CHECK(kiln_flags.v == 2);
  CHECK(kiln_flags.input.n == 3);
  if (kiln_flags.input.n == 3) {
    CHECK(strcmp(kiln_flags.input.v[0], "a=b.npy") == 0);
    CHECK(strcmp(kiln_flags.input.v[1], "c=d.npy") == 0);
    CHECK(strcmp(kiln_flags.input.v[2], "e=f.npy") == 0);
  }
  char *s = flags_value_string(0);
  CHECK(strcmp(s, "interpreter") == 0);
  free(s);
  flags_reset();
  CHECK(kiln_flags.input.n == 0);
  CHECK(kiln_flags.iters == 1);
}

static void test_bools(void) {
  flags_reset();
  CHECK_OK(flags_set("json", NULL));
  CHECK(kiln_flags.json);
  CHECK_OK(flags_set("json", "false"));
  CHECK(!kiln_flags.json);
  CHECK_OK(flags_set("json", "1"));
  CHECK(kiln_flags.json);
  CHECK_OK(flags_set("json", "0"));
  CHECK(!kiln_flags.json);
  CHECK_ERR(flags_set("json", "maybe"), "--json");
  /* A bool never swallows the next word. */
  const char *argv[] = {"--json", "run"};
  int n;
  char **pos;
  CHECK_OK(parse(2, argv, &n, &pos));
  CHECK(n == 1 && kiln_flags.json);
  free(pos);
  flags_reset();
}

static void test_errors(void) {
  flags_reset();
  int n;
  char **pos = NULL;
  const char *a1[] = {"run", "--bogus=1"};
  CHECK_ERR(parse(2, a1, &n, &pos), "unknown flag --bogus");
  CHECK(pos == NULL);
  const char *a2[] = {"-z"};
  CHECK_ERR(parse(1, a2, &n, &pos), "unknown flag -z");
  const char *a3[] = {"--iters=abc"};
  CHECK_ERR(parse(1, a3, &n, &pos), "--iters");
  const char *a4[] = {"--iters=99999999999999999999"};
  CHECK_ERR(parse(1, a4, &n, &pos), "expected an integer");
  const char *a5[] = {"--iters=12x"};
  CHECK_ERR(parse(1, a5, &n, &pos), "12x");
  const char *a6[] = {"--device"};
  CHECK_ERR(parse(1, a6, &n, &pos), "needs a value");
  const char *a7[] = {"--iters="};
  CHECK_ERR(parse(1, a7, &n, &pos), "integer");
  CHECK_ERR(flags_set("nope", "1"), "unknown flag --nope");
  flags_reset();
}

static void test_double_dash(void) {
  flags_reset();
  const char *argv[] = {"run", "--", "--json", "-"};
  int n;
  char **pos;
  CHECK_OK(parse(4, argv, &n, &pos));
  CHECK(n == 3);
  if (n == 3) CHECK(strcmp(pos[1], "--json") == 0 && strcmp(pos[2], "-") == 0);
  CHECK(!kiln_flags.json);
  free(pos);
  flags_reset();
}

static void test_env_then_args(void) {
  flags_reset();
  CHECK_OK(flags_parse_env("  --iters=5\t--json --dump_to='a dir' --device \"interpreter\" -i x=y.npy "));
  CHECK(kiln_flags.iters == 5);
  CHECK(kiln_flags.json);
  CHECK(strcmp(kiln_flags.dump_to, "a dir") == 0);
  CHECK(kiln_flags.input.n == 1);
  const char *argv[] = {"--iters=7", "-i", "z=w.npy"};
  int n;
  char **pos;
  CHECK_OK(parse(3, argv, &n, &pos));
  free(pos);
  CHECK(kiln_flags.iters == 7); /* the command line wins */
  CHECK(kiln_flags.input.n == 2);
  CHECK_OK(flags_parse_env(NULL));
  CHECK_OK(flags_parse_env(""));
  CHECK_ERR(flags_parse_env("--bogus"), "KILN_FLAGS");
  CHECK_ERR(flags_parse_env("--bogus"), "unknown flag --bogus");
  CHECK_ERR(flags_parse_env("run"), "not a flag");
  CHECK_ERR(flags_parse_env("--dump_to='oops"), "quote");
  CHECK_ERR(flags_parse_env("--iters=x"), "--iters");
  flags_reset();
}

static void test_value_strings(void) {
  flags_reset();
  for (int i = 0; i < flags_count(); i++) {
    const flag_info *f = flags_at(i);
    char *v = flags_value_string(i);
    if (f->type != FLAG_LIST) CHECK(strcmp(v, f->default_value) == 0);
    else CHECK(*v == 0);
    free(v);
  }
  flags_reset();
}

TEST_MAIN(TEST(test_defaults), TEST(test_table), TEST(test_args_all_forms), TEST(test_bools), TEST(test_errors),
          TEST(test_double_dash), TEST(test_env_then_args), TEST(test_value_strings))
