"""The onnxruntime Python surface that scripts use, each call made on onyx and
on the installed onnxruntime with the same arguments: the same results, or
the same exception classes (onnxruntime's capi classes matched by name).

Where onnxruntime cannot run a case (it crashes, or silently ignores what
onyx refuses), the test says so and checks onyx alone."""

from __future__ import annotations

import gc
import json
import threading
import time

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx
from helpers import assert_close, make_model

CPU = ["CPUExecutionProvider"]
ORT_STATE = onnxruntime.capi.onnxruntime_pybind11_state


# ---- comparing the two runtimes -----------------------------------------------------


def outcome(call):
    """('ok', result) or ('error', exception)."""
    try:
        return "ok", call()
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return "error", error


def error_kind(error: Exception) -> str:
    """onnxruntime's capi classes and onyx's classes of the same name compare
    equal; builtin classes compare by name."""
    cls = type(error)
    if cls.__module__.startswith(("onnxruntime", "onyx")):
        return f"capi.{cls.__name__}"
    return cls.__name__


def assert_same(ort_call, onyx_call, compare=assert_close):
    """Both succeed with close results, or both raise the same kind of error.
    Returns onyx's result or exception."""
    ort_kind, ort_value = outcome(ort_call)
    onyx_kind, onyx_value = outcome(onyx_call)
    if ort_kind == "error" or onyx_kind == "error":
        assert ort_kind == onyx_kind == "error", (
            f"onnxruntime: {ort_kind} {ort_value!r}; onyx: {onyx_kind} {onyx_value!r}"
        )
        assert error_kind(onyx_value) == error_kind(ort_value), (
            f"onyx raised {error_kind(onyx_value)} ({onyx_value}), onnxruntime {error_kind(ort_value)} ({ort_value})"
        )
        assert str(onyx_value), "an error must say what is wrong"
    else:
        compare(onyx_value, ort_value)
    return onyx_value


def sessions(model, configure=None, **kwargs):
    """(onnxruntime session, onyx session) of the same model; ``configure``
    is called on each runtime's SessionOptions."""
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    result = []
    for runtime in (onnxruntime, onyx):
        options = runtime.SessionOptions()
        if configure is not None:
            configure(runtime, options)
        result.append(runtime.InferenceSession(data, options, providers=CPU, **kwargs))
    return tuple(result)


def shapes(args):
    return [(a.name, a.type, a.shape) for a in args]


def assert_identical(actual, expected):
    """Equal values of equal dtypes (nan equal to nan)."""
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype, f"dtype {a.dtype}, expected {e.dtype}"
        np.testing.assert_array_equal(a, e)


def symbolic_model():
    """Y = X + B with X [batch, seq]; the batch dimension carries the denotation DATA_BATCH."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", "seq"])
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    return make_model(
        [helper.make_node("Add", ["X", "B"], ["Y"])],
        [x],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", "seq"])],
        # raw_data, so that onnx.save_model may store it outside the model file
        [helper.make_tensor("B", TensorProto.FLOAT, [1], np.array([0.5], np.float32).tobytes(), raw=True)],
    )


def identity_model(elem_type, shape):
    return make_model(
        [helper.make_node("Identity", ["X"], ["Y"])],
        [helper.make_tensor_value_info("X", elem_type, shape)],
        [helper.make_tensor_value_info("Y", elem_type, shape)],
    )


def two_output_model():
    """Y = X + X, Z = X * X with X [n, 3]."""
    return make_model(
        [helper.make_node("Add", ["X", "X"], ["Y"]), helper.make_node("Mul", ["X", "X"], ["Z"])],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 3])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 3]),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["n", 3]),
        ],
    )


# ---- 1. free dimension overrides ----------------------------------------------------


def test_free_dimension_override_by_name_fixes_the_shapes():
    ort_s, onyx_s = sessions(symbolic_model(), lambda rt, o: o.add_free_dimension_override_by_name("batch", 2))
    assert shapes(onyx_s.get_inputs()) == shapes(ort_s.get_inputs()) == [("X", "tensor(float)", [2, "seq"])]
    assert shapes(onyx_s.get_outputs()) == shapes(ort_s.get_outputs())
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    assert_same(lambda: ort_s.run(None, {"X": x}), lambda: onyx_s.run(None, {"X": x}))
    error = assert_same(
        lambda: ort_s.run(None, {"X": np.zeros((3, 5), np.float32)}),
        lambda: onyx_s.run(None, {"X": np.zeros((3, 5), np.float32)}),
    )
    assert isinstance(error, onyx.InvalidArgument) and "dimension 0 must be 2" in str(error)


def test_free_dimension_override_propagates_to_outputs():
    model = make_model(
        [helper.make_node("Add", ["X", "B"], ["Y"])],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor("B", TensorProto.FLOAT, [3], [0.5, 1.0, 2.0])],
    )
    ort_s, onyx_s = sessions(model, lambda rt, o: o.add_free_dimension_override_by_name("batch", 4))
    assert shapes(onyx_s.get_outputs()) == shapes(ort_s.get_outputs()) == [("Y", "tensor(float)", [4, 3])]


def test_free_dimension_override_by_denotation():
    ort_s, onyx_s = sessions(
        symbolic_model(), lambda rt, o: o.add_free_dimension_override_by_denotation("DATA_BATCH", 3)
    )
    assert shapes(onyx_s.get_inputs()) == shapes(ort_s.get_inputs()) == [("X", "tensor(float)", [3, "seq"])]
    assert shapes(onyx_s.get_outputs()) == shapes(ort_s.get_outputs())


def test_free_dimension_override_of_a_name_no_input_uses_changes_nothing():
    def configure(runtime, options):
        options.add_free_dimension_override_by_name("nosuch", 2)
        options.add_free_dimension_override_by_name("seq", 7)
        options.add_free_dimension_override_by_name("seq", 1)  # the first value counts

    ort_s, onyx_s = sessions(symbolic_model(), configure)
    assert shapes(onyx_s.get_inputs()) == shapes(ort_s.get_inputs()) == [("X", "tensor(float)", ["batch", 7])]


def test_free_dimension_override_is_not_a_config_entry():
    for runtime in (onnxruntime, onyx):
        options = runtime.SessionOptions()
        options.add_free_dimension_override_by_name("batch", 2)
        with pytest.raises(RuntimeError):
            options.get_session_config_entry("session.free_dimension_override.batch")


def test_free_dimension_override_refuses_negative_values_and_wrong_types():
    # onnxruntime shows -1 as the dimension then; onyx refuses it.
    options = onyx.SessionOptions()
    options.add_free_dimension_override_by_name("batch", -1)
    with pytest.raises(onyx.InvalidArgument, match="'batch' is -1"):
        onyx.InferenceSession(symbolic_model().SerializeToString(), options)
    for runtime in (onnxruntime, onyx):
        with pytest.raises(TypeError):
            runtime.SessionOptions().add_free_dimension_override_by_name("batch", "2")


# ---- 2. initializers from the caller -----------------------------------------------------


def test_add_initializer_replaces_the_model_initializer():
    values = {rt: rt.OrtValue.ortvalue_from_numpy(np.array([10.0], np.float32)) for rt in (onnxruntime, onyx)}
    ort_s, onyx_s = sessions(symbolic_model(), lambda rt, o: o.add_initializer("B", values[rt]))
    x = np.ones((1, 2), np.float32)
    result = assert_same(lambda: ort_s.run(None, {"X": x}), lambda: onyx_s.run(None, {"X": x}))
    np.testing.assert_array_equal(result[0], [[11.0, 11.0]])


def test_add_initializer_shares_the_callers_memory():
    # The memory is the caller's: a change after session creation shows in runs
    # (without optimizations, which may fold the value into another).
    # onnxruntime keeps only a pointer to the OrtValue, so the test holds both.
    arrays, values = {}, {}

    def configure(runtime, options):
        options.graph_optimization_level = runtime.GraphOptimizationLevel.ORT_DISABLE_ALL
        arrays[runtime] = np.array([10.0], np.float32)
        values[runtime] = runtime.OrtValue.ortvalue_from_numpy(arrays[runtime])
        options.add_initializer("B", values[runtime])

    ort_s, onyx_s = sessions(symbolic_model(), configure)
    for array in arrays.values():
        array[0] = 20.0
    x = np.zeros((1, 2), np.float32)
    result = assert_same(lambda: ort_s.run(None, {"X": x}), lambda: onyx_s.run(None, {"X": x}))
    np.testing.assert_array_equal(result[0], [[20.0, 20.0]])


def test_add_initializer_keeps_its_array_alive_and_takes_numpy():
    # onnxruntime takes OrtValues only; onyx also takes a numpy array.
    options = onyx.SessionOptions()
    options.add_initializer("B", np.full(1, 3.0, np.float32))
    session = onyx.InferenceSession(symbolic_model().SerializeToString(), options)
    del options
    gc.collect()
    np.testing.assert_array_equal(session.run(None, {"X": np.zeros((1, 1), np.float32)})[0], [[3.0]])
    with pytest.raises(TypeError, match="OrtValue or a numpy array"):
        onyx.SessionOptions().add_initializer("B", [1.0])


def test_add_external_initializers(tmp_path):
    # onnxruntime replaces only initializers stored outside the model file.
    model = symbolic_model()
    path = tmp_path / "external.onnx"
    onnx.save_model(
        model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0
    )
    values = {rt: rt.OrtValue.ortvalue_from_numpy(np.array([-4.0], np.float32)) for rt in (onnxruntime, onyx)}
    ort_s, onyx_s = sessions(str(path), lambda rt, o: o.add_external_initializers(["B"], [values[rt]]))
    x = np.ones((2, 2), np.float32)
    result = assert_same(lambda: ort_s.run(None, {"X": x}), lambda: onyx_s.run(None, {"X": x}))
    np.testing.assert_array_equal(result[0], np.full((2, 2), -3.0, np.float32))
    for runtime in (onnxruntime, onyx):
        with pytest.raises(RuntimeError):
            runtime.SessionOptions().add_external_initializers(["B", "C"], [values[runtime]])


def test_initializer_override_errors():
    # onnxruntime ignores an unknown name in add_initializer, fails with Fail in
    # add_external_initializers, and crashes on a wrong type or shape: onyx
    # refuses all three when the session is created, with InvalidArgument.
    cases = [
        ("Q", np.array([1.0], np.float32), "no initializer of that name"),
        ("B", np.array([1], np.int64), r"type tensor\(int64\), the model's initializer is tensor\(float\)"),
        ("B", np.array([1.0, 2.0], np.float32), r"shape \[2\], the model's initializer has shape \[1\]"),
        ("X", np.zeros((1, 1), np.float32), "no initializer of that name"),
    ]
    for name, value, message in cases:
        options = onyx.SessionOptions()
        options.add_initializer(name, onyx.OrtValue.ortvalue_from_numpy(value))
        with pytest.raises(onyx.InvalidArgument, match=message):
            onyx.InferenceSession(symbolic_model().SerializeToString(), options)


# ---- 3. feeds that are not numpy arrays -----------------------------------------------

FEED_CASES = [
    ("floats to float", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]),
    ("ints to float", TensorProto.FLOAT, [3], [1, 2, 3]),
    ("nested lists", TensorProto.FLOAT, [2, 2], [[1.0, 2.0], [3.0, 4.0]]),
    ("ints to int64", TensorProto.INT64, [3], [1, 2, 3]),
    ("floats to int64 truncate", TensorProto.INT64, [2], [1.7, -1.7]),
    ("ints to int32", TensorProto.INT32, [3], [1, 2, 3]),
    ("ints to uint8", TensorProto.UINT8, [3], [1, 2, 255]),
    ("ints to double", TensorProto.DOUBLE, [2], [1, 2]),
    ("floats to float16", TensorProto.FLOAT16, [2], [1.5, 2.0]),
    ("bools to bool", TensorProto.BOOL, [2], [True, False]),
    ("ints to bool", TensorProto.BOOL, [2], [1, 0]),
    ("bools to float", TensorProto.FLOAT, [2], [True, False]),
    ("strings", TensorProto.STRING, [2], ["a", "b"]),
    ("ints to string", TensorProto.STRING, [2], [1, 2]),
    ("string numbers to float", TensorProto.FLOAT, [1], ["1.5"]),
    ("None in a list is nan", TensorProto.FLOAT, [1], [None]),
    ("empty list", TensorProto.FLOAT, [None], []),
    ("list of arrays", TensorProto.FLOAT, [2, 2], [np.zeros(2, np.float32), np.ones(2, np.float32)]),
    ("list of numpy scalars", TensorProto.FLOAT, [2], [np.float32(1), np.float32(2)]),
    ("0-d array", TensorProto.FLOAT, [], np.array(1.5, np.float32)),
    ("Python float", TensorProto.DOUBLE, [], 1.5),
    ("Python int", TensorProto.INT64, [], 3),
    ("Python bool", TensorProto.BOOL, [], True),
    ("numpy float32 scalar", TensorProto.FLOAT, [], np.float32(1.5)),
    ("numpy float64 scalar", TensorProto.DOUBLE, [], np.float64(1.5)),
    ("numpy int64 scalar", TensorProto.INT64, [], np.int64(4)),
    ("tuple", TensorProto.FLOAT, [3], (1.0, 2.0, 3.0)),
    ("str", TensorProto.FLOAT, [3], "abc"),
    ("str to string", TensorProto.STRING, [], "a"),
    ("ragged list", TensorProto.FLOAT, [2, 2], [[1.0, 2.0], [3.0]]),
    ("mixed list", TensorProto.FLOAT, [2], [1.0, "x"]),
    ("complex to float", TensorProto.FLOAT, [2], [1 + 2j, 1]),
    ("300 to uint8", TensorProto.UINT8, [1], [300]),
    ("-1 to uint64", TensorProto.UINT64, [1], [-1]),
    ("2**70 to int64", TensorProto.INT64, [3], [1, 2**70, 3]),
    ("2**40 to int32", TensorProto.INT32, [1], [2**40]),
    ("list too deep", TensorProto.FLOAT, [1], [[1.0]]),
    ("dict", TensorProto.FLOAT, [3], {"a": 1}),
    ("float64 array to float", TensorProto.FLOAT, [3], np.array([1, 2, 3], np.float64)),
    ("None", TensorProto.FLOAT, [3], None),
]


@pytest.mark.parametrize("label,elem_type,shape,feed", FEED_CASES, ids=[c[0] for c in FEED_CASES])
def test_feed_conversion_matches_onnxruntime(label, elem_type, shape, feed):
    ort_s, onyx_s = sessions(identity_model(elem_type, shape))
    assert_same(lambda: ort_s.run(None, {"X": feed}), lambda: onyx_s.run(None, {"X": feed}), compare=assert_identical)


def test_types_numpy_lacks_go_further_than_onnxruntime():
    """A list of floats for a bfloat16 input: onnxruntime refuses it; onyx
    makes the ml_dtypes array onnx.numpy_helper would, and returns one."""
    import ml_dtypes

    ort_s, onyx_s = sessions(identity_model(TensorProto.BFLOAT16, [2]))
    with pytest.raises(Exception):
        ort_s.run(None, {"X": [1.0, 2.0]})
    (y,) = onyx_s.run(None, {"X": [1.0, 2.0]})
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), [1.0, 2.0])


def test_feed_name_errors_match_onnxruntime():
    ort_s, onyx_s = sessions(identity_model(TensorProto.FLOAT, [3]))
    x = np.zeros(3, np.float32)
    missing = assert_same(lambda: ort_s.run(None, {}), lambda: onyx_s.run(None, {}))
    assert isinstance(missing, ValueError) and "'X'" in str(missing)
    missing = assert_same(lambda: ort_s.run(None, {"Q": x}), lambda: onyx_s.run(None, {"Q": x}))
    assert isinstance(missing, ValueError) and "'X'" in str(missing) and "'Q'" in str(missing)
    unknown = assert_same(lambda: ort_s.run(None, {"X": x, "Q": x}), lambda: onyx_s.run(None, {"X": x, "Q": x}))
    assert isinstance(unknown, onyx.InvalidArgument) and "Q" in str(unknown)
    unknown = assert_same(lambda: ort_s.run(["nope"], {"X": x}), lambda: onyx_s.run(["nope"], {"X": x}))
    assert isinstance(unknown, onyx.InvalidArgument) and "nope" in str(unknown)
    for bad in (np.zeros(4, np.float32), np.zeros((1, 3), np.float32)):
        assert_same(lambda: ort_s.run(None, {"X": bad}), lambda: onyx_s.run(None, {"X": bad}))


def test_optional_input_may_be_left_out():
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    model = make_model(
        [helper.make_node("OptionalHasElement", ["X"], ["Y"])],
        [helper.make_value_info("X", optional)],
        [helper.make_tensor_value_info("Y", TensorProto.BOOL, [])],
        opset=18,
    )
    ort_s, onyx_s = sessions(model)
    for feed in ({}, {"X": None}, {"X": np.ones(2, np.float32)}):
        assert_same(lambda: ort_s.run(None, feed), lambda: onyx_s.run(None, feed))


# ---- 4. exception classes ----------------------------------------------------------------

ERROR_NAMES = [
    "Fail",
    "InvalidArgument",
    "NoSuchFile",
    "NoModel",
    "EngineError",
    "RuntimeException",
    "InvalidProtobuf",
    "ModelLoaded",
    "NotImplemented",
    "InvalidGraph",
    "EPFail",
]


def test_exception_classes_have_onnxruntimes_bases():
    from onyx.capi import onnxruntime_pybind11_state as onyx_state

    for name in ERROR_NAMES:
        ours, theirs = getattr(onyx_state, name), getattr(ORT_STATE, name)
        builtins = lambda cls: [c.__name__ for c in cls.__mro__ if c.__module__ == "builtins"]  # noqa: E731
        assert builtins(ours) == builtins(theirs) == ["Exception", "BaseException", "object"], name
        assert ours is getattr(onyx, name)
    # As in onnxruntime, every name is a class of its own: catching one does not catch another.
    assert len({getattr(onyx_state, n) for n in ERROR_NAMES}) == len({getattr(ORT_STATE, n) for n in ERROR_NAMES}) == 11


def test_capi_submodule_imports():
    import importlib

    from onyx.capi.onnxruntime_pybind11_state import Fail, InvalidArgument  # noqa: F401

    module = importlib.import_module("onyx.capi.onnxruntime_pybind11_state")
    assert module.__name__ == "onyx.capi.onnxruntime_pybind11_state"
    assert module.Fail is Fail is onyx.Fail
    package = importlib.import_module("onyx.capi")
    assert package.onnxruntime_pybind11_state is module and package.InvalidArgument is InvalidArgument


def test_the_same_failures_raise_the_same_classes(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07garbage")
    loads = [b"garbage\x01\x02", b"\xff" * 64, str(garbage), str(tmp_path / "missing.onnx")]
    for source in loads:
        error = assert_same(
            lambda: onnxruntime.InferenceSession(source, providers=CPU), lambda: onyx.InferenceSession(source)
        )
        assert isinstance(error, (onyx.InvalidProtobuf, onyx.NoSuchFile))
    # A kernel that refuses its inputs at run time: Fail in both.
    model = make_model(
        [helper.make_node("Add", ["A", "B"], ["C"], name="the_add")],
        [
            helper.make_tensor_value_info("A", TensorProto.FLOAT, [None, None]),
            helper.make_tensor_value_info("B", TensorProto.FLOAT, [None, None]),
        ],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, None)],
    )
    ort_s, onyx_s = sessions(model)
    feed = {"A": np.ones((2, 3), np.float32), "B": np.ones((2, 4), np.float32)}
    error = assert_same(lambda: ort_s.run(None, feed), lambda: onyx_s.run(None, feed))
    assert isinstance(error, onyx.Fail) and "the_add" in str(error)
    # The code scripts write: a capi class in an except clause, RuntimeError not catching it.
    from onyx.capi.onnxruntime_pybind11_state import InvalidArgument

    try:
        onyx_s.run(None, {"A": np.ones((2, 3), np.float64), "B": np.ones((2, 3), np.float32)})
    except RuntimeError:
        pytest.fail("onnxruntime's InvalidArgument is not a RuntimeError; onyx's must not be either")
    except InvalidArgument as error:
        assert "double" in str(error)


# ---- 5. profiling -------------------------------------------------------------------------


def test_profiling_start_time_and_session_events(tmp_path):
    assert sessions(symbolic_model())[1].get_profiling_start_time_ns() == 0
    assert sessions(symbolic_model())[0].get_profiling_start_time_ns() == 0

    def configure(runtime, options):
        options.enable_profiling = True
        options.profile_file_prefix = str(tmp_path / runtime.__name__)

    path = tmp_path / "model.onnx"
    onnx.save_model(symbolic_model(), str(path))
    sources = ((symbolic_model().SerializeToString(), "model_loading_array"), (str(path), "model_loading_uri"))
    for source, loading in sources:
        before = time.time_ns()
        ort_s, onyx_s = sessions(source, configure)
        after = time.time_ns()
        traces = {}
        for runtime, session in ((onnxruntime, ort_s), (onyx, onyx_s)):
            start = session.get_profiling_start_time_ns()
            assert before <= start <= after
            session.run(None, {"X": np.ones((1, 2), np.float32)})
            with open(session.end_profiling()) as trace_file:
                trace = json.load(trace_file)
            assert session.get_profiling_start_time_ns() == start  # kept after end_profiling
            events = traces[runtime] = {e["name"]: e for e in trace if e["cat"] == "Session"}
            assert loading in events and "session_initialization" in events
            nodes = [e for e in trace if e["cat"] == "Node"]
            assert nodes, "the run's nodes are in the trace"
            initialization = events["session_initialization"]
            assert events[loading]["ts"] + events[loading]["dur"] <= initialization["ts"] + 1
            assert initialization["ts"] + initialization["dur"] <= min(e["ts"] for e in nodes)
        # onyx's own steps, inside session_initialization.
        events = traces[onyx]
        initialization = events["session_initialization"]
        for step in ("graph_preparation", "planning"):
            assert events[step]["ts"] >= initialization["ts"]
            assert events[step]["ts"] + events[step]["dur"] <= initialization["ts"] + initialization["dur"]


# ---- 6. run options ------------------------------------------------------------------------


def loop_model(iterations_input=True, n=64):
    """A Loop of MatMul + Tanh on an n x n matrix, M iterations: long enough
    to stop from another thread."""
    rng = np.random.default_rng(0)
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["a_in", "W"], ["product"]),
            helper.make_node("Tanh", ["product"], ["a_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("a_in", TensorProto.FLOAT, [n, n]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("a_out", TensorProto.FLOAT, [n, n]),
        ],
    )
    weights = (rng.standard_normal((n, n)) * 0.1).astype(np.float32)
    return make_model(
        [helper.make_node("Loop", ["M", "C", "A"], ["Y"], body=body)],
        [
            helper.make_tensor_value_info("M", TensorProto.INT64, []),
            helper.make_tensor_value_info("A", TensorProto.FLOAT, [n, n]),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, n])],
        [
            helper.make_tensor("C", TensorProto.BOOL, [], [True]),
            helper.make_tensor("W", TensorProto.FLOAT, [n, n], weights.ravel()),
        ],
    )


def test_terminate_from_another_thread_stops_a_run():
    ort_s, onyx_s = sessions(loop_model())
    a = np.eye(64, dtype=np.float32)
    few = {"M": np.array(3, np.int64), "A": a}
    assert_same(lambda: ort_s.run(None, few), lambda: onyx_s.run(None, few))
    endless = {"M": np.array(10**6, np.int64), "A": a}  # about a minute if nothing stops it
    for runtime, session in ((onnxruntime, ort_s), (onyx, onyx_s)):
        run_options = runtime.RunOptions()
        # The stopper needs the GIL while the run is in progress: run() must release it.
        stopper = threading.Timer(0.2, lambda: setattr(run_options, "terminate", True))
        stopper.start()
        started = time.perf_counter()
        with pytest.raises(runtime.capi.onnxruntime_pybind11_state.Fail, match="terminate"):
            session.run(None, endless, run_options)
        assert time.perf_counter() - started < 10
        stopper.join()
        # Still set: the next run stops at once; cleared: it runs.
        with pytest.raises(runtime.capi.onnxruntime_pybind11_state.Fail, match="terminate"):
            session.run(None, few, run_options)
        run_options.terminate = False
        assert session.run(None, few, run_options)[0].shape == (64, 64)


def test_run_options_attributes_match_onnxruntime():
    ours, theirs = onyx.RunOptions(), onnxruntime.RunOptions()
    attributes = ("log_severity_level", "log_verbosity_level", "logid", "terminate", "only_execute_path_to_fetches")
    for attribute in attributes:
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    for options in (ours, theirs):
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        options.logid = "tagged"
        options.terminate = 1
    assert ours.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    assert ours.logid == theirs.logid == ours.run_tag == "tagged"
    assert ours.terminate is theirs.terminate is True
    assert_same(lambda: theirs.get_run_config_entry("missing"), lambda: ours.get_run_config_entry("missing"))
    assert_same(lambda: theirs.add_run_config_entry("k", 5), lambda: ours.add_run_config_entry("k", 5))
    assert_same(lambda: setattr(theirs, "log_severity_level", "x"), lambda: setattr(ours, "log_severity_level", "x"))


def test_run_tag_and_verbose_run_log(capfd):
    ort_s, onyx_s = sessions(symbolic_model())
    x = np.ones((1, 2), np.float32)
    runs = {}
    for runtime, session in ((onnxruntime, ort_s), (onyx, onyx_s)):
        options = runtime.RunOptions()
        options.log_severity_level = 0
        options.logid = "tagged-run"
        options.add_run_config_entry("some.key", "1")
        runs[runtime] = session.run(None, {"X": x}, options)
    assert_close(runs[onyx], runs[onnxruntime])
    assert "onyx verbose: run 'tagged-run' took" in capfd.readouterr().err
    onyx_s.run(None, {"X": x})  # the default options log nothing
    assert "onyx verbose" not in capfd.readouterr().err


# ---- 7. OrtValue, run_with_ort_values, run_async, providers ----------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.int8, np.bool_])
def test_ortvalue_from_numpy_matches_onnxruntime(dtype):
    array = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    ours = onyx.OrtValue.ortvalue_from_numpy(array, "cpu", 0)
    theirs = onnxruntime.OrtValue.ortvalue_from_numpy(array, "cpu", 0)
    methods = ("shape", "data_type", "element_type", "device_name", "is_tensor", "has_value", "is_tensor_sequence")
    for method in (*methods, "tensor_size_in_bytes"):
        assert getattr(ours, method)() == getattr(theirs, method)(), method
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert np.shares_memory(ours.numpy(), array) and ours.data_ptr() == array.ctypes.data
    transposed = onyx.OrtValue.ortvalue_from_numpy(array.T)
    np.testing.assert_array_equal(transposed.numpy(), onnxruntime.OrtValue.ortvalue_from_numpy(array.T).numpy())


def test_ortvalue_from_shape_and_type_and_update_inplace():
    for element_type in (np.float32, np.int64, 7, "float", np.dtype(np.uint8)):
        ours = onyx.OrtValue.ortvalue_from_shape_and_type([2, 3], element_type, "cpu", 0)
        theirs = onnxruntime.OrtValue.ortvalue_from_shape_and_type([2, 3], element_type, "cpu", 0)
        described = [(v.shape(), v.data_type(), v.element_type()) for v in (ours, theirs)]
        assert described[0] == described[1]
        assert ours.numpy().shape == (2, 3)
    for runtime in (onyx, onnxruntime):
        array = np.zeros((2, 3), np.float32)
        value = runtime.OrtValue.ortvalue_from_numpy(array)
        value.update_inplace(np.full((2, 3), 5.0, np.float32))
        np.testing.assert_array_equal(array, np.full((2, 3), 5.0, np.float32))
    assert_same(
        lambda: onnxruntime.OrtValue.ortvalue_from_shape_and_type([-2], np.float32),
        lambda: onyx.OrtValue.ortvalue_from_shape_and_type([-2], np.float32),
    )


def test_ortvalue_refuses_what_onnxruntime_refuses():
    array = np.zeros(3, np.float32)
    # onnxruntime's CPU package has no GPU memory; onyx has where a GPU
    # provider (CUDA, Vulkan) is loaded, and a "gpu" is then its memory
    # (test_device_data.py checks that).
    gpus = [p for p in ("CUDAExecutionProvider", "VulkanExecutionProvider") if p in onyx.get_available_providers()]
    lacking = ["cuda", "gpu"]
    if "CUDAExecutionProvider" in gpus:
        lacking.remove("cuda")
    if gpus:
        lacking.remove("gpu")
    for device in lacking:
        error = assert_same(
            lambda: onnxruntime.OrtValue.ortvalue_from_numpy(array, device, 0),
            lambda: onyx.OrtValue.ortvalue_from_numpy(array, device, 0),
        )
        assert device in str(error) and "no execution provider" in str(error)
        assert_same(
            lambda: onnxruntime.OrtValue.ortvalue_from_shape_and_type([2], np.float32, device, 0),
            lambda: onyx.OrtValue.ortvalue_from_shape_and_type([2], np.float32, device, 0),
        )
    assert_same(
        lambda: onnxruntime.OrtValue.ortvalue_from_numpy([1.0, 2.0]),
        lambda: onyx.OrtValue.ortvalue_from_numpy([1.0, 2.0]),
    )


def test_run_with_ort_values():
    ort_s, onyx_s = sessions(two_output_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = onyx_s.run_with_ort_values(["Z", "Y"], {"X": onyx.OrtValue.ortvalue_from_numpy(x)})
    theirs = ort_s.run_with_ort_values(["Z", "Y"], {"X": onnxruntime.OrtValue.ortvalue_from_numpy(x)})
    assert all(isinstance(v, onyx.OrtValue) for v in ours)
    assert_close([v.numpy() for v in ours], [v.numpy() for v in theirs])
    everything = onyx_s.run_with_ort_values(None, {"X": onyx.OrtValue.ortvalue_from_numpy(x)})
    assert [v.shape() for v in everything] == [[2, 3], [2, 3]]
    # run() takes OrtValue feeds too.
    assert_same(
        lambda: ort_s.run(None, {"X": onnxruntime.OrtValue.ortvalue_from_numpy(x)}),
        lambda: onyx_s.run(None, {"X": onyx.OrtValue.ortvalue_from_numpy(x)}),
    )
    # onnxruntime fails with an AttributeError of its internals on a numpy feed; onyx says what to do.
    with pytest.raises(TypeError, match="ortvalue_from_numpy"):
        onyx_s.run_with_ort_values(None, {"X": x})
    bad = {rt: rt.OrtValue.ortvalue_from_numpy(np.zeros((2, 4), np.float32)) for rt in (onnxruntime, onyx)}
    assert_same(
        lambda: ort_s.run_with_ort_values(None, {"X": bad[onnxruntime]}),
        lambda: onyx_s.run_with_ort_values(None, {"X": bad[onyx]}),
    )


def run_async_and_wait(session, output_names, feed, user_data):
    done = threading.Event()
    got = {}

    def callback(results, data, error):
        got.update(results=results, data=data, error=error, thread=threading.current_thread())
        done.set()

    session.run_async(output_names, feed, callback, user_data)
    assert done.wait(30), "the callback was not called"
    return got


def test_run_async_calls_back_from_another_thread():
    ort_s, onyx_s = sessions(two_output_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = [
        (["Y"], {"X": x}),
        (None, {"X": x}),
        (["Z"], {"X": [[1.0, 2.0, 3.0]]}),
        (["Y"], {"X": np.zeros((2, 4), np.float32)}),  # wrong shape: the error reaches the callback
        (["Y"], {"X": np.zeros((2, 3), np.float64)}),
        (["Q"], {"X": x}),  # unknown output
        (None, {"X": x, "Q": x}),  # unknown input
    ]
    for output_names, feed in cases:
        theirs = run_async_and_wait(ort_s, output_names, feed, {"n": 1})
        ours = run_async_and_wait(onyx_s, output_names, feed, {"n": 1})
        assert ours["thread"] is not threading.main_thread()
        assert ours["data"] == theirs["data"] == {"n": 1}
        assert isinstance(ours["error"], str)
        assert bool(ours["error"]) == bool(theirs["error"]), (ours["error"], theirs["error"])
        assert_close(ours["results"], theirs["results"])
    # Feeds the run cannot start with raise at once, as with run().
    for feed in ({}, {"X": 1.0}):
        assert_same(
            lambda: ort_s.run_async(None, feed, lambda *a: None, None),
            lambda: onyx_s.run_async(None, feed, lambda *a: None, None),
        )


def test_providers_and_provider_options(pytestconfig):
    model = symbolic_model().SerializeToString()
    with_options = [("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})]
    # pytest --providers changes the default list on purpose.
    default = [] if pytestconfig.getoption("--providers") else [None]
    for providers in [["CPUExecutionProvider"], with_options] + default:
        ours = onyx.InferenceSession(model, providers=providers)
        theirs = onnxruntime.InferenceSession(model, providers=providers)
        assert ours.get_providers() == theirs.get_providers() == ["CPUExecutionProvider"]
        assert ours.get_provider_options() == theirs.get_provider_options() == {"CPUExecutionProvider": {}}
    for runtime in (onnxruntime, onyx):
        with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
            session = runtime.InferenceSession(model, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
        assert session.get_providers() == ["CPUExecutionProvider"]
        with pytest.warns(UserWarning, match="CPUExecutionProvider"):
            runtime.InferenceSession(model, providers=["CPUExecutionProvider", "CPUExecutionProvider"])


def test_set_providers_recreates_the_session_with_its_options():
    ort_s, onyx_s = sessions(symbolic_model(), lambda rt, o: o.add_free_dimension_override_by_name("batch", 1))
    for session in (ort_s, onyx_s):
        session.set_providers(["CPUExecutionProvider"], [{}])
        assert session.get_providers() == ["CPUExecutionProvider"]
        session.set_providers()
        assert session.get_providers() == ["CPUExecutionProvider"]
    assert shapes(onyx_s.get_inputs()) == shapes(ort_s.get_inputs()) == [("X", "tensor(float)", [1, "seq"])]
    x = np.ones((1, 4), np.float32)
    assert_same(lambda: ort_s.run(None, {"X": x}), lambda: onyx_s.run(None, {"X": x}))
    assert_same(
        lambda: ort_s.set_providers(["CPUExecutionProvider"], [{}, {}]),
        lambda: onyx_s.set_providers(["CPUExecutionProvider"], [{}, {}]),
    )
    # onnxruntime's session is unusable after that failure; onyx's keeps its providers.
    assert onyx_s.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(onyx_s.run(None, {"X": x})[0], x + 0.5)


# ---- 8. IOBinding ----------------------------------------------------------------------------


def bind_and_run(runtime, session, bind):
    binding = session.io_binding()
    bind(runtime, binding)
    session.run_with_iobinding(binding)
    return binding


def test_iobinding_cpu_inputs_and_allocated_outputs():
    ort_s, onyx_s = sessions(two_output_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def bind(runtime, binding):
        binding.bind_cpu_input("X", x)
        binding.bind_output("Y")
        binding.bind_output("Z", "cpu")
        binding.bind_output("Z", "cpu")  # a second binding of a name replaces the first
        binding.synchronize_inputs()

    ours, theirs = bind_and_run(onyx, onyx_s, bind), bind_and_run(onnxruntime, ort_s, bind)
    ours.synchronize_outputs()
    assert [type(v).__name__ for v in ours.get_outputs()] == ["OrtValue", "OrtValue"]
    assert_close([v.numpy() for v in ours.get_outputs()], [v.numpy() for v in theirs.get_outputs()])
    copies = ours.copy_outputs_to_cpu()
    assert_close(copies, theirs.copy_outputs_to_cpu())
    assert not np.shares_memory(copies[0], ours.get_outputs()[0].numpy())


def test_iobinding_input_is_not_copied():
    ort_s, onyx_s = sessions(two_output_model())
    results = {}
    for runtime, session in ((onnxruntime, ort_s), (onyx, onyx_s)):
        x = np.ones((1, 3), np.float32)
        binding = session.io_binding()
        binding.bind_cpu_input("X", x)
        binding.bind_output("Y")
        x[0, 0] = 100.0  # after binding: the run reads the array itself
        session.run_with_iobinding(binding)
        results[runtime] = binding.copy_outputs_to_cpu()
    assert_close(results[onyx], results[onnxruntime])
    assert results[onyx][0][0, 0] == 200.0


def test_iobinding_buffer_pointers_and_preallocated_outputs():
    ort_s, onyx_s = sessions(two_output_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for runtime, session in ((onnxruntime, ort_s), (onyx, onyx_s)):
        y = np.zeros((2, 3), np.float32)
        z = np.zeros((2, 3), np.float32)
        binding = session.io_binding()
        binding.bind_input("X", "cpu", 0, np.float32, [2, 3], x.ctypes.data)
        binding.bind_output("Y", "cpu", 0, np.float32, [2, 3], y.ctypes.data)
        binding.bind_ortvalue_output("Z", runtime.OrtValue.ortvalue_from_numpy(z))
        session.run_with_iobinding(binding)
        np.testing.assert_array_equal(y, x + x, err_msg=runtime.__name__)
        np.testing.assert_array_equal(z, x * x, err_msg=runtime.__name__)
        outputs = binding.get_outputs()
        assert np.shares_memory(outputs[0].numpy(), y) and np.shares_memory(outputs[1].numpy(), z)
    binding = onyx_s.io_binding()
    binding.bind_ortvalue_input("X", onyx.OrtValue.ortvalue_from_numpy(x))
    binding.bind_output("Y")
    onyx_s.run_with_iobinding(binding, onyx.RunOptions())
    np.testing.assert_array_equal(binding.get_outputs()[0].numpy(), x + x)


def bind_x(binding, array=None):
    binding.bind_cpu_input("X", np.ones((2, 3), np.float32) if array is None else array)


def bind_z_to(runtime, binding, array):
    binding.bind_ortvalue_output("Z", runtime.OrtValue.ortvalue_from_numpy(array))


SOME_MEMORY = np.ones((2, 3), np.float32)

IOBINDING_ERRORS = [
    ("preallocated output of another shape", lambda rt, b: (bind_x(b), bind_z_to(rt, b, np.zeros((3, 3), np.float32)))),
    ("preallocated output of another type", lambda rt, b: (bind_x(b), bind_z_to(rt, b, np.zeros((2, 3), np.float64)))),
    ("no input bound", lambda rt, b: b.bind_output("Y")),
    ("no output bound", lambda rt, b: bind_x(b)),
    ("inputs cleared", lambda rt, b: (bind_x(b), b.bind_output("Y"), b.clear_binding_inputs())),
    ("outputs cleared", lambda rt, b: (bind_x(b), b.bind_output("Y"), b.clear_binding_outputs())),
    ("input of another type", lambda rt, b: (bind_x(b, np.ones((2, 3), np.float64)), b.bind_output("Y"))),
    ("input of another shape", lambda rt, b: (bind_x(b, np.ones((2, 4), np.float32)), b.bind_output("Y"))),
    ("unknown input name", lambda rt, b: b.bind_cpu_input("Q", np.ones((2, 3), np.float32))),
    ("list input", lambda rt, b: b.bind_cpu_input("X", [[1.0, 2.0, 3.0]])),
    ("input on cuda", lambda rt, b: b.bind_input("X", "cuda", 0, np.float32, [2, 3], SOME_MEMORY.ctypes.data)),
    ("pointer without shape", lambda rt, b: b.bind_output("Y", "cpu", 0, np.float32, None, SOME_MEMORY.ctypes.data)),
]


@pytest.mark.parametrize("label,bind", IOBINDING_ERRORS, ids=[c[0] for c in IOBINDING_ERRORS])
def test_iobinding_errors_match_onnxruntime(label, bind):
    ort_s, onyx_s = sessions(two_output_model())
    error = assert_same(lambda: bind_and_run(onnxruntime, ort_s, bind), lambda: bind_and_run(onyx, onyx_s, bind))
    assert isinstance(error, Exception)


def test_iobinding_output_device_other_than_cpu_is_refused():
    # onnxruntime accepts the binding and fails later; onyx refuses it at once.
    binding = onyx.InferenceSession(two_output_model().SerializeToString()).io_binding()
    with pytest.raises(RuntimeError, match="'cuda'.*no execution provider"):
        binding.bind_output("Y", "cuda")
    with pytest.raises(RuntimeError, match="cannot bind output 'Q'"):
        binding.bind_output("Q")
