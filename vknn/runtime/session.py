"""`vknn.Session`: compile a model once per input-shape set, run it many times.

    sess = vknn.Session("model.onnx", vknn.Config(backends=("cpu",)))
    outputs = sess.run({"x": x})              # {"y": array}
    sess.node_backends()                      # {"conv1": "cpu", ...}
    sess.fallback_reasons()                   # {"conv1": "Conv: ...", ...}

Inputs are validated against the model before anything runs: a missing or
unknown name, a wrong dtype, rank or shape raises `InvalidArgument` naming
the input, what was expected and what was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto

from vknn.errors import InvalidArgument
from vknn.runtime.config import Config
from vknn.runtime.partition import Segment
from vknn.runtime.plan import Plan

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
    dtype = (
        np.dtype(tensor_dtype_to_np_dtype(tt.elem_type)) if tt.elem_type else np.dtype("float32")
    )
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


def _with_precision(config: Config, default: str) -> Config:
    """`config` with Config.precision None resolved to `default` (a copy: the
    caller's Config is left as given)."""
    if config.precision is not None:
        return config
    from dataclasses import replace

    return replace(config, precision=default)


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
    lines = [f"{'GPU ms':>8s} {'share':>6s}  {'op':18s} {'shape':22s} node (kernel)"]
    for r in rows[:top] if top else rows:
        shape = "x".join(str(d) for d in r.shape)
        lines.append(f"{r.ms:8.3f} {r.share * 100:5.1f}%  {r.op:18s} {shape:22s} {r.kernel}")
    lines.append(f"{total:8.3f} total GPU time over {len(rows)} dispatches")
    return "\n".join(lines)


@dataclass
class Bucket:
    """One compiled input-shape set: its plan, segments and Vulkan executors."""

    plan: Plan
    segments: list[Segment]
    executors: dict[int, Any]
    """segment index -> VulkanExecutor"""
    free_after: list[list[int]]
    """segment index -> slots no later segment reads (freed after it runs)"""

    def close(self) -> None:
        for ex in self.executors.values():
            ex.close()
        self.executors.clear()


def _step_nodes(step: Any) -> list[str]:
    """Every ONNX node a step computes: itself, fused members, its epilogue's."""
    nodes = [step.node]
    for key in ("vx.fused_names",):
        nodes += [n for n in step.attrs.get(key, ()) if n not in nodes]
    epi = step.attrs.get("vk.epilogue")
    if isinstance(epi, dict):
        nodes += [n for n in epi.get("nodes", ()) if n not in nodes]
    return nodes


class Session:
    def __init__(
        self,
        model: str | Path | ModelProto | bytes,
        config: Config | None = None,
        autotune_table: dict[str, dict[str, Any]] | None = None,
    ):
        """`model`: an ONNX model (path, bytes or ModelProto), compiled here
        once per input-shape bucket (`Config.shapes` / `Config.buckets`, more
        with `prepare_shapes`); or a compiled `.vxm` (path ending in .vxm, or
        a file or bytes starting with its magic), whose buckets are loaded as
        compiled, without the compiler or xDSL. `Config.precision` left at
        None means `high` for an ONNX model and, for a .vxm, the precision it
        was compiled with (`vknn compile --precision`); an explicit value wins.
        A .vxm's pipeline and dims are fixed at compile time.

        `autotune_table` (key -> config, e.g. from a cache): with
        `Config.autotune` on, its entries are used as they are and the new
        measurements are added to it; `self.autotune_table` is that dict."""
        from vknn.runtime.vxm import is_vxm

        self._cache: Any = None
        self._given_table = autotune_table
        self.autotune_table: dict[str, dict[str, Any]] = (
            autotune_table if autotune_table is not None else {}
        )
        self._vxm: Any = None
        if is_vxm(model):
            self._open_vxm(model, config)  # type: ignore[arg-type]
            return
        from vknn.frontend.loader import load_model_bytes, load_model_file

        self.config = _with_precision(config or Config(), "high")
        if isinstance(model, ModelProto):
            self._proto, self._base_dir, self._name = model, None, "<model>"
        elif isinstance(model, bytes):
            self._proto, self._base_dir, self._name = load_model_bytes(model), None, "<bytes>"
        else:
            path = Path(model)
            self._proto, self._base_dir, self._name = load_model_file(path), path.parent, str(path)
        self._open_cache(None if isinstance(model, ModelProto | bytes) else Path(model))
        g = self._proto.graph
        inits = {t.name for t in g.initializer}
        self.inputs = [_declared(vi) for vi in g.input if vi.name not in inits]
        self.outputs = [_declared(vi) for vi in g.output]
        self._buckets: dict[tuple[Shape, ...], Bucket] = {}
        self._bucket: Bucket | None = None
        for shapes in self._initial_shapes():
            self._prepare(shapes)

    def _open_vxm(self, model: str | Path | bytes, config: Config | None) -> None:
        """Load a compiled .vxm: its plans become the buckets, as compiled."""
        from vknn.runtime.vxm import decode_vxm, load_vxm

        if isinstance(model, bytes | bytearray):
            vxm = decode_vxm(bytes(model), "<bytes>")
        else:
            vxm = load_vxm(model)
        self._vxm = vxm
        self._proto, self._base_dir, self._name = None, None, vxm.path
        self.config = _with_precision(config or Config(), vxm.precision)
        meta = vxm.metadata
        self.inputs = [_stored_info(d) for d in meta.get("inputs", ())]
        self.outputs = [_stored_info(d) for d in meta.get("outputs", ())]
        self._buckets = {}
        self._bucket = None
        if not isinstance(model, bytes | bytearray):
            self._open_cache(Path(model))
        for plan in vxm.plans:
            self._add_plan(plan)
        wanted = [b for b in self._initial_shapes() if b]
        for shapes in wanted:
            key = self._key_of(shapes)
            if key not in self._buckets:
                raise InvalidArgument(
                    f"Config.shapes/buckets ask for {self._fmt_shapes(shapes)}, which "
                    f"{self._name} was not compiled for; {self._recompile_hint(shapes)}"
                )

    # -- planning ----------------------------------------------------------
    def _default_shapes(self) -> dict[str, Shape] | None:
        """Shapes of the first bucket: the declared ones, completed by
        Config.shapes/dims; None leaves dynamic dims to infer-shapes' rules."""
        return dict(self.config.shapes) if self.config.shapes else None

    def _initial_shapes(self) -> list[dict[str, Shape] | None]:
        """The buckets compiled at creation: each of Config.buckets (completed
        by Config.shapes), else the one of Config.shapes; the first is the default."""
        if not self.config.buckets:
            return [self._default_shapes()]
        return [{**self.config.shapes, **b} for b in self.config.buckets]

    def prepare_shapes(self, shapes: dict[str, Shape]) -> None:
        """Compile an additional plan bucket for these input shapes (ONNX
        sessions only: a .vxm holds the buckets it was compiled with)."""
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

    def _open_cache(self, model_path: Path | None) -> None:
        """The model cache (Config.cache_file; default next to the model file)."""
        from vknn.runtime.session_cache import SessionCache, cache_path

        if cache_path(self.config, model_path) is None:
            return
        device = pipelines = None
        fastmath = False
        if "vulkan" in self.config.backends:
            from vknn.kernels.spirv import fastmath_enabled
            from vknn.runtime.vulkan.context import shared_device

            device, pipelines, _ = shared_device()
            fastmath = device is not None and fastmath_enabled(self.config.fastmath, device.caps)
        self._cache = SessionCache.open_for(
            self.config, model_path, self._proto, device, pipelines, fastmath
        )
        if self._cache is not None and self._given_table is None:
            # The tuner fills the cached table in place: a warm session measures nothing.
            self.autotune_table = self._cache.variant.autotune

    def _prepare(self, shapes: dict[str, Shape] | None) -> Bucket:
        """Compile the ONNX model for `shapes` (or take the cached plan) and add the bucket."""
        plan = self._cache.plan(shapes) if self._cache is not None else None
        if plan is None:
            plan = self._compile_plan(shapes)
            if self._cache is not None:
                self._cache.store_plan(shapes, plan)
        return self._add_plan(plan)

    def _compile_plan(self, shapes: dict[str, Shape] | None) -> Plan:
        """The ONNX model through the compiler pipeline (xDSL) to a plain plan."""
        from vknn.compiler import compile_module, release_weights
        from vknn.frontend import import_model

        module = import_model(self._proto, base_dir=self._base_dir, name=self._name)
        try:
            result = compile_module(
                module, pipeline=self.config.pipeline, shapes=shapes, dims=dict(self.config.dims)
            )
        finally:
            release_weights(module)
        return result.plan

    def _add_plan(self, plan: Plan) -> Bucket:
        """Partition `plan` for this session's device and config, build its
        Vulkan executors and register it as the bucket of its input shapes
        (shared by the ONNX and .vxm paths; mutates `plan`)."""
        from vknn.runtime.partition import assign_backends, make_segments

        device = pipelines = None
        no_vulkan = None
        if "vulkan" in self.config.backends:
            from vknn.runtime.vulkan.context import shared_device

            device, pipelines, no_vulkan = shared_device()
        if device is not None:
            from vknn.runtime.vulkan.split_large import split_oversized_gemms

            split_oversized_gemms(plan, device.caps.max_storage_buffer_range)
        assign_backends(plan, self.config, device.caps if device else None, no_vulkan)
        if device is not None:
            from vknn.kernels.epilogues import attach_epilogues
            from vknn.runtime.partition import slot_specs

            # Fused pointwise epilogues ride their producer's store.
            plan.steps = attach_epilogues(plan.steps, slot_specs(plan), device.caps)
            plan.compute_last_use()
        segments = make_segments(plan)
        bucket = Bucket(plan, segments, {}, self._free_lists(plan, segments))
        if self._cache is not None:
            self._cache.executors_begin(self.autotune_table)
        try:
            for i, seg in enumerate(segments):
                if seg.backend == "vulkan":
                    prepacked = None
                    if self._cache is not None:
                        shapes = tuple(spec.shape for spec, _ in plan.inputs)
                        prepacked = self._cache.prepack_store(f"{shapes}/{i}")
                    bucket.executors[i] = self._executor(plan, seg, device, pipelines, prepacked)
        except BaseException:
            bucket.close()
            raise
        if self._cache is not None:
            self._cache.executors_end(self.autotune_table)
        key = tuple(spec.shape for spec, _ in plan.inputs)
        old = self._buckets.get(key)
        if old is not None:
            old.close()
        self._buckets[key] = bucket
        if self._bucket is None:
            self._bucket = bucket
        return bucket

    def _executor(
        self, plan: Plan, seg: Segment, device: Any, pipelines: Any, prepacked: Any = None
    ) -> Any:
        from vknn.kernels.spirv import fastmath_enabled
        from vknn.runtime.partition import slot_specs
        from vknn.runtime.vulkan.executor import VulkanExecutor

        specs = slot_specs(plan)
        used_constants = {
            s: plan.constants[s] for step in seg.steps for s in step.inputs if s in plan.constants
        }
        return VulkanExecutor(
            device,
            seg.steps,
            input_specs={s: specs[s] for s in seg.inputs},
            outputs=seg.outputs,
            constants=used_constants,
            precision=self.config.precision,
            profiling=self.config.profiling,
            pipelines=pipelines,
            fastmath=fastmath_enabled(self.config.fastmath, device.caps),
            autotune=self.config.autotune,
            autotune_table=self.autotune_table,
            prepacked=prepacked,
            device_layout=self.config.device_layout,
        )

    @staticmethod
    def _free_lists(plan: Plan, segments: list[Segment]) -> list[list[int]]:
        keep = {s for _, s in plan.outputs} | set(plan.constants)
        last: dict[int, int] = {}
        for i, seg in enumerate(segments):
            for step in seg.steps:
                for s in (*step.inputs, *step.outputs):
                    last[s] = i
        free: list[list[int]] = [[] for _ in segments]
        for s, i in last.items():
            if s not in keep and s >= 0:
                free[i].append(s)
        return free

    def close(self) -> None:
        """Release device resources now (also done when the session is
        collected) and write the model cache if this session added to it."""
        cache = getattr(self, "_cache", None)
        if cache is not None:
            cache.save()
        for b in getattr(self, "_buckets", {}).values():
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
        assert self._bucket is not None
        if len(self._buckets) == 1:
            bucket = self._bucket  # the zero-lookup fast path
            if all(inputs[spec.name].shape == spec.shape for spec, _ in bucket.plan.inputs):
                return bucket
        key = tuple(tuple(inputs[spec.name].shape) for spec, _ in self._bucket.plan.inputs)
        found = self._buckets.get(key)
        if found is not None:
            return found
        raise InvalidArgument(self._shape_mismatch(inputs))

    def _shape_mismatch(self, inputs: dict[str, np.ndarray]) -> str:
        plan = self.plan
        for spec, _ in plan.inputs:
            got = inputs[spec.name].shape
            if len(got) != len(spec.shape):
                return (
                    f"input '{spec.name}': expected rank {len(spec.shape)} {_fmt(spec.shape)}, "
                    f"got rank {len(got)} {_fmt(got)}"
                )
        given = {spec.name: tuple(inputs[spec.name].shape) for spec, _ in plan.inputs}
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
        """Every bucket's input shapes, `x=[1, 4]; x=[2, 4]`."""
        names = [spec.name for spec, _ in self.plan.inputs]
        return "; ".join(
            self._fmt_shapes(dict(zip(names, key, strict=True))) for key in self._buckets
        )

    def _key_of(self, shapes: dict[str, Shape]) -> tuple[Shape, ...]:
        """The bucket key of `shapes`; inputs it leaves out keep the first plan's shape."""
        return tuple(tuple(shapes.get(spec.name, spec.shape)) for spec, _ in self.plan.inputs)

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
        checked: dict[str, np.ndarray] = {}
        for name, value in inputs.items():
            info = known[name]
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
        self, inputs: dict[str, np.ndarray], output_names: list[str] | None = None
    ) -> dict[str, np.ndarray]:
        from vknn.runtime.cpu.executor import run_step

        feeds = self._validate(inputs)
        bucket = self._select(feeds)
        plan = bucket.plan
        values: list[np.ndarray | None] = [None] * plan.num_slots
        for slot, array in plan.constants.items():
            values[slot] = array
        for spec, slot in plan.inputs:
            values[slot] = feeds[spec.name]
        for i, seg in enumerate(bucket.segments):
            executor = bucket.executors.get(i)
            if executor is not None:
                outs = executor.run({s: values[s] for s in seg.inputs})
                for s, v in outs.items():
                    values[s] = v
            else:
                for step in seg.steps:
                    run_step(step, values)
            for s in bucket.free_after[i]:
                values[s] = None
        wanted = output_names or [spec.name for spec, _ in plan.outputs]
        by_name = {spec.name: (spec, slot) for spec, slot in plan.outputs}
        result: dict[str, np.ndarray] = {}
        for name in wanted:
            if name not in by_name:
                raise InvalidArgument(f"unknown output '{name}'; outputs are: {', '.join(by_name)}")
            spec, slot = by_name[name]
            value = values[slot]
            assert value is not None
            result[name] = np.array(value, dtype=spec.np_dtype, copy=True)
        return result

    # -- profiling ---------------------------------------------------------
    def profile(
        self, inputs: dict[str, np.ndarray] | None = None, runs: int = 10
    ) -> list[ProfileRow]:
        """Per-dispatch GPU time from timestamp queries (Config(profiling=True)),
        the median over `runs` inferences, slowest first. Random inputs of the
        first plan's shapes when none are given."""
        if not self.config.profiling:
            raise InvalidArgument("profile() needs a session created with Config(profiling=True)")
        if inputs is None:
            rng = np.random.default_rng(0)
            inputs = {
                spec.name: (
                    rng.standard_normal(spec.shape).astype(spec.np_dtype)
                    if spec.np_dtype.kind == "f"
                    else np.zeros(spec.shape, spec.np_dtype)
                )
                for spec, _ in self.plan.inputs
            }
        feeds = self._validate(inputs)
        bucket = self._select(feeds)
        samples: dict[tuple[int, int, int], list[float]] = {}
        labels: dict[tuple[int, int, int], str] = {}
        for _ in range(max(1, runs)):
            self.run(feeds)
            for seg_index, ex in bucket.executors.items():
                for k, (op_index, label, ns) in enumerate(ex.program.timings_ns()):
                    key = (seg_index, op_index, k)
                    samples.setdefault(key, []).append(ns / 1e6)
                    labels[key] = label
        rows = []
        for key, times in samples.items():
            seg_index, op_index, _ = key
            step = bucket.executors[seg_index].steps[op_index]
            shape = step.out_specs[0].shape if step.out_specs else ()
            rows.append(
                ProfileRow(step.node, step.kind, labels[key], shape, float(np.median(times)))
            )
        total = sum(r.ms for r in rows) or 1.0
        for r in rows:
            r.share = r.ms / total
        return sorted(rows, key=lambda r: -r.ms)

    # -- reports -----------------------------------------------------------
    @property
    def plan(self) -> Plan:
        """The first bucket's plan."""
        assert self._bucket is not None
        return self._bucket.plan

    @property
    def segments(self) -> list[Segment]:
        assert self._bucket is not None
        return self._bucket.segments

    def node_backends(self) -> dict[str, str]:
        """ONNX node name -> the backend its ops run on (joined by '+' if split).
        Nodes fused into one kernel (pointwise chains, epilogues) each appear."""
        out: dict[str, str] = {}
        for step in self.plan.steps:
            for node in _step_nodes(step):
                prev = out.get(node)
                if prev is None:
                    out[node] = step.backend
                elif step.backend not in prev.split("+"):
                    out[node] = f"{prev}+{step.backend}"
        return out

    def fallback_reasons(self) -> dict[str, str]:
        """ONNX node name -> why it is not on the preferred backend."""
        out: dict[str, str] = {}
        for step in self.plan.steps:
            if step.reason and step.node not in out:
                out[step.node] = step.reason
        return out
