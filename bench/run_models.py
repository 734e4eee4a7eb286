#!/usr/bin/env python3
"""Side-by-side model benchmark: onyx against onnxruntime on the CPU, on the
same models and the same inputs.

Each measurement series (one engine, one model, one thread count) runs in a
fresh process, so that neither engine's allocator, thread pool or caches
colour the other's numbers. The two engines' series run side by side and take
turns (--turns, each timing a share of its runs while the other waits), so
that a change of machine speed hits both alike. Per model and thread count it
reports the median latency of each engine (median of the series' medians,
after warmup), the ratio onyx/onnxruntime, session creation time, the peak RSS
of the series' process (ru_maxrss, which includes the Python interpreter and
numpy), and whether the outputs agree (rtol 1e-3, atol 1e-4, onnxruntime as
the reference) with the largest absolute difference.

    python bench/zoo/make_zoo.py                      # once: builds bench/zoo/models/
    python bench/run_models.py --onyx-path build/python
    python bench/run_models.py --onyx-level disable --models bert_base,resnet50

--onyx-level disable measures onyx with GraphOptimizationLevel ORT_DISABLE_ALL
against onyx with ORT_ENABLE_ALL instead (what the graph optimizer buys).
--baseline-onyx-path OTHER/python measures another build of onyx (an older
commit's) against this one instead, to show that a change costs no speed:

    git worktree add /tmp/base OLD && cmake -S /tmp/base -B /tmp/base/build -G Ninja && ninja -C /tmp/base/build
    python bench/run_models.py --onyx-path build/python --baseline-onyx-path /tmp/base/build/python --no-doc
Results go into the "## Models" section of docs/performance.md (--no-doc to
skip) and, with --json, into a JSON file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
ZOO = REPO / "bench" / "zoo" / "models"
LIGHT = REPO.parent / "shared" / "onnx-backend-data" / "light"
DOC = REPO / "docs" / "performance.md"
RTOL, ATOL = 1e-3, 1e-4

# ---- child: one measurement series in its own process --------------------------------


def child_main(spec_path: str) -> int:
    """Creates one session, warms up, times runs, writes the result JSON (and the
    outputs of the last run, for the comparison)."""
    spec = json.loads(Path(spec_path).read_text())
    result: dict = {"ok": False}
    try:
        feeds = dict(np.load(spec["inputs"]))
        engine = spec["engine"]
        if engine == "onnxruntime":
            import onnxruntime as rt

            so = rt.SessionOptions()
            so.intra_op_num_threads = spec["threads"]
            so.inter_op_num_threads = 1
            so.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
            for kv in spec.get("ort_config", []):
                key, _, value = kv.partition("=")
                so.add_session_config_entry(key, value)
        else:
            import onyx as rt  # this build, or the baseline build (PYTHONPATH)

            so = rt.SessionOptions()
            so.intra_op_num_threads = spec["threads"]
            so.graph_optimization_level = (
                rt.GraphOptimizationLevel.ORT_DISABLE_ALL
                if spec["level"] == "disable"
                else rt.GraphOptimizationLevel.ORT_ENABLE_ALL
            )
        result["version"] = rt.__version__
        if engine.startswith("onyx"):
            # Which build ran: the time its native module was linked.
            native = getattr(getattr(rt, "_onyx", None), "__file__", None)
            if native:
                result["built"] = dt.datetime.fromtimestamp(os.path.getmtime(native)).strftime("%Y-%m-%d %H:%M")
        t0 = time.perf_counter()
        sess = rt.InferenceSession(spec["model"], so, providers=["CPUExecutionProvider"])
        result["create_s"] = time.perf_counter() - t0
        names = [o.name for o in sess.get_outputs()]

        warm = []
        for _ in range(spec["warmup"]):
            t0 = time.perf_counter()
            outs = sess.run(None, feeds)
            warm.append(time.perf_counter() - t0)
        # Enough runs to fill the time budget, within [min_runs, max_runs].
        per_run = statistics.median(warm) if warm else 0.01
        runs = int(min(spec["max_runs"], max(spec["min_runs"], math.ceil(spec["seconds"] / max(per_run, 1e-6)))))
        turns = spec.get("turns", 1)
        if turns > 1:
            # Taking turns with the other engine's process: the parent says
            # when; each turn times its share of the runs and reports their median.
            print(json.dumps({"ready": True}), flush=True)
            per_turn = max(1, math.ceil(runs / turns))
            turn_ms, times = [], []
            for line in sys.stdin:
                if line.strip() != "turn":
                    break
                t = []
                for _ in range(per_turn):
                    t0 = time.perf_counter()
                    outs = sess.run(None, feeds)
                    t.append(time.perf_counter() - t0)
                times += t
                turn_ms.append(statistics.median(t) * 1e3)
                print(json.dumps({"turn_ms": turn_ms[-1]}), flush=True)
            runs = len(times)
            median_ms = statistics.median(turn_ms)
        else:
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                outs = sess.run(None, feeds)
                times.append(time.perf_counter() - t0)
            median_ms = statistics.median(times) * 1e3
            turn_ms = []
        result.update(
            ok=True,
            runs=runs,
            median_ms=median_ms,
            turn_ms=turn_ms,
            min_ms=min(times) * 1e3,
            first_warm_ms=(warm[0] * 1e3) if warm else None,
        )
        if spec.get("outputs"):
            np.savez(spec["outputs"], **{f"o{i}": np.asarray(o) for i, o in enumerate(outs)})
            result["output_names"] = names
    except Exception as e:  # noqa: BLE001 - the parent reports it as a finding
        result["error"] = f"{type(e).__name__}: {e}"
    Path(spec["result"]).write_text(json.dumps(result))
    return 0


# ---- parent ----------------------------------------------------------------------------


def find_models(args) -> list[tuple[str, Path, Path | None]]:
    """(name, model, inputs .npz or None) for the zoo and the light CNNs."""
    found = []
    for m in sorted(args.zoo.glob("*.onnx")):
        npz = m.with_suffix(".inputs.npz")
        found.append((m.stem, m, npz if npz.exists() else None))
    if args.light and args.light.is_dir():
        for m in sorted(args.light.glob("*.onnx")):
            found.append((m.stem, m, None))
    order = ["resnet50", "mobilenet_v2", "bert_base", "gpt2_decode"]
    found.sort(key=lambda t: (order.index(t[0]) if t[0] in order else len(order), t[0]))
    if args.models:
        want = [w.strip() for w in args.models.split(",") if w.strip()]
        unknown = [w for w in want if w not in {f[0] for f in found}]
        if unknown:
            sys.exit(f"unknown models {unknown}; found {[f[0] for f in found]}")
        found = [f for f in found if f[0] in want]
    return found


def make_inputs(model: Path, dest: Path, seed: int) -> None:
    """Random inputs from the model's declared input types (free dims become 1)."""
    import onnx
    from onnx import helper

    m = onnx.load(str(model), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        t = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in t.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[inp.name] = rng.integers(0, 2, shape).astype(dtype)
    np.savez(dest, **feeds)


def series_spec(args, engine: str, level: str, model: Path, inputs: Path, threads: int, work: Path, tag: str,
                keep_outputs: bool) -> tuple[dict, Path, dict]:
    spec = {
        "engine": engine,
        "level": level,
        "model": str(model),
        "inputs": str(inputs),
        "threads": threads,
        "warmup": args.warmup,
        "seconds": args.seconds,
        "min_runs": args.min_runs,
        "max_runs": args.max_runs,
        "ort_config": args.ort_config,
        "result": str(work / f"{tag}.json"),
        "outputs": str(work / f"{tag}.out.npz") if keep_outputs else None,
        "turns": args.turns,
    }
    spec_path = work / f"{tag}.spec.json"
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ)
    onyx_path = args.baseline_onyx_path if engine == "onyx_baseline" else args.onyx_path
    if engine.startswith("onyx") and onyx_path:
        env["PYTHONPATH"] = os.pathsep.join([str(onyx_path), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # Each engine sizes its own pool from intra_op_num_threads; keep OpenMP/BLAS
    # pools that a library might start from adding threads.
    env.setdefault("OMP_NUM_THREADS", str(threads))
    return spec, spec_path, env


def series_result(spec: dict, p: subprocess.Popen, status: int, usage, log: Path, keep_outputs: bool) -> dict:
    p.returncode = os.waitstatus_to_exitcode(status)
    res_path = Path(spec["result"])
    res = json.loads(res_path.read_text()) if res_path.exists() else {"ok": False}
    res["maxrss_mib"] = usage.ru_maxrss / 1024.0  # Linux reports KiB
    if p.returncode != 0:
        res["ok"] = False
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        res.setdefault("error", f"process exited with {p.returncode}: " + " | ".join(tail))
    if keep_outputs:
        res["outputs_file"] = spec["outputs"]
    return res


def run_series(args, engine: str, level: str, model: Path, inputs: Path, threads: int, work: Path, tag: str,
               keep_outputs: bool) -> dict:
    """One series in a process of its own, alone on the machine."""
    spec, spec_path, env = series_spec(args, engine, level, model, inputs, threads, work, tag, keep_outputs)
    spec["turns"] = 1
    spec_path.write_text(json.dumps(spec))
    log = work / f"{tag}.log"
    with open(log, "wb") as f:
        p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", str(spec_path)], stdout=f,
                             stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(p.pid, 0)
    return series_result(spec, p, status, usage, log, keep_outputs)


def run_series_pair(args, sides: list[tuple[str, str, str]], model: Path, inputs: Path, threads: int, work: Path,
                    rep: int, name: str, keep_outputs: bool) -> dict[str, dict]:
    """One series per engine, each in its own process, taking turns: both
    processes create their session and warm up (one after the other), then
    run --turns turns each, alternating (the first of each pair of turns
    alternates too), with a pause between turns so that the threads of the
    one that just ran are asleep before the other starts. A change of machine
    speed over the series then hits both engines alike."""
    procs = {}
    for side, engine, level in sides:
        tag = f"{name}_{threads}_{side}_{rep}"
        spec, spec_path, env = series_spec(args, engine, level, model, inputs, threads, work, tag, keep_outputs)
        log = work / f"{tag}.log"
        err = open(log, "wb")
        p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", str(spec_path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
        line = p.stdout.readline()  # "ready" once created and warm, or nothing if it failed
        procs[side] = (spec, p, log, err, bool(line.strip()))
        time.sleep(args.turn_pause)
    alive = [side for side, *_ in sides if procs[side][4]]
    if len(alive) == len(sides):
        for turn in range(args.turns):
            order = alive if turn % 2 == 0 else alive[::-1]
            for side in order:
                p = procs[side][1]
                p.stdin.write("turn\n")
                p.stdin.flush()
                if not p.stdout.readline().strip():
                    alive.remove(side)
                    break
                time.sleep(args.turn_pause)
            if len(alive) != len(sides):
                break
    out = {}
    for side, *_ in sides:
        spec, p, log, err, _ = procs[side]
        try:
            p.stdin.write("done\n")
            p.stdin.close()
        except OSError:
            pass  # it already exited (failed)
        _, status, usage = os.wait4(p.pid, 0)
        err.close()
        out[side] = series_result(spec, p, status, usage, log, keep_outputs)
    return out


def compare(ref_file: str, got_file: str) -> tuple[bool, float, float, str]:
    """(all outputs within rtol/atol, max abs diff, max |reference|, first mismatch)."""
    ref = np.load(ref_file)
    got = np.load(got_file)
    ok, worst, scale, why = True, 0.0, 0.0, ""
    for k in ref.files:
        a, b = ref[k], got[k] if k in got.files else None
        if b is None or a.shape != b.shape:
            return False, math.inf, math.nan, f"output {k}: shape {None if b is None else b.shape}, expected {a.shape}"
        if a.dtype.kind in "fc":
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
            nan_mismatch = bool(np.any(np.isnan(a) != np.isnan(b)))
            m = float(np.nanmax(d)) if d.size else 0.0
            scale = max(scale, float(np.nanmax(np.abs(a))) if a.size else 0.0)
            worst = max(worst, m)
            close = np.allclose(b, a, rtol=RTOL, atol=ATOL, equal_nan=True) and not nan_mismatch
        else:
            close = np.array_equal(a, b)
            if not close:
                worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))))
        if not close and ok:
            ok, why = False, f"output {k}"
    return ok, worst, scale, why


def series_summary(rs: list[dict]) -> dict | None:
    good = [r for r in rs if r.get("ok")]
    if not good:
        return None
    meds = [r["median_ms"] for r in good]
    return {
        "median_ms": statistics.median(meds),
        "series_ms": meds,
        "runs": [r["runs"] for r in good],
        "create_s": statistics.median(r["create_s"] for r in good),
        "maxrss_mib": max(r["maxrss_mib"] for r in good),
        "version": good[0].get("version"),
        "built": good[0].get("built"),
    }


def machine_info() -> dict:
    info = {"model": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name":
                info["model"] = v.strip()
            elif k.strip() == "CPU(s)":
                info["cpus"] = int(v.strip())
            elif k.strip() == "Core(s) per socket":
                info["cores_per_socket"] = int(v.strip())
            elif k.strip() == "Socket(s)":
                info["sockets"] = int(v.strip())
            elif k.strip() == "Flags":
                flags = set(v.split())
                info["isa"] = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in flags)
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
        return head + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fmt_ms(s: dict | None) -> str:
    if s is None:
        return "FAIL"
    lo, hi = min(s["series_ms"]), max(s["series_ms"])
    return f"{s['median_ms']:.2f} ({lo:.2f}–{hi:.2f})" if len(s["series_ms"]) > 1 else f"{s['median_ms']:.2f}"


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def render(args, rows: list[dict], meta: dict) -> str:
    """The Markdown block written into docs/performance.md."""
    levels = args.onyx_level == "disable"
    baseline = args.baseline_onyx_path is not None
    a_name, b_name = ("onyx DISABLE_ALL", "onyx ALL") if levels else ("onnxruntime", "onyx")
    if baseline:
        a_name, b_name = "onyx baseline", "onyx"
    L = []
    if levels:
        L.append("### Graph optimizer: onyx at ORT_ENABLE_ALL against ORT_DISABLE_ALL\n")
    elif baseline:
        L.append(f"### onyx against another build of onyx ({args.baseline_onyx_path})\n")
    else:
        L.append("### onyx against onnxruntime\n")
    m = meta["machine"]
    L.append(
        f"Machine: {m.get('model')}, {m.get('cpus')} CPUs ({m.get('isa', '')}), shared with other work "
        f"(load average {meta['load_start']:.2f} at the start, {meta['load_end']:.2f} at the end). "
        f"Date: {meta['date']}. onyx {meta['onyx']} (library built {meta.get('onyx_built', '?')}; "
        f"the repository was at {meta['commit']} when the run started), onnxruntime {meta['onnxruntime']}, "
        f"torch {meta['torch']}, transformers {meta['transformers']}, Python {platform.python_version()}."
    )
    L.append("")
    L.append(f"Command: `{meta['command']}`")
    L.append("")
    L.append(
        f"Latency is the median of {args.repeats} series' medians, each series a fresh process "
        f"({args.warmup} warmup runs, then {args.min_runs}–{args.max_runs} timed runs filling about {args.seconds:g} s"
        + (f", in {args.turns} turns taken with the other engine's series, the series' median being the median of its "
           f"turns' medians), the engines' processes alternating turn by turn with {args.turn_pause:g} s between turns; "
           if args.turns > 1 else "), the engines alternating series by series; ")
        + "the range is the lowest and highest series median. "
        + ("Ratio = ALL / DISABLE_ALL latency (below 1: the optimizer helps). " if levels
           else "Ratio = onyx / baseline latency (below 1: this build is faster). " if baseline
           else "Ratio = onyx / onnxruntime latency (below 1: onyx is faster). ")
        + "Create = session creation; RSS = peak resident memory of the series' process, Python and numpy included. "
        + f"Outputs compared with rtol {RTOL:g}, atol {ATOL:g}, {a_name} as the reference."
    )
    L.append("")
    L.append(f"| model | threads | {a_name} ms | {b_name} ms | ratio | create {a_name} s | create {b_name} s | RSS {a_name} MiB | RSS {b_name} MiB | max abs diff | max \\|ref\\| | match |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        a, b = r["a"], r["b"]
        ratio = f"{b['median_ms'] / a['median_ms']:.2f}" if a and b else "—"
        diff = "—" if r.get("max_abs_diff") is None else f"{r['max_abs_diff']:.2e}"
        match = r.get("match", "—")
        cells = [
            r["model"], str(r["threads"]), fmt_ms(a), fmt_ms(b), ratio,
            f"{a['create_s']:.2f}" if a else "—", f"{b['create_s']:.2f}" if b else "—",
            f"{a['maxrss_mib']:.0f}" if a else "—", f"{b['maxrss_mib']:.0f}" if b else "—",
            diff, "—" if r.get("max_abs_ref") is None else f"{r['max_abs_ref']:.3g}", match,
        ]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    for t in args.thread_list:
        ratios = [r["b"]["median_ms"] / r["a"]["median_ms"] for r in rows if r["threads"] == t and r["a"] and r["b"]]
        n_all = sum(1 for r in rows if r["threads"] == t)
        L.append(f"- Geometric mean of the ratios at {t} thread{'s' if t > 1 else ''}: **{geomean(ratios):.3f}** over {len(ratios)} of {n_all} models.")
    fails = [r for r in rows if r.get("errors")]
    if fails:
        L.append("")
        L.append("Failures:")
        L.append("")
        for r in fails:
            for who, err in r["errors"]:
                L.append(f"- {r['model']} ({r['threads']} thread{'s' if r['threads'] > 1 else ''}), {who}: `{err[:400]}`")
    L.append("")
    return "\n".join(L)


SECTION_INTRO = """## Models

Whole-model latency of onyx against onnxruntime on the CPU, measured with
`bench/run_models.py` on the zoo that `bench/zoo/make_zoo.py` builds
(torchvision ResNet-50 and MobileNetV2, transformers BERT-base and a GPT-2 small
decode step, all with seeded random weights and exported with torch.onnx) and the
light CNNs of `shared/onnx-backend-data/light`. See bench/README.md for how to
rerun it. The tables below are written by the script.
"""


def update_doc(doc: Path, key: str, block: str) -> None:
    """Replaces this script's block `key` inside the "## Models" section, leaving
    the rest of the file as it is; creates the section (or file) when missing."""
    begin, end = f"<!-- run_models:{key} begin -->", f"<!-- run_models:{key} end -->"
    body = f"{begin}\n{block}\n{end}\n"
    text = doc.read_text() if doc.exists() else ""
    lines = text.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip() == "## Models"), None)
    if start is None:
        sep = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_text(text + sep + SECTION_INTRO + "\n" + body)
        return
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = "".join(lines[start:stop])
    if begin in section and end in section:
        a = section.index(begin)
        b = section.index(end) + len(end)
        if section[b : b + 1] == "\n":
            b += 1
        section = section[:a] + body + section[b:]
    else:
        if not section.endswith("\n\n"):
            section = section.rstrip("\n") + "\n\n"
        section += body
    if stop < len(lines) and not section.endswith("\n\n"):
        section += "\n"
    doc.write_text("".join(lines[:start]) + section + "".join(lines[stop:]))


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child_main(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated model names (default: every zoo and light model)")
    ap.add_argument("--threads", default="1,2", help="intra-op thread counts (default 1,2)")
    ap.add_argument("--repeats", type=int, default=3, help="series per engine, model and thread count (default 3)")
    ap.add_argument("--seconds", type=float, default=3.0, help="timed seconds per series (default 3)")
    ap.add_argument("--turns", type=int, default=10,
                    help="turns per series: the two engines' processes take turns, each timing its share of the runs "
                         "(default 10; 1: each series alone, one after the other)")
    ap.add_argument("--turn-pause", type=float, default=0.05, help="seconds between turns (default 0.05)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs before timing (default 3)")
    ap.add_argument("--min-runs", type=int, default=10)
    ap.add_argument("--max-runs", type=int, default=500)
    ap.add_argument("--baseline-onyx-path", type=Path, default=None,
                    help="measure the onyx build whose package is in this folder against --onyx-path's instead of onnxruntime")
    ap.add_argument("--onyx-level", choices=["all", "disable"], default="all",
                    help="all: onyx (ORT_ENABLE_ALL) against onnxruntime; disable: onyx ORT_DISABLE_ALL against onyx ORT_ENABLE_ALL")
    ap.add_argument("--ort-config", action="append", default=[], metavar="KEY=VALUE",
                    help="an onnxruntime session config entry, e.g. session.intra_op.allow_spinning=0 (repeatable)")
    ap.add_argument("--onyx-path", type=Path, default=None,
                    help="folder put first on PYTHONPATH for onyx (e.g. build/python); default: the installed onyx")
    ap.add_argument("--zoo", type=Path, default=ZOO, help="folder of the zoo models (default bench/zoo/models)")
    ap.add_argument("--light", type=Path, default=LIGHT, help="folder of the light CNNs (default ../shared/onnx-backend-data/light)")
    ap.add_argument("--doc", type=Path, default=DOC, help="Markdown file whose '## Models' section gets the table")
    ap.add_argument("--no-doc", action="store_true", help="print the table only")
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.thread_list = [int(t) for t in args.threads.split(",")]
    if args.onyx_path is None and (REPO / "build" / "python" / "onyx").is_dir():
        args.onyx_path = REPO / "build" / "python"

    models = find_models(args)
    if not models:
        sys.exit(f"no models: run bench/zoo/make_zoo.py first (looked in {args.zoo} and {args.light})")
    if args.baseline_onyx_path is not None:
        engines = [("a", "onyx_baseline", "all"), ("b", "onyx", "all")]
        args.no_doc = True  # a check of a change, not the project's table
    elif args.onyx_level == "disable":
        engines = [("a", "onyx", "disable"), ("b", "onyx", "all")]
    else:
        engines = [("a", "onnxruntime", "all"), ("b", "onyx", "all")]
    label = {"a": engines[0], "b": engines[1]}

    meta = {
        "date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": machine_info(),
        "commit": git_commit(),
        "onnxruntime": package_version("onnxruntime"),
        "torch": package_version("torch"),
        "transformers": package_version("transformers"),
        "load_start": os.getloadavg()[0],
        "command": "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
    }
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="onyx_bench_") as tmp:
        work = Path(tmp)
        for name, model, npz in models:
            if npz is None:
                npz = work / f"{name}.inputs.npz"
                make_inputs(model, npz, args.seed)
            for threads in args.thread_list:
                got: dict[str, list[dict]] = {"a": [], "b": []}
                for rep in range(args.repeats):
                    order = ["a", "b"] if rep % 2 == 0 else ["b", "a"]
                    if args.turns > 1:
                        results = run_series_pair(args, [(side, *label[side][1:]) for side in order], model, npz,
                                                  threads, work, rep, name, keep_outputs=(rep == 0))
                    else:
                        results = {}
                        for side in order:
                            _, engine, level = label[side]
                            results[side] = run_series(args, engine, level, model, npz, threads, work,
                                                       f"{name}_{threads}_{side}_{rep}", keep_outputs=(rep == 0))
                    failed = False
                    for side in order:
                        _, engine, level = label[side]
                        r = results[side]
                        got[side].append(r)
                        status = f"{r['median_ms']:.2f} ms ({r['runs']} runs), create {r['create_s']:.2f} s, rss {r['maxrss_mib']:.0f} MiB" if r.get("ok") else f"FAILED: {r.get('error')}"
                        print(f"{name} t={threads} {engine}/{level} #{rep}: {status}", flush=True)
                        failed = failed or not r.get("ok")
                    if failed:
                        break  # the same failure again teaches nothing
                row = {"model": name, "threads": threads, "a": series_summary(got["a"]), "b": series_summary(got["b"]), "errors": []}
                for side in ("a", "b"):
                    errs = sorted({r["error"] for r in got[side] if not r.get("ok") and r.get("error")})
                    for e in errs:
                        _, engine, level = label[side]
                        row["errors"].append((f"{engine}" + (f" {level}" if args.onyx_level == "disable" else ""), e))
                ra, rb = got["a"][0], got["b"][0]
                if ra.get("ok") and rb.get("ok"):
                    ok, worst, scale, why = compare(ra["outputs_file"], rb["outputs_file"])
                    row["max_abs_diff"], row["max_abs_ref"] = worst, scale
                    row["match"] = "yes" if ok else f"**no** ({why})"
                    if not ok:
                        names = ra.get("output_names") or []
                        idx = int(why.split("o")[-1]) if why.startswith("output o") else None
                        if idx is not None and idx < len(names):
                            row["match"] = f"**no** (output {names[idx]})"
                rows.append(row)
                print(f"== {name} t={threads}: match={row.get('match')} max_abs_diff={row.get('max_abs_diff')}", flush=True)
    meta["load_end"] = os.getloadavg()[0]
    versions = [r["b"]["version"] for r in rows if r["b"] and r["b"].get("version")]
    meta["onyx"] = versions[0] if versions else "unknown"
    built = [r["b"]["built"] for r in rows if r["b"] and r["b"].get("built")]
    meta["onyx_built"] = built[0] if built else "?"
    if args.onyx_level == "all" and args.baseline_onyx_path is None:
        ort_v = [r["a"]["version"] for r in rows if r["a"] and r["a"].get("version")]
        if ort_v:
            meta["onnxruntime"] = ort_v[0]
    block = render(args, rows, meta)
    print()
    print(block)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    if not args.no_doc:
        update_doc(args.doc, "levels" if args.onyx_level == "disable" else "compare", block)
        print(f"written to {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
