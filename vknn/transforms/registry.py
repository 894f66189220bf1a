"""The one place passes register: name -> pass class (imported lazily)."""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> "module:ClassName" under vknn.transforms
_PASSES: dict[str, str] = {
    "infer-shapes": "infer_shapes:InferShapesPass",
    "const-fold": "const_fold:ConstFoldPass",
    "convert-onnx-to-vx": "convert_onnx_to_vx:ConvertOnnxToVxPass",
    "fuse-pointwise": "fuse_pointwise:FusePointwisePass",
    "fuse-attention": "fuse_attention:FuseAttentionPass",
    "fold-nan-guard": "fold_nan_guard:FoldNanGuardPass",
    "sink-reshapes": "sink_reshapes:SinkReshapesPass",
    "assign-layouts": "assign_layouts:AssignLayoutsPass",
    "subpixel-conv-transpose": "subpixel_conv_transpose:SubpixelConvTransposePass",
    "lower-conv": "lower_conv:LowerConvPass",
    "dequantize": "dequantize:DequantizePass",
    "dce": "dce:DcePass",
    "fold-batchnorm": "fold_batchnorm:FoldBatchNormPass",
    "lower-batchnorm": "lower_batchnorm:LowerBatchNormPass",
    "prune-initializers": "prune_initializers:PruneInitializersPass",
    "split-large-gemms": "split_large_gemms:SplitLargeGemmsPass",
    "partition": "partition:PartitionPass",
    "merge-epilogues": "merge_epilogues:MergeEpiloguesPass",
    "fold-views": "fold_views:FoldViewsPass",
    "assign-storage": "assign_storage:AssignStoragePass",
    "convert-vx-to-vkd": "convert_vx_to_vkd:ConvertVxToVkdPass",
    "plan-memory": "plan_memory:PlanMemoryPass",
    "insert-barriers": "insert_barriers:InsertBarriersPass",
}


def _loader(spec: str) -> Callable[[], type[ModulePass]]:
    module, cls = spec.split(":")

    def load() -> type[ModulePass]:
        return getattr(import_module(f"vknn.transforms.{module}"), cls)

    return load


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _loader(spec) for name, spec in _PASSES.items()}
