/* (being written) ONNX loss ops. */
#include "ops/ops.h"

const op_table onnx_loss_ops = {"onnx.loss", 0, NULL};
