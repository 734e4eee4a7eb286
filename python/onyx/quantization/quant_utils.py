"""Enums with onnxruntime.quantization's names, and the arithmetic shared by
the quantizers: ranges to (scale, zero point), float arrays to integer codes."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto


class QuantType(Enum):
    QInt8 = 0
    QUInt8 = 1
    QFLOAT8E4M3FN = 2
    QInt16 = 3
    QUInt16 = 4
    QInt4 = 5
    QUInt4 = 6

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def from_string(text: str) -> "QuantType":
        try:
            return QuantType[text]
        except KeyError:
            raise ValueError(f"unknown QuantType {text!r}; one of {[t.name for t in QuantType]}") from None

    @property
    def tensor_type(self) -> int:
        return _TENSOR_TYPE[self]


class QuantFormat(Enum):
    QOperator = 0
    QDQ = 1

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def from_string(text: str) -> "QuantFormat":
        try:
            return QuantFormat[text]
        except KeyError:
            raise ValueError(f"unknown QuantFormat {text!r}; one of {[t.name for t in QuantFormat]}") from None


class CalibrationMethod(Enum):
    MinMax = 0
    Entropy = 1
    Percentile = 2
    Distribution = 3


_TENSOR_TYPE = {QuantType.QInt8: TensorProto.INT8, QuantType.QUInt8: TensorProto.UINT8,
                QuantType.QInt16: TensorProto.INT16, QuantType.QUInt16: TensorProto.UINT16}
_NP_TYPE = {QuantType.QInt8: np.int8, QuantType.QUInt8: np.uint8,
            QuantType.QInt16: np.int16, QuantType.QUInt16: np.uint16}


def check_supported(qtype: QuantType) -> None:
    if qtype not in _NP_TYPE:
        raise ValueError(f"onyx.quantization quantizes to QInt8, QUInt8, QInt16 or QUInt16, not {qtype.name}")


def np_type(qtype: QuantType):
    check_supported(qtype)
    return _NP_TYPE[qtype]


def qrange(qtype: QuantType, reduce_range: bool = False, symmetric: bool = False) -> tuple[int, int]:
    """The integer codes a tensor may use. reduce_range keeps 7 bits (for
    hardware whose int8 dot products saturate); symmetric signed types drop the
    most negative code so that the range is balanced around zero."""
    info = np.iinfo(np_type(qtype))
    lo, hi = int(info.min), int(info.max)
    if reduce_range and info.bits == 8:
        lo, hi = (-64, 63) if lo < 0 else (0, 127)
    if symmetric and lo < 0:
        lo = -hi
    return lo, hi


def compute_scale_zp(rmin, rmax, qmin: int, qmax: int, symmetric: bool = False):
    """Scale and zero point (numpy arrays, elementwise over rmin/rmax) such that
    the range [rmin, rmax], widened to hold 0, maps onto [qmin, qmax]."""
    rmin = np.minimum(np.asarray(rmin, dtype=np.float64), 0.0)
    rmax = np.maximum(np.asarray(rmax, dtype=np.float64), 0.0)
    if symmetric:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax))
        scale = absmax * 2.0 / (qmax - qmin)
        zero = np.full(scale.shape, (qmax + qmin + 1) // 2 if qmin >= 0 else 0, dtype=np.float64)
    else:
        scale = (rmax - rmin) / (qmax - qmin)
        safe = np.where(scale > 0, scale, 1.0)
        zero = np.clip(np.round(qmin - rmin / safe), qmin, qmax)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    return scale, zero


def quantize_array(values: np.ndarray, scale, zero, qmin: int, qmax: int, dtype) -> np.ndarray:
    """Round-half-to-even, as QuantizeLinear does."""
    q = np.rint(np.asarray(values, dtype=np.float32) / scale) + zero
    return np.clip(q, qmin, qmax).astype(dtype)


def load_model(model_input) -> onnx.ModelProto:
    """A ModelProto from a path or a ModelProto, with a clear error for a bad path."""
    if isinstance(model_input, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(model_input)
        return model
    path = Path(model_input)
    if not path.is_file():
        raise FileNotFoundError(f"onyx.quantization: no model file at {str(path)!r}")
    try:
        return onnx.load(str(path))
    except Exception as error:  # noqa: BLE001 - the parser's own errors say little
        raise ValueError(f"onyx.quantization: {str(path)!r} is not an ONNX model ({error})") from error


def save_model(model: onnx.ModelProto, path, use_external_data_format: bool = False) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if use_external_data_format:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=path.name + ".data", size_threshold=1024)
    else:
        onnx.save_model(model, str(path))


def ensure_opset(model: onnx.ModelProto, domain: str, version: int) -> None:
    """Raise the model's opset for domain to at least version (adds the domain if absent)."""
    for entry in model.opset_import:
        if entry.domain == domain:
            entry.version = max(entry.version, version)
            return
    model.opset_import.append(onnx.helper.make_opsetid(domain, version))


def unique_name(taken: set, base: str) -> str:
    name, i = base, 1
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name
