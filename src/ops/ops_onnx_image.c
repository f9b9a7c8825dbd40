/* (being written) ONNX image ops. */
#include "ops/ops.h"

const op_table onnx_image_ops = {"onnx.image", 0, NULL};
