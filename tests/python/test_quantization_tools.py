"""onyx.quantization: the models it writes run in onnxruntime and in onyx with
the same outputs, and stay close to the float model; models written by
onnxruntime.quantization run in onyx with onnxruntime's outputs. Oracles are
the runtimes and the float model, never typed numbers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
onyx = pytest.importorskip("onyx")
q = pytest.importorskip("onyx.quantization")

RNG = np.random.default_rng(7)


def _model(nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp():
    """MatMul + Add + Relu + Gemm(transB) + Relu + MatMul."""
    r = np.random.default_rng(1)
    inits = {"w1": r.normal(0, 0.3, (16, 48)), "b1": r.normal(0, 0.1, 48), "w2": r.normal(0, 0.2, (32, 48)),
             "b2": r.normal(0, 0.1, 32), "w3": r.normal(0, 0.2, (32, 10))}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="mm1"),
             helper.make_node("Add", ["h1", "b1"], ["a1"], name="add1"),
             helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
             helper.make_node("Gemm", ["r1", "w2", "b2"], ["h2"], name="gemm2", transB=1),
             helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
             helper.make_node("MatMul", ["r2", "w3"], ["y"], name="mm3")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 10])], inits)


def cnn():
    """Conv-Relu-MaxPool-Conv-Add(residual)-Relu-GlobalAveragePool-Flatten-Gemm."""
    r = np.random.default_rng(2)
    inits = {"c1w": r.normal(0, 0.3, (8, 3, 3, 3)), "c1b": r.normal(0, 0.1, 8), "c2w": r.normal(0, 0.2, (8, 8, 3, 3)),
             "c2b": r.normal(0, 0.1, 8), "fw": r.normal(0, 0.3, (8, 10)), "fb": r.normal(0, 0.1, 10)}
    nodes = [helper.make_node("Conv", ["x", "c1w", "c1b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "c2w", "c2b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "p1"], ["s2"], name="add2"),
             helper.make_node("Relu", ["s2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 10])], inits)


MODELS = {"mlp": (mlp, (16,)), "cnn": (cnn, (3, 8, 8))}


def batches(kind, count=6, batch=8, seed=3):
    shape = MODELS[kind][1]
    r = np.random.default_rng(seed)
    return [{"x": r.normal(0, 1, (batch,) + shape).astype(np.float32)} for _ in range(count)]


@pytest.fixture(scope="module")
def float_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("float")
    paths = {}
    for kind, (build, _) in MODELS.items():
        paths[kind] = folder / f"{kind}.onnx"
        onnx.save_model(build(), str(paths[kind]))
    return paths


def run_ort(path, feeds):
    options = ort.SessionOptions()
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def run_onyx(path, feeds):
    return np.asarray(onyx.InferenceSession(str(path)).run(None, feeds)[0])


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def check_interop(float_path, quant_path, feeds, min_cosine=0.99, min_top1=0.8, between=None):
    """The quantized model runs in both runtimes with equal outputs (within
    `between` of the output's spread) and close to the float model."""
    reference = run_ort(float_path, feeds)
    a = run_ort(quant_path, feeds)
    b = run_onyx(quant_path, feeds)
    spread = float(np.abs(reference).max())
    tol = (between if between is not None else 1e-4) * spread
    np.testing.assert_allclose(b, a, rtol=0, atol=tol, err_msg="onyx and onnxruntime differ on the quantized model")
    assert cosine(b, reference) > min_cosine, cosine(b, reference)
    top1 = float(np.mean(b.argmax(-1) == reference.argmax(-1)))
    assert top1 >= min_top1, top1
    return a, b, reference


def op_types(path):
    return [n.op_type for n in onnx.load(str(path)).graph.node]


# ------------------------------------------------------------------------------------------- dynamic

@pytest.mark.parametrize("kind,ops", [("mlp", None), ("cnn", ["Conv", "MatMul", "Gemm"])])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
def test_dynamic_runs_in_both_runtimes(float_models, tmp_path, kind, ops, per_channel, weight_type):
    out = tmp_path / "dyn.onnx"
    # onnxruntime's uint8 x int8 kernels on AVX2 add pairs of products in int16
    # and saturate with 8-bit weights; 7-bit weights (reduce_range) keep it exact.
    q.quantize_dynamic(float_models[kind], out, op_types_to_quantize=ops, per_channel=per_channel,
                       weight_type=q.QuantType[weight_type], reduce_range=weight_type == "QInt8")
    types = op_types(out)
    assert "DynamicQuantizeLinear" in types and "MatMulInteger" in types
    assert ("ConvInteger" in types) == (kind == "cnn")
    check_interop(float_models[kind], out, batches(kind, 1, 32)[0])


# ------------------------------------------------------------------------------------------- static

@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_static_runs_in_both_runtimes(float_models, tmp_path, kind, fmt, per_channel):
    out = tmp_path / "static.onnx"
    reader = q.ListDataReader(batches(kind))
    # reduce_range with per_channel: see test_dynamic_runs_in_both_runtimes (onnxruntime's int16 pair sums).
    q.quantize_static(float_models[kind], out, reader, quant_format=q.QuantFormat[fmt], per_channel=per_channel,
                      reduce_range=per_channel, extra_options={"ShowProgress": False})
    types = op_types(out)
    if fmt == "QDQ":
        assert "QuantizeLinear" in types and "DequantizeLinear" in types
    else:
        assert ("QLinearConv" if kind == "cnn" else "QLinearMatMul") in types
    # One quantum of the output's scale either way: the runtimes round requantized values at different points.
    check_interop(float_models[kind], out, batches(kind, 1, 32, seed=11)[0], min_cosine=0.98, between=0.01)


@pytest.mark.parametrize("method", ["Entropy", "Percentile"])
def test_histogram_calibration_gives_valid_ranges(float_models, tmp_path, method):
    model = onnx.load(str(float_models["cnn"]))
    tensors = ["x", "c1", "r1", "s2"]
    data = batches("cnn")
    observed = q.MinMaxCalibrater(model, tensors, progress=False)
    observed.collect_data(q.ListDataReader(data))
    minmax = observed.compute_data()
    calibrator = q.create_calibrator(model, tensors, q.CalibrationMethod[method], extra_options={"CalibPercentile": 99.9},
                                     progress=False)
    calibrator.collect_data(q.ListDataReader(data))
    ranges = calibrator.compute_data()
    for name in tensors:
        lo, hi = ranges[name]
        peak = max(-minmax[name][0], minmax[name][1])
        assert lo <= 0 < hi <= peak * 1.0001, (name, ranges[name], minmax[name])
        assert hi > 0.2 * peak, (name, ranges[name], minmax[name])
        if minmax[name][0] >= 0:
            assert lo == 0  # post-Relu tensors keep a one-sided range
    out = tmp_path / "m.onnx"
    q.quantize_static(float_models["cnn"], out, q.ListDataReader(data), calibrate_method=q.CalibrationMethod[method],
                      extra_options={"ShowProgress": False})
    check_interop(float_models["cnn"], out, data[0], min_cosine=0.95, min_top1=0.6, between=0.05)


def test_nodes_to_exclude_and_include(float_models, tmp_path):
    out = tmp_path / "ex.onnx"
    q.quantize_dynamic(float_models["mlp"], out, nodes_to_exclude=["mm3"])
    model = onnx.load(str(out))
    assert any(n.name == "mm3" and n.op_type == "MatMul" for n in model.graph.node)
    assert sum(n.op_type == "MatMulInteger" for n in model.graph.node) == 2
    q.quantize_static(float_models["cnn"], out, q.ListDataReader(batches("cnn", 2)), quant_format=q.QuantFormat.QOperator,
                      nodes_to_exclude=["conv2"], extra_options={"ShowProgress": False})
    model = onnx.load(str(out))
    assert any(n.name == "conv2" and n.op_type == "Conv" for n in model.graph.node)
    assert sum(n.op_type == "QLinearConv" for n in model.graph.node) == 1
    q.quantize_dynamic(float_models["mlp"], out, nodes_to_include=["gemm2"])
    assert sum(n.op_type == "MatMulInteger" for n in onnx.load(str(out)).graph.node) == 1


def test_clear_errors(float_models, tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file"):
        q.quantize_dynamic(tmp_path / "missing.onnx", tmp_path / "o.onnx")
    with pytest.raises(ValueError, match="cannot quantize op type.*Frobnicate"):
        q.quantize_dynamic(float_models["mlp"], tmp_path / "o.onnx", op_types_to_quantize=["MatMul", "Frobnicate"])
    with pytest.raises(ValueError, match="cannot quantize op type"):
        q.quantize_static(float_models["mlp"], tmp_path / "o.onnx", q.ListDataReader(batches("mlp", 1)),
                          op_types_to_quantize=["Frobnicate"])
    with pytest.raises(ValueError, match="block_size"):
        q.MatMulNBitsQuantizer(str(float_models["mlp"]), block_size=24)


# ------------------------------------------------------------------------------------------- 4-bit

@pytest.mark.parametrize("block_size,symmetric,level", [(16, False, None), (32, True, None), (32, False, 4),
                                                        (64, False, None), (128, True, 4)])
def test_matmul_nbits_runs_in_both_runtimes(float_models, tmp_path, block_size, symmetric, level):
    quantizer = q.MatMulNBitsQuantizer(str(float_models["mlp"]), block_size=block_size, is_symmetric=symmetric,
                                       accuracy_level=level)
    quantizer.process()
    out = tmp_path / "nbits.onnx"
    quantizer.model.save_model_to_file(str(out))
    types = op_types(out)
    assert types.count("MatMulNBits") == 2 and "Gemm" in types  # Gemm stays float
    between = 1e-4 if level is None else 2e-3  # level 4 quantizes activations; both runtimes by block
    check_interop(float_models["mlp"], out, batches("mlp", 1, 32)[0], min_cosine=0.97, min_top1=0.7, between=between)


def test_gptq_beats_round_to_nearest_on_calibration_data(float_models, tmp_path):
    data = batches("mlp", 8, 32, seed=5)
    feeds = {"x": np.concatenate([d["x"] for d in data])}
    reference = run_ort(float_models["mlp"], feeds)
    errors = {}
    for name, config in (("rtn", None), ("gptq", q.GPTQWeightOnlyQuantConfig(q.ListDataReader(data), block_size=16))):
        quantizer = q.MatMulNBitsQuantizer(onnx.load(str(float_models["mlp"])), block_size=16, algo_config=config)
        quantizer.process()
        out = tmp_path / f"{name}.onnx"
        onnx.save_model(quantizer.model.model, str(out))
        got = run_onyx(out, feeds)
        np.testing.assert_allclose(got, run_ort(out, feeds), atol=1e-4 * np.abs(reference).max())
        errors[name] = float(np.mean((got - reference) ** 2))
    assert errors["gptq"] < errors["rtn"], errors


# ------------------------------------------------------------------------------------------- onnxruntime's tools

class _OrtReader(ort.quantization.CalibrationDataReader if hasattr(ort, "quantization") else object):
    def __init__(self, data):
        self.data, self.i = data, 0

    def get_next(self):
        self.i += 1
        return self.data[self.i - 1] if self.i <= len(self.data) else None

    def rewind(self):
        self.i = 0


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("mode", ["dynamic", "QDQ", "QOperator"])
def test_onnxruntime_quantized_models_run_in_onyx(float_models, tmp_path, kind, mode):
    oq = pytest.importorskip("onnxruntime.quantization")
    out = tmp_path / "ort.onnx"
    if mode == "dynamic":
        oq.quantize_dynamic(str(float_models[kind]), str(out), op_types_to_quantize=["MatMul", "Conv"])
    else:
        # onyx has no com.microsoft QGemm, onnxruntime's QOperator form of Gemm.
        ops = ["Conv", "MatMul", "Add", "Relu", "MaxPool", "GlobalAveragePool"] + (["Gemm"] if mode == "QDQ" else [])
        oq.quantize_static(str(float_models[kind]), str(out), _OrtReader(batches(kind)),
                           quant_format=oq.QuantFormat[mode], op_types_to_quantize=ops,
                           activation_type=oq.QuantType.QUInt8, weight_type=oq.QuantType.QInt8)
    feeds = batches(kind, 1, 32, seed=13)[0]
    expected = run_ort(out, feeds)
    actual = run_onyx(out, feeds)
    # 2% of the output's spread: a one-quantum difference in an intermediate requantization (where the two
    # runtimes round at different points) carries through the rest of the network.
    np.testing.assert_allclose(actual, expected, rtol=0, atol=0.02 * np.abs(expected).max())


def test_onnxruntime_matmul_nbits_quantizer_model_runs_in_onyx(float_models, tmp_path):
    # onnxruntime's MatMulNBitsQuantizer needs onnx_ir (scripts/setup.sh installs it).
    import onnxruntime.quantization.matmul_nbits_quantizer as mnq
    quantizer = mnq.MatMulNBitsQuantizer(onnx.load(str(float_models["mlp"])), block_size=32, is_symmetric=False)
    quantizer.process()
    out = tmp_path / "ort_nbits.onnx"
    quantizer.model.save_model_to_file(str(out))
    feeds = batches("mlp", 1, 16)[0]
    expected = run_ort(out, feeds)
    np.testing.assert_allclose(run_onyx(out, feeds), expected, rtol=0, atol=1e-4 * np.abs(expected).max())


# ------------------------------------------------------------------------------------------- pre-process, CLI

def test_quant_pre_process_keeps_outputs(float_models, tmp_path):
    out = tmp_path / "pre.onnx"
    q.quant_pre_process(str(float_models["cnn"]), str(out))
    model = onnx.load(str(out))
    assert len(model.graph.value_info) > 0  # shapes inferred
    feeds = batches("cnn", 1)[0]
    np.testing.assert_allclose(run_onyx(out, feeds), run_ort(float_models["cnn"], feeds), rtol=1e-4, atol=1e-5)


def test_command_line(float_models, tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "onyx.quantization", *map(str, args)], capture_output=True,
                              text=True, timeout=60)

    help_text = cli("--help")
    assert help_text.returncode == 0 and all(c in help_text.stdout for c in ("dynamic", "static", "nbits"))
    data = tmp_path / "calib"
    data.mkdir()
    for i, batch in enumerate(batches("cnn", 3)):
        np.save(data / f"{i}.npy", batch["x"])
    out = tmp_path / "cli_static.onnx"
    result = cli("static", float_models["cnn"], out, "--calibration-data", data, "--format", "QOperator")
    assert result.returncode == 0, result.stderr
    assert "calibrating [" in result.stderr and "3/3" in result.stderr  # the progress bar
    check_interop(float_models["cnn"], out, batches("cnn", 1, 32)[0], min_cosine=0.98, between=0.01)
    result = cli("nbits", float_models["mlp"], tmp_path / "n.onnx", "--block-size", "16")
    assert result.returncode == 0, result.stderr
    assert "MatMulNBits" in op_types(tmp_path / "n.onnx")
    result = cli("dynamic", tmp_path / "nope.onnx", tmp_path / "d.onnx")
    assert result.returncode == 2 and "no model file" in result.stderr
