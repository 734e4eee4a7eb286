"""The C++ training API (include/onyx/training.h) against Python's
(onyx.training.api): tests/cxx/train_cxx.cc trains on artifacts from
generate_artifacts, and the same steps in Python give the same weights;
each loads the other's checkpoint (byte for byte the same file when saved
again), and the model the C++ side exports gives onnxruntime the outputs
of the Module in eval mode, as Python's export does."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest
from bindings_util import program, run_program
from onnx import TensorProto, helper, numpy_helper

from onyx.training import api, artifacts, checkpoint

STEPS = 5
BATCH = 6


def mlp(path):
    """x[N, 4] -> MatMul + Add -> Relu -> Gemm -> y[N, 3]."""
    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32) * 0.5, "w1"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b1"),
        numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32) * 0.5, "w2"),
        numpy_helper.from_array(rng.standard_normal(3).astype(np.float32) * 0.1, "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("Gemm", ["h", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train_cxx")
    arts = folder / "artifacts"
    artifacts.generate_artifacts(str(mlp(folder / "mlp.onnx")), loss=artifacts.LossType.MSELoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=str(arts),
                                 additional_output_names=["y"])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((STEPS, BATCH, 4)).astype(np.float32)
    target = rng.standard_normal((STEPS, BATCH, 3)).astype(np.float32)
    data = folder / "data.ckpt"
    checkpoint.write(data, {"x": x, "target": target}, {}, None, {})
    out = folder / "cxx"
    out.mkdir()
    done = run_program("onyx_train_cxx", "train", arts, data, out, STEPS, "y")
    return {"folder": folder, "arts": arts, "x": x, "target": target, "data": data, "out": out, "stdout": done.stdout}


def python_run(arts, x, target, steps, state=None):
    """The C++ program's steps in Python."""
    state = state or api.CheckpointState.load_checkpoint(str(arts / "checkpoint"))
    module = api.Module(str(arts / "training_model.onnx"), state, str(arts / "eval_model.onnx"))
    optimizer = api.Optimizer(str(arts / "optimizer_model.onnx"), module)
    scheduler = api.LinearLRScheduler(optimizer, 2, 10, 0.05)
    losses = []
    for i in range(steps):
        losses.append(float(module(x[i], target[i])[0]))
        optimizer.step()
        scheduler.step()
        module.lazy_reset_grad()
    return state, module, losses


def assert_same_state(a, b, tol=1e-6):
    assert list(a.parameters) == list(b.parameters)
    for name in a.parameters:
        np.testing.assert_allclose(a.parameters[name].data, b.parameters[name].data, rtol=0, atol=tol, err_msg=name)
    oa, ob = a._optimizer, b._optimizer
    assert oa["step"] == ob["step"] and oa["learning_rate"] == ob["learning_rate"]
    for param, moments in oa["states"].items():
        for key, value in moments.items():
            np.testing.assert_allclose(value, ob["states"][param][key], rtol=0, atol=tol, err_msg=f"{param}.{key}")


def test_cxx_training_matches_python(setup):
    py_state, _, losses = python_run(setup["arts"], setup["x"], setup["target"], STEPS)
    cxx_state = api.CheckpointState.load_checkpoint(str(setup["out"] / "cxx.ckpt"))
    assert_same_state(cxx_state, py_state)
    assert cxx_state._optimizer["step"] == STEPS
    cxx_losses = [float(line.split()[3]) for line in setup["stdout"].splitlines() if line.startswith("step ")]
    np.testing.assert_allclose(cxx_losses, losses, rtol=1e-6)
    # The property bag came across with its types.
    assert cxx_state.properties["cxx_steps"] == STEPS and isinstance(cxx_state.properties["cxx_steps"], int)
    assert cxx_state.properties["cxx_note"] == "trained in C++"
    assert cxx_state.properties["cxx_last_loss"] == pytest.approx(losses[-1], rel=1e-6)
    assert f"trainable parameters {4 * 8 + 8 + 8 * 3 + 3}" in setup["stdout"]


def test_cxx_resumes_from_a_python_checkpoint(setup, tmp_path):
    """Python trains and saves; C++ loads it and trains on; Python does the
    same steps from its own state: the same weights."""
    py_state, _, _ = python_run(setup["arts"], setup["x"], setup["target"], 2)
    saved = tmp_path / "py.ckpt"
    py_state.properties["from"] = "python"
    api.CheckpointState.save_checkpoint(py_state, str(saved), include_optimizer_state=True)
    out = tmp_path / "resumed"
    out.mkdir()
    run_program("onyx_train_cxx", "train", setup["arts"], setup["data"], out, 3, "y", saved)
    python_run(setup["arts"], setup["x"], setup["target"], 3, state=py_state)
    resumed = api.CheckpointState.load_checkpoint(str(out / "cxx.ckpt"))
    assert_same_state(resumed, py_state)
    assert resumed._optimizer["step"] == 5
    assert resumed.properties["from"] == "python"


def test_checkpoint_files_are_the_same_bytes(setup, tmp_path):
    """A checkpoint Python wrote, loaded and saved again in C++, is the same
    file; and one C++ wrote, saved again in Python, too."""
    py_state, _, _ = python_run(setup["arts"], setup["x"], setup["target"], 1)
    py_state.properties["epoch"] = 3
    py_state.properties["rate"] = 1e-05
    py_state.properties["note"] = 'caf\u00e9 "\U0001F600"\n'
    py_file = tmp_path / "py.ckpt"
    api.CheckpointState.save_checkpoint(py_state, str(py_file), include_optimizer_state=True)
    copied = tmp_path / "copied.ckpt"
    run_program("onyx_train_cxx", "copy", py_file, copied)
    assert copied.read_bytes() == py_file.read_bytes()

    cxx_file = setup["out"] / "cxx.ckpt"
    again = tmp_path / "again.ckpt"
    api.CheckpointState.save_checkpoint(api.CheckpointState.load_checkpoint(str(cxx_file)), str(again),
                                        include_optimizer_state=True)
    assert again.read_bytes() == cxx_file.read_bytes()


def test_exported_model_runs_in_onnxruntime(setup, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    exported = setup["out"] / "inference.onnx"
    session = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["x"]
    (y,) = session.run(["y"], {"x": setup["x"][0]})
    eval_outputs, _, _, _ = checkpoint.read(setup["out"] / "eval.ckpt")
    np.testing.assert_allclose(y, eval_outputs["y"], rtol=1e-6, atol=1e-6)

    # Python's export of the same state is the same model.
    state = api.CheckpointState.load_checkpoint(str(setup["out"] / "cxx.ckpt"))
    module = api.Module(str(setup["arts"] / "training_model.onnx"), state, str(setup["arts"] / "eval_model.onnx"))
    py_path = tmp_path / "py_inference.onnx"
    module.export_model_for_inferencing(str(py_path), ["y"])
    cxx, py = onnx.load(exported), onnx.load(py_path)
    onnx.checker.check_model(cxx)
    assert cxx.graph.node == py.graph.node
    assert cxx.graph.input == py.graph.input
    assert cxx.graph.output == py.graph.output
    assert cxx.graph.value_info == py.graph.value_info
    assert cxx.graph.name == py.graph.name == "mlp"
    assert cxx.opset_import == py.opset_import and cxx.ir_version == py.ir_version
    assert cxx.producer_name == py.producer_name and list(cxx.metadata_props) == list(py.metadata_props)
    inits = {t.name: numpy_helper.to_array(t) for t in cxx.graph.initializer}
    py_inits = {t.name: numpy_helper.to_array(t) for t in py.graph.initializer}
    assert sorted(inits) == sorted(py_inits)
    for name, value in py_inits.items():
        np.testing.assert_array_equal(inits[name], value, err_msg=name)


def test_cxx_errors_name_the_file(setup, tmp_path):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"NOTACKPT" + bytes(40))
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([str(program("onyx_train_cxx")), "train", str(setup["arts"]), str(setup["data"]), str(out),
                           "1", "y", str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"'{bad}' is not an onyx checkpoint (no ONYXCKPT magic)" in done.stderr
    # Python says the same of the file.
    with pytest.raises(ValueError, match="is not an onyx checkpoint"):
        api.CheckpointState.load_checkpoint(str(bad))
    done = subprocess.run([str(program("onyx_train_cxx")), "train", str(tmp_path), str(setup["data"]), str(out),
                           "1", "y", str(setup["out"] / "cxx.ckpt")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Module train model: no model file at" in done.stderr
