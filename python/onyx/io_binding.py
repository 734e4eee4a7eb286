"""IOBinding: inputs and outputs bound to memory before a run
(onnxruntime's IOBinding), for CPU memory.

Bound numpy inputs are not copied (the session borrows C-contiguous arrays).
An output bound to memory of its own (an OrtValue or a buffer pointer)
receives the result there; any other bound output is allocated by the run and
returned by ``get_outputs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from . import _onyx
from ._types import onnx_type_of
from .ortvalue import OrtValue, check_cpu_device

if TYPE_CHECKING:
    from .session import InferenceSession


class IOBinding:
    """Made by ``InferenceSession.io_binding()``; run with
    ``InferenceSession.run_with_iobinding(binding)``."""

    def __init__(self, session: InferenceSession) -> None:
        self._session = session
        self._inputs: dict[str, OrtValue] = {}
        # Output name -> the OrtValue to write into, or None to allocate per run.
        self._outputs: dict[str, OrtValue | None] = {}
        self._results: list[OrtValue] = []

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
        """Binds memory at an address the caller owns and keeps alive and
        unchanged until the runs that read it are done."""
        self._check_input_name(name)
        check_cpu_device(device_type, device_id)
        value = _onyx.Value.from_pointer(int(buffer_ptr), onnx_type_of(element_type), [int(d) for d in shape])
        self._inputs[name] = OrtValue(value)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
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
        """Without ``buffer_ptr`` each run allocates the output; with it (and
        ``element_type`` and ``shape``) the result is written to that memory."""
        self._check_output_name(name)
        check_cpu_device(device_type, device_id)
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise ValueError("`element_type` and `shape` are to be provided if pre-allocated memory is provided")
        value = _onyx.Value.from_pointer(int(buffer_ptr), onnx_type_of(element_type), [int(d) for d in shape])
        self._outputs[name] = OrtValue(value)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """The result is written into this OrtValue's memory (same type and shape)."""
        self._check_output_name(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_output('{name}') takes an OrtValue, got {type(ortvalue).__name__}")
        if not ortvalue.is_tensor():
            raise RuntimeError(f"bind_ortvalue_output('{name}') takes a tensor, got {ortvalue.data_type()}")
        ortvalue._check_writable()
        self._outputs[name] = ortvalue

    # ---- results -------------------------------------------------------------------

    def get_outputs(self) -> list[OrtValue]:
        """The outputs of the last run, in the order they were bound."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self) -> list[OrtValue]:
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list[Any]:
        """The outputs of the last run as numpy arrays of their own."""
        copies = []
        for value in self._results:
            data = value.numpy()
            copies.append(data.copy() if isinstance(data, np.ndarray) else data)
        return copies

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: CPU memory is ready when bound."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: CPU outputs are complete when the run returns."""
