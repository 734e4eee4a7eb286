#!/usr/bin/env python3
"""onyx, onnxruntime and OpenVINO's own runtime on the benchmark zoo, side by side.

    python3 bench/zoo/make_zoo.py                      # once: bench/zoo/models/ (needs torch)
    python3 bench/zoo_bench.py --onyx-path build/python  # every model, 1 and 2 threads

For each model and thread count one fresh process creates a session of each
engine on the same file and feed, warms each up, then times them in turns
(--turns, each about --seconds/--turns long per engine, the order rotating,
with a pause between turns so that one engine's spinning workers are idle
before the next starts): a slow stretch of a shared machine hits all three
alike. An engine's latency is the median of all its timed runs.

- onnxruntime: ORT_ENABLE_ALL, intra_op_num_threads = threads,
  inter_op_num_threads = 1, sequential execution.
- OpenVINO: CPU plugin, INFERENCE_PRECISION_HINT f32, PERFORMANCE_HINT
  LATENCY, INFERENCE_NUM_THREADS = threads, one infer request, inputs shared.
- onyx: its defaults (ORT_ENABLE_ALL), intra_op_num_threads = threads.

Peak RSS and session creation are measured apart, each engine alone in a
fresh process (import, create the session, 5 runs; VmHWM of that
process, so the interpreter and the engine's libraries are included).

Outputs are compared with onnxruntime's (rtol 1e-3, atol 1e-4 by default,
looser per model where its outputs are sums over thousands of terms: see
TOLERANCE). A model an engine cannot load or run is reported as such and
left out of that engine's means.

The table, the per-kind and overall geometric means go to docs/performance.md
between the zoo_bench markers (--doc-tag names another pair, so that each
machine keeps its table; --no-doc to skip); --json keeps everything.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # openvino_bench.compile_openvino
ROOT = HERE.parent
ENGINES = ("onnxruntime", "openvino", "onyx")
# Models whose outputs are long sums (logits over thousands of terms): the
# engines' summation orders differ by more than 1e-4 absolute.
TOLERANCE = {"default": (1e-3, 1e-4)}


def make_session(engine: str, model: str, threads: int):
    """A callable running one inference of `model` on feeds, and the session."""
    if engine == "onnxruntime":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        return lambda feeds: sess.run(None, feeds)
    if engine == "openvino":
        from openvino_bench import compile_openvino

        compiled, request = compile_openvino(model, threads)
        names = [o.get_any_name() for o in compiled.outputs]

        def run(feeds):
            r = request.infer(feeds, share_inputs=True)
            return [np.asarray(r[compiled.outputs[i]]) for i in range(len(names))]

        return run
    import onyx

    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onyx.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return lambda feeds: sess.run(None, feeds)


def load_feeds(model: str) -> dict:
    npz = Path(model).with_suffix(".inputs.npz")
    # np.ascontiguousarray would make a 0-d feed (vad_stream's sr) 1-d.
    return {k: np.array(v, order="C") for k, v in np.load(npz).items()}


def max_diff(ref, got, rtol: float, atol: float) -> tuple[float, bool]:
    worst, ok = 0.0, True
    for r, g in zip(ref, got):
        r = np.asarray(r)
        g = np.asarray(g)
        if r.shape != g.shape:
            return math.inf, False
        if r.dtype.kind in "fc":
            d = np.abs(r.astype(np.float64) - g.astype(np.float64))
            nan = np.isnan(r) != np.isnan(g)
            if nan.any():
                return math.inf, False
            d = np.nan_to_num(d)
            worst = max(worst, float(d.max(initial=0)))
            ok = ok and bool(np.all(d <= atol + rtol * np.abs(np.nan_to_num(r.astype(np.float64)))))
        else:
            worst = max(worst, float(np.abs(r.astype(np.float64) - g.astype(np.float64)).max(initial=0)))
            ok = ok and bool(np.array_equal(r, g))
    return worst, ok


def child_latency(model: str, threads: int, seconds: float, turns: int, warmup: int, pause: float, engines) -> dict:
    feeds = load_feeds(model)
    runs, results, errors = {}, {}, {}
    for e in engines:
        try:
            runs[e] = make_session(e, model, threads)
            for _ in range(warmup):
                out = runs[e](feeds)
            results[e] = out
        except Exception as ex:  # noqa: BLE001 - report the engine's refusal, time the others
            errors[e] = f"{type(ex).__name__}: {str(ex).strip().splitlines()[0][:300] if str(ex).strip() else ''}"
            runs.pop(e, None)
    times = {e: [] for e in runs}
    order = list(runs)
    per_turn = seconds / max(1, turns)
    for t in range(turns):
        for e in order[t % len(order):] + order[: t % len(order)] if order else []:
            time.sleep(pause)
            start = time.perf_counter()
            n = 0
            while n < 2 or (time.perf_counter() - start < per_turn and n < 2000):
                t0 = time.perf_counter()
                runs[e](feeds)
                times[e].append(time.perf_counter() - t0)
                n += 1
    rtol, atol = TOLERANCE.get(Path(model).stem, TOLERANCE["default"])
    out = {"errors": errors, "ms": {}, "runs": {}, "diff": {}, "match": {}}
    for e, ts in times.items():
        out["ms"][e] = statistics.median(ts) * 1e3
        out["runs"][e] = len(ts)
    if "onnxruntime" in results:
        for e in results:
            if e != "onnxruntime":
                d, ok = max_diff(results["onnxruntime"], results[e], rtol, atol)
                out["diff"][e] = d
                out["match"][e] = ok
    return out


def peak_rss_mib() -> float:
    """Peak resident memory of this process since it started (VmHWM).
    ru_maxrss would count the parent's memory at fork too: Linux carries the
    pre-exec peak over exec, so every child read as large as zoo_bench."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_memory(model: str, engine: str) -> dict:
    feeds = load_feeds(model)
    t0 = time.perf_counter()
    run = make_session(engine, model, 1)
    create = time.perf_counter() - t0
    for _ in range(5):
        run(feeds)
    return {"create_s": create, "rss_mib": peak_rss_mib()}


def child(args) -> int:
    spec = json.loads(args.child)
    try:
        if spec["what"] == "latency":
            r = child_latency(spec["model"], spec["threads"], spec["seconds"], spec["turns"], spec["warmup"],
                              spec["pause"], spec["engines"])
        else:
            r = child_memory(spec["model"], spec["engine"])
    except Exception as ex:  # noqa: BLE001
        r = {"error": f"{type(ex).__name__}: {ex}"[:400]}
    print("ZOO_RESULT " + json.dumps(r), flush=True)
    return 0


def run_child(args, spec: dict, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    if args.onyx_path:
        cmd += ["--onyx-path", str(args.onyx_path)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in p.stdout.splitlines():
        if line.startswith("ZOO_RESULT "):
            return json.loads(line[len("ZOO_RESULT "):])
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {p.returncode}: " + " | ".join(tail)[:400]}


def geomean(xs) -> float:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def zoo_models(folder: Path, only: list[str] | None) -> list[tuple[str, str, Path]]:
    sys.path.insert(0, str(HERE / "zoo"))
    import make_zoo

    kinds = {name: kind for name, (kind, _) in make_zoo.zoo().items()}
    found = []
    for name, kind in kinds.items():
        if only and name not in only:
            continue
        path = folder / f"{name}.onnx"
        if path.exists() and path.with_suffix(".inputs.npz").exists():
            found.append((name, kind, path))
        elif only:
            sys.exit(f"{path} missing: run bench/zoo/make_zoo.py --only {name}")
    return found


def machine() -> str:
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        flags = next(l for l in Path("/proc/cpuinfo").read_text().splitlines() if l.startswith("flags")).split()
        isa = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags)
    except (OSError, StopIteration):
        isa = "?"
    return f"{model}, {os.cpu_count()} CPUs ({isa})"


def version(name: str) -> str:
    try:
        from importlib.metadata import version as v

        return v(name)
    except Exception:  # noqa: BLE001
        return "?"


def fmt(x, spec=".2f") -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def render(rows: list[dict], meta: dict, threads: list[int]) -> str:
    lines = [
        "### The zoo: onyx, onnxruntime and OpenVINO",
        "",
        f"Machine: {meta['machine']}; load average {meta['load_start']:.2f} at the start, {meta['load_end']:.2f} at the end. "
        f"Date: {meta['date']}. onyx at {meta['commit']}, onnxruntime {meta['onnxruntime']}, OpenVINO {meta['openvino']}.",
        "",
        f"Command: `{meta['command']}`",
        "",
        "Latency: median ms of every timed run, the three engines taking turns in one process "
        f"({meta['turns']} turns of about {meta['seconds'] / meta['turns']:.2f} s each). "
        "Ratios below 1: onyx is faster. Create and RSS: each engine alone in a fresh process "
        "(peak resident memory of the process, interpreter included). match: onyx's outputs against onnxruntime's.",
        "",
    ]
    head = "| model | kind | threads | onnxruntime ms | OpenVINO ms | onyx ms | onyx/ort | onyx/OV | match |"
    lines += [head, "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ms = r.get("ms", {})
        o, t, v = ms.get("onyx"), ms.get("onnxruntime"), ms.get("openvino")
        ratio_t = o / t if o and t else None
        ratio_v = o / v if o and v else None
        match = r.get("match", {}).get("onyx")
        mtxt = "—" if match is None else ("yes" if match else f"NO ({r['diff']['onyx']:.1e})")
        if "onyx" in r.get("errors", {}):
            mtxt = "onyx: " + r["errors"]["onyx"][:60]
        lines.append(f"| {r['model']} | {r['kind']} | {r['threads']} | {fmt(t)} | {fmt(v)} | {fmt(o)} | "
                     f"{fmt(ratio_t, '.3f')} | {fmt(ratio_v, '.3f')} | {mtxt} |")
    lines += ["", "Geometric means of onyx's latency over the other engine's (models both ran):", ""]
    kinds = sorted({r["kind"] for r in rows})
    lines += ["| kind | models | " + " | ".join(f"onyx/ort {n}t | onyx/OV {n}t" for n in threads) + " |",
              "|---|---:|" + "---:|" * (2 * len(threads))]
    for kind in kinds + ["all"]:
        sel = [r for r in rows if kind == "all" or r["kind"] == kind]
        cells = []
        for n in threads:
            at = [r for r in sel if r["threads"] == n]
            for other in ("onnxruntime", "openvino"):
                cells.append(fmt(geomean(r["ms"]["onyx"] / r["ms"][other] for r in at
                                         if r.get("ms", {}).get("onyx") and r["ms"].get(other)), ".3f"))
        nmodels = len({r["model"] for r in sel})
        name = "**all**" if kind == "all" else kind
        lines.append(f"| {name} | {nmodels} | " + " | ".join(cells) + " |")
    mem = [r for r in rows if r.get("memory")]
    if mem:
        lines += ["", "Session creation and peak RSS, each engine alone in a fresh process:", "",
                  "| model | create ort s | create OV s | create onyx s | RSS ort MiB | RSS OV MiB | RSS onyx MiB |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        seen = set()
        for r in mem:
            if r["model"] in seen:
                continue
            seen.add(r["model"])
            m = r["memory"]
            c = [fmt(m.get(e, {}).get("create_s"), ".3f") for e in ENGINES]
            s = [fmt(m.get(e, {}).get("rss_mib"), ".0f") for e in ENGINES]
            lines.append(f"| {r['model']} | " + " | ".join(c + s) + " |")
    return "\n".join(lines) + "\n"


def update_doc(doc: Path, block: str, tag: str = "") -> None:
    name = f"zoo_bench {tag}" if tag else "zoo_bench"
    begin, end = f"<!-- {name} begin -->", f"<!-- {name} end -->"
    text = doc.read_text()
    if begin in text and end in text:
        a = text.index(begin) + len(begin)
        b = text.index(end)
        text = text[:a] + "\n" + block + text[b:]
    else:
        text = text.rstrip("\n") + f"\n\n{begin}\n{block}{end}\n"
    doc.write_text(text)


def git_commit() -> str:
    try:
        c = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return c + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx-path", type=Path, help="folder holding the onyx package (e.g. build/python)")
    ap.add_argument("--zoo", type=Path, default=HERE / "zoo" / "models")
    ap.add_argument("--models", help="comma-separated zoo names (default: every model built)")
    ap.add_argument("--kinds", help="comma-separated kinds")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--seconds", type=float, default=3.0, help="timed seconds per engine, model and thread count")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--pause", type=float, default=0.05, help="seconds between turns")
    ap.add_argument("--no-memory", action="store_true", help="skip the creation/RSS processes")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    ap.add_argument("--doc-tag", default="",
                    help="write between '<!-- zoo_bench TAG begin/end -->' instead, so that the tables of "
                         "several machines (e.g. --doc-tag avx512) stay side by side")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.onyx_path:
        sys.path.insert(0, str(args.onyx_path.resolve()))
    if args.child:
        return child(args)
    only = args.models.split(",") if args.models else None
    models = zoo_models(args.zoo, only)
    if args.kinds:
        models = [m for m in models if m[1] in args.kinds.split(",")]
    if not models:
        sys.exit(f"no models in {args.zoo}: run bench/zoo/make_zoo.py first")
    threads = [int(t) for t in args.threads.split(",")]
    engines = args.engines.split(",")
    meta = {"machine": machine(), "load_start": os.getloadavg()[0], "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "commit": git_commit(), "onnxruntime": version("onnxruntime"), "openvino": version("openvino"),
            "command": "python " + " ".join([os.path.relpath(__file__, ROOT)] + sys.argv[1:]),
            "turns": args.turns, "seconds": args.seconds}
    rows = []
    for name, kind, path in models:
        memory = {}
        if not args.no_memory:
            for e in engines:
                memory[e] = run_child(args, {"what": "memory", "model": str(path), "engine": e}, 600)
        for n in threads:
            spec = {"what": "latency", "model": str(path), "threads": n, "seconds": args.seconds, "turns": args.turns,
                    "warmup": args.warmup, "pause": args.pause, "engines": engines}
            r = run_child(args, spec, 60 + 20 * args.seconds * len(engines))
            r.update(model=name, kind=kind, threads=n, memory=memory)
            r.setdefault("ms", {})
            r.setdefault("errors", {})
            if "error" in r:
                r["errors"]["all"] = r["error"]
            rows.append(r)
            ms = r["ms"]
            parts = [f"{e} {ms[e]:.3f}" for e in engines if e in ms]
            ratio = f" onyx/ort {ms['onyx'] / ms['onnxruntime']:.3f}" if "onyx" in ms and "onnxruntime" in ms else ""
            ratio += f" onyx/OV {ms['onyx'] / ms['openvino']:.3f}" if "onyx" in ms and "openvino" in ms else ""
            errs = f" errors {r['errors']}" if r["errors"] else ""
            match = "" if r.get("match", {}).get("onyx", True) else f" MISMATCH {r['diff']['onyx']:.2e}"
            print(f"{name} [{kind}] t={n}: " + ", ".join(parts) + " ms" + ratio + match + errs, flush=True)
    meta["load_end"] = os.getloadavg()[0]
    block = render(rows, meta, threads)
    print()
    print(block)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    if not args.no_doc and not only and not args.kinds:
        update_doc(args.doc, block, args.doc_tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
