/* (being written) ONNX ai.onnx.ml ops. */
#include "ops/ops.h"

const op_table onnx_ml_ops = {"ai.onnx.ml", 0, NULL};
