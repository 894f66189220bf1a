"""`vknn bench MODEL`: what a model costs on this machine, in one run.

    vknn bench model.onnx [--batch 8] [--runs 50] [--warmup 5] [--precision low]
                          [--devices all|0,1] [--no-ort] [--json out.json] [--plot out.png]

- start: cold (compile from ONNX into a fresh model cache; a .vxm: load) and
  warm (a second session on the cache), and the first run;
- latency: `--warmup` runs, then `--runs` timed runs: p50/p90/p99 and mean,
  throughput = batch x runs / time;
- devices: one session per device (`--devices all`: every Vulkan GPU, or the
  CPU devices (lavapipe) on a machine without one),
  requests spread across them from threads (two per session), every output
  checked against the first device's for the same input; the same code path
  with one device, and with several the single-device throughput is measured
  in the same run for the scaling;
- machine: device, driver, SM clock (nvidia-smi, where it exists), CPU;
- onnxruntime (CPU) on the same inputs, side by side, with the agreement;
- GPU time per vkd op kind from timestamp queries (one profiled run set).

`--plot` draws the latency histogram and the per-op-kind bars (matplotlib:
`pip install vknn[plot]`).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from vknn.errors import InvalidArgument, VknnError


def percentiles(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "mean": float(a.mean())}  # fmt: skip


def _timed(fn: Any, warmup: int, runs: int) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def machine(device_indices: list[int]) -> dict[str, Any]:
    from vknn.devices import list_devices

    devs = {d.index: d for d in list_devices()}
    info: dict[str, Any] = {
        "devices": [
            {"index": i, "name": devs[i].name, "driver": devs[i].driver}
            for i in device_indices
            if i in devs
        ],  # fmt: skip
        "cpu": _cpu_name(),
        "python": platform.python_version(),
    }
    if shutil.which("nvidia-smi"):
        q = "index,name,driver_version,clocks.sm,clocks.max.sm"
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                           capture_output=True, text=True)  # fmt: skip
        info["nvidia_smi"] = r.stdout.strip().splitlines() if r.returncode == 0 else []
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} x{os.cpu_count()}"


def _batch_config(path: Path, batch: int | None, dims: dict[str, int]) -> dict[str, Any]:
    """Config.shapes/dims putting `batch` on every input's first axis."""
    if batch is None or path.suffix == ".vxm":
        return {"dims": dims}
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    shapes: dict[str, tuple[int, ...]] = {}
    dims = dict(dims)
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        ds = list(vi.type.tensor_type.shape.dim)
        if not ds:
            continue
        first = ds[0]
        if first.HasField("dim_value"):
            if first.dim_value != batch:
                raise InvalidArgument(
                    f"--batch {batch}: input '{vi.name}' has a fixed first axis of "
                    f"{first.dim_value}"
                )
        elif first.dim_param:
            dims.setdefault(first.dim_param, batch)
        else:  # unnamed: the whole shape, other axes declared or from --dims
            rest = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, 0)
                    for d in ds[1:]]  # fmt: skip
            if all(rest):
                shapes[vi.name] = (batch, *rest)
    return {"dims": dims, "shapes": shapes}


def _sessions(args: argparse.Namespace, indices: list[int], tmp: Path) -> tuple[list[Any], dict]:  # type: ignore[type-arg]
    """One warm session per device, and the start-up times of the first."""
    import vknn

    base = dict(
        backends=tuple(args.backends.split(",")),
        precision=args.precision,
        cache_file=str(tmp / "bench.vkcache"),
        **_batch_config(args.model, args.batch, _dims(args.dims)),
    )
    t0 = time.perf_counter()
    first = vknn.Session(args.model, vknn.Config(device=indices[0], **base))
    cold = time.perf_counter() - t0
    feeds = _random_inputs(first)
    t0 = time.perf_counter()
    first.run(feeds)
    first_run = time.perf_counter() - t0
    first.close()  # writes the model cache
    sessions = []
    warm = 0.0
    for i in indices:
        t0 = time.perf_counter()
        sessions.append(vknn.Session(args.model, vknn.Config(device=i, **base)))
        warm = warm or time.perf_counter() - t0
    start = {"cold_s": cold, "warm_s": warm, "first_run_ms": first_run * 1000}
    return sessions, start


def _dims(text: str) -> dict[str, int]:
    from vknn.tools.cli import _parse_dims

    return _parse_dims(text)


def _random_inputs(session: Any) -> dict[str, np.ndarray]:
    from vknn.tools.cli import random_inputs

    return random_inputs(session, 0)


def spread(sessions: list[Any], feeds: list[dict], runs: int) -> tuple[float, list[Any]]:  # type: ignore[type-arg]
    """`runs` requests spread round-robin over the sessions from 2 threads per
    session, three times: (the median seconds, outputs by request of all)."""

    def one(i: int) -> Any:
        return sessions[i % len(sessions)].run(feeds[i % len(feeds)])

    times, outs = [], []
    with ThreadPoolExecutor(2 * len(sessions)) as pool:
        list(pool.map(one, range(4 * len(sessions))))  # every context made and warm
        for _ in range(3):
            t0 = time.perf_counter()
            outs += pool.map(one, range(runs))
            times.append(time.perf_counter() - t0)
    return sorted(times)[1], outs


def _check_spread(outs: list[Any], feeds_ref: list[dict], n: int) -> None:  # type: ignore[type-arg]
    """Every request's outputs equal the first device's for the same input."""
    for i, out in enumerate(outs):
        want = feeds_ref[i % len(feeds_ref)]
        for k, v in out.items():
            if not np.array_equal(v, want[k]) and not np.allclose(v, want[k], 1e-3, 1e-4):
                raise VknnError(
                    f"request {i} on device session {i % n}: output '{k}' differs from "
                    "the single-device run"
                )


def op_kind_times(session: Any, feeds: dict) -> dict[str, float]:  # type: ignore[type-arg]
    """Median GPU ms per vkd op kind (a profiled session on the warm cache)."""
    from dataclasses import replace

    import vknn

    if session.bucket.executable.device is None or session.dispatch_count() == 0:
        return {}
    prof = vknn.Session(session._name, replace(session.config, profiling=True))
    try:
        rows = prof.profile(feeds, runs=5)
    finally:
        prof.close()
    out: dict[str, float] = {}
    for r in rows:
        out[r.op] = out.get(r.op, 0.0) + r.ms
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def ort_side(path: Path, feeds: dict, warmup: int, runs: int) -> dict[str, Any] | None:  # type: ignore[type-arg]
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    out = dict(zip(names, sess.run(None, feeds), strict=True))
    ms = _timed(lambda: sess.run(None, feeds), warmup, runs)
    return {"provider": "CPUExecutionProvider", "version": ort.__version__,
            "latency_ms": percentiles(ms), "samples_ms": ms, "outputs": out}  # fmt: skip


def bench(args: argparse.Namespace) -> dict[str, Any]:
    from vknn.runtime.vulkan.context import physical_devices

    devs = physical_devices()
    indices: list[Any]
    if "vulkan" not in args.backends.split(","):
        indices = [None]  # one CPU session
    elif args.devices == "all":  # the GPUs; a software rasterizer only where there is none
        gpus = [i for i, (_, kind) in enumerate(devs) if kind != "cpu"]
        indices = gpus or list(range(len(devs))) or [0]
    else:
        from vknn.runtime.vulkan.context import resolve

        parts = [d.strip() for d in str(args.devices).split(",") if d.strip()]
        indices = [resolve(d) for d in parts] or [resolve(None)]
    with tempfile.TemporaryDirectory() as tmp:
        sessions, start = _sessions(args, indices, Path(tmp))
        try:
            return _measure(args, sessions, indices, start)
        finally:
            for s in sessions:
                s.close()


def _measure(args: argparse.Namespace, sessions: list[Any], indices: list[int],
             start: dict) -> dict[str, Any]:  # type: ignore[type-arg]  # fmt: skip
    first = sessions[0]
    feeds = _random_inputs(first)
    batch = max((v.shape[0] for v in feeds.values() if v.ndim), default=1)
    if args.batch is not None and batch != args.batch:
        raise InvalidArgument(f"--batch {args.batch}: {args.model} runs batch {batch}")
    ms = _timed(lambda: first.run(feeds), args.warmup, args.runs)
    result: dict[str, Any] = {
        "model": str(args.model),
        "batch": batch,
        "precision": first.config.precision,
        "start": start,
        "latency_ms": percentiles(ms),
        "throughput_per_s": batch * len(ms) / (sum(ms) / 1000),
        "samples_ms": ms,
        "machine": machine([i for i in indices if i is not None]),
    }
    # Several sessions: requests from threads, checked against device 0's outputs.
    inputs = [_random_inputs_seeded(first, s) for s in range(4)]
    ref = [first.run(f) for f in inputs]
    runs = max(args.runs, 16 * len(sessions))
    one_s, outs = spread(sessions[:1], inputs, runs)
    _check_spread(outs, ref, 1)
    rows = [{"devices": 1, "throughput_per_s": batch * runs / one_s}]
    if len(sessions) > 1:
        all_s, outs = spread(sessions, inputs, runs)
        _check_spread(outs, ref, len(sessions))
        rows.append({"devices": len(sessions), "throughput_per_s": batch * runs / all_s,
                     "scaling": one_s / all_s})  # fmt: skip
    result["spread"] = rows
    result["op_kinds_ms"] = op_kind_times(first, feeds)
    if not args.no_ort and args.model.suffix != ".vxm":
        side = ort_side(args.model, feeds, args.warmup, args.runs)
        if side is not None:
            mine = first.run(feeds)
            side["cosine"] = {k: _cosine(v, mine[k]) for k, v in side.pop("outputs").items()}
            side["throughput_per_s"] = batch * args.runs / (sum(side["samples_ms"]) / 1000)
            result["onnxruntime"] = side
    return result


def _random_inputs_seeded(session: Any, seed: int) -> dict[str, np.ndarray]:
    from vknn.tools.cli import random_inputs

    return random_inputs(session, seed)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    from vknn.tools.cli import compare

    return compare(a, b)[0]


def format_result(r: dict[str, Any]) -> str:
    lat, st = r["latency_ms"], r["start"]
    lines = [
        f"model      {r['model']}  batch {r['batch']}  precision {r['precision']}",
        *(f"device     [{d['index']}] {d['name']}  driver {d['driver']}"
          for d in r["machine"]["devices"]),
        *(f"gpu        {line}" for line in r["machine"].get("nvidia_smi", [])),
        f"cpu        {r['machine']['cpu']}",
        f"start      cold {st['cold_s']:.2f} s  warm {st['warm_s']:.3f} s  "
        f"first run {st['first_run_ms']:.1f} ms",
        f"vknn       p50 {lat['p50']:.3f}  p90 {lat['p90']:.3f}  p99 {lat['p99']:.3f}  "
        f"mean {lat['mean']:.3f} ms  {r['throughput_per_s']:.1f}/s",
    ]  # fmt: skip
    o = r.get("onnxruntime")
    if o:
        ol = o["latency_ms"]
        cos = min(o["cosine"].values()) if o["cosine"] else 1.0
        lines.append(
            f"onnxrt cpu p50 {ol['p50']:.3f}  p90 {ol['p90']:.3f}  p99 {ol['p99']:.3f}  "
            f"mean {ol['mean']:.3f} ms  {o['throughput_per_s']:.1f}/s  (cosine {cos:.6f})"
        )
    for row in r["spread"]:
        extra = f"  scaling x{row['scaling']:.2f}" if "scaling" in row else ""
        lines.append(f"devices {row['devices']:2d} {row['throughput_per_s']:10.1f}/s "
                     f"(threads, outputs checked){extra}")  # fmt: skip
    if r["op_kinds_ms"]:
        lines.append("GPU ms by op kind: " + ", ".join(
            f"{k} {v:.3f}" for k, v in list(r["op_kinds_ms"].items())[:8]))  # fmt: skip
    return "\n".join(lines)


def plot(r: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise VknnError("--plot needs matplotlib: pip install 'vknn[plot]'") from None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    series = [("vknn", r["samples_ms"])]
    if r.get("onnxruntime"):
        series.append(("onnxruntime CPU", r["onnxruntime"]["samples_ms"]))
    every = [v for _, s in series for v in s]
    bins = np.geomspace(max(min(every), 1e-3), max(every) * 1.01, 40)  # shared, log-spaced
    for label, samples in series:
        ax1.hist(samples, bins=bins, alpha=0.7, label=label)
    ax1.set_xscale("log")
    ax1.set_xlabel("latency (ms)")
    ax1.set_ylabel("runs")
    ax1.set_title(f"{Path(r['model']).name}, batch {r['batch']}")
    ax1.legend()
    kinds = list(r["op_kinds_ms"].items())[:15]
    ax2.barh([k for k, _ in kinds][::-1], [v for _, v in kinds][::-1])
    ax2.set_xlabel("GPU ms per run")
    ax2.set_title("GPU time by vkd op kind" if kinds else "no GPU dispatches")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
