"""Writes models/tiny_cnn.onnx: the small image classifier that ships with onyx
for the README's first command. Weights are seeded random numbers, so the
file is reproducible: python tools/make_example_model.py models/tiny_cnn.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(path: str) -> None:
    rng = np.random.default_rng(2026)

    def weight(name, *shape):
        scale = 1.0 / np.sqrt(np.prod(shape[1:]) if len(shape) > 1 else shape[0])
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    initializers = [
        weight("conv1.w", 8, 3, 3, 3), weight("conv1.b", 8),
        weight("conv2.w", 16, 8, 3, 3), weight("conv2.b", 16),
        weight("fc.w", 16, 10), weight("fc.b", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc.w"], ["logits0"], name="fc"),
        helper.make_node("Add", ["logits0", "fc.b"], ["logits"], name="fc_bias"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onyx")
    model.ir_version = 8
    model.doc_string = "A tiny seeded-random CNN made by onyx's tools/make_example_model.py"
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "models/tiny_cnn.onnx")
