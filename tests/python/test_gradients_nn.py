"""Gradient rules of the neural-network ops and losses (rules_nn.cc,
rules_loss.cc), checked against float64 finite differences (gradcheck.py)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from gradcheck import check_gradient

import onyx

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape)


# --- softmax ---


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_any_axis(op, axis):
    check_gradient(helper.make_node(op, ["x"], ["y"], axis=axis), {"x": rand(2, 3, 4)}, ["x"])


def onyx_gradients(node, feeds, wrt, r, opset=21):
    """The gradients of sum(r * node's first output) over the inputs wrt, as onyx computes them."""
    grads = [f"d_{n}" for n in wrt]
    nodes = [
        node,
        helper.make_node("Mul", [node.output[0], "r"], ["p"]),
        helper.make_node("ReduceSum", ["p"], ["loss"], keepdims=0),
        helper.make_node("Gradient", list(wrt), grads, domain="ai.onnx.preview.training", xs=list(wrt), y="loss"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.DOUBLE, list(v.shape)) for n, v in feeds.items()],
        [helper.make_tensor_value_info(g, TensorProto.DOUBLE, None) for g in grads],
        initializer=[numpy_helper.from_array(r, "r")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )
    return onyx.InferenceSession(model.SerializeToString()).run(None, feeds)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [None, 0, 2])
def test_softmax_before_opset_13_coerces_to_2d(op, axis):
    # onnx's reference evaluator applies the opset-13 (one axis) semantics at
    # every opset, so the oracle here is the analytic gradient of the spec's
    # 2-D form: x flattened to (prod(shape[:axis]), rest).
    x, r = rand(2, 3, 4), rand(2, 3, 4)
    attrs = {} if axis is None else {"axis": axis}
    k = int(np.prod(x.shape[: 1 if axis is None else axis]))
    x2, r2 = x.reshape(k, -1), r.reshape(k, -1)
    e = np.exp(x2 - x2.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    if op == "Softmax":
        expected = p * (r2 - (r2 * p).sum(axis=1, keepdims=True))
    else:
        expected = r2 - p * r2.sum(axis=1, keepdims=True)
    (dx,) = onyx_gradients(helper.make_node(op, ["x"], ["y"], **attrs), {"x": x}, ["x"], r, opset=11)
    np.testing.assert_allclose(dx, expected.reshape(x.shape), rtol=1e-9, atol=1e-12)


# --- losses ---


def labels(shape, classes, ignore=None):
    t = RNG.integers(0, classes, size=shape).astype(np.int64)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return t


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_cross_entropy(reduction, weighted):
    feeds = {"x": rand(3, 4), "t": labels(3, 4)}
    inputs = ["x", "t"]
    if weighted:
        feeds["w"] = RNG.uniform(0.5, 1.5, size=4)
        inputs.append("w")
    node = helper.make_node("SoftmaxCrossEntropyLoss", inputs, ["loss"], reduction=reduction)
    check_gradient(node, feeds, ["x"])


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_softmax_cross_entropy_spatial_ignore_index_and_log_prob(reduction):
    feeds = {"x": rand(2, 3, 4), "t": labels((2, 4), 3, ignore=-1), "w": RNG.uniform(0.5, 1.5, size=3)}
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["loss", "lp"], reduction=reduction,
                            ignore_index=-1)
    check_gradient(node, feeds, ["x"])  # both outputs projected: log_prob's gradient adds in


def test_softmax_cross_entropy_weights_get_a_gradient_too_when_asked():
    # Weights are usually constants; a rule that leaves them out is still right for x.
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss"])
    check_gradient(node, {"x": rand(4, 5), "t": labels(4, 5)}, ["x"], dtype=np.float32)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_negative_log_likelihood(reduction, weighted):
    feeds = {"x": rand(3, 4, 2), "t": labels((3, 2), 4, ignore=1)}
    inputs = ["x", "t"]
    if weighted:
        feeds["w"] = RNG.uniform(0.5, 1.5, size=4)
        inputs.append("w")
    node = helper.make_node("NegativeLogLikelihoodLoss", inputs, ["loss"], reduction=reduction, ignore_index=1)
    check_gradient(node, feeds, ["x"])


def test_negative_log_likelihood_2d():
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"])
    check_gradient(node, {"x": rand(5, 3), "t": labels(5, 3)}, ["x"])


# --- convolutions ---

CONV_CASES = {
    "1d": dict(x=(2, 3, 7), w=(4, 3, 3), attrs={}),
    "1d_stride_pad": dict(x=(1, 2, 8), w=(3, 2, 3), attrs=dict(strides=[2], pads=[1, 2])),
    "2d": dict(x=(2, 3, 5, 5), w=(4, 3, 3, 3), attrs={}),
    "2d_strides_pads": dict(x=(1, 2, 6, 7), w=(3, 2, 3, 2), attrs=dict(strides=[2, 1], pads=[1, 0, 2, 1])),
    "2d_dilations": dict(x=(1, 2, 7, 6), w=(2, 2, 2, 3), attrs=dict(dilations=[2, 1], pads=[1, 1, 1, 1])),
    "2d_same_upper": dict(x=(1, 2, 5, 6), w=(2, 2, 3, 3), attrs=dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "2d_same_lower": dict(x=(1, 2, 5, 5), w=(2, 2, 2, 2), attrs=dict(auto_pad="SAME_LOWER")),
    "2d_valid": dict(x=(1, 2, 5, 5), w=(2, 2, 3, 3), attrs=dict(auto_pad="VALID", strides=[2, 2])),
    "2d_group": dict(x=(2, 4, 5, 5), w=(6, 2, 3, 3), attrs=dict(group=2, pads=[1, 1, 1, 1])),
    "2d_depthwise": dict(x=(2, 3, 5, 5), w=(3, 1, 3, 3), attrs=dict(group=3, pads=[1, 1, 1, 1], strides=[2, 2])),
    "2d_pointwise": dict(x=(2, 3, 4, 4), w=(5, 3, 1, 1), attrs={}),
    "3d": dict(x=(1, 2, 4, 4, 3), w=(2, 2, 2, 3, 2), attrs=dict(pads=[1, 0, 1, 0, 1, 0], strides=[1, 2, 1])),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case):
    c = CONV_CASES[case]
    feeds = {"x": rand(*c["x"]), "w": rand(*c["w"]), "b": rand(c["w"][0])}
    check_gradient(helper.make_node("Conv", ["x", "w", "b"], ["y"], **c["attrs"]), feeds, ["x", "w", "b"])


def test_conv_float32_and_only_the_weights():
    feeds = {"x": rand(2, 3, 6, 6), "w": rand(4, 3, 3, 3)}
    check_gradient(helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]), feeds, ["w"], dtype=np.float32)


def test_conv_without_the_data_gradient_omits_it():
    """The first layer: only W needs a gradient, so the ConvGrad node has no dX output."""
    feeds = {"x": rand(1, 2, 5, 5), "w": rand(3, 2, 3, 3)}
    check_gradient(helper.make_node("Conv", ["x", "w"], ["y"]), feeds, ["w"])


CONV_TRANSPOSE_CASES = {
    "1d": dict(x=(2, 3, 4), w=(3, 2, 3), attrs={}),
    "2d_strides_pads": dict(x=(1, 2, 3, 4), w=(2, 3, 3, 2), attrs=dict(strides=[2, 2], pads=[1, 0, 0, 1])),
    "2d_output_padding": dict(x=(1, 2, 3, 3), w=(2, 2, 3, 3), attrs=dict(strides=[2, 2], output_padding=[1, 1])),
    "2d_dilations": dict(x=(1, 2, 3, 3), w=(2, 2, 2, 2), attrs=dict(dilations=[2, 1])),
    "2d_same_upper": dict(x=(1, 2, 3, 3), w=(2, 2, 3, 3), attrs=dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "3d": dict(x=(1, 2, 2, 3, 2), w=(2, 1, 2, 2, 2), attrs=dict(strides=[1, 2, 1])),
}


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
def test_conv_transpose(case):
    c = CONV_TRANSPOSE_CASES[case]
    group = c["attrs"].get("group", 1)
    feeds = {"x": rand(*c["x"]), "w": rand(*c["w"]), "b": rand(c["w"][1] * group)}
    check_gradient(helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **c["attrs"]), feeds, ["x", "w", "b"])


def test_conv_transpose_grouped():
    """onnx's reference evaluator cannot run a grouped ConvTranspose: each
    group's gradients must be those of the group alone (checked above)."""
    x, w, r = rand(2, 4, 3, 3), rand(4, 3, 2, 2), rand(2, 6, 5, 5)
    attrs = dict(group=2, dilations=[2, 1], strides=[1, 2], pads=[0, 1, 0, 0])
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    dx, dw = onyx_gradients(node, {"x": x, "w": w}, ["x", "w"], r)
    alone = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **dict(attrs, group=1))
    for g in range(2):
        part = {"x": x[:, 2 * g : 2 * g + 2], "w": w[2 * g : 2 * g + 2]}
        check_gradient(alone, part, ["x", "w"])
        px, pw = onyx_gradients(alone, part, ["x", "w"], r[:, 3 * g : 3 * g + 3])
        np.testing.assert_allclose(dx[:, 2 * g : 2 * g + 2], px, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(dw[2 * g : 2 * g + 2], pw, rtol=1e-9, atol=1e-12)


def test_conv_transpose_output_shape_crops_like_end_pads():
    """output_shape (which onnx's reference evaluator mishandles) places the
    output as pads at the end would: the same gradients as that model's."""
    feeds = {"x": rand(1, 2, 3, 3), "w": rand(2, 2, 3, 3)}
    r = rand(1, 2, 6, 6)
    a = onyx_gradients(helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_shape=[6, 6]),
                       feeds, ["x", "w"], r)
    b = onyx_gradients(helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[0, 0, 1, 1]),
                       feeds, ["x", "w"], r)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-12)


# --- pooling ---


@pytest.mark.parametrize(
    "attrs",
    [
        dict(kernel_shape=[2, 2]),
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
        dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 0]),
        dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
        dict(kernel_shape=[2, 2], storage_order=1),
    ],
)
def test_max_pool(attrs):
    # Distinct values so that the maxima (and the finite differences) are clear.
    x = RNG.permutation(2 * 3 * 6 * 5).reshape(2, 3, 6, 5) / 10.0
    check_gradient(helper.make_node("MaxPool", ["x"], ["y"], **attrs), {"x": x}, ["x"])


def test_max_pool_1d_and_3d():
    check_gradient(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2]),
                   {"x": RNG.permutation(18).reshape(1, 2, 9) / 4.0}, ["x"])
    check_gradient(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2]),
                   {"x": RNG.permutation(64).reshape(1, 1, 4, 4, 4) / 8.0}, ["x"])


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize(
    "attrs",
    [
        dict(kernel_shape=[2, 2]),
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1),
        dict(kernel_shape=[3, 3], auto_pad="SAME_LOWER"),
    ],
)
def test_average_pool(attrs, include_pad):
    node = helper.make_node("AveragePool", ["x"], ["y"], count_include_pad=include_pad, **attrs)
    check_gradient(node, {"x": rand(2, 2, 6, 5)}, ["x"])


def test_average_pool_1d_and_3d():
    check_gradient(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], pads=[1, 1], count_include_pad=1),
                   {"x": rand(1, 2, 6)}, ["x"])
    check_gradient(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2, 2], strides=[2, 1, 2]),
                   {"x": rand(1, 1, 4, 3, 4)}, ["x"])


def test_global_pools():
    check_gradient(helper.make_node("GlobalAveragePool", ["x"], ["y"]), {"x": rand(2, 3, 4, 3)}, ["x"])
    x = RNG.permutation(2 * 3 * 4 * 3).reshape(2, 3, 4, 3) / 10.0
    check_gradient(helper.make_node("GlobalMaxPool", ["x"], ["y"]), {"x": x}, ["x"])


# --- normalizations ---


def bn_feeds(shape):
    c = shape[1]
    return {"x": rand(*shape), "s": rand(c) + 1.5, "b": rand(c), "m": rand(c), "v": RNG.uniform(0.5, 1.5, size=c)}


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (2, 2, 3, 3)])
def test_batch_norm_training_mode(shape):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                            epsilon=1e-3)
    check_gradient(node, bn_feeds(shape), ["x", "s", "b"], outputs=["y"])


# (onnx's reference evaluator gets opset-9 inference BatchNormalization wrong;
# the rule is the same before opset 14.)
@pytest.mark.parametrize("opset", [14, 21])
def test_batch_norm_inference_mode(opset):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    check_gradient(node, bn_feeds((2, 3, 2, 2)), ["x", "s", "b", "m", "v"], opset=opset)


@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm(axis, bias):
    shape = (2, 3, 4)
    norm_shape = shape[axis % 3:]
    feeds = {"x": rand(*shape), "s": rand(*norm_shape) + 1.0}
    inputs = ["x", "s"]
    if bias:
        feeds["b"] = rand(*norm_shape)
        inputs.append("b")
    node = helper.make_node("LayerNormalization", inputs, ["y"], axis=axis, epsilon=1e-3)
    check_gradient(node, feeds, inputs)


def test_layer_norm_reuses_the_mean_outputs_when_present():
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=1)
    feeds = {"x": rand(3, 5), "s": rand(5) + 1.0, "b": rand(5)}
    check_gradient(node, feeds, ["x", "s", "b"], outputs=["y"])


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 2, 3, 3)])
def test_instance_norm(shape):
    c = shape[1]
    feeds = {"x": rand(*shape), "s": rand(c) + 1.5, "b": rand(c)}
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)
    check_gradient(node, feeds, ["x", "s", "b"])


# --- dropout ---


def test_dropout_inference_is_the_identity():
    check_gradient(helper.make_node("Dropout", ["x"], ["y"]), {"x": rand(3, 4)}, ["x"])
    check_gradient(helper.make_node("Dropout", ["x"], ["y"], ratio=0.3), {"x": rand(3, 4)}, ["x"], opset=10)
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"])
    feeds = {"x": rand(3, 4), "r": np.array(0.4), "t": np.array(False)}
    check_gradient(node, feeds, ["x"])


def test_dropout_training_uses_the_forward_mask():
    """Random masks defeat finite differences: check dx = dy * mask / (1 - ratio) directly."""
    ratio = 0.25
    dy = rand(6, 7)
    nodes = [
        helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=3),
        helper.make_node("Mul", ["y", "dy"], ["p"]),
        helper.make_node("ReduceSum", ["p"], ["loss"], keepdims=0),
        helper.make_node("Gradient", ["x"], ["dx"], domain="ai.onnx.preview.training", xs=["x"], y="loss"),
    ]
    inits = [
        numpy_helper.from_array(np.array(ratio), "r"),
        numpy_helper.from_array(np.array(True), "t"),
        numpy_helper.from_array(dy, "dy"),
    ]
    graph = helper.make_graph(
        nodes,
        "dropout",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [6, 7])],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in ("y", "mask", "dx")],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )
    x = rand(6, 7)
    y, mask, dx = onyx.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    assert 0 < mask.sum() < mask.size
    np.testing.assert_allclose(y, x * mask / (1 - ratio))
    np.testing.assert_allclose(dx, dy * mask / (1 - ratio))


def test_dropout_training_with_ratio_zero_is_checked_by_finite_differences():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    feeds = {"x": rand(3, 4), "r": np.array(0.0), "t": np.array(True)}
    check_gradient(node, feeds, ["x"], outputs=["y"])
