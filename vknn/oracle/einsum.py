"""CPU kernel of Einsum: numpy's einsum on the widened inputs (fp16 in fp32)."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


@check("onnx.Einsum")
def _check(step: Step) -> str | None:
    eq = str(attr(step, "equation", ""))
    return None if eq and eq.replace(" ", "").isascii() else f"bad equation '{eq}'"


@register("onnx.Einsum")
def einsum(step: Step, inputs: list[Array | None]) -> list[Array]:
    eq = str(attr(step, "equation")).replace(" ", "")
    out = np.einsum(eq, *(widen(x) for x in inputs if x is not None), optimize=True)
    return [np.asarray(out).astype(out_dtype(step), copy=False)]
