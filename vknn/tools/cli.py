"""`vknn`: compile (and, as the runtime lands, run) ONNX models.

    vknn compile model.onnx [--pipeline standard] [--shapes x=1x3x224x224]
                            [--dims seq=128] [--emit out.mlir] [--print-ir]

User errors (bad files, undeclared dynamic axes, unsupported ops) print as
one `vknn: error: ...` line and exit with status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from vknn.errors import VknnError


def _compile(args: argparse.Namespace) -> int:
    from xdsl.passes import PassPipeline
    from xdsl.printer import Printer

    from vknn.dialects import make_context
    from vknn.frontend import import_onnx_file
    from vknn.ir.types import static_shape
    from vknn.transforms.pipelines import pipeline_spec
    from vknn.transforms.registry import available_passes

    t0 = time.perf_counter()
    module = import_onnx_file(args.model)
    t_import = time.perf_counter() - t0
    before = _op_counts(module)
    ctx = make_context()
    spec = pipeline_spec(args.pipeline, args.shapes, args.dims)
    timings: list[tuple[str, float]] = []
    mark = [time.perf_counter()]

    def callback(prev, _module, _next) -> None:  # type: ignore[no-untyped-def]
        now = time.perf_counter()
        if prev is not None:
            timings.append((prev.name, now - mark[0]))
        mark[0] = now

    PassPipeline.parse_spec(available_passes(), spec, callback).apply(ctx, module)
    module.verify()
    after = _op_counts(module)

    if args.emit:
        with open(args.emit, "w") as f:
            Printer(stream=f).print_op(module)
            f.write("\n")
    if args.print_ir:
        Printer(stream=sys.stdout).print_op(module)
        print()

    values = [r for op in module.walk() for r in op.results]
    dynamic = [v for v in values if static_shape(v.type) is None and v.type.name != "none"]
    print(f"model      {args.model}")
    print(f"pipeline   {spec}")
    print(f"import     {t_import * 1000:8.1f} ms   {sum(before.values())} ops")
    for name, seconds in timings:
        print(f"  {name:24s} {seconds * 1000:8.1f} ms")
    print(f"result     {sum(after.values())} ops, {len(values) - len(dynamic)}/{len(values)} values static")
    for dialect, n in sorted(Counter(k.split('.')[0] for k in after.elements()).items()):
        print(f"  {dialect:8s} {n:6d} ops")
    for op_name, n in sorted(after.items()):
        print(f"    {op_name:28s} {n:5d}")
    left = sorted(k for k in after if k.startswith("onnx.") and k != "onnx.Constant")
    if left:
        print(f"not lowered to vx (will run on the CPU): {', '.join(left)}")
    return 0


def _op_counts(module) -> Counter[str]:  # type: ignore[no-untyped-def]
    skip = {"builtin.module", "func.func", "func.return"}
    return Counter(op.name for op in module.walk() if op.name not in skip)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vknn", description="ONNX on Vulkan")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="import a model and run the compiler pipeline")
    c.add_argument("model", type=Path)
    c.add_argument("--pipeline", default="standard")
    c.add_argument("--shapes", default="", help="input shapes, x=1x3x224x224;y=1x128")
    c.add_argument("--dims", default="", help="symbolic dims, batch=1,seq=128")
    c.add_argument("--emit", type=Path, help="write the resulting IR to this file")
    c.add_argument("--print-ir", action="store_true", help="print the resulting IR")
    c.set_defaults(func=_compile)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except VknnError as e:
        print(f"vknn: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
