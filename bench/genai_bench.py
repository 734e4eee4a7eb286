"""Generation speed of onyx.genai beside onnxruntime-genai on the same model
folders: prefill (a prompt of 128 and of 512 tokens) and decode tokens/s, at
1 and 2 threads, and each run's peak memory.

    python bench/genai_bench.py FOLDER [FOLDER ...] [--threads 1 2] [--prompts 128 512]
                                [--new-tokens 64] [--repeats 3] [--rounds 3] [--runtimes onyx ort]

Each (runtime, folder, threads) is measured in a fresh process, so its peak
resident memory (ru_maxrss) is its own: the weights, the session and one
generator with its KV cache of max_length = longest prompt + new tokens.
Both runtimes are driven by the same code through the same API (onyx.genai
is onnxruntime-genai's API): the folder's genai_config.json with the thread
count overlaid, a generator per prompt, append_tokens(prompt) timed as the
prefill, then generate_next_token() timed per token (one model run each;
the first only picks from the prefill's logits and is not counted). The
prompt is random token ids from the tokenizer's vocabulary, the same for
both; min_length keeps an early end-of-sequence from cutting decode short.
--rounds R measures every configuration R times, the runtimes alternating
(onyx, onnxruntime-genai, onyx, ...), and reports each figure's median over
the rounds, so that a slow drift of the machine does not fall on one
runtime. Prints one table; --json writes the raw numbers.

The ~0.5B Llama-style folders at fp32 and int4 that docs/performance.md
reports come from scripts/make_genai_bench_models.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(runtime, folder, threads, prompts, new_tokens, repeats):
    """Runs in the child process: returns the numbers of one configuration."""
    if runtime == "onyx":
        build = os.path.join(ROOT, "build", "python")
        if os.path.isdir(build):
            sys.path.insert(0, build)
        import onyx.genai as og
    else:
        import onnxruntime_genai as og
    import numpy as np

    start = time.perf_counter()
    config = og.Config(folder)
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads,
                                                                          "inter_op_num_threads": 1}}}}))
    model = og.Model(config)
    load_s = time.perf_counter() - start
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        vocab = len(json.load(f)["model"]["vocab"])
    rng = np.random.default_rng(0)
    result = {"runtime": runtime, "folder": folder, "threads": threads, "load_s": load_s, "prefill": {}, "decode": {}}
    for prompt_len in prompts:
        prompt = rng.integers(10, max(11, vocab - 10), size=prompt_len).astype(np.int32)
        prefill, decode = [], []
        for _ in range(repeats):
            params = og.GeneratorParams(model)
            length = prompt_len + new_tokens
            params.set_search_options(max_length=length, min_length=length, do_sample=False)
            generator = og.Generator(model, params)
            t = time.perf_counter()
            generator.append_tokens(prompt)
            prefill.append(time.perf_counter() - t)
            generator.generate_next_token()  # picks from the prefill's logits
            steps = []
            while not generator.is_done():
                t = time.perf_counter()
                generator.generate_next_token()
                steps.append(time.perf_counter() - t)
            decode.append(statistics.median(steps))
            del generator
        result["prefill"][str(prompt_len)] = prompt_len / statistics.median(prefill)
        result["decode"][str(prompt_len)] = 1.0 / statistics.median(decode)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--prompts", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds; figures are their medians")
    parser.add_argument("--runtimes", nargs="+", default=["onyx", "ort"], choices=["onyx", "ort"])
    parser.add_argument("--json", help="write the raw results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        runtime, folder, threads = json.loads(args.child)
        print(json.dumps(measure(runtime, folder, threads, args.prompts, args.new_tokens, args.repeats)))
        return
    results = []
    for folder in args.folders:
        for threads in args.threads:
            rounds = {runtime: [] for runtime in args.runtimes}
            for _ in range(args.rounds):
                for runtime in args.runtimes:
                    cmd = [sys.executable, os.path.abspath(__file__), folder, "--child",
                           json.dumps([runtime, folder, threads]), "--prompts", *map(str, args.prompts),
                           "--new-tokens", str(args.new_tokens), "--repeats", str(args.repeats)]
                    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
                    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                    if out.returncode != 0:
                        print(f"{runtime} on {folder} at {threads} threads failed:\n{out.stderr[-2000:]}",
                              file=sys.stderr)
                        continue
                    rounds[runtime].append(json.loads(out.stdout.strip().splitlines()[-1]))
            for runtime, measured in rounds.items():
                if not measured:
                    continue
                r = dict(measured[0])
                r["rounds"] = len(measured)
                for key in ("load_s", "peak_rss_mb"):
                    r[key] = statistics.median(m[key] for m in measured)
                for key in ("prefill", "decode"):
                    r[key] = {p: statistics.median(m[key][p] for m in measured) for p in measured[0][key]}
                r["all_rounds"] = measured
                results.append(r)
                print(f"  {runtime:4s} {os.path.basename(folder.rstrip('/')):12s} {threads}t  load {r['load_s']:.1f}s  "
                      + "  ".join(f"p{p}: prefill {r['prefill'][str(p)]:.0f} tok/s decode {r['decode'][str(p)]:.1f} tok/s"
                                  for p in args.prompts)
                      + f"  peak {r['peak_rss_mb']:.0f} MB", flush=True)
    print()
    header = "| folder | threads | runtime | load s | " + " | ".join(
        f"prefill {p} tok/s | decode after {p} tok/s" for p in args.prompts) + " | peak RSS MB |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in results:
        cells = [os.path.basename(r["folder"].rstrip("/")), str(r["threads"]),
                 "onyx" if r["runtime"] == "onyx" else "onnxruntime-genai", f"{r['load_s']:.1f}"]
        for p in args.prompts:
            cells += [f"{r['prefill'][str(p)]:.0f}", f"{r['decode'][str(p)]:.1f}"]
        cells.append(f"{r['peak_rss_mb']:.0f}")
        print("| " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
