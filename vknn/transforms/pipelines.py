"""Named pass pipelines. `standard` is the pipeline of DESIGN.md section 1,
as far as its passes exist; `vknn-opt --pipeline standard` and the compiler
use the same spec, so what the CLI runs is what you can print and replay."""

from __future__ import annotations

PIPELINES: dict[str, list[str]] = {
    "import": ["infer-shapes", "const-fold"],
    "standard": ["infer-shapes", "const-fold", "convert-onnx-to-vx"],
}


def pipeline_spec(name: str, shapes: str = "", dims: str = "") -> str:
    """The `-p` spec of a named pipeline, with input-shape declarations."""
    try:
        passes = list(PIPELINES[name])
    except KeyError:
        raise KeyError(f"unknown pipeline '{name}' (known: {', '.join(sorted(PIPELINES))})") from None
    opts = []
    if shapes:
        opts.append(f'shapes="{shapes}"')
    if dims:
        opts.append(f'dims="{dims}"')
    if opts:
        passes = [f"{p}{{{' '.join(opts)}}}" if p == "infer-shapes" else p for p in passes]
    return ",".join(passes)
