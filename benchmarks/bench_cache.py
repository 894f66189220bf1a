"""Session creation with and without the model cache, per model.

    python benchmarks/bench_cache.py [--models resnet50,mobilenet_v2,resnet18,squeezenet,bert]
                                     [--precision high] [--repeats 3]

For each model, in fresh subprocesses (so nothing is warm in the process):

- cold: no model cache file and an empty SPIR-V disk cache (a new
  VKNN_CACHE_DIR): import, compile passes, shader compilation, pipelines,
  weight upload, first inference;
- warm: the model cache file the cold run wrote is present (SPIR-V disk
  cache emptied again, so the SPIR-V comes from the model cache only);
- vxm first: a `.vxm` compiled beforehand (`vknn compile -o`) is opened
  instead of the ONNX file, the user cache emptied: its kernels are checked
  once by spirv-val, as at a first start on a new machine;
- vxm warm: the same again, the record of validated kernels kept.

Reported: the median over `--repeats` of session creation and of session
creation + first inference, the speed-up, the cache file's size, and whether
the first outputs of cold and warm sessions are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def worker(model: Path, cache: Path, precision: str) -> dict:
    import numpy as np
    from bench_models import DIMS, model_feeds

    # a .vxm's inputs are those of the ONNX file it was compiled from
    feeds = model_feeds(model if model.suffix == ".onnx" else Path(os.environ["VKNN_BENCH_ONNX"]))
    t0 = time.perf_counter()
    import vknn

    if model.suffix == ".vxm":  # a compiled model: no compiler, no model cache
        sess = vknn.Session(str(model), vknn.Config(precision=precision))
    else:
        sess = vknn.Session(
            str(model), vknn.Config(precision=precision, dims=DIMS, cache_file=str(cache))
        )
    created = time.perf_counter() - t0
    out = list(sess.run(feeds).values())[0]
    first = time.perf_counter() - t0
    sess.close()
    np.save(str(cache) + f".out{os.getpid()}.npy", out)
    return {"create_s": created, "first_s": first, "out": str(cache) + f".out{os.getpid()}.npy"}


def _one(model: Path, cache: Path, precision: str, user_dir: Path, clear: bool = True) -> dict:
    # Empty the SPIR-V disk cache but keep the per-user secret: the model
    # cache is authenticated with it, and a new secret would discard it.
    for sub in user_dir.glob("*") if clear else ():
        if sub.name != "secret":
            shutil.rmtree(sub, ignore_errors=True) if sub.is_dir() else sub.unlink()
    env = {**os.environ, "VKNN_CACHE_DIR": str(user_dir)}
    cmd = [sys.executable, __file__, "--worker", str(model), str(cache), "--precision", precision]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"worker failed for {model.name}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,mobilenet_v2,resnet18,squeezenet,bert")
    p.add_argument("--precision", default="high")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "vknn-bench"
    )
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(Path(args.worker[0]), Path(args.worker[1]), args.precision)))
        return 0

    import numpy as np
    from bench_models import DIMS, build_model

    args.work.mkdir(parents=True, exist_ok=True)
    print(f"session creation (s), median of {args.repeats}, precision={args.precision}")
    print(
        f"{'model':14s} {'cold create':>11s} {'warm create':>11s} {'speed-up':>8s} "
        f"{'cold+run':>9s} {'warm+run':>9s} {'vxm first':>9s} {'vxm warm':>8s} "
        f"{'cache MB':>8s} {'same out':>8s}"
    )
    for name in args.models.split(","):
        model = build_model(name, args.work)
        tmp = Path(tempfile.mkdtemp(prefix="vknn-cache-bench-"))
        cache, spirv = tmp / f"{name}.vkcache", tmp / "user"
        spirv.mkdir()
        vxm = tmp / f"{name}.vxm"
        os.environ["VKNN_BENCH_ONNX"] = str(model)
        dims = ",".join(f"{k}={v}" for k, v in DIMS.items())
        subprocess.run(
            [sys.executable, "-m", "vknn.tools.cli", "compile", str(model), "--dims", dims,
             "--precision", args.precision, "-o", str(vxm)],
            check=True, capture_output=True,
        )  # fmt: skip
        cold, warm, compiled, again = [], [], [], []
        for _ in range(args.repeats):
            cache.unlink(missing_ok=True)
            cold.append(_one(model, cache, args.precision, spirv))
            warm.append(_one(model, cache, args.precision, spirv))
            compiled.append(_one(vxm, cache, args.precision, spirv))
            again.append(_one(vxm, cache, args.precision, spirv, clear=False))
        same = all(
            np.array_equal(np.load(c["out"]), np.load(w["out"]))
            and np.array_equal(np.load(c["out"]), np.load(x["out"]))
            for c, w, x in zip(cold, warm, compiled, strict=True)
        )

        def med(rows: list[dict], key: str) -> float:
            return statistics.median(r[key] for r in rows)

        cc, wc = med(cold, "create_s"), med(warm, "create_s")
        print(
            f"{name:14s} {cc:11.3f} {wc:11.3f} {cc / wc:7.1f}x "
            f"{med(cold, 'first_s'):9.3f} {med(warm, 'first_s'):9.3f} "
            f"{med(compiled, 'create_s'):9.3f} {med(again, 'create_s'):8.3f} "
            f"{cache.stat().st_size / 1e6:8.1f} {'yes' if same else 'NO':>8s}",
            flush=True,
        )
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
