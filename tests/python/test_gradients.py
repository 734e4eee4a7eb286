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
