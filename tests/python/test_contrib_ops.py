"""The com.microsoft operators of exported and optimized transformer models:
each one-node model, under several attribute and input combinations, run on
seeded random inputs through onnxruntime (CPU) and onyx must agree within
rtol=1e-4, atol=1e-5."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

ort = pytest.importorskip("onnxruntime")
onyx = pytest.importorskip("onyx")

_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
         np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(np.float16): TensorProto.FLOAT16}


def _model(op_type, inputs, n_outputs, attrs, domain="com.microsoft", out_types=None):
    """One node of op_type; inputs is a list of arrays or None (an omitted
    optional input); n_outputs an int or a list of booleans (False: omitted)."""
    flags = [True] * n_outputs if isinstance(n_outputs, int) else list(n_outputs)
    in_names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    while in_names and in_names[-1] == "":
        in_names.pop()
    out_names = [f"out{i}" if f else "" for i, f in enumerate(flags)]
    while out_names and out_names[-1] == "":
        out_names.pop()
    node = helper.make_node(op_type, in_names, out_names, domain=domain, name="node", **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, _ELEM[a.dtype], list(a.shape))
                    for n, a in zip(in_names, inputs) if a is not None]
    out_types = out_types or {}
    graph_outputs = [helper.make_tensor_value_info(n, out_types.get(i, _ELEM[inputs[0].dtype]), None)
                     for i, n in enumerate(out_names) if n]
    graph = helper.make_graph([node], "contrib", graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    feeds = {n: a for n, a in zip(in_names, inputs) if a is not None}
    return model.SerializeToString(), feeds


def check(op_type, inputs, n_outputs=1, attrs=None, domain="com.microsoft", out_types=None, rtol=1e-4, atol=1e-5):
    model, feeds = _model(op_type, inputs, n_outputs, attrs or {}, domain, out_types)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    actual = onyx.InferenceSession(model).run(None, feeds)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        a = np.asarray(a)
        assert a.shape == e.shape, f"output {i}: shape {a.shape}, expected {e.shape}"
        assert a.dtype == e.dtype, f"output {i}: dtype {a.dtype}, expected {e.dtype}"
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{op_type} output {i}")
    return actual


def rand(rng, *shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# ---------------------------------------------------------------- activations

@pytest.mark.parametrize("shape", [(7,), (2, 3, 16), (1, 5, 33)])
def test_gelu(shape):
    # onnxruntime's CPU Gelu is float-only (its double form needs an Erf(double) it lacks).
    rng = np.random.default_rng(1)
    check("Gelu", [rand(rng, *shape, scale=3)])


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 16), (4, 17)])
def test_fast_gelu(with_bias, shape):
    rng = np.random.default_rng(2)
    x = rand(rng, *shape, scale=3)
    check("FastGelu", [x, rand(rng, shape[-1]) if with_bias else None])


@pytest.mark.parametrize("shape", [(2, 3, 16), (4, 17)])
def test_bias_gelu(shape):
    rng = np.random.default_rng(3)
    check("BiasGelu", [rand(rng, *shape, scale=3), rand(rng, shape[-1])])


@pytest.mark.parametrize("alpha", [None, 1.0, -0.5])
def test_quick_gelu(alpha):
    rng = np.random.default_rng(4)
    attrs = {} if alpha is None else {"alpha": alpha}
    check("QuickGelu", [rand(rng, 2, 5, 8, scale=3)], attrs=attrs)


# ------------------------------------------------------------ normalizations

@pytest.mark.parametrize("beta,bias", [(False, False), (True, False), (True, True), (False, True)])
@pytest.mark.parametrize("skip_shape", ["full", "2d"])
@pytest.mark.parametrize("outputs", [1, 4, [True, False, False, True]])
def test_skip_layer_norm(beta, bias, skip_shape, outputs):
    rng = np.random.default_rng(5)
    x = rand(rng, 2, 3, 16)
    skip = rand(rng, 2, 3, 16) if skip_shape == "full" else rand(rng, 3, 16)
    inputs = [x, skip, rand(rng, 16), rand(rng, 16) if beta else None, rand(rng, 16) if bias else None]
    check("SkipLayerNormalization", inputs, outputs, {"epsilon": 1e-5}, out_types={1: TensorProto.FLOAT, 2: TensorProto.FLOAT})


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("outputs", [1, [True, False, False, True]])
def test_skip_simplified_layer_norm(bias, outputs):
    rng = np.random.default_rng(6)
    x = rand(rng, 2, 4, 32)
    inputs = [x, rand(rng, 2, 4, 32), rand(rng, 32), rand(rng, 32) if bias else None]
    check("SkipSimplifiedLayerNormalization", inputs, outputs, {"epsilon": 1e-6})


@pytest.mark.parametrize("axis", [-1, -2, 1])
@pytest.mark.parametrize("outputs", [1, 2])
def test_simplified_layer_norm(axis, outputs):
    rng = np.random.default_rng(7)
    x = rand(rng, 2, 3, 8)
    norm_shape = x.shape[axis:] if axis < 0 else x.shape[axis:]
    check("SimplifiedLayerNormalization", [x, rand(rng, *norm_shape)], outputs, {"axis": axis, "epsilon": 1e-5},
          domain="", out_types={1: TensorProto.FLOAT})


# ------------------------------------------------------------------ matmuls

@pytest.mark.parametrize("a_shape,b_shape,ta,tb", [
    ((3, 4), (4, 5), 0, 0),
    ((4, 3), (4, 5), 1, 0),
    ((3, 4), (5, 4), 0, 1),
    ((2, 4, 3), (2, 5, 4), 1, 1),
    ((2, 1, 3, 4), (3, 4, 6), 0, 0),
    ((4,), (4, 5), 0, 0),
])
def test_fused_matmul(a_shape, b_shape, ta, tb):
    rng = np.random.default_rng(8)
    check("FusedMatMul", [rand(rng, *a_shape), rand(rng, *b_shape)], attrs={"alpha": 0.75, "transA": ta, "transB": tb})


@pytest.mark.parametrize("a_shape,b_shape,tba,tbb,ta,tb", [
    ((3, 2, 4), (2, 4, 5), 1, 0, 0, 0),
    ((2, 4, 5), (5, 2, 3), 0, 1, 0, 0),
    ((3, 2, 4), (5, 2, 4), 1, 1, 0, 1),
    ((4, 2, 3), (2, 4, 5), 1, 0, 1, 0),
])
def test_fused_matmul_trans_batch(a_shape, b_shape, tba, tbb, ta, tb):
    rng = np.random.default_rng(9)
    check("FusedMatMul", [rand(rng, *a_shape), rand(rng, *b_shape)],
          attrs={"transBatchA": tba, "transBatchB": tbb, "transA": ta, "transB": tb})


@pytest.mark.parametrize("activation,params", [
    ("Relu", None), ("Sigmoid", None), ("Tanh", None), ("LeakyRelu", [0.2]),
    ("HardSigmoid", [0.3, 0.4]), ("Clip", [-0.5, 0.5])])
def test_fused_conv(activation, params):
    rng = np.random.default_rng(10)
    attrs = {"activation": activation, "pads": [1, 1, 1, 1], "strides": [1, 2], "kernel_shape": [3, 3]}
    if params is not None:
        attrs["activation_params"] = params
    check("FusedConv", [rand(rng, 1, 3, 7, 8), rand(rng, 4, 3, 3, 3), rand(rng, 4)], attrs=attrs)


def test_fused_conv_sum_input():
    rng = np.random.default_rng(11)
    x, w, b = rand(rng, 1, 2, 5, 5), rand(rng, 3, 2, 3, 3), rand(rng, 3)
    z = rand(rng, 1, 3, 3, 3)
    check("FusedConv", [x, w, b, z], attrs={"activation": "Relu", "kernel_shape": [3, 3]})


@pytest.mark.parametrize("activation,attrs", [
    ("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.1}), ("Tanh", {}), ("Sigmoid", {}),
    ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.6})])
@pytest.mark.parametrize("trans", [(0, 0), (1, 1)])
def test_fused_gemm(activation, attrs, trans):
    rng = np.random.default_rng(12)
    ta, tb = trans
    a = rand(rng, 4, 3) if ta else rand(rng, 3, 4)
    b = rand(rng, 5, 4) if tb else rand(rng, 4, 5)
    attrs = dict(attrs, activation=activation, transA=ta, transB=tb, alpha=0.5, beta=2.0)
    check("FusedGemm", [a, b, rand(rng, 5)], attrs=attrs)


# ----------------------------------------------------------------- attention

@pytest.mark.parametrize("mask", [None, "1d", "1d_start_end", "2d", "3d"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention(mask, unidirectional):
    rng = np.random.default_rng(13)
    batch, seq, hidden, heads = 2, 4, 16, 2
    x, w, b = rand(rng, batch, seq, hidden), rand(rng, hidden, 3 * hidden, scale=0.3), rand(rng, 3 * hidden)
    m = None
    if mask == "1d":
        m = np.array([3, 4], np.int32)
    elif mask == "1d_start_end":
        m = np.array([3, 4, 1, 0], np.int32)
    elif mask == "2d":
        m = np.array([[1, 1, 0, 1], [1, 1, 1, 0]], np.int32)
    elif mask == "3d":
        m = (rng.random((batch, seq, seq)) > 0.3).astype(np.int32)
        m[:, :, 0] = 1
    check("Attention", [x, w, b, m], attrs={"num_heads": heads, "unidirectional": unidirectional})


def test_attention_past_and_bias():
    rng = np.random.default_rng(14)
    batch, seq, past_len, hidden, heads = 2, 3, 5, 16, 4
    x, w, b = rand(rng, batch, seq, hidden), rand(rng, hidden, 3 * hidden, scale=0.3), rand(rng, 3 * hidden)
    past = rand(rng, 2, batch, heads, past_len, hidden // heads)
    check("Attention", [x, w, b, None, past], 2, attrs={"num_heads": heads, "unidirectional": 1})
    mask = np.ones((batch, past_len + seq), np.int32)
    mask[0, 1] = 0
    check("Attention", [x, w, b, mask, past], 2, attrs={"num_heads": heads, "unidirectional": 1})
    attn_bias = rand(rng, batch, heads, seq, seq)
    check("Attention", [x, w, b, None, None, attn_bias], attrs={"num_heads": heads, "scale": 0.3})


def test_attention_qkv_hidden_sizes():
    rng = np.random.default_rng(15)
    batch, seq, hidden, heads = 2, 3, 8, 2
    x = rand(rng, batch, seq, hidden)
    w, b = rand(rng, hidden, 8 + 8 + 12, scale=0.3), rand(rng, 28)
    check("Attention", [x, w, b], attrs={"num_heads": heads, "qkv_hidden_sizes": [8, 8, 12]})
    check("Attention", [x, w, None], attrs={"num_heads": heads, "qkv_hidden_sizes": [8, 8, 12],
                                            "mask_filter_value": -1e4})
