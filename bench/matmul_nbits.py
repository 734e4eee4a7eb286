"""A decoder-like stack of MatMuls at batch 1, fp32 against int4
(com.microsoft MatMulNBits, block 32, with zero points): onyx and
onnxruntime on the same files, alternated in one process.

    python3 bench/matmul_nbits.py --onyx-path build/python [--layers 8] [--dim 2048] [--threads 1]

Prints milliseconds per run (median of the fastest series) and each file's
size: the issue "Quantization" asks int4 for at least 2.5x fp32's speed at
batch 1 with at most 30% of its file size.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def pack4(codes: np.ndarray) -> np.ndarray:
    """[rows, n] codes below 16, two a byte, low nibble first."""
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def models(layers: int, dim: int, accuracy_level: int, block: int = 32) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    rng = np.random.default_rng(0)
    fp32_nodes, int4_nodes, fp32_inits, int4_inits = [], [], [], []
    last = "X"
    blocks = dim // block
    for i in range(layers):
        w = (rng.standard_normal((dim, dim)) / np.sqrt(dim)).astype(np.float32)  # [K, N]
        fp32_inits.append(numpy_helper.from_array(w, f"W{i}"))
        fp32_nodes.append(helper.make_node("MatMul", [last, f"W{i}"], [f"y{i}"]))
        # Quantize W^T [N, K] per block of K, asymmetric 4 bits.
        wt = w.T.reshape(dim, blocks, block)
        lo, hi = wt.min(axis=2), wt.max(axis=2)
        scale = np.maximum(hi - lo, 1e-8) / 15
        zero = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
        codes = np.clip(np.round(wt / scale[:, :, None]) + zero[:, :, None], 0, 15).astype(np.uint8)
        b = pack4(codes.reshape(dim * blocks, block)).reshape(dim, blocks, block // 2)
        zp = pack4(np.pad(zero, ((0, 0), (0, blocks % 2)))).reshape(-1)
        int4_inits += [
            numpy_helper.from_array(b, f"B{i}"),
            numpy_helper.from_array(scale.astype(np.float32).reshape(-1), f"S{i}"),
            numpy_helper.from_array(zp, f"Z{i}"),
        ]
        int4_nodes.append(
            helper.make_node("MatMulNBits", [last, f"B{i}", f"S{i}", f"Z{i}"], [f"y{i}"], domain="com.microsoft",
                             K=dim, N=dim, bits=4, block_size=block, accuracy_level=accuracy_level)
        )
        last = f"y{i}"
    made = []
    for nodes, inits, opsets in (
        (fp32_nodes, fp32_inits, [helper.make_opsetid("", 17)]),
        (int4_nodes, int4_inits, [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]),
    ):
        graph = helper.make_graph(
            nodes, "stack", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, dim])],
            [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, dim])], inits,
        )
        model = helper.make_model(graph, opset_imports=opsets)
        model.ir_version = 8
        made.append(model)
    return made[0], made[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onyx-path", default=None, help="folder holding the onyx package (e.g. build/python)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--accuracy-level", type=int, default=0, help="MatMulNBits accuracy_level (4: int8 activations)")
    args = parser.parse_args()
    if args.onyx_path:
        sys.path.insert(0, args.onyx_path)
    import onnxruntime as ort

    import onyx

    fp32, int4 = models(args.layers, args.dim, args.accuracy_level)
    x = np.random.default_rng(1).standard_normal((1, args.dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, model in (("fp32", fp32), ("int4", int4)):
            paths[name] = os.path.join(folder, f"{name}.onnx")
            onnx.save(model, paths[name])
        sessions = {}
        for name, path in paths.items():
            o = onyx.SessionOptions()
            o.intra_op_num_threads = args.threads
            sessions[("onyx", name)] = onyx.InferenceSession(path, o)
            r = ort.SessionOptions()
            r.intra_op_num_threads = args.threads
            sessions[("onnxruntime", name)] = ort.InferenceSession(path, r, providers=["CPUExecutionProvider"])
        reference = sessions[("onyx", "fp32")].run(None, {"X": x})[0]
        best = {key: float("inf") for key in sessions}
        for _ in range(5):  # alternating series
            for key, session in sessions.items():
                session.run(None, {"X": x})
                start = time.perf_counter()
                for _ in range(args.runs // 5 or 1):
                    session.run(None, {"X": x})
                best[key] = min(best[key], (time.perf_counter() - start) / (args.runs // 5 or 1) * 1e3)
        print(f"{args.layers} MatMuls of {args.dim}x{args.dim} at batch 1, {args.threads} thread(s); int4 block 32 with zero points, "
              f"accuracy_level {args.accuracy_level}\n")
        print("| runtime | fp32 ms | int4 ms | fp32/int4 | int4 output vs fp32 (cosine) |")
        print("|---|---:|---:|---:|---:|")
        for runtime in ("onyx", "onnxruntime"):
            y = sessions[(runtime, "int4")].run(None, {"X": x})[0].ravel()
            cosine = float(np.dot(y, reference.ravel()) / (np.linalg.norm(y) * np.linalg.norm(reference)))
            print(f"| {runtime} | {best[(runtime, 'fp32')]:.2f} | {best[(runtime, 'int4')]:.2f} | "
                  f"{best[(runtime, 'fp32')] / best[(runtime, 'int4')]:.2f}x | {cosine:.4f} |")
        sizes = {name: os.path.getsize(path) for name, path in paths.items()}
        print(f"\nfile: fp32 {sizes['fp32'] / 2**20:.1f} MiB, int4 {sizes['int4'] / 2**20:.1f} MiB "
              f"({sizes['int4'] / sizes['fp32']:.0%} of fp32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
