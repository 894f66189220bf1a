"""fuse-pointwise on real models and on every activation kind: CPU outputs
with and without the pass agree, and the regions really fused."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.unit.models import light_model, torch_model
from tests.unit.passes_common import before_after, run_cpu

FUSED = "vx.fused_pointwise"


@pytest.mark.parametrize(
    ("source", "name", "min_fused"),
    [
        ("light", "light_squeezenet.onnx", 26),  # every conv + relu -> epilogue
        ("light", "light_inception_v2.onnx", 69),  # bn-lowered mul + add + relu chains
        ("torch", "mobilenet_v2", 1),
        ("torch", "bert_encoder", 1),
    ],
)
def test_real_model_before_after(source: str, name: str, min_fused: int) -> None:
    model = light_model(name) if source == "light" else torch_model(name)
    dims = {"batch": 1, "seq": 128}
    before, after = before_after(model, "fuse-pointwise", dims)
    assert after[FUSED] >= min_fused, after
    pointwise = ("vx.unary", "vx.binary", "vx.select", "vx.cast")
    assert sum(after[k] for k in pointwise) < sum(before[k] for k in pointwise)
    assert sum(after.values()) <= sum(before.values())


_ACTIVATIONS: list[tuple[str, dict]] = [
    ("Relu", {}),
    ("Sigmoid", {}),
    ("Tanh", {}),
    ("Exp", {}),
    ("Abs", {}),
    ("Neg", {}),
    ("Floor", {}),
    ("Ceil", {}),
    ("Round", {}),
    ("Sign", {}),
    ("Erf", {}),
    ("Softplus", {}),
    ("Softsign", {}),
    ("Sin", {}),
    ("Cos", {}),
    ("Tan", {}),
    ("LeakyRelu", {"alpha": 0.1}),
    ("Elu", {"alpha": 0.7}),
    ("Celu", {"alpha": 1.3}),
    ("Selu", {}),
    ("ThresholdedRelu", {"alpha": 0.3}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", {}),
    ("Mish", {}),
    ("Gelu", {}),
    ("Gelu", {"approximate": "tanh"}),
    ("Reciprocal", {}),
    ("Identity", {}),
]


def _activation_model() -> onnx.ModelProto:
    """x -> (Act(x) * 1.5 + x) for each activation, plus Log/Sqrt of |x| + 1,
    a Clip, a PRelu, Max/Min/Pow/Div and a Where on a comparison: every
    branch is a region of a few ops on the graph input."""
    nodes, outputs, inits = [], [], []
    shape = [2, 3, 5]
    inits.append(helper.make_tensor("k", TensorProto.FLOAT, [1], [1.5]))
    inits.append(helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
    inits.append(helper.make_tensor("lo", TensorProto.FLOAT, [], [-0.5]))
    inits.append(helper.make_tensor("hi", TensorProto.FLOAT, [], [0.75]))
    inits.append(helper.make_tensor("slope", TensorProto.FLOAT, [3, 1], [0.1, 0.2, 0.3]))
    inits.append(helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0]))

    def out(name: str) -> None:
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))

    for i, (op, attrs) in enumerate(_ACTIVATIONS):
        nodes += [
            helper.make_node(op, ["x"], [f"a{i}"], **attrs),
            helper.make_node("Mul", [f"a{i}", "k"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", "x"], [f"y{i}"]),
        ]
        out(f"y{i}")
    nodes += [
        helper.make_node("Abs", ["x"], ["ax"]),
        helper.make_node("Add", ["ax", "one"], ["ax1"]),
        helper.make_node("Log", ["ax1"], ["lg"]),
        helper.make_node("Sqrt", ["ax1"], ["sq"]),
        helper.make_node("Pow", ["ax1", "x"], ["pw"]),
        helper.make_node("Div", ["lg", "sq"], ["dv"]),
        helper.make_node("Max", ["dv", "pw"], ["mx"]),
        helper.make_node("Min", ["mx", "two"], ["mn"]),
        helper.make_node("Clip", ["mn", "lo", "hi"], ["cl"]),
        helper.make_node("PRelu", ["x", "slope"], ["pr"]),
        helper.make_node("Greater", ["pr", "cl"], ["gt"]),
        helper.make_node("Where", ["gt", "pr", "cl"], ["wh"]),
        helper.make_node("Cast", ["gt"], ["gtf"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["wh", "gtf"], ["z"]),
    ]
    out("z")
    graph = helper.make_graph(
        nodes,
        "activations",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        outputs,
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def test_every_scalar_form_matches_the_op_kernels() -> None:
    model = _activation_model()
    x = np.random.default_rng(5).uniform(-3, 3, (2, 3, 5)).astype(np.float32)
    # exact halves exercise Round's ties-to-even
    x.flat[:4] = [0.5, 1.5, -2.5, 0.0]
    base = "infer-shapes,const-fold,convert-onnx-to-vx"
    before, _ = run_cpu(model, base, {"x": x})
    after, kinds = run_cpu(model, f"{base},fuse-pointwise", {"x": x})
    # every branch became one fused op (the |x| + 1 tail shares one region)
    assert kinds["vx.unary"] == 0 and kinds["vx.binary"] == 0, kinds
    assert kinds["vx.fused_pointwise"] >= len(_ACTIVATIONS), kinds
    for i, (ref, got) in enumerate(zip(before, after, strict=True)):
        np.testing.assert_allclose(got, ref, rtol=2e-6, atol=2e-6, err_msg=f"output {i}")
