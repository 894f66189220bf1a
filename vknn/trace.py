"""Chrome-trace JSON of profiled runs (Perfetto and chrome://tracing open it).

`vknn run --profile --trace t.json` and `InferenceSession.end_profiling()`
write one. Each run is laid out on five tracks (thread ids) of one process:

    0 runs        one event per session run
    1 CPU         each CPU segment, args: the ops and ONNX nodes it ran
    2 upload      writing each Vulkan segment's inputs (host -> device)
    3 GPU         each vkd dispatch, named by its kernel label, args: the
                  vkd op kind and ONNX node(s); duration from timestamp
                  queries; dispatches laid end to end from the submit (the
                  gaps between them are not measured)
    4 readback    reading each Vulkan segment's outputs (device -> host)

Host times are `time.perf_counter_ns()` relative to the trace's start.
The file is one JSON array: the first line opens it and names the tracks
(metadata events), then one timed event per line (onnxruntime's layout:
tools that read its profiles line by line read this one too).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

TRACKS = {"run": 0, "cpu": 1, "upload": 2, "gpu": 3, "readback": 4}
TRACK_NAMES = ("runs", "CPU segments", "uploads (host to device)", "GPU dispatches",
               "readbacks (device to host)")  # fmt: skip


class Trace:
    def __init__(self, name: str = "vknn") -> None:
        self.name = name
        self.origin_ns = time.perf_counter_ns()
        self.start_time_ns = time.time_ns()
        """Wall-clock start (onnxruntime's get_profiling_start_time_ns)."""
        self.events: list[dict[str, Any]] = []
        self.runs = 0

    def _us(self, ns: int) -> float:
        return (ns - self.origin_ns) / 1000.0

    def _event(self, track: str, name: str, t0: int, dur_ns: float, **args: Any) -> None:
        self.events.append({"name": name, "cat": track, "ph": "X", "pid": 1,
                            "tid": TRACKS[track], "ts": round(self._us(t0), 3),
                            "dur": round(dur_ns / 1000.0, 3), "args": args})  # fmt: skip

    def add_run(self, rows: list[Any], t0: int, t1: int) -> None:
        """One run: its `runtime.executable` trace rows and host start/end."""
        run = self.runs
        self.runs += 1
        self._event("run", f"run {run}", t0, t1 - t0, run=run)
        for kind, seg, a, b, detail in rows:
            if kind == "cpu":
                ops = ", ".join(sorted({op for op, _ in detail}))
                nodes = [n for _, n in detail]
                self._event("cpu", f"cpu segment {seg}", a, b - a, run=run, ops=ops, nodes=nodes)
            elif kind in ("upload", "readback"):
                self._event(kind, f"{kind} segment {seg}", a, b - a, run=run, bytes=detail)
            elif not detail:  # no timestamps: the segment's submit-and-wait
                self._event("gpu", f"vulkan segment {seg}", a, b - a, run=run)
            else:
                at = float(a)
                for rec, ns in detail:
                    self._event("gpu", rec.label, int(at), ns, run=run, op=rec.kind,
                                nodes=rec.nodes, segment=seg, dispatch=rec.index)  # fmt: skip
                    at += ns

    def write(self, path: str | Path) -> str:
        meta = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": i, "ts": 0, "dur": 0,
                 "args": {"name": n}} for i, n in enumerate(TRACK_NAMES)]  # fmt: skip
        meta.append({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "ts": 0, "dur": 0,
                     "args": {"name": self.name}})  # fmt: skip
        head = "[" + ", ".join(json.dumps(e) for e in meta)
        lines = [head] + [json.dumps(e) for e in self.events]
        Path(path).write_text(",\n".join(lines) + "\n]\n")
        return str(path)


def run_traced(session: Any, trace: Trace, feeds: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """`session.run(feeds, ...)` with its rows added to `trace`."""
    rows: list[Any] = []
    t0 = time.perf_counter_ns()
    out = session.run(feeds, trace=rows, **kw)
    trace.add_run(rows, t0, time.perf_counter_ns())
    return out
