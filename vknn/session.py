"""`vknn.Session`: compile a model once per input-shape set, run it many times.

    sess = vknn.Session("model.onnx", vknn.Config(backends=("cpu",)))
    outputs = sess.run({"x": x})              # {"y": array}
    sess.node_backends()                      # {"conv1": "cpu", ...}
    sess.fallback_reasons()                   # {"conv1": "Conv: ...", ...}

The facade above both halves: an ONNX model goes through the compiler
(`vknn.compiler`: graph pipeline, lowering passes, serialization) to a
program per input-shape bucket, or comes from the model cache; a `.vxm`
holds compiled programs already. Either way the runtime
(`vknn.runtime.executable`) replays the program; a `.vxm` session imports
neither onnx nor xDSL.

Inputs are validated against the model before anything runs: a missing or
unknown name, a wrong dtype, rank or shape raises `InvalidArgument` naming
the input, what was expected and what was given. `run()` may be called from
several threads at once.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from vknn.config import Config
from vknn.errors import InvalidArgument
from vknn.runtime.report import NodeRow

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output as the model declares it: dims are ints,
    symbolic names (str) or None (unknown)."""

    name: str
    dims: tuple[int | str | None, ...] | None
    dtype: np.dtype

    def accepts(self, shape: Shape) -> bool:
        if self.dims is None:
            return True
        return len(shape) == len(self.dims) and all(
            not isinstance(d, int) or d == s for d, s in zip(self.dims, shape, strict=True)
        )

    @property
    def is_static(self) -> bool:
        return self.dims is not None and all(isinstance(d, int) for d in self.dims)


def _declared(vi: Any) -> TensorInfo:
    from onnx.helper import tensor_dtype_to_np_dtype

    tt = vi.type.tensor_type
    try:
        dtype = (
            np.dtype(tensor_dtype_to_np_dtype(tt.elem_type))
            if tt.elem_type
            else np.dtype("float32")
        )
    except (KeyError, TypeError, ValueError):
        raise InvalidArgument(
            f"graph input/output '{vi.name}' has unknown element type {tt.elem_type}"
        ) from None
    if not tt.HasField("shape"):
        return TensorInfo(vi.name, None, dtype)
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or None)
    return TensorInfo(vi.name, tuple(dims), dtype)


def _stored_info(d: dict[str, Any]) -> TensorInfo:
    """A TensorInfo from a .vxm's metadata (`{"name", "dims", "dtype"}`)."""
    dims = d.get("dims")
    return TensorInfo(
        str(d["name"]), None if dims is None else tuple(dims), np.dtype(str(d["dtype"]))
    )


def _fmt(shape: Any) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


@dataclass
class ProfileRow:
    node: str
    op: str
    kernel: str
    shape: tuple[int, ...]
    ms: float
    share: float = 0.0


def format_profile(rows: list[ProfileRow], top: int | None = None) -> str:
    total = sum(r.ms for r in rows)
    lines = [f"{'GPU ms':>8s} {'share':>6s}  {'op':18s} node (dispatch)"]
    for r in rows[:top] if top else rows:
        lines.append(f"{r.ms:8.3f} {r.share * 100:5.1f}%  {r.op:18s} {r.kernel}")
    lines.append(f"{total:8.3f} total GPU time over {len(rows)} dispatches")
    return "\n".join(lines)


@dataclass
class Bucket:
    """One compiled input-shape set: its program's executable and bucket index."""

    executable: Any
    index: int

    @property
    def program(self) -> Any:
        return self.executable.program

    @property
    def spec(self) -> Any:
        return self.executable.program.buckets[self.index]

    def close(self) -> None:
        self.executable.close()


def lowering_options(config: Config, vulkan_unavailable: str = "") -> Any:
    from vknn.compiler import LoweringOptions

    return LoweringOptions(
        precision=config.precision or "high",
        backends=tuple(config.backends),
        disable_vk_ops=config.disable_vk_ops,
        allow_cpu_fallback=config.allow_cpu_fallback,
        fold_gpu_islands=config.fold_gpu_islands,
        onnx_reference=config.onnx_reference,
        device_layout=config.device_layout,
        fastmath=config.fastmath,
        vulkan_unavailable=vulkan_unavailable,
    )


class Session:
    def __init__(
        self,
        model: str | Path | Any,
        config: Config | None = None,
        autotune_table: dict[str, dict[str, Any]] | None = None,
    ):
        """`model`: an ONNX model (path, bytes or ModelProto), compiled here
        once per input-shape bucket (`Config.shapes` / `Config.buckets`, more
        with `prepare_shapes`); or a compiled `.vxm` (path ending in .vxm, or
        a file or bytes starting with its magic), whose programs are run as
        compiled. `Config.precision` left at None means `high` for an ONNX
        model and, for a .vxm, the precision it was compiled with.

        `autotune_table` (key -> config): with `Config.autotune` on, its
        entries are used as they are and new measurements added to it."""
        from vknn.runtime.vxm import is_vxm

        self._closed = False
        self._lock = threading.Lock()
        self._cache: Any = None
        self._buckets: dict[tuple[Shape, ...], Bucket] = {}
        self._bucket: Bucket | None = None
        self._vxm: Any = None
        self._proto: Any = None
        self._base_dir: Path | None = None
        self.autotune_table: dict[str, dict[str, Any]] = (
            autotune_table if autotune_table is not None else {}
        )
        self._given_table = autotune_table
        self.autotune_report: Any = None
        """What the autotuner measured when this session compiled (`vknn.tuning`)."""
        if is_vxm(model):
            self._open_vxm(model, config)
            return
        if isinstance(model, str | Path) and str(model).endswith(".mlir"):
            self._open_text(Path(model), config)
            return
        self.config = _with_precision(config or Config(), "high")
        self._target_info = self._target()
        self._path: Path | None = None
        if isinstance(model, str | Path):
            self._path = Path(model)
            self._base_dir, self._name = self._path.parent, str(self._path)
            self._open_cache(self._path)
            if self._open_warm():
                return
        elif isinstance(model, bytes):
            from vknn.frontend.loader import load_model_bytes

            self._proto, self._name = load_model_bytes(model), "<bytes>"
        else:
            self._proto, self._name = model, "<model>"
        self._read_io()
        for shapes in self._initial_shapes():
            self._prepare(shapes)

    # -- loading -----------------------------------------------------------

    def _open_vxm(self, model: Any, config: Config | None) -> None:
        from vknn.runtime.vxm import decode_vxm, load_vxm

        if isinstance(model, bytes | bytearray):
            vxm = decode_vxm(bytes(model), "<bytes>")
        else:
            vxm = load_vxm(model)
        self._vxm = vxm
        self._name = vxm.path
        cfg = config or Config()
        device = None
        if "vulkan" in cfg.backends:
            from vknn.runtime.vulkan.context import shared_device

            device, _, _ = shared_device(cfg.device)
        program = vxm.select(device.caps if device is not None else None, "vulkan" in cfg.backends)
        if device is not None and program.kernels:
            from vknn.runtime.spirv_check import check_program

            check_program(program, vxm.path)  # a .vxm is untrusted: SPIR-V checked once
        self._open_program(program, config)

    def _open_program(self, program: Any, config: Config | None) -> None:
        """A session on a compiled program (a .vxm variant, or printed vkd)."""
        self.config = _with_precision(config or Config(), program.precision)
        if config is not None and config.precision not in (None, program.precision):
            raise InvalidArgument(
                f"{self._name} was compiled for precision {program.precision!r}; "
                f"Config.precision={config.precision!r} needs a recompile "
                f"(`vknn compile <model.onnx> -o {self._name} --precision {config.precision}`)"
            )
        meta = program.metadata
        if meta.get("inputs"):
            self.inputs = [_stored_info(d) for d in meta.get("inputs", ())]
            self.outputs = [_stored_info(d) for d in meta.get("outputs", ())]
        else:  # printed IR: the first bucket's shapes
            b0 = program.buckets[0]
            self.inputs = [TensorInfo(io.name, io.shape, np.dtype(io.dtype)) for io in b0.inputs]
            self.outputs = [TensorInfo(io.name, io.shape, np.dtype(io.dtype)) for io in b0.outputs]
        exe = self._executable(program)
        for i, _ in enumerate(program.buckets):
            self._register(Bucket(exe, i))
        wanted = [b for b in self._initial_shapes() if b]
        for shapes in wanted:
            key = self._key_of(shapes)
            if key not in self._buckets:
                raise InvalidArgument(
                    f"Config.shapes/buckets ask for {self._fmt_shapes(shapes)}, which "
                    f"{self._name} was not compiled for; {self._recompile_hint(shapes)}"
                )

    def _open_text(self, path: Path, config: Config | None) -> None:
        """Printed IR (`vknn compile --emit-vkd -o m.vkd.mlir`, edited or not):
        the rest of the lowering pipeline, then its program."""
        from vknn.compiler import finish_text
        from vknn.runtime.program import Program

        self._name = str(path)
        self._vxm = path  # compiled: no new buckets
        program = Program.decode(finish_text(path))
        self._open_program(program, config)

    def _executable(self, program: Any) -> Any:
        from vknn.runtime.executable import Executable

        device = pipelines = None
        if any(
            s.__class__.__name__ == "VulkanSegment" for b in program.buckets for s in b.segments
        ):
            from vknn.runtime.vulkan.context import shared_device

            device, pipelines, why = shared_device(self.config.device)
            if device is None:
                raise InvalidArgument(
                    f"{self._name} runs on Vulkan and there is no Vulkan device ({why}); "
                    "compile it with `--backends cpu` to run on the CPU"
                )
        return Executable(
            program,
            device,
            pipelines,
            profiling=self.config.profiling,
            contexts=self.config.contexts,
        )

    def _ensure_proto(self) -> Any:
        """The ONNX model, parsed on first need (a warm cache never needs it)."""
        if self._proto is None:
            from vknn.frontend.loader import load_model_file

            assert self._path is not None
            self._proto = load_model_file(self._path)
        return self._proto

    def _read_io(self) -> None:
        g = self._ensure_proto().graph
        inits = {t.name for t in g.initializer}
        self.inputs = [_declared(vi) for vi in g.input if vi.name not in inits]
        self.outputs = [_declared(vi) for vi in g.output]

    def _variant_key(self) -> str:
        """What a compiled program depends on besides the model and shapes."""
        import hashlib

        c = self.config
        target, unavailable = self._target_info
        key = (
            c.precision, tuple(c.backends), c.disable_vk_ops, c.allow_cpu_fallback,
            c.fold_gpu_islands, c.onnx_reference, c.device_layout, c.fastmath, c.autotune,
            c.pipeline,
            tuple(sorted(c.dims.items())), target.to_dict() if target else None, unavailable,
            os.environ.get("VKNN_COOPMAT_CONV"),
        )  # fmt: skip
        return hashlib.sha256(repr(key).encode()).hexdigest()[:32]

    @staticmethod
    def _bucket_key(shapes: dict[str, Shape] | None) -> str:
        return repr(sorted((shapes or {}).items()))

    def _open_cache(self, model_path: Path) -> None:
        from vknn.model_cache import ModelCache

        self._cache = ModelCache.open_for(self.config, model_path, self._variant_key())
        if self._cache is None:
            return
        if self._given_table is None:
            # The tuner fills the cached table in place: a warm session measures nothing.
            self.autotune_table = self._cache.variant.autotune
        blob = self._cache.variant.pipeline_cache
        if blob and self._target_info[0] is not None:
            from vknn.runtime.vulkan.context import shared_device

            _, pipelines, _ = shared_device(self.config.device)
            if pipelines is not None:
                pipelines.cache.merge(blob)  # a foreign blob is refused by the driver

    def _open_warm(self) -> bool:
        """Every initial bucket from the model cache: no ONNX parsing, no
        compiler (False when something is missing)."""
        from vknn.runtime.program import Program, ProgramError

        cache = self._cache
        if cache is None or not cache.variant.io:
            return False
        wanted = self._initial_shapes()
        found = [cache.program(self._bucket_key(s)) for s in wanted]
        if any(p is None for p in found):
            return False
        try:
            programs = [Program.decode(p) for p in found]
            io = cache.variant.io
            inputs = [_stored_info(d) for d in io.get("inputs", ())]
            outputs = [_stored_info(d) for d in io.get("outputs", ())]
        except (ProgramError, KeyError, TypeError, ValueError, AttributeError):
            return False  # malformed entries are compiled again, never trusted
        first = programs[0].buckets[0]
        if [i.name for i in inputs] != [i.name for i in first.inputs] or [
            o.name for o in outputs
        ] != [o.name for o in first.outputs]:
            return False  # declared names that are not the program's: compiled again
        self.inputs, self.outputs = inputs, outputs
        for program in programs:
            self._register(Bucket(self._executable(program), 0))
        return True

    # -- compiling ---------------------------------------------------------

    def _default_shapes(self) -> dict[str, Shape] | None:
        return dict(self.config.shapes) if self.config.shapes else None

    def _initial_shapes(self) -> list[dict[str, Shape] | None]:
        if not self.config.buckets:
            return [self._default_shapes()]
        return [{**self.config.shapes, **b} for b in self.config.buckets]

    def prepare_shapes(self, shapes: dict[str, Shape]) -> None:
        """Compile an additional bucket for these input shapes (ONNX sessions
        only: a .vxm holds the buckets it was compiled with)."""
        for name in shapes:
            if name not in {i.name for i in self.inputs}:
                raise InvalidArgument(
                    f"prepare_shapes: unknown input '{name}' (inputs: {self._input_names()})"
                )
        shapes = {k: tuple(int(d) for d in v) for k, v in shapes.items()}
        if self._vxm is not None:
            raise InvalidArgument(
                f"prepare_shapes({self._fmt_shapes(shapes)}): {self._name} is a compiled .vxm "
                f"model with buckets [{self._available()}] and cannot compile new ones; "
                + self._recompile_hint(shapes)
            )
        self._prepare(shapes)

    def _prepare(self, shapes: dict[str, Shape] | None) -> Bucket:
        from vknn.runtime.program import Program

        key = self._bucket_key(shapes)
        data = self._cache.program(key) if self._cache is not None else None
        program = None
        if data is not None:
            try:
                program = Program.decode(data)
            except Exception:  # a stale entry is rebuilt, never trusted
                program = None
            if program is not None and self._cache.variant.io != self._metadata():
                self._cache.variant.io = self._metadata()  # repaired from the parsed model
                self._cache.dirty = True
        if program is None:
            data = self._compile(shapes)
            program = Program.decode(data)
            if self._cache is not None:
                self._cache.store_program(key, data, self._metadata())
                self._cache.set_external(self._external_files())
        bucket = Bucket(self._executable(program), 0)
        self._register(bucket)
        return bucket

    def _external_files(self) -> list[Path]:
        """The external-data files the model reads (the loader checked each)."""
        from vknn.frontend.loader import resolve_external_path

        out: list[Path] = []
        proto = self._ensure_proto()
        for t in proto.graph.initializer:
            if t.data_location == t.EXTERNAL and self._base_dir is not None:
                loc = {e.key: e.value for e in t.external_data}.get("location", "")
                p = resolve_external_path(loc, self._base_dir, t.name)
                if p not in out:
                    out.append(p)
        return out

    def _target(self) -> tuple[Any, str]:
        """(the target to compile for, why there is no Vulkan device)."""
        if "vulkan" not in self.config.backends:
            return None, ""
        from vknn.runtime.target import from_caps
        from vknn.runtime.vulkan.context import shared_device

        device, _, why = shared_device(self.config.device)
        if device is None:
            return None, why or "no Vulkan device"
        return from_caps(device.caps), ""

    def _compile(self, shapes: dict[str, Shape] | None) -> dict[str, Any]:
        from vknn.compiler import compile_module, release_weights
        from vknn.frontend import import_model

        target, unavailable = self._target_info
        module = import_model(self._ensure_proto(), base_dir=self._base_dir, name=self._name)
        tune = self._tune if self.config.autotune != "off" and target is not None else None
        from vknn.hints import DECLARE_SYNTAX

        # Hints in Config terms, unless a caller (the CLI) chose its own.
        token = DECLARE_SYNTAX.set("config") if DECLARE_SYNTAX.get() == "pass" else None
        try:
            return compile_module(
                module,
                lowering_options(self.config, unavailable),
                target,
                pipeline=self.config.pipeline,
                shapes=shapes,
                dims=dict(self.config.dims),
                metadata=self._metadata(),
                before_convert=tune,
            )
        finally:
            if token is not None:
                DECLARE_SYNTAX.reset(token)
            release_weights(module)

    def _tune(self, module: Any) -> None:
        """Autotune the module's kernels on this device (`vknn.tuning`)."""
        from vknn.kernels.spirv import fastmath_enabled
        from vknn.runtime.vulkan.context import shared_device
        from vknn.transforms.target_option import module_target
        from vknn.tuning import tune_module

        device, pipelines, _ = shared_device(self.config.device)
        fast = fastmath_enabled(self.config.fastmath, module_target(module))
        self.autotune_report = tune_module(
            module, device, pipelines, self.config.autotune, self.autotune_table, fast
        )

    def _metadata(self) -> dict[str, Any]:
        def info(t: TensorInfo) -> dict[str, Any]:
            return {"name": t.name, "dims": None if t.dims is None else list(t.dims),
                    "dtype": t.dtype.name}  # fmt: skip

        return {
            "inputs": [info(i) for i in self.inputs],
            "outputs": [info(o) for o in self.outputs],
        }

    def _register(self, bucket: Bucket) -> None:
        key = bucket.spec.key
        old = self._buckets.get(key)
        self._buckets[key] = bucket
        if old is not None and old.executable is not bucket.executable:
            old.close()
        if self._bucket is None:
            self._bucket = bucket

    # -- teardown ------------------------------------------------------------

    def close(self) -> None:
        """Wait for runs in flight, release device resources and write the
        model cache if this session added to it. `run` after it is an error."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        cache = getattr(self, "_cache", None)
        if cache is not None:
            if cache.ran and self._target_info[0] is not None:
                from vknn.runtime.vulkan.context import shared_device

                _, pipelines, _ = shared_device(self.config.device)
                if pipelines is not None:
                    cache.store_pipeline_cache(pipelines.cache.data())
            cache.save()
        seen: set[int] = set()
        for b in getattr(self, "_buckets", {}).values():
            if id(b.executable) not in seen:
                seen.add(id(b.executable))
                b.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _input_names(self) -> str:
        return ", ".join(i.name for i in self.inputs)

    # -- running -----------------------------------------------------------

    def _select(self, inputs: dict[str, np.ndarray]) -> Bucket:
        if self._closed or self._bucket is None:
            raise InvalidArgument("the session is closed")
        first = self._bucket
        if len(self._buckets) == 1:
            if all(inputs[io.name].shape == io.shape for io in first.spec.inputs):
                return first  # the zero-lookup fast path
        key = tuple(tuple(inputs[io.name].shape) for io in first.spec.inputs)
        found = self._buckets.get(key)
        if found is not None:
            return found
        raise InvalidArgument(self._shape_mismatch(inputs))

    def _shape_mismatch(self, inputs: dict[str, np.ndarray]) -> str:
        spec = self.bucket_inputs
        for name, shape in spec.items():
            got = inputs[name].shape
            if len(got) != len(shape):
                return (
                    f"input '{name}': expected rank {len(shape)} {_fmt(shape)}, "
                    f"got rank {len(got)} {_fmt(got)}"
                )
        given = {name: tuple(inputs[name].shape) for name in spec}
        hint = "Add one with Session.prepare_shapes({...})"
        if self._vxm is not None:
            hint = "R" + self._recompile_hint(given)[1:]
        return (
            f"no plan for input shapes {self._fmt_shapes(given)}; "
            f"available: {self._available()}. {hint}"
        )

    @staticmethod
    def _fmt_shapes(shapes: dict[str, Shape]) -> str:
        return ", ".join(f"{name}={_fmt(shape)}" for name, shape in shapes.items())

    def _available(self) -> str:
        names = list(self.bucket_inputs)
        return "; ".join(
            self._fmt_shapes(dict(zip(names, key, strict=True))) for key in self._buckets
        )

    def _key_of(self, shapes: dict[str, Shape]) -> tuple[Shape, ...]:
        return tuple(tuple(shapes.get(n, s)) for n, s in self.bucket_inputs.items())

    def _recompile_hint(self, shapes: dict[str, Shape]) -> str:
        bucket = ",".join(f"{k}={'x'.join(str(d) for d in v)}" for k, v in shapes.items())
        return (
            f'recompile with `vknn compile <model.onnx> -o {self._name} --bucket "{bucket}"` '
            "(one --bucket per input-shape set)"
        )

    def _validate(self, inputs: Any) -> dict[str, np.ndarray]:
        if not isinstance(inputs, dict):
            raise InvalidArgument(
                f"run() takes a dict of input name -> numpy array, got {type(inputs).__name__}"
            )
        known = {i.name: i for i in self.inputs}
        missing = [n for n in known if n not in inputs]
        if missing:
            raise InvalidArgument(
                f"missing input(s) {', '.join(repr(m) for m in missing)}; "
                f"the model's inputs are: {self._input_names()}"
            )
        unknown = [n for n in inputs if n not in known]
        if unknown:
            raise InvalidArgument(
                f"unknown input(s) {', '.join(repr(u) for u in unknown)}; "
                f"the model's inputs are: {self._input_names()}"
            )
        from vknn.runtime.executable import DeviceTensor

        checked: dict[str, np.ndarray] = {}
        for name, value in inputs.items():
            info = known[name]
            if isinstance(value, DeviceTensor):  # io-binding: stays on the device
                if value.dtype != info.dtype or not info.accepts(value.shape):
                    raise InvalidArgument(
                        f"input '{name}': expected {info.dtype}{_fmt(info.dims or ())}, got a "
                        f"device tensor {value.dtype}{_fmt(value.shape)}"
                    )
                checked[name] = value  # type: ignore[assignment]
                continue
            if not isinstance(value, np.ndarray | np.generic):
                raise InvalidArgument(
                    f"input '{name}': expected a numpy array, got {type(value).__name__}"
                )
            value = np.asarray(value)
            if value.dtype != info.dtype:
                raise InvalidArgument(
                    f"input '{name}': expected dtype {info.dtype}, got {value.dtype}"
                )
            if not info.accepts(value.shape):
                raise InvalidArgument(
                    f"input '{name}': expected shape {_fmt(info.dims or ())}, "
                    f"got {_fmt(value.shape)}"
                )
            checked[name] = value
        return checked

    def run(
        self,
        inputs: dict[str, np.ndarray],
        output_names: list[str] | None = None,
        *,
        device_outputs: dict[str, Any] | None = None,
        trace: list[Any] | None = None,
    ) -> dict[str, np.ndarray]:
        """`device_outputs` (output name -> a `DeviceTensor` to write, or None
        for a new one) keeps those outputs on the device; `trace` (a list)
        gets this run's timed rows (`runtime.executable`)."""
        feeds = self._validate(inputs)
        bucket = self._select(feeds)
        if output_names is not None:
            known = [io.name for io in bucket.spec.outputs]
            for name in output_names:
                if name not in known:
                    raise InvalidArgument(
                        f"unknown output '{name}'; outputs are: {', '.join(known)}"
                    )
        out = bucket.executable.run(bucket.index, feeds, device_outputs=device_outputs, trace=trace)
        if self._cache is not None:
            self._cache.ran = True
        if output_names is None:
            return out
        return {n: out[n] for n in output_names}

    # -- profiling ---------------------------------------------------------

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Inputs of the first bucket's shapes: normal floats, zero integers."""
        rng = np.random.default_rng(seed)
        out = {}
        for io in self.bucket.spec.inputs:
            dt = np.dtype(io.dtype)
            out[io.name] = (
                rng.standard_normal(io.shape).astype(dt)
                if dt.kind == "f"
                else np.zeros(io.shape, dt)
            )
        return out

    def profile(
        self, inputs: dict[str, np.ndarray] | None = None, runs: int = 10
    ) -> list[ProfileRow]:
        """Per-dispatch GPU time from timestamp queries (Config(profiling=True)),
        the median over `runs` inferences, slowest first; one row per
        `vkd.dispatch` of the program, named by its label."""
        if not self.config.profiling:
            raise InvalidArgument("profile() needs a session created with Config(profiling=True)")
        feeds = self._validate(inputs if inputs is not None else self.random_inputs())
        bucket = self._select(feeds)
        samples: dict[tuple[int, int], list[float]] = {}
        recs: dict[tuple[int, int], Any] = {}
        for _ in range(max(1, runs)):
            rows: list[Any] = []
            bucket.executable.run(bucket.index, feeds, profile=rows)
            for seg, rec, ns in rows:
                samples.setdefault((seg, rec.index), []).append(ns / 1e6)
                recs[seg, rec.index] = rec
        out = []
        for key, times in samples.items():
            rec = recs[key]
            out.append(ProfileRow(rec.nodes, rec.kind, rec.label, (), float(np.median(times))))
        total = sum(r.ms for r in out) or 1.0
        for r in out:
            r.share = r.ms / total
        return sorted(out, key=lambda r: -r.ms)

    # -- reports -----------------------------------------------------------

    @property
    def bucket(self) -> Bucket:
        """The first (default) bucket."""
        if self._bucket is None:
            raise InvalidArgument("the session is closed")
        return self._bucket

    @property
    def program(self) -> Any:
        """The first bucket's compiled program (`vknn.runtime.program.Program`)."""
        return self.bucket.program

    @property
    def bucket_inputs(self) -> dict[str, Shape]:
        """The first bucket's input shapes by name."""
        return {io.name: io.shape for io in self.bucket.spec.inputs}

    def dispatch_count(self) -> int:
        """Dispatches the first bucket records (what `vknn run --profile` reports)."""
        from vknn.runtime.program import VulkanSegment

        return sum(s.dispatches for s in self.bucket.spec.segments if isinstance(s, VulkanSegment))

    def node_report(self) -> list[NodeRow]:
        """Every ONNX node of the model (first bucket): where it runs
        (`vulkan`, `cpu`, `onnx-reference`, joined by '+' if split), or
        `folded` / `eliminated`, and why it is off the preferred backend
        (`vknn.runtime.report`: the source of every report)."""
        from vknn.runtime.report import node_rows

        return node_rows(self.bucket.spec.nodes, self.config.backends[0])

    def node_backends(self) -> dict[str, str]:
        """ONNX node name -> the backend its ops run on (joined by '+' if
        split), for every node that runs (see `node_report` for the rest)."""
        return {r.name: r.backend for r in self.node_report() if r.runs}

    def fallback_reasons(self) -> dict[str, str]:
        """ONNX node name -> why it is not (only) on the preferred backend:
        an entry for every such node."""
        return {r.name: r.reason for r in self.node_report() if r.reason}


def _with_precision(config: Config, default: str) -> Config:
    """`config` with Config.precision None resolved to `default` (a copy)."""
    if config.precision is not None:
        return config
    return replace(config, precision=default)
