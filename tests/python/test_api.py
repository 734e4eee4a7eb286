"""The onnxruntime-compatible API surface: metadata, options, enums,
providers, exception classes."""

import json
import os
import pathlib

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx
from helpers import add_relu_model, make_model


def test_module_basics():
    assert isinstance(onyx.__version__, str) and onyx.__version__
    assert onyx.get_device() == "CPU"
    providers = onyx.get_available_providers()
    assert "CPUExecutionProvider" in providers
    assert onyx.GraphOptimizationLevel.ORT_ENABLE_ALL != onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    for name in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_LAYOUT", "ORT_ENABLE_ALL"):
        assert hasattr(onyx.GraphOptimizationLevel, name)
    assert hasattr(onyx.ExecutionMode, "ORT_SEQUENTIAL") and hasattr(onyx.ExecutionMode, "ORT_PARALLEL")


def test_exception_hierarchy():
    for cls in (onyx.InvalidArgument, onyx.InvalidGraph, onyx.NotImplemented, onyx.Fail, onyx.NoSuchFile):
        assert issubclass(cls, onyx.OnyxError)
    # As onnxruntime's classes: Exceptions, not RuntimeErrors (test_ort_parity compares the two).
    assert issubclass(onyx.OnyxError, Exception) and not issubclass(onyx.OnyxError, RuntimeError)
    assert onyx.InvalidModel is onyx.InvalidGraph
    from onyx.capi import Fail, InvalidArgument

    assert Fail is onyx.Fail and InvalidArgument is onyx.InvalidArgument


def test_session_options_attributes():
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    so.execution_mode = onyx.ExecutionMode.ORT_PARALLEL
    so.enable_profiling = False
    so.profile_file_prefix = "p"
    so.log_severity_level = 3
    so.log_verbosity_level = 1
    so.logid = "test"
    so.optimized_model_filepath = ""
    so.enable_mem_pattern = False
    so.enable_cpu_mem_arena = False
    so.add_session_config_entry("session.some_key", "1")
    assert so.get_session_config_entry("session.some_key") == "1"
    with pytest.raises(RuntimeError, match="no configuration entry"):
        so.get_session_config_entry("missing")
    assert so.graph_optimization_level == onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert so.intra_op_num_threads == 2
    assert so.execution_mode == onyx.ExecutionMode.ORT_PARALLEL
    assert so.logid == "test"
    assert so.enable_mem_pattern is False

    ro = onyx.RunOptions()
    ro.log_severity_level = 1
    ro.log_verbosity_level = 0
    ro.logid = "run"
    ro.run_tag = "tag"
    ro.terminate = False
    assert ro.run_tag == "tag" and ro.terminate is False


def test_io_metadata_matches_onnxruntime():
    nodes = [helper.make_node("Identity", ["A"], ["B"]), helper.make_node("Identity", ["C"], ["D"])]
    inputs = [
        helper.make_tensor_value_info("A", TensorProto.FLOAT, ["batch", 3, None]),
        helper.make_tensor_value_info("C", TensorProto.INT64, [2]),
    ]
    outputs = [
        helper.make_tensor_value_info("B", TensorProto.FLOAT, ["batch", 3, None]),
        helper.make_tensor_value_info("D", TensorProto.INT64, [2]),
    ]
    model = make_model(nodes, inputs, outputs)
    ours = onyx.InferenceSession(model.SerializeToString())
    ref = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for got, want in zip(ours.get_inputs(), ref.get_inputs()):
        assert (got.name, got.type, got.shape) == (want.name, want.type, want.shape)
    for got, want in zip(ours.get_outputs(), ref.get_outputs()):
        assert (got.name, got.type, got.shape) == (want.name, want.type, want.shape)
    assert ours.get_inputs()[0].shape == ["batch", 3, None]
    assert ours.get_inputs()[0].type == "tensor(float)"
    assert ours.get_inputs()[1].type == "tensor(int64)"
    assert ours.get_overridable_initializers() == []


def test_sequence_and_map_type_strings():
    seq = helper.make_tensor_sequence_value_info("S", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("SequenceConstruct", ["X"], ["S"]),
    ]
    model = make_model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])], [seq])
    session = onyx.InferenceSession(model.SerializeToString())
    assert session.get_outputs()[0].type == "seq(tensor(float))"


def test_model_metadata():
    model = add_relu_model()
    model.producer_name = "onyx-tests"
    model.domain = "ai.onyx.test"
    model.doc_string = "a model for tests"
    model.graph.doc_string = "the graph"
    model.model_version = 7
    helper.set_model_props(model, {"author": "me", "license": "none"})
    meta = onyx.InferenceSession(model.SerializeToString()).get_modelmeta()
    assert meta.producer_name == "onyx-tests"
    assert meta.graph_name == "test_graph"
    assert meta.domain == "ai.onyx.test"
    assert meta.description == "a model for tests"
    assert meta.graph_description == "the graph"
    assert meta.version == 7
    assert meta.custom_metadata_map == {"author": "me", "license": "none"}


def test_providers_and_options(tmp_path):
    model = add_relu_model()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 1
    for source in (str(path), path, pathlib.PurePath(str(path)), model.SerializeToString()):
        session = onyx.InferenceSession(source, so, providers=["CPUExecutionProvider"])
        assert session.get_providers()[-1] == "CPUExecutionProvider"
        assert "CPUExecutionProvider" in session.get_provider_options()
        assert session.get_session_options() is so
    with pytest.warns(UserWarning, match="not in available provider names"):
        session = onyx.InferenceSession(str(path), providers=["NoSuchExecutionProvider", "CPUExecutionProvider"])
    assert "NoSuchExecutionProvider" not in session.get_providers()
    session = onyx.InferenceSession(str(path), providers=[("CPUExecutionProvider", {})])
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_overridable_initializer_listed():
    # An initializer that is also a graph input can be fed to replace it.
    nodes = [helper.make_node("Add", ["X", "B"], ["Y"])]
    inputs = [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [3]),
        helper.make_tensor_value_info("B", TensorProto.FLOAT, [3]),
    ]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3])]
    model = make_model(nodes, inputs, outputs, [helper.make_tensor("B", TensorProto.FLOAT, [3], [1, 2, 3])])
    session = onyx.InferenceSession(model.SerializeToString())
    assert [a.name for a in session.get_inputs()] == ["X"]
    over = session.get_overridable_initializers()
    assert [(a.name, a.type, a.shape) for a in over] == [("B", "tensor(float)", [3])]
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(session.run(None, {"X": x})[0], [2, 3, 4])
    np.testing.assert_array_equal(session.run(None, {"X": x, "B": np.zeros(3, np.float32)})[0], [1, 1, 1])


def test_profiling(tmp_path):
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    # One event per node: the CPU's (a compiling provider would show its fused node).
    session = onyx.InferenceSession(add_relu_model().SerializeToString(), so, providers=["CPUExecutionProvider"])
    session.run(None, {"X": np.ones((1, 3), np.float32)})
    path = session.end_profiling()
    assert isinstance(path, str) and os.path.exists(path)
    with open(path) as f:
        events = json.load(f)
    mul = [e for e in events if e["cat"] == "Node" and e["args"]["op_name"] == "Mul"]
    assert len(mul) == 1 and mul[0]["dur"] >= 0
    # Shapes as onnxruntime's profiles give them, so the same tools read both.
    assert mul[0]["args"]["input_type_shape"] == [{"float": [1, 3]}, {"float": []}]
    assert mul[0]["args"]["output_type_shape"] == [{"float": [1, 3]}]
