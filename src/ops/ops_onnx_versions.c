/* ONNX operator versions: which version of an op a node uses, and whether kiln has it.
 *
 * ONNX versions each default-domain op by "since-version": the opset at which a
 * definition of the op took effect. A model importing opset V uses, for op X, X's
 * greatest since-version <= V. The facts (every op's since-versions and deprecation,
 * up to the newest opset of the pinned onnx release) are generated into
 * onnx_schema.inc by scripts/gen_onnx_schema.py. What kiln implements is kept here, one
 * row per op kiln runs: the range of since-versions its lowering or kernel follows
 * (older versions' attributes -- legacy broadcast, string Cast targets, attribute
 * operands -- are read by the op code under the same opset tests). A node whose
 * version falls outside its op's range is refused by name, version and opset, never by
 * refusing the whole model's opset; ops kiln does not run at all are not listed and are
 * refused by the executor as unknown ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define VERSIONS_CAP 16

typedef struct schema_op {
  const char *name;
  int deprecated; /* opset at which ONNX deprecated the op (0: never) */
  int versions[VERSIONS_CAP];
} schema_op;

static const schema_op schema_ops[] = {
#define ONNX_SCHEMA_OP(name, deprecated, ...) {name, deprecated, {__VA_ARGS__}},
#include "ops/onnx_schema.inc"
#undef ONNX_SCHEMA_OP
};
_Static_assert(ONNX_SCHEMA_MAX_VERSIONS <= VERSIONS_CAP, "onnx_schema.inc lists more versions than VERSIONS_CAP");

/* The since-versions kiln follows, per op: every version v with lo <= v <= hi. Ranges
 * end at the newest version where later ones only added element types kiln either has
 * or refuses by type (bfloat16, float8, int4, ...); see the closing note of the change
 * that raised one for what was checked. */
typedef struct kiln_range {
  const char *name;
  int lo, hi;
} kiln_range;

static const kiln_range kiln_ranges[] = {
    {"Abs", 1, 13},
    {"Acos", 7, 22},
    {"Acosh", 9, 22},
    {"Add", 1, 14},
    {"AffineGrid", 20, 20},
    {"And", 1, 7},
    {"ArgMax", 1, 13},
    {"ArgMin", 1, 13},
    {"Asin", 7, 22},
    {"Asinh", 9, 22},
    {"Atan", 7, 22},
    {"Atanh", 9, 22},
    {"Attention", 23, 25},
    {"AveragePool", 1, 22},
    {"BatchNormalization", 1, 15},
    {"Bernoulli", 15, 22},
    {"BitCast", 26, 26},
    {"BitShift", 11, 28},
    {"BitwiseAnd", 18, 18},
    {"BitwiseNot", 18, 18},
    {"BitwiseOr", 18, 18},
    {"BitwiseXor", 18, 18},
    {"BlackmanWindow", 17, 17},
    {"Cast", 1, 28},
    {"CastLike", 15, 25},
    {"CausalConvWithState", 27, 27},
    {"Ceil", 1, 13},
    {"Celu", 12, 28},
    {"CenterCropPad", 18, 18},
    {"Clip", 1, 13},
    {"Col2Im", 18, 18},
    {"Compress", 9, 28},
    {"Concat", 1, 13},
    {"ConcatFromSequence", 11, 11},
    {"Constant", 1, 25},
    {"ConstantOfShape", 9, 25},
    {"Conv", 1, 22},
    {"ConvInteger", 10, 10},
    {"ConvTranspose", 1, 22},
    {"Cos", 7, 22},
    {"Cosh", 9, 22},
    {"CumProd", 26, 26},
    {"CumSum", 11, 14},
    {"DFT", 17, 20},
    {"DeformConv", 19, 22},
    {"DepthToSpace", 1, 28},
    {"DequantizeLinear", 10, 28},
    {"Det", 11, 22},
    {"Div", 1, 14},
    {"Dropout", 1, 22},
    {"DynamicQuantizeLinear", 11, 11},
    {"Einsum", 12, 28},
    {"Elu", 1, 22},
    {"Equal", 1, 19},
    {"Erf", 9, 13},
    {"Exp", 1, 13},
    {"Expand", 8, 13},
    {"EyeLike", 9, 22},
    {"Flatten", 1, 25},
    {"Floor", 1, 13},
    {"GRU", 1, 22},
    {"Gather", 1, 13},
    {"GatherElements", 11, 13},
    {"GatherND", 11, 13},
    {"Gelu", 20, 20},
    {"Gemm", 1, 13},
    {"GlobalAveragePool", 1, 22},
    {"GlobalLpPool", 2, 22},
    {"GlobalMaxPool", 1, 22},
    {"Greater", 1, 13},
    {"GreaterOrEqual", 12, 16},
    {"GridSample", 16, 22},
    {"GroupNormalization", 18, 21},
    {"HammingWindow", 17, 17},
    {"HannWindow", 17, 17},
    {"HardSigmoid", 1, 22},
    {"HardSwish", 14, 22},
    {"Hardmax", 1, 13},
    {"Identity", 1, 25},
    {"If", 1, 25},
    {"InstanceNormalization", 1, 22},
    {"IsInf", 10, 20},
    {"IsNaN", 9, 20},
    {"LRN", 1, 13},
    {"LSTM", 1, 22},
    {"LayerNormalization", 17, 17},
    {"LeakyRelu", 1, 16},
    {"Less", 1, 13},
    {"LessOrEqual", 12, 16},
    {"LinearAttention", 27, 27},
    {"Log", 1, 13},
    {"LogSoftmax", 1, 13},
    {"Loop", 1, 25},
    {"LpNormalization", 1, 22},
    {"LpPool", 2, 22},
    {"MatMul", 1, 13},
    {"MatMulInteger", 10, 10},
    {"Max", 1, 13},
    {"MaxPool", 1, 22},
    {"MaxUnpool", 9, 22},
    {"Mean", 1, 13},
    {"MeanVarianceNormalization", 9, 13},
    {"MelWeightMatrix", 17, 17},
    {"Min", 1, 13},
    {"Mish", 18, 22},
    {"Mod", 10, 28},
    {"Mul", 1, 14},
    {"Multinomial", 7, 22},
    {"Neg", 1, 13},
    {"NegativeLogLikelihoodLoss", 12, 22},
    {"NonMaxSuppression", 10, 11},
    {"NonZero", 9, 13},
    {"Not", 1, 1},
    {"OneHot", 9, 28},
    {"Optional", 15, 28},
    {"OptionalGetElement", 15, 28},
    {"OptionalHasElement", 15, 28},
    {"Or", 1, 7},
    {"PRelu", 1, 16},
    {"Pad", 2, 25},
    {"Pow", 1, 15},
    {"QLinearConv", 10, 10},
    {"QLinearMatMul", 10, 21},
    {"QuantizeLinear", 10, 28},
    {"RMSNormalization", 23, 23},
    {"RNN", 1, 22},
    {"RandomNormal", 1, 22},
    {"RandomNormalLike", 1, 22},
    {"RandomUniform", 1, 22},
    {"RandomUniformLike", 1, 22},
    {"Range", 11, 27},
    {"Reciprocal", 1, 13},
    {"ReduceL1", 1, 18},
    {"ReduceL2", 1, 18},
    {"ReduceLogSum", 1, 28},
    {"ReduceLogSumExp", 1, 28},
    {"ReduceMax", 1, 20},
    {"ReduceMean", 1, 18},
    {"ReduceMin", 1, 20},
    {"ReduceProd", 1, 18},
    {"ReduceSum", 1, 13},
    {"ReduceSumSquare", 1, 18},
    {"RegexFullMatch", 20, 20},
    {"Relu", 1, 14},
    {"Reshape", 1, 25},
    {"Resize", 10, 19},
    {"ReverseSequence", 10, 28},
    {"RoiAlign", 10, 22},
    {"RotaryEmbedding", 23, 23},
    {"Round", 11, 22},
    {"STFT", 17, 17},
    {"Scan", 8, 25},
    {"Scatter", 9, 11},
    {"ScatterElements", 11, 18},
    {"ScatterND", 11, 18},
    {"Selu", 1, 22},
    {"SequenceAt", 11, 11},
    {"SequenceConstruct", 11, 11},
    {"SequenceEmpty", 11, 11},
    {"SequenceErase", 11, 11},
    {"SequenceInsert", 11, 11},
    {"SequenceLength", 11, 11},
    {"SequenceMap", 17, 17},
    {"Shape", 1, 25},
    {"Shrink", 9, 9},
    {"Sigmoid", 1, 13},
    {"Sign", 9, 13},
    {"Sin", 7, 22},
    {"Sinh", 9, 22},
    {"Size", 1, 25},
    {"Slice", 1, 13},
    {"Softmax", 1, 13},
    {"SoftmaxCrossEntropyLoss", 12, 13},
    {"Softplus", 1, 22},
    {"Softsign", 1, 22},
    {"SpaceToDepth", 1, 28},
    {"Split", 2, 18},
    {"SplitToSequence", 11, 24},
    {"Sqrt", 1, 13},
    {"Squeeze", 1, 25},
    {"StringConcat", 20, 20},
    {"StringNormalizer", 10, 10},
    {"StringSplit", 20, 20},
    {"Sub", 1, 14},
    {"Sum", 1, 13},
    {"SwiGLU", 28, 28},
    {"Swish", 24, 24},
    {"Tan", 7, 22},
    {"Tanh", 1, 13},
    {"TensorScatter", 24, 24},
    {"TfIdfVectorizer", 9, 9},
    {"ThresholdedRelu", 10, 22},
    {"Tile", 6, 13},
    {"TopK", 1, 24},
    {"Transpose", 1, 25},
    {"Trilu", 14, 14},
    {"Unique", 11, 28},
    {"Unsqueeze", 1, 25},
    {"Upsample", 7, 10},
    {"Where", 9, 16},
    {"Xor", 1, 7},
};

static const schema_op *find_schema(const char *op_type) {
  size_t lo = 0, hi = sizeof schema_ops / sizeof schema_ops[0];
  while (lo < hi) { /* the generator sorts by name */
    size_t mid = (lo + hi) / 2;
    int c = strcmp(schema_ops[mid].name, op_type);
    if (c == 0) return &schema_ops[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static const kiln_range *find_range(const char *op_type) {
  for (size_t i = 0; i < sizeof kiln_ranges / sizeof kiln_ranges[0]; i++)
    if (strcmp(kiln_ranges[i].name, op_type) == 0) return &kiln_ranges[i];
  return NULL;
}

int op_onnx_max_opset(void) { return ONNX_SCHEMA_MAX_OPSET; }

int op_onnx_since_version(const char *op_type, int64_t opset) {
  const schema_op *s = find_schema(op_type);
  if (!s) return 0;
  int best = 0;
  for (int i = 0; i < VERSIONS_CAP && s->versions[i]; i++)
    if (s->versions[i] <= opset) best = s->versions[i];
  return best;
}

bool op_onnx_version_range(const char *op_type, int *lo, int *hi) {
  const kiln_range *r = find_range(op_type);
  if (!r) return false;
  *lo = r->lo;
  *hi = r->hi;
  return true;
}

kiln_status op_check_onnx_version(const graph_node *node) {
  if (strncmp(node->op, "onnx.", 5) != 0 || !node->graph || !node->graph->root) return NULL;
  int64_t opset = node->graph->root->opset;
  if (opset <= 0) return NULL; /* a graph built by hand, not imported: no versions to check */
  const char *op_type = node->op + 5;
  const kiln_range *r = find_range(op_type);
  if (!r) return NULL; /* not an op kiln runs at all: the caller's unknown-op path says so */
  int v = op_onnx_since_version(op_type, opset);
  if (v == 0)
    return op_error(node, KILN_INVALID_ARGUMENT, "%s is not an op of ONNX opset %lld (its first version is %d)",
                    op_type, (long long)opset, find_schema(op_type) ? find_schema(op_type)->versions[0] : 0);
  if (v < r->lo || v > r->hi)
    return op_error(node, KILN_UNIMPLEMENTED,
                    "%s-%d (the version ONNX opset %lld selects) is not implemented; kiln implements %s-%d to %s-%d",
                    op_type, v, (long long)opset, op_type, r->lo, op_type, r->hi);
  return NULL;
}
