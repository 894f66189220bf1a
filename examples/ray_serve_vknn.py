"""Serve a VKNN model with Ray Serve: one session per replica, batched requests.

    python examples/ray_serve_vknn.py model.vxm --replicas 2 --buckets 1,2,4,8
    curl -s localhost:8000/ -d '{"inputs": {"x": [[0.1, 0.2, 0.3, 0.4]]}}'

Each replica opens one `vknn.Session` on its own Vulkan device (replica rank
modulo `vknn devices`, or a fixed `device`), so N replicas spread over N GPUs.
`@serve.batch` gathers concurrent requests; their samples are stacked along
axis 0 (the batch axis of every input and output), padded with zeros to the
smallest compiled batch bucket that holds them, run once, and split back.

The model is a `.vxm` (compile once, ship the file to the replicas: they need
neither onnx nor the compiler; `vknn compile model.onnx -o model.vxm --bucket
x=1x4 --bucket x=8x4`) whose buckets give the batch sizes, or an `.onnx`
with a dynamic batch axis, compiled here for each of `buckets`.

Request (JSON over HTTP POST): {"inputs": {name: value}} where a value is a
nested list (cast to the input's dtype) or {"npy_b64": base64 of a .npy};
every input carries n >= 1 samples along axis 0. Add "encoding": "npy_b64"
for base64 .npy outputs. Response: {"outputs": {name: value}} or, for bad
input, HTTP 400 {"error": one line}.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import signal
import time
from typing import Any

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

import vknn

Arrays = dict[str, np.ndarray]


def encode_npy(a: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode()


def decode_npy(text: str) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def _replica_rank() -> int:
    """This replica's rank in its deployment (0..n-1); 0 outside Serve."""
    try:
        rank = serve.get_replica_context().rank
    except Exception:  # not in a replica (a test calling the class directly)
        return 0
    return int(getattr(rank, "rank", rank) or 0)  # an int, or ReplicaRank in newer Ray


def _split_buckets(text: str) -> tuple[int, ...]:
    return tuple(sorted({int(b) for b in text.split(",") if b.strip()}))


# max_ongoing_requests: enough requests reach a replica to fill two batches of 8.
@serve.deployment(ray_actor_options={"num_cpus": 0.5}, max_ongoing_requests=16)
class VknnDeployment:
    def __init__(
        self,
        model: str,
        buckets: tuple[int, ...] = (1, 2, 4, 8),
        device: int | str | None = None,
        contexts: int = 2,
    ):
        if device is None:
            device = _replica_rank() % max(1, len(vknn.list_devices()))
        self.device = device
        config = vknn.Config(device=device, contexts=contexts)
        if model.endswith(".vxm"):
            self.session = vknn.Session(model, config)  # its buckets are the batch sizes
        else:
            self.session = self._compile(model, config, buckets)
        self.inputs = {i.name: i for i in self.session.inputs}
        # Batch size -> the input shapes of the compiled bucket for it.
        self.plans: dict[int, dict[str, tuple[int, ...]]] = {}
        for bucket in self.session._buckets.values():  # the compiled input-shape sets
            shapes = {io.name: tuple(io.shape) for io in bucket.spec.inputs}
            sizes = {s[0] for s in shapes.values() if s}
            if len(sizes) == 1:
                self.plans[sizes.pop()] = shapes
        if not self.plans:
            raise vknn.InvalidArgument(
                f"{model}: no compiled bucket has one batch size (axis 0) across its inputs"
            )
        self.max_batch = max(self.plans)

    @staticmethod
    def _compile(model: str, config: vknn.Config, buckets: tuple[int, ...]) -> Any:
        import onnx

        graph = onnx.load(model, load_external_data=False).graph
        inits = {t.name for t in graph.initializer}
        sample: dict[str, tuple[int, ...]] = {}
        for vi in graph.input:
            if vi.name in inits:
                continue
            dims = vi.type.tensor_type.shape.dim[1:]
            if not all(d.HasField("dim_value") for d in dims):
                raise vknn.InvalidArgument(
                    f"{model}: input '{vi.name}' needs static dims after the batch axis"
                )
            sample[vi.name] = tuple(d.dim_value for d in dims)
        config.buckets = [{n: (b, *s) for n, s in sample.items()} for b in buckets]
        return vknn.Session(model, config)

    # -- the batched run ---------------------------------------------------

    def run_samples(self, requests: list[Arrays]) -> list[Arrays]:
        """Stack the requests' samples, run them in bucket-sized chunks, split back."""
        counts = [len(next(iter(r.values()))) for r in requests]
        stacked = {n: np.concatenate([r[n] for r in requests]) for n in self.inputs}
        total, parts, start = sum(counts), [], 0
        while start < total:
            n = min(total - start, self.max_batch)
            b = min(s for s in self.plans if s >= n)
            feeds = {}
            for name, full in stacked.items():
                chunk = full[start : start + n]
                pad = np.zeros((b - n, *chunk.shape[1:]), chunk.dtype)
                feeds[name] = np.concatenate([chunk, pad]) if b > n else chunk
            out = self.session.run(feeds)
            parts.append({k: v[:n] for k, v in out.items()})
            start += n
        outputs = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        bounds = np.cumsum([0, *counts])
        return [
            {k: v[lo:hi] for k, v in outputs.items()}
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
        ]

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01, max_concurrent_batches=2)
    async def _batched(self, requests: list[Arrays]) -> list[Arrays]:
        # Session.run releases the GIL while the GPU works: in a thread it
        # leaves the replica's event loop free to gather the next batch, and two
        # batches in flight match the session's two execution contexts.
        return await asyncio.to_thread(self.run_samples, requests)

    def status(self) -> dict[str, Any]:
        """The replica's device, batch sizes, the backends its nodes run on,
        and the validation messages its device collected (VKNN_VALIDATION=1)."""
        from vknn.runtime.vulkan.context import shared_device

        dev = shared_device(self.device)[0] if "vulkan" in self.session.config.backends else None
        return {
            "device": str(self.device),
            "batch_sizes": sorted(self.plans),
            "backends": sorted(set(self.session.node_backends().values())),
            "validation_messages": [str(m) for m in (dev.messages if dev else [])],
        }

    # -- HTTP --------------------------------------------------------------

    def parse(self, body: Any) -> Arrays:
        """The request's inputs as arrays of the model's dtypes; InvalidArgument if bad."""
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), dict):
            raise vknn.InvalidArgument('the body must be {"inputs": {name: value, ...}}')
        given = body["inputs"]
        if set(given) != set(self.inputs):
            raise vknn.InvalidArgument(
                f"inputs {sorted(given)} given; the model's inputs are {sorted(self.inputs)}"
            )
        arrays: Arrays = {}
        for name, value in given.items():
            info = self.inputs[name]
            try:
                if isinstance(value, dict) and "npy_b64" in value:
                    a = decode_npy(value["npy_b64"])
                else:
                    a = np.asarray(value, dtype=info.dtype)
            except (ValueError, TypeError) as e:
                raise vknn.InvalidArgument(f"input '{name}': {e}") from None
            want = self.plans[self.max_batch][name][1:]
            if a.dtype != info.dtype or a.ndim != len(want) + 1 or a.shape[1:] != want:
                raise vknn.InvalidArgument(
                    f"input '{name}': expected {info.dtype}[n, {', '.join(map(str, want))}], "
                    f"got {a.dtype}{list(a.shape)}"
                )
            arrays[name] = a
        counts = {len(a) for a in arrays.values()}
        if len(counts) != 1 or 0 in counts:
            raise vknn.InvalidArgument("every input needs the same number n >= 1 of samples")
        return arrays

    async def __call__(self, request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "the body is not JSON"}, status_code=400)
        try:
            arrays = self.parse(body)
        except vknn.VknnError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        out = await self._batched(arrays)
        if body.get("encoding") == "npy_b64":
            outputs = {k: {"npy_b64": encode_npy(v)} for k, v in out.items()}
        else:
            outputs = {k: v.tolist() for k, v in out.items()}
        return JSONResponse({"outputs": outputs, "device": str(self.device)})


def app(
    model: str,
    replicas: int = 1,
    buckets: tuple[int, ...] = (1, 2, 4, 8),
    device: int | str | None = None,
) -> Any:
    """The bound application: `serve.run(app("model.vxm", replicas=2))`."""
    return VknnDeployment.options(num_replicas=replicas).bind(model, buckets, device)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("model", help="a .vxm (its buckets are the batch sizes) or an .onnx")
    ap.add_argument("--replicas", type=int, default=1, help="one per GPU (default 1)")
    ap.add_argument("--buckets", default="1,2,4,8", help="batch sizes to compile (.onnx only)")
    ap.add_argument("--device", default=None, help="one device for all replicas")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    if args.device is not None and args.device.isdigit():
        args.device = int(args.device)  # an index; other text is a name substring
    serve.start(http_options={"host": "0.0.0.0", "port": args.port})
    serve.run(app(args.model, args.replicas, _split_buckets(args.buckets), args.device))
    print(f"serving {args.model} on :{args.port} with {args.replicas} replica(s); Ctrl-C stops")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop cleanly on TERM too
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()


if __name__ == "__main__":
    main()
