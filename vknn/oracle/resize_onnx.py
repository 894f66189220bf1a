"""CPU kernel of `onnx.Resize` (and the deprecated Upsample): a Resize whose
scales / sizes are run-time tensors, so the lowering kept it in the `onnx`
dialect. Computes the output size the way the spec and onnxruntime do (axes,
keep_aspect_ratio_policy; the opset <= 10 form is asymmetric with floor
nearest) and resamples with the
`vx.resize` oracle. tf_crop_and_resize and antialias are refused at compile
time."""

from __future__ import annotations

import math

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.onnx_common import Array, attr, need, norm_axis, out_dtype
from vknn.oracle.registry import check, register
from vknn.oracle.resize import resize
from vknn.runtime.plan import Step


@check("onnx.Resize", "onnx.Upsample")
def _check(step: Step) -> str | None:
    if int(attr(step, "antialias", 0)):
        return "antialias is not implemented"
    coord = attr(step, "coordinate_transformation_mode", "half_pixel")
    if coord == "tf_crop_and_resize":
        return "coordinate_transformation_mode tf_crop_and_resize is not implemented"
    if attr(step, "mode", "nearest") not in ("nearest", "linear", "bilinear", "cubic"):
        return f"mode '{attr(step, 'mode')}' is not nearest/linear/cubic"
    return None


def _given(x: Array | None) -> Array | None:
    return x if x is not None and x.size else None


@register("onnx.Resize", "onnx.Upsample")
def resize_onnx(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    legacy = step.op == "onnx.Upsample" or len(inputs) == 2  # opset <= 10: X, scales
    scales_in = _given(inputs[1]) if legacy else _given(inputs[2] if len(inputs) > 2 else None)
    sizes_in = None if legacy else _given(inputs[3] if len(inputs) > 3 else None)
    axes = [norm_axis(step, int(a), x.ndim) for a in attr(step, "axes", range(x.ndim))]
    scales = [1.0] * x.ndim
    out = list(x.shape)
    if sizes_in is not None:
        want = [int(v) for v in sizes_in.reshape(-1)]
        ratio = [want[i] / x.shape[a] for i, a in enumerate(axes)]
        policy = attr(step, "keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            r = min(ratio) if policy == "not_larger" else max(ratio)
            ratio = [r] * len(axes)
            want = [int(math.floor(r * x.shape[a] + 0.5)) for a in axes]
        for i, a in enumerate(axes):
            scales[a], out[a] = ratio[i], want[i]
    else:
        given = [float(v) for v in need(scales_in).reshape(-1)]
        for i, a in enumerate(axes):
            scales[a] = given[i]
            out[a] = int(math.floor(x.shape[a] * np.float32(given[i])))
    mode = {"bilinear": "linear"}.get(attr(step, "mode", "nearest"), attr(step, "mode", "nearest"))
    coord = "asymmetric" if legacy else attr(step, "coordinate_transformation_mode", "half_pixel")
    y = resize(
        x,
        tuple(out),
        mode,
        tuple(scales),
        coord,
        "floor" if legacy else attr(step, "nearest_mode", "round_prefer_floor"),
        float(attr(step, "cubic_coeff_a", -0.75)),
        bool(int(attr(step, "exclude_outside", 0))),
    )
    dt = out_dtype(step)
    if dt.kind in "iu" and y.dtype.kind == "f":
        y = np.rint(y)
    return [contiguous(y.astype(dt, copy=False))]
