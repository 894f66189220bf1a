"""Autotune benchmark: vknn with `Config.autotune` off vs fast (and thorough
if asked), per model, in one run, on the Vulkan device found.

    python benchmarks/bench_autotune.py [--models resnet50,mobilenet_v2,resnet18,squeezenet,bert]
                                        [--modes off,fast] [--thorough] [--precision high]
                                        [--runs 50] [--warmup-s 1] [--json out.json]

Each (model, mode) runs in a fresh subprocess (no pipeline or table shared
between modes): session creation (which includes the tuning), the tuning
report (seconds, kernels measured, candidates timed, kernels whose config
changed from the heuristic's), then, as bench_models.py does, the GPU kept
busy for `--warmup-s` seconds with large matrix products and then the model,
and the median / p10 / p90 of `--runs` timed inferences (use >= 20; the SM
clock, when nvidia-smi exists, is logged per row). Outputs are compared with
the `off` run (cosine, max abs difference). `--json` also keeps each mode's
autotune table and per-kernel timings. Models are bench_models.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import (  # noqa: E402
    DIMS,
    build_model,
    cosine,
    heavy_gpu_work,
    model_feeds,
    sm_clock,
)

MODES = ("off", "fast", "thorough")


def worker(path: Path, mode: str, precision: str, runs: int, warmup_s: float) -> dict:
    import numpy as np

    import vknn
    from vknn.tuning import AutotuneReport

    feeds = model_feeds(path)
    t0 = time.perf_counter()
    # No model cache: every mode compiles (and tunes) from scratch.
    config = vknn.Config(precision=precision, dims=DIMS, autotune=mode, cache_file="off")
    sess = vknn.Session(str(path), config)
    create_s = time.perf_counter() - t0
    report = sess.autotune_report or AutotuneReport(mode=mode)
    out = list(sess.run(feeds).values())[0]
    heavy_gpu_work(warmup_s)
    end = time.perf_counter() + warmup_s
    while time.perf_counter() < end:
        sess.run(feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(feeds)
        times.append(time.perf_counter() - t)
    clock = sm_clock()
    times.sort()
    np.save(path.with_name(f"{path.stem}.autotune-{mode}.out.npy"), np.asarray(out, np.float32))
    return {
        "median_ms": statistics.median(times) * 1e3,
        "p10_ms": times[len(times) // 10] * 1e3,
        "p90_ms": times[(len(times) * 9) // 10] * 1e3,
        "runs": runs,
        "create_s": create_s,
        "tune_s": report.seconds,
        "kernels": report.kernels,
        "candidates": report.candidates,
        "changed": report.changed,
        "clock_source": report.clock,
        "sm_clock": clock,
        "cpu_nodes": len(sess.fallback_reasons()),
        "table": sess.autotune_table,
        "kernel_results": [
            {
                "label": r.label,
                "key": r.key,
                "default": r.candidates[0],
                "best": r.best,
                "speedup": r.speedup,
                "times_us": [t / 1e3 for t in r.times_ns],
            }
            for r in report.results
        ],
    }


def _row(name: str, mode: str, r: dict, base: dict | None) -> str:
    if "error" in r:
        return f"{name:14s} {mode:9s} error: {r['error']}"
    gain = f"{base['median_ms'] / r['median_ms']:.3f}x" if base and "error" not in base else ""
    tune = f"{r['tune_s']:.1f}" if mode != "off" else "-"
    return (
        f"{name:14s} {mode:9s} {r['median_ms']:9.3f} {r['p10_ms']:8.3f} {r['p90_ms']:8.3f} "
        f"{gain:>8s} {tune:>7s} {r['kernels']:7d} {r['candidates']:6d} {r['changed']:7d} "
        f"{r.get('cosine_vs_off', float('nan')):9.6f} {r.get('maxdiff_vs_off', float('nan')):9.2e} "
        f"{r['sm_clock']:>10s}"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,mobilenet_v2,resnet18,squeezenet,bert")
    p.add_argument("--modes", default="off,fast", help="comma-separated of off, fast, thorough")
    p.add_argument("--thorough", action="store_true", help="add the thorough mode")
    p.add_argument("--precision", default="high", choices=["high", "normal", "low"])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup-s", type=float, default=1.0)
    p.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "vknn-bench"
    )
    p.add_argument("--json", type=Path)
    p.add_argument("--worker", nargs=2, metavar=("MODE", "MODEL"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        mode, model = args.worker
        result = worker(Path(model), mode, args.precision, args.runs, args.warmup_s)
        print(json.dumps(result))
        return 0

    import numpy as np

    modes = [m for m in args.modes.split(",") if m]
    if args.thorough and "thorough" not in modes:
        modes.append("thorough")
    bad = [m for m in modes if m not in MODES]
    if bad:
        p.error(f"unknown mode(s) {bad}; known: {list(MODES)}")
    if "off" in modes:  # the baseline first
        modes.remove("off")
        modes.insert(0, "off")
    if args.runs < 20:
        print(f"note: --runs {args.runs} < 20: medians are indicative only", file=sys.stderr)
    args.work.mkdir(parents=True, exist_ok=True)
    print(
        f"\nvknn {args.precision}: median latency of {args.runs} runs (ms) per autotune mode; "
        "tune s = measuring time at first plan"
    )
    print(
        f"{'model':14s} {'mode':9s} {'median':>9s} {'p10':>8s} {'p90':>8s} {'vs off':>8s} "
        f"{'tune s':>7s} {'kernels':>7s} {'cands':>6s} {'changed':>7s} {'cos/off':>9s} "
        f"{'maxdiff':>9s} {'clock':>10s}",
        flush=True,
    )
    results: dict[str, dict[str, dict]] = {}
    for name in args.models.split(","):
        path = build_model(name, args.work)
        results[name] = per = {}
        for mode in modes:
            cmd = [
                sys.executable, __file__, "--worker", mode, str(path), "--runs", str(args.runs),
                "--warmup-s", str(args.warmup_s), "--precision", args.precision,
            ]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                err = (proc.stderr.strip().splitlines() or ["?"])[-1]
                per[mode] = {"error": err[:200]}
            else:
                per[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
        ref = path.with_name(f"{path.stem}.autotune-off.out.npy")
        if ref.exists():
            base = np.load(ref)
            for mode, r in per.items():
                out = path.with_name(f"{path.stem}.autotune-{mode}.out.npy")
                if "error" not in r and out.exists():
                    got = np.load(out)
                    r["cosine_vs_off"] = cosine(base, got)
                    same = got.shape == base.shape
                    r["maxdiff_vs_off"] = float(np.max(np.abs(got - base))) if same else np.nan
        for mode, r in per.items():
            print(_row(name, mode, r, per.get("off")), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    print(
        "vs off: median(off) / median(mode) (> 1: faster); kernels: distinct kernel keys "
        "measured; cands: candidate configs timed; changed: kernels whose winner is not "
        "the heuristic's config"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
