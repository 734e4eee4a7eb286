"""Weight-only 4-bit quantization: MatMul with a constant 2-D float weight
[K, N] becomes com.microsoft MatMulNBits.

Layout written (as MatMulNBits reads it): B uint8 [N, n_blocks, block_size/2]
with code k of column n at byte k/2 of its block, low nibble first; scales
float [N * n_blocks]; zero points (asymmetric only) uint8
[N * ceil(n_blocks / 2)], low nibble first. K is padded with zeros up to a
whole number of blocks. Symmetric blocks omit zero points (the op's default is
8) and map the value of largest magnitude to code 0 (-8 * scale).

Round-to-nearest is the default; GPTQWeightOnlyQuantConfig runs the model on
calibration data, builds each weight's Hessian H = 2 X^T X / n from the
MatMul's input rows, and quantizes the K rows one at a time, spreading each
row's rounding error over the rows not yet quantized through the Cholesky
factor of H^-1."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .calibrate import CalibrationDataReader, run_model_collect
from .quant_utils import QuantFormat, ensure_opset, load_model, save_model, unique_name


class WeightOnlyQuantConfig:
    def __init__(self, algorithm: str, quant_format=QuantFormat.QOperator, op_types_to_quantize=None):
        if quant_format != QuantFormat.QOperator:
            raise ValueError("onyx's MatMulNBitsQuantizer writes QOperator (MatMulNBits) models only")
        self.algorithm, self.quant_format = algorithm, quant_format
        self.op_types_to_quantize = tuple(op_types_to_quantize or ("MatMul",))


class DefaultWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    def __init__(self, block_size: int = 32, is_symmetric: bool = False, accuracy_level: int | None = None,
                 quant_format=QuantFormat.QOperator, op_types_to_quantize=None, quant_axes=None, bits: int = 4,
                 channel_wised_quantize: bool = False):
        super().__init__("DEFAULT", quant_format, op_types_to_quantize)
        self.block_size, self.is_symmetric, self.accuracy_level, self.bits = block_size, is_symmetric, accuracy_level, bits


class RTNWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    def __init__(self, ratios=None, quant_format=QuantFormat.QOperator, op_types_to_quantize=None,
                 customized_weight_config=None):
        super().__init__("RTN", quant_format, op_types_to_quantize)


class GPTQWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    def __init__(self, calibration_data_reader: CalibrationDataReader | None = None, percdamp=0.01, block_size=None,
                 actorder=False, mse=False, perchannel=True, quant_format=QuantFormat.QOperator,
                 op_types_to_quantize=None):
        super().__init__("GPTQ", quant_format, op_types_to_quantize)
        if calibration_data_reader is None:
            raise ValueError("GPTQWeightOnlyQuantConfig needs a calibration_data_reader")
        if actorder or mse:
            raise NotImplementedError("onyx's GPTQ has no actorder or mse search")
        self.calibration_data_reader, self.percdamp, self.block_size = calibration_data_reader, percdamp, block_size


class ONNXModel:
    """The part of onnxruntime's ONNXModel wrapper that quantizer users touch."""

    def __init__(self, model: onnx.ModelProto):
        self.model = model

    def graph(self):
        return self.model.graph

    def nodes(self):
        return self.model.graph.node

    def save_model_to_file(self, output_path, use_external_data_format=False):
        save_model(self.model, output_path, use_external_data_format)


def _block_params(blocks: np.ndarray, symmetric: bool):
    """Scale and zero point per block; blocks [..., block_size]."""
    if symmetric:
        idx = np.argmax(np.abs(blocks), axis=-1)
        peak = np.take_along_axis(blocks, idx[..., None], axis=-1)[..., 0]
        scale = peak / -8.0
        zero = np.full(scale.shape, 8.0)
    else:
        lo = np.minimum(blocks.min(axis=-1), 0.0)
        hi = np.maximum(blocks.max(axis=-1), 0.0)
        scale = (hi - lo) / 15.0
        zero = np.clip(np.rint(-lo / np.where(scale != 0, scale, 1.0)), 0, 15)
    scale = np.where(scale != 0, scale, 1.0).astype(np.float32)
    return scale, zero


def _codes(values, scale, zero):
    return np.clip(np.rint(values / scale) + zero, 0, 15)


def quantize_rtn(w: np.ndarray, block_size: int, symmetric: bool):
    """codes uint8 [N, n_blocks, block_size], scales [N, n_blocks], zero points [N, n_blocks]."""
    k, n = w.shape
    n_blocks = -(-k // block_size)
    padded = np.zeros((n_blocks * block_size, n), dtype=np.float32)
    padded[:k] = w
    blocks = padded.T.reshape(n, n_blocks, block_size)
    scale, zero = _block_params(blocks, symmetric)
    codes = _codes(blocks, scale[..., None], zero[..., None])
    return codes.astype(np.uint8), scale, zero.astype(np.uint8)


def quantize_gptq(w: np.ndarray, hessian: np.ndarray, block_size: int, symmetric: bool, percdamp: float):
    """GPTQ over the K rows of w [K, N] with the Hessian [K, K] of its inputs."""
    k, n = w.shape
    n_blocks = -(-k // block_size)
    kp = n_blocks * block_size
    W = np.zeros((n, kp), dtype=np.float64)  # one row per output, as the method is usually written
    W[:, :k] = w.T
    H = np.eye(kp)
    H[:k, :k] = hessian
    dead = np.diag(H) == 0
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    H += np.eye(kp) * (percdamp * np.mean(np.diag(H)))
    try:
        U = np.linalg.cholesky(np.linalg.inv(H)).T  # upper factor of H^-1
    except np.linalg.LinAlgError:
        U = np.linalg.cholesky(np.linalg.inv(H + np.eye(kp) * np.mean(np.diag(H)))).T
    codes = np.zeros((n, kp), dtype=np.uint8)
    scales = np.zeros((n, n_blocks), dtype=np.float32)
    zeros = np.zeros((n, n_blocks), dtype=np.uint8)
    for b in range(n_blocks):
        start = b * block_size
        scale, zero = _block_params(W[:, start:start + block_size], symmetric)
        scales[:, b], zeros[:, b] = scale, zero
        for j in range(start, start + block_size):
            col = W[:, j]
            q = _codes(col, scale, zero)
            codes[:, j] = q
            err = (col - (q - zero) * scale) / U[j, j]
            W[:, j + 1:] -= np.outer(err, U[j, j + 1:])
    return codes.reshape(n, n_blocks, block_size), scales, zeros


def pack(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray, symmetric: bool):
    """The MatMulNBits initializers (B, scales, zero_points or None) from codes [N, n_blocks, block_size]."""
    n, n_blocks, block_size = codes.shape
    b = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    zp = None
    if not symmetric:
        padded = np.full((n, n_blocks + (n_blocks & 1)), 8, dtype=np.uint8)
        padded[:, :n_blocks] = zeros
        zp = (padded[:, 0::2] | (padded[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
    return b, scales.astype(np.float32).reshape(-1), zp


class MatMulNBitsQuantizer:
    """Replace MatMul nodes that have a constant 2-D float weight by 4-bit
    com.microsoft MatMulNBits. process() does the work; .model is an
    ONNXModel wrapper (.model.model is the ModelProto, and
    .model.save_model_to_file(path) writes it)."""

    def __init__(self, model, bits: int = 4, block_size: int = 32, is_symmetric: bool = False,
                 accuracy_level: int | None = None, nodes_to_exclude=None, nodes_to_include=None,
                 quant_format=QuantFormat.QOperator, op_types_to_quantize=None, quant_axes=None,
                 channel_wised_quantize: bool = False, algo_config: WeightOnlyQuantConfig | None = None):
        if bits != 4:
            raise ValueError(f"onyx's MatMulNBitsQuantizer writes 4-bit weights, not {bits}-bit")
        if algo_config is not None and getattr(algo_config, "block_size", None):
            block_size = algo_config.block_size
        if block_size < 16 or block_size > 256 or block_size & (block_size - 1):
            raise ValueError(f"block_size must be a power of two from 16 to 256, not {block_size}")
        if accuracy_level not in (None, 0, 1, 2, 3, 4):
            raise ValueError(f"accuracy_level must be 0..4, not {accuracy_level}")
        if quant_format != QuantFormat.QOperator:
            raise ValueError("onyx's MatMulNBitsQuantizer writes QOperator (MatMulNBits) models only")
        self.model = ONNXModel(load_model(model))
        self.bits, self.block_size, self.is_symmetric, self.accuracy_level = bits, block_size, is_symmetric, accuracy_level
        self.nodes_to_exclude = set(nodes_to_exclude or ())
        self.nodes_to_include = None if nodes_to_include is None else set(nodes_to_include)
        if op_types_to_quantize and set(op_types_to_quantize) - {"MatMul"}:
            raise ValueError(f"onyx's MatMulNBitsQuantizer quantizes MatMul only, not {sorted(set(op_types_to_quantize) - {'MatMul'})}")
        self.algo_config = algo_config or DefaultWeightOnlyQuantConfig(block_size, is_symmetric, accuracy_level)

    def _targets(self, graph, consts):
        for node in graph.node:
            if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
                continue
            if node.name in self.nodes_to_exclude or (self.nodes_to_include is not None and
                                                      node.name not in self.nodes_to_include):
                continue
            w = consts.get(node.input[1])
            if w is not None and w.dtype == np.float32 and w.ndim == 2:
                yield node, w

    def _hessians(self, model, targets):
        inputs = list(dict.fromkeys(node.input[0] for node, _ in targets))
        sums, counts = {}, {}
        reader = self.algo_config.calibration_data_reader
        for values in run_model_collect(model, inputs, reader):
            for name, x in values.items():
                x = x.reshape(-1, x.shape[-1]).astype(np.float64)
                sums[name] = sums.get(name, 0.0) + x.T @ x
                counts[name] = counts.get(name, 0) + x.shape[0]
        if not counts:
            raise ValueError("GPTQ: the calibration reader gave no batches")
        return {name: 2.0 * sums[name] / counts[name] for name in sums}

    def process(self):
        model = self.model.model
        graph = model.graph
        graph_inputs = {i.name for i in graph.input}
        consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name not in graph_inputs}
        targets = list(self._targets(graph, consts))
        gptq = isinstance(self.algo_config, GPTQWeightOnlyQuantConfig)
        hessians = self._hessians(model, targets) if gptq and targets else {}
        taken = {t.name for t in graph.initializer} | {n.name for n in graph.node}
        for node in graph.node:
            taken.update(node.input)
            taken.update(node.output)
        replaced = {}
        new_inits = []
        for node, w in targets:
            k, n = w.shape
            if gptq:
                codes, scales, zeros = quantize_gptq(w, hessians[node.input[0]], self.block_size, self.is_symmetric,
                                                     self.algo_config.percdamp)
            else:
                codes, scales, zeros = quantize_rtn(w, self.block_size, self.is_symmetric)
            b, s, zp = pack(codes, scales, zeros, self.is_symmetric)
            base = node.input[1]
            names = [unique_name(taken, f"{base}_Q4"), unique_name(taken, f"{base}_scales")]
            new_inits += [numpy_helper.from_array(b, names[0]), numpy_helper.from_array(s, names[1])]
            if zp is not None:
                names.append(unique_name(taken, f"{base}_zero_points"))
                new_inits.append(numpy_helper.from_array(zp, names[2]))
            attrs = dict(K=k, N=n, bits=4, block_size=self.block_size)
            if self.accuracy_level is not None:
                attrs["accuracy_level"] = self.accuracy_level
            replaced[id(node)] = helper.make_node("MatMulNBits", [node.input[0]] + names, list(node.output),
                                                  name=(node.name or unique_name(taken, "MatMul")) + "_Q4",
                                                  domain="com.microsoft", **attrs)
        nodes = [replaced.get(id(node), node) for node in graph.node]
        del graph.node[:]
        graph.node.extend(nodes)
        used = {i for node in nodes for i in node.input} | graph_inputs
        kept = [t for t in graph.initializer if t.name in used]
        del graph.initializer[:]
        graph.initializer.extend(kept + new_inits)
        if replaced:
            ensure_opset(model, "com.microsoft", 1)
        return self.model
