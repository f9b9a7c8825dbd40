/* ONNX op versions (src/ops/ops_onnx_versions.c): the since-version an opset selects is
 * checked against facts of ONNX's changelog written here by hand (Conv: 1, 11, 22;
 * Relu: 1, 6, 13, 14; Tile: 1, 6, 13; Attention first defined at 23), a node whose op
 * version kiln lacks is refused by name, version and opset, other domains pass, and
 * every ONNX op kiln registers has a version range made of real since-versions. */
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "import/onnx/onnx_import.h"
#include "ops/ops.h"

static void test_since_version_is_the_greatest_at_or_below_the_opset(void) {
  CHECK(op_onnx_since_version("Conv", 1) == 1);
  CHECK(op_onnx_since_version("Conv", 10) == 1);
  CHECK(op_onnx_since_version("Conv", 11) == 11);
  CHECK(op_onnx_since_version("Conv", 21) == 11);
  CHECK(op_onnx_since_version("Conv", 22) == 22);
  CHECK(op_onnx_since_version("Relu", 5) == 1);
  CHECK(op_onnx_since_version("Relu", 6) == 6);
  CHECK(op_onnx_since_version("Relu", 28) == 14);
  CHECK(op_onnx_since_version("Attention", 22) == 0);
  CHECK(op_onnx_since_version("Attention", 23) == 23);
  CHECK(op_onnx_since_version("NoSuchOp", 13) == 0);
}

static graph_node *node_at(graph *g, int64_t opset, const char *op) {
  g->opset = opset;
  graph_node *n = NULL;
  kiln_status s = graph_add_node(g, "t", op, &n);
  CHECK(s == NULL);
  kiln_status_free(s);
  return n;
}

static void test_version_check_refuses_a_version_kiln_lacks_by_name(void) {
  graph *g = graph_new("onnx");
  graph_node *n = node_at(g, 5, "onnx.Tile"); /* Tile-1: tiles and axis inputs */
  CHECK_ERR(op_check_onnx_version(n), "node t (onnx.Tile): Tile-1 (the version ONNX opset 5 selects) is not "
                                      "implemented; kiln implements Tile-6 to Tile-13");
  g->opset = 13;
  CHECK(op_check_onnx_version(n) == NULL);
  graph_free(g);
}

static void test_version_check_names_an_op_the_opset_does_not_have(void) {
  graph *g = graph_new("onnx");
  graph_node *n = node_at(g, 9, "onnx.Resize"); /* Resize first appears at opset 10 */
  CHECK_ERR(op_check_onnx_version(n), "Resize is not an op of ONNX opset 9 (its first version is 10)");
  graph_free(g);
}

static void test_version_check_passes_other_domains_and_frameworks(void) {
  graph *g = graph_new("onnx");
  CHECK(op_check_onnx_version(node_at(g, 5, "com.microsoft.QLinearAdd")) == NULL);
  graph_free(g);
  g = graph_new("tf");
  CHECK(op_check_onnx_version(node_at(g, 0, "tf.Tile")) == NULL);
  graph_free(g);
}

static void test_every_onnx_op_has_a_range_of_real_since_versions(void) {
  int seen = 0;
  for (int i = 0; i < op_count(); i++) {
    const op_def *d = op_at(i);
    if (strncmp(d->name, "onnx.", 5) != 0) continue;
    const char *t = d->name + 5;
    int lo = 0, hi = 0;
    bool have = op_onnx_version_range(t, &lo, &hi);
    if (!have) check_fail(__FILE__, __LINE__, "registered ONNX op without a version range", d->name);
    if (!have) continue;
    seen++;
    if (lo > hi || op_onnx_since_version(t, lo) != lo || op_onnx_since_version(t, hi) != hi)
      check_fail(__FILE__, __LINE__, "version range bounds are since-versions of the op", d->name);
  }
  CHECK(seen > 100);
}

static void test_importer_and_op_library_agree_on_the_newest_opset(void) {
  CHECK(ONNX_IMPORT_MAX_OPSET == op_onnx_max_opset());
}

TEST_MAIN(TEST(test_since_version_is_the_greatest_at_or_below_the_opset),
          TEST(test_version_check_refuses_a_version_kiln_lacks_by_name),
          TEST(test_version_check_names_an_op_the_opset_does_not_have),
          TEST(test_version_check_passes_other_domains_and_frameworks),
          TEST(test_every_onnx_op_has_a_range_of_real_since_versions),
          TEST(test_importer_and_op_library_agree_on_the_newest_opset))
