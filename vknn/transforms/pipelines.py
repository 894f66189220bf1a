"""Named pass pipelines. `standard` is the pipeline of DESIGN.md section 1,
as far as its passes exist; `vknn-opt --pipeline standard` and the compiler
use the same spec, so what the CLI runs is what you can print and replay."""

from __future__ import annotations

PIPELINES: dict[str, list[str]] = {
    "import": ["infer-shapes", "const-fold"],
    "lower": ["dequantize", "infer-shapes", "const-fold", "convert-onnx-to-vx"],
    "standard": [
        "dequantize",
        "infer-shapes",
        "const-fold",
        "convert-onnx-to-vx",
        "fold-batchnorm",
        "lower-batchnorm",
        "subpixel-conv-transpose",
        "lower-conv",
        "fold-nan-guard",
        "dce",
        "fuse-attention",
        "sink-reshapes",
        "fuse-pointwise",
        "assign-layouts",
        "dce",
        "prune-initializers",
    ],
    # vx -> final vkd (the target comes from the module or `target=`).
    "vkd": [
        "split-large-gemms",
        "partition",
        "merge-epilogues",
        "fold-views",
        "assign-storage",
        "convert-vx-to-vkd",
        "plan-memory",
        "insert-barriers",
    ],
}
PIPELINES["full"] = PIPELINES["standard"] + PIPELINES["vkd"]


def pipeline_spec(name: str, shapes: str = "", dims: str = "", target: str = "") -> str:
    """The `-p` spec of a named pipeline (or of an explicit pass list such as
    `"infer-shapes,const-fold,convert-onnx-to-vx,dce"`), with the input-shape
    declarations given to its infer-shapes and `target` to its first
    lowering pass (`vkd`, `full`)."""
    if name in PIPELINES:
        passes = list(PIPELINES[name])
    elif "," in name or "{" in name or "-" in name:
        passes = [p.strip() for p in _split_spec(name)]
    else:
        raise KeyError(f"unknown pipeline '{name}' (known: {', '.join(sorted(PIPELINES))})")
    opts = []
    if shapes:
        opts.append(f'shapes="{shapes}"')
    if dims:
        opts.append(f'dims="{dims}"')
    if opts:
        passes = [f"{p}{{{' '.join(opts)}}}" if p == "infer-shapes" else p for p in passes]
    if target:
        passes = [f'{p}{{target="{target}"}}' if p == "split-large-gemms" else p for p in passes]
    return ",".join(passes)


def _split_spec(spec: str) -> list[str]:
    """Split a pass list on the commas that are not inside `{...}` options."""
    parts, depth, cur = [], 0, ""
    for ch in spec:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p for p in (*parts, cur) if p.strip()]
