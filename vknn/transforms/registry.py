"""The one place passes register: name -> pass class (imported lazily)."""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> "module:ClassName" under vknn.transforms
_PASSES: dict[str, str] = {
    "infer-shapes": "infer_shapes:InferShapesPass",
    "const-fold": "const_fold:ConstFoldPass",
    "convert-onnx-to-vx": "convert_onnx_to_vx:ConvertOnnxToVxPass",
}


def _loader(spec: str) -> Callable[[], type[ModulePass]]:
    module, cls = spec.split(":")

    def load() -> type[ModulePass]:
        return getattr(import_module(f"vknn.transforms.{module}"), cls)

    return load


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _loader(spec) for name, spec in _PASSES.items()}
