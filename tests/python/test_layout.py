"""The convolution fusions and the layout level (NCHWc) on small CNNs: the
optimized model computes what the original does, in onyx and, saved, in
onnxruntime (which runs com.microsoft.nchwc ops too)."""
import collections
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

ort = pytest.importorskip("onnxruntime")

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO_RESNET50 = os.path.join(HERE, "..", "..", "bench", "zoo", "models", "resnet50.onnx")


def small_cnn(channels=32):
    """A ResNet-like block chain: a 3-channel stem (NCHW-input conv), max pool,
    a bottleneck with a residual Add + Relu, a depthwise conv, a strided 1x1
    conv, a Concat along channels, global pooling and a classifier."""
    rng = np.random.default_rng(7)
    c = channels
    inits = []

    def weight(name, shape, scale=0.2):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    nodes = [
        helper.make_node("Conv", ["x", weight("w0", [c, 3, 3, 3]), weight("b0", [c])], ["c0"],
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Conv", ["p0", weight("w1", [c, c, 1, 1]), weight("b1", [c])], ["c1"]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", weight("w2", [c, c, 3, 3], 0.05), weight("b2", [c])], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p0"], ["s2"]),
        helper.make_node("Relu", ["s2"], ["r2"]),
        helper.make_node("Conv", ["r2", weight("w3", [c, 1, 3, 3]), weight("b3", [c])], ["c3"],
                         pads=[1, 1, 1, 1], group=c),
        helper.make_node("Clip", ["c3", "lo", "hi"], ["r3"]),
        helper.make_node("Conv", ["r3", weight("w4", [2 * c, c, 1, 1]), weight("b4", [2 * c])], ["c4"], strides=[2, 2]),
        helper.make_node("AveragePool", ["r2"], ["a2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Concat", ["c4", "a2"], ["cat"], axis=1),
        helper.make_node("Sigmoid", ["cat"], ["sg"]),
        helper.make_node("GlobalAveragePool", ["sg"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", weight("wf", [10, 3 * c]), weight("bf", [10])], ["y"], transB=1),
    ]
    inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "lo"))
    inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "hi"))
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 33, 29])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10]),
                               helper.make_tensor_value_info("r2", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def cpu_has_blocked_layout():
    """The layout level blocks channels on x86-64 CPUs with AVX-512F or AVX2+FMA."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512f" in flags or ("avx2" in flags and "fma" in flags)


def ort_disabled():
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def save_optimized(model_path, saved, level):
    options = onyx.SessionOptions()
    options.graph_optimization_level = level
    options.optimized_model_filepath = saved
    # The CPU's own passes (layout, fusions) are what these tests check.
    return onyx.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])


def domains(path):
    return collections.Counter((n.domain, n.op_type) for n in onnx.load(path).graph.node)


@pytest.mark.parametrize("level", ["ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"])
def test_small_cnn_optimized_matches_in_both_runtimes(tmp_path, level):
    path = str(tmp_path / "cnn.onnx")
    onnx.save(small_cnn(), path)
    x = np.random.default_rng(1).standard_normal((2, 3, 33, 29)).astype(np.float32)
    expected = ort.InferenceSession(path, ort_disabled()).run(None, {"x": x})

    saved = str(tmp_path / "optimized.onnx")
    optimized = save_optimized(path, saved, getattr(onyx.GraphOptimizationLevel, level))
    ops = domains(saved)
    # The residual Add and its Relu went into the convolution.
    assert ops[("", "Add")] == 0
    if level == "ORT_ENABLE_ALL" and cpu_has_blocked_layout():
        # Every conv, both pools and the element-wise ops between them run blocked.
        assert ops[("com.microsoft.nchwc", "Conv")] == 5
        assert ops[("com.microsoft.nchwc", "MaxPool")] == 1
        assert ops[("com.microsoft.nchwc", "AveragePool")] == 1
        assert ops[("com.microsoft.nchwc", "GlobalAveragePool")] == 1
        # r2 is a graph output, and global pooling's result feeds Flatten.
        assert ops[("com.microsoft.nchwc", "ReorderOutput")] == 2
        assert ops[("com.microsoft.nchwc", "ReorderInput")] == 0

    for got in (optimized.run(None, {"x": x}),
                ort.InferenceSession(saved, ort_disabled()).run(None, {"x": x}),
                onyx.InferenceSession(saved).run(None, {"x": x})):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not cpu_has_blocked_layout(), reason="the layout level blocks channels on AVX2 or AVX-512 only")
def test_saved_model_records_its_nchwc_block(tmp_path):
    """Blocked convolutions' weights are laid out for this CPU's block size
    (16 on AVX-512, 8 on AVX2): a saved model says which, and a CPU with the
    other block refuses it instead of misreading the weights."""
    path = str(tmp_path / "cnn.onnx")
    onnx.save(small_cnn(), path)
    saved = str(tmp_path / "optimized.onnx")
    save_optimized(path, saved, onyx.GraphOptimizationLevel.ORT_ENABLE_ALL)
    model = onnx.load(saved)
    recorded = {p.key: p.value for p in model.metadata_props}.get("onyx.nchwc_block")
    assert recorded in ("8", "16")
    x = np.random.default_rng(1).standard_normal((2, 3, 33, 29)).astype(np.float32)
    onyx.InferenceSession(saved).run(None, {"x": x})  # the same CPU runs it

    other_block = "8" if recorded == "16" else "16"
    for prop in model.metadata_props:
        if prop.key == "onyx.nchwc_block":
            prop.value = other_block
    other = str(tmp_path / "other_block.onnx")
    onnx.save(model, other)
    with pytest.raises(Exception, match=rf"laid out for NCHWc blocks of {other_block} channels.*runs blocks of {recorded}"):
        onyx.InferenceSession(other)

    # A model saved without blocked nodes records nothing.
    plain = str(tmp_path / "extended.onnx")
    save_optimized(path, plain, onyx.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    assert "onyx.nchwc_block" not in {p.key for p in onnx.load(plain).metadata_props}


def test_layout_pads_channels_that_do_not_fill_a_block(tmp_path):
    """12 and 24 channels: weights and bias are padded with zeros to whole
    blocks, and the Concat of padded tensors goes back to NCHW."""
    model = small_cnn(channels=12)
    path = str(tmp_path / "cnn12.onnx")
    onnx.save(model, path)
    saved = str(tmp_path / "optimized.onnx")
    session = save_optimized(path, saved, onyx.GraphOptimizationLevel.ORT_ENABLE_ALL)
    ops = domains(saved)
    if cpu_has_blocked_layout():
        assert ops[("com.microsoft.nchwc", "Conv")] == 5
        assert ops[("com.microsoft.nchwc", "ReorderOutput")] >= 2
    x = np.random.default_rng(2).standard_normal((2, 3, 33, 29)).astype(np.float32)
    expected = ort.InferenceSession(path, ort_disabled()).run(None, {"x": x})
    for got in (session.run(None, {"x": x}), ort.InferenceSession(saved, ort_disabled()).run(None, {"x": x})):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def inverted_residual(hw, stride):
    """A MobileNetV2 block: 1x1 expansion 16 -> 96 and Clip, 3x3 depthwise and
    Clip, 1x1 projection; at 40x40 the expanded tensor is 600 KiB, which onyx
    computes fused with the depthwise conv (com.onyx.nchwc)."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi")]

    def weight(name, shape, scale=0.2):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    nodes = [
        helper.make_node("Conv", ["x", weight("we", [96, 16, 1, 1]), weight("be", [96])], ["e"]),
        helper.make_node("Clip", ["e", "lo", "hi"], ["e6"]),
        helper.make_node("Conv", ["e6", weight("wd", [96, 1, 3, 3]), weight("bd", [96])], ["d"],
                         pads=[1, 1, 1, 1], strides=[stride, stride], group=96),
        helper.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
        helper.make_node("Conv", ["d6", weight("wp", [24, 96, 1, 1]), weight("bp", [24])], ["y"]),
    ]
    graph = helper.make_graph(nodes, "inverted_residual",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("stride", [1, 2])
def test_fused_expansion_saves_as_onnxruntime_ops(tmp_path, stride):
    """The fused expansion + depthwise kernel computes what the two convs do,
    and a saved optimized model holds the two com.microsoft.nchwc Convs again,
    so that onnxruntime runs it."""
    path = str(tmp_path / "block.onnx")
    onnx.save(inverted_residual(40, stride), path)
    x = np.random.default_rng(3).standard_normal((1, 16, 40, 40)).astype(np.float32)
    expected = ort.InferenceSession(path, ort_disabled()).run(None, {"x": x})
    saved = str(tmp_path / "optimized.onnx")
    session = save_optimized(path, saved, onyx.GraphOptimizationLevel.ORT_ENABLE_ALL)
    ops = domains(saved)
    assert not any(domain == "com.onyx.nchwc" for domain, _ in ops)
    assert "com.onyx.nchwc" not in {o.domain for o in onnx.load(saved).opset_import}
    if cpu_has_blocked_layout():
        assert ops[("com.microsoft.nchwc", "Conv")] == 3
    for threads in (1, 2):
        options = onyx.SessionOptions()
        options.intra_op_num_threads = threads
        live = onyx.InferenceSession(path, options)
        for got in (live.run(None, {"x": x}), session.run(None, {"x": x}),
                    ort.InferenceSession(saved, ort_disabled()).run(None, {"x": x}),
                    onyx.InferenceSession(saved).run(None, {"x": x})):
            np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-4)


def swish_cnn():
    """EfficientNet's and MobileNetV3's activations as PyTorch exports them:
    SiLU as x * Sigmoid(x) after a conv and on its own, HardSwish after a
    conv (opset 14's op) and after a Gemm."""
    rng = np.random.default_rng(11)
    inits = []

    def weight(name, shape, scale=0.3):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    nodes = [
        helper.make_node("Conv", ["x", weight("w0", [16, 8, 3, 3]), weight("b0", [16])], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c0"], ["s0"]),
        helper.make_node("Mul", ["c0", "s0"], ["silu0"]),
        helper.make_node("Conv", ["silu0", weight("w1", [16, 16, 1, 1]), weight("b1", [16])], ["c1"]),
        helper.make_node("HardSwish", ["c1"], ["h1"]),
        helper.make_node("Add", ["h1", "silu0"], ["a1"]),
        helper.make_node("Sigmoid", ["a1"], ["s1"]),
        helper.make_node("Mul", ["s1", "a1"], ["silu1"]),
        helper.make_node("GlobalAveragePool", ["silu1"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", weight("wf", [16, 10]), weight("bf", [10])], ["gm"]),
        helper.make_node("HardSwish", ["gm"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "swish_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 12, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("level", ["ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"])
def test_swish_activations_fuse_and_save_as_onnxruntime_ops(tmp_path, level):
    """onyx runs SiLU and HardSwish inside the conv or Gemm before them; a saved
    optimized model writes them as nodes of their own again (onnxruntime's
    FusedConv, FusedGemm and NCHWc Conv do not take them), so that it runs
    in onnxruntime."""
    path = str(tmp_path / "swish.onnx")
    onnx.save(swish_cnn(), path)
    x = np.random.default_rng(4).standard_normal((2, 8, 12, 10)).astype(np.float32)
    expected = ort.InferenceSession(path, ort_disabled()).run(None, {"x": x})
    saved = str(tmp_path / "optimized.onnx")
    session = save_optimized(path, saved, getattr(onyx.GraphOptimizationLevel, level))
    model = onnx.load(saved)
    for node in model.graph.node:
        for a in node.attribute:
            assert not (a.name == "activation" and a.s in (b"HardSwish", b"QuickGelu")), node
    ops = domains(saved)
    # Two SiLUs (one after the first conv) and two HardSwishes, written out.
    assert ops[("com.microsoft", "QuickGelu")] == 2
    assert ops[("", "HardSigmoid")] == 2
    assert ops[("", "Sigmoid")] == 0
    # In onyx the conv and the Gemm apply them.
    live = profiled_ops(path, getattr(onyx.GraphOptimizationLevel, level), {"x": x})
    assert not live & {"HardSwish", "Sigmoid", "Mul"}, live
    for got in (session.run(None, {"x": x}), ort.InferenceSession(saved, ort_disabled()).run(None, {"x": x}),
                onyx.InferenceSession(saved).run(None, {"x": x})):
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-5)


def profiled_ops(path, level, feeds):
    """The op types that ran in one profiled run of the model at `level`."""
    import json

    options = onyx.SessionOptions()
    options.enable_profiling = True
    options.graph_optimization_level = level
    session = onyx.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    session.run(None, feeds)
    with open(session.end_profiling()) as f:
        return {e["args"]["op_name"] for e in json.load(f) if e.get("cat") == "Node"}


def test_zoo_resnet50_at_every_level(tmp_path):
    if not os.path.exists(ZOO_RESNET50):
        pytest.skip("bench/zoo/models/resnet50.onnx is absent (python3 bench/zoo/make_zoo.py builds it)")
    feeds = dict(np.load(ZOO_RESNET50.replace(".onnx", ".inputs.npz")))
    expected = ort.InferenceSession(ZOO_RESNET50, ort_disabled()).run(None, feeds)[0]
    for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"):
        saved = str(tmp_path / f"{level}.onnx")
        got = save_optimized(ZOO_RESNET50, saved, getattr(onyx.GraphOptimizationLevel, level)).run(None, feeds)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(ort.InferenceSession(saved, ort_disabled()).run(None, feeds)[0], expected,
                                   rtol=1e-3, atol=1e-3)


def inception_block(c=32):
    """An Inception module at batch 1: 1x1, 3x3 and pool branches from one
    input, concatenated along channels, then a conv reading the whole concat
    and a second concat that also takes the block's input (a value with two
    readers, so it keeps its own buffer)."""
    rng = np.random.default_rng(11)
    inits = []

    def conv(name, x, cin, cout, k, relu=True):
        w = numpy_helper.from_array((rng.standard_normal([cout, cin, k, k]) / np.sqrt(cin * k * k)).astype(np.float32),
                                    name + "_w")
        b = numpy_helper.from_array((rng.standard_normal([cout]) * 0.1).astype(np.float32), name + "_b")
        inits.extend([w, b])
        out = [helper.make_node("Conv", [x, w.name, b.name], [name], pads=[k // 2] * 4)]
        if relu:
            out.append(helper.make_node("Relu", [name], [name + "_r"]))
        return out, (name + "_r" if relu else name)

    nodes = []
    stem, x = conv("stem", "x", 3, c, 3)
    nodes += stem
    b1, y1 = conv("b1", x, c, 16, 1)
    b2a, t = conv("b2a", x, c, 16, 1)
    b2b, y2 = conv("b2b", t, 16, 32, 3)
    nodes += b1 + b2a + b2b
    nodes.append(helper.make_node("MaxPool", [x], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    b3, y3 = conv("b3", "p", c, 16, 1)
    nodes += b3
    nodes.append(helper.make_node("Concat", [y1, y2, y3], ["cat"], axis=1))
    mix, z = conv("mix", "cat", 64, 32, 3, relu=False)
    nodes += mix
    nodes.append(helper.make_node("Concat", [z, x], ["y"], axis=1))
    graph = helper.make_graph(nodes, "inception", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 23, 19])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 23, 19])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("threads", [1, 2])
def test_inception_block_concats_match(tmp_path, threads):
    """The branches of a channel concat at batch 1 write into the concat's
    output directly (session planner); the results must not change."""
    path = str(tmp_path / "inception.onnx")
    onnx.save(inception_block(), path)
    x = np.random.default_rng(3).standard_normal((1, 3, 23, 19)).astype(np.float32)
    expected = ort.InferenceSession(path, ort_disabled()).run(None, {"x": x})
    for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_ALL"):
        options = onyx.SessionOptions()
        options.graph_optimization_level = getattr(onyx.GraphOptimizationLevel, level)
        options.intra_op_num_threads = threads
        session = onyx.InferenceSession(path, options)
        for _ in range(2):  # the second run reuses the first run's freed buffers
            got = session.run(None, {"x": x})
            np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-4, err_msg=level)


def fpn_upsampling(mode, coords, nearest_mode="floor"):
    """An FPN-style merge: a 1x1 conv, a Resize by 2 (or (2, 3)), an Add with
    a finer branch, another 1x1 conv."""
    rng = np.random.default_rng(13)
    inits = []

    def weight(name, shape, scale=0.3):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales"))
    nodes = [
        helper.make_node("Conv", ["coarse", weight("w0", [32, 16, 1, 1]), weight("b0", [32])], ["c0"]),
        helper.make_node("Resize", ["c0", "", "scales"], ["up"], mode=mode, coordinate_transformation_mode=coords,
                         nearest_mode=nearest_mode),
        helper.make_node("Conv", ["fine", weight("w1", [32, 16, 1, 1]), weight("b1", [32])], ["c1"]),
        helper.make_node("Add", ["up", "c1"], ["s"]),
        helper.make_node("Conv", ["s", weight("w2", [16, 32, 1, 1]), weight("b2", [16])], ["y"]),
    ]
    graph = helper.make_graph(nodes, "fpn", [helper.make_tensor_value_info("coarse", TensorProto.FLOAT, [1, 16, 7, 5]),
                                             helper.make_tensor_value_info("fine", TensorProto.FLOAT, [1, 16, 14, 15])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 14, 15])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("mode,coords", [("nearest", "asymmetric"), ("linear", "half_pixel"),
                                         ("linear", "align_corners"), ("linear", "asymmetric")])
def test_blocked_upsample_saves_as_onnxruntime_op(tmp_path, mode, coords):
    """A Resize by whole factors between blocked convs runs blocked (nchwc
    Upsample, no reorders around it); saved, onnxruntime runs the same op."""
    path = str(tmp_path / "fpn.onnx")
    onnx.save(fpn_upsampling(mode, coords), path)
    rng = np.random.default_rng(5)
    feeds = {"coarse": rng.standard_normal((1, 16, 7, 5)).astype(np.float32),
             "fine": rng.standard_normal((1, 16, 14, 15)).astype(np.float32)}
    expected = ort.InferenceSession(path, ort_disabled()).run(None, feeds)
    saved = str(tmp_path / "optimized.onnx")
    session = save_optimized(path, saved, onyx.GraphOptimizationLevel.ORT_ENABLE_ALL)
    ops = domains(saved)
    if cpu_has_blocked_layout():
        assert ops[("com.microsoft.nchwc", "Upsample")] == 1, ops
        assert ops[("", "Resize")] == 0
        assert ops[("com.microsoft.nchwc", "ReorderOutput")] == 1  # y only
    for got in (session.run(None, feeds), ort.InferenceSession(saved, ort_disabled()).run(None, feeds),
                onyx.InferenceSession(saved).run(None, feeds)):
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-4)
