"""Load test of `onyx serve`: throughput and latency with dynamic batching on
and off, over loopback only.

    python3 bench/serve_load.py [--onyx build/onyx] [--clients 1,8,64] [--seconds 8] [--max-requests 4000]

Starts one server on a temporary repository holding each model twice: once
with dynamic batching (max_batch_size 64, max_queue_delay 2 ms) and once
without (each request runs alone). Both have one instance (one run at a
time) with --threads 2. For each model, mode and client count, N client
threads each hold one keep-alive connection and send binary-tensor requests
of one row back to back, for --seconds or --max-requests, whichever comes
first. Every request carries its own id; the script checks that each
response echoes its request's id and shape, and that no id is lost or
answered twice. Prints a Markdown table (the rows in docs/performance.md).

Models (random weights, nothing downloaded):
- mlp: a dense classifier (512 -> 2048 -> 2048 -> 1000, GELU-free ReLU MLP,
  about 7 M parameters): one row is memory-bound, which batching amortises.
- tiny_cnn: the repository's models/tiny_cnn.onnx (3x32x32 images).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]


def mlp_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    sizes = [512, 2048, 2048, 1000]
    nodes, inits, last = [], [], "X"
    for i in range(3):
        w = numpy_helper.from_array((rng.standard_normal((sizes[i], sizes[i + 1])) / 40).astype(np.float32), f"W{i}")
        b = numpy_helper.from_array(np.zeros(sizes[i + 1], np.float32), f"b{i}")
        inits += [w, b]
        nodes.append(helper.make_node("Gemm", [last, f"W{i}", f"b{i}"], [f"g{i}"]))
        last = f"g{i}"
        if i < 2:
            nodes.append(helper.make_node("Relu", [last], [f"r{i}"]))
            last = f"r{i}"
    nodes.append(helper.make_node("Identity", [last], ["Y"]))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 512])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 1000])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


BATCHED = "max_batch_size: 64\ndynamic_batching { max_queue_delay_microseconds: 2000 }\n"
UNBATCHED = "max_batch_size: 64\n"


def make_repository(folder: Path) -> dict[str, tuple[str, list[int]]]:
    """Writes the repository; returns model -> (input name, one row's shape)."""
    models = {"mlp": (mlp_model(), "X", [1, 512]), "tiny_cnn": (onnx.load(str(ROOT / "models" / "tiny_cnn.onnx")), "image", [1, 3, 32, 32])}
    shapes = {}
    for name, (model, input_name, shape) in models.items():
        for mode, config in (("batched", BATCHED), ("unbatched", UNBATCHED)):
            target = folder / f"{name}_{mode}" / "1"
            target.mkdir(parents=True)
            onnx.save(model, str(target / "model.onnx"))
            (folder / f"{name}_{mode}" / "config.pbtxt").write_text(config)
        shapes[name] = (input_name, shape)
    return shapes


def run_clients(port: int, model: str, input_name: str, shape: list[int], clients: int, seconds: float,
                max_requests: int) -> dict:
    x = np.random.default_rng(1).random(shape, dtype=np.float32)
    payload = x.tobytes()
    latencies: list[list[float]] = [[] for _ in range(clients)]
    answered: list[list[str]] = [[] for _ in range(clients)]
    issued = [0] * clients
    errors: list[str] = []
    budget = threading.Semaphore(max_requests)
    deadline = time.perf_counter() + seconds

    def client(c: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = 0
        while time.perf_counter() < deadline and budget.acquire(blocking=False):
            rid = f"{c}-{i}"
            i += 1
            header = json.dumps(
                {
                    "id": rid,
                    "inputs": [{"name": input_name, "shape": shape, "datatype": "FP32", "parameters": {"binary_data_size": len(payload)}}],
                    "parameters": {"binary_data_output": True},
                }
            ).encode()
            issued[c] += 1
            start = time.perf_counter()
            try:
                connection.request(
                    "POST", f"/v2/models/{model}/infer", body=header + payload,
                    headers={"Inference-Header-Content-Length": str(len(header))},
                )
                response = connection.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as e:
                errors.append(f"{rid}: no answer ({e})")
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            latencies[c].append(time.perf_counter() - start)
            if response.status != 200:
                errors.append(f"{rid}: {response.status} {body[:200]!r}")
                continue
            length = int(response.getheader("Inference-Header-Content-Length"))
            reply = json.loads(body[:length])
            if reply.get("id") != rid or reply["outputs"][0]["shape"][0] != shape[0]:
                errors.append(f"{rid}: answered as {reply.get('id')} with shape {reply['outputs'][0]['shape']}")
            answered[c].append(reply["id"])
        connection.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    ids = [r for a in answered for r in a]
    sent = sum(issued)
    if len(set(ids)) != len(ids):
        errors.append(f"{len(ids) - len(set(ids))} ids answered twice")
    if len(ids) != sent:
        errors.append(f"{sent - len(ids)} of {sent} requests not answered with their outputs")
    all_latencies = np.array([v for l in latencies for v in l]) * 1e3
    return {
        "requests": sent,
        "throughput": sent / elapsed,
        "p50": float(np.percentile(all_latencies, 50)) if sent else float("nan"),
        "p99": float(np.percentile(all_latencies, 99)) if sent else float("nan"),
        "errors": errors,
    }


def batch_stats(port: int, model: str) -> tuple[int, int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", f"/v2/models/{model}/stats")
    stats = json.loads(connection.getresponse().read())["model_stats"][0]
    connection.close()
    return int(stats["inference_count"]), int(stats["execution_count"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onyx", default=str(ROOT / "build" / "onyx"), help="the onyx program (default build/onyx)")
    parser.add_argument("--clients", default="1,8,64", help="concurrent clients, comma-separated")
    parser.add_argument("--seconds", type=float, default=8.0, help="time limit of each cell")
    parser.add_argument("--max-requests", type=int, default=4000, help="request limit of each cell")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads of each model")
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        shapes = make_repository(Path(folder))
        server = subprocess.Popen(
            [args.onyx, "serve", folder, "--port", "0", "--threads", str(args.threads), "--http-threads", str(max(clients) + 16)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            line = server.stdout.readline()
            match = re.search(r":(\d+)$", line.strip())
            if not match:
                print(f"the server did not start: {line}{server.stderr.read()}", file=sys.stderr)
                return 1
            port = int(match.group(1))
            cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
            print(f"CPU: {cpu}, {os.cpu_count()} cores; server --threads {args.threads}, one instance per model; "
                  f"each cell {args.seconds:g} s or {args.max_requests} requests of one row\n")
            print("| model | clients | batching | requests | req/s | p50 ms | p99 ms | rows per run | with/without |")
            print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
            failed = False
            for model, (input_name, shape) in shapes.items():
                for n in clients:
                    results = {}
                    for mode in ("unbatched", "batched"):
                        name = f"{model}_{mode}"
                        before = batch_stats(port, name)
                        r = run_clients(port, name, input_name, shape, n, args.seconds, args.max_requests)
                        after = batch_stats(port, name)
                        rows, runs = after[0] - before[0], after[1] - before[1]
                        r["rows_per_run"] = rows / runs if runs else float("nan")
                        results[mode] = r
                        if r["errors"]:
                            failed = True
                            print(f"{name} x{n}: {len(r['errors'])} errors, first: {r['errors'][0]}", file=sys.stderr)
                    ratio = results["batched"]["throughput"] / results["unbatched"]["throughput"]
                    for mode in ("unbatched", "batched"):
                        r = results[mode]
                        print(f"| {model} | {n} | {'on' if mode == 'batched' else 'off'} | {r['requests']} | "
                              f"{r['throughput']:.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['rows_per_run']:.1f} | "
                              f"{f'{ratio:.2f}x' if mode == 'batched' else ''} |")
            return 1 if failed else 0
        finally:
            server.terminate()
            server.communicate(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
