/* (being written) ONNX attention ops. */
#include "ops/ops.h"

const op_table onnx_attention_ops = {"onnx.attention", 0, NULL};
