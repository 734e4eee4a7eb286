"""A QDQ-quantized ResNet-style stack (onnxruntime.quantization.quantize_static,
QDQ, uint8 activations, int8 weights) run by onyx with the QDQ fusions off
and on, and by onnxruntime (ORT_ENABLE_ALL), on the same file and thread
count; also the float model in onyx for reference.

    python3 bench/qdq_bench.py --onyx-path build/python [--threads 1] [--blocks 4] [--seconds 2]

Engines alternate in short series so that all see the same machine load;
each line reports the minimum and the median of all runs, in ms.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def resnet_stack(blocks, channels=32, size=28):
    """stem conv -> `blocks` x (conv3x3 relu conv3x3 + residual, relu) -> GAP -> Gemm."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def conv(name, x, cin, cout, k, relu):
        inits.append(numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * (1.5 / np.sqrt(cin * k * k)))
                                             .astype(np.float32), name + "_w"))
        inits.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), name + "_b"))
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], pads=[k // 2] * 4))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [name + "_r"]))
        return name + "_r"

    h = conv("stem", "x", 3, channels, 3, True)
    for i in range(blocks):
        a = conv(f"b{i}a", h, channels, channels, 3, True)
        b = conv(f"b{i}b", a, channels, channels, 3, False)
        nodes.append(helper.make_node("Add", [b, h], [f"b{i}s"]))
        nodes.append(helper.make_node("Relu", [f"b{i}s"], [f"b{i}o"]))
        h = f"b{i}o"
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    inits.append(numpy_helper.from_array((rng.standard_normal((10, channels)) * 0.2).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1))
    graph = helper.make_graph(nodes, "resnet_stack",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onyx-path", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    if args.onyx_path:
        sys.path.insert(0, args.onyx_path)
    import onnxruntime as ort
    from onnxruntime import quantization
    import onyx

    tmp = tempfile.mkdtemp()
    float_path, qdq_path = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "qdq.onnx")
    onnx.save(resnet_stack(args.blocks), float_path)
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((1, 3, 28, 28)).astype(np.float32)} for _ in range(8)]

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    quantization.quantize_static(float_path, qdq_path, Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 reduce_range=True, activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)

    def onyx_session(path, fusions=True):
        options = onyx.SessionOptions()
        options.intra_op_num_threads = args.threads
        if not fusions:
            options.add_session_config_entry("session.disable_quant_qdq", "1")
        return onyx.InferenceSession(path, options)

    ort_options = ort.SessionOptions()
    ort_options.intra_op_num_threads = args.threads
    ort_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    engines = {
        "onyx float model": onyx_session(float_path),
        "onyx QDQ, fusions off": onyx_session(qdq_path, fusions=False),
        "onyx QDQ, fusions on": onyx_session(qdq_path),
        "onnxruntime QDQ (ORT_ENABLE_ALL)": ort.InferenceSession(qdq_path, ort_options,
                                                                 providers=["CPUExecutionProvider"]),
    }
    x = feeds[0]
    times = {name: [] for name in engines}
    for session in engines.values():
        session.run(None, x)
    deadline = time.perf_counter() + args.seconds * len(engines)
    while time.perf_counter() < deadline:
        for name, session in engines.items():
            for _ in range(3):
                start = time.perf_counter()
                session.run(None, x)
                times[name].append((time.perf_counter() - start) * 1e3)
    print(f"ResNet-style stack, {args.blocks} blocks, 32 channels, 28x28, {args.threads} thread(s)")
    for name, t in times.items():
        print(f"  {name:36s} min {min(t):8.3f} ms   median {np.median(t):8.3f} ms   ({len(t)} runs)")


if __name__ == "__main__":
    main()
