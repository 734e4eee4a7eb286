"""The gradient engine: Gradient nodes expanded in a session, checked against
float64 finite differences (gradcheck.py)."""

import numpy as np
import pytest
from onnx import helper

from gradcheck import check_gradient

import onyx

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_broadcasting_binary_ops(op):
    a, b = rand(2, 3, 4), rand(3, 1) + (2.0 if op == "Div" else 0.0)
    check_gradient(helper.make_node(op, ["a", "b"], ["y"]), {"a": a, "b": b}, ["a", "b"])


@pytest.mark.parametrize("op", ["Neg", "Identity", "Relu", "Exp", "Tanh", "Sigmoid"])
def test_unary_ops(op):
    check_gradient(helper.make_node(op, ["x"], ["y"]), {"x": rand(3, 5)}, ["x"])


def test_log():
    check_gradient(helper.make_node("Log", ["x"], ["y"]), {"x": rand(4) + 2.0}, ["x"])


def test_float32_gradients_match_too():
    check_gradient(helper.make_node("Tanh", ["x"], ["y"]), {"x": rand(3, 5)}, ["x"], dtype=np.float32)


def test_an_op_without_a_rule_is_named():
    with pytest.raises(Exception, match="no gradient rule for TopK"):
        check_gradient(
            helper.make_node("TopK", ["x", "k"], ["v", "i"]),
            {"x": rand(6), "k": np.array([2], np.int64)},
            ["x"],
            outputs=["v"],
        )


def _deep_model(kind, layers=24, batch=512, width=256):
    """`layers` layers of h = act(h * w_i + b_i), and y = mean(h^2), with a
    Gradient node for every w_i and b_i. kind "mlp": h @ w_i (w_i a matrix)
    and Relu; kind "chain": an element-wise h * w_i (w_i a vector) and Tanh."""
    mlp = kind == "mlp"
    nodes, params = [], []
    inputs = [helper.make_tensor_value_info("x", 1, [batch, width])]
    h = "x"
    for i in range(layers):
        nodes += [
            helper.make_node("MatMul" if mlp else "Mul", [h, f"w{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
            helper.make_node("Relu" if mlp else "Tanh", [f"a{i}"], [f"h{i}"]),
        ]
        h = f"h{i}"
        params += [f"w{i}", f"b{i}"]
        inputs += [
            helper.make_tensor_value_info(f"w{i}", 1, [width, width] if mlp else [width]),
            helper.make_tensor_value_info(f"b{i}", 1, [width]),
        ]
    grads = [p + "_grad" for p in params]
    nodes += [
        helper.make_node("Mul", [h, h], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
        helper.make_node("Gradient", params, grads, domain="ai.onnx.preview.training", xs=params, y="loss"),
    ]
    outputs = [helper.make_tensor_value_info(n, 1, None) for n in ["loss"] + grads]
    graph = helper.make_graph(nodes, kind, inputs, outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((batch, width)).astype(np.float32)}
    for p in params:
        if p[0] == "b":
            feeds[p] = rng.uniform(-0.1, 0.1, width).astype(np.float32)
        elif mlp:
            feeds[p] = (rng.standard_normal((width, width)) * np.sqrt(2 / width)).astype(np.float32)
        else:
            feeds[p] = rng.uniform(0.5, 1.5, width).astype(np.float32)
    return model.SerializeToString(), feeds


def _run_chain(recompute, model, feeds):
    options = onyx.SessionOptions()
    options.enable_mem_pattern = False
    if recompute:
        options.add_session_config_entry("onyx.training.recompute", recompute)
    # The profile is of the CPU arena: the session runs on the CPU whatever
    # providers a test run names for the others.
    session = onyx.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    results = session.run(None, feeds)
    return results, session.get_memory_profile()["peak_bytes"]


def test_recompute_gives_the_same_gradients_in_less_memory():
    model, feeds = _deep_model("chain", batch=256)
    plain, plain_peak = _run_chain(None, model, feeds)
    for recompute in ["all", "a3,h3,h10"]:
        again, peak = _run_chain(recompute, model, feeds)
        for a, e in zip(again, plain):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-7)
        assert 0 < peak < plain_peak, (recompute, peak, plain_peak)


def test_recompute_all_on_a_24_layer_mlp_takes_at_most_60_percent_of_the_memory():
    model, feeds = _deep_model("mlp")
    plain, plain_peak = _run_chain(None, model, feeds)
    for recompute in ["all", "cheap"]:
        again, peak = _run_chain(recompute, model, feeds)
        np.testing.assert_allclose(again[0], plain[0], rtol=1e-5)  # the loss
        for a, e in zip(again[1:], plain[1:]):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
        # The arena's peak holds the activations and the gradients (outputs).
        assert peak <= 0.6 * plain_peak, (recompute, peak, plain_peak)


def test_recompute_refuses_a_value_it_cannot_repeat():
    model, feeds = _deep_model("chain", layers=2, batch=4, width=4)
    with pytest.raises(Exception, match="'nope' to recompute is not the output of a node"):
        _run_chain("nope", model, feeds)


def test_gradient_reaching_a_relu_from_a_reduction_keeps_its_type():
    # The seed's type reaches the Relu rule's Where only at run time (its
    # producers are internal ops): Where's inference must not take the
    # condition's bool for the result.
    check_gradient(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("ReduceSum", ["r"], ["y"], keepdims=0)],
        {"x": rand(4, 3)},
        ["x"],
    )
