"""Side-by-side Conv and MatMul latency: onyx (`onyx bench`) against onnxruntime
on the same single-node models with constant weights, same thread count.

    python3 bench/conv_bench.py build-perf/onyx [threads]
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort


def conv_model(n, c, h, w, m, k, stride=1, pad=0, group=1):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((m, c // group, k, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(m).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[stride, stride], pads=[pad] * 4, group=group)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), {"x": (n, c, h, w)}


def matmul_model(m, k, n):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((k, n)).astype(np.float32) * 0.1
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weights, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), {"x": (m, k)}


CASES = [
    ("conv3x3 64->64 56x56", lambda: conv_model(1, 64, 56, 56, 64, 3, pad=1)),
    ("conv1x1 256->64 56x56", lambda: conv_model(1, 256, 56, 56, 64, 1)),
    ("conv3x3 s2 128->256 28x28", lambda: conv_model(1, 128, 28, 28, 256, 3, stride=2, pad=1)),
    ("conv7x7 s2 3->64 224x224", lambda: conv_model(1, 3, 224, 224, 64, 7, stride=2, pad=3)),
    ("depthwise3x3 144 56x56", lambda: conv_model(1, 144, 56, 56, 144, 3, pad=1, group=144)),
    ("matmul 128x768x3072", lambda: matmul_model(128, 768, 3072)),
]


def ort_ms(path, feeds, threads, runs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for _ in range(3):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def onyx_ms(onyx, path, threads, runs):
    out = subprocess.run([onyx, "bench", path, "-r", str(runs), "-t", str(threads), "--warmup", "3"],
                         capture_output=True, text=True, check=True).stdout
    match = re.search(r"latency p50\s+([0-9.]+)\s*ms", out)
    if match is None:
        raise RuntimeError("cannot read the median latency from onyx bench:\n" + out)
    return float(match.group(1))


def main():
    onyx = sys.argv[1] if len(sys.argv) > 1 else "build-perf/onyx"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    runs = 30
    print(f"threads {threads}; median of {runs} runs, ms")
    print(f"{'case':28s} {'onyx':>8s} {'ort':>8s} {'ort/onyx':>9s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in CASES:
            model, shapes = make()
            path = os.path.join(tmp, "model.onnx")
            onnx.save(model, path)
            feeds = {k: np.random.default_rng(1).standard_normal(s).astype(np.float32) for k, s in shapes.items()}
            a = onyx_ms(onyx, path, threads, runs)
            b = ort_ms(path, feeds, threads, runs)
            print(f"{name:28s} {a:8.3f} {b:8.3f} {b / a:9.2f}")


if __name__ == "__main__":
    main()
