"""onyx.training: generate_artifacts and the onnxruntime.training.api classes
(CheckpointState, Module, Optimizer, LinearLRScheduler) over onyx sessions.

Most tests use a two-layer perceptron written with Mul/ReduceSum/Add/Relu
(ops whose gradient rules every onyx build has) and an MSE loss; the digits
tests train examples/train_digits.py's Gemm MLP and Conv CNN with a
cross-entropy loss."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.training import artifacts
from onyx.training.api import CheckpointState, LinearLRScheduler, Module, Optimizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import train_digits  # noqa: E402

ort = pytest.importorskip("onnxruntime")


def elementwise_mlp(seed=0, n_in=8, hidden=16, n_out=3):
    """x [N, n_in] -> out [n_out, N], a two-layer perceptron with the products
    as broadcast Mul + ReduceSum: h = sum_i x[:, i, None] * w1[i] + b1,
    out[k] = sum_j relu(h)[:, j] * w2[k, 0, j] + b2[k] (out is transposed so
    that no op without a rule lies between the weights and the loss)."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array((rng.standard_normal((n_in, hidden)) * np.sqrt(2 / n_in)).astype(np.float32), "w1"),
        numpy_helper.from_array(np.zeros(hidden, np.float32), "b1"),
        numpy_helper.from_array((rng.standard_normal((n_out, 1, hidden)) * np.sqrt(2 / hidden)).astype(np.float32),
                                "w2"),
        numpy_helper.from_array(np.zeros((n_out, 1), np.float32), "b2"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axis2"], ["x3"]),
        helper.make_node("Mul", ["x3", "w1"], ["p1"]),
        helper.make_node("ReduceSum", ["p1", "axis1"], ["s1"], keepdims=0),
        helper.make_node("Add", ["s1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("Mul", ["a", "w2"], ["p2"]),
        helper.make_node("ReduceSum", ["p2", "axis2"], ["s2"], keepdims=0),
        helper.make_node("Add", ["s2", "b2"], ["out"]),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", n_in])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [n_out, "N"])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def regression_data(seed=0, n=256, n_in=8, n_out=3):
    """x [n, n_in] and targets [n_out, n] (the model's output layout)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n_in)).astype(np.float32)
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    return x, np.ascontiguousarray(np.tanh(x @ w).T.astype(np.float32))


PARAMS = ["w1", "b1", "w2", "b2"]


@pytest.fixture
def mlp_artifacts(tmp_path):
    artifacts.generate_artifacts(elementwise_mlp(), requires_grad=PARAMS, loss=artifacts.LossType.MSELoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=tmp_path,
                                 additional_output_names=["out"])
    return tmp_path


def open_module(folder, session_options=None):
    state = CheckpointState.load_checkpoint(folder / "checkpoint")
    module = Module(folder / "training_model.onnx", state, folder / "eval_model.onnx", session_options=session_options)
    return state, module, Optimizer(folder / "optimizer_model.onnx", module)


# --- artifacts ---


def test_artifacts_have_onnxruntimes_names_inputs_and_outputs(tmp_path):
    model = train_digits.build_mlp()
    artifacts.generate_artifacts(model, requires_grad=["fc1.weight", "fc1.bias", "fc2.weight"],
                                 frozen_params=["fc2.bias"], loss=artifacts.LossType.CrossEntropyLoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=tmp_path, prefix="d_")
    names = sorted(os.listdir(tmp_path))
    assert names == ["d_checkpoint", "d_eval_model.onnx", "d_optimizer_model.onnx", "d_training_model.onnx"]
    training = onnx.load(tmp_path / "d_training_model.onnx")
    trained = ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [i.name for i in training.graph.input] == ["x", "labels"] + trained
    assert [o.name for o in training.graph.output] == ["loss"] + [f"{p}_grad" for p in trained]
    assert [t.name for t in training.graph.initializer] == ["fc2.bias"]  # frozen: stays an initializer
    labels = training.graph.input[1].type.tensor_type
    assert labels.elem_type == TensorProto.INT64 and [d.dim_param for d in labels.shape.dim] == ["N"]
    gradient = [n for n in training.graph.node if n.op_type == "Gradient"]
    assert len(gradient) == 1 and gradient[0].domain == "ai.onnx.preview.training"
    attrs = {a.name: helper.get_attribute_value(a) for a in gradient[0].attribute}
    assert [x.decode() for x in attrs["xs"]] == trained and attrs["y"] == b"loss"

    evaluation = onnx.load(tmp_path / "d_eval_model.onnx")
    assert [i.name for i in evaluation.graph.input] == ["x", "labels"] + trained
    assert [o.name for o in evaluation.graph.output] == ["loss"]
    assert not any(n.domain == "ai.onnx.preview.training" for n in evaluation.graph.node)
    onnx.checker.check_model(evaluation, full_check=True)

    optimizer = onnx.load(tmp_path / "d_optimizer_model.onnx")
    onnx.checker.check_model(optimizer, full_check=True)
    expected = ["learning_rate", "step"]
    for p in trained:
        expected += [p, f"{p}_grad", f"{p}.exp_avg", f"{p}.exp_avg_sq"]
    assert [i.name for i in optimizer.graph.input] == expected

    state = CheckpointState.load_checkpoint(tmp_path / "d_checkpoint")
    assert list(state.parameters) == trained
    assert all(state.parameters[p].requires_grad for p in trained)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(state.parameters["fc1.weight"].data, init["fc1.weight"])


def test_default_requires_grad_is_every_float_initializer(tmp_path):
    artifacts.generate_artifacts(elementwise_mlp(), loss=artifacts.LossType.L1Loss, artifact_directory=tmp_path)
    training = onnx.load(tmp_path / "training_model.onnx")
    assert [o.name for o in training.graph.output] == ["loss"] + [f"{p}_grad" for p in PARAMS]
    assert "target" in [i.name for i in training.graph.input]
    assert not (tmp_path / "optimizer_model.onnx").exists()  # optimizer=None: no optimizer model


@pytest.mark.parametrize("loss", list(artifacts.LossType))
def test_every_loss_matches_numpy(tmp_path, loss):
    if loss is artifacts.LossType.CrossEntropyLoss:
        _cross_entropy_matches_numpy(tmp_path)
        return
    artifacts.generate_artifacts(elementwise_mlp(), requires_grad=PARAMS, loss=loss, artifact_directory=tmp_path)
    state = CheckpointState.load_checkpoint(tmp_path / "checkpoint")
    module = Module(tmp_path / "training_model.onnx", state, tmp_path / "eval_model.onnx").eval()
    x, t = regression_data()
    if loss is artifacts.LossType.BCEWithLogitsLoss:
        t = (t > 0).astype(np.float32)
    out = ort.InferenceSession(elementwise_mlp().SerializeToString()).run(None, {"x": x})[0].astype(np.float64)
    expected = {
        artifacts.LossType.MSELoss: np.mean((out - t) ** 2),
        artifacts.LossType.L1Loss: np.mean(np.abs(out - t)),
        artifacts.LossType.BCEWithLogitsLoss: np.mean(np.logaddexp(0, out) - t * out),
    }[loss]
    np.testing.assert_allclose(float(module(x, t)), expected, rtol=1e-5)
    # The same loss in onnxruntime, from the eval model with the parameters fed.
    feeds = {"x": x, "target": t, **{p: state.parameters[p].data for p in PARAMS}}
    np.testing.assert_allclose(ort.InferenceSession(str(tmp_path / "eval_model.onnx")).run(None, feeds)[0], expected,
                               rtol=1e-5)


def _cross_entropy_matches_numpy(folder):
    # The classes are the last axis of the digits MLP's logits ([N, 10]).
    model = train_digits.build_mlp()
    artifacts.generate_artifacts(model, loss=artifacts.LossType.CrossEntropyLoss, artifact_directory=folder)
    state = CheckpointState.load_checkpoint(folder / "checkpoint")
    module = Module(folder / "training_model.onnx", state, folder / "eval_model.onnx").eval()
    x, y, _, _ = train_digits.load_data(0)
    x, y = x[:128], y[:128]
    logits = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0].astype(np.float64)
    log_probs = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - logits.max(
        1, keepdims=True)
    expected = -np.mean(log_probs[np.arange(len(y)), y])
    np.testing.assert_allclose(float(module(x, y)), expected, rtol=1e-5)


# --- the optimizer model against numpy ---


def numpy_adamw(p, g, m, v, lr, step, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    p = p * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    denom = np.sqrt(v) / np.sqrt(1 - b2**step) + eps
    return p - lr / (1 - b1**step) * m / denom, m, v


@pytest.mark.parametrize("runtime", ["onyx", "onnxruntime"])
@pytest.mark.parametrize("kind", ["AdamW", "SGD"])
def test_optimizer_model_matches_numpy(runtime, kind):
    rng = np.random.default_rng(1)
    shapes = {"a": (3, 4), "b": (5,)}
    model = artifacts.optimizer_model(artifacts.OptimType[kind], [(n, TensorProto.FLOAT) for n in shapes])
    session = (onyx if runtime == "onyx" else ort).InferenceSession(model.SerializeToString(),
                                                                    providers=["CPUExecutionProvider"])
    params = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    moments = {n: (np.zeros(s, np.float32), np.zeros(s, np.float32)) for n, s in shapes.items()}
    ref = {n: (p.astype(np.float64), np.zeros(s), np.zeros(s)) for (n, p), s in zip(params.items(), shapes.values())}
    for step, lr in ((1, 0.1), (2, 0.05), (3, 0.02)):
        grads = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
        feeds = {"learning_rate": np.array(lr, np.float32), "step": np.array(step, np.int64)}
        for n in shapes:
            feeds[n], feeds[f"{n}_grad"] = params[n], grads[n]
            if kind == "AdamW":
                feeds[f"{n}.exp_avg"], feeds[f"{n}.exp_avg_sq"] = moments[n]
        names = [o.name for o in session.get_outputs()]
        out = dict(zip(names, session.run(None, feeds)))
        for n in shapes:
            p, m, v = ref[n]
            if kind == "AdamW":
                ref[n] = numpy_adamw(p, grads[n].astype(np.float64), m, v, lr, step)
                moments[n] = (out[f"{n}.exp_avg.updated"], out[f"{n}.exp_avg_sq.updated"])
                np.testing.assert_allclose(moments[n][0], ref[n][1], rtol=1e-5, atol=1e-7)
                np.testing.assert_allclose(moments[n][1], ref[n][2], rtol=1e-5, atol=1e-9)
            else:
                ref[n] = (p - lr * grads[n], m, v)
            params[n] = out[f"{n}.updated"]
            np.testing.assert_allclose(params[n], ref[n][0], rtol=1e-5, atol=1e-6)


def test_linear_lr_scheduler(mlp_artifacts):
    state, module, optimizer = open_module(mlp_artifacts)
    scheduler = LinearLRScheduler(optimizer, warmup_step_count=2, total_step_count=6, initial_lr=0.1)
    x, t = regression_data()
    seen = [optimizer.get_learning_rate()]
    for _ in range(6):
        module(x[:32], t[:, :32])
        optimizer.step()
        module.lazy_reset_grad()
        scheduler.step()
        seen.append(optimizer.get_learning_rate())
    np.testing.assert_allclose(seen, [0.0, 0.05, 0.1, 0.075, 0.05, 0.025, 0.0])
    # Resumed from the state, a new scheduler continues where the count stands.
    again = LinearLRScheduler(optimizer, 2, 6, 0.1)
    assert again._count == 6 and optimizer.get_learning_rate() == 0.0


# --- Module ---


def test_gradients_accumulate_until_lazy_reset(mlp_artifacts):
    state, module, _ = open_module(mlp_artifacts)
    x, t = regression_data()
    module(x[:16], t[:, :16])
    first = {p: state.parameters[p].grad.copy() for p in PARAMS}
    module(x[16:32], t[:, 16:32])
    summed = {p: state.parameters[p].grad.copy() for p in PARAMS}
    module.lazy_reset_grad()
    assert state.parameters["w1"].grad is None
    module(x[16:32], t[:, 16:32])
    for p in PARAMS:
        np.testing.assert_allclose(summed[p], first[p] + state.parameters[p].grad, rtol=1e-5, atol=1e-7)
        assert np.abs(first[p]).sum() > 0


def test_module_io_names_and_parameter_buffers(mlp_artifacts):
    state, module, _ = open_module(mlp_artifacts)
    assert module.input_names() == ["x", "target"]
    assert module.output_names() == ["loss", "out"]
    sizes = [state.parameters[p].data.size for p in PARAMS]
    assert module.get_parameters_size() == sum(sizes)
    flat = module.get_contiguous_parameters()
    assert flat.shape == (sum(sizes),)
    np.testing.assert_array_equal(flat[:sizes[0]], state.parameters["w1"].data.ravel())
    module.copy_buffer_to_parameters(np.arange(sum(sizes), dtype=np.float32))
    assert state.parameters["b1"].data[0] == sizes[0]


def test_mse_training_lowers_the_loss_and_recompute_gives_the_same_steps(mlp_artifacts):
    x, t = regression_data()
    losses = {}
    for recompute in ("none", "all"):
        options = onyx.SessionOptions()
        options.intra_op_num_threads = 1
        options.add_session_config_entry("onyx.training.recompute", recompute)
        state, module, optimizer = open_module(mlp_artifacts, options)
        optimizer.set_learning_rate(0.01)
        run = []
        for step in range(60):
            i = (step * 32) % len(x)
            run.append(float(module(x[i:i + 32], np.ascontiguousarray(t[:, i:i + 32]))[0]))
            optimizer.step()
            module.lazy_reset_grad()
        losses[recompute] = run
    assert losses["none"][-1] < 0.5 * losses["none"][0]
    np.testing.assert_allclose(losses["all"], losses["none"], rtol=1e-5)


def test_export_model_for_inferencing_runs_in_onnxruntime_as_module_predicts(mlp_artifacts, tmp_path):
    state, module, optimizer = open_module(mlp_artifacts)
    optimizer.set_learning_rate(0.01)
    x, t = regression_data()
    for step in range(20):
        module(x[:64], np.ascontiguousarray(t[:, :64]))
        optimizer.step()
        module.lazy_reset_grad()
    module.eval()
    _, predicted = module(x, t)
    path = tmp_path / "inference.onnx"
    module.export_model_for_inferencing(path, ["out"])
    exported = onnx.load(path)
    onnx.checker.check_model(exported, full_check=True)
    assert [i.name for i in exported.graph.input] == ["x"]
    assert sorted(t.name for t in exported.graph.initializer) == sorted(PARAMS + ["axis1", "axis2"])
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, predicted, rtol=1e-5, atol=1e-6)
    initial = ort.InferenceSession(elementwise_mlp().SerializeToString()).run(None, {"x": x})[0]
    assert not np.allclose(got, initial)  # the trained weights, not the initial ones


# --- checkpoints ---


def test_checkpoint_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32), "h": np.arange(5, dtype=np.float64),
              "e": np.zeros((0, 2), np.float32)}
    optimizer = {"step": 7, "learning_rate": 0.0125, "states": {"w": {"exp_avg": rng.standard_normal((3, 4))
                                                                      .astype(np.float32),
                                                                      "exp_avg_sq": np.ones((3, 4), np.float32)}}}
    state = CheckpointState(params, {"w": True, "h": False, "e": True}, optimizer)
    state.properties["epoch"] = 3
    state.properties["best"] = 0.25
    state.properties["note"] = "résumé"
    path = tmp_path / "ckpt"
    CheckpointState.save_checkpoint(state, path, include_optimizer_state=True)
    assert os.listdir(tmp_path) == ["ckpt"]  # the temporary file was renamed over it
    loaded = CheckpointState.load_checkpoint(path)
    assert list(loaded.parameters) == ["w", "h", "e"]
    for name, array in params.items():
        got = loaded.parameters[name].data
        assert got.dtype == array.dtype and got.shape == array.shape
        np.testing.assert_array_equal(got, array)
    assert [loaded.parameters[n].requires_grad for n in params] == [True, False, True]
    assert loaded._optimizer["step"] == 7 and loaded._optimizer["learning_rate"] == 0.0125
    np.testing.assert_array_equal(loaded._optimizer["states"]["w"]["exp_avg"], optimizer["states"]["w"]["exp_avg"])
    assert dict((k, loaded.properties[k]) for k in loaded.properties) == {"epoch": 3, "best": 0.25, "note": "résumé"}
    loaded.parameters["w"] = np.ones((3, 4))  # writable, cast to the parameter's dtype
    assert loaded.parameters["w"].data.dtype == np.float32
    with pytest.raises(ValueError, match="shape"):
        loaded.parameters["w"] = np.ones(3)
    with pytest.raises(TypeError, match="int, float or str"):
        loaded.properties["bad"] = [1, 2]
    # Without the optimizer state.
    CheckpointState.save_checkpoint(state, path)
    assert CheckpointState.load_checkpoint(path)._optimizer is None


def test_checkpoint_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        CheckpointState.load_checkpoint(tmp_path / "missing")
    (tmp_path / "junk").write_bytes(b"not a checkpoint at all")
    with pytest.raises(ValueError, match="not an onyx checkpoint"):
        CheckpointState.load_checkpoint(tmp_path / "junk")
    state = CheckpointState({"w": np.ones(1000, np.float32)})
    CheckpointState.save_checkpoint(state, tmp_path / "ckpt")
    data = (tmp_path / "ckpt").read_bytes()
    (tmp_path / "cut").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        CheckpointState.load_checkpoint(tmp_path / "cut")


TRAINER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    import onyx
    from onyx.training.api import CheckpointState, LinearLRScheduler, Module, Optimizer
    sys.path.insert(0, {tests!r})
    from test_training_api import regression_data

    folder, ckpt, total, slow = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "slow"
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    state = CheckpointState.load_checkpoint(ckpt if ckpt.exists() else folder / "checkpoint")
    module = Module(folder / "training_model.onnx", state, session_options=options)
    optimizer = Optimizer(folder / "optimizer_model.onnx", module)
    scheduler = LinearLRScheduler(optimizer, 5, total, 0.02)
    x, t = regression_data(n=512)
    step = state.properties.get("next_step", 0)
    while step < total:
        order = np.random.default_rng((7, step // 8)).permutation(len(x))
        i = order[(step % 8) * 64:(step % 8 + 1) * 64]
        module(x[i], np.ascontiguousarray(t[:, i]))
        optimizer.step()
        module.lazy_reset_grad()
        scheduler.step()
        step += 1
        if step % 10 == 0:
            state.properties["next_step"] = step
            CheckpointState.save_checkpoint(state, ckpt, include_optimizer_state=True)
            print("saved", step, flush=True)
        if slow:
            time.sleep(0.05)
    CheckpointState.save_checkpoint(state, ckpt, include_optimizer_state=True)
    print("done", flush=True)
""")


def test_killed_run_resumes_to_the_same_weights(mlp_artifacts, tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER.format(tests=str(Path(__file__).parent)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(onyx.__file__).parent.parent), env.get("PYTHONPATH", "")])
    total = 40

    def run(ckpt, mode):
        return subprocess.run([sys.executable, script, mlp_artifacts, ckpt, str(total), mode], env=env,
                              capture_output=True, text=True, timeout=120, check=True)

    run(tmp_path / "straight", "fast")
    # Killed after its checkpoint at step 20, some steps past it.
    killed = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, script, mlp_artifacts, killed, str(total), "slow"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:
            if line.strip() == "saved 20":
                time.sleep(0.2)  # into the steps the checkpoint does not hold
                break
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    resumed_from = CheckpointState.load_checkpoint(killed)
    assert 20 <= resumed_from.properties["next_step"] < total
    assert resumed_from._optimizer["step"] == resumed_from.properties["next_step"]
    assert run(killed, "fast").stdout.strip().endswith("done")
    a, b = CheckpointState.load_checkpoint(tmp_path / "straight"), CheckpointState.load_checkpoint(killed)
    assert a._optimizer["step"] == b._optimizer["step"] == total
    assert a._optimizer["learning_rate"] == b._optimizer["learning_rate"]
    for p in PARAMS:
        np.testing.assert_array_equal(a.parameters[p].data, b.parameters[p].data)
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(a._optimizer["states"][p][key], b._optimizer["states"][p][key])
    initial = CheckpointState.load_checkpoint(mlp_artifacts / "checkpoint")
    assert not np.array_equal(a.parameters["w1"].data, initial.parameters["w1"].data)


# --- errors ---


def test_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file at '.*nowhere.onnx'"):
        artifacts.generate_artifacts(str(tmp_path / "nowhere.onnx"), loss=artifacts.LossType.MSELoss,
                                     artifact_directory=tmp_path)
    with pytest.raises(ValueError, match="requires_grad names 'x', which is not an initializer"):
        artifacts.generate_artifacts(elementwise_mlp(), requires_grad=["x"], loss=artifacts.LossType.MSELoss,
                                     artifact_directory=tmp_path)
    with pytest.raises(ValueError, match="frozen_params names 'nope'"):
        artifacts.generate_artifacts(elementwise_mlp(), frozen_params=["nope"], loss=artifacts.LossType.MSELoss,
                                     artifact_directory=tmp_path)
    with pytest.raises(ValueError, match="'axis1', a INT64 initializer; only float parameters"):
        artifacts.generate_artifacts(elementwise_mlp(), requires_grad=["w1", "axis1"],
                                     loss=artifacts.LossType.MSELoss, artifact_directory=tmp_path)
    # A loss on an integer output.
    model = elementwise_mlp()
    model.graph.node.append(helper.make_node("ArgMax", ["out"], ["cls"], axis=1))
    model.graph.output.insert(0, helper.make_tensor_value_info("cls", TensorProto.INT64, ["N", 1]))
    with pytest.raises(ValueError, match="MSELoss needs a float model output, but 'cls' is INT64"):
        artifacts.generate_artifacts(model, loss=artifacts.LossType.MSELoss, artifact_directory=tmp_path)
    with pytest.raises(ValueError, match="loss must be one of"):
        artifacts.generate_artifacts(elementwise_mlp(), loss="hinge", artifact_directory=tmp_path)
    assert not os.listdir(tmp_path)  # nothing written by a refused call
    artifacts.generate_artifacts(elementwise_mlp(), loss=artifacts.LossType.MSELoss, artifact_directory=tmp_path,
                                 optimizer=artifacts.OptimType.SGD)
    state = CheckpointState.load_checkpoint(tmp_path / "checkpoint")
    with pytest.raises(FileNotFoundError, match="no model file at"):
        Module(tmp_path / "training.onnx", state)
    module = Module(tmp_path / "training_model.onnx", state)
    with pytest.raises(RuntimeError, match="no eval model"):
        module.eval()
    with pytest.raises(ValueError, match=r"takes 2 inputs \(x, target\), got 1"):
        module(np.zeros((1, 8), np.float32))
    with pytest.raises(RuntimeError, match="no gradient for 'w1'"):
        Optimizer(tmp_path / "optimizer_model.onnx", module).step()
    with pytest.raises(ValueError, match="is an onyx.training optimizer model, not a training model"):
        Module(tmp_path / "optimizer_model.onnx", state)


# --- the digits models (need the Gemm, Conv, MaxPool and SoftmaxCrossEntropyLoss rules) ---


@pytest.mark.parametrize("kind,epochs", [("mlp", 12), ("cnn", 12)])
def test_digits_train_to_95_percent(kind, epochs, tmp_path):
    train_digits.make_artifacts(kind, str(tmp_path))
    data = train_digits.load_data(0)
    start = time.perf_counter()
    _, module, acc = train_digits.train(kind, str(tmp_path), epochs=epochs, data=data, verbose=False)
    elapsed = time.perf_counter() - start
    assert acc >= 0.95, f"{kind}: test accuracy {acc:.4f} after {epochs} epochs"
    assert elapsed < 30, f"{kind}: training took {elapsed:.1f} s"
    exported = train_digits.check_export(module, kind, str(tmp_path / "inference.onnx"), data[2], data[3])
    assert exported == pytest.approx(acc)


def test_batchnorm_trains_in_training_mode_and_exports_in_inference_mode(tmp_path):
    model = train_digits.build_cnn()
    channels = 16
    graph = model.graph
    graph.initializer.extend([
        numpy_helper.from_array(np.ones(channels, np.float32), "bn.scale"),
        numpy_helper.from_array(np.zeros(channels, np.float32), "bn.bias"),
        numpy_helper.from_array(np.zeros(channels, np.float32), "bn.mean"),
        numpy_helper.from_array(np.ones(channels, np.float32), "bn.var"),
    ])
    nodes = list(graph.node)
    nodes[0].output[0] = "conv_out"
    nodes.insert(1, helper.make_node("BatchNormalization", ["conv_out", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                                     ["c"]))
    del graph.node[:]
    graph.node.extend(nodes)
    artifacts.generate_artifacts(model, loss=artifacts.LossType.CrossEntropyLoss, optimizer=artifacts.OptimType.AdamW,
                                 artifact_directory=tmp_path, additional_output_names=["logits"])
    training = onnx.load(tmp_path / "training_model.onnx")
    assert [i.name for i in training.graph.input][-2:] == ["bn.mean", "bn.var"]
    assert [o.name for o in training.graph.output][-2:] == ["bn.mean_updated", "bn.var_updated"]
    assert "bn.mean_grad" not in [o.name for o in training.graph.output]
    state, module, optimizer = open_module(tmp_path)
    optimizer.set_learning_rate(0.01)
    x_train, y_train, x_test, y_test = train_digits.load_data(0)
    for step in range(0, 640, 64):
        module(train_digits.as_input("cnn", x_train[step:step + 64]), y_train[step:step + 64])
        optimizer.step()
        module.lazy_reset_grad()
    assert not np.allclose(state.parameters["bn.mean"].data, 0)  # running statistics were updated
    _, acc, pred = train_digits.evaluate(module, "cnn", x_test, y_test)
    module.export_model_for_inferencing(tmp_path / "inference.onnx", ["logits"])
    logits = ort.InferenceSession(str(tmp_path / "inference.onnx")).run(None, {"x": x_test.reshape(-1, 1, 8, 8)})[0]
    np.testing.assert_array_equal(np.argmax(logits, axis=1), pred)
