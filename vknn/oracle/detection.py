"""CPU kernel of NonMaxSuppression: per batch and class, boxes above the
score threshold in descending score order (ties: lower index first), each
kept unless its IoU with a box already kept exceeds the IoU threshold, at
most max_output_boxes_per_class; corner boxes in any corner order, or
center_point_box=1 [xc, yc, w, h]. Output [n, 3] = (batch, class, box)."""

from __future__ import annotations

import numpy as np

from vknn.oracle.onnx_common import Array, attr, need, scalar
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _corners(boxes: Array, center: bool) -> Array:
    """[N, 4] as [y1, x1, y2, x2] with y1 <= y2, x1 <= x2."""
    b = boxes.astype(np.float64)
    if center:
        xc, yc, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=1)
    y = np.sort(b[:, [0, 2]], axis=1)
    x = np.sort(b[:, [1, 3]], axis=1)
    return np.stack([y[:, 0], x[:, 0], y[:, 1], x[:, 1]], axis=1)


def _iou(box: Array, others: Array) -> Array:
    ih = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    iw = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    inter = np.where((ih > 0) & (iw > 0), ih * iw, 0.0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    ok = (area > 0) & (areas > 0) & (union > 0) & (inter > 0)
    return np.where(ok, inter / np.where(union > 0, union, 1), 0.0)


@register("onnx.NonMaxSuppression")
def non_max_suppression(step: Step, inputs: list[Array | None]) -> list[Array]:
    boxes, scores = need(inputs[0]), need(inputs[1])
    opt = [inputs[i] if len(inputs) > i else None for i in (2, 3, 4)]
    limit = int(scalar(opt[0], 0)) if opt[0] is not None and opt[0].size else 0
    iou_max = float(scalar(opt[1], 0.0)) if opt[1] is not None and opt[1].size else 0.0
    floor = float(scalar(opt[2])) if opt[2] is not None and opt[2].size else None
    center = bool(int(attr(step, "center_point_box", 0)))
    picked: list[tuple[int, int, int]] = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b], center)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            idx = np.arange(s.shape[0]) if floor is None else np.nonzero(s > floor)[0]
            idx = idx[np.argsort(-s[idx].astype(np.float64), kind="stable")]
            kept: list[int] = []
            for i in idx:
                if len(kept) >= limit:
                    break
                if kept and np.any(_iou(corners[i], corners[kept]) > iou_max):
                    continue
                kept.append(int(i))
            picked += [(b, c, i) for i in kept]
    return [np.array(picked, dtype=np.int64).reshape(-1, 3)]
