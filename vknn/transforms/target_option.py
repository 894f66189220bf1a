"""The `target` option of the lowering passes and the module's `#vkd.target`.

The first lowering pass that needs the target (`split-large-gemms`,
`partition`, ...) is given `target=NAME` (a preset, `from-device`, or a JSON
file: `vknn.kernels.targets`) and records it on the module as `vkd.target`;
every later pass reads it from there, so a printed module says what it was
compiled for and `vknn-opt` can resume the pipeline from it. Not a pass.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute

from vknn.dialects.vkd import TARGET_ATTR, TargetAttr
from vknn.errors import InvalidArgument
from vknn.runtime.target import Target


def _attr(value: Any) -> Attribute:
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, list | tuple):
        return ArrayAttr([_attr(v) for v in value])
    raise TypeError(f"no attribute for {value!r}")


def _value(attr: Attribute) -> Any:
    if isinstance(attr, IntegerAttr):
        v = int(attr.value.data)
        return bool(v) if attr.type.width.data == 1 else v  # type: ignore[union-attr]
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [_value(a) for a in attr.data]
    raise InvalidArgument(f"#vkd.target: unexpected field value {attr}")


def target_attr(target: Target) -> TargetAttr:
    return TargetAttr(DictionaryAttr({k: _attr(v) for k, v in target.to_dict().items()}))


def target_from_attr(attr: TargetAttr) -> Target:
    try:
        return Target.from_dict({k: _value(v) for k, v in attr.fields.data.items()})
    except ValueError as e:
        raise InvalidArgument(f"#vkd.target: {e}") from None


def module_target(module: ModuleOp, name: str = "") -> Target:
    """The module's target: `name` when given (recorded on the module, which
    must not already hold another), else the recorded one."""
    have = module.attributes.get(TARGET_ATTR)
    if name:
        from vknn.kernels.targets import target

        t = target(name)
        if isinstance(have, TargetAttr):
            old = target_from_attr(have)
            if old != t:
                raise InvalidArgument(
                    f"target={name}: the module was already lowered for target "
                    f"'{old.name}'; lower the vx module again to change it"
                )
            return old
        module.attributes[TARGET_ATTR] = target_attr(t)
        return t
    if isinstance(have, TargetAttr):
        return target_from_attr(have)
    raise InvalidArgument(
        "no target: give the first lowering pass target=NAME "
        "(generic, lavapipe, nvidia, from-device or a .json file)"
    )
