"""ONNX element types (TensorProto.DataType numbers) and their numpy dtypes,
shared by the session, OrtValue and IOBinding."""

from __future__ import annotations

from typing import Any

import numpy as np

STRING = 8

# ONNX element type of each numpy dtype onyx accepts.
ONNX_TYPE_OF_NUMPY = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4,
    np.dtype(np.int16): 5,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
    np.dtype(np.bool_): 9,
    np.dtype(np.float16): 10,
    np.dtype(np.float64): 11,
    np.dtype(np.uint32): 12,
    np.dtype(np.uint64): 13,
    np.dtype(np.complex64): 14,
    np.dtype(np.complex128): 15,
}
NUMPY_OF_ONNX_TYPE = {t: d for d, t in ONNX_TYPE_OF_NUMPY.items()}

# Types numpy lacks, as the core holds them: same-width integers (bfloat16
# as uint16, float8/float4 as uint8, int4/int2 as one int8 per element,
# uint4/uint2 as one uint8). Python returns ml_dtypes arrays for them (below)
# and takes either those or these integer views as feeds.
VIEW_TYPES = {
    16: np.dtype(np.uint16),
    17: np.dtype(np.uint8),
    18: np.dtype(np.uint8),
    19: np.dtype(np.uint8),
    20: np.dtype(np.uint8),
    21: np.dtype(np.uint8),
    22: np.dtype(np.int8),
    23: np.dtype(np.uint8),
    24: np.dtype(np.uint8),
    25: np.dtype(np.uint8),
    26: np.dtype(np.int8),
}


# The ml_dtypes types (what onnx.numpy_helper gives for these ONNX types),
# where the package is installed: outputs come back as arrays of them, and
# they feed inputs. Float types are bit-identical to their integer view;
# ml_dtypes stores a 4-/2-bit integer in the low bits of its byte, so those
# are converted by value, not reinterpreted.
try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - onnx depends on ml_dtypes
    _ml_dtypes = None

ML_DTYPE_OF_ONNX_TYPE: dict[int, np.dtype] = {}
if _ml_dtypes is not None:
    for _elem, _name in (
        (16, "bfloat16"),
        (17, "float8_e4m3fn"),
        (18, "float8_e4m3fnuz"),
        (19, "float8_e5m2"),
        (20, "float8_e5m2fnuz"),
        (21, "uint4"),
        (22, "int4"),
        (23, "float4_e2m1fn"),
        (24, "float8_e8m0fnu"),
        (25, "uint2"),
        (26, "int2"),
    ):
        if hasattr(_ml_dtypes, _name):
            ML_DTYPE_OF_ONNX_TYPE[_elem] = np.dtype(getattr(_ml_dtypes, _name))
ONNX_TYPE_OF_ML_DTYPE = {d: t for t, d in ML_DTYPE_OF_ONNX_TYPE.items()}
_BY_VALUE = {21, 22, 25, 26}  # the sub-byte integers


def from_view(array: np.ndarray, elem_type: int) -> np.ndarray:
    """The integer view of an ONNX type numpy lacks, as an ml_dtypes array
    (the view itself where ml_dtypes has no such type)."""
    dtype = ML_DTYPE_OF_ONNX_TYPE.get(elem_type)
    if dtype is None:
        return array
    return array.astype(dtype) if elem_type in _BY_VALUE else array.view(dtype)


def to_view(array: np.ndarray) -> tuple[np.ndarray, int]:
    """An ml_dtypes array as the integer view the core takes, and its ONNX
    element type; (array, 0) for any other array."""
    elem_type = ONNX_TYPE_OF_ML_DTYPE.get(array.dtype, 0)
    if elem_type == 0:
        return array, 0
    view = VIEW_TYPES[elem_type]
    if elem_type in _BY_VALUE:
        return array.astype(view), elem_type
    array = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    return array.view(view), elem_type


def numpy_dtype_of(elem_type: int) -> np.dtype | None:
    """The numpy dtype of an ONNX element type; None for strings and the
    types numpy lacks."""
    return NUMPY_OF_ONNX_TYPE.get(elem_type)


def onnx_type_of(element_type: Any) -> int:
    """The ONNX element type of a numpy dtype-like (np.float32, "float32",
    np.dtype) or of an ONNX element type number."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        value = int(element_type)
        if value == STRING or value in NUMPY_OF_ONNX_TYPE or value in VIEW_TYPES:
            return value
        raise TypeError(f"{value} is not an ONNX element type onyx knows")
    try:
        dtype = np.dtype(element_type)
    except TypeError as error:
        raise TypeError(f"{element_type!r} is not an element type: {error}") from None
    if dtype.kind in "OUS":
        return STRING
    if dtype in ONNX_TYPE_OF_ML_DTYPE:
        return ONNX_TYPE_OF_ML_DTYPE[dtype]
    if dtype not in ONNX_TYPE_OF_NUMPY:
        raise TypeError(f"numpy type {dtype} has no ONNX equivalent")
    return ONNX_TYPE_OF_NUMPY[dtype]
