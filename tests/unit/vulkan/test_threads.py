"""One Session from several threads (issue 14 items 1 and 5): every output
right while runs overlap on the session's pool of execution contexts,
`close()` waits for runs in flight, and a run after it is a clear error."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import vknn
from tests.unit.vulkan.harness import graph, node
from vknn.errors import InvalidArgument

RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((16, 3, 3, 3)).astype(np.float32)
W2 = RNG.standard_normal((8, 16, 1, 1)).astype(np.float32)


def _model() -> bytes:
    m = graph(
        [
            node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
            node("Relu", ["a"], ["b"]),
            node("Conv", ["b", "w2"], ["c"]),
            node("GlobalAveragePool", ["c"], ["y"]),
        ],
        {"x": ((1, 3, 16, 16), "float32")},
        ["y"],
        {"w1": W1, "w2": W2},
    )
    return m.SerializeToString()


def _feeds(n: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(n)]


@pytest.mark.parametrize("contexts", [1, 3])
def test_threads_get_their_own_answers(session_device: Any, contexts: int) -> None:
    cfg = vknn.Config(allow_cpu_fallback=False, contexts=contexts, cache_file=None)
    sess = vknn.Session(_model(), cfg)
    feeds = _feeds(40)
    want = [sess.run(f)["y"] for f in feeds]
    assert len({w.tobytes() for w in want}) == len(want)  # distinct inputs, distinct outputs

    def work(i: int) -> bool:
        return bool(np.array_equal(sess.run(feeds[i])["y"], want[i]))

    with ThreadPoolExecutor(4) as pool:
        ok = list(pool.map(work, [i % len(feeds) for i in range(160)]))
    assert all(ok), f"{ok.count(False)} of {len(ok)} outputs wrong"
    # The session is still right afterwards, and closes cleanly.
    assert np.array_equal(sess.run(feeds[0])["y"], want[0])
    sess.close()


def test_close_waits_for_runs_and_later_runs_fail(session_device: Any) -> None:
    sess = vknn.Session(_model(), vknn.Config(allow_cpu_fallback=False, cache_file=None))
    feeds = _feeds(1)[0]
    want = sess.run(feeds)["y"]
    results: list[str] = []
    start = threading.Barrier(5)

    def loop() -> None:
        start.wait()
        for _ in range(30):
            try:
                y = sess.run(feeds)["y"]
            except InvalidArgument as e:
                assert "closed" in str(e)
                results.append("closed")
                return
            results.append("ok" if np.array_equal(y, want) else "WRONG")

    threads = [threading.Thread(target=loop) for _ in range(4)]
    for t in threads:
        t.start()
    start.wait()
    sess.close()
    for t in threads:
        t.join(60)
    assert "WRONG" not in results
    with pytest.raises(InvalidArgument, match="closed"):
        sess.run(feeds)
