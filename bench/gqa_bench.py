"""GroupQueryAttention micro-benchmark: one node (14 heads over 2 kv heads,
head 64, rotary), onyx against onnxruntime, for decoding one token after a
past of 128/512/2048 rows and for prompts of 128/512/1024 tokens, with 1 and
2 threads. onyx's decode runs with the cache bound as past and present
(onnxruntime-genai's shared buffer); onnxruntime's with a plain feed of a
full-capacity past. Prints milliseconds per call.

Each runtime runs in a process of its own, the two alternating for --rounds
rounds: on a 2-core machine one runtime's pool still spinning after its
series (onnxruntime's workers spin between runs) slowed the other's 2-thread
runs when both shared a process. A figure is the median over rounds of each
round's median series.

  PYTHONPATH=build/python python bench/gqa_bench.py [--int8] [--decode-only] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto  # noqa: E402
from test_gqa_cache import gqa_model, quantize_rows, rotary_tables  # noqa: E402

import onyx  # noqa: E402

HEADS, KV_HEADS, HEAD, CAPACITY = 14, 2, 64, 2304


def alternating_median_ms(fns, series, calls):
    """Milliseconds per call of each function: `series` rounds, each timing
    `calls` calls of every function in turn; the median round."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(series):
        for fn, t in zip(fns, times):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            t.append((time.perf_counter() - start) * 1000 / calls)
    return [float(np.median(t)) for t in times]


def feeds_for(rng, seq, past):
    cos, sin = rotary_tables(CAPACITY, HEAD)
    return {
        "query": rng.standard_normal((1, seq, HEADS * HEAD)).astype(np.float32),
        "key": rng.standard_normal((1, seq, KV_HEADS * HEAD)).astype(np.float32),
        "value": rng.standard_normal((1, seq, KV_HEADS * HEAD)).astype(np.float32),
        "past_key": rng.standard_normal((1, KV_HEADS, CAPACITY, HEAD)).astype(np.float32),
        "past_value": rng.standard_normal((1, KV_HEADS, CAPACITY, HEAD)).astype(np.float32),
        "seqlens_k": np.array([past + seq - 1], np.int32),
        "total_sequence_length": np.array(past + seq, np.int32),
        "cos_cache": cos, "sin_cache": sin,
    }


def cases(decode_only):
    made = [("decode past 128", 1, 128), ("decode past 512", 1, 512), ("decode past 2048", 1, 2048)]
    if not decode_only:
        made += [("prefill 128", 128, 0), ("prefill 512", 512, 0), ("prefill 1024", 1024, 0)]
    return made


def measure(runtime, int8, decode_only):
    """One runtime's milliseconds per call, {"case/threads": ms}."""
    rng = np.random.default_rng(0)
    model = gqa_model(HEADS, KV_HEADS, rotary=True)
    onyx_model = gqa_model(HEADS, KV_HEADS, rotary=True, quant="PER_TOKEN", cache_type=TensorProto.INT8) \
        if int8 else model
    result = {}
    for threads in (1, 2):
        if runtime == "onyx":
            so = onyx.SessionOptions()
            so.intra_op_num_threads = threads
            session = onyx.InferenceSession(onyx_model, so)
        else:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        for name, seq, past in cases(decode_only):
            feeds = feeds_for(rng, seq, past)
            if runtime == "ort":
                run = lambda: session.run(None, feeds)  # noqa: E731
            else:
                if int8:
                    feeds = dict(feeds, past_key=quantize_rows(feeds["past_key"]),
                                 past_value=quantize_rows(feeds["past_value"]))
                cache_k = onyx.OrtValue.ortvalue_from_numpy(feeds["past_key"].copy())
                cache_v = onyx.OrtValue.ortvalue_from_numpy(feeds["past_value"].copy())
                binding = session.io_binding()
                for key, array in feeds.items():
                    if not key.startswith("past"):
                        binding.bind_cpu_input(key, array)
                binding.bind_ortvalue_input("past_key", cache_k)
                binding.bind_ortvalue_input("past_value", cache_v)
                binding.bind_output("output")
                binding.bind_ortvalue_output("present_key", cache_k)
                binding.bind_ortvalue_output("present_value", cache_v)
                run = lambda: session.run_with_iobinding(binding)  # noqa: E731
            series, calls = (21, 20) if seq == 1 else (5, 2)
            result[f"{name}/{threads}"] = alternating_median_ms([run], series, calls)[0]
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--int8", action="store_true", help="onyx with its PER_TOKEN int8 cache")
    parser.add_argument("--no-ort", action="store_true")
    parser.add_argument("--decode-only", action="store_true", help="skip the prompts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=["onyx", "ort"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.int8, args.decode_only)))
        return
    runtimes = ["onyx"] if args.no_ort else ["onyx", "ort"]
    rounds = {runtime: [] for runtime in runtimes}
    for _ in range(args.rounds):
        for runtime in runtimes:
            command = [sys.executable, os.path.abspath(__file__), "--child", runtime]
            command += [flag for flag, on in (("--int8", args.int8), ("--decode-only", args.decode_only)) if on]
            rounds[runtime].append(json.loads(subprocess.run(command, check=True, capture_output=True,
                                                             text=True).stdout.splitlines()[-1]))
    print(f"{'case':<22}{'threads':>8}{'onyx ms':>10}{'ort ms':>10}")
    for threads in (1, 2):
        for name, _, _ in cases(args.decode_only):
            key = f"{name}/{threads}"
            ms = [float(np.median([r[key] for r in rounds[rt]])) if rt in rounds else float("nan")
                  for rt in ("onyx", "ort")]
            print(f"{name:<22}{threads:>8}{ms[0]:>10.3f}{ms[1]:>10.3f}")


if __name__ == "__main__":
    main()
