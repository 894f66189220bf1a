"""`vknn`: compile and run ONNX models.

    vknn compile model.onnx [--pipeline standard] [--shapes x=1x3x224x224]
                            [--dims seq=128] [--emit out.mlir] [--print-ir]
                            [-o model.vxm | -o model.vkd.mlir] [--emit-vkd]
                            [--precision low] [--bucket x=1x3x224x224 ...]
    vknn run model.onnx|model.vxm [--input name=file.npy ...] [--backends cpu]
                        [--compare-ort] [--shapes ...] [--dims ...] [--seed 0]

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
    if not args.emit_vkd:
        return _compile_model(args, sys.stdout)
    # --emit-vkd: stdout carries only the vkd module (pipe it to vknn-opt).
    import contextlib

    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        return _compile_model(args, out)


def _compile_model(args: argparse.Namespace, vkd_out) -> int:  # type: ignore[no-untyped-def]
    from xdsl.passes import PassPipeline
    from xdsl.printer import Printer

    from vknn.dialects import make_context
    from vknn.frontend import import_onnx_file
    from vknn.ir.types import static_shape
    from vknn.transforms.pipelines import pipeline_spec
    from vknn.transforms.registry import available_passes

    if args.output is not None and args.output.suffix not in (".vxm", ".mlir"):
        raise VknnError(
            f"-o {args.output}: write a compiled model (.vxm) or the vkd module (.mlir), "
            f"not '{args.output.suffix or 'no suffix'}'"
        )
    t0 = time.perf_counter()
    module = import_onnx_file(args.model)
    t_import = time.perf_counter() - t0
    before = _op_counts(module)
    ctx = make_context()
    # The summary is of the first bucket; -o/--emit-vkd reuse its module.
    buckets = [{**_parse_shapes(args.shapes), **b} for b in args.bucket] or [
        _parse_shapes(args.shapes)
    ]
    spec = pipeline_spec(args.pipeline, _shapes_text(buckets[0]), args.dims)
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

    graph = _graph_ops(module)
    values = [r for op in graph for r in op.results]
    dynamic = [v for v in values if static_shape(v.type) is None and v.type.name != "none"]
    print(f"model      {args.model}")
    print(f"pipeline   {spec}")
    print(f"import     {t_import * 1000:8.1f} ms   {sum(before.values())} graph ops")
    for name, seconds in timings:
        print(f"  {name:24s} {seconds * 1000:8.1f} ms")
    print(
        f"result     {sum(after.values())} ops, "
        f"{len(values) - len(dynamic)}/{len(values)} values static"
    )
    for dialect, n in sorted(Counter(k.split(".")[0] for k in after.elements()).items()):
        print(f"  {dialect:8s} {n:6d} ops")
    for op_name, n in sorted(after.items()):
        print(f"    {op_name:28s} {n:5d}")
    left = sorted(k for k in after if k.startswith("onnx.") and k != "onnx.Constant")
    if left:
        print(f"not lowered to vx (will run on the CPU): {', '.join(left)}")
    if args.support_report:
        _write_support_report(module, args)
    if args.output or args.emit_vkd:
        _write_compiled(args, module, buckets, vkd_out)
    return 0


def _shapes_text(shapes: dict[str, tuple[int, ...]]) -> str:
    return ";".join(f"{k}={v}" for k, v in _bucket_text(shapes).items())


def _bucket_text(shapes: dict[str, tuple[int, ...]]) -> dict[str, str]:
    return {k: "x".join(str(d) for d in v) for k, v in shapes.items()}


def _bucket_arg(text: str) -> dict[str, tuple[int, ...]]:
    """`--bucket "ids=1x128,mask=1x128"` -> {"ids": (1, 128), "mask": (1, 128)}."""
    bucket: dict[str, tuple[int, ...]] = {}
    for item in text.split(","):
        name, eq, dims = item.strip().partition("=")
        parts = dims.split("x")
        if not name or not eq or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(
                f"bad bucket '{text}': expected NAME=AxBx... (positive dims), several inputs "
                'separated by commas, e.g. "x=1x3x224x224" or "ids=1x128,mask=1x128"'
            )
        if name in bucket:
            raise argparse.ArgumentTypeError(f"bad bucket '{text}': input '{name}' given twice")
        bucket[name] = tuple(int(p) for p in parts)
    return bucket


def _target_caps(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(caps, why there are none) for --caps: the device found, or a preset."""
    if args.caps == "device":
        from vknn.runtime.vulkan.context import shared_device

        device, _, why = shared_device()
        return (device.caps if device is not None else None), why
    from vknn.runtime.vulkan.caps import DeviceCaps

    return (DeviceCaps.lavapipe_like() if args.caps == "lavapipe" else DeviceCaps.h200_like()), None


def _write_compiled(args: argparse.Namespace, module, buckets: list, vkd_out) -> None:  # type: ignore[no-untyped-def]
    """-o model.vxm (compiled model), -o out.mlir (the vkd module), --emit-vkd (stdout)."""
    from vknn.ir.plan_to_vkd import build_vxm

    out = args.output
    caps, why = _target_caps(args)
    build = build_vxm(
        args.model,
        buckets=buckets,
        precision=args.precision,
        pipeline=args.pipeline,
        dims=_parse_dims(args.dims),
        caps=caps,
        no_vulkan=why,
        disable_vk_ops=args.disable_vk_ops,
        created_by=f"vknn compile {args.model} --precision {args.precision}"
        + "".join(
            f" --bucket {','.join(f'{k}={v}' for k, v in _bucket_text(b).items())}"
            for b in buckets
            if b
        ),
        first=(buckets[0], module),
    )
    if args.emit_vkd:
        vkd_out.write(build.vkd)
    if out is not None and out.suffix == ".mlir":
        out.write_text(build.vkd)
        print(f"vkd        {out} ({len(build.plans)} plan bucket(s), {build.metadata['target']})")
    elif out is not None:
        size = build.save(out)
        shapes = "; ".join(
            ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in b.items())
            for b in build.metadata["buckets"]
        )
        print(f"wrote      {out} ({size / 1e6:.1f} MB, precision {args.precision})")
        print(f"buckets    {shapes}")


def _write_support_report(module, args: argparse.Namespace) -> None:  # type: ignore[no-untyped-def]
    """Gate every op exactly as the runtime would, on the device found or on
    the capabilities named by --caps, and write the JSON report."""
    import json

    from vknn.ir.to_plan import module_to_plan
    from vknn.config import Config
    from vknn.runtime.partition import assign_backends
    from vknn.runtime.support import support_report

    config = Config(disable_vk_ops=args.disable_vk_ops)
    caps, why = None, None
    if args.caps == "device":
        from vknn.runtime.vulkan.context import shared_device

        device, _, why = shared_device()
        caps = device.caps if device is not None else None
    else:
        from vknn.runtime.vulkan.caps import DeviceCaps

        caps = DeviceCaps.lavapipe_like() if args.caps == "lavapipe" else DeviceCaps.h200_like()
    plan = module_to_plan(module)
    if caps is not None:
        from vknn.runtime.vulkan.split_large import split_oversized_gemms

        split_oversized_gemms(plan, caps.max_storage_buffer_range)
    assign_backends(plan, config, caps, why, fold_islands=False)
    report = support_report(plan)
    args.support_report.write_text(json.dumps(report, indent=1) + "\n")
    s = report["summary"]
    on = caps.name if caps is not None else f"no device ({why})"
    print(
        f"support  {s.get('vulkan', 0)}/{s['total']} nodes on Vulkan, {s.get('cpu', 0)} on the CPU "
        f"(gates of {on}) -> {args.support_report}"
    )


def _parse_shapes(spec: str) -> dict[str, tuple[int, ...]]:
    from vknn.transforms.infer_shapes import parse_shapes

    return parse_shapes(spec)


def _parse_dims(spec: str) -> dict[str, int]:
    from vknn.transforms.infer_shapes import parse_dims

    return parse_dims(spec)


def random_inputs(session, seed: int = 0) -> dict:  # type: ignore[no-untyped-def]
    """Seeded random inputs of the shapes the session's first plan expects."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for spec, _ in session.plan.inputs:
        dtype = spec.np_dtype
        if dtype.kind == "f":
            feeds[spec.name] = rng.standard_normal(spec.shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[spec.name] = rng.random(spec.shape) < 0.5
        else:
            feeds[spec.name] = rng.integers(0, 10, spec.shape).astype(dtype)
    return feeds


def compare(ref, out) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(cosine similarity, max abs error) of two arrays."""
    import numpy as np

    a = np.asarray(ref, dtype=np.float64).ravel()
    b = np.asarray(out, dtype=np.float64).ravel()
    if a.size == 0:
        return 1.0, 0.0
    err = float(np.max(np.abs(a - b)))
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return (1.0 if na == nb else 0.0), err
    return float(np.dot(a, b) / (na * nb)), err


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    from vknn.config import Config
    from vknn.session import Session

    config = Config(
        backends=tuple(args.backends.split(",")),
        precision=args.precision,
        shapes=_parse_shapes(args.shapes),
        dims=_parse_dims(args.dims),
        profiling=args.profile,
        disable_vk_ops=args.disable_vk_ops,
    )
    t0 = time.perf_counter()
    session = Session(args.model, config)
    t_plan = time.perf_counter() - t0
    feeds = random_inputs(session, args.seed)
    for item in args.input:
        name, _, path = item.partition("=")
        feeds[name] = np.load(path)
    t0 = time.perf_counter()
    outputs = session.run(feeds)
    t_run = time.perf_counter() - t0
    backends = Counter(session.node_backends().values())
    print(f"model    {args.model}")
    print(
        f"plan     {t_plan * 1000:.1f} ms; nodes by backend: "
        + ", ".join(f"{b} {n}" for b, n in sorted(backends.items()))
    )
    print(f"run      {t_run * 1000:.1f} ms")
    ref = None
    if args.compare_ort:
        import onnxruntime as ort

        if session._vxm is not None:
            raise VknnError(f"--compare-ort needs the ONNX model; {args.model} is a compiled .vxm")

        so = ort.SessionOptions()
        so.log_severity_level = 3
        ort_sess = ort.InferenceSession(str(args.model), so, providers=["CPUExecutionProvider"])
        ref = dict(
            zip([o.name for o in ort_sess.get_outputs()], ort_sess.run(None, feeds), strict=True)
        )
    for name, value in outputs.items():
        line = (
            f"output   {name}: {value.dtype}{list(value.shape)} "
            f"checksum {float(np.sum(value, dtype=np.float64)):.6g}"
        )
        if ref is not None:
            cos, err = compare(ref[name], value)
            scale = float(np.max(np.abs(ref[name]))) if ref[name].size else 0.0
            line += (
                f"  vs onnxruntime: cosine {cos:.7f}, max abs err {err:.3g} (max |ref| {scale:.3g})"
            )
        print(line)
    if args.profile:
        from vknn.session import format_profile

        print(format_profile(session.profile(feeds), top=args.profile_top))
    fallbacks = session.fallback_reasons()
    if fallbacks:
        print(
            f"fallbacks: {len(fallbacks)} node(s) not on the preferred backend, e.g. "
            + "; ".join(f"{k}: {v}" for k, v in list(fallbacks.items())[:3])
        )
    return 0


def _graph_ops(module) -> list:  # type: ignore[no-untyped-def]
    """Function-level ops (not the scalar ops inside fused bodies)."""
    from xdsl.dialects.func import FuncOp

    return [
        op
        for f in module.ops
        if isinstance(f, FuncOp)
        for op in f.body.block.ops
        if op.name != "func.return"
    ]


def _op_counts(module) -> Counter[str]:  # type: ignore[no-untyped-def]
    return Counter(op.name for op in _graph_ops(module))


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
    c.add_argument("--support-report", type=Path, help="write which backend runs each node (JSON)")
    c.add_argument(
        "--caps",
        choices=("device", "lavapipe", "h200"),
        default="device",
        help="device capabilities the gates judge by (default: the Vulkan device found)",
    )
    c.add_argument(
        "--disable-vk-ops", default="", help='op kinds kept off Vulkan, e.g. "Conv,Softmax"'
    )
    c.add_argument(
        "-o",
        "--output",
        type=Path,
        help="write the compiled model (.vxm) or its vkd module (.mlir) for the --caps target",
    )
    c.add_argument("--emit-vkd", action="store_true", help="print the vkd module")
    c.add_argument(
        "--bucket",
        action="append",
        default=[],
        type=_bucket_arg,
        metavar="NAME=AxB[,NAME=AxB]",
        help="an input-shape set to compile a plan for (repeat for several)",
    )
    c.add_argument(
        "--precision",
        choices=("high", "normal", "low"),
        default="high",
        help="the precision a session on the .vxm runs at by default",
    )
    c.set_defaults(func=_compile)
    r = sub.add_parser("run", help="run a model (random inputs unless given)")
    r.add_argument("model", type=Path)
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    r.add_argument("--backends", default="vulkan,cpu", help="priority order, e.g. cpu")
    r.add_argument("--shapes", default="")
    r.add_argument("--dims", default="")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--compare-ort", action="store_true", help="compare with onnxruntime (CPU)")
    r.add_argument(
        "--precision",
        choices=("high", "normal", "low"),
        default=None,
        help="default: high, or the precision a .vxm was compiled with",
    )
    r.add_argument(
        "--disable-vk-ops", default="", help='op kinds kept off Vulkan, e.g. "Conv,Softmax"'
    )
    r.add_argument(
        "--profile", action="store_true", help="per-dispatch GPU times (timestamp queries)"
    )
    r.add_argument("--profile-top", type=int, default=25, help="rows of the profile to print")
    r.set_defaults(func=_run)
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
