"""Robustness trial: corrupted model files and wrong feeds, each run by the
`onyx` command in its own process. A crash (death by signal) or a hang
(timeout) is a failure; a clear error exit is the expected outcome.

    python tests/robustness/corruption_trial.py --onyx build/onyx --count 500

Models come from ../shared/models and ../shared/onnx-backend-data when
present, else from the models that ship with this repository."""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def source_models(limit_node_cases=60):
    models = [os.path.join(ROOT, "models", "tiny_cnn.onnx")]
    shared = os.path.join(ROOT, "..", "shared")
    real = os.path.join(shared, "models")
    if os.path.isdir(real):
        # The big style-transfer model is slow to run per mutation; its reader
        # paths are the same as the others'.
        models += [os.path.join(real, f) for f in sorted(os.listdir(real))
                   if f.endswith(".onnx") and "candy" not in f]
    node = os.path.join(shared, "onnx-backend-data", "node")
    if os.path.isdir(node):
        cases = sorted(os.listdir(node))
        random.Random(7).shuffle(cases)
        models += [os.path.join(node, c, "model.onnx") for c in cases[:limit_node_cases]]
    return models


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.randrange(6)
    if kind == 0 and len(b) > 1:  # truncate
        return bytes(b[: rng.randrange(len(b))])
    if kind == 1:  # flip bytes
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind == 2:  # overwrite a run with random bytes
        i = rng.randrange(len(b))
        n = rng.randint(1, 64)
        b[i:i + n] = bytes(rng.randrange(256) for _ in range(n))
        return bytes(b)
    if kind == 3:  # a huge length prefix / varint
        i = rng.randrange(len(b))
        b[i:i] = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
        return bytes(b)
    if kind == 4:  # duplicate a slice (repeated fields, nested messages)
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 256))
        b[j:j] = b[i:j]
        return bytes(b)
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 512)))  # noise


def wrong_feed(model_path: str, rng: random.Random, folder: str):
    """An .npy with a wrong dtype or rank for the model's first input, if it has one."""
    kind = rng.randrange(3)
    if kind == 0:
        arr = np.zeros((2, 2), dtype=np.float64)
    elif kind == 1:
        arr = np.zeros((3,), dtype=np.int8)
    else:
        arr = np.zeros((1, 1, 1, 1, 1, 1, 1), dtype=np.float32)
    path = os.path.join(folder, "feed.npy")
    np.save(path, arr)
    return path


def first_input(onyx: str, model: str):
    out = subprocess.run([onyx, "inspect", model], capture_output=True, text=True, timeout=60).stdout
    lines = out.splitlines()
    if "inputs" in lines:
        i = lines.index("inputs") + 1
        if i < len(lines) and lines[i].startswith("  "):
            return lines[i].split()[0]
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onyx", default=os.path.join(ROOT, "build", "onyx"))
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    models = source_models()
    crashes, hangs, clean_errors, ran = [], [], 0, 0
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.count):
            model = rng.choice(models)
            if i % 5 == 4:  # a wrong feed for an intact model
                name = first_input(args.onyx, model)
                if name is None:
                    continue
                cmd = [args.onyx, "run", model, "--input", f"{name}={wrong_feed(model, rng, folder)}"]
                what = f"wrong feed for {model}"
            else:
                with open(model, "rb") as f:
                    data = mutate(f.read(), rng)
                path = os.path.join(folder, f"case{i}.onnx")
                with open(path, "wb") as f:
                    f.write(data)
                cmd = [args.onyx, "run", path, "-t", "1"]
                what = f"mutation {i} of {model}"
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=args.timeout)
            except subprocess.TimeoutExpired:
                hangs.append(what)
                continue
            ran += 1
            if p.returncode < 0:
                crashes.append(f"{what}: signal {-p.returncode}")
                keep = os.path.join(ROOT, "build", "crashes")
                os.makedirs(keep, exist_ok=True)
                if cmd[2].startswith(folder):
                    os.replace(cmd[2], os.path.join(keep, os.path.basename(cmd[2])))
            elif p.returncode != 0:
                clean_errors += 1
                if "error" not in p.stderr.lower():
                    crashes.append(f"{what}: exit {p.returncode} without an error message")
    print(f"trial: {ran} runs, {clean_errors} clean errors, {len(crashes)} crashes, {len(hangs)} hangs")
    for c in crashes + hangs:
        print("  ", c)
    return 1 if crashes or hangs else 0


if __name__ == "__main__":
    sys.exit(main())
