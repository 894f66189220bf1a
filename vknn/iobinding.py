"""`IOBinding`: onnxruntime's io-binding over a VKNN session.

    binding = sess.io_binding()
    binding.bind_ortvalue_input("x", vknn.OrtValue.ortvalue_from_numpy(x, "vulkan", 0))
    binding.bind_output("y", "vulkan")          # stays on the device
    sess.run_with_iobinding(binding)
    y = binding.get_outputs()[0]                # an OrtValue on "vulkan"

Runs are synchronous: `synchronize_inputs/outputs` have nothing to wait for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vknn.errors import InvalidArgument
from vknn.ortvalue import OrtValue, by_pointer, check_device_type, vulkan_device


class IOBinding:
    def __init__(self, session: Any) -> None:
        """`session`: a `vknn.InferenceSession`."""
        self._session = session
        self._inputs: dict[str, Any] = {}
        self._outputs: dict[str, OrtValue | str] = {}
        """Output name -> a bound OrtValue, or the device type to allocate on."""
        self._results: list[OrtValue] = []

    def _check(self, name: str, kind: str) -> None:
        infos = self._session.get_inputs() if kind == "input" else self._session.get_outputs()
        names = [i.name for i in infos]
        if name not in names:
            raise InvalidArgument(f"bind_{kind}: unknown {kind} '{name}'; {kind}s are {names}")

    # -- inputs ------------------------------------------------------------------

    def bind_cpu_input(self, name: str, arr: np.ndarray) -> None:
        self._check(name, "input")
        self._inputs[name] = np.asarray(arr)

    def bind_ortvalue_input(self, name: str, value: OrtValue) -> None:
        self._check(name, "input")
        self._inputs[name] = value._value

    def bind_input(
        self,
        name: str,
        device_type: str,
        device_id: int,
        element_type: Any,
        shape: Any,
        buffer_ptr: int,
    ) -> None:
        """Bind the device memory of a live OrtValue (its data_ptr())."""
        self._check(name, "input")
        value = by_pointer(buffer_ptr) if check_device_type(device_type) == "vulkan" else None
        if value is None:
            raise InvalidArgument("bind_input: use bind_cpu_input for host arrays")
        if (np.dtype(element_type), list(shape)) != (value._value.dtype, value.shape()):
            raise InvalidArgument(
                f"bind_input('{name}'): {np.dtype(element_type)}{list(shape)} does not match "
                f"the bound buffer's {value._value.dtype}{value.shape()}"
            )
        self._inputs[name] = value._value

    # -- outputs -----------------------------------------------------------------

    def bind_output(
        self,
        name: str,
        device_type: str = "cpu",
        device_id: int = 0,
        element_type: Any = None,
        shape: Any = None,
        buffer_ptr: int | None = None,
    ) -> None:
        self._check(name, "output")
        kind = check_device_type(device_type)
        if buffer_ptr is not None:
            self.bind_ortvalue_output(name, by_pointer(buffer_ptr))
            return
        if kind == "vulkan":
            vulkan_device(device_id)  # a bad device_id fails here, not at run
        self._outputs[name] = kind

    def bind_ortvalue_output(self, name: str, value: OrtValue) -> None:
        self._check(name, "output")
        if not value.on_device:
            raise InvalidArgument(
                f"bind_ortvalue_output('{name}'): VKNN writes bound outputs to 'vulkan' "
                "OrtValues; bind_output(name) returns host arrays"
            )
        self._outputs[name] = value

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: inputs are written when bound."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: run_with_iobinding returns after the device finished."""

    # -- running -----------------------------------------------------------------

    def _run(self) -> None:
        """What `InferenceSession.run_with_iobinding` does."""
        names = [o.name for o in self._session.get_outputs()]
        wanted = [n for n in names if n in self._outputs] or names
        device = {
            n: (b._value if isinstance(b, OrtValue) else None)
            for n, b in self._outputs.items()
            if b != "cpu"
        }
        out = self._session._run_bound(dict(self._inputs), wanted, device)
        self._results = [
            self._outputs[n] if isinstance(self._outputs.get(n), OrtValue) else OrtValue(out[n])
            for n in wanted
        ]

    def get_outputs(self) -> list[OrtValue]:
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [np.array(v.numpy(), copy=True) for v in self._results]
