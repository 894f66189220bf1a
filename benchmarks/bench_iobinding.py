"""Device-resident inputs and outputs (io-binding) vs host arrays, at batch N
(issue 16 item 1): what skipping the host copies buys per run.

    python benchmarks/bench_iobinding.py [--models resnet18] [--batch 64]
                                         [--runs 50] [--precision high] [--json out.json]

Per model, the median ms per run of three ways to run the same session:
`host` (sess.run with numpy arrays: upload and readback every run),
`device-in` (the input an OrtValue on "vulkan", uploaded once; output read
back), `device` (input and output OrtValues on "vulkan": nothing crosses the
host). Outputs of the three are checked equal (the same program). Prints the
SM clock where nvidia-smi exists.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_models import build_model, sm_clock  # noqa: E402


def _median_ms(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(path: Path, batch: int, runs: int, precision: str) -> dict:
    import vknn

    so = vknn.SessionOptions()
    so.add_free_dimension_override_by_name("batch", batch)
    opts = {"precision": precision, "cache_file": "off"}
    sess = vknn.InferenceSession(str(path), so, providers=[("VulkanExecutionProvider", opts)])
    (inp,) = sess.get_inputs()
    out_name = sess.get_outputs()[0].name
    shape = sess._session.bucket_inputs[inp.name]
    if shape[0] != batch:
        raise SystemExit(f"{path.stem}: its input has a fixed batch of {shape[0]}, not {batch}")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want = sess.run([out_name], {inp.name: x})[0]

    xv = vknn.OrtValue.ortvalue_from_numpy(x, "vulkan", 0)
    yv = vknn.OrtValue.ortvalue_from_shape_and_type(want.shape, want.dtype, "vulkan", 0)
    device_in = sess.io_binding()
    device_in.bind_ortvalue_input(inp.name, xv)
    device_in.bind_output(out_name)
    device = sess.io_binding()
    device.bind_ortvalue_input(inp.name, xv)
    device.bind_ortvalue_output(out_name, yv)

    row = {
        "model": path.stem,
        "batch": batch,
        "precision": precision,
        "input_mb": x.nbytes / 1e6,
        "output_mb": want.nbytes / 1e6,
        "host_ms": _median_ms(lambda: sess.run([out_name], {inp.name: x}), runs),
        "device_in_ms": _median_ms(lambda: sess.run_with_iobinding(device_in), runs),
        "device_ms": _median_ms(lambda: sess.run_with_iobinding(device), runs),
        "sm_clock": sm_clock(),
    }
    if not np.array_equal(device_in.copy_outputs_to_cpu()[0], want):
        raise SystemExit(f"{path.stem}: device-in output differs from the host run")
    if not np.array_equal(yv.numpy(), want):
        raise SystemExit(f"{path.stem}: device output differs from the host run")
    row["speedup"] = row["host_ms"] / row["device_ms"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="resnet18")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--precision", default="high")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            r = measure(build_model(name, Path(tmp)), args.batch, args.runs, args.precision)
            rows.append(r)
            print(
                f"{name:12s} b{r['batch']} {r['precision']:6s} in {r['input_mb']:.1f} MB  "
                f"host {r['host_ms']:8.2f} ms  device-in {r['device_in_ms']:8.2f} ms  "
                f"device {r['device_ms']:8.2f} ms  x{r['speedup']:.2f}  {r['sm_clock']}",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
