"""int8 kernels against onnxruntime's and against onyx's own fp32: one-node
models (QLinearMatMul and MatMulInteger at BERT-base shapes, QLinearConv at
ResNet-50 shapes; uint8 activations, int8 constant weights), the same shape as
an fp32 MatMul / Conv in onyx, same intra_op_num_threads, in one process.

    python3 bench/qgemm_bench.py --onyx-path build/python [--threads 1,2] [--cases conv,matmul] [--seconds 1]

The engines run alternating in short series, so that they see the same
machine load; each reports the median of its runs in ms. onnxruntime's
threads spin for a while after its runs (onyx's for 50 us), which can cost
the engine that runs next some time at 2 threads. int8/fp32 is onyx's
fp32 time over its int8 time (above 1: int8 is faster), ort/onyx
onnxruntime's int8 time over onyx's.
"""
import argparse
import os
import sys
import time

# numpy's OpenBLAS threads would spin beside the engines' own.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, initializers, output_type):
    graph = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info("y", output_type, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), {n: (t, s) for n, t, s in inputs}


def scalar(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def qlinear_matmul(m, k, n):
    w = np.random.default_rng(0).integers(-127, 128, (k, n), dtype=np.int8)
    inits = [numpy_helper.from_array(w, "w"), scalar("as", 0.02, np.float32), scalar("az", 128, np.uint8),
             scalar("ws", 0.01, np.float32), scalar("wz", 0, np.int8), scalar("ys", 0.5, np.float32),
             scalar("yz", 128, np.uint8)]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"], ["y"])
    return _model([node], [("a", TensorProto.UINT8, (m, k))], inits, TensorProto.UINT8)


def matmul_integer(m, k, n):
    w = np.random.default_rng(0).integers(-127, 128, (k, n), dtype=np.int8)
    inits = [numpy_helper.from_array(w, "w"), scalar("az", 128, np.uint8), scalar("wz", 0, np.int8)]
    node = helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["y"])
    return _model([node], [("a", TensorProto.UINT8, (m, k))], inits, TensorProto.INT32)


def fp32_matmul(m, k, n):
    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    node = helper.make_node("MatMul", ["a", "w"], ["y"])
    return _model([node], [("a", TensorProto.FLOAT, (m, k))], [numpy_helper.from_array(w, "w")], TensorProto.FLOAT)


def qlinear_conv(c, h, m, kernel, stride=1):
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (m, c, kernel, kernel), dtype=np.int8)
    inits = [numpy_helper.from_array(w, "w"), scalar("xs", 0.02, np.float32), scalar("xz", 128, np.uint8),
             numpy_helper.from_array(rng.uniform(0.001, 0.01, m).astype(np.float32), "ws"),
             numpy_helper.from_array(np.zeros(m, np.int8), "wz"), scalar("ys", 0.5, np.float32),
             scalar("yz", 128, np.uint8), numpy_helper.from_array(rng.integers(-1000, 1000, m, dtype=np.int32), "b")]
    pad = kernel // 2
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[pad] * 4, strides=[stride, stride])
    return _model([node], [("x", TensorProto.UINT8, (1, c, h, h))], inits, TensorProto.UINT8)


def fp32_conv(c, h, m, kernel, stride=1):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((m, c, kernel, kernel)).astype(np.float32) * 0.1, "w"),
             numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b")]
    pad = kernel // 2
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[pad] * 4, strides=[stride, stride])
    return _model([node], [("x", TensorProto.FLOAT, (1, c, h, h))], inits, TensorProto.FLOAT)


# name, int8 model, fp32 model of the same shape
CASES = [
    ("QLinearMatMul 128x768x768", lambda: qlinear_matmul(128, 768, 768), lambda: fp32_matmul(128, 768, 768)),
    ("QLinearMatMul 128x768x3072", lambda: qlinear_matmul(128, 768, 3072), lambda: fp32_matmul(128, 768, 3072)),
    ("QLinearMatMul 128x3072x768", lambda: qlinear_matmul(128, 3072, 768), lambda: fp32_matmul(128, 3072, 768)),
    ("MatMulInteger 128x768x768", lambda: matmul_integer(128, 768, 768), lambda: fp32_matmul(128, 768, 768)),
    ("MatMulInteger 128x768x3072", lambda: matmul_integer(128, 768, 3072), lambda: fp32_matmul(128, 768, 3072)),
    ("MatMulInteger 128x3072x768", lambda: matmul_integer(128, 3072, 768), lambda: fp32_matmul(128, 3072, 768)),
    ("QLinearConv 1x1 64->64 56", lambda: qlinear_conv(64, 56, 64, 1), lambda: fp32_conv(64, 56, 64, 1)),
    ("QLinearConv 3x3 64->64 56", lambda: qlinear_conv(64, 56, 64, 3), lambda: fp32_conv(64, 56, 64, 3)),
    ("QLinearConv 1x1 64->256 56", lambda: qlinear_conv(64, 56, 256, 1), lambda: fp32_conv(64, 56, 256, 1)),
    ("QLinearConv 3x3 256->256 14", lambda: qlinear_conv(256, 14, 256, 3), lambda: fp32_conv(256, 14, 256, 3)),
]


def feeds_for(shapes):
    rng = np.random.default_rng(1)
    out = {}
    for name, (t, shape) in shapes.items():
        if t == TensorProto.UINT8:
            out[name] = rng.integers(0, 256, shape, dtype=np.uint8)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32)
    return out


def session(engine, model, threads):
    options = engine.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return engine.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def series(s, feeds, count):
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        s.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return times


def measure(runs, seconds):
    """runs: [(session, feeds)]; alternating series of ~20 ms each; medians in ms."""
    one = [min(series(s, f, 3)) for s, f in runs]
    counts = [int(min(max(0.02 / max(t, 1e-6), 1), 200)) for t in one]
    results = [[] for _ in runs]
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds or len(results[0]) < 10:
        for i, (s, f) in enumerate(runs):
            results[i] += series(s, f, counts[i])
    return [float(np.median(r)) * 1e3 for r in results]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onyx-path", default="build/python", help="folder holding the onyx Python package")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--cases", default="", help="comma-separated substrings of case names")
    parser.add_argument("--seconds", type=float, default=1.0, help="measuring time per case and thread count")
    args = parser.parse_args()
    sys.path.insert(0, args.onyx_path)
    import onnxruntime as ort
    import onyx

    wanted = [w for w in args.cases.split(",") if w]
    print(f"| case | threads | onyx int8 ms | ort int8 ms | onyx fp32 ms | ort/onyx | int8/fp32 speed-up | max diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, make_int8, make_fp32 in CASES:
        if wanted and not any(w in name for w in wanted):
            continue
        (int8_model, int8_shapes), (fp32_model, fp32_shapes) = make_int8(), make_fp32()
        int8_feeds, fp32_feeds = feeds_for(int8_shapes), feeds_for(fp32_shapes)
        for threads in [int(t) for t in args.threads.split(",")]:
            a, b = session(onyx, int8_model, threads), session(ort, int8_model, threads)
            f = session(onyx, fp32_model, threads)
            ya, yb = a.run(None, int8_feeds)[0], b.run(None, int8_feeds)[0]
            diff = int(np.max(np.abs(ya.astype(np.int64) - yb.astype(np.int64))))
            onyx_int8, ort_int8, onyx_fp32 = measure([(a, int8_feeds), (b, int8_feeds), (f, fp32_feeds)], args.seconds)
            print(f"| {name} | {threads} | {onyx_int8:.3f} | {ort_int8:.3f} | {onyx_fp32:.3f} | {ort_int8 / onyx_int8:.2f}"
                  f" | {onyx_fp32 / onyx_int8:.2f} | {diff} |", flush=True)


if __name__ == "__main__":
    main()
