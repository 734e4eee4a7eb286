"""The com.microsoft operators of exported and optimized transformer models:
each one-node model, under several attribute and input combinations, run on
seeded random inputs through onnxruntime (CPU) and onyx must agree within
rtol=1e-4, atol=1e-5."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
onyx = pytest.importorskip("onyx")

_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
         np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(np.float16): TensorProto.FLOAT16}


def _model(op_type, inputs, n_outputs, attrs, domain="com.microsoft", out_types=None, constants=()):
    """One node of op_type; inputs is a list of arrays or None (an omitted
    optional input); n_outputs an int or a list of booleans (False: omitted);
    constants: indices of inputs given as initializers (weights a kernel packs)."""
    flags = [True] * n_outputs if isinstance(n_outputs, int) else list(n_outputs)
    in_names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    while in_names and in_names[-1] == "":
        in_names.pop()
    out_names = [f"out{i}" if f else "" for i, f in enumerate(flags)]
    while out_names and out_names[-1] == "":
        out_names.pop()
    node = helper.make_node(op_type, in_names, out_names, domain=domain, name="node", **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, _ELEM[a.dtype], list(a.shape))
                    for i, (n, a) in enumerate(zip(in_names, inputs)) if a is not None and i not in constants]
    initializers = [numpy_helper.from_array(a, n) for i, (n, a) in enumerate(zip(in_names, inputs))
                    if a is not None and i in constants]
    out_types = out_types or {}
    # Outputs default to the element type of the first float input.
    floats = [a for a in inputs if a is not None and a.dtype.kind == "f"]
    default_type = _ELEM[(floats[0] if floats else inputs[0]).dtype]
    graph_outputs = [helper.make_tensor_value_info(n, out_types.get(i, default_type), None)
                     for i, n in enumerate(out_names) if n]
    graph = helper.make_graph([node], "contrib", graph_inputs, graph_outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    feeds = {n: a for i, (n, a) in enumerate(zip(in_names, inputs)) if a is not None and i not in constants}
    return model.SerializeToString(), feeds


def check(op_type, inputs, n_outputs=1, attrs=None, domain="com.microsoft", out_types=None, rtol=1e-4, atol=1e-5,
          onyx_inputs=None, constants=()):
    """onyx_inputs: the same values in a layout onnxruntime's CPU kernel lacks
    (packed QKV, a 4-D mask, ...): onyx runs those, onnxruntime the plain `inputs`."""
    model, feeds = _model(op_type, inputs, n_outputs, attrs or {}, domain, out_types, constants)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    if onyx_inputs is not None:
        model, feeds = _model(op_type, onyx_inputs, n_outputs, attrs or {}, domain, out_types, constants)
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


@pytest.mark.parametrize("op,bias", [("Gelu", False), ("BiasGelu", True), ("FastGelu", False), ("FastGelu", True)])
@pytest.mark.parametrize("shape", [(3, 40, 771), (1, 16, 3072)])
def test_gelu_large(op, bias, shape):
    """Shapes that take the vectorized row passes, split over threads, with a
    row length that is not a multiple of the vector width."""
    rng = np.random.default_rng(8)
    inputs = [rand(rng, *shape, scale=3)] + ([rand(rng, shape[-1])] if bias else [])
    check(op, inputs)


@pytest.mark.parametrize("hidden", [768, 777])
@pytest.mark.parametrize("offset", [0.0, 100.0])
@pytest.mark.parametrize("outputs", [1, 4])
def test_skip_layer_norm_large(hidden, offset, outputs):
    """BERT-sized rows, also far from zero mean (where E[x^2] - mean^2 would
    cancel), with a skip shared by the batch."""
    rng = np.random.default_rng(9)
    x = rand(rng, 2, 64, hidden) + np.float32(offset)
    inputs = [x, rand(rng, 64, hidden), rand(rng, hidden), rand(rng, hidden), rand(rng, hidden)]
    # Far from zero mean onnxruntime's own float result is off by ~3e-4 from a
    # float64 evaluation (onyx's by ~6e-5), hence the wider atol there.
    tol = 1e-3 if offset else 1e-5
    check("SkipLayerNormalization", inputs, outputs, {"epsilon": 1e-12}, out_types={1: TensorProto.FLOAT, 2: TensorProto.FLOAT},
          rtol=1e-4, atol=tol)
    check("SkipSimplifiedLayerNormalization", [x, inputs[1], inputs[2]], 1, {"epsilon": 1e-6}, atol=tol)


def test_skip_layer_norm_float16():
    rng = np.random.default_rng(10)
    x, skip = rand(rng, 2, 5, 40, dtype=np.float16), rand(rng, 2, 5, 40, dtype=np.float16)
    gamma, beta = rand(rng, 40, dtype=np.float16), rand(rng, 40, dtype=np.float16)
    check("SkipLayerNormalization", [x, skip, gamma, beta], 1, {"epsilon": 1e-5}, rtol=2e-3, atol=2e-3)


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


@pytest.mark.parametrize("shape", [(2, 1), (1, 1), (1, "heads"), (2, "heads")])
def test_attention_bias_broadcast(shape):
    """attention_bias [B or 1, heads or 1, S, T]: [B, 1, S, T] is the additive
    mask transformers exports build from attention_mask."""
    rng = np.random.default_rng(16)
    batch, seq, hidden, heads = 2, 5, 16, 4
    x, w, b = rand(rng, batch, seq, hidden), rand(rng, hidden, 3 * hidden, scale=0.3), rand(rng, 3 * hidden)
    bias_shape = (shape[0], heads if shape[1] == "heads" else 1, seq, seq)
    check("Attention", [x, w, b, None, None, rand(rng, *bias_shape)], attrs={"num_heads": heads})
    m = np.array([4, 5], np.int32)
    check("Attention", [x, w, b, m, None, rand(rng, *bias_shape)], attrs={"num_heads": heads, "unidirectional": 1})


def test_attention_mask_index_forms():
    """mask_index [3 * B + 2] (its first B values are the key lengths), raw
    masks with values other than 0 and 1 (> 0 attends), and the 4-D
    [B, 1, max, max] form, which onnxruntime's CPU kernel lacks: there its
    rows past..past+S and columns :T are run as the equivalent 3-D mask."""
    rng = np.random.default_rng(17)
    batch, seq, past_len, hidden, heads = 2, 3, 2, 16, 2
    total, max_len = past_len + seq, 7
    x, w, b = rand(rng, batch, seq, hidden), rand(rng, hidden, 3 * hidden, scale=0.3), rand(rng, 3 * hidden)
    attrs = {"num_heads": heads}
    check("Attention", [x, w, b, np.array([2, 3, 1, 0, 3, 1, 5, 4], np.int32)], attrs=attrs)
    check("Attention", [x, w, b, np.array([[2, -1, 1], [0, 1, 5]], np.int32)], attrs=attrs)
    m3 = np.array([[[1, 2, 0], [-3, 1, 1], [1, 0, 7]], [[1, 1, 1], [0, 1, -1], [1, 1, 0]]], np.int32)
    check("Attention", [x, w, b, m3], attrs=attrs)
    past = rand(rng, 2, batch, heads, past_len, hidden // heads)
    m4 = (rng.random((batch, 1, max_len, max_len)) > 0.3).astype(np.int32)
    m4[:, :, :, 0] = 1
    same_3d = np.ascontiguousarray(m4[:, 0, past_len:past_len + seq, :total])
    for uni in (0, 1):
        check("Attention", [x, w, b, same_3d, past], 2, attrs={"num_heads": heads, "unidirectional": uni},
              onyx_inputs=[x, w, b, m4, past])


@pytest.mark.parametrize("batch,seq,past_len,heads,head", [(1, 64, 0, 1, 16), (2, 40, 0, 4, 24), (1, 1, 37, 4, 16),
                                                           (2, 9, 20, 3, 32)])
@pytest.mark.parametrize("mask", [None, "2d", "bias"])
def test_attention_large(batch, seq, past_len, heads, head, mask):
    """Shapes past the microkernel tiles, constant (pre-packed) weights, past
    and present, a single query against a long past, and one head whose
    queries are split over threads."""
    rng = np.random.default_rng(18)
    hidden = heads * head
    total = past_len + seq
    x, w, b = rand(rng, batch, seq, hidden), rand(rng, hidden, 3 * hidden, scale=0.2), rand(rng, 3 * hidden)
    m = ab = None
    if mask == "2d":
        m = (rng.random((batch, total)) > 0.2).astype(np.int32)
        m[:, 0] = 1
    elif mask == "bias":
        if past_len:
            pytest.skip("onnxruntime's Attention takes past or attention_bias, not both")
        ab = rand(rng, batch, 1, seq, total)
    past = rand(rng, 2, batch, heads, past_len, head) if past_len else None
    attrs = {"num_heads": heads, "unidirectional": int(past_len > 0)}
    check("Attention", [x, w, b, m, past, ab], 2 if past_len else 1, attrs, constants=(1, 2), rtol=2e-4, atol=2e-5)


# ------------------------------------------------------- MultiHeadAttention

def _mha_inputs(rng, batch=2, seq=3, kv_seq=4, heads=2, head=4, v_head=None, bias=True):
    v_head = v_head or head
    q = rand(rng, batch, seq, heads * head)
    k = rand(rng, batch, kv_seq, heads * head)
    v = rand(rng, batch, kv_seq, heads * v_head)
    b = rand(rng, 2 * heads * head + heads * v_head) if bias else None
    return q, k, v, b


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("seq,kv_seq", [(3, 3), (3, 5), (1, 4)])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_mha_separate(bias, seq, kv_seq, unidirectional):
    rng = np.random.default_rng(20)
    q, k, v, b = _mha_inputs(rng, seq=seq, kv_seq=kv_seq, bias=bias)
    check("MultiHeadAttention", [q, k, v, b], 1, {"num_heads": 2, "unidirectional": unidirectional})


def test_mha_v_head_size_and_scale():
    rng = np.random.default_rng(21)
    q, k, v, b = _mha_inputs(rng, heads=3, head=4, v_head=6)
    check("MultiHeadAttention", [q, k, v, b], 1, {"num_heads": 3, "scale": 0.3})


@pytest.mark.parametrize("mask", ["lengths", "lengths_3b2", "keys", "query_keys"])
@pytest.mark.parametrize("mask_filter_value", [None, -30.0])
def test_mha_key_padding_mask(mask, mask_filter_value):
    rng = np.random.default_rng(22)
    batch, seq, kv_seq = 2, 3, 5
    q, k, v, b = _mha_inputs(rng, batch=batch, seq=seq, kv_seq=kv_seq)
    if mask == "lengths":
        m = np.array([3, 5], np.int32)
    elif mask == "lengths_3b2":
        m = np.array([2, 4, 0, 0, 0, 0, 0, 0], np.int32)
    elif mask == "keys":
        m = np.array([[1, 0, 1, 1, 0], [1, 1, 1, 1, 0]], np.int32)
    else:
        m = (rng.random((batch, seq, kv_seq)) > 0.4).astype(np.int32)
        m[:, :, 0] = 1
    attrs = {"num_heads": 2}
    if mask_filter_value is not None:
        attrs["mask_filter_value"] = mask_filter_value
    check("MultiHeadAttention", [q, k, v, b, m], 1, attrs)


@pytest.mark.parametrize("bias_shape", [(2, 2, 3, 4), (1, 1, 3, 4), (2, 1, 3, 4), (1, 2, 3, 4)])
def test_mha_attention_bias(bias_shape):
    rng = np.random.default_rng(23)
    q, k, v, b = _mha_inputs(rng)
    check("MultiHeadAttention", [q, k, v, b, None, rand(rng, *bias_shape)], 1, {"num_heads": 2})


@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("with_mask", [False, True])
def test_mha_past_present(unidirectional, with_mask):
    rng = np.random.default_rng(24)
    batch, seq, past, heads, head = 2, 3, 5, 2, 4
    q, k, v, b = _mha_inputs(rng, batch=batch, seq=seq, kv_seq=seq, heads=heads, head=head)
    pk, pv = rand(rng, batch, heads, past, head), rand(rng, batch, heads, past, head)
    m = None
    if with_mask:
        m = np.ones((batch, past + seq), np.int32)
        m[0, 1] = 0
        m[1, 6] = 0
    check("MultiHeadAttention", [q, k, v, b, m, None, pk, pv], 3, {"num_heads": heads, "unidirectional": unidirectional})


def test_mha_qk_output():
    rng = np.random.default_rng(25)
    q, k, v, b = _mha_inputs(rng, seq=4, kv_seq=4)
    m = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32)
    check("MultiHeadAttention", [q, k, v, b, m, rand(rng, 2, 2, 4, 4)], 4, {"num_heads": 2, "unidirectional": 1})
    check("MultiHeadAttention", [q, k, v, b], [True, False, False, True], {"num_heads": 2, "scale": 0.5})


def test_mha_kv_per_head():
    """key/value given as [batch, heads, kv_seq, head_size] (cross attention): no bias on them."""
    rng = np.random.default_rng(26)
    q, _, _, b = _mha_inputs(rng)
    k, v = rand(rng, 2, 2, 4, 4), rand(rng, 2, 2, 4, 4)
    check("MultiHeadAttention", [q, k, v, b], 3, {"num_heads": 2})
    check("MultiHeadAttention", [q, k, v, None, np.array([2, 4], np.int32)], 1, {"num_heads": 2})


def _pack(q, k, v, heads, which):
    batch, seq = q.shape[:2]
    split = lambda x: x.reshape(x.shape[0], x.shape[1], heads, -1)
    if which == "qkv":
        return np.ascontiguousarray(np.stack([split(q), split(k), split(v)], axis=3))
    return np.ascontiguousarray(np.stack([split(k), split(v)], axis=3))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_mha_packed_qkv(bias, unidirectional):
    """onnxruntime's CPU kernel lacks packed QKV: it runs the same values unpacked."""
    rng = np.random.default_rng(27)
    q, k, v, b = _mha_inputs(rng, seq=4, kv_seq=4, bias=bias)
    packed = _pack(q, k, v, 2, "qkv")
    attrs = {"num_heads": 2, "unidirectional": unidirectional}
    check("MultiHeadAttention", [q, k, v, b], 1, attrs, onyx_inputs=[packed, None, None, b])
    pk, pv = rand(rng, 2, 2, 3, 4), rand(rng, 2, 2, 3, 4)
    check("MultiHeadAttention", [q, k, v, b, None, None, pk, pv], 3, attrs,
          onyx_inputs=[packed, None, None, b, None, None, pk, pv])


@pytest.mark.parametrize("bias", [False, True])
def test_mha_packed_kv(bias):
    rng = np.random.default_rng(28)
    q, k, v, b = _mha_inputs(rng, seq=3, kv_seq=5, bias=bias)
    packed = _pack(q, k, v, 2, "kv")
    m = np.array([4, 5], np.int32)
    check("MultiHeadAttention", [q, k, v, b, m], 1, {"num_heads": 2}, onyx_inputs=[q, packed, None, b, m])


@pytest.mark.parametrize("batch,seq,past_len,heads,head", [(1, 1, 129, 12, 64), (2, 48, 0, 4, 24), (1, 64, 0, 1, 16),
                                                           (2, 5, 17, 3, 32)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_mha_large(batch, seq, past_len, heads, head, with_bias):
    """GPT-2 decode (one query, a long past, the [B, 1, S, T] additive mask,
    present outputs) and BERT-like shapes past the microkernel tiles."""
    rng = np.random.default_rng(19)
    hidden, total = heads * head, past_len + seq
    q, k, v = (rand(rng, batch, seq, hidden) for _ in range(3))
    b = rand(rng, 3 * hidden) if with_bias else None
    ab = rand(rng, batch, 1, seq, total)
    if past_len:
        pk, pv = rand(rng, batch, heads, past_len, head), rand(rng, batch, heads, past_len, head)
        check("MultiHeadAttention", [q, k, v, b, None, ab, pk, pv], 3, {"num_heads": heads}, rtol=2e-4, atol=2e-5)
    else:
        check("MultiHeadAttention", [q, k, v, b, None, ab], 1, {"num_heads": heads, "unidirectional": 1}, rtol=2e-4,
              atol=2e-5)


# ------------------------------------------------- EmbedLayerNormalization

@pytest.mark.parametrize("segments", [False, True])
@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("position_ids", [None, "shared", "per_batch"])
@pytest.mark.parametrize("outputs", [2, 3])
def test_embed_layer_norm(segments, mask, position_ids, outputs):
    rng = np.random.default_rng(30)
    batch, seq, hidden, vocab, max_pos = 2, 5, 16, 11, 7
    ids = rng.integers(0, vocab, (batch, seq)).astype(np.int32)
    seg_ids = rng.integers(0, 2, (batch, seq)).astype(np.int32) if segments else None
    seg_table = rand(rng, 2, hidden) if segments else None
    m = np.array([[1, 1, 1, 0, 0], [1, 1, 0, 1, 1]], np.int32) if mask else None
    pos = None
    if position_ids == "shared":
        pos = rng.integers(0, max_pos, (1, seq)).astype(np.int32)
    elif position_ids == "per_batch":
        pos = rng.integers(0, max_pos, (batch, seq)).astype(np.int32)
    inputs = [ids, seg_ids, rand(rng, vocab, hidden), rand(rng, max_pos, hidden), seg_table, rand(rng, hidden),
              rand(rng, hidden), m, pos]
    check("EmbedLayerNormalization", inputs, outputs, {"epsilon": 1e-5}, out_types={1: TensorProto.INT32})


def test_embed_layer_norm_default_epsilon():
    rng = np.random.default_rng(31)
    ids = rng.integers(0, 5, (1, 3)).astype(np.int32)
    check("EmbedLayerNormalization", [ids, None, rand(rng, 5, 8), rand(rng, 4, 8), None, rand(rng, 8), rand(rng, 8)], 2,
          out_types={1: TensorProto.INT32})


def test_embed_layer_norm_bad_index():
    rng = np.random.default_rng(32)
    ids = np.array([[0, 9]], np.int32)
    model, feeds = _model("EmbedLayerNormalization", [ids, None, rand(rng, 5, 8), rand(rng, 4, 8), None, rand(rng, 8),
                                                      rand(rng, 8)], 2, {}, "com.microsoft", {1: TensorProto.INT32})
    with pytest.raises(Exception, match="out of range"):
        onyx.InferenceSession(model).run(None, feeds)


# --------------------------------------------------------- RotaryEmbedding

@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("positions", ["start", "per_token"])
@pytest.mark.parametrize("layout", ["bsd", "bnsh"])
@pytest.mark.parametrize("partial", [False, True])
def test_rotary_embedding(interleaved, positions, layout, partial):
    rng = np.random.default_rng(40)
    batch, seq, heads, head, max_pos = 2, 3, 2, 8, 10
    rot = 4 if partial else head
    x = rand(rng, batch, seq, heads * head) if layout == "bsd" else rand(rng, batch, heads, seq, head)
    pos = np.array([2], np.int64) if positions == "start" else rng.integers(0, max_pos, (batch, seq)).astype(np.int64)
    attrs = {"interleaved": interleaved}
    if partial:
        attrs.update(rotary_embedding_dim=rot, num_heads=heads)
    check("RotaryEmbedding", [x, pos, rand(rng, max_pos, rot // 2), rand(rng, max_pos, rot // 2)], 1, attrs)


def test_rotary_embedding_num_heads_and_scale():
    rng = np.random.default_rng(41)
    x = rand(rng, 1, 4, 3 * 6)
    pos = rng.integers(0, 8, (1, 4)).astype(np.int64)
    cos, sin = rand(rng, 8, 3), rand(rng, 8, 3)
    check("RotaryEmbedding", [x, pos, cos, sin], 1, {"num_heads": 3})
    check("RotaryEmbedding", [x, pos, cos, sin], 1, {"scale": 2.0, "is_packed_batching": 1})


def test_rotary_embedding_position_out_of_range():
    rng = np.random.default_rng(42)
    x = rand(rng, 1, 3, 8)
    model, feeds = _model("RotaryEmbedding", [x, np.array([9], np.int64), rand(rng, 10, 4), rand(rng, 10, 4)], 1, {},
                          "com.microsoft")
    with pytest.raises(Exception, match="out of range"):
        onyx.InferenceSession(model).run(None, feeds)


# ----------------------------------------------------- GroupQueryAttention

def _gqa(rng, batch, seq, heads, kv_heads, head):
    return (rand(rng, batch, seq, heads * head), rand(rng, batch, seq, kv_heads * head),
            rand(rng, batch, seq, kv_heads * head))


def _gqa_inputs(q, k, v, past_k=None, past_v=None, seqlens=None, total=None, cos=None, sin=None, position_ids=None,
                attention_bias=None, head_sink=None):
    return [q, k, v, past_k, past_v, np.asarray(seqlens, np.int32), np.asarray(total, np.int32), cos, sin, position_ids,
            attention_bias, head_sink]


@pytest.mark.parametrize("heads,kv_heads", [(4, 2), (4, 4), (6, 1)])
@pytest.mark.parametrize("packed", [False, True])
def test_gqa_prompt(heads, kv_heads, packed):
    rng = np.random.default_rng(50)
    batch, seq, head = 2, 5, 8
    q, k, v = _gqa(rng, batch, seq, heads, kv_heads, head)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    inputs = _gqa_inputs(q, k, v, seqlens=[seq - 1] * batch, total=seq)
    if packed:
        # onnxruntime takes packed QKV too, so both run the packed form.
        inputs[0], inputs[1], inputs[2] = np.concatenate([q, k, v], axis=-1), None, None
    check("GroupQueryAttention", inputs, 3, attrs)


@pytest.mark.parametrize("seq", [1, 3])
def test_gqa_decode_with_past(seq):
    rng = np.random.default_rng(51)
    # onnxruntime takes several new tokens after a past only for batch 1.
    batch, heads, kv_heads, head, past = (2 if seq == 1 else 1), 4, 2, 8, 6
    q, k, v = _gqa(rng, batch, seq, heads, kv_heads, head)
    pk, pv = rand(rng, batch, kv_heads, past, head), rand(rng, batch, kv_heads, past, head)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    # Ragged batch: entry 1 has fewer cached tokens than the buffer holds.
    seqlens = [past + seq - 1, past + seq - 3][:batch] if seq == 1 else [past + seq - 3]
    check("GroupQueryAttention", _gqa_inputs(q, k, v, pk, pv, seqlens, past + seq), 3, attrs)
    # A growing cache: total beyond the past buffer.
    check("GroupQueryAttention", _gqa_inputs(q, k, v, pk, pv, [past + seq - 1] * batch, past + seq), 3, attrs)


@pytest.mark.parametrize("attrs", [
    {"softcap": 2.0}, {"local_window_size": 1}, {"local_window_size": 3}, {"smooth_softmax": 1}, {"scale": 0.3},
    {"causal": 0}])
def test_gqa_attributes(attrs):
    rng = np.random.default_rng(52)
    batch, seq, heads, kv_heads, head = 2, 6, 4, 2, 8
    q, k, v = _gqa(rng, batch, seq, heads, kv_heads, head)
    attrs = dict(attrs, num_heads=heads, kv_num_heads=kv_heads)
    check("GroupQueryAttention", _gqa_inputs(q, k, v, seqlens=[seq - 1] * batch, total=seq), 3, attrs)
    pk, pv = rand(rng, batch, kv_heads, 5, head), rand(rng, batch, kv_heads, 5, head)
    q1, k1, v1 = _gqa(rng, batch, 1, heads, kv_heads, head)
    check("GroupQueryAttention", _gqa_inputs(q1, k1, v1, pk, pv, [5, 3], 6), 3, attrs)


def test_gqa_head_sink_and_attention_bias():
    rng = np.random.default_rng(53)
    batch, seq, heads, kv_heads, head = 2, 4, 4, 2, 8
    q, k, v = _gqa(rng, batch, seq, heads, kv_heads, head)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    base = dict(seqlens=[seq - 1] * batch, total=seq)
    check("GroupQueryAttention", _gqa_inputs(q, k, v, head_sink=rand(rng, heads), **base), 3, attrs)
    for shape in [(batch, heads, seq, seq), (1, 1, seq, seq), (1, heads, seq, seq)]:
        check("GroupQueryAttention", _gqa_inputs(q, k, v, attention_bias=rand(rng, *shape), **base), 3, attrs)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("partial", [False, True])
def test_gqa_rotary(interleaved, partial):
    # onnxruntime's CPU rotary path wants head sizes in multiples of 16.
    rng = np.random.default_rng(54)
    batch, seq, heads, kv_heads, head, max_pos = 2, 4, 4, 2, 32, 16
    half = 8 if partial else head // 2
    cos, sin = rand(rng, max_pos, half), rand(rng, max_pos, half)
    q, k, v = _gqa(rng, batch, seq, heads, kv_heads, head)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads, "do_rotary": 1, "rotary_interleaved": interleaved}
    check("GroupQueryAttention", _gqa_inputs(q, k, v, seqlens=[seq - 1] * batch, total=seq, cos=cos, sin=sin), 3, attrs)
    pos = np.array([[2, 3, 4, 5], [2, 3, 4, 5]], np.int64)
    check("GroupQueryAttention", _gqa_inputs(q, k, v, seqlens=[seq - 1] * batch, total=seq, cos=cos, sin=sin,
                                             position_ids=pos), 3, attrs)
    pk, pv = rand(rng, batch, kv_heads, 7, head), rand(rng, batch, kv_heads, 7, head)
    q1, k1, v1 = _gqa(rng, batch, 1, heads, kv_heads, head)
    check("GroupQueryAttention", _gqa_inputs(q1, k1, v1, pk, pv, [7, 4], 8, cos, sin), 3, attrs)
    check("GroupQueryAttention", _gqa_inputs(q1, k1, v1, pk, pv, [7, 4], 8, cos, sin,
                                             np.array([[9], [3]], np.int64)), 3, attrs)
    packed = np.concatenate([q, k, v], axis=-1)
    check("GroupQueryAttention", _gqa_inputs(packed, None, None, seqlens=[seq - 1] * batch, total=seq, cos=cos, sin=sin),
          3, attrs)


@pytest.mark.parametrize("mode", [1, 2])
def test_gqa_qk_output(mode):
    rng = np.random.default_rng(55)
    batch, seq, heads, kv_heads, head = 2, 4, 4, 2, 8
    q, k, v = _gqa(rng, batch, seq, heads, kv_heads, head)
    check("GroupQueryAttention", _gqa_inputs(q, k, v, seqlens=[seq - 1] * batch, total=seq), 4,
          {"num_heads": heads, "kv_num_heads": kv_heads, "qk_output": mode})


# ------------------------------------------ BiasAdd, BiasSplitGelu (no CPU kernel in onnxruntime)

def _run_onyx(op_type, inputs, attrs=None):
    model, feeds = _model(op_type, inputs, 1, attrs or {}, "com.microsoft")
    return np.asarray(onyx.InferenceSession(model).run(None, feeds)[0])


def test_bias_add():
    # onnxruntime has BiasAdd only on CUDA: compare with its definition.
    rng = np.random.default_rng(60)
    x, bias, skip = rand(rng, 2, 6, 8), rand(rng, 8), rand(rng, 2, 6, 8)
    np.testing.assert_allclose(_run_onyx("BiasAdd", [x, bias, skip]), x + bias + skip, rtol=1e-6, atol=1e-6)


def test_bias_split_gelu():
    from math import erf
    rng = np.random.default_rng(61)
    x, bias = rand(rng, 2, 5, 12), rand(rng, 12)
    h = x + bias
    left, right = h[..., :6].astype(np.float64), h[..., 6:].astype(np.float64)
    gelu = 0.5 * right * (1 + np.vectorize(erf)(right / np.sqrt(2)))
    np.testing.assert_allclose(_run_onyx("BiasSplitGelu", [x, bias]), left * gelu, rtol=1e-5, atol=1e-6)


# ------------------------------------------- Attention: random configurations

@pytest.mark.parametrize("trial", range(12))
def test_attention_random(trial):
    """Random batch, lengths, past, mask form and mask_filter_value."""
    rng = np.random.default_rng(100 + trial)
    batch, seq, heads, hidden = int(rng.integers(1, 3)), int(rng.integers(1, 5)), 2, 8
    past_len = int(rng.integers(1, 4)) if trial % 2 else 0
    total = past_len + seq
    x = rand(rng, batch, seq, hidden)
    w, b = rand(rng, hidden, 3 * hidden, scale=0.5), rand(rng, 3 * hidden)
    kind = trial % 5
    m = None
    if kind == 1:
        m = rng.integers(1, total + 1, batch).astype(np.int32)
    elif kind == 2:
        m = np.concatenate([rng.integers(1, total + 1, batch), np.zeros(batch)]).astype(np.int32)
    elif kind == 3:
        m = (rng.random((batch, total)) > 0.3).astype(np.int32)
        m[:, 0] = 1
    elif kind == 4:
        m = (rng.random((batch, seq, total)) > 0.3).astype(np.int32)
        m[:, :, 0] = 1
    attrs = {"num_heads": heads, "unidirectional": trial % 3 == 0, "mask_filter_value": -50.0 if trial % 4 == 0 else -10000.0}
    inputs = [x, w, b, m]
    if past_len:
        inputs.append(rand(rng, 2, batch, heads, past_len, hidden // heads))
    check("Attention", inputs, 2 if past_len else 1, attrs)
