"""Bad input never crashes: every case raises the class onnxruntime raises
(an onyx.OnyxError subclass of onnxruntime's name, or ValueError for missing
inputs) with a message that says what is wrong."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from helpers import add_relu_model, make_model


@pytest.fixture(scope="module")
def session():
    return onyx.InferenceSession(add_relu_model().SerializeToString())


def test_missing_file():
    with pytest.raises(onyx.NoSuchFile, match="does not exist"):
        onyx.InferenceSession("/nonexistent/model.onnx")


def test_wrong_source_type():
    with pytest.raises(TypeError, match="Unable to load from type"):
        onyx.InferenceSession(12345)


def test_truncated_model_bytes():
    data = add_relu_model().SerializeToString()
    for cut in (1, 7, len(data) // 2, len(data) - 3):
        with pytest.raises(onyx.InvalidProtobuf):
            onyx.InferenceSession(data[:cut])


def test_corrupted_model_bytes():
    data = bytearray(add_relu_model().SerializeToString())
    rng = np.random.default_rng(0)
    raised = 0
    for trial in range(40):
        bad = bytearray(data)
        for position in rng.integers(0, len(bad), size=4):
            bad[position] = int(rng.integers(0, 256))
        try:
            session = onyx.InferenceSession(bytes(bad))
        except onyx.OnyxError as error:
            assert str(error), "an error must carry a message"
            raised += 1
            continue
        # A corruption that still parses must still run or fail cleanly.
        try:
            session.run(None, {a.name: np.zeros([d if isinstance(d, int) else 1 for d in a.shape], np.float32) for a in session.get_inputs()})
        except onyx.OnyxError:
            pass
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.InferenceSession(b"\xff" * 64)
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.InferenceSession(b"this is not a model")


def test_empty_bytes():
    with pytest.raises(onyx.InvalidGraph, match="no graph"):
        onyx.InferenceSession(b"")


def test_wrong_dtype(session):
    with pytest.raises(onyx.InvalidArgument, match=r"(?i)X.*(double|float64|int32|type)"):
        session.run(None, {"X": np.ones((2, 3), np.float64)})
    with pytest.raises(onyx.InvalidArgument, match="int32"):
        session.run(None, {"X": np.ones((2, 3), np.int32)})
    with pytest.raises(onyx.InvalidArgument, match="string"):
        session.run(None, {"X": np.array([["a", "b", "c"]])})


def test_wrong_rank(session):
    with pytest.raises(onyx.InvalidArgument, match=r"(?i)rank"):
        session.run(None, {"X": np.ones((2, 3, 1), np.float32)})
    with pytest.raises(onyx.InvalidArgument, match=r"(?i)rank"):
        session.run(None, {"X": np.ones(3, np.float32)})


def test_wrong_fixed_dimension(session):
    with pytest.raises(onyx.InvalidArgument, match=r"(?i)dimension"):
        session.run(None, {"X": np.ones((2, 4), np.float32)})


def test_missing_input(session):
    with pytest.raises(ValueError, match=r"inputs \['X'\] are required"):
        session.run(None, {})


def test_unknown_input_name(session):
    with pytest.raises(onyx.InvalidArgument, match=r"Invalid input name.*nope"):
        session.run(None, {"X": np.ones((1, 3), np.float32), "nope": np.ones(1, np.float32)})


def test_unknown_output_name(session):
    with pytest.raises(onyx.InvalidArgument, match=r"Invalid output name.*nope"):
        session.run(["Y", "nope"], {"X": np.ones((1, 3), np.float32)})


def test_feed_not_a_dict(session):
    with pytest.raises(TypeError):
        session.run(None, [np.ones((1, 3), np.float32)])


def test_unsupported_numpy_type(session):
    with pytest.raises(onyx.InvalidArgument, match="no ONNX equivalent"):
        session.run(None, {"X": np.ones((1, 3), "datetime64[s]")})


def test_runtime_shape_error_from_a_kernel():
    # Broadcasting [N,3] with [N,4] only fails inside the session: it must say so.
    model = make_model(
        [helper.make_node("Add", ["A", "B"], ["C"], name="the_add")],
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [None, None]), helper.make_tensor_value_info("B", TensorProto.FLOAT, [None, None])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, None)],
    )
    session = onyx.InferenceSession(model.SerializeToString())
    with pytest.raises(onyx.Fail, match="the_add|Add"):
        session.run(None, {"A": np.ones((2, 3), np.float32), "B": np.ones((2, 4), np.float32)})


def test_unknown_op_is_not_implemented():
    model = make_model(
        [helper.make_node("NoSuchOp", ["X"], ["Y"], domain="com.example")],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1])],
        extra_opsets=[("com.example", 1)],
    )
    with pytest.raises(onyx.NotImplemented, match="NoSuchOp"):
        onyx.InferenceSession(model.SerializeToString())
