"""`vknn.InferenceSession`: onnxruntime's API over a VKNN session, so code
written for onnxruntime runs by changing the import (docs/ort-compat.md
lists what maps to what, and what is refused).

Options VKNN has no use for are accepted where onnxruntime users set them
routinely (thread counts, graph optimization level, memory-arena flags) and
documented as such; options and providers it does not know are an error or
a warning, never silently dropped.

Inputs whose shapes differ from the compiled bucket but fit the model's
declared (symbolic) dims get a new bucket on the fly, as onnxruntime accepts
any such shape.
"""

from __future__ import annotations

import enum
import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vknn.config import Config
from vknn.errors import InvalidArgument, Unsupported
from vknn.ortvalue import OrtValue, tensor_type
from vknn.session import Session, TensorInfo

PROVIDERS = {"VulkanExecutionProvider": "vulkan", "CPUExecutionProvider": "cpu"}
VULKAN_OPTIONS = ("device_id", "precision", "fastmath", "cache_file", "autotune", "contexts")
"""VulkanExecutionProvider options, each a Config field (device_id is Config.device)."""


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class RunOptions:
    """Accepted for signature compatibility; VKNN runs have no per-run options."""

    def __init__(self) -> None:
        self.logid = ""
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.terminate = False
        self._entries: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        warnings.warn(f"RunOptions entry {key!r} has no effect in VKNN", stacklevel=2)
        self._entries[key] = value

    def get_run_config_entry(self, key: str) -> str:
        if key not in self._entries:
            raise InvalidArgument(f"RunOptions does not have configuration with key: {key}")
        return self._entries[key]


_ACCEPTED = {
    "enable_profiling": False,
    "profile_file_prefix": "onnxruntime_profile_",
    "optimized_model_filepath": "",
    "log_severity_level": 2,
    "log_verbosity_level": 0,
    "logid": "",
    "graph_optimization_level": GraphOptimizationLevel.ORT_ENABLE_ALL,
    "execution_mode": ExecutionMode.ORT_SEQUENTIAL,
    "execution_order": 0,
    "intra_op_num_threads": 0,
    "inter_op_num_threads": 0,
    "enable_cpu_mem_arena": True,
    "enable_mem_pattern": True,
    "enable_mem_reuse": True,
    "use_deterministic_compute": False,
}
"""SessionOptions attributes with their onnxruntime defaults. Those past
log_verbosity_level/logid change nothing in VKNN: it always runs the full
compiler pipeline, plans memory statically and runs CPU segments on numpy."""


class SessionOptions:
    def __init__(self) -> None:
        for k, v in _ACCEPTED.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_entries", {})
        object.__setattr__(self, "_dims", {})

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _ACCEPTED:
            raise AttributeError(
                f"SessionOptions has no option {name!r}; VKNN accepts {sorted(_ACCEPTED)}"
            )
        if name == "graph_optimization_level":
            value = GraphOptimizationLevel(value)
            if value != GraphOptimizationLevel.ORT_ENABLE_ALL:
                warnings.warn(
                    f"graph_optimization_level={value.name}: VKNN always runs its full "
                    "compiler pipeline",
                    stacklevel=2,
                )
        if name == "execution_mode":
            value = ExecutionMode(value)
        object.__setattr__(self, name, value)

    def add_session_config_entry(self, key: str, value: str) -> None:
        warnings.warn(f"session config entry {key!r} has no effect in VKNN", stacklevel=2)
        self._entries[key] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._entries:
            raise InvalidArgument(f"SessionOptions does not have configuration with key: {key}")
        return self._entries[key]

    def add_free_dimension_override_by_name(self, name: str, value: int) -> None:
        """The symbolic dimension `name` is `value` (Config.dims)."""
        self._dims[name] = int(value)

    def _refuse(self, what: str) -> None:
        raise Unsupported(f"SessionOptions.{what} is not supported by VKNN")

    def add_free_dimension_override_by_denotation(self, *a: Any) -> None:
        self._refuse("add_free_dimension_override_by_denotation")

    def add_initializer(self, *a: Any) -> None:
        self._refuse("add_initializer")

    def add_external_initializers(self, *a: Any) -> None:
        self._refuse("add_external_initializers")

    def register_custom_ops_library(self, *a: Any) -> None:
        self._refuse("register_custom_ops_library (custom ops)")


@dataclass(frozen=True)
class NodeArg:
    """onnxruntime's NodeArg: `name`, `shape` (ints, symbolic names or None), `type`."""

    name: str
    shape: list[int | str | None]
    type: str


@dataclass(frozen=True)
class ModelMetadata:
    producer_name: str = ""
    graph_name: str = ""
    domain: str = ""
    description: str = ""
    graph_description: str = ""
    version: int = 0
    custom_metadata_map: dict[str, str] = field(default_factory=dict)


def _node_arg(info: TensorInfo) -> NodeArg:
    shape = list(info.dims) if info.dims is not None else []
    return NodeArg(info.name, shape, tensor_type(info.dtype))


def normalize_providers(
    providers: Sequence[Any] | None, provider_options: Sequence[dict[str, Any]] | None
) -> tuple[list[str], list[dict[str, Any]]]:
    """(names, options) with onnxruntime's rules: names or (name, options)
    tuples, or names plus a parallel provider_options list; duplicates
    dropped with a warning; providers VKNN lacks dropped with a warning, an
    error if none is left."""
    if providers is None:
        if provider_options is not None:
            raise InvalidArgument("provider_options given without providers")
        return list(PROVIDERS), [{} for _ in PROVIDERS]
    if isinstance(providers, str) or not isinstance(providers, Sequence):
        raise InvalidArgument(f"providers must be a list, got {type(providers).__name__}")
    tuples = any(isinstance(p, tuple) for p in providers)
    if provider_options is not None:
        if tuples:
            raise InvalidArgument("give provider options in (name, options) tuples or in "
                                  "provider_options, not both")  # fmt: skip
        if not isinstance(provider_options, Sequence) or len(provider_options) != len(providers):
            raise InvalidArgument("provider_options must be a list as long as providers")
    names: list[str] = []
    opts: list[dict[str, Any]] = []
    unknown: list[str] = []
    for i, p in enumerate(providers):
        given = provider_options[i] if provider_options else {}
        name, o = p if isinstance(p, tuple) else (p, given)
        if not isinstance(name, str) or not isinstance(o, dict):
            raise InvalidArgument(f"providers[{i}]: expected a name or (name, dict), got {p!r}")
        if name not in PROVIDERS:
            unknown.append(name)
        elif name in names:
            warnings.warn(f"provider {name} given twice; the first is used", stacklevel=3)
        else:
            names.append(name)
            opts.append({str(k): v for k, v in o.items()})
    if unknown:
        msg = f"unknown execution provider(s) {unknown}; available: {list(PROVIDERS)}"
        if not names:
            raise InvalidArgument(msg)
        warnings.warn(msg + f"; using {names}", stacklevel=3)
    return names, opts


def config_from(names: list[str], opts: list[dict[str, Any]], so: SessionOptions | None) -> Config:
    """The Config for these providers, their options and session options."""
    kw: dict[str, Any] = {"backends": tuple(PROVIDERS[n] for n in names)}
    for name, o in zip(names, opts, strict=True):
        known = VULKAN_OPTIONS if name == "VulkanExecutionProvider" else ()
        bad = [k for k in o if k not in known]
        if bad:
            raise InvalidArgument(
                f"{name}: unknown option(s) {bad}; known: {list(known) or 'none'}"
            )
        for k, v in o.items():
            if k == "device_id":
                kw["device"] = int(v) if str(v).isdigit() else v
            elif k == "contexts":
                kw["contexts"] = int(v)
            else:
                kw[k] = v
    if so is not None:
        kw["dims"] = dict(so._dims)
        kw["profiling"] = bool(so.enable_profiling)
    return Config(**kw)


class InferenceSession:
    def __init__(
        self,
        path_or_bytes: str | Path | bytes | Any,
        sess_options: SessionOptions | None = None,
        providers: Sequence[Any] | None = None,
        provider_options: Sequence[dict[str, Any]] | None = None,
        **kwargs: Any,
    ):
        if kwargs:
            raise InvalidArgument(f"InferenceSession: unknown argument(s) {sorted(kwargs)}")
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise InvalidArgument("sess_options must be a vknn.SessionOptions")
        self._model = path_or_bytes
        self._options = sess_options if sess_options is not None else SessionOptions()
        logging.getLogger("vknn").setLevel(10 * (1 + int(self._options.log_severity_level)))
        self._trace: Any = None
        self._create(providers, provider_options)

    def _create(self, providers: Any, provider_options: Any) -> None:
        names, opts = normalize_providers(providers, provider_options)
        config = config_from(names, opts, self._options)
        if self._options.enable_profiling:
            from vknn.trace import Trace

            self._trace = Trace(str(self._options.logid or "vknn"))
        self._session = Session(self._model, config)
        self._providers, self._provider_options = names, opts
        if self._options.optimized_model_filepath:
            self._write_vxm(Path(self._options.optimized_model_filepath))

    def _write_vxm(self, path: Path) -> None:
        """The default bucket compiled again and written as a .vxm."""
        from vknn.runtime.vxm import save_vxm

        s = self._session
        if s._vxm is not None:
            raise InvalidArgument(f"optimized_model_filepath: {s._name} is compiled already")
        if path.suffix != ".vxm":
            warnings.warn(f"optimized_model_filepath {path}: writing a VKNN .vxm", stacklevel=3)
        shapes = s._initial_shapes()[0]
        save_vxm(path, [s._compile(shapes)], f"vknn.InferenceSession({s._name})")

    # -- onnxruntime's session API -------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(i) for i in self._session.inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(o) for o in self._session.outputs]

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """Provider -> its options as strings (onnxruntime's form), defaults filled."""
        c = self._session.config
        out: dict[str, dict[str, str]] = {}
        for name, given in zip(self._providers, self._provider_options, strict=True):
            if name == "VulkanExecutionProvider":
                dev = self._session.bucket.executable.device
                idx = "" if dev is None else str(self._device_index())
                full = {"device_id": idx, "precision": c.precision, "fastmath": c.fastmath,
                        "cache_file": c.cache_file or "", "autotune": c.autotune,
                        "contexts": c.contexts}  # fmt: skip
                out[name] = {k: str(v) for k, v in {**full, **given}.items()}
            else:
                out[name] = {}
        return out

    def _device_index(self) -> int:
        from vknn.runtime.vulkan.context import resolve

        return resolve(self._session.config.device)

    def get_session_options(self) -> SessionOptions:
        return self._options

    def set_providers(
        self, providers: Sequence[Any] | None = None, provider_options: Any = None
    ) -> None:
        """Recreate the session for other providers (onnxruntime does the same)."""
        old = self._session
        self._create(providers, provider_options)
        old.close()

    def get_modelmeta(self) -> ModelMetadata:
        s = self._session
        if s._vxm is not None:
            meta = s.program.metadata
            return ModelMetadata(producer_name=str(meta.get("producer", "")),
                                 graph_name=str(meta.get("model", "")))  # fmt: skip
        m = s._ensure_proto()
        return ModelMetadata(
            producer_name=m.producer_name,
            graph_name=m.graph.name,
            domain=m.domain,
            description=m.doc_string,
            graph_description=m.graph.doc_string,
            version=int(m.model_version),
            custom_metadata_map={p.key: p.value for p in m.metadata_props},
        )

    def _feeds(self, input_feed: dict[str, Any]) -> dict[str, Any]:
        """OrtValues unwrapped, lists made arrays of the input's dtype, and a
        bucket compiled for new shapes that the declared dims accept."""
        from vknn.runtime.executable import DeviceTensor

        if not isinstance(input_feed, dict):
            raise InvalidArgument(f"input_feed must be a dict, got {type(input_feed).__name__}")
        dtypes = {i.name: i.dtype for i in self._session.inputs}
        feeds: dict[str, Any] = {}
        for name, v in input_feed.items():
            if isinstance(v, OrtValue):
                v = v._value
            elif isinstance(v, list | tuple) and name in dtypes:
                v = np.asarray(v, dtype=dtypes[name])
            feeds[name] = v
        sess = self._session
        checked = sess._validate(feeds)
        key = tuple(tuple(checked[n].shape) for n in sess.bucket_inputs)
        if key not in sess._buckets:
            if sess._vxm is None:
                sess.prepare_shapes({n: tuple(checked[n].shape) for n in sess.bucket_inputs})
        return {n: v if isinstance(v, DeviceTensor) else checked[n] for n, v in feeds.items()}

    def _run_bound(
        self, feeds: dict[str, Any], names: list[str] | None, device_outputs: Any = None
    ) -> dict[str, Any]:
        feeds = self._feeds(feeds)
        if self._trace is None:
            return self._session.run(feeds, names, device_outputs=device_outputs)
        from vknn.trace import run_traced

        return run_traced(self._session, self._trace, feeds, output_names=names,
                          device_outputs=device_outputs)  # fmt: skip

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: dict[str, Any],
        run_options: RunOptions | None = None,
    ) -> list[np.ndarray]:
        out = self._run_bound(input_feed, list(output_names) if output_names else None)
        return list(out.values())

    def run_async(
        self,
        output_names: Sequence[str] | None,
        input_feed: dict[str, Any],
        callback: Any,
        user_data: Any,
        run_options: RunOptions | None = None,
    ) -> None:
        """Run on a thread; `callback(outputs, user_data, error_text)` when done."""
        import threading

        def work() -> None:
            try:
                res = self.run(output_names, input_feed, run_options)
            except Exception as e:  # reported to the callback, as onnxruntime does
                callback([], user_data, str(e))
                return
            callback(res, user_data, "")

        threading.Thread(target=work, daemon=True).start()

    def io_binding(self) -> Any:
        from vknn.iobinding import IOBinding

        return IOBinding(self)

    def run_with_iobinding(self, iobinding: Any, run_options: RunOptions | None = None) -> None:
        iobinding._run()

    def end_profiling(self) -> str:
        """Write the Chrome-trace JSON of the runs since creation (or the last
        end_profiling) and return its file name; "" without enable_profiling."""
        if self._trace is None:
            return ""
        from vknn.trace import Trace

        stamp = time.strftime("%Y-%m-%d_%H-%M-%S") + f"_{time.time_ns() % 10**9:09d}"
        name = self._trace.write(f"{self._options.profile_file_prefix}{stamp}.json")
        self._trace = Trace(self._trace.name)
        return name

    def get_profiling_start_time_ns(self) -> int:
        return self._trace.start_time_ns if self._trace is not None else 0


def get_available_providers() -> list[str]:
    """VulkanExecutionProvider where a Vulkan device exists, and the CPU."""
    from vknn.runtime.vulkan.context import physical_devices

    return [p for p in PROVIDERS if p != "VulkanExecutionProvider" or physical_devices()]


def get_all_providers() -> list[str]:
    return list(PROVIDERS)


def get_device() -> str:
    return "GPU" if "VulkanExecutionProvider" in get_available_providers() else "CPU"
