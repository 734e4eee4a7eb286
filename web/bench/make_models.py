"""Models for onyx-web's benchmark (web/bench/), built here with onnx.helper:
nothing is downloaded.

    .venv/bin/python web/bench/make_models.py OUT_DIR

Writes OUT_DIR/mobilenet_v2.onnx: MobileNetV2 1.0 at 224x224 (torchvision's
layout: 3x3 stem, 17 inverted-residual blocks, 1x1 to 1280, global pooling,
a 1000-way classifier) with BatchNorm folded into the convolutions, as
exporters write it, and random He-initialised weights. SqueezeNet 1.1 comes
from ../shared/models/squeezenet_tensor_input.onnx.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (expansion t, output channels c, repeats n, first stride s), as in the paper.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    counter = [0]

    def conv(x: str, cin: int, cout: int, k: int, stride: int, groups: int = 1, relu6: bool = True) -> str:
        i = counter[0] = counter[0] + 1
        fan_in = cin // groups * k * k
        w = (rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.01).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, f"conv{i}.weight"), numpy_helper.from_array(b, f"conv{i}.bias")])
        pad = k // 2
        nodes.append(helper.make_node("Conv", [x, f"conv{i}.weight", f"conv{i}.bias"], [f"conv{i}"], group=groups,
                                      kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4))
        if not relu6:
            return f"conv{i}"
        nodes.append(helper.make_node("Clip", [f"conv{i}", "zero", "six"], [f"relu{i}"]))
        return f"relu{i}"

    inits += [numpy_helper.from_array(np.array(0, np.float32), "zero"),
              numpy_helper.from_array(np.array(6, np.float32), "six")]
    x = conv("input", 3, 32, 3, 2)
    cin = 32
    for t, c, n, s in BLOCKS:
        for r in range(n):
            stride = s if r == 0 else 1
            hidden = cin * t
            h = conv(x, cin, hidden, 1, 1) if t != 1 else x
            h = conv(h, hidden, hidden, 3, stride, groups=hidden)
            h = conv(h, hidden, c, 1, 1, relu6=False)
            if stride == 1 and cin == c:
                nodes.append(helper.make_node("Add", [x, h], [h + "_res"]))
                h = h + "_res"
            x, cin = h, c
    x = conv(x, cin, 1280, 1, 1)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], axis=1))
    w = (rng.standard_normal((1000, 1280)) * np.sqrt(1.0 / 1280)).astype(np.float32)
    inits += [numpy_helper.from_array(w, "fc.weight"), numpy_helper.from_array(np.zeros(1000, np.float32), "fc.bias")]
    nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1))
    graph = helper.make_graph(nodes, "mobilenet_v2", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="onyx web/bench")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/web-bench")
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(mobilenet_v2(), out / "mobilenet_v2.onnx")
    print(out / "mobilenet_v2.onnx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
