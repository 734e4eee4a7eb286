"""OrtValue: a value onyx runs on, outside a session (onnxruntime's OrtValue).

A thin class over the core's Value. Today every OrtValue lives in CPU memory;
the device arguments are there so that device memory can come later without
changing callers.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _onyx
from ._types import VIEW_TYPES, onnx_type_of

__all__ = ["OrtValue", "check_cpu_device"]


def check_cpu_device(device_type: str, device_id: int = 0) -> None:
    """Raises unless the device is the CPU, the only memory OrtValues have yet."""
    if not isinstance(device_type, str):
        raise TypeError(f"device_type must be a str such as 'cpu', got {type(device_type).__name__}")
    if device_type.lower() != "cpu":
        raise RuntimeError(
            f"cannot use memory on device '{device_type}' (device id {device_id}): no execution provider "
            "for that device is loaded in onyx; OrtValues and IOBinding use CPU memory ('cpu')"
        )


class OrtValue:
    """A tensor (or sequence, map, optional) onyx can feed and return.

    Created with ``ortvalue_from_numpy`` (shares the array's memory),
    ``ortvalue_from_shape_and_type`` (new memory), or returned by
    ``InferenceSession.run_with_ort_values`` and ``IOBinding.get_outputs``.
    """

    __slots__ = ("_value", "_array")

    def __init__(self, value: Any, array: np.ndarray | None = None) -> None:
        if not isinstance(value, _onyx.Value):
            raise TypeError("OrtValue wraps a core value; use OrtValue.ortvalue_from_numpy(array) to make one")
        self._value = value
        # The numpy array this value shares memory with, if any (for writes into it).
        self._array = array

    # ---- creation --------------------------------------------------------------

    @staticmethod
    def ortvalue_from_numpy(numpy_obj: np.ndarray, device_type: str = "cpu", device_id: int = 0) -> OrtValue:
        """Shares the memory of a C-contiguous array (others are copied first),
        which must stay unchanged while a run reads it."""
        check_cpu_device(device_type, device_id)
        if not isinstance(numpy_obj, np.ndarray):
            raise RuntimeError(
                f"an OrtValue is made from a numpy array, got {type(numpy_obj).__name__} "
                "(use numpy.asarray first)"
            )
        if numpy_obj.dtype.kind in "OUS":
            return OrtValue(_onyx.Value.from_strings(numpy_obj.ravel().tolist(), list(numpy_obj.shape)))
        array = numpy_obj if numpy_obj.flags.c_contiguous else np.ascontiguousarray(numpy_obj)
        return OrtValue(_onyx.Value.from_numpy(array), array)

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data: np.ndarray, onnx_element_type: int) -> OrtValue:
        """An array of a same-width integer type read as an ONNX type numpy
        lacks, e.g. uint16 numbers as bfloat16 (16)."""
        if not isinstance(data, np.ndarray):
            raise RuntimeError(f"an OrtValue is made from a numpy array, got {type(data).__name__}")
        element_type = onnx_type_of(onnx_element_type)
        array = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        return OrtValue(_onyx.Value.from_numpy(array, element_type), array)

    @staticmethod
    def ortvalue_from_shape_and_type(
        shape: Sequence[int], element_type: Any, device_type: str = "cpu", device_id: int = 0
    ) -> OrtValue:
        """A new tensor of that shape and element type (a numpy type such as
        numpy.float32, or an ONNX element type number); its contents are not set."""
        check_cpu_device(device_type, device_id)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise RuntimeError(f"shape {dims} has a negative dimension")
        return OrtValue(_onyx.Value.empty(onnx_type_of(element_type), dims))

    # ---- what it holds ---------------------------------------------------------

    def data_ptr(self) -> int:
        """The address of the tensor's first element."""
        return self._value.data_ptr

    def device_name(self) -> str:
        return "cpu"

    def shape(self) -> list[int]:
        return list(self._value.shape)

    def data_type(self) -> str:
        """The ONNX type, e.g. 'tensor(float)' or 'seq(tensor(int64))'."""
        return self._value.type

    def element_type(self) -> int:
        """The ONNX element type number of a tensor (1 for float)."""
        if not self._value.is_tensor:
            raise RuntimeError(f"element_type() is for tensors; this OrtValue is {self._value.type}")
        return self._value.elem_type

    def has_value(self) -> bool:
        """False for an empty optional."""
        return not self._value.is_none

    def is_tensor(self) -> bool:
        return self._value.is_tensor

    def is_tensor_sequence(self) -> bool:
        return self._value.is_sequence

    def is_sparse_tensor(self) -> bool:
        return False

    def tensor_size_in_bytes(self) -> int:
        return self._value.size_in_bytes

    def numpy(self) -> Any:
        """The tensor as a numpy array sharing its memory (a list for a sequence,
        a dict for a map, None for an empty optional)."""
        return self._value.numpy()

    def update_inplace(self, np_arr: np.ndarray) -> None:
        """Copies an array of the same type and shape into this tensor's memory."""
        if not isinstance(np_arr, np.ndarray):
            raise RuntimeError(f"update_inplace takes a numpy array, got {type(np_arr).__name__}")
        self._check_writable()
        source = OrtValue.ortvalue_from_numpy(np_arr)
        elem = self._value.elem_type
        if elem in VIEW_TYPES and VIEW_TYPES[elem] == np_arr.dtype:
            source = OrtValue.ortvalue_from_numpy_with_onnx_type(np_arr, elem)
        self._value.copy_from(source._value)

    def _check_writable(self) -> None:
        if self._array is not None and not self._array.flags.writeable:
            raise RuntimeError("this OrtValue shares the memory of a read-only numpy array")

    def __repr__(self) -> str:
        if self._value.is_tensor:
            return f"OrtValue({self.data_type()}, shape={self.shape()}, device='cpu')"
        return f"OrtValue({self.data_type()})"

