"""Model benchmark: vknn (Vulkan, high and low precision) next to onnxruntime
(CPU) and ncnn's Vulkan backend, in one run, on the Vulkan device found.

    python benchmarks/bench_models.py [--models resnet50,mobilenet_v2,bert] [--runs 50]
                                      [--engines vknn-high,vknn-low,ncnn,ort] [--json out.json]
                                      [--fastmath auto|on|off] [--autotune off|fast|thorough]

An engine `vknn-<precision>[-flat]` runs vknn at that precision; `-flat`
stores every device tensor row-major (Config.device_layout="flat") instead of
the default NC4HW4 for CNN tensors, for a side-by-side in one run.

Per engine and model, in a fresh subprocess (so peak RSS is the engine's own):
first-run time (session creation + first inference), the median, p10 and p90
of `--runs` timed inferences after a warm-up, and peak RSS. Before each timed
loop the GPU runs the model for `--warmup-s` seconds, so the clock governor
is at speed (large matrix products through vknn's Vulkan device, then the
model itself), and the SM clock (nvidia-smi, when present) is logged beside
every figure. Every engine's first output is compared with onnxruntime
(cosine). Models are generated here (seeded random weights), not carried:
ResNet-50 and SqueezeNet from the onnx wheel's light models, ResNet-18,
MobileNetV2 and a BERT-mini encoder (4 x 256, seq 128) from tests/models.
ncnn models are converted from the same ONNX files with pnnx.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = {
    "resnet50": ("light", "light_resnet50.onnx"),
    "squeezenet": ("light", "light_squeezenet.onnx"),
    "resnet18": ("torch", "resnet18"),
    "mobilenet_v2": ("torch", "mobilenet_v2"),
    "bert": ("torch", "bert_encoder"),
}
DIMS = {"batch": 1, "seq": 128}


def sm_clock() -> str:
    if shutil.which("nvidia-smi") is None:
        return ""
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
    )
    return (
        out.stdout.strip().splitlines()[0] + " MHz"
        if out.returncode == 0 and out.stdout.strip()
        else ""
    )


def build_model(name: str, work: Path) -> Path:
    import onnx

    from tests.unit.models import light_model, torch_model

    path = work / f"{name}.onnx"
    if not path.exists():
        kind, src = MODELS[name]
        model = light_model(src) if kind == "light" else torch_model(src)
        onnx.save(model, str(path))
    return path


def model_feeds(path: Path):  # type: ignore[no-untyped-def]
    import onnx

    from tests.unit.models import model_inputs

    return model_inputs(onnx.load(str(path), load_external_data=False), DIMS)


# -- engines (each runs inside a worker subprocess) ---------------------------


def engine_vknn(path: Path, feeds, name: str):  # type: ignore[no-untyped-def]
    import vknn
    from vknn.kernels.spirv import fastmath_enabled
    from vknn.runtime.vulkan.context import shared_device

    # --fastmath reaches the worker subprocesses through the environment.
    fastmath = os.environ.get("VKNN_BENCH_FASTMATH", "auto")
    autotune = os.environ.get("VKNN_BENCH_AUTOTUNE", "off")  # likewise --autotune
    precision, _, layout = name.partition("-")
    config = vknn.Config(
        precision=precision,
        dims=DIMS,
        fastmath=fastmath,
        autotune=autotune,
        device_layout=layout or "nc4hw4",
    )
    sess = vknn.Session(str(path), config)
    fallbacks = len(sess.fallback_reasons())
    device = shared_device()[0]
    effective = device is not None and fastmath_enabled(fastmath, device.caps)

    def run():  # type: ignore[no-untyped-def]
        return list(sess.run(feeds).values())[0]

    return run, {"cpu_nodes": fallbacks, "fastmath": f"{fastmath}:{'on' if effective else 'off'}"}


def engine_ort(path: Path, feeds):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def run():  # type: ignore[no-untyped-def]
        return sess.run(None, feeds)[0]

    return run, {}


def engine_ncnn(path: Path, feeds):  # type: ignore[no-untyped-def]
    import ncnn
    import numpy as np

    param = path.with_suffix(".ncnn.param")
    if not param.exists():
        shapes = ",".join(
            "[" + ",".join(str(d) for d in v.shape) + "]" + ("i64" if v.dtype == np.int64 else "")
            for v in feeds.values()
        )
        subprocess.run(
            ["pnnx", str(path), f"inputshape={shapes}"],
            cwd=path.parent,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.load_param(str(param))
    net.load_model(str(path.with_suffix(".ncnn.bin")))
    mats = []
    for v in feeds.values():
        arr = v.astype(np.int32) if v.dtype == np.int64 else v
        mats.append(ncnn.Mat(np.ascontiguousarray(arr[0] if arr.shape[0] == 1 else arr)))

    def run():  # type: ignore[no-untyped-def]
        ex = net.create_extractor()
        for i, m in enumerate(mats):
            ex.input(f"in{i}", m)
        _, out = ex.extract("out0")
        return np.array(out)

    return run, {}


def heavy_gpu_work(seconds: float) -> None:
    """Keep the GPU busy with large matrix products so its clock governor is at
    speed when the timed loop starts (a batch-1 model alone leaves it idling)."""
    if seconds <= 0:
        return
    import numpy as np
    from onnx import TensorProto, helper

    import vknn

    n = 2048
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "heavy",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = vknn.Session(model)
    a = np.ones((n, n), np.float32)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sess.run({"a": a, "b": a})
    sess.close()


def worker(engine: str, path: Path, runs: int, warmup_s: float) -> dict:
    import numpy as np

    feeds = model_feeds(path)
    t0 = time.perf_counter()
    if engine.startswith("vknn-"):
        run, extra = engine_vknn(path, feeds, engine.split("-", 1)[1])
    elif engine == "ort":
        run, extra = engine_ort(path, feeds)
    elif engine == "ncnn":
        run, extra = engine_ncnn(path, feeds)
    else:
        raise SystemExit(f"unknown engine {engine}")
    out = run()
    first = time.perf_counter() - t0
    if engine != "ort":
        heavy_gpu_work(warmup_s)
    end = time.perf_counter() + warmup_s
    while time.perf_counter() < end:  # heavy work first: the clock governor ramps up
        run()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    clock = sm_clock()
    times.sort()
    result = {
        "first_ms": first * 1e3,
        "median_ms": statistics.median(times) * 1e3,
        "p10_ms": times[len(times) // 10] * 1e3,
        "p90_ms": times[(len(times) * 9) // 10] * 1e3,
        "runs": runs,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sm_clock": clock,
        **extra,
    }
    np.save(path.with_name(f"{path.stem}.{engine}.out.npy"), np.asarray(out, dtype=np.float32))
    return result


def cosine(a, b) -> float:  # type: ignore[no-untyped-def]
    import numpy as np

    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.size != b.size:
        return float("nan")
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d else float("nan")


def _print_rows(name: str, per: dict[str, dict]) -> None:
    base_ncnn = per.get("ncnn", {}).get("median_ms")
    base_ort = per.get("ort", {}).get("median_ms")
    for engine, r in per.items():
        if "error" in r:
            print(f"{name:14s} {engine:10s} error: {r['error']}")
            continue
        vs_ncnn = f"{base_ncnn / r['median_ms']:.2f}" if base_ncnn else ""
        vs_ort = f"{base_ort / r['median_ms']:.2f}" if base_ort else ""
        print(
            f"{name:14s} {engine:10s} {r['median_ms']:8.3f} {r['p10_ms']:7.3f} "
            f"{r['p90_ms']:7.3f} {r['first_ms']:8.0f} {r['peak_rss_mb']:7.0f} "
            f"{r['sm_clock']:>10s} {r.get('cosine_vs_ort', float('nan')):9.6f} "
            f"{vs_ncnn:>7s} {vs_ort:>7s}",
            flush=True,
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,mobilenet_v2,resnet18,squeezenet,bert")
    p.add_argument("--engines", default="vknn-high,vknn-low,ncnn,ort")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup-s", type=float, default=1.0)
    p.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "vknn-bench"
    )
    p.add_argument("--json", type=Path)
    p.add_argument(
        "--fastmath",
        choices=["auto", "on", "off"],
        help="vknn engines: Config.fastmath (FPFastMathDefault kernels; default auto)",
    )
    p.add_argument(
        "--autotune",
        choices=["off", "fast", "thorough"],
        help="vknn engines: Config.autotune (measure kernel configs at first plan; default off)",
    )
    p.add_argument("--worker", nargs=2, metavar=("ENGINE", "MODEL"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.fastmath:
        os.environ["VKNN_BENCH_FASTMATH"] = args.fastmath
    if args.autotune:
        os.environ["VKNN_BENCH_AUTOTUNE"] = args.autotune
    if args.worker:
        print(json.dumps(worker(args.worker[0], Path(args.worker[1]), args.runs, args.warmup_s)))
        return 0

    import numpy as np

    args.work.mkdir(parents=True, exist_ok=True)
    engines = args.engines.split(",")
    results: dict[str, dict[str, dict]] = {}
    print(
        f"\nmedian latency of {args.runs} runs (ms), first run (ms), peak RSS (MB); "
        "SM clock logged per row"
    )
    header = (
        f"{'model':14s} {'engine':10s} {'median':>8s} {'p10':>7s} {'p90':>7s} {'first':>8s} "
        f"{'rss':>7s} {'clock':>10s} {'cos/ort':>9s} {'x ncnn':>7s} {'x ort':>7s}"
    )
    print(header, flush=True)
    for name in args.models.split(","):
        path = build_model(name, args.work)
        results[name] = per = {}
        for engine in engines:
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                engine,
                str(path),
                "--runs",
                str(args.runs),
                "--warmup-s",
                str(args.warmup_s),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                err = (proc.stderr.strip().splitlines() or ["?"])[-1]
                per[engine] = {"error": err[:200]}
            else:
                per[engine] = json.loads(proc.stdout.strip().splitlines()[-1])
        ref_path = path.with_name(f"{path.stem}.ort.out.npy")
        if ref_path.exists():
            ref = np.load(ref_path)
            for engine, r in per.items():
                out = path.with_name(f"{path.stem}.{engine}.out.npy")
                if "error" not in r and out.exists():
                    r["cosine_vs_ort"] = cosine(ref, np.load(out))
        _print_rows(name, per)  # as each model finishes: partial runs keep their rows
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    print(
        "x ncnn / x ort: speed-up of the row over ncnn-vulkan / onnxruntime-cpu (higher is faster)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
