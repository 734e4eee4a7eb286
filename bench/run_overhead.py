"""Per-run cost of tiny models through the Python API: onyx against onnxruntime.

    python3 bench/run_overhead.py --onyx-path build/python [--threads 1] [--runs 20000]

A model of a few small nodes takes microseconds to compute, so its time per
`session.run` is what the runtime adds around the kernels: converting feeds,
checking them, planning, binding outputs. Each model is run by both
runtimes in one process, in alternating series so both see the same machine
load; the table shows the fastest series' microseconds per run.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def add_model() -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16]) for n in ("X", "Y")]
    out = helper.make_tensor_value_info("Z", TensorProto.FLOAT, [1, 16])
    graph = helper.make_graph([helper.make_node("Add", ["X", "Y"], ["Z"])], "add", inputs, [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def chain_model(nodes: int = 10) -> onnx.ModelProto:
    """`nodes` element-wise ops on a [1, 64] tensor, alternating kinds so no
    optimizer pass folds them into one."""
    kinds = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh"]
    made = []
    prev = "X"
    for i in range(nodes):
        name = f"t{i}" if i + 1 < nodes else "Y"
        made.append(helper.make_node(kinds[i % len(kinds)], [prev], [name]))
        prev = name
    graph = helper.make_graph(
        made,
        "chain",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 64])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def per_run_us(session, feed: dict, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        session.run(None, feed)
    return (time.perf_counter() - start) / runs * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onyx-path", default="build/python", help="folder holding the onyx package (default build/python)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for both runtimes (default 1)")
    parser.add_argument("--runs", type=int, default=20000, help="runs per series (default 20000)")
    parser.add_argument("--series", type=int, default=7, help="alternating series per runtime (default 7)")
    args = parser.parse_args()
    sys.path.insert(0, args.onyx_path)
    import onnxruntime

    import onyx

    models = {
        "Add [1,16] + [1,16]": (add_model(), {"X": np.ones((1, 16), np.float32), "Y": np.ones((1, 16), np.float32)}),
        "10 element-wise nodes on [1,64]": (chain_model(), {"X": np.ones((1, 64), np.float32)}),
    }
    print(f"| model | onyx (us/run) | onnxruntime (us/run) | onyx / onnxruntime |  ({args.threads} thread(s))")
    print("|---|---:|---:|---:|")
    for title, (model, feed) in models.items():
        sessions = []
        for runtime in (onyx, onnxruntime):
            options = runtime.SessionOptions()
            options.intra_op_num_threads = args.threads
            sessions.append(runtime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]))
        for s in sessions:
            per_run_us(s, feed, max(1, args.runs // 10))  # warm up
        best = [float("inf"), float("inf")]
        for _ in range(args.series):
            for i, s in enumerate(sessions):
                best[i] = min(best[i], per_run_us(s, feed, args.runs))
        print(f"| {title} | {best[0]:.2f} | {best[1]:.2f} | {best[0] / best[1]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
