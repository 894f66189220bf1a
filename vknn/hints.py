"""How a hint in an error or warning spells a declaration the user should
make: as pass options (`infer-shapes{dims="seq=N"}`, for `vknn-opt` and
pipeline specs), as CLI flags (`--dims seq=N`, set by `vknn compile/run`) or
as `vknn.Config` fields (set by `vknn.Session`). A context variable, so the
compiler code that raises never needs to know who called it. Imports
nothing (the CLI reads it on a model-cache hit, with no compiler loaded)."""

from __future__ import annotations

from contextvars import ContextVar

DECLARE_SYNTAX: ContextVar[str] = ContextVar("vknn_declare_syntax", default="pass")
""""pass", "cli" or "config"."""


def declare_hint(param: str, name: str, shape: str = "...") -> str:
    """How to declare dim `param` (else input `name`'s whole shape)."""
    style = DECLARE_SYNTAX.get()
    if param:
        return {
            "cli": f"--dims {param}=N",
            "config": f'vknn.Config(dims={{"{param}": N}})',
        }.get(style, f'infer-shapes{{dims="{param}=N"}}')
    return {
        "cli": f'--shapes "{name}={shape}"',
        "config": f'vknn.Config(shapes={{"{name}": ({shape.replace("x", ", ")})}})',
    }.get(style, f'infer-shapes{{shapes="{name}={shape}"}}')
