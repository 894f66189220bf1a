"""Throughput at batch N: vknn next to PyTorch (CUDA) on the same GPU, one run.

    python benchmarks/bench_batch.py [--models resnet50,bert_base] [--batch 64]
        [--bert-batch 8] [--seq 128] [--engines vknn-high,vknn-low,torch-fp16,torch-tf32]
        [--runs 30] [--warmup-s 2] [--json out.json]

Models are built here with random weights (no downloads): torchvision's
ResNet-50 and a BERT-base encoder (transformers' BertModel from its default
config, eager attention), exported with torch.onnx.export (TorchScript
exporter, opset 17, dynamic batch). vknn runs the ONNX file; PyTorch runs
the same module (fp16 = half weights, channels-last for CNNs; tf32 = fp32
with TF32 matmuls/convs), replayed as a CUDA graph (eagerly where capture
fails, as for transformers' BERT) with the input already on the GPU.
vknn's figure includes the host->device upload of the input and the
readback of the output (Session.run with numpy).
Each engine's output is compared (cosine) with PyTorch fp32. The SM clock is
read with nvidia-smi right after each timed loop. Needs torch (+ torchvision,
transformers) with CUDA: meant for the lent H200 (`. benchmarks/h200_setup.sh`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_models import cosine, sm_clock  # noqa: E402  (one clock reader, one cosine)


def build(name: str, batch: int, seq: int, work: Path):  # type: ignore[no-untyped-def]
    """(torch module, example inputs (cpu), onnx path, dims for vknn)."""
    import torch

    torch.manual_seed(0)
    path = work / f"{name}.onnx"
    if name == "resnet50":
        import torchvision

        module = torchvision.models.resnet50(weights=None).eval()
        inputs = (torch.randn(batch, 3, 224, 224),)
        names, dyn = ["input"], {"input": {0: "batch"}}
        dims = {"batch": batch}
    elif name == "bert_base":
        from transformers import BertConfig, BertModel

        cfg = BertConfig(attn_implementation="eager")
        bert = BertModel(cfg, add_pooling_layer=False).eval()

        class Encoder(torch.nn.Module):  # positional ids in, hidden states out
            def __init__(self) -> None:
                super().__init__()
                self.bert = bert

            def forward(self, ids: torch.Tensor) -> torch.Tensor:
                return self.bert(input_ids=ids).last_hidden_state

        module = Encoder().eval()
        ids = torch.randint(0, cfg.vocab_size, (batch, seq))
        inputs = (ids,)
        names, dyn = ["input_ids"], {"input_ids": {0: "batch", 1: "seq"}}
        dims = {"batch": batch, "seq": seq}
    else:
        raise SystemExit(f"unknown model {name}")
    if not path.exists():
        torch.onnx.export(
            module,
            inputs,
            str(path),
            input_names=names,
            output_names=["out"],
            dynamic_axes=dyn,
            opset_version=17,
            dynamo=False,
        )
    return module, inputs, path, dims


def torch_engine(module, inputs, mode: str) -> Callable[[], np.ndarray]:  # type: ignore[no-untyped-def]
    import copy

    import torch

    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.benchmark = True
    m = copy.deepcopy(module).cuda()
    xs = [x.cuda() for x in inputs]
    if mode == "fp16":
        m = m.half()
        xs = [x.half() if x.is_floating_point() else x for x in xs]
    if xs[0].dim() == 4:
        m = m.to(memory_format=torch.channels_last)
        xs[0] = xs[0].contiguous(memory_format=torch.channels_last)

    def fwd():  # type: ignore[no-untyped-def]
        out = m(*xs)
        return out if isinstance(out, torch.Tensor) else out[0]

    with torch.inference_mode():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fwd()
        torch.cuda.current_stream().wait_stream(s)
        graph: torch.cuda.CUDAGraph | None = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                static_out = fwd()
        except RuntimeError:  # e.g. transformers' masks copy from the host: run eagerly
            graph = None
            static_out = fwd()

    def run() -> np.ndarray:
        nonlocal static_out
        if graph is not None:
            graph.replay()
        else:
            with torch.inference_mode():
                static_out = fwd()
        torch.cuda.synchronize()
        return static_out

    def result() -> np.ndarray:
        return static_out.float().cpu().numpy()

    run.result = result  # type: ignore[attr-defined]
    return run


def vknn_engine(path: Path, inputs, dims: dict[str, int], precision: str):  # type: ignore[no-untyped-def]
    import vknn

    sess = vknn.Session(str(path), vknn.Config(precision=precision, dims=dims))
    feeds = {sess.inputs[0].name: inputs[0].numpy()}
    cpu = len(sess.fallback_reasons())
    holder: dict[str, np.ndarray] = {}

    def run():  # type: ignore[no-untyped-def]
        holder["out"] = next(iter(sess.run(feeds).values()))
        return holder["out"]

    run.result = lambda: np.asarray(holder["out"], np.float32)  # type: ignore[attr-defined]
    run.cpu_nodes = cpu  # type: ignore[attr-defined]
    return run


def timed(run, runs: int, warmup_s: float) -> dict:  # type: ignore[no-untyped-def]
    end = time.perf_counter() + warmup_s
    while time.perf_counter() < end:
        run()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    clock = sm_clock()
    times.sort()
    return {
        "median_ms": statistics.median(times) * 1e3,
        "p10_ms": times[len(times) // 10] * 1e3,
        "p90_ms": times[(len(times) * 9) // 10] * 1e3,
        "sm_clock": clock,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet50,bert_base")
    p.add_argument("--batch", type=int, default=64, help="batch of the CNNs")
    p.add_argument("--bert-batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--engines", default="vknn-high,vknn-low,torch-fp16,torch-tf32")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup-s", type=float, default=2.0)
    p.add_argument("--work", type=Path, default=Path("/tmp/vknn-bench-batch"))
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    import torch

    results: dict[str, dict[str, dict]] = {}
    print("model        engine       batch  median ms     p10     p90   items/s  SM clock  cos")
    for name in args.models.split(","):
        batch = args.bert_batch if name.startswith("bert") else args.batch
        module, inputs, path, dims = build(name, batch, args.seq, args.work)
        ref_run = torch_engine(module, inputs, "fp32")
        ref_run()
        ref = ref_run.result()  # type: ignore[attr-defined]
        del ref_run
        torch.cuda.empty_cache()
        per: dict[str, dict] = {}
        for engine in args.engines.split(","):
            t0 = time.perf_counter()
            run = None
            try:
                if engine.startswith("vknn-"):
                    run = vknn_engine(path, inputs, dims, engine.split("-", 1)[1])
                else:
                    run = torch_engine(module, inputs, engine.split("-", 1)[1])
                run()
                first = time.perf_counter() - t0
                r = timed(run, args.runs, args.warmup_s)
                r.update(
                    batch=batch,
                    first_s=first,
                    items_per_s=batch / (r["median_ms"] / 1e3),
                    cosine_vs_torch_fp32=cosine(ref, run.result()),  # type: ignore[attr-defined]
                    cpu_nodes=getattr(run, "cpu_nodes", 0),
                )
            except Exception as e:  # noqa: BLE001 - one engine's failure is a row
                r = {"error": f"{type(e).__name__}: {e}"[:300]}
            per[engine] = r
            if "error" in r:
                print(f"{name:12s} {engine:12s} error: {r['error']}", flush=True)
            else:
                print(
                    f"{name:12s} {engine:12s} {batch:5d} {r['median_ms']:10.3f} "
                    f"{r['p10_ms']:7.3f} {r['p90_ms']:7.3f} {r['items_per_s']:9.0f} "
                    f"{r['sm_clock']:>9s} {r['cosine_vs_torch_fp32']:.6f}",
                    flush=True,
                )
            del run
            torch.cuda.empty_cache()
        results[name] = per
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
