"""QDQ and dynamic-quantization fusions on models onnxruntime.quantization
writes: a small CNN (conv, relu, maxpool, residual add, global average pool,
gemm) and a transformer-style MLP block, quantized by quantize_static (QDQ,
per tensor and per channel, uint8 and int8 activations) and by
quantize_dynamic. onyx with the fusions on must show the fused ops in the
model it saves, match onyx with them off and onnxruntime (ORT_ENABLE_ALL, its
own QDQ fusions) on the same file, and the saved model must run in
onnxruntime with onyx's outputs.

Tolerances, in quanta of the model's output scale: a fused kernel
requantizes the exact int32 sum once, while the QDQ graph rounds the float
products and sums first, so a value within float rounding of a .5 boundary
may land one quantum apart; onnxruntime's kernels differ from onyx's the
same way (fixed-point vs float requantization). The tests allow one quantum
in at most 5% of the elements (on these models and inputs all three
comparisons are exact today)."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
onyx = pytest.importorskip("onyx")
quantization = pytest.importorskip("onnxruntime.quantization")


def _init(name, array):
    return numpy_helper.from_array(array.astype(np.float32), name)


def small_cnn():
    """conv+relu -> maxpool -> conv+relu -> residual add -> conv -> GAP -> flatten -> gemm."""
    r = np.random.default_rng(1)
    inits = [_init("w1", r.normal(0, 0.3, (8, 3, 3, 3))), _init("b1", r.normal(0, 0.1, 8)),
             _init("w2", r.normal(0, 0.2, (8, 8, 3, 3))), _init("b2", r.normal(0, 0.1, 8)),
             _init("w3", r.normal(0, 0.2, (16, 8, 1, 1))), _init("b3", r.normal(0, 0.1, 16)),
             _init("wf", r.normal(0, 0.3, (10, 16))), _init("bf", r.normal(0, 0.1, 10))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Add", ["r2", "p1"], ["s"], name="residual"),
             helper.make_node("Conv", ["s", "w3", "b3"], ["c3"], name="conv3"),
             helper.make_node("GlobalAveragePool", ["c3"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp_block():
    """x -> MatMul+Add -> Sigmoid*x (SiLU) -> MatMul+Add -> residual Add -> MatMul."""
    r = np.random.default_rng(2)
    inits = [_init("w1", r.normal(0, 0.25, (16, 32))), _init("b1", r.normal(0, 0.1, 32)),
             _init("w2", r.normal(0, 0.2, (32, 16))), _init("b2", r.normal(0, 0.1, 16)),
             _init("w3", r.normal(0, 0.2, (16, 8)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="up_bias"),
             helper.make_node("Sigmoid", ["hb"], ["sg"], name="sigmoid"),
             helper.make_node("Mul", ["hb", "sg"], ["act"], name="silu"),
             helper.make_node("MatMul", ["act", "w2"], ["d"], name="down"),
             helper.make_node("Add", ["d", "b2"], ["db"], name="down_bias"),
             helper.make_node("Add", ["db", "x"], ["res"], name="residual"),
             helper.make_node("MatMul", ["res", "w3"], ["y"], name="head")]
    graph = helper.make_graph(nodes, "mlp_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


MODELS = {"small_cnn": (small_cnn, (1, 3, 16, 16)), "mlp_block": (mlp_block, (2, 4, 16))}


class _Reader(quantization.CalibrationDataReader):
    def __init__(self, shape, count=8, seed=5):
        rng = np.random.default_rng(seed)
        self._data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self):
        return next(self._data, None)


def quantize_static(tmp_path, name, per_channel, activation):
    build, shape = MODELS[name]
    src, dst = str(tmp_path / f"{name}.onnx"), str(tmp_path / f"{name}_qdq.onnx")
    onnx.save(build(), src)
    # reduce_range (7-bit weights): onnxruntime's AVX2 uint8 x int8 kernels
    # add pairs of products in int16 and saturate with full-range weights
    # (docs/quantization.md), which would make it the odd one out here.
    quantization.quantize_static(src, dst, _Reader(shape), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=per_channel, reduce_range=True, activation_type=activation,
                                 weight_type=quantization.QuantType.QInt8)
    return dst, shape


def output_scale(path):
    """The scale of the DequantizeLinear writing the graph output."""
    model = onnx.load(path)
    out = model.graph.output[0].name
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.output[0] == out and node.op_type == "DequantizeLinear":
            return float(inits[node.input[1]])
    raise AssertionError("the graph output is not written by a DequantizeLinear")


def run_onyx(path, x, saved=None, fusions=True):
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    if saved:
        options.optimized_model_filepath = saved
    if not fusions:
        options.add_session_config_entry("session.disable_quant_qdq", "1")
    # The fusions are the CPU provider's passes (and a model part that a device
    # provider compiled could not be saved).
    return np.asarray(onyx.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])


def run_ort(path, x, level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.intra_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def ops_of(path):
    return collections.Counter((n.domain, n.op_type) for n in onnx.load(path).graph.node)


def assert_within_quanta(got, expected, quantum, max_quanta, max_share, what):
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64)) / quantum
    assert diff.max() <= max_quanta + 1e-3, f"{what}: {diff.max():.2f} quanta apart"
    share = float(np.mean(diff > 1e-3))
    assert share <= max_share, f"{what}: {share:.1%} of the elements differ"


EXPECTED_FUSED = {
    "small_cnn": {("", "QLinearConv"): 3, ("com.microsoft", "QLinearAdd"): 1,
                  ("com.microsoft", "QLinearGlobalAveragePool"): 1, ("com.microsoft", "QGemm"): 1,
                  ("", "MaxPool"): 1, ("", "Flatten"): 1},
    "mlp_block": {("", "QLinearMatMul"): 3, ("com.microsoft", "QLinearAdd"): 3,
                  ("com.microsoft", "QLinearSigmoid"): 1, ("com.microsoft", "QLinearMul"): 1},
}
# Where the int8 GEMM reads image rows in place (AVX-512 VNNI, or the
# portable kernel forced with ONYX_INT8_ISA=portable), the CPU's layout pass
# moves uint8 convolution chains to channels-last in onnxruntime's op forms
# (providers/cpu/layout/qlinear_nhwc_transformer.cc): one Transpose in, one out.
EXPECTED_FUSED_NHWC = {
    "small_cnn": {("com.microsoft", "QLinearConv"): 3, ("com.microsoft", "QLinearAdd"): 1,
                  ("com.microsoft", "QLinearGlobalAveragePool"): 1, ("com.microsoft", "QGemm"): 1,
                  ("com.microsoft", "NhwcMaxPool"): 1, ("", "Transpose"): 2, ("", "Flatten"): 1},
}
FLOAT_OPS = {"Conv", "MatMul", "Gemm", "Add", "Mul", "Sigmoid", "Relu", "GlobalAveragePool"}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("activation", ["QUInt8", "QInt8"])
def test_quantize_static_models_fuse_and_match(tmp_path, name, per_channel, activation):
    path, shape = quantize_static(tmp_path, name, per_channel, getattr(quantization.QuantType, activation))
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    saved = str(tmp_path / "optimized.onnx")
    fused = run_onyx(path, x, saved=saved)
    unfused = run_onyx(path, x, fusions=False)

    ops = ops_of(saved)
    expected = EXPECTED_FUSED[name]
    if ops[("com.microsoft", "QLinearConv")] > 0:
        assert activation == "QUInt8", f"channels-last convolutions for {activation} activations: {dict(ops)}"
        expected = EXPECTED_FUSED_NHWC[name]
    for op, n in expected.items():
        assert ops[op] == n, f"{op}: {ops[op]} in the optimized model, expected {n} ({dict(ops)})"
    assert not any(domain == "" and op in FLOAT_OPS for domain, op in ops), dict(ops)
    # Left: the input's Q and the output's DQ (quantize_static quantizes the head too).
    assert ops[("", "QuantizeLinear")] == 1 and ops[("", "DequantizeLinear")] == 1, dict(ops)

    quantum = output_scale(path)
    by_ort = run_ort(path, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    saved_in_ort = run_ort(saved, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert_within_quanta(fused, unfused, quantum, 1, 0.05, "onyx fused vs unfused")
    assert_within_quanta(fused, by_ort, quantum, 1, 0.05, "onyx vs onnxruntime")
    assert_within_quanta(saved_in_ort, fused, quantum, 1, 0.05, "saved model in onnxruntime vs onyx")


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_quantize_dynamic_fuses_to_dynamic_quantize_matmul(tmp_path, per_channel):
    src, dst = str(tmp_path / "mlp.onnx"), str(tmp_path / "mlp_dynamic.onnx")
    onnx.save(mlp_block(), src)
    quantization.quantize_dynamic(src, dst, weight_type=quantization.QuantType.QInt8, per_channel=per_channel,
                                  reduce_range=True, op_types_to_quantize=["MatMul"])
    assert ops_of(dst)[("", "MatMulInteger")] == 3
    x = np.random.default_rng(10).standard_normal((2, 4, 16)).astype(np.float32)
    saved = str(tmp_path / "optimized.onnx")
    fused = run_onyx(dst, x, saved=saved)
    ops = ops_of(saved)
    assert ops[("com.microsoft", "DynamicQuantizeMatMul")] == 3, dict(ops)
    assert ops[("", "MatMulInteger")] == 0 and ops[("", "DynamicQuantizeLinear")] == 0, dict(ops)
    # The bias Adds are taken into the fused node.
    assert ops[("", "Add")] == 1, dict(ops)  # the residual
    unfused_options = onyx.SessionOptions()
    unfused_options.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC
    unfused = np.asarray(
        onyx.InferenceSession(dst, unfused_options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])
    # Same integer sums and the same float scale: only float rounding apart.
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-5)
    by_ort = run_ort(dst, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    np.testing.assert_allclose(fused, by_ort, rtol=1e-4, atol=1e-4)
    saved_in_ort = run_ort(saved, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    np.testing.assert_allclose(saved_in_ort, fused, rtol=1e-4, atol=1e-4)
