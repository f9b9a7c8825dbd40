"""Writes the per-call overhead model: one ONNX Add of two float32 vectors of 16
elements (inputs a, b; output c), opset 13, built with onnx.helper. Run with Debian's
/usr/bin/python3 (python3-onnx):

    /usr/bin/python3 bench/overhead/make_model.py OUT.onnx
"""

import sys

import onnx
from onnx import TensorProto, helper

N = 16


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: make_model.py OUT.onnx')
    vec = [N]
    graph = helper.make_graph(
        [helper.make_node('Add', ['a', 'b'], ['c'], name='add')],
        'add16',
        [helper.make_tensor_value_info('a', TensorProto.FLOAT, vec),
         helper.make_tensor_value_info('b', TensorProto.FLOAT, vec)],
        [helper.make_tensor_value_info('c', TensorProto.FLOAT, vec)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)],
                              producer_name='kiln bench/overhead')
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == '__main__':
    main()
