#!/usr/bin/env python3
"""GPU latency: onyx's CUDA provider against PyTorch eager on the same GPU.

ResNet-50, BERT-base (sequence 128) and one GPT-2 decode step (a 128-token KV
cache), each at batch 1 and 32 in float32 and float16. The models are the
zoo's (bench/zoo/make_zoo.py builds them from their configurations with
seeded random weights: nothing is downloaded), exported here once per
element type with a symbolic batch into --cache. onyx runs each through an
IOBinding with inputs and outputs on the GPU, so that both engines are timed
on device-resident data; PyTorch runs the same module under inference_mode.
Each case is timed for about --seconds after warmup and its median reported,
with the largest difference between the two engines' first outputs. Cases
that do not fit in --deadline (seconds since the epoch) are listed as not
measured; a case that fails is listed with its error.

    python bench/gpu_bench.py --onyx-path build-gpu/python --out gpu.md

Needs torch with CUDA, torchvision and transformers; without them it writes
a table that says so and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench" / "zoo"))

CASES = [(model, dtype, batch) for model in ("resnet50", "bert_base", "gpt2_decode")
         for dtype in ("fp32", "fp16") for batch in (1, 32)]


def median_ms(step, seconds: float, warmup: int = 3) -> float:
    for _ in range(warmup):
        step()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def build(name: str, batch: int):
    """The zoo's (module, input names, inputs, output names) of `name`."""
    import make_zoo

    if name == "resnet50":
        return make_zoo.build_torchvision("resnet50", batch)
    return {"bert_base": make_zoo.build_bert, "gpt2_decode": make_zoo.build_gpt2}[name](batch)


def export_once(name: str, dtype: str, cache: Path):
    """The zoo model in `dtype` on the GPU, its ONNX file with a symbolic batch,
    and its input and output names."""
    import make_zoo

    make_zoo.seed_everything(0)
    module, names, args, outputs = build(name, 1)
    module = module.cuda()
    if dtype == "fp16":
        module = module.half()
    path = cache / f"{name}.{dtype}.onnx"
    if not path.exists():
        example = tuple(to_device(a, dtype) for a in args)
        axes = {n: {0: "batch"} for n in list(names) + list(outputs)}
        make_zoo.export(module, example, path, names, outputs, dynamic_axes=axes)
    return module, path, names, outputs


def to_device(t, dtype: str):
    t = t.cuda()
    return t.half() if dtype == "fp16" and t.is_floating_point() else t


def run_case(onyx, name, dtype, batch, model, seconds):
    import torch
    import make_zoo

    module, path, names, outputs = model
    make_zoo.seed_everything(1)
    inputs = tuple(to_device(a, dtype) for a in build(name, batch)[2])

    session = onyx.InferenceSession(str(path), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    binding = session.io_binding()
    for n, t in zip(names, inputs):
        binding.bind_ortvalue_input(n, onyx.OrtValue.ortvalue_from_numpy(t.cpu().numpy(), "cuda", 0))
    for n in outputs:
        binding.bind_output(n, "cuda")
    onyx_ms = median_ms(lambda: session.run_with_iobinding(binding), seconds)
    ours = binding.get_outputs()[0].numpy().astype(np.float32)

    with torch.inference_mode():
        def torch_step():
            module(*inputs)
            torch.cuda.synchronize()

        torch_ms = median_ms(torch_step, seconds)
        first = module(*inputs)
        first = first[0] if isinstance(first, (tuple, list)) else first
        theirs = first.float().cpu().numpy()
    diff = float(np.max(np.abs(ours - theirs))) if ours.shape == theirs.shape else float("nan")
    return onyx_ms, torch_ms, diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx-path", default=str(REPO / "build" / "python"), help="folder holding the onyx package")
    ap.add_argument("--out", type=Path, required=True, help="the Markdown table to write")
    ap.add_argument("--cache", type=Path, default=None, help="folder for the exported models (default: a temp dir)")
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per engine and case")
    ap.add_argument("--deadline", type=float, default=None, help="stop starting cases after this time (epoch s)")
    args = ap.parse_args()

    lines = ["| model | dtype | batch | onyx CUDA (ms) | PyTorch eager (ms) | onyx / PyTorch | max abs diff |",
             "|---|---|---|---|---|---|---|"]
    try:
        import torch
        import torchvision  # noqa: F401
        import transformers  # noqa: F401

        if not torch.cuda.is_available():
            raise ImportError("torch.cuda.is_available() is False")
    except ImportError as e:
        args.out.write_text(f"PyTorch with CUDA, torchvision and transformers are needed: {e}\n")
        print(args.out.read_text())
        return 0
    sys.path.insert(0, args.onyx_path)
    import onyx

    if "CUDAExecutionProvider" not in onyx.get_available_providers():
        args.out.write_text(f"onyx at {args.onyx_path} does not offer CUDAExecutionProvider: nothing to compare\n")
        print(args.out.read_text())
        return 0
    cache = args.cache or Path(tempfile.mkdtemp(prefix="onyx-gpu-bench-"))
    cache.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, dtype, batch in CASES:
        row = f"| {name} | {dtype} | {batch} |"
        if args.deadline is not None and time.time() + 4 * args.seconds > args.deadline:
            lines.append(row + " not measured (time budget) | | | |")
            continue
        try:
            if (name, dtype) not in models:
                models[(name, dtype)] = export_once(name, dtype, cache)
            onyx_ms, torch_ms, diff = run_case(onyx, name, dtype, batch, models[(name, dtype)], args.seconds)
            lines.append(row + f" {onyx_ms:.2f} | {torch_ms:.2f} | {onyx_ms / torch_ms:.2f} | {diff:.3g} |")
        except Exception as e:  # noqa: BLE001 - report the case, measure the rest
            traceback.print_exc()
            message = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            lines.append(row + f" failed: {message.replace('|', '/')} | | | |")
        print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
