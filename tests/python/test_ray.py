"""onyx.ray on a local Ray cluster of two worker nodes: Ray Data batch
inference through a pool of two actors, and a Ray Serve deployment that
batches concurrent requests, both checked against one local session.

The cluster is ``ray.cluster_utils.Cluster`` in this process: a head node with
no CPUs (so no work lands on it) and two worker nodes of one CPU each, so each
actor of a pool of two is a process of its own on a node of its own. The
nodes inherit ``PYTHONPATH`` with onyx's folder put first, so that their
workers import the onyx these tests import (a build tree's, for instance).
"""

import os
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ray[data,serve]')")
pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'ray[data]')")
pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install 'ray[serve]')")

import onyx  # noqa: E402
import onyx.ray  # noqa: E402
from helpers import make_model  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from ray import serve  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_CNN = os.path.join(ROOT, "models", "tiny_cnn.onnx")
FEATURES, HIDDEN = 16, 8
# Rows are computed in batches of other sizes than the local reference run's,
# which may change the order of a dot product's sums.
RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def cluster():
    started = time.perf_counter()
    onyx_folder = os.path.dirname(os.path.dirname(os.path.abspath(onyx.__file__)))
    saved_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([onyx_folder] + ([saved_path] if saved_path else []))
    try:
        local = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(2):
            local.add_node(num_cpus=1)
    finally:  # the nodes' processes have their copy
        if saved_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved_path
    try:
        local.wait_for_nodes()
        ray.init(address=local.address)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        # Ray Data gives each actor of the pool its first batches together and
        # then, for work this light, may feed one actor alone: wait until the
        # whole pool is up, so that no actor misses that first round.
        context.wait_for_min_actors_s = 120
        print(f"cluster up in {time.perf_counter() - started:.1f} s")  # shown with pytest -s
        yield local
    finally:
        ray.shutdown()
        local.shutdown()


@pytest.fixture(scope="module")
def mlp_path(tmp_path_factory):
    """y = Relu(x @ W + B): x is [batch, 16] with a symbolic batch."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32), "W")
    bias = numpy_helper.from_array(rng.standard_normal(HIDDEN).astype(np.float32), "B")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "B"], ["z"]),
        helper.make_node("Relu", ["z"], ["y"]),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", HIDDEN])],
        [weights, bias],
    )
    path = tmp_path_factory.mktemp("ray") / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def _traced_predictor():
    """An OnyxPredictor that adds to each result row the process, node and
    session that computed it, how many predictors that process created and
    the session's thread count.
    Made in a function so that cloudpickle sends the class by value (the
    workers cannot import this test module)."""

    class TracedPredictor(onyx.ray.OnyxPredictor):
        created = 0

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            type(self).created += 1

        def __call__(self, batch):
            result = super().__call__(batch)
            rows = len(next(iter(result.values())))
            result["pid"] = np.full(rows, os.getpid())
            result["node"] = np.full(rows, ray.get_runtime_context().get_node_id())
            result["session"] = np.full(rows, id(self.session))
            result["created"] = np.full(rows, type(self).created)
            result["threads"] = np.full(rows, self.session.get_session_options().intra_op_num_threads)
            return result

    return TracedPredictor


def _collect(dataset) -> dict:
    batches = list(dataset.iter_batches(batch_size=None, batch_format="numpy"))
    return {column: np.concatenate([batch[column] for batch in batches]) for column in batches[0]}


def _check_batch_inference(model_path, rows, input_name, column, output_name):
    expected = onyx.InferenceSession(model_path).run([output_name], {input_name: rows})[0]
    dataset = ray.data.from_items([{"id": i, column: row} for i, row in enumerate(rows)], override_num_blocks=20)
    scored = onyx.ray.map_batches(
        dataset,
        model_path,
        batch_size=len(rows) // 20,
        concurrency=2,
        input_map={input_name: column} if column != input_name else None,
        passthrough_columns=["id"],
        predictor=_traced_predictor(),
    )
    result = _collect(scored)

    order = np.argsort(result["id"], kind="stable")
    np.testing.assert_array_equal(result["id"][order], np.arange(len(rows)))  # every row exactly once
    np.testing.assert_allclose(result[output_name][order], expected, rtol=RTOL, atol=ATOL)

    pids = set(result["pid"].tolist())
    assert len(pids) == 2, f"expected two actor processes to do the work, got pids {pids}"
    assert len(set(result["node"].tolist())) == 2, "the two actors should run on the two worker nodes"
    for pid in pids:
        mine = result["pid"] == pid
        assert set(result["created"][mine].tolist()) == {1}, f"actor {pid} created its predictor more than once"
        assert len(set(result["session"][mine].tolist())) == 1, f"actor {pid} used more than one session"
    # Each actor reserved one CPU, and its session should use one thread, not one per core of the node.
    assert set(result["threads"].tolist()) == {1}
    print(f"rows per actor: {[int((result['pid'] == pid).sum()) for pid in sorted(pids)]}")


def test_data_batch_inference_matches_local_session(cluster, mlp_path):
    rows = np.random.default_rng(1).standard_normal((10_000, FEATURES)).astype(np.float32)
    _check_batch_inference(mlp_path, rows, "x", "features", "y")


def test_data_batch_inference_tiny_cnn(cluster):
    session = onyx.InferenceSession(TINY_CNN)
    (image,) = session.get_inputs()
    (probabilities,) = session.get_outputs()
    assert isinstance(image.shape[0], str), "tiny_cnn.onnx should have a symbolic batch dim"
    rows = np.random.default_rng(2).standard_normal((2_000, *image.shape[1:])).astype(np.float32)
    _check_batch_inference(TINY_CNN, rows, image.name, image.name, probabilities.name)


def test_data_missing_column_names_the_input(cluster, mlp_path):
    dataset = ray.data.from_items([{"id": i, "feature": np.zeros(FEATURES, np.float32)} for i in range(8)])
    scored = onyx.ray.map_batches(dataset, mlp_path, batch_size=8, concurrency=1)
    # Ray Data raises the actor's ValueError wrapped in a RayError that keeps its message.
    with pytest.raises(ray.exceptions.RayError) as error:
        scored.materialize()
    assert "ValueError" in str(error.value)
    assert "no column for input 'x'" in str(error.value)
    assert "'feature'" in str(error.value), "the message should list the columns the batch has"


def test_predictor_errors_without_ray(mlp_path):
    predictor = onyx.ray.OnyxPredictor(mlp_path, input_map={"x": "features"})
    with pytest.raises(ValueError, match=r"no column for input 'x' \(mapped to column 'features'\)"):
        predictor({"x": np.zeros((2, FEATURES), np.float32)})
    with pytest.raises(ValueError, match=r"input_map names \['X'\].*its inputs are \['x'\]"):
        onyx.ray.OnyxPredictor(mlp_path, input_map={"X": "features"})
    with pytest.raises(ValueError, match="passthrough columns \\['y'\\] have the names of model outputs"):
        onyx.ray.OnyxPredictor(mlp_path, passthrough_columns=["y"])


def test_serve_batches_concurrent_requests(cluster, mlp_path):
    session = onyx.InferenceSession(mlp_path)
    rng = np.random.default_rng(3)
    requests = [{"x": rng.standard_normal((1 + i % 4, FEATURES)).astype(np.float32)} for i in range(15)]
    serve.start(proxy_location="Disabled")  # requests come through handles only
    try:
        app = onyx.ray.deployment(mlp_path, max_batch_size=8, batch_wait_timeout_s=0.2)
        handle = serve.run(app, name="onyx_mlp", route_prefix=None)
        misnamed = handle.remote({"features": requests[0]["x"]})  # refused before batching
        responses = [handle.remote(request) for request in requests[:4]]
        # Batched with the others, but run in a group of its own, which fails alone.
        wrong_type = handle.remote({"x": requests[0]["x"].astype(np.float64)})
        responses += [handle.remote(request) for request in requests[4:]]
        results = [response.result(timeout_s=120) for response in responses]
        with pytest.raises(ValueError, match="no column for input 'x'"):
            misnamed.result(timeout_s=120)
        with pytest.raises(onyx.InvalidArgument, match=r"expected tensor\(float\)"):
            wrong_type.result(timeout_s=120)
        batch_sizes = handle.batch_sizes.remote().result(timeout_s=120)
    finally:
        serve.shutdown()

    for request, result in zip(requests, results):
        assert list(result) == ["y"]
        np.testing.assert_allclose(result["y"], session.run(None, request)[0], rtol=RTOL, atol=ATOL)
    print(f"batch sizes: {batch_sizes}")
    assert sum(batch_sizes) == len(requests) + 1, "each well-formed request should be in exactly one batch"
    assert 1 < max(batch_sizes) <= 8, f"concurrent requests should have been batched: {batch_sizes}"
