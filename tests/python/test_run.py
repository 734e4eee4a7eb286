"""Running small models made with onnx.helper, compared with onnxruntime:
dtypes, strings, sequences, maps, optionals, zero-copy feeds and outputs."""

import gc
import re

import ml_dtypes
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx
from helpers import add_relu_model, assert_close, make_model


def run_both(model, feeds, output_names=None):
    data = model.SerializeToString()
    ours = onyx.InferenceSession(data).run(output_names, feeds)
    ref = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(output_names, feeds)
    return ours, ref


def test_add_relu_matches_onnxruntime():
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    ours, ref = run_both(add_relu_model(), {"X": x})
    assert len(ours) == 2
    for i, (a, b) in enumerate(zip(ours, ref)):
        assert_close(a, b, f"output {i}")


def test_output_names_select_and_order():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    y, z = session.run(None, {"X": x})
    (z2,) = session.run(["Z"], {"X": x})
    z3, y3 = session.run(["Z", "Y"], {"X": x})
    np.testing.assert_array_equal(z, z2)
    np.testing.assert_array_equal(z, z3)
    np.testing.assert_array_equal(y, y3)
    np.testing.assert_array_equal(session.run([], {"X": x})[0], y)


def test_noncontiguous_and_readonly_feeds():
    base = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    x = base.T[:, :3][::2]  # strided, not C-contiguous
    assert not x.flags.c_contiguous
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    got = session.run(None, {"X": x})
    want = session.run(None, {"X": np.ascontiguousarray(x)})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    frozen = np.ascontiguousarray(x)
    frozen.flags.writeable = False
    np.testing.assert_array_equal(session.run(None, {"X": frozen})[0], want[0])


def test_feeds_are_not_modified_and_outputs_are_independent():
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    before = x.copy()
    nodes = [helper.make_node("Relu", ["X"], ["R"]), helper.make_node("Identity", ["X"], ["I"])]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 3])],
        [
            helper.make_tensor_value_info("R", TensorProto.FLOAT, [5, 3]),
            helper.make_tensor_value_info("I", TensorProto.FLOAT, [5, 3]),
        ],
    )
    session = onyx.InferenceSession(model.SerializeToString())
    r, i = session.run(None, {"X": x})
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(i, before)
    x[:] = 7.0  # changing the feed afterwards must not change the outputs
    np.testing.assert_array_equal(i, before)
    np.testing.assert_array_equal(r, np.maximum(before, 0))


def test_outputs_outlive_the_session():
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    y, _ = session.run(None, {"X": np.ones((2, 3), np.float32)})
    del session
    gc.collect()
    np.testing.assert_array_equal(y, np.maximum(np.ones((2, 3)) + [0.5, -1.0, 2.0], 0).astype(np.float32))
    assert y.flags.c_contiguous and y.dtype == np.float32


def test_list_and_scalar_feeds():
    # As in onnxruntime: a list becomes an array of the input's declared type;
    # a scalar (numpy's too) is refused. test_ort_parity compares more cases.
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    y, z = session.run(None, {"X": [[1.0, -2.0, 3.0]]})
    np.testing.assert_array_equal(y, np.array([[1.5, 0.0, 5.0]], np.float32))
    assert z.dtype == np.float32
    nodes = [helper.make_node("Add", ["A", "B"], ["C"])]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("A", TensorProto.INT64, []), helper.make_tensor_value_info("B", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("C", TensorProto.INT64, [2])],
    )
    session = onyx.InferenceSession(model.SerializeToString())
    out = session.run(None, {"A": np.array(5), "B": [1, 2]})[0]
    np.testing.assert_array_equal(out, [6, 7])
    with pytest.raises(RuntimeError, match="numpy array or a list"):
        session.run(None, {"A": np.int64(5), "B": np.array([1, 2])})


@pytest.mark.parametrize(
    "dtype,elem",
    [
        (np.float32, TensorProto.FLOAT),
        (np.float64, TensorProto.DOUBLE),
        (np.float16, TensorProto.FLOAT16),
        (np.int8, TensorProto.INT8),
        (np.int32, TensorProto.INT32),
        (np.int64, TensorProto.INT64),
        (np.uint8, TensorProto.UINT8),
        (np.bool_, TensorProto.BOOL),
    ],
)
def test_dtypes_round_trip(dtype, elem):
    model = make_model(
        [helper.make_node("Identity", ["X"], ["Y"])],
        [helper.make_tensor_value_info("X", elem, [2, 3])],
        [helper.make_tensor_value_info("Y", elem, [2, 3])],
    )
    x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    ours, ref = run_both(model, {"X": x})
    assert ours[0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(ours[0], ref[0])


def test_bfloat16_output_is_an_ml_dtypes_array():
    model = make_model(
        [helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.BFLOAT16), helper.make_node("Cast", ["Y"], ["Z"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("Y", TensorProto.BFLOAT16, [3]), helper.make_tensor_value_info("Z", TensorProto.FLOAT, [3])],
    )
    y, z = onyx.InferenceSession(model.SerializeToString()).run(None, {"X": np.array([1.0, -2.5, 3.0], np.float32)})
    assert y.dtype == ml_dtypes.bfloat16  # as onnx.numpy_helper makes them
    np.testing.assert_array_equal(y.view(np.uint16), [0x3F80, 0xC020, 0x4040])
    np.testing.assert_array_equal(z, [1.0, -2.5, 3.0])


# (ONNX element type, ml_dtypes type): every type numpy lacks.
ML_TYPES = [
    (TensorProto.BFLOAT16, "bfloat16"),
    (TensorProto.FLOAT8E4M3FN, "float8_e4m3fn"),
    (TensorProto.FLOAT8E4M3FNUZ, "float8_e4m3fnuz"),
    (TensorProto.FLOAT8E5M2, "float8_e5m2"),
    (TensorProto.FLOAT8E5M2FNUZ, "float8_e5m2fnuz"),
    (TensorProto.UINT4, "uint4"),
    (TensorProto.INT4, "int4"),
    (TensorProto.FLOAT4E2M1, "float4_e2m1fn"),
    (TensorProto.FLOAT8E8M0, "float8_e8m0fnu"),
    (TensorProto.UINT2, "uint2"),
    (TensorProto.INT2, "int2"),
]


@pytest.mark.parametrize("elem_type,name", ML_TYPES, ids=[n for _, n in ML_TYPES])
def test_ml_dtypes_arrays_feed_and_come_back(elem_type, name):
    """An ml_dtypes array feeds an input of its type and comes back as one,
    through run, OrtValue and IOBinding; values as onnx's reference gives."""
    from onnx.reference import ReferenceEvaluator

    dtype = np.dtype(getattr(ml_dtypes, name))
    model = make_model(
        [helper.make_node("Identity", ["X"], ["Y"]), helper.make_node("Cast", ["X"], ["F"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("X", elem_type, [2, 3])],
        [helper.make_tensor_value_info("Y", elem_type, [2, 3]), helper.make_tensor_value_info("F", TensorProto.FLOAT, [2, 3])],
        opset=23,
        ir_version=11,
    )
    values = {"uint4": [0, 1, 7, 15, 3, 2], "int4": [-8, -1, 0, 7, 3, -2], "uint2": [0, 1, 2, 3, 1, 0],
              "int2": [-2, -1, 0, 1, 1, -2], "float8_e8m0fnu": [1, 2, 0.5, 4, 8, 0.25]}
    x = np.array(values.get(name, [1.0, -2.0, 0.5, 3.0, -0.25, 0.0]), np.float32).astype(dtype).reshape(2, 3)
    session = onyx.InferenceSession(model.SerializeToString())
    y, f = session.run(None, {"X": x})
    ref_y, ref_f = ReferenceEvaluator(model).run(None, {"X": x})
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.astype(np.float32), ref_y.astype(np.float32))
    np.testing.assert_array_equal(f, ref_f)
    value = onyx.OrtValue.ortvalue_from_numpy(x)
    assert value.element_type() == elem_type
    assert value.numpy().dtype == dtype
    np.testing.assert_array_equal(value.numpy().astype(np.float32), x.astype(np.float32))
    binding = session.io_binding()
    binding.bind_ortvalue_input("X", value)
    binding.bind_output("Y")
    session.run_with_iobinding(binding)
    (out,) = binding.copy_outputs_to_cpu()
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.astype(np.float32), x.astype(np.float32))


def test_string_tensors():
    model = make_model(
        [helper.make_node("Identity", ["S"], ["T"]), helper.make_node("Shape", ["S"], ["N"])],
        [helper.make_tensor_value_info("S", TensorProto.STRING, [None, 2])],
        [helper.make_tensor_value_info("T", TensorProto.STRING, [None, 2]), helper.make_tensor_value_info("N", TensorProto.INT64, [2])],
    )
    session = onyx.InferenceSession(model.SerializeToString())
    for feed in (
        np.array([["a", "bb"], ["héllo", ""]]),  # unicode '<U'
        np.array([["a", "bb"], ["héllo", ""]], dtype=object),
    ):
        t, n = session.run(None, {"S": feed})
        assert t.dtype == object and t.shape == (2, 2)
        assert t.tolist() == [["a", "bb"], ["héllo", ""]]
        np.testing.assert_array_equal(n, [2, 2])


def test_sequence_output_is_a_list():
    model = make_model(
        [helper.make_node("SequenceConstruct", ["A", "B"], ["S"])],
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
        [helper.make_tensor_sequence_value_info("S", TensorProto.FLOAT, None)],
    )
    a = np.array([1, 2], np.float32)
    b = np.array([3, 4, 5], np.float32)
    ours, ref = run_both(model, {"A": a, "B": b})
    assert isinstance(ours[0], list) and len(ours[0]) == 2
    assert_close(ours[0], ref[0])


def test_sequence_input():
    model = make_model(
        [helper.make_node("SequenceLength", ["S"], ["N"]), helper.make_node("ConcatFromSequence", ["S"], ["C"], axis=0)],
        [helper.make_tensor_sequence_value_info("S", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("N", TensorProto.INT64, []), helper.make_tensor_value_info("C", TensorProto.FLOAT, None)],
    )
    seq = [np.array([1, 2], np.float32), np.array([3], np.float32)]
    n, c = onyx.InferenceSession(model.SerializeToString()).run(None, {"S": seq})
    assert int(n) == 2
    np.testing.assert_array_equal(c, [1, 2, 3])


def test_empty_optional_output_is_none():
    optional_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    model = make_model(
        [helper.make_node("Optional", [], ["O"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2])), helper.make_node("Identity", ["X"], ["Y"])],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
        [helper.make_value_info("O", optional_type), helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])],
        opset=18,
    )
    o, y = onyx.InferenceSession(model.SerializeToString()).run(None, {"X": np.ones(2, np.float32)})
    assert o is None
    np.testing.assert_array_equal(y, [1, 1])


def test_zipmap_outputs_dicts():
    model = make_model(
        [helper.make_node("ZipMap", ["P"], ["M"], domain="ai.onnx.ml", classlabels_strings=["cat", "dog"])],
        [helper.make_tensor_value_info("P", TensorProto.FLOAT, [None, 2])],
        [helper.make_value_info("M", helper.make_sequence_type_proto(helper.make_map_type_proto(TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, []))))],
        extra_opsets=[("ai.onnx.ml", 3)],
    )
    p = np.array([[0.25, 0.75], [0.5, 0.5]], np.float32)
    ours, ref = run_both(model, {"P": p})
    assert ours[0] == ref[0]
    assert isinstance(ours[0][0], dict)


def test_zero_sized_tensor():
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    y, z = session.run(None, {"X": np.zeros((0, 3), np.float32)})
    assert y.shape == (0, 3) and z.shape == (0, 3)


def test_feeds_are_borrowed_and_outputs_not_copied():
    from onyx import _onyx

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    value = _onyx.Value.from_numpy(x)
    view = value.numpy()  # a Tensor over x's memory, shown again as numpy
    assert np.shares_memory(view, x)
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    y, _ = session.run(None, {"X": np.ones((2, 3), np.float32)})
    assert not y.flags.owndata  # the array wraps onyx's buffer


def test_python_dash_m_onyx(tmp_path):
    import os
    import subprocess
    import sys

    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(add_relu_model(), str(path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # The `onyx` program's inspect (tests/python/test_cli.py checks the rest of the command).
    command = [sys.executable, "-m", "onyx", "inspect", str(path)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    assert re.search(r"^inputs\n +X +tensor\(float\)\[batch,3\]\noutputs\n +Y +", out.stdout, re.M), out.stdout


def test_run_options_terminate():
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    run_options = onyx.RunOptions()
    run_options.terminate = True
    with pytest.raises(onyx.Fail, match="terminate"):
        session.run(None, {"X": np.ones((1, 3), np.float32)}, run_options)
    run_options.terminate = False
    session.run(None, {"X": np.ones((1, 3), np.float32)}, run_options)


def test_session_options_take_effect():
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.execution_mode = onyx.ExecutionMode.ORT_SEQUENTIAL
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    plain = onyx.InferenceSession(add_relu_model().SerializeToString(), so).run(None, {"X": x})
    default = onyx.InferenceSession(add_relu_model().SerializeToString()).run(None, {"X": x})
    for a, b in zip(plain, default):
        np.testing.assert_array_equal(a, b)
    assert int(onyx.GraphOptimizationLevel.ORT_ENABLE_ALL) == 99


def test_bfloat16_input_from_uint16():
    model = make_model(
        [helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("X", TensorProto.BFLOAT16, [3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3])],
    )
    session = onyx.InferenceSession(model.SerializeToString())
    (y,) = session.run(None, {"X": np.array([0x3F80, 0xC020, 0x4040], np.uint16)})
    np.testing.assert_array_equal(y, [1.0, -2.5, 3.0])


def test_map_input_from_dict():
    map_type = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    model = make_model(
        [helper.make_node("DictVectorizer", ["D"], ["V"], domain="ai.onnx.ml", int64_vocabulary=[1, 2, 3])],
        [helper.make_value_info("D", map_type)],
        [helper.make_tensor_value_info("V", TensorProto.FLOAT, None)],
        extra_opsets=[("ai.onnx.ml", 3)],
    )
    try:
        session = onyx.InferenceSession(model.SerializeToString())
    except onyx.NotImplemented:
        pytest.skip("this build has no DictVectorizer kernel")
    assert session.get_inputs()[0].type == "map(int64,tensor(float))"
    ours, ref = run_both(model, {"D": {1: 2.0, 3: 5.0}})
    assert_close(ours[0], ref[0])
