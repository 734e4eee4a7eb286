"""The quantized com.microsoft operators (MatMulNBits, MatMulIntegerToFloat,
DynamicQuantizeMatMul, QGemm, QLinear* element-wise ops, QLinearAveragePool,
GatherBlockQuantized): each one-node model runs on
seeded random inputs through onnxruntime (CPU), the oracle for com.microsoft
ops, and through onyx. Float outputs agree within rtol=1e-4; quantized outputs
are equal, or at most one quantum apart where a test says why."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
onyx = pytest.importorskip("onyx")

_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
         np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
         np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}


def _model(op_type, inputs, attrs, out_type, constants):
    in_names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    while in_names and in_names[-1] == "":
        in_names.pop()
    node = helper.make_node(op_type, in_names, ["out"], domain="com.microsoft", name="node", **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, _ELEM[a.dtype], list(a.shape))
                    for i, (n, a) in enumerate(zip(in_names, inputs)) if a is not None and i not in constants]
    initializers = [numpy_helper.from_array(a, n) for i, (n, a) in enumerate(zip(in_names, inputs))
                    if a is not None and i in constants]
    graph = helper.make_graph([node], "quant", graph_inputs, [helper.make_tensor_value_info("out", out_type, None)],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    feeds = {n: a for i, (n, a) in enumerate(zip(in_names, inputs)) if a is not None and i not in constants}
    return model.SerializeToString(), feeds


def run_both(op_type, inputs, out_type, attrs=None, constants=(), onyx_inputs=None):
    """onyx_inputs: the same values as onyx runs them where onnxruntime cannot
    (an omitted zero point, which onnxruntime 1.32 refuses or aborts on)."""
    model, feeds = _model(op_type, inputs, attrs or {}, out_type, constants)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    if onyx_inputs is not None:
        model, feeds = _model(op_type, onyx_inputs, attrs or {}, out_type, constants)
    actual = np.asarray(onyx.InferenceSession(model).run(None, feeds)[0])
    assert actual.shape == expected.shape, f"shape {actual.shape}, expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, expected {expected.dtype}"
    return actual, expected


def check_float(op_type, inputs, attrs=None, constants=(), out_type=TensorProto.FLOAT, rtol=1e-4, atol=1e-4):
    actual, expected = run_both(op_type, inputs, out_type, attrs, constants)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=op_type)


def check_quantized(op_type, inputs, out_type, attrs=None, constants=(), max_diff=0, onyx_inputs=None):
    actual, expected = run_both(op_type, inputs, out_type, attrs, constants, onyx_inputs)
    diff = np.abs(actual.astype(np.int32) - expected.astype(np.int32))
    assert diff.max(initial=0) <= max_diff, f"{op_type}: {np.count_nonzero(diff)} elements differ, max {diff.max()}"


def onyx_error(op_type, inputs, out_type, attrs=None, constants=()):
    model, feeds = _model(op_type, inputs, attrs or {}, out_type, constants)
    with pytest.raises(Exception) as info:
        onyx.InferenceSession(model).run(None, feeds)
    return str(info.value)


# ---------------------------------------------------------------- MatMulNBits

def _pack(codes, bits):
    """codes [rows, n] (values < 2**bits) packed low bits first, n * bits / 8 bytes a row."""
    per_byte = 8 // bits
    rows, n = codes.shape
    padded = np.zeros((rows, -(-n // per_byte) * per_byte), np.uint8)
    padded[:, :n] = codes
    grouped = padded.reshape(rows, -1, per_byte).astype(np.uint32)
    return sum(grouped[:, :, t] << (t * bits) for t in range(per_byte)).astype(np.uint8)


def _nbits_inputs(rng, a_shape, n, bits, block_size, zero_points):
    k = a_shape[-1]
    n_blocks = -(-k // block_size)
    blob = block_size * bits // 8
    codes = rng.integers(0, 2**bits, (n, n_blocks * block_size), dtype=np.uint8)
    b = _pack(codes, bits).reshape(n, n_blocks, blob)
    scales = (rng.random(n * n_blocks) * 0.1 + 0.01).astype(np.float32)
    a = rng.standard_normal(a_shape).astype(np.float32)
    zp = None
    if zero_points == "packed":
        zp = _pack(rng.integers(0, 2**bits, (n, n_blocks), dtype=np.uint8), bits).reshape(-1)
    elif zero_points == "float":
        zp = (rng.random(n * n_blocks) * 2**bits).astype(np.float32)
    return a, b, scales, zp


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block_size", [16, 32, 64, 128, 256])
@pytest.mark.parametrize("zero_points", [None, "packed"])
@pytest.mark.parametrize("a_shape,n", [((3, 64), 5), ((2, 3, 100), 7), ((1, 300), 16)])
def test_matmul_nbits(bits, block_size, zero_points, a_shape, n):
    rng = np.random.default_rng(bits * 1000 + block_size + n)
    a, b, scales, zp = _nbits_inputs(rng, a_shape, n, bits, block_size, zero_points)
    attrs = dict(K=a_shape[-1], N=n, bits=bits, block_size=block_size, accuracy_level=0)
    check_float("MatMulNBits", [a, b, scales, zp], attrs, constants=(1, 2, 3))


@pytest.mark.parametrize("zero_points", [None, "packed", "float"])
def test_matmul_nbits_weights_fed_at_run_time(zero_points):
    """Weights as graph inputs, not initializers: dequantized on each run
    (constant weights are dequantized and packed once, at session creation)."""
    rng = np.random.default_rng(11)
    a, b, scales, zp = _nbits_inputs(rng, (3, 96), 10, 4, 32, zero_points)
    attrs = dict(K=96, N=10, bits=4, block_size=32, accuracy_level=0)
    check_float("MatMulNBits", [a, b, scales, zp], attrs, constants=())


@pytest.mark.parametrize("block_size", [16, 32, 128])
def test_matmul_nbits_float_zero_points(block_size):
    rng = np.random.default_rng(block_size)
    a, b, scales, zp = _nbits_inputs(rng, (4, 96), 6, 4, block_size, "float")
    attrs = dict(K=96, N=6, bits=4, block_size=block_size, accuracy_level=0)
    check_float("MatMulNBits", [a, b, scales, zp], attrs, constants=(1, 2, 3))


def test_matmul_nbits_bias():
    rng = np.random.default_rng(7)
    a, b, scales, zp = _nbits_inputs(rng, (2, 5, 64), 9, 4, 32, "packed")
    bias = rng.standard_normal(9).astype(np.float32)
    attrs = dict(K=64, N=9, bits=4, block_size=32, accuracy_level=0)
    check_float("MatMulNBits", [a, b, scales, zp, None, bias], attrs, constants=(1, 2, 3, 5))


@pytest.mark.parametrize("block_size", [16, 32, 64, 128])
@pytest.mark.parametrize("zero_points", [None, "packed", "float"])
@pytest.mark.parametrize("a_shape,n", [((1, 256), 33), ((2, 3, 200), 7)])
def test_matmul_nbits_accuracy_level_4(block_size, zero_points, a_shape, n):
    """accuracy_level 4 lets A be quantized to int8 per block. With 4-bit
    constant weights in blocks of 32 or more and integer zero points onyx
    does that (int4_gemv.cc); otherwise it computes in float. Either way the
    result is onnxruntime's at level 4 within int8 quantization error, and
    the float result within the same."""
    rng = np.random.default_rng(block_size + n)
    a, b, scales, zp = _nbits_inputs(rng, a_shape, n, 4, block_size, zero_points)
    attrs = dict(K=a_shape[-1], N=n, bits=4, block_size=block_size, accuracy_level=4)
    inputs = [a, b, scales, zp]
    model, feeds = _model("MatMulNBits", inputs, attrs, TensorProto.FLOAT, (1, 2, 3))
    float_model, _ = _model("MatMulNBits", inputs, dict(attrs, accuracy_level=0), TensorProto.FLOAT, (1, 2, 3))
    actual = onyx.InferenceSession(model).run(None, feeds)[0]
    exact = onyx.InferenceSession(float_model).run(None, feeds)[0]
    expected = ort.InferenceSession(model).run(None, feeds)[0]
    # int8 activations: each product is off by up to half a step of A's
    # per-block scale, so the error grows with sqrt(K) times the output scale.
    scale = np.abs(exact).max()
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(actual, exact, rtol=0, atol=0.02 * scale)


def test_matmul_nbits_wrong_b_size():
    rng = np.random.default_rng(3)
    a, b, scales, _ = _nbits_inputs(rng, (3, 64), 5, 4, 32, None)
    message = onyx_error("MatMulNBits", [a, b[:, :1], scales], TensorProto.FLOAT,
                         dict(K=64, N=5, bits=4, block_size=32))
    assert "node" in message and "input B" in message and "[5, 2, 16]" in message


def test_matmul_nbits_wrong_scales_shape():
    rng = np.random.default_rng(4)
    a, b, scales, _ = _nbits_inputs(rng, (3, 64), 5, 4, 32, None)
    message = onyx_error("MatMulNBits", [a, b, scales[:7]], TensorProto.FLOAT, dict(K=64, N=5, bits=4, block_size=32))
    assert "node" in message and "input scales" in message and "[10]" in message


def test_matmul_nbits_g_idx():
    # act-order (GPTQ): g_idx names the block of each k; here a shuffled but
    # balanced assignment (each block holds block_size of the k). Without zero
    # points: onnxruntime's CPU kernel ignores packed zero points when g_idx
    # is given (it matches zero point 8), which onyx does not copy.
    rng = np.random.default_rng(5)
    a, b, scales, zp = _nbits_inputs(rng, (3, 128), 6, 4, 32, None)
    g_idx = rng.permutation(np.arange(128, dtype=np.int32) // 32).astype(np.int32)
    attrs = dict(K=128, N=6, bits=4, block_size=32, accuracy_level=0)
    check_float("MatMulNBits", [a, b, scales, zp, g_idx], attrs, constants=(1, 2, 3, 4))


# ------------------------------------------- MatMulIntegerToFloat, DynamicQuantizeMatMul

def _int8(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape, dtype=np.int32).astype(dtype)


def _s8_weights(rng, shape, dtype):
    """B for a uint8 A: int8 B stays within [-64, 63]. onnxruntime's u8s8 kernel
    on AVX2 without VNNI sums pairs of u8*s8 products in saturating int16
    (vpmaddubsw), so full-range int8 weights give it wrong sums (off by
    thousands, checked against an exact NumPy matmul); onyx sums exactly."""
    if dtype == np.int8:
        return rng.integers(-64, 64, shape, dtype=np.int32).astype(np.int8)
    return _int8(rng, shape, dtype)


@pytest.mark.parametrize("a_type,b_type", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("a_shape,n", [((4, 16), 8), ((2, 3, 33), 5), ((17,), 3)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("zero_points,bias", [(False, False), (True, False), (True, True)])
def test_matmul_integer_to_float(a_type, b_type, a_shape, n, per_column, zero_points, bias):
    rng = np.random.default_rng(len(a_shape) * 100 + n)
    k = a_shape[-1]
    a = _int8(rng, a_shape, a_type)
    b = _s8_weights(rng, (k, n), b_type) if a_type == np.uint8 else _int8(rng, (k, n), b_type)
    a_scale = np.array(0.02, np.float32)
    b_scale = (rng.random(n if per_column else 1) * 0.05 + 0.01).astype(np.float32)
    a_zp = _int8(rng, (), a_type) if zero_points else None
    b_zp = _int8(rng, b_scale.shape, b_type) if zero_points else None
    bias_v = rng.standard_normal(n).astype(np.float32) if bias else None
    check_float("MatMulIntegerToFloat", [a, b, a_scale, b_scale, a_zp, b_zp, bias_v], constants=(1, 3, 5, 6))


@pytest.mark.parametrize("b_type", [np.int8, np.uint8])
@pytest.mark.parametrize("a_shape,n", [((4, 16), 8), ((2, 3, 33), 5), ((1, 64), 1)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("zero_point,bias", [(False, False), (True, True)])
def test_dynamic_quantize_matmul(b_type, a_shape, n, per_column, zero_point, bias):
    rng = np.random.default_rng(len(a_shape) * 100 + n + 7)
    k = a_shape[-1]
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = _s8_weights(rng, (k, n), b_type)  # A is quantized to uint8
    b_scale = (rng.random(n if per_column else 1) * 0.05 + 0.01).astype(np.float32)
    b_zp = _int8(rng, b_scale.shape, b_type) if zero_point else None
    bias_v = rng.standard_normal(n).astype(np.float32) if bias else None
    check_float("DynamicQuantizeMatMul", [a, b, b_scale, b_zp, bias_v], constants=(1, 2, 3, 4))


def test_dynamic_quantize_matmul_positive_a():
    # All of A above 0: the range is widened to include 0 (zero point 0).
    rng = np.random.default_rng(8)
    a = (rng.random((3, 20)) + 0.5).astype(np.float32)
    b = _s8_weights(rng, (20, 4), np.int8)
    check_float("DynamicQuantizeMatMul", [a, b, np.array([0.03], np.float32)], constants=(1, 2))


def test_matmul_integer_to_float_wrong_b_scale():
    rng = np.random.default_rng(9)
    a, b = _int8(rng, (2, 8), np.uint8), _int8(rng, (8, 4), np.int8)
    message = onyx_error("MatMulIntegerToFloat", [a, b, np.array(0.1, np.float32), np.ones(3, np.float32)],
                         TensorProto.FLOAT)
    assert "node" in message and "input b_scale" in message and "[4]" in message


def test_matmul_integer_to_float_full_range_u8s8_is_exact():
    # Where onnxruntime's AVX2 u8s8 sums saturate (see _s8_weights), onyx
    # matches an exact NumPy matmul.
    rng = np.random.default_rng(10)
    a, b = _int8(rng, (4, 16), np.uint8), _int8(rng, (16, 8), np.int8)
    b[0, :] = -128
    a[:, 0] = 255
    model, feeds = _model("MatMulIntegerToFloat", [a, b, np.array(1.0, np.float32), np.array(1.0, np.float32)], {},
                          TensorProto.FLOAT, (1, 2, 3))
    actual = onyx.InferenceSession(model).run(None, feeds)[0]
    np.testing.assert_array_equal(actual, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32))


# ------------------------------------------------------ QLinear element-wise ops

_QTYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def _qparams(rng, dtype, scale):
    """A float scalar scale and a zero point of dtype near the middle of its range."""
    info = np.iinfo(dtype)
    mid = (int(info.min) + int(info.max)) // 2
    return np.array(scale, np.float32), np.array(rng.integers(mid - 20, mid + 20), dtype)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)),
                                             ((2, 3, 4), ()), ((1, 3, 1, 5), (2, 1, 4, 1))])
@pytest.mark.parametrize("zero_points", [True, False])
def test_qlinear_binary(op, dtype, a_shape, b_shape, zero_points):
    # Equal or one quantum apart: onnxruntime's vectorized kernels compute
    # with precomputed scale ratios (a_scale / c_scale, ...), onyx as
    # dequantize, op, quantize; the two roundings differ on near-ties.
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a, b = _int8(rng, a_shape, dtype), _int8(rng, b_shape, dtype)
    a_s, a_z = _qparams(rng, dtype, 0.05)
    b_s, b_z = _qparams(rng, dtype, 0.03)
    c_s, c_z = _qparams(rng, dtype, 0.08 if op == "QLinearAdd" else 0.3)
    inputs = [a, a_s, a_z, b, b_s, b_z, c_s, c_z]
    onyx_inputs = None
    if not zero_points:  # onnxruntime gets explicit zeros, onyx none
        inputs[2] = inputs[5] = inputs[7] = np.array(0, dtype)
        onyx_inputs = [a, a_s, None, b, b_s, None, c_s, None]
    check_quantized(op, inputs, _QTYPE[dtype], max_diff=1, onyx_inputs=onyx_inputs)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op,attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {}),
                                      ("QLinearLeakyRelu", {"alpha": 0.2})])
@pytest.mark.parametrize("zero_points", [True, False])
def test_qlinear_lookup(dtype, op, attrs, zero_points):
    # Every input value (all 256) through the table; equal to onnxruntime's.
    rng = np.random.default_rng(12)
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1, dtype=np.int32).astype(dtype).reshape(4, 64)
    x_s, x_z = _qparams(rng, dtype, 0.05)
    y_s, y_z = _qparams(rng, dtype, 1 / 256 if op == "QLinearSigmoid" else 0.04)
    inputs, onyx_inputs = [x, x_s, x_z, y_s, y_z], None
    if not zero_points:  # onnxruntime gets explicit zeros, onyx none
        inputs[2] = inputs[4] = np.array(0, dtype)
        onyx_inputs = [x, x_s, None, y_s, None]
    check_quantized(op, inputs, _QTYPE[dtype], attrs, onyx_inputs=onyx_inputs)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shape", [(1, 3, 4, 4), (2, 5, 7, 3), (2, 4, 9)])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(dtype, shape, channels_last):
    rng = np.random.default_rng(sum(shape) + channels_last)
    x = _int8(rng, shape, dtype)
    x_s, x_z = _qparams(rng, dtype, 0.05)
    y_s, y_z = _qparams(rng, dtype, 0.02)
    check_quantized("QLinearGlobalAveragePool", [x, x_s, x_z, y_s, y_z], _QTYPE[dtype],
                    {"channels_last": channels_last})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("axis,shapes", [(1, [(2, 3, 4), (2, 5, 4)]), (0, [(3, 4), (1, 4), (2, 4)]),
                                         (-1, [(2, 3, 4), (2, 3, 1)])])
@pytest.mark.parametrize("same_params", [False, True])
def test_qlinear_concat(dtype, axis, shapes, same_params):
    rng = np.random.default_rng(len(shapes) * 7 + axis)
    y_s, y_z = _qparams(rng, dtype, 0.05)
    inputs = [y_s, y_z]
    for i, shape in enumerate(shapes):
        x_s, x_z = (y_s, y_z) if same_params and i == 0 else _qparams(rng, dtype, 0.02 + 0.03 * i)
        inputs += [_int8(rng, shape, dtype), x_s, x_z]
    check_quantized("QLinearConcat", inputs, _QTYPE[dtype], {"axis": axis})


def test_qlinear_add_wrong_scale_shape():
    rng = np.random.default_rng(13)
    a = _int8(rng, (2, 3), np.uint8)
    s, z = _qparams(rng, np.uint8, 0.05)
    message = onyx_error("QLinearAdd", [a, np.full(3, 0.05, np.float32), z, a, s, z, s, z], TensorProto.UINT8)
    assert "node" in message and "input A_scale" in message and "scalar" in message


@pytest.mark.parametrize("block_size", [32, 64])
@pytest.mark.parametrize("zero_points", [None, "packed"])
def test_matmul_nbits_float16(block_size, zero_points):
    # float16 A, scales and output; both sum in float and round the result to
    # float16, so they agree within a float16 rounding (rtol 1e-3).
    rng = np.random.default_rng(block_size + 1)
    a, b, scales, zp = _nbits_inputs(rng, (3, 128), 8, 4, block_size, zero_points)
    attrs = dict(K=128, N=8, bits=4, block_size=block_size, accuracy_level=0)
    check_float("MatMulNBits", [a.astype(np.float16), b, scales.astype(np.float16), zp], attrs, constants=(1, 2, 3),
                out_type=TensorProto.FLOAT16, rtol=1e-3, atol=1e-3)


def test_qlinear_concat_mismatched_shapes():
    rng = np.random.default_rng(14)
    s, z = _qparams(rng, np.uint8, 0.05)
    x0, x1 = _int8(rng, (2, 3), np.uint8), _int8(rng, (4, 3), np.uint8)
    message = onyx_error("QLinearConcat", [s, z, x0, s, z, x1, s, z], TensorProto.UINT8, {"axis": 1})
    assert "node" in message and "input X 1" in message and "[4,3]" in message.replace(" ", "")


def test_dynamic_quantize_matmul_wrong_b_rank():
    rng = np.random.default_rng(15)
    a = rng.standard_normal((2, 8)).astype(np.float32)
    message = onyx_error("DynamicQuantizeMatMul", [a, _int8(rng, (8,), np.int8), np.array(0.1, np.float32)],
                         TensorProto.FLOAT)
    assert "node" in message and "input B" in message and "[K, N]" in message


# ---------------------------------------------------------------------- QGemm

def _qgemm_inputs(rng, a_type, b_type, m, k, n, trans_a, trans_b, per_column, bias):
    a = _int8(rng, (k, m) if trans_a else (m, k), a_type)
    b_shape = (n, k) if trans_b else (k, n)
    b = _s8_weights(rng, b_shape, b_type) if a_type == np.uint8 else _int8(rng, b_shape, b_type)
    a_s, a_z = _qparams(rng, a_type, 0.02)
    b_scale = (rng.random(n if per_column else 1) * 0.05 + 0.01).astype(np.float32)
    b_zp = _int8(rng, b_scale.shape, b_type)
    if b_type == np.int8:  # onnxruntime requires a symmetric int8 B (zero point 0)
        b_zp[:] = 0
    c = rng.integers(-2000, 2000, n, dtype=np.int32) if bias else None
    return [a, a_s, a_z, b, b_scale, b_zp, c]


# The (A, B) pairs onnxruntime's CPU QGemm runs: uint8 A with uint8 or int8 B,
# int8 A with int8 B.
_QGEMM_TYPES = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]


@pytest.mark.parametrize("a_type,b_type", _QGEMM_TYPES)
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias,alpha", [(False, 1.0), (True, 1.0), (True, 0.5)])
def test_qgemm_float_output(a_type, b_type, trans_a, trans_b, per_column, bias, alpha):
    rng = np.random.default_rng(trans_a * 8 + trans_b * 4 + per_column * 2 + bias)
    inputs = _qgemm_inputs(rng, a_type, b_type, 5, 19, 7, trans_a, trans_b, per_column, bias)
    check_float("QGemm", inputs, {"transA": trans_a, "transB": trans_b, "alpha": alpha}, constants=(3, 4, 5, 6))


@pytest.mark.parametrize("a_type,b_type", _QGEMM_TYPES)
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias,alpha", [(False, 1.0), (True, 1.0), (True, 0.75)])
def test_qgemm_quantized_output(a_type, b_type, trans_a, trans_b, per_column, bias, alpha):
    # Y has A's type: onnxruntime has no kernel for other output types.
    # Exact: both compute the int32 sums exactly and requantize with one float
    # multiplier per column (a_scale * b_scale * alpha / y_scale).
    y_type = a_type
    rng = np.random.default_rng(100 + trans_a * 8 + per_column * 2 + bias)
    inputs = _qgemm_inputs(rng, a_type, b_type, 6, 33, 9, trans_a, trans_b, per_column, bias)
    y_s, y_z = _qparams(rng, y_type, 0.3)
    check_quantized("QGemm", inputs + [y_s, y_z], _QTYPE[y_type],
                    {"transA": trans_a, "transB": trans_b, "alpha": alpha}, constants=(3, 4, 5, 6))


def test_qgemm_saturates():
    # A tiny y_scale pushes most outputs past the type's range.
    rng = np.random.default_rng(21)
    inputs = _qgemm_inputs(rng, np.uint8, np.uint8, 4, 16, 8, 0, 0, True, True)
    check_quantized("QGemm", inputs + [np.array(0.001, np.float32), np.array(128, np.uint8)], TensorProto.UINT8,
                    constants=(3, 4, 5, 6))


def test_qgemm_wrong_b_scale():
    rng = np.random.default_rng(22)
    inputs = _qgemm_inputs(rng, np.uint8, np.uint8, 2, 8, 4, 0, 0, False, False)
    inputs[4] = np.full(3, 0.1, np.float32)
    inputs[5] = np.zeros(3, np.uint8)
    message = onyx_error("QGemm", inputs, TensorProto.FLOAT)
    assert "node" in message and "input b_scale" in message and "[4]" in message


def test_qgemm_mismatched_inner_dimensions():
    rng = np.random.default_rng(23)
    inputs = _qgemm_inputs(rng, np.uint8, np.uint8, 2, 8, 4, 0, 0, False, False)
    inputs[3] = _int8(rng, (6, 4), np.uint8)
    message = onyx_error("QGemm", inputs, TensorProto.FLOAT)
    assert "node" in message and "inner dimensions 8 and 6" in message


# ---------------------------------------------------------- QLinearAveragePool

_POOL_CASES = [
    ({"kernel_shape": [2, 2]}, (1, 3, 6, 6)),
    ({"kernel_shape": [3, 3], "strides": [2, 2]}, (2, 4, 7, 9)),
    ({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, (1, 2, 5, 5)),
    ({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, (1, 2, 5, 5)),
    ({"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}, (1, 3, 6, 7)),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0], "ceil_mode": 1, "count_include_pad": 1},
     (2, 2, 8, 6)),
    ({"kernel_shape": [2, 3], "auto_pad": "SAME_UPPER"}, (1, 3, 5, 7)),
    ({"kernel_shape": [4]}, (2, 3, 11)),
    ({"kernel_shape": [3], "strides": [2], "ceil_mode": 1, "count_include_pad": 1}, (1, 2, 10)),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("attrs,shape", _POOL_CASES)
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_average_pool(dtype, attrs, shape, channels_last):
    # Within one quantum: onnxruntime averages dequantized floats (or, in
    # its vectorized kernels, scales int32 sums by a precomputed ratio); onyx
    # sums (x - x_zp) exactly in int32 and scales once. The two roundings can
    # land on opposite sides of a half near a tie.
    rng = np.random.default_rng(sum(shape) + channels_last + len(attrs))
    x = _int8(rng, shape, dtype)
    if channels_last:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    x_s, x_z = _qparams(rng, dtype, 0.05)
    y_s, y_z = _qparams(rng, dtype, 0.03)
    check_quantized("QLinearAveragePool", [x, x_s, x_z, y_s, y_z], _QTYPE[dtype],
                    dict(attrs, channels_last=channels_last), max_diff=1)


def test_qlinear_average_pool_wrong_zero_point_type():
    rng = np.random.default_rng(24)
    x = _int8(rng, (1, 2, 4, 4), np.uint8)
    s = np.array(0.05, np.float32)
    message = onyx_error("QLinearAveragePool", [x, s, np.array(3, np.int8), s, np.array(3, np.uint8)],
                         TensorProto.UINT8, {"kernel_shape": [2, 2]})
    assert "node" in message and "input x_zero_point" in message and "uint8" in message


def _gather_block_inputs(rng, logical_shape, bits, block_size, zero_points, indices):
    """uint8 codes packed 8 / bits to a byte along the last axis, scales per
    block along it, and optionally packed zero points."""
    per_byte = 8 // bits
    codes = rng.integers(0, 2**bits, size=logical_shape).astype(np.uint8)
    packed = np.zeros(logical_shape[:-1] + (logical_shape[-1] // per_byte,), np.uint8)
    for j in range(per_byte):
        packed |= (codes[..., j::per_byte] << (j * bits)).astype(np.uint8)
    blocks = -(-logical_shape[-1] // block_size)
    scales = rng.uniform(0.01, 0.1, size=logical_shape[:-1] + (blocks,)).astype(np.float32)
    zp = None
    if zero_points:
        zp_codes = rng.integers(0, 2**bits, size=scales.shape).astype(np.uint8)
        zp_bytes = -(-blocks // per_byte)
        padded = np.zeros(scales.shape[:-1] + (zp_bytes * per_byte,), np.uint8)
        padded[..., :blocks] = zp_codes
        zp = np.zeros(scales.shape[:-1] + (zp_bytes,), np.uint8)
        for j in range(per_byte):
            zp |= (padded[..., j::per_byte] << (j * bits)).astype(np.uint8)
    return [packed, indices, scales, zp]


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block_size", [16, 32, 128])
@pytest.mark.parametrize("zero_points", [False, True])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_gather_block_quantized_embedding(bits, block_size, zero_points, index_type):
    """The tied-embedding lookup of 4-bit decoders: rows of a [vocab, hidden]
    table, by token ids of a [batch, sequence] input (negative ids wrap)."""
    rng = np.random.default_rng(bits * 1000 + block_size)
    indices = np.array([[0, 5, 11, -1], [3, 3, 7, -12]], index_type)
    inputs = _gather_block_inputs(rng, (12, 256), bits, block_size, zero_points, indices)
    check_float("GatherBlockQuantized", inputs, {"bits": bits, "block_size": block_size}, constants=(0, 2, 3),
                rtol=0, atol=0)


def test_gather_block_quantized_rank3():
    rng = np.random.default_rng(3)
    indices = np.array([2, 0], np.int64)
    inputs = _gather_block_inputs(rng, (4, 3, 64), 4, 32, True, indices)
    check_float("GatherBlockQuantized", inputs, {"bits": 4, "block_size": 32, "quantize_axis": 2}, rtol=0, atol=0)


def test_gather_block_quantized_errors():
    rng = np.random.default_rng(4)
    inputs = _gather_block_inputs(rng, (8, 64), 4, 32, False, np.array([8], np.int64))
    message = onyx_error("GatherBlockQuantized", inputs, TensorProto.FLOAT, {"bits": 4, "block_size": 32})
    assert "indices holds 8, out of range [-8, 8)" in message
    inputs = _gather_block_inputs(rng, (8, 64), 4, 32, False, np.array([1], np.int64))
    inputs[2] = inputs[2][:, :1].copy()
    message = onyx_error("GatherBlockQuantized", inputs, TensorProto.FLOAT, {"bits": 4, "block_size": 32})
    assert "input scales is float[8,1], expected a float tensor of shape [8,2]" in message


# QLinearConv (ONNX domain) with constant weights, against onnx's reference
# evaluator, exactly. uint8 x with int8 weights of zero point 0, group 1 and
# a channel count of whole groups of four runs in place (the NHWC image read
# by the int8 GEMM without im2col) where the kernel allows it (AVX-512 VNNI,
# portable); the other cases take the im2col path; both must give the
# reference's bytes.
_QCONV_CASES = [
    # (batch, channels, height, width, filters, kernel, strides, pads, dilations, group)
    (1, 64, 14, 14, 70, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # filters not whole panels
    (2, 8, 9, 7, 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),  # batch 2, stride 2
    (1, 16, 13, 11, 33, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1, 143 pixels
    (1, 4, 17, 17, 8, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),  # 7x7 stride 2
    (1, 12, 10, 9, 5, (3, 2), (1, 2), (0, 1, 2, 1), (2, 2), 1),  # dilated, uneven pads
    (1, 3, 8, 8, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # 3 channels: im2col
    (1, 8, 6, 6, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),  # grouped: im2col
]


@pytest.mark.parametrize("case", _QCONV_CASES)
@pytest.mark.parametrize("x_type,w_zero,per_channel,bias,y_type", [
    (np.uint8, 0, True, True, np.uint8),
    (np.uint8, 0, False, False, np.int8),
    (np.uint8, 3, True, True, np.uint8),  # a weight zero point: im2col
    (np.int8, 0, True, True, np.int8),  # int8 x: im2col
])
def test_qlinear_conv_constant_weights(case, x_type, w_zero, per_channel, bias, y_type):
    from onnx.reference import ReferenceEvaluator

    batch, channels, height, width, filters, kernel, strides, pads, dilations, group = case
    rng = np.random.default_rng(sum(case[:5]) + w_zero)
    info = np.iinfo(x_type)
    x = rng.integers(info.min, info.max + 1, (batch, channels, height, width)).astype(x_type)
    w = rng.integers(-128, 128, (filters, channels // group) + kernel).astype(np.int8)
    w_scale = (rng.uniform(0.002, 0.01, filters) if per_channel else np.array(0.004)).astype(np.float32)
    w_zp = np.full(w_scale.shape, w_zero, np.int8)
    y_info = np.iinfo(y_type)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(info.min + 101, x_type), "xz"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_scale, "ws"),
             numpy_helper.from_array(w_zp, "wz"), numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
             numpy_helper.from_array(np.array(y_info.min + 117, y_type), "yz")]
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits.append(numpy_helper.from_array(rng.integers(-3000, 3000, filters).astype(np.int32), "b"))
        inputs.append("b")
    node = helper.make_node("QLinearConv", inputs, ["y"], kernel_shape=list(kernel), strides=list(strides),
                            pads=list(pads), dilations=list(dilations), group=group)
    graph = helper.make_graph([node], "qconv", [helper.make_tensor_value_info("x", _ELEM[x.dtype], list(x.shape))],
                              [helper.make_tensor_value_info("y", _ELEM[np.dtype(y_type)], None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    for threads in (1, 2):
        options = onyx.SessionOptions()
        options.intra_op_num_threads = threads
        actual = onyx.InferenceSession(model.SerializeToString(), options).run(None, {"x": x})[0]
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        np.testing.assert_array_equal(actual, expected, err_msg=f"threads={threads}")
