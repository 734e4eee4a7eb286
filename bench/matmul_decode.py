"""Decode-speed matrix products of a ~0.5B Qwen2.5-style decoder: one-node
models (com.microsoft MatMulNBits 4-bit, block 32, accuracy_level 4 and 0,
with and without zero points; fp32 MatMul with a constant [K, N] weight) at
M = 1 (decode), 16 and 512 (prefill), onyx against onnxruntime in one
process, alternated, same intra_op_num_threads.

    python3 bench/matmul_decode.py --onyx-path build/python [--threads 1,2] [--m 1,16,512]
        [--kinds int4-a4,int4-a4-zp,int4-a0,int4-a0-zp,fp32] [--shapes qkv,o,gate_up,down,lm_head]

Prints, per row, the median time of each engine in ms, the weights' bytes
streamed per run divided by that time (GB/s), and onnxruntime's time over
onyx's (above 1: onyx is faster). lm_head at M=512 is left out unless
--shapes names it (70 GFLOP a run).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

# (name, K, N): Qwen2.5-0.5B's weight matrices (hidden 896, 14 heads and 2 kv heads of 64, intermediate 4864).
SHAPES = [
    ("qkv", 896, 1152),
    ("o", 896, 896),
    ("gate_up", 896, 2 * 4864),
    ("down", 4864, 896),
    ("lm_head", 896, 151936),
]
KINDS = ["int4-a4", "int4-a4-zp", "int4-a0", "int4-a0-zp", "fp32"]
BLOCK = 32


def pack4(codes: np.ndarray) -> np.ndarray:
    """Codes below 16 along the last axis, two a byte, low nibble first."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def make_model(kind: str, k: int, n: int) -> tuple[bytes, int]:
    """The serialized model and the bytes of weights one run reads."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float32)  # [K, N]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    opsets = [helper.make_opsetid("", 17)]
    if kind == "fp32":
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        inits = [numpy_helper.from_array(w, "w")]
        weight_bytes = w.nbytes
    else:
        accuracy = 4 if kind.startswith("int4-a4") else 0
        with_zero_points = kind.endswith("-zp")
        blocks = (k + BLOCK - 1) // BLOCK
        wt = np.zeros((n, blocks * BLOCK), np.float32)
        wt[:, :k] = w.T
        wt = wt.reshape(n, blocks, BLOCK)
        if with_zero_points:
            lo, hi = np.minimum(wt.min(axis=2), 0), np.maximum(wt.max(axis=2), 0)
            scale = np.maximum(hi - lo, 1e-8) / 15
            zero = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
        else:
            scale = np.maximum(np.abs(wt).max(axis=2), 1e-8) / 7
            zero = np.full((n, blocks), 8, np.uint8)
        codes = np.clip(np.round(wt / scale[:, :, None]) + zero[:, :, None], 0, 15).astype(np.uint8)
        b = pack4(codes)  # [N, blocks, BLOCK / 2]
        inputs = ["x", "b", "s"]
        inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(scale.astype(np.float32).reshape(-1), "s")]
        weight_bytes = b.nbytes + scale.size * 4
        if with_zero_points:
            zp = pack4(np.pad(zero, ((0, 0), (0, blocks % 2)))).reshape(-1)
            inits.append(numpy_helper.from_array(zp, "z"))
            inputs.append("z")
            weight_bytes += zp.nbytes
        node = helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft", K=k, N=n, bits=4,
                                block_size=BLOCK, accuracy_level=accuracy)
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    graph = helper.make_graph([node], "decode", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model.SerializeToString(), weight_bytes


def series(session, feeds, count):
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return times


def measure(sessions, feeds, seconds):
    """Median ms of each session, run in alternating series of about 20 ms."""
    one = [min(series(s, feeds, 2)) for s in sessions]
    count = int(min(max(0.02 / max(min(one), 1e-6), 1), 200))
    results = [[] for _ in sessions]
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds or len(results[0]) < 9:
        for i, s in enumerate(sessions):
            results[i] += series(s, feeds, count)
    return [float(np.median(r)) * 1e3 for r in results]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onyx-path", default="build/python", help="folder holding the onyx Python package")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--m", default="1,16,512", help="rows of the activations")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--shapes", default="", help="comma-separated shape names (default: all)")
    parser.add_argument("--seconds", type=float, default=0.6, help="measuring time per row")
    args = parser.parse_args()
    sys.path.insert(0, args.onyx_path)
    import onnxruntime as ort

    import onyx

    named = [s for s in args.shapes.split(",") if s]
    shapes = [s for s in SHAPES if not named or s[0] in named]
    ms = [int(m) for m in args.m.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]
    print(f"| kind | shape KxN | M | thr | onyx ms | ort ms | onyx GB/s | ort GB/s | ort/onyx | max rel diff |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in [k for k in args.kinds.split(",") if k]:
        for name, k, n in shapes:
            model, weight_bytes = make_model(kind, k, n)
            for threads in threads_list:
                sessions = []
                for engine in (onyx, ort):
                    options = engine.SessionOptions()
                    options.intra_op_num_threads = threads
                    if engine is ort:
                        options.inter_op_num_threads = 1
                    sessions.append(engine.InferenceSession(model, options, providers=["CPUExecutionProvider"]))
                for m in ms:
                    if name == "lm_head" and m > 16 and "lm_head" not in named:
                        continue
                    feeds = {"x": np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)}
                    a, b = (s.run(None, feeds)[0] for s in sessions)
                    diff = float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))
                    onyx_ms, ort_ms = measure(sessions, feeds, args.seconds)
                    print(f"| {kind} | {name} {k}x{n} | {m} | {threads} | {onyx_ms:.3f} | {ort_ms:.3f} | "
                          f"{weight_bytes / onyx_ms / 1e6:.1f} | {weight_bytes / ort_ms / 1e6:.1f} | "
                          f"{ort_ms / onyx_ms:.2f} | {diff:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
