"""One session run from several Python threads at once gives the same results
as runs one after another (run releases the GIL)."""

import os
import threading

import numpy as np

import onyx
from helpers import MODELS_DIR, add_relu_model


def _check_threads(session, feeds_list):
    expected = [session.run(None, feeds) for feeds in feeds_list]
    results = [None] * 4
    errors = []
    barrier = threading.Barrier(4)

    def worker(index):
        try:
            barrier.wait()
            outputs = []
            for _ in range(5):
                outputs.append(session.run(None, feeds_list[index % len(feeds_list)]))
            results[index] = outputs
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for index, outputs in enumerate(results):
        want = expected[index % len(feeds_list)]
        for got in outputs:
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)


def test_threads_small_model():
    session = onyx.InferenceSession(add_relu_model().SerializeToString())
    rng = np.random.default_rng(5)
    feeds = [{"X": rng.standard_normal((n, 3)).astype(np.float32)} for n in (1, 4, 17, 64)]
    _check_threads(session, feeds)


def test_threads_mnist():
    path = os.path.join(MODELS_DIR, "mnist.onnx")
    if not os.path.exists(path):
        import pytest

        pytest.skip(f"{path} not found")
    session = onyx.InferenceSession(path)
    rng = np.random.default_rng(6)
    feeds = [{"Input3": rng.random((1, 1, 28, 28), dtype=np.float32)} for _ in range(2)]
    _check_threads(session, feeds)
