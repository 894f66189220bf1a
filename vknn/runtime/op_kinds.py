"""The user-facing kind of a plan step: the ONNX operator name people know
(`Conv`, `Relu`, `MaxPool`), used in reports and in `Config.disable_vk_ops`.
Plain data, so the runtime can name ops without the compiler."""

from __future__ import annotations

from typing import Any

CMPF_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip
"""`arith.cmpf` predicates in the arith dialect's enum order (the integer a
plan step's `predicate` attribute may carry); the CPU oracle and the GLSL
pointwise codegen both read them from here."""
CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
"""`arith.cmpi` predicates in enum order."""

_VX_KINDS = {
    "conv": "Conv",
    "conv_transpose": "ConvTranspose",
    "matmul": "MatMul",
    "gemm": "Gemm",
    "select": "Where",
    "cast": "Cast",
    "softmax": "Softmax",
    "log_softmax": "LogSoftmax",
    "layernorm": "LayerNormalization",
    "batchnorm": "BatchNormalization",
    "lrn": "LRN",
    "reshape": "Reshape",
    "transpose": "Transpose",
    "concat": "Concat",
    "slice": "Slice",
    "gather": "Gather",
    "gather_nd": "GatherND",
    "gather_elements": "GatherElements",
    "scatter_elements": "ScatterElements",
    "expand": "Expand",
    "pad": "Pad",
    "resize": "Resize",
    "quantize": "QuantizeLinear",
    "dequantize": "DequantizeLinear",
    "fused_pointwise": "FusedPointwise",
    "convert_layout": "ConvertLayout",
    "constant": "Constant",
}
_POOL = {"max": "MaxPool", "avg": "AveragePool", "lp": "LpPool"}
_SPECIAL = {
    "prelu": "PRelu",
    "leaky_relu": "LeakyRelu",
    "hard_sigmoid": "HardSigmoid",
    "hard_swish": "HardSwish",
    "relu": "Relu",
    "elu": "Elu",
    "selu": "Selu",
    "gelu": "Gelu",
    "erf": "Erf",
    "log_sum_exp": "ReduceLogSumExp",
    "sum_square": "ReduceSumSquare",
    "argmax": "ArgMax",
    "argmin": "ArgMin",
}


def _camel(s: str) -> str:
    return _SPECIAL.get(s) or "".join(p.capitalize() for p in s.split("_"))


def op_kind(op: str, attrs: dict[str, Any]) -> str:
    dialect, _, name = op.partition(".")
    if "onnx_op_type" in attrs:
        return str(attrs["onnx_op_type"])
    if dialect != "vx":
        return name
    kind = attrs.get("kind")
    if name in ("unary", "binary") and isinstance(kind, str):
        return _camel(kind)
    if name == "float_test":
        return "IsNaN" if attrs.get("test") == "nan" else "IsInf"
    if name == "pool" and isinstance(kind, str):
        return _POOL.get(kind, "Pool")
    if name == "reduce" and isinstance(kind, str):
        return (
            _SPECIAL.get(kind)
            if kind in ("log_sum_exp", "sum_square", "argmax", "argmin")
            else "Reduce" + _camel(kind)
        )  # type: ignore[return-value]
    return _VX_KINDS.get(name, _camel(name))
