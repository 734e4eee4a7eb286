"""Gradient rules of element-wise math, activations, matrix products, data
movement and reductions, each checked against float64 finite differences
(gradcheck.py)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gradcheck import check_gradient

import onyx

RNG = np.random.default_rng(1)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape)


def away_from_zero(*shape):
    """Values in +-[0.2, 1]: clear of the kink of Abs, LeakyRelu, Elu..."""
    return rand(*shape, low=0.2, high=1.0) * RNG.choice([-1.0, 1.0], size=shape)


def ints(values):
    return np.array(values, dtype=np.int64)


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


def const(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


# --- element-wise math and activations ---


@pytest.mark.parametrize(
    "a_shape,b_shape", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3), ())]
)
def test_pow(a_shape, b_shape):
    a = rand(*a_shape, low=0.5, high=2.0)
    b = rand(*b_shape, low=-1.5, high=2.5)
    check_gradient(node("Pow", ["a", "b"]), {"a": a, "b": b}, ["a", "b"])


def test_pow_integer_exponent_and_negative_base():
    check_gradient(node("Pow", ["a", "b"]), {"a": rand(3, 4), "b": ints([2, 3, 1, 2])}, ["a"])


# onnx's reference Erf rounds to float32 (also inside Gelu's function body),
# so the finite differences of graphs with Erf take a larger step: float32
# rounding over eps 1e-3 is ~1e-4, and the step's own error is ~1e-6.
ERF_EPS = 1e-3


@pytest.mark.parametrize(
    "op,x",
    [
        ("Sqrt", rand(3, 4, low=0.3, high=2.0)),
        ("Reciprocal", away_from_zero(3, 4)),
        ("Abs", away_from_zero(2, 3, 4)),
        ("Erf", rand(3, 4, low=-2.0, high=2.0)),
        ("Softplus", rand(3, 4, low=-3.0, high=3.0)),
    ],
)
def test_unary(op, x):
    check_gradient(node(op, ["x"]), {"x": x}, ["x"], eps=ERF_EPS if op == "Erf" else 1e-6)


@pytest.mark.parametrize("alpha", [None, 0.2])
def test_leaky_relu(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    check_gradient(node("LeakyRelu", ["x"], **attrs), {"x": away_from_zero(3, 5)}, ["x"])


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_elu(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    check_gradient(node("Elu", ["x"], **attrs), {"x": away_from_zero(3, 5) * 2}, ["x"])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rand(4, 5, low=-3.0, high=3.0)
    check_gradient(node("Gelu", ["x"], approximate=approximate), {"x": x}, ["x"], opset=20, eps=ERF_EPS)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_activations_in_float32_too(dtype):
    x = away_from_zero(3, 4)
    for op in ["Erf", "Softplus", "Elu", "LeakyRelu", "Abs"]:
        check_gradient(node(op, ["x"]), {"x": x}, ["x"], dtype=dtype, eps=ERF_EPS)
    check_gradient(node("Gelu", ["x"]), {"x": x}, ["x"], opset=20, dtype=dtype, eps=ERF_EPS)


def test_clip_min_and_max_inputs():
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4) + 0.013
    feeds = {"x": x, "lo": np.array(-0.45), "hi": np.array(0.52)}
    check_gradient(node("Clip", ["x", "lo", "hi"]), feeds, ["x", "lo", "hi"])


def test_clip_min_only_and_max_only():
    x = np.linspace(-1.0, 1.0, 10) + 0.013
    check_gradient(node("Clip", ["x", "lo"]), {"x": x, "lo": np.array(0.25)}, ["x", "lo"])
    check_gradient(node("Clip", ["x", "", "hi"]), {"x": x, "hi": np.array(-0.3)}, ["x", "hi"])


def test_clip_attributes_before_opset_11():
    x = np.linspace(-1.0, 1.0, 10) + 0.013
    check_gradient(node("Clip", ["x"], min=-0.4, max=0.3), {"x": x}, ["x"], opset=6)


def test_clip_without_bounds_is_the_identity():
    check_gradient(node("Clip", ["x"]), {"x": rand(5)}, ["x"])


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("b_shape", [(3, 4), (4,), (3, 1)])
def test_max_min(op, b_shape):
    check_gradient(node(op, ["a", "b"]), {"a": rand(3, 4), "b": rand(*b_shape)}, ["a", "b"])


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_three_inputs(op):
    feeds = {"a": rand(2, 3), "b": rand(3), "c": rand(2, 1)}
    check_gradient(node(op, ["a", "b", "c"]), feeds, ["a", "b", "c"])


def test_max_ties_go_to_one_input():
    # With a == b the finite difference is not defined; the rule must still
    # hand the whole gradient to one operand, never to both.
    a = np.array([1.0, 2.0, 3.0])
    da, db = onyx_gradient([node("Max", ["a", "b"])], {"a": a, "b": a.copy()}, ["a", "b"])
    np.testing.assert_allclose(da + db, np.ones(3))
    np.testing.assert_allclose(da * db, np.zeros(3))


def onyx_gradient(nodes, feeds, xs, initializers=()):
    """onyx's gradient of sum(y) (y the last node's output) over the
    float64 inputs xs, for cases finite differences cannot check."""
    y = nodes[-1].output[0]
    s = helper.make_node("ReduceSum", [y], ["s"], keepdims=0)
    grad = helper.make_node(
        "Gradient", xs, [f"d_{x}" for x in xs], domain="ai.onnx.preview.training", xs=xs, y="s"
    )
    graph = helper.make_graph(
        [*nodes, s, grad],
        "g",
        [helper.make_tensor_value_info(x, TensorProto.DOUBLE, feeds[x].shape) for x in xs],
        [helper.make_tensor_value_info(f"d_{x}", TensorProto.DOUBLE, None) for x in xs],
        initializer=list(initializers),
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )
    return onyx.InferenceSession(model.SerializeToString()).run(None, feeds)


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_sum_mean(op):
    feeds = {"a": rand(2, 3), "b": rand(3), "c": rand(2, 1)}
    check_gradient(node(op, ["a", "b", "c"]), feeds, ["a", "b", "c"])
    check_gradient(node(op, ["a"]), {"a": rand(4)}, ["a"])


# --- matrix products ---


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (3, 4, 2)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((4,), (2, 4, 3)),
        ((2, 3, 4), (4,)),
    ],
)
def test_matmul(a_shape, b_shape):
    check_gradient(node("MatMul", ["a", "b"]), {"a": rand(*a_shape), "b": rand(*b_shape)}, ["a", "b"])


def test_matmul_float32():
    check_gradient(node("MatMul", ["a", "b"]), {"a": rand(2, 3, 4), "b": rand(4)}, ["a", "b"], dtype=np.float32)


def test_matmul_only_one_operand():
    check_gradient(node("MatMul", ["a", "b"]), {"a": rand(3, 4), "b": rand(4, 2)}, ["b"])


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [(3, 5), (5,), (3, 1), ()])
def test_gemm(trans_a, trans_b, c_shape):
    a = rand(4, 3) if trans_a else rand(3, 4)
    b = rand(5, 4) if trans_b else rand(4, 5)
    feeds = {"a": a, "b": b, "c": rand(*c_shape)}
    gemm = node("Gemm", ["a", "b", "c"], transA=trans_a, transB=trans_b, alpha=0.7, beta=1.3)
    check_gradient(gemm, feeds, ["a", "b", "c"])


def test_gemm_without_c_and_defaults():
    check_gradient(node("Gemm", ["a", "b"]), {"a": rand(2, 3), "b": rand(3, 4)}, ["a", "b"])
    check_gradient(node("Gemm", ["a", "b"]), {"a": rand(2, 3), "b": rand(3, 4)}, ["a", "b"], dtype=np.float32)
