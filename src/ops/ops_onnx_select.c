/* (being written) ONNX data-dependent selection ops. */
#include "ops/ops.h"

const op_table onnx_select_ops = {"onnx.select", 0, NULL};
