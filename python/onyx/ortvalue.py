"""OrtValue and OrtDevice: values onyx runs on, outside a session
(onnxruntime's OrtValue and OrtDevice).

A thin class over the core's Value. An OrtValue lives in host memory ("cpu")
or in the memory of a device whose provider this build has (onnxruntime's
names: "cuda", "gpu", "npu"; onyx's: "vulkan", "openvino", and "test" for the
simulated device tests register). Device memory needs no session: the core
keeps one provider per device for it (include/onyx/device.h).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _onyx
from ._types import VIEW_TYPES, onnx_type_of, to_view

__all__ = ["OrtDevice", "OrtValue", "resolve_device"]

# onnxruntime's device names that onyx has no device for: refused as not
# loaded (RuntimeError, as onnxruntime's CPU package refuses "cuda").
_ORT_ONLY_DEVICES = ("cann", "dml", "webgpu", "fpga")
# PCI vendor ids (onnxruntime's OrtDeviceVendorId) that pick a "gpu".
_VENDOR_DEVICES = {0x10DE: "cuda", 0x8086: "openvino", 0x1002: "vulkan"}
_GPU_DEVICES = ("cuda", "vulkan", "openvino")


def _not_loaded(name: str, device_id: int, detail: str = "") -> RuntimeError:
    return RuntimeError(
        f"cannot use memory on device '{name}' (device id {device_id}): no execution provider for device "
        f"'{name}' is loaded in this build{detail}"
    )


def resolve_device(device_type: Any, device_id: Any = 0, vendor_id: Any = -1) -> tuple[int, int]:
    """The core's (device type number, device id) for onnxruntime's arguments.

    Raises TypeError for arguments of the wrong type, ValueError for a device
    name onyx does not know, RuntimeError for a device this build has no
    provider for (as onnxruntime's CPU package does for "cuda")."""
    if not isinstance(device_type, str):
        raise TypeError(f"device_type must be a str such as 'cpu' or 'cuda', got {type(device_type).__name__}")
    for what, value in (("device_id", device_id), ("vendor_id", vendor_id)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    device_id = int(device_id)
    if device_id < 0:
        raise ValueError(f"device_id must be 0 or more, got {device_id}")
    name = device_type.lower()
    types = _onyx.DEVICE_TYPES
    if name in ("gpu", "npu"):
        candidates = ("openvino",) if name == "npu" else _GPU_DEVICES
        if int(vendor_id) >= 0:
            chosen = _VENDOR_DEVICES.get(int(vendor_id))
            candidates = (chosen,) if chosen in candidates else ()
        served = [c for c in candidates if _onyx.device_is_served(types[c])]
        if not served:
            through = ", ".join(candidates) or "no provider for that vendor"
            raise _not_loaded(device_type, device_id, f" (onyx serves a '{name}' through {through})")
        name = served[0]
    elif name in _ORT_ONLY_DEVICES:
        raise _not_loaded(device_type, device_id)
    elif name not in types:
        raise ValueError(f"unsupported device type '{device_type}'; onyx knows {', '.join(sorted(types))}, gpu and npu")
    if not _onyx.device_is_served(types[name]):
        raise _not_loaded(device_type, device_id)
    return types[name], device_id


def _on_device(make, device_type: str, device_id: int):
    """Runs `make` (which uses the device's memory), raising the core's
    refusals of device memory as RuntimeError, as onnxruntime's are; host
    memory keeps the core's classes."""
    if device_type.lower() == "cpu":
        return make()
    try:
        return make()
    except _onyx.OnyxError as error:
        raise RuntimeError(f"cannot use memory on device '{device_type}' (device id {device_id}): {error}") from None


class OrtDevice:
    """A device as onnxruntime's OrtDevice describes it: ``OrtDevice.make("cuda", 0)``.

    ``device_type()`` is onnxruntime's number (``OrtDevice.cpu()`` 0,
    ``OrtDevice.gpu()`` 1, ``OrtDevice.npu()`` 3; onyx's test device 100).
    Making one does not need the device's provider; using its memory does."""

    _ORT_TYPE_OF = {"cpu": 0, "cuda": 1, "gpu": 1, "vulkan": 1, "openvino": 1, "dml": 1, "webgpu": 1,
                    "fpga": 2, "npu": 3, "cann": 3, "test": 100}

    def __init__(self, name: str, device_id: int, vendor_id: int = -1) -> None:
        self._name = name
        self._id = device_id
        self._vendor_id = vendor_id

    @staticmethod
    def make(ort_device_name: str, device_id: int, vendor_id: int = -1) -> OrtDevice:
        if not isinstance(ort_device_name, str):
            raise TypeError(f"ort_device_name must be a str such as 'cuda', got {type(ort_device_name).__name__}")
        name = ort_device_name.lower()
        if name not in OrtDevice._ORT_TYPE_OF:
            raise ValueError(f"unsupported device type '{ort_device_name}'")
        if isinstance(device_id, bool) or not isinstance(device_id, (int, np.integer)) or device_id < 0:
            raise TypeError(f"device_id must be an int, 0 or more, got {device_id!r}")
        if vendor_id < 0:
            vendor_id = {"cuda": 0x10DE, "dml": 0x1414, "cann": 0x19E5}.get(name, 0)
        return OrtDevice(name, int(device_id), int(vendor_id))

    @staticmethod
    def cpu() -> int:
        return 0

    @staticmethod
    def gpu() -> int:
        return 1

    @staticmethod
    def cuda() -> int:
        return 1

    @staticmethod
    def fpga() -> int:
        return 2

    @staticmethod
    def npu() -> int:
        return 3

    @staticmethod
    def default_memory() -> int:
        return 0

    def device_id(self) -> int:
        return self._id

    def device_type(self) -> int:
        return OrtDevice._ORT_TYPE_OF[self._name]

    def device_vendor_id(self) -> int:
        return self._vendor_id

    def device_mem_type(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"OrtDevice('{self._name}', {self._id})"


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
    def ortvalue_from_numpy(
        numpy_obj: np.ndarray, device_type: str = "cpu", device_id: int = 0, vendor_id: int = -1
    ) -> OrtValue:
        """On the CPU, shares the memory of a C-contiguous array (others are
        copied first), which must stay unchanged while a run reads it. On a
        device, a copy of the array in the device's memory."""
        device = resolve_device(device_type, device_id, vendor_id)
        if not isinstance(numpy_obj, np.ndarray):
            raise RuntimeError(
                f"an OrtValue is made from a numpy array, got {type(numpy_obj).__name__} "
                "(use numpy.asarray first)"
            )
        if numpy_obj.dtype.kind in "OUS":
            host = OrtValue(_onyx.Value.from_strings(numpy_obj.ravel().tolist(), list(numpy_obj.shape)))
        else:
            array = numpy_obj if numpy_obj.flags.c_contiguous else np.ascontiguousarray(numpy_obj)
            # An ml_dtypes array (bfloat16, float8, int4, ...) goes as its integer view.
            view, elem_type = to_view(array)
            host = OrtValue(_onyx.Value.from_numpy(view, elem_type), view)
        if device[0] == _onyx.DEVICE_TYPES["cpu"]:
            return host
        return OrtValue(_on_device(lambda: host._value.to_device(*device), device_type, device[1]))

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
        shape: Sequence[int], element_type: Any, device_type: str = "cpu", device_id: int = 0, vendor_id: int = -1
    ) -> OrtValue:
        """A new tensor of that shape and element type (a numpy type such as
        numpy.float32, or an ONNX element type number) in the device's memory;
        its contents are not set."""
        device = resolve_device(device_type, device_id, vendor_id)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise RuntimeError(f"shape {dims} has a negative dimension")
        elem_type = onnx_type_of(element_type)
        return OrtValue(_on_device(lambda: _onyx.Value.empty(elem_type, dims, *device), device_type, device[1]))

    # ---- what it holds ---------------------------------------------------------

    def data_ptr(self) -> int:
        """The address of the tensor's first element."""
        return self._value.data_ptr

    def device_name(self) -> str:
        """Where the tensor's memory is: "cpu", "cuda", "test", ..."""
        return _onyx.device_type_name(self._value.device_type)

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
        """The tensor as a numpy array sharing its memory, or for device memory
        a host copy of it (a list for a sequence, a dict for a map, None for an
        empty optional)."""
        return self._value.numpy()

    def update_inplace(self, np_arr: np.ndarray) -> None:
        """Copies an array of the same type and shape into this tensor's
        memory (a host-to-device copy for device memory)."""
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
            return f"OrtValue({self.data_type()}, shape={self.shape()}, device='{self.device_name()}')"
        return f"OrtValue({self.data_type()})"

