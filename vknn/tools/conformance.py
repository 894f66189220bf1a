"""Run ONNX's node conformance suite through `vknn.backend`.

    python -m vknn.tools.conformance [--device CPU|VULKAN] [--filter conv] [--json out.json]

Compares like ONNX's own runner (`Runner.assert_similar_outputs`, with each
case's rtol/atol) and prints the pass count and each failure's first line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any


@dataclass
class CaseResult:
    name: str
    passed: bool
    error: str = ""


def collect_cases(pattern: str = ""):  # type: ignore[no-untyped-def]
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return [c for c in cases if pattern in c.name]


def _as_array(value):  # type: ignore[no-untyped-def]
    import onnx
    from onnx import numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def run_case(case, device: str) -> CaseResult:  # type: ignore[no-untyped-def]
    import numpy as np
    from onnx.backend.test.runner import Runner

    from vknn import backend

    try:
        rep = backend.prepare(case.model, device)
        for inputs, ref_outputs in case.data_sets:
            with np.errstate(all="ignore"):
                outputs = rep.run(list(inputs))
            refs = [_as_array(r) for r in ref_outputs]
            Runner.assert_similar_outputs(refs, list(outputs), case.rtol, case.atol)
    except Exception as e:  # each failure is data for the report, not a crash
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return CaseResult(case.name, False, f"{type(e).__name__}: {first}"[:300])
    return CaseResult(case.name, True)


_CASES: list = []  # set before forking workers, so they share it


def _run_index(args: tuple[int, str]) -> CaseResult:
    index, device = args
    return run_case(_CASES[index], device)


def run_suite(device: str = "CPU", pattern: str = "", jobs: int = 1) -> list[CaseResult]:
    """Run every matching case; `jobs` > 1 forks that many workers."""
    global _CASES
    _CASES = collect_cases(pattern)
    from vknn.progress import Bar

    work = [(i, device) for i in range(len(_CASES))]
    with Bar(len(work), "vknn conformance") as bar:
        if jobs <= 1:
            return [_counted(bar, _run_index(w)) for w in work]
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=200) as pool:
            return [_counted(bar, r) for r in pool.imap(_run_index, work, chunksize=8)]


def _counted(bar: Any, result: CaseResult) -> CaseResult:
    bar.update(1, result.name)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="CPU")
    p.add_argument("--filter", default="")
    p.add_argument("--json", help="write per-case results here")
    p.add_argument("--failures", action="store_true", help="print every failure")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    results = run_suite(args.device, args.filter, args.jobs)
    passed = sum(r.passed for r in results)
    if args.failures:
        for r in results:
            if not r.passed:
                print(f"FAIL {r.name}: {r.error}")
    print(
        f"{passed} passed, {len(results) - passed} failed "
        f"({len(results)} cases, device {args.device}, {time.perf_counter() - t0:.0f} s)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.__dict__ for r in results], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
