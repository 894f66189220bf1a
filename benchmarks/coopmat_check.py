"""Tensor-core (cooperative-matrix) check: every coopmat kernel against numpy,
and whole models at `low` with coopmat against the `high` (fp32) run, with
timings of coopmat vs the scalar kernels on the same device.

    python benchmarks/coopmat_check.py [--require-coopmat] [--quick] [--out DIR]
                                       [--dry-run] [--models resnet50,bert] [--runs 30]
                                       [--only SUBSTR,...] [--batch N] [--autotune fast]

- kernels: one small ONNX graph per case (MatMul, batched MatMul with
  transposed / broadcast operands, Gemm with C and trans_b, 1x1 / k x k /
  strided / grouped / padded Conv with bias + Relu + residual epilogues,
  attention), shapes with M, N, K off the 16 / 32 / 64 / 128 tiles included;
  compiled at `low` for the device (`from-device`), checked to have recorded
  a `coopmat` dispatch, run, compared with a float64 numpy reference of the
  fp16-rounded inputs (cosine and max error relative to max |ref|), then
  timed (median GPU time of its dispatches from timestamp queries) against
  the same case compiled with `VKNN_COOPMAT=0` (the scalar kernels).
- models: ResNet-50 (onnx light model) and a BERT-mini encoder (tests/models)
  at `high`, `low` without coopmat and `low` with coopmat: cosine of each
  `low` output vs the `high` one and of coopmat vs plain `low`, coopmat
  dispatch count, median run time and GPU time (timestamp queries). Any
  bench_models.py model works (`--models resnet18 --batch 64` for a
  throughput figure: resnet18, mobilenet_v2 and bert have a symbolic batch);
  `--autotune fast` tunes the `low` sessions (coopmat vs scalar configs).

--require-coopmat: exit 1 when the device has no VK_KHR_cooperative_matrix
(16x16x16 fp16 -> fp32 subgroup shape). --dry-run: small shapes, 3 runs, no
model unless --models is given: to test the script itself on any device
(lavapipe: no coopmat, so every case reports "not selected"). --out DIR:
writes coopmat_check.json there. Exit status 1 when any selected case fails
its tolerance or a model's `low` coopmat output is below cosine 0.999 against
its `low` output without coopmat (the cosine of each against `high` is
reported beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

REL_TOL = 2e-2
"""max |y - ref| / max |ref|: fp16 inputs and output, fp32 accumulation."""
COS_TOL = 0.9999
MODEL_COS_TOL = 0.999


@dataclass
class Case:
    name: str
    model: Any  # onnx.ModelProto
    feeds: dict[str, np.ndarray]
    ref: np.ndarray
    kind: str = "matmul"
    extra: dict[str, Any] = field(default_factory=dict)


def _f16(a: np.ndarray) -> np.ndarray:
    """What the device holds at `low`: the fp16-rounded values, as float64."""
    return a.astype(np.float16).astype(np.float64)


def _graph(nodes: list[Any], inputs: dict[str, tuple[int, ...]], inits: dict[str, np.ndarray]):  # type: ignore[no-untyped-def]
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
    outs = [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)]
    init = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()]
    g = helper.make_graph(nodes, "g", ins, outs, init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _node(op: str, ins: list[str], outs: list[str], **attrs: Any) -> Any:
    from onnx import helper

    return helper.make_node(op, ins, outs, name=f"{op.lower()}_{outs[0]}", **attrs)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- cases -------------------------------------------------------------------


def matmul_case(a_shape: tuple[int, ...], b_shape: tuple[int, ...], seed: int = 0) -> Case:
    """y = relu(A @ B + bias), B a constant."""
    rng = _rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = (rng.standard_normal(b_shape) / np.sqrt(b_shape[-2])).astype(np.float32)
    bias = rng.standard_normal(b_shape[-1]).astype(np.float32)
    nodes = [
        _node("MatMul", ["a", "b"], ["t"]),
        _node("Add", ["t", "bias"], ["u"]),
        _node("Relu", ["u"], ["y"]),
    ]
    model = _graph(nodes, {"a": a_shape}, {"b": b, "bias": bias})
    ref = np.maximum(_f16(a) @ _f16(b) + _f16(bias), 0)
    name = f"matmul {'x'.join(map(str, a_shape))} @ {'x'.join(map(str, b_shape))} +bias relu"
    return Case(name, model, {"a": a}, ref)


def bmm_case(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], trans_b: bool, seed: int = 1
) -> Case:
    """Both operands inputs (attention-like batched products); trans_b reads
    B through a Transpose (a strided view)."""
    rng = _rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    if trans_b:
        perm = list(range(len(b_shape) - 2)) + [len(b_shape) - 1, len(b_shape) - 2]
        nodes = [_node("Transpose", ["b"], ["bt"], perm=perm), _node("MatMul", ["a", "bt"], ["y"])]
        ref = _f16(a) @ np.swapaxes(_f16(b), -1, -2)
    else:
        nodes = [_node("MatMul", ["a", "b"], ["y"])]
        ref = _f16(a) @ _f16(b)
    model = _graph(nodes, {"a": a_shape, "b": b_shape}, {})
    t = "^T" if trans_b else ""
    name = f"bmm {'x'.join(map(str, a_shape))} @ {'x'.join(map(str, b_shape))}{t}"
    return Case(name, model, {"a": a, "b": b}, ref)


def gemm_case(m: int, n: int, k: int, seed: int = 2) -> Case:
    """Gemm trans_b (a Linear layer) with alpha, beta and C."""
    rng = _rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
    c = rng.standard_normal((n,)).astype(np.float32)
    nodes = [_node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)]
    model = _graph(nodes, {"a": (m, k)}, {"w": w, "c": c})
    ref = 0.5 * (_f16(a) @ _f16(w).T) + 2.0 * _f16(c)
    return Case(f"gemm {m}x{k} @ ({n}x{k})^T a0.5 b2 C", model, {"a": a}, ref, "gemm")


def _conv_ref(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: int, group: int
) -> np.ndarray:
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg : (g + 1) * cg]
        cols = np.empty((n, cg, kh, kw, oh, ow))
        for i in range(kh):
            for j in range(kw):
                cols[:, :, i, j] = xs[
                    :, :, i : i + stride * oh : stride, j : j + stride * ow : stride
                ]
        wg = w[g * mg : (g + 1) * mg].reshape(mg, -1)
        y[:, g * mg : (g + 1) * mg] = np.einsum(
            "mk,nkp->nmp", wg, cols.reshape(n, -1, oh * ow)
        ).reshape(n, mg, oh, ow)
    return y + b.reshape(1, -1, 1, 1)


def conv_case(
    x_shape: tuple[int, int, int, int], m: int, k: int, stride: int = 1, pad: int = 0,
    group: int = 1, residual: bool = False, layout: str = "nc4hw4", seed: int = 3,
) -> Case:  # fmt: skip
    """y = relu(conv(x) + bias [+ r]); r an input of y's shape (residual)."""
    rng = _rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    cg = x_shape[1] // group
    w = (rng.standard_normal((m, cg, k, k)) / np.sqrt(cg * k * k)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [pad] * 4, "group": group}
    nodes = [_node("Conv", ["x", "w", "b"], ["t"], **attrs)]
    ref = _conv_ref(_f16(x), _f16(w), _f16(b), stride, pad, group)
    inputs = {"x": x_shape}
    feeds = {"x": x}
    if residual:
        r = rng.standard_normal(ref.shape).astype(np.float32)
        nodes += [_node("Add", ["t", "r"], ["u"]), _node("Relu", ["u"], ["y"])]
        inputs["r"] = ref.shape
        feeds["r"] = r
        ref = np.maximum(ref + _f16(r), 0)
    else:
        nodes += [_node("Relu", ["t"], ["y"])]
        ref = np.maximum(ref, 0)
    model = _graph(nodes, inputs, {"w": w, "b": b})
    g = f" g{group}" if group > 1 else ""
    res = " +res" if residual else ""
    lay = " flat" if layout == "flat" else ""
    name = f"conv {'x'.join(map(str, x_shape))} {k}x{k}/{stride} p{pad}{g} -> {m}{res}{lay}"
    return Case(name, model, feeds, ref, "conv", {"device_layout": layout})


def attention_case(
    b: int, heads: int, seq: int, dh: int, mask: bool = False, seed: int = 4
) -> Case:
    """softmax(Q K^T / sqrt(dh) [+ mask]) V over [b, heads, seq, dh] inputs;
    the mask ([b, 1, 1, seq], 0 or -10000) hides the last third of the keys."""
    rng = _rng(seed)
    shape = (b, heads, seq, dh)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    scale = np.array(1.0 / np.sqrt(dh), np.float32)
    nodes = [
        _node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        _node("MatMul", ["q", "kt"], ["s"]),
        _node("Mul", ["s", "scale"], ["ss"]),
    ]
    s = (_f16(q) @ np.swapaxes(_f16(k), -1, -2)) * float(scale)
    inits = {"scale": scale}
    if mask:
        m = np.zeros((b, 1, 1, seq), np.float32)
        m[..., seq - seq // 3 :] = -10000.0
        inits["mask"] = m
        nodes.append(_node("Add", ["ss", "mask"], ["sm"]))
        s = s + _f16(m)
    nodes += [
        _node("Softmax", ["sm" if mask else "ss"], ["p"], axis=-1),
        _node("MatMul", ["p", "v"], ["y"]),
    ]
    model = _graph(nodes, {"q": shape, "k": shape, "v": shape}, inits)
    e = np.exp(s - s.max(-1, keepdims=True))
    ref = (e / e.sum(-1, keepdims=True)) @ _f16(v)
    name = f"attention b{b} h{heads} s{seq} d{dh}{' mask' if mask else ''}"
    return Case(name, model, {"q": q, "k": k, "v": v}, ref, "attention")


def cases(quick: bool, dry: bool) -> list[Case]:
    if dry:
        return [
            matmul_case((40, 48), (48, 72)),
            gemm_case(33, 40, 50),
            conv_case((1, 16, 9, 9), 24, 3, pad=1, residual=True),
            attention_case(1, 2, 20, 16, mask=True),
        ]
    out = [
        matmul_case((128, 256), (256, 512)),
        matmul_case((100, 200), (200, 300)),  # no dim a tile multiple
        matmul_case((2, 77, 64), (64, 130)),  # batch folded into M
        matmul_case((1, 1000, 72), (72, 36)),  # K and N not multiples of 32
        gemm_case(256, 1000, 2048),
        gemm_case(50, 70, 90),
        bmm_case((8, 128, 64), (8, 64, 128), trans_b=False),
        bmm_case((2, 4, 128, 32), (2, 4, 128, 32), trans_b=True),
        bmm_case((3, 45, 19), (3, 19, 61), trans_b=False),
        conv_case((1, 64, 56, 56), 64, 1),
        conv_case((2, 64, 28, 28), 128, 3, pad=1, residual=True),
        conv_case((1, 32, 31, 29), 48, 3, stride=2, pad=1),
        conv_case((1, 3, 64, 64), 32, 7, stride=2, pad=3),
        conv_case((1, 64, 20, 20), 64, 3, pad=1, group=2),
        conv_case((1, 256, 14, 14), 1024, 1, residual=True),
        conv_case((1, 64, 28, 28), 96, 1, layout="flat"),
        conv_case((1, 30, 15, 17), 40, 1, layout="flat"),  # H*W odd: scalar loads
        conv_case((2, 32, 23, 23), 64, 3, stride=2, pad=1, residual=True, layout="flat"),
        conv_case((1, 48, 12, 12), 96, 3, pad=1, group=3, layout="flat"),
        conv_case((1, 18, 16, 16), 36, 3, pad=1),  # packed, Cg % 4 != 0
        attention_case(1, 4, 128, 64),
        attention_case(2, 2, 77, 32, mask=True),
        attention_case(1, 12, 128, 64, mask=True),
        attention_case(1, 2, 50, 30),  # head dim not a multiple of 4: scalar loads
        attention_case(2, 1, 40, 128),
    ]
    if quick:
        out = out[::2]
    return out


# -- running -----------------------------------------------------------------


def _session(model: Any, precision: str, coopmat: bool, layout: str = "nc4hw4"):  # type: ignore[no-untyped-def]
    import vknn

    os.environ["VKNN_COOPMAT"] = "1" if coopmat else "0"
    os.environ["VKNN_COOPMAT_CONV"] = "1" if coopmat else "0"  # convs: not the default
    cfg = vknn.Config(precision=precision, cache_file="off", profiling=True, device_layout=layout)
    return vknn.Session(
        model.SerializeToString() if hasattr(model, "SerializeToString") else str(model), cfg
    )


def _gpu_ms(sess: Any, feeds: dict[str, np.ndarray], runs: int) -> tuple[float, int]:
    """(median GPU ms of the run's dispatches summed, coopmat dispatches)."""
    rows = sess.profile(feeds, runs=runs)
    return sum(r.ms for r in rows), sum(1 for r in rows if "coopmat" in r.kernel)


def _compare(ref: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    a = np.asarray(ref, np.float64).ravel()
    b = np.asarray(out, np.float64).ravel()
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    cos = float(a @ b / denom) if denom else float(np.array_equal(a, b))
    rel = float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(a))))
    return cos, rel


def check_kernel(case: Case, runs: int) -> dict[str, Any]:
    row: dict[str, Any] = {"case": case.name, "kind": case.kind}
    try:
        layout = case.extra.get("device_layout", "nc4hw4")
        sess = _session(case.model, "low", True, layout)
        out = np.asarray(list(sess.run(case.feeds).values())[0])
        cos, rel = _compare(case.ref, out)
        ms, n_cm = _gpu_ms(sess, case.feeds, runs)
        sess.close()
        row.update(cosine=cos, rel_err=rel, coopmat_dispatches=n_cm, coopmat_ms=ms)
        row["finite"] = bool(np.isfinite(out).all())
        base = _session(case.model, "low", False, layout)
        row["scalar_ms"], _ = _gpu_ms(base, case.feeds, runs)
        base.close()
        row["speedup"] = row["scalar_ms"] / ms if ms > 0 else None
        row["selected"] = n_cm > 0
        row["ok"] = bool(row["finite"] and cos >= COS_TOL and rel <= REL_TOL)
    except Exception as e:  # noqa: BLE001 - reported per case, the others still run
        row.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000])
    return row


def check_model(name: str, runs: int, batch: int = 1, autotune: str = "off") -> dict[str, Any]:
    import bench_models
    from bench_models import build_model, model_feeds

    # Models with a symbolic batch dim (the torch exports) run at `batch`.
    bench_models.DIMS["batch"] = batch
    dims = dict(bench_models.DIMS)

    work = Path(os.environ.get("VKNN_BENCH_DIR", "/tmp/vknn_coopmat_check"))
    work.mkdir(parents=True, exist_ok=True)
    path = build_model(name, work)
    feeds = model_feeds(path)
    row: dict[str, Any] = {"model": name, "batch": batch, "autotune": autotune}
    outs: dict[str, np.ndarray] = {}
    # low-coopmat: the default at fp16 storage (products and attention on tensor
    # cores); low-coopmat-conv: convs on tensor cores too (VKNN_COOPMAT_CONV=1).
    for label, precision, cm in (("high", "high", False), ("low", "low", False),
                                 ("low-coopmat", "low", True),
                                 ("low-coopmat-conv", "low", True)):  # fmt: skip
        try:
            import vknn

            os.environ["VKNN_COOPMAT"] = "1" if cm else "0"
            os.environ["VKNN_COOPMAT_CONV"] = "1" if label.endswith("conv") else "0"
            cfg = vknn.Config(
                precision=precision, cache_file="off", dims=dims, profiling=True,
                autotune=autotune if precision == "low" else "off",
            )  # fmt: skip
            sess = vknn.Session(str(path), cfg)
            outs[label] = np.asarray(list(sess.run(feeds).values())[0])
            times = []
            for _ in range(3):
                sess.run(feeds)
            for _ in range(runs):
                t0 = time.perf_counter()
                sess.run(feeds)
                times.append((time.perf_counter() - t0) * 1e3)
            gpu, n_cm = _gpu_ms(sess, feeds, min(runs, 10))
            sess.close()
            row[label] = {
                "run_ms": statistics.median(times), "gpu_ms": gpu, "coopmat_dispatches": n_cm,
            }  # fmt: skip
        except Exception as e:  # noqa: BLE001
            row[label] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    if "high" in outs:
        for label in ("low", "low-coopmat"):
            if label in outs:
                cos, rel = _compare(outs["high"], outs[label])
                row[label].update(cosine_vs_high=cos, rel_err_vs_high=rel,
                                  finite=bool(np.isfinite(outs[label]).all()))  # fmt: skip
    if "low" in outs and "low-coopmat" in outs:
        # Tensor cores against the scalar kernels at the same storage precision.
        row["low-coopmat"]["cosine_vs_low"], _ = _compare(outs["low"], outs["low-coopmat"])
    # Tensor cores are judged against the scalar kernels at the same storage
    # precision; `low` vs `high` (fp16 storage itself) is reported, not judged
    # here (randomly weighted CNNs can overflow fp16 with or without coopmat).
    cm = row.get("low-coopmat", {})
    row["ok"] = bool(cm.get("cosine_vs_low", 0.0) >= MODEL_COS_TOL and cm.get("finite", False))
    return row


def device_info() -> dict[str, Any]:
    from bench_models import sm_clock

    from vknn.kernels import coopmat
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.context import shared_device

    device, _, why = shared_device()
    if device is None:
        return {"device": None, "why": why, "coopmat": False}
    os.environ["VKNN_COOPMAT"] = "1"
    t = from_caps(device.caps)
    return {
        "device": device.caps.name,
        "driver_version": device.caps.driver_version,
        "sm_clock": sm_clock(),
        "coopmat": coopmat.usable(t, "fp16"),
        "shapes": [list(s) for s in device.caps.cooperative_matrix_shapes],
    }


def markdown(kernels: list[dict[str, Any]], models: list[dict[str, Any]]) -> str:
    """The results as markdown tables (for docs/performance.md)."""
    lines = ["| case | coopmat | rel err | coopmat ms | scalar ms | speedup |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in kernels:
        if "error" in r:
            lines.append(f"| {r['case']} | error | | | | |")
            continue
        sp = f"{r['speedup']:.2f}x" if r.get("speedup") else ""
        lines.append(
            f"| {r['case']} | {'yes' if r['selected'] else 'no'} | {r['rel_err']:.1e} "
            f"| {r['coopmat_ms']:.3f} | {r['scalar_ms']:.3f} | {sp} |"
        )
    if models:
        lines += ["", "| model | batch | high ms (GPU) | low ms (GPU) | low+coopmat ms (GPU) "
                  "| coopmat dispatches | cos coopmat vs low | cos low vs high |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip

        def ms(d: dict[str, Any]) -> str:
            return f"{d['run_ms']:.3f} ({d['gpu_ms']:.3f})" if "run_ms" in d else "error"

        for r in models:
            h, lo, cm = r.get("high", {}), r.get("low", {}), r.get("low-coopmat", {})
            lines.append(
                f"| {r['model']} | {r['batch']} | {ms(h)} | {ms(lo)} | {ms(cm)} "
                f"| {cm.get('coopmat_dispatches', '')} | {cm.get('cosine_vs_low', 0):.6f} "
                f"| {lo.get('cosine_vs_high', 0):.6f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--require-coopmat", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--models", default=None, help="comma list (default resnet50,bert)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1, help="batch of models with a symbolic one")
    ap.add_argument("--autotune", default="off", help="off|fast|thorough for the low sessions")
    ap.add_argument(
        "--only", default="", help="run only cases whose name contains one of these (comma list)"
    )
    args = ap.parse_args(argv)
    info = device_info()
    print(f"device: {info.get('device')}  coopmat: {info['coopmat']}  {info.get('sm_clock', '')}")
    if args.require_coopmat and not info["coopmat"]:
        print("FAIL: the device has no usable VK_KHR_cooperative_matrix (16x16x16 f16->f32)")
        return 1
    if info.get("device") is None:
        print(f"no Vulkan device: {info.get('why')}")
        return 1
    runs = 3 if args.dry_run else (10 if args.quick else args.runs)
    kernels = []
    for case in cases(args.quick, args.dry_run):
        if args.only and not any(w in case.name for w in args.only.split(",")):
            continue
        row = check_kernel(case, runs)
        kernels.append(row)
        if "error" in row:
            print(f"  ERROR {case.name}: {row['error']}")
            continue
        status = "ok" if row["ok"] else "FAIL"
        sel = "coopmat" if row["selected"] else "not selected"
        print(
            f"  {status:4} {case.name:55} {sel:12} cos {row['cosine']:.6f} rel {row['rel_err']:.2e}"
            f"  {row['coopmat_ms']:.3f} ms vs scalar {row['scalar_ms']:.3f} ms", flush=True,
        )  # fmt: skip
    names = args.models if args.models is not None else ("" if args.dry_run else "resnet50,bert")
    models = []
    for name in [n for n in names.split(",") if n]:
        row = check_model(name, runs, args.batch, args.autotune)
        models.append(row)
        print(f"  model {name}: {json.dumps(row)}", flush=True)
    bad = [r for r in kernels if not r.get("ok")]
    if info["coopmat"]:
        bad += [r for r in kernels if not r.get("selected", False)]
        bad += [r for r in models if not r.get("ok")]
    result = {"info": info, "kernels": kernels, "models": models, "failures": len(bad)}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "coopmat_check.json").write_text(json.dumps(result, indent=1))
    table = markdown(kernels, models)
    print(table)
    if args.out:
        (args.out / "coopmat_check.md").write_text(table + "\n")
    print(f"{len(kernels)} kernel cases, {len(models)} models, {len(bad)} failing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
