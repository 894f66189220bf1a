"""The ops a session's compiled program runs on the CPU (its CPU segments'
steps, first bucket): what the graph passes produced, as the runtime sees it."""

from __future__ import annotations

from vknn.runtime.plan import Step
from vknn.runtime.program import CpuSegment


def cpu_steps(sess) -> list[Step]:  # type: ignore[no-untyped-def]
    bucket = sess.program.buckets[0]
    return [s for seg in bucket.segments if isinstance(seg, CpuSegment) for s in seg.steps]
