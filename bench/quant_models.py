"""Whole quantized models: ResNet-50 (static QDQ, uint8 activations, int8
per-channel weights, onnxruntime.quantization.quantize_static on 8 seeded
random images) and BERT-base at 128 tokens (dynamic, int8 weights,
quantize_dynamic), both from bench/zoo/make_zoo.py (random weights). Each
runs in onyx at fp32 and int8 and in onnxruntime at int8, at 1 and 2 threads.

    python3 bench/quant_models.py --onyx-path build/python [--threads 1 2] [--rounds 3] [--seconds 3]

Every (engine, model, threads) runs in a fresh process; the rounds
alternate the engines so that they see the same machine load; a figure is
the median over rounds of each process's median run time. Agreement: for
ResNet-50, the share of 64 seeded random images whose top-1 class is the
same in onyx int8 as in onyx fp32 (onnxruntime int8 beside it); for BERT,
the largest difference of the pooled output from fp32 and its magnitude.
Needs torch, torchvision and transformers (for the zoo) and onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ZOO = HERE / "zoo" / "models"


def build_models(out: Path) -> dict:
    """The float and quantized files (made once; kept in `out`)."""
    from onnxruntime import quantization as q

    for name in ("resnet50", "bert_base"):
        if not (ZOO / f"{name}.onnx").exists():
            subprocess.run([sys.executable, str(HERE / "zoo" / "make_zoo.py"), "--only", name], check=True)
    paths = {"resnet50": (ZOO / "resnet50.onnx", out / "resnet50_qdq.onnx"),
             "bert_base": (ZOO / "bert_base.onnx", out / "bert_base_dynamic.onnx")}
    if not paths["resnet50"][1].exists():

        class Images(q.CalibrationDataReader):
            def __init__(self):
                rng = np.random.default_rng(0)
                self.feeds = iter([{"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
                                   for _ in range(8)])

            def get_next(self):
                return next(self.feeds, None)

        pre = out / "resnet50_pre.onnx"
        q.quant_pre_process(str(paths["resnet50"][0]), str(pre))
        q.quantize_static(str(pre), str(paths["resnet50"][1]), Images(), quant_format=q.QuantFormat.QDQ,
                          per_channel=True, activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
    if not paths["bert_base"][1].exists():
        pre = out / "bert_base_pre.onnx"
        q.quant_pre_process(str(paths["bert_base"][0]), str(pre))
        q.quantize_dynamic(str(pre), str(paths["bert_base"][1]), weight_type=q.QuantType.QInt8)
    return paths


WORKER = r"""
import json, sys, time
import numpy as np
engine, onyx_path, path, feeds_path, threads, seconds, agreement = sys.argv[1:8]
if engine == "onyx":
    sys.path.insert(0, onyx_path)
    import onyx as rt
else:
    import onnxruntime as rt
options = rt.SessionOptions()
options.intra_op_num_threads = int(threads)
if engine == "ort":
    options.inter_op_num_threads = 1
session = rt.InferenceSession(path, options, providers=["CPUExecutionProvider"])
feeds = dict(np.load(feeds_path))
for _ in range(3):
    session.run(None, feeds)
times = []
end = time.perf_counter() + float(seconds)
while time.perf_counter() < end or len(times) < 10:
    t0 = time.perf_counter()
    session.run(None, feeds)
    times.append(time.perf_counter() - t0)
result = {"ms": float(np.median(times)) * 1e3}
if agreement == "top1":
    rng = np.random.default_rng(1)
    result["top1"] = [int(np.argmax(session.run(None, {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)})[0]))
                      for _ in range(64)]
elif agreement == "pooled":
    result["pooled"] = session.run(None, feeds)[1].ravel().tolist()
print(json.dumps(result))
"""


def run(engine, onyx_path, path, feeds, threads, seconds, agreement="") -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, engine, onyx_path, str(path), str(feeds), str(threads),
                          str(seconds), agreement], check=True, capture_output=True, text=True,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onyx-path", default=str(HERE.parent / "build" / "python"))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--models", nargs="+", default=["resnet50", "bert_base"])
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "onyx_quant_models"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = build_models(out)
    print("| model | threads | onyx fp32 ms | onyx int8 ms | onnxruntime int8 ms | int8 speed-up (onyx fp32 / int8) "
          "| onnxruntime / onyx (int8) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    notes = []
    for name in args.models:
        fp32, int8 = paths[name]
        feeds = ZOO / f"{name}.inputs.npz"
        agreement = "top1" if name == "resnet50" else "pooled"
        for threads in args.threads:
            runs = {"fp32": [], "int8": [], "ort": []}
            outputs = {}
            for r in range(args.rounds):
                order = [("fp32", "onyx", fp32), ("int8", "onyx", int8), ("ort", "ort", int8)]
                for key, engine, path in order if r % 2 == 0 else order[::-1]:
                    res = run(engine, args.onyx_path, path, feeds, threads, args.seconds,
                              agreement if r == 0 and threads == args.threads[0] else "")
                    runs[key].append(res["ms"])
                    outputs.setdefault(key, res)
            ms = {k: float(np.median(v)) for k, v in runs.items()}
            print(f"| {name} | {threads} | {ms['fp32']:.2f} | {ms['int8']:.2f} | {ms['ort']:.2f} | "
                  f"{ms['fp32'] / ms['int8']:.2f} | {ms['ort'] / ms['int8']:.2f} |", flush=True)
            if "top1" in outputs.get("fp32", {}):
                ref = np.array(outputs["fp32"]["top1"])
                notes.append(f"{name}: top-1 of 64 random images, onyx int8 = onyx fp32 on "
                             f"{int((np.array(outputs['int8']['top1']) == ref).sum())}, onnxruntime int8 = onyx fp32 "
                             f"on {int((np.array(outputs['ort']['top1']) == ref).sum())}")
            if "pooled" in outputs.get("fp32", {}):
                ref = np.array(outputs["fp32"]["pooled"])
                notes.append(f"{name}: pooled output max |int8 - fp32| onyx {np.abs(np.array(outputs['int8']['pooled']) - ref).max():.4f}, "
                             f"onnxruntime {np.abs(np.array(outputs['ort']['pooled']) - ref).max():.4f} "
                             f"(max |fp32| {np.abs(ref).max():.3f})")
    for n in notes:
        print(f"- {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
