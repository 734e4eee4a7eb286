"""Trains an MLP and a small CNN from scratch on scikit-learn's digits (1,797
8x8 images, 10 classes) with onyx.training, onnxruntime's on-device training
API shape:

    python examples/train_digits.py [--model mlp|cnn|both] [--epochs N] [--out DIR]

The forward models are built with onnx.helper from random weights;
generate_artifacts adds the cross-entropy loss, the Gradient node and an
AdamW optimizer model. Each epoch prints a progress line on stderr
(``epoch 3/20 [#####.....] loss 0.12 acc 0.97``); at the end the script
reports test accuracy, exports the inference model with the trained weights
and checks that onnxruntime (when installed) predicts the same classes.

The builders and the training loop are importable (tests/python and
bench/train_step.py use them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

try:
    import onyx  # noqa: F401
except ImportError:  # run from a checkout: use the build tree's package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))

from onnx import TensorProto, helper, numpy_helper

from onyx.training import artifacts
from onyx.training.api import CheckpointState, Module, Optimizer

OPSET = 17
IR_VERSION = 8
CLASSES = 10


def load_data(seed: int = 0, test_fraction: float = 0.2):
    """(x_train, y_train, x_test, y_test): images scaled to [0, 1] as float32
    [N, 64], labels int64; a fixed shuffled split."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    n_test = int(round(len(x) * test_fraction))
    return x[n_test:], y[n_test:], x[:n_test], y[:n_test]


def _he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def _model(nodes, inputs, outputs, initializers, name):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="train_digits")
    model.ir_version = IR_VERSION
    return model


def build_mlp(seed: int = 0, hidden: int = 64):
    """x [N, 64] -> Gemm -> Relu -> Gemm -> logits [N, 10]."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(_he(rng, (64, hidden), 64), "fc1.weight"),
        numpy_helper.from_array(np.zeros(hidden, np.float32), "fc1.bias"),
        numpy_helper.from_array(_he(rng, (hidden, CLASSES), hidden), "fc2.weight"),
        numpy_helper.from_array(np.zeros(CLASSES, np.float32), "fc2.bias"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"]),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["logits"]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])], inits, "digits_mlp")


def build_cnn(seed: int = 0, channels: int = 16):
    """x [N, 1, 8, 8] -> Conv 3x3 -> Relu -> MaxPool 2x2 -> Flatten -> Gemm -> logits [N, 10]."""
    rng = np.random.default_rng(seed)
    flat = channels * 4 * 4
    inits = [
        numpy_helper.from_array(_he(rng, (channels, 1, 3, 3), 9), "conv.weight"),
        numpy_helper.from_array(np.zeros(channels, np.float32), "conv.bias"),
        numpy_helper.from_array(_he(rng, (flat, CLASSES), flat), "fc.weight"),
        numpy_helper.from_array(np.zeros(CLASSES, np.float32), "fc.bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])], inits, "digits_cnn")


def as_input(kind: str, x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.reshape(-1, 1, 8, 8)) if kind == "cnn" else x


def make_artifacts(kind: str, folder: str, seed: int = 0, optimizer=artifacts.OptimType.AdamW,
                   loss=artifacts.LossType.CrossEntropyLoss) -> None:
    model = build_cnn(seed) if kind == "cnn" else build_mlp(seed)
    artifacts.generate_artifacts(
        model,
        requires_grad=[t.name for t in model.graph.initializer],
        loss=loss,
        optimizer=optimizer,
        artifact_directory=folder,
        additional_output_names=["logits"],
    )


def open_artifacts(folder: str, session_options=None, checkpoint: str | None = None):
    state = CheckpointState.load_checkpoint(checkpoint or os.path.join(folder, "checkpoint"))
    module = Module(os.path.join(folder, "training_model.onnx"), state, os.path.join(folder, "eval_model.onnx"),
                    session_options=session_options)
    optimizer = Optimizer(os.path.join(folder, "optimizer_model.onnx"), module)
    return state, module, optimizer


def progress(epoch: int, epochs: int, done: int, total: int, loss: float, acc: float, width: int = 20) -> str:
    filled = int(round(width * done / max(1, total)))
    return f"epoch {epoch}/{epochs} [{'#' * filled}{'.' * (width - filled)}] loss {loss:.4f} acc {acc:.4f}"


def evaluate(module: Module, kind: str, x: np.ndarray, y: np.ndarray, batch: int = 256):
    """(mean loss, accuracy, predictions) of the module in eval mode."""
    module.eval()
    losses, preds = [], []
    for i in range(0, len(x), batch):
        loss, logits = module(as_input(kind, x[i:i + batch]), y[i:i + batch])
        losses.append(float(loss) * len(logits))
        preds.append(np.argmax(logits, axis=1))
    module.train()
    pred = np.concatenate(preds)
    return sum(losses) / len(x), float(np.mean(pred == y)), pred


def train(kind: str, folder: str, epochs: int = 20, batch: int = 64, lr: float = 0.01, seed: int = 0,
          data=None, session_options=None, verbose: bool = True):
    """Trains from the artifacts in `folder`; returns (state, module, test accuracy)."""
    x_train, y_train, x_test, y_test = data if data is not None else load_data(seed)
    state, module, optimizer = open_artifacts(folder, session_options)
    optimizer.set_learning_rate(lr)
    module.train()
    tty = verbose and sys.stderr.isatty()
    steps = (len(x_train) + batch - 1) // batch
    for epoch in range(1, epochs + 1):
        order = np.random.default_rng((seed, epoch)).permutation(len(x_train))
        total_loss, correct, seen = 0.0, 0, 0
        start = time.perf_counter()
        for step in range(steps):
            idx = order[step * batch:(step + 1) * batch]
            loss, logits = module(as_input(kind, x_train[idx]), y_train[idx])
            optimizer.step()
            module.lazy_reset_grad()
            total_loss += float(loss) * len(idx)
            correct += int(np.sum(np.argmax(logits, axis=1) == y_train[idx]))
            seen += len(idx)
            if tty:
                print("\r" + progress(epoch, epochs, step + 1, steps, total_loss / seen, correct / seen),
                      end="", file=sys.stderr, flush=True)
        if verbose:
            line = progress(epoch, epochs, steps, steps, total_loss / seen, correct / seen)
            print(("\r" if tty else "") + f"{line} ({time.perf_counter() - start:.2f} s)", file=sys.stderr, flush=True)
    _, acc, _ = evaluate(module, kind, x_test, y_test)
    return state, module, acc


def check_export(module: Module, kind: str, path: str, x_test: np.ndarray, y_test: np.ndarray) -> float:
    """Exports the inference model and returns onnxruntime's test accuracy on
    it (onyx's when onnxruntime is missing); checks it predicts as Module does."""
    module.export_model_for_inferencing(path, ["logits"])
    _, _, pred = evaluate(module, kind, x_test, y_test)
    try:
        import onnxruntime as runtime

        name = "onnxruntime"
    except ImportError:
        import onyx as runtime

        name = "onyx"
    session = runtime.InferenceSession(path, providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], {"x": as_input(kind, x_test)})[0]
    exported = np.argmax(logits, axis=1)
    agree = float(np.mean(exported == pred))
    print(f"  exported {os.path.basename(path)}: {name} test accuracy {np.mean(exported == y_test):.4f}, "
          f"agrees with Module on {agree:.2%} of the test set", file=sys.stderr)
    if agree != 1.0:
        raise SystemExit(f"the exported model disagrees with Module on {1 - agree:.2%} of the test set")
    return float(np.mean(exported == y_test))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="folder for the artifacts and the exported models (default: a temporary one)")
    args = parser.parse_args()
    data = load_data(args.seed)
    out = args.out or tempfile.mkdtemp(prefix="train_digits_")
    results = {}
    for kind in (["mlp", "cnn"] if args.model == "both" else [args.model]):
        folder = os.path.join(out, kind)
        make_artifacts(kind, folder, args.seed)
        print(f"{kind}: training on {len(data[0])} images, testing on {len(data[2])}", file=sys.stderr)
        start = time.perf_counter()
        _, module, acc = train(kind, folder, args.epochs, args.batch, args.lr, args.seed, data)
        print(f"{kind}: test accuracy {acc:.4f} after {args.epochs} epochs ({time.perf_counter() - start:.1f} s)",
              file=sys.stderr)
        check_export(module, kind, os.path.join(folder, f"{kind}_inference.onnx"), data[2], data[3])
        results[kind] = acc
    print(" ".join(f"{k} {v:.4f}" for k, v in results.items()))
    return 0 if all(v >= 0.95 for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
