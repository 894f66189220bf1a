"""The three VKNN dialects: `onnx` (import), `vx` (graph IR), `vkd` (dispatch IR).

Dialect modules define IR only: ops, attributes, types, verifiers, shape
rules and descriptors. Nothing here transforms IR.
"""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _onnx() -> Dialect:
    from vknn.dialects.onnx import ONNX

    return ONNX


def _vx() -> Dialect:
    from vknn.dialects.vx import VX

    return VX


def _vkd() -> Dialect:
    from vknn.dialects.vkd import VKD

    return VKD


VKNN_DIALECTS: dict[str, Callable[[], Dialect]] = {"onnx": _onnx, "vx": _vx, "vkd": _vkd}


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A context with builtin, func, arith, math and the three VKNN dialects."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.math import Math

    ctx = Context(allow_unregistered=allow_unregistered)
    for d in (Builtin, Func, Arith, Math):
        ctx.load_dialect(d)
    for name, factory in VKNN_DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx
