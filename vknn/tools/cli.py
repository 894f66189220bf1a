"""`vknn`: compile and run ONNX models.

    vknn compile model.onnx [--pipeline standard] [--shapes x=1x3x224x224]
                            [--dims seq=128] [--emit out.mlir] [--print-ir]
                            [-o model.vxm | -o model.vkd.mlir] [--emit-vkd]
                            [--precision low] [--bucket x=1x3x224x224 ...]
    vknn run model.onnx|model.vxm [--input name=file.npy ...] [--backends cpu]
                        [--compare-ort] [--shapes ...] [--dims ...] [--seed 0]
                        [--device 0|NAME] [--profile] [--trace trace.json]
    vknn devices [--json]
    vknn bench model.onnx|model.vxm [--batch N] [--runs N] [--devices all|0,1] [--json]
                        [--plot out.png] [--no-ort]

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
from typing import NoReturn

from vknn.errors import VknnError


def _compile(args: argparse.Namespace) -> int:
    if not args.emit_vkd:
        return _compile_model(args, sys.stdout)
    # --emit-vkd: stdout carries only the vkd module (pipe it to vknn-opt).
    import contextlib

    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        return _compile_model(args, out)


def _lowering_options(args: argparse.Namespace, unavailable: str = ""):  # type: ignore[no-untyped-def]
    from vknn.compiler import LoweringOptions

    return LoweringOptions(
        precision=args.precision,
        backends=tuple(b.strip() for b in args.backends.split(",") if b.strip()),
        disable_vk_ops=args.disable_vk_ops,
        device_layout=args.device_layout,
        fastmath=args.fastmath,
        vulkan_unavailable=unavailable,
    )


def _targets(args: argparse.Namespace) -> list[tuple[object, str]]:
    """(target, why there is none) per --target (default: the device found)."""
    from vknn.kernels.targets import target

    names = args.target or ["from-device"]
    out: list[tuple[object, str]] = []
    for name in names:
        if name == "from-device" and "vulkan" not in args.backends:
            out.append((None, ""))  # nothing runs on a GPU: no device is opened
            continue
        if name == "from-device":
            from vknn.runtime.vulkan.context import shared_device

            device, _, why = shared_device()
            if device is None:
                if args.target:
                    raise VknnError(f"--target from-device: {why or 'no Vulkan device'}")
                out.append((None, why or "no Vulkan device"))
                continue
        out.append((target(name), ""))
    return out


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
    if args.model.suffix == ".mlir":
        return _compile_text(args, vkd_out)
    t0 = time.perf_counter()
    module = import_onnx_file(args.model)
    t_import = time.perf_counter() - t0
    before = _op_counts(module)
    ctx = make_context()
    buckets = [{**_parse_shapes(args.shapes), **b} for b in args.bucket] or [
        _parse_shapes(args.shapes)
    ]
    spec = pipeline_spec(args.pipeline, _shapes_text(buckets[0]), args.dims)
    timings: list[tuple[str, float]] = []
    mark = [time.perf_counter()]

    from vknn.progress import Bar

    passes = PassPipeline.parse_spec(available_passes(), spec).passes
    bar = Bar(len(passes), "vknn compile (graph)")

    def callback(prev, _module, _next) -> None:  # type: ignore[no-untyped-def]
        now = time.perf_counter()
        if prev is not None:
            timings.append((prev.name, now - mark[0]))
            bar.update(1, _next.name if _next is not None else "")
        mark[0] = now

    with bar:
        PassPipeline(passes, callback).apply(ctx, module)
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
    targets = _targets(args) if (args.output or args.emit_vkd or args.support_report) else []
    if args.support_report:
        _write_support_report(module, args, targets[0])
    if args.output or args.emit_vkd:
        _write_compiled(args, module, buckets, targets, vkd_out)
    return 0


def _lowered(args: argparse.Namespace, vx_modules: list, target_entry) -> object:  # type: ignore[no-untyped-def]
    """The vx modules (one per bucket) lowered for one target, merged."""
    from vknn.compiler import lower, merge_modules

    target, why = target_entry
    opts = _lowering_options(args, why)
    return merge_modules([lower(m.clone(), opts, target) for m in vx_modules])


def _write_compiled(  # type: ignore[no-untyped-def]
    args: argparse.Namespace, first, buckets: list, targets: list, vkd_out
) -> None:
    """-o model.vxm (one variant per --target), -o out.mlir (the vkd module of
    the first target, weights beside it), --emit-vkd (stdout)."""
    from xdsl.printer import Printer

    from vknn.compiler import graph_pipeline, import_any, save_text
    from vknn.serialize import module_to_program

    vx_modules = [first]
    for b in buckets[1:]:
        vx_modules.append(
            graph_pipeline(import_any(args.model), args.pipeline, b, _parse_dims(args.dims))
        )
    lowered = [_lowered(args, vx_modules, t) for t in targets]
    if args.emit_vkd:
        Printer(stream=vkd_out).print_op(lowered[0])
        vkd_out.write("\n")
    out = args.output
    if out is not None and out.suffix == ".mlir":
        sidecar = save_text(lowered[0], out)
        print(f"vkd        {out} ({len(buckets)} bucket(s)), weights in {sidecar.name}")
    elif out is not None:
        from vknn.runtime.vxm import save_vxm

        meta = _model_metadata(args.model)
        programs = [module_to_program(m, meta) for m in lowered]
        _check_distinct_buckets(programs[0], args.bucket)
        created = (
            f"vknn compile {args.model} --precision {args.precision}"
            + "".join(f" --target {t}" for t in args.target)
            + "".join(
                f" --bucket {','.join(f'{k}={v}' for k, v in _bucket_text(b).items())}"
                for b in buckets
                if b
            )
        )
        size = save_vxm(out, programs, created)
        shapes = "; ".join(
            ", ".join(f"{io.name}={'x'.join(map(str, io.shape))}" for io in b_inputs)
            for b_inputs in _bucket_inputs(programs[0])
        )
        names = ", ".join(p["compiled_for"]["name"] for p in programs)
        print(
            f"wrote      {out} ({size / 1e6:.1f} MB, precision {args.precision}, targets {names})"
        )
        print(f"buckets    {shapes}")


def _check_distinct_buckets(program: dict, given: list) -> None:  # type: ignore[type-arg]
    """Two --bucket values that compile to one input-shape set make a .vxm no
    session could load: refused, naming both."""
    seen: dict[tuple, int] = {}  # type: ignore[type-arg]
    for i, b in enumerate(program["buckets"]):
        key = tuple(tuple(io["shape"]) for io in b["inputs"])
        if key in seen:
            text = ",".join(f"{k}={v}" for k, v in _bucket_text(given[i]).items()) if given else ""
            raise VknnError(
                f"--bucket {i + 1} ({text}) compiles to the same input shapes as bucket "
                f"{seen[key] + 1}; give each input-shape set once"
            )
        seen[key] = i


def _bucket_inputs(program: dict) -> list:  # type: ignore[type-arg]
    from vknn.runtime.program import IO

    return [
        [IO(i["name"], tuple(i["shape"]), i["dtype"], i["value"]) for i in b["inputs"]]
        for b in program["buckets"]
    ]


def _model_metadata(path: Path) -> dict:  # type: ignore[type-arg]
    """Declared inputs and outputs (symbolic dims kept) for a .vxm's sessions."""
    from vknn.frontend.loader import load_model_file
    from vknn.session import _declared

    proto = load_model_file(path)
    inits = {t.name for t in proto.graph.initializer}

    def info(vi) -> dict:  # type: ignore[no-untyped-def,type-arg]
        t = _declared(vi)
        return {"name": t.name, "dims": None if t.dims is None else list(t.dims),
                "dtype": t.dtype.name}  # fmt: skip

    return {
        "model": str(path.name),
        "producer": proto.producer_name,
        "inputs": [info(vi) for vi in proto.graph.input if vi.name not in inits],
        "outputs": [info(vi) for vi in proto.graph.output],
    }


def _compile_text(args: argparse.Namespace, vkd_out) -> int:  # type: ignore[no-untyped-def]
    """`vknn compile m.vkd.mlir -o m.vxm`: printed IR (any lowering stage)
    through the rest of the pipeline into a compiled model."""
    from vknn.compiler import finish_text
    from vknn.runtime.vxm import save_vxm

    program = finish_text(args.model)
    if args.output is None or args.output.suffix != ".vxm":
        raise VknnError(f"{args.model}: compile printed IR with -o model.vxm")
    size = save_vxm(args.output, [program], f"vknn compile {args.model}")
    print(f"wrote      {args.output} ({size / 1e6:.1f} MB, precision {program['precision']})")
    return 0


def _write_support_report(module, args: argparse.Namespace, target_entry) -> None:  # type: ignore[no-untyped-def]
    """Lower a copy of the module exactly as a session would and write where
    each node of the graph lands (the same rows as `Session.node_report`)."""
    import json

    from vknn.compiler import lower

    target, why = target_entry
    opts = _lowering_options(args, why)
    lowered = lower(module.clone(), opts, target)
    report = support_report(lowered)
    args.support_report.write_text(json.dumps(report, indent=1) + "\n")
    s = report["summary"]
    on = getattr(target, "name", None) or f"no device ({why})"
    others = ", ".join(f"{b} {n}" for b, n in s.items() if b not in ("total", "vulkan", "reasons"))
    print(
        f"support  {s.get('vulkan', 0)}/{s['total']} nodes on Vulkan"
        f"{'; ' + others if others else ''} (gates of {on}) -> {args.support_report}"
    )


def support_report(module, preferred: str = "vulkan") -> dict:  # type: ignore[no-untyped-def,type-arg]
    """Which backend each ONNX node of a lowered module runs on (or that it
    is folded / eliminated), and why (`vknn.runtime.report`, as the session)."""
    from vknn.runtime.report import node_rows, summary
    from vknn.serialize import module_to_program

    program = module_to_program(module)
    rows = node_rows(program["buckets"][0]["nodes"], preferred)
    nodes = [
        {"name": r.name, "backend": r.backend, **({"reason": r.reason} if r.reason else {})}
        for r in rows
    ]
    return {"nodes": nodes, "summary": summary(rows)}


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
    for io in session.bucket.spec.inputs:
        dtype = np.dtype(io.dtype)
        if dtype.kind == "f":
            feeds[io.name] = rng.standard_normal(io.shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[io.name] = rng.random(io.shape) < 0.5
        else:
            feeds[io.name] = rng.integers(0, 10, io.shape).astype(dtype)
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
        profiling=args.profile or args.trace is not None,
        disable_vk_ops=args.disable_vk_ops,
        device=args.device,
    )
    t0 = time.perf_counter()
    session = Session(args.model, config)
    t_plan = time.perf_counter() - t0
    feeds = random_inputs(session, args.seed)
    for item in args.input:
        name, _, path = item.partition("=")
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:  # missing, not .npy, object array
            raise VknnError(
                f"--input {name}={path}: cannot load ({' '.join(str(e).split())})"
            ) from None
    t0 = time.perf_counter()
    outputs = session.run(feeds)
    t_run = time.perf_counter() - t0
    from vknn.runtime.report import plan_line

    print(f"model    {args.model}")
    print(f"plan     {t_plan * 1000:.1f} ms; {plan_line(session.node_report())}")
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
    if args.trace is not None:
        from vknn.trace import Trace, run_traced

        trace = Trace(str(args.model))
        run_traced(session, trace, feeds)
        trace.write(args.trace)
        print(f"trace    {args.trace}: {len(trace.events)} events of one run (Chrome trace JSON)")
    fallbacks = session.fallback_reasons()
    if fallbacks:
        print(
            f"fallbacks: {len(fallbacks)} node(s) not on the preferred backend, e.g. "
            + "; ".join(f"{k}: {v}" for k, v in list(fallbacks.items())[:3])
        )
    return 0


def _bench(args: argparse.Namespace) -> int:
    import json

    from vknn.tools.bench import bench, format_result, plot

    result = bench(args)
    print(format_result(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"json       {args.json}")
    if args.plot is not None:
        plot(result, args.plot)
        print(f"plot       {args.plot}")
    return 0


def _devices(args: argparse.Namespace) -> int:
    import json

    from vknn.devices import format_devices, list_devices

    devices = list_devices()
    if args.json:
        print(json.dumps([d.to_dict() for d in devices], indent=1))
    else:
        print(format_devices(devices))
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


def _seed_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"--seed must be a non-negative integer, not {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one `vknn: error:` line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        print(f"vknn: error: {text} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vknn", description="ONNX on Vulkan")
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
        "--target",
        action="append",
        default=[],
        metavar="NAME",
        help="generic, lavapipe, nvidia, from-device (the default) or a target .json; "
        "repeat for a .vxm with one variant per target",
    )
    c.add_argument("--backends", default="vulkan,cpu", help="priority order, e.g. cpu")
    c.add_argument("--device-layout", choices=("nc4hw4", "flat"), default="nc4hw4")
    c.add_argument("--fastmath", choices=("auto", "on", "off"), default="auto")
    c.add_argument(
        "--disable-vk-ops", default="", help='op kinds kept off Vulkan, e.g. "Conv,Softmax"'
    )
    c.add_argument(
        "-o",
        "--output",
        type=Path,
        help="write the compiled model (.vxm) or its vkd module (.mlir, weights beside it)",
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
    r.add_argument("--seed", type=_seed_arg, default=0)
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
    r.add_argument("--device", default=None, help="Vulkan device: index or name substring")
    r.add_argument(
        "--trace", type=Path, default=None, help="write a Chrome-trace JSON of one profiled run"
    )
    r.set_defaults(func=_run)
    k = sub.add_parser("cache", help="list or clear model caches and the user cache")
    k.add_argument("action", choices=("list", "clear"))
    k.add_argument("paths", nargs="*", type=Path, help="models, .vkcache files or folders")
    k.add_argument("--user", action="store_true", help="clear: also the user folder's SPIR-V")
    k.set_defaults(func=_cache)
    d = sub.add_parser("devices", help="list the Vulkan devices and what the compiler sees")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=_devices)
    b = sub.add_parser("bench", help="latency, throughput, start-up, devices, vs onnxruntime")
    b.add_argument("model", type=Path)
    b.add_argument("--batch", type=int, default=None, help="batch on every input's first axis")
    b.add_argument("--runs", type=int, default=50)
    b.add_argument("--warmup", type=int, default=5)
    b.add_argument("--precision", choices=("high", "normal", "low"), default=None)
    b.add_argument("--backends", default="vulkan,cpu")
    b.add_argument("--dims", default="", help="symbolic dims, seq=128")
    b.add_argument(
        "--devices",
        default="",
        help='"all" (a session per GPU), or indices or names: 0,1 (default: the default device)',
    )
    b.add_argument("--no-ort", action="store_true", help="skip onnxruntime (CPU) side by side")
    b.add_argument("--json", type=Path, default=None, help="write every number as JSON")
    b.add_argument("--plot", type=Path, default=None, help="latency histogram and op-kind bars")
    b.set_defaults(func=_bench)
    return parser


def _cache(args: argparse.Namespace) -> int:
    from vknn.tools.cache_cmd import clear_caches, list_caches

    if args.action == "list":
        return list_caches(args.paths or [Path.cwd()])
    return clear_caches(args.paths, args.user)


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    from vknn.hints import DECLARE_SYNTAX

    args = build_parser().parse_args(argv)
    token = DECLARE_SYNTAX.set("cli")
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        text = str(message)
        if not text.startswith("vknn: "):
            return shown(message, category, filename, lineno, file, line)
        print(f"vknn: warning: {text.removeprefix('vknn: ')}", file=sys.stderr)

    warnings.showwarning = show
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", UserWarning)  # every run says its own
            return args.func(args)
    except VknnError as e:
        print(f"vknn: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    except BaseException as e:  # noqa: BLE001  (the last line of defence: one line, never a traceback)
        return top_level_error("vknn", e)
    finally:
        warnings.showwarning = shown
        DECLARE_SYNTAX.reset(token)


def top_level_error(tool: str, e: BaseException) -> int:
    """What a tool prints for an exception no check turned into a VknnError:
    one line and a non-zero status (VKNN_DEBUG=1: the traceback too).
    SystemExit passes through; Ctrl-C exits 130 quietly."""
    import os
    import traceback

    if isinstance(e, SystemExit):
        raise e
    if isinstance(e, KeyboardInterrupt):
        return 130
    if os.environ.get("VKNN_DEBUG"):
        traceback.print_exception(e)
    text = " ".join(str(e).split())
    if type(e).__name__ == "ArgSpecParseError":  # xDSL's, a BaseException: a bad option
        msg = f"bad pass pipeline or pass option: {text}"
    elif isinstance(e, KeyError) and isinstance(e.args[0], str) and " " in e.args[0]:
        msg = " ".join(e.args[0].split())  # a lookup that explains itself (unknown pipeline)
    elif isinstance(e, MemoryError):
        msg = "out of memory" + (f" ({text})" if text else "")
    elif isinstance(e, OSError) and e.filename is not None:
        msg = f"{e.filename}: {e.strerror or text}"
    else:
        msg = (
            f"internal error ({type(e).__name__}: {text or 'no message'}); please report it "
            "(VKNN_DEBUG=1 prints the traceback)"
        )
    print(f"{tool}: error: {msg}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
