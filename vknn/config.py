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
    precision: str | None = None
    """`high` fp32; `low` fp16 storage with fp32 accumulation (stores round to
    nearest even, saturate at +-65504); `normal` low except the tensors a named
    rule keeps in fp32 (Vulkan backend; `vknn.kernels.precision_rules`:
    softmax_io, layernorm_io, sum_out), converted where fp16 steps meet them.
    None (the default): `high` for an ONNX model, the compiled precision for a
    .vxm; a Session resolves it, so `session.config.precision` is never None."""
    allow_cpu_fallback: bool = True
    """False turns any op the preferred backend refuses into an error naming it."""
    disable_vk_ops: str = ""
    """Comma-separated op kinds forced off the Vulkan backend, e.g. "Conv,Softmax"."""
    fold_gpu_islands: int = 2
    """Runs of at most this many cheap Vulkan ops between two CPU ops run on
    the CPU instead (saves a download/submit/upload round trip); 0 turns the
    hint off. Never applied with allow_cpu_fallback=False, and the support
    report counts fallbacks without it."""
    onnx_reference: bool = False
    """Opt-in: run `onnx.*` ops that have no CPU kernel of our own (control
    flow, sequences...) through ONNX's reference implementation (slow; backend
    `onnx-reference`). Off: such an op is a one-line error at compile time."""
    cache_file: str | None = None
    """The model cache file (vknn.model_cache): None = `<model>.vkcache` next
    to a model file (off for in-memory models, or with VKNN_MODEL_CACHE=0);
    "off" = no cache; else this path."""
    device_layout: str = "nc4hw4"
    """How the Vulkan backend stores CNN tensors: "nc4hw4" honours the
    compiler's layout labels (rank-4 float tensors of ops with NC4HW4 kernels
    are stored [N, C/4, H, W, 4]; runtime.vulkan.layouts), "flat" stores every
    device tensor row-major."""
    fastmath: str = "auto"
    """FPFastMathDefault kernels (vknn.kernels.spirv): auto/on where the device has
    float_controls2, off never."""
    autotune: str = "off"
    """Measure conv/matmul configurations on the device at the first plan
    ("fast" or "thorough"; vknn.tuning); the winners are cached."""
    profiling: bool = False
    """Record timestamp queries around every Vulkan dispatch (Session.profile())."""
    contexts: int = 2
    """Execution contexts per session (device memory and command buffers of
    their own): runs from several threads overlap up to this many at once;
    more wait. The first is made at creation, the others on demand."""
    device: int | str | None = None
    """The Vulkan device (`vknn devices` lists them): an index or a substring
    of the name; None = env VKNN_DEVICE, else the first discrete GPU,
    integrated, virtual, then CPU. One that names no device is an error
    listing the devices."""
    pipeline: str = "standard"
    """The named compiler pipeline (vknn.transforms.pipelines)."""
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Static shapes for inputs with dynamic axes, by input name."""
    dims: dict[str, int] = field(default_factory=dict)
    """Values of symbolic dimensions, by name (e.g. {"seq": 128})."""
    buckets: list[dict[str, tuple[int, ...]]] = field(default_factory=list)
    """Input-shape sets to compile a plan for at creation, e.g.
    [{"x": (1, 3, 224, 224)}, {"x": (4, 3, 224, 224)}]; the first is the
    default. `shapes` fills the inputs a bucket leaves out."""

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
        if self.precision is not None and self.precision not in PRECISIONS:
            raise InvalidArgument(
                f"Config.precision must be one of {list(PRECISIONS)}, got '{self.precision}'"
            )
        self.buckets = [_bucket(b, i) for i, b in enumerate(self.buckets)]
        if self.fastmath not in ("auto", "on", "off"):
            raise InvalidArgument(f"Config.fastmath must be auto, on or off, got '{self.fastmath}'")
        if self.device_layout not in ("nc4hw4", "flat"):
            raise InvalidArgument(
                f"Config.device_layout must be nc4hw4 or flat, got '{self.device_layout}'"
            )
        if not isinstance(self.contexts, int) or self.contexts < 1:
            raise InvalidArgument(f"Config.contexts must be a positive int, got {self.contexts!r}")
        if self.device is not None and not isinstance(self.device, int | str):
            raise InvalidArgument(
                f"Config.device must be an index or a name substring, got {self.device!r}"
            )
        if self.autotune not in ("off", "fast", "thorough"):
            raise InvalidArgument(
                f"Config.autotune must be off, fast or thorough, got '{self.autotune}'"
            )

    @property
    def disabled_vk_ops(self) -> set[str]:
        return {s.strip() for s in self.disable_vk_ops.split(",") if s.strip()}


def _bucket(b: object, index: int) -> dict[str, tuple[int, ...]]:
    """Config.buckets[index] as {name: tuple of ints}, or InvalidArgument."""
    from vknn.errors import InvalidArgument

    try:
        if not isinstance(b, dict) or not b:
            raise TypeError
        return {str(k): tuple(int(d) for d in v) for k, v in b.items()}
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"Config.buckets[{index}] must be a non-empty dict of input name -> shape "
            f"(a tuple of ints), got {b!r}"
        ) from None
