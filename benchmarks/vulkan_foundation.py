"""Costs of the Vulkan foundation on the current device (ADR 0004's numbers).

Prints medians of: replaying a recorded chain of N tiny elementwise steps
(per-dispatch cost = slope over N), recording it, building the executor,
and a large add (bandwidth). Run: python benchmarks/vulkan_foundation.py
Validation stays off (VKNN_VALIDATION unset) so it does not skew timings.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.vulkan.device import Device
from vknn.runtime.vulkan.executor import VulkanExecutor


def chain(n: int, shape: tuple[int, ...]) -> list[Step]:
    kinds = ["relu", "sigmoid", "tanh"]
    return [
        Step(
            "vx.unary",
            f"u{i}",
            [i],
            [i + 1],
            [TensorSpec("t", shape, "float32")],
            {"kind": kinds[i % 3]},
        )
        for i in range(n)
    ]


def median_ms(fn, reps: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


def main() -> None:
    dev = Device.open(validation=False)
    print(f"device: {dev.caps.name}; api {dev.caps.api_version}")
    shape = (64,)
    x = np.ones(shape, np.float32)
    results = {}
    for n in (1, 16, 64):
        t0 = time.perf_counter()
        ex = VulkanExecutor(dev, chain(n, shape), {0: TensorSpec("x", shape, "float32")}, [n])
        build = time.perf_counter() - t0
        run = median_ms(lambda ex=ex: ex.run({0: x}), 50)
        replay = median_ms(ex.program.run, 50)
        results[n] = replay
        print(
            f"chain of {n:3d}: build {1e3 * build:7.1f} ms "
            f"(record {1e3 * ex.stats.record_seconds:6.2f} ms, "
            f"{ex.stats.barriers} barriers), run {run:6.3f} ms, submit+wait only {replay:6.3f} ms"
        )
        ex.close()
    print(f"per-dispatch (replay slope 1->64): {(results[64] - results[1]) / 63 * 1e3:.1f} us")

    big = (1 << 22,)
    a = np.random.default_rng(0).standard_normal(big).astype(np.float32)
    for precision in ("high", "low"):
        step = Step(
            "vx.binary", "add", [0, 1], [2], [TensorSpec("c", big, "float32")], {"kind": "add"}
        )
        specs = {0: TensorSpec("a", big, "float32"), 1: TensorSpec("b", big, "float32")}
        ex = VulkanExecutor(dev, [step], specs, [2], precision=precision, profiling=True)
        ms = median_ms(ex.program.run, 10)
        total = median_ms(lambda ex=ex: ex.run({0: a, 1: a}), 5)
        gpu = ex.profile()[0][1]
        bytes_moved = 3 * a.size * (4 if precision == "high" else 2)
        print(
            f"add 4M {precision:4s}: submit+wait {ms:6.2f} ms (GPU timestamp {gpu:6.2f} ms, "
            f"{bytes_moved / ms / 1e6:5.2f} GB/s); with host upload/download {total:6.2f} ms"
        )
        ex.close()
    dev.close()


if __name__ == "__main__":
    main()
