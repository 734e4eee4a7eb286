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


# --- data movement ---


def test_reshape_flatten_squeeze_unsqueeze():
    x = rand(2, 3, 4)
    check_gradient(node("Reshape", ["x", "s"]), {"x": x}, ["x"], initializers=[const("s", [4, -1])])
    check_gradient(node("Flatten", ["x"], axis=2), {"x": x}, ["x"])
    check_gradient(node("Flatten", ["x"], axis=-1), {"x": x}, ["x"])
    y = rand(2, 1, 3, 1)
    check_gradient(node("Squeeze", ["x", "axes"]), {"x": y}, ["x"], initializers=[const("axes", [-1, 1])])
    check_gradient(node("Squeeze", ["x"]), {"x": y}, ["x"])
    check_gradient(node("Squeeze", ["x"], axes=[1]), {"x": y}, ["x"], opset=11)
    check_gradient(node("Unsqueeze", ["x", "axes"]), {"x": x}, ["x"], initializers=[const("axes", [0, -1])])
    check_gradient(node("Unsqueeze", ["x"], axes=[1]), {"x": x}, ["x"], opset=11)


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1]])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": perm}
    check_gradient(node("Transpose", ["x"], **attrs), {"x": rand(2, 3, 4)}, ["x"])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    shapes = {0: [(1, 3, 2), (2, 3, 2)], 1: [(2, 1, 2), (2, 3, 2)], -1: [(2, 3, 1), (2, 3, 3)]}[axis]
    feeds = {"a": rand(*shapes[0]), "b": rand(*shapes[1]), "c": rand(*shapes[1])}
    check_gradient(node("Concat", ["a", "b", "c"], axis=axis), feeds, ["a", "b", "c"])


def test_concat_input_used_twice():
    check_gradient(node("Concat", ["a", "a", "b"], axis=0), {"a": rand(2), "b": rand(3)}, ["a", "b"])


def test_split_forms():
    x = rand(6, 4)
    check_gradient(node("Split", ["x", "s"], ["p", "q"], axis=0), {"x": x}, ["x"], initializers=[const("s", [2, 4])])
    check_gradient(node("Split", ["x"], ["p", "q", "r"], axis=0, num_outputs=3), {"x": x}, ["x"], opset=18)
    check_gradient(node("Split", ["x"], ["p", "q"], axis=-1, split=[1, 3]), {"x": x}, ["x"], opset=11)
    check_gradient(node("Split", ["x"], ["p", "q"], axis=1), {"x": x}, ["x"])


def test_split_outputs_without_gradient_count_as_zeros():
    x = rand(3, 6)
    check_gradient(node("Split", ["x"], ["p", "q", "r"], axis=1), {"x": x}, ["x"], outputs=["q"])
    check_gradient(node("Split", ["x"], ["p", "q", "r"], axis=-1), {"x": x}, ["x"], outputs=["p", "r"])


@pytest.mark.parametrize(
    "starts,ends,axes,steps",
    [
        ([1], [3], None, None),
        ([0, 1], [2, -1], [0, 2], None),
        ([-1], [-10], [1], [-1]),
        ([3, 4], [0, 0], [0, -1], [-2, -3]),
        ([0, 1, 0], [100, 5, 4], [0, 1, 2], [2, 2, 3]),
        ([1], [1], [0], None),
    ],
)
def test_slice(starts, ends, axes, steps):
    inits = [const("starts", starts), const("ends", ends)]
    inputs = ["x", "starts", "ends"]
    if axes is not None or steps is not None:
        inits.append(const("axes", axes if axes is not None else list(range(len(starts)))))
        inputs.append("axes")
    if steps is not None:
        inits.append(const("steps", steps))
        inputs.append("steps")
    check_gradient(node("Slice", inputs), {"x": rand(4, 5, 6)}, ["x"], initializers=inits)


def test_slice_attributes_before_opset_10():
    check_gradient(node("Slice", ["x"], starts=[1, -3], ends=[3, 100], axes=[0, -1]), {"x": rand(4, 5)}, ["x"], opset=9)


def test_slice_float32():
    inits = [const("starts", [3]), const("ends", [-100]), const("axes", [1]), const("steps", [-2])]
    inputs = ["x", "starts", "ends", "axes", "steps"]
    check_gradient(node("Slice", inputs), {"x": rand(3, 5)}, ["x"], initializers=inits, dtype=np.float32)


@pytest.mark.parametrize(
    "x_shape,indices,axis",
    [
        ((5, 3), [0, 2, 2, -1], 0),
        ((2, 5, 3), [[1, -1], [1, 0]], 1),
        ((2, 3, 4), [3, 0, 3], -1),
        ((4, 3), 2, 0),
        ((4, 3), -1, 1),
    ],
)
def test_gather(x_shape, indices, axis):
    feeds = {"x": rand(*x_shape), "i": ints(indices)}
    check_gradient(node("Gather", ["x", "i"], axis=axis), feeds, ["x"])


def test_gather_float32():
    feeds = {"x": rand(5, 2), "i": ints([[4, 4], [0, -5]])}
    check_gradient(node("Gather", ["x", "i"]), feeds, ["x"], dtype=np.float32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = rand(3, 4)
    # (onnx's reference takes axis -1 only with indices of x's shape)
    shape = {0: (2, 4), 1: (3, 5), -1: (3, 4)}[axis]
    i = RNG.integers(-x.shape[axis], x.shape[axis], size=shape)
    check_gradient(node("GatherElements", ["x", "i"], axis=axis), {"x": x, "i": ints(i)}, ["x"])


def test_where():
    c = np.array([[True, False, True, False]])
    feeds = {"c": np.repeat(c, 3, axis=0), "a": rand(3, 4), "b": rand(4)}
    check_gradient(node("Where", ["c", "a", "b"]), feeds, ["a", "b"])
    check_gradient(node("Where", ["c", "a", "b"]), {**feeds, "a": rand(3, 1)}, ["a", "b"])


@pytest.mark.parametrize("x_shape,shape", [((3, 1), [2, 3, 4]), ((4,), [3, 4]), ((2, 3), [2, 3]), ((1,), [1, 5])])
def test_expand(x_shape, shape):
    check_gradient(node("Expand", ["x", "s"]), {"x": rand(*x_shape)}, ["x"], initializers=[const("s", shape)])


def test_cast_between_float_types():
    # Through float32 and back: the step is large enough to survive float32
    # rounding, and exact for the quadratic.
    nodes = [
        node("Cast", ["x"], ["c"], to=TensorProto.FLOAT),
        node("Mul", ["c", "c"], ["m"]),
        node("Cast", ["m"], ["y"], to=TensorProto.DOUBLE),
    ]
    check_gradient(nodes, {"x": rand(3, 4)}, ["x"], eps=1e-2)
    nodes = [node("Cast", ["x"], ["c"], to=TensorProto.DOUBLE), node("Tanh", ["c"], ["y"])]
    check_gradient(nodes, {"x": rand(3, 4)}, ["x"], outputs=["y"])


def test_cast_to_integer_passes_no_gradient():
    nodes = [
        node("Cast", ["x"], ["i"], to=TensorProto.INT64),
        node("Cast", ["i"], ["f"], to=TensorProto.DOUBLE),
        node("Add", ["f", "x"], ["y"]),
    ]
    check_gradient(nodes, {"x": rand(3, 4, low=0.1, high=0.9) * 5}, ["x"])


@pytest.mark.parametrize("x_shape,repeats", [((2, 3), [2, 1]), ((2, 3), [3, 2]), ((4,), [3]), ((1, 2, 2), [2, 2, 1])])
def test_tile(x_shape, repeats):
    check_gradient(node("Tile", ["x", "r"]), {"x": rand(*x_shape)}, ["x"], initializers=[const("r", repeats)])


@pytest.mark.parametrize(
    "pads,axes",
    [([1, 0, 2, 1], None), ([0, 2, 0, 0], None), ([1, 2], [-1]), ([2, 0], [0])],
)
def test_pad(pads, axes):
    inits = [const("pads", pads), numpy_helper.from_array(np.array(0.5), "v")]
    inputs = ["x", "pads", "v"]
    if axes is not None:
        inits.append(const("axes", axes))
        inputs.append("axes")
    check_gradient(node("Pad", inputs), {"x": rand(3, 4)}, ["x"], initializers=inits)


def test_pad_with_negative_pads_crops():
    # onnx's reference Pad takes no negative pads, so the expected gradient is
    # written out: the projection r lands on the elements y kept, zeros on
    # those cropped.
    x = rand(3, 4)
    r = rand(2, 3)
    grads = onyx_gradient(
        [node("Pad", ["x", "pads"], ["p"]), node("Mul", ["p", "r"], ["y"])],
        {"x": x},
        ["x"],
        [const("pads", [-1, 1, 0, -2]), numpy_helper.from_array(r, "r")],
    )
    expected = np.zeros_like(x)
    expected[1:, 0:2] = r[:, 1:]
    np.testing.assert_allclose(grads[0], expected)


def test_pad_attributes_before_opset_11():
    check_gradient(node("Pad", ["x"], pads=[1, 0, 0, 2], value=1.5), {"x": rand(2, 3)}, ["x"], opset=10)


def test_pad_without_value_and_float32():
    check_gradient(node("Pad", ["x", "pads"]), {"x": rand(2, 3)}, ["x"], initializers=[const("pads", [0, 1, 2, 0])])
    pads = [const("pads", [1, 1, 1, 1])]
    check_gradient(node("Pad", ["x", "pads"]), {"x": rand(2, 3)}, ["x"], initializers=pads, dtype=np.float32)


def test_shape_and_size_pass_no_gradient():
    # Shape and Size have no rule: their integer results reach y only through
    # Cast (no gradient) and shape inputs (none), so they are never asked.
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Size", ["x"], ["n"]),
        node("Gather", ["s", "zero"], ["d"]),
        node("Concat", ["d", "minus_one"], ["t"], axis=0),
        node("Reshape", ["x", "t"], ["r"]),
        node("Cast", ["n"], ["nf"], to=TensorProto.DOUBLE),
        node("Mul", ["r", "nf"], ["y"]),
    ]
    inits = [const("zero", [0]), const("minus_one", [-1])]
    check_gradient(nodes, {"x": rand(2, 3, 2)}, ["x"], initializers=inits)


# --- reductions ---


def _reduce(op, axes, keepdims, opset):
    """A reduction node and its initializers, axes as an input from opset 18
    (13 for ReduceSum) and an attribute before."""
    attrs = {} if keepdims is None else {"keepdims": keepdims}
    if axes is None:
        return node(op, ["x"], **attrs), []
    if opset >= 18:
        return node(op, ["x", "axes"], **attrs), [const("axes", axes)]
    return node(op, ["x"], axes=axes, **attrs), []


REDUCE_CASES = [(None, None), ([1], 1), ([-1], 0), ([0, 2], 0), ([0, -1], 1)]


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("axes,keepdims", REDUCE_CASES)
@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_max_min(op, axes, keepdims, opset):
    # Distinct values (a shuffled grid) so that every extreme is unique.
    x = (RNG.permutation(24).reshape(2, 3, 4) - 11.5) / 10.0
    n, inits = _reduce(op, axes, keepdims, opset)
    check_gradient(n, {"x": x}, ["x"], initializers=inits, opset=opset)


def test_reduce_max_ties_share_the_gradient():
    (dx,) = onyx_gradient([node("ReduceMax", ["x"], keepdims=0)], {"x": np.array([1.0, 3.0, 3.0, 2.0])}, ["x"])
    np.testing.assert_allclose(dx, [0.0, 0.5, 0.5, 0.0])


def test_reduce_max_noop_with_empty_axes():
    check_gradient(node("ReduceMax", ["x"], noop_with_empty_axes=1), {"x": rand(2, 3)}, ["x"], opset=18)


@pytest.mark.parametrize("op", ["ReduceSumSquare", "ReduceL2", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes,keepdims", REDUCE_CASES)
@pytest.mark.parametrize("opset", [13, 18])
def test_smooth_reductions(op, axes, keepdims, opset):
    n, inits = _reduce(op, axes, keepdims, opset)
    check_gradient(n, {"x": rand(2, 3, 4)}, ["x"], initializers=inits, opset=opset)


@pytest.mark.parametrize("op", ["ReduceSumSquare", "ReduceL2", "ReduceLogSumExp", "ReduceMax"])
def test_reductions_float32(op):
    x = (RNG.permutation(12).reshape(3, 4) - 5.5) / 6.0
    axes = [const("axes", [1])]
    check_gradient(node(op, ["x", "axes"], keepdims=0), {"x": x}, ["x"], initializers=axes, dtype=np.float32)


# --- composition: a small MLP through several of the rules ---


def test_mlp():
    nodes = [
        node("MatMul", ["x", "w1"], ["h"]),
        node("Add", ["h", "b1"], ["hb"]),
        node("Gelu", ["hb"], ["a"]),
        node("Gemm", ["a", "w2", "b2"], ["z"], transB=1),
        node("ReduceLogSumExp", ["z", "axes"], ["y"], keepdims=0),
    ]
    feeds = {"x": rand(3, 4), "w1": rand(4, 5), "b1": rand(5), "w2": rand(2, 5), "b2": rand(2)}
    check_gradient(
        nodes, feeds, ["x", "w1", "b1", "w2", "b2"], initializers=[const("axes", [1])], opset=20, eps=ERF_EPS
    )
