"""Latency of the memory options, each on and off, in one process.

Two sessions of the same model differ only in one SessionOptions flag
(enable_cpu_mem_arena or enable_mem_pattern); they take turns (10 turns of N
runs each, after warm-up runs), and the median of the turn means is printed
with the on/off ratio.

    PYTHONPATH=build/python python3 bench/memory_options.py [MODEL.onnx ...]

Without arguments it uses ../shared/models/squeezenet_tensor_input.onnx,
../shared/models/mnist.onnx and models/tiny_cnn.onnx (symbolic dims as 1).
"""

import os
import sys
import time

import numpy as np

import onyx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = [
    os.path.join(ROOT, "..", "shared", "models", "squeezenet_tensor_input.onnx"),
    os.path.join(ROOT, "..", "shared", "models", "mnist.onnx"),
    os.path.join(ROOT, "models", "tiny_cnn.onnx"),
]


def session(path, flag, value, threads=1):
    options = onyx.SessionOptions()
    options.intra_op_num_threads = threads
    setattr(options, flag, value)
    return onyx.InferenceSession(path, options)


def feeds_for(s):
    rng = np.random.default_rng(0)
    return {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape], dtype=np.float32)
            for i in s.get_inputs()}


def runs_per_turn(s, feeds):
    start = time.perf_counter()
    s.run(None, feeds)
    once = time.perf_counter() - start
    return max(5, min(2000, int(0.05 / max(once, 1e-6))))


def main(models):
    for path in models:
        if not os.path.exists(path):
            print(f"{path}: not found, skipped")
            continue
        for flag in ("enable_cpu_mem_arena", "enable_mem_pattern"):
            sessions = {v: session(path, flag, v) for v in (False, True)}
            feeds = feeds_for(sessions[False])
            n = runs_per_turn(sessions[False], feeds)
            means = {False: [], True: []}
            for _ in range(10):
                for value, s in sessions.items():
                    for _ in range(3):
                        s.run(None, feeds)
                    start = time.perf_counter()
                    for _ in range(n):
                        s.run(None, feeds)
                    means[value].append((time.perf_counter() - start) / n * 1e3)
            off, on = np.median(means[False]), np.median(means[True])
            print(f"{os.path.basename(path)} {flag}: off {off:.4f} ms, on {on:.4f} ms, on/off {on / off:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT_MODELS)
