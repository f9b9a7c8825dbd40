/* (being written) ONNX quant ops. */
#include "ops/ops.h"

const op_table onnx_quant_ops = {"onnx.quant", 0, NULL};
