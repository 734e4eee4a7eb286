"""onyx's com.microsoft.nchwc kernels on models that onnxruntime's NCHWc
transformer wrote: small CNNs built here are optimized by onnxruntime
(ORT_ENABLE_ALL, saved), then the saved model runs in onyx with its own
optimizer off and is compared with onnxruntime running the same file."""
import collections
import os
import platform

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

ort = pytest.importorskip("onnxruntime")

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "..", "bench", "zoo", "models")
DOMAIN = "com.microsoft.nchwc"


def cpu_has_avx2():
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx2" in flags and " fma" in flags


pytestmark = pytest.mark.skipif(not cpu_has_avx2(), reason="the NCHWc layout needs AVX2 with FMA or AVX-512F")


def ort_optimized(model_bytes, tmp_path, name):
    """Saves onnxruntime's ORT_ENABLE_ALL optimization of the model; returns the path."""
    path = str(tmp_path / f"{name}_ort_all.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = path
    ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return path


def nchwc_ops(path):
    import onnx

    model = onnx.load(path, load_external_data=False)
    return collections.Counter(n.op_type for n in model.graph.node if n.domain == DOMAIN)


def run_both(path, feeds, threads):
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = threads
    got = onyx.InferenceSession(path, so).run(None, feeds)
    ro = ort.SessionOptions()
    ro.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ro.intra_op_num_threads = threads
    want = ort.InferenceSession(path, ro, providers=["CPUExecutionProvider"]).run(None, feeds)
    return got, want


def check(model, feeds, tmp_path, name, expect_ops=()):
    path = ort_optimized(model.SerializeToString(), tmp_path, name)
    ops = nchwc_ops(path)
    if not ops:
        pytest.skip(f"onnxruntime wrote no {DOMAIN} nodes for {name} (its NCHWc transformer is off on this CPU)")
    for op in expect_ops:
        assert ops[op] > 0, f"expected a {DOMAIN} {op} in onnxruntime's optimized {name}, got {dict(ops)}"
    for threads in (1, 2):
        got, want = run_both(path, feeds, threads)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{name}, {threads} threads")
    return ops


class Builder:
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, shape, scale):
        n = self.name("w")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), n))
        return n

    def conv(self, x, cin, cout, k, stride=1, pad=None, group=1, relu=True):
        pad = k // 2 if pad is None else pad
        y = self.name("c")
        scale = 1.0 / np.sqrt(cin // group * k * k)
        self.nodes.append(helper.make_node(
            "Conv", [x, self.weight([cout, cin // group, k, k], scale), self.weight([cout], 0.1)], [y],
            kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group))
        if not relu:
            return y
        r = self.name("r")
        self.nodes.append(helper.make_node("Relu", [y], [r]))
        return r

    def op(self, op_type, inputs, **attrs):
        y = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [y], **attrs))
        return y

    def model(self, x_shape, outputs):
        graph = helper.make_graph(
            self.nodes, "nchwc_test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds_for(shape, seed=1):
    return {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


def test_conv_relu_chain(tmp_path):
    b = Builder(1)
    y = b.conv("x", 32, 64, 3)
    y = b.conv(y, 64, 64, 1)
    y = b.conv(y, 64, 48, 3, relu=False)
    shape = [1, 32, 15, 17]
    check(b.model(shape, [y]), feeds_for(shape), tmp_path, "conv_relu", ["Conv"])


def test_residual_add_relu_and_stride2(tmp_path):
    b = Builder(2)
    x = b.conv("x", 64, 64, 1)
    y = b.conv(x, 64, 64, 3)
    y = b.conv(y, 64, 64, 1, relu=False)
    s = b.op("Add", [y, x])
    r = b.op("Relu", [s])
    d = b.conv(r, 64, 128, 3, stride=2)
    d1 = b.conv(r, 64, 128, 1, stride=2, pad=0, relu=False)
    d2 = b.conv(d, 128, 128, 3, relu=False)
    out = b.op("Relu", [b.op("Add", [d2, d1])])
    shape = [2, 64, 14, 13]
    check(b.model(shape, [out]), feeds_for(shape, 2), tmp_path, "residual", ["Conv"])


def test_three_channel_stem_maxpool_global_average(tmp_path):
    b = Builder(3)
    y = b.conv("x", 3, 32, 7, stride=2)
    p = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.conv(p, 32, 64, 3)
    g = b.op("GlobalAveragePool", [y])
    shape = [1, 3, 45, 39]
    ops = check(b.model(shape, [g]), feeds_for(shape, 3), tmp_path, "stem",
                ["Conv", "MaxPool", "GlobalAveragePool"])
    assert ops["ReorderInput"] == 0, "the 3-channel conv should read the NCHW input directly"


def test_depthwise_and_pools(tmp_path):
    b = Builder(4)
    y = b.conv("x", 32, 64, 1)
    y = b.conv(y, 64, 64, 3, group=64)
    y = b.conv(y, 64, 64, 3, stride=2, group=64)
    a = b.op("AveragePool", [y], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)
    m = b.op("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    y = b.conv(m, 64, 32, 1, relu=False)
    g = b.op("GlobalMaxPool", [y])
    shape = [1, 32, 19, 21]
    check(b.model(shape, [y, g]), feeds_for(shape, 4), tmp_path, "depthwise", ["Conv"])


@pytest.mark.skipif(not os.path.exists(os.path.join(ZOO, "resnet50.onnx")),
                    reason="bench/zoo/models/resnet50.onnx is missing (python3 bench/zoo/make_zoo.py writes it)")
def test_zoo_resnet50(tmp_path):
    with open(os.path.join(ZOO, "resnet50.onnx"), "rb") as f:
        model_bytes = f.read()
    path = ort_optimized(model_bytes, tmp_path, "resnet50")
    ops = nchwc_ops(path)
    if not ops:
        pytest.skip("onnxruntime wrote no com.microsoft.nchwc nodes for ResNet-50")
    assert ops["Conv"] >= 50
    feeds = dict(np.load(os.path.join(ZOO, "resnet50.inputs.npz")))
    for threads in (1, 2):
        got, want = run_both(path, feeds, threads)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5 * np.abs(want[0]).max(),
                                   err_msg=f"resnet50, {threads} threads")
