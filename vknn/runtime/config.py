"""`vknn.Config`: every engine option in one dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

BACKENDS = ("vulkan", "cpu")
PRECISIONS = ("high", "normal", "low")


@dataclass
class Config:
    backends: tuple[str, ...] = ("vulkan", "cpu")
    """Backends in priority order; each op runs on the first whose gate accepts
    it. `("cpu",)` runs the whole model on the numpy oracle."""
    precision: str = "high"
    """`high` fp32; `low` fp16 storage with fp32 accumulation; `normal` low
    except the tensors a named rule keeps in fp32 (Vulkan backend)."""
    allow_cpu_fallback: bool = True
    """False turns any op the preferred backend refuses into an error naming it."""
    disable_vk_ops: str = ""
    """Comma-separated op kinds forced off the Vulkan backend, e.g. "Conv,Softmax"."""
    cache_file: str | None = None
    fastmath: str = "auto"
    autotune: str = "off"
    profiling: bool = False
    """Record timestamp queries around every Vulkan dispatch (Session.profile())."""
    pipeline: str = "standard"
    """The named compiler pipeline (vknn.transforms.pipelines)."""
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Static shapes for inputs with dynamic axes, by input name."""
    dims: dict[str, int] = field(default_factory=dict)
    """Values of symbolic dimensions, by name (e.g. {"seq": 128})."""

    def __post_init__(self) -> None:
        from vknn.errors import InvalidArgument

        if isinstance(self.backends, str):
            self.backends = (self.backends,)
        self.backends = tuple(self.backends)
        bad = [b for b in self.backends if b not in BACKENDS]
        if bad or not self.backends:
            raise InvalidArgument(
                f"Config.backends: unknown backend(s) {bad}; known: {list(BACKENDS)}"
            )
        if self.precision not in PRECISIONS:
            raise InvalidArgument(
                f"Config.precision must be one of {list(PRECISIONS)}, got '{self.precision}'"
            )
        if self.fastmath not in ("auto", "on", "off"):
            raise InvalidArgument(f"Config.fastmath must be auto, on or off, got '{self.fastmath}'")
        if self.autotune not in ("off", "fast", "thorough"):
            raise InvalidArgument(
                f"Config.autotune must be off, fast or thorough, got '{self.autotune}'"
            )

    @property
    def disabled_vk_ops(self) -> set[str]:
        return {s.strip() for s in self.disable_vk_ops.split(",") if s.strip()}
