#!/usr/bin/env python3
"""onyx with its OpenVINO provider against OpenVINO's own runtime (and onyx's
CPU provider), on the same model file, inputs and thread count.

Each series (engine, model, threads) runs in a fresh process: it creates the
session, warms up, then times runs for --seconds and reports the median. The
engines' series take turns, --repeats times, and a cell is the median of its
series' medians, so that a slow stretch of a shared machine hits all alike.

    python3 bench/zoo/make_bert_onnx.py               # bench/zoo/models/bert_base_onnx.onnx (no torch needed)
    python3 bench/openvino_bench.py --onyx-path build/python \\
        --models ../shared/onnx-backend-data/light/light_resnet50.onnx,bench/zoo/models/bert_base_onnx.onnx

OpenVINO runs FP32 (INFERENCE_PRECISION_HINT f32, as the provider's default
precision FP32 sets it), the LATENCY hint, INFERENCE_NUM_THREADS = threads;
the provider gets num_of_threads = threads; onyx's CPU provider
intra_op_num_threads = threads. Inputs: NAME.inputs.npz beside the model when
there is one, else seeded random floats (symbolic dimensions 1).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ENGINES = ("openvino", "onyx-openvino", "onyx-cpu")


def make_feeds(model: str) -> dict:
    npz = Path(model).with_suffix("").as_posix() + ".inputs.npz"
    if Path(npz).exists():
        return dict(np.load(npz))
    import onnx

    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for gi in m.graph.input:
        if gi.name in inits:
            continue
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in gi.type.tensor_type.shape.dim]
        feeds[gi.name] = rng.random(shape, dtype=np.float32)
    return feeds


def compile_openvino(model: str, threads: int):
    """OpenVINO's own runtime on `model`: the CPU plugin at f32 with the
    latency hint and `threads` inference threads. Returns the compiled model
    and one infer request."""
    import openvino

    core = openvino.Core()
    compiled = core.compile_model(
        core.read_model(model),
        "CPU",
        {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads},
    )
    return compiled, compiled.create_infer_request()


def child(engine: str, model: str, threads: int, seconds: float, warmup: int) -> dict:
    feeds = make_feeds(model)
    t0 = time.perf_counter()
    if engine == "openvino":
        _, request = compile_openvino(model, threads)

        def run():
            return request.infer(feeds, share_inputs=True)

    else:
        import onyx

        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        if engine == "onyx-openvino":
            providers = [("OpenVINOExecutionProvider", {"num_of_threads": str(threads)}), "CPUExecutionProvider"]
        else:
            providers = ["CPUExecutionProvider"]
        sess = onyx.InferenceSession(model, so, providers=providers)

        def run():
            return sess.run(None, feeds)

    create_s = time.perf_counter() - t0
    for _ in range(warmup):
        run()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return {"median_ms": statistics.median(times) * 1e3, "runs": len(times), "create_s": create_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="", help="comma-separated model paths")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--onyx-path", type=Path, help="folder holding the onyx package (e.g. build/python)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.onyx_path:
        sys.path.insert(0, str(args.onyx_path.resolve()))
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(child(**spec)))
        return 0
    rows = []
    for model in args.models.split(","):
        for threads in [int(t) for t in args.threads.split(",")]:
            series = {e: [] for e in ENGINES}
            creates = {e: [] for e in ENGINES}
            for _ in range(args.repeats):
                for engine in ENGINES:
                    spec = dict(engine=engine, model=model, threads=threads, seconds=args.seconds, warmup=args.warmup)
                    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
                    if args.onyx_path:
                        cmd += ["--onyx-path", str(args.onyx_path)]
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                    r = json.loads(out.strip().splitlines()[-1])
                    series[engine].append(r["median_ms"])
                    creates[engine].append(r["create_s"])
            cell = {e: statistics.median(v) for e, v in series.items()}
            rows.append((Path(model).stem, threads, cell, {e: statistics.median(v) for e, v in creates.items()}))
            print(f"{Path(model).stem} threads={threads}: "
                  + ", ".join(f"{e} {cell[e]:.2f} ms" for e in ENGINES), flush=True)
    print()
    print("| model | threads | OpenVINO runtime ms | onyx + OpenVINO provider ms | provider / runtime | onyx CPU ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, threads, cell, _ in rows:
        ratio = cell["onyx-openvino"] / cell["openvino"]
        print(f"| {name} | {threads} | {cell['openvino']:.2f} | {cell['onyx-openvino']:.2f} | {ratio:.3f} | "
              f"{cell['onyx-cpu']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
