"""One training step (forward + backward + AdamW update) of the digits MLP
and CNN (examples/train_digits.py) at batch 64, onyx.training beside
PyTorch, on one thread:

    python bench/train_step.py [--steps 200] [--batch 64]

onyx's step is Module(x, labels) + Optimizer.step() + lazy_reset_grad();
PyTorch's is zero_grad, forward, cross-entropy, backward, AdamW.step(), with
the same initial weights and hyperparameters (the first losses printed
should agree). Prints the median and the 10th-90th percentile of each, in
milliseconds. Without torch installed it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import train_digits  # noqa: E402  (puts build/python on the path when onyx is not installed)
from onnx import numpy_helper  # noqa: E402

import onyx  # noqa: E402

LR = 0.01


def batches(kind, x, y, batch, count, mse=False, seed=0):
    """Batches of images and labels (one-hot float targets for MSE)."""
    rng = np.random.default_rng(seed)
    eye = np.eye(train_digits.CLASSES, dtype=np.float32)
    for _ in range(count):
        i = rng.choice(len(x), batch, replace=False)
        yield train_digits.as_input(kind, x[i]), (eye[y[i]] if mse else y[i])


def time_onyx(kind, data, batch, steps, warmup, mse):
    folder = tempfile.mkdtemp(prefix=f"train_step_{kind}_")
    loss = train_digits.artifacts.LossType.MSELoss if mse else train_digits.artifacts.LossType.CrossEntropyLoss
    train_digits.make_artifacts(kind, folder, loss=loss)
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    _, module, optimizer = train_digits.open_artifacts(folder, options)
    optimizer.set_learning_rate(LR)
    times, first = [], None
    for k, (xb, yb) in enumerate(batches(kind, data[0], data[1], batch, warmup + steps, mse)):
        start = time.perf_counter()
        loss, _ = module(xb, yb)
        optimizer.step()
        module.lazy_reset_grad()
        elapsed = time.perf_counter() - start
        first = float(loss) if first is None else first
        if k >= warmup:
            times.append(elapsed)
    return np.array(times) * 1e3, first


def torch_model(kind, torch):
    nn = torch.nn
    model = train_digits.build_cnn() if kind == "cnn" else train_digits.build_mlp()
    w = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    if kind == "mlp":
        net = nn.Sequential(nn.Linear(64, w["fc1.weight"].shape[1]), nn.ReLU(), nn.Linear(w["fc2.weight"].shape[0], 10))
        pairs = [(net[0], "fc1"), (net[2], "fc2")]
    else:
        channels = w["conv.weight"].shape[0]
        net = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(channels * 16, 10))
        with torch.no_grad():
            net[0].weight.copy_(w["conv.weight"])
            net[0].bias.copy_(w["conv.bias"])
        pairs = [(net[4], "fc")]
    with torch.no_grad():
        for layer, name in pairs:  # Gemm weights are [in, out]; Linear's are [out, in]
            layer.weight.copy_(w[f"{name}.weight"].T)
            layer.bias.copy_(w[f"{name}.bias"])
    return net


def time_torch(kind, data, batch, steps, warmup, mse, torch):
    net = torch_model(kind, torch)
    optimizer = torch.optim.AdamW(net.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    loss_fn = torch.nn.MSELoss() if mse else torch.nn.CrossEntropyLoss()
    times, first = [], None
    for k, (xb, yb) in enumerate(batches(kind, data[0], data[1], batch, warmup + steps, mse)):
        xt, yt = torch.from_numpy(xb), torch.from_numpy(yb)
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net(xt), yt)
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        first = loss.item() if first is None else first
        if k >= warmup:
            times.append(elapsed)
    return np.array(times) * 1e3, first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--loss", choices=["ce", "mse"], default="ce",
                        help="cross-entropy on the labels, or MSE on one-hot targets")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"PyTorch is not installed ({error}); nothing to compare with. Install torch to run this benchmark.")
        return 0
    torch.set_num_threads(1)
    data = train_digits.load_data(0)
    rows = []
    for kind in args.models.split(","):
        mse = args.loss == "mse"
        try:
            o, o_first = time_onyx(kind, data, args.batch, args.steps, args.warmup, mse)
        except Exception as error:  # noqa: BLE001 - e.g. an op without a gradient rule in this build
            print(f"{kind}: onyx cannot train it: {error}")
            continue
        t, t_first = time_torch(kind, data, args.batch, args.steps, args.warmup, mse, torch)
        rows.append((kind, o, t, o_first, t_first))
    print(f"one training step (forward + {args.loss} loss + backward + AdamW), batch {args.batch}, 1 thread, "
          f"median of {args.steps} steps [p10-p90], ms")
    print(f"{'model':6} {'onyx':>22} {'PyTorch ' + torch.__version__:>24} {'onyx/PyTorch':>13} {'first loss onyx/torch':>22}")
    for kind, o, t, of, tf in rows:
        def cell(a):
            return f"{np.median(a):7.3f} [{np.percentile(a, 10):.3f}-{np.percentile(a, 90):.3f}]"
        print(f"{kind:6} {cell(o):>22} {cell(t):>24} {np.median(o) / np.median(t):12.2f}x {of:10.4f}/{tf:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
