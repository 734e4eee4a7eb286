"""IOBinding: inputs and outputs bound to memory before a run
(onnxruntime's IOBinding), over the core's IoBinding.

Inputs are bound where they are: numpy arrays without a copy (C-contiguous
ones are borrowed), device OrtValues and device pointers in their device's
memory, which the session reads there when its provider for that device runs
their readers (else it copies them where they are read). An output bound to
memory of its own (an OrtValue or a buffer pointer) receives the result
there; any other bound output is allocated by the run on the device it is
bound to ("cpu" by default) and returned by ``get_outputs``, in that
device's memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from . import _onyx
from ._types import onnx_type_of
from .ortvalue import OrtValue, _on_device, resolve_device

if TYPE_CHECKING:
    from .session import InferenceSession


class IOBinding:
    """Made by ``InferenceSession.io_binding()``; run with
    ``InferenceSession.run_with_iobinding(binding)``."""

    def __init__(self, session: InferenceSession) -> None:
        self._session = session
        self._inputs: dict[str, OrtValue] = {}
        # Output name -> the OrtValue to write into, or the (device type, id)
        # where each run allocates it.
        self._outputs: dict[str, OrtValue | tuple[int, int]] = {}
        self._results: list[OrtValue] = []

    def _core_binding(self, extra_inputs: list) -> Any:
        """The core's IoBinding of what is bound now, plus `extra_inputs`
        (name, Value) pairs; in the order outputs were bound."""
        binding = _onyx.IoBinding(self._session._sess)
        for name, value in self._inputs.items():
            binding.bind_input(name, value._value)
        for name, value in extra_inputs:
            binding.bind_input(name, value)
        for name, target in self._outputs.items():
            if isinstance(target, OrtValue):
                binding.bind_output_to(name, target._value)
            else:
                binding.bind_output(name, *target)
        return binding

    # ---- inputs ------------------------------------------------------------------

    def _check_input_name(self, name: str) -> None:
        if name not in self._session._feedable:
            raise RuntimeError(
                f"cannot bind input '{name}': the model's inputs are {[a.name for a in self._session.get_inputs()]}"
            )

    def bind_cpu_input(self, name: str, arr_on_cpu: np.ndarray) -> None:
        """Binds a numpy array, without a copy when it is C-contiguous."""
        self._check_input_name(name)
        if not isinstance(arr_on_cpu, np.ndarray):
            raise RuntimeError(f"bind_cpu_input('{name}') takes a numpy array, got {type(arr_on_cpu).__name__}")
        self._inputs[name] = OrtValue.ortvalue_from_numpy(arr_on_cpu)

    def bind_input(
        self,
        name: str,
        device_type: str,
        device_id: int,
        element_type: Any,
        shape: Sequence[int],
        buffer_ptr: int,
    ) -> None:
        """Binds memory of a device at an address the caller owns and keeps
        alive and unchanged until the runs that read it are done."""
        self._check_input_name(name)
        device = resolve_device(device_type, device_id)
        self._inputs[name] = OrtValue(_pointer_value(buffer_ptr, element_type, shape, device, device_type))

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        """Binds an OrtValue where it is (host or device memory)."""
        self._check_input_name(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_input('{name}') takes an OrtValue, got {type(ortvalue).__name__}")
        self._inputs[name] = ortvalue

    # ---- outputs -------------------------------------------------------------------

    def _check_output_name(self, name: str) -> None:
        if name not in self._session._output_set:
            raise RuntimeError(f"cannot bind output '{name}': the model's outputs are {self._session._output_names}")

    def bind_output(
        self,
        name: str,
        device_type: str = "cpu",
        device_id: int = 0,
        element_type: Any = None,
        shape: Sequence[int] | None = None,
        buffer_ptr: int | None = None,
    ) -> None:
        """Without ``buffer_ptr`` each run allocates the output in the
        device's memory, where it stays; with it (and ``element_type`` and
        ``shape``) the result is written to that memory of the device."""
        self._check_output_name(name)
        device = resolve_device(device_type, device_id)
        if buffer_ptr is None:
            self._outputs[name] = device
            return
        if element_type is None or shape is None:
            raise ValueError("`element_type` and `shape` are to be provided if pre-allocated memory is provided")
        self._outputs[name] = OrtValue(_pointer_value(buffer_ptr, element_type, shape, device, device_type))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """The result is written into this OrtValue's memory (same type and
        shape), on whichever device it is."""
        self._check_output_name(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_output('{name}') takes an OrtValue, got {type(ortvalue).__name__}")
        if not ortvalue.is_tensor():
            raise RuntimeError(f"bind_ortvalue_output('{name}') takes a tensor, got {ortvalue.data_type()}")
        ortvalue._check_writable()
        self._outputs[name] = ortvalue

    # ---- results -------------------------------------------------------------------

    def get_outputs(self) -> list[OrtValue]:
        """The outputs of the last run, in the order they were bound, in the
        memory they were bound to."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self) -> list[OrtValue]:
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list[Any]:
        """The outputs of the last run as numpy arrays of their own (device
        outputs are copied to the host once)."""
        copies = []
        for value in self._results:
            data = value.numpy()
            on_host = value.device_name() == "cpu"
            copies.append(data.copy() if on_host and isinstance(data, np.ndarray) else data)
        return copies

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: a bound value's copies are complete when it is made."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: a run waits for its devices' work before it returns."""


def _pointer_value(buffer_ptr: Any, element_type: Any, shape: Sequence[int], device: tuple[int, int], name: str):
    """A core value over memory at `buffer_ptr` on `device`, which the caller owns."""
    if isinstance(buffer_ptr, bool) or not isinstance(buffer_ptr, (int, np.integer)):
        raise TypeError(f"buffer_ptr must be an int address, got {type(buffer_ptr).__name__}")
    dims = [int(d) for d in shape]
    elem_type = onnx_type_of(element_type)
    return _on_device(lambda: _onyx.Value.from_pointer(int(buffer_ptr), elem_type, dims, *device), name, device[1])
