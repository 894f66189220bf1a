"""Per-dispatch GPU profile of one benchmark model (timestamp queries).

    python benchmarks/profile_model.py bert [--precision high] [--top 15] [--runs 20]

Prints the sorted per-dispatch GPU times (op, shape, kernel, share), the
dispatch and barrier counts, the summed GPU time and the host-side median
latency of `Session.run`, so launch/barrier overhead shows as the gap.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    from bench_models import DIMS, build_model, heavy_gpu_work, model_feeds, sm_clock

    import vknn
    from vknn.session import format_profile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--precision", default="high")
    p.add_argument("--fastmath", default="auto")
    p.add_argument("--device-layout", default="nc4hw4", choices=["nc4hw4", "flat"])
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--work", type=Path, default=Path("/tmp/vknn-bench"))
    p.add_argument(
        "--matmul-splitk",
        choices=["two-pass", "single"],
        help="override kernels.matmul.SPLITK_SINGLE_DISPATCH (default: the module's)",
    )
    args = p.parse_args()
    if args.matmul_splitk:
        from vknn.kernels import matmul

        matmul.SPLITK_SINGLE_DISPATCH = args.matmul_splitk == "single"
    args.work.mkdir(parents=True, exist_ok=True)
    path = build_model(args.model, args.work)
    feeds = model_feeds(path)
    config = vknn.Config(
        precision=args.precision,
        dims=DIMS,
        fastmath=args.fastmath,
        cache_file="off",
        device_layout=args.device_layout,
    )
    timed = vknn.Session(str(path), config)
    heavy_gpu_work(1.0)
    for _ in range(20):
        timed.run(feeds)
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        timed.run(feeds)
        times.append(time.perf_counter() - t)
    clock = sm_clock()
    config.profiling = True
    sess = vknn.Session(str(path), config)
    rows = sess.profile(feeds, runs=args.runs)
    stats = [e.stats for b in sess._buckets.values() for e in b.executors.values()]
    print(
        f"{args.model} precision={args.precision} fastmath={args.fastmath} "
        f"device_layout={args.device_layout}"
    )
    print(format_profile(rows, top=args.top))
    print(
        f"dispatches {sum(s.dispatches for s in stats)}, barriers {sum(s.barriers for s in stats)}"
        f", run() median {statistics.median(times) * 1e3:.3f} ms (no timestamps) at {clock}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
