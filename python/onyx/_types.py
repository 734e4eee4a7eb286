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

# Types numpy lacks, fed and returned as same-width integers (the package
# docstring says so too): bfloat16 <-> uint16, float8/float4 <-> uint8,
# int4/int2 <-> one int8 per element, uint4/uint2 <-> one uint8 per element.
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
    if dtype not in ONNX_TYPE_OF_NUMPY:
        raise TypeError(f"numpy type {dtype} has no ONNX equivalent")
    return ONNX_TYPE_OF_NUMPY[dtype]
