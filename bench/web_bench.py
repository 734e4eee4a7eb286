"""onyx-web in headless Chromium against native onyx: MobileNetV2 and
SqueezeNet, the plain build (one thread) and the SIMD + threads build at 1
and 2 threads, beside native onyx at the same thread counts.

    PYTHONPATH=build/python .venv/bin/python bench/web_bench.py [--runs 20] [--json FILE]

Needs web/dist (scripts/build_web.sh), chromium and chromium-driver (apt),
selenium (.venv). MobileNetV2 is built by web/bench/make_models.py (random
weights); SqueezeNet 1.1 is ../shared/models/squeezenet_tensor_input.onnx.
onnxruntime-web is not compared: it is an npm package, and this machine
reaches no npm registry.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "web"))
sys.path.insert(0, str(ROOT / "web" / "bench"))

import make_models  # noqa: E402 - web/bench/make_models.py
import serve  # noqa: E402 - web/serve.py


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)


def page_inputs(session) -> dict[str, np.ndarray]:
    """The inputs bench.html makes: the same generator, symbols as 1."""
    feeds = {}
    seed = 12345
    for meta in session.get_inputs():
        dims = [d if isinstance(d, int) and d > 0 else 1 for d in meta.shape]
        data = np.empty(int(np.prod(dims)), np.float32)
        for i in range(data.size):
            seed = (seed * 48271) % 2147483647
            data[i] = seed / 2147483647
        feeds[meta.name] = data.reshape(dims)
    return feeds


def native(path: Path, threads: int, runs: int):
    import onyx

    options = onyx.SessionOptions()
    options.intra_op_num_threads = threads
    session = onyx.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = page_inputs(session)
    for _ in range(3):
        out = session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1000)
    first = next(o for o in out if isinstance(o, np.ndarray))  # the first tensor output, as bench.html reads
    return statistics.median(times), first.ravel()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    models_dir = ROOT / "build" / "web-bench"
    models_dir.mkdir(parents=True, exist_ok=True)
    import onnx

    onnx.save(make_models.mobilenet_v2(), models_dir / "mobilenet_v2.onnx")
    models = {"mobilenet_v2": models_dir / "mobilenet_v2.onnx"}
    squeezenet = ROOT.parent / "shared" / "models" / "squeezenet_tensor_input.onnx"
    if squeezenet.is_file():
        shutil.copy(squeezenet, models_dir / "squeezenet.onnx")
        models["squeezenet"] = models_dir / "squeezenet.onnx"
    else:
        print(f"note: {squeezenet} is absent; SqueezeNet is left out", file=sys.stderr)

    server = serve.start_in_thread(models=models_dir)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    driver = browser()
    driver.set_script_timeout(600)
    report = {}
    try:
        for name, path in models.items():
            driver.get(f"{url}/bench/bench.html?model=/models/{path.name}&runs={args.runs}")
            deadline = time.monotonic() + 900
            state = None
            while time.monotonic() < deadline:
                state = driver.execute_script("return window.onyxBench && window.onyxBench.done && window.onyxBench;")
                if state:
                    break
                time.sleep(0.5)
            if not state or "error" in state:
                raise SystemExit(f"{name}: {state and state.get('error')}")
            rows = {(r["variant"], r["threads"]): r for r in state["results"]}
            native_ms = {}
            for threads in (1, 2):
                native_ms[threads], native_out = native(path, threads, args.runs)
            if native_out.dtype.kind in "OUS":  # labels: the same strings
                agree = float(any(str(a) != str(b) for a, b in zip(state["output"], native_out)))
            else:
                wasm_out = np.asarray(state["output"], np.float32)
                agree = float(np.max(np.abs(wasm_out - native_out[:len(wasm_out)]) / (1 + np.abs(native_out[:len(wasm_out)]))))
            plain = rows[("plain", 1)]["medianMs"]
            simd1 = rows[("simd-threaded", 1)]["medianMs"]
            simd2 = rows[("simd-threaded", 2)]["medianMs"]
            report[name] = {
                "plain_1t_ms": plain, "simd_1t_ms": simd1, "simd_2t_ms": simd2,
                "native_1t_ms": native_ms[1], "native_2t_ms": native_ms[2],
                "simd_threads_speedup_over_plain": plain / simd2, "simd_speedup_over_plain_1t": plain / simd1,
                "wasm_over_native_1t": simd1 / native_ms[1], "wasm_over_native_2t": simd2 / native_ms[2],
                "max_relative_difference_vs_native": agree,
            }
    finally:
        driver.quit()
        server.shutdown()

    print("| model | plain 1t | SIMD 1t | SIMD+threads 2t | native 1t | native 2t | SIMD+threads / plain | wasm / native 1t | wasm / native 2t |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in report.items():
        print(f"| {name} | {r['plain_1t_ms']:.1f} ms | {r['simd_1t_ms']:.1f} ms | {r['simd_2t_ms']:.1f} ms | "
              f"{r['native_1t_ms']:.1f} ms | {r['native_2t_ms']:.1f} ms | {r['simd_threads_speedup_over_plain']:.2f}x | "
              f"{r['wasm_over_native_1t']:.2f}x | {r['wasm_over_native_2t']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
