"""ONNX's reference implementation, node by node: an explicit opt-in only
(`Config(onnx_reference=True)`) for `onnx.*` ops that have no kernel of our
own (control flow, sequences, string ops...), and a test oracle.

Nothing imports this module by default: the executor loads it lazily for a
step that the partition gave backend `onnx-reference`, which it does only
under the opt-in. Such steps are reported as `onnx-reference` by
`Session.node_backends()`, never silently.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from vknn.runtime.plan import NO_VALUE, Step

BACKEND = "onnx-reference"


def _evaluator(step: Step) -> tuple[ReferenceEvaluator, list[str]]:
    cached = step.attrs.get("_evaluator")
    if cached is None:
        model = onnx.load_model_from_string(step.attrs["onnx_model"])
        names = [i.name for i in model.graph.input]
        cached = (ReferenceEvaluator(model), names)
        step.attrs["_evaluator"] = cached
    return cached


def run_onnx_node(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    evaluator, names = _evaluator(step)
    present = [x for s, x in zip(step.inputs, inputs, strict=True) if s != NO_VALUE]
    feeds = dict(zip(names, present, strict=True))
    outs = []
    for o, spec in zip(evaluator.run(None, feeds), step.out_specs, strict=False):
        if isinstance(o, list):
            outs.append(o)
            continue
        o = np.asarray(o)
        # The reference implementation sometimes adds unit dims (scalar Loop
        # scan outputs); the statically inferred shape is authoritative.
        if (
            spec.shape
            and all(d >= 0 for d in spec.shape)
            and o.shape != spec.shape
            and o.size == int(np.prod(spec.shape))
        ):
            o = o.reshape(spec.shape)
        outs.append(o)
    return outs
