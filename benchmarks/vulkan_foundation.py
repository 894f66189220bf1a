"""Costs of the Vulkan foundation on the current device (ADR 0004's numbers).

Prints medians of: replaying a recorded chain of N tiny elementwise ops
(per-dispatch cost = slope over N), recording it, compiling and building the
session, and a large add (bandwidth). The models are ONNX graphs through the
`lower` pipeline (no fusion: each op its own dispatch), compiled and replayed
as any session's program. Run: python benchmarks/vulkan_foundation.py
Validation stays off (VKNN_VALIDATION unset) so it does not skew timings.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

import vknn


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, ...]], out: str) -> bytes:
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
    outs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "g", ins, outs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return m.SerializeToString()


def chain(n: int, shape: tuple[int, ...]) -> bytes:
    kinds = ["Relu", "Sigmoid", "Tanh"]
    names = ["x"] + [f"t{i}" for i in range(n)]
    nodes = [helper.make_node(kinds[i % 3], [names[i]], [names[i + 1]]) for i in range(n)]
    return _model(nodes, {"x": shape}, names[-1])


def session(model: bytes, **config: Any) -> vknn.Session:
    cfg = vknn.Config(pipeline="lower", allow_cpu_fallback=False, cache_file="off", **config)
    return vknn.Session(model, cfg)


def segment(sess: vknn.Session) -> Any:
    """The recorded command program of the session's one Vulkan segment."""
    ctx = sess.bucket.executable._all[0]
    (sc,) = ctx.segments.values()
    return sc.program


def median_ms(fn, reps: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


def main() -> None:
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        raise SystemExit(f"no Vulkan device: {why}")
    print(f"device: {dev.caps.name}; api {dev.caps.api_version}")
    shape = (64,)
    x = np.ones(shape, np.float32)
    results = {}
    for n in (1, 16, 64):
        t0 = time.perf_counter()
        sess = session(chain(n, shape))
        build = time.perf_counter() - t0
        prog = segment(sess)
        run = median_ms(lambda s=sess: s.run({"x": x}), 50)
        replay = median_ms(prog.run, 50)
        results[n] = replay
        print(
            f"chain of {n:3d}: compile+build {1e3 * build:7.1f} ms "
            f"(record {1e3 * prog.stats.record_seconds:6.2f} ms, "
            f"{prog.stats.dispatches} dispatches, {prog.stats.barriers} barriers), "
            f"run {run:6.3f} ms, submit+wait only {replay:6.3f} ms"
        )
        sess.close()
    print(f"per-dispatch (replay slope 1->64): {(results[64] - results[1]) / 63 * 1e3:.1f} us")

    big = (1 << 22,)
    a = np.random.default_rng(0).standard_normal(big).astype(np.float32)
    add = _model([helper.make_node("Add", ["a", "b"], ["c"])], {"a": big, "b": big}, "c")
    for precision in ("high", "low"):
        sess = session(add, precision=precision, profiling=True)
        prog = segment(sess)
        ms = median_ms(prog.run, 10)
        total = median_ms(lambda s=sess: s.run({"a": a, "b": a}), 5)
        rows = sess.profile({"a": a, "b": a}, runs=5)
        # The add's dispatch; at low also the fp32 <-> fp16 conversions of
        # the large inputs and output (Device storage, docs/architecture.md).
        gpu = sum(r.ms for r in rows)
        bytes_moved = 3 * a.size * (4 if precision == "high" else 2)
        print(
            f"add 4M {precision:4s}: submit+wait {ms:6.2f} ms (GPU timestamps {gpu:6.2f} ms over "
            f"{len(rows)} dispatches, "
            f"{bytes_moved / ms / 1e6:5.2f} GB/s); with host upload/download {total:6.2f} ms"
        )
        sess.close()


if __name__ == "__main__":
    main()
