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
from vknn.ortvalue import OrtValue, by_pointer, check_device_type, np_dtype, vulkan_device


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
        """Bind the memory of a live OrtValue (its data_ptr())."""
        self._check(name, "input")
        value = _bound(by_pointer(buffer_ptr), device_type, element_type, shape, name)
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
            value = _bound(by_pointer(buffer_ptr), device_type, element_type, shape, name)
            self.bind_ortvalue_output(name, value)
            return
        if kind == "vulkan":
            vulkan_device(device_id)  # a bad device_id fails here, not at run
        self._outputs[name] = kind

    def bind_ortvalue_output(self, name: str, value: OrtValue) -> None:
        self._check(name, "output")
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
        bound = {n: b for n, b in self._outputs.items() if isinstance(b, OrtValue)}
        device = {n: b._value for n, b in bound.items() if b.on_device}
        device.update({n: None for n, b in self._outputs.items() if b == "vulkan"})
        out = self._session._run_bound(dict(self._inputs), wanted, device)
        for n, b in bound.items():
            if not b.on_device:  # a host OrtValue: written in place
                if b.shape() != list(out[n].shape):
                    raise InvalidArgument(f"output '{n}' has shape {list(out[n].shape)}; the "
                                          f"bound OrtValue has {b.shape()}")  # fmt: skip
                b._value[...] = out[n]
        self._results = [bound[n] if n in bound else OrtValue(out[n]) for n in wanted]

    def get_outputs(self) -> list[OrtValue]:
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [np.array(v.numpy(), copy=True) for v in self._results]


def _bound(value: OrtValue, device_type: str, element_type: Any, shape: Any, name: str) -> OrtValue:
    """`value` if it is what a bind_input/bind_output call says it is."""
    said = (check_device_type(device_type), np_dtype(element_type), list(shape))
    have = (value.device_name(), np.dtype(value._value.dtype), value.shape())
    if said != have:
        raise InvalidArgument(
            f"binding '{name}': {said[1]}{said[2]} on {said[0]} does not match the buffer's "
            f"{have[1]}{have[2]} on {have[0]}"
        )
    return value
