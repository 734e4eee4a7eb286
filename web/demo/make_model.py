"""Makes the demo's model and sample images: a small CNN trained here, with
onyx's own training API, on scikit-learn's handwritten digits (8x8, 10
classes; examples/train_digits.py), ending in Softmax so that it gives class
probabilities. Nothing is downloaded.

    PYTHONPATH=build/python .venv/bin/python web/demo/make_model.py

Writes web/demo/digits_cnn.onnx and web/demo/samples/digit_<label>.png (test
images the model did not train on, drawn dark on light and 32x larger, as a
photo or a scan of a digit would be).
"""

from __future__ import annotations

import os
import struct
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "examples"))

import train_digits  # noqa: E402


def write_png(path: Path, gray: np.ndarray) -> None:
    """An 8-bit grayscale PNG of `gray` (uint8, H x W)."""
    height, width = gray.shape
    rows = b"".join(b"\x00" + gray[y].tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def main() -> int:
    data = train_digits.load_data(0)
    with tempfile.TemporaryDirectory() as folder:
        train_digits.make_artifacts("cnn", folder, 0)
        _, module, accuracy = train_digits.train("cnn", folder, epochs=20, data=data, verbose=False)
        exported = os.path.join(folder, "cnn_inference.onnx")
        module.export_model_for_inferencing(exported, ["logits"])
        model = onnx.load(exported)
    model.graph.node.append(helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1))
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("probabilities", onnx.TensorProto.FLOAT, ["N", 10]))
    model.doc_string = ("Handwritten digit classifier for the onyx-web demo: input x [N, 1, 8, 8] in [0, 1] (ink 1, "
                        f"background 0), output probabilities [N, 10]. Test accuracy {accuracy:.4f} on "
                        "scikit-learn's digits.")
    onnx.checker.check_model(model)
    onnx.save(model, HERE / "digits_cnn.onnx")
    print(f"digits_cnn.onnx: test accuracy {accuracy:.4f}")

    samples = HERE / "samples"
    samples.mkdir(exist_ok=True)
    _, _, x_test, y_test = data
    for label in range(10):
        image = x_test[np.flatnonzero(y_test == label)[0]].reshape(8, 8)
        gray = (255 - np.round(image * 255)).astype(np.uint8)
        write_png(samples / f"digit_{label}.png", np.kron(gray, np.ones((32, 32), np.uint8)))
    return 0 if accuracy >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
