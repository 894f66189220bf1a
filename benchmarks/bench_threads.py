"""Throughput of one vknn Session driven by 1 vs N threads (issue 14 item 1):
run() is thread-safe and concurrent calls overlap on the session's pool of
execution contexts (`Config.contexts`: arena, staging, command buffers, fence
each), so host work (uploads, readback, numpy) of one run hides behind the
GPU work of another.

    python benchmarks/bench_threads.py [--models squeezenet,resnet50] [--threads 1,2,4]
                                       [--runs 200] [--precision high] [--json out.json]

Per model and thread count: inferences per second over `--runs` runs split
among the threads (median of 3 repeats), with `contexts` = the thread count,
and the SM clock where nvidia-smi exists. Every output is checked against a
single-threaded run of the same input (exact equality: the same program).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_models import build_model, sm_clock  # noqa: E402


def measure(path: Path, threads: int, runs: int, precision: str) -> dict:
    import vknn

    cfg = vknn.Config(precision=precision, contexts=threads, allow_cpu_fallback=False)
    sess = vknn.Session(str(path), cfg)
    feeds = [sess.random_inputs(seed) for seed in range(8)]
    want = [sess.run(f) for f in feeds]

    def one(i: int) -> bool:
        out = sess.run(feeds[i % len(feeds)])
        return all(np.array_equal(out[k], want[i % len(feeds)][k]) for k in out)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(4 * threads)))  # every context made and warm
        rates = []
        for _ in range(3):
            t0 = time.perf_counter()
            ok = list(pool.map(one, range(runs)))
            rates.append(runs / (time.perf_counter() - t0))
            if not all(ok):
                raise SystemExit(
                    f"{path.name}: {ok.count(False)} wrong outputs at {threads} threads"
                )
    sess.close()
    return {
        "threads": threads,
        "inferences_per_s": statistics.median(rates),
        "sm_clock": sm_clock(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="squeezenet,resnet50")
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--precision", default="high")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            path = build_model(name, Path(tmp))
            base = None
            for t in (int(x) for x in args.threads.split(",")):
                r = {"model": name, **measure(path, t, args.runs, args.precision)}
                base = base or r["inferences_per_s"]
                r["speedup"] = r["inferences_per_s"] / base
                rows.append(r)
                print(
                    f"{name:12s} threads {t:2d}  {r['inferences_per_s']:9.1f} inf/s  "
                    f"x{r['speedup']:.2f}  {r['sm_clock']}",
                    flush=True,
                )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
