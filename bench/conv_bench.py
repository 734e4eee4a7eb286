"""Side-by-side kernel latency: onyx against onnxruntime on single-node models
with constant weights (ResNet-50 and MobileNet conv layers, BERT MatMul/Gemm,
Softmax, element-wise activations), same thread count, in one process.

    python3 bench/conv_bench.py --onyx-path build/python [--threads 1,2] [--cases conv3x3,matmul]

Both engines run through their Python API, alternating in short series so that
both see the same machine load; each case reports the minimum (the figure that
least depends on other processes) and the median of all runs, in ms.
"""
import argparse
import sys
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, initializers, opset=17, domains=()):
    graph = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=imports).SerializeToString(), dict(inputs)


def conv_model(n, c, h, w, m, k, stride=1, pad=0, group=1, activation=None):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((m, c // group, k, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(m).astype(np.float32)
    out = "y" if activation is None else "t"
    nodes = [helper.make_node("Conv", ["x", "w", "b"], [out], strides=[stride, stride], pads=[pad] * 4, group=group)]
    if activation is not None:
        nodes.append(helper.make_node(activation, ["t"], ["y"]))
    return _model(nodes, [("x", (n, c, h, w))], [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])


def matmul_model(m, k, n, bias=False):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((k, n)).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(weights, "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "c"))
        nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"])]
    else:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    return _model(nodes, [("x", (m, k))], inits)


def unary_model(op, shape, **attrs):
    return _model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", shape)], [])


def contrib_model(op, shape):
    node = helper.make_node(op, ["x"], ["y"], domain="com.microsoft")
    return _model([node], [("x", shape)], [], domains=("com.microsoft",))


CASES = [
    # ResNet-50 (torchvision, stride in the 3x3) layer shapes, batch 1.
    ("conv7x7 s2 3->64 224", lambda: conv_model(1, 3, 224, 224, 64, 7, stride=2, pad=3)),
    ("conv3x3 64->64 56", lambda: conv_model(1, 64, 56, 56, 64, 3, pad=1)),
    ("conv3x3 s2 128->128 56", lambda: conv_model(1, 128, 56, 56, 128, 3, stride=2, pad=1)),
    ("conv3x3 128->128 28", lambda: conv_model(1, 128, 28, 28, 128, 3, pad=1)),
    ("conv3x3 s2 256->256 28", lambda: conv_model(1, 256, 28, 28, 256, 3, stride=2, pad=1)),
    ("conv3x3 256->256 14", lambda: conv_model(1, 256, 14, 14, 256, 3, pad=1)),
    ("conv3x3 512->512 7", lambda: conv_model(1, 512, 7, 7, 512, 3, pad=1)),
    ("conv1x1 64->256 56", lambda: conv_model(1, 64, 56, 56, 256, 1)),
    ("conv1x1 256->64 56", lambda: conv_model(1, 256, 56, 56, 64, 1)),
    ("conv1x1 s2 256->512 56", lambda: conv_model(1, 256, 56, 56, 512, 1, stride=2)),
    ("conv1x1 1024->256 14", lambda: conv_model(1, 1024, 14, 14, 256, 1)),
    ("conv3x3 64 56 +Relu", lambda: conv_model(1, 64, 56, 56, 64, 3, pad=1, activation="Relu")),
    ("depthwise3x3 144 56", lambda: conv_model(1, 144, 56, 56, 144, 3, pad=1, group=144)),
    # BERT-base shapes (128 tokens).
    ("matmul 128x768x3072", lambda: matmul_model(128, 768, 3072)),
    ("matmul 128x3072x768", lambda: matmul_model(128, 3072, 768)),
    ("gemm+bias 128x768x768", lambda: matmul_model(128, 768, 768, bias=True)),
    ("matmul 1x768x3072", lambda: matmul_model(1, 768, 3072)),
    ("softmax 12x128x128", lambda: unary_model("Softmax", (1, 12, 128, 128), axis=-1)),
    ("gelu 128x3072", lambda: contrib_model("Gelu", (128, 3072))),
    ("erf 128x3072", lambda: unary_model("Erf", (128, 3072))),
    ("tanh 128x3072", lambda: unary_model("Tanh", (128, 3072))),
    ("sigmoid 128x3072", lambda: unary_model("Sigmoid", (128, 3072))),
    ("exp 128x3072", lambda: unary_model("Exp", (128, 3072))),
]


def series(session, feeds, count):
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return times


def measure(model, shapes, threads, onyx, ort, seconds):
    feeds = {k: np.random.default_rng(1).standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    sessions = []
    for engine in (onyx, ort):
        options = engine.SessionOptions()
        options.intra_op_num_threads = threads
        if engine is ort:
            options.inter_op_num_threads = 1
        sessions.append(engine.InferenceSession(model, options, providers=["CPUExecutionProvider"]))
    a = sessions[0].run(None, feeds)[0]
    b = sessions[1].run(None, feeds)[0]
    diff = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
    # A series of about 20 ms per engine, alternating, until `seconds` pass.
    t0 = time.perf_counter()
    one = series(sessions[0], feeds, 3) + series(sessions[1], feeds, 3)
    per_run = max(min(one), 1e-6)
    count = int(min(max(0.02 / per_run, 1), 200))
    results = [[], []]
    while time.perf_counter() - t0 < seconds or len(results[0]) < 10:
        for i in (0, 1):
            results[i] += series(sessions[i], feeds, count)
    return [(min(r) * 1e3, float(np.median(r)) * 1e3) for r in results], diff


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
    print(f"{'case':26s} {'thr':>3s} {'onyx min':>9s} {'ort min':>8s} {'ort/onyx':>8s}   {'onyx p50':>8s} {'ort p50':>8s} {'maxdiff':>8s}")
    for name, make in CASES:
        if wanted and not any(w in name for w in wanted):
            continue
        model, shapes = make()
        for threads in [int(t) for t in args.threads.split(",")]:
            ((a_min, a_med), (b_min, b_med)), diff = measure(model, shapes, threads, onyx, ort, args.seconds)
            print(f"{name:26s} {threads:3d} {a_min:9.3f} {b_min:8.3f} {b_min / a_min:8.2f}   {a_med:8.3f} {b_med:8.3f}"
                  f" {diff:8.1e}", flush=True)


if __name__ == "__main__":
    main()
