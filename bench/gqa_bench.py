"""GroupQueryAttention micro-benchmark: one node (14 heads over 2 kv heads,
head 64, rotary), onyx against onnxruntime, for decoding one token after a
past of 128/512/2048 rows and for prompts of 128/512/1024 tokens, with 1 and
2 threads. onyx's decode runs with the cache bound as past and present
(onnxruntime-genai's shared buffer); onnxruntime's with a plain feed of a
full-capacity past. Prints milliseconds per call (median).

  PYTHONPATH=build/python python bench/gqa_bench.py [--int8]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto  # noqa: E402
from test_gqa_cache import gqa_model, quantize_rows, rotary_tables  # noqa: E402

import onyx  # noqa: E402

HEADS, KV_HEADS, HEAD, CAPACITY = 14, 2, 64, 2304


def median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--int8", action="store_true", help="onyx with its PER_TOKEN int8 cache")
    parser.add_argument("--no-ort", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    model = gqa_model(HEADS, KV_HEADS, rotary=True)
    onyx_model = gqa_model(HEADS, KV_HEADS, rotary=True, quant="PER_TOKEN", cache_type=TensorProto.INT8) \
        if args.int8 else model
    print(f"{'case':<22}{'threads':>8}{'onyx ms':>10}{'ort ms':>10}")
    for threads in (1, 2):
        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        mine = onyx.InferenceSession(onyx_model, so)
        oo = ort.SessionOptions()
        oo.intra_op_num_threads = threads
        oo.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        theirs = ort.InferenceSession(model, oo, providers=["CPUExecutionProvider"])
        for name, seq, past in [("decode past 128", 1, 128), ("decode past 512", 1, 512), ("decode past 2048", 1, 2048),
                                ("prefill 128", 128, 0), ("prefill 512", 512, 0), ("prefill 1024", 1024, 0)]:
            feeds = feeds_for(rng, seq, past)
            if args.int8:
                feeds_onyx = dict(feeds, past_key=quantize_rows(feeds["past_key"]),
                                  past_value=quantize_rows(feeds["past_value"]))
            else:
                feeds_onyx = feeds
            cache_k = onyx.OrtValue.ortvalue_from_numpy(feeds_onyx["past_key"].copy())
            cache_v = onyx.OrtValue.ortvalue_from_numpy(feeds_onyx["past_value"].copy())
            binding = mine.io_binding()
            for key, array in feeds_onyx.items():
                if not key.startswith("past"):
                    binding.bind_cpu_input(key, array)
            binding.bind_ortvalue_input("past_key", cache_k)
            binding.bind_ortvalue_input("past_value", cache_v)
            binding.bind_output("output")
            binding.bind_ortvalue_output("present_key", cache_k)
            binding.bind_ortvalue_output("present_value", cache_v)
            repeat = 200 if seq == 1 else 10
            ms = median_ms(lambda: mine.run_with_iobinding(binding), repeat)
            theirs_ms = float("nan") if args.no_ort else median_ms(lambda: theirs.run(None, feeds), repeat)
            print(f"{name:<22}{threads:>8}{ms:>10.3f}{theirs_ms:>10.3f}")


if __name__ == "__main__":
    main()
