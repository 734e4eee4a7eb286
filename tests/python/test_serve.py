"""`onyx serve` as a Triton user meets it: tritonclient's HTTP client against a
repository of models, every output equal to a local session's; the
protocol's health, metadata, config, repository, statistics and metrics
endpoints; dynamic batching; a bounded queue; malformed and fuzzed requests
answered with 4xx and a message, never a crash; graceful shutdown."""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import pytest
from bindings_util import onyx_command
from helpers import MODELS_DIR, add_relu_model, make_model
from onnx import TensorProto, helper, numpy_helper

import onyx

httpclient = pytest.importorskip(
    "tritonclient.http", reason="tritonclient is not installed (scripts/setup.sh installs tritonclient[http])"
)

ROOT = Path(__file__).resolve().parents[2]
SHARED_MODELS = ["mnist", "squeezenet_tensor_input", "fns-candy", "bert_toy_optimized", "TFBertForQuestionAnswering"]
NP_TO_PROTOCOL = {
    np.dtype(np.float32): "FP32",
    np.dtype(np.float64): "FP64",
    np.dtype(np.int64): "INT64",
    np.dtype(np.int32): "INT32",
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.object_): "BYTES",
}


@pytest.fixture(scope="module")
def program() -> Path:
    path = onyx_command()
    probe = subprocess.run([str(path), "version", "--verbose"], capture_output=True, text=True, timeout=60)
    if "server: not built" in probe.stdout:
        pytest.fail("this onyx was built without `onyx serve`: apt-get install libcpp-httplib-dev nlohmann-json3-dev")
    return path


class Server:
    """`onyx serve REPOSITORY --port 0 ...` in a subprocess; stops it on exit."""

    def __init__(self, program: Path, repository: Path, *args: str):
        self.process = subprocess.Popen(
            [str(program), "serve", str(repository), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        match = re.search(r"listening on http://([^:]+):(\d+)", line)
        if not match:
            self.process.kill()
            raise AssertionError(f"onyx serve did not start: {line}{self.process.stderr.read()}")
        self.port = int(match.group(2))
        self.url = f"127.0.0.1:{self.port}"
        self.client = httpclient.InferenceServerClient(self.url, concurrency=16, network_timeout=120)

    def request(self, method: str, path: str, body: bytes | str | None = None, headers: dict | None = None):
        """(status, parsed JSON or raw bytes) of one plain HTTP request."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(data) if data else None
        except ValueError:
            return response.status, data

    def stop(self) -> tuple[int, str]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        return self.process.returncode, err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def mlp_model(hidden: int = 64, seed: int = 0) -> onnx.ModelProto:
    """Y = Relu(X W1 + b1) W2, X [batch, 16] float: batch-major."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.standard_normal((16, hidden)).astype(np.float32), "W1")
    b1 = numpy_helper.from_array(rng.standard_normal(hidden).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((hidden, 4)).astype(np.float32), "W2")
    nodes = [
        helper.make_node("MatMul", ["X", "W1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "W2"], ["Y"]),
    ]
    return make_model(
        nodes,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 4])],
        [w1, b1, w2],
    )


def strings_model() -> onnx.ModelProto:
    """S [n] string -> T = Identity(S), N = a bool of each string being 'a'."""
    nodes = [
        helper.make_node("Identity", ["S"], ["T"]),
        helper.make_node("Equal", ["S", "a"], ["N"]),
    ]
    return make_model(
        nodes,
        [helper.make_tensor_value_info("S", TensorProto.STRING, ["n"])],
        [
            helper.make_tensor_value_info("T", TensorProto.STRING, ["n"]),
            helper.make_tensor_value_info("N", TensorProto.BOOL, ["n"]),
        ],
        [helper.make_tensor("a", TensorProto.STRING, [], [b"a"])],
    )


def slow_model() -> onnx.ModelProto:
    """Y = X @ W repeated: about a tenth of a second a run on one thread."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((1024, 1024)) / 32).astype(np.float32), "W")
    nodes, last = [], "X"
    for i in range(24):
        nodes.append(helper.make_node("MatMul", [last, "W"], [f"m{i}"]))
        last = f"m{i}"
    nodes.append(helper.make_node("Identity", [last], ["Y"]))
    return make_model(
        nodes,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [256, 1024])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [256, 1024])],
        [w],
    )


def add_model(repository: Path, name: str, model, config: str | None = None, version: int = 1) -> Path:
    folder = repository / name / str(version)
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(model, (str, Path)):
        shutil.copy(model, folder / "model.onnx")
    else:
        onnx.save(model, str(folder / "model.onnx"))
    if config is not None:
        (repository / name / "config.pbtxt").write_text(config)
    return folder / "model.onnx"


def random_feeds(session: onyx.InferenceSession, rng: np.random.Generator) -> dict[str, np.ndarray]:
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else (2 if i == session.get_inputs()[0] else 2) for d in i.shape]
        shape = [d if isinstance(d, int) and d > 0 else 2 for d in i.shape]
        if i.type == "tensor(float)":
            feeds[i.name] = rng.random(shape, dtype=np.float32)
        elif i.type in ("tensor(int64)", "tensor(int32)"):
            feeds[i.name] = rng.integers(0, 2, shape).astype(np.int64 if "64" in i.type else np.int32)
        elif i.type == "tensor(string)":
            feeds[i.name] = np.array(["a", "bc", ""] * 2, dtype=object)[: int(np.prod(shape))].reshape(shape)
        else:
            raise AssertionError(f"no random feed for {i.type}")
    return feeds


def infer(client, model: str, feeds: dict[str, np.ndarray], binary: bool, outputs=None, version: str = "", id=""):
    inputs = []
    for name, value in feeds.items():
        item = httpclient.InferInput(name, list(value.shape), NP_TO_PROTOCOL[value.dtype])
        item.set_data_from_numpy(value, binary_data=binary)
        inputs.append(item)
    requested = [httpclient.InferRequestedOutput(o, binary_data=binary) for o in outputs] if outputs else None
    return client.infer(model, inputs, outputs=requested, model_version=version, request_id=id)


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("repository")
    add_model(repo, "tiny_cnn", ROOT / "models" / "tiny_cnn.onnx")
    add_model(repo, "add_relu", add_relu_model())
    add_model(repo, "strings", strings_model())
    add_model(repo, "mlp", mlp_model(), version=1)
    add_model(repo, "mlp", mlp_model(seed=7), version=2)
    (repo / "mlp" / "config.pbtxt").write_text(
        'name: "mlp"\nmax_batch_size: 8\nversion_policy: { all {} }\n'
        "dynamic_batching { max_queue_delay_microseconds: 20000 }\n"
        "input [{ name: \"X\", data_type: TYPE_FP32, dims: [16] }]\n"
        'parameters { key: "intra_op_thread_count" value { string_value: "1" } }\n'
    )
    for name in SHARED_MODELS:
        path = Path(MODELS_DIR) / f"{name}.onnx"
        if path.exists():
            add_model(repo, name, path)
    return repo


@pytest.fixture(scope="module")
def server(program, repository):
    with Server(program, repository, "--threads", "1") as s:
        yield s


def local_session(repository: Path, name: str, version: int = 1) -> onyx.InferenceSession:
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    return onyx.InferenceSession(str(repository / name / str(version) / "model.onnx"), options)


def test_health_and_server_metadata(server):
    assert server.client.is_server_live()
    assert server.client.is_server_ready()
    metadata = server.client.get_server_metadata()
    assert metadata["name"] == "onyx"
    assert metadata["version"] == onyx.__version__
    assert "binary_tensor_data" in metadata["extensions"]


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_every_model_round_trips_through_tritonclient(server, repository, binary):
    """Every model of the repository (the shared models where ../shared is
    present) answers as a local session does, bit for bit."""
    names = sorted(p.name for p in repository.iterdir())
    missing = [m for m in SHARED_MODELS if m not in names]
    if missing and Path(MODELS_DIR).exists():
        pytest.fail(f"shared models missing from {MODELS_DIR}: {missing}")
    rng = np.random.default_rng(0)
    for name in names:
        session = local_session(repository, name, version=2 if name == "mlp" else 1)
        feeds = random_feeds(session, rng)
        if not binary and sum(v.size for v in feeds.values()) > 200_000:
            continue  # a 720x720 image as JSON numbers is tens of MB; it goes binary
        metadata = server.client.get_model_metadata(name)
        served = [o["name"] for o in metadata["outputs"]]
        expected = dict(zip(served, session.run(served, feeds)))
        result = infer(server.client, name, feeds, binary, id=f"req-{name}")
        assert result.get_response()["id"] == f"req-{name}"
        for output in served:
            actual = result.as_numpy(output)
            if expected[output].dtype == object:
                actual = actual.astype(str).astype(object) if actual.dtype != object else actual
                actual = np.array([a.decode() if isinstance(a, bytes) else a for a in actual.ravel()], object)
                np.testing.assert_array_equal(actual.reshape(expected[output].shape), expected[output], err_msg=name)
            else:
                assert actual.dtype == expected[output].dtype, name
                np.testing.assert_array_equal(actual, expected[output], err_msg=f"{name}:{output}")


def test_model_metadata_config_and_versions(server, repository):
    metadata = server.client.get_model_metadata("mlp")
    assert metadata["versions"] == ["1", "2"]
    assert metadata["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 16]}]
    config = server.client.get_model_config("mlp")
    assert config["max_batch_size"] == 8
    assert config["input"][0]["dims"] == [16]
    assert config["dynamic_batching"]["max_queue_delay_microseconds"] == 20000
    # squeezenet's ZipMap output (a sequence of maps) is not a tensor: left out.
    if (repository / "squeezenet_tensor_input").exists():
        outputs = server.client.get_model_metadata("squeezenet_tensor_input")["outputs"]
        assert [o["name"] for o in outputs] == ["classLabel"]
    x = np.random.default_rng(3).random((3, 16), dtype=np.float32)
    for version in (1, 2):
        expected = local_session(repository, "mlp", version).run(None, {"X": x})[0]
        actual = infer(server.client, "mlp", {"X": x}, True, version=str(version)).as_numpy("Y")
        np.testing.assert_array_equal(actual, expected)
    assert server.client.is_model_ready("mlp", "2")
    assert not server.client.is_model_ready("mlp", "3")


def test_dynamic_batching_joins_concurrent_requests(server, repository):
    session = local_session(repository, "mlp", 2)
    rng = np.random.default_rng(5)
    rows = [rng.random((1 + i % 2, 16), dtype=np.float32) for i in range(24)]
    before = server.client.get_inference_statistics("mlp", "2")["model_stats"][0]

    # tritonclient's HTTP client sends concurrently through async_infer (its
    # connection pool), not from several threads.
    pending = []
    for x in rows:
        item = httpclient.InferInput("X", list(x.shape), "FP32")
        item.set_data_from_numpy(x, binary_data=True)
        pending.append(server.client.async_infer("mlp", [item]))
    results = [p.get_result().as_numpy("Y") for p in pending]
    # A row run inside a larger batch goes through a GEMM of another shape,
    # whose sums are ordered differently: equal to rounding, not bit for bit.
    for x, y in zip(rows, results):
        np.testing.assert_allclose(y, session.run(None, {"X": x})[0], rtol=1e-5, atol=1e-5)
    after = server.client.get_inference_statistics("mlp", "2")["model_stats"][0]
    requests = int(after["inference_stats"]["success"]["count"]) - int(before["inference_stats"]["success"]["count"])
    runs = int(after["execution_count"]) - int(before["execution_count"])
    assert requests == 24
    assert int(after["inference_count"]) - int(before["inference_count"]) == sum(len(x) for x in rows)
    assert runs < requests, f"24 concurrent requests took {runs} runs: nothing was batched"
    assert max(int(b["batch_size"]) for b in after["batch_stats"]) > 2


def test_strings_json_and_binary(server):
    s = np.array(["a", "héllo", "", "a"], dtype=object)
    for binary in (True, False):
        result = infer(server.client, "strings", {"S": s}, binary)
        t = [v.decode() if isinstance(v, bytes) else v for v in result.as_numpy("T")]
        assert t == list(s)
        np.testing.assert_array_equal(result.as_numpy("N"), np.array([True, False, False, True]))


def test_repository_unload_and_load(server):
    index = {m["name"]: m for m in server.client.get_model_repository_index()}
    assert index["add_relu"]["state"] == "READY"
    server.client.unload_model("add_relu")
    assert not server.client.is_model_ready("add_relu")
    status, body = server.request("POST", "/v2/models/add_relu/infer", "{}")
    assert status == 404 and "add_relu" in body["error"]
    index = {m["name"]: m for m in server.client.get_model_repository_index()}
    assert index["add_relu"]["state"] == "UNAVAILABLE"
    server.client.load_model("add_relu")
    assert server.client.is_model_ready("add_relu")
    x = np.array([[1.0, -2.0, 3.0]], np.float32)
    np.testing.assert_array_equal(infer(server.client, "add_relu", {"X": x}, True).as_numpy("Z"), x * 2)
    status, body = server.request("POST", "/v2/repository/models/nothing/load", "")
    assert status == 404 and "nothing" in body["error"]
    status, body = server.request("POST", "/v2/repository/models/..%2F..%2Fetc/load", "")
    assert status == 404


VALID = {"inputs": [{"name": "X", "shape": [1, 3], "datatype": "FP32", "data": [1.0, 2.0, 3.0]}]}


@pytest.mark.parametrize(
    "body,headers,status,message",
    [
        ("{not json", {}, 400, "not valid JSON"),
        ("[]", {}, 400, "JSON object"),
        ('{"inputs": 3}', {}, 400, "inputs"),
        ('{"inputs": [{"name": "nope", "shape": [1], "datatype": "FP32", "data": [1]}]}', {}, 400, "no input 'nope'"),
        ('{"inputs": [{"name": "X", "shape": [1, 3], "datatype": "INT64", "data": [1, 2, 3]}]}', {}, 400, "FP32"),
        ('{"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}', {}, 400, "[-1,3]"),
        ('{"inputs": [{"name": "X", "shape": [1, 3], "datatype": "FP32", "data": [1, 2]}]}', {}, 400, "2 elements"),
        ('{"inputs": [{"name": "X", "shape": [1, 3], "datatype": "FP32", "data": [1, "a", 3]}]}', {}, 400, "element 1"),
        ('{"inputs": [{"name": "X", "shape": [-1, 3], "datatype": "FP32", "data": []}]}', {}, 400, "shape"),
        ('{"inputs": [{"name": "X", "shape": [99999999999, 99999999999], "datatype": "FP32", "data": []}]}', {}, 400, "too many"),
        ('{"inputs": []}', {}, 400, "lacks input 'X'"),
        ('{"inputs": [{"name": "X", "shape": [9, 3], "datatype": "FP32", "data": [' + ",".join(["1"] * 27) + "]}]}",
         {}, 400, "batch size is 9"),
        ('{"inputs": [{"name": "X", "shape": [1, 3], "datatype": "FP32", "parameters": {"binary_data_size": 12}}]}',
         {}, 400, "binary_data_size"),
        (json.dumps(VALID), {"Inference-Header-Content-Length": "999999"}, 400, "Inference-Header-Content-Length"),
        (json.dumps(VALID), {"Inference-Header-Content-Length": "x"}, 400, "byte count"),
        (json.dumps({**VALID, "outputs": [{"name": "nope"}]}), {}, 400, "no output 'nope'"),
        ("[" * 100000, {}, 400, "not valid JSON"),
        # Nested deeper than any recursion could follow: described, never printed.
        ('{"inputs": [{"name": "X", "datatype": "FP32", "shape": ' + "[" * 100000 + "]" * 100000 + "}]}", {}, 400,
         "an array of 1 items"),
        ('{"inputs": [' + "[" * 100000 + "]" * 100000 + "]}", {}, 400, "an array of 1 items"),
        ('{"inputs": [{"name": "X", "shape": [1, 3], "datatype": "FP32", "data": ' + "[" * 100000 + "]" * 100000 + "}]}",
         {}, 400, "nested deeper"),
    ],
)
def test_malformed_requests_get_4xx_with_a_message(server, body, headers, status, message):
    got, reply = server.request("POST", "/v2/models/add_relu/infer", body, headers)
    assert got == status, reply
    assert message in reply["error"], reply["error"]
    assert server.process.poll() is None


def test_unknown_model_route_and_version(server):
    assert server.request("POST", "/v2/models/none/infer", json.dumps(VALID))[0] == 404
    assert server.request("GET", "/v2/models/mlp/versions/7")[0] == 404
    assert server.request("GET", "/v2/models/mlp/versions/x")[0] == 400
    status, body = server.request("GET", "/nowhere")
    assert status == 404 and "/nowhere" in body["error"]
    # Routes are regular expressions: a path at httplib's 8 KB limit is
    # matched without trouble, and a longer one refused (414).
    assert server.request("GET", "/v2/models/" + "a" * 8100 + "/ready")[0] == 404
    assert server.request("POST", "/v2/models/" + "a" * 100000 + "/infer", "{}")[0] == 414
    assert server.client.is_server_live()


def test_metrics(server):
    x = np.ones((2, 3), np.float32)
    infer(server.client, "add_relu", {"X": x}, True)
    server.request("POST", "/v2/models/add_relu/infer", "{")
    status, text = server.request("GET", "/metrics")
    assert status == 200
    text = text.decode() if isinstance(text, bytes) else text
    success = re.search(r'onyx_inference_request_success_total\{model="add_relu",version="1"\} (\d+)', text)
    failure = re.search(r'onyx_inference_request_failure_total\{model="add_relu",version="1"\} (\d+)', text)
    assert success and int(success.group(1)) >= 1
    assert failure and int(failure.group(1)) >= 1
    assert re.search(r'onyx_inference_request_duration_seconds_bucket\{model="add_relu",version="1",le="\+Inf"\} \d+', text)
    assert re.search(r'onyx_inference_batch_size_count\{model="mlp",version="2"\} \d+', text)
    assert 'onyx_http_requests_total{code="400"}' in text


def test_fuzzed_requests_never_crash(server):
    """1,000 requests, valid ones mutated at random (bytes flipped, cut,
    spliced, headers lied about, paths garbled): every one gets an answer
    with a status below 500 or a JSON error, and the server lives."""
    rng = random.Random(1234)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    binary_header = json.dumps(
        {"inputs": [{"name": "X", "shape": [2, 3], "datatype": "FP32", "parameters": {"binary_data_size": 24}}],
         "outputs": [{"name": "Y", "parameters": {"binary_data": True}}]}
    ).encode()
    seeds = [
        (json.dumps(VALID).encode(), {}),
        (binary_header + x.tobytes(), {"Inference-Header-Content-Length": str(len(binary_header))}),
        (json.dumps({"inputs": [{"name": "S", "shape": [2], "datatype": "BYTES", "data": ["a", "b"]}]}).encode(), {}),
    ]
    paths = ["/v2/models/add_relu/infer", "/v2/models/strings/infer", "/v2/models/mlp/versions/1/infer"]
    statuses = {}
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    for i in range(1000):
        body, headers = seeds[i % len(seeds)]
        body = bytearray(body)
        headers = dict(headers)
        for _ in range(rng.randint(1, 6)):
            kind = rng.randrange(6)
            if kind == 0 and body:
                body[rng.randrange(len(body))] = rng.randrange(256)
            elif kind == 1 and body:
                del body[rng.randrange(len(body)) :]
            elif kind == 2:
                at = rng.randrange(len(body) + 1)
                body[at:at] = rng.choice([b"[", b"{", b'"', b"-1", b"1e999", b"null", b"\x00", b"\xff\xfe", b",", b"99999999999999999999"])
            elif kind == 3:
                headers["Inference-Header-Content-Length"] = str(rng.choice([0, 1, len(body), len(body) + 5, -3]))
            elif kind == 4 and body:
                at = rng.randrange(len(body))
                body[at:at] = body[: rng.randrange(len(body))]
        path = rng.choice(paths) if rng.random() < 0.95 else "/v2/models/" + "%" * rng.randint(1, 3) + "/infer"
        try:
            connection.request("POST", path, body=bytes(body), headers=headers)
            response = connection.getresponse()
            data = response.read()
        except (http.client.HTTPException, ConnectionError):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            statuses["closed"] = statuses.get("closed", 0) + 1
            continue
        statuses[response.status] = statuses.get(response.status, 0) + 1
        assert response.status < 500, (response.status, data[:300])
        if response.status >= 400:
            assert "error" in json.loads(data), data[:300]
    connection.close()
    assert server.process.poll() is None, "the server died"
    assert server.client.is_server_live()
    assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0, statuses


def test_request_size_limit(program, tmp_path):
    add_model(tmp_path, "add_relu", add_relu_model())
    with Server(program, tmp_path, "--max-request-mb", "1") as s:
        big = np.ones((100_000, 3), np.float32)  # 1.2 MB
        status, body = s.request(
            "POST",
            "/v2/models/add_relu/infer",
            json.dumps({"inputs": [{"name": "X", "shape": [100000, 3], "datatype": "FP32",
                                    "parameters": {"binary_data_size": big.nbytes}}]}).encode() + big.tobytes(),
        )
        assert status == 413 and "--max-request-mb" in body["error"]
        assert s.client.is_server_live()


def test_queue_bound_gives_503_and_shutdown_finishes_requests_in_flight(program, tmp_path):
    add_model(tmp_path, "slow", slow_model())
    with Server(program, tmp_path, "--threads", "1", "--max-queue-size", "1") as s:
        x = np.ones((256, 1024), np.float32)
        header = json.dumps(
            {"inputs": [{"name": "X", "shape": [256, 1024], "datatype": "FP32", "parameters": {"binary_data_size": x.nbytes}}],
             "parameters": {"binary_data_output": True}}
        ).encode()

        def one(_):
            return s.request("POST", "/v2/models/slow/infer", header + x.tobytes(),
                             {"Inference-Header-Content-Length": str(len(header))})

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(one, range(8)))
        codes = sorted(status for status, _ in results)
        assert 200 in codes and 503 in codes, codes
        assert set(codes) <= {200, 503}
        assert all("queue" in body["error"] for status, body in results if status == 503)

        # SIGTERM while a request runs: it is answered, then the server exits 0.
        replies = []
        worker = threading.Thread(target=lambda: replies.append(one(0)))
        worker.start()
        deadline = time.time() + 30
        while time.time() < deadline:
            _, stats = s.request("GET", "/v2/models/slow/stats")
            # Queue time is recorded when a run starts: one more run than the
            # 200s above means this request is running now.
            if stats["model_stats"][0]["inference_stats"]["queue"]["count"] > codes.count(200):
                break
            time.sleep(0.005)
        code, err = s.stop()
        worker.join(60)
        assert replies and replies[0][0] == 200, replies
        assert code == 0, err
        assert "SIGTERM" in err and "stopped" in err


def test_bad_config_is_reported_not_fatal(program, tmp_path):
    add_model(tmp_path, "good", add_relu_model())
    add_model(tmp_path, "bad", add_relu_model(), "max_batch_size: 4\nsequence_batching { }\n")
    add_model(tmp_path, "broken", add_relu_model())
    (tmp_path / "broken" / "1" / "model.onnx").write_bytes(b"not a model")
    bad_configs = {
        "syntax": ('max_batch_size: 4\ninstance_group [{ count: 2 }\n', "config.pbtxt:"),
        "preferred": ("max_batch_size: 4\ndynamic_batching { preferred_batch_size: [8] }\n", "preferred_batch_size 8"),
        "parameter": ('parameters { key: "colour" value { string_value: "red" } }\n', "unknown key 'colour'"),
        "wrong_type": ('input [{ name: "X", data_type: TYPE_INT64 }]\n', "model's is FP32"),
        "wrong_input": ('input [{ name: "Q" }]\n', "input 'Q', which the model lacks"),
        "not_batchable": ("max_batch_size: 2\n", "set max_batch_size: 0"),
        "no_version": (None, "no version folder"),
    }
    for name, (config, _) in bad_configs.items():
        model = mlp_model() if name == "not_batchable" else add_relu_model()
        if name == "not_batchable":
            model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 3
        if name == "no_version":
            (tmp_path / name).mkdir()
        else:
            add_model(tmp_path, name, model, config)
    (tmp_path / ".hidden" / "1").mkdir(parents=True)
    with Server(program, tmp_path) as s:
        assert s.client.is_model_ready("good")
        assert not s.client.is_server_ready()
        index = {m["name"]: m for m in s.client.get_model_repository_index()}
        assert index["bad"]["state"] == "UNAVAILABLE" and "sequence_batching" in index["bad"]["reason"]
        assert index["broken"]["state"] == "UNAVAILABLE" and "does not load" in index["broken"]["reason"]
        assert ".hidden" not in index
        for name, (_, reason) in bad_configs.items():
            assert index[name]["state"] == "UNAVAILABLE", name
            assert reason in index[name]["reason"], (name, index[name]["reason"])
        status, body = s.request("POST", "/v2/models/bad/infer", json.dumps(VALID))
        assert status == 503 and "sequence_batching" in body["error"]


def test_explicit_model_control_and_instances(program, tmp_path):
    add_model(tmp_path, "a", add_relu_model(), 'instance_group [{ count: 2, kind: KIND_CPU }]\n'
              'parameters { key: "execution_providers" value { string_value: "CPUExecutionProvider" } }\n')
    add_model(tmp_path, "b", add_relu_model())
    with Server(program, tmp_path, "--model-control-mode", "explicit", "--load-model", "a") as s:
        assert s.client.is_model_ready("a")
        assert not s.client.is_model_ready("b")
        config = s.client.get_model_config("a")
        assert config["instance_group"][0]["count"] == 2
        assert config["parameters"]["execution_providers"]["string_value"] == "CPUExecutionProvider"
        s.client.load_model("b")
        assert s.client.is_model_ready("b")
