"""Compile-time benchmark: import and pass-pipeline time per model.

    python benchmarks/bench_compile.py [--pipeline standard] [--runs 5] [models...]

Prints, per model, the median over `--runs` of the import time and of the
pipeline time (in-process, Python start-up excluded), the graph-op count
before and after (function-level ops; constants excluded), and what is left:
BatchNormalizations, fused pointwise ops, layout converts, onnx ops.
Without model arguments it runs the nine light models of the onnx wheel.
Measures this machine as it is; state the machine with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vknn.dialects import make_context  # noqa: E402
from vknn.frontend import import_onnx_file  # noqa: E402
from vknn.transforms.pipelines import pipeline_spec  # noqa: E402
from vknn.transforms.registry import available_passes  # noqa: E402

LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


def graph_ops(module) -> list[str]:  # type: ignore[no-untyped-def]
    """Names of the function-level graph ops (constants, NoValue and the return
    excluded; ops inside fused bodies are not graph ops)."""
    from xdsl.dialects.func import FuncOp

    skip = {"func.return", "onnx.Constant", "onnx.NoValue", "vx.constant"}
    return [
        op.name
        for f in module.ops
        if isinstance(f, FuncOp)
        for op in f.body.block.ops
        if op.name not in skip
    ]


def count_ops(module) -> int:  # type: ignore[no-untyped-def]
    return len(graph_ops(module))


def measure(path: Path, spec: str, runs: int) -> tuple[float, float, int, int]:
    from xdsl.passes import PassPipeline

    imports, pipes = [], []
    before = after = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        module = import_onnx_file(path)
        t1 = time.perf_counter()
        before = count_ops(module)
        PassPipeline.parse_spec(available_passes(), spec).apply(make_context(), module)
        t2 = time.perf_counter()
        names = graph_ops(module)
        after = len(names)
        imports.append(t1 - t0)
        pipes.append(t2 - t1)
    detail = {
        "batchnorm": sum(n in ("vx.batchnorm", "onnx.BatchNormalization") for n in names),
        "fused": names.count("vx.fused_pointwise"),
        "converts": names.count("vx.convert_layout"),
        "onnx_left": sum(n.startswith("onnx.") for n in names),
    }
    return statistics.median(imports), statistics.median(pipes), before, after, detail


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", type=Path)
    p.add_argument("--pipeline", default="standard")
    p.add_argument("--dims", default="")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    models = args.models or sorted(LIGHT.glob("light_*.onnx"))
    spec = pipeline_spec(args.pipeline, dims=args.dims)
    print(f"pipeline: {spec}; median of {args.runs} runs; {os.cpu_count()} cores")
    print(
        f"{'model':22s} {'import ms':>10s} {'pipeline ms':>12s} {'ops before':>11s} "
        f"{'ops after':>10s} {'BN left':>8s} {'fused':>6s} {'converts':>9s} {'onnx left':>10s}"
    )
    for path in models:
        t_imp, t_pipe, before, after, d = measure(path, spec, args.runs)
        print(
            f"{path.stem:22s} {t_imp * 1e3:10.1f} {t_pipe * 1e3:12.1f} {before:11d} {after:10d} "
            f"{d['batchnorm']:8d} {d['fused']:6d} {d['converts']:9d} {d['onnx_left']:10d}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
